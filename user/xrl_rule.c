// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xrl_rule.h"

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

enum {
	OPT_RATE = 256, OPT_BURST, OPT_BYTES, OPT_BYTES_BURST, OPT_PER, OPT_PROTO,
	OPT_DPORT, OPT_SYN, OPT_ALLOW, OPT_DENY, OPT_GLOBAL,
};

/* Is word an option whose value is the next word? */
static bool takes_value(const char *word)
{
	static const char *const with_value[] = {
		"--rate", "--burst", "--bytes", "--bytes-burst", "--per", "--proto", "--dport",
	};
	size_t i;

	for (i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
		if (!strcmp(word, with_value[i]))
			return true;
	return false;
}

int xrl_rule_parse_args(int argc, char **argv, enum xrl_rule_mode mode,
			struct xrl_rule_def *def, char *err, size_t errlen)
{
	static const struct option opts[] = {
		{ "rate", required_argument, 0, OPT_RATE },
		{ "burst", required_argument, 0, OPT_BURST },
		{ "bytes", required_argument, 0, OPT_BYTES },
		{ "bytes-burst", required_argument, 0, OPT_BYTES_BURST },
		{ "per", required_argument, 0, OPT_PER },
		{ "proto", required_argument, 0, OPT_PROTO },
		{ "dport", required_argument, 0, OPT_DPORT },
		{ "syn", no_argument, 0, OPT_SYN },
		{ "allow", no_argument, 0, OPT_ALLOW },
		{ "deny", no_argument, 0, OPT_DENY },
		{ "global", no_argument, 0, OPT_GLOBAL },
		{ 0, 0, 0, 0 },
	};
	bool have_rate = false, have_burst = false, have_bytes = false, have_bb = false;
	bool have_per = false, have_dport = false;
	struct xrl_rule_def d;
	__u64 v;
	int c;

	memset(&d, 0, sizeof(d));
	d.action = XRL_ACT_LIMIT;
	if (argc < 1 || argv[0][0] == '-')
		return xrl_fail(err, errlen, "missing prefix: a rule starts with an address/LEN, e.g. 203.0.113.0/24");
	if (xrl_parse_prefix(argv[0], &d.family, d.addr, &d.plen, err, errlen))
		return -1;
	/* getopt would read "-rate" as short options; name the word instead */
	for (c = 1; c < argc; c++)
		if (argv[c][0] == '-' && argv[c][1] != '-' && !takes_value(argv[c - 1]))
			return xrl_fail(err, errlen, "unknown option '%s': options start with --, e.g. --rate 100/s",
				    argv[c]);
	optind = 0;  /* glibc: restart getopt on this argv */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case OPT_RATE:
			if (xrl_parse_rate(optarg, &d.rate, &d.rate_period, err, errlen))
				return -1;
			have_rate = true;
			break;
		case OPT_BURST:
			if (xrl_parse_uint("burst", optarg, 1, 0xffffffffULL, &v, err, errlen))
				return -1;
			d.burst = (__u32)v;
			have_burst = true;
			break;
		case OPT_BYTES:
			if (xrl_parse_size("byte rate", optarg, XRL_MAX_BYTE_RATE, &d.byte_rate, err, errlen))
				return -1;
			have_bytes = true;
			break;
		case OPT_BYTES_BURST:
			if (xrl_parse_size("byte burst", optarg, XRL_MAX_BYTE_BURST, &d.byte_burst, err, errlen))
				return -1;
			have_bb = true;
			break;
		case OPT_PER:
			if (xrl_parse_uint("--per length", optarg, 0, 128, &v, err, errlen))
				return -1;
			d.per_len = (__u8)v;
			have_per = true;
			break;
		case OPT_PROTO:
			if (xrl_parse_proto(optarg, &d.proto, err, errlen))
				return -1;
			d.flags |= XRL_F_PROTO;
			break;
		case OPT_DPORT:
			if (xrl_parse_uint("port", optarg, 0, 65535, &v, err, errlen))
				return -1;
			d.dport = (__u16)v;
			have_dport = true;
			break;
		case OPT_SYN:
			d.flags |= XRL_F_SYN;
			break;
		case OPT_GLOBAL:
			d.flags |= XRL_F_GLOBAL;
			break;
		case OPT_ALLOW:
		case OPT_DENY:
			if (d.action == (c == OPT_ALLOW ? XRL_ACT_ALLOW : XRL_ACT_DENY))
				return xrl_fail(err, errlen, "%s given twice", c == OPT_ALLOW ? "--allow" : "--deny");
			if (d.action != XRL_ACT_LIMIT)
				return xrl_fail(err, errlen, "--allow and --deny exclude each other");
			d.action = c == OPT_ALLOW ? XRL_ACT_ALLOW : XRL_ACT_DENY;
			break;
		default:
			if (optopt == OPT_SYN || optopt == OPT_ALLOW || optopt == OPT_DENY ||
			    optopt == OPT_GLOBAL)
				return xrl_fail(err, errlen, "option '%s' takes no value", argv[optind - 1]);
			if (optopt >= OPT_RATE)
				return xrl_fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
			return xrl_fail(err, errlen, "unknown option '%s': expected --rate, --burst, --bytes, --bytes-burst, --per, --proto, --dport, --syn, --global, --allow or --deny",
				    argv[optind - 1]);
		}
	}
	if (optind < argc)
		return xrl_fail(err, errlen, "unexpected word '%s': options start with --, e.g. --rate 100/s",
			    argv[optind]);

	/* match fields; --syn implies TCP */
	if (d.flags & XRL_F_SYN) {
		if ((d.flags & XRL_F_PROTO) && d.proto != IPPROTO_TCP)
			return xrl_fail(err, errlen, "--syn matches TCP only: use it with --proto tcp or alone");
		d.flags |= XRL_F_PROTO;
		d.proto = IPPROTO_TCP;
	}
	if (have_dport) {
		if (!(d.flags & XRL_F_PROTO) || (d.proto != IPPROTO_TCP && d.proto != IPPROTO_UDP))
			return xrl_fail(err, errlen, "--dport needs --proto tcp or --proto udp");
		d.flags |= XRL_F_DPORT;
	}
	if ((d.flags & XRL_F_PROTO) && d.proto == IPPROTO_ICMP && d.family == 6)
		return xrl_fail(err, errlen, "--proto icmp is IPv4: use --proto icmpv6 for an IPv6 prefix");
	if ((d.flags & XRL_F_PROTO) && d.proto == IPPROTO_ICMPV6 && d.family == 4)
		return xrl_fail(err, errlen, "--proto icmpv6 is IPv6: use --proto icmp for an IPv4 prefix");

	if (mode == XRL_RULE_MATCH) {
		const char *extra = have_rate ? "--rate" : have_burst ? "--burst" :
				    have_bytes ? "--bytes" : have_bb ? "--bytes-burst" :
				    have_per ? "--per" : (d.flags & XRL_F_GLOBAL) ? "--global" :
				    d.action == XRL_ACT_ALLOW ? "--allow" :
				    d.action == XRL_ACT_DENY ? "--deny" : NULL;

		if (extra)
			return xrl_fail(err, errlen, "%s does not name a rule: a rule is named by PREFIX [--proto P] [--dport PORT] [--syn]",
				    extra);
		*def = d;
		return 0;
	}

	if (d.action != XRL_ACT_LIMIT) {
		if (have_rate || have_burst || have_bytes || have_bb || have_per ||
		    (d.flags & XRL_F_GLOBAL))
			return xrl_fail(err, errlen, "--%s takes no --rate, --burst, --bytes, --bytes-burst, --per or --global",
				    d.action == XRL_ACT_ALLOW ? "allow" : "deny");
		d.per_len = d.family == 4 ? 32 : 128;   /* top names each denied source */
		*def = d;
		return 0;
	}
	if (!have_rate)
		return xrl_fail(err, errlen, "missing --rate: a rule needs --rate RATE (e.g. 100/s), --allow or --deny");
	if (!have_burst) {
		__u64 per_sec = d.rate / d.rate_period;

		d.burst = per_sec ? (__u32)per_sec : 1;
	}
	if (have_bb && !have_bytes)
		return xrl_fail(err, errlen, "--bytes-burst needs --bytes RATE");
	if (have_bytes && (d.flags & XRL_F_GLOBAL))
		return xrl_fail(err, errlen, "--global shares a packet budget; a byte budget cannot be shared: drop --bytes or --global");
	if (have_bytes) {
		d.flags |= XRL_F_BYTES;
		if (!have_bb)
			d.byte_burst = d.byte_rate;
	}
	if (have_per) {
		if (d.per_len > (d.family == 4 ? 32 : 128))
			return xrl_fail(err, errlen, "invalid --per %u: longer than an IPv%d address (at most %d)",
				    d.per_len, d.family, d.family == 4 ? 32 : 128);
	} else {
		d.per_len = d.family == 4 ? 32 : 64;
	}
	*def = d;
	{
		/* prove it compiles now, so a bad combination is refused at parse time */
		struct xrl_rule tmp;

		if (xrl_rule_compile(&d, 0, &tmp, err, errlen))
			return -1;
	}
	return 0;
}

