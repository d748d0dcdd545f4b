#!/usr/bin/env bash
# tests/e2e/test_ports_dst.sh: --dport sets and --dst through a real native
# attach over veth, checked where the kernel delivers (UDP sockets on the
# root end, behind XDP):
#  1. a --deny of a port set (5004,5001,5003: 5001,5003-5004) drops the
#     datagrams to its ports and passes those to the others;
#  2. a --deny with --dst drops what goes to one of the host's two
#     addresses and passes what goes to the other, IPv4 and IPv6 (with a
#     port set beside it);
#  3. rule list (JSON), rule save and rule load keep the normal form, and
#     rule del names the rule by another spelling of its set.
# Each first shows that the kernel delivers the frames with no rule (so the
# checks can fail).
#
# Addressing: the run's own /24 of 198.18.0.0/15, 198.18.X.0/24 with X from
# the pid, and fd59:X::/64. The root end has .2 and .3 (::2 and ::3) and
# listens there; the namespace end has .1 and the senders' addresses.
# Frames are sent with /usr/bin/python3 from tests/e2e/evasion_frames.py
# (raw AF_PACKET); every sender and listener is bounded in count and time.
# shellcheck disable=SC2034  # XRLT_NS_ADDR is read by lib.sh
# shellcheck disable=SC2016  # cleanup hooks are eval'ed later, on purpose
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
set -u

X=$((1 + ($$ + 77) % 250))
XRLT_NS_ADDR=198.18.$X.1/24
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
INSTANCE=${INSTANCE:-pd$$}
PY=/usr/bin/python3
FRAMES=$XRLT_REPO/tests/e2e/evasion_frames.py
NET=198.18.$X
ROOT4=$NET.2
ROOT4B=$NET.3
P4=$NET.66          # the port set's source
D4=$NET.77          # the --dst rule's source
NET6=fd59:$X
ROOT6=$NET6::2
ROOT6B=$NET6::3
P6=$NET6::66
N=5                 # datagrams per delivery check

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd ip timeout awk jq
[ -x "$PY" ] || xrlt_fail "$PY not found (Debian's python3)"
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (build it: make build/xrl, or set XRL=)"
[ -z "$(ip -4 route show "$NET.0/24" 2>/dev/null)" ] ||
	xrlt_fail "$NET.0/24 is routed already in the root namespace: another run uses it (run again)"

xrlt_init
xrlt_setup_pair
export PIN_DIR=/sys/fs/bpf/xrl/$INSTANCE
xrlt_on_cleanup 'xrl detach "$XRLT_ROOT_IF" >/dev/null 2>&1; [ -d "$PIN_DIR" ] && rm -rf "$PIN_DIR"; true'

sysctl -qw net.ipv6.conf."$XRLT_ROOT_IF".disable_ipv6=0
ip netns exec "$XRLT_NS" sysctl -qw net.ipv6.conf."$XRLT_NS_IF".disable_ipv6=0
ip addr add "$ROOT4/24" dev "$XRLT_ROOT_IF" &&
	ip addr add "$ROOT4B/24" dev "$XRLT_ROOT_IF" &&
	ip addr add "$ROOT6/64" dev "$XRLT_ROOT_IF" nodad &&
	ip addr add "$ROOT6B/64" dev "$XRLT_ROOT_IF" nodad &&
	ip -n "$XRLT_NS" addr add "$P4/24" dev "$XRLT_NS_IF" &&
	ip -n "$XRLT_NS" addr add "$D4/24" dev "$XRLT_NS_IF" &&
	ip -n "$XRLT_NS" addr add "$NET6::1/64" dev "$XRLT_NS_IF" nodad &&
	ip -n "$XRLT_NS" addr add "$P6/64" dev "$XRLT_NS_IF" nodad ||
	xrlt_fail "cannot give the veth pair its addresses"
ROOT_MAC=$(cat /sys/class/net/"$XRLT_ROOT_IF"/address)
xrlt_log "veth $XRLT_ROOT_IF ($ROOT4 $ROOT4B, $ROOT6 $ROOT6B) <-> $XRLT_NS_IF in $XRLT_NS; instance $INSTANCE"

# delivered KIND SRC DST PORT: of N datagrams, how many the root's socket on DST:PORT got
delivered() {
	local kind=$1 src=$2 dst=$3 port=$4 out=$XRLT_TMP/udp.out i
	timeout -k 2 10 "$PY" "$FRAMES" listen-udp "$dst" "$port" 1.5 >"$out" 2>&1 &
	local l=$!
	for i in $(seq 400); do grep -q ready "$out" 2>/dev/null && break; sleep 0.05; done
	grep -q ready "$out" || xrlt_fail "the UDP listener on $dst:$port did not start: $(cat "$out")"
	ip netns exec "$XRLT_NS" timeout -k 2 20 "$PY" "$FRAMES" send "$XRLT_NS_IF" "$ROOT_MAC" \
		"$kind" "$N" src="$src" dst="$dst" dport="$port" >/dev/null ||
		xrlt_fail "sending $kind frames failed"
	wait "$l"
	tail -n 1 "$out"
}

# expect KIND SRC DST PORT WANT WHY
expect() {
	local got
	got=$(delivered "$1" "$2" "$3" "$4")
	check "$6: $1 $2 -> $3:$4 delivered $got/$N" "$got == $5"
}

xrl_or_fail attach "$XRLT_ROOT_IF" --mode native
mode=$(xrlt_xdp_mode "$XRLT_ROOT_IF")
[ "$mode" = xdp ] || xrlt_fail "expected native XDP on $XRLT_ROOT_IF, ip link shows: $mode"

