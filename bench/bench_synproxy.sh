#!/usr/bin/env bash
# What a spoofed SYN costs the receiving host on the no-skb path (XDP live
# frames from bench/xdp_gen --syn, random sources over 10.16.0.0/12, no skb
# before the receiver's XDP, as with a NIC driver's native XDP), per SYN
# above a bare XDP_DROP program (the floor), for:
#   xrl --syn-proxy      the SYN answered at XDP with a cookie SYN-ACK (XDP_TX)
#   kernel SYN cookies   no filter; tcp_syncookies=2: the kernel answers every
#                        SYN with its own cookie (skb, TCP, the output path)
#   nftables synproxy    the synproxy statement (SYNs untracked in raw
#                        prerouting, answered from the input hook; conntrack)
# Every SYN-ACK goes back to the generator's end, where an XDP_DROP program
# takes it: each contender pays for sending its answers, none for what the
# other end does with them. ns/SYN is the generator's test-run timer per
# frame (bench/xdp_gen's run_ns: the receiver's softirq work runs inside
# it on the same CPU); above the floor = median over rounds of (contender -
# floor of the same round). Not a test; see docs/BENCHMARKS.md.
#
#   bench/bench_synproxy.sh [--runs N] [--count FRAMES] [--markdown FILE] [--no-build]
#
#   --runs N          rounds, each measuring every contender once (5)
#   --count FRAMES    SYNs per measurement (2000000; bounded by 20 s too)
#   --markdown FILE   write the markdown section to FILE instead of stdout
#   --no-build        do not run make
#
# Environment: XRL (build/xrl), GEN (build/xdp_gen), DROP_OBJ
# (build/xrl_drop.bpf.o), CPU (0: the generator's CPU).
#
# Topology (private to one run, named xrly<pid>): netns S (s1 198.18.1.1,
# a listener on :80) and netns F (f0 198.18.1.2, XDP_DROP); 10.16.0.0/12 is
# routed from S to f0 by a permanent neighbour entry, so the kernel's and
# nftables' SYN-ACKs leave s1 for f0 and are dropped there by its XDP.
# No link out of the two namespaces; every flood bounded by count and
# timeout(1); EXIT/INT/TERM clean up (processes by pid, the xrl instance,
# the namespaces, the temp directory).
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=5
COUNT=2000000
MARKDOWN=
BUILD=1
XRL=${XRL:-$REPO/build/xrl}
GEN=${GEN:-$REPO/build/xdp_gen}
DROP_OBJ=${DROP_OBJ:-$REPO/build/xrl_drop.bpf.o}
CPU=${CPU:-0}
PY=/usr/bin/python3

usage() { sed -n '/^#   bench/,/^#   --no-build/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--runs) RUNS=${2:?}; shift ;;
	--count) COUNT=${2:?}; shift ;;
	--markdown) MARKDOWN=${2:?}; shift ;;
	--no-build) BUILD=0 ;;
	*) usage ;;
	esac
	shift
done
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] && [ "$RUNS" -le 50 ] || { echo "--runs wants 1..50" >&2; exit 2; }
[[ $COUNT =~ ^[0-9]+$ ]] && [ "$COUNT" -ge 1000 ] && [ "$COUNT" -le 50000000 ] || { echo "--count wants 1000..50000000" >&2; exit 2; }

