// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Evasion by parsing: frames a rule must still judge, through
 * the real XDP object (test clock) under BPF_PROG_TEST_RUN. One test per
 * class, each with the exact verdict and the counters that must move:
 *  1. stacked VLAN tags: up to XRL_MAX_VLAN walked, deeper stacks dropped;
 *  2. malformed packets with a readable source (IPv6 chains past the walk,
 *     IPv4 bad lengths) are judged by the rules under --malformed pass;
 *  3. tiny first fragments: the L4 fields a rule needs are not shown, so
 *     allow rules do not match and deny/limit rules do (RFC 1858);
 *  4. IPv4-mapped IPv6 sources are judged as their IPv4 address (rules,
 *     bucket); 6to4, NAT64 and IPv4-compatible sources as IPv6;
 *  5. the program loaded for a device without a link-layer header (tun,
 *     WireGuard, ipip, gre, ppp) judges bare IP packets;
 *  6. --dport sets and --dst prefixes read the port and the destination.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <cmocka.h>

#include "xrl_tl_assert.h"
#include "xrl_rule.h"
#include "xrl_table.h"
#include "xrl_test.skel.h"

#define SEC_NS 1000000000ULL

static struct xrl_tl tl_pass, tl_drop;   /* malformed policy pass / drop */
static struct xrl_tl tl_l3;              /* loaded for bare IP packets (xrl_l3_input), policy pass */

/* The test object as attach loads it for a device without a link-layer header. */
static int tl_open_l3(struct xrl_tl *t)
{
	memset(t, 0, sizeof(*t));
	t->skel = xrl_test_bpf__open();
	if (!t->skel)
		return -1;
	t->skel->rodata->xrl_malformed_policy = XRL_MALFORMED_PASS;
	t->skel->rodata->xrl_l3_input = 1;
	bpf_map__set_max_entries(t->skel->maps.xrl_buckets_v4, xrl_table_sets(4096, XRL_WAYS4));
	bpf_map__set_max_entries(t->skel->maps.xrl_buckets_v6, xrl_table_sets(4096, XRL_WAYS6));
	if (xrl_test_bpf__load(t->skel)) {
		fprintf(stderr, "cannot load the test object for bare IP packets\n");
		xrl_test_bpf__destroy(t->skel);
		t->skel = NULL;
		return -1;
	}
	xrl_maps_from_obj(t->skel->obj, &t->maps);
	t->prog_fd = bpf_program__fd(t->skel->progs.xrl_xdp);
	t->clock_fd = bpf_map__fd(t->skel->maps.xrl_test_clock);
	return xrl_config_init(&t->maps, XRL_MALFORMED_PASS);
}

static int setup(void **state)
{
	(void)state;
	if (tl_open_pair(&tl_pass, &tl_drop) || tl_open_l3(&tl_l3))
		return -1;
	xrl_tl_set_clock(&tl_pass, 1000 * SEC_NS);
	xrl_tl_set_clock(&tl_drop, 1000 * SEC_NS);
	xrl_tl_set_clock(&tl_l3, 1000 * SEC_NS);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tl_close_pair(&tl_pass, &tl_drop);
	xrl_tl_close(&tl_l3);
	return 0;
}

/* Sum of the dropped counters of every rule in force. */
static __u64 rule_drops(struct xrl_tl *t)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	struct xrl_rule_stats s;
	__u64 n = 0;
	int count, i;

	assert_int_equal(xrl_ruleset_read(&t->maps, defs, ids, &count), 0);
	for (i = 0; i < count; i++) {
		assert_int_equal(xrl_read_rule_stats(&t->maps, ids[i], &s), 0);
		n += s.dropped;
	}
	return n;
}

/* What one frame must do: verdict, and which counters move by one. */
struct expect {
	int verdict;
	int non_ip, malformed, judged, vlan_deep, no_rule, rule_drop;
};

static void check(struct xrl_tl *t, const char *name, const __u8 *buf, size_t len,
		  struct expect e)
{
	struct xrl_global_stats a = tl_gstats(t), b;
	__u64 ra = rule_drops(t), rb;
	int v = xrl_tl_run(t->prog_fd, buf, len, 1, NULL);

