#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Raw IP packets through a tun device, for tests/e2e/test_l3_mapped.sh
(plain Python; the packet builders are evasion_frames.py's).

  send IFACE KIND COUNT [key=value ...]
      write COUNT packets of KIND into tun IFACE (run inside its namespace;
      IFACE must exist, e.g. `ip tuntap add dev IFACE mode tun`): the
      kernel receives them from IFACE as if they came off the wire, with
      no link-layer header (IFF_TUN | IFF_NO_PI). KIND: udp4, udp6 (a
      datagram to dst:dport). Keys: src, dst, sport, dport, gap (s).
  link IFACE TYPE
      set the link type of the (down) tun IFACE to ARPHRD TYPE (TUNSETLINK):
      a device whose packets are neither Ethernet frames nor bare IP.
  listen PORT SECONDS
      a dual-stack UDP socket on [::]:PORT (IPV6_V6ONLY off) for SECONDS:
      prints "ready", then the source address of each datagram as the
      socket reports it, one a line, then "count N".

Every loop is bounded by its count.
"""
import fcntl
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import evasion_frames as ef  # noqa: E402

TUNSETIFF = 0x400454CA
TUNSETLINK = 0x400454CD
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000


def tun_open(iface):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", iface.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def cmd_send(argv):
    iface, kind, count = argv[0], argv[1], int(argv[2])
    o = dict(a.split("=", 1) for a in argv[3:])
    src, dst = o["src"], o["dst"]
    sport, dport, gap = int(o.get("sport", 40000)), int(o.get("dport", 9)), float(o.get("gap", 0.001))
    fd = tun_open(iface)
    sent = 0
    for n in range(min(count, 100000)):
        data = b"xrl l3 test %06d" % n
        if kind == "udp4":
            pkt = ef.ipv4(src, dst, 17, ef.udp_hdr(src, dst, sport, dport, data, 4), ident=n & 0xFFFF)
        elif kind == "udp6":
            pkt = ef.ipv6(src, dst, 17, ef.udp_hdr(src, dst, sport, dport, data, 6))
        else:
            raise SystemExit("unknown packet kind " + kind)
        os.write(fd, pkt)
        sent += 1
        if gap:
            time.sleep(gap)
    os.close(fd)
    print(sent)


def cmd_link(argv):
    fd = tun_open(argv[0])
    fcntl.ioctl(fd, TUNSETLINK, int(argv[1]))
    os.close(fd)


def cmd_listen(argv):
    port, secs = int(argv[0]), float(argv[1])
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.bind(("::", port))
    print("ready", flush=True)
    n, end = 0, time.monotonic() + secs
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            _, addr = s.recvfrom(2048)
        except socket.timeout:
            continue
        print(addr[0], flush=True)
        n += 1
    print("count", n, flush=True)


if __name__ == "__main__":
    cmds = {"send": cmd_send, "link": cmd_link, "listen": cmd_listen}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        raise SystemExit(__doc__)
    cmds[sys.argv[1]](sys.argv[2:])
