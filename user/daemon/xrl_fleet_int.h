/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Inside the fleet daemon (xrl_fleet.h is its interface), one job per file:
 * xrl_fleet.c the round and the rule set, xrl_fleet_report.c what a round
 * reports, xrl_fleet_sync.c the Redis calls and the connection,
 * xrl_fleet_floor.c the floors and the failure policy, xrl_fleet_memory.c
 * Redis' eviction policy and evictions, xrl_fleet_metrics.c what metrics
 * show, xrl_fleet_share.c the shares and windows they all read,
 * xrl_fleet_keys.c the keys' names. The round (xrl_fleet.c) calls the
 * parts; a part calls no file that calls it (sync calls floor, memory and
 * metrics, report calls floor, all may read share), so none calls back.
 */
#ifndef XRL_FLEET_INT_H
#define XRL_FLEET_INT_H

#include "xrl_fleet.h"

/* A floor entry with its key, sortable, and whether this round still needs it. */
struct xrl_fleet_floor_entry {
	struct xrl_bucket_key key;
	struct xrl_fleet_floor v;
	bool seen;
};

/* What one used entry brings to this round. */
struct xrl_fleet_push {
	int used;                 /* index into used_keys/used */
	__u32 rule;               /* its rule id (pushes are sorted by it) */
	__u32 shard;              /* on a cluster, its key's shard (then by it); 0 otherwise */
	__u64 delta;              /* admissions since the last report */
	__u64 since_ns;           /* how far back they can go */
	__s64 demand;             /* packets seen since the demand was last reported; -1: not now */
	__u64 demand_ns;          /* over how long */
	struct xrl_fleet_floor_entry *old;
	/*
	 * The fleet's TAT is probably still ahead (new admissions, and the
	 * floor still holds this host back at the round's start): sent first
	 * in its call, as "+n" (gcra.lua adds without reading first).
	 */
	bool ahead;
	bool unanswered;          /* its call failed alone (a cluster master lost): the failure policy */
	double debt_us;           /* Redis' answer (NAN: none) */
	double share;             /* this host's share of the source's demand */
	__u32 live;               /* hosts that reported demand for it lately */
	/* --algo windows: Redis' answer (win_cur NAN: none) */
	double win_idx, win_cur, win_prev;
	/* --algo sliding-log: the others' admissions in the window, µs until the oldest leaves, after */
	double log_others, log_leave_us, log_after;
};

/*
 * Members of a global sliding log's Redis set per source at most (log.lua):
 * every member reports at least one admission inside the window, and a
 * window admits 64 per host at most (XRL_LOG_MAX) even before the others'
 * counts arrive, so 64 hosts reach it. Past it the oldest go first (the
 * fleet's count reads short: the bound then grows by what they carried).
 */
#define XRL_FLEET_LOG_CAP "4096"

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
 * admissions may go. The same on every host (see gcra.lua); whole ms.
 */
#define XRL_FLEET_TAT_LIFE_NS (3 * XRL_FLEET_DEMAND_NS)
/* Scratch argument slots: 5 per source at most, the fixed ones of a gcra call per batch
 * (one partial batch per rule, or per rule and shard on a cluster: at most one per
 * source), a hosts call per rule. */
#define XRL_FLEET_ARGV_SLOTS ((size_t)XRL_FLEET_SOURCES * 5 + \
			      (XRL_FLEET_SOURCES / XRL_FLEET_BATCH + XRL_FLEET_SOURCES) * XRL_GCRA_FIXED + \
			      XRL_MAX_RULES * XRL_HOSTS_ARGC)

/* xrl_fleet_share.c */
__u64 xrl_fleet_live_window_ns(const struct xrl_fleet *f);
__u64 xrl_fleet_demand_window_ns(const struct xrl_fleet *f);
/* A rule's last known share: as Redis said, else 1 / hosts, else all of it. */
double xrl_fleet_rule_share(const struct xrl_fleet_rule_state *rs);
/* Whether this host still holds a share of the budgets (Redis up, or the local policy's hold). */
bool xrl_fleet_holds_share(const struct xrl_fleet *f);
/*
 * On a cluster under local: whether a shard's calls have gone unanswered
 * for longer than the hold while other shards answer (the other hosts no
 * longer count this host's demand for its sources: it holds no share).
 */
bool xrl_fleet_shard_lost(const struct xrl_fleet *f, unsigned shard, __u64 now);
_Static_assert(XRL_CLUSTER_SHARDS <= 64, "shards_lost is a 64-bit mask");

/* xrl_fleet_report.c: the pushes of a round from the nu used entries; returns how many. */
int xrl_fleet_choose(struct xrl_fleet *f, int nu, __u64 t0, __u64 elapsed, int *tracked);
/* How far back a round's admissions go: to the last round, within the TAT's life. */
__u64 xrl_fleet_round_since(__u64 elapsed);

/* xrl_fleet_sync.c */
void xrl_fleet_ensure_connected(struct xrl_fleet *f, __u64 now);
bool xrl_fleet_sync_redis(struct xrl_fleet *f, int np, __u64 t0, __u64 since_ns, int *floor_err);

/* xrl_fleet_floor.c */
/* Floor entries (and keys) in key order. */
int xrl_fleet_key_cmp(const void *a, const void *b);
/* The copy of the floor map (read when -1); its size, or -errno. */
int xrl_fleet_load_floors(struct xrl_fleet *f);
int xrl_fleet_put_floors(struct xrl_fleet *f, int from, int to, __u64 t0, __u64 now);
/* Delete the floors of fent[0, nf) this round did not see; 0 or -errno. */
int xrl_fleet_drop_floors(struct xrl_fleet *f, int nf);
void xrl_fleet_keep_floors(struct xrl_fleet *f, int np, int nf);
/* Redis did not answer: floors of pushes [0, np) by the failure policy; 0 or -errno. */
int xrl_fleet_floors_without_redis(struct xrl_fleet *f, int np, __u64 t0);
void xrl_fleet_write_modes(struct xrl_fleet *f, __u64 now);

/* xrl_fleet_memory.c: Redis' maxmemory-policy (after each connection) and its evictions (once a second) */
void xrl_fleet_check_policy(struct xrl_fleet *f);
void xrl_fleet_check_evictions(struct xrl_fleet *f, __u64 now);

/* xrl_fleet_metrics.c */
void xrl_fleet_record_round(struct xrl_fleet *f, double secs, int sources, int tracked);
void xrl_fleet_count_error(struct xrl_fleet *f);

#endif /* XRL_FLEET_INT_H */
