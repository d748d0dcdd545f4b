// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A round's exchange with Redis: the calls (built by xrl_script_args.c),
 * their answers into the pushes and rules, and the connection's state with
 * its once-per-change logging.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>

#include "xrl_fleet_int.h"
#include "xrl_log.h"

/* A cluster's masters in use: logged when first known and once per change (failover, resharding). */
static void log_masters(struct xrl_fleet *f)
{
	static char last[1024];
	char now[1024];

	xrl_redis_nodes_text(&f->redis, now, sizeof(now));
	if (!now[0] || !strcmp(now, last))
		return;
	xrl_log(XRL_LOG_INFO, "redis cluster masters %s: %s", last[0] ? "changed" : "in use", now);
	memcpy(last, now, sizeof(last));
}

/*
 * On a cluster, calls that failed alone: logged once when it starts (which
 * master, what the policy does to its sources) and once when every shard
 * answers again.
 */
static void log_partial(struct xrl_fleet *f, int np, __u64 now)
{
	static const char *const what[] = {
		"each host keeps its last known share of them",
		"they are limited at their local rate only",
		"global rules drop everything they match from them",
	};
	int i, n = 0;

	for (i = 0; i < np; i++)
		n += f->pushes[i].unanswered;
	if (f->unanswered_calls && !f->partial) {
		xrl_log(XRL_LOG_WARN, "redis %s: %d sources' shards unanswered; --on-redis-failure %s: %s until their master answers; the other shards keep their exact shares",
			f->redis.lost_why, n, xrl_fleet_policy_name[f->policy], what[f->policy]);
		f->partial = true;
		f->partial_since_ns = now;
	} else if (!f->unanswered_calls && f->partial) {
		xrl_log(XRL_LOG_INFO, "redis cluster: every shard answers again after %.1f s",
			(now - f->partial_since_ns) / 1e9);
		f->partial = false;
	}
}

/*
 * On a cluster, each shard's hold (local): a shard with an unanswered call
 * is down from the end of the last answered round (prev_ok), when it had
 * none, until a call of its is answered again; one that stays down past
 * the hold holds no share of its sources (xrl_fleet_shard_lost), logged
 * once as it happens. Shards without calls this round keep their state (a
 * source closed by its floor is not reported every round).
 */
static void shard_holds(struct xrl_fleet *f, int np, __u64 prev_ok, __u64 now)
{
	__u64 unanswered = 0, answered = 0, lost = 0;
	int i, n = 0;
	unsigned s;

	if (!f->redis.url.cluster)
		return;
	for (i = 0; i < np; i++) {
		__u64 bit = 1ull << f->pushes[i].shard;

		if (f->pushes[i].unanswered)
			unanswered |= bit;
		else
			answered |= bit;
	}
	for (s = 0; s < XRL_CLUSTER_SHARDS; s++) {
		__u64 bit = 1ull << s;

		if (unanswered & bit) {
			if (!f->shard_down_ns[s])
				f->shard_down_ns[s] = prev_ok;
			if (!(f->shards_lost & bit) && xrl_fleet_shard_lost(f, s, now))
				lost |= bit;
		} else if (answered & bit) {
			f->shard_down_ns[s] = 0;
			f->shards_lost &= ~bit;
		}
	}
	if (!lost)
		return;
	f->shards_lost |= lost;
	for (i = 0; i < np; i++)
		n += !!(lost & (1ull << f->pushes[i].shard));
	xrl_log(XRL_LOG_WARN, "redis cluster: %d shards' calls (%d sources) unanswered for %.1f s or more: the other hosts no longer count this host's share of their sources, so it holds none; global rules drop what they match from them until their master answers (--on-redis-failure local; the other shards keep their exact shares)",
		__builtin_popcountll(lost), n, xrl_fleet_hold_ns(f) / 1e9);
}

