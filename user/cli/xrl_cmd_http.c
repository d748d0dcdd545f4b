// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xrl http: the request layer's decision service (user/http/), run in the
 * foreground. This file is its command line: the option table (usage, help,
 * completion) and the call into the service.
 */
#include <stdio.h>
#include <string.h>

#include "xrl_cli.h"
#include "xrl_http.h"
#include "xrl_rule.h"

struct http_cli {
	struct xrl_http_opts o;
	unsigned log_json;   /* index in "text|json" */
	char trusted[2048];  /* every --trusted-proxy, joined by commas */
};

#define HO(member) XRL_OPT_FIELD(struct http_cli, member)

/* --trusted-proxy CIDR[,CIDR...], repeatable: each one's list added to the others' */
static int opt_trusted(const struct xrl_opt *o, const char *arg, void *obj, char *err,
		       size_t errlen)
{
	char *list = (char *)obj + o->off;
	size_t len = strlen(list);

	if (len + 1 + strlen(arg) >= o->size) {
		snprintf(err, errlen, "--trusted-proxy: more than %zu characters of ranges in all",
			 o->size - 1);
		return -1;
	}
	snprintf(list + len, o->size - len, "%s%s", len ? "," : "", arg);
	return 0;
}

enum { HO_LISTEN, HO_RULES, HO_TRUSTED, HO_REDIS, HO_FAILURE, HO_REDIS_TIMEOUT, HO_MAX_KEYS,
       HO_LOG_FORMAT, HO_N };

static const struct xrl_opt http_opt_rows[HO_N] = {
	[HO_LISTEN] = { "listen", 0, "ADDR:PORT|unix:PATH", xrl_opt_str, HO(o.listen), .modes = 1,
			.help = "answer on ADDR:PORT or a unix socket (default "
				XRL_HTTP_DEFAULT_LISTEN ": loopback)" },
	[HO_RULES] = { "rules", 0, "FILE", xrl_opt_str, HO(o.rules), .modes = 1,
		       .help = "the request rules, one a line (required; SIGHUP reloads it)" },
	[HO_TRUSTED] = { "trusted-proxy", 0, "CIDR[,CIDR...]", opt_trusted, HO(trusted),
			 .modes = 1, .flags = XRL_OPT_REPEATABLE,
			 .help = "believe X-Forwarded-For and X-Real-IP from these peers only "
				 "(repeatable)" },
	[HO_REDIS] = { "redis", 0, "URL", xrl_opt_str, HO(o.redis), .modes = 1,
		       .help = "decide --global rules in Redis at URL, one call per request" },
	[HO_FAILURE] = { "on-redis-failure", 0, "local|open|closed", xrl_opt_enum, HO(o.failure),
			 .modes = 1, .what = "local|open|closed",
			 .help = "what --global rules do when Redis does not answer in time "
				 "(default local: this service's own memory)" },
	[HO_REDIS_TIMEOUT] = { "redis-timeout", 0, "MS", xrl_opt_uint, HO(o.redis_timeout_ms),
			       .modes = 1, .min = 1, .max = 1000, .what = "--redis-timeout (ms)",
			       .help = "a --global call's deadline (1 to 1000 ms, default 5)" },
	[HO_MAX_KEYS] = { "max-keys", 0, "N", xrl_opt_uint, HO(o.max_keys), .modes = 1,
			  .min = 8, .max = 1ull << 26, .what = "--max-keys",
			  .help = "keys kept per rule, the least recently seen evicted (default 65536)" },
	[HO_LOG_FORMAT] = { "log-format", 0, "text|json", xrl_opt_enum, HO(log_json), .modes = 1,
			    .what = "text|json", .help = "log lines as text (default) or JSON" },
};

_Static_assert(HO_N <= 64, "xrl_opt_seen has a bit per row: at most 64 rows");

const struct xrl_opt_table xrl_http_opts = {
	.name = "http", .opts = http_opt_rows, .n = HO_N, .nmodes = 1,
};

int xrl_cmd_http(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct http_cli c = { .o = { .log_format = "text" } };
	char err[XRL_ERRLEN];
	xrl_opt_seen seen = 0;
	int i = 1, rc;

	if (xrl_opts_parse(&xrl_http_opts, 0, argc, argv, &i, &c, &seen, err, sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s", err);
	if (i < argc)
		return xrl_error(ctx, XRL_EXIT_USAGE, "unexpected word '%s' (see xrl http --help)",
				 argv[i]);
	if (c.log_json)
		c.o.log_format = "json";
	if (c.trusted[0])
		c.o.trusted = c.trusted;
	c.o.instance = ctx->instance;
	c.o.pin_dir = ctx->pin_dir;
	rc = xrl_http_run(&c.o, err, sizeof(err));
	if (rc == 2)
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s", err);
	return rc;
}
