// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xrl XDP program: per-source token buckets keyed by CIDR rules.
 * The per-packet path is described in docs/DESIGN.md.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xrl_common.h"
#include "xrl_bucket.h"
#include "xrl_parse.h"
#include "xrl_table.h"
#include "xrl_algo.h"
#include "xrl_take.h"
#include "xrl_maps.bpf.h"
#include "xrl_synproxy.bpf.h"

/* the prefix lookups of xrl_match.h: the generation's LPM tries */
#define XRL_PREFIX_LOOKUP_V4(k) bpf_map_lookup_elem(&xrl_rules_v4, k)
#define XRL_PREFIX_LOOKUP_V6(k) bpf_map_lookup_elem(&xrl_rules_v6, k)
#include "xrl_match.h"
#include "xrl_budget.h"

/* Load-time policy for truncated/invalid IP packets (set by the loader). */
const volatile __u32 xrl_malformed_policy = XRL_MALFORMED_PASS;
/*
 * Load-time: 1 when the device has no link-layer header (tun, WireGuard,
 * ipip, gre, ppp, ...), whose packets start at the IP header (set by the
 * loader from the device type). A constant to the verifier: each program
 * keeps only its own parser.
 */
const volatile __u32 xrl_l3_input = 0;

#ifdef XRL_TEST_CLOCK
/* Test build only: the clock is xrl_test_clock (xrl_maps.bpf.h), set by the test. */
static __always_inline __u64 xrl_now_ns(void)
{
	__u32 k = 0;
	__u64 *t = bpf_map_lookup_elem(&xrl_test_clock, &k);

	return t ? *t : 0;
}
/* the jiffy clock: the test clock less the lag the test set (xrl_test_clock[1]) */
static __always_inline __u64 xrl_coarse_ns(struct xrl_config *cfg)
{
	__u32 k = 1;
	__u64 *lag = bpf_map_lookup_elem(&xrl_test_clock, &k);
	__u64 t = xrl_now_ns();

	(void)cfg;
	return lag && *lag < t ? t - *lag : t;
}

static __always_inline void xrl_jiffy_calibrate(struct xrl_config *cfg, __u64 exact_ns)
{
	(void)cfg;
	(void)exact_ns;
}
#else
static __always_inline __u64 xrl_now_ns(void)
{
	return bpf_ktime_get_ns();
}

/*
 * The jiffy clock, for rules whose burst holds at least three ticks of
 * refill: bpf_jiffies64() costs ~0.3 ns where bpf_ktime_get_ns() costs ~37
 * under kvm-clock. It lags real time by up to two ticks plus the kernel's
 * lateness in advancing jiffies (XRL_JIFFY_LAG_TICKS), which costs such a
 * rule at most rate x that lag of tokens at any instant and none over time,
 * and it never runs ahead, so it never admits more than the exact clock.
 */
static __always_inline __u64 xrl_coarse_ns(struct xrl_config *cfg)
{
	if (!cfg->jiffy_off_set)
		return bpf_ktime_get_ns();   /* not calibrated yet */
	return bpf_jiffies64() * cfg->tick_ns + cfg->jiffy_off;
}

/*
 * Jiffy j covers [P + j x tick, P + (j+1) x tick) of CLOCK_MONOTONIC for a
 * fixed phase P (the kernel advances jiffies by a tick of monotonic time at
 * a time), so exact - j x tick >= P for every reading; the lowest seen,
 * minus one tick, keeps the estimate behind real time. Called where the
 * exact clock is read anyway: when a bucket starts.
 */
static __always_inline void xrl_jiffy_calibrate(struct xrl_config *cfg, __u64 exact_ns)
{
	__u64 cand, old;
	int i;

	if (!cfg->tick_ns)
		return;
	cand = exact_ns - bpf_jiffies64() * cfg->tick_ns - cfg->tick_ns;
	for (i = 0; i < 4; i++) {
		old = cfg->jiffy_off;
		if (cfg->jiffy_off_set && (__s64)(cand - old) >= 0)
			return;
		if (__sync_val_compare_and_swap(&cfg->jiffy_off, old, cand) == old) {
			cfg->jiffy_off_set = 1;
			return;
		}
	}
}
#endif
#include "xrl_escalate.bpf.h"   /* after the clocks: it reads xrl_coarse_ns */
#include "xrl_busy.bpf.h"       /* likewise, and reads a segment as the SYN proxy does */

/*
 * The packet's rule, or NULL. A source resolved before in this generation
 * on this CPU skips the LPM walk (xrl_rule_cache_v4/v6); a resolution
 * that depends on the source alone is stored for next time. The cache is
 * keyed by the source masked to the generation's longest rule prefix
 * (short: xrl_config.rc_short of its parity), so sources that no rule
 * tells apart share an entry, as a random-source flood under one prefix does.
 */
static __always_inline const struct xrl_rule *xrl_find_rule(const struct xrl_pkt *p, __u32 gen,
							    __u32 short_bits)
{
	const struct xrl_prefix_entry *ent;
	struct xrl_rule_cache *c;
	__u32 slot, a[4] = {};
	int hit;

	if (p->family == 4) {
		a[0] = xrl_mask_v4(p->saddr[0], 32 - XRL_RC_SHORT_V4(short_bits));
		slot = xrl_rule_cache_slot(a[0]);
		c = bpf_map_lookup_elem(&xrl_rule_cache_v4, &slot);
		hit = c && c->addr[0] == a[0];
	} else {
		__builtin_memcpy(a, p->saddr, 16);
		xrl_mask_v6(a, 128 - XRL_RC_SHORT_V6(short_bits));
		slot = xrl_rule_cache_slot6(a);
		c = bpf_map_lookup_elem(&xrl_rule_cache_v6, &slot);
		hit = c && c->addr[0] == a[0] && c->addr[1] == a[1] &&
		      c->addr[2] == a[2] && c->addr[3] == a[3];
	}
	if (hit && c->gen == gen) {
		if (c->state == XRL_RC_RULE)
			return &c->rule;
		if (c->state == XRL_RC_NONE)
			return 0;
		c = 0;   /* known to depend on more than the source: nothing to store */
	}
	ent = xrl_find_prefix(p, gen);
	if (c) {
		if (!ent || !ent->count) {
			c->state = XRL_RC_NONE;
		} else if (!(ent->rules[0].flags & XRL_F_MATCH)) {
			c->rule = ent->rules[0];
			c->state = XRL_RC_RULE;
		} else {
			c->state = XRL_RC_EMPTY;
		}
		__builtin_memcpy(c->addr, a, 16);
		c->gen = gen;
	}
	return ent ? xrl_scan(ent, p) : 0;
}

/*
 * May a source without a bucket get one under rule r (--new-sources)?
 * 1: a token of the rule's new-source budget was taken; 0: the budget is
 * spent: the packet is dropped without touching the table, counted in the
 * rule's new_refused.
 */
static __always_inline int xrl_newsrc_take(const struct xrl_rule *r, __u64 now_ns)
{
	struct xrl_budget *s = bpf_map_lookup_elem(&xrl_newsrc, &r->id);
	struct xrl_rule_stats *rs;

	if (!s)
		return 1;   /* ids are below XRL_MAX_RULES: not reached */
	if (xrl_budget_take(s, &r->newsrc, r->version, now_ns, 1))
		return 1;
	rs = bpf_map_lookup_elem(&xrl_rule_stats, &r->id);
	if (rs)
		rs->new_refused++;
	return 0;
}

/*
 * A token of rule r's aggregate cap (--total) for a packet its source's
 * bucket admits: from this CPU's batch, else a batch of total_batch tokens
 * from the shared word (one CAS per batch, not per packet), else a single
 * token. 0: the cap is spent (counted in total_refused). Tokens of a batch
 * are pre-paid, so the cap is never exceeded; at most total_batch - 1 per
 * CPU are held back from the others (docs/DESIGN.md).
 * now_ns is the lookups' clock (the jiffy clock on a jiffy-clock rule) for
 * every packet, never the exact time a new source's bucket starts at: the
 * cap's word is clamped to its last admission, so packets on the exact
 * clock (up to two ticks ahead) would take each token as it comes due,
 * before any packet on the jiffy clock could see it: established sources
 * would get none of the cap under a flood of new ones.
 */
