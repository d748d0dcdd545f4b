// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --syn-proxy through the whole XDP program (BPF_PROG_TEST_RUN of the test
 * clock build): a new source's SYN is answered in place (XDP_TX) with a
 * SYN-ACK whose cookie checks under the instance's key; its ACK passes with
 * the cookie's options in the frame's metadata for the tc program and
 * gives the source its bucket; an ACK with a random or expired cookie is
 * dropped and counted; a proven source is limited as any; IPv4, IPv6 and
 * an 802.1Q tag. The frames are written out field by field below.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/in.h>
#include <cmocka.h>
#include <bpf/bpf.h>

#include "xrl_tl_assert.h"
#include "xrl_synproxy.h"

#define SEC_NS 1000000000ULL
#define T0 (1000 * SEC_NS)
#define SLOT_NS (1ull << XRL_SP_SLOT_SHIFT)

static struct xrl_tl tl;
static __u64 key[2];

static const char *const rules[] = {
	"198.18.0.0/16 --proto tcp --dport 8080 --syn-proxy --rate 10/s --burst 10",
	"fd00:18::/64 --proto tcp --dport 8080 --syn-proxy --rate 10/s --burst 10",
	"198.19.0.0/16 --proto tcp --dport 9001-9002,8443 --syn-proxy --rate 10/s --burst 10",
	NULL,
};

/* A TCP segment as the tests write it. */
struct seg {
	int family;
	const char *src, *dst;
	__u16 sport, dport;
	__u32 seq, ack;
	__u8 flags;
	const __u8 *opts;   /* TCP options, a multiple of 4 bytes */
	int optlen;
	int vlan;           /* an 802.1Q tag (VID 100) */
};

static const __u8 client_mac[6] = { 0x02, 0, 0, 0, 0, 2 };
static const __u8 server_mac[6] = { 0x02, 0, 0, 0, 0, 1 };

/* Ethernet, maybe a tag, IPv4 or IPv6, TCP with options: the frame's length (checksums left 0). */
static size_t build(__u8 *f, const struct seg *s)
{
	size_t o = 0, ip, tcp, tl4 = 20 + (size_t)s->optlen;

	memset(f, 0, 128);
	memcpy(f, server_mac, 6);
	memcpy(f + 6, client_mac, 6);
	o = 12;
	if (s->vlan) {
		f[o] = 0x81, f[o + 1] = 0x00, f[o + 2] = 0x00, f[o + 3] = 100;
		o += 4;
	}
	f[o] = s->family == 4 ? 0x08 : 0x86;
	f[o + 1] = s->family == 4 ? 0x00 : 0xdd;
	ip = o + 2;
	if (s->family == 4) {
		f[ip] = 0x45;
		f[ip + 2] = (__u8)((20 + tl4) >> 8), f[ip + 3] = (__u8)(20 + tl4);
		f[ip + 6] = 0x40, f[ip + 8] = 64, f[ip + 9] = IPPROTO_TCP;
		inet_pton(AF_INET, s->src, f + ip + 12);
		inet_pton(AF_INET, s->dst, f + ip + 16);
		tcp = ip + 20;
	} else {
		f[ip] = 0x60;
		f[ip + 4] = (__u8)(tl4 >> 8), f[ip + 5] = (__u8)tl4;
		f[ip + 6] = IPPROTO_TCP, f[ip + 7] = 64;
		inet_pton(AF_INET6, s->src, f + ip + 8);
		inet_pton(AF_INET6, s->dst, f + ip + 24);
		tcp = ip + 40;
	}
	f[tcp] = (__u8)(s->sport >> 8), f[tcp + 1] = (__u8)s->sport;
	f[tcp + 2] = (__u8)(s->dport >> 8), f[tcp + 3] = (__u8)s->dport;
	xrl_sp_put32(f + tcp + 4, s->seq);
	xrl_sp_put32(f + tcp + 8, s->ack);
	f[tcp + 12] = (__u8)((tl4 / 4) << 4);
	f[tcp + 13] = s->flags;
	f[tcp + 14] = 0xfa, f[tcp + 15] = 0xf0;
	if (s->optlen)
		memcpy(f + tcp + 20, s->opts, (size_t)s->optlen);
	return tcp + tl4;
}

