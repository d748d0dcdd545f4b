// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* newconn_probe: the timeline behind bench/bench_newconn.sh's --probe.
 *
 *   newconn_probe --pins DIR --rule ID --secs S [--cap NAME:NETNS:IF:in|out]...
 *
 * For S seconds, every millisecond: xrl's packet counter (xrl_stats.packets,
 * summed over CPUs: the flood's frames that reached XDP), the rule's
 * new_refused and created, and the budget's word (xrl_newsrc[ID]: tat,
 * last_ns), the --total tokens each CPU holds; and, on each --cap (a packet socket opened in NETNS on IF), the
 * TCP SYNs (no ACK) that arrive (in) or leave (out), with the kernel's
 * receive timestamp. A capture on a receiving end sees only what XDP
 * passed. Output, one line each, times in ns of CLOCK_MONOTONIC (packet
 * timestamps converted from CLOCK_REALTIME by the offset read at start):
 *   S T PACKETS NEW_REFUSED CREATED TAT LAST_NS PACKETS_CPU0.. TOTAL_TOKENS_CPU0..
 * (TOTAL_TOKENS: the --total tokens each CPU holds in xrl_total_local[ID])
 *   P T NAME SRC SPORT DST DPORT SEQ
 * Not a test; bounded by S (at most 60); INT or TERM end it early. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xrl_common.h"

#define MAX_CAPS 4

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct cap {
	char name[16];
	int fd;
	int out;
};

static uint64_t ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "newconn_probe: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* tcp[13] & 0x12 == 0x02 on an Ethernet/IPv4 frame with a 20-byte IP header or more */
static struct sock_filter syn_filter[] = {
	{ 0x28, 0, 0, 12 },          /* ldh [12] */
	{ 0x15, 0, 8, ETH_P_IP },    /* ip? */
	{ 0x30, 0, 0, 23 },          /* ldb [23] */
	{ 0x15, 0, 6, 6 },           /* tcp? */
	{ 0xb1, 0, 0, 14 },          /* ldxb 4*([14]&0xf) */
	{ 0x50, 0, 0, 27 },          /* ldb [x+27]: 14 + 13 */
	{ 0x54, 0, 0, 0x12 },        /* and #0x12 */
	{ 0x15, 0, 2, 0x02 },        /* == SYN */
	{ 0x06, 0, 0, 0x40000 },     /* accept */
	{ 0x06, 0, 0, 0 },
	{ 0x06, 0, 0, 0 },           /* reject */
};

static void open_cap(struct cap *c, const char *spec)
{
	char buf[256], *netns, *ifname, *dir, path[300];
	struct sock_fprog prog = { .len = sizeof(syn_filter) / sizeof(syn_filter[0]), .filter = syn_filter };
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	int self, nsfd, one = 1;

	snprintf(buf, sizeof(buf), "%s", spec);
	netns = strchr(buf, ':');
	ifname = netns ? strchr(netns + 1, ':') : NULL;
	dir = ifname ? strchr(ifname + 1, ':') : NULL;
	if (!dir) {
		fprintf(stderr, "newconn_probe: --cap wants NAME:NETNS:IF:in|out (got '%s')\n", spec);
		exit(2);
	}
	*netns++ = 0;
	*ifname++ = 0;
	*dir++ = 0;
	if (strlen(buf) >= sizeof(c->name)) {
		fprintf(stderr, "newconn_probe: --cap NAME: at most %zu characters\n", sizeof(c->name) - 1);
		exit(2);
	}
	memcpy(c->name, buf, strlen(buf) + 1);
	c->out = !strcmp(dir, "out");
	snprintf(path, sizeof(path), "/run/netns/%s", netns);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || nsfd < 0 || setns(nsfd, CLONE_NEWNET))
		die(path);
	c->fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (c->fd < 0)
		die("socket");
	sll.sll_ifindex = (int)if_nametoindex(ifname);
	if (!sll.sll_ifindex)
		die(ifname);
	if (setsockopt(c->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ||
	    setsockopt(c->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) ||
	    bind(c->fd, (struct sockaddr *)&sll, sizeof(sll)))
		die("packet socket");
	if (setns(self, CLONE_NEWNET))
		die("setns back");
	close(self);
	close(nsfd);
}

