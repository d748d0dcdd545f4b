// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Reference for bench/bench_path.sh: an XDP program that passes every
 * frame, i.e. what delivering a packet through the veth's XDP path costs
 * before any decision (the frame is copied for XDP, then rebuilt as an skb). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
