#!/usr/bin/python3
"""Real TCP ends for tests/e2e/test_synproxy.sh (Debian's python3).

  synproxy_peer.py serve ADDR PORT LOG     echo server: each accepted connection is
                                           a line in LOG, its bytes echoed back
  synproxy_peer.py connect ADDR PORT N BYTES [SRC]
                                           N connections one after another (from SRC
                                           when given), BYTES sent and read back on
                                           each; prints "ok FAILED P99_MS"
"""
import os
import socket
import sys
import threading
import time


def serve(addr, port, log):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((addr, port))
    s.listen(1024)
    out = open(log, "a", buffering=1)

    def echo(c):
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                c.sendall(d)
        except OSError:
            pass
        finally:
            c.close()

    while True:
        c, peer = s.accept()
        out.write("%s %d\n" % (peer[0], peer[1]))
        threading.Thread(target=echo, args=(c,), daemon=True).start()


def connect(addr, port, n, nbytes, src=None):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    ok, times = 0, []
    for _ in range(n):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(4)
        try:
            if src:
                s.bind((src, 0))
            t0 = time.monotonic()
            s.connect((addr, port))
            times.append(time.monotonic() - t0)
            data = os.urandom(nbytes)
            s.sendall(data)
            got = bytearray()
            while len(got) < len(data):
                d = s.recv(65536)
                if not d:
                    break
                got += d
            if bytes(got) == data:
                ok += 1
        except OSError as e:
            print("connect: %s" % e, file=sys.stderr)
        finally:
            s.close()
    times.sort()
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))] * 1000 if times else -1
    print("%d %d %.1f" % (ok, n - ok, p99))


if __name__ == "__main__":
    a = sys.argv[1:]
    if a and a[0] == "serve" and len(a) == 4:
        serve(a[1], int(a[2]), a[3])
    elif a and a[0] == "connect" and len(a) in (5, 6):
        connect(a[1], int(a[2]), int(a[3]), int(a[4]), a[5] if len(a) == 6 else None)
    else:
        sys.exit(__doc__)
