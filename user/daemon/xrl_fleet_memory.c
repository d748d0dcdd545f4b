// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Whether Redis may evict xrl's keys. A fleet whose TATs, counters and
 * hosts Redis forgot admits more than its budgets, and Redis says nothing
 * to its clients when it evicts: so the daemon reads maxmemory-policy
 * after each connection and warns when it evicts, and once a second reads
 * INFO's evicted_keys (INFO refused: checks a sentinel key of its own) and
 * warns once per episode of evictions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>

#include "xrl_fleet_int.h"
#include "xrl_log.h"

/* An episode of evictions ends after this long without one. */
#define EVICT_EPISODE_NS 60000000000ull
/* The sentinel's life: long, and with a TTL, as xrl's keys have one (volatile-* evicts it too). */
#define SENTINEL_TTL_MS "86400000"

/* CONFIG GET NAME's value into buf; 0, or -1 (refused, renamed: err says why). */
static int config_get(struct xrl_fleet *f, const char *name, char *buf, size_t len, char *err,
		      size_t errlen)
{
	const char *argv[] = { "CONFIG", "GET", name };
	redisReply *rep = xrl_redis_command(&f->redis, 3, argv, err, errlen);
	int rc = -1;

	if (!rep)
		return -1;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
	    rep->element[1]->type == REDIS_REPLY_STRING) {
		snprintf(buf, len, "%s", rep->element[1]->str);
		rc = 0;
	} else {
		snprintf(err, errlen, "%s", rep->type == REDIS_REPLY_ERROR ? rep->str : "no value");
	}
	freeReplyObject(rep);
	return rc;
}

void xrl_fleet_check_policy(struct xrl_fleet *f)
{
	char policy[64], maxmem[32], err[256];

	if (config_get(f, "maxmemory-policy", policy, sizeof(policy), err, sizeof(err)) ||
	    config_get(f, "maxmemory", maxmem, sizeof(maxmem), err, sizeof(err))) {
		if (f->redis.c && strcmp(f->memory_policy, "?"))
			xrl_log(XRL_LOG_INFO, "cannot read redis' maxmemory-policy (CONFIG GET: %s): evictions of xrl's keys are watched through %s",
				err, f->info_refused ? "a sentinel key" : "INFO's evicted_keys");
		snprintf(f->memory_policy, sizeof(f->memory_policy), "?");
		return;
	}
	/* noeviction, or nothing to evict for: a limit of 0 is none (64-bit Redis) */
	if (!strcmp(policy, "noeviction") || !strcmp(maxmem, "0")) {
		f->memory_policy[0] = 0;
		return;
	}
	if (!strcmp(f->memory_policy, policy))
		return;   /* warned already */
	snprintf(f->memory_policy, sizeof(f->memory_policy), "%s", policy);
	xrl_log(XRL_LOG_WARN, "redis maxmemory-policy is %s (maxmemory %s): when full, Redis evicts xrl's keys (all have a TTL, so volatile-* policies evict them too), and a fleet whose budgets Redis forgot admits more than them; set maxmemory-policy noeviction (a full Redis then refuses writes: --on-redis-failure applies)",
		policy, maxmem);
}

static void evicted(struct xrl_fleet *f, long long n, const char *how, __u64 now)
{
	pthread_mutex_lock(&f->lock);
	f->evicted_keys += n;
	pthread_mutex_unlock(&f->lock);
	f->evicted_last_ns = now;
	if (f->evicting)
		return;
	f->evicting = true;
	xrl_log(XRL_LOG_WARN, "redis is evicting keys (%s): xrl's may be among them, and a fleet whose budgets Redis forgot admits more than them; give Redis maxmemory-policy noeviction or more memory (logged once until a minute passes without evictions)",
		how);
}

/* INFO stats' evicted_keys; 0, 1 when INFO is refused, -1 when the connection failed. */
static int info_evicted(struct xrl_fleet *f, long long *n)
{
	const char *argv[] = { "INFO", "stats" };
	char err[256];
	redisReply *rep = xrl_redis_command(&f->redis, 2, argv, err, sizeof(err));
	const char *p;
	int rc = 1;

	if (!rep)
		return -1;
	if (rep->type == REDIS_REPLY_STRING &&
	    (p = strstr(rep->str, "\nevicted_keys:"))) {
		*n = strtoll(p + 14, NULL, 10);
		rc = 0;
	}
	freeReplyObject(rep);
	return rc;
}

/* The sentinel: gone since the last check (evicted, or deleted by someone) is an eviction. */
static void check_sentinel(struct xrl_fleet *f, __u64 now)
{
	char key[200], err[256];
	const char *ex[] = { "EXISTS", key };
	const char *set[] = { "SET", key, "1", "PX", SENTINEL_TTL_MS };
	redisReply *rep;
	bool there;

	xrl_fleet_sentinel_key(f->host_id, key, sizeof(key));
	if (!(rep = xrl_redis_command(&f->redis, 2, ex, err, sizeof(err))))
		return;
	there = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
	freeReplyObject(rep);
	if (there)
		return;
	if (f->sentinel_set)
		evicted(f, 1, "xrl's sentinel key vanished: evicted, or someone deleted it", now);
	if (!(rep = xrl_redis_command(&f->redis, 5, set, err, sizeof(err))))
		return;
	f->sentinel_set = rep->type == REDIS_REPLY_STATUS;
	freeReplyObject(rep);
}

void xrl_fleet_check_evictions(struct xrl_fleet *f, __u64 now)
{
	long long n;
	char how[128];
	int rc;

	__u64 since = now - f->memory_checked_ns;

	if (since < 1000000000ull)
		return;
	f->memory_checked_ns = now;
	if (f->evicting && now - f->evicted_last_ns >= EVICT_EPISODE_NS)
		f->evicting = false;
	if (f->info_refused) {
		check_sentinel(f, now);
		return;
	}
	rc = info_evicted(f, &n);
	if (rc < 0)
		return;
	if (rc > 0) {
		f->info_refused = true;
		xrl_log(XRL_LOG_INFO, "redis refuses INFO: evictions of xrl's keys are watched through a sentinel key");
		check_sentinel(f, now);
		return;
	}
	if (f->evicted_seen >= 0 && n > f->evicted_seen) {
		snprintf(how, sizeof(how), "INFO's evicted_keys grew by %lld in %.1f s", n - f->evicted_seen,
			 since / 1e9);
		evicted(f, n - f->evicted_seen, how, now);
	}
	f->evicted_seen = n;   /* lower: Redis restarted or CONFIG RESETSTAT */
}
