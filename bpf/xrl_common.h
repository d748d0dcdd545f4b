/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Every struct and constant shared by the XDP program and user space.
 * Map layouts live here so that a change cannot make the two sides disagree.
 */
#ifndef XRL_COMMON_H
#define XRL_COMMON_H

#ifdef __BPF__
#include <linux/types.h>
#else
#include <linux/types.h>
#include <stdint.h>
#endif

#define XRL_MAX_RULES        4096    /* rule ids index the per-rule counters */
#define XRL_MAX_MATCH        8       /* rules one prefix entry can hold, own + inherited */
#define XRL_MAX_PREFIXES     16384   /* entries per LPM trie */
#define XRL_DEFAULT_SOURCES  1048576 /* bucket table entries unless the operator sets it (rounded down to sets) */
#define XRL_MAX_VLAN         8       /* 802.1Q/802.1ad tags walked: the most Linux 6.18 strips and delivers */
#define XRL_MAX_EXT_HDRS     8       /* IPv6 extension headers walked before giving up */

/* Rule actions. */
enum xrl_action {
	XRL_ACT_LIMIT = 0,
	XRL_ACT_ALLOW = 1,
	XRL_ACT_DENY  = 2,
};

/*
 * Rule policies (xrl_rule.policy, xrl_rule_def.policy). A shadow rule
 * decides and counts as usual but passes what it would drop (counted in
 * shadow_dropped); --block puts a source that exceeds its limit in the
 * penalty box (xrl_blocked) for block_ns, from its first drop: all its
 * packets are dropped (counted in blocked) until then.
 */
#define XRL_P_SHADOW 0x01
#define XRL_P_BLOCK  0x02
/*
 * --syn-proxy (a TCP rule with --dport): a SYN from a source without a
 * bucket is answered at XDP with a SYN-ACK carrying a cookie (XDP_TX) and
 * touches no bucket; the ACK that returns a valid cookie proves the source,
 * which only then gets a bucket, and the kernel gets the handshake through
 * the tc program (bpf/xrl_tc.bpf.c, bpf_sk_assign_tcp_reqsk). See
 * bpf/xrl_synproxy.h.
 */
#define XRL_P_SYNPROXY 0x04

/* Rule match flags. */
#define XRL_F_PROTO  0x01   /* proto must equal the rule's */
#define XRL_F_DPORT  0x02   /* destination port must equal the rule's */
#define XRL_F_SYN    0x04   /* TCP SYN without ACK only */
#define XRL_F_BYTES  0x08   /* the rule also has a byte bucket */
#define XRL_F_GLOBAL 0x10   /* the budget is shared by the fleet through xrl daemon */
#define XRL_F_NEWSRC 0x20   /* new buckets are budgeted (--new-sources): xrl_newsrc */
#define XRL_F_TOTAL  0x40   /* all sources together are capped too (--total): xrl_total */
/*
 * A compiled rule's other match fields (struct xrl_rule.nports, dst_len): a
 * --dport set of ports and ranges (XRL_F_DPORT is then clear: it is the
 * one-port test alone) and/or a --dst prefix. One bit for both, so
 * a rule without them pays one test of a register it holds anyway.
 */
#define XRL_F_MORE   0x80
#define XRL_F_MATCH  (XRL_F_PROTO | XRL_F_DPORT | XRL_F_SYN | XRL_F_MORE)   /* the rule looks past the source */

/*
 * --dport PORTS: at most XRL_MAX_PORT_RANGES ports or ranges per rule
 * (80,443,8000-8100 is three), sorted, disjoint and not adjacent (the
 * normal form: 80,81 is 80-81), so the match stops at the first range
 * past the port. 8 ranges are 32 bytes in each rule of a prefix entry.
 */
#define XRL_MAX_PORT_RANGES  8

struct xrl_port_range {
	__u16 lo, hi;     /* host order, lo <= hi */
};

/*
 * A limit rule's algorithm (--algo): the token bucket (GCRA, xrl_bucket.h)
 * or one of the window algorithms of xrl_algo.h, whose rate is a count per
 * UTC-aligned window of 1 s, 1 min or 1 h.
 */
enum xrl_algo {
	XRL_ALGO_TOKEN_BUCKET   = 0,
	XRL_ALGO_FIXED_WINDOW   = 1,
	XRL_ALGO_SLIDING_WINDOW = 2,
	XRL_ALGO_SLIDING_LOG    = 3,
};

/*
 * The sliding log's per-source ring (xrl_logs, keyed by struct
 * xrl_bucket_key): a bounded log, so --algo sliding-log takes limits up to
 * XRL_LOG_MAX per window; XRL_LOG_SOURCES sources keep a log at once (LRU).
 */
#define XRL_LOG_MAX      64
#define XRL_LOG_SOURCES  16384

struct xrl_log {
	__u64 slot[XRL_LOG_MAX];
};

/* Malformed-packet policy, fixed at load time. */
enum xrl_malformed_policy {
	XRL_MALFORMED_PASS = 0,
	XRL_MALFORMED_DROP = 1,
};

