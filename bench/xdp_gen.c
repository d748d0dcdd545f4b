// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* xdp_gen: the frame generator of bench/bench_path.sh's no-skb cases.
 *
 *   xdp_gen send --ifname IF --dst-mac MAC --dst IP
 *                (--src IP | --random FIRST N | --sweep FIRST N)
 *                --count FRAMES --secs S [--netns PATH] [--syn PORT] [--hold IF]
 *   xdp_gen gro --ifname IF on|off [--netns PATH]
 *
 * send: builds one 64-byte Ethernet/IPv4/UDP frame (60 bytes + FCS; with
 * --syn PORT a 54-byte TCP SYN to PORT instead, unpadded) from
 * IF's MAC to MAC and IP, loads bench/xdp_gen.bpf.c (embedded) with
 * out_ifindex = IF and runs it by bpf_prog_test_run_opts() with
 * BPF_F_TEST_XDP_LIVE_FRAMES (batch_size 64), in calls of at most 131072
 * frames, until FRAMES frames or S seconds, whichever comes first (a
 * signal ends it too). Every frame is redirected to IF, so it enters IF's
 * peer as an xdp_frame. The test run must happen in IF's namespace: --netns
 * joins it first (or run under nsenter --net=...). Prints one line:
 *   sent=N secs=WALL run_ns=NS_PER_FRAME
 * where run_ns is the kernel's own timer of the test runs (time on this CPU
 * while they ran, the peer's receive path included: it runs in the softirq
 * at the end of every batch; time this thread was scheduled out is not
 * counted), summed over the calls and divided by N.
 * --hold IF: attach the generator to IF (generic XDP) for the run. Each test
 * run otherwise adds the program to the kernel's XDP dispatcher and removes
 * it again, and each change waits for an RCU grace period (synchronize_rcu
 * in bpf_dispatcher_change_prog): 8-34 ms here on a loaded machine, twice
 * per call, with no frames sent; a program the dispatcher already holds
 * (attached to an interface) is not changed, so the flood has no such gaps.
 * IF must carry no traffic (every frame arriving on it would be redirected
 * to --ifname): the flood namespace's lo.
 * gro: sets IF's GRO feature (SIOCETHTOOL), which veth needs to accept
 * redirected frames when its peer has no XDP program. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdp_gen.skel.h"

#define CHUNK     131072u
#define BATCH     64u
#define FRAME_LEN 60u
#define GEN_FIXED  0
#define GEN_RANDOM 1
#define GEN_SWEEP  2

static void fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("xdp_gen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

static void usage(void)
{
	fail(2, "usage: xdp_gen send --ifname IF --dst-mac MAC --dst IP (--src IP | --random FIRST N | "
		"--sweep FIRST N) --count FRAMES --secs S [--netns PATH] [--syn PORT] [--hold IF] | xdp_gen gro --ifname IF on|off [--netns PATH]");
}

static unsigned long long num(const char *s, const char *what, unsigned long long max)
{
	char *e;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno || e == s || *e || v == 0 || v > max || s[0] == '-')
		fail(2, "%s wants a whole number 1..%llu (got '%s')", what, max, s);
	return v;
}

static uint32_t ip4(const char *s, const char *what)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		fail(2, "%s wants an IPv4 address such as 10.0.0.1 (got '%s')", what, s);
	return a.s_addr;	/* network byte order */
}

