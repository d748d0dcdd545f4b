// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The exporter's HTTP side: the listen address, and /metrics and /healthz
 * served by libmicrohttpd from its own threads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>

#include "xrl_maps.h"
#include "xrl_metrics.h"
#include "xrl_rule.h"

#define TEXT_TYPE "text/plain; charset=utf-8"

/*
 * A client has this long to send a request's headers, from the connection's
 * opening or the end of its previous request (so an idle keep-alive
 * connection goes after it too); a slow client (slowloris) is cut then.
 */
#define HEADER_DEADLINE_NS 3000000000ull
/* Connections at once, and from one address: slow clients hold a thread each until cut. */
#define CONN_LIMIT 64
#define CONN_PER_IP 32

/* A connection as the deadline watchdog sees it. */
struct conn {
	struct conn *prev, *next;
	int fd;              /* our dup of the socket: shutdown() on it cuts the client, never another */
	__u64 deadline_ns;   /* for the headers of the request it is on */
	bool in_request;     /* headers received, the request is being answered */
	bool cut;
};

struct xrl_metrics {
	struct MHD_Daemon *mhd;
	struct xrl_metrics_opts o;   /* its strings are the copies below */
	char *addr, *instance, *pin_dir;
	const struct xrl_maps *m;
	xrl_metrics_extra_fn extra;
	void *arg;
	pthread_mutex_t render_lock;
	unsigned short port;
	pthread_mutex_t conn_lock;   /* the list, and each conn's fields */
	struct conn conns;           /* list head */
	pthread_t watchdog;
	bool watchdog_started, stopping;
	unsigned long cut_total;
};

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct xrl_metrics *srv = cls;
	struct conn *k = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		k = calloc(1, sizeof(*k));
		if (!k)
			return;   /* not watched: it still has MHD's idle timeout */
		k->fd = ci ? fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0) : -1;
		if (k->fd < 0) {
			free(k);
			return;
		}
		k->deadline_ns = xrl_mono_ns() + HEADER_DEADLINE_NS;
		pthread_mutex_lock(&srv->conn_lock);
		k->next = srv->conns.next;
		k->prev = &srv->conns;
		k->next->prev = k;
		srv->conns.next = k;
		pthread_mutex_unlock(&srv->conn_lock);
		*socket_context = k;
		return;
	}
	if (!k)
		return;
	pthread_mutex_lock(&srv->conn_lock);
	k->prev->next = k->next;
	k->next->prev = k->prev;
	pthread_mutex_unlock(&srv->conn_lock);
	close(k->fd);
	free(k);
	*socket_context = NULL;
}

/* The request's headers are in (in_request), or it was answered: the next one's deadline. */
static void mark_request(struct xrl_metrics *srv, struct MHD_Connection *c, bool in_request)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = ci ? ci->socket_context : NULL;

	if (!k)
		return;
	pthread_mutex_lock(&srv->conn_lock);
	k->in_request = in_request;
	if (!in_request)
		k->deadline_ns = xrl_mono_ns() + HEADER_DEADLINE_NS;
	pthread_mutex_unlock(&srv->conn_lock);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)con_cls;
	(void)toe;
	mark_request(cls, c, false);
}

/* Cuts the connections past their header deadline, four times a second. */
static void *watchdog(void *arg)
{
	struct xrl_metrics *srv = arg;
	struct timespec tick = { 0, 250000000 };

	for (;;) {
		struct conn *k;
		__u64 now;

		nanosleep(&tick, NULL);
		now = xrl_mono_ns();
		pthread_mutex_lock(&srv->conn_lock);
		if (srv->stopping) {
			pthread_mutex_unlock(&srv->conn_lock);
			return NULL;
		}
		for (k = srv->conns.next; k != &srv->conns; k = k->next)
			if (!k->in_request && !k->cut && now > k->deadline_ns) {
				shutdown(k->fd, SHUT_RDWR);   /* MHD sees the end and closes it */
				k->cut = true;
				srv->cut_total++;
			}
		pthread_mutex_unlock(&srv->conn_lock);
	}
}

