// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What the fleet's metrics show: rounds, Redis errors, shares, hosts (all under f->lock). */
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
	rule_families(out, f);
	xrl_metrics_instance_family(out, "xrl_fleet_sources", "gauge",
				    "Global (rule, source) pairs this host tracks.", inst,
				    (unsigned long long)f->last_round_tracked);
	pthread_mutex_unlock(&f->lock);
}
