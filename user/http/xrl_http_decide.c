// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The decision (xrl_http_decide.h). Each rule's keys live in a table of
 * sets of XRL_HTTP_WAYS entries: a key new to its set takes an empty entry
 * or the least recently seen one, so the table is bounded and a flood of
 * new keys evicts the idle ones first. One lock over a decision: it reads
 * every matching rule's word (peek), and only if all pass takes from each
 * (the data path's xrl_take, xrl_win_take, xrl_log_take), so a refusal by
 * one rule costs the others nothing and two requests never both take the
 * last token (the GET-then-SET race).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "xrl_http_decide.h"
#include "xrl_http_client.h"
#include "xrl_http_packet.h"
#include "xrl_bucket.h"
#include "xrl_take.h"
#include "xrl_algo.h"

#define NS 1000000000ull

static void table_put(struct xrl_http_table *t)
{
	if (t && __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(t->e);
		free(t->rings);
		free(t);
	}
}

static struct xrl_http_table *table_new(const struct xrl_http_rule *r, __u32 keys)
{
	struct xrl_http_table *t = calloc(1, sizeof(*t));
	__u32 want = keys ? keys : XRL_HTTP_KEYS_DEFAULT, sets = 1;

	if (!t)
		return NULL;
	t->refs = 1;
	if (r->algo == XRL_ALGO_SLIDING_LOG && want > XRL_HTTP_LOG_KEYS_DEFAULT)
		want = XRL_HTTP_LOG_KEYS_DEFAULT;
	while (sets * XRL_HTTP_WAYS < want)
		sets <<= 1;
	t->sets = sets;
	t->e = calloc((size_t)sets * XRL_HTTP_WAYS, sizeof(struct xrl_http_entry));
	if (r->algo == XRL_ALGO_SLIDING_LOG)
		t->rings = calloc((size_t)sets * XRL_HTTP_WAYS * XRL_LOG_MAX, 8);
	if (!t->e || (r->algo == XRL_ALGO_SLIDING_LOG && !t->rings)) {
		table_put(t);
		return NULL;
	}
	return t;
}

struct xrl_http_state *xrl_http_state_new(const struct xrl_http_rules *rules, __u32 keys,
					  const struct xrl_http_state *old)
{
	struct xrl_http_state *s = calloc(1, sizeof(*s));
	int i, j;

	if (!s)
		return NULL;
	s->rules = *rules;
	s->refs = 1;
	if (old) {
		s->lock = old->lock;
		__atomic_add_fetch(&s->lock->refs, 1, __ATOMIC_ACQ_REL);
		/* the shared keys' hashes are only valid under their seed */
		memcpy(s->seed, old->seed, sizeof(s->seed));
	} else {
		s->lock = calloc(1, sizeof(*s->lock));
		if (!s->lock) {
			free(s);
			return NULL;
		}
		s->lock->refs = 1;
		pthread_mutex_init(&s->lock->m, NULL);
		if (getrandom(s->seed, sizeof(s->seed), 0) != sizeof(s->seed)) {
			s->seed[0] = (__u64)(size_t)s ^ 0x9e3779b97f4a7c15ull;
			s->seed[1] = s->seed[0] * 0xff51afd7ed558ccdull;
		}
	}
	for (i = 0; i < rules->n; i++) {
		for (j = 0; old && j < old->rules.n; j++)
			if (!memcmp(&rules->rule[i], &old->rules.rule[j], sizeof(rules->rule[i]))) {
				s->tab[i] = old->tab[j];
				__atomic_add_fetch(&s->tab[i]->refs, 1, __ATOMIC_ACQ_REL);
				break;
			}
		if (!s->tab[i])
			s->tab[i] = table_new(&rules->rule[i], keys);
		if (!s->tab[i]) {
			xrl_http_state_free(s);
			return NULL;
		}
	}
	return s;
}

void xrl_http_state_free(struct xrl_http_state *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < XRL_HTTP_MAX_RULES; i++)
		table_put(s->tab[i]);
	if (__atomic_sub_fetch(&s->lock->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		pthread_mutex_destroy(&s->lock->m);
		free(s->lock);
	}
	free(s);
}

/* ------------------------------------------------------------------ keys */

struct hasher {
	__u64 h;
};

static void hash_bytes(struct hasher *x, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		x->h = (x->h ^ b[i]) * 0x100000001b3ull;
	x->h = (x->h ^ 0xff) * 0x100000001b3ull;   /* the end of a part: "a"+"bc" is not "ab"+"c" */
}

static __u64 hash_final(const struct xrl_http_state *s, __u64 h)
{
	h ^= s->seed[1];
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h | 1;   /* 0 is an empty entry */
}

/*
 * rule r's key of req as a keyed hash; 0 when a part is missing. gname (33
 * bytes, or NULL): the same key as two unkeyed 64-bit hashes in hex, the
 * name every service gives it in Redis.
 */
static __u64 rule_key(const struct xrl_http_state *s, const struct xrl_http_rule *r,
		      const struct xrl_http_request *req, char *gname)
{
	struct hasher x = { s->seed[0] }, y = { 0xcbf29ce484222325ull }, z = { 0x84222325cbf29ce4ull };
	char arg[1024];
	int i;

	for (i = 0; i < r->nkeys; i++) {
		const struct xrl_http_key *k = &r->keys[i];

		if (k->kind == XRL_HTTP_KEY_IP) {
			struct xrl_http_addr a = *(const struct xrl_http_addr *)req->client_addr;
			int plen = a.v4 ? 96 + k->plen4 : k->plen6, b;

			for (b = plen; b < 128; b++)
				a.a[b / 8] &= (__u8)~(0x80 >> (b % 8));
			hash_bytes(&x, a.a, 16);
			hash_bytes(&x, &plen, sizeof(plen));
			hash_bytes(&y, a.a, 16);
			hash_bytes(&y, &plen, sizeof(plen));
			hash_bytes(&z, a.a, 16);
			hash_bytes(&z, &plen, sizeof(plen));
		} else if (k->kind == XRL_HTTP_KEY_HEADER) {
			const char *v = req->header(req->header_arg, k->name);

			if (!v || !*v)
				return 0;
			hash_bytes(&x, v, strlen(v));
			hash_bytes(&y, v, strlen(v));
			hash_bytes(&z, v, strlen(v));
		} else {
			if (!xrl_http_query_arg(req->uri, k->name, arg, sizeof(arg)) || !arg[0])
				return 0;
			hash_bytes(&x, arg, strlen(arg));
			hash_bytes(&y, arg, strlen(arg));
			hash_bytes(&z, arg, strlen(arg));
		}
	}
	if (gname) {
		static const struct xrl_http_state fixed = { .seed = { 0, 0x5bd1e9955bd1e995ull } };

		snprintf(gname, 33, "%016llx%016llx", (unsigned long long)hash_final(&fixed, y.h),
			 (unsigned long long)hash_final(&fixed, z.h));
	}
	return hash_final(s, x.h);
}

static int rule_matches(const struct xrl_http_rule *r, const struct xrl_http_request *req)
{
	int i;

	if (r->path[0] && strncmp(req->uri, r->path, strlen(r->path)))
		return 0;
	if (!r->nmethods)
		return 1;
	for (i = 0; i < r->nmethods; i++)
		if (!strcmp(r->methods[i], req->method))
			return 1;
	return 0;
}

/* the entry of key in rule i's table: found, or a new one (empty or least recently seen) */
static struct xrl_http_entry *lookup(struct xrl_http_state *s, int i, __u64 key, __u64 now_ns,
				     __u64 **ring)
{
	struct xrl_http_table *t = s->tab[i];
	const struct xrl_http_rule *r = &s->rules.rule[i];
	__u32 set = (__u32)(key >> 32) & (t->sets - 1), w, victim = 0;
	struct xrl_http_entry *e = &t->e[(size_t)set * XRL_HTTP_WAYS];

	for (w = 0; w < XRL_HTTP_WAYS; w++)
		if (e[w].key == key)
			goto found;
	for (w = 0; w < XRL_HTTP_WAYS; w++) {
		if (!e[w].key) {
			victim = w;
			break;
		}
		if (e[w].seen_ns < e[victim].seen_ns)
			victim = w;
	}
	w = victim;
	if (e[w].key)
		s->evicted++;
	e[w].key = key;
	e[w].word = 0;
	e[w].last_ns = now_ns;
	if (r->algo == XRL_ALGO_TOKEN_BUCKET || r->algo == XRL_HTTP_ALGO_LEAKY)
		e[w].word = xrl_to_units(now_ns, r->g.shift);   /* a new bucket starts full */
	else if (r->algo == XRL_ALGO_SLIDING_LOG)
		e[w].word = xrl_log_word(1);
	if (t->rings)
		memset(&t->rings[((size_t)set * XRL_HTTP_WAYS + w) * XRL_LOG_MAX], 0,
		       XRL_LOG_MAX * 8);
found:
	e[w].seen_ns = now_ns;
	*ring = t->rings ? &t->rings[((size_t)set * XRL_HTTP_WAYS + w) * XRL_LOG_MAX] : NULL;
	return &e[w];
}

/* ------------------------------------------------------------------ per algorithm */

static __u64 units_ns(__u64 u, __s32 shift)
{
	return shift >= 0 ? u << shift : u >> -shift;
}

static __u64 ceil_s(__u64 ns)
{
	return (ns + NS - 1) / NS;
}

static __u64 log_age_u(__u64 slot, __u64 now_ns)
{
	__u64 now_u = (now_ns >> XRL_LOG_SHIFT) & ((1ull << XRL_LOG_TS_BITS) - 1);

	return (__u64)((__s64)((now_u - (slot >> 16)) << (64 - XRL_LOG_TS_BITS)) >>
		       (64 - XRL_LOG_TS_BITS));
}

/* Would one more request pass? Read-only; fills f (remaining as after taking it). */
static int peek(const struct xrl_http_rule *r, const struct xrl_http_entry *e, const __u64 *ring,
		__u64 now_ns, __u64 rt_off, struct xrl_http_figures *f)
{
	__u64 next;

	f->quota = r->count;
	f->window_s = r->period_s;
	if (r->algo == XRL_ALGO_TOKEN_BUCKET || r->algo == XRL_HTTP_ALGO_LEAKY) {
		const struct xrl_gcra *g = &r->g;
		__u64 now = xrl_gcra_clamp(now_ns, e->last_ns), now_u = xrl_to_units(now, g->shift);
		__u64 base = xrl_gcra_base(e->word, e->last_ns, now, now_u, g->full_ns);
		__u64 ahead = base - now_u;
		int pass = xrl_peek(e->word, g, e->last_ns, now, 1, 0, 0, &next);

		if (pass) {
			ahead = next - now_u;
			f->delay_ns = r->algo == XRL_HTTP_ALGO_LEAKY ? units_ns(base - now_u, g->shift) : 0;
		}
		f->remaining = ahead < g->span ? (g->span - ahead) / g->interval : 0;
		if (r->algo == XRL_HTTP_ALGO_LEAKY)
			f->quota = r->queue;
		f->reset_s = ceil_s(units_ns(ahead, g->shift));
		if (!pass) {
			/* the moment base + interval - span <= now: the first that passes */
			__u64 wait = base + g->interval - g->span - now_u;

			f->retry_s = ceil_s(units_ns(wait, g->shift));
			if (!f->retry_s)
				f->retry_s = 1;
		}
		return pass;
	}
	if (r->algo == XRL_ALGO_SLIDING_LOG) {
		__u64 h = e->word & XRL_LOG_H_MASK, nonce = e->word >> 56, oldest = 0, busy = 0;
		__u64 win_u = (r->win_ns + (1ull << XRL_LOG_SHIFT) - 1) >> XRL_LOG_SHIFT;
		__u32 k, idx = (__u32)(h % r->count);
		int pass = xrl_log_state(ring[idx], nonce, h, now_ns, r->win_ns) != XRL_LOG_BUSY;

		for (k = 0; k < r->count; k++)
			if (xrl_log_state(ring[k], nonce, h, now_ns, r->win_ns) == XRL_LOG_BUSY) {
				__u64 left = win_u - log_age_u(ring[k], now_ns);

				busy++;
				if (left > oldest)
					oldest = left;
			}
		f->remaining = r->count - busy - (pass ? 1 : 0);
		f->reset_s = ceil_s((pass ? win_u : oldest) << XRL_LOG_SHIFT);
		if (!pass) {
			f->retry_s = ceil_s((win_u - log_age_u(ring[idx], now_ns)) << XRL_LOG_SHIFT);
			if (!f->retry_s)
				f->retry_s = 1;
		}
		return pass;
	}
	{
		__u64 t = now_ns + rt_off, win = r->win_ns, idx = t / win, pos = t - idx * win;
		__u64 limit = r->count, prev = 0, cur = 0;
		int pass = xrl_win_peek((__u8)r->algo, e->word, 0, now_ns, rt_off, win,
					(__u32)limit, 0, &next);

		if (r->algo == XRL_ALGO_FIXED_WINDOW) {
			cur = (__u32)(e->word >> 32) == (__u32)idx ? (__u32)e->word : 0;
			cur += pass;
			f->remaining = limit > cur ? limit - cur : 0;
			f->reset_s = ceil_s(win - pos);
			if (!pass)
				f->retry_s = f->reset_s;
			return pass;
		}
		xrl_sw_counts(e->word, 0, idx, &prev, &cur);
		cur += pass;
		{
			__u64 used = prev * (win - pos), cap = limit * win;

			f->remaining = cap >= used + cur * win ? (cap - used - cur * win) / win : 0;
		}
		f->reset_s = ceil_s(win - pos);
		if (!pass) {
			__u64 wait;

			if (cur + 1 <= limit) {
				/* later in this window: prev x (win - p) <= (limit - cur - 1) x win */
				__u64 p = win - (limit - cur - 1) * win / prev;

				wait = p - pos;
			} else {
				/* the next window: cur x (win - p) <= (limit - 1) x win */
				__u64 p = cur ? win - (limit - 1) * win / cur : 0;

				wait = win - pos + p;
			}
			f->retry_s = ceil_s(wait);
			if (!f->retry_s)
				f->retry_s = 1;
		}
		return pass;
	}
}

/* Take one request (peek said it passes; the lock is held, so it still does). */
static int take(const struct xrl_http_rule *r, struct xrl_http_entry *e, __u64 *ring,
		__u64 now_ns, __u64 rt_off)
{
	int got;

	if (r->algo == XRL_ALGO_TOKEN_BUCKET || r->algo == XRL_HTTP_ALGO_LEAKY) {
		__u64 now = xrl_gcra_clamp(now_ns, e->last_ns);

		got = xrl_take(&e->word, &e->key, e->key, &r->g, e->last_ns, now, 1, 0, 0);
		if (got == 1)
			e->last_ns = now;
		return got;
	}
	if (r->algo == XRL_ALGO_SLIDING_LOG)
		return xrl_log_take(&e->word, ring, &e->key, e->key, (__u32)r->count, 0, now_ns,
				    r->win_ns);
	return xrl_win_take(&e->word, &e->key, e->key, (__u8)r->algo, 0, now_ns, rt_off, r->win_ns,
			    (__u32)r->count, 0);
}

/* Is a more restrictive than b for the answer? */
static int stricter(const struct xrl_http_figures *a, const struct xrl_http_figures *b)
{
	if (a->pass != b->pass)
		return !a->pass;
	if (!a->pass)
		return a->retry_s > b->retry_s;
	if (a->remaining != b->remaining)
		return a->remaining < b->remaining;
	return a->reset_s > b->reset_s;
}

/* the figures of a rule decided by the failure policy, open or closed */
static void policy_figures(const struct xrl_http_rule *r, int pass, struct xrl_http_figures *f)
{
	f->quota = r->count;
	f->window_s = r->period_s;
	f->remaining = pass ? r->count : 0;
	f->reset_s = pass ? 0 : 1;
	f->retry_s = pass ? 0 : 1;
}

void xrl_http_decide_start(struct xrl_http_state *s, const struct xrl_http_request *req,
			   __u64 now_ns, __u64 rt_off, int global, struct xrl_http_decision *d)
{
	struct xrl_http_entry *ent;
	__u64 *ring;
	int n = 0, i;

	d->now_ns = now_ns;
	d->rt_off = rt_off;
	d->pass = 1;
	d->nglobal = 0;
	d->next = 0;
	for (i = 0; i < s->rules.n; i++) {
		const struct xrl_http_rule *r = &s->rules.rule[i];
		struct xrl_http_figures *p = &d->per[n];

		if (!rule_matches(r, req))
			continue;
		/* a packet rule's budget: only its prefix's sources are under it */
		if (r->pkt.set && !xrl_http_packet_covers(&r->pkt, req->client_addr))
			continue;
		d->keys[n] = rule_key(s, r, req, r->global && global ? d->gname[n] : NULL);
		if (r->pkt.set && global)
			xrl_http_packet_key(&r->pkt, req->client_addr, d->gname[n], sizeof(d->gname[n]));
		memset(p, 0, sizeof(*p));
		p->rule = i;
		p->pass = 1;
		p->key = d->keys[n];
		d->local[n] = !(r->global && global);
		d->nglobal += !d->local[n];
		if (!d->keys[n]) {
			if (!r->missing_refuse)
				continue;   /* --missing pass: the rule does not apply */
			p->pass = 0;
			p->missing = 1;
			p->quota = r->count;
			p->window_s = r->period_s;
			p->retry_s = r->period_s;
			d->pass = 0;
		}
		d->idx[n++] = i;
	}
	d->n = n;
	/*
	 * 1. The local rules, read only: a request they refuse costs Redis nothing.
	 * 2. The global rules, one Redis call each, in order (each takes from the
	 *    fleet's budget when it passes: a later global rule refusing cannot
	 *    give it back; put the global rule a request is likeliest to fail first).
	 * 3. The local rules again under the lock, and only if all pass, the take
	 *    (xrl_http_decide_finish).
	 */
	if (!d->pass || !d->nglobal)
		return;
	pthread_mutex_lock(&s->lock->m);
	for (i = 0; i < n && d->pass; i++)
		if (d->local[i] && !d->per[i].missing) {
			ent = lookup(s, d->idx[i], d->keys[i], now_ns, &ring);
			d->per[i].pass = peek(&s->rules.rule[d->idx[i]], ent, ring, now_ns, rt_off,
					      &d->per[i]);
			d->pass &= d->per[i].pass;
		}
	pthread_mutex_unlock(&s->lock->m);
}

int xrl_http_decide_next(struct xrl_http_decision *d)
{
	for (; d->next < d->n && d->pass; d->next++)
		if (!d->local[d->next] && !d->per[d->next].missing)
			return d->next++;
	return -1;
}

void xrl_http_decide_answer(const struct xrl_http_state *s, struct xrl_http_decision *d, int i,
			    int got, struct xrl_http_global *g)
{
	if (got < 0) {
		__atomic_fetch_add(&g->failed, 1, __ATOMIC_RELAXED);
		if (g->policy == XRL_HTTP_FAIL_LOCAL) {
			d->local[i] = 1;
			return;
		}
		got = g->policy == XRL_HTTP_FAIL_OPEN;
		policy_figures(&s->rules.rule[d->idx[i]], got, &d->per[i]);
		d->per[i].key = d->keys[i];
	}
	d->per[i].pass = got;
	d->pass &= got;
}

int xrl_http_decide_finish(struct xrl_http_state *s, struct xrl_http_decision *d,
			   struct xrl_http_figures *f)
{
	struct xrl_http_entry *ent[XRL_HTTP_MAX_RULES];
	__u64 *ring[XRL_HTTP_MAX_RULES];
	struct xrl_http_figures *per = d->per;
	int n = d->n, i, pass = d->pass;

	memset(f, 0, sizeof(*f));
	f->rule = -1;
	f->pass = 1;
	if (!n)
		return 1;
	if (pass) {
		pthread_mutex_lock(&s->lock->m);
		for (i = 0; i < n; i++) {
			if (!d->local[i] || per[i].missing)
				continue;
			ent[i] = lookup(s, d->idx[i], d->keys[i], d->now_ns, &ring[i]);
			per[i].pass = peek(&s->rules.rule[d->idx[i]], ent[i], ring[i], d->now_ns,
					   d->rt_off, &per[i]);
			pass &= per[i].pass;
		}
		if (pass)
			for (i = 0; i < n; i++)
				if (d->local[i] && take(&s->rules.rule[d->idx[i]], ent[i], ring[i],
							d->now_ns, d->rt_off) != 1)
					pass = 0;   /* cannot happen under the lock; refuse rather than overrun */
		pthread_mutex_unlock(&s->lock->m);
	}
	*f = per[0];
	{
		__u64 delay = 0;

		for (i = 0; i < n; i++)
			if (per[i].delay_ns > delay)
				delay = per[i].delay_ns;
		f->delay_ns = delay;
	}
	for (i = 0; i < n; i++) {
		if (!pass && per[i].pass && d->local[i]) {
			/* passed by this rule, refused by another: nothing was taken from it */
			per[i].remaining += per[i].remaining < per[i].quota ? 1 : 0;
			per[i].delay_ns = 0;
		}
		if (stricter(&per[i], f)) {
			__u64 delay = f->delay_ns;

			*f = per[i];
			f->delay_ns = delay;
		}
	}
	if (!pass)
		f->delay_ns = 0;
	f->pass = pass;
	d->pass = pass;
	return pass;
}