/* A run whose output frame (from its metadata on) is kept: the verdict. */
static int run(const __u8 *in, size_t len, __u8 *out, __u32 *out_len)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (__u32)len,
		    .data_out = out, .data_size_out = 512, .repeat = 1);

	assert_int_equal(bpf_prog_test_run_opts(tl.prog_fd, &opts), 0);
	*out_len = opts.data_size_out;
	return (int)opts.retval;
}

static struct xrl_rule_stats stats_of(int family)
{
	struct xrl_rule_stats s;
	int id = xrl_tl_rule_id(&tl, family == 4 ? "198.18.0.0/16 --proto tcp --dport 8080" :
						   "fd00:18::/64 --proto tcp --dport 8080");

	assert_true(id >= 0);
	assert_int_equal(xrl_read_rule_stats(&tl.maps, (__u32)id, &s), 0);
	return s;
}

/* Linux's SYN options: MSS 1460, SACK permitted, TS tsval/0, NOP, WS 10 */
static void linux_syn_opts(__u8 *o, __u32 tsval)
{
	const __u8 t[20] = { 2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 3, 10 };

	memcpy(o, t, 20);
	xrl_sp_put32(o + 8, tsval);
}

/* an ACK's options: NOP NOP TS tsval/tsecr */
static void ack_opts(__u8 *o, __u32 tsval, __u32 tsecr)
{
	o[0] = 1, o[1] = 1, o[2] = 8, o[3] = 10;
	xrl_sp_put32(o + 4, tsval);
	xrl_sp_put32(o + 8, tsecr);
}

struct synack {
	__u32 seq, ack, tsval;
	__u8 flags;
};

/* The SYN-ACK in out (the SYN's l3 offset l3): checked as a reply to s, its fields. */
static struct synack read_synack(const __u8 *out, __u32 len, const struct seg *s, size_t l3)
{
	size_t tcp = l3 + (s->family == 4 ? 20 : 40), i;
	struct synack a;
	__u8 addr[16];

	assert_true(len >= tcp + 24);
	assert_memory_equal(out, client_mac, 6);         /* back to the client */
	assert_memory_equal(out + 6, server_mac, 6);
	if (s->vlan)
		assert_true(out[12] == 0x81 && out[13] == 0 && out[15] == 100);   /* the tag kept */
	if (s->family == 4) {
		inet_pton(AF_INET, s->dst, addr);
		assert_memory_equal(out + l3 + 12, addr, 4);
		inet_pton(AF_INET, s->src, addr);
		assert_memory_equal(out + l3 + 16, addr, 4);
		assert_int_equal((size_t)(out[l3 + 2] << 8 | out[l3 + 3]), len - l3);
	} else {
		inet_pton(AF_INET6, s->dst, addr);
		assert_memory_equal(out + l3 + 8, addr, 16);
		assert_int_equal((size_t)(out[l3 + 4] << 8 | out[l3 + 5]), len - tcp);
	}
	assert_true(out[tcp] == (__u8)(s->dport >> 8) && out[tcp + 1] == (__u8)s->dport);
	assert_true(out[tcp + 2] == (__u8)(s->sport >> 8) && out[tcp + 3] == (__u8)s->sport);
	a.seq = xrl_sp_be32(out + tcp + 4);
	a.ack = xrl_sp_be32(out + tcp + 8);
	a.flags = out[tcp + 13];
	a.tsval = 0;
	for (i = tcp + 20; i + 10 <= len; i++)
		if (out[i] == 8 && out[i + 1] == 10) {
			a.tsval = xrl_sp_be32(out + i + 2);
			break;
		}
	return a;
}

