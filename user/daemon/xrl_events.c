// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xrl_format.h"
#include "xrl_events.h"
#include "xrl_log.h"
#include "xrl_rule.h"

struct xrl_events {
	const struct xrl_maps *m;
	struct ring_buffer *rb;
	__u64 quiet_ns;
	__u64 start_ns;     /* events from before it were the past: the start scan covers them */
	bool scanned;       /* the start scan is done (it needs the rules, to name them) */
	struct xrl_rule_def defs[XRL_MAX_RULES];   /* by rule id; in_use 0: none */
	struct xrl_bucket_key keys[XRL_LIMITED_SOURCES];
	struct xrl_limited vals[XRL_LIMITED_SOURCES];
};

static json_t *source_fields(const struct xrl_events *e, const struct xrl_bucket_key *k)
{
	const struct xrl_rule_def *d = k->rule_id < XRL_MAX_RULES && e->defs[k->rule_id].in_use ?
				       &e->defs[k->rule_id] : NULL;
	char src[64], rule[192] = "(deleted rule)";

	xrl_source_format(k, d, src, sizeof(src));
	if (d)
		xrl_rule_format_match(d, rule, sizeof(rule));
	return json_pack("{s:s,s:s}", "source", src, "rule", rule);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct xrl_events *e = ctx;
	const struct xrl_event *ev = data;

	if (size < sizeof(*ev) || ev->type != XRL_EV_LIMITED)
		return 0;
	/* left in the ring before this daemon: the start scan logged it if it still holds */
	if (ev->time_ns <= e->start_ns)
		return 0;
	xrl_log_event(XRL_LOG_INFO, "limited", source_fields(e, &ev->key));
	return 0;
}

struct xrl_events *xrl_events_open(const struct xrl_maps *m, __u64 quiet_ns)
{
	struct xrl_events *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->m = m;
	e->quiet_ns = quiet_ns;
	e->start_ns = xrl_mono_ns();
	e->rb = ring_buffer__new(m->events, on_event, e, NULL);
	if (!e->rb) {
		int err = errno;

		free(e);
		errno = err;
		return NULL;
	}
	return e;
}

void xrl_events_close(struct xrl_events *e)
{
	if (!e)
		return;
	ring_buffer__free(e->rb);
	free(e);
}

/* A source still limited: dropped within quiet_ns (last_drop_ns is refreshed every 100 ms at most). */
static bool still_limited(const struct xrl_events *e, const struct xrl_limited *l, __u64 now)
{
	return (__s64)(now - l->last_drop_ns) < (__s64)(e->quiet_ns + XRL_LIMITED_TOUCH_NS);
}

/*
 * Start from the current state: the sources limited before this daemon
 * started and still limited get their "limited" line now (and "back under
 * limit" later); those quiet since are forgotten without a line. Their
 * events, still in the ring, are skipped (start_ns); sources limited since
 * the start come with their own event.
 */
static void start_scan(struct xrl_events *e)
{
	__u64 now = xrl_mono_ns();
	int n, i;

	n = xrl_map_read_all(e->m->limited, e->keys, e->vals, sizeof(e->keys[0]),
			     sizeof(e->vals[0]), XRL_LIMITED_SOURCES);
	if (n < 0)
		return;   /* tried again with the next rule set */
	e->scanned = true;
	for (i = 0; i < n; i++) {
		const struct xrl_limited *l = &e->vals[i];
		json_t *f;

		if (l->since_ns > e->start_ns)
			continue;
		if (!still_limited(e, l, now)) {
			bpf_map_delete_elem(e->m->limited, &e->keys[i]);
			continue;
		}
		f = source_fields(e, &e->keys[i]);
		json_object_set_new(f, "limited_for_s", json_real((double)(now - l->since_ns) / 1e9));
		xrl_log_event(XRL_LOG_INFO, "limited", f);
	}
}

void xrl_events_set_rules(struct xrl_events *e, const struct xrl_rule_def *defs, const __u32 *ids,
			  int n)
{
	int i;

	memset(e->defs, 0, sizeof(e->defs));
	for (i = 0; i < n; i++)
		e->defs[ids[i]] = defs[i];
	if (!e->scanned)
		start_scan(e);
}

void xrl_events_poll(struct xrl_events *e, int timeout_ms)
{
	ring_buffer__poll(e->rb, timeout_ms < 0 ? 0 : timeout_ms);
}

void xrl_events_sweep(struct xrl_events *e)
{
	__u64 now = xrl_mono_ns();
	int n, i;

	if (!e->scanned) {
		start_scan(e);   /* the past first (normally done with the first rule set) */
		return;
	}
	n = xrl_map_read_all(e->m->limited, e->keys, e->vals, sizeof(e->keys[0]),
			     sizeof(e->vals[0]), XRL_LIMITED_SOURCES);
	if (n < 0)
		return;
	for (i = 0; i < n; i++) {
		const struct xrl_limited *l = &e->vals[i];
		json_t *f;

		if (still_limited(e, l, now))
			continue;
		f = source_fields(e, &e->keys[i]);
		json_object_set_new(f, "limited_for_s",
				    json_real((double)(l->last_drop_ns - l->since_ns) / 1e9));
		xrl_log_event(XRL_LOG_INFO, "back under limit", f);
		bpf_map_delete_elem(e->m->limited, &e->keys[i]);
	}
}
