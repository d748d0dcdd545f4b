// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The names of the fleet's keys in Redis (xrl_fleet_keys.h). */
#include <arpa/inet.h>
#include <stdio.h>

#include "xrl_fleet_keys.h"
#include "xrl_rule.h"   /* xrl_rule_format */

/* FNV-1a of the rule as written: hosts running the same rule share its budget. */
void xrl_fleet_rule_name(const struct xrl_rule_def *d, char name[17])
{
	char text[512];
	__u64 h = 0xcbf29ce484222325ull;
	const char *p;

	xrl_rule_format(d, text, sizeof(text));
	for (p = text; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 0x100000001b3ull;
	}
	snprintf(name, 17, "%016llx", (unsigned long long)h);
}

/* xrl:{RULE:SOURCE}: the braces are a Redis Cluster hash tag, one per (rule, source). */
void xrl_fleet_source_key(const char *rule_name, const struct xrl_bucket_key *k, __u8 per_len,
			  char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];
	int full = k->family == 4 ? 32 : 128;

	inet_ntop(k->family == 4 ? AF_INET : AF_INET6, k->addr, addr, sizeof(addr));
	if (per_len < full)
		snprintf(buf, len, "xrl:{%s:%s/%u}", rule_name, addr, per_len);
	else
		snprintf(buf, len, "xrl:{%s:%s}", rule_name, addr);
}

static void source_text(const struct xrl_bucket_key *k, __u8 per_len, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];
	int full = k->family == 4 ? 32 : 128;

	inet_ntop(k->family == 4 ? AF_INET : AF_INET6, k->addr, addr, sizeof(addr));
	if (per_len < full)
		snprintf(buf, len, "%s/%u", addr, per_len);
	else
		snprintf(buf, len, "%s", addr);
}

void xrl_fleet_source_key_tagged(const char *tag, const char *rule_name,
				 const struct xrl_bucket_key *k, __u8 per_len, char *buf, size_t len)
{
	char src[INET6_ADDRSTRLEN + 8];

	source_text(k, per_len, src, sizeof(src));
	snprintf(buf, len, "xrl:{%s}:%s:%s", tag, rule_name, src);
}

/* FNV-1a of the address bytes: a source's shard does not depend on its rule. */
unsigned xrl_fleet_source_shard(const struct xrl_bucket_key *k, unsigned nshards)
{
	const unsigned char *p = (const unsigned char *)k->addr;
	size_t i, n = k->family == 4 ? 4 : 16;
	__u32 h = 2166136261u;

	for (i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return nshards ? h % nshards : 0;
}

void xrl_fleet_hosts_key(const char *rule_name, char *buf, size_t len)
{
	snprintf(buf, len, "xrl:{%s}:hosts", rule_name);
}

void xrl_fleet_sentinel_key(const char *host_id, char *buf, size_t len)
{
	snprintf(buf, len, "xrl:{%s}:sentinel", host_id);
}
