// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* xrl: command line of the XDP rate limiter. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "xrl_cli.h"

static const char usage_text[] =
	"usage: xrl [--instance NAME] [-j|--json] [-p|--pretty] COMMAND ...\n"
	"  attach IFACE [--mode auto|native|generic] [--max-sources N] [--malformed pass|drop]\n"
	"  detach IFACE\n"
	"  status\n"
	"  rule add PREFIX --rate RATE [--burst N] [--bytes RATE [--bytes-burst SIZE]]\n"
	"                  [--per LEN] [--proto tcp|udp|icmp|icmpv6] [--dport PORT] [--syn]\n"
	"                  [--global]\n"
	"  rule add PREFIX --allow | --deny [--proto P] [--dport PORT] [--syn]\n"
	"  rule del PREFIX [--proto P] [--dport PORT] [--syn]\n"
	"  rule list\n"
	"  rule load FILE\n"
	"  rule save\n"
	"  stats [--watch [--interval SEC]]\n"
	"  top [-n N] [--watch [--interval SEC]]\n"
	"  daemon [--redis URL] [--host-id ID] [--sync-interval MS]\n"
	"         [--on-redis-failure local|open|closed] [--rules FILE] [--log-format text|json]\n"
	"         [--metrics [ADDR:PORT]] [--metrics-top K] [--quiet-after SEC]\n"
	"See xrl(8).\n";

int xrl_error(struct xrl_ctx *ctx, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ctx->json) {
		json_t *o = json_pack("{s:s}", "error", msg);

		xrl_json_print(ctx, o);
	} else {
		fprintf(stderr, "xrl: %s\n", msg);
	}
	return code;
}

void xrl_json_print(struct xrl_ctx *ctx, json_t *v)
{
	json_dumpf(v, stdout, ctx->pretty ? JSON_INDENT(2) : JSON_COMPACT);
	fputc('\n', stdout);
	json_decref(v);
}

int xrl_bpffs_ensure(void)
{
	struct statfs st;

	if (statfs("/sys/fs/bpf", &st) == 0 && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		return -errno;
	return 0;
}

/*
 * Lock the pin directory. The holder of the lock may remove the directory
 * (detach of the last interface): a lock taken on a directory that is no
 * longer at the path locks nothing, so check after locking and, when
 * creating, start again on the new directory.
 */
static int lock_dir(struct xrl_ctx *ctx, bool create, int how)
{
	int tries, err;

	for (tries = 0; tries < 10; tries++) {
		struct stat held, now;

		if (create) {
			if (mkdir(XRL_PIN_ROOT, 0700) && errno != EEXIST)
				return -errno;
			if (mkdir(ctx->pin_dir, 0700) && errno != EEXIST)
				return -errno;
		}
		ctx->lock_fd = open(ctx->pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (ctx->lock_fd < 0)
			return -errno;
		if (flock(ctx->lock_fd, how)) {
			err = -errno;
			close(ctx->lock_fd);
			ctx->lock_fd = -1;
			return err;
		}
		if (fstat(ctx->lock_fd, &held) == 0 && stat(ctx->pin_dir, &now) == 0 &&
		    held.st_ino == now.st_ino && held.st_dev == now.st_dev)
			return 0;
		close(ctx->lock_fd);
		ctx->lock_fd = -1;
		if (!create)
			return -ENOENT;   /* removed while we waited: the instance is gone */
	}
	return -EAGAIN;
}

int xrl_lock(struct xrl_ctx *ctx, bool create)
{
	return lock_dir(ctx, create, LOCK_EX);
}

int xrl_lock_shared(struct xrl_ctx *ctx)
{
	return lock_dir(ctx, false, LOCK_SH);
}

void xrl_unlock(struct xrl_ctx *ctx)
{
	if (ctx->lock_fd >= 0)
		close(ctx->lock_fd);
	ctx->lock_fd = -1;
}

int xrl_iface_count(const struct xrl_maps *m)
{
	__u32 key, next;
	void *prev = NULL;
	int n = 0;

	while (bpf_map_get_next_key(m->ifaces, prev, &next) == 0) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}

int xrl_instance_open(struct xrl_ctx *ctx, struct xrl_maps *m)
{
	int err = xrl_maps_open_pinned(ctx->pin_dir, m);

	if (err == -ENOENT)
		return xrl_error(ctx, XRL_EXIT_FAIL,
				 "instance '%s' is not attached: run 'xrl%s%s attach IFACE' first",
				 ctx->instance, strcmp(ctx->instance, "default") ? " --instance " : "",
				 strcmp(ctx->instance, "default") ? ctx->instance : "");
	if (err == -EPERM || err == -EACCES)
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot open %s: permission denied (run as root)",
				 ctx->pin_dir);
	if (err)
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot open the maps of instance '%s' in %s: %s",
				 ctx->instance, ctx->pin_dir, strerror(-err));
	if (xrl_iface_count(m) == 0) {
		xrl_maps_close(m);
		return xrl_error(ctx, XRL_EXIT_FAIL,
				 "instance '%s' is not attached to any interface: run 'xrl%s%s attach IFACE' first",
				 ctx->instance, strcmp(ctx->instance, "default") ? " --instance " : "",
				 strcmp(ctx->instance, "default") ? ctx->instance : "");
	}
	return 0;
}

