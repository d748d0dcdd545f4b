// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The cost of the daemon's sync round, isolated from traffic: the real XDP
 * object's maps (loaded, not attached), one --global rule, N (rule, source)
 * pairs in xrl_fleet_used that all admitted packets since the last round
 * (as N sources over budget do at any rate above one token per round), and
 * the daemon's own round (user/daemon/xrl_fleet.c) against a real redis-server.
 * Rounds run at the sync interval for a few seconds, so the demand reports
 * (at most one a second per source) are in the figures as they would be.
 *
 *   build/xrl_bench_fleet --redis-port PORT|--redis URL [--sources N] [--seconds S] [--interval MS]
 *                         [--host ID] [--algo token-bucket|fixed-window|sliding-window|sliding-log]
 *
 * --redis redis-cluster://HOST:PORT,...: the round against a Redis Cluster;
 * then a line per master: the keys (sources) it was sent, their share of
 * all, the time waited for it. Every run ends with the round's own CPU time
 * (user + system of this process during xrl_fleet_round only, not the bench's
 * own map writes that stand for the data path: per round).
 *
 * Several at once with different --host IDs are hosts of one fleet: the
 * same keys in the same Redis. --algo: the rule's algorithm, so the round
 * calls window.lua or log.lua instead of gcra.lua (a sliding log of 64 per
 * second, the most it keeps; the others 1000 per second).
 *
 * Not a test: bench/bench_fleet.sh runs it and prints what it prints.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <bpf/bpf.h>
#include <hiredis/hiredis.h>

#include "xrl_fleet.h"
#include "xrl_log.h"
#include "xrl_testlib.h"

