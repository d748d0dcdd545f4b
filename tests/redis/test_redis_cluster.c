// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The daemon's Redis connection on a real Redis Cluster (six redis-server
 * --cluster-enabled yes on loopback, 3 masters with a replica each,
 * started and removed by tests/redis/cluster.sh): the map from a seed
 * list whose first seed is dead, each call on the master of its keys'
 * slot and the shards spread over the masters, a slot moved under the
 * client (MOVED followed, the map asked for again), a slot half migrated
 * (ASK followed), and a master killed (the call fails, the next connection
 * follows the promoted replica).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "xrl_cluster.h"
#include "xrl_fleet_keys.h"
#include "xrl_redis.h"
#include "xrl_script_args.h"

static char dir[] = "/tmp/xrl-cluster-test.XXXXXX";
static int ports[6];
static bool started;

static int stop_cluster(void **state);

static int start_cluster(void **state)
{
	char cmd[512];
	FILE *p;
	int n;

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	/* node timeout 1 s: a replica is promoted ~2 s after its master dies */
	snprintf(cmd, sizeof(cmd), "bash %s/tests/redis/cluster.sh start %s 1000", XRL_SRC_DIR, dir);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	started = true;
	n = fscanf(p, "%d %d %d %d %d %d", &ports[0], &ports[1], &ports[2], &ports[3], &ports[4],
		   &ports[5]);
	if (pclose(p) != 0 || n != 6) {
		fprintf(stderr, "the test cluster did not start (tests/redis/cluster.sh start)\n");
		stop_cluster(state);   /* no teardown after a failed setup */
		return -1;
	}
	return 0;
}

static int stop_cluster(void **state)
{
	char cmd[512];

	(void)state;
	if (started) {
		snprintf(cmd, sizeof(cmd), "bash %s/tests/redis/cluster.sh stop %s", XRL_SRC_DIR, dir);
		if (system(cmd))
			fprintf(stderr, "cluster.sh stop failed\n");
	}
	return 0;
}

static redisContext *raw(int port)
{
	struct timeval tv = { 2, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);

	assert_non_null(c);
	assert_int_equal(c->err, 0);
	redisSetTimeout(c, tv);
	return c;
}

static long long raw_int(int port, const char *fmt, ...)
{
	redisContext *c = raw(port);
	redisReply *rep;
	long long v;
	va_list ap;

	va_start(ap, fmt);
	rep = redisvCommand(c, fmt, ap);
	va_end(ap);
	assert_non_null(rep);
	v = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
	freeReplyObject(rep);
	redisFree(c);
	return v;
}

/* A status command on a node, asserted OK. */
static void raw_ok(int port, const char *fmt, ...)
{
	redisContext *c = raw(port);
	redisReply *rep;
	va_list ap;

	va_start(ap, fmt);
	rep = redisvCommand(c, fmt, ap);
	va_end(ap);
	assert_non_null(rep);
	if (rep->type == REDIS_REPLY_ERROR)
		fail_msg("port %d: %s", port, rep->str);
	freeReplyObject(rep);
	redisFree(c);
}

/* The node id of the node on port. */
static void node_id(int port, char id[41])
{
	redisContext *c = raw(port);
	redisReply *rep = redisCommand(c, "CLUSTER MYID");

	assert_non_null(rep);
	assert_int_equal(rep->type, REDIS_REPLY_STRING);
	snprintf(id, 41, "%s", rep->str);
	freeReplyObject(rep);
	redisFree(c);
}

static void connect_cluster(struct xrl_redis *r, int first_seed_port)
{
	char url[256], err[256];

	memset(r, 0, sizeof(*r));
	/* the first seed: nothing listens there (the cluster's first port - 1 is none of ours, or is dead) */
	snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d,127.0.0.1:%d", first_seed_port,
		 ports[1]);
	assert_int_equal(xrl_redis_parse_url(url, &r->url, err, sizeof(err)), 0);
	r->timeout.tv_sec = 2;
	if (xrl_redis_connect(r, err, sizeof(err)))
		fail_msg("connect: %s", err);
}

