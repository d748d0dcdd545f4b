// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * attach, detach, status: loading the XDP program with its maps pinned per
 * instance, and attaching it through libxdp (inside its multi-program
 * dispatcher when the kernel allows, alone otherwise). Prints nothing: the
 * messages go to the caller's buffer (user/cli/xrl_cmd_attach.c reports them).
 */
#define _GNU_SOURCE   /* setns */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if_arp.h>
#include <linux/if_link.h>
#include <linux/if_tunnel.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "xrl_table.h"
#include "xrl_attach.h"
#include "xrl_tc.h"
#include "xrl_format.h"
#include "xrl_rule.h"
#include "xrl.skel.h"

/* linux/if_arp.h's, which glibc's net/if_arp.h lacks */
#ifndef ARPHRD_RAWIP
#define ARPHRD_RAWIP 519
#endif
#ifndef ARPHRD_IP6GRE
#define ARPHRD_IP6GRE 823
#endif

/* " --instance NAME" in the commands a message suggests, nothing for the default instance */
#define INSTANCE_ARG(in) (strcmp((in)->name, "default") ? " --instance " : ""), \
			 (strcmp((in)->name, "default") ? (in)->name : "")

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

/* ------------------------------------------------- network namespaces */

/*
 * An ifindex names an interface within one network namespace: a record
 * carries its namespace's cookie (SO_NETNS_COOKIE, never reused while the
 * machine runs) and inode (to find it: /run/netns/NAME, /proc/PID/ns/net).
 */
#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

/* The cookie of the calling thread's network namespace, 0 when unknown. */
static __u64 netns_cookie_here(void)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	socklen_t len = sizeof(__u64);
	__u64 c = 0;

	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &c, &len))
		c = 0;
	close(fd);
	return c;
}

/* The inode of the calling thread's network namespace, 0 when unknown. */
static __u32 netns_ino_here(void)
{
	struct stat st;

	return stat("/proc/thread-self/ns/net", &st) ? 0 : (__u32)st.st_ino;
}

/* Is rec in the namespace whose cookie is here? (a record without one is taken as here) */
static bool rec_here(const struct xrl_iface *rec, __u64 here)
{
	return !rec->netns_cookie || !here || rec->netns_cookie == here;
}

/* Where a record's namespace was found: a label for the operator and the path to enter it. */
struct ns_way {
	char label[128];
	char path[160];
};

/*
 * Enter path if it is the namespace of cookie (the inode matched: the
 * cookie tells a reused inode apart). 0 inside it, with the namespace to
 * return to in *back; -1 (still where we were) otherwise.
 */
static int netns_try(const char *path, __u64 cookie, int *back)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), self;

	if (fd < 0)
		return -1;
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0 || setns(fd, CLONE_NEWNET)) {
		if (self >= 0)
			close(self);
		close(fd);
		return -1;
	}
	close(fd);
	if (netns_cookie_here() != cookie) {
		if (setns(self, CLONE_NEWNET))
			abort();   /* cannot happen (we were there); going on in the wrong namespace would lie */
		close(self);
		return -1;
	}
	*back = self;
	return 0;
}

static void netns_leave(int back)
{
	if (setns(back, CLONE_NEWNET))
		abort();   /* as in netns_try */
	close(back);
}

/*
 * Find and enter the namespace of rec: a /run/netns name first, then a
 * process in it. 0 inside it (netns_leave(*back) returns), -ENOENT when it
 * is nowhere to be found (gone, or held only where xrl does not look).
 */
