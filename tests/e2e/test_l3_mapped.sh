#!/usr/bin/env bash
# End-to-end test of what xrl judges on devices without an Ethernet header
# and of IPv6 sources that embed an IPv4 address, with real packets:
#
#   1. a tun device (no link-layer header: generic XDP gives the packet from
#      its IP header): xrl attached to it inside a network namespace judges
#      IPv4 and IPv6 packets written into the tun by deny and limit rules;
#      the counters say judged (never non-IP) and a UDP socket behind the
#      tun receives exactly what was passed. Native mode is refused (a tun
#      has none). The other types without a link-layer header (ppp, gre,
#      sit, rawip: tuns set to them with TUNSETLINK, since this machine has
#      no tunnel modules) are judged alike, and a device whose packets are
#      neither Ethernet nor bare IP (a tun set to ARPHRD_CAN) is refused
#      saying what to do.
#   2. a dual-stack UDP socket behind a veth: Linux delivers an IPv6
#      datagram from ::ffff:10.231.0.1 and the socket reports it as the
#      IPv4 source 10.231.0.1 would be; with 10.231.0.0/16 --deny, xrl drops
#      it as it drops that IPv4 source. 6to4 (2002::/16), NAT64's
#      64:ff9b::/96 and IPv4-compatible (::a.b.c.d) sources reach the socket
#      as the IPv6 addresses they are: IPv6 rules judge them (a 2002::/48
#      rule drops the 6to4 one).
#
#   XRL=path/to/xrl bash tests/e2e/test_l3_mapped.sh
#
# Needs root, BPF, /dev/net/tun, /usr/bin/python3 (Debian's), jq. Creates
# three network namespaces (all traffic stays in them: packets written into
# a tun in one, frames sent over a veth between two), an instance l3<pid>;
# everything is removed on exit. Takes about 20 s.
# shellcheck disable=SC2015  # "A && B || fail" is meant
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
PY=/usr/bin/python3
TUNF=$XRLT_REPO/tests/e2e/tun_frames.py
EVF=$XRLT_REPO/tests/e2e/evasion_frames.py
PIN_ROOT=/sys/fs/bpf/xrl     # user/lib/xrl_instance.h
I=l3$$                       # the instance
T=${XRLT_NAME}t              # part 1: the tun's namespace
S=${XRLT_NAME}s              # part 2: the sender's namespace
R=${XRLT_NAME}r              # part 2: the receiver's namespace (dual-stack socket, xrl)
TUN=xl3$$t                   # at most 15 characters
TUNC=xl3$$c
PORT=9999

xrlt_counted_checks

# ---------------------------------------------------------------- helpers
# inns NS CMD...: CMD in namespace NS, with this mount namespace (the pins stay visible)
inns() { local ns=$1; shift; nsenter --net=/run/netns/"$ns" "$@"; }
# xn NS ARGS...: xrl --instance $I in NS; OUT, ERR, RC
xn() {
	local ns=$1
	shift
	inns "$ns" "$XRL" --instance "$I" "$@" >"$XRLT_TMP/o" 2>"$XRLT_TMP/e"
	RC=$?
	OUT=$(cat "$XRLT_TMP/o")
	ERR=$(cat "$XRLT_TMP/e")
}
stats() { inns "$1" "$XRL" --instance "$I" --json stats >"$XRLT_TMP/stats.json" 2>&1; }
g() { jq -r ".$1" "$XRLT_TMP/stats.json"; }
r() { jq -r --arg p "$1" ".rules[] | select(.prefix == \$p) | .$2" "$XRLT_TMP/stats.json"; }
# listen NS SECONDS: a dual-stack UDP socket on port $PORT in NS, in the background; waits until it is ready
listen() {
	(exec nsenter --net=/run/netns/"$1" "$PY" "$TUNF" listen "$PORT" "$2") >"$XRLT_TMP/listen" 2>&1 &
	xrlt_track $!
	LPID=$!
	local i
	for i in $(seq 50); do
		grep -q ready "$XRLT_TMP/listen" && return 0
		sleep 0.1
	done
	xrlt_fail "the UDP listener in $1 did not start: $(cat "$XRLT_TMP/listen")"
}
# sortw WORDS...: the words sorted, on one line
sortw() { printf '%s\n' "$@" | LC_ALL=C sort | paste -sd' '; }
# heard: wait for the listener; GOT: the sources it heard as SOURCExCOUNT, sorted
heard() {
	xrlt_wait "$LPID" || bad "the UDP listener failed: $(cat "$XRLT_TMP/listen")"
	GOT=$(grep -v -e '^ready$' -e '^count ' "$XRLT_TMP/listen" | LC_ALL=C sort | uniq -c |
		awk '{print $2 "x" $1}' | paste -sd' ')
}
tun_send() { inns "$T" "$PY" "$TUNF" send "$TUN" "$@" gap=0.002 >/dev/null || bad "cannot write into $TUN: $*"; }

