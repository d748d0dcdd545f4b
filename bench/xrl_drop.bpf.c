// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The floor for benchmarks: an XDP program that drops everything. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xrl_drop(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
