/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * xrl http: the request layer's decision service (for nginx auth_request,
 * envoy ext_authz, HAProxy, applications). The CLI's `xrl http` parses the
 * command line (user/cli/xrl_cmd_http.c) and runs it.
 */
#ifndef XRL_HTTP_H
#define XRL_HTTP_H

#include <stddef.h>

#define XRL_HTTP_DEFAULT_LISTEN "127.0.0.1:9480"

struct xrl_http_opts {
	const char *listen;        /* ADDR:PORT or [ADDR6]:PORT; NULL: XRL_HTTP_DEFAULT_LISTEN */
	const char *rules;         /* the rules file (required) */
	const char *trusted;       /* --trusted-proxy CIDR[,CIDR...]; NULL: none */
	unsigned long long max_keys;   /* keys per rule; 0: the default */
	const char *log_format;    /* "text" or "json" */
	const char *instance;
	const char *pin_dir;       /* the instance's pins (--escalate writes its penalty box) */
	const char *redis;         /* --redis URL; NULL: --global rules are judged locally */
	unsigned failure;          /* --on-redis-failure: 0 local, 1 open, 2 closed */
	unsigned long long redis_timeout_ms;   /* a --global call's deadline; 0: the default */
};

#define XRL_HTTP_REDIS_TIMEOUT_MS 5
/* the server's event loops without --redis (xrl_httpd_start_pool) */
#define XRL_HTTP_THREADS 2

/*
 * Run the service until SIGTERM or SIGINT. The exit code: 0; 1 could not
 * start (logged); 2 a bad option value (err says which; nothing started).
 */
int xrl_http_run(const struct xrl_http_opts *o, char *err, size_t errlen);

#endif /* XRL_HTTP_H */
