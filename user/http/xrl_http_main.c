// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xrl http (xrl_http.h): options, the rule set's life (load, SIGHUP
 * reload kept atomic: a bad file changes nothing), the hardened HTTP server
 * (user/daemon/xrl_httpd.c) and its handler: GET /auth (204 pass, 403
 * refuse: what nginx auth_request accepts) and GET /check (200, or 429
 * with an RFC 9457 problem body), both with the RateLimit fields.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "xrl_http.h"
#include "xrl_http_client.h"
#include "xrl_http_decide.h"
#include "xrl_http_escalate.h"
#include "xrl_http_packet.h"
#include "xrl_http_headers.h"
#include "xrl_http_metrics.h"
#include "xrl_http_redis.h"
#include "xrl_http_rules.h"
#include "xrl_httpd.h"
#include "xrl_log.h"
#include "xrl_escalate.h"
#include "xrl_instance.h"
#include "xrl_maps.h"
#include "xrl_rule.h"

struct service {
	struct xrl_http_proxies proxies;
	pthread_rwlock_t lock;          /* readers: decisions; writer: a reload's swap */
	struct xrl_http_state *state;
	__u32 max_keys;
	unsigned long decisions[2];     /* refused, passed */
	struct xrl_http_redis *redis;   /* --redis; NULL: none */
	struct xrl_http_metrics *metrics;
	char instance[65];
	struct xrl_httpd *httpd;
	struct xrl_http_global global;
	/* --escalate: the refusals' count and the instance's maps (open once a rule escalates) */
	struct xrl_http_esc *esc;
	struct xrl_maps esc_maps;
	int esc_open;
	const char *pin_dir;
};

static struct service svc;

static __u64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* ---------------------------------------------------------------- rules */

/*
 * State for rules: a rule unchanged since the old set (same name, same
 * words) keeps its keys' state, shared with old (xrl_http_state_new), so a
 * decision waiting for Redis that finishes on old later takes from the
 * table the new set's requests read; the others start afresh.
 */
static struct xrl_http_state *state_for(const struct xrl_http_rules *rules,
					struct xrl_http_state *old)
{
	return xrl_http_state_new(rules, svc.max_keys, old);
}

/*
 * A rule set with --escalate needs the instance's maps (its XDP penalty box):
 * opened with the first such rule set, kept open. 0, or -1 with err.
 */
static int esc_ready(const struct xrl_http_rules *rules, char *err, size_t errlen)
{
	struct xrl_instance in = { .name = svc.instance, .pin_dir = svc.pin_dir, .lock_fd = -1,
				   .rules_fd = -1 };
	int i, any = 0;

	for (i = 0; i < rules->n; i++)
		any |= rules->rule[i].escalate != 0;
	if (!any || svc.esc_open)
		return 0;
	if (!svc.esc) {
		__u64 seed = 0;

		getrandom(&seed, sizeof(seed), 0);
		svc.esc = xrl_http_esc_new(seed);
		if (!svc.esc) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	if (xrl_instance_open(&in, XRL_LOCK_NONE, 0, 0, &svc.esc_maps, err, errlen)) {
		size_t l = strlen(err);

		snprintf(err + l, errlen - l, " (--escalate drops at XDP in instance '%s': attach it "
			 "and run xrl http as root)", svc.instance);
		return -1;
	}
	svc.esc_open = 1;
	return 0;
}

/*
 * The request (client address a) was refused: count its refusals by each
 * refusing rule that escalates, and put it in the XDP penalty box when one
 * says so (rules: the decision's rule set).
 */
static void escalate(const struct xrl_http_rules *rules, const struct xrl_http_figures *per, int n,
		     const struct xrl_http_addr *a, const char *text, __u64 now)
{
	int i;

	for (i = 0; i < n; i++) {
		const struct xrl_http_rule *r = &rules->rule[per[i].rule];
		char dur[32];
		__u32 count;
		int rc;

		if (!r->escalate || per[i].pass || per[i].missing || !svc.esc_open ||
		    !xrl_http_esc_refused(svc.esc, per[i].rule, r->escalate, a, now, &count))
			continue;
		rc = xrl_escalate_add(&svc.esc_maps, a->v4 ? 4 : 6, a->v4 ? a->a + 12 : a->a, now,
				      r->block_ns, r->name, count, r->escalate);
		xrl_duration_format(r->block_ns, dur, sizeof(dur));
		if (rc)
			xrl_log(XRL_LOG_ERR, "cannot escalate %s (rule %s) into instance '%s': %s",
				text, r->name, svc.instance, strerror(-rc));
		else
			xrl_log(XRL_LOG_WARN, "escalated %s to XDP for %s: rule %s refused it %u "
				"times in a second (--escalate %u)", text, dur, r->name, count,
				r->escalate);
	}
}

/*
 * A rule set with --packet-rule: find each packet rule in the instance's rule
 * set as it is now (read at every load: a changed packet rule is a new
 * budget in Redis, so reload xrl http after changing one). 0, or -1 with err.
 */
static int pkt_ready(struct xrl_http_rules *rules, char *err, size_t errlen)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	struct xrl_instance in = { .name = svc.instance, .pin_dir = svc.pin_dir, .lock_fd = -1,
				   .rules_fd = -1 };
	struct xrl_maps m;
	int n = 0, rc;

	if (!xrl_http_packet_wanted(rules))
		return 0;
	if (!svc.redis) {
		snprintf(err, errlen, "--packet-rule takes from the packet rule's budget in Redis: "
			 "give --redis (the daemon's)");
		return -1;
	}
	xrl_maps_none(&m);
	if (xrl_instance_open(&in, XRL_LOCK_NONE, 0, XRL_OPEN_NO_IFACE, &m, err, errlen)) {
		size_t l = strlen(err);

		snprintf(err + l, errlen - l, " (--packet-rule reads the rules of instance '%s': "
			 "run xrl http as root, with --instance naming it)", svc.instance);
		return -1;
	}
	rc = xrl_ruleset_read(&m, defs, ids, &n);
	xrl_instance_close(&in, &m);
	if (rc) {
		snprintf(err, errlen, "cannot read the rules of instance '%s': %s", svc.instance,
			 strerror(-rc));
		return -1;
	}
	return xrl_http_packet_resolve(rules, defs, ids, n, xrl_http_redis_cluster(svc.redis), err,
				       errlen);
}

