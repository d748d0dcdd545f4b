/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The bucket table's pure parts (layout in xrl_common.h): which set a source
 * lives in, its key word, and which way an insert replaces. They compile as
 * BPF and as host C: the controller finds a source's entry with the same
 * functions the data path uses, and the unit tests check the policy itself.
 */
#ifndef XRL_TABLE_H
#define XRL_TABLE_H

#include "xrl_common.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

_Static_assert(sizeof(struct xrl_set4) % 64 == 0, "an IPv4 set is whole cache lines");
_Static_assert(sizeof(struct xrl_set6) == 256, "an IPv6 set is four cache lines");
_Static_assert(XRL_MAX_RULES <= (1 << (XRL_KEY_VER_SHIFT - XRL_KEY_RULE_SHIFT)),
	       "rule ids fit the key word");

/* murmur3's finalizer: every input bit reaches every output bit. */
static __always_inline __u32 xrl_fmix32(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/*
 * Set hash of a bucket: rule id and masked IPv4 address (network order), or
 * an IPv6 address's hash, keyed by the instance's secret seed
 * (xrl_config.hash_seed). Two multiplies, on the path of every limited
 * packet: x = (rule id, address) as one 64-bit word times a secret odd
 * multiplier (the seed XOR a fixed odd constant), then the product's high
 * half folded into its low half and a fixed multiply, whose top 32 bits
 * are the hash. The keyed multiply makes the difference of two sources'
 * products, a x (x - x'), a random odd multiple of the inputs' lowest
 * differing bit whatever the sources chosen: unlike a seed XORed into the
 * input of a fixed multiply, no choice of sources cancels it. The fold and
 * the second multiply are not linear in it, so a pair found to collide
 * (by probing) is not an offset that makes every other source collide
 * with its neighbour. Seed 0 is the unkeyed function (tests only).
 */
#define XRL_HASH_MUL1 0x9e3779b97f4a7c15ull
#define XRL_HASH_MUL2 0xbf58476d1ce4e5b9ull

static __always_inline __u32 xrl_table_hash4(__u64 seed, __u32 rule_id, __u32 addr)
{
	__u64 y = (((__u64)rule_id << 32) | addr) * ((seed ^ XRL_HASH_MUL1) | 1);

	y ^= y >> 32;
	y *= XRL_HASH_MUL2;
	return (__u32)(y >> 32);
}

/*
 * The 32-bit address hash of an IPv6 bucket (its key word's low half),
 * started from the seed's high half: two addresses with one address hash
 * share a set whatever the set hash, and unkeyed this chain of finalizers
 * is invertible (from any three words and a wanted hash the fourth word
 * follows), so anyone could make addresses with a victim's hash.
 */
static __always_inline __u32 xrl_addr_hash6(__u64 seed, const __u32 *a)
{
	__u32 h = xrl_fmix32(a[0] ^ 0x7f4a7c15u ^ (__u32)(seed >> 32));

	h = xrl_fmix32(h ^ a[1]);
	h = xrl_fmix32(h ^ a[2]);
	return xrl_fmix32(h ^ a[3]);
}

/* Set hash of an IPv6 bucket, from its address hash. */
static __always_inline __u32 xrl_table_hash6(__u64 seed, __u32 rule_id, __u32 addr_hash)
{
	return xrl_table_hash4(seed, rule_id, addr_hash);
}

/*
 * A source's key word, version bits clear, and its set hash in *h under
 * the instance's seed, for either family: the key word's low 32 bits are
 * the IPv4 address, or the IPv6 address's hash (whose address the entry
 * holds as well), and the set hash is the same function of (rule id,
 * those 32 bits) for both.
 */
static __always_inline __u64 xrl_table_key(const struct xrl_bucket_key *k, __u64 seed, __u32 *h)
{
	__u32 low = k->family == 4 ? k->addr[0] : xrl_addr_hash6(seed, k->addr);

	*h = xrl_table_hash4(seed, k->rule_id, low);
	return XRL_KEY_VALID | ((__u64)k->rule_id << XRL_KEY_RULE_SHIFT) | low;
}

/* Set index of a hash in a table of nsets sets: multiply-shift, no power of 2 needed. */
static __always_inline __u32 xrl_set_index(__u32 h, __u32 nsets)
{
	return (__u32)(((__u64)h * nsets) >> 32);
}

/*
 * A source's preferred way in its set (ways a power of 2): low bits of its
 * set hash, which multiply-shift leaves out of the set index. An insert
 * takes it when it is empty (of equal ranks, the first from it on), and a
 * lookup tests it before the whole set: for a source in it, one compare
 * instead of a scan of all ways.
 */
static __always_inline __u32 xrl_pref_way(__u32 h, __u32 ways)
{
	return h & (ways - 1);
}

/* Sets of a table asked to hold max_sources entries of ways each: rounded down, at least 1. */
static __always_inline __u32 xrl_table_sets(__u64 max_sources, __u32 ways)
{
	__u64 n = max_sources / ways;

	return n ? (__u32)n : 1;
}

/* The key word of a valid entry, version bits clear (what a lookup matches). */
static __always_inline __u64 xrl_key_word(__u32 rule_id, __u32 low)
{
	return XRL_KEY_VALID | ((__u64)rule_id << XRL_KEY_RULE_SHIFT) | low;
}

/* The same with a rule version stored. */
static __always_inline __u64 xrl_key_with_version(__u64 key, __u32 version)
{
	return (key & ~XRL_KEY_VER_MASK) |
	       (((__u64)version << XRL_KEY_VER_SHIFT) & XRL_KEY_VER_MASK);
}

/* Does key word k belong to the source whose version-less key word is want? */
static __always_inline int xrl_key_match(__u64 k, __u64 want)
{
	return (k & ~XRL_KEY_VER_MASK) == want;
}

/*
 * The key word of a way an insert of the source want has claimed: busy,
 * with the source's rule and address bits (not valid: no lookup matches
 * it), so that another CPU inserting the same source sees the claim.
 */
static __always_inline __u64 xrl_key_busy(__u64 want)
{
	return (want & ~(XRL_KEY_VALID | XRL_KEY_VER_MASK)) | XRL_KEY_BUSY;
}

/*
 * 1 if d is 0, else 0, computed without a branch. A lookup tests every way
 * of a set this way: a branch on which way matched would be mispredicted
 * half the time, and each misprediction waits for the key words to arrive
 * from memory, where a branch-free scan leaves the core free to run ahead.
 * The empty asm statements keep the compiler from turning it back into a
 * comparison (BPF has no set-on-condition: that would be a branch again).
 */
static __always_inline __u64 xrl_is_zero(__u64 d)
{
	__u64 n = 0 - d, z;

	__asm__ __volatile__("" : "+r"(n));
	z = ((d | n) >> 63) ^ 1;
	__asm__ __volatile__("" : "+r"(z));
	return z;
}

/* Key word k of way i as a match for want: i + 1 if it matches, else 0 (branch-free). */
static __always_inline __u64 xrl_way_hit(__u64 k, __u64 want, __u32 i)
{
	return (0 - xrl_is_zero((k & ~XRL_KEY_VER_MASK) ^ want)) & (i + 1);
}

/* The same for an IPv6 way, whose stored address e must equal a as well. */
/*
 * The IPv4 set's ways tested for want without a branch: the matching way
 * + 1, 0 when none matches (the data path and the bench's probe alike).
 */
static __always_inline __u64 xrl_set4_hit(const struct xrl_set4 *set, __u64 want)
{
	__u64 hit = 0;
	__u32 i;

	for (i = 0; i < XRL_WAYS4; i++)
		hit |= xrl_way_hit(set->w[i].key, want, i);
	return hit;
}

static __always_inline __u64 xrl_way_hit6(__u64 k, const __u32 *e, __u64 want, const __u32 *a,
					  __u32 i)
{
	__u64 d = ((k & ~XRL_KEY_VER_MASK) ^ want) |
		  ((e[0] ^ a[0]) | (e[1] ^ a[1]) | (e[2] ^ a[2]) | (e[3] ^ a[3]));

	return (0 - xrl_is_zero(d)) & (i + 1);
}

/* Was the entry's state computed for this rule version (its low 18 bits)? */
static __always_inline int xrl_key_current(__u64 k, __u32 version)
{
	return ((k ^ ((__u64)version << XRL_KEY_VER_SHIFT)) & XRL_KEY_VER_MASK) == 0;
}

static __always_inline __u32 xrl_key_rule(__u64 k)
{
	return (__u32)(k >> XRL_KEY_RULE_SHIFT) & (XRL_MAX_RULES - 1);
}

static __always_inline int xrl_key_live(__u64 k)
{
	return (k & (XRL_KEY_VALID | XRL_KEY_BUSY)) == XRL_KEY_VALID;
}

/*
 * The seen word of an entry (xrl_bstate.seen): a coarse stamp of when it
 * was last seen, in ticks of 2^XRL_SEEN_SHIFT ns (1.05 ms) in bits 1..31,
 * and in bit 0 whether it was looked up in a tick after the one it was
 * inserted in (a source that sent again). Its insert writes the stamp with
 * bit 0 clear; a lookup writes xrl_seen_word(now) only when its tick
 * differs from the stored one, so a source far over its limit writes its
 * line at most once a tick, not once a packet (the over-limit fast path
 * leaves to the decision the packets whose tick is new). Stamps compare
 * modulo 2^31 ticks (26 days).
 */
#define XRL_SEEN_SHIFT 20

static __always_inline __u32 xrl_seen_word(__u64 now_ns)
{
	return (__u32)(now_ns >> (XRL_SEEN_SHIFT - 1)) | 1;
}

/* Is seen word w stamped with now's tick (w | 1 == xrl_seen_word(now))? Then a lookup writes nothing. */
static __always_inline int xrl_seen_now(__u32 w, __u32 now_word)
{
	return (w | 1) == now_word;
}

/*
 * Ticks since seen word w was written, as an insert at now_word reads it:
 * a stamp ahead of now by less than XRL_SEEN_AHEAD ticks (another CPU's
 * later clock reading, written while this insert ran) counts as now; one
 * further ahead was written 13 to 26 days ago (stamps wrap) and counts as
 * the oldest there is, XRL_SEEN_AGE_MAX.
 */
#define XRL_SEEN_AGE_MAX ((1u << 30) - 1)
#define XRL_SEEN_AHEAD   (1u << 16)

static __always_inline __u32 xrl_seen_age(__u32 w, __u32 now_word)
{
	__u32 d = now_word - (w | 1);   /* twice the ticks, modulo 2^32 */

	if ((__s32)d >= 0)
		return d >> 1;
	return (0 - d) >> 1 < XRL_SEEN_AHEAD ? 0 : XRL_SEEN_AGE_MAX;
}

/*
 * Replacement policy: the rank of a way as the victim of an insert at
 * now_ns, lowest first. An empty way goes first (rank 0). Then the way
 * seen least recently: its seen word's tick (a lookup is a sighting,
 * whether its packet passes or is dropped, and so is the insert), a way
 * not looked up after its insert's tick counted as seen XRL_SEEN_PROBATION
 * ticks (8.6 s) earlier than it was; of equal ticks, the one admitted
 * longest ago (last_ns, in 65.5-us steps, up to 78 hours back). A way being
 * written by another CPU's insert is never taken (XRL_RANK_NEVER).
 *
 * So a source that sent again after its first tick is replaced only when
 * every other way of its set was looked up too, each in a tick after its
 * own insert's and after the tick of the source's last sighting, and one
 * more source is inserted: sources that send once (a random-source
 * flood) replace each other, not it, unless it was silent for longer than
 * the probation; sources that send twice need 2 W - 1 packets into its set
 * between that tick and its next packet (docs/DESIGN.md, "Replacement
 * policy"). Bit 32 of a rank is the way's looked-up bit (xrl_rank_seen:
 * evicted_seen).
 */
#define XRL_RANK_NEVER (~0ull)
#define XRL_SEEN_PROBATION (1u << 13)

static __always_inline __u64 xrl_victim_rank(__u64 key, __u32 seen, __u64 last_ns, __u64 now_ns)
{
	__u64 adm;
	__u32 age;

	if (key & XRL_KEY_BUSY)
		return XRL_RANK_NEVER;
	if (!(key & XRL_KEY_VALID))
		return 0;
	adm = (__s64)(now_ns - last_ns) < 0 ? 0 : (now_ns - last_ns) >> 16;
	if (adm > 0xfffffffeull)
		adm = 0xfffffffeull;   /* the low half stays above 0: rank 0 is an empty way */
	age = xrl_seen_age(seen, xrl_seen_word(now_ns));
	if (!(seen & 1))
		age = age < XRL_SEEN_AGE_MAX - XRL_SEEN_PROBATION ? age + XRL_SEEN_PROBATION :
								    XRL_SEEN_AGE_MAX;
	return ((__u64)(XRL_SEEN_AGE_MAX - age) << 33) | ((__u64)(seen & 1) << 32) |
	       (0xffffffffull - adm);
}

/* Was the way of this (non-zero) rank looked up after its insert's tick? */
static __always_inline int xrl_rank_seen(__u64 rank)
{
	return (int)((rank >> 32) & 1);
}

#endif /* XRL_TABLE_H */
