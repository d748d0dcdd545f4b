// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host tests of the SYN proxy's pure logic (bpf/xrl_synproxy.h): SipHash-2-4
 * against the reference vectors, the cookie against values computed by an
 * independent implementation (a Python SipHash of the same words), its
 * lifetime in slots, the options walk, the SYN-ACK's headers and checksums,
 * and what an ACK's echoed timestamp gives the kernel.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "xrl_synproxy.h"

#define SLOT_NS (1ull << XRL_SP_SLOT_SHIFT)

static const __u64 ref_key[2] = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };
static const __u64 key[2] = { 0x0123456789abcdefull, 0xfedcba9876543210ull };

/* SipHash-2-4 of whole 8-byte words, little-endian, as the reference's byte messages */
static __u64 sip_words(const __u64 k[2], const __u64 *w, __u32 n)
{
	struct xrl_sip s;
	__u32 i;

	xrl_sip_init(&s, k);
	for (i = 0; i < n; i++)
		xrl_sip_word(&s, w[i]);
	return xrl_sip_final(&s, n);
}

static void test_siphash_vectors(void **state)
{
	/* the reference vectors of the SipHash paper: messages 00, 00..07, 00..0f (none, 8, 16 bytes) */
	const __u64 m[2] = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };

	(void)state;
	assert_true(sip_words(ref_key, m, 0) == 0x726fdb47dd0e0e31ull);
	assert_true(sip_words(ref_key, m, 1) == 0x93f5f5799a932462ull);
	assert_true(sip_words(ref_key, m, 2) == 0x3f2acc7f57c29bdbull);
}

static struct xrl_sp_tuple tuple4(void)
{
	struct xrl_sp_tuple t = { .family = 4 };

	inet_pton(AF_INET, "198.18.0.2", &t.saddr[0]);
	inet_pton(AF_INET, "198.18.0.1", &t.daddr[0]);
	t.sport = htons(40000);
	t.dport = htons(8080);
	return t;
}

static struct xrl_sp_tuple tuple6(void)
{
	struct xrl_sp_tuple t = { .family = 6 };

	inet_pton(AF_INET6, "fd00:18::2", t.saddr);
	inet_pton(AF_INET6, "fd00:18::1", t.daddr);
	t.sport = htons(40000);
	t.dport = htons(8080);
	return t;
}

static void test_cookie_known_answers(void **state)
{
	struct xrl_sp_tuple t4 = tuple4(), t6 = tuple6();
	__u64 now = 100000000000ull;   /* 100 s: slot 1 */

	(void)state;
	/* computed by a Python SipHash-2-4 of the same words (the header's comment) */
	assert_int_equal(xrl_sp_cookie(key, &t4, 0x11223344, now, 3), 0x6e1a69f7);
	assert_int_equal(xrl_sp_cookie(key, &t6, 0x11223344, now, 2), 0x95ff23d6);
	/* the low bits: the slot's parity and the MSS index */
	assert_int_equal(0x6e1a69f7 & 7, 1 << 2 | 3);
}