static int netns_enter(const struct xrl_iface *rec, int *back, struct ns_way *w)
{
	static const char *const dirs[] = { "/run/netns", "/var/run/netns" };
	char path[sizeof(w->path)];
	struct dirent *de;
	struct stat st;
	size_t i;
	DIR *d;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!(d = opendir(dirs[i])))
			continue;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%.*s", dirs[i], 100, de->d_name);
			if (stat(path, &st) || (__u32)st.st_ino != rec->netns_ino ||
			    netns_try(path, rec->netns_cookie, back))
				continue;
			snprintf(w->label, sizeof(w->label), "%.*s", 100, de->d_name);
			snprintf(w->path, sizeof(w->path), "%s", path);
			closedir(d);
			return 0;
		}
		closedir(d);
	}
	if (!(d = opendir("/proc")))
		return -ENOENT;
	while ((de = readdir(d))) {
		char comm[32] = "?";
		FILE *f;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.*s/ns/net", 20, de->d_name);
		if (stat(path, &st) || (__u32)st.st_ino != rec->netns_ino ||
		    netns_try(path, rec->netns_cookie, back))
			continue;
		snprintf(w->path, sizeof(w->path), "/proc/%.*s/comm", 20, de->d_name);
		if ((f = fopen(w->path, "r"))) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		/* kthreadd (2) lives in the initial namespace, the host's */
		if (strcmp(de->d_name, "2"))
			snprintf(w->label, sizeof(w->label), "of process %.*s (%s)", 20, de->d_name, comm);
		else
			snprintf(w->label, sizeof(w->label), "of the host (that of process 2, %s)", comm);
		snprintf(w->path, sizeof(w->path), "%s", path);
		closedir(d);
		return 0;
	}
	closedir(d);
	return -ENOENT;
}

/* Is program id still loaded (attached somewhere, or held)? true when it cannot be told. */
static bool prog_loaded(__u32 id)
{
	int fd = bpf_prog_get_fd_by_id(id);

	if (fd >= 0) {
		close(fd);
		return true;
	}
	return errno != ENOENT;
}

/*
 * A loaded XDP program that uses the instance's maps (its xrl_config), in
 * any namespace, recorded or not, other than except (the one this process
 * just detached, which libxdp may still hold until the process exits): its
 * id in *id. The last check before the pins go: a program attached where
 * no record says (a record removed by hand, an attach killed before it
 * recorded) would go on enforcing rules nothing could change any more.
 */
static bool instance_prog_loaded(const struct xrl_maps *m, __u32 except, __u32 *id)
{
	struct bpf_map_info mi = { 0 };
	__u32 len = sizeof(mi), next = 0;

	if (bpf_obj_get_info_by_fd(m->config, &mi, &len))
		return false;
	while (bpf_prog_get_next_id(next, &next) == 0) {
		struct bpf_prog_info pi = { 0 };
		__u32 maps[64], plen = sizeof(pi), i;
		int fd = bpf_prog_get_fd_by_id(next);

		if (fd < 0 || next == except) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		pi.nr_map_ids = sizeof(maps) / sizeof(maps[0]);
		pi.map_ids = (__u64)(unsigned long)maps;
		if (bpf_obj_get_info_by_fd(fd, &pi, &plen) || pi.type != BPF_PROG_TYPE_XDP) {
			close(fd);
			continue;
		}
		close(fd);
		for (i = 0; i < pi.nr_map_ids && i < sizeof(maps) / sizeof(maps[0]); i++)
			if (maps[i] == mi.id) {
				*id = next;
				return true;
			}
	}
	return false;
}

static bool prog_attached(int ifindex, __u32 prog_id, bool *multiprog, __u8 *mode);

/* A record as seen from here: its namespace, its interface and program there. */
struct rec_where {
	bool here;                 /* in the caller's namespace */
	bool reachable;            /* here, or its namespace was found and entered */
	bool exists;               /* reachable, and its ifindex names an interface there */
	bool attached;             /* its program is attached there (not reachable: still loaded) */
	char name_now[IF_NAMESIZE];
	struct ns_way way;         /* not here: where (label "inode N" when not reachable) */
};

static void rec_probe(__u32 ifindex, const struct xrl_iface *rec, __u64 here, struct rec_where *w)
{
	bool multiprog;
	int back = -1;
	__u8 mode;

	memset(w, 0, sizeof(*w));
	w->here = rec_here(rec, here);
	if (!w->here && netns_enter(rec, &back, &w->way)) {
		snprintf(w->way.label, sizeof(w->way.label), "inode %u", rec->netns_ino);
		w->attached = prog_loaded(rec->prog_id);
		return;
	}
	w->reachable = true;
	w->exists = if_indextoname(ifindex, w->name_now) != NULL;
	w->attached = w->exists && prog_attached((int)ifindex, rec->prog_id, &multiprog, &mode);
	if (back >= 0)
		netns_leave(back);
}

