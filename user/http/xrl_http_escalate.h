/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Escalation's count (--escalate RATE --block DURATION): the refusals of
 * each (rule, address) in one-second windows, each opened by a refusal. The
 * refusal that makes them more than RATE in its window escalates the address
 * (the service then writes it into the instance's XDP penalty box through
 * the library, xrl_escalate.h) and opens a new window, so a client that keeps
 * on is written again (extended) at most once a second. A bounded table
 * (direct-mapped: a collision forgets the older count, which can only delay
 * an escalation, never make one), its own lock; only refusals of escalating
 * rules reach it.
 */
#ifndef XRL_HTTP_ESCALATE_H
#define XRL_HTTP_ESCALATE_H

#include <pthread.h>
#include <linux/types.h>

#include "xrl_http_client.h"

#define XRL_HTTP_ESC_SLOTS 8192

struct xrl_http_esc_slot {
	__u8 a[16];
	__u32 rule;        /* rule index + 1; 0 empty */
	__u32 count;       /* refusals in the window */
	__u64 start_ns;    /* the window's first refusal */
};

struct xrl_http_esc {
	pthread_mutex_t lock;
	__u64 seed;
	struct xrl_http_esc_slot s[XRL_HTTP_ESC_SLOTS];
};

/* NULL on no memory. */
struct xrl_http_esc *xrl_http_esc_new(__u64 seed);
void xrl_http_esc_free(struct xrl_http_esc *e);
/*
 * Rule rule (index; its --escalate rate) refused address a at now_ns: 1 when
 * this refusal escalates it (*count: the refusals of its window), else 0.
 */
int xrl_http_esc_refused(struct xrl_http_esc *e, int rule, __u32 rate,
			 const struct xrl_http_addr *a, __u64 now_ns, __u32 *count);

#endif /* XRL_HTTP_ESCALATE_H */
