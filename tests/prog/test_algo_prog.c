// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --algo through the compiled XDP object (test-clock build) and
 * BPF_PROG_TEST_RUN, with exact time: the literature's fixed-window case
 * (twice the limit across a boundary), the sliding window's bound in any
 * window-long span of the same boundary burst, the sliding log's exact
 * count, windows aligned to UTC through xrl_config.rt_off_ns, and every
 * algorithm with --per, --proto/--dport/--syn, IPv4 and IPv6.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <cmocka.h>
#include <bpf/bpf.h>

#include "xrl_tl_assert.h"
#include "xrl_rule.h"
#include "xrl_metrics.h"

#define SEC_NS 1000000000ULL
#define MS_NS  1000000ULL

static struct xrl_tl tl;

static int setup(void **state)
{
	(void)state;
	return xrl_tl_open(&tl, 4096, XRL_MALFORMED_PASS) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	xrl_tl_close(&tl);
	return 0;
}

/* Install rules; UTC is at 0 of the test clock unless said otherwise (rt_off 0). */
static void rules(const char *const *lines)
{
	tl_rules(&tl, lines);
	xrl_tl_set_rt_off(&tl, 0);
}

static int run_spec(const struct xrl_pkt_spec *s)
{
	return tl_send(&tl, s);
}

/* n packets of s at time t: how many passed */
static int burst_at(__u64 t, const struct xrl_pkt_spec *s, int n)
{
	xrl_tl_set_clock(&tl, t);
	return tl_passed(&tl, s, n);
}

/*
 * The literature's case: fixed window, 10 per second; 10 requests at 0.9 s
 * and 10 at 1.05 s are all accepted, 20 in 0.15 s: twice the limit across
 * the boundary. The 11th of the second window is refused. With UTC half a
 * second off the test clock, the same two bursts share the window
 * [0.5, 1.5): 10 and 0.
 */
static void test_fixed_window_boundary(void **state)
{
	static const char *const r[] = { "192.0.2.0/24 --rate 10/s --algo fixed-window", NULL };
	const struct xrl_pkt_spec a = { .family = 4, .src = "192.0.2.1" };
	const struct xrl_pkt_spec b = { .family = 4, .src = "192.0.2.2" };
	__u64 t0 = 2000 * SEC_NS;

	(void)state;
	rules(r);
	assert_int_equal(burst_at(t0 + 900 * MS_NS, &a, 10), 10);
	assert_int_equal(burst_at(t0 + 1050 * MS_NS, &a, 10), 10);
	assert_int_equal(burst_at(t0 + 1999 * MS_NS, &a, 1), 0);
	assert_int_equal(burst_at(t0 + 2000 * MS_NS, &a, 11), 10);

	xrl_tl_set_rt_off(&tl, 500 * MS_NS);   /* UTC = test clock + 0.5 s */
	t0 = 3000 * SEC_NS;
	assert_int_equal(burst_at(t0 + 900 * MS_NS, &b, 10), 10);
	assert_int_equal(burst_at(t0 + 1050 * MS_NS, &b, 10), 0);
	assert_int_equal(burst_at(t0 + 1500 * MS_NS, &b, 10), 10);
}

/* Minute windows: 5/m, a burst each side of a minute boundary (UTC multiples of 60 s). */
static void test_fixed_window_minute(void **state)
{
	static const char *const r[] = { "192.0.2.0/24 --rate 5/m --algo fixed-window", NULL };
	const struct xrl_pkt_spec a = { .family = 4, .src = "192.0.2.3" };
	__u64 t0 = 600 * SEC_NS;   /* a multiple of 60 s */

	(void)state;
	rules(r);
	assert_int_equal(burst_at(t0 + 30 * SEC_NS, &a, 8), 5);
	assert_int_equal(burst_at(t0 + 59900 * MS_NS, &a, 8), 0);
	assert_int_equal(burst_at(t0 + 60100 * MS_NS, &a, 8), 5);
	assert_int_equal(burst_at(t0 + 119 * SEC_NS, &a, 8), 0);
}

/*
 * The times of admitted packets: in any window-long span (t - W, t] ending
 * pos ns into its window, at most limit + limit x pos / W (DESIGN: the
 * sliding window's error bound), and for the sliding log at most limit.
 */
