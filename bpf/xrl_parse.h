/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Packet parsing for the XDP program: Ethernet, up to XRL_MAX_VLAN VLAN
 * tags, IPv4 (with options), IPv6 (with a bounded walk over extension
 * headers) and the L4 header. Every read is bounds-checked against
 * data_end, and the L4 header against the IP packet's own length too (a
 * frame may carry bytes past it that the kernel trims). The classes, as
 * docs/xrl.8 (MALFORMED PACKETS) states them:
 *  - not IP (XRL_PARSE_NON_IP): pass;
 *  - more VLAN tags than walked (XRL_PARSE_VLAN_DEEP): dropped, it may be IP;
 *  - malformed before its source can be read (XRL_PARSE_MALFORMED): the
 *    --malformed policy;
 *  - IP with a source (XRL_PARSE_IP): judged by the rules;
 *  - malformed past its source (XRL_PARSE_BAD_L4, XRL_PARSE_BAD_PROTO):
 *    judged by the rules too (under --malformed pass), without the fields
 *    the result names. Distinct results rather than flags in p keep the
 *    common path free of the stores a flag would need on every exit.
 */
#ifndef XRL_PARSE_H
#define XRL_PARSE_H

#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include "xrl_common.h"

enum xrl_parse_result {
	XRL_PARSE_IP = 0,         /* an IP packet with a readable source: rules apply */
	XRL_PARSE_NON_IP = 1,     /* ARP, LLDP, ...: pass untouched */
	XRL_PARSE_MALFORMED = 2,  /* truncated or invalid before the source: policy */
	XRL_PARSE_VLAN_DEEP = 3,  /* more than XRL_MAX_VLAN tags: dropped */
	XRL_PARSE_BAD_L4 = 4,     /* source and proto read, the L4 header should be there and is not */
	XRL_PARSE_BAD_PROTO = 5,  /* source read, not even the L4 protocol (IPv6 chain cut or too long) */
};

/* struct xrl_pkt, what the parse gives the rule match, is in xrl_common.h. */

struct xrl_vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

/* IPv6 extension header common prefix. */
struct xrl_ipv6_opt {
	__u8 nexthdr;
	__u8 hdrlen;
};

struct xrl_ipv6_frag {
	__u8   nexthdr;
	__u8   reserved;
	__be16 frag_off;     /* offset << 3 | flags */
	__be32 identification;
};

static __always_inline int xrl_is_vlan(__u16 h_proto)
{
	return h_proto == bpf_htons(ETH_P_8021Q) || h_proto == bpf_htons(ETH_P_8021AD);
}

/*
 * Parse the L4 header at l4; proto is already set. end is where the IP
 * packet ends (its total or payload length), data_end where the frame does:
 * the header must fit both (the verifier learns only from data_end).
 */
static __always_inline int xrl_parse_l4(void *l4, void *end, void *data_end, struct xrl_pkt *p)
{
	if (p->proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > data_end || (void *)(th + 1) > end || th->doff < 5)
			return XRL_PARSE_BAD_L4;
		p->dport = bpf_ntohs(th->dest);
		p->tcp_flags = ((__u8 *)th)[13];
		p->has_l4 = 1;
	} else if (p->proto == IPPROTO_UDP) {
		struct udphdr *uh = l4;

		if ((void *)(uh + 1) > data_end || (void *)(uh + 1) > end)
			return XRL_PARSE_BAD_L4;
		p->dport = bpf_ntohs(uh->dest);
		p->has_l4 = 1;
	} else if (p->proto == IPPROTO_ICMP || p->proto == IPPROTO_ICMPV6) {
		/* type, code, checksum and 4 bytes of rest */
		if (l4 + 8 > data_end || l4 + 8 > end)
			return XRL_PARSE_BAD_L4;
		p->has_l4 = 1;
	}
	return XRL_PARSE_IP;
}

static __always_inline int xrl_parse_ipv4(void *l3, void *data_end, struct xrl_pkt *p)
{
	struct iphdr *iph = l3;
	__u32 hlen, tot;

	if ((void *)(iph + 1) > data_end)
		return XRL_PARSE_MALFORMED;   /* no source to judge */
	if (iph->version != 4)
		return XRL_PARSE_MALFORMED;
	hlen = iph->ihl * 4;
	tot = bpf_ntohs(iph->tot_len);
	/*
	 * The source is read: from here on a bad packet is judged by it. Its
	 * fields are set on each side apart, so the common path carries none
	 * of the bad path's values through its checks.
	 */
	if (hlen < 20 || tot < hlen || l3 + tot > data_end) {
		p->proto = iph->protocol;
		p->saddr[0] = iph->saddr;
		p->dst.addr[0] = iph->daddr;
		p->family = 4;
		return XRL_PARSE_BAD_L4;
	}
	p->family = 4;
	p->saddr[0] = iph->saddr;
	p->dst.addr[0] = iph->daddr;
	p->proto = iph->protocol;
	/* later fragments carry no L4 header; their proto is still known */
	if (iph->frag_off & bpf_htons(0x1fff))
		return XRL_PARSE_IP;
	return xrl_parse_l4(l3 + hlen, l3 + tot, data_end, p);
}

