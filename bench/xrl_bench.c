// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xrl_bench: what one rate-limit decision costs, in ns per packet, measured
 * with BPF_PROG_TEST_RUN on this machine, side by side with the floor (an
 * XDP program that only drops) and with the kernel clock helpers.
 *
 *   build/xrl_bench [--repeat N] [--runs K] [--sources S] [--passes P] [--max-sources N]
 *                   [--cpu C] [--json] [--json-out FILE]
 *
 * Every figure is the median of K runs. One run is one bpf_prog_test_run
 * call that executes the program N times on one frame; its cost per packet
 * is the thread's CPU time over the call divided by N (the kernel's own
 * duration field is the same mean but truncated to whole ns; the JSON output
 * carries both). Single-frame cases are measured round robin, run 1 of every
 * case, then run 2, ..., so a burst of load elsewhere on the machine hits all
 * cases alike.
 *
 * Many sources: BPF_PROG_TEST_RUN repeats one frame, so the source-walk
 * program of xrl_clock.bpf.c rewrites the IPv4 source of the frame from an
 * address list before it tail-calls the production xrl program. With S
 * addresses in the list (default 1,000,000 in 10.0.0.0/12, a rule with
 * --per 32 over that /12) the bucket table (--max-sources, default
 * 1,048,576 entries in sets of 8 IPv4 ways) is filled with one pass in one
 * random order, then timed passes visit the same
 * sources in a second, independent random order, so bucket lookups hit
 * existing buckets at random places of the table. The same wrapper, with
 * every entry of the list set to one source, gives the one-source figure
 * with identical wrapper work; the wrapper's own cost (wrapper + tail call
 * into the bare drop program, minus bare drop) is also measured, so the
 * net 1M-source decision cost can be set against the direct one-source case.
 * Counters prove the setup: the fill creates exactly S buckets, timing
 * creates none (no eviction: every timed lookup finds its bucket), and S
 * buckets are live at the end.
 *
 * To tell the xrl logic from the table it reads, the same walk also drives
 * xrl_clock.bpf.c's probe programs, which only look a key of the same
 * sources up in other table shapes of the same size (an LRU hash, a
 * preallocated hash, a direct-mapped array), with and without a
 * bpf_ktime_get_ns() call first: what the set table saves over each.
 *
 * The process stays on one CPU (--cpu, default the one it starts on).
 * Defaults (repeat 10,000,000, 5 runs, 1,000,000 sources, 2 passes) take
 * about 80 s on a 2-CPU VM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xrl_testlib.h"
#include "xrl_rule.h"
#include "xrl.skel.h"
#include "xrl_test.skel.h"
#include "xrl_drop.skel.h"
#include "xrl_clock.skel.h"
#include "xrl_table.h"

#define MAX_RUNS        99
#define MAX_SRCS        (1u << 20)   /* size of xrl_bench_srcs */
#define SRC_BASE        0x0a000000u  /* 10.0.0.0: sources are 10.0.0.0 + i, inside 10.0.0.0/12 */
#define TARGET_SOURCES  2.0          /* 1M-source cost at most 2x the one-source cost */
#define TARGET_OVER     5.0          /* over-limit cost at most 5x bare XDP_DROP */

static unsigned long long bucket_map_bytes;   /* memlock of the many-source bucket map */

static const char *const verdict_names[] = { "ABORTED", "DROP", "PASS", "TX", "REDIRECT" };

static const char *verdict_name(int v)
{
	if (v == -1)
		return "DROP*";   /* drops, but a re-inserted source's first packet passes */
	return v >= 0 && v <= 4 ? verdict_names[v] : "?";
}

/* One line of the table. */
struct bcase {
	const char *id;       /* JSON key */
	const char *label;    /* table text */
	int prog_fd;
	__u8 pkt[256];
	size_t len;
	int expect;           /* XDP verdict every run must end with (-1: checked by counters) */
	__u32 repeat;
	int nruns;
	double ns[MAX_RUNS];      /* thread CPU time / repeat */
	__u32 kern_ns[MAX_RUNS];  /* the kernel's duration field */
	double med, min, max;
};

enum {
	C_DROP, C_CLK_KTIME, C_CLK_COARSE, C_CLK_BOOT, C_CLK_JIFFIES,
	C_NONIP, C_NORULE, C_ALLOW, C_DENY, C_V4_UNDER, C_V4_OVER, C_V4_OVER_LPM, C_V6_OVER,
	C_V6_UNDER,
	C_QINQ_OVER,
	C_GLOBAL_OVER, C_GLOBAL_UNDER,
	C_TOTAL_UNDER, C_TOTAL_CAPPED, C_NEWSRC_REFUSED,
	C_FW_UNDER, C_FW_OVER, C_SW_UNDER, C_SW_OVER, C_SL_OVER,   /* --algo */
	C_BLOCK_UNDER, C_BLOCK_HELD, C_SHADOW_OVER,
	C_SYN_OVER, C_ACK_GATE, C_ACK_LIMITED,   /* a --syn rule and busy clients (xrl_busy.h) */
	C_PORT1_OVER, C_PORTSET_OVER, C_DST_OVER, C_DST6_OVER,   /* --dport, --dst */
	C_TESTCLK_OVER, C_WRAP_DROP,
	C_N_SINGLE,   /* cases above: one frame, measured round robin */
	C_OVER_MANY = C_N_SINGLE, C_OVER_ONE, C_UNDER_MANY, C_UNDER_ONE,
	C_V6_OVER_MANY, C_V6_OVER_ONE, C_V6_UNDER_MANY, C_V6_UNDER_ONE, C_INSERT,
	C_TESTCLK_MANY, C_SYN_MANY,
	C_PROBE_LRU_MANY, C_PROBE_LRU_ONE, C_PROBE_LRU_CLK_MANY, C_PROBE_HASH_MANY,
	C_PROBE_ARRAY_MANY, C_PROBE_ARRAY_CLK_MANY, C_PROBE_SET_MANY,
	C_PROBE_SET128_MANY, C_PROBE_SET64_MANY,
	C_N
};

