// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The scalars of rules and options (xrl_units.h).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_units.h"

#define NS_PER_SEC 1000000000ULL

int xrl_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int xrl_parse_uint(const char *what, const char *s, __u64 min, __u64 max, __u64 *out,
		   char *err, size_t errlen)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return xrl_fail(err, errlen, "invalid %s '%s': expected a whole number from %llu to %llu",
			    what, s ? s : "", (unsigned long long)min, (unsigned long long)max);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return xrl_fail(err, errlen, "invalid %s '%s': expected a whole number from %llu to %llu",
			    what, s, (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

int xrl_parse_prefix(const char *s, __u8 *family, __u8 addr[16], __u8 *plen,
		     char *err, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash;
	__u8 tmp[16] = {0}, masked[16];
	__u64 len, max;
	size_t alen;
	int fam, i;

	if (!s || !*s)
		return xrl_fail(err, errlen, "missing prefix: expected an address with /LEN, e.g. 203.0.113.0/24");
	slash = strchr(s, '/');
	alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen >= sizeof(buf))
		goto bad;
	memcpy(buf, s, alen);
	buf[alen] = 0;
	if (inet_pton(AF_INET, buf, tmp) == 1) {
		fam = 4;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, tmp) == 1) {
		fam = 6;
		max = 128;
	} else {
		goto bad;
	}
	len = max;
	if (slash) {
		char lerr[XRL_ERRLEN];

		if (xrl_parse_uint("prefix length", slash + 1, 0, max, &len, lerr, sizeof(lerr)))
			return xrl_fail(err, errlen, "invalid prefix '%s': the length after / must be 0 to %llu for IPv%d",
				    s, (unsigned long long)max, fam);
	}
	memcpy(masked, tmp, 16);
	for (i = 0; i < 16; i++) {
		int bits = (int)len - i * 8;

		if (bits <= 0)
			masked[i] = 0;
		else if (bits < 8)
			masked[i] &= (__u8)(0xff << (8 - bits));
	}
	if (memcmp(masked, tmp, 16)) {
		char want[INET6_ADDRSTRLEN];

		inet_ntop(fam == 4 ? AF_INET : AF_INET6, masked, want, sizeof(want));
		return xrl_fail(err, errlen, "invalid prefix '%s': host bits are set; did you mean %s/%llu?",
			    s, want, (unsigned long long)len);
	}
	*family = (__u8)fam;
	memcpy(addr, masked, 16);
	*plen = (__u8)len;
	return 0;
bad:
	return xrl_fail(err, errlen, "invalid prefix '%s': expected an IPv4 or IPv6 address with an optional /LEN, e.g. 203.0.113.0/24 or 2001:db8::/32",
		    s);
}

int xrl_parse_rate(const char *s, __u64 *count, __u32 *period, char *err, size_t errlen)
{
	static const struct { const char *unit; __u32 secs; } units[] = {
		{ "s", 1 }, { "sec", 1 }, { "second", 1 },
		{ "m", 60 }, { "min", 60 }, { "minute", 60 },
		{ "h", 3600 }, { "hour", 3600 },
	};
	char num[32];
	const char *slash = s ? strchr(s, '/') : NULL;
	size_t nlen = slash ? (size_t)(slash - s) : (s ? strlen(s) : 0);
	__u32 secs = 1;
	__u64 v;
	size_t i;

	if (!s || nlen == 0 || nlen >= sizeof(num))
		goto bad;
	memcpy(num, s, nlen);
	num[nlen] = 0;
	if (slash) {
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(slash + 1, units[i].unit))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			goto bad;
		secs = units[i].secs;
	}
	if (xrl_parse_uint("rate", num, 1, XRL_MAX_PPS * 3600, &v, err, errlen))
		goto bad;
	if (v > XRL_MAX_PPS * secs)
		return xrl_fail(err, errlen, "invalid rate '%s': at most %llu packets per second",
			    s, XRL_MAX_PPS);
	*count = v;
	*period = secs;
	return 0;
bad:
	return xrl_fail(err, errlen, "invalid rate '%s': expected a positive whole number of packets, optionally per unit: 100/s, 6000/m, 1000/h",
		    s ? s : "");
}