	b = tl_gstats(t);
	rb = rule_drops(t);
	if (v != e.verdict || b.non_ip - a.non_ip != (__u64)e.non_ip ||
	    b.malformed - a.malformed != (__u64)e.malformed ||
	    b.malformed_judged - a.malformed_judged != (__u64)e.judged ||
	    b.vlan_deep - a.vlan_deep != (__u64)e.vlan_deep ||
	    b.no_rule - a.no_rule != (__u64)e.no_rule || rb - ra != (__u64)e.rule_drop)
		fail_msg("%s (policy %s): verdict %d (want %d), +non_ip %llu (%d), +malformed %llu (%d), "
			 "+judged %llu (%d), +vlan_deep %llu (%d), +no_rule %llu (%d), +rule drops %llu (%d)",
			 name, t == &tl_drop ? "drop" : t == &tl_l3 ? "pass, bare IP" : "pass", v, e.verdict,
			 (unsigned long long)(b.non_ip - a.non_ip), e.non_ip,
			 (unsigned long long)(b.malformed - a.malformed), e.malformed,
			 (unsigned long long)(b.malformed_judged - a.malformed_judged), e.judged,
			 (unsigned long long)(b.vlan_deep - a.vlan_deep), e.vlan_deep,
			 (unsigned long long)(b.no_rule - a.no_rule), e.no_rule,
			 (unsigned long long)(rb - ra), e.rule_drop);
}

static void check_spec(struct xrl_tl *t, const char *name, const struct xrl_pkt_spec *s,
		       struct expect e)
{
	__u8 buf[512];
	size_t len = xrl_pkt_build(buf, sizeof(buf), s, NULL, NULL);

	check(t, name, buf, len, e);
}

/* The packet of s without its Ethernet header, as a device without a link-layer header has it. */
static void check_l3(struct xrl_tl *t, const char *name, const struct xrl_pkt_spec *s,
		     struct expect e)
{
	__u8 buf[512];
	size_t l3, len = xrl_pkt_build(buf, sizeof(buf), s, &l3, NULL);

	check(t, name, buf + l3, len - l3, e);
}

static const struct expect DENIED = { .verdict = XDP_DROP, .rule_drop = 1 };
static const struct expect PASSED = { .verdict = XDP_PASS };
static const struct expect NO_RULE = { .verdict = XDP_PASS, .no_rule = 1 };
/* malformed past the source, judged by the rules (policy pass) */
static const struct expect BAD_DENIED = { .verdict = XDP_DROP, .malformed = 1, .judged = 1, .rule_drop = 1 };
static const struct expect BAD_PASSED = { .verdict = XDP_PASS, .malformed = 1, .judged = 1 };
/* malformed, dropped by policy drop */
static const struct expect BAD_POLICY_DROP = { .verdict = XDP_DROP, .malformed = 1 };
static const struct expect DEEP = { .verdict = XDP_DROP, .vlan_deep = 1 };

/* Item 1: stacked VLAN tags. Up to 8 the rule judges; 9 or more are dropped; ARP stays non-IP. */
static void test_vlan_stacks(void **state)
{
	static const char *const r[] = { "192.0.2.0/24 --deny", "2001:db8:bad::/48 --deny", NULL };
	static const char *const lim[] = { "192.0.2.0/24 --rate 1/h --burst 1", NULL };
	struct xrl_pkt_spec v4 = { .family = 4, .src = "192.0.2.7" };
	struct xrl_pkt_spec v6 = { .family = 6, .src = "2001:db8:bad::7" };
	struct xrl_pkt_spec ok4 = { .family = 4, .src = "198.51.100.9" };
	struct xrl_pkt_spec arp = { .ethertype = ETH_P_ARP };
	struct xrl_tl *t;
	char name[64];
	int n, k;

	(void)state;
	for (k = 0; k < 2; k++) {
		t = k ? &tl_drop : &tl_pass;
		tl_rules(t, r);
		for (n = 0; n <= 20; n++) {
			v4.vlans = v6.vlans = ok4.vlans = arp.vlans = n;
			snprintf(name, sizeof(name), "ipv4 behind %d tags", n);
			check_spec(t, name, &v4, n <= XRL_MAX_VLAN ? DENIED : DEEP);
			snprintf(name, sizeof(name), "ipv6 behind %d tags", n);
			check_spec(t, name, &v6, n <= XRL_MAX_VLAN ? DENIED : DEEP);
			snprintf(name, sizeof(name), "unruled ipv4 behind %d tags", n);
			check_spec(t, name, &ok4, n <= XRL_MAX_VLAN ? NO_RULE : DEEP);
			snprintf(name, sizeof(name), "ARP behind %d tags", n);
			check_spec(t, name, &arp, n <= XRL_MAX_VLAN ? (struct expect){ .verdict = XDP_PASS, .non_ip = 1 } : DEEP);
		}
	}
	/* a frame cut inside its tags cannot be delivered: not IP */
	{
		__u8 buf[512];
		size_t l3, l4;

		v4.vlans = 5;
		xrl_pkt_build(buf, sizeof(buf), &v4, &l3, &l4);
		check(&tl_pass, "cut inside the 5th tag", buf, 14 + 4 * 4 + 2,
		      (struct expect){ .verdict = XDP_PASS, .non_ip = 1 });
	}
	/* a limit sees tagged packets as the same source: 1 token, then drops */
	tl_rules(&tl_pass, lim);
	for (n = 0; n < 6; n++) {
		v4.vlans = 3 + n % 4;
		check_spec(&tl_pass, "limited source behind tags", &v4,
			   n ? (struct expect){ .verdict = XDP_DROP, .rule_drop = 1 } : PASSED);
	}
}