/*
 * Let go of a rule set's state: the service's reference (a reload, the
 * stop) or a decision's that waited for Redis; the last frees it.
 */
static void state_put(struct xrl_http_state *s)
{
	if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
		xrl_http_state_free(s);
}

static int load_rules(const char *file, int reload)
{
	static struct xrl_http_rules rules;
	struct xrl_http_state *s, *old;
	char err[512];

	if (xrl_http_rules_read(file, &rules, err, sizeof(err))) {
		xrl_log(XRL_LOG_ERR, "%s%s", err, reload ? "; the rules in force are kept" : "");
		return -1;
	}
	if (esc_ready(&rules, err, sizeof(err)) || pkt_ready(&rules, err, sizeof(err))) {
		xrl_log(XRL_LOG_ERR, "%s: %s%s", file, err, reload ? "; the rules in force are kept" : "");
		return -1;
	}
	pthread_rwlock_wrlock(&svc.lock);
	old = svc.state;
	s = state_for(&rules, old);
	if (!s) {
		pthread_rwlock_unlock(&svc.lock);
		xrl_log(XRL_LOG_ERR, "%s: out of memory for the keys' tables (--max-keys %u)%s",
			file, svc.max_keys, reload ? "; the rules in force are kept" : "");
		return -1;
	}
	svc.state = s;
	pthread_rwlock_unlock(&svc.lock);
	state_put(old);
	xrl_log(XRL_LOG_INFO, "%s %d rule%s from %s", reload ? "reloaded" : "loaded", rules.n,
		rules.n == 1 ? "" : "s", file);
	return 0;
}

/* ---------------------------------------------------------------- requests */

static const char *header_of(void *arg, const char *name)
{
	return MHD_lookup_connection_value(arg, MHD_HEADER_KIND, name);
}

struct joined {
	char buf[4096];
	size_t len;
	int over;
};

/* every X-Forwarded-For field of the request, joined by commas as RFC 9110 allows */
static enum MHD_Result join_xff(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	struct joined *j = cls;
	size_t n = strlen(value);

	(void)kind;
	if (strcasecmp(key, "X-Forwarded-For"))
		return MHD_YES;
	if (j->len + n + 2 > sizeof(j->buf)) {
		j->over = 1;
		return MHD_NO;
	}
	if (j->len)
		j->buf[j->len++] = ',';
	memcpy(j->buf + j->len, value, n);
	j->len += n;
	j->buf[j->len] = 0;
	return MHD_YES;
}

