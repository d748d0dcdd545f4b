/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers for tests and the bench that run the real XDP object through
 * BPF_PROG_TEST_RUN: load it, install rules with the controller's own code,
 * set the test clock, and build crafted packets.
 */
#ifndef XRL_TESTLIB_H
#define XRL_TESTLIB_H

#include <stddef.h>
#include <stdint.h>
#include "xrl_common.h"
#include "xrl_maps.h"

struct xrl_test_bpf;

struct xrl_tl {
	struct xrl_test_bpf *skel;
	struct xrl_maps maps;
	int prog_fd;
	int clock_fd;
};

/* Load the test-clock object. 0 or -errno (message printed). */
int xrl_tl_open(struct xrl_tl *t, __u32 max_sources, __u32 malformed_policy);
void xrl_tl_close(struct xrl_tl *t);
void xrl_tl_set_clock(struct xrl_tl *t, __u64 ns);
/* How far the jiffy clock lags the test clock (0, the default: not at all). */
void xrl_tl_set_lag(struct xrl_tl *t, __u64 ns);
/* xrl_config.rt_off_ns: where UTC is on the test clock (--algo windows). Rule changes reset it. */
void xrl_tl_set_rt_off(struct xrl_tl *t, __u64 ns);
/*
 * xrl_config.hash_seed, the set hash's key (test only: an instance gets a
 * random one when it is made). Set it before the first packet.
 */
void xrl_tl_set_seed(struct xrl_tl *t, __u64 seed);
/* The seed in force: what a test that crafts sources for one set hashes with. */
__u64 xrl_tl_seed(struct xrl_tl *t);
/* Replace the rule set with rule-file lines (NULL-terminated). 0 or -1 (printed). */
int xrl_tl_rules(struct xrl_tl *t, const char *const *lines);
/* Rule id of the rule whose rule-file text starts with match, or -1. */
int xrl_tl_rule_id(struct xrl_tl *t, const char *prefix_and_match);
/* The same two on the maps of any object (the production one too). */
int xrl_tl_maps_rules(const struct xrl_maps *m, const char *const *lines);
int xrl_tl_maps_rule_id(const struct xrl_maps *m, const char *prefix_and_match);

/* Run one packet repeat times. Returns XDP verdict of the last run, or -errno. */
int xrl_tl_run(int prog_fd, const void *pkt, size_t len, __u32 repeat, __u32 *duration_ns);

/* What a crafted packet looks like. Zero fields mean "the usual". */
struct xrl_pkt_spec {
	int family;               /* 4 or 6 */
	const char *src, *dst;    /* addresses as text */
	__u8 proto;               /* IPPROTO_UDP if 0 */
	__u16 sport, dport;
	__u8 tcp_flags;           /* for TCP */
	int vlans;                /* 0, 1 (802.1Q), 2 (802.1ad + 802.1Q) or more (802.1ad + N-1 802.1Q) */
	int ipv4_opt_words;       /* IPv4 options, in 4-byte words (0..10) */
	int ipv4_frag_offset;     /* in 8-byte units: >0 makes a later fragment */
	int ipv4_more_frags;
	const __u8 *ext_hdrs;     /* IPv6 extension headers in order (IPPROTO_HOPOPTS, ...) */
	int n_ext_hdrs;
	int ipv6_frag_offset;     /* for a fragment header in ext_hdrs */
	int payload;              /* bytes after the L4 header */
	__u16 ethertype;          /* non-IP frame when set (e.g. ETH_P_ARP) */
};

/* Build a frame into buf; returns its length. Offsets of each layer's start in *l3 and *l4. */
size_t xrl_pkt_build(__u8 *buf, size_t cap, const struct xrl_pkt_spec *s, size_t *l3, size_t *l4);

#endif /* XRL_TESTLIB_H */
