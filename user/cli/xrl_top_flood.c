// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* top under a flood of new sources: its line per rule, and the blocked sources (xrl_top_flood.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_rule.h"
#include "xrl_top_flood.h"

static const char *period_unit(__u32 period)
{
	return period == 3600 ? "h" : period == 60 ? "m" : "s";
}

void xrl_flood_line(const struct xrl_rule_def *d, const struct xrl_newsrc_rate *r,
		    enum xrl_newsrc_alert al, const struct xrl_flood_tally *t, const char *rule,
		    char *buf, size_t len)
{
	char a[32], c[32], x[32], bu[32], once[160] = "", total[128];

	xrl_fmt_count(r->arrivals, a, sizeof(a));
	xrl_fmt_count(r->created, c, sizeof(c));
	xrl_fmt_count(r->refused, x, sizeof(x));
	if (t && t->drops)
		snprintf(once, sizeof(once),
			 "; %.0f%% of its drops are from sources dropped once (spoofed: listing or blocking them does not help)",
			 100.0 * (double)t->once_drops / (double)t->drops);
	/* --total: said when the rule has it, suggested when it has not */
	if (d->flags & XRL_F_TOTAL)
		snprintf(total, sizeof(total), "its --total %llu/%s caps what the whole rule passes",
			 (unsigned long long)d->total_rate, period_unit(d->total_period));
	else
		snprintf(total, sizeof(total), "--total RATE would cap what the whole rule passes");
	if (al == XRL_NEWSRC_OVER_BUDGET) {
		xrl_newsrc_budget_text(d, bu, sizeof(bu));
		snprintf(buf, len,
				     "rule %s: new sources arrive at %s/s, %.0fx its --new-sources budget of %s: %s/s refused, %s/s given a bucket%s. Answered by --new-sources: sources with a bucket keep their own limits; %s.",
				     rule, a, r->budget > 0 ? r->arrivals / r->budget : 0.0, bu, x, c,
				     once, total);
	} else {
		snprintf(buf, len,
				     "rule %s: a spoofed-source flood passes per-source limits: %s new sources/s given a bucket, each passing up to its burst of %u%s. Answer: --new-sources RATE bounds the sources given a bucket%s%s.",
				     rule, c, d->burst, once, d->flags & XRL_F_TOTAL ? "; " : ", or ",
				     total);
	}
}

int xrl_flood_blocked(const struct xrl_maps *m, const struct xrl_rule_def *defs, const __u32 *ids,
		      int nd, __u64 now, struct xrl_bucket_key *keys, __u64 *left, int max)
{
	static struct xrl_bucket_key k[XRL_BLOCKED_SOURCES];
	static struct xrl_block v[XRL_BLOCKED_SOURCES];
	int n = 0, i, j, out = 0;

	for (j = 0; j < nd && !(defs[j].policy & XRL_P_BLOCK); j++)
		;
	if (j == nd)
		return 0;   /* no --block rule: nothing to read */
	n = xrl_map_read_all(m->blocked, k, v, sizeof(k[0]), sizeof(v[0]), XRL_BLOCKED_SOURCES);
	if (n < 0)
		return n;
	for (i = 0; i < n && out < max; i++) {
		for (j = 0; j < nd && ids[j] != k[i].rule_id; j++)
			;
		/* ended, released, or of a rule (version) out of force: not blocked */
		if (j == nd || (__s64)(v[i].until_ns - now) <= 0 || v[i].version != defs[j].version)
			continue;
		keys[out] = k[i];
		left[out] = v[i].until_ns - now;
		out++;
	}
	return out;
}
