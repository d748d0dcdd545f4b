// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Limit events as log lines (xrl_events.h). Two rules keep them true and
 * few under a flood of spoofed sources:
 *
 *  - per rule, at most XRL_EV_LINES_PER_RULE "limited" lines in each
 *    XRL_EV_WINDOW_NS; the sources left out are counted and said in one
 *    summary line per rule when the window ends. A source gets its "back
 *    under limit" line only if its "limited" line was logged (the others are
 *    in the summary of their own kind).
 *  - "back under limit" only once neither the source nor its rule had a
 *    drop for the quiet time. The data path samples drops (1 in
 *    XRL_LIMITED_SAMPLE per CPU), so a source's own silence alone is no
 *    proof: a source dropped every 2 s may go unsampled for minutes; the
 *    rule's drop counters are exact. A source whose kernel entry went quiet
 *    while its rule still drops stays pending: its entry is deleted (which
 *    re-arms the data path's event), and a new event for it continues the
 *    same episode without a second "limited" line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xrl_busy_read.h"
#include "xrl_format.h"
#include "xrl_events.h"
#include "xrl_log.h"
#include "xrl_rule.h"

#define XRL_EV_WINDOW_NS      (10ull * 1000000000ull)
#define XRL_EV_LINES_PER_RULE 20
#define XRL_EV_PENDING        8192   /* sources whose "limited" line was logged: a power of 2 */
/*
 * A --syn rule's "limited" line waits this long at most for the source's
 * established traffic to prove it a busy client (xrl_busy_read.h): the
 * mark comes with the segments that follow the drop, after the event, and
 * a first segment may be seen before its connection is established (the
 * handshake's own ACK), proven by a later one.
 */
#define XRL_EV_BUSY_WAIT_NS   (1000000000ull)

/* A rule's lines in the current window, and when its drop counters last moved. */
struct ev_rule {
	__u64 window_ns;      /* start of the window */
	__u32 lines;          /* "limited" lines logged in it */
	__u32 left_limited;   /* sources limited in it, not logged */
	__u32 left_back;      /* sources back under limit in it, not logged */
	__u64 drops;          /* dropped + shadow_dropped at the last reading */
	__u64 drop_ns;        /* when they were last seen to grow (0: never read) */
};

/* A source whose "limited" line was logged, until its "back under limit" line. */
struct ev_pending {
	struct xrl_bucket_key key;
	__u64 since_ns, last_ns;   /* its first and latest sampled drop */
	__u32 policy;
	__u8 state;                /* 0 free, 1 used, 2 deleted (probing goes on) */
	__u8 held;                 /* its "limited" line waits for a busy-client mark */
};

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
	struct ev_rule rules[XRL_MAX_RULES];   /* by rule id */
	__u32 ids[XRL_MAX_RULES];
	int nids;
	struct xrl_rule_stats rstats[XRL_MAX_RULES];
	struct ev_pending pending[XRL_EV_PENDING];
	int npending, ndeleted;
};

/* ---------------------------------------------------------------- pending sources */

