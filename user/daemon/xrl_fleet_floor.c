// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The floors under each source's TAT in the BPF maps, from Redis' answers
 * or by the failure policy, and the rules' fleet modes.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "xrl_fleet_int.h"
#include "xrl_log.h"

int xrl_fleet_key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct xrl_bucket_key));
}

/*
 * The floors: only this daemon writes them, so it keeps a copy and reads
 * the map only when it starts (a restart resumes from it) or after a write
 * failed. Every entry starts the round unseen.
 */
int xrl_fleet_load_floors(struct xrl_fleet *f)
{
	int nf, i;

	if (f->fent_n < 0) {
		nf = xrl_map_read_all(f->m->fleet_floor, f->floor_keys, f->floors,
				      sizeof(*f->floor_keys), sizeof(*f->floors), XRL_FLEET_SOURCES);
		if (nf < 0)
			return nf;
		for (i = 0; i < nf; i++) {
			f->fent[i].key = f->floor_keys[i];
			f->fent[i].v = f->floors[i];
		}
		qsort(f->fent, nf, sizeof(*f->fent), xrl_fleet_key_cmp);
		f->fent_n = nf;
	}
	for (i = 0; i < f->fent_n; i++)
		f->fent[i].seen = false;
	return f->fent_n;
}

/* Redis answering: the fleet's TAT, and this host's own at its share of the rate. */
static void floor_answered(const struct xrl_fleet_rule_state *rs, const struct xrl_fleet_push *p,
			   __u64 since, __u64 now, struct xrl_fleet_floor *out)
{
	__u64 old_share = p->old ? p->old->v.share_ns : 0;

	out->until_ns = !isnan(p->debt_us) && p->debt_us > 0 ? now + (__u64)(p->debt_us * 1e3) : 0;
	if (p->live > 1 && p->share * XRL_FLEET_SHARE_SLACK < 1) {
		out->share_ns = (old_share > since ? old_share : since) +
				(__u64)(p->delta * rs->interval_ns / (p->share * XRL_FLEET_SHARE_SLACK));
		if (out->share_ns > out->until_ns)
			out->until_ns = out->share_ns;
	}
}

/*
 * The floor after a round for one push: the fleet's TAT (Redis up) and this
 * host's own TAT at its share of the rate, so that the fleet's budget is
 * split by demand and a host flooded by 90 % of a source's packets gets
 * about 90 % of its budget rather than racing the others for it. With
 * Redis down, the failure policy.
 */
/*
 * A window rule's entry (--algo): the other hosts' counts of Redis' window,
 * the fleet's count less this host's own reports into it (kept here, by
 * window). Live for three rounds: a dead daemon leaves local windows. Redis
 * not answering: the last counts until they expire.
 */
static void window_floor(const struct xrl_fleet *f, const struct xrl_fleet_push *p, __u64 now,
			 struct xrl_fleet_floor *out)
{
	const struct xrl_fleet_floor *o = p->old && p->old->v.born_ns == f->used[p->used].born_ns ?
					  &p->old->v : NULL;
	__u64 idx, own = p->delta, own_prev = 0, cur, prev;

	out->share_ns = 0;
	if (!f->answering || isnan(p->win_cur)) {
		if (o) {
			out->until_ns = o->until_ns;
			out->win_idx = o->win_idx;
			out->win_others = o->win_others;
			out->win_others_prev = o->win_others_prev;
			out->win_own = o->win_own;
			out->win_own_prev = o->win_own_prev;
		}
		return;
	}
	idx = (__u64)p->win_idx;
	if (o && o->win_idx == idx) {
		own = o->win_own + p->delta;
		own_prev = o->win_own_prev;
	} else if (o && o->win_idx + 1 == idx) {
		own_prev = o->win_own;
	}
	cur = (__u64)p->win_cur;
	prev = (__u64)p->win_prev;
	out->until_ns = now + 3 * f->interval_ns;
	out->win_idx = idx;
	out->win_own = own;
	out->win_own_prev = own_prev;
	out->win_others = cur > own ? (cur - own > 0xffffffffull ? 0xffffffffu : (__u32)(cur - own)) : 0;
	out->win_others_prev = prev > own_prev ?
			       (prev - own_prev > 0xffffffffull ? 0xffffffffu : (__u32)(prev - own_prev)) : 0;
}

/*
 * A global sliding log's entry (--algo sliding-log): the other hosts'
 * admissions still in the window as Redis' log of round reports said, and
 * from when the oldest of them has left it, the rest (this host's own are
 * in its data path's ring, exact). Live for three rounds, as a window's;
 * Redis not answering: the last counts until they expire.
 */
static void log_floor(const struct xrl_fleet *f, const struct xrl_fleet_push *p, __u64 now,
		      struct xrl_fleet_floor *out)
{
	const struct xrl_fleet_floor *o = p->old && p->old->v.born_ns == f->used[p->used].born_ns ?
					  &p->old->v : NULL;

	if (!f->answering || isnan(p->log_after)) {
		if (o) {
			out->until_ns = o->until_ns;
			out->win_idx = o->win_idx;
			out->log_others = o->log_others;
			out->log_after = o->log_after;
			out->log_leave_ns = o->log_leave_ns;
		}
		return;
	}
	out->until_ns = now + 3 * f->interval_ns;
	out->win_idx = (__u64)p->win_idx;
	out->log_others = p->log_others > 0xffffffffu ? 0xffffffffu : (__u32)p->log_others;
	out->log_after = p->log_after > 0xffffffffu ? 0xffffffffu :
			 p->log_after > 0 ? (__u32)p->log_after : 0;
	/* now is after Redis' TIME of the answer: the count drops no earlier than it should */
	out->log_leave_ns = p->log_leave_us > 0 ? now + (__u64)(p->log_leave_us * 1e3) : 0;
}

