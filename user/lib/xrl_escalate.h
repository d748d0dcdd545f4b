/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Escalations (xrl http --escalate, xrl_common.h): addresses the request
 * layer hands to the data path to be dropped at XDP for a while, each with
 * its reason. Written by xrl http, listed and deleted by `xrl block`.
 */
#ifndef XRL_ESCALATE_LIB_H
#define XRL_ESCALATE_LIB_H

#include <stddef.h>
#include "xrl_common.h"
#include "xrl_maps.h"

/*
 * Escalate the address (family 4: addr's first 4 bytes; 6: 16 bytes) from
 * now_ns (CLOCK_MONOTONIC) for duration_ns, for request rule rule (refusals
 * in the second that escalated it, of at most rate). A live escalation of
 * the address is extended, its count kept. 0 or -errno.
 */
int xrl_escalate_add(const struct xrl_maps *m, int family, const void *addr, __u64 now_ns,
		     __u64 duration_ns, const char *rule, __u32 refusals, __u32 rate);
/*
 * The escalations live at now_ns into keys/vals (max each): their number,
 * or -errno.
 */
int xrl_escalate_read(const struct xrl_maps *m, __u64 now_ns, struct xrl_esc_key *keys,
		      struct xrl_escalation *vals, int max);
/* End the escalation of key at once. 0, -ENOENT none, or -errno. */
int xrl_escalate_del(const struct xrl_maps *m, const struct xrl_esc_key *key);
/* "escalated by xrl http rule NAME: N refusals/s" */
void xrl_escalate_reason(const struct xrl_escalation *e, char *buf, size_t len);

#endif /* XRL_ESCALATE_LIB_H */
