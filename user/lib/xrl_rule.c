// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rule words: one row each (xrl_rule_opts) and what a rule's life
 * needs of them (parsing, the checks across words, `rule save`'s text,
 * equality, compiling one rule).
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_rule.h"
#include "xrl_algo.h"

#define NS_PER_SEC 1000000000ULL

int xrl_opt_rate(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	__u64 count;
	__u32 period;

	if (xrl_parse_rate(arg, &count, &period, err, errlen))
		return -1;
	xrl_opt_store(obj, o->off, o->size, count);
	xrl_opt_store(obj, o->off2, o->size2, period);
	return 0;
}

int xrl_opt_size(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	__u64 v;

	if (xrl_parse_size(o->what, arg, o->max, &v, err, errlen))
		return -1;
	xrl_opt_store(obj, o->off, o->size, v);
	return 0;
}

static int opt_duration(const struct xrl_opt *o, const char *arg, void *obj, char *err,
			size_t errlen)
{
	__u64 ns, pol;

	if (xrl_parse_duration(o->what, arg, o->max, &ns, err, errlen))
		return -1;
	xrl_opt_store(obj, o->off, o->size, ns);
	pol = 0;
	memcpy(&pol, (char *)obj + o->off2, o->size2);
	xrl_opt_store(obj, o->off2, o->size2, pol | o->val);
	return 0;
}

/* the protocol at off; o->val (XRL_F_PROTO) ORed into the flags at off2 */
static int opt_proto(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	__u8 proto, flags;

	if (xrl_parse_proto(arg, &proto, err, errlen))
		return -1;
	memcpy(&flags, (char *)obj + o->off2, 1);
	xrl_opt_store(obj, o->off, o->size, proto);
	xrl_opt_store(obj, o->off2, o->size2, flags | o->val);
	return 0;
}

/* the most ports and ranges one --dport word may list before they are merged */
#define DPORT_WORDS 256

static int range_cmp(const void *pa, const void *pb)
{
	const struct xrl_port_range *a = pa, *b = pb;

	return a->lo != b->lo ? (a->lo < b->lo ? -1 : 1) : (a->hi < b->hi ? -1 : a->hi > b->hi);
}

/*
 * --dport PORTS: "443", or a set of ports and ranges "80,443,8000-8100",
 * stored in its normal form (sorted, overlapping and adjacent ranges
 * merged, duplicates gone: 443,80,81 is 80-81,443), so every spelling of
 * one set is one rule and `rule save` writes it one way. The first port in
 * dport (the one port of a one-port rule).
 */
static int opt_dport(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	struct xrl_rule_def *d = obj;
	struct xrl_port_range in[DPORT_WORDS];
	const char *p = arg;
	int n = 0, m = 0, i;

	(void)o;
	for (;;) {
		char *end;
		unsigned long lo, hi;

		if (*p < '0' || *p > '9')
			goto bad;
		lo = strtoul(p, &end, 10);
		hi = lo;
		if (*end == '-') {
			p = end + 1;
			if (*p < '0' || *p > '9')
				goto bad;
			hi = strtoul(p, &end, 10);
		}
		if (lo > 65535 || hi > 65535)
			return xrl_fail(err, errlen, "invalid --dport '%s': a port is 0 to 65535", arg);
		if (lo > hi)
			return xrl_fail(err, errlen, "invalid --dport '%s': the range %lu-%lu runs backwards; write it low-high (%lu-%lu)",
					arg, lo, hi, hi, lo);
		if (n == DPORT_WORDS)
			return xrl_fail(err, errlen, "invalid --dport '%s': more than %d ports and ranges in one word",
					arg, DPORT_WORDS);
		in[n].lo = (__u16)lo;
		in[n++].hi = (__u16)hi;
		if (!*end)
			break;
		if (*end != ',')
			goto bad;
		p = end + 1;
	}
	qsort(in, (size_t)n, sizeof(in[0]), range_cmp);
	for (i = 1; i < n; i++) {
		if (in[i].lo <= (unsigned)in[m].hi + 1) {
			if (in[i].hi > in[m].hi)
				in[m].hi = in[i].hi;
		} else {
			in[++m] = in[i];
		}
	}
	n = m + 1;
	if (n > XRL_MAX_PORT_RANGES)
		return xrl_fail(err, errlen, "--dport '%s' is %d ports and ranges (after merging); a rule takes at most %d: join neighbours into a range (8000-8100), or split the set over two rules with the same prefix",
				arg, n, XRL_MAX_PORT_RANGES);
	memset(d->ports, 0, sizeof(d->ports));
	memcpy(d->ports, in, (size_t)n * sizeof(in[0]));
	d->nports = (__u8)n;
	d->dport = in[0].lo;
	return 0;
bad:
	return xrl_fail(err, errlen, "invalid --dport '%s': expected a port (443), or ports and ranges joined by commas (80,443,8000-8100)",
			arg);
}

