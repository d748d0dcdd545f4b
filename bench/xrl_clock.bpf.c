// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Bench helpers run through BPF_PROG_TEST_RUN by build/xrl_bench.
 *
 * xrl_clk_*: what one clock read costs. Each program reads one clock and
 * drops the packet (the comparison keeps the call and its result live), so
 * its time minus bare XDP_DROP (xrl_drop.bpf.c) is the cost of the helper.
 *
 * xrl_srcwalk: BPF_PROG_TEST_RUN repeats one packet, so to make the xrl
 * program see many sources in one run this program writes the next address
 * of xrl_bench_srcs into the IPv4 source field of the (untagged) frame and
 * tail-calls the program in xrl_bench_next[0] (the xrl program, or the
 * bare drop program to measure this wrapper's own cost). The address list
 * is filled from user space through mmap; its order is the visiting order.
 * xrl_srcwalk6 does the same to the last 32 bits of an IPv6 source.
 *
 * xrl_probe_*: tail-call targets that do only a per-source state access,
 * with a key of a rule and an IPv4 source and a 40-byte state, in tables of
 * xrl's default size: an LRU hash, a preallocated hash, and a direct-mapped
 * array (one random access, the floor for any per-source table); xrl's own
 * set table (xrl_table.h) is measured by the xrl program itself. First packet of
 * a key inserts it (XDP_PASS), later ones find it (XDP_DROP). Run through
 * xrl_srcwalk with many sources, they show how much of the many-source
 * cost is the table's memory access rather than the xrl logic around it;
 * the *_clk variants read bpf_ktime_get_ns() first, as xrl does, to show
 * what the clock read does to a lookup that misses the cache.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xrl_common.h"
#include "xrl_table.h"

/* The probes' key and per-source state: a hashed table's entry of a bucket's size. */
struct xrl_probe_key {
	__u32 rule_id;
	__u32 addr;       /* network order */
};

struct xrl_probe_state {
	__u64 tat;        /* GCRA theoretical arrival time: nonzero once the key is inserted */
	__u64 tat_bytes;
	__u64 last_ns;
	__u64 passed;
	__u32 version;
	__u32 _pad;
};

#define XRL_BENCH_MAX_SRCS (1 << 20)
#define XRL_BENCH_SADDR_OFF 26   /* Ethernet (14) + offset of saddr in the IPv4 header (12) */
#define XRL_BENCH_SADDR6_OFF 34  /* Ethernet (14) + saddr (8) in the IPv6 header + 12: its last word */

SEC("xdp")
int xrl_clk_ktime(struct xdp_md *ctx)
{
	(void)ctx;
	return bpf_ktime_get_ns() ? XDP_DROP : XDP_PASS;
}

SEC("xdp")
int xrl_clk_coarse(struct xdp_md *ctx)
{
	(void)ctx;
	return bpf_ktime_get_coarse_ns() ? XDP_DROP : XDP_PASS;
}

SEC("xdp")
int xrl_clk_boot(struct xdp_md *ctx)
{
	(void)ctx;
	return bpf_ktime_get_boot_ns() ? XDP_DROP : XDP_PASS;
}

SEC("xdp")
int xrl_clk_jiffies(struct xdp_md *ctx)
{
	(void)ctx;
	return bpf_jiffies64() ? XDP_DROP : XDP_PASS;
}

/*
 * Source addresses (network order, in the low 32 bits) in visiting order;
 * user space writes it via mmap. 64-bit values because array elements are
 * 8-byte aligned: the mmap view is then a plain __u64 array.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XRL_BENCH_MAX_SRCS);
	__type(key, __u32);
	__type(value, __u64);
} xrl_bench_srcs SEC(".maps");

/* Slot 0: the program xrl_srcwalk hands the rewritten packet to. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xrl_bench_next SEC(".maps");

__u32 xrl_bench_nsrc = 1;   /* addresses in use, 1..XRL_BENCH_MAX_SRCS */
__u32 xrl_bench_pos;        /* next one */

/* The next source address into the frame at off, then on to the program under test. */
static __always_inline int xrl_srcwalk_at(struct xdp_md *ctx, __u32 off)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 pos = xrl_bench_pos;
	__u64 *src;

	if (data + off + 4 > data_end)
		return XDP_ABORTED;
	src = bpf_map_lookup_elem(&xrl_bench_srcs, &pos);
	if (!src)
		return XDP_ABORTED;
	*(__u32 *)(data + off) = (__u32)*src;
	pos++;
	xrl_bench_pos = pos < xrl_bench_nsrc ? pos : 0;
	bpf_tail_call(ctx, &xrl_bench_next, 0);
	return XDP_ABORTED;   /* empty slot */
}

