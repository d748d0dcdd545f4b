// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stats --watch: the rule table with rates, the rules dropping the most
 * first. Rule counters are exact, so are these rates. Below the table, a
 * line per rule with --new-sources, --shadow (its would-drops) or --block
 * (the sources in its penalty box now and their packets).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xrl_box.h"
#include "xrl_newsrc.h"
#include "xrl_rule.h"
#include "xrl_watch.h"

struct rule_row {
	__u32 id;
	struct xrl_rule_def def;
	struct xrl_rule_stats s;
	double pass, drop, pass_b, drop_b, created, refused;   /* per second */
	double shadow, blocked;   /* --shadow's would-drops, --block's blocked packets: per second */
	long blocked_now;         /* --block: sources in its penalty box at this reading (-1: unread) */
};

/* A rule at the previous reading, by id. */
struct rule_prev {
	bool seen;
	struct xrl_rule_def def;
	struct xrl_rule_stats s;
};

struct stats_state {
	double interval;
	bool rates;   /* two readings exist */
	double secs;
	__u64 prev_ns;
	struct xrl_global_stats g, g_prev;
	long sources;            /* tracked: buckets of the rules in force (xrl_census_sources) */
	long live, live_prev;    /* every live entry, stale ones too: evictions are created - live */
	__u32 capacity;
	struct rule_row rows[XRL_MAX_RULES];
	int n;
	struct rule_prev prev[XRL_MAX_RULES];
};

