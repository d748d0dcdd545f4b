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

/*
 * A packet that does not show a field a rule matches on (p->unknown: a
 * truncated or tiny first fragment's L4 header, an IPv6 chain cut or too
 * long) is judged conservatively (RFC 1858): an allow rule needs proof, so
 * it does not match; a deny or limit rule presumes a match.
 */
static __always_inline int xrl_rule_matches(const struct xrl_rule *r, const struct xrl_pkt *p)
{
	if (p->unknown) {
		if (((r->flags & XRL_F_PROTO) && (p->unknown & XRL_UNK_PROTO)) ||
		    ((r->flags & (XRL_F_DPORT | XRL_F_SYN)) && (p->unknown & XRL_UNK_L4) &&
		     (!(r->flags & XRL_F_PROTO) || r->proto == p->proto)))
			return r->action != XRL_ACT_ALLOW;
	}
	if ((r->flags & XRL_F_PROTO) && r->proto != p->proto)
		return 0;
	if ((r->flags & XRL_F_DPORT) && (!p->has_l4 || r->dport != p->dport))
		return 0;
	/* tcp_flags is 0 without L4 (p starts zeroed): no SYN then */
	if ((r->flags & XRL_F_SYN) &&
	    (p->tcp_flags & (XRL_TCP_SYN | XRL_TCP_ACK)) != XRL_TCP_SYN)
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
