/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The SYN proxy's XDP side (--syn-proxy; the logic is xrl_synproxy.h):
 * reading a TCP segment's headers and options, answering a SYN with a
 * cookie SYN-ACK in place (XDP_TX), and handing an ACK whose cookie
 * checked to the tc program (bpf/xrl_tc.bpf.c) in the frame's metadata.
 * Included by xrl.bpf.c after its maps and clock.
 */
#ifndef XRL_SYNPROXY_BPF_H
#define XRL_SYNPROXY_BPF_H

#include "xrl_synproxy.h"
#include "xrl_sk.bpf.h"

/* What the proxy makes of a segment of a --syn-proxy rule (xrl_synproxy). */
enum xrl_sp_verdict {
	XRL_SP_JUDGE = 0,   /* the rule's limit decides it, as any packet */
	XRL_SP_TX,          /* a SYN of an unproven source: answered with a cookie SYN-ACK */
	XRL_SP_BAD,         /* an unproven source's segment with no valid cookie and no socket: dropped */
	XRL_SP_PROVEN,      /* an ACK with a valid cookie: the source gets its bucket, the rule decides */
};

/* A segment as the proxy reads it. */
struct xrl_sp_seg {
	struct xrl_sp_syn s;   /* tuple, seq, flags, options */
	__u32 ack;             /* its ack number, host order */
	__u32 l3off;           /* the IP header's offset in the frame (after VLAN tags) */
	__u32 paylen;          /* TCP payload bytes */
};

/*
 * The proxy's working memory, per CPU, off the stack (the main program's
 * frame and these would pass the verifier's 512 bytes): the segment read
 * and the SYN-ACK's headers being built.
 */
struct xrl_sp_scratch {
	struct xrl_sp_seg g;
	__u8 th[64];
	__u8 ip[40];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_sp_scratch);
} xrl_sp_scratch SEC(".maps");

/* The filter of proven sources (XRL_PROVEN_BITS), shared by the instance's programs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XRL_PROVEN_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} xrl_proven SEC(".maps");

/* A source's bit (from its set hash h): its word, and the bit in it. */
static __always_inline __u64 *xrl_proven_word(__u32 h, __u64 *bit)
{
	__u32 b = h * 0x2c1b3c6du;

	b ^= b >> 15;
	b &= XRL_PROVEN_BITS - 1;
	*bit = 1ull << (b & 63);
	b >>= 6;
	return bpf_map_lookup_elem(&xrl_proven, &b);
}

/* The IP header's offset in the frame, after Ethernet and up to XRL_MAX_VLAN tags. */
static __always_inline int xrl_sp_l3(void *data, void *data_end, __u32 *off, __u16 *proto)
{
	struct ethhdr *eth = data;
	__u32 o = sizeof(*eth);
	__u16 h;
	int i;

	if ((void *)(eth + 1) > data_end)
		return -1;
	h = eth->h_proto;
#pragma unroll
	for (i = 0; i < XRL_MAX_VLAN; i++) {
		struct xrl_vlan_hdr *vh = data + o;

		if (!xrl_is_vlan(h))
			break;
		if ((void *)(vh + 1) > data_end)
			return -1;
		h = vh->encap_proto;
		o += sizeof(*vh);
	}
	*off = o;
	*proto = h;
	return 0;
}

static long xrl_sp_opt_cb(__u64 n, void *w)
{
	(void)n;
	return xrl_sp_opt_step(w);
}

/*
 * Read the TCP segment of frame ctx: 0, or -1 when the proxy does not
 * handle it (IPv4 options or a fragment, IPv6 extension headers, a
 * truncated header): then the rule's limit decides it, as any packet
 * the proxy does not read.
 */
