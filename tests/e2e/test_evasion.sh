#!/usr/bin/env bash
# tests/e2e/test_evasion.sh: evasions by crafted frames, through a real native
# attach over veth, checked where the kernel delivers (a UDP socket, a TCP
# listener's SYN-ACKs) behind XDP:
#  1. stacked VID-0 VLAN tags (802.1Q x3, 802.1ad + 802.1Q x2, x8), IPv4
#     and IPv6, from a --deny'd source, and against a limit;
#  2. IPv6 with 10 extension headers from a --deny'd source (--malformed pass);
#  3. a TCP SYN in 8- and 16-byte IPv4 fragments against --proto tcp
#     --dport P --deny and --proto tcp --syn --deny.
# Each first shows that the kernel does deliver the crafted frames when no
# rule covers their source (so the check can fail), then that the rule
# stops them, and what the counters say.
#
# Addressing: the run's own /24 of 198.18.0.0/15, 198.18.X.0/24 with X from
# the pid (a /24 no other interface routes), and fd58:X::/64. The root end of
# the veth gets .2 and listens there; the namespace end has .1 and the
# attackers' addresses (so that SYN-ACKs come back to it). Frames are sent
# with /usr/bin/python3 from tests/e2e/evasion_frames.py (raw AF_PACKET, no
# scapy). Forwarding stays off; every sender and listener is bounded in
# count and in time.
# shellcheck disable=SC2034  # XRLT_NS_ADDR is read by lib.sh
# shellcheck disable=SC2016  # cleanup hooks are eval'ed later, on purpose
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
set -u

X=$((1 + $$ % 250))
XRLT_NS_ADDR=198.18.$X.1/24
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
INSTANCE=${INSTANCE:-ev$$}
PY=/usr/bin/python3
FRAMES=$XRLT_REPO/tests/e2e/evasion_frames.py
NET=198.18.$X
ROOT4=$NET.2
BAD4=$NET.66        # denied
LIM4=$NET.77        # limited
NET6=fd58:$X
ROOT6=$NET6::2
BAD6=$NET6::66
UPORT=5555
TPORT=8022
N=5                 # frames per delivery check
LIMIT_BURST=10
LIMIT_SENT=100

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd ip timeout awk
[ -x "$PY" ] || xrlt_fail "$PY not found (Debian's python3)"
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (build it: make build/xrl, or set XRL=)"
[ -z "$(ip -4 route show "$NET.0/24" 2>/dev/null)" ] ||
	xrlt_fail "$NET.0/24 is routed already in the root namespace: another run uses it (run again)"

xrlt_init
xrlt_setup_pair
export PIN_DIR=/sys/fs/bpf/xrl/$INSTANCE
xrlt_on_cleanup 'xrl detach "$XRLT_ROOT_IF" >/dev/null 2>&1; [ -d "$PIN_DIR" ] && rm -rf "$PIN_DIR"; true'

# addresses: IPv6 back on for this pair only
sysctl -qw net.ipv6.conf."$XRLT_ROOT_IF".disable_ipv6=0
ip netns exec "$XRLT_NS" sysctl -qw net.ipv6.conf."$XRLT_NS_IF".disable_ipv6=0
ip addr add "$ROOT4/24" dev "$XRLT_ROOT_IF" &&
	ip addr add "$ROOT6/64" dev "$XRLT_ROOT_IF" nodad &&
	ip -n "$XRLT_NS" addr add "$BAD4/24" dev "$XRLT_NS_IF" &&
	ip -n "$XRLT_NS" addr add "$LIM4/24" dev "$XRLT_NS_IF" &&
	ip -n "$XRLT_NS" addr add "$NET6::1/64" dev "$XRLT_NS_IF" nodad &&
	ip -n "$XRLT_NS" addr add "$BAD6/64" dev "$XRLT_NS_IF" nodad ||
	xrlt_fail "cannot give the veth pair its addresses"
[ "$(cat /proc/sys/net/ipv4/ip_forward)" = 0 ] || xrlt_warn "ip_forward is on in the root namespace (this test adds no route that would forward)"
ROOT_MAC=$(cat /sys/class/net/"$XRLT_ROOT_IF"/address)
xrlt_log "veth $XRLT_ROOT_IF ($ROOT4, $ROOT6) <-> $XRLT_NS_IF in $XRLT_NS; instance $INSTANCE"

# send KIND COUNT key=value...: from the namespace to the root end
send() {
	local kind=$1 count=$2
	shift 2
	ip netns exec "$XRLT_NS" timeout -k 2 20 "$PY" "$FRAMES" send "$XRLT_NS_IF" "$ROOT_MAC" \
		"$kind" "$count" "$@" >/dev/null || xrlt_fail "sending $kind frames failed"
}