static __always_inline int xrl_total_take(const struct xrl_rule *r, __u64 now_ns)
{
	struct xrl_total_local *l = bpf_map_lookup_elem(&xrl_total_local, &r->id);
	struct xrl_budget *s = bpf_map_lookup_elem(&xrl_total, &r->id);
	struct xrl_rule_stats *rs;
	__u64 k = r->total_batch;

	if (!l || !s)
		return 0;
	if (l->version != r->version) {
		l->version = r->version;   /* an old version's tokens are not this one's */
		l->tokens = 0;
	}
	if (l->tokens) {
		l->tokens--;
		return 1;
	}
	if (k > 1 && xrl_budget_take(s, &r->total, r->version, now_ns, k)) {
		l->tokens = k - 1;
		return 1;
	}
	if (xrl_budget_take(s, &r->total, r->version, now_ns, 1))
		return 1;
	rs = bpf_map_lookup_elem(&xrl_rule_stats, &r->id);
	if (rs)
		rs->total_refused++;
	return 0;
}

/* Give a cap token back to this CPU's batch (the source's own bucket refused after all). */
static __always_inline void xrl_total_refund(const struct xrl_rule *r)
{
	struct xrl_total_local *l = bpf_map_lookup_elem(&xrl_total_local, &r->id);

	if (l && l->version == r->version)
		l->tokens++;
}

/*
 * The time a bucket starts (or restarts full) at: the exact clock, since a
 * start at a lagging jiffy time would hand out up to a tick of refill that
 * never was. Later jiffy readings are clamped to it (xrl_gcra_clamp).
 */
static __always_inline __u64 xrl_start_ns(const struct xrl_rule *r, struct xrl_config *cfg,
					  __u64 now_ns)
{
	if (!r->coarse)
		return now_ns;
	now_ns = xrl_now_ns();
	xrl_jiffy_calibrate(cfg, now_ns);
	return now_ns;
}

/*
 * The lag xrl_jiffy_recheck allows the jiffy clock, in ticks: up to two from
 * the calibration (a jiffy's position in its tick, and the offset one tick
 * under the lowest reading), plus the kernel's lateness in advancing
 * jiffies, which a loaded VM makes real (bench/jiffy_lag.sh: 0.09 tick at
 * most, 0.2 % of readings over two ticks in all, with two CPUs busy).
 */
#define XRL_JIFFY_LAG_TICKS 3

/*
 * The cheap share of xrl_jiffy_recheck: might the exact clock admit a
 * packet of the bucket word tat? On a jiffy-clock rule, its token is due
 * (tat + interval - span) by now + lag, and the bucket has been idle for
 * longer than the lag. The token's due time first: a packet far over its
 * limit stops at that comparison. The over-limit shortcut (xrl_over_fast)
 * does not ask: it costs a packet there about 1 ns (measured), and what
 * it refuses is a source sending all along (seen this tick), which the
 * lag delays by at most the lag and costs nothing over time.
 */
static __always_inline int xrl_jiffy_due(__u64 tat, const struct xrl_rule *r,
					 const struct xrl_config *cfg, __u64 last_ns, __u64 now_ns)
{
	__u64 lag = XRL_JIFFY_LAG_TICKS * cfg->tick_ns;

	return r->coarse &&
	       (__s64)(tat + r->pkt.interval - r->pkt.span -
		       xrl_to_units(now_ns + lag, r->pkt.shift)) <= 0 &&
	       now_ns - last_ns > lag;
}

/*
 * Should a jiffy-clock rule's decision read the exact clock after all?
 * When the bucket has admitted nothing for longer than the jiffy clock's
 * lag (XRL_JIFFY_LAG_TICKS), so no recent exact admission time carries over through
 * the clamp, and the lag can decide a packet of what comes: the bucket
 * would not be full at now + lag, and a packet token is there by then.
 * The exact time is then this packet's, and its admission's, so the rest
 * of a burst is clamped to it: a source back after a pause is judged to
 * the microsecond (the literature's 10 more at exactly t = 1 s get 5, not
 * the 4 of a clock a few ms behind). A source sending all along (its last
 * admission within the lag), one whose next token is further than the lag
 * (far over its limit), and one with a full bucket never read it.
 */
static __always_inline int xrl_jiffy_recheck(const struct xrl_rule *r,
					     const struct xrl_config *cfg, __u64 tat,
					     __u64 last_ns, __u64 now_ns, __u64 floor_ns)
{
	__u64 at = now_ns + XRL_JIFFY_LAG_TICKS * cfg->tick_ns, at_u, base, next;

	if (!xrl_jiffy_due(tat, r, cfg, last_ns, now_ns))
		return 0;   /* the common case, far over or sending all along: a comparison */
	at_u = xrl_to_units(at, r->pkt.shift);
	base = xrl_gcra_base(tat, last_ns, at, at_u, r->pkt.full_ns);
	base = xrl_gcra_floor(base, at, floor_ns, r->pkt.shift);
	return xrl_after(base, at_u) &&
	       xrl_gcra_admit(base, at_u, r->pkt.interval, r->pkt.span, 1, &next);
}

/*
 * The state of a source seen for the first time: its bucket starts full (a
 * global rule's no fuller than the fleet's floor). Returns its first
 * packet's verdict; the state is stored whichever it is.
 */
static __always_inline int xrl_fresh_state(const struct xrl_rule *r, __u64 now_ns, __u64 len,
					   __u64 fleet, __u64 rt_off, struct xrl_bstate *nb)
{
	/* a fresh bucket is a full one: the peek of any bucket with fresh set */
	int pass;

	nb->tat_bytes = 0;
	nb->last_ns = now_ns;
	if (r->algo != XRL_ALGO_TOKEN_BUCKET) {
		/* a window source starts empty; a log's first packet is decided once it is published */
		nb->tat = 0;
		pass = 0;
		if (r->algo == XRL_ALGO_SLIDING_LOG)
			nb->tat = xrl_log_word(r->version);   /* racing inserts share it */
		else
			pass = xrl_win_peek(r->algo, 0, 1, now_ns, rt_off, r->win_ns, r->win_limit,
					    fleet, &nb->tat);
		nb->passed = pass;
		return pass;
	}
	pass = xrl_peek(0, &r->pkt, 0, now_ns, 1, 1, fleet, &nb->tat);
	if (!pass)
		nb->tat = xrl_to_units(now_ns, r->pkt.shift);
	if (r->flags & XRL_F_BYTES) {
		if (!pass || !xrl_peek(0, &r->byte, 0, now_ns, len, 1, 0, &nb->tat_bytes)) {
			/* refused by the byte bucket: no packet token spent either */
			pass = 0;
			nb->tat = xrl_to_units(now_ns, r->pkt.shift);
			nb->tat_bytes = xrl_to_units(now_ns, r->byte.shift);
		}
	}
	nb->passed = pass;
	return pass;
}

/* A fresh state whose first packet was refused after all (by --total): a full bucket. */
static __always_inline int xrl_fresh_refused(const struct xrl_rule *r, __u64 now_ns,
					     struct xrl_bstate *nb)
{
	nb->tat = r->algo != XRL_ALGO_TOKEN_BUCKET ? 0 : xrl_to_units(now_ns, r->pkt.shift);
	nb->tat_bytes = xrl_to_units(now_ns, r->byte.shift);
	nb->passed = 0;
	return 0;
}

