#!/usr/bin/env bash
# xrl http --escalate RATE --block DURATION over a real veth: a client (its
# own namespace) that keeps sending after its 429s is put into the XDP
# penalty box of the instance attached to the server's end, and its packets
# are then dropped at XDP (counted in the escalation's entry) while another
# address of the same client host still gets through; `xrl block list` shows
# it with its reason, `xrl block del` lifts it, and it ends by itself after
# DURATION. Every load is bounded in count and by timeout(1).
#
#   namespace C (client)                      namespace S (server)
#   c0 198.18.0.2, .3  <====== veth ======>  s0 198.18.0.1 (xrl attached)
#                                             xrl http on 198.18.0.1:PORT
set -u
. "$(dirname "$0")/lib.sh"
XRL=${XRL:-$XRLT_REPO/build/xrl}
INST=$XRLT_NAME
NS_C=${XRLT_NAME}c
NS_S=${XRLT_NAME}s
PIN_DIR=/sys/fs/bpf/xrl/$INST
PORT=9480
BLOCK_S=10

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd ip nsenter curl jq timeout /usr/bin/python3
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (make build/xrl, or set XRL=)"
xrlt_init

# nsenter keeps /sys (and so the instance's pins) in view; ip netns exec would not
xs() { nsenter --net=/run/netns/"$NS_S" "$XRL" --instance "$INST" "$@"; }
inc() { ip netns exec "$NS_C" "$@"; }
xrlt_on_cleanup 'xs detach s0 >/dev/null 2>&1; [ -d "$PIN_DIR" ] && rm -rf "$PIN_DIR"; ip netns del "$NS_C" 2>/dev/null; ip netns del "$NS_S" 2>/dev/null; true'

for ns in "$NS_C" "$NS_S"; do
	ip netns add "$ns" || xrlt_fail "cannot create namespace $ns"
	ip -n "$ns" link set lo up
done
ip -n "$NS_C" link add c0 type veth peer name s0 netns "$NS_S" || xrlt_fail "cannot create c0/s0"
ip -n "$NS_C" addr add 198.18.0.2/24 dev c0 && ip -n "$NS_C" addr add 198.18.0.3/24 dev c0 &&
	ip -n "$NS_S" addr add 198.18.0.1/24 dev s0 &&
	ip -n "$NS_C" link set c0 up && ip -n "$NS_S" link set s0 up || xrlt_fail "cannot configure c0/s0"
xs attach s0 >/dev/null 2>"$XRLT_TMP/err" || xrlt_fail "xrl attach s0: $(cat "$XRLT_TMP/err")"

cat >"$XRLT_TMP/esc.rules" <<EOF2
# 2 a second; an address refused more than 3 times in a second goes to XDP for ${BLOCK_S}s
api --key ip --rate 2/s --burst 2 --escalate 3 --block ${BLOCK_S}s
EOF2
nsenter --net=/run/netns/"$NS_S" timeout 300 "$XRL" --instance "$INST" http \
	--rules "$XRLT_TMP/esc.rules" --listen "198.18.0.1:$PORT" >"$XRLT_TMP/http.log" 2>&1 &
xrlt_track $!
for i in $(seq 50); do
	inc curl -s -o /dev/null -m 1 "http://198.18.0.1:$PORT/healthz" && break
	sleep 0.1
done
inc curl -s -o /dev/null -m 1 "http://198.18.0.1:$PORT/healthz" ||
	xrlt_fail "xrl http did not answer on 198.18.0.1:$PORT: $(tail -3 "$XRLT_TMP/http.log")"