static struct bcase cases[C_N] = {
	[C_DROP]        = { "bare_drop", "bare XDP_DROP" },
	[C_CLK_KTIME]   = { "clock_ktime_get_ns", "bpf_ktime_get_ns() + drop" },
	[C_CLK_COARSE]  = { "clock_ktime_get_coarse_ns", "bpf_ktime_get_coarse_ns() + drop" },
	[C_CLK_BOOT]    = { "clock_ktime_get_boot_ns", "bpf_ktime_get_boot_ns() + drop" },
	[C_CLK_JIFFIES] = { "clock_jiffies64", "bpf_jiffies64() + drop" },
	[C_NONIP]       = { "xrl_non_ip", "xrl: non-IP frame (ARP)" },
	[C_NORULE]      = { "xrl_no_rule", "xrl: IPv4, no rule matches" },
	[C_ALLOW]       = { "xrl_allow", "xrl: IPv4, --allow rule" },
	[C_DENY]        = { "xrl_deny", "xrl: IPv4, --deny rule" },
	[C_V4_UNDER]    = { "xrl_v4_under", "xrl: IPv4 source under limit" },
	[C_V4_OVER]     = { "xrl_v4_over", "xrl: IPv4 source over limit" },
	[C_V4_OVER_LPM] = { "xrl_v4_over_proto", "xrl: IPv4 over limit, --proto rule" },
	[C_V6_OVER]     = { "xrl_v6_over", "xrl: IPv6 source over limit" },
	[C_V6_UNDER]    = { "xrl_v6_under", "xrl: IPv6 source under limit" },
	[C_QINQ_OVER]   = { "xrl_qinq_v4_over", "xrl: QinQ IPv4 source over limit" },
	[C_GLOBAL_OVER] = { "xrl_global_v4_over", "xrl: --global rule, over (fleet floor)" },
	[C_GLOBAL_UNDER] = { "xrl_global_v4_under", "xrl: --global rule, under limit" },
	[C_TOTAL_UNDER] = { "xrl_total_v4_under", "xrl: --total rule, under both limits" },
	[C_TOTAL_CAPPED] = { "xrl_total_v4_capped", "xrl: --total rule, refused by the cap" },
	[C_NEWSRC_REFUSED] = { "xrl_newsrc_refused", "xrl: new source refused by --new-sources" },
	[C_FW_UNDER]    = { "xrl_fixed_window_v4_under", "xrl: --algo fixed-window, under limit" },
	[C_FW_OVER]     = { "xrl_fixed_window_v4_over", "xrl: --algo fixed-window, over limit" },
	[C_SW_UNDER]    = { "xrl_sliding_window_v4_under", "xrl: --algo sliding-window, under" },
	[C_SW_OVER]     = { "xrl_sliding_window_v4_over", "xrl: --algo sliding-window, over" },
	[C_SL_OVER]     = { "xrl_sliding_log_v4_over", "xrl: --algo sliding-log, over limit" },
	[C_BLOCK_UNDER] = { "xrl_block_v4_under", "xrl: --block rule, under limit" },
	[C_BLOCK_HELD]  = { "xrl_block_v4_held", "xrl: --block rule, source blocked" },
	[C_SHADOW_OVER] = { "xrl_shadow_v4_over", "xrl: --shadow rule, over limit (passed)" },
	[C_SYN_OVER]    = { "xrl_syn_v4_over", "xrl: TCP SYN over a --syn rule's limit" },
	[C_ACK_GATE]    = { "xrl_ack_busy_gate_open", "xrl: TCP ACK, no rule, a --syn rule limiting" },
	[C_ACK_LIMITED] = { "xrl_ack_busy_limited_source", "xrl: TCP ACK of the source it limits" },
	[C_PORT1_OVER]  = { "xrl_dport_one_v4_over", "xrl: --dport one port, over limit" },
	[C_PORTSET_OVER] = { "xrl_dport_set8_v4_over", "xrl: --dport set, 8th of 8 ranges, over" },
	[C_DST_OVER]    = { "xrl_dst_v4_over", "xrl: --dst /24, over limit" },
	[C_DST6_OVER]   = { "xrl_dst_v6_over", "xrl: IPv6 --dst /100 + --dport set, over" },
	[C_TESTCLK_OVER] = { "xrl_testclock_v4_over", "xrl test-clock obj: IPv4 over limit" },
	[C_WRAP_DROP]   = { "srcwalk_drop", "srcwalk + tail call -> drop" },
	[C_OVER_MANY]   = { "xrl_many_over", "xrl: %s sources over limit *" },
	[C_OVER_ONE]    = { "xrl_one_over_srcwalk", "xrl: 1 source over limit *" },
	[C_UNDER_MANY]  = { "xrl_many_under", "xrl: %s sources under limit *" },
	[C_UNDER_ONE]   = { "xrl_one_under_srcwalk", "xrl: 1 source under limit *" },
	[C_V6_OVER_MANY] = { "xrl_v6_many_over", "xrl: %s IPv6 sources over limit *" },
	[C_V6_OVER_ONE]  = { "xrl_v6_one_over_srcwalk", "xrl: 1 IPv6 source over limit *" },
	[C_V6_UNDER_MANY] = { "xrl_v6_many_under", "xrl: %s IPv6 sources under limit *" },
	[C_V6_UNDER_ONE] = { "xrl_v6_one_under_srcwalk", "xrl: 1 IPv6 source under limit *" },
	[C_INSERT]      = { "xrl_new_source_fill", "xrl: new source, bucket insert (fill) *" },
	[C_SYN_MANY]    = { "xrl_syn_many_over", "xrl: %s spoofed SYN sources, --syn rule *" },
	[C_TESTCLK_MANY] = { "xrl_testclock_many_over", "xrl test-clock obj: %s sources over *" },
	[C_PROBE_LRU_CLK_MANY] = { "probe_lru_ktime_many", "ktime + lookup, LRU hash, %s keys *" },
	[C_PROBE_LRU_MANY]   = { "probe_lru_many", "lookup only, LRU hash, %s keys *" },
	[C_PROBE_LRU_ONE]    = { "probe_lru_one", "lookup only, LRU hash, 1 key *" },
	[C_PROBE_HASH_MANY]  = { "probe_hash_many", "lookup only, hash, %s keys *" },
	[C_PROBE_ARRAY_MANY] = { "probe_array_many", "lookup only, array, %s slots *" },
	[C_PROBE_ARRAY_CLK_MANY] = { "probe_array_ktime_many", "ktime + lookup, array, %s slots *" },
	[C_PROBE_SET_MANY] = { "probe_set_many", "lookup only, xrl's set table, %s keys *" },
	[C_PROBE_SET128_MANY] = { "probe_set128_many", "lookup only, 4-way 128-B sets *" },
	[C_PROBE_SET64_MANY] = { "probe_set64_many", "lookup only, 2-way 64-B sets *" },
};

/* Rules of the production instance for the one-frame cases. */
static const char *const single_rules[] = {
	"198.51.100.0/24 --rate 10000000/s --burst 4294967295",   /* under limit: always room */
	"203.0.113.0/24 --rate 1/h --burst 1",                     /* over limit after one packet */
	"2001:db8::/32 --rate 1/h --burst 1",
	"2001:db8:1::/48 --rate 10000000/s --burst 4294967295",
	"198.18.0.0/16 --allow",
	"198.19.0.0/16 --deny",
	/* match fields: decided per packet, past the rule cache, with an LPM walk */
	"192.0.2.0/24 --proto udp --rate 1/h --burst 1",
	NULL,
};

/* The same limits fleet-wide, in an instance of their own (so the LPM trie above stays as it was). */
static const char *const global_rules[] = {
	"203.0.113.0/24 --rate 1/h --burst 1 --global",
	"198.51.100.0/24 --rate 10000000/s --burst 4294967295 --global",
	NULL,
};

/* --total and --new-sources, in an instance of their own as well. */
static const char *const cap_rules[] = {
	"198.51.100.0/24 --rate 10000000/s --burst 4294967295 --total 10000000/s --total-burst 4294967295",
	"203.0.113.0/24 --rate 10000000/s --burst 4294967295 --total 1/h --total-burst 1",
	"192.0.2.0/24 --rate 10000000/s --burst 4294967295 --new-sources 1/h --new-burst 1",
	NULL,
};

/*
 * --algo, in an instance of its own: each window algorithm under and over
 * its limit. A sliding window counts at most 1048575 per window, so its
 * under-limit case runs fewer packets per run (SW_UNDER_REPEAT); a sliding
 * log holds at most 64, too few to time an under-limit run: over only.
 */
static const char *const algo_rules[] = {
	"198.51.100.0/24 --rate 4294967295/h --algo fixed-window",
	"203.0.113.0/24 --rate 1/h --algo fixed-window",
	"192.0.2.0/24 --rate 1048575/h --algo sliding-window",
	"198.18.0.0/24 --rate 1/h --algo sliding-window",
	"198.19.0.0/24 --rate 1/h --algo sliding-log",
	NULL,
};
#define SW_UNDER_REPEAT 100000
static unsigned long long log_map_bytes;   /* memlock of xrl_logs (XRL_LOG_SOURCES rings) */

/*
 * --block and --shadow, in an instance of their own: a source under its
 * limit of a --block rule (the penalty-box lookup finds nothing), a blocked
 * source (dropped on the lookup) and a shadow rule's would-drop (passed).
 */
static const char *const policy_rules[] = {
	"198.51.100.0/24 --rate 10000000/s --burst 4294967295 --block 1h --block-spoofable",
	"203.0.113.0/24 --rate 1/h --burst 1 --block 1h --block-spoofable",
	"198.18.0.0/16 --rate 1/h --burst 1 --shadow",
	NULL,
};

/*
 * A --syn rule, in an instance of its own: a source over its limit (its
 * sampled drops record it for busy clients), an ACK of another source while
 * it does (the gate open), and an ACK of the limited source itself (its
 * slot found, its stamp fresh: no write).
 */
static const char *const syn_rules[] = {
	"203.0.113.0/24 --proto tcp --syn --rate 1/h --burst 1", NULL,
};

/* A spoofed SYN flood: every address of 10.0.0.0/12 over a --syn rule. */
static const char *const many_syn_rules[] = {
	"10.0.0.0/12 --proto tcp --syn --rate 1/h --burst 1 --per 32", NULL,
};

/*
 * --dport and --dst, in an instance of their own: one port, a set whose
 * 8th range holds the port (the longest walk), a destination prefix, and
 * an IPv6 destination prefix with a set. The frames go to the builder's
 * destination (198.51.100.1, 2001:db8:ffff::1) and UDP port 53.
 */
static const char *const match_rules[] = {
	"192.0.2.0/24 --proto udp --dport 53 --rate 1/h --burst 1",
	"198.51.100.0/24 --proto udp --dport 1,3,5,7,9,11,13,50-60 --rate 1/h --burst 1",
	"203.0.113.0/24 --dst 198.51.100.0/24 --rate 1/h --burst 1",
	"2001:db8::/32 --proto udp --dport 53,443 --dst 2001:db8:ffff::/100 --rate 1/h --burst 1",
	NULL,
};