static void check_spans(const __u64 *at, int n, __u64 win, __u64 limit, int exact)
{
	int i, j;

	for (i = 0; i < n; i++) {
		__u64 cnt = 0, bound = exact ? limit : limit + limit * (at[i] % win) / win;

		for (j = 0; j <= i; j++)
			cnt += at[j] + win > at[i];
		if (cnt > bound)
			fail_msg("%llu admitted in the window-long span ending %llu ns: bound %llu",
				 (unsigned long long)cnt, (unsigned long long)at[i],
				 (unsigned long long)bound);
	}
}

/*
 * The boundary burst with more bursts after it, 10 per second: the counts
 * expected by hand (prev x (1 - pos) + cur + 1 <= 10), then the span bound.
 */
static void test_sliding_window_boundary(void **state)
{
	static const char *const r[] = { "192.0.2.0/24 --rate 10/s --algo sliding-window", NULL };
	const struct xrl_pkt_spec a = { .family = 4, .src = "192.0.2.4" };
	static const struct { __u64 ms; int sent, want; } step[] = {
		{ 900, 10, 10 },    /* window 0: nothing before */
		{ 1050, 10, 0 },    /* 10 x 0.95 = 9.5 of the 10 used */
		{ 1500, 10, 5 },    /* 10 x 0.5 + 5 */
		{ 1950, 10, 4 },    /* 10 x 0.05 + 9 */
		{ 2050, 10, 1 },    /* 9 x 0.95 + 1 = 9.55 */
	};
	__u64 t0 = 4000 * SEC_NS, at[64];
	int i, k, n = 0;

	(void)state;
	rules(r);
	for (i = 0; i < (int)(sizeof(step) / sizeof(step[0])); i++) {
		int pass = 0;

		xrl_tl_set_clock(&tl, t0 + step[i].ms * MS_NS);
		for (k = 0; k < step[i].sent; k++)
			if (run_spec(&a) == XDP_PASS) {
				at[n++] = t0 + step[i].ms * MS_NS;
				pass++;
			}
		assert_int_equal(pass, step[i].want);
	}
	check_spans(at, n, SEC_NS, 10, 0);
}

/* A steady over-limit stream (a packet every 7 ms, 3x the limit) against the span bound. */
static void test_sliding_window_stream(void **state)
{
	static const char *const r[] = { "192.0.2.0/24 --rate 50/s --algo sliding-window", NULL };
	const struct xrl_pkt_spec a = { .family = 4, .src = "192.0.2.5" };
	static __u64 at[1024];
	__u64 t0 = 5000 * SEC_NS + 300 * MS_NS, t;
	int n = 0;

	(void)state;
	rules(r);
	for (t = 0; t < 4 * SEC_NS; t += 7 * MS_NS) {
		xrl_tl_set_clock(&tl, t0 + t);
		if (run_spec(&a) == XDP_PASS)
			at[n++] = t0 + t;
	}
	check_spans(at, n, SEC_NS, 50, 0);
	/*
	 * No window counts more than 50: five windows touched (from 0.3 s into
	 * the first to 0.3 s into the fifth). The three whole ones each reach at
	 * least 49 (a packet 993 ms in needs prev x 0.007 + cur + 1 <= 50).
	 */
	printf("  steady stream of 4 s at 3x 50/s: %d admitted\n", n);
	assert_true(n <= 5 * 50);
	assert_true(n >= 3 * 49);
}

/*
 * The sliding log is exact: 10 per second; a packet is admitted iff fewer
 * than 10 were admitted in the second before it. The 0.9 s burst ages out
 * at exactly 1.9 s.
 */
static void test_sliding_log_exact(void **state)
{
	static const char *const r[] = { "192.0.2.0/24 --rate 10/s --algo sliding-log", NULL };
	const struct xrl_pkt_spec a = { .family = 4, .src = "192.0.2.6" };
	__u64 t0 = 6000 * SEC_NS;

	(void)state;
	rules(r);
	assert_int_equal(burst_at(t0 + 900 * MS_NS, &a, 10), 10);
	assert_int_equal(burst_at(t0 + 1050 * MS_NS, &a, 10), 0);
	assert_int_equal(burst_at(t0 + 1899 * MS_NS, &a, 10), 0);
	assert_int_equal(burst_at(t0 + 1900 * MS_NS, &a, 10), 10);
	assert_int_equal(burst_at(t0 + 2500 * MS_NS, &a, 5), 0);
	assert_int_equal(burst_at(t0 + 2900 * MS_NS, &a, 12), 10);
}