/*
 * One dimension (packets or bytes) of a rule's token bucket, compiled for
 * GCRA arithmetic. Time is measured in units of 2^shift ns (shift may be
 * negative: fractions of a ns), chosen per rule so that the emission
 * interval has 21 significant bits. That keeps the rate exact to 2^-21 and
 * the burst span (burst x interval) below 2^62 for every legal rate/burst.
 */
struct xrl_gcra {
	__u64 interval;   /* units one token is worth */
	__u64 span;       /* burst x interval: how far ahead of now the TAT may run */
	__u64 full_ns;    /* an untouched bucket is full after this many ns */
	__s32 shift;      /* unit = 2^shift ns */
	__u32 _pad;
};

/* A rule as the data path needs it: match fields, action, bucket. */
struct xrl_rule {
	__u32 id;         /* index into xrl_rule_stats */
	__u32 version;    /* changes with any parameter of the rule: its buckets restart full */
	__u8  action;     /* enum xrl_action */
	__u8  flags;      /* XRL_F_* */
	__u8  proto;      /* IPPROTO_* when XRL_F_PROTO */
	__u8  per_len;    /* aggregation prefix length for the bucket key */
	__u16 dport;      /* host order, when XRL_F_DPORT */
	__u8  coarse;     /* decide with the jiffy clock: the burst holds >= 3 ticks of refill */
	__u8  algo;       /* enum xrl_algo */
	struct xrl_gcra pkt;
	struct xrl_gcra byte;  /* used when XRL_F_BYTES */
	struct xrl_gcra newsrc;  /* sources given a bucket, when XRL_F_NEWSRC */
	struct xrl_gcra total;   /* the rule's aggregate cap, when XRL_F_TOTAL */
	__u32 total_batch;       /* tokens a CPU takes from the shared cap word at once */
	__u32 policy;            /* XRL_P_* */
	/* --algo */
	__u64 win_ns;            /* window algorithms: the window's length */
	__u32 win_limit;         /* packets per window */
	/* XRL_F_MORE: the port set (nports > 0) and the destination prefix (dst_len > 0) */
	__u8  nports;            /* ranges in ports[] */
	__u8  dst_len;           /* --dst prefix length, 1..32 or 1..128 (the rule's family) */
	__u16 _pad3;
	/* --shadow, --block */
	__u64 block_ns;          /* --block: how long a source over its limit is dropped entirely */
	__u32 dst[4];            /* --dst, network order, masked to dst_len; IPv4 in dst[0] */
	struct xrl_port_range ports[XRL_MAX_PORT_RANGES];   /* --dport set, normal form */
};

/*
 * A budget: a GCRA word of a whole rule on this host (taken by
 * xrl_budget_take, bpf/xrl_budget.h): the new-source budget
 * (--new-sources) in xrl_newsrc[rule id], taken by compare-and-swap only by
 * a packet whose source has no bucket, so established sources never touch
 * it; and the shared word of the aggregate cap (--total) in xrl_total[rule
 * id], from which CPUs take batches of tokens (xrl_total_local). A new rule
 * version restarts it full: the version it was computed for is claimed by
 * compare-and-swap first, then the word is written.
 */
struct xrl_budget {
	__u64 tat;        /* GCRA theoretical arrival time, units of the budget's xrl_gcra (newsrc or total) */
	__u64 last_ns;    /* clock at the last admission from the word */
	__u32 version;    /* rule version tat was computed for */
	__u32 _pad;
};

/* A CPU's batch of aggregate-cap tokens (xrl_total_local[rule id], per CPU). */
struct xrl_total_local {
	__u64 tokens;     /* taken from xrl_total, not spent yet */
	__u32 version;    /* rule version they were taken for: others are discarded */
	__u32 _pad;
};

/*
 * Value of the LPM tries: the rules of the most specific prefix, most
 * specific match first, followed by the rules inherited from enclosing
 * prefixes, so one lookup and a short scan find the right rule.
 */
struct xrl_prefix_entry {
	__u32 count;
	__u32 _pad;
	struct xrl_rule rules[XRL_MAX_MATCH];
};

/*
 * The per-CPU rule caches (one per family): which rule a source resolved
 * to in a generation, so a source seen again skips the LPM walk (the costliest
 * step of a one-source decision). Only a resolution that depends on the
 * source alone is kept: no rule at all, or a most specific rule that
 * matches every packet (no XRL_F_MATCH), which the scan would always pick.
 * A new generation (any rule change) makes every entry stale.
 */
#define XRL_RULE_CACHE_BITS  10
#define XRL_RULE_CACHE_SLOTS (1u << XRL_RULE_CACHE_BITS)

enum xrl_rule_cache_state {
	XRL_RC_EMPTY = 0, /* nothing stored (its rule looks past the source): walk */
	XRL_RC_RULE,      /* rule holds the source's rule */
	XRL_RC_NONE,      /* no rule for the source */
};

struct xrl_rule_cache {
	__u32 addr[4];    /* the source, network order; IPv4 in addr[0] */
	__u32 gen;        /* the generation it was resolved in */
	__u32 state;      /* enum xrl_rule_cache_state */
	struct xrl_rule rule;
};

