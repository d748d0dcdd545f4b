// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <hiredis/hiredis.h>

#include "xrl_redis.h"
#include "xrl_rule.h"

/*
 * A cluster node that failed (refused, timed out) is not tried again for
 * 5 timeouts (2.5 sync intervals): a stopped node costs a timeout per try,
 * and a round that tried every stopped node every time would outlast the
 * data path's hold on the rules' modes (3 intervals); a node back (or a
 * replica promoted that refused at first) is used again within that.
 */
#define XRL_REDIS_NODE_RETRY_NS (5 * ((unsigned long long)r->timeout.tv_sec * 1000000000ull + \
				      (unsigned long long)r->timeout.tv_usec * 1000ull))

/* Pipelines are cut into batches, so neither side buffers megabytes of a 100k-source round. */
#define XRL_REDIS_BATCH 1024

static int parse_port(const char *s, size_t len, int *port)
{
	char buf[8];
	char *end;
	long v;

	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	v = strtol(buf, &end, 10);
	if (*end || v < 1 || v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

/* The URL as messages show it: the password, if any, as "***". */
static void url_shown(const char *url, char *buf, size_t len)
{
	size_t sl = strncmp(url, "redis-cluster://", 16) ? 8 : 16;
	const char *p = url + sl, *at, *slash;

	if (strncmp(url, "redis://", 8) && sl == 8) {
		snprintf(buf, len, "%s", strchr(url, '@') ? "***" : url);
		return;
	}
	at = strchr(p, '@');
	slash = strchr(p, '/');
	if (!at || (slash && slash < at)) {
		snprintf(buf, len, "%s", url);
		return;
	}
	snprintf(buf, len, "%.*s%s***%s", (int)sl, url, *p == ':' ? ":" : "", at);
}

/* host[:port] from p, up to one of stop; *end after it. 0, or -1 with err. */
static int parse_hostport(const char *p, const char *stop, char *host, size_t hostlen, int *port,
			  const char **endp, const char *s, char *err, size_t errlen)
{
	const char *hostend;
	size_t n;

	if (*p == '[') {
		hostend = strchr(p, ']');
		if (!hostend)
			return xrl_fail(err, errlen, "invalid --redis '%s': missing ']' after the IPv6 address", s), -1;
		n = (size_t)(hostend - p - 1);
		if (!n || n >= hostlen)
			return xrl_fail(err, errlen, "invalid --redis '%s': bad host", s), -1;
		memcpy(host, p + 1, n);
		host[n] = 0;
		p = hostend + 1;
	} else {
		char set[8];

		snprintf(set, sizeof(set), ":%s", stop);
		hostend = p + strcspn(p, set);
		n = (size_t)(hostend - p);
		if (!n || n >= hostlen)
			return xrl_fail(err, errlen, "invalid --redis '%s': missing host", s), -1;
		memcpy(host, p, n);
		host[n] = 0;
		p = hostend;
	}
	if (*p == ':') {
		n = strcspn(p + 1, stop);
		if (parse_port(p + 1, n, port))
			return xrl_fail(err, errlen, "invalid --redis '%s': the port must be 1 to 65535", s), -1;
		p += 1 + n;
	}
	*endp = p;
	return 0;
}

int xrl_redis_parse_url(const char *url, struct xrl_redis_url *u, char *err, size_t errlen)
{
	const char *p, *at, *slash;
	char s[600];
	size_t n;

	url_shown(url, s, sizeof(s));   /* s: for messages only */

	memset(u, 0, sizeof(*u));
	u->port = 6379;
	if (!strncmp(url, "redis-cluster://", 16)) {
		u->cluster = true;
		p = url + 16;
	} else if (!strncmp(url, "redis://", 8)) {
		p = url + 8;
	} else {
		return xrl_fail(err, errlen, "invalid --redis '%s': expected redis://[:password@]host[:port][/db] or redis-cluster://[:password@]host[:port][,host[:port]...]", s), -EINVAL;
	}
	slash = strchr(p, '/');
	at = strchr(p, '@');
	if (at && (!slash || at < slash)) {
		if (*p != ':')
			return xrl_fail(err, errlen, "invalid --redis '%s': the password goes after a colon, as redis://:PASSWORD@host", s), -EINVAL;
		n = (size_t)(at - p - 1);
		if (n >= sizeof(u->password))
			return xrl_fail(err, errlen, "invalid --redis: password longer than %zu characters", sizeof(u->password) - 1), -EINVAL;
		memcpy(u->password, p + 1, n);
		p = at + 1;
	}
	if (u->cluster) {
		/* seed nodes, comma-separated; the map comes from whichever answers */
		for (;;) {
			struct xrl_cluster_addr *a = &u->seed[u->nseeds];

			if (u->nseeds == XRL_REDIS_SEEDS)
				return xrl_fail(err, errlen, "invalid --redis '%s': more than %d seed nodes", s, XRL_REDIS_SEEDS), -EINVAL;
			a->port = 6379;
			if (parse_hostport(p, ",/", a->host, sizeof(a->host), &a->port, &p, s, err, errlen))
				return -EINVAL;
			u->nseeds++;
			if (*p != ',')
				break;
			p++;
		}
		if (*p && strcmp(p, "/") && strcmp(p, "/0"))
			return xrl_fail(err, errlen, "invalid --redis '%s': a cluster has database 0 only, and seeds are host:port separated by commas", s), -EINVAL;
		snprintf(u->host, sizeof(u->host), "%s", u->seed[0].host);
		u->port = u->seed[0].port;
		return 0;
	}
	if (parse_hostport(p, "/", u->host, sizeof(u->host), &u->port, &p, s, err, errlen))
		return -EINVAL;
	if (*p == '/' && p[1]) {
		char *end;
		long db = strtol(p + 1, &end, 10);

		if (*end || db < 0 || db > 65535)
			return xrl_fail(err, errlen, "invalid --redis '%s': the database is a number, as redis://host:6379/0", s), -EINVAL;
		u->db = (int)db;
	} else if (*p && strcmp(p, "/")) {
		return xrl_fail(err, errlen, "invalid --redis '%s': unexpected '%s'", s, p), -EINVAL;
	}
	return 0;
}

void xrl_redis_url_name(const struct xrl_redis_url *u, char *buf, size_t len)
{
	size_t o;
	int i;

	if (!u->cluster) {
		snprintf(buf, len, strchr(u->host, ':') ? "[%s]:%d/%d" : "%s:%d/%d", u->host, u->port,
			 u->db);
		return;
	}
	o = (size_t)snprintf(buf, len, "cluster ");
	for (i = 0; i < u->nseeds && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, strchr(u->seed[i].host, ':') ? "%s[%s]:%d" :
				      "%s%s:%d", i ? "," : "", u->seed[i].host, u->seed[i].port);
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void drop_sent(struct xrl_redis *r)
{
	int i;

	for (i = r->sent_head; i < r->nsent; i++)
		if (r->sent[i].reply)
			freeReplyObject(r->sent[i].reply);
	r->nsent = r->sent_head = 0;
}

void xrl_redis_close(struct xrl_redis *r)
{
	int i;

	if (r->node) {
		for (i = 0; i < XRL_CLUSTER_NODES; i++)
			if (r->node[i].c)
				redisFree(r->node[i].c);
		for (i = 0; i < XRL_CLUSTER_NODES; i++)
			r->node[i].c = NULL;
		drop_sent(r);
		r->c = NULL;   /* it was one of the nodes' */
		return;
	}
	if (r->c)
		redisFree(r->c);
	r->c = NULL;
}

/* A command with a status or string reply, run on connection c; 0 or -EIO/-EPROTO. */
static int simple_on(struct xrl_redis *r, struct redisContext *c, char *out, size_t outlen,
		     char *err, size_t errlen, int argc, const char **argv)
{
	redisReply *rep = redisCommandArgv(c, argc, argv, NULL);
	int rc = 0;

	r->commands++;
	if (!rep) {
		xrl_fail(err, errlen, "%s: %s", argv[0], c->errstr[0] ? c->errstr : "no reply");
		return -EIO;
	}
	if (rep->type == REDIS_REPLY_ERROR) {
		xrl_fail(err, errlen, "%s refused: %s", argv[0], rep->str);
		rc = -EPROTO;
	} else if (out && rep->type == REDIS_REPLY_STRING) {
		snprintf(out, outlen, "%s", rep->str);
	}
	freeReplyObject(rep);
	return rc;
}

static int load_scripts_on(struct xrl_redis *r, struct redisContext *c, char *err, size_t errlen)
{
	int i, rc;

	for (i = 0; i < XRL_SCRIPT_COUNT; i++) {
		const char *argv[] = { "SCRIPT", "LOAD", xrl_script_source[i] };

		rc = simple_on(r, c, r->sha[i], sizeof(r->sha[i]), err, errlen, 3, argv);
		if (rc)
			return rc;
		if (strlen(r->sha[i]) != 40) {
			xrl_fail(err, errlen, "SCRIPT LOAD of %s returned no SHA1", xrl_script_name[i]);
			return -EPROTO;
		}
	}
	return 0;
}

/* Connect to host:port with the timeouts, AUTH and SELECT: the context, or NULL with err. */
static struct redisContext *open_ctx(struct xrl_redis *r, const char *host, int port, char *err,
				     size_t errlen)
{
	struct redisContext *c = redisConnectWithTimeout(host, port, r->timeout);
	char db[16];
	int rc = 0;

	if (!c) {
		xrl_fail(err, errlen, "out of memory");
		return NULL;
	}
	if (c->err) {
		xrl_fail(err, errlen, "connect to %s:%d: %s", host, port, c->errstr);
		redisFree(c);
		return NULL;
	}
	if (redisSetTimeout(c, r->timeout) != REDIS_OK) {
		xrl_fail(err, errlen, "cannot set the socket timeout: %s", c->errstr);
		redisFree(c);
		return NULL;
	}
	if (r->url.password[0]) {
		const char *argv[] = { "AUTH", r->url.password };

		rc = simple_on(r, c, NULL, 0, err, errlen, 2, argv);
	}
	if (!rc && r->url.db) {
		const char *argv[] = { "SELECT", db };

		snprintf(db, sizeof(db), "%d", r->url.db);
		rc = simple_on(r, c, NULL, 0, err, errlen, 2, argv);
	}
	if (rc) {
		redisFree(c);
		return NULL;
	}
	return c;
}

/* ---- cluster ---- */

/* Node n's connection, made (and the scripts loaded) if there is none. 0, or -EIO with err. */
static int node_connect(struct xrl_redis *r, int n, char *err, size_t errlen)
{
	struct xrl_redis_node *nd = &r->node[n];
	char e[200];

	if (nd->c)
		return 0;
	if (now_ns() < nd->retry_ns) {
		xrl_fail(err, errlen, "cluster node %s:%d failed less than %llu ms ago: not tried yet",
			 r->map->node[n].host, r->map->node[n].port, XRL_REDIS_NODE_RETRY_NS / 1000000);
		return -EIO;
	}
	nd->c = open_ctx(r, r->map->node[n].host, r->map->node[n].port, e, sizeof(e));
	if (nd->c && load_scripts_on(r, nd->c, e, sizeof(e))) {
		redisFree(nd->c);
		nd->c = NULL;
	}
	if (!nd->c) {
		nd->errors++;
		nd->retry_ns = now_ns() + XRL_REDIS_NODE_RETRY_NS;
		xrl_fail(err, errlen, "cluster node %s:%d: %s", r->map->node[n].host,
			 r->map->node[n].port, e);
		return -EIO;
	}
	return 0;
}

/*
 * Node n failed (connection lost, timeout): its connection closed and the
 * replies it owed left NULL (those calls failed); the other masters go on.
 * The map is asked for again once nothing is owed (a replica may take over).
 */
static void node_lost(struct xrl_redis *r, int n, const char *why)
{
	struct redisContext *c = r->node[n].c;
	int i;

	snprintf(r->lost_why, sizeof(r->lost_why), "cluster node %s:%d: %s", r->map->node[n].host,
		 r->map->node[n].port, why);
	r->node[n].errors++;
	r->node[n].retry_ns = now_ns() + XRL_REDIS_NODE_RETRY_NS;
	r->map_stale = true;
	for (i = r->sent_head; i < r->nsent; i++)
		if (r->sent[i].node == n && !r->sent[i].reply)
			r->sent[i].node = -1;
	if (!c)
		return;
	r->node[n].c = NULL;
	if (r->c == c) {
		/* another connected master stands for the cluster (NULL: none left) */
		r->c = NULL;
		for (i = 0; i < r->map->nnodes && !r->c; i++)
			if (r->map->master[i] && r->node[i].c)
				r->c = r->node[i].c;
	}
	redisFree(c);
}

/* The map as node c (at host) tells it: CLUSTER SHARDS, else CLUSTER SLOTS. 0 or -1 with err. */
static int ask_map(struct xrl_redis *r, struct redisContext *c, const char *host, char *err,
		   size_t errlen)
{
	const char *shards[] = { "CLUSTER", "SHARDS" }, *slots[] = { "CLUSTER", "SLOTS" };
	redisReply *rep = redisCommandArgv(c, 2, shards, NULL);
	int rc;

	r->commands++;
	if (rep && rep->type == REDIS_REPLY_ERROR && strstr(rep->str, "nknown")) {
		/* before Redis 7 */
		freeReplyObject(rep);
		rep = redisCommandArgv(c, 2, slots, NULL);
		r->commands++;
		if (!rep)
			return xrl_fail(err, errlen, "CLUSTER SLOTS: %s", c->errstr), -1;
		rc = xrl_cluster_map_slots(r->map, rep, host, err, errlen);
		freeReplyObject(rep);
		return rc;
	}
	if (!rep)
		return xrl_fail(err, errlen, "CLUSTER SHARDS: %s", c->errstr), -1;
	rc = xrl_cluster_map_shards(r->map, rep, host, err, errlen);
	freeReplyObject(rep);
	return rc;
}

/*
 * The slot map from the first node that gives one: the connected masters,
 * then the seeds, then every node known. Then a connection to each master.
 * 0, or -EIO with err (a slot without a master, a master unreachable).
 */
static int cluster_refresh(struct xrl_redis *r, char *err, size_t errlen)
{
	int i, n, masters, covered, rc = -1;
	char e[200] = "no seed node answered";

	r->refreshes++;
	for (i = 0; rc && i < r->map->nnodes; i++)
		if (r->node[i].c && r->map->master[i]) {
			rc = ask_map(r, r->node[i].c, r->map->node[i].host, e, sizeof(e));
			if (rc && r->node[i].c->err)
				node_lost(r, i, e);   /* timed out: a reply may still come, the connection goes */
		}
	for (i = 0; rc && i < r->url.nseeds + r->map->nnodes; i++) {
		const struct xrl_cluster_addr *a = i < r->url.nseeds ? &r->url.seed[i] :
						   &r->map->node[i - r->url.nseeds];
		int known = xrl_cluster_map_node(r->map, a->host, a->port);
		struct redisContext *c;

		/* a node that failed lately costs a timeout again: the others first */
		if (known >= 0 && now_ns() < r->node[known].retry_ns)
			continue;
		c = open_ctx(r, a->host, a->port, e, sizeof(e));
		if (!c) {
			if (known >= 0)
				r->node[known].retry_ns = now_ns() + XRL_REDIS_NODE_RETRY_NS;
			continue;
		}
		rc = ask_map(r, c, a->host, e, sizeof(e));
		if (rc && c->err && known >= 0)
			r->node[known].retry_ns = now_ns() + XRL_REDIS_NODE_RETRY_NS;
		redisFree(c);
	}
	if (rc) {
		xrl_fail(err, errlen, "no slot map from the cluster: %s", e);
		return -EIO;
	}
	r->map_stale = false;
	covered = xrl_cluster_map_covered(r->map, &masters);
	/*
	 * Every master that answers is used: the calls of a slot without a
	 * master, or of a master that does not answer, fail alone (their
	 * sources under the failure policy) and the map is asked for again
	 * after the next round.
	 */
	r->c = NULL;
	e[0] = 0;
	for (n = 0; n < r->map->nnodes; n++) {
		if (!r->map->master[n])
			continue;
		if (node_connect(r, n, e, sizeof(e))) {
			snprintf(r->lost_why, sizeof(r->lost_why), "%s", e);
			r->map_stale = true;
			continue;
		}
		if (!r->c)
			r->c = r->node[n].c;
	}
	if (covered < XRL_CLUSTER_SLOTS) {
		snprintf(r->lost_why, sizeof(r->lost_why),
			 "the cluster serves %d of 16384 slots (a shard without a master: failing over, or down)",
			 covered);
		r->map_stale = true;
	}
	if (!r->c) {
		xrl_fail(err, errlen, "no master of the cluster answers: %s", e[0] ? e : r->lost_why);
		return -EIO;
	}
	return 0;
}

static int cluster_connect(struct xrl_redis *r, char *err, size_t errlen)
{
	int rc;

	if (!r->map) {
		r->map = malloc(sizeof(*r->map));
		r->node = calloc(XRL_CLUSTER_NODES, sizeof(*r->node));
		if (!r->map || !r->node) {
			free(r->map);
			free(r->node);
			r->map = NULL;
			r->node = NULL;
			xrl_fail(err, errlen, "out of memory");
			return -ENOMEM;
		}
		xrl_cluster_map_init(r->map);
	}
	xrl_redis_close(r);
	rc = cluster_refresh(r, err, errlen);
	if (rc)
		xrl_redis_close(r);
	return rc;
}

int xrl_redis_connect(struct xrl_redis *r, char *err, size_t errlen)
{
	int rc;

	if (r->url.cluster)
		return cluster_connect(r, err, errlen);
	xrl_redis_close(r);
	r->c = open_ctx(r, r->url.host, r->url.port, err, errlen);
	if (!r->c)
		return -EIO;
	rc = load_scripts_on(r, r->c, err, errlen);
	if (rc)
		xrl_redis_close(r);
	return rc;
}

static int is_noscript(const redisReply *rep)
{
	return rep && rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOSCRIPT", 8);
}

/* EVALSHA of call c appended to connection ctx (not yet written). */
static int append_call(struct xrl_redis *r, struct redisContext *ctx,
		       const struct xrl_redis_call *c, char *err, size_t errlen)
{
	const char *stackv[512], **argv = stackv;   /* a call of 64 sources: 330 at most */
	char nkeys[12];
	int j;

	if (c->argc + 3 > (int)(sizeof(stackv) / sizeof(stackv[0])))
		argv = malloc((c->argc + 3) * sizeof(*argv));
	if (!argv) {
		xrl_fail(err, errlen, "out of memory");
		return -ENOMEM;
	}
	argv[0] = "EVALSHA";
	argv[1] = r->sha[c->script];
	snprintf(nkeys, sizeof(nkeys), "%d", c->nkeys);
	argv[2] = nkeys;
	for (j = 0; j < c->argc; j++)
		argv[3 + j] = c->argv[j];
	/* hiredis copies the command into its output buffer */
	j = redisAppendCommandArgv(ctx, 3 + c->argc, argv, NULL);
	if (argv != stackv)
		free(argv);
	r->commands++;
	if (j != REDIS_OK) {
		xrl_fail(err, errlen, "%s", ctx->errstr[0] ? ctx->errstr : "out of memory");
		return -EIO;
	}
	return 0;
}

/* What ctx holds to send, on the wire now (so Redis works on it while the caller builds more). */
static int flush(struct redisContext *ctx, char *err, size_t errlen)
{
	int done = 0;

	while (!done)
		if (redisBufferWrite(ctx, &done) != REDIS_OK) {
			xrl_fail(err, errlen, "%s", ctx->errstr[0] ? ctx->errstr : "connection lost");
			return -EIO;
		}
	return 0;
}

/* The master of a call's slot (its first key's; slot 0 for a call without keys). */
static int call_node(const struct xrl_redis *r, const struct xrl_redis_call *c)
{
	unsigned slot = c->nkeys > 0 ? xrl_cluster_keyslot(c->argv[0], strlen(c->argv[0])) : 0;

	return r->map->slot[slot];
}

static int cluster_send(struct xrl_redis *r, const struct xrl_redis_call *c, char *err,
			size_t errlen)
{
	int n = call_node(r, c);

	if (r->nsent == r->sent_cap) {
		int cap = r->sent_cap ? 2 * r->sent_cap : 1024;
		void *p = realloc(r->sent, cap * sizeof(*r->sent));

		if (!p) {
			xrl_fail(err, errlen, "out of memory");
			goto lost;
		}
		r->sent = p;
		r->sent_cap = cap;
	}
	r->sent[r->nsent].reply = NULL;
	if (n < 0 || !r->node[n].c) {
		/* its slot has no master that answers: this call fails alone (reply NULL) */
		r->sent[r->nsent++].node = -1;
		r->failed_calls++;
		return 0;
	}
	if (append_call(r, r->node[n].c, c, err, errlen) || flush(r->node[n].c, err, errlen)) {
		node_lost(r, n, err);
		r->sent[r->nsent++].node = -1;
		r->failed_calls++;
		return 0;
	}
	r->node[n].commands++;
	r->node[n].keys += c->nkeys;
	r->sent[r->nsent++].node = n;
	return 0;
lost:
	xrl_redis_close(r);
	return -EIO;
}

int xrl_redis_send(struct xrl_redis *r, const struct xrl_redis_call *c, char *err, size_t errlen)
{
	if (!r->c) {
		xrl_fail(err, errlen, "not connected");
		return -EIO;
	}
	if (r->node)
		return cluster_send(r, c, err, errlen);
	if (append_call(r, r->c, c, err, errlen) || flush(r->c, err, errlen)) {
		xrl_redis_close(r);
		return -EIO;
	}
	return 0;
}

/* One reply from node n, timed. 0, or -EIO with err. */
static int node_reply(struct xrl_redis *r, int n, redisReply **out, char *err, size_t errlen)
{
	struct xrl_redis_node *nd = &r->node[n];
	__u64 t0 = now_ns();
	void *rep = NULL;

	if (!nd->c || redisGetReply(nd->c, &rep) != REDIS_OK || !rep) {
		nd->errors++;
		xrl_fail(err, errlen, "cluster node %s:%d: %s", r->map->node[n].host,
			 r->map->node[n].port, nd->c && nd->c->errstr[0] ? nd->c->errstr :
			 "connection lost");
		return -EIO;
	}
	nd->wait_s += (now_ns() - t0) / 1e9;
	if (((redisReply *)rep)->type == REDIS_REPLY_ERROR)
		nd->errors++;
	*out = rep;
	return 0;
}

/* Every reply still owed, read ahead into the queue: the connections are idle after. */
static int drain(struct xrl_redis *r, char *err, size_t errlen)
{
	int i;

	(void)err, (void)errlen;
	for (i = r->sent_head; i < r->nsent; i++) {
		int n = r->sent[i].node;
		char e[200];

		if (n >= 0 && !r->sent[i].reply && node_reply(r, n, &r->sent[i].reply, e, sizeof(e)))
			node_lost(r, n, e);
	}
	return 0;
}

/* Call c once on node n (ASKING first when asking), the connection idle: its reply. */
static int call_on(struct xrl_redis *r, int n, const struct xrl_redis_call *c, bool asking,
		   redisReply **out, char *err, size_t errlen)
{
	const char *ask[] = { "ASKING" };
	redisReply *a = NULL;

	if (node_connect(r, n, err, errlen))
		return -EIO;
	if (asking && redisAppendCommandArgv(r->node[n].c, 1, ask, NULL) != REDIS_OK)
		return xrl_fail(err, errlen, "out of memory"), -EIO;
	if (append_call(r, r->node[n].c, c, err, errlen) || flush(r->node[n].c, err, errlen))
		return -EIO;
	r->node[n].commands += 1 + asking;
	if (asking) {
		if (node_reply(r, n, &a, err, errlen))
			return -EIO;
		freeReplyObject(a);
	}
	return node_reply(r, n, out, err, errlen);
}

/*
 * Call c answered by node n with a redirect or NOSCRIPT: followed (MOVED
 * updates the slot and asks for a new map after; ASK asks once) up to
 * XRL_CLUSTER_MAX_REDIRECTS times; the last reply stays in c. Every
 * connection must be idle. 0, or -EIO with err.
 */
static int follow(struct xrl_redis *r, struct xrl_redis_call *c, int n, char *err, size_t errlen)
{
	int hops;

	for (hops = 0; hops < XRL_CLUSTER_MAX_REDIRECTS; hops++) {
		struct xrl_cluster_addr to;
		unsigned slot;
		redisReply *rep = c->reply;
		int kind, to_n;

		if (rep->type != REDIS_REPLY_ERROR)
			return 0;
		if (is_noscript(rep)) {
			r->noscript++;
			if (load_scripts_on(r, r->node[n].c, err, errlen))
				return -EIO;
			to_n = n;
			kind = 0;
		} else {
			kind = xrl_cluster_redirect(rep->str, &slot, &to);
			if (!kind)
				return 0;   /* another error: the caller's */
			to_n = xrl_cluster_map_node(r->map, to.host, to.port);
			if (to_n < 0)
				return xrl_fail(err, errlen, "redirected to more nodes than xrl follows"), -EIO;
			if (kind == 1) {
				r->moved++;
				r->map->slot[slot] = (int16_t)to_n;
				r->map_stale = true;
			} else {
				r->asked++;
			}
		}
		freeReplyObject(rep);
		c->reply = NULL;
		if (call_on(r, to_n, c, kind == 2, &c->reply, err, errlen)) {
			node_lost(r, to_n, err);
			c->reply = NULL;   /* the call failed alone */
			r->failed_calls++;
			return 0;
		}
		n = to_n;
	}
	return 0;   /* still redirected: the reply says so */
}

static bool needs_follow(const redisReply *rep)
{
	return rep->type == REDIS_REPLY_ERROR &&
	       (is_noscript(rep) || !strncmp(rep->str, "MOVED ", 6) || !strncmp(rep->str, "ASK ", 4));
}

static int cluster_recv(struct xrl_redis *r, struct xrl_redis_call *calls, int n, char *err,
			size_t errlen)
{
	int i, at = r->sent_head, follows = 0;

	if (r->nsent - r->sent_head < n) {
		xrl_fail(err, errlen, "more replies asked for than calls sent");
		goto lost;
	}
	for (i = 0; i < n; i++) {
		struct xrl_redis_sent *s = &r->sent[at + i];
		char e[200];

		if (!s->reply && s->node >= 0 && node_reply(r, s->node, &s->reply, e, sizeof(e)))
			node_lost(r, s->node, e);   /* this node's calls fail, the others' go on */
		if (!s->reply)
			r->failed_calls++;
		calls[i].reply = s->reply;
		s->reply = NULL;
		follows |= calls[i].reply && needs_follow(calls[i].reply);
	}
	r->sent_head += n;
	if (follows) {
		/* the replies still owed first, so that each connection is idle */
		if (drain(r, err, errlen))
			goto lost;
		for (i = 0; i < n; i++)
			if (calls[i].reply && needs_follow(calls[i].reply) &&
			    r->sent[at + i].node >= 0 &&
			    follow(r, &calls[i], r->sent[at + i].node, err, errlen))
				goto lost;
	}
	if (r->sent_head == r->nsent)
		r->nsent = r->sent_head = 0;
	/* slots moved or a master lost: a new map once nothing is owed */
	if (r->map_stale && !r->nsent)
		cluster_refresh(r, err, errlen);
	if (!r->c) {
		xrl_fail(err, errlen, "%s", r->lost_why[0] ? r->lost_why : "no master of the cluster answers");
		goto lost;
	}
	return 0;
lost:
	xrl_redis_close(r);
	return -EIO;
}

static int read_replies(struct xrl_redis *r, struct xrl_redis_call *calls, int n, char *err,
			size_t errlen)
{
	int i;

	for (i = 0; i < n; i++) {
		void *rep = NULL;

		if (redisGetReply(r->c, &rep) != REDIS_OK || !rep) {
			xrl_fail(err, errlen, "%s", r->c->errstr[0] ? r->c->errstr : "connection lost");
			return -EIO;
		}
		calls[i].reply = rep;
	}
	return 0;
}

int xrl_redis_recv(struct xrl_redis *r, struct xrl_redis_call *calls, int n, char *err,
		   size_t errlen)
{
	int i, rc, again = 0;

	if (!r->c) {
		xrl_fail(err, errlen, "not connected");
		return -EIO;
	}
	if (r->node)
		return cluster_recv(r, calls, n, err, errlen);
	rc = read_replies(r, calls, n, err, errlen);
	if (rc)
		goto fail;
	/* Redis restarted or SCRIPT FLUSH: load again and repeat what was refused */
	for (i = 0; i < n; i++)
		again |= is_noscript(calls[i].reply);
	if (!again)
		return 0;
	r->noscript++;
	rc = load_scripts_on(r, r->c, err, errlen);
	if (rc)
		goto fail;
	for (i = 0; i < n; i++) {
		if (!is_noscript(calls[i].reply))
			continue;
		freeReplyObject(calls[i].reply);
		calls[i].reply = NULL;
		rc = xrl_redis_send(r, &calls[i], err, errlen);
		if (!rc)
			rc = read_replies(r, &calls[i], 1, err, errlen);
		if (rc)
			goto fail;
	}
	return 0;
fail:
	xrl_redis_close(r);
	return -EIO;
}

int xrl_redis_run(struct xrl_redis *r, struct xrl_redis_call *calls, int n, char *err,
		  size_t errlen)
{
	int done, batch, i, rc;

	for (done = 0; done < n; done += batch) {
		batch = n - done < XRL_REDIS_BATCH ? n - done : XRL_REDIS_BATCH;
		for (i = done; i < done + batch; i++)
			if ((rc = xrl_redis_send(r, &calls[i], err, errlen)))
				return rc;
		if ((rc = xrl_redis_recv(r, calls + done, batch, err, errlen)))
			return rc;
	}
	return 0;
}

void xrl_redis_calls_free(struct xrl_redis_call *calls, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (calls[i].reply)
			freeReplyObject(calls[i].reply);
		calls[i].reply = NULL;
	}
}

/* The commands whose second word is a key: sent to its slot's master. */
static bool keyed(int argc, const char **argv)
{
	static const char *const cmds[] = { "TYPE", "DEL", "SET", "GET", "EXISTS", "PTTL", "TTL",
					    "HGETALL", "ZCARD", "EXPIRE", "UNLINK" };
	size_t i;

	if (argc < 2)
		return false;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcasecmp(argv[0], cmds[i]))
			return true;
	return false;
}

/* One command on a cluster: to its key's master (else the first master's), redirects followed. */
static struct redisReply *cluster_command(struct xrl_redis *r, int argc, const char **argv,
					  char *err, size_t errlen)
{
	const char *ask[] = { "ASKING" };
	redisReply *rep = NULL;
	int n = -1, hops, asking = 0;

	if (drain(r, err, errlen))
		goto lost;
	if (keyed(argc, argv))
		n = r->map->slot[xrl_cluster_keyslot(argv[1], strlen(argv[1]))];
	if (n < 0)
		for (n = 0; n < r->map->nnodes && r->node[n].c != r->c; n++)
			;
	for (hops = 0; hops <= XRL_CLUSTER_MAX_REDIRECTS; hops++) {
		struct xrl_cluster_addr to;
		unsigned slot;
		int kind;

		if (n >= r->map->nnodes || node_connect(r, n, err, errlen))
			goto lost;
		if ((asking && redisAppendCommandArgv(r->node[n].c, 1, ask, NULL) != REDIS_OK) ||
		    redisAppendCommandArgv(r->node[n].c, argc, argv, NULL) != REDIS_OK ||
		    flush(r->node[n].c, err, errlen))
			goto node;
		r->node[n].commands += 1 + asking;
		r->commands++;
		if (asking) {
			if (node_reply(r, n, &rep, err, errlen))
				goto node;
			freeReplyObject(rep);
		}
		if (node_reply(r, n, &rep, err, errlen))
			goto node;
		if (rep->type != REDIS_REPLY_ERROR || !(kind = xrl_cluster_redirect(rep->str, &slot, &to)))
			return rep;
		if ((n = xrl_cluster_map_node(r->map, to.host, to.port)) < 0)
			return rep;
		if (kind == 1) {
			r->moved++;
			r->map->slot[slot] = (int16_t)n;
			r->map_stale = true;
		} else {
			r->asked++;
		}
		asking = kind == 2;
		freeReplyObject(rep);
		rep = NULL;
	}
	return rep;
node:
	/* that master failed: the command fails, the other masters stay */
	node_lost(r, n, err);
	if (r->c)
		return NULL;
lost:
	xrl_redis_close(r);
	return NULL;
}

struct redisReply *xrl_redis_command(struct xrl_redis *r, int argc, const char **argv, char *err,
				     size_t errlen)
{
	redisReply *rep;

	if (!r->c) {
		xrl_fail(err, errlen, "not connected");
		return NULL;
	}
	if (r->node)
		return cluster_command(r, argc, argv, err, errlen);
	rep = redisCommandArgv(r->c, argc, argv, NULL);
	r->commands++;
	if (!rep) {
		xrl_fail(err, errlen, "%s: %s", argv[0], r->c->errstr[0] ? r->c->errstr : "no reply");
		xrl_redis_close(r);
	}
	return rep;
}

int xrl_redis_types(struct xrl_redis *r, const char *const *keys, int n, char (*types)[16],
		    char *err, size_t errlen)
{
	int i;

	if (!r->c) {
		xrl_fail(err, errlen, "not connected");
		return -EIO;
	}
	if (r->node) {
		/* one at a time, each to its slot's master: a repair's rare path */
		for (i = 0; i < n; i++) {
			const char *argv[] = { "TYPE", keys[i] };
			redisReply *rep = cluster_command(r, 2, argv, err, errlen);

			if (!rep)
				return -EIO;
			snprintf(types[i], 16, "%s", rep->type == REDIS_REPLY_STATUS ||
				 rep->type == REDIS_REPLY_STRING ? rep->str : "?");
			freeReplyObject(rep);
		}
		return 0;
	}
	for (i = 0; i < n; i++) {
		const char *argv[] = { "TYPE", keys[i] };

		if (redisAppendCommandArgv(r->c, 2, argv, NULL) != REDIS_OK)
			goto lost;
		r->commands++;
	}
	for (i = 0; i < n; i++) {
		void *v = NULL;
		redisReply *rep;

		if (redisGetReply(r->c, &v) != REDIS_OK || !v)
			goto lost;
		rep = v;
		snprintf(types[i], 16, "%s", rep->type == REDIS_REPLY_STATUS ||
			 rep->type == REDIS_REPLY_STRING ? rep->str : "?");
		freeReplyObject(rep);
	}
	return 0;
lost:
	xrl_fail(err, errlen, "TYPE: %s", r->c->errstr[0] ? r->c->errstr : "connection lost");
	xrl_redis_close(r);
	return -EIO;
}

void xrl_redis_nodes_text(const struct xrl_redis *r, char *buf, size_t len)
{
	size_t o = 0;
	int n, s, cnt;

	buf[0] = 0;
	if (!r->node || !r->c)
		return;
	for (n = 0; n < r->map->nnodes && o < len; n++) {
		if (!r->map->master[n])
			continue;
		for (s = cnt = 0; s < XRL_CLUSTER_SLOTS; s++)
			cnt += r->map->slot[s] == n;
		o += (size_t)snprintf(buf + o, len - o, "%s%s:%d (%d slots)", o ? ", " : "",
				      r->map->node[n].host, r->map->node[n].port, cnt);
	}
}

int xrl_redis_reply_num(const struct redisReply *rep, size_t i, double *out)
{
	const redisReply *e;
	char *end;

	if (!rep || rep->type != REDIS_REPLY_ARRAY || i >= rep->elements)
		return -1;
	e = rep->element[i];
	if (e->type == REDIS_REPLY_INTEGER) {
		*out = (double)e->integer;
		return 0;
	}
	if (e->type != REDIS_REPLY_STRING)
		return -1;
	*out = strtod(e->str, &end);
	return *end ? -1 : 0;
}
