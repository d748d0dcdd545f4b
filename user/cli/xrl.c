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
		      .help = "print the usage; after a command: its options, values and examples" },
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

/*
 * The commands: one row each gives the dispatch, the usage, `xrl help CMD
 * [SUB]` and CMD --help (xrl_help.c), the bash completion and the list the
 * man page's checks read (`xrl help commands`). Subcommands are rows of
 * their own table (xrl_rule_cmds, xrl_block_cmds).
 */
static const struct xrl_cmd commands[] = {
	{ .name = "attach", .fn = xrl_cmd_attach, .args = "IFACE", .opts = &xrl_attach_opts,
	  .summary = "Load the XDP program on IFACE with the instance's maps (made and pinned "
		     "on first use; another interface shares them) and start limiting with the "
		     "instance's rules.",
	  .example = "xrl attach eth0\n"
		     "xrl --instance edge attach eth1 --mode native --max-sources 4194304" },
	{ .name = "detach", .fn = xrl_cmd_detach, .args = "IFACE",
	  .summary = "Remove the XDP program from IFACE; with the instance's last interface, "
		     "remove its pinned maps and rules too.",
	  .example = "xrl detach eth0" },
	{ .name = "status", .fn = xrl_cmd_status, .args = "",
	  .summary = "Show each instance: its interfaces with their attach modes, its rules, "
		     "the sources tracked out of its capacity.",
	  .example = "xrl status\nxrl --instance edge --json status" },
	{ .name = "rule", .fn = xrl_cmd_rule, .args = NULL, .sub = &xrl_rule_cmds,
	  .summary = "Add, delete, list, load and save the rules that choose a source's limit "
		     "by CIDR prefix (the longest matching prefix wins).",
	  .example = "xrl rule add 203.0.113.0/24 --rate 100/s --burst 200\n"
		     "xrl rule list" },
	{ .name = "stats", .fn = xrl_cmd_stats, .args = "", .opts = &xrl_stats_opts,
	  .summary = "Show the counters per rule and reason (passed, dropped, why), or a live "
		     "view of their rates with --watch.",
	  .example = "xrl stats\nxrl stats --watch -d 0.5" },
	{ .name = "top", .fn = xrl_cmd_top, .args = "", .opts = &xrl_top_opts,
	  .summary = "Show the sources that are dropped the most, with their rule and state, "
		     "and what kind of flood each rule faces; --watch redraws it live.",
	  .example = "xrl top -n 20\nxrl top --watch" },
	{ .name = "block", .fn = xrl_cmd_block, .args = NULL, .sub = &xrl_block_cmds,
	  .summary = "List and lift the blocks of --block rules (sources dropped entirely for "
		     "a time after going over their limit).",
	  .example = "xrl block list\nxrl block del 198.51.100.7" },
	{ .name = "daemon", .fn = xrl_cmd_daemon, .args = "", .opts = &xrl_daemon_opts,
	  .summary = "Run in the foreground: log limited sources, serve Prometheus metrics, "
		     "reload --rules on SIGHUP, and share --global rules' budgets across hosts "
		     "through Redis.",
	  .example = "xrl daemon --rules /etc/xrl/rules --metrics\n"
		     "xrl daemon --redis redis://10.0.0.5:6379 --metrics 0.0.0.0:9464" },
	{ .name = "http", .fn = xrl_cmd_http, .args = "", .opts = &xrl_http_opts,
	  .summary = "Run the request layer's decision service in the foreground: nginx "
		     "auth_request (GET /auth: 204 or 403) and other gateways (GET /check: 200 or "
		     "429) ask it per request, with RateLimit and Retry-After headers.",
	  .example = "xrl http --rules /etc/xrl/http-rules --listen 127.0.0.1:9480\n"
		     "xrl http --rules http-rules --trusted-proxy 10.0.0.0/8" },
	{ .name = "help", .fn = cmd_help, .args = "[COMMAND [SUBCOMMAND] | options]",
	  .summary = "Show the usage of every command, or one command's usage, options, value "
		     "syntax and examples; 'options' lists every command's options.",
	  .example = "xrl help rule add\nxrl help options" },
};

static const struct xrl_cmd_table command_table = {
	.path = "xrl", .cmds = commands, .n = sizeof(commands) / sizeof(commands[0]),
};