/*
 * A parsed packet (xrl_parse.h) as the rule match (xrl_match.h) reads it.
 */
/* What a packet with a source does not show (xrl_pkt.unknown, set from the result). */
#define XRL_UNK_L4    0x01   /* no dport, no flags */
#define XRL_UNK_PROTO 0x02   /* no L4 protocol either */

/* A packet's destination, for --dst (xrl_match.h reads it apart from the rest). */
struct xrl_pkt_dst {
	__u32 addr[4];    /* network order, as xrl_pkt.saddr */
	/*
	 * 1: judged as IPv4 (an IPv4-mapped source) but sent to an IPv6
	 * destination that is not mapped: no IPv4 --dst holds it.
	 */
	__u32 not4;
};

struct xrl_pkt {
	__u32 saddr[4];   /* network order; IPv4 in saddr[0] */
	__u32 family;     /* 4 or 6 */
	__u16 dport;      /* host order, valid when has_l4 */
	__u8  proto;      /* L4 protocol (after IPv6 extension headers) */
	__u8  has_l4;     /* L4 header parsed (not a later fragment) */
	__u8  tcp_flags;
	__u8  unknown;    /* XRL_UNK_*: fields it does not show (set by the caller) */
	__u16 _pad;
	struct xrl_pkt_dst dst;
};

#define XRL_TCP_SYN 0x02
#define XRL_TCP_RST 0x04
#define XRL_TCP_ACK 0x10

/*
 * The kernel's TCP socket states (enum of include/net/tcp_states.h, which
 * BPF objects cannot include), as bpf_sock->state shows them.
 */
#define XRL_TCP_ESTABLISHED  1
#define XRL_TCP_SYN_SENT     2
#define XRL_TCP_SYN_RECV     3
#define XRL_TCP_FIN_WAIT1    4
#define XRL_TCP_FIN_WAIT2    5
#define XRL_TCP_TIME_WAIT    6
#define XRL_TCP_CLOSE        7
#define XRL_TCP_CLOSE_WAIT   8
#define XRL_TCP_LAST_ACK     9
#define XRL_TCP_LISTEN       10
#define XRL_TCP_CLOSING      11
#define XRL_TCP_NEW_SYN_RECV 12   /* a request socket (a SYN answered, no ACK yet) */

/*
 * LPM keys carry the parity of the rule-set generation (gen & 1) before the
 * address: each trie holds the set in force and, under the other parity,
 * the one before it, where a change writes the next set (only the entries
 * that differ from the one two generations back) and switches it in with
 * one store.
 */
struct xrl_lpm_v4 {
	__u32 prefixlen;  /* 32 (parity) + address prefix length */
	__u32 gen;        /* generation & 1 */
	__u8  addr[4];
};

struct xrl_lpm_v6 {
	__u32 prefixlen;  /* 32 (parity) + address prefix length */
	__u32 gen;        /* generation & 1 */
	__u8  addr[16];
};

/* A source as the controller and the drop sketch name it, either family. */
struct xrl_bucket_key {
	__u32 rule_id;
	__u32 family;     /* 4 or 6: keeps 10.0.0.0 and ::a00:0 apart */
	__u32 addr[4];    /* network order; IPv4 uses addr[0] */
};

/*
 * The bucket tables (xrl_buckets_v4, xrl_buckets_v6): arrays of sets of
 * whole cache lines (page-aligned, as BPF_F_MMAPABLE arrays are): 8 IPv4
 * entries of 40 bytes in 320, or 4 IPv6 entries of 56 bytes in 256. A source's set is
 * chosen by a hash of (rule, masked address); lookup scans the set's ways,
 * so its cost does not grow with the number of sources. An entry is its key
 * word and its state in place:
 *
 *   key word: bit 63 valid, bit 62 busy (being written by an insert, which
 *   keeps the source's rule and address bits: xrl_key_busy), bits
 *   44..61 the rule version the state was computed for (low 18 bits), bits
 *   32..43 the rule id, bits 0..31 the IPv4 address (network order) or, for
 *   IPv6, a 32-bit hash of the address, whose 16 bytes follow the entry's state
 *   (the match compares all of them: no two sources ever share an entry).
 *
 * The version does not take part in the match: an entry of an older
 * version is the same source's bucket, decided as fresh (full): a changed
 * rule's sources restart with a full burst.
 * An insert claims a way by compare-and-swap of its key word to busy,
 * writes the state, then publishes the key; see docs/DESIGN.md for the
 * replacement policy. The 32-byte state is the per-source payload of an
 * algorithm: today the GCRA words; a window algorithm stores its counters
 * in the same 32 bytes.
 */
#define XRL_WAYS4        8
#define XRL_WAYS6        4
#define XRL_KEY_VALID    (1ull << 63)
#define XRL_KEY_BUSY     (1ull << 62)
#define XRL_KEY_VER_SHIFT 44
#define XRL_KEY_VER_BITS 18
#define XRL_KEY_VER_MASK (((1ull << XRL_KEY_VER_BITS) - 1) << XRL_KEY_VER_SHIFT)
#define XRL_KEY_RULE_SHIFT 32   /* 12 bits: rule ids are below XRL_MAX_RULES (4096) */