static const __u8 ext_dst9[] = {
	IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS,
	IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS,
	IPPROTO_DSTOPTS, IPPROTO_DSTOPTS,
};

/* Item 2: an IPv6 chain longer than the walk still has a source: rules judge it. */
static void test_long_ipv6_chain(void **state)
{
	static const char *const r[] = {
		"2001:db8:bad::/48 --deny",
		"2001:db8:a11::/48 --allow",
		"2001:db8:7c9::/48 --proto tcp --dport 22 --allow",   /* needs proof */
		"2001:db8:7c9::/48 --deny",
		"2001:db8:d9::/48 --proto udp --deny",               /* presumed */
		NULL,
	};
	static const char *const lim[] = { "2001:db8:11::/48 --proto udp --rate 1/h --burst 2", NULL };
	struct xrl_pkt_spec s = { .family = 6, .proto = IPPROTO_UDP, .ext_hdrs = ext_dst9 };
	int n;

	(void)state;
	tl_rules(&tl_pass, r);
	tl_rules(&tl_drop, r);
	for (n = XRL_MAX_EXT_HDRS; n <= 12; n++) {
		int deep = n > XRL_MAX_EXT_HDRS;

		s.n_ext_hdrs = n;
		s.src = "2001:db8:bad::1";
		check_spec(&tl_pass, "denied source, long chain", &s, deep ? BAD_DENIED : DENIED);
		check_spec(&tl_drop, "denied source, long chain", &s, deep ? BAD_POLICY_DROP : DENIED);
		s.src = "2001:db8:a11::1";
		check_spec(&tl_pass, "allowed source, long chain", &s, deep ? BAD_PASSED : PASSED);
		s.src = "2001:db8:7c9::1";
		check_spec(&tl_pass, "port-allowed source, long chain", &s, deep ? BAD_DENIED : DENIED);
		s.src = "2001:db8:d9::1";
		check_spec(&tl_pass, "udp-denied source, long chain", &s, deep ? BAD_DENIED : DENIED);
		s.src = "2001:db8:ffff::1";
		check_spec(&tl_pass, "no rule, long chain", &s,
			   deep ? (struct expect){ .verdict = XDP_PASS, .malformed = 1, .judged = 1, .no_rule = 1 }
				: NO_RULE);
	}
	/* the tcp/22 allow does match a packet that shows it */
	s.n_ext_hdrs = 3;
	s.proto = IPPROTO_TCP;
	s.dport = 22;
	s.src = "2001:db8:7c9::1";
	check_spec(&tl_pass, "port-allowed source, tcp/22 shown", &s, PASSED);
	/* a limit on UDP presumes a long chain is UDP: it takes the tokens */
	tl_rules(&tl_pass, lim);
	s.src = "2001:db8:11::5";
	s.proto = IPPROTO_UDP;
	s.dport = 0;
	for (n = 0; n < 5; n++) {
		s.n_ext_hdrs = n % 2 ? 10 : 1;
		check_spec(&tl_pass, "limited source, chains short and long", &s,
			   n < 2 ? (n % 2 ? BAD_PASSED : PASSED)
				 : (n % 2 ? BAD_DENIED : (struct expect){ .verdict = XDP_DROP, .rule_drop = 1 }));
	}
}