cleanup() {
	local ns
	for ns in "$T" "$R"; do
		[ -d "$PIN_ROOT/$I" ] || break
		for i in "$TUN" "${R}v"; do
			inns "$ns" "$XRL" --instance "$I" detach "$i" >/dev/null 2>&1
		done
	done
	[ -e "$PIN_ROOT/$I" ] && { xrlt_warn "pins left in $PIN_ROOT/$I: removing them"; rm -rf "${PIN_ROOT:?}/$I"; }
	for ns in "$T" "$S" "$R"; do
		ip netns del "$ns" 2>/dev/null
	done
	return 0
}

xrlt_require_root
xrlt_require_bpf
xrlt_require_cmd jq
[ -x "$PY" ] || xrlt_fail "$PY not found (Debian's python3)"
[ -c /dev/net/tun ] || xrlt_fail "/dev/net/tun is missing: no tun devices"
[ -x "$XRL" ] || xrlt_fail "xrl not found at $XRL (make first)"
xrlt_init
xrlt_on_cleanup cleanup

# ======================================================= 1. a tun device
section "1. a tun device: bare IP packets"
ip netns add "$T" || xrlt_fail "cannot create namespace $T"
ip -n "$T" link set lo up
ip -n "$T" tuntap add dev "$TUN" mode tun || xrlt_fail "cannot create tun $TUN"
ip -n "$T" addr add 10.77.0.1/24 dev "$TUN" &&
	ip -n "$T" addr add fd00:77::1/64 dev "$TUN" nodad &&
	ip -n "$T" link set "$TUN" up &&
	ip -n "$T" route add default dev "$TUN" &&
	ip -n "$T" -6 route add default dev "$TUN" || xrlt_fail "cannot configure $TUN"
[ "$(inns "$T" "$PY" -c "import socket,fcntl,struct; print(struct.unpack('H', fcntl.ioctl(socket.socket(), 0x8927, struct.pack('256s', b'$TUN'))[16:18])[0])")" = 65534 ] &&
	ok "$TUN is ARPHRD_NONE (no link-layer header)" || bad "$TUN is not ARPHRD_NONE"

xn "$T" attach "$TUN" --mode native
[ "$RC" = 1 ] && [[ $ERR == *"native XDP"* ]] && ! inns "$T" ip -o link show "$TUN" | grep -q 'prog/xdp' &&
	ok "attach --mode native refused (a tun has none): $ERR" || bad "attach --mode native: exit $RC: $ERR$OUT"
[ -e "$PIN_ROOT/$I" ] && { bad "a refused attach left pins"; rm -rf "${PIN_ROOT:?}/$I"; }
xn "$T" attach "$TUN"
[ "$RC" = 0 ] && [[ $OUT == *"generic mode"* ]] && ok "attached to $TUN: $OUT" || xrlt_fail "attach $TUN: exit $RC: $ERR$OUT"
for rule in "10.231.0.0/16 --deny" "2001:db8:bad::/48 --deny" "192.0.2.0/24 --rate 1/h --burst 3" \
	"2001:db8:11::/48 --rate 1/h --burst 2"; do
	# shellcheck disable=SC2086
	xn "$T" rule add $rule
	[ "$RC" = 0 ] || bad "rule add $rule: exit $RC: $ERR"
done

listen "$T" 6
tun_send udp4 5 src=10.231.0.1 dst=10.77.0.1 dport=$PORT
tun_send udp6 5 src=2001:db8:bad::1 dst=fd00:77::1 dport=$PORT
tun_send udp6 3 src=::ffff:10.231.0.9 dst=fd00:77::1 dport=$PORT
tun_send udp4 8 src=192.0.2.1 dst=10.77.0.1 dport=$PORT
tun_send udp6 6 src=2001:db8:11::1 dst=fd00:77::1 dport=$PORT
tun_send udp4 4 src=198.51.100.1 dst=10.77.0.1 dport=$PORT
tun_send udp6 4 src=2001:db8:ffff::1 dst=fd00:77::1 dport=$PORT
heard
want=$(sortw ::ffff:192.0.2.1x3 ::ffff:198.51.100.1x4 2001:db8:11::1x2 2001:db8:ffff::1x4)
got=$GOT
[ "$got" = "$want" ] && ok "the socket behind $TUN got what was passed: $got" ||
	bad "the socket behind $TUN got '$got', not '$want'"
