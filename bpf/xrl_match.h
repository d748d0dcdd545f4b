/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Rule matching: which rule of the rule-set generation gen judges a parsed
 * packet. Pure functions that compile as BPF and as host C, so the unit
 * tests run the very code the XDP program runs.
 *
 * The prefix lookup itself is the includer's: it defines
 *   XRL_PREFIX_LOOKUP_V4(k)  (k: struct xrl_lpm_v4 *)
 *   XRL_PREFIX_LOOKUP_V6(k)  (k: struct xrl_lpm_v6 *)
 * as the prefix entry of the longest prefix that holds the key (NULL:
 * none); the program with bpf_map_lookup_elem on its LPM tries, a host test
 * with a table of its own. The keys are built here: the generation's
 * parity in 32 bits before the address, so the lookup never crosses into
 * the other parity's set (the one before, or the next being written).
 */
#ifndef XRL_MATCH_H
#define XRL_MATCH_H

#include "xrl_common.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* The first len bits of a 32-bit word in network order (len 1..32). */
static __always_inline __u32 xrl_mask32(__u32 len)
{
	__u32 m = ~0u << (32 - len);

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	m = __builtin_bswap32(m);
#endif
	return m;
}

/* Do words a and b agree in their first len bits (len >= 32: all of them)? */
static __always_inline int xrl_word_in(__u32 a, __u32 b, __u32 len)
{
	if (len >= 32)
		return a == b;
	return !len || !((a ^ b) & xrl_mask32(len));
}

/* What xrl_more_match is given for a packet without a port. */
#define XRL_PORT_NONE 0x10000   /* no L4 header (a later fragment): no set holds it */
#define XRL_PORT_ANY  0x20000   /* the L4 header unknown: presumed in the set (RFC 1858) */

/*
 * The match fields of XRL_F_MORE: the port set (sorted disjoint ranges:
 * the walk stops at the first range past the port) and the destination
 * prefix. The rule sits in the trie of the packet's family, so the
 * families agree; a packet judged as IPv4 from a mapped source but sent
 * to an IPv6 destination has no IPv4 destination (d->not4). In the
 * program a global function: the verifier checks its loops once, not once
 * per rule of the scan and per path to it (inlined, the program passed
 * the verifier's limit of 1M instructions); it reads only the rule and
 * d, so the caller's packet stays known to the verifier.
 */
#ifdef __BPF__
__noinline int
#else
static inline int
#endif
xrl_more_match(const struct xrl_rule *r, const struct xrl_pkt_dst *d, __u32 port, __u32 family)
{
	__u32 n, len, i;

	if (!r || !d)
		return 0;
	n = r->nports;
	if (n && port != XRL_PORT_ANY) {
		for (i = 0; i < XRL_MAX_PORT_RANGES; i++) {
			if (i >= n || port < r->ports[i].lo)
				return 0;
			if (port <= r->ports[i].hi)
				break;
		}
		if (i == XRL_MAX_PORT_RANGES)
			return 0;
	}
	len = r->dst_len;
	if (!len)
		return 1;
	if (family == 4)
		return !d->not4 && xrl_word_in(d->addr[0], r->dst[0], len);
	return xrl_word_in(d->addr[0], r->dst[0], len) &&
	       xrl_word_in(d->addr[1], r->dst[1], len > 32 ? len - 32 : 0) &&
	       xrl_word_in(d->addr[2], r->dst[2], len > 64 ? len - 64 : 0) &&
	       xrl_word_in(d->addr[3], r->dst[3], len > 96 ? len - 96 : 0);
}

/*
 * A packet that does not show a field a rule matches on (p->unknown: a
 * truncated or tiny first fragment's L4 header, an IPv6 chain cut or too
 * long) is judged conservatively (RFC 1858): an allow rule needs proof, so
 * it does not match; a deny or limit rule presumes a match, of the fields
 * it does not show (the destination is always shown: a --dst that does
 * not hold it is no match).
 */
static __always_inline int xrl_rule_matches(const struct xrl_rule *r, const struct xrl_pkt *p)
{
	if (p->unknown) {
		if (((r->flags & XRL_F_PROTO) && (p->unknown & XRL_UNK_PROTO)) ||
		    (((r->flags & (XRL_F_DPORT | XRL_F_SYN)) ||
		      ((r->flags & XRL_F_MORE) && r->nports)) &&
		     (p->unknown & XRL_UNK_L4) &&
		     (!(r->flags & XRL_F_PROTO) || r->proto == p->proto)))
			return r->action != XRL_ACT_ALLOW &&
			       (!(r->flags & XRL_F_MORE) ||
				xrl_more_match(r, &p->dst, XRL_PORT_ANY, p->family));
	}
	if ((r->flags & XRL_F_PROTO) && r->proto != p->proto)
		return 0;
	if ((r->flags & XRL_F_DPORT) && (!p->has_l4 || r->dport != p->dport))
		return 0;
	/* tcp_flags is 0 without L4 (p starts zeroed): no SYN then */
	if ((r->flags & XRL_F_SYN) &&
	    (p->tcp_flags & (XRL_TCP_SYN | XRL_TCP_ACK)) != XRL_TCP_SYN)
		return 0;
	/* a port set: as one port, no L4 header (a later fragment) is no match */
	if ((r->flags & XRL_F_MORE) &&
	    !xrl_more_match(r, &p->dst, p->has_l4 ? p->dport : XRL_PORT_NONE, p->family))
		return 0;
	return 1;
}

/* The prefix entry of generation gen holding the packet's source, or NULL: gen's parity is its set's. */
static __always_inline struct xrl_prefix_entry *xrl_find_prefix(const struct xrl_pkt *p, __u32 gen)
{
	if (p->family == 4) {
		struct xrl_lpm_v4 k = { .prefixlen = 64, .gen = gen & 1u };

		__builtin_memcpy(k.addr, &p->saddr[0], 4);
		return XRL_PREFIX_LOOKUP_V4(&k);
	} else {
		struct xrl_lpm_v6 k = { .prefixlen = 160, .gen = gen & 1u };

		__builtin_memcpy(k.addr, p->saddr, 16);
		return XRL_PREFIX_LOOKUP_V6(&k);
	}
}

/* The first rule of the source's prefix entry that matches the packet, or NULL. */
static __always_inline const struct xrl_rule *xrl_scan(const struct xrl_prefix_entry *ent,
						       const struct xrl_pkt *p)
{
	__u32 n = ent->count, i;

	for (i = 0; i < XRL_MAX_MATCH; i++) {
		if (i >= n)
			break;
		if (xrl_rule_matches(&ent->rules[i], p))
			return &ent->rules[i];
	}
	return 0;
}

#endif /* XRL_MATCH_H */
