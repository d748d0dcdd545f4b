#!/usr/bin/env bash
# How legitimate clients fare during a spoofed SYN flood:
# the fraction of new TCP connections (curl, HTTP GET) that succeed, with no
# xrl rule, with a per-source SYN rule, with --new-sources, with --total and
# with --syn-proxy (the SYNs of new sources answered at XDP with a cookie).
# Not a test: figures for docs/BENCHMARKS.md ("Legitimate clients during a
# spoofed SYN flood").
#
#   bench/bench_newconn.sh [--conns N] [--parallel P] [--cases LIST] [--no-build]
#
#   --conns N     connections per kind of client and case (40, at most 60)
#   --parallel P  curl processes at once per kind of client (5)
#   --cases LIST  comma-separated subset of none,persrc,newsrc,total,synproxy (all)
#   --no-build    do not run make for build/xrl
#
# Environment: XRL (build/xrl), RATE (10: the per-source SYN limit, per s),
# BURST (10), NEW (100: --new-sources per s, --new-burst the same),
# TOTAL (1000: --total per s, --total-burst the same), SP_RATE (1000: the
# --syn-proxy rule's per-source rate and burst, over all of a source's TCP
# packets to :80, not its SYNs alone), FLOOD_MAX (200M
# frames), FLOOD (xdp_gen or trafgen), GEN (build/xdp_gen), FLOOD_RT (1:
# xdp_gen runs SCHED_FIFO 50 on CPU 0, so that other work on a loaded machine
# does not pause the flood for milliseconds at a time: a paused flood leaves
# a new-source budget or a --total cap to the clients; the kernel still
# gives other tasks on CPU 0 5 %; 0: SCHED_OTHER), FLOOD_HOLD (1: xdp_gen
# --hold lo, so that its test runs do not wait for an RCU grace period twice
# a call with no frames sent, 10-50 ms at a time on a loaded machine; 0: the
# flood has those gaps, 20-60 % of the time here with FLOOD_RT too),
# CLIENT_CPU (1: the CPU of the clients and the listener; empty: any),
# PROBE (1; 0: no probe), PROBE_OUT (/tmp/newconn_probe), CONNECT_S (3: curl --connect-timeout; the request may take 1 s more),
# SYNCOOKIES (the server namespace's net.ipv4.tcp_syncookies; default: the
# kernel's, 1: cookies when the SYN queue is full; 0: a server without them,
# whose SYN queue a flood fills).
#
# Topology (everything private to one run, named xrln<pid>):
#
#   netns xrln<pid>c (clients)     netns xrln<pid>s (server)         netns xrln<pid>f (flood)
#   c0 198.18.0.2/24 + .10-.249 == s0 198.18.0.1/24   s1 198.18.1.1/24 == f0 198.18.1.2/24
#                                  an HTTP listener on :80 (python3 http.server)
#                                  xrl on s0 and s1: one instance, one rule set
#
# The flood: bench/xdp_gen --syn (FLOOD=xdp_gen, the default: XDP live
# frames, no skb before the server end's XDP) on CPU 0, TCP SYNs to
# 198.18.1.1:80 from random sources of 10.16.0.0/12 (1,048,576 addresses),
# as fast as it goes, bounded by FLOOD_MAX frames and a timeout. FLOOD=trafgen
# sends the same from trafgen (random ports and sequence numbers too): its
# frames come in bursts with gaps of milliseconds on a loaded machine, and
# a new-source budget refills in the gaps, which favours the clients (see
# docs/BENCHMARKS.md). The flood has its own veth pair, so it does not crowd
# the clients' frames out of their veth ring before XDP: what differs
# between cases is what xrl lets reach the server's TCP stack. The server
# answers the SYNs it gets (SYN cookies when its queue is full: the kernel's
# default) through a gateway nobody is (route 10.16.0.0/12 via 198.18.1.254, a
# permanent neighbour entry with an unowned MAC): the flood namespace
# discards the SYN-ACKs (no ICMP, no ARP), and the half-open connections stay
# in the SYN queue as they would for spoofed sources on the Internet. rp_filter is off in the server namespace so that
# the spoofed SYNs reach TCP as they would on a host with a default route.
#
# Two kinds of client, at once, during the flood:
#   new:       each connection from an address never seen before (a new
#              source to xrl: it needs a bucket, so under --new-sources a
#              share of the budget the flood is spending);
#   returning: every connection from 198.18.0.2, which connected once just
#              before the flood (a source with a bucket).
# A connection succeeds when curl gets HTTP 200 within CONNECT_S seconds of
# connect plus 1 s for the request (the kernel retransmits an unanswered SYN
# after 1 s; with tcp_syn_linear_timeouts, Linux >= 6.5's default 4, the
# next ones 1 s apart too, so a client has three tries in 3 s).
# The clients and the listener run on CLIENT_CPU, the flood on CPU 0: when
# they shared CPU 0, starting the clients (ip netns exec, curl) took the CPU
# from the generator, and the flood reaching XDP fell from ~0.7 to ~0.08 M/s
# exactly while they connected (docs/BENCHMARKS.md).
#
# PROBE=1 (the default) runs bench/newconn_probe (CPU 1, SCHED_FIFO: it
# wakes once a millisecond) for each case with a rule: every millisecond,
# xrl's packet counter, the rule's created and new_refused, and every SYN
# leaving c0 and arriving behind XDP on s0 and s1; bench/newconn_probe.py
# then says, per client SYN, whether xrl passed it and whether the flood
# was running at the time (the table's probe columns). The timeline stays
# in PROBE_OUT.CASE (/tmp/newconn_probe.CASE).
# Containment: no route out of the three namespaces, forwarding off; every
# load bounded by count and timeout(1); EXIT/INT/TERM clean up processes
# (by pid), the xrl instance, the namespaces and the temp directory.
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
XRL=${XRL:-$REPO/build/xrl}
CONNS=40
PAR=5
CASES=none,persrc,newsrc,total,synproxy
BUILD=1
RATE=${RATE:-10}
BURST=${BURST:-10}
NEW=${NEW:-100}
TOTAL=${TOTAL:-1000}
FLOOD_MAX=${FLOOD_MAX:-200000000}
CONNECT_S=${CONNECT_S:-3}
PY=/usr/bin/python3
GEN=${GEN:-$REPO/build/xdp_gen}
FLOOD=${FLOOD:-xdp_gen}
FLOOD_RT=${FLOOD_RT:-1}
CLIENT_CPU=${CLIENT_CPU:-1}
FLOOD_HOLD=${FLOOD_HOLD:-1}
PROBE=${PROBE:-1}
PROBE_BIN=${PROBE_BIN:-$REPO/build/newconn_probe}
PROBE_OUT=${PROBE_OUT:-/tmp/newconn_probe}
RT=()
[ "$FLOOD_RT" = 1 ] && RT=(chrt -f 50)
HOLD=()
[ "$FLOOD_HOLD" = 1 ] && HOLD=(--hold lo)
CPIN=()
[ -n "$CLIENT_CPU" ] && CPIN=(taskset -c "$CLIENT_CPU")

