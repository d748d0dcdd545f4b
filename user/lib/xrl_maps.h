/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The controller's view of one instance's maps: reading counters and
 * replacing the rule set atomically. Works the same on maps of a freshly
 * loaded object (tests) and on maps pinned in bpffs (the CLI).
 */
#ifndef XRL_MAPS_H
#define XRL_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include "xrl_common.h"

struct bpf_object;

/*
 * Every pinned map of an instance, once: X(field, sized) each. The list
 * gives struct xrl_maps' fields, the pin names ("xrl_" and the field:
 * xrl_rules_v4) and the layout check. sized: the bucket tables,
 * whose entries are set at attach (--max-sources), so only their entries
 * may differ between builds. Add a map here and in bpf/xrl_maps.bpf.h.
 */
#define XRL_MAPS(X)							\
	X(rules_v4, 0)							\
	X(rules_v6, 0)							\
	X(buckets_v4, 1)						\
	X(buckets_v6, 1)						\
	X(rule_stats, 0)						\
	X(stats, 0)							\
	X(config, 0)							\
	X(rule_defs, 0)							\
	X(ifaces, 0)							\
	X(drop_sketch, 0)						\
	X(fleet_rules, 0)						\
	X(fleet_used, 0)						\
	X(fleet_floor, 0)						\
	X(events, 0)							\
	X(limited, 0)							\
	X(newsrc, 0)        /* --new-sources: one per rule, all interfaces */ \
	X(total, 0)         /* --total's caps, likewise */		\
	X(total_local, 0)   /* per CPU: the unspent batch of cap tokens */ \
	X(logs, 0)          /* --algo sliding-log's rings */		\
	X(blocked, 0)       /* --block's penalty box */			\
	X(proven, 0)        /* --syn-proxy's filter of proven sources */	\
	X(escalated, 0)     /* xrl http --escalate: addresses dropped at XDP */ \
	X(esc_on, 0)        /* [0] set: the data path looks xrl_escalated up */ \
	X(busy, 0)          /* --syn rules' limited sources that send established TCP */ \
	X(busy_on, 0)       /* [0]: the latest record in xrl_busy (0: none lately) */

/* One fd per map of XRL_MAPS, in its order. */
struct xrl_maps {
#define XRL_MAP_FIELD(field, sized) int field;
	XRL_MAPS(XRL_MAP_FIELD)
#undef XRL_MAP_FIELD
};

/* Every map name in an instance's pin directory, NULL-terminated. */
extern const char *const xrl_map_names[];

int xrl_maps_from_obj(struct bpf_object *obj, struct xrl_maps *m);
/* 0, or -errno (ENOENT when the instance has no pins). */
int xrl_maps_open_pinned(const char *dir, struct xrl_maps *m);
/* Every map fd -1 (none open), as xrl_maps_close expects of maps not opened. */
void xrl_maps_none(struct xrl_maps *m);
void xrl_maps_close(struct xrl_maps *m);
/*
 * Do the pinned maps have the layout this build's program has (type, key
 * and value sizes, entries but the bucket tables')? An instance attached by
 * another build of xrl may not: reading its values into this build's
 * structs would overrun them. 0, or -EPROTO with the first map that
 * differs in bad, or -errno.
 */
int xrl_maps_layout_check(const struct xrl_maps *m, char *bad, size_t badlen);

/* The rule set in force, in id order. defs and ids hold XRL_MAX_RULES. */
int xrl_ruleset_read(const struct xrl_maps *m, struct xrl_rule_def *defs, __u32 *ids, int *n);

/*
 * Make defs[0..n) the whole rule set. A rule that keeps its prefix and
 * match keeps its id (so its counters) and, when its parameters are
 * unchanged, its buckets. Written beside the live set (over the set before
 * it: only the prefixes whose rules differ, and those inside them) and
 * switched in with one store to xrl_config, so packets see the old set or
 * the new one, never a mix; the definitions (xrl_ruleset_read) switch in the same store, so a
 * change killed at any point leaves old or new for every reader. Nothing changes when it fails: -EINVAL when the rule set itself
 * is refused (input error), another negative value when the maps failed.
 */
int xrl_ruleset_apply(const struct xrl_maps *m, const struct xrl_rule_def *defs, int n,
		      char *err, size_t errlen);

