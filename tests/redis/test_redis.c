// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The daemon's Redis side against a real redis-server started here on a
 * loopback port: URL parsing, the fleet scripts' arithmetic, their
 * atomicity under concurrency (and why GET-then-SET is not enough), script
 * reload on NOSCRIPT, and the timeout on a server that stopped answering.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "xrl_fleet.h"
#include "xrl_rule.h"
#include "xrl_log.h"
#include "xrl_redis.h"
#include "xrl_script_args.h"
#include "xrl_scripts.h"

static pid_t server;
static int port;
static char dir[] = "/tmp/xrl-redis-test.XXXXXX";

static redisContext *raw(void)
{
	struct timeval tv = { 2, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);

	assert_non_null(c);
	assert_int_equal(c->err, 0);
	redisSetTimeout(c, tv);
	return c;
}

/* Is nothing listening on 127.0.0.1:p now? (so the PING below reaches our server, not another) */
static int port_free(int p)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	if (fd < 0)
		return 0;
	ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* One redis-server on a free loopback port: another tried when the port is taken or it exits. */
static int start_server(void **state)
{
	char portarg[16];
	int attempt, i;

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	for (attempt = 0; attempt < 8; attempt++) {
		port = 30000 + (getpid() + attempt * 977) % 20000;
		if (!port_free(port))
			continue;
		snprintf(portarg, sizeof(portarg), "%d", port);
		server = fork();
		if (server == 0) {
			int devnull = open("/dev/null", 1);

			dup2(devnull, 1);
			execlp("redis-server", "redis-server", "--port", portarg, "--bind", "127.0.0.1",
			       "--save", "", "--appendonly", "no", "--dir", dir, (char *)NULL);
			_exit(127);
		}
		for (i = 0; i < 100; i++) {
			struct timeval tv = { 0, 200000 };
			redisContext *c;
			redisReply *r;
			int up;

			if (waitpid(server, NULL, WNOHANG) == server)
				break;   /* it exited: the port was taken meanwhile; try another */
			c = redisConnectWithTimeout("127.0.0.1", port, tv);
			r = c && !c->err ? redisCommand(c, "PING") : NULL;
			up = r && r->type == REDIS_REPLY_STATUS;
			if (r)
				freeReplyObject(r);
			if (c)
				redisFree(c);
			if (up)
				return 0;
			usleep(100000);
		}
		if (i == 100) {
			fprintf(stderr, "redis-server did not answer on port %d within 10 s\n", port);
			return -1;
		}
		server = 0;
	}
	fprintf(stderr, "redis-server did not start: no free loopback port of 8 tried, or it exits at once (try redis-server by hand)\n");
	return -1;
}

static int stop_server(void **state)
{
	(void)state;
	if (server > 0) {
		kill(server, SIGCONT);
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
	}
	rmdir(dir);
	return 0;
}

static void connect_client(struct xrl_redis *r)
{
	char err[256];

	memset(r, 0, sizeof(*r));
	snprintf(r->url.host, sizeof(r->url.host), "127.0.0.1");
	r->url.port = port;
	r->timeout.tv_sec = 2;
	assert_int_equal(xrl_redis_connect(r, err, sizeof(err)), 0);
}

static void test_parse_url(void **state)
{
	struct xrl_redis_url u;
	char err[256];

	(void)state;
	assert_int_equal(xrl_redis_parse_url("redis://10.0.0.5", &u, err, sizeof(err)), 0);
	assert_string_equal(u.host, "10.0.0.5");
	assert_int_equal(u.port, 6379);
	assert_int_equal(u.db, 0);
	assert_string_equal(u.password, "");
	assert_int_equal(xrl_redis_parse_url("redis://:s3cret@redis.example:6380/2", &u, err,
					     sizeof(err)), 0);
	assert_string_equal(u.host, "redis.example");
	assert_string_equal(u.password, "s3cret");
	assert_int_equal(u.port, 6380);
	assert_int_equal(u.db, 2);
	assert_int_equal(xrl_redis_parse_url("redis://[::1]:7000", &u, err, sizeof(err)), 0);
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.port, 7000);
	assert_int_equal(xrl_redis_parse_url("http://x", &u, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "redis://"));
	assert_int_equal(xrl_redis_parse_url("redis://host:99999", &u, err, sizeof(err)), -EINVAL);
	assert_int_equal(xrl_redis_parse_url("redis://host:6379/x", &u, err, sizeof(err)), -EINVAL);
	assert_int_equal(xrl_redis_parse_url("redis://user:pw@host", &u, err, sizeof(err)), -EINVAL);
	assert_int_equal(xrl_redis_parse_url("redis://", &u, err, sizeof(err)), -EINVAL);
}

/*
 * One GCRA call: n tokens, interval, span, since and the TAT's life in µs,
 * mode "0" record / "1" take.
 */
/*
 * The fixed figures of a gcra call, placed by the layout of
 * xrl_script_args.h (the builder counts the demand keys itself).
 */
static void gcra_fixed(const char *fixed[XRL_GCRA_FIXED], const char *mode, const char *host,
		       const char *window, const char *life, const char *interval,
		       const char *span, const char *since)
{
	fixed[XRL_GCRA_MODE] = mode;
	fixed[XRL_GCRA_HOST] = host;
	fixed[XRL_GCRA_WINDOW_US] = window;
	fixed[XRL_GCRA_LIFE_US] = life;
	fixed[XRL_GCRA_INTERVAL_US] = interval;
	fixed[XRL_GCRA_SPAN_US] = span;
	fixed[XRL_GCRA_ND] = NULL;
	fixed[XRL_GCRA_SINCE_US] = since;
}

/* Argument slots for the calls of these tests (a few sources each, and one spare). */
#define ARGV_SLOTS 32

static void gcra(struct xrl_redis *r, const char *key, const char *n, const char *interval,
		 const char *span, const char *since, const char *life, const char *mode,
		 double *granted, double *debt)
{
	const struct xrl_gcra_source src = { .key = key, .n = n };
	const char *fixed[XRL_GCRA_FIXED], *argv[ARGV_SLOTS];
	struct xrl_gcra_answer ans;
	struct xrl_redis_call c = { 0 };
	bool take = !strcmp(mode, "1");
	char err[256], nd[16];

	gcra_fixed(fixed, mode, "", "0", life, interval, span, since);
	xrl_gcra_build(&c, argv, fixed, &src, 1, nd);
	assert_int_equal(xrl_redis_run(r, &c, 1, err, sizeof(err)), 0);
	assert_int_equal(xrl_gcra_decode(c.reply, &src, 1, take, &ans), 0);
	*debt = ans.debt_us;
	*granted = take ? ans.granted : atof(n);   /* recorded admissions are never refused */
	xrl_redis_calls_free(&c, 1);
}

/*
 * Take mode with the data path's figures, whose intervals carry
 * picoseconds (10/m is 6000001.024 µs, 3/s 333333.248 µs): the TAT is whole
 * µs, so every take rounds up; a burst of B still grants exactly B, then
 * refuses.
 */
static void test_gcra_take_whole_burst(void **state)
{
	static const struct { const char *iv, *span; int burst; } t[] = {
		{ "60000010.240000", "60000010.240000", 1 },   /* 1/m, burst 1 */
		{ "6000001.024000", "60000010.240000", 10 },   /* 10/m, burst 10 */
		{ "333333.248000", "2333332.736000", 7 },      /* 3/s, burst 7 */
	};
	struct xrl_redis r;
	char key[64];
	double g, debt;
	size_t i;
	int k;

	(void)state;
	connect_client(&r);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(key, sizeof(key), "xrl:{tw%zu:198.18.0.1}", i);
		for (k = 0; k < t[i].burst; k++) {
			gcra(&r, key, "1", t[i].iv, t[i].span, "0", "100000000", "1", &g, &debt);
			if (g != 1)
				fail_msg("%s/%s: take %d of a burst of %d refused", t[i].iv, t[i].span,
					 k + 1, t[i].burst);
		}
		gcra(&r, key, "1", t[i].iv, t[i].span, "0", "100000000", "1", &g, &debt);
		if (g != 0)
			fail_msg("%s/%s: take %d past a burst of %d granted", t[i].iv, t[i].span,
				 t[i].burst + 1, t[i].burst);
	}
	xrl_redis_close(&r);
}

