// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* top: the sources with the most drops now, from the per-CPU drop sketch. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xrl_cli.h"
#include "xrl_rule.h"
#include "xrl_watch.h"

#define TOP_USAGE "usage: xrl top [-n N] [--watch [--interval SEC]]"

int xrl_cmd_top(struct xrl_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "count", required_argument, 0, 'n' },
		{ "watch", no_argument, 0, 'w' },
		{ "interval", required_argument, 0, 'd' },
		{ 0, 0, 0, 0 },
	};
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	struct xrl_top_entry *top = NULL;
	struct xrl_maps m;
	struct timespec ts;
	char msg[XRL_ERRLEN];
	__u64 count = 10, now;
	const char *interval = NULL;
	bool watch = false, count_given = false;
	double secs = XRL_WATCH_DEFAULT_S;
	json_t *arr;
	int c, n, nd, i, shown = 0, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "n:d:", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (xrl_parse_uint("-n", optarg, 1, 100000, &count, msg, sizeof(msg)))
				return xrl_error(ctx, XRL_EXIT_USAGE, "%s", msg);
			count_given = true;
			break;
		case 'w':
			watch = true;
			break;
		case 'd':
			interval = optarg;
			break;
		default:
			return xrl_error(ctx, XRL_EXIT_USAGE, TOP_USAGE);
		}
	}
	if (optind != argc)
		return xrl_error(ctx, XRL_EXIT_USAGE, TOP_USAGE);
	if (interval && !watch)
		return xrl_error(ctx, XRL_EXIT_USAGE, "--interval (-d) sets the refresh of --watch: add --watch");
	if (watch) {
		if ((interval && (rc = xrl_watch_interval(ctx, interval, &secs))) ||
		    (rc = xrl_watch_usable(ctx, "top")))
			return rc;
		/* without -n the live view fills the terminal */
		return xrl_top_watch(ctx, secs, count_given ? count : UINT64_MAX);
	}
	if ((rc = xrl_instance_begin(ctx, &m, false)))
		return rc;
	if (xrl_ruleset_read(&m, defs, ids, &nd) || xrl_top_read(&m, &top, &n)) {
		xrl_instance_end(ctx, &m);
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot read the drop sketch of instance '%s'",
				 ctx->instance);
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;

	arr = json_array();
	if (!ctx->json)
		printf("%-40s %-40s %10s %10s %9s\n", "SOURCE", "RULE", "PASSED", "DROPPED", "LAST DROP");
	for (i = 0; i < n && (__u64)shown < count; i++) {
		const struct xrl_rule_def *d = NULL;
		char src[64], rule[192] = "(deleted rule)";
		__u64 passed;
		int j;

		if (now > top[i].last_ns && now - top[i].last_ns > XRL_TOP_RECENT_NS)
			continue;
		for (j = 0; j < nd; j++)
			if (ids[j] == top[i].key.rule_id)
				d = &defs[j];
		if (d)
			xrl_rule_format_match(d, rule, sizeof(rule));
		xrl_source_format(&top[i].key, d, src, sizeof(src));
		passed = xrl_source_passed(&m, &top[i].key);   /* only for the rows shown */
		shown++;
		if (ctx->json) {
			json_array_append_new(arr, json_pack("{s:s,s:s,s:I,s:I,s:f}", "source", src, "rule", rule,
							     "passed", (json_int_t)passed,
							     "dropped", (json_int_t)top[i].dropped,
							     "last_drop_age_s",
							     now > top[i].last_ns ? (now - top[i].last_ns) / 1e9 : 0.0));
		} else {
			char p[32], dr[32];

			xrl_fmt_count((double)passed, p, sizeof(p));
			xrl_fmt_count((double)top[i].dropped, dr, sizeof(dr));
			printf("%-40s %-40s %10s %10s %8.1fs\n", src, rule, p, dr,
			       now > top[i].last_ns ? (now - top[i].last_ns) / 1e9 : 0.0);
		}
	}
	if (ctx->json)
		xrl_json_print(ctx, arr);
	else {
		if (!shown)
			printf("(no source dropped in the last %llu s)\n", XRL_TOP_RECENT_NS / 1000000000ULL);
		json_decref(arr);
	}
	free(top);
	xrl_instance_end(ctx, &m);
	return 0;
}
