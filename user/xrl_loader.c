// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * attach, detach, status: loading the XDP program with its maps pinned per
 * instance, and attaching it through libxdp (inside its multi-program
 * dispatcher when the kernel allows, alone otherwise).
 */
#include <errno.h>
#include <dirent.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "xrl_cli.h"
#include "xrl_rule.h"
#include "xrl.skel.h"

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

static bool iface_find(const struct xrl_maps *m, const char *name, __u32 *ifindex,
		       struct xrl_iface *out)
{
	__u32 key, next;
	void *prev = NULL;

	while (bpf_map_get_next_key(m->ifaces, prev, &next) == 0) {
		struct xrl_iface v;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(m->ifaces, &key, &v))
			continue;
		if (!strncmp(v.name, name, sizeof(v.name))) {
			*ifindex = key;
			*out = v;
			return true;
		}
	}
	return false;
}

/* Is prog_id attached to ifindex now? Sets *multiprog when inside the dispatcher. */
static bool prog_attached(int ifindex, __u32 prog_id, bool *multiprog, __u8 *mode)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;
	bool found = false;

	if (!mp || libxdp_get_error(mp))
		return false;
	*mode = (__u8)xdp_multiprog__attach_mode(mp);
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		found = p && xdp_program__id(p) == prog_id;
		*multiprog = false;
	} else {
		for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
			if (xdp_program__id(p) == prog_id)
				found = true;
		*multiprog = true;
	}
	xdp_multiprog__close(mp);
	return found;
}