usage() { sed -n '/^#   bench/,/^#   --no-build/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--conns) CONNS=${2:?}; shift ;;
	--parallel) PAR=${2:?}; shift ;;
	--cases) CASES=${2:?}; shift ;;
	--no-build) BUILD=0 ;;
	*) usage ;;
	esac
	shift
done
[[ $CONNS =~ ^[0-9]+$ ]] && [ "$CONNS" -ge 1 ] && [ "$CONNS" -le 200 ] || { echo "--conns wants 1..200" >&2; exit 2; }
NCASES=$(echo "$CASES" | tr ',' '\n' | grep -c .)
[ $((CONNS * NCASES)) -le 240 ] || { echo "--conns: at most $((240 / NCASES)) for $NCASES cases (N new-client addresses of 198.18.0.10-249 per case)" >&2; exit 2; }
[[ $PAR =~ ^[0-9]+$ ]] && [ "$PAR" -ge 1 ] && [ "$PAR" -le 20 ] || { echo "--parallel wants 1..20" >&2; exit 2; }

N=xrln$$
NS_C=${N}c NS_S=${N}s NS_F=${N}f
INST=newconn$$
PIN_DIR=/sys/fs/bpf/xrl/$INST
TMP=
PIDS=()
CLEANED=0
log() { printf '[bench_newconn] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

stop_pid() {
	local pid=$1
	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
	kill -INT "$pid" 2>/dev/null
	for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}
cleanup() {
	[ "$CLEANED" = 1 ] && return 0
	CLEANED=1
	local pid ns
	for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
	if [ -e /run/netns/"$NS_S" ]; then
		xrls detach s0 >/dev/null 2>&1
		xrls detach s1 >/dev/null 2>&1
	fi
	if [ -d "$PIN_DIR" ]; then
		log "pins left in $PIN_DIR: removing them"
		rm -rf "$PIN_DIR"
	fi
	for ns in "$NS_C" "$NS_S" "$NS_F"; do
		ip netns list 2>/dev/null | grep -qw "^$ns" && ip netns del "$ns"
	done
	[ -n "$TMP" ] && [ -d "$TMP" ] && rm -rf "$TMP"
	return 0
}
trap cleanup EXIT
trap 'log "interrupted"; cleanup; exit 130' INT
trap 'log "terminated"; cleanup; exit 143' TERM

xrls() { nsenter --net=/run/netns/"$NS_S" "$XRL" --instance "$INST" "$@"; }

[ "$(id -u)" = 0 ] || die "must run as root (namespaces, XDP)"
for c in ip trafgen curl nsenter nstat taskset jq awk timeout "$PY"; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' not found (scripts/deps.sh installs the tools)"
done
if [ "$BUILD" = 1 ]; then
	make -C "$REPO" --no-print-directory build/xrl build/xdp_gen build/newconn_probe >&2 || die "make failed"
fi
[ -x "$XRL" ] || die "xrl not found at $XRL"
[ "$FLOOD" = trafgen ] || [ -x "$GEN" ] || die "no-skb generator not found at $GEN (make build/xdp_gen)"
[ "$PROBE" = 0 ] || { [ -x "$PROBE_BIN" ] && command -v chrt >/dev/null; } ||
	die "PROBE=1 wants $PROBE_BIN (make build/newconn_probe) and chrt (or run with PROBE=0)"
TMP=$(mktemp -d /tmp/xrln.XXXXXX) || die "mktemp failed"

# ------------------------------------------------------------------ topology
for ns in "$NS_C" "$NS_S" "$NS_F"; do
	ip netns add "$ns" || die "cannot create namespace $ns"
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 >/dev/null
done
ip -n "$NS_S" link add s0 type veth peer name c0 netns "$NS_C" || die "veth s0/c0"
ip -n "$NS_S" link add s1 type veth peer name f0 netns "$NS_F" || die "veth s1/f0"
ip -n "$NS_S" addr add 198.18.0.1/24 dev s0
ip -n "$NS_S" addr add 198.18.1.1/24 dev s1
ip -n "$NS_C" addr add 198.18.0.2/24 dev c0
for i in $(seq 10 249); do ip -n "$NS_C" addr add 198.18.0."$i"/24 dev c0; done
ip -n "$NS_F" addr add 198.18.1.2/24 dev f0
for l in "$NS_S s0" "$NS_S s1" "$NS_C c0" "$NS_F f0"; do
	set -- $l
	ip -n "$1" link set "$2" up
done
# the server answers the spoofed SYNs through a gateway that does not exist:
# a permanent neighbour entry with a MAC nobody owns, so the SYN-ACKs leave
# on s1 and the flood namespace discards them (PACKET_OTHERHOST: no ICMP, no
# ARP). A route must exist, or the kernel frees each request at once and the
# flood never fills a SYN queue. rp_filter off so the SYNs reach TCP.
ip -n "$NS_S" neigh add 198.18.1.254 lladdr 02:00:5e:00:53:fe dev s1 nud permanent &&
	ip -n "$NS_S" route add 10.16.0.0/12 via 198.18.1.254 dev s1 ||
	die "cannot route 10.16.0.0/12 to the missing gateway"
ip netns exec "$NS_S" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
	net.ipv4.conf.s1.rp_filter=0 net.ipv4.conf.s0.rp_filter=0 >/dev/null
[ -n "${SYNCOOKIES:-}" ] && { ip netns exec "$NS_S" sysctl -qw net.ipv4.tcp_syncookies="$SYNCOOKIES" >/dev/null || die "cannot set tcp_syncookies=$SYNCOOKIES"; }
SYNCOOKIES=$(ip netns exec "$NS_S" sysctl -n net.ipv4.tcp_syncookies)
# SYN tries within CONNECT_S: retransmissions 1 s apart for the first
# tcp_syn_linear_timeouts of them (Linux >= 6.5), doubling after
LINEAR=$(ip netns exec "$NS_C" sysctl -n net.ipv4.tcp_syn_linear_timeouts 2>/dev/null || echo 0)
TRIES=$(awk -v l="$LINEAR" -v c="$CONNECT_S" 'BEGIN { t = 0; rto = 1; n = 1; while (1) { t += rto; if (t >= c) break; n++; if (n > l) rto *= 2 } print n }')
BACKLOG=$(ip netns exec "$NS_S" sysctl -n net.ipv4.tcp_max_syn_backlog)
S1_MAC=$(ip netns exec "$NS_S" cat /sys/class/net/s1/address)
sleep 1

# the listener: python3's threading HTTP server, 200 and a short body for every GET
(
	cd "$TMP" && exec "${CPIN[@]}" ip netns exec "$NS_S" timeout -s INT -k 3 3600 "$PY" -c '
import http.server, socketserver
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers(); self.wfile.write(b"ok\n")
    def log_message(self, *a): pass
class S(http.server.ThreadingHTTPServer):
    request_queue_size = 1024
    daemon_threads = True
S(("0.0.0.0", 80), H).serve_forever()'
) >"$TMP/server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do
	ip netns exec "$NS_C" curl -s -o /dev/null --max-time 1 http://198.18.0.1/ && break
	sleep 0.1
done
ip netns exec "$NS_C" curl -s -o /dev/null --max-time 2 http://198.18.0.1/ || die "the listener does not answer: $(cat "$TMP/server.log")"

# --syn-proxy's case: an XDP_PASS program for c0 (bench/bench_path.d/xdp_pass.bpf.c)
"${CLANG:-clang}" -O2 -target bpf -I/usr/include/"$(gcc -dumpmachine)" -c "$REPO/bench/bench_path.d/xdp_pass.bpf.c" \
	-o "$TMP/xdp_pass.o" || die "cannot build bench/bench_path.d/xdp_pass.bpf.c"

cat >"$TMP/syn.cfg" <<EOF
{
  eth(da=$S1_MAC, type=0x0800),
  ipv4(saddr=10.16.0.0, saddr[1]=drnd(16, 31), saddr[2]=drnd(), saddr[3]=drnd(), daddr=198.18.1.1, ttl=64, df),
  tcp(sp=drnd(1024, 65535), dp=80, seq=drnd(), syn, win=64240)
}
EOF

# one curl: "CODE CONNECT_S" (000 when it failed)
cat >"$TMP/one.sh" <<EOF
#!/bin/sh
exec ip netns exec $NS_C curl -s -o /dev/null --interface "\$1" --connect-timeout $CONNECT_S \
	--max-time $((CONNECT_S + 1)) -w '%{http_code} %{time_connect}\n' http://198.18.0.1/
EOF
chmod +x "$TMP/one.sh"

# TcpExtSyncookiesSent and TcpExtTCPReqQFullDrop of the server namespace
tcp_counters() {
	ip netns exec "$NS_S" nstat -az TcpExtSyncookiesSent TcpExtTCPReqQFullDrop 2>/dev/null |
		awk '$1 == "TcpExtSyncookiesSent" { c = $2 } $1 == "TcpExtTCPReqQFullDrop" { d = $2 } END { print c + 0, d + 0 }'
}

rule_opts() { # CASE
	case $1 in
	none) ;;
	persrc) echo "--syn --rate $RATE/s --burst $BURST --per 32" ;;
	newsrc) echo "--syn --rate $RATE/s --burst $BURST --per 32 --new-sources $NEW/s --new-burst $NEW" ;;
	total) echo "--syn --rate $RATE/s --burst $BURST --per 32 --total $TOTAL/s --total-burst $TOTAL" ;;
	synproxy) echo "--proto tcp --dport 80 --syn-proxy --rate ${SP_RATE:-1000}/s --burst ${SP_RATE:-1000} --per 32" ;;
	esac
}

