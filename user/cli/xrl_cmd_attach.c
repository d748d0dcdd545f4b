// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * attach, detach, status: the commands' options and output; the library's
 * xrl_attach, xrl_detach and xrl_status_read (user/lib/xrl_attach.c) load,
 * attach, detach and read.
 */
#include <errno.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <xdp/libxdp.h>

#include "xrl_attach.h"
#include "xrl_tc.h"
#include "xrl_cli.h"
#include "xrl_rule.h"

/* ---------------------------------------------------------------- options */

struct attach_opts {
	unsigned mode;        /* index in "auto|native|generic" */
	__u64 max_sources;    /* 0: the instance's, or the default */
	unsigned malformed;   /* index in "pass|drop" */
};

#define AO(member) XRL_OPT_FIELD(struct attach_opts, member)

enum { AO_MODE, AO_MAX_SOURCES, AO_MALFORMED, AO_N };

static const struct xrl_opt attach_opt_rows[AO_N] = {
	[AO_MODE] = { "mode", 0, "auto|native|generic", xrl_opt_enum, AO(mode), .modes = 1,
		      .what = "auto|native|generic",
		      .help = "XDP attach mode (default auto: native when the driver has XDP)" },
	[AO_MAX_SOURCES] = { "max-sources", 0, "N", xrl_opt_uint, AO(max_sources), .modes = 1,
			     .min = 1, .max = 1U << 28, .what = "--max-sources",
			     .help = "buckets per address family, fixed at creation (default 1048576)" },
	[AO_MALFORMED] = { "malformed", 0, "pass|drop", xrl_opt_enum, AO(malformed), .modes = 1,
			   .what = "pass|drop",
			   .help = "what to do with malformed IP packets, fixed at creation (default pass)" },
};

_Static_assert(AO_N <= 64, "xrl_opt_seen has a bit per row: at most 64 rows");

const struct xrl_opt_table xrl_attach_opts = {
	.name = "attach", .opts = attach_opt_rows, .n = AO_N, .nmodes = 1,
	.see = "see xrl --help",
};

/*
 * attach IFACE [options], the options before or after IFACE (until "--"):
 * 0, or the exit code of the error reported.
 */
static int attach_args(struct xrl_ctx *ctx, int argc, char **argv, struct attach_opts *o,
		       xrl_opt_seen *seen, const char **iface)
{
	char err[XRL_ERRLEN];
	int i = 1, words = 0;
	bool opts_end = false;

	while (i < argc) {
		if (!opts_end) {
			if (xrl_opts_parse(&xrl_attach_opts, 0, argc, argv, &i, o, seen, err, sizeof(err)))
				return xrl_error(ctx, XRL_EXIT_USAGE, "%s", err);
			opts_end = i > 1 && !strcmp(argv[i - 1], "--");
			if (i >= argc)
				break;
		}
		if (words++ == 0)
			*iface = argv[i];
		i++;
	}
	if (words != 1)
		return xrl_usage_error(ctx, argv[0]);
	return 0;
}

/* The options' values as attach uses them: mode, max sources (0: keep), malformed (-1: keep). */
static void attach_check(const struct attach_opts *o, xrl_opt_seen seen, enum xdp_attach_mode *mode,
			 __u64 *max_sources, int *malformed)
{
	static const enum xdp_attach_mode modes[] = { XDP_MODE_UNSPEC, XDP_MODE_NATIVE, XDP_MODE_SKB };

	*mode = modes[o->mode];
	*max_sources = o->max_sources;
	*malformed = !XRL_SEEN(seen, AO_MALFORMED) ? -1 :
		     o->malformed ? XRL_MALFORMED_DROP : XRL_MALFORMED_PASS;
}

