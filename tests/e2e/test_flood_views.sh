#!/usr/bin/env bash
# What top, top --watch and stats --watch show under a flood of spoofed
# new sources, on the run's own veth pair:
#
#   rule FLOOD_RULE (10.0.0.0/8 --rate 5/s --burst 1 --total 1000000/s,
#   no --new-sources) takes a flood of random sources (xdp_gen --random, a
#   new source a packet); rule BLOCK_RULE (192.0.2.0/24 --rate 1/s --burst
#   1 --block 1m --block-spoofable) gets 3 packets from BLOCKED_SRC: blocked
#   after 2 drops, which the drop sketch (1 drop in 8 sampled per CPU) does
#   not see.
#
#   1. top (one shot) leads with the flood's line for FLOOD_RULE: new
#      sources/s, the share of its drops from sources dropped once, the
#      answer (--new-sources RATE), and its own --total instead of advice
#      to add one; it lists no source of the rule dropped once ("DROPPED
#      8") and says how many it left out; BLOCKED_SRC is listed, blocked
#   2. top --json: the alert carries dropped_once_share; BLOCKED_SRC's
#      row has blocked_left_s
#   3. top --watch at 80 and 150 columns (tmux): the flood's line is there
#      whole (wrapped, never cut: its last words are on screen), no line
#      is wider than the terminal, BLOCKED_SRC is listed
#   4. stats --watch at 80 columns: each rule's row ends with the whole
#      rule (10.0.0.0/8, 192.0.2.0/24), not a cut of it
#
#   XRL=path/to/xrl bash tests/e2e/test_flood_views.sh   (GEN: xdp_gen)
#
# The last line is "N passed, M failed". Needs root, BPF, tmux and
# build/xdp_gen. The flood is bounded by count and time (5 s at most).
# Takes about 16 s.
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
GEN=${GEN:-$(dirname "$XRL")/xdp_gen}
INSTANCE=flood$$
FLOOD_RULE=10.0.0.0/8
BLOCK_RULE=192.0.2.0/24
BLOCKED_SRC=192.0.2.9
FLOOD_SECS=5
FLOOD_MAX=8000000

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd ip trafgen timeout awk tmux jq
[ -x "$GEN" ] || xrlt_fail "no xdp_gen at $GEN (make build/xdp_gen, or set GEN=)"
xrlt_init
xrlt_setup_pair
xrlt_on_cleanup '"$XRL" --instance "$INSTANCE" detach "$XRLT_ROOT_IF" >/dev/null 2>&1; true'
xrl_or_fail attach "$XRLT_ROOT_IF" --mode native
xrl_or_fail rule add "$FLOOD_RULE" --rate 5/s --burst 1 --total 1000000/s
xrl_or_fail rule add "$BLOCK_RULE" --rate 1/s --burst 1 --block 1m --block-spoofable

# the blocked source: 3 packets, 2 dropped (the first drop blocks it)
xrlt_trafgen_cfg "$XRLT_TMP/blk.cfg" "$BLOCKED_SRC"
xrlt_paced_bg "$XRLT_TMP/blk.cfg" 3 10ms "$XRLT_TMP/blk.log"
xrlt_wait "$XRLT_LAST_PID" || true
xrl block list | grep -q "$BLOCKED_SRC" || xrlt_fail "$BLOCKED_SRC is not blocked: $(xrl block list 2>&1)"
# the views look more than 10 s after its last drop: past the "recent" rows of the
# drop sketch, still blocked for about 50 s
sleep 9

(
	exec timeout -s INT -k 3 $((FLOOD_SECS + 5)) "$GEN" send --netns /run/netns/"$XRLT_NS" --ifname "$XRLT_NS_IF" \
		--dst-mac "$XRLT_DST_MAC" --dst "$XRLT_DST_IP" --random 10.0.0.0 16777216 \
		--count "$FLOOD_MAX" --secs "$FLOOD_SECS"
) >"$XRLT_TMP/flood.log" 2>&1 &
xrlt_track $!
gen_pid=$!
sleep 1.5

tm() { tmux -S "$XRLT_TMP/tmux.sock" -f /dev/null "$@"; }
xrlt_on_cleanup 'tm kill-server >/dev/null 2>&1; true'
tm new-session -d -s top80 -x 80 -y 50 "$XRL --instance $INSTANCE top --watch -d 0.5" || xrlt_fail "tmux: top --watch"
tm new-session -d -s top150 -x 150 -y 50 "$XRL --instance $INSTANCE top --watch -d 0.5" || xrlt_fail "tmux: top --watch"
tm new-session -d -s stats80 -x 80 -y 40 "$XRL --instance $INSTANCE stats --watch -d 0.5" || xrlt_fail "tmux: stats --watch"
xrl top >"$XRLT_TMP/top.txt" 2>&1
xrl --json top >"$XRLT_TMP/top.json" 2>&1
sleep 1.5
for s in top80 top150 stats80; do tm capture-pane -p -t "$s:" >"$XRLT_TMP/$s.txt" 2>/dev/null; done
tm kill-server >/dev/null 2>&1
xrlt_stop_pid "$gen_pid"
show() { sed 's/^/        | /' "$1"; }

