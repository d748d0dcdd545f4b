// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The limit holds per source, not per CPU: one source's packets run through
 * the production object (kernel clock) from threads pinned to CPU 0 and
 * CPU 1, in turn and at the same time. The total passed must be
 * burst + rate x elapsed within 1%: the shared GCRA word strands no tokens
 * on any CPU, so there is no extra allowance to add.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "xrl_tl_assert.h"
#include "xrl_rule.h"
#include "xrl.skel.h"

#define RATE   100000.0   /* packets per second */
#define BURST  50000.0    /* 0.5 s: a thread preempted by other load loses no refill */
#define FINE_BURST 700.0  /* 7 ms: under two jiffies, so this rule reads the exact clock */
#define REPEAT 5000
/*
 * A BPF_PROG_TEST_RUN call of an XDP program that is attached nowhere costs
 * ~16 ms outside the program (the kernel's XDP dispatcher is rebuilt for it
 * and back), leaving gaps in the flood in which a bucket refills to its cap
 * and loses tokens. Attached natively to a veth of its own, the program
 * stays in the dispatcher and the flood runs without gaps.
 */
static char veth[IF_NAMESIZE];

static struct xrl_bpf *skel;
static struct xrl_maps maps;
static int prog_fd;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Pinned, and real-time when allowed: elapsed is measured around the calls,
 * so a flood thread descheduled by unrelated load between its clock read
 * and its first (or after its last) packet would skew the expectation.
 */
static int pin_to(int cpu, int rt)
{
	struct sched_param sp = { .sched_priority = 10 };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (rt)
		pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);   /* best effort */
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

struct flood {
	int cpu;
	int rt;            /* SCHED_FIFO: see pin_to */
	const char *src;
	double until;      /* stop at this time */
	/*
	 * The first packet ran inside [s0, e0], the last inside [sl, el]: the
	 * times around the first and the last call. A thread descheduled just
	 * outside a call widens these, so elapsed is bracketed, not guessed.
	 */
	double s0, e0, sl, el;
	double max_pause;  /* longest time between calls, or spent in one call */
	unsigned long sent;
};

static void *flood_thread(void *arg)
{
	struct flood *f = arg;
	struct xrl_pkt_spec s = { .family = strchr(f->src, ':') ? 6 : 4, .src = f->src };
	__u8 pkt[128];
	size_t len = xrl_pkt_build(pkt, sizeof(pkt), &s, NULL, NULL);

	if (pin_to(f->cpu, f->rt))
		return (void *)1;
	do {
		double s = now_s(), e;

		if (xrl_tl_run(prog_fd, pkt, len, REPEAT, NULL) < 0)
			return (void *)1;
		e = now_s();
		if (f->sent && s - f->el > f->max_pause)
			f->max_pause = s - f->el;
		if (e - s > f->max_pause)
			f->max_pause = e - s;
		if (!f->sent) {
			f->s0 = s;
			f->e0 = e;
		}
		f->sl = s;
		f->el = e;
		f->sent += REPEAT;
	} while (f->el < f->until);
	return NULL;
}

static __u64 passed_of(const char *rule_prefix)
{
	return tl_maps_rstats(&maps, rule_prefix).passed;
}

/* Elapsed between first and last packet lies in [lo, hi]. */
static void check_burst(const char *what, double burst, __u64 passed, double lo, double hi,
			unsigned long sent)
{
	double min = burst + RATE * lo, max = burst + RATE * hi;
	double err = 0;

	if ((double)passed < min)
		err = ((double)passed - min) / min;
	else if ((double)passed > max)
		err = ((double)passed - max) / max;
	printf("  %s: sent %lu over %.4f..%.4f s, passed %llu, expected %.0f..%.0f, error %+.3f%%\n",
	       what, sent, lo, hi, (unsigned long long)passed, min, max, err * 100);
	assert_true(sent > passed * 2);   /* the source really was over its limit */
	assert_true(err < 0.01 && err > -0.01);
}

static void check(const char *what, __u64 passed, double lo, double hi, unsigned long sent)
{
	check_burst(what, BURST, passed, lo, hi, sent);
}

