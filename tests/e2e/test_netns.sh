#!/usr/bin/env bash
# End-to-end test of an instance attached in another network namespace
# (an ifindex names an interface only within its namespace):
#
#   1. attached inside namespace N (nsenter --net, the pins stay visible) to
#      an interface whose ifindex a root-namespace interface also has: from
#      the root namespace, status names the interface, the namespace and
#      how to reach it, and says it is attached; detach of the root
#      interface with that ifindex and detach of the namespace's interface
#      are refused saying how to detach there, and keep the pins and the
#      program; attach of the root interface is refused (one record per
#      ifindex); a second interface in the root namespace comes and goes
#      without taking the pins; from inside N all is plain; detach there
#      removes the program and the pins
#   2. a namespace with no /run/netns name, held by a process: found through
#      the process (/proc/PID/ns/net), named by it, detach refused from the
#      root namespace and done through that path
#   3. a namespace deleted under the instance (its veth and program gone):
#      status says so, detach from anywhere removes the record and the pins
#   4. a program of the instance attached where no record says (its record
#      removed by hand): detach of the last recorded interface keeps the
#      pins and says why, an attach anywhere brings its rules in reach
#      again; once that program is gone, detach removes them
#
#   XRL=path/to/xrl bash tests/e2e/test_netns.sh
#
# Needs root, BPF, nsenter, unshare, jq. Creates veth pairs (down, no
# traffic) in the root namespace and in two namespaces of its own, an
# instance ns<pid>; everything is removed on exit. Takes about 10 s.
# shellcheck disable=SC2015  # "A && B || fail" is meant
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
PIN_ROOT=/sys/fs/bpf/xrl     # user/lib/xrl_instance.h
I=ns$$                       # the instance
N=${XRLT_NAME}n              # the named namespace
A=xns$$a                     # root namespace: the interface whose ifindex NV also has
C=xns$$c                     # root namespace: a second interface of the instance
NV=xns$$v                    # in N
PV=xns$$p                    # in the process-held namespace
HOLDER=                      # pid of the process holding that namespace

xrlt_counted_checks

# ---------------------------------------------------------------- helpers
# xa NSPATH ARGS...: xrl --instance $I in the namespace at NSPATH ("" for this one); OUT, ERR, RC
xa() {
	local ns=$1
	shift
	if [ -n "$ns" ]; then
		nsenter --net="$ns" "$XRL" --instance "$I" "$@" >"$XRLT_TMP/o" 2>"$XRLT_TMP/e"
	else
		"$XRL" --instance "$I" "$@" >"$XRLT_TMP/o" 2>"$XRLT_TMP/e"
	fi
	RC=$?
	OUT=$(cat "$XRLT_TMP/o")
	ERR=$(cat "$XRLT_TMP/e")
}
# prog_in NSPATH IFACE: the id of the XDP program on IFACE in that namespace, or nothing
prog_in() { nsenter --net="$1" ip -o link show dev "$2" 2>/dev/null | grep -o 'prog/xdp id [0-9]*' | awk '{print $3}'; }
# iface_json NSPATH NAME: status's JSON record of interface NAME, seen from that namespace
iface_json() {
	xa "$1" --json status
	jq -c --arg n "$2" '.[0].interfaces[] | select(.interface == $n)' <<<"$OUT" 2>/dev/null
}
pins() { [ -d "$PIN_ROOT/$I" ]; }

cleanup() {
	local i
	if pins; then
		for i in "$NV" "$PV"; do
			nsenter --net=/run/netns/"$N" "$XRL" --instance "$I" detach "$i" >/dev/null 2>&1
			[ -n "$HOLDER" ] && nsenter --net=/proc/"$HOLDER"/ns/net "$XRL" --instance "$I" detach "$i" >/dev/null 2>&1
		done
		for i in "$A" "$C" "$NV" "$PV"; do
			"$XRL" --instance "$I" detach "$i" >/dev/null 2>&1
		done
	fi
	[ -n "$HOLDER" ] && xrlt_stop_pid "$HOLDER"
	pins && { xrlt_warn "pins left in $PIN_ROOT/$I: removing them"; rm -rf "${PIN_ROOT:?}/$I"; }
	ip link del "$A" 2>/dev/null
	ip link del "$C" 2>/dev/null
	ip netns del "$N" 2>/dev/null
	return 0
}

