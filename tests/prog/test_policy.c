// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rule policies through the real XDP object (test-clock build, exact time):
 * --shadow passes everything with exact would-drop counts, --block's penalty
 * box holds for its duration from the first drop and releases, and a
 * byte-only rule (--bytes without --rate) limits bytes and not packets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <cmocka.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xrl_tl_assert.h"
#include "xrl_rule.h"

#define SEC_NS 1000000000ULL

/* A UDP frame from src to port 53 with payload bytes after the header. */
static struct xrl_pkt_spec frame(int family, const char *src, int payload)
{
	struct xrl_pkt_spec s = { .family = family, .src = src,
				  .dst = family == 4 ? "192.0.2.1" : "2001:db8:ffff::1",
				  .dport = 53, .payload = payload };

	return s;
}

static int sendp(struct xrl_tl *t, int family, const char *src, int payload)
{
	struct xrl_pkt_spec s = frame(family, src, payload);

	return tl_send(t, &s);
}

/* Packets of n sent from src that passed. */
static int sendn(struct xrl_tl *t, int family, const char *src, int n)
{
	struct xrl_pkt_spec s = frame(family, src, 0);

	return tl_passed(t, &s, n);
}

/* The events of one type the data path wrote since the last call (0: any), into evs. */
#define MAX_EV 64
static struct xrl_event evs[MAX_EV];
static int nev;
static __u32 ev_type;

static int on_ev(void *ctx, void *data, size_t size)
{
	const struct xrl_event *ev = data;

	(void)ctx;
	assert_true(size >= sizeof(struct xrl_event));
	if (nev < MAX_EV && (!ev_type || ev->type == ev_type))
		memcpy(&evs[nev++], data, sizeof(struct xrl_event));
	return 0;
}

static int events(struct xrl_tl *t, __u32 type)
{
	struct ring_buffer *rb = ring_buffer__new(t->maps.events, on_ev, NULL, NULL);

	assert_non_null(rb);
	nev = 0;
	ev_type = type;
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	return nev;
}

static struct xrl_bucket_key key4(struct xrl_tl *t, const char *rule, const char *addr)
{
	struct xrl_bucket_key k = { .family = 4 };
	int id = xrl_tl_rule_id(t, rule);

	assert_true(id >= 0);
	k.rule_id = (__u32)id;
	assert_int_equal(inet_pton(AF_INET, addr, &k.addr[0]), 1);
	return k;
}

/*
 * The same traffic through an enforcing rule and its shadow twin: the
 * shadow rule passes every packet, counts exactly what the enforcing one
 * drops as shadow_dropped (packets and bytes), and admits the same; the
 * instance drops nothing for it. IPv4 and IPv6 with --per.
 */
static void test_shadow(void **state)
{
	static const char *const r[] = {
		"10.1.0.0/16 --rate 5/s --burst 10",
		"10.2.0.0/16 --rate 5/s --burst 10 --shadow",
		"2001:db8:2::/48 --rate 5/s --burst 10 --per 48 --shadow",
		NULL,
	};
	const __u64 t0 = 1000 * SEC_NS;
	struct xrl_rule_stats a, b, c;
	struct xrl_global_stats g;
	struct xrl_tl t;

	(void)state;
	tl_start(&t, 4096, r, t0);
	/* the token bucket's case: 20 at t=0 give 10/10, 10 at t=1 s give 5/5 */
	assert_int_equal(sendn(&t, 4, "10.1.0.1", 20), 10);
	assert_int_equal(sendn(&t, 4, "10.2.0.1", 20), 20);
	assert_int_equal(sendn(&t, 6, "2001:db8:2::1", 10), 10);
	assert_int_equal(sendn(&t, 6, "2001:db8:2:1::1", 10), 10);   /* the same /48 */
	xrl_tl_set_clock(&t, t0 + SEC_NS);
	assert_int_equal(sendn(&t, 4, "10.1.0.1", 10), 5);
	assert_int_equal(sendn(&t, 4, "10.2.0.1", 10), 10);
	assert_int_equal(sendn(&t, 6, "2001:db8:2:2::1", 10), 10);
	a = tl_rstats(&t, "10.1.0.0/16");
	b = tl_rstats(&t, "10.2.0.0/16");
	c = tl_rstats(&t, "2001:db8:2::/48");
	assert_int_equal(a.passed, 15);
	assert_int_equal(a.dropped, 15);
	assert_int_equal(b.passed, 15);           /* what it admitted: as the enforcing rule */
	assert_int_equal(b.shadow_dropped, 15);   /* what it would have dropped: passed */
	assert_int_equal(b.dropped, 0);
	assert_int_equal(b.shadow_dropped_bytes, a.dropped_bytes);
	assert_int_equal(a.shadow_dropped, 0);
	assert_int_equal(c.passed, 15);
	assert_int_equal(c.shadow_dropped, 15);
	assert_int_equal(c.dropped, 0);
	g = tl_gstats(&t);
	assert_int_equal(g.dropped, 15);   /* the enforcing rule's only */
	xrl_tl_close(&t);
}

