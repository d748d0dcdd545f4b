// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The hardened HTTP server (xrl_httpd.h): libmicrohttpd with a thread per
 * connection, and this file's own account of the connections, kept in the
 * connection notify callback, for the header deadline and for the room
 * new connections need.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "xrl_httpd.h"
#include "xrl_rule.h"   /* xrl_mono_ns */

#define TEXT_TYPE "text/plain; charset=utf-8"

/*
 * libmicrohttpd's own cap on connections: above XRL_HTTPD_CONN_LIMIT, for
 * the connections cut and not yet closed by their threads (the cap refuses
 * at accept, before this file could make room).
 */
#define MHD_CONN_CAP (2 * XRL_HTTPD_CONN_LIMIT)

/* A connection as the server sees it. */
struct conn {
	struct conn *prev, *next;
	int fd;              /* our dup of the socket: shutdown() on it cuts the client, never another */
	__u64 deadline_ns;   /* for the headers of the request it is on */
	__u64 opened_ns;
	unsigned char who[17];   /* its address: family, then the IPv4 address or the IPv6 /64 */
	bool in_request;     /* headers received, the request is being answered */
	bool cut;
};

struct xrl_httpd {
	struct MHD_Daemon *mhd;
	xrl_httpd_handler handler;
	xrl_httpd_completed completed;   /* NULL: none */
	void *arg;
	unsigned short port;
	pthread_mutex_t conn_lock;   /* the list, each conn's fields, the counts */
	struct conn conns;           /* list head */
	int live;                    /* connections in the list not cut */
	pthread_t watchdog;
	bool watchdog_started, stopping;
	struct xrl_httpd_stats stats;
};

static void client_key(const struct sockaddr *sa, unsigned char who[17])
{
	memset(who, 0, 17);
	if (!sa)
		return;
	who[0] = (unsigned char)sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(who + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(who + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 8);
}

/* Cut a connection: its thread sees the end, closes it and MHD forgets it. Under conn_lock. */
static void cut(struct xrl_httpd *h, struct conn *k)
{
	shutdown(k->fd, SHUT_RDWR);
	k->cut = true;
	h->live--;
}

/* Connections of k's address still in (not cut). Under conn_lock. */
static int held_by(const struct xrl_httpd *h, const struct conn *k)
{
	const struct conn *o;
	int n = 0;

	for (o = h->conns.next; o != &h->conns; o = o->next)
		if (!o->cut && !memcmp(o->who, k->who, sizeof(k->who)))
			n++;
	return n;
}

/*
 * The limit is near: cut idle connections (no request's headers yet) but
 * the new one, of the address holding the most, the oldest first, until
 * the count is back at XRL_HTTPD_CONN_HIGH. A client that opens connections
 * and sends nothing loses its own first once it holds the most; a probe or
 * a scrape, from an address holding fewer, sends its request at once and
 * is answered. With the limit full of requests in progress, the new one is
 * cut. Under conn_lock.
 */
static void make_room(struct xrl_httpd *h, struct conn *fresh)
{
	while (h->live > XRL_HTTPD_CONN_HIGH) {
		struct conn *k, *victim = NULL;
		int most = 0;

		for (k = h->conns.next; k != &h->conns; k = k->next) {
			int n;

			if (k == fresh || k->cut || k->in_request)
				continue;
			n = held_by(h, k);
			if (n > most || (n == most && victim && k->opened_ns < victim->opened_ns)) {
				most = n;
				victim = k;
			}
		}
		if (!victim)
			break;
		cut(h, victim);
		h->stats.cut_crowded++;
	}
	if (h->live > XRL_HTTPD_CONN_LIMIT) {
		cut(h, fresh);
		h->stats.refused++;
	}
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct xrl_httpd *h = cls;
	struct conn *k = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		k = calloc(1, sizeof(*k));
		if (!k)
			return;   /* not watched: it still has MHD's idle timeout */
		k->fd = ci ? fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0) : -1;
		if (k->fd < 0) {
			free(k);
			return;
		}
		client_key(ai ? ai->client_addr : NULL, k->who);
		k->opened_ns = xrl_mono_ns();
		k->deadline_ns = k->opened_ns + XRL_HTTPD_HEADER_DEADLINE_NS;
		pthread_mutex_lock(&h->conn_lock);
		k->next = h->conns.next;
		k->prev = &h->conns;
		k->next->prev = k;
		h->conns.next = k;
		h->live++;
		make_room(h, k);
		pthread_mutex_unlock(&h->conn_lock);
		*socket_context = k;
		return;
	}
	if (!k)
		return;
	pthread_mutex_lock(&h->conn_lock);
	k->prev->next = k->next;
	k->next->prev = k->prev;
	if (!k->cut)
		h->live--;
	pthread_mutex_unlock(&h->conn_lock);
	close(k->fd);
	free(k);
	*socket_context = NULL;
}

