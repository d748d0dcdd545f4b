#!/usr/bin/env bash
# tests/e2e/test_synproxy.sh: --syn-proxy with real TCP clients and a real
# listener, and a spoofed SYN flood.
#
#   netns C (clients)                 netns S (server)               netns F (flood)
#   c0 198.18.0.2/24, fd00:18::2 ==== s0 198.18.0.1/24, fd00:18::1   s1 198.18.1.1/24 ==== f0 198.18.1.2/24
#   + 198.18.0.10-.109 (new clients)  echo listeners on :8080, :8081, :8082
#                                     xrl on s0 and s1 (one instance)
#
# Rules: 0.0.0.0/0 and ::/0 --proto tcp --dport 8080 --syn-proxy --rate
# $RATE/s (and 8082 the same, so a cookie of 8080 sent to 8082 is a bad
# one there); 8081 has no rule. c0 has an XDP_PASS program: a veth takes
# XDP_TX frames only into a peer with NAPI (XDP or GRO on).
#
# Checks:
#  1. xrl status names the completion path (tc, bpf_sk_assign_tcp_reqsk);
#  2. real connections complete through the proxy, data both ways (200 kB
#     echoed), IPv4 and IPv6, with and without timestamps and window
#     scaling (the client namespace's sysctls); each new source proven once;
#  3. crafted ACKs (scapy): a random cookie and a cookie of another port are
#     dropped and counted as bad cookies, an ACK to a port without the rule
#     makes no connection, the valid ACK makes one;
#  4. a proven source flooding SYNs from its real address is held to the rule:
#     it sends 3000 SYNs at once, at most burst + rate x time pass;
#  5. during a spoofed SYN flood (build/xdp_gen --syn from F, random sources
#     over 10.16.0.0/12, bounded by count and time): at least 99 of 100 new
#     clients connect, the server's kernel saw almost none of the flood
#     (TcpExtSyncookiesSent, TcpExtListenOverflows, TcpInSegs from nstat in
#     S), the table tracks only proven sources, and xrl top says the rule
#     is absorbing a SYN flood.
# The replay of a cookie past its lifetime is tested on the exact test clock
# (tests/prog/test_synproxy.c). Needs root, BPF, clang, nstat, nsenter, jq,
# Debian's python3 with scapy, build/xdp_gen.
set -u
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
GEN=${GEN:-$XRLT_REPO/build/xdp_gen}
PY=/usr/bin/python3
PEER=$XRLT_REPO/tests/e2e/synproxy_peer.py
FORGE=$XRLT_REPO/tests/e2e/synproxy_forge.py
RATE=${RATE:-1000}          # per source, over all its TCP packets to the port (200 kB echoes pass)
NEW=${NEW:-100}                 # new clients during the flood
FLOOD_MAX=${FLOOD_MAX:-20000000}
FLOOD_SECS=${FLOOD_SECS:-25}
INST=$XRLT_NAME
NS_C=${XRLT_NAME}c
NS_S=${XRLT_NAME}s
NS_F=${XRLT_NAME}f
# shellcheck disable=SC2034  # used by the cleanup hook (a string run later)
PIN_DIR=/sys/fs/bpf/xrl/$INST

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd ip nsenter nstat clang jq timeout awk
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (make build/xrl, or set XRL=)"
[ -x "$GEN" ] || xrlt_fail "no-skb generator not found at $GEN (make build/xdp_gen, or set GEN=)"
"$PY" -c 'import scapy' 2>/dev/null || xrlt_fail "Debian's python3-scapy is missing (make deps)"
xrlt_init

xs() { nsenter --net=/run/netns/"$NS_S" "$XRL" --instance "$INST" "$@"; }
inc() { ip netns exec "$NS_C" "$@"; }
xrlt_on_cleanup 'xs detach s0 >/dev/null 2>&1; xs detach s1 >/dev/null 2>&1; [ -d "$PIN_DIR" ] && rm -rf "$PIN_DIR"; ip netns del "$NS_C" 2>/dev/null; ip netns del "$NS_S" 2>/dev/null; ip netns del "$NS_F" 2>/dev/null; true'

# ---- topology
for ns in "$NS_C" "$NS_S" "$NS_F"; do
	ip netns add "$ns" || xrlt_fail "cannot create namespace $ns"
	ip -n "$ns" link set lo up
