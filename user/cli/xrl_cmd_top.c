// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* top: the sources with the most drops now, from the per-CPU drop sketch. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xrl_busy_read.h"
#include "xrl_cli.h"
#include "xrl_newsrc.h"
#include "xrl_rule.h"
#include "xrl_top_flood.h"
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
		char rule[XRL_MATCH_TEXT], nr[32];

		if (!(defs[j].flags & XRL_F_NEWSRC) || !rs[j].new_refused)
			continue;
		xrl_rule_format_match(&defs[j], rule, sizeof(rule));
		xrl_fmt_count((double)rs[j].new_refused, nr, sizeof(nr));
		printf("rule %s: %s packets of new sources refused (budget %llu/%s): a spoofed-source flood?\n",
		       rule, nr, (unsigned long long)defs[j].new_rate,
		       defs[j].new_period == 3600 ? "h" : defs[j].new_period == 60 ? "m" : "s");
	}
}

/* New sources per rule, from the rules' counters read twice XRL_NEWSRC_WINDOW_NS apart. */
struct top_alerts {
	struct xrl_newsrc_rate r[XRL_MAX_RULES];
	enum xrl_newsrc_alert al[XRL_MAX_RULES];
	struct xrl_flood_tally t[XRL_MAX_RULES];
	struct xrl_synflood_rate syn[XRL_MAX_RULES];   /* --syn-proxy */
	bool synflood[XRL_MAX_RULES];                   /* absorbing a SYN flood (xrl_synflood) */
	int any;
};

/* Judge each rule (docs/xrl.8, top); all quiet when the counters cannot be read. */
static void top_alerts_read(const struct xrl_maps *m, const struct xrl_rule_def *defs,
			    const __u32 *ids, int nd, struct top_alerts *A)
{
	static struct xrl_rule_stats a[XRL_MAX_RULES], b[XRL_MAX_RULES];
	__u64 t0, t1;
	int j;

	A->any = 0;
	for (j = 0; j < nd; j++) {
		A->al[j] = XRL_NEWSRC_QUIET;
		A->synflood[j] = false;
	}
	for (j = 0; j < nd && defs[j].action != XRL_ACT_LIMIT; j++)
		;
	if (j == nd || xrl_read_rule_stats_many(m, ids, nd, a))
		return;
	t0 = xrl_mono_ns();
	xrl_newsrc_wait();
	if (xrl_read_rule_stats_many(m, ids, nd, b))
		return;
	t1 = xrl_mono_ns();
	for (j = 0; j < nd; j++) {
		xrl_newsrc_rates(&defs[j], &a[j], &b[j], (double)(t1 - t0) / 1e9, &A->r[j]);
		A->al[j] = xrl_newsrc_judge(&defs[j], &A->r[j]);
		A->any += A->al[j] != XRL_NEWSRC_QUIET;
		A->synflood[j] = xrl_synflood(&defs[j], &a[j], &b[j], (double)(t1 - t0) / 1e9, &A->syn[j]);
		A->any += A->synflood[j];
	}
}

/*
 * The rules under a flood of new sources: a line each in the text output
 * (before the table), an object each (no "source" member) after the
 * sources of the JSON array.
 */
static void top_alerts_print(const struct xrl_rule_def *defs, int nd, const struct top_alerts *A,
			     json_t *arr)
{
	int j;

	for (j = 0; j < nd; j++) {
		char rule[XRL_MATCH_TEXT], line[1024];
		json_t *o;

		if (A->synflood[j]) {
			xrl_rule_format_match(&defs[j], rule, sizeof(rule));
			xrl_synflood_line(rule, &A->syn[j], line, sizeof(line));
			if (!arr)
				printf("%s\n", line);
			else
				json_array_append_new(arr, json_pack("{s:s,s:s,s:f,s:f,s:f,s:s}", "rule", rule,
								     "alert", "syn_flood", "synacks_per_s",
								     A->syn[j].synacks, "proven_per_s",
								     A->syn[j].proven, "bad_cookies_per_s",
								     A->syn[j].bad, "line", line));
		}
		if (A->al[j] == XRL_NEWSRC_QUIET)
			continue;
		xrl_rule_format_match(&defs[j], rule, sizeof(rule));
		xrl_flood_line(&defs[j], &A->r[j], A->al[j], &A->t[j], rule, line, sizeof(line));
		if (!arr) {
			printf("%s\n", line);
			continue;
		}
		o = xrl_newsrc_alert_json(&defs[j], &A->r[j], A->al[j], rule, line,
					  XRL_NEWSRC_WINDOW_NS / 1e9);
		if (o && A->t[j].drops)
			json_object_set_new(o, "dropped_once_share",
					    json_real((double)A->t[j].once_drops / (double)A->t[j].drops));
		json_array_append_new(arr, o);
	}
}