static void usage(FILE *f)
{
	char u[512];

	xrl_opts_usage(&global_opts, 0, u, sizeof(u));
	fprintf(f, "usage: xrl %s COMMAND ...\n", u);
	xrl_cmd_usage(f, &command_table, "  ", 92);
	fputs("'xrl help COMMAND [SUBCOMMAND]' or 'xrl COMMAND [SUBCOMMAND] --help': its options,\n"
	      "values and examples; 'xrl help options': every option. See xrl(8).\n", f);
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
		if (!strcmp(o->name, "instance")) {   /* the instances pinned now */
			fprintf(f, "_xrl_inst[\"%s --%s\"]=1\n", level, o->name);
			continue;
		}
		/* "auto|native|generic", or ALGO whose parser takes one of o->what: the choices */
		if (strchr(o->arg, '|') || (o->parse == xrl_opt_enum && o->what && strchr(o->what, '|'))) {
			char choices[256], *p;

			snprintf(choices, sizeof(choices), "%s", strchr(o->arg, '|') ? o->arg : o->what);
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

/* xrl help WORD [SUB]: the commands and "options", then a command's subcommands */
static void completion_help(FILE *f)
{
	int i, j;

	fputs("_xrl_sub[help]=\"", f);
	for (i = 0; i < command_table.n; i++)
		fprintf(f, "%s ", command_table.cmds[i].name);
	fputs("options\"\n", f);
	for (i = 0; i < command_table.n; i++) {
		const struct xrl_cmd *c = &command_table.cmds[i];

		if (!c->sub)
			continue;
		fprintf(f, "_xrl_sub[help_%s]=\"", c->name);
		for (j = 0; j < c->sub->n; j++)
			fprintf(f, "%s%s", j ? " " : "", c->sub->cmds[j].name);
		fputs("\"\n", f);
	}
}

/* `xrl help completion`: a bash completion script made from the tables (make writes build/xrl.bash) */
static void completion(FILE *f)
{
	fputs("# bash completion for xrl(8), made by 'xrl help completion' from xrl's option and\n"
	      "# command tables: commands, subcommands, options and their fixed choices.\n"
	      "declare -gA _xrl_sub=() _xrl_opts=() _xrl_arg=() _xrl_choice=() _xrl_inst=()\n", f);
	completion_opts(f, "_", &global_opts, 0);
	completion_cmds(f, "_", &command_table);
	completion_help(f);
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
	      "\t\tif [ -n \"${_xrl_inst[\"$level $prev\"]:-}\" ]; then   # the instances pinned now\n"
	      "\t\t\tCOMPREPLY=($(compgen -W \"$(ls \"${XRL_PIN_ROOT:-" XRL_PIN_ROOT "}\" 2>/dev/null)\" -- \"$cur\"))\n"
	      "\t\t\treturn 0\n"
	      "\t\tfi\n"
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

/* `xrl help commands` (for the checks): one line per command and subcommand, "PATH<TAB>USAGE" */
static void list_commands(FILE *f, const struct xrl_cmd_table *t)
{
	char u[1024];
	int i;

	for (i = 0; i < t->n; i++) {
		const struct xrl_cmd *c = &t->cmds[i];

		const char *pre = t->path[3] ? t->path + 4 : "";   /* "xrl rule" -> "rule" */

		if (c->sub) {
			fprintf(f, "%s%s%s\t%s %s SUBCOMMAND ...\n", pre, pre[0] ? " " : "", c->name,
				t->path, c->name);
			list_commands(f, c->sub);
			continue;
		}
		xrl_cmd_usage_line(t, c, u, sizeof(u));
		fprintf(f, "%s%s%s\t%s\n", pre, pre[0] ? " " : "", c->name, u);
	}
}

/* `xrl help option-table` (for the checks): each option table once, one option a line */
static void dump_tables(FILE *f, const struct xrl_cmd_table *t, const struct xrl_opt_table **done,
			int *ndone)
{
	int i, j;

	for (i = 0; i < t->n; i++) {
		const struct xrl_cmd *c = &t->cmds[i];

		if (c->sub) {
			dump_tables(f, c->sub, done, ndone);
			continue;
		}
		if (!c->opts)
			continue;
		for (j = 0; j < *ndone && done[j] != c->opts; j++)
			;
		if (j < *ndone || *ndone == 16)
			continue;
		done[(*ndone)++] = c->opts;
		xrl_opts_dump(f, c->opts);
	}
}

/* CMD [SUB] of argv (argv[0] is the first): its table and row, or NULL with the error reported */
static const struct xrl_cmd *find_command(struct xrl_ctx *ctx, int argc, char **argv,
					  const struct xrl_cmd_table **table)
{
	const struct xrl_cmd *c = xrl_cmd_find(&command_table, argv[0]), *s;
	char list[256];

	*table = &command_table;
	if (!c) {
		xrl_cmd_names(&command_table, ", ", " or ", list, sizeof(list));
		xrl_error(ctx, XRL_EXIT_USAGE, "unknown command '%s': expected %s", argv[0], list);
		return NULL;
	}
	if (argc < 2 || !c->sub)
		return c;
	s = xrl_cmd_find(c->sub, argv[1]);
	if (!s) {
		xrl_cmd_names(c->sub, ", ", " or ", list, sizeof(list));
		xrl_error(ctx, XRL_EXIT_USAGE, "unknown subcommand '%s %s': expected %s", argv[0],
			  argv[1], list);
		return NULL;
	}
	*table = c->sub;
	return s;
}

/*
 * xrl help: the usage; xrl help CMD [SUB]: that command's help; xrl help
 * options: every command's options. Not in the usage, for make and the
 * checks: completion, commands, option-table.
 */
static int cmd_help(struct xrl_ctx *ctx, int argc, char **argv)
{
	const struct xrl_cmd_table *t;
	const struct xrl_cmd *c;

	if (argc == 2 && !strcmp(argv[1], "options")) {
		xrl_help_options(stdout, &command_table, &global_opts);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "option-table")) {
		const struct xrl_opt_table *done[16];
		int ndone = 0;

		xrl_opts_dump(stdout, &global_opts);
		dump_tables(stdout, &command_table, done, &ndone);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "commands")) {
		list_commands(stdout, &command_table);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "completion")) {
		completion(stdout);
		return 0;
	}
	if (argc == 1) {
		usage(stdout);
		return 0;
	}
	if (argc > 3)
		return xrl_usage_error(ctx, "help");
	if (!(c = find_command(ctx, argc - 1, argv + 1, &t)))
		return XRL_EXIT_USAGE;
	if (argc == 3 && t == &command_table)   /* a second word after a command without subcommands */
		return xrl_error(ctx, XRL_EXIT_USAGE, "'%s' has no subcommands (see xrl help %s)",
				 argv[1], argv[1]);
	xrl_help_command(stdout, t, c);
	return 0;
}

