/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The SYN proxy's pure logic (--syn-proxy), shared by the XDP program and
 * the host tests: the keyed SYN cookie, the TCP options a cookie carries,
 * and the SYN-ACK's headers. No packet access here: the XDP side
 * (xrl_synproxy.bpf.h) copies headers in and out with bpf_xdp_load_bytes
 * and bpf_xdp_store_bytes.
 *
 * The cookie is the SYN-ACK's sequence number, as the kernel's own:
 *
 *   bits 31..3  the top 29 bits of SipHash-2-4 (key xrl_config.cookie_key)
 *               of the addresses, the ports, the client's ISN, the time
 *               slot and the MSS index
 *   bit  2      the slot's parity
 *   bits 1..0   the MSS index (xrl_sp_mss)
 *
 * A slot is 2^XRL_SP_SLOT_SHIFT ns (68.7 s); a cookie is valid in its slot
 * and the next, so for 68.7 to 137 s (the kernel's live up to 2 minutes
 * and more). The parity names the slot, so a check hashes once. As the
 * kernel's cookies, the options beyond the MSS (window scale, SACK, ECN)
 * ride in the low 6 bits of the SYN-ACK's timestamp, which the client
 * echoes: without timestamps a connection keeps only its MSS.
 */
#ifndef XRL_SYNPROXY_H
#define XRL_SYNPROXY_H

#include <linux/types.h>
#include <bpf/bpf_endian.h>
#include "xrl_common.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
/* fixed loops unrolled for BPF (clang); gcc's host build takes them as loops */
#if defined(__clang__)
#define XRL_SP_UNROLL _Pragma("unroll")
#else
#define XRL_SP_UNROLL
#endif

#define XRL_SP_SLOT_SHIFT  36       /* cookie time slot: 2^36 ns = 68.7 s */
#define XRL_SP_RCV_WSCALE  7        /* the window scale the SYN-ACK offers (the kernel's with default buffers) */
#define XRL_SP_WSCALE_NONE 0xf      /* in the timestamp's low bits: no window scaling */
#define XRL_SP_TS_SACK     0x10
#define XRL_SP_TS_ECN      0x20
#define XRL_SP_TS_OPTS     0x3f
#define XRL_SP_MAX_WSCALE  14       /* RFC 7323 */
#define XRL_SP_OPT_STEPS   16       /* options walked in a SYN or ACK: enough for any real stack's */

#define XRL_TCPOPT_EOL       0
#define XRL_TCPOPT_NOP       1
#define XRL_TCPOPT_MSS       2
#define XRL_TCPOPT_WINDOW    3
#define XRL_TCPOPT_SACK_PERM 4
#define XRL_TCPOPT_TIMESTAMP 8

#define XRL_TH_FIN 0x01
#define XRL_TH_SYN 0x02
#define XRL_TH_RST 0x04
#define XRL_TH_ACK 0x10
#define XRL_TH_ECE 0x40
#define XRL_TH_CWR 0x80

/* The MSS a cookie can carry, per family: the kernel's tables (msstab in syncookies.c). */
static __always_inline __u16 xrl_sp_mss(__u32 family, __u32 idx)
{
	if (family == 4)
		return idx == 0 ? 536 : idx == 1 ? 1300 : idx == 2 ? 1440 : 1460;
	return idx == 0 ? 1220 : idx == 1 ? 1420 : idx == 2 ? 1440 : 8940;
}

/* The largest table MSS not above the client's (the smallest when it is below all). */
static __always_inline __u32 xrl_sp_mss_index(__u32 family, __u16 mss)
{
	__u32 i;

	for (i = 3; i > 0; i--)
		if (mss >= xrl_sp_mss(family, i))
			break;
	return i;
}

/* ---------------------------------------------------------------- SipHash-2-4 */

struct xrl_sip {
	__u64 v0, v1, v2, v3;
};