int xrl_cmd_attach(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct attach_opts ao = { 0 };
	xrl_opt_seen seen = 0;
	enum xdp_attach_mode mode;
	__u64 max_sources;
	int malformed, err, ifindex, rc = XRL_EXIT_FAIL;
	bool existed, multiprog = false;
	struct xrl_maps m = { -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 };
	struct xrl_bpf *skel = NULL;
	struct xdp_program *prog = NULL;
	struct xrl_iface rec = { 0 };
	char path[512];
	const char *iface = NULL;
	__u8 amode = 0;
	__u32 key;

	if ((rc = attach_args(ctx, argc, argv, &ao, &seen, &iface)))
		return rc;
	attach_check(&ao, seen, &mode, &max_sources, &malformed);
	rc = XRL_EXIT_FAIL;
	ifindex = (int)if_nametoindex(iface);
	if (!ifindex || strlen(iface) >= IF_NAMESIZE)
		return xrl_error(ctx, XRL_EXIT_FAIL, "no interface named '%s' (see 'ip link')", iface);

	err = xrl_lock(ctx, true);
	if (err)
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot create or lock %s: %s", ctx->pin_dir,
				 strerror(-err));

	existed = xrl_maps_open_pinned(ctx->pin_dir, &m) == 0;
	if (existed) {
		struct xrl_config cfg;
		struct xrl_iface cur;
		__u32 idx, have = xrl_map_max_entries(m.buckets_v4);

		if (iface_find(&m, iface, &idx, &cur)) {
			rc = xrl_error(ctx, XRL_EXIT_FAIL, "instance '%s' is already attached to %s",
				       ctx->instance, iface);
			goto out;
		}
		xrl_read_config(&m, &cfg);
		if (max_sources && max_sources != have) {
			rc = xrl_error(ctx, XRL_EXIT_USAGE,
				       "instance '%s' already tracks up to %u sources; --max-sources %llu differs (detach everywhere to change it)",
				       ctx->instance, have, (unsigned long long)max_sources);
			goto out;
		}
		if (malformed >= 0 && (__u32)malformed != cfg.malformed_policy) {
			rc = xrl_error(ctx, XRL_EXIT_USAGE,
				       "instance '%s' already uses --malformed %s (detach everywhere to change it)",
				       ctx->instance, cfg.malformed_policy ? "drop" : "pass");
			goto out;
		}
		max_sources = have;
		malformed = (int)cfg.malformed_policy;
	}
	if (!max_sources)
		max_sources = XRL_DEFAULT_SOURCES;
	if (malformed < 0)
		malformed = XRL_MALFORMED_PASS;

	skel = xrl_bpf__open();
	if (!skel) {
		rc = xrl_error(ctx, XRL_EXIT_FAIL, "cannot open the XDP program: %s", strerror(errno));
		goto out;
	}
	skel->rodata->xrl_malformed_policy = (__u32)malformed;
	bpf_map__set_max_entries(skel->maps.xrl_buckets_v4, (__u32)max_sources);
	bpf_map__set_max_entries(skel->maps.xrl_buckets_v6, (__u32)max_sources);
	{
		struct bpf_map *map;

		int i;

		/* the instance's shared state; the per-CPU rule caches stay each program's own */
		for (i = 0; xrl_map_names[i]; i++) {
			map = bpf_object__find_map_by_name(skel->obj, xrl_map_names[i]);
			if (!map)
				continue;
			snprintf(path, sizeof(path), "%s/%s", ctx->pin_dir, xrl_map_names[i]);
			bpf_map__set_pin_path(map, path);
		}
	}
	prog = xdp_program__from_bpf_obj(skel->obj, "xdp");
	err = libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		rc = xrl_error(ctx, XRL_EXIT_FAIL, "cannot prepare the XDP program: %s", strerror(-err));
		goto out_clean;
	}
	err = xdp_program__attach(prog, ifindex, mode, 0);
	if (err) {
		const char *hint = "";

		if (err == -EEXIST || err == -EBUSY)
			hint = " (another XDP program is attached there: remove it first, e.g. 'xdp-loader unload IFACE --all')";
		else if (err == -EOPNOTSUPP && mode == XDP_MODE_NATIVE)
			hint = " (the driver has no native XDP: use --mode generic or auto)";
		else if (err == -EPERM)
			hint = " (run as root)";
		rc = xrl_error(ctx, XRL_EXIT_FAIL, "cannot attach to %s: %s%s", iface, strerror(-err), hint);
		goto out_clean;
	}
	rec.prog_id = xdp_program__id(prog);
	if (!prog_attached(ifindex, rec.prog_id, &multiprog, &amode)) {
		rc = xrl_error(ctx, XRL_EXIT_FAIL, "attached to %s but cannot find the program there", iface);
		goto out_detach;
	}
	snprintf(rec.name, sizeof(rec.name), "%s", iface);
	rec.mode = amode;
	rec.multiprog = multiprog;

	if (!existed && xrl_maps_open_pinned(ctx->pin_dir, &m)) {
		rc = xrl_error(ctx, XRL_EXIT_FAIL, "the program's maps were not pinned in %s", ctx->pin_dir);
		goto out_detach;
	}
	if (!existed)
		xrl_config_init(&m, (__u32)malformed);
	key = (__u32)ifindex;
	if (bpf_map_update_elem(m.ifaces, &key, &rec, BPF_ANY)) {
		rc = xrl_error(ctx, XRL_EXIT_FAIL, "cannot record the interface: %s", strerror(errno));
		goto out_detach;
	}

	if (ctx->json) {
		xrl_json_print(ctx, json_pack("{s:s,s:o,s:s,s:b,s:i,s:i}", "instance", ctx->instance,
					      "interface", xrl_json_text(iface), "mode", xrl_mode_name(amode),
					      "multiprog", multiprog, "program_id", (int)rec.prog_id,
					      "max_sources", (int)max_sources));
	} else {
		printf("xrl: instance '%s' attached to %s: %s mode, %s, program id %u\n",
		       ctx->instance, iface, xrl_mode_name(amode),
		       multiprog ? "inside libxdp's multi-program dispatcher"
				 : "attached alone (libxdp's dispatcher not in use)",
		       rec.prog_id);
	}
	rc = 0;
	goto out;

out_detach:
	xdp_program__detach(prog, ifindex, mode, 0);
out_clean:
	if (!existed) {
		xrl_maps_close(&m);
		xrl_instance_unpin(ctx);
	}
out:
	if (prog)
		xdp_program__close(prog);   /* also closes skel->obj */
	else if (skel)
		xrl_bpf__destroy(skel);
	xrl_maps_close(&m);
	xrl_unlock(ctx);
	return rc;
}