/* The request's headers are in (in_request), or it was answered: the next one's deadline. */
static void mark_request(struct xrl_httpd *h, struct MHD_Connection *c, bool in_request)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = ci ? ci->socket_context : NULL;

	if (!k)
		return;
	pthread_mutex_lock(&h->conn_lock);
	k->in_request = in_request;
	if (!in_request)
		k->deadline_ns = xrl_mono_ns() + XRL_HTTPD_HEADER_DEADLINE_NS;
	pthread_mutex_unlock(&h->conn_lock);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct xrl_httpd *h = cls;

	(void)toe;
	if (h->completed)
		h->completed(h->arg, c, con_cls);
	mark_request(h, c, false);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct xrl_httpd *h = cls;

	(void)version;
	mark_request(h, c, true);
	return h->handler(h->arg, c, url, method, upload_data, upload_data_size, con_cls);
}

/* Cuts the connections past their header deadline, four times a second. */
static void *watchdog(void *arg)
{
	struct xrl_httpd *h = arg;
	struct timespec tick = { 0, 250000000 };

	for (;;) {
		struct conn *k;
		__u64 now;

		nanosleep(&tick, NULL);
		now = xrl_mono_ns();
		pthread_mutex_lock(&h->conn_lock);
		if (h->stopping) {
			pthread_mutex_unlock(&h->conn_lock);
			return NULL;
		}
		for (k = h->conns.next; k != &h->conns; k = k->next)
			if (!k->in_request && !k->cut && now > k->deadline_ns) {
				cut(h, k);   /* MHD sees the end and closes it */
				h->stats.cut_deadline++;
			}
		pthread_mutex_unlock(&h->conn_lock);
	}
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
			     void *body, size_t len, enum MHD_ResponseMemoryMode mode,
			     const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;   /* out of memory: MHD closes the connection */
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result xrl_httpd_reply(struct MHD_Connection *c, unsigned int status, const char *type,
				void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	return reply(c, status, type, body, len, mode, NULL);
}

enum MHD_Result xrl_httpd_reply_text(struct MHD_Connection *c, unsigned int status, const char *text)
{
	return reply(c, status, TEXT_TYPE, (void *)text, strlen(text), MHD_RESPMEM_MUST_COPY, NULL);
}

enum MHD_Result xrl_httpd_reply_405(struct MHD_Connection *c, const char *allow, const char *text)
{
	return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_TYPE, (void *)text, strlen(text),
		     MHD_RESPMEM_MUST_COPY, allow);
}

/*
 * libmicrohttpd says only that it failed; binding the same address
 * ourselves tells why (in use, not an address of this host, ...).
 */
static int bind_error(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, err = 0;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));   /* as libmicrohttpd does */
	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, sa, len) || listen(fd, 1))
		err = -errno;
	close(fd);
	return err;
}

static void start_error(const char *addr, unsigned short port, int err, char *msg, size_t len)
{
	const char *why;
	bool v6 = strchr(addr, ':') != NULL;

	switch (err) {
	case -EADDRINUSE:
		why = "address already in use (another exporter or xrl daemon listens there?): "
		      "choose another port";
		break;
	case -EADDRNOTAVAIL:
		why = "address not available: no interface of this host has it";
		break;
	case -EACCES:
		why = "permission denied (ports below 1024 need root)";
		break;
	case 0:
		why = "libmicrohttpd could not start its server thread (out of memory or threads?)";
		break;
	default:
		why = strerror(-err);
	}
	snprintf(msg, len, v6 ? "[%s]:%u: %s" : "%s:%u: %s", addr, port, why);
}

/*
 * MHD's mode: threads 0, a thread per connection (a handler may block);
 * else an epoll loop in each of threads threads, with suspend and resume
 * allowed (a handler must not block: it suspends its connection instead).
 */
/* A server's state before its daemon starts: the callbacks and an empty connection list. */
static struct xrl_httpd *new_server(xrl_httpd_handler handler, xrl_httpd_completed completed,
				    void *arg, char *err, size_t errlen)
{
	struct xrl_httpd *h = calloc(1, sizeof(*h));

	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->handler = handler;
	h->completed = completed;
	h->arg = arg;
	pthread_mutex_init(&h->conn_lock, NULL);
	h->conns.next = h->conns.prev = &h->conns;
	return h;
}

static unsigned int mode_flags(unsigned threads)
{
	return threads ? MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME :
			 MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL;
}

struct xrl_httpd *xrl_httpd_start(const char *addr, unsigned short port, xrl_httpd_handler handler,
				  void *arg, char *err, size_t errlen)
{
	return xrl_httpd_start_pool(addr, port, 0, handler, NULL, arg, err, errlen);
}