/* The many-source stages: one rule over 10.0.0.0/12, one bucket per address. */
static const char *const many_over_rules[] = {
	"10.0.0.0/12 --rate 1/h --burst 1 --per 32", NULL,
};
static const char *const many_under_rules[] = {
	"10.0.0.0/12 --rate 10000000/s --burst 4294967295 --per 32", NULL,
};
/* IPv6: fd00::a00:0 + i, the walk writing the last 32 bits */
static const char *const many6_over_rules[] = {
	"fd00::/96 --rate 1/h --burst 1 --per 128", NULL,
};
static const char *const many6_under_rules[] = {
	"fd00::/96 --rate 10000000/s --burst 4294967295 --per 128", NULL,
};

static struct {
	__u32 repeat, runs, sources, passes, table;
	int cpu;
	bool json;
	const char *json_out;   /* the JSON object also written here, beside the table */
} opt = { 10000000, 5, 1000000, 2, XRL_DEFAULT_SOURCES, -1, false, NULL };

/* What a many-source stage left in its table: the table's own account. */
struct stage_res {
	long live;              /* entries live after timing */
	__u64 timed_misses;     /* timed lookups that found no entry (evicted: inserted again) */
	__u64 timed_lookups;
	__u64 evicted_seen;
	unsigned long long bytes;   /* memlock of the family's table */
	__u32 capacity;
};
static struct stage_res res_over, res_under, res6_over, res6_under;

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level != LIBBPF_WARN)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "xrl_bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static double thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One timed run of a case: appends to its runs. */
static void run_case(struct bcase *c)
{
	__u32 kns = 0;
	double t0, t1;
	int v;

	t0 = thread_ns();
	v = xrl_tl_run(c->prog_fd, c->pkt, c->len, c->repeat, &kns);
	t1 = thread_ns();
	if (v < 0)
		die("%s: BPF_PROG_TEST_RUN failed: %s", c->id, strerror(-v));
	if (c->expect >= 0 && v != c->expect)
		die("%s: verdict %s, expected %s", c->id, verdict_name(v), verdict_name(c->expect));
	c->ns[c->nruns] = (t1 - t0) / c->repeat;
	c->kern_ns[c->nruns] = kns;
	c->nruns++;
}

/*
 * Both CPUs on one source at once: what keeping one bucket per source (not
 * per CPU) costs. Each thread runs the case pinned to its CPU; the figure
 * is the mean ns/packet of the two threads, median of the runs.
 */
struct both_arg {
	const struct bcase *c;
	int cpu;
	__u32 repeat;
	double ns;
};

static void *both_thread(void *p)
{
	struct both_arg *a = p;
	cpu_set_t set;
	double t0;

	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	t0 = thread_ns();
	if (xrl_tl_run(a->c->prog_fd, a->c->pkt, a->c->len, a->repeat, NULL) != a->c->expect)
		return (void *)1;
	a->ns = (thread_ns() - t0) / a->repeat;
	return NULL;
}

static int cmp_double(const void *a, const void *b);

static double both_cpus(const struct bcase *c)
{
	double runs[99];
	__u32 k;

	for (k = 0; k < opt.runs; k++) {
		struct both_arg a[2] = { { c, 0, opt.repeat / 2, 0 }, { c, 1, opt.repeat / 2, 0 } };
		pthread_t t[2];
		void *r0, *r1;

		pthread_create(&t[0], NULL, both_thread, &a[0]);
		pthread_create(&t[1], NULL, both_thread, &a[1]);
		pthread_join(t[0], &r0);
		pthread_join(t[1], &r1);
		if (r0 || r1)
			die("%s on both CPUs: unexpected verdict", c->id);
		runs[k] = (a[0].ns + a[1].ns) / 2;
	}
	qsort(runs, opt.runs, sizeof(runs[0]), cmp_double);
	return runs[opt.runs / 2];
}

static double both_under, both_over, both_total;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void summarize(struct bcase *c)
{
	double s[MAX_RUNS];

	memcpy(s, c->ns, sizeof(double) * c->nruns);
	qsort(s, c->nruns, sizeof(double), cmp_double);
	c->min = s[0];
	c->max = s[c->nruns - 1];
	c->med = c->nruns & 1 ? s[c->nruns / 2] : (s[c->nruns / 2 - 1] + s[c->nruns / 2]) / 2;
}

/* First run(s) outside the timing: create the bucket, spend the burst; check the verdict. */
static void prime_case(struct bcase *c, int prog_fd, const struct xrl_pkt_spec *s, int expect)
{
	int v;

	c->prog_fd = prog_fd;
	c->len = xrl_pkt_build(c->pkt, sizeof(c->pkt), s, NULL, NULL);
	c->expect = expect;
	c->repeat = opt.repeat;
	v = xrl_tl_run(prog_fd, c->pkt, c->len, 2, NULL);
	if (v >= 0)
		v = xrl_tl_run(prog_fd, c->pkt, c->len, 1, NULL);
	if (v < 0)
		die("%s: BPF_PROG_TEST_RUN failed: %s", c->id, strerror(-v));
	if (v != expect)
		die("%s: verdict %s, expected %s", c->id, verdict_name(v), verdict_name(expect));
}

static void apply_rules(const struct xrl_maps *m, const char *const *lines)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	char err[XRL_ERRLEN];
	int n = 0, i, r;

	for (i = 0; lines[i]; i++) {
		r = xrl_rule_parse_line(lines[i], &defs[n], err, sizeof(err));
		if (r < 0)
			die("rule '%s': %s", lines[i], err);
		n += r;
	}
	/*
	 * twice: each trie then holds the set under both generation parities,
	 * as after any second rule change (the steady state a lookup walks)
	 */
	if (xrl_ruleset_apply(m, defs, n, err, sizeof(err)) ||
	    xrl_ruleset_apply(m, defs, n, err, sizeof(err)))
		die("apply: %s", err);
}

/* A production object (kernel clock), loaded with its default map sizes. */
struct prod {
	struct xrl_bpf *skel;
	struct xrl_maps maps;
	int prog_fd;
};

static void prod_open_sized(struct prod *p, const char *const *rules, __u32 table)
{
	int err;

	memset(p, 0, sizeof(*p));
	p->skel = xrl_bpf__open();
	if (!p->skel)
		die("cannot open the xrl BPF object: %s", strerror(errno));
	if (table) {
		bpf_map__set_max_entries(p->skel->maps.xrl_buckets_v4, xrl_table_sets(table, XRL_WAYS4));
		bpf_map__set_max_entries(p->skel->maps.xrl_buckets_v6, xrl_table_sets(table, XRL_WAYS6));
	}
	p->skel->rodata->xrl_malformed_policy = XRL_MALFORMED_PASS;
	err = xrl_bpf__load(p->skel);
	if (err)
		die("cannot load the xrl BPF object (root and BPF needed): %s", strerror(-err));
	if (xrl_maps_from_obj(p->skel->obj, &p->maps))
		die("xrl object lacks a map");
	p->prog_fd = bpf_program__fd(p->skel->progs.xrl_xdp);
	xrl_config_init(&p->maps, XRL_MALFORMED_PASS);
	apply_rules(&p->maps, rules);
}

static void prod_open(struct prod *p, const char *const *rules)
{
	prod_open_sized(p, rules, 0);
}

static void prod_close(struct prod *p)
{
	xrl_bpf__destroy(p->skel);
	p->skel = NULL;
}

static struct xrl_global_stats gstats(const struct xrl_maps *m)
{
	struct xrl_global_stats g;

	if (xrl_read_global(m, &g))
		die("cannot read xrl_stats");
	return g;
}

/* Deterministic shuffle (xorshift64*, fixed seeds): the same orders every time. */
static __u64 rng_state;

static __u64 rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static void fill_shuffled(__u64 *srcs, __u32 n, __u64 seed)
{
	__u64 t;
	__u32 i, j;

	rng_state = seed;
	for (i = 0; i < n; i++)
		srcs[i] = SRC_BASE + i;
	for (i = n - 1; i > 0; i--) {
		j = (__u32)(rng() % (i + 1));
		t = srcs[i];
		srcs[i] = srcs[j];
		srcs[j] = t;
	}
	for (i = 0; i < n; i++)
		srcs[i] = htonl((__u32)srcs[i]);
}

static void fill_one(__u64 *srcs, __u32 n, __u32 addr_net)
{
	__u32 i;

	for (i = 0; i < n; i++)
		srcs[i] = addr_net;
}

/* Memory the kernel charges for a map (memlock in its fdinfo), or 0. */
struct walker {
	struct xrl_clock_bpf *skel;
	__u64 *srcs;        /* mmap of xrl_bench_srcs: address in the low 32 bits */
	int prog_fd;
	int prog6_fd;       /* xrl_srcwalk6 */
	int next_fd;
};

