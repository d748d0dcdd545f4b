// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Controller scale and memory: a real xrl instance (attached natively to a
 * veth pair made here) whose IPv4 bucket table is filled with N tracked
 * sources; then the time to read them back from the maps, the time of the
 * real `xrl stats` / `xrl --json stats` / `xrl top` on that full table, and
 * the kernel memory per tracked source from the maps' own sizes.
 *
 *   build/xrl_bench_ctl [--sources N] [--runs K] [--xrl PATH]
 *
 * Not a test: bench/bench runs it. Cleans up on exit and on SIGINT/TERM.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xrl_common.h"
#include "xrl_maps.h"
#include "xrl_rule.h"
#include "xrl_table.h"

static char veth[16], instance[32], xrl[512] = "build/xrl";

static void cleanup(void)
{
	char cmd[768];

	snprintf(cmd, sizeof(cmd), "%s --instance %s detach %s >/dev/null 2>&1; ip link del %s 2>/dev/null",
		 xrl, instance, veth, veth);
	if (system(cmd) == -1)
		perror("cleanup");
}

static void on_signal(int sig)
{
	(void)sig;
	exit(130);   /* atexit cleanup runs */
}

static void die(const char *msg)
{
	fprintf(stderr, "xrl_bench_ctl: %s\n", msg);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* Wall time of a shell command, median of runs; its output goes to out. */
static double time_cmd(const char *cmd, int runs, const char *out)
{
	char full[2600];
	double t[99];
	int i;

	snprintf(full, sizeof(full), "%s > %s 2>&1", cmd, out);
	for (i = 0; i < runs; i++) {
		double t0 = now_s();

		if (system(full) != 0)
			die("a timed xrl command failed (see its output file)");
		t[i] = now_s() - t0;
	}
	return median(t, runs);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sources", required_argument, 0, 's' },
		{ "runs", required_argument, 0, 'r' },
		{ "xrl", required_argument, 0, 'x' },
		{ 0, 0, 0, 0 },
	};
	unsigned long sources = 1000000, i;
	int runs = 5, c, k;
	char cmd[2048], dir[128], out[64];
	struct xrl_maps m;
	struct xrl_set4 *tab;
	double walk[99], t_stats, t_json, t_top;
	__u32 nsets;
	__u64 seed;
	size_t tlen;
	long live;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 's')
			sources = strtoul(optarg, NULL, 10);
		else if (c == 'r')
			runs = atoi(optarg);
		else if (c == 'x')
			snprintf(xrl, sizeof(xrl), "%s", optarg);
		else
			die("usage: xrl_bench_ctl [--sources N] [--runs K] [--xrl PATH]");
	}
	if (sources < 1 || sources > XRL_DEFAULT_SOURCES || runs < 1 || runs > 99)
		die("--sources 1..1048576, --runs 1..99");

	snprintf(veth, sizeof(veth), "xrlbc%d", (int)getpid() % 100000);
	snprintf(instance, sizeof(instance), "benchctl%d", (int)getpid());
	snprintf(out, sizeof(out), "/tmp/xrl_bench_ctl.%d", (int)getpid());
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	snprintf(cmd, sizeof(cmd),
		 "ip link add %s type veth peer name %sp && ip link set %s up && ip link set %sp up && "
		 "%s --instance %s attach %s --mode native >/dev/null && "
		 "%s --instance %s rule add 10.0.0.0/12 --rate 1/h --burst 1 >/dev/null",
		 veth, veth, veth, veth, xrl, instance, veth, xrl, instance);
	if (system(cmd) != 0)
		die("cannot create the veth pair, attach xrl or add the rule (root needed)");
	snprintf(dir, sizeof(dir), "/sys/fs/bpf/xrl/%s", instance);
	if (xrl_maps_open_pinned(dir, &m))
		die("cannot open the instance's pinned maps");

	/* the fill: N sources of 10.0.0.0/12 under rule 0, as the data path writes them (its seed) */
	seed = xrl_hash_seed(&m);
	nsets = xrl_map_max_entries(m.buckets_v4);
	tlen = (size_t)nsets * sizeof(*tab);
	tlen = (tlen + (size_t)sysconf(_SC_PAGESIZE) - 1) / (size_t)sysconf(_SC_PAGESIZE) *
	       (size_t)sysconf(_SC_PAGESIZE);
	tab = mmap(NULL, tlen, PROT_READ | PROT_WRITE, MAP_SHARED, m.buckets_v4, 0);
	if (tab == MAP_FAILED)
		die("cannot map the bucket table (mmap of xrl_buckets_v4)");
	for (i = 0; i < sources; i++) {
		__u32 addr = htonl(0x0a000000u + (__u32)i), w;
		struct xrl_set4 *set = &tab[xrl_set_index(xrl_table_hash4(seed, 0, addr), nsets)];

		for (w = 0; w < XRL_WAYS4; w++) {
			if (!set->w[w].key) {
				set->w[w].st.passed = 1;
				set->w[w].key = xrl_key_with_version(xrl_key_word(0, addr), 1);
				break;
			}
		}
	}
	munmap(tab, tlen);

	/* reading every tracked source back (what stats and top walk) */
	for (k = 0; k < runs; k++) {
		double t0 = now_s();

		live = xrl_count_sources(&m);
		walk[k] = now_s() - t0;
	}
	if (live != (long)sources)
		fprintf(stderr, "note: %ld sources live after the fill of %lu (the others found their set full)\n",
			live, sources);

	snprintf(cmd, sizeof(cmd), "%s --instance %s stats", xrl, instance);
	t_stats = time_cmd(cmd, runs, out);
	snprintf(cmd, sizeof(cmd), "%s --instance %s --json stats", xrl, instance);
	t_json = time_cmd(cmd, runs, out);
	snprintf(cmd, sizeof(cmd), "%s --instance %s top", xrl, instance);
	t_top = time_cmd(cmd, runs, out);
	unlink(out);

	printf("controller scale and memory (median of %d runs)\n", runs);
	printf("  tracked IPv4 sources                         %10ld of %u\n", live,
	       xrl_bucket_capacity(m.buckets_v4));
	printf("  count the live entries of the table (mmap)   %10.1f ms  (%.0f ns per source)\n",
	       median(walk, runs) * 1e3, median(walk, runs) * 1e9 / (double)live);
	printf("  xrl stats, full table (whole command)        %10.1f ms\n", t_stats * 1e3);
	printf("  xrl --json stats, full table                 %10.1f ms\n", t_json * 1e3);
	printf("  xrl top (sketch, not the table)              %10.1f ms\n", t_top * 1e3);
	printf("  kernel memory of the bucket tables (memlock, preallocated at attach):\n");
	printf("    IPv4 table %8.1f MiB for %u sources = %5.0f bytes per source\n",
	       xrl_map_memlock(m.buckets_v4) / 1048576.0, xrl_bucket_capacity(m.buckets_v4),
	       (double)xrl_map_memlock(m.buckets_v4) / xrl_bucket_capacity(m.buckets_v4));
	printf("    IPv6 table %8.1f MiB for %u sources = %5.0f bytes per source\n",
	       xrl_map_memlock(m.buckets_v6) / 1048576.0, xrl_bucket_capacity(m.buckets_v6),
	       (double)xrl_map_memlock(m.buckets_v6) / xrl_bucket_capacity(m.buckets_v6));
	printf("    per-CPU drop sketch %.1f MiB, rule tables and counters %.1f MiB\n",
	       xrl_map_memlock(m.drop_sketch) / 1048576.0,
	       (xrl_map_memlock(m.rules_v4) + xrl_map_memlock(m.rules_v6) + xrl_map_memlock(m.rule_stats) +
		xrl_map_memlock(m.rule_defs)) / 1048576.0);
	xrl_maps_close(&m);
	return 0;
}