/* ------------------------------------------------------------ records */

/*
 * Interfaces are recorded by ifindex, which a rename keeps: the record of
 * the interface called name now is the one at its ifindex (it may be of
 * another namespace: the caller checks rec_here).
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

/*
 * A record made under name (the interface may since be renamed or gone):
 * one of this namespace first, else one of another.
 */
static bool iface_find_recorded(const struct xrl_maps *m, const char *name, __u64 here,
				__u32 *ifindex, struct xrl_iface *out)
{
	__u32 key, next;
	void *prev;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		prev = NULL;
		while (bpf_map_get_next_key(m->ifaces, prev, &next) == 0) {
			struct xrl_iface v;

			key = next;
			prev = &key;
			if (bpf_map_lookup_elem(m->ifaces, &key, &v))
				continue;
			if (!strncmp(v.name, name, sizeof(v.name)) && rec_here(&v, here) == !pass) {
				*ifindex = key;
				*out = v;
				return true;
			}
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

/*
 * Does the gre device ifindex show XDP its packets from the outer IPv4
 * header? A gre device without a unicast remote (none, or multicast) and
 * without external control (collect_md) has ipgre_header_ops, and for it
 * alone of the tunnels the kernel leaves the mac header at the outer IPv4
 * header (for ipgre_header_parse), so generic XDP gets the outer IPv4 and
 * GRE headers before the inner packet. Asked by RTM_GETLINK (its
 * IFLA_INFO_DATA); false when it cannot be told.
 */
static bool gre_shows_outer(int ifindex)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK, .nlmsg_flags = NLM_F_REQUEST },
		.ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex },
	};
	char buf[16384];
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	struct rtattr *a, *li, *d;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), len, alen, llen, dlen;
	bool is_gre = false, collect_md = false, have_remote = false;
	__u32 remote = 0;

	if (fd < 0)
		return false;
	if (send(fd, &req, sizeof(req), 0) < 0 || (len = (int)recv(fd, buf, sizeof(buf), 0)) < 0) {
		close(fd);
		return false;
	}
	close(fd);
	if (!NLMSG_OK(nh, (unsigned)len) || nh->nlmsg_type != RTM_NEWLINK)
		return false;
	alen = (int)IFLA_PAYLOAD(nh);
	for (a = IFLA_RTA(NLMSG_DATA(nh)); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		if (a->rta_type != IFLA_LINKINFO)
			continue;
		llen = (int)RTA_PAYLOAD(a);
		for (li = RTA_DATA(a); RTA_OK(li, llen); li = RTA_NEXT(li, llen)) {
			if (li->rta_type == IFLA_INFO_KIND)   /* "gre\0" (not gretap, erspan) */
				is_gre = RTA_PAYLOAD(li) >= 4 && !memcmp(RTA_DATA(li), "gre", 4);
			if (li->rta_type != IFLA_INFO_DATA)
				continue;
			dlen = (int)RTA_PAYLOAD(li);
			for (d = RTA_DATA(li); RTA_OK(d, dlen); d = RTA_NEXT(d, dlen)) {
				if (d->rta_type == IFLA_GRE_COLLECT_METADATA)
					collect_md = true;
				if (d->rta_type == IFLA_GRE_REMOTE && RTA_PAYLOAD(d) >= 4) {
					memcpy(&remote, RTA_DATA(d), 4);
					have_remote = true;
				}
			}
		}
	}
	if (!is_gre || collect_md)
		return false;
	/* no remote, or a multicast one (224.0.0.0/4) */
	return !have_remote || !remote || (ntohl(remote) >> 28) == 0xe;
}

/*
 * How the XDP program reads the packets of the device called iface (in
 * this network namespace: SIOCGIFHWADDR asks the namespace's own device,
 * where /sys may show another namespace's): 0 as Ethernet frames, 1 as
 * bare IP packets (XDP gives a device without a link-layer header the
 * packet from its network header), or -errno with what to do in err.
 */
