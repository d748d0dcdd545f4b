/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What top and top --watch say under a flood of new sources, and the
 * sources they always list:
 *  - one line per rule under such a flood (xrl_newsrc_judge): its kind (new
 *    sources over the --new-sources budget, or new sources without one), the
 *    rates, the share of the rule's drops from sources dropped once, and
 *    what answers it (only options the rule lacks are suggested);
 *  - under that flood, the sources dropped once (one sample of the drop
 *    sketch: spoofed sources, each seen once) are counted, not listed: ten
 *    random addresses "DROPPED 8" invite blocking what will never return;
 *  - the sources blocked now by --block rules, read from the penalty box
 *    itself: the sketch samples one drop in XRL_SKETCH_SAMPLE and can miss
 *    them.
 */
#ifndef XRL_TOP_FLOOD_H
#define XRL_TOP_FLOOD_H

#include <stdbool.h>
#include "xrl_cli.h"
#include "xrl_newsrc.h"

/* A rule's sources in the sketch's recent rows. */
struct xrl_flood_tally {
	__u64 drops, once_drops;   /* estimated drops: all, and of sources dropped once */
	__u32 sources, once;
};

/* A source the sketch saw drop once: its estimate is a single sample. */
static inline bool xrl_flood_once(__u64 dropped)
{
	return dropped <= XRL_SKETCH_SAMPLE;
}

static inline void xrl_flood_tally_add(struct xrl_flood_tally *t, __u64 dropped)
{
	t->drops += dropped;
	t->sources++;
	if (xrl_flood_once(dropped)) {
		t->once_drops += dropped;
		t->once++;
	}
}

/* The line of rule d (its match text rule) under a flood (al != XRL_NEWSRC_QUIET); t may be NULL. */
void xrl_flood_line(const struct xrl_rule_def *d, const struct xrl_newsrc_rate *r,
		    enum xrl_newsrc_alert al, const struct xrl_flood_tally *t, const char *rule,
		    char *buf, size_t len);

/*
 * The sources blocked now by the rules in force (defs, ids: nd of them): keys
 * and time left, at most max. The count, or -errno.
 */
int xrl_flood_blocked(const struct xrl_maps *m, const struct xrl_rule_def *defs, const __u32 *ids,
		      int nd, __u64 now, struct xrl_bucket_key *keys, __u64 *left, int max);

#endif /* XRL_TOP_FLOOD_H */
