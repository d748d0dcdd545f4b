// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The SYN proxy's completion (--syn-proxy), at tc ingress of the
 * interfaces xrl is attached to. The XDP program answered a SYN with a
 * cookie and checked the cookie of the ACK that came back; it left what
 * the cookie carried (MSS, window scale, SACK, timestamps, ECN) in the
 * frame's metadata. Here the ACK is given the listener's request socket
 * with those options (bpf_sk_assign_tcp_reqsk, Linux 6.9+), and the kernel
 * makes the connection as if it had answered the SYN itself: no conntrack,
 * nothing left of xrl in the connection's path afterwards. Every other
 * frame (no metadata of xrl's) costs one comparison.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include "xrl_common.h"
#include "xrl_parse.h"
#include "xrl_synproxy.h"

/*
 * The kernel's names, as bpf_sk_assign_tcp_reqsk takes them: libbpf matches
 * the kfunc by kind and name of its argument types (struct xrl_sp_attrs is
 * struct bpf_tcp_req_attrs' layout).
 */
struct sock {
	int _opaque;
};
struct bpf_tcp_req_attrs {
	struct xrl_sp_attrs a;
};
extern int bpf_sk_assign_tcp_reqsk(struct __sk_buff *skb, struct sock *sk,
				   struct bpf_tcp_req_attrs *attrs, int attrs__sz) __ksym;

/* Outcomes, for `xrl status` and the tests: per CPU, indexed by enum xrl_tc_count. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XRL_TC_NCOUNT);
	__type(key, __u32);
	__type(value, __u64);
} xrl_tc_counts SEC(".maps");

static __always_inline void count(__u32 what)
{
	__u64 *c = bpf_map_lookup_elem(&xrl_tc_counts, &what);

	if (c)
		(*c)++;
}

SEC("tc")
int xrl_tc(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct xrl_sp_meta *m = (void *)(long)skb->data_meta;
	struct bpf_sock_tuple tup = {};
	struct xrl_sp_attrs attrs;
	struct bpf_sock *skc;
	struct tcp_sock *tp;
	struct tcphdr *th;
	__u32 off = sizeof(struct ethhdr), size;
	__u16 h;
	int i, rc;

	if ((void *)(m + 1) > data || m->magic != XRL_SP_META_MAGIC)
		return TC_ACT_OK;
	attrs = m->attrs;
	m->magic = 0;   /* once: a frame looped back keeps no stale claim */
	if (data + sizeof(struct ethhdr) > data_end)
		return TC_ACT_OK;
	h = ((struct ethhdr *)data)->h_proto;
	/* an outer tag is in skb->vlan_tci by now; inner ones are still in the frame */
#pragma unroll
	for (i = 0; i < XRL_MAX_VLAN; i++) {
		struct xrl_vlan_hdr *vh = data + off;

		if (!xrl_is_vlan(h))
			break;
		if ((void *)(vh + 1) > data_end)
			return TC_ACT_OK;
		h = vh->encap_proto;
		off += sizeof(*vh);
	}
	off &= 63;
	if (h == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + off;

		if ((void *)(ip + 1) > data_end)
			return TC_ACT_OK;
		tup.ipv4.saddr = ip->saddr;
		tup.ipv4.daddr = ip->daddr;
		th = (void *)(ip + 1);
		if ((void *)(th + 1) > data_end)
			return TC_ACT_OK;
		tup.ipv4.sport = th->source;
		tup.ipv4.dport = th->dest;
		size = sizeof(tup.ipv4);
	} else if (h == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + off;

		if ((void *)(ip6 + 1) > data_end)
			return TC_ACT_OK;
		__builtin_memcpy(tup.ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(tup.ipv6.daddr, &ip6->daddr, 16);
		th = (void *)(ip6 + 1);
		if ((void *)(th + 1) > data_end)
			return TC_ACT_OK;
		tup.ipv6.sport = th->source;
		tup.ipv6.dport = th->dest;
		size = sizeof(tup.ipv6);
	} else {
		return TC_ACT_OK;
	}
	skc = bpf_skc_lookup_tcp(skb, &tup, size, BPF_F_CURRENT_NETNS, 0);
	if (!skc) {
		count(XRL_TC_NO_LISTENER);
		return TC_ACT_OK;
	}
	if (skc->state != XRL_TCP_LISTEN) {
		/* the connection exists already (a retransmitted ACK, or a rare false match) */
		bpf_sk_release(skc);
		count(XRL_TC_EXISTS);
		return TC_ACT_OK;
	}
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp) {
		bpf_sk_release(skc);
		count(XRL_TC_FAILED);
		return TC_ACT_OK;
	}
	rc = bpf_sk_assign_tcp_reqsk(skb, (struct sock *)tp, (struct bpf_tcp_req_attrs *)&attrs,
				     sizeof(attrs));
	bpf_sk_release(skc);
	count(rc ? XRL_TC_FAILED : XRL_TC_ASSIGNED);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
