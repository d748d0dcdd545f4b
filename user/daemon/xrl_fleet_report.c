// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What a round reports to Redis: per global (rule, source), its new admissions and demand. */
#include <math.h>
#include <stdlib.h>

#include "xrl_fleet_int.h"

__u64 xrl_fleet_round_since(__u64 elapsed)
{
	return elapsed < XRL_FLEET_TAT_LIFE_NS ? elapsed : XRL_FLEET_TAT_LIFE_NS;
}

/* The push of used entry i, if it has something to say; false if not. */
static bool choose_one(struct xrl_fleet *f, int i, __u64 t0, __u64 elapsed, int *due,
		       int due_max, struct xrl_fleet_push *p)
{
	const struct xrl_bucket_key *k = &f->used_keys[i];
	const struct xrl_fleet_rule_state *rs = &f->rules[k->rule_id];
	const struct xrl_fleet_used *u = &f->used[i];
	struct xrl_fleet_floor_entry *fe;
	__u64 pushed, seen, total, unblock;
	bool same, refresh, demand;

	fe = bsearch(k, f->fent, f->fent_n, sizeof(*f->fent), xrl_fleet_key_cmp);
	if (fe)
		fe->seen = true;
	same = fe && fe->v.born_ns == u->born_ns;
	pushed = same ? fe->v.pushed : 0;
	seen = same ? fe->v.seen : 0;
	total = u->passed + u->dropped;
	/*
	 * Report new admissions. While the floor holds this host back
	 * and is about to let it go (within two rounds), refresh it even
	 * without any, or other hosts' admissions meanwhile would be
	 * missed here until this host admitted again; a floor further
	 * ahead needs no refresh yet. Demand goes along at most once a
	 * second: it only sets shares, smoothed over a second anyway.
	 */
	unblock = fe && fe->v.until_ns > t0 ? fe->v.until_ns - (__u64)rs->span_ns : 0;
	refresh = fe && fe->v.until_ns > t0 && unblock < t0 + 2 * f->interval_ns;
	if (rs->algo != XRL_ALGO_TOKEN_BUCKET)
		/* --algo: other hosts' counts keep coming while the window answered is current or last */
		refresh = fe && fe->v.until_ns > t0 && same &&
			  xrl_rt_now_ns() / rs->win_ns <= fe->v.win_idx + 1;
	demand = total > seen && (!same || (t0 - fe->v.demand_ns >= XRL_FLEET_DEMAND_NS &&
					     (*due)++ < due_max));
	if (u->passed <= pushed && !refresh && !demand)
		return false;
	p->used = i;
	p->rule = k->rule_id;
	p->delta = u->passed > pushed ? u->passed - pushed : 0;
	p->demand = demand ? (__s64)(total - seen) : -1;
	p->demand_ns = !same ? t0 - u->born_ns : t0 - fe->v.demand_ns;
	p->share = same && fe->v.share_ppm ? fe->v.share_ppm / 1e6 : 1;
	p->live = same && fe->v.live ? fe->v.live : 1;
	p->since_ns = t0 - u->born_ns < xrl_fleet_round_since(elapsed) ?
		      t0 - u->born_ns : xrl_fleet_round_since(elapsed);
	p->old = fe;
	p->ahead = fe && p->delta && fe->v.until_ns > t0;
	p->debt_us = NAN;
	p->win_idx = p->win_cur = p->win_prev = NAN;
	p->log_others = p->log_leave_us = p->log_after = NAN;
	if (rs->algo != XRL_ALGO_TOKEN_BUCKET)
		p->demand = -1;   /* window counters carry no demand: there are no shares */
	return true;
}

/* This host's admissions per second of each global rule: an EWMA with a time constant of 1 s. */
static void update_rates(struct xrl_fleet *f, __u64 elapsed)
{
	double elapsed_s = elapsed / 1e9, alpha = 1 - exp(-elapsed_s);
	int i;

	for (i = 0; i < XRL_MAX_RULES; i++) {
		struct xrl_fleet_rule_state *rs = &f->rules[i];

		if (rs->global)
			rs->rate_ewma += alpha * (rs->round_admitted / elapsed_s - rs->rate_ewma);
	}
}

int xrl_fleet_choose(struct xrl_fleet *f, int nu, __u64 t0, __u64 elapsed, int *tracked)
{
	int i, np = 0, due = 0, due_max;

	for (i = 0; i < XRL_MAX_RULES; i++)
		f->rules[i].round_admitted = 0;
	/*
	 * Demand reports that fall due in a round, at most 1.25 times this
	 * round's share of a second's: sources that came together would
	 * otherwise report together every second, and a demand costs Redis
	 * about as much as the rest of the source's round. Those held back
	 * report in a later round, over a longer span.
	 */
	due_max = (int)((__u64)nu * 5 / 4 * elapsed / XRL_FLEET_DEMAND_NS) + XRL_FLEET_BATCH;
	/* what each global (rule, source) admitted since it was last reported */
	for (i = 0; i < nu; i++) {
		__u32 rule = f->used_keys[i].rule_id;

		if (rule >= XRL_MAX_RULES || !f->rules[rule].global)
			continue;
		(*tracked)++;
		if (!choose_one(f, i, t0, elapsed, &due, due_max, &f->pushes[np]))
			continue;
		f->rules[rule].round_admitted += f->pushes[np].delta;
		np++;
	}
	update_rates(f, elapsed);
	return np;
}