/* A steady stream through the sliding log: never more than the limit in any span, and exactly it. */
static void test_sliding_log_stream(void **state)
{
	static const char *const r[] = { "192.0.2.0/24 --rate 64/s --algo sliding-log", NULL };
	const struct xrl_pkt_spec a = { .family = 4, .src = "192.0.2.7" };
	static __u64 at[1024];
	__u64 t0 = 7000 * SEC_NS, t;
	int n = 0;

	(void)state;
	rules(r);
	for (t = 0; t < 3 * SEC_NS; t += 3 * MS_NS) {
		xrl_tl_set_clock(&tl, t0 + t);
		if (run_spec(&a) == XDP_PASS)
			at[n++] = t0 + t;
	}
	check_spans(at, n, SEC_NS, 64, 1);
	/* 64 in the first 189 ms; each ages out a second later and is replaced at once */
	assert_int_equal(n, 3 * 64);
}

/*
 * Each algorithm with the match fields and aggregation: a UDP/53 rule
 * (other ports: no rule), a SYN rule, and an IPv6 /48 with --per 48 in
 * which two addresses share one count.
 */
static void test_algo_match_and_per(void **state)
{
	static const char *const algos[] = { "fixed-window", "sliding-window", "sliding-log" };
	__u64 t = 8000 * SEC_NS;
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		char l0[128], l1[128], l2[128];
		const char *r[] = { l0, l1, l2, NULL };
		struct xrl_pkt_spec dns = { .family = 4, .src = "198.51.100.9", .proto = IPPROTO_UDP, .dport = 53 };
		struct xrl_pkt_spec other = dns;
		struct xrl_pkt_spec syn = { .family = 4, .src = "203.0.113.5", .proto = IPPROTO_TCP,
					    .dport = 443, .tcp_flags = 0x02 };
		struct xrl_pkt_spec ack = syn;
		struct xrl_pkt_spec v6a = { .family = 6, .src = "2001:db8:5:1::1" };
		struct xrl_pkt_spec v6b = { .family = 6, .src = "2001:db8:5:2::2" };
		struct xrl_pkt_spec v6c = { .family = 6, .src = "2001:db8:6::1" };

		snprintf(l0, sizeof(l0), "198.51.100.0/24 --proto udp --dport 53 --rate 3/s --algo %s", algos[i]);
		snprintf(l1, sizeof(l1), "203.0.113.0/24 --syn --rate 2/s --algo %s", algos[i]);
		snprintf(l2, sizeof(l2), "2001:db8::/32 --rate 4/s --algo %s --per 48", algos[i]);
		rules(r);
		other.dport = 54;
		ack.tcp_flags = 0x10;
		t += 10 * SEC_NS;
		assert_int_equal(burst_at(t, &dns, 5), 3);
		assert_int_equal(burst_at(t, &other, 5), 5);
		assert_int_equal(burst_at(t, &syn, 5), 2);
		assert_int_equal(burst_at(t, &ack, 5), 5);
		assert_int_equal(burst_at(t, &v6a, 3), 3);
		assert_int_equal(burst_at(t, &v6b, 3), 1);    /* the same /48 */
		assert_int_equal(burst_at(t, &v6c, 5), 4);    /* another /48 */
		assert_int_equal(burst_at(t + 2 * SEC_NS, &v6b, 5), 4);
		assert_int_equal(burst_at(t + 2 * SEC_NS, &dns, 5), 3);
	}
}

/* A rule change (another limit or algorithm) restarts every source empty. */
static void test_algo_rule_change(void **state)
{
	static const char *const r1[] = { "192.0.2.0/24 --rate 2/s --algo sliding-log", NULL };
	static const char *const r2[] = { "192.0.2.0/24 --rate 3/s --algo sliding-log", NULL };
	static const char *const r3[] = { "192.0.2.0/24 --rate 4/s --algo fixed-window", NULL };
	static const char *const r4[] = { "192.0.2.0/24 --rate 5/s --burst 5", NULL };
	const struct xrl_pkt_spec a = { .family = 4, .src = "192.0.2.8" };
	__u64 t = 9000 * SEC_NS;

	(void)state;
	rules(r1);
	assert_int_equal(burst_at(t, &a, 5), 2);
	rules(r2);
	assert_int_equal(burst_at(t, &a, 5), 3);
	rules(r3);
	assert_int_equal(burst_at(t, &a, 5), 4);
	rules(r4);
	assert_int_equal(burst_at(t, &a, 6), 5);
	rules(r1);
	assert_int_equal(burst_at(t, &a, 5), 2);
}

