/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Who the client is: the trusted proxies (--trusted-proxy CIDR), the
 * rightmost-untrusted address of X-Forwarded-For, and a rule's key built
 * from the request (address prefix, header, query argument).
 */
#ifndef XRL_HTTP_CLIENT_H
#define XRL_HTTP_CLIENT_H

#include <stddef.h>
#include <linux/types.h>

#include "xrl_http_rules.h"

#define XRL_HTTP_MAX_PROXIES 64

/* an address: IPv4 as ::ffff:a.b.c.d */
struct xrl_http_addr {
	__u8 a[16];
	int v4;
};

struct xrl_http_proxies {
	struct xrl_http_addr net[XRL_HTTP_MAX_PROXIES];
	int plen[XRL_HTTP_MAX_PROXIES];   /* over the 128-bit form */
	int n;
};

/* An IPv4 or IPv6 literal (IPv4-mapped IPv6 is IPv4). 0 or -1. */
int xrl_http_addr_parse(const char *s, size_t len, struct xrl_http_addr *out);
/* Add --trusted-proxy CIDR (an address alone is a /32 or /128). 0 or -1 with err. */
int xrl_http_proxy_add(struct xrl_http_proxies *p, const char *cidr, char *err, size_t errlen);
int xrl_http_proxy_trusted(const struct xrl_http_proxies *p, const struct xrl_http_addr *a);
/*
 * The client of a request that came from peer: peer itself unless it is a
 * trusted proxy; then, of X-Forwarded-For (xff, all its fields joined by
 * commas, or NULL) the rightmost address that is not a trusted proxy (the
 * leftmost if all are), else X-Real-IP (real, or NULL). 0, or -1 when a
 * trusted proxy passed an address that does not parse (the request is bad).
 */
int xrl_http_client(const struct xrl_http_proxies *p, const struct xrl_http_addr *peer,
		    const char *xff, const char *real, struct xrl_http_addr *client);
/* The address as text (IPv4 dotted). */
void xrl_http_addr_format(const struct xrl_http_addr *a, char *buf, size_t len);

/*
 * The value of query argument name in uri (after '?'), raw (not decoded),
 * into buf; 1 found, 0 not.
 */
int xrl_http_query_arg(const char *uri, const char *name, char *buf, size_t len);

#endif /* XRL_HTTP_CLIENT_H */
