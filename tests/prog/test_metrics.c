// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The Prometheus exporter against the real XDP object (test-clock build):
 * known traffic through BPF_PROG_TEST_RUN, then the exposition text checked
 * series by series against the maps, against `xrl stats --json` on the same
 * maps pinned as an instance, and by promtool; the top-K bound under 100,000
 * distinct dropped sources; the HTTP server over real TCP sockets (status
 * codes, content type, health, bind errors, a writer holding the lock,
 * scrapes during rule changes); and the Grafana dashboard's queries against
 * the metric names the exporter emits.
 */
#define _GNU_SOURCE   /* strcasestr */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <jansson.h>
#include <cmocka.h>

#include "xrl_tl_assert.h"
#include "xrl_metrics.h"
#include "xrl_rule.h"
#include "xrl_cli.h"
#include "xrl_test.skel.h"

#define INST "mtest"
#define SEC_NS 1000000000ULL

/* ---- helpers: exposition text ---- */

static char *render(const struct xrl_metrics_opts *o, const struct xrl_maps *m,
		    xrl_metrics_extra_fn extra, void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	assert_non_null(f);
	err = xrl_metrics_render(f, o, m, extra, arg);
	fclose(f);
	if (err)
		fail_msg("render: %s", strerror(-err));
	return buf;
}

/* Value of the sample whose name and labels are exactly series; fails when absent. */
static unsigned long long value(const char *text, const char *series)
{
	size_t n = strlen(series);
	const char *p = text;

	while ((p = strstr(p, series))) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
		p += n;
	}
	fail_msg("no sample %s in:\n%s", series, text);
	return 0;
}

static bool has_series(const char *text, const char *series)
{
	size_t n = strlen(series);
	const char *p = text;

	while ((p = strstr(p, series))) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return true;
		p += n;
	}
	return false;
}

static int count_lines_starting(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	const char *p = text;
	int c = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');

		if (!strncmp(p, prefix, n))
			c++;
		if (!nl)
			break;
		p = nl + 1;
	}
	return c;
}

/* Every sample line (name and labels) appears once: promtool does not check this. */
static void assert_series_unique(const char *text)
{
	char *copy = strdup(text), *line, *save = NULL;
	char **seen = calloc(200000, sizeof(*seen));
	int n = 0, i;

	assert_non_null(copy);
	assert_non_null(seen);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp;

		if (line[0] == '#')
			continue;
		sp = strrchr(line, ' ');
		assert_non_null(sp);
		*sp = '\0';
		for (i = 0; i < n; i++)
			if (!strcmp(seen[i], line))
				fail_msg("series %s appears twice", line);
		assert_true(n < 200000);
		seen[n++] = line;
	}
	free(seen);
	free(copy);
}

/* promtool check metrics: exit 0 and no complaint. */
static void assert_promtool_ok(const char *text)
{
	char path[] = "/tmp/xrl_metrics_XXXXXX", cmd[256], out[4096] = "";
	int fd = mkstemp(path), rc;
	size_t got;
	FILE *p;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	got = fread(out, 1, sizeof(out) - 1, p);
	out[got] = '\0';
	rc = pclose(p);
	unlink(path);
	if (rc != 0 || got)
		fail_msg("promtool check metrics (exit %d): %s", WEXITSTATUS(rc), out);
}

/* ---- helpers: traffic ---- */

static struct xrl_tl tl;   /* counters test, server tests, stats --json test */

static const char *const traffic_rules[] = {
	"10.0.0.0/8 --rate 10/s --burst 10",
	"10.1.0.0/16 --proto tcp --dport 80 --deny",
	"2001:db8::/32 --allow",
	NULL,
};

/*
 * Known traffic: 20 packets of 100 bytes from one source at one instant on a
 * 10/s burst 10 limit (10 pass, 10 drop), 5 denied, 3 allowed IPv6,
 * 1 ARP, 4 with no rule, 2 malformed (IPv4 cut inside its header).
 */
static int setup_traffic(void **state)
{
	struct xrl_pkt_spec lim = { .family = 4, .src = "10.0.0.1", .payload = 58 };
	struct xrl_pkt_spec den = { .family = 4, .src = "10.1.2.3", .proto = IPPROTO_TCP, .dport = 80 };
	struct xrl_pkt_spec v6 = { .family = 6, .src = "2001:db8::7" };
	struct xrl_pkt_spec arp = { .ethertype = ETH_P_ARP };
	struct xrl_pkt_spec none = { .family = 4, .src = "192.0.2.9" };
	__u8 buf[512];
	size_t l3;

	(void)state;
	if (xrl_tl_open(&tl, 4096, XRL_MALFORMED_PASS) || xrl_tl_rules(&tl, traffic_rules))
		return -1;
	xrl_tl_set_clock(&tl, 1000 * SEC_NS);
	tl_passed(&tl, &lim, 20);
	tl_send_n(&tl, &den, 5, XDP_DROP);
	tl_send_n(&tl, &v6, 3, XDP_PASS);
	tl_send_n(&tl, &arp, 1, XDP_PASS);
	tl_send_n(&tl, &none, 4, XDP_PASS);
	xrl_pkt_build(buf, sizeof(buf), &none, &l3, NULL);
	if (xrl_tl_run(tl.prog_fd, buf, l3 + 10, 2, NULL) != XDP_PASS)   /* malformed, policy pass */
		return -1;
	return 0;
}

static int teardown_traffic(void **state)
{
	(void)state;
	xrl_tl_close(&tl);
	return 0;
}

static struct xrl_metrics_opts opts_for(const char *instance, int top_k, const char *pin_dir)
{
	struct xrl_metrics_opts o = { .addr = "127.0.0.1", .port = 0, .top_k = top_k,
				      .instance = instance, .pin_dir = pin_dir };
	return o;
}

static const char *rule_series(char *buf, size_t len, const char *name, const char *rule,
			       const char *action)
{
	snprintf(buf, len, "%s{instance=\"" INST "\",rule=\"%s\",action=\"%s\"}", name, rule, action);
	return buf;
}

/* ---- tests ---- */

static void test_parse_listen(void **state)
{
	static const struct { const char *in, *addr; unsigned short port; } good[] = {
		{ "", "127.0.0.1", 9464 },
		{ ":9100", "127.0.0.1", 9100 },
		{ "0.0.0.0:9464", "0.0.0.0", 9464 },
		{ "192.0.2.1:1", "192.0.2.1", 1 },
		{ "[::1]:65535", "::1", 65535 },
		{ "[::]:9464", "::", 9464 },
		{ "[2001:db8::1]:80", "2001:db8::1", 80 },
	};
	static const struct { const char *in, *msg; } bad[] = {
		{ "127.0.0.1", "has no port" },
		{ "127.0.0.1:", "port '' is not a number from 1 to 65535" },
		{ "127.0.0.1:0", "port '0' is not a number" },
		{ "127.0.0.1:65536", "port '65536' is not a number" },
		{ "127.0.0.1:+80", "port '+80' is not a number" },
		{ "127.0.0.1:80x", "port '80x' is not a number" },
		{ "localhost:9464", "'localhost' is not an IPv4 address (host names are not looked up)" },
		{ "::1:9464", "write an IPv6 address in brackets" },
		{ "[::1]", "write an IPv6 address as [ADDR]:PORT" },
		{ "[::1:9464", "write an IPv6 address as [ADDR]:PORT" },
		{ "[127.0.0.1]:80", "'127.0.0.1' is not an IPv6 address" },
		{ "300.1.1.1:80", "'300.1.1.1' is not an IPv4 address" },
	};
	char buf[64], err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct xrl_metrics_opts o = { 0 };

		err[0] = '\0';
		if (xrl_metrics_parse_listen(good[i].in, buf, sizeof(buf), &o, err, sizeof(err)))
			fail_msg("'%s' refused: %s", good[i].in, err);
		assert_string_equal(o.addr, good[i].addr);
		assert_ptr_equal(o.addr, buf);
		assert_int_equal(o.port, good[i].port);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xrl_metrics_opts o = { 0 };

		err[0] = '\0';
		assert_int_equal(xrl_metrics_parse_listen(bad[i].in, buf, sizeof(buf), &o, err, sizeof(err)),
				 -EINVAL);
		if (!strstr(err, bad[i].msg) || !strstr(err, bad[i].in))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].in, err, bad[i].msg);
	}
	/* the address must fit the caller's buffer */
	{
		struct xrl_metrics_opts o = { 0 };
		char small[8];

		assert_int_equal(xrl_metrics_parse_listen("[2001:db8::1]:80", small, sizeof(small), &o,
							  err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "too long"));
	}
}