struct xrl_httpd *xrl_httpd_start_pool(const char *addr, unsigned short port, unsigned threads,
				       xrl_httpd_handler handler, xrl_httpd_completed completed,
				       void *arg, char *err, size_t errlen)
{
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in sa4 = { .sin_family = AF_INET, .sin_port = htons(port) };
	const union MHD_DaemonInfo *info;
	struct xrl_httpd *h;
	struct sockaddr *sa;
	socklen_t salen;
	bool v6;

	v6 = inet_pton(AF_INET6, addr, &sa6.sin6_addr) == 1;
	if (!v6 && inet_pton(AF_INET, addr, &sa4.sin_addr) != 1) {
		snprintf(err, errlen, "'%s' is not an IPv4 or IPv6 address", addr);
		return NULL;
	}
	sa = v6 ? (struct sockaddr *)&sa6 : (struct sockaddr *)&sa4;
	salen = v6 ? sizeof(sa6) : sizeof(sa4);

	h = new_server(handler, completed, arg, err, errlen);
	if (!h)
		return NULL;

	/*
	 * A thread per connection, so that a quick request is answered while
	 * another walks a full table or waits for a lock; a bounded number of
	 * connections (and of them from one address), each cut when its
	 * request's headers take over XRL_HTTPD_HEADER_DEADLINE_NS, when it
	 * idles while the limit is near, or after 30 s without progress, so
	 * that slow or idle clients cannot hold every thread.
	 */
	h->mhd = MHD_start_daemon(mode_flags(threads) | (v6 ? MHD_USE_IPv6 : 0),
				  port, NULL, NULL, on_request, h,
				  MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)(threads > 1 ? threads : 0),
				  MHD_OPTION_SOCK_ADDR, sa,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)MHD_CONN_CAP,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)XRL_HTTPD_CONN_PER_IP,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				  MHD_OPTION_END);
	if (!h->mhd) {
		start_error(addr, port, bind_error(sa, salen), err, errlen);
		pthread_mutex_destroy(&h->conn_lock);
		free(h);
		return NULL;
	}
	if (pthread_create(&h->watchdog, NULL, watchdog, h) == 0)
		h->watchdog_started = true;
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	return h;
}

struct xrl_httpd *xrl_httpd_start_unix(const char *path, xrl_httpd_handler handler, void *arg,
				       char *err, size_t errlen)
{
	return xrl_httpd_start_unix_pool(path, 0, handler, NULL, arg, err, errlen);
}

struct xrl_httpd *xrl_httpd_start_unix_pool(const char *path, unsigned threads,
					    xrl_httpd_handler handler, xrl_httpd_completed completed,
					    void *arg, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct xrl_httpd *h;
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "unix:%s: a socket path has at most %zu characters", path,
			 sizeof(sun.sun_path) - 1);
		return NULL;
	}
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "unix:%s: exists and is not a socket: choose another path",
				 path);
			return NULL;
		}
		unlink(path);   /* a stale socket of an earlier run */
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || chmod(path, 0666) ||
	    listen(fd, 128)) {
		snprintf(err, errlen, "unix:%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	h = new_server(handler, completed, arg, err, errlen);
	if (!h) {
		close(fd);
		return NULL;
	}
	/* as xrl_httpd_start, on the socket made here (no per-address cap: peers have none) */
	h->mhd = MHD_start_daemon(mode_flags(threads),
				  0, NULL, NULL, on_request, h,
				  MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)(threads > 1 ? threads : 0),
				  MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)MHD_CONN_CAP,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				  MHD_OPTION_END);
	if (!h->mhd) {
		snprintf(err, errlen, "unix:%s: libmicrohttpd could not start its server thread", path);
		close(fd);
		pthread_mutex_destroy(&h->conn_lock);
		free(h);
		return NULL;
	}
	if (pthread_create(&h->watchdog, NULL, watchdog, h) == 0)
		h->watchdog_started = true;
	return h;
}

unsigned short xrl_httpd_port(const struct xrl_httpd *h)
{
	return h->port;
}

void xrl_httpd_stats(struct xrl_httpd *h, struct xrl_httpd_stats *out)
{
	pthread_mutex_lock(&h->conn_lock);
	*out = h->stats;
	pthread_mutex_unlock(&h->conn_lock);
}

void xrl_httpd_stop(struct xrl_httpd *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->conn_lock);
	h->stopping = true;
	pthread_mutex_unlock(&h->conn_lock);
	if (h->watchdog_started)
		pthread_join(h->watchdog, NULL);
	MHD_stop_daemon(h->mhd);   /* waits for the connection threads */
	pthread_mutex_destroy(&h->conn_lock);
	free(h);
}
