// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What every command calls back: errors, JSON output, the instance's lock
 * and pins, usage errors. Apart from xrl.c, which dispatches to the
 * commands, so calls go one way: xrl.c to the commands to this file.
 */
#include <stdarg.h>
#include <stdio.h>

#include "xrl_cli.h"

int xrl_error(struct xrl_ctx *ctx, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ctx->json) {
		/* a name with bytes that are not UTF-8 is shown with \xNN escapes */
		json_t *o = json_object();

		json_object_set_new(o, "error", xrl_json_text(msg));
		xrl_json_print(ctx, o);
	} else {
		fprintf(stderr, "xrl: %s\n", msg);
	}
	return code;
}

void xrl_json_print(struct xrl_ctx *ctx, json_t *v)
{
	/* NULL: a value could not be built; still print one JSON value */
	if (!v)
		v = json_pack("{s:s}", "error", "internal error: the result could not be encoded as JSON");
	json_dumpf(v, stdout, ctx->pretty ? JSON_INDENT(2) : JSON_COMPACT);
	fputc('\n', stdout);
	json_decref(v);
}

struct xrl_instance *xrl_ctx_instance(struct xrl_ctx *ctx)
{
	ctx->inst.name = ctx->instance;
	ctx->inst.pin_dir = ctx->pin_dir;
	return &ctx->inst;
}

int xrl_instance_begin(struct xrl_ctx *ctx, struct xrl_maps *m, bool write)
{
	char err[XRL_INSTANCE_ERRLEN];

	if (xrl_instance_open(xrl_ctx_instance(ctx), write ? XRL_LOCK_EXCLUSIVE : XRL_LOCK_SHARED,
			      XRL_WAIT_FOREVER, 0, m, err, sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", err);
	return 0;
}

void xrl_instance_end(struct xrl_ctx *ctx, struct xrl_maps *m)
{
	xrl_instance_close(&ctx->inst, m);
}

int xrl_usage_error(struct xrl_ctx *ctx, const char *cmd)
{
	const struct xrl_cmd *c = ctx->commands ? xrl_cmd_find(ctx->commands, cmd) : NULL;
	char u[1024];

	if (!c)
		return xrl_error(ctx, XRL_EXIT_USAGE, "usage: see xrl --help");
	xrl_cmd_usage_line(ctx->commands, c, u, sizeof(u));
	return xrl_error(ctx, XRL_EXIT_USAGE, "usage: %s", u);
}
