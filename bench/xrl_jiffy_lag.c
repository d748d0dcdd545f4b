// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * How far jiffies lag CLOCK_MONOTONIC as the data path sees them: reads
 * both through the probe bench/xrl_jiffy_lag.bpf.o every INTERVAL_US for
 * SECS seconds and prints, per reading, the lateness of the jiffy update
 * (exact - j x tick - P, P the lowest exact - j x tick of the run, so 0 at
 * the freshest reading and up to a tick when updates are on time) as a
 * histogram in quarter ticks, and the jiffy clock's lag as xrl's data path
 * computes it (its offset one tick under the lowest: lateness + tick).
 * usage: xrl_jiffy_lag OBJ SECS INTERVAL_US TICK_NS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	unsigned char pkt[64] = { 0 }, out[64];
	unsigned long long *v = (unsigned long long *)out, tick, n = 0, i, max = 0;
	long long *d;
	long long minv = 0;
	unsigned long cap, hist[64] = { 0 };
	double secs;
	struct timespec t0, t;
	int fd, us;

	if (argc != 5) {
		fprintf(stderr, "usage: %s OBJ SECS INTERVAL_US TICK_NS\n", argv[0]);
		return 2;
	}
	secs = atof(argv[2]);
	us = atoi(argv[3]);
	tick = strtoull(argv[4], NULL, 10);
	cap = (unsigned long)(secs * 1e6 / (us > 0 ? us : 1)) + 16;
	d = calloc(cap, sizeof(*d));
	obj = bpf_object__open_file(argv[1], NULL);
	if (!d || !obj || bpf_object__load(obj)) {
		fprintf(stderr, "cannot load %s\n", argv[1]);
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "xrl_jiffy_lag");
	fd = bpf_program__fd(prog);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt),
			    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);
		if (bpf_prog_test_run_opts(fd, &o)) {
			perror("BPF_PROG_TEST_RUN");
			return 1;
		}
		d[n] = (long long)(v[0] - v[1] * tick);
		if (!n || d[n] < minv)
			minv = d[n];
		n++;
		usleep(us);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (n < cap && (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	for (i = 0; i < n; i++) {
		unsigned long long late = (unsigned long long)(d[i] - minv);
		unsigned long b = late * 4 / tick;

		hist[b < 63 ? b : 63]++;
		if (late > max)
			max = late;
	}
	printf("readings %llu; jiffy update lateness: max %.3f ms (%.2f ticks); the data path's jiffy clock lag: max %.3f ms (%.2f ticks)\n",
	       n, max / 1e6, (double)max / tick, (max + tick) / 1e6, (double)(max + tick) / tick);
	printf("lateness in quarter ticks (bin: readings):");
	for (i = 0; i < 64; i++)
		if (hist[i])
			printf(" %llu:%lu", i, hist[i]);
	printf("\nover one tick late (lag over two ticks): %lu of %llu readings\n",
	       ({ unsigned long s = 0; for (i = 4; i < 64; i++) s += hist[i]; s; }), n);
	return 0;
}