/* --dst PREFIX: an address or ADDR/LEN of the rule's family, longer than /0 */
static int opt_dst(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	struct xrl_rule_def *d = obj;
	__u8 fam, addr[16], len;

	(void)o;
	if (xrl_parse_prefix(arg, &fam, addr, &len, err, errlen))
		return -1;
	if (fam != d->family)
		return xrl_fail(err, errlen, "--dst %s is IPv%d and the rule's prefix is IPv%d: a packet's source and destination are of one family; give an IPv%d --dst (or an IPv%d prefix)",
				arg, fam, d->family, d->family, fam);
	if (!len)
		return xrl_fail(err, errlen, "--dst %s holds every destination: leave --dst out", arg);
	memcpy(d->dst, addr, 16);
	d->dst_len = len;
	return 0;
}

/* a word that changes no field: rule_check reads that it was given */
static int opt_given(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	(void)o, (void)arg, (void)obj, (void)err, (void)errlen;
	return 0;
}

#define ADD   (1u << XRL_RULE_ADD)
#define MATCH (1u << XRL_RULE_MATCH)
#define DEF(member) XRL_OPT_FIELD(struct xrl_rule_def, member)
#define DEF2(member) XRL_OPT_FIELD2(struct xrl_rule_def, member)
/* the field of struct xrl_rule the data path reads, where compiling is a plain copy */
#define RULE(member) XRL_OPT_COPY(struct xrl_rule, member)
#define RULE2(member) XRL_OPT_COPY2(struct xrl_rule, member)

/* rows of xrl_rule_opts, for rule_check */
enum {
	RO_RATE, RO_BURST, RO_BYTES, RO_BYTES_BURST, RO_NEW_SOURCES, RO_NEW_BURST, RO_TOTAL,
	RO_TOTAL_BURST, RO_PER, RO_PROTO, RO_DPORT, RO_DST, RO_SYN, RO_GLOBAL, RO_ALGO,
	RO_ALLOW, RO_DENY, RO_SHADOW, RO_BLOCK, RO_BLOCK_SPOOFABLE, RO_SYN_PROXY,
	RO_N,
};

static const struct xrl_opt rule_opts[RO_N];

static const char *period_unit(__u32 period)
{
	return period == 3600 ? "h" : period == 60 ? "m" : "s";
}

/* a rate, "--NAME N/UNIT": its count is 1 or more when given, 0 when not */
static int fmt_rate(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	unsigned long long v = xrl_opt_load(obj, o->off, o->size);

	if (!v)
		return 0;
	return snprintf(buf, len, " --%s %llu/%s", o->name, v,
			period_unit((__u32)xrl_opt_load(obj, o->off2, o->size2)));
}

/* a number, when it is not 0 (--bytes: 1 or more when given) */
static int fmt_count(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	unsigned long long v = xrl_opt_load(obj, o->off, o->size);

	return v ? snprintf(buf, len, " --%s %llu", o->name, v) : 0;
}

/* a number that qualifies the row o->with names (--new-burst: --new-sources), with it */
static int fmt_with(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	const struct xrl_opt *w = &rule_opts[o->with - 1];

	if (!xrl_opt_load(obj, w->off, w->size))
		return 0;
	return snprintf(buf, len, " --%s %llu", o->name, xrl_opt_load(obj, o->off, o->size));
}

/* --burst: a token bucket's; a window algorithm has none */
static int fmt_burst(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	const struct xrl_rule_def *d = obj;

	return d->algo == XRL_ALGO_TOKEN_BUCKET ? fmt_with(o, obj, buf, len) : 0;
}

/* --proto, unless --syn alone implies it (--syn --dport needs it written) */
static int fmt_proto(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	const struct xrl_rule_def *d = obj;

	if (!(d->flags & XRL_F_PROTO) ||
	    (d->flags & XRL_F_SYN && d->proto == IPPROTO_TCP && !(d->flags & XRL_F_DPORT)))
		return 0;
	return snprintf(buf, len, " --%s %s", o->name, xrl_proto_name(d->proto));
}

void xrl_rule_format_ports(const struct xrl_rule_def *d, char *buf, size_t len)
{
	size_t k = 0;
	int i;

	buf[0] = 0;
	if (xrl_rule_one_port(d)) {
		snprintf(buf, len, "%u", d->dport);
		return;
	}
	for (i = 0; i < d->nports && i < XRL_MAX_PORT_RANGES && k < len; i++) {
		const struct xrl_port_range *r = &d->ports[i];

		k += (size_t)snprintf(buf + k, len - k, r->lo == r->hi ? "%s%u" : "%s%u-%u",
				      i ? "," : "", r->lo, r->hi);
	}
}

/* one port as a number ("--dport 443"), a set in its normal form */
static int fmt_dport(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	const struct xrl_rule_def *d = obj;
	char set[XRL_PORTS_TEXT];

	if (!(d->flags & XRL_F_DPORT))
		return 0;
	xrl_rule_format_ports(d, set, sizeof(set));
	return snprintf(buf, len, " --%s %s", o->name, set);
}

