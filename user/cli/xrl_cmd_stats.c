// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* stats: totals and per-rule counters, summed over CPUs. */
#include <stdio.h>
#include <string.h>

#include "xrl_box.h"
#include "xrl_cli.h"
#include "xrl_newsrc.h"
#include "xrl_rule.h"
#include "xrl_watch.h"

/* ---------------------------------------------------------------- options */

struct stats_opts {
	bool watch;
	const char *interval;
};

#define SO(member) XRL_OPT_FIELD(struct stats_opts, member)

enum { SO_WATCH, SO_INTERVAL, SO_N };

static const struct xrl_opt stats_opt_rows[SO_N] = {
	[SO_WATCH] = { "watch", 0, NULL, xrl_opt_flag, SO(watch), .modes = 1,
		       .help = "a live view with rates, redrawn until q" },
	[SO_INTERVAL] = { "interval", 'd', "SEC", xrl_opt_str, SO(interval), .modes = 1,
			  .flags = XRL_OPT_NESTED,
			  .help = "seconds between the frames of --watch (0.1 to 3600, default 1)" },
};

_Static_assert(SO_N <= 64, "xrl_opt_seen has a bit per row: at most 64 rows");

const struct xrl_opt_table xrl_stats_opts = {
	.name = "stats", .opts = stats_opt_rows, .n = SO_N, .nmodes = 1,
	.see = "see xrl --help",
};

/* The options' combinations and values: 0, or the exit code of the error reported. */
static int stats_check(struct xrl_ctx *ctx, const struct stats_opts *o, double *secs)
{
	int rc;

	if (o->interval && !o->watch)
		return xrl_error(ctx, XRL_EXIT_USAGE, "--interval (-d) sets the refresh of --watch: add --watch");
	if (o->watch && o->interval && (rc = xrl_watch_interval(ctx, o->interval, secs)))
		return rc;
	return o->watch ? xrl_watch_usable(ctx, "stats") : 0;
}

/*
 * New sources per second: the per-rule counters read again after
 * XRL_NEWSRC_WINDOW_NS into after[] (only when a limit rule exists: the
 * others get no bucket). The window's length in seconds, 0 when not read.
 */
static double stats_newsrc_window(const struct xrl_maps *m, const struct xrl_rule_def *defs,
				  const __u32 *ids, int n, const struct xrl_rule_stats *before,
				  struct xrl_rule_stats *after)
{
	__u64 t0, t1;
	int i;

	memcpy(after, before, (size_t)n * sizeof(*after));
	for (i = 0; i < n && defs[i].action != XRL_ACT_LIMIT; i++)
		;
	if (i == n)
		return 0;
	t0 = xrl_mono_ns();
	xrl_newsrc_wait();
	if (xrl_read_rule_stats_many(m, ids, n, after)) {
		memcpy(after, before, (size_t)n * sizeof(*after));
		return 0;
	}
	t1 = xrl_mono_ns();
	return t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
}

/* A rule's tracked sources and new-source rates in its JSON object. */
static void stats_newsrc_json(json_t *r, const struct xrl_rule_def *d, const struct xrl_rule_stats *a,
			      const struct xrl_rule_stats *b, long tracked, double window)
{
	struct xrl_newsrc_rate nr;

	if (d->action != XRL_ACT_LIMIT)
		return;
	xrl_newsrc_rates(d, a, b, window, &nr);
	json_object_set_new(r, "sources", json_integer((json_int_t)tracked));
	json_object_set_new(r, "new_sources_per_s", window > 0 ? json_real(nr.created) : json_null());
	if (d->flags & XRL_F_NEWSRC) {
		json_object_set_new(r, "new_refused_per_s", window > 0 ? json_real(nr.refused) : json_null());
		json_object_set_new(r, "new_budget_per_s", json_real(nr.budget));
	}
}

/* The rest of a rule's "N sources given a bucket" line. */
static void stats_newsrc_text(const struct xrl_rule_def *d, const struct xrl_rule_stats *a,
			      const struct xrl_rule_stats *b, long tracked, double window)
{
	struct xrl_newsrc_rate nr;
	char t[32], c[32];

	xrl_newsrc_rates(d, a, b, window, &nr);
	xrl_fmt_count((double)tracked, t, sizeof(t));
	xrl_fmt_count(nr.created, c, sizeof(c));
	printf(", %s tracked now; %s new/s over %.1f s\n", t, c, XRL_NEWSRC_WINDOW_NS / 1e9);
}

