// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * top --watch: the sources dropping the most right now, with their rates.
 *
 * Drop rates come from the drop sketch, compared slot by slot and CPU by
 * CPU with the previous reading. A slot's total only grows while its source
 * holds it; when another source took it meanwhile (or the same one lost it
 * and took it back: the total is smaller), everything it holds was counted
 * since, so that is its share of the interval. Comparing merged totals
 * instead would turn one CPU's lost slot into a negative rate for a source
 * still flooding on the other CPUs.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "xrl_busy_read.h"
#include "xrl_newsrc.h"
#include "xrl_rule.h"
#include "xrl_top_flood.h"
#include "xrl_watch.h"

struct top_row {
	struct xrl_bucket_key key;
	__u64 dropped;      /* counted since the source took its slots (sampled estimate) */
	__u64 drop_delta;   /* counted since the previous reading */
	__u64 last_ns;
	__u64 passed;
	double pass_rate;   /* < 0: not known before the row's second reading */
	bool blocked;       /* in the penalty box now (read from it, not from the sketch) */
	bool in_sketch;     /* false: a blocked source the sketch has not sampled */
	int busy;           /* a --syn rule's source that sends established TCP: enum xrl_busy_mark */
	char src[64];
	char rule[XRL_MATCH_TEXT];   /* the rule's match text */
	char state[48];     /* its policy's state: "  blocked, 59s left", "  (shadow)" */
};

/* The width of a row's RULE column: the rule, its state and its busy-client mark. */
static int row_rule_len(const struct top_row *r)
{
	size_t n = strlen(r->rule) + strlen(r->state);

	if (r->busy)
		n += 2 + strlen(xrl_busy_mark_text(r->busy));
	return (int)n;
}

/* A shown row's passed count, for its pass rate at the next reading. */
struct top_passed {
	struct xrl_bucket_key key;
	__u64 passed;
};

struct top_state {
	double interval;
	__u64 count;                    /* -n: at most this many rows */
	int ncpu;
	struct xrl_sketch_slot *prev;   /* the previous reading of the sketch, as read */
	__u64 prev_ns, now_ns;
	double secs;                    /* between the last two readings */
	bool rates;                     /* two readings exist */
	struct xrl_global_stats g, g_prev;
	long sources;
	struct top_row *rows;           /* sources that dropped in the last 10 s, ordered */
	int nrows, nshown;              /* nshown: rows with text and passed filled in */
	int hidden;                     /* sources dropped once under a flood: counted, not listed */
	struct top_passed *memo;        /* the rows shown at the previous reading */
	int nmemo;
	struct top_newsrc *ns;          /* new sources per rule: alerts */
};

/*
 * New sources per rule between two readings, for the alert lines above the
 * table (xrl_newsrc_judge). By rule id; a rule whose match changed (or a new
 * rule on a reused id) starts from its counters at zero.
 */
struct top_newsrc {
	struct xrl_rule_def defs[XRL_MAX_RULES], prev_def[XRL_MAX_RULES];
	struct xrl_rule_stats cur[XRL_MAX_RULES], prev[XRL_MAX_RULES];
	__u32 ids[XRL_MAX_RULES];
	bool seen[XRL_MAX_RULES];
	struct xrl_newsrc_rate rate[XRL_MAX_RULES];   /* by index in defs */
	enum xrl_newsrc_alert alert[XRL_MAX_RULES];
	struct xrl_flood_tally tally[XRL_MAX_RULES];   /* by index in defs: the sketch's rows */
	struct xrl_synflood_rate syn[XRL_MAX_RULES];   /* --syn-proxy, by index in defs */
	bool synflood[XRL_MAX_RULES];
	int n;
	bool rates;
	__u64 prev_ns;
};

static int top_newsrc_sample(struct top_newsrc *ns, const struct xrl_maps *m)
{
	__u64 now;
	double secs;
	int i, err;

	if ((err = xrl_ruleset_read(m, ns->defs, ns->ids, &ns->n)) ||
	    (err = xrl_read_rule_stats_many(m, ns->ids, ns->n, ns->cur)))
		return err;
	now = xrl_mono_ns();
	ns->rates = ns->prev_ns != 0;
	secs = ns->rates ? (double)(now - ns->prev_ns) / 1e9 : 0;
	for (i = 0; i < ns->n; i++) {
		__u32 id = ns->ids[i];
		struct xrl_rule_stats before = { 0 };

		if (ns->seen[id] && xrl_rule_same_match(&ns->prev_def[id], &ns->defs[i]))
			before = ns->prev[id];
		xrl_newsrc_rates(&ns->defs[i], &before, &ns->cur[i], secs, &ns->rate[i]);
		ns->alert[i] = ns->rates ? xrl_newsrc_judge(&ns->defs[i], &ns->rate[i]) : XRL_NEWSRC_QUIET;
		ns->synflood[i] = ns->rates &&
				  xrl_synflood(&ns->defs[i], &before, &ns->cur[i], secs, &ns->syn[i]);
	}
	memset(ns->seen, 0, sizeof(ns->seen));
	for (i = 0; i < ns->n; i++) {
		ns->seen[ns->ids[i]] = true;
		ns->prev_def[ns->ids[i]] = ns->defs[i];
		ns->prev[ns->ids[i]] = ns->cur[i];
	}
	ns->prev_ns = now;
	return 0;
}

