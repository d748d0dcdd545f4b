// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rule parsing, formatting and compiling (user/lib/xrl_units.c, xrl_rule.c,
 * xrl_ruleset.c): parsers with good and bad input, rule words, format/parse
 * round trips (every row of the rule table), rule-set compilation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "xrl_rule.h"
#include "xrl_opts.h"
#include "xrl_fleet_keys.h"

typedef unsigned long long ull;

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The error must be non-empty and, when given, contain needle. */
static void check_err(const char *what, const char *input, const char *err, const char *needle)
{
	if (!err[0])
		fail_msg("%s '%s': refused with an empty message", what, input);
	if (needle && !strstr(err, needle))
		fail_msg("%s '%s': message \"%s\" does not contain [%s]", what, input, err, needle);
}

/* ------------------------------------------------------------------ */
/* prefixes                                                            */

static void test_prefix_good(void **state)
{
	static const struct {
		const char *s;
		int family;
		const char *addr;
		int plen;
	} t[] = {
		{ "203.0.113.0/24", 4, "203.0.113.0", 24 },
		{ "10.0.0.0/8", 4, "10.0.0.0", 8 },
		{ "2001:db8::/32", 6, "2001:db8::", 32 },
		{ "192.0.2.1", 4, "192.0.2.1", 32 },
		{ "2001:db8::1", 6, "2001:db8::1", 128 },
		{ "0.0.0.0/0", 4, "0.0.0.0", 0 },
		{ "::/0", 6, "::", 0 },
		{ "192.0.2.1/32", 4, "192.0.2.1", 32 },
		{ "192.0.2.128/25", 4, "192.0.2.128", 25 },
		{ "128.0.0.0/1", 4, "128.0.0.0", 1 },
		{ "255.255.255.255/32", 4, "255.255.255.255", 32 },
		{ "10.0.0.0/08", 4, "10.0.0.0", 8 },
		{ "2001:db8:8000::/33", 6, "2001:db8:8000::", 33 },
		{ "fe80::/10", 6, "fe80::", 10 },
		{ "2001:db8::1/128", 6, "2001:db8::1", 128 },
		{ "::ffff:10.0.0.0/104", 6, "::ffff:10.0.0.0", 104 },
		{ "2001:DB8::/32", 6, "2001:db8::", 32 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		__u8 fam = 0xee, plen = 0xee, addr[16], want[16] = { 0 };
		char err[XRL_ERRLEN] = "";

		memset(addr, 0xee, sizeof(addr));
		if (xrl_parse_prefix(t[i].s, &fam, addr, &plen, err, sizeof(err)))
			fail_msg("prefix '%s' refused: %s", t[i].s, err);
		assert_int_equal(inet_pton(t[i].family == 4 ? AF_INET : AF_INET6, t[i].addr, want), 1);
		if (fam != t[i].family || plen != t[i].plen || memcmp(addr, want, 16))
			fail_msg("prefix '%s': family %u plen %u, want %d /%d", t[i].s, fam, plen,
				 t[i].family, t[i].plen);
	}
}

static void test_prefix_bad(void **state)
{
	static const struct {
		const char *s;
		const char *needle;   /* the message must contain it */
	} t[] = {
		{ "300.1.1.1/24", "300.1.1.1/24" },
		{ "10.0.0.0/33", "10.0.0.0/33" },
		{ "fe80::/129", "fe80::/129" },
		{ "10.0.0.1/8", "10.0.0.1/8" },
		{ "", NULL },
		{ "10.0.0.0/", "10.0.0.0/" },
		{ "10.0.0.0/-1", "10.0.0.0/-1" },
		{ "10.0.0.0/abc", "10.0.0.0/abc" },
		{ "abc", "abc" },
		{ "abc/8", "abc/8" },
		{ "10.0.0.0/8/8", "10.0.0.0/8/8" },
		{ "10.0.0.0/8x", "10.0.0.0/8x" },
		{ "10.0.0.0/+8", "10.0.0.0/+8" },
		{ "10.0.0.0/ 8", "10.0.0.0/ 8" },
		{ " 10.0.0.0/8", "10.0.0.0/8" },
		{ "10.0.0.0 /8", "10.0.0.0 /8" },
		{ "1.2.3/24", "1.2.3/24" },
		{ "10.0.0.0/99999999999999999999", "10.0.0.0/99999999999999999999" },
		{ "192.0.2.129/25", "192.0.2.129/25" },
		{ "2001:db8::1/32", "2001:db8::1/32" },
		{ "2001:db8::/", "2001:db8::/" },
		{ "2001:db8:::/32", "2001:db8:::/32" },
		{ "/8", "/8" },
		{ "1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb:cccc/8", NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		__u8 fam, plen, addr[16];
		char err[XRL_ERRLEN] = "";

		if (xrl_parse_prefix(t[i].s, &fam, addr, &plen, err, sizeof(err)) != -1)
			fail_msg("prefix '%s' accepted", t[i].s);
		check_err("prefix", t[i].s, err, t[i].needle);
	}
}

/* Host bits set: the message suggests the network. */
static void test_prefix_host_bits_suggestion(void **state)
{
	static const struct { const char *s, *suggest; } t[] = {
		{ "10.0.0.1/8", "10.0.0.0/8" },
		{ "203.0.113.77/24", "203.0.113.0/24" },
		{ "192.0.2.129/25", "192.0.2.128/25" },
		{ "1.2.3.4/0", "0.0.0.0/0" },
		{ "2001:db8::1/32", "2001:db8::/32" },
		{ "2001:db8:ffff::/33", "2001:db8:8000::/33" },
		{ "::1/0", "::/0" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		__u8 fam, plen, addr[16];
		char err[XRL_ERRLEN] = "";

		assert_int_equal(xrl_parse_prefix(t[i].s, &fam, addr, &plen, err, sizeof(err)), -1);
		check_err("prefix", t[i].s, err, t[i].s);
		check_err("prefix", t[i].s, err, t[i].suggest);
	}
}

static void test_prefix_format(void **state)
{
	static const char *t[] = {
		"10.0.0.0/8", "0.0.0.0/0", "192.0.2.1/32", "2001:db8::/32", "::/0",
		"2001:db8::1/128", "fe80::/10",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		__u8 fam, plen, addr[16];
		char err[XRL_ERRLEN] = "", buf[64];

		assert_int_equal(xrl_parse_prefix(t[i], &fam, addr, &plen, err, sizeof(err)), 0);
		xrl_prefix_format(fam, addr, plen, buf, sizeof(buf));
		assert_string_equal(buf, t[i]);
	}
}

/* ------------------------------------------------------------------ */
/* rates, sizes, numbers, protocols                                    */

static void test_rate_good(void **state)
{
	static const struct { const char *s; __u64 count; __u32 period; } t[] = {
		{ "100", 100, 1 },
		{ "100/s", 100, 1 },
		{ "6000/m", 6000, 60 },
		{ "1000/h", 1000, 3600 },
		{ "5/second", 5, 1 },
		{ "5/sec", 5, 1 },
		{ "5/minute", 5, 60 },
		{ "5/min", 5, 60 },
		{ "5/hour", 5, 3600 },
		{ "1", 1, 1 },
		{ "1/h", 1, 3600 },
		{ "10000000", 10000000, 1 },
		{ "10000000/s", 10000000, 1 },
		{ "600000000/m", 600000000, 60 },
		{ "36000000000/h", 36000000000ULL, 3600 },
		{ "0100", 100, 1 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		__u64 count = 0;
		__u32 period = 0;
		char err[XRL_ERRLEN] = "";

		if (xrl_parse_rate(t[i].s, &count, &period, err, sizeof(err)))
			fail_msg("rate '%s' refused: %s", t[i].s, err);
		if (count != t[i].count || period != t[i].period)
			fail_msg("rate '%s': %llu per %u s, want %llu per %u s", t[i].s,
				 (ull)count, period, (ull)t[i].count, t[i].period);
	}
}

static void test_rate_bad(void **state)
{
	static const char *t[] = {
		"0", "0/s", "0/h", "-5", "-5/s", "abc", "10/x", "1.5", "1.5/s",
		"99999999999999999999", "99999999999999999999/h",
		"10000001", "10000001/s", "600000001/m", "36000000001/h",
		"100/", "/s", "100/s/s", "10/days", "+5", " 100", "100 ", "1e3", "0x10",
		"100/ s",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		__u64 count;
		__u32 period;
		char err[XRL_ERRLEN] = "";

		if (xrl_parse_rate(t[i], &count, &period, err, sizeof(err)) != -1)
			fail_msg("rate '%s' accepted", t[i]);
		check_err("rate", t[i], err, t[i]);
	}
	/* empty */
	{
		__u64 count;
		__u32 period;
		char err[XRL_ERRLEN] = "";

		assert_int_equal(xrl_parse_rate("", &count, &period, err, sizeof(err)), -1);
		check_err("rate", "", err, NULL);
		err[0] = 0;
		assert_int_equal(xrl_parse_rate(NULL, &count, &period, err, sizeof(err)), -1);
		check_err("rate", "(null)", err, NULL);
	}
}

static void test_size(void **state)
{
	static const struct { const char *s; __u64 v; } good[] = {
		{ "10M", 10000000 },
		{ "64k", 64000 },
		{ "64K", 64000 },
		{ "1G", 1000000000 },
		{ "1500", 1500 },
		{ "1", 1 },
		{ "1T", 1000000000000ULL },
		{ "10MB", 10000000 },
		{ "10M/s", 10000000 },
		{ "10MB/s", 10000000 },
		{ "1099511627776", 1ULL << 40 },
		{ "1099G", 1099000000000ULL },
	};
	static const char *bad[] = {
		"0", "-1", "10X", "0k", "k", "M", "1.5M", "2T", "1100G", "1099511627777",
		"10 M", "10M ", " 10M", "10Mb", "10M/h", "99999999999999999999",
		"99999999999999999999999999999999999",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(good); i++) {
		__u64 v = 0;
		char err[XRL_ERRLEN] = "";

		if (xrl_parse_size("byte rate", good[i].s, XRL_MAX_BYTE_RATE, &v, err, sizeof(err)))
			fail_msg("size '%s' refused: %s", good[i].s, err);
		if (v != good[i].v)
			fail_msg("size '%s' = %llu, want %llu", good[i].s, (ull)v, (ull)good[i].v);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		__u64 v;
		char err[XRL_ERRLEN] = "";

		if (xrl_parse_size("byte rate", bad[i], XRL_MAX_BYTE_RATE, &v, err, sizeof(err)) != -1)
			fail_msg("size '%s' accepted as %llu", bad[i], (ull)v);
		check_err("size", bad[i], err, bad[i]);
		check_err("size", bad[i], err, "byte rate");
	}
	{
		__u64 v;
		char err[XRL_ERRLEN] = "";

		assert_int_equal(xrl_parse_size("byte burst", "", XRL_MAX_BYTE_BURST, &v, err,
						sizeof(err)), -1);
		check_err("size", "", err, "byte burst");
	}
}

static void test_uint(void **state)
{
	__u64 v;
	char err[XRL_ERRLEN];

	(void)state;
	assert_int_equal(xrl_parse_uint("port", "0", 0, 65535, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 0);
	assert_int_equal(xrl_parse_uint("port", "65535", 0, 65535, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 65535);
	assert_int_equal(xrl_parse_uint("x", "18446744073709551615", 0, UINT64_MAX, &v, err,
					sizeof(err)), 0);
	assert_int_equal(v, UINT64_MAX);
	err[0] = 0;
	assert_int_equal(xrl_parse_uint("port", "65536", 0, 65535, &v, err, sizeof(err)), -1);
	check_err("port", "65536", err, "65536");
	check_err("port", "65536", err, "port");
	err[0] = 0;
	assert_int_equal(xrl_parse_uint("burst", "0", 1, 10, &v, err, sizeof(err)), -1);
	check_err("burst", "0", err, "'0'");
	err[0] = 0;
	assert_int_equal(xrl_parse_uint("n", "-1", 0, 10, &v, err, sizeof(err)), -1);
	check_err("n", "-1", err, "-1");
	err[0] = 0;
	assert_int_equal(xrl_parse_uint("n", "18446744073709551616", 0, UINT64_MAX, &v, err,
					sizeof(err)), -1);
	check_err("n", "18446744073709551616", err, "18446744073709551616");
	err[0] = 0;
	assert_int_equal(xrl_parse_uint("n", "", 0, 10, &v, err, sizeof(err)), -1);
	check_err("n", "", err, NULL);
	assert_int_equal(xrl_parse_uint("n", NULL, 0, 10, &v, err, sizeof(err)), -1);
	assert_int_equal(xrl_parse_uint("n", "5x", 0, 10, &v, err, sizeof(err)), -1);
	assert_int_equal(xrl_parse_uint("n", " 5", 0, 10, &v, err, sizeof(err)), -1);
}

static void test_proto(void **state)
{
	static const struct { const char *s; __u8 p; } good[] = {
		{ "tcp", IPPROTO_TCP }, { "udp", IPPROTO_UDP },
		{ "icmp", IPPROTO_ICMP }, { "icmpv6", IPPROTO_ICMPV6 },
	};
	static const char *bad[] = { "sctp", "TCP", "6", "tcp ", "icmp6", "x" };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(good); i++) {
		__u8 p = 0;
		char err[XRL_ERRLEN] = "";

		assert_int_equal(xrl_parse_proto(good[i].s, &p, err, sizeof(err)), 0);
		assert_int_equal(p, good[i].p);
		assert_string_equal(xrl_proto_name(p), good[i].s);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		__u8 p;
		char err[XRL_ERRLEN] = "";

		assert_int_equal(xrl_parse_proto(bad[i], &p, err, sizeof(err)), -1);
		check_err("protocol", bad[i], err, bad[i]);
	}
	{
		__u8 p;
		char err[XRL_ERRLEN] = "";

		assert_int_equal(xrl_parse_proto("", &p, err, sizeof(err)), -1);
		check_err("protocol", "", err, NULL);
	}
}

/* ------------------------------------------------------------------ */
/* rule words                                                          */

static int parse(const char *line, struct xrl_rule_def *d, char *err)
{
	memset(d, 0xee, sizeof(*d));
	err[0] = 0;
	return xrl_rule_parse_line(line, d, err, XRL_ERRLEN);
}

static void parse_ok(const char *line, struct xrl_rule_def *d)
{
	char err[XRL_ERRLEN];
	int rc = parse(line, d, err);

	if (rc != 1)
		fail_msg("'%s': returned %d (%s), want a rule", line, rc, err);
}

static void test_rule_defaults(void **state)
{
	static const struct {
		const char *line;
		__u64 rate;
		__u32 period, burst;
		__u8 per;
	} t[] = {
		{ "10.0.0.0/8 --rate 100", 100, 1, 100, 32 },
		{ "10.0.0.0/8 --rate 100/s", 100, 1, 100, 32 },
		{ "10.0.0.0/8 --rate 6000/m", 6000, 60, 100, 32 },
		{ "10.0.0.0/8 --rate 1000/h", 1000, 3600, 1, 32 },
		{ "10.0.0.0/8 --rate 59/m", 59, 60, 1, 32 },
		{ "10.0.0.0/8 --rate 7200/h", 7200, 3600, 2, 32 },
		{ "10.0.0.0/8 --rate 1/h", 1, 3600, 1, 32 },
		{ "10.0.0.0/8 --rate 10000000", 10000000, 1, 10000000, 32 },
		{ "10.0.0.0/8 --rate 36000000000/h", 36000000000ULL, 3600, 10000000, 32 },
		{ "2001:db8::/32 --rate 100", 100, 1, 100, 64 },
		{ "::/0 --rate 3/s", 3, 1, 3, 64 },
		{ "192.0.2.1 --rate 3/s", 3, 1, 3, 32 },
		{ "10.0.0.0/8 --rate 5 --burst 4294967295", 5, 1, 4294967295u, 32 },
		{ "10.0.0.0/8 --rate 5 --burst 1", 5, 1, 1, 32 },
		{ "10.0.0.0/8 --rate 5 --per 24", 5, 1, 5, 24 },
		{ "10.0.0.0/8 --rate 5 --per 0", 5, 1, 5, 0 },
		{ "10.0.0.0/8 --rate 5 --per 32", 5, 1, 5, 32 },
		{ "2001:db8::/32 --rate 5 --per 128", 5, 1, 5, 128 },
		{ "2001:db8::/32 --rate 5 --per 48", 5, 1, 5, 48 },
		{ "10.0.0.0/8 --rate=100 --burst=7", 100, 1, 7, 32 },
		{ "  10.0.0.0/8\t--rate 100   # web servers", 100, 1, 100, 32 },
		{ "10.0.0.0/8 --rate 100#comment", 100, 1, 100, 32 },
		{ "10.0.0.0/8 --rate 100\r\n", 100, 1, 100, 32 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct xrl_rule_def d;

		parse_ok(t[i].line, &d);
		if (d.action != XRL_ACT_LIMIT || d.rate != t[i].rate ||
		    d.rate_period != t[i].period || d.burst != t[i].burst ||
		    d.per_len != t[i].per || d.flags != 0)
			fail_msg("'%s': action %u rate %llu/%u burst %u per %u flags %#x; want rate %llu/%u burst %u per %u",
				 t[i].line, d.action, (ull)d.rate, d.rate_period, d.burst,
				 d.per_len, d.flags, (ull)t[i].rate, t[i].period, t[i].burst,
				 t[i].per);
	}
}

static void test_rule_fields(void **state)
{
	struct xrl_rule_def d;
	__u8 want[16] = { 0 };

	(void)state;
	parse_ok("10.1.0.0/16 --proto tcp --dport 80 --rate 10", &d);
	assert_int_equal(d.family, 4);
	assert_int_equal(d.plen, 16);
	assert_int_equal(inet_pton(AF_INET, "10.1.0.0", want), 1);
	assert_memory_equal(d.addr, want, 16);
	assert_int_equal(d.flags, XRL_F_PROTO | XRL_F_DPORT);
	assert_int_equal(d.proto, IPPROTO_TCP);
	assert_int_equal(d.dport, 80);
	assert_int_equal(d.action, XRL_ACT_LIMIT);
	assert_int_equal(d.rate, 10);
	assert_int_equal(d.burst, 10);

	parse_ok("10.0.0.0/8 --proto udp --dport 53 --rate 10", &d);
	assert_int_equal(d.flags, XRL_F_PROTO | XRL_F_DPORT);
	assert_int_equal(d.proto, IPPROTO_UDP);
	assert_int_equal(d.dport, 53);

	parse_ok("10.0.0.0/8 --proto tcp --dport 65535 --rate 10", &d);
	assert_int_equal(d.dport, 65535);

	parse_ok("10.0.0.0/8 --proto tcp --rate 10", &d);
	assert_int_equal(d.flags, XRL_F_PROTO);
	assert_int_equal(d.proto, IPPROTO_TCP);

	/* --syn implies TCP, so --dport needs no --proto with it */
	parse_ok("10.0.0.0/8 --syn --dport 80 --rate 1", &d);
	assert_int_equal(d.flags, XRL_F_PROTO | XRL_F_DPORT | XRL_F_SYN);
	assert_int_equal(d.proto, IPPROTO_TCP);
	assert_int_equal(d.dport, 80);

	/* allow and deny name each source (for top): per the full address */
	parse_ok("10.0.0.0/8 --deny", &d);
	assert_int_equal(d.per_len, 32);
	parse_ok("2001:db8::/32 --allow", &d);
	assert_int_equal(d.per_len, 128);

	parse_ok("10.0.0.0/8 --proto icmp --rate 10", &d);
	assert_int_equal(d.flags, XRL_F_PROTO);
	assert_int_equal(d.proto, IPPROTO_ICMP);

	parse_ok("2001:db8::/32 --proto icmpv6 --rate 10", &d);
	assert_int_equal(d.family, 6);
	assert_int_equal(d.flags, XRL_F_PROTO);
	assert_int_equal(d.proto, IPPROTO_ICMPV6);

	/* --syn implies tcp */
	parse_ok("10.0.0.0/8 --syn --rate 10", &d);
	assert_int_equal(d.flags, XRL_F_PROTO | XRL_F_SYN);
	assert_int_equal(d.proto, IPPROTO_TCP);
	parse_ok("10.0.0.0/8 --proto tcp --syn --rate 10", &d);
	assert_int_equal(d.flags, XRL_F_PROTO | XRL_F_SYN);
	assert_int_equal(d.proto, IPPROTO_TCP);
	parse_ok("10.0.0.0/8 --syn --proto tcp --dport 22 --rate 10", &d);
	assert_int_equal(d.flags, XRL_F_PROTO | XRL_F_SYN | XRL_F_DPORT);
	assert_int_equal(d.dport, 22);

	/* --allow / --deny */
	parse_ok("10.0.0.0/8 --allow", &d);
	assert_int_equal(d.action, XRL_ACT_ALLOW);
	assert_int_equal(d.flags, 0);
	parse_ok("2001:db8::/32 --deny", &d);
	assert_int_equal(d.action, XRL_ACT_DENY);
	assert_int_equal(d.family, 6);
	parse_ok("10.0.0.0/8 --proto tcp --dport 22 --deny", &d);
	assert_int_equal(d.action, XRL_ACT_DENY);
	assert_int_equal(d.flags, XRL_F_PROTO | XRL_F_DPORT);
	assert_int_equal(d.dport, 22);

	/* --bytes / --bytes-burst */
	parse_ok("10.0.0.0/8 --rate 100 --bytes 10M", &d);
	assert_int_equal(d.flags, XRL_F_BYTES);
	assert_int_equal(d.byte_rate, 10000000);
	assert_int_equal(d.byte_burst, 10000000);
	parse_ok("10.0.0.0/8 --rate 100 --bytes 10M --bytes-burst 64k", &d);
	assert_int_equal(d.flags, XRL_F_BYTES);
	assert_int_equal(d.byte_rate, 10000000);
	assert_int_equal(d.byte_burst, 64000);
	parse_ok("10.0.0.0/8 --rate 100 --bytes 1G --bytes-burst 1500", &d);
	assert_int_equal(d.byte_rate, 1000000000);
	assert_int_equal(d.byte_burst, 1500);
	parse_ok("10.0.0.0/8 --rate 100 --bytes 1T --bytes-burst 1099511627776", &d);
	assert_int_equal(d.byte_rate, 1000000000000ULL);
	assert_int_equal(d.byte_burst, 1ULL << 40);
	parse_ok("10.0.0.0/8 --proto udp --dport 53 --rate 100 --bytes 64k", &d);
	assert_int_equal(d.flags, XRL_F_PROTO | XRL_F_DPORT | XRL_F_BYTES);

	/* --new-sources / --new-burst: the burst defaults to a second of the rate, at least 1 */
	parse_ok("10.0.0.0/8 --rate 100 --new-sources 500", &d);
	assert_int_equal(d.flags, XRL_F_NEWSRC);
	assert_int_equal(d.new_rate, 500);
	assert_int_equal(d.new_period, 1);
	assert_int_equal(d.new_burst, 500);
	parse_ok("10.0.0.0/8 --rate 100 --new-sources 30/m", &d);
	assert_int_equal(d.new_rate, 30);
	assert_int_equal(d.new_period, 60);
	assert_int_equal(d.new_burst, 1);
	parse_ok("10.0.0.0/8 --rate 100 --new-sources 7200/h --new-burst 9", &d);
	assert_int_equal(d.new_period, 3600);
	assert_int_equal(d.new_burst, 9);
	parse_ok("10.0.0.0/8 --rate 100", &d);
	assert_int_equal(d.flags & XRL_F_NEWSRC, 0);

	/* --total / --total-burst */
	parse_ok("10.0.0.0/8 --rate 100 --total 5000", &d);
	assert_int_equal(d.flags, XRL_F_TOTAL);
	assert_int_equal(d.total_rate, 5000);
	assert_int_equal(d.total_period, 1);
	assert_int_equal(d.total_burst, 5000);
	parse_ok("10.0.0.0/8 --rate 100 --total 30/h --total-burst 4", &d);
	assert_int_equal(d.total_period, 3600);
	assert_int_equal(d.total_burst, 4);
	parse_ok("10.0.0.0/8 --rate 100 --total 30/h", &d);
	assert_int_equal(d.total_burst, 1);
	/* the batch: burst / (50 x CPUs), 1 to 64 */
	assert_int_equal(xrl_total_batch(1, 2), 1);
	assert_int_equal(xrl_total_batch(1000, 2), 10);
	assert_int_equal(xrl_total_batch(1000000, 2), XRL_TOTAL_BATCH_MAX);
	assert_int_equal(xrl_total_batch(1000, 64), 1);
	assert_int_equal(xrl_total_batch(1000, 0), 20);
}

/* --shadow, --block and byte-only rules: the fields, the text, the compiled rule. */
static void test_rule_policy_fields(void **state)
{
	struct xrl_rule_def d;
	struct xrl_rule r;
	char text[256], err[XRL_ERRLEN];

	(void)state;
	parse_ok("10.0.0.0/8 --rate 100 --block 90s --block-spoofable --shadow", &d);
	assert_int_equal(d.policy, XRL_P_SHADOW | XRL_P_BLOCK);
	assert_true(d.block_ns == 90ULL * 1000000000ULL);
	xrl_rule_format(&d, text, sizeof(text));
	assert_string_equal(text, "10.0.0.0/8 --rate 100/s --burst 100 --per 32 --block 90s --block-spoofable --shadow");
	assert_int_equal(xrl_rule_compile(&d, 7, &r, err, sizeof(err)), 0);
	assert_int_equal(r.policy, XRL_P_SHADOW | XRL_P_BLOCK);
	assert_true(r.block_ns == 90ULL * 1000000000ULL);
	parse_ok("10.0.0.0/8 --rate 100 --block 2h --block-spoofable", &d);
	assert_int_equal(d.policy, XRL_P_BLOCK);
	assert_true(d.block_ns == 7200ULL * 1000000000ULL);
	xrl_rule_format(&d, text, sizeof(text));
	assert_string_equal(text, "10.0.0.0/8 --rate 100/s --burst 100 --per 32 --block 2h --block-spoofable");
	/* byte-only: no packet rate, a packet dimension that always admits */
	parse_ok("10.0.0.0/8 --bytes 1M --bytes-burst 64k", &d);
	assert_true(d.rate == 0 && d.burst == 0 && (d.flags & XRL_F_BYTES));
	xrl_rule_format(&d, text, sizeof(text));
	assert_string_equal(text, "10.0.0.0/8 --bytes 1000000 --bytes-burst 64000 --per 32");
	assert_int_equal(xrl_rule_compile(&d, 7, &r, err, sizeof(err)), 0);
	assert_true(r.pkt.interval == 0 && r.pkt.span == 0 && r.byte.interval != 0);
	/* a rule changed only in its policy is a new version: not the same parameters */
	{
		struct xrl_rule_def a, b;

		parse_ok("10.0.0.0/8 --rate 100", &a);
		parse_ok("10.0.0.0/8 --rate 100 --shadow", &b);
		assert_false(xrl_rule_same_params(&a, &b));
		parse_ok("10.0.0.0/8 --rate 100 --block 10s --block-spoofable", &b);
		assert_false(xrl_rule_same_params(&a, &b));
	}
}

/*
 * --block on a rule whose sources are not proven (every rule: UDP, ICMP
 * and TCP SYNs need no handshake) can be triggered by packets spoofing a
 * victim's address: refused unless --block-spoofable accepts it, with why
 * and how in the message.
 */
static void test_block_needs_opt_in(void **state)
{
	static const char *const refused[] = {
		"10.0.0.0/8 --rate 100 --block 30s",
		"10.0.0.0/8 --proto udp --dport 53 --rate 100 --block 10m",
		"10.0.0.0/8 --syn --rate 100 --block 1h --shadow",
	};
	struct xrl_rule_def d;
	char err[XRL_ERRLEN], text[256];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(refused); i++) {
		err[0] = 0;
		assert_int_equal(parse(refused[i], &d, err), -1);
		check_err("rule", refused[i], err, "spoofed");
		check_err("rule", refused[i], err, "add --block-spoofable");
	}
	assert_int_equal(parse("10.0.0.0/8 --rate 100 --block-spoofable", &d, err), -1);
	check_err("rule", "--block-spoofable alone", err, "--block-spoofable goes with --block DURATION");
	/* the opt-in loads, and rule save writes it back */
	parse_ok("10.0.0.0/8 --proto udp --rate 100 --block-spoofable --block 10m", &d);
	assert_int_equal(d.policy, XRL_P_BLOCK);
	xrl_rule_format(&d, text, sizeof(text));
	assert_string_equal(text, "10.0.0.0/8 --proto udp --rate 100/s --burst 100 --per 32 --block 10m --block-spoofable");
	parse_ok(text, &d);
	assert_false(xrl_rule_source_proven(&d));
	/* behind the SYN proxy a source has completed a handshake: --block is offered plainly */
	parse_ok("10.0.0.0/8 --proto tcp --dport 443 --rate 100 --block 10m --syn-proxy", &d);
	assert_true(xrl_rule_source_proven(&d));
	xrl_rule_format(&d, text, sizeof(text));
	assert_null(strstr(text, "--block-spoofable"));
	parse_ok(text, &d);
}

/* --syn-proxy: a TCP rule with --dport; kept by rule save; refused with --syn, --shadow, elsewhere */
static void test_rule_syn_proxy(void **state)
{
	static const struct { const char *line, *needle; } bad[] = {
		{ "10.0.0.0/8 --rate 100 --syn-proxy", "--proto tcp --dport PORT" },
		{ "10.0.0.0/8 --rate 100 --proto tcp --syn-proxy", "--proto tcp --dport PORT" },
		{ "10.0.0.0/8 --rate 100 --proto udp --dport 53 --syn-proxy", "--proto tcp --dport PORT" },
		{ "10.0.0.0/8 --rate 100 --proto tcp --dport 80 --syn --syn-proxy", "drop --syn" },
		{ "10.0.0.0/8 --rate 100 --proto tcp --dport 80 --shadow --syn-proxy", "drop --shadow" },
		{ "10.0.0.0/8 --allow --proto tcp --dport 80 --syn-proxy", "--syn-proxy" },
	};
	struct xrl_rule_def d, e;
	struct xrl_rule r;
	char text[256], err[XRL_ERRLEN];
	size_t i;

	(void)state;
	parse_ok("0.0.0.0/0 --proto tcp --dport 8080 --syn-proxy --rate 100/s --new-sources 50/s", &d);
	assert_int_equal(d.policy, XRL_P_SYNPROXY);
	xrl_rule_format(&d, text, sizeof(text));
	assert_string_equal(text, "0.0.0.0/0 --proto tcp --dport 8080 --rate 100/s --burst 100 --new-sources 50/s --new-burst 50 --per 32 --syn-proxy");
	parse_ok(text, &e);   /* what rule save writes reads back the same */
	assert_true(xrl_rule_same_params(&d, &e) && xrl_rule_same_match(&d, &e));
	assert_int_equal(xrl_rule_compile(&d, 3, &r, err, sizeof(err)), 0);
	assert_int_equal(r.policy, XRL_P_SYNPROXY);
	parse_ok("0.0.0.0/0 --proto tcp --dport 8080 --rate 100/s", &e);
	assert_false(xrl_rule_same_params(&d, &e));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		int rc = parse(bad[i].line, &d, err);

		if (rc != -1)
			fail_msg("'%s': returned %d, want -1", bad[i].line, rc);
		check_err("rule", bad[i].line, err, bad[i].needle);
	}
}

static void test_rule_blank_and_comments(void **state)
{
	static const char *t[] = {
		"", " ", "\t", "\n", "\r\n", "   \t  \n", "#", "# a comment",
		"   # 10.0.0.0/8 --rate 100", "#10.0.0.0/8 --bogus",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct xrl_rule_def d;
		char err[XRL_ERRLEN];
		int rc = parse(t[i], &d, err);

		if (rc != 0)
			fail_msg("'%s': returned %d (%s), want 0", t[i], rc, err);
	}
}

static void test_rule_bad(void **state)
{
	static const struct {
		const char *line;
		const char *needle;   /* the message must contain it */
		const char *needle2;
	} t[] = {
		{ "10.0.0.0/8 --rate 100 --per 33", "33", "--per" },
		{ "10.0.0.0/8 --rate 100 --per 129", "129", "--per" },
		{ "2001:db8::/32 --rate 100 --per 129", "129", "--per" },
		{ "10.0.0.0/8 --rate 100 --per -1", "-1", "--per" },
		{ "10.0.0.0/8 --proto sctp --rate 1", "sctp", NULL },
		{ "10.0.0.0/8 --proto tcp --dport 65536 --rate 1", "65536", "port" },
		{ "10.0.0.0/8 --proto tcp --dport -1 --rate 1", "-1", "port" },
		{ "10.0.0.0/8 --proto tcp --dport http --rate 1", "http", "port" },
		{ "10.0.0.0/8 --dport 80 --rate 1", "--dport", NULL },
		{ "10.0.0.0/8 --proto icmp --dport 80 --rate 1", "--dport", NULL },
		{ "10.0.0.0/8 --rate 100 --allow", "--allow", "--rate" },
		{ "10.0.0.0/8 --allow --rate 100", "--allow", "--rate" },
		{ "10.0.0.0/8 --deny --burst 5", "--deny", "--burst" },
		{ "10.0.0.0/8 --allow --per 24", "--allow", "--per" },
		{ "10.0.0.0/8 --deny --bytes 1M", "--deny", "--bytes" },
		{ "10.0.0.0/8 --allow --deny", "--allow", "--deny" },
		{ "10.0.0.0/8 --deny --allow", "--allow", "--deny" },
		{ "10.0.0.0/8", "--rate", NULL },
		{ "10.0.0.0/8 --burst 10", "--rate", NULL },
		{ "10.0.0.0/8 --bytes 1M --burst 10", "--burst", "--bytes-burst" },
		{ "10.0.0.0/8 --bytes 1M --total 5", "--total", "--rate" },
		{ "10.0.0.0/8 --bytes-burst 10k", "--rate", "--bytes RATE" },
		{ "10.0.0.0/8 --rate 100 --block", "--block", NULL },
		{ "10.0.0.0/8 --rate 100 --block 30", "'30'", "30s" },
		{ "10.0.0.0/8 --rate 100 --block 0s", "'0s'", "--block duration" },
		{ "10.0.0.0/8 --rate 100 --block -5s", "'-5s'", "--block duration" },
		{ "10.0.0.0/8 --rate 100 --block 5d", "'5d'", "--block duration" },
		{ "10.0.0.0/8 --rate 100 --block 1.5m", "'1.5m'", "--block duration" },
		{ "10.0.0.0/8 --rate 100 --block 169h", "'169h'", "at most 168h" },
		{ "10.0.0.0/8 --rate 100 --block 99999999999999999999s", "99999999999999999999s", NULL },
		{ "10.0.0.0/8 --deny --block 30s", "--deny", "--block" },
		{ "10.0.0.0/8 --allow --shadow", "--allow", "--shadow" },
		{ "10.0.0.0/8 --shadow", "--rate", NULL },
		{ "10.0.0.0/8 --rate 100 --shadow=1", "--shadow", NULL },
		{ "10.0.0.0/8 --proto tcp --dport 80", "--rate", NULL },
		{ "10.0.0.0/8 --rate 100 --frobnicate", "--frobnicate", NULL },
		{ "10.0.0.0/8 --rate 100 --frobnicate 5", "--frobnicate", NULL },
		{ "10.0.0.0/8 --rate 100 stray", "stray", NULL },
		{ "10.0.0.0/8 stray --rate 100", "stray", NULL },
		{ "10.0.0.0/8 10.0.0.0/9 --rate 100", "10.0.0.0/9", NULL },
		{ "2001:db8::/32 --proto icmp --rate 1", "icmp", NULL },
		{ "10.0.0.0/8 --proto icmpv6 --rate 1", "icmpv6", NULL },
		{ "10.0.0.0/8 --syn --proto udp --rate 1", "--syn", NULL },
		{ "10.0.0.0/8 --proto udp --syn --rate 1", "--syn", NULL },
		{ "10.0.0.0/8 --rate 100 --bytes-burst 64k", "--bytes-burst", NULL },
		{ "10.0.0.0/8 --rate", "--rate", NULL },
		{ "10.0.0.0/8 --rate 100 --burst", "--burst", NULL },
		{ "10.0.0.0/8 --rate 0", "'0'", NULL },
		{ "10.0.0.0/8 --rate 10000001/s", "10000001/s", NULL },
		{ "10.0.0.0/8 --rate 10/x", "10/x", NULL },
		{ "10.0.0.0/8 --rate 100 --burst 0", "'0'", "burst" },
		{ "10.0.0.0/8 --rate 100 --burst 4294967296", "4294967296", "burst" },
		{ "10.0.0.0/8 --rate 100 --bytes 0", "'0'", "byte rate" },
		{ "10.0.0.0/8 --rate 100 --bytes 2T", "2T", "byte rate" },
		{ "10.0.0.0/8 --rate 100 --bytes 10X", "10X", "byte rate" },
		{ "10.0.0.0/8 --rate 100 --bytes 1M --bytes-burst 0", "'0'", "byte burst" },
		{ "10.0.0.0/8 --rate 100 --new-burst 5", "--new-burst", "--new-sources" },
		{ "10.0.0.0/8 --rate 100 --new-sources 0", "'0'", NULL },
		{ "10.0.0.0/8 --rate 100 --new-sources 10000001/s", "10000001/s", NULL },
		{ "10.0.0.0/8 --rate 100 --new-sources 10/x", "10/x", NULL },
		{ "10.0.0.0/8 --rate 100 --new-sources", "--new-sources", NULL },
		{ "10.0.0.0/8 --rate 100 --new-sources 5 --new-burst 0", "'0'", "new-source burst" },
		{ "10.0.0.0/8 --rate 100 --new-sources 5 --new-burst 4294967296", "4294967296", "new-source burst" },
		{ "10.0.0.0/8 --rate 100 --new-sources 5 --new-burst x", "'x'", "new-source burst" },
		{ "10.0.0.0/8 --allow --new-sources 5", "--allow", "--new-sources" },
		{ "10.0.0.0/8 --deny --new-burst 5", "--deny", "--new-burst" },
		{ "10.0.0.0/8 --new-sources 5", "--rate", NULL },
		{ "10.0.0.0/8 --rate 100 --total-burst 5", "--total-burst", "--total" },
		{ "10.0.0.0/8 --rate 100 --total 0", "'0'", NULL },
		{ "10.0.0.0/8 --rate 100 --total 10000001/s", "10000001/s", NULL },
		{ "10.0.0.0/8 --rate 100 --total 10/x", "10/x", NULL },
		{ "10.0.0.0/8 --rate 100 --total", "--total", NULL },
		{ "10.0.0.0/8 --rate 100 --total 5 --total-burst 0", "'0'", "total burst" },
		{ "10.0.0.0/8 --rate 100 --total 5 --total-burst 4294967296", "4294967296", "total burst" },
		{ "10.0.0.0/8 --allow --total 5", "--allow", "--total" },
		{ "10.0.0.0/8 --total 5", "--rate", NULL },
		{ "10.0.0.1/8 --rate 100", "10.0.0.1/8", "10.0.0.0/8" },
		{ "10.0.0.0/33 --rate 100", "10.0.0.0/33", NULL },
		{ "300.1.1.1/24 --allow", "300.1.1.1/24", NULL },
		{ "--rate 100", NULL, NULL },
		{ "10.0.0.0/8 -x", "'-x'", NULL },
		{ "10.0.0.0/8 --rate 100 --syn --frob=1", "'--frob=1'", NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct xrl_rule_def d;
		char err[XRL_ERRLEN];
		int rc = parse(t[i].line, &d, err);

		if (rc != -1)
			fail_msg("'%s': returned %d, want -1", t[i].line, rc);
		check_err("rule", t[i].line, err, t[i].needle);
		check_err("rule", t[i].line, err, t[i].needle2);
	}
}

/*
 * An option written with one dash ("-rate 100", a likely typo) is refused,
 * and the message must name that word, not a neighbour.
 */
static void test_rule_single_dash_option(void **state)
{
	static const struct { const char *line, *needle; } t[] = {
		{ "10.0.0.0/8 -rate 100", "'-rate'" },
		{ "10.0.0.0/8 --rate 100 -burst 5", "'-burst'" },
		{ "10.0.0.0/8 --rate 100 -per 24", "'-per'" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct xrl_rule_def d;
		char err[XRL_ERRLEN];
		int rc = parse(t[i].line, &d, err);

		if (rc != -1)
			fail_msg("'%s': returned %d, want -1", t[i].line, rc);
		check_err("rule", t[i].line, err, t[i].needle);
	}
}

/* A flag given a value ("--syn=1") is refused, and not as needing a value. */
static void test_rule_flag_with_value(void **state)
{
	static const char *t[] = {
		"10.0.0.0/8 --rate 100 --syn=1",
		"10.0.0.0/8 --allow=yes",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct xrl_rule_def d;
		char err[XRL_ERRLEN];
		int rc = parse(t[i], &d, err);

		if (rc != -1)
			fail_msg("'%s': returned %d, want -1", t[i], rc);
		check_err("rule", t[i], err, strrchr(t[i], ' ') + 1);
		if (strstr(err, "needs a value"))
			fail_msg("'%s': message \"%s\" says the flag needs a value; it takes none",
				 t[i], err);
	}
}

static void test_rule_line_limits(void **state)
{
	char line[4096], err[XRL_ERRLEN];
	struct xrl_rule_def d;
	size_t n;
	int i;

	(void)state;
	/* too long */
	memset(line, ' ', sizeof(line));
	memcpy(line, "10.0.0.0/8 --rate 100", 21);
	line[2000] = 0;
	assert_int_equal(parse(line, &d, err), -1);
	check_err("rule", "(2000 characters)", err, NULL);

	/* too many words */
	n = (size_t)snprintf(line, sizeof(line), "10.0.0.0/8");
	for (i = 0; i < 70; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " --syn");
	assert_int_equal(parse(line, &d, err), -1);
	check_err("rule", "(70 words)", err, NULL);

	/* many words, but not too many, are fine: every option once, padded with tabs */
	snprintf(line, sizeof(line), "10.0.0.0/8 --rate 100 --burst 5 --bytes 1M --bytes-burst 64k"
		 " --per 24 --proto tcp --dport 80 --syn\t\t\t\t\t\t\t\t\t\t   # a comment");
	parse_ok(line, &d);
	assert_int_equal(d.flags, XRL_F_PROTO | XRL_F_SYN | XRL_F_DPORT | XRL_F_BYTES);
	/* a word repeated is refused, before the word count matters (was: accepted) */
	n = (size_t)snprintf(line, sizeof(line), "10.0.0.0/8 --rate 100");
	for (i = 0; i < 40; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " --syn");
	assert_int_equal(parse(line, &d, err), -1);
	check_err("rule", "(--syn 40 times)", err, "--syn given twice");
}

/*
 * Each option at most once: a repeat is refused, naming the option (the
 * last must not win silently: "--rate 10 --rate 20" is not a 20/s rule).
 */
static void test_rule_option_twice(void **state)
{
	static const char *t[][2] = {
		{ "10.0.0.0/8 --rate 10 --rate 20", "--rate" },
		{ "10.0.0.0/8 --rate 10 --burst 1 --burst 2", "--burst" },
		{ "10.0.0.0/8 --rate 10 --bytes 1M --bytes 2M", "--bytes" },
		{ "10.0.0.0/8 --rate 10 --bytes 1M --bytes-burst 1k --bytes-burst 2k", "--bytes-burst" },
		{ "10.0.0.0/8 --rate 10 --per 24 --per 16", "--per" },
		{ "10.0.0.0/8 --rate 10 --proto tcp --proto udp", "--proto" },
		{ "10.0.0.0/8 --rate 10 --proto tcp --dport 1 --dport 2", "--dport" },
		{ "10.0.0.0/8 --rate 10 --syn --syn", "--syn" },
		{ "10.0.0.0/8 --rate 10 --global --global", "--global" },
		{ "10.0.0.0/8 --allow --allow", "--allow" },
		{ "10.0.0.0/8 --deny --deny", "--deny" },
		{ "10.0.0.0/8 --rate=10 --rate 10", "--rate" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct xrl_rule_def d;
		char err[XRL_ERRLEN], want[64];

		if (parse(t[i][0], &d, err) != -1)
			fail_msg("'%s': accepted; an option given twice must be refused", t[i][0]);
		snprintf(want, sizeof(want), "%s given twice", t[i][1]);
		check_err("rule", t[i][0], err, want);
	}
}

/* Only whole option names: "--ra" is not --rate (abbreviations grow ambiguous). */
static void test_rule_no_abbreviations(void **state)
{
	static const char *t[] = {
		"10.0.0.0/8 --ra 10", "10.0.0.0/8 --rate 10 --glob", "10.0.0.0/8 --rate 10 --b 5",
		"10.0.0.0/8 --rate 10 --bytes 1M --bytes-b 1k", "10.0.0.0/8 --al", "10.0.0.0/8 --de",
		"10.0.0.0/8 --rate 10 --pro tcp", "10.0.0.0/8 --rate 10 --proto tcp --dp 80",
		"10.0.0.0/8 --rate 10 --sy", "10.0.0.0/8 --rate 10 --pe 24", "10.0.0.0/8 --rates 10",
		"10.0.0.0/8 --rate 10 --shad", "10.0.0.0/8 --rate 10 --bl 5s",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct xrl_rule_def d;
		char err[XRL_ERRLEN], want[64];
		const char *w = strrchr(t[i], '-') - 1;

		while (w[-1] != ' ')
			w--;
		snprintf(want, sizeof(want), "unknown option '%.*s'", (int)strcspn(w, " "), w);
		if (parse(t[i], &d, err) != -1)
			fail_msg("'%s': accepted; an abbreviated option must be refused", t[i]);
		check_err("rule", t[i], err, want);
		check_err("rule", t[i], err, "--rate, --burst, --bytes, --bytes-burst, --new-sources, --new-burst, --total, --total-burst, --per, --proto, --dport, --dst, --syn, --global, --algo, --allow, --deny, --shadow, --block, --block-spoofable or --syn-proxy");
	}
}

/* a string literal's bytes, its NULs included, without the terminating one */
#define BYTES(lit) lit, sizeof(lit) - 1

/* rule-file helper: write len bytes to a temporary file; its name in path */
static void write_file(char *path, size_t plen, const char *data, size_t len)
{
	FILE *f;
	int fd;

	snprintf(path, plen, "/tmp/test_rule.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

/*
 * The rules file the package installs (/etc/xrl/rules) loads as an empty
 * rule set, and each commented example, uncommented, is a valid rule of a
 * valid file (no two with the same prefix and match).
 */
static void test_default_rules_file(void **state)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	const char *file = XRL_SRC_DIR "/scripts/etc/rules";
	char err[XRL_ERRLEN], path[64], line[1024], examples[8192] = "";
	size_t w = 0;
	int n = -1, lines = 0, rc;
	FILE *f;

	(void)state;
	assert_int_equal(xrl_rules_read_file(file, defs, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	f = fopen(file, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (line[0] == '#' && strchr("0123456789abcdef", line[1]) && line[1] && strchr(line, '/')) {
			w += (size_t)snprintf(examples + w, sizeof(examples) - w, "%s", line + 1);
			lines++;
		}
	fclose(f);
	assert_true(lines >= 5);
	write_file(path, sizeof(path), examples, w);
	n = -1;
	rc = xrl_rules_read_file(path, defs, &n, err, sizeof(err));
	unlink(path);
	if (rc)
		fail_msg("the examples of %s: %s", file, err);
	assert_int_equal(n, lines);
}

/* XRL_OPT_NESTED: usage shows the row inside the brackets of the row before */
static void test_opts_nested_usage(void **state)
{
	struct o { bool a; const char *b; };
	static const struct xrl_opt rows[] = {
		{ "watch", 0, NULL, xrl_opt_flag, XRL_OPT_FIELD(struct o, a), .modes = 1 },
		{ "interval", 'd', "SEC", xrl_opt_str, XRL_OPT_FIELD(struct o, b), .modes = 1,
		  .flags = XRL_OPT_NESTED },
		{ "count", 'n', "N", xrl_opt_str, XRL_OPT_FIELD(struct o, b), .modes = 1 },
	};
	const struct xrl_opt_table t = { .name = "t", .opts = rows, .n = 3, .nmodes = 1 };
	char u[256];

	(void)state;
	xrl_opts_usage(&t, 0, u, sizeof(u));
	assert_string_equal(u, "[--watch [-d|--interval SEC]] [-n|--count N]");
}

/*
 * A NUL byte in a rule file is refused with its line: it must not end the
 * line for the parser ("10.3.0.0/16 --deny\0 --rate 7/s" would load as a
 * deny), nor be reported as "line too long".
 */
static void test_rules_file_nul(void **state)
{
	static const struct { const char *data; size_t len; const char *where; } t[] = {
		{ BYTES("10.3.0.0/16 --deny\0 --rate 7/s"), ":1: NUL byte at column 19" },
		{ BYTES("10.3.0.0/16 --deny\n10.4.0.0/16 --rate 5\0 --burst 9\n10.5.0.0/16 --deny\n"),
		  ":2: NUL byte at column 21" },
		{ BYTES("# comment\0 with a NUL\n"), ":1: NUL byte at column 10" },
		{ BYTES("\0"), ":1: NUL byte at column 1" },
	};
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	char path[64], err[XRL_ERRLEN];
	size_t i;
	int n;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		write_file(path, sizeof(path), t[i].data, t[i].len);
		err[0] = 0;
		n = -1;
		assert_int_equal(xrl_rules_read_file(path, defs, &n, err, sizeof(err)), -EINVAL);
		check_err("rule file", t[i].where, err, t[i].where);
		check_err("rule file", t[i].where, err, path);
		if (strstr(err, "too long"))
			fail_msg("file %zu: a NUL is reported as a long line: %s", i, err);
		unlink(path);
	}
	/* without the NUL the same lines load */
	write_file(path, sizeof(path), BYTES("10.3.0.0/16 --deny --rate 7/s"));
	assert_int_equal(xrl_rules_read_file(path, defs, &n, err, sizeof(err)), -EINVAL);
	check_err("rule file", "deny with rate", err, "--deny takes no --rate");
	unlink(path);
	write_file(path, sizeof(path), BYTES("10.3.0.0/16 --deny\n10.4.0.0/16 --rate 5 --burst 9"));
	assert_int_equal(xrl_rules_read_file(path, defs, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(defs[1].burst, 9);
	unlink(path);
	/* a directory is not an empty rule file (loaded as one, it would empty the rule set) */
	n = -1;
	assert_int_equal(xrl_rules_read_file("/", defs, &n, err, sizeof(err)), -EISDIR);
	check_err("rule file", "/", err, "cannot read /: Is a directory");
	/* a repeated option in a file names its line */
	write_file(path, sizeof(path), BYTES("10.3.0.0/16 --deny\n10.4.0.0/16 --rate 5 --rate 7\n"));
	assert_int_equal(xrl_rules_read_file(path, defs, &n, err, sizeof(err)), -EINVAL);
	check_err("rule file", "--rate twice on line 2", err, ":2: --rate given twice");
	unlink(path);
}

/*
 * A rules file is read whole or refused, never cut short: a line over 1022
 * characters is refused at its line number as soon as it passes the limit
 * (never read whole first: an allocation failure on a huge line must not
 * be taken for the end of the file, loading the lines before it and
 * dropping the rest), an endless file (/dev/zero) is refused at once, and a read
 * error is an error, not an end (*count untouched in every case).
 */
static void test_rules_file_whole_or_nothing(void **state)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static char data[8192];
	char path[64], err[XRL_ERRLEN];
	size_t n;
	int count;

	(void)state;
	/* the longest line accepted: 1022 characters, a rule and a comment */
	n = (size_t)snprintf(data, sizeof(data), "10.1.0.0/16 --deny # ");
	memset(data + n, 'x', 1022 - n);
	n = 1022;
	n += (size_t)snprintf(data + n, sizeof(data) - n, "\n10.2.0.0/16 --deny\n");
	write_file(path, sizeof(path), data, n);
	assert_int_equal(xrl_rules_read_file(path, defs, &count, err, sizeof(err)), 0);
	assert_int_equal(count, 2);
	unlink(path);
	/* one more character on a line in the middle: refused at that line */
	n = (size_t)snprintf(data, sizeof(data), "10.1.0.0/16 --deny\n10.2.0.0/16 --deny\n10.3.0.0/16 --deny # ");
	memset(data + n, 'x', 2000);
	n += 2000;
	n += (size_t)snprintf(data + n, sizeof(data) - n, "\n10.4.0.0/16 --deny\n");
	write_file(path, sizeof(path), data, n);
	count = -7;
	err[0] = 0;
	assert_int_equal(xrl_rules_read_file(path, defs, &count, err, sizeof(err)), -EINVAL);
	check_err("rule file", "a 2000-character line 3", err, ":3: line longer than 1022 characters");
	check_err("rule file", "a 2000-character line 3", err, path);
	assert_int_equal(count, -7);
	unlink(path);
	/* endless: refused at its first byte, not read until memory runs out */
	count = -7;
	assert_int_equal(xrl_rules_read_file("/dev/zero", defs, &count, err, sizeof(err)), -EINVAL);
	check_err("rule file", "/dev/zero", err, "/dev/zero:1: NUL byte at column 1");
	assert_int_equal(count, -7);
	/* a read error is not the end of an (empty) file: /proc/self/mem fails at offset 0 */
	count = -7;
	assert_int_equal(xrl_rules_read_file("/proc/self/mem", defs, &count, err, sizeof(err)), -EIO);
	check_err("rule file", "/proc/self/mem", err, "cannot read /proc/self/mem: Input/output error");
	assert_int_equal(count, -7);
	/* a rule given twice names the line that repeats it, whatever lies between */
	write_file(path, sizeof(path), BYTES("10.1.0.0/16 --deny\n10.2.0.0/16 --deny\n10.3.0.0/16 --deny\n"
					     "10.2.0.0/16 --rate 5/s\n10.1.0.0/16 --allow\n"));
	assert_int_equal(xrl_rules_read_file(path, defs, &count, err, sizeof(err)), -EINVAL);
	check_err("rule file", "10.2 twice", err, ":4: rule 10.2.0.0/16 appears twice");
	unlink(path);
}

/* Parsing again after an error starts afresh (getopt state is reset). */
static void test_rule_parse_repeated(void **state)
{
	struct xrl_rule_def d;
	char err[XRL_ERRLEN];
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		assert_int_equal(parse("10.0.0.0/8 --rate 100 --frobnicate", &d, err), -1);
		assert_int_equal(parse("10.0.0.0/8 --rate", &d, err), -1);
		assert_int_equal(parse("10.0.0.0/8 --rate 100 stray", &d, err), -1);
		parse_ok("10.0.0.0/8 --rate 100 --burst 5", &d);
		assert_int_equal(d.burst, 5);
		parse_ok("2001:db8::/32 --proto tcp --dport 443 --rate 7/m", &d);
		assert_int_equal(d.dport, 443);
		assert_int_equal(d.rate_period, 60);
	}
}

/* MATCH mode: a rule is named by its prefix and match fields only. */
static void test_rule_match_mode(void **state)
{
	char a0[] = "10.1.0.0/16", a1[] = "--proto", a2[] = "tcp", a3[] = "--dport", a4[] = "80";
	char a5[] = "--rate", a6[] = "10", a7[] = "--allow";
	char *argv1[] = { a0, a1, a2, a3, a4, NULL };
	char *argv2[] = { a0, a5, a6, NULL };
	char *argv3[] = { a0, a7, NULL };
	char *argv4[] = { a0, NULL };
	struct xrl_rule_def d, full;
	char err[XRL_ERRLEN] = "";

	(void)state;
	if (xrl_rule_parse_args(5, argv1, XRL_RULE_MATCH, &d, err, sizeof(err)))
		fail_msg("match refused: %s", err);
	assert_int_equal(d.flags, XRL_F_PROTO | XRL_F_DPORT);
	assert_int_equal(d.dport, 80);
	parse_ok("10.1.0.0/16 --proto tcp --dport 80 --rate 10", &full);
	assert_true(xrl_rule_same_match(&d, &full));

	err[0] = 0;
	assert_int_equal(xrl_rule_parse_args(3, argv2, XRL_RULE_MATCH, &d, err, sizeof(err)), -1);
	check_err("match", "--rate", err, NULL);
	err[0] = 0;
	assert_int_equal(xrl_rule_parse_args(2, argv3, XRL_RULE_MATCH, &d, err, sizeof(err)), -1);
	check_err("match", "--allow", err, NULL);

	assert_int_equal(xrl_rule_parse_args(1, argv4, XRL_RULE_MATCH, &d, err, sizeof(err)), 0);
	assert_int_equal(d.flags, 0);
	/* ADD mode with the prefix alone needs --rate */
	err[0] = 0;
	assert_int_equal(xrl_rule_parse_args(1, argv4, XRL_RULE_ADD, &d, err, sizeof(err)), -1);
	check_err("add", "10.1.0.0/16", err, "--rate");
}

static void test_same_match(void **state)
{
	struct xrl_rule_def a, b;

	(void)state;
	parse_ok("10.0.0.0/8 --proto tcp --dport 80 --rate 10", &a);
	parse_ok("10.0.0.0/8 --proto tcp --dport 80 --rate 20 --burst 3", &b);
	assert_true(xrl_rule_same_match(&a, &b));
	assert_false(xrl_rule_same_params(&a, &b));
	parse_ok("10.0.0.0/8 --proto tcp --dport 80 --deny", &b);
	assert_true(xrl_rule_same_match(&a, &b));
	assert_false(xrl_rule_same_params(&a, &b));
	parse_ok("10.0.0.0/8 --proto tcp --dport 81 --rate 10", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	parse_ok("10.0.0.0/8 --proto udp --dport 80 --rate 10", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	parse_ok("10.0.0.0/8 --proto tcp --rate 10", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	parse_ok("10.0.0.0/8 --proto tcp --dport 80 --syn --rate 10", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	parse_ok("10.0.0.0/9 --proto tcp --dport 80 --rate 10", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	parse_ok("11.0.0.0/8 --proto tcp --dport 80 --rate 10", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	parse_ok("0.0.0.0/0 --rate 10", &a);
	parse_ok("::/0 --rate 10", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	/* --syn alone and --proto tcp --syn are the same match */
	parse_ok("10.0.0.0/8 --syn --rate 10", &a);
	parse_ok("10.0.0.0/8 --proto tcp --syn --rate 10", &b);
	assert_true(xrl_rule_same_match(&a, &b));
	assert_true(xrl_rule_same_params(&a, &b));
}

/* ------------------------------------------------------------------ */
/* format / parse round trip                                           */

/* Is word one of the space-separated words of s? */
static int has_word(const char *s, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = strstr(s, word); p; p = strstr(p + 1, word))
		if ((p == s || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

/*
 * Every row of the rule table, through its example, in both families:
 * parse, write back (`rule save`), parse that again (`rule load`): the
 * same rule, the word in the text, the same text again, and the same name
 * in the fleet's Redis keys. A new row is covered by its row alone.
 */
static void test_rule_rows_round_trip(void **state)
{
	static const char *const pfx[] = { "198.51.100.0/24", "2001:db8::/32" };
	const struct xrl_opt_table *t = &xrl_rule_opts;
	int i, f, covered = 0;

	(void)state;
	for (i = 0; i < t->n; i++) {
		const struct xrl_opt *o = &t->opts[i];
		char word[64];
		int loaded = 0;

		if (!(o->modes & (1u << XRL_RULE_ADD)))
			continue;
		snprintf(word, sizeof(word), "--%s", o->name);
		if (!o->example || !has_word(o->example, word))
			fail_msg("rule word %s: its row has no example that uses it", word);
		if (!o->format)
			fail_msg("rule word %s: its row has no format: `rule save` would drop it", word);
		for (f = 0; f < 2; f++) {
			struct xrl_rule_def d, back;
			char line[512], text[512], again[512], err[XRL_ERRLEN];
			char name[17], name_back[17];

			snprintf(line, sizeof(line), "%s %s", pfx[f], o->example);
			if (xrl_rule_parse_line(line, &d, err, sizeof(err)) != 1) {
				/* an example of one family (--dst): refused for that reason only */
				if (strstr(err, "a packet's source and destination are of one family"))
					continue;
				fail_msg("%s: refused: %s", line, err);
			}
			loaded++;
			xrl_rule_format(&d, text, sizeof(text));
			if (!has_word(text, word))
				fail_msg("%s: saved as \"%s\", without %s", line, text, word);
			if (xrl_rule_parse_line(text, &back, err, sizeof(err)) != 1)
				fail_msg("%s: its saved text \"%s\" is refused: %s", line, text, err);
			if (memcmp(&d, &back, sizeof(d)) || !xrl_rule_same_match(&d, &back) ||
			    !xrl_rule_same_params(&d, &back))
				fail_msg("%s: saved as \"%s\", which loads as another rule", line, text);
			xrl_rule_format(&back, again, sizeof(again));
			if (strcmp(text, again))
				fail_msg("%s: saved as \"%s\", then as \"%s\"", line, text, again);
			xrl_fleet_rule_name(&d, name);
			xrl_fleet_rule_name(&back, name_back);
			if (strcmp(name, name_back))
				fail_msg("%s: fleet name %s, %s after save and load", line, name, name_back);
		}
		if (!loaded)
			fail_msg("rule word %s: its example loads with neither prefix", word);
		covered++;
	}
	assert_int_equal(covered, t->n);
}

/*
 * `rule save`'s text of rules using every word, and the fleet's names of
 * them (a hash of the text): hosts of one fleet running different builds
 * must name a rule alike, or its budget splits in two.
 */
static void test_rule_save_text_fixed(void **state)
{
	static const struct { const char *line, *text, *name; } cases[] = {
	{ "198.51.100.0/24 --rate 100/s",
	  "198.51.100.0/24 --rate 100/s --burst 100 --per 32", "6aa8a57e881e8de3" },
	{ "198.51.100.0/24 --rate 6000/m --burst 7",
	  "198.51.100.0/24 --rate 6000/m --burst 7 --per 32", "dcffc01eafb5ca8e" },
	{ "198.51.100.0/24 --bytes 10M",
	  "198.51.100.0/24 --bytes 10000000 --bytes-burst 10000000 --per 32", "6819ec6e81345770" },
	{ "198.51.100.0/24 --rate 10/s --bytes 1M --bytes-burst 64k",
	  "198.51.100.0/24 --rate 10/s --burst 10 --bytes 1000000 --bytes-burst 64000 --per 32", "cde531c8e1343597" },
	{ "198.51.100.0/24 --rate 10/s --new-sources 50/m",
	  "198.51.100.0/24 --rate 10/s --burst 10 --new-sources 50/m --new-burst 1 --per 32", "c05a891aec99d34b" },
	{ "198.51.100.0/24 --rate 10/s --new-sources 5/s --new-burst 9",
	  "198.51.100.0/24 --rate 10/s --burst 10 --new-sources 5/s --new-burst 9 --per 32", "72ce8d335db94343" },
	{ "198.51.100.0/24 --rate 10/s --total 1000/h",
	  "198.51.100.0/24 --rate 10/s --burst 10 --total 1000/h --total-burst 1 --per 32", "8f6e324b1ef371ed" },
	{ "198.51.100.0/24 --rate 10/s --total 100/s --total-burst 150",
	  "198.51.100.0/24 --rate 10/s --burst 10 --total 100/s --total-burst 150 --per 32", "f244448ca700dd5d" },
	{ "198.51.100.0/24 --rate 10/s --per 24",
	  "198.51.100.0/24 --rate 10/s --burst 10 --per 24", "c8969f6e1a9c5ffa" },
	{ "198.51.100.0/24 --proto udp --rate 10/s",
	  "198.51.100.0/24 --proto udp --rate 10/s --burst 10 --per 32", "c314d84b3fb30136" },
	{ "198.51.100.0/24 --proto tcp --dport 443 --rate 10/s",
	  "198.51.100.0/24 --proto tcp --dport 443 --rate 10/s --burst 10 --per 32", "df6729f898f016aa" },
	{ "198.51.100.0/24 --syn --rate 10/s",
	  "198.51.100.0/24 --syn --rate 10/s --burst 10 --per 32", "f5221745dfb28b69" },
	{ "198.51.100.0/24 --rate 10/s --global",
	  "198.51.100.0/24 --rate 10/s --burst 10 --per 32 --global", "0de99cd7d51d5182" },
	{ "198.51.100.0/24 --rate 10/s --algo sliding-window",
	  "198.51.100.0/24 --rate 10/s --algo sliding-window --per 32", "678579567a0b9b28" },
	{ "198.51.100.0/24 --allow",
	  "198.51.100.0/24 --allow", "3b9496b46fbd25bc" },
	{ "198.51.100.0/24 --proto udp --dport 53 --deny",
	  "198.51.100.0/24 --proto udp --dport 53 --deny", "3c61a3fb7a5d646d" },
	{ "198.51.100.0/24 --rate 10/s --shadow",
	  "198.51.100.0/24 --rate 10/s --burst 10 --per 32 --shadow", "d1b69feef9daf7ad" },
	{ "198.51.100.0/24 --rate 10/s --block 10m --block-spoofable",
	  "198.51.100.0/24 --rate 10/s --burst 10 --per 32 --block 10m --block-spoofable", "4aa4f3ae8180c965" },
	{ "198.51.100.0/24 --rate 10/s --block 30s --block-spoofable",
	  "198.51.100.0/24 --rate 10/s --burst 10 --per 32 --block 30s --block-spoofable", "c8590bd88a393c71" },
	{ "198.51.100.0/24 --proto tcp --dport 443 --rate 10/s --syn-proxy --block 1h",
	  "198.51.100.0/24 --proto tcp --dport 443 --rate 10/s --burst 10 --per 32 --block 1h --syn-proxy", "ae5a9d0f8452186b" },
	{ "198.51.100.0/24 --proto tcp --syn --dport 80 --rate 1/h --burst 3 --algo token-bucket --bytes 2G/s --new-sources 7/m --total 9/s --per 20 --shadow --block 90m --block-spoofable",
	  "198.51.100.0/24 --proto tcp --dport 80 --syn --rate 1/h --burst 3 --bytes 2000000000 --bytes-burst 2000000000 --new-sources 7/m --new-burst 1 --total 9/s --total-burst 9 --per 20 --block 90m --block-spoofable --shadow", "c031f4e87233a57d" },
	{ "198.51.100.0/24 --shadow --global --total-burst 4 --total 3/m --new-burst 2 --new-sources 1/h --per 16 --rate 99/m --proto icmp",
	  "198.51.100.0/24 --proto icmp --rate 99/m --burst 1 --new-sources 1/h --new-burst 2 --total 3/m --total-burst 4 --per 16 --global --shadow", "d5b6baa5d12e41d2" },
	/* --dport sets in their normal form, --dst */
	{ "198.51.100.0/24 --proto tcp --dport 8000-8100,443,80 --rate 10/s --global",
	  "198.51.100.0/24 --proto tcp --dport 80,443,8000-8100 --rate 10/s --burst 10 --per 32 --global", "406e92046c4d7011" },
	{ "198.51.100.0/24 --dst 192.0.2.0/28 --proto udp --dport 53 --deny",
	  "198.51.100.0/24 --proto udp --dport 53 --deny --dst 192.0.2.0/28", "00d945cac169894b" },
	{ "2001:db8::/32 --rate 100/s",
	  "2001:db8::/32 --rate 100/s --burst 100 --per 64", "f7ebdc4321fea45b" },
	{ "2001:db8::/32 --rate 6000/m --burst 7",
	  "2001:db8::/32 --rate 6000/m --burst 7 --per 64", "c453b65bcf90b364" },
	{ "2001:db8::/32 --bytes 10M",
	  "2001:db8::/32 --bytes 10000000 --bytes-burst 10000000 --per 64", "1ad49d80112c16ba" },
	{ "2001:db8::/32 --rate 10/s --bytes 1M --bytes-burst 64k",
	  "2001:db8::/32 --rate 10/s --burst 10 --bytes 1000000 --bytes-burst 64000 --per 64", "399e6d4abcd97dff" },
	{ "2001:db8::/32 --rate 10/s --new-sources 50/m",
	  "2001:db8::/32 --rate 10/s --burst 10 --new-sources 50/m --new-burst 1 --per 64", "583c281f4e4b142d" },
	{ "2001:db8::/32 --rate 10/s --new-sources 5/s --new-burst 9",
	  "2001:db8::/32 --rate 10/s --burst 10 --new-sources 5/s --new-burst 9 --per 64", "b0133b236a79bc47" },
	{ "2001:db8::/32 --rate 10/s --total 1000/h",
	  "2001:db8::/32 --rate 10/s --burst 10 --total 1000/h --total-burst 1 --per 64", "dd19d04e2406d59b" },
	{ "2001:db8::/32 --rate 10/s --total 100/s --total-burst 150",
	  "2001:db8::/32 --rate 10/s --burst 10 --total 100/s --total-burst 150 --per 64", "d89727856bc17731" },
	{ "2001:db8::/32 --rate 10/s --per 24",
	  "2001:db8::/32 --rate 10/s --burst 10 --per 24", "f581fb06bda2e8f5" },
	{ "2001:db8::/32 --proto udp --rate 10/s",
	  "2001:db8::/32 --proto udp --rate 10/s --burst 10 --per 64", "301e6124cadc89a6" },
	{ "2001:db8::/32 --proto tcp --dport 443 --rate 10/s",
	  "2001:db8::/32 --proto tcp --dport 443 --rate 10/s --burst 10 --per 64", "0a2d95291bb8a862" },
	{ "2001:db8::/32 --proto udp --dport 53,5353-5360 --dst 2001:db8:ffff::/48 --rate 10/s",
	  "2001:db8::/32 --proto udp --dport 53,5353-5360 --rate 10/s --burst 10 --per 64 --dst 2001:db8:ffff::/48", "72e26e9586b77493" },
	{ "2001:db8::/32 --syn --rate 10/s",
	  "2001:db8::/32 --syn --rate 10/s --burst 10 --per 64", "0ac36969ea8f5955" },
	{ "2001:db8::/32 --rate 10/s --global",
	  "2001:db8::/32 --rate 10/s --burst 10 --per 64 --global", "7242a0e30afc70de" },
	{ "2001:db8::/32 --rate 10/s --algo sliding-window",
	  "2001:db8::/32 --rate 10/s --algo sliding-window --per 64", "e65aad4131bdbb32" },
	{ "2001:db8::/32 --allow",
	  "2001:db8::/32 --allow", "9c747aecf55a9367" },
	{ "2001:db8::/32 --proto udp --dport 53 --deny",
	  "2001:db8::/32 --proto udp --dport 53 --deny", "cc2a1c109a570dde" },
	{ "2001:db8::/32 --rate 10/s --shadow",
	  "2001:db8::/32 --rate 10/s --burst 10 --per 64 --shadow", "fd1427eadf62d071" },
	{ "2001:db8::/32 --rate 10/s --block 10m --block-spoofable",
	  "2001:db8::/32 --rate 10/s --burst 10 --per 64 --block 10m --block-spoofable", "e3ec62616ad3d801" },
	{ "2001:db8::/32 --rate 10/s --block 30s --block-spoofable",
	  "2001:db8::/32 --rate 10/s --burst 10 --per 64 --block 30s --block-spoofable", "f9961b275a129415" },
	{ "2001:db8::/32 --proto tcp --dport 443 --rate 10/s --syn-proxy --block 1h",
	  "2001:db8::/32 --proto tcp --dport 443 --rate 10/s --burst 10 --per 64 --block 1h --syn-proxy", "a057c83a2ea59d13" },
	{ "2001:db8::/32 --proto tcp --syn --dport 80 --rate 1/h --burst 3 --algo token-bucket --bytes 2G/s --new-sources 7/m --total 9/s --per 20 --shadow --block 90m --block-spoofable",
	  "2001:db8::/32 --proto tcp --dport 80 --syn --rate 1/h --burst 3 --bytes 2000000000 --bytes-burst 2000000000 --new-sources 7/m --new-burst 1 --total 9/s --total-burst 9 --per 20 --block 90m --block-spoofable --shadow", "f0db79a4e18fff96" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct xrl_rule_def d;
		char text[512], err[XRL_ERRLEN], name[17];

		if (xrl_rule_parse_line(cases[i].line, &d, err, sizeof(err)) != 1)
			fail_msg("%s: refused: %s", cases[i].line, err);
		xrl_rule_format(&d, text, sizeof(text));
		if (strcmp(text, cases[i].text))
			fail_msg("%s: saved as \"%s\", expected \"%s\"", cases[i].line, text, cases[i].text);
		xrl_fleet_rule_name(&d, name);
		if (strcmp(name, cases[i].name))
			fail_msg("%s: fleet name %s, expected %s", cases[i].line, name, cases[i].name);
	}
}

static void test_round_trip(void **state)
{
	static const char *t[] = {
		"10.0.0.0/8 --rate 100",
		"203.0.113.0/24 --rate 6000/m --burst 50 --per 24",
		"2001:db8::/32 --rate 1000/h --per 48",
		"0.0.0.0/0 --rate 10000000/s --burst 4294967295",
		"::/0 --allow",
		"::/0 --rate 1/h --per 0",
		"192.0.2.1 --deny",
		"2001:db8::1 --rate 3",
		"10.1.0.0/16 --proto tcp --dport 80 --rate 10",
		"10.1.0.0/16 --proto udp --dport 53 --rate 5/s --bytes 10M --bytes-burst 64k",
		"10.1.0.0/16 --rate 5/s --bytes 10M",
		"10.1.0.0/16 --syn --rate 3/s",
		"10.1.0.0/16 --proto tcp --syn --rate 3/s",
		"10.1.0.0/16 --proto tcp --syn --dport 443 --rate 7/m",
		"10.1.0.0/16 --proto tcp --dport 0 --rate 7/m",
		"10.1.0.0/16 --proto udp --dport 65535 --rate 36000000000/h",
		"2001:db8:1::/48 --proto icmpv6 --rate 1/s --per 128",
		"198.51.100.0/24 --proto icmp --deny",
		"198.51.100.0/24 --proto icmp --rate 1/m",
		"2001:db8::/32 --proto tcp --dport 22 --syn --allow",
		"2001:db8::/32 --syn --deny",
		"10.0.0.0/8 --rate 1/h --burst 1 --per 0",
		"10.0.0.0/8 --rate 36000000000/h",
		"10.0.0.0/8 --rate 599999999/m --burst 3",
		"10.0.0.0/8 --rate 5 --bytes 1099511627776 --bytes-burst 1T",
		"10.0.0.0/8 --rate 5 --bytes 1 --bytes-burst 1",
		"fe80::/10 --proto udp --dport 546 --rate 10 --per 10",
		"128.0.0.0/1 --rate 1 --per 1",
		"10.0.0.0/8 --rate 100 --new-sources 1000",
		"10.0.0.0/8 --rate 100 --new-sources 60/m --new-burst 7 --global",
		"10.0.0.0/8 --bytes 1M",
		"10.0.0.0/8 --bytes 1M --bytes-burst 64k --per 24",
		"2001:db8::/32 --bytes 10k --shadow",
		"10.0.0.0/8 --rate 100 --shadow",
		"10.0.0.0/8 --rate 100 --block 30s --block-spoofable",
		"10.0.0.0/8 --rate 100 --block 90s --block-spoofable --shadow",
		"10.0.0.0/8 --rate 100 --block 10m --block-spoofable",
		"10.0.0.0/8 --rate 100 --block 168h --block-spoofable --per 24",
		"10.0.0.0/8 --rate 100 --block 2min --block-spoofable",
		"10.0.0.0/8 --rate 100 --block 1hour --block-spoofable --global",
		"10.0.0.0/8 --bytes 1M --block 5s --block-spoofable",
		"2001:db8::/32 --rate 1/h --bytes 1M --new-sources 1/h --new-burst 4294967295",
		"10.0.0.0/8 --rate 100 --total 10000",
		"10.0.0.0/8 --rate 100 --new-sources 5/m --total 600/m --total-burst 3 --per 24 --global",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct xrl_rule_def a, b;
		char text[512], text2[512], err[XRL_ERRLEN];
		int rc;

		parse_ok(t[i], &a);
		memset(text, 0, sizeof(text));
		xrl_rule_format(&a, text, sizeof(text));
		rc = parse(text, &b, err);
		if (rc != 1)
			fail_msg("'%s' formatted as '%s', which parses to %d: %s", t[i], text, rc, err);
		if (!xrl_rule_same_match(&a, &b) || !xrl_rule_same_params(&a, &b))
			fail_msg("'%s' formatted as '%s' parses to a different rule", t[i], text);
		assert_int_equal(a.flags, b.flags);
		assert_int_equal(a.proto, b.proto);
		xrl_rule_format(&b, text2, sizeof(text2));
		assert_string_equal(text, text2);

		/* the match part names the same rule in MATCH mode */
		{
			char m[256], *argv[16], *p, *save = NULL;
			int argc = 0;
			struct xrl_rule_def c;

			xrl_rule_format_match(&a, m, sizeof(m));
			for (p = strtok_r(m, " ", &save); p && argc < 15; p = strtok_r(NULL, " ", &save))
				argv[argc++] = p;
			argv[argc] = NULL;
			if (xrl_rule_parse_args(argc, argv, XRL_RULE_MATCH, &c, err, sizeof(err)))
				fail_msg("'%s': match part does not parse: %s", t[i], err);
			assert_true(xrl_rule_same_match(&a, &c));
		}
	}
}

/* ------------------------------------------------------------------ */
/* rule-set compilation                                                */

struct set {
	struct xrl_rule_def defs[32];
	__u32 ids[32];
	int n;
};

static void set_add(struct set *s, const char *line, __u32 id)
{
	parse_ok(line, &s->defs[s->n]);
	s->ids[s->n++] = id;
}

static const struct xrl_compiled_prefix *find(const struct xrl_compiled_prefix *cp, int n,
					      const char *prefix)
{
	__u8 fam, plen, addr[16];
	char err[XRL_ERRLEN];
	int i;

	if (xrl_parse_prefix(prefix, &fam, addr, &plen, err, sizeof(err)))
		fail_msg("bad test prefix %s", prefix);
	for (i = 0; i < n; i++)
		if (cp[i].family == fam && cp[i].plen == plen && !memcmp(cp[i].addr, addr, 16))
			return &cp[i];
	fail_msg("no compiled entry for %s", prefix);
	return NULL;
}

/* The entry's rule ids, in order, must be want[0..n). */
static void check_ids(const struct xrl_compiled_prefix *e, const char *name, const __u32 *want,
		      __u32 n)
{
	__u32 i;

	if (e->entry.count != n)
		fail_msg("%s: %u rules, want %u", name, e->entry.count, n);
	for (i = 0; i < n; i++)
		if (e->entry.rules[i].id != want[i])
			fail_msg("%s: rule %u has id %u, want %u", name, i,
				 e->entry.rules[i].id, want[i]);
}

static void compile_ok(struct set *s, struct xrl_compiled_prefix **cp, int *n)
{
	char err[XRL_ERRLEN] = "";

	*cp = NULL;
	*n = -1;
	if (xrl_ruleset_compile(s->defs, s->ids, s->n, cp, n, err, sizeof(err)))
		fail_msg("rule set refused: %s", err);
	assert_non_null(*cp);
}

static void test_ruleset_inherit(void **state)
{
	struct set s = { .n = 0 };
	struct xrl_compiled_prefix *cp;
	const struct xrl_compiled_prefix *e;
	struct xrl_rule r;
	char err[XRL_ERRLEN];
	int n;

	(void)state;
	set_add(&s, "10.0.0.0/8 --rate 100", 1);
	set_add(&s, "10.1.0.0/16 --proto tcp --dport 80 --rate 10", 2);
	compile_ok(&s, &cp, &n);
	assert_int_equal(n, 2);

	e = find(cp, n, "10.1.0.0/16");
	check_ids(e, "10.1.0.0/16", (const __u32[]){ 2, 1 }, 2);
	assert_int_equal(e->entry.rules[0].flags, XRL_F_PROTO | XRL_F_DPORT);
	assert_int_equal(e->entry.rules[0].proto, IPPROTO_TCP);
	assert_int_equal(e->entry.rules[0].dport, 80);
	assert_int_equal(e->entry.rules[0].action, XRL_ACT_LIMIT);
	assert_int_equal(e->entry.rules[0].per_len, 32);
	assert_int_equal(e->entry.rules[1].flags, 0);
	/* the compiled rules are what xrl_rule_compile gives */
	assert_int_equal(xrl_rule_compile(&s.defs[1], 2, &r, err, sizeof(err)), 0);
	assert_memory_equal(&e->entry.rules[0], &r, sizeof(r));
	assert_int_equal(xrl_rule_compile(&s.defs[0], 1, &r, err, sizeof(err)), 0);
	assert_memory_equal(&e->entry.rules[1], &r, sizeof(r));

	e = find(cp, n, "10.0.0.0/8");
	check_ids(e, "10.0.0.0/8", (const __u32[]){ 1 }, 1);
	free(cp);
}

/* Own rules most specific match first, then inherited ones, longest prefix first. */
static void test_ruleset_order(void **state)
{
	struct set s = { .n = 0 };
	struct xrl_compiled_prefix *cp;
	int n;

	(void)state;
	/* deliberately scrambled */
	set_add(&s, "10.0.0.0/8 --rate 100", 10);
	set_add(&s, "10.0.0.0/8 --proto tcp --rate 100", 11);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 80 --rate 100", 12);
	set_add(&s, "10.0.0.0/8 --syn --rate 100", 13);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 22 --syn --rate 100", 14);
	set_add(&s, "10.1.0.0/16 --allow", 31);
	set_add(&s, "10.1.0.0/16 --proto udp --dport 53 --rate 5", 30);
	set_add(&s, "0.0.0.0/0 --rate 1000", 40);
	compile_ok(&s, &cp, &n);
	assert_int_equal(n, 3);
	check_ids(find(cp, n, "10.0.0.0/8"), "10.0.0.0/8",
		  (const __u32[]){ 14, 12, 13, 11, 10, 40 }, 6);
	check_ids(find(cp, n, "0.0.0.0/0"), "0.0.0.0/0", (const __u32[]){ 40 }, 1);
	check_ids(find(cp, n, "10.1.0.0/16"), "10.1.0.0/16",
		  (const __u32[]){ 30, 31, 14, 12, 13, 11, 10, 40 }, 8);
	free(cp);

	/* exactly 8 rules covering a prefix is fine */
	s.n = 0;
	set_add(&s, "10.0.0.0/8 --rate 100", 10);
	set_add(&s, "10.0.0.0/8 --proto tcp --rate 100", 11);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 80 --rate 100", 12);
	set_add(&s, "10.0.0.0/8 --syn --rate 100", 13);
	set_add(&s, "10.1.0.0/16 --proto udp --dport 53 --rate 5", 30);
	set_add(&s, "10.1.0.0/16 --allow", 31);
	set_add(&s, "10.1.2.0/24 --deny", 20);
	set_add(&s, "10.1.2.0/24 --proto udp --rate 5", 21);
	compile_ok(&s, &cp, &n);
	check_ids(find(cp, n, "10.1.2.0/24"), "10.1.2.0/24",
		  (const __u32[]){ 21, 20, 30, 31, 12, 13, 11, 10 }, 8);
	free(cp);
}

/* Containment is bitwise and per family; siblings do not inherit. */
static void test_ruleset_containment(void **state)
{
	struct set s = { .n = 0 };
	struct xrl_compiled_prefix *cp;
	int n;

	(void)state;
	set_add(&s, "10.0.0.0/9 --rate 1", 1);
	set_add(&s, "10.128.0.0/9 --rate 1", 2);
	set_add(&s, "10.200.0.0/16 --rate 1", 3);
	set_add(&s, "10.100.0.0/16 --rate 1", 4);
	set_add(&s, "10.0.0.0/7 --rate 1", 5);
	set_add(&s, "11.0.0.0/8 --rate 1", 6);
	set_add(&s, "12.0.0.0/8 --rate 1", 7);
	set_add(&s, "::/0 --rate 1", 8);
	set_add(&s, "2001:db8::/32 --rate 1", 9);
	set_add(&s, "2001:db8:8000::/33 --rate 1", 10);
	set_add(&s, "0.0.0.0/0 --rate 1", 11);
	set_add(&s, "::a00:0/104 --rate 1", 12);   /* ::10.0.0.0: not IPv4 */
	compile_ok(&s, &cp, &n);
	assert_int_equal(n, 12);
	check_ids(find(cp, n, "10.200.0.0/16"), "10.200.0.0/16", (const __u32[]){ 3, 2, 5, 11 }, 4);
	check_ids(find(cp, n, "10.100.0.0/16"), "10.100.0.0/16", (const __u32[]){ 4, 1, 5, 11 }, 4);
	check_ids(find(cp, n, "11.0.0.0/8"), "11.0.0.0/8", (const __u32[]){ 6, 5, 11 }, 3);
	check_ids(find(cp, n, "12.0.0.0/8"), "12.0.0.0/8", (const __u32[]){ 7, 11 }, 2);
	check_ids(find(cp, n, "2001:db8:8000::/33"), "2001:db8:8000::/33",
		  (const __u32[]){ 10, 9, 8 }, 3);
	check_ids(find(cp, n, "::/0"), "::/0", (const __u32[]){ 8 }, 1);
	check_ids(find(cp, n, "0.0.0.0/0"), "0.0.0.0/0", (const __u32[]){ 11 }, 1);
	check_ids(find(cp, n, "::a00:0/104"), "::a00:0/104", (const __u32[]){ 12, 8 }, 2);
	free(cp);

	/* an empty rule set */
	s.n = 0;
	compile_ok(&s, &cp, &n);
	assert_int_equal(n, 0);
	free(cp);
}

static void test_ruleset_too_many(void **state)
{
	struct set s = { .n = 0 };
	struct xrl_compiled_prefix *cp = NULL;
	char line[128], err[XRL_ERRLEN];
	int n = -1, i;

	(void)state;
	/* 9 rules at one prefix */
	for (i = 0; i < 9; i++) {
		snprintf(line, sizeof(line), "10.0.0.0/8 --proto tcp --dport %d --rate 10", 80 + i);
		set_add(&s, line, (__u32)i);
	}
	err[0] = 0;
	assert_int_equal(xrl_ruleset_compile(s.defs, s.ids, s.n, &cp, &n, err, sizeof(err)), -1);
	check_err("rule set", "9 rules at 10.0.0.0/8", err, "10.0.0.0/8");
	check_err("rule set", "9 rules at 10.0.0.0/8", err, "8");

	/* 5 of its own and 4 inherited */
	s.n = 0;
	for (i = 0; i < 4; i++) {
		snprintf(line, sizeof(line), "10.0.0.0/8 --proto tcp --dport %d --rate 10", 80 + i);
		set_add(&s, line, (__u32)i);
	}
	for (i = 0; i < 5; i++) {
		snprintf(line, sizeof(line), "10.1.0.0/16 --proto udp --dport %d --rate 10", 80 + i);
		set_add(&s, line, (__u32)(10 + i));
	}
	err[0] = 0;
	assert_int_equal(xrl_ruleset_compile(s.defs, s.ids, s.n, &cp, &n, err, sizeof(err)), -1);
	check_err("rule set", "4 rules at /8 + 5 at /16", err, "10.1.0.0/16");

	/* over several levels of enclosing prefixes */
	s.n = 0;
	set_add(&s, "0.0.0.0/0 --rate 1", 1);
	set_add(&s, "10.0.0.0/7 --rate 1", 2);
	set_add(&s, "10.0.0.0/8 --rate 1", 3);
	set_add(&s, "10.0.0.0/9 --rate 1", 4);
	set_add(&s, "10.0.0.0/10 --rate 1", 5);
	set_add(&s, "10.0.0.0/11 --rate 1", 6);
	set_add(&s, "10.0.0.0/12 --rate 1", 7);
	set_add(&s, "10.0.0.0/13 --rate 1", 8);
	compile_ok(&s, &cp, &n);
	check_ids(find(cp, n, "10.0.0.0/13"), "10.0.0.0/13",
		  (const __u32[]){ 8, 7, 6, 5, 4, 3, 2, 1 }, 8);
	free(cp);
	set_add(&s, "10.0.0.0/14 --rate 1", 9);
	err[0] = 0;
	cp = NULL;
	assert_int_equal(xrl_ruleset_compile(s.defs, s.ids, s.n, &cp, &n, err, sizeof(err)), -1);
	check_err("rule set", "9 nested prefixes", err, "10.0.0.0/14");
}

/* ------------------------------------------------------------------ */
/* option tables (user/lib/xrl_opts.c) and text for JSON                   */

/* a table shaped like the daemon's options, to prove the mechanism fits them */
struct demo {
	const char *redis, *metrics;
	unsigned long long interval;
	__u8 algo, n, flags;
	bool quiet;
};
#define DM(member) XRL_OPT_FIELD(struct demo, member)
enum { D_REDIS, D_INTERVAL, D_ALGO, D_SHADOW, D_BLOCK, D_METRICS, D_COUNT, D_QUIET, D_N };
static const struct xrl_opt demo_rows[D_N] = {
	[D_REDIS] = { "redis", 0, "URL", xrl_opt_str, DM(redis), .modes = 3 },
	[D_INTERVAL] = { "sync-interval", 0, "MS", xrl_opt_uint, DM(interval), .modes = 3, .min = 1,
			 .max = 60000, .what = "--sync-interval (ms)" },
	[D_ALGO] = { "algo", 0, "ALGO", xrl_opt_enum, DM(algo), .modes = 3,
		     .what = "token-bucket|fixed-window|sliding-window|sliding-log" },
	[D_SHADOW] = { "shadow", 0, NULL, xrl_opt_flag, DM(flags), .modes = 3, .val = 0x4 },
	[D_BLOCK] = { "block", 0, NULL, xrl_opt_flag, DM(flags), .modes = 1, .val = 0x8 },
	[D_METRICS] = { "metrics", 0, "ADDR:PORT", xrl_opt_str, DM(metrics), .modes = 3,
			.flags = XRL_OPT_OPTIONAL_ARG },
	[D_COUNT] = { "count", 'n', "N", xrl_opt_uint, DM(n), .modes = 3, .min = 1, .max = 100,
		      .what = "-n" },
	[D_QUIET] = { "quiet", 'q', NULL, xrl_opt_flag, DM(quiet), .modes = 3 },
};
static const char *const demo_refusal[] = { NULL, "is not for this mode:" };
static const struct xrl_opt_table demo_table = {
	.name = "demo", .opts = demo_rows, .n = D_N, .nmodes = 2, .mode_refusal = demo_refusal,
};

/* split line into words (modified in place) and parse them; 0 or -1, *argi where it stopped */
static int demo_parse(char *line, int mode, struct demo *d, xrl_opt_seen *seen, int *argi,
		      char *err, char ***words)
{
	static char *argv[32];
	int argc = 0;
	char *save = NULL, *w;

	for (w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	memset(d, 0, sizeof(*d));
	*seen = 0;
	*argi = 0;
	err[0] = 0;
	*words = argv;
	return xrl_opts_parse(&demo_table, mode, argc, argv, argi, d, seen, err, XRL_ERRLEN);
}

static void test_opts_engine(void **state)
{
	static const struct { const char *line, *needle; } bad[] = {
		{ "--algo bogus", "invalid --algo 'bogus': expected token-bucket, fixed-window, sliding-window or sliding-log" },
		{ "--alg token-bucket", "unknown option '--alg': expected --redis, --sync-interval, --algo, --shadow, --block, --metrics, --count or --quiet" },
		{ "--shadow --shadow", "--shadow given twice" },
		{ "-q --quiet", "--quiet given twice" },
		{ "-nq", "invalid -n 'q'" },
		{ "--sync-interval", "option '--sync-interval' needs a value (--sync-interval MS)" },
		{ "-n", "option '-n' needs a value (-n N)" },
		{ "--shadow=1", "option '--shadow=1' takes no value" },
		{ "-x", "unknown option '-x'" },
		{ "-redis u", "unknown option '-redis': options start with --, e.g. --redis URL" },
		{ "--sync-interval 0", "invalid --sync-interval (ms) '0'" },
	};
	char line[256], err[XRL_ERRLEN], **w;
	struct demo d;
	xrl_opt_seen seen;
	int argi;
	size_t i;

	(void)state;
	snprintf(line, sizeof(line), "--redis redis://h --algo sliding-log --shadow --metrics -qn5 --block rest --quiet");
	assert_int_equal(demo_parse(line, 0, &d, &seen, &argi, err, &w), 0);
	assert_string_equal(d.redis, "redis://h");
	assert_int_equal(d.algo, 3);
	assert_int_equal(d.flags, 0x4 | 0x8);
	assert_null(d.metrics);                       /* given without its optional value */
	assert_true(XRL_SEEN(seen, D_METRICS));
	assert_true(d.quiet);
	assert_int_equal(d.n, 5);
	assert_false(XRL_SEEN(seen, D_INTERVAL));
	assert_string_equal(w[argi], "rest");         /* stops at the first word that is not an option */

	snprintf(line, sizeof(line), "--metrics :9464 --sync-interval=250 -n 7 -- --redis");
	assert_int_equal(demo_parse(line, 0, &d, &seen, &argi, err, &w), 0);
	assert_string_equal(d.metrics, ":9464");
	assert_int_equal(d.interval, 250);
	assert_int_equal(d.n, 7);
	assert_string_equal(w[argi], "--redis");      /* "--" ends the options */

	snprintf(line, sizeof(line), "--shadow --block");
	assert_int_equal(demo_parse(line, 1, &d, &seen, &argi, err, &w), -1);
	check_err("demo", "--block in mode 1", err, "--block is not for this mode: [--redis URL]");

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(line, sizeof(line), "%s", bad[i].line);
		if (demo_parse(line, 0, &d, &seen, &argi, err, &w) != -1)
			fail_msg("'%s': accepted", bad[i].line);
		check_err("demo", bad[i].line, err, bad[i].needle);
	}

	xrl_opts_usage(&demo_table, 0, line, sizeof(line));
	assert_string_equal(line, "[--redis URL] [--sync-interval MS] [--algo ALGO] [--shadow] [--block]"
			    " [--metrics [ADDR:PORT]] [-n|--count N] [-q|--quiet]");
}

/* The rule table gives the usage and the lists of the messages. */
static void test_rule_table_text(void **state)
{
	char buf[512];

	(void)state;
	xrl_opts_usage(&xrl_rule_opts, XRL_RULE_ADD, buf, sizeof(buf));
	assert_string_equal(buf, "{--rate RATE | --allow | --deny} [--burst N] [--bytes RATE]"
			    " [--bytes-burst SIZE] [--new-sources RATE] [--new-burst N] [--total RATE]"
			    " [--total-burst N]"
			    " [--per LEN] [--proto tcp|udp|icmp|icmpv6]"
			    " [--dport PORTS] [--dst PREFIX] [--syn] [--global] [--algo ALGO] [--shadow] [--block DURATION] [--block-spoofable] [--syn-proxy]");
	xrl_opts_usage(&xrl_rule_opts, XRL_RULE_MATCH, buf, sizeof(buf));
	assert_string_equal(buf, "[--proto tcp|udp|icmp|icmpv6] [--dport PORTS] [--dst PREFIX] [--syn]");
	xrl_opts_list(&xrl_rule_opts, XRL_RULE_MATCH, buf, sizeof(buf));
	assert_string_equal(buf, "--proto, --dport, --dst or --syn");
	xrl_opts_list(&xrl_rule_opts, XRL_RULE_ADD, buf, sizeof(buf));
	assert_string_equal(buf, "--rate, --burst, --bytes, --bytes-burst, --new-sources, --new-burst, --total, --total-burst, --per, --proto, --dport, --dst, --syn, --global, --algo, --allow, --deny, --shadow, --block, --block-spoofable or --syn-proxy");
}

static void test_utf8_clean(void **state)
{
	static const char *t[][2] = {
		{ "plain ascii", "plain ascii" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
		{ "eth\xff", "eth\\xff" },
		{ "a\xc3", "a\\xc3" },                          /* cut short */
		{ "\xc0\x80", "\\xc0\\x80" },                    /* overlong */
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80" },           /* surrogate */
		{ "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80" },  /* beyond U+10FFFF */
		{ "\xe2\x82x", "\\xe2\\x82x" },
		{ "\x80z", "\\x80z" },
	};
	char out[64];
	json_t *v;
	char *dump;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		xrl_utf8_clean(t[i][0], out, sizeof(out));
		if (strcmp(out, t[i][1]))
			fail_msg("clean(%zu): got '%s', want '%s'", i, out, t[i][1]);
		v = xrl_json_text(t[i][0]);
		assert_non_null(v);
		json_decref(v);
	}
	/* a short buffer: never half an escape or half a character */
	assert_int_equal(xrl_utf8_clean("\xff\xff", out, 6), 4);
	assert_string_equal(out, "\\xff");
	assert_int_equal(xrl_utf8_clean("a\xc3\xa9", out, 3), 1);
	assert_string_equal(out, "a");
	/* the JSON of a name with 0xff: valid, with the escape */
	v = json_pack("{s:o}", "error", xrl_json_text("no interface xrl\xff"));
	assert_non_null(v);
	dump = json_dumps(v, JSON_COMPACT);
	assert_string_equal(dump, "{\"error\":\"no interface xrl\\\\xff\"}");
	free(dump);
	json_decref(v);
}

/* ------------------------------------------------------------------ */
/* --dport sets and --dst                                              */

static void refused(const char *line, const char *needle)
{
	struct xrl_rule_def d;
	char err[XRL_ERRLEN];

	if (parse(line, &d, err) != -1)
		fail_msg("'%s': accepted, want it refused", line);
	check_err("rule", line, err, needle);
}

static void saved_as(const char *line, const char *text)
{
	struct xrl_rule_def d, back;
	char got[512];

	parse_ok(line, &d);
	xrl_rule_format(&d, got, sizeof(got));
	if (strcmp(got, text))
		fail_msg("'%s': saved as \"%s\", want \"%s\"", line, got, text);
	parse_ok(got, &back);
	if (memcmp(&d, &back, sizeof(d)))
		fail_msg("'%s': its saved text \"%s\" loads as another rule", line, got);
}

/* one set, however written: sorted, merged, duplicates gone; one text; one rule */
static void test_dport_set_normal_form(void **state)
{
	struct xrl_rule_def a, b;
	struct xrl_rule r;
	char err[XRL_ERRLEN];

	(void)state;
	parse_ok("10.0.0.0/8 --proto tcp --dport 8000-8100,443,80,444,81,8050-8060 --rate 10", &a);
	assert_int_equal(a.nports, 3);
	assert_int_equal(a.ports[0].lo, 80);
	assert_int_equal(a.ports[0].hi, 81);
	assert_int_equal(a.ports[1].lo, 443);
	assert_int_equal(a.ports[1].hi, 444);
	assert_int_equal(a.ports[2].lo, 8000);
	assert_int_equal(a.ports[2].hi, 8100);
	assert_false(xrl_rule_one_port(&a));
	saved_as("10.0.0.0/8 --proto tcp --dport 8000-8100,443,80,444,81,8050-8060 --rate 10/s",
		 "10.0.0.0/8 --proto tcp --dport 80-81,443-444,8000-8100 --rate 10/s --burst 10 --per 32");
	parse_ok("10.0.0.0/8 --proto tcp --dport 444,443,8000-8100,80-81,80 --rate 20", &b);
	assert_true(xrl_rule_same_match(&a, &b));
	assert_int_equal(xrl_rule_match_cmp(&a, &b), 0);
	/* a range of one and a repeated port are the port: the one-port rule of today */
	saved_as("10.0.0.0/8 --proto udp --dport 53,53-53 --deny", "10.0.0.0/8 --proto udp --dport 53 --deny");
	parse_ok("10.0.0.0/8 --proto udp --dport 53,53 --deny", &a);
	parse_ok("10.0.0.0/8 --proto udp --dport 53 --deny", &b);
	assert_true(xrl_rule_one_port(&a));
	assert_int_equal(memcmp(&a, &b, sizeof(a)), 0);
	/* adjacent ports are one range; another set is another rule, in both orders */
	saved_as("10.0.0.0/8 --proto tcp --dport 80,81,82 --allow", "10.0.0.0/8 --proto tcp --dport 80-82 --allow");
	parse_ok("10.0.0.0/8 --proto tcp --dport 80,443 --allow", &a);
	parse_ok("10.0.0.0/8 --proto tcp --dport 80,444 --allow", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	assert_true(xrl_rule_match_cmp(&a, &b) < 0 && xrl_rule_match_cmp(&b, &a) > 0);
	parse_ok("10.0.0.0/8 --proto tcp --dport 80,443,8080 --allow", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	assert_true(xrl_rule_match_cmp(&a, &b) < 0 && xrl_rule_match_cmp(&b, &a) > 0);
	parse_ok("10.0.0.0/8 --proto tcp --dport 80 --allow", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	/* 8 ranges is the bound; 0-65535 is every port */
	parse_ok("10.0.0.0/8 --proto tcp --dport 1,3,5,7,9,11,13,15 --rate 1", &a);
	assert_int_equal(a.nports, 8);
	saved_as("2001:db8::/32 --proto udp --dport 65535,0-65534 --rate 1/s",
		 "2001:db8::/32 --proto udp --dport 0-65535 --rate 1/s --burst 1 --per 64");
	/* compiled: one port stays XRL_F_DPORT's; a set is XRL_F_MORE's ranges */
	parse_ok("10.0.0.0/8 --proto tcp --dport 443 --rate 1", &a);
	assert_int_equal(xrl_rule_compile(&a, 1, &r, err, sizeof(err)), 0);
	assert_int_equal(r.flags & (XRL_F_DPORT | XRL_F_MORE), XRL_F_DPORT);
	assert_int_equal(r.dport, 443);
	assert_int_equal(r.nports, 0);
	parse_ok("10.0.0.0/8 --proto tcp --dport 443,8000-8100 --deny", &a);
	assert_int_equal(xrl_rule_compile(&a, 1, &r, err, sizeof(err)), 0);
	assert_int_equal(r.flags & (XRL_F_DPORT | XRL_F_MORE), XRL_F_MORE);
	assert_int_equal(r.nports, 2);
	assert_int_equal(r.ports[1].lo, 8000);
	assert_int_equal(r.ports[1].hi, 8100);
	assert_int_equal(r.dst_len, 0);
}

static void test_dport_set_refused(void **state)
{
	(void)state;
	refused("10.0.0.0/8 --proto tcp --dport 1,3,5,7,9,11,13,15,17 --rate 1",
		"9 ports and ranges (after merging); a rule takes at most 8: join neighbours into a range");
	refused("10.0.0.0/8 --proto tcp --dport 8100-8000 --rate 1", "write it low-high (8000-8100)");
	refused("10.0.0.0/8 --proto tcp --dport 80,,443 --rate 1", "ports and ranges joined by commas");
	refused("10.0.0.0/8 --proto tcp --dport 80, --rate 1", "ports and ranges joined by commas");
	refused("10.0.0.0/8 --proto tcp --dport 80- --rate 1", "ports and ranges joined by commas");
	refused("10.0.0.0/8 --proto tcp --dport 80;443 --rate 1", "ports and ranges joined by commas");
	refused("10.0.0.0/8 --proto tcp --dport 1-65536 --rate 1", "a port is 0 to 65535");
	refused("10.0.0.0/8 --proto tcp --dport 99999999999999999999 --rate 1", "a port is 0 to 65535");
	refused("10.0.0.0/8 --dport 80,443 --rate 1", "--dport needs --proto tcp or --proto udp");
}

/* --dst: of the rule's family, longer than /0, a match field (names a rule, kept by save) */
static void test_dst(void **state)
{
	struct xrl_rule_def a, b;
	struct xrl_rule r;
	char err[XRL_ERRLEN];
	char *argv[] = { "10.0.0.0/8", "--dst", "192.0.2.8/29", "--proto", "tcp", "--dport", "443,80", NULL };

	(void)state;
	saved_as("10.0.0.0/8 --dst 192.0.2.10 --rate 10/s",
		 "10.0.0.0/8 --rate 10/s --burst 10 --per 32 --dst 192.0.2.10/32");
	saved_as("2001:db8::/32 --proto tcp --dport 443,80 --dst 2001:db8:ff::/48 --deny",
		 "2001:db8::/32 --proto tcp --dport 80,443 --deny --dst 2001:db8:ff::/48");
	refused("10.0.0.0/8 --dst 2001:db8::1 --rate 1",
		"--dst 2001:db8::1 is IPv6 and the rule's prefix is IPv4");
	refused("2001:db8::/32 --dst 192.0.2.1/32 --rate 1",
		"--dst 192.0.2.1/32 is IPv4 and the rule's prefix is IPv6");
	refused("10.0.0.0/8 --dst 0.0.0.0/0 --rate 1", "holds every destination: leave --dst out");
	refused("10.0.0.0/8 --dst 192.0.2.9/29 --rate 1", "host bits are set; did you mean 192.0.2.8/29");
	refused("10.0.0.0/8 --dst example.org --rate 1", "invalid prefix");
	/* the same match without --dst, or with another, is another rule */
	parse_ok("10.0.0.0/8 --dst 192.0.2.8/29 --proto tcp --dport 80,443 --rate 1", &a);
	assert_int_equal(xrl_rule_parse_args(7, argv, XRL_RULE_MATCH, &b, err, sizeof(err)), 0);
	assert_true(xrl_rule_same_match(&a, &b));
	parse_ok("10.0.0.0/8 --proto tcp --dport 80,443 --rate 1", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	assert_true(xrl_rule_match_cmp(&a, &b) > 0 && xrl_rule_match_cmp(&b, &a) < 0);
	parse_ok("10.0.0.0/8 --dst 192.0.2.8/30 --proto tcp --dport 80,443 --rate 1", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	parse_ok("10.0.0.0/8 --dst 192.0.2.16/29 --proto tcp --dport 80,443 --rate 1", &b);
	assert_false(xrl_rule_same_match(&a, &b));
	assert_true(xrl_rule_match_cmp(&a, &b) < 0 && xrl_rule_match_cmp(&b, &a) > 0);
	/* compiled: XRL_F_MORE with the prefix, the ports' set beside it */
	assert_int_equal(xrl_rule_compile(&a, 1, &r, err, sizeof(err)), 0);
	assert_int_equal(r.flags & (XRL_F_DPORT | XRL_F_MORE), XRL_F_MORE);
	assert_int_equal(r.dst_len, 29);
	assert_int_equal(r.dst[0], htonl(0xc0000208));
	assert_int_equal(r.nports, 2);
	parse_ok("10.0.0.0/8 --dst 192.0.2.8/29 --proto tcp --dport 443 --allow", &a);
	assert_int_equal(xrl_rule_compile(&a, 1, &r, err, sizeof(err)), 0);
	assert_int_equal(r.flags & (XRL_F_DPORT | XRL_F_MORE), XRL_F_DPORT | XRL_F_MORE);
	assert_int_equal(r.nports, 0);
}

/* the fleet's name of a rule (its Redis keys): one per set, however written */
static void test_dport_set_fleet_name(void **state)
{
	struct xrl_rule_def a, b;
	char na[17], nb[17];

	(void)state;
	parse_ok("10.0.0.0/8 --proto tcp --dport 80,443,8000-8100 --rate 10/s --global", &a);
	parse_ok("10.0.0.0/8 --proto tcp --dport 8000-8100,443,80,80 --rate 10/s --global", &b);
	xrl_fleet_rule_name(&a, na);
	xrl_fleet_rule_name(&b, nb);
	assert_string_equal(na, nb);
	parse_ok("10.0.0.0/8 --proto tcp --dport 80,443,8000-8101 --rate 10/s --global", &b);
	xrl_fleet_rule_name(&b, nb);
	assert_string_not_equal(na, nb);
	parse_ok("10.0.0.0/8 --proto tcp --dport 80,443,8000-8100 --rate 10/s --global --dst 192.0.2.1", &b);
	xrl_fleet_rule_name(&b, nb);
	assert_string_not_equal(na, nb);
	/* a one-port rule keeps the name it always had */
	parse_ok("198.51.100.0/24 --proto tcp --dport 443,443 --rate 10/s", &a);
	xrl_fleet_rule_name(&a, na);
	assert_string_equal(na, "df6729f898f016aa");
}

/* within a prefix: --dst first, then one port, then a port set, then --syn, --proto, none */
static void test_ruleset_order_ports_dst(void **state)
{
	struct set s = { .n = 0 };
	struct xrl_compiled_prefix *cp;
	int n;

	(void)state;
	set_add(&s, "10.0.0.0/8 --rate 100", 10);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 80,443 --rate 100", 11);
	set_add(&s, "10.0.0.0/8 --dst 192.0.2.1 --rate 100", 12);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 80 --rate 100", 13);
	set_add(&s, "10.0.0.0/8 --syn --rate 100", 14);
	compile_ok(&s, &cp, &n);
	check_ids(find(cp, n, "10.0.0.0/8"), "10.0.0.0/8", (const __u32[]){ 12, 13, 11, 14, 10 }, 5);
	free(cp);
}

/*
 * Rules of one prefix and one rank that overlap: the longer --dst first,
 * then the set of fewer ports, whatever their ids (the ids are given the
 * other way round); one size of set goes by its lowest port.
 */
static void test_ruleset_order_overlap(void **state)
{
	struct set s = { .n = 0 };
	struct xrl_compiled_prefix *cp;
	int n;

	(void)state;
	set_add(&s, "10.0.0.0/8 --dst 192.0.2.0/24 --rate 100", 1);
	set_add(&s, "10.0.0.0/8 --dst 192.0.2.5/32 --rate 100", 2);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 80-100 --rate 100", 3);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 85-90 --rate 100", 4);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 443,8000-8001 --rate 100", 5);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 85,90,95 --rate 100", 6);
	compile_ok(&s, &cp, &n);
	/* /32 before /24; 85,90,95 (3) and 443,8000-8001 (3), lowest first; 85-90 (6); 80-100 (21) */
	check_ids(find(cp, n, "10.0.0.0/8"), "10.0.0.0/8", (const __u32[]){ 2, 1, 6, 5, 4, 3 }, 6);
	free(cp);
}

/*
 * xrl(8): --dport with --syn before --dport alone, a set with --syn before
 * one port without it.
 */
static void test_ruleset_order_syn_set(void **state)
{
	struct set s = { .n = 0 };
	struct xrl_compiled_prefix *cp;
	int n;

	(void)state;
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 80 --rate 100", 1);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 80,443 --syn --rate 100", 2);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 80,443 --rate 100", 3);
	set_add(&s, "10.0.0.0/8 --syn --rate 100", 4);
	set_add(&s, "10.0.0.0/8 --proto tcp --dport 22 --syn --rate 100", 5);
	compile_ok(&s, &cp, &n);
	check_ids(find(cp, n, "10.0.0.0/8"), "10.0.0.0/8", (const __u32[]){ 5, 2, 1, 3, 4 }, 5);
	free(cp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix_good),
		cmocka_unit_test(test_prefix_bad),
		cmocka_unit_test(test_prefix_host_bits_suggestion),
		cmocka_unit_test(test_prefix_format),
		cmocka_unit_test(test_rate_good),
		cmocka_unit_test(test_rate_bad),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_uint),
		cmocka_unit_test(test_proto),
		cmocka_unit_test(test_rule_defaults),
		cmocka_unit_test(test_rule_fields),
		cmocka_unit_test(test_rule_policy_fields),
		cmocka_unit_test(test_block_needs_opt_in),
		cmocka_unit_test(test_rule_syn_proxy),
		cmocka_unit_test(test_rule_blank_and_comments),
		cmocka_unit_test(test_rule_bad),
		cmocka_unit_test(test_rule_single_dash_option),
		cmocka_unit_test(test_rule_flag_with_value),
		cmocka_unit_test(test_rule_line_limits),
		cmocka_unit_test(test_rule_parse_repeated),
		cmocka_unit_test(test_rule_option_twice),
		cmocka_unit_test(test_rule_no_abbreviations),
		cmocka_unit_test(test_rules_file_nul),
		cmocka_unit_test(test_rules_file_whole_or_nothing),
		cmocka_unit_test(test_default_rules_file),
		cmocka_unit_test(test_opts_nested_usage),
		cmocka_unit_test(test_opts_engine),
		cmocka_unit_test(test_rule_table_text),
		cmocka_unit_test(test_utf8_clean),
		cmocka_unit_test(test_rule_match_mode),
		cmocka_unit_test(test_same_match),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_rule_rows_round_trip),
		cmocka_unit_test(test_rule_save_text_fixed),
		cmocka_unit_test(test_ruleset_inherit),
		cmocka_unit_test(test_ruleset_order),
		cmocka_unit_test(test_ruleset_containment),
		cmocka_unit_test(test_ruleset_too_many),
		cmocka_unit_test(test_dport_set_normal_form),
		cmocka_unit_test(test_dport_set_refused),
		cmocka_unit_test(test_dst),
		cmocka_unit_test(test_dport_set_fleet_name),
		cmocka_unit_test(test_ruleset_order_ports_dst),
		cmocka_unit_test(test_ruleset_order_overlap),
		cmocka_unit_test(test_ruleset_order_syn_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