static __always_inline int xrl_parse_ipv6(void *l3, void *data_end, struct xrl_pkt *p)
{
	struct ipv6hdr *ip6 = l3;
	void *cur, *end;
	__u8 nexthdr;
	int i;

	if ((void *)(ip6 + 1) > data_end)
		return XRL_PARSE_MALFORMED;   /* no source to judge */
	if (ip6->version != 6)
		return XRL_PARSE_MALFORMED;
	p->family = 6;
	__builtin_memcpy(p->saddr, &ip6->saddr, 16);
	__builtin_memcpy(p->dst.addr, &ip6->daddr, 16);
	end = (void *)(ip6 + 1) + bpf_ntohs(ip6->payload_len);
	if (end > data_end)
		return XRL_PARSE_BAD_PROTO;
	nexthdr = ip6->nexthdr;
	cur = ip6 + 1;

	/* up to XRL_MAX_EXT_HDRS extension headers, then the L4 header */
#pragma unroll
	for (i = 0; i <= XRL_MAX_EXT_HDRS; i++) {
		if (nexthdr == IPPROTO_HOPOPTS || nexthdr == IPPROTO_ROUTING ||
		    nexthdr == IPPROTO_DSTOPTS) {
			struct xrl_ipv6_opt *opt = cur;

			if (i == XRL_MAX_EXT_HDRS)
				break;   /* one header too many */
			if ((void *)(opt + 1) > data_end || (void *)(opt + 1) > end)
				return XRL_PARSE_BAD_PROTO;
			nexthdr = opt->nexthdr;
			cur += (opt->hdrlen + 1) * 8;
		} else if (nexthdr == IPPROTO_FRAGMENT) {
			struct xrl_ipv6_frag *fh = cur;

			if (i == XRL_MAX_EXT_HDRS)
				break;
			if ((void *)(fh + 1) > data_end || (void *)(fh + 1) > end)
				return XRL_PARSE_BAD_PROTO;
			nexthdr = fh->nexthdr;
			cur = fh + 1;
			if (fh->frag_off & bpf_htons(0xfff8)) {
				p->proto = nexthdr;   /* later fragment: no L4 */
				return XRL_PARSE_IP;
			}
		} else {
			p->proto = nexthdr;
			return xrl_parse_l4(cur, end, data_end, p);
		}
	}
	/* a chain longer than the bound: the L4 protocol stays unknown */
	return XRL_PARSE_BAD_PROTO;
}

/*
 * The common frame at fixed offsets: untagged IPv4 without options (version
 * 4, IHL 5), whole in the frame, not a later fragment, at least 8 bytes
 * past the IPv4 header in the frame. Then it is decided as xrl_parse_ipv4
 * decides it (the same fields, the same xrl_parse_l4), without the VLAN
 * walk, the IHL arithmetic and their bounds checks; any other frame
 * returns -1 with p untouched and the full parse decides.
 */
static __always_inline int xrl_parse_fast4(void *data, void *data_end, struct xrl_pkt *p)
{
	struct iphdr *iph = data + sizeof(struct ethhdr);
	void *l4 = iph + 1;
	__u32 tot;

	if (l4 + 8 > data_end)
		return -1;
	if (((struct ethhdr *)data)->h_proto != bpf_htons(ETH_P_IP) || *(__u8 *)iph != 0x45 ||
	    (iph->frag_off & bpf_htons(0x1fff)))
		return -1;
	tot = bpf_ntohs(iph->tot_len);
	if (tot < sizeof(*iph) || (void *)iph + tot > data_end)
		return -1;
	p->family = 4;
	p->saddr[0] = iph->saddr;
	p->dst.addr[0] = iph->daddr;
	p->proto = iph->protocol;
	return xrl_parse_l4(l4, (void *)iph + tot, data_end, p);
}