int xrl_metrics_parse_listen(const char *s, char *buf, size_t buflen, struct xrl_metrics_opts *o,
			     char *err, size_t errlen)
{
	const char *host, *port, *sep;
	unsigned char a[sizeof(struct in6_addr)];
	unsigned long p = XRL_METRICS_DEFAULT_PORT;
	size_t hlen;
	char *end;
	bool v6 = false;

	if (!s || !*s) {
		host = XRL_METRICS_DEFAULT_ADDR;
		hlen = strlen(host);
		port = NULL;
	} else if (s[0] == '[') {
		sep = strchr(s, ']');
		if (!sep || sep[1] != ':')
			return xrl_fail(err, errlen, "listen address '%s': write an IPv6 address as "
					"[ADDR]:PORT, e.g. [::1]:9464", s), -EINVAL;
		host = s + 1;
		hlen = (size_t)(sep - host);
		port = sep + 2;
		v6 = true;
	} else {
		sep = strrchr(s, ':');
		if (!sep)
			return xrl_fail(err, errlen, "listen address '%s' has no port: write ADDR:PORT, "
					"[IPv6]:PORT or :PORT (e.g. 127.0.0.1:9464)", s), -EINVAL;
		if (strchr(s, ':') != sep)
			return xrl_fail(err, errlen, "listen address '%s': write an IPv6 address in "
					"brackets, e.g. [::1]:9464", s), -EINVAL;
		/* no address: loopback, so that exposing the exporter takes an explicit one */
		host = sep == s ? XRL_METRICS_DEFAULT_ADDR : s;
		hlen = sep == s ? strlen(host) : (size_t)(sep - s);
		port = sep + 1;
	}
	if (hlen + 1 > buflen)
		return xrl_fail(err, errlen, "listen address '%s': the address is too long", s), -EINVAL;
	memcpy(buf, host, hlen);
	buf[hlen] = '\0';
	if (inet_pton(v6 ? AF_INET6 : AF_INET, buf, a) != 1)
		return xrl_fail(err, errlen, "listen address '%s': '%s' is not an %s address (host "
				"names are not looked up)", s, buf, v6 ? "IPv6" : "IPv4"), -EINVAL;
	if (port) {
		errno = 0;
		p = strtoul(port, &end, 10);
		if (*port < '0' || *port > '9' || *end || errno || p < 1 || p > 65535)
			return xrl_fail(err, errlen, "listen address '%s': port '%s' is not a number "
					"from 1 to 65535", s, port), -EINVAL;
	}
	o->addr = buf;
	o->port = (unsigned short)p;
	return 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
			     void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;   /* out of memory: MHD closes the connection */
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status, const char *text)
{
	return reply(c, status, TEXT_TYPE, (void *)text, strlen(text), MHD_RESPMEM_MUST_COPY);
}

static enum MHD_Result serve_metrics(struct xrl_metrics *srv, struct MHD_Connection *c)
{
	char *buf = NULL, msg[512];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	/* one scrape at a time: a scrape of a full table walks all of it */
	pthread_mutex_lock(&srv->render_lock);
	err = xrl_metrics_render(f, &srv->o, srv->m, srv->extra, srv->arg);
	pthread_mutex_unlock(&srv->render_lock);
	fclose(f);
	if (!err)
		return reply(c, MHD_HTTP_OK, XRL_METRICS_CONTENT_TYPE, buf, len, MHD_RESPMEM_MUST_FREE);
	free(buf);
	if (err == -EBUSY)
		snprintf(msg, sizeof(msg),
			 "instance '%s' has been locked by a writer for over %d ms (a rule change that "
			 "does not finish?): see who holds %s\n",
			 srv->o.instance, XRL_METRICS_LOCK_WAIT_MS, srv->o.pin_dir);
	else
		snprintf(msg, sizeof(msg), "cannot read the maps of instance '%s': %s\n",
			 srv->o.instance, strerror(-err));
	return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, msg);
}

static enum MHD_Result serve_health(struct xrl_metrics *srv, struct MHD_Connection *c)
{
	char msg[512];
	size_t n;

	if (xrl_metrics_health(&srv->o, srv->m, msg, sizeof(msg) - 1) == 0)
		return reply_text(c, MHD_HTTP_OK, "ok\n");
	n = strlen(msg);
	msg[n] = '\n';
	msg[n + 1] = '\0';
	return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, msg);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct xrl_metrics *srv = cls;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	mark_request(srv, c, true);
	/* answered on the first call, before any request body: nothing here takes one */
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served\n");
	if (!strcmp(url, "/metrics"))
		return serve_metrics(srv, c);
	if (!strcmp(url, "/healthz"))
		return serve_health(srv, c);
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: this server has /metrics and /healthz\n");
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