#define XRL_ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static __always_inline void xrl_sip_round(struct xrl_sip *s)
{
	s->v0 += s->v1;
	s->v1 = XRL_ROTL64(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = XRL_ROTL64(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = XRL_ROTL64(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = XRL_ROTL64(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = XRL_ROTL64(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = XRL_ROTL64(s->v2, 32);
}

static __always_inline void xrl_sip_init(struct xrl_sip *s, const __u64 key[2])
{
	s->v0 = 0x736f6d6570736575ull ^ key[0];
	s->v1 = 0x646f72616e646f6dull ^ key[1];
	s->v2 = 0x6c7967656e657261ull ^ key[0];
	s->v3 = 0x7465646279746573ull ^ key[1];
}

/* One 8-byte block m (the message's bytes read little-endian). */
static __always_inline void xrl_sip_word(struct xrl_sip *s, __u64 m)
{
	s->v3 ^= m;
	xrl_sip_round(s);
	xrl_sip_round(s);
	s->v0 ^= m;
}

/* The end of a message of nwords whole blocks: SipHash-2-4 of its 8 x nwords bytes. */
static __always_inline __u64 xrl_sip_final(struct xrl_sip *s, __u32 nwords)
{
	xrl_sip_word(s, (__u64)(nwords * 8) << 56);
	s->v2 ^= 0xff;
	xrl_sip_round(s);
	xrl_sip_round(s);
	xrl_sip_round(s);
	xrl_sip_round(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* ---------------------------------------------------------------- the cookie */

/* A connection as the SYN names it: the client's address and port are the source. */
struct xrl_sp_tuple {
	__u32 saddr[4];   /* network order; IPv4 in saddr[0] */
	__u32 daddr[4];
	__u16 sport;      /* network order */
	__u16 dport;
	__u32 family;     /* 4 or 6 */
};

static __always_inline __u64 xrl_sp_hash(const __u64 key[2], const struct xrl_sp_tuple *t,
					 __u32 isn, __u64 slot, __u32 mssidx)
{
	struct xrl_sip s;
	__u32 n = 3;

	xrl_sip_init(&s, key);
	if (t->family == 4) {
		xrl_sip_word(&s, (__u64)t->saddr[0] << 32 | t->daddr[0]);
	} else {
		xrl_sip_word(&s, (__u64)t->saddr[0] << 32 | t->saddr[1]);
		xrl_sip_word(&s, (__u64)t->saddr[2] << 32 | t->saddr[3]);
		xrl_sip_word(&s, (__u64)t->daddr[0] << 32 | t->daddr[1]);
		xrl_sip_word(&s, (__u64)t->daddr[2] << 32 | t->daddr[3]);
		n = 6;
	}
	xrl_sip_word(&s, (__u64)isn << 32 | (__u32)t->sport << 16 | t->dport);
	xrl_sip_word(&s, slot << 2 | (mssidx & 3));
	return xrl_sip_final(&s, n);
}

/* The cookie (the SYN-ACK's sequence number) for a SYN with ISN isn at now_ns. */
static __always_inline __u32 xrl_sp_cookie(const __u64 key[2], const struct xrl_sp_tuple *t,
					   __u32 isn, __u64 now_ns, __u32 mssidx)
{
	__u64 slot = now_ns >> XRL_SP_SLOT_SHIFT;
	__u32 h = (__u32)(xrl_sp_hash(key, t, isn, slot, mssidx) >> 32);

	return (h & ~7u) | (__u32)(slot & 1) << 2 | (mssidx & 3);
}

/*
 * Check the cookie an ACK returns (its ack number - 1) against its ISN
 * (its sequence number - 1) at now_ns: the MSS index it carries, or -1
 * when it is wrong or expired (older than the slot before now's).
 */
static __always_inline int xrl_sp_check(const __u64 key[2], const struct xrl_sp_tuple *t,
					__u32 isn, __u32 cookie, __u64 now_ns)
{
	__u64 slot = now_ns >> XRL_SP_SLOT_SHIFT;
	__u32 mssidx = cookie & 3, h;

	if (((cookie >> 2) & 1) != (slot & 1)) {
		if (!slot)
			return -1;
		slot--;
	}
	h = (__u32)(xrl_sp_hash(key, t, isn, slot, mssidx) >> 32);
	return ((h ^ cookie) & ~7u) ? -1 : (int)mssidx;
}

/* ---------------------------------------------------------------- options */

/* The options of a SYN or ACK that a cookie connection keeps. */
struct xrl_sp_opts {
	__u16 mss;        /* 0: none (then 536 for IPv4, 1220 for IPv6, as RFC 9293) */
	__u8  wscale;     /* XRL_SP_WSCALE_NONE: none */
	__u8  sack;       /* SACK permitted */
	__u8  ts;         /* a timestamp option: tsval, tsecr */
	__u8  _pad[3];
	__u32 tsval;      /* host order */
	__u32 tsecr;
};

static __always_inline __u32 xrl_sp_be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

/*
 * A walk over a SYN's or ACK's TCP options: the options first in o, zeroed
 * past them, len of them (at most 40). One step reads one option, inside
 * the buffer whatever its length says; a malformed option ends the walk
 * with what was read before it. The XDP program steps it with bpf_loop
 * (a loop the verifier would walk once per option layout), the host with
 * xrl_sp_parse_opts.
 */
struct xrl_sp_optwalk {
	__u8  o[64];
	__u32 i;          /* the next option's offset */
	__u32 len;
	struct xrl_sp_opts out;
};

static __always_inline void xrl_sp_opts_init(struct xrl_sp_optwalk *w, __u32 len)
{
	w->i = 0;
	w->len = len > 40 ? 40 : len;
	w->out.mss = 0;
	w->out.wscale = XRL_SP_WSCALE_NONE;
	w->out.sack = 0;
	w->out.ts = 0;
	w->out.tsval = 0;
	w->out.tsecr = 0;
}

/* One option: 0 to go on, 1 at the end of the options. */
static __always_inline int xrl_sp_opt_step(struct xrl_sp_optwalk *w)
{
	__u32 i = w->i, len = w->len, kind, olen, j;

	if (i >= len || len > 40)
		return 1;
	kind = w->o[i & 63];
	if (kind == XRL_TCPOPT_EOL)
		return 1;
	if (kind == XRL_TCPOPT_NOP) {
		w->i = i + 1;
		return 0;
	}
	if (i + 1 >= len)
		return 1;
	olen = w->o[(i + 1) & 63];
	if (olen < 2 || i + olen > len)
		return 1;
	j = i & 31;   /* i <= 38 here (i + 2 <= len <= 40); the reads below stay below byte 48 */
	if (kind == XRL_TCPOPT_MSS && olen == 4)
		w->out.mss = (__u16)(w->o[j + 2] << 8 | w->o[j + 3]);
	else if (kind == XRL_TCPOPT_WINDOW && olen == 3)
		w->out.wscale = w->o[j + 2] > XRL_SP_MAX_WSCALE ? XRL_SP_MAX_WSCALE : w->o[j + 2];
	else if (kind == XRL_TCPOPT_SACK_PERM && olen == 2)
		w->out.sack = 1;
	else if (kind == XRL_TCPOPT_TIMESTAMP && olen == 10) {
		w->out.ts = 1;
		w->out.tsval = xrl_sp_be32(&w->o[j + 2]);
		w->out.tsecr = xrl_sp_be32(&w->o[j + 6]);
	}
	w->i = i + olen;
	return 0;
}

#ifndef __BPF__
/* The whole walk, on the host. */
static inline void xrl_sp_parse_opts(struct xrl_sp_optwalk *w, __u32 len)
{
	int n;

	xrl_sp_opts_init(w, len);
	for (n = 0; n < XRL_SP_OPT_STEPS; n++)
		if (xrl_sp_opt_step(w))
			break;
}
#endif

/* ---------------------------------------------------------------- the SYN-ACK */

/* A SYN as the proxy answers it: what xrl_sp_synack needs of it (host order). */
struct xrl_sp_syn {
	struct xrl_sp_tuple t;
	__u32 seq;        /* the client's ISN */
	__u8  flags;      /* its TCP flags (ECE|CWR: it asks for ECN) */
	__u8  _pad[3];
	struct xrl_sp_opts o;
};

/* 16-bit one's-complement sum of n 16-bit words at p (memory order), n <= 30. */
static __always_inline __u64 xrl_sp_sum(const void *p, __u32 n)
{
	const __u16 *w = p;
	__u64 s = 0;
	__u32 i;

XRL_SP_UNROLL
	for (i = 0; i < 30; i++)
		if (i < n)
			s += w[i];
	return s;
}

static __always_inline __u16 xrl_sp_fold(__u64 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

/* The pseudo header's sum (addresses as they go out: the SYN's swapped). */
static __always_inline __u64 xrl_sp_pseudo(const struct xrl_sp_tuple *t, __u32 tcplen)
{
	__u64 s = bpf_htons(6) + bpf_htons((__u16)tcplen);
	__u32 i;

	if (t->family == 4)
		return s + (t->saddr[0] & 0xffff) + (t->saddr[0] >> 16) + (t->daddr[0] & 0xffff) +
		       (t->daddr[0] >> 16);
XRL_SP_UNROLL
	for (i = 0; i < 4; i++)
		s += (t->saddr[i] & 0xffff) + (t->saddr[i] >> 16) + (t->daddr[i] & 0xffff) +
		     (t->daddr[i] >> 16);
	return s;
}

static __always_inline void xrl_sp_put32(__u8 *p, __u32 v)
{
	p[0] = (__u8)(v >> 24);
	p[1] = (__u8)(v >> 16);
	p[2] = (__u8)(v >> 8);
	p[3] = (__u8)v;
}

/*
 * The SYN-ACK's TCP header with its options into th (60 bytes): ports
 * swapped, sequence cookie, ack the ISN + 1; the options as Linux orders
 * them: MSS (the table's, which the cookie carries), then with timestamps
 * SACK permitted or two NOPs, the timestamp (tsval ts_now's with the
 * options in its low 6 bits, tsecr the client's tsval), and a window scale
 * when the client offered one. Without timestamps only the MSS is kept (as
 * the kernel's cookies keep it). Its length, the checksum filled in.
 */
static __always_inline __u32 xrl_sp_synack(const struct xrl_sp_syn *syn, __u32 cookie,
					   __u32 mssidx, __u32 ts_now, __u8 *th)
{
	const struct xrl_sp_opts *o = &syn->o;
	__u16 mss = xrl_sp_mss(syn->t.family, mssidx);
	__u32 win = (__u32)mss * 10, len = 24, i;
	__u8 flags = XRL_TH_SYN | XRL_TH_ACK;
	struct xrl_sp_tuple back;
	__u16 sum;

XRL_SP_UNROLL
	for (i = 0; i < 60; i++)
		th[i] = 0;
	/* ports stay in network order */
	th[0] = ((const __u8 *)&syn->t.dport)[0];
	th[1] = ((const __u8 *)&syn->t.dport)[1];
	th[2] = ((const __u8 *)&syn->t.sport)[0];
	th[3] = ((const __u8 *)&syn->t.sport)[1];
	xrl_sp_put32(th + 4, cookie);
	xrl_sp_put32(th + 8, syn->seq + 1);
	if (win > 65535)
		win = 65535;
	th[14] = (__u8)(win >> 8);
	th[15] = (__u8)win;
	/* options from byte 20 */
	th[20] = XRL_TCPOPT_MSS;
	th[21] = 4;
	th[22] = (__u8)(mss >> 8);
	th[23] = (__u8)mss;
	if (o->ts) {
		__u32 opts = o->wscale == XRL_SP_WSCALE_NONE ? XRL_SP_WSCALE_NONE : o->wscale;

		if (o->sack)
			opts |= XRL_SP_TS_SACK;
		if ((syn->flags & (XRL_TH_ECE | XRL_TH_CWR)) == (XRL_TH_ECE | XRL_TH_CWR)) {
			opts |= XRL_SP_TS_ECN;
			flags |= XRL_TH_ECE;
		}
		th[24] = o->sack ? XRL_TCPOPT_SACK_PERM : XRL_TCPOPT_NOP;
		th[25] = o->sack ? 2 : XRL_TCPOPT_NOP;
		th[26] = XRL_TCPOPT_TIMESTAMP;
		th[27] = 10;
		xrl_sp_put32(th + 28, (ts_now & ~(__u32)XRL_SP_TS_OPTS) | opts);
		xrl_sp_put32(th + 32, o->tsval);
		len = 36;
		if (o->wscale != XRL_SP_WSCALE_NONE) {
			th[36] = XRL_TCPOPT_NOP;
			th[37] = XRL_TCPOPT_WINDOW;
			th[38] = 3;
			th[39] = XRL_SP_RCV_WSCALE;
			len = 40;
		}
	}
	th[12] = (__u8)((len / 4) << 4);
	th[13] = flags;
	back.family = syn->t.family;
XRL_SP_UNROLL
	for (i = 0; i < 4; i++) {
		back.saddr[i] = syn->t.daddr[i];
		back.daddr[i] = syn->t.saddr[i];
	}
	sum = xrl_sp_fold(xrl_sp_pseudo(&back, len) + xrl_sp_sum(th, len / 2));
	__builtin_memcpy(th + 16, &sum, 2);
	return len;
}

/* The SYN-ACK's IPv4 header into ip (20 bytes): addresses swapped, DF, TTL 64, checksummed. */
static __always_inline void xrl_sp_ip4(const struct xrl_sp_tuple *t, __u32 tcplen, __u8 *ip)
{
	__u16 tot = (__u16)(20 + tcplen), sum;
	__u32 i;

XRL_SP_UNROLL
	for (i = 0; i < 20; i++)
		ip[i] = 0;
	ip[0] = 0x45;
	ip[2] = (__u8)(tot >> 8);
	ip[3] = (__u8)tot;
	ip[6] = 0x40;   /* DF */
	ip[8] = 64;
	ip[9] = 6;
	__builtin_memcpy(ip + 12, &t->daddr[0], 4);
	__builtin_memcpy(ip + 16, &t->saddr[0], 4);
	sum = xrl_sp_fold(xrl_sp_sum(ip, 10));
	__builtin_memcpy(ip + 10, &sum, 2);
}

/* The SYN-ACK's IPv6 header into ip (40 bytes): addresses swapped, hop limit 64. */
static __always_inline void xrl_sp_ip6(const struct xrl_sp_tuple *t, __u32 tcplen, __u8 *ip)
{
	__u32 i;

XRL_SP_UNROLL
	for (i = 0; i < 8; i++)
		ip[i] = 0;
	ip[0] = 0x60;
	ip[4] = (__u8)(tcplen >> 8);
	ip[5] = (__u8)tcplen;
	ip[6] = 6;
	ip[7] = 64;
	__builtin_memcpy(ip + 8, t->daddr, 16);
	__builtin_memcpy(ip + 24, t->saddr, 16);
}

/*
 * What the kernel needs of an ACK whose cookie checked (MSS index mssidx)
 * to make the connection (struct xrl_sp_attrs, the kernel's struct
 * bpf_tcp_req_attrs): the MSS, and with timestamps the options the
 * timestamp it echoes carries.
 */
static __always_inline void xrl_sp_attrs_of(__u32 family, __u32 mssidx,
					    const struct xrl_sp_opts *ack, struct xrl_sp_attrs *a)
{
	__u32 opts = ack->tsecr & XRL_SP_TS_OPTS;

	__builtin_memset(a, 0, sizeof(*a));
	a->mss = xrl_sp_mss(family, mssidx);
	if (!ack->ts)
		return;
	a->tstamp_ok = 1;
	a->rcv_tsval = ack->tsval;
	a->rcv_tsecr = ack->tsecr;
	a->sack_ok = (opts & XRL_SP_TS_SACK) ? 1 : 0;
	a->ecn_ok = (opts & XRL_SP_TS_ECN) ? 1 : 0;
	if ((opts & XRL_SP_WSCALE_NONE) != XRL_SP_WSCALE_NONE) {
		a->wscale_ok = 1;
		a->snd_wscale = opts & XRL_SP_WSCALE_NONE;
		if (a->snd_wscale > XRL_SP_MAX_WSCALE)
			a->snd_wscale = XRL_SP_MAX_WSCALE;
		a->rcv_wscale = XRL_SP_RCV_WSCALE;
	}
}

#endif /* XRL_SYNPROXY_H */
