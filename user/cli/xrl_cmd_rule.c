// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rule add | del | list | load | save */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_cli.h"
#include "xrl_rule.h"

static struct xrl_rule_def cur[XRL_MAX_RULES];
static __u32 cur_ids[XRL_MAX_RULES];
static struct xrl_rule_stats cur_stats[XRL_MAX_RULES];

/*
 * Lock, open, read the rule set. Returns 0 or an exit code (already
 * reported). A change takes the rule writers' lock, which keeps no reader
 * (list, save, stats, the exporter) waiting.
 */
static int begin(struct xrl_ctx *ctx, struct xrl_maps *m, int *n, bool write)
{
	char why[XRL_INSTANCE_ERRLEN];
	int err;

	if (xrl_instance_open(xrl_ctx_instance(ctx), write ? XRL_LOCK_RULES : XRL_LOCK_SHARED,
			      XRL_WAIT_FOREVER, 0, m, why, sizeof(why)))
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", why);
	err = xrl_ruleset_read(m, cur, cur_ids, n);
	if (err) {
		xrl_instance_end(ctx, m);
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot read the rule set: %s", strerror(-err));
	}
	return 0;
}

static int apply(struct xrl_ctx *ctx, struct xrl_maps *m, const struct xrl_rule_def *defs, int n)
{
	char err[XRL_ERRLEN];

	int rc = xrl_ruleset_apply(m, defs, n, err, sizeof(err));

	if (rc == -EINVAL)
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s; nothing was changed", err);
	if (rc)
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", err);
	return 0;
}

static json_t *rule_json(const struct xrl_rule_def *d, __u32 id)
{
	char pfx[64], rate[32];
	json_t *o;

	xrl_prefix_format(d->family, d->addr, d->plen, pfx, sizeof(pfx));
	o = json_pack("{s:i,s:s,s:s}", "id", (int)id, "prefix", pfx, "action",
		      xrl_action_name(d->action));
	if (d->flags & XRL_F_PROTO)
		json_object_set_new(o, "proto", json_string(xrl_proto_name(d->proto)));
	if ((d->flags & XRL_F_DPORT) && xrl_rule_one_port(d)) {
		json_object_set_new(o, "dport", json_integer(d->dport));
	} else if (d->flags & XRL_F_DPORT) {
		char set[XRL_PORTS_TEXT];

		xrl_rule_format_ports(d, set, sizeof(set));
		json_object_set_new(o, "dports", json_string(set));
	}
	if (d->dst_len) {
		char dst[64];

		xrl_prefix_format(d->family, d->dst, d->dst_len, dst, sizeof(dst));
		json_object_set_new(o, "dst", json_string(dst));
	}
	if (d->flags & XRL_F_SYN)
		json_object_set_new(o, "syn", json_true());
	if (d->flags & XRL_F_GLOBAL)
		json_object_set_new(o, "global", json_true());
	if (d->action == XRL_ACT_LIMIT) {
		if (d->rate) {   /* a byte-only rule has no packet rate */
			xrl_fmt_rate(d, rate, sizeof(rate));
			json_object_set_new(o, "rate", json_string(rate));
			json_object_set_new(o, "rate_pps", json_real((double)d->rate / d->rate_period));
			if (d->algo == XRL_ALGO_TOKEN_BUCKET)   /* a window algorithm has no burst */
				json_object_set_new(o, "burst", json_integer(d->burst));
		}
		json_object_set_new(o, "per", json_integer(d->per_len));
		json_object_set_new(o, "algo", json_string(xrl_algo_name(d->algo)));   /* --algo */
		if (d->policy & XRL_P_SHADOW)
			json_object_set_new(o, "shadow", json_true());
		if (d->policy & XRL_P_BLOCK)
			json_object_set_new(o, "block_s", json_integer((json_int_t)(d->block_ns / 1000000000ull)));
		if (d->flags & XRL_F_BYTES) {
			json_object_set_new(o, "bytes_rate", json_integer((json_int_t)d->byte_rate));
			json_object_set_new(o, "bytes_burst", json_integer((json_int_t)d->byte_burst));
		}
		if (d->flags & XRL_F_NEWSRC) {
			snprintf(rate, sizeof(rate), "%llu/%s", (unsigned long long)d->new_rate,
				 d->new_period == 3600 ? "h" : d->new_period == 60 ? "m" : "s");
			json_object_set_new(o, "new_sources", json_string(rate));
			json_object_set_new(o, "new_burst", json_integer(d->new_burst));
		}
		if (d->flags & XRL_F_TOTAL) {
			snprintf(rate, sizeof(rate), "%llu/%s", (unsigned long long)d->total_rate,
				 d->total_period == 3600 ? "h" : d->total_period == 60 ? "m" : "s");
			json_object_set_new(o, "total", json_string(rate));
			json_object_set_new(o, "total_burst", json_integer(d->total_burst));
		}
	}
	return o;
}

