/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The penalty box (--block, xrl_blocked) as the live views, `stats --json`
 * and /metrics count it: the sources blocked now, per rule.
 */
#ifndef XRL_BOX_H
#define XRL_BOX_H

#include "xrl_maps.h"
#include "xrl_rule.h"

/*
 * Sources blocked at now (CLOCK_MONOTONIC) per rule of defs/ids[0..n):
 * per_rule[i] for rule i (0 for a rule without --block). A block holds
 * while its until_ns is ahead of now and the rule version it began under
 * is the rule's (as `xrl block list` lists them). The map is read only
 * when a rule has --block. Total blocked, or -errno.
 */
long xrl_census_blocks(const struct xrl_maps *m, const struct xrl_rule_def *defs,
		       const __u32 *ids, int n, __u64 now, long *per_rule);

#endif /* XRL_BOX_H */
