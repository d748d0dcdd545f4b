/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The window algorithms of --algo (fixed-window, sliding-window,
 * sliding-log): pure arithmetic on one 64-bit word per source, and the
 * compare-and-swap loops that update it, in plain C that compiles as BPF
 * and as host C (no BPF helper is called: the unit tests run this very
 * code). The token bucket (GCRA) is in
 * xrl_bucket.h.
 *
 * Windows are aligned to UTC multiples of their length: the data path's
 * clock is CLOCK_MONOTONIC, so the window of now_ns is
 * (now_ns + rt_off) / win_ns with rt_off = CLOCK_REALTIME - CLOCK_MONOTONIC
 * (xrl_config.rt_off_ns, written by the controller).
 *
 *   fixed window   word = window index (low 32 bits) << 32 | count
 *   sliding window word = window index (low 24 bits) << 40 | previous
 *                  window's count << 20 | this window's count; admitted iff
 *                  prev x (win - pos) / win + cur + 1 <= limit (pos: time
 *                  into the window), in integers: no rounding
 *   sliding log    word = nonce << 56 | admissions so far (h); the log is a
 *                  ring of limit slots (a separate array): slot h % limit
 *                  holds admission h - limit, the oldest that can still be
 *                  in the window, so a packet is admitted iff that slot is
 *                  at least a window old. A slot is its time (ns >> 4) << 16
 *                  | nonce << 8 | (admission number & 0xff): the nonce marks
 *                  slots of this incarnation of the source (others are
 *                  empty), the number tells a slot claimed for h (whose
 *                  word has not moved on yet: any CPU may advance it) from
 *                  the one of h - limit.
 *
 * Why the log never admits more than limit in a window: every admission
 * replaces one slot by compare-and-swap, and only a slot of its own nonce
 * at least a window old (or of another nonce: empty). Of limit + 1
 * admissions under one nonce within a window two share a slot, and each
 * write to that slot between them saw the one before it a window old: a
 * contradiction. This holds whatever word (h) each CPU went by, so the
 * only danger is two nonces live on one ring in one rule version: the
 * nonce is therefore the rule version's (xrl_log_word(version)), not a
 * random one, so racing inserts of one source (two entries, one ring) and
 * CPUs that all saw the version change share it, and a restart
 * (xrl_log_restart) leaves a word of that nonce alone. (Each of those
 * drew a nonce of its own before, making the other's slots read as empty:
 * up to a window's worth more.) Times: a slot records its time rounded up,
 * now is rounded down, a window up, so a slot reads a window old only
 * once it really is (admission up to 31 ns late, never early).
 */
#ifndef XRL_ALGO_H
#define XRL_ALGO_H

#include "xrl_common.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define XRL_ALGO_TRIES     8            /* compare-and-swap attempts before giving up (-1) */
#define XRL_SW_MAX         ((1u << 20) - 1)   /* sliding window: largest limit per window */
#define XRL_FW_MAX         0xffffffffu  /* fixed window: largest limit per window */
#define XRL_LOG_SHIFT      4            /* sliding-log time unit: 16 ns */
#define XRL_LOG_H_MASK     ((1ull << 56) - 1)
#define XRL_LOG_TS_BITS    48           /* 2^48 x 16 ns: 52 days before a slot's time wraps */
#define XRL_LOG_AHEAD      (1ull << 40) /* 2^40 x 16 ns = 4.9 h: a slot further ahead wrapped */

/* The window of now_ns (CLOCK_MONOTONIC) and the time into it, UTC-aligned. */
static __always_inline __u64 xrl_win_index(__u64 now_ns, __u64 rt_off, __u64 win_ns)
{
	return (now_ns + rt_off) / win_ns;
}

static __always_inline __u64 xrl_win_pos(__u64 now_ns, __u64 rt_off, __u64 win_ns)
{
	return (now_ns + rt_off) % win_ns;
}

/*
 * Fixed window: admit one packet in window idx (limit per window)? 1 with
 * the new word, or 0. A fresh source (its rule changed) has counted nothing.
 * others: what the rest of the fleet admitted in the window (--global; 0
 * for a local rule), added to the source's own count.
 */
static __always_inline int xrl_fw_admit(__u64 word, int fresh, __u64 idx, __u32 limit,
					__u32 others, __u64 *next)
{
	__u32 widx = (__u32)idx, sidx = (__u32)(word >> 32);
	__u64 cur = 0;

	if (!fresh && (__s32)(widx - sidx) <= 0) {
		/*
		 * This window, or a packet whose clock reading is behind the
		 * word's window (another CPU read a later clock and moved the
		 * word on): it counts in the word's window, never resets it.
		 */
		widx = sidx;
		cur = (__u32)word;
	}
	if (others >= limit || cur >= limit - others)
		return 0;
	*next = ((__u64)widx << 32) | (cur + 1);
	return 1;
}

/* A sliding-window word's fields as of window idx: counts of this window and the one before. */
static __always_inline void xrl_sw_counts(__u64 word, int fresh, __u64 idx, __u64 *prev,
					  __u64 *cur)
{
	__u32 d = ((__u32)idx - (__u32)(word >> 40)) & 0xffffffu;

	*prev = 0;
	*cur = 0;
	if (fresh || (d > 1 && d < 0x800000u))
		return;
	if (d >= 0x800000u)   /* behind the word's window (see xrl_fw_admit): counts in it */
		d = 0;
	if (d == 1) {
		*prev = word & XRL_SW_MAX;
		return;
	}
	*prev = (word >> 20) & XRL_SW_MAX;
	*cur = word & XRL_SW_MAX;
}

/*
 * Sliding window: admit one packet at pos ns into window idx (win_ns
 * long)? prev x (win - pos) + (cur + 1) x win <= limit x win: below 2^63
 * for limits under 2^20 and windows up to an hour (2^42 ns). The fleet's
 * other counts (--global: oc this window, op the one before) add to the
 * source's own, capped at the limit.
 */
static __always_inline int xrl_sw_admit(__u64 word, int fresh, __u64 idx, __u64 pos,
					__u64 win_ns, __u32 limit, __u32 oc, __u32 op,
					__u64 *next)
{
	__u64 prev, cur, ec, ep;
	__u32 d = ((__u32)idx - (__u32)(word >> 40)) & 0xffffffu;

	if (!fresh && d >= 0x800000u) {
		/* behind the word's window: decided in it, at its start (the strictest point) */
		idx = word >> 40;
		pos = 0;
	}
	xrl_sw_counts(word, fresh, idx, &prev, &cur);
	ec = cur + (oc < limit ? oc : limit);
	ep = prev + (op < limit ? op : limit);
	if (ec >= limit)
		return 0;
	if (ep > limit)
		ep = limit;   /* both at most 2^20: no product overflows */
	if (ep * (win_ns - pos) + (ec + 1) * win_ns > (__u64)limit * win_ns)
		return 0;
	*next = (((__u64)idx & 0xffffffu) << 40) | (prev << 20) | (cur + 1);
	return 1;
}

/*
 * Admit one packet of a window algorithm (XRL_ALGO_FIXED_WINDOW or
 * XRL_ALGO_SLIDING_WINDOW) at now_ns against the word at wp; read-only.
 * others: the rest of the fleet's counts for a global rule, the previous
 * window's << 32 | this window's (xrl_win_others); 0 for a local rule.
 */
static __always_inline int xrl_win_peek(__u8 algo, __u64 word, int fresh, __u64 now_ns,
					__u64 rt_off, __u64 win_ns, __u32 limit, __u64 others,
					__u64 *next)
{
	__u64 t = now_ns + rt_off, idx = t / win_ns;   /* one division: pos from idx */

	if (algo == XRL_ALGO_FIXED_WINDOW)
		return xrl_fw_admit(word, fresh, idx, limit, (__u32)others, next);
	return xrl_sw_admit(word, fresh, idx, t - idx * win_ns, win_ns, limit, (__u32)others,
			    (__u32)(others >> 32), next);
}

/*
 * Take one packet from the window word at wp: 1 taken, 0 over the limit
 * (the word was only read), -1 lost the race XRL_ALGO_TRIES times or the
 * key word at keyp (NULL: none) is no longer key (the entry changed hands).
 */
static __always_inline int xrl_win_take(__u64 *wp, const __u64 *keyp, __u64 key, __u8 algo,
					int fresh, __u64 now_ns, __u64 rt_off, __u64 win_ns,
					__u32 limit, __u64 others)
{
	__u64 old, next;
	int i;

	for (i = 0; i < XRL_ALGO_TRIES; i++) {
		old = *(volatile __u64 *)wp;
		if (!xrl_win_peek(algo, old, fresh, now_ns, rt_off, win_ns, limit, others, &next))
			return 0;
		if (keyp && *(volatile const __u64 *)keyp != key)
			return -1;
		if (__sync_val_compare_and_swap(wp, old, next) == old)
			return 1;
	}
	return -1;
}

/*
 * The fleet's other counts as of window idx, packed for xrl_win_peek, from
 * the daemon's last answer for window widx (its this-window and
 * previous-window counts): the answer is for this window, or one window
 * old (the daemon has not answered since the boundary: its count is now
 * the previous window's), or older and moot.
 */
static __always_inline __u64 xrl_win_others(__u64 idx, __u64 widx, __u32 cur, __u32 prev)
{
	if (widx == idx)
		return ((__u64)prev << 32) | cur;
	if (widx + 1 == idx)
		return (__u64)cur << 32;
	return 0;
}

/* ---------------------------------------------------------------- sliding log */

enum xrl_log_slot_state {
	XRL_LOG_FREE = 0,   /* empty, of another incarnation, or at least a window old */
	XRL_LOG_BUSY,       /* admission h - limit is inside the window: refuse */
	XRL_LOG_HELP,       /* claimed for h already: advance the word */
};

static __always_inline __u64 xrl_log_slot(__u64 now_ns, __u64 nonce, __u64 h)
{
	/* rounded up: the slot never reads older than it is (xrl_log_state rounds now down) */
	__u64 ts = ((now_ns + (1ull << XRL_LOG_SHIFT) - 1) >> XRL_LOG_SHIFT) &
		   ((1ull << XRL_LOG_TS_BITS) - 1);

	return (ts << 16) | ((nonce & 0xff) << 8) | (h & 0xff);
}

/*
 * The word of a source's log restarted empty for rule version version: its
 * nonce (1..255) is the version's, the same on every CPU, and differs
 * between consecutive versions.
 */
static __always_inline __u64 xrl_log_word(__u32 version)
{
	return (__u64)(version % 255 + 1) << 56;
}

/*
 * Restart the log word at wp as word (xrl_log_word) for a source whose
 * entry carries an older rule version: unless it already has word's nonce
 * (another CPU restarted it, and may have admitted under it since: moving
 * its h back would be harmless, see above, but is needless). 0 done, -1
 * lost the race XRL_ALGO_TRIES times (the word still of another nonce).
 */
static __always_inline int xrl_log_restart(__u64 *wp, __u64 word)
{
	__u64 w;
	int i;

	for (i = 0; i < XRL_ALGO_TRIES; i++) {
		w = *(volatile __u64 *)wp;
		if ((w >> 56) == (word >> 56))
			return 0;
		if (__sync_val_compare_and_swap(wp, w, word) == w)
			return 0;
	}
	return -1;
}

/*
 * What slot s says for admission h of the incarnation nonce at now_ns. A
 * slot time ahead of now (another CPU read a later clock) is inside the
 * window: never admitted early. Ahead by XRL_LOG_AHEAD or more (hours; a
 * CPU's packet takes microseconds, a window at most an hour) it is no
 * other CPU's clock but a slot over 2^47 units (26 days) old read through
 * the 48-bit wrap: free (it was refused until the time wrapped, 52 days).
 */
static __always_inline int xrl_log_state(__u64 s, __u64 nonce, __u64 h, __u64 now_ns,
					 __u64 win_ns)
{
	__u64 now_u = (now_ns >> XRL_LOG_SHIFT) & ((1ull << XRL_LOG_TS_BITS) - 1);
	__s64 age, win_u = (__s64)((win_ns + (1ull << XRL_LOG_SHIFT) - 1) >> XRL_LOG_SHIFT);

	if (!s || ((s >> 8) & 0xff) != (nonce & 0xff))
		return XRL_LOG_FREE;
	if ((s & 0xff) == (h & 0xff))
		return XRL_LOG_HELP;
	/* 48-bit signed difference */
	age = (__s64)((now_u - (s >> 16)) << (64 - XRL_LOG_TS_BITS)) >> (64 - XRL_LOG_TS_BITS);
	if (age < win_u && age > -(__s64)XRL_LOG_AHEAD)
		return XRL_LOG_BUSY;
	return XRL_LOG_FREE;
}

/*
 * Take one packet from a sliding log: word at wp, ring of XRL_LOG_MAX
 * slots (limit <= XRL_LOG_MAX used). 1 taken, 0 over the limit, -1 lost
 * the race XRL_ALGO_TRIES times or the entry at keyp changed hands. The
 * slot is claimed by compare-and-swap, then the word advanced (by this
 * CPU or any that sees the claim), so two CPUs never take one slot.
 *
 * others (--global): the other hosts' admissions still inside the window
 * (xrl_fleet_floor's log counts); 0 for a local rule. The packet is then
 * admitted iff fewer than limit - others of this host's own are inside
 * it: admission h - (limit - others), in slot (h + others) mod limit, is
 * a window old too. That only refuses more: the argument above (never
 * more than limit of this host's own) is untouched.
 */
static __always_inline int xrl_log_take(__u64 *wp, __u64 *ring, const __u64 *keyp, __u64 key,
					__u32 limit, __u32 others, __u64 now_ns, __u64 win_ns)
{
	__u64 w, s, h, nonce;
	__u32 idx;
	int i, st;

	if (!limit || limit > XRL_LOG_MAX || others >= limit)
		return 0;
	for (i = 0; i < XRL_ALGO_TRIES; i++) {
		w = *(volatile __u64 *)wp;
		h = w & XRL_LOG_H_MASK;
		nonce = w >> 56;
		idx = (__u32)(h % limit) & (XRL_LOG_MAX - 1);
		s = *(volatile __u64 *)&ring[idx];
		st = xrl_log_state(s, nonce, h, now_ns, win_ns);
		if (st == XRL_LOG_BUSY)
			return 0;
		if (others && st == XRL_LOG_FREE) {
			__u32 o = (__u32)((h + others) % limit) & (XRL_LOG_MAX - 1);

			if (xrl_log_state(*(volatile __u64 *)&ring[o], nonce, h, now_ns, win_ns) !=
			    XRL_LOG_FREE)
				return 0;
		}
		if (keyp && *(volatile const __u64 *)keyp != key)
			return -1;
		if (st == XRL_LOG_HELP) {
			__sync_val_compare_and_swap(wp, w, w + 1);
			continue;
		}
		if (__sync_val_compare_and_swap(&ring[idx], s, xrl_log_slot(now_ns, nonce, h)) != s)
			continue;
		__sync_val_compare_and_swap(wp, w, w + 1);
		return 1;
	}
	return -1;
}

/*
 * The other hosts' admissions still in a global sliding log's window at
 * now_ns, from the daemon's last answer: others until the oldest of them
 * leaves the window (leave_ns), after from then on.
 */
static __always_inline __u32 xrl_log_others(__u64 now_ns, __u64 leave_ns, __u32 others,
					     __u32 after)
{
	return now_ns < leave_ns ? others : after;
}

#endif /* XRL_ALGO_H */
