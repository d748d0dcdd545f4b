/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's Redis connection (hiredis): URL parsing, a timeout on every
 * call, the fleet scripts loaded once and called with EVALSHA (reloaded on
 * NOSCRIPT), and pipelined batches of calls.
 */
#ifndef XRL_REDIS_H
#define XRL_REDIS_H

#include <stddef.h>
#include <sys/time.h>
#include "xrl_scripts.h"

struct redisContext;
struct redisReply;

struct xrl_redis_url {
	char host[256];
	int port;
	char password[256];   /* empty: no AUTH */
	int db;
};

/* redis://[:password@]host[:port][/db]; host may be [v6]. 0 or -EINVAL with err. */
int xrl_redis_parse_url(const char *url, struct xrl_redis_url *u, char *err, size_t errlen);
/* host:port/db for messages (never the password). */
void xrl_redis_url_name(const struct xrl_redis_url *u, char *buf, size_t len);

struct xrl_redis {
	struct xrl_redis_url url;
	struct timeval timeout;            /* connect, and every read and write */
	struct redisContext *c;            /* NULL while disconnected */
	char sha[XRL_SCRIPT_COUNT][41];
	unsigned long commands;            /* commands sent since start (EVALSHA, SCRIPT LOAD, ...) */
	unsigned long noscript;            /* NOSCRIPT replies (scripts flushed): reloaded */
};

/* One script call of a pipelined batch: argv holds KEYS then ARGV (the caller's storage). */
struct xrl_redis_call {
	enum xrl_script script;
	int nkeys;
	int argc;
	const char **argv;
	struct redisReply *reply;          /* set by xrl_redis_run; freed by xrl_redis_calls_free */
};

/* Connect, AUTH, SELECT, load the scripts. 0, or -errno with err set; r->c stays NULL. */
int xrl_redis_connect(struct xrl_redis *r, char *err, size_t errlen);
void xrl_redis_close(struct xrl_redis *r);
/*
 * Run n calls pipelined. 0 when every call got a reply (script errors are
 * replies of type error); -EIO with err set when the connection failed or
 * timed out, after which the connection is closed.
 */
/* The same in two halves, so that calls are built while Redis runs earlier ones: */
int xrl_redis_send(struct xrl_redis *r, const struct xrl_redis_call *c, char *err, size_t errlen);
/* the replies of the n calls sent since the last recv, in order */
int xrl_redis_recv(struct xrl_redis *r, struct xrl_redis_call *calls, int n, char *err,
		   size_t errlen);
int xrl_redis_run(struct xrl_redis *r, struct xrl_redis_call *calls, int n, char *err,
		  size_t errlen);
void xrl_redis_calls_free(struct xrl_redis_call *calls, int n);

/*
 * One command outside the scripts (CONFIG GET, INFO, TYPE, DEL, ...): its
 * reply, which the caller frees (freeReplyObject), an error reply
 * included; NULL with err set when the connection failed (it is closed).
 */
struct redisReply *xrl_redis_command(struct xrl_redis *r, int argc, const char **argv, char *err,
				     size_t errlen);
/*
 * TYPE of n keys, pipelined: types[i] as Redis says ("string", "hash",
 * "zset", "none", ...). 0, or -EIO with err set (the connection is closed).
 */
int xrl_redis_types(struct xrl_redis *r, const char *const *keys, int n, char (*types)[16],
		    char *err, size_t errlen);

/* Element i of an array reply as a double (scripts return numbers as strings). */
int xrl_redis_reply_num(const struct redisReply *rep, size_t i, double *out);

#endif /* XRL_REDIS_H */