/* Every counter against the maps' own per-CPU sums and against the known traffic. */
static void test_counters_match_maps(void **state)
{
	struct xrl_metrics_opts o = opts_for(INST, 10, NULL);
	struct xrl_global_stats g;
	struct xrl_rule_stats rs;
	char s[512];
	char *text;
	int id;

	(void)state;
	text = render(&o, &tl.maps, NULL, NULL);
	assert_int_equal(xrl_read_global(&tl.maps, &g), 0);

	id = xrl_tl_rule_id(&tl, "10.0.0.0/8 --rate");
	assert_true(id >= 0);
	assert_int_equal(xrl_read_rule_stats(&tl.maps, (__u32)id, &rs), 0);
	assert_int_equal(rs.passed, 10);
	assert_int_equal(rs.dropped, 10);
	assert_int_equal(value(text, rule_series(s, sizeof(s), "xrl_packets_total", "10.0.0.0/8", "pass")), rs.passed);
	assert_int_equal(value(text, rule_series(s, sizeof(s), "xrl_packets_total", "10.0.0.0/8", "drop")), rs.dropped);
	assert_int_equal(value(text, rule_series(s, sizeof(s), "xrl_bytes_total", "10.0.0.0/8", "pass")), rs.passed_bytes);
	assert_int_equal(value(text, rule_series(s, sizeof(s), "xrl_bytes_total", "10.0.0.0/8", "drop")), rs.dropped_bytes);
	assert_int_equal(rs.passed_bytes, 10 * 100);   /* 14 + 20 + 8 + 58 bytes each */

	id = xrl_tl_rule_id(&tl, "10.1.0.0/16 --proto tcp --dport 80");
	assert_int_equal(xrl_read_rule_stats(&tl.maps, (__u32)id, &rs), 0);
	assert_int_equal(rs.dropped, 5);
	assert_int_equal(value(text, rule_series(s, sizeof(s), "xrl_packets_total", "10.1.0.0/16 --proto tcp --dport 80", "drop")), 5);
	assert_int_equal(value(text, rule_series(s, sizeof(s), "xrl_packets_total", "10.1.0.0/16 --proto tcp --dport 80", "pass")), 0);
	assert_int_equal(value(text, rule_series(s, sizeof(s), "xrl_bytes_total", "10.1.0.0/16 --proto tcp --dport 80", "drop")), rs.dropped_bytes);

	id = xrl_tl_rule_id(&tl, "2001:db8::/32 --allow");
	assert_int_equal(xrl_read_rule_stats(&tl.maps, (__u32)id, &rs), 0);
	assert_int_equal(rs.passed, 3);
	assert_int_equal(value(text, rule_series(s, sizeof(s), "xrl_packets_total", "2001:db8::/32", "pass")), 3);
	assert_int_equal(value(text, rule_series(s, sizeof(s), "xrl_bytes_total", "2001:db8::/32", "pass")), rs.passed_bytes);

	/* totals: 20 + 5 + 3 + 1 + 4 + 2 frames, 15 dropped */
	assert_int_equal(g.packets, 35);
	assert_int_equal(g.dropped, 15);
	assert_int_equal(value(text, "xrl_instance_packets_total{instance=\"" INST "\",action=\"pass\"}"), g.packets - g.dropped);
	assert_int_equal(value(text, "xrl_instance_packets_total{instance=\"" INST "\",action=\"drop\"}"), g.dropped);
	assert_int_equal(value(text, "xrl_instance_bytes_total{instance=\"" INST "\",action=\"pass\"}"), g.bytes - g.dropped_bytes);
	assert_int_equal(value(text, "xrl_instance_bytes_total{instance=\"" INST "\",action=\"drop\"}"), g.dropped_bytes);
	assert_int_equal(g.malformed, 2);
	assert_int_equal(value(text, "xrl_malformed_packets_total{instance=\"" INST "\"}"), 2);
	assert_int_equal(value(text, "xrl_non_ip_packets_total{instance=\"" INST "\"}"), 1);
	assert_int_equal(value(text, "xrl_no_rule_packets_total{instance=\"" INST "\"}"), 4);
	assert_int_equal(value(text, "xrl_sources_tracked{instance=\"" INST "\",family=\"ipv4\"}"), 1);
	assert_int_equal(value(text, "xrl_sources_tracked{instance=\"" INST "\",family=\"ipv6\"}"), 0);
	assert_int_equal(value(text, "xrl_sources_capacity{instance=\"" INST "\",family=\"ipv4\"}"), 4096);
	assert_int_equal(value(text, "xrl_sources_capacity{instance=\"" INST "\",family=\"ipv6\"}"), 4096);
	assert_int_equal(value(text, "xrl_sources_created_total{instance=\"" INST "\"}"), g.sources_created);
	assert_int_equal(g.sources_created, 1);
	assert_int_equal(value(text, "xrl_source_evictions_total{instance=\"" INST "\"}"), 0);
	assert_int_equal(value(text, "xrl_insert_failed_packets_total{instance=\"" INST "\"}"), g.insert_failed);
	assert_int_equal(value(text, "xrl_cas_contended_packets_total{instance=\"" INST "\"}"), g.cas_contended);
	assert_int_equal(value(text, "xrl_rules{instance=\"" INST "\"}"), 3);
	assert_int_equal(value(text, "xrl_limit_events_total{instance=\"" INST "\"}"), g.events);
	assert_int_equal(value(text, "xrl_limit_events_suppressed_total{instance=\"" INST "\"}"),
			 g.events_suppressed);
	/* a family per name, each with HELP and TYPE */
	assert_int_equal(count_lines_starting(text, "# HELP "), count_lines_starting(text, "# TYPE "));
	assert_int_equal(value(text, "xrl_malformed_judged_packets_total{instance=\"" INST "\"}"),
			 g.malformed_judged);
	assert_int_equal(value(text, "xrl_vlan_deep_packets_total{instance=\"" INST "\"}"), g.vlan_deep);
	assert_int_equal(count_lines_starting(text, "# TYPE "), 31);   /* + stale, rule tracked, new-source budget; shadow_dropped, blocked, blocked_sources; --syn-proxy: synacks, proven, bad cookies */
	assert_series_unique(text);
	assert_promtool_ok(text);
	free(text);
}

