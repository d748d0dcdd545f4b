// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Trusted proxies and X-Forwarded-For (xrl_http_client.h). Each proxy on
 * the way appends the address it was connected from, so the list's right
 * end is the most trusted: walking it from the right, past our own
 * proxies, the first address that is not one of them is the client as far
 * as anyone trustworthy saw it; whatever stands left of it the client may
 * have written itself.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_http_client.h"

int xrl_http_addr_parse(const char *s, size_t len, struct xrl_http_addr *out)
{
	char buf[INET6_ADDRSTRLEN + 1];

	while (len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, buf, out->a + 12) == 1) {
		out->a[10] = out->a[11] = 0xff;
		out->v4 = 1;
		return 0;
	}
	if (inet_pton(AF_INET6, buf, out->a) != 1)
		return -1;
	static const __u8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	out->v4 = !memcmp(out->a, mapped, 12);
	return 0;
}

void xrl_http_addr_format(const struct xrl_http_addr *a, char *buf, size_t len)
{
	if (a->v4)
		inet_ntop(AF_INET, a->a + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, a->a, buf, (socklen_t)len);
}

static int in_net(const struct xrl_http_addr *a, const struct xrl_http_addr *net, int plen)
{
	int full = plen / 8, rest = plen % 8;

	if (memcmp(a->a, net->a, (size_t)full))
		return 0;
	return !rest || !((a->a[full] ^ net->a[full]) & (0xff << (8 - rest)));
}

int xrl_http_proxy_add(struct xrl_http_proxies *p, const char *cidr, char *err, size_t errlen)
{
	const char *slash = strchr(cidr, '/');
	struct xrl_http_addr a;
	int plen, i;
	char *end;

	if (p->n == XRL_HTTP_MAX_PROXIES) {
		snprintf(err, errlen, "--trusted-proxy: at most %d ranges", XRL_HTTP_MAX_PROXIES);
		return -1;
	}
	if (xrl_http_addr_parse(cidr, slash ? (size_t)(slash - cidr) : strlen(cidr), &a))
		goto bad;
	plen = a.v4 ? 32 : 128;
	if (slash) {
		long v = strtol(slash + 1, &end, 10);

		if (!slash[1] || *end || v < 0 || v > plen)
			goto bad;
		plen = (int)v;
	}
	if (a.v4)
		plen += 96;
	for (i = plen; i < 128; i++)
		if (a.a[i / 8] & (0x80 >> (i % 8)))
			goto bad;   /* host bits set: say the network */
	p->net[p->n] = a;
	p->plen[p->n++] = plen;
	return 0;
bad:
	snprintf(err, errlen, "--trusted-proxy '%s': not a CIDR range (10.0.0.0/8, fd00::/8, "
		 "127.0.0.1; no host bits past the prefix)", cidr);
	return -1;
}

int xrl_http_proxy_trusted(const struct xrl_http_proxies *p, const struct xrl_http_addr *a)
{
	int i;

	for (i = 0; i < p->n; i++)
		if (in_net(a, &p->net[i], p->plen[i]))
			return 1;
	return 0;
}

int xrl_http_client(const struct xrl_http_proxies *p, const struct xrl_http_addr *peer,
		    const char *xff, const char *real, struct xrl_http_addr *client)
{
	struct xrl_http_addr a;
	const char *end;

	*client = *peer;
	if (!xrl_http_proxy_trusted(p, peer))
		return 0;
	if (xff && *xff) {
		end = xff + strlen(xff);
		for (;;) {
			const char *start = end;

			while (start > xff && start[-1] != ',')
				start--;
			if (xrl_http_addr_parse(start, (size_t)(end - start), &a))
				return -1;
			*client = a;
			if (!xrl_http_proxy_trusted(p, &a) || start == xff)
				return 0;
			end = start - 1;
		}
	}
	if (real && *real) {
		if (xrl_http_addr_parse(real, strlen(real), &a))
			return -1;
		*client = a;
	}
	return 0;
}

int xrl_http_query_arg(const char *uri, const char *name, char *buf, size_t len)
{
	const char *q = strchr(uri, '?'), *p;
	size_t nl = strlen(name);

	if (!q)
		return 0;
	for (p = q + 1; *p;) {
		const char *amp = strchr(p, '&'), *e = amp ? amp : p + strlen(p);

		if ((size_t)(e - p) > nl && !strncmp(p, name, nl) && p[nl] == '=') {
			size_t vl = (size_t)(e - p) - nl - 1;

			if (vl >= len)
				vl = len - 1;
			memcpy(buf, p + nl + 1, vl);
			buf[vl] = 0;
			return 1;
		}
		if (!amp)
			break;
		p = amp + 1;
	}
	return 0;
}