static int peer_of(struct MHD_Connection *c, struct xrl_http_addr *a)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	memset(a, 0, sizeof(*a));
	if (sa && sa->sa_family == AF_UNIX) {
		/* a peer on the unix socket is this host: 127.0.0.1 (for --trusted-proxy) */
		a->a[10] = a->a[11] = 0xff;
		a->a[12] = 127;
		a->a[15] = 1;
		a->v4 = 1;
		return 0;
	}
	if (sa && sa->sa_family == AF_INET) {
		memcpy(a->a + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		a->a[10] = a->a[11] = 0xff;
		a->v4 = 1;
		return 0;
	}
	if (sa && sa->sa_family == AF_INET6) {
		static const __u8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		memcpy(a->a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		a->v4 = !memcmp(a->a, mapped, 12);
		return 0;
	}
	return -1;
}

/* An answer's response, with its fields; NULL on no memory. */
static struct MHD_Response *response(const char *type, const char *body,
				     const struct xrl_http_rule *r, const struct xrl_http_figures *f)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	char v[256];

	if (!resp)
		return NULL;
	MHD_add_response_header(resp, "Content-Type", type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	if (r) {
		xrl_http_policy_field(r->name, f, v, sizeof(v));
		MHD_add_response_header(resp, "RateLimit-Policy", v);
		xrl_http_ratelimit_field(r->name, f, v, sizeof(v));
		MHD_add_response_header(resp, "RateLimit", v);
		if (!f->pass) {
			snprintf(v, sizeof(v), "%llu", (unsigned long long)f->retry_s);
			MHD_add_response_header(resp, "Retry-After", v);
		}
	}
	return resp;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned int status, const char *type,
			      const char *body, const struct xrl_http_rule *r,
			      const struct xrl_http_figures *f)
{
	struct MHD_Response *resp = response(type, body, r, f);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/*
 * Held answers (the leaky bucket's) of a server in event loops
 * (xrl_httpd_start_pool), which must not sleep: the connection is suspended
 * with its answer made, and the holder thread resumes it when it is due; the
 * handler, called again, sends it. A list sorted by due time.
 */
enum { HELD = 1, PENDING };

struct held {
	int kind;   /* HELD */
	struct held *next;
	struct MHD_Connection *c;
	struct MHD_Response *resp;
	unsigned int status;
	__u64 due_ns;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* on CLOCK_MONOTONIC */
	struct held *list;
	pthread_t thread;
	int started, stop;
} holder = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *holder_run(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&holder.lock);
	while (!holder.stop) {
		struct held *h = holder.list;
		__u64 now = clock_ns(CLOCK_MONOTONIC);

		if (!h) {
			pthread_cond_wait(&holder.cond, &holder.lock);
		} else if (h->due_ns <= now) {
			holder.list = h->next;
			pthread_mutex_unlock(&holder.lock);
			MHD_resume_connection(h->c);   /* the handler sends h->resp */
			pthread_mutex_lock(&holder.lock);
		} else {
			struct timespec ts = { (time_t)(h->due_ns / 1000000000ull),
					       (long)(h->due_ns % 1000000000ull) };

			pthread_cond_timedwait(&holder.cond, &holder.lock, &ts);
		}
	}
	/* stopping: the server may not stop with connections suspended; answer them now */
	while (holder.list) {
		struct held *h = holder.list;

		holder.list = h->next;
		MHD_resume_connection(h->c);
	}
	pthread_mutex_unlock(&holder.lock);
	return NULL;
}

static int holder_start(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&holder.cond, &a);
	pthread_condattr_destroy(&a);
	if (pthread_create(&holder.thread, NULL, holder_run, NULL))
		return -1;
	holder.started = 1;
	return 0;
}

static void holder_stop(void)
{
	if (!holder.started)
		return;
	pthread_mutex_lock(&holder.lock);
	holder.stop = 1;
	pthread_cond_signal(&holder.cond);
	pthread_mutex_unlock(&holder.lock);
	pthread_join(holder.thread, NULL);
}

/*
 * Hold c's answer until due_ns: suspend it (h is its request's state until
 * it is sent). 0, or -1 when the service is stopping (not held: send now).
 */