/* Label values are escaped: backslash, double quote and newline. */
static void test_label_escaping(void **state)
{
	struct xrl_metrics_opts o = opts_for("a\"b\\c\nd", 10, NULL);
	char *text;

	(void)state;
	text = render(&o, &tl.maps, NULL, NULL);
	assert_true(has_series(text, "xrl_rules{instance=\"a\\\"b\\\\c\\nd\"}"));
	assert_series_unique(text);
	assert_promtool_ok(text);
	free(text);
}

static void fleet_extra(FILE *out, void *arg)
{
	int *calls = arg;

	(*calls)++;
	fputs("# HELP xrl_redis_up Whether the last Redis sync succeeded.\n"
	      "# TYPE xrl_redis_up gauge\n"
	      "xrl_redis_up{instance=\"" INST "\"} 1\n", out);
}

/* The daemon's families come last, once per scrape, and keep the text valid. */
static void test_extra_appended(void **state)
{
	struct xrl_metrics_opts o = opts_for(INST, 10, NULL);
	const char *tail = "xrl_redis_up{instance=\"" INST "\"} 1\n";
	int calls = 0;
	char *text;

	(void)state;
	text = render(&o, &tl.maps, fleet_extra, &calls);
	assert_int_equal(calls, 1);
	assert_true(strlen(text) > strlen(tail));
	assert_string_equal(text + strlen(text) - strlen(tail), tail);
	assert_promtool_ok(text);
	free(text);
}

/* A full table: evictions are created minus tracked, and tracked stays within capacity. */
static void test_evictions(void **state)
{
	static const char *const r[] = { "10.0.0.0/8 --rate 10/s", NULL };
	struct xrl_metrics_opts o = opts_for(INST, 10, NULL);
	struct xrl_pkt_spec s = { .family = 4 };
	struct xrl_global_stats g;
	struct xrl_tl t;
	unsigned long long tracked, created, evicted;
	char src[32], *text;
	int i;

	(void)state;
	tl_start(&t, 256, r, 1000 * SEC_NS);
	s.src = src;
	for (i = 0; i < 2000; i++) {
		snprintf(src, sizeof(src), "10.9.%d.%d", i / 250, i % 250 + 1);
		tl_send_n(&t, &s, 1, XDP_PASS);
	}
	text = render(&o, &t.maps, NULL, NULL);
	assert_int_equal(xrl_read_global(&t.maps, &g), 0);
	tracked = value(text, "xrl_sources_tracked{instance=\"" INST "\",family=\"ipv4\"}");
	created = value(text, "xrl_sources_created_total{instance=\"" INST "\"}");
	evicted = value(text, "xrl_source_evictions_total{instance=\"" INST "\"}");
	assert_int_equal(created, g.sources_created);
	assert_int_equal(created + g.insert_failed, 2000);
	assert_true(tracked <= 256);
	assert_int_equal((unsigned long long)xrl_count_bucket_entries(t.maps.buckets_v4), tracked);
	assert_int_equal(evicted, created - tracked);
	assert_true(evicted >= 2000 - 256);
	free(text);
	xrl_tl_close(&t);
}

/*
 * Sources tracked stay true when rules are replaced: buckets of a
 * removed rule, and of a changed rule until its sources come back, are
 * stale, not tracked; evictions still count only what inserts replaced.
 */
static void test_sources_after_rule_change(void **state)
{
	static const char *const two[] = { "10.0.0.0/8 --rate 10/s", "10.1.0.0/16 --rate 10/s", NULL };
	static const char *const one[] = { "10.1.0.0/16 --rate 10/s", NULL };
	static const char *const changed[] = { "10.1.0.0/16 --rate 20/s", NULL };
	struct xrl_metrics_opts o = opts_for(INST, 10, NULL);
	struct xrl_pkt_spec s = { .family = 4 };
	struct xrl_source_census c;
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	long per[XRL_MAX_RULES];
	struct xrl_tl t;
	char src[32], *text;
	int i, n;

	(void)state;
	tl_start(&t, 4096, two, 1000 * SEC_NS);
	s.src = src;
	for (i = 0; i < 50; i++) {
		snprintf(src, sizeof(src), "10.9.0.%d", i + 1);
		tl_send_n(&t, &s, 1, XDP_PASS);
	}
	for (i = 0; i < 30; i++) {
		snprintf(src, sizeof(src), "10.1.0.%d", i + 1);
		tl_send_n(&t, &s, 1, XDP_PASS);
	}
	assert_int_equal(xrl_ruleset_read(&t.maps, defs, ids, &n), 0);
	assert_int_equal(xrl_census_sources(&t.maps, defs, ids, n, per, &c), 0);
	assert_int_equal(c.tracked, 80);
	assert_int_equal(c.stale, 0);
	for (i = 0; i < n; i++)
		assert_int_equal(per[i], defs[i].plen == 8 ? 50 : 30);

	/* the /8 removed: its 50 buckets are still in the table, not tracked */
	tl_rules(&t, one);
	text = render(&o, &t.maps, NULL, NULL);
	assert_int_equal(value(text, "xrl_sources_tracked{instance=\"" INST "\",family=\"ipv4\"}"), 30);
	assert_int_equal(value(text, "xrl_sources_stale{instance=\"" INST "\"}"), 50);
	assert_int_equal(value(text, "xrl_rule_sources_tracked{instance=\"" INST "\",rule=\"10.1.0.0/16\"}"), 30);
	assert_int_equal(value(text, "xrl_source_evictions_total{instance=\"" INST "\"}"), 0);
	assert_int_equal(value(text, "xrl_sources_created_total{instance=\"" INST "\"}"), 80);
	free(text);

	/* the /16's rate changed: its buckets restart full when their sources come back */
	tl_rules(&t, changed);
	assert_int_equal(xrl_ruleset_read(&t.maps, defs, ids, &n), 0);
	assert_int_equal(xrl_census_sources(&t.maps, defs, ids, n, per, &c), 0);
	assert_int_equal(c.tracked, 0);
	assert_int_equal(c.stale, 80);
	for (i = 0; i < 5; i++) {
		snprintf(src, sizeof(src), "10.1.0.%d", i + 1);
		tl_send_n(&t, &s, 1, XDP_PASS);
	}
	text = render(&o, &t.maps, NULL, NULL);
	assert_int_equal(value(text, "xrl_sources_tracked{instance=\"" INST "\",family=\"ipv4\"}"), 5);
	assert_int_equal(value(text, "xrl_sources_stale{instance=\"" INST "\"}"), 75);
	assert_int_equal(value(text, "xrl_rule_sources_tracked{instance=\"" INST "\",rule=\"10.1.0.0/16\"}"), 5);
	assert_int_equal(value(text, "xrl_source_evictions_total{instance=\"" INST "\"}"), 0);
	assert_promtool_ok(text);
	free(text);
	xrl_tl_close(&t);
}

