// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host tests of the request layer's pure parts (user/http): the rules
 * parser (words, line and column of errors), trusted proxies and
 * X-Forwarded-For's rightmost-untrusted client, the RateLimit fields, and
 * the decision on an exact clock (multi-rule, missing keys, the leaky
 * bucket's slots, a decision finishing across a reload), and the --global
 * path's deadlines against a Redis that does not answer. argv[1]: a filter
 * of the tests to run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "xrl_http_rules.h"
#include "xrl_http_client.h"
#include "xrl_http_decide.h"
#include "xrl_http_escalate.h"
#include "xrl_http_headers.h"
#include "xrl_http_metrics.h"
#include "xrl_http_packet.h"
#include "xrl_http_redis.h"
#include "xrl_fleet_keys.h"
#include "xrl_cluster.h"
#include "xrl_rule.h"
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <regex.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ull
#define T0 (1000ull * NS)

static void test_rules_ok(void **state)
{
	static struct xrl_http_rules rs;
	char err[256] = "";

	(void)state;
	assert_int_equal(xrl_http_rules_parse(
		"# comment\n\n"
		"api --key header:X-Api-Key+ip/24 --rate 100/m --burst 20 --missing pass  # tail\n"
		"login --key ip/24,48 --rate 5/m --path /login --method POST --method PUT\r\n"
		"win --key arg:user --rate 10/s --algo sliding-window --missing refuse\n"
		"pace --key ip --rate 5/s --algo leaky-bucket --queue 10\n",
		&rs, err, sizeof(err)), 0);
	assert_int_equal(rs.n, 4);
	assert_string_equal(rs.rule[0].name, "api");
	assert_int_equal(rs.rule[0].nkeys, 2);
	assert_int_equal(rs.rule[0].keys[0].kind, XRL_HTTP_KEY_HEADER);
	assert_string_equal(rs.rule[0].keys[0].name, "X-Api-Key");
	assert_int_equal(rs.rule[0].keys[1].kind, XRL_HTTP_KEY_IP);
	assert_int_equal(rs.rule[0].keys[1].plen4, 24);
	assert_int_equal(rs.rule[0].keys[1].plen6, 64);
	assert_int_equal(rs.rule[0].count, 100);
	assert_int_equal(rs.rule[0].period_s, 60);
	assert_int_equal(rs.rule[0].burst, 20);
	assert_int_equal(rs.rule[0].missing_refuse, 0);
	assert_int_equal(rs.rule[1].keys[0].plen6, 48);
	assert_string_equal(rs.rule[1].path, "/login");
	assert_int_equal(rs.rule[1].nmethods, 2);
	assert_string_equal(rs.rule[1].methods[1], "PUT");
	assert_int_equal(rs.rule[2].algo, XRL_ALGO_SLIDING_WINDOW);
	assert_int_equal(rs.rule[2].win_ns, NS);
	assert_int_equal(rs.rule[2].missing_refuse, 1);
	assert_int_equal(rs.rule[3].algo, XRL_HTTP_ALGO_LEAKY);
	assert_int_equal(rs.rule[3].queue, 10);
	/* every window algorithm goes --global (take.lua decides the sliding ones in Redis) */
	assert_int_equal(xrl_http_rules_parse(
		"sw --key ip --rate 10/s --algo sliding-window --global\n"
		"sl --key ip --rate 10/s --algo sliding-log --global\n", &rs, err, sizeof(err)), 0);
	assert_int_equal(rs.rule[0].global, 1);
	assert_int_equal(rs.rule[1].algo, XRL_ALGO_SLIDING_LOG);
}

/* text's error is exactly want */
static void refused(const char *text, const char *want)
{
	static struct xrl_http_rules rs;
	char err[256] = "";

	assert_int_equal(xrl_http_rules_parse(text, &rs, err, sizeof(err)), -1);
	if (strncmp(err, want, strlen(want)))
		fail_msg("'%s': got '%s', want it to start with '%s'", text, err, want);
}

static void test_rules_errors(void **state)
{
	(void)state;
	refused("a --key ip --rate 10/fortnight\n", "line 1, column 19: ");
	refused("ok --key ip --rate 1/s\n  bad --key ip\n", "line 2, column 15: rule 'bad' needs --rate");
	refused("a --key ip --rate 1/s --frobnicate 3\n", "line 1, column 23: unknown word '--frobnicate'");
	refused("a --key ip --rate\n", "line 1, column 18: --rate needs a value");
	refused("a --key cookie:x --rate 1/s\n", "line 1, column 9: bad key 'cookie:x'");
	refused("a --key ip/33 --rate 1/s\n", "line 1, column 9: bad key");
	refused("a --key header:X-User --rate 1/s\n", "line 1, column 33: rule 'a' keys on a header");
	refused("a --key ip --rate 1/s\na --key ip --rate 2/s\n", "line 2, column 1: rule 'a' is defined twice");
	refused("a --key ip --rate 100/s --algo sliding-log\n", "line 1, column 1: --algo sliding-log keeps at most 64");
	refused("a --key ip --rate 5/s --algo leaky-bucket\n", "line 1, column 1: --algo leaky-bucket needs --queue");
	refused("a --key ip --rate 5/s --algo fixed-window --burst 3\n", "line 1, column 1: --burst is the token bucket's");
	refused("--key ip --rate 5/s\n", "line 1, column 1: '--key': a rule starts with its name");
	refused("a --key ip --rate 5/s --method get\n", "line 1, column 32: --method 'get'");
	refused("a --key ip --rate 5/s --path login\n", "line 1, column 30: --path 'login'");
	refused("a --key ip --rate 5/s --escalate 3\n", "line 1, column 23: rule 'a': --escalate RATE and --block DURATION go together");
	refused("a --key ip --rate 5/s --block 1m\n", "line 1, column 23: rule 'a': --escalate RATE and --block DURATION go together");
	refused("a --key header:K --missing pass --rate 5/s --escalate 3 --block 1m\n", "line 1, column 57: rule 'a': --escalate is for a rule keyed by ip alone");
	refused("a --key ip+header:K --missing pass --rate 5/s --escalate 3 --block 1m\n", "line 1, column 60: rule 'a': --escalate is for a rule keyed by ip alone");
	refused("a --key ip --rate 5/s --escalate 0 --block 1m\n", "line 1, column 34: ");
	refused("a --key ip --rate 5/s --escalate 3 --block 169h\n", "line 1, column 44: invalid --block");
	refused("a --key ip --rate 5/s --global --algo leaky-bucket --queue 3\n", "line 1, column 1: --global is for token-bucket, fixed-window, sliding-window and sliding-log rules");
}

static struct xrl_http_addr A(const char *s)
{
	struct xrl_http_addr a;

	assert_int_equal(xrl_http_addr_parse(s, strlen(s), &a), 0);
	return a;
}

/* the instance's rule set of the --packet-rule tests: id 3, 5 and 9 */
static int pkt_rules(struct xrl_rule_def *defs, __u32 *ids)
{
	static const char *const lines[] = {
		"198.18.0.0/24 --rate 10/m --burst 10 --global",
		"198.18.1.0/24 --rate 10/m --burst 10",
		"2001:db8::/32 --rate 5/s --per 64 --algo sliding-window --global",
	};
	char err[256];
	int i;

	for (i = 0; i < 3; i++) {
		if (xrl_rule_parse_line(lines[i], &defs[i], err, sizeof(err)) != 1)
			fail_msg("%s: %s", lines[i], err);
		ids[i] = i == 0 ? 3 : i == 1 ? 5 : 9;
	}
	return 3;
}

/* text resolved against pkt_rules: 0 or -1 with err starting with want */
static int pkt_resolve(const char *text, struct xrl_http_rules *rs, const char *want)
{
	struct xrl_rule_def defs[3];
	__u32 ids[3];
	char err[512] = "";
	int n = pkt_rules(defs, ids), rc;

	assert_int_equal(xrl_http_rules_parse(text, rs, err, sizeof(err)), 0);
	rc = xrl_http_packet_resolve(rs, defs, ids, n, 0, err, sizeof(err));
	if (want && (rc != -1 || strncmp(err, want, strlen(want))))
		fail_msg("'%s': got %d '%s', want -1 '%s...'", text, rc, err, want);
	if (!want && rc)
		fail_msg("'%s': %s", text, err);
	return rc;
}

/*
 * --packet-rule: the packet rule found by prefix or id, its budget's key
 * the daemon's own (xrl_fleet_source_key with the rule's fleet name, the
 * source masked to its --per), its GCRA figures the daemon's; a rule of
 * another algorithm, rate or burst, a local packet rule, and a key other
 * than ip are refused; addresses outside its prefix are not under it.
 */
static void test_packet_rule(void **state)
{
	static struct xrl_http_rules rs;
	struct xrl_rule_def defs[3];
	struct xrl_bucket_key k = { .family = 4 };
	__u32 ids[3];
	char name[17], want[160], got[160];
	struct xrl_http_addr in = A("198.18.0.7"), out = A("198.18.2.7"), v6 = A("2001:db8:0:1:2::9");

	(void)state;
	pkt_rules(defs, ids);
	pkt_resolve("p --key ip --rate 10/m --burst 10 --packet-rule 198.18.0.0/24\n", &rs, NULL);
	assert_int_equal(rs.rule[0].global, 1);
	assert_int_equal(rs.rule[0].pkt.set, 1);
	assert_int_equal(rs.rule[0].pkt.id, 3);
	xrl_fleet_rule_name(&defs[0], name);
	assert_string_equal(rs.rule[0].pkt.name, name);
	/* the daemon's figures: the data path's fixed-point integers for 10/m, burst 10 */
	{
		char iv[XRL_FLEET_US_LEN], span[XRL_FLEET_US_LEN];

		assert_int_equal(xrl_fleet_gcra_figures(defs[0].rate, defs[0].rate_period,
							defs[0].burst, iv, span, NULL, NULL), 0);
		assert_string_equal(rs.rule[0].pkt.iv, iv);
		assert_string_equal(rs.rule[0].pkt.span, span);
	}
	assert_string_equal(rs.rule[0].pkt.iv, "6000001.024000");
	assert_string_equal(rs.rule[0].pkt.span, "60000010.240000");
	assert_true(xrl_http_packet_covers(&rs.rule[0].pkt, &in));
	assert_false(xrl_http_packet_covers(&rs.rule[0].pkt, &out));
	assert_false(xrl_http_packet_covers(&rs.rule[0].pkt, &v6));
	memcpy(k.addr, in.a + 12, 4);
	xrl_fleet_source_key(name, &k, 32, want, sizeof(want));
	xrl_http_packet_key(&rs.rule[0].pkt, &in, got, sizeof(got));
	assert_string_equal(got, want);
	/* on a Redis Cluster: the daemon's tagged key, the source's shard's tag */
	{
		struct xrl_http_packet pc = rs.rule[0].pkt;

		pc.cluster = 1;
		xrl_fleet_source_key_tagged(xrl_cluster_shard_tag(xrl_fleet_source_shard(
						    &k, XRL_CLUSTER_SHARDS)), name, &k, 32, want,
					    sizeof(want));
		xrl_http_packet_key(&pc, &in, got, sizeof(got));
		assert_string_equal(got, want);
		assert_non_null(strstr(got, "}:"));
	}
	/* by id; an IPv6 rule per /64 */
	pkt_resolve("q --key ip --rate 5/s --algo sliding-window --packet-rule 9\n", &rs, NULL);
	assert_true(xrl_http_packet_covers(&rs.rule[0].pkt, &v6));
	xrl_http_packet_key(&rs.rule[0].pkt, &v6, got, sizeof(got));
	xrl_fleet_rule_name(&defs[2], name);
	snprintf(want, sizeof(want), "xrl:{%s:2001:db8:0:1::/64}", name);
	assert_string_equal(got, want);
	pkt_resolve("p --key ip --rate 10/m --packet-rule 198.18.1.0/24\n", &rs,
		    "rule 'p': packet rule 198.18.1.0/24 --rate 10/m --burst 10 --per 32 (id 5) is not a --global");
	pkt_resolve("p --key ip --rate 20/m --burst 10 --packet-rule 3\n", &rs,
		    "rule 'p': packet rule 198.18.0.0/24 --rate 10/m --burst 10 --per 32 --global (id 3) is another budget: give this rule its --algo token-bucket, --rate and --burst to share it");
	pkt_resolve("p --key ip --rate 10/m --burst 5 --packet-rule 3\n", &rs, "rule 'p': packet rule");
	pkt_resolve("p --key ip --rate 10/m --algo fixed-window --packet-rule 3\n", &rs, "rule 'p': packet rule");
	pkt_resolve("p --key ip --rate 10/m --packet-rule 4\n", &rs, "rule 'p': --packet-rule 4: the instance has no rule with id 4");
	pkt_resolve("p --key ip --rate 10/m --packet-rule 198.18.7.0/24\n", &rs, "rule 'p': --packet-rule 198.18.7.0/24: the instance has no rule of that prefix");
	refused("p --key ip/24 --rate 10/m --packet-rule 3\n", "line 1, column 27: rule 'p': --packet-rule needs --key ip");
	refused("p --key header:K --missing pass --rate 10/m --packet-rule 3\n", "line 1, column 45: rule 'p': --packet-rule needs --key ip");
}

/*
 * --escalate 3: the 4th refusal within a second of the first escalates (not
 * the 3rd); refusals a second apart never do; each (rule, address) counts
 * alone; after an escalation the count starts again.
 */
static void test_escalate(void **state)
{
	static struct xrl_http_rules rs;
	struct xrl_http_esc *e = xrl_http_esc_new(7);
	struct xrl_http_addr a = A("192.0.2.1"), b = A("2001:db8::1");
	char err[256];
	__u32 n = 0;
	__u64 t = 1000000000ull, ms = 1000000ull;
	int i;

	(void)state;
	assert_int_equal(xrl_http_rules_parse("a --key ip --rate 5/s --escalate 3 --block 90s\n",
					      &rs, err, sizeof(err)), 0);
	assert_int_equal(rs.rule[0].escalate, 3);
	assert_true(rs.rule[0].block_ns == 90 * 1000000000ull);
	assert_non_null(e);
	for (i = 0; i < 3; i++)
		assert_int_equal(xrl_http_esc_refused(e, 0, 3, &a, t + i * 300 * ms, &n), 0);
	/* b and a's count under another rule do not add to a's */
	assert_int_equal(xrl_http_esc_refused(e, 0, 3, &b, t + 950 * ms, &n), 0);
	assert_int_equal(xrl_http_esc_refused(e, 1, 3, &a, t + 960 * ms, &n), 0);
	assert_int_equal(xrl_http_esc_refused(e, 0, 3, &a, t + 999 * ms, &n), 1);
	assert_int_equal(n, 4);
	/* the count starts again: three more are not enough */
	for (i = 1; i <= 3; i++)
		assert_int_equal(xrl_http_esc_refused(e, 0, 3, &a, t + 999 * ms + i * ms, &n), 0);
	/* one refusal a second, for long, never escalates */
	for (i = 0; i < 20; i++)
		assert_int_equal(xrl_http_esc_refused(e, 0, 3, &b, t + 5000 * ms + (__u64)i * 1001 * ms,
						      &n), 0);
	xrl_http_esc_free(e);
}

static const char *client(const struct xrl_http_proxies *p, const char *peer, const char *xff,
			  const char *real)
{
	static char buf[64];
	struct xrl_http_addr pa = A(peer), c;

	if (xrl_http_client(p, &pa, xff, real, &c))
		return "bad";
	xrl_http_addr_format(&c, buf, sizeof(buf));
	return buf;
}

static void test_xff(void **state)
{
	struct xrl_http_proxies p = { .n = 0 };
	char err[256];

	(void)state;
	assert_int_equal(xrl_http_proxy_add(&p, "10.0.0.0/8", err, sizeof(err)), 0);
	assert_int_equal(xrl_http_proxy_add(&p, "127.0.0.1", err, sizeof(err)), 0);
	assert_int_equal(xrl_http_proxy_add(&p, "fd00::/8", err, sizeof(err)), 0);
	assert_int_equal(xrl_http_proxy_add(&p, "10.0.0.1/8", err, sizeof(err)), -1);
	assert_int_equal(xrl_http_proxy_add(&p, "10.0.0.0/33", err, sizeof(err)), -1);
	assert_int_equal(xrl_http_proxy_add(&p, "nonsense", err, sizeof(err)), -1);
	/* an untrusted peer: its headers are ignored */
	assert_string_equal(client(&p, "192.0.2.1", "198.51.100.1", "198.51.100.2"), "192.0.2.1");
	/* a trusted peer: the rightmost address that is not a trusted proxy */
	assert_string_equal(client(&p, "127.0.0.1", "198.51.100.1", NULL), "198.51.100.1");
	assert_string_equal(client(&p, "127.0.0.1", "6.6.6.6, 198.51.100.1, 10.1.1.1, 10.2.2.2", NULL),
			    "198.51.100.1");
	assert_string_equal(client(&p, "10.9.9.9", " 6.6.6.6 ,198.51.100.1 ", NULL), "198.51.100.1");
	/* all trusted: the leftmost */
	assert_string_equal(client(&p, "127.0.0.1", "10.3.3.3, 10.2.2.2", NULL), "10.3.3.3");
	/* IPv6 hops, IPv4-mapped is IPv4 */
	assert_string_equal(client(&p, "127.0.0.1", "2001:db8::1, 2001:db8::2, fd00::7, ::ffff:10.0.0.1",
				   NULL), "2001:db8::2");
	assert_string_equal(client(&p, "::ffff:127.0.0.1", "::ffff:198.51.100.9", NULL), "198.51.100.9");
	/* X-Real-IP when there is no X-Forwarded-For */
	assert_string_equal(client(&p, "127.0.0.1", NULL, "198.51.100.4"), "198.51.100.4");
	assert_string_equal(client(&p, "127.0.0.1", "", NULL), "127.0.0.1");
	/* garbage from a trusted proxy is a bad request, not a key */
	assert_string_equal(client(&p, "127.0.0.1", "6.6.6.6, junk, 10.0.0.1", NULL), "bad");
	assert_string_equal(client(&p, "127.0.0.1", "198.51.100.1,", NULL), "bad");
	assert_string_equal(client(&p, "127.0.0.1", NULL, "junk"), "bad");
}

static void test_query_arg(void **state)
{
	char v[16];

	(void)state;
	assert_int_equal(xrl_http_query_arg("/a?x=1&user=bob&y=2", "user", v, sizeof(v)), 1);
	assert_string_equal(v, "bob");
	assert_int_equal(xrl_http_query_arg("/a?username=bob", "user", v, sizeof(v)), 0);
	assert_int_equal(xrl_http_query_arg("/a?user", "user", v, sizeof(v)), 0);
	assert_int_equal(xrl_http_query_arg("/user=bob", "user", v, sizeof(v)), 0);
	assert_int_equal(xrl_http_query_arg("/a?user=", "user", v, sizeof(v)), 1);
	assert_string_equal(v, "");
}

static void test_fields(void **state)
{
	struct xrl_http_figures f = { .quota = 100, .window_s = 60, .remaining = 37, .reset_s = 12,
				       .retry_s = 12, .pass = 0 };
	char b[512];

	(void)state;
	xrl_http_policy_field("api", &f, b, sizeof(b));
	assert_string_equal(b, "\"api\";q=100;w=60");
	xrl_http_ratelimit_field("api", &f, b, sizeof(b));
	assert_string_equal(b, "\"api\";r=37;t=12");
	xrl_http_problem_body("api", &f, b, sizeof(b));
	assert_non_null(strstr(b, "\"status\":429"));
	assert_non_null(strstr(b, "\"retry_after\":12"));
}

/* ---------------------------------------------------------------- decisions */

struct hdrs {
	const char *user;
};

static const char *hdr(void *arg, const char *name)
{
	struct hdrs *h = arg;

	return !strcmp(name, "X-User") ? h->user : NULL;
}

static struct xrl_http_state *state_of(const char *text)
{
	static struct xrl_http_rules rs;
	char err[256] = "";

	if (xrl_http_rules_parse(text, &rs, err, sizeof(err)))
		fail_msg("%s", err);
	return xrl_http_state_new(&rs, 1024, NULL);
}

static int ask(struct xrl_http_state *s, const char *ip, const char *user, const char *uri,
	       __u64 now, struct xrl_http_figures *f)
{
	static struct xrl_http_decision d;
	struct xrl_http_addr a = A(ip);
	struct hdrs h = { user };
	struct xrl_http_request req = { .method = "GET", .uri = uri, .client = ip,
					.client_addr = &a, .header = hdr, .header_arg = &h };

	/* --global rules judged here: no rule is left to ask Redis */
	xrl_http_decide_start(s, &req, now, 0, 0, &d);
	assert_int_equal(xrl_http_decide_next(&d), -1);
	return xrl_http_decide_finish(s, &d, f);
}

static void test_decide_token_bucket(void **state)
{
	struct xrl_http_state *s = state_of("tb --key ip --rate 5/s --burst 10\n");
	struct xrl_http_figures f;
	int i, got = 0;

	(void)state;
	for (i = 0; i < 20; i++)
		got += ask(s, "192.0.2.1", NULL, "/", T0, &f);
	assert_int_equal(got, 10);
	assert_false(f.pass);
	assert_int_equal(f.retry_s, 1);   /* 200 ms, rounded up to whole seconds */
	assert_int_equal(f.remaining, 0);
	for (got = 0, i = 0; i < 10; i++)
		got += ask(s, "192.0.2.1", NULL, "/", T0 + NS, &f);
	assert_int_equal(got, 5);
	/* another address has its own bucket */
	assert_true(ask(s, "192.0.2.2", NULL, "/", T0 + NS, &f));
	assert_int_equal(f.remaining, 9);
	assert_int_equal(f.quota, 5);
	assert_int_equal(f.window_s, 1);
	xrl_http_state_free(s);
}

static void test_decide_two_rules(void **state)
{
	struct xrl_http_state *s = state_of(
		"user --key header:X-User --rate 3/m --burst 3 --missing refuse\n"
		"addr --key ip --rate 5/m --burst 5\n");
	struct xrl_http_figures f;
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		assert_true(ask(s, "192.0.2.1", "alice", "/", T0, &f));
	assert_false(ask(s, "192.0.2.1", "alice", "/", T0, &f));
	assert_int_equal(f.rule, 0);
	/* alice's refusal took nothing of the address's 5: 2 left for bob */
	assert_true(ask(s, "192.0.2.1", "bob", "/", T0, &f));
	assert_true(ask(s, "192.0.2.1", "bob", "/", T0, &f));
	assert_false(ask(s, "192.0.2.1", "bob", "/", T0, &f));
	assert_int_equal(f.rule, 1);
	/* and the address's refusal took nothing of bob's 3: 1 left */
	assert_true(ask(s, "192.0.2.9", "bob", "/", T0, &f));
	assert_false(ask(s, "192.0.2.9", "bob", "/", T0, &f));
	/* no X-User: refused by its policy, not keyed by "" */
	assert_false(ask(s, "192.0.2.10", NULL, "/", T0, &f));
	assert_true(f.missing);
	assert_false(ask(s, "192.0.2.10", "", "/", T0, &f));
	xrl_http_state_free(s);
}

static void test_decide_windows(void **state)
{
	struct xrl_http_state *s = state_of("fw --key ip --rate 10/s --algo fixed-window --path /fw\n"
					    "sl --key ip --rate 10/s --algo sliding-log --path /sl\n"
					    "sw --key ip --rate 10/s --algo sliding-window --path /sw\n");
	struct xrl_http_figures f;
	int i, a = 0, b = 0, c = 0, d = 0, e = 0, g = 0;
	__u64 t = T0 + 900000000ull, t2 = T0 + 1050000000ull;

	(void)state;
	for (i = 0; i < 10; i++) {
		a += ask(s, "192.0.2.1", NULL, "/fw", t, &f);
		c += ask(s, "192.0.2.1", NULL, "/sl", t, &f);
		e += ask(s, "192.0.2.1", NULL, "/sw", t, &f);
	}
	for (i = 0; i < 10; i++) {
		b += ask(s, "192.0.2.1", NULL, "/fw", t2, &f);
		d += ask(s, "192.0.2.1", NULL, "/sl", t2, &f);
		g += ask(s, "192.0.2.1", NULL, "/sw", t2, &f);
	}
	assert_int_equal(a, 10);
	assert_int_equal(b, 10);   /* the fixed window's boundary burst */
	assert_int_equal(c, 10);
	assert_int_equal(d, 0);    /* the log remembers all 10 */
	assert_int_equal(e, 10);
	assert_int_equal(g, 0);    /* 10 x 0.95 = 9.5 of the last window weigh in: no room for 1 */
	ask(s, "192.0.2.1", NULL, "/sl", t2, &f);
	assert_int_equal(f.retry_s, 1);   /* 0.75 s until the first leaves the log */
	xrl_http_state_free(s);
}

static void test_decide_leaky(void **state)
{
	struct xrl_http_state *s = state_of("pace --key ip --rate 5/s --algo leaky-bucket --queue 10\n");
	struct xrl_http_figures f;
	int i;

	(void)state;
	for (i = 0; i < 10; i++) {
		assert_true(ask(s, "192.0.2.1", NULL, "/", T0, &f));
		/* each answer held until its slot: 200 ms apart */
		assert_int_equal(f.delay_ns, (__u64)i * 200000000ull);
	}
	for (i = 0; i < 10; i++)
		assert_false(ask(s, "192.0.2.1", NULL, "/", T0, &f));
	assert_int_equal(f.delay_ns, 0);
	/* 200 ms on, one slot is free again */
	assert_true(ask(s, "192.0.2.1", NULL, "/", T0 + 200000000ull, &f));
	assert_int_equal(f.delay_ns, 1800000000ull);
	xrl_http_state_free(s);
}

/* a full table evicts the least recently seen key, and stays bounded */
static void test_decide_bounded(void **state)
{
	struct xrl_http_state *s = state_of("one --key ip --rate 1/m --burst 1\n");
	struct xrl_http_figures f;
	char ip[32];
	int i;

	(void)state;
	assert_true(ask(s, "192.0.2.1", NULL, "/", T0, &f));
	assert_false(ask(s, "192.0.2.1", NULL, "/", T0 + 1, &f));
	for (i = 0; i < 100000; i++) {
		snprintf(ip, sizeof(ip), "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
		ask(s, ip, NULL, "/", T0 + 2 + (__u64)i, &f);
	}
	assert_true(s->evicted > 0);
	/* 192.0.2.1 was the least recently seen: evicted, it starts afresh */
	assert_true(ask(s, "192.0.2.1", NULL, "/", T0 + 200000, &f));
	xrl_http_state_free(s);
}

/*
 * A reload's new rule set shares an unchanged rule's table with the old one:
 * a decision that started on the old set, waited for Redis across the reload
 * and finishes on it takes from the table the new set's requests read.
 */
static void test_decide_reload(void **state)
{
	static struct xrl_http_rules rs;
	static struct xrl_http_decision d[3];
	const char *text = "l --key ip --rate 3/m --burst 3\ng --key ip --rate 100/s --global\n";
	struct xrl_http_addr a = A("192.0.2.1");
	struct xrl_http_request req = { .method = "GET", .uri = "/", .client = "192.0.2.1",
					.client_addr = &a, .header = hdr, .header_arg = &(struct hdrs){ 0 } };
	struct xrl_http_global g = { .policy = XRL_HTTP_FAIL_CLOSED };
	struct xrl_http_state *old = state_of(text), *s;
	struct xrl_http_figures f;
	char err[256] = "";
	int i, k, asked[3];

	(void)state;
	/* three decisions wait for Redis on the old set (stage 1 read the local rule: passes) */
	for (k = 0; k < 3; k++) {
		xrl_http_decide_start(old, &req, T0, 0, 1, &d[k]);
		i = asked[k] = xrl_http_decide_next(&d[k]);
		assert_true(i >= 0);
		assert_int_equal(d[k].idx[i], 1);
	}
	/* the reload: the same rules and one more; the new set replaces the old */
	if (xrl_http_rules_parse("l --key ip --rate 3/m --burst 3\ng --key ip --rate 100/s --global\n"
				 "n --key ip --rate 1/s --path /n\n", &rs, err, sizeof(err)))
		fail_msg("%s", err);
	s = xrl_http_state_new(&rs, 1024, old);
	assert_non_null(s);
	assert_ptr_equal(s->tab[0], old->tab[0]);
	assert_ptr_equal(s->tab[1], old->tab[1]);
	assert_ptr_equal(s->lock, old->lock);
	/* Redis answers: each takes its local token, in the table the new set reads */
	for (k = 0; k < 3; k++) {
		xrl_http_decide_answer(old, &d[k], asked[k], 1, &g);
		assert_true(xrl_http_decide_finish(old, &d[k], &f));
	}
	xrl_http_state_free(old);   /* the last decision on it is done */
	/* the local rule's 3 are spent: the new set refuses the 4th (judged here) */
	assert_false(ask(s, "192.0.2.1", NULL, "/", T0 + 1, &f));
	assert_int_equal(f.rule, 0);
	assert_true(ask(s, "192.0.2.2", NULL, "/", T0 + 1, &f));
	xrl_http_state_free(s);
}

/* ------------------------------------------------------------ --global path */

#define RACE_JOBS 64

static int race_slow_unlock;

#ifdef XRL_TEST_SLOW_UNLOCK
#include <dlfcn.h>

static __thread int race_timer;   /* this thread waits with a deadline: the calls' timer */

/*
 * The sanitizer build's (tests/e2e/test_http_redis_asan.sh): while
 * test_redis_deadlines runs, the calls' timer thread (the one thread that
 * waits on a condition with a deadline) sleeps 2 ms after releasing a mutex,
 * as if preempted there, so what it touches after releasing the lock meets
 * the dispatcher's changes (a job freed).
 */
int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
	static int (*real)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);

	if (!real)
		real = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))
			dlsym(RTLD_NEXT, "pthread_cond_timedwait");
	race_timer = 1;
	return real(c, m, t);
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	static int (*real)(pthread_mutex_t *);
	struct timespec ts = { 0, 2000000 };
	int rc;

	if (!real)
		real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
	rc = real(m);
	if (race_timer && __atomic_load_n(&race_slow_unlock, __ATOMIC_RELAXED))
		nanosleep(&ts, NULL);
	return rc;
}
#endif

