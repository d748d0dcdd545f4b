/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Prometheus exporter of one instance: the text exposition of its counters
 * (what `xrl stats` reports), its tracked sources and its most-dropped
 * sources, served with /healthz by libmicrohttpd. Everything is read from
 * the maps at scrape time; the data path does no work for it.
 */
#ifndef XRL_METRICS_H
#define XRL_METRICS_H

#include <stddef.h>
#include <stdio.h>

#define XRL_METRICS_DEFAULT_ADDR "127.0.0.1"
#define XRL_METRICS_DEFAULT_PORT 9464
#define XRL_METRICS_DEFAULT_TOP  10
#define XRL_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct xrl_maps;
struct xrl_metrics;
struct xrl_metrics_opts {
	const char *addr;        /* listen address, IPv4 or IPv6 literal, e.g. "127.0.0.1" or "::1" */
	unsigned short port;
	int top_k;               /* at most this many xrl_top_source_dropped_packets series */
	const char *instance;    /* value of the instance label */
	const char *pin_dir;     /* the instance's pin directory (for the shared reader lock, if you use it) */
};
/* Appends further metric families to a scrape (the daemon's fleet metrics); runs on the server's thread. */
typedef void (*xrl_metrics_extra_fn)(FILE *out, void *arg);
/* Parse "ADDR:PORT", "[v6]:PORT", ":PORT" or "" (=127.0.0.1:9464) into o->addr/o->port (addr points into buf). 0, or -EINVAL with err set. */
int xrl_metrics_parse_listen(const char *s, char *buf, size_t buflen, struct xrl_metrics_opts *o, char *err, size_t errlen);
/* The whole exposition text, exactly what /metrics serves. 0 or -errno. */
int xrl_metrics_render(FILE *out, const struct xrl_metrics_opts *o, const struct xrl_maps *m, xrl_metrics_extra_fn extra, void *arg);
/* Serve /metrics and /healthz from a libmicrohttpd thread. NULL with err set (e.g. "127.0.0.1:9464: address already in use") on failure. */
struct xrl_metrics *xrl_metrics_start(const struct xrl_metrics_opts *o, const struct xrl_maps *m, xrl_metrics_extra_fn extra, void *arg, char *err, size_t errlen);
void xrl_metrics_stop(struct xrl_metrics *srv);
/* For families appended by extra: the HELP and TYPE lines, and one escaped label (SEP is "{" or ","). */
void xrl_metrics_family(FILE *f, const char *name, const char *type, const char *help);
void xrl_metrics_label(FILE *f, const char *sep, const char *name, const char *v);
/* A family with one integer series, labelled with the instance only. */
void xrl_metrics_instance_family(FILE *f, const char *name, const char *type, const char *help,
				 const char *instance, unsigned long long v);

/*
 * Notes for callers of the four functions above:
 *
 * - ":PORT" listens on 127.0.0.1, like no address at all: exposing the
 *   exporter beyond the host takes an explicit address (0.0.0.0, [::]).
 *   xrl_metrics_start also takes port 0 (any free port; see
 *   xrl_metrics_port), which xrl_metrics_parse_listen refuses.
 * - With o->pin_dir set, a scrape shares the instance lock with `xrl stats`
 *   (so it never sees half a rule change), waiting for a writer at most
 *   XRL_METRICS_LOCK_WAIT_MS and failing with -EBUSY after that: the caller
 *   must not hold the instance lock between its own rule changes.
 * - Scrapes are rendered one at a time (a scrape of a full table walks it);
 *   /healthz does not wait for them.
 * - The instance label collides with the label Prometheus attaches to
 *   every scraped series: scrape with `honor_labels: true` to keep it
 *   (otherwise Prometheus renames it exported_instance).
 * - The daemon's fleet families, appended by extra, are the ones the
 *   Grafana dashboard (docs/grafana-xrl.json) queries: xrl_redis_up,
 *   xrl_redis_errors_total, xrl_redis_sync_duration_seconds (histogram) and
 *   xrl_fleet_share{instance,rule}. tests/prog/test_metrics.c keeps that
 *   list in step with the dashboard.
 */
#define XRL_METRICS_LOCK_WAIT_MS 2000

/* The port the server listens on (the one chosen when o->port was 0). */
unsigned short xrl_metrics_port(const struct xrl_metrics *srv);
/*
 * What /healthz answers: 0 while the counters are readable and, with
 * o->pin_dir, the maps read are the ones pinned there (not detached, not
 * replaced by a new attach); otherwise -errno and the reason in reason.
 */
int xrl_metrics_health(const struct xrl_metrics_opts *o, const struct xrl_maps *m, char *reason,
		       size_t len);

#endif /* XRL_METRICS_H */
