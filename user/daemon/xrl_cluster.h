/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Redis Cluster routing on top of hiredis, the parts without a connection:
 * the key's hash slot (CRC16/XMODEM mod 16384 of the key or of its hash
 * tag, as the Redis cluster specification says), the slot map from
 * CLUSTER SHARDS (Redis 7) or CLUSTER SLOTS, MOVED/ASK redirects, and the
 * shard tags the fleet's keys use so that one call's keys share a slot and
 * the shards spread evenly over the slot ranges (so over the masters).
 * xrl_redis.c owns the connections and follows the redirects.
 */
#ifndef XRL_CLUSTER_H
#define XRL_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct redisReply;

#define XRL_CLUSTER_SLOTS 16384
/* masters (and nodes redirected to) a map knows: more are refused */
#define XRL_CLUSTER_NODES 64
/* redirects (MOVED, ASK) followed for one call before it counts as failed */
#define XRL_CLUSTER_MAX_REDIRECTS 5
/* shard tags of the fleet's keys: 64, so each of 3 masters holds 21 or 22 */
#define XRL_CLUSTER_SHARDS 64

struct xrl_cluster_addr {
	char host[256];
	int port;
};

/* Which master serves each slot. Node indices stay valid across refreshes (nodes are only added). */
struct xrl_cluster_map {
	int nnodes;
	struct xrl_cluster_addr node[XRL_CLUSTER_NODES];
	bool master[XRL_CLUSTER_NODES];          /* serves slots in the last map */
	int16_t slot[XRL_CLUSTER_SLOTS];         /* node index, -1: no master known */
};

/* CRC16/XMODEM (poly 0x1021, init 0): "123456789" -> 0x31C3. */
uint16_t xrl_cluster_crc16(const void *buf, size_t len);
/* The key's slot: of the part between the first '{' and the next '}' if not empty, else the whole key. */
unsigned xrl_cluster_keyslot(const char *key, size_t len);

void xrl_cluster_map_init(struct xrl_cluster_map *m);
/* The node's index, added if new; -1 when the map is full. */
int xrl_cluster_map_node(struct xrl_cluster_map *m, const char *host, int port);
/*
 * A new slot map from a CLUSTER SHARDS or CLUSTER SLOTS reply (asked of
 * a node at `asked`: an empty host in the reply means that node's).
 * The slots not in the reply become -1. 0, or -1 with err set (the map
 * unchanged).
 */
int xrl_cluster_map_shards(struct xrl_cluster_map *m, const struct redisReply *rep,
			   const char *asked, char *err, size_t errlen);
int xrl_cluster_map_slots(struct xrl_cluster_map *m, const struct redisReply *rep,
			  const char *asked, char *err, size_t errlen);
/* Slots with a master; masters serving slots. */
int xrl_cluster_map_covered(const struct xrl_cluster_map *m, int *masters);

/*
 * "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381" (an error
 * reply's text): 1 for MOVED, 2 for ASK, with the slot and the address;
 * 0 for any other text.
 */
int xrl_cluster_redirect(const char *text, unsigned *slot, struct xrl_cluster_addr *to);

/*
 * The hash tag of shard n (< XRL_CLUSTER_SHARDS): "sN.K", K the first
 * whose slot falls in the n-th of XRL_CLUSTER_SHARDS equal slot ranges, so
 * shards spread over the slots as evenly as they can whatever the masters'
 * ranges. The same on every host (a pure function).
 */
const char *xrl_cluster_shard_tag(unsigned n);

#endif /* XRL_CLUSTER_H */