/*
 * A window source over its limit is dropped in line once its entry is seen
 * (xrl_over_fast), as the decision would drop it: every packet the window
 * admits must still pass, to the nanosecond, right after a run of such
 * drops. Fixed window 3/s: drops up to the window's last ns, then the first
 * ns of the next admits 3 (the word is of the older window). Sliding window
 * 4/s, 4 admitted at 0.1 s: the next window admits one packet once
 * 4 x (1 - pos) + 1 <= 4, i.e. from pos = 0.25 s on, and another from 0.5 s.
 * A rule change (a new version, 3/s: the old word, 4 and 2, is over it)
 * restarts the dropped source empty.
 */
static void test_window_over_fast(void **state)
{
	static const char *const fw[] = { "192.0.2.0/24 --rate 3/s --algo fixed-window", NULL };
	static const char *const sw[] = { "192.0.2.0/24 --rate 4/s --algo sliding-window", NULL };
	static const char *const sw3[] = { "192.0.2.0/24 --rate 3/s --algo sliding-window", NULL };
	const struct xrl_pkt_spec a = { .family = 4, .src = "192.0.2.9" };
	const struct xrl_pkt_spec b = { .family = 4, .src = "192.0.2.10" };
	__u64 t0 = 9100 * SEC_NS;

	(void)state;
	rules(fw);
	assert_int_equal(burst_at(t0 + 100 * MS_NS, &a, 3), 3);
	assert_int_equal(burst_at(t0 + 100 * MS_NS, &a, 20), 0);
	assert_int_equal(burst_at(t0 + SEC_NS - 1, &a, 20), 0);
	assert_int_equal(burst_at(t0 + SEC_NS, &a, 20), 3);
	assert_int_equal(burst_at(t0 + 2 * SEC_NS - 1, &a, 20), 0);
	assert_int_equal(burst_at(t0 + 2 * SEC_NS, &a, 1), 1);

	t0 = 9200 * SEC_NS;
	rules(sw);
	assert_int_equal(burst_at(t0 + 100 * MS_NS, &b, 4), 4);
	assert_int_equal(burst_at(t0 + 900 * MS_NS, &b, 20), 0);
	assert_int_equal(burst_at(t0 + 1250 * MS_NS - 1, &b, 20), 0);
	assert_int_equal(burst_at(t0 + 1250 * MS_NS, &b, 20), 1);
	assert_int_equal(burst_at(t0 + 1500 * MS_NS - 1, &b, 20), 0);
	assert_int_equal(burst_at(t0 + 1500 * MS_NS, &b, 20), 1);
	/* a new rule version, under which the old word is over the limit: empty again */
	rules(sw3);
	assert_int_equal(burst_at(t0 + 1500 * MS_NS, &b, 20), 3);
}

/* --total caps a window rule's sources together, after their own windows. */
static void test_algo_total(void **state)
{
	static const char *const r[] = {
		"192.0.2.0/24 --rate 3/s --algo fixed-window --total 4/s --total-burst 4", NULL,
	};
	const struct xrl_pkt_spec a = { .family = 4, .src = "192.0.2.10" };
	const struct xrl_pkt_spec b = { .family = 4, .src = "192.0.2.11" };
	__u64 t = 9500 * SEC_NS;

	(void)state;
	rules(r);
	assert_int_equal(burst_at(t, &a, 5), 3);
	assert_int_equal(burst_at(t, &b, 5), 1);
}

/*
 * --global: the daemon's window counts (xrl_fleet_floor, as it writes them
 * from Redis) add to the source's own: with 7 admitted elsewhere in this
 * window, a 10/s fixed window admits 3 here. One window later the same
 * answer is the previous window's: moot for the fixed window, weighted for
 * the sliding one; expired (until_ns past), it counts for nothing.
 */
