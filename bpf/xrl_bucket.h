/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Token-bucket decision and key masking: pure functions that compile as BPF
 * and as host C, so the unit tests exercise the very code the XDP program runs.
 *
 * Per packet, for an existing bucket:
 *   now_ns = xrl_gcra_clamp(now_ns, last_ns);
 *   now_u  = xrl_to_units(now_ns, shift);
 *   base   = xrl_gcra_base(tat, last_ns, now_ns, now_u, full_ns);
 *   base   = xrl_gcra_floor(base, now_ns, floor_ns, shift);   (global rules)
 *   admitted iff xrl_gcra_admit(base, now_u, interval, span, cost, &tat');
 *   then tat = tat', last_ns = now_ns (over-limit packets write nothing).
 *
 * The bucket is GCRA (generic cell rate algorithm): one 64-bit word, the
 * theoretical arrival time (TAT), per dimension. A packet costing c tokens is
 * admitted when max(TAT, now) + c*interval - now <= span; admitting moves the
 * TAT there. This is exactly a token bucket of capacity burst = span/interval
 * refilled one token per interval, and it needs one word, so a
 * compare-and-swap updates it atomically from any CPU.
 */
#ifndef XRL_BUCKET_H
#define XRL_BUCKET_H

#include "xrl_common.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Wrap-safe "a is later than b" for unit clocks that wrap around 2^64. */
static __always_inline int xrl_after(__u64 a, __u64 b)
{
	return (__s64)(a - b) > 0;
}

/* Kernel ns to the rule's time unit of 2^shift ns. Wraps; see xrl_after. */
static __always_inline __u64 xrl_to_units(__u64 ns, __s32 shift)
{
	if (shift >= 0)
		return ns >> shift;
	return ns << (-shift);
}

/*
 * The clock to decide with: never earlier than the bucket's last admission.
 * A clock that went backwards (or an older reading racing a newer admission
 * on another CPU) would otherwise be compared across a wrapped unit clock.
 */
static __always_inline __u64 xrl_gcra_clamp(__u64 now_ns, __u64 last_ns)
{
	return (__s64)(now_ns - last_ns) < 0 ? last_ns : now_ns;
}

/*
 * The TAT to decide with. A bucket left alone for full_ns is full whatever
 * its stored TAT says; checking the ns clock here (which does not wrap) keeps
 * wrapped unit clocks of long-idle buckets from being misread. A clock that
 * went backwards (negative elapsed) never refills the bucket.
 */
static __always_inline __u64 xrl_gcra_base(__u64 tat, __u64 last_ns, __u64 now_ns,
					   __u64 now_u, __u64 full_ns)
{
	__u64 elapsed = now_ns - last_ns;

	if ((__s64)elapsed >= 0 && elapsed >= full_ns)
		return now_u;
	return xrl_after(tat, now_u) ? tat : now_u;
}

/*
 * Admit cost tokens at now_u given the effective TAT base?
 * Returns 1 and the new TAT, or 0 (over limit; nothing to write).
 */
static __always_inline int xrl_gcra_admit(__u64 base, __u64 now_u, __u64 interval,
					  __u64 span, __u64 cost, __u64 *new_tat)
{
	__u64 next = base + cost * interval;

	if ((__s64)(next - now_u) > (__s64)span)
		return 0;
	*new_tat = next;
	return 1;
}

/*
 * The TAT base of a global rule: no earlier than the fleet's TAT (floor_ns,
 * CLOCK_MONOTONIC, 0 for none), so tokens spent on other hosts count here.
 * Compared in ns first, where nothing wraps; a floor in the past is moot.
 */
static __always_inline __u64 xrl_gcra_floor(__u64 base, __u64 now_ns, __u64 floor_ns,
					    __s32 shift)
{
	__u64 floor_u;

	if (floor_ns <= now_ns)
		return base;
	floor_u = xrl_to_units(floor_ns, shift);
	return xrl_after(floor_u, base) ? floor_u : base;
}

static __always_inline __u32 xrl_bswap32(__u32 x)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap32(x);
#else
	return x;
#endif
}

/* Network-order mask of the first len bits of one 32-bit word (len clamped to 0..32). */
static __always_inline __u32 xrl_word_mask(int len)
{
	if (len <= 0)
		return 0;
	if (len >= 32)
		return 0xffffffffu;
	return xrl_bswap32(0xffffffffu << (32 - len));
}

/* IPv4 address (network order) masked to /len. */
static __always_inline __u32 xrl_mask_v4(__u32 addr, __u32 len)
{
	return addr & xrl_word_mask((int)len);
}

/* IPv6 address (four network-order words) masked to /len, in place. */
static __always_inline void xrl_mask_v6(__u32 addr[4], __u32 len)
{
	addr[0] &= xrl_word_mask((int)len);
	addr[1] &= xrl_word_mask((int)len - 32);
	addr[2] &= xrl_word_mask((int)len - 64);
	addr[3] &= xrl_word_mask((int)len - 96);
}

/* Rule-cache slot of an IPv4 source: the top bits of a multiplicative hash. */
static __always_inline __u32 xrl_rule_cache_slot(__u32 addr)
{
	return (addr * 0x9e3779b1u) >> (32 - XRL_RULE_CACHE_BITS);
}

/* The same for an IPv6 source, over its four words. */
static __always_inline __u32 xrl_rule_cache_slot6(const __u32 *a)
{
	__u32 h = (a[0] * 0x85ebca6bu) ^ a[1];

	h = (h * 0xc2b2ae35u) ^ a[2];
	h = (h * 0x85ebca6bu) ^ a[3];
	return (h * 0x9e3779b1u) >> (32 - XRL_RULE_CACHE_BITS);
}

/* Sketch slot of a bucket key: a multiplicative hash of its words. */
static __always_inline __u32 xrl_sketch_slot(const struct xrl_bucket_key *k)
{
	__u32 h = k->rule_id * 0x9e3779b1u;

	h = (h ^ k->addr[0]) * 0x85ebca6bu;
	h = (h ^ k->addr[1]) * 0xc2b2ae35u;
	h = (h ^ k->addr[2]) * 0x85ebca6bu;
	h = (h ^ k->addr[3]) * 0x9e3779b1u;
	/* the top bits: a product's high bits depend on every input bit, its middle ones do not */
	return h >> (32 - XRL_SKETCH_BITS);
}

#endif /* XRL_BUCKET_H */