static int fmt_dst(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	const struct xrl_rule_def *d = obj;
	char pfx[64];

	if (!d->dst_len)
		return 0;
	xrl_prefix_format(d->family, d->dst, d->dst_len, pfx, sizeof(pfx));
	return snprintf(buf, len, " --%s %s", o->name, pfx);
}

static int fmt_algo(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	const struct xrl_rule_def *d = obj;

	if (d->algo == XRL_ALGO_TOKEN_BUCKET)
		return 0;
	return snprintf(buf, len, " --%s %s", o->name, xrl_algo_name(d->algo));
}

/* --per: every limit rule has its length (a default when not given) */
static int fmt_per(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	const struct xrl_rule_def *d = obj;

	return d->action == XRL_ACT_LIMIT ? snprintf(buf, len, " --%s %u", o->name, d->per_len) : 0;
}

static int fmt_block(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	const struct xrl_rule_def *d = obj;
	char dur[32];

	if (!(d->policy & XRL_P_BLOCK))
		return 0;
	xrl_duration_format(d->block_ns, dur, sizeof(dur));
	return snprintf(buf, len, " --%s %s", o->name, dur);
}

/* stores nothing: a --block rule whose sources are not proven was given it */
static int fmt_block_spoofable(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	const struct xrl_rule_def *d = obj;

	if (!(d->policy & XRL_P_BLOCK) || xrl_rule_source_proven(d))
		return 0;
	return snprintf(buf, len, " --%s", o->name);
}

/*
 * One row per rule word: parsing (parse, the field(s), range), the modes
 * that take it, `rule save`'s text (format, at save_rank), equality (the
 * fields of the rows that are not match words: xrl_rule_same_params), the
 * plain copies of compiling (RULE), and an example the round-trip test of
 * every row uses. Checks across words and defaults derived from other
 * words are in rule_check; GCRA parameters in xrl_rule_compile.
 *
 * save_rank is the order of the words in `rule save`'s text. The fleet
 * names a rule in Redis by a hash of that text, so the order of the words
 * of existing rows must stay: a new row takes a rank after the others.
 */
