// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Builders and decoders of the Lua scripts' calls (layout: xrl_script_args.h). */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "xrl_script_args.h"

void xrl_gcra_build(struct xrl_redis_call *c, const char **argv,
		    const char *const fixed[XRL_GCRA_FIXED], const struct xrl_gcra_source *src,
		    int n, char nd_text[16])
{
	int nd = 0, j, head, per_src, per_dem;

	for (j = 0; j < n; j++)
		nd += src[j].demand_key != NULL;
	head = n + nd;
	per_src = head + XRL_GCRA_FIXED;
	per_dem = per_src + n * XRL_GCRA_PER_SOURCE;
	for (j = 0; j < XRL_GCRA_FIXED; j++)
		argv[head + j] = fixed[j];
	snprintf(nd_text, 16, "%d", nd);
	argv[head + XRL_GCRA_ND] = nd_text;
	for (j = 0, nd = 0; j < n; j++) {
		argv[j] = src[j].key;
		argv[per_src + j] = src[j].n;
		if (!src[j].demand_key)
			continue;
		argv[n + nd] = src[j].demand_key;
		argv[per_dem + XRL_GCRA_PER_DEMAND * nd] = src[j].demand;
		argv[per_dem + XRL_GCRA_PER_DEMAND * nd + 1] = src[j].demand_us;
		nd++;
	}
	c->script = XRL_SCRIPT_GCRA;
	c->nkeys = head;
	c->argc = xrl_gcra_argc(n, nd);
	c->argv = argv;
}

/* Per source the debt, in take mode then per source the grant, then two per demand key. */
int xrl_gcra_decode(const struct redisReply *rep, const struct xrl_gcra_source *src, int n,
		    bool take, struct xrl_gcra_answer *out)
{
	size_t at = take ? 2 * (size_t)n : (size_t)n;
	int j;

	for (j = 0; j < n; j++)
		out[j].debt_us = out[j].granted = out[j].share_ppm = out[j].live = NAN;
	for (j = 0; j < n; j++) {
		double debt, granted, share, live;

		if (xrl_redis_reply_num(rep, j, &debt))
			return -1;
		out[j].debt_us = debt;
		if (take) {
			if (xrl_redis_reply_num(rep, n + j, &granted))
				return -1;
			out[j].granted = granted;
		}
		if (!src[j].demand_key)
			continue;
		if (xrl_redis_reply_num(rep, at++, &share) || xrl_redis_reply_num(rep, at++, &live))
			return -1;
		out[j].share_ppm = share;
		out[j].live = live;
	}
	return 0;
}

void xrl_window_build(struct xrl_redis_call *c, const char **argv, const char *win_us,
		      const char *const *keys, const char *const *n_text, int n)
{
	int j;

	for (j = 0; j < n; j++) {
		argv[j] = keys[j];
		argv[n + XRL_WINDOW_FIXED + j] = n_text[j];
	}
	argv[n + XRL_WINDOW_WIN_US] = win_us;
	c->script = XRL_SCRIPT_WINDOW;
	c->nkeys = n;
	c->argc = xrl_window_argc(n);
	c->argv = argv;
}

int xrl_window_decode(const struct redisReply *rep, int n, struct xrl_window_answer *out)
{
	double idx, pos;
	int j;

	for (j = 0; j < n; j++)
		out[j].idx = out[j].pos_us = out[j].cur = out[j].prev = NAN;
	if (xrl_redis_reply_num(rep, 0, &idx) || xrl_redis_reply_num(rep, 1, &pos))
		return -1;
	for (j = 0; j < n; j++) {
		double cur, prev;

		if (xrl_redis_reply_num(rep, 2 + 2 * (size_t)j, &cur) ||
		    xrl_redis_reply_num(rep, 3 + 2 * (size_t)j, &prev))
			return -1;
		out[j].idx = idx;
		out[j].pos_us = pos;
		out[j].cur = cur;
		out[j].prev = prev;
	}
	return 0;
}

void xrl_slog_build(struct xrl_redis_call *c, const char **argv,
		    const char *const fixed[XRL_SLOG_FIXED], const char *const *keys,
		    const char *const *n_text, int n)
{
	int j;

	for (j = 0; j < n; j++) {
		argv[j] = keys[j];
		argv[n + XRL_SLOG_FIXED + j] = n_text[j];
	}
	for (j = 0; j < XRL_SLOG_FIXED; j++)
		argv[n + j] = fixed[j];
	c->script = XRL_SCRIPT_LOG;
	c->nkeys = n;
	c->argc = xrl_slog_argc(n);
	c->argv = argv;
}

