/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The data path's side of busy clients (xrl_busy.h, xrl_common.h): a
 * --syn rule's sampled drop records its source in xrl_busy; a segment of
 * an established connection from that source marks it. Included by
 * xrl.bpf.c after its clocks and the SYN proxy (it reads a segment as the
 * proxy does). Costs: nothing is looked up while xrl_busy_on[0] is 0 (one
 * load per packet); the record rides the drop path's existing sample (1
 * drop in XRL_LIMITED_SAMPLE per CPU) and writes only when the slot is
 * another source's or its stamp is 100 ms old; a marking segment writes a
 * stamp at most every 100 ms per slot, and asks the kernel for its
 * connection as seldom.
 */
#ifndef XRL_BUSY_BPF_H
#define XRL_BUSY_BPF_H

#include "xrl_busy.h"

/*
 * A sampled drop of a --syn rule (its /per per_len) for key: the source is
 * recorded, the gate opened. A global function, as xrl_busy_sighting.
 */
__noinline int xrl_busy_note(const struct xrl_bucket_key *key, __u32 per_len, __u64 now_ns,
			     struct xrl_config *cfg)
{
	struct xrl_busy_slot *s;
	__u32 idx, zero = 0;
	__u64 *on;

	if (!key || !cfg || !xrl_busy_recordable(key->family, per_len))
		return 0;
	idx = xrl_busy_index(key->family, key->addr, cfg->hash_seed);
	s = bpf_map_lookup_elem(&xrl_busy, &idx);
	if (!s)
		return 0;
	switch (xrl_busy_on_syn_drop(s, key, now_ns)) {
	case XRL_BUSY_TAKE:
		s->seen_ns = 0;   /* the marks are the last source's */
		s->proven_ns = 0;
		s->tried_ns = 0;
		s->key = *key;
		s->per_len = per_len;
		s->syn_ns = now_ns;
		break;
	case XRL_BUSY_TOUCH:
		s->syn_ns = now_ns;
		break;
	default:
		return 0;
	}
	on = bpf_map_lookup_elem(&xrl_busy_on, &zero);
	if (on && !xrl_busy_recent(*on, now_ns, XRL_BUSY_TOUCH_NS))
		*on = now_ns;
	return 1;
}

/* Is the gate open (a record lately)? The one load every packet pays. */
static __always_inline int xrl_busy_gate(void)
{
	__u32 zero = 0;
	__u64 *on = bpf_map_lookup_elem(&xrl_busy_on, &zero);

	return on && *on;
}

/* Has the kernel a connection past its handshake for the segment's 4-tuple? */
static __always_inline int xrl_busy_connected(struct xdp_md *ctx)
{
	struct bpf_sock_tuple tup = {};
	struct xrl_sp_scratch *x;
	struct bpf_sock *sk;
	__u32 zero = 0, size;
	int done;

	x = bpf_map_lookup_elem(&xrl_sp_scratch, &zero);
	if (!x || xrl_sp_read(ctx, &x->g))
		return 0;
	if (x->g.s.t.family == 4) {
		tup.ipv4.saddr = x->g.s.t.saddr[0];
		tup.ipv4.daddr = x->g.s.t.daddr[0];
		tup.ipv4.sport = x->g.s.t.sport;
		tup.ipv4.dport = x->g.s.t.dport;
		size = sizeof(tup.ipv4);
	} else {
		__builtin_memcpy(tup.ipv6.saddr, x->g.s.t.saddr, 16);
		__builtin_memcpy(tup.ipv6.daddr, x->g.s.t.daddr, 16);
		tup.ipv6.sport = x->g.s.t.sport;
		tup.ipv6.dport = x->g.s.t.dport;
		size = sizeof(tup.ipv6);
	}
	sk = bpf_skc_lookup_tcp(ctx, &tup, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	done = xrl_busy_completed_state(sk->state);
	bpf_sk_release(sk);
	return done;
}

/*
 * A packet while the gate is open: a segment with ACK and neither SYN nor
 * RST marks its source's slot when the slot holds it (xrl_busy_on_ack); the
 * gate closes once a window passed without a record. A global function:
 * the verifier checks it once, not once per state of the main program.
 */
__noinline int xrl_busy_sighting(struct xdp_md *ctx, const struct xrl_pkt *p,
				 struct xrl_config *cfg)
{
	struct xrl_busy_slot *s;
	__u32 idx, zero = 0;
	__u64 *on, gate, now;
	int w;

	if (!ctx || !p || !cfg)
		return 0;
	if (p->proto != IPPROTO_TCP || !p->has_l4 || !xrl_busy_established(p->tcp_flags))
		return 0;
	on = bpf_map_lookup_elem(&xrl_busy_on, &zero);
	if (!on)
		return 0;
	gate = *on;
	now = xrl_coarse_ns(cfg);
	if (!xrl_busy_recent(gate, now, XRL_BUSY_WINDOW_NS)) {
		if (gate)
			__sync_val_compare_and_swap(on, gate, 0);   /* nothing recorded lately: closed */
		return 0;
	}
	idx = xrl_busy_index(p->family, p->saddr, cfg->hash_seed);
	s = bpf_map_lookup_elem(&xrl_busy, &idx);
	if (!s)
		return 0;
	w = xrl_busy_on_ack(s, p->family, p->saddr, now);
	if (w & XRL_BUSY_ACK_SEEN)
		s->seen_ns = now;
	if (w & XRL_BUSY_ACK_LOOK) {
		s->tried_ns = now;
		if (xrl_busy_connected(ctx))
			s->proven_ns = now;
	}
	return w;
}

#endif /* XRL_BUSY_BPF_H */
