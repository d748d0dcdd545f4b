/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What an operator sees of new sources (stats, top, their live views):
 * the rate at which a rule's sources get a bucket, and whether that looks
 * like a spoofed-source flood. Pure parts (static inline, tested on the
 * host through the commands' output) and the one-shot window.
 *
 * The arrivals of new sources under a rule are the sources given a bucket
 * (created) plus the packets refused a bucket by --new-sources
 * (new_refused): a refused source has no bucket, so each of its packets
 * is refused and counted; in a spoofed flood every packet is another
 * source, so packets and sources are the same count.
 */
#ifndef XRL_NEWSRC_H
#define XRL_NEWSRC_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "xrl_cli.h"
#include "xrl_common.h"

/* One-shot `stats` and `top`: new-source rates are counted over this window (two readings). */
#define XRL_NEWSRC_WINDOW_NS 200000000ull
/* top: a rule with --new-sources is flagged when new sources arrive at >= this x its budget... */
#define XRL_NEWSRC_FAR 2
/* ...and its budget refused some in the window; one without --new-sources at >= this many a second. */
#define XRL_NEWSRC_WARN_PER_S 1000

struct xrl_newsrc_rate {
	double created;    /* sources given a bucket per second */
	double refused;    /* packets of sources refused a bucket per second (--new-sources) */
	double arrivals;   /* created + refused */
	double budget;     /* the rule's --new-sources per second, 0 without */
};

enum xrl_newsrc_alert {
	XRL_NEWSRC_QUIET,
	XRL_NEWSRC_OVER_BUDGET,   /* --new-sources: arrivals >= FAR x budget, some refused */
	XRL_NEWSRC_UNBUDGETED,    /* limit rule without --new-sources: >= WARN_PER_S given a bucket */
};

/* A counter's growth per second (a smaller reading: it restarted, what it holds is new). */
static inline double xrl_newsrc_per_s(__u64 a, __u64 b, double secs)
{
	if (secs <= 0)
		return 0;
	return (double)(b >= a ? b - a : b) / secs;
}

static inline double xrl_newsrc_budget(const struct xrl_rule_def *d)
{
	if (!(d->flags & XRL_F_NEWSRC) || !d->new_period)
		return 0;
	return (double)d->new_rate / d->new_period;
}

static inline void xrl_newsrc_rates(const struct xrl_rule_def *d, const struct xrl_rule_stats *a,
				    const struct xrl_rule_stats *b, double secs,
				    struct xrl_newsrc_rate *out)
{
	out->created = xrl_newsrc_per_s(a->created, b->created, secs);
	out->refused = xrl_newsrc_per_s(a->new_refused, b->new_refused, secs);
	out->arrivals = out->created + out->refused;
	out->budget = xrl_newsrc_budget(d);
}

static inline enum xrl_newsrc_alert xrl_newsrc_judge(const struct xrl_rule_def *d,
						     const struct xrl_newsrc_rate *r)
{
	if (d->action != XRL_ACT_LIMIT)
		return XRL_NEWSRC_QUIET;
	if (d->flags & XRL_F_NEWSRC)
		return r->refused > 0 && r->arrivals >= XRL_NEWSRC_FAR * r->budget ?
			XRL_NEWSRC_OVER_BUDGET : XRL_NEWSRC_QUIET;
	return r->created >= XRL_NEWSRC_WARN_PER_S ? XRL_NEWSRC_UNBUDGETED : XRL_NEWSRC_QUIET;
}

static inline const char *xrl_newsrc_alert_name(enum xrl_newsrc_alert a)
{
	return a == XRL_NEWSRC_OVER_BUDGET ? "new_sources_over_budget" :
	       a == XRL_NEWSRC_UNBUDGETED ? "new_sources_unbudgeted" : "none";
}

/* "1/s", "20/m", "100/h": a --new-sources budget as written. */
static inline void xrl_newsrc_budget_text(const struct xrl_rule_def *d, char *buf, size_t len)
{
	snprintf(buf, len, "%llu/%s", (unsigned long long)d->new_rate,
		 d->new_period == 3600 ? "h" : d->new_period == 60 ? "m" : "s");
}

/* top's line for an alert of rule d (its match text rule). */
static inline void xrl_newsrc_alert_line(const struct xrl_rule_def *d, const struct xrl_newsrc_rate *r,
					 enum xrl_newsrc_alert al, const char *rule, char *buf,
					 size_t len)
{
	char a[32], c[32], x[32], bu[32];

	xrl_fmt_count(r->arrivals, a, sizeof(a));
	xrl_fmt_count(r->created, c, sizeof(c));
	xrl_fmt_count(r->refused, x, sizeof(x));
	if (al == XRL_NEWSRC_OVER_BUDGET) {
		xrl_newsrc_budget_text(d, bu, sizeof(bu));
		snprintf(buf, len,
			 "rule %s: new sources arrive at %s/s, %.0fx its --new-sources budget of %s: %s/s refused, %s/s given a bucket (a spoofed-source flood? sources with a bucket keep their own limits)",
			 rule, a, r->budget > 0 ? r->arrivals / r->budget : 0.0, bu, x, c);
	} else {
		snprintf(buf, len,
			 "rule %s: %s new sources/s given a bucket, each passing up to its burst of %u: a spoofed-source flood passes per-source limits (bound it with --new-sources RATE, or cap the rule with --total RATE)",
			 rule, c, d->burst);
	}
}

static inline json_t *xrl_newsrc_alert_json(const struct xrl_rule_def *d, const struct xrl_newsrc_rate *r,
					    enum xrl_newsrc_alert al, const char *rule, const char *line,
					    double window)
{
	json_t *o = json_pack("{s:s,s:s,s:f,s:f,s:f,s:f,s:s}", "alert", xrl_newsrc_alert_name(al),
			      "rule", rule, "new_sources_per_s", r->created,
			      "new_refused_per_s", r->refused, "arrivals_per_s", r->arrivals,
			      "window_s", window, "message", line);

	if (o && (d->flags & XRL_F_NEWSRC))
		json_object_set_new(o, "new_budget_per_s", json_real(r->budget));
	return o;
}

/* Sleep the one-shot window (the caller times its two readings itself). */
static inline void xrl_newsrc_wait(void)
{
	struct timespec d = { 0, (long)XRL_NEWSRC_WINDOW_NS };

	while (nanosleep(&d, &d))
		;
}

/*
 * A --syn-proxy rule absorbing a SYN flood (top and top --watch): at least
 * XRL_SYNFLOOD_PER_S SYNs a second answered with cookies, of which under a
 * tenth come back as handshakes (a crowd of real clients proves most of its
 * cookies).
 */
#define XRL_SYNFLOOD_PER_S 1000.0

struct xrl_synflood_rate {
	double synacks, proven, bad;   /* per second */
};

static inline bool xrl_synflood(const struct xrl_rule_def *d, const struct xrl_rule_stats *a,
				const struct xrl_rule_stats *b, double secs,
				struct xrl_synflood_rate *r)
{
	r->synacks = xrl_newsrc_per_s(a->synack_sent, b->synack_sent, secs);
	r->proven = xrl_newsrc_per_s(a->proven, b->proven, secs);
	r->bad = xrl_newsrc_per_s(a->bad_cookie, b->bad_cookie, secs);
	return (d->policy & XRL_P_SYNPROXY) && r->synacks >= XRL_SYNFLOOD_PER_S &&
	       r->proven * 10 < r->synacks;
}

static inline void xrl_synflood_line(const char *rule, const struct xrl_synflood_rate *r,
				     char *line, size_t len)
{
	char s1[32], s2[32], s3[32];

	xrl_fmt_count(r->synacks, s1, sizeof(s1));
	xrl_fmt_count(r->proven, s2, sizeof(s2));
	xrl_fmt_count(r->bad, s3, sizeof(s3));
	snprintf(line, len,
		 "rule %s: under a SYN flood, absorbed at XDP: %s SYNs/s answered with cookies, %s handshakes/s proven, %s bad cookies/s (no bucket, no kernel work for them)",
		 rule, s1, s2, s3);
}

#endif /* XRL_NEWSRC_H */