struct xrl_bstate {
	__u64 tat;        /* packet GCRA theoretical arrival time, rule units */
	__u64 tat_bytes;  /* byte GCRA theoretical arrival time */
	__u64 last_ns;    /* clock at the last admission (or at the insert) */
	__u32 passed;     /* packets admitted (written with the tat, never on drops) */
	__u32 seen;       /* last sighting: tick stamp, bit 0 looked up after its insert (xrl_seen_word) */
};

/* An entry: key word and state; an IPv6 entry has its address after these. */
struct xrl_entry {
	__u64 key;
	struct xrl_bstate st;
};

struct xrl_slot6 {
	struct xrl_entry e;
	__u32 addr[4];    /* network order, masked to the rule's /per */
};

#define XRL_SET4_PAD ((64 - (XRL_WAYS4 * 40) % 64) % 64)
struct xrl_set4 {
	struct xrl_entry w[XRL_WAYS4];
#if XRL_SET4_PAD
	__u8 _pad[XRL_SET4_PAD];
#endif
};

struct xrl_set6 {
	struct xrl_slot6 w[XRL_WAYS6];
	__u64 _spare[4];
};

/*
 * Per-CPU heavy-hitter sketch of dropped sources, for `xrl top`. A slot is
 * chosen by a hash of the bucket key; the source in it counts up, another
 * source hashing there counts it down and takes the slot at zero (one
 * Misra-Gries counter per slot), so a flooding source keeps its slot while
 * a random-source flood only churns the slots it lands in. Per CPU, so the
 * drop path writes no shared cache line; sampled (every XRL_SKETCH_SAMPLE-th
 * drop of the CPU, whichever source it is), so a flood pays for it on one
 * drop in 8: counts are estimates. Alone on a CPU a source is counted to
 * within 8; several sources dropping in a regular interleaving can alias
 * with the sampling and be over- or under-counted (seen: 10 %).
 */
#define XRL_SKETCH_BITS  12
#define XRL_SKETCH_SLOTS (1u << XRL_SKETCH_BITS)
#define XRL_SKETCH_SAMPLE 8   /* one drop in 8 per CPU updates the sketch, with weight 8 */
struct xrl_sketch_slot {
	struct xrl_bucket_key key;
	__u32 _pad;
	__u64 dropped;    /* drops while holding the slot, minus decrements */
	__u64 total;      /* drops counted for this key since it took the slot */
	__u64 last_ns;    /* CLOCK_MONOTONIC of the last drop */
};

/*
 * Busy clients (xrl_busy.h): a source a --syn rule limits lately, and
 * whether established TCP came from it since. xrl_busy is a shared array
 * of XRL_BUSY_SLOTS slots, one cache line each, chosen by a keyed hash of
 * the source's address (IPv4 whole, IPv6 its /64): the sampled drop that
 * notes a limited source (1 in XRL_LIMITED_SAMPLE per CPU) records it; a
 * segment with ACK and neither SYN nor RST from its address stamps seen_ns
 * and, when the kernel has an established connection for the segment,
 * proven_ns, each at most once per XRL_BUSY_TOUCH_NS. xrl_busy_on[0] is the
 * gate: the time of the latest record, 0 once a window passed without one,
 * so the per-packet cost while no --syn rule limits anything is one load.
 */
#define XRL_BUSY_BITS 10
#define XRL_BUSY_SLOTS (1u << XRL_BUSY_BITS)
#define XRL_BUSY_WINDOW_NS (10ull * 1000000000ull)   /* a record and a mark hold this long */
#define XRL_BUSY_TOUCH_NS 100000000ull               /* each stamp is rewritten at most every 100 ms */
struct xrl_busy_slot {
	struct xrl_bucket_key key;   /* the limited source: its --syn rule, address masked to its /per */
	__u32 per_len;    /* the rule's /per: an address is the source's when masked to it */
	__u32 _pad;
	__u64 syn_ns;     /* its latest recorded SYN drop (0: free) */
	__u64 seen_ns;    /* latest established-looking segment from it: a sighting */
	__u64 proven_ns;  /* latest such segment of a connection the kernel has established */
	__u64 tried_ns;   /* latest look for that connection */
};

/* Per-rule counters, per CPU. */
struct xrl_rule_stats {
	__u64 passed;
	__u64 passed_bytes;
	__u64 dropped;
	__u64 dropped_bytes;
	__u64 new_refused;    /* sources refused a bucket by the new-source budget (also in dropped) */
	__u64 total_refused;  /* packets within their source's limit refused by the cap (--total; also in dropped) */
	__u64 created;        /* buckets inserted for this rule's sources (its share of sources_created) */
	/* --shadow, --block */
	__u64 shadow_dropped;       /* packets a shadow rule would have dropped: passed */
	__u64 shadow_dropped_bytes;
	__u64 blocked;        /* packets of sources in the penalty box (also in dropped, or shadow_dropped) */
	/* --syn-proxy */
	__u64 synack_sent;    /* SYNs of unproven sources answered with a cookie SYN-ACK (XDP_TX) */
	__u64 proven;         /* ACKs that returned a valid cookie: handshakes proven */
	__u64 bad_cookie;     /* ACKs (or other segments) of unproven sources with no valid cookie and no socket: dropped */
};