static int hold(struct held *h)
{
	struct held **p;

	pthread_mutex_lock(&holder.lock);
	if (holder.stop) {
		pthread_mutex_unlock(&holder.lock);
		return -1;
	}
	MHD_suspend_connection(h->c);
	for (p = &holder.list; *p && (*p)->due_ns <= h->due_ns; p = &(*p)->next)
		;
	h->next = *p;
	*p = h;
	pthread_cond_signal(&holder.cond);
	pthread_mutex_unlock(&holder.lock);
	return 0;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	return answer(c, status, "text/plain; charset=utf-8", msg, NULL, NULL);
}

/*
 * A decision waiting for Redis: its connection is suspended while the Redis
 * thread asks its global rules in turn (on_redis), then resumed; the
 * handler, called again, finishes it (conclude). It holds a reference to
 * the rule set it started on.
 */
struct pending {
	int kind;   /* PENDING */
	int auth, asking;
	struct MHD_Connection *c;
	struct xrl_http_state *state;
	struct xrl_http_addr client;
	char addr[INET6_ADDRSTRLEN];
	struct xrl_http_decision d;
};

/* one spare per thread: a decision's 17 KiB are not asked of malloc each time */
static __thread struct pending *spare;

static struct pending *pending_get(void)
{
	struct pending *p = spare;

	spare = NULL;
	return p ? p : malloc(sizeof(*p));
}

static void pending_put(struct pending *p)
{
	if (!spare)
		spare = p;
	else
		free(p);
}

/* The Redis thread's answer to p's rule p->asking: ask the next, or resume. */
static void on_redis(void *arg, int got)
{
	struct pending *p = arg;
	int i;

	xrl_http_decide_answer(p->state, &p->d, p->asking, got, &svc.global);
	i = xrl_http_decide_next(&p->d);
	if (i >= 0) {
		p->asking = i;
		xrl_http_redis_ask(svc.redis, &p->state->rules.rule[p->d.idx[i]], p->d.gname[i],
				   &p->d.per[i], on_redis, p);
		return;
	}
	MHD_resume_connection(p->c);   /* the handler concludes */
}

/* The decision's last stage, its metrics and escalation: 1 pass, 0 refuse; f its figures. */
static int settle(struct xrl_http_state *st, struct xrl_http_decision *d,
		  const struct xrl_http_addr *client, const char *addr, struct xrl_http_figures *fig)
{
	struct xrl_http_figures f;
	int pass;

	pass = xrl_http_decide_finish(st, d, &f);
	if (f.rule >= 0) {
		char label[64];
		const struct xrl_http_rule *rr = &st->rules.rule[f.rule];
		int i, by_ip = 1;

		for (i = 0; i < rr->nkeys; i++)
			by_ip &= rr->keys[i].kind == XRL_HTTP_KEY_IP;
		/* a header or argument may be a secret (an API key): only its hash is shown */
		if (by_ip)
			snprintf(label, sizeof(label), "%s", addr);
		else
			snprintf(label, sizeof(label), "hash:%016llx", (unsigned long long)f.key);
		xrl_http_metrics_decision(svc.metrics, &st->rules, d->per, d->n, pass,
					  pass || f.missing ? NULL : label, pass ? f.delay_ns : 0);
		if (!pass)
			escalate(&st->rules, d->per, d->n, client, addr, clock_ns(CLOCK_MONOTONIC));
	}
	__atomic_fetch_add(&svc.decisions[pass], 1, __ATOMIC_RELAXED);
	*fig = f;
	return pass;
}

/* The decision's last stage (settle) and its answer. */
static enum MHD_Result conclude(struct MHD_Connection *c, int auth, void **con_cls,
				struct xrl_http_state *st, struct xrl_http_decision *d,
				const struct xrl_http_addr *client, const char *addr)
{
	static const struct xrl_http_figures none = { .rule = -1, .pass = 1 };
	struct xrl_http_figures f;
	struct xrl_http_rule rule;
	char body[512];
	int pass = settle(st, d, client, addr, &f), have_rule = f.rule >= 0;

	if (have_rule)
		rule = st->rules.rule[f.rule];
	else
		f = none;
	if (pass && f.delay_ns) {
		/* leaky bucket: the connection waits suspended for its slot */
		struct held *h = calloc(1, sizeof(*h));

		if (!h || !(h->resp = response("text/plain; charset=utf-8", "",
					       have_rule ? &rule : NULL, &f))) {
			free(h);
			return MHD_NO;
		}
		h->kind = HELD;
		h->c = c;
		h->status = auth ? 204 : 200;
		h->due_ns = clock_ns(CLOCK_MONOTONIC) + f.delay_ns;
		*con_cls = h;
		if (!hold(h))
			return MHD_YES;
		/* stopping: answered now */
		MHD_destroy_response(h->resp);
		free(h);
		*con_cls = NULL;
	}
	if (auth)
		return answer(c, pass ? 204 : 403, "text/plain; charset=utf-8", "",
			      have_rule ? &rule : NULL, &f);
	if (pass)
		return answer(c, 200, "text/plain; charset=utf-8", "", have_rule ? &rule : NULL, &f);
	xrl_http_problem_body(rule.name, &f, body, sizeof(body));
	return answer(c, 429, "application/problem+json", body, &rule, &f);
}

