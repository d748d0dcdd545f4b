/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The SYN proxy's completion program (bpf/xrl_tc.bpf.c) at tc ingress:
 * attached beside the XDP program by xrl attach, removed by xrl detach
 * (the clsact qdisc too when xrl made it). Prints nothing.
 */
#ifndef XRL_TC_H
#define XRL_TC_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* What xrl status names as the --syn-proxy completion path. */
#define XRL_TC_PATH "tc ingress, bpf_sk_assign_tcp_reqsk (no conntrack)"

/*
 * Attach the program at ifindex's tc ingress (making the clsact qdisc when
 * there is none): 0 with *state (XRL_TC_*), or -errno with the reason in err.
 */
int xrl_tc_attach(int ifindex, __u8 *state, char *err, size_t errlen);

/* Undo what xrl_tc_attach did at ifindex (state as it returned it). 0 or -errno. */
int xrl_tc_detach(int ifindex, __u8 state);

/*
 * net.ipv4.tcp_syncookies of the calling thread's network namespace, or -1
 * when unreadable: the kernel takes the request socket the tc program
 * gives it only when it is not 0 (1, the default, or 2).
 */
int xrl_tc_syncookies(void);

/* Is xrl's filter at ifindex's tc ingress now? */
bool xrl_tc_present(int ifindex);

#endif /* XRL_TC_H */