static void test_cookie_check(void **state)
{
	struct xrl_sp_tuple t = tuple4(), o;
	__u64 now = 5 * SLOT_NS + 12345;
	__u32 c = xrl_sp_cookie(key, &t, 777, now, 2);

	(void)state;
	assert_int_equal(xrl_sp_check(key, &t, 777, c, now), 2);
	/* valid in its slot and the next one, to the last ns */
	assert_int_equal(xrl_sp_check(key, &t, 777, c, 6 * SLOT_NS), 2);
	assert_int_equal(xrl_sp_check(key, &t, 777, c, 7 * SLOT_NS - 1), 2);
	/* expired from the slot after that */
	assert_int_equal(xrl_sp_check(key, &t, 777, c, 7 * SLOT_NS), -1);
	/* not valid before it was made (a slot earlier has the other parity: the slot before that) */
	assert_int_equal(xrl_sp_check(key, &t, 777, c, 4 * SLOT_NS), -1);
	/* everything it covers */
	assert_int_equal(xrl_sp_check(key, &t, 778, c, now), -1);
	assert_int_equal(xrl_sp_check(key, &t, 777, c ^ 0x100, now), -1);
	assert_int_equal(xrl_sp_check(key, &t, 777, c ^ 1, now), -1);   /* another MSS index */
	o = t;
	o.sport = htons(40001);
	assert_int_equal(xrl_sp_check(key, &o, 777, c, now), -1);
	o = t;
	o.dport = htons(8081);
	assert_int_equal(xrl_sp_check(key, &o, 777, c, now), -1);
	o = t;
	o.saddr[0] ^= htonl(1);
	assert_int_equal(xrl_sp_check(key, &o, 777, c, now), -1);
	{
		const __u64 other[2] = { key[0], key[1] ^ 1 };

		assert_int_equal(xrl_sp_check(other, &t, 777, c, now), -1);
	}
	/* slot 0: no slot before it */
	c = xrl_sp_cookie(key, &t, 1, 10, 0);
	assert_int_equal(xrl_sp_check(key, &t, 1, c, 10), 0);
	assert_int_equal(xrl_sp_check(key, &t, 1, c | 4, 10), -1);
}

static void test_mss_index(void **state)
{
	(void)state;
	assert_int_equal(xrl_sp_mss_index(4, 1460), 3);
	assert_int_equal(xrl_sp_mss_index(4, 65495), 3);
	assert_int_equal(xrl_sp_mss_index(4, 1459), 2);
	assert_int_equal(xrl_sp_mss_index(4, 1300), 1);
	assert_int_equal(xrl_sp_mss_index(4, 536), 0);
	assert_int_equal(xrl_sp_mss_index(4, 100), 0);
	assert_int_equal(xrl_sp_mss_index(6, 1440), 2);
	assert_int_equal(xrl_sp_mss_index(6, 9000), 3);
	assert_int_equal(xrl_sp_mss(6, 0), 1220);
}

static void parse(const __u8 *o, __u32 len, struct xrl_sp_opts *out)
{
	struct xrl_sp_optwalk w;

	memset(&w, 0, sizeof(w));
	memcpy(w.o, o, len);
	xrl_sp_parse_opts(&w, len);
	*out = w.out;
}

static void test_options(void **state)
{
	/* Linux's SYN: MSS 1460, SACK permitted, TS 0x01020304/0, NOP, WS 10 */
	const __u8 linux_syn[20] = { 2, 4, 0x05, 0xb4, 4, 2, 8, 10, 1, 2, 3, 4, 0, 0, 0, 0, 1, 3, 3, 10 };
	/* without timestamps: MSS, NOP NOP SACK permitted, NOP WS 7 */
	const __u8 no_ts[12] = { 2, 4, 0x05, 0x8c, 1, 1, 4, 2, 1, 3, 3, 7 };
	/* an ACK: NOP NOP TS */
	const __u8 ack[12] = { 1, 1, 8, 10, 0, 0, 0, 9, 0xaa, 0xbb, 0xcc, 0xd5 };
	/* a length that runs past the options: what came before it is kept */
	const __u8 bad[8] = { 2, 4, 0x02, 0x18, 3, 9, 7, 0 };
	const __u8 zero_len[6] = { 2, 4, 0x05, 0xb4, 4, 0 };
	const __u8 big_ws[4] = { 1, 3, 3, 20 };
	struct xrl_sp_opts o;

	(void)state;
	parse(linux_syn, sizeof(linux_syn), &o);
	assert_int_equal(o.mss, 1460);
	assert_int_equal(o.sack, 1);
	assert_int_equal(o.ts, 1);
	assert_true(o.tsval == 0x01020304 && o.tsecr == 0);
	assert_int_equal(o.wscale, 10);
	parse(no_ts, sizeof(no_ts), &o);
	assert_true(o.mss == 1420 && o.sack == 1 && o.ts == 0 && o.wscale == 7);
	parse(ack, sizeof(ack), &o);
	assert_true(o.ts == 1 && o.tsval == 9 && o.tsecr == 0xaabbccd5 && o.mss == 0 &&
		    o.wscale == XRL_SP_WSCALE_NONE);
	parse(bad, sizeof(bad), &o);
	assert_true(o.mss == 536 && o.wscale == XRL_SP_WSCALE_NONE);
	parse(zero_len, sizeof(zero_len), &o);
	assert_true(o.mss == 1460 && o.sack == 0);
	parse(big_ws, sizeof(big_ws), &o);
	assert_int_equal(o.wscale, XRL_SP_MAX_WSCALE);
	parse(linux_syn, 0, &o);
	assert_true(o.mss == 0 && o.ts == 0 && o.wscale == XRL_SP_WSCALE_NONE);
}