# delivered_udp KIND COUNT key=value...: datagrams the root's UDP socket got
delivered_udp() {
	local kind=$1 count=$2 addr=$ROOT4 out=$XRLT_TMP/udp.out i
	shift 2
	[ "$kind" = udp6 ] && addr=$ROOT6
	timeout -k 2 10 "$PY" "$FRAMES" listen-udp "$addr" "$UPORT" 2.0 >"$out" 2>&1 &
	local l=$!
	for i in $(seq 400); do grep -q ready "$out" 2>/dev/null && break; sleep 0.05; done
	grep -q ready "$out" || xrlt_fail "the UDP listener on $addr did not start: $(cat "$out")"
	send "$kind" "$count" dport=$UPORT "$@"
	wait "$l"
	tail -n 1 "$out"
}

# synacks FRAG SRC: SYN-ACKs from the root's listener for one SYN split in FRAG-byte fragments
synacks() {
	local frag=$1 src=$2 out=$XRLT_TMP/sa.out lout=$XRLT_TMP/listen.out i
	timeout -k 2 10 "$PY" "$FRAMES" listen-tcp "$ROOT4" "$TPORT" 3.0 >"$lout" 2>&1 &
	local l=$!
	ip netns exec "$XRLT_NS" timeout -k 2 10 "$PY" "$FRAMES" synacks "$XRLT_NS_IF" "$TPORT" 2.0 >"$out" 2>&1 &
	local s=$!
	for i in $(seq 400); do grep -q ready "$out" 2>/dev/null && grep -q ready "$lout" 2>/dev/null && break; sleep 0.05; done
	grep -q ready "$out" && grep -q ready "$lout" || xrlt_fail "the TCP listener or the SYN-ACK tap did not start"
	send syn4 "$N" src="$src" dst="$ROOT4" dport=$TPORT frag="$frag" gap=0.05
	wait "$s"
	wait "$l"
	tail -n 1 "$out"
}

stat_field() { xrl --json stats >"$XRLT_TMP/stats.json" && xrlt_json_field "$XRLT_TMP/stats.json" "$1"; }
rule_field() { xrl --json stats >"$XRLT_TMP/stats.json" && xrlt_json_rule_field "$XRLT_TMP/stats.json" "$1" "$2"; }

# ------------------------------------------------------------------ the kernel alone
section "what the kernel delivers with no XDP program (6.18, veth)"
kern_v3=$(delivered_udp udp4 "$N" src="$BAD4" dst="$ROOT4" vlans=3)
kern_v8=$(delivered_udp udp4 "$N" src="$BAD4" dst="$ROOT4" vlans=8)
kern_v9=$(delivered_udp udp4 "$N" src="$BAD4" dst="$ROOT4" vlans=9)
xrlt_log "IPv4/UDP behind 3, 8, 9 VID-0 tags: $kern_v3, $kern_v8, $kern_v9 of $N delivered each"
got6=$(delivered_udp udp6 "$N" src="$BAD6" dst="$ROOT6" ext=10)
xrlt_log "IPv6/UDP with 10 destination-options headers: $got6/$N delivered"
check "the kernel delivers IPv4 behind 3 and 8 VID-0 tags and IPv6 with 10 extension headers (the checks below can fail)" \
	"$kern_v3 == $N && $kern_v8 == $N && $got6 == $N"

xrl_or_fail attach "$XRLT_ROOT_IF" --mode native
mode=$(xrlt_xdp_mode "$XRLT_ROOT_IF")
[ "$mode" = xdp ] || xrlt_fail "expected native XDP on $XRLT_ROOT_IF, ip link shows: $mode"

# ------------------------------------------------------------------ 1. VLAN stacks
section "1. stacked VLAN tags from a --deny'd source"
cases="udp4:vlans=3 udp4:vlans=3:ad=1 udp4:vlans=8 udp6:vlans=3 udp6:vlans=3:ad=1"
for c in $cases; do
	kind=${c%%:*}
	args=$(echo "${c#*:}" | tr ':' ' ')
	src=$BAD4 dst=$ROOT4
	[ "$kind" = udp6 ] && src=$BAD6 dst=$ROOT6
	# shellcheck disable=SC2086
	got=$(delivered_udp "$kind" "$N" src="$src" dst="$dst" $args)
	check "no rule: $kind $args delivered ($got/$N)" "$got == $N"
