#!/usr/bin/env bash
# What policing does to a TCP stream: one TCP stream through a --bytes
# rule. xrl drops what is over the limit, it never queues: the sender's
# TCP sees losses, retransmits and backs off. Measured per case: goodput
# (bytes the receiving socket got / s), the sender's segments sent and
# retransmitted (nstat TcpOutSegs, TcpRetransSegs in its namespace), and
# what xrl passed and dropped for the rule (xrl --json stats). Not a test:
# figures are printed, never asserted.
#
#   bench/bench_police.sh [--secs S] [--cases LIST] [--no-build] [--markdown FILE]
#
#   --secs S        how long each stream runs (10)
#   --cases LIST    comma-separated: none, or RATE:BURST for
#                   `rule add SENDER/32 --bytes RATE --bytes-burst BURST`
#                   (SIZEs as in xrl(8)), each optionally :CC, the sender's
#                   congestion control (default: the namespace's), then
#                   optionally :tbf, the sender shaped: tc tbf at 95 % of
#                   RATE, burst 3 frames, on its interface (this kernel has
#                   tbf and htb, not fq)
#                   (none,1M:16k,1M:64k,1M:256k,10M:64k,1M:64k:cubic,
#                   1M:16k:tbf,1M:16k:cubic:tbf)
#   --no-build      do not run make for build/xrl
#   --markdown FILE write the markdown section to FILE (else it is printed)
#
# Topology (tests/e2e/lib.sh: names per PID): a veth pair between the root
# namespace and a namespace of the run's own. The run's own /24 of
# 198.18.0.0/15 (198.18.X.0/24, X from the pid): the namespace end has .1
# and runs the sender, the root end has .2, the receiver, and xrl (native
# XDP, instance police<pid>): xrl judges what the root end receives, the
# stream's data segments. Sender and receiver are /usr/bin/python3 sockets:
# the sender writes 64 kB at a time as fast as it can; the receiver counts
# bytes per second for S seconds from accept, then resets the connection.
# Containment: forwarding stays off; the only route added is the /24 on the
# root end; each stream is bounded by S seconds and 8 GB, every process by
# timeout(1); EXIT/INT/TERM stop the processes (by pid), detach xrl and
# delete the pair and the namespace.
# shellcheck disable=SC2034  # XRLT_NS_ADDR is read by lib.sh
# shellcheck disable=SC2016  # the cleanup hook is eval'ed later, on purpose
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
set -u

X=$((1 + $$ % 250))
XRLT_NAME=xrlp$$
XRLT_NS_ADDR=198.18.$X.1/24
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$REPO/tests/e2e/lib.sh"

XRL=${XRL:-$REPO/build/xrl}
INSTANCE=police$$
PY=/usr/bin/python3
NET=198.18.$X
SND=$NET.1
RCV=$NET.2
PORT=5201
SECS=10
CASES=none,1M:16k,1M:64k,1M:256k,10M:64k,1M:64k:cubic,1M:16k:tbf,1M:16k:cubic:tbf
BUILD=1
MD=
MAX_BYTES=8000000000

usage() { sed -n '/^#   bench/,/^#   --markdown/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--secs) SECS=${2:-}; shift 2 ;;
	--cases) CASES=${2:-}; shift 2 ;;
	--no-build) BUILD=0; shift ;;
	--markdown) MD=${2:-}; shift 2 ;;
	*) usage ;;
	esac
