#!/usr/bin/env bash
# Rule policies end to end, on a private veth pair with real traffic:
#
#   1. refusals: bad --block, --shadow and byte-only words and bad `block`
#      commands exit 2 with one line naming the bad thing and change nothing
#      (rule save byte for byte, the penalty box); releasing a source that
#      is not blocked says so (exit 1)
#   2. a byte-only rule (--bytes without --rate): exact counts, rule list,
#      rule save round trip
#   3. --shadow: every frame passes; shadow_dropped counts what the limit
#      would drop, in stats --json, rule list and /metrics; the daemon logs
#      "limited (shadow)"
#   4. --block 30s: the source over its limit is dropped entirely, listed by
#      `block list` (text and --json) with its time left, marked in `top`;
#      a second source of the rule is not; `block del` releases it (the
#      daemon logs blocked and released "by xrl block del"), and its next
#      excess blocks it again; IPv6 with --per 64 released by an address of
#      the /64; a block holds for its duration though the bucket refills,
#      then ends on its own (the daemon logs released "by expiry"); a shadow
#      rule's block passes everything
#
#   XRL=path/to/xrl bash tests/e2e/test_policy.sh
#
# Prints every check; the last line is "N passed, M failed". Needs root and
# BPF; fails (never skips) without them. Everything it creates (a namespace,
# a veth pair, the instance pol<pid>, a daemon) is removed on exit. Traffic
# only inside the pair, bounded by count and timeout. Takes about 15 s.
# shellcheck disable=SC2015  # "A && B || fail" is meant
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
P=pol$$
PIN_ROOT=/sys/fs/bpf/xrl
PAYLOAD=100                    # 142-byte IPv4 frames
V6_DST=2001:db8:ffff::fe
MPORT=$((20000 + $$ % 20000))  # the daemon's /metrics, on loopback
DLOG=""

xrlt_counted_checks

