// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What the fleet's metrics show: rounds, Redis errors, shares, hosts (all under f->lock). */
#include <stdio.h>
#include <string.h>

#include "xrl_fleet_int.h"
#include "xrl_metrics.h"

const double xrl_fleet_hist_bounds[XRL_FLEET_HIST_BUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
};

void xrl_fleet_count_error(struct xrl_fleet *f)
{
	pthread_mutex_lock(&f->lock);
	f->redis_errors++;
	pthread_mutex_unlock(&f->lock);
}

void xrl_fleet_record_round(struct xrl_fleet *f, double secs, int sources, int tracked)
{
	int b;

	pthread_mutex_lock(&f->lock);
	f->rounds++;
	f->hist_sum += secs;
	for (b = 0; b < XRL_FLEET_HIST_BUCKETS && secs > xrl_fleet_hist_bounds[b]; b++)
		;
	f->hist[b]++;
	f->reported_total += sources;
	f->last_round_tracked = tracked;
	pthread_mutex_unlock(&f->lock);
}

/* name{instance="...",LABEL="value"} v, escaped as the exposition format wants (label NULL: none). */
static void sample(FILE *out, const char *name, const char *inst, const char *label,
		   const char *value, const char *v)
{
	fputs(name, out);
	xrl_metrics_label(out, "{", "instance", inst);
	if (label)
		xrl_metrics_label(out, ",", label, value);
	fprintf(out, "} %s\n", v);
}

static void round_histogram(FILE *out, const struct xrl_fleet *f)
{
	unsigned long cum = 0;
	char v[64], le[32];
	int b;

	xrl_metrics_family(out, "xrl_redis_sync_duration_seconds", "histogram",
			   "Duration of a fleet sync round (maps and Redis).");
	for (b = 0; b <= XRL_FLEET_HIST_BUCKETS; b++) {
		cum += f->hist[b];
		if (b < XRL_FLEET_HIST_BUCKETS)
			snprintf(le, sizeof(le), "%g", xrl_fleet_hist_bounds[b]);
		else
			snprintf(le, sizeof(le), "+Inf");
		snprintf(v, sizeof(v), "%lu", cum);
		sample(out, "xrl_redis_sync_duration_seconds_bucket", f->instance, "le", le, v);
	}
	snprintf(v, sizeof(v), "%.9f", f->hist_sum);
	sample(out, "xrl_redis_sync_duration_seconds_sum", f->instance, NULL, NULL, v);
	snprintf(v, sizeof(v), "%lu", f->rounds);
	sample(out, "xrl_redis_sync_duration_seconds_count", f->instance, NULL, NULL, v);
}

static void rule_families(FILE *out, const struct xrl_fleet *f)
{
	char v[64];
	int id;

	xrl_metrics_family(out, "xrl_fleet_share", "gauge",
			   "This host's current share of each global rule's budget (0..1).");
	for (id = 0; id < XRL_MAX_RULES; id++)
		if (f->rules[id].global) {
			/* none while it holds none: Redis down under closed, or local past the hold */
			snprintf(v, sizeof(v), "%.6f",
				 xrl_fleet_holds_share(f) || f->policy == XRL_POLICY_OPEN ?
				 xrl_fleet_rule_share(&f->rules[id]) : 0.0);
			sample(out, "xrl_fleet_share", f->instance, "rule", f->rules[id].match, v);
		}
	xrl_metrics_family(out, "xrl_fleet_hosts", "gauge",
			   "Hosts running each global rule, as Redis last reported.");
	for (id = 0; id < XRL_MAX_RULES; id++)
		if (f->rules[id].global) {
			snprintf(v, sizeof(v), "%u", f->rules[id].hosts);
			sample(out, "xrl_fleet_hosts", f->instance, "rule", f->rules[id].match, v);
		}
}

