// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xrl http: the request layer's decision service (user/http/), run in the
 * foreground with the command's own words.
 */
#include "xrl_cli.h"
#include "xrl_http.h"

int xrl_cmd_http(struct xrl_ctx *ctx, int argc, char **argv)
{
	return xrl_http_main(ctx->instance, argc, argv);
}
