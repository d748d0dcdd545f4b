/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A rule's budget word (struct xrl_budget: the new-source budget of
 * --new-sources, the aggregate cap of --total): a GCRA word any CPU takes
 * tokens from by compare-and-swap. A pure function that compiles as BPF and
 * as host C, so the unit tests run the very code the XDP program runs.
 */
#ifndef XRL_BUDGET_H
#define XRL_BUDGET_H

#include "xrl_common.h"
#include "xrl_bucket.h"

#ifndef XRL_CAS_TRIES
#define XRL_CAS_TRIES 8   /* compare-and-swap attempts before a word counts as contended */
#endif

/*
 * Take cost tokens from a rule's budget word s (g, compiled for version).
 * 1: taken; 0: not available, or lost to other CPUs XRL_CAS_TRIES times.
 * A version the word was not computed for restarts it full (cost <=
 * burst): the CPU that claims the version (CAS) writes the word; the
 * others retry against it. A clock reading older than the word's last
 * admission is taken as that admission's time (xrl_gcra_clamp).
 */
static __always_inline int xrl_budget_take(struct xrl_budget *s, const struct xrl_gcra *g,
					   __u32 version, __u64 now_ns, __u64 cost)
{
	__u64 old, next, last, now, now_u, base;
	__u32 ver;
	int i;

	for (i = 0; i < XRL_CAS_TRIES; i++) {
		ver = *(volatile __u32 *)&s->version;
		if (ver != version) {
			if (__sync_val_compare_and_swap(&s->version, ver, version) != ver)
				continue;
			/* a full word less the tokens taken */
			next = xrl_to_units(now_ns, g->shift) + cost * g->interval;
			s->last_ns = now_ns;
			*(volatile __u64 *)&s->tat = next;
			return 1;
		}
		last = *(volatile __u64 *)&s->last_ns;
		old = *(volatile __u64 *)&s->tat;
		now = xrl_gcra_clamp(now_ns, last);
		now_u = xrl_to_units(now, g->shift);
		base = xrl_gcra_base(old, last, now, now_u, g->full_ns);
		if (!xrl_gcra_admit(base, now_u, g->interval, g->span, cost, &next))
			return 0;
		if (__sync_val_compare_and_swap(&s->tat, old, next) == old) {
			s->last_ns = now;
			return 1;
		}
	}
	return 0;
}

#endif /* XRL_BUDGET_H */
