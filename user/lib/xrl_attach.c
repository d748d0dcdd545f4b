// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * attach, detach, status: loading the XDP program with its maps pinned per
 * instance, and attaching it through libxdp (inside its multi-program
 * dispatcher when the kernel allows, alone otherwise). Prints nothing: the
 * messages go to the caller's buffer (user/cli/xrl_cmd_attach.c reports them).
 */
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "xrl_table.h"
#include "xrl_attach.h"
#include "xrl_tc.h"
#include "xrl_format.h"
#include "xrl_rule.h"
#include "xrl.skel.h"

/* The message in err; returns code. */
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

/* -errno of a call that failed (-EIO should it have left errno 0). */
static int neg_errno(void)
{
	return errno ? -errno : -EIO;
}

/*
 * Interfaces are recorded by ifindex, which a rename keeps: the record of
 * the interface called name now is the one at its ifindex.
 */
static bool iface_lookup(const struct xrl_maps *m, const char *name, __u32 *ifindex,
			 struct xrl_iface *out)
{
	__u32 idx = if_nametoindex(name);

	if (!idx || bpf_map_lookup_elem(m->ifaces, &idx, out))
		return false;
	*ifindex = idx;
	return true;
}

/* A record made under name (the interface may since be renamed or gone). */
static bool iface_find_recorded(const struct xrl_maps *m, const char *name, __u32 *ifindex,
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

/* The name of ifindex now, in buf (IF_NAMESIZE), or NULL when it is gone. */
static const char *iface_name_now(__u32 ifindex, char *buf)
{
	return if_indextoname(ifindex, buf);
}

/*
 * Kernel memory that --max-sources commits: the maps the loader sizes,
 * xrl_buckets_v4 (sets4 sets) and xrl_buckets_v6 (sets6 sets). Assumption:
 * each is an array (kernel/bpf/arraymap.c), all of it allocated at creation,
 * whose memory grows linearly with its entries (a set each); the bytes per
 * set and the fixed part are measured on two probe maps of the same type,
 * value size and flags (4096 and 8192 sets), from their memlock. Measured
 * here: 320 bytes per IPv4 set (40 per source), 256 per IPv6 set (64 per
 * source). 0 when the probes cannot be made.
 */
static unsigned long long sources_tables_bytes(struct xrl_bpf *skel, __u32 sets4, __u32 sets6)
{
	struct bpf_map *maps[] = { skel->maps.xrl_buckets_v4, skel->maps.xrl_buckets_v6 };
	const __u32 sets[] = { sets4, sets6 };
	const __u32 p1 = 4096, p2 = 8192;
	unsigned long long total = 0;
	size_t i;

	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = bpf_map__map_flags(maps[i]));
		unsigned long long m1, m2;
		double per, fixed;
		int fd1, fd2;

		fd1 = bpf_map_create(bpf_map__type(maps[i]), "xrl_probe", bpf_map__key_size(maps[i]),
				     bpf_map__value_size(maps[i]), p1, &o);
		fd2 = bpf_map_create(bpf_map__type(maps[i]), "xrl_probe", bpf_map__key_size(maps[i]),
				     bpf_map__value_size(maps[i]), p2, &o);
		m1 = fd1 >= 0 ? xrl_map_memlock(fd1) : 0;
		m2 = fd2 >= 0 ? xrl_map_memlock(fd2) : 0;
		if (fd1 >= 0)
			close(fd1);
		if (fd2 >= 0)
			close(fd2);
		if (!m1 || !m2 || m2 <= m1)
			return 0;
		per = ((double)m2 - (double)m1) / (double)(p2 - p1);
		fixed = (double)m1 - per * p1;
		total += (unsigned long long)(per * (double)sets[i] + (fixed > 0 ? fixed : 0));
	}
	return total;
}

