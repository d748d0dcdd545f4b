// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * attach, detach, status: loading the XDP program with its maps pinned per
 * instance, and attaching it through libxdp (inside its multi-program
 * dispatcher when the kernel allows, alone otherwise).
 */
#include <errno.h>
#include <dirent.h>
#include <getopt.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "xrl_table.h"
#include "xrl_cli.h"
#include "xrl_rule.h"
#include "xrl.skel.h"

enum { OPT_MODE = 256, OPT_MAX_SOURCES, OPT_MALFORMED };

static int parse_mode(const char *s, enum xdp_attach_mode *mode)
{
	if (!strcmp(s, "auto"))
		*mode = XDP_MODE_UNSPEC;
	else if (!strcmp(s, "native"))
		*mode = XDP_MODE_NATIVE;
	else if (!strcmp(s, "generic"))
		*mode = XDP_MODE_SKB;
	else
		return -1;
	return 0;
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
	static const struct option opts[] = {
		{ "mode", required_argument, 0, OPT_MODE },
		{ "max-sources", required_argument, 0, OPT_MAX_SOURCES },
		{ "malformed", required_argument, 0, OPT_MALFORMED },
		{ 0, 0, 0, 0 },
	};
	enum xdp_attach_mode mode = XDP_MODE_UNSPEC;
	__u64 max_sources = 0;
	__u32 sets4 = 0, sets6 = 0;
	int malformed = -1, c, err, ifindex, rc = XRL_EXIT_FAIL;
	bool existed, multiprog = false;
	struct xrl_maps m = { -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 };
	struct xrl_bpf *skel = NULL;
	struct xdp_program *prog = NULL;
	struct xrl_iface rec = { 0 };
	char msg[XRL_ERRLEN], path[512];
	const char *iface;
	__u8 amode = 0;
	__u32 key;

	optind = 0;   /* glibc: full restart of getopt */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case OPT_MODE:
			if (parse_mode(optarg, &mode))
				return xrl_error(ctx, XRL_EXIT_USAGE,
						 "invalid --mode '%s': expected auto, native or generic", optarg);
			break;
		case OPT_MAX_SOURCES:
			if (xrl_parse_uint("--max-sources", optarg, 1, 1U << 28, &max_sources, msg, sizeof(msg)))
				return xrl_error(ctx, XRL_EXIT_USAGE, "%s", msg);
			break;
		case OPT_MALFORMED:
			if (!strcmp(optarg, "pass"))
				malformed = XRL_MALFORMED_PASS;
			else if (!strcmp(optarg, "drop"))
				malformed = XRL_MALFORMED_DROP;
			else
				return xrl_error(ctx, XRL_EXIT_USAGE,
						 "invalid --malformed '%s': expected pass or drop", optarg);
			break;
		default:
			return xrl_error(ctx, XRL_EXIT_USAGE,
					 "attach: unknown option or missing value '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return xrl_error(ctx, XRL_EXIT_USAGE,
				 "usage: xrl attach IFACE [--mode auto|native|generic] [--max-sources N] [--malformed pass|drop]");
	iface = argv[optind];
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
		__u32 idx, have = xrl_bucket_capacity(m.buckets_v4);

		sets4 = xrl_map_max_entries(m.buckets_v4);
		sets6 = xrl_map_max_entries(m.buckets_v6);

		if (iface_find(&m, iface, &idx, &cur)) {
			rc = xrl_error(ctx, XRL_EXIT_FAIL, "instance '%s' is already attached to %s",
				       ctx->instance, iface);
			goto out;
		}
		xrl_read_config(&m, &cfg);
		if (max_sources && xrl_table_sets(max_sources, XRL_WAYS4) != sets4) {
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
	if (!existed) {
		/* whole sets of entries, never more than asked for (at least one set) */
		sets4 = xrl_table_sets(max_sources, XRL_WAYS4);
		sets6 = xrl_table_sets(max_sources, XRL_WAYS6);
	}
	if (malformed < 0)
		malformed = XRL_MALFORMED_PASS;

	skel = xrl_bpf__open();
	if (!skel) {
		rc = xrl_error(ctx, XRL_EXIT_FAIL, "cannot open the XDP program: %s", strerror(errno));
		goto out;
	}
	skel->rodata->xrl_malformed_policy = (__u32)malformed;
	bpf_map__set_max_entries(skel->maps.xrl_buckets_v4, sets4);
	bpf_map__set_max_entries(skel->maps.xrl_buckets_v6, sets6);
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
		xrl_json_print(ctx, json_pack("{s:s,s:s,s:s,s:b,s:i,s:i}", "instance", ctx->instance,
					      "interface", iface, "mode", xrl_mode_name(amode),
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
		xrl_json_print(ctx, json_pack("{s:s,s:s,s:b}", "instance", ctx->instance,
					      "detached", argv[1], "pins_removed", access(ctx->pin_dir, F_OK) != 0));
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
		json_array_append_new(ifs, json_pack("{s:s,s:i,s:s,s:b,s:i,s:b}", "interface", rec.name,
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
		      "capacity", (int)xrl_bucket_capacity(m.buckets_v4),
		      "malformed", cfg.malformed_policy ? "drop" : "pass");
	if (human)
		printf("  rules %d, tracked sources %ld (capacity %u per family), malformed packets: %s\n",
		       nrules, sources, xrl_bucket_capacity(m.buckets_v4),
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