# of N connections from address FROM to /healthz (each up to 1 s), how many were answered
pings() {
	local i n=0
	for i in $(seq "$2"); do
		[ "$(inc curl -s --interface "$1" -m 1 -o /dev/null -w '%{http_code}' "http://198.18.0.1:$PORT/healthz")" = 200 ] && n=$((n + 1))
	done
	echo $n
}
# send N UDP datagrams from 198.18.0.2 to the server's discard port
udp() { inc /usr/bin/python3 -c "
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('198.18.0.2', 0))
for i in range($1): s.sendto(b'x', ('198.18.0.1', 9))"; }
# the escalation's entry of 198.18.0.2 in `block list --json` (empty when none)
entry() { xs --json block list 2>/dev/null | jq -c '.[] | select(.source == "198.18.0.2")'; }
# 8 requests on one keep-alive connection from 198.18.0.2, each up to 1 s: their codes
burst() {
	local urls=() i
	for i in $(seq 8); do urls+=(-o /dev/null "http://198.18.0.1:$PORT/check"); done
	inc timeout 40 curl -s --interface 198.18.0.2 -m 1 -H 'X-Original-URI: /api' \
		-w '%{http_code}\n' "${urls[@]}" 2>/dev/null
}

section "before: both addresses reach the server"
check "198.18.0.2: 3 connections of 3 answered" "$(pings 198.18.0.2 3) == 3"
check "no escalation listed" "\"$(entry)\" == \"\""

section "a client that keeps sending after its 429s lands in the XDP penalty box"
codes=$(burst | tr '\n' ' ')
n200=$(grep -o 200 <<<"$codes" | wc -l) n429=$(grep -o 429 <<<"$codes" | wc -l)
n000=$(grep -o 000 <<<"$codes" | wc -l)
check "the burst: 2 accepted, then 4 refusals (the 4th escalates), the rest unanswered (got $codes)" \
	"$n200 == 2 && $n429 == 4 && $n000 == 2"
grep -q "escalated 198.18.0.2 to XDP for ${BLOCK_S}s: rule api refused it 4 times" "$XRLT_TMP/http.log" &&
	ok "xrl http logged the escalation" || bad "no escalation in the log: $(tail -3 "$XRLT_TMP/http.log")"
e=$(entry)
reason=$(jq -r .reason <<<"$e" 2>/dev/null)
check "block list shows it with its reason (got '$reason')" \
	"\"$reason\" == \"escalated by xrl http rule api: 4 refusals/s\""
check "its rule is http:api (got $(jq -r .rule <<<"$e" 2>/dev/null))" "\"$(jq -r .rule <<<"$e" 2>/dev/null)\" == \"http:api\""
left=$(jq -r .left_s <<<"$e" 2>/dev/null)
check "its time left is at most ${BLOCK_S}s and more than $((BLOCK_S - 4))s (got $left)" \
	"${left:-0} <= $BLOCK_S && ${left:-0} > $((BLOCK_S - 4))"
xs block list >"$XRLT_TMP/list" 2>&1
grep -q '^198.18.0.2 .*http:api .*escalated by xrl http rule api: 4 refusals/s' "$XRLT_TMP/list" &&
	ok "the text listing names it with its reason" || bad "text listing: $(cat "$XRLT_TMP/list")"

section "its packets are dropped at XDP, counted; the other address is not"
d0=$(jq -r .dropped <<<"$(entry)")
udp 100
d1=$(jq -r .dropped <<<"$(entry)")
check "the entry counted 100 UDP datagrams of it dropped at XDP (dropped $d0 -> $d1)" "$d1 - $d0 == 100"
got=$(pings 198.18.0.2 2)
check "198.18.0.2: no connection of 2 answered (got $got)" "${got:-0} == 0"
check "198.18.0.3 (same host, not escalated): 3 connections of 3 answered" "$(pings 198.18.0.3 3) == 3"

section "xrl block del lifts it at once"
xs block del 198.18.0.2 >"$XRLT_TMP/del" 2>&1 && ok "block del 198.18.0.2: $(cat "$XRLT_TMP/del")" ||
	bad "block del 198.18.0.2: $(cat "$XRLT_TMP/del")"
check "198.18.0.2: 3 connections of 3 answered again" "$(pings 198.18.0.2 3) == 3"
check "no escalation listed" "\"$(entry)\" == \"\""

section "it ends by itself after --block"
sleep 1.2   # the bucket full again: the same burst escalates again
codes=$(burst | tr '\n' ' ')
e=$(entry)
[ -n "$e" ] && ok "escalated again (got $codes)" || bad "not escalated again (got $codes)"
t0=$(date +%s.%N)
check "dropped meanwhile" "$(pings 198.18.0.2 2) == 0"
left=$(jq -r .left_s <<<"$e")
sleep "$(xrlt_calc "$left + 0.5")"
check "after its ${BLOCK_S}s: 3 connections of 3 answered (waited $(xrlt_calc "$(date +%s.%N) - $t0") s)" "$(pings 198.18.0.2 3) == 3"
check "no escalation listed" "\"$(entry)\" == \"\""

section "bad input"
echo "b --key header:K --missing pass --rate 1/s --escalate 3 --block 1m" >"$XRLT_TMP/bad.rules"
out=$(timeout 10 "$XRL" --instance "$INST" http --rules "$XRLT_TMP/bad.rules" --listen 127.0.0.1:0 2>&1)
grep -q -- "--escalate is for a rule keyed by ip alone" <<<"$out" && ok "escalating a header key is refused" ||
	bad "header key: $out"
echo "c --key ip --rate 1/s --escalate 3 --block 1m" >"$XRLT_TMP/noinst.rules"
out=$(timeout 10 "$XRL" --instance "${INST}none" http --rules "$XRLT_TMP/noinst.rules" --listen 127.0.0.1:0 2>&1)
grep -q "not attached\|attach it" <<<"$out" && ok "an instance not attached is refused at start: $(tail -1 <<<"$out")" ||
	bad "no instance: $out"

xrlt_finish