done
ip -n "$NS_C" link add c0 type veth peer name s0 netns "$NS_S" || xrlt_fail "cannot create c0/s0"
ip -n "$NS_F" link add f0 type veth peer name s1 netns "$NS_S" || xrlt_fail "cannot create f0/s1"
ip -n "$NS_C" addr add 198.18.0.2/24 dev c0
ip -n "$NS_C" addr add fd00:18::2/64 dev c0 nodad
ip -n "$NS_S" addr add 198.18.0.1/24 dev s0
ip -n "$NS_S" addr add fd00:18::1/64 dev s0 nodad
ip -n "$NS_S" addr add 198.18.1.1/24 dev s1
ip -n "$NS_F" addr add 198.18.1.2/24 dev f0
for i in 3 4 5 $(seq 10 $((9 + NEW))); do echo "addr add 198.18.0.$i/32 dev c0"; done | ip -n "$NS_C" -batch - ||
	xrlt_fail "cannot add the new clients' addresses"
ip -n "$NS_C" link set c0 up && ip -n "$NS_S" link set s0 up && ip -n "$NS_S" link set s1 up &&
	ip -n "$NS_F" link set f0 up || xrlt_fail "cannot bring the links up"
# the flood's SYN-ACKs go back to f0 and nowhere else: no route to 10.16.0.0/12 anywhere
ip netns exec "$NS_S" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.s1.rp_filter=0 >/dev/null
clang -O2 -target bpf -I/usr/include/"$(gcc -dumpmachine)" -c "$XRLT_REPO/bench/bench_path.d/xdp_pass.bpf.c" -o "$XRLT_TMP/xdp_pass.o" ||
	xrlt_fail "cannot build the XDP_PASS program for c0"
ip -n "$NS_C" link set dev c0 xdp obj "$XRLT_TMP/xdp_pass.o" sec xdp ||
	xrlt_fail "cannot attach XDP_PASS to c0 (the SYN-ACKs' way back)"
sleep 1   # IPv6 addresses (nodad) and links up