/* new_refused and total_refused per rule with the option, and a series only for such rules. */
static void test_new_sources_refused(void **state)
{
	static const char *const r[] = {
		"10.0.0.0/8 --rate 10/s --new-sources 1/h --new-burst 2", "10.1.0.0/16 --rate 10/s",
		"10.2.0.0/16 --rate 10/s --total 1/h --total-burst 3", NULL,
	};
	struct xrl_metrics_opts o = opts_for(INST, 10, NULL);
	struct xrl_pkt_spec s = { .family = 4 };
	struct xrl_rule_stats rs;
	struct xrl_tl t;
	char src[32], *text;
	int i;

	(void)state;
	tl_start(&t, 256, r, 1000 * SEC_NS);
	s.src = src;
	for (i = 0; i < 7; i++) {
		snprintf(src, sizeof(src), "10.9.0.%d", i + 1);
		tl_send_n(&t, &s, 1, i < 2 ? XDP_PASS : XDP_DROP);
	}
	for (i = 0; i < 5; i++) {
		snprintf(src, sizeof(src), "10.2.0.%d", i + 1);
		tl_send_n(&t, &s, 1, i < 3 ? XDP_PASS : XDP_DROP);
	}
	text = render(&o, &t.maps, NULL, NULL);
	assert_int_equal(value(text, "xrl_total_refused_total{instance=\"" INST "\",rule=\"10.2.0.0/16\"}"), 2);
	assert_null(strstr(text, "xrl_total_refused_total{instance=\"" INST "\",rule=\"10.0.0.0/8\"}"));
	assert_int_equal(xrl_read_rule_stats(&t.maps, (__u32)xrl_tl_rule_id(&t, "10.0.0.0/8 --rate"), &rs), 0);
	assert_int_equal(rs.new_refused, 5);
	assert_int_equal(value(text, "xrl_new_sources_refused_total{instance=\"" INST "\",rule=\"10.0.0.0/8\"}"), 5);
	assert_null(strstr(text, "xrl_new_sources_refused_total{instance=\"" INST "\",rule=\"10.1.0.0/16\"}"));
	/* buckets created per rule: 2 admitted of 7 new sources, 3 of 5 (the cap refuses, the bucket stays), none */
	assert_int_equal(rs.created, 2);
	assert_int_equal(value(text, "xrl_rule_sources_created_total{instance=\"" INST "\",rule=\"10.0.0.0/8\"}"), 2);
	assert_int_equal(value(text, "xrl_rule_sources_created_total{instance=\"" INST "\",rule=\"10.2.0.0/16\"}"), 5);
	assert_int_equal(value(text, "xrl_rule_sources_created_total{instance=\"" INST "\",rule=\"10.1.0.0/16\"}"), 0);
	assert_promtool_ok(text);
	free(text);
	xrl_tl_close(&t);
}

/*
 * The top-K bound under a random-source flood: 100,000 distinct sources of
 * 10.0.0.0/8 dropped once each by a deny rule, and 15 heavy sources with
 * 800 x (i+1) drops. Exactly K series come out, and they are the K heaviest, with
 * their drop counts (the sketch is exact to 8 per CPU for a source alone
 * on its CPU).
 */
static void check_top(struct xrl_tl *t, int top_k, int ncpu)
{
	struct xrl_metrics_opts o = opts_for(INST, top_k, NULL);
	char *text = render(&o, &t->maps, NULL, NULL);
	int i;

	assert_int_equal(count_lines_starting(text, "xrl_top_source_dropped_packets{"), top_k);
	for (i = 14; i > 14 - top_k; i--) {
		char series[256];
		unsigned long long v, want = 800ULL * (unsigned long long)(i + 1);

		snprintf(series, sizeof(series),
			 "xrl_top_source_dropped_packets{instance=\"" INST "\",source=\"10.200.0.%d\",rule=\"10.0.0.0/8\"}",
			 i + 1);
		v = value(text, series);
		if (v + 8ULL * (unsigned long long)ncpu < want || v > want + 8ULL * (unsigned long long)ncpu)
			fail_msg("%s = %llu, sent %llu drops", series, v, want);
	}
	assert_series_unique(text);
	assert_promtool_ok(text);
	free(text);
}

/*
 * A bijection of 24-bit numbers (multiplications by odd numbers and
 * xor-shifts, modulo 2^24): distinct sources spread like a random flood's.
 */
static __u32 scatter24(__u32 x)
{
	x = (x * 0x9e3779u) & 0xffffff;
	x ^= x >> 11;
	x = (x * 0xc2b2afu) & 0xffffff;
	x ^= x >> 13;
	return x;
}

static void test_top_k_bound(void **state)
{
	static const char *const r[] = { "10.0.0.0/8 --deny", NULL };
	struct xrl_pkt_spec s = { .family = 4, .src = "10.1.0.0" };
	struct xrl_top_entry *top;
	struct xrl_tl t;
	__u8 buf[512];
	size_t l3, len;
	int ncpu = libbpf_num_possible_cpus(), i, n;
	__u32 a, j;

	(void)state;
	assert_int_equal(xrl_tl_open(&t, 4096, XRL_MALFORMED_PASS), 0);
	tl_rules(&t, r);
	len = xrl_pkt_build(buf, sizeof(buf), &s, &l3, NULL);
	for (i = 0; i < 100000; i++) {
		if (i == 50000) {   /* the heavy sources in the middle of the flood */
			int h;

			for (h = 0; h < 15; h++) {
				struct xrl_pkt_spec hs = { .family = 4 };
				char src[32];

				snprintf(src, sizeof(src), "10.200.0.%d", h + 1);
				hs.src = src;
				tl_send_n(&t, &hs, 800 * (__u32)(h + 1), XDP_DROP);
			}
		}
		/* 10.200.0.0/24 is for the heavy sources: step out of it, still distinct */
		for (j = (__u32)i; (scatter24(j) >> 8) == 0xc800; j += 1000000)
			;
		a = htonl(0x0a000000u | scatter24(j));
		memcpy(buf + l3 + 12, &a, 4);
		assert_int_equal(xrl_tl_run(t.prog_fd, buf, len, 1, NULL), XDP_DROP);
	}
	/* the sketch holds thousands of sources: the bound is what cuts them */
	assert_int_equal(xrl_top_read(&t.maps, &top, &n), 0);
	free(top);
	if (n <= 1000)
		fail_msg("the sketch holds only %d sources", n);
	check_top(&t, XRL_METRICS_DEFAULT_TOP, ncpu);
	check_top(&t, 3, ncpu);
	check_top(&t, 0, ncpu);
	xrl_tl_close(&t);
}

/* ---- HTTP ---- */

struct http_reply {
	int status;
	char head[2048];
	char *body;
	size_t body_len;
};