static void new_floor(const struct xrl_fleet *f, const struct xrl_fleet_push *p, __u64 t0,
		      __u64 now, struct xrl_fleet_floor *out)
{
	const struct xrl_fleet_rule_state *rs = &f->rules[p->rule];
	__u64 old = p->old ? p->old->v.until_ns : 0;
	__u64 since = t0 - p->since_ns;
	double share;

	if (rs->algo == XRL_ALGO_SLIDING_LOG) {
		memset(out, 0, sizeof(*out));
		log_floor(f, p, now, out);
		return;
	}
	if (rs->algo != XRL_ALGO_TOKEN_BUCKET) {
		memset(out, 0, sizeof(*out));
		window_floor(f, p, now, out);
		return;
	}

	out->share_ns = 0;
	out->share_ppm = (__u32)(p->share * 1e6);
	out->live = p->live;
	if (f->answering && !p->unanswered) {
		floor_answered(rs, p, since, now, out);
		return;
	}
	if ((f->answering && f->policy == XRL_POLICY_CLOSED) ||
	    xrl_fleet_shard_lost(f, p->shard, now)) {
		/*
		 * Its master lost while the others answer (a cluster), under
		 * closed or under local past the shard's hold: the rule's mode
		 * stays the fleet's, so this source alone is closed by a floor
		 * its burst and two intervals ahead (nothing left to admit until
		 * then), renewed each round it stays so.
		 */
		__u64 shut = now + (__u64)rs->span_ns + 2 * f->interval_ns;

		out->until_ns = old > shut ? old : shut;
		return;
	}
	if (f->policy != XRL_POLICY_LOCAL || f->share_lost) {
		out->until_ns = old;   /* the rule's mode decides (open, closed) */
		return;
	}
	/* the fleet's GCRA, run here at this host's last known share of the rate */
	share = p->live > 1 ? p->share : xrl_fleet_rule_share(rs);
	out->until_ns = (old > since ? old : since) + (__u64)(p->delta * rs->interval_ns / share);
}

/*
 * Compute and write the floors of pushes [from, to). Called as each chunk
 * of Redis' answers comes in, so the map writes overlap Redis' work on the
 * chunks after it; with Redis down, once for all pushes.
 */
int xrl_fleet_put_floors(struct xrl_fleet *f, int from, int to, __u64 t0, __u64 now)
{
	__u32 count;
	int i;

	for (i = from; i < to; i++) {
		const struct xrl_fleet_push *p = &f->pushes[i];
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

int xrl_fleet_floors_without_redis(struct xrl_fleet *f, int np, __u64 t0)
{
	__u64 now = xrl_mono_ns();

	if (f->policy == XRL_POLICY_LOCAL && !f->share_lost &&
	    now - f->last_ok_ns >= xrl_fleet_hold_ns(f)) {
		char where[300];

		f->share_lost = true;
		xrl_redis_url_name(&f->redis.url, where, sizeof(where));
		xrl_log(XRL_LOG_WARN, "redis %s unanswered for %.1f s: the other hosts no longer count this host's share, so it holds none; from now on global rules drop everything they match (--on-redis-failure local)",
			where, (now - f->last_ok_ns) / 1e9);
	}
	if (f->redis.url.cluster)
		for (int i = 0; i < np; i++)
			f->pushes[i].shard = xrl_fleet_source_shard(&f->used_keys[f->pushes[i].used],
								    XRL_CLUSTER_SHARDS);
	return xrl_fleet_put_floors(f, 0, np, t0, now);
}

/* Floors of sources gone from the used map, or whose rule is no longer global. */
int xrl_fleet_drop_floors(struct xrl_fleet *f, int nf)
{
	int i, ndel = 0, err = 0;
	__u32 count;

	for (i = 0; i < nf; i++)
		if (!f->fent[i].seen)
			f->del_keys[ndel++] = f->fent[i].key;
	if (!ndel)
		return 0;
	count = ndel;
	if (bpf_map_delete_batch(f->m->fleet_floor, f->del_keys, &count, NULL) && errno != ENOENT)
		for (i = 0; i < ndel; i++)
			if (bpf_map_delete_elem(f->m->fleet_floor, &f->del_keys[i]) && errno != ENOENT)
				err = -errno;
	return err;
}

/*
 * Bring the copy of the floor map up to what this round wrote: floors of
 * sources gone are dropped, pushed ones take their new values, new ones
 * are added and the copy sorted again (only in rounds with new sources).
 */
void xrl_fleet_keep_floors(struct xrl_fleet *f, int np, int nf)
{
	struct xrl_fleet_floor_entry *fent = f->fent;
	int i, n = 0, fresh = 0;

	for (i = 0; i < np; i++) {
		if (f->pushes[i].old)
			f->pushes[i].old->v = f->put[i];
		else
			fresh++;
	}
	for (i = 0; i < nf; i++)
		if (fent[i].seen)
			fent[n++] = fent[i];
	if (fresh) {
		for (i = 0; i < np; i++)
			if (!f->pushes[i].old) {
				fent[n].key = f->put_keys[i];
				fent[n].v = f->put[i];
				n++;
			}
		qsort(fent, n, sizeof(*fent), xrl_fleet_key_cmp);
	}
	f->fent_n = n;
}

void xrl_fleet_write_modes(struct xrl_fleet *f, __u64 now)
{
	__u32 id, mode;

	mode = xrl_fleet_holds_share(f) ? XRL_FLEET_FLOOR :
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
