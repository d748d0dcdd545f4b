/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The maps of the xrl XDP program (bpf/xrl.bpf.c), defined once here: the
 * program includes this header after xrl_common.h, so every map the data
 * path touches, its type, size and value layout, is in one place. Layouts
 * are in xrl_common.h; what each map is for, in docs/DESIGN.md ("Maps").
 */
#ifndef XRL_MAPS_BPF_H
#define XRL_MAPS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xrl_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, XRL_MAX_PREFIXES);
	__type(key, struct xrl_lpm_v4);
	__type(value, struct xrl_prefix_entry);
} xrl_rules_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, XRL_MAX_PREFIXES);
	__type(key, struct xrl_lpm_v6);
	__type(value, struct xrl_prefix_entry);
} xrl_rules_v6 SEC(".maps");

/*
 * The bucket tables: arrays of sets of cache lines (xrl_common.h, xrl_table.h),
 * sized by the loader (--max-sources, rounded down to whole sets; the set
 * count is also in xrl_config). MMAPABLE for its page-aligned values: a set
 * never straddles more cache lines than its own.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XRL_DEFAULT_SOURCES / XRL_WAYS4);
	__type(key, __u32);
	__type(value, struct xrl_set4);
} xrl_buckets_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XRL_DEFAULT_SOURCES / XRL_WAYS6);
	__type(key, __u32);
	__type(value, struct xrl_set6);
} xrl_buckets_v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XRL_RULE_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct xrl_rule_cache);
} xrl_rule_cache_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XRL_RULE_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct xrl_rule_cache);
} xrl_rule_cache_v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XRL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xrl_rule_stats);
} xrl_rule_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_global_stats);
} xrl_stats SEC(".maps");

/* New-source budgets (--new-sources): see xrl_common.h. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XRL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xrl_budget);
} xrl_newsrc SEC(".maps");

/* Aggregate caps (--total): the shared word per rule, and each CPU's batch of its tokens. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XRL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xrl_budget);
} xrl_total SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XRL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xrl_total_local);
} xrl_total_local SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_config);
} xrl_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XRL_SKETCH_SLOTS);
	__type(key, __u32);
	__type(value, struct xrl_sketch_slot);
} xrl_drop_sketch SEC(".maps");

/* Controller-only state, pinned beside the data path's maps. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * XRL_MAX_RULES);   /* XRL_RULE_DEFS_SLOT: one half per generation parity */
	__type(key, __u32);
	__type(value, struct xrl_rule_def);
} xrl_rule_defs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XRL_MAX_IFACES);
	__type(key, __u32);
	__type(value, struct xrl_iface);
} xrl_ifaces SEC(".maps");

/* Fleet-wide rules: see xrl_common.h. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XRL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xrl_fleet_rule);
} xrl_fleet_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XRL_FLEET_SOURCES);
	__type(key, struct xrl_bucket_key);
	__type(value, struct xrl_fleet_used);
} xrl_fleet_used SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XRL_FLEET_SOURCES);
	__type(key, struct xrl_bucket_key);
	__type(value, struct xrl_fleet_floor);
} xrl_fleet_floor SEC(".maps");

/* Limit events: see xrl_common.h. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XRL_EVENTS_RING);
} xrl_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XRL_LIMITED_SOURCES);
	__type(key, struct xrl_bucket_key);
	__type(value, struct xrl_limited);
} xrl_limited SEC(".maps");

/* The sliding logs of --algo sliding-log (xrl_algo.h), and the empty log new ones copy. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XRL_LOG_SOURCES);
	__type(key, struct xrl_bucket_key);
	__type(value, struct xrl_log);
} xrl_logs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_log);
} xrl_log_zero SEC(".maps");

/* The penalty box (--block): see xrl_common.h. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XRL_BLOCKED_SOURCES);
	__type(key, struct xrl_bucket_key);
	__type(value, struct xrl_block);
} xrl_blocked SEC(".maps");

/* Escalations of xrl http (--escalate): see xrl_common.h. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XRL_ESCALATED_SOURCES);
	__type(key, struct xrl_esc_key);
	__type(value, struct xrl_escalation);
} xrl_escalated SEC(".maps");

/* [0]: nonzero once an escalation was written: xrl_escalated is looked up */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xrl_esc_on SEC(".maps");

/* Busy clients (a --syn rule's limited sources that send established TCP): see xrl_common.h. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XRL_BUSY_SLOTS);
	__type(key, __u32);
	__type(value, struct xrl_busy_slot);
} xrl_busy SEC(".maps");

/* [0]: the time of the latest record in xrl_busy; 0: none lately, nothing is looked up */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} xrl_busy_on SEC(".maps");

/* Per CPU: xrl_not_own before a --block rule's decision (xrl_block_held), for xrl_block_after. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} xrl_block_scratch SEC(".maps");

#ifdef XRL_TEST_CLOCK
/*
 * Test build only: the test sets the clock, so time in tests is exact.
 * [0] the exact clock; [1] how far the jiffy clock lags it (0: not at all).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} xrl_test_clock SEC(".maps");
#endif

#endif /* XRL_MAPS_BPF_H */