SEC("xdp")
int xrl_srcwalk(struct xdp_md *ctx)
{
	return xrl_srcwalk_at(ctx, XRL_BENCH_SADDR_OFF);
}

/* The same for an IPv6 frame: the address goes into the source's last 32 bits. */
SEC("xdp")
int xrl_srcwalk6(struct xdp_md *ctx)
{
	return xrl_srcwalk_at(ctx, XRL_BENCH_SADDR6_OFF);
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XRL_DEFAULT_SOURCES);
	__type(key, struct xrl_probe_key);
	__type(value, struct xrl_probe_state);
} xrl_probe_lru_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XRL_DEFAULT_SOURCES);
	__type(key, struct xrl_probe_key);
	__type(value, struct xrl_probe_state);
} xrl_probe_hash_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XRL_DEFAULT_SOURCES);
	__type(key, __u32);
	__type(value, struct xrl_probe_state);
} xrl_probe_array_map SEC(".maps");

/* The bucket key of an IPv4 source as xrl builds it (rule 0, --per 32). */
static __always_inline int xrl_probe_read_key(struct xdp_md *ctx, struct xrl_probe_key *k)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + XRL_BENCH_SADDR_OFF + 4 > data_end)
		return -1;
	k->rule_id = 0;
	k->addr = *(__u32 *)(data + XRL_BENCH_SADDR_OFF);
	return 0;
}

static __always_inline int xrl_probe_hashed(struct xdp_md *ctx, void *map)
{
	struct xrl_probe_key k;
	struct xrl_probe_state *b, nb = { .tat = 1 };

	if (xrl_probe_read_key(ctx, &k))
		return XDP_ABORTED;
	b = bpf_map_lookup_elem(map, &k);
	if (b)
		return b->tat ? XDP_DROP : XDP_PASS;
	if (bpf_map_update_elem(map, &k, &nb, BPF_NOEXIST))
		return XDP_ABORTED;
	return XDP_PASS;
}

SEC("xdp")
int xrl_probe_lru(struct xdp_md *ctx)
{
	return xrl_probe_hashed(ctx, &xrl_probe_lru_map);
}

/* The same after reading the exact clock first, as xrl's exact-clock rules do. */
SEC("xdp")
int xrl_probe_lru_clk(struct xdp_md *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	int v = xrl_probe_hashed(ctx, &xrl_probe_lru_map);

	return now ? v : XDP_ABORTED;
}

SEC("xdp")
int xrl_probe_hash(struct xdp_md *ctx)
{
	return xrl_probe_hashed(ctx, &xrl_probe_hash_map);
}

/* Slot = host-order address times an odd constant, low 20 bits: a bijection on 2^20 addresses. */
SEC("xdp")
int xrl_probe_array(struct xdp_md *ctx)
{
	struct xrl_probe_key k;
	struct xrl_probe_state *b;
	__u32 slot;

	if (xrl_probe_read_key(ctx, &k))
		return XDP_ABORTED;
	slot = (__builtin_bswap32(k.addr) * 2654435761u) & (XRL_DEFAULT_SOURCES - 1);
	b = bpf_map_lookup_elem(&xrl_probe_array_map, &slot);
	if (!b)
		return XDP_ABORTED;
	if (b->tat)
		return XDP_DROP;
	b->tat = 1;
	return XDP_PASS;
}

SEC("xdp")
int xrl_probe_array_clk(struct xdp_md *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	int v = xrl_probe_array(ctx);

	return now ? v : XDP_ABORTED;
}

/*
 * The xrl bucket table's shape alone (xrl_table.h): sets of XRL_WAYS4
 * 40-byte entries, the set found by the same hash, its ways scanned
 * branch-free for the key word; first packet of a key takes the set's
 * first free way (XDP_PASS), later ones find it (XDP_DROP), a key whose
 * set is full drops.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XRL_DEFAULT_SOURCES / XRL_WAYS4);
	__type(key, __u32);
	__type(value, struct xrl_set4);
} xrl_probe_set_map SEC(".maps");

SEC("xdp")
int xrl_probe_set(struct xdp_md *ctx)
{
	struct xrl_probe_key k;
	struct xrl_set4 *set;
	__u64 want, hit = 0;
	__u32 idx, i;

	if (xrl_probe_read_key(ctx, &k))
		return XDP_ABORTED;
	want = xrl_key_word(0, k.addr);
	/*
	 * seed 0 (the probes have no instance config): the set hash's cost less
	 * the seed's load and two ALU ops, its multiplier a constant
	 */
	idx = xrl_set_index(xrl_table_hash4(0, 0, k.addr), XRL_DEFAULT_SOURCES / XRL_WAYS4);
	set = bpf_map_lookup_elem(&xrl_probe_set_map, &idx);
	if (!set)
		return XDP_ABORTED;
	hit = xrl_set4_hit(set, want);
	if (hit) {
		i = (__u32)(hit - 1);
		if (i >= XRL_WAYS4)
			i = 0;
		return set->w[i].st.tat ? XDP_DROP : XDP_PASS;
	}
	for (i = 0; i < XRL_WAYS4; i++) {
		if (!set->w[i].key) {
			set->w[i].key = want;
			set->w[i].st.tat = 1;
			return XDP_PASS;
		}
	}
	return XDP_DROP;
}