static void set_up(struct xrl_fleet *f, bool up, const char *why, __u64 now)
{
	static const char *const what[] = {
		"each host keeps its last known share of every global budget",
		"global rules limit at their local rate only",
		"global rules drop everything they match",
	};
	char where[300];

	xrl_redis_url_name(&f->redis.url, where, sizeof(where));
	if (up && !f->redis_up) {
		if (f->ever_up)
			xrl_log(XRL_LOG_INFO, "redis %s is back after %.1f s (%lu failed attempts): fleet-wide limits resume",
				where, (now - f->down_since_ns) / 1e9, f->failed_connects);
		else
			xrl_log(XRL_LOG_INFO, "redis %s connected: fleet-wide limits in force", where);
		f->ever_up = true;
		f->failed_connects = 0;
		f->backoff_ns = f->interval_ns / 4;
		f->share_lost = false;
	} else if (!up && (f->redis_up || !f->down_since_ns)) {
		xrl_log(XRL_LOG_WARN, "redis %s %s: %s; --on-redis-failure %s: %s until it answers",
			where, f->ever_up ? "failed" : "unavailable", why,
			xrl_fleet_policy_name[f->policy], what[f->policy]);
		f->down_since_ns = now;
	}
	if (!up)
		snprintf(f->last_error, sizeof(f->last_error), "%s", why);
	f->redis_up = up;
	if (up)
		log_masters(f);
}

/* A failed connection or round: logged once per change; the next try after the backoff. */
static void failed(struct xrl_fleet *f, const char *why)
{
	f->failed_connects++;
	xrl_fleet_count_error(f);
	set_up(f, false, why, xrl_mono_ns());
	f->next_connect_ns = xrl_mono_ns() + f->backoff_ns;
	f->backoff_ns = f->backoff_ns * 2 > f->interval_ns ? f->interval_ns : f->backoff_ns * 2;
}

/*
 * Connect when down and the backoff has passed; the backoff doubles up to
 * one interval. Redis is up only once a round's calls were all answered: a
 * server that takes the connection and refuses the scripts (out of memory,
 * read-only replica) is down.
 */
void xrl_fleet_ensure_connected(struct xrl_fleet *f, __u64 now)
{
	char err[256];

	if (f->redis.c || now < f->next_connect_ns)
		return;
	if (xrl_redis_connect(&f->redis, err, sizeof(err)))
		failed(f, err);
	else
		xrl_fleet_check_policy(f);
}

/* The figures of one round, as the scripts take them. */
struct round_text {
	char live_us[32], demand_us[32], ttl_ms[32], life_us[32], since_us[32];
	__u64 since_ns;
};

/* A push's key: xrl:{RULE:SOURCE}, or on a cluster xrl:{SHARD}:RULE:SOURCE. */
static void source_key(const struct xrl_fleet *f, const struct xrl_fleet_rule_state *rs,
		       const struct xrl_fleet_push *p, char *key)
{
	if (f->redis.url.cluster)
		xrl_fleet_source_key_tagged(xrl_cluster_shard_tag(p->shard), rs->name,
					    &f->used_keys[p->used], rs->per_len, key,
					    sizeof(f->keytext[0]) - 2);
	else
		xrl_fleet_source_key(rs->name, &f->used_keys[p->used], rs->per_len, key,
				     sizeof(f->keytext[0]) - 2);
}

/* v in decimal at o, then a NUL: where the NUL is (a round writes a few per source: no printf). */
static char *put_u64(char *o, __u64 v)
{
	char t[20];
	int n = 0;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*o++ = t[--n];
	*o = 0;
	return o;
}

