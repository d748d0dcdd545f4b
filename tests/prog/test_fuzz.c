// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Random and mutated frames through the real XDP object (test clock,
 * BPF_PROG_TEST_RUN), each compared with a model of the classes docs/xrl.8
 * documents (MALFORMED PACKETS), written from that text and not from
 * bpf/xrl_parse.h: which frames are not IP, which have more VLAN tags than
 * xrl walks, which are malformed before their source, and for the rest the
 * source, protocol, port and SYN the packet shows or does not show; then
 * the rule that must judge it (an IPv4-mapped IPv6 source by the IPv4
 * rules, as RULES, Prefix says), and so the verdict and every counter that
 * must move (global and per rule), frame by frame, under both policies.
 *
 *   test_fuzz [--seed S] [--frames N]   (N frames per policy; default seed 12, 3000)
 *
 * Prints the first mismatches (the frame in hex, what the model expected)
 * and ends with "P passed, F failed" (one check per policy).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>

#include "xrl_testlib.h"
#include "xrl_rule.h"

#define SEC_NS 1000000000ULL

/* ------------------------------------------------------------ random */

static uint64_t rng_s;

static uint32_t rnd(uint32_t n)   /* 0..n-1 */
{
	rng_s ^= rng_s >> 12;
	rng_s ^= rng_s << 25;
	rng_s ^= rng_s >> 27;
	return n ? (uint32_t)((rng_s * 2685821657736338717ULL) >> 33) % n : 0;
}

static int chance(int pct) { return (int)rnd(100) < pct; }

/* ------------------------------------------------------------ the rules */

enum { ALLOW, DENY, LIMIT };

/*
 * The rule set: two rules of one prefix and rank (see model_decide) that
 * can both judge a packet differ in --dst length or in how many ports
 * they cover.
 */
struct mrule {
	const char *line;
	int family, plen;
	__u8 addr[16];
	int action, proto, dport, syn;
	int nports, lo[8], hi[8];   /* --dport: its ports and ranges as written */
	int dst_len;                /* --dst */
	__u8 dst[16];
	__u32 id;
};

static struct mrule mrules[] = {
	{ .line = "192.0.2.128/25 --proto udp --allow" },
	{ .line = "192.0.2.0/24 --deny" },
	{ .line = "198.51.100.0/24 --proto tcp --dport 22 --deny" },
	{ .line = "203.0.113.0/24 --proto udp --dport 53 --allow" },
	{ .line = "203.0.113.0/24 --rate 1/h --burst 3" },
	{ .line = "100.64.0.0/24 --proto tcp --syn --deny" },
	{ .line = "100.64.0.0/24 --allow" },
	{ .line = "2001:db8:a::/48 --deny" },
	{ .line = "2001:db8:b::/48 --proto tcp --dport 80 --deny" },
	{ .line = "2001:db8:c::/48 --proto udp --allow" },
	{ .line = "2001:db8:c::/48 --rate 1/h --burst 3" },
	{ .line = "2001:db8:d::/48 --proto tcp --syn --deny" },
	{ .line = "2001:db8:d::/48 --proto udp --dport 53 --rate 1/h --burst 2" },
	{ .line = "2001:db8:d::/48 --allow" },
	/* --dport sets and --dst (a mapped source's destination too) */
	{ .line = "198.51.100.0/24 --proto tcp --dport 8000-8100,80,443 --dst 198.51.100.254 --allow" },
	{ .line = "192.0.2.0/24 --dst 198.51.100.0/25 --rate 1/h --burst 2" },
	{ .line = "2001:db8:b::/48 --proto udp --dport 5353-5360,53 --dst 2001:db8:ffff::/120 --deny" },
	{ .line = "100.64.0.0/24 --proto tcp --dport 22,80 --deny" },
	/* one rank, overlapping: the longer --dst, the smaller set decide; a set with --syn before one port */
	{ .line = "192.0.2.0/24 --dst 198.51.100.1 --allow" },
	{ .line = "203.0.113.0/24 --proto udp --dport 5353-5361 --deny" },
	{ .line = "203.0.113.0/24 --proto udp --dport 5353-5360 --allow" },
	{ .line = "198.51.100.0/24 --proto tcp --dport 22,443 --syn --allow" },
};
#define NRULES (sizeof(mrules) / sizeof(mrules[0]))