static uint16_t csum(const void *p, size_t n)
{
	const uint16_t *w = p;
	uint32_t s = 0;

	for (; n > 1; n -= 2)
		s += *w++;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void join_netns(const char *path)
{
	int fd;

	if (!path)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail(2, "cannot open network namespace %s: %s (give /run/netns/NAME)", path, strerror(errno));
	if (setns(fd, CLONE_NEWNET))
		fail(1, "cannot join network namespace %s: %s (needs root)", path, strerror(errno));
	close(fd);
}

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmd_gro(const char *ifname, const char *state)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_SGRO };
	struct ifreq ifr = { 0 };
	int fd;

	if (strcmp(state, "on") && strcmp(state, "off"))
		fail(2, "gro wants on or off (got '%s')", state);
	ev.data = !strcmp(state, "on");
	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		fail(2, "interface name too long: '%s'", ifname);
	strcpy(ifr.ifr_name, ifname);
	ifr.ifr_data = (void *)&ev;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || ioctl(fd, SIOCETHTOOL, &ifr))
		fail(1, "cannot set GRO %s on %s: %s (is it in this namespace?)", state, ifname, strerror(errno));
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *ifname = NULL, *netns = NULL, *dmac = NULL, *dst = NULL, *src = NULL, *first = NULL, *n = NULL;
	const char *hold = NULL;
	int hold_ifindex = 0;
	unsigned long long count = 0, secs = 0, sent = 0, kern_ns = 0, syn_port = 0;
	unsigned int mode = GEN_FIXED, m[6];
	unsigned char frame[FRAME_LEN] = { 0 };
	struct ethhdr *eth = (void *)frame;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	struct xdp_gen_bpf *skel;
	struct ifreq ifr = { 0 };
	double t0, t1;
	int i, fd, ifindex, err;

	if (argc < 2)
		usage();
	for (i = 2; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[1], "gro") && strncmp(o, "--", 2)) {	/* on|off, checked by cmd_gro */
			src = o;
			continue;
		}
		if (!v)
			fail(2, "option '%s' needs a value", o);
		if (!strcmp(o, "--ifname")) ifname = v;
		else if (!strcmp(o, "--netns")) netns = v;
		else if (!strcmp(o, "--hold")) hold = v;
		else if (!strcmp(o, "--dst-mac")) dmac = v;
		else if (!strcmp(o, "--dst")) dst = v;
		else if (!strcmp(o, "--src")) src = v;
		else if (!strcmp(o, "--count")) count = num(v, "--count", 1ULL << 40);
		else if (!strcmp(o, "--secs")) secs = num(v, "--secs", 3600);
		else if (!strcmp(o, "--syn")) syn_port = num(v, "--syn", 65535);
		else if (!strcmp(o, "--random") || !strcmp(o, "--sweep")) {
			if (i + 2 >= argc)
				fail(2, "%s needs FIRST and N", o);
			mode = !strcmp(o, "--random") ? GEN_RANDOM : GEN_SWEEP;
			first = v;
			n = argv[i + 2];
			i++;
		} else
			fail(2, "unknown option '%s'", o);
		i++;
	}
	if (!ifname)
		usage();
	join_netns(netns);
	if (!strcmp(argv[1], "gro")) {
		if (!src)
			usage();
		return cmd_gro(ifname, src);
	}
	if (strcmp(argv[1], "send") || !dmac || !dst || !count || !secs || (!src) == (mode == GEN_FIXED))
		usage();

	/* the frame: like bench/bench_path.sh's trafgen frames */
	if (sscanf(dmac, "%x:%x:%x:%x:%x:%x%*c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
		fail(2, "--dst-mac wants a MAC such as 02:00:00:00:00:01 (got '%s')", dmac);
	for (i = 0; i < 6; i++)
		eth->h_dest[i] = (unsigned char)m[i];
	ifindex = (int)if_nametoindex(ifname);
	if (!ifindex)
		fail(2, "no interface '%s' in this network namespace (give --netns /run/netns/NAME)", ifname);
	strcpy(ifr.ifr_name, ifname);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr))
		fail(1, "cannot read the MAC of %s: %s", ifname, strerror(errno));
	close(fd);
	memcpy(eth->h_source, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(FRAME_LEN - sizeof(*eth));
	ip->frag_off = htons(0x4000);	/* DF */
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = mode == GEN_FIXED ? ip4(src, "--src") : ip4(first, "FIRST");
	ip->daddr = ip4(dst, "--dst");
	if (syn_port) {
		/* a SYN: 20-byte TCP header, no payload, sent without the 6 bytes of padding */
		struct tcphdr *th = (void *)(ip + 1);
		unsigned char ph[12 + sizeof(*th)];	/* pseudo-header and TCP header */
		uint32_t sum = 0;
		size_t k;

		ip->protocol = IPPROTO_TCP;
		ip->tot_len = htons(sizeof(*ip) + sizeof(*th));
		th->source = htons(40000);
		th->dest = htons((uint16_t)syn_port);
		th->seq = htonl(0x12345678);
		th->doff = 5;
		th->syn = 1;
		th->window = htons(64240);
		/* summed byte by byte, in network order: no type punning of the buffer */
		memcpy(ph, &ip->saddr, 4);
		memcpy(ph + 4, &ip->daddr, 4);
		ph[8] = 0;
		ph[9] = IPPROTO_TCP;
		ph[10] = 0;
		ph[11] = (unsigned char)sizeof(*th);
		memcpy(ph + 12, th, sizeof(*th));
		for (k = 0; k < sizeof(ph); k += 2)
			sum += (uint32_t)ph[k] << 8 | ph[k + 1];
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		th->check = htons((uint16_t)~sum);
	} else {
		udp->source = htons(40000);
		udp->dest = htons(9);
		udp->len = htons(FRAME_LEN - sizeof(*eth) - sizeof(*ip));
		memset(udp + 1, 0x78, FRAME_LEN - sizeof(*eth) - sizeof(*ip) - sizeof(*udp));
	}
	ip->check = csum(ip, sizeof(*ip));

	skel = xdp_gen_bpf__open();
	if (!skel)
		fail(1, "cannot open the embedded BPF object: %s", strerror(errno));
	skel->rodata->out_ifindex = (uint32_t)ifindex;
	skel->rodata->gen_mode = mode;
	skel->rodata->l4_tcp = syn_port != 0;
	if (syn_port)
		memcpy(skel->bss->syn_tmpl, frame, sizeof(skel->bss->syn_tmpl));
	if (mode != GEN_FIXED) {
		skel->rodata->src_lo = ntohl(ip->saddr);
		skel->rodata->src_n = (uint32_t)num(n, "N", 1U << 24);
	}
	libbpf_set_print(NULL);
	err = xdp_gen_bpf__load(skel);
	if (err)
		fail(1, "cannot load the generator: %s (needs root and BPF)", strerror(-err));

	if (hold) {
		hold_ifindex = (int)if_nametoindex(hold);
		if (!hold_ifindex)
			fail(2, "--hold: no interface '%s' in this network namespace", hold);
		err = bpf_xdp_attach(hold_ifindex, bpf_program__fd(skel->progs.xdp_gen),
				     XDP_FLAGS_SKB_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
		if (err)
			fail(1, "--hold: cannot attach the generator to %s: %s (an XDP program there already?)",
			     hold, strerror(-err));
	}
	t0 = now(CLOCK_MONOTONIC);
	while (sent < count && now(CLOCK_MONOTONIC) - t0 < (double)secs) {
		unsigned long long left = count - sent;
		LIBBPF_OPTS(bpf_test_run_opts, opts,
			    .data_in = frame,
			    /* a SYN is not padded: GRO would checksum the padding as TCP payload */
			    .data_size_in = syn_port ? sizeof(*eth) + sizeof(*ip) + sizeof(struct tcphdr) : sizeof(frame),
			    .repeat = left < CHUNK ? (unsigned int)left : CHUNK,
			    .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
			    .batch_size = BATCH);

		err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xdp_gen), &opts);
		if (err) {
			if (errno == EINTR)
				break;
			fail(1, "test run failed: %s (LIVE_FRAMES needs kernel >= 5.18)", strerror(errno));
		}
		sent += opts.repeat;
		kern_ns += (unsigned long long)opts.duration * opts.repeat;
	}
	t1 = now(CLOCK_MONOTONIC);
	if (hold_ifindex)
		bpf_xdp_detach(hold_ifindex, XDP_FLAGS_SKB_MODE, NULL);
	xdp_gen_bpf__destroy(skel);
	printf("sent=%llu secs=%.6f run_ns=%.1f\n", sent, t1 - t0, sent ? (double)kern_ns / sent : 0.0);
	return sent ? 0 : 1;
}