static void test_algo_global_counts(void **state)
{
	static const char *const r[] = {
		"100.66.0.0/24 --rate 10/s --algo fixed-window --global",
		"100.67.0.0/24 --rate 10/s --algo sliding-window --global",
		NULL,
	};
	const struct xrl_pkt_spec a = { .family = 4, .src = "100.66.0.1" };
	const struct xrl_pkt_spec b = { .family = 4, .src = "100.67.0.1" };
	struct xrl_bucket_key ka = { .family = 4 }, kb = { .family = 4 };
	__u64 t = 11000 * SEC_NS;
	struct xrl_fleet_floor f = { .until_ns = t + 10 * SEC_NS, .win_idx = 11000,
				     .win_others = 7 };

	(void)state;
	rules(r);
	ka.rule_id = (__u32)xrl_tl_rule_id(&tl, "100.66.0.0/24");
	kb.rule_id = (__u32)xrl_tl_rule_id(&tl, "100.67.0.0/24");
	inet_pton(AF_INET, "100.66.0.1", &ka.addr[0]);
	inet_pton(AF_INET, "100.67.0.1", &kb.addr[0]);
	assert_int_equal(bpf_map_update_elem(tl.maps.fleet_floor, &ka, &f, BPF_ANY), 0);
	assert_int_equal(bpf_map_update_elem(tl.maps.fleet_floor, &kb, &f, BPF_ANY), 0);
	assert_int_equal(burst_at(t + 100 * MS_NS, &a, 10), 3);
	assert_int_equal(burst_at(t + 100 * MS_NS, &b, 10), 3);
	/* next window, the daemon not heard since: fixed 10; sliding (3 + 7) x 0.5 used of 10 */
	assert_int_equal(burst_at(t + 1500 * MS_NS, &a, 12), 10);
	assert_int_equal(burst_at(t + 1500 * MS_NS, &b, 12), 5);
	/* expired: plain local windows */
	f.until_ns = t;
	f.win_idx = 11003;
	assert_int_equal(bpf_map_update_elem(tl.maps.fleet_floor, &ka, &f, BPF_ANY), 0);
	assert_int_equal(burst_at(t + 3100 * MS_NS, &a, 12), 10);
}

/*
 * --global sliding log: the other hosts' admissions in the window (the
 * daemon's log counts in xrl_fleet_floor, from Redis' log of round reports)
 * add to the source's own exact log: with 7 admitted elsewhere, a 10/s log
 * admits 3 here; once the oldest of the others' reports has left the window
 * (log_leave_ns) 2 remain and 5 more pass; when this host's own first 3
 * have left too, 3 more; expired, the floor counts for nothing (the plain
 * local log).
 */
static void test_algo_global_log(void **state)
{
	static const char *const r[] = {
		"100.68.0.0/24 --rate 10/s --algo sliding-log --global",
		NULL,
	};
	const struct xrl_pkt_spec a = { .family = 4, .src = "100.68.0.1" };
	struct xrl_bucket_key ka = { .family = 4 };
	__u64 t = 12000 * SEC_NS;
	struct xrl_fleet_floor f = { .until_ns = t + 10 * SEC_NS, .win_idx = 12000,
				     .log_others = 7, .log_after = 2,
				     .log_leave_ns = t + 500 * MS_NS };

	(void)state;
	rules(r);
	ka.rule_id = (__u32)xrl_tl_rule_id(&tl, "100.68.0.0/24");
	inet_pton(AF_INET, "100.68.0.1", &ka.addr[0]);
	assert_int_equal(bpf_map_update_elem(tl.maps.fleet_floor, &ka, &f, BPF_ANY), 0);
	assert_int_equal(burst_at(t + 100 * MS_NS, &a, 10), 3);
	assert_int_equal(burst_at(t + 499 * MS_NS, &a, 10), 0);
	assert_int_equal(burst_at(t + 600 * MS_NS, &a, 10), 5);
	assert_int_equal(burst_at(t + 1099 * MS_NS, &a, 10), 0);
	assert_int_equal(burst_at(t + 1100 * MS_NS, &a, 10), 3);
	/* 10 or more elsewhere: nothing here */
	f.log_leave_ns = 0;
	f.log_after = 10;
	assert_int_equal(bpf_map_update_elem(tl.maps.fleet_floor, &ka, &f, BPF_ANY), 0);
	assert_int_equal(burst_at(t + 1700 * MS_NS, &a, 10), 0);
	/* expired: the local log alone (own in the window: the 3 of 1.1 s) */
	f.until_ns = t;
	assert_int_equal(bpf_map_update_elem(tl.maps.fleet_floor, &ka, &f, BPF_ANY), 0);
	assert_int_equal(burst_at(t + 1800 * MS_NS, &a, 10), 7);
}