/* Push i as a source of its gcra call: its key, "n" or "n@since", and its demand if due. */
static void gcra_source(struct xrl_fleet *f, const struct xrl_fleet_rule_state *rs, int i,
			const struct round_text *rt)
{
	const struct xrl_fleet_push *p = &f->pushes[i];
	struct xrl_gcra_source *s = &f->sources[i];
	char (*a)[32] = f->argtext[i], *key = f->keytext[2 * i], *dkey = f->keytext[2 * i + 1], *o;
	size_t len;

	source_key(f, rs, p, key);
	/*
	 * "n", or "n@since" for a source younger than the round; "+" first
	 * when the fleet's TAT is probably still ahead (p->ahead: the floor
	 * still holds this host back at the round's start). A guess: either
	 * way the answer is the same, a wrong "+" costs Redis one write more,
	 * a missing one a read.
	 */
	o = a[0];
	if (p->ahead)
		*o++ = '+';
	o = put_u64(o, p->delta);
	if (p->since_ns != rt->since_ns) {
		*o++ = '@';
		put_u64(o, p->since_ns / 1000);
	}
	s->key = key;
	s->n = a[0];
	s->demand_key = NULL;
	if (p->demand < 0)
		return;
	len = strlen(key);   /* at most sizeof(keytext[0]) - 3: room for ":d" */
	memcpy(dkey, key, len);
	memcpy(dkey + len, ":d", 3);
	put_u64(a[1], (__u64)p->demand);   /* >= 0 here */
	put_u64(a[2], p->demand_ns / 1000);
	s->demand_key = dkey;
	s->demand = a[1];
	s->demand_us = a[2];
}

/* Push i as a source of its window call (--algo): its key and its admissions. */
static void window_source(struct xrl_fleet *f, const struct xrl_fleet_rule_state *rs, int i)
{
	const struct xrl_fleet_push *p = &f->pushes[i];
	struct xrl_gcra_source *s = &f->sources[i];
	char *key = f->keytext[2 * i];

	source_key(f, rs, p, key);
	put_u64(f->argtext[i][0], p->delta);
	s->key = key;
	s->n = f->argtext[i][0];
	s->demand_key = NULL;
}

/* Calls so far and the argument slots they use. */
struct sending {
	int nc;
	size_t pool;
};

/* The gcra calls of pushes [0, np): one rule per call, so its figures go once per call. */
static int send_gcra(struct xrl_fleet *f, int np, const struct round_text *rt,
		     struct sending *s, char *err, size_t errlen)
{
	int i, n;

	for (i = 0; i < np; i += n) {
		__u32 rule = f->pushes[i].rule, shard = f->pushes[i].shard;
		const struct xrl_fleet_rule_state *rs = &f->rules[rule];
		struct xrl_redis_call *c = &f->calls[s->nc];
		const char *fixed[XRL_GCRA_FIXED] = {
			[XRL_GCRA_MODE] = "0",
			[XRL_GCRA_HOST] = f->host_id,
			[XRL_GCRA_WINDOW_US] = rt->demand_us,
			[XRL_GCRA_LIFE_US] = rt->life_us,
			[XRL_GCRA_INTERVAL_US] = rs->interval_us,
			[XRL_GCRA_SPAN_US] = rs->span_us,
			[XRL_GCRA_SINCE_US] = rt->since_us,
		};

		if (rs->algo != XRL_ALGO_TOKEN_BUCKET) {
			/* --algo: the window counters of window.lua, or a sliding log's log.lua */
			const char *keys[XRL_FLEET_BATCH], *counts[XRL_FLEET_BATCH];
			const char *slog[XRL_SLOG_FIXED] = {
				[XRL_SLOG_HOST] = f->host_id,
				[XRL_SLOG_WIN_US] = rs->win_us,
				[XRL_SLOG_CAP] = XRL_FLEET_LOG_CAP,
			};

			for (n = 0; n < XRL_FLEET_BATCH && i + n < np && f->pushes[i + n].rule == rule &&
			     f->pushes[i + n].shard == shard; n++) {
				window_source(f, rs, i + n);
				keys[n] = f->sources[i + n].key;
				counts[n] = f->sources[i + n].n;
			}
			if (rs->algo == XRL_ALGO_SLIDING_LOG)
				xrl_slog_build(c, &f->argpool[s->pool], slog, keys, counts, n);
			else
				xrl_window_build(c, &f->argpool[s->pool], rs->win_us, keys, counts, n);
		} else {
			for (n = 0; n < XRL_FLEET_BATCH && i + n < np && f->pushes[i + n].rule == rule &&
			     f->pushes[i + n].shard == shard; n++)
				gcra_source(f, rs, i + n, rt);
			xrl_gcra_build(c, &f->argpool[s->pool], fixed, &f->sources[i], n,
				       f->argtext[i][3]);
		}
		s->pool += c->argc;
		f->call_sources[s->nc] = n;
		f->call_entry[s->nc++] = i;
		if (xrl_redis_send(&f->redis, c, err, errlen))
			return -1;
	}
	return 0;
}

