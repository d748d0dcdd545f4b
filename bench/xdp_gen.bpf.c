// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Frame generator of bench/bench_path.sh's no-skb cases, run by
 * bench/xdp_gen.c through BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES:
 * every frame is redirected to out_ifindex (a veth end), so it enters the
 * peer veth as an xdp_frame and the peer's XDP program sees it before any
 * skb exists, as with a NIC driver's native XDP. For many sources it
 * rewrites the IPv4 source (random, or one sweep in order) and fixes the
 * header checksum incrementally (RFC 1624); the UDP checksum is 0 (none). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define GEN_FIXED  0	/* the frame as given */
#define GEN_RANDOM 1	/* source = src_lo + prandom % src_n */
#define GEN_SWEEP  2	/* source = src_lo + (frame number % src_n) */

const volatile __u32 out_ifindex = 0;
const volatile __u32 gen_mode = GEN_FIXED;
const volatile __u32 src_lo = 0;	/* host byte order */
const volatile __u32 src_n = 1;
const volatile __u32 l4_tcp = 0;	/* the frame is a TCP SYN: its checksum covers the source too */
__u64 sweep_next = 0;
/*
 * The SYN frame as built (l4_tcp): written over each frame before it goes
 * out. Live frames are initialised once and recycled as they come back,
 * and a receiver that answers in place (xrl --syn-proxy's XDP_TX) hands
 * back its SYN-ACK: without this the generator would send that next time.
 */
__u8 syn_tmpl[54] = {};

static __always_inline __u16 csum_fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

SEC("xdp")
int xdp_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);
	__u32 off, old, new, s;

	if ((void *)(ip + 1) > end)
		return XDP_ABORTED;
	if (l4_tcp) {
		__u8 t[54];

		__builtin_memcpy(t, syn_tmpl, sizeof(t));
		if (bpf_xdp_store_bytes(ctx, 0, t, sizeof(t)))
			return XDP_ABORTED;
	}
	if (gen_mode != GEN_FIXED) {
		if (gen_mode == GEN_RANDOM)
			off = bpf_get_prandom_u32() % src_n;
		else
			off = __sync_fetch_and_add(&sweep_next, 1) % src_n;
		old = ip->saddr;
		new = bpf_htonl(src_lo + off);
		/* HC' = ~(~HC + ~m + m'), in 16-bit words of the header as stored */
		s = (__u16)~ip->check;
		s += (~old & 0xffff) + (~old >> 16) + (new & 0xffff) + (new >> 16);
		ip->saddr = new;
		ip->check = (__u16)~csum_fold(s);
		if (l4_tcp) {
			struct tcphdr *th = (void *)(ip + 1);

			if ((void *)(th + 1) > end)
				return XDP_ABORTED;
			/* the pseudo-header's source changed by the same words */
			s = (__u16)~th->check;
			s += (~old & 0xffff) + (~old >> 16) + (new & 0xffff) + (new >> 16);
			th->check = (__u16)~csum_fold(s);
		}
	}
	return bpf_redirect(out_ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