static void walker_target(struct walker *w, int prog_fd)
{
	__u32 k = 0;

	if (prog_fd < 0)
		bpf_map_delete_elem(w->next_fd, &k);
	else if (bpf_map_update_elem(w->next_fd, &k, &prog_fd, BPF_ANY))
		die("cannot set the tail-call target: %s", strerror(errno));
}

/*
 * Many-source stage: point the source walk at prog_fd, fill its table with
 * every source once (unless already filled), then time runs visiting all
 * sources in a fresh random order, alternating with runs where every list
 * entry is one source. maps: an xrl instance, whose counters then prove that
 * the fill created one bucket per source and that timing created none.
 */
static void stage(struct walker *w, int prog_fd, const struct xrl_maps *maps, bool fill,
		  int expect, struct bcase *many, struct bcase *one, struct bcase *ins,
		  struct stage_res *res, int family)
{
	struct xrl_global_stats g0 = { 0 }, g1;
	__u32 n = opt.sources, k;
	int v, walk_fd = w->prog_fd;

	if (family == 6)
		w->prog_fd = w->prog6_fd;
	walker_target(w, prog_fd);
	w->skel->data->xrl_bench_nsrc = n;
	if (fill) {
		/* the first packet of a source creates its bucket, which starts full: PASS */
		fill_shuffled(w->srcs, n, 0x9e3779b97f4a7c15ULL);
		w->skel->bss->xrl_bench_pos = 0;
		if (ins) {
			ins->prog_fd = w->prog_fd;
			ins->expect = XDP_PASS;
			ins->repeat = n;
			run_case(ins);
		} else if ((v = xrl_tl_run(w->prog_fd, many->pkt, many->len, n, NULL)) != XDP_PASS &&
			   (maps || expect >= 0 || v != XDP_DROP)) {
			die("%s: fill ended with %s", many->id,
			    v < 0 ? strerror(-v) : verdict_name(v));
		}
	}
	if (maps) {
		g0 = gstats(maps);
		if (g0.sources_created != n || g0.insert_failed)
			die("%s: fill created %llu buckets (%llu failed), wanted %u", many->id,
			    (unsigned long long)g0.sources_created,
			    (unsigned long long)g0.insert_failed, n);
	}

	many->prog_fd = w->prog_fd;
	/* over limit, a source the table replaced passes again when it comes back: checked below */
	many->expect = maps && expect == XDP_DROP ? -1 : expect;
	many->repeat = n * opt.passes;
	if (one) {
		one->prog_fd = w->prog_fd;
		one->expect = expect;
		one->repeat = n * opt.passes;
	}
	for (k = 0; k < opt.runs; k++) {
		fill_shuffled(w->srcs, n, 0xd1b54a32d192ed03ULL + k);
		w->skel->bss->xrl_bench_pos = 0;
		run_case(many);
		if (one) {
			fill_one(w->srcs, n, htonl(SRC_BASE + 1));
			w->skel->bss->xrl_bench_pos = 0;
			run_case(one);
		}
	}
	summarize(many);
	if (one)
		summarize(one);
	walker_target(w, -1);   /* the prog array holds the program, and so its maps */
	w->prog_fd = walk_fd;

	if (!maps)
		return;
	g1 = gstats(maps);
	if (g1.insert_failed)
		die("%s: %llu inserts failed on one CPU", many->id, (unsigned long long)g1.insert_failed);
	/* over limit: every timed packet dropped but the first of each re-inserted source */
	if (expect == XDP_DROP && g1.dropped - g0.dropped !=
	    (g1.packets - g0.packets) - (g1.sources_created - g0.sources_created))
		die("%s: %llu of %llu timed packets dropped, %llu sources inserted again", many->id,
		    (unsigned long long)(g1.dropped - g0.dropped),
		    (unsigned long long)(g1.packets - g0.packets),
		    (unsigned long long)(g1.sources_created - g0.sources_created));
	if (expect == XDP_PASS && g1.dropped != g0.dropped)
		die("%s: %llu timed packets dropped under the limit", many->id,
		    (unsigned long long)(g1.dropped - g0.dropped));
	/*
	 * A set-associative table holds fewer than its capacity of random
	 * sources: a source whose set is full replaces another, which misses
	 * later and is inserted again. Those are part of the figure; counted.
	 */
	if (res) {
		int fd = family == 6 ? maps->buckets_v6 : maps->buckets_v4;

		res->live = xrl_count_bucket_entries(fd);
		res->timed_misses = g1.sources_created - g0.sources_created;
		res->timed_lookups = (__u64)many->repeat * many->nruns +
				     (one ? (__u64)one->repeat * one->nruns : 0);
		res->evicted_seen = g1.evicted_seen;
		res->bytes = xrl_map_memlock(fd);
		res->capacity = xrl_bucket_capacity(fd);
		bucket_map_bytes = res->bytes;
	}
}

static double med(int i)
{
	return cases[i].med;
}

/* Net cost of a source-walk case: minus what the wrapper adds over bare drop. */
static double net(int i)
{
	return med(i) - (med(C_WRAP_DROP) - med(C_DROP));
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xrl_bench [--repeat N] [--runs K] [--sources S] [--passes P] [--cpu C] [--max-sources N]\n"
		"                 [--json] [--json-out FILE]\n"
		"  --repeat N   executions per run of the one-frame cases (default 10000000)\n"
		"  --runs K     runs per case; figures are medians (default 5, at most %d)\n"
		"  --sources S  distinct sources of the many-source cases (default 1000000, at most %u)\n"
		"  --passes P   passes over the sources per timed run (default 2)\n"
		"  --cpu C      CPU to run on (default: the one it starts on)\n"
		"  --max-sources N  bucket table entries of the many-source stages (default %u)\n"
		"  --json       one JSON object instead of the table\n"
		"  --json-out F the JSON object also written to file F, beside the table\n",
		MAX_RUNS, MAX_SRCS, XRL_DEFAULT_SOURCES);
}

static __u32 parse_u32(const char *what, const char *s, __u32 min, __u32 max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		die("invalid %s '%s': a number from %u to %u", what, s, min, max);
	return (__u32)v;
}

static const char *method_text(void)
{
	static char buf[1600];

	snprintf(buf, sizeof(buf),
		 "ns/pkt = thread CPU time of one bpf_prog_test_run_opts call / its repeat count, median "
		 "of %u runs; one-frame cases run round robin with repeat %u. Cases marked * use "
		 "xrl_clock.bpf.c:xrl_srcwalk (IPv6: xrl_srcwalk6), which writes the next address of a "
		 "list into the IPv4 source (the last 32 bits of the IPv6 source) and tail-calls the "
		 "production xrl program: its bucket table (--max-sources %u) is "
		 "first filled with %u sources (10.0.0.0/12, rule --per 32; fd00::a00:0/108, --per 128) "
		 "in one random order, then "
		 "each timed run visits all of them %u times in another random order (repeat %u), so "
		 "lookups land at random places of the table; those whose source the set-associative "
		 "table replaced miss and insert again (counted below). "
		 "The 1-source * rows run the same wrapper with every list entry equal. "
		 "net = figure - (srcwalk->drop - bare drop).",
		 opt.runs, opt.repeat, opt.table, opt.sources, opt.passes,
		 opt.sources * opt.passes);
	return buf;
}

static const int clock_cases[] = { C_CLK_KTIME, C_CLK_COARSE, C_CLK_BOOT, C_CLK_JIFFIES };
static const char *const clock_names[] = {
	"bpf_ktime_get_ns", "bpf_ktime_get_coarse_ns", "bpf_ktime_get_boot_ns", "bpf_jiffies64",
};

struct targets {
	double over;          /* IPv4 over limit / bare drop */
	double many_over;     /* net many-source / direct one-source, over limit */
	double many_under;    /* the same, under limit */
	double like_over;     /* both through srcwalk */
	double like_under;
	double many6_over;    /* the same for IPv6 */
	double many6_under;
	double like6_over;
	double like6_under;
};

static struct targets targets(void)
{
	return (struct targets){
		.over = med(C_V4_OVER) / med(C_DROP),
		.many_over = net(C_OVER_MANY) / med(C_V4_OVER),
		.many_under = net(C_UNDER_MANY) / med(C_V4_UNDER),
		.like_over = med(C_OVER_MANY) / med(C_OVER_ONE),
		.like_under = med(C_UNDER_MANY) / med(C_UNDER_ONE),
		.many6_over = net(C_V6_OVER_MANY) / med(C_V6_OVER),
		.many6_under = net(C_V6_UNDER_MANY) / med(C_V6_UNDER),
		.like6_over = med(C_V6_OVER_MANY) / med(C_V6_OVER_ONE),
		.like6_under = med(C_V6_UNDER_MANY) / med(C_V6_UNDER_ONE),
	};
}