static int setup(void **state)
{
	static const char *const lines[] = {
		"192.0.2.10/32 --rate 100000/s --burst 50000",
		"192.0.2.20/32 --rate 100000/s --burst 50000",
		"192.0.2.32/27 --rate 100000/s --burst 700",
		/* per-source limits far above the cap: the cap decides */
		"192.0.2.64/27 --rate 10000000/s --burst 100000000 --total 100000/s --total-burst 50000",
		"192.0.2.96/27 --rate 10000000/s --burst 100000000 --total 100000/s --total-burst 50000",
		/* --algo: the window algorithms */
		"192.0.2.128/28 --rate 50000/s --algo fixed-window",
		"192.0.2.144/28 --rate 50000/s --algo sliding-window",
		"192.0.2.160/28 --rate 64/s --algo sliding-log",
		/* the same for IPv6 sources (their entries hold the address: other ways, same word) */
		"2001:db8:c0:1::/64 --per 128 --rate 50000/s --algo fixed-window",
		"2001:db8:c0:2::/64 --per 128 --rate 50000/s --algo sliding-window",
		"2001:db8:c0:3::/64 --per 128 --rate 64/s --algo sliding-log",
		NULL,
	};
	char cmd[256];

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "test_cpus needs two CPUs\n");
		return -1;
	}
	skel = xrl_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "cannot load the XDP object (root and BPF needed)\n");
		return -1;
	}
	xrl_maps_from_obj(skel->obj, &maps);
	xrl_config_init(&maps, XRL_MALFORMED_PASS);
	prog_fd = bpf_program__fd(skel->progs.xrl_xdp);
	snprintf(veth, sizeof(veth), "xrlcpu%d", (int)getpid() % 100000);
	snprintf(cmd, sizeof(cmd), "ip link add %s type veth peer name %sp && ip link set %s up && ip link set %sp up",
		 veth, veth, veth, veth);
	if (system(cmd) || bpf_xdp_attach((int)if_nametoindex(veth), prog_fd, XDP_FLAGS_DRV_MODE, NULL)) {
		fprintf(stderr, "cannot attach the program natively to a test veth %s\n", veth);
		return -1;
	}
	return xrl_tl_maps_rules(&maps, lines) ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "ip link del %s 2>/dev/null", veth);
	if (system(cmd))
		fprintf(stderr, "could not delete %s\n", veth);
	xrl_bpf__destroy(skel);
	return 0;
}

/* When a flood ran: its first packet inside [s0, e0], its last inside [sl, el]; what it sent. */
struct span {
	double s0, e0, sl, el;
	unsigned long sent;
};

/* Eight turns of 0.125 s, CPU 0, 1, 0, ...: src0 from CPU 0, src1 from CPU 1. */
static struct span in_turn(const char *src0, const char *src1)
{
	struct span sp = { 0 };
	int round;

	for (round = 0; round < 8; round++) {
		struct flood f = { .cpu = round % 2, .rt = 1, .src = round % 2 ? src1 : src0,
				   .until = now_s() + 0.125 };
		pthread_t t;
		void *ret;

		assert_int_equal(pthread_create(&t, NULL, flood_thread, &f), 0);
		pthread_join(t, &ret);
		assert_null(ret);
		if (round == 0) {
			sp.s0 = f.s0;
			sp.e0 = f.e0;
		}
		sp.sl = f.sl;
		sp.el = f.el;
		sp.sent += f.sent;
	}
	return sp;
}

/* Both CPUs at once for secs, src from CPU 0 and src1 from CPU 1; each thread's figures in f. */
static struct span at_once(struct flood f[2], const char *src, const char *src1, int rt, double secs)
{
	double until = now_s() + secs;
	struct span sp;
	pthread_t t[2];
	void *ret;
	int i;

	f[0] = (struct flood){ .cpu = 0, .rt = rt, .src = src, .until = until };
	f[1] = (struct flood){ .cpu = 1, .rt = rt, .src = src1, .until = until };
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, flood_thread, &f[i]), 0);
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], &ret);
		assert_null(ret);
	}
	sp.s0 = f[0].s0 < f[1].s0 ? f[0].s0 : f[1].s0;
	sp.e0 = f[0].e0 < f[1].e0 ? f[0].e0 : f[1].e0;
	sp.sl = f[0].sl > f[1].sl ? f[0].sl : f[1].sl;
	sp.el = f[0].el > f[1].el ? f[0].el : f[1].el;
	sp.sent = f[0].sent + f[1].sent;
	return sp;
}