/* A dropped source in this CPU's heavy-hitter sketch. */
static __always_inline void xrl_sketch_drop(const struct xrl_bucket_key *key, __u64 now_ns)
{
	__u32 idx = xrl_sketch_slot(key);
	struct xrl_sketch_slot *s = bpf_map_lookup_elem(&xrl_drop_sketch, &idx);

	if (!s)
		return;
	if (s->key.rule_id == key->rule_id && s->key.family == key->family &&
	    s->key.addr[0] == key->addr[0] && s->key.addr[1] == key->addr[1] &&
	    s->key.addr[2] == key->addr[2] && s->key.addr[3] == key->addr[3]) {
		s->dropped += XRL_SKETCH_SAMPLE;
		s->total += XRL_SKETCH_SAMPLE;
		s->last_ns = now_ns;
	} else if (s->dropped <= XRL_SKETCH_SAMPLE) {
		s->key = *key;
		s->dropped = XRL_SKETCH_SAMPLE;
		s->total = XRL_SKETCH_SAMPLE;
		s->last_ns = now_ns;
	} else {
		s->dropped -= XRL_SKETCH_SAMPLE;
	}
}

/* The in-kernel bound on limit events: a GCRA over the whole instance. */
static __always_inline int xrl_event_allowed(struct xrl_config *cfg, __u64 now_ns)
{
	const __u64 interval = 1000000000ull / XRL_EVENTS_PER_SEC;
	__u64 old = cfg->event_tat, next;

	if (!xrl_gcra_admit(xrl_after(old, now_ns) ? old : now_ns, now_ns, interval,
			    interval * XRL_EVENTS_BURST, 1, &next))
		return 0;
	return __sync_val_compare_and_swap(&cfg->event_tat, old, next) == old;
}

/* Fill a reserved limit event and hand it to the daemon. */
static __always_inline void xrl_event_submit(struct xrl_event *ev, __u32 type, __u64 now_ns,
					     const struct xrl_bucket_key *key, __u64 until_ns,
					     __u64 prev_until_ns, __u32 policy,
					     struct xrl_global_stats *gs)
{
	ev->type = type;
	ev->_pad = 0;
	ev->time_ns = now_ns;
	ev->key = *key;
	ev->_pad2 = 0;
	ev->until_ns = until_ns;
	ev->prev_until_ns = prev_until_ns;
	ev->policy = policy;
	ev->_pad3 = 0;
	bpf_ringbuf_submit(ev, 0);
	gs->events++;
}

/*
 * A sampled drop of a limit rule: the first one of a source not yet known
 * as limited writes a "limited" event; later ones keep its last drop time
 * fresh so the daemon can tell when it went quiet.
 */
static __always_inline void xrl_note_limited(const struct xrl_bucket_key *key, __u64 now_ns,
					     __u32 policy, struct xrl_config *cfg,
					     struct xrl_global_stats *gs)
{
	struct xrl_limited nl = { .since_ns = now_ns, .last_drop_ns = now_ns };
	struct xrl_limited *l = bpf_map_lookup_elem(&xrl_limited, key);
	struct xrl_event *ev;

	if (l) {
		if (now_ns - l->last_drop_ns > XRL_LIMITED_TOUCH_NS)
			l->last_drop_ns = now_ns;
		return;
	}
	if (!xrl_event_allowed(cfg, now_ns)) {
		gs->events_suppressed++;   /* not recorded either: a later drop tries again */
		return;
	}
	ev = bpf_ringbuf_reserve(&xrl_events, sizeof(*ev), 0);
	if (!ev) {
		gs->events_suppressed++;
		return;
	}
	if (bpf_map_update_elem(&xrl_limited, key, &nl, BPF_NOEXIST)) {
		bpf_ringbuf_discard(ev, 0);   /* another CPU reported it */
		return;
	}
	xrl_event_submit(ev, XRL_EV_LIMITED, now_ns, key, 0, 0, policy, gs);
}

/*
 * Drops of a limit decision that are not the source's own excess: the
 * new-source budget, the aggregate cap, a failed insert or a lost CAS race
 * (all counted per CPU, so a change across one decision is this packet's).
 * They do not put a source in the penalty box.
 */
static __always_inline __u64 xrl_not_own(const struct xrl_rule_stats *rs,
					 const struct xrl_global_stats *gs)
{
	return rs->new_refused + rs->total_refused + gs->insert_failed + gs->cas_contended;
}

static __always_inline void xrl_make_key(const struct xrl_rule *r, const struct xrl_pkt *p,
					 struct xrl_bucket_key *key)
{
	key->rule_id = r->id;
	key->family = p->family;
	if (p->family == 4) {
		key->addr[0] = xrl_mask_v4(p->saddr[0], r->per_len);
		key->addr[1] = 0;
		key->addr[2] = 0;
		key->addr[3] = 0;
	} else {
		__builtin_memcpy(key->addr, p->saddr, 16);
		xrl_mask_v6(key->addr, r->per_len);
	}
}

/*
 * Is the source of key (its rule r) in the penalty box (--block) at now_ns?
 * Read-only. When it is not, the decision follows: what xrl_not_own counts
 * is noted for xrl_block_after. Global functions, given the key rather than
 * the packet: what they read stays out of the verifier's states of the
 * inlined decision between them.
 */
__noinline int xrl_block_held(const struct xrl_rule *r, const struct xrl_bucket_key *key,
			      __u64 now_ns, struct xrl_global_stats *gs)
{
	struct xrl_rule_stats *rs;
	struct xrl_block *b;
	__u64 *snap;
	__u32 zero = 0;

	if (!r || !key || !gs)
		return 0;
	b = bpf_map_lookup_elem(&xrl_blocked, key);
	if (b && (__s64)(b->until_ns - now_ns) > 0 && b->version == r->version)
		return 1;
	rs = bpf_map_lookup_elem(&xrl_rule_stats, &r->id);
	snap = bpf_map_lookup_elem(&xrl_block_scratch, &zero);
	if (rs && snap)
		*snap = xrl_not_own(rs, gs);
	return 0;
}

/* A global rule closed by the daemon (Redis down, --on-redis-failure closed) drops everything. */
static __always_inline int xrl_fleet_closed(const struct xrl_rule *r, __u64 now_ns)
{
	struct xrl_fleet_rule *fr;

	if (!(r->flags & XRL_F_GLOBAL))
		return 0;
	fr = bpf_map_lookup_elem(&xrl_fleet_rules, &r->id);
	return fr && now_ns < fr->until_ns && fr->mode == XRL_FLEET_CLOSED;
}

/*
 * A packet of a --block rule was dropped by its decision: if for the
 * source's own excess, the source goes into the penalty box for
 * the rule's block_ns from now (its first drop), with a "blocked" event.
 * An entry whose block ended (and that the daemon has not logged released
 * yet) is restarted in place by compare-and-swap of its end; the event
 * carries that end so the daemon logs the release first.
 */
