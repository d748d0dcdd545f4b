// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xrl_testlib.h"
#include "xrl_rule.h"
#include "xrl_test.skel.h"
#include "xrl_table.h"

int xrl_tl_open(struct xrl_tl *t, __u32 max_sources, __u32 malformed_policy)
{
	int err;

	memset(t, 0, sizeof(*t));
	t->skel = xrl_test_bpf__open();
	if (!t->skel) {
		fprintf(stderr, "cannot open the test BPF object: %s\n", strerror(errno));
		return -errno;
	}
	t->skel->rodata->xrl_malformed_policy = malformed_policy;
	if (max_sources) {
		bpf_map__set_max_entries(t->skel->maps.xrl_buckets_v4,
					 xrl_table_sets(max_sources, XRL_WAYS4));
		bpf_map__set_max_entries(t->skel->maps.xrl_buckets_v6,
					 xrl_table_sets(max_sources, XRL_WAYS6));
	}
	err = xrl_test_bpf__load(t->skel);
	if (err) {
		fprintf(stderr, "cannot load the test BPF object (root and BPF needed): %s\n",
			strerror(-err));
		xrl_test_bpf__destroy(t->skel);
		t->skel = NULL;
		return err;
	}
	xrl_maps_from_obj(t->skel->obj, &t->maps);
	t->prog_fd = bpf_program__fd(t->skel->progs.xrl_xdp);
	t->clock_fd = bpf_map__fd(t->skel->maps.xrl_test_clock);
	err = xrl_config_init(&t->maps, malformed_policy);
	if (err) {
		fprintf(stderr, "cannot initialize the test object's config: %s\n", strerror(-err));
		xrl_tl_close(t);
		return err;
	}
	return 0;
}

void xrl_tl_close(struct xrl_tl *t)
{
	if (t->skel)
		xrl_test_bpf__destroy(t->skel);
	t->skel = NULL;
}

void xrl_tl_set_clock(struct xrl_tl *t, __u64 ns)
{
	__u32 k = 0;

	bpf_map_update_elem(t->clock_fd, &k, &ns, BPF_ANY);
}

void xrl_tl_set_lag(struct xrl_tl *t, __u64 ns)
{
	__u32 k = 1;

	bpf_map_update_elem(t->clock_fd, &k, &ns, BPF_ANY);
}

void xrl_tl_set_rt_off(struct xrl_tl *t, __u64 ns)
{
	xrl_config_set_rt_off(&t->maps, ns);
}

void xrl_tl_set_seed(struct xrl_tl *t, __u64 seed)
{
	struct xrl_config cfg;

	if (xrl_read_config(&t->maps, &cfg) == 0) {
		cfg.hash_seed = seed;
		xrl_write_config(&t->maps, &cfg);
	}
}

__u64 xrl_tl_seed(struct xrl_tl *t)
{
	return xrl_hash_seed(&t->maps);
}

int xrl_tl_maps_rules(const struct xrl_maps *m, const char *const *lines)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	char err[XRL_ERRLEN];
	int n = 0, i, r;

	for (i = 0; lines[i]; i++) {
		r = xrl_rule_parse_line(lines[i], &defs[n], err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "rule '%s': %s\n", lines[i], err);
			return -1;
		}
		n += r;
	}
	if (xrl_ruleset_apply(m, defs, n, err, sizeof(err))) {
		fprintf(stderr, "apply: %s\n", err);
		return -1;
	}
	return 0;
}

int xrl_tl_rules(struct xrl_tl *t, const char *const *lines)
{
	return xrl_tl_maps_rules(&t->maps, lines);
}

int xrl_tl_maps_rule_id(const struct xrl_maps *m, const char *match)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	char text[256];
	int n, i;

	if (xrl_ruleset_read(m, defs, ids, &n))
		return -1;
	for (i = 0; i < n; i++) {
		xrl_rule_format(&defs[i], text, sizeof(text));
		if (!strncmp(text, match, strlen(match)))
			return (int)ids[i];
	}
	return -1;
}

int xrl_tl_rule_id(struct xrl_tl *t, const char *match)
{
	return xrl_tl_maps_rule_id(&t->maps, match);
}

int xrl_tl_run(int prog_fd, const void *pkt, size_t len, __u32 repeat, __u32 *duration_ns)
{
	__u8 out[2048];
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = pkt,
		.data_size_in = (__u32)len,
		.data_out = out,
		.data_size_out = sizeof(out),
		.repeat = repeat,
	);
	int err = bpf_prog_test_run_opts(prog_fd, &opts);

	if (err)
		return -errno;
	if (duration_ns)
		*duration_ns = opts.duration;
	return (int)opts.retval;
}

static __u16 csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static __u16 ip_csum(const void *p, size_t len)
{
	const __u8 *b = p;
	__u32 sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		sum += (__u32)(b[len - 1] << 8);
	return htons(csum_fold(sum));
}

static void put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

