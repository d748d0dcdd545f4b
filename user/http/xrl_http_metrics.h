/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The request layer's metrics, served on its own GET /metrics in the
 * Prometheus text format: decisions by rule and result, the leaky bucket's
 * waits, the --global path's calls and latency histogram, and the most
 * refused keys (bounded; a key that may be a secret, a header or an
 * argument, is shown only as a hash).
 */
#ifndef XRL_HTTP_METRICS_H
#define XRL_HTTP_METRICS_H

#include <stdio.h>
#include <linux/types.h>

#include "xrl_http_decide.h"
#include "xrl_http_redis.h"
#include "xrl_httpd.h"

#define XRL_HTTP_TOP_SLOTS 64   /* refused keys tracked (space-saving) */
#define XRL_HTTP_TOP_SHOWN 10

struct xrl_http_metrics;

struct xrl_http_metrics *xrl_http_metrics_new(void);
void xrl_http_metrics_free(struct xrl_http_metrics *m);
/*
 * Count one decision: rules (the rule set in force), per[n] each matching
 * rule's figures, pass the request's result; label: the refusing key as it
 * may be shown (an address, or a hash), NULL if passed.
 */
void xrl_http_metrics_decision(struct xrl_http_metrics *m, const struct xrl_http_rules *rules,
			       const struct xrl_http_figures *per, int n, int pass,
			       const char *label, __u64 wait_ns);
/*
 * Write the exposition to f, every series labelled instance="inst" (as the
 * daemon's are). redis: the --global path's stats or NULL; h: the server's.
 */
void xrl_http_metrics_write(struct xrl_http_metrics *m, FILE *f, const char *inst,
			    const struct xrl_http_redis_stats *redis, unsigned long policy_decisions,
			    const struct xrl_httpd_stats *h);

#endif /* XRL_HTTP_METRICS_H */
