// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <hiredis/hiredis.h>

#include "xrl_fleet.h"
#include "xrl_log.h"
#include "xrl_metrics.h"
#include "xrl_rule.h"

const char *const xrl_fleet_policy_name[3] = { "local", "open", "closed" };

const double xrl_fleet_hist_bounds[XRL_FLEET_HIST_BUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
};

/* A floor entry with its key, sortable, and whether this round still needs it. */
struct floor_entry {
	struct xrl_bucket_key key;
	struct xrl_fleet_floor v;
	bool seen;
};

/* What one used entry brings to this round. */
struct push {
	int used;                 /* index into used_keys/used */
	__u64 delta;              /* admissions since the last report */
	__u64 since_ns;           /* how far back they can go */
	__s64 demand;             /* packets seen since the demand was last reported; -1: not now */
	__u64 demand_ns;          /* over how long */
	const struct floor_entry *old;
	double debt_us;           /* Redis' answer (NAN: none) */
	double share;             /* this host's share of the source's demand */
	__u32 live;               /* hosts that reported demand for it lately */
};

/*
 * A host paces itself at its share of the rate times this: shares are
 * estimates that need not sum to 1 at any instant, and a host held back by
 * both its own pace and the fleet's TAT would leave tokens unused. The
 * fleet's TAT still caps the total; the split stays close to the demand.
 */
#define XRL_FLEET_SHARE_SLACK 1.25

/* Keys per script call: a round of 10,000 sources is ~160 calls. */
#define XRL_FLEET_BATCH 64
/*
 * Replies read at once: their floors are written while Redis works on the
 * calls after them. A NOSCRIPT (Redis restarted) costs one reload per chunk.
 */
#define XRL_FLEET_RECV_CHUNK 16
/* A host's demand for a source is reported at most this often (the shares are smoothed over ~1 s). */
#define XRL_FLEET_DEMAND_NS 1000000000ull
/*
 * How long Redis keeps a TAT past its time, and so how far back a report's
 * admissions may go. The same on every host (see the gcra script); whole ms.
 */
#define XRL_FLEET_TAT_LIFE_NS (3 * XRL_FLEET_DEMAND_NS)

static struct floor_entry *fent; /* the floor map as this daemon wrote it, sorted */
static int fent_n = -1;           /* -1: not read yet */
static struct push *pushes;
/* a push's numbers as the script takes them: [0] n or n@since, [1] demand, [2] its µs, [3] the call's nd */
static char (*argtext)[4][32];
static const char **argpool;     /* the calls' argument vectors */
static int *call_sources;        /* sources in each call */
static const struct xrl_bucket_key *sort_keys;

/* Pushes by rule, then in map order. */
static int push_rule_cmp(const void *a, const void *b)
{
	const struct push *x = a, *y = b;
	__u32 rx = sort_keys[x->used].rule_id, ry = sort_keys[y->used].rule_id;

	if (rx != ry)
		return rx < ry ? -1 : 1;
	return (x->used > y->used) - (x->used < y->used);
}

int xrl_fleet_init(struct xrl_fleet *f, const struct xrl_maps *m, const char *instance,
		   const char *host_id, __u64 interval_ns, enum xrl_fleet_policy policy)
{
	size_t n = XRL_FLEET_SOURCES;
	__u32 id;

	f->m = m;
	snprintf(f->instance, sizeof(f->instance), "%s", instance);
	snprintf(f->host_id, sizeof(f->host_id), "%s", host_id);
	f->interval_ns = interval_ns;
	f->policy = policy;
	f->backoff_ns = interval_ns / 4;
	f->last_ok_ns = xrl_mono_ns();   /* a daemon without Redis holds its predecessor's shares as long */
	pthread_mutex_init(&f->lock, NULL);
	f->used_keys = calloc(n, sizeof(*f->used_keys));
	f->floor_keys = calloc(n, sizeof(*f->floor_keys));
	f->put_keys = calloc(n, sizeof(*f->put_keys));
	f->del_keys = calloc(n, sizeof(*f->del_keys));
	f->used = calloc(n, sizeof(*f->used));
	f->floors = calloc(n, sizeof(*f->floors));
	f->put = calloc(n, sizeof(*f->put));
	f->calls = calloc(n + XRL_MAX_RULES, sizeof(*f->calls));
	f->call_entry = calloc(n + XRL_MAX_RULES, sizeof(*f->call_entry));
	f->keytext = calloc(2 * n + XRL_MAX_RULES, sizeof(*f->keytext));
	fent = calloc(n, sizeof(*fent));
	pushes = calloc(n, sizeof(*pushes));
	if (!f->used_keys || !f->floor_keys || !f->put_keys || !f->del_keys || !f->used ||
	    !f->floors || !f->put || !f->calls || !f->call_entry || !f->keytext || !fent || !pushes)
		return -ENOMEM;
	/* a restarted daemon starts from the shares its predecessor last learnt */
	for (id = 0; id < XRL_MAX_RULES; id++) {
		struct xrl_fleet_rule fr;

		if (bpf_map_lookup_elem(m->fleet_rules, &id, &fr) == 0 && fr.hosts) {
			f->rules[id].hosts = fr.hosts;
			f->rules[id].share = fr.share_ppm / 1e6;
		}
	}
	return 0;
}