/*
 * An IPv4-mapped source (::ffff:a.b.c.d) reaches a dual-stack socket,
 * which reports it as the IPv4 address a.b.c.d (Linux 6.18 delivers such
 * packets): a packet from it is judged as that IPv4 source, by the IPv4
 * rules and in the IPv4 bucket. Other embeddings (6to4 2002::/16, NAT64
 * 64:ff9b::/96, IPv4-compatible ::a.b.c.d) are delivered and reported as
 * the IPv6 addresses they are: the IPv6 rules judge them. Called after
 * the parse for an IPv6 source whose first word is 0 (other IPv6 sources
 * pay one test). A global function: the verifier checks it once and the
 * caller's packet fields come back unknown, so the IPv6 exits of the parse
 * make one state after it (inlined, it walked the whole decision again
 * for each of them as IPv4: +160k processed instructions, against +35k).
 * The destination goes with it: a mapped one (::ffff:e.f.g.h, the address
 * a dual-stack socket is reached at as e.f.g.h) becomes that IPv4 address;
 * any other is an IPv6 address no IPv4 --dst holds (dst.not4).
 * 1 when p was mapped.
 */
__noinline int xrl_unmap_v4(struct xrl_pkt *p)
{
	if (!p)
		return 0;
	if (p->saddr[0] == 0 && p->saddr[1] == 0 && p->saddr[2] == bpf_htonl(0xffff)) {
		p->family = 4;
		p->saddr[0] = p->saddr[3];
		p->saddr[2] = 0;
		p->saddr[3] = 0;
		if (p->dst.addr[0] == 0 && p->dst.addr[1] == 0 && p->dst.addr[2] == bpf_htonl(0xffff))
			p->dst.addr[0] = p->dst.addr[3];
		else
			p->dst.not4 = 1;
		p->dst.addr[2] = 0;
		p->dst.addr[3] = 0;
		return 1;
	}
	return 0;
}

/*
 * A packet of a device without a link-layer header (ARPHRD_NONE: tun,
 * WireGuard; ARPHRD_TUNNEL, _TUNNEL6, _SIT, _IPGRE, _IP6GRE: ipip, ip6tnl,
 * sit, gre; ARPHRD_PPP, _RAWIP): XDP (generic there) gives it from its
 * network header, so it starts with the IP header, whose version nibble
 * says which (the kernel delivers nothing else as IP: a tun drops other
 * nibbles, ip_rcv and ipv6_rcv check the version). Anything shorter than a
 * byte, or of another version (MPLS over gre), is not IP to xrl: passed.
 */
static __always_inline int xrl_parse_l3(void *data, void *data_end, struct xrl_pkt *p)
{
	__u8 version;

	if (data + 1 > data_end)
		return XRL_PARSE_NON_IP;
	version = *(__u8 *)data >> 4;
	if (version == 4)
		return xrl_parse_ipv4(data, data_end, p);
	if (version == 6)
		return xrl_parse_ipv6(data, data_end, p);
	return XRL_PARSE_NON_IP;
}

/* Parse a frame; fills p for XRL_PARSE_IP, and what was read for XRL_PARSE_BAD_*. */
static __always_inline int xrl_parse(void *data, void *data_end, struct xrl_pkt *p)
{
	struct ethhdr *eth = data;
	void *cur = eth + 1;
	__u16 h_proto;
	int i, fast = xrl_parse_fast4(data, data_end, p);

	if (fast >= 0)
		return fast;
	if (cur > data_end)
		return XRL_PARSE_NON_IP;   /* not even Ethernet: not ours to judge */
	h_proto = eth->h_proto;

	if (xrl_is_vlan(h_proto)) {
		__u64 off = sizeof(*eth), a, b;

		/* one more turn than tags walked: a tag still there then is one too many */
#pragma unroll
		for (i = 0; i <= XRL_MAX_VLAN; i++) {
			struct xrl_vlan_hdr *vh = cur;

			if (!xrl_is_vlan(h_proto))
				break;
			if (i == XRL_MAX_VLAN)
				return XRL_PARSE_VLAN_DEEP;
			if ((void *)(vh + 1) > data_end)
				return XRL_PARSE_NON_IP;   /* cut inside a tag: the kernel cannot deliver it */
			h_proto = vh->encap_proto;
			cur = vh + 1;
			off += sizeof(*vh);
		}
		/*
		 * The verifier would check the IP parse below (and all that
		 * follows it) once per tag count: hide the count from it. off
		 * + a - b is off (a and b are one value the compiler cannot
		 * see is one), and the verifier takes it for any value below
		 * 64, so the tagged frames make one state, not XRL_MAX_VLAN.
		 */
		a = h_proto;
		b = h_proto;
		asm volatile("" : "+r"(b));
		off = (off + a - b) & 63;
		asm volatile("" : "+r"(off));
		cur = data + off;
	}

	if (h_proto == bpf_htons(ETH_P_IP))
		return xrl_parse_ipv4(cur, data_end, p);
	if (h_proto == bpf_htons(ETH_P_IPV6))
		return xrl_parse_ipv6(cur, data_end, p);
	return XRL_PARSE_NON_IP;
}

#endif /* XRL_PARSE_H */