N=xrly$$
NS_S=${N}s
NS_F=${N}f
INST=synb$$
PIN_DIR=/sys/fs/bpf/xrl/$INST
TMP=
PIDS=()
CLEANED=0
log() { printf '[bench_synproxy] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
xs() { nsenter --net=/run/netns/"$NS_S" "$XRL" --instance "$INST" "$@"; }
cleanup() {
	[ "$CLEANED" = 1 ] && return 0
	CLEANED=1
	local pid
	for pid in "${PIDS[@]}"; do
		kill -INT "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	[ -e /run/netns/"$NS_S" ] && xs detach s1 >/dev/null 2>&1
	[ -d "$PIN_DIR" ] && rm -rf "$PIN_DIR"
	ip netns del "$NS_S" 2>/dev/null
	ip netns del "$NS_F" 2>/dev/null
	[ -n "$TMP" ] && rm -rf "$TMP"
	return 0
}
trap cleanup EXIT
trap 'log "interrupted"; cleanup; exit 130' INT
trap 'log "terminated"; cleanup; exit 143' TERM

[ "$(id -u)" = 0 ] || die "must run as root (namespaces, XDP)"
for c in ip nft nsenter taskset timeout awk "$PY"; do
	command -v "$c" >/dev/null 2>&1 || die "missing $c (make deps)"
done
if [ "$BUILD" = 1 ]; then
	make -C "$REPO" --no-print-directory build/xrl build/xdp_gen build/xrl_drop.bpf.o >&2 || die "make failed"
fi
[ -x "$XRL" ] && [ -x "$GEN" ] && [ -f "$DROP_OBJ" ] || die "build/xrl, build/xdp_gen and build/xrl_drop.bpf.o are needed"
TMP=$(mktemp -d /tmp/xrly.XXXXXX) || die "mktemp failed"

# ------------------------------------------------------------------ topology
for ns in "$NS_S" "$NS_F"; do
	ip netns add "$ns" || die "cannot create namespace $ns"
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 >/dev/null
done
ip -n "$NS_S" link add s1 type veth peer name f0 netns "$NS_F" || die "veth s1/f0"
ip -n "$NS_S" addr add 198.18.1.1/24 dev s1
ip -n "$NS_F" addr add 198.18.1.2/24 dev f0
ip -n "$NS_S" link set s1 up && ip -n "$NS_F" link set f0 up || die "links up"
F0_MAC=$(ip netns exec "$NS_F" cat /sys/class/net/f0/address)
S1_MAC=$(ip netns exec "$NS_S" cat /sys/class/net/s1/address)
ip -n "$NS_S" neigh replace 198.18.1.2 lladdr "$F0_MAC" dev s1 nud permanent &&
	ip -n "$NS_S" route add 10.16.0.0/12 via 198.18.1.2 dev s1 || die "cannot route 10.16.0.0/12 to f0"
ip netns exec "$NS_S" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
	net.ipv4.conf.s1.rp_filter=0 net.ipv4.tcp_syncookies=2 >/dev/null
ip netns exec "$NS_S" sysctl -qw net.netfilter.nf_conntrack_tcp_loose=0 >/dev/null 2>&1
ip -n "$NS_F" link set dev f0 xdpdrv obj "$DROP_OBJ" sec xdp 2>/dev/null ||
	ip -n "$NS_F" link set dev f0 xdp obj "$DROP_OBJ" || die "cannot attach XDP_DROP to f0"
sleep 1
(
	exec ip netns exec "$NS_S" timeout -s INT -k 3 3600 "$PY" -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 80)); s.listen(4096)
time.sleep(3600)'
) >"$TMP/listener.log" 2>&1 &
PIDS+=($!)
sleep 0.5

# ------------------------------------------------------------------ contenders
# veth takes redirected frames only when the receiving end has an XDP program or GRO on:
# the contenders without XDP get GRO
gro() { "$GEN" gro --netns /run/netns/"$NS_S" --ifname s1 "$1" >/dev/null; }
setup() { # CONTENDER
	case $1 in
	floor) ip -n "$NS_S" link set dev s1 xdpdrv obj "$DROP_OBJ" sec xdp ;;
	kernel) gro on ;;
	nft)
		gro on || return 1
		ip netns exec "$NS_S" nft -f - <<'EOF'
table ip xrly {
	chain pre {
		type filter hook prerouting priority raw; policy accept;
		tcp dport 80 tcp flags syn notrack
	}
	chain in {
		type filter hook input priority filter; policy accept;
		tcp dport 80 ct state invalid,untracked synproxy mss 1460 wscale 7 timestamp sack-perm
		ct state invalid drop
	}
}
EOF
		;;
	xrl)
		xs attach s1 >/dev/null && xs rule add 0.0.0.0/0 --proto tcp --dport 80 --syn-proxy --rate 1000/s >/dev/null ;;
	esac
}
teardown() { # CONTENDER
	case $1 in
	floor) ip -n "$NS_S" link set dev s1 xdpdrv off ;;
	kernel) gro off ;;
	nft) ip netns exec "$NS_S" nft delete table ip xrly; gro off ;;
	xrl) xs detach s1 >/dev/null ;;
	esac
	return 0
}
# run_ns of one flood: the generator's test-run timer per SYN
flood() {
	ip -n "$NS_F" link set dev lo xdpgeneric off 2>/dev/null
	timeout -s INT -k 3 25 taskset -c "$CPU" "$GEN" send --netns /run/netns/"$NS_F" --ifname f0 \
		--dst-mac "$S1_MAC" --dst 198.18.1.1 --random 10.16.0.0 1048576 --syn 80 \
		--count "$COUNT" --secs 20 --hold lo 2>&1 | sed -n 's/.*run_ns=\([0-9.]*\).*/\1/p'
}
nst() { ip netns exec "$NS_S" nstat -az TcpExtSyncookiesSent 2>/dev/null | awk '$1 == "TcpExtSyncookiesSent" { print $2 + 0 }'; }