static enum MHD_Result decide(struct MHD_Connection *c, int auth, void **con_cls)
{
	const char *uri = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Original-URI");
	const char *method = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Original-Method");
	const char *real = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Real-IP");
	struct xrl_http_addr peer;
	struct joined xff;   /* not zeroed whole: 4 KiB a request */
	struct xrl_http_request req;
	struct pending *p;
	enum MHD_Result ret;
	int i;

	if (!uri || uri[0] != '/')
		return text(c, 400, "xrl http: X-Original-URI is missing or not a path: the proxy "
			    "must send the request's URI (nginx: proxy_set_header X-Original-URI "
			    "$request_uri)\n");
	if (peer_of(c, &peer))
		return text(c, 500, "xrl http: the connection has no address\n");
	xff.len = 0;
	xff.over = 0;
	xff.buf[0] = 0;
	MHD_get_connection_values(c, MHD_HEADER_KIND, join_xff, &xff);
	if (xff.over)
		return text(c, 400, "xrl http: X-Forwarded-For longer than 4 KiB\n");
	p = pending_get();
	if (!p)
		return MHD_NO;
	if (xrl_http_client(&svc.proxies, &peer, xff.len ? xff.buf : NULL, real, &p->client)) {
		pending_put(p);
		return text(c, 400, "xrl http: a trusted proxy sent an X-Forwarded-For or X-Real-IP "
			    "that is not a list of addresses\n");
	}
	xrl_http_addr_format(&p->client, p->addr, sizeof(p->addr));
	req.method = method && *method ? method : "GET";
	req.uri = uri;
	req.client = p->addr;
	req.client_addr = &p->client;
	req.header = header_of;
	req.header_arg = c;

	pthread_rwlock_rdlock(&svc.lock);
	{
		__u64 mono = clock_ns(CLOCK_MONOTONIC), real_ns = clock_ns(CLOCK_REALTIME);

		xrl_http_decide_start(svc.state, &req, mono, real_ns - mono, svc.redis != NULL, &p->d);
	}
	i = xrl_http_decide_next(&p->d);
	if (i >= 0) {
		/* a global rule: the connection waits suspended for Redis' answers */
		p->kind = PENDING;
		p->auth = auth;
		p->c = c;
		p->state = svc.state;
		p->asking = i;
		__atomic_add_fetch(&p->state->refs, 1, __ATOMIC_ACQ_REL);
		pthread_rwlock_unlock(&svc.lock);
		*con_cls = p;
		MHD_suspend_connection(c);
		xrl_http_redis_ask(svc.redis, &p->state->rules.rule[p->d.idx[i]], p->d.gname[i],
				   &p->d.per[i], on_redis, p);
		return MHD_YES;
	}
	ret = conclude(c, auth, con_cls, svc.state, &p->d, &p->client, p->addr);
	pthread_rwlock_unlock(&svc.lock);
	pending_put(p);
	return ret;
}

static enum MHD_Result metrics(struct MHD_Connection *c)
{
	struct xrl_http_redis_stats rs;
	struct xrl_httpd_stats hs;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	enum MHD_Result ret;

	if (!f)
		return text(c, 500, "xrl http: out of memory\n");
	if (svc.redis)
		xrl_http_redis_stats(svc.redis, &rs);
	memset(&hs, 0, sizeof(hs));
	if (svc.httpd)
		xrl_httpd_stats(svc.httpd, &hs);
	xrl_http_metrics_write(svc.metrics, f, svc.instance, svc.redis ? &rs : NULL,
			       __atomic_load_n(&svc.global.failed, __ATOMIC_RELAXED), &hs);
	fclose(f);
	ret = answer(c, 200, "text/plain; version=0.0.4; charset=utf-8", buf ? buf : "", NULL, NULL);
	free(buf);
	return ret;
}

