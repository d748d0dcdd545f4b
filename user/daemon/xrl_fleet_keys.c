// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The names of the fleet's keys in Redis (xrl_fleet_keys.h). */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "xrl_fleet_keys.h"
#include "xrl_rule.h"   /* xrl_rule_format, xrl_gcra_compile */

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

/* v (< 1000) in decimal at o; after it. */
static char *put_dec(char *o, unsigned v)
{
	if (v >= 100)
		*o++ = (char)('0' + v / 100);
	if (v >= 10)
		*o++ = (char)('0' + v / 10 % 10);
	*o++ = (char)('0' + v % 10);
	return o;
}

static char *put_str(char *o, const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	memcpy(o, s, n);
	return o + n;
}

/*
 * The source as text at o (ADDR, or ADDR/LEN when aggregated); after it.
 * Every round writes one per source reported: IPv4 by hand, as inet_ntop
 * writes it, since inet_ntop and printf cost more than the rest of a key.
 */
static char *put_source(char *o, const struct xrl_bucket_key *k, __u8 per_len)
{
	int full = k->family == 4 ? 32 : 128;

	if (k->family == 4) {
		const unsigned char *a = (const unsigned char *)k->addr;

		o = put_dec(o, a[0]);
		*o++ = '.';
		o = put_dec(o, a[1]);
		*o++ = '.';
		o = put_dec(o, a[2]);
		*o++ = '.';
		o = put_dec(o, a[3]);
	} else {
		char addr[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, k->addr, addr, sizeof(addr));
		o = put_str(o, addr, sizeof(addr));
	}
	if (per_len < full) {
		*o++ = '/';
		o = put_dec(o, per_len);
	}
	return o;
}

/* text[0, n) into buf as snprintf would (cut to len - 1, terminated). */
static void put_out(const char *text, size_t n, char *buf, size_t len)
{
	if (!len)
		return;
	if (n >= len)
		n = len - 1;
	memcpy(buf, text, n);
	buf[n] = 0;
}

/* xrl:{RULE:SOURCE}: the braces are a Redis Cluster hash tag, one per (rule, source). */
void xrl_fleet_source_key(const char *rule_name, const struct xrl_bucket_key *k, __u8 per_len,
			  char *buf, size_t len)
{
	char text[256], *o = text;

	o = put_str(o, "xrl:{", 5);
	o = put_str(o, rule_name, 64);
	*o++ = ':';
	o = put_source(o, k, per_len);
	*o++ = '}';
	put_out(text, (size_t)(o - text), buf, len);
}

void xrl_fleet_source_key_tagged(const char *tag, const char *rule_name,
				 const struct xrl_bucket_key *k, __u8 per_len, char *buf, size_t len)
{
	char text[256], *o = text;

	o = put_str(o, "xrl:{", 5);
	o = put_str(o, tag, 64);
	o = put_str(o, "}:", 2);
	o = put_str(o, rule_name, 64);
	*o++ = ':';
	o = put_source(o, k, per_len);
	put_out(text, (size_t)(o - text), buf, len);
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

/* units of 2^shift ns in µs to the picosecond (rounded when a unit is below one) */
static void gcra_us(char *out, size_t n, __u64 units, __s32 shift)
{
	unsigned __int128 ps = (unsigned __int128)units * 1000;

	ps = shift >= 0 ? ps << shift : (ps + ((unsigned __int128)1 << (-shift - 1))) >> -shift;
	snprintf(out, n, "%llu.%06llu", (unsigned long long)(ps / 1000000),
		 (unsigned long long)(ps % 1000000));
}

int xrl_fleet_gcra_figures(__u64 tokens, __u64 period_s, __u64 burst, char *interval_us,
			   char *span_us, double *interval_ns, double *span_ns)
{
	struct xrl_gcra g = { 0 };
	char err[XRL_ERRLEN];

	if (xrl_gcra_compile(tokens, period_s * 1000000000ull, burst, &g, err, sizeof(err)))
		return -1;
	gcra_us(interval_us, XRL_FLEET_US_LEN, g.interval, g.shift);
	gcra_us(span_us, XRL_FLEET_US_LEN, g.span, g.shift);
	if (interval_ns)
		*interval_ns = g.shift >= 0 ? (double)g.interval * (double)(1ull << g.shift) :
					      (double)g.interval / (double)(1ull << -g.shift);
	if (span_ns)
		*span_ns = g.shift >= 0 ? (double)g.span * (double)(1ull << g.shift) :
					  (double)g.span / (double)(1ull << -g.shift);
	return 0;
}