__noinline int xrl_block_after(const struct xrl_rule *r, const struct xrl_bucket_key *key,
			       __u64 now_ns, struct xrl_config *cfg, struct xrl_global_stats *gs)
{
	struct xrl_block nb = { .since_ns = now_ns };
	struct xrl_rule_stats *rs;
	struct xrl_block *b;
	struct xrl_event *ev;
	__u64 prev = 0, old, *snap;
	__u32 zero = 0;

	if (!r || !key || !cfg || !gs || xrl_fleet_closed(r, now_ns))
		return 0;
	/* only the source's own excess: none of the other causes of a drop counted meanwhile */
	rs = bpf_map_lookup_elem(&xrl_rule_stats, &r->id);
	snap = bpf_map_lookup_elem(&xrl_block_scratch, &zero);
	if (!rs || !snap || xrl_not_own(rs, gs) != *snap)
		return 0;
	nb.until_ns = now_ns + r->block_ns;
	nb.policy = r->policy;
	nb.version = r->version;
	b = bpf_map_lookup_elem(&xrl_blocked, key);
	if (b) {
		old = b->until_ns;
		if ((__s64)(old - now_ns) > 0 && b->version == r->version)
			return 0;   /* another CPU started it meanwhile */
		if (__sync_val_compare_and_swap(&b->until_ns, old, nb.until_ns) != old)
			return 0;
		b->since_ns = now_ns;
		b->released = 0;
		b->policy = r->policy;
		b->version = r->version;
		/* an older version's block ended with its rule: logged released from its end */
		prev = (__s64)(old - now_ns) > 0 ? now_ns : old;
	} else if (bpf_map_update_elem(&xrl_blocked, key, &nb, BPF_NOEXIST)) {
		return 0;   /* another CPU started it */
	}
	if (!xrl_event_allowed(cfg, now_ns)) {
		gs->events_suppressed++;   /* the block holds all the same */
		return 0;
	}
	ev = bpf_ringbuf_reserve(&xrl_events, sizeof(*ev), 0);
	if (!ev) {
		gs->events_suppressed++;
		return 0;
	}
	xrl_event_submit(ev, XRL_EV_BLOCKED, now_ns, key, nb.until_ns, prev, r->policy, gs);
	return 1;
}

/* What xrl_decide needs besides the entry, the rule, config and counters. */
struct xrl_dargs {
	__u64 key;        /* the entry's key word as the lookup read it; for an insert the version-less key */
	__u64 len;
	__u64 now_ns;
	__u64 fleet;      /* a global rule's fleet word: the token bucket's floor (the fleet's TAT, ns;
			   0: none), a window's other hosts' counts packed (xrl_win_others,
			   xrl_log_others) */
	__u32 addr[4];    /* IPv6 insert (and sliding-log rules): the masked address */
	__u32 family;     /* 4 or 6 */
	__u32 way;        /* insert: the source's preferred way in; XRL_INSERT_DECIDE: the way inserted out */
};

/* An insert's answer for a sliding log: the entry is published; decide its packet on it. */
#define XRL_INSERT_DECIDE 2

/*
 * The endings of a decision (xrl_decide, xrl_win_decide). Refused by the
 * take (got: 0 over the limit, -1 contended): the cap's token goes back to
 * this CPU's batch. Admitted: the entry's last admission and count, and a
 * fresh entry's key word takes the rule's version.
 */
static __always_inline int xrl_decide_refused(const struct xrl_rule *r, int got,
					      struct xrl_global_stats *gs)
{
	if (r->flags & XRL_F_TOTAL)
		xrl_total_refund(r);
	if (got < 0)
		gs->cas_contended++;
	return 0;
}

static __always_inline int xrl_decide_admitted(struct xrl_entry *e, const struct xrl_rule *r,
					       __u64 k, __u64 now_ns, int fresh)
{
	e->st.last_ns = now_ns;
	e->st.passed++;   /* for top only: a rare lost increment between CPUs is harmless */
	if (fresh)
		__sync_val_compare_and_swap(&e->key, k, xrl_key_with_version(k, r->version));
	return 1;
}

/*
 * A window algorithm's decision (--algo, xrl_algo.h) on entry e: its word
 * is the state's tat (a sliding log's ring is in xrl_logs). As for the
 * token bucket, over-limit packets write nothing, and a source of an
 * older rule version starts empty (fresh).
 */
__noinline int xrl_win_decide(struct xrl_entry *e, const struct xrl_rule *r, struct xrl_dargs *d,
			      struct xrl_config *cfg, struct xrl_global_stats *gs)
{
	struct xrl_bstate *b;
	__u64 k, next, now_ns;
	int got, fresh;
	__u32 seen;

	if (!e || !r || !d || !cfg || !gs)
		return 0;
	b = &e->st;
	k = d->key;
	seen = xrl_seen_word(d->now_ns);
	if (!xrl_seen_now(b->seen, seen))
		b->seen = seen;   /* a sighting: once a tick */
	/* as xrl_decide: an entry of another rule version starts empty; never before its last admission */
	fresh = !xrl_key_current(k, r->version);
	now_ns = xrl_gcra_clamp(d->now_ns, b->last_ns);

	if (r->algo == XRL_ALGO_SLIDING_LOG) {
		struct xrl_bucket_key lk = { .rule_id = r->id, .family = d->family };
		struct xrl_log *lg;
		__u32 zero = 0;

		if (d->family == 4)
			lk.addr[0] = (__u32)k;
		else
			__builtin_memcpy(lk.addr, d->addr, 16);
		if (fresh) {
			/*
			 * a new rule version: an empty log under the version's nonce, then the
			 * version stored. Every CPU that saw the old key gets here: the
			 * restart is one word for all of them and leaves it alone once
			 * made (xrl_log_restart), so none resets another's admissions.
			 */
			next = xrl_key_with_version(k, r->version);
			if (xrl_log_restart(&b->tat, xrl_log_word(r->version))) {
				gs->cas_contended++;
				return 0;
			}
			__sync_val_compare_and_swap(&e->key, k, next);
			k = next;
			fresh = 0;
		}
		lg = bpf_map_lookup_elem(&xrl_logs, &lk);
		if (!lg) {
			struct xrl_log *empty = bpf_map_lookup_elem(&xrl_log_zero, &zero);

			if (!empty)
				return 0;
			bpf_map_update_elem(&xrl_logs, &lk, empty, BPF_NOEXIST);
			lg = bpf_map_lookup_elem(&xrl_logs, &lk);
			if (!lg) {
				gs->insert_failed++;
				return 0;
			}
		}
		if ((r->flags & XRL_F_TOTAL) && !xrl_total_take(r, now_ns))
			return 0;
		got = xrl_log_take(&b->tat, lg->slot, &e->key, k, r->win_limit, (__u32)d->fleet,
				   now_ns, r->win_ns);
	} else {
		/* the cap after the source's own window said yes, as for the token bucket */
		if ((r->flags & XRL_F_TOTAL) &&
		    (!xrl_win_peek(r->algo, b->tat, fresh, now_ns, cfg->rt_off_ns, r->win_ns,
				   r->win_limit, d->fleet, &next) || !xrl_total_take(r, now_ns)))
			return 0;
		got = xrl_win_take(&b->tat, &e->key, k, r->algo, fresh, now_ns, cfg->rt_off_ns,
				   r->win_ns, r->win_limit, d->fleet);
	}
	if (got <= 0)
		return xrl_decide_refused(r, got, gs);
	return xrl_decide_admitted(e, r, k, now_ns, fresh);
}

/*
 * The limit decision on a source's entry e (its key word as read in
 * d->key). The entry's seen word takes now's tick (written only when the
 * tick is new: at most once a tick, not once a packet); over-limit packets
 * write nothing else. A global function,
 * so the verifier checks it once, not once per way a lookup can match in.
 */
__noinline int xrl_decide(struct xrl_entry *e, const struct xrl_rule *r, struct xrl_dargs *d,
			  struct xrl_config *cfg, struct xrl_global_stats *gs)
{
	struct xrl_bstate *b;
	__u64 last_ns, next, k, now_ns, len;
	int fresh, got;
	__u32 seen;

	if (!e || !r || !d || !cfg || !gs)
		return 0;
	b = &e->st;
	k = d->key;
	len = d->len;
	seen = xrl_seen_word(d->now_ns);
	if (!xrl_seen_now(b->seen, seen))
		b->seen = seen;   /* a sighting, dropped or not: once a tick */
	last_ns = b->last_ns;
	fresh = !xrl_key_current(k, r->version);
	now_ns = d->now_ns;
	if (fresh)
		now_ns = xrl_start_ns(r, cfg, now_ns);
	now_ns = xrl_gcra_clamp(now_ns, last_ns);
	if (!fresh && xrl_jiffy_recheck(r, cfg, b->tat, last_ns, now_ns, d->fleet))
		now_ns = xrl_gcra_clamp(xrl_start_ns(r, cfg, now_ns), last_ns);