/*
 * A shadow rule's would-drops make limit events like real drops (sampled
 * the same: 1 in 64 of the rule's would-drops on a CPU), marked shadow.
 */
static void test_shadow_events(void **state)
{
	static const char *const r[] = {
		"10.1.0.0/16 --rate 5/s --burst 10 --shadow",
		NULL,
	};
	struct xrl_tl t;

	(void)state;
	tl_start(&t, 4096, r, 1000 * SEC_NS);
	events(&t, 0);
	assert_int_equal(sendn(&t, 4, "10.1.0.1", 10 + 200), 210);
	assert_int_equal(events(&t, 0), 1);
	assert_int_equal(evs[0].type, XRL_EV_LIMITED);
	assert_true(evs[0].policy & XRL_P_SHADOW);
	xrl_tl_close(&t);
}

/*
 * --block 30s: the source's first drop blocks it for 30 s from then; every
 * packet of it is dropped meanwhile (counted in blocked and dropped) though
 * its bucket refills; at 30 s it is judged by its full bucket again, and
 * blocked again at its next drop. A second abuser of the rule is blocked on
 * its own drop, on its own clock, and a source under its limit never is.
 */
static void test_block(void **state)
{
	static const char *const r[] = {
		"10.3.0.0/16 --rate 5/s --burst 5 --block 30s --block-spoofable",
		NULL,
	};
	const char *rule = "10.3.0.0/16";
	const __u64 t0 = 2000 * SEC_NS;
	struct xrl_bucket_key ka, kb;
	struct xrl_rule_stats s;
	struct xrl_block blk;
	struct xrl_tl t;
	int i;

	(void)state;
	assert_int_equal(xrl_tl_open(&t, 4096, XRL_MALFORMED_PASS), 0);
	tl_rules(&t, r);
	ka = key4(&t, rule, "10.3.0.1");
	kb = key4(&t, rule, "10.3.0.2");
	xrl_tl_set_clock(&t, t0);
	events(&t, 0);
	assert_int_equal(sendn(&t, 4, "10.3.0.1", 6), 5);   /* the 6th is its first drop */
	assert_int_equal(bpf_map_lookup_elem(t.maps.blocked, &ka, &blk), 0);
	assert_int_equal(blk.since_ns, t0);
	assert_int_equal(blk.until_ns, t0 + 30 * SEC_NS);
	assert_int_equal(events(&t, XRL_EV_BLOCKED), 1);
	assert_int_equal(evs[0].until_ns, t0 + 30 * SEC_NS);
	assert_int_equal(evs[0].prev_until_ns, 0);
	assert_memory_equal(&evs[0].key, &ka, sizeof(ka));

	/* 10 s on its bucket is full again, but it is blocked: everything dropped */
	xrl_tl_set_clock(&t, t0 + 10 * SEC_NS);
	assert_int_equal(sendn(&t, 4, "10.3.0.1", 3), 0);
	/* the second abuser: its burst, then its own block from its own first drop */
	assert_int_equal(sendn(&t, 4, "10.3.0.2", 7), 5);
	assert_int_equal(bpf_map_lookup_elem(t.maps.blocked, &kb, &blk), 0);
	assert_int_equal(blk.until_ns, t0 + 40 * SEC_NS);
	/* a well-behaved source of the rule passes throughout */
	for (i = 0; i < 5; i++)
		assert_int_equal(sendp(&t, 4, "10.3.0.3", 0), XDP_PASS);
	s = tl_rstats(&t, rule);
	assert_int_equal(s.blocked, 3 + 1);   /* 10.3.0.2's 7th was blocked, its 6th the drop */
	assert_int_equal(s.dropped, 1 + 3 + 2);
	assert_int_equal(s.passed, 5 + 5 + 5);

	/* the last ns of the block, then its end: the full bucket's burst, then blocked again */
	xrl_tl_set_clock(&t, t0 + 30 * SEC_NS - 1);
	assert_int_equal(sendn(&t, 4, "10.3.0.1", 2), 0);
	xrl_tl_set_clock(&t, t0 + 30 * SEC_NS);
	events(&t, 0);
	assert_int_equal(sendn(&t, 4, "10.3.0.1", 8), 5);
	assert_int_equal(bpf_map_lookup_elem(t.maps.blocked, &ka, &blk), 0);
	assert_int_equal(blk.since_ns, t0 + 30 * SEC_NS);
	assert_int_equal(blk.until_ns, t0 + 60 * SEC_NS);
	/* the new block's event says the last one ended, unlogged */
	assert_int_equal(events(&t, XRL_EV_BLOCKED), 1);
	assert_int_equal(evs[0].prev_until_ns, t0 + 30 * SEC_NS);
	/* the second abuser still blocked, on its own clock, until t0 + 40 s */
	assert_int_equal(sendn(&t, 4, "10.3.0.2", 1), 0);
	xrl_tl_set_clock(&t, t0 + 40 * SEC_NS);
	assert_int_equal(sendn(&t, 4, "10.3.0.2", 5), 5);
	s = tl_rstats(&t, rule);
	assert_int_equal(s.blocked, 4 + 2 + 2 + 1);
	assert_int_equal(s.dropped, 6 + 2 + 1 + 2 + 1);
	assert_int_equal(s.passed, 15 + 5 + 5);
	/* released early (as `xrl block del` does): judged by its bucket at once */
	assert_int_equal(bpf_map_lookup_elem(t.maps.blocked, &ka, &blk), 0);
	blk.until_ns = t0 + 40 * SEC_NS;
	blk.released = 1;
	assert_int_equal(bpf_map_update_elem(t.maps.blocked, &ka, &blk, BPF_EXIST), 0);
	assert_int_equal(sendn(&t, 4, "10.3.0.1", 5), 5);
	xrl_tl_close(&t);
}