static void tuple_of(const struct seg *s, struct xrl_sp_tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = (__u32)s->family;
	inet_pton(s->family == 4 ? AF_INET : AF_INET6, s->src, t->saddr);
	inet_pton(s->family == 4 ? AF_INET : AF_INET6, s->dst, t->daddr);
	t->sport = htons(s->sport);
	t->dport = htons(s->dport);
}

static int setup(void **state)
{
	struct xrl_config cfg;

	(void)state;
	if (xrl_tl_open(&tl, 4096, XRL_MALFORMED_PASS) || xrl_tl_rules(&tl, rules))
		return -1;
	xrl_tl_set_clock(&tl, T0);
	if (xrl_read_config(&tl.maps, &cfg))
		return -1;
	memcpy(key, cfg.cookie_key, sizeof(key));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	xrl_tl_close(&tl);
	return 0;
}

/* A new source's handshake: SYN answered, ACK proven with its options in the metadata. */
static void handshake(const char *src, const char *dst, int family, int vlan)
{
	struct seg syn = { .family = family, .src = src, .dst = dst, .sport = 40000, .dport = 8080,
			   .seq = 0x11223344, .flags = XRL_TH_SYN, .optlen = 20, .vlan = vlan };
	size_t l3 = vlan ? 18 : 14, len;
	struct xrl_rule_stats s0 = stats_of(family), s1;
	struct xrl_sp_meta meta;
	struct xrl_sp_tuple t;
	__u8 o[20], f[256], out[512];
	__u32 olen;
	struct synack a;
	long src0 = xrl_count_sources(&tl.maps);
	int idx;

	linux_syn_opts(o, 0x01020304);
	syn.opts = o;
	len = build(f, &syn);
	assert_int_equal(run(f, len, out, &olen), XDP_TX);
	a = read_synack(out, olen, &syn, l3);
	assert_int_equal(a.flags, XRL_TH_SYN | XRL_TH_ACK);
	assert_int_equal(a.ack, 0x11223345);
	tuple_of(&syn, &t);
	idx = xrl_sp_check(key, &t, 0x11223344, a.seq, T0);
	assert_int_equal(idx, 3);   /* MSS 1460: the IPv4 table's largest */
	assert_int_equal(a.tsval & XRL_SP_TS_OPTS, 10 | XRL_SP_TS_SACK);
	s1 = stats_of(family);
	assert_int_equal(s1.synack_sent, s0.synack_sent + 1);
	assert_int_equal(s1.created, s0.created);   /* no bucket for a SYN */
	assert_int_equal(xrl_count_sources(&tl.maps), src0);

	/* the ACK, a second later: passed, proven, the options in the metadata */
	xrl_tl_set_clock(&tl, T0 + SEC_NS);
	{
		struct seg ack = syn;

		ack.seq = 0x11223345;
		ack.ack = a.seq + 1;
		ack.flags = XRL_TH_ACK;
		ack.optlen = 12;
		ack_opts(o, 0x01020404, a.tsval);
		ack.opts = o;
		len = build(f, &ack);
	}
	assert_int_equal(run(f, len, out, &olen), XDP_PASS);
	assert_int_equal(olen, len + sizeof(meta));
	memcpy(&meta, out, sizeof(meta));
	assert_int_equal(meta.magic, XRL_SP_META_MAGIC);
	assert_int_equal(meta.attrs.mss, 1460);
	assert_true(meta.attrs.tstamp_ok && meta.attrs.rcv_tsval == 0x01020404 &&
		    meta.attrs.rcv_tsecr == a.tsval);
	assert_true(meta.attrs.wscale_ok && meta.attrs.snd_wscale == 10 &&
		    meta.attrs.rcv_wscale == XRL_SP_RCV_WSCALE && meta.attrs.sack_ok);
	s1 = stats_of(family);
	assert_int_equal(s1.proven, s0.proven + 1);
	assert_int_equal(s1.created, s0.created + 1);
	assert_int_equal(xrl_count_sources(&tl.maps), src0 + 1);
	xrl_tl_set_clock(&tl, T0);
}