/* MemAvailable of /proc/meminfo in bytes, 0 when unknown. */
static unsigned long long mem_available(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
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

int xrl_attach(struct xrl_instance *in, const struct xrl_attach_params *p,
	       struct xrl_attach_result *r, char *errbuf, size_t errlen)
{
	enum xdp_attach_mode mode = p->mode;
	__u64 max_sources = p->max_sources;
	__u32 sets4 = 0, sets6 = 0;
	int malformed = p->malformed, err, ifindex, rc = -EIO;
	bool existed, multiprog = false, given_sources;
	struct xrl_maps m;
	struct xrl_bpf *skel = NULL;
	struct xdp_program *prog = NULL;
	struct xrl_iface rec = { 0 };
	char path[512], why[XRL_INSTANCE_ERRLEN];
	const char *iface = p->iface;
	__u8 amode = 0;
	__u32 key;

	*r = (struct xrl_attach_result){ 0 };
	xrl_maps_none(&m);
	given_sources = max_sources != 0;
	ifindex = (int)if_nametoindex(iface);
	if (!ifindex || strlen(iface) >= IF_NAMESIZE)
		return fail(errbuf, errlen, -ENODEV, "no interface named '%s' (see 'ip link')", iface);

	err = xrl_instance_open(in, XRL_LOCK_EXCLUSIVE, XRL_WAIT_FOREVER, XRL_OPEN_CREATE, NULL, why,
				sizeof(why));
	if (err)
		return fail(errbuf, errlen, err, "%s", why);

	err = xrl_instance_maps(in, XRL_OPEN_NO_IFACE, &m, why, sizeof(why));
	if (err == -EPROTO) {
		rc = fail(errbuf, errlen, err, "%s", why);
		goto out;
	}
	existed = err == 0;
	if (existed) {
		struct xrl_config cfg;
		struct xrl_iface cur;
		__u32 idx, have = xrl_bucket_capacity(m.buckets_v4);

		sets4 = xrl_map_max_entries(m.buckets_v4);
		sets6 = xrl_map_max_entries(m.buckets_v6);
		if (iface_lookup(&m, iface, &idx, &cur)) {
			rc = fail(errbuf, errlen, -EEXIST, "instance '%s' is already attached to %s%s%s%s",
				  in->name, iface, strncmp(cur.name, iface, sizeof(cur.name)) ? " (attached as " : "",
				  strncmp(cur.name, iface, sizeof(cur.name)) ? cur.name : "",
				  strncmp(cur.name, iface, sizeof(cur.name)) ? ", since renamed)" : "");
			goto out;
		}
		if (xrl_iface_count(&m) >= XRL_MAX_IFACES) {
			rc = fail(errbuf, errlen, -ENOSPC,
				  "instance '%s' is attached to %d interfaces, the most one instance can have: detach one, or attach another --instance",
				  in->name, XRL_MAX_IFACES);
			goto out;
		}
		xrl_read_config(&m, &cfg);
		if (max_sources && xrl_table_sets(max_sources, XRL_WAYS4) != sets4) {
			r->refused = true;
			rc = fail(errbuf, errlen, -EINVAL,
				  "instance '%s' already tracks up to %u sources; --max-sources %llu differs (detach everywhere to change it)",
				  in->name, have, (unsigned long long)max_sources);
			goto out;
		}
		if (malformed >= 0 && (__u32)malformed != cfg.malformed_policy) {
			r->refused = true;
			rc = fail(errbuf, errlen, -EINVAL,
				  "instance '%s' already uses --malformed %s (detach everywhere to change it)",
				  in->name, cfg.malformed_policy ? "drop" : "pass");
			goto out;
		}
		max_sources = have;
		malformed = (int)cfg.malformed_policy;
		xrl_config_set_rt_off(&m, xrl_rt_off_ns());   /* --algo windows: refreshed by each attach */
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
		rc = fail(errbuf, errlen, neg_errno(), "cannot open the XDP program: %s", strerror(errno));
		goto out;
	}
	if (!existed) {
		/* preallocated: the tables take all their memory at attach */
		unsigned long long need = sources_tables_bytes(skel, sets4, sets6), avail = mem_available();

		if (need && avail && need > avail) {
			char n[32], a[32];

			xrl_fmt_bytes((double)need, n, sizeof(n));
			xrl_fmt_bytes((double)avail, a, sizeof(a));
			r->refused = given_sources;
			rc = fail(errbuf, errlen, -ENOMEM,
				  "--max-sources %llu%s needs %s of kernel memory for the source tables (IPv4 and IPv6), more than the %s available (MemAvailable in /proc/meminfo): use a smaller --max-sources",
				  (unsigned long long)max_sources, given_sources ? "" : " (the default)", n, a);
			goto out_clean;
		}
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
			snprintf(path, sizeof(path), "%s/%s", in->pin_dir, xrl_map_names[i]);
			bpf_map__set_pin_path(map, path);
		}
	}
	prog = xdp_program__from_bpf_obj(skel->obj, "xdp");
	err = libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		rc = fail(errbuf, errlen, err, "cannot prepare the XDP program: %s", strerror(-err));
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
		rc = fail(errbuf, errlen, err, "cannot attach to %s: %s%s", iface, strerror(-err), hint);
		goto out_clean;
	}
	rec.prog_id = xdp_program__id(prog);
	if (!prog_attached(ifindex, rec.prog_id, &multiprog, &amode)) {
		rc = fail(errbuf, errlen, -ENOENT, "attached to %s but cannot find the program there", iface);
		goto out_detach;
	}
	snprintf(rec.name, sizeof(rec.name), "%s", iface);
	rec.mode = amode;
	rec.multiprog = multiprog;

	if (!existed && xrl_instance_maps(in, XRL_OPEN_NO_IFACE, &m, why, sizeof(why))) {
		rc = fail(errbuf, errlen, -ENOENT, "the program's maps were not pinned in %s", in->pin_dir);
		goto out_detach;
	}
	if (!existed && (err = xrl_config_init(&m, (__u32)malformed))) {
		rc = fail(errbuf, errlen, err, "cannot initialize the instance's config: %s", strerror(-err));
		goto out_detach;
	}
	/*
	 * --syn-proxy's completion at tc ingress. A kernel without
	 * bpf_sk_assign_tcp_reqsk (before 6.9) keeps the rest of xrl: status
	 * then says the proxy has no completion path there.
	 */
	if (xrl_tc_attach(ifindex, &rec.tc, why, sizeof(why)))
		rec.tc = 0;
	key = (__u32)ifindex;
	if (bpf_map_update_elem(m.ifaces, &key, &rec, BPF_ANY)) {
		rc = fail(errbuf, errlen, neg_errno(), "cannot record the interface: %s", strerror(errno));
		goto out_detach;
	}

	r->prog_id = rec.prog_id;
	r->mode = amode;
	r->multiprog = multiprog;
	r->max_sources = max_sources;
	rc = 0;
	goto out;

