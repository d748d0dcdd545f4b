// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* xrl: command line of the XDP rate limiter. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include <bpf/libbpf_version.h>
#include <xdp/libxdp.h>

#include "xrl_cli.h"
#include "xrl_opts.h"
#include "xrl_rule.h"

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

/* Is /sys/fs/bpf a bpffs in this mount namespace? */
static bool bpffs_here(void)
{
	struct statfs st;

	return statfs("/sys/fs/bpf", &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/*
 * Another mount namespace than init's (pid 1's), as 'ip netns exec' makes:
 * it remounts /sys, which hides the host's bpffs and every pin in it. false
 * when it cannot be told (pid 1's namespace unreadable: a sandbox, not root).
 */
static bool foreign_mount_ns(void)
{
	struct stat self, init;

	return stat("/proc/self/ns/mnt", &self) == 0 && stat("/proc/1/ns/mnt", &init) == 0 &&
	       (self.st_ino != init.st_ino || self.st_dev != init.st_dev);
}

/* The /run/netns name of this network namespace (as 'ip netns exec NAME' enters it), or NULL. */
static const char *named_netns(char *name, size_t len)
{
	struct stat self, st;
	struct dirent *de;
	const char *found = NULL;
	char path[512];
	DIR *d;

	if (stat("/proc/self/ns/net", &self) || !(d = opendir("/run/netns")))
		return NULL;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/run/netns/%s", de->d_name);
		if (stat(path, &st) == 0 && st.st_ino == self.st_ino && st.st_dev == self.st_dev) {
			snprintf(name, len, "%s", de->d_name);
			found = name;
		}
	}
	closedir(d);
	return found;
}

/*
 * Mount bpffs when it is missing, except where the host's bpffs is only
 * hidden (another mount namespace than init's, or a named network namespace
 * entered with 'ip netns exec'): a bpffs mounted there would be a new, empty
 * one that goes with the namespace, so pins made in it would be lost. There
 * nothing is mounted and lock_dir says what to do.
 */
int xrl_bpffs_ensure(void)
{
	char ns[256];

	if (bpffs_here() || foreign_mount_ns() || named_netns(ns, sizeof(ns)))
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		return -errno;
	return 0;
}

/* Why the last lock_dir failed, when errno's text does not say it (xrl_lock_strerror). */
static char lock_why[512];

const char *xrl_lock_strerror(int err)
{
	return lock_why[0] ? lock_why : strerror(-err);
}

static int lock_refuse(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int lock_refuse(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(lock_why, sizeof(lock_why), fmt, ap);
	va_end(ap);
	return err;
}

/*
 * A directory xrl may use for pins: a directory (not a symlink), owned by
 * root and writable by no one else. bpffs is mounted 1777 (sticky), so
 * anyone can create XRL_PIN_ROOT before root does and, if it were theirs,
 * rename an instance's pins away; a root-owned directory in a sticky
 * directory cannot be renamed or removed by anyone else, and one root
 * alone can write holds only what root put there.
 */
static int dir_safe(const char *path, const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return lock_refuse(-EPERM, "refusing %s: it is a symlink; xrl follows nothing in bpffs (remove it and run again)", path);
	if (!S_ISDIR(st->st_mode))
		return lock_refuse(-EPERM, "refusing %s: it is not a directory (remove it and run again)", path);
	if (st->st_uid != 0)
		return lock_refuse(-EPERM,
				   "refusing %s: owned by uid %u, not root (bpffs is writable by every user, so anyone could have made it): check what it holds, remove it and run again",
				   path, (unsigned)st->st_uid);
	if (st->st_mode & 022)
		return lock_refuse(-EPERM,
				   "refusing %s: mode %04o lets other users rename what is in it: 'chmod 0700 %s' and run again",
				   path, (unsigned)(st->st_mode & 07777), path);
	return 0;
}

/* Check (create: make, 0700) one pin directory. 0, -ENOENT when missing, or a refusal. */
static int pin_dir_ready(const char *dir, bool create)
{
	struct stat st;

	if (lstat(dir, &st)) {
		if (errno == EACCES)
			return lock_refuse(-EACCES,
					   "permission denied: only root can use the pins in %s (run as root)",
					   XRL_PIN_ROOT);
		if (errno != ENOENT || !create)
			return -errno;
		if (mkdir(dir, 0700) && errno != EEXIST)
			return -errno;
		if (lstat(dir, &st))
			return -errno;
	}
	return dir_safe(dir, &st);
}

int xrl_pin_root_ready(bool create)
{
	char ns[256];

	lock_why[0] = 0;
	if (!bpffs_here())
		return lock_refuse(-EMEDIUMTYPE,
				   "bpffs pins are not visible in this mount namespace (/sys/fs/bpf is not a bpffs here; 'ip netns exec' remounts /sys and hides them): run xrl in the host's mount namespace, e.g. 'nsenter --net=/run/netns/%s xrl ...' instead of 'ip netns exec %s xrl ...', or, in a mount namespace that lasts (a container), mount a bpffs there first ('mount -t bpf bpf /sys/fs/bpf') for instances of its own (one mounted under 'ip netns exec' goes with the command)",
				   named_netns(ns, sizeof(ns)) ? ns : "NAME", named_netns(ns, sizeof(ns)) ? ns : "NAME");
	if (create && geteuid() != 0)
		return lock_refuse(-EACCES, "permission denied: attaching needs root (run as root)");
	return pin_dir_ready(XRL_PIN_ROOT, create);
}

/* The pin root, then the instance's directory. */
static int pin_dirs_ready(struct xrl_ctx *ctx, bool create)
{
	int err = xrl_pin_root_ready(create);

	return err ? err : pin_dir_ready(ctx->pin_dir, create);
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

		if ((err = pin_dirs_ready(ctx, create)))
			return err;
		ctx->lock_fd = open(ctx->pin_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ctx->lock_fd < 0)
			return -errno;
		if (flock(ctx->lock_fd, how)) {
			err = -errno;
			close(ctx->lock_fd);
			ctx->lock_fd = -1;
			return err;
		}
		if (fstat(ctx->lock_fd, &held) == 0 && lstat(ctx->pin_dir, &now) == 0 &&
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
	int err = xrl_pin_root_ready(false);
	char bad[64];

	if (err && err != -ENOENT && lock_why[0])
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", lock_why);   /* bpffs hidden, pin root refused */
	err = xrl_maps_open_pinned(ctx->pin_dir, m);

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
	if (xrl_maps_layout_check(m, bad, sizeof(bad)) == -EPROTO) {
		xrl_maps_close(m);
		return xrl_error(ctx, XRL_EXIT_FAIL, XRL_OLD_PINS_MSG, bad);
	}
	if (xrl_iface_count(m) == 0) {
		xrl_maps_close(m);
		return xrl_error(ctx, XRL_EXIT_FAIL,
				 "instance '%s' is not attached to any interface: run 'xrl%s%s attach IFACE' first",
				 ctx->instance, strcmp(ctx->instance, "default") ? " --instance " : "",
				 strcmp(ctx->instance, "default") ? ctx->instance : "");
	}
	return 0;
}

int xrl_lock_report(struct xrl_ctx *ctx, int err)
{
	if (lock_why[0])
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", lock_why);
	if (err == -EACCES || err == -EPERM)
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot lock %s: permission denied (run as root)",
				 ctx->pin_dir);
	return xrl_error(ctx, XRL_EXIT_FAIL, "cannot lock %s: %s", ctx->pin_dir, strerror(-err));
}

int xrl_instance_begin(struct xrl_ctx *ctx, struct xrl_maps *m, bool write)
{
	int err = write ? xrl_lock(ctx, false) : xrl_lock_shared(ctx), rc;

	if (err == -ENOENT)
		return xrl_instance_open(ctx, m);   /* reports "not attached" */
	if (err)
		return xrl_lock_report(ctx, err);
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
	/*
	 * XRL_PIN_ROOT stays (0700, root's) even when no instance is left: gone,
	 * anyone could take the name before the next attach (which would then refuse it).
	 */
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

/* ---------------------------------------------------------------- global options */

struct global_opts {
	const char *instance;
	bool json, pretty, help, version;
};

#define GO(member) XRL_OPT_FIELD(struct global_opts, member)

enum { GO_INSTANCE, GO_JSON, GO_PRETTY, GO_HELP, GO_VERSION, GO_N };

static const struct xrl_opt global_opt_rows[GO_N] = {
	[GO_INSTANCE] = { "instance", 0, "NAME", xrl_opt_str, GO(instance), .modes = 1,
			  .help = "work on instance NAME (default: default)" },
	[GO_JSON] = { "json", 'j', NULL, xrl_opt_flag, GO(json), .modes = 1,
		      .help = "print the result as JSON" },
	[GO_PRETTY] = { "pretty", 'p', NULL, xrl_opt_flag, GO(pretty), .modes = 1,
			.help = "print JSON indented (implies --json)" },
	[GO_HELP] = { "help", 'h', NULL, xrl_opt_flag, GO(help), .modes = 1,
		      .help = "print the usage summary" },
	[GO_VERSION] = { "version", 'V', NULL, xrl_opt_flag, GO(version), .modes = 1,
			 .help = "print the version of xrl and of the libraries it runs on" },
};

_Static_assert(GO_N <= 64, "xrl_opt_seen has a bit per row: at most 64 rows");

static const struct xrl_opt_table global_opts = {
	.name = "global", .opts = global_opt_rows,
	.n = GO_N, .nmodes = 1,
	.see = "see xrl --help",
};

/* ---------------------------------------------------------------- commands */

static int cmd_help(struct xrl_ctx *ctx, int argc, char **argv);

static const struct xrl_cmd commands[] = {
	{ .name = "attach", .fn = xrl_cmd_attach, .args = "IFACE", .opts = &xrl_attach_opts },
	{ .name = "detach", .fn = xrl_cmd_detach, .args = "IFACE" },
	{ .name = "status", .fn = xrl_cmd_status, .args = "" },
	{ .name = "rule", .fn = xrl_cmd_rule, .args = NULL, .sub = &xrl_rule_cmds },
	{ .name = "stats", .fn = xrl_cmd_stats, .args = "", .opts = &xrl_stats_opts },
	{ .name = "top", .fn = xrl_cmd_top, .args = "", .opts = &xrl_top_opts },
	{ .name = "block", .fn = xrl_cmd_block, .args = NULL, .sub = &xrl_block_cmds },
	{ .name = "daemon", .fn = xrl_cmd_daemon, .args = "", .opts = &xrl_daemon_opts },
	{ .name = "help", .fn = cmd_help, .args = "[options]" },
};

static const struct xrl_cmd_table command_table = {
	.path = "xrl", .cmds = commands, .n = sizeof(commands) / sizeof(commands[0]),
};

int xrl_usage_error(struct xrl_ctx *ctx, const char *cmd)
{
	const struct xrl_cmd *c = xrl_cmd_find(&command_table, cmd);
	char u[1024];

	if (!c)
		return xrl_error(ctx, XRL_EXIT_USAGE, "usage: see xrl --help");
	xrl_cmd_usage_line(&command_table, c, u, sizeof(u));
	return xrl_error(ctx, XRL_EXIT_USAGE, "usage: %s", u);
}

static void usage(FILE *f)
{
	char u[512];

	xrl_opts_usage(&global_opts, 0, u, sizeof(u));
	fprintf(f, "usage: xrl %s COMMAND ...\n", u);
	xrl_cmd_usage(f, &command_table, "  ", 92);
	fputs("See xrl(8); 'xrl help options' lists every option, one a line.\n", f);
}

/* ---------------------------------------------------------------- bash completion */

/* One level of the command line ("_" before the command, "attach", "rule_add"): its options. */
static void completion_opts(FILE *f, const char *level, const struct xrl_opt_table *t, int mode)
{
	int i, k = 0;

	fprintf(f, "_xrl_opts[%s]=\"", level);
	for (i = 0; i < t->n; i++) {
		const struct xrl_opt *o = &t->opts[i];

		if (!((o->modes >> mode) & 1))
			continue;
		fprintf(f, "%s--%s", k++ ? " " : "", o->name);
		if (o->short_name)
			fprintf(f, " -%c", o->short_name);
	}
	fputs("\"\n", f);
	for (i = 0; i < t->n; i++) {
		const struct xrl_opt *o = &t->opts[i];

		/* an optional value is only ever taken after '=' by the completion */
		if (!((o->modes >> mode) & 1) || !o->arg || (o->flags & XRL_OPT_OPTIONAL_ARG))
			continue;
		fprintf(f, "_xrl_arg[\"%s --%s\"]=1\n", level, o->name);
		if (o->short_name)
			fprintf(f, "_xrl_arg[\"%s -%c\"]=1\n", level, o->short_name);
		if (strchr(o->arg, '|')) {   /* "auto|native|generic": the choices */
			char choices[256], *p;

			snprintf(choices, sizeof(choices), "%s", o->arg);
			for (p = choices; (p = strchr(p, '|')); )
				*p = ' ';
			fprintf(f, "_xrl_choice[\"%s --%s\"]=\"%s\"\n", level, o->name, choices);
			if (o->short_name)
				fprintf(f, "_xrl_choice[\"%s -%c\"]=\"%s\"\n", level, o->short_name, choices);
		}
	}
}

static void completion_cmds(FILE *f, const char *level, const struct xrl_cmd_table *t)
{
	int i;

	fprintf(f, "_xrl_sub[%s]=\"", level);
	for (i = 0; i < t->n; i++)
		fprintf(f, "%s%s", i ? " " : "", t->cmds[i].name);
	fputs("\"\n", f);
	for (i = 0; i < t->n; i++) {
		const struct xrl_cmd *c = &t->cmds[i];
		char sub[128];

		snprintf(sub, sizeof(sub), "%s%s%s", strcmp(level, "_") ? level : "",
			 strcmp(level, "_") ? "_" : "", c->name);
		if (c->sub)
			completion_cmds(f, sub, c->sub);
		else if (c->opts)
			completion_opts(f, sub, c->opts, c->opt_mode);
	}
}

/* `xrl help completion`: a bash completion script made from the tables (make writes build/xrl.bash) */
static void completion(FILE *f)
{
	fputs("# bash completion for xrl(8), made by 'xrl help completion' from xrl's option and\n"
	      "# command tables: commands, subcommands, options and their fixed choices.\n"
	      "declare -gA _xrl_sub=() _xrl_opts=() _xrl_arg=() _xrl_choice=()\n", f);
	completion_opts(f, "_", &global_opts, 0);
	completion_cmds(f, "_", &command_table);
	fputs("_xrl() {\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} level=_ w i skip=0 prev=\n"
	      "\tCOMPREPLY=()\n"
	      "\t# the words before the cursor: commands and subcommands set the level; an\n"
	      "\t# option's value and the operands are skipped\n"
	      "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	      "\t\tw=${COMP_WORDS[i]}\n"
	      "\t\tif ((skip)); then skip=0; prev=; continue; fi\n"
	      "\t\tcase $w in\n"
	      "\t\t--*=*) prev= ;;\n"
	      "\t\t-*) prev=$w; [ -n \"${_xrl_arg[\"$level $w\"]:-}\" ] && skip=1 ;;\n"
	      "\t\t*) prev=\n"
	      "\t\t\tif [[ \" ${_xrl_sub[$level]:-} \" == *\" $w \"* ]]; then\n"
	      "\t\t\t\t[ \"$level\" = _ ] && level=$w || level=${level}_$w\n"
	      "\t\t\tfi ;;\n"
	      "\t\tesac\n"
	      "\tdone\n"
	      "\tif ((skip)); then   # the value of $prev\n"
	      "\t\t[ -n \"${_xrl_choice[\"$level $prev\"]:-}\" ] &&\n"
	      "\t\t\tCOMPREPLY=($(compgen -W \"${_xrl_choice[\"$level $prev\"]}\" -- \"$cur\"))\n"
	      "\t\treturn 0\n"
	      "\tfi\n"
	      "\tif [[ $cur == -* ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"${_xrl_opts[$level]:-}\" -- \"$cur\"))\n"
	      "\telif [ -n \"${_xrl_sub[$level]:-}\" ]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"${_xrl_sub[$level]}\" -- \"$cur\"))\n"
	      "\tfi\n"
	      "\treturn 0\n"
	      "}\n"
	      "complete -o bashdefault -o default -F _xrl xrl\n", f);
}

/* xrl help: the usage; xrl help options: the option tables, one option a line */
static int cmd_help(struct xrl_ctx *ctx, int argc, char **argv)
{
	(void)ctx;
	if (argc == 2 && !strcmp(argv[1], "options")) {
		xrl_opts_dump(stdout, &global_opts);
		xrl_opts_dump(stdout, &xrl_rule_opts);
		xrl_opts_dump(stdout, &xrl_attach_opts);
		xrl_opts_dump(stdout, &xrl_stats_opts);
		xrl_opts_dump(stdout, &xrl_top_opts);
		xrl_opts_dump(stdout, &xrl_daemon_opts);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "completion")) {   /* not in the usage: for make */
		completion(stdout);
		return 0;
	}
	usage(stdout);
	return 0;
}

#ifndef XRL_VERSION
#define XRL_VERSION "unknown"
#endif
#ifndef XRL_LIBXDP_VERSION
#define XRL_LIBXDP_VERSION "unknown"
#endif

static void print_version(struct xrl_ctx *ctx)
{
	char bpf[32], bpf_built[32];

	snprintf(bpf, sizeof(bpf), "%u.%u", libbpf_major_version(), libbpf_minor_version());
	snprintf(bpf_built, sizeof(bpf_built), "%d.%d", LIBBPF_MAJOR_VERSION, LIBBPF_MINOR_VERSION);
	if (ctx->json) {
		/* libxdp has no version call: the version it was built with */
		xrl_json_print(ctx, json_pack("{s:o,s:s,s:s,s:s}", "version", xrl_json_text(XRL_VERSION),
					      "libbpf", bpf, "libbpf_built", bpf_built,
					      "libxdp_built", XRL_LIBXDP_VERSION));
		return;
	}
	printf("xrl %s\n", XRL_VERSION);
	printf("libbpf %s (built with %s), libxdp %s (at build time)\n", bpf, bpf_built,
	       XRL_LIBXDP_VERSION);
}

int main(int argc, char **argv)
{
	struct global_opts g = { .instance = "default" };
	struct xrl_ctx ctx = { .instance = "default", .lock_fd = -1 };
	const struct xrl_cmd *c;
	xrl_opt_seen seen = 0;
	char err[XRL_ERRLEN], list[256];
	int i = 1, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = xrl_opts_parse(&global_opts, 0, argc, argv, &i, &g, &seen, err, sizeof(err));
	ctx.json = g.json || g.pretty;
	ctx.pretty = g.pretty;
	if (rc)
		return xrl_error(&ctx, XRL_EXIT_USAGE, "%s", err);
	if (g.help) {
		usage(stdout);
		return 0;
	}
	if (g.version) {
		print_version(&ctx);
		return 0;
	}
	/* checked after the options, so that a later --json applies to the message */
	if (!xrl_valid_instance(g.instance))
		return xrl_error(&ctx, XRL_EXIT_USAGE,
				 "invalid instance name '%s': use 1 to 64 letters, digits, '-' or '_'",
				 g.instance);
	ctx.instance = g.instance;
	snprintf(ctx.pin_dir, sizeof(ctx.pin_dir), "%s/%s", XRL_PIN_ROOT, ctx.instance);
	if (i >= argc) {
		if (ctx.json)
			return xrl_error(&ctx, XRL_EXIT_USAGE, "missing COMMAND (see xrl --help)");
		usage(stderr);
		return XRL_EXIT_USAGE;
	}
	c = xrl_cmd_find(&command_table, argv[i]);
	if (!c) {
		xrl_cmd_names(&command_table, ", ", " or ", list, sizeof(list));
		return xrl_error(&ctx, XRL_EXIT_USAGE, "unknown command '%s': expected %s", argv[i],
				 list);
	}
	libbpf_set_print(silent_print);
	libxdp_set_print((libxdp_print_fn_t)silent_print);
	if (c->fn != cmd_help && xrl_bpffs_ensure())
		return xrl_error(&ctx, XRL_EXIT_FAIL,
				 "bpffs is not mounted at /sys/fs/bpf and mounting it failed (run as root)");

	ctx.all_instances = !XRL_SEEN(seen, GO_INSTANCE);
	return c->fn(&ctx, argc - i, argv + i);
}