/* CPU 0, then CPU 1, then CPU 0, ...: one bucket, whichever CPU asks. */
static void test_in_turn(void **state)
{
	struct span sp;

	(void)state;
	sp = in_turn("192.0.2.10", "192.0.2.10");
	check("CPU 0 and 1 in turn", passed_of("192.0.2.10/32"), sp.sl - sp.e0, sp.el - sp.s0, sp.sent);
}

/*
 * Both CPUs at once on one source; the rule of prefix decides with burst.
 * Returns 0, or -1 when a flood thread paused longer than max_pause (the
 * run says nothing then: the bucket may have refilled to its cap).
 */
static int same_time2(const char *what, const char *src, const char *src1, const char *prefix,
		      double burst, int rt, double max_pause, double secs)
{
	__u64 before = passed_of(prefix);
	struct flood f[2];
	struct span sp = at_once(f, src, src1, rt, secs);

	if (f[0].max_pause > max_pause || f[1].max_pause > max_pause) {
		printf("  %s: a flood thread paused %.1f ms (other load on the machine): run again\n", what,
		       1e3 * (f[0].max_pause > f[1].max_pause ? f[0].max_pause : f[1].max_pause));
		return -1;
	}
	check_burst(what, burst, passed_of(prefix) - before, sp.sl - sp.e0, sp.el - sp.s0, sp.sent);
	printf("  compare-and-swap retries exhausted so far: %llu\n",
	       (unsigned long long)tl_maps_gstats(&maps).cas_contended);
	return 0;
}

static int same_time(const char *what, const char *src, const char *prefix, double burst, int rt,
		     double max_pause, double secs)
{
	return same_time2(what, src, src, prefix, burst, rt, max_pause, secs);
}

static void test_same_time(void **state)
{
	(void)state;
	assert_int_equal(same_time("CPU 0 and 1 at the same time (jiffy clock)", "192.0.2.20",
				   "192.0.2.20/32", BURST, 1, 1e9, 1.0), 0);
}

/*
 * The same with a burst under two jiffies: the rule reads the exact clock.
 * Its burst is only 7 ms of refill, so a pause in the flood longer than that
 * refills the bucket to its cap and loses the rest. SCHED_FIFO would bring
 * such pauses (real-time throttling stops both threads for 50 ms a second),
 * so the threads run at normal priority, and a run in which one paused for
 * over 5 ms is repeated with a fresh source: half-second runs, up to 30.
 */
static void test_same_time_fine_clock(void **state)
{
	char src[32];
	int attempt;

	(void)state;
	for (attempt = 0; attempt < 30; attempt++) {
		snprintf(src, sizeof(src), "192.0.2.%d", 32 + attempt);
		if (same_time("CPU 0 and 1 at the same time (exact clock)", src, "192.0.2.32/27",
			      FINE_BURST, 0, 0.005, 0.5) == 0)
			return;
	}
	fail_msg("every run was disturbed by other load: run on an idle machine");
}

/*
 * --total: two sources, one per CPU, both far under their own limits, the
 * rule's cap of 100000/s shared between them. Each CPU takes the cap's
 * tokens in batches of 64 (50000 / (50 x CPUs), at most 64), so the count
 * may fall short of burst + rate x elapsed by (64 - 1) x CPUs = 126
 * packets, 0.08 % of the 150000 expected, and never exceeds it: within the
 * same 1 % as the per-source runs.
 */
static void test_total_same_time(void **state)
{
	(void)state;
	assert_int_equal(same_time2("--total, CPU 0 and 1 at the same time, one source each",
				    "192.0.2.96", "192.0.2.97", "192.0.2.96/27", BURST, 1, 1e9, 1.0), 0);
}

/*
 * A cap from CPU 0 and CPU 1 in turn: batches left on one CPU are used on
 * its next turn. Each --total test has a rule of its own, so its cap starts
 * full (a run spends it).
 */
static void test_total_in_turn(void **state)
{
	__u64 before = passed_of("192.0.2.64/27");
	struct span sp;

	(void)state;
	sp = in_turn("192.0.2.66", "192.0.2.67");
	check("--total, CPU 0 and 1 in turn", passed_of("192.0.2.64/27") - before, sp.sl - sp.e0,
	      sp.el - sp.s0, sp.sent);
}