/* Recorded admissions (gcra.lua, mode 0) for the given keys, in one call; the reply's type. */
static int record(struct xrl_redis *r, const char *const *keys, int n, char *err, size_t errlen)
{
	const char *fixed[XRL_GCRA_FIXED] = {
		[XRL_GCRA_MODE] = "0", [XRL_GCRA_HOST] = "t", [XRL_GCRA_WINDOW_US] = "0",
		[XRL_GCRA_LIFE_US] = "3000000", [XRL_GCRA_INTERVAL_US] = "1000",
		[XRL_GCRA_SPAN_US] = "10000", [XRL_GCRA_SINCE_US] = "0",
	};
	struct xrl_gcra_source src[8] = { 0 };
	const char *argv[64];
	struct xrl_redis_call c = { 0 };
	char nd[16];
	int i, rc;

	for (i = 0; i < n; i++) {
		src[i].key = keys[i];
		src[i].n = "5";
	}
	xrl_gcra_build(&c, argv, fixed, src, n, nd);
	rc = xrl_redis_run(r, &c, 1, err, errlen);
	if (!rc && !c.reply) {
		snprintf(err, errlen, "failed alone: %.200s", r->lost_why);
		rc = -EIO;
	} else if (!rc && c.reply->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "%s", c.reply->str);
		rc = -EPROTO;
	}
	xrl_redis_calls_free(&c, 1);
	return rc;
}

/* The port of the master serving slot s (CLUSTER SHARDS through the client's map). */
static int owner(struct xrl_redis *r, unsigned s)
{
	assert_true(r->map->slot[s] >= 0);
	return r->map->node[r->map->slot[s]].port;
}

static void source_key(unsigned shard, int i, char *buf, size_t len)
{
	struct xrl_bucket_key k = { .family = 4, .addr = { htonl(0xc6120000u + (unsigned)i) } };

	xrl_fleet_source_key_tagged(xrl_cluster_shard_tag(shard), "7be2f9be963b2b8c", &k, 32, buf,
				    len);
}

static void test_map_and_routing(void **state)
{
	struct xrl_redis r;
	char key[96], err[256], text[512];
	unsigned s, per[XRL_CLUSTER_NODES] = { 0 };
	int masters, i, n;

	(void)state;
	connect_cluster(&r, ports[0] - 1);
	assert_int_equal(xrl_cluster_map_covered(r.map, &masters), 16384);
	assert_int_equal(masters, 3);
	xrl_redis_nodes_text(&r, text, sizeof(text));
	assert_non_null(strstr(text, "slots)"));
	/* one call per shard, two sources of it per call: each on its master, none refused */
	for (s = 0; s < XRL_CLUSTER_SHARDS; s++) {
		char k2[96];
		const char *keys[2] = { key, k2 };

		source_key(s, 1, key, sizeof(key));
		source_key(s, 2, k2, sizeof(k2));
		if (record(&r, keys, 2, err, sizeof(err)))
			fail_msg("shard %u: %s", s, err);
		n = owner(&r, xrl_cluster_keyslot(key, strlen(key)));
		assert_int_equal(raw_int(n, "EXISTS %s", key), 1);
		assert_int_equal(raw_int(n, "EXISTS %s", k2), 1);
		per[r.map->slot[xrl_cluster_keyslot(key, strlen(key))]]++;
	}
	/* the shards spread evenly: 21 or 22 of the 64 on each master */
	for (i = n = 0; i < r.map->nnodes; i++) {
		if (!r.map->master[i])
			continue;
		assert_true(per[i] == 21 || per[i] == 22);
		assert_true(r.node[i].keys >= 2 * per[i]);
		n++;
	}
	assert_int_equal(n, 3);
	assert_int_equal(r.moved + r.asked, 0);
	xrl_redis_close(&r);
}

