/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What every xrl command shares: global options, errors, the instance's pins. */
#ifndef XRL_CLI_H
#define XRL_CLI_H

#include <stdbool.h>
#include <jansson.h>
#include "xrl_format.h"
#include "xrl_instance.h"
#include "xrl_maps.h"
#include "xrl_opts.h"

#define XRL_EXIT_FAIL  1   /* failure at run time */
#define XRL_EXIT_USAGE 2   /* the command line or input was wrong */

struct xrl_ctx {
	const char *instance;
	char pin_dir[256];
	bool json;
	bool pretty;
	bool all_instances;   /* no --instance given: status reports every instance */
	struct xrl_instance inst;   /* the lock xrl_instance_begin holds (see xrl_ctx_instance) */
	const struct xrl_cmd_table *commands;   /* xrl's commands, for xrl_usage_error */
};

/* xrl_ctx.c: */
/* Report an error (one line, or {"error": ...} with --json); returns code. */
int xrl_error(struct xrl_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Print a JSON value to stdout (compact, or indented with --pretty) and free it. */
void xrl_json_print(struct xrl_ctx *ctx, json_t *v);

/* The instance the command works on (its name and pin directory as ctx has them now). */
struct xrl_instance *xrl_ctx_instance(struct xrl_ctx *ctx);
/*
 * Lock the instance (exclusive for writers, shared for readers, so that a
 * reader never sees half a rule change) and open its maps; on failure the
 * reason is reported and the exit code returned. xrl_instance_end undoes it.
 */
int xrl_instance_begin(struct xrl_ctx *ctx, struct xrl_maps *m, bool write);
void xrl_instance_end(struct xrl_ctx *ctx, struct xrl_maps *m);

int xrl_cmd_attach(struct xrl_ctx *ctx, int argc, char **argv);
int xrl_cmd_detach(struct xrl_ctx *ctx, int argc, char **argv);
int xrl_cmd_status(struct xrl_ctx *ctx, int argc, char **argv);
int xrl_cmd_rule(struct xrl_ctx *ctx, int argc, char **argv);
/* rule add | del | list | load | save (xrl_cmd_rule.c): the top-level usage shows them */
extern const struct xrl_cmd_table xrl_rule_cmds;
int xrl_cmd_stats(struct xrl_ctx *ctx, int argc, char **argv);
int xrl_cmd_top(struct xrl_ctx *ctx, int argc, char **argv);
int xrl_cmd_daemon(struct xrl_ctx *ctx, int argc, char **argv);
/* http (xrl_cmd_http.c): the request layer's service, user/http/ */
int xrl_cmd_http(struct xrl_ctx *ctx, int argc, char **argv);
extern const struct xrl_opt_table xrl_http_opts;
/* block list | del (xrl_cmd_block.c): --block's penalty box */
int xrl_cmd_block(struct xrl_ctx *ctx, int argc, char **argv);
extern const struct xrl_cmd_table xrl_block_cmds;
/* 1 and the time left of key's block (its rule d) when it is blocked at now (CLOCK_MONOTONIC), else 0. */
int xrl_block_left(const struct xrl_maps *m, const struct xrl_bucket_key *key,
		   const struct xrl_rule_def *d, __u64 now, __u64 *left_ns);
/* the options of attach, stats, top and daemon (the top-level usage shows them) */
extern const struct xrl_opt_table xrl_attach_opts, xrl_stats_opts, xrl_top_opts, xrl_daemon_opts;
/* xrl_help.c: a command's help from its row (t: the table it is a row of), and
 * `xrl help options`: every command's options (global: the global options, or NULL). */
void xrl_help_command(FILE *f, const struct xrl_cmd_table *t, const struct xrl_cmd *c);
void xrl_help_options(FILE *f, const struct xrl_cmd_table *t, const struct xrl_opt_table *global);
/* Report "usage: xrl CMD ..." from ctx->commands; returns XRL_EXIT_USAGE. */
int xrl_usage_error(struct xrl_ctx *ctx, const char *cmd);

#endif /* XRL_CLI_H */