/* A line per rule whose new sources arrive far above its budget (see top in docs/xrl.8). */
static void top_newsrc_draw(const struct top_newsrc *ns, struct xrl_frame *f)
{
	int i;

	for (i = 0; i < ns->n && xrl_frame_room(f) > 0; i++) {
		char rule[XRL_MATCH_TEXT], line[1024];

		if (ns->synflood[i]) {
			xrl_rule_format_match(&ns->defs[i], rule, sizeof(rule));
			xrl_synflood_line(rule, &ns->syn[i], line, sizeof(line));
			xrl_frame_wrap(f, XRL_FRAME_BOLD, "%s", line);
		}
		if (ns->alert[i] == XRL_NEWSRC_QUIET || xrl_frame_room(f) <= 0)
			continue;
		xrl_rule_format_match(&ns->defs[i], rule, sizeof(rule));
		xrl_flood_line(&ns->defs[i], &ns->rate[i], ns->alert[i], &ns->tally[i], rule, line,
			       sizeof(line));
		xrl_frame_wrap(f, XRL_FRAME_BOLD, "%s", line);   /* wrapped, never cut */
	}
}

static int by_rate(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->drop_delta != y->drop_delta)
		return x->drop_delta < y->drop_delta ? 1 : -1;
	return x->dropped < y->dropped ? 1 : x->dropped > y->dropped ? -1 : 0;
}

static int by_total(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	return x->dropped < y->dropped ? 1 : x->dropped > y->dropped ? -1 : 0;
}

/* Merge the CPUs of each slot into one row per source, with drops since prev. */
static int merge(const struct xrl_sketch_slot *cur, const struct xrl_sketch_slot *prev, int ncpu,
		 __u64 now, struct top_row *rows)
{
	int slot, c, k, cnt = 0, out = 0;

	for (slot = 0; slot < (int)XRL_SKETCH_SLOTS; slot++) {
		int first = cnt;   /* a source lands in the same slot on every CPU */

		for (c = 0; c < ncpu; c++) {
			const struct xrl_sketch_slot *s = &cur[(size_t)slot * ncpu + c];
			const struct xrl_sketch_slot *p = prev ? &prev[(size_t)slot * ncpu + c] : NULL;
			__u64 before = 0;

			if (!s->total)
				continue;
			for (k = first; k < cnt; k++)
				if (!memcmp(&rows[k].key, &s->key, sizeof(s->key)))
					break;
			if (k == cnt) {
				memset(&rows[k], 0, sizeof(rows[k]));
				rows[k].key = s->key;
				rows[k].in_sketch = true;
				cnt++;
			}
			if (p && p->total && p->total <= s->total &&
			    !memcmp(&p->key, &s->key, sizeof(s->key)))
				before = p->total;
			rows[k].dropped += s->total;
			rows[k].drop_delta += s->total - before;
			if (s->last_ns > rows[k].last_ns)
				rows[k].last_ns = s->last_ns;
		}
	}
	/* top's "now": a source that stopped dropping fades out after 10 s */
	for (k = 0; k < cnt; k++)
		if (rows[k].last_ns >= now || now - rows[k].last_ns <= XRL_TOP_RECENT_NS)
			rows[out++] = rows[k];
	return out;
}

