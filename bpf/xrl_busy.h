/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Busy clients (xrl_busy, xrl_common.h): the pure decisions, shared by the
 * data path (xrl_busy.bpf.h) and the readers (xrl top, the daemon's events),
 * tested on the host.
 *
 * A --syn rule sees a source's SYNs only. A source it limits that also
 * sends segments of established connections (ACK without SYN or RST, which
 * the rule does not match) is a client that completes handshakes, a busy
 * one reconnecting faster than the rule allows (nginx closes a keep-alive
 * connection after 1,000 requests), not a spoofed flood, whose sources
 * never complete one. Two grades:
 *
 *  - seen: such a segment came from the address. Anyone can send a bare
 *    ACK from any address: a sighting proves nothing.
 *  - proven: the kernel had an established connection (not a listener, not
 *    a request socket) for the segment's 4-tuple: the source answered our
 *    SYN-ACK from that address, which a blind spoofer cannot (and the SYN
 *    proxy's cookie check is such a proof too). Only a host that ends the
 *    connections itself has the sockets; a router sees sightings only.
 */
#ifndef XRL_BUSY_H
#define XRL_BUSY_H

#include "xrl_common.h"
#include "xrl_bucket.h"   /* xrl_mask_v6 */

/* A TCP segment that belongs to an established connection: ACK set, SYN and RST clear. */
static __always_inline int xrl_busy_established(__u8 tcp_flags)
{
	return (tcp_flags & (XRL_TCP_SYN | XRL_TCP_RST | XRL_TCP_ACK)) == XRL_TCP_ACK;
}

/*
 * May a source limited under a rule with this /per be recorded? Its slot is
 * chosen from the address bits every address of the source shares: the
 * whole IPv4 address, the /64 of an IPv6 one. A rule with a shorter /per
 * limits whole networks, whose slot no single address could find.
 */
static __always_inline int xrl_busy_recordable(__u32 family, __u32 per_len)
{
	return family == 4 ? per_len >= 32 : per_len >= 64;
}

/* The slot of a source address (a packet's, or a limited key's: the same bits), keyed by seed. */
static __always_inline __u32 xrl_busy_index(__u32 family, const __u32 *addr, __u64 seed)
{
	__u32 h = (__u32)seed * 0x9e3779b1u ^ (__u32)(seed >> 32);

	h = (h ^ addr[0]) * 0x85ebca6bu;
	if (family == 6)
		h = (h ^ addr[1]) * 0xc2b2ae35u;
	h = (h ^ family) * 0x9e3779b1u;
	return h >> (32 - XRL_BUSY_BITS);
}

/* Is the address one of the slot's source (its rule's /per)? */
static __always_inline int xrl_busy_match(const struct xrl_busy_slot *s, __u32 family,
					  const __u32 *addr)
{
	__u32 a[4] = { addr[0], 0, 0, 0 };

	if (s->key.family != family || !s->syn_ns)
		return 0;
	if (family == 4)
		return a[0] == s->key.addr[0];
	a[1] = addr[1];
	a[2] = addr[2];
	a[3] = addr[3];
	xrl_mask_v6(a, s->per_len);
	return a[0] == s->key.addr[0] && a[1] == s->key.addr[1] && a[2] == s->key.addr[2] &&
	       a[3] == s->key.addr[3];
}

/* t is set and within window of now (a time ahead of now, as the exact clock is of the jiffy one, too) */
static __always_inline int xrl_busy_recent(__u64 t, __u64 now, __u64 window)
{
	return t && (__s64)(now - t) < (__s64)window;
}

enum xrl_busy_rec {
	XRL_BUSY_NOTHING = 0,   /* the slot has it, fresh: no write */
	XRL_BUSY_TOUCH,         /* the slot has it: refresh syn_ns */
	XRL_BUSY_TAKE,          /* another source, not proven lately: the slot is this one's */
	XRL_BUSY_KEEP,          /* another source, proven lately: left alone */
};

/*
 * A sampled drop of a --syn rule for key: what it does to the slot. A
 * source proven within the window keeps its slot against others, so
 * spoofed SYNs cannot push a busy client out; any other takes the slot of
 * the last, so spoofed sources take each other's, and bare ACKs from them
 * (seen, never proven) hold no slot against a real client.
 */
static __always_inline int xrl_busy_on_syn_drop(const struct xrl_busy_slot *s,
						const struct xrl_bucket_key *key, __u64 now)
{
	if (s->syn_ns && s->key.rule_id == key->rule_id && s->key.family == key->family &&
	    s->key.addr[0] == key->addr[0] && s->key.addr[1] == key->addr[1] &&
	    s->key.addr[2] == key->addr[2] && s->key.addr[3] == key->addr[3])
		return xrl_busy_recent(s->syn_ns, now, XRL_BUSY_TOUCH_NS) ? XRL_BUSY_NOTHING :
									 XRL_BUSY_TOUCH;
	if (xrl_busy_recent(s->syn_ns, now, XRL_BUSY_WINDOW_NS) &&
	    xrl_busy_recent(s->proven_ns, now, XRL_BUSY_WINDOW_NS))
		return XRL_BUSY_KEEP;
	return XRL_BUSY_TAKE;
}

enum xrl_busy_ack {
	XRL_BUSY_ACK_NONE = 0,  /* not its source, or nothing to write */
	XRL_BUSY_ACK_SEEN = 1,  /* refresh seen_ns */
	XRL_BUSY_ACK_LOOK = 2,  /* ask the kernel for the segment's connection (tried_ns refreshed) */
	XRL_BUSY_ACK_PROVE = 4, /* the kernel has it established: refresh proven_ns */
};

/*
 * An established-looking segment from addr, whose source the slot may
 * hold: what to write (XRL_BUSY_ACK_* bits). Each stamp is written at most
 * once per XRL_BUSY_TOUCH_NS, and the kernel asked at most as often, so a
 * flood of bare ACKs from a recorded address costs a compare per packet.
 */
static __always_inline int xrl_busy_on_ack(const struct xrl_busy_slot *s, __u32 family,
					   const __u32 *addr, __u64 now)
{
	int w = 0;

	if (!xrl_busy_recent(s->syn_ns, now, XRL_BUSY_WINDOW_NS) || !xrl_busy_match(s, family, addr))
		return XRL_BUSY_ACK_NONE;
	if (!xrl_busy_recent(s->seen_ns, now, XRL_BUSY_TOUCH_NS))
		w |= XRL_BUSY_ACK_SEEN;
	if (!xrl_busy_recent(s->proven_ns, now, XRL_BUSY_TOUCH_NS) &&
	    !xrl_busy_recent(s->tried_ns, now, XRL_BUSY_TOUCH_NS))
		w |= XRL_BUSY_ACK_LOOK;
	return w;
}

/*
 * A socket state (XRL_TCP_*, or -1: no socket) that only a completed
 * handshake reaches: not SYN_SENT, SYN_RECV, LISTEN (what every unknown
 * 4-tuple finds) or NEW_SYN_RECV (a request socket: a blind ACK finds one
 * for a SYN it spoofed).
 */
static __always_inline int xrl_busy_completed_state(int state)
{
	return state >= XRL_TCP_ESTABLISHED && state <= XRL_TCP_CLOSING &&
	       state != XRL_TCP_SYN_SENT && state != XRL_TCP_SYN_RECV && state != XRL_TCP_LISTEN;
}

/*
 * What to write (XRL_BUSY_ACK_SEEN, XRL_BUSY_ACK_PROVE) for a segment from
 * addr once its look is done: w is xrl_busy_on_ack's answer, state the
 * socket's (XRL_TCP_*, or -1: none or not looked up). The look is slow
 * enough for a spoofed source's drop to take the slot meanwhile
 * (XRL_BUSY_TAKE), and a stamp written then would be the spoofer's: the
 * slot's source is checked again, and nothing is written unless it is
 * still addr's.
 */
static __always_inline int xrl_busy_after_look(const struct xrl_busy_slot *s, __u32 family,
					       const __u32 *addr, int w, int state)
{
	int out = w & XRL_BUSY_ACK_SEEN;

	if ((w & XRL_BUSY_ACK_LOOK) && xrl_busy_completed_state(state))
		out |= XRL_BUSY_ACK_PROVE;
	if (!out || !xrl_busy_match(s, family, addr))
		return XRL_BUSY_ACK_NONE;
	return out;
}

/* What a reader makes of a slot at now (CLOCK_MONOTONIC). */
enum xrl_busy_mark {
	XRL_BUSY_MARK_NONE = 0,   /* limited by a --syn rule, no established traffic seen */
	XRL_BUSY_MARK_SEEN,       /* established-looking ACKs from its address: a sighting */
	XRL_BUSY_MARK_PROVEN,     /* connections of it established: it completes handshakes */
};

static __always_inline int xrl_busy_mark(const struct xrl_busy_slot *s, __u64 now)
{
	if (!xrl_busy_recent(s->syn_ns, now, XRL_BUSY_WINDOW_NS))
		return XRL_BUSY_MARK_NONE;
	if (xrl_busy_recent(s->proven_ns, now, XRL_BUSY_WINDOW_NS))
		return XRL_BUSY_MARK_PROVEN;
	if (xrl_busy_recent(s->seen_ns, now, XRL_BUSY_WINDOW_NS))
		return XRL_BUSY_MARK_SEEN;
	return XRL_BUSY_MARK_NONE;
}

#endif /* XRL_BUSY_H */