static const struct xrl_opt rule_opts[RO_N] = {
	[RO_RATE] = { "rate", 0, "RATE", xrl_opt_rate, DEF(rate), DEF2(rate_period), ADD,
		      XRL_OPT_CHOICE, .help = "limit to RATE packets per source: N[/s|/m|/h]",
		      .format = fmt_rate, .save_rank = 5, .example = "--rate 100/s" },
	[RO_BURST] = { "burst", 0, "N", xrl_opt_uint, DEF(burst), .modes = ADD, .min = 1,
		       .max = 0xffffffffULL, .what = "burst",
		       .help = "packets a source may send at once (default: the rate per second)",
		       .format = fmt_burst, .save_rank = 7, XRL_OPT_WITH(RO_RATE),
		       .example = "--rate 6000/m --burst 7" },
	[RO_BYTES] = { "bytes", 0, "RATE", xrl_opt_size, DEF(byte_rate), .modes = ADD,
		       .max = XRL_MAX_BYTE_RATE, .what = "byte rate",
		       .help = "limit to RATE bytes per second (beside --rate, or alone: a byte-only rule)",
		       .format = fmt_count, .save_rank = 8, .example = "--bytes 10M" },
	[RO_BYTES_BURST] = { "bytes-burst", 0, "SIZE", xrl_opt_size, DEF(byte_burst), .modes = ADD,
			     .max = XRL_MAX_BYTE_BURST, .what = "byte burst",
			     .help = "bytes a source may send at once (default: the byte rate)",
			     .format = fmt_with, .save_rank = 9, XRL_OPT_WITH(RO_BYTES),
			     .example = "--rate 10/s --bytes 1M --bytes-burst 64k" },
	[RO_NEW_SOURCES] = { "new-sources", 0, "RATE", xrl_opt_rate, DEF(new_rate), DEF2(new_period),
			     .modes = ADD,
			     .help = "give at most RATE new sources a bucket: N[/s|/m|/h] (per host)",
			     .format = fmt_rate, .save_rank = 10,
			     .example = "--rate 10/s --new-sources 50/m" },
	[RO_NEW_BURST] = { "new-burst", 0, "N", xrl_opt_uint, DEF(new_burst), .modes = ADD, .min = 1,
			   .max = 0xffffffffULL, .what = "new-source burst",
			   .help = "new sources at once (default: the new-source rate per second)",
			   .format = fmt_with, .save_rank = 11, XRL_OPT_WITH(RO_NEW_SOURCES),
			   .example = "--rate 10/s --new-sources 5/s --new-burst 9" },
	[RO_TOTAL] = { "total", 0, "RATE", xrl_opt_rate, DEF(total_rate), DEF2(total_period),
		       .modes = ADD,
		       .help = "also cap all sources of the rule together at RATE packets: N[/s|/m|/h]",
		       .format = fmt_rate, .save_rank = 12, .example = "--rate 10/s --total 1000/h" },
	[RO_TOTAL_BURST] = { "total-burst", 0, "N", xrl_opt_uint, DEF(total_burst), .modes = ADD,
			     .min = 1, .max = 0xffffffffULL, .what = "total burst",
			     .help = "packets all sources may send at once (default: the total rate per second)",
			     .format = fmt_with, .save_rank = 13, XRL_OPT_WITH(RO_TOTAL),
			     .example = "--rate 10/s --total 100/s --total-burst 150" },
	[RO_PER] = { "per", 0, "LEN", xrl_opt_uint, DEF(per_len), .modes = ADD, .max = 128,
		     .what = "--per length",
		     .help = "one bucket per /LEN block of sources (default /32, /64)",
		     .format = fmt_per, .save_rank = 14, RULE(per_len),
		     .example = "--rate 10/s --per 24" },
	[RO_PROTO] = { "proto", 0, "tcp|udp|icmp|icmpv6", opt_proto, DEF(proto), DEF2(flags),
		       ADD | MATCH, .val = XRL_F_PROTO, .help = "match the protocol",
		       .format = fmt_proto, .save_rank = 0, RULE(proto), RULE2(flags),
		       .example = "--proto udp --rate 10/s" },
	/* one port is copied to the rule's dport; a set is compiled (xrl_rule_compile) */
	[RO_DPORT] = { "dport", 0, "PORTS", opt_dport, DEF(dport), .modes = ADD | MATCH,
		       .what = "port",
		       .help = "match the destination port: 443, or up to 8 ports and ranges 80,443,8000-8100",
		       .format = fmt_dport, .save_rank = 1, RULE(dport),
		       .example = "--proto tcp --dport 8000-8100,443,80,444 --rate 10/s" },
	/* compiled by xrl_rule_compile */
	[RO_DST] = { "dst", 0, "PREFIX", opt_dst, DEF(dst_len), .modes = ADD | MATCH,
		     .what = "destination prefix",
		     .help = "match the destination address: ADDR or ADDR/LEN, of the rule's family",
		     .format = fmt_dst, .save_rank = 20,
		     .example = "--dst 192.0.2.10 --proto tcp --dport 80,443 --rate 10/s" },
	[RO_SYN] = { "syn", 0, NULL, xrl_opt_flag, DEF(flags), .modes = ADD | MATCH,
		     .val = XRL_F_SYN, .help = "match TCP SYN without ACK",
		     .format = xrl_opt_format_flag, .save_rank = 2, RULE(flags),
		     .example = "--syn --rate 10/s" },
	/* its field, flags, also holds the bits rule_check derives (XRL_F_BYTES, ...): compared whole */
	[RO_GLOBAL] = { "global", 0, NULL, xrl_opt_flag, DEF(flags), .modes = ADD,
			.val = XRL_F_GLOBAL, .help = "share the budget across the fleet (xrl daemon)",
			.format = xrl_opt_format_flag, .save_rank = 15, RULE(flags),
			.example = "--rate 10/s --global" },
	[RO_ALGO] = { "algo", 0, "ALGO", xrl_opt_enum, DEF(algo), .modes = ADD, .what = XRL_ALGO_NAMES,
		      .help = "token-bucket (default), or a count per window of the rate's unit: fixed-window, sliding-window, sliding-log",
		      .format = fmt_algo, .save_rank = 6, RULE(algo),
		      .example = "--rate 10/s --algo sliding-window" },
	[RO_ALLOW] = { "allow", 0, NULL, xrl_opt_set, DEF(action), .modes = ADD,
		       .flags = XRL_OPT_CHOICE, .val = XRL_ACT_ALLOW, .help = "pass the packet",
		       .format = xrl_opt_format_set, .save_rank = 3, RULE(action),
		       .example = "--allow" },
	[RO_DENY] = { "deny", 0, NULL, xrl_opt_set, DEF(action), .modes = ADD,
		      .flags = XRL_OPT_CHOICE, .val = XRL_ACT_DENY, .help = "drop the packet",
		      .format = xrl_opt_format_set, .save_rank = 4, RULE(action),
		      .example = "--proto udp --dport 53 --deny" },
	[RO_SHADOW] = { "shadow", 0, NULL, xrl_opt_flag, DEF(policy), .modes = ADD,
			.val = XRL_P_SHADOW,
			.help = "decide and count, but pass what the rule would drop (shadow_dropped)",
			.format = xrl_opt_format_flag, .save_rank = 18, RULE(policy),
			.example = "--rate 10/s --shadow" },
	[RO_BLOCK] = { "block", 0, "DURATION", opt_duration, DEF(block_ns), DEF2(policy),
		       .modes = ADD, .max = XRL_MAX_BLOCK_S, .val = XRL_P_BLOCK,
		       .what = "--block duration",
		       .help = "drop a source over its limit entirely for DURATION from its first drop: 30s, 10m, 1h",
		       .format = fmt_block, .save_rank = 16, RULE(block_ns), RULE2(policy),
		       .example = "--rate 10/s --block 10m --block-spoofable" },
	/* stores nothing: a --block rule whose sources are not proven needs it (rule_check) */
	[RO_BLOCK_SPOOFABLE] = { "block-spoofable", 0, NULL, opt_given, .modes = ADD,
				 .help = "--block although packets spoofing a victim's address can trigger it and shut the victim out",
				 .format = fmt_block_spoofable, .save_rank = 17,
				 .example = "--rate 10/s --block 30s --block-spoofable" },
	[RO_SYN_PROXY] = { "syn-proxy", 0, NULL, xrl_opt_flag, DEF(policy), .modes = ADD,
			   .val = XRL_P_SYNPROXY,
			   .help = "answer SYNs of new sources with a cookie at XDP; a source gets a bucket once its ACK proves the handshake (needs --proto tcp --dport)",
			   .format = xrl_opt_format_flag, .save_rank = 19, RULE(policy),
			   .example = "--proto tcp --dport 443 --rate 10/s --syn-proxy --block 1h" },
};