int xrl_cmd_attach(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct attach_opts ao = { 0 };
	xrl_opt_seen seen = 0;
	struct xrl_attach_params p = { 0 };
	struct xrl_attach_result r;
	char why[XRL_INSTANCE_ERRLEN];
	int rc;

	if ((rc = attach_args(ctx, argc, argv, &ao, &seen, &p.iface)))
		return rc;
	attach_check(&ao, seen, &p.mode, &p.max_sources, &p.malformed);
	if (xrl_attach(xrl_ctx_instance(ctx), &p, &r, why, sizeof(why)))
		return xrl_error(ctx, r.refused ? XRL_EXIT_USAGE : XRL_EXIT_FAIL, "%s", why);

	if (ctx->json) {
		xrl_json_print(ctx, json_pack("{s:s,s:o,s:s,s:b,s:i,s:i}", "instance", ctx->instance,
					      "interface", xrl_json_text(p.iface), "mode", xrl_mode_name(r.mode),
					      "multiprog", r.multiprog, "program_id", (int)r.prog_id,
					      "max_sources", (int)r.max_sources));
	} else {
		printf("xrl: instance '%s' attached to %s: %s mode, %s, program id %u\n",
		       ctx->instance, p.iface, xrl_mode_name(r.mode),
		       r.multiprog ? "inside libxdp's multi-program dispatcher"
				   : "attached alone (libxdp's dispatcher not in use)",
		       r.prog_id);
		if (xrl_tc_syncookies() == 0)
			fprintf(stderr, "xrl: warning: net.ipv4.tcp_syncookies is 0 in this network namespace: the kernel refuses the handshakes of --syn-proxy rules; set it to 1 (sysctl -w net.ipv4.tcp_syncookies=1)\n");
	}
	return 0;
}

int xrl_cmd_detach(struct xrl_ctx *ctx, int argc, char **argv)
{
	char why[XRL_INSTANCE_ERRLEN];
	bool pins_removed;

	if (argc != 2 || argv[1][0] == '-')
		return xrl_error(ctx, XRL_EXIT_USAGE, "usage: xrl detach IFACE");
	if (xrl_detach(xrl_ctx_instance(ctx), argv[1], !ctx->all_instances, &pins_removed, why,
		       sizeof(why)))
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", why);
	if (why[0])
		fprintf(stderr, "xrl: %s\n", why);   /* detached, the pins kept: why */
	if (ctx->json) {
		json_t *o = json_pack("{s:s,s:o,s:b}", "instance", ctx->instance,
				      "detached", xrl_json_text(argv[1]), "pins_removed", pins_removed);

		if (why[0])
			json_object_set_new(o, "pins_kept_because", xrl_json_text(why));
		xrl_json_print(ctx, o);
	} else
		printf("xrl: instance '%s' detached from %s%s\n", ctx->instance, argv[1],
		       pins_removed ? "; no interface left, pins removed" : "");
	return 0;
}

