// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The sources blocked now per --block rule (xrl_box.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_box.h"

long xrl_census_blocks(const struct xrl_maps *m, const struct xrl_rule_def *defs,
		       const __u32 *ids, int n, __u64 now, long *per_rule)
{
	struct xrl_bucket_key *keys;
	struct xrl_block *vals;
	long total = 0;
	int i, j, got;
	bool any = false;

	for (i = 0; i < n; i++) {
		per_rule[i] = 0;
		any |= (defs[i].action == XRL_ACT_LIMIT && (defs[i].policy & XRL_P_BLOCK));
	}
	if (!any)
		return 0;
	keys = calloc(XRL_BLOCKED_SOURCES, sizeof(*keys));
	vals = calloc(XRL_BLOCKED_SOURCES, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	got = xrl_map_read_all(m->blocked, keys, vals, sizeof(*keys), sizeof(*vals),
			       XRL_BLOCKED_SOURCES);
	for (i = 0; i < got; i++) {
		if ((__s64)(vals[i].until_ns - now) <= 0)
			continue;
		for (j = 0; j < n; j++)
			if (ids[j] == keys[i].rule_id)
				break;
		if (j == n || !(defs[j].policy & XRL_P_BLOCK) || defs[j].version != vals[i].version)
			continue;
		per_rule[j]++;
		total++;
	}
	free(keys);
	free(vals);
	return got < 0 ? got : total;
}