/* Global counters, per CPU. */
struct xrl_global_stats {
	__u64 packets;        /* every frame the program saw */
	__u64 bytes;
	__u64 dropped;        /* every frame dropped, for whatever reason */
	__u64 dropped_bytes;
	__u64 non_ip;         /* passed untouched */
	__u64 no_rule;        /* IP with no matching rule: passed */
	__u64 malformed;      /* truncated or invalid IP, handled by policy */
	__u64 sources_created;  /* buckets inserted; evictions = created - live */
	__u64 insert_failed;    /* bucket could not be created: packet decided without state */
	__u64 cas_contended;    /* admission lost the CAS race too often: dropped */
	__u64 events;           /* limit events written to the ring buffer */
	__u64 events_suppressed;  /* limit events over the in-kernel bound, or ring full */
	__u64 evicted_seen;     /* inserts that replaced an entry looked up after its insert's tick */
	__u64 malformed_judged;   /* malformed with a readable source: judged by the rules (policy pass) */
	__u64 vlan_deep;          /* more than XRL_MAX_VLAN tags: dropped whatever the policy */
};

/* Runtime knobs and instance settings in the single-entry xrl_config array. */
struct xrl_config {
	__u32 active_gen;       /* generation of the LPM entries in force */
	__u32 next_version;     /* source of xrl_rule.version values */
	__u32 malformed_policy; /* what the loaded program was built with */
	__u32 jiffy_off_set;    /* jiffy_off holds a calibration */
	/*
	 * Jiffy clock: jiffies x tick_ns + jiffy_off estimates CLOCK_MONOTONIC,
	 * never ahead of it and two ticks behind at most, plus the kernel's
	 * lateness in advancing jiffies (a fraction of a tick:
	 * XRL_JIFFY_LAG_TICKS). The data path keeps jiffy_off at the lowest
	 * (exact time - jiffies x tick) it has seen, minus one tick; tick_ns is
	 * set by the controller.
	 */
	__u64 tick_ns;
	__u64 jiffy_off;
	__u64 event_tat;        /* GCRA word of the in-kernel bound on limit events */
	__u32 sets_v4;          /* sets of xrl_buckets_v4 (its max_entries), written by xrl_config_init */
	__u32 sets_v6;
	/*
	 * The set hash's secret key (xrl_table_hash4): 64 bits from getrandom(2)
	 * when the instance is made, kept while it is pinned, never printed.
	 * Next to sets_v4, in the first 64 bytes with the other fields every
	 * packet reads (active_gen, sets_v4, rc_short).
	 */
	__u64 hash_seed;
	/*
	 * Rule cache granule per generation parity (XRL_RC_SHORT_*): how many
	 * trailing address bits no rule prefix of that generation looks at
	 * (32 - longest IPv4 prefix, 128 - longest IPv6 prefix). Sources equal
	 * but for those bits lie in the same prefixes, so they resolve to the
	 * same rules and share a rule-cache entry; 0 (unset) keys it by the
	 * whole source. Written for generation g+1 before the switch to it.
	 */
	__u32 rc_short[2];
	/* --algo */
	__u64 rt_off_ns;        /* CLOCK_REALTIME - CLOCK_MONOTONIC: windows align to UTC */
	/*
	 * XRL_TABLE_FORMAT of the build that made the instance: how a source's
	 * set and way are found (the set hash, the preferred way), and what the
	 * LPM keys hold. Two builds that disagree would give one source two
	 * entries, or not find the rules the other wrote, so an instance of
	 * another format is refused as one of another layout is.
	 */
	__u32 table_format;
	/*
	 * 0: the LPM entries of the parity not in force hold whole the set
	 * its half of xrl_rule_defs describes (the empty set at first), so a
	 * change writes only what differs from it;
	 * 1: a change stopped while writing them, so the next one clears and
	 * rewrites them. Set before that parity is written, cleared in the
	 * store that switches to it.
	 */
	__u32 spare_dirty;
	/*
	 * --syn-proxy: the SipHash key of the SYN cookies (xrl_synproxy.h),
	 * 128 bits from getrandom(2) when the instance is made, kept while it
	 * is pinned, never printed.
	 */
	__u64 cookie_key[2];
	/*
	 * The host values the LPM entries were compiled with: a rule's
	 * total_batch depends on the CPU count (xrl_cpus), its coarse flag on
	 * the coarse clock's tick. Written in the store that switches
	 * generations (and by xrl_config_init, for the empty set); a change
	 * that finds the host's values differ writes both parities whole.
	 */
	__u32 compiled_cpus;
	__u32 compiled_tick_ns;
};
/*
 * Bump when xrl_table.h changes which set or way a source maps to, or how
 * an entry's words are read (3: keyed by hash_seed; 4: seen is a last-seen
 * stamp, the replacement policy least recently seen), or what the LPM keys
 * mean (5: the generation's parity, not the generation).
 */
