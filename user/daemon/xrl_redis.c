// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>

#include "xrl_redis.h"
#include "xrl_rule.h"

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
	const char *p = url + 8, *at = strchr(p, '@'), *slash = strchr(p, '/');

	if (strncmp(url, "redis://", 8) || !at || (slash && slash < at)) {
		/* no password part: as given, unless it could hold one */
		snprintf(buf, len, "%s", at ? "redis://***" : url);
		return;
	}
	snprintf(buf, len, "redis://%s***%s", *p == ':' ? ":" : "", at);
}

int xrl_redis_parse_url(const char *url, struct xrl_redis_url *u, char *err, size_t errlen)
{
	const char *p, *at, *hostend, *slash;
	char s[600];
	size_t n;

	url_shown(url, s, sizeof(s));   /* s: for messages only */

	memset(u, 0, sizeof(*u));
	u->port = 6379;
	if (strncmp(url, "redis://", 8))
		return xrl_fail(err, errlen, "invalid --redis '%s': expected redis://[:password@]host[:port][/db]", s), -EINVAL;
	p = url + 8;
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
	if (*p == '[') {
		hostend = strchr(p, ']');
		if (!hostend)
			return xrl_fail(err, errlen, "invalid --redis '%s': missing ']' after the IPv6 address", s), -EINVAL;
		n = (size_t)(hostend - p - 1);
		if (!n || n >= sizeof(u->host))
			return xrl_fail(err, errlen, "invalid --redis '%s': bad host", s), -EINVAL;
		memcpy(u->host, p + 1, n);
		p = hostend + 1;
	} else {
		hostend = p + strcspn(p, ":/");
		n = (size_t)(hostend - p);
		if (!n || n >= sizeof(u->host))
			return xrl_fail(err, errlen, "invalid --redis '%s': missing host", s), -EINVAL;
		memcpy(u->host, p, n);
		p = hostend;
	}
	if (*p == ':') {
		n = strcspn(p + 1, "/");
		if (parse_port(p + 1, n, &u->port))
			return xrl_fail(err, errlen, "invalid --redis '%s': the port must be 1 to 65535", s), -EINVAL;
		p += 1 + n;
	}
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
	snprintf(buf, len, strchr(u->host, ':') ? "[%s]:%d/%d" : "%s:%d/%d", u->host, u->port, u->db);
}

void xrl_redis_close(struct xrl_redis *r)
{
	if (r->c)
		redisFree(r->c);
	r->c = NULL;
}

/* A command with a status or string reply, run on the connection; 0 or -EIO/-EPROTO. */
static int simple(struct xrl_redis *r, char *out, size_t outlen, char *err, size_t errlen,
		  int argc, const char **argv)
{
	redisReply *rep = redisCommandArgv(r->c, argc, argv, NULL);
	int rc = 0;

	r->commands++;
	if (!rep) {
		xrl_fail(err, errlen, "%s: %s", argv[0], r->c->errstr[0] ? r->c->errstr : "no reply");
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

static int load_scripts(struct xrl_redis *r, char *err, size_t errlen)
{
	int i, rc;

	for (i = 0; i < XRL_SCRIPT_COUNT; i++) {
		const char *argv[] = { "SCRIPT", "LOAD", xrl_script_source[i] };

		rc = simple(r, r->sha[i], sizeof(r->sha[i]), err, errlen, 3, argv);
		if (rc)
			return rc;
		if (strlen(r->sha[i]) != 40) {
			xrl_fail(err, errlen, "SCRIPT LOAD of %s returned no SHA1", xrl_script_name[i]);
			return -EPROTO;
		}
	}
	return 0;
}

int xrl_redis_connect(struct xrl_redis *r, char *err, size_t errlen)
{
	char db[16];
	int rc;

	xrl_redis_close(r);
	r->c = redisConnectWithTimeout(r->url.host, r->url.port, r->timeout);
	if (!r->c) {
		xrl_fail(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (r->c->err) {
		xrl_fail(err, errlen, "connect: %s", r->c->errstr);
		xrl_redis_close(r);
		return -EIO;
	}
	if (redisSetTimeout(r->c, r->timeout) != REDIS_OK) {
		xrl_fail(err, errlen, "cannot set the socket timeout: %s", r->c->errstr);
		xrl_redis_close(r);
		return -EIO;
	}
	rc = 0;
	if (r->url.password[0]) {
		const char *argv[] = { "AUTH", r->url.password };

		rc = simple(r, NULL, 0, err, errlen, 2, argv);
	}
	if (!rc && r->url.db) {
		const char *argv[] = { "SELECT", db };

		snprintf(db, sizeof(db), "%d", r->url.db);
		rc = simple(r, NULL, 0, err, errlen, 2, argv);
	}
	if (!rc)
		rc = load_scripts(r, err, errlen);
	if (rc)
		xrl_redis_close(r);
	return rc;
}

static int is_noscript(const redisReply *rep)
{
	return rep && rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOSCRIPT", 8);
}

int xrl_redis_send(struct xrl_redis *r, const struct xrl_redis_call *c, char *err, size_t errlen)
{
	const char **argv;
	char nkeys[12];
	int j, done = 0;

	if (!r->c) {
		xrl_fail(err, errlen, "not connected");
		return -EIO;
	}
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
	j = redisAppendCommandArgv(r->c, 3 + c->argc, argv, NULL);
	free(argv);
	r->commands++;
	/* on the wire now, so Redis works on it while the caller builds the next */
	while (j == REDIS_OK && !done)
		j = redisBufferWrite(r->c, &done);
	if (j != REDIS_OK) {
		xrl_fail(err, errlen, "%s", r->c->errstr[0] ? r->c->errstr : "connection lost");
		xrl_redis_close(r);
		return -EIO;
	}
	return 0;
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
	rc = read_replies(r, calls, n, err, errlen);
	if (rc)
		goto fail;
	/* Redis restarted or SCRIPT FLUSH: load again and repeat what was refused */
	for (i = 0; i < n; i++)
		again |= is_noscript(calls[i].reply);
	if (!again)
		return 0;
	r->noscript++;
	rc = load_scripts(r, err, errlen);
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

struct redisReply *xrl_redis_command(struct xrl_redis *r, int argc, const char **argv, char *err,
				     size_t errlen)
{
	redisReply *rep;

	if (!r->c) {
		xrl_fail(err, errlen, "not connected");
		return NULL;
	}
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