static void res_json(const char *name, const struct stage_res *r, const char *sep)
{
	printf("    \"%s\": {\"live\": %ld, \"capacity\": %u, \"table_bytes\": %llu, "
	       "\"bytes_per_entry\": %.1f, \"timed_lookups\": %llu, \"timed_misses\": %llu, "
	       "\"evicted_seen\": %llu}%s\n", name, r->live, r->capacity, r->bytes,
	       r->capacity ? (double)r->bytes / r->capacity : 0.0,
	       (unsigned long long)r->timed_lookups, (unsigned long long)r->timed_misses,
	       (unsigned long long)r->evicted_seen, sep);
}

static void report_json(double wall)
{
	struct targets tg = targets();
	double d = med(C_DROP);
	__u32 k;
	int i;

	printf("{\n  \"both_cpus\": {\"under_limit\": %.2f, \"over_limit\": %.2f, \"total_under\": %.2f},\n",
	       both_under, both_over, both_total);
	printf("  \"unit\": \"ns/packet\",\n  \"repeat\": %u,\n  \"runs\": %u,\n"
	       "  \"sources\": %u,\n  \"passes\": %u,\n  \"cpu\": %d,\n"
	       "  \"wall_seconds\": %.1f,\n  \"method\": \"%s\",\n  \"cases\": {\n",
	       opt.repeat, opt.runs, opt.sources, opt.passes, opt.cpu, wall, method_text());
	for (i = 0; i < C_N; i++) {
		struct bcase *b = &cases[i];

		printf("    \"%s\": {\"label\": \"%s\", \"ns\": %.2f, \"min\": %.2f, \"max\": %.2f, "
		       "\"x_drop\": %.3f, \"verdict\": \"%s\", \"repeat\": %u, \"runs_ns\": [",
		       b->id, b->label, b->med, b->min, b->max, b->med / d, verdict_name(b->expect),
		       b->repeat);
		for (k = 0; k < (__u32)b->nruns; k++)
			printf("%s%.2f", k ? ", " : "", b->ns[k]);
		printf("], \"kernel_duration_ns\": [");
		for (k = 0; k < (__u32)b->nruns; k++)
			printf("%s%u", k ? ", " : "", b->kern_ns[k]);
		printf("]}%s\n", i + 1 < C_N ? "," : "");
	}
	printf("  },\n  \"clock_cost_ns\": {");
	for (i = 0; i < 4; i++)
		printf("%s\"%s\": %.2f", i ? ", " : "", clock_names[i], med(clock_cases[i]) - d);
	printf("},\n  \"map_clock_minus_kernel_clock_ns\": %.2f,\n",
	       med(C_TESTCLK_OVER) - med(C_V4_OVER));
	printf("  \"srcwalk_overhead_ns\": %.2f,\n", med(C_WRAP_DROP) - d);
	printf("  \"tables\": {\n");
	res_json("v4_over", &res_over, ",");
	res_json("v4_under", &res_under, ",");
	res_json("v6_over", &res6_over, ",");
	res_json("v6_under", &res6_under, "");
	printf("  },\n");
	printf("  \"bucket_map_bytes\": %llu,\n", bucket_map_bytes);
	printf("  \"log_map_bytes\": %llu, \"log_sources\": %u,\n", log_map_bytes, XRL_LOG_SOURCES);
	printf("  \"many_sources_net_ns\": {\"over\": %.2f, \"under\": %.2f, \"testclock_over\": %.2f, "
	       "\"v6_over\": %.2f, \"v6_under\": %.2f},\n",
	       net(C_OVER_MANY), net(C_UNDER_MANY), net(C_TESTCLK_MANY), net(C_V6_OVER_MANY),
	       net(C_V6_UNDER_MANY));
	printf("  \"targets\": {\n"
	       "    \"over_limit_vs_bare_drop\": {\"ratio\": %.2f, \"max\": %.1f, \"met\": %s},\n"
	       "    \"many_vs_one_source_over\": {\"ratio\": %.2f, \"like_for_like_ratio\": %.2f, \"max\": %.1f, \"met\": %s},\n"
	       "    \"many_vs_one_source_under\": {\"ratio\": %.2f, \"like_for_like_ratio\": %.2f, \"max\": %.1f, \"met\": %s},\n"
	       "    \"v6_many_vs_one_source_over\": {\"ratio\": %.2f, \"like_for_like_ratio\": %.2f, \"max\": %.1f, \"met\": %s},\n"
	       "    \"v6_many_vs_one_source_under\": {\"ratio\": %.2f, \"like_for_like_ratio\": %.2f, \"max\": %.1f, \"met\": %s}\n"
	       "  }\n}\n",
	       tg.over, TARGET_OVER, tg.over <= TARGET_OVER ? "true" : "false",
	       tg.many_over, tg.like_over, TARGET_SOURCES,
	       tg.many_over <= TARGET_SOURCES ? "true" : "false",
	       tg.many_under, tg.like_under, TARGET_SOURCES,
	       tg.many_under <= TARGET_SOURCES ? "true" : "false",
	       tg.many6_over, tg.like6_over, TARGET_SOURCES,
	       tg.many6_over <= TARGET_SOURCES ? "true" : "false",
	       tg.many6_under, tg.like6_under, TARGET_SOURCES,
	       tg.many6_under <= TARGET_SOURCES ? "true" : "false");
}

/* Print text wrapped at 78 columns: first line after first, the others after indent. */
static void print_wrapped(const char *first, const char *indent, const char *s)
{
	size_t width = 78 - strlen(indent), n;

	while (*s) {
		n = strlen(s);
		if (n > width) {
			n = width;
			while (n > 0 && s[n] != ' ')
				n--;
			if (n == 0)
				n = width;
		}
		printf("%s%.*s\n", first, (int)n, s);
		first = indent;
		s += n;
		while (*s == ' ')
			s++;
	}
}

static void row(const char *what, double ns)
{
	printf("  %-60s %8.2f ns\n", what, ns);
}

static void res_row(const char *name, const struct stage_res *r)
{
	printf("  %-10s %8ld live of %8u entries, %6.1f MiB (%.1f B/entry); timed lookups that\n"
	       "             missed (evicted, inserted again): %llu of %llu (%.2f%%); evicted while seen: %llu\n",
	       name, r->live, r->capacity, r->bytes / 1048576.0,
	       r->capacity ? (double)r->bytes / r->capacity : 0.0,
	       (unsigned long long)r->timed_misses, (unsigned long long)r->timed_lookups,
	       r->timed_lookups ? 100.0 * r->timed_misses / r->timed_lookups : 0.0,
	       (unsigned long long)r->evicted_seen);
}