#define XRL_TABLE_FORMAT 5
#define XRL_RC_SHORT_V4(w) ((w) & 0xff)
#define XRL_RC_SHORT_V6(w) (((w) >> 8) & 0xff)

/*
 * A rule as the operator wrote it, kept in the pinned xrl_rule_defs array
 * so that every xrl invocation sees the whole rule set without a daemon.
 * The data path never reads it. The array holds one copy of the rule set
 * per generation parity, as the LPM keys carry their parity: rule id
 * id of generation gen is at XRL_RULE_DEFS_SLOT(gen, id). A rule change
 * writes the ids of the next generation's half that differ, then switches
 * xrl_config.active_gen, so the definitions and the data path's set change
 * in the same store: a change killed at any point leaves both old, or both
 * new.
 */
#define XRL_RULE_DEFS_SLOT(gen, id) ((((gen) & 1u) * XRL_MAX_RULES) + (id))

struct xrl_rule_def {
	__u8  in_use;
	__u8  family;       /* 4 or 6 */
	__u8  plen;         /* prefix length */
	__u8  action;       /* enum xrl_action */
	__u8  flags;        /* XRL_F_* */
	__u8  proto;
	__u8  per_len;
	__u8  algo;         /* enum xrl_algo */
	__u16 dport;
	__u16 policy;       /* XRL_P_* */
	__u32 version;
	__u8  addr[16];     /* network order, masked to plen */
	__u64 rate;         /* packets per rate_period seconds */
	__u32 rate_period;  /* 1, 60 or 3600 */
	__u32 burst;        /* packets */
	__u64 byte_rate;    /* bytes per second, when XRL_F_BYTES */
	__u64 byte_burst;   /* bytes */
	__u64 new_rate;     /* new sources per new_period seconds, when XRL_F_NEWSRC */
	__u32 new_period;   /* 1, 60 or 3600 */
	__u32 new_burst;    /* new sources at once */
	__u64 total_rate;   /* packets of all sources together per total_period seconds, when XRL_F_TOTAL */
	__u32 total_period; /* 1, 60 or 3600 */
	__u32 total_burst;  /* packets */
	/* --shadow, --block */
	__u64 block_ns;     /* --block DURATION, ns */
	/*
	 * --dport's set (with XRL_F_DPORT: nports >= 1, normal form; one port
	 * is ports[0] = {dport, dport}) and --dst (dst_len > 0)
	 */
	__u8  nports;
	__u8  dst_len;
	__u8  dst[16];      /* network order, masked to dst_len; the rule's family */
	__u16 _pad_m;
	struct xrl_port_range ports[XRL_MAX_PORT_RANGES];
};

/*
 * One interface an instance is attached to (xrl_ifaces, keyed by ifindex).
 * An ifindex names an interface only within its network namespace: the
 * namespace is recorded with it, so that xrl run from another namespace
 * neither takes that namespace's interface with the same ifindex for it
 * nor removes a record (and with the last one the pins) whose program is
 * still attached there.
 */
struct xrl_iface {
	char  name[16];     /* IFNAMSIZ: detach works even after the interface is gone */
	__u32 prog_id;
	__u8  mode;         /* enum xdp_attach_mode of libxdp */
	__u8  multiprog;    /* 1: inside libxdp's dispatcher; 0: attached alone */
	__u8  tc;           /* XRL_TC_*: the --syn-proxy completion program's tc state there */
	__u8  _pad;
	__u64 netns_cookie; /* SO_NETNS_COOKIE of its namespace (never reused); 0: the reader's */
	__u32 netns_ino;    /* inode of its namespace (/proc/PID/ns/net): where to find it */
	__u32 _pad2;
};

/*
 * --syn-proxy's filter of proven sources (xrl_proven): one bit per hash of
 * (rule, source), set when a source proves itself (or is found with a
 * connection of the kernel's). A SYN whose bit is clear is a new source's
 * for sure and is answered without a look at the bucket table (whose
 * random access is most of a spoofed SYN's cost); a set bit sends it to the
 * table, which decides. Bits are never cleared: with n sources proven,
 * about n / XRL_PROVEN_BITS of new sources' SYNs also look at the table.
 */
#define XRL_PROVEN_BITS  (1u << 20)   /* 128 KiB */
#define XRL_PROVEN_WORDS (XRL_PROVEN_BITS / 64)

/* xrl_iface.tc: what attach did at tc ingress, so detach undoes just that. */
#define XRL_TC_FILTER 0x01   /* xrl's tc filter (bpf/xrl_tc.bpf.c) is attached */
#define XRL_TC_QDISC  0x02   /* xrl created the clsact qdisc: detach removes it */

