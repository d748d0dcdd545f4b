// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The request layer's metrics (xrl_http_metrics.h). Per rule, by name (a
 * reload keeps the counts of a rule that keeps its name): requests passed,
 * refused by this rule, and refused by another rule while this one would
 * have passed them. The refused keys: a space-saving table of 64 slots (a
 * new key takes the least counted slot, with its count plus one), so the
 * keys refused most are in it whatever the traffic, in bounded memory.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_http_metrics.h"

struct rule_count {
	char name[XRL_HTTP_NAME_MAX];
	unsigned long pass, refuse, other;
};

struct top_slot {
	char rule[XRL_HTTP_NAME_MAX];
	char label[64];
	unsigned long count;
};

struct xrl_http_metrics {
	pthread_mutex_t lock;
	struct rule_count rules[4 * XRL_HTTP_MAX_RULES];   /* names seen since start, bounded */
	int nrules;
	unsigned long waits;
	double wait_seconds;
	struct top_slot top[XRL_HTTP_TOP_SLOTS];
};

struct xrl_http_metrics *xrl_http_metrics_new(void)
{
	struct xrl_http_metrics *m = calloc(1, sizeof(*m));

	if (m)
		pthread_mutex_init(&m->lock, NULL);
	return m;
}

void xrl_http_metrics_free(struct xrl_http_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct rule_count *rule_of(struct xrl_http_metrics *m, const char *name)
{
	int i;

	for (i = 0; i < m->nrules; i++)
		if (!strcmp(m->rules[i].name, name))
			return &m->rules[i];
	if (m->nrules == (int)(sizeof(m->rules) / sizeof(m->rules[0])))
		return NULL;
	snprintf(m->rules[m->nrules].name, sizeof(m->rules[0].name), "%s", name);
	return &m->rules[m->nrules++];
}

void xrl_http_metrics_decision(struct xrl_http_metrics *m, const struct xrl_http_rules *rules,
			       const struct xrl_http_figures *per, int n, int pass,
			       const char *label, __u64 wait_ns)
{
	const char *refuser = NULL;
	int i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < n; i++) {
		struct rule_count *c = rule_of(m, rules->rule[per[i].rule].name);

		if (!c)
			continue;
		if (pass)
			c->pass++;
		else if (!per[i].pass) {
			c->refuse++;
			refuser = refuser ? refuser : rules->rule[per[i].rule].name;
		} else
			c->other++;
	}
	if (wait_ns) {
		m->waits++;
		m->wait_seconds += (double)wait_ns / 1e9;
	}
	if (!pass && refuser && label) {
		struct top_slot *least = &m->top[0];

		for (i = 0; i < XRL_HTTP_TOP_SLOTS; i++) {
			struct top_slot *t = &m->top[i];

			if (t->count && !strcmp(t->rule, refuser) && !strcmp(t->label, label)) {
				t->count++;
				goto done;
			}
			if (t->count < least->count)
				least = t;
		}
		snprintf(least->rule, sizeof(least->rule), "%s", refuser);
		snprintf(least->label, sizeof(least->label), "%s", label);
		least->count++;
	}
done:
	pthread_mutex_unlock(&m->lock);
}

