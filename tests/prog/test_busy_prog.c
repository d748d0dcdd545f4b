// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Busy clients (bpf/xrl_busy.h) through the real XDP object, on the exact
 * test clock: a source a --syn rule limits, then sends ACKs (no SYN, no
 * RST: established traffic the rule does not match) is marked seen; a
 * source that only sends SYNs (a spoofed one) is not; SYN-ACKs and RST-ACKs
 * do not mark; the marks are written at most every 100 ms; a sighting
 * (no connection behind it) holds no slot against another source's record
 * (a proven source does: tests/unit/test_busy.c), nor passes its mark on;
 * all of it ends with the window, and the gate closes. A bare ACK finds no
 * connection in the kernel here: seen, never proven. Also prints the
 * per-packet cost of the gate (closed, open for another source).
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
#include "xrl_busy.h"
#include "xrl_busy_read.h"

#define SEC_NS 1000000000ULL
#define MS_NS  1000000ULL
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_ACK 0x10

static const char *const syn_rule[] = {
	"0.0.0.0/0 --proto tcp --dport 80 --syn --rate 20/s --burst 40",
	"::/0 --proto tcp --dport 80 --syn --rate 20/s --burst 40",
	NULL,
};

static struct xrl_pkt_spec seg(const char *src, __u8 flags)
{
	struct xrl_pkt_spec s = { .family = strchr(src, ':') ? 6 : 4, .src = src, .proto = 6,
				  .sport = 40000, .dport = 80, .tcp_flags = flags };

	s.dst = s.family == 4 ? "192.0.2.1" : "2001:db8:ffff::1";
	return s;
}

/* n copies of one segment in one run (one CPU): the verdict of the last */
static int send_n(struct xrl_tl *t, const char *src, __u8 flags, __u32 n)
{
	struct xrl_pkt_spec s = seg(src, flags);
	__u8 buf[256];
	size_t l3, l4, len = xrl_pkt_build(buf, sizeof(buf), &s, &l3, &l4);

	return xrl_tl_run(t->prog_fd, buf, len, n, NULL);
}

/*
 * A source over its SYN limit: what is left of its burst of 40 passes, then
 * 64 SYNs in one run are dropped, one of which is the CPU's sampled drop
 * (1 in 64).
 */
static void syn_flood(struct xrl_tl *t, const char *src)
{
	send_n(t, src, TH_SYN, 40);
	assert_int_equal(send_n(t, src, TH_SYN, 64), XDP_DROP);
}

static struct xrl_bucket_key key_of(struct xrl_tl *t, const char *src)
{
	struct xrl_bucket_key k = { 0 };
	int v6 = strchr(src, ':') != NULL;

	k.family = v6 ? 6 : 4;
	k.rule_id = (__u32)xrl_tl_rule_id(t, v6 ? "::/0" : "0.0.0.0/0");
	inet_pton(v6 ? AF_INET6 : AF_INET, src, k.addr);
	if (v6)
		k.addr[2] = k.addr[3] = 0;   /* the rule's /per: 64 */
	return k;
}

static struct xrl_busy_slot slot_of(struct xrl_tl *t, const char *src)
{
	struct xrl_bucket_key k = key_of(t, src);
	struct xrl_busy_slot s;

	assert_int_equal(xrl_busy_read(&t->maps, &k, &s), 0);
	return s;
}

/* xrl_busy_read of a source that should have no slot: its -errno */
static int absent(struct xrl_tl *t, const char *src)
{
	struct xrl_bucket_key k = key_of(t, src);
	struct xrl_busy_slot s;

	return xrl_busy_read(&t->maps, &k, &s);
}

static int mark(struct xrl_tl *t, const char *src, __u64 now)
{
	struct xrl_bucket_key k = key_of(t, src);

	return xrl_busy_mark_of(&t->maps, &k, now);
}

static __u64 gate(struct xrl_tl *t)
{
	__u32 zero = 0;
	__u64 v = ~0ULL;

	assert_int_equal(bpf_map_lookup_elem(t->maps.busy_on, &zero, &v), 0);
	return v;
}