# "OK N MEDIAN P99": successes, attempts, median and 99th percentile connect time of the successes
summary() { # FILE
	local ok n med p99
	n=$(wc -l <"$1")
	ok=$(awk '$1 == 200' "$1" | wc -l)
	med=$(awk '$1 == 200 { print $2 }' "$1" | sort -g | awk '{ t[NR] = $1 } END { printf "%.3f", NR ? t[int((NR + 1) / 2)] : 0 }')
	p99=$(awk '$1 == 200 { print $2 }' "$1" | sort -g | awk '{ t[NR] = $1 } END { i = int(NR * 0.99 + 0.999); if (i < 1) i = 1; printf "%.3f", NR ? t[i] : 0 }')
	echo "$ok $n $med $p99"
}

ROWS=()
first=10
for c in ${CASES//,/ }; do
	case $c in none|persrc|newsrc|total|synproxy) ;; *) die "unknown case '$c' (none, persrc, newsrc, total, synproxy)" ;; esac
	if [ "$c" = synproxy ]; then
		# the SYN-ACKs come back to c0 by XDP_TX: a veth takes those only into a peer with NAPI
		ip -n "$NS_C" link set dev c0 xdp obj "$TMP/xdp_pass.o" sec xdp || die "cannot attach XDP_PASS to c0"
	fi
	xrls attach s0 >/dev/null 2>"$TMP/err" || die "xrl attach s0: $(cat "$TMP/err")"
	xrls attach s1 >/dev/null 2>"$TMP/err" || die "xrl attach s1: $(cat "$TMP/err")"
	opts=$(rule_opts "$c")
	if [ -n "$opts" ]; then
		# shellcheck disable=SC2086  # the options are words
		xrls rule add 0.0.0.0/0 $opts >/dev/null 2>"$TMP/err" || die "xrl rule add 0.0.0.0/0 $opts: $(cat "$TMP/err")"
	fi
	# the returning client connects once before the flood
	"$TMP/one.sh" 198.18.0.2 >/dev/null
	nst0=$(tcp_counters)
	rx0=$(ip netns exec "$NS_S" cat /sys/class/net/s1/statistics/rx_packets)
	tf0=$(date +%s%N)
	if [ "$FLOOD" = trafgen ]; then
		(
			cd "$TMP" && exec ip netns exec "$NS_F" timeout -s INT -k 3 120 trafgen --no-sock-mem \
				--notouch-irq --dev f0 --conf "$TMP/syn.cfg" --num "$FLOOD_MAX" --cpus 1
		) >"$TMP/flood.$c.log" 2>&1 &
	else
		# a generator killed before it detached (--hold) leaves its program on lo
		ip -n "$NS_F" link set dev lo xdpgeneric off 2>/dev/null
		(
			cd "$TMP" && exec timeout -s INT -k 3 120 taskset -c 0 "${RT[@]}" "$GEN" send --netns /run/netns/"$NS_F" \
				--ifname f0 --dst-mac "$S1_MAC" --dst 198.18.1.1 --random 10.16.0.0 1048576 \
				--syn 80 --count "$FLOOD_MAX" --secs 110 "${HOLD[@]}"
		) >"$TMP/flood.$c.log" 2>&1 &
	fi
	fpid=$!
	PIDS+=("$fpid")
	ppid=
	if [ "$PROBE" = 1 ] && [ -n "$opts" ]; then
		rid=$(xrls --json stats | jq -r '.rules[0].id')
		# SCHED_FIFO: it wakes once a millisecond for microseconds, and must not miss the clients' moments
		taskset -c 1 chrt -f 20 "$PROBE_BIN" --pins "$PIN_DIR" --rule "$rid" --secs 60 --cap cli:"$NS_C":c0:out \
			--cap srv:"$NS_S":s0:in --cap fld:"$NS_S":s1:in >"$TMP/probe.$c" 2>"$TMP/probe.$c.err" &
		ppid=$!
		PIDS+=("$ppid")
	fi
	sleep 2
	t0=$(date +%s%N)
	seq "$first" $((first + CONNS - 1)) | sed 's/^/198.18.0./' |
		"${CPIN[@]}" timeout 300 xargs -P "$PAR" -n 1 "$TMP/one.sh" >"$TMP/new.$c" 2>/dev/null &
	npid=$!
	yes 198.18.0.2 | head -n "$CONNS" |
		"${CPIN[@]}" timeout 300 xargs -P "$PAR" -n 1 "$TMP/one.sh" >"$TMP/ret.$c" 2>/dev/null
	wait "$npid"
	t1=$(date +%s%N)
	first=$((first + CONNS))
	xrls --json stats >"$TMP/stats.$c.json" 2>"$TMP/stats.$c.err" || log "xrl stats failed: $(cat "$TMP/stats.$c.err" "$TMP/stats.$c.json" | head -c 300)"
	xrls top >"$TMP/top.$c" 2>/dev/null
	[ -n "$ppid" ] && stop_pid "$ppid"
	stop_pid "$fpid"
	if [ -n "$ppid" ]; then
		cp "$TMP/probe.$c" "$PROBE_OUT.$c"
		nb=()
		[ "$c" = newsrc ] && nb=(--budget "$NEW")
		"$PY" "$REPO/bench/newconn_probe.py" "${nb[@]}" --row "$TMP/row.$c" "$PROBE_OUT.$c" >&2 ||
			log "probe analysis failed"
	fi
	tf1=$(date +%s%N)
	grep -m1 '^xdp_gen:' "$TMP/flood.$c.log" >&2
	rx1=$(ip netns exec "$NS_S" cat /sys/class/net/s1/statistics/rx_packets)
	nst1=$(tcp_counters)
	if [ "$FLOOD" = trafgen ]; then
		sent=$(tr '\r' '\n' <"$TMP/flood.$c.log" | awk '/packets outgoing/ && $1 ~ /^[0-9]+$/ { print $1; exit }')
		fsecs=$(tr '\r' '\n' <"$TMP/flood.$c.log" | awk '/usec on CPU/ && $1 ~ /^[0-9]+$/ { printf "%d.%06d\n", $1, $3; exit }')
	else
		# xdp_gen stopped by a signal prints nothing: what reached the server's XDP, over the wall time
		sent=$((rx1 - rx0))
		fsecs=$(awk "BEGIN { printf \"%.2f\", ($tf1 - $tf0) / 1e9 }")
	fi
	# the server's SYN handling meanwhile: cookies sent, SYNs dropped with the queue full
	read -r ck qd < <(paste <(echo "$nst0") <(echo "$nst1") | awk '{ printf "%d %d", $3 - $1, $4 - $2 }')
	read -r nok nn nmed np99 < <(summary "$TMP/new.$c")
	read -r rok rn rmed _ < <(summary "$TMP/ret.$c")
	pkts=$(jq -r '.packets' "$TMP/stats.$c.json")
	drop=$(jq -r '.dropped' "$TMP/stats.$c.json")
	nref=$(jq -r '[.rules[]?.new_refused] | add // 0' "$TMP/stats.$c.json")
	tref=$(jq -r '[.rules[]?.total_refused] | add // 0' "$TMP/stats.$c.json")
	created=$(jq -r '.created' "$TMP/stats.$c.json")
	alert=$(grep -m1 'new sources arrive\|spoofed-source flood passes\|under a SYN flood' "$TMP/top.$c" | cut -c1-160)
	prow='-|-|-|-'
	[ -s "$TMP/row.$c" ] && prow=$(cat "$TMP/row.$c")
	row=$(printf '%s|%s|%d/%d|%.2f|%.2f|%d/%d|%.2f|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s' "$c" "${opts:-(no rule)}" \
		"$nok" "$nn" "$nmed" "$np99" "$rok" "$rn" "$rmed" "$prow" "${sent:-?}" "${fsecs:-?}" "$pkts" "$drop" "$nref" "$tref" "$created" "$ck" "$qd" "${alert:--}")
	ROWS+=("$row")
	log "case $c: new clients $nok/$nn (median connect ${nmed}s, p99 ${np99}s), returning $rok/$rn (${rmed}s); flood ${sent:-?} SYNs in ${fsecs:-?} s; xrl saw $pkts, dropped $drop (new_refused $nref, total_refused $tref), created $created; server: $ck SYN cookies, $qd SYNs dropped (queue full); clients took $(awk "BEGIN { printf \"%.1f\", ($t1 - $t0) / 1e9 }") s"
	[ -n "$alert" ] && log "  top: $alert"
	xrls detach s1 >/dev/null 2>&1
	xrls detach s0 >/dev/null 2>&1
	[ "$c" = synproxy ] && ip -n "$NS_C" link set dev c0 xdp off
	sleep 1