/* Every global rule's use: one hosts call per rule. */
static int send_hosts(struct xrl_fleet *f, const struct round_text *rt, struct sending *s,
		      char *err, size_t errlen)
{
	int id;

	for (id = 0; id < XRL_MAX_RULES; id++) {
		const struct xrl_fleet_rule_state *rs = &f->rules[id];
		struct xrl_redis_call *c = &f->calls[s->nc];
		char *key = f->keytext[2 * XRL_FLEET_SOURCES + id];
		const char *fixed[XRL_HOSTS_FIXED] = {
			[XRL_HOSTS_HOST] = f->host_id,
			[XRL_HOSTS_RATE] = f->rate_text[id],
			[XRL_HOSTS_WINDOW_US] = rt->live_us,
			[XRL_HOSTS_TTL_MS] = rt->ttl_ms,
		};

		if (!rs->global)
			continue;
		xrl_fleet_hosts_key(rs->name, key, sizeof(f->keytext[0]));
		snprintf(f->rate_text[id], sizeof(f->rate_text[id]), "%.3f", rs->rate_ewma);
		xrl_hosts_build(c, &f->argpool[s->pool], key, fixed);
		s->pool += c->argc;
		f->call_entry[s->nc++] = -1 - id;
		if (xrl_redis_send(&f->redis, c, err, errlen))
			return -1;
	}
	return 0;
}

/* A window call's answers into its pushes: the fleet's counts of Redis' window. */
static void take_window(struct xrl_fleet *f, int call, const redisReply *rep)
{
	struct xrl_window_answer ans[XRL_FLEET_BATCH];
	int first = f->call_entry[call], n = f->call_sources[call], j;

	xrl_window_decode(rep, n, ans);
	for (j = 0; j < n; j++) {
		struct xrl_fleet_push *p = &f->pushes[first + j];

		if (isnan(ans[j].cur))
			break;
		p->win_idx = ans[j].idx;
		p->win_cur = ans[j].cur;
		p->win_prev = ans[j].prev;
	}
}

/* A log call's answers into its pushes (--algo sliding-log): the others' admissions in the window. */
static void take_log(struct xrl_fleet *f, int call, const redisReply *rep)
{
	struct xrl_slog_answer ans[XRL_FLEET_BATCH];
	int first = f->call_entry[call], n = f->call_sources[call], j;

	xrl_slog_decode(rep, n, ans);
	for (j = 0; j < n; j++) {
		struct xrl_fleet_push *p = &f->pushes[first + j];

		if (isnan(ans[j].after))
			break;
		p->win_idx = ans[j].idx;
		p->log_others = ans[j].others;
		p->log_leave_us = ans[j].leave_us;
		p->log_after = ans[j].after;
	}
}

/* A gcra call's answers into its pushes: debts, and shares where the demand went along. */
static void take_gcra(struct xrl_fleet *f, int call, const redisReply *rep)
{
	struct xrl_gcra_answer ans[XRL_FLEET_BATCH];
	int first = f->call_entry[call], n = f->call_sources[call], j;
	__u8 algo = f->rules[f->pushes[first].rule].algo;

	if (algo == XRL_ALGO_SLIDING_LOG) {
		take_log(f, call, rep);
		return;
	}
	if (algo != XRL_ALGO_TOKEN_BUCKET) {
		take_window(f, call, rep);
		return;
	}
	xrl_gcra_decode(rep, &f->sources[first], n, false, ans);
	for (j = 0; j < n; j++) {
		struct xrl_fleet_push *p = &f->pushes[first + j];
		double share = ans[j].share_ppm / 1e6;

		if (isnan(ans[j].debt_us))
			break;
		p->debt_us = ans[j].debt_us;
		if (isnan(ans[j].share_ppm) || isnan(ans[j].live))
			continue;
		p->share = share > 0 && share <= 1 ? share : 1;
		p->live = ans[j].live > 0 ? (__u32)ans[j].live : 1;
	}
}

