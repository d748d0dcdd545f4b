/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Taking tokens from a GCRA word shared by CPUs: the data path's per-packet
 * take (xrl_peek, xrl_take, xrl_refund), pure functions over bpf/xrl_bucket.h
 * that compile as BPF and as host C, so the unit tests and the request layer
 * (user/http) call the very code the XDP program runs.
 */
#ifndef XRL_TAKE_H
#define XRL_TAKE_H

#include "xrl_common.h"
#include "xrl_bucket.h"

/* compare-and-swap attempts before a take gives up (-1) */
#define XRL_CAS_TRIES 8

/*
 * Would cost tokens be available in the GCRA word holding tat? Read-only;
 * *next is the word's value after taking them. A fresh bucket (its rule
 * changed) counts as full. For a global rule, floor_ns is the fleet's TAT
 * (0: none): tokens other hosts spent are spent here too.
 */
static __always_inline int xrl_peek(__u64 tat, const struct xrl_gcra *g, __u64 last_ns,
				    __u64 now_ns, __u64 cost, int fresh, __u64 floor_ns,
				    __u64 *next)
{
	__u64 now_u = xrl_to_units(now_ns, g->shift);
	__u64 base = fresh ? now_u : xrl_gcra_base(tat, last_ns, now_ns, now_u, g->full_ns);

	base = xrl_gcra_floor(base, now_ns, floor_ns, g->shift);
	return xrl_gcra_admit(base, now_u, g->interval, g->span, cost, next);
}

/*
 * Take cost tokens from one GCRA word of the entry whose key word is at
 * keyp. 1: taken; 0: over limit (the word was only read); -1: lost the
 * compare-and-swap race XRL_CAS_TRIES times, or the key word differs
 * from key (another CPU replaced the entry, or stored a new rule version): a
 * replaced entry's TAT is never written for the source it was looked up for
 * (an insert claims the key word before it writes the TAT, so a CAS against
 * the old TAT fails).
 */
static __always_inline int xrl_take(__u64 *tatp, const __u64 *keyp, __u64 key,
				    const struct xrl_gcra *g, __u64 last_ns,
				    __u64 now_ns, __u64 cost, int fresh, __u64 floor_ns)
{
	__u64 old, next;
	int i;

	for (i = 0; i < XRL_CAS_TRIES; i++) {
		old = *(volatile __u64 *)tatp;
		if (!xrl_peek(old, g, last_ns, now_ns, cost, fresh, floor_ns, &next))
			return 0;
		if (*(volatile const __u64 *)keyp != key)
			return -1;
		if (__sync_val_compare_and_swap(tatp, old, next) == old)
			return 1;
	}
	return -1;
}

/* Give back a packet token (the byte CAS was lost), unless the entry changed hands. */
static __always_inline void xrl_refund(__u64 *tatp, const __u64 *keyp, __u64 key, __u64 interval)
{
	__u64 old;
	int i;

	for (i = 0; i < XRL_CAS_TRIES; i++) {
		old = *(volatile __u64 *)tatp;
		if (*(volatile const __u64 *)keyp != key)
			return;
		if (__sync_val_compare_and_swap(tatp, old, old - interval) == old)
			return;
	}
}

#endif /* XRL_TAKE_H */