/* CMD [SUB] ... --help (or -h) before any "--": the command's help instead of running it */
static bool help_requested(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

#ifndef XRL_VERSION
#define XRL_VERSION "unknown"
#endif
#ifndef XRL_PKG_VERSION
#define XRL_PKG_VERSION XRL_VERSION
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
		xrl_json_print(ctx, json_pack("{s:o,s:o,s:s,s:s,s:s}", "version",
					      xrl_json_text(XRL_PKG_VERSION), "git",
					      xrl_json_text(XRL_VERSION), "libbpf", bpf,
					      "libbpf_built", bpf_built, "libxdp_built",
					      XRL_LIBXDP_VERSION));
		return;
	}
	/* the package's version, then the source it was built from (git describe, or VERSION) */
	printf("xrl %s\n", XRL_PKG_VERSION);
	printf("built from %s\n", XRL_VERSION);
	printf("libbpf %s (built with %s), libxdp %s (at build time)\n", bpf, bpf_built,
	       XRL_LIBXDP_VERSION);
}

int main(int argc, char **argv)
{
	struct global_opts g = { .instance = "default" };
	struct xrl_ctx ctx = { .instance = "default", .inst.lock_fd = -1,
			       .commands = &command_table };
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
	if (help_requested(argc - i, argv + i)) {
		const struct xrl_cmd_table *t = &command_table;
		const struct xrl_cmd *h = c, *s;

		if (c->sub && i + 1 < argc && (s = xrl_cmd_find(c->sub, argv[i + 1]))) {
			t = c->sub;
			h = s;
		}
		xrl_help_command(stdout, t, h);
		return 0;
	}
	libbpf_set_print(silent_print);
	libxdp_set_print((libxdp_print_fn_t)silent_print);
	if (c->fn != cmd_help && xrl_bpffs_ensure())
		return xrl_error(&ctx, XRL_EXIT_FAIL,
				 "bpffs is not mounted at /sys/fs/bpf and mounting it failed (run as root)");

	ctx.all_instances = !XRL_SEEN(seen, GO_INSTANCE);
	return c->fn(&ctx, argc - i, argv + i);
}