/* one's-complement sum of len bytes (even) in network order words */
static __u32 sum16(const __u8 *p, size_t len, __u32 s)
{
	size_t i;

	for (i = 0; i < len; i += 2)
		s += (__u32)p[i] << 8 | p[i + 1];
	return s;
}

static __u16 fold(__u32 s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/* the TCP checksum of th over the pseudo header from src to dst verifies (sums to 0xffff) */
static int tcp_sum_ok(const struct xrl_sp_tuple *t, const __u8 *th, __u32 len)
{
	const __u8 *s = (const __u8 *)t->daddr, *d = (const __u8 *)t->saddr;   /* the SYN-ACK's */
	__u32 alen = t->family == 4 ? 4 : 16, sum;

	sum = sum16(s, alen, 0);
	sum = sum16(d, alen, sum);
	sum += 6 + len;
	sum = sum16(th, len, sum);
	return fold(sum) == 0xffff;
}

static __u32 be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static void test_synack_with_timestamps(void **state)
{
	struct xrl_sp_syn syn = { .t = tuple4(), .seq = 0xfffffffe, .flags = XRL_TH_SYN };
	__u8 th[60], ip[20];
	__u32 len, cookie = 0xabcdef12;

	(void)state;
	syn.o = (struct xrl_sp_opts){ .mss = 1460, .wscale = 10, .sack = 1, .ts = 1, .tsval = 0x01020304 };
	len = xrl_sp_synack(&syn, cookie, 3, 0x12345678, th);
	assert_int_equal(len, 40);
	assert_true(th[0] == 0x1f && th[1] == 0x90 && th[2] == 0x9c && th[3] == 0x40);   /* 8080 -> 40000 */
	assert_int_equal(be32(th + 4), cookie);
	assert_int_equal(be32(th + 8), 0xffffffff);   /* ISN + 1 */
	assert_int_equal(th[12], 10 << 4);
	assert_int_equal(th[13], XRL_TH_SYN | XRL_TH_ACK);
	/* MSS 1460, SACK permitted + TS, NOP WS 7 */
	assert_true(th[20] == 2 && th[21] == 4 && th[22] == 0x05 && th[23] == 0xb4);
	assert_true(th[24] == 4 && th[25] == 2 && th[26] == 8 && th[27] == 10);
	/* tsval: the clock's, its low 6 bits the options (WS 10, SACK) */
	assert_int_equal(be32(th + 28), (0x12345678 & ~0x3fu) | 10 | XRL_SP_TS_SACK);
	assert_int_equal(be32(th + 32), 0x01020304);
	assert_true(th[36] == 1 && th[37] == 3 && th[38] == 3 && th[39] == XRL_SP_RCV_WSCALE);
	assert_true(tcp_sum_ok(&syn.t, th, len));
	xrl_sp_ip4(&syn.t, len, ip);
	assert_true(ip[0] == 0x45 && ip[2] == 0 && ip[3] == 60 && ip[8] == 64 && ip[9] == 6);
	assert_memory_equal(ip + 12, &syn.t.daddr[0], 4);
	assert_memory_equal(ip + 16, &syn.t.saddr[0], 4);
	assert_int_equal(fold(sum16(ip, 20, 0)), 0xffff);
}

static void test_synack_without_timestamps(void **state)
{
	/* no timestamps: only the MSS is kept, as the kernel's cookies keep it */
	struct xrl_sp_syn syn = { .t = tuple6(), .seq = 5, .flags = XRL_TH_SYN | XRL_TH_ECE | XRL_TH_CWR };
	__u8 th[60], ip[40];
	__u32 len;

	(void)state;
	syn.o = (struct xrl_sp_opts){ .mss = 1440, .wscale = 7, .sack = 1, .ts = 0 };
	len = xrl_sp_synack(&syn, 99, 2, 0, th);
	assert_int_equal(len, 24);
	assert_int_equal(th[13], XRL_TH_SYN | XRL_TH_ACK);   /* no ECN without timestamps */
	assert_true(th[20] == 2 && th[22] == 0x05 && th[23] == 0xa0);
	assert_true(tcp_sum_ok(&syn.t, th, len));
	xrl_sp_ip6(&syn.t, len, ip);
	assert_true(ip[0] == 0x60 && ip[4] == 0 && ip[5] == 24 && ip[6] == 6 && ip[7] == 64);
	assert_memory_equal(ip + 8, syn.t.daddr, 16);
	assert_memory_equal(ip + 24, syn.t.saddr, 16);
	/* timestamps, no window scale, ECN asked: two NOPs, WS none in the tsval, ECE */
	syn.o = (struct xrl_sp_opts){ .mss = 1440, .wscale = XRL_SP_WSCALE_NONE, .ts = 1, .tsval = 1 };
	len = xrl_sp_synack(&syn, 99, 2, 0x40, th);
	assert_int_equal(len, 36);
	assert_int_equal(th[13], XRL_TH_SYN | XRL_TH_ACK | XRL_TH_ECE);
	assert_true(th[24] == 1 && th[25] == 1);
	assert_int_equal(be32(th + 28), 0x40 | XRL_SP_WSCALE_NONE | XRL_SP_TS_ECN);
	assert_true(tcp_sum_ok(&syn.t, th, len));
}

static void test_attrs_of_ack(void **state)
{
	struct xrl_sp_opts ack = { .ts = 1, .tsval = 777, .tsecr = 0x12340000 | 9 | XRL_SP_TS_SACK };
	struct xrl_sp_attrs a;

	(void)state;
	xrl_sp_attrs_of(4, 3, &ack, &a);
	assert_int_equal(a.mss, 1460);
	assert_true(a.tstamp_ok && a.rcv_tsval == 777 && a.rcv_tsecr == ack.tsecr);
	assert_true(a.wscale_ok && a.snd_wscale == 9 && a.rcv_wscale == XRL_SP_RCV_WSCALE);
	assert_true(a.sack_ok && !a.ecn_ok && !a.usec_ts_ok);
	ack.tsecr = 0x40 | XRL_SP_WSCALE_NONE | XRL_SP_TS_ECN;
	xrl_sp_attrs_of(6, 0, &ack, &a);
	assert_true(a.mss == 1220 && !a.wscale_ok && !a.sack_ok && a.ecn_ok);
	ack.ts = 0;
	xrl_sp_attrs_of(4, 1, &ack, &a);
	assert_true(a.mss == 1300 && !a.tstamp_ok && !a.wscale_ok && !a.sack_ok && !a.rcv_tsecr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_siphash_vectors),
		cmocka_unit_test(test_cookie_known_answers),
		cmocka_unit_test(test_cookie_check),
		cmocka_unit_test(test_mss_index),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_synack_with_timestamps),
		cmocka_unit_test(test_synack_without_timestamps),
		cmocka_unit_test(test_attrs_of_ack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
