/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --packet-rule: a request rule that draws from a packet rule's fleet
 * budget. Packet rules have no name: the daemon names one in Redis by a
 * hash of its text (xrl_fleet_rule_name) and keeps a source's budget under
 * xrl:{NAME:SOURCE} (xrl_fleet_source_key), its GCRA TAT, window counters
 * or log. A request rule naming the packet rule (its prefix, or its id in
 * the instance) takes per request from that same key with the same
 * figures, in take mode, while the daemon records the data path's
 * admissions there each round: a source's packets and requests spend one
 * budget. The packet rule must be --global with the request rule's
 * algorithm, rate and burst (so neither side can read the budget
 * otherwise); a request from an address outside its prefix is not under
 * it (the rule does not apply).
 */
#ifndef XRL_HTTP_PACKET_H
#define XRL_HTTP_PACKET_H

#include <stddef.h>

#include "xrl_common.h"
#include "xrl_http_client.h"
#include "xrl_http_rules.h"

/* Does any rule name a packet rule? */
int xrl_http_packet_wanted(const struct xrl_http_rules *rs);
/*
 * Find each --packet-rule in the instance's rule set defs/ids (n rules)
 * and fill in its pkt; cluster: Redis is a cluster. 0, or -1 with err
 * naming the rule and what to change; rs is then partly resolved (the
 * caller drops it).
 */
int xrl_http_packet_resolve(struct xrl_http_rules *rs, const struct xrl_rule_def *defs,
			    const __u32 *ids, int n, int cluster, char *err, size_t errlen);
/* Is address a inside the packet rule's prefix? */
int xrl_http_packet_covers(const struct xrl_http_packet *p, const struct xrl_http_addr *a);
/* The daemon's key of a's source under the packet rule, as the daemon writes it. */
void xrl_http_packet_key(const struct xrl_http_packet *p, const struct xrl_http_addr *a,
			 char *buf, size_t len);

#endif /* XRL_HTTP_PACKET_H */