# ---- listeners in S
for spec in 0.0.0.0:8080 0.0.0.0:8081 0.0.0.0:8082 fd00:18::1:8080; do
	addr=${spec%:*} port=${spec##*:}
	ip netns exec "$NS_S" timeout 600 "$PY" "$PEER" serve "$addr" "$port" "$XRLT_TMP/accept.$port" \
		>/dev/null 2>"$XRLT_TMP/serve.$port.err" &
	xrlt_track $!
	touch "$XRLT_TMP/accept.$port"
done
sleep 0.5

# ---- xrl
xs attach s0 >/dev/null 2>"$XRLT_TMP/err" || xrlt_fail "xrl attach s0: $(cat "$XRLT_TMP/err")"
xs attach s1 >/dev/null 2>"$XRLT_TMP/err" || xrlt_fail "xrl attach s1: $(cat "$XRLT_TMP/err")"
for r in "0.0.0.0/0 --proto tcp --dport 8080" "::/0 --proto tcp --dport 8080" "0.0.0.0/0 --proto tcp --dport 8082"; do
	# shellcheck disable=SC2086  # the rule is words
	xs rule add $r --syn-proxy --rate "$RATE/s" --burst "$RATE" >/dev/null 2>"$XRLT_TMP/err" ||
		xrlt_fail "xrl rule add $r: $(cat "$XRLT_TMP/err")"
done

section "status and rule save"
xs status >"$XRLT_TMP/status" 2>&1
n=$(grep -c "syn-proxy completion: tc ingress, bpf_sk_assign_tcp_reqsk" "$XRLT_TMP/status")
check "xrl status names the completion path on s0 and s1 (got $n)" "$n == 2"
xs rule save >"$XRLT_TMP/saved" 2>&1
n=$(grep -c -- "--syn-proxy" "$XRLT_TMP/saved")
check "rule save keeps --syn-proxy on the 3 rules (got $n)" "$n == 3"

# FIELD of the rule with MATCH in xrl --json stats
rf() { xs --json stats | jq -r --arg m "$1" --arg f "$2" '[.rules[] | select(.match == $m)][0][$f] // 0'; }
M4="0.0.0.0/0 --proto tcp --dport 8080"
M6="::/0 --proto tcp --dport 8080"
M82="0.0.0.0/0 --proto tcp --dport 8082"

section "real connections through the proxy"
conn() { # DESC ADDR N [SRC]: N connections, 200 kB echoed on each
	local out
	out=$(inc timeout 60 "$PY" "$PEER" connect "$2" 8080 "$3" 200000 ${4:+"$4"} 2>>"$XRLT_TMP/conn.err")
	check "$1: $3 of $3 connections carry 200 kB both ways (got '${out:-nothing}'; $(tail -1 "$XRLT_TMP/conn.err" 2>/dev/null))" "${out%% *}0 == ${3}0"
}
p0=$(rf "$M4" proven)
conn "IPv4, timestamps, window scaling, SACK" 198.18.0.1 3
p1=$(rf "$M4" proven)
check "IPv4: the source proved itself once, its later connections are the kernel's ($((p1 - p0)) proven)" "$p1 - $p0 == 1"
inc sysctl -qw net.ipv4.tcp_timestamps=0 net.ipv4.tcp_window_scaling=0
conn "IPv4, no timestamps, no window scaling" 198.18.0.1 2 198.18.0.3
inc sysctl -qw net.ipv4.tcp_timestamps=1 net.ipv4.tcp_window_scaling=0
conn "IPv4, timestamps, no window scaling" 198.18.0.1 2 198.18.0.4
inc sysctl -qw net.ipv4.tcp_timestamps=1 net.ipv4.tcp_window_scaling=1 net.ipv4.tcp_sack=0
conn "IPv4, timestamps and window scaling, no SACK" 198.18.0.1 2 198.18.0.5
inc sysctl -qw net.ipv4.tcp_sack=1
conn "IPv6, timestamps, window scaling, SACK" fd00:18::1 3
inc sysctl -qw net.ipv4.tcp_timestamps=0
conn "IPv6, no timestamps" fd00:18::1 2
inc sysctl -qw net.ipv4.tcp_timestamps=1
p2=$(rf "$M4" proven)
check "IPv4: 4 sources proven in all ($((p2 - p0)))" "$p2 - $p0 == 4"
n=$(rf "$M6" proven)
check "IPv6: 1 source proven ($n), SYN-ACKs sent $(rf "$M6" synack_sent)" "$n == 1"
# the tc programs of s0 and s1 (each attach loads its own): their xrl_tc_counts
tc=0
for id in $(bpftool -j map show 2>/dev/null | jq -r '.[] | select(.name == "xrl_tc_counts") | .id'); do
	n=$(bpftool -j map dump id "$id" 2>/dev/null | jq '[.[].formatted | select(.key == 0) | .values[].value] | add // 0')
	tc=$((tc + ${n:-0}))
done
check "the tc programs handed the kernel the 5 proven connections' request sockets (all xrl_tc_counts: $tc)" "$tc >= 5"

section "crafted ACKs"
CMAC=$(inc cat /sys/class/net/c0/address)
SMAC=$(ip netns exec "$NS_S" cat /sys/class/net/s0/address)
b4=$(rf "$M4" bad_cookie) b82=$(rf "$M82" bad_cookie) pr=$(rf "$M4" proven)
a80=$(wc -l <"$XRLT_TMP/accept.8080") a81=$(wc -l <"$XRLT_TMP/accept.8081")
out=$(inc timeout 30 "$PY" "$FORGE" c0 "$CMAC" "$SMAC" 198.18.0.250 198.18.0.1 8080 8082 8081 2>&1)
sleep 0.5
case $out in cookie*) ok "a SYN from a new source is answered with a cookie ($out)" ;; *) bad "no SYN-ACK to the crafted SYN: $out" ;; esac
check "an ACK with a random cookie is a bad cookie of its rule ($(( $(rf "$M4" bad_cookie) - b4 )))" "$(rf "$M4" bad_cookie) - $b4 == 1"
check "the valid cookie sent to another port is a bad cookie there ($(( $(rf "$M82" bad_cookie) - b82 )))" "$(rf "$M82" bad_cookie) - $b82 == 1"
check "an ACK to the port without the rule made no connection" "$(wc -l <"$XRLT_TMP/accept.8081") == $a81"
check "the valid ACK proved its source ($(( $(rf "$M4" proven) - pr )))" "$(rf "$M4" proven) - $pr == 1"
check "and the listener accepted its connection" "$(grep -c '^198.18.0.250 ' "$XRLT_TMP/accept.8080") == 1 && $(wc -l <"$XRLT_TMP/accept.8080") == $a80 + 1"

section "a proven source flooding SYNs from its own address"
cat >"$XRLT_TMP/own.cfg" <<EOF
{
  eth(da=$SMAC, type=0x0800),
  ipv4(saddr=198.18.0.2, daddr=198.18.0.1, ttl=64, df),
  tcp(sport=dinc(30000, 59999), dport=8080, seq=drnd(), syn),
}
EOF
sleep 1.5   # the source's bucket full again
ps0=$(rf "$M4" passed) dr0=$(rf "$M4" dropped) sa0=$(rf "$M4" synack_sent)
t0=$(date +%s%N)
(cd "$XRLT_TMP" && inc timeout -s INT -k 3 20 trafgen --no-sock-mem --notouch-irq --dev c0 --conf "$XRLT_TMP/own.cfg" \
	--num 3000 --cpus 1) >"$XRLT_TMP/own.log" 2>&1