/*
 * A --syn rule's source that sends established TCP (xrl_busy_read.h):
 * enum xrl_busy_mark; NONE for any other rule's.
 */
static int top_busy(const struct xrl_maps *m, const struct xrl_bucket_key *key,
		    const struct xrl_rule_def *d)
{
	return d && (d->flags & XRL_F_SYN) ? xrl_busy_mark_of(m, key, xrl_mono_ns()) :
					     XRL_BUSY_MARK_NONE;
}

/*
 * one row of top's output (text or JSON); dropped/age < 0: not in the
 * sketch. Returns its busy-client mark (enum xrl_busy_mark).
 */
static int top_row(struct xrl_ctx *ctx, const struct xrl_maps *m, const struct xrl_bucket_key *key,
		   const struct xrl_rule_def *d, long long dropped, double age, int blocked,
		   __u64 left, json_t *arr)
{
	char src[64], rule[XRL_MATCH_TEXT] = "(deleted rule)";
	__u64 passed = xrl_source_passed(m, key);   /* only for the rows shown */
	int shadow = d && (d->policy & XRL_P_SHADOW);
	int busy = top_busy(m, key, d);

	if (d)
		xrl_rule_format_match(d, rule, sizeof(rule));
	xrl_source_format(key, d, src, sizeof(src));
	if (ctx->json) {
		json_t *o = json_pack("{s:s,s:s,s:I,s:I}", "source", src, "rule", rule,
				      "passed", (json_int_t)passed,
				      "dropped", (json_int_t)(dropped < 0 ? 0 : dropped));

		json_object_set_new(o, "last_drop_age_s", age < 0 ? json_null() : json_real(age));
		if (shadow)
			json_object_set_new(o, "shadow", json_true());
		if (blocked)
			json_object_set_new(o, "blocked_left_s", json_real((double)left / 1e9));
		xrl_busy_json(o, busy);
		json_array_append_new(arr, o);
	} else {
		char p[32], dr[32] = "-", ag[32] = "-", state[64] = "";

		xrl_fmt_count((double)passed, p, sizeof(p));
		if (dropped >= 0)
			xrl_fmt_count((double)dropped, dr, sizeof(dr));
		if (age >= 0)
			snprintf(ag, sizeof(ag), "%.1fs", age);
		if (blocked)
			snprintf(state, sizeof(state), "  blocked, %.0fs left%s",
				 (double)left / 1e9 + 0.5, shadow ? " (shadow)" : "");
		else if (shadow)
			snprintf(state, sizeof(state), "  (shadow: would-drops, passed)");
		printf("%-40s %-40s %10s %10s %9s%s%s%s\n", src, rule, p, dr, ag, state,
		       busy ? "  " : "", xrl_busy_mark_text(busy));
	}
	return busy;
}

/* After the table: what to do about the busy clients in it (bit 1 << mark of each shown). */
static void top_busy_lines(unsigned marks)
{
	int k;

	for (k = XRL_BUSY_MARK_PROVEN; k > XRL_BUSY_MARK_NONE; k--)
		if (marks & (1u << k))
			printf("%s: %s\n", xrl_busy_mark_text(k), xrl_busy_advice(k));
}

