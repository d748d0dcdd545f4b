/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What every xrl command shares: global options, errors, the instance's pins. */
#ifndef XRL_CLI_H
#define XRL_CLI_H

#include <stdbool.h>
#include <jansson.h>
#include "xrl_maps.h"
#include "xrl_opts.h"

#define XRL_PIN_ROOT "/sys/fs/bpf/xrl"
#define XRL_EXIT_FAIL  1   /* failure at run time */
#define XRL_EXIT_USAGE 2   /* the command line or input was wrong */

struct xrl_ctx {
	const char *instance;
	char pin_dir[256];
	bool json;
	bool pretty;
	bool all_instances;   /* no --instance given: status reports every instance */
	int lock_fd;
};

/* Report an error (one line, or {"error": ...} with --json); returns code. */
int xrl_error(struct xrl_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Print a JSON value to stdout (compact, or indented with --pretty) and free it. */
void xrl_json_print(struct xrl_ctx *ctx, json_t *v);

/* Mount bpffs at /sys/fs/bpf when it is missing. 0 or -errno. */
int xrl_bpffs_ensure(void);
/* Take the instance's writer lock (creates the pin directory). 0 or -errno. */
int xrl_lock(struct xrl_ctx *ctx, bool create);
/* Readers of the rule set share the lock, so they never see half a change. */
int xrl_lock_shared(struct xrl_ctx *ctx);
void xrl_unlock(struct xrl_ctx *ctx);
/*
 * Why xrl_lock or xrl_lock_shared failed with err: a refused pin directory
 * (not root's, a symlink, writable by others), bpffs not visible in this
 * mount namespace, or errno's text.
 */
const char *xrl_lock_strerror(int err);
/*
 * The pin root is usable: bpffs visible here, XRL_PIN_ROOT a directory of
 * root's that no one else can write (create: made 0700 when missing).
 * 0, -ENOENT when missing, or a refusal (xrl_lock_strerror says why).
 */
int xrl_pin_root_ready(bool create);
/* Report a lock failure (xrl_lock_strerror, permission denied); returns the exit code. */
int xrl_lock_report(struct xrl_ctx *ctx, int err);
/*
 * Open an attached instance's maps; on failure reports why (not attached,
 * no permission, ...) and returns the exit code to use.
 */
int xrl_instance_open(struct xrl_ctx *ctx, struct xrl_maps *m);
/* Pins of an instance made by an xrl before rule definitions were kept per generation. */
#define XRL_OLD_PINS_MSG \
	"the instance was pinned by another build of xrl (its maps differ: %s): detach it everywhere and attach it again"
/*
 * Lock the instance (exclusive for writers, shared for readers, so that a
 * reader never sees half a rule change) and open its maps; on failure the
 * reason is reported and the exit code returned. xrl_instance_end undoes it.
 */
int xrl_instance_begin(struct xrl_ctx *ctx, struct xrl_maps *m, bool write);
void xrl_instance_end(struct xrl_ctx *ctx, struct xrl_maps *m);
/* Remove the instance's pins and directory. */
void xrl_instance_unpin(struct xrl_ctx *ctx);
/* Number of interfaces recorded in the instance, or -errno. */
int xrl_iface_count(const struct xrl_maps *m);

/* Human units: "1.2M", "340 MB", rates "100/s". */
void xrl_fmt_count(double v, char *buf, size_t len);
void xrl_fmt_bytes(double v, char *buf, size_t len);
void xrl_fmt_rate(const struct xrl_rule_def *d, char *buf, size_t len);
/* A bucket key as top shows it: the address, with /LEN when its rule's --per groups sources. */
const char *xrl_action_name(__u8 action);
/*
 * A bucket key's source as `top` and the exporter name it: the address, with
 * /LEN when the limit rule d aggregates by --per (d NULL: the rule is gone).
 */
void xrl_source_format(const struct xrl_bucket_key *k, const struct xrl_rule_def *d,
		       char *buf, size_t len);
const char *xrl_mode_name(__u8 mode);

int xrl_cmd_attach(struct xrl_ctx *ctx, int argc, char **argv);
int xrl_cmd_detach(struct xrl_ctx *ctx, int argc, char **argv);
int xrl_cmd_status(struct xrl_ctx *ctx, int argc, char **argv);
int xrl_cmd_rule(struct xrl_ctx *ctx, int argc, char **argv);
/* rule add | del | list | load | save (xrl_cmd_rule.c): the top-level usage shows them */
extern const struct xrl_cmd_table xrl_rule_cmds;
int xrl_cmd_stats(struct xrl_ctx *ctx, int argc, char **argv);
int xrl_cmd_top(struct xrl_ctx *ctx, int argc, char **argv);
int xrl_cmd_daemon(struct xrl_ctx *ctx, int argc, char **argv);
/* block list | del (xrl_cmd_block.c): --block's penalty box */
int xrl_cmd_block(struct xrl_ctx *ctx, int argc, char **argv);
extern const struct xrl_cmd_table xrl_block_cmds;
/* 1 and the time left of key's block (its rule d) when it is blocked at now (CLOCK_MONOTONIC), else 0. */
int xrl_block_left(const struct xrl_maps *m, const struct xrl_bucket_key *key,
		   const struct xrl_rule_def *d, __u64 now, __u64 *left_ns);
/* the options of attach, stats, top and daemon (the top-level usage shows them) */
extern const struct xrl_opt_table xrl_attach_opts, xrl_stats_opts, xrl_top_opts, xrl_daemon_opts;
/* Report "usage: xrl CMD ..." from the command table; returns XRL_EXIT_USAGE. */
int xrl_usage_error(struct xrl_ctx *ctx, const char *cmd);
/* 1 to 64 letters, digits, '-' or '_'. */
int xrl_valid_instance(const char *s);

#endif /* XRL_CLI_H */
