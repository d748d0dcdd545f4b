/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The request layer's rules file: one rule per line, `#` comments.
 *
 *   NAME --key KEY[+KEY...] --rate RATE [--burst N] [--algo ALGO]
 *        [--path PREFIX] [--method M]... [--missing pass|refuse] [--queue N]
 *        [--global] [--escalate RATE --block DURATION] [--packet-rule PREFIX|ID]
 *
 * KEY: ip (the client address after trusted proxies: IPv4 /32, IPv6 /64),
 * ip/LEN (IPv4 prefix length; IPv6 stays /64) or ip/LEN,LEN6, header:NAME,
 * arg:NAME. ALGO: token-bucket (GCRA, the default), fixed-window,
 * sliding-window, sliding-log (the data path's), leaky-bucket (a queue:
 * --queue N). --global: the budget is the fleet's, in Redis (token bucket and
 * fixed window). --escalate RATE --block DURATION (a rule keyed by ip alone):
 * an address this rule refuses more than RATE times in a second is dropped at
 * XDP by the instance for DURATION (xrl_http_escalate.h). --packet-rule
 * PREFIX|ID (a --global rule keyed by ip alone): the budget is the
 * instance's packet rule's, in the daemon's own Redis keys, so packets and
 * requests of a source draw from one budget (xrl_http_packet.h). A bad file is
 * refused whole, with the line and column.
 */
#ifndef XRL_HTTP_RULES_H
#define XRL_HTTP_RULES_H

#include <stddef.h>
#include <linux/types.h>

#include "xrl_common.h"

#define XRL_HTTP_MAX_RULES   64
#define XRL_HTTP_MAX_KEYS    4
#define XRL_HTTP_MAX_METHODS 8
#define XRL_HTTP_NAME_MAX    64
#define XRL_HTTP_PATH_MAX    256
#define XRL_HTTP_QUEUE_MAX   100000
/* the request layer's own algorithm beside the data path's XRL_ALGO_* */
#define XRL_HTTP_ALGO_LEAKY  100

enum xrl_http_key_kind { XRL_HTTP_KEY_IP, XRL_HTTP_KEY_HEADER, XRL_HTTP_KEY_ARG };

struct xrl_http_key {
	enum xrl_http_key_kind kind;
	int plen4, plen6;                 /* ip: the prefix lengths keyed */
	char name[XRL_HTTP_NAME_MAX];     /* header: or arg: name */
};

/* A --packet-rule's packet rule, as found in the instance's rule set (xrl_http_packet.h). */
struct xrl_http_packet {
	int set;
	__u32 id;                         /* its id in the instance */
	__u8 family, plen, per_len;       /* its prefix and --per */
	__u8 addr[16];
	int cluster;                      /* Redis is a cluster: the daemon's keys carry a shard's tag */
	char name[17];                    /* its name in Redis (xrl_fleet_rule_name) */
	char iv[32], span[32], life[32];  /* its GCRA figures (µs) as the daemon sends them */
};

struct xrl_http_rule {
	char name[XRL_HTTP_NAME_MAX];
	struct xrl_http_key keys[XRL_HTTP_MAX_KEYS];
	int nkeys;
	__u64 count;                      /* --rate: count per period */
	__u32 period_s;
	__u64 burst;                      /* token bucket: 0 = count */
	unsigned algo;                    /* XRL_ALGO_* or XRL_HTTP_ALGO_LEAKY */
	char path[XRL_HTTP_PATH_MAX];     /* prefix of the request's path; "" any */
	char methods[XRL_HTTP_MAX_METHODS][16];
	int nmethods;                     /* 0: any */
	int missing_refuse;               /* --missing refuse: a request without the key is refused */
	__u32 queue;                      /* leaky bucket: requests waiting per key at most */
	int global;                       /* --global: decided in Redis, one call per request */
	__u32 escalate;                   /* --escalate RATE: refusals a second; 0 none */
	__u64 block_ns;                   /* --block DURATION of an escalation */
	char packet_rule[48];             /* --packet-rule PREFIX|ID as written; "" none */
	struct xrl_http_packet pkt;       /* resolved when the rules are loaded */
	/* compiled */
	struct xrl_gcra g;                /* token bucket, leaky bucket */
	__u64 win_ns;                     /* windows */
};

struct xrl_http_rules {
	struct xrl_http_rule rule[XRL_HTTP_MAX_RULES];
	int n;
};

/*
 * Parse one line (no newline) into r: 1 a rule, 0 blank or comment, -1
 * with err "column C: ..." (the column 1-based).
 */
int xrl_http_rule_parse_line(const char *line, struct xrl_http_rule *r, char *err, size_t errlen);
/* Parse a whole text; 0, or -1 with err "line L, column C: ...". */
int xrl_http_rules_parse(const char *text, struct xrl_http_rules *out, char *err, size_t errlen);
/* Read and parse a file; 0, or -1 with err "FILE: line L, column C: ...". */
int xrl_http_rules_read(const char *file, struct xrl_http_rules *out, char *err, size_t errlen);
/* The algorithm's name in rules and headers. */
const char *xrl_http_algo_name(unsigned algo);

#endif /* XRL_HTTP_RULES_H */