/*
 * What the XDP program tells the tc program about an ACK whose cookie it
 * found valid, in the frame's metadata (bpf_xdp_adjust_meta): the options
 * the cookie carried, in the layout of the kernel's struct
 * bpf_tcp_req_attrs (given to bpf_sk_assign_tcp_reqsk as it is).
 */
#define XRL_SP_META_MAGIC 0x78726c53u   /* "xrlS" */
struct xrl_sp_attrs {
	__u32 rcv_tsval;
	__u32 rcv_tsecr;
	__u16 mss;
	__u8  rcv_wscale;
	__u8  snd_wscale;
	__u8  ecn_ok;
	__u8  wscale_ok;
	__u8  sack_ok;
	__u8  tstamp_ok;
	__u8  usec_ts_ok;
	__u8  reserved[3];
};
_Static_assert(sizeof(struct xrl_sp_attrs) == 20, "the kernel's struct bpf_tcp_req_attrs is 20 bytes");
struct xrl_sp_meta {
	__u32 magic;
	__u32 _pad;
	struct xrl_sp_attrs attrs;
};

/* The tc program's outcomes (its xrl_tc_counts, per CPU). */
enum xrl_tc_count {
	XRL_TC_ASSIGNED = 0,   /* the kernel was given the connection's request socket */
	XRL_TC_FAILED,         /* bpf_sk_assign_tcp_reqsk refused (a listener sysctl disables an option) */
	XRL_TC_NO_LISTENER,    /* a proven ACK for a port nobody listens on: the kernel resets it */
	XRL_TC_EXISTS,         /* the connection exists already */
	XRL_TC_NCOUNT,
};

#define XRL_MAX_IFACES 64

/*
 * Limit events. The data path writes one to the xrl_events ring buffer when
 * a source of a limit rule starts being dropped (noticed on one drop in
 * XRL_LIMITED_SAMPLE of the CPU, so a flood is seen within a few dozen
 * drops and the drop path pays a lookup on 1 drop in 64), and records the
 * source in xrl_limited; the daemon logs it, and logs the source back under
 * its limit once no drop was seen for a quiet period, then deletes the
 * entry, which re-arms the event. Events are bounded in the kernel, so a
 * random-source flood cannot flood the log: XRL_EVENTS_PER_SEC on average,
 * bursts of XRL_EVENTS_BURST; the rest are counted as suppressed.
 */
#define XRL_LIMITED_SAMPLE 64  /* a power of 2, multiple of XRL_SKETCH_SAMPLE */
#define XRL_EVENTS_PER_SEC 100
#define XRL_EVENTS_BURST   100
#define XRL_EVENTS_RING    (256 * 1024)
#define XRL_LIMITED_SOURCES 16384
#define XRL_LIMITED_TOUCH_NS 100000000ull   /* last_drop_ns is refreshed at most every 100 ms */

enum xrl_event_type {
	XRL_EV_LIMITED = 1,
	XRL_EV_BLOCKED = 2,   /* a source of a --block rule put in the penalty box (not sampled) */
};

struct xrl_event {
	__u32 type;        /* enum xrl_event_type */
	__u32 _pad;
	__u64 time_ns;     /* CLOCK_MONOTONIC (or the jiffy clock: up to XRL_JIFFY_LAG_TICKS behind) */
	struct xrl_bucket_key key;
	__u32 _pad2;
	/* --shadow, --block */
	__u64 until_ns;       /* XRL_EV_BLOCKED: the end of the block */
	__u64 prev_until_ns;  /* XRL_EV_BLOCKED: an earlier block of the source that ended then, unlogged */
	__u32 policy;         /* the rule's XRL_P_*: a shadow rule's events are shadow */
	__u32 _pad3;
};

/*
 * The penalty box (--block): a source of a --block rule that exceeds its
 * limit gets an entry here, keyed as its bucket, and every packet of it is
 * dropped until until_ns, counted from that first drop (a persistent abuser
 * gets its burst through once per DURATION, then is blocked again; blocked
 * packets are only read against the entry, never written). Only --block
 * rules look it up. An entry at or past until_ns holds nothing: the daemon
 * logs it released and deletes it; `xrl block del` releases one early by
 * setting until_ns to the present (released = 1). A block holds only for
 * the rule version it started under (any change of the rule, as its
 * buckets restart full, releases its blocks; a deleted rule's id reused
 * by another holds none). LRU: a live block is looked up by each of its
 * packets, so the stale ones go first.
 */
#define XRL_BLOCKED_SOURCES 65536
struct xrl_block {
	__u64 since_ns;    /* CLOCK_MONOTONIC of the drop that started it */
	__u64 until_ns;    /* CLOCK_MONOTONIC; from then on the source is judged by its bucket again */
	__u32 released;    /* 1: ended early by `xrl block del` */
	__u32 policy;      /* the rule's XRL_P_* when it started (shadow: counted, not dropped) */
	__u32 version;     /* the rule version it started under: a changed rule holds no old block */
	__u32 _pad;
};

/* A source being limited: xrl_limited, created by the data path, deleted by the daemon. */
struct xrl_limited {
	__u64 since_ns;      /* its first sampled drop */
	__u64 last_drop_ns;  /* a recent sampled drop (refreshed at most every 100 ms) */
};