static int race_answers[RACE_JOBS], race_got[RACE_JOBS];

static void race_done(void *arg, int got)
{
	int i = (int)(size_t)arg;

	race_got[i] = got;
	__atomic_add_fetch(&race_answers[i], 1, __ATOMIC_ACQ_REL);
}

static int race_all_answered(int n, int ms)
{
	struct timespec ts = { 0, 5000000 };
	int i, left = ms / 5;

	for (;;) {
		for (i = 0; i < n; i++)
			if (!__atomic_load_n(&race_answers[i], __ATOMIC_ACQUIRE))
				break;
		if (i == n || left-- <= 0)
			return i == n;
		nanosleep(&ts, NULL);
	}
}

/*
 * A Redis that does not answer (a real TCP listener that never reads, the
 * connect's script load waits out the deadline): the timer answers -1 every
 * call, queued or in the batch being connected, while the dispatcher frees
 * them once its connect fails; at stop, the calls still queued. Each call is
 * answered once. The timer reads a call's callback under the queue's lock,
 * before the dispatcher may free it: built with -fsanitize=thread
 * (tests/e2e/test_http_redis_tsan.sh), this test reports the race otherwise.
 */
static void test_redis_deadlines(void **state)
{
	static struct xrl_http_rules rs;
	static struct xrl_http_figures fig[RACE_JOBS];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct timespec retry = { 0, 250000000 };   /* past the reconnect wait (200 ms) */
	struct xrl_http_redis *rd;
	struct xrl_http_redis_stats st;
	char err[256] = "", url[64];
	int ls, round, i;

	(void)state;
	race_slow_unlock = 1;
	if (xrl_http_rules_parse("g --key ip --rate 10/s --global\n", &rs, err, sizeof(err)))
		fail_msg("%s", err);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 64), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
	snprintf(url, sizeof(url), "redis://127.0.0.1:%u", ntohs(sa.sin_port));
	rd = xrl_http_redis_start(url, 20, "test", err, sizeof(err));
	if (!rd)
		fail_msg("%s", err);
	for (round = 0; round < 4; round++) {
		memset(race_answers, 0, sizeof(race_answers));
		for (i = 0; i < RACE_JOBS; i++)
			xrl_http_redis_ask(rd, &rs.rule[0], "0123456789abcdef0123456789abcdef", &fig[i],
					   race_done, (void *)(size_t)i);
		if (round == 3)
			break;   /* these are queued at the stop */
		assert_true(race_all_answered(RACE_JOBS, 5000));
		for (i = 0; i < RACE_JOBS; i++) {
			assert_int_equal(race_answers[i], 1);
			assert_int_equal(race_got[i], -1);
		}
		nanosleep(&retry, NULL);
	}
	xrl_http_redis_stats(rd, &st);
	assert_true(st.timeouts > 0);   /* the timer answered calls the dispatcher then freed */
	xrl_http_redis_stop(rd);
	race_slow_unlock = 0;
	for (i = 0; i < RACE_JOBS; i++) {
		assert_int_equal(race_answers[i], 1);
		assert_int_equal(race_got[i], -1);
	}
	close(ls);
}

