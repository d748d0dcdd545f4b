// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Escalation (xrl http --escalate) through the real XDP object, on the exact
 * test clock: an address written by the library (xrl_escalate_add) is
 * dropped whatever rule it would meet (an allow rule too) from then until
 * exactly its end, counted in its entry and in the global drops, not in any
 * rule's; another address, and the same address of the other family, pass;
 * `block del`'s xrl_escalate_del lifts it at once; extending keeps the start
 * and the count. Also prints the per-packet cost of the check (xrl_esc_on
 * off, on with the source not escalated), measured with BPF_PROG_TEST_RUN.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <time.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <cmocka.h>
#include <bpf/bpf.h>

#include "xrl_tl_assert.h"
#include "xrl_escalate.h"

#define SEC_NS 1000000000ULL

static int sendn(struct xrl_tl *t, int family, const char *src, int n)
{
	struct xrl_pkt_spec s = { .family = family, .src = src,
				  .dst = family == 4 ? "192.0.2.1" : "2001:db8:ffff::1",
				  .dport = 80, .proto = 6, .tcp_flags = 0x10 };

	return tl_passed(t, &s, n);
}

static struct xrl_escalation entry(struct xrl_tl *t, int family, const char *src)
{
	struct xrl_esc_key k = { .family = (__u32)family };
	struct xrl_escalation e;

	inet_pton(family == 4 ? AF_INET : AF_INET6, src, k.addr);
	memset(&e, 0, sizeof(e));
	bpf_map_lookup_elem(t->maps.escalated, &k, &e);
	return e;
}

static void add(struct xrl_tl *t, int family, const char *src, __u64 now, __u64 dur)
{
	__u8 a[16];

	inet_pton(family == 4 ? AF_INET : AF_INET6, src, a);
	assert_int_equal(xrl_escalate_add(&t->maps, family, a, now, dur, "login", 7, 3), 0);
}