/* One family of the cluster's nodes, a sample per node: what(node) as text. */
static void node_family(FILE *out, const struct xrl_fleet *f, const char *name, const char *type,
			const char *help, int what)
{
	const struct xrl_redis *r = &f->redis;
	int n;

	xrl_metrics_family(out, name, type, help);
	for (n = 0; n < r->map->nnodes; n++) {
		const struct xrl_redis_node *nd = &r->node[n];
		char node[300], v[64];

		snprintf(node, sizeof(node), strchr(r->map->node[n].host, ':') ? "[%s]:%d" : "%s:%d",
			 r->map->node[n].host, r->map->node[n].port);
		switch (what) {
		case 0: snprintf(v, sizeof(v), "%d", nd->c != NULL && r->map->master[n]); break;
		case 1: snprintf(v, sizeof(v), "%lu", nd->errors); break;
		case 2: snprintf(v, sizeof(v), "%lu", nd->commands); break;
		case 3: snprintf(v, sizeof(v), "%lu", nd->keys); break;
		default: snprintf(v, sizeof(v), "%.6f", nd->wait_s); break;
		}
		sample(out, name, f->instance, "node", node, v);
	}
}

/*
 * A cluster's nodes (redis-cluster://): whether each is a master in use,
 * its errors, commands, keys sent and the time spent waiting for it. The
 * figures are the round thread's, read without its lock: a scrape may see
 * one round's figures half updated.
 */
static void node_families(FILE *out, const struct xrl_fleet *f)
{
	if (!f->redis.node)
		return;
	node_family(out, f, "xrl_redis_node_up", "gauge",
		    "Whether the cluster node is a master this daemon is connected to (1) or not (0).", 0);
	node_family(out, f, "xrl_redis_node_errors_total", "counter",
		    "Failed connections, lost replies and error replies of the cluster node.", 1);
	node_family(out, f, "xrl_redis_node_commands_total", "counter",
		    "Commands sent to the cluster node.", 2);
	node_family(out, f, "xrl_redis_node_keys_total", "counter",
		    "Keys of the script calls sent to the cluster node (sources and their demand keys).", 3);
	node_family(out, f, "xrl_redis_node_wait_seconds_total", "counter",
		    "Time the daemon spent waiting for the cluster node's replies (its call latency, summed).", 4);
	xrl_metrics_instance_family(out, "xrl_redis_redirects_total", "counter",
				    "MOVED and ASK replies followed (slots moving between masters).",
				    f->instance, f->redis.moved + f->redis.asked);
}

void xrl_fleet_metrics(FILE *out, void *arg)
{
	struct xrl_fleet *f = arg;
	const char *inst = f->instance;

	pthread_mutex_lock(&f->lock);
	xrl_metrics_instance_family(out, "xrl_redis_up", "gauge",
				    "Whether the last exchange with Redis succeeded (1) or not (0).",
				    inst, f->redis_up);
	xrl_metrics_instance_family(out, "xrl_redis_errors_total", "counter",
				    "Failed Redis connections, rounds and refused script calls.",
				    inst, f->redis_errors);
	round_histogram(out, f);
	xrl_metrics_instance_family(out, "xrl_redis_commands_total", "counter",
				    "Commands sent to Redis (EVALSHA, SCRIPT LOAD, AUTH, ...).",
				    inst, f->redis.commands);
	xrl_metrics_instance_family(out, "xrl_fleet_reports_total", "counter",
				    "(rule, source) pairs reported to Redis, over all rounds.",
				    inst, f->reported_total);
	xrl_metrics_instance_family(out, "xrl_redis_keys_repaired_total", "counter",
				    "xrl's Redis keys found holding another type (WRONGTYPE) and deleted.",
				    inst, f->keys_repaired);
	xrl_metrics_instance_family(out, "xrl_redis_evicted_keys_total", "counter",
				    "Keys Redis evicted while this daemon watched (INFO evicted_keys, or its sentinel key lost).",
				    inst, f->evicted_keys);
	node_families(out, f);
	rule_families(out, f);
	xrl_metrics_instance_family(out, "xrl_fleet_sources", "gauge",
				    "Global (rule, source) pairs this host tracks.", inst,
				    (unsigned long long)f->last_round_tracked);
	pthread_mutex_unlock(&f->lock);
}