static void test_handshake_v4(void **state)
{
	(void)state;
	handshake("198.18.0.2", "198.18.0.1", 4, 0);
}

static void test_handshake_vlan(void **state)
{
	(void)state;
	handshake("198.18.0.3", "198.18.0.1", 4, 1);
}

static void test_handshake_v6(void **state)
{
	(void)state;
	/* 1460 from the client: the IPv6 table's 1440 */
	struct seg syn = { .family = 6, .src = "fd00:18::2", .dst = "fd00:18::1", .sport = 40000,
			   .dport = 8080, .seq = 7, .flags = XRL_TH_SYN, .optlen = 20 };
	struct xrl_sp_tuple t;
	__u8 o[20], f[256], out[512];
	__u32 olen;
	size_t len;
	struct synack a;

	linux_syn_opts(o, 1);
	syn.opts = o;
	len = build(f, &syn);
	assert_int_equal(run(f, len, out, &olen), XDP_TX);
	a = read_synack(out, olen, &syn, 14);
	tuple_of(&syn, &t);
	assert_int_equal(xrl_sp_check(key, &t, 7, a.seq, T0), 2);
	{
		struct seg ack = syn;
		struct xrl_sp_meta meta;

		ack.seq = 8;
		ack.ack = a.seq + 1;
		ack.flags = XRL_TH_ACK;
		ack.optlen = 12;
		ack_opts(o, 2, a.tsval);
		ack.opts = o;
		len = build(f, &ack);
		assert_int_equal(run(f, len, out, &olen), XDP_PASS);
		memcpy(&meta, out, sizeof(meta));
		assert_true(meta.magic == XRL_SP_META_MAGIC && meta.attrs.mss == 1440);
	}
	assert_int_equal(stats_of(6).proven, 1);
}

static void test_forged_and_expired(void **state)
{
	struct seg syn = { .family = 4, .src = "198.18.1.9", .dst = "198.18.0.1", .sport = 41000,
			   .dport = 8080, .seq = 100, .flags = XRL_TH_SYN };
	struct xrl_rule_stats s0, s1;
	__u8 f[256], out[512];
	__u32 olen;
	size_t len;
	struct synack a;
	long src0;

	(void)state;
	xrl_tl_set_clock(&tl, 10 * SLOT_NS + 5);
	len = build(f, &syn);
	assert_int_equal(run(f, len, out, &olen), XDP_TX);
	a = read_synack(out, olen, &syn, 14);
	assert_int_equal(a.tsval, 0);   /* no timestamps asked, none given */
	s0 = stats_of(4);
	src0 = xrl_count_sources(&tl.maps);
	syn.seq = 101;
	syn.flags = XRL_TH_ACK;
	/* a random cookie */
	syn.ack = a.seq + 1 + 0x1000;
	len = build(f, &syn);
	assert_int_equal(run(f, len, out, &olen), XDP_DROP);
	/* the valid one, replayed once its lifetime is over: two slots on */
	syn.ack = a.seq + 1;
	len = build(f, &syn);
	xrl_tl_set_clock(&tl, 12 * SLOT_NS);
	assert_int_equal(run(f, len, out, &olen), XDP_DROP);
	s1 = stats_of(4);
	assert_int_equal(s1.bad_cookie, s0.bad_cookie + 2);
	assert_int_equal(s1.dropped, s0.dropped + 2);
	assert_int_equal(s1.proven, s0.proven);
	assert_int_equal(xrl_count_sources(&tl.maps), src0);
	/* and to the last ns of its lifetime it holds */
	xrl_tl_set_clock(&tl, 12 * SLOT_NS - 1);
	assert_int_equal(run(f, len, out, &olen), XDP_PASS);
	assert_int_equal(stats_of(4).proven, s0.proven + 1);
	xrl_tl_set_clock(&tl, T0);
}