/* Rule text, source text and passed count of the rows to show. */
static int fill_shown(struct top_state *st, const struct xrl_maps *m, int limit)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static const struct xrl_rule_def *by_id[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	struct top_passed *memo;
	int nd, i, j, err;

	if ((err = xrl_ruleset_read(m, defs, ids, &nd)))
		return err;
	memo = calloc((size_t)limit + 1, sizeof(*memo));
	if (!memo)
		return -ENOMEM;
	memset(by_id, 0, sizeof(by_id));
	for (i = 0; i < nd; i++)
		by_id[ids[i]] = &defs[i];
	for (i = 0; i < limit; i++) {
		struct top_row *r = &st->rows[i];
		const struct xrl_rule_def *d = r->key.rule_id < XRL_MAX_RULES ? by_id[r->key.rule_id] : NULL;

		snprintf(r->rule, sizeof(r->rule), "(deleted rule)");
		r->state[0] = 0;
		if (d)
			xrl_rule_format_match(d, r->rule, sizeof(r->rule));
		if (d && d->policy) {
			/* a shadow rule's drops are would-drops (passed); a blocked source, its time left */
			size_t k = 0;
			__u64 left;

			if ((d->policy & XRL_P_BLOCK) && xrl_block_left(m, &r->key, d, xrl_mono_ns(), &left))
				k = (size_t)snprintf(r->state, sizeof(r->state), "  blocked, %.0fs left",
						     (double)left / 1e9 + 0.5);
			if ((d->policy & XRL_P_SHADOW) && k < sizeof(r->state))
				snprintf(r->state + k, sizeof(r->state) - k, "  (shadow)");
		}
		/* a --syn rule's source whose connections complete: a busy client, not an attacker */
		r->busy = d && (d->flags & XRL_F_SYN) ? xrl_busy_mark_of(m, &r->key, st->now_ns) :
						       XRL_BUSY_MARK_NONE;
		xrl_source_format(&r->key, d, r->src, sizeof(r->src));
		/* one map lookup per row shown, not per source in the sketch */
		r->passed = xrl_source_passed(m, &r->key);
		r->pass_rate = -1;
		for (j = 0; j < st->nmemo; j++)
			if (!memcmp(&st->memo[j].key, &r->key, sizeof(r->key)))
				r->pass_rate = xrl_watch_rate(st->memo[j].passed, r->passed, st->secs);
		memo[i].key = r->key;
		memo[i].passed = r->passed;
	}
	free(st->memo);
	st->memo = memo;
	st->nmemo = limit;
	return 0;
}

/*
 * Order the rows to show first: every blocked source, and the others by
 * drop rate as far as -n (or the screen) leaves room; under a flood of new
 * sources, a source of the flooded rule dropped once is counted, not shown.
 * The rows' order among themselves is kept. Returns how many to show.
 */
static int pick_shown(struct top_state *st, int limit)
{
	const struct top_newsrc *ns = st->ns;
	struct top_row *tmp;
	int i, j, nblocked = 0, others = 0, k = 0, room;
	bool *take;

	for (i = 0; i < st->nrows; i++)
		nblocked += st->rows[i].blocked;
	room = limit > nblocked ? limit - nblocked : 0;
	take = calloc((size_t)st->nrows + 1, sizeof(*take));
	tmp = calloc((size_t)st->nrows + 1, sizeof(*tmp));
	if (!take || !tmp) {
		free(take);
		free(tmp);
		return limit < st->nrows ? limit : st->nrows;
	}
	st->hidden = 0;
	for (i = 0; i < st->nrows; i++) {
		const struct top_row *r = &st->rows[i];
		bool flooded = false;

		for (j = 0; j < ns->n; j++)
			if (ns->ids[j] == r->key.rule_id)
				flooded = ns->alert[j] != XRL_NEWSRC_QUIET;
		if (r->blocked)
			take[i] = true;
		else if (flooded && xrl_flood_once(r->dropped))
			st->hidden++;   /* a spoofed source of the flood, seen once */
		else if (others < room)
			take[i] = true, others++;
	}
	for (i = 0; i < st->nrows; i++)
		if (take[i])
			tmp[k++] = st->rows[i];
	for (i = 0; i < st->nrows; i++)
		if (!take[i])
			tmp[k++] = st->rows[i];
	memcpy(st->rows, tmp, sizeof(*tmp) * (size_t)st->nrows);
	for (i = 0, k = 0; i < st->nrows; i++)
		k += take[i];
	free(take);
	free(tmp);
	return k;
}