	/* byte dimension first, read-only, so a byte-limited flood writes nothing */
	if ((r->flags & XRL_F_BYTES) &&
	    !xrl_peek(b->tat_bytes, &r->byte, last_ns, now_ns, len, fresh, 0, &next))
		return 0;

	/*
	 * the aggregate cap after the source's own bucket said yes (read-only),
	 * before it is taken from: a packet the cap refuses costs the source nothing
	 */
	if (r->flags & XRL_F_TOTAL) {
		if (!xrl_peek(b->tat, &r->pkt, last_ns, now_ns, 1, fresh, d->fleet, &next) ||
		    !xrl_total_take(r, d->now_ns))
			return 0;
	}

	got = xrl_take(&b->tat, &e->key, k, &r->pkt, last_ns, now_ns, 1, fresh, d->fleet);
	if (got <= 0)
		return xrl_decide_refused(r, got, gs);
	if (r->flags & XRL_F_BYTES) {
		got = xrl_take(&b->tat_bytes, &e->key, k, &r->byte, last_ns, now_ns, len, fresh, 0);
		if (got <= 0) {
			/* lost the bytes to another CPU meanwhile: give the packet token back */
			xrl_refund(&b->tat, &e->key, k, r->pkt.interval);
			return xrl_decide_refused(r, got, gs);
		}
	}
	return xrl_decide_admitted(e, r, k, now_ns, fresh);
}

/* Way i of a set whose ways start at w0, stride bytes apart (a way of the IPv6 table holds its address after its entry). */
#define XRL_WAY(w0, stride, i) (*(struct xrl_entry *)((char *)(w0) + (i) * (stride)))

/*
 * A source without an entry: replace the set's lowest-ranked way
 * (xrl_victim_rank) with a fresh bucket. The way is claimed by a CAS of its
 * key word to busy, written, then published; a CPU that loses the claim
 * decides its packet as a failed insert (dropped, insert_failed). It writes
 * its own way only (the other ways' seen words are theirs).
 * Keys, seen words and admission times are read once, here, for the rank.
 */
static __always_inline int xrl_insert(struct xrl_entry *w0, __u32 ways, __u32 stride,
				      __u32 addr_off, const struct xrl_rule *r,
				      struct xrl_dargs *d, struct xrl_config *cfg,
				      struct xrl_global_stats *gs)
{
	__u64 best = XRL_RANK_NEVER, rank, k, vk = 0, want, now_ns;
	struct xrl_rule_stats *rs;
	struct xrl_bstate nb;
	__u32 i, j, v = ways;
	int pass;

	want = d->key;
	now_ns = d->now_ns;
	/* from the preferred way on: of equal ranks (empty ways), it is taken first */
	for (j = 0; j < ways; j++) {
		i = (j + d->way) & (ways - 1);
		k = XRL_WAY(w0, stride, i).key;
		rank = xrl_victim_rank(k, XRL_WAY(w0, stride, i).st.seen,
				       XRL_WAY(w0, stride, i).st.last_ns, now_ns);
		if (rank < best) {
			best = rank;
			v = i;
			vk = k;
		}
	}
	if (v >= ways ||
	    __sync_val_compare_and_swap(&XRL_WAY(w0, stride, v).key, vk, xrl_key_busy(want)) != vk) {
		gs->insert_failed++;
		return 0;
	}
	/*
	 * Two CPUs inserting one source at once: both claims are full barriers,
	 * so at least one of them sees the other's (or its published entry) here,
	 * and a CPU that sees one yields: its way emptied, its packet dropped as
	 * a failed insert. So a source never gets two entries (each would start
	 * full: an extra burst, or an extra window's count).
	 */
	for (i = 0; i < ways; i++) {
		k = XRL_WAY(w0, stride, i).key;
		if (i != v && (k == xrl_key_busy(want) || xrl_key_match(k, want))) {
			__sync_val_compare_and_swap(&XRL_WAY(w0, stride, v).key, xrl_key_busy(want), 0);
			gs->insert_failed++;
			return 0;
		}
	}
	now_ns = xrl_start_ns(r, cfg, now_ns);
	pass = xrl_fresh_state(r, now_ns, d->len, d->fleet, cfg->rt_off_ns, &nb);
	/* the cap on the lookups' clock, as for every source (xrl_total_take) */
	if (pass && (r->flags & XRL_F_TOTAL) && !xrl_total_take(r, d->now_ns))
		pass = xrl_fresh_refused(r, now_ns, &nb);
	/* seen now, in the lookups' clock (a jiffy rule's lags its exact start) */
	nb.seen = xrl_seen_word(d->now_ns) & ~1u;
	if (addr_off)
		__builtin_memcpy((char *)&XRL_WAY(w0, stride, v) + addr_off, d->addr, 16);
	XRL_WAY(w0, stride, v).st = nb;
	if (xrl_rank_seen(best))   /* it had sent again after its first tick */
		gs->evicted_seen++;
	__sync_val_compare_and_swap(&XRL_WAY(w0, stride, v).key, xrl_key_busy(want),
				    xrl_key_with_version(want, r->version));
	gs->sources_created++;
	rs = bpf_map_lookup_elem(&xrl_rule_stats, &r->id);
	if (rs)
		rs->created++;
	if (r->algo == XRL_ALGO_SLIDING_LOG) {
		/* decided by the caller on the published entry: XRL_INSERT_DECIDE */
		d->key = xrl_key_with_version(want, r->version);
		d->now_ns = now_ns;
		d->way = v;
		return XRL_INSERT_DECIDE;
	}
	return pass;
}

__noinline int xrl_insert4(struct xrl_set4 *set, const struct xrl_rule *r, struct xrl_dargs *d,
			   struct xrl_config *cfg, struct xrl_global_stats *gs)
{
	if (!set || !r || !d || !cfg || !gs)
		return 0;
	return xrl_insert(set->w, XRL_WAYS4, sizeof(set->w[0]), 0, r, d, cfg, gs);
}

__noinline int xrl_insert6(struct xrl_set6 *set, const struct xrl_rule *r, struct xrl_dargs *d,
			   struct xrl_config *cfg, struct xrl_global_stats *gs)
{
	if (!set || !r || !d || !cfg || !gs)
		return 0;
	return xrl_insert(&set->w[0].e, XRL_WAYS6, sizeof(set->w[0]),
			  __builtin_offsetof(struct xrl_slot6, addr), r, d, cfg, gs);
}

/*
 * An established entry over its limit, told without calling the decision:
 * its state is of the rule's current version, its seen word already has
 * now's tick (else the decision writes it: once a tick), and the
 * decision's first, read-only test of its word refuses the packet, on the
 * clock clamped as there: for the token bucket one packet token is not
 * there (xrl_take's first test), for a fixed or sliding window the window
 * of that time has no room (xrl_win_take's first xrl_win_peek, which finds
 * the window of now itself, so a word of an older window counts as that
 * window's, as in the decision). xrl_decide or xrl_win_decide would drop
 * that packet with nothing written: the packet (or window) test is
 * read-only and refuses whatever the byte dimension or the cap say.
 * Everything else (admissions, a fresh entry or one not seen this tick, the sliding log)
 * goes to the decision. It saves a flood's packets the call and its return
 * (a return thunk under this kernel's SRSO mitigation) and the arguments'
 * stores. Local rules only (no fleet floor, no fleet counts): a global
 * rule's packets always go through the decision, which also keeps the
 * verifier's work down.
 */
