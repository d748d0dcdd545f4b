#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Crafted frames for tests/e2e/test_evasion.sh (plain Python, no scapy).

  send IFACE DST_MAC KIND COUNT [key=value ...]
      send COUNT frames of KIND out of IFACE (AF_PACKET, run inside the
      sender's namespace). KIND: udp4, udp6 (a datagram to dst:dport),
      syn4 (a TCP SYN, split into IPv4 fragments when frag=N: N bytes of
      TCP header in the first fragment). Keys: src, dst, sport, dport,
      vlans (VID-0 802.1Q tags), ad (1: the outer tag is 802.1ad),
      ext (IPv6 destination-options headers before UDP), frag, gap (s).
  listen-udp ADDR PORT SECONDS
      count datagrams to ADDR:PORT for SECONDS; prints the count.
  listen-tcp ADDR PORT SECONDS
      a TCP listener (backlog only) for SECONDS; prints 0.
  synacks IFACE SPORT SECONDS
      count TCP SYN-ACKs from port SPORT seen on IFACE (AF_PACKET).

Every loop is bounded by its count or its time.
"""
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def mac(text):
    return bytes(int(x, 16) for x in text.split(":"))


def eth(dst, src, ethertype, vlans, ad):
    h = dst + src
    for i in range(vlans):
        tpid = 0x88A8 if (ad and i == 0) else 0x8100
        h += struct.pack("!H", tpid) + struct.pack("!H", 0)   # VID 0, PCP 0
    return h + struct.pack("!H", ethertype)


def ipv4(src, dst, proto, payload, ident=1, frag_off=0, more=False):
    flags = (0x2000 if more else 0) | frag_off
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, flags, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def udp_hdr(src, dst, sport, dport, data, family):
    length = 8 + len(data)
    if family == 4:
        pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 17, length)
    else:
        pseudo = (socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst) +
                  struct.pack("!IxxxB", length, 17))
    u = struct.pack("!HHHH", sport, dport, length, 0) + data
    c = csum(pseudo + u) or 0xFFFF
    return u[:6] + struct.pack("!H", c) + u[8:]


def tcp_syn(src, dst, sport, dport, seq):
    h = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, 0x02, 64240, 0, 0)
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(h))
    return h[:16] + struct.pack("!H", csum(pseudo + h)) + h[18:]


def ipv6(src, dst, nexthdr, payload):
    return (struct.pack("!IHBB", 6 << 28, len(payload), nexthdr, 64) +
            socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst) + payload)


def frames(kind, dst_mac, src_mac, o, n):
    """The n-th frame (a list: one datagram may be several fragments)."""
    src, dst = o["src"], o["dst"]
    sport, dport = int(o.get("sport", 40000)) + (n % 1000), int(o.get("dport", 9))
    vlans, ad = int(o.get("vlans", 0)), int(o.get("ad", 0))
    data = b"xrl evasion test %06d" % n
    if kind == "udp4":
        return [eth(dst_mac, src_mac, 0x0800, vlans, ad) +
                ipv4(src, dst, 17, udp_hdr(src, dst, sport, dport, data, 4), ident=n & 0xFFFF)]
    if kind == "udp6":
        payload = udp_hdr(src, dst, sport, dport, data, 6)
        nexthdr = 17
        for _ in range(int(o.get("ext", 0))):
            # destination options: PadN filling the 8 bytes
            payload = struct.pack("!BBBB", nexthdr, 0, 1, 4) + b"\0" * 4 + payload
            nexthdr = 60
        return [eth(dst_mac, src_mac, 0x86DD, vlans, ad) + ipv6(src, dst, nexthdr, payload)]
    if kind == "syn4":
        seg = tcp_syn(src, dst, sport, dport, 1000 + n)
        frag = int(o.get("frag", 0))
        hdr = eth(dst_mac, src_mac, 0x0800, vlans, ad)
        ident = (0x4000 + n) & 0xFFFF
        if not frag:
            return [hdr + ipv4(src, dst, 6, seg, ident=ident)]
        out, off = [], 0
        while off < len(seg):
            piece = seg[off:off + frag]
            out.append(hdr + ipv4(src, dst, 6, piece, ident=ident, frag_off=off // 8,
                                  more=off + frag < len(seg)))
            off += frag
        return out
    raise SystemExit("unknown frame kind " + kind)


def cmd_send(argv):
    iface, dst_mac, kind, count = argv[0], mac(argv[1]), argv[2], int(argv[3])
    o = dict(a.split("=", 1) for a in argv[4:])
    gap = float(o.get("gap", 0.001))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    src_mac = s.getsockname()[4]
    sent = 0
    for n in range(min(count, 100000)):
        for f in frames(kind, dst_mac, src_mac, o, n):
            s.send(f)
            sent += 1
        if gap:
            time.sleep(gap)
    print(sent)


def cmd_listen_udp(argv):
    addr, port, secs = argv[0], int(argv[1]), float(argv[2])
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.bind((addr, port))
    print("ready", flush=True)
    n, end = 0, time.monotonic() + secs
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            s.recv(2048)
            n += 1
        except socket.timeout:
            pass
    print(n)


def cmd_listen_tcp(argv):
    addr, port, secs = argv[0], int(argv[1]), float(argv[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(128)
    print("ready", flush=True)
    time.sleep(secs)
    print(0)


def cmd_synacks(argv):
    iface, sport, secs = argv[0], int(argv[1]), float(argv[2])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    print("ready", flush=True)
    n, end = 0, time.monotonic() + secs
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            f, meta = s.recvfrom(2048)
        except socket.timeout:
            continue
        if meta[2] != socket.PACKET_OUTGOING and len(f) >= 54 and f[12:14] == b"\x08\x00":
            ihl = (f[14] & 15) * 4
            t = 14 + ihl
            if f[23] == 6 and len(f) >= t + 14:
                sp = struct.unpack("!H", f[t:t + 2])[0]
                if sp == sport and (f[t + 13] & 0x12) == 0x12:
                    n += 1
    print(n)


if __name__ == "__main__":
    cmds = {"send": cmd_send, "listen-udp": cmd_listen_udp, "listen-tcp": cmd_listen_tcp,
            "synacks": cmd_synacks}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        raise SystemExit(__doc__)
    cmds[sys.argv[1]](sys.argv[2:])