static void report_table(double wall, const char *nbuf)
{
	struct targets tg = targets();
	/* the rules of the one-source cases hold hours of refill: they read the jiffy clock */
	double d = med(C_DROP), clk = med(C_CLK_KTIME) - d, jclk = med(C_CLK_JIFFIES) - d;
	char mm[48], what[96];
	int i;

	printf("xrl decision cost (BPF_PROG_TEST_RUN), ns per packet, median of %u runs, CPU %d\n\n",
	       opt.runs, opt.cpu);
	printf("%-40s %8s %17s %8s  %s\n", "case", "ns/pkt", "min..max", "x drop", "verdict");
	for (i = 0; i < C_N; i++) {
		struct bcase *b = &cases[i];

		if (i == C_NONIP || i == C_TESTCLK_OVER || i == C_OVER_MANY || i == C_PROBE_LRU_MANY)
			printf("\n");
		snprintf(mm, sizeof(mm), "%.2f..%.2f", b->min, b->max);
		printf("%-40s %8.2f %17s %8.2f  %s\n", b->label, b->med, mm, b->med / d,
		       verdict_name(b->expect));
	}
	printf("\n");
	print_wrapped("* ", "  ", method_text());
	printf("  bucket tables of the many-source stages (--max-sources %u):\n", opt.table);
	res_row("v4 over", &res_over);
	res_row("v4 under", &res_under);
	res_row("v6 over", &res6_over);
	res_row("v6 under", &res6_under);

	printf("\nclock helper cost, above bare drop:\n");
	for (i = 0; i < 4; i++)
		row(clock_names[i], med(clock_cases[i]) - d);
	row("map-based test clock instead (test-clock over - xrl over)",
	    med(C_TESTCLK_OVER) - med(C_V4_OVER));

	printf("\none source, over limit: where the time goes (differences of medians):\n");
	row("frame + test-run loop (bare drop)", d);
	row("stats/config lookups, Ethernet parse (non-IP - drop)", med(C_NONIP) - d);
	row("IPv4 parse, rule cache hit: no rule (no rule - non-IP)", med(C_NORULE) - med(C_NONIP));
	row("rule cache hit: a rule, rule counters (deny - no rule)", med(C_DENY) - med(C_NORULE));
	row("jiffy clock read (bpf_jiffies64 - drop)", jclk);
	row("bucket key, bucket lookup, GCRA, sketch (over - deny - clock)",
	    med(C_V4_OVER) - med(C_DENY) - jclk);
	row("= IPv4 over limit", med(C_V4_OVER));
	row("admission write, CAS (under - over)", med(C_V4_UNDER) - med(C_V4_OVER));
	row("LPM walk and rule scan instead of the rule cache (--proto over - over)",
	    med(C_V4_OVER_LPM) - med(C_V4_OVER));
	row("--dport one port instead of --proto (one port over - --proto over)",
	    med(C_PORT1_OVER) - med(C_V4_OVER_LPM));
	row("--dport set, port in the 8th of 8 ranges (set over - one port over)",
	    med(C_PORTSET_OVER) - med(C_PORT1_OVER));
	row("--dst /24 instead of one port (--dst over - one port over)",
	    med(C_DST_OVER) - med(C_PORT1_OVER));
	row("IPv6 --dst /100 + a set of 2 (IPv6 that over - IPv6 over, cached)",
	    med(C_DST6_OVER) - med(C_V6_OVER));
	row("QinQ tags (QinQ over - IPv4 over)", med(C_QINQ_OVER) - med(C_V4_OVER));
	row("IPv6 instead of IPv4 (IPv6 over - IPv4 over)", med(C_V6_OVER) - med(C_V4_OVER));
	row("--global, over: mode + floor lookups (global over - IPv4 over)",
	    med(C_GLOBAL_OVER) - med(C_V4_OVER));
	row("--global, under: + count in xrl_fleet_used (global under - IPv4 under)",
	    med(C_GLOBAL_UNDER) - med(C_V4_UNDER));
	row("--total, under: peek + a token of the CPU's batch (total under - IPv4 under)",
	    med(C_TOTAL_UNDER) - med(C_V4_UNDER));
	row("--total, refused by the cap (total capped - IPv4 over)",
	    med(C_TOTAL_CAPPED) - med(C_V4_OVER));
	row("--new-sources, a new source refused (refused - IPv4 over)",
	    med(C_NEWSRC_REFUSED) - med(C_V4_OVER));
	row("--algo fixed-window, under (fixed-window under - IPv4 under)",
	    med(C_FW_UNDER) - med(C_V4_UNDER));
	row("--algo fixed-window, over (fixed-window over - IPv4 over)",
	    med(C_FW_OVER) - med(C_V4_OVER));
	row("--algo sliding-window, under (sliding-window under - IPv4 under)",
	    med(C_SW_UNDER) - med(C_V4_UNDER));
	row("--algo sliding-window, over (sliding-window over - IPv4 over)",
	    med(C_SW_OVER) - med(C_V4_OVER));
	row("--algo sliding-log, over: + its ring's lookup (sliding-log over - IPv4 over)",
	    med(C_SL_OVER) - med(C_V4_OVER));
	printf("\nmemory per tracked source, by algorithm (the bucket entry: 40 B IPv4, 56 B IPv6):\n");
	printf("  %-60s %8s\n", "token-bucket, fixed-window, sliding-window", "entry");
	printf("  %-60s %8.0f B\n", "sliding-log: + its ring in xrl_logs (memlock / sources)",
	       (double)log_map_bytes / XRL_LOG_SOURCES);
	printf("  %-60s %8.1f MiB\n", "  xrl_logs, preallocated for XRL_LOG_SOURCES sources",
	       (double)log_map_bytes / (1 << 20));
	row("--block, under: the penalty-box lookup (block under - IPv4 under)",
	    med(C_BLOCK_UNDER) - med(C_V4_UNDER));
	row("--block, a blocked source: lookup instead of the bucket (block held - IPv4 over)",
	    med(C_BLOCK_HELD) - med(C_V4_OVER));
	row("--shadow, over limit and passed (shadow over - IPv4 over)",
	    med(C_SHADOW_OVER) - med(C_V4_OVER));

	printf("\n%s sources, over limit (srcwalk wrapper itself: %.2f ns, subtracted = net):\n",
	       nbuf, med(C_WRAP_DROP) - d);
	snprintf(what, sizeof(what), "xrl net, %s sources (one source direct: %.2f)", nbuf,
		 med(C_V4_OVER));
	row(what, net(C_OVER_MANY));
	snprintf(what, sizeof(what), "xrl test-clock object net, %s sources (no clock read)", nbuf);
	row(what, net(C_TESTCLK_MANY));
	row("LRU lookup alone: many keys - one key", med(C_PROBE_LRU_MANY) - med(C_PROBE_LRU_ONE));
	row("LRU lookup after bpf_ktime_get_ns: many keys - one key",
	    med(C_PROBE_LRU_CLK_MANY) - med(C_PROBE_LRU_ONE) - clk);
	row("preallocated hash instead of LRU (hash - LRU, many keys)",
	    med(C_PROBE_HASH_MANY) - med(C_PROBE_LRU_MANY));
	row("direct-mapped array instead (array - LRU, many keys)",
	    med(C_PROBE_ARRAY_MANY) - med(C_PROBE_LRU_MANY));
	row("array after bpf_ktime_get_ns (array+ktime - array - clock)",
	    med(C_PROBE_ARRAY_CLK_MANY) - med(C_PROBE_ARRAY_MANY) - clk);

	if (both_under > 0) {
		printf("\none source on CPU 0 and CPU 1 at once (one shared bucket), per packet:\n");
		row("under limit: every packet a compare-and-swap on the shared word", both_under);
		row("  the same on one CPU", med(C_V4_UNDER));
		row("over limit: read-only drop path", both_over);
		row("  the same on one CPU", med(C_V4_OVER));
		row("--total, under: + the cap's batches from one shared word", both_total);
		row("  the same on one CPU", med(C_TOTAL_UNDER));
	}

	printf("\ntargets:\n");
	printf("  over limit <= %.0fx bare drop: %.2f / %.2f = %.2fx  %s\n", TARGET_OVER,
	       med(C_V4_OVER), d, tg.over, tg.over <= TARGET_OVER ? "MET" : "NOT MET");
	printf("  %s sources <= %.0fx one source, over limit: %.2f / %.2f = %.2fx  %s\n", nbuf,
	       TARGET_SOURCES, net(C_OVER_MANY), med(C_V4_OVER), tg.many_over,
	       tg.many_over <= TARGET_SOURCES ? "MET" : "NOT MET");
	printf("    (like for like, both through srcwalk: %.2fx)\n", tg.like_over);
	printf("  %s sources <= %.0fx one source, under limit: %.2f / %.2f = %.2fx  %s\n", nbuf,
	       TARGET_SOURCES, net(C_UNDER_MANY), med(C_V4_UNDER), tg.many_under,
	       tg.many_under <= TARGET_SOURCES ? "MET" : "NOT MET");
	printf("    (like for like, both through srcwalk: %.2fx)\n", tg.like_under);
	printf("  %s IPv6 sources <= %.0fx one source, over limit: %.2f / %.2f = %.2fx  %s\n", nbuf,
	       TARGET_SOURCES, net(C_V6_OVER_MANY), med(C_V6_OVER), tg.many6_over,
	       tg.many6_over <= TARGET_SOURCES ? "MET" : "NOT MET");
	printf("    (like for like, both through srcwalk: %.2fx)\n", tg.like6_over);
	printf("  %s IPv6 sources <= %.0fx one source, under limit: %.2f / %.2f = %.2fx  %s\n", nbuf,
	       TARGET_SOURCES, net(C_V6_UNDER_MANY), med(C_V6_UNDER), tg.many6_under,
	       tg.many6_under <= TARGET_SOURCES ? "MET" : "NOT MET");
	printf("    (like for like, both through srcwalk: %.2fx)\n", tg.like6_under);
	printf("\ntotal time %.1f s\n", wall);
}


