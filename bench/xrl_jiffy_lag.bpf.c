// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/jiffy_lag.sh's probe: one reading of both clocks the data path
 * uses, bpf_ktime_get_ns() and bpf_jiffies64(), written over the first 16
 * bytes of the test packet (BPF_PROG_TEST_RUN returns them).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xrl_jiffy_lag(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u64 *p = data;

	if ((void *)(p + 2) > end)
		return XDP_ABORTED;
	p[0] = bpf_ktime_get_ns();
	p[1] = bpf_jiffies64();
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