static void test_proven_source_limited(void **state)
{
	/* 198.18.0.2 proved itself (test_handshake_v4): its SYNs are the rule's, 10/s burst 10 */
	struct seg syn = { .family = 4, .src = "198.18.0.2", .dst = "198.18.0.1", .sport = 42000,
			   .dport = 8080, .seq = 5, .flags = XRL_TH_SYN };
	struct xrl_rule_stats s0 = stats_of(4), s1;
	__u8 f[256], out[512];
	__u32 olen;
	size_t len;
	int i, pass = 0, drop = 0, v;

	(void)state;
	xrl_tl_set_clock(&tl, T0 + 100 * SEC_NS);   /* its bucket full again */
	for (i = 0; i < 30; i++) {
		syn.sport = (__u16)(42000 + i);
		len = build(f, &syn);
		v = run(f, len, out, &olen);
		assert_true(v == XDP_PASS || v == XDP_DROP);
		pass += v == XDP_PASS;
		drop += v == XDP_DROP;
	}
	assert_int_equal(pass, 10);
	assert_int_equal(drop, 20);
	s1 = stats_of(4);
	assert_int_equal(s1.synack_sent, s0.synack_sent);
	xrl_tl_set_clock(&tl, T0);
}

/*
 * A changed rule (a new version) asks its sources for a new proof: the
 * bucket of 198.18.0.2 from the old rule is the same source's, but it
 * proved itself to another rule; its SYN is answered, not judged.
 */
static void test_rule_change_needs_new_proof(void **state)
{
	static const char *const changed[] = {
		"198.18.0.0/16 --proto tcp --dport 8080 --syn-proxy --rate 20/s --burst 20",
		NULL,
	};
	struct seg syn = { .family = 4, .src = "198.18.0.2", .dst = "198.18.0.1", .sport = 43000,
			   .dport = 8080, .seq = 5, .flags = XRL_TH_SYN };
	__u8 f[256], out[512];
	__u32 olen;
	size_t len = build(f, &syn);

	(void)state;
	xrl_tl_set_clock(&tl, T0 + 200 * SEC_NS);   /* its bucket full again */
	assert_int_equal(run(f, len, out, &olen), XDP_PASS);   /* proven: judged by the rule */
	tl_rules(&tl, changed);
	assert_int_equal(run(f, len, out, &olen), XDP_TX);
	xrl_tl_set_clock(&tl, T0);
}

/* A rule with a port set: the SYNs to each of its ports are answered, to others not judged. */
static void test_port_set(void **state)
{
	static const struct { __u16 port; int verdict; } c[] = {
		{ 8443, XDP_TX }, { 9001, XDP_TX }, { 9002, XDP_TX }, { 9000, XDP_PASS }, { 8080, XDP_PASS },
	};
	struct seg syn = { .family = 4, .src = "198.19.0.2", .dst = "198.19.0.1", .sport = 40000,
			   .seq = 0x11223344, .flags = XRL_TH_SYN, .optlen = 20 };
	__u8 o[20], f[256], out[512];
	__u32 olen;
	struct synack a;
	unsigned i;

	(void)state;
	assert_int_equal(xrl_tl_rules(&tl, rules), 0);   /* the rules of setup: a test before changed them */
	linux_syn_opts(o, 0x01020304);
	syn.opts = o;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		syn.dport = c[i].port;
		if (run(f, build(f, &syn), out, &olen) != c[i].verdict)
			fail_msg("SYN to port %u: verdict %d, want %d", c[i].port,
				 run(f, build(f, &syn), out, &olen), c[i].verdict);
		if (c[i].verdict == XDP_TX) {
			a = read_synack(out, olen, &syn, 14);
			assert_int_equal(a.flags, XRL_TH_SYN | XRL_TH_ACK);
			assert_int_equal(a.ack, 0x11223345);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake_v4),
		cmocka_unit_test(test_handshake_vlan),
		cmocka_unit_test(test_handshake_v6),
		cmocka_unit_test(test_forged_and_expired),
		cmocka_unit_test(test_proven_source_limited),
		cmocka_unit_test(test_rule_change_needs_new_proof),
		cmocka_unit_test(test_port_set),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
