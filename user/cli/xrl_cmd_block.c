// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * block list | del: the penalty box of --block rules (xrl_blocked). A source
 * is blocked while its entry's until_ns is ahead of CLOCK_MONOTONIC; del
 * releases it early by setting until_ns to the present and marking it
 * released, so the data path judges it by its bucket again at once and the
 * daemon logs the release (by "xrl block del") and deletes the entry.
 * Escalations of xrl http (--escalate, xrl_escalated) are listed beside
 * them with their reason; del deletes them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "xrl_cli.h"
#include "xrl_escalate.h"
#include "xrl_rule.h"

static struct xrl_rule_def defs[XRL_MAX_RULES];
static __u32 ids[XRL_MAX_RULES];
static struct xrl_bucket_key keys[XRL_BLOCKED_SOURCES];
static struct xrl_block vals[XRL_BLOCKED_SOURCES];
static struct xrl_esc_key esc_keys[XRL_ESCALATED_SOURCES];
static struct xrl_escalation esc_vals[XRL_ESCALATED_SOURCES];

static const struct xrl_rule_def *rule_of(__u32 id, int nd)
{
	int j;

	for (j = 0; j < nd; j++)
		if (ids[j] == id)
			return &defs[j];
	return NULL;
}

int xrl_block_left(const struct xrl_maps *m, const struct xrl_bucket_key *key,
		   const struct xrl_rule_def *d, __u64 now, __u64 *left_ns)
{
	struct xrl_block b;

	if (bpf_map_lookup_elem(m->blocked, key, &b) || (__s64)(b.until_ns - now) <= 0 ||
	    b.version != d->version)
		return 0;
	*left_ns = b.until_ns - now;
	return 1;
}

/*
 * The live blocks: entries read into keys/vals, those ended (or of a rule
 * version no longer in force) dropped. -errno on failure.
 */
static int read_live(const struct xrl_maps *m, __u64 now, int nd)
{
	int n = xrl_map_read_all(m->blocked, keys, vals, sizeof(keys[0]), sizeof(vals[0]),
				 XRL_BLOCKED_SOURCES), i, k = 0;

	for (i = 0; i < n; i++) {
		const struct xrl_rule_def *d = rule_of(keys[i].rule_id, nd);

		if ((__s64)(vals[i].until_ns - now) <= 0 || !d || d->version != vals[i].version)
			continue;
		keys[k] = keys[i];
		vals[k] = vals[i];
		k++;
	}
	return n < 0 ? n : k;
}

static int block_usage(struct xrl_ctx *ctx, const char *name);

/*
 * Open the instance (write: the writer lock, as rule changes take it) and
 * read its rules and live blocks into defs/ids and keys/vals: the exit code,
 * 0 with the instance open (xrl_instance_end closes it).
 */
static int box_read(struct xrl_ctx *ctx, struct xrl_maps *m, bool write, __u64 *now, int *n,
		    int *nd)
{
	int rc = xrl_instance_begin(ctx, m, write);

	if (rc)
		return rc;
	*now = xrl_mono_ns();
	if (xrl_ruleset_read(m, defs, ids, nd) || (*n = read_live(m, *now, *nd)) < 0) {
		xrl_instance_end(ctx, m);
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot read the penalty box of instance '%s'",
				 ctx->instance);
	}
	return 0;
}

/* Block i's source and rule as list and del name them (d NULL: its rule is gone). */
static void box_names(int i, const struct xrl_rule_def *d, char *src, size_t srclen, char *rule,
		      size_t rulelen)
{
	if (d)
		xrl_rule_format_match(d, rule, rulelen);
	xrl_source_format(&keys[i], d, src, srclen);
}