xr() {
	"$XRL" --instance "$P" "$@" >"$XRLT_TMP/o" 2>"$XRLT_TMP/e"
	RC=$?
	OUT=$(cat "$XRLT_TMP/o")
	ERR=$(cat "$XRLT_TMP/e")
}
xp() { "$XRL" --instance "$P" "$@"; }
must() {
	xr "$@"
	[ "$RC" = 0 ] && ok "xrl $* (exit 0)" || bad "xrl $*: exit $RC: $ERR$OUT"
}
state_of() {
	xp rule save 2>&1
	xp --json block list 2>&1 | jq -c 'map(del(.left_s, .blocked_for_s))' 2>&1
}
# refuse CODE TOKENS ARGS...: exit CODE, one line "xrl: ..." naming each
# '|'-separated TOKEN, nothing on stdout, nothing changed
refuse() {
	local code=$1 tokens=$2 why=() t n
	shift 2
	state_of >"$XRLT_TMP/before"
	xr "$@"
	[ "$RC" = "$code" ] || why+=("exit $RC, expected $code")
	[ -z "$OUT" ] || why+=("stdout not empty: $OUT")
	n=$(wc -l <"$XRLT_TMP/e")
	[ "$n" = 1 ] || why+=("stderr has $n lines: $ERR")
	[[ $ERR == "xrl: "* ]] || why+=("message does not start with 'xrl: ': $ERR")
	local IFS='|'
	for t in $tokens; do
		grep -qF -- "$t" "$XRLT_TMP/e" || why+=("message does not name '$t': $ERR")
	done
	unset IFS
	state_of >"$XRLT_TMP/after"
	cmp -s "$XRLT_TMP/before" "$XRLT_TMP/after" || why+=("the failed command changed the instance")
	verdict "refused: xrl $* -> exit $code, message names ${tokens//|/, }" "${why[@]}"
}
# send SRC COUNT NAME: COUNT frames from SRC back to back (bounded: count, 10 s)
send() {
	local src=$1 count=$2 name=$3 cfg=$XRLT_TMP/$3.cfg rc=0
	XRLT_DST_IP6=$V6_DST xrlt_trafgen_cfg "$cfg" "$src" 40000 9 "$PAYLOAD"
	xrlt_flood_bg "$cfg" "$count" 10 "$XRLT_TMP/$name.log"
	xrlt_wait "$XRLT_LAST_PID" || rc=$?
	SENT=$(xrlt_trafgen_sent "$XRLT_TMP/$name.log")
	[ "$rc" = 0 ] && [ "$SENT" = "$count" ] ||
		xrlt_fail "trafgen could not send $count frames from $src (exit $rc, sent '${SENT:-?}')"
	printf '  sent  %s frames from %s\n' "$SENT" "$src"
	sleep 0.1
}
# rs PREFIX FIELD: a per-rule counter of stats --json
rs() { xp --json stats | jq -r --arg p "$1" --arg f "$2" '.rules[] | select(.prefix == $p) | .[$f]'; }
# the daemon's log lines for a source: their msg fields, comma-separated;
# with a third argument, only the lines of the penalty box (blocked, released:
# "limited" is noticed on a sampled drop, so a few drops may not make one)
evlines() {
	jq -r --arg s "$1" --arg b "${2:-}" 'select(.source == $s and ($b == "" or (.msg | test("^(blocked|released)")))) | .msg' \
		"$DLOG" 2>/dev/null | paste -sd, -
}
# wait up to 3 s for the daemon's log of SRC to read WANT (BOX: its blocked and released lines only)
wait_log() {
	local i
	for i in $(seq 30); do
		[ "$(evlines "$1" "${3:-}")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

cleanup_instance() {
	[ -d "$PIN_ROOT/$P" ] && "$XRL" --instance "$P" detach "$XRLT_ROOT_IF" >/dev/null 2>&1
	[ -e "$PIN_ROOT/$P" ] && rm -rf "${PIN_ROOT:?}/$P"
	return 0
}

xrlt_require_root
xrlt_require_cmd ip trafgen timeout jq curl cmp
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (make build/xrl, or set XRL=)"
[ ! -e "$PIN_ROOT/$P" ] || xrlt_fail "$PIN_ROOT/$P exists already: not mine, not touching it"
xrlt_init
cp "$XRL" "$XRLT_TMP/xrl" || xrlt_fail "cannot copy $XRL"
XRL=$XRLT_TMP/xrl
DLOG=$XRLT_TMP/daemon.log
xrlt_on_cleanup cleanup_instance
xrlt_setup_pair
must attach "$XRLT_ROOT_IF" --mode native --max-sources 4096
"$XRL" --instance "$P" daemon --log-format json --quiet-after 1 --metrics "127.0.0.1:$MPORT" >"$DLOG" 2>&1 &
xrlt_track $!
sleep 0.5

# ================================================================ 1. refusals
section "1. refusals"
must rule add 198.18.9.0/24 --rate 10/s
refuse 2 "--block|30s" rule add 198.18.4.0/24 --rate 1/h --block 30
refuse 2 "'0s'|--block duration" rule add 198.18.4.0/24 --rate 1/h --block 0s
refuse 2 "'5d'" rule add 198.18.4.0/24 --rate 1/h --block 5d
refuse 2 "169h|168h" rule add 198.18.4.0/24 --rate 1/h --block 169h
refuse 2 "--block" rule add 198.18.4.0/24 --rate 1/h --block
refuse 2 "--deny|--block" rule add 198.18.4.0/24 --deny --block 30s
refuse 2 "--allow|--shadow" rule add 198.18.4.0/24 --allow --shadow
refuse 2 "--shadow" rule add 198.18.4.0/24 --rate 1/h --shadow=yes
refuse 2 "--burst|--bytes-burst" rule add 198.18.4.0/24 --bytes 1M --burst 5
refuse 2 "--total|--rate" rule add 198.18.4.0/24 --bytes 1M --total 5/s
refuse 2 "--rate|--bytes RATE" rule add 198.18.4.0/24 --shadow
refuse 2 "usage: xrl block list|del" block
refuse 2 "usage: xrl block list|del|frob" block frob
refuse 2 "usage: xrl block list" block list extra
refuse 2 "usage: xrl block del SOURCE" block del
refuse 2 "'not-an-address'|expected an address" block del not-an-address
refuse 2 "'198.18.4.1/33'" block del 198.18.4.1/33
refuse 2 "'198.18.4.1/24'" block del 198.18.4.1/24
refuse 1 "198.18.4.1 is not blocked|xrl block list" block del 198.18.4.1
xr block list
[ "$RC" = 0 ] && [ "$OUT" = "$(printf '%-40s %-40s %10s %10s\n(no source blocked)' SOURCE RULE LEFT BLOCKED)" ] &&
	ok "block list with nothing blocked: the header and (no source blocked)" || bad "block list: exit $RC: $OUT"
must rule del 198.18.9.0/24

# ================================================================ 2. byte-only
section "2. a byte-only rule"
must rule add 198.18.2.0/24 --bytes 142 --bytes-burst 1420
send 198.18.2.1 30 bytes
why=()
[ "$(rs 198.18.2.0/24 passed)" = 10 ] && [ "$(rs 198.18.2.0/24 dropped)" = 20 ] &&
	[ "$(rs 198.18.2.0/24 passed_bytes)" = 1420 ] ||
	why+=("stats: $(xp --json stats | jq -c '.rules[] | select(.prefix == "198.18.2.0/24")')")
xp rule save | grep -qxF "198.18.2.0/24 --bytes 142 --bytes-burst 1420 --per 32" || why+=("rule save: $(xp rule save | grep 198.18.2)")
xp --json rule list | jq -e '.[] | select(.prefix == "198.18.2.0/24") | (has("rate") | not) and .bytes_rate == 142 and .bytes_burst == 1420' >/dev/null ||
	why+=("rule list --json: $(xp --json rule list | jq -c '.[] | select(.prefix == "198.18.2.0/24")')")
verdict "--bytes 142 --bytes-burst 1420 without --rate: 30 frames of 142 bytes -> 10 passed (1420 bytes), 20 dropped; saved and listed without a rate" "${why[@]}"
must rule del 198.18.2.0/24

# ================================================================ 3. shadow
section "3. --shadow"
must rule add 198.18.3.0/24 --rate 1/h --burst 5 --shadow
d0=$(xp --json stats | jq .dropped)
send 198.18.3.1 20 shadow
why=()
[ "$(rs 198.18.3.0/24 passed)" = 5 ] && [ "$(rs 198.18.3.0/24 shadow_dropped)" = 15 ] &&
	[ "$(rs 198.18.3.0/24 dropped)" = 0 ] && [ "$(rs 198.18.3.0/24 shadow_dropped_bytes)" = $((15 * 142)) ] ||
	why+=("stats: $(xp --json stats | jq -c '.rules[] | select(.prefix == "198.18.3.0/24")')")
[ "$(xp --json stats | jq .dropped)" = "$d0" ] || why+=("the instance dropped $(( $(xp --json stats | jq .dropped) - d0 )) frames")
xp --json rule list | jq -e '.[] | select(.prefix == "198.18.3.0/24") | .shadow == true and .shadow_dropped == 15' >/dev/null ||
	why+=("rule list --json: $(xp --json rule list | jq -c '.[] | select(.prefix == "198.18.3.0/24")')")
xp rule list | grep -F "198.18.3.0/24" | grep -qF "shadow (15 would-drop)" || why+=("rule list: $(xp rule list | grep 198.18.3)")
curl -s "http://127.0.0.1:$MPORT/metrics" >"$XRLT_TMP/metrics"
grep -qE "^xrl_shadow_dropped_total\{instance=\"$P\",rule=\"198.18.3.0/24\"\} 15$" "$XRLT_TMP/metrics" ||
	why+=("/metrics: $(grep shadow "$XRLT_TMP/metrics" | tail -2 | tr '\n' ' ')")
xp top | grep -F 198.18.3.1 | grep -qF "(shadow" || why+=("top: $(xp top | grep -F 198.18.3)")
# its first line (then "back under limit (shadow)" after --quiet-after 1 s)
wait_log 198.18.3.1 "limited (shadow)" || wait_log 198.18.3.1 "limited (shadow),back under limit (shadow)" || why+=("daemon log: [$(evlines 198.18.3.1)]")
verdict "--shadow, 20 frames over a burst of 5: all passed; 5 passed + 15 shadow_dropped (stats, rule list, /metrics, top), dropped 0; the daemon logs limited (shadow)" "${why[@]}"
must rule del 198.18.3.0/24

# ================================================================ 4. block
section "4. --block"
must rule add 198.18.4.0/24 --rate 1/h --burst 5 --block 30s --block-spoofable
send 198.18.4.1 10 abuser
t_sent=$(date +%s.%N)
# A time left shown now is at most 30 s less the time since the frames were sent (the block
# began while they were) and at least 2 s under that (the send's own time): exact whatever
# the machine's load makes the checks below take.
left_ok() {   # left_ok SECONDS BEFORE [ROUNDING]: shown by a command begun at BEFORE; ROUNDING widens the bounds
	awk -v l="$1" -v b="$2" -v r="${3:-0}" -v t0="$t_sent" -v now="$(date +%s.%N)" \
		'BEGIN { exit !(l != "" && l + 0 <= 30 - (b - t0) + 0.1 + r && l + 0 >= 30 - (now - t0) - 2 - r) }'
}
why=()
[ "$(rs 198.18.4.0/24 passed)" = 5 ] && [ "$(rs 198.18.4.0/24 dropped)" = 5 ] && [ "$(rs 198.18.4.0/24 blocked)" = 4 ] ||
	why+=("stats: $(xp --json stats | jq -c '.rules[] | select(.prefix == "198.18.4.0/24")')")
b=$(date +%s.%N)
xp --json block list >"$XRLT_TMP/bl.json"
jq -e 'length == 1 and .[0].source == "198.18.4.1" and .[0].rule == "198.18.4.0/24" and (.[0] | has("shadow") | not)' \
	"$XRLT_TMP/bl.json" >/dev/null && left_ok "$(jq -r '.[0].left_s' "$XRLT_TMP/bl.json")" "$b" ||
	why+=("block list --json: $(cat "$XRLT_TMP/bl.json")")
b=$(date +%s.%N)
l=$(xp block list | grep -E '^198\.18\.4\.1 +198\.18\.4\.0/24 +[0-9]+\.[0-9]s ' | awk '{ sub(/s$/, "", $3); print $3 }')
left_ok "$l" "$b" 0.05 || why+=("block list: $(xp block list | tail -1)")
b=$(date +%s.%N)
l=$(xp top | grep -F 198.18.4.1 | grep -oE 'blocked, [0-9]+s left' | grep -oE '[0-9]+')
# top shows whole seconds, rounded up
left_ok "$l" "$b" 1 || why+=("top: $(xp top | grep -F 198.18.4)")
b=$(date +%s.%N)
left_ok "$(xp --json top | jq -r '.[] | select(.source == "198.18.4.1") | .blocked_left_s')" "$b" || why+=("top --json: $(xp --json top)")
wait_log 198.18.4.1 "blocked" box || why+=("daemon log: [$(evlines 198.18.4.1)]")
verdict "--block 30s: 10 frames over a burst of 5 -> 5 passed, 1 dropped then 4 blocked; block list (text, --json) and top show ~30 s left; the daemon logs blocked" "${why[@]}"
send 198.18.4.2 3 second
[ "$(rs 198.18.4.0/24 passed)" = 8 ] && [ "$(xp --json block list | jq length)" = 1 ] &&
	ok "a second source of the rule, under its limit, passes (3 of 3) and is not blocked" ||
	bad "second source: $(xp --json stats | jq -c '.rules[] | select(.prefix == "198.18.4.0/24")') $(xp --json block list)"
xr block del 198.18.4.1
why=()
[ "$RC" = 0 ] && [[ $OUT == "xrl: released 198.18.4.1 (rule 198.18.4.0/24, "*"s of its block left)" ]] || why+=("block del: exit $RC: $OUT $ERR")
[ "$(xp --json block list | jq length)" = 0 ] || why+=("block list after del: $(xp --json block list)")
wait_log 198.18.4.1 "blocked,released" box || why+=("daemon log: [$(evlines 198.18.4.1)]")
jq -se 'map(select(.source == "198.18.4.1" and .msg == "released")) | length == 1 and .[0].by == "xrl block del"' "$DLOG" >/dev/null || why+=("released line: $(grep -F 198.18.4.1 "$DLOG" | tail -1)")
verdict "block del 198.18.4.1: released (it says so), block list empty, the daemon logs released by xrl block del" "${why[@]}"
send 198.18.4.1 3 again
[ "$(rs 198.18.4.0/24 blocked)" = 6 ] && xp --json block list | jq -e 'length == 1 and .[0].source == "198.18.4.1"' >/dev/null &&
	ok "released, its bucket still empty: its next drop blocks it again (1 dropped, 2 blocked)" ||
	bad "after release: $(xp --json stats | jq -c '.rules[] | select(.prefix == "198.18.4.0/24")') $(xp --json block list)"
curl -s "http://127.0.0.1:$MPORT/metrics" >"$XRLT_TMP/metrics"
grep -qE "^xrl_blocked_total\{instance=\"$P\",rule=\"198.18.4.0/24\"\} 6$" "$XRLT_TMP/metrics" &&
	ok "/metrics: xrl_blocked_total of the rule is 6" || bad "/metrics: $(grep blocked "$XRLT_TMP/metrics" | tail -2 | tr '\n' ' ')"
# a change of the rule ends its blocks (its buckets restart full too), and its counters start afresh
must rule add 198.18.4.0/24 --rate 1/h --burst 5 --block 40s --block-spoofable
why=()
xp --json block list | jq -e 'map(select(.source == "198.18.4.1")) | length == 0' >/dev/null || why+=("still listed: $(xp --json block list)")
wait_log 198.18.4.1 "blocked,released,blocked,released" box || why+=("daemon log: [$(evlines 198.18.4.1 box)]")
jq -se 'map(select(.source == "198.18.4.1" and .msg == "released")) | .[-1].by == "rule change"' "$DLOG" >/dev/null ||
	why+=("last released line: $(grep -F 198.18.4.1 "$DLOG" | tail -1)")
verdict "a change of the rule (--block 30s -> 40s) releases its blocked source: not listed, the daemon logs released by rule change" "${why[@]}"
xp --json stats | jq -e '.rules[] | select(.prefix == "198.18.4.0/24") | .passed == 0 and .dropped == 0 and .blocked == 0' >/dev/null &&
	curl -s "http://127.0.0.1:$MPORT/metrics" | grep -qE "^xrl_blocked_total\{instance=\"$P\",rule=\"198.18.4.0/24\"\} 0$" &&
	ok "the changed rule counts afresh: passed, dropped, blocked 0 in stats --json and /metrics" ||
	bad "the changed rule's counters: $(xp --json stats | jq -c '.rules[] | select(.prefix == "198.18.4.0/24")')"
# the block holds for its whole duration, though the bucket refills in it, and ends on its own
must rule add 198.18.7.0/24 --rate 2/s --burst 2 --block 5s --block-spoofable
t0=$(date +%s.%N)
send 198.18.7.1 4 expiry1
why=()
[ "$(rs 198.18.7.0/24 passed)" = 2 ] && [ "$(rs 198.18.7.0/24 dropped)" = 2 ] && [ "$(rs 198.18.7.0/24 blocked)" = 1 ] ||
	why+=("stats: $(xp --json stats | jq -c '.rules[] | select(.prefix == "198.18.7.0/24")')")
sleep 1.5   # 3 tokens' worth of refill: the bucket alone would pass 2
send 198.18.7.1 2 expiry2
t1=$(date +%s.%N)
# the block began during the first send; the second send ended before 5 s had passed since t0
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 4.8) }' || why+=("the second send ended $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s after the first began: too late to test the hold")
[ "$(rs 198.18.7.0/24 passed)" = 2 ] && [ "$(rs 198.18.7.0/24 dropped)" = 4 ] && [ "$(rs 198.18.7.0/24 blocked)" = 3 ] ||
	why+=("during the block: $(xp --json stats | jq -c '.rules[] | select(.prefix == "198.18.7.0/24")')")