/* /metrics: a window rule's series carry algo= after their labels; a token bucket's stay as they were. */
static void test_algo_metrics_label(void **state)
{
	static const char *const r[] = {
		"100.64.0.0/24 --rate 2/s --algo sliding-window",
		"100.65.0.0/24 --rate 2/s",
		"100.66.0.0/24 --rate 2/s --algo fixed-window --shadow --block 30s --block-spoofable",
		NULL,
	};
	const struct xrl_pkt_spec a = { .family = 4, .src = "100.64.0.12" };
	const struct xrl_pkt_spec b = { .family = 4, .src = "100.65.0.12" };
	const struct xrl_pkt_spec c = { .family = 4, .src = "100.66.0.12" };
	struct xrl_metrics_opts o = { .addr = "127.0.0.1", .top_k = 10, .instance = "t" };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	rules(r);
	assert_int_equal(burst_at(9700 * SEC_NS, &a, 5), 2);
	assert_int_equal(burst_at(9700 * SEC_NS, &b, 5), 2);
	assert_int_equal(burst_at(9700 * SEC_NS, &c, 5), 5);   /* shadow: 2 admitted, 3 would-drops */
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(xrl_metrics_render(f, &o, &tl.maps, NULL, NULL), 0);
	fclose(f);
	if (getenv("XRL_TEST_VERBOSE"))
		fputs(text, stdout);
	assert_non_null(strstr(text, "xrl_packets_total{instance=\"t\",rule=\"100.64.0.0/24\",action=\"pass\",algo=\"sliding-window\"} 2\n"));
	assert_non_null(strstr(text, "xrl_packets_total{instance=\"t\",rule=\"100.64.0.0/24\",action=\"drop\",algo=\"sliding-window\"} 3\n"));
	assert_non_null(strstr(text, "xrl_rule_sources_created_total{instance=\"t\",rule=\"100.64.0.0/24\",algo=\"sliding-window\"} 1\n"));
	assert_non_null(strstr(text, "xrl_packets_total{instance=\"t\",rule=\"100.65.0.0/24\",action=\"pass\"} 2\n"));
	/* every family of per-rule series, the gauges and the policies' too */
	assert_non_null(strstr(text, "xrl_rule_sources_tracked{instance=\"t\",rule=\"100.64.0.0/24\",algo=\"sliding-window\"} 1\n"));
	assert_non_null(strstr(text, "xrl_shadow_dropped_total{instance=\"t\",rule=\"100.66.0.0/24\",algo=\"fixed-window\"} 3\n"));
	assert_non_null(strstr(text, "xrl_blocked_total{instance=\"t\",rule=\"100.66.0.0/24\",algo=\"fixed-window\"} 2\n"));
	assert_non_null(strstr(text, "xrl_blocked_sources{instance=\"t\",rule=\"100.66.0.0/24\",algo=\"fixed-window\"} "));
	assert_non_null(strstr(text, "xrl_rule_sources_tracked{instance=\"t\",rule=\"100.65.0.0/24\"} 1\n"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_window_boundary),
		cmocka_unit_test(test_fixed_window_minute),
		cmocka_unit_test(test_sliding_window_boundary),
		cmocka_unit_test(test_sliding_window_stream),
		cmocka_unit_test(test_sliding_log_exact),
		cmocka_unit_test(test_sliding_log_stream),
		cmocka_unit_test(test_algo_match_and_per),
		cmocka_unit_test(test_algo_rule_change),
		cmocka_unit_test(test_window_over_fast),
		cmocka_unit_test(test_algo_total),
		cmocka_unit_test(test_algo_metrics_label),
		cmocka_unit_test(test_algo_global_counts),
		cmocka_unit_test(test_algo_global_log),
	};

	return cmocka_run_group_tests_name("xrl --algo through the program", tests, setup, teardown);
}