static int block_list(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct xrl_maps m;
	__u64 now;
	json_t *arr;
	int n, nd, i, rc, ne;

	if (argc != 1)
		return block_usage(ctx, argv[0]);
	if ((rc = box_read(ctx, &m, false, &now, &n, &nd)))
		return rc;
	arr = json_array();
	if (!ctx->json)
		printf("%-40s %-40s %10s %10s\n", "SOURCE", "RULE", "LEFT", "BLOCKED");
	for (i = 0; i < n; i++) {
		const struct xrl_rule_def *d = rule_of(keys[i].rule_id, nd);
		char src[64], rule[XRL_MATCH_TEXT] = "(deleted rule)";
		double left = (double)(vals[i].until_ns - now) / 1e9;
		double ago = (double)(now - vals[i].since_ns) / 1e9;

		box_names(i, d, src, sizeof(src), rule, sizeof(rule));
		if (ctx->json) {
			json_t *o = json_pack("{s:s,s:s,s:i,s:f,s:f}", "source", src, "rule", rule,
					      "rule_id", (int)keys[i].rule_id, "left_s", left,
					      "blocked_for_s", ago);

			if (vals[i].policy & XRL_P_SHADOW)
				json_object_set_new(o, "shadow", json_true());
			json_array_append_new(arr, o);
		} else {
			printf("%-40s %-40s %9.1fs %9.1fs%s\n", src, rule, left, ago,
			       vals[i].policy & XRL_P_SHADOW ? "  (shadow: passed)" : "");
		}
	}
	ne = xrl_escalate_read(&m, now, esc_keys, esc_vals, XRL_ESCALATED_SOURCES);
	for (i = 0; i < ne; i++) {
		struct xrl_bucket_key bk = { .family = esc_keys[i].family };
		char src[64], rule[96], reason[160];
		double left = (double)(esc_vals[i].until_ns - now) / 1e9;
		double ago = (double)(now - esc_vals[i].since_ns) / 1e9;

		memcpy(bk.addr, esc_keys[i].addr, sizeof(bk.addr));
		xrl_source_format(&bk, NULL, src, sizeof(src));
		snprintf(rule, sizeof(rule), "http:%.*s", XRL_ESC_RULE_LEN, esc_vals[i].rule);
		xrl_escalate_reason(&esc_vals[i], reason, sizeof(reason));
		if (ctx->json)
			json_array_append_new(arr, json_pack("{s:s,s:s,s:f,s:f,s:s,s:I}", "source", src,
							     "rule", rule, "left_s", left,
							     "blocked_for_s", ago, "reason", reason,
							     "dropped", (json_int_t)esc_vals[i].dropped));
		else
			printf("%-40s %-40s %9.1fs %9.1fs  %s, %llu packets dropped at XDP\n", src, rule,
			       left, ago, reason, (unsigned long long)esc_vals[i].dropped);
	}
	if (ctx->json)
		xrl_json_print(ctx, arr);
	else {
		if (!n && ne <= 0)
			printf("(no source blocked)\n");
		json_decref(arr);
	}
	xrl_instance_end(ctx, &m);
	return 0;
}

/*
 * Is the block of key (its rule d) named by the source the operator gave
 * (family, addr, plen)? An address names the block it falls in (an address
 * of a --per /24 block names the block); a prefix names the block it is
 * exactly, as `block list` shows it.
 */
static int names_block(const struct xrl_bucket_key *key, const struct xrl_rule_def *d,
		       __u8 family, const __u8 addr[16], __u8 plen)
{
	unsigned full = family == 4 ? 32 : 128, per = d ? d->per_len : full;
	__u8 a[16] = { 0 };
	int i;

	if (key->family != family || (plen != full && plen != per))
		return 0;
	memcpy(a, addr, family == 4 ? 4 : 16);
	for (i = 0; i < 16; i++) {
		int bits = (int)per - i * 8;

		if (bits <= 0)
			a[i] = 0;
		else if (bits < 8)
			a[i] &= (__u8)(0xff << (8 - bits));
	}
	return !memcmp(a, key->addr, family == 4 ? 4 : 16);
}