xrlt_require_root
xrlt_require_bpf
xrlt_require_cmd jq
xrlt_require_cmd nsenter
xrlt_require_cmd unshare
[ -x "$XRL" ] || xrlt_fail "xrl not found at $XRL (make first)"
xrlt_init
xrlt_on_cleanup cleanup

# ======================================================= 1. a named namespace
section "1. attached in namespace $N, looked at from the root namespace"
NS=/run/netns/$N
ip link add "$A" type veth peer name "$A"p || xrlt_fail "cannot create veth $A"
idx=$(cat /sys/class/net/"$A"/ifindex)
ip netns add "$N" || xrlt_fail "cannot create namespace $N"
ip -n "$N" link add "$NV" index "$idx" type veth peer name "$NV"p || xrlt_fail "cannot create $NV with ifindex $idx in $N"
[ "$(ip -n "$N" -j link show "$NV" | jq '.[0].ifindex')" = "$idx" ] &&
	ok "$A (root namespace) and $NV (in $N) both have ifindex $idx" || xrlt_fail "$NV did not get ifindex $idx"
xa "$NS" attach "$NV"
[ "$RC" = 0 ] || xrlt_fail "attach $NV inside $N: exit $RC: $ERR"
P=$(prog_in "$NS" "$NV")
[ -n "$P" ] && ok "attached inside $N: program $P on $NV" || xrlt_fail "no program on $NV"

rec=$(iface_json "" "$NV")
[ "$(jq -r '.attached' <<<"$rec")" = true ] && [ "$(jq -r '.netns' <<<"$rec")" = "$N" ] &&
	[ "$(jq -r '.netns_path' <<<"$rec")" = "$NS" ] && [ "$(jq -r '.ifindex' <<<"$rec")" = "$idx" ] &&
	ok "status from the root namespace: $NV, attached, in namespace $N at $NS: $rec" ||
	bad "status from the root namespace: $OUT"
xa "" status
[[ $OUT == *"$NV"*"in network namespace $N"*"nsenter --net=$NS xrl --instance $I"* ]] && [[ $OUT != *"NOT ATTACHED"* ]] && [[ $OUT != *"$A"* ]] &&
	ok "status says where and how to get there" || bad "status: $OUT"

xa "" detach "$A"
[ "$RC" = 1 ] && [[ $ERR == *"not attached to $A"* ]] && [[ $ERR == *"nsenter --net=$NS xrl --instance $I detach $NV"* ]] &&
	pins && [ "$(prog_in "$NS" "$NV")" = "$P" ] &&
	ok "detach $A (the same ifindex here) refused, pins and program kept: $ERR" ||
	bad "detach $A: exit $RC: $ERR$OUT; pins $(pins && echo kept || echo GONE), program on $NV '$(prog_in "$NS" "$NV")'"
xa "" detach "$NV"
[ "$RC" = 1 ] && [[ $ERR == *"in network namespace $N, not this one"* ]] && [[ $ERR == *"nsenter --net=$NS xrl --instance $I detach $NV"* ]] &&
	pins && [ "$(prog_in "$NS" "$NV")" = "$P" ] &&
	ok "detach $NV from the root namespace refused, pins and program kept: $ERR" ||
	bad "detach $NV from the root namespace: exit $RC: $ERR$OUT"
xa "" attach "$A"
[ "$RC" = 1 ] && [[ $ERR == *"one interface per ifindex"* ]] && [[ $ERR == *"$N"* ]] && [ -z "$(xdp_prog_id "$A")" ] &&
	[ "$(prog_in "$NS" "$NV")" = "$P" ] &&
	ok "attach $A (ifindex $idx taken in $N) refused, nothing attached: $ERR" ||
	bad "attach $A: exit $RC: $ERR$OUT; program on $A '$(xdp_prog_id "$A")'"