int xrl_instance_begin(struct xrl_ctx *ctx, struct xrl_maps *m, bool write)
{
	int err = write ? xrl_lock(ctx, false) : xrl_lock_shared(ctx), rc;

	if (err == -ENOENT)
		return xrl_instance_open(ctx, m);   /* reports "not attached" */
	if (err)
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot lock %s: %s%s", ctx->pin_dir,
				 strerror(-err), err == -EACCES || err == -EPERM ? " (run as root)" : "");
	rc = xrl_instance_open(ctx, m);
	if (rc)
		xrl_unlock(ctx);
	return rc;
}

void xrl_instance_end(struct xrl_ctx *ctx, struct xrl_maps *m)
{
	xrl_maps_close(m);
	xrl_unlock(ctx);
}

void xrl_instance_unpin(struct xrl_ctx *ctx)
{
	char path[512];
	int i;

	for (i = 0; xrl_map_names[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", ctx->pin_dir, xrl_map_names[i]);
		unlink(path);
	}
	rmdir(ctx->pin_dir);
	rmdir(XRL_PIN_ROOT);   /* only succeeds when no other instance is left */
}

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN && getenv("XRL_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	if (getenv("XRL_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

int xrl_valid_instance(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 64)
		return 0;
	for (i = 0; i < n; i++)
		if (!(s[i] == '-' || s[i] == '_' || (s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "instance", required_argument, 0, 'i' },
		{ "json", no_argument, 0, 'j' },
		{ "pretty", no_argument, 0, 'p' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct xrl_ctx ctx = { .instance = "default", .lock_fd = -1 };
	bool instance_given = false;
	const char *cmd;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+jph", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			ctx.instance = optarg;
			instance_given = true;
			break;
		case 'j':
			ctx.json = true;
			break;
		case 'p':
			ctx.json = true;
			ctx.pretty = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			if (optopt == 'i' && !strncmp(argv[optind - 1], "--", 2))
				return xrl_error(&ctx, XRL_EXIT_USAGE, "--instance needs a NAME");
			return xrl_error(&ctx, XRL_EXIT_USAGE, "unknown option '%s' (see xrl --help)",
					 argv[optind - 1]);
		}
	}
	if (!xrl_valid_instance(ctx.instance))
		return xrl_error(&ctx, XRL_EXIT_USAGE,
				 "invalid instance name '%s': use 1 to 64 letters, digits, '-' or '_'",
				 ctx.instance);
	snprintf(ctx.pin_dir, sizeof(ctx.pin_dir), "%s/%s", XRL_PIN_ROOT, ctx.instance);
	if (optind >= argc) {
		if (ctx.json)
			return xrl_error(&ctx, XRL_EXIT_USAGE, "missing COMMAND (see xrl --help)");
		fputs(usage_text, stderr);
		return XRL_EXIT_USAGE;
	}
	libbpf_set_print(silent_print);
	libxdp_set_print((libxdp_print_fn_t)silent_print);
	if (xrl_bpffs_ensure() && strcmp(argv[optind], "help"))
		return xrl_error(&ctx, XRL_EXIT_FAIL,
				 "bpffs is not mounted at /sys/fs/bpf and mounting it failed (run as root)");

	ctx.all_instances = !instance_given;
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	if (!strcmp(cmd, "attach"))
		return xrl_cmd_attach(&ctx, argc, argv);
	if (!strcmp(cmd, "detach"))
		return xrl_cmd_detach(&ctx, argc, argv);
	if (!strcmp(cmd, "status"))
		return xrl_cmd_status(&ctx, argc, argv);
	if (!strcmp(cmd, "rule"))
		return xrl_cmd_rule(&ctx, argc, argv);
	if (!strcmp(cmd, "stats"))
		return xrl_cmd_stats(&ctx, argc, argv);
	if (!strcmp(cmd, "top"))
		return xrl_cmd_top(&ctx, argc, argv);
	if (!strcmp(cmd, "daemon"))
		return xrl_cmd_daemon(&ctx, argc, argv);
	if (!strcmp(cmd, "help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	return xrl_error(&ctx, XRL_EXIT_USAGE,
			 "unknown command '%s': expected attach, detach, status, rule, stats, top or daemon", cmd);
}
