// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Redis Cluster routing without a connection (xrl_cluster.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>

#include "xrl_cluster.h"

static int fail(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s", what);
	return -1;
}

uint16_t xrl_cluster_crc16(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint16_t crc = 0;
	size_t i;
	int b;

	for (i = 0; i < len; i++) {
		crc ^= (uint16_t)(p[i] << 8);
		for (b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned xrl_cluster_keyslot(const char *key, size_t len)
{
	size_t s, e;

	for (s = 0; s < len && key[s] != '{'; s++)
		;
	if (s < len) {
		for (e = s + 1; e < len && key[e] != '}'; e++)
			;
		/* a tag is the text between the first '{' and the next '}', if there is any */
		if (e < len && e > s + 1)
			return xrl_cluster_crc16(key + s + 1, e - s - 1) & (XRL_CLUSTER_SLOTS - 1);
	}
	return xrl_cluster_crc16(key, len) & (XRL_CLUSTER_SLOTS - 1);
}

void xrl_cluster_map_init(struct xrl_cluster_map *m)
{
	int i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < XRL_CLUSTER_SLOTS; i++)
		m->slot[i] = -1;
}

int xrl_cluster_map_node(struct xrl_cluster_map *m, const char *host, int port)
{
	int i;

	for (i = 0; i < m->nnodes; i++)
		if (m->node[i].port == port && !strcmp(m->node[i].host, host))
			return i;
	if (m->nnodes == XRL_CLUSTER_NODES || strlen(host) >= sizeof(m->node[0].host))
		return -1;
	snprintf(m->node[m->nnodes].host, sizeof(m->node[0].host), "%s", host);
	m->node[m->nnodes].port = port;
	return m->nnodes++;
}

/* A new map is built in a copy of the slots, so a bad reply changes nothing. */
struct building {
	int16_t slot[XRL_CLUSTER_SLOTS];
	bool master[XRL_CLUSTER_NODES];
};

static void building_init(struct building *b)
{
	int i;

	for (i = 0; i < XRL_CLUSTER_SLOTS; i++)
		b->slot[i] = -1;
	memset(b->master, 0, sizeof(b->master));
}

static void building_done(struct xrl_cluster_map *m, const struct building *b)
{
	memcpy(m->slot, b->slot, sizeof(m->slot));
	memcpy(m->master, b->master, sizeof(m->master));
}

static int add_range(struct xrl_cluster_map *m, struct building *b, long long from, long long to,
		     const char *host, const char *asked, long long port, char *err, size_t errlen)
{
	long long s;
	int n;

	if (from < 0 || to >= XRL_CLUSTER_SLOTS || from > to)
		return fail(err, errlen, "slot range out of 0-16383");
	if (port < 1 || port > 65535)
		return fail(err, errlen, "a master's port out of 1-65535");
	/* an empty or unknown address ("?") is that of the node asked */
	if (!host[0] || !strcmp(host, "?"))
		host = asked;
	n = xrl_cluster_map_node(m, host, (int)port);
	if (n < 0)
		return fail(err, errlen, "more masters than xrl follows (64)");
	b->master[n] = true;
	for (s = from; s <= to; s++)
		b->slot[s] = (int16_t)n;
	return 0;
}

/* CLUSTER SLOTS: [[from, to, [host, port, id, ...], replicas...], ...] */
int xrl_cluster_map_slots(struct xrl_cluster_map *m, const redisReply *rep, const char *asked,
			  char *err, size_t errlen)
{
	static struct building b;
	size_t i;

	if (!rep || rep->type != REDIS_REPLY_ARRAY)
		return fail(err, errlen, rep && rep->type == REDIS_REPLY_ERROR ? rep->str :
			    "CLUSTER SLOTS: not an array");
	building_init(&b);
	for (i = 0; i < rep->elements; i++) {
		const redisReply *r = rep->element[i], *mas;

		if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
		    r->element[0]->type != REDIS_REPLY_INTEGER ||
		    r->element[1]->type != REDIS_REPLY_INTEGER)
			return fail(err, errlen, "CLUSTER SLOTS: a range is not [from, to, master, ...]");
		mas = r->element[2];
		if (mas->type != REDIS_REPLY_ARRAY || mas->elements < 2 ||
		    mas->element[0]->type != REDIS_REPLY_STRING ||
		    mas->element[1]->type != REDIS_REPLY_INTEGER)
			return fail(err, errlen, "CLUSTER SLOTS: a master is not [host, port, ...]");
		if (add_range(m, &b, r->element[0]->integer, r->element[1]->integer,
			      mas->element[0]->str, asked, mas->element[1]->integer, err, errlen))
			return -1;
	}
	building_done(m, &b);
	return 0;
}

/* The value of field name in a flat [name, value, ...] array, or NULL. */
static const redisReply *field(const redisReply *r, const char *name)
{
	size_t i;

	if (r->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (i = 0; i + 1 < r->elements; i += 2)
		if (r->element[i]->type == REDIS_REPLY_STRING && !strcmp(r->element[i]->str, name))
			return r->element[i + 1];
	return NULL;
}

static const char *field_str(const redisReply *r, const char *name)
{
	const redisReply *v = field(r, name);

	return v && v->type == REDIS_REPLY_STRING ? v->str : NULL;
}

/*
 * CLUSTER SHARDS: per shard {slots: [from, to, ...], nodes: [{id, port,
 * ip, endpoint, role, health, ...}, ...]}; the shard's master is the node
 * of role "master" (a failed one is in the shard until forgotten, its
 * health "fail": a shard whose master is not online is left unmapped).
 */
int xrl_cluster_map_shards(struct xrl_cluster_map *m, const redisReply *rep, const char *asked,
			   char *err, size_t errlen)
{
	static struct building b;
	size_t i, j;

	if (!rep || rep->type != REDIS_REPLY_ARRAY)
		return fail(err, errlen, rep && rep->type == REDIS_REPLY_ERROR ? rep->str :
			    "CLUSTER SHARDS: not an array");
	building_init(&b);
	for (i = 0; i < rep->elements; i++) {
		const redisReply *sh = rep->element[i], *slots = field(sh, "slots"),
				 *nodes = field(sh, "nodes"), *mas = NULL, *port;
		const char *host, *health;

		if (!slots || !nodes || slots->type != REDIS_REPLY_ARRAY ||
		    nodes->type != REDIS_REPLY_ARRAY || slots->elements % 2)
			return fail(err, errlen, "CLUSTER SHARDS: a shard without slots and nodes");
		for (j = 0; j < nodes->elements; j++) {
			const char *role = field_str(nodes->element[j], "role");

			health = field_str(nodes->element[j], "health");
			if (role && !strcmp(role, "master") && (!health || !strcmp(health, "online")))
				mas = nodes->element[j];
		}
		if (!slots->elements)
			continue;
		if (!mas)
			continue;   /* no master online: its slots unmapped until one is */
		port = field(mas, "port");
		host = field_str(mas, "endpoint");
		if (!host || !strcmp(host, "?"))
			host = field_str(mas, "ip");
		if (!port || port->type != REDIS_REPLY_INTEGER || !host)
			return fail(err, errlen, "CLUSTER SHARDS: a master without endpoint and port");
		for (j = 0; j < slots->elements; j += 2) {
			if (slots->element[j]->type != REDIS_REPLY_INTEGER ||
			    slots->element[j + 1]->type != REDIS_REPLY_INTEGER)
				return fail(err, errlen, "CLUSTER SHARDS: slots are not numbers");
			if (add_range(m, &b, slots->element[j]->integer, slots->element[j + 1]->integer,
				      host, asked, port->integer, err, errlen))
				return -1;
		}
	}
	building_done(m, &b);
	return 0;
}

int xrl_cluster_map_covered(const struct xrl_cluster_map *m, int *masters)
{
	int i, n = 0;

	for (i = 0; i < XRL_CLUSTER_SLOTS; i++)
		n += m->slot[i] >= 0;
	if (masters) {
		*masters = 0;
		for (i = 0; i < m->nnodes; i++)
			*masters += m->master[i];
	}
	return n;
}

int xrl_cluster_redirect(const char *text, unsigned *slot, struct xrl_cluster_addr *to)
{
	const char *p, *colon;
	char *end;
	unsigned long s;
	long port;
	int kind;
	size_t n;

	if (!strncmp(text, "MOVED ", 6))
		kind = 1, p = text + 6;
	else if (!strncmp(text, "ASK ", 4))
		kind = 2, p = text + 4;
	else
		return 0;
	s = strtoul(p, &end, 10);
	if (end == p || *end != ' ' || s >= XRL_CLUSTER_SLOTS)
		return 0;
	p = end + 1;
	colon = strrchr(p, ':');
	if (!colon || colon == p)
		return 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535)
		return 0;
	n = (size_t)(colon - p);
	if (*p == '[' && colon[-1] == ']')   /* [v6]:port */
		p++, n -= 2;
	if (!n || n >= sizeof(to->host))
		return 0;
	memcpy(to->host, p, n);
	to->host[n] = 0;
	to->port = (int)port;
	*slot = (unsigned)s;
	return kind;
}

const char *xrl_cluster_shard_tag(unsigned n)
{
	static char tags[XRL_CLUSTER_SHARDS][24];
	static bool made;
	unsigned i, k, lo, width = XRL_CLUSTER_SLOTS / XRL_CLUSTER_SHARDS;

	if (!made) {
		for (i = 0; i < XRL_CLUSTER_SHARDS; i++) {
			lo = i * width;
			for (k = 0;; k++) {
				int len = snprintf(tags[i], sizeof(tags[i]), "s%u.%u", i, k);
				unsigned s = xrl_cluster_crc16(tags[i], (size_t)len) &
					     (XRL_CLUSTER_SLOTS - 1);

				if (s >= lo && s < lo + width)
					break;
			}
		}
		made = true;
	}
	return tags[n % XRL_CLUSTER_SHARDS];
}