static void drain(struct cap *c, int64_t real_to_mono)
{
	unsigned char pkt[128];
	char cbuf[256], s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];
	struct sockaddr_ll from;
	struct iovec iov = { .iov_base = pkt, .iov_len = sizeof(pkt) };
	struct msghdr mh;
	struct cmsghdr *cm;
	uint64_t t;
	ssize_t n;

	for (;;) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_name = &from;
		mh.msg_namelen = sizeof(from);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		n = recvmsg(c->fd, &mh, 0);
		if (n < 0)
			return;
		if ((from.sll_pkttype == PACKET_OUTGOING) != c->out || n < 14 + 20 + 20)
			continue;
		t = ns(CLOCK_REALTIME);
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_TIMESTAMPNS) {
				struct timespec ts;

				memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
				t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			}
		}
		{
			const unsigned char *ip = pkt + 14, *th = ip + (ip[0] & 0xf) * 4;
			uint32_t seq;

			if (th + 20 > pkt + n)
				continue;
			inet_ntop(AF_INET, ip + 12, s, sizeof(s));
			inet_ntop(AF_INET, ip + 16, d, sizeof(d));
			memcpy(&seq, th + 4, 4);
			printf("P %llu %s %s %u %s %u %u\n", (unsigned long long)((int64_t)t + real_to_mono),
			       c->name, s, th[0] << 8 | th[1], d, th[2] << 8 | th[3], ntohl(seq));
		}
	}
}

int main(int argc, char **argv)
{
	const char *pins = NULL;
	struct cap caps[MAX_CAPS];
	struct pollfd pfd[MAX_CAPS];
	int ncaps = 0, i, ncpu, fd_stats, fd_rs, fd_ns, fd_tl;
	unsigned long secs = 0, rule = 0;
	char path[512];
	uint64_t t0, next, t;
	int64_t real_to_mono;
	struct xrl_global_stats *gs;
	struct xrl_rule_stats *rs;
	struct xrl_budget nsw;
	struct xrl_total_local *tl;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--pins"))
			pins = argv[i + 1];
		else if (!strcmp(argv[i], "--rule"))
			rule = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--secs"))
			secs = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--cap") && ncaps < MAX_CAPS)
			open_cap(&caps[ncaps++], argv[i + 1]);
		else
			break;
	}
	if (i != argc || !pins || !secs || secs > 60 || rule >= XRL_MAX_RULES) {
		fprintf(stderr, "usage: newconn_probe --pins DIR --rule ID --secs S (1..60) [--cap NAME:NETNS:IF:in|out]...\n");
		return 2;
	}
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		die("possible CPUs");
	gs = calloc((size_t)ncpu, sizeof(*gs));
	rs = calloc((size_t)ncpu, sizeof(*rs));
	tl = calloc((size_t)ncpu, sizeof(*tl));
	snprintf(path, sizeof(path), "%s/xrl_stats", pins);
	fd_stats = bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/xrl_rule_stats", pins);
	fd_rs = bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/xrl_newsrc", pins);
	fd_ns = bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/xrl_total_local", pins);
	fd_tl = bpf_obj_get(path);
	if (!gs || !rs || !tl || fd_stats < 0 || fd_rs < 0 || fd_ns < 0 || fd_tl < 0)
		die("the instance's pinned maps");
	for (i = 0; i < ncaps; i++)
		pfd[i] = (struct pollfd){ .fd = caps[i].fd, .events = POLLIN };
	real_to_mono = (int64_t)ns(CLOCK_MONOTONIC) - (int64_t)ns(CLOCK_REALTIME);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = ns(CLOCK_MONOTONIC);
	next = t0;
	while (!stop) {
		t = ns(CLOCK_MONOTONIC);
		if (t - t0 > secs * 1000000000ull)
			break;
		if (t >= next) {
			uint32_t zero = 0, id = (uint32_t)rule;
			unsigned long long pk = 0, nr = 0, cr = 0;
			int c;

			if (!bpf_map_lookup_elem(fd_stats, &zero, gs) && !bpf_map_lookup_elem(fd_rs, &id, rs) &&
			    !bpf_map_lookup_elem(fd_ns, &id, &nsw) && !bpf_map_lookup_elem(fd_tl, &id, tl)) {
				for (c = 0; c < ncpu; c++) {
					pk += gs[c].packets;
					nr += rs[c].new_refused;
					cr += rs[c].created;
				}
				printf("S %llu %llu %llu %llu %llu %llu", (unsigned long long)t, pk, nr, cr,
				       (unsigned long long)nsw.tat, (unsigned long long)nsw.last_ns);
				for (c = 0; c < ncpu; c++)
					printf(" %llu", (unsigned long long)gs[c].packets);
				for (c = 0; c < ncpu; c++)
					printf(" %llu", (unsigned long long)tl[c].tokens);
				printf("\n");
			}
			next = t + 1000000;
		}
		if (poll(pfd, (nfds_t)ncaps, 1) > 0)
			for (i = 0; i < ncaps; i++)
				if (pfd[i].revents & POLLIN)
					drain(&caps[i], real_to_mono);
	}
	fflush(stdout);
	return 0;
}