/* A hosts call's answer into its rule: hosts, and this host's share of their use. */
static void take_hosts(struct xrl_fleet *f, int call, const redisReply *rep)
{
	struct xrl_fleet_rule_state *rs = &f->rules[-1 - f->call_entry[call]];
	double live, sum;

	if (xrl_hosts_decode(rep, &live, &sum))
		return;
	pthread_mutex_lock(&f->lock);
	rs->hosts = live > 0 ? (__u32)live : 1;
	rs->share = rs->rate_ewma > 0 && sum > 0 ? rs->rate_ewma / sum : 1.0 / rs->hosts;
	if (rs->share > 1)
		rs->share = 1;
	pthread_mutex_unlock(&f->lock);
}

/* Call i failed alone: its pushes take the failure policy (a hosts call: the rule keeps its share). */
static void mark_unanswered(struct xrl_fleet *f, int call)
{
	int j, first = f->call_entry[call];

	if (first < 0)
		return;
	for (j = 0; j < f->call_sources[call]; j++)
		f->pushes[first + j].unanswered = true;
	f->unanswered_calls++;
}

/*
 * A key of a call that Redis refused with WRONGTYPE: something else wrote
 * a key of another type where xrl keeps one of its own. Keys under "xrl:{"
 * are xrl's (the daemon writes nothing else and hosts running the same
 * rule share them): deleted, the call made again, and the round goes on. A
 * line says which key, its type and what was done, at most one per 10 s
 * (the next one counts those not shown). Returns how many were deleted.
 */
static int repair_call(struct xrl_fleet *f, const struct xrl_redis_call *c, char *err,
		       size_t errlen)
{
	static struct xrl_script_key keys[XRL_SCRIPT_KEYS_MAX];
	static char types[XRL_SCRIPT_KEYS_MAX][16];
	const char *names[XRL_SCRIPT_KEYS_MAX];
	int n, i, fixed = 0;
	__u64 now;

	n = xrl_script_keys(c, xrl_rt_now_ns() / 1000, keys, XRL_SCRIPT_KEYS_MAX);
	for (i = 0; i < n; i++)
		names[i] = keys[i].name;
	if (xrl_redis_types(&f->redis, names, n, types, err, errlen))
		return -1;
	for (i = 0; i < n; i++) {
		const char *argv[] = { "DEL", keys[i].name };
		bool ours = !strncmp(keys[i].name, "xrl:{", 5);
		struct redisReply *rep = NULL;

		if (!strcmp(types[i], "none") || !strcmp(types[i], keys[i].type))
			continue;
		if (ours && !(rep = xrl_redis_command(&f->redis, 2, argv, err, errlen)))
			return -1;
		if (rep)
			freeReplyObject(rep);
		fixed += ours;
		pthread_mutex_lock(&f->lock);
		f->keys_repaired += ours;
		pthread_mutex_unlock(&f->lock);
		now = xrl_mono_ns();
		if (f->repair_logged_ns && now - f->repair_logged_ns < 10000000000ull) {
			f->repair_unlogged++;
			continue;
		}
		if (ours)
			xrl_log(XRL_LOG_WARN, "redis key %s is a %s where xrl keeps a %s (something else wrote it): deleted, xrl writes it again this round%s",
				keys[i].name, types[i], keys[i].type,
				f->repair_unlogged ? " (more keys repaired since the last such line)" : "");
		else
			xrl_log(XRL_LOG_WARN, "redis key %s is a %s where xrl keeps a %s: delete it (redis-cli DEL '%s')",
				keys[i].name, types[i], keys[i].type, keys[i].name);
		f->repair_logged_ns = now;
		f->repair_unlogged = 0;
	}
	return fixed;
}

/*
 * The calls refused with WRONGTYPE: their keys of the wrong type repaired,
 * made again and their answers taken, their floors written again. 0, or
 * -1 with err set when Redis failed or refused them again.
 */