_Static_assert(RO_N <= 64, "xrl_opt_seen has a bit per row: at most 64 rows");

static const char *const rule_mode_names[] = {
	[XRL_RULE_ADD] = "add", [XRL_RULE_MATCH] = "match",
};
static const char *const rule_mode_refusal[] = {
	[XRL_RULE_ADD] = NULL,
	[XRL_RULE_MATCH] = "does not name a rule: a rule is named by PREFIX",
};

const struct xrl_opt_table xrl_rule_opts = {
	.name = "rule", .opts = rule_opts, .n = RO_N, .nmodes = 2,
	.mode_names = rule_mode_names, .mode_refusal = rule_mode_refusal,
};

#define GIVEN(row) XRL_SEEN(seen, row)

static const char *const algo_names[] = {
	[XRL_ALGO_TOKEN_BUCKET] = "token-bucket", [XRL_ALGO_FIXED_WINDOW] = "fixed-window",
	[XRL_ALGO_SLIDING_WINDOW] = "sliding-window", [XRL_ALGO_SLIDING_LOG] = "sliding-log",
};

const char *xrl_algo_name(__u8 algo)
{
	return algo < sizeof(algo_names) / sizeof(algo_names[0]) ? algo_names[algo] : "?";
}

/* A window algorithm's words: a count per window of the rate's unit, packets only, local. */
static int algo_check(const struct xrl_rule_def *d, xrl_opt_seen seen, char *err, size_t errlen)
{
	const char *a = xrl_algo_name(d->algo);
	const char *w = d->rate_period == 3600 ? "hour" : d->rate_period == 60 ? "minute" : "second";
	__u64 max = d->algo == XRL_ALGO_SLIDING_LOG ? XRL_LOG_MAX :
		    d->algo == XRL_ALGO_SLIDING_WINDOW ? XRL_SW_MAX : XRL_FW_MAX;

	if (GIVEN(RO_BURST))
		return xrl_fail(err, errlen, "--burst is a token-bucket setting: --algo %s admits --rate's count per window (--rate 10/s: 10 in each 1-s window) and has no burst; drop --burst",
			    a);
	if (GIVEN(RO_BYTES) || GIVEN(RO_BYTES_BURST))
		return xrl_fail(err, errlen, "--bytes is a token bucket: --algo %s counts packets only; drop --bytes or use --algo token-bucket",
			    a);
	if (d->algo == XRL_ALGO_SLIDING_LOG && d->rate > max)
		return xrl_fail(err, errlen, "--algo sliding-log keeps at most %llu packets per source in its log (the bound of XRL_LOG_MAX): --rate %llu per %s is above it; use --algo sliding-window for larger limits",
			    (unsigned long long)max, (unsigned long long)d->rate, w);
	if (d->rate > max)
		return xrl_fail(err, errlen, "--algo %s counts at most %llu packets per window: --rate %llu per %s is above it",
			    a, (unsigned long long)max, (unsigned long long)d->rate, w);
	return 0;
}

