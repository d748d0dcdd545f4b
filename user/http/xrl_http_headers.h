/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The answer's fields: RateLimit-Policy and RateLimit in the IETF httpapi
 * ratelimit-headers draft's syntax (structured-field lists of a quoted
 * policy name with parameters), Retry-After in whole seconds, and the RFC
 * 9457 problem body of a refusal.
 */
#ifndef XRL_HTTP_HEADERS_H
#define XRL_HTTP_HEADERS_H

#include <stddef.h>

#include "xrl_http_decide.h"

/* `"api";q=100;w=60` */
int xrl_http_policy_field(const char *name, const struct xrl_http_figures *f, char *buf,
			  size_t len);
/* `"api";r=37;t=12` */
int xrl_http_ratelimit_field(const char *name, const struct xrl_http_figures *f, char *buf,
			     size_t len);
/* the application/problem+json body of a refusal (status 429) */
int xrl_http_problem_body(const char *name, const struct xrl_http_figures *f, char *buf,
			  size_t len);

#endif /* XRL_HTTP_HEADERS_H */
