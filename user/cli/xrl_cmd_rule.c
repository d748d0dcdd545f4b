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

/* Lock, open, read the rule set. Returns 0 or an exit code (already reported). */
static int begin(struct xrl_ctx *ctx, struct xrl_maps *m, int *n, bool write)
{
	int rc = xrl_instance_begin(ctx, m, write), err;

	if (rc)
		return rc;
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
	if (d->flags & XRL_F_DPORT)
		json_object_set_new(o, "dport", json_integer(d->dport));
	if (d->flags & XRL_F_SYN)
		json_object_set_new(o, "syn", json_true());
	if (d->flags & XRL_F_GLOBAL)
		json_object_set_new(o, "global", json_true());
	if (d->action == XRL_ACT_LIMIT) {
		xrl_fmt_rate(d, rate, sizeof(rate));
		json_object_set_new(o, "rate", json_string(rate));
		json_object_set_new(o, "rate_pps", json_real((double)d->rate / d->rate_period));
		if (d->algo == XRL_ALGO_TOKEN_BUCKET)   /* a window algorithm has no burst */
			json_object_set_new(o, "burst", json_integer(d->burst));
		json_object_set_new(o, "per", json_integer(d->per_len));
		json_object_set_new(o, "algo", json_string(xrl_algo_name(d->algo)));   /* --algo */
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

/* argv: del PREFIX [MATCH] */
static int rule_del(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct xrl_rule_def def;
	struct xrl_maps m;
	char err[XRL_ERRLEN], text[256];
	int n, i, rc;

	if (argc < 2)
		return rule_usage(ctx, argv[0], NULL);
	if (xrl_rule_parse_args(argc - 1, argv + 1, XRL_RULE_MATCH, &def, err, sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s", err);
	if ((rc = begin(ctx, &m, &n, true)))
		return rc;
	xrl_rule_format_match(&def, text, sizeof(text));
	for (i = 0; i < n; i++)
		if (xrl_rule_same_match(&cur[i], &def))
			break;
	if (i == n) {
		xrl_instance_end(ctx, &m);
		return xrl_error(ctx, XRL_EXIT_FAIL, "no rule %s (see 'xrl rule list')", text);
	}
	memmove(&cur[i], &cur[i + 1], (size_t)(n - i - 1) * sizeof(cur[0]));
	rc = apply(ctx, &m, cur, n - 1);
	xrl_instance_end(ctx, &m);
	if (!rc) {
		if (ctx->json)
			xrl_json_print(ctx, json_pack("{s:s}", "deleted", text));
		else
			printf("xrl: rule deleted: %s\n", text);
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

static int rule_list(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct xrl_maps m;
	int n, i, rc;

	if ((rc = no_args(ctx, argc, argv)))
		return rc;
	if ((rc = begin(ctx, &m, &n, false)))
		return rc;
	if (ctx->json) {
		json_t *arr = json_array();

		for (i = 0; i < n; i++)
			json_array_append_new(arr, rule_json(&cur[i], cur_ids[i]));
		xrl_json_print(ctx, arr);
	} else {
		int w = 4, ns = 0, al = 0;

		for (i = 0; i < n; i++) {
			ns |= !!(cur[i].flags & XRL_F_NEWSRC);
			al |= cur[i].action == XRL_ACT_LIMIT && cur[i].algo != XRL_ALGO_TOKEN_BUCKET;
			char match[192];

			xrl_rule_format_match(&cur[i], match, sizeof(match));
			if ((int)strlen(match) > w)
				w = (int)strlen(match);
		}
		/* the NEW column (--new-sources) only when a rule has a new-source budget */
		/* the ALGO column (--algo) only when a rule has another algorithm than the token bucket */
		printf("%-4s %-*s %-6s %10s %10s %4s  %-5s  %-*s%s%s\n", "ID", w, "RULE", "ACTION", "RATE",
		       "BURST", "PER", "SCOPE", ns || al ? 24 : 0, "BYTES", ns ? "  NEW" : "",
		       al ? (ns ? "                   ALGO" : "  ALGO") : "");
		for (i = 0; i < n; i++) {
			char match[192], rate[32], burst[32] = "-", per[8] = "-", bytes[64] = "-";
			char news[64] = "";

			xrl_rule_format_match(&cur[i], match, sizeof(match));
			xrl_fmt_rate(&cur[i], rate, sizeof(rate));
			if (cur[i].action == XRL_ACT_LIMIT) {
				if (cur[i].algo == XRL_ALGO_TOKEN_BUCKET)
					snprintf(burst, sizeof(burst), "%u", cur[i].burst);
				snprintf(per, sizeof(per), "/%u", cur[i].per_len);
			}
			if (cur[i].flags & XRL_F_BYTES) {
				char r[24], b[24];

				xrl_fmt_bytes((double)cur[i].byte_rate, r, sizeof(r));
				xrl_fmt_bytes((double)cur[i].byte_burst, b, sizeof(b));
				snprintf(bytes, sizeof(bytes), "%s/s burst %s", r, b);
			}
			if (ns)
				snprintf(news, sizeof(news), "  -");
			if (cur[i].flags & XRL_F_NEWSRC)
				snprintf(news, sizeof(news), "  %llu/%s burst %u",
					 (unsigned long long)cur[i].new_rate,
					 cur[i].new_period == 3600 ? "h" :
					 cur[i].new_period == 60 ? "m" : "s", cur[i].new_burst);
			/* fleet: the budget is shared through xrl daemon and Redis (--global) */
			printf("%-4u %-*s %-6s %10s %10s %4s  %-5s  %-*s%-*s%s%s\n", cur_ids[i], w, match,
			       xrl_action_name(cur[i].action), rate, burst, per,
			       cur[i].action != XRL_ACT_LIMIT ? "-" :
			       cur[i].flags & XRL_F_GLOBAL ? "fleet" : "host", ns || al ? 24 : 0, bytes,
			       ns && al ? 23 : 0, news, al ? "  " : "",
			       !al ? "" : cur[i].action == XRL_ACT_LIMIT ? xrl_algo_name(cur[i].algo) : "-");
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
	  .opts = &xrl_rule_opts, .opt_mode = XRL_RULE_ADD },
	{ .name = "del", .fn = rule_del, .args = "PREFIX",
	  .opts = &xrl_rule_opts, .opt_mode = XRL_RULE_MATCH },
	{ .name = "list", .fn = rule_list, .args = "" },
	{ .name = "load", .fn = rule_load, .args = "FILE" },
	{ .name = "save", .fn = rule_save, .args = "" },
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