xa "" rule add 10.0.0.0/8 --deny
[ "$RC" = 0 ] && ok "rules change from the root namespace" || bad "rule add from the root namespace: exit $RC: $ERR"

# a second interface in the root namespace: its detach leaves the namespace's record and the pins
ip link add "$C" type veth peer name "$C"p || xrlt_fail "cannot create veth $C"
xa "" attach "$C"
[ "$RC" = 0 ] && [ -n "$(xdp_prog_id "$C")" ] && ok "attached to $C in the root namespace too" || bad "attach $C: exit $RC: $ERR"
rec=$(iface_json "$NS" "$C")
[ "$(jq -r '.attached' <<<"$rec")" = true ] && [[ $(jq -r '.netns_path' <<<"$rec") =~ ^/proc/[0-9]+/ns/net$ ]] &&
	ok "status from inside $N: $C is in another namespace, reached through a process: $rec" ||
	bad "status from inside $N, record of $C: $rec ($OUT)"
rec=$(iface_json "$NS" "$NV")
[ "$(jq -r '.attached' <<<"$rec")" = true ] && [ "$(jq -r '.netns' <<<"$rec")" = null ] &&
	ok "status from inside $N: $NV is here" || bad "status from inside $N, record of $NV: $rec"
xa "" detach "$C"
[ "$RC" = 0 ] && [[ $OUT != *"pins removed"* ]] && pins && [ -z "$(xdp_prog_id "$C")" ] && [ "$(prog_in "$NS" "$NV")" = "$P" ] &&
	ok "detach $C: its program gone, the pins kept for $NV in $N" || bad "detach $C: exit $RC: $ERR$OUT; pins $(pins && echo kept || echo GONE)"

xa "$NS" detach "$NV"
[ "$RC" = 0 ] && [[ $OUT == *"pins removed"* ]] && ! pins && [ -z "$(prog_in "$NS" "$NV")" ] &&
	ok "detach inside $N: program and pins removed" || bad "detach inside $N: exit $RC: $ERR$OUT"

# ======================================================= 2. held by a process
section "2. a namespace without a /run/netns name, held by a process"
(exec unshare --net sleep 60) &
xrlt_track $!
HOLDER=$!
PNS=/proc/$HOLDER/ns/net
for _ in $(seq 50); do
	[ "$(readlink "$PNS" 2>/dev/null)" != "$(readlink /proc/self/ns/net)" ] && break
	sleep 0.1
done
nsenter --net="$PNS" ip link add "$PV" type veth peer name "$PV"p || xrlt_fail "cannot create $PV in the namespace of $HOLDER"
xa "$PNS" attach "$PV"
[ "$RC" = 0 ] || xrlt_fail "attach $PV in the namespace of process $HOLDER: exit $RC: $ERR"
rec=$(iface_json "" "$PV")
[ "$(jq -r '.attached' <<<"$rec")" = true ] && [ "$(jq -r '.netns' <<<"$rec")" = "of process $HOLDER (sleep)" ] &&
	[ "$(jq -r '.netns_path' <<<"$rec")" = "$PNS" ] &&
	ok "status from the root namespace finds it through process $HOLDER: $rec" || bad "status: $rec ($OUT)"
xa "" detach "$PV"
[ "$RC" = 1 ] && [[ $ERR == *"nsenter --net=$PNS xrl --instance $I detach $PV"* ]] && pins && [ -n "$(prog_in "$PNS" "$PV")" ] &&
	ok "detach from the root namespace refused, saying how: $ERR" || bad "detach $PV from the root namespace: exit $RC: $ERR$OUT"
xa "$PNS" detach "$PV"
[ "$RC" = 0 ] && ! pins && [ -z "$(prog_in "$PNS" "$PV")" ] && ok "detach through $PNS: program and pins removed" ||
	bad "detach through $PNS: exit $RC: $ERR$OUT"
