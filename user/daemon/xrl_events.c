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
	__u64 rules_ns;     /* when defs were read: a block started before under another version is stale */
	struct xrl_rule_def defs[XRL_MAX_RULES];   /* by rule id; in_use 0: none */
	struct xrl_bucket_key keys[XRL_LIMITED_SOURCES];
	struct xrl_limited vals[XRL_LIMITED_SOURCES];
	/* --block's penalty box, read each sweep */
	struct xrl_bucket_key bkeys[XRL_BLOCKED_SOURCES];
	struct xrl_block bvals[XRL_BLOCKED_SOURCES];
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

/* A shadow rule's lines say so: it drops nothing. */
static json_t *policy_fields(json_t *f, __u32 policy)
{
	if (policy & XRL_P_SHADOW)
		json_object_set_new(f, "shadow", json_true());
	return f;
}

/* "released": a block that ended (its time, or `xrl block del`) */
static void log_released(const struct xrl_events *e, const struct xrl_bucket_key *k,
			 const struct xrl_block *b)
{
	json_t *f = policy_fields(source_fields(e, k), b->policy);

	json_object_set_new(f, "blocked_for_s", json_real((double)(b->until_ns - b->since_ns) / 1e9));
	json_object_set_new(f, "by", json_string(b->released == 1 ? "xrl block del" :
						 b->released == 2 ? "rule change" : "expiry"));
	xrl_log_event(XRL_LOG_INFO, b->policy & XRL_P_SHADOW ? "released (shadow)" : "released", f);
}

static void log_blocked(const struct xrl_events *e, const struct xrl_bucket_key *k, __u64 until_ns,
			__u64 now_ns, __u32 policy)
{
	json_t *f = policy_fields(source_fields(e, k), policy);

	json_object_set_new(f, "block_left_s", json_real((double)(__s64)(until_ns - now_ns) / 1e9));
	xrl_log_event(XRL_LOG_INFO, policy & XRL_P_SHADOW ? "blocked (shadow)" : "blocked", f);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct xrl_events *e = ctx;
	const struct xrl_event *ev = data;

	if (size < sizeof(*ev))
		return 0;
	/* left in the ring before this daemon: the start scan logged it if it still holds */
	if (ev->time_ns <= e->start_ns)
		return 0;
	if (ev->type == XRL_EV_LIMITED) {
		xrl_log_event(XRL_LOG_INFO, ev->policy & XRL_P_SHADOW ? "limited (shadow)" : "limited",
			      policy_fields(source_fields(e, &ev->key), ev->policy));
	} else if (ev->type == XRL_EV_BLOCKED) {
		if (ev->prev_until_ns) {
			/* its last block ended before the sweep saw it: released, then blocked again */
			struct xrl_block was = { .since_ns = ev->prev_until_ns, .until_ns = ev->prev_until_ns,
						 .policy = ev->policy };

			log_released(e, &ev->key, &was);
		}
		log_blocked(e, &ev->key, ev->until_ns, ev->time_ns, ev->policy);
	}
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
	/* sources in the penalty box since before this daemon: "blocked" now, "released" later */
	n = xrl_map_read_all(e->m->blocked, e->bkeys, e->bvals, sizeof(e->bkeys[0]),
			     sizeof(e->bvals[0]), XRL_BLOCKED_SOURCES);
	for (i = 0; i < n; i++)
		if ((__s64)(e->bvals[i].until_ns - now) > 0 && e->bvals[i].since_ns <= e->start_ns)
			log_blocked(e, &e->bkeys[i], e->bvals[i].until_ns, now, e->bvals[i].policy);
}

/*
 * Blocks that ended (their time passed, or `xrl block del` set it to the
 * present): logged released and deleted. An entry the data path restarted
 * meanwhile (a new block: a new end) is left for its own line.
 */
static void sweep_blocked(struct xrl_events *e, __u64 now)
{
	struct xrl_block cur;
	int n, i;

	n = xrl_map_read_all(e->m->blocked, e->bkeys, e->bvals, sizeof(e->bkeys[0]),
			     sizeof(e->bvals[0]), XRL_BLOCKED_SOURCES);
	for (i = 0; i < n; i++) {
		struct xrl_block *b = &e->bvals[i];
		__u32 id = e->bkeys[i].rule_id;
		/* its rule changed or went since it started (judged against rules read after it) */
		bool gone = b->since_ns < e->rules_ns &&
			    (id >= XRL_MAX_RULES || !e->defs[id].in_use || e->defs[id].version != b->version);

		if ((__s64)(b->until_ns - now) > 0 && !gone)
			continue;
		if (bpf_map_lookup_elem(e->m->blocked, &e->bkeys[i], &cur) ||
		    cur.until_ns != b->until_ns)
			continue;
		bpf_map_delete_elem(e->m->blocked, &e->bkeys[i]);
		if ((__s64)(b->until_ns - now) > 0) {
			b->until_ns = now;   /* its rule changed or went: the block with it */
			b->released = 2;
		}
		log_released(e, &e->bkeys[i], b);
	}
}

void xrl_events_set_rules(struct xrl_events *e, const struct xrl_rule_def *defs, const __u32 *ids,
			  int n)
{
	int i;

	memset(e->defs, 0, sizeof(e->defs));
	for (i = 0; i < n; i++)
		e->defs[ids[i]] = defs[i];
	e->rules_ns = xrl_mono_ns();
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
	int n, i, shadow;

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
		shadow = e->keys[i].rule_id < XRL_MAX_RULES &&
			 (e->defs[e->keys[i].rule_id].policy & XRL_P_SHADOW);
		f = policy_fields(source_fields(e, &e->keys[i]), shadow ? XRL_P_SHADOW : 0);
		json_object_set_new(f, "limited_for_s",
				    json_real((double)(l->last_drop_ns - l->since_ns) / 1e9));
		xrl_log_event(XRL_LOG_INFO, shadow ? "back under limit (shadow)" : "back under limit", f);
		bpf_map_delete_elem(e->m->limited, &e->keys[i]);
	}
	sweep_blocked(e, now);
}