/*
 * --algo from both CPUs at once on one source: a window algorithm's word
 * (and a sliding log's ring) is shared, so no CPU admits on its own. The
 * flood is far over the limit; bracketed by the times around its first and
 * last calls, the windows it touched (UTC-aligned through rt_off_ns) give
 * the count: a fixed or sliding window at most its limit in each window
 * touched, at least (limit - 1) in each one it covered whole; the sliding
 * log admits its limit at the start and again each time those age out, a
 * window later: limit x (whole windows elapsed + 1).
 */
static double ffloor(double x)   /* x > 0 here */
{
	return (double)(long long)x;
}

static void algo_same_time(const char *what, const char *src, const char *prefix, int log,
			   double limit)
{
	struct xrl_config cfg;
	struct flood f[2];
	struct span sp;
	double s0, e0, sl, el, off, lo, hi;
	__u64 before, passed;

	assert_int_equal(xrl_read_config(&maps, &cfg), 0);
	off = (double)cfg.rt_off_ns / 1e9;
	before = passed_of(prefix);
	sp = at_once(f, src, src, 1, 2.3);
	passed = passed_of(prefix) - before;
	s0 = sp.s0;
	e0 = sp.e0;
	sl = sp.sl;
	el = sp.el;
	if (log) {
		lo = limit * (ffloor(sl - e0) + 1);
		hi = limit * (ffloor(el - s0) + 1);
	} else {
		/* windows touched: from the one of s0 to the one of el; whole ones: after e0, before sl */
		hi = limit * (ffloor(el + off) - ffloor(s0 + off) + 1);
		lo = (limit - 1) * (ffloor(sl + off) - ffloor(e0 + off) - 1);
	}
	printf("  %s: sent %lu, passed %llu, expected %.0f..%.0f\n", what, sp.sent,
	       (unsigned long long)passed, lo, hi);
	assert_true((double)sp.sent > 2.0 * (double)passed);
	assert_true((double)passed <= hi);
	assert_true((double)passed >= lo);
}

static void test_algo_fixed_window(void **state)
{
	(void)state;
	algo_same_time("--algo fixed-window 50000/s, CPU 0 and 1 at once", "192.0.2.130",
		       "192.0.2.128/28", 0, 50000);
}

static void test_algo_sliding_window(void **state)
{
	(void)state;
	algo_same_time("--algo sliding-window 50000/s, CPU 0 and 1 at once", "192.0.2.146",
		       "192.0.2.144/28", 0, 50000);
}

static void test_algo_sliding_log(void **state)
{
	(void)state;
	algo_same_time("--algo sliding-log 64/s, CPU 0 and 1 at once", "192.0.2.162",
		       "192.0.2.160/28", 1, 64);
}

static void test_algo_fixed_window6(void **state)
{
	(void)state;
	algo_same_time("--algo fixed-window 50000/s, IPv6, CPU 0 and 1 at once", "2001:db8:c0:1::7",
		       "2001:db8:c0:1::/64", 0, 50000);
}

static void test_algo_sliding_window6(void **state)
{
	(void)state;
	algo_same_time("--algo sliding-window 50000/s, IPv6, CPU 0 and 1 at once", "2001:db8:c0:2::7",
		       "2001:db8:c0:2::/64", 0, 50000);
}

static void test_algo_sliding_log6(void **state)
{
	(void)state;
	algo_same_time("--algo sliding-log 64/s, IPv6, CPU 0 and 1 at once", "2001:db8:c0:3::7",
		       "2001:db8:c0:3::/64", 1, 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_turn),
		cmocka_unit_test(test_same_time),
		cmocka_unit_test(test_same_time_fine_clock),
		cmocka_unit_test(test_total_in_turn),
		cmocka_unit_test(test_total_same_time),
		cmocka_unit_test(test_algo_fixed_window),
		cmocka_unit_test(test_algo_sliding_window),
		cmocka_unit_test(test_algo_sliding_log),
		cmocka_unit_test(test_algo_fixed_window6),
		cmocka_unit_test(test_algo_sliding_window6),
		cmocka_unit_test(test_algo_sliding_log6),
	};

	return cmocka_run_group_tests_name("xrl limit across CPUs", tests, setup, teardown);
}