/* how many ports a rule's --dport covers (every port without it) */
static int model_ports(const struct mrule *r)
{
	int i, n = 0;

	if (!r->nports)
		return 65536;
	for (i = 0; i < r->nports; i++)
		n += r->hi[i] - r->lo[i] + 1;
	return n;
}

/* the words of a rule line, read here once (the model's own reading) */
static void mrule_init(struct mrule *r)
{
	char pfx[64];
	const char *sp = strchr(r->line, ' ');
	char *slash;

	memcpy(pfx, r->line, (size_t)(sp - r->line));
	pfx[sp - r->line] = 0;
	slash = strchr(pfx, '/');
	*slash = 0;
	r->plen = atoi(slash + 1);
	r->family = strchr(pfx, ':') ? 6 : 4;
	inet_pton(r->family == 6 ? AF_INET6 : AF_INET, pfx, r->addr);
	r->action = strstr(r->line, "--allow") ? ALLOW : strstr(r->line, "--deny") ? DENY : LIMIT;
	r->proto = strstr(r->line, "--proto tcp") || strstr(r->line, "--syn") ? 6 :
		   strstr(r->line, "--proto udp") ? 17 : 0;
	r->dport = strstr(r->line, "--dport ") ? atoi(strstr(r->line, "--dport ") + 8) : 0;
	r->syn = strstr(r->line, "--syn") != NULL;
	r->nports = 0;
	if (r->dport) {
		const char *p = strstr(r->line, "--dport ") + 8;
		char *end;

		for (;;) {
			r->lo[r->nports] = (int)strtol(p, &end, 10);
			r->hi[r->nports] = *end == '-' ? (int)strtol(end + 1, &end, 10) : r->lo[r->nports];
			r->nports++;
			if (*end != ',')
				break;
			p = end + 1;
		}
	}
	r->dst_len = 0;
	if (strstr(r->line, "--dst ")) {
		char d[64];

		sscanf(strstr(r->line, "--dst ") + 6, "%63s", d);
		r->dst_len = strchr(d, '/') ? atoi(strchr(d, '/') + 1) : r->family == 4 ? 32 : 128;
		if (strchr(d, '/'))
			*strchr(d, '/') = 0;
		inet_pton(r->family == 6 ? AF_INET6 : AF_INET, d, r->dst);
	}
}

/* Do a and b agree in their first len bits? */
static int same_bits(const __u8 *a, const __u8 *b, int len)
{
	int i;

	for (i = 0; i < len; i++)
		if (((a[i / 8] ^ b[i / 8]) >> (7 - i % 8)) & 1)
			return 0;
	return 1;
}

static int in_prefix(const struct mrule *r, int family, const __u8 *src)
{
	int i;

	if (family != r->family)
		return 0;
	for (i = 0; i < r->plen; i++)
		if (((src[i / 8] ^ r->addr[i / 8]) >> (7 - i % 8)) & 1)
			return 0;
	return 1;
}

/* ------------------------------------------------------------ the model */

enum { C_NON_IP, C_VLAN_DEEP, C_NO_SOURCE, C_IP };
enum { L4_NONE, L4_SHOWN, L4_UNKNOWN };   /* no L4 by nature / shown / should be there, is not */

struct mpkt {
	int cls;
	int family;
	__u8 src[16];
	int bad;           /* malformed past the source */
	int proto_known, proto;
	int l4, dport, flags;
	__u8 dst[16];
	int dst_not4;      /* judged as IPv4 (a mapped source), sent to an IPv6 address that is not mapped */
};

static unsigned be16(const __u8 *p) { return (unsigned)p[0] << 8 | p[1]; }