/* every string under key "expr" in j */
static void exprs_of(json_t *j, json_t *out)
{
	const char *k;
	json_t *v;
	size_t i;

	if (json_is_object(j)) {
		json_object_foreach(j, k, v) {
			if (!strcmp(k, "expr") && json_is_string(v))
				json_array_append(out, v);
			else
				exprs_of(v, out);
		}
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			exprs_of(v, out);
	}
}

/* the TYPE of family name in text, or NULL */
static const char *type_of(const char *text, const char *name)
{
	static char t[32];
	char want[160];
	const char *p;

	snprintf(want, sizeof(want), "# TYPE %s ", name);
	p = strstr(text, want);
	if (!p)
		return NULL;
	sscanf(p + strlen(want), "%31s", t);
	return t;
}

/*
 * The dashboard's request-layer queries (xrl_http_*) name families xrl
 * http emits, and take rate() only of counters and histogram buckets.
 */
static void test_dashboard_http(void **state)
{
	struct xrl_http_redis_stats rs = { .calls = 1 };
	struct xrl_httpd_stats hs = { 0 };
	struct xrl_http_metrics *m = xrl_http_metrics_new();
	json_t *dash, *ex = json_array(), *q;
	json_error_t e;
	regex_t name_re, rate_re;
	char *text = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&text, &len);
	int checked = 0;

	(void)state;
	xrl_http_metrics_write(m, f, "default", &rs, 0, &hs);
	fclose(f);
	dash = json_load_file(XRL_SRC_DIR "/docs/grafana-xrl.json", 0, &e);
	if (!dash)
		fail_msg("docs/grafana-xrl.json line %d: %s", e.line, e.text);
	exprs_of(dash, ex);
	assert_int_equal(regcomp(&name_re, "xrl_http_[a-z0-9_]+", REG_EXTENDED), 0);
	assert_int_equal(regcomp(&rate_re, "(rate|increase)\\(\\s*(xrl_http_[a-z0-9_]+)", REG_EXTENDED), 0);
	json_array_foreach(ex, i, q) {
		const char *s = json_string_value(q), *p;
		regmatch_t mm[3];

		for (p = s; regexec(&name_re, p, 1, mm, 0) == 0; p += mm[0].rm_eo) {
			char name[128], base[128];
			size_t n = (size_t)(mm[0].rm_eo - mm[0].rm_so), bl;
			const char *t;

			memcpy(name, p + mm[0].rm_so, n);
			name[n] = 0;
			t = type_of(text, name);
			if (!t) {
				snprintf(base, sizeof(base), "%s", name);
				bl = strlen(base);
				if (bl > 7 && !strcmp(base + bl - 7, "_bucket"))
					base[bl - 7] = 0;
				else if (bl > 4 && !strcmp(base + bl - 4, "_sum"))
					base[bl - 4] = 0;
				else if (bl > 6 && !strcmp(base + bl - 6, "_count"))
					base[bl - 6] = 0;
				t = type_of(text, base);
				if (!t || strcmp(t, "histogram"))
					fail_msg("dashboard query '%s' uses %s, which xrl http does not emit", s, name);
			}
			checked++;
		}
		for (p = s; regexec(&rate_re, p, 3, mm, 0) == 0; p += mm[0].rm_eo) {
			char name[128];
			size_t n = (size_t)(mm[2].rm_eo - mm[2].rm_so);
			const char *t;

			memcpy(name, p + mm[2].rm_so, n);
			name[n] = 0;
			t = type_of(text, name);
			if (t && strcmp(t, "counter"))
				fail_msg("dashboard query '%s' takes a rate of the %s %s", s, t, name);
		}
	}
	assert_true(checked >= 6);
	regfree(&name_re);
	regfree(&rate_re);
	json_decref(ex);
	json_decref(dash);
	free(text);
	xrl_http_metrics_free(m);
}

/* argv[1]: run only the tests whose name matches (cmocka's filter: * and ?) */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_ok),
		cmocka_unit_test(test_rules_errors),
		cmocka_unit_test(test_packet_rule),
		cmocka_unit_test(test_xff),
		cmocka_unit_test(test_query_arg),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_decide_token_bucket),
		cmocka_unit_test(test_decide_two_rules),
		cmocka_unit_test(test_decide_windows),
		cmocka_unit_test(test_decide_leaky),
		cmocka_unit_test(test_decide_bounded),
		cmocka_unit_test(test_decide_reload),
		cmocka_unit_test(test_redis_deadlines),
		cmocka_unit_test(test_dashboard_http),
		cmocka_unit_test(test_escalate),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
