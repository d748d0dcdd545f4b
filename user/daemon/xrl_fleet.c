// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The fleet daemon's state, its rule set and one round (the jobs: xrl_fleet_int.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "xrl_fleet_int.h"
#include "xrl_rule.h"

/* 0, or -ENOMEM. */
static int alloc_scratch(struct xrl_fleet *f)
{
	size_t n = XRL_FLEET_SOURCES;

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
	f->argtext = calloc(n, sizeof(*f->argtext));
	f->argpool = calloc(XRL_FLEET_ARGV_SLOTS, sizeof(*f->argpool));
	f->sources = calloc(n, sizeof(*f->sources));
	f->call_sources = calloc(n + XRL_MAX_RULES, sizeof(*f->call_sources));
	f->rate_text = calloc(XRL_MAX_RULES, sizeof(*f->rate_text));
	f->fent = calloc(n, sizeof(*f->fent));
	f->pushes = calloc(n, sizeof(*f->pushes));
	if (!f->used_keys || !f->floor_keys || !f->put_keys || !f->del_keys || !f->used ||
	    !f->floors || !f->put || !f->calls || !f->call_entry || !f->keytext || !f->argtext ||
	    !f->argpool || !f->sources || !f->call_sources || !f->rate_text || !f->fent ||
	    !f->pushes)
		return -ENOMEM;
	return 0;
}

int xrl_fleet_init(struct xrl_fleet *f, const struct xrl_maps *m, const char *instance,
		   const char *host_id, __u64 interval_ns, enum xrl_fleet_policy policy)
{
	__u32 id;

	f->m = m;
	snprintf(f->instance, sizeof(f->instance), "%s", instance);
	snprintf(f->host_id, sizeof(f->host_id), "%s", host_id);
	f->interval_ns = interval_ns;
	f->policy = policy;
	f->backoff_ns = interval_ns / 4;
	f->last_ok_ns = xrl_mono_ns();   /* a daemon without Redis holds its predecessor's shares as long */
	f->fent_n = -1;
	f->evicted_seen = -1;
	pthread_mutex_init(&f->lock, NULL);
	if (alloc_scratch(f))
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
	free(f->argtext);
	free(f->argpool);
	free(f->sources);
	free(f->call_sources);
	free(f->rate_text);
	free(f->fent);
	free(f->pushes);
	f->fent = NULL;
	f->pushes = NULL;
	f->fent_n = -1;
}

/*
 * A global rule new or changed: its name and figures as Redis takes them.
 * The figures are the data path's (xrl_gcra_compile, as xrl_rule_compile
 * derives the rule's bucket), so every host and Redis decide on one rate.
 */
static void take_rule(struct xrl_fleet_rule_state *rs, const struct xrl_rule_def *d)
{
	/* a loaded rule compiled with the same figures: a failure is not reached */
	rs->global = !xrl_fleet_gcra_figures(d->rate, d->rate_period, d->burst, rs->interval_us,
					     rs->span_us, &rs->interval_ns, &rs->span_ns);
	rs->version = d->version;
	xrl_fleet_rule_name(d, rs->name);
	xrl_rule_format_match(d, rs->match, sizeof(rs->match));
	rs->per_len = d->per_len;
	rs->rate_ewma = 0;
	rs->algo = d->algo;   /* --algo */
	rs->win_ns = (__u64)d->rate_period * 1000000000ull;
	snprintf(rs->win_us, sizeof(rs->win_us), "%llu", (unsigned long long)rs->win_ns / 1000);
}

void xrl_fleet_set_rules(struct xrl_fleet *f, const struct xrl_rule_def *defs, const __u32 *ids,
			 int n)
{
	bool in_set[XRL_MAX_RULES] = { false };
	int i;

	pthread_mutex_lock(&f->lock);   /* the metrics thread reads names and shares */
	for (i = 0; i < n; i++) {
		const struct xrl_rule_def *d = &defs[i];
		struct xrl_fleet_rule_state *rs = &f->rules[ids[i]];

		in_set[ids[i]] = true;
		if (d->action != XRL_ACT_LIMIT || !(d->flags & XRL_F_GLOBAL))
			rs->global = false;
		else if (!rs->global || rs->version != d->version)
			take_rule(rs, d);
	}
	for (i = 0; i < XRL_MAX_RULES; i++)
		if (!in_set[i])
			f->rules[i].global = false;
	pthread_mutex_unlock(&f->lock);
}

/*
 * Read what the data path admitted, choose what to report, report it and
 * write the floors from Redis' answers or, without them, by the failure
 * policy; then drop the floors of sources gone and renew the rules' modes.
 */
int xrl_fleet_round(struct xrl_fleet *f)
{
	__u64 t0 = xrl_mono_ns(), elapsed, now;
	int nu, nf, np, tracked = 0, floor_err = 0, e;

	elapsed = f->last_round_ns ? t0 - f->last_round_ns : f->interval_ns;
	f->last_round_ns = t0;
	nu = xrl_map_read_all(f->m->fleet_used, f->used_keys, f->used, sizeof(*f->used_keys),
			      sizeof(*f->used), XRL_FLEET_SOURCES);
	if (nu < 0)
		return nu;
	nf = xrl_fleet_load_floors(f);
	if (nf < 0)
		return nf;
	np = xrl_fleet_choose(f, nu, t0, elapsed, &tracked);

	xrl_fleet_ensure_connected(f, t0);
	/* connected: every round while up, else a try when the backoff has passed */
	if (!f->redis.c || (!f->redis_up && t0 < f->next_connect_ns) ||
	    !xrl_fleet_sync_redis(f, np, t0, xrl_fleet_round_since(elapsed), &floor_err))
		floor_err = xrl_fleet_floors_without_redis(f, np, t0);
	now = xrl_mono_ns();
	if ((e = xrl_fleet_drop_floors(f, nf)))
		floor_err = e;
	if (floor_err) {
		f->fent_n = -1;
		return floor_err;
	}
	xrl_fleet_keep_floors(f, np, nf);
	xrl_fleet_write_modes(f, now);
	xrl_fleet_record_round(f, (xrl_mono_ns() - t0) / 1e9, f->redis_up ? np : 0, tracked);
	return 0;
}