static int retry_wrongtype(struct xrl_fleet *f, const int *wrong, int n, __u64 t0,
			   int *floor_err, char *err, size_t errlen)
{
	int i, e;

	for (i = 0; i < n; i++) {
		struct xrl_redis_call *c = &f->calls[wrong[i]];
		int fixed = repair_call(f, c, err, errlen);

		if (fixed < 0)
			return -1;
		if (!fixed) {
			snprintf(err, errlen, "script call refused: %s", c->reply->str);
			return -1;
		}
		freeReplyObject(c->reply);
		c->reply = NULL;
		if (xrl_redis_run(&f->redis, c, 1, err, errlen))
			return -1;
		if (!c->reply) {
			mark_unanswered(f, wrong[i]);
			if (f->call_entry[wrong[i]] >= 0)
				xrl_fleet_put_floors(f, f->call_entry[wrong[i]],
						     f->call_entry[wrong[i]] + f->call_sources[wrong[i]],
						     t0, xrl_mono_ns());
			continue;
		}
		if (c->reply->type == REDIS_REPLY_ERROR) {
			snprintf(err, errlen, "script call refused: %s", c->reply->str);
			return -1;
		}
		if (f->call_entry[wrong[i]] < 0) {
			take_hosts(f, wrong[i], c->reply);
			continue;
		}
		take_gcra(f, wrong[i], c->reply);
		e = xrl_fleet_put_floors(f, f->call_entry[wrong[i]],
					 f->call_entry[wrong[i]] + f->call_sources[wrong[i]], t0,
					 xrl_mono_ns());
		if (e)
			*floor_err = e;
	}
	return 0;
}

/*
 * Read the nc replies a chunk at a time, writing the floors of the chunks
 * before while Redis works on the next one. 0, or -1 with err set.
 */
static int read_replies(struct xrl_fleet *f, int nc, int np, __u64 t0, int *floor_err,
			char *err, size_t errlen)
{
	int floors_done = 0, i, e, wrong[XRL_FLEET_RECV_CHUNK * 4], nwrong = 0, failed = 0;
	bool more = false;

	for (i = 0; i < nc; i++) {
		const redisReply *rep;

		if (i % XRL_FLEET_RECV_CHUNK == 0) {
			int k = nc - i < XRL_FLEET_RECV_CHUNK ? nc - i : XRL_FLEET_RECV_CHUNK;
			int upto = f->call_entry[i] >= 0 ? f->call_entry[i] : np;

			if ((e = xrl_fleet_put_floors(f, floors_done, upto, t0, xrl_mono_ns())))
				*floor_err = e;
			floors_done = upto;
			if (xrl_redis_recv(&f->redis, &f->calls[i], k, err, errlen))
				return -1;
		}
		rep = f->calls[i].reply;
		if (!rep || (rep->type == REDIS_REPLY_ERROR &&
			     (!strncmp(rep->str, "TRYAGAIN", 8) || !strncmp(rep->str, "CLUSTERDOWN", 11)))) {
			/*
			 * Failed alone (a cluster master lost), refused while the
			 * cluster has a shard without a master (CLUSTERDOWN), or its
			 * slot half migrated with its keys split (TRYAGAIN): its
			 * sources under the policy this round, the others answered.
			 */
			if (rep)
				snprintf(f->redis.lost_why, sizeof(f->redis.lost_why), "%s", rep->str);
			mark_unanswered(f, i);
			failed++;
			continue;
		}
		if (rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "WRONGTYPE", 9)) {
			/* a key of another type: repaired after the others, as many as fit a round */
			if (nwrong < (int)(sizeof(wrong) / sizeof(wrong[0])))
				wrong[nwrong++] = i;
			else
				more = true;
			continue;
		}
		if (rep->type == REDIS_REPLY_ERROR) {
			/*
			 * Out of memory, a read-only replica: Redis is failing,
			 * whatever the cause. The round fails (once-per-change
			 * logging, the failure policy, the metric); the connection
			 * goes, replies still in it with it.
			 */
			snprintf(err, errlen, "script call refused: %s", rep->str);
			return -1;
		}
		if (f->call_entry[i] >= 0)
			take_gcra(f, i, rep);
		else
			take_hosts(f, i, rep);
	}
	if (nc && failed == nc) {
		/* no call answered: the cluster failed as a whole, as one Redis does */
		snprintf(err, errlen, "%s", f->redis.lost_why[0] ? f->redis.lost_why :
			 "no master of the cluster answers");
		return -1;
	}
	if ((e = xrl_fleet_put_floors(f, floors_done, np, t0, xrl_mono_ns())))
		*floor_err = e;
	if (nwrong && retry_wrongtype(f, wrong, nwrong, t0, floor_err, err, errlen))
		return -1;
	if (more) {
		snprintf(err, errlen, "script call refused: WRONGTYPE in more calls than a round repairs (%d): the rest in the next rounds",
			 nwrong);
		return -1;
	}
	return 0;
}