/* Moves slot s from master `from` to master `to` with its keys (as redis-cli --cluster reshard does). */
static void migrate_slot(unsigned s, int from, int to, bool finish)
{
	char from_id[41], to_id[41];
	redisContext *c;
	redisReply *rep;
	size_t i;

	node_id(from, from_id);
	node_id(to, to_id);
	raw_ok(to, "CLUSTER SETSLOT %u IMPORTING %s", s, from_id);
	raw_ok(from, "CLUSTER SETSLOT %u MIGRATING %s", s, to_id);
	c = raw(from);
	rep = redisCommand(c, "CLUSTER GETKEYSINSLOT %u 100", s);
	assert_non_null(rep);
	for (i = 0; i < rep->elements; i++) {
		redisReply *m = redisCommand(c, "MIGRATE 127.0.0.1 %d %s 0 2000", to,
					     rep->element[i]->str);

		assert_non_null(m);
		if (m->type == REDIS_REPLY_ERROR)
			fail_msg("MIGRATE: %s", m->str);
		freeReplyObject(m);
	}
	freeReplyObject(rep);
	redisFree(c);
	if (!finish)
		return;
	for (i = 0; i < 6; i++) {
		/* every master learns the new owner (the replicas from them) */
		c = raw(ports[i]);
		rep = redisCommand(c, "ROLE");
		if (rep && rep->type == REDIS_REPLY_ARRAY && !strcmp(rep->element[0]->str, "master")) {
			redisReply *x = redisCommand(c, "CLUSTER SETSLOT %u NODE %s", s, to_id);

			freeReplyObject(x);
		}
		freeReplyObject(rep);
		redisFree(c);
	}
}

static void test_moved_and_ask(void **state)
{
	struct xrl_redis r;
	char key[96], key2[96], err[256];
	const char *keys[1] = { key };
	unsigned s, s2;
	int from, to, i;

	(void)state;
	connect_cluster(&r, ports[0] - 1);
	source_key(7, 100, key, sizeof(key));
	assert_int_equal(record(&r, keys, 1, err, sizeof(err)), 0);
	s = xrl_cluster_keyslot(key, strlen(key));
	from = owner(&r, s);
	for (i = 0, to = from; to == from; i++)
		to = r.map->node[r.map->slot[(s + 5461 * (i + 1)) % 16384]].port;

	/* MOVED: the slot moved, the client's map does not know */
	migrate_slot(s, from, to, true);
	assert_int_equal(owner(&r, s), from);
	if (record(&r, keys, 1, err, sizeof(err)))
		fail_msg("after the slot moved: %s", err);
	assert_true(r.moved >= 1);
	assert_int_equal(owner(&r, s), to);   /* the map was asked for again */
	assert_int_equal(raw_int(to, "EXISTS %s", key), 1);

	/* ASK: another slot half migrated, its key already on the importing master */
	source_key(40, 100, key2, sizeof(key2));
	keys[0] = key2;
	assert_int_equal(record(&r, keys, 1, err, sizeof(err)), 0);
	s2 = xrl_cluster_keyslot(key2, strlen(key2));
	from = owner(&r, s2);
	for (i = 0, to = from; to == from; i++)
		to = r.map->node[r.map->slot[(s2 + 5461 * (i + 1)) % 16384]].port;
	migrate_slot(s2, from, to, false);
	if (record(&r, keys, 1, err, sizeof(err)))
		fail_msg("with the slot migrating: %s", err);
	assert_true(r.asked >= 1);
	assert_int_equal(owner(&r, s2), from);   /* ASK changes no map */
	migrate_slot(s2, from, to, true);
	/* the call went to the importing master (the migrating one has no such key to write) */
	assert_int_equal(raw_int(to, "EXISTS %s", key2), 1);
	xrl_redis_close(&r);
}

