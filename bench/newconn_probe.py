#!/usr/bin/env python3
"""Summarise a bench/newconn_probe timeline (bench/bench_newconn.sh, PROBE=1).

  newconn_probe.py [--budget RATE] [--client-from A.B.C.D] FILE

Prints, for the new clients' SYNs (captured leaving c0; every try, the
kernel's retransmissions included) whether xrl passed each (the same source
and port captured arriving on s0 within 200 ms) against the flood's rate
reaching XDP around it (xrl's packet counter over the probe's two
intervals around the SYN, about 2 ms):
  full:    at least half the flood's median rate before the clients started
  partial: between a tenth and a half of it
  gap:     under a tenth (the generator was off the CPU)
and the flood's rate before and during the clients' window, and the budget
(buckets created, against RATE x t + RATE of --new-sources). Not a test.
"""
import bisect
import statistics
import sys


def main():
    args = sys.argv[1:]
    budget = None
    first_new = 10  # 198.18.0.10 and up: the new clients; .2 is the returning one
    while len(args) > 1:
        if args[0] == "--budget":
            budget = float(args[1])
        elif args[0] == "--client-from":
            first_new = int(args[1].split(".")[-1])
        else:
            break
        args = args[2:]
    if len(args) != 1:
        sys.exit(__doc__.strip().splitlines()[2])
    S, P = [], []
    with open(args[0]) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "S":
                S.append([int(x) for x in w[1:]])
            elif w and w[0] == "P":
                P.append((int(w[1]), w[2], w[3], int(w[4])))
    if len(S) < 10:
        sys.exit("newconn_probe.py: fewer than 10 samples in %s" % args[0])
    st = [s[0] for s in S]
    cli = sorted(p for p in P if p[1] == "cli" and int(p[2].split(".")[-1]) >= first_new)
    srv = {}
    for p in P:
        if p[1] == "srv":
            srv.setdefault((p[2], p[3]), []).append(p[0])
    if not cli:
        print("probe: no new client's SYN captured")
        return

    def rate(a, b):
        return (b[1] - a[1]) / ((b[0] - a[0]) / 1e9) if b[0] > a[0] else 0.0

    ta, tb = cli[0][0], cli[-1][0]
    before = [rate(a, b) for a, b in zip(S, S[1:]) if b[0] < ta]
    during_n = sum(b[1] - a[1] for a, b in zip(S, S[1:]) if ta <= a[0] and b[0] <= tb)
    ref = statistics.median(before) if before else 0.0
    ivals = [(b[0] - a[0]) / 1e6 for a, b in zip(S, S[1:]) if ta <= a[0] <= tb]
    gap_t = sum(b[0] - a[0] for a, b in zip(S, S[1:])
                if ta <= a[0] and b[0] <= tb and rate(a, b) < ref / 10)
    span = max(tb - ta, 1)
    print("probe: flood reaching XDP: median %.2f M/s per ms before the clients; %.2f M/s on average"
          " while they connected (%.1f s), under a tenth of that median %.0f %% of the time;"
          " probe intervals median %.2f ms, max %.1f ms"
          % (ref / 1e6, during_n / (span / 1e9) / 1e6, span / 1e9, 100.0 * gap_t / span,
             statistics.median(ivals) if ivals else 0, max(ivals) if ivals else 0))
    if budget:
        t = (S[-1][0] - S[0][0]) / 1e9
        made = S[-1][3] - S[0][3]
        print("probe: buckets created in %.1f s: %d (budget %.0f/s: %.0f for the time, +%.0f burst at most)"
              % (t, made, budget, budget * t, budget))
    seen, cls = {}, {}
    for p in cli:
        k = (p[2], p[3])
        seen[k] = seen.get(k, 0) + 1
        i = bisect.bisect_left(st, p[0])
        if i < 1 or i >= len(S) - 1:
            continue
        r = rate(S[i - 1], S[i + 1])
        c = "full" if r >= ref / 2 else "gap" if r < ref / 10 else "partial"
        ok = any(0 <= t - p[0] < 200e6 for t in srv.get(k, ()))
        for key in ((c, 0), (c, min(seen[k], 3))):
            n = cls.setdefault(key, [0, 0])
            n[0] += 1
            n[1] += ok
    for c in ("full", "partial", "gap"):
        n = cls.get((c, 0), [0, 0])
        tries = ", ".join("try %s %d/%d" % ("3+" if j == 3 else j, *cls[(c, j)])
                          for j in (1, 2, 3) if (c, j) in cls)
        print("probe: new clients' SYNs sent with the flood %-7s: %3d, passed by xrl %3d%s"
              % (c, n[0], n[1], " (%s)" % tries if tries else ""))


if __name__ == "__main__":
    main()