int xrl_cmd_detach(struct xrl_ctx *ctx, int argc, char **argv)
{
	struct xrl_maps m;
	struct xrl_iface rec;
	__u32 ifindex;
	bool multiprog;
	__u8 mode;
	int rc = 0, err;

	if (argc != 2 || argv[1][0] == '-')
		return xrl_error(ctx, XRL_EXIT_USAGE, "usage: xrl detach IFACE");
	if (access(ctx->pin_dir, F_OK))
		return xrl_error(ctx, XRL_EXIT_FAIL, "instance '%s' is not attached", ctx->instance);
	err = xrl_lock(ctx, false);
	if (err == -ENOENT)
		return xrl_error(ctx, XRL_EXIT_FAIL, "instance '%s' is not attached", ctx->instance);
	if (err)
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot lock %s: %s", ctx->pin_dir, strerror(-err));
	err = xrl_maps_open_pinned(ctx->pin_dir, &m);
	if (err) {
		rc = xrl_error(ctx, XRL_EXIT_FAIL, "instance '%s' is not attached", ctx->instance);
		goto out_unlock;
	}
	if (!iface_find(&m, argv[1], &ifindex, &rec)) {
		rc = xrl_error(ctx, XRL_EXIT_FAIL, "instance '%s' is not attached to %s",
			       ctx->instance, argv[1]);
		goto out;
	}
	/* the interface may be gone (a deleted veth): then only the record is left */
	if (if_nametoindex(rec.name) == ifindex && prog_attached((int)ifindex, rec.prog_id, &multiprog, &mode)) {
		struct xdp_program *p = xdp_program__from_id(rec.prog_id);

		err = libxdp_get_error(p);
		if (!err) {
			err = xdp_program__detach(p, (int)ifindex, (enum xdp_attach_mode)mode, 0);
			xdp_program__close(p);
		}
		if (err) {
			rc = xrl_error(ctx, XRL_EXIT_FAIL, "cannot detach from %s: %s", argv[1],
				       strerror(-err));
			goto out;
		}
	}
	bpf_map_delete_elem(m.ifaces, &ifindex);
	if (xrl_iface_count(&m) == 0) {
		xrl_maps_close(&m);
		xrl_instance_unpin(ctx);
	}
	if (ctx->json)
		xrl_json_print(ctx, json_pack("{s:s,s:o,s:b}", "instance", ctx->instance,
					      "detached", xrl_json_text(argv[1]), "pins_removed", access(ctx->pin_dir, F_OK) != 0));
	else
		printf("xrl: instance '%s' detached from %s%s\n", ctx->instance, argv[1],
		       access(ctx->pin_dir, F_OK) ? "; no interface left, pins removed" : "");
out:
	xrl_maps_close(&m);
out_unlock:
	xrl_unlock(ctx);
	return rc;
}

static json_t *instance_status(struct xrl_ctx *ctx, const char *name, bool human)
{
	char dir[512];
	struct xrl_maps m;
	struct xrl_config cfg = { 0 };
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	json_t *o, *ifs;
	__u32 key, next;
	void *prev = NULL;
	long sources;
	int nrules = 0;

	snprintf(dir, sizeof(dir), "%s/%s", XRL_PIN_ROOT, name);
	if (xrl_maps_open_pinned(dir, &m))
		return NULL;
	xrl_read_config(&m, &cfg);
	xrl_ruleset_read(&m, defs, ids, &nrules);
	sources = xrl_count_sources(&m);
	ifs = json_array();
	if (human)
		printf("instance %s\n", name);
	while (bpf_map_get_next_key(m.ifaces, prev, &next) == 0) {
		struct xrl_iface rec;
		bool multiprog = false, live;
		__u8 mode = 0;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(m.ifaces, &key, &rec))
			continue;
		live = if_nametoindex(rec.name) == key &&
		       prog_attached((int)key, rec.prog_id, &multiprog, &mode);
		json_array_append_new(ifs, json_pack("{s:o,s:i,s:s,s:b,s:i,s:b}", "interface",
						     xrl_json_text(rec.name),
						     "ifindex", (int)key, "mode", xrl_mode_name(rec.mode),
						     "multiprog", rec.multiprog, "program_id", (int)rec.prog_id,
						     "attached", live));
		if (human)
			printf("  interface %-15s %s mode, %s, program id %u%s\n", rec.name,
			       xrl_mode_name(rec.mode),
			       rec.multiprog ? "in libxdp's dispatcher" : "attached alone (no dispatcher)",
			       rec.prog_id, live ? "" : "  [NOT ATTACHED: interface or program gone]");
	}
	o = json_pack("{s:s,s:o,s:i,s:I,s:i,s:s}", "instance", name, "interfaces", ifs,
		      "rules", nrules, "sources", (json_int_t)sources,
		      "capacity", (int)xrl_map_max_entries(m.buckets_v4),
		      "malformed", cfg.malformed_policy ? "drop" : "pass");
	if (human)
		printf("  rules %d, tracked sources %ld (capacity %u per family), malformed packets: %s\n",
		       nrules, sources, xrl_map_max_entries(m.buckets_v4),
		       cfg.malformed_policy ? "drop" : "pass");
	xrl_maps_close(&m);
	(void)ctx;
	return o;
}

int xrl_cmd_status(struct xrl_ctx *ctx, int argc, char **argv)
{
	json_t *arr = json_array();
	struct dirent *de;
	DIR *d;
	int n = 0;

	(void)argv;
	if (argc != 1)
		return xrl_error(ctx, XRL_EXIT_USAGE, "usage: xrl status");
	d = opendir(XRL_PIN_ROOT);
	if (!d && errno != ENOENT) {
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