/* Sum of the per-CPU counters. */
int xrl_read_global(const struct xrl_maps *m, struct xrl_global_stats *out);
int xrl_read_rule_stats(const struct xrl_maps *m, __u32 id, struct xrl_rule_stats *out);
/* The same for rules ids[0..n) into out[0..n), with one syscall for all of them. */
int xrl_read_rule_stats_many(const struct xrl_maps *m, const __u32 *ids, int n,
			     struct xrl_rule_stats *out);
int xrl_read_config(const struct xrl_maps *m, struct xrl_config *out);
/*
 * A new instance's config: malformed policy, the jiffy length for the jiffy
 * clock, a new secret seed of the set hash (getrandom). 0 or -errno.
 */
int xrl_config_init(const struct xrl_maps *m, __u32 malformed_policy);
/* The instance's set-hash seed (xrl_config.hash_seed; 0 if unreadable): for xrl_table_key. */
__u64 xrl_hash_seed(const struct xrl_maps *m);
int xrl_write_config(const struct xrl_maps *m, const struct xrl_config *cfg);
/* Set xrl_config.rt_off_ns (read, change, write: call it under the instance lock). */
int xrl_config_set_rt_off(const struct xrl_maps *m, __u64 rt_off_ns);

/* A source from the drop sketch, merged over CPUs. */
struct xrl_top_entry {
	struct xrl_bucket_key key;
	__u64 dropped;    /* drops counted since the source took its sketch slot */
	__u64 last_ns;    /* CLOCK_MONOTONIC of its last drop */
};

/* `xrl top` and the exporter show the sources that had a drop this recently. */
#define XRL_TOP_RECENT_NS (10ULL * 1000000000ULL)

/*
 * The drop sketch as the data path left it: slot s of CPU c is
 * (*out)[s * *ncpu + c], XRL_SKETCH_SLOTS x *ncpu entries, malloc'd.
 */
int xrl_sketch_read(const struct xrl_maps *m, struct xrl_sketch_slot **out, int *ncpu);
/* Every source in the sketch, most drops first. *out is malloc'd. */
int xrl_top_read(const struct xrl_maps *m, struct xrl_top_entry **out, int *n);
/* Packets a source's bucket admitted (0 when it has none: deny rules, evicted). */
__u64 xrl_source_passed(const struct xrl_maps *m, const struct xrl_bucket_key *key);

/* Buckets evicted: the controller never deletes any, so created - live (0 if live < 0). */
__u64 xrl_evicted(const struct xrl_global_stats *g, long live);
/* Tracked sources (live buckets of both families), counted by walking the keys. */
long xrl_count_sources(const struct xrl_maps *m);
/*
 * The sources tracked, as an operator means it: live entries of a rule in
 * force, computed for its current version. A removed rule's buckets stay in
 * the table until inserts replace them (the controller never deletes any),
 * and so do a changed rule's until its sources come back (they restart
 * full): those are stale, counted apart. Evictions are
 * xrl_evicted(g, tracked + stale).
 */
struct xrl_source_census {
	long tracked, tracked_v4, tracked_v6;
	long stale;   /* live entries of removed rules, or of an older version of a rule */
};

/* Census of both tables for the rule set defs/ids[0..n); per_rule[i] (if not NULL): rule i's. 0 or -errno. */
int xrl_census_sources(const struct xrl_maps *m, const struct xrl_rule_def *defs, const __u32 *ids,
		       int n, long *per_rule, struct xrl_source_census *out);
/* Live entries of one bucket table (buckets_v4 or buckets_v6), or -errno. */
long xrl_count_bucket_entries(int fd);
/* Entries a bucket table holds: its sets x ways (0 if fd is not one). */
__u32 xrl_bucket_capacity(int fd);
__u32 xrl_map_max_entries(int fd);
/* Every entry of a hash map into keys/vals (room for max), batched. Number read, or -errno. */
int xrl_map_read_all(int fd, void *keys, void *vals, size_t ksz, size_t vsz, int max);
/* Kernel memory charged to a map (its fdinfo "memlock"), in bytes. */
unsigned long long xrl_map_memlock(int fd);

#endif /* XRL_MAPS_H */