done
xrl_or_fail rule add "$BAD4/32" --deny
xrl_or_fail rule add "$BAD6/128" --deny
d0=$(rule_field "$BAD4/32" dropped)
for c in $cases; do
	kind=${c%%:*}
	args=$(echo "${c#*:}" | tr ':' ' ')
	src=$BAD4 dst=$ROOT4 pfx=$BAD4/32
	[ "$kind" = udp6 ] && src=$BAD6 dst=$ROOT6 pfx=$BAD6/128
	b=$(rule_field "$pfx" dropped)
	# shellcheck disable=SC2086
	got=$(delivered_udp "$kind" "$N" src="$src" dst="$dst" $args)
	a=$(rule_field "$pfx" dropped)
	check "--deny: $kind $args delivered $got/$N, rule dropped $((a - b))" "$got == 0 && $a - $b == $N"
done
vd0=$(stat_field vlan_deep)
got=$(delivered_udp udp4 "$N" src="$BAD4" dst="$ROOT4" vlans=9)
vd1=$(stat_field vlan_deep)
check "9 tags: dropped as deeper than xrl walks (vlan_deep +$((vd1 - vd0)), delivered $got; the kernel alone delivered $kern_v9)" \
	"$got == 0 && $vd1 - $vd0 == $N"

section "1. stacked VLAN tags against a limit (--rate 1/h --burst $LIMIT_BURST)"
xrl_or_fail rule add "$LIM4/32" --rate 1/h --burst "$LIMIT_BURST"
got=$(delivered_udp udp4 "$LIMIT_SENT" src="$LIM4" dst="$ROOT4" vlans=3 gap=0.0005)
p=$(rule_field "$LIM4/32" passed)
d=$(rule_field "$LIM4/32" dropped)
check "3 tags, $LIMIT_SENT sent: $got delivered, rule passed $p dropped $d" \
	"$got == $LIMIT_BURST && $p == $LIMIT_BURST && $d == $LIMIT_SENT - $LIMIT_BURST"

# ------------------------------------------------------------------ 2. long IPv6 chains
section "2. IPv6 with 10 extension headers from a --deny'd source (--malformed pass)"
m0=$(stat_field malformed)
j0=$(stat_field malformed_judged)
b=$(rule_field "$BAD6/128" dropped)
got=$(delivered_udp udp6 "$N" src="$BAD6" dst="$ROOT6" ext=10)
a=$(rule_field "$BAD6/128" dropped)
m1=$(stat_field malformed)
j1=$(stat_field malformed_judged)
check "10 extension headers: delivered $got/$N, rule dropped $((a - b)), malformed +$((m1 - m0)), judged +$((j1 - j0))" \
	"$got == 0 && $a - $b == $N && $m1 - $m0 == $N && $j1 - $j0 == $N"
got=$(delivered_udp udp6 "$N" src="$NET6::1" dst="$ROOT6" ext=10)
check "the same from a source no rule covers: delivered $got/$N" "$got == $N"

# ------------------------------------------------------------------ 3. tiny fragments
section "3. a TCP SYN in tiny IPv4 fragments (listener on $ROOT4:$TPORT)"
xrl_or_fail rule del "$BAD4/32"
sa_none_8=$(synacks 8 "$BAD4")
sa_none_16=$(synacks 16 "$BAD4")
check "no rule for the port: SYN-ACKs for SYNs in 8-byte ($sa_none_8/$N) and 16-byte ($sa_none_16/$N) fragments" \
	"$sa_none_8 >= $N && $sa_none_16 >= $N"
xrl_or_fail rule add "$BAD4/32" --proto tcp --dport "$TPORT" --deny
for f in 8 16; do
	got=$(synacks "$f" "$BAD4")
	check "--proto tcp --dport $TPORT --deny: $f-byte fragments, $got/$N SYN-ACKs" "$got == 0"
done
xrl_or_fail rule del "$BAD4/32" --proto tcp --dport "$TPORT"
xrl_or_fail rule add "$BAD4/32" --proto tcp --syn --deny
got=$(synacks 8 "$BAD4")
check "--proto tcp --syn --deny: 8-byte fragments, $got/$N SYN-ACKs" "$got == 0"
got=$(synacks 0 "$BAD4")
check "--proto tcp --syn --deny: a whole SYN, $got/$N SYN-ACKs" "$got == 0"
xrl_or_fail rule del "$BAD4/32" --proto tcp --syn
got=$(synacks 8 "$BAD4")
check "rule removed: 8-byte fragments get SYN-ACKs again ($got/$N)" "$got >= $N"

xrlt_finish