static __always_inline int xrl_over_fast(const struct xrl_entry *e, const struct xrl_rule *r,
					 __u64 k, __u64 now_ns, const struct xrl_config *cfg)
{
	__u64 last_ns, next;

	if (!xrl_key_current(k, r->version) || !xrl_seen_now(e->st.seen, xrl_seen_word(now_ns)))
		return 0;
	last_ns = e->st.last_ns;
	now_ns = xrl_gcra_clamp(now_ns, last_ns);
	if (r->algo == XRL_ALGO_TOKEN_BUCKET)
		return !xrl_peek(e->st.tat, &r->pkt, last_ns, now_ns, 1, 0, 0, &next);
	if (r->algo == XRL_ALGO_FIXED_WINDOW || r->algo == XRL_ALGO_SLIDING_WINDOW)
		return !xrl_win_peek(r->algo, e->st.tat, 0, now_ns, cfg->rt_off_ns, r->win_ns,
				     r->win_limit, 0, &next);
	return 0;
}

/* A found entry's decision: the token bucket's, or a window algorithm's (one call deep either way). */
#define XRL_DECIDE(e, r, d, cfg, gs)							\
	((r)->algo != XRL_ALGO_TOKEN_BUCKET ? xrl_win_decide(e, r, d, cfg, gs) :		\
					      xrl_decide(e, r, d, cfg, gs))

/*
 * The decision once the source's way is known (e, its key word k as read):
 * an over-limit entry of a local rule is told without the call
 * (xrl_over_fast), else the found entry's decision. family is a constant
 * of the caller: the IPv6 table's sliding log keys its ring by the address a.
 */
static __always_inline int xrl_limit_found(struct xrl_entry *e, const struct xrl_rule *r, __u64 k,
					   const __u32 *a, __u32 family, __u64 len, __u64 now_ns,
					   __u64 fleet, int fast, struct xrl_config *cfg,
					   struct xrl_global_stats *gs)
{
	struct xrl_dargs d;   /* written where it is passed: not on the over-limit path */

	if (fast && xrl_over_fast(e, r, k, now_ns, cfg))
		return 0;
	d = (struct xrl_dargs){ .key = k, .len = len, .now_ns = now_ns, .fleet = fleet,
				.family = family };
	if (family == 6 && r->algo == XRL_ALGO_SLIDING_LOG)
		__builtin_memcpy(d.addr, a, 16);   /* the log's key */
	return XRL_DECIDE(e, r, &d, cfg, gs);
}

/*
 * A source without a way in its set (s4 or s6, by family): the new-source
 * budget, then the insert; a sliding log's first packet is decided after
 * the insert, outside it, so the call chain stays two deep.
 */
static __always_inline int xrl_limit_miss(struct xrl_set4 *s4, struct xrl_set6 *s6,
					  const struct xrl_rule *r, __u64 want, __u32 pw,
					  const __u32 *a, __u32 family, __u64 len, __u64 now_ns,
					  __u64 fleet, struct xrl_config *cfg,
					  struct xrl_global_stats *gs)
{
	struct xrl_dargs d;
	int i;

	if ((r->flags & XRL_F_NEWSRC) && !xrl_newsrc_take(r, now_ns))
		return 0;
	d = (struct xrl_dargs){ .key = want, .len = len, .now_ns = now_ns, .fleet = fleet,
				.family = family, .way = pw };
	if (family == 4) {
		i = xrl_insert4(s4, r, &d, cfg, gs);
		if (i == XRL_INSERT_DECIDE)
			return xrl_win_decide(&s4->w[d.way & (XRL_WAYS4 - 1)], r, &d, cfg, gs);
	} else {
		__builtin_memcpy(d.addr, a, 16);
		i = xrl_insert6(s6, r, &d, cfg, gs);
		if (i == XRL_INSERT_DECIDE)
			return xrl_win_decide(&s6->w[d.way & (XRL_WAYS6 - 1)].e, r, &d, cfg, gs);
	}
	return i;
}

/*
 * The limit decision in the IPv4 table for a source's key word want (the
 * address itself is the tag) and set hash h (xrl_limit_key): one set, its
 * ways scanned for the key word.
 */
static __always_inline int xrl_limit_v4(const struct xrl_rule *r, __u64 want, __u32 h, __u64 len,
					__u64 now_ns, __u64 fleet, int fast, struct xrl_config *cfg,
					struct xrl_global_stats *gs)
{
	__u64 k = 0, hit = 0;
	__u32 idx = xrl_set_index(h, cfg->sets_v4), i, pw = xrl_pref_way(h, XRL_WAYS4);
	struct xrl_set4 *set = bpf_map_lookup_elem(&xrl_buckets_v4, &idx);

	if (!set) {
		gs->insert_failed++;
		return 0;
	}
	/* the preferred way first (where an insert into a set with room puts it), else all ways */
	i = pw;
	k = set->w[pw & (XRL_WAYS4 - 1)].key;
	if (!xrl_key_match(k, want)) {
		hit = xrl_set4_hit(set, want);
		if (!hit)
			goto miss;
		i = (__u32)(hit - 1);
		if (i >= XRL_WAYS4)
			i = 0;
		k = set->w[i].key;
		if (!xrl_key_match(k, want)) {
			/* two ways match (a racing insert of the same source), or it changed: scan */
			for (i = 0; i < XRL_WAYS4; i++) {
				k = set->w[i].key;
				if (xrl_key_match(k, want))
					break;
			}
			if (i >= XRL_WAYS4)
				goto miss;
		}
	}
	i &= XRL_WAYS4 - 1;
	return xrl_limit_found(&set->w[i], r, k, 0, 4, len, now_ns, fleet, fast, cfg, gs);
miss:
	return xrl_limit_miss(set, 0, r, want, pw, 0, 4, len, now_ns, fleet, cfg, gs);
}

/* The same in the IPv6 table: the key word holds an address hash, the entry the address a. */
static __always_inline int xrl_limit_v6(const struct xrl_rule *r, const __u32 *a, __u64 want,
					__u32 h, __u64 len, __u64 now_ns, __u64 fleet, int fast,
					struct xrl_config *cfg, struct xrl_global_stats *gs)
{
	__u64 k = 0, hit = 0;
	__u32 idx = xrl_set_index(h, cfg->sets_v6), i, pw = xrl_pref_way(h, XRL_WAYS6);
	struct xrl_set6 *set = bpf_map_lookup_elem(&xrl_buckets_v6, &idx);

	if (!set) {
		gs->insert_failed++;
		return 0;
	}
	i = pw & (XRL_WAYS6 - 1);
	k = set->w[i].e.key;
	if (!xrl_way_hit6(k, set->w[i].addr, want, a, i)) {
		for (i = 0; i < XRL_WAYS6; i++)
			hit |= xrl_way_hit6(set->w[i].e.key, set->w[i].addr, want, a, i);
		if (!hit)
			goto miss;
		i = (__u32)(hit - 1) & (XRL_WAYS6 - 1);
		k = set->w[i].e.key;
		if (!xrl_way_hit6(k, set->w[i].addr, want, a, i)) {
			for (i = 0; i < XRL_WAYS6; i++) {
				k = set->w[i].e.key;
				if (xrl_way_hit6(k, set->w[i].addr, want, a, i))
					break;
			}
			if (i >= XRL_WAYS6)
				goto miss;
		}
	}
	i &= XRL_WAYS6 - 1;
	return xrl_limit_found(&set->w[i].e, r, k, a, 6, len, now_ns, fleet, fast, cfg, gs);
miss:
	return xrl_limit_miss(0, set, r, want, pw, a, 6, len, now_ns, fleet, cfg, gs);
}

/*
 * A global rule's fleet state for this source: -1 when the daemon closed
 * the rule (Redis down, --on-redis-failure closed), else 0 with the fleet's
 * TAT in *floor_ns (0: none, or the daemon opened the rule).
 */
static __always_inline int xrl_fleet_floor_of(const struct xrl_rule *r,
					      const struct xrl_bucket_key *key, __u64 now_ns,
					      __u64 *floor_ns)
{
	struct xrl_fleet_rule *fr = bpf_map_lookup_elem(&xrl_fleet_rules, &r->id);
	struct xrl_fleet_floor *f;

	*floor_ns = 0;
	if (fr && now_ns < fr->until_ns) {
		if (fr->mode == XRL_FLEET_CLOSED)
			return -1;
		if (fr->mode == XRL_FLEET_OPEN)
			return 0;
	}
	f = bpf_map_lookup_elem(&xrl_fleet_floor, key);
	if (f && f->until_ns > now_ns)
		*floor_ns = f->until_ns;
	return 0;
}

