// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Redis Cluster routing without a connection (user/daemon/xrl_cluster.c):
 * the CRC16 and key slots of the Redis cluster specification, the slot
 * map from CLUSTER SHARDS and CLUSTER SLOTS replies (real RESP bytes,
 * parsed by hiredis' own reader), redirects, and the fleet's shard tags.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "xrl_cluster.h"

/* The reply hiredis makes of RESP text. */
static redisReply *resp(const char *text)
{
	redisReader *r = redisReaderCreate();
	void *rep = NULL;

	assert_non_null(r);
	assert_int_equal(redisReaderFeed(r, text, strlen(text)), REDIS_OK);
	assert_int_equal(redisReaderGetReply(r, &rep), REDIS_OK);
	assert_non_null(rep);
	redisReaderFree(r);
	return rep;
}

static unsigned slot(const char *k)
{
	return xrl_cluster_keyslot(k, strlen(k));
}

/* The specification's CRC16 (XMODEM) vector, and key slots redis-cli's CLUSTER KEYSLOT gives. */
static void test_crc16_and_slots(void **state)
{
	(void)state;
	assert_int_equal(xrl_cluster_crc16("123456789", 9), 0x31C3);
	assert_int_equal(xrl_cluster_crc16("", 0), 0);
	assert_int_equal(slot("123456789"), 0x31C3 & 16383);
	assert_int_equal(slot("foo"), 12182);
	assert_int_equal(slot("bar"), 5061);
	assert_int_equal(slot("hello"), 866);
	/* hash tags, the specification's examples */
	assert_int_equal(slot("{user1000}.following"), slot("user1000"));
	assert_int_equal(slot("{user1000}.followers"), slot("user1000"));
	assert_int_equal(slot("foo{}{bar}"), xrl_cluster_crc16("foo{}{bar}", 10) & 16383);
	assert_int_not_equal(slot("foo{}{bar}"), slot("bar"));
	assert_int_equal(slot("foo{{bar}}zap"), slot("{bar"));
	assert_int_equal(slot("foo{bar}{zap}"), slot("bar"));
	assert_int_equal(slot("foo{bar"), xrl_cluster_crc16("foo{bar", 7) & 16383);
	/* the fleet's keys: a source's keys share its tag */
	assert_int_equal(slot("xrl:{s3.7}:7be2f9be963b2b8c:198.18.0.7"),
			 slot("xrl:{s3.7}:7be2f9be963b2b8c:198.18.0.7:d"));
}

/* A 3-master CLUSTER SLOTS reply (as Redis 7 sends it, replicas included). */
static const char slots_reply[] =
	"*3\r\n"
	"*4\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:30001\r\n$4\r\naaaa\r\n"
	"*3\r\n$9\r\n127.0.0.1\r\n:30005\r\n$4\r\nbbbb\r\n"
	"*3\r\n:5461\r\n:10922\r\n*3\r\n$9\r\n127.0.0.1\r\n:30002\r\n$4\r\ncccc\r\n"
	"*4\r\n:10923\r\n:16383\r\n*3\r\n$0\r\n\r\n:30003\r\n$4\r\ndddd\r\n"
	"*3\r\n$9\r\n127.0.0.1\r\n:30004\r\n$4\r\neeee\r\n";

static void test_map_slots(void **state)
{
	static struct xrl_cluster_map m;
	redisReply *r = resp(slots_reply), *bad;
	char err[128];
	int masters;

	(void)state;
	xrl_cluster_map_init(&m);
	assert_int_equal(xrl_cluster_map_slots(&m, r, "10.0.0.9", err, sizeof(err)), 0);
	assert_int_equal(xrl_cluster_map_covered(&m, &masters), 16384);
	assert_int_equal(masters, 3);
	assert_int_equal(m.node[m.slot[0]].port, 30001);
	assert_int_equal(m.node[m.slot[5460]].port, 30001);
	assert_int_equal(m.node[m.slot[5461]].port, 30002);
	assert_int_equal(m.node[m.slot[16383]].port, 30003);
	/* an empty host is the asked node's */
	assert_string_equal(m.node[m.slot[16383]].host, "10.0.0.9");
	assert_string_equal(m.node[m.slot[0]].host, "127.0.0.1");
	freeReplyObject(r);
	/* a bad reply changes nothing */
	bad = resp("*1\r\n*3\r\n:0\r\n:99999\r\n*2\r\n$1\r\nx\r\n:1\r\n");
	assert_int_equal(xrl_cluster_map_slots(&m, bad, "h", err, sizeof(err)), -1);
	assert_int_equal(m.node[m.slot[0]].port, 30001);
	freeReplyObject(bad);
	bad = resp("-ERR This instance has cluster support disabled\r\n");
	assert_int_equal(xrl_cluster_map_slots(&m, bad, "h", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cluster support disabled"));
	freeReplyObject(bad);
}

/* One shard of CLUSTER SHARDS: slots, a master (role, health) and a replica. */
#define NODE(port, role, health)                                                       \
	"*12\r\n$2\r\nid\r\n$4\r\nabcd\r\n$4\r\nport\r\n:" port "\r\n$2\r\nip\r\n"        \
	"$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n"           \
	"$" role "\r\n$6\r\nhealth\r\n$" health "\r\n"
#define MASTER "6\r\nmaster"
#define REPLICA "7\r\nreplica"
#define ONLINE "6\r\nonline"
#define FAILED "4\r\nfail"

static void test_map_shards(void **state)
{
	static struct xrl_cluster_map m;
	/* shard 1: slots 0-100 and 200-300, master 30001; shard 2: 101-199, its master failed */
	redisReply *r = resp("*2\r\n"
			     "*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:100\r\n:200\r\n:300\r\n$5\r\nnodes\r\n*2\r\n"
			     NODE("30001", MASTER, ONLINE) NODE("30004", REPLICA, ONLINE)
			     "*4\r\n$5\r\nslots\r\n*2\r\n:101\r\n:199\r\n$5\r\nnodes\r\n*2\r\n"
			     NODE("30002", MASTER, FAILED) NODE("30005", REPLICA, ONLINE));
	char err[128];
	int masters;

	(void)state;
	xrl_cluster_map_init(&m);
	assert_int_equal(xrl_cluster_map_shards(&m, r, "h", err, sizeof(err)), 0);
	assert_int_equal(xrl_cluster_map_covered(&m, &masters), 202);
	assert_int_equal(masters, 1);
	assert_int_equal(m.node[m.slot[0]].port, 30001);
	assert_int_equal(m.node[m.slot[300]].port, 30001);
	assert_int_equal(m.slot[150], -1);
	assert_int_equal(m.slot[301], -1);
	freeReplyObject(r);
}

static void test_redirect(void **state)
{
	struct xrl_cluster_addr a;
	unsigned s = 0;

	(void)state;
	assert_int_equal(xrl_cluster_redirect("MOVED 3999 127.0.0.1:6381", &s, &a), 1);
	assert_int_equal(s, 3999);
	assert_string_equal(a.host, "127.0.0.1");
	assert_int_equal(a.port, 6381);
	assert_int_equal(xrl_cluster_redirect("ASK 16383 [::1]:30002", &s, &a), 2);
	assert_int_equal(s, 16383);
	assert_string_equal(a.host, "::1");
	assert_int_equal(a.port, 30002);
	assert_int_equal(xrl_cluster_redirect("MOVED 16384 h:1", &s, &a), 0);
	assert_int_equal(xrl_cluster_redirect("MOVED 1 h:0", &s, &a), 0);
	assert_int_equal(xrl_cluster_redirect("MOVED 1 :7000", &s, &a), 0);
	assert_int_equal(xrl_cluster_redirect("CLUSTERDOWN The cluster is down", &s, &a), 0);
	assert_int_equal(xrl_cluster_redirect("ERR MOVED", &s, &a), 0);
}

/* Shard tags: each in its own equal range of slots, so 3 masters of equal ranges hold 21 or 22. */
static void test_shard_tags(void **state)
{
	unsigned n, width = 16384 / XRL_CLUSTER_SHARDS, per[3] = { 0 };

	(void)state;
	for (n = 0; n < XRL_CLUSTER_SHARDS; n++) {
		unsigned s = slot(xrl_cluster_shard_tag(n));

		assert_true(s >= n * width && s < (n + 1) * width);
		per[s <= 5460 ? 0 : s <= 10922 ? 1 : 2]++;
	}
	for (n = 0; n < 3; n++)
		assert_true(per[n] == 21 || per[n] == 22);
	/* pure: the same tag every call */
	assert_string_equal(xrl_cluster_shard_tag(5), xrl_cluster_shard_tag(5 + XRL_CLUSTER_SHARDS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc16_and_slots),
		cmocka_unit_test(test_map_slots),
		cmocka_unit_test(test_map_shards),
		cmocka_unit_test(test_redirect),
		cmocka_unit_test(test_shard_tags),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