static void test_escalated(void **state)
{
	static const char *const r[] = {
		"10.9.0.0/16 --allow",   /* an allow rule does not save an escalated address */
		"0.0.0.0/0 --rate 1000/s --burst 1000",
		NULL,
	};
	const __u64 t0 = 3000 * SEC_NS;
	struct xrl_global_stats g0, g1;
	struct xrl_rule_stats r0, r1;
	struct xrl_escalation e;
	struct xrl_esc_key k = { .family = 4 };
	struct xrl_tl t;

	(void)state;
	tl_start(&t, 4096, r, t0);
	/* no escalation written yet: the map is not even looked up, and all pass */
	assert_int_equal(sendn(&t, 4, "10.9.0.5", 3), 3);
	add(&t, 4, "10.9.0.5", t0, 30 * SEC_NS);
	add(&t, 6, "2001:db8::5", t0, 30 * SEC_NS);
	g0 = tl_gstats(&t);
	r0 = tl_rstats(&t, "10.9.0.0/16");
	assert_int_equal(sendn(&t, 4, "10.9.0.5", 10), 0);
	assert_int_equal(sendn(&t, 4, "10.9.0.6", 4), 4);            /* another address */
	assert_int_equal(sendn(&t, 6, "::ffff:10.9.0.5", 2), 0);     /* mapped: the same address */
	assert_int_equal(sendn(&t, 6, "2001:db8::5", 3), 0);
	assert_int_equal(sendn(&t, 6, "2001:db8::6", 3), 3);
	e = entry(&t, 4, "10.9.0.5");
	assert_int_equal(e.dropped, 12);
	assert_int_equal(e.since_ns, t0);
	assert_int_equal(e.until_ns, t0 + 30 * SEC_NS);
	assert_int_equal(e.refusals, 7);
	assert_int_equal(e.rate, 3);
	assert_string_equal(e.rule, "login");
	assert_int_equal(entry(&t, 6, "2001:db8::5").dropped, 3);
	g1 = tl_gstats(&t);
	r1 = tl_rstats(&t, "10.9.0.0/16");
	assert_int_equal(g1.dropped - g0.dropped, 15);
	assert_int_equal(r1.passed - r0.passed, 4);   /* 10.9.0.6's only */
	assert_int_equal(r1.dropped, r0.dropped);

	/* exactly its end: dropped until the last ns, judged by the rules from until_ns */
	xrl_tl_set_clock(&t, t0 + 30 * SEC_NS - 1);
	assert_int_equal(sendn(&t, 4, "10.9.0.5", 1), 0);
	/* extended 10 s from 20 s on (a new escalation while it holds): start and count kept */
	add(&t, 4, "10.9.0.5", t0 + 20 * SEC_NS, 20 * SEC_NS);
	e = entry(&t, 4, "10.9.0.5");
	assert_int_equal(e.since_ns, t0);
	assert_int_equal(e.dropped, 13);
	assert_int_equal(e.until_ns, t0 + 40 * SEC_NS);
	xrl_tl_set_clock(&t, t0 + 40 * SEC_NS - 1);
	assert_int_equal(sendn(&t, 4, "10.9.0.5", 1), 0);
	xrl_tl_set_clock(&t, t0 + 40 * SEC_NS);
	assert_int_equal(sendn(&t, 4, "10.9.0.5", 2), 2);
	/* the IPv6 one ended at 30 s */
	assert_int_equal(sendn(&t, 6, "2001:db8::5", 1), 1);

	/* xrl block del: deleted, it passes at once */
	add(&t, 4, "10.9.0.5", t0 + 40 * SEC_NS, 60 * SEC_NS);
	assert_int_equal(sendn(&t, 4, "10.9.0.5", 1), 0);
	inet_pton(AF_INET, "10.9.0.5", k.addr);
	assert_int_equal(xrl_escalate_del(&t.maps, &k), 0);
	assert_int_equal(sendn(&t, 4, "10.9.0.5", 1), 1);
	assert_int_equal(xrl_escalate_del(&t.maps, &k), -ENOENT);
	xrl_tl_close(&t);
}

/* ns per packet of a frame run repeat times, the median of 5 runs of the thread's CPU time */
static double cost(struct xrl_tl *t, const char *src)
{
	struct xrl_pkt_spec s = { .family = 4, .src = src, .dst = "192.0.2.1", .dport = 80,
				  .proto = 6, .tcp_flags = 0x10 };
	__u8 buf[256];
	size_t l3, l4, len = xrl_pkt_build(buf, sizeof(buf), &s, &l3, &l4);
	double v[5], x;
	int i, j;

	for (i = 0; i < 5; i++) {
		struct timespec a, b;

		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		xrl_tl_run(t->prog_fd, buf, len, 200000, NULL);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		v[i] = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 200000;
	}
	for (i = 0; i < 5; i++)
		for (j = i + 1; j < 5; j++)
			if (v[j] < v[i]) {
				x = v[i];
				v[i] = v[j];
				v[j] = x;
			}
	return v[2];
}

static void test_cost(void **state)
{
	static const char *const r[] = { "0.0.0.0/0 --allow", NULL };
	struct xrl_tl t;
	double off, on, hit;
	__u8 a[4] = { 10, 9, 0, 5 };

	(void)state;
	tl_start(&t, 4096, r, 5000 * SEC_NS);
	off = cost(&t, "10.9.0.6");
	assert_int_equal(xrl_escalate_add(&t.maps, 4, a, 5000 * SEC_NS, 60 * SEC_NS, "x", 4, 3), 0);
	on = cost(&t, "10.9.0.6");
	hit = cost(&t, "10.9.0.5");
	printf("escalation check, ns/packet (allow rule, test clock, median of 5 x 200000): "
	       "none written %.1f, written and not this source %.1f (+%.1f), escalated source "
	       "dropped %.1f\n", off, on, on - off, hit);
	xrl_tl_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escalated),
		cmocka_unit_test(test_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