done

# ------------------------------------------------------------------ markdown
printf '\n### Legitimate clients during a spoofed SYN flood\n\n'
printf 'bench/bench_newconn.sh, %s, kernel %s, %d CPUs, load average %s. A TCP SYN flood from random sources of 10.16.0.0/12 (%s on CPU 0%s, its own veth pair; SYNs that reached the server end counted) at an HTTP listener on :80 (python3 http.server; SYN cookies %s, tcp_max_syn_backlog %s) while curl clients connect through the other veth: %d connections of each kind per case, %d at once. Clients and listener on CPU %s. Success: HTTP 200 within %d s of connect + 1 s (%s SYN tries: tcp_syn_linear_timeouts %s). "new": every connection from an address never seen; "returning": from one address that connected just before the flood. xrl rules on 0.0.0.0/0, both interfaces one instance. Probe columns (PROBE=1, bench/newconn_probe.py): the new clients'"'"' SYNs (every try) that xrl passed, of those sent while the flood reached XDP at at least half its running rate over the ~2 ms around them ("flood full") and of those sent while it was under a tenth of it ("in a gap": the generator off the CPU); the connections all of whose tries were sent with the flood full, and how many got a SYN through; the share of the clients'"'"' time the flood was in a gap.\n\n' \
	"$(date -u +%Y-%m-%d)" "$(uname -r)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$FLOOD" "$([ "$FLOOD_RT" = 1 ] && echo ', SCHED_FIFO')$([ "$FLOOD_HOLD" = 1 ] && [ "$FLOOD" != trafgen ] && echo ', --hold lo')" "$SYNCOOKIES" "$BACKLOG" "$CONNS" "$PAR" "${CLIENT_CPU:-any}" "$CONNECT_S" "$TRIES" "$LINEAR"
printf '| case | rule | new clients ok | median connect s | p99 connect s | returning ok | median connect s | new SYNs passed, flood full | in a gap | gap-free connections ok | clients'"'"' time in gaps | flood SYNs (reached s1) | in s | xrl saw | xrl dropped | new_refused | total_refused | buckets created | SYN cookies sent | SYNs dropped, queue full | top said |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for r in "${ROWS[@]}"; do
	printf '| %s |\n' "${r//|/ | }"
done