static json_t *instance_status(struct xrl_ctx *ctx, const char *name, bool human)
{
	static struct xrl_status st;
	char why[XRL_INSTANCE_ERRLEN];
	json_t *o, *ifs;
	int i, err;

	err = xrl_status_read(name, &st, why, sizeof(why));
	if (err && err != -EPROTO)
		return NULL;
	if (err == -EPROTO) {
		if (human)
			printf("instance %s\n  %s\n", name, why);
		return json_pack("{s:s,s:s}", "instance", name, "error", why);
	}
	ifs = json_array();
	if (human)
		printf("instance %s\n", name);
	for (i = 0; i < st.nifaces; i++) {
		const struct xrl_status_iface *s = &st.ifaces[i];
		const struct xrl_iface *rec = &s->rec;

		o = json_pack("{s:o,s:i,s:s,s:b,s:i,s:b}", "interface", xrl_json_text(s->name),
			      "ifindex", (int)s->ifindex, "mode", xrl_mode_name(rec->mode),
			      "multiprog", rec->multiprog, "program_id", (int)rec->prog_id,
			      "attached", s->attached);
		if (s->renamed)
			json_object_set_new(o, "attached_as", xrl_json_text(rec->name));
		/* another network namespace: which, and how to get there */
		json_object_set_new(o, "netns", s->here ? json_null() : xrl_json_text(s->netns));
		if (!s->here) {
			json_object_set_new(o, "netns_reachable", json_boolean(s->reachable));
			json_object_set_new(o, "netns_path",
					    s->reachable ? xrl_json_text(s->netns_path) : json_null());
		}
		json_object_set_new(o, "syn_proxy", json_string(s->syn_proxy ? XRL_TC_PATH : "none"));
		json_array_append_new(ifs, o);
		if (human) {
			const char *gone = s->attached ? "" :
					   s->here ? "  [NOT ATTACHED: interface or program gone]" :
					   s->reachable ? "  [NOT ATTACHED there: interface or program gone]" :
							  "  [NOT ATTACHED: its namespace and program are gone]";

			printf("  interface %-15s %s mode, %s, program id %u%s%s%s%s\n", s->name,
			       xrl_mode_name(rec->mode),
			       rec->multiprog ? "in libxdp's dispatcher" : "attached alone (no dispatcher)",
			       rec->prog_id, s->renamed ? " (attached as " : "", s->renamed ? rec->name : "",
			       s->renamed ? ")" : "", gone);
			if (!s->here && s->reachable)
				printf("    in network namespace %s, not this one: reach it with 'nsenter --net=%s xrl%s%s ...'\n",
				       s->netns, s->netns_path, strcmp(name, "default") ? " --instance " : "",
				       strcmp(name, "default") ? name : "");
			else if (!s->here)
				printf("    in network namespace %s, not this one, which xrl cannot find (no /run/netns name, no process in it)%s\n",
				       s->netns, s->attached ? ": its program is still loaded" : "");
		}
		if (human)
			printf("    syn-proxy completion: %s%s\n",
			       s->syn_proxy ? XRL_TC_PATH :
					      "none (the tc program is not attached: --syn-proxy rules cannot complete handshakes here)",
			       s->syn_proxy && s->here && xrl_tc_syncookies() == 0 ?
				       "; net.ipv4.tcp_syncookies is 0 here: the kernel refuses the proxy's handshakes (sysctl -w net.ipv4.tcp_syncookies=1)" : "");
	}
	o = json_pack("{s:s,s:o,s:i,s:I,s:i,s:s}", "instance", name, "interfaces", ifs,
		      "rules", st.rules, "sources", (json_int_t)st.sources,
		      "capacity", (int)st.capacity,
		      "malformed", st.malformed ? "drop" : "pass");
	if (human)
		printf("  rules %d, tracked sources %ld (capacity %u per family), malformed packets: %s\n",
		       st.rules, st.sources, st.capacity,
		       st.malformed ? "drop" : "pass");
	(void)ctx;
	return o;
}

int xrl_cmd_status(struct xrl_ctx *ctx, int argc, char **argv)
{
	json_t *arr = json_array();
	char why[XRL_INSTANCE_ERRLEN];
	struct dirent *de;
	DIR *d;
	int n = 0, err;

	(void)argv;
	if (argc != 1)
		return xrl_error(ctx, XRL_EXIT_USAGE, "usage: xrl status");
	err = xrl_pin_root_ready(false, why, sizeof(why));
	if (err && err != -ENOENT) {
		json_decref(arr);
		if (!why[0])
			snprintf(why, sizeof(why), "cannot lock %s: %s", ctx->pin_dir,
				 err == -EACCES || err == -EPERM ? "permission denied (run as root)"
								 : strerror(-err));
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", why);
	}
	d = err ? NULL : opendir(XRL_PIN_ROOT);
	if (!d && !err) {
		json_decref(arr);
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot read %s: %s%s", XRL_PIN_ROOT, strerror(errno),
				 errno == EACCES || errno == EPERM ? " (run as root)" : "");
	}
	while (d && (de = readdir(d))) {
		json_t *o;

		if (de->d_name[0] == '.')
			continue;
		if (!ctx->all_instances && strcmp(ctx->instance, de->d_name))
			continue;   /* --instance NAME narrows the report */
		o = instance_status(ctx, de->d_name, !ctx->json);
		if (o) {
			json_array_append_new(arr, o);
			n++;
		}
	}
	if (d)
		closedir(d);
	if (!n && !ctx->all_instances) {
		json_decref(arr);
		return xrl_error(ctx, XRL_EXIT_FAIL, "instance '%s' is not attached", ctx->instance);
	}
	if (ctx->json)
		xrl_json_print(ctx, arr);
	else {
		if (!n)
			printf("no xrl instance is attached\n");
		json_decref(arr);
	}
	return 0;
}