done
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 2 ] && [ "$SECS" -le 60 ] || { echo "bench_police: --secs wants 2..60" >&2; exit 2; }
for c in ${CASES//,/ }; do
	[[ $c =~ ^(none|[0-9]+[kKMGT]?B?(/s)?:[0-9]+[kKMGT]?B?)(:[a-z0-9_]+)?(:tbf)?$ ]] ||
		{ echo "bench_police: case '$c': want none or RATE:BURST, optionally :CC, then optionally :tbf (e.g. 1M:64k, 1M:64k:cubic, 1M:16k:tbf)" >&2; exit 2; }
	[[ $c == none* && $c == *:tbf ]] && { echo "bench_police: case '$c': :tbf needs a RATE" >&2; exit 2; }
	cc=${BASH_REMATCH[3]#:}
	[ "$cc" = tbf ] && [ -z "${BASH_REMATCH[4]}" ] && cc=
	[ -z "$cc" ] || grep -qw "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control ||
		{ echo "bench_police: case '$c': congestion control '$cc' is not available here ($(cat /proc/sys/net/ipv4/tcp_available_congestion_control))" >&2; exit 2; }
done

log() { printf '[bench_police] %s\n' "$*" >&2; }
xrlt_require_root
xrlt_require_cmd ip tc nstat timeout awk jq
[ -x "$PY" ] || xrlt_fail "$PY not found (Debian's python3)"
xrlt_require_bpf
if [ "$BUILD" = 1 ]; then
	make -C "$REPO" --no-print-directory build/xrl >&2 || xrlt_fail "make build/xrl failed"
fi
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (make build/xrl, or set XRL=)"
[ -z "$(ip -4 route show "$NET.0/24" 2>/dev/null)" ] ||
	xrlt_fail "$NET.0/24 is routed already in the root namespace: another run uses it (run again)"
[ "$(cat /proc/sys/net/ipv4/ip_forward)" = 0 ] || log "WARNING: ip_forward is on in the root namespace (this run adds no route that would forward)"

xrlt_init
export PIN_DIR=/sys/fs/bpf/xrl/$INSTANCE
xrlt_on_cleanup 'xrl detach "$XRLT_ROOT_IF" >/dev/null 2>&1; [ -d "$PIN_DIR" ] && rm -rf "$PIN_DIR"; true'
xrlt_setup_pair
ip addr add "$RCV/24" dev "$XRLT_ROOT_IF" || xrlt_fail "cannot give $XRLT_ROOT_IF $RCV/24"
xrl attach "$XRLT_ROOT_IF" --mode native >/dev/null 2>"$XRLT_TMP/err" ||
	xrlt_fail "xrl attach $XRLT_ROOT_IF: $(cat "$XRLT_TMP/err")"
CC=$(ip netns exec "$XRLT_NS" sysctl -n net.ipv4.tcp_congestion_control)
MTU=$(cat /sys/class/net/"$XRLT_ROOT_IF"/mtu)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# receiver: one connection, bytes per second for SECS s from accept, then a
# reset (SO_LINGER 0) so the sender stops; prints "TOTAL S1 S2 ..."
cat >"$XRLT_TMP/recv.py" <<'EOF'
import socket, struct, sys, time
addr, port, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((addr, port)); l.listen(1); l.settimeout(10)
print("ready", flush=True)
c, _ = l.accept()
t0 = time.monotonic(); end = t0 + secs
per = [0] * secs
buf = bytearray(1 << 20)
while True:
    left = end - time.monotonic()
    if left <= 0:
        break
    c.settimeout(left)
    try:
        n = c.recv_into(buf)
    except socket.timeout:
        break
    if n == 0:
        break
    per[min(int(time.monotonic() - t0), secs - 1)] += n
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
c.close()
print(sum(per), *per)
EOF
# sender: writes 64 kB at a time until the receiver resets, SECS + 3 s or MAX
# bytes, with congestion control CC ("-": the namespace's default)
cat >"$XRLT_TMP/send.py" <<'EOF'
import socket, sys, time
addr, port, secs, cap, cc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
s = socket.socket()
if cc != "-":
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
s.settimeout(5)
s.connect((addr, port))
s.settimeout(1)
data = b"x" * 65536; sent = 0; end = time.monotonic() + secs + 3
while sent < cap and time.monotonic() < end:
    try:
        sent += s.send(data)
    except socket.timeout:
        continue
    except OSError:
        break
print(sent)
EOF

# the sender namespace's TcpOutSegs, TcpRetransSegs and TcpExtTCPTimeouts
# (retransmission timeouts) (absolute; no history file)
segs() {
	NSTAT_HISTORY=$XRLT_TMP/nstat.hist ip netns exec "$XRLT_NS" nstat -asz TcpOutSegs TcpRetransSegs TcpExtTCPTimeouts 2>/dev/null |
		awk '$1 == "TcpOutSegs" { o = $2 } $1 == "TcpRetransSegs" { r = $2 } $1 == "TcpExtTCPTimeouts" { t = $2 } END { print o + 0, r + 0, t + 0 }'
}
# a SIZE in bytes (xrl(8): k, M, G, T are powers of 10; B and /s optional)
size_bytes() {
	local v=${1%/s}
	v=${v%B}
	case $v in
	*[kK]) echo $((${v%?} * 1000)) ;;
	*M) echo $((${v%M} * 1000000)) ;;
	*G) echo $((${v%G} * 1000000000)) ;;
	*T) echo $((${v%T} * 1000000000000)) ;;
	*) echo "$v" ;;
	esac
}
# the rule's passed and dropped packets (0 0 without the rule)
rule_counts() {
	xrl --json stats >"$XRLT_TMP/stats.json" 2>/dev/null || { echo "0 0"; return; }
	jq -r --arg p "$SND/32" '[.rules[]? | select(.prefix == $p)][0] | "\(.passed // 0) \(.dropped // 0)"' "$XRLT_TMP/stats.json"
}