verdict "--block 5s: 4 frames over a burst of 2 -> 2 passed, 2 dropped (1 over the limit, then 1 blocked); 1.5 s later (bucket refilled) 2 more are blocked, none passed" "${why[@]}"
# wait for the block's end: 5 s from the first drop, which came before t1
for i in $(seq 80); do
	awk -v a="$t1" -v n="$(date +%s.%N)" 'BEGIN { exit !(n - a >= 5.2) }' && break
	sleep 0.1
done
why=()
wait_log 198.18.7.1 "blocked,released" box || why+=("daemon log: [$(evlines 198.18.7.1 box)]")
jq -se 'map(select(.source == "198.18.7.1" and .msg == "released")) | length == 1 and .[0].by == "expiry"' "$DLOG" >/dev/null ||
	why+=("released line: $(grep -F 198.18.7.1 "$DLOG" | tail -1)")
xp --json block list | jq -e 'map(select(.source == "198.18.7.1")) | length == 0' >/dev/null || why+=("still listed: $(xp --json block list)")
send 198.18.7.1 2 expiry3
[ "$(rs 198.18.7.0/24 passed)" = 4 ] && [ "$(rs 198.18.7.0/24 dropped)" = 4 ] && [ "$(rs 198.18.7.0/24 blocked)" = 3 ] ||
	why+=("after the block: $(xp --json stats | jq -c '.rules[] | select(.prefix == "198.18.7.0/24")')")