static const struct xrl_cmd *rule_cmd(const char *name);

/* "usage: xrl rule NAME ...", from the table */
static int rule_usage(struct xrl_ctx *ctx, const char *name, const char *extra)
{
	char u[512];

	xrl_cmd_usage_line(&xrl_rule_cmds, rule_cmd(name), u, sizeof(u));
	return xrl_error(ctx, XRL_EXIT_USAGE, "usage: %s%s", u, extra ? extra : "");
}

/* argv: add PREFIX WORDS... */
static int rule_add(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct xrl_rule_def def;
	struct xrl_maps m;
	char err[XRL_ERRLEN], text[256];
	bool replaced;
	int n, i, rc;

	if (argc < 2)
		return rule_usage(ctx, argv[0], NULL);
	if (xrl_rule_parse_args(argc - 1, argv + 1, XRL_RULE_ADD, &def, err, sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s", err);
	if ((rc = begin(ctx, &m, &n, true)))
		return rc;
	for (i = 0; i < n; i++)
		if (xrl_rule_same_match(&cur[i], &def))
			break;
	replaced = i < n;
	if (!replaced && n == XRL_MAX_RULES) {
		xrl_instance_end(ctx, &m);
		return xrl_error(ctx, XRL_EXIT_USAGE, "too many rules: at most %d; nothing was changed",
				 XRL_MAX_RULES);
	}
	cur[i] = def;   /* replaces the rule with the same prefix and match */
	if (!replaced)
		n++;
	rc = apply(ctx, &m, cur, n);
	xrl_instance_end(ctx, &m);
	if (!rc) {
		xrl_rule_format(&def, text, sizeof(text));
		if (ctx->json)
			xrl_json_print(ctx, json_pack("{s:s}", replaced ? "replaced" : "added", text));
		else
			printf("xrl: rule %s: %s\n", replaced ? "replaced" : "added", text);
	}
	return rc;
}

/* A rule id as `rule list` shows it: digits only (a prefix never is). */
static bool is_rule_id(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return i > 0;
}

/*
 * "no rule" for a prefix and match that name none: the rules of that prefix
 * with their match fields and ids, so the operator can name one.
 */
static int no_such_rule(struct xrl_ctx *ctx, const struct xrl_rule_def *def, const char *text,
			int n)
{
	char others[768] = "", t[XRL_MATCH_TEXT];
	size_t k = 0;
	int i, found = 0;
	__u32 first = 0;

	for (i = 0; i < n && k < sizeof(others); i++) {
		if (cur[i].family != def->family || cur[i].plen != def->plen ||
		    memcmp(cur[i].addr, def->addr, 16))
			continue;
		if (!found)
			first = cur_ids[i];
		xrl_rule_format_match(&cur[i], t, sizeof(t));
		k += snprintf(others + k, sizeof(others) - k, "%s%s (id %u)", found++ ? ", " : "", t,
			      cur_ids[i]);
	}
	if (!found)
		return xrl_error(ctx, XRL_EXIT_FAIL, "no rule %s (see 'xrl rule list')", text);
	return xrl_error(ctx, XRL_EXIT_FAIL,
			 "no rule %s: a rule is named by its prefix with all its match fields, or by its id; this prefix has %s (e.g. 'xrl rule del %u')",
			 text, others, first);
}

/* argv: del PREFIX [MATCH] | del ID */
static int rule_del(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct xrl_rule_def def;
	struct xrl_maps m;
	char err[XRL_ERRLEN], text[256];
	bool by_id = argc == 2 && is_rule_id(argv[1]);
	__u64 id = 0;
	int n, i, rc;

	if (argc < 2)
		return rule_usage(ctx, argv[0], NULL);
	if (by_id) {
		if (xrl_parse_uint("rule id", argv[1], 0, XRL_MAX_RULES - 1, &id, err, sizeof(err)))
			return xrl_error(ctx, XRL_EXIT_USAGE, "%s (the ID column of 'xrl rule list')", err);
	} else if (xrl_rule_parse_args(argc - 1, argv + 1, XRL_RULE_MATCH, &def, err, sizeof(err))) {
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s", err);
	}
	if ((rc = begin(ctx, &m, &n, true)))
		return rc;
	for (i = 0; i < n; i++)
		if (by_id ? cur_ids[i] == id : xrl_rule_same_match(&cur[i], &def))
			break;
	if (i == n) {
		xrl_instance_end(ctx, &m);
		if (by_id)
			return xrl_error(ctx, XRL_EXIT_FAIL, "no rule with id %llu (see 'xrl rule list')",
					 (unsigned long long)id);
		xrl_rule_format_match(&def, text, sizeof(text));
		return no_such_rule(ctx, &def, text, n);
	}
	/* the whole rule, as rule save writes it: what was deleted, whichever way it was named */
	xrl_rule_format(&cur[i], text, sizeof(text));
	id = cur_ids[i];
	memmove(&cur[i], &cur[i + 1], (size_t)(n - i - 1) * sizeof(cur[0]));
	rc = apply(ctx, &m, cur, n - 1);
	xrl_instance_end(ctx, &m);
	if (!rc) {
		if (ctx->json)
			xrl_json_print(ctx, json_pack("{s:s,s:i}", "deleted", text, "id", (int)id));
		else
			printf("xrl: rule deleted: %s (id %llu)\n", text, (unsigned long long)id);
	}
	return rc;
}

/* list and save take no arguments */
static int no_args(struct xrl_ctx *ctx, int argc, char **argv)
{
	char got[300];

	if (argc == 1)
		return 0;
	snprintf(got, sizeof(got), " (takes no arguments; got '%s')", argv[1]);
	return rule_usage(ctx, argv[0], got);
}

/*
 * rule list's last columns: BYTES, then NEW (--new-sources), ALGO (--algo)
 * and POLICY (--shadow, --block) only when a rule uses them; each but the
 * last padded to 24, two spaces apart.
 */
static void list_tail(const char *const v[4], int ns, int al, int pol)
{
	int show[4] = { 1, ns, al, pol }, last = 0, i;

	for (i = 1; i < 4; i++)
		if (show[i])
			last = i;
	for (i = 0; i < 4; i++)
		if (show[i])
			printf("%s%-*s", i ? "  " : "", i == last ? 0 : 24, v[i]);
	putchar('\n');
}

static int rule_list(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct xrl_maps m;
	int n, i, rc;

	if ((rc = no_args(ctx, argc, argv)))
		return rc;
	if ((rc = begin(ctx, &m, &n, false)))
		return rc;
	/* a shadow rule's would-drops beside it: what enforcing it would have dropped */
	if (xrl_read_rule_stats_many(&m, cur_ids, n, cur_stats))
		memset(cur_stats, 0, sizeof(cur_stats));
	if (ctx->json) {
		json_t *arr = json_array();

		for (i = 0; i < n; i++) {
			json_t *o = rule_json(&cur[i], cur_ids[i]);

			if (cur[i].policy & XRL_P_SHADOW)
				json_object_set_new(o, "shadow_dropped",
						    json_integer((json_int_t)cur_stats[i].shadow_dropped));
			json_array_append_new(arr, o);
		}
		xrl_json_print(ctx, arr);
	} else {
		int w = 4, ns = 0, al = 0, pol = 0;

		for (i = 0; i < n; i++) {
			pol |= cur[i].policy != 0;
			ns |= !!(cur[i].flags & XRL_F_NEWSRC);
			al |= cur[i].action == XRL_ACT_LIMIT && cur[i].algo != XRL_ALGO_TOKEN_BUCKET;
			char match[XRL_MATCH_TEXT];

			xrl_rule_format_match(&cur[i], match, sizeof(match));
			if ((int)strlen(match) > w)
				w = (int)strlen(match);
		}
		printf("%-4s %-*s %-6s %10s %10s %4s  %-5s  ", "ID", w, "RULE", "ACTION", "RATE",
		       "BURST", "PER", "SCOPE");
		list_tail((const char *const[]){ "BYTES", "NEW", "ALGO", "POLICY" }, ns, al, pol);
		for (i = 0; i < n; i++) {
			char match[XRL_MATCH_TEXT], rate[32], burst[32] = "-", per[8] = "-", bytes[64] = "-";
			char news[64] = "-", polt[96] = "-";

			xrl_rule_format_match(&cur[i], match, sizeof(match));
			xrl_fmt_rate(&cur[i], rate, sizeof(rate));
			if (pol) {
				char dur[32], cnt[32];
				size_t k = 0;

				if (cur[i].policy & XRL_P_BLOCK) {
					xrl_duration_format(cur[i].block_ns, dur, sizeof(dur));
					k += snprintf(polt + k, sizeof(polt) - k, "block %s ", dur);
				}
				if ((cur[i].policy & XRL_P_SHADOW) && k < sizeof(polt)) {
					xrl_fmt_count((double)cur_stats[i].shadow_dropped, cnt, sizeof(cnt));
					k += snprintf(polt + k, sizeof(polt) - k, "shadow (%s would-drop)", cnt);
				}
				if (!cur[i].policy)
					snprintf(polt, sizeof(polt), "-");
			}
			if (cur[i].action == XRL_ACT_LIMIT && !cur[i].rate) {
				snprintf(rate, sizeof(rate), "-");   /* byte-only */
				snprintf(per, sizeof(per), "/%u", cur[i].per_len);
			} else if (cur[i].action == XRL_ACT_LIMIT) {
				if (cur[i].algo == XRL_ALGO_TOKEN_BUCKET)   /* a window algorithm has no burst */
					snprintf(burst, sizeof(burst), "%u", cur[i].burst);
				snprintf(per, sizeof(per), "/%u", cur[i].per_len);
			}
			if (cur[i].flags & XRL_F_BYTES) {
				char r[24], b[24];

				xrl_fmt_bytes((double)cur[i].byte_rate, r, sizeof(r));
				xrl_fmt_bytes((double)cur[i].byte_burst, b, sizeof(b));
				snprintf(bytes, sizeof(bytes), "%s/s burst %s", r, b);
			}
			if (cur[i].flags & XRL_F_NEWSRC)
				snprintf(news, sizeof(news), "%llu/%s burst %u",
					 (unsigned long long)cur[i].new_rate,
					 cur[i].new_period == 3600 ? "h" :
					 cur[i].new_period == 60 ? "m" : "s", cur[i].new_burst);
			/* fleet: the budget is shared through xrl daemon and Redis (--global) */
			printf("%-4u %-*s %-6s %10s %10s %4s  %-5s  ", cur_ids[i], w, match,
			       xrl_action_name(cur[i].action), rate, burst, per,
			       cur[i].action != XRL_ACT_LIMIT ? "-" :
			       cur[i].flags & XRL_F_GLOBAL ? "fleet" : "host");
			list_tail((const char *const[]){ bytes, news, cur[i].action == XRL_ACT_LIMIT ?
							 xrl_algo_name(cur[i].algo) : "-", polt },
				  ns, al, pol);
		}
	}
	xrl_instance_end(ctx, &m);
	return 0;
}

static int rule_save(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct xrl_maps m;
	char text[256];
	int n, i, rc;

	if ((rc = no_args(ctx, argc, argv)))
		return rc;
	if ((rc = begin(ctx, &m, &n, false)))
		return rc;
	if (ctx->json) {
		json_t *arr = json_array();

		for (i = 0; i < n; i++) {
			xrl_rule_format(&cur[i], text, sizeof(text));
			json_array_append_new(arr, json_string(text));
		}
		xrl_json_print(ctx, arr);
	} else {
		printf("# xrl rules of instance %s; load with: xrl --instance %s rule load FILE\n",
		       ctx->instance, ctx->instance);
		for (i = 0; i < n; i++) {
			xrl_rule_format(&cur[i], text, sizeof(text));
			printf("%s\n", text);
		}
	}
	xrl_instance_end(ctx, &m);
	return 0;
}

/* argv: load FILE */
static int rule_load(struct xrl_ctx *ctx, int argc, char **argv)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	const char *file = argc == 2 ? argv[1] : NULL;
	char err[XRL_ERRLEN];
	struct xrl_maps m;
	int n, rc, ncur;

	if (!file)
		return rule_usage(ctx, argv[0], NULL);
	rc = xrl_rules_read_file(file, defs, &n, err, sizeof(err));
	if (rc == -EINVAL)
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s; nothing was changed", err);
	if (rc)
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", err);
	if ((rc = begin(ctx, &m, &ncur, true)))
		return rc;
	rc = apply(ctx, &m, defs, n);
	xrl_instance_end(ctx, &m);
	if (!rc) {
		if (ctx->json)
			xrl_json_print(ctx, json_pack("{s:o,s:i}", "loaded", xrl_json_text(file), "rules", n));
		else
			printf("xrl: %d rules loaded from %s (the previous rule set was replaced)\n", n, file);
	}
	return rc;
}

static const struct xrl_cmd rule_cmds[] = {
	{ .name = "add", .fn = rule_add, .args = "PREFIX",
	  .opts = &xrl_rule_opts, .opt_mode = XRL_RULE_ADD,
	  .summary = "Add a rule for the sources in PREFIX, or replace the rule of the same "
		     "PREFIX and match fields: a limit (--rate, --bytes), or --allow or --deny.",
	  .example = "xrl rule add 203.0.113.0/24 --rate 100/s --burst 200\n"
		     "xrl rule add 198.51.100.0/24 --proto udp --dport 53 --rate 6000/m --per 24\n"
		     "xrl rule add 192.0.2.0/24 --syn --rate 20/s --block 10m --block-spoofable\n"
		     "xrl rule add 2001:db8::/32 --rate 500/s --algo sliding-window --global\n"
		     "xrl rule add 10.0.0.0/8 --proto udp --dport 53,5353 --dst 192.0.2.1 --deny" },
	{ .name = "del", .fn = rule_del, .args = "PREFIX|ID",
	  .opts = &xrl_rule_opts, .opt_mode = XRL_RULE_MATCH,
	  .summary = "Delete the rule of PREFIX with exactly these match fields, or the rule of ID "
		     "(the ID column of 'rule list').",
	  .example = "xrl rule del 203.0.113.0/24\nxrl rule del 198.51.100.0/24 --proto udp --dport 53\nxrl rule del 7" },
	{ .name = "list", .fn = rule_list, .args = "",
	  .summary = "List the rules in force, with their ids, limits and scope.",
	  .example = "xrl rule list\nxrl --json rule list" },
	{ .name = "load", .fn = rule_load, .args = "FILE",
	  .summary = "Replace the whole rule set with the rules of FILE, all or nothing.",
	  .example = "xrl rule load /etc/xrl/rules" },
	{ .name = "save", .fn = rule_save, .args = "",
	  .summary = "Print the rules in force as a rules file that 'rule load' reads back.",
	  .example = "xrl rule save >/etc/xrl/default.rules" },
};

const struct xrl_cmd_table xrl_rule_cmds = {
	.path = "xrl rule", .cmds = rule_cmds, .n = sizeof(rule_cmds) / sizeof(rule_cmds[0]),
};

static const struct xrl_cmd *rule_cmd(const char *name)
{
	return xrl_cmd_find(&xrl_rule_cmds, name);
}

/* argv: rule SUBCOMMAND ... */
int xrl_cmd_rule(struct xrl_ctx *ctx, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	const struct xrl_cmd *c = rule_cmd(sub);
	char names[128];

	if (c)
		return c->fn(ctx, argc - 1, argv + 1);
	xrl_cmd_names(&xrl_rule_cmds, "|", "|", names, sizeof(names));
	return xrl_error(ctx, XRL_EXIT_USAGE, "usage: xrl rule %s ... (got '%s')", names, sub);
}
