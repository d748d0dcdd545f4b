// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* xrl: command line of the XDP rate limiter. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN && getenv("XRL_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	if (getenv("XRL_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
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
	struct xrl_ctx ctx = { .instance = "default", .inst.lock_fd = -1 };
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