stats "$T"
v=$(printf '%s ' "$(g packets)" "$(g non_ip)" "$(g malformed)" "$(g no_rule)" "$(g dropped)")
[ "$v" = "35 0 0 8 22 " ] && ok "35 packets, 0 non-IP, 0 malformed, 8 without a rule, 22 dropped" ||
	bad "global counters packets non_ip malformed no_rule dropped: $v (want 35 0 0 8 22)"
v="$(r 10.231.0.0/16 dropped) $(r 2001:db8:bad::/48 dropped) $(r 192.0.2.0/24 passed)/$(r 192.0.2.0/24 dropped) $(r 2001:db8:11::/48 passed)/$(r 2001:db8:11::/48 dropped)"
[ "$v" = "8 5 3/5 2/4" ] && ok "rules: 10.231.0.0/16 dropped 8 (3 of them ::ffff:10.231.0.9), 2001:db8:bad::/48 5, limits passed/dropped 3/5 and 2/4" ||
	bad "rule counters: $v (want 8 5 3/5 2/4)"
xn "$T" detach "$TUN"
[ "$RC" = 0 ] && [ ! -e "$PIN_ROOT/$I" ] && ok "detached from $TUN, pins removed" || bad "detach $TUN: exit $RC: $ERR$OUT"

# other device types without a link-layer header (a tun set to them: no tunnel modules needed)
for type in 512:ppp 778:gre 776:sit 519:rawip; do
	dev=xl3$$${type#*:}
	ip -n "$T" tuntap add dev "$dev" mode tun && inns "$T" "$PY" "$TUNF" link "$dev" "${type%:*}" &&
		ip -n "$T" addr add 10.78.0.1/24 dev "$dev" && ip -n "$T" link set "$dev" up ||
		xrlt_fail "cannot make $dev a tun of type ${type%:*}"
	xn "$T" attach "$dev"
	[ "$RC" = 0 ] || bad "attach to a tun of type ${type%:*} (${type#*:}): exit $RC: $ERR"
	xn "$T" rule add 10.231.0.0/16 --deny
	inns "$T" "$PY" "$TUNF" send "$dev" udp4 3 src=10.231.0.1 dst=10.78.0.1 dport=$PORT >/dev/null
	inns "$T" "$PY" "$TUNF" send "$dev" udp6 2 src=::ffff:10.231.0.2 dst=fd00:78::1 dport=$PORT >/dev/null
	stats "$T"
	v="$(g packets) $(g non_ip) $(r 10.231.0.0/16 dropped)"
	[ "$v" = "5 0 5" ] && ok "a device of type ${type%:*} (${type#*:}) judges bare IP: 5 packets, 0 non-IP, 5 denied" ||
		bad "a device of type ${type%:*} (${type#*:}): packets non_ip dropped $v (want 5 0 5)"
	xn "$T" detach "$dev"
	ip -n "$T" link del "$dev"
done

# a device whose packets are neither Ethernet frames nor bare IP
ip -n "$T" tuntap add dev "$TUNC" mode tun && inns "$T" "$PY" "$TUNF" link "$TUNC" 280 ||
	xrlt_fail "cannot make $TUNC an ARPHRD_CAN device"
xn "$T" attach "$TUNC" --mode generic
[ "$RC" = 1 ] && [[ $ERR == *"neither Ethernet frames nor bare IP"* ]] && [[ $ERR == *"device type 280"* ]] &&
	! inns "$T" ip -o link show "$TUNC" | grep -q 'prog/xdp' && [ ! -e "$PIN_ROOT/$I" ] &&
	ok "a CAN-type device refused, nothing attached, no pins: $ERR" || bad "attach to a CAN-type device: exit $RC: $ERR$OUT"

# ======================================================= 2. IPv6 sources embedding IPv4
section "2. a dual-stack socket: IPv4-mapped, 6to4, NAT64, IPv4-compatible sources"
ip netns add "$S" && ip netns add "$R" || xrlt_fail "cannot create namespaces $S, $R"
ip -n "$S" link add "${S}v" type veth peer name "${R}v" netns "$R" || xrlt_fail "cannot create the veth pair"
# the sender's own stack stays quiet (no IPv6 router or neighbour traffic): only the test's frames
inns "$S" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf."${S}v".disable_ipv6=1 >/dev/null ||
	xrlt_fail "cannot disable IPv6 in $S"
for ns in "$S" "$R"; do
	ip -n "$ns" link set lo up
	ip -n "$ns" link set "${ns}v" up
done
ip -n "$R" addr add fd00:231::2/64 dev "${R}v" nodad &&
	ip -n "$R" addr add 10.231.9.2/24 dev "${R}v" &&
	ip -n "$R" route add default dev "${R}v" &&
	ip -n "$R" -6 route add default dev "${R}v" || xrlt_fail "cannot configure ${R}v"
RMAC=$(ip -n "$R" -j link show "${R}v" | jq -r '.[0].address')
# s6 COUNT SRC / s4 COUNT SRC: UDP datagrams from SRC to the receiver's socket
s6() { inns "$S" "$PY" "$EVF" send "${S}v" "$RMAC" udp6 "$1" src="$2" dst=fd00:231::2 dport=$PORT gap=0.002 >/dev/null; }
s4() { inns "$S" "$PY" "$EVF" send "${S}v" "$RMAC" udp4 "$1" src="$2" dst=10.231.9.2 dport=$PORT gap=0.002 >/dev/null; }

# what Linux delivers, without xrl
listen "$R" 3
s6 1 ::ffff:10.231.0.1
s4 1 10.231.0.1
s6 1 2002:ae7:1::1
s6 1 64:ff9b::ae7:1
s6 1 ::ae7:1
heard
got=$GOT
[ "$got" = "$(sortw 2002:ae7:1::1x1 64:ff9b::ae7:1x1 ::10.231.0.1x1 ::ffff:10.231.0.1x2)" ] &&
	ok "without xrl: the IPv6 datagram from ::ffff:10.231.0.1 is reported as IPv4's 10.231.0.1 is; 6to4, NAT64, IPv4-compatible as themselves: $got" ||
	bad "without xrl the socket got: $got"

xn "$R" attach "${R}v"
[ "$RC" = 0 ] || xrlt_fail "attach ${R}v in $R: exit $RC: $ERR"
xn "$R" rule add 10.231.0.0/16 --deny
[ "$RC" = 0 ] || bad "rule add: exit $RC: $ERR"
listen "$R" 4
s6 3 ::ffff:10.231.0.1
s4 3 10.231.0.1
s6 2 ::ffff:10.232.0.1
s6 2 2002:ae7:1::1
s6 2 64:ff9b::ae7:1
s6 2 ::ae7:1
heard
got=$GOT
[ "$got" = "$(sortw 2002:ae7:1::1x2 64:ff9b::ae7:1x2 ::10.231.0.1x2 ::ffff:10.232.0.1x2)" ] &&
	ok "10.231.0.0/16 --deny: ::ffff:10.231.0.1 dropped like 10.231.0.1; the embeddings that stay IPv6 delivered: $got" ||
	bad "with 10.231.0.0/16 --deny the socket got: $got"
stats "$R"
[ "$(r 10.231.0.0/16 dropped)" = 6 ] && [ "$(g no_rule)" = 8 ] &&
	ok "the IPv4 rule counted 6 drops (3 mapped, 3 IPv4); 8 without a rule" ||
	bad "10.231.0.0/16 dropped $(r 10.231.0.0/16 dropped) (want 6), no_rule $(g no_rule) (want 8)"
# a 6to4 source is covered by an IPv6 rule on its prefix
xn "$R" rule add 2002:ae7:1::/48 --deny
listen "$R" 3
s6 2 2002:ae7:1::1
s6 1 64:ff9b::ae7:1
heard
got=$GOT
stats "$R"
[ "$got" = "64:ff9b::ae7:1x1" ] && [ "$(r 2002:ae7:1::/48 dropped)" = 2 ] &&
	ok "2002:ae7:1::/48 --deny drops the 6to4 source: $got" ||
	bad "with 2002:ae7:1::/48 --deny the socket got '$got', the rule dropped $(r 2002:ae7:1::/48 dropped)"
xn "$R" detach "${R}v"
[ "$RC" = 0 ] && [ ! -e "$PIN_ROOT/$I" ] && ok "detached from ${R}v, pins removed" || bad "detach ${R}v: exit $RC: $ERR$OUT"

xrlt_finish
