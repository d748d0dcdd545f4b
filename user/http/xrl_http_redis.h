/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The --global rules' path: one Lua call per request and rule on Redis'
 * clock (envoy ratelimit's model), the daemon's scripts (gcra.lua in take
 * mode for the token bucket, window.lua for the fixed window, take.lua
 * deciding and counting a sliding window's or log's request in the keys
 * of window.lua and log.lua) over the
 * daemon's connection code, pipelined: one thread sends every request
 * waiting, then reads their replies, on one connection, and hands each its
 * answer through a callback (the request's connection waits suspended, no
 * thread of its own). A call has a deadline of a few milliseconds; past it
 * the answer is "none in time" and the caller applies the failure policy,
 * so nothing waits on a Redis that stopped.
 */
#ifndef XRL_HTTP_REDIS_H
#define XRL_HTTP_REDIS_H

#include <stddef.h>

#include "xrl_http_rules.h"
#include "xrl_http_decide.h"

struct xrl_http_redis;

/* Latency buckets of the Redis calls (seconds), for the metrics' histogram. */
#define XRL_HTTP_REDIS_BUCKETS 8
extern const double xrl_http_redis_bucket_s[XRL_HTTP_REDIS_BUCKETS];

struct xrl_http_redis_stats {
	unsigned long calls, batches, failures, timeouts;
	unsigned long hist[XRL_HTTP_REDIS_BUCKETS + 1];   /* the last: above every bucket */
	double seconds;                                  /* the calls' latency, summed */
};

/*
 * Start the path to url (redis://...), each call bounded by timeout_ms.
 * host names this service in the scripts' arguments. NULL with err.
 */
struct xrl_http_redis *xrl_http_redis_start(const char *url, unsigned timeout_ms, const char *host,
					    char *err, size_t errlen);
/* Stop: the calls still queued are answered -1 first (so their connections resume). */
void xrl_http_redis_stop(struct xrl_http_redis *r);
/* A call's answer: 1 pass, 0 refuse (the figures written), -1 none in time. */
typedef void (*xrl_http_redis_done)(void *arg, int got);

/*
 * Ask Redis for one request of global rule r for the key named gkey (the
 * rule's key as a hash both services compute alike). done(arg, got) is
 * called once, from the Redis thread (or from this call when the path is
 * stopped or out of memory), after the rule's figures were written into f.
 */
void xrl_http_redis_ask(struct xrl_http_redis *rd, const struct xrl_http_rule *r, const char *gkey,
			struct xrl_http_figures *f, xrl_http_redis_done done, void *arg);
void xrl_http_redis_stats(struct xrl_http_redis *rd, struct xrl_http_redis_stats *out);
/* Is the Redis of rd a cluster (redis-cluster://)? */
int xrl_http_redis_cluster(const struct xrl_http_redis *rd);

#endif /* XRL_HTTP_REDIS_H */