static void test_busy_marked(void **state)
{
	const __u64 t0 = 1000 * SEC_NS;
	struct xrl_busy_slot s;
	struct xrl_tl t;

	(void)state;
	tl_start(&t, 4096, syn_rule, t0);
	/* nothing limited: the gate is shut, an ACK looks nothing up */
	assert_int_equal(send_n(&t, "10.1.1.1", TH_ACK, 5), XDP_PASS);
	assert_int_equal(gate(&t), 0);

	/* a busy client and a spoofed address, both over the SYN limit */
	syn_flood(&t, "10.1.1.1");
	syn_flood(&t, "10.2.2.2");
	assert_int_equal(gate(&t), t0);
	s = slot_of(&t, "10.1.1.1");
	assert_int_equal(s.syn_ns, t0);
	assert_int_equal(s.seen_ns, 0);
	assert_int_equal(mark(&t, "10.1.1.1", t0), XRL_BUSY_MARK_NONE);

	/* 10 ms later the client's established connections send ACKs: seen, passed (no rule) */
	xrl_tl_set_clock(&t, t0 + 10 * MS_NS);
	assert_int_equal(send_n(&t, "10.1.1.1", TH_ACK, 3), XDP_PASS);
	s = slot_of(&t, "10.1.1.1");
	assert_int_equal(s.seen_ns, t0 + 10 * MS_NS);
	assert_int_equal(s.tried_ns, t0 + 10 * MS_NS);   /* the kernel was asked ... */
	assert_int_equal(s.proven_ns, 0);                /* ... and has no such connection */
	assert_int_equal(mark(&t, "10.1.1.1", t0 + 10 * MS_NS), XRL_BUSY_MARK_SEEN);

	/* the spoofed address sends SYNs only, and SYN-ACKs or RSTs mark nothing */
	assert_int_equal(send_n(&t, "10.2.2.2", TH_SYN | TH_ACK, 3), XDP_PASS);
	assert_int_equal(send_n(&t, "10.2.2.2", TH_RST | TH_ACK, 3), XDP_PASS);
	s = slot_of(&t, "10.2.2.2");
	assert_int_equal(s.seen_ns, 0);
	assert_int_equal(s.tried_ns, 0);
	assert_int_equal(mark(&t, "10.2.2.2", t0 + 10 * MS_NS), XRL_BUSY_MARK_NONE);
	/* an ACK from a source never limited marks nothing either */
	assert_int_equal(send_n(&t, "10.3.3.3", TH_ACK, 3), XDP_PASS);
	assert_int_equal(absent(&t, "10.3.3.3"), -ENOENT);

	/* stamps are rewritten at most every 100 ms: 99 ms later nothing moves, at 100 ms it does */
	xrl_tl_set_clock(&t, t0 + 109 * MS_NS);
	assert_int_equal(send_n(&t, "10.1.1.1", TH_ACK, 1000), XDP_PASS);
	s = slot_of(&t, "10.1.1.1");
	assert_int_equal(s.seen_ns, t0 + 10 * MS_NS);
	assert_int_equal(s.tried_ns, t0 + 10 * MS_NS);
	xrl_tl_set_clock(&t, t0 + 110 * MS_NS);
	assert_int_equal(send_n(&t, "10.1.1.1", TH_ACK, 1), XDP_PASS);
	assert_int_equal(slot_of(&t, "10.1.1.1").seen_ns, t0 + 110 * MS_NS);

	/* IPv6: the /64 is the source; an ACK from another address of it marks it */
	syn_flood(&t, "2001:db8:1:2::7");
	assert_int_equal(send_n(&t, "2001:db8:1:2::99", TH_ACK, 1), XDP_PASS);
	assert_int_equal(mark(&t, "2001:db8:1:2::", t0 + 110 * MS_NS), XRL_BUSY_MARK_SEEN);
	assert_int_equal(send_n(&t, "2001:db8:1:3::7", TH_ACK, 1), XDP_PASS);   /* another /64 */

	/* the mark holds the window (10 s) from the last SYN drop, then it is gone */
	assert_int_equal(mark(&t, "10.1.1.1", t0 + 10 * SEC_NS - 1), XRL_BUSY_MARK_SEEN);
	assert_int_equal(mark(&t, "10.1.1.1", t0 + 10 * SEC_NS), XRL_BUSY_MARK_NONE);
	/* an ACK after the window shuts the gate: nothing recorded lately */
	xrl_tl_set_clock(&t, t0 + 20 * SEC_NS);
	assert_int_equal(send_n(&t, "10.1.1.1", TH_ACK, 1), XDP_PASS);
	assert_int_equal(gate(&t), 0);
	assert_int_equal(slot_of(&t, "10.1.1.1").seen_ns, t0 + 110 * MS_NS);
	xrl_tl_close(&t);
}

