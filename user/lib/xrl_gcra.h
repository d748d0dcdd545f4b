/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The arithmetic a rule compiles to: GCRA parameters of a rate and burst,
 * the --total batch, and the clocks the data path and the controller
 * share.
 */
#ifndef XRL_GCRA_H
#define XRL_GCRA_H

#include <stddef.h>
#include "xrl_common.h"

/* GCRA parameters for tokens per period_ns with the given burst. */
int xrl_gcra_compile(__u64 tokens, __u64 period_ns, __u64 burst, struct xrl_gcra *g,
		     char *err, size_t errlen);
/* Resolution of the kernel's coarse clock, in ns. */
__u64 xrl_coarse_tick_ns(void);
/* CLOCK_MONOTONIC in ns: the clock the data path stamps with (bpf_ktime_get_ns). */
__u64 xrl_mono_ns(void);
/* CLOCK_REALTIME - CLOCK_MONOTONIC: xrl_config.rt_off_ns, where windows (--algo) align to UTC. */
__u64 xrl_rt_off_ns(void);
__u64 xrl_rt_now_ns(void);   /* CLOCK_REALTIME in ns */
/*
 * Tokens a CPU takes at once from a --total cap's shared word: burst /
 * (50 x CPUs), 1 to XRL_TOTAL_BATCH_MAX, so the tokens held back in other
 * CPUs' batches ((batch - 1) x CPUs) stay under 2 % of the burst.
 */
#define XRL_TOTAL_BATCH_MAX 64
__u32 xrl_total_batch(__u32 burst, long cpus);
long xrl_cpus(void);   /* CPUs configured: the data path may run on any */

#endif /* XRL_GCRA_H */