ROWS=()
for c in ${CASES//,/ }; do
	rate=; burst=; desc="no rule"
	shape=
	[[ $c == *:tbf ]] && { shape=1; c=${c%:tbf}; }
	IFS=: read -r rate burst cc <<<"$c"
	[ "$rate" = none ] && { cc=$burst; rate=; burst=; }
	if [ -n "$rate" ]; then
		opts="--bytes $rate --bytes-burst $burst"
		desc=$opts
		# shellcheck disable=SC2086
		xrl rule add "$SND/32" $opts >/dev/null 2>"$XRLT_TMP/err" || xrlt_fail "xrl rule add $SND/32 $opts: $(cat "$XRLT_TMP/err")"
	fi
	read -r xp0 xd0 < <(rule_counts)
	[ -n "$cc" ] && desc="$desc, $cc"
	if [ -n "$shape" ]; then
		# tbf counts the frame with its Ethernet header, as xrl does
		mr=$(awk -v r="$(size_bytes "$rate")" 'BEGIN { printf "%d", r * 8 * 0.95 }')
		tbf="tbf rate ${mr}bit burst $((3 * (MTU + 14))) latency 50ms"
		# shellcheck disable=SC2086
		ip netns exec "$XRLT_NS" tc qdisc replace dev "$XRLT_NS_IF" root $tbf ||
			xrlt_fail "tc qdisc replace dev $XRLT_NS_IF root $tbf failed"
		desc="$desc, sender shaped: tc $tbf"
	fi
	read -r o0 r0 t0 < <(segs)
	timeout -k 2 $((SECS + 15)) "$PY" "$XRLT_TMP/recv.py" "$RCV" "$PORT" "$SECS" >"$XRLT_TMP/recv.out" 2>&1 &
	rpid=$!
	xrlt_track "$rpid"
	for _ in $(seq 100); do grep -q ready "$XRLT_TMP/recv.out" 2>/dev/null && break; sleep 0.05; done
	grep -q ready "$XRLT_TMP/recv.out" || xrlt_fail "the receiver did not start: $(cat "$XRLT_TMP/recv.out")"
	# in the background, so that a signal stops the run at once (wait is interruptible)
	ip netns exec "$XRLT_NS" timeout -k 2 $((SECS + 10)) "$PY" "$XRLT_TMP/send.py" "$RCV" "$PORT" "$SECS" "$MAX_BYTES" "${cc:--}" \
		>"$XRLT_TMP/send.out" 2>&1 &
	spid=$!
	xrlt_track "$spid"
	wait "$spid" || log "case $c: the sender: $(tail -n 1 "$XRLT_TMP/send.out")"
	wait "$rpid"
	read -r o1 r1 t1 < <(segs)
	read -r xp1 xd1 < <(rule_counts)
	if [ -n "$shape" ]; then
		qd=$(ip netns exec "$XRLT_NS" tc -s qdisc show dev "$XRLT_NS_IF" root | awk '/dropped/ { sub(",", "", $7); print $7; exit }')
		desc="$desc (tbf dropped ${qd:-?})"
		ip netns exec "$XRLT_NS" tc qdisc del dev "$XRLT_NS_IF" root
	fi
	[ -n "$rate" ] && { xrl rule del "$SND/32" >/dev/null 2>&1 || xrlt_fail "xrl rule del $SND/32 failed"; }
	read -r total per < <(tail -n 1 "$XRLT_TMP/recv.out")
	xrlt_is_uint "${total:-}" || xrlt_fail "case $c: the receiver said: $(cat "$XRLT_TMP/recv.out")"
	sent=$(tail -n 1 "$XRLT_TMP/send.out")
	out=$((o1 - o0)) ret=$((r1 - r0)) rto=$((t1 - t0)) xp=$((xp1 - xp0)) xd=$((xd1 - xd0))
	# goodput over the whole stream, and the slowest and fastest second after the first
	row=$(awk -v t="$total" -v s="$SECS" -v per="$per" -v o="$out" -v r="$ret" -v rto="$rto" -v p="$xp" -v d="$xd" -v rate="$rate" -v desc="$desc" 'BEGIN {
		n = split(per, v, " "); lo = -1; hi = 0
		for (i = 2; i <= n; i++) { if (lo < 0 || v[i] < lo) lo = v[i]; if (v[i] > hi) hi = v[i] }
		xr = "-"; xs = "-"
		if (rate != "") { xs = sprintf("%d / %d", p, d); xr = (p + d) ? sprintf("%.1f %%", 100 * d / (p + d)) : "0 %" }
		printf "| %s | %.3f | %.3f-%.3f | %d | %d | %.1f %% | %d | %s | %s |", desc, t / s / 1e6, lo / 1e6, hi / 1e6, o + r, r, o + r ? 100 * r / (o + r) : 0, rto, xs, xr
	}')
	ROWS+=("$row")
	log "$row (sender wrote ${sent:-?} bytes)"
done

{
	echo "## Policing a TCP stream (\`--bytes\`)"
	echo
	echo "\`bench/bench_police.sh --secs $SECS --cases $CASES\`, $(date -u +%Y-%m-%d) $(date -u +%H:%M) UTC, kernel $(uname -r),"
	echo "$(nproc) CPUs, load average $LOAD0 at start. One TCP stream ($CC unless the row says otherwise, MTU $MTU) for $SECS s over a veth pair, from a"
	echo "namespace to the root end, where xrl (native XDP) judges what arrives; the rule is on the sender's"
	echo "address. Sender and receiver are python3 sockets; the sender writes as fast as it can. Goodput: bytes"
	echo "the receiving socket got / $SECS s (MB = 10^6 bytes, as xrl's SIZEs), and its slowest and fastest second"
	echo "after the first. Segments: the sender's, from nstat in its namespace (this stream only): sent is"
	echo "TcpOutSegs + TcpRetransSegs (Linux counts retransmissions apart, not in TcpOutSegs), of them"
	echo "retransmitted TcpRetransSegs; timeouts are its retransmission timeouts (TcpExtTCPTimeouts). xrl: the"
	echo "rule's packets passed / dropped, and dropped as a share of what it judged (segments of the stream:"
	echo "xrl sees the receiver's end, where only the sender's segments arrive)."
	echo
	echo "| rule, congestion control | goodput MB/s | seconds 2-$SECS, MB/s | segments sent | retransmitted | retransmitted % | timeouts | xrl passed / dropped | xrl dropped % |"
	echo "|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
} >"$XRLT_TMP/md"
if [ -n "$MD" ]; then
	cp "$XRLT_TMP/md" "$MD" || xrlt_fail "cannot write $MD"
	log "markdown section written to $MD"
fi
cat "$XRLT_TMP/md"
xrlt_cleanup
exit 0
