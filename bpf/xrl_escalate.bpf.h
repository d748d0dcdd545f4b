/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The data path's side of escalation (xrl http --escalate, xrl_common.h):
 * is the packet's source address escalated now? Included by xrl.bpf.c after
 * its maps (xrl_maps.bpf.h). Nothing is looked up until the library has
 * written a first escalation (xrl_esc_on); then one hash lookup, and a clock
 * read only for an address found. The coarse clock is up to two ticks behind
 * CLOCK_MONOTONIC, plus the kernel's lateness in advancing jiffies: an
 * escalation ends that late at most (the test build
 * reads its exact test clock).
 */
#ifndef XRL_ESCALATE_BPF_H
#define XRL_ESCALATE_BPF_H

static __always_inline int xrl_escalation_holds(const struct xrl_pkt *p, struct xrl_config *cfg)
{
	struct xrl_esc_key k;
	struct xrl_escalation *e;
	__u32 zero = 0, *on;

	on = bpf_map_lookup_elem(&xrl_esc_on, &zero);
	if (!on || !*on)
		return 0;
	k.family = p->family;
	k.addr[0] = p->saddr[0];
	k.addr[1] = p->saddr[1];
	k.addr[2] = p->saddr[2];
	k.addr[3] = p->saddr[3];
	e = bpf_map_lookup_elem(&xrl_escalated, &k);
	if (!e || (__s64)(e->until_ns - xrl_coarse_ns(cfg)) <= 0)
		return 0;
	__sync_fetch_and_add(&e->dropped, 1);
	return 1;
}

#endif /* XRL_ESCALATE_BPF_H */