size_t xrl_pkt_build(__u8 *buf, size_t cap, const struct xrl_pkt_spec *s, size_t *l3_out,
		     size_t *l4_out)
{
	static const __u8 dmac[6] = { 0x02, 0, 0, 0, 0, 0x02 }, smac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	__u8 proto = s->proto ? s->proto : IPPROTO_UDP;
	size_t off = 12, l3, l4, l4len, end;
	int family = s->family ? s->family : 4, i;

	memset(buf, 0, cap);
	memcpy(buf, dmac, 6);
	memcpy(buf + 6, smac, 6);
	if (s->vlans >= 2) {
		put16(buf + off, ETH_P_8021AD);
		put16(buf + off + 2, 100);
		off += 4;
	}
	for (i = s->vlans >= 2 ? 1 : 0; i < s->vlans; i++) {   /* then 802.1Q tags */
		put16(buf + off, ETH_P_8021Q);
		put16(buf + off + 2, (__u16)(200 + i - (s->vlans >= 2)));
		off += 4;
	}
	if (s->ethertype) {
		put16(buf + off, s->ethertype);
		off += 2;
		memset(buf + off, 0xab, 46);
		if (l3_out)
			*l3_out = off;
		if (l4_out)
			*l4_out = off;
		return off + 46;
	}
	put16(buf + off, family == 4 ? ETH_P_IP : ETH_P_IPV6);
	l3 = off + 2;

	switch (proto) {
	case IPPROTO_TCP: l4len = 20; break;
	case IPPROTO_UDP: l4len = 8; break;
	default: l4len = 8; break;   /* ICMP, ICMPv6 and others */
	}

	if (family == 4) {
		size_t hlen = 20 + 4 * (size_t)s->ipv4_opt_words;
		int later = s->ipv4_frag_offset > 0;

		l4 = l3 + hlen;
		end = l4 + (later ? 0 : l4len) + (size_t)s->payload;
		buf[l3] = 0x40 | (__u8)(hlen / 4);
		put16(buf + l3 + 2, (__u16)(end - l3));
		put16(buf + l3 + 6, (__u16)((s->ipv4_more_frags ? 0x2000 : 0) | s->ipv4_frag_offset));
		buf[l3 + 8] = 64;
		buf[l3 + 9] = proto;
		inet_pton(AF_INET, s->src ? s->src : "192.0.2.1", buf + l3 + 12);
		inet_pton(AF_INET, s->dst ? s->dst : "198.51.100.1", buf + l3 + 16);
		for (i = 0; i < s->ipv4_opt_words; i++)
			buf[l3 + 20 + 4 * i] = 1;   /* NOP options */
		{
			__u16 c = ip_csum(buf + l3, hlen);

			memcpy(buf + l3 + 10, &c, 2);
		}
		if (later) {
			if (l3_out)
				*l3_out = l3;
			if (l4_out)
				*l4_out = l4;
			return end;
		}
	} else {
		__u8 next = proto;
		size_t p = l3 + 40;

		/* extension headers: each 8 bytes, chained in the given order */
		for (i = 0; i < s->n_ext_hdrs; i++)
			p += 8;
		l4 = p;
		end = l4 + l4len + (size_t)s->payload;
		buf[l3] = 0x60;
		put16(buf + l3 + 4, (__u16)(end - l3 - 40));
		buf[l3 + 7] = 64;
		inet_pton(AF_INET6, s->src ? s->src : "2001:db8::1", buf + l3 + 8);
		inet_pton(AF_INET6, s->dst ? s->dst : "2001:db8:ffff::1", buf + l3 + 24);
		buf[l3 + 6] = s->n_ext_hdrs ? s->ext_hdrs[0] : proto;
		p = l3 + 40;
		for (i = 0; i < s->n_ext_hdrs; i++, p += 8) {
			next = i + 1 < s->n_ext_hdrs ? s->ext_hdrs[i + 1] : proto;
			buf[p] = next;
			if (s->ext_hdrs[i] == IPPROTO_FRAGMENT)
				put16(buf + p + 2, (__u16)(s->ipv6_frag_offset << 3));
			else
				buf[p + 1] = 0;   /* (0 + 1) * 8 bytes */
		}
	}

	if (proto == IPPROTO_TCP) {
		put16(buf + l4, s->sport ? s->sport : 40000);
		put16(buf + l4 + 2, s->dport ? s->dport : 80);
		buf[l4 + 12] = 5 << 4;
		buf[l4 + 13] = s->tcp_flags ? s->tcp_flags : 0x10;
	} else if (proto == IPPROTO_UDP) {
		put16(buf + l4, s->sport ? s->sport : 40000);
		put16(buf + l4 + 2, s->dport ? s->dport : 53);
		put16(buf + l4 + 4, (__u16)(l4len + s->payload));
	} else {
		buf[l4] = 8;   /* echo request */
	}
	if (l3_out)
		*l3_out = l3;
	if (l4_out)
		*l4_out = l4;
	return end < 60 ? 60 : end;
}