int xrl_parse_size(const char *what, const char *s, __u64 max, __u64 *out,
		   char *err, size_t errlen)
{
	char num[32];
	size_t n = 0;
	__u64 v, mult = 1;
	const char *p;

	if (!s)
		goto bad;
	while (isdigit((unsigned char)s[n]))
		n++;
	if (n == 0 || n >= sizeof(num))
		goto bad;
	memcpy(num, s, n);
	num[n] = 0;
	p = s + n;
	switch (*p) {
	case 'k': case 'K': mult = 1000ULL; p++; break;
	case 'M': mult = 1000000ULL; p++; break;
	case 'G': mult = 1000000000ULL; p++; break;
	case 'T': mult = 1000000000000ULL; p++; break;
	default: break;
	}
	if (*p == 'B')
		p++;
	if (!strcmp(p, "/s"))
		p += 2;
	if (*p)
		goto bad;
	if (xrl_parse_uint(what, num, 1, max, &v, err, errlen) || v > max / mult || v * mult < 1)
		goto bad;
	*out = v * mult;
	return 0;
bad:
	return xrl_fail(err, errlen, "invalid %s '%s': expected a positive number of bytes with an optional k, M, G or T suffix (e.g. 10M), at most %llu",
		    what, s ? s : "", (unsigned long long)max);
}

int xrl_parse_proto(const char *s, __u8 *proto, char *err, size_t errlen)
{
	if (s && !strcmp(s, "tcp"))
		*proto = IPPROTO_TCP;
	else if (s && !strcmp(s, "udp"))
		*proto = IPPROTO_UDP;
	else if (s && !strcmp(s, "icmp"))
		*proto = IPPROTO_ICMP;
	else if (s && !strcmp(s, "icmpv6"))
		*proto = IPPROTO_ICMPV6;
	else
		return xrl_fail(err, errlen, "unknown protocol '%s': expected tcp, udp, icmp or icmpv6",
			    s ? s : "");
	return 0;
}

const char *xrl_proto_name(__u8 proto)
{
	switch (proto) {
	case IPPROTO_TCP: return "tcp";
	case IPPROTO_UDP: return "udp";
	case IPPROTO_ICMP: return "icmp";
	case IPPROTO_ICMPV6: return "icmpv6";
	default: return "?";
	}
}

int xrl_parse_duration(const char *what, const char *s, __u64 max_s, __u64 *ns, char *err,
		       size_t errlen)
{
	static const struct { const char *unit; __u32 secs; } units[] = {
		{ "s", 1 }, { "sec", 1 }, { "m", 60 }, { "min", 60 }, { "h", 3600 }, { "hour", 3600 },
	};
	char num[32], why[XRL_ERRLEN];
	size_t n = 0, i;
	__u64 v;

	while (s && isdigit((unsigned char)s[n]))
		n++;
	if (!s || n == 0 || n >= sizeof(num))
		goto bad;
	memcpy(num, s, n);
	num[n] = 0;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(s + n, units[i].unit))
			break;
	if (i == sizeof(units) / sizeof(units[0]) ||
	    xrl_parse_uint(what, num, 1, max_s, &v, why, sizeof(why)) || v * units[i].secs > max_s)
		goto bad;
	*ns = v * units[i].secs * NS_PER_SEC;
	return 0;
bad:
	return xrl_fail(err, errlen, "invalid %s '%s': expected a whole number of seconds, minutes or hours with its unit, e.g. 30s, 10m, 1h (at most %lluh)",
		    what, s ? s : "", (unsigned long long)max_s / 3600);
}

void xrl_duration_format(__u64 ns, char *buf, size_t len)
{
	__u64 s = ns / NS_PER_SEC;

	if (s && s % 3600 == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)s / 3600);
	else if (s && s % 60 == 0)
		snprintf(buf, len, "%llum", (unsigned long long)s / 60);
	else
		snprintf(buf, len, "%llus", (unsigned long long)s);
}

void xrl_prefix_format(__u8 family, const __u8 addr[16], __u8 plen, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(family == 4 ? AF_INET : AF_INET6, addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, plen);
}