static void test_gcra_record(void **state)
{
	struct xrl_redis r;
	double g, debt;
	redisContext *c;
	redisReply *rep;

	(void)state;
	connect_client(&r);
	/* 100 admissions at 1 ms each: the fleet is 100 ms ahead (less the µs gone by) */
	gcra(&r, "xrl:{t1:198.18.0.1}", "100", "1000", "50000", "0", "100000", "0", &g, &debt);
	assert_true(g == 100);
	assert_true(debt > 99000 && debt <= 100000);
	/* recorded admissions are never refused, even far past the burst */
	gcra(&r, "xrl:{t1:198.18.0.1}", "100", "1000", "50000", "0", "100000", "0", &g, &debt);
	assert_true(g == 100);
	assert_true(debt > 199000 && debt <= 200000);
	/* a read (n = 0) changes nothing */
	gcra(&r, "xrl:{t1:198.18.0.1}", "0", "1000", "50000", "0", "100000", "0", &g, &debt);
	assert_true(g == 0);
	assert_true(debt > 198000 && debt <= 200000);
	/* the key lives one to two lives (100 ms here) past its TAT, ~200 ms ahead, then goes */
	c = raw();
	rep = redisCommand(c, "PTTL xrl:{t1:198.18.0.1}");
	assert_true(rep->integer > 250 && rep->integer <= 401);
	freeReplyObject(rep);
	usleep(450000);
	rep = redisCommand(c, "EXISTS xrl:{t1:198.18.0.1}");
	assert_int_equal(rep->integer, 0);
	freeReplyObject(rep);
	/* admissions spread over the last second of a quiet key leave no debt */
	gcra(&r, "xrl:{t1:198.18.0.2}", "10", "1000", "50000", "1000000", "3000000", "0", &g, &debt);
	assert_true(debt < 0);
	redisFree(c);
	xrl_redis_close(&r);
}

/* The expiry a TAT must have: the end of the life-long slot after its own (ms). */
static long long tat_expiry_ms(redisContext *c, const char *key, long long life_us)
{
	redisReply *rep = redisCommand(c, "GET %s", key);
	long long tat;

	assert_int_equal(rep->type, REDIS_REPLY_STRING);
	tat = atoll(rep->str);
	freeReplyObject(rep);
	return (tat / life_us + 2) * life_us / 1000;
}

static long long expiretime_ms(redisContext *c, const char *key)
{
	redisReply *rep = redisCommand(c, "PEXPIRETIME %s", key);
	long long v = rep->integer;

	freeReplyObject(rep);
	return v;
}

/*
 * Writes that stay in the TAT's expiry slot keep the expiry (KEEPTTL), a
 * write that moves it to a later slot sets a later one: after every write
 * the key expires exactly where its TAT says, one to two lives past it.
 */
static void test_gcra_expiry_slots(void **state)
{
	const char *key = "xrl:{t1:198.18.0.3}";
	redisContext *c = raw();
	struct xrl_redis r;
	long long first, e;
	double g, debt;
	int i;

	(void)state;
	connect_client(&r);
	gcra(&r, key, "1", "1000", "50000", "0", "10000000", "0", &g, &debt);
	first = expiretime_ms(c, key);
	assert_true(first == tat_expiry_ms(c, key, 10000000));
	for (i = 0; i < 5; i++) {
		gcra(&r, key, "1", "1000", "50000", "0", "10000000", "0", &g, &debt);
		assert_true(expiretime_ms(c, key) == tat_expiry_ms(c, key, 10000000));
	}
	/* a TAT written with a fraction (an older xrl) is rewritten whole, not refused */
	{
		redisReply *rep = redisCommand(c, "TIME");
		long long now_us = atoll(rep->element[0]->str) * 1000000 + atoll(rep->element[1]->str);

		freeReplyObject(rep);
		rep = redisCommand(c, "SET xrl:{t1:198.18.0.4} %lld.500 PX 10000", now_us + 100000);
		freeReplyObject(rep);
		gcra(&r, "xrl:{t1:198.18.0.4}", "1", "1000", "50000", "0", "10000000", "0", &g, &debt);
		assert_true(debt > 100000 && debt <= 101600);
		rep = redisCommand(c, "GET xrl:{t1:198.18.0.4}");
		assert_null(strchr(rep->str, '.'));
		freeReplyObject(rep);
	}
	/* 20 s of debt at once: two slots later */
	gcra(&r, key, "20000", "1000", "50000", "0", "10000000", "0", &g, &debt);
	e = expiretime_ms(c, key);
	assert_true(e == tat_expiry_ms(c, key, 10000000));
	assert_true(e >= first + 20000);
	redisFree(c);
	xrl_redis_close(&r);
}

/*
 * Exactness under contention: 20 clients at once take 1 token each from a
 * budget of 10 (burst 10, one token a day): exactly 10 are granted.
 */
#define CLIENTS 20
static pthread_barrier_t go;
static int granted_total;
static pthread_mutex_t granted_lock = PTHREAD_MUTEX_INITIALIZER;

static void *script_client(void *arg)
{
	struct xrl_redis r;
	double g, debt;

	(void)arg;
	connect_client(&r);
	pthread_barrier_wait(&go);
	gcra(&r, "xrl:{t2:198.18.0.9}", "1", "86400000000", "864000000000", "0", "3000000", "1", &g, &debt);
	pthread_mutex_lock(&granted_lock);
	granted_total += (int)g;
	pthread_mutex_unlock(&granted_lock);
	xrl_redis_close(&r);
	return NULL;
}

/*
 * The same decision made by the client: GET the count, decide, SET it.
 * The decision takes a network round trip (here 2 ms) during which the
 * others read the same count.
 */
static void *get_then_set_client(void *arg)
{
	redisContext *c = raw();
	redisReply *rep;
	long used;

	(void)arg;
	pthread_barrier_wait(&go);
	rep = redisCommand(c, "GET xrl:getset");
	used = rep->type == REDIS_REPLY_STRING ? atol(rep->str) : 0;
	freeReplyObject(rep);
	usleep(2000);
	if (used < 10) {
		rep = redisCommand(c, "SET xrl:getset %ld", used + 1);
		freeReplyObject(rep);
		pthread_mutex_lock(&granted_lock);
		granted_total++;
		pthread_mutex_unlock(&granted_lock);
	}
	redisFree(c);
	return NULL;
}