static int top_sample(struct xrl_ctx *ctx, const struct xrl_maps *m, void *arg, int rows)
{
	static struct xrl_bucket_key bkeys[XRL_BLOCKED_SOURCES];
	static __u64 bleft[XRL_BLOCKED_SOURCES];
	struct top_state *st = arg;
	struct xrl_sketch_slot *cur;
	struct xrl_global_stats g;
	struct top_row *res;
	int ncpu, n, nb, i, j, limit, err;
	bool newsrc_ok;
	__u64 now;

	(void)ctx;
	if ((err = xrl_read_global(m, &g)) || (err = xrl_sketch_read(m, &cur, &ncpu)))
		return err;
	now = xrl_mono_ns();
	/* the rules, their new sources and alerts: which rows belong to a flood */
	newsrc_ok = !top_newsrc_sample(st->ns, m);
	if (!newsrc_ok)
		st->ns->n = 0;
	nb = xrl_flood_blocked(m, st->ns->defs, st->ns->ids, st->ns->n, now, bkeys, bleft,
			       XRL_BLOCKED_SOURCES);
	if (nb < 0)
		nb = 0;   /* the sketch's rows are still true */
	res = calloc((size_t)ncpu * XRL_SKETCH_SLOTS + (size_t)nb, sizeof(*res));
	if (!res) {
		free(cur);
		return -ENOMEM;
	}
	if (st->prev && st->ncpu != ncpu) {
		free(st->prev);
		st->prev = NULL;
	}
	n = merge(cur, st->prev, ncpu, now, res);
	qsort(res, (size_t)n, sizeof(*res), st->prev ? by_rate : by_total);
	memset(st->ns->tally, 0, sizeof(st->ns->tally));
	for (i = 0; i < n; i++)
		for (j = 0; j < st->ns->n; j++)
			if (st->ns->ids[j] == res[i].key.rule_id)
				xrl_flood_tally_add(&st->ns->tally[j], res[i].dropped);
	/* the penalty box itself: a blocked source the sketch missed is a row too */
	for (i = 0; i < nb; i++) {
		for (j = 0; j < n && memcmp(&res[j].key, &bkeys[i], sizeof(bkeys[i])); j++)
			;
		if (j == n) {
			memset(&res[n], 0, sizeof(res[n]));
			res[n++].key = bkeys[i];
		}
		res[j].blocked = true;
	}

	free(st->rows);
	st->rows = res;
	st->nrows = n;
	st->rates = st->prev != NULL;
	st->secs = st->rates ? (double)(now - st->prev_ns) / 1e9 : 0;
	if (!st->rates)
		st->nmemo = 0;
	limit = (__u64)rows < st->count ? rows : (int)st->count;
	st->nshown = pick_shown(st, limit);
	st->now_ns = now;
	if ((err = fill_shown(st, m, st->nshown))) {
		free(cur);
		st->nshown = 0;
		return err;
	}
	/* sources tracked: those of the rules in force (xrl_census_sources); "?" when unread */
	{
		struct xrl_source_census c;

		st->sources = newsrc_ok &&
			      !xrl_census_sources(m, st->ns->defs, st->ns->ids, st->ns->n, NULL, &c) ?
			      c.tracked : -1;
	}

	free(st->prev);
	st->prev = cur;
	st->ncpu = ncpu;
	st->prev_ns = now;
	st->now_ns = now;
	st->g_prev = st->g;
	st->g = g;
	return 0;
}

/* A rate, or the count itself on the first frame. */
static void cell(const struct top_state *st, double rate, __u64 total, char *buf, size_t len)
{
	xrl_fmt_count(st->rates ? rate : (double)total, buf, len);
}