static int pushes_by_rule(const void *a, const void *b)
{
	const struct xrl_fleet_push *x = a, *y = b;

	if (x->rule != y->rule)
		return x->rule < y->rule ? -1 : 1;
	/* on a cluster a call takes one shard's sources (its keys share a slot) */
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	/* within a rule those expected ahead first: gcra.lua takes them so */
	if (x->ahead != y->ahead)
		return x->ahead ? -1 : 1;
	return (x->used > y->used) - (x->used < y->used);
}

static void round_text(const struct xrl_fleet *f, __u64 since_ns, struct round_text *rt)
{
	rt->since_ns = since_ns;
	snprintf(rt->live_us, sizeof(rt->live_us), "%llu",
		 (unsigned long long)xrl_fleet_live_window_ns(f) / 1000);
	/* demand comes once a second at most: a host's counts while it reported within 3 */
	snprintf(rt->demand_us, sizeof(rt->demand_us), "%llu",
		 (unsigned long long)xrl_fleet_demand_window_ns(f) / 1000);
	snprintf(rt->ttl_ms, sizeof(rt->ttl_ms), "%d", 120000);
	snprintf(rt->life_us, sizeof(rt->life_us), "%llu", XRL_FLEET_TAT_LIFE_NS / 1000);
	snprintf(rt->since_us, sizeof(rt->since_us), "%llu", (unsigned long long)since_ns / 1000);
}

/*
 * Report the pushes (XRL_FLEET_BATCH keys per call) and every global rule's
 * use to Redis, fill in each push's answer and write its floor. false when
 * Redis failed: the caller then writes every floor by the failure policy.
 * *floor_err: a floor could not be written.
 */
bool xrl_fleet_sync_redis(struct xrl_fleet *f, int np, __u64 t0, __u64 since_ns, int *floor_err)
{
	struct sending s = { 0 };
	struct round_text rt;
	char err[256];

	round_text(f, since_ns, &rt);
	for (int i = 0; i < np; i++) {
		f->pushes[i].shard = f->redis.url.cluster ?
			xrl_fleet_source_shard(&f->used_keys[f->pushes[i].used], XRL_CLUSTER_SHARDS) : 0;
		f->pushes[i].unanswered = false;
	}
	f->unanswered_calls = 0;
	qsort(f->pushes, np, sizeof(*f->pushes), pushes_by_rule);
	if (send_gcra(f, np, &rt, &s, err, sizeof(err)))
		goto failed;
	f->answering = true;   /* until a call is refused: floors from the answers */
	if (send_hosts(f, &rt, &s, err, sizeof(err)) ||
	    read_replies(f, s.nc, np, t0, floor_err, err, sizeof(err)))
		goto failed;
	xrl_redis_calls_free(f->calls, s.nc);
	f->answering = false;
	shard_holds(f, np, f->last_ok_ns, xrl_mono_ns());
	f->last_ok_ns = xrl_mono_ns();
	set_up(f, true, NULL, f->last_ok_ns);
	log_partial(f, np, f->last_ok_ns);
	xrl_fleet_check_evictions(f, f->last_ok_ns);
	return true;
failed:
	f->answering = false;
	xrl_redis_calls_free(f->calls, s.nc);
	xrl_redis_close(&f->redis);
	failed(f, err);
	return false;
}