t1=$(date +%s%N)
sleep 0.3
ps=$(($(rf "$M4" passed) - ps0)) dr=$(($(rf "$M4" dropped) - dr0)) sa=$(($(rf "$M4" synack_sent) - sa0))
lim=$(xrlt_calc "$RATE + $RATE * ($t1 - $t0 + 3e8) / 1e9 + 5")
check "its SYNs are judged by the rule, not answered ($sa SYN-ACKs sent)" "$sa == 0"
check "held to the rule: $ps of 3000 passed (at most burst + rate x time, $lim; the kernel's SYN-ACKs draw RSTs from the client, judged too), $dr dropped" "$ps <= $lim && $ps + $dr >= 3000"

section "a spoofed SYN flood and $NEW new clients"
nst() { NSTAT_HISTORY=$XRLT_TMP/nstat.hist ip netns exec "$NS_S" nstat -az TcpExtSyncookiesSent TcpExtListenOverflows TcpInSegs 2>/dev/null |
	awk '$1 ~ /^Tcp/ { v[$1] = $2 } END { printf "%d %d %d\n", v["TcpExtSyncookiesSent"], v["TcpExtListenOverflows"], v["TcpInSegs"] }'; }
read -r sc0 lo0 in0 < <(nst)
src0=$(xs --json stats | jq '.sources')
rx0=$(ip netns exec "$NS_S" cat /sys/class/net/s1/statistics/rx_packets)
S1_MAC=$(ip netns exec "$NS_S" cat /sys/class/net/s1/address)
ip -n "$NS_F" link set dev lo xdpgeneric off 2>/dev/null
(
	cd "$XRLT_TMP" && exec timeout -s INT -k 3 $((FLOOD_SECS + 10)) "$GEN" send --netns /run/netns/"$NS_F" \
		--ifname f0 --dst-mac "$S1_MAC" --dst 198.18.1.1 --random 10.16.0.0 1048576 --syn 8080 \
		--count "$FLOOD_MAX" --secs "$FLOOD_SECS" --hold lo
) >"$XRLT_TMP/flood.log" 2>&1 &
xrlt_track $!
gen_pid=$!
sleep 2
seq 10 $((9 + NEW)) | sed 's/^/198.18.0./' |
	timeout 120 xargs -P 10 -I{} ip netns exec "$NS_C" "$PY" "$PEER" connect 198.18.0.1 8080 1 20000 {} \
	>"$XRLT_TMP/new.out" 2>>"$XRLT_TMP/conn.err"
xs top >"$XRLT_TMP/top.txt" 2>&1
alive=0
kill -0 "$gen_pid" 2>/dev/null && alive=1
xrlt_stop_pid "$gen_pid"
wait "$gen_pid" 2>/dev/null
rx=$(($(ip netns exec "$NS_S" cat /sys/class/net/s1/statistics/rx_packets) - rx0))
read -r sc lo in < <(nst)
okc=$(awk '{ s += $1 } END { print s + 0 }' "$XRLT_TMP/new.out")
p99=$(awk '{ print $3 }' "$XRLT_TMP/new.out" | sort -n | awk '{ a[NR] = $1 } END { i = int(NR * 0.99); if (i < 1) i = 1; print a[i] + 0 }')
xrlt_log "flood: $rx frames reached s1's XDP; new clients: $okc of $NEW connected, p99 connect ${p99} ms"
check "the flood ran throughout the clients' connections and reached XDP ($rx frames)" "$alive == 1 && $rx >= 100000"
check "at least 99 % of $NEW new clients connected during the flood ($okc)" "$okc >= $NEW * 99 / 100"
check "the kernel sent no SYN cookie ($((sc - sc0)))" "$sc - $sc0 == 0"
check "the listener never overflowed ($((lo - lo0)))" "$lo - $lo0 == 0"
check "the kernel's TCP saw almost none of the flood: $((in - in0)) segments in for $rx flood frames" "$in - $in0 < $rx / 100 + 200 * $NEW"
src=$(xs --json stats | jq '.sources')
check "the table grew only by proven sources: $src0 -> $src tracked" "$src - $src0 <= $NEW && $src - $src0 >= $okc"
grep -q "0.0.0.0/0 --proto tcp --dport 8080: under a SYN flood, absorbed at XDP" "$XRLT_TMP/top.txt" &&
	ok "xrl top says the rule is absorbing a SYN flood ($(grep -o '[0-9.kM]* SYNs/s answered' "$XRLT_TMP/top.txt"))" ||
	bad "xrl top did not say the rule is under a SYN flood: $(tail -3 "$XRLT_TMP/top.txt")"
xs stats >"$XRLT_TMP/stats.txt" 2>&1
grep -q "syn-proxy: .* SYN-ACKs sent" "$XRLT_TMP/stats.txt" && ok "xrl stats shows the proxy's counters" ||
	bad "xrl stats has no syn-proxy line: $(tail -3 "$XRLT_TMP/stats.txt")"

xrlt_finish
