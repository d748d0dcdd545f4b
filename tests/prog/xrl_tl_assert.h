/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The cmocka side of xrl_testlib.h, for the tests in tests/prog: the same
 * steps (install rules, run frames, read counters) as calls that assert
 * they worked and return what a test checks. xrl_tl_* return errors (the
 * bench uses them too); tl_* fail the running test instead. Include after
 * <cmocka.h>.
 */
#ifndef XRL_TL_ASSERT_H
#define XRL_TL_ASSERT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <linux/bpf.h>

#include "xrl_testlib.h"
#include "xrl_maps.h"

/* Replace the rule set with rule-file lines (NULL-terminated). */
static inline void tl_rules(struct xrl_tl *t, const char *const *lines)
{
	assert_int_equal(xrl_tl_rules(t, lines), 0);
}

/*
 * A fresh object of max_sources buckets (--malformed pass), lines as its
 * rules, the test clock at ns.
 */
static inline void tl_start(struct xrl_tl *t, __u32 max_sources, const char *const *lines,
			    __u64 ns)
{
	assert_int_equal(xrl_tl_open(t, max_sources, XRL_MALFORMED_PASS), 0);
	tl_rules(t, lines);
	xrl_tl_set_clock(t, ns);
}

/* The group setup of the tests that run one frame under both --malformed policies. */
static inline int tl_open_pair(struct xrl_tl *pass, struct xrl_tl *drop)
{
	if (xrl_tl_open(pass, 4096, XRL_MALFORMED_PASS))
		return -1;
	if (xrl_tl_open(drop, 4096, XRL_MALFORMED_DROP))
		return -1;
	return 0;
}

static inline void tl_close_pair(struct xrl_tl *pass, struct xrl_tl *drop)
{
	xrl_tl_close(pass);
	xrl_tl_close(drop);
}

/* One run of a frame: its XDP verdict. */
static inline int tl_run(struct xrl_tl *t, const void *pkt, size_t len)
{
	int v = xrl_tl_run(t->prog_fd, pkt, len, 1, NULL);

	assert_true(v >= 0);
	return v;
}

/* One run of the frame s describes: its XDP verdict. */
static inline int tl_send(struct xrl_tl *t, const struct xrl_pkt_spec *s)
{
	__u8 buf[2048];
	size_t len = xrl_pkt_build(buf, sizeof(buf), s, NULL, NULL);

	return tl_run(t, buf, len);
}

/* n runs of the frame s describes, one at a time: how many passed. */
static inline int tl_passed(struct xrl_tl *t, const struct xrl_pkt_spec *s, int n)
{
	int pass = 0, i;

	for (i = 0; i < n; i++)
		pass += tl_send(t, s) == XDP_PASS;
	return pass;
}

/* The frame s describes, run n times in one BPF_PROG_TEST_RUN: the last verdict must be verdict. */
static inline void tl_send_n(struct xrl_tl *t, const struct xrl_pkt_spec *s, __u32 n, int verdict)
{
	__u8 buf[2048];
	size_t len = xrl_pkt_build(buf, sizeof(buf), s, NULL, NULL);

	assert_int_equal(xrl_tl_run(t->prog_fd, buf, len, n, NULL), verdict);
}

static inline struct xrl_global_stats tl_maps_gstats(const struct xrl_maps *m)
{
	struct xrl_global_stats g;

	assert_int_equal(xrl_read_global(m, &g), 0);
	return g;
}

static inline struct xrl_global_stats tl_gstats(struct xrl_tl *t)
{
	return tl_maps_gstats(&t->maps);
}

/* The counters of the rule whose rule-file text starts with rule, on the maps of any object. */
static inline struct xrl_rule_stats tl_maps_rstats(const struct xrl_maps *m, const char *rule)
{
	struct xrl_rule_stats s;
	int id = xrl_tl_maps_rule_id(m, rule);

	assert_true(id >= 0);
	assert_int_equal(xrl_read_rule_stats(m, (__u32)id, &s), 0);
	return s;
}

static inline struct xrl_rule_stats tl_rstats(struct xrl_tl *t, const char *rule)
{
	return tl_maps_rstats(&t->maps, rule);
}

#endif /* XRL_TL_ASSERT_H */
