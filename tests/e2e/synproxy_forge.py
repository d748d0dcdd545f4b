#!/usr/bin/python3
"""Crafted handshakes for tests/e2e/test_synproxy.sh (Debian's python3 with scapy).

  synproxy_forge.py IFACE SRC_MAC DST_MAC SRC DST PORT OTHER_PORT NORULE_PORT

From SRC (an address no interface has, so the client's kernel neither
answers nor resets what comes back): a SYN to DST:PORT, whose SYN-ACK's
cookie is read; then, each from a port of its own,
  1. an ACK to PORT with a random cookie         (bad cookie of PORT's rule)
  2. the valid ACK sent to OTHER_PORT instead    (bad cookie of OTHER_PORT's rule)
  3. an ACK to NORULE_PORT                       (no rule: the kernel resets it)
  4. the valid ACK to PORT                       (proven: a connection at the listener)
Prints "cookie C" or "no SYN-ACK".
"""
import random
import sys

from scapy.all import IP, TCP, Ether, conf, sendp, srp1  # noqa: E402

conf.verb = 0


def main():
    iface, smac, dmac, src, dst, port, other, norule = sys.argv[1:9]
    port, other, norule = int(port), int(other), int(norule)
    sport = random.randint(20000, 60000)
    isn = random.randint(1, 2**31)
    base = Ether(src=smac, dst=dmac) / IP(src=src, dst=dst)
    syn = base / TCP(sport=sport, dport=port, flags="S", seq=isn, options=[("MSS", 1460)])
    ans = srp1(syn, iface=iface, timeout=3)
    if ans is None or TCP not in ans or ans[TCP].flags != "SA":
        print("no SYN-ACK")
        return 1
    cookie = ans[TCP].seq
    wrong = (cookie + random.randint(1000, 2**31)) & 0xffffffff
    ack = lambda dp, a, sp: base / TCP(sport=sp, dport=dp, flags="A", seq=isn + 1, ack=a)  # noqa: E731
    sendp(ack(port, wrong + 1, sport), iface=iface)
    sendp(ack(other, cookie + 1, sport), iface=iface)
    sendp(ack(norule, cookie + 1, sport), iface=iface)
    sendp(ack(port, cookie + 1, sport), iface=iface)
    print("cookie %u" % cookie)
    return 0


if __name__ == "__main__":
    sys.exit(main())