static __u32 key_hash(const struct xrl_bucket_key *k)
{
	const unsigned char *p = (const unsigned char *)k;
	__u32 h = 2166136261u;
	size_t i;

	for (i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static struct ev_pending *pending_find(struct xrl_events *e, const struct xrl_bucket_key *k)
{
	__u32 i, at = key_hash(k) & (XRL_EV_PENDING - 1);

	for (i = 0; i < XRL_EV_PENDING; i++, at = (at + 1) & (XRL_EV_PENDING - 1)) {
		struct ev_pending *p = &e->pending[at];

		if (p->state == 0)
			return NULL;
		if (p->state == 1 && !memcmp(&p->key, k, sizeof(*k)))
			return p;
	}
	return NULL;
}

/* Remember a logged source; false when the table is full (it then gets no "back" line). */
static bool pending_add(struct xrl_events *e, const struct xrl_bucket_key *k, __u64 since_ns,
			__u64 last_ns, __u32 policy, bool held)
{
	__u32 i, at = key_hash(k) & (XRL_EV_PENDING - 1);

	/* half full at most (deleted slots count): probes stay short */
	if (e->npending + e->ndeleted >= XRL_EV_PENDING / 2)
		return false;
	for (i = 0; i < XRL_EV_PENDING; i++, at = (at + 1) & (XRL_EV_PENDING - 1)) {
		struct ev_pending *p = &e->pending[at];

		if (p->state == 1)
			continue;
		e->ndeleted -= p->state == 2;
		p->key = *k;
		p->since_ns = since_ns;
		p->last_ns = last_ns;
		p->policy = policy;
		p->held = held;
		p->state = 1;
		e->npending++;
		return true;
	}
	return false;
}

static void pending_del(struct xrl_events *e, struct ev_pending *p)
{
	p->state = 2;
	e->npending--;
	e->ndeleted++;
	if (!e->npending) {   /* empty: forget the deleted slots too */
		memset(e->pending, 0, sizeof(e->pending));
		e->ndeleted = 0;
	}
}

static json_t *source_fields(const struct xrl_events *e, const struct xrl_bucket_key *k)
{
	const struct xrl_rule_def *d = k->rule_id < XRL_MAX_RULES && e->defs[k->rule_id].in_use ?
				       &e->defs[k->rule_id] : NULL;
	char src[64], rule[XRL_MATCH_TEXT] = "(deleted rule)";

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

static struct ev_rule *rule_of(struct xrl_events *e, const struct xrl_bucket_key *k)
{
	return k->rule_id < XRL_MAX_RULES ? &e->rules[k->rule_id] : NULL;
}

/* A --syn rule's source: one whose line may carry a busy-client mark. */
static bool syn_rule_of(const struct xrl_events *e, const struct xrl_bucket_key *k)
{
	return k->rule_id < XRL_MAX_RULES && e->defs[k->rule_id].in_use &&
	       (e->defs[k->rule_id].flags & XRL_F_SYN);
}

/*
 * The "limited" line. A --syn rule's source that sends established TCP
 * says so: a busy client, with what to do about it instead of what is done
 * about an attacker. f: extra fields (consumed).
 */
static void print_limited(const struct xrl_events *e, const struct xrl_bucket_key *k,
			  __u32 policy, json_t *f)
{
	json_t *line = policy_fields(source_fields(e, k), policy);
	int busy = syn_rule_of(e, k) ? xrl_busy_mark_of(e->m, k, xrl_mono_ns()) : XRL_BUSY_MARK_NONE;

	if (f) {
		json_object_update(line, f);
		json_decref(f);
	}
	xrl_busy_json(line, busy);
	xrl_log_event(XRL_LOG_INFO, policy & XRL_P_SHADOW ? "limited (shadow)" : "limited", line);
}

/*
 * A source found limited: its "limited" line if its rule has lines left in
 * the window, else counted for the rule's summary; a source still pending
 * (its episode goes on) gets no second line. A --syn rule's source not
 * proven yet is held (its line counted now) until it is or
 * XRL_EV_BUSY_WAIT_NS passed (xrl_events_sweep), and then carries the
 * mark it has. f: extra fields (consumed).
 */
static void log_limited(struct xrl_events *e, const struct xrl_bucket_key *k, __u64 since_ns,
			__u64 last_ns, __u32 policy, json_t *f)
{
	struct ev_pending *p = pending_find(e, k);
	struct ev_rule *r = rule_of(e, k);

	if (p) {
		if ((__s64)(last_ns - p->last_ns) > 0)
			p->last_ns = last_ns;
		json_decref(f);
		return;
	}
	if (r && r->lines >= XRL_EV_LINES_PER_RULE) {
		r->left_limited++;
		json_decref(f);
		return;
	}
	if (r)
		r->lines++;
	if (!f && syn_rule_of(e, k) &&
	    xrl_busy_mark_of(e->m, k, xrl_mono_ns()) != XRL_BUSY_MARK_PROVEN &&
	    pending_add(e, k, since_ns, last_ns, policy, true))
		return;
	print_limited(e, k, policy, f);
	pending_add(e, k, since_ns, last_ns, policy, false);
}

/* Held lines proven busy, or whose wait is over; all of them when all is set. */
static void release_held(struct xrl_events *e, __u64 now, bool all)
{
	int i;

	for (i = 0; i < XRL_EV_PENDING && e->npending; i++) {
		struct ev_pending *p = &e->pending[i];

		if (p->state != 1 || !p->held)
			continue;
		if (!all && (__s64)(now - p->since_ns) < (__s64)XRL_EV_BUSY_WAIT_NS &&
		    xrl_busy_mark_of(e->m, &p->key, now) != XRL_BUSY_MARK_PROVEN)
			continue;
		p->held = 0;
		print_limited(e, &p->key, p->policy, NULL);
	}
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
		log_limited(e, &ev->key, ev->time_ns, ev->time_ns, ev->policy, NULL);
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
	release_held(e, xrl_mono_ns(), true);   /* a held line is said before the daemon stops */
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
	for (i = 0; i < XRL_MAX_RULES; i++)
		e->rules[i].window_ns = now;
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
		f = json_object();
		json_object_set_new(f, "limited_for_s", json_real((double)(now - l->since_ns) / 1e9));
		log_limited(e, &e->keys[i], l->since_ns, l->last_drop_ns, 0, f);
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
	for (i = 0; i < n; i++) {
		/* a changed rule on the same id: its drop counters start again */
		if (e->defs[ids[i]].in_use && !xrl_rule_same_match(&e->defs[ids[i]], &defs[i]))
			e->rules[ids[i]].drop_ns = 0;
		e->defs[ids[i]] = defs[i];
	}
	memcpy(e->ids, ids, sizeof(ids[0]) * (size_t)n);
	e->nids = n;
	e->rules_ns = xrl_mono_ns();
	if (!e->scanned)
		start_scan(e);
}

void xrl_events_poll(struct xrl_events *e, int timeout_ms)
{
	ring_buffer__poll(e->rb, timeout_ms < 0 ? 0 : timeout_ms);
}

/* Read the rules' drop counters: when each last grew. A rule unread is taken as dropping now. */
static void read_rule_drops(struct xrl_events *e, __u64 now)
{
	int i;

	if (e->nids && xrl_read_rule_stats_many(e->m, e->ids, e->nids, e->rstats)) {
		for (i = 0; i < e->nids; i++)
			e->rules[e->ids[i]].drop_ns = now;
		return;
	}
	for (i = 0; i < e->nids; i++) {
		struct ev_rule *r = &e->rules[e->ids[i]];
		__u64 d = e->rstats[i].dropped + e->rstats[i].shadow_dropped;

		if (!r->drop_ns || d != r->drops)
			r->drop_ns = now;
		r->drops = d;
	}
}

/* A rule without a drop for the quiet time (a rule gone: nothing of it drops). */
static bool rule_quiet(const struct xrl_events *e, __u32 id, __u64 now)
{
	if (id >= XRL_MAX_RULES || !e->defs[id].in_use)
		return true;
	return e->rules[id].drop_ns && now - e->rules[id].drop_ns >= e->quiet_ns;
}

static void log_back(struct xrl_events *e, struct ev_pending *p)
{
	bool shadow = p->policy & XRL_P_SHADOW ||
		      (p->key.rule_id < XRL_MAX_RULES && (e->defs[p->key.rule_id].policy & XRL_P_SHADOW));
	json_t *f = policy_fields(source_fields(e, &p->key), shadow ? XRL_P_SHADOW : 0);
	__u64 end = p->last_ns;

	/* it was held back by its rule's drops: its episode lasted as long as they did */
	if (p->key.rule_id < XRL_MAX_RULES && (__s64)(e->rules[p->key.rule_id].drop_ns - end) > 0)
		end = e->rules[p->key.rule_id].drop_ns;
	json_object_set_new(f, "limited_for_s", json_real((double)(end - p->since_ns) / 1e9));
	xrl_log_event(XRL_LOG_INFO, shadow ? "back under limit (shadow)" : "back under limit", f);
}

/* A window ended: the rule's summary of the lines left out, then a new window. */
static void roll_windows(struct xrl_events *e, __u64 now)
{
	int i;

	for (i = 0; i < e->nids; i++) {
		__u32 id = e->ids[i];
		struct ev_rule *r = &e->rules[id];
		char rule[XRL_MATCH_TEXT];

		if (now - r->window_ns < XRL_EV_WINDOW_NS)
			continue;
		xrl_rule_format_match(&e->defs[id], rule, sizeof(rule));
		if (r->left_limited)
			xrl_log_event(XRL_LOG_INFO, "limited, not logged",
				      json_pack("{s:s,s:i,s:f,s:i,s:s}", "rule", rule, "sources",
						(int)r->left_limited, "window_s", (double)(now - r->window_ns) / 1e9,
						"logged", (int)r->lines, "why",
						"at most 20 lines per rule in 10 s: many sources at once (spoofed?); see xrl top"));
		if (r->left_back)
			xrl_log_event(XRL_LOG_INFO, "back under limit, not logged",
				      json_pack("{s:s,s:i,s:f}", "rule", rule, "sources", (int)r->left_back,
						"window_s", (double)(now - r->window_ns) / 1e9));
		r->window_ns = now;
		r->lines = r->left_limited = r->left_back = 0;
	}
}

void xrl_events_sweep(struct xrl_events *e)
{
	__u64 now = xrl_mono_ns();
	int n, i;

	if (!e->scanned) {
		start_scan(e);   /* the past first (normally done with the first rule set) */
		return;
	}
	read_rule_drops(e, now);
	n = xrl_map_read_all(e->m->limited, e->keys, e->vals, sizeof(e->keys[0]),
			     sizeof(e->vals[0]), XRL_LIMITED_SOURCES);
	for (i = 0; i < n; i++) {
		const struct xrl_limited *l = &e->vals[i];
		struct ev_pending *p = pending_find(e, &e->keys[i]);
		struct ev_rule *r = rule_of(e, &e->keys[i]);

		if (p && (__s64)(l->last_drop_ns - p->last_ns) > 0)
			p->last_ns = l->last_drop_ns;
		if (still_limited(e, l, now))
			continue;
		/* quiet as sampled: re-arm the data path's event; a pending source waits for its rule */
		if (!p && r)
			r->left_back++;
		bpf_map_delete_elem(e->m->limited, &e->keys[i]);
	}
	release_held(e, now, false);
	for (i = 0; i < XRL_EV_PENDING && e->npending; i++) {
		struct ev_pending *p = &e->pending[i];

		if (p->state != 1 || (__s64)(now - p->last_ns) < (__s64)(e->quiet_ns + XRL_LIMITED_TOUCH_NS) ||
		    !rule_quiet(e, p->key.rule_id, now))
			continue;
		if (p->held) {   /* its line first */
			p->held = 0;
			print_limited(e, &p->key, p->policy, NULL);
		}
		log_back(e, p);
		pending_del(e, p);
	}
	roll_windows(e, now);
	sweep_blocked(e, now);
}