/* The L4 header at q with avail bytes of the packet (may be negative). */
static void model_l4(struct mpkt *m, const __u8 *q, long avail)
{
	long need = m->proto == 6 ? 20 : (m->proto == 17 || m->proto == 1 || m->proto == 58) ? 8 : 0;

	if (!need) {
		m->l4 = L4_NONE;   /* a protocol without ports */
		return;
	}
	if (avail < need || (m->proto == 6 && (q[12] >> 4) < 5)) {
		m->bad = 1;
		m->l4 = L4_UNKNOWN;
		return;
	}
	m->l4 = L4_SHOWN;
	if (m->proto == 6 || m->proto == 17)
		m->dport = (int)be16(q + 2);
	if (m->proto == 6)
		m->flags = q[13];
}

static void model_v4(struct mpkt *m, const __u8 *q, long n)
{
	long ihl, tot;

	if (n < 20 || q[0] >> 4 != 4) {
		m->cls = C_NO_SOURCE;
		return;
	}
	m->cls = C_IP;
	m->family = 4;
	memcpy(m->src, q + 12, 4);
	memcpy(m->dst, q + 16, 4);
	m->proto_known = 1;
	m->proto = q[9];
	ihl = (q[0] & 15) * 4;
	tot = be16(q + 2);
	if (ihl < 20 || tot < ihl || tot > n) {
		m->bad = 1;
		m->l4 = L4_UNKNOWN;
		return;
	}
	if (be16(q + 6) & 0x1fff) {
		m->l4 = L4_NONE;   /* a later fragment */
		return;
	}
	model_l4(m, q + ihl, tot - ihl);
}