/* A master killed: the round's call fails (no hang); once its replica is promoted, a new connection maps it. */
static void test_master_killed(void **state)
{
	struct xrl_redis r;
	char key[96], err[256], path[600];
	const char *keys[1] = { key };
	struct timespec t0, t1;
	int victim, i, rc, pid;
	FILE *f;

	(void)state;
	connect_cluster(&r, ports[0] - 1);
	source_key(20, 7, key, sizeof(key));
	assert_int_equal(record(&r, keys, 1, err, sizeof(err)), 0);
	victim = owner(&r, xrl_cluster_keyslot(key, strlen(key)));
	/* its pid: cluster.sh wrote them in the order of ports */
	snprintf(path, sizeof(path), "%s/pids", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	for (i = 0; i < 6; i++) {
		assert_int_equal(fscanf(f, "%d", &pid), 1);
		if (ports[i] == victim)
			break;
	}
	fclose(f);
	assert_true(i < 6);
	kill(pid, SIGKILL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* that master's call fails alone: the connection to the others stays */
	assert_int_not_equal(record(&r, keys, 1, err, sizeof(err)), 0);
	assert_non_null(r.c);
	for (i = 0; i < XRL_CLUSTER_SHARDS; i++) {
		char k2[96];
		const char *other[1] = { k2 };
		unsigned s2;

		source_key((unsigned)i, 9, k2, sizeof(k2));
		s2 = xrl_cluster_keyslot(k2, strlen(k2));
		if (r.map->slot[s2] < 0 || owner(&r, s2) == victim)
			continue;
		if (record(&r, other, 1, err, sizeof(err)))
			fail_msg("shard %d on a live master, with another master dead: %s", i, err);
	}
	rc = -1;
	/* reconnects until the replica serves the slot: within 15 s (node timeout 1 s) */
	for (i = 0; i < 150 && rc; i++) {
		usleep(100000);
		if (xrl_redis_connect(&r, err, sizeof(err)))
			continue;
		rc = record(&r, keys, 1, err, sizeof(err));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc)
		fail_msg("no master for the slot after 15 s: %s", err);
	assert_int_not_equal(owner(&r, xrl_cluster_keyslot(key, strlen(key))), victim);
	printf("        failover followed after %.1f s\n",
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	xrl_redis_close(&r);
}

static void test_parse_cluster_url(void **state)
{
	struct xrl_redis_url u;
	char err[256], name[300];

	(void)state;
	assert_int_equal(xrl_redis_parse_url("redis-cluster://:pw@10.0.0.1:7000,10.0.0.2,[::1]:7002",
					     &u, err, sizeof(err)), 0);
	assert_true(u.cluster);
	assert_int_equal(u.nseeds, 3);
	assert_string_equal(u.password, "pw");
	assert_string_equal(u.seed[1].host, "10.0.0.2");
	assert_int_equal(u.seed[1].port, 6379);
	assert_string_equal(u.seed[2].host, "::1");
	assert_int_equal(u.seed[2].port, 7002);
	xrl_redis_url_name(&u, name, sizeof(name));
	assert_string_equal(name, "cluster 10.0.0.1:7000,10.0.0.2:6379,[::1]:7002");
	assert_null(strstr(name, "pw"));
	assert_int_equal(xrl_redis_parse_url("redis-cluster://h:1/2", &u, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "database 0"));
	assert_int_equal(xrl_redis_parse_url("redis-cluster://h:1,,h:2", &u, err, sizeof(err)), -EINVAL);
	assert_int_equal(xrl_redis_parse_url("redis-cluster://:s3cret@h:99999", &u, err, sizeof(err)), -EINVAL);
	assert_null(strstr(err, "s3cret"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_cluster_url),
		cmocka_unit_test(test_map_and_routing),
		cmocka_unit_test(test_moved_and_ask),
		cmocka_unit_test(test_master_killed),
	};

	return cmocka_run_group_tests(tests, start_cluster, stop_cluster);
}