int xrl_rule_parse_line(const char *line, struct xrl_rule_def *def, char *err, size_t errlen)
{
	char buf[1024], *argv[64], *p, *tok, *save = NULL;
	int argc = 0;

	if (strlen(line) >= sizeof(buf))
		return xrl_fail(err, errlen, "line too long (at most %zu characters)", sizeof(buf) - 2);
	strcpy(buf, line);
	p = strchr(buf, '#');
	if (p)
		*p = 0;
	for (tok = strtok_r(buf, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (argc == 63)
			return xrl_fail(err, errlen, "too many words on one line");
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	if (argc == 0)
		return 0;
	if (xrl_rule_parse_args(argc, argv, XRL_RULE_ADD, def, err, errlen))
		return -1;
	return 1;
}

void xrl_prefix_format(__u8 family, const __u8 addr[16], __u8 plen, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(family == 4 ? AF_INET : AF_INET6, addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, plen);
}

static void format_match_opts(const struct xrl_rule_def *d, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	if ((d->flags & XRL_F_PROTO) && !(d->flags & XRL_F_SYN && d->proto == IPPROTO_TCP &&
					   !(d->flags & XRL_F_DPORT)))
		n += snprintf(buf + n, len - n, " --proto %s", xrl_proto_name(d->proto));
	if ((d->flags & XRL_F_DPORT) && n < len)
		n += snprintf(buf + n, len - n, " --dport %u", d->dport);
	if ((d->flags & XRL_F_SYN) && n < len)
		snprintf(buf + n, len - n, " --syn");
}

void xrl_rule_format_match(const struct xrl_rule_def *def, char *buf, size_t len)
{
	char pfx[64], m[128];

	xrl_prefix_format(def->family, def->addr, def->plen, pfx, sizeof(pfx));
	format_match_opts(def, m, sizeof(m));
	snprintf(buf, len, "%s%s", pfx, m);
}

static const char *period_unit(__u32 period)
{
	return period == 3600 ? "h" : period == 60 ? "m" : "s";
}

void xrl_rule_format(const struct xrl_rule_def *d, char *buf, size_t len)
{
	char match[192];
	size_t n;

	xrl_rule_format_match(d, match, sizeof(match));
	if (d->action == XRL_ACT_ALLOW) {
		snprintf(buf, len, "%s --allow", match);
		return;
	}
	if (d->action == XRL_ACT_DENY) {
		snprintf(buf, len, "%s --deny", match);
		return;
	}
	n = snprintf(buf, len, "%s --rate %llu/%s --burst %u", match,
		     (unsigned long long)d->rate, period_unit(d->rate_period), d->burst);
	if ((d->flags & XRL_F_BYTES) && n < len)
		n += snprintf(buf + n, len - n, " --bytes %llu --bytes-burst %llu",
			      (unsigned long long)d->byte_rate, (unsigned long long)d->byte_burst);
	if (n < len)
		n += snprintf(buf + n, len - n, " --per %u", d->per_len);
	if ((d->flags & XRL_F_GLOBAL) && n < len)
		snprintf(buf + n, len - n, " --global");
}

bool xrl_rule_same_match(const struct xrl_rule_def *a, const struct xrl_rule_def *b)
{
	__u8 ma = a->flags & (XRL_F_PROTO | XRL_F_DPORT | XRL_F_SYN);
	__u8 mb = b->flags & (XRL_F_PROTO | XRL_F_DPORT | XRL_F_SYN);

	return a->family == b->family && a->plen == b->plen &&
	       !memcmp(a->addr, b->addr, 16) && ma == mb &&
	       (!(ma & XRL_F_PROTO) || a->proto == b->proto) &&
	       (!(ma & XRL_F_DPORT) || a->dport == b->dport);
}

bool xrl_rule_same_params(const struct xrl_rule_def *a, const struct xrl_rule_def *b)
{
	return a->action == b->action && a->flags == b->flags && a->per_len == b->per_len &&
	       a->rate == b->rate && a->rate_period == b->rate_period && a->burst == b->burst &&
	       a->byte_rate == b->byte_rate && a->byte_burst == b->byte_burst;
}

int xrl_gcra_compile(__u64 tokens, __u64 period_ns, __u64 burst, struct xrl_gcra *g,
		     char *err, size_t errlen)
{
	unsigned __int128 num, den, t, span, full;
	int s;

	if (!tokens || !period_ns || !burst)
		return xrl_fail(err, errlen, "rate, period and burst must be positive");
	/* smallest shift whose interval fits in 21 bits: then it has 21 significant bits */
	for (s = -48; s <= 48; s++) {
		num = (unsigned __int128)period_ns << (s < 0 ? -s : 0);
		den = (unsigned __int128)tokens << (s > 0 ? s : 0);
		if (num / den < (1u << 21))
			break;
	}
	if (s > 48)
		return xrl_fail(err, errlen, "rate too slow to represent");
	t = (num + den / 2) / den;   /* round to nearest: rate error <= 2^-21 */
	if (t == 0)
		t = 1;
	span = t * burst;
	if (span >= ((unsigned __int128)1 << 62))
		return xrl_fail(err, errlen, "burst %llu too large for this rate", (unsigned long long)burst);
	full = s >= 0 ? span << s : (span + ((unsigned __int128)1 << -s) - 1) >> -s;
	g->interval = (__u64)t;
	g->span = (__u64)span;
	g->full_ns = full > UINT64_MAX ? UINT64_MAX : (__u64)full;
	g->shift = s;
	g->_pad = 0;
	return 0;
}

/* One jiffy (4 ms at HZ=250): the resolution of CLOCK_MONOTONIC_COARSE. */
__u64 xrl_coarse_tick_ns(void)
{
	static __u64 tick;
	struct timespec res;

	if (!tick) {
		if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0 && res.tv_nsec > 0)
			tick = (__u64)res.tv_nsec;
		else
			tick = 10000000;   /* HZ=100, the coarsest there is */
	}
	return tick;
}

int xrl_rule_compile(const struct xrl_rule_def *d, __u32 id, struct xrl_rule *r,
		     char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->version = d->version;
	r->action = d->action;
	r->flags = d->flags;
	r->proto = d->proto;
	r->per_len = d->per_len;
	r->dport = d->dport;
	if (d->action != XRL_ACT_LIMIT)
		return 0;
	if (xrl_gcra_compile(d->rate, (__u64)d->rate_period * NS_PER_SEC, d->burst, &r->pkt,
			     err, errlen))
		return -1;
	if ((d->flags & XRL_F_BYTES) &&
	    xrl_gcra_compile(d->byte_rate, NS_PER_SEC, d->byte_burst, &r->byte, err, errlen))
		return -1;
	/*
	 * The jiffy clock lags real time by up to two ticks and moves a tick at a
	 * time; a bucket that holds three ticks of refill never overflows from
	 * that, so the jiffy clock changes no long-run count.
	 */
	r->coarse = r->pkt.full_ns >= 3 * xrl_coarse_tick_ns() &&
		    (!(d->flags & XRL_F_BYTES) || r->byte.full_ns >= 3 * xrl_coarse_tick_ns());
	return 0;
}

/* Most specific match first: port, then SYN, then protocol, then any. */
static int match_rank(const struct xrl_rule_def *d)
{
	return (d->flags & XRL_F_DPORT ? 4 : 0) + (d->flags & XRL_F_SYN ? 2 : 0) +
	       (d->flags & XRL_F_PROTO ? 1 : 0);
}

/* Does prefix (fa, aa, pa) contain (fb, ab, pb)? */
static bool prefix_contains(__u8 fa, const __u8 *aa, __u8 pa, __u8 fb, const __u8 *ab, __u8 pb)
{
	int i, full = pa / 8, rem = pa % 8;

	if (fa != fb || pa > pb)
		return false;
	for (i = 0; i < full; i++)
		if (aa[i] != ab[i])
			return false;
	if (rem && ((aa[full] ^ ab[full]) & (__u8)(0xff << (8 - rem))))
		return false;
	return true;
}

int xrl_ruleset_compile(const struct xrl_rule_def *defs, const __u32 *ids, int n,
			struct xrl_compiled_prefix **out, int *nout, char *err, size_t errlen)
{
	struct xrl_compiled_prefix *res = calloc(n ? n : 1, sizeof(*res));
	int np = 0, i, j, k;

	if (!res)
		return xrl_fail(err, errlen, "out of memory");
	/* distinct prefixes */
	for (i = 0; i < n; i++) {
		for (j = 0; j < np; j++)
			if (res[j].family == defs[i].family && res[j].plen == defs[i].plen &&
			    !memcmp(res[j].addr, defs[i].addr, 16))
				break;
		if (j == np) {
			res[np].family = defs[i].family;
			res[np].plen = defs[i].plen;
			memcpy(res[np].addr, defs[i].addr, 16);
			np++;
		}
	}
	for (j = 0; j < np; j++) {
		struct xrl_prefix_entry *e = &res[j].entry;
		int plen;

		/* own prefix first, then each enclosing prefix, longest first */
		for (plen = res[j].plen; plen >= 0; plen--) {
			int rank;

			for (rank = 7; rank >= 0; rank--) {
				for (i = 0; i < n; i++) {
					if (defs[i].plen != plen || match_rank(&defs[i]) != rank ||
					    !prefix_contains(defs[i].family, defs[i].addr, defs[i].plen,
							     res[j].family, res[j].addr, res[j].plen))
						continue;
					if (e->count == XRL_MAX_MATCH) {
						char p[64];

						xrl_prefix_format(res[j].family, res[j].addr, res[j].plen,
								  p, sizeof(p));
						free(res);
						return xrl_fail(err, errlen,
							    "too many rules apply to %s: at most %d, counting those of enclosing prefixes",
							    p, XRL_MAX_MATCH);
					}
					k = e->count++;
					if (xrl_rule_compile(&defs[i], ids[i], &e->rules[k], err, errlen)) {
						free(res);
						return -1;
					}
				}
			}
		}
	}
	*out = res;
	*nout = np;
	return 0;
}

int xrl_rules_read_file(const char *file, struct xrl_rule_def *defs, int *count, char *err,
			size_t errlen)
{
	struct xrl_rule_def extra;
	char line[1100], why[XRL_ERRLEN];
	int n = 0, lineno = 0, r, i, rc = 0;
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;

	if (!f) {
		int e = errno;

		xrl_fail(err, errlen, "cannot read %s: %s", file, strerror(e));
		return -e;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = xrl_fail(err, errlen, "%s:%d: line too long", file, lineno);
			break;
		}
		r = xrl_rule_parse_line(line, n < XRL_MAX_RULES ? &defs[n] : &extra, why, sizeof(why));
		if (r > 0 && n == XRL_MAX_RULES) {
			rc = xrl_fail(err, errlen, "%s:%d: more than %d rules", file, lineno,
				      XRL_MAX_RULES);
			break;
		}
		if (r < 0) {
			rc = xrl_fail(err, errlen, "%s:%d: %s", file, lineno, why);
			break;
		}
		for (i = 0; r && i < n && !rc; i++)
			if (xrl_rule_same_match(&defs[i], &defs[n])) {
				char t[192];

				xrl_rule_format_match(&defs[n], t, sizeof(t));
				rc = xrl_fail(err, errlen, "%s:%d: rule %s appears twice", file,
					      lineno, t);
			}
		if (rc)
			break;
		n += r;
	}
	if (f != stdin)
		fclose(f);
	*count = n;
	return rc ? -EINVAL : 0;
}

__u64 xrl_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}