static __noinline int xrl_sp_read(struct xdp_md *ctx, struct xrl_sp_seg *g)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xrl_sp_optwalk w = {};
	__u32 off, iphlen, tot, doff, optlen;
	struct tcphdr *th;
	__u16 h;

	if (xrl_sp_l3(data, data_end, &off, &h))
		return -1;
	off &= 63;
	if (h == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + off;

		if ((void *)(ip + 1) > data_end)
			return -1;
		if (*(__u8 *)ip != 0x45 || ip->protocol != IPPROTO_TCP ||
		    (ip->frag_off & bpf_htons(0x3fff)))
			return -1;
		tot = bpf_ntohs(ip->tot_len);
		g->s.t.family = 4;
		g->s.t.saddr[0] = ip->saddr;
		g->s.t.daddr[0] = ip->daddr;
		iphlen = 20;
	} else if (h == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + off;

		if ((void *)(ip6 + 1) > data_end)
			return -1;
		if (ip6->nexthdr != IPPROTO_TCP)
			return -1;
		tot = 40 + bpf_ntohs(ip6->payload_len);
		g->s.t.family = 6;
		__builtin_memcpy(g->s.t.saddr, &ip6->saddr, 16);
		__builtin_memcpy(g->s.t.daddr, &ip6->daddr, 16);
		iphlen = 40;
	} else {
		return -1;
	}
	th = data + off + iphlen;
	if ((void *)(th + 1) > data_end)
		return -1;
	doff = th->doff * 4;
	if (doff < 20 || iphlen + doff > tot || data + off + tot > data_end)
		return -1;
	g->s.t.sport = th->source;
	g->s.t.dport = th->dest;
	g->s.seq = bpf_ntohl(th->seq);
	g->ack = bpf_ntohl(th->ack_seq);
	g->s.flags = ((__u8 *)th)[13];
	g->l3off = off;
	g->paylen = tot - iphlen - doff;
	optlen = (doff - 20) & 63;
	if (optlen > 40)
		return -1;
	if (optlen && bpf_xdp_load_bytes(ctx, off + iphlen + 20, w.o, optlen))
		return -1;
	xrl_sp_opts_init(&w, optlen);
	if (optlen)
		bpf_loop(XRL_SP_OPT_STEPS, xrl_sp_opt_cb, &w, 0);
	g->s.o = w.out;
	return 0;
}

/*
 * Turn the SYN of frame ctx (read into g) into its SYN-ACK with a cookie of
 * now_ns: MACs and addresses swapped, VLAN tags kept, the frame cut or
 * grown to the SYN-ACK. 0, or -1 when the frame could not be rewritten.
 */
static __noinline int xrl_sp_answer(struct xdp_md *ctx, struct xrl_sp_scratch *x,
				    const struct xrl_config *cfg, __u64 now_ns)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xrl_sp_seg *g = &x->g;
	__u32 family = g->s.t.family, mssidx, cookie, tcplen, iphlen, off = g->l3off & 63;
	__u8 *th = x->th, *ip = x->ip, mac[6];
	struct ethhdr *eth = data;
	int delta;

	if ((void *)(eth + 1) > data_end)
		return -1;
	mssidx = xrl_sp_mss_index(family, g->s.o.mss ? g->s.o.mss : (family == 4 ? 536 : 1220));
	cookie = xrl_sp_cookie(cfg->cookie_key, &g->s.t, g->s.seq, now_ns, mssidx);
	tcplen = xrl_sp_synack(&g->s, cookie, mssidx, (__u32)(now_ns / 1000000), th);
	iphlen = family == 4 ? 20 : 40;
	__builtin_memcpy(mac, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, mac, 6);
	delta = (int)(off + iphlen + tcplen) - (int)(data_end - data);
	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return -1;
	tcplen &= 63;
	if (tcplen < 20 || tcplen > 60)
		return -1;
	if (family == 4) {
		xrl_sp_ip4(&g->s.t, tcplen, ip);
		if (bpf_xdp_store_bytes(ctx, off, ip, 20))
			return -1;
	} else {
		xrl_sp_ip6(&g->s.t, tcplen, ip);
		if (bpf_xdp_store_bytes(ctx, off, ip, 40))
			return -1;
	}
	if (bpf_xdp_store_bytes(ctx, off + iphlen, th, tcplen))
		return -1;
	return 0;
}

/*
 * The ACK (or later segment) of frame ctx checked against its cookie at
 * now_ns: 1 when it holds, with the options it carries put in the frame's
 * metadata for the tc program (which hands the kernel the connection);
 * 0 when it does not.
 */
static __noinline int xrl_sp_proven(struct xdp_md *ctx, const struct xrl_sp_seg *g,
				    const struct xrl_config *cfg, __u64 now_ns)
{
	struct xrl_sp_meta m = { .magic = XRL_SP_META_MAGIC };
	void *meta, *data;
	int idx;

	idx = xrl_sp_check(cfg->cookie_key, &g->s.t, g->s.seq - 1, g->ack - 1, now_ns);
	if (idx < 0)
		return 0;
	xrl_sp_attrs_of(g->s.t.family, (__u32)idx, &g->s.o, &m.attrs);
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(m)))
		return 1;   /* proven; the driver keeps no metadata (the kernel will refuse the ACK) */
	meta = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if (meta + sizeof(m) > data)
		return 1;
	__builtin_memcpy(meta, &m, sizeof(m));
	return 1;
}

/* Does the kernel have a socket (connection, request or time-wait) for the segment's 4-tuple? */
static __always_inline int xrl_sp_has_socket(struct xdp_md *ctx, const struct xrl_sp_seg *g)
{
	int state = xrl_sk_tcp_state(ctx, &g->s.t);

	/* a listener is what every unknown 4-tuple finds: only a connection's own socket counts */
	return state >= 0 && state != XRL_TCP_LISTEN;
}

#endif /* XRL_SYNPROXY_BPF_H */