/* a request's con_cls between the handler's calls, besides a struct held or pending */
static int headers_seen, body_seen;

static enum MHD_Result handle(void *arg, struct MHD_Connection *c, const char *url,
			      const char *method, const char *upload_data, size_t *upload_data_size,
			      void **con_cls)
{
	(void)arg;
	(void)upload_data;
	/*
	 * The first call comes with the headers: answering then, before MHD has
	 * read the (empty) rest of the request, makes it close the connection;
	 * answer on the last call, and nginx's keepalive connections stay open.
	 * A wrong method is answered at once (the connection then closes).
	 */
	if (!*con_cls) {
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			return xrl_httpd_reply_405(c, "GET, HEAD", "xrl http: GET /auth or GET /check\n");
		*con_cls = &headers_seen;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;   /* read and dropped */
		*con_cls = &body_seen;
		return MHD_YES;
	}
	if (*con_cls == &body_seen)
		return text(c, 413, "xrl http: requests carry no body\n");
	if (*con_cls != &headers_seen && *(int *)*con_cls == PENDING) {
		/* resumed: Redis answered (or the deadline passed) */
		struct pending *p = *con_cls;
		struct xrl_http_state *st = p->state;
		enum MHD_Result ret;

		*con_cls = &headers_seen;
		ret = conclude(c, p->auth, con_cls, st, &p->d, &p->client, p->addr);
		state_put(st);
		pending_put(p);
		return ret;
	}
	if (*con_cls != &headers_seen) {
		/* resumed: its held answer is due */
		struct held *h = *con_cls;
		enum MHD_Result ret = MHD_queue_response(c, h->status, h->resp);

		MHD_destroy_response(h->resp);
		free(h);
		*con_cls = &headers_seen;
		return ret;
	}
	if (!strcmp(url, "/auth"))
		return decide(c, 1, con_cls);
	if (!strcmp(url, "/check"))
		return decide(c, 0, con_cls);
	if (!strcmp(url, "/healthz"))
		return text(c, 200, "ok\n");
	if (!strcmp(url, "/metrics"))
		return metrics(c);
	return text(c, 404, "xrl http: GET /auth (nginx auth_request) or GET /check\n");
}

/*
 * A request ended. A connection its client closed while it was suspended is
 * closed on resuming without the handler being called again: its decision
 * (concluded here: it was taken in Redis, so it counts) or its held answer is
 * freed here.
 */
static void completed(void *arg, struct MHD_Connection *c, void **con_cls)
{
	void *k = *con_cls;

	(void)arg;
	(void)c;
	*con_cls = NULL;
	if (!k || k == &headers_seen || k == &body_seen)
		return;
	if (*(int *)k == PENDING) {
		struct pending *p = k;
		struct xrl_http_figures f;

		settle(p->state, &p->d, &p->client, p->addr, &f);
		state_put(p->state);
		pending_put(p);
	} else {
		struct held *h = k;

		MHD_destroy_response(h->resp);
		free(h);
	}
}

/* ---------------------------------------------------------------- main */

/* "ADDR:PORT" or "[ADDR]:PORT" */
static int parse_listen(const char *s, char *addr, size_t len, unsigned short *port)
{
	const char *colon = strrchr(s, ':'), *a = s;
	size_t alen;
	char *end;
	long p;

	if (!colon || colon == s)
		return -1;
	alen = (size_t)(colon - s);
	if (s[0] == '[') {
		if (colon[-1] != ']')
			return -1;
		a = s + 1;
		alen -= 2;
	}
	if (alen >= len)
		return -1;
	memcpy(addr, a, alen);
	addr[alen] = 0;
	p = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || p < 0 || p > 65535)
		return -1;
	*port = (unsigned short)p;
	return 0;
}