void xrl_fleet_free(struct xrl_fleet *f)
{
	xrl_redis_close(&f->redis);
	free(f->used_keys);
	free(f->floor_keys);
	free(f->put_keys);
	free(f->del_keys);
	free(f->used);
	free(f->floors);
	free(f->put);
	free(f->calls);
	free(f->call_entry);
	free(f->keytext);
	free(fent);
	free(pushes);
	free(argtext);
	free(argpool);
	free(call_sources);
	call_sources = NULL;
	fent_n = -1;
	fent = NULL;
	pushes = NULL;
	argtext = NULL;
	argpool = NULL;
}

/* FNV-1a of the rule as written: hosts running the same rule share its budget. */
void xrl_fleet_rule_name(const struct xrl_rule_def *d, char name[17])
{
	char text[512];
	__u64 h = 0xcbf29ce484222325ull;
	const char *p;

	xrl_rule_format(d, text, sizeof(text));
	for (p = text; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 0x100000001b3ull;
	}
	snprintf(name, 17, "%016llx", (unsigned long long)h);
}

/* xrl:{RULE:SOURCE}: the braces are a Redis Cluster hash tag, one per (rule, source). */
void xrl_fleet_source_key(const char *rule_name, const struct xrl_bucket_key *k, __u8 per_len,
			  char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];
	int full = k->family == 4 ? 32 : 128;

	inet_ntop(k->family == 4 ? AF_INET : AF_INET6, k->addr, addr, sizeof(addr));
	if (per_len < full)
		snprintf(buf, len, "xrl:{%s:%s/%u}", rule_name, addr, per_len);
	else
		snprintf(buf, len, "xrl:{%s:%s}", rule_name, addr);
}

void xrl_fleet_set_rules(struct xrl_fleet *f, const struct xrl_rule_def *defs, const __u32 *ids,
			 int n)
{
	static bool in_set[XRL_MAX_RULES];
	int i;

	memset(in_set, 0, sizeof(in_set));
	pthread_mutex_lock(&f->lock);   /* the metrics thread reads names and shares */
	for (i = 0; i < n; i++) {
		const struct xrl_rule_def *d = &defs[i];
		struct xrl_fleet_rule_state *rs = &f->rules[ids[i]];
		bool global = d->action == XRL_ACT_LIMIT && (d->flags & XRL_F_GLOBAL);

		in_set[ids[i]] = true;
		if (!global) {
			rs->global = false;
			continue;
		}
		if (rs->global && rs->version == d->version)
			continue;
		rs->global = true;
		rs->version = d->version;
		xrl_fleet_rule_name(d, rs->name);
		xrl_rule_format_match(d, rs->match, sizeof(rs->match));
		rs->interval_ns = (double)d->rate_period * 1e9 / (double)d->rate;
		rs->span_ns = rs->interval_ns * d->burst;
		snprintf(rs->interval_us, sizeof(rs->interval_us), "%.6f", rs->interval_ns / 1e3);
		snprintf(rs->span_us, sizeof(rs->span_us), "%.6f", rs->span_ns / 1e3);
		rs->per_len = d->per_len;
		rs->rate_ewma = 0;
	}
	for (i = 0; i < XRL_MAX_RULES; i++)
		if (!in_set[i])
			f->rules[i].global = false;
	pthread_mutex_unlock(&f->lock);
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct xrl_bucket_key));
}

/* A rule's last known share: as Redis said, else 1 / hosts, else all of it. */
static double rule_share(const struct xrl_fleet_rule_state *rs)
{
	return rs->share > 0 ? rs->share : rs->hosts ? 1.0 / rs->hosts : 1.0;
}

/* The metrics thread reads the count. */
static void count_error(struct xrl_fleet *f)
{
	pthread_mutex_lock(&f->lock);
	f->redis_errors++;
	pthread_mutex_unlock(&f->lock);
}