/*
 * Other set shapes, beside xrl_probe_set (xrl's own: 8 ways of 40 bytes in a
 * 320-byte set), with the same keys and hash and 1,048,576 entries each:
 * which layout a random lookup among a million costs least for. A miss
 * takes the first free way (XDP_PASS), a hit reads its tat (XDP_DROP), a
 * miss in a full set drops (the bench checks no verdict of these).
 *   set128: 4 ways of 32 bytes (key, tat, tat_bytes, one word for the
 *           rest) in two lines, never across a page;
 *   set64:  one line: 2 ways (2 key words, 2 x 16 bytes of payload, 16 spare).
 */
struct xrl_probe_set128 {
	struct {
		__u64 key, tat, tat_bytes, last;
	} w[4];
};
struct xrl_probe_set64 {
	__u64 key[2];
	__u64 pay[2][2];
	__u64 spare[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XRL_DEFAULT_SOURCES / 4);
	__type(key, __u32);
	__type(value, struct xrl_probe_set128);
} xrl_probe_set128_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XRL_DEFAULT_SOURCES / 2);
	__type(key, __u32);
	__type(value, struct xrl_probe_set64);
} xrl_probe_set64_map SEC(".maps");

/* The probe's key word and set hash, as xrl_probe_set has them. */
static __always_inline int xrl_probe_want(struct xdp_md *ctx, __u64 *want, __u32 *h)
{
	struct xrl_probe_key k;

	if (xrl_probe_read_key(ctx, &k))
		return -1;
	*want = xrl_key_word(0, k.addr);
	*h = xrl_table_hash4(0, 0, k.addr);   /* seed 0, as in xrl_probe_set */
	return 0;
}

SEC("xdp")
int xrl_probe_set128(struct xdp_md *ctx)
{
	struct xrl_probe_set128 *set;
	__u64 want, hit = 0;
	__u32 h, idx, i;

	if (xrl_probe_want(ctx, &want, &h))
		return XDP_ABORTED;
	idx = xrl_set_index(h, XRL_DEFAULT_SOURCES / 4);
	set = bpf_map_lookup_elem(&xrl_probe_set128_map, &idx);
	if (!set)
		return XDP_ABORTED;
	for (i = 0; i < 4; i++)
		hit |= xrl_way_hit(set->w[i].key, want, i);
	if (hit) {
		i = (__u32)(hit - 1) & 3;
		return set->w[i].tat ? XDP_DROP : XDP_PASS;
	}
	for (i = 0; i < 4; i++) {
		if (!set->w[i].key) {
			set->w[i].key = want;
			set->w[i].tat = 1;
			return XDP_PASS;
		}
	}
	return XDP_DROP;
}

SEC("xdp")
int xrl_probe_set64(struct xdp_md *ctx)
{
	struct xrl_probe_set64 *set;
	__u64 want, hit = 0;
	__u32 h, idx, i;

	if (xrl_probe_want(ctx, &want, &h))
		return XDP_ABORTED;
	idx = xrl_set_index(h, XRL_DEFAULT_SOURCES / 2);
	set = bpf_map_lookup_elem(&xrl_probe_set64_map, &idx);
	if (!set)
		return XDP_ABORTED;
	for (i = 0; i < 2; i++)
		hit |= xrl_way_hit(set->key[i], want, i);
	if (hit) {
		i = (__u32)(hit - 1) & 1;
		return set->pay[i][0] ? XDP_DROP : XDP_PASS;
	}
	for (i = 0; i < 2; i++) {
		if (!set->key[i]) {
			set->key[i] = want;
			set->pay[i][0] = 1;
			return XDP_PASS;
		}
	}
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
