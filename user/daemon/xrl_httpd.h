/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The hardened HTTP server of xrl's endpoints (libmicrohttpd, a thread per
 * connection): one listen address, a bounded number of connections with a
 * per-address cap below the total, a deadline on each request's headers
 * (slowloris), idle connections cut sooner when the total nears its limit
 * (the address holding the most first, so that a new address always gets
 * in), and a handler of the caller's that answers the requests. It knows
 * nothing of what it serves: /metrics and /healthz are xrl_metrics_http.c's.
 */
#ifndef XRL_HTTPD_H
#define XRL_HTTPD_H

#include <stddef.h>
#include <microhttpd.h>

/*
 * A client has this long to send a request's headers, from the connection's
 * opening or the end of its previous request (so an idle keep-alive
 * connection goes after it too); a slow client (slowloris) is cut then.
 */
#define XRL_HTTPD_HEADER_DEADLINE_NS 3000000000ull
/* Connections at once (each holds a thread), and from one address (IPv6: one /64). */
#define XRL_HTTPD_CONN_LIMIT 64
#define XRL_HTTPD_CONN_PER_IP 32
/*
 * The limit is near: past this many connections, a new one cuts idle ones
 * (no request's headers received yet), of the address holding the most,
 * the oldest first. The rest of the limit is kept for requests in progress
 * and new addresses.
 */
#define XRL_HTTPD_CONN_HIGH 48

/*
 * Answers a request: MHD's access handler without the version (called once
 * per request without a body; with a body, as MHD calls it).
 */
typedef enum MHD_Result (*xrl_httpd_handler)(void *arg, struct MHD_Connection *c, const char *url,
					     const char *method, const char *upload_data,
					     size_t *upload_data_size, void **con_cls);

/* A request ended (xrl_httpd_start_pool): its con_cls, as the handler left it. */
typedef void (*xrl_httpd_completed)(void *arg, struct MHD_Connection *c, void **con_cls);

struct xrl_httpd;

/*
 * Listen on addr (an IPv4 or IPv6 literal) and port (0: any free one) and
 * serve with handler. NULL with err set ("127.0.0.1:9464: address already
 * in use ...") on failure.
 */
struct xrl_httpd *xrl_httpd_start(const char *addr, unsigned short port, xrl_httpd_handler handler,
				  void *arg, char *err, size_t errlen);
/*
 * The same on a unix socket at path (a stale socket file there is
 * replaced; anything else is refused), mode 0666: who may connect is a
 * matter of the directory's permissions. A peer on it has no address (the
 * connection limits count all of them as one).
 */
struct xrl_httpd *xrl_httpd_start_unix(const char *path, xrl_httpd_handler handler, void *arg,
				       char *err, size_t errlen);
/*
 * The same two served by threads event loops (epoll; threads >= 1) instead
 * of a thread per connection, with MHD_suspend_connection allowed: a
 * handler must never block (it suspends its connection and resumes it
 * later). The limits, the header deadline and the cuts are the same.
 * completed (or NULL) is called with each request's con_cls when it ends,
 * answered or not: a connection its client closed while suspended is not
 * handed to the handler again, so what the handler left there is freed here.
 */
struct xrl_httpd *xrl_httpd_start_pool(const char *addr, unsigned short port, unsigned threads,
				       xrl_httpd_handler handler, xrl_httpd_completed completed,
				       void *arg, char *err, size_t errlen);
struct xrl_httpd *xrl_httpd_start_unix_pool(const char *path, unsigned threads,
					    xrl_httpd_handler handler, xrl_httpd_completed completed,
					    void *arg, char *err, size_t errlen);
/* The port it listens on (the one chosen when port was 0). */
unsigned short xrl_httpd_port(const struct xrl_httpd *h);
/* Stop: waits for the connection threads. NULL does nothing. */
void xrl_httpd_stop(struct xrl_httpd *h);

/* What the server did to keep room (for tests and an endpoint's own metrics). */
struct xrl_httpd_stats {
	unsigned long cut_deadline;   /* cut for missing their header deadline */
	unsigned long cut_crowded;    /* idle ones cut sooner with the limit near */
	unsigned long refused;        /* new ones cut at once: the limit full of requests */
};
void xrl_httpd_stats(struct xrl_httpd *h, struct xrl_httpd_stats *out);

/* Queue a reply; MHD_NO when out of memory (MHD closes). */
enum MHD_Result xrl_httpd_reply(struct MHD_Connection *c, unsigned int status, const char *type,
				void *body, size_t len, enum MHD_ResponseMemoryMode mode);
/* A text/plain reply, copied. */
enum MHD_Result xrl_httpd_reply_text(struct MHD_Connection *c, unsigned int status,
				     const char *text);
/* 405 Method Not Allowed, text/plain, with the methods served in an Allow header. */
enum MHD_Result xrl_httpd_reply_405(struct MHD_Connection *c, const char *allow, const char *text);

#endif /* XRL_HTTPD_H */