int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "repeat", required_argument, 0, 'r' },
		{ "runs", required_argument, 0, 'k' },
		{ "sources", required_argument, 0, 's' },
		{ "passes", required_argument, 0, 'p' },
		{ "cpu", required_argument, 0, 'c' },
		{ "json", no_argument, 0, 'j' },
		{ "max-sources", required_argument, 0, 't' },
		{ "json-out", required_argument, 0, 'o' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct xrl_drop_bpf *drop;
	struct xrl_clock_bpf *clk;
	struct walker w = { 0 };
	struct prod prod, glob, cap, algo, pol, syn, mat;
	struct xrl_tl tl;
	struct xrl_pkt_spec s;
	static char many_labels[C_N - C_N_SINGLE][64];
	char nbuf[32];
	double t_start, wall;
	struct timespec ts;
	cpu_set_t set;
	int c, i, err;
	__u32 k;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'r': opt.repeat = parse_u32("--repeat", optarg, 1, 1000000000); break;
		case 'k': opt.runs = parse_u32("--runs", optarg, 1, MAX_RUNS); break;
		case 's': opt.sources = parse_u32("--sources", optarg, 1, MAX_SRCS); break;
		case 'p': opt.passes = parse_u32("--passes", optarg, 1, 100); break;
		case 'c': opt.cpu = (int)parse_u32("--cpu", optarg, 0, CPU_SETSIZE - 1); break;
		case 'j': opt.json = true; break;
		case 'o': opt.json_out = optarg; break;
		case 't': opt.table = parse_u32("--max-sources", optarg, XRL_WAYS4, 1U << 28); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if ((__u64)opt.sources * opt.passes > 0xffffffffULL)
		die("--sources x --passes must stay below 2^32");
	if (opt.sources > MAX_SRCS)
		die("--sources above %u", MAX_SRCS);

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t_start = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	if (opt.cpu < 0)
		opt.cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(opt.cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("cannot run on CPU %d: %s", opt.cpu, strerror(errno));
	libbpf_set_print(libbpf_quiet);

	/* the floor and the clock programs */
	drop = xrl_drop_bpf__open_and_load();
	if (!drop)
		die("cannot load the drop object (root and BPF needed): %s", strerror(errno));
	clk = xrl_clock_bpf__open_and_load();
	if (!clk)
		die("cannot load the clock object: %s", strerror(errno));
	w.skel = clk;
	w.prog_fd = bpf_program__fd(clk->progs.xrl_srcwalk);
	w.prog6_fd = bpf_program__fd(clk->progs.xrl_srcwalk6);
	w.next_fd = bpf_map__fd(clk->maps.xrl_bench_next);
	w.srcs = mmap(NULL, MAX_SRCS * sizeof(__u64), PROT_READ | PROT_WRITE, MAP_SHARED,
		      bpf_map__fd(clk->maps.xrl_bench_srcs), 0);
	if (w.srcs == MAP_FAILED)
		die("cannot mmap xrl_bench_srcs: %s", strerror(errno));

	memset(&s, 0, sizeof(s));
	s.family = 4;
	prime_case(&cases[C_DROP], bpf_program__fd(drop->progs.xrl_drop), &s, XDP_DROP);
	prime_case(&cases[C_CLK_KTIME], bpf_program__fd(clk->progs.xrl_clk_ktime), &s, XDP_DROP);
	prime_case(&cases[C_CLK_COARSE], bpf_program__fd(clk->progs.xrl_clk_coarse), &s, XDP_DROP);
	prime_case(&cases[C_CLK_BOOT], bpf_program__fd(clk->progs.xrl_clk_boot), &s, XDP_DROP);
	prime_case(&cases[C_CLK_JIFFIES], bpf_program__fd(clk->progs.xrl_clk_jiffies), &s, XDP_DROP);

	/* the production object, one frame per case */
	prod_open(&prod, single_rules);
	s = (struct xrl_pkt_spec){ .family = 4, .ethertype = ETH_P_ARP };
	prime_case(&cases[C_NONIP], prod.prog_fd, &s, XDP_PASS);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "100.64.0.7" };
	prime_case(&cases[C_NORULE], prod.prog_fd, &s, XDP_PASS);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.18.0.7" };
	prime_case(&cases[C_ALLOW], prod.prog_fd, &s, XDP_PASS);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.19.0.7" };
	prime_case(&cases[C_DENY], prod.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.51.100.7" };
	prime_case(&cases[C_V4_UNDER], prod.prog_fd, &s, XDP_PASS);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "203.0.113.7" };
	prime_case(&cases[C_V4_OVER], prod.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "192.0.2.7" };
	prime_case(&cases[C_V4_OVER_LPM], prod.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 6, .src = "2001:db8::7" };
	prime_case(&cases[C_V6_OVER], prod.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 6, .src = "2001:db8:1::7" };
	prime_case(&cases[C_V6_UNDER], prod.prog_fd, &s, XDP_PASS);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "203.0.113.9", .vlans = 2 };
	prime_case(&cases[C_QINQ_OVER], prod.prog_fd, &s, XDP_DROP);
	prod_open(&glob, global_rules);
	{
		/* a fleet floor an hour ahead, as the daemon writes for a source the fleet spent */
		struct xrl_bucket_key fk = { .family = 4 };
		struct xrl_fleet_floor ff = { .until_ns = 0 };
		struct timespec now;
		struct xrl_config gc;
		int id = -1;
		__u32 k, slot;

		xrl_read_config(&glob.maps, &gc);
		for (k = 0; k < XRL_MAX_RULES && id < 0; k++) {
			struct xrl_rule_def d;

			slot = XRL_RULE_DEFS_SLOT(gc.active_gen, k);
			if (!bpf_map_lookup_elem(glob.maps.rule_defs, &slot, &d) && d.in_use &&
			    (d.flags & XRL_F_GLOBAL) && d.rate == 1)
				id = (int)k;
		}
		if (id < 0)
			die("no global rule in the production object");
		clock_gettime(CLOCK_MONOTONIC, &now);
		fk.rule_id = (__u32)id;
		inet_pton(AF_INET, "203.0.113.7", &fk.addr[0]);
		ff.until_ns = (__u64)now.tv_sec * 1000000000ull + now.tv_nsec + 3600000000000ull;
		if (bpf_map_update_elem(glob.maps.fleet_floor, &fk, &ff, BPF_ANY))
			die("cannot write a fleet floor: %s", strerror(errno));
	}
	s = (struct xrl_pkt_spec){ .family = 4, .src = "203.0.113.7" };
	prime_case(&cases[C_GLOBAL_OVER], glob.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.51.100.7" };
	prime_case(&cases[C_GLOBAL_UNDER], glob.prog_fd, &s, XDP_PASS);

	prod_open(&cap, cap_rules);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.51.100.7" };
	prime_case(&cases[C_TOTAL_UNDER], cap.prog_fd, &s, XDP_PASS);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "203.0.113.7" };   /* its first packet spends the cap */
	prime_case(&cases[C_TOTAL_CAPPED], cap.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "192.0.2.1" };     /* spends the budget of 1 */
	prime_case(&cases[C_NEWSRC_REFUSED], cap.prog_fd, &s, XDP_PASS);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "192.0.2.7" };     /* refused, so never tracked */
	prime_case(&cases[C_NEWSRC_REFUSED], cap.prog_fd, &s, XDP_DROP);

	/* --algo */
	prod_open(&algo, algo_rules);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.51.100.7" };
	prime_case(&cases[C_FW_UNDER], algo.prog_fd, &s, XDP_PASS);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "203.0.113.7" };
	prime_case(&cases[C_FW_OVER], algo.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "192.0.2.7" };
	prime_case(&cases[C_SW_UNDER], algo.prog_fd, &s, XDP_PASS);
	if (cases[C_SW_UNDER].repeat > SW_UNDER_REPEAT)
		cases[C_SW_UNDER].repeat = SW_UNDER_REPEAT;
	if ((opt.runs + 1ull) * cases[C_SW_UNDER].repeat >= 1048575)
		die("--runs %u: too many for the sliding window's under-limit case", opt.runs);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.18.0.7" };
	prime_case(&cases[C_SW_OVER], algo.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.19.0.7" };
	prime_case(&cases[C_SL_OVER], algo.prog_fd, &s, XDP_DROP);
	log_map_bytes = xrl_map_memlock(algo.maps.logs);

	prod_open(&pol, policy_rules);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.51.100.7" };
	prime_case(&cases[C_BLOCK_UNDER], pol.prog_fd, &s, XDP_PASS);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "203.0.113.7" };   /* its 2nd packet blocks it for 1 h */
	prime_case(&cases[C_BLOCK_HELD], pol.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.18.0.7" };
	prime_case(&cases[C_SHADOW_OVER], pol.prog_fd, &s, XDP_PASS);
	prod_open(&syn, syn_rules);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "203.0.113.7", .proto = 6, .dport = 80,
				   .tcp_flags = 0x02 };
	prime_case(&cases[C_SYN_OVER], syn.prog_fd, &s, XDP_DROP);
	/* 64 drops in one run: one is the sampled drop that records the source */
	xrl_tl_run(syn.prog_fd, cases[C_SYN_OVER].pkt, cases[C_SYN_OVER].len, 64, NULL);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "100.64.0.7", .proto = 6, .dport = 80,
				   .tcp_flags = 0x10 };
	prime_case(&cases[C_ACK_GATE], syn.prog_fd, &s, XDP_PASS);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "203.0.113.7", .proto = 6, .dport = 80,
				   .tcp_flags = 0x10 };
	prime_case(&cases[C_ACK_LIMITED], syn.prog_fd, &s, XDP_PASS);

	prod_open(&mat, match_rules);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "192.0.2.7" };
	prime_case(&cases[C_PORT1_OVER], mat.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "198.51.100.7" };
	prime_case(&cases[C_PORTSET_OVER], mat.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "203.0.113.7" };
	prime_case(&cases[C_DST_OVER], mat.prog_fd, &s, XDP_DROP);
	s = (struct xrl_pkt_spec){ .family = 6, .src = "2001:db8::7" };
	prime_case(&cases[C_DST6_OVER], mat.prog_fd, &s, XDP_DROP);

	/* the test build: its clock is a map read */
	err = xrl_tl_open(&tl, 0, XRL_MALFORMED_PASS);
	if (err)
		die("cannot load the test-clock object");
	xrl_tl_set_clock(&tl, 1000000000ULL);
	if (xrl_tl_rules(&tl, single_rules))
		die("cannot install rules in the test-clock object");
	s = (struct xrl_pkt_spec){ .family = 4, .src = "203.0.113.7" };
	prime_case(&cases[C_TESTCLK_OVER], tl.prog_fd, &s, XDP_DROP);

	/* the source-walk wrapper alone: tail call into bare drop */
	walker_target(&w, bpf_program__fd(drop->progs.xrl_drop));
	fill_shuffled(w.srcs, opt.sources, 0x9e3779b97f4a7c15ULL);
	clk->data->xrl_bench_nsrc = opt.sources;
	clk->bss->xrl_bench_pos = 0;
	s = (struct xrl_pkt_spec){ .family = 4, .src = "10.0.0.1" };
	prime_case(&cases[C_WRAP_DROP], w.prog_fd, &s, XDP_DROP);

	for (k = 0; k < opt.runs; k++)
		for (i = 0; i < C_N_SINGLE; i++)
			run_case(&cases[i]);
	for (i = 0; i < C_N_SINGLE; i++)
		summarize(&cases[i]);
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
		both_under = both_cpus(&cases[C_V4_UNDER]);
		both_over = both_cpus(&cases[C_V4_OVER]);
		both_total = both_cpus(&cases[C_TOTAL_UNDER]);
	}
	walker_target(&w, -1);
	xrl_tl_close(&tl);
	prod_close(&prod);
	prod_close(&glob);
	prod_close(&cap);
	prod_close(&algo);
	prod_close(&pol);
	prod_close(&syn);
	prod_close(&mat);

	/* many sources */
	if (opt.sources == 1000000)
		snprintf(nbuf, sizeof(nbuf), "1M");
	else
		snprintf(nbuf, sizeof(nbuf), "%u", opt.sources);
	for (i = C_N_SINGLE; i < C_N; i++) {
		if (!strstr(cases[i].label, "%s"))
			continue;
		snprintf(many_labels[i - C_N_SINGLE], sizeof(many_labels[0]), cases[i].label, nbuf);
		cases[i].label = many_labels[i - C_N_SINGLE];
	}
	s = (struct xrl_pkt_spec){ .family = 4, .src = "10.0.0.1" };
	for (i = C_OVER_MANY; i < C_N; i++)
		cases[i].len = xrl_pkt_build(cases[i].pkt, sizeof(cases[i].pkt), &s, NULL, NULL);
	s = (struct xrl_pkt_spec){ .family = 6, .src = "fd00::a00:1" };
	for (i = C_V6_OVER_MANY; i <= C_V6_UNDER_ONE; i++)
		cases[i].len = xrl_pkt_build(cases[i].pkt, sizeof(cases[i].pkt), &s, NULL, NULL);
	prod_open_sized(&prod, many_over_rules, opt.table);
	stage(&w, prod.prog_fd, &prod.maps, true, XDP_DROP, &cases[C_OVER_MANY],
	      &cases[C_OVER_ONE], &cases[C_INSERT], &res_over, 4);
	prod_close(&prod);
	s = (struct xrl_pkt_spec){ .family = 4, .src = "10.0.0.1", .proto = 6, .dport = 80,
				   .tcp_flags = 0x02 };
	cases[C_SYN_MANY].len = xrl_pkt_build(cases[C_SYN_MANY].pkt, sizeof(cases[C_SYN_MANY].pkt), &s,
					      NULL, NULL);
	prod_open_sized(&prod, many_syn_rules, opt.table);
	stage(&w, prod.prog_fd, &prod.maps, true, XDP_DROP, &cases[C_SYN_MANY], NULL, NULL, NULL, 4);
	prod_close(&prod);
	prod_open_sized(&prod, many_under_rules, opt.table);
	stage(&w, prod.prog_fd, &prod.maps, true, XDP_PASS, &cases[C_UNDER_MANY],
	      &cases[C_UNDER_ONE], &cases[C_INSERT], &res_under, 4);
	prod_close(&prod);
	prod_open_sized(&prod, many6_over_rules, opt.table);
	stage(&w, prod.prog_fd, &prod.maps, true, XDP_DROP, &cases[C_V6_OVER_MANY],
	      &cases[C_V6_OVER_ONE], NULL, &res6_over, 6);
	prod_close(&prod);
	prod_open_sized(&prod, many6_under_rules, opt.table);
	stage(&w, prod.prog_fd, &prod.maps, true, XDP_PASS, &cases[C_V6_UNDER_MANY],
	      &cases[C_V6_UNDER_ONE], NULL, &res6_under, 6);
	prod_close(&prod);
	summarize(&cases[C_INSERT]);
	if (xrl_tl_open(&tl, 0, XRL_MALFORMED_PASS))
		die("cannot load the test-clock object");
	xrl_tl_set_clock(&tl, 1000000000ULL);
	if (xrl_tl_rules(&tl, many_over_rules))
		die("cannot install rules in the test-clock object");
	stage(&w, tl.prog_fd, &tl.maps, true, XDP_DROP, &cases[C_TESTCLK_MANY], NULL, NULL, NULL, 4);
	xrl_tl_close(&tl);
	/* the table access alone, in xrl_clock.bpf.c's own maps */
	stage(&w, bpf_program__fd(clk->progs.xrl_probe_lru), NULL, true, XDP_DROP,
	      &cases[C_PROBE_LRU_MANY], &cases[C_PROBE_LRU_ONE], NULL, NULL, 4);
	stage(&w, bpf_program__fd(clk->progs.xrl_probe_lru_clk), NULL, false, XDP_DROP,
	      &cases[C_PROBE_LRU_CLK_MANY], NULL, NULL, NULL, 4);
	stage(&w, bpf_program__fd(clk->progs.xrl_probe_hash), NULL, true, XDP_DROP,
	      &cases[C_PROBE_HASH_MANY], NULL, NULL, NULL, 4);
	stage(&w, bpf_program__fd(clk->progs.xrl_probe_array), NULL, true, XDP_DROP,
	      &cases[C_PROBE_ARRAY_MANY], NULL, NULL, NULL, 4);
	stage(&w, bpf_program__fd(clk->progs.xrl_probe_array_clk), NULL, false, XDP_DROP,
	      &cases[C_PROBE_ARRAY_CLK_MANY], NULL, NULL, NULL, 4);
	stage(&w, bpf_program__fd(clk->progs.xrl_probe_set), NULL, true, -1,
	      &cases[C_PROBE_SET_MANY], NULL, NULL, NULL, 4);
	/* other set shapes, a full set dropping a key (verdicts unchecked: -1) */
	stage(&w, bpf_program__fd(clk->progs.xrl_probe_set128), NULL, true, -1,
	      &cases[C_PROBE_SET128_MANY], NULL, NULL, NULL, 4);
	stage(&w, bpf_program__fd(clk->progs.xrl_probe_set64), NULL, true, -1,
	      &cases[C_PROBE_SET64_MANY], NULL, NULL, NULL, 4);

	munmap(w.srcs, MAX_SRCS * sizeof(__u64));
	xrl_clock_bpf__destroy(clk);
	xrl_drop_bpf__destroy(drop);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	wall = (double)ts.tv_sec + ts.tv_nsec / 1e9 - t_start;

	if (opt.json)
		report_json(wall);
	else
		report_table(wall, nbuf);
	if (opt.json_out) {
		/* the same figures as JSON into a file: stdout pointed there for report_json */
		int keep, fd;

		fflush(stdout);
		keep = dup(1);
		fd = open(opt.json_out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (keep < 0 || fd < 0)
			die("cannot write %s: %s", opt.json_out, strerror(errno));
		dup2(fd, 1);
		close(fd);
		report_json(wall);
		fflush(stdout);
		dup2(keep, 1);
		close(keep);
	}
	return 0;
}