/* One HTTP/1.0 request over a real TCP socket; the server closes when done. */
static void http(const char *addr, unsigned short port, const char *method, const char *path,
		 struct http_reply *r)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons(port) };
	bool v6 = strchr(addr, ':') != NULL;
	char req[256], *all = NULL, *sep;
	size_t len = 0, cap = 0;
	ssize_t got;
	int fd;

	if (v6)
		assert_int_equal(inet_pton(AF_INET6, addr, &s6.sin6_addr), 1);
	else
		assert_int_equal(inet_pton(AF_INET, addr, &s4.sin_addr), 1);
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	if (connect(fd, v6 ? (struct sockaddr *)&s6 : (struct sockaddr *)&s4,
		    v6 ? sizeof(s6) : sizeof(s4)))
		fail_msg("connect %s port %u: %s", addr, port, strerror(errno));
	/* one write, body included: the server may answer and close before reading a body */
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: test\r\n%s\r\n%s", method, path,
		 strcmp(method, "POST") ? "" : "Content-Length: 3\r\n",
		 strcmp(method, "POST") ? "" : "a=b");
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	for (;;) {
		if (len + 65536 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			all = realloc(all, cap + 1);
			assert_non_null(all);
		}
		got = read(fd, all + len, cap - len);
		assert_true(got >= 0);
		if (got == 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	all[len] = '\0';
	assert_int_equal(sscanf(all, "HTTP/1.%*d %d", &r->status), 1);
	sep = strstr(all, "\r\n\r\n");
	assert_non_null(sep);
	assert_true((size_t)(sep - all) < sizeof(r->head));
	memcpy(r->head, all, (size_t)(sep - all));
	r->head[sep - all] = '\0';
	r->body_len = len - (size_t)(sep + 4 - all);
	r->body = malloc(r->body_len + 1);
	assert_non_null(r->body);
	memcpy(r->body, sep + 4, r->body_len + 1);
	free(all);
}

/* The status of one request, its reply dropped. */
static int http_status(const char *addr, unsigned short port, const char *method, const char *path)
{
	struct http_reply r;

	http(addr, port, method, path, &r);
	free(r.body);
	return r.status;
}

static struct xrl_metrics *start(const struct xrl_metrics_opts *o, const struct xrl_maps *m)
{
	char err[256];
	struct xrl_metrics *srv = xrl_metrics_start(o, m, NULL, NULL, err, sizeof(err));

	if (!srv)
		fail_msg("start: %s", err);
	assert_true(xrl_metrics_port(srv) > 0);
	return srv;
}

/* /metrics, /healthz, other paths and methods, on IPv4 and IPv6 loopback. */
static void test_server(void **state)
{
	static const char *const addrs[] = { "127.0.0.1", "::1" };
	size_t k;

	(void)state;
	for (k = 0; k < 2; k++) {
		/* no top series: their 10 s window must not end between two scrapes compared */
		struct xrl_metrics_opts o = opts_for(INST, 0, NULL);
		struct xrl_metrics *srv;
		struct http_reply r;
		unsigned short port;
		char *text;

		o.addr = addrs[k];
		srv = start(&o, &tl.maps);
		port = xrl_metrics_port(srv);

		http(addrs[k], port, "GET", "/metrics", &r);
		assert_int_equal(r.status, 200);
		assert_non_null(strcasestr(r.head, "Content-Type: " XRL_METRICS_CONTENT_TYPE));
		text = render(&o, &tl.maps, NULL, NULL);
		assert_string_equal(r.body, text);   /* no traffic in between: the same scrape */
		assert_promtool_ok(r.body);
		free(text);
		free(r.body);

		assert_int_equal(http_status(addrs[k], port, "GET", "/metrics?ignored=1"), 200);

		http(addrs[k], port, "HEAD", "/metrics", &r);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.body_len, 0);
		free(r.body);

		http(addrs[k], port, "GET", "/healthz", &r);
		assert_int_equal(r.status, 200);
		assert_string_equal(r.body, "ok\n");
		free(r.body);

		assert_int_equal(http_status(addrs[k], port, "GET", "/"), 404);
		assert_int_equal(http_status(addrs[k], port, "GET", "/metricsx"), 404);

		http(addrs[k], port, "POST", "/metrics", &r);
		assert_int_equal(r.status, 405);
		assert_non_null(strcasestr(r.head, "Allow: GET, HEAD"));
		free(r.body);
		assert_int_equal(http_status(addrs[k], port, "DELETE", "/healthz"), 405);

		xrl_metrics_stop(srv);
	}
}

/* ---- idle connections from several addresses ---- */

/* Idle clients: n sockets from each address, each opened again as soon as the server closes it. */
struct idle_flood {
	unsigned short port;
	const char *const *addrs;
	int naddrs, per_addr;
	volatile int stop;
	unsigned long opened;
};