static int by_rate(const void *a, const void *b)
{
	const struct rule_row *x = a, *y = b;

	if (x->drop != y->drop)
		return x->drop < y->drop ? 1 : -1;
	if (x->pass != y->pass)
		return x->pass < y->pass ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_total(const void *a, const void *b)
{
	const struct rule_row *x = a, *y = b;

	if (x->s.dropped != y->s.dropped)
		return x->s.dropped < y->s.dropped ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int stats_sample(struct xrl_ctx *ctx, const struct xrl_maps *m, void *arg, int rows)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static struct xrl_rule_stats rs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	static long boxed[XRL_MAX_RULES];
	struct stats_state *st = arg;
	struct xrl_global_stats g;
	int n, i, err;
	__u64 now;

	(void)ctx;
	(void)rows;   /* every rule is read: the table is sorted by what they all did */
	if ((err = xrl_read_global(m, &g)) || (err = xrl_ruleset_read(m, defs, ids, &n)))
		return err;
	if ((err = xrl_read_rule_stats_many(m, ids, n, rs)))
		return err;
	if (xrl_census_blocks(m, defs, ids, n, xrl_mono_ns(), boxed) < 0)
		for (i = 0; i < n; i++)
			boxed[i] = -1;
	for (i = 0; i < n; i++) {
		memset(&st->rows[i], 0, sizeof(st->rows[i]));
		st->rows[i].id = ids[i];
		st->rows[i].def = defs[i];
		st->rows[i].s = rs[i];
		st->rows[i].blocked_now = boxed[i];
	}
	now = xrl_mono_ns();
	st->rates = st->prev_ns != 0;
	st->secs = st->rates ? (double)(now - st->prev_ns) / 1e9 : 0;
	for (i = 0; i < n; i++) {
		struct rule_row *r = &st->rows[i];
		const struct rule_prev *p = &st->prev[r->id];
		/* a rule added (or its id reused) meanwhile started its counters at zero */
		struct xrl_rule_stats before = { 0 };

		if (p->seen && xrl_rule_same_match(&p->def, &r->def))
			before = p->s;
		r->pass = xrl_watch_rate(before.passed, r->s.passed, st->secs);
		r->drop = xrl_watch_rate(before.dropped, r->s.dropped, st->secs);
		r->pass_b = xrl_watch_rate(before.passed_bytes, r->s.passed_bytes, st->secs);
		r->drop_b = xrl_watch_rate(before.dropped_bytes, r->s.dropped_bytes, st->secs);
		r->created = xrl_watch_rate(before.created, r->s.created, st->secs);
		r->refused = xrl_watch_rate(before.new_refused, r->s.new_refused, st->secs);
		r->shadow = xrl_watch_rate(before.shadow_dropped, r->s.shadow_dropped, st->secs);
		r->blocked = xrl_watch_rate(before.blocked, r->s.blocked, st->secs);
	}
	memset(st->prev, 0, sizeof(st->prev));
	for (i = 0; i < n; i++) {
		st->prev[st->rows[i].id].seen = true;
		st->prev[st->rows[i].id].def = st->rows[i].def;
		st->prev[st->rows[i].id].s = st->rows[i].s;
	}
	qsort(st->rows, (size_t)n, sizeof(st->rows[0]), st->rates ? by_rate : by_total);
	st->n = n;
	st->g_prev = st->g;
	st->g = g;
	st->prev_ns = now;
	{
		struct xrl_source_census c;

		if (xrl_census_sources(m, defs, ids, n, NULL, &c))
			c.tracked = c.stale = -1;
		st->live_prev = st->live;
		st->sources = c.tracked;
		st->live = c.tracked < 0 ? -1 : c.tracked + c.stale;
	}
	st->capacity = xrl_bucket_capacity(m->buckets_v4);
	return 0;
}

/* "12k/s" from two readings, or "12k" (the total) on the first frame. */
static void count_cell(const struct stats_state *st, __u64 prev, __u64 cur, char *buf, size_t len)
{
	xrl_fmt_count(st->rates ? xrl_watch_rate(prev, cur, st->secs) : (double)cur, buf, len);
	if (st->rates)
		strncat(buf, "/s", len - strlen(buf) - 1);
}

static void bytes_cell(const struct stats_state *st, __u64 prev, __u64 cur, char *buf, size_t len)
{
	xrl_fmt_bytes(st->rates ? xrl_watch_rate(prev, cur, st->secs) : (double)cur, buf, len);
	if (st->rates)
		strncat(buf, "/s", len - strlen(buf) - 1);
}

/* "12/s (1.2k in all)" from two readings, "1.2k in all" on the first frame. */
static void rate_total_cell(const struct stats_state *st, double rate, __u64 total, char *buf,
			    size_t len)
{
	char r[32], t[32];

	xrl_fmt_count((double)total, t, sizeof(t));
	if (!st->rates) {
		snprintf(buf, len, "%s in all", t);
		return;
	}
	xrl_fmt_count(rate, r, sizeof(r));
	snprintf(buf, len, "%s/s (%s in all)", r, t);
}

static void stats_draw(struct xrl_ctx *ctx, void *arg, struct xrl_frame *f)
{
	const struct stats_state *st = arg;
	const struct xrl_global_stats *g = &st->g, *p = &st->g_prev;
	char left[256], clock[16], a[32], ab[32], b[32], bb[32], c[32], cb[32], ev[32];
	time_t t = time(NULL);
	struct tm tm;
	int i, rule_w = 4;
	bool bytes, totals;

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime_r(&t, &tm));
	snprintf(left, sizeof(left), "xrl stats --watch: instance %s, every %gs (q quits)",
		 ctx->instance, st->interval);
	xrl_frame_title(f, left, clock);
	count_cell(st, p->packets, g->packets, a, sizeof(a));
	bytes_cell(st, p->bytes, g->bytes, ab, sizeof(ab));
	count_cell(st, p->packets - p->dropped, g->packets - g->dropped, b, sizeof(b));
	bytes_cell(st, p->bytes - p->dropped_bytes, g->bytes - g->dropped_bytes, bb, sizeof(bb));
	count_cell(st, p->dropped, g->dropped, c, sizeof(c));
	bytes_cell(st, p->dropped_bytes, g->dropped_bytes, cb, sizeof(cb));
	xrl_frame_line(f, XRL_FRAME_PLAIN, "packets %s (%s): passed %s (%s), dropped %s (%s)%s", a, ab,
		       b, bb, c, cb, st->rates ? "" : " (totals; rates from the next refresh)");
	count_cell(st, p->malformed, g->malformed, a, sizeof(a));
	count_cell(st, p->non_ip, g->non_ip, b, sizeof(b));
	count_cell(st, p->no_rule, g->no_rule, c, sizeof(c));
	if (st->rates) {
		__u64 e0 = xrl_evicted(p, st->live_prev), e1 = xrl_evicted(g, st->live);

		/* the live count can dip between two readings: no negative evictions */
		xrl_fmt_count(e1 > e0 ? (double)(e1 - e0) / st->secs : 0, ev, sizeof(ev));
		strncat(ev, "/s", sizeof(ev) - strlen(ev) - 1);
	} else {
		xrl_fmt_count((double)xrl_evicted(g, st->live), ev, sizeof(ev));
	}
	xrl_frame_line(f, XRL_FRAME_PLAIN,
		       "malformed %s, non-IP %s, no rule %s; sources: %ld tracked (capacity %u per family), evicted %s",
		       a, b, c, st->sources, st->capacity, ev);
	xrl_frame_line(f, XRL_FRAME_PLAIN, "%s", "");
	/*
	 * RULE is the last column and is never cut: on a narrow terminal the
	 * byte rates go first, then the totals (the one-shot stats has them all)
	 */
	for (i = 0; i < st->n; i++) {
		char match[XRL_MATCH_TEXT];

		xrl_rule_format_match(&st->rows[i].def, match, sizeof(match));
		if ((int)strlen(match) > rule_w)
			rule_w = (int)strlen(match);
	}
	bytes = f->cols >= 76 + rule_w;
	totals = f->cols >= 54 + rule_w || bytes;
	xrl_frame_line(f, XRL_FRAME_BAR, "%8s %8s%s%s %8s%s%s  %-6s %s", "DROP/s", "PASS/s",
		       bytes ? "   DROP B/s" : "", bytes ? "   PASS B/s" : "", "NEW/s",
		       totals ? "  DROPPED" : "", totals ? "   PASSED" : "", "ACTION", "RULE");
	if (!st->n)
		xrl_frame_line(f, XRL_FRAME_PLAIN, "(no rules: add one with 'xrl%s%s rule add')",
			       strcmp(ctx->instance, "default") ? " --instance " : "",
			       strcmp(ctx->instance, "default") ? ctx->instance : "");
	for (i = 0; i < st->n && xrl_frame_room(f) > 0; i++) {
		const struct rule_row *r = &st->rows[i];
		char dr[32] = "-", pr[32] = "-", dbr[32] = "-", pbr[32] = "-", nw[32] = "-", dt[32], pt[32];
		char match[XRL_MATCH_TEXT];

		if (st->rates) {
			xrl_fmt_count(r->drop, dr, sizeof(dr));
			xrl_fmt_count(r->pass, pr, sizeof(pr));
			xrl_fmt_bytes(r->drop_b, dbr, sizeof(dbr));
			xrl_fmt_bytes(r->pass_b, pbr, sizeof(pbr));
			if (r->def.action == XRL_ACT_LIMIT)
				xrl_fmt_count(r->created, nw, sizeof(nw));
		}
		xrl_fmt_count((double)r->s.dropped, dt, sizeof(dt));
		xrl_fmt_count((double)r->s.passed, pt, sizeof(pt));
		xrl_rule_format_match(&r->def, match, sizeof(match));
		{
			char bc[80] = "", tc[80] = "";

			if (bytes)
				snprintf(bc, sizeof(bc), " %10s %10s", dbr, pbr);
			if (totals)
				snprintf(tc, sizeof(tc), " %8s %8s", dt, pt);
			xrl_frame_line(f, XRL_FRAME_PLAIN, "%8s %8s%s %8s%s  %-6s %s", dr, pr, bc, nw,
				       tc, xrl_action_name(r->def.action), match);
		}
	}
	/* below the table, so its rows stay one a rule: new sources refused by --new-sources */
	for (i = 0; i < st->n && xrl_frame_room(f) > 0; i++) {
		const struct rule_row *r = &st->rows[i];
		char nr[32], match[XRL_MATCH_TEXT], bu[32];

		if (!(r->def.flags & XRL_F_NEWSRC))
			continue;
		if (st->rates) {
			xrl_fmt_count(r->refused, nr, sizeof(nr));
			strncat(nr, "/s", sizeof(nr) - strlen(nr) - 1);
		} else {
			xrl_fmt_count((double)r->s.new_refused, nr, sizeof(nr));
		}
		xrl_rule_format_match(&r->def, match, sizeof(match));
		xrl_newsrc_budget_text(&r->def, bu, sizeof(bu));
		xrl_frame_wrap(f, XRL_FRAME_PLAIN, "%s: new sources refused %s (--new-sources %s)", match,
			       nr, bu);
	}
	/* --shadow: what enforcing it would drop; --block: its penalty box */
	for (i = 0; i < st->n && xrl_frame_room(f) > 0; i++) {
		const struct rule_row *r = &st->rows[i];
		char match[XRL_MATCH_TEXT], sd[80], bl[80], dur[32], now[32];

		if (r->def.action != XRL_ACT_LIMIT || !r->def.policy)
			continue;
		xrl_rule_format_match(&r->def, match, sizeof(match));
		if (r->def.policy & XRL_P_SHADOW) {
			rate_total_cell(st, r->shadow, r->s.shadow_dropped, sd, sizeof(sd));
			xrl_frame_wrap(f, XRL_FRAME_PLAIN, "%s: shadow: would-drop %s, passed", match, sd);
		}
		if ((r->def.policy & XRL_P_BLOCK) && xrl_frame_room(f) > 0) {
			xrl_duration_format(r->def.block_ns, dur, sizeof(dur));
			rate_total_cell(st, r->blocked, r->s.blocked, bl, sizeof(bl));
			if (r->blocked_now < 0)
				snprintf(now, sizeof(now), "?");
			else
				snprintf(now, sizeof(now), "%ld", r->blocked_now);
			xrl_frame_wrap(f, XRL_FRAME_PLAIN,
				       "%s: --block %s: %s source%s blocked now, their packets %s%s",
				       match, dur, now, r->blocked_now == 1 ? "" : "s", bl,
				       r->def.policy & XRL_P_SHADOW ? " (shadow: passed)" : "");
		}
	}
}

int xrl_stats_watch(struct xrl_ctx *ctx, double interval)
{
	static struct stats_state st;   /* two rule tables: too big for the stack */
	struct xrl_view v = { .sample = stats_sample, .draw = stats_draw, .state = &st };

	st.interval = interval;
	return xrl_watch_run(ctx, &v, "stats", interval);
}