static void start_error(const struct xrl_metrics_opts *o, int err, char *msg, size_t len)
{
	const char *why;
	bool v6 = strchr(o->addr, ':') != NULL;

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
	snprintf(msg, len, v6 ? "[%s]:%u: %s" : "%s:%u: %s", o->addr, o->port, why);
}

struct xrl_metrics *xrl_metrics_start(const struct xrl_metrics_opts *o, const struct xrl_maps *m,
				      xrl_metrics_extra_fn extra, void *arg, char *err,
				      size_t errlen)
{
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_port = htons(o->port) };
	struct sockaddr_in sa4 = { .sin_family = AF_INET, .sin_port = htons(o->port) };
	const union MHD_DaemonInfo *info;
	struct sockaddr *sa;
	socklen_t salen;
	struct xrl_metrics *srv;
	bool v6;

	v6 = inet_pton(AF_INET6, o->addr, &sa6.sin6_addr) == 1;
	if (!v6 && inet_pton(AF_INET, o->addr, &sa4.sin_addr) != 1) {
		snprintf(err, errlen, "'%s' is not an IPv4 or IPv6 address", o->addr);
		return NULL;
	}
	sa = v6 ? (struct sockaddr *)&sa6 : (struct sockaddr *)&sa4;
	salen = v6 ? sizeof(sa6) : sizeof(sa4);

	srv = calloc(1, sizeof(*srv));
	if (!srv) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	srv->addr = strdup(o->addr);
	srv->instance = strdup(o->instance ? o->instance : "default");
	srv->pin_dir = o->pin_dir ? strdup(o->pin_dir) : NULL;
	if (!srv->addr || !srv->instance || (o->pin_dir && !srv->pin_dir)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	srv->o = *o;
	srv->o.addr = srv->addr;
	srv->o.instance = srv->instance;
	srv->o.pin_dir = srv->pin_dir;
	srv->m = m;
	srv->extra = extra;
	srv->arg = arg;
	pthread_mutex_init(&srv->render_lock, NULL);
	pthread_mutex_init(&srv->conn_lock, NULL);
	srv->conns.next = srv->conns.prev = &srv->conns;

	/*
	 * A thread per connection, so that /healthz answers while a scrape
	 * walks a full table or waits for the instance lock; a bounded number
	 * of connections (and of them from one address), each cut when its
	 * request's headers take over HEADER_DEADLINE_NS or it idles for 30 s,
	 * so that slow clients cannot hold every thread and shut out /healthz.
	 */
	srv->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
				    MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0),
				    o->port, NULL, NULL, handle, srv,
				    MHD_OPTION_SOCK_ADDR, sa,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONN_LIMIT,
				    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)CONN_PER_IP,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
				    MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
				    MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
				    MHD_OPTION_END);
	if (!srv->mhd) {
		start_error(o, bind_error(sa, salen), err, errlen);
		pthread_mutex_destroy(&srv->render_lock);
		pthread_mutex_destroy(&srv->conn_lock);
		goto fail;
	}
	if (pthread_create(&srv->watchdog, NULL, watchdog, srv) == 0)
		srv->watchdog_started = true;
	info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = info ? info->port : o->port;
	return srv;
fail:
	free(srv->addr);
	free(srv->instance);
	free(srv->pin_dir);
	free(srv);
	return NULL;
}

unsigned short xrl_metrics_port(const struct xrl_metrics *srv)
{
	return srv->port;
}

void xrl_metrics_stop(struct xrl_metrics *srv)
{
	if (!srv)
		return;
	pthread_mutex_lock(&srv->conn_lock);
	srv->stopping = true;
	pthread_mutex_unlock(&srv->conn_lock);
	if (srv->watchdog_started)
		pthread_join(srv->watchdog, NULL);
	MHD_stop_daemon(srv->mhd);   /* waits for the connection threads */
	pthread_mutex_destroy(&srv->render_lock);
	pthread_mutex_destroy(&srv->conn_lock);
	free(srv->addr);
	free(srv->instance);
	free(srv->pin_dir);
	free(srv);
}