static int idle_connect(const char *addr, unsigned short port)
{
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	inet_pton(AF_INET, addr, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void *idle_flood_run(void *arg)
{
	struct idle_flood *fl = arg;
	int n = fl->naddrs * fl->per_addr, i;
	struct pollfd *p = calloc(n, sizeof(*p));

	assert_non_null(p);
	for (i = 0; i < n; i++)
		p[i].fd = -1;
	while (!fl->stop) {
		for (i = 0; i < n; i++) {
			if (p[i].fd < 0 && (p[i].fd = idle_connect(fl->addrs[i / fl->per_addr], fl->port)) >= 0)
				fl->opened++;
			p[i].events = POLLIN;
		}
		if (poll(p, n, 2) > 0)
			for (i = 0; i < n; i++)
				if (p[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
					close(p[i].fd);   /* the server closed it (or answered): open another */
					p[i].fd = -1;
				}
		usleep(1000);   /* bounded: at most ~1000 rounds of reopening a second */
	}
	for (i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	free(p);
	return NULL;
}

/* One GET with a 2 s deadline for the whole reply: its status, or -1 (refused, cut, timed out). */
static int probe(unsigned short port, const char *path)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { 2, 0 };
	char req[128], buf[8192];
	size_t len = 0;
	ssize_t got;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), status = -1;

	if (fd < 0)
		return -1;
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: test\r\n\r\n", path);
	if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		goto out;
	while (len < sizeof(buf) - 1 && (got = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)got;
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		status = -1;
out:
	close(fd);
	return status;
}

/*
 * 32 idle connections from each of 127.0.0.2, .3 and .4 (any local user
 * can bind 127/8), each opened again as soon as the server closes it; 50
 * /healthz probes from 127.0.0.1 meanwhile, 100 ms apart, and 5 scrapes.
 * Connections from one address are capped below the total and idle ones
 * are cut as the total nears the limit, the address holding the most
 * first: a probe from an address that holds fewer is never the one cut,
 * so every probe is answered (at least 49 of 50 asked, for scheduling on
 * a loaded machine).
 */
static void test_idle_connections(void **state)
{
	static const char *const addrs[] = { "127.0.0.2", "127.0.0.3", "127.0.0.4" };
	struct xrl_metrics_opts o = opts_for(INST, 0, NULL);
	struct idle_flood fl = { .addrs = addrs, .naddrs = 3, .per_addr = 32 };
	struct xrl_metrics *srv;
	pthread_t th;
	int i, ok = 0, scraped = 0;

	(void)state;
	srv = start(&o, &tl.maps);
	fl.port = xrl_metrics_port(srv);
	assert_int_equal(pthread_create(&th, NULL, idle_flood_run, &fl), 0);
	usleep(500000);   /* the idle connections are in */
	for (i = 0; i < 50; i++) {
		ok += probe(fl.port, "/healthz") == 200;
		if (i % 10 == 0)
			scraped += probe(fl.port, "/metrics") == 200;
		usleep(100000);
	}
	fl.stop = 1;
	pthread_join(th, NULL);
	xrl_metrics_stop(srv);
	print_message("        /healthz: %d of 50 answered, /metrics: %d of 5, under %lu idle connections opened from 3 addresses\n",
		      ok, scraped, fl.opened);
	if (ok < 49 || scraped < 5)
		fail_msg("under idle connections from 3 addresses: /healthz answered %d of 50, /metrics %d of 5",
			 ok, scraped);
	assert_true(fl.opened >= 96);
}

/* Bind failures say which address and why. */
static void test_bind_errors(void **state)
{
	struct xrl_metrics_opts o = opts_for(INST, 10, NULL);
	struct xrl_metrics *srv, *again;
	char err[256], want[64];

	(void)state;
	srv = start(&o, &tl.maps);
	o.port = xrl_metrics_port(srv);
	again = xrl_metrics_start(&o, &tl.maps, NULL, NULL, err, sizeof(err));
	assert_null(again);
	snprintf(want, sizeof(want), "127.0.0.1:%u: address already in use", o.port);
	if (strncmp(err, want, strlen(want)))
		fail_msg("'%s' does not start with '%s'", err, want);
	xrl_metrics_stop(srv);

	o.addr = "192.0.2.1";   /* TEST-NET-1: no interface has it */
	o.port = 9464;
	assert_null(xrl_metrics_start(&o, &tl.maps, NULL, NULL, err, sizeof(err)));
	assert_string_equal(err, "192.0.2.1:9464: address not available: no interface of this host has it");
	o.addr = "2001:db8::1";
	assert_null(xrl_metrics_start(&o, &tl.maps, NULL, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "[2001:db8::1]:9464: address not available"));
}

/* Unreadable maps: /healthz and /metrics answer 503 with the reason. */
static void test_unreadable_maps(void **state)
{
	struct xrl_metrics_opts o = opts_for(INST, 10, NULL);
	struct xrl_maps bad = tl.maps;
	struct xrl_metrics *srv;
	struct http_reply r;

	(void)state;
	bad.stats = -1;
	srv = start(&o, &bad);
	http("127.0.0.1", xrl_metrics_port(srv), "GET", "/healthz", &r);
	assert_int_equal(r.status, 503);
	assert_string_equal(r.body, "cannot read the counters of instance '" INST "': Bad file descriptor\n");
	free(r.body);
	http("127.0.0.1", xrl_metrics_port(srv), "GET", "/metrics", &r);
	assert_int_equal(r.status, 503);
	assert_string_equal(r.body, "cannot read the maps of instance '" INST "': Bad file descriptor\n");
	free(r.body);
	xrl_metrics_stop(srv);
}

/* ---- the same maps pinned as an instance: xrl stats --json, health, lock ---- */

static char pin_dir[256];

static void pin_instance(struct xrl_tl *t)
{
	struct xrl_iface ifc = { .name = "mtest0" };
	__u32 ifindex = 999999;
	char path[512];
	int i;

	snprintf(pin_dir, sizeof(pin_dir), "%s/mtest%d", XRL_PIN_ROOT, (int)getpid());
	mkdir(XRL_PIN_ROOT, 0700);
	assert_int_equal(mkdir(pin_dir, 0700), 0);
	for (i = 0; xrl_map_names[i]; i++) {
		int fd = bpf_map__fd(bpf_object__find_map_by_name(t->skel->obj, xrl_map_names[i]));

		snprintf(path, sizeof(path), "%s/%s", pin_dir, xrl_map_names[i]);
		assert_int_equal(bpf_obj_pin(fd, path), 0);
	}
	/* `xrl stats` wants an instance with an interface */
	assert_int_equal(bpf_map_update_elem(t->maps.ifaces, &ifindex, &ifc, BPF_ANY), 0);
}

static void unpin_instance(void)
{
	char path[512];
	int i;

	for (i = 0; xrl_map_names[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, xrl_map_names[i]);
		unlink(path);
	}
	rmdir(pin_dir);
	rmdir(XRL_PIN_ROOT);   /* only when no other instance is there */
}

static json_t *xrl_stats_json(const char *instance)
{
	const char *xrl = getenv("XRL") ? getenv("XRL") : XRL_BUILD_DIR "/xrl";
	char cmd[512];
	json_error_t e;
	json_t *j;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s --instance %s --json stats", xrl, instance);
	p = popen(cmd, "r");
	assert_non_null(p);
	j = json_loadf(p, JSON_DISABLE_EOF_CHECK, &e);
	assert_int_equal(pclose(p), 0);
	if (!j)
		fail_msg("%s: %s", cmd, e.text);
	return j;
}

static unsigned long long jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("stats --json has no integer '%s'", key);
	return (unsigned long long)json_integer_value(v);
}

/* Counter values equal what `xrl stats --json` reports for the same instant. */
static void test_equals_stats_json(void **state)
{
	char *inst = strrchr(pin_dir, '/') + 1, s[512], *text;
	struct xrl_metrics_opts o = opts_for(inst, 10, pin_dir);
	json_t *j, *rules, *r;
	size_t i;

	(void)state;
	j = xrl_stats_json(inst);
	text = render(&o, &tl.maps, NULL, NULL);
#define G(name, key) do { \
		snprintf(s, sizeof(s), name "{instance=\"%s\"}", inst); \
		assert_int_equal(value(text, s), jint(j, key)); \
	} while (0)
#define GA(name, action, key) do { \
		snprintf(s, sizeof(s), name "{instance=\"%s\",action=\"" action "\"}", inst); \
		assert_int_equal(value(text, s), jint(j, key)); \
	} while (0)
	GA("xrl_instance_packets_total", "pass", "passed");
	GA("xrl_instance_packets_total", "drop", "dropped");
	GA("xrl_instance_bytes_total", "pass", "passed_bytes");
	GA("xrl_instance_bytes_total", "drop", "dropped_bytes");
	G("xrl_malformed_packets_total", "malformed");
	G("xrl_malformed_judged_packets_total", "malformed_judged");
	G("xrl_vlan_deep_packets_total", "vlan_deep");
	G("xrl_non_ip_packets_total", "non_ip");
	G("xrl_no_rule_packets_total", "no_rule");
	G("xrl_sources_created_total", "created");
	G("xrl_source_evictions_total", "evicted");
	G("xrl_insert_failed_packets_total", "insert_failed");
	G("xrl_cas_contended_packets_total", "cas_contended");
#undef G
#undef GA
	snprintf(s, sizeof(s), "xrl_sources_tracked{instance=\"%s\",family=\"ipv4\"}", inst);
	i = value(text, s);
	snprintf(s, sizeof(s), "xrl_sources_tracked{instance=\"%s\",family=\"ipv6\"}", inst);
	assert_int_equal(i + value(text, s), jint(j, "sources"));
	snprintf(s, sizeof(s), "xrl_sources_capacity{instance=\"%s\",family=\"ipv4\"}", inst);
	assert_int_equal(value(text, s), jint(j, "capacity"));

	rules = json_object_get(j, "rules");
	assert_int_equal(json_array_size(rules), 3);
	snprintf(s, sizeof(s), "xrl_rules{instance=\"%s\"}", inst);
	assert_int_equal(value(text, s), json_array_size(rules));
	json_array_foreach(rules, i, r) {
		const char *match = json_string_value(json_object_get(r, "match"));
		static const struct { const char *name, *action, *key; } f[] = {
			{ "xrl_packets_total", "pass", "passed" },
			{ "xrl_packets_total", "drop", "dropped" },
			{ "xrl_bytes_total", "pass", "passed_bytes" },
			{ "xrl_bytes_total", "drop", "dropped_bytes" },
		};
		size_t k;

		for (k = 0; k < 4; k++) {
			snprintf(s, sizeof(s), "%s{instance=\"%s\",rule=\"%s\",action=\"%s\"}", f[k].name,
				 inst, match, f[k].action);
			assert_int_equal(value(text, s), jint(r, f[k].key));
		}
		if (!strcmp(json_string_value(json_object_get(r, "action")), "limit")) {
			snprintf(s, sizeof(s), "xrl_rule_sources_created_total{instance=\"%s\",rule=\"%s\"}",
				 inst, match);
			assert_int_equal(value(text, s), jint(r, "sources_created"));
		}
	}
	json_decref(j);
	free(text);
}