static void top_draw(struct xrl_ctx *ctx, void *arg, struct xrl_frame *f)
{
	const struct top_state *st = arg;
	const struct xrl_global_stats *g = &st->g, *p = &st->g_prev;
	char left[256], clock[16], a[32], b[32], c[32], srcs[32];
	int i, k, width = 6, rule_w = 4, nrecent;
	bool totals;
	time_t t = time(NULL);
	struct tm tm;

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime_r(&t, &tm));
	snprintf(left, sizeof(left), "xrl top --watch: instance %s, every %gs (q quits)",
		 ctx->instance, st->interval);
	xrl_frame_title(f, left, clock);
	cell(st, xrl_watch_rate(p->packets, g->packets, st->secs), g->packets, a, sizeof(a));
	cell(st, xrl_watch_rate(p->packets - p->dropped, g->packets - g->dropped, st->secs),
	     g->packets - g->dropped, b, sizeof(b));
	cell(st, xrl_watch_rate(p->dropped, g->dropped, st->secs), g->dropped, c, sizeof(c));
	if (st->sources >= 0)
		snprintf(srcs, sizeof(srcs), "%ld", st->sources);
	else
		snprintf(srcs, sizeof(srcs), "?");
	if (st->rates)
		xrl_frame_line(f, XRL_FRAME_PLAIN, "packets %s/s: passed %s/s, dropped %s/s", a, b, c);
	else
		xrl_frame_line(f, XRL_FRAME_PLAIN,
			       "packets %s: passed %s, dropped %s (totals; rates from the next refresh)", a, b, c);
	for (i = 0, nrecent = 0; i < st->nrows; i++)
		nrecent += st->rows[i].in_sketch;
	xrl_frame_wrap(f, XRL_FRAME_PLAIN,
		       "sources: %s tracked, %d dropped in the last %llu s (drops are estimates: sampled 1 in %d per CPU)",
		       srcs, nrecent, XRL_TOP_RECENT_NS / 1000000000ULL, XRL_SKETCH_SAMPLE);
	top_newsrc_draw(st->ns, f);
	xrl_frame_line(f, XRL_FRAME_PLAIN, "%s", "");

	for (i = 0; i < st->nshown; i++) {
		if ((int)strlen(st->rows[i].src) > width)
			width = (int)strlen(st->rows[i].src);
		if (row_rule_len(&st->rows[i]) > rule_w)
			rule_w = row_rule_len(&st->rows[i]);
	}
	/* the rule and its state ("blocked, 59s left") are never cut: on a narrow
	 * terminal the totals DROPPED and PASSED go first */
	totals = 43 + width + 2 + rule_w <= f->cols;
	xrl_frame_line(f, XRL_FRAME_BAR, "%8s %8s%s %6s  %-*s  %s", "DROP/s", "PASS/s",
		       totals ? "  DROPPED   PASSED" : "", "LAST", width, "SOURCE", "RULE");
	if (!st->nrows && !st->hidden)
		xrl_frame_line(f, XRL_FRAME_PLAIN, "(no source dropped in the last %llu s)",
			       XRL_TOP_RECENT_NS / 1000000000ULL);
	for (i = 0; i < st->nshown && xrl_frame_room(f) > 0; i++) {
		const struct top_row *r = &st->rows[i];
		char dr[32] = "-", pr[32] = "-", dt[32] = "-", pt[32], ag[16] = "-";
		__u64 age = st->now_ns > r->last_ns ? st->now_ns - r->last_ns : 0;

		if (st->rates && r->in_sketch)
			xrl_fmt_count((double)r->drop_delta / st->secs, dr, sizeof(dr));
		if (r->pass_rate >= 0)
			xrl_fmt_count(r->pass_rate, pr, sizeof(pr));
		if (r->in_sketch) {
			xrl_fmt_count((double)r->dropped, dt, sizeof(dt));
			snprintf(ag, sizeof(ag), "%.1fs", (double)age / 1e9);
		}
		xrl_fmt_count((double)r->passed, pt, sizeof(pt));
		if (totals)
			xrl_frame_line(f, XRL_FRAME_PLAIN, "%8s %8s %8s %8s %6s  %-*s  %s%s%s%s", dr, pr, dt,
				       pt, ag, width, r->src, r->rule, r->state, r->busy ? "  " : "",
				       xrl_busy_mark_text(r->busy));
		else
			xrl_frame_line(f, XRL_FRAME_PLAIN, "%8s %8s %6s  %-*s  %s%s%s%s", dr, pr, ag, width,
				       r->src, r->rule, r->state, r->busy ? "  " : "",
				       xrl_busy_mark_text(r->busy));
	}
	if (st->hidden && xrl_frame_room(f) > 0)
		xrl_frame_wrap(f, XRL_FRAME_PLAIN,
			       "(%d source%s dropped once, of the flood above, not listed: spoofed, each seen once)",
			       st->hidden, st->hidden == 1 ? "" : "s");
	/* what to do about a busy client shown: once per kind of mark */
	for (k = XRL_BUSY_MARK_PROVEN; k > XRL_BUSY_MARK_NONE; k--) {
		for (i = 0; i < st->nshown && st->rows[i].busy != k; i++)
			;
		if (i < st->nshown && xrl_frame_room(f) > 0)
			xrl_frame_wrap(f, XRL_FRAME_PLAIN, "%s: %s", xrl_busy_mark_text(k),
				       xrl_busy_advice(k));
	}
}

int xrl_top_watch(struct xrl_ctx *ctx, double interval, __u64 count)
{
	static struct top_newsrc ns;   /* rule tables: too big for the stack */
	struct top_state st = { .interval = interval, .count = count, .ns = &ns };
	struct xrl_view v = { .sample = top_sample, .draw = top_draw, .state = &st };
	int rc = xrl_watch_run(ctx, &v, "top", interval);

	free(st.prev);
	free(st.rows);
	free(st.memo);
	return rc;
}
