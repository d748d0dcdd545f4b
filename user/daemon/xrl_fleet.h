/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One host's side of fleet-wide (--global) rules: each round, what the data
 * path admitted since the last round goes to Redis, and the fleet's usage
 * that comes back becomes a floor under each source's TAT in the BPF maps.
 * When Redis fails, the failure policy decides what the rules do.
 * docs/DESIGN.md ("Fleet-wide rules") has the arithmetic and its bound.
 */
#ifndef XRL_FLEET_H
#define XRL_FLEET_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include "xrl_common.h"
#include "xrl_fleet_keys.h"   /* the rule's name in Redis, its keys */
#include "xrl_maps.h"
#include "xrl_redis.h"
#include "xrl_script_args.h"
#include "xrl_rule.h"   /* xrl_mono_ns */

enum xrl_fleet_policy {
	XRL_POLICY_LOCAL = 0,   /* enforce the last known share of each budget */
	XRL_POLICY_OPEN,        /* global rules limit at their local rate only */
	XRL_POLICY_CLOSED,      /* global rules drop what they match */
};

/* "local", "open", "closed": the --on-redis-failure words, by policy. */
extern const char *const xrl_fleet_policy_name[3];

/* Upper bounds of the round-duration histogram, seconds (+Inf implied). */
#define XRL_FLEET_HIST_BUCKETS 12

struct xrl_fleet_rule_state {
	bool global;
	__u32 version;
	char name[17];          /* the rule's name in Redis: hash of its canonical text */
	char match[XRL_MATCH_TEXT];        /* prefix and match, for logs and metrics */
	__u8 per_len;           /* sources are aggregated to /per_len */
	double interval_ns;     /* ns per token */
	double span_ns;         /* burst x interval */
	char interval_us[32];   /* the same in µs, as the Redis script takes them */
	char span_us[32];
	double rate_ewma;       /* this host's admissions per second, smoothed over ~1 s */
	__u64 round_admitted;   /* this round's admissions */
	__u32 hosts;            /* hosts running the rule, as Redis last said (0: unknown) */
	double share;           /* this host's last known share of the budget */
	/* --algo: a window rule's counters go to window.lua, not gcra.lua */
	__u8 algo;
	__u64 win_ns;
	char win_us[32];
};

struct xrl_fleet {
	const struct xrl_maps *m;
	struct xrl_redis redis;
	enum xrl_fleet_policy policy;
	char host_id[128];
	char instance[64];
	__u64 interval_ns;

	/* Redis state: one log line per change */
	bool redis_up;
	bool ever_up;
	__u64 down_since_ns;
	__u64 next_connect_ns;
	__u64 backoff_ns;
	unsigned long failed_connects;   /* failed connections and refused rounds since it was up */
	char last_error[256];
	bool answering;                  /* this round's floors come from Redis' answers */
	__u64 last_ok_ns;                /* the last round Redis answered (or the start) */
	bool share_lost;                 /* local policy: the share's hold ran out, logged */
	/*
	 * redis-cluster://: some calls of the last round failed alone (their
	 * master lost): their sources under the failure policy, the others'
	 * answered; logged once when it starts and once when it ends.
	 */
	bool partial;
	__u64 partial_since_ns;
	int unanswered_calls;            /* this round's */
	/*
	 * redis-cluster:// under local, the hold per shard (the sources' hash
	 * tags): since when each shard's calls go unanswered (the end of the
	 * last round it had none unanswered; 0 while it answers). A shard
	 * unanswered past the hold holds no share of its sources until one of
	 * its calls is answered again (shards_lost: bit n, logged once).
	 */
	__u64 shard_down_ns[XRL_CLUSTER_SHARDS];
	__u64 shards_lost;

	__u64 last_round_ns;
	struct xrl_fleet_rule_state rules[XRL_MAX_RULES];
	__u32 mode_written[XRL_MAX_RULES];   /* last mode put in xrl_fleet_rules, +1; 0 none */

	/* scratch, XRL_FLEET_SOURCES each */
	struct xrl_bucket_key *used_keys, *floor_keys, *put_keys, *del_keys;
	struct xrl_fleet_used *used;
	struct xrl_fleet_floor *floors, *put;
	struct xrl_redis_call *calls;
	int *call_entry;
	char (*keytext)[96];
	/* a push's numbers as the script takes them: n or n@since, demand, its µs, the call's nd */
	char (*argtext)[4][32];
	const char **argpool;               /* the calls' argument vectors */
	struct xrl_gcra_source *sources;    /* each push as its call has it */
	int *call_sources;                  /* sources in each call */
	char (*rate_text)[24];              /* per rule, for its hosts call */
	struct xrl_fleet_push *pushes;      /* this round's reports, by rule */
	struct xrl_fleet_floor_entry *fent; /* the floor map as this daemon wrote it, sorted */
	int fent_n;                         /* entries in fent; -1: read the map */

	/* what metrics and the last round report; guarded by lock */
	pthread_mutex_t lock;
	unsigned long rounds;
	unsigned long redis_errors;
	double hist_sum;
	unsigned long hist[XRL_FLEET_HIST_BUCKETS + 1];
	unsigned long reported_total;  /* (rule, source) reports sent, over all rounds */
	unsigned long keys_repaired;   /* xrl's keys of the wrong type deleted (WRONGTYPE) */
	unsigned long evicted_keys;    /* keys Redis evicted while this daemon watched */

	/* keys of the wrong type: one line per 10 s at most */
	__u64 repair_logged_ns;
	unsigned long repair_unlogged;
	/* evictions: Redis' policy, its evicted_keys (INFO) or, INFO refused, a sentinel key */
	__u64 memory_checked_ns;
	long long evicted_seen;          /* INFO's evicted_keys at the last check; -1: none yet */
	bool info_refused;               /* INFO refused (renamed, ACL): the sentinel instead */
	bool sentinel_set;
	bool evicting;                   /* an episode of evictions, warned once */
	__u64 evicted_last_ns;
	char memory_policy[64];          /* maxmemory-policy as last warned about ("" none) */
	int last_round_tracked;      /* global (rule, source) pairs this host tracks */
};

extern const double xrl_fleet_hist_bounds[XRL_FLEET_HIST_BUCKETS];

/* 0, or -ENOMEM. The Redis URL and timeouts are set by the caller in f->redis. */
int xrl_fleet_init(struct xrl_fleet *f, const struct xrl_maps *m, const char *instance,
		   const char *host_id, __u64 interval_ns, enum xrl_fleet_policy policy);
void xrl_fleet_free(struct xrl_fleet *f);

/* The rule set in force (read by the caller under the instance's shared lock). */
void xrl_fleet_set_rules(struct xrl_fleet *f, const struct xrl_rule_def *defs, const __u32 *ids,
			 int n);
/*
 * How long a host that cannot reach Redis keeps its last known share under
 * --on-redis-failure local: as long as the other hosts still count its
 * demand (5 rounds, at least 3 s), after which they share the whole budget
 * among themselves and this host's share is zero (its global rules drop
 * what they match until Redis answers).
 */
__u64 xrl_fleet_hold_ns(const struct xrl_fleet *f);

/* One sync round. Logs what changed. 0 or -errno (the maps failed). */
int xrl_fleet_round(struct xrl_fleet *f);
/* Leave the data path on plain local limits: fleet modes back to FLOOR; floors expire alone. */
void xrl_fleet_release(struct xrl_fleet *f);

/* Prometheus families of the fleet state (for the metrics endpoint). */
void xrl_fleet_metrics(FILE *out, void *fleet);



#endif /* XRL_FLEET_H */