/*
 * A global window rule (--algo): instead of a floor, the other hosts'
 * counts of the source's window as the daemon last had them from Redis,
 * packed by xrl_win_others; none when the floor is moot (expired, or the
 * daemon opened the rule: floor_ns 0 then).
 */
static __noinline __u64 xrl_fleet_window_others(const struct xrl_rule *r,
					       const struct xrl_bucket_key *key, __u64 now_ns,
					       __u64 floor_ns, struct xrl_config *cfg)
{
	struct xrl_fleet_floor *f;

	if (!floor_ns || !r->win_ns)
		return 0;
	f = bpf_map_lookup_elem(&xrl_fleet_floor, key);
	if (!f)
		return 0;
	if (r->algo == XRL_ALGO_SLIDING_LOG)   /* the others' admissions in the log's window */
		return xrl_log_others(now_ns, f->log_leave_ns, f->log_others, f->log_after);
	return xrl_win_others(xrl_win_index(now_ns, cfg->rt_off_ns, r->win_ns), f->win_idx,
			      f->win_others, f->win_others_prev);
}

/* Count an admission (or a sampled drop) of a global rule for the daemon. */
static __always_inline void xrl_fleet_count(const struct xrl_bucket_key *key, __u64 now_ns,
					    int passed)
{
	struct xrl_fleet_used nu = { .born_ns = now_ns };
	struct xrl_fleet_used *u = bpf_map_lookup_elem(&xrl_fleet_used, key);

	if (!u) {
		if (passed)
			nu.passed = 1;
		else
			nu.dropped = XRL_FLEET_DROP_SAMPLE;
		if (bpf_map_update_elem(&xrl_fleet_used, key, &nu, BPF_NOEXIST) == 0)
			return;
		u = bpf_map_lookup_elem(&xrl_fleet_used, key);   /* another CPU created it */
		if (!u)
			return;
	}
	if (passed)
		__sync_fetch_and_add(&u->passed, 1);
	else
		__sync_fetch_and_add(&u->dropped, XRL_FLEET_DROP_SAMPLE);
}

/*
 * The bucket decision for a source's key (xrl_make_key: the one place a
 * source is masked to its rule's /per, for either family) in its family's
 * table, under the fleet's floor (0: none). Key word and set hash are
 * built once for both families (xrl_table_key); only the set's scan
 * differs (an IPv6 way holds its address).
 */
static __always_inline int xrl_limit_key(const struct xrl_rule *r, const struct xrl_bucket_key *key,
					 __u64 len, __u64 now_ns, __u64 fleet, int fast,
					 struct xrl_config *cfg, struct xrl_global_stats *gs)
{
	__u32 h;
	__u64 want = xrl_table_key(key, cfg->hash_seed, &h);

	if (key->family == 4)
		return xrl_limit_v4(r, want, h, len, now_ns, fleet, fast, cfg, gs);
	return xrl_limit_v6(r, key->addr, want, h, len, now_ns, fleet, fast, cfg, gs);
}

/* A global rule: the fleet's floor first, its admissions and demand counted after. */
static __always_inline int xrl_limit_global(const struct xrl_rule *r,
					    const struct xrl_bucket_key *key, __u64 len,
					    __u64 now_ns, struct xrl_config *cfg,
					    struct xrl_global_stats *gs)
{
	__u64 floor_ns, fleet;
	int pass;

	if (xrl_fleet_floor_of(r, key, now_ns, &floor_ns) < 0)
		return 0;
	/* a window rule's fleet word is the other hosts' counts, not a floor */
	fleet = r->algo != XRL_ALGO_TOKEN_BUCKET ?
		xrl_fleet_window_others(r, key, now_ns, floor_ns, cfg) : floor_ns;
	/* the bucket lookup from the masked key: the address is masked once */
	pass = xrl_limit_key(r, key, len, now_ns, fleet, 0, cfg, gs);
	/* drops are demand too: sampled, with the CPU's drop count as the clock */
	if (pass || (gs->dropped & (XRL_FLEET_DROP_SAMPLE - 1)) == 0)
		xrl_fleet_count(key, now_ns, pass);
	return pass;
}

/*
 * The limit decision for one packet: 1 pass, 0 drop. A local rule's path
 * has the floor as the constant 0, which folds away: a local rule pays
 * nothing for the fleet's floor.
 */
static __always_inline int xrl_limit(const struct xrl_rule *r, const struct xrl_bucket_key *key,
				     __u64 len, __u64 now_ns, struct xrl_config *cfg,
				     struct xrl_global_stats *gs)
{
	if (r->flags & XRL_F_GLOBAL)
		return xrl_limit_global(r, key, len, now_ns, cfg, gs);
	return xrl_limit_key(r, key, len, now_ns, 0, 1, cfg, gs);
}

/*
 * --syn-proxy: has the source of key a bucket of the rule's version
 * (it proved itself since the rule was last set)? Read only: nothing
 * inserted, nothing decided. A bucket of an older version is the same
 * source's, but the rule it proved itself to may have been another.
 */
static __noinline int xrl_source_known(const struct xrl_bucket_key *key, __u32 version,
				       struct xrl_config *cfg)
{
	__u64 hit = 0, want, bit, *w;
	__u32 h, idx, i;

	want = xrl_table_key(key, cfg->hash_seed, &h);
	w = xrl_proven_word(h, &bit);
	if (!w || !(*w & bit))
		return 0;   /* never proven: no look at the table */
	if (key->family == 4) {
		struct xrl_set4 *set;

		idx = xrl_set_index(h, cfg->sets_v4);
		set = bpf_map_lookup_elem(&xrl_buckets_v4, &idx);
		if (!set)
			return 0;
		hit = xrl_set4_hit(set, want);
		return hit && xrl_key_current(set->w[(hit - 1) & (XRL_WAYS4 - 1)].key, version);
	} else {
		struct xrl_set6 *set;

		idx = xrl_set_index(h, cfg->sets_v6);
		set = bpf_map_lookup_elem(&xrl_buckets_v6, &idx);
		if (!set)
			return 0;
		for (i = 0; i < XRL_WAYS6; i++)
			hit |= xrl_way_hit6(set->w[i].e.key, set->w[i].addr, want, key->addr, i);
		return hit && xrl_key_current(set->w[(hit - 1) & (XRL_WAYS6 - 1)].e.key, version);
	}
}

/* --syn-proxy: the source of key proved itself (or has a connection): set its bit. */
static __noinline void xrl_source_proven(const struct xrl_bucket_key *key, struct xrl_config *cfg)
{
	__u64 bit, *w;
	__u32 h;

	xrl_table_key(key, cfg->hash_seed, &h);
	w = xrl_proven_word(h, &bit);
	if (w && !(*w & bit))
		__sync_fetch_and_or(w, bit);
}

/*
 * A TCP segment of a --syn-proxy rule (flags: its TCP flags), before its
 * limit: what xrl_synproxy.bpf.h makes of it. A proven source (one with a
 * bucket) is judged by the rule as any, its SYNs too (its pure ACKs that
 * return a cookie of a second handshake still go to the tc program); an
 * unproven source's SYN is answered, its ACK proves it when its cookie
 * holds, and any other segment of it passes to the limit only when the
 * kernel has a socket for it (a connection whose bucket was evicted).
 * A global function: the verifier checks it once, not once per state of
 * the main program that calls it.
 */