static void set_up(struct xrl_fleet *f, bool up, const char *why, __u64 now)
{
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
		static const char *const what[] = {
			"each host keeps its last known share of every global budget",
			"global rules limit at their local rate only",
			"global rules drop everything they match",
		};

		xrl_log(XRL_LOG_WARN, "redis %s %s: %s; --on-redis-failure %s: %s until it answers",
			where, f->ever_up ? "failed" : "unavailable", why,
			xrl_fleet_policy_name[f->policy], what[f->policy]);
		f->down_since_ns = now;
	}
	if (!up)
		snprintf(f->last_error, sizeof(f->last_error), "%s", why);
	f->redis_up = up;
}

/* A failed connection or round: logged once per change; the next try after the backoff. */
static void failed(struct xrl_fleet *f, const char *why)
{
	f->failed_connects++;
	count_error(f);
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
static void ensure_connected(struct xrl_fleet *f, __u64 now)
{
	char err[256];

	if (f->redis.c || now < f->next_connect_ns)
		return;
	if (xrl_redis_connect(&f->redis, err, sizeof(err)))
		failed(f, err);
}

/* Hosts are live while they reported within 5 rounds (at least half a second). */
static __u64 live_window_ns(const struct xrl_fleet *f)
{
	return f->interval_ns * 5 > 500000000ull ? f->interval_ns * 5 : 500000000ull;
}

/* A host's demand counts while it reported within 5 rounds, at least 3 s (it reports once a second). */
static __u64 demand_window_ns(const struct xrl_fleet *f)
{
	return live_window_ns(f) > 3 * XRL_FLEET_DEMAND_NS ? live_window_ns(f) :
							     3 * XRL_FLEET_DEMAND_NS;
}

__u64 xrl_fleet_hold_ns(const struct xrl_fleet *f)
{
	return demand_window_ns(f);
}

/* Whether this host still holds a share of the budgets (Redis up, or the local policy's hold). */
static bool holds_share(const struct xrl_fleet *f)
{
	return f->redis_up || (f->policy == XRL_POLICY_LOCAL && !f->share_lost);
}


/*
 * The floor after a round for one push: the fleet's TAT (Redis up) and this
 * host's own TAT at its share of the rate, so that the fleet's budget is
 * split by demand and a host flooded by 90 % of a source's packets gets
 * about 90 % of its budget rather than racing the others for it. With
 * Redis down, the failure policy.
 */
static void new_floor(const struct xrl_fleet *f, const struct push *p, __u64 t0, __u64 now,
		      struct xrl_fleet_floor *out)
{
	const struct xrl_fleet_rule_state *rs = &f->rules[f->used_keys[p->used].rule_id];
	__u64 old = p->old ? p->old->v.until_ns : 0;
	__u64 old_share = p->old ? p->old->v.share_ns : 0;
	__u64 since = t0 - p->since_ns;
	double share;

	out->share_ns = 0;
	out->share_ppm = (__u32)(p->share * 1e6);
	out->live = p->live;
	if (f->answering) {
		out->until_ns = !isnan(p->debt_us) && p->debt_us > 0 ?
				now + (__u64)(p->debt_us * 1e3) : 0;
		if (p->live > 1 && p->share * XRL_FLEET_SHARE_SLACK < 1) {
			out->share_ns = (old_share > since ? old_share : since) +
					(__u64)(p->delta * rs->interval_ns /
						(p->share * XRL_FLEET_SHARE_SLACK));
			if (out->share_ns > out->until_ns)
				out->until_ns = out->share_ns;
		}
		return;
	}
	if (f->policy != XRL_POLICY_LOCAL || f->share_lost) {
		out->until_ns = old;   /* the rule's mode decides (open, closed) */
		return;
	}
	/* the fleet's GCRA, run here at this host's last known share of the rate */
	share = p->live > 1 ? p->share :
		rule_share(rs);
	out->until_ns = (old > since ? old : since) + (__u64)(p->delta * rs->interval_ns / share);
}

/*
 * Compute and write the floors of pushes [from, to). Called as each chunk
 * of Redis' answers comes in, so the map writes overlap Redis' work on the
 * chunks after it; with Redis down, once for all pushes.
 */
static int put_floors(struct xrl_fleet *f, int from, int to, __u64 t0, __u64 now)
{
	__u32 count;
	int i;

	for (i = from; i < to; i++) {
		const struct push *p = &pushes[i];
		const struct xrl_fleet_used *u = &f->used[p->used];
		struct xrl_fleet_floor *out = &f->put[i];

		f->put_keys[i] = f->used_keys[p->used];
		new_floor(f, p, t0, now, out);
		out->pushed = u->passed;
		out->born_ns = u->born_ns;
		if (p->demand >= 0 || !p->old || p->old->v.born_ns != u->born_ns) {
			out->seen = u->passed + u->dropped;
			out->demand_ns = t0;
		} else {
			out->seen = p->old->v.seen;
			out->demand_ns = p->old->v.demand_ns;
		}
	}
	count = to - from;
	if (count && bpf_map_update_batch(f->m->fleet_floor, &f->put_keys[from], &f->put[from],
					  &count, NULL)) {
		int err = -errno;

		xrl_log(XRL_LOG_ERR, "cannot write %d fleet floors: %s", to - from, strerror(-err));
		return err;
	}
	return 0;
}

/*
 * Report the pushes (XRL_FLEET_BATCH keys per call) and every global rule's
 * use to Redis, fill in each push's answer and write its floor. false when
 * Redis failed: the caller then writes every floor by the failure policy.
 * *floor_err: a floor could not be written.
 */
static bool sync_redis(struct xrl_fleet *f, int np, __u64 t0, __u64 since_ns, int *floor_err)
{
	static char rate[XRL_MAX_RULES][24];
	char err[256], live_us[32], demand_us[32], ttl_ms[32], life_us[32], since_us[32];
	size_t pool = 0;
	int nc = 0, floors_done = 0, i, j, n, id, e;

	if (!argtext)
		argtext = calloc(XRL_FLEET_SOURCES, sizeof(*argtext));
	if (!argpool)
		/* 5 per source at most, 8 per gcra call (one partial call per rule), 5 per hosts call */
		argpool = calloc((size_t)XRL_FLEET_SOURCES * 5 +
				 (XRL_FLEET_SOURCES / XRL_FLEET_BATCH + XRL_MAX_RULES) * 8 +
				 XRL_MAX_RULES * 5, sizeof(*argpool));
	if (!call_sources)
		call_sources = calloc(XRL_FLEET_SOURCES + XRL_MAX_RULES, sizeof(*call_sources));
	if (!argtext || !argpool || !call_sources)
		return false;
	snprintf(live_us, sizeof(live_us), "%llu", (unsigned long long)live_window_ns(f) / 1000);
	/* demand comes once a second at most: a host's counts while it reported within 3 */
	snprintf(demand_us, sizeof(demand_us), "%llu", (unsigned long long)demand_window_ns(f) / 1000);
	snprintf(ttl_ms, sizeof(ttl_ms), "%d", 120000);
	snprintf(life_us, sizeof(life_us), "%llu", XRL_FLEET_TAT_LIFE_NS / 1000);
	snprintf(since_us, sizeof(since_us), "%llu", (unsigned long long)since_ns / 1000);
	/* one rule per call, so that its figures go once per call and not per source */
	sort_keys = f->used_keys;
	qsort(pushes, np, sizeof(*pushes), push_rule_cmp);
	for (i = 0; i < np; i += n) {
		__u32 rule = f->used_keys[pushes[i].used].rule_id;
		const struct xrl_fleet_rule_state *rs = &f->rules[rule];
		struct xrl_redis_call *c = &f->calls[nc];
		const char **argv = &argpool[pool];
		int nd = 0, d = 0, head, src, dem;

		for (n = 0; n < XRL_FLEET_BATCH && i + n < np &&
			    f->used_keys[pushes[i + n].used].rule_id == rule; n++)
			nd += pushes[i + n].demand >= 0;
		/* argv: n TAT keys, nd demand keys, 8 figures, 1 per source, 2 per demand key */
		head = n + nd;
		src = head + 8;
		dem = src + n;
		for (j = 0; j < n; j++) {
			const struct push *p = &pushes[i + j];
			char (*a)[32] = argtext[i + j], *key = f->keytext[2 * (i + j)];

			xrl_fleet_source_key(rs->name, &f->used_keys[p->used], rs->per_len, key,
					     sizeof(f->keytext[0]) - 2);
			argv[j] = key;
			/* "n", or "n@since" for a source younger than the round */
			if (p->since_ns == since_ns)
				snprintf(a[0], 32, "%llu", (unsigned long long)p->delta);
			else
				snprintf(a[0], 32, "%llu@%llu", (unsigned long long)p->delta,
					 (unsigned long long)p->since_ns / 1000);
			argv[src + j] = a[0];
			if (p->demand < 0)
				continue;
			snprintf(f->keytext[2 * (i + j) + 1], sizeof(f->keytext[0]), "%s:d", key);
			snprintf(a[1], 32, "%lld", (long long)p->demand);
			snprintf(a[2], 32, "%llu", (unsigned long long)p->demand_ns / 1000);
			argv[n + d] = f->keytext[2 * (i + j) + 1];
			argv[dem + 2 * d] = a[1];
			argv[dem + 2 * d + 1] = a[2];
			d++;
		}
		snprintf(argtext[i][3], 32, "%d", nd);
		argv[head] = "0";
		argv[head + 1] = f->host_id;
		argv[head + 2] = demand_us;
		argv[head + 3] = life_us;
		argv[head + 4] = rs->interval_us;
		argv[head + 5] = rs->span_us;
		argv[head + 6] = argtext[i][3];
		argv[head + 7] = since_us;
		c->script = XRL_SCRIPT_GCRA;
		c->nkeys = head;
		c->argc = dem + 2 * nd;
		c->argv = argv;
		pool += c->argc;
		call_sources[nc] = n;
		f->call_entry[nc++] = i;
		if (xrl_redis_send(&f->redis, c, err, sizeof(err)))
			goto failed;
	}
	f->answering = true;   /* until a call is refused: floors from the answers */
	for (id = 0; id < XRL_MAX_RULES; id++) {
		const struct xrl_fleet_rule_state *rs = &f->rules[id];
		struct xrl_redis_call *c = &f->calls[nc];
		const char **argv = &argpool[pool];

		if (!rs->global)
			continue;
		snprintf(f->keytext[2 * XRL_FLEET_SOURCES + id], sizeof(f->keytext[0]),
			 "xrl:{%s}:hosts", rs->name);
		snprintf(rate[id], sizeof(rate[id]), "%.3f", rs->rate_ewma);
		argv[0] = f->keytext[2 * XRL_FLEET_SOURCES + id];
		argv[1] = f->host_id;
		argv[2] = rate[id];
		argv[3] = live_us;
		argv[4] = ttl_ms;
		c->script = XRL_SCRIPT_HOSTS;
		c->nkeys = 1;
		c->argc = 5;
		c->argv = argv;
		pool += 5;
		f->call_entry[nc++] = -1 - id;
		if (xrl_redis_send(&f->redis, c, err, sizeof(err)))
			goto failed;
	}
	for (i = 0; i < nc; i++) {
		const redisReply *rep;
		double a, b, share, live;

		if (i % XRL_FLEET_RECV_CHUNK == 0) {
			int k = nc - i < XRL_FLEET_RECV_CHUNK ? nc - i : XRL_FLEET_RECV_CHUNK;
			int upto = f->call_entry[i] >= 0 ? f->call_entry[i] : np;

			/* the floors of the chunks before go to the map while Redis works on this one */
			if ((e = put_floors(f, floors_done, upto, t0, xrl_mono_ns())))
				*floor_err = e;
			floors_done = upto;
			if (xrl_redis_recv(&f->redis, &f->calls[i], k, err, sizeof(err)))
				goto failed;
		}
		rep = f->calls[i].reply;

		if (rep->type == REDIS_REPLY_ERROR) {
			/*
			 * Out of memory, a read-only replica, a foreign key type:
			 * Redis is failing, whatever the cause. The round fails
			 * (once-per-change logging, the failure policy, the metric);
			 * the connection goes, replies still in it with it.
			 */
			snprintf(err, sizeof(err), "script call refused: %s", rep->str);
			goto failed;
		}
		if (f->call_entry[i] >= 0) {
			/* debts per source, then share and live per demand key */
			size_t at = call_sources[i];

			for (j = 0; j < call_sources[i]; j++) {
				struct push *p = &pushes[f->call_entry[i] + j];

				if (xrl_redis_reply_num(rep, j, &b))
					break;
				p->debt_us = b;
				if (p->demand < 0)
					continue;
				if (xrl_redis_reply_num(rep, at++, &share) ||
				    xrl_redis_reply_num(rep, at++, &live))
					break;
				share /= 1e6;
				p->share = share > 0 && share <= 1 ? share : 1;
				p->live = live > 0 ? (__u32)live : 1;
			}
			continue;
		}
		if (xrl_redis_reply_num(rep, 0, &a) || xrl_redis_reply_num(rep, 1, &b))
			continue;
		{
			struct xrl_fleet_rule_state *rs = &f->rules[-1 - f->call_entry[i]];

			pthread_mutex_lock(&f->lock);
			rs->hosts = a > 0 ? (__u32)a : 1;
			rs->share = rs->rate_ewma > 0 && b > 0 ? rs->rate_ewma / b : 1.0 / rs->hosts;
			if (rs->share > 1)
				rs->share = 1;
			pthread_mutex_unlock(&f->lock);
		}
	}
	xrl_redis_calls_free(f->calls, nc);
	if ((e = put_floors(f, floors_done, np, t0, xrl_mono_ns())))
		*floor_err = e;
	f->answering = false;
	f->last_ok_ns = xrl_mono_ns();
	set_up(f, true, NULL, f->last_ok_ns);
	return true;
failed:
	f->answering = false;
	xrl_redis_calls_free(f->calls, nc);
	xrl_redis_close(&f->redis);
	failed(f, err);
	return false;
}

static void write_modes(struct xrl_fleet *f, __u64 now)
{
	__u32 id, mode;

	mode = f->redis_up || (f->policy == XRL_POLICY_LOCAL && !f->share_lost) ? XRL_FLEET_FLOOR :
	       f->policy == XRL_POLICY_OPEN ? XRL_FLEET_OPEN : XRL_FLEET_CLOSED;
	for (id = 0; id < XRL_MAX_RULES; id++) {
		const struct xrl_fleet_rule_state *rs = &f->rules[id];
		struct xrl_fleet_rule fr = {
			.mode = mode,
			.hosts = rs->hosts,
			/* expires unless renewed: a dead daemon leaves local limits behind */
			.until_ns = now + 3 * f->interval_ns,
			.share_ppm = (__u32)(rs->share * 1e6),
		};

		if (!rs->global) {
			if (f->mode_written[id]) {
				struct xrl_fleet_rule zero = { 0 };

				bpf_map_update_elem(f->m->fleet_rules, &id, &zero, BPF_ANY);
				f->mode_written[id] = 0;
			}
			continue;
		}
		bpf_map_update_elem(f->m->fleet_rules, &id, &fr, BPF_ANY);
		f->mode_written[id] = mode + 1;
	}
}

static void record_round(struct xrl_fleet *f, double secs, int sources, int tracked)
{
	int b;

	pthread_mutex_lock(&f->lock);
	f->rounds++;
	f->hist_sum += secs;
	for (b = 0; b < XRL_FLEET_HIST_BUCKETS && secs > xrl_fleet_hist_bounds[b]; b++)
		;
	f->hist[b]++;
	f->reported_total += sources;
	f->last_round_tracked = tracked;
	pthread_mutex_unlock(&f->lock);
}

/* How far back a round's admissions go: to the last round, within the TAT's life. */
static __u64 round_since(__u64 elapsed)
{
	return elapsed < XRL_FLEET_TAT_LIFE_NS ? elapsed : XRL_FLEET_TAT_LIFE_NS;
}

/*
 * Bring the copy of the floor map up to what this round wrote: floors of
 * sources gone are dropped, pushed ones take their new values, new ones
 * are added and the copy sorted again (only in rounds with new sources).
 */
static void keep_floors(struct xrl_fleet *f, int np, int nf)
{
	int i, n = 0, fresh = 0;

	for (i = 0; i < np; i++) {
		if (pushes[i].old)
			((struct floor_entry *)pushes[i].old)->v = f->put[i];
		else
			fresh++;
	}
	for (i = 0; i < nf; i++)
		if (fent[i].seen)
			fent[n++] = fent[i];
	if (!fresh) {
		fent_n = n;
		return;
	}
	for (i = 0; i < np; i++)
		if (!pushes[i].old) {
			fent[n].key = f->put_keys[i];
			fent[n].v = f->put[i];
			n++;
		}
	qsort(fent, n, sizeof(*fent), key_cmp);
	fent_n = n;
}

int xrl_fleet_round(struct xrl_fleet *f)
{
	const struct xrl_maps *m = f->m;
	__u64 t0 = xrl_mono_ns(), now, elapsed;
	int nu, nf, np = 0, ndel = 0, tracked = 0, due = 0, due_max, floor_err = 0, i;
	double elapsed_s, alpha;
	__u32 count;

	elapsed = f->last_round_ns ? t0 - f->last_round_ns : f->interval_ns;
	f->last_round_ns = t0;
	elapsed_s = elapsed / 1e9;

	nu = xrl_map_read_all(m->fleet_used, f->used_keys, f->used, sizeof(*f->used_keys), sizeof(*f->used),
		      XRL_FLEET_SOURCES);
	if (nu < 0)
		return nu;
	/*
	 * The floors: only this daemon writes them, so it keeps a copy and
	 * reads the map only when it starts (a restart resumes from it) or
	 * after a write failed.
	 */
	if (fent_n < 0) {
		nf = xrl_map_read_all(m->fleet_floor, f->floor_keys, f->floors,
				      sizeof(*f->floor_keys), sizeof(*f->floors), XRL_FLEET_SOURCES);
		if (nf < 0)
			return nf;
		for (i = 0; i < nf; i++) {
			fent[i].key = f->floor_keys[i];
			fent[i].v = f->floors[i];
		}
		qsort(fent, nf, sizeof(*fent), key_cmp);
		fent_n = nf;
	}
	nf = fent_n;
	for (i = 0; i < nf; i++)
		fent[i].seen = false;
	for (i = 0; i < XRL_MAX_RULES; i++)
		f->rules[i].round_admitted = 0;
	/*
	 * Demand reports that fall due in a round, at most 1.25 times this
	 * round's share of a second's: sources that came together would
	 * otherwise report together every second, and a demand costs Redis
	 * about as much as the rest of the source's round. Those held back
	 * report in a later round, over a longer span.
	 */
	due_max = (int)((__u64)nu * 5 / 4 * elapsed / XRL_FLEET_DEMAND_NS) + XRL_FLEET_BATCH;

	/* what each global (rule, source) admitted since it was last reported */
	for (i = 0; i < nu; i++) {
		const struct xrl_bucket_key *k = &f->used_keys[i];
		struct xrl_fleet_rule_state *rs;
		const struct xrl_fleet_used *u = &f->used[i];
		struct floor_entry *fe;
		__u64 pushed, seen, total, unblock;
		bool same, refresh, demand;

		if (k->rule_id >= XRL_MAX_RULES || !(rs = &f->rules[k->rule_id])->global)
			continue;
		tracked++;
		fe = bsearch(k, fent, nf, sizeof(*fent), key_cmp);
		if (fe)
			fe->seen = true;
		same = fe && fe->v.born_ns == u->born_ns;
		pushed = same ? fe->v.pushed : 0;
		seen = same ? fe->v.seen : 0;
		total = u->passed + u->dropped;
		/*
		 * Report new admissions. While the floor holds this host back
		 * and is about to let it go (within two rounds), refresh it even
		 * without any, or other hosts' admissions meanwhile would be
		 * missed here until this host admitted again; a floor further
		 * ahead needs no refresh yet. Demand goes along at most once a
		 * second: it only sets shares, smoothed over a second anyway.
		 */
		unblock = fe && fe->v.until_ns > t0 ? fe->v.until_ns - (__u64)rs->span_ns : 0;
		refresh = fe && fe->v.until_ns > t0 && unblock < t0 + 2 * f->interval_ns;
		demand = total > seen && (!same || (t0 - fe->v.demand_ns >= XRL_FLEET_DEMAND_NS &&
						     due++ < due_max));
		if (u->passed <= pushed && !refresh && !demand)
			continue;
		pushes[np].used = i;
		pushes[np].delta = u->passed > pushed ? u->passed - pushed : 0;
		pushes[np].demand = demand ? (__s64)(total - seen) : -1;
		pushes[np].demand_ns = !same ? t0 - u->born_ns : t0 - fe->v.demand_ns;
		pushes[np].share = same && fe->v.share_ppm ? fe->v.share_ppm / 1e6 : 1;
		pushes[np].live = same && fe->v.live ? fe->v.live : 1;
		pushes[np].since_ns = t0 - u->born_ns < round_since(elapsed) ?
				      t0 - u->born_ns : round_since(elapsed);
		pushes[np].old = fe;
		pushes[np].debt_us = NAN;
		rs->round_admitted += pushes[np].delta;
		np++;
	}
	alpha = 1 - exp(-elapsed_s);   /* EWMA with a time constant of 1 s */
	for (i = 0; i < XRL_MAX_RULES; i++) {
		struct xrl_fleet_rule_state *rs = &f->rules[i];

		if (rs->global)
			rs->rate_ewma += alpha * (rs->round_admitted / elapsed_s - rs->rate_ewma);
	}

	ensure_connected(f, t0);
	/* connected: every round while up, else a try when the backoff has passed */
	if (!f->redis.c || (!f->redis_up && t0 < f->next_connect_ns) ||
	    !sync_redis(f, np, t0, round_since(elapsed), &floor_err)) {
		now = xrl_mono_ns();
		if (f->policy == XRL_POLICY_LOCAL && !f->share_lost &&
		    now - f->last_ok_ns >= xrl_fleet_hold_ns(f)) {
			char where[300];

			f->share_lost = true;
			xrl_redis_url_name(&f->redis.url, where, sizeof(where));
			xrl_log(XRL_LOG_WARN, "redis %s unanswered for %.1f s: the other hosts no longer count this host's share, so it holds none; from now on global rules drop everything they match (--on-redis-failure local)",
				where, (now - f->last_ok_ns) / 1e9);
		}
		floor_err = put_floors(f, 0, np, t0, now);
	}
	now = xrl_mono_ns();

	/* floors of sources gone from the used map, or whose rule is no longer global */
	for (i = 0; i < nf; i++)
		if (!fent[i].seen)
			f->del_keys[ndel++] = fent[i].key;
	if (ndel) {
		count = ndel;
		if (bpf_map_delete_batch(m->fleet_floor, f->del_keys, &count, NULL) && errno != ENOENT)
			for (i = 0; i < ndel; i++)
				if (bpf_map_delete_elem(m->fleet_floor, &f->del_keys[i]) &&
				    errno != ENOENT)
					floor_err = -errno;
	}
	if (floor_err) {
		fent_n = -1;
		return floor_err;
	}
	keep_floors(f, np, nf);
	write_modes(f, now);
	record_round(f, (xrl_mono_ns() - t0) / 1e9, f->redis_up ? np : 0, tracked);
	return 0;
}

void xrl_fleet_release(struct xrl_fleet *f)
{
	__u32 id;

	for (id = 0; id < XRL_MAX_RULES; id++) {
		struct xrl_fleet_rule fr = {
			.hosts = f->rules[id].hosts,
			.share_ppm = (__u32)(f->rules[id].share * 1e6),
		};

		if (f->mode_written[id])
			bpf_map_update_elem(f->m->fleet_rules, &id, &fr, BPF_ANY);
	}
}

/* name{instance="...",LABEL="value"} v, escaped as the exposition format wants (label NULL: none). */
static void sample(FILE *out, const char *name, const char *inst, const char *label,
		   const char *value, const char *v)
{
	fputs(name, out);
	xrl_metrics_label(out, "{", "instance", inst);
	if (label)
		xrl_metrics_label(out, ",", label, value);
	fprintf(out, "} %s\n", v);
}

void xrl_fleet_metrics(FILE *out, void *arg)
{
	struct xrl_fleet *f = arg;
	const char *inst = f->instance;
	unsigned long cum = 0;
	char v[64], le[32];
	int b, id;

	pthread_mutex_lock(&f->lock);
	xrl_metrics_instance_family(out, "xrl_redis_up", "gauge",
				    "Whether the last exchange with Redis succeeded (1) or not (0).",
				    inst, f->redis_up);
	xrl_metrics_instance_family(out, "xrl_redis_errors_total", "counter",
				    "Failed Redis connections, rounds and refused script calls.",
				    inst, f->redis_errors);
	xrl_metrics_family(out, "xrl_redis_sync_duration_seconds", "histogram",
			   "Duration of a fleet sync round (maps and Redis).");
	for (b = 0; b <= XRL_FLEET_HIST_BUCKETS; b++) {
		cum += f->hist[b];
		if (b < XRL_FLEET_HIST_BUCKETS)
			snprintf(le, sizeof(le), "%g", xrl_fleet_hist_bounds[b]);
		else
			snprintf(le, sizeof(le), "+Inf");
		snprintf(v, sizeof(v), "%lu", cum);
		sample(out, "xrl_redis_sync_duration_seconds_bucket", inst, "le", le, v);
	}
	snprintf(v, sizeof(v), "%.9f", f->hist_sum);
	sample(out, "xrl_redis_sync_duration_seconds_sum", inst, NULL, NULL, v);
	snprintf(v, sizeof(v), "%lu", f->rounds);
	sample(out, "xrl_redis_sync_duration_seconds_count", inst, NULL, NULL, v);
	xrl_metrics_instance_family(out, "xrl_redis_commands_total", "counter",
				    "Commands sent to Redis (EVALSHA, SCRIPT LOAD, AUTH, ...).",
				    inst, f->redis.commands);
	xrl_metrics_instance_family(out, "xrl_fleet_reports_total", "counter",
				    "(rule, source) pairs reported to Redis, over all rounds.",
				    inst, f->reported_total);
	xrl_metrics_family(out, "xrl_fleet_share", "gauge",
			   "This host's current share of each global rule's budget (0..1).");
	for (id = 0; id < XRL_MAX_RULES; id++)
		if (f->rules[id].global) {
			/* none while it holds none: Redis down under closed, or local past the hold */
			snprintf(v, sizeof(v), "%.6f", holds_share(f) || f->policy == XRL_POLICY_OPEN ?
				 rule_share(&f->rules[id]) : 0.0);
			sample(out, "xrl_fleet_share", inst, "rule", f->rules[id].match, v);
		}
	xrl_metrics_family(out, "xrl_fleet_hosts", "gauge",
			   "Hosts running each global rule, as Redis last reported.");
	for (id = 0; id < XRL_MAX_RULES; id++)
		if (f->rules[id].global) {
			snprintf(v, sizeof(v), "%u", f->rules[id].hosts);
			sample(out, "xrl_fleet_hosts", inst, "rule", f->rules[id].match, v);
		}
	xrl_metrics_instance_family(out, "xrl_fleet_sources", "gauge",
				    "Global (rule, source) pairs this host tracks.", inst,
				    (unsigned long long)f->last_round_tracked);
	pthread_mutex_unlock(&f->lock);
}
