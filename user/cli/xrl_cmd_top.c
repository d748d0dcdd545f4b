// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* top: the sources with the most drops now, from the per-CPU drop sketch. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xrl_cli.h"
#include "xrl_newsrc.h"
#include "xrl_rule.h"
#include "xrl_watch.h"

/* ---------------------------------------------------------------- options */

struct top_opts {
	__u64 count;
	bool watch;
	const char *interval;
};

#define TO(member) XRL_OPT_FIELD(struct top_opts, member)

enum { TO_COUNT, TO_WATCH, TO_INTERVAL, TO_N };

static const struct xrl_opt top_opt_rows[TO_N] = {
	[TO_COUNT] = { "count", 'n', "N", xrl_opt_uint, TO(count), .modes = 1, .min = 1, .max = 100000,
		       .what = "-n", .help = "show N sources (1 to 100000, default 10; --watch: the terminal's height)" },
	[TO_WATCH] = { "watch", 0, NULL, xrl_opt_flag, TO(watch), .modes = 1,
		       .help = "a live view sorted by the drop rate, redrawn until q" },
	[TO_INTERVAL] = { "interval", 'd', "SEC", xrl_opt_str, TO(interval), .modes = 1,
			  .flags = XRL_OPT_NESTED,
			  .help = "seconds between the frames of --watch (0.1 to 3600, default 1)" },
};

_Static_assert(TO_N <= 64, "xrl_opt_seen has a bit per row: at most 64 rows");

const struct xrl_opt_table xrl_top_opts = {
	.name = "top", .opts = top_opt_rows, .n = TO_N, .nmodes = 1,
	.see = "see xrl --help",
};

/* The options' combinations and values: 0, or the exit code of the error reported. */
static int top_check(struct xrl_ctx *ctx, const struct top_opts *o, double *secs)
{
	int rc;

	if (o->interval && !o->watch)
		return xrl_error(ctx, XRL_EXIT_USAGE, "--interval (-d) sets the refresh of --watch: add --watch");
	if (o->watch && o->interval && (rc = xrl_watch_interval(ctx, o->interval, secs)))
		return rc;
	return o->watch ? xrl_watch_usable(ctx, "top") : 0;
}

/*
 * A line per rule with --new-sources whose budget has refused new sources
 * since the rule was made (new_refused > 0): the drops of a spoofed-source
 * flood are spread over so many sources that none may show in the table.
 */
static void top_newsrc_lines(const struct xrl_maps *m, const struct xrl_rule_def *defs,
			     const __u32 *ids, int nd)
{
	static struct xrl_rule_stats rs[XRL_MAX_RULES];
	int j;

	if (xrl_read_rule_stats_many(m, ids, nd, rs))
		return;   /* the table above is still true: the hint alone is left out */
	for (j = 0; j < nd; j++) {
		char rule[192], nr[32];

		if (!(defs[j].flags & XRL_F_NEWSRC) || !rs[j].new_refused)
			continue;
		xrl_rule_format_match(&defs[j], rule, sizeof(rule));
		xrl_fmt_count((double)rs[j].new_refused, nr, sizeof(nr));
		printf("rule %s: %s packets of new sources refused (budget %llu/%s): a spoofed-source flood?\n",
		       rule, nr, (unsigned long long)defs[j].new_rate,
		       defs[j].new_period == 3600 ? "h" : defs[j].new_period == 60 ? "m" : "s");
	}
}

/* A --syn-proxy rule absorbing a SYN flood (xrl_synflood): a line, or a JSON object with "alert": "syn_flood". */
static void top_synflood_alert(const struct xrl_rule_def *d, const struct xrl_rule_stats *a,
			       const struct xrl_rule_stats *b, double secs, json_t *arr)
{
	struct xrl_synflood_rate r;
	char rule[192], line[512];

	if (!xrl_synflood(d, a, b, secs, &r))
		return;
	xrl_rule_format_match(d, rule, sizeof(rule));
	xrl_synflood_line(rule, &r, line, sizeof(line));
	if (!arr) {
		printf("%s\n", line);
		return;
	}
	json_array_append_new(arr, json_pack("{s:s,s:s,s:f,s:f,s:f,s:s}", "rule", rule, "alert",
					     "syn_flood", "synacks_per_s", r.synacks, "proven_per_s",
					     r.proven, "bad_cookies_per_s", r.bad, "line", line));
}

/*
 * New sources arriving far above a rule's budget, from the rules' counters
 * read twice XRL_NEWSRC_WINDOW_NS apart (docs/xrl.8, top): a line each in
 * the text output, an object each (no "source" member) after the sources
 * of the JSON array. Nothing when the counters cannot be read: the sources
 * above are still true.
 */