verdict "the block ends on its own after 5 s: the daemon logs released by expiry, block list no longer shows it, and its bucket passes 2 frames again" "${why[@]}"
must rule del 198.18.7.0/24
# IPv6, --per 64: the /64 is the source; an address in it names it for del
must rule add 2001:db8:100::/48 --rate 1/h --burst 2 --block 1m --block-spoofable
send 2001:db8:100:1::1 4 v6
why=()
xp --json block list | jq -e 'map(select(.source == "2001:db8:100:1::/64")) | length == 1' >/dev/null || why+=("block list: $(xp --json block list)")
xr block del 2001:db8:100:1::77
[ "$RC" = 0 ] && [[ $OUT == "xrl: released 2001:db8:100:1::/64 (rule 2001:db8:100::/48, "* ]] || why+=("block del: exit $RC: $OUT $ERR")
xp --json block list | jq -e 'map(select(.source == "2001:db8:100:1::/64")) | length == 0' >/dev/null || why+=("still listed: $(xp --json block list)")
verdict "IPv6 --per 64 --block 1m: the /64 is blocked; block del of another address of the /64 releases it" "${why[@]}"
# a shadow rule's block: counted, listed, passed
must rule add 198.18.6.0/24 --rate 1/h --burst 2 --block 1m --shadow --block-spoofable
d0=$(xp --json stats | jq .dropped)
send 198.18.6.1 6 shadowblock
why=()
[ "$(xp --json stats | jq .dropped)" = "$d0" ] || why+=("the instance dropped frames")
[ "$(rs 198.18.6.0/24 blocked)" = 3 ] && [ "$(rs 198.18.6.0/24 shadow_dropped)" = 4 ] || why+=("stats: $(xp --json stats | jq -c '.rules[] | select(.prefix == "198.18.6.0/24")')")
xp --json block list | jq -e 'map(select(.source == "198.18.6.1" and .shadow == true)) | length == 1' >/dev/null || why+=("block list: $(xp --json block list)")
wait_log 198.18.6.1 "blocked (shadow)" box || why+=("daemon log: [$(evlines 198.18.6.1)]")
jq -se 'map(select(.source == "198.18.6.1" and (.msg | test("shadow") | not))) | length == 0' "$DLOG" >/dev/null ||
	why+=("a line of the shadow rule not marked shadow: $(grep -F 198.18.6.1 "$DLOG" | tr '\n' ' ')")
verdict "--block 1m --shadow: 6 frames, all passed; 3 blocked, 4 shadow_dropped; listed as shadow; the daemon logs blocked (shadow)" "${why[@]}"

section "cleanup"
xrlt_cleanup
[ ! -e "$PIN_ROOT/$P" ] && ! ip link show dev "$XRLT_ROOT_IF" >/dev/null 2>&1 && [ ! -d "$XRLT_TMP" ] &&
	ok "cleanup left no pins, veth or temporary directory" || bad "cleanup left something behind"
xrlt_result
[ "${#XRLT_FAILS[@]}" -eq 0 ]
exit $?
