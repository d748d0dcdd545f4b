/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The names of the fleet's keys in Redis: pure (no map, no connection), so
 * that whatever asks Redis about a rule's budgets (the daemon, the request
 * layer, the tests) links it alone. Every key is under "xrl:{", with a
 * Redis Cluster hash tag per (rule, source) or per rule.
 */
#ifndef XRL_FLEET_KEYS_H
#define XRL_FLEET_KEYS_H

#include <stddef.h>
#include "xrl_common.h"

/* The rule's name in Redis: a hash of its canonical text (hosts running the same rule share it). */
void xrl_fleet_rule_name(const struct xrl_rule_def *d, char name[17]);
/* xrl:{RULE:SOURCE}, the TAT (or the base of a window's or a log's keys) of one source. */
void xrl_fleet_source_key(const char *rule_name, const struct xrl_bucket_key *k, __u8 per_len,
			  char *buf, size_t len);
/*
 * On a Redis Cluster: xrl:{TAG}:RULE:SOURCE, TAG the source's shard's
 * hash tag (xrl_cluster_shard_tag), so that a call takes a batch of one
 * rule's sources of one shard, all in one slot, and the shards spread
 * over the masters.
 */
void xrl_fleet_source_key_tagged(const char *tag, const char *rule_name,
				 const struct xrl_bucket_key *k, __u8 per_len, char *buf, size_t len);
/* The source's shard, < nshards: a hash of its address (the same on every host). */
unsigned xrl_fleet_source_shard(const struct xrl_bucket_key *k, unsigned nshards);
/* xrl:{RULE}:hosts, the hosts running the rule and their use. */
/*
 * A GCRA rule's figures as the Redis scripts take them (interval and span,
 * µs to the picosecond, in buffers of XRL_FLEET_US_LEN): the data path's
 * own integers (xrl_gcra_compile), so the data path, the daemon and the
 * request layer decide on one rate. -1 when the rate cannot be compiled.
 */
#define XRL_FLEET_US_LEN 32
int xrl_fleet_gcra_figures(__u64 tokens, __u64 period_s, __u64 burst, char *interval_us,
			   char *span_us, double *interval_ns, double *span_ns);

void xrl_fleet_hosts_key(const char *rule_name, char *buf, size_t len);
/* xrl:{HOST_ID}:sentinel, the key whose loss tells evictions where INFO is refused. */
void xrl_fleet_sentinel_key(const char *host_id, char *buf, size_t len);

#endif /* XRL_FLEET_KEYS_H */