/* An IPv4 address in 10.5/16 whose slot is the one of src, or NULL. */
static const char *same_slot(struct xrl_tl *t, const char *src, char *buf, size_t len)
{
	__u32 a, b[4] = { 0 }, want;
	int i;

	inet_pton(AF_INET, src, &a);
	want = xrl_busy_index(4, &a, xrl_tl_seed(t));
	for (i = 1; i < 65536; i++) {
		snprintf(buf, len, "10.5.%d.%d", i >> 8, i & 0xff);
		inet_pton(AF_INET, buf, b);
		if (xrl_busy_index(4, b, xrl_tl_seed(t)) == want)
			return buf;
	}
	return NULL;
}

static void test_busy_slots(void **state)
{
	const __u64 t0 = 2000 * SEC_NS;
	char buf[32], buf2[32];
	const char *other, *other2;
	struct xrl_tl t;

	(void)state;
	tl_start(&t, 4096, syn_rule, t0);
	other = same_slot(&t, "10.1.1.1", buf, sizeof(buf));
	assert_non_null(other);
	/* a spoofed source takes a free slot, and the next one takes it from it */
	syn_flood(&t, other);
	assert_int_equal(slot_of(&t, other).syn_ns, t0);
	syn_flood(&t, "10.1.1.1");
	assert_int_equal(absent(&t, other), -ENOENT);   /* spoofed, never marked: it gave way */
	assert_int_equal(slot_of(&t, "10.1.1.1").syn_ns, t0);
	/* seen (bare ACKs, no connection): it holds no slot against another record */
	assert_int_equal(send_n(&t, "10.1.1.1", TH_ACK, 1), XDP_PASS);
	assert_int_equal(mark(&t, "10.1.1.1", t0), XRL_BUSY_MARK_SEEN);
	xrl_tl_set_clock(&t, t0 + 1 * SEC_NS);
	other2 = same_slot(&t, "10.1.1.1", buf2, sizeof(buf2));
	syn_flood(&t, other2);
	assert_int_equal(absent(&t, "10.1.1.1"), -ENOENT);
	assert_int_equal(slot_of(&t, other2).syn_ns, t0 + 1 * SEC_NS);
	assert_int_equal(slot_of(&t, other2).seen_ns, 0);   /* the client's mark is not inherited */
	xrl_tl_close(&t);
}

/* ns per packet of a frame run repeat times, the median of 5 runs of the thread's CPU time */
static double cost(struct xrl_tl *t, const char *src)
{
	struct xrl_pkt_spec s = seg(src, TH_ACK);
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
	struct xrl_tl t;
	double off, on, mine;

	(void)state;
	tl_start(&t, 4096, syn_rule, 5000 * SEC_NS);
	off = cost(&t, "10.9.0.6");
	syn_flood(&t, "10.9.0.5");
	on = cost(&t, "10.9.0.6");
	mine = cost(&t, "10.9.0.5");
	printf("busy-client check, ns/ACK (a --syn rule, no rule for ACKs, test clock, median of "
	       "5 x 200000): gate shut %.1f, open and not this source %.1f (+%.1f), the limited "
	       "source itself %.1f\n", off, on, on - off, mine);
	xrl_tl_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_marked),
		cmocka_unit_test(test_busy_slots),
		cmocka_unit_test(test_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
