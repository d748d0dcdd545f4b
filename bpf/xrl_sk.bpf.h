/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel's TCP socket for a segment's 4-tuple, as the XDP program asks
 * for it: the SYN proxy (does an unproven source's ACK belong to a
 * connection?) and the busy-client marking (did the source complete a
 * handshake?). Included by xrl_synproxy.bpf.h.
 */
#ifndef XRL_SK_BPF_H
#define XRL_SK_BPF_H

#include "xrl_synproxy.h"   /* struct xrl_sp_tuple */

/*
 * The state (XRL_TCP_*) of the socket the kernel has for t in the current
 * network namespace (a connection, request or time-wait socket, else the
 * listener every unknown 4-tuple finds), or -1 when it has none.
 */
static __always_inline int xrl_sk_tcp_state(struct xdp_md *ctx, const struct xrl_sp_tuple *t)
{
	struct bpf_sock_tuple tup = {};
	struct bpf_sock *sk;
	__u32 size;
	int state;

	if (t->family == 4) {
		tup.ipv4.saddr = t->saddr[0];
		tup.ipv4.daddr = t->daddr[0];
		tup.ipv4.sport = t->sport;
		tup.ipv4.dport = t->dport;
		size = sizeof(tup.ipv4);
	} else {
		__builtin_memcpy(tup.ipv6.saddr, t->saddr, 16);
		__builtin_memcpy(tup.ipv6.daddr, t->daddr, 16);
		tup.ipv6.sport = t->sport;
		tup.ipv6.dport = t->dport;
		size = sizeof(tup.ipv6);
	}
	sk = bpf_skc_lookup_tcp(ctx, &tup, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return -1;
	state = (int)sk->state;
	bpf_sk_release(sk);
	return state;
}

#endif /* XRL_SK_BPF_H */