xrlt_stop_pid "$HOLDER"
HOLDER=

# ======================================================= 3. the namespace deleted
section "3. the namespace deleted under the instance"
xa "$NS" attach "$NV"
[ "$RC" = 0 ] || xrlt_fail "attach $NV inside $N again: exit $RC: $ERR"
P=$(prog_in "$NS" "$NV")
ip netns del "$N"
# the veth goes with the namespace and takes the program with it (freed a moment later)
for _ in $(seq 50); do
	bpftool prog show id "$P" >/dev/null 2>&1 || break
	sleep 0.1
done
rec=$(iface_json "" "$NV")
[ "$(jq -r '.attached' <<<"$rec")" = false ] && [ "$(jq -r '.netns_reachable' <<<"$rec")" = false ] &&
	ok "status: not attached, its namespace not found: $rec" || bad "status after the namespace went: $rec ($OUT)"
xa "" detach "$NV"
[ "$RC" = 0 ] && [[ $OUT == *"pins removed"* ]] && ! pins && ok "detach $NV from the root namespace: record and pins removed" ||
	bad "detach $NV after its namespace went: exit $RC: $ERR$OUT"

# ======================================================= 4. a program with no record
section "4. a program of the instance attached where no record says"
ip link add "$C" type veth peer name "$C"p 2>/dev/null
xa "" attach "$A"
[ "$RC" = 0 ] || xrlt_fail "attach $A: exit $RC: $ERR"
PA=$(xdp_prog_id "$A")
# the record of $A removed by hand: its program runs on, unrecorded
key=$(printf '%08x' "$(cat /sys/class/net/"$A"/ifindex)" | sed 's/\(..\)\(..\)\(..\)\(..\)/0x\4 0x\3 0x\2 0x\1/')
# shellcheck disable=SC2086
bpftool map delete pinned "$PIN_ROOT/$I/xrl_ifaces" key $key || xrlt_fail "cannot delete the record of $A"
xa "" attach "$C"
[ "$RC" = 0 ] || xrlt_fail "attach $C: exit $RC: $ERR"
xa "" detach "$C"
[ "$RC" = 0 ] && pins && [[ $OUT != *"pins removed"* ]] && [[ $ERR == *"program id $PA is still loaded"* ]] &&
	[ "$(xdp_prog_id "$A")" = "$PA" ] &&
	ok "the last recorded interface detached, the pins kept for program $PA on $A: $ERR" ||
	bad "detach of the last recorded interface with program $PA unrecorded on $A: exit $RC: $ERR$OUT; pins $(pins && echo kept || echo GONE)"
# attached again anywhere, the instance's rules are in reach again, the unrecorded program's too
xa "" attach "$C"
xa "" rule add 10.9.0.0/16 --deny
cfg=$(bpftool -j map show pinned "$PIN_ROOT/$I/xrl_config" | jq '.id')
[ "$RC" = 0 ] && bpftool -j prog show id "$PA" | jq -e --argjson c "$cfg" '.map_ids | index($c) != null' >/dev/null &&
	ok "attached again to $C: rules change, in the maps program $PA on $A uses too" ||
	bad "rule add after attaching $C again: exit $RC: $ERR; map $cfg in program $PA: $(bpftool -j prog show id "$PA" | jq -c .map_ids)"
xa "" detach "$C"
[ "$RC" = 0 ] && pins || bad "detach $C again: exit $RC: $ERR$OUT; pins $(pins && echo kept || echo GONE)"
ip link set dev "$A" xdp off
xa "" detach "$A"
[ "$RC" = 0 ] && ! pins && [[ $ERR == *"no program loaded any more"* ]] &&
	ok "once that program is gone, detach removes the pins: $ERR" || bad "detach after the program went: exit $RC: $ERR$OUT; pins $(pins && echo kept || echo gone)"

xrlt_finish
