// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fleet's shares and windows, pure functions of its state, and the
 * failure policies' names: what the round's parts (floors, Redis calls,
 * metrics) read. Calls nothing of the other fleet files.
 */
#include "xrl_fleet_int.h"

const char *const xrl_fleet_policy_name[3] = { "local", "open", "closed" };

double xrl_fleet_rule_share(const struct xrl_fleet_rule_state *rs)
{
	return rs->share > 0 ? rs->share : rs->hosts ? 1.0 / rs->hosts : 1.0;
}

/* Hosts are live while they reported within 5 rounds (at least half a second). */
__u64 xrl_fleet_live_window_ns(const struct xrl_fleet *f)
{
	return f->interval_ns * 5 > 500000000ull ? f->interval_ns * 5 : 500000000ull;
}

/* A host's demand counts while it reported within 5 rounds, at least 3 s (it reports once a second). */
__u64 xrl_fleet_demand_window_ns(const struct xrl_fleet *f)
{
	__u64 live = xrl_fleet_live_window_ns(f);

	return live > 3 * XRL_FLEET_DEMAND_NS ? live : 3 * XRL_FLEET_DEMAND_NS;
}

__u64 xrl_fleet_hold_ns(const struct xrl_fleet *f)
{
	return xrl_fleet_demand_window_ns(f);
}

bool xrl_fleet_holds_share(const struct xrl_fleet *f)
{
	return f->redis_up || (f->policy == XRL_POLICY_LOCAL && !f->share_lost);
}

bool xrl_fleet_shard_lost(const struct xrl_fleet *f, unsigned shard, __u64 now)
{
	__u64 down = f->shard_down_ns[shard % XRL_CLUSTER_SHARDS];

	return f->redis.url.cluster && f->policy == XRL_POLICY_LOCAL && down &&
	       now - down >= xrl_fleet_hold_ns(f);
}