static int block_del(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct xrl_maps m;
	char err[XRL_ERRLEN];
	__u8 family, addr[16], plen;
	__u64 now;
	json_t *arr;
	int n, nd, i, rc, ne, released = 0;

	if (argc != 2)
		return block_usage(ctx, argv[0]);
	if (xrl_parse_prefix(argv[1], &family, addr, &plen, err, sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_USAGE,
				 "invalid source '%s': expected an address or a source as 'xrl block list' shows it, e.g. 192.0.2.1 or 2001:db8::/64",
				 argv[1]);
	/* the pins are written: the writer lock, as rule changes take it */
	if ((rc = box_read(ctx, &m, true, &now, &n, &nd)))
		return rc;
	arr = json_array();
	for (i = 0; i < n; i++) {
		const struct xrl_rule_def *d = rule_of(keys[i].rule_id, nd);
		struct xrl_block b = vals[i];
		char src[64], rule[XRL_MATCH_TEXT] = "(deleted rule)";

		if (!names_block(&keys[i], d, family, addr, plen))
			continue;
		b.until_ns = now;
		b.released = 1;
		if (bpf_map_update_elem(m.blocked, &keys[i], &b, BPF_EXIST)) {
			if (errno == ENOENT)
				continue;   /* ended and swept meanwhile */
			rc = errno;
			xrl_instance_end(ctx, &m);
			json_decref(arr);
			return xrl_error(ctx, XRL_EXIT_FAIL, "cannot release %s: %s", argv[1],
					 strerror(rc));
		}
		released++;
		box_names(i, d, src, sizeof(src), rule, sizeof(rule));
		if (ctx->json)
			json_array_append_new(arr, json_pack("{s:s,s:s,s:f}", "source", src, "rule", rule,
							     "left_s", (double)(vals[i].until_ns - now) / 1e9));
		else
			printf("xrl: released %s (rule %s, %.1fs of its block left)\n", src, rule,
			       (double)(vals[i].until_ns - now) / 1e9);
	}
	ne = xrl_escalate_read(&m, now, esc_keys, esc_vals, XRL_ESCALATED_SOURCES);
	for (i = 0; i < ne; i++) {
		struct xrl_bucket_key bk = { .family = esc_keys[i].family };
		char src[64], rule[96];

		memcpy(bk.addr, esc_keys[i].addr, sizeof(bk.addr));
		/* an escalation is of one address: named by it (or by its /32, /128) */
		if (!names_block(&bk, NULL, family, addr, plen) || xrl_escalate_del(&m, &esc_keys[i]))
			continue;
		released++;
		xrl_source_format(&bk, NULL, src, sizeof(src));
		snprintf(rule, sizeof(rule), "http:%.*s", XRL_ESC_RULE_LEN, esc_vals[i].rule);
		if (ctx->json)
			json_array_append_new(arr, json_pack("{s:s,s:s,s:f}", "source", src, "rule", rule,
							     "left_s", (double)(esc_vals[i].until_ns - now) / 1e9));
		else
			printf("xrl: released %s (escalated by xrl http rule %s, %.1fs of it left)\n", src,
			       esc_vals[i].rule, (double)(esc_vals[i].until_ns - now) / 1e9);
	}
	xrl_instance_end(ctx, &m);
	if (!released) {
		json_decref(arr);
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s is not blocked (see 'xrl block list')", argv[1]);
	}
	if (ctx->json)
		xrl_json_print(ctx, json_pack("{s:o}", "released", arr));
	else
		json_decref(arr);
	return 0;
}

static const struct xrl_cmd block_cmds[] = {
	{ .name = "list", .fn = block_list, .args = "",
	  .summary = "List the sources blocked by --block rules and escalated by xrl http, with their rule, time left and reason.",
	  .example = "xrl block list" },
	{ .name = "del", .fn = block_del, .args = "SOURCE",
	  .summary = "Lift the block of SOURCE (in every rule that blocks it).",
	  .example = "xrl block del 198.51.100.7" },
};

const struct xrl_cmd_table xrl_block_cmds = {
	.path = "xrl block", .cmds = block_cmds, .n = sizeof(block_cmds) / sizeof(block_cmds[0]),
};

static int block_usage(struct xrl_ctx *ctx, const char *name)
{
	char u[512];

	xrl_cmd_usage_line(&xrl_block_cmds, xrl_cmd_find(&xrl_block_cmds, name), u, sizeof(u));
	return xrl_error(ctx, XRL_EXIT_USAGE, "usage: %s", u);
}

/* argv: block SUBCOMMAND ... */
int xrl_cmd_block(struct xrl_ctx *ctx, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	const struct xrl_cmd *c = xrl_cmd_find(&xrl_block_cmds, sub);
	char names[64];

	if (c)
		return c->fn(ctx, argc - 1, argv + 1);
	xrl_cmd_names(&xrl_block_cmds, "|", "|", names, sizeof(names));
	return xrl_error(ctx, XRL_EXIT_USAGE, "usage: xrl block %s ... (got '%s')", names, sub);
}