/* Which combinations of the given options make a rule, and its defaults. */
static int rule_check(struct xrl_rule_def *d, enum xrl_rule_mode mode, xrl_opt_seen seen,
		      char *err, size_t errlen)
{
	int row;

	/* match fields; --syn implies TCP */
	if (d->flags & XRL_F_SYN) {
		if ((d->flags & XRL_F_PROTO) && d->proto != IPPROTO_TCP)
			return xrl_fail(err, errlen, "--syn matches TCP only: use it with --proto tcp or alone");
		d->flags |= XRL_F_PROTO;
		d->proto = IPPROTO_TCP;
	}
	if (GIVEN(RO_DPORT)) {
		if (!(d->flags & XRL_F_PROTO) || (d->proto != IPPROTO_TCP && d->proto != IPPROTO_UDP))
			return xrl_fail(err, errlen, "--dport needs --proto tcp or --proto udp");
		d->flags |= XRL_F_DPORT;
	}
	if ((d->flags & XRL_F_PROTO) && d->proto == IPPROTO_ICMP && d->family == 6)
		return xrl_fail(err, errlen, "--proto icmp is IPv4: use --proto icmpv6 for an IPv6 prefix");
	if ((d->flags & XRL_F_PROTO) && d->proto == IPPROTO_ICMPV6 && d->family == 4)
		return xrl_fail(err, errlen, "--proto icmpv6 is IPv6: use --proto icmp for an IPv4 prefix");
	if (mode == XRL_RULE_MATCH)
		return 0;   /* the table refused every other option */

	if (GIVEN(RO_ALLOW) && GIVEN(RO_DENY))
		return xrl_fail(err, errlen, "--allow and --deny exclude each other");
	if (d->action != XRL_ACT_LIMIT) {
		/* no bucket: of the other words, only the match fields */
		for (row = 0; row < RO_N; row++)
			if (GIVEN(row) && row != RO_ALLOW && row != RO_DENY &&
			    !(rule_opts[row].modes & MATCH)) {
				char m[128];

				xrl_opts_list(&xrl_rule_opts, XRL_RULE_MATCH, m, sizeof(m));
				return xrl_fail(err, errlen, "--%s takes no --%s: a rule with --allow or --deny has no bucket; it takes only %s",
					    d->action == XRL_ACT_ALLOW ? "allow" : "deny",
					    rule_opts[row].name, m);
			}
		d->per_len = d->family == 4 ? 32 : 128;   /* top names each denied source */
		return 0;
	}
	if (GIVEN(RO_SYN_PROXY)) {
		if (!(d->flags & XRL_F_DPORT) || d->proto != IPPROTO_TCP)
			return xrl_fail(err, errlen, "--syn-proxy answers the SYNs of TCP services: give it --proto tcp --dport PORTS");
		if (d->flags & XRL_F_SYN)
			return xrl_fail(err, errlen, "--syn-proxy judges the whole handshake (SYN and ACK): drop --syn");
		if (d->policy & XRL_P_SHADOW)
			return xrl_fail(err, errlen, "--syn-proxy answers SYNs itself and cannot only count: drop --shadow (or --syn-proxy)");
	}
	if (!GIVEN(RO_RATE) && !GIVEN(RO_BYTES))
		return xrl_fail(err, errlen, "missing --rate: a rule needs --rate RATE (e.g. 100/s), --bytes RATE, --allow or --deny");
	if (d->algo != XRL_ALGO_TOKEN_BUCKET && !GIVEN(RO_RATE))
		return xrl_fail(err, errlen, "--algo %s counts packets per window and needs --rate N/UNIT (e.g. 10/s); a byte-only rule is a token bucket",
				xrl_algo_name(d->algo));
	if (d->algo != XRL_ALGO_TOKEN_BUCKET && algo_check(d, seen, err, errlen))
		return -1;
	if (!GIVEN(RO_RATE)) {
		/* a byte-only rule: no packet bucket (rate 0), nothing a packet count needs */
		if (GIVEN(RO_BURST))
			return xrl_fail(err, errlen, "--burst is a packet burst and needs --rate RATE; a byte-only rule takes --bytes-burst SIZE");
		if (GIVEN(RO_TOTAL))
			return xrl_fail(err, errlen, "--total caps packets and needs --rate RATE for the sources' own limit");
		d->rate = 0;
		d->rate_period = 0;
		d->burst = 0;
	}
	if (GIVEN(RO_BYTES) && GIVEN(RO_GLOBAL))
		return xrl_fail(err, errlen, "--global shares a packet budget; a byte budget cannot be shared: drop --bytes or --global");
	/* a number that qualifies another word (--new-burst: --new-sources) needs it */
	for (row = 0; row < RO_N; row++) {
		const struct xrl_opt *o = &rule_opts[row];

		if (o->with && GIVEN(row) && !GIVEN(o->with - 1))
			return xrl_fail(err, errlen, "--%s needs --%s %s", o->name,
					rule_opts[o->with - 1].name, rule_opts[o->with - 1].arg);
	}
	/*
	 * and defaults to it: a rate's count per second (at least 1: --burst of
	 * --rate 10/s is 10), a byte rate itself (--bytes-burst of --bytes 1M is 1M)
	 */
	for (row = 0; row < RO_N; row++) {
		const struct xrl_opt *o = &rule_opts[row], *w;
		unsigned long long v;

		if (!o->with || GIVEN(row) || !GIVEN(o->with - 1))
			continue;
		w = &rule_opts[o->with - 1];
		v = xrl_opt_load(d, w->off, w->size);
		if (w->size2)
			v /= xrl_opt_load(d, w->off2, w->size2);
		xrl_opt_store(d, o->off, o->size, v ? v : 1);
	}
	if (GIVEN(RO_BYTES))
		d->flags |= XRL_F_BYTES;
	if (GIVEN(RO_NEW_SOURCES))
		d->flags |= XRL_F_NEWSRC;
	if (GIVEN(RO_TOTAL))
		d->flags |= XRL_F_TOTAL;
	if (GIVEN(RO_BLOCK_SPOOFABLE) && !GIVEN(RO_BLOCK))
		return xrl_fail(err, errlen, "--block-spoofable goes with --block DURATION (it accepts that a spoofed source can trigger the block)");
	if (GIVEN(RO_BLOCK) && !xrl_rule_source_proven(d) && !GIVEN(RO_BLOCK_SPOOFABLE)) {
		char dur[32];

		xrl_duration_format(d->block_ns, dur, sizeof(dur));
		return xrl_fail(err, errlen, "--block on this rule can be triggered by spoofed packets: its packets' source addresses are not proven (UDP, ICMP and TCP SYNs need no handshake), so anyone can send in a victim's name and shut the victim out for %s; add --block-spoofable to block anyway",
				dur);
	}
	if (GIVEN(RO_PER)) {
		if (d->per_len > (d->family == 4 ? 32 : 128))
			return xrl_fail(err, errlen, "invalid --per %u: longer than an IPv%d address (at most %d)",
				    d->per_len, d->family, d->family == 4 ? 32 : 128);
	} else {
		d->per_len = d->family == 4 ? 32 : 64;
	}
	{
		/* prove it compiles now, so a bad combination is refused at parse time */
		struct xrl_rule tmp;

		if (xrl_rule_compile(d, 0, &tmp, err, errlen))
			return -1;
	}
	return 0;
}

