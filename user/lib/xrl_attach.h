/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Attach, detach, status: loading the XDP program with its maps pinned per
 * instance, and attaching it through libxdp (inside its multi-program
 * dispatcher when the kernel allows, alone otherwise). Interfaces are
 * recorded by ifindex, which a rename keeps, with their network namespace
 * (an ifindex means an interface only within one): from another namespace
 * they are looked at there (setns(2), as root), never taken for this
 * namespace's interface of the same ifindex. Prints nothing: a failure
 * returns -errno with what was wrong and what to do in the caller's buffer
 * (XRL_INSTANCE_ERRLEN is enough). The object needs -lxdp (LIBS_XRL).
 */
#ifndef XRL_ATTACH_H
#define XRL_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <net/if.h>
#include <xdp/libxdp.h>
#include "xrl_instance.h"

struct xrl_attach_params {
	const char *iface;
	enum xdp_attach_mode mode;   /* XDP_MODE_UNSPEC: native when the driver has XDP */
	__u64 max_sources;           /* 0: the instance's, or XRL_DEFAULT_SOURCES */
	int malformed;               /* XRL_MALFORMED_*; -1: the instance's, or pass */
};

struct xrl_attach_result {
	__u32 prog_id;
	__u8 mode;                   /* the mode libxdp attached in (enum xdp_attach_mode) */
	bool multiprog;              /* inside libxdp's dispatcher */
	__u64 max_sources;           /* the instance's buckets per address family */
	bool refused;                /* on failure: the operator's input was refused (bad input) */
};

/*
 * Attach instance in (locked exclusive meanwhile; created and pinned when
 * it is not yet) to p->iface. 0 with r filled, or -errno with the reason
 * in err and nothing changed; r->refused when options given differ from
 * the instance's or ask for more memory than there is.
 */
int xrl_attach(struct xrl_instance *in, const struct xrl_attach_params *p,
	       struct xrl_attach_result *r, char *err, size_t errlen);

/*
 * Detach instance in from iface: the interface called iface now in this
 * network namespace, or a record made under that name whose interface is
 * gone. A record of another namespace whose interface is still there (or
 * whose program is still loaded when its namespace cannot be found) is
 * refused, saying how to run detach there. The pins go with the last
 * interface (*pins_removed), unless a program of the instance is still
 * loaded (attached where no record says): then 0 with a note for the
 * operator in err, the pins kept. name_instance: the operator named the
 * instance (--instance), so the hint of a renamed interface does too.
 * 0 (err empty, or a note), or -errno with the reason in err.
 */
int xrl_detach(struct xrl_instance *in, const char *iface, bool name_instance,
	       bool *pins_removed, char *err, size_t errlen);

/* One interface of an instance as status reports it. */
struct xrl_status_iface {
	char name[IF_NAMESIZE];      /* its name now (renames are followed), the recorded one when gone */
	__u32 ifindex;
	struct xrl_iface rec;        /* as recorded at attach: rec.name is the name attached as */
	bool renamed;                /* its name now is not rec.name */
	bool attached;               /* the program is attached there now (elsewhere and not
					reachable: its program is still loaded) */
	/* the network namespace it is in (rec.netns_*) */
	bool here;                   /* the caller's */
	bool reachable;              /* the caller's, or another found and looked into */
	char netns[128];             /* another: "NAME" (/run/netns/NAME), "of process PID (COMM)", "inode N" */
	char netns_path[160];        /* another, reachable: what nsenter --net= takes to enter it */
	bool syn_proxy;              /* --syn-proxy's tc program is there (XRL_TC_PATH) */
};

/* What status reports of an instance. */
struct xrl_status {
	struct xrl_status_iface ifaces[XRL_MAX_IFACES];
	int nifaces;
	int rules;                   /* rules in force */
	long sources;                /* tracked sources of the rules in force, -1 when unknown */
	__u32 capacity;              /* buckets per address family */
	__u32 malformed;             /* XRL_MALFORMED_* */
};

/*
 * Read instance name (XRL_PIN_ROOT/name) without locking it. 0 with st
 * filled; -EPROTO: pinned by another build, the reason in err; another
 * -errno: no instance there to report. Not thread-safe (static buffers).
 */
int xrl_status_read(const char *name, struct xrl_status *st, char *err, size_t errlen);

#endif /* XRL_ATTACH_H */