static int run_clients(void *(*fn)(void *))
{
	pthread_t t[CLIENTS];
	int i;

	granted_total = 0;
	pthread_barrier_init(&go, NULL, CLIENTS);
	for (i = 0; i < CLIENTS; i++)
		pthread_create(&t[i], NULL, fn, NULL);
	for (i = 0; i < CLIENTS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	return granted_total;
}

static void test_concurrent_budget(void **state)
{
	int script, getset;

	(void)state;
	script = run_clients(script_client);
	getset = run_clients(get_then_set_client);
	printf("    20 concurrent takes from a budget of 10: Lua script granted %d, GET-then-SET %d\n",
	       script, getset);
	assert_int_equal(script, 10);
	assert_true(getset > 10);
}

static void test_noscript_reload(void **state)
{
	struct xrl_redis r;
	double g, debt;
	redisContext *c = raw();
	redisReply *rep;

	(void)state;
	connect_client(&r);
	rep = redisCommand(c, "SCRIPT FLUSH");
	freeReplyObject(rep);
	redisFree(c);
	gcra(&r, "xrl:{t3:198.18.0.3}", "1", "1000", "50000", "0", "3000000", "0", &g, &debt);
	assert_true(g == 1);
	assert_int_equal(r.noscript, 1);
	xrl_redis_close(&r);
}

static void test_hosts(void **state)
{
	const char *fa[XRL_HOSTS_FIXED] = {
		[XRL_HOSTS_HOST] = "a", [XRL_HOSTS_RATE] = "90",
		[XRL_HOSTS_WINDOW_US] = "1000000", [XRL_HOSTS_TTL_MS] = "60000",
	};
	const char *fb[XRL_HOSTS_FIXED] = {
		[XRL_HOSTS_HOST] = "b", [XRL_HOSTS_RATE] = "10",
		[XRL_HOSTS_WINDOW_US] = "1000000", [XRL_HOSTS_TTL_MS] = "60000",
	};
	const char *argv[3][XRL_HOSTS_ARGC];
	struct xrl_redis r;
	struct xrl_redis_call c[3] = { 0 };
	char err[256];
	double live, sum;

	(void)state;
	xrl_hosts_build(&c[0], argv[0], "xrl:{t4}:hosts", fa);
	xrl_hosts_build(&c[1], argv[1], "xrl:{t4}:hosts", fb);
	xrl_hosts_build(&c[2], argv[2], "xrl:{t4}:hosts", fa);
	connect_client(&r);
	assert_int_equal(xrl_redis_run(&r, c, 3, err, sizeof(err)), 0);
	assert_int_equal(xrl_hosts_decode(c[0].reply, &live, &sum), 0);
	assert_true(live == 1);
	assert_int_equal(xrl_hosts_decode(c[2].reply, &live, &sum), 0);
	assert_true(live == 2);
	assert_true(sum == 100);   /* host a's share: 90 / 100 */
	xrl_redis_calls_free(c, 3);
	xrl_redis_close(&r);
}

/*
 * One call for several sources, as the daemon sends them, with demand:
 * two hosts seeing 900 and 100 packets of a source over a second get
 * shares 0.9 and 0.1; a second source in the same call is independent.
 */
static void test_batch_demand_share(void **state)
{
	/* host a: source 6 with 5 admissions and its demand, source 7 a read without */
	const struct xrl_gcra_source sa[2] = {
		{ .key = "xrl:{t6:198.18.0.6}", .n = "5", .demand_key = "xrl:{t6:198.18.0.6}:d",
		  .demand = "900", .demand_us = "1000000" },
		{ .key = "xrl:{t6:198.18.0.7}", .n = "0" },
	};
	const struct xrl_gcra_source sb[1] = {
		{ .key = "xrl:{t6:198.18.0.6}", .n = "3", .demand_key = "xrl:{t6:198.18.0.6}:d",
		  .demand = "100", .demand_us = "1000000" },
	};
	const char *fa[XRL_GCRA_FIXED], *fb[XRL_GCRA_FIXED], *argv[2][ARGV_SLOTS];
	struct xrl_gcra_answer aa[2], ab[1];
	struct xrl_redis_call c[2] = { 0 };
	struct xrl_redis r;
	char err[256], nd[2][16];
	double v;

	(void)state;
	gcra_fixed(fa, "0", "ha", "1000000", "3000000", "10000", "100000", "0");
	gcra_fixed(fb, "0", "hb", "1000000", "3000000", "10000", "100000", "0");
	xrl_gcra_build(&c[0], argv[0], fa, sa, 2, nd[0]);
	xrl_gcra_build(&c[1], argv[1], fb, sb, 1, nd[1]);
	/* TAT keys, then the demand keys of the sources whose demand goes along */
	assert_int_equal(c[0].nkeys, 3);
	assert_int_equal(c[1].nkeys, 2);
	connect_client(&r);
	assert_int_equal(xrl_redis_run(&r, c, 2, err, sizeof(err)), 0);
	assert_int_equal(xrl_gcra_decode(c[0].reply, sa, 2, false, aa), 0);
	/* host a, source 6: 5 admissions of 10 ms: 50 ms of debt */
	v = aa[0].debt_us;
	assert_true(v > 49000 && v <= 50000);
	/* host a, source 7: a read without demand, nothing spent: only the debt */
	v = aa[1].debt_us;
	assert_true(v <= 0);
	/* then source 6's demand: alone so far (share 1, 1 host); nothing for source 7 */
	v = aa[0].share_ppm;
	assert_true(v == 1000000);
	v = aa[0].live;
	assert_true(v == 1);
	assert_true(isnan(aa[1].share_ppm) && isnan(aa[1].live));
	assert_int_equal(xrl_redis_reply_num(c[0].reply, 4, &v), -1);   /* and nothing more */
	/* host b, source 6: 8 admissions in all, 80 ms; b holds 100 of 1000 packets/s */
	assert_int_equal(xrl_gcra_decode(c[1].reply, sb, 1, false, ab), 0);
	v = ab[0].debt_us;
	assert_true(v > 79000 && v <= 80000);
	v = ab[0].share_ppm;
	assert_true(v > 99900 && v < 100100);   /* ppm */
	v = ab[0].live;
	assert_true(v == 2);
	xrl_redis_calls_free(c, 2);
	xrl_redis_close(&r);
}

/*
 * A source younger than the round says how far back its admissions go
 * ("n@since"); the others take the call's: 10 admissions of 1 ms made
 * just now leave 10 ms of debt, the same spread over the last second none.
 */
static void test_since_per_source(void **state)
{
	const struct xrl_gcra_source src[2] = {
		{ .key = "xrl:{t7:198.18.0.7}", .n = "10" },
		{ .key = "xrl:{t7:198.18.0.8}", .n = "10@1000000" },
	};
	const char *fixed[XRL_GCRA_FIXED], *argv[ARGV_SLOTS];
	struct xrl_gcra_answer ans[2];
	struct xrl_redis_call c = { 0 };
	struct xrl_redis r;
	char err[256], nd[16];
	double v;

	(void)state;
	gcra_fixed(fixed, "0", "", "0", "3000000", "1000", "50000", "0");
	xrl_gcra_build(&c, argv, fixed, src, 2, nd);
	connect_client(&r);
	assert_int_equal(xrl_redis_run(&r, &c, 1, err, sizeof(err)), 0);
	assert_int_equal(xrl_gcra_decode(c.reply, src, 2, false, ans), 0);
	v = ans[0].debt_us;
	assert_true(v > 9000 && v <= 10000);
	v = ans[1].debt_us;
	assert_true(v <= 0);
	xrl_redis_calls_free(&c, 1);
	xrl_redis_close(&r);
}

static long long raw_int(redisContext *c, const char *fmt, const char *key);

static long long redis_now_us(redisContext *c)
{
	redisReply *rep = redisCommand(c, "TIME");
	long long v = atoll(rep->element[0]->str) * 1000000 + atoll(rep->element[1]->str);

	freeReplyObject(rep);
	return v;
}

/* A TAT as stored (whole µs), or -1 when the key is missing. */
static long long tat_of(redisContext *c, const char *key)
{
	redisReply *rep = redisCommand(c, "GET %s", key);
	long long v = -1;

	assert_non_null(rep);
	if (rep->type == REDIS_REPLY_STRING) {
		assert_null(strchr(rep->str, '.'));
		v = atoll(rep->str);
	}
	freeReplyObject(rep);
	return v;
}

/* How many times Redis ran CMD (lower case) since the last CONFIG RESETSTAT. */
static long long cmd_calls(redisContext *c, const char *cmd)
{
	redisReply *rep = redisCommand(c, "INFO commandstats");
	char name[64], *p;
	long long v = 0;

	snprintf(name, sizeof(name), "cmdstat_%s:calls=", cmd);
	p = strstr(rep->str, name);
	if (p)
		v = atoll(p + strlen(name));
	freeReplyObject(rep);
	return v;
}

/* One gcra call of n sources in record mode (life 1 s, 1 ms a token, since 0); the answers. */
static void gcra_record_batch(struct xrl_redis *r, const struct xrl_gcra_source *src, int n,
			      const char *host, struct xrl_gcra_answer *ans)
{
	const char *fixed[XRL_GCRA_FIXED], **argv = calloc(xrl_gcra_argc(n, n), sizeof(*argv));
	struct xrl_redis_call c = { 0 };
	char err[256], nd[16];

	assert_non_null(argv);
	gcra_fixed(fixed, "0", host, "3000000", "1000000", "1000", "50000", "0");
	xrl_gcra_build(&c, argv, fixed, src, n, nd);
	assert_int_equal(xrl_redis_run(r, &c, 1, err, sizeof(err)), 0);
	assert_int_equal(xrl_gcra_decode(c.reply, src, n, false, ans), 0);
	xrl_redis_calls_free(&c, 1);
	free(argv);
}

/*
 * A source the host expects ahead ("+n") is added to in place without a
 * read; whatever Redis holds, it ends as a source sent plainly ("n") does
 * in the same call (so at the same instant): the same TAT, expiry and debt,
 * when the TAT is missing, ahead within its expiry slot, ahead across the
 * slot's end, behind, or a fraction from an older xrl.
 */
static void test_gcra_ahead_same(void **state)
{
	static const char *const what[] = { "missing", "ahead", "ahead across the slot",
					    "behind", "a fraction" };
	const long long life = 1000000;
	struct xrl_gcra_source src[10] = { { 0 } };
	struct xrl_gcra_answer ans[10];
	char keys[10][64];
	redisContext *c = raw();
	struct xrl_redis r;
	long long now, slot, tat0[5];
	int k;

	(void)state;
	now = redis_now_us(c);
	slot = (now / life + 2) * life;   /* a slot start 1 to 2 s ahead */
	tat0[0] = -1;
	tat0[1] = slot + 1000;
	tat0[2] = slot + life - 1000;     /* + 5 ms: into the next slot */
	tat0[3] = now - 500000;
	tat0[4] = slot + 2000;            /* stored as "….5" */
	/* keys 0-4 "+5" (first, as the daemon sends them), 5-9 the same states sent "5" */
	for (k = 0; k < 10; k++) {
		long long t = tat0[k % 5];
		redisReply *rep;

		snprintf(keys[k], sizeof(keys[k]), "xrl:{t9:198.18.1.%d}", k);
		src[k].key = keys[k];
		src[k].n = k < 5 ? "+5" : "5";
		if (t < 0)
			continue;
		rep = redisCommand(c, "SET %s %lld%s PXAT %lld", keys[k], t, k % 5 == 4 ? ".5" : "",
				   (t / life + 2) * life / 1000);
		freeReplyObject(rep);
	}
	connect_client(&r);
	gcra_record_batch(&r, src, 10, "h", ans);
	for (k = 0; k < 5; k++) {
		long long a = tat_of(c, keys[k + 5]), b = tat_of(c, keys[k]);

		if (a != b || expiretime_ms(c, keys[k + 5]) != expiretime_ms(c, keys[k]) ||
		    ans[k + 5].debt_us != ans[k].debt_us)
			fail_msg("TAT %s: plain %lld (expires %lld, debt %.0f), '+' %lld (expires %lld, debt %.0f)",
				 what[k], a, expiretime_ms(c, keys[k + 5]), ans[k + 5].debt_us, b,
				 expiretime_ms(c, keys[k]), ans[k].debt_us);
		/* the expiry the TAT's slot says, and the TAT: 5 ms past where it was, or past now */
		assert_true(expiretime_ms(c, keys[k]) == tat_expiry_ms(c, keys[k], life));
		if (k == 1 || k == 2)
			assert_true(b == tat0[k] + 5000);
		else if (k == 4)
			assert_true(b == tat0[k] + 1 + 5000);
		else
			assert_true(b >= now + 5000 && b < now + 5000 + 1000000);
	}
	redisFree(c);
	xrl_redis_close(&r);
}

/*
 * 64 sources over budget, sent as the daemon sends them ("+n"): one write
 * each and no read (the TIME of the call aside, 64 commands, INCRBY all).
 */
static void test_gcra_ahead_one_write(void **state)
{
	const long long life = 1000000;
	struct xrl_gcra_source src[64] = { { 0 } };
	struct xrl_gcra_answer ans[64];
	char keys[64][64];
	redisContext *c = raw();
	struct xrl_redis r;
	long long now;
	int k;

	(void)state;
	now = redis_now_us(c);
	for (k = 0; k < 64; k++) {
		long long t = (now / life + 2) * life + 1000;
		redisReply *rep;

		snprintf(keys[k], sizeof(keys[k]), "xrl:{t10:198.18.2.%d}", k);
		src[k].key = keys[k];
		src[k].n = "+5";
		rep = redisCommand(c, "SET %s %lld PXAT %lld", keys[k], t, (t / life + 2) * life / 1000);
		freeReplyObject(rep);
	}
	connect_client(&r);
	freeReplyObject(redisCommand(c, "CONFIG RESETSTAT"));
	gcra_record_batch(&r, src, 64, "h", ans);
	assert_int_equal(cmd_calls(c, "incrby"), 64);
	assert_int_equal(cmd_calls(c, "mget") + cmd_calls(c, "get") + cmd_calls(c, "set") +
			 cmd_calls(c, "pexpireat"), 0);
	for (k = 0; k < 64; k++)
		assert_true(ans[k].debt_us > 1000000 + 1000);
	redisFree(c);
	xrl_redis_close(&r);
}

/* The previous gcra.lua (92dc3ce), kept in tests/redis next to this file. */
static void load_prev_gcra(struct xrl_redis *r)
{
	char path[512], *src;
	const char *slash = strrchr(__FILE__, '/');
	redisContext *c = raw();
	redisReply *rep;
	FILE *f;
	long len;

	snprintf(path, sizeof(path), "%.*sgcra_prev.lua", slash ? (int)(slash - __FILE__ + 1) : 0,
		 __FILE__);
	f = fopen(path, "r");
	if (!f)
		fail_msg("%s: %s (run build/test_redis from the source tree's top)", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	src = calloc(1, len + 1);
	assert_non_null(src);
	assert_int_equal(fread(src, 1, len, f), len);
	fclose(f);
	rep = redisCommand(c, "SCRIPT LOAD %s", src);
	assert_int_equal(rep->type, REDIS_REPLY_STRING);
	connect_client(r);
	snprintf(r->sha[XRL_SCRIPT_GCRA], sizeof(r->sha[0]), "%s", rep->str);
	freeReplyObject(rep);
	free(src);
	redisFree(c);
}

/*
 * A rolling upgrade: daemons with the previous gcra.lua and with this one
 * on the same keys. Each reads what the other wrote: the TAT adds up
 * exactly (5 ms a report, sent as "+5" or "5" by either), its expiry is
 * always the one its slot says, the demand hash gives both hosts their
 * shares (900 and 100 packets/s), and a host gone past the window is
 * deleted by either without touching the others or the expiry's mark.
 */
static void test_gcra_rolling_upgrade(void **state)
{
	const long long life = 1000000;
	struct xrl_redis rold, rnew;
	struct xrl_gcra_answer a;
	redisContext *c = raw();
	redisReply *rep;
	const char *key = "xrl:{t11:198.18.3.1}", *dkey = "xrl:{t11:198.18.3.1}:d";
	struct xrl_gcra_source so = { .key = key, .n = "5", .demand_key = dkey, .demand = "900",
				      .demand_us = "1000000" };
	struct xrl_gcra_source sn = { .key = key, .n = "5", .demand_key = dkey, .demand = "100",
				      .demand_us = "1000000" };
	long long now, t, t_d;
	int i;

	(void)state;
	load_prev_gcra(&rold);
	connect_client(&rnew);
	now = redis_now_us(c);
	t = (now / life + 2) * life + 1000;   /* ahead, and 5 ms a report stays in its slot */
	freeReplyObject(redisCommand(c, "SET %s %lld PXAT %lld", key, t, (t / life + 2) * life / 1000));
	for (i = 0; i < 8; i++) {
		bool old = i % 2 == 0;

		sn.n = i % 4 == 1 ? "5" : "+5";
		so.n = i % 4 == 0 ? "5" : "+5";
		gcra_record_batch(old ? &rold : &rnew, old ? &so : &sn, 1, old ? "ho" : "hn", &a);
		t += 5000;
		if (tat_of(c, key) != t)
			fail_msg("report %d (%s script): TAT %lld, expected %lld", i, old ? "previous" : "this",
				 tat_of(c, key), t);
		assert_true(expiretime_ms(c, key) == tat_expiry_ms(c, key, life));
		/* the demand lives at least its window (3 s) past the last report, whoever wrote it */
		t_d = raw_int(c, "PTTL %s", dkey);
		assert_true(t_d > 2900 && t_d <= 6000);
		assert_true(a.live == (i == 0 ? 1 : 2));
		if (i > 0 && old)
			assert_true(a.share_ppm > 899000 && a.share_ppm < 901000);
		if (!old)
			assert_true(a.share_ppm > 99000 && a.share_ppm < 101000);
	}
	/*
	 * a host gone past the window is deleted by either script, the other
	 * hosts' fields and the mark kept: the live count stays 2
	 */
	for (i = 0; i < 2; i++) {
		freeReplyObject(redisCommand(c, "HSET %s hg %s", dkey, "1000 50.000"));
		gcra_record_batch(i ? &rnew : &rold, i ? &sn : &so, 1, i ? "hn" : "ho", &a);
		assert_int_equal(raw_int(c, "HEXISTS %s hg", dkey), 0);
		rep = redisCommand(c, "HEXISTS %s %s", dkey, " x");
		assert_true(rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1);
		freeReplyObject(rep);
		assert_int_equal(raw_int(c, "HLEN %s", dkey), 3);
		assert_true(a.live == 2);
	}
	/* a TAT the previous script makes from nothing is read by this one */
	freeReplyObject(redisCommand(c, "DEL %s %s", key, dkey));
	gcra_record_batch(&rold, &so, 1, "ho", &a);
	t = tat_of(c, key);
	gcra_record_batch(&rnew, &sn, 1, "hn", &a);
	assert_true(tat_of(c, key) == t + 5000);
	assert_true(expiretime_ms(c, key) == tat_expiry_ms(c, key, life));
	redisFree(c);
	xrl_redis_close(&rold);
	xrl_redis_close(&rnew);
}

/*
 * The demand hash's expiry is renewed when less than a window (3 s here) is
 * left, to two windows, not at every report: two reports in a row set it
 * once; a report with less left renews it.
 */
static void test_demand_expiry_renewed_rarely(void **state)
{
	const char *key = "xrl:{t12:198.18.4.1}", *dkey = "xrl:{t12:198.18.4.1}:d";
	struct xrl_gcra_source src = { .key = key, .n = "1", .demand_key = dkey, .demand = "10",
				       .demand_us = "1000000" };
	struct xrl_gcra_answer a;
	redisContext *c = raw();
	struct xrl_redis r;
	long long ttl, now_ms;

	(void)state;
	connect_client(&r);
	freeReplyObject(redisCommand(c, "CONFIG RESETSTAT"));
	gcra_record_batch(&r, &src, 1, "h", &a);
	ttl = raw_int(c, "PTTL %s", dkey);
	assert_true(ttl > 5900 && ttl <= 6000);
	gcra_record_batch(&r, &src, 1, "h", &a);
	assert_int_equal(cmd_calls(c, "pexpire") + cmd_calls(c, "pexpireat"), 1);
	assert_true(raw_int(c, "PTTL %s", dkey) <= ttl);
	/* 2.5 s left, as if 3.5 s had passed: renewed */
	now_ms = redis_now_us(c) / 1000;
	freeReplyObject(redisCommand(c, "HSET %s %s %lld", dkey, " x", now_ms + 2500));
	freeReplyObject(redisCommand(c, "PEXPIREAT %s %lld", dkey, now_ms + 2500));
	freeReplyObject(redisCommand(c, "CONFIG RESETSTAT"));
	gcra_record_batch(&r, &src, 1, "h", &a);
	assert_int_equal(cmd_calls(c, "pexpireat"), 1);
	ttl = raw_int(c, "PTTL %s", dkey);
	assert_true(ttl > 5900 && ttl <= 6000);
	assert_true(a.live == 1 && a.share_ppm == 1000000);   /* the mark is no host */
	redisFree(c);
	xrl_redis_close(&r);
}

/*
 * The scripts read their ARGV by position; the positions are
 * xrl_script_args.h's. Each script names the count of fixed figures once
 * ("local F = N"), which must be the header's; every literal index is one
 * of the fixed figures, each of them is read, and what follows them is
 * reached through F only (no ARGV[8 + i]).
 */
static void check_layout(const char *src, const char *name, int fixed)
{
	bool read[64] = { false };
	const char *p, *f = strstr(src, "\nlocal F = ");
	int max = 0, i;

	assert_non_null(f);
	if (atoi(f + strlen("\nlocal F = ")) != fixed)
		fail_msg("%s.lua: local F = %d, xrl_script_args.h says %d", name,
			 atoi(f + strlen("\nlocal F = ")), fixed);
	for (p = strstr(src, "ARGV["); p; p = strstr(p + 1, "ARGV[")) {
		char *end;
		long n = strtol(p + 5, &end, 10);

		if (end == p + 5)
			continue;   /* ARGV[F + i], ARGV[a] */
		if (*end != ']' || n < 1 || n > fixed)
			fail_msg("%s.lua reads %.12s: not one of the %d fixed figures of xrl_script_args.h",
				 name, p, fixed);
		read[n] = true;
		max = n > max ? n : max;
	}
	assert_int_equal(max, fixed);
	for (i = 1; i <= fixed; i++)
		if (!read[i])
			fail_msg("%s.lua never reads ARGV[%d]", name, i);
}

static void test_script_layout(void **state)
{
	(void)state;
	check_layout(xrl_script_source[XRL_SCRIPT_GCRA], "gcra", XRL_GCRA_FIXED);
	check_layout(xrl_script_source[XRL_SCRIPT_HOSTS], "hosts", XRL_HOSTS_FIXED);
	check_layout(xrl_script_source[XRL_SCRIPT_WINDOW], "window", XRL_WINDOW_FIXED);
	check_layout(xrl_script_source[XRL_SCRIPT_LOG], "log", XRL_SLOG_FIXED);
	check_layout(xrl_script_source[XRL_SCRIPT_TAKE], "take", XRL_TAKE_FIXED);
}

/* One window call of the sources keys[] adding n[]: its answers (asserted complete). */
static void window_call(struct xrl_redis *r, const char *win_us, const char *const *keys,
			const char *const *n, int cnt, struct xrl_window_answer *ans)
{
	const char *argv[16];
	struct xrl_redis_call c = { 0 };
	char err[256];

	xrl_window_build(&c, argv, win_us, keys, n, cnt);
	assert_int_equal(c.argc, xrl_window_argc(cnt));
	assert_int_equal(xrl_redis_run(r, &c, 1, err, sizeof(err)), 0);
	if (c.reply->type == REDIS_REPLY_ERROR)
		fail_msg("window.lua: %s", c.reply->str);
	assert_int_equal(xrl_window_decode(c.reply, cnt, ans), 0);
	xrl_redis_calls_free(&c, 1);
}

/*
 * --algo windows with --global: two hosts add their admissions to one
 * source's counter of Redis' window (INCRBY, and PEXPIRE when it made the
 * key), each getting the fleet's count back; a second source in the call
 * is apart; the window is Redis' TIME / window, the counter lives two
 * windows and a second; the next window starts at 0 with this one as its
 * previous.
 */
static void test_window_counters(void **state)
{
	const char *keys[2] = { "xrl:{tw:198.18.0.1}", "xrl:{tw:198.18.0.2}" };
	const char *a[2] = { "3", "0" }, *b[2] = { "4", "1" }, *none[1] = { "0" };
	struct xrl_window_answer x[2], y[2], z[1];
	struct xrl_redis r;
	redisContext *c = raw();
	redisReply *rep;
	char key[96];
	long long ttl;
	double t_us;

	(void)state;
	connect_client(&r);
	/* a 2-s window, well inside one: retry at most once if a boundary fell between the calls */
	for (int k = 0; k < 2; k++) {
		window_call(&r, "2000000", keys, a, 2, x);
		window_call(&r, "2000000", keys, b, 2, y);
		if (x[0].idx == y[0].idx)
			break;
	}
	assert_true(x[0].idx == y[0].idx);
	assert_true(x[0].cur == 3 && y[0].cur == 7);   /* host a 3, then host b 4 */
	assert_true(x[1].cur == 0 && y[1].cur == 1);
	assert_true(y[0].pos_us >= 0 && y[0].pos_us < 2000000);
	rep = redisCommand(c, "TIME");
	t_us = atof(rep->element[0]->str) * 1e6 + atof(rep->element[1]->str);
	freeReplyObject(rep);
	assert_true(fabs(y[0].idx - floor(t_us / 2e6)) <= 1);   /* Redis' clock, UTC-aligned */
	snprintf(key, sizeof(key), "%s:w:%.0f", keys[0], y[0].idx);
	rep = redisCommand(c, "PTTL %s", key);
	ttl = rep->integer;
	freeReplyObject(rep);
	assert_true(ttl > 3000 && ttl <= 5000);   /* two windows and a second */
	/* a window of 1 ms: the next call is in another window, with this one as the previous */
	window_call(&r, "1000", keys, b, 1, z);
	usleep(3000);
	window_call(&r, "1000", keys, none, 1, x);
	assert_true(x[0].idx > z[0].idx);
	assert_true(x[0].cur == 0);
	assert_true(x[0].prev == (x[0].idx == z[0].idx + 1 ? 4 : 0));
	redisFree(c);
	xrl_redis_close(&r);
}

/* One log call by host of the sources keys[] adding n[]: its answers (asserted complete). */
static void log_call(struct xrl_redis *r, const char *host, const char *win_us, const char *cap,
		     const char *const *keys, const char *const *n, int cnt,
		     struct xrl_slog_answer *ans)
{
	const char *argv[16], *fixed[XRL_SLOG_FIXED];
	struct xrl_redis_call c = { 0 };
	char err[256];

	fixed[XRL_SLOG_HOST] = host;
	fixed[XRL_SLOG_WIN_US] = win_us;
	fixed[XRL_SLOG_CAP] = cap;
	xrl_slog_build(&c, argv, fixed, keys, n, cnt);
	assert_int_equal(c.argc, xrl_slog_argc(cnt));
	assert_int_equal(xrl_redis_run(r, &c, 1, err, sizeof(err)), 0);
	if (c.reply->type == REDIS_REPLY_ERROR)
		fail_msg("log.lua: %s", c.reply->str);
	assert_int_equal(xrl_slog_decode(c.reply, cnt, ans), 0);
	xrl_redis_calls_free(&c, 1);
}

/* One take.lua call (xrl http's --global sliding algorithms): its answer. */
static void take_call(struct xrl_redis *r, const char *mode, const char *key, const char *win_us,
		      const char *limit, const char *id, struct xrl_take_answer *ans)
{
	const char *argv[XRL_TAKE_ARGC], *fixed[XRL_TAKE_FIXED];
	struct xrl_redis_call c = { 0 };
	char err[256];

	fixed[XRL_TAKE_MODE] = mode;
	fixed[XRL_TAKE_WIN_US] = win_us;
	fixed[XRL_TAKE_LIMIT] = limit;
	fixed[XRL_TAKE_ID] = id;
	xrl_take_build(&c, argv, key, fixed);
	assert_int_equal(xrl_redis_run(r, &c, 1, err, sizeof(err)), 0);
	if (c.reply->type == REDIS_REPLY_ERROR)
		fail_msg("take.lua: %s", c.reply->str);
	assert_int_equal(xrl_take_decode(c.reply, ans), 0);
	xrl_redis_calls_free(&c, 1);
}

/*
 * take.lua decides a request in the daemon's own keys: after a host's
 * round reported 6 admissions of a source (window.lua's counter, log.lua's
 * set), requests of the same key and limit 10 pass 4 times, then are
 * refused, and the refused count nowhere (the daemon then reads 10).
 */
static void test_take_shares_keys(void **state)
{
	const char *six[1] = { "6" }, *none[1] = { "0" };
	struct xrl_window_answer w0, w1;
	struct xrl_slog_answer l1;
	struct xrl_take_answer t;
	struct xrl_redis r;
	char key[64], id[16];
	int k, i, passed;

	(void)state;
	connect_client(&r);
	/* an hour's window: retry with a new key if its boundary fell between the calls */
	for (k = 0; k < 2; k++) {
		const char *keys[1] = { key };

		snprintf(key, sizeof(key), "xrl:{tk:%d:198.18.0.1}", k);
		window_call(&r, "3600000000", keys, six, 1, &w0);
		for (i = 0, passed = 0; i < 6; i++) {
			take_call(&r, "w", key, "3600000000", "10", "", &t);
			passed += t.admitted == 1;
			assert_true(t.admitted == 1 || t.admitted == 0);
		}
		window_call(&r, "3600000000", keys, none, 1, &w1);
		if (w0.idx == w1.idx)
			break;
	}
	assert_int_equal(passed, 4);
	assert_true(w1.cur == 10);
	assert_true(t.admitted == 0 && t.left == 0);
	/* the log: host pkt reported 6; requests of ids http/N pass 4 times */
	snprintf(key, sizeof(key), "xrl:{tk:log:198.18.0.1}");
	{
		const char *keys[1] = { key };

		log_call(&r, "pkt", "60000000", "64", keys, six, 1, &l1);
		for (i = 0, passed = 0; i < 6; i++) {
			snprintf(id, sizeof(id), "http/%d", i);
			take_call(&r, "l", key, "60000000", "10", id, &t);
			passed += t.admitted == 1;
		}
		assert_int_equal(passed, 4);
		assert_true(t.admitted == 0 && t.retry_us > 59000000 && t.retry_us <= 60000000);
		log_call(&r, "other", "60000000", "64", keys, none, 1, &l1);
		assert_true(l1.others == 10);
	}
	xrl_redis_close(&r);
}

static long long raw_int(redisContext *c, const char *fmt, const char *key)
{
	redisReply *rep = redisCommand(c, fmt, key);
	long long v;

	assert_non_null(rep);
	assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
	v = rep->integer;
	freeReplyObject(rep);
	return v;
}

/*
 * --algo sliding-log with --global: each host's round report goes into the
 * source's sorted set BASE:l (member N:T:HOST, score Redis' T), and each
 * host gets back the others' admissions still in the window (never its
 * own), when the oldest of them leaves it and what is left then; a second
 * source in the call is apart; reports a window old no longer count, and
 * the next report removes them;
 * the set is bounded (the oldest go first) and expires a window and a
 * second after its last report.
 */
static void test_log_reports(void **state)
{
	const char *keys[2] = { "xrl:{tl:198.18.0.1}", "xrl:{tl:198.18.0.2}" };
	const char *a[2] = { "3", "0" }, *b[2] = { "4", "1" }, *none[2] = { "0", "0" };
	const char *one[1] = { "1" }, *two[1] = { "2" }, *zero[1] = { "0" };
	const char *k3[1] = { "xrl:{tl:198.18.0.3}" }, *k4[1] = { "xrl:{tl:198.18.0.4}" };
	struct xrl_slog_answer x[2], y[2], z[2];
	struct xrl_redis r;
	redisContext *c = raw();
	redisReply *rep;
	long long ttl;

	(void)state;
	connect_client(&r);
	/* a 10-s window: host a reports 3, host b 4 (and 1 of the second source) */
	log_call(&r, "a", "10000000", "4096", keys, a, 2, x);
	log_call(&r, "b", "10000000", "4096", keys, b, 2, y);
	log_call(&r, "a", "10000000", "4096", keys, none, 2, z);
	assert_true(x[0].others == 0 && x[0].leave_us == 0 && x[0].after == 0);
	assert_true(y[0].others == 3 && y[0].after == 0);   /* a's 3, not b's own 4 */
	assert_true(y[0].leave_us > 9000000 && y[0].leave_us <= 10000000);
	assert_true(y[1].others == 0);
	assert_true(z[0].others == 4 && z[1].others == 1);   /* a sees b's */
	rep = redisCommand(c, "ZRANGE %s:l 0 -1 WITHSCORES", keys[0]);
	assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
	assert_int_equal(rep->elements, 4);   /* one member per report (a read adds none) */
	assert_true(strncmp(rep->element[0]->str, "3:", 2) == 0);
	assert_non_null(strstr(rep->element[0]->str, rep->element[1]->str));   /* N:T:HOST, scored T */
	assert_true(strcmp(rep->element[0]->str + strlen(rep->element[0]->str) - 2, ":a") == 0);
	freeReplyObject(rep);
	ttl = raw_int(c, "PTTL %s:l", keys[0]);
	assert_true(ttl > 10000 && ttl <= 11000);   /* a window and a second */
	assert_int_equal(raw_int(c, "EXISTS %s", keys[0]), 0);   /* only the set, in the source's slot */

	/* a 50-ms window: a's 1, then 20 ms later its 2; b sees 3, then 2 once the first has left */
	log_call(&r, "a", "50000", "4096", k3, one, 1, x);
	usleep(20000);
	log_call(&r, "a", "50000", "4096", k3, two, 1, x);
	log_call(&r, "b", "50000", "4096", k3, zero, 1, y);
	assert_true(y[0].others == 3 && y[0].after == 2);
	assert_true(y[0].leave_us > 0 && y[0].leave_us <= 30000);   /* the first is 20 ms+ old */
	usleep(60000);
	log_call(&r, "b", "50000", "4096", k3, zero, 1, y);
	assert_true(y[0].others == 0 && y[0].leave_us == 0);
	log_call(&r, "b", "50000", "4096", k3, one, 1, y);
	assert_int_equal(raw_int(c, "ZCARD %s:l", k3[0]), 1);   /* a report trims the set to the window */

	/* bounded to 2 members: the oldest of three reports goes */
	log_call(&r, "a", "10000000", "2", k4, one, 1, x);
	log_call(&r, "b", "10000000", "2", k4, two, 1, x);
	log_call(&r, "c", "10000000", "2", k4, two, 1, x);
	assert_int_equal(raw_int(c, "ZCARD %s:l", k4[0]), 2);
	log_call(&r, "d", "10000000", "2", k4, zero, 1, y);
	assert_true(y[0].others == 4);
	redisFree(c);
	xrl_redis_close(&r);
}

/*
 * Every key a script call writes is one xrl_script_keys lists, with the
 * type the script keeps there (what the daemon repairs a WRONGTYPE by):
 * each script run on keys of its own hash tag, the keys Redis then holds
 * under that tag compared with the list. Then a key of the wrong type on
 * each listed kind: the call is refused with WRONGTYPE and TYPE names the
 * key among the listed ones.
 */
static void check_keys_listed(struct xrl_redis *r, const struct xrl_redis_call *c,
			      const char *pattern)
{
	static struct xrl_script_key keys[XRL_SCRIPT_KEYS_MAX];
	redisContext *raw_c = raw();
	redisReply *rep;
	double t_us;
	size_t i;
	int n, j, found = 0;
	char err[256];

	rep = redisCommand(raw_c, "TIME");
	t_us = atof(rep->element[0]->str) * 1e6 + atof(rep->element[1]->str);
	freeReplyObject(rep);
	n = xrl_script_keys(c, (unsigned long long)t_us, keys, XRL_SCRIPT_KEYS_MAX);
	assert_true(n > 0);
	rep = redisCommand(raw_c, "KEYS %s", pattern);
	assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
	assert_true(rep->elements > 0);
	for (i = 0; i < rep->elements; i++) {
		const char *k = rep->element[i]->str;
		char type[1][16];

		for (j = 0; j < n && strcmp(keys[j].name, k); j++)
			;
		if (j == n)
			fail_msg("%s written by %s is not in xrl_script_keys' list", k,
				 xrl_script_name[c->script]);
		assert_int_equal(xrl_redis_types(r, &k, 1, type, err, sizeof(err)), 0);
		if (strcmp(type[0], keys[j].type))
			fail_msg("%s is a %s, listed as a %s", k, type[0], keys[j].type);
		found++;
	}
	freeReplyObject(rep);
	redisFree(raw_c);
	assert_true(found > 0);
}

static void test_script_keys(void **state)
{
	const struct xrl_gcra_source src[2] = {
		{ .key = "xrl:{tk1:198.18.0.1}", .n = "5", .demand_key = "xrl:{tk1:198.18.0.1}:d",
		  .demand = "50", .demand_us = "1000000" },
		{ .key = "xrl:{tk1:198.18.0.2}", .n = "1" },
	};
	const char *hfixed[XRL_HOSTS_FIXED] = {
		[XRL_HOSTS_HOST] = "a", [XRL_HOSTS_RATE] = "9",
		[XRL_HOSTS_WINDOW_US] = "1000000", [XRL_HOSTS_TTL_MS] = "60000",
	};
	const char *wkeys[1] = { "xrl:{tk3:198.18.0.3}" }, *lkeys[1] = { "xrl:{tk4:198.18.0.4}" };
	const char *wn[1] = { "2" };
	const char *lfixed[XRL_SLOG_FIXED] = {
		[XRL_SLOG_HOST] = "a", [XRL_SLOG_WIN_US] = "10000000", [XRL_SLOG_CAP] = "4096",
	};
	const char *fixed[XRL_GCRA_FIXED], *argv[4][ARGV_SLOTS];
	const char *patterns[4] = { "xrl:{tk1:*", "xrl:{tk2}*", "xrl:{tk3:*", "xrl:{tk4:*" };
	struct xrl_redis_call c[4] = { 0 };
	struct xrl_redis r;
	redisContext *raw_c = raw();
	char err[256], nd[16];
	int i;

	(void)state;
	gcra_fixed(fixed, "0", "a", "1000000", "3000000", "10000", "100000", "0");
	xrl_gcra_build(&c[0], argv[0], fixed, src, 2, nd);
	xrl_hosts_build(&c[1], argv[1], "xrl:{tk2}:hosts", hfixed);
	xrl_window_build(&c[2], argv[2], "10000000", wkeys, wn, 1);
	xrl_slog_build(&c[3], argv[3], lfixed, lkeys, wn, 1);
	connect_client(&r);
	assert_int_equal(xrl_redis_run(&r, c, 4, err, sizeof(err)), 0);
	for (i = 0; i < 4; i++) {
		if (c[i].reply->type == REDIS_REPLY_ERROR)
			fail_msg("%s: %s", xrl_script_name[c[i].script], c[i].reply->str);
		check_keys_listed(&r, &c[i], patterns[i]);
	}
	xrl_redis_calls_free(c, 4);

	/* a key of the wrong type on each kind: refused, and found by TYPE among the listed */
	{
		static const char *const planted[4] = {
			"xrl:{tk1:198.18.0.1}:d", "xrl:{tk2}:hosts", NULL, "xrl:{tk4:198.18.0.4}:l",
		};

		for (i = 0; i < 4; i++) {
			static struct xrl_script_key keys[XRL_SCRIPT_KEYS_MAX];
			static char types[XRL_SCRIPT_KEYS_MAX][16];
			const char *names[XRL_SCRIPT_KEYS_MAX];
			char wkey[128];
			const char *k = planted[i];
			redisReply *rep;
			int n, j, wrong = 0;

			if (!k) {   /* the window's counter of the current window */
				rep = redisCommand(raw_c, "TIME");
				snprintf(wkey, sizeof(wkey), "%s:w:%lld", wkeys[0],
					 atoll(rep->element[0]->str) / 10);
				freeReplyObject(rep);
				k = wkey;
			}
			freeReplyObject(redisCommand(raw_c, "DEL %s", k));
			freeReplyObject(redisCommand(raw_c, i == 2 ? "HSET %s x 1" : "SET %s x", k));
			assert_int_equal(xrl_redis_run(&r, &c[i], 1, err, sizeof(err)), 0);
			assert_int_equal(c[i].reply->type, REDIS_REPLY_ERROR);
			assert_true(!strncmp(c[i].reply->str, "WRONGTYPE", 9));
			rep = redisCommand(raw_c, "TIME");
			n = xrl_script_keys(&c[i], strtoull(rep->element[0]->str, NULL, 10) * 1000000ull,
					    keys, XRL_SCRIPT_KEYS_MAX);
			freeReplyObject(rep);
			for (j = 0; j < n; j++)
				names[j] = keys[j].name;
			assert_int_equal(xrl_redis_types(&r, names, n, types, err, sizeof(err)), 0);
			for (j = 0; j < n; j++)
				if (strcmp(types[j], "none") && strcmp(types[j], keys[j].type)) {
					assert_string_equal(keys[j].name, k);
					wrong++;
				}
			assert_int_equal(wrong, 1);
			xrl_redis_calls_free(&c[i], 1);
			freeReplyObject(redisCommand(raw_c, "DEL %s", k));
		}
	}
	redisFree(raw_c);
	xrl_redis_close(&r);
}

/* A call of another size than its layout's is refused by the script, not misread. */
static void test_wrong_argc_refused(void **state)
{
	const struct xrl_gcra_source src = {
		.key = "xrl:{t8:198.18.0.8}", .n = "1", .demand_key = "xrl:{t8:198.18.0.8}:d",
		.demand = "10", .demand_us = "1000000",
	};
	const char *hf[XRL_HOSTS_FIXED] = { "a", "1", "1000000", "60000" };
	const char *fixed[XRL_GCRA_FIXED], *argv[2][ARGV_SLOTS];
	struct xrl_redis_call c[2] = { 0 };
	struct xrl_redis r;
	char err[256], nd[16];

	(void)state;
	gcra_fixed(fixed, "0", "a", "1000000", "3000000", "1000", "50000", "0");
	xrl_gcra_build(&c[0], argv[0], fixed, &src, 1, nd);
	assert_int_equal(c[0].argc, xrl_gcra_argc(1, 1));
	argv[0][c[0].argc++] = "7";   /* one figure more than the layout has */
	xrl_hosts_build(&c[1], argv[1], "xrl:{t8}:hosts", hf);
	argv[1][c[1].argc++] = "7";
	connect_client(&r);
	assert_int_equal(xrl_redis_run(&r, c, 2, err, sizeof(err)), 0);
	assert_int_equal(c[0].reply->type, REDIS_REPLY_ERROR);
	assert_non_null(strstr(c[0].reply->str, "xrl gcra: 12 arguments"));
	assert_int_equal(c[1].reply->type, REDIS_REPLY_ERROR);
	assert_non_null(strstr(c[1].reply->str, "xrl hosts: 5 arguments"));
	xrl_redis_calls_free(c, 2);
	xrl_redis_close(&r);
}

/* A server that stops answering (SIGSTOP) costs one timeout, not a hang. */
static void test_timeout_when_stopped(void **state)
{
	struct xrl_redis r;
	const struct xrl_gcra_source src = { .key = "xrl:{t5:198.18.0.5}", .n = "1" };
	const char *fixed[XRL_GCRA_FIXED], *argv[ARGV_SLOTS];
	struct xrl_redis_call c = { 0 };
	char err[256], nd[16];
	__u64 t0, took;
	int rc;

	(void)state;
	gcra_fixed(fixed, "0", "", "0", "3000000", "1000", "50000", "0");
	xrl_gcra_build(&c, argv, fixed, &src, 1, nd);
	connect_client(&r);
	r.timeout.tv_sec = 0;
	r.timeout.tv_usec = 50000;
	assert_int_equal(xrl_redis_connect(&r, err, sizeof(err)), 0);
	kill(server, SIGSTOP);
	t0 = xrl_mono_ns();
	rc = xrl_redis_run(&r, &c, 1, err, sizeof(err));
	took = xrl_mono_ns() - t0;
	kill(server, SIGCONT);
	assert_int_equal(rc, -EIO);
	assert_null(r.c);   /* the broken connection is closed */
	assert_true(took >= 40000000ull && took < 500000000ull);
	/* and a new one works once the server is back */
	assert_int_equal(xrl_redis_connect(&r, err, sizeof(err)), 0);
	assert_int_equal(xrl_redis_run(&r, &c, 1, err, sizeof(err)), 0);
	xrl_redis_calls_free(&c, 1);
	xrl_redis_close(&r);
}

/* The rule's name in Redis depends on its words only, the key on the source's /per. */
static void test_names(void **state)
{
	struct xrl_rule_def a = { .in_use = 1, .family = 4, .plen = 16, .addr = { 198, 18 },
				  .rate = 100, .rate_period = 1, .burst = 20, .per_len = 32,
				  .flags = XRL_F_GLOBAL };
	struct xrl_rule_def b = a;
	struct xrl_bucket_key k = { .rule_id = 3, .family = 4 };
	char na[17], nb[17], key[96];

	(void)state;
	/* only the rule's words count: not its id-local version or slot state */
	b.version = 99;
	b.in_use = 7;
	xrl_fleet_rule_name(&a, na);
	xrl_fleet_rule_name(&b, nb);
	assert_string_equal(na, nb);
	b = a;
	b.burst = 21;
	xrl_fleet_rule_name(&b, nb);
	assert_string_not_equal(na, nb);
	k.addr[0] = htonl(0xc6120005);
	xrl_fleet_source_key("0123456789abcdef", &k, 32, key, sizeof(key));
	assert_string_equal(key, "xrl:{0123456789abcdef:198.18.0.5}");
	k.addr[0] = htonl(0xc6120000);
	xrl_fleet_source_key("0123456789abcdef", &k, 24, key, sizeof(key));
	assert_string_equal(key, "xrl:{0123456789abcdef:198.18.0.0/24}");
}

/*
 * The figures Redis takes for a global rule (interval and span in µs) are
 * the data path's own (xrl_gcra_compile's integers), to the picosecond:
 * every host and Redis decide on one rate.
 */
static void test_rule_figures_data_path(void **state)
{
	static struct xrl_fleet f;
	struct xrl_rule_def d = { .in_use = 1, .family = 4, .plen = 16, .addr = { 198, 18 },
				  .rate = 3, .rate_period = 1, .burst = 7, .per_len = 32,
				  .action = XRL_ACT_LIMIT, .flags = XRL_F_GLOBAL };
	struct xrl_gcra g;
	char err[XRL_ERRLEN], want[32];
	__u32 id = 5;
	unsigned long long ns;

	(void)state;
	memset(&f, 0, sizeof(f));
	pthread_mutex_init(&f.lock, NULL);
	assert_int_equal(xrl_gcra_compile(3, 1000000000ull, 7, &g, err, sizeof(err)), 0);
	assert_true(g.shift >= 0);
	xrl_fleet_set_rules(&f, &d, &id, 1);
	assert_true(f.rules[5].global);
	ns = (unsigned long long)g.interval << g.shift;   /* 333333248 ns, not 333333333.3 */
	snprintf(want, sizeof(want), "%llu.%03llu000", ns / 1000, ns % 1000);
	assert_string_equal(f.rules[5].interval_us, want);
	assert_true(fabs(f.rules[5].interval_ns - (double)ns) < 1e-3);
	ns = (unsigned long long)g.span << g.shift;
	snprintf(want, sizeof(want), "%llu.%03llu000", ns / 1000, ns % 1000);
	assert_string_equal(f.rules[5].span_us, want);
	/* a unit below a nanosecond: 10^9 per second is a token every 1.000 ns */
	d.rate = 1000000000;
	d.burst = 1000;
	d.version = 1;
	xrl_fleet_set_rules(&f, &d, &id, 1);
	assert_string_equal(f.rules[5].interval_us, "0.001000");
	assert_string_equal(f.rules[5].span_us, "1.000000");
	pthread_mutex_destroy(&f.lock);
}

/* The password never shows: not in URL errors, not in a log line. */
static void test_password_masked(void **state)
{
	static const char *const bad[] = {
		"redis://:hunter2@host:99999", "redis://hunter2@host", "redis://:hunter2@[::1",
		"redis://:hunter2@host:6379/x", "redis://:hunter2@",
	};
	struct xrl_redis_url u;
	char err[512], line[512], path[] = "/tmp/xrl-log-test.XXXXXX";
	size_t i;
	FILE *f;
	int fd, saved;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(xrl_redis_parse_url(bad[i], &u, err, sizeof(err)), -EINVAL);
		assert_null(strstr(err, "hunter2"));
		assert_non_null(strstr(err, "***"));
	}
	assert_int_equal(xrl_redis_parse_url("redis://:hunter2@host", &u, err, sizeof(err)), 0);
	xrl_redis_url_name(&u, line, sizeof(line));
	assert_null(strstr(line, "hunter2"));

	fd = mkstemp(path);
	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	xrl_log_init("text", "t");
	xrl_log_secret("hunter2");
	xrl_log(XRL_LOG_ERR, "AUTH hunter2 refused (hunter2)");
	xrl_log_init("json", "t");
	xrl_log(XRL_LOG_ERR, "json hunter2");
	xrl_log_secret("a\"b\\c");   /* as JSON writes it: a\"b\\c */
	xrl_log(XRL_LOG_ERR, "pw a\"b\\c");
	xrl_log_secret(NULL);
	xrl_log_init("text", "t");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fdopen(fd, "r");
	assert_non_null(f);
	rewind(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_null(strstr(line, "hunter2"));
	assert_non_null(strstr(line, "AUTH *** refused (***)"));
	assert_non_null(fgets(line, sizeof(line), f));
	assert_null(strstr(line, "hunter2"));
	assert_non_null(strstr(line, "\"msg\":\"json ***\""));
	assert_non_null(fgets(line, sizeof(line), f));
	assert_non_null(strstr(line, "\"msg\":\"pw ***\""));
	fclose(f);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_url),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_rule_figures_data_path),
		cmocka_unit_test(test_password_masked),
		cmocka_unit_test(test_gcra_record),
		cmocka_unit_test(test_gcra_take_whole_burst),
		cmocka_unit_test(test_gcra_expiry_slots),
		cmocka_unit_test(test_concurrent_budget),
		cmocka_unit_test(test_noscript_reload),
		cmocka_unit_test(test_hosts),
		cmocka_unit_test(test_batch_demand_share),
		cmocka_unit_test(test_since_per_source),
		cmocka_unit_test(test_gcra_ahead_same),
		cmocka_unit_test(test_gcra_ahead_one_write),
		cmocka_unit_test(test_gcra_rolling_upgrade),
		cmocka_unit_test(test_demand_expiry_renewed_rarely),
		cmocka_unit_test(test_script_layout),
		cmocka_unit_test(test_window_counters),
		cmocka_unit_test(test_log_reports),
		cmocka_unit_test(test_take_shares_keys),
		cmocka_unit_test(test_script_keys),
		cmocka_unit_test(test_wrong_argc_refused),
		cmocka_unit_test(test_timeout_when_stopped),
	};

	return cmocka_run_group_tests(tests, start_server, stop_server);
}