/* Item 2: IPv4 with bad lengths from a ruled source is judged; without a source, policy. */
static void test_ipv4_bad_lengths(void **state)
{
	static const char *const r[] = { "192.0.2.0/24 --deny", "203.0.113.0/24 --allow", NULL };
	const struct xrl_pkt_spec s = { .family = 4, .src = "192.0.2.1", .proto = IPPROTO_UDP };
	const struct xrl_pkt_spec a = { .family = 4, .src = "203.0.113.1", .proto = IPPROTO_UDP };
	static const struct { const char *name; int off; __u8 val; } bad[] = {
		{ "ihl 4 < 5", 0, 0x44 },
		{ "total length beyond the frame", 2, 0x0f },
		{ "total length below the header", 3, 0x10 },   /* with byte 2 = 0: 16 */
		{ "header longer than the packet (ihl 15)", 0, 0x4f },
	};
	__u8 buf[512];
	size_t l3, l4, len;
	unsigned i;

	(void)state;
	tl_rules(&tl_pass, r);
	tl_rules(&tl_drop, r);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		len = xrl_pkt_build(buf, sizeof(buf), &s, &l3, &l4);
		if (bad[i].off == 3)
			buf[l3 + 2] = 0;
		buf[l3 + bad[i].off] = bad[i].val;
		check(&tl_pass, bad[i].name, buf, len, BAD_DENIED);
		check(&tl_drop, bad[i].name, buf, len, BAD_POLICY_DROP);
		len = xrl_pkt_build(buf, sizeof(buf), &a, &l3, &l4);
		if (bad[i].off == 3)
			buf[l3 + 2] = 0;
		buf[l3 + bad[i].off] = bad[i].val;
		check(&tl_pass, bad[i].name, buf, len, BAD_PASSED);
	}
	/* no source to read: the policy decides, no rule is consulted */
	len = xrl_pkt_build(buf, sizeof(buf), &s, &l3, &l4);
	check(&tl_pass, "ipv4 cut at 19 bytes", buf, l3 + 19,
	      (struct expect){ .verdict = XDP_PASS, .malformed = 1 });
	check(&tl_drop, "ipv4 cut at 19 bytes", buf, l3 + 19, BAD_POLICY_DROP);
	buf[l3] = 0x65;   /* version 6 under the IPv4 ethertype: the kernel drops it */
	check(&tl_pass, "version 6 in an ipv4 frame", buf, len,
	      (struct expect){ .verdict = XDP_PASS, .malformed = 1 });
	/* bytes past the total length are not the packet's: a cut-short UDP header there */
	len = xrl_pkt_build(buf, sizeof(buf), &a, &l3, &l4);
	buf[l3 + 2] = 0;
	buf[l3 + 3] = 24;   /* IP header + 4 bytes of UDP; the frame still has all 8 */
	check(&tl_pass, "udp header past the total length", buf, len, BAD_PASSED);
}

/* A first fragment of a TCP SYN to port 22 with only n bytes of TCP header. */
static size_t tiny_first(__u8 *buf, size_t cap, int family, const char *src, int n, __u8 flags_in_pad)
{
	static const __u8 ext_frag[] = { IPPROTO_FRAGMENT };
	struct xrl_pkt_spec s = { .family = family, .src = src, .proto = IPPROTO_TCP, .dport = 22,
				  .tcp_flags = 0x02, .ipv4_more_frags = family == 4,
				  .ext_hdrs = family == 6 ? ext_frag : NULL, .n_ext_hdrs = family == 6 };
	size_t l3, l4, len = xrl_pkt_build(buf, cap, &s, &l3, &l4);
	size_t plen = l4 + (size_t)n - l3;

	if (family == 4) {
		buf[l3 + 2] = (__u8)(plen >> 8);
		buf[l3 + 3] = (__u8)plen;
	} else {
		buf[l4 - 8 + 3] |= 1;   /* M: more fragments */
		plen -= 40;
		buf[l3 + 4] = (__u8)(plen >> 8);
		buf[l3 + 5] = (__u8)plen;
	}
	if (flags_in_pad) {
		/* the frame goes on past the packet's length: bytes the kernel trims */
		buf[l4 + 13] = flags_in_pad;
		return len;
	}
	/* a real short frame: the packet, then zero padding up to 60 bytes */
	memset(buf + l4 + n, 0, len - (l4 + (size_t)n));
	return l4 + (size_t)n < 60 ? 60 : l4 + (size_t)n;
}