static void top_newsrc_alerts(const struct xrl_maps *m, const struct xrl_rule_def *defs,
			      const __u32 *ids, int nd, json_t *arr)
{
	static struct xrl_rule_stats a[XRL_MAX_RULES], b[XRL_MAX_RULES];
	__u64 t0, t1;
	double secs;
	int j;

	for (j = 0; j < nd && defs[j].action != XRL_ACT_LIMIT; j++)
		;
	if (j == nd || xrl_read_rule_stats_many(m, ids, nd, a))
		return;
	t0 = xrl_mono_ns();
	xrl_newsrc_wait();
	if (xrl_read_rule_stats_many(m, ids, nd, b))
		return;
	t1 = xrl_mono_ns();
	secs = (double)(t1 - t0) / 1e9;
	for (j = 0; j < nd; j++) {
		struct xrl_newsrc_rate r;
		enum xrl_newsrc_alert al;
		char rule[192], line[512];

		top_synflood_alert(&defs[j], &a[j], &b[j], secs, arr);
		xrl_newsrc_rates(&defs[j], &a[j], &b[j], secs, &r);
		al = xrl_newsrc_judge(&defs[j], &r);
		if (al == XRL_NEWSRC_QUIET)
			continue;
		xrl_rule_format_match(&defs[j], rule, sizeof(rule));
		xrl_newsrc_alert_line(&defs[j], &r, al, rule, line, sizeof(line));
		if (!arr) {
			printf("%s\n", line);
			continue;
		}
		json_array_append_new(arr, xrl_newsrc_alert_json(&defs[j], &r, al, rule, line,
							   XRL_NEWSRC_WINDOW_NS / 1e9));
	}
}

int xrl_cmd_top(struct xrl_ctx *ctx, int argc, char **argv)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	struct xrl_top_entry *top = NULL;
	struct xrl_maps m;
	struct timespec ts;
	struct top_opts to = { .count = 10 };
	char err[XRL_ERRLEN];
	xrl_opt_seen seen = 0;
	__u64 count, now;
	double secs = XRL_WATCH_DEFAULT_S;
	json_t *arr;
	int n, nd, i = 1, shown = 0, rc;

	if (xrl_opts_parse(&xrl_top_opts, 0, argc, argv, &i, &to, &seen, err, sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s", err);
	if (i != argc)
		return xrl_usage_error(ctx, argv[0]);
	if ((rc = top_check(ctx, &to, &secs)))
		return rc;
	count = to.count;
	/* without -n the live view fills the terminal */
	if (to.watch)
		return xrl_top_watch(ctx, secs, XRL_SEEN(seen, TO_COUNT) ? count : UINT64_MAX);
	if ((rc = xrl_instance_begin(ctx, &m, false)))
		return rc;
	if (xrl_ruleset_read(&m, defs, ids, &nd) || xrl_top_read(&m, &top, &n)) {
		xrl_instance_end(ctx, &m);
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot read the drop sketch of instance '%s'",
				 ctx->instance);
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;

	arr = json_array();
	if (!ctx->json)
		printf("%-40s %-40s %10s %10s %9s\n", "SOURCE", "RULE", "PASSED", "DROPPED", "LAST DROP");
	/* a shadow rule's rows are its would-drops (passed); --block's blocked ones say the time left */
	for (i = 0; i < n && (__u64)shown < count; i++) {
		const struct xrl_rule_def *d = NULL;
		char src[64], rule[192] = "(deleted rule)";
		__u64 passed, left = 0;
		int j, shadow, blocked;

		if (now > top[i].last_ns && now - top[i].last_ns > XRL_TOP_RECENT_NS)
			continue;
		for (j = 0; j < nd; j++)
			if (ids[j] == top[i].key.rule_id)
				d = &defs[j];
		if (d)
			xrl_rule_format_match(d, rule, sizeof(rule));
		xrl_source_format(&top[i].key, d, src, sizeof(src));
		passed = xrl_source_passed(&m, &top[i].key);   /* only for the rows shown */
		shown++;
		shadow = d && (d->policy & XRL_P_SHADOW);
		blocked = d && (d->policy & XRL_P_BLOCK) && xrl_block_left(&m, &top[i].key, d, now, &left);
		if (ctx->json) {
			json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:f}", "source", src, "rule", rule,
					      "passed", (json_int_t)passed,
					      "dropped", (json_int_t)top[i].dropped,
					      "last_drop_age_s",
					      now > top[i].last_ns ? (now - top[i].last_ns) / 1e9 : 0.0);

			if (shadow)
				json_object_set_new(o, "shadow", json_true());
			if (blocked)
				json_object_set_new(o, "blocked_left_s", json_real((double)left / 1e9));
			json_array_append_new(arr, o);
		} else {
			char p[32], dr[32], state[64] = "";

			xrl_fmt_count((double)passed, p, sizeof(p));
			xrl_fmt_count((double)top[i].dropped, dr, sizeof(dr));
			if (blocked)
				snprintf(state, sizeof(state), "  blocked, %.0fs left%s",
					 (double)left / 1e9 + 0.5, shadow ? " (shadow)" : "");
			else if (shadow)
				snprintf(state, sizeof(state), "  (shadow: would-drops, passed)");
			printf("%-40s %-40s %10s %10s %8.1fs%s\n", src, rule, p, dr,
			       now > top[i].last_ns ? (now - top[i].last_ns) / 1e9 : 0.0, state);
		}
	}
	if (ctx->json) {
		top_newsrc_alerts(&m, defs, ids, nd, arr);
		xrl_json_print(ctx, arr);
	} else {
		if (!shown)
			printf("(no source dropped in the last %llu s)\n", XRL_TOP_RECENT_NS / 1000000000ULL);
		top_newsrc_lines(&m, defs, ids, nd);
		top_newsrc_alerts(&m, defs, ids, nd, NULL);
		json_decref(arr);
	}
	free(top);
	xrl_instance_end(ctx, &m);
	return 0;
}