out_detach:
	xrl_tc_detach(ifindex, rec.tc);
	xdp_program__detach(prog, ifindex, mode, 0);
out_clean:
	if (!existed) {
		xrl_maps_close(&m);
		xrl_instance_unpin(in);
	}
out:
	if (prog)
		xdp_program__close(prog);   /* also closes skel->obj */
	else if (skel)
		xrl_bpf__destroy(skel);
	xrl_instance_close(in, &m);
	return rc;
}

int xrl_detach(struct xrl_instance *in, const char *iface, bool name_instance,
	       bool *pins_removed, char *errbuf, size_t errlen)
{
	struct xrl_maps m;
	struct xrl_iface rec;
	char now[IF_NAMESIZE], why[XRL_INSTANCE_ERRLEN];
	const char *name_now;
	__u32 ifindex;
	bool multiprog;
	__u8 mode;
	int rc = 0, err;

	*pins_removed = false;
	/* any layout: an instance pinned by another build can be detached */
	err = xrl_instance_open(in, XRL_LOCK_EXCLUSIVE, XRL_WAIT_FOREVER,
				XRL_OPEN_ANY_LAYOUT | XRL_OPEN_NO_IFACE, &m, why, sizeof(why));
	if (err == -ENOENT)
		return fail(errbuf, errlen, err, "instance '%s' is not attached", in->name);
	if (err)
		return fail(errbuf, errlen, err, "%s", why);
	/*
	 * The interface called IFACE now (by its ifindex: renames are followed);
	 * else a record made under that name whose interface is gone (a deleted
	 * veth: then only the record is left to remove). A record whose
	 * interface lives on under another name is refused: detach it by the
	 * name it has now.
	 */
	if (!iface_lookup(&m, iface, &ifindex, &rec)) {
		if (!iface_find_recorded(&m, iface, &ifindex, &rec)) {
			rc = fail(errbuf, errlen, -ENODEV, "instance '%s' is not attached to %s",
				  in->name, iface);
			goto out;
		}
		if ((name_now = iface_name_now(ifindex, now))) {
			rc = fail(errbuf, errlen, -ENODEV,
				  "instance '%s' is not attached to %s: the interface it attached as %s (ifindex %u) is now named %s: run 'xrl%s%s detach %s'",
				  in->name, iface, rec.name, ifindex, name_now,
				  name_instance ? " --instance " : "", name_instance ? in->name : "",
				  name_now);
			goto out;
		}
	}
	name_now = iface_name_now(ifindex, now);
	if (name_now && prog_attached((int)ifindex, rec.prog_id, &multiprog, &mode)) {
		struct xdp_program *p = xdp_program__from_id(rec.prog_id);

		err = libxdp_get_error(p);
		if (!err) {
			err = xdp_program__detach(p, (int)ifindex, (enum xdp_attach_mode)mode, 0);
			xdp_program__close(p);
		}
		if (err) {
			rc = fail(errbuf, errlen, err, "cannot detach from %s: %s", iface,
				  strerror(-err));
			goto out;
		}
	}
	if (name_now && rec.tc)
		xrl_tc_detach((int)ifindex, rec.tc);
	bpf_map_delete_elem(m.ifaces, &ifindex);
	if (xrl_iface_count(&m) == 0) {
		xrl_maps_close(&m);
		xrl_instance_unpin(in);
	}
	*pins_removed = access(in->pin_dir, F_OK) != 0;
out:
	xrl_instance_close(in, &m);
	return rc;
}