/* Item 3: tiny first fragments do not show the port or flags a rule needs. */
static void test_tiny_fragments(void **state)
{
	static const char *const r[] = {
		"192.0.2.0/24 --proto tcp --dport 22 --deny",
		"198.51.100.0/24 --proto tcp --syn --deny",
		"203.0.113.0/24 --proto tcp --dport 22 --allow",
		"203.0.113.0/24 --rate 1/h --burst 1",
		"100.64.0.0/24 --proto udp --dport 53 --deny",
		"2001:db8:bad::/48 --proto tcp --dport 22 --deny",
		NULL,
	};
	const struct xrl_pkt_spec later = { .family = 4, .src = "192.0.2.1", .proto = IPPROTO_TCP,
					    .dport = 22, .ipv4_frag_offset = 1, .payload = 12 };
	const struct xrl_pkt_spec whole = { .family = 4, .src = "203.0.113.1", .proto = IPPROTO_TCP,
					    .dport = 22, .tcp_flags = 0x02, .ipv4_more_frags = 1 };
	__u8 buf[512];
	size_t len;
	int n;

	(void)state;
	tl_rules(&tl_pass, r);
	tl_rules(&tl_drop, r);
	for (n = 0; n < 20; n += 4) {
		char name[64];

		snprintf(name, sizeof(name), "ipv4 first fragment, %d bytes of tcp", n);
		len = tiny_first(buf, sizeof(buf), 4, "192.0.2.1", n, 0);
		check(&tl_pass, name, buf, len, BAD_DENIED);
		check(&tl_drop, name, buf, len, BAD_POLICY_DROP);
		len = tiny_first(buf, sizeof(buf), 4, "198.51.100.1", n, 0);
		check(&tl_pass, name, buf, len, BAD_DENIED);
		/* the allow needs proof; the limit below it presumes: its one token */
		len = tiny_first(buf, sizeof(buf), 4, "203.0.113.1", n, 0);
		check(&tl_pass, name, buf, len, n == 0 ? BAD_PASSED : BAD_DENIED);
		/* tcp is not udp: the protocol is shown, so the udp rule cannot match */
		len = tiny_first(buf, sizeof(buf), 4, "100.64.0.1", n, 0);
		check(&tl_pass, name, buf, len,
		      (struct expect){ .verdict = XDP_PASS, .malformed = 1, .judged = 1, .no_rule = 1 });
		snprintf(name, sizeof(name), "ipv6 first fragment, %d bytes of tcp", n);
		len = tiny_first(buf, sizeof(buf), 6, "2001:db8:bad::1", n, 0);
		check(&tl_pass, name, buf, len, BAD_DENIED);
	}
	/* 8 bytes of header in the packet, the rest in the frame's padding saying ACK */
	len = tiny_first(buf, sizeof(buf), 4, "198.51.100.1", 8, 0x10);
	check(&tl_pass, "flags read past the total length", buf, len, BAD_DENIED);
	/* a first fragment with the whole header is judged on it: the allow matches */
	check_spec(&tl_pass, "whole header in the first fragment", &whole, PASSED);
	/* later fragments show no port: a port rule never matches them (see DESIGN) */
	check_spec(&tl_pass, "later fragment", &later, NO_RULE);
}

/*
 * Item 4: a dual-stack socket reports an IPv6 packet from ::ffff:a.b.c.d
 * as a.b.c.d (Linux 6.18 delivers it: tests/e2e/test_l3_mapped.sh), so the
 * IPv4 rules judge it, in the IPv4 source's own bucket. 6to4, NAT64's
 * well-known prefix and IPv4-compatible sources reach the socket as the
 * IPv6 addresses they are: IPv6 rules judge them.
 */
static void test_v4_mapped(void **state)
{
	static const char *const r[] = {
		"10.231.0.0/16 --deny",
		"192.0.2.0/24 --rate 1/h --burst 2",
		"203.0.113.0/24 --allow",
		"203.0.113.0/24 --proto udp --dport 5353 --deny",
		"2002::/16 --rate 1/h --burst 1",
		NULL,
	};
	struct xrl_pkt_spec s = { .family = 6, .proto = IPPROTO_UDP };
	struct xrl_pkt_spec v4 = { .family = 4, .src = "192.0.2.5", .proto = IPPROTO_UDP };
	static const struct { const char *src; struct expect e; } cases[] = {
		{ "::ffff:10.231.0.1", { .verdict = XDP_DROP, .rule_drop = 1 } },
		{ "::ffff:10.231.255.255", { .verdict = XDP_DROP, .rule_drop = 1 } },
		{ "::ffff:10.232.0.1", { .verdict = XDP_PASS, .no_rule = 1 } },
		{ "::ffff:203.0.113.9", { .verdict = XDP_PASS } },
		/* not mapped: judged as the IPv6 sources they are */
		{ "::10.231.0.1", { .verdict = XDP_PASS, .no_rule = 1 } },
		{ "64:ff9b::ae7:1", { .verdict = XDP_PASS, .no_rule = 1 } },
		{ "2002:ae7:1::1", { .verdict = XDP_PASS } },   /* the 2002::/16 limit, its first token */
		{ "::fffe:10.231.0.1", { .verdict = XDP_PASS, .no_rule = 1 } },
		{ "0:0:1:0:0:ffff:ae7:1", { .verdict = XDP_PASS, .no_rule = 1 } },
		{ "::ffff:0:ae7:1", { .verdict = XDP_PASS, .no_rule = 1 } },
	};
	struct xrl_tl *ts[] = { &tl_pass, &tl_drop, &tl_l3 };
	unsigned i, k;
	char name[96];

	(void)state;
	for (k = 0; k < 3; k++)
		tl_rules(ts[k], r);
	for (k = 0; k < 3; k++) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			s.src = cases[i].src;
			snprintf(name, sizeof(name), "udp6 from %s", s.src);
			if (ts[k] == &tl_l3)
				check_l3(ts[k], name, &s, cases[i].e);
			else
				check_spec(ts[k], name, &s, cases[i].e);
		}
		/* the mapped source's port is read through the IPv6 header */
		s.src = "::ffff:203.0.113.9";
		s.dport = 5353;
		snprintf(name, sizeof(name), "udp6 from %s to port 5353", s.src);
		if (ts[k] == &tl_l3)
			check_l3(ts[k], name, &s, DENIED);
		else
			check_spec(ts[k], name, &s, DENIED);
		s.dport = 0;
	}
	/* one bucket for 192.0.2.5 whichever way it comes: a burst of 2 in all */
	s.src = "::ffff:192.0.2.5";
	check_spec(&tl_pass, "limited: 192.0.2.5 over IPv4", &v4, PASSED);
	check_spec(&tl_pass, "limited: ::ffff:192.0.2.5 over IPv6", &s, PASSED);
	check_spec(&tl_pass, "limited: 192.0.2.5 over IPv4, no token left", &v4, DENIED);
	check_spec(&tl_pass, "limited: ::ffff:192.0.2.5 over IPv6, no token left", &s, DENIED);
	/* a 6to4 source is limited as the IPv6 source it is, apart from its IPv4 address */
	s.src = "2002:c000:205::1";
	check_spec(&tl_pass, "6to4 2002:c000:205::1 (192.0.2.5)", &s, PASSED);
	check_spec(&tl_pass, "6to4 2002:c000:205::1 again", &s, DENIED);
	/* a mapped source with an extension chain past the walk: judged, as malformed */
	{
		struct xrl_pkt_spec c = { .family = 6, .proto = IPPROTO_UDP, .src = "::ffff:10.231.0.7",
					  .ext_hdrs = ext_dst9, .n_ext_hdrs = 10 };

		check_spec(&tl_pass, "mapped source, long chain", &c, BAD_DENIED);
		check_spec(&tl_drop, "mapped source, long chain", &c, BAD_POLICY_DROP);
	}
}

