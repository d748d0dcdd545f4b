// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* --packet-rule: a request rule on a packet rule's fleet budget (xrl_http_packet.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_cluster.h"
#include "xrl_fleet_int.h"
#include "xrl_fleet_keys.h"
#include "xrl_http_packet.h"
#include "xrl_rule.h"

int xrl_http_packet_wanted(const struct xrl_http_rules *rs)
{
	int i;

	for (i = 0; i < rs->n; i++)
		if (rs->rule[i].packet_rule[0])
			return 1;
	return 0;
}

/* The packet rule r names: its index in defs, or -1 with err. */
static int find(const struct xrl_http_rule *r, const struct xrl_rule_def *defs, const __u32 *ids,
		int n, char *err, size_t errlen)
{
	const char *w = r->packet_rule;
	struct xrl_rule_def want;
	char *end, why[256];
	unsigned long id;
	int i;

	id = strtoul(w, &end, 10);
	if (w[0] >= '0' && w[0] <= '9' && !*end) {
		for (i = 0; i < n; i++)
			if (ids[i] == id)
				return i;
		snprintf(err, errlen, "rule '%s': --packet-rule %s: the instance has no rule with "
			 "id %lu (see 'xrl rule list')", r->name, w, id);
		return -1;
	}
	if (xrl_rule_parse_args(1, (char *[]){ (char *)w, NULL }, XRL_RULE_MATCH, &want, why,
				sizeof(why))) {
		snprintf(err, errlen, "rule '%s': --packet-rule %s: %s (a packet rule's prefix, "
			 "or its id: the ID column of 'xrl rule list')", r->name, w, why);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (xrl_rule_same_match(&defs[i], &want))
			return i;
	snprintf(err, errlen, "rule '%s': --packet-rule %s: the instance has no rule of that prefix "
		 "without match fields (name one with match fields by its id: 'xrl rule list')",
		 r->name, w);
	return -1;
}

/* The algorithm's name in the packet rules' words. */
static const char *algo_word(unsigned algo)
{
	return algo == XRL_ALGO_FIXED_WINDOW ? "fixed-window" :
	       algo == XRL_ALGO_SLIDING_WINDOW ? "sliding-window" :
	       algo == XRL_ALGO_SLIDING_LOG ? "sliding-log" : "token-bucket";
}

int xrl_http_packet_resolve(struct xrl_http_rules *rs, const struct xrl_rule_def *defs,
			    const __u32 *ids, int n, int cluster, char *err, size_t errlen)
{
	int i, k;

	for (i = 0; i < rs->n; i++) {
		struct xrl_http_rule *r = &rs->rule[i];
		struct xrl_http_packet *p = &r->pkt;
		const struct xrl_rule_def *d;
		char text[512];
		__u64 burst = r->burst ? r->burst : r->count;

		memset(p, 0, sizeof(*p));
		if (!r->packet_rule[0])
			continue;
		if ((k = find(r, defs, ids, n, err, errlen)) < 0)
			return -1;
		d = &defs[k];
		xrl_rule_format(d, text, sizeof(text));
		if (d->action != XRL_ACT_LIMIT || !(d->flags & XRL_F_GLOBAL) || !d->rate) {
			snprintf(err, errlen, "rule '%s': packet rule %s (id %u) is not a --global "
				 "packet rate limit: its budget is not in Redis to share", r->name, text,
				 ids[k]);
			return -1;
		}
		if (d->algo != r->algo || d->rate != r->count || d->rate_period != r->period_s ||
		    (d->algo == XRL_ALGO_TOKEN_BUCKET && d->burst != burst)) {
			snprintf(err, errlen, "rule '%s': packet rule %s (id %u) is another budget: "
				 "give this rule its --algo %s, --rate and --burst to share it",
				 r->name, text, ids[k], algo_word(d->algo));
			return -1;
		}
		p->set = 1;
		p->id = ids[k];
		p->family = d->family;
		p->plen = d->plen;
		p->per_len = d->per_len;
		memcpy(p->addr, d->addr, sizeof(p->addr));
		p->cluster = cluster;
		xrl_fleet_rule_name(d, p->name);
		/* the daemon's figures, as its round sends them: the one derivation */
		if (xrl_fleet_gcra_figures(d->rate, d->rate_period, d->burst, p->iv, p->span,
					   NULL, NULL)) {
			snprintf(err, errlen, "rule '%s': packet rule %s (id %u) has no rate Redis can take",
				 r->name, text, ids[k]);
			return -1;
		}
		snprintf(p->life, sizeof(p->life), "%llu", XRL_FLEET_TAT_LIFE_NS / 1000);
	}
	return 0;
}

int xrl_http_packet_covers(const struct xrl_http_packet *p, const struct xrl_http_addr *a)
{
	const __u8 *x = a->v4 ? a->a + 12 : a->a;
	int b;

	if (!p->set || (p->family == 4) != !!a->v4)
		return 0;
	for (b = 0; b < p->plen; b++)
		if ((x[b / 8] ^ p->addr[b / 8]) & (0x80 >> (b % 8)))
			return 0;
	return 1;
}

void xrl_http_packet_key(const struct xrl_http_packet *p, const struct xrl_http_addr *a,
			 char *buf, size_t len)
{
	struct xrl_bucket_key k;
	__u8 *ka = (__u8 *)k.addr;
	int b;

	memset(&k, 0, sizeof(k));
	k.family = p->family;
	memcpy(ka, a->v4 ? a->a + 12 : a->a, p->family == 4 ? 4 : 16);
	for (b = p->per_len; b < (p->family == 4 ? 32 : 128); b++)
		ka[b / 8] &= (__u8)~(0x80 >> (b % 8));
	if (p->cluster)
		xrl_fleet_source_key_tagged(xrl_cluster_shard_tag(xrl_fleet_source_shard(
						    &k, XRL_CLUSTER_SHARDS)),
					    p->name, &k, p->per_len, buf, len);
	else
		xrl_fleet_source_key(p->name, &k, p->per_len, buf, len);
}