static void model_v6(struct mpkt *m, const __u8 *q, long n)
{
	long end, cur = 40;
	int nh, k;

	if (n < 40 || q[0] >> 4 != 6) {
		m->cls = C_NO_SOURCE;
		return;
	}
	m->cls = C_IP;
	m->family = 6;
	memcpy(m->src, q + 8, 16);
	memcpy(m->dst, q + 24, 16);
	/* xrl(8), RULES, Prefix: ::ffff:a.b.c.d is judged as the IPv4 source a.b.c.d */
	if (!memcmp(m->src, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
		m->family = 4;
		memmove(m->src, m->src + 12, 4);
		memset(m->src + 4, 0, 12);
		/* and its destination as IPv4 when it is mapped too (--dst) */
		if (!memcmp(m->dst, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
			memmove(m->dst, m->dst + 12, 4);
		else
			m->dst_not4 = 1;
	}
	end = 40 + (long)be16(q + 4);
	if (end > n) {
		m->bad = 1;
		m->l4 = L4_UNKNOWN;
		return;
	}
	nh = q[6];
	for (k = 0;; k++) {
		int ext = nh == 0 || nh == 43 || nh == 60 || nh == 44;   /* AH (51) is a protocol */

		if (!ext)
			break;
		if (k == 8 || cur + (nh == 44 ? 8 : 2) > end) {
			m->bad = 1;   /* chain too long, or cut: the protocol is not shown */
			m->l4 = L4_UNKNOWN;
			return;
		}
		if (nh == 44) {
			int later = (be16(q + cur + 2) & 0xfff8) != 0;

			nh = q[cur];
			cur += 8;
			if (later) {
				m->proto_known = 1;
				m->proto = nh;
				m->l4 = L4_NONE;
				return;
			}
		} else {
			long len = (q[cur + 1] + 1) * 8;

			nh = q[cur];
			cur += len;
		}
	}
	m->proto_known = 1;
	m->proto = nh;
	model_l4(m, cur <= end ? q + cur : q, end - cur);
}

static void model_parse(struct mpkt *m, const __u8 *b, long n)
{
	unsigned et;
	long p = 14;
	int tags = 0;

	memset(m, 0, sizeof(*m));
	m->cls = C_NON_IP;
	if (n < 14)
		return;
	et = be16(b + 12);
	while (et == 0x8100 || et == 0x88a8) {
		if (tags == 8) {
			m->cls = C_VLAN_DEEP;
			return;
		}
		if (p + 4 > n)
			return;   /* cut inside a tag: not IP */
		et = be16(b + p + 2);
		p += 4;
		tags++;
	}
	if (et == 0x0800)
		model_v4(m, b + p, n - p);
	else if (et == 0x86dd)
		model_v6(m, b + p, n - p);
}

/* Does rule r judge packet m? Fields it does not show: allow needs proof, deny/limit presume. */
static int model_matches(const struct mrule *r, const struct mpkt *m)
{
	/* the destination is always shown: a --dst that does not hold it is no match */
	int dst_ok = !r->dst_len || (!m->dst_not4 && same_bits(r->dst, m->dst, r->dst_len));
	int presume = r->action != ALLOW && dst_ok, i, in = 0;

	if (r->proto) {
		if (!m->proto_known)
			return presume;
		if (m->proto != r->proto)
			return 0;
	}
	if (r->dport || r->syn) {
		if (m->l4 == L4_UNKNOWN)
			return presume;
		if (m->l4 == L4_NONE)
			return 0;
		for (i = 0; i < r->nports; i++)
			in |= m->dport >= r->lo[i] && m->dport <= r->hi[i];
		if (r->dport && !in)
			return 0;
		if (r->syn && (m->flags & 0x12) != 0x02)
			return 0;
	}
	return dst_ok;
}

/* Token buckets of the limit rules at a fixed clock: burst tokens per (rule, /32 or /64). */
#define MAX_KEYS 256
static struct { int rule; int family; __u8 key[8]; int used; } buckets[MAX_KEYS];
static int nbuckets;

static int burst_of(const struct mrule *r)
{
	const char *b = strstr(r->line, "--burst ");

	return b ? atoi(b + 8) : 1;
}

static int take_token(int ri, const struct mpkt *m)
{
	__u8 key[8] = { 0 };
	int i;

	memcpy(key, m->src, m->family == 4 ? 4 : 8);
	for (i = 0; i < nbuckets; i++)
		if (buckets[i].rule == ri && buckets[i].family == m->family && !memcmp(buckets[i].key, key, 8))
			break;
	if (i == nbuckets) {
		if (nbuckets == MAX_KEYS)
			return -1;
		buckets[i].rule = ri;
		buckets[i].family = m->family;
		memcpy(buckets[i].key, key, 8);
		buckets[i].used = 0;
		nbuckets++;
	}
	if (buckets[i].used >= burst_of(&mrules[ri]))
		return 0;
	buckets[i].used++;
	return 1;
}

struct outcome {
	int verdict;
	__u64 non_ip, malformed, judged, vlan_deep, no_rule, dropped;
	__u64 rule_pass[NRULES], rule_drop[NRULES];
};

static void model_decide(const struct mpkt *m, int policy_drop, struct outcome *o)
{
	size_t i, best = NRULES;

	memset(o, 0, sizeof(*o));
	o->verdict = XDP_PASS;
	switch (m->cls) {
	case C_NON_IP:
		o->non_ip = 1;
		return;
	case C_VLAN_DEEP:
		o->vlan_deep = o->dropped = 1;
		o->verdict = XDP_DROP;
		return;
	case C_NO_SOURCE:
		o->malformed = 1;
		if (policy_drop) {
			o->dropped = 1;
			o->verdict = XDP_DROP;
		}
		return;
	}
	if (m->bad) {
		o->malformed = 1;
		if (policy_drop) {
			o->dropped = 1;
			o->verdict = XDP_DROP;
			return;
		}
		o->judged = 1;
	}
	/* the source's rules: longest prefix first, then the most specific match (port, SYN, protocol, any) */
	{
		int rank, bestrank = -1;

		for (i = 0; i < NRULES; i++) {
			if (!in_prefix(&mrules[i], m->family, m->src) || !model_matches(&mrules[i], m))
				continue;
			/*
			 * xrl(8): --dst, then --dport with --syn, then --dport (one
			 * port before a set), then --syn, then --proto
			 */
			rank = mrules[i].plen * 32 + (mrules[i].dst_len ? 16 : 0) +
			       (mrules[i].nports ? 8 : 0) + (mrules[i].syn ? 4 : 0) +
			       (mrules[i].nports == 1 && mrules[i].lo[0] == mrules[i].hi[0] ? 2 : 0) +
			       (mrules[i].proto ? 1 : 0);
			/* one rank: the longer --dst, then the set of fewer ports */
			if (rank > bestrank ||
			    (rank == bestrank && (mrules[i].dst_len > mrules[best].dst_len ||
						  (mrules[i].dst_len == mrules[best].dst_len &&
						   model_ports(&mrules[i]) < model_ports(&mrules[best]))))) {
				bestrank = rank;
				best = i;
			}
		}
	}
	if (best == NRULES) {
		o->no_rule = 1;
		return;
	}
	if (mrules[best].action == ALLOW ||
	    (mrules[best].action == LIMIT && take_token((int)best, m) == 1)) {
		o->rule_pass[best] = 1;
		return;
	}
	o->rule_drop[best] = 1;
	o->dropped = 1;
	o->verdict = XDP_DROP;
}

/* ------------------------------------------------------------ frames */

static const char *const v4_pool[] = {
	"192.0.2.1", "192.0.2.77", "192.0.2.130", "192.0.2.200", "198.51.100.1", "198.51.100.2",
	"203.0.113.1", "203.0.113.2", "203.0.113.3", "100.64.0.1", "100.64.0.2", "10.9.9.9",
};
/* destinations: in and out of the --dst prefixes, mapped and not */
static const char *const dst4_pool[] = { "198.51.100.254", "198.51.100.1", "198.51.100.130" };
static const char *const dst6_pool[] = {
	"2001:db8:ffff::fe", "2001:db8:ffff::1fe", "2001:db8:ffff::1", "::ffff:198.51.100.254",
	"::ffff:198.51.100.1", "::ffff:198.51.100.200", "::c633:64fe",
	"c633:6401::1",   /* its first word is 198.51.100.1: no IPv4 destination all the same */
};
static const char *const v6_pool[] = {
	"2001:db8:a::1", "2001:db8:a::2", "2001:db8:b::1", "2001:db8:c::1", "2001:db8:c:1::1",
	"2001:db8:d::1", "2001:db8:d::2", "2001:db8:ffff::1",
	/* IPv4-mapped (judged as IPv4), 6to4 and NAT64 (judged as IPv6) */
	"::ffff:192.0.2.1", "::ffff:192.0.2.130", "::ffff:203.0.113.2", "::ffff:100.64.0.1",
	"2002:c000:201::1", "64:ff9b::c000:201",
};

static void put16(__u8 *p, unsigned v)
{
	p[0] = (__u8)(v >> 8);
	p[1] = (__u8)v;
}

static int pick_proto(int family)
{
	int r = (int)rnd(100);

	if (r < 40)
		return 6;
	if (r < 75)
		return 17;
	if (r < 85)
		return family == 4 ? 1 : 58;
	if (r < 90)
		return family == 4 ? 47 : 59;
	return (int)rnd(256);
}

/* An L4 header (20 bytes room) at p; returns its length. */
static int put_l4(__u8 *p, int proto)
{
	static const int ports[] = { 22, 53, 80, 443, 7999, 8000, 8100, 8101, 5353, 5360, 5361 };
	static const __u8 flags[] = { 0x02, 0x12, 0x10, 0x18, 0x04 };
	int i;

	for (i = 0; i < 20; i++)
		p[i] = (__u8)rnd(256);
	put16(p, 1024 + rnd(60000));
	put16(p + 2, chance(80) ? (unsigned)ports[rnd(sizeof(ports) / sizeof(ports[0]))] : rnd(65536));
	if (proto == 6) {
		p[12] = chance(95) ? 5 << 4 : (__u8)(rnd(16) << 4);
		p[13] = chance(90) ? flags[rnd(5)] : (__u8)rnd(256);
		return 20;
	}
	if (proto == 17)
		put16(p + 4, 8);
	return 8;
}

static size_t build_frame(__u8 *b, size_t cap)
{
	size_t off = 12, l3, len;
	int tags, i, family, proto;

	memset(b, 0, cap);
	for (i = 0; i < 12; i++)
		b[i] = (__u8)(i < 6 ? 2 : 4);
	tags = chance(55) ? 0 : chance(40) ? 1 + (int)rnd(2) : chance(65) ? 3 + (int)rnd(6) : 9 + (int)rnd(4);
	for (i = 0; i < tags; i++, off += 4) {
		put16(b + off, chance(50) ? 0x8100 : 0x88a8);
		put16(b + off + 2, chance(50) ? 0 : rnd(4096));
	}
	if (chance(8)) {   /* not IP: ARP, QinQ's old 0x9100, anything */
		static const unsigned other[] = { 0x0806, 0x9100, 0x88cc, 0x8847 };

		put16(b + off, chance(70) ? other[rnd(4)] : rnd(65536));
		for (i = 0; i < 46; i++)
			b[off + 2 + i] = (__u8)rnd(256);
		return off + 48;
	}
	family = chance(50) ? 4 : 6;
	put16(b + off, family == 4 ? 0x0800 : 0x86dd);
	l3 = off + 2;
	proto = pick_proto(family);
	if (family == 4) {
		int words = chance(80) ? 0 : chance(80) ? 1 + (int)rnd(3) : (int)rnd(11);
		size_t hlen = 20 + 4 * (size_t)words, l4 = l3 + hlen;
		int frag = (int)rnd(100), l4len;

		b[l3] = (__u8)(0x40 | (hlen / 4));
		b[l3 + 8] = 64;
		b[l3 + 9] = (__u8)proto;
		inet_pton(AF_INET, chance(90) ? v4_pool[rnd(sizeof(v4_pool) / sizeof(v4_pool[0]))] : "198.18.7.7",
			  b + l3 + 12);
		if (chance(5))
			rnd(2) ? (void)(b[l3 + 12] = (__u8)rnd(256)) : (void)(b[l3 + 15] = (__u8)rnd(256));
		inet_pton(AF_INET, dst4_pool[rnd(sizeof(dst4_pool) / sizeof(dst4_pool[0]))], b + l3 + 16);
		for (i = 0; i < words; i++)
			b[l3 + 20 + 4 * (size_t)i] = 1;
		l4len = put_l4(b + l4, proto);
		len = l4 + (size_t)l4len + rnd(24);
		if (frag < 70) {
			/* whole */
		} else if (frag < 82) {
			put16(b + l3 + 6, 0x2000);   /* first fragment, and often a tiny one */
			if (chance(70))
				len = l4 + 4 * rnd(6);
		} else if (frag < 95) {
			put16(b + l3 + 6, (chance(50) ? 0x2000 : 0) | (1 + rnd(4)));   /* later */
		} else {
			put16(b + l3 + 6, rnd(65536));
		}
		put16(b + l3 + 2, (unsigned)(len - l3));
		if (chance(10))
			put16(b + l3 + 2, rnd(100));   /* a bad total length */
		if (chance(3))
			b[l3] = (__u8)rnd(256);        /* a bad version or IHL */
	} else {
		int n = chance(60) ? 0 : chance(50) ? 1 + (int)rnd(3) : 4 + (int)rnd(9);
		static const int ext[] = { 0, 43, 60, 51, 44 };
		size_t p = l3 + 40;
		__u8 *prev_next = b + l3 + 6;

		b[l3] = 0x60;
		b[l3 + 7] = 64;
		inet_pton(AF_INET6, chance(90) ? v6_pool[rnd(sizeof(v6_pool) / sizeof(v6_pool[0]))] : "2001:db8:7777::7",
			  b + l3 + 8);
		if (chance(5))
			b[l3 + 8 + rnd(16)] = (__u8)rnd(256);
		inet_pton(AF_INET6, dst6_pool[rnd(sizeof(dst6_pool) / sizeof(dst6_pool[0]))], b + l3 + 24);
		for (i = 0; i < n && p + 24 < cap - 60; i++) {
			int t = ext[rnd(5)];

			*prev_next = (__u8)t;
			prev_next = b + p;
			if (t == 44) {
				/* fragment: first (offset 0) mostly, M set or not */
				put16(b + p + 2, chance(75) ? (unsigned)rnd(2) : (rnd(8191) + 1) << 3 | rnd(2));
				p += 8;
			} else {
				int words = chance(80) ? 0 : 1 + (int)rnd(2);

				b[p + 1] = (__u8)words;
				p += t == 51 ? ((size_t)words + 2) * 4 : ((size_t)words + 1) * 8;
			}
		}
		*prev_next = (__u8)proto;
		len = p + (size_t)put_l4(b + p, proto) + rnd(24);
		if (chance(12))
			len = p + 4 * rnd(5);   /* cut inside the L4 header (a tiny first fragment, say) */
		put16(b + l3 + 4, (unsigned)(len - l3 - 40));
		if (chance(10))
			put16(b + l3 + 4, rnd(200));   /* a bad payload length */
		if (chance(3))
			b[l3] = (__u8)rnd(256);
	}
	/* the bytes after the packet: zero padding to 60, or (sometimes) leftovers */
	if (len < 60)
		len = 60;
	if (chance(10))
		len += rnd(20);
	return len < cap ? len : cap;
}

/* Mutations: a cut, a few bytes changed. */
static size_t mutate(__u8 *b, size_t len)
{
	int i, n;

	if (chance(25))
		len = 14 + rnd((uint32_t)(len - 13));
	n = chance(30) ? 1 + (int)rnd(3) : 0;
	for (i = 0; i < n && len > 12; i++)
		b[12 + rnd((uint32_t)(len - 12))] = (__u8)rnd(256);
	return len;
}

/* ------------------------------------------------------------ the run */

static void hexdump(const __u8 *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		fprintf(stderr, "%02x%s", b[i], (i + 1) % 32 == 0 ? "\n    " : "");
	fprintf(stderr, "\n");
}

/* The rules' counters, one lookup each (the batch reader reads all 4096 slots). */
static int read_rules(struct xrl_tl *t, const __u32 *ids, struct xrl_rule_stats *out)
{
	size_t i;

	for (i = 0; i < NRULES; i++)
		if (xrl_read_rule_stats(&t->maps, ids[i], &out[i]))
			return -1;
	return 0;
}

static int observe(struct xrl_tl *t, const __u32 *ids, struct outcome *o, int verdict,
		   const struct xrl_global_stats *g0, const struct xrl_rule_stats *r0,
		   struct xrl_global_stats *g1, struct xrl_rule_stats *r1)
{
	size_t i;

	if (xrl_read_global(&t->maps, g1) || read_rules(t, ids, r1))
		return -1;
	memset(o, 0, sizeof(*o));
	o->verdict = verdict;
	o->non_ip = g1->non_ip - g0->non_ip;
	o->malformed = g1->malformed - g0->malformed;
	o->judged = g1->malformed_judged - g0->malformed_judged;
	o->vlan_deep = g1->vlan_deep - g0->vlan_deep;
	o->no_rule = g1->no_rule - g0->no_rule;
	o->dropped = g1->dropped - g0->dropped;
	for (i = 0; i < NRULES; i++) {
		o->rule_pass[i] = r1[i].passed - r0[i].passed;
		o->rule_drop[i] = r1[i].dropped - r0[i].dropped;
	}
	return 0;
}

static void print_outcome(const char *who, const struct outcome *o)
{
	size_t i;

	fprintf(stderr, "  %s: verdict %s, +non_ip %llu +malformed %llu +judged %llu +vlan_deep %llu "
		"+no_rule %llu +dropped %llu", who, o->verdict == XDP_DROP ? "drop" : o->verdict == XDP_PASS ? "pass" : "?",
		(unsigned long long)o->non_ip, (unsigned long long)o->malformed,
		(unsigned long long)o->judged, (unsigned long long)o->vlan_deep,
		(unsigned long long)o->no_rule, (unsigned long long)o->dropped);
	for (i = 0; i < NRULES; i++)
		if (o->rule_pass[i] || o->rule_drop[i])
			fprintf(stderr, "; rule '%s' +passed %llu +dropped %llu", mrules[i].line,
				(unsigned long long)o->rule_pass[i], (unsigned long long)o->rule_drop[i]);
	fprintf(stderr, "\n");
}

static const char *const cls_name[] = { "not IP", "too many VLAN tags", "malformed, no source", "IP" };

/* One policy: N frames; returns mismatches (or -1 when the run could not be done). */
static int run_policy(__u32 policy, uint64_t seed, long frames, long *classes)
{
	static const char *lines[NRULES + 1];
	struct xrl_rule_def def;
	struct xrl_tl t;
	__u32 ids[NRULES];
	char err[XRL_ERRLEN];
	int bad = 0;
	long f;
	size_t i;

	if (xrl_tl_open(&t, 4096, policy))
		return -1;
	for (i = 0; i < NRULES; i++)
		lines[i] = mrules[i].line;
	lines[NRULES] = NULL;
	if (xrl_tl_rules(&t, lines)) {
		xrl_tl_close(&t);
		return -1;
	}
	/* each model rule's id: the rule in force with the same prefix and match */
	for (i = 0; i < NRULES; i++) {
		char text[256];
		int id;

		if (xrl_rule_parse_line(mrules[i].line, &def, err, sizeof(err)) != 1)
			return -1;
		xrl_rule_format(&def, text, sizeof(text));
		id = xrl_tl_rule_id(&t, text);
		if (id < 0) {
			fprintf(stderr, "rule '%s' not found after apply\n", text);
			return -1;
		}
		ids[i] = (__u32)id;
	}
	xrl_tl_set_clock(&t, 1000 * SEC_NS);
	nbuckets = 0;
	rng_s = seed * 0x9e3779b97f4a7c15ULL + policy + 1;

	/* counters before frame f (after frame f - 1) in g0, r0 */
	struct xrl_global_stats g0, g1;
	struct xrl_rule_stats r0[NRULES], r1[NRULES];

	for (f = 0; f < frames; f++) {
		__u8 buf[256];
		size_t len = build_frame(buf, sizeof(buf));
		struct outcome want, got;
		struct mpkt m;
		int v;

		if (chance(40))
			len = mutate(buf, len);
		model_parse(&m, buf, (long)len);
		classes[m.cls]++;
		if (m.cls == C_IP && m.bad)
			classes[4]++;
		if (f == 0 && (xrl_read_global(&t.maps, &g0) || read_rules(&t, ids, r0)))
			return -1;
		v = xrl_tl_run(t.prog_fd, buf, len, 1, NULL);
		model_decide(&m, policy == XRL_MALFORMED_DROP, &want);
		if (observe(&t, ids, &got, v, &g0, r0, &g1, r1))
			return -1;
		if (memcmp(&want, &got, sizeof(want))) {
			if (bad < 8) {
				fprintf(stderr, "MISMATCH policy %s frame %ld (seed %llu), %zu bytes, model: %s%s, proto %s%d, l4 %d:\n    ",
					policy ? "drop" : "pass", f, (unsigned long long)seed, len,
					cls_name[m.cls], m.bad ? " (malformed past the source)" : "",
					m.proto_known ? "" : "unknown ", m.proto, m.l4);
				hexdump(buf, len);
				print_outcome("model  ", &want);
				print_outcome("program", &got);
			}
			bad++;
		}
		g0 = g1;
		memcpy(r0, r1, sizeof(r0));
	}
	xrl_tl_close(&t);
	return bad;
}

int main(int argc, char **argv)
{
	uint64_t seed = 12;
	long frames = 3000, classes[5];
	int passed = 0, failed = 0, k, i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--frames"))
			frames = strtol(argv[i + 1], NULL, 0);
		else
			break;
	}
	if (i < argc || frames <= 0) {
		fprintf(stderr, "usage: test_fuzz [--seed S] [--frames N]\n");
		return 2;
	}
	for (i = 0; i < (int)NRULES; i++)
		mrule_init(&mrules[i]);
	for (k = 0; k < 2; k++) {
		__u32 policy = k ? XRL_MALFORMED_DROP : XRL_MALFORMED_PASS;
		int bad;

		memset(classes, 0, sizeof(classes));
		bad = run_policy(policy, seed, frames, classes);
		printf("policy %s, seed %llu: %ld frames (%ld not IP, %ld too many tags, %ld malformed without source, "
		       "%ld IP of which %ld malformed): %d mismatches\n",
		       k ? "drop" : "pass", (unsigned long long)seed, frames, classes[0], classes[1],
		       classes[2], classes[3], classes[4], bad);
		if (bad == 0)
			passed++;
		else
			failed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