/* The rest of a rule's "N packets of new sources refused" line. */
static void stats_refused_text(const struct xrl_rule_def *d, const struct xrl_rule_stats *a,
			       const struct xrl_rule_stats *b, double window)
{
	struct xrl_newsrc_rate nr;
	char r[32];

	xrl_newsrc_rates(d, a, b, window, &nr);
	xrl_fmt_count(nr.refused, r, sizeof(r));
	printf(", %s/s over %.1f s (budget %llu/%s)\n", r, XRL_NEWSRC_WINDOW_NS / 1e9, (unsigned long long)d->new_rate,
	       d->new_period == 3600 ? "h" : d->new_period == 60 ? "m" : "s");
}

int xrl_cmd_stats(struct xrl_ctx *ctx, int argc, char **argv)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static struct xrl_rule_stats rs[XRL_MAX_RULES];
	static struct xrl_rule_stats rs2[XRL_MAX_RULES];
	static long tracked[XRL_MAX_RULES];
	static long blocked_now[XRL_MAX_RULES];   /* --block: sources in the penalty box now */
	static __u32 ids[XRL_MAX_RULES];
	struct xrl_source_census census;
	struct xrl_global_stats g;
	struct xrl_maps m;
	long sources;
	double window = 0;
	__u64 evicted, passed, passed_bytes;
	json_t *o, *rules;
	struct stats_opts so = { 0 };
	double secs = XRL_WATCH_DEFAULT_S;
	char err[XRL_ERRLEN];
	xrl_opt_seen seen = 0;
	int n, i = 1, rc;

	if (xrl_opts_parse(&xrl_stats_opts, 0, argc, argv, &i, &so, &seen, err, sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s", err);
	if (i != argc)
		return xrl_usage_error(ctx, argv[0]);
	if ((rc = stats_check(ctx, &so, &secs)))
		return rc;
	if (so.watch)
		return xrl_stats_watch(ctx, secs);
	if ((rc = xrl_instance_begin(ctx, &m, false)))
		return rc;
	if (xrl_read_global(&m, &g) || xrl_ruleset_read(&m, defs, ids, &n) ||
	    xrl_read_rule_stats_many(&m, ids, n, rs)) {
		xrl_instance_end(ctx, &m);
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot read the counters of instance '%s'",
				 ctx->instance);
	}
	if (xrl_census_sources(&m, defs, ids, n, tracked, &census)) {
		memset(&census, 0, sizeof(census));
		memset(tracked, 0, sizeof(tracked));
	}
	if (xrl_census_blocks(&m, defs, ids, n, xrl_mono_ns(), blocked_now) < 0)
		memset(blocked_now, 0, sizeof(blocked_now));
	sources = census.tracked;
	/* the controller never deletes buckets: whatever left the table was evicted */
	evicted = xrl_evicted(&g, census.tracked + census.stale);
	window = stats_newsrc_window(&m, defs, ids, n, rs, rs2);
	passed = g.packets - g.dropped;
	passed_bytes = g.bytes - g.dropped_bytes;

	rules = json_array();
	for (i = 0; i < n; i++) {
		struct xrl_rule_stats s = rs[i];
		char pfx[64], match[XRL_MATCH_TEXT];
		json_t *r;

		xrl_prefix_format(defs[i].family, defs[i].addr, defs[i].plen, pfx, sizeof(pfx));
		xrl_rule_format_match(&defs[i], match, sizeof(match));
		r = json_pack("{s:i,s:s,s:s,s:s,s:I,s:I,s:I,s:I}", "id", (int)ids[i], "prefix", pfx,
			      "match", match, "action", xrl_action_name(defs[i].action),
			      "passed", (json_int_t)s.passed, "dropped", (json_int_t)s.dropped,
			      "passed_bytes", (json_int_t)s.passed_bytes,
			      "dropped_bytes", (json_int_t)s.dropped_bytes);
		json_object_set_new(r, "new_refused", json_integer((json_int_t)s.new_refused));
		json_object_set_new(r, "total_refused", json_integer((json_int_t)s.total_refused));
		json_object_set_new(r, "sources_created", json_integer((json_int_t)s.created));
		stats_newsrc_json(r, &defs[i], &s, &rs2[i], tracked[i], window);
		if (defs[i].action == XRL_ACT_LIMIT)   /* --algo */
			json_object_set_new(r, "algo", json_string(xrl_algo_name(defs[i].algo)));
		/* --shadow: what the rule would have dropped (passed); --block: drops of blocked sources */
		json_object_set_new(r, "shadow_dropped", json_integer((json_int_t)s.shadow_dropped));
		json_object_set_new(r, "shadow_dropped_bytes",
				    json_integer((json_int_t)s.shadow_dropped_bytes));
		json_object_set_new(r, "blocked", json_integer((json_int_t)s.blocked));
		json_object_set_new(r, "blocked_sources", json_integer((json_int_t)blocked_now[i]));
		if (defs[i].policy & XRL_P_SYNPROXY) {
			/* --syn-proxy: cookies sent, handshakes proven, ACKs refused */
			json_object_set_new(r, "synack_sent", json_integer((json_int_t)s.synack_sent));
			json_object_set_new(r, "proven", json_integer((json_int_t)s.proven));
			json_object_set_new(r, "bad_cookie", json_integer((json_int_t)s.bad_cookie));
		}
		if (defs[i].policy & XRL_P_SHADOW)
			json_object_set_new(r, "shadow", json_true());
		json_array_append_new(rules, r);
	}
	o = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
		      "instance", ctx->instance,
		      "packets", (json_int_t)g.packets,
		      "passed", (json_int_t)passed, "dropped", (json_int_t)g.dropped,
		      "passed_bytes", (json_int_t)passed_bytes, "dropped_bytes", (json_int_t)g.dropped_bytes,
		      "malformed", (json_int_t)g.malformed, "non_ip", (json_int_t)g.non_ip,
		      "no_rule", (json_int_t)g.no_rule, "sources", (json_int_t)sources,
		      "capacity", (json_int_t)xrl_bucket_capacity(m.buckets_v4),
		      "created", (json_int_t)g.sources_created, "evicted", (json_int_t)evicted);
	json_object_set_new(o, "insert_failed", json_integer((json_int_t)g.insert_failed));
	json_object_set_new(o, "evicted_seen", json_integer((json_int_t)g.evicted_seen));
	json_object_set_new(o, "cas_contended", json_integer((json_int_t)g.cas_contended));
	json_object_set_new(o, "events", json_integer((json_int_t)g.events));
	json_object_set_new(o, "events_suppressed", json_integer((json_int_t)g.events_suppressed));
	json_object_set_new(o, "malformed_judged", json_integer((json_int_t)g.malformed_judged));
	json_object_set_new(o, "vlan_deep", json_integer((json_int_t)g.vlan_deep));
	json_object_set_new(o, "stale", json_integer((json_int_t)census.stale));
	/* the nominal window (the rates use the measured one): equal readings give equal output */
	json_object_set_new(o, "new_sources_window_s",
			    window > 0 ? json_real(XRL_NEWSRC_WINDOW_NS / 1e9) : json_null());

	if (ctx->json) {
		json_object_set_new(o, "rules", rules);
		xrl_json_print(ctx, o);
	} else {
		char a[32], b[32], c[32], d[32];

		xrl_fmt_count((double)passed, a, sizeof(a));
		xrl_fmt_bytes((double)passed_bytes, b, sizeof(b));
		xrl_fmt_count((double)g.dropped, c, sizeof(c));
		xrl_fmt_bytes((double)g.dropped_bytes, d, sizeof(d));
		printf("instance %s: passed %s pkts (%s), dropped %s pkts (%s)\n", ctx->instance, a, b, c, d);
		xrl_fmt_count((double)g.malformed, a, sizeof(a));
		xrl_fmt_count((double)g.non_ip, b, sizeof(b));
		xrl_fmt_count((double)g.no_rule, c, sizeof(c));
		printf("malformed %s, non-IP %s, no rule %s; %ld sources tracked (capacity %u per family), %llu evicted",
		       a, b, c, sources, xrl_bucket_capacity(m.buckets_v4), (unsigned long long)evicted);
		if (census.stale)
			printf(", %ld stale (buckets of removed or changed rules, replaced as sources come)",
			       census.stale);
		printf("\n\n");
		printf("%-40s %-6s %10s %10s %10s %10s\n", "RULE", "ACTION", "PASSED", "DROPPED",
		       "PASS B", "DROP B");
		for (i = 0; i < n; i++) {
			json_t *r = json_array_get(rules, (size_t)i);
			char p[32], dr[32], pb[32], db[32];

			xrl_fmt_count((double)json_integer_value(json_object_get(r, "passed")), p, sizeof(p));
			xrl_fmt_count((double)json_integer_value(json_object_get(r, "dropped")), dr, sizeof(dr));
			xrl_fmt_bytes((double)json_integer_value(json_object_get(r, "passed_bytes")), pb, sizeof(pb));
			xrl_fmt_bytes((double)json_integer_value(json_object_get(r, "dropped_bytes")), db, sizeof(db));
			printf("%-40s %-6s %10s %10s %10s %10s\n",
			       json_string_value(json_object_get(r, "match")),
			       json_string_value(json_object_get(r, "action")), p, dr, pb, db);
		}
		for (i = 0; i < n; i++) {
			char cr[32];

			if (defs[i].action != XRL_ACT_LIMIT)
				continue;
			xrl_fmt_count((double)rs[i].created, cr, sizeof(cr));
			printf("%s: %s sources given a bucket",
			       json_string_value(json_object_get(json_array_get(rules, (size_t)i), "match")), cr);
			stats_newsrc_text(&defs[i], &rs[i], &rs2[i], tracked[i], window);
		}
		for (i = 0; i < n; i++) {
			char nr[32];

			if (!(defs[i].flags & XRL_F_NEWSRC))
				continue;
			xrl_fmt_count((double)rs[i].new_refused, nr, sizeof(nr));
			printf("%s: %s packets of new sources refused by --new-sources",
			       json_string_value(json_object_get(json_array_get(rules, (size_t)i), "match")), nr);
			stats_refused_text(&defs[i], &rs[i], &rs2[i], window);
		}
		for (i = 0; i < n; i++) {
			char tr[32];

			if (!(defs[i].flags & XRL_F_TOTAL))
				continue;
			xrl_fmt_count((double)rs[i].total_refused, tr, sizeof(tr));
			printf("%s: %s packets refused by the --total cap\n",
			       json_string_value(json_object_get(json_array_get(rules, (size_t)i), "match")), tr);
		}
		for (i = 0; i < n; i++) {
			char sd[32], bl[32];

			if (!defs[i].policy)
				continue;
			xrl_fmt_count((double)rs[i].shadow_dropped, sd, sizeof(sd));
			xrl_fmt_count((double)rs[i].blocked, bl, sizeof(bl));
			if (defs[i].policy & XRL_P_SHADOW)
				printf("%s: shadow: %s packets it would have dropped, passed\n",
				       json_string_value(json_object_get(json_array_get(rules, (size_t)i), "match")), sd);
			if (defs[i].policy & XRL_P_BLOCK)
				printf("%s: %s packets of blocked sources%s; %ld blocked now\n",
				       json_string_value(json_object_get(json_array_get(rules, (size_t)i), "match")), bl,
				       defs[i].policy & XRL_P_SHADOW ? " (shadow: passed)" : "", blocked_now[i]);
			if (defs[i].policy & XRL_P_SYNPROXY) {
				char sa[32], pr[32], bc[32];

				xrl_fmt_count((double)rs[i].synack_sent, sa, sizeof(sa));
				xrl_fmt_count((double)rs[i].proven, pr, sizeof(pr));
				xrl_fmt_count((double)rs[i].bad_cookie, bc, sizeof(bc));
				printf("%s: syn-proxy: %s SYN-ACKs sent, %s handshakes proven, %s bad cookies dropped\n",
				       json_string_value(json_object_get(json_array_get(rules, (size_t)i), "match")),
				       sa, pr, bc);
			}
		}
		json_decref(rules);
		json_decref(o);
	}
	xrl_instance_end(ctx, &m);
	return 0;
}