/*
 * Fleet-wide (--global) rules. The data path never talks to Redis: it counts
 * what it admits per (rule, source) in xrl_fleet_used, and the daemon turns
 * the fleet's usage into a floor under the source's TAT in xrl_fleet_floor.
 * Each map has one writer (data path or daemon), so neither can lose the
 * other's update. Everything the daemon writes carries an expiry time, so
 * a daemon that dies leaves plain local limits behind within a few rounds.
 */
#define XRL_FLEET_SOURCES 131072   /* global (rule, source) pairs tracked per host */

enum xrl_fleet_mode {
	XRL_FLEET_FLOOR  = 0,   /* use the floors (Redis up, or the daemon's local share) */
	XRL_FLEET_OPEN   = 1,   /* ignore floors: the rule limits at its local rate only */
	XRL_FLEET_CLOSED = 2,   /* drop everything the rule matches */
};

/* xrl_fleet_rules[rule id], written by the daemon. */
struct xrl_fleet_rule {
	__u32 mode;        /* enum xrl_fleet_mode */
	__u32 hosts;       /* hosts running the rule when Redis last answered (daemon only) */
	__u64 until_ns;    /* CLOCK_MONOTONIC; past it the mode is FLOOR again */
	__u32 share_ppm;   /* this host's last known share of the budget, parts per million */
	__u32 _pad;
};

/*
 * Demand and admissions of one global (rule, source) on this host: written
 * by the data path only. Drops are sampled (one in XRL_FLEET_DROP_SAMPLE
 * of the CPU's drops adds that many), so a flood costs an atomic add on a
 * shared line once in 8 drops; the demand only sets shares, it need not
 * be exact.
 */
#define XRL_FLEET_DROP_SAMPLE 8
struct xrl_fleet_used {
	__u64 passed;      /* packets admitted, added atomically */
	__u64 born_ns;     /* creation time: tells the daemon a re-created entry */
	__u64 dropped;     /* packets refused, sampled */
};

/* The fleet's view of one global (rule, source): written by the daemon only. */
struct xrl_fleet_floor {
	__u64 until_ns;    /* CLOCK_MONOTONIC time the local TAT may not be below */
	__u64 pushed;      /* xrl_fleet_used.passed already reported: a restarted daemon resumes here */
	__u64 born_ns;     /* the xrl_fleet_used.born_ns that pushed refers to */
	__u64 seen;        /* passed + dropped when the demand was last reported */
	__u64 demand_ns;   /* when it was */
	__u64 share_ns;    /* this host's own TAT at its share of the rate (daemon's GCRA) */
	__u32 share_ppm;   /* this host's share of the source's demand, when Redis last said */
	__u32 live;        /* hosts that reported demand for the source then */
	/*
	 * --algo: a global window rule's fleet counts, from Redis' window
	 * counters: the other hosts' admissions in window win_idx (UTC-aligned)
	 * and in the one before; and (daemon only) this host's own in them.
	 */
	__u64 win_idx;
	__u32 win_others;
	__u32 win_others_prev;
	__u64 win_own;
	__u64 win_own_prev;
	/*
	 * --algo sliding-log --global: the other hosts' admissions still in the
	 * window (Redis' sorted set of round reports) as the daemon last had them,
	 * until log_leave_ns (CLOCK_MONOTONIC) when the oldest of them leaves it;
	 * log_after from then on.
	 */
	__u64 log_leave_ns;
	__u32 log_others;
	__u32 log_after;
};

/*
 * Escalation (xrl http --escalate RATE --block DURATION): an address the
 * request layer refused more than RATE times in a second is dropped at XDP,
 * by every packet of it the instance sees, whatever rule it would meet, until
 * until_ns. The entry is keyed by the address alone (instance-wide, checked
 * before the rule lookup) and carries its reason for `xrl block list`. It is
 * written by xrl http through the library (xrl_escalate.h); `xrl block del`
 * deletes it; an entry at or past until_ns holds nothing (LRU: stale ones go
 * first). The data path looks the map up only when xrl_esc_on[0] is set (the
 * library sets it with the first escalation), so an instance without
 * escalations pays one array load per packet.
 */
#define XRL_ESCALATED_SOURCES 16384
#define XRL_ESC_RULE_LEN 64
struct xrl_esc_key {
	__u32 family;     /* 4 or 6 */
	__u32 addr[4];    /* network order; IPv4 uses addr[0], the rest 0 */
};

struct xrl_escalation {
	__u64 since_ns;    /* CLOCK_MONOTONIC of the escalation */
	__u64 until_ns;    /* CLOCK_MONOTONIC; from then on the address is judged by the rules again */
	__u64 dropped;     /* packets dropped by it at XDP (added atomically) */
	__u32 refusals;    /* refusals in the second that escalated it */
	__u32 rate;        /* the request rule's --escalate RATE */
	char rule[XRL_ESC_RULE_LEN];   /* the request rule's name, NUL-terminated */
};

#endif /* XRL_COMMON_H */
