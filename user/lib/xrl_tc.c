// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The SYN proxy's tc program: attach and detach (xrl_tc.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "xrl_common.h"
#include "xrl_tc.h"
#include "xrl_tc.skel.h"

/* xrl's filter: one per interface, found again by these */
#define XRL_TC_HANDLE 0x78726c   /* "xrl" */
#define XRL_TC_PRIO   0x7872

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

int xrl_tc_attach(int ifindex, __u8 *state, char *err, size_t errlen)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XRL_TC_HANDLE, .priority = XRL_TC_PRIO,
			    .flags = BPF_TC_F_REPLACE);
	struct xrl_tc_bpf *skel;
	int rc;

	*state = 0;
	skel = xrl_tc_bpf__open_and_load();
	if (!skel) {
		rc = errno ? -errno : -EINVAL;
		return fail(err, errlen, rc,
			    "cannot load the SYN proxy's tc program: %s (it needs Linux 6.9 or later, for bpf_sk_assign_tcp_reqsk)",
			    strerror(-rc));
	}
	rc = bpf_tc_hook_create(&hook);
	if (rc == 0)
		*state |= XRL_TC_QDISC;
	else if (rc != -EEXIST) {
		xrl_tc_bpf__destroy(skel);
		return fail(err, errlen, rc, "cannot add the clsact qdisc for the SYN proxy: %s",
			    strerror(-rc));
	}
	opts.prog_fd = bpf_program__fd(skel->progs.xrl_tc);
	rc = bpf_tc_attach(&hook, &opts);
	xrl_tc_bpf__destroy(skel);   /* the filter holds the program */
	if (rc) {
		if (*state & XRL_TC_QDISC) {
			hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
			bpf_tc_hook_destroy(&hook);
		}
		*state = 0;
		return fail(err, errlen, rc, "cannot attach the SYN proxy's tc filter: %s",
			    strerror(-rc));
	}
	*state |= XRL_TC_FILTER;
	return 0;
}

int xrl_tc_detach(int ifindex, __u8 state)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XRL_TC_HANDLE, .priority = XRL_TC_PRIO);
	int rc = 0;

	if (state & XRL_TC_FILTER) {
		rc = bpf_tc_detach(&hook, &opts);
		if (rc == -ENOENT)
			rc = 0;   /* gone with the qdisc, or removed by hand */
	}
	if (state & XRL_TC_QDISC) {
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		bpf_tc_hook_destroy(&hook);
	}
	return rc;
}

int xrl_tc_syncookies(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_syncookies", "re");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

bool xrl_tc_present(int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XRL_TC_HANDLE, .priority = XRL_TC_PRIO);

	return bpf_tc_query(&hook, &opts) == 0;
}
