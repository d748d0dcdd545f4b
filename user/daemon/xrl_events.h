/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's side of limit events: "limited" lines from the data path's
 * ring buffer, and "back under limit" lines for sources that went quiet
 * (neither the source nor its rule dropped for the quiet time). At most
 * 20 "limited" lines per rule in 10 s, the rest said in one summary line
 * per rule ("limited, not logged", "back under limit, not logged").
 */
#ifndef XRL_EVENTS_H
#define XRL_EVENTS_H

#include "xrl_common.h"
#include "xrl_maps.h"

struct xrl_events;

/* NULL with errno set. quiet_ns: no drop for this long and a source is back under its limit. */
struct xrl_events *xrl_events_open(const struct xrl_maps *m, __u64 quiet_ns);
void xrl_events_close(struct xrl_events *e);
/* The rule set in force, to name rules and sources in the lines. */
void xrl_events_set_rules(struct xrl_events *e, const struct xrl_rule_def *defs, const __u32 *ids,
			  int n);
/* Log what arrived, waiting up to timeout_ms for it (a signal cuts it short). */
void xrl_events_poll(struct xrl_events *e, int timeout_ms);
/* Log and forget the sources quiet for quiet_ns. */
void xrl_events_sweep(struct xrl_events *e);

#endif /* XRL_EVENTS_H */
