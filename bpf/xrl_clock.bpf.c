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
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define XRL_BENCH_MAX_SRCS (1 << 20)
#define XRL_BENCH_SADDR_OFF 26   /* Ethernet (14) + offset of saddr in the IPv4 header (12) */

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

/* Source addresses (network order) in visiting order; user space writes it via mmap. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XRL_BENCH_MAX_SRCS);
	__type(key, __u32);
	__type(value, __u32);
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

SEC("xdp")
int xrl_srcwalk(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 pos = xrl_bench_pos, *src;

	if (data + XRL_BENCH_SADDR_OFF + 4 > data_end)
		return XDP_ABORTED;
	src = bpf_map_lookup_elem(&xrl_bench_srcs, &pos);
	if (!src)
		return XDP_ABORTED;
	*(__u32 *)(data + XRL_BENCH_SADDR_OFF) = *src;
	pos++;
	xrl_bench_pos = pos < xrl_bench_nsrc ? pos : 0;
	bpf_tail_call(ctx, &xrl_bench_next, 0);
	return XDP_ABORTED;   /* empty slot */
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