/* /healthz follows the pins: attached, re-attached (other maps), detached. */
static void test_health_follows_pins(void **state)
{
	struct xrl_metrics_opts o = opts_for(strrchr(pin_dir, '/') + 1, 10, pin_dir);
	char reason[512], path[512];

	(void)state;
	assert_int_equal(xrl_metrics_health(&o, &tl.maps, reason, sizeof(reason)), 0);

	snprintf(path, sizeof(path), "%s/xrl_stats", pin_dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(bpf_obj_pin(tl.maps.rule_stats, path), 0);   /* another map there */
	assert_int_equal(xrl_metrics_health(&o, &tl.maps, reason, sizeof(reason)), -ESTALE);
	assert_non_null(strstr(reason, "was detached and attached again"));

	assert_int_equal(unlink(path), 0);
	assert_int_equal(xrl_metrics_health(&o, &tl.maps, reason, sizeof(reason)), -ENOENT);
	assert_non_null(strstr(reason, "is not attached: nothing is pinned at"));
	assert_non_null(strstr(reason, path));

	assert_int_equal(bpf_obj_pin(tl.maps.stats, path), 0);
	assert_int_equal(xrl_metrics_health(&o, &tl.maps, reason, sizeof(reason)), 0);
}

struct bg_get {
	unsigned short port;
	struct http_reply r;
	struct timespec done;
};

static void *bg_metrics(void *arg)
{
	struct bg_get *b = arg;

	http("127.0.0.1", b->port, "GET", "/metrics", &b->r);
	clock_gettime(CLOCK_MONOTONIC, &b->done);
	return NULL;
}

static double secs(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/*
 * A writer holding the instance lock: the scrape waits for it, then fails
 * with 503 saying so; /healthz answers meanwhile (a thread per connection).
 * Released, scrapes succeed again.
 */
static void test_writer_lock(void **state)
{
	struct xrl_metrics_opts o = opts_for(strrchr(pin_dir, '/') + 1, 10, pin_dir);
	struct timespec t0, t1;
	struct xrl_metrics *srv;
	struct http_reply h;
	struct bg_get b = { 0 };
	pthread_t th;
	int lk;

	(void)state;
	lk = open(pin_dir, O_RDONLY | O_DIRECTORY);
	assert_true(lk >= 0);
	assert_int_equal(flock(lk, LOCK_EX), 0);
	srv = start(&o, &tl.maps);
	b.port = xrl_metrics_port(srv);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(pthread_create(&th, NULL, bg_metrics, &b), 0);
	usleep(200 * 1000);
	http("127.0.0.1", b.port, "GET", "/healthz", &h);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(h.status, 200);
	free(h.body);
	pthread_join(th, NULL);
	assert_true(secs(&t0, &t1) < 1.0);   /* health did not wait for the scrape */
	assert_true(secs(&t0, &b.done) >= XRL_METRICS_LOCK_WAIT_MS / 1000.0);
	assert_int_equal(b.r.status, 503);
	assert_non_null(strstr(b.r.body, "has been locked by a writer for over 2000 ms"));
	free(b.r.body);

	close(lk);
	http("127.0.0.1", b.port, "GET", "/metrics", &h);
	assert_int_equal(h.status, 200);
	free(h.body);
	xrl_metrics_stop(srv);
}

struct rule_flipper {
	int stop;   /* atomic */
	int applies;
};

static const char *const set_a[] = {
	"10.0.0.0/8 --rate 10/s --burst 10", "10.1.0.0/16 --proto tcp --dport 80 --deny",
	"2001:db8::/32 --allow", NULL,
};
static const char *const set_b[] = {
	"10.0.0.0/8 --rate 20/s", "172.16.0.0/12 --deny", "192.168.0.0/16 --rate 5/s --per 24",
	"2001:db8::/32 --rate 100/s", "2001:db8:1::/48 --proto udp --dport 53 --rate 50/s", NULL,
};

/* A state no reader may see: the middle of a change made of several writes. */
static const char *const set_half[] = { "198.18.0.0/15 --deny", NULL };

/*
 * Replaces the rule set again and again under the instance's writer lock,
 * each change in two steps (through set_half), as a change of many map
 * writes is: only a reader that ignores the lock can see the middle.
 */
static void *flip_rules(void *arg)
{
	struct rule_flipper *f = arg;

	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		int lk = open(pin_dir, O_RDONLY | O_DIRECTORY), err;

		if (lk < 0)
			break;
		err = flock(lk, LOCK_EX) || xrl_tl_rules(&tl, set_half) || usleep(1000) ||
		      xrl_tl_rules(&tl, f->applies % 2 ? set_b : set_a);
		close(lk);
		if (err)
			break;
		f->applies++;
		usleep(2000);   /* an operator's or a daemon's pace, not a lock held for good */
	}
	return NULL;
}

/* The rule labels of a scrape's xrl_packets_total pass series, one string per rule. */
static int scrape_rules(const char *text, char rules[][96], int max)
{
	static const char pfx[] = "xrl_packets_total{instance=\"";
	const char *p = text;
	int n = 0;

	while ((p = strstr(p, pfx))) {
		const char *r = strstr(p, ",rule=\""), *e, *nl = strchr(p, '\n');

		assert_non_null(r);
		r += 7;
		e = strstr(r, "\",action=\"pass\"}");
		if (e && e < nl) {
			assert_true(n < max && (size_t)(e - r) < 96);
			memcpy(rules[n], r, (size_t)(e - r));
			rules[n][e - r] = '\0';
			n++;
		}
		p = nl;
	}
	return n;
}

/*
 * The prefix and match of each rule of set, as labels name them. Before the
 * writer thread starts: rule parsing uses getopt, whose state is global.
 */
static int set_labels(const char *const *set, char want[][96])
{
	int k;

	for (k = 0; set[k]; k++) {
		struct xrl_rule_def d;
		char err[XRL_ERRLEN];

		if (xrl_rule_parse_line(set[k], &d, err, sizeof(err)) != 1)
			fail_msg("'%s': %s", set[k], err);
		xrl_rule_format_match(&d, want[k], 96);
	}
	return k;
}

/* The rule set a scrape shows is exactly want (k rules), with xrl_rules saying so. */
static bool shows_set(const char *text, char rules[][96], int n, char want[][96], int k)
{
	char line[96];
	int i, j;

	if (n != k)
		return false;
	for (i = 0; i < k; i++) {
		for (j = 0; j < n && strcmp(want[i], rules[j]); j++)
			;
		if (j == n)
			return false;
	}
	snprintf(line, sizeof(line), "xrl_rules{instance=\"%s\"}", strrchr(pin_dir, '/') + 1);
	return value(text, line) == (unsigned long long)k;
}

/*
 * Scrapes over HTTP while another thread keeps changing the rule set: every
 * scrape is whole (200, promtool-valid) and shows one rule set or the
 * other, never a change half done, because scrapes share the writer's lock.
 */
static void test_scrapes_during_rule_changes(void **state)
{
	struct xrl_metrics_opts o = opts_for(strrchr(pin_dir, '/') + 1, 10, pin_dir);
	struct rule_flipper f = { 0 };
	struct xrl_metrics *srv;
	char rules[16][96], want_a[16][96], want_b[16][96];
	pthread_t th;
	int i, seen_a = 0, seen_b = 0, ka, kb;

	(void)state;
	ka = set_labels(set_a, want_a);
	kb = set_labels(set_b, want_b);
	srv = start(&o, &tl.maps);
	assert_int_equal(pthread_create(&th, NULL, flip_rules, &f), 0);
	for (i = 0; i < 150; i++) {
		struct http_reply r;
		int n;

		http("127.0.0.1", xrl_metrics_port(srv), "GET", "/metrics", &r);
		if (r.status != 200)
			fail_msg("scrape %d: %d %s", i, r.status, r.body);
		n = scrape_rules(r.body, rules, 16);
		if (shows_set(r.body, rules, n, want_a, ka))
			seen_a++;
		else if (shows_set(r.body, rules, n, want_b, kb))
			seen_b++;
		else
			fail_msg("scrape %d shows neither rule set:\n%s", i, r.body);
		if (i % 50 == 0)
			assert_promtool_ok(r.body);
		free(r.body);
	}
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	xrl_metrics_stop(srv);
	assert_true(f.applies > 10);   /* the rules did change under the scrapes */
	assert_true(seen_a > 0 && seen_b > 0);
	tl_rules(&tl, traffic_rules);
}

static int setup_pinned(void **state)
{
	(void)state;
	pin_instance(&tl);
	return 0;
}

static int teardown_pinned(void **state)
{
	(void)state;
	unpin_instance();
	return 0;
}

/* ---- the Grafana dashboard ---- */

/* Families the daemon appends through the extra callback (user/daemon/xrl_metrics.h). */
static const char *const fleet_families[][2] = {
	{ "xrl_redis_up", "gauge" },
	{ "xrl_redis_errors_total", "counter" },
	{ "xrl_redis_sync_duration_seconds", "histogram" },
	{ "xrl_fleet_share", "gauge" },
	{ "xrl_fleet_hosts", "gauge" },
	{ "xrl_fleet_sources", "gauge" },
	{ "xrl_fleet_reports_total", "counter" },
	{ "xrl_redis_commands_total", "counter" },
};

/* The type of a family the exporter or the daemon emits, or NULL. */
static const char *family_type(const char *text, const char *name)
{
	static char type[32];
	char want[160];
	const char *p;
	size_t i;

	for (i = 0; i < sizeof(fleet_families) / sizeof(fleet_families[0]); i++)
		if (!strcmp(name, fleet_families[i][0]))
			return fleet_families[i][1];
	snprintf(want, sizeof(want), "# TYPE %s ", name);
	p = strstr(text, want);
	if (!p || sscanf(p + strlen(want), "%31s", type) != 1)
		return NULL;
	return type;
}

/* Strings of every "expr" (panel targets) and "query" (template variables), at any depth. */
static void collect_queries(json_t *v, json_t *out)
{
	const char *key;
	json_t *x;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach(v, key, x) {
			if ((!strcmp(key, "expr") || !strcmp(key, "definition")) && json_is_string(x))
				json_array_append(out, x);
			else if (!strcmp(key, "query") && json_is_object(x))
				collect_queries(x, out);
			else if (!strcmp(key, "query") && json_is_string(x))
				json_array_append(out, x);
			else
				collect_queries(x, out);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			collect_queries(x, out);
	}
}

/*
 * Every metric the dashboard queries is one the exporter emits (its TYPE
 * lines) or one of the daemon's fleet families (xrl http's, xrl_http_*,
 * are tests/unit/test_http.c's), and rate()/increase() are
 * only taken of counters and histogram buckets: the dashboard cannot drift
 * from the metric names silently.
 */
static void test_dashboard_names(void **state)
{
	struct xrl_metrics_opts o = opts_for(INST, 10, NULL);
	json_t *dash, *queries = json_array(), *q, *panels;
	json_error_t e;
	regex_t name_re, rate_re;
	char *text;
	size_t i;
	int checked = 0;

	(void)state;
	dash = json_load_file(XRL_SRC_DIR "/docs/grafana-xrl.json", 0, &e);
	if (!dash)
		fail_msg("docs/grafana-xrl.json line %d: %s", e.line, e.text);
	assert_non_null(json_object_get(dash, "__inputs"));
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(json_object_get(dash, "__inputs"), 0), "name")), "DS_PROMETHEUS");
	panels = json_object_get(dash, "panels");
	assert_true(json_array_size(panels) >= 10);
	collect_queries(dash, queries);
	assert_true(json_array_size(queries) >= 10);

	text = render(&o, &tl.maps, NULL, NULL);
	assert_int_equal(regcomp(&name_re, "xrl_[a-z0-9_]+", REG_EXTENDED), 0);
	assert_int_equal(regcomp(&rate_re, "(rate|increase)\\(\\s*(xrl_[a-z0-9_]+)", REG_EXTENDED), 0);
	json_array_foreach(queries, i, q) {
		const char *s = json_string_value(q), *p = s;
		regmatch_t m[3];

		while (regexec(&name_re, p, 1, m, 0) == 0) {
			char name[128], base[128];
			const char *type;
			size_t n = (size_t)(m[0].rm_eo - m[0].rm_so), bl;

			assert_true(n < sizeof(name));
			memcpy(name, p + m[0].rm_so, n);
			name[n] = '\0';
			if (!strncmp(name, "xrl_http_", 9)) {
				/* the request layer's: test_http checks them against xrl http's exposition */
				p += m[0].rm_eo;
				continue;
			}
			type = family_type(text, name);
			if (!type) {   /* a histogram's series: NAME_bucket, NAME_sum, NAME_count */
				strcpy(base, name);
				bl = strlen(base);
				if (bl > 7 && !strcmp(base + bl - 7, "_bucket"))
					base[bl - 7] = '\0';
				else if (bl > 4 && !strcmp(base + bl - 4, "_sum"))
					base[bl - 4] = '\0';
				else if (bl > 6 && !strcmp(base + bl - 6, "_count"))
					base[bl - 6] = '\0';
				type = family_type(text, base);
				if (!type || strcmp(type, "histogram"))
					fail_msg("dashboard query '%s' uses %s, which nothing emits", s, name);
			}
			checked++;
			p += m[0].rm_eo;
		}
		for (p = s; regexec(&rate_re, p, 3, m, 0) == 0; p += m[0].rm_eo) {
			char name[128];
			size_t n = (size_t)(m[2].rm_eo - m[2].rm_so);
			const char *type;

			memcpy(name, p + m[2].rm_so, n);
			name[n] = '\0';
			type = family_type(text, name);
			if (type && strcmp(type, "counter"))
				fail_msg("dashboard query '%s' takes a rate of the %s %s", s, type, name);
		}
	}
	assert_true(checked >= 15);
	regfree(&name_re);
	regfree(&rate_re);
	json_decref(queries);
	json_decref(dash);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test(test_counters_match_maps),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_extra_appended),
		cmocka_unit_test(test_evictions),
		cmocka_unit_test(test_new_sources_refused),
		cmocka_unit_test(test_sources_after_rule_change),
		cmocka_unit_test(test_top_k_bound),
		cmocka_unit_test(test_server),
		cmocka_unit_test(test_idle_connections),
		cmocka_unit_test(test_bind_errors),
		cmocka_unit_test(test_unreadable_maps),
		cmocka_unit_test_setup_teardown(test_equals_stats_json, setup_pinned, teardown_pinned),
		cmocka_unit_test_setup_teardown(test_health_follows_pins, setup_pinned, teardown_pinned),
		cmocka_unit_test_setup_teardown(test_writer_lock, setup_pinned, teardown_pinned),
		cmocka_unit_test_setup_teardown(test_scrapes_during_rule_changes, setup_pinned,
						teardown_pinned),
		cmocka_unit_test(test_dashboard_names),
	};

	return cmocka_run_group_tests(tests, setup_traffic, teardown_traffic);
}