static int by_count(const void *a, const void *b)
{
	const struct top_slot *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

void xrl_http_metrics_write(struct xrl_http_metrics *m, FILE *f, const char *inst,
			    const struct xrl_http_redis_stats *redis, unsigned long policy_decisions,
			    const struct xrl_httpd_stats *h)
{
	static const char *const result[3] = { "pass", "refuse", "refused_by_other_rule" };
	struct top_slot top[XRL_HTTP_TOP_SLOTS];
	int i, k;

	pthread_mutex_lock(&m->lock);
	fputs("# HELP xrl_http_decisions_total Requests decided, per matching rule: passed, refused "
	      "by the rule, or refused by another rule while this one would have passed it.\n"
	      "# TYPE xrl_http_decisions_total counter\n", f);
	for (i = 0; i < m->nrules; i++)
		for (k = 0; k < 3; k++)
			fprintf(f, "xrl_http_decisions_total{instance=\"%s\",rule=\"%s\",result=\"%s\"} %lu\n",
				inst, m->rules[i].name, result[k],
				k == 0 ? m->rules[i].pass : k == 1 ? m->rules[i].refuse : m->rules[i].other);
	fprintf(f, "# HELP xrl_http_queue_waits_total Answers held for their slot (leaky bucket).\n"
		"# TYPE xrl_http_queue_waits_total counter\nxrl_http_queue_waits_total{instance=\"%s\"} %lu\n"
		"# HELP xrl_http_queue_wait_seconds_total Time answers were held.\n"
		"# TYPE xrl_http_queue_wait_seconds_total counter\n"
		"xrl_http_queue_wait_seconds_total{instance=\"%s\"} %.6f\n", inst, m->waits, inst,
		m->wait_seconds);
	memcpy(top, m->top, sizeof(top));
	pthread_mutex_unlock(&m->lock);
	qsort(top, XRL_HTTP_TOP_SLOTS, sizeof(top[0]), by_count);
	fputs("# HELP xrl_http_top_refused_requests Requests refused, for the keys refused most "
	      "(an address, or hash:... for a header or argument key).\n"
	      "# TYPE xrl_http_top_refused_requests gauge\n", f);
	for (i = 0; i < XRL_HTTP_TOP_SHOWN && top[i].count; i++)
		fprintf(f, "xrl_http_top_refused_requests{instance=\"%s\",rule=\"%s\",key=\"%s\"} %lu\n",
			inst, top[i].rule,
			top[i].label, top[i].count);
	if (redis) {
		unsigned long cum = 0;

		fprintf(f, "# HELP xrl_http_redis_calls_total --global calls sent to Redis.\n"
			"# TYPE xrl_http_redis_calls_total counter\nxrl_http_redis_calls_total{instance=\"%s\"} %lu\n"
			"# HELP xrl_http_redis_batches_total Pipelined batches the calls went in.\n"
			"# TYPE xrl_http_redis_batches_total counter\nxrl_http_redis_batches_total{instance=\"%s\"} %lu\n"
			"# HELP xrl_http_redis_failures_total Calls whose connection failed.\n"
			"# TYPE xrl_http_redis_failures_total counter\nxrl_http_redis_failures_total{instance=\"%s\"} %lu\n"
			"# HELP xrl_http_redis_timeouts_total Calls not answered by the deadline.\n"
			"# TYPE xrl_http_redis_timeouts_total counter\nxrl_http_redis_timeouts_total{instance=\"%s\"} %lu\n"
			"# HELP xrl_http_redis_policy_decisions_total Global rules decided by "
			"--on-redis-failure.\n# TYPE xrl_http_redis_policy_decisions_total counter\n"
			"xrl_http_redis_policy_decisions_total{instance=\"%s\"} %lu\n"
			"# HELP xrl_http_redis_call_seconds Latency of the --global calls answered "
			"(their batch's round trip).\n# TYPE xrl_http_redis_call_seconds histogram\n",
			inst, redis->calls, inst, redis->batches, inst, redis->failures, inst,
			redis->timeouts, inst, policy_decisions);
		for (i = 0; i < XRL_HTTP_REDIS_BUCKETS; i++) {
			cum += redis->hist[i];
			fprintf(f, "xrl_http_redis_call_seconds_bucket{instance=\"%s\",le=\"%g\"} %lu\n",
				inst, xrl_http_redis_bucket_s[i], cum);
		}
		cum += redis->hist[XRL_HTTP_REDIS_BUCKETS];
		fprintf(f, "xrl_http_redis_call_seconds_bucket{instance=\"%s\",le=\"+Inf\"} %lu\n"
			"xrl_http_redis_call_seconds_sum{instance=\"%s\"} %.6f\n"
			"xrl_http_redis_call_seconds_count{instance=\"%s\"} %lu\n",
			inst, cum, inst, redis->seconds, inst, cum);
	}
	if (h)
		fprintf(f, "# HELP xrl_http_connections_cut_total Connections the server cut, by why.\n"
			"# TYPE xrl_http_connections_cut_total counter\n"
			"xrl_http_connections_cut_total{instance=\"%s\",why=\"header_deadline\"} %lu\n"
			"xrl_http_connections_cut_total{instance=\"%s\",why=\"crowded\"} %lu\n"
			"xrl_http_connections_cut_total{instance=\"%s\",why=\"full\"} %lu\n",
			inst, h->cut_deadline, inst, h->cut_crowded, inst, h->refused);
}