int xrl_http_run(const struct xrl_http_opts *o, char *err, size_t errlen)
{
	const char *listen = o->listen ? o->listen : XRL_HTTP_DEFAULT_LISTEN;
	char addr[INET6_ADDRSTRLEN + 2], why[512];
	struct xrl_httpd *h;
	unsigned short port = 0;
	sigset_t sigs;
	int sig;

	svc.max_keys = o->max_keys ? (__u32)o->max_keys : XRL_HTTP_KEYS_DEFAULT;
	if (!o->rules) {
		snprintf(err, errlen, "--rules FILE is required: the request rules, one a line");
		return 2;
	}
	if (o->trusted) {
		char list[2048], *save = NULL, *c;

		snprintf(list, sizeof(list), "%s", o->trusted);
		for (c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save))
			if (xrl_http_proxy_add(&svc.proxies, c, err, errlen))
				return 2;
	}
	if (strncmp(listen, "unix:", 5) && parse_listen(listen, addr, sizeof(addr), &port)) {
		snprintf(err, errlen, "--listen '%s': ADDR:PORT, [ADDR6]:PORT or unix:PATH", listen);
		return 2;
	}
	if (!strncmp(listen, "unix:", 5) && listen[5] != '/') {
		snprintf(err, errlen, "--listen '%s': unix: takes an absolute path", listen);
		return 2;
	}
	if (xrl_log_init(o->log_format ? o->log_format : "text",
			 o->instance ? o->instance : "default")) {
		snprintf(err, errlen, "--log-format: text or json");
		return 2;
	}
	pthread_rwlock_init(&svc.lock, NULL);
	snprintf(svc.instance, sizeof(svc.instance), "%s", o->instance ? o->instance : "default");
	svc.pin_dir = o->pin_dir;
	xrl_maps_none(&svc.esc_maps);
	svc.metrics = xrl_http_metrics_new();
	if (!svc.metrics) {
		snprintf(err, errlen, "out of memory");
		return 1;
	}
	if (o->redis) {
		char host[96];

		snprintf(host, sizeof(host), "http/%s", o->instance ? o->instance : "default");
		svc.redis = xrl_http_redis_start(o->redis, o->redis_timeout_ms ? (unsigned)o->redis_timeout_ms :
						 XRL_HTTP_REDIS_TIMEOUT_MS, host, why, sizeof(why));
		if (!svc.redis) {
			snprintf(err, errlen, "--redis: %s", why);
			return 2;
		}
		svc.global.policy = o->failure == 1 ? XRL_HTTP_FAIL_OPEN :
				    o->failure == 2 ? XRL_HTTP_FAIL_CLOSED : XRL_HTTP_FAIL_LOCAL;
	}
	if (load_rules(o->rules, 0))
		return 1;
	/* the server's threads inherit the mask: the signals come to sigwait below */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/*
	 * XRL_HTTP_THREADS event loops serve every connection (no thread per
	 * connection to wake and switch to): a decision never waits in them. A
	 * --global rule's connection is suspended while the Redis thread asks
	 * (pipelined with the other connections' calls), a leaky bucket's while
	 * the holder keeps its answer.
	 */
	if (holder_start()) {
		xrl_log(XRL_LOG_ERR, "cannot start the thread of the held answers");
		return 1;
	}
	if (!strncmp(listen, "unix:", 5))
		h = xrl_httpd_start_unix_pool(listen + 5, XRL_HTTP_THREADS, handle,
					      completed, NULL, why, sizeof(why));
	else
		h = xrl_httpd_start_pool(addr, port, XRL_HTTP_THREADS, handle, completed, NULL,
					 why, sizeof(why));
	if (!h) {
		xrl_log(XRL_LOG_ERR, "--listen %s", why);
		return 1;
	}
	svc.httpd = h;
	xrl_log(XRL_LOG_INFO, "answering on %s (GET /auth, GET /check, GET /metrics)", listen);
	for (;;) {
		if (sigwait(&sigs, &sig))
			continue;
		if (sig == SIGHUP) {
			load_rules(o->rules, 1);
			continue;
		}
		break;
	}
	xrl_log(XRL_LOG_INFO, "stopping (%s)", sig == SIGINT ? "SIGINT" : "SIGTERM");
	/* first: the suspended connections resume (Redis' queue answered -1, the held
	 * answers sent); the server may not stop with one suspended */
	xrl_http_redis_stop(svc.redis);
	holder_stop();
	xrl_httpd_stop(h);
	if (!strncmp(listen, "unix:", 5))
		unlink(listen + 5);
	state_put(svc.state);
	if (svc.esc_open)
		xrl_maps_close(&svc.esc_maps);
	xrl_http_esc_free(svc.esc);
	return 0;
}
