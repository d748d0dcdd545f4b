#!/usr/bin/env python3
"""Summarise a bench/newconn_probe timeline (bench/bench_newconn.sh, PROBE=1).

  newconn_probe.py [--budget RATE] [--client-from A.B.C.D] [--row OUT] FILE

Prints, for the new clients' SYNs (captured leaving c0; every try, the
kernel's retransmissions included) whether xrl passed each (the same source
and port captured arriving on s0 within 200 ms) against the flood's rate
reaching XDP around it (xrl's packet counter over the probe's two
intervals around the SYN, about 2 ms):
  full:    at least half the flood's running rate (the 90th percentile of
           its rates over the probe's intervals)
  partial: between a tenth and a half of it
  gap:     under a tenth (the generator was off the CPU)
and the flood's rate before and during the clients' window, and the budget
(buckets created, against RATE x t + RATE of --new-sources). --row writes
one line for bench_newconn.sh's table: new clients' SYNs passed sent with
the flood full | in a gap | connections whose every SYN was sent with the
flood full that got one through | the share of the clients' window in gaps.
Not a test.
"""
import bisect
import statistics
import sys


def main():
    args = sys.argv[1:]
    budget = None
    row_file = None
    first_new = 10  # 198.18.0.10 and up: the new clients; .2 is the returning one
    while len(args) > 1:
        if args[0] == "--budget":
            budget = float(args[1])
        elif args[0] == "--row":
            row_file = args[1]
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
    kind = {}
    for p in P:
        if p[1] == "cli":
            kind[p[2]] = "new" if int(p[2].split(".")[-1]) >= first_new else "returning"
    cli = sorted(p for p in P if p[1] == "cli" and kind[p[2]] == "new")
    every = sorted(p for p in P if p[1] == "cli")
    srv = {}
    for p in P:
        if p[1] == "srv":
            srv.setdefault((p[2], p[3]), []).append(p[0])
    if not cli:
        print("probe: no new client's SYN captured")
        if row_file:
            with open(row_file, "w") as out:
                out.write("-|-|-|-\n")
        return

    def rate(a, b):
        return (b[1] - a[1]) / ((b[0] - a[0]) / 1e9) if b[0] > a[0] else 0.0

    ta, tb = cli[0][0], cli[-1][0]
    rates = sorted(rate(a, b) for a, b in zip(S, S[1:]))
    ref = rates[int(0.9 * (len(rates) - 1))]   # the flood's rate when it runs
    before = [b[1] - a[1] for a, b in zip(S, S[1:]) if b[0] < ta]
    before_t = sum(b[0] - a[0] for a, b in zip(S, S[1:]) if b[0] < ta)
    during_n = sum(b[1] - a[1] for a, b in zip(S, S[1:]) if ta <= a[0] and b[0] <= tb)
    ivals = [(b[0] - a[0]) / 1e6 for a, b in zip(S, S[1:]) if ta <= a[0] <= tb]
    gap_t = sum(b[0] - a[0] for a, b in zip(S, S[1:])
                if ta <= a[0] and b[0] <= tb and rate(a, b) < ref / 10)
    span = max(tb - ta, 1)
    print("probe: flood reaching XDP: %.2f M/s when it runs (90th percentile of the 1-ms rates);"
          " on average %.2f M/s before the clients, %.2f M/s while they connected (%.1f s),"
          " under a tenth of its running rate %.0f %% of that time;"
          " probe intervals median %.2f ms, max %.1f ms"
          % (ref / 1e6, sum(before) / max(before_t, 1) * 1e3, during_n / (span / 1e9) / 1e6,
             span / 1e9, 100.0 * gap_t / span,
             statistics.median(ivals) if ivals else 0, max(ivals) if ivals else 0))
    if budget:
        t = (S[-1][0] - S[0][0]) / 1e9
        made = S[-1][3] - S[0][3]
        print("probe: buckets created in %.1f s: %d (budget %.0f/s: %.0f for the time, +%.0f burst at most)"
              % (t, made, budget, budget * t, budget))
    seen, cls, conn = {}, {}, {}
    row = [] if row_file else None
    for p in every:
        k = (p[2], p[3])
        seen[k] = seen.get(k, 0) + 1
        i = bisect.bisect_left(st, p[0])
        if i < 1 or i >= len(S) - 1:
            c = "unknown"
        else:
            r = rate(S[i - 1], S[i + 1])
            c = "full" if r >= ref / 2 else "gap" if r < ref / 10 else "partial"
        ok = any(0 <= t - p[0] < 200e6 for t in srv.get(k, ()))
        for key in ((kind[p[2]], c, 0), (kind[p[2]], c, min(seen[k], 3))):
            n = cls.setdefault(key, [0, 0])
            n[0] += 1
            n[1] += ok
        cs = conn.setdefault(k, [kind[p[2]], set(), False])
        cs[1].add(c)
        cs[2] = cs[2] or ok
    for who in ("new", "returning"):
        for c in ("full", "partial", "gap"):
            n = cls.get((who, c, 0), [0, 0])
            if not n[0]:
                continue
            tries = ", ".join("try %s %d/%d" % ("3+" if j == 3 else j, *cls[(who, c, j)])
                              for j in (1, 2, 3) if (who, c, j) in cls)
            print("probe: %s clients' SYNs sent with the flood %-7s: %3d, passed by xrl %3d (%s)"
                  % (who, c, n[0], n[1], tries))
        full = [cs for cs in conn.values() if cs[0] == who and cs[1] == {"full"}]
        if any(cs[0] == who for cs in conn.values()):
            print("probe: %s clients' connections whose every SYN was sent with the flood full: %d,"
                  " a SYN passed for %d" % (who, len(full), sum(cs[2] for cs in full)))
        if who == "new" and row is not None:
            f, g = cls.get((who, "full", 0), [0, 0]), cls.get((who, "gap", 0), [0, 0])
            row.append("%d/%d|%d/%d|%d/%d|%.0f %%" % (f[1], f[0], g[1], g[0], sum(cs[2] for cs in full),
                                                   len(full), 100.0 * gap_t / span))
    if row is not None:
        with open(row_file, "w") as out:
            out.write((row[0] if row else "-|-|-|-") + "\n")


if __name__ == "__main__":
    main()