/* user + system time of a getrusage, ms */
static double ru_ms(const struct rusage *r)
{
	return (r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1e3 +
	       (r->ru_utime.tv_usec + r->ru_stime.tv_usec) / 1e3;
}

/*
 * A Redis process' own CPU time so far (INFO cpu: used_cpu_sys +
 * used_cpu_user, seconds), asked on a connection of its own; -1 if it did
 * not say. Beside the round: which process bounds it.
 */
static double redis_cpu(const char *host, int port, const char *password)
{
	struct timeval tv = { 2, 0 };
	redisContext *c = redisConnectWithTimeout(host, port, tv);
	redisReply *rep = NULL;
	double cpu = -1;
	const char *p;

	if (!c || c->err)
		goto out;
	if (password[0]) {
		rep = redisCommand(c, "AUTH %s", password);
		if (!rep)
			goto out;
		freeReplyObject(rep);
	}
	rep = redisCommand(c, "INFO cpu");
	if (rep && rep->type == REDIS_REPLY_STRING && (p = strstr(rep->str, "used_cpu_sys:"))) {
		cpu = strtod(p + 13, NULL);
		if ((p = strstr(rep->str, "used_cpu_user:")))
			cpu += strtod(p + 14, NULL);
	}
	if (rep)
		freeReplyObject(rep);
out:
	if (c)
		redisFree(c);
	return cpu;
}

/* The CPU so far of the one Redis (i = 0) or of cluster node i (its map). */
static double node_cpu(const struct xrl_fleet *f, int i)
{
	if (!f->redis.node)
		return redis_cpu(f->redis.url.host, f->redis.url.port, f->redis.url.password);
	return redis_cpu(f->redis.map->node[i].host, f->redis.map->node[i].port,
			 f->redis.url.password);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "redis-port", required_argument, 0, 'p' },
		{ "redis", required_argument, 0, 'r' },
		{ "sources", required_argument, 0, 'n' },
		{ "seconds", required_argument, 0, 's' },
		{ "interval", required_argument, 0, 'i' },
		{ "host", required_argument, 0, 'h' },
		{ "algo", required_argument, 0, 'a' },
		{ 0, 0, 0, 0 },
	};
	static char rule[128] = "10.0.0.0/8 --rate 1000/s --burst 100 --global";
	const char *rules[] = { rule, NULL };
	static struct xrl_fleet fleet;
	const char *host = "bench-host", *url = NULL;
	int port = 0, n = 10000, seconds = 5, interval_ms = 100, c, i, rounds = 0, id;
	struct xrl_bucket_key *keys;
	struct xrl_fleet_used *vals;
	double *times, sum = 0;
	unsigned long cmds0, reports0;
	static unsigned long keys0[XRL_CLUSTER_NODES];
	static double wait0[XRL_CLUSTER_NODES], cpu0[XRL_CLUSTER_NODES];
	struct rusage r0, r1;
	double cpu_ms = 0;
	struct xrl_tl t;
	__u64 t_end, next;
	__u32 count;

	/* a write to a master that died mid-round fails with EPIPE, as in the daemon */
	signal(SIGPIPE, SIG_IGN);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p': port = atoi(optarg); break;
		case 'r': url = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 's': seconds = atoi(optarg); break;
		case 'i': interval_ms = atoi(optarg); break;
		case 'h': host = optarg; break;
		case 'a':
			if (!strcmp(optarg, "sliding-log"))
				snprintf(rule, sizeof(rule), "10.0.0.0/8 --rate 64/s --algo sliding-log --global");
			else if (!strcmp(optarg, "fixed-window") || !strcmp(optarg, "sliding-window"))
				snprintf(rule, sizeof(rule), "10.0.0.0/8 --rate 1000/s --algo %s --global",
					 optarg);
			else if (strcmp(optarg, "token-bucket")) {
				fprintf(stderr, "xrl_bench_fleet: --algo %s: token-bucket, fixed-window, sliding-window or sliding-log\n",
					optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: xrl_bench_fleet --redis-port PORT|--redis URL [--sources N] [--seconds S] [--interval MS] [--host ID] [--algo ALGO]\n");
			return 2;
		}
	}
	if ((port <= 0 && !url) || n <= 0 || n > XRL_FLEET_SOURCES || seconds <= 0 || interval_ms <= 0) {
		fprintf(stderr, "xrl_bench_fleet: --redis-port or --redis is required; 1 <= --sources <= %d\n",
			XRL_FLEET_SOURCES);
		return 2;
	}
	xrl_log_init("text", "bench");
	if (xrl_tl_open(&t, 1024, 0) || xrl_tl_rules(&t, rules))
		return 1;
	id = xrl_tl_rule_id(&t, "10.0.0.0/8");
	keys = calloc(n, sizeof(*keys));
	vals = calloc(n, sizeof(*vals));
	times = calloc((size_t)seconds * 1000 / interval_ms + 16, sizeof(*times));
	if (!keys || !vals || !times || id < 0)
		return 1;
	for (i = 0; i < n; i++) {
		keys[i].rule_id = id;
		keys[i].family = 4;
		keys[i].addr[0] = htonl(0x0a000000u + i);
		vals[i].born_ns = xrl_mono_ns();
	}

	if (url) {
		char err[256];

		if (xrl_redis_parse_url(url, &fleet.redis.url, err, sizeof(err))) {
			fprintf(stderr, "xrl_bench_fleet: %s\n", err);
			return 2;
		}
	} else {
		snprintf(fleet.redis.url.host, sizeof(fleet.redis.url.host), "127.0.0.1");
		fleet.redis.url.port = port;
	}
	fleet.redis.timeout.tv_sec = 1;
	if (xrl_fleet_init(&fleet, &t.maps, "bench", host, interval_ms * 1000000ull,
			   XRL_POLICY_LOCAL)) {
		fprintf(stderr, "xrl_bench_fleet: out of memory\n");
		return 1;
	}
	{
		struct xrl_rule_def defs[XRL_MAX_RULES];
		__u32 ids[XRL_MAX_RULES];
		int nd;

		if (xrl_ruleset_read(&t.maps, defs, ids, &nd))
			return 1;
		xrl_fleet_set_rules(&fleet, defs, ids, nd);
	}

	/*
	 * Every source admits 120 packets a round where its budget is 100 (1000/s
	 * at 100 ms) and drops 400: over budget, as a host pacing itself at its
	 * share with the slack admits, so the fleet's TAT runs ahead of Redis'
	 * clock as it does for a source held back.
	 */
	cmds0 = reports0 = 0;
	next = xrl_mono_ns();
	t_end = next + (__u64)seconds * 1000000000ull;
	for (;;) {
		__u64 t0;
		struct timespec ts;

		for (i = 0; i < n; i++) {
			vals[i].passed += 120;
			vals[i].dropped += 400;
		}
		count = n;
		if (bpf_map_update_batch(t.maps.fleet_used, keys, vals, &count, NULL)) {
			perror("xrl_bench_fleet: update xrl_fleet_used");
			return 1;
		}
		t0 = xrl_mono_ns();
		getrusage(RUSAGE_SELF, &r0);
		if (xrl_fleet_round(&fleet))
			return 1;
		getrusage(RUSAGE_SELF, &r1);
		if (rounds > 0)
			cpu_ms += ru_ms(&r1) - ru_ms(&r0);
		if (!fleet.redis_up) {
			fprintf(stderr, "xrl_bench_fleet: redis %s: %s\n", url ? url : "", fleet.last_error);
			return 1;
		}
		if (rounds == 0) {
			/* the first round also connects and loads the scripts: not counted */
			cmds0 = fleet.redis.commands;
			reports0 = fleet.reported_total;
			if (fleet.redis.node)
				for (i = 0; i < XRL_CLUSTER_NODES; i++)
					keys0[i] = fleet.redis.node[i].keys, wait0[i] = fleet.redis.node[i].wait_s;
			for (i = 0; i < (fleet.redis.node ? fleet.redis.map->nnodes : 1); i++)
				cpu0[i] = node_cpu(&fleet, i);
		} else {
			times[rounds - 1] = (xrl_mono_ns() - t0) / 1e6;
			sum += times[rounds - 1];
		}
		rounds++;
		if (xrl_mono_ns() >= t_end)
			break;
		next += interval_ms * 1000000ull;
		ts.tv_sec = next / 1000000000ull;
		ts.tv_nsec = next % 1000000000ull;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	rounds--;
	qsort(times, rounds, sizeof(*times), cmp_double);
	printf("%s: fleet round (%s), %d sources over budget, sync every %d ms, %d rounds: mean %.1f ms, median %.1f ms, max %.1f ms (%.0f %% of the interval); %.0f Redis commands and %.0f sources reported per round\n",
	       host, xrl_algo_name(fleet.rules[id].algo), n, interval_ms, rounds, sum / rounds, times[rounds / 2], times[rounds - 1],
	       100.0 * (sum / rounds) / interval_ms,
	       (double)(fleet.redis.commands - cmds0) / rounds,
	       (double)(fleet.reported_total - reports0) / rounds);
	printf("%s: the round's own CPU (this process, user + system): %.1f ms per round, %.2f µs per source reported\n",
	       host, cpu_ms / rounds,
	       cpu_ms * 1e3 / ((double)(fleet.reported_total - reports0) ?: 1));
	if (!fleet.redis.node) {
		double cpu = node_cpu(&fleet, 0);

		/* every host's reports, when several run at once: per source of this one's as if alone */
		if (cpu >= 0 && cpu0[0] >= 0)
			printf("%s: redis %s:%d: its CPU (INFO, all its clients) %.1f ms per round of this host\n",
			       host, fleet.redis.url.host, fleet.redis.url.port,
			       (cpu - cpu0[0]) * 1e3 / rounds);
	}
	if (fleet.redis.node) {
		unsigned long all = 0;

		for (i = 0; i < fleet.redis.map->nnodes; i++)
			all += fleet.redis.node[i].keys - keys0[i];
		for (i = 0; i < fleet.redis.map->nnodes; i++) {
			unsigned long k = fleet.redis.node[i].keys - keys0[i];

			if (!fleet.redis.map->master[i])
				continue;
			double cpu = node_cpu(&fleet, i);

			printf("%s: master %s:%d: %.0f keys per round (%.1f %% of all), waited %.2f ms per round, its CPU (INFO) %.1f ms per round\n",
			       host, fleet.redis.map->node[i].host, fleet.redis.map->node[i].port,
			       (double)k / rounds, all ? 100.0 * k / all : 0,
			       (fleet.redis.node[i].wait_s - wait0[i]) * 1e3 / rounds,
			       cpu >= 0 && cpu0[i] >= 0 ? (cpu - cpu0[i]) * 1e3 / rounds : NAN);
		}
	}
	xrl_fleet_release(&fleet);
	xrl_fleet_free(&fleet);
	xrl_tl_close(&t);
	return 0;
}