int xrl_cmd_top(struct xrl_ctx *ctx, int argc, char **argv)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	static struct top_alerts A;
	static struct xrl_bucket_key bkeys[XRL_BLOCKED_SOURCES];
	static __u64 bleft[XRL_BLOCKED_SOURCES];
	static bool bshown[XRL_BLOCKED_SOURCES];
	struct xrl_top_entry *top = NULL;
	struct xrl_maps m;
	struct top_opts to = { .count = 10 };
	char err[XRL_ERRLEN];
	xrl_opt_seen seen = 0;
	__u64 count, now;
	double secs = XRL_WATCH_DEFAULT_S;
	json_t *arr;
	int n, nd, nb, i = 1, shown = 0, hidden = 0, rc;
	unsigned marks = 0;

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
	/* the rules under a flood of new sources, with the sources each dropped once */
	top_alerts_read(&m, defs, ids, nd, &A);
	now = xrl_mono_ns();
	memset(A.t, 0, sizeof(A.t));
	for (i = 0; i < n; i++) {
		int j;

		if (now > top[i].last_ns && now - top[i].last_ns > XRL_TOP_RECENT_NS)
			continue;
		for (j = 0; j < nd && ids[j] != top[i].key.rule_id; j++)
			;
		if (j < nd)
			xrl_flood_tally_add(&A.t[j], top[i].dropped);
	}
	/* the penalty box itself: the sketch samples drops and can miss a blocked source */
	nb = xrl_flood_blocked(&m, defs, ids, nd, now, bkeys, bleft, XRL_BLOCKED_SOURCES);
	if (nb < 0)
		nb = 0;   /* the table is still true: only the blocked rows are left out */
	memset(bshown, 0, sizeof(bshown[0]) * (size_t)nb);

	arr = json_array();
	if (!ctx->json) {
		top_alerts_print(defs, nd, &A, NULL);   /* what kind of flood, first */
		printf("%-40s %-40s %10s %10s %9s\n", "SOURCE", "RULE", "PASSED", "DROPPED", "LAST DROP");
	}
	/* a shadow rule's rows are its would-drops (passed); --block's blocked ones say the time left */
	for (i = 0; i < n && (__u64)shown < count; i++) {
		const struct xrl_rule_def *d = NULL;
		__u64 left = 0;
		int j, b, flooded = 0;

		if (now > top[i].last_ns && now - top[i].last_ns > XRL_TOP_RECENT_NS)
			continue;
		for (j = 0; j < nd; j++)
			if (ids[j] == top[i].key.rule_id) {
				d = &defs[j];
				flooded = A.al[j] != XRL_NEWSRC_QUIET;
			}
		for (b = 0; b < nb && memcmp(&bkeys[b], &top[i].key, sizeof(bkeys[b])); b++)
			;
		if (b < nb) {
			bshown[b] = true;
			left = bleft[b];
		} else if (flooded && xrl_flood_once(top[i].dropped)) {
			hidden++;   /* a spoofed source of the flood above, seen once */
			continue;
		}
		shown++;
		marks |= 1u << top_row(ctx, &m, &top[i].key, d, (long long)top[i].dropped,
				       now > top[i].last_ns ? (now - top[i].last_ns) / 1e9 : 0.0, b < nb,
				       left, arr);
	}
	/* every source blocked now, also those the sketch did not sample */
	for (i = 0; i < nb; i++) {
		const struct xrl_rule_def *d = NULL;
		int j;

		if (bshown[i])
			continue;
		for (j = 0; j < nd; j++)
			if (ids[j] == bkeys[i].rule_id)
				d = &defs[j];
		shown++;
		marks |= 1u << top_row(ctx, &m, &bkeys[i], d, -1, -1, 1, bleft[i], arr);
	}
	if (ctx->json) {
		top_alerts_print(defs, nd, &A, arr);
		xrl_json_print(ctx, arr);
	} else {
		if (!shown && !hidden)
			printf("(no source dropped in the last %llu s)\n", XRL_TOP_RECENT_NS / 1000000000ULL);
		if (hidden)
			printf("(%d source%s dropped once, of the flood%s above, not listed)\n", hidden,
			       hidden == 1 ? "" : "s", A.any == 1 ? "" : "s");
		top_busy_lines(marks);
		top_newsrc_lines(&m, defs, ids, nd);
		json_decref(arr);
	}
	free(top);
	xrl_instance_end(ctx, &m);
	return 0;
}
