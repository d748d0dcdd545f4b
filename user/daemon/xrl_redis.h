/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's Redis connection (hiredis): URL parsing, a timeout on every
 * call, the fleet scripts loaded once and called with EVALSHA (reloaded on
 * NOSCRIPT), and pipelined batches of calls. With redis-cluster:// the
 * same calls go to a Redis Cluster: each call to the master of its first
 * key's slot (the keys of one call share a slot), one pipelined connection
 * per master, MOVED and ASK followed (xrl_cluster.h has the routing).
 */
#ifndef XRL_REDIS_H
#define XRL_REDIS_H

#include <stddef.h>
#include <sys/time.h>
#include "xrl_scripts.h"
#include "xrl_cluster.h"

struct redisContext;
struct redisReply;

#define XRL_REDIS_SEEDS 16

struct xrl_redis_url {
	char host[256];
	int port;
	char password[256];   /* empty: no AUTH */
	int db;
	/* redis-cluster://: the seed nodes (host and port above are the first) */
	bool cluster;
	int nseeds;
	struct xrl_cluster_addr seed[XRL_REDIS_SEEDS];
};

/*
 * redis://[:password@]host[:port][/db], or
 * redis-cluster://[:password@]host[:port][,host[:port]...] (seed nodes,
 * up to XRL_REDIS_SEEDS; a cluster has database 0 only); host may be
 * [v6]. 0 or -EINVAL with err.
 */
int xrl_redis_parse_url(const char *url, struct xrl_redis_url *u, char *err, size_t errlen);
/* host:port/db for messages (never the password). */
void xrl_redis_url_name(const struct xrl_redis_url *u, char *buf, size_t len);

struct xrl_redis {
	struct xrl_redis_url url;
	struct timeval timeout;            /* connect, and every read and write */
	struct redisContext *c;            /* NULL while disconnected */
	char sha[XRL_SCRIPT_COUNT][41];
	unsigned long commands;            /* commands sent since start (EVALSHA, SCRIPT LOAD, ...) */
	unsigned long noscript;            /* NOSCRIPT replies (scripts flushed): reloaded */
	/*
	 * redis-cluster:// only (NULL otherwise): the slot map, a connection
	 * per node of the map (node[i] is map->node[i]; c above is one of
	 * theirs, non-NULL while the cluster is connected), and which node
	 * each call sent since the last recv went to, with its reply when
	 * read early (to follow a redirect, every connection is drained).
	 */
	struct xrl_cluster_map *map;
	struct xrl_redis_node *node;
	struct xrl_redis_sent *sent;
	int nsent, sent_head, sent_cap;
	bool map_stale;                    /* a MOVED or a lost master: the map is asked for again */
	unsigned long moved, asked, refreshes;
	unsigned long failed_calls;        /* calls failed alone (their master lost): reply NULL */
	char lost_why[256];                /* the last master lost, and why */
};

/* One node of a cluster: its connection and figures (metrics). */
struct xrl_redis_node {
	struct redisContext *c;
	unsigned long commands;            /* commands sent to it */
	unsigned long errors;              /* failed connections and calls, error replies */
	unsigned long keys;                /* keys of the script calls sent to it */
	double wait_s;                     /* time spent waiting for its replies */
	unsigned long long retry_ns;       /* failed: not tried again before this (CLOCK_MONOTONIC) */
};

struct xrl_redis_sent {
	int node;
	struct redisReply *reply;          /* read ahead; NULL until then */
};

/* One script call of a pipelined batch: argv holds KEYS then ARGV (the caller's storage). */
struct xrl_redis_call {
	enum xrl_script script;
	int nkeys;
	int argc;
	const char **argv;
	struct redisReply *reply;          /* set by xrl_redis_run; freed by xrl_redis_calls_free */
};

/* Connect, AUTH, SELECT, load the scripts. 0, or -errno with err set; r->c stays NULL. */
int xrl_redis_connect(struct xrl_redis *r, char *err, size_t errlen);
void xrl_redis_close(struct xrl_redis *r);
/*
 * Run n calls pipelined. 0 when every call got a reply (script errors are
 * replies of type error); -EIO with err set when the connection failed or
 * timed out, after which the connection is closed. On a cluster a master
 * that fails fails only its own calls: their reply stays NULL, the
 * function returns 0 while any master answers (lost_why says which).
 */
/* The same in two halves, so that calls are built while Redis runs earlier ones: */
int xrl_redis_send(struct xrl_redis *r, const struct xrl_redis_call *c, char *err, size_t errlen);
/* the replies of the n calls sent since the last recv, in order */
int xrl_redis_recv(struct xrl_redis *r, struct xrl_redis_call *calls, int n, char *err,
		   size_t errlen);
int xrl_redis_run(struct xrl_redis *r, struct xrl_redis_call *calls, int n, char *err,
		  size_t errlen);
void xrl_redis_calls_free(struct xrl_redis_call *calls, int n);

/*
 * One command outside the scripts (CONFIG GET, INFO, TYPE, DEL, ...): its
 * reply, which the caller frees (freeReplyObject), an error reply
 * included; NULL with err set when the connection failed (it is closed).
 */
struct redisReply *xrl_redis_command(struct xrl_redis *r, int argc, const char **argv, char *err,
				     size_t errlen);
/*
 * TYPE of n keys, pipelined: types[i] as Redis says ("string", "hash",
 * "zset", "none", ...). 0, or -EIO with err set (the connection is closed).
 */
int xrl_redis_types(struct xrl_redis *r, const char *const *keys, int n, char (*types)[16],
		    char *err, size_t errlen);

/*
 * The connected cluster's masters as "host:port (slots N), ..." for the
 * start-up log; "" when not a cluster or not connected.
 */
void xrl_redis_nodes_text(const struct xrl_redis *r, char *buf, size_t len);

/* Element i of an array reply as a double (scripts return numbers as strings). */
int xrl_redis_reply_num(const struct redisReply *rep, size_t i, double *out);

#endif /* XRL_REDIS_H */