section "1. top under the flood"
why=()
first=$(head -1 "$XRLT_TMP/top.txt")
[[ $first == "rule $FLOOD_RULE: a spoofed-source flood passes per-source limits: "* ]] ||
	why+=("its first line is not the flood's line: '$first'")
[[ $first == *"% of its drops are from sources dropped once"* ]] || why+=("no share of drops from sources dropped once")
[[ $first == *"Answer: --new-sources RATE"* ]] || why+=("no answer")
[[ $first == *"its --total 1000000/s caps"* ]] || why+=("does not name the rule's own --total")
[[ $first == *"--total RATE"* ]] && why+=("advises --total RATE on a rule that has --total")
once=$(awk -v r="$FLOOD_RULE" '$2 == r && $4 == 8' "$XRLT_TMP/top.txt" | head -3)
[ -z "$once" ] || why+=("lists sources of the flood dropped once: $once")
grep -qE '^\([0-9]+ sources? dropped once, of the flood above, not listed\)$' "$XRLT_TMP/top.txt" ||
	why+=("does not say how many sources dropped once it left out")
grep -qE "^$BLOCKED_SRC +$BLOCK_RULE .*blocked, [0-9]+s left" "$XRLT_TMP/top.txt" ||
	why+=("does not list the blocked source $BLOCKED_SRC")
[ ${#why[@]} = 0 ] || show "$XRLT_TMP/top.txt"
verdict "top leads with the flood's kind and answer, hides the once-dropped spoofed sources, lists $BLOCKED_SRC blocked ($(cut -c1-110 <<<"$first")...)" "${why[@]}"

section "2. top --json"
jq -e --arg r "$FLOOD_RULE" 'map(select(.alert == "new_sources_unbudgeted" and .rule == $r and .dropped_once_share > 0.5)) | length == 1' \
	"$XRLT_TMP/top.json" >/dev/null && ok "top --json: the rule's alert, dropped_once_share > 0.5" ||
	bad "top --json alert: $(jq -c 'map(select(.alert))' "$XRLT_TMP/top.json" 2>&1 | head -c 300)"
jq -e --arg s "$BLOCKED_SRC" 'map(select(.source == $s and .blocked_left_s > 0)) | length == 1' "$XRLT_TMP/top.json" >/dev/null &&
	ok "top --json: $BLOCKED_SRC with blocked_left_s" || bad "top --json has no blocked $BLOCKED_SRC: $(head -c 300 "$XRLT_TMP/top.json")"

section "3. top --watch at 80 and 150 columns"
for w in 80 150; do
	cap=$XRLT_TMP/top$w.txt
	why=()
	wide=$(awk -v w="$w" 'length > w' "$cap" | head -1)
	[ -z "$wide" ] || why+=("a line is wider than $w: $wide")
	# the flood's line, joined back from its wrapped lines
	joined=$(awk -v r="rule $FLOOD_RULE: " 'index($0, r) == 1 { on = 1; printf "%s", $0; next }
		on && /^  / { sub(/^ +/, " "); printf "%s", $0; next } on { exit }' "$cap")
	[[ $joined == *"Answer: --new-sources RATE bounds the sources given a bucket; its --total 1000000/s caps what the whole rule passes." ]] ||
		why+=("the flood's line is not whole: '$joined'")
	grep -q "$BLOCKED_SRC .*blocked" "$cap" || why+=("$BLOCKED_SRC is not listed")
	[ ${#why[@]} = 0 ] || show "$cap"
	verdict "top --watch at $w columns: the flood's advice whole ($(wc -l <<<"$(grep -n . "$cap")") lines), $BLOCKED_SRC listed" "${why[@]}"
done

section "4. stats --watch at 80 columns"
cap=$XRLT_TMP/stats80.txt
rows=$(awk 'found { print } /DROP\/s/ && /PASS\/s/ { found = 1 }' "$cap")
why=()
for r in "$FLOOD_RULE" "$BLOCK_RULE"; do
	awk -v r="$r" '$NF == r { f = 1 } END { exit !f }' <<<"$rows" || why+=("no row ends with $r")
done
[ -z "$(awk 'length > 80' "$cap")" ] || why+=("a line is wider than 80")
[ ${#why[@]} = 0 ] || show "$cap"
verdict "stats --watch at 80 columns: each row ends with its whole rule" "${why[@]}"

xrlt_finish