__noinline int xrl_synproxy(struct xdp_md *ctx, const struct xrl_bucket_key *key, __u32 flags,
			    __u32 version, struct xrl_config *cfg)
{
	struct xrl_sp_scratch *x;
	struct xrl_sp_seg *g;
	__u32 zero = 0;
	__u64 now_ns;

	if (!ctx || !key || !cfg)
		return XRL_SP_JUDGE;
	x = bpf_map_lookup_elem(&xrl_sp_scratch, &zero);
	if (!x)
		return XRL_SP_JUDGE;
	g = &x->g;
	if (xrl_source_known(key, version, cfg)) {
		if ((flags & (XRL_TH_SYN | XRL_TH_RST | XRL_TH_FIN | XRL_TH_ACK)) == XRL_TH_ACK &&
		    !xrl_sp_read(ctx, g) && !g->paylen)
			xrl_sp_proven(ctx, g, cfg, xrl_coarse_ns(cfg));
		return XRL_SP_JUDGE;
	}
	if (xrl_sp_read(ctx, g))
		return XRL_SP_JUDGE;   /* not a frame the proxy reads: limited by the rule like any packet */
	now_ns = xrl_coarse_ns(cfg);
	if ((flags & (XRL_TH_SYN | XRL_TH_ACK | XRL_TH_RST)) == XRL_TH_SYN)
		return xrl_sp_answer(ctx, x, cfg, now_ns) ? XRL_SP_BAD : XRL_SP_TX;
	if ((flags & (XRL_TH_SYN | XRL_TH_ACK | XRL_TH_RST)) == XRL_TH_ACK &&
	    xrl_sp_proven(ctx, g, cfg, now_ns)) {
		xrl_source_proven(key, cfg);
		return XRL_SP_PROVEN;
	}
	if (!xrl_sp_has_socket(ctx, g))
		return XRL_SP_BAD;
	xrl_source_proven(key, cfg);
	return XRL_SP_JUDGE;
}

SEC("xdp")
int xrl_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = data_end - data;
	struct xrl_global_stats *gs;
	struct xrl_rule_stats *rs;
	const struct xrl_rule *r;
	struct xrl_bucket_key key;
	struct xrl_config *cfg;
	struct xrl_pkt p = {};
	__u64 now_ns = 0;
	__u32 zero = 0;
	int res, pass;

	gs = bpf_map_lookup_elem(&xrl_stats, &zero);
	cfg = bpf_map_lookup_elem(&xrl_config, &zero);
	if (!gs || !cfg)
		return XDP_PASS;
	gs->packets++;
	gs->bytes += len;

	res = xrl_l3_input ? xrl_parse_l3(data, data_end, &p) : xrl_parse(data, data_end, &p);
	if (p.family == 6 && !p.saddr[0])
		xrl_unmap_v4(&p);   /* ::ffff:a.b.c.d is judged as a.b.c.d */
	if (res != XRL_PARSE_IP) {
		if (res == XRL_PARSE_NON_IP) {
			gs->non_ip++;
			return XDP_PASS;
		}
		if (res == XRL_PARSE_VLAN_DEEP) {
			/* it may be IP to the kernel, and xrl cannot see which */
			gs->vlan_deep++;
			goto drop;
		}
		if (res == XRL_PARSE_MALFORMED) {
			/* no source: the only packets --malformed pass passes unjudged */
			gs->malformed++;
			if (xrl_malformed_policy == XRL_MALFORMED_DROP)
				goto drop;
			return XDP_PASS;
		}
		/* malformed past its source (tested apart, so the parser's exits stay cheap) */
		gs->malformed++;
		if (xrl_malformed_policy == XRL_MALFORMED_DROP)
			goto drop;
		gs->malformed_judged++;
		p.unknown = res == XRL_PARSE_BAD_L4 ? XRL_UNK_L4 : XRL_UNK_PROTO;
	}

	/* escalated by xrl http (--escalate): dropped whatever rule it meets */
	if (xrl_escalation_holds(&p, cfg))
		goto drop;
	/*
	 * established TCP from a source a --syn rule limited lately: a busy
	 * client. The gate is one load; the flags are tested in line, so the
	 * SYNs of a flood that opened it pay no call.
	 */
	if (xrl_busy_gate() && p.proto == IPPROTO_TCP && p.has_l4 &&
	    xrl_busy_established(p.tcp_flags))
		xrl_busy_sighting(ctx, &p, cfg);

	r = xrl_find_rule(&p, cfg->active_gen, cfg->rc_short[cfg->active_gen & 1]);
	if (!r) {
		gs->no_rule++;
		return XDP_PASS;
	}

	rs = bpf_map_lookup_elem(&xrl_rule_stats, &r->id);
	if (!rs)
		return XDP_PASS;

	if (r->action == XRL_ACT_ALLOW) {
		pass = 1;
		goto judged;
	}
	/*
	 * The source's key (masked to the rule's /per) once, for the decision
	 * and the drop samples alike: the packet's fields are not needed after
	 * it, so they are not kept across the decision.
	 */
	xrl_make_key(r, &p, &key);
	if ((r->policy & XRL_P_SYNPROXY) && p.proto == IPPROTO_TCP && p.has_l4) {
		res = xrl_synproxy(ctx, &key, p.tcp_flags, r->version, cfg);
		if (res == XRL_SP_TX) {
			rs->synack_sent++;
			return XDP_TX;
		}
		if (res == XRL_SP_BAD) {
			rs->bad_cookie++;
			pass = 0;
			now_ns = bpf_ktime_get_coarse_ns();
			goto judged;
		}
		if (res == XRL_SP_PROVEN)
			rs->proven++;
	}
	if (r->action == XRL_ACT_DENY) {
		pass = 0;
	} else {
		now_ns = r->coarse ? xrl_coarse_ns(cfg) : xrl_now_ns();
		/* --block: the penalty box first, then the decision, then maybe a block */
		if (r->policy & XRL_P_BLOCK) {
			if (xrl_block_held(r, &key, now_ns, gs)) {
				rs->blocked++;
				pass = 0;
				goto decided;
			}
		}
		pass = xrl_limit(r, &key, len, now_ns, cfg, gs);
		if (!pass && (r->policy & XRL_P_BLOCK))
			xrl_block_after(r, &key, now_ns, cfg, gs);
decided:
		if (!pass && (r->policy & XRL_P_SHADOW)) {
			/* it would have been dropped: counted as such, passed */
			if ((rs->shadow_dropped & (XRL_SKETCH_SAMPLE - 1)) == 0) {
				xrl_sketch_drop(&key, now_ns);
				if ((rs->shadow_dropped & (XRL_LIMITED_SAMPLE - 1)) == 0) {
					xrl_note_limited(&key, now_ns, r->policy, cfg, gs);
					if (r->flags & XRL_F_SYN)
						xrl_busy_note(&key, r->per_len, now_ns, cfg);
				}
			}
			rs->shadow_dropped++;
			rs->shadow_dropped_bytes += len;
			return XDP_PASS;
		}
	}

judged:
	if (pass) {
		rs->passed++;
		rs->passed_bytes += len;
		return XDP_PASS;
	}
	if ((gs->dropped & (XRL_SKETCH_SAMPLE - 1)) == 0) {
		/* deny reads no clock on its own; a jiffy-old time is plenty for top */
		if (r->action == XRL_ACT_DENY)
			now_ns = bpf_ktime_get_coarse_ns();
		xrl_sketch_drop(&key, now_ns);
		/* a source limited for real is dropped often: 1 drop in 64 per CPU is enough to see it */
		if (r->action == XRL_ACT_LIMIT && (gs->dropped & (XRL_LIMITED_SAMPLE - 1)) == 0) {
			xrl_note_limited(&key, now_ns, r->policy, cfg, gs);
			if (r->flags & XRL_F_SYN)
				xrl_busy_note(&key, r->per_len, now_ns, cfg);
		}
	}
	rs->dropped++;
	rs->dropped_bytes += len;
drop:
	gs->dropped++;
	gs->dropped_bytes += len;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