int xrl_rule_parse_args(int argc, char **argv, enum xrl_rule_mode mode,
			struct xrl_rule_def *def, char *err, size_t errlen)
{
	struct xrl_rule_def d;
	xrl_opt_seen seen = 0;
	int i = 1;

	memset(&d, 0, sizeof(d));
	d.action = XRL_ACT_LIMIT;
	if (argc < 1 || argv[0][0] == '-')
		return xrl_fail(err, errlen, "missing prefix: a rule starts with an address/LEN, e.g. 203.0.113.0/24");
	if (xrl_parse_prefix(argv[0], &d.family, d.addr, &d.plen, err, errlen))
		return -1;
	if (xrl_opts_parse(&xrl_rule_opts, mode, argc, argv, &i, &d, &seen, err, errlen))
		return -1;
	if (i < argc)
		return xrl_fail(err, errlen, "unexpected word '%s': options start with --, e.g. --rate 100/s",
			    argv[i]);
	if (rule_check(&d, mode, seen, err, errlen))
		return -1;
	*def = d;
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

void xrl_rule_format_match(const struct xrl_rule_def *def, char *buf, size_t len)
{
	size_t n;

	xrl_prefix_format(def->family, def->addr, def->plen, buf, len);
	n = strlen(buf);
	xrl_opts_format(&xrl_rule_opts, MATCH, def, buf, len, &n);
}

void xrl_rule_format(const struct xrl_rule_def *d, char *buf, size_t len)
{
	size_t n;

	xrl_prefix_format(d->family, d->addr, d->plen, buf, len);
	n = strlen(buf);
	xrl_opts_format(&xrl_rule_opts, ADD | MATCH, d, buf, len, &n);
}

bool xrl_rule_source_proven(const struct xrl_rule_def *d)
{
	/*
	 * A packet's source address can be forged, so a rule proves its
	 * sources only behind the SYN proxy: a source there gets a bucket once
	 * its ACK has returned the cookie sent to that address (a completed
	 * handshake). Every other rule judges sources a spoofer can name.
	 */
	return (d->policy & XRL_P_SYNPROXY) != 0;
}

bool xrl_rule_one_port(const struct xrl_rule_def *d)
{
	return d->nports == 0 || (d->nports == 1 && d->ports[0].lo == d->ports[0].hi);
}

/* The rule's --dport set in its normal form (one port: a range of one); 0 without --dport. */
static int port_set(const struct xrl_rule_def *d, struct xrl_port_range *out)
{
	if (!(d->flags & XRL_F_DPORT))
		return 0;
	if (d->nports == 0 || d->nports > XRL_MAX_PORT_RANGES) {
		out[0].lo = out[0].hi = d->dport;
		return 1;
	}
	memcpy(out, d->ports, d->nports * sizeof(out[0]));
	return d->nports;
}

bool xrl_rule_same_match(const struct xrl_rule_def *a, const struct xrl_rule_def *b)
{
	return !xrl_rule_match_cmp(a, b);
}

bool xrl_rule_same_params(const struct xrl_rule_def *a, const struct xrl_rule_def *b)
{
	return xrl_opts_same(&xrl_rule_opts, MATCH, a, b);
}

int xrl_rule_compile(const struct xrl_rule_def *d, __u32 id, struct xrl_rule *r,
		     char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->version = d->version;
	xrl_opts_copy(&xrl_rule_opts, d, r);   /* the rows' RULE fields */
	if ((d->flags & XRL_F_DPORT) && !xrl_rule_one_port(d)) {
		/* a set: XRL_F_DPORT is the one-port test alone, the ranges are XRL_F_MORE's */
		r->nports = (__u8)port_set(d, r->ports);
		r->flags = (__u8)((r->flags & ~XRL_F_DPORT) | XRL_F_MORE);
		r->dport = 0;
	}
	if (d->dst_len) {
		r->flags |= XRL_F_MORE;
		r->dst_len = d->dst_len;
		memcpy(r->dst, d->dst, 16);
	}
	if (d->action != XRL_ACT_LIMIT)
		return 0;
	if (d->algo != XRL_ALGO_TOKEN_BUCKET) {
		r->win_ns = (__u64)d->rate_period * NS_PER_SEC;
		r->win_limit = (__u32)d->rate;
	}
	/*
	 * A byte-only rule (rate 0) has a packet dimension that always admits:
	 * interval and span 0 (the packet word never runs ahead of the clock).
	 */
	if (d->rate && xrl_gcra_compile(d->rate, (__u64)d->rate_period * NS_PER_SEC, d->burst,
					&r->pkt, err, errlen))
		return -1;
	if (!d->rate && !(d->flags & XRL_F_BYTES))
		return xrl_fail(err, errlen, "a limit rule needs --rate or --bytes");
	if ((d->flags & XRL_F_BYTES) &&
	    xrl_gcra_compile(d->byte_rate, NS_PER_SEC, d->byte_burst, &r->byte, err, errlen))
		return -1;
	if ((d->flags & XRL_F_NEWSRC) &&
	    xrl_gcra_compile(d->new_rate, (__u64)d->new_period * NS_PER_SEC, d->new_burst,
			     &r->newsrc, err, errlen))
		return -1;
	if (d->flags & XRL_F_TOTAL) {
		if (xrl_gcra_compile(d->total_rate, (__u64)d->total_period * NS_PER_SEC,
				     d->total_burst, &r->total, err, errlen))
			return -1;
		r->total_batch = xrl_total_batch(d->total_burst, xrl_cpus());
	}
	/*
	 * The jiffy clock lags real time by up to two ticks (plus the kernel's
	 * lateness in advancing jiffies, a fraction of a tick) and moves a tick at a
	 * time; a bucket that holds three ticks of refill never overflows from
	 * that, so the jiffy clock changes no long-run count.
	 */
	r->coarse = (!d->rate || r->pkt.full_ns >= 3 * xrl_coarse_tick_ns()) &&
		    (!(d->flags & XRL_F_BYTES) || r->byte.full_ns >= 3 * xrl_coarse_tick_ns()) &&
		    (!(d->flags & XRL_F_NEWSRC) || r->newsrc.full_ns >= 3 * xrl_coarse_tick_ns()) &&
		    (!(d->flags & XRL_F_TOTAL) || r->total.full_ns >= 3 * xrl_coarse_tick_ns());
	/* windows start on UTC boundaries: decided on the exact clock, never a lagging one */
	if (d->algo != XRL_ALGO_TOKEN_BUCKET)
		r->coarse = 0;
	return 0;
}

/*
 * Prefixes in address order, a prefix before the longer ones it contains:
 * family, address, length. An enclosing prefix then comes before every
 * prefix it contains, and the prefixes it contains come in one run.
 */
int xrl_rule_prefix_cmp(const struct xrl_rule_def *a, const struct xrl_rule_def *b)
{
	int c;

	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	if ((c = memcmp(a->addr, b->addr, 16)))
		return c;
	return a->plen < b->plen ? -1 : a->plen > b->plen;
}

int xrl_rule_match_cmp(const struct xrl_rule_def *a, const struct xrl_rule_def *b)
{
	__u8 ma = a->flags & (XRL_F_PROTO | XRL_F_DPORT | XRL_F_SYN);
	__u8 mb = b->flags & (XRL_F_PROTO | XRL_F_DPORT | XRL_F_SYN);
	__u8 pa = ma & XRL_F_PROTO ? a->proto : 0, pb = mb & XRL_F_PROTO ? b->proto : 0;
	struct xrl_port_range sa[XRL_MAX_PORT_RANGES], sb[XRL_MAX_PORT_RANGES];
	int na, nb, i, c = xrl_rule_prefix_cmp(a, b);

	if (c)
		return c;
	if (ma != mb)
		return ma < mb ? -1 : 1;
	if (pa != pb)
		return pa < pb ? -1 : 1;
	/* port sets in normal form: equal sets, however written, compare equal */
	na = port_set(a, sa);
	nb = port_set(b, sb);
	for (i = 0; i < na && i < nb; i++)
		if ((c = range_cmp(&sa[i], &sb[i])))
			return c;
	if (na != nb)
		return na < nb ? -1 : 1;
	if (a->dst_len != b->dst_len)
		return a->dst_len < b->dst_len ? -1 : 1;
	return a->dst_len ? memcmp(a->dst, b->dst, 16) : 0;
}

