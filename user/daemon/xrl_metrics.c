// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The Prometheus text exposition of one instance, read from its maps at
 * scrape time, and the health /healthz reports. Counters are computed as
 * `xrl stats --json` computes them, in the same order, so both give the
 * same numbers for the same instant.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "xrl_box.h"
#include "xrl_format.h"
#include "xrl_instance.h"
#include "xrl_maps.h"
#include "xrl_metrics.h"
#include "xrl_rule.h"

/* Everything one scrape reports, read before anything is written. */
struct scrape {
	struct xrl_global_stats g;
	struct xrl_rule_def *defs;
	__u32 *ids;
	struct xrl_rule_stats *rs;
	int n;
	int *by_id;           /* rule id -> index in defs + 1, 0 for no rule */
	long tracked[2];      /* buckets of the rules in force: IPv4, IPv6 (xrl_census_sources) */
	long stale;           /* live buckets of removed rules or older rule versions */
	long *rule_tracked;   /* per rule, by index in defs */
	long *rule_blocked;   /* --block: sources in the rule's penalty box now (xrl_census_blocks) */
	__u32 capacity[2];
	struct xrl_top_entry *top;
	int ntop;
};

static void scrape_free(struct scrape *s)
{
	free(s->defs);
	free(s->ids);
	free(s->rs);
	free(s->by_id);
	free(s->rule_tracked);
	free(s->rule_blocked);
	free(s->top);
}

/*
 * Share the instance lock with `xrl stats` so that a scrape never sees half
 * a rule change. Bounded, so that a stuck writer fails scrapes instead of
 * hanging them. No pin directory any more means the instance was detached:
 * nobody changes the maps we hold, and /healthz says what happened.
 */
static int lock_shared(struct xrl_instance *in)
{
	char why[XRL_INSTANCE_ERRLEN];
	int err;

	if (!in->pin_dir)
		return 0;
	err = xrl_instance_open(in, XRL_LOCK_SHARED, XRL_METRICS_LOCK_WAIT_MS, 0, NULL, why,
				sizeof(why));
	return err == -ENOENT ? 0 : err;
}

static int scrape_read(const struct xrl_maps *m, struct scrape *s)
{
	int i, err;

	memset(s, 0, sizeof(*s));
	s->defs = calloc(XRL_MAX_RULES, sizeof(*s->defs));
	s->ids = calloc(XRL_MAX_RULES, sizeof(*s->ids));
	s->rs = calloc(XRL_MAX_RULES, sizeof(*s->rs));
	s->by_id = calloc(XRL_MAX_RULES, sizeof(*s->by_id));
	s->rule_tracked = calloc(XRL_MAX_RULES, sizeof(*s->rule_tracked));
	s->rule_blocked = calloc(XRL_MAX_RULES, sizeof(*s->rule_blocked));
	if (!s->defs || !s->ids || !s->rs || !s->by_id || !s->rule_tracked || !s->rule_blocked)
		return -ENOMEM;
	/* the order of xrl_cmd_stats: totals, rules, sources, then each rule's counters */
	if ((err = xrl_read_global(m, &s->g)) || (err = xrl_ruleset_read(m, s->defs, s->ids, &s->n)))
		return err;
	{
		struct xrl_source_census c;

		if ((err = xrl_census_sources(m, s->defs, s->ids, s->n, s->rule_tracked, &c)))
			return err;
		s->tracked[0] = c.tracked_v4;
		s->tracked[1] = c.tracked_v6;
		s->stale = c.stale;
	}
	s->capacity[0] = xrl_bucket_capacity(m->buckets_v4);
	s->capacity[1] = xrl_bucket_capacity(m->buckets_v6);
	if ((err = xrl_read_rule_stats_many(m, s->ids, s->n, s->rs)))
		return err;
	if ((err = (int)xrl_census_blocks(m, s->defs, s->ids, s->n, xrl_mono_ns(), s->rule_blocked)) < 0)
		return err;
	for (i = 0; i < s->n; i++)
		s->by_id[s->ids[i]] = i + 1;
	return xrl_top_read(m, &s->top, &s->ntop);
}