# ------------------------------------------------------------------ no rule
section "no rule: the kernel delivers every datagram (the checks below can fail)"
for p in 5001 5002 5004; do
	expect udp4 "$P4" "$ROOT4" $p "$N" "no rule"
done
expect udp4 "$D4" "$ROOT4B" 5002 "$N" "no rule"
expect udp6 "$P6" "$ROOT6B" 5001 "$N" "no rule"

# ------------------------------------------------------------------ 1. a port set
section "1. --proto udp --dport 5004,5001,5003 --deny"
xrl_or_fail rule add "$P4/32" --proto udp --dport 5004,5001,5003 --deny
for p in 5000 5001 5002 5003 5004 5005; do
	case $p in 5001 | 5003 | 5004) want=0 ;; *) want=$N ;; esac
	expect udp4 "$P4" "$ROOT4" $p "$want" "5001,5003-5004"
done

# ------------------------------------------------------------------ 2. --dst
section "2. --dst: one of the host's two addresses"
xrl_or_fail rule add "$D4/32" --dst "$ROOT4B" --deny
expect udp4 "$D4" "$ROOT4" 5002 "$N" "--dst $ROOT4B, to the other address"
expect udp4 "$D4" "$ROOT4B" 5002 0 "--dst $ROOT4B"
xrl_or_fail rule add "$P6/128" --proto udp --dport 5001-5003,6000 --dst "$ROOT6B" --deny
expect udp6 "$P6" "$ROOT6" 5002 "$N" "--dst $ROOT6B, to the other address"
expect udp6 "$P6" "$ROOT6B" 5002 0 "--dst $ROOT6B --dport 5001-5003,6000"
expect udp6 "$P6" "$ROOT6B" 5004 "$N" "--dst $ROOT6B --dport 5001-5003,6000, another port"

# ------------------------------------------------------------------ 3. list, save, load, del
section "3. rule list, save, load and del keep one form"
xrl --json rule list >"$XRLT_TMP/list.json" || xrlt_fail "rule list failed"
dports=$(jq -r --arg p "$P4/32" '.[] | select(.prefix == $p) | .dports' "$XRLT_TMP/list.json")
dst=$(jq -r --arg p "$D4/32" '.[] | select(.prefix == $p) | .dst' "$XRLT_TMP/list.json")
check "rule list --json: dports \"$dports\", dst \"$dst\"" \
	"\"$dports\" == \"5001,5003-5004\" && \"$dst\" == \"$ROOT4B/32\""
xrl rule save >"$XRLT_TMP/saved" || xrlt_fail "rule save failed"
grep -q -- "^$P4/32 --proto udp --dport 5001,5003-5004 --deny$" "$XRLT_TMP/saved" &&
	grep -q -- "^$D4/32 --deny --dst $ROOT4B/32$" "$XRLT_TMP/saved" &&
	grep -q -- "^$P6/128 --proto udp --dport 5001-5003,6000 --deny --dst $ROOT6B/128$" "$XRLT_TMP/saved"
rc=$?
check "rule save writes the normal forms: $(grep -v '^#' "$XRLT_TMP/saved" | tr '\n' ';')" "$rc == 0"
xrl_or_fail rule load /dev/null
expect udp4 "$P4" "$ROOT4" 5001 "$N" "no rule after loading /dev/null"
xrl_or_fail rule load "$XRLT_TMP/saved"
xrl rule save >"$XRLT_TMP/again" || xrlt_fail "rule save failed"
cmp -s "$XRLT_TMP/saved" "$XRLT_TMP/again"
rc=$?
check "rule load of the saved file, saved again: the same text" "$rc == 0"
expect udp4 "$P4" "$ROOT4" 5003 0 "loaded from the saved file"
expect udp4 "$D4" "$ROOT4B" 5002 0 "loaded from the saved file"
out=$(xrl rule del "$P4/32" --proto udp --dport 5003-5004,5001 2>&1)
check "rule del by another spelling of the set: $out" "$? == 0"
expect udp4 "$P4" "$ROOT4" 5001 "$N" "port set rule deleted"
out=$(xrl rule del "$D4/32" 2>&1)
check "rule del without --dst does not name the --dst rule: $out" "$? != 0"
xrl_or_fail rule del "$D4/32" --dst "$ROOT4B/32"
expect udp4 "$D4" "$ROOT4B" 5002 "$N" "--dst rule deleted"


# The longest match text a rule can have (an IPv6 prefix, eight ranges of
# five-digit ports, an IPv6 --dst: 207 characters) is shown whole.
LONG="2001:db8:aaaa:bbbb:cccc:dddd:eeee:ff00/120 --proto udp --dport 10001-10002,10004-10005,10007-10008,10010-10011,10013-10014,10016-10017,10019-10020,10022-10023"
LONGDST="--dst 2001:db8:aaaa:bbbb:cccc:dddd:eeee:ff00/120"
# shellcheck disable=SC2086  # the rule's words
xrl_or_fail rule add $LONG --rate 5/s $LONGDST
text=$(xrl rule list)
stats=$(xrl stats)
check "rule list and stats show the longest match text whole" \
	"$(grep -cF -- "$LONG $LONGDST" <<<"$text") == 1 && $(grep -cF -- "$LONG $LONGDST" <<<"$stats") >= 1"
# shellcheck disable=SC2086
xrl_or_fail rule del $LONG $LONGDST

xrlt_finish