CONTENDERS="floor xrl kernel nft"
: >"$TMP/runs"
for r in $(seq "$RUNS"); do
	for c in $CONTENDERS; do
		setup "$c" || die "cannot set up $c"
		ck0=$(nst)
		ns=$(flood)
		ck=$(( $(nst) - ck0 ))
		teardown "$c"
		[ -n "$ns" ] || die "no figure from xdp_gen for $c"
		echo "$r $c $ns $ck" >>"$TMP/runs"
		log "round $r: $c $ns ns/SYN (kernel cookies sent: $ck)"
	done
done

# medians: of each contender's run, and of (contender - floor) per round
med() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) { print "nan"; exit } if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
fig() { awk -v c="$1" '$2 == c { print $3 }' "$TMP/runs" | med; }
above() { awk -v c="$1" '$2 == "floor" { f[$1] = $3 } $2 == c { v[$1] = $3 } END { for (r in v) if (r in f) printf "%.1f\n", v[r] - f[r] }' "$TMP/runs" | med; }
cookies() { awk -v c="$1" '$2 == c { print $4 }' "$TMP/runs" | med; }
X=$(above xrl) K=$(above kernel) NF=$(above nft)
ratio=$(awk -v x="$X" -v k="$K" 'BEGIN { if (k > 0) printf "%.3f", x / k; else print "nan" }')
met=$(awk -v r="$ratio" 'BEGIN { print (r != "nan" && r <= 0.2) ? "MET" : "NOT MET" }')

report() {
	printf '\n### Cost of a spoofed SYN, no-skb path (bench/bench_synproxy.sh)\n\n'
	printf 'bench/bench_synproxy.sh --runs %s --count %s, %s, kernel %s, %d CPUs, load average %s. bench/xdp_gen --syn: XDP live frames of 54-byte TCP SYNs from random sources of 10.16.0.0/12 to 198.18.1.1:80 (a listener), redirected into a veth, the generator on CPU %s; the SYN-ACKs of every contender go back to the generator'"'"'s end and are dropped there by XDP. ns/SYN: the generator'"'"'s test-run timer per frame (the receiver'"'"'s softirq work inside it); above the floor: median over rounds of (contender - bare XDP_DROP of the same round).\n\n' \
		"$RUNS" "$COUNT" "$(date -u +%Y-%m-%d)" "$(uname -r)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$CPU"
	printf '| contender | ns/SYN (median) | above the floor | kernel SYN cookies sent per run |\n|---|---|---|---|\n'
	printf '| bare XDP_DROP (floor) | %s | 0 | %s |\n' "$(fig floor)" "$(cookies floor)"
	printf '| xrl --syn-proxy (XDP_TX) | %s | %s | %s |\n' "$(fig xrl)" "$X" "$(cookies xrl)"
	printf '| kernel SYN cookies, no filter (tcp_syncookies=2) | %s | %s | %s |\n' "$(fig kernel)" "$K" "$(cookies kernel)"
	printf '| nftables synproxy | %s | %s | %s |\n' "$(fig nft)" "$NF" "$(cookies nft)"
	printf '\nTarget: a spoofed SYN at most 1/5 of the kernel'"'"'s own SYN-cookie cost above the floor: xrl %s / kernel %s = %s: %s\n' "$X" "$K" "$ratio" "$met"
}
printf 'target: spoofed SYN, xrl --syn-proxy above the floor <= 1/5 of the kernel'"'"'s SYN cookies: %s / %s = %s: %s\n' "$X" "$K" "$ratio" "$met"
if [ -n "$MARKDOWN" ]; then report >"$MARKDOWN"; else report; fi