static int iface_l3_input(const char *iface, char *errbuf, size_t errlen)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc;
	unsigned short type;

	if (fd < 0)
		return fail(errbuf, errlen, neg_errno(), "cannot read the type of %s: %s", iface,
			    strerror(errno));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	rc = ioctl(fd, SIOCGIFHWADDR, &ifr);
	close(fd);
	if (rc)
		return fail(errbuf, errlen, neg_errno(), "cannot read the type of %s: %s", iface,
			    strerror(errno));
	type = ifr.ifr_hwaddr.sa_family;
	switch (type) {
	case ARPHRD_ETHER:
	case ARPHRD_LOOPBACK:
		return 0;
	case ARPHRD_IPGRE:
		if (gre_shows_outer((int)if_nametoindex(iface)))
			return fail(errbuf, errlen, -EOPNOTSUPP,
				    "cannot attach to %s: a gre device without a unicast remote gives XDP its packets behind their outer IPv4 and GRE headers: give the tunnel a remote ('ip link set %s type gre remote ADDR ...'), or attach to the device it runs over (the rules then judge the outer header)",
				    iface, iface);
		return 1;
	case ARPHRD_NONE:      /* tun, WireGuard */
	case ARPHRD_TUNNEL:    /* ipip */
	case ARPHRD_TUNNEL6:   /* ip6tnl */
	case ARPHRD_SIT:
	case ARPHRD_IP6GRE:
	case ARPHRD_PPP:
	case ARPHRD_RAWIP:
		return 1;
	}
	return fail(errbuf, errlen, -EOPNOTSUPP,
		    "cannot attach to %s: its packets are neither Ethernet frames nor bare IP packets (device type %u, see ARPHRD_* in linux/if_arp.h): attach to the Ethernet device its traffic arrives on",
		    iface, type);
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
	int malformed = p->malformed, err, ifindex, l3, rc = -EIO;
	bool existed, multiprog = false, given_sources, replaced = false;
	__u64 here = netns_cookie_here();
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

	l3 = iface_l3_input(iface, errbuf, errlen);
	if (l3 < 0)
		return l3;

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
	/*
	 * Pins with no interface recorded whose config is not of this build's
	 * table format: an attach killed before it initialized the config and
	 * recorded its interface (format 0), or an instance another build left
	 * so. Nothing reads them: they are made afresh, unless a program still
	 * uses them (attached where no record says), which is refused.
	 */
	if (existed && xrl_iface_count(&m) == 0) {
		struct xrl_config cfg;
		__u32 id = 0;

		if (xrl_read_config(&m, &cfg) == 0 && cfg.table_format != XRL_TABLE_FORMAT) {
			if (instance_prog_loaded(&m, 0, &id)) {
				rc = fail(errbuf, errlen, -EPROTO,
					  "instance '%s' has no interface recorded, and its maps, of table format %u (this xrl's is %u), are used by XDP program id %u: detach that program (e.g. 'ip link set dev IFACE xdp off' where 'bpftool net' shows it), then attach again",
					  in->name, cfg.table_format, XRL_TABLE_FORMAT, id);
				goto out;
			}
			xrl_maps_close(&m);
			xrl_instance_unpin_maps(in);
			existed = false;
		}
	}
	if (existed) {
		struct xrl_config cfg;
		struct xrl_iface cur;
		__u32 idx, have = xrl_bucket_capacity(m.buckets_v4);

		sets4 = xrl_map_max_entries(m.buckets_v4);
		sets6 = xrl_map_max_entries(m.buckets_v6);
		if (iface_lookup(&m, iface, &idx, &cur) && rec_here(&cur, here)) {
			rc = fail(errbuf, errlen, -EEXIST, "instance '%s' is already attached to %s%s%s%s",
				  in->name, iface, strncmp(cur.name, iface, sizeof(cur.name)) ? " (attached as " : "",
				  strncmp(cur.name, iface, sizeof(cur.name)) ? cur.name : "",
				  strncmp(cur.name, iface, sizeof(cur.name)) ? ", since renamed)" : "");
			goto out;
		}
		if (iface_lookup(&m, iface, &idx, &cur)) {
			/*
			 * ifindex idx is recorded in another namespace: its record is
			 * replaced only when nothing of it is left there.
			 */
			struct rec_where w;

			rec_probe(idx, &cur, here, &w);
			if (w.attached) {
				if (w.reachable)
					rc = fail(errbuf, errlen, -EBUSY,
						  "instance '%s' is attached to %s in network namespace %s, which has ifindex %u as %s has here; an instance records one interface per ifindex: attach %s with another --instance, or detach that one first ('nsenter --net=%s xrl%s%s detach %s')",
						  in->name, w.exists ? w.name_now : cur.name, w.way.label, idx, iface, iface,
						  w.way.path, INSTANCE_ARG(in), w.exists ? w.name_now : cur.name);
				else
					rc = fail(errbuf, errlen, -EBUSY,
						  "instance '%s' records %s (ifindex %u, as %s has here) in network namespace inode %u, which xrl cannot find (no /run/netns name, no process in it), and its program (id %u) is still loaded: attach %s with another --instance",
						  in->name, cur.name, idx, iface, cur.netns_ino, cur.prog_id, iface);
				goto out;
			}
			replaced = true;
		}
		if (!replaced && xrl_iface_count(&m) >= XRL_MAX_IFACES) {
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
	skel->rodata->xrl_l3_input = (__u32)l3;
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
	rec.netns_cookie = here;
	rec.netns_ino = netns_ino_here();

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
	bool multiprog, elsewhere_gone = false;
	struct rec_where w;
	__u64 here;
	__u8 mode;
	int rc = 0, err;

	*pins_removed = false;
	errbuf[0] = 0;
	/* any layout: an instance pinned by another build can be detached */
	err = xrl_instance_open(in, XRL_LOCK_EXCLUSIVE, XRL_WAIT_FOREVER,
				XRL_OPEN_ANY_LAYOUT | XRL_OPEN_NO_IFACE, &m, why, sizeof(why));
	if (err == -ENOENT)
		return fail(errbuf, errlen, err, "instance '%s' is not attached", in->name);
	if (err)
		return fail(errbuf, errlen, err, "%s", why);
	/*
	 * The interface called IFACE now in this namespace (by its ifindex:
	 * renames are followed); else a record made under that name whose
	 * interface is gone (a deleted veth: then only the record is left to
	 * remove). A record whose interface lives on under another name is
	 * refused: detach it by the name it has now. A record of another
	 * namespace is removed only when nothing of it is left there; while
	 * its interface is there it is refused, saying how to detach there.
	 */
	here = netns_cookie_here();
	if (!iface_lookup(&m, iface, &ifindex, &rec) || !rec_here(&rec, here)) {
		__u32 idx_here = 0;
		struct xrl_iface at;
		bool clash = iface_lookup(&m, iface, &idx_here, &at);

		if (!iface_find_recorded(&m, iface, here, &ifindex, &rec)) {
			if (clash) {
				/* IFACE's ifindex here is another namespace's interface's */
				rec_probe(idx_here, &at, here, &w);
				rc = fail(errbuf, errlen, -ENODEV,
					  "instance '%s' is not attached to %s: its ifindex (%u) is recorded for %s in network namespace %s, not this one%s%s%s%s%s%s%s",
					  in->name, iface, idx_here, w.exists ? w.name_now : at.name, w.way.label,
					  w.reachable ? ": to detach that, run 'nsenter --net=" : "",
					  w.reachable ? w.way.path : "", w.reachable ? " xrl" : "",
					  w.reachable && name_instance ? " --instance " : "",
					  w.reachable && name_instance ? in->name : "",
					  w.reachable ? " detach " : "",
					  w.reachable ? (w.exists ? w.name_now : at.name) : "");
				if (w.reachable)
					strncat(errbuf, "'", errlen - strlen(errbuf) - 1);
			} else if (xrl_iface_count(&m) == 0 && !instance_prog_loaded(&m, 0, &ifindex)) {
				/* pins kept for a program that has gone since: nothing left to keep them for */
				fail(errbuf, errlen, 0,
				     "instance '%s' had no interface recorded and no program loaded any more: its pins are removed",
				     in->name);
				xrl_maps_close(&m);
				xrl_instance_unpin(in);
				*pins_removed = access(in->pin_dir, F_OK) != 0;
			} else {
				rc = fail(errbuf, errlen, -ENODEV, "instance '%s' is not attached to %s",
					  in->name, iface);
			}
			goto out;
		}
		if (rec_here(&rec, here)) {
			if ((name_now = iface_name_now(ifindex, now))) {
				rc = fail(errbuf, errlen, -ENODEV,
					  "instance '%s' is not attached to %s: the interface it attached as %s (ifindex %u) is now named %s: run 'xrl%s%s detach %s'",
					  in->name, iface, rec.name, ifindex, name_now,
					  name_instance ? " --instance " : "", name_instance ? in->name : "",
					  name_now);
				goto out;
			}
		} else {
			rec_probe(ifindex, &rec, here, &w);
			if (w.reachable && w.exists) {
				rc = fail(errbuf, errlen, -EXDEV,
					  "instance '%s' is attached to %s in network namespace %s, not this one: run 'nsenter --net=%s xrl%s%s detach %s'",
					  in->name, w.name_now, w.way.label, w.way.path,
					  name_instance ? " --instance " : "", name_instance ? in->name : "",
					  w.name_now);
				goto out;
			}
			if (!w.reachable && w.attached) {
				rc = fail(errbuf, errlen, -EXDEV,
					  "instance '%s' recorded %s (ifindex %u) in network namespace inode %u, which xrl cannot find (no /run/netns name, no process in it), and its program (id %u) is still loaded: run 'xrl detach %s' inside that namespace",
					  in->name, rec.name, ifindex, rec.netns_ino, rec.prog_id, rec.name);
				goto out;
			}
			elsewhere_gone = true;   /* its interface, or its namespace and program, are gone */
		}
	}
	name_now = elsewhere_gone ? NULL : iface_name_now(ifindex, now);
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
		__u32 other;

		if (instance_prog_loaded(&m, rec.prog_id, &other)) {
			/* detached; the pins stay for the program still running (a note, not an error) */
			fail(errbuf, errlen, 0,
			     "no interface of instance '%s' is recorded any more, but its program id %u is still loaded (attached where xrl has no record of it, see 'bpftool net' in each network namespace): the pins are kept, so its rules are the instance's again once it is attached to an interface ('xrl attach IFACE'); or unload that program ('xdp-loader unload IFACE --all') and detach again to remove them",
			     in->name, other);
			goto out;
		}
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
	__u64 here = netns_cookie_here();

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
		struct rec_where w;
		const char *ifname;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(m.ifaces, &key, &rec))
			continue;
		/*
		 * by ifindex in its namespace (looked at there when it is
		 * another): the name it has now (renames are followed), the
		 * recorded one when gone
		 */
		rec_probe(key, &rec, here, &w);
		ifname = w.exists ? w.name_now : rec.name;
		snprintf(s->name, sizeof(s->name), "%.*s", (int)sizeof(rec.name), ifname);
		s->ifindex = key;
		s->rec = rec;
		s->renamed = w.exists && strncmp(w.name_now, rec.name, sizeof(rec.name));
		s->attached = w.attached;
		s->here = w.here;
		s->reachable = w.reachable;
		if (!w.here) {
			snprintf(s->netns, sizeof(s->netns), "%s", w.way.label);
			snprintf(s->netns_path, sizeof(s->netns_path), "%s", w.way.path);
		}
		/* the tc program is looked for here only; elsewhere the record says */
		s->syn_proxy = w.attached && (rec.tc & XRL_TC_FILTER) &&
			       (!w.here || xrl_tc_present((int)key));
		st->nifaces++;
	}
	st->rules = nrules;
	st->capacity = xrl_bucket_capacity(m.buckets_v4);
	st->malformed = cfg.malformed_policy;
	xrl_maps_close(&m);
	return 0;
}