/*
 * Item 5: the program attach loads for a device without a link-layer
 * header (tun, WireGuard, ipip, gre, ppp) reads the packet from the IP
 * header; the same packets behind Ethernet are judged by the Ethernet one.
 */
static void test_l3_input(void **state)
{
	static const char *const r[] = {
		"10.231.0.0/16 --deny",
		"2001:db8:bad::/48 --deny",
		"192.0.2.0/24 --rate 1/h --burst 2",
		"2001:db8:11::/48 --proto udp --rate 1/h --burst 1",
		NULL,
	};
	struct xrl_pkt_spec d4 = { .family = 4, .src = "10.231.0.1", .proto = IPPROTO_UDP };
	struct xrl_pkt_spec d6 = { .family = 6, .src = "2001:db8:bad::1", .proto = IPPROTO_TCP, .dport = 22 };
	struct xrl_pkt_spec l4 = { .family = 4, .src = "192.0.2.1", .proto = IPPROTO_UDP };
	struct xrl_pkt_spec l6 = { .family = 6, .src = "2001:db8:11::1", .proto = IPPROTO_UDP, .dport = 53 };
	struct xrl_pkt_spec o4 = { .family = 4, .src = "198.51.100.1", .ipv4_opt_words = 3 };
	struct xrl_pkt_spec o6 = { .family = 6, .src = "2001:db8:ffff::1", .ext_hdrs = ext_dst9, .n_ext_hdrs = 3 };
	struct xrl_pkt_spec f4 = { .family = 4, .src = "10.231.9.9", .ipv4_frag_offset = 2, .payload = 16 };
	__u8 buf[512];
	size_t l3, len;
	int n;

	(void)state;
	tl_rules(&tl_l3, r);
	tl_rules(&tl_pass, r);
	check_l3(&tl_l3, "bare ipv4, denied", &d4, DENIED);
	check_l3(&tl_l3, "bare ipv6, denied", &d6, DENIED);
	check_l3(&tl_l3, "bare ipv4 with options, no rule", &o4, NO_RULE);
	check_l3(&tl_l3, "bare ipv6 with 3 extension headers, no rule", &o6, NO_RULE);
	check_l3(&tl_l3, "bare ipv4 later fragment, denied", &f4, DENIED);
	for (n = 0; n < 4; n++) {
		check_l3(&tl_l3, "bare ipv4, limited", &l4, n < 2 ? PASSED : DENIED);
		check_l3(&tl_l3, "bare ipv6, limited", &l6, n < 1 ? PASSED : DENIED);
	}
	/* the same packets behind Ethernet: the Ethernet program judges them alike */
	check_spec(&tl_pass, "ipv4 frame, denied", &d4, DENIED);
	check_spec(&tl_pass, "ipv6 frame, denied", &d6, DENIED);
	/* neither version 4 nor 6 (MPLS over gre): not IP */
	len = xrl_pkt_build(buf, sizeof(buf), &d4, &l3, NULL);
	buf[l3] = 0x55;
	check(&tl_l3, "version 5", buf + l3, len - l3, (struct expect){ .verdict = XDP_PASS, .non_ip = 1 });
	/* a cut IPv4 header: no source, the policy (pass) */
	len = xrl_pkt_build(buf, sizeof(buf), &d4, &l3, NULL);
	check(&tl_l3, "ipv4 cut at 16 bytes", buf + l3, 16,
	      (struct expect){ .verdict = XDP_PASS, .malformed = 1 });
	/* a bad total length past the source: judged */
	buf[l3 + 2] = 0x0f;
	check(&tl_l3, "ipv4 total length past the packet", buf + l3, len - l3, BAD_DENIED);
}