/*
 * A change of the rule (a new version: its buckets restart full) releases
 * its blocks: a block holds only for the version it started under. Its
 * counters start afresh too.
 */
static void test_block_rule_change(void **state)
{
	static const char *const r1[] = { "10.8.0.0/16 --rate 5/s --burst 5 --block 1h --block-spoofable", NULL };
	static const char *const r2[] = { "10.8.0.0/16 --rate 5/s --burst 5 --block 2h --block-spoofable", NULL };
	const __u64 t0 = 6000 * SEC_NS;
	struct xrl_tl t;

	(void)state;
	tl_start(&t, 4096, r1, t0);
	assert_int_equal(sendn(&t, 4, "10.8.0.1", 6), 5);
	xrl_tl_set_clock(&t, t0 + 10 * SEC_NS);
	assert_int_equal(sendn(&t, 4, "10.8.0.1", 2), 0);   /* blocked for the hour */
	tl_rules(&t, r2);
	assert_int_equal(sendn(&t, 4, "10.8.0.1", 6), 5);   /* a full bucket, then blocked anew */
	assert_int_equal(sendn(&t, 4, "10.8.0.1", 1), 0);
	/* a changed rule counts afresh: the new version's block only */
	assert_int_equal(tl_rstats(&t, "10.8.0.0/16").blocked, 1);
	xrl_tl_close(&t);
}

/*
 * --block with IPv6 and --per 64: the /64 is the source; another /64 is
 * not touched. A shadow rule's block is shadow: counted, nothing dropped.
 */
static void test_block_v6_shadow(void **state)
{
	static const char *const r[] = {
		"2001:db8:7::/48 --rate 2/s --burst 2 --per 64 --block 1m --block-spoofable",
		"10.4.0.0/16 --rate 2/s --burst 2 --block 10s --block-spoofable --shadow",
		NULL,
	};
	const __u64 t0 = 3000 * SEC_NS;
	struct xrl_rule_stats s;
	struct xrl_tl t;

	(void)state;
	tl_start(&t, 4096, r, t0);
	assert_int_equal(sendn(&t, 6, "2001:db8:7:1::1", 3), 2);
	xrl_tl_set_clock(&t, t0 + 59 * SEC_NS);
	assert_int_equal(sendn(&t, 6, "2001:db8:7:1::2", 2), 0);   /* the same /64: blocked */
	assert_int_equal(sendn(&t, 6, "2001:db8:7:2::1", 2), 2);   /* another /64 */
	xrl_tl_set_clock(&t, t0 + 60 * SEC_NS);
	assert_int_equal(sendn(&t, 6, "2001:db8:7:1::2", 2), 2);
	s = tl_rstats(&t, "2001:db8:7::/48");
	assert_int_equal(s.blocked, 2);
	assert_int_equal(s.dropped, 3);

	/* shadow: the block starts at the would-drop and counts, but passes */
	xrl_tl_set_clock(&t, t0);
	assert_int_equal(sendn(&t, 4, "10.4.0.1", 3), 3);
	xrl_tl_set_clock(&t, t0 + 5 * SEC_NS);
	assert_int_equal(sendn(&t, 4, "10.4.0.1", 4), 4);
	xrl_tl_set_clock(&t, t0 + 10 * SEC_NS);
	assert_int_equal(sendn(&t, 4, "10.4.0.1", 3), 3);
	s = tl_rstats(&t, "10.4.0.0/16");
	assert_int_equal(s.passed, 2 + 2);
	assert_int_equal(s.blocked, 4);
	assert_int_equal(s.shadow_dropped, 1 + 4 + 1);
	assert_int_equal(s.dropped, 0);
	assert_int_equal(tl_gstats(&t).dropped, 3);
	xrl_tl_close(&t);
}

