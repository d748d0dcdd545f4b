// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The exporter's HTTP side: the listen address, and /metrics and /healthz
 * served by the hardened HTTP server (xrl_httpd.c) from its threads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "xrl_httpd.h"
#include "xrl_maps.h"
#include "xrl_metrics.h"
#include "xrl_rule.h"

struct xrl_metrics {
	struct xrl_httpd *httpd;
	struct xrl_metrics_opts o;   /* its strings are the copies below */
	char *addr, *instance, *pin_dir;
	const struct xrl_maps *m;
	xrl_metrics_extra_fn extra;
	void *arg;
	pthread_mutex_t render_lock;
};

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

static enum MHD_Result serve_metrics(struct xrl_metrics *srv, struct MHD_Connection *c)
{
	char *buf = NULL, msg[512];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return xrl_httpd_reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	/* one scrape at a time: a scrape of a full table walks all of it */
	pthread_mutex_lock(&srv->render_lock);
	err = xrl_metrics_render(f, &srv->o, srv->m, srv->extra, srv->arg);
	pthread_mutex_unlock(&srv->render_lock);
	fclose(f);
	if (!err)
		return xrl_httpd_reply(c, MHD_HTTP_OK, XRL_METRICS_CONTENT_TYPE, buf, len, MHD_RESPMEM_MUST_FREE);
	free(buf);
	if (err == -EBUSY)
		snprintf(msg, sizeof(msg),
			 "instance '%s' has been locked by a writer for over %d ms (a rule change that "
			 "does not finish?): see who holds %s\n",
			 srv->o.instance, XRL_METRICS_LOCK_WAIT_MS, srv->o.pin_dir);
	else
		snprintf(msg, sizeof(msg), "cannot read the maps of instance '%s': %s\n",
			 srv->o.instance, strerror(-err));
	return xrl_httpd_reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, msg);
}

static enum MHD_Result serve_health(struct xrl_metrics *srv, struct MHD_Connection *c)
{
	char msg[512];
	size_t n;

	if (xrl_metrics_health(&srv->o, srv->m, msg, sizeof(msg) - 1) == 0)
		return xrl_httpd_reply_text(c, MHD_HTTP_OK, "ok\n");
	n = strlen(msg);
	msg[n] = '\n';
	msg[n + 1] = '\0';
	return xrl_httpd_reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, msg);
}

static enum MHD_Result handle(void *arg, struct MHD_Connection *c, const char *url,
			      const char *method, const char *upload_data, size_t *upload_data_size,
			      void **con_cls)
{
	struct xrl_metrics *srv = arg;

	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	/* answered on the first call, before any request body: nothing here takes one */
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return xrl_httpd_reply_405(c, "GET, HEAD", "only GET and HEAD are served\n");
	if (!strcmp(url, "/metrics"))
		return serve_metrics(srv, c);
	if (!strcmp(url, "/healthz"))
		return serve_health(srv, c);
	return xrl_httpd_reply_text(c, MHD_HTTP_NOT_FOUND, "not found: this server has /metrics and /healthz\n");
}

struct xrl_metrics *xrl_metrics_start(const struct xrl_metrics_opts *o, const struct xrl_maps *m,
				      xrl_metrics_extra_fn extra, void *arg, char *err,
				      size_t errlen)
{
	struct xrl_metrics *srv;

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
	/* /healthz answers while a scrape walks a full table or waits for the instance lock */
	srv->httpd = xrl_httpd_start(o->addr, o->port, handle, srv, err, errlen);
	if (!srv->httpd) {
		pthread_mutex_destroy(&srv->render_lock);
		goto fail;
	}
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
	return xrl_httpd_port(srv->httpd);
}

void xrl_metrics_stop(struct xrl_metrics *srv)
{
	if (!srv)
		return;
	xrl_httpd_stop(srv->httpd);   /* waits for the connection threads */
	pthread_mutex_destroy(&srv->render_lock);
	free(srv->addr);
	free(srv->instance);
	free(srv->pin_dir);
	free(srv);
}