int xrl_slog_decode(const struct redisReply *rep, int n, struct xrl_slog_answer *out)
{
	double idx;
	int j;

	for (j = 0; j < n; j++)
		out[j].idx = out[j].others = out[j].leave_us = out[j].after = NAN;
	if (xrl_redis_reply_num(rep, 0, &idx))
		return -1;
	for (j = 0; j < n; j++) {
		double o, l, a;

		if (xrl_redis_reply_num(rep, 1 + 3 * (size_t)j, &o) ||
		    xrl_redis_reply_num(rep, 2 + 3 * (size_t)j, &l) ||
		    xrl_redis_reply_num(rep, 3 + 3 * (size_t)j, &a))
			return -1;
		out[j].idx = idx;
		out[j].others = o;
		out[j].leave_us = l;
		out[j].after = a;
	}
	return 0;
}

void xrl_hosts_build(struct xrl_redis_call *c, const char **argv, const char *key,
		     const char *const fixed[XRL_HOSTS_FIXED])
{
	argv[0] = key;
	memcpy(&argv[1], fixed, XRL_HOSTS_FIXED * sizeof(*argv));
	c->script = XRL_SCRIPT_HOSTS;
	c->nkeys = 1;
	c->argc = XRL_HOSTS_ARGC;
	c->argv = argv;
}

int xrl_hosts_decode(const struct redisReply *rep, double *live, double *rate_sum)
{
	return xrl_redis_reply_num(rep, 0, live) || xrl_redis_reply_num(rep, 1, rate_sum) ? -1 : 0;
}

void xrl_take_build(struct xrl_redis_call *c, const char **argv, const char *key,
		    const char *const fixed[XRL_TAKE_FIXED])
{
	argv[0] = key;
	memcpy(&argv[1], fixed, XRL_TAKE_FIXED * sizeof(*argv));
	c->script = XRL_SCRIPT_TAKE;
	c->nkeys = 1;
	c->argc = XRL_TAKE_ARGC;
	c->argv = argv;
}

int xrl_take_decode(const struct redisReply *rep, struct xrl_take_answer *out)
{
	return xrl_redis_reply_num(rep, 0, &out->admitted) ||
	       xrl_redis_reply_num(rep, 1, &out->left) ||
	       xrl_redis_reply_num(rep, 2, &out->reset_us) ||
	       xrl_redis_reply_num(rep, 3, &out->retry_us) ? -1 : 0;
}

static int add_key(struct xrl_script_key *out, int n, int max, const char *type, const char *fmt,
		   const char *key, unsigned long long idx)
{
	if (n >= max)
		return n;
	snprintf(out[n].name, sizeof(out[n].name), fmt, key, idx);
	out[n].type = type;
	return n + 1;
}

int xrl_script_keys(const struct xrl_redis_call *c, unsigned long long now_us,
		    struct xrl_script_key *out, int max)
{
	unsigned long long win, idx;
	int n = 0, j, nd;

	switch (c->script) {
	case XRL_SCRIPT_GCRA:   /* TATs, then demand hashes (gcra.lua) */
		nd = atoi(c->argv[c->nkeys + XRL_GCRA_ND]);
		for (j = 0; j < c->nkeys; j++)
			n = add_key(out, n, max, j < c->nkeys - nd ? "string" : "hash", "%s", c->argv[j], 0);
		break;
	case XRL_SCRIPT_HOSTS:   /* the rule's hosts hash (hosts.lua) */
		n = add_key(out, n, max, "hash", "%s", c->argv[0], 0);
		break;
	case XRL_SCRIPT_WINDOW:   /* BASE:w:IDX counters (window.lua), this window and its neighbours */
		win = strtoull(c->argv[c->nkeys + XRL_WINDOW_WIN_US], NULL, 10);
		idx = win ? now_us / win : 0;
		for (j = 0; j < c->nkeys; j++) {
			n = add_key(out, n, max, "string", "%s:w:%llu", c->argv[j], idx - 1);
			n = add_key(out, n, max, "string", "%s:w:%llu", c->argv[j], idx);
			n = add_key(out, n, max, "string", "%s:w:%llu", c->argv[j], idx + 1);
		}
		break;
	case XRL_SCRIPT_LOG:   /* BASE:l sorted sets (log.lua) */
		for (j = 0; j < c->nkeys; j++)
			n = add_key(out, n, max, "zset", "%s:l", c->argv[j], 0);
		break;
	case XRL_SCRIPT_TAKE:   /* a window's counters or a log's set (take.lua) */
		if (c->argv[1 + XRL_TAKE_MODE][0] == 'l') {
			n = add_key(out, n, max, "zset", "%s:l", c->argv[0], 0);
			break;
		}
		win = strtoull(c->argv[1 + XRL_TAKE_WIN_US], NULL, 10);
		idx = win ? now_us / win : 0;
		n = add_key(out, n, max, "string", "%s:w:%llu", c->argv[0], idx - 1);
		n = add_key(out, n, max, "string", "%s:w:%llu", c->argv[0], idx);
		break;
	default:
		break;
	}
	return n;
}