/*
 * Drops that are not the source's own excess do not block: a source refused
 * by the rule's aggregate cap (--total) or its new-source budget
 * (--new-sources) is not put in the penalty box.
 */
static void test_block_own_excess_only(void **state)
{
	static const char *const r[] = {
		"10.5.0.0/16 --rate 10/s --total 3/s --total-burst 3 --block 30s --block-spoofable",
		"10.6.0.0/16 --rate 10/s --new-sources 1/m --new-burst 2 --block 30s --block-spoofable",
		NULL,
	};
	char src[32];
	struct xrl_tl t;
	int i, pass = 0;

	(void)state;
	tl_start(&t, 4096, r, 4000 * SEC_NS);
	for (i = 0; i < 6; i++) {
		snprintf(src, sizeof(src), "10.5.0.%d", i + 1);
		pass += sendp(&t, 4, src, 0) == XDP_PASS;
		snprintf(src, sizeof(src), "10.6.0.%d", i + 1);
		pass += sendp(&t, 4, src, 0) == XDP_PASS;
	}
	assert_int_equal(pass, 3 + 2);
	assert_int_equal(tl_rstats(&t, "10.5.0.0/16").total_refused, 3);
	assert_int_equal(tl_rstats(&t, "10.6.0.0/16").new_refused, 4);
	assert_int_equal(tl_rstats(&t, "10.5.0.0/16").blocked + tl_rstats(&t, "10.6.0.0/16").blocked, 0);
	{
		struct xrl_bucket_key next;

		/* nothing in the penalty box */
		assert_int_not_equal(bpf_map_get_next_key(t.maps.blocked, NULL, &next), 0);
	}
	xrl_tl_close(&t);
}

/*
 * A byte-only rule: --bytes 1000 --bytes-burst 3000 without --rate. 1000-byte
 * frames: 3 at once, then 1 a second; small frames are limited by their
 * bytes only (no packet bucket: 50 minimum-size frames of 60 bytes fit the burst).
 */
static void test_bytes_only(void **state)
{
	static const char *const r[] = {
		"10.7.0.0/16 --bytes 1000 --bytes-burst 3000",
		NULL,
	};
	const __u64 t0 = 5000 * SEC_NS;
	struct xrl_rule_stats s;
	struct xrl_tl t;
	int i, pass = 0;

	(void)state;
	tl_start(&t, 4096, r, t0);
	/* 14 + 20 + 8 + 958 = 1000 bytes */
	for (i = 0; i < 5; i++)
		pass += sendp(&t, 4, "10.7.0.1", 958) == XDP_PASS;
	assert_int_equal(pass, 3);
	xrl_tl_set_clock(&t, t0 + SEC_NS);
	for (pass = 0, i = 0; i < 3; i++)
		pass += sendp(&t, 4, "10.7.0.1", 958) == XDP_PASS;
	assert_int_equal(pass, 1);
	s = tl_rstats(&t, "10.7.0.0/16");
	assert_int_equal(s.passed, 4);
	assert_int_equal(s.passed_bytes, 4000);
	assert_int_equal(s.dropped, 4);
	/* another source, 60-byte frames (42 padded to the Ethernet minimum): 3000 / 60 */
	assert_int_equal(sendn(&t, 4, "10.7.0.2", 100), 50);
	assert_int_equal(tl_rstats(&t, "10.7.0.0/16").passed_bytes, 4000 + 3000);
	xrl_tl_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shadow),
		cmocka_unit_test(test_shadow_events),
		cmocka_unit_test(test_block),
		cmocka_unit_test(test_block_rule_change),
		cmocka_unit_test(test_block_v6_shadow),
		cmocka_unit_test(test_block_own_excess_only),
		cmocka_unit_test(test_bytes_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
