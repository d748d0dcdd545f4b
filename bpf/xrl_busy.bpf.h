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
		/*
		 * The source first, then the marks (the last source's) cleared;
		 * proven_ns by an atomic exchange, a full barrier, that
		 * xrl_busy_prove pairs with: a proof of the last source that
		 * lands after it is seen to be on another's slot and undone.
		 */
		s->key = *key;
		s->per_len = per_len;
		s->syn_ns = now_ns;
		s->seen_ns = 0;
		s->tried_ns = 0;
		__sync_lock_test_and_set(&s->proven_ns, 0);
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

/*
 * The state (XRL_TCP_*) of the kernel's socket for the segment's 4-tuple,
 * -1: none. A global function: the segment's parse and the lookup are
 * verified once, not once per path of xrl_busy_sighting.
 */
__noinline int xrl_busy_sk_state(struct xdp_md *ctx)
{
	struct xrl_sp_scratch *x;
	__u32 zero = 0;

	x = bpf_map_lookup_elem(&xrl_sp_scratch, &zero);
	if (!x || xrl_sp_read(ctx, &x->g))
		return -1;
	return xrl_sk_tcp_state(ctx, &x->g.s.t);
}

/*
 * Stamp the slot proven for addr at now. The slot was checked to hold addr
 * (xrl_busy_after_look), but a drop on another CPU may take it between
 * that check and this store: the stamp is an atomic compare-and-swap (a
 * full barrier), the source read again after it, and the stamp undone when
 * the slot has changed hands. Paired with xrl_busy_note's order (source
 * written, then proven_ns exchanged to 0), either that exchange comes
 * after the stamp and clears it, or the source read here is the new one.
 */
static __always_inline void xrl_busy_prove(struct xrl_busy_slot *s, __u32 family,
					   const __u32 *addr, __u64 now)
{
	__u64 old = s->proven_ns;

	if (__sync_val_compare_and_swap(&s->proven_ns, old, now) == old &&
	    !xrl_busy_match(s, family, addr))
		__sync_val_compare_and_swap(&s->proven_ns, now, 0);
}

/*
 * A segment with ACK and neither SYN nor RST (the caller tests that in
 * line: the SYNs of a flood pay no call) while the gate is open: it marks
 * its source's slot when the slot holds it (xrl_busy_on_ack,
 * xrl_busy_after_look); the gate closes once a window passed without a
 * record. A global function: the verifier checks it once, not once per
 * state of the main program.
 */
__noinline int xrl_busy_sighting(struct xdp_md *ctx, const struct xrl_pkt *p,
				 struct xrl_config *cfg)
{
	struct xrl_busy_slot *s;
	__u32 idx, zero = 0;
	__u64 *on, gate, now;
	int w, state = -1;

	if (!ctx || !p || !cfg)
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
	if (w & XRL_BUSY_ACK_LOOK) {
		s->tried_ns = now;
		state = xrl_busy_sk_state(ctx);
	}
	w = xrl_busy_after_look(s, p->family, p->saddr, w, state);
	if (w & XRL_BUSY_ACK_SEEN)
		s->seen_ns = now;
	if (w & XRL_BUSY_ACK_PROVE)
		xrl_busy_prove(s, p->family, p->saddr, now);
	return w;
}

#endif /* XRL_BUSY_BPF_H */
