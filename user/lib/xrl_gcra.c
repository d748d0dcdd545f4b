// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* GCRA parameters, the --total batch and the clocks (xrl_gcra.h). */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "xrl_gcra.h"
#include "xrl_units.h"

int xrl_gcra_compile(__u64 tokens, __u64 period_ns, __u64 burst, struct xrl_gcra *g,
		     char *err, size_t errlen)
{
	unsigned __int128 num, den, t, span, full;
	int s;

	if (!tokens || !period_ns || !burst)
		return xrl_fail(err, errlen, "rate, period and burst must be positive");
	/* smallest shift whose interval fits in 21 bits: then it has 21 significant bits */
	for (s = -48; s <= 48; s++) {
		num = (unsigned __int128)period_ns << (s < 0 ? -s : 0);
		den = (unsigned __int128)tokens << (s > 0 ? s : 0);
		if (num / den < (1u << 21))
			break;
	}
	if (s > 48)
		return xrl_fail(err, errlen, "rate too slow to represent");
	t = (num + den / 2) / den;   /* round to nearest: rate error <= 2^-21 */
	if (t == 0)
		t = 1;
	span = t * burst;
	if (span >= ((unsigned __int128)1 << 62))
		return xrl_fail(err, errlen, "burst %llu too large for this rate", (unsigned long long)burst);
	full = s >= 0 ? span << s : (span + ((unsigned __int128)1 << -s) - 1) >> -s;
	g->interval = (__u64)t;
	g->span = (__u64)span;
	g->full_ns = full > UINT64_MAX ? UINT64_MAX : (__u64)full;
	g->shift = s;
	g->_pad = 0;
	return 0;
}

/* One jiffy (4 ms at HZ=250): the resolution of CLOCK_MONOTONIC_COARSE. */
__u64 xrl_coarse_tick_ns(void)
{
	static __u64 tick;
	struct timespec res;

	if (!tick) {
		if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0 && res.tv_nsec > 0)
			tick = (__u64)res.tv_nsec;
		else
			tick = 10000000;   /* HZ=100, the coarsest there is */
	}
	return tick;
}

__u32 xrl_total_batch(__u32 burst, long cpus)
{
	__u64 k = burst / (50 * (__u64)(cpus > 0 ? cpus : 1));

	return k < 1 ? 1 : k > XRL_TOTAL_BATCH_MAX ? XRL_TOTAL_BATCH_MAX : (__u32)k;
}

long xrl_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	return n > 0 ? n : 1;
}

/*
 * CLOCK_REALTIME - CLOCK_MONOTONIC in ns, read between two monotonic
 * readings (their midpoint), for the data path's UTC-aligned windows.
 */
__u64 xrl_rt_off_ns(void)
{
	struct timespec a, r, b;
	__u64 ma, mb, rt;

	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ma = (__u64)a.tv_sec * 1000000000ull + (__u64)a.tv_nsec;
	mb = (__u64)b.tv_sec * 1000000000ull + (__u64)b.tv_nsec;
	rt = (__u64)r.tv_sec * 1000000000ull + (__u64)r.tv_nsec;
	return rt - (ma + (mb - ma) / 2);
}

__u64 xrl_rt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

__u64 xrl_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}