/* A label value as the exposition format wants it: \ " and newline escaped. */
void xrl_metrics_label(FILE *f, const char *sep, const char *name, const char *v)
{
	fprintf(f, "%s%s=\"", sep, name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

void xrl_metrics_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{instance="..."} v */
static void instance_sample(FILE *f, const char *name, const char *instance, unsigned long long v)
{
	fputs(name, f);
	xrl_metrics_label(f, "{", "instance", instance);
	fprintf(f, "} %llu\n", v);
}

/* A family with one series per instance. */
void xrl_metrics_instance_family(FILE *f, const char *name, const char *type, const char *help,
				 const char *instance, unsigned long long v)
{
	xrl_metrics_family(f, name, type, help);
	instance_sample(f, name, instance, v);
}

/* name{instance="...",LABEL="value"} v */
static void labelled_sample(FILE *f, const char *name, const char *instance, const char *label,
			    const char *value, unsigned long long v)
{
	fputs(name, f);
	xrl_metrics_label(f, "{", "instance", instance);
	xrl_metrics_label(f, ",", label, value);
	fprintf(f, "} %llu\n", v);
}

/*
 * --algo: a limit rule of another algorithm than the token bucket adds
 * algo="fixed-window" (...) after its other labels; token-bucket rules'
 * series stay as they were (no algo label: algo="" in PromQL).
 */
static void algo_label(FILE *f, const struct xrl_rule_def *d)
{
	if (d->action == XRL_ACT_LIMIT && d->algo != XRL_ALGO_TOKEN_BUCKET)
		xrl_metrics_label(f, ",", "algo", xrl_algo_name(d->algo));
}

/*
 * The top_k sources with the most drops among those that dropped in the
 * last XRL_TOP_RECENT_NS, as `xrl top` lists them: at most top_k series
 * whatever a random-source flood puts in the sketch. Sources of deleted
 * rules are left out: they have no rule to name, and two of them with the
 * same address would be the same series.
 */
static void top_family(FILE *f, const struct scrape *s, const char *instance, int top_k)
{
	static const char name[] = "xrl_top_source_dropped_packets";
	struct timespec ts;
	__u64 now;
	int i, shown = 0;

	xrl_metrics_family(f, name, "gauge",
	       "Estimated drops of the sources dropped most in the last 10 s, at most the top K of them "
	       "(per-CPU drop sketch sampled 1 drop in 8; counts start when a source takes its sketch "
	       "slot; rule counters are exact).");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
	for (i = 0; i < s->ntop && shown < top_k; i++) {
		const struct xrl_top_entry *t = &s->top[i];
		const struct xrl_rule_def *d;
		char src[64], match[XRL_MATCH_TEXT];

		if (now > t->last_ns && now - t->last_ns > XRL_TOP_RECENT_NS)
			continue;
		if (t->key.rule_id >= XRL_MAX_RULES || !s->by_id[t->key.rule_id])
			continue;
		d = &s->defs[s->by_id[t->key.rule_id] - 1];
		xrl_source_format(&t->key, d, src, sizeof(src));
		xrl_rule_format_match(d, match, sizeof(match));
		fputs(name, f);
		xrl_metrics_label(f, "{", "instance", instance);
		xrl_metrics_label(f, ",", "source", src);
		xrl_metrics_label(f, ",", "rule", match);
		algo_label(f, d);
		fprintf(f, "} %llu\n", (unsigned long long)t->dropped);
		shown++;
	}
}

/* Which rules a per-rule family has a series for. */
static bool is_limit(const struct xrl_rule_def *d) { return d->action == XRL_ACT_LIMIT; }
static bool has_newsrc(const struct xrl_rule_def *d) { return d->flags & XRL_F_NEWSRC; }
static bool has_budget(const struct xrl_rule_def *d)
{
	return (d->flags & XRL_F_NEWSRC) && d->new_period;
}
static bool has_total(const struct xrl_rule_def *d) { return d->flags & XRL_F_TOTAL; }
static bool has_shadow(const struct xrl_rule_def *d) { return d->policy & XRL_P_SHADOW; }
static bool has_block(const struct xrl_rule_def *d) { return d->policy & XRL_P_BLOCK; }
static bool has_synproxy(const struct xrl_rule_def *d) { return d->policy & XRL_P_SYNPROXY; }

/* Values that are not a counter of struct xrl_rule_stats. */
static void tracked_value(FILE *f, const struct scrape *s, int i)
{
	fprintf(f, "%ld", s->rule_tracked[i]);
}

/*
 * The new-source budget per second, so that an alert can compare
 * rate(xrl_rule_sources_created_total) + rate(xrl_new_sources_refused_total)
 * with it (as `xrl top` does, docs/xrl.8).
 */
static void budget_value(FILE *f, const struct scrape *s, int i)
{
	fprintf(f, "%.6g", (double)s->defs[i].new_rate / s->defs[i].new_period);
}

static void blocked_value(FILE *f, const struct scrape *s, int i)
{
	fprintf(f, "%ld", s->rule_blocked[i]);
}

#define RS(member) offsetof(struct xrl_rule_stats, member)

/*
 * The per-rule families, in the order of the exposition: a series per
 * rule (of the rules has selects; NULL: every rule) labelled
 * {instance,rule[,action][,algo]}, valued by a counter of struct
 * xrl_rule_stats at off (with action: passed at off, dropped at drop_off,
 * action="pass" and "drop") or by value.
 */
static const struct rule_series {
	const char *name, *type, *help;
	bool (*has)(const struct xrl_rule_def *d);
	bool action;
	size_t off, drop_off;
	void (*value)(FILE *f, const struct scrape *s, int i);
} rule_series[] = {
	{ "xrl_packets_total", "counter",
	  "Packets matched by each rule (its prefix and match), passed or dropped.",
	  .action = true, .off = RS(passed), .drop_off = RS(dropped) },
	{ "xrl_bytes_total", "counter",
	  "Bytes of the packets matched by each rule, passed or dropped.",
	  .action = true, .off = RS(passed_bytes), .drop_off = RS(dropped_bytes) },
	{ "xrl_new_sources_refused_total", "counter",
	  "Packets of sources without a bucket dropped by their rule's new-source budget "
	  "(--new-sources; also counted as dropped).",
	  .has = has_newsrc, .off = RS(new_refused) },
	{ "xrl_rule_sources_created_total", "counter",
	  "Buckets created for new sources of each limit rule (its share of "
	  "xrl_sources_created_total).",
	  .has = is_limit, .off = RS(created) },
	{ "xrl_rule_sources_tracked", "gauge", "Sources with a bucket of each limit rule now.",
	  .has = is_limit, .value = tracked_value },
	{ "xrl_rule_new_sources_budget", "gauge",
	  "New sources per second a rule with --new-sources gives a bucket at most (per host).",
	  .has = has_budget, .value = budget_value },
	{ "xrl_total_refused_total", "counter",
	  "Packets within their source's limit dropped by their rule's aggregate cap "
	  "(--total; also counted as dropped).",
	  .has = has_total, .off = RS(total_refused) },
	{ "xrl_shadow_dropped_total", "counter",
	  "Packets a shadow rule (--shadow) would have dropped and passed: what "
	  "enforcing it would drop.",
	  .has = has_shadow, .off = RS(shadow_dropped) },
	{ "xrl_blocked_total", "counter",
	  "Packets of sources in a rule's penalty box (--block; also counted as dropped, "
	  "or as shadow-dropped for a shadow rule).",
	  .has = has_block, .off = RS(blocked) },
	{ "xrl_synproxy_synacks_total", "counter",
	  "SYNs of unproven sources a --syn-proxy rule answered at XDP with a cookie SYN-ACK.",
	  .has = has_synproxy, .off = RS(synack_sent) },
	{ "xrl_synproxy_proven_total", "counter",
	  "ACKs that returned a valid cookie: handshakes proven (the source got its bucket).",
	  .has = has_synproxy, .off = RS(proven) },
	{ "xrl_synproxy_bad_cookies_total", "counter",
	  "Segments of unproven sources with no valid cookie and no socket: dropped.",
	  .has = has_synproxy, .off = RS(bad_cookie) },
	{ "xrl_blocked_sources", "gauge",
	  "Sources in a rule's penalty box now (--block; `xrl block list` lists them).",
	  .has = has_block, .value = blocked_value },
};

static __u64 rule_counter(const struct scrape *s, int i, size_t off)
{
	__u64 v;

	memcpy(&v, (const char *)&s->rs[i] + off, sizeof(v));
	return v;
}

/* One sample of a per-rule family: name{instance,rule[,action][,algo]} */
static void rule_sample_head(FILE *f, const char *name, const char *instance, const char *match,
			     const char *action, const struct xrl_rule_def *d)
{
	fputs(name, f);
	xrl_metrics_label(f, "{", "instance", instance);
	xrl_metrics_label(f, ",", "rule", match);
	if (action)
		xrl_metrics_label(f, ",", "action", action);
	algo_label(f, d);
	fputs("} ", f);
}

static void rule_families(FILE *f, const struct scrape *s, const char *in)
{
	size_t k;
	int i;

	for (k = 0; k < sizeof(rule_series) / sizeof(rule_series[0]); k++) {
		const struct rule_series *r = &rule_series[k];

		xrl_metrics_family(f, r->name, r->type, r->help);
		for (i = 0; i < s->n; i++) {
			const struct xrl_rule_def *d = &s->defs[i];
			char match[XRL_MATCH_TEXT];

			if (r->has && !r->has(d))
				continue;
			xrl_rule_format_match(d, match, sizeof(match));
			if (r->action) {
				rule_sample_head(f, r->name, in, match, "pass", d);
				fprintf(f, "%llu\n", (unsigned long long)rule_counter(s, i, r->off));
				rule_sample_head(f, r->name, in, match, "drop", d);
				fprintf(f, "%llu\n", (unsigned long long)rule_counter(s, i, r->drop_off));
				continue;
			}
			rule_sample_head(f, r->name, in, match, NULL, d);
			if (r->value)
				r->value(f, s, i);
			else
				fprintf(f, "%llu", (unsigned long long)rule_counter(s, i, r->off));
			fputc('\n', f);
		}
	}
}

static void write_scrape(FILE *f, const struct scrape *s, const struct xrl_metrics_opts *o)
{
	static const char *const fam[2] = { "ipv4", "ipv6" };
	const char *in = o->instance ? o->instance : "default";
	long live = s->tracked[0] + s->tracked[1] + s->stale;
	/* the controller never deletes buckets: whatever left the tables was evicted */
	__u64 evicted = xrl_evicted(&s->g, live);
	int i;

	rule_families(f, s, in);

	xrl_metrics_family(f, "xrl_instance_packets_total", "counter",
	       "Every frame the instance saw, passed or dropped for whatever reason.");
	labelled_sample(f, "xrl_instance_packets_total", in, "action", "pass",
			s->g.packets - s->g.dropped);
	labelled_sample(f, "xrl_instance_packets_total", in, "action", "drop", s->g.dropped);
	xrl_metrics_family(f, "xrl_instance_bytes_total", "counter",
	       "Bytes of every frame the instance saw, passed or dropped.");
	labelled_sample(f, "xrl_instance_bytes_total", in, "action", "pass",
			s->g.bytes - s->g.dropped_bytes);
	labelled_sample(f, "xrl_instance_bytes_total", in, "action", "drop", s->g.dropped_bytes);

	xrl_metrics_instance_family(f, "xrl_malformed_packets_total", "counter",
			"Truncated or invalid IP packets: dropped by --malformed drop; under pass, judged by the rules when their source is readable, else passed.",
			in, s->g.malformed);
	xrl_metrics_instance_family(f, "xrl_malformed_judged_packets_total", "counter",
			"Malformed IP packets whose source was read: judged by the rules (--malformed pass).",
			in, s->g.malformed_judged);
	xrl_metrics_instance_family(f, "xrl_vlan_deep_packets_total", "counter",
			"Frames with more VLAN tags than xrl walks (8): dropped whatever the policy.",
			in, s->g.vlan_deep);
	xrl_metrics_instance_family(f, "xrl_non_ip_packets_total", "counter",
			"Frames that are not IP, passed untouched.", in, s->g.non_ip);
	xrl_metrics_instance_family(f, "xrl_no_rule_packets_total", "counter",
			"IP packets that matched no rule, passed.", in, s->g.no_rule);

	xrl_metrics_family(f, "xrl_sources_tracked", "gauge",
	       "Sources with a bucket now, per bucket table (one per address family).");
	for (i = 0; i < 2; i++)
		labelled_sample(f, "xrl_sources_tracked", in, "family", fam[i],
				(unsigned long long)s->tracked[i]);
	xrl_metrics_instance_family(f, "xrl_sources_stale", "gauge",
			"Live buckets of removed rules or of an older version of a changed rule: not tracked, "
			"replaced by new sources as they come.", in, (unsigned long long)s->stale);
	xrl_metrics_family(f, "xrl_sources_capacity", "gauge",
	       "Size of each bucket table (attach --max-sources); a full table evicts its least "
	       "recently used source.");
	for (i = 0; i < 2; i++)
		labelled_sample(f, "xrl_sources_capacity", in, "family", fam[i], s->capacity[i]);
	xrl_metrics_instance_family(f, "xrl_sources_created_total", "counter",
			"Buckets created for new sources, both tables.", in, s->g.sources_created);
	xrl_metrics_instance_family(f, "xrl_source_evictions_total", "counter",
			"Buckets a full table evicted for newer sources (created minus tracked).", in,
			evicted);
	xrl_metrics_instance_family(f, "xrl_insert_failed_packets_total", "counter",
			"Packets decided without a bucket because none could be created.", in,
			s->g.insert_failed);
	xrl_metrics_instance_family(f, "xrl_cas_contended_packets_total", "counter",
			"Packets dropped because their bucket's compare-and-swap lost 8 times in a row.",
			in, s->g.cas_contended);
	xrl_metrics_instance_family(f, "xrl_limit_events_total", "counter",
			"Limit events written to the ring buffer (a source started being dropped).",
			in, s->g.events);
	xrl_metrics_instance_family(f, "xrl_limit_events_suppressed_total", "counter",
			"Limit events over the in-kernel bound of 100 a second, or with the ring full.",
			in, s->g.events_suppressed);
	xrl_metrics_instance_family(f, "xrl_rules", "gauge", "Rules in force.", in, (unsigned long long)s->n);
	top_family(f, s, in, o->top_k);
}

int xrl_metrics_render(FILE *out, const struct xrl_metrics_opts *o, const struct xrl_maps *m,
		       xrl_metrics_extra_fn extra, void *arg)
{
	struct xrl_instance in = { .name = o->instance ? o->instance : "default",
				   .pin_dir = o->pin_dir, .lock_fd = -1 };
	struct scrape s;
	int err;

	if ((err = lock_shared(&in)))
		return err;
	err = scrape_read(m, &s);
	xrl_instance_close(&in, NULL);
	if (!err) {
		write_scrape(out, &s, o);
		if (extra)
			extra(out, arg);
		if (fflush(out) || ferror(out))
			err = -EIO;
	}
	scrape_free(&s);
	return err;
}

int xrl_metrics_health(const struct xrl_metrics_opts *o, const struct xrl_maps *m, char *reason,
		       size_t len)
{
	const char *in = o->instance ? o->instance : "default";
	struct xrl_instance inst = { .name = in, .pin_dir = o->pin_dir, .lock_fd = -1 };
	struct xrl_global_stats g;
	int err;

	if ((err = xrl_read_global(m, &g))) {
		snprintf(reason, len, "cannot read the counters of instance '%s': %s", in,
			 strerror(-err));
		return err;
	}
	if (!o->pin_dir)
		return 0;
	err = xrl_instance_pinned_same(&inst, "xrl_stats", m->stats, reason, len);
	if (err == -ESTALE)
		snprintf(reason + strlen(reason), len - strlen(reason), " (restart the daemon)");
	return err;
}