int xrl_status_read(const char *name, struct xrl_status *st, char *errbuf, size_t errlen)
{
	char dir[512], why[XRL_INSTANCE_ERRLEN];
	struct xrl_instance in = { .name = name, .pin_dir = dir, .lock_fd = -1 };
	struct xrl_maps m;
	struct xrl_config cfg = { 0 };
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	__u32 key, next;
	void *prev = NULL;
	int nrules = 0, err;

	memset(st, 0, sizeof(*st));
	snprintf(dir, sizeof(dir), "%s/%s", XRL_PIN_ROOT, name);
	err = xrl_instance_open(&in, XRL_LOCK_NONE, 0, XRL_OPEN_NO_IFACE, &m, why, sizeof(why));
	if (err)
		return fail(errbuf, errlen, err, "%s", why);
	xrl_read_config(&m, &cfg);
	if (xrl_ruleset_read(&m, defs, ids, &nrules))
		nrules = 0;
	{
		/* the buckets of the rules in force: stale ones of removed rules are not tracked */
		struct xrl_source_census c;

		st->sources = xrl_census_sources(&m, defs, ids, nrules, NULL, &c) ? -1 : c.tracked;
	}
	while (st->nifaces < XRL_MAX_IFACES && bpf_map_get_next_key(m.ifaces, prev, &next) == 0) {
		struct xrl_status_iface *s = &st->ifaces[st->nifaces];
		struct xrl_iface rec;
		bool multiprog = false, live, renamed;
		char now[IF_NAMESIZE];
		const char *ifname;
		__u8 mode = 0;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(m.ifaces, &key, &rec))
			continue;
		/* by ifindex: the name it has now (renames are followed), the recorded one when gone */
		ifname = iface_name_now(key, now);
		live = ifname && prog_attached((int)key, rec.prog_id, &multiprog, &mode);
		renamed = ifname && strncmp(ifname, rec.name, sizeof(rec.name));
		if (!ifname)
			ifname = rec.name;
		snprintf(s->name, sizeof(s->name), "%.*s", (int)sizeof(s->name) - 1, ifname);
		s->ifindex = key;
		s->rec = rec;
		s->renamed = renamed;
		s->attached = live;
		s->syn_proxy = live && (s->rec.tc & XRL_TC_FILTER) && xrl_tc_present((int)s->ifindex);
		st->nifaces++;
	}
	st->rules = nrules;
	st->capacity = xrl_bucket_capacity(m.buckets_v4);
	st->malformed = cfg.malformed_policy;
	xrl_maps_close(&m);
	return 0;
}