/*
 * Item 6: --dport sets and --dst, as the program judges frames: ports in
 * and out of the ranges, destinations in and out of the prefix, IPv4 and
 * IPv6, the rule cache (a source seen to one destination is judged anew
 * to another), first fragments that do not show the port, a mapped source
 * with its mapped destination, and the program for bare IP packets.
 */
static void test_ports_dst(void **state)
{
	static const char *const r[] = {
		"192.0.2.0/24 --proto tcp --dport 80,443,8000-8100 --deny",
		"192.0.2.128/25 --proto tcp --dport 0-1000,2000 --deny",
		"198.51.100.0/24 --dst 203.0.113.8/29 --deny",
		"2001:db8:bad::/48 --proto udp --dport 3000,1000-2000 --dst 2001:db8:ffff::/100 --deny",
		"100.64.0.0/24 --proto tcp --dport 22-23,2222 --dst 198.51.100.1 --deny",
		"100.64.1.0/24 --proto tcp --dport 22,2222 --allow",
		"100.64.1.0/24 --rate 1/h --burst 1",
		"10.231.0.0/16 --dst 192.0.2.80 --deny",
		NULL,
	};
	static const struct { __u16 port; int in; } ports[] = {
		{ 80, 1 }, { 443, 1 }, { 8000, 1 }, { 8050, 1 }, { 8100, 1 },
		{ 79, 0 }, { 81, 0 }, { 442, 0 }, { 444, 0 }, { 7999, 0 }, { 8101, 0 }, { 22, 0 },
	};
	static const struct { const char *dst; int in; } dst4[] = {
		{ "203.0.113.8", 1 }, { "203.0.113.15", 1 }, { "203.0.113.7", 0 }, { "203.0.113.16", 0 },
		{ "198.51.100.1", 0 },
	};
	static const struct { const char *dst; __u16 port; int in; } dst6[] = {
		{ "2001:db8:ffff::1", 1000, 1 }, { "2001:db8:ffff::fff:ffff", 2000, 1 },
		{ "2001:db8:ffff::1", 3000, 1 }, { "2001:db8:ffff::1", 2001, 0 },
		{ "2001:db8:ffff::1", 999, 0 }, { "2001:db8:ffff::1000:0", 1500, 0 },
		{ "2001:db8:fffe::1", 1500, 0 },
	};
	struct xrl_pkt_spec s = { .family = 4, .src = "192.0.2.7", .proto = IPPROTO_TCP, .tcp_flags = 0x10 };
	struct xrl_pkt_spec later = { .family = 4, .src = "192.0.2.7", .proto = IPPROTO_TCP, .dport = 80,
				      .ipv4_frag_offset = 1, .payload = 12 };
	struct xrl_pkt_spec m = { .family = 6, .src = "::ffff:10.231.0.1", .proto = IPPROTO_UDP, .dport = 53 };
	__u8 buf[512];
	char name[96];
	size_t len;
	unsigned i;

	(void)state;
	tl_rules(&tl_pass, r);
	tl_rules(&tl_l3, r);
	for (i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
		s.dport = ports[i].port;
		snprintf(name, sizeof(name), "tcp to port %u (80,443,8000-8100)", s.dport);
		check_spec(&tl_pass, name, &s, ports[i].in ? DENIED : NO_RULE);
		check_l3(&tl_l3, name, &s, ports[i].in ? DENIED : NO_RULE);
	}
	s.proto = IPPROTO_UDP;
	s.dport = 80;
	check_spec(&tl_pass, "udp to port 80: the set is tcp's", &s, NO_RULE);
	check_spec(&tl_pass, "later fragment: no port to be in the set", &later, NO_RULE);
	later.src = "192.0.2.200";
	check_spec(&tl_pass, "later fragment: not even port 0 (0-1000,2000)", &later, NO_RULE);
	later.ipv4_frag_offset = 0;
	check_spec(&tl_pass, "whole tcp to port 80 (0-1000,2000)", &later, DENIED);

	/* one source to several destinations: the rule cache must not carry one to the next */
	s.src = "198.51.100.9";
	for (i = 0; i < 2 * sizeof(dst4) / sizeof(dst4[0]); i++) {
		unsigned k = i % (sizeof(dst4) / sizeof(dst4[0]));

		s.dst = dst4[k].dst;
		snprintf(name, sizeof(name), "udp to %s (203.0.113.8/29)", s.dst);
		check_spec(&tl_pass, name, &s, dst4[k].in ? DENIED : NO_RULE);
		check_l3(&tl_l3, name, &s, dst4[k].in ? DENIED : NO_RULE);
	}
	s = (struct xrl_pkt_spec){ .family = 6, .src = "2001:db8:bad::1", .proto = IPPROTO_UDP };
	for (i = 0; i < sizeof(dst6) / sizeof(dst6[0]); i++) {
		s.dst = dst6[i].dst;
		s.dport = dst6[i].port;
		snprintf(name, sizeof(name), "udp6 to [%s]:%u", s.dst, s.dport);
		check_spec(&tl_pass, name, &s, dst6[i].in ? DENIED : NO_RULE);
		check_l3(&tl_l3, name, &s, dst6[i].in ? DENIED : NO_RULE);
	}
	s.dst = "2001:db8:ffff::1";
	s.dport = 1000;
	s.proto = IPPROTO_TCP;
	check_spec(&tl_pass, "tcp6 to port 1000: the set is udp's", &s, NO_RULE);

	/*
	 * first fragments with n bytes of TCP header, to 198.51.100.1 (the
	 * builder's destination): the port is not shown, the deny presumes it,
	 * the allow does not; the destination is shown and is not presumed
	 */
	for (i = 0; i < 20; i += 4) {
		snprintf(name, sizeof(name), "first fragment, %u bytes of tcp, to 198.51.100.1", i);
		len = tiny_first(buf, sizeof(buf), 4, "100.64.0.1", (int)i, 0);
		check(&tl_pass, name, buf, len, BAD_DENIED);
		/* the allow needs proof; the limit below it presumes: its one token */
		len = tiny_first(buf, sizeof(buf), 4, "100.64.1.1", (int)i, 0);
		check(&tl_pass, name, buf, len, i == 0 ? BAD_PASSED : BAD_DENIED);
	}
	{
		/* the same to 198.51.100.2: the --dst rule is known not to match */
		struct xrl_pkt_spec f = { .family = 4, .src = "100.64.0.1", .dst = "198.51.100.2",
					  .proto = IPPROTO_TCP, .dport = 22 };
		size_t l3;

		len = xrl_pkt_build(buf, sizeof(buf), &f, &l3, NULL);
		check(&tl_pass, "tcp to 198.51.100.2:22", buf, len, NO_RULE);
		buf[l3 + 6] |= 0x20;   /* MF: a first fragment */
		buf[l3 + 2] = 0;
		buf[l3 + 3] = 20;      /* no TCP header at all */
		check(&tl_pass, "first fragment without tcp, to 198.51.100.2", buf, 60,
		      (struct expect){ .verdict = XDP_PASS, .malformed = 1, .judged = 1, .no_rule = 1 });
	}

	/* a mapped source is judged as IPv4, its mapped destination as IPv4 too */
	m.dst = "::ffff:192.0.2.80";
	check_spec(&tl_pass, "udp6 ::ffff:10.231.0.1 to ::ffff:192.0.2.80", &m, DENIED);
	check_l3(&tl_l3, "udp6 ::ffff:10.231.0.1 to ::ffff:192.0.2.80", &m, DENIED);
	m.dst = "::ffff:192.0.2.81";
	check_spec(&tl_pass, "udp6 ::ffff:10.231.0.1 to ::ffff:192.0.2.81", &m, NO_RULE);
	/* an IPv6 destination whose last word is 192.0.2.80: no IPv4 --dst holds it */
	m.dst = "2001:db8::c000:250";
	check_spec(&tl_pass, "udp6 ::ffff:10.231.0.1 to 2001:db8::c000:250", &m, NO_RULE);
	m.dst = "c000:250::";
	check_spec(&tl_pass, "udp6 ::ffff:10.231.0.1 to c000:250::", &m, NO_RULE);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "10.231.0.1", .dst = "192.0.2.80", .proto = IPPROTO_UDP };
	check_spec(&tl_pass, "udp 10.231.0.1 to 192.0.2.80", &s, DENIED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vlan_stacks),
		cmocka_unit_test(test_long_ipv6_chain),
		cmocka_unit_test(test_ipv4_bad_lengths),
		cmocka_unit_test(test_tiny_fragments),
		cmocka_unit_test(test_v4_mapped),
		cmocka_unit_test(test_l3_input),
		cmocka_unit_test(test_ports_dst),
	};

	return cmocka_run_group_tests_name("xrl parse evasion (BPF_PROG_TEST_RUN)", tests, setup, teardown);
}
