#!/usr/bin/env bash
# End-to-end test of the live views, `xrl top --watch` and `xrl stats --watch`,
# run in a private tmux server and read back with capture-pane:
#
#   1. usage: --watch with --json, --watch into a file, a bad --interval,
#      --interval without --watch: exit 2 and a message
#   2. traffic on the run's own veth pair: source OLD floods first and
#      stops (the most drops in total, none now); then NEW sends at several
#      times its limit and POLITE under its limit, all through the views
#   3. top --watch: the first frame shows totals; once rates exist NEW is
#      the first row (sorted by drop rate, not by total), with a pass rate
#      of its limit, OLD below it at 0/s, POLITE absent; q quits with exit 0,
#      off the alternate screen, cursor shown, stty settings as before
#   4. stats --watch: NEW's rule first with a nonzero drop rate and its
#      limit as pass rate; OLD's rule at 0/s; POLITE's rule passing, 0
#      drops; q quits and restores the terminal
#   5. a resize redraws at once (a 30 s interval, so only SIGWINCH can
#      redraw) within the new rows and columns
#   6. Ctrl-C (exit 0) and SIGTERM (exit 143) restore the terminal too
#   7. --shadow and --block: stats --watch gives a --shadow rule's
#      would-drops per second and in all, a --block rule's sources blocked
#      now and their packets; stats --json's blocked_sources and the
#      daemon's /metrics (xrl_blocked_sources, xrl_blocked_total,
#      xrl_shadow_dropped_total, every metric of the dashboard's policy
#      panels) say the same
#   8. a detach under a running view: it leaves the screen, prints one line
#      saying so and exits 1
#
#   XRL=path/to/xrl bash tests/e2e/test_watch.sh
#
# The last line is "N passed, M failed" (checks); the exit status is
# non-zero when any failed. Needs root, BPF and tmux; fails (never skips)
# without them. Traffic follows lib.sh's containment rules (frames only on
# the run's veth pair, to a documentation MAC and an address nobody owns,
# bounded by count and timeout). The tmux server is private to the run
# (tmux -S with a socket in its temporary directory) and killed on exit.
# Takes about 16 s.
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
INSTANCE=watch$$
PIN_DIR=/sys/fs/bpf/xrl/$INSTANCE     # user/lib/xrl_instance.h: pin root + instance
RATE=100                              # OLD's and NEW's rules: RATE/s, burst 20, per source
POLITE_RATE=1000                      # POLITE's rule: burst 100
OLD_SRC=198.18.0.10                   # floods first, then stops
NEW_SRC=198.18.0.11                   # over its limit while the views run
POLITE_SRC=198.18.0.20                # under its limit: never dropped
OLD_SECS=1
NEW_GAP=${NEW_GAP:-200us}             # trafgen -t: ~3500/s, still >5x RATE when the VM is busy
POLITE_GAP=5ms                        # <= 200/s
TRAFFIC_SECS=30                       # bound of NEW and POLITE; stopped when done

# ---------------------------------------------------------------- results
xrlt_counted_checks

xrl() { "$XRL" --instance "$INSTANCE" "$@"; }

# ---------------------------------------------------------------- tmux
# a private server: its socket in the run's temporary directory, gone with it
tm() { tmux -S "$XRLT_TMP/tmux.sock" -f "$XRLT_TMP/tmux.conf" "$@"; }

# start_view NAME ARGS...: xrl ARGS in a detached 160x40 pane, through
# pane.sh, which then reports the exit status and whether stty is as before
start_view() {
	local name=$1
	shift
	tm new-session -d -s "$name" -x 160 -y 40 \
		"bash $XRLT_TMP/pane.sh $XRLT_TMP/$name.done $XRL --instance $INSTANCE $*" ||
		xrlt_fail "tmux cannot start a session for xrl $*"
}
pane() { tm display-message -p -t "$1" "$2" 2>/dev/null; }
capture() { tm capture-pane -p -t "$1" >"$2" 2>/dev/null; }
# wait_text NAME TEXT: until the pane shows TEXT (3 s at most)
wait_text() {
	local i
	for i in $(seq 30); do
		tm capture-pane -p -t "$1" 2>/dev/null | grep -qF -- "$2" && return 0
		sleep 0.1
	done
	return 1
}
wait_dead() {
	local i
	for i in $(seq 30); do
		[ "$(pane "$1" '#{pane_dead}')" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}
# the table rows of a capture: the lines after the column titles
table_rows() { awk 'found { print } /DROP\/s/ && /PASS\/s/ { found = 1 }' "$1"; }
# "1.2k" -> 1200; "-" stays "-"
num() { awk -v v="$1" 'BEGIN { m = 1; if (v ~ /k$/) m = 1e3; else if (v ~ /M$/) m = 1e6; else if (v ~ /G$/) m = 1e9;
	if (v == "-" || v == "") { print "-"; exit } sub(/[kMG]$/, "", v); printf "%.0f\n", v * m }'; }
show() { grep -v '^ *$' "$1" | sed 's/^/        | /'; }

# ended NAME RC WHAT: the view has exited with RC and given the terminal
# back. Looked at while pane.sh waits after the view: once the pane is dead
# tmux hides the cursor itself.
ended() {
	local name=$1 rc=$2 what=$3 why=() st cap=$XRLT_TMP/$1.end
	wait_text "$name" XRLT-EXIT || why+=("still running 3 s later")
	[ "$(pane "$name" '#{alternate_on}')" = 0 ] || why+=("the pane is still on the alternate screen")
	[ "$(pane "$name" '#{cursor_flag}')" = 1 ] || why+=("the cursor is still hidden")
	capture "$name" "$cap"
	grep -q "^XRLT-EXIT rc=$rc stty-restored=yes" "$cap" ||
		why+=("pane.sh reports '$(grep XRLT-EXIT "$cap")', expected rc=$rc stty-restored=yes")
	grep -q 'xrl [a-z]* --watch: instance' "$cap" && why+=("the view's screen is still shown")
	touch "$XRLT_TMP/$name.done"
	wait_dead "$name" || why+=("the pane did not end")
	# tmux 3.3a here often leaves the pane's process unreaped (a zombie, also
	# with a plain shell script in the pane): no status then, but pane.sh
	# reported the view's own $? above
	st=$(pane "$name" '#{pane_dead_status}')
	[ -z "$st" ] || [ "$st" = "$rc" ] || why+=("exit status $st, expected $rc")
	[ ${#why[@]} -eq 0 ] || show "$cap"
	verdict "$what: exit $rc, normal screen back, cursor shown, stty settings as before" "${why[@]}"
	tm kill-session -t "$name" 2>/dev/null
}

# ---------------------------------------------------------------- requirements
xrlt_require_root
xrlt_require_cmd ip trafgen timeout awk tmux pgrep stty jq curl
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (build it: make build/xrl, or set XRL=)"
[ ! -e "$PIN_DIR" ] || xrlt_fail "$PIN_DIR exists already: not mine, not touching it"

xrlt_init
# a private copy: build/xrl may be rebuilt while the test runs; named xrl for pgrep
cp "$XRL" "$XRLT_TMP/xrl" || xrlt_fail "cannot copy $XRL to $XRLT_TMP"
XRL=$XRLT_TMP/xrl
cat >"$XRLT_TMP/tmux.conf" <<'EOF'
set -s exit-empty off
set -g remain-on-exit on
set -g status off
EOF
cat >"$XRLT_TMP/pane.sh" <<'EOF'
# in the pane: the view, then its exit status and whether stty is as before;
# then wait (5 s at most) for the test to look at the screen before the pane
# ends. Ctrl-C reaches this shell too (same process group): it must live on.
trap : INT
done_file=$1
shift
before=$(stty -g)
"$@"
rc=$?
after=$(stty -g)
[ "$before" = "$after" ] && same=yes || same=no
printf 'XRLT-EXIT rc=%s stty-restored=%s\n' "$rc" "$same"
i=0
while [ ! -e "$done_file" ] && [ "$i" -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
exit "$rc"
EOF
xrlt_on_cleanup 'tm kill-server >/dev/null 2>&1; true'
# shellcheck disable=SC2016  # expanded when the hook runs
xrlt_on_cleanup 'xrl detach "$XRLT_ROOT_IF" >/dev/null 2>&1; if [ -d "$PIN_DIR" ]; then xrlt_warn "pins left in $PIN_DIR: removing them"; rm -rf "$PIN_DIR"; rmdir /sys/fs/bpf/xrl 2>/dev/null; fi; true'
xrlt_log "test_watch: instance $INSTANCE, tmux -S $XRLT_TMP/tmux.sock"
xrlt_setup_pair

# ================================================================ 1. usage
section "1. usage errors"
# usage CMD... : exit 2 and a one-line message naming TOKEN (last argument)
usage() {
	local token=${!#} out rc=0
	out=$(xrl "${@:1:$#-1}" 2>&1 </dev/null >"$XRLT_TMP/usage.out") || rc=$?
	out+=$(cat "$XRLT_TMP/usage.out")
	[ "$rc" = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && [[ $out == *"$token"* ]] &&
		ok "xrl ${*:1:$#-1}: exit 2, '$out'" ||
		bad "xrl ${*:1:$#-1}: exit $rc, expected 2 and one line naming '$token': $out"
}
usage --json top --watch '--json'
usage --json stats --watch '--json'
usage top --watch 'not one'              # stdout is a file here: not a terminal
usage stats --watch 'not one'
usage top --watch --interval 0 'invalid --interval'
usage stats --watch --interval abc 'invalid --interval'
usage stats --interval 2 'add --watch'

# ================================================================ 2. traffic
section "2. traffic"
xrl attach "$XRLT_ROOT_IF" --mode native >/dev/null 2>"$XRLT_TMP/attach.err" ||
	xrlt_fail "attach failed: $(cat "$XRLT_TMP/attach.err")"
for r in "$OLD_SRC $RATE 20" "$NEW_SRC $RATE 20" "$POLITE_SRC $POLITE_RATE 100"; do
	read -r src rate burst <<<"$r"
	xrl rule add "$src/32" --rate "$rate/s" --burst "$burst" --per 32 >/dev/null 2>"$XRLT_TMP/rule.err" ||
		xrlt_fail "rule add $src/32 failed: $(cat "$XRLT_TMP/rule.err")"
done
xrlt_trafgen_cfg "$XRLT_TMP/old.cfg" "$OLD_SRC" 40000 9
xrlt_trafgen_cfg "$XRLT_TMP/new.cfg" "$NEW_SRC" 40001 9
xrlt_trafgen_cfg "$XRLT_TMP/polite.cfg" "$POLITE_SRC" 40002 9
xrlt_flood_bg "$XRLT_TMP/old.cfg" $((OLD_SECS * 3000000)) "$OLD_SECS" "$XRLT_TMP/old.log"
rc=0
xrlt_wait "$XRLT_LAST_PID" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 124 ] || xrlt_fail "the flood from $OLD_SRC failed (exit $rc): $(tail -c 300 "$XRLT_TMP/old.log")"
xrlt_log "$OLD_SRC flooded: $(xrlt_trafgen_sent "$XRLT_TMP/old.log") frames in $(xrlt_trafgen_secs "$XRLT_TMP/old.log") s, then stopped"
new_us=$(xrlt_gap_us "$NEW_GAP")
pol_us=$(xrlt_gap_us "$POLITE_GAP")
xrlt_paced_bg "$XRLT_TMP/new.cfg" $((TRAFFIC_SECS * 1000000 / new_us)) "$NEW_GAP" "$XRLT_TMP/new.log"
new_pid=$XRLT_LAST_PID
xrlt_paced_bg "$XRLT_TMP/polite.cfg" $((TRAFFIC_SECS * 1000000 / pol_us)) "$POLITE_GAP" "$XRLT_TMP/polite.log"
polite_pid=$XRLT_LAST_PID
sleep 1
kill -0 "$new_pid" 2>/dev/null && kill -0 "$polite_pid" 2>/dev/null ||
	xrlt_fail "a paced trafgen died: $(tail -c 300 "$XRLT_TMP/new.log") $(tail -c 300 "$XRLT_TMP/polite.log")"
xrlt_log "$NEW_SRC sends every $NEW_GAP, $POLITE_SRC every $POLITE_GAP (limits $RATE/s and $POLITE_RATE/s)"

# ================================================================ 3. top --watch
section "3. top --watch, quit with q"
start_view top top --watch
wait_text top "xrl top --watch: instance $INSTANCE" || xrlt_fail "top --watch shows nothing after 3 s: $(tm capture-pane -p -t top 2>&1 | head -5)"
capture top "$XRLT_TMP/top.first"
why=()
grep -q 'rates from the next refresh' "$XRLT_TMP/top.first" || why+=("no 'totals; rates from the next refresh'")
read -r d p _ <<<"$(table_rows "$XRLT_TMP/top.first" | head -1)"
[ "${d:-}" = - ] && [ "${p:-}" = - ] || why+=("first row's rates are '${d:-} ${p:-}', expected '- -'")
[ ${#why[@]} -eq 0 ] || show "$XRLT_TMP/top.first"
verdict "top --watch, first frame: totals, no rates yet" "${why[@]}"
[ "$(pane top '#{alternate_on} #{cursor_flag}')" = "1 0" ] &&
	ok "top --watch draws on the alternate screen with the cursor hidden" ||
	bad "top --watch: alternate_on/cursor_flag are '$(pane top '#{alternate_on} #{cursor_flag}')', expected '1 0'"
sleep 2.5
capture top "$XRLT_TMP/top.cap"
show "$XRLT_TMP/top.cap"
table_rows "$XRLT_TMP/top.cap" >"$XRLT_TMP/top.rows"
why=()
read -r d1 p1 _ _ _ s1 _ <<<"$(sed -n 1p "$XRLT_TMP/top.rows")"
read -r d2 _ t2 _ _ s2 _ <<<"$(sed -n 2p "$XRLT_TMP/top.rows")"
[ "${s1:-}" = "$NEW_SRC" ] || why+=("first row is '${s1:-}', expected $NEW_SRC")
[ "${s2:-}" = "$OLD_SRC" ] || why+=("second row is '${s2:-}', expected $OLD_SRC")
verdict "top --watch: $NEW_SRC (dropping now) first, $OLD_SRC (more drops in total, none now) second" "${why[@]}"
why=()
d1=$(num "${d1:-}")
p1=$(num "${p1:-}")
xrlt_is_uint "$d1" && xrlt_is_uint "$p1" || why+=("rates '$d1' '$p1' are not numbers")
# one interval passes RATE x its length (+- a packet), a little more after a
# stall of the sender (the burst refills): 30 % leaves room for a busy VM
xrlt_is_uint "$p1" && { [ "$p1" -ge $((RATE * 70 / 100)) ] && [ "$p1" -le $((RATE * 130 / 100)) ] || why+=("PASS/s $p1, expected $RATE +- 30 %"); }
xrlt_is_uint "$d1" && xrlt_is_uint "$p1" && { [ "$d1" -gt "$p1" ] || why+=("DROP/s $d1 is not above PASS/s $p1"); }
verdict "top --watch: $NEW_SRC drops ${d1:-?}/s and passes ${p1:-?}/s (its limit: $RATE/s)" "${why[@]}"
t2=$(num "${t2:-}")
[ "${d2:-}" = 0 ] && xrlt_is_uint "$t2" && [ "$t2" -ge 100000 ] &&
	ok "top --watch: $OLD_SRC drops 0/s now, $t2 in total" ||
	bad "top --watch: $OLD_SRC row has DROP/s '${d2:-}' and DROPPED '${t2:-}', expected 0 and >= 100k"
grep -q "$POLITE_SRC" "$XRLT_TMP/top.rows" && bad "top --watch lists $POLITE_SRC, which never dropped" ||
	ok "top --watch: $POLITE_SRC (never dropped) is not listed"
# header: "packets X/s: passed Y/s, dropped Z/s", "sources: N tracked, M dropped ..."
hdr=$(sed -n 2p "$XRLT_TMP/top.cap")
srcs=$(sed -n 3p "$XRLT_TMP/top.cap")
hd=$(num "$(sed -n 's/.*dropped \([0-9.]*[kMG]*\)\/s$/\1/p' <<<"$hdr")")
xrlt_is_uint "$hd" && [ "$hd" -gt 0 ] && [[ $srcs == "sources: 3 tracked, 2 dropped in the last 10 s"* ]] &&
	ok "top --watch totals: '$hdr', '${srcs%% (*}'" ||
	bad "top --watch totals are '$hdr', '$srcs': expected a dropped rate > 0, 3 sources tracked, 2 dropped"
tm send-keys -t top q
ended top 0 "top --watch, q"

# ================================================================ 4. stats --watch
section "4. stats --watch, quit with q"
start_view stats stats --watch
wait_text stats "xrl stats --watch: instance $INSTANCE" || xrlt_fail "stats --watch shows nothing after 3 s"
sleep 2.5
capture stats "$XRLT_TMP/stats.cap"
show "$XRLT_TMP/stats.cap"
table_rows "$XRLT_TMP/stats.cap" >"$XRLT_TMP/stats.rows"
# fields: DROP/s PASS/s, then byte rates ("12 kB": two words), ...; the rule is the last word
why=()
read -r d1 p1 _ <<<"$(sed -n 1p "$XRLT_TMP/stats.rows")"
r1=$(sed -n 1p "$XRLT_TMP/stats.rows" | awk '{ print $NF }')
d1=$(num "${d1:-}")
p1=$(num "${p1:-}")
[ "$r1" = "$NEW_SRC/32" ] || why+=("first rule is '$r1', expected $NEW_SRC/32")
xrlt_is_uint "$d1" && [ "$d1" -gt 0 ] || why+=("its DROP/s is '$d1'")
xrlt_is_uint "$p1" && [ "$p1" -ge $((RATE * 70 / 100)) ] && [ "$p1" -le $((RATE * 130 / 100)) ] ||
	why+=("its PASS/s is '$p1', expected $RATE +- 30 %")
verdict "stats --watch: rule $NEW_SRC first, dropping ${d1:-?}/s, passing ${p1:-?}/s" "${why[@]}"
old_row=$(awk -v r="$OLD_SRC/32" '$NF == r' "$XRLT_TMP/stats.rows")
pol_row=$(awk -v r="$POLITE_SRC/32" '$NF == r' "$XRLT_TMP/stats.rows")
od=$(awk '{ print $1 }' <<<"$old_row")
ot=$(num "$(awk 'NF > 3 { print $(NF - 3) }' <<<"$old_row")")
[ "$od" = 0 ] && xrlt_is_uint "$ot" && [ "$ot" -ge 100000 ] &&
	ok "stats --watch: rule $OLD_SRC drops 0/s now, $ot in total" ||
	bad "stats --watch: rule $OLD_SRC row is '$old_row': expected DROP/s 0, DROPPED >= 100k"
read -r pd pp _ <<<"$pol_row"
pp=$(num "${pp:-}")
[ "${pd:-}" = 0 ] && xrlt_is_uint "$pp" && [ "$pp" -gt 0 ] &&
	ok "stats --watch: rule $POLITE_SRC passes ${pp}/s, drops 0/s" ||
	bad "stats --watch: rule $POLITE_SRC row is '$pol_row': expected DROP/s 0, PASS/s > 0"
tm send-keys -t stats q
ended stats 0 "stats --watch, q"

# ================================================================ 5. resize
section "5. resize"
# a 30 s interval: only the resize itself can redraw during this check
start_view resize stats --watch --interval 30
wait_text resize "every 30s" || xrlt_fail "stats --watch --interval 30 shows nothing after 3 s"
# the title's clock moves from column 160 to 100; the rule text still fits
tm resize-window -t resize -x 100 -y 6
sleep 0.5
capture resize "$XRLT_TMP/resize.cap"
show "$XRLT_TMP/resize.cap"
why=()
n=$(wc -l <"$XRLT_TMP/resize.cap")
[ "$n" = 6 ] || why+=("$n lines shown, expected 6")
sed -n 1p "$XRLT_TMP/resize.cap" | grep -qE "^xrl stats --watch: .* [0-9]{2}:[0-9]{2}:[0-9]{2}$" &&
	[ "$(sed -n 1p "$XRLT_TMP/resize.cap" | wc -L)" = 100 ] ||
	why+=("line 1 is not the title with the clock at column 100")
awk 'length > 100 { exit 1 }' "$XRLT_TMP/resize.cap" || why+=("a line is wider than 100 columns")
sed -n 2p "$XRLT_TMP/resize.cap" | grep -q '^packets ' || why+=("line 2 is not the totals (a wrapped line?)")
sed -n 5p "$XRLT_TMP/resize.cap" | grep -q 'DROP/s' || why+=("line 5 is not the column titles")
# the first frame: totals, so the rule with the most drops in total first
read -r d6 _ <<<"$(sed -n 6p "$XRLT_TMP/resize.cap")"
[ "${d6:-}" = - ] && [ "$(sed -n 6p "$XRLT_TMP/resize.cap" | awk '{ print $NF }')" = "$OLD_SRC/32" ] ||
	why+=("line 6 is not rule $OLD_SRC (most drops in total) without rates")
verdict "stats --watch redraws at once on a resize to 100x6: title with clock, totals, titles, one rule" "${why[@]}"
tm send-keys -t resize q
ended resize 0 "stats --watch after a resize, q"

# ================================================================ 6. Ctrl-C, SIGTERM
section "6. Ctrl-C and SIGTERM"
start_view ctrlc top --watch --interval 0.5
wait_text ctrlc "xrl top --watch" || xrlt_fail "top --watch shows nothing after 3 s"
tm send-keys -t ctrlc C-c
ended ctrlc 0 "top --watch, Ctrl-C"

start_view term stats --watch
wait_text term "xrl stats --watch" || xrlt_fail "stats --watch shows nothing after 3 s"
pid=$(pgrep -P "$(pane term '#{pane_pid}')" -x xrl)
if xrlt_is_uint "$pid"; then
	kill -TERM "$pid"
	ended term 143 "stats --watch, SIGTERM"
else
	bad "no xrl process under the pane of stats --watch"
fi

# ================================================================ 7. --shadow and --block
section "7. --shadow and --block in stats --watch, stats --json and /metrics"
# SHADOW sends at 10x its --shadow rule's limit (would-drops, all passed);
# BLOCK_A and BLOCK_B, two sources of one --block rule (--per 32), exceed
# its burst of 5 and stay in its penalty box while they keep sending
SHADOW_SRC=198.18.0.40
BLOCK_A=198.18.0.30
BLOCK_B=198.18.0.31
MPORT=$((20000 + ($$ + 4099) % 20000))   # the daemon's /metrics, on loopback
xrl rule add "$SHADOW_SRC/32" --rate "$RATE/s" --burst 20 --shadow >/dev/null 2>"$XRLT_TMP/rule.err" ||
	xrlt_fail "rule add --shadow failed: $(cat "$XRLT_TMP/rule.err")"
xrl rule add "$BLOCK_A/31" --rate 1/h --burst 5 --per 32 --block 30s --block-spoofable >/dev/null 2>"$XRLT_TMP/rule.err" ||
	xrlt_fail "rule add --block failed: $(cat "$XRLT_TMP/rule.err")"
"$XRL" --instance "$INSTANCE" daemon --metrics "127.0.0.1:$MPORT" >"$XRLT_TMP/daemon.log" 2>&1 &
xrlt_track $!
daemon_pid=$!
pol_pids=()
xrlt_trafgen_cfg "$XRLT_TMP/shadow.cfg" "$SHADOW_SRC" 40003 9
xrlt_paced_bg "$XRLT_TMP/shadow.cfg" $((TRAFFIC_SECS * 1000)) 1ms "$XRLT_TMP/shadow.log"
pol_pids+=("$XRLT_LAST_PID")
for s in "$BLOCK_A" "$BLOCK_B"; do
	xrlt_trafgen_cfg "$XRLT_TMP/$s.cfg" "$s" 40004 9
	xrlt_paced_bg "$XRLT_TMP/$s.cfg" $((TRAFFIC_SECS * 200)) 5ms "$XRLT_TMP/$s.log"
	pol_pids+=("$XRLT_LAST_PID")
done
sleep 0.5
start_view policy stats --watch
wait_text policy "xrl stats --watch: instance $INSTANCE" || xrlt_fail "stats --watch shows nothing after 3 s"
sleep 2.5
capture policy "$XRLT_TMP/policy.cap"
show "$XRLT_TMP/policy.cap"
why=()
line=$(grep -F "$SHADOW_SRC/32: shadow: would-drop " "$XRLT_TMP/policy.cap")
# "RULE: shadow: would-drop R/s (T in all), passed"
sr=$(num "$(sed -n 's|.*would-drop \([0-9.]*[kMG]*\)/s (\([0-9.]*[kMG]*\) in all), passed$|\1|p' <<<"$line")")
st=$(num "$(sed -n 's|.*would-drop \([0-9.]*[kMG]*\)/s (\([0-9.]*[kMG]*\) in all), passed$|\2|p' <<<"$line")")
xrlt_is_uint "$sr" && [ "$sr" -gt "$RATE" ] || why+=("would-drop rate '$sr' in '$line', expected over $RATE/s")
xrlt_is_uint "$st" && xrlt_is_uint "$sr" && [ "$st" -ge "$sr" ] || why+=("would-drops in all '$st' in '$line'")
read -r sd _ <<<"$(awk -v r="$SHADOW_SRC/32" '$NF == r' "$XRLT_TMP/policy.cap")"
[ "${sd:-}" = 0 ] || why+=("the shadow rule's DROP/s is '${sd:-}', expected 0: it drops nothing")
verdict "stats --watch: the --shadow rule drops 0/s, its line shows would-drops ${sr:-?}/s (${st:-?} in all), passed" "${why[@]}"
why=()
line=$(grep -F "$BLOCK_A/31: --block 30s: " "$XRLT_TMP/policy.cap")
br=$(num "$(sed -n 's|.*: 2 sources blocked now, their packets \([0-9.]*[kMG]*\)/s (\([0-9.]*[kMG]*\) in all)$|\1|p' <<<"$line")")
xrlt_is_uint "$br" && [ "$br" -gt 0 ] || why+=("'$line': expected '2 sources blocked now, their packets R/s (T in all)' with R > 0")
verdict "stats --watch: the --block rule's line: 2 sources blocked now, their packets ${br:-?}/s" "${why[@]}"
tm send-keys -t policy q
ended policy 0 "stats --watch with --shadow and --block rules, q"
why=()
xrl --json stats >"$XRLT_TMP/policy.json"
jq -e --arg b "$BLOCK_A/31" --arg s "$SHADOW_SRC/32" '[.rules[] | select(.prefix == $b)][0].blocked_sources == 2 and
	([.rules[] | select(.prefix != $b) | .blocked_sources] | all(. == 0)) and
	[.rules[] | select(.prefix == $s)][0].shadow_dropped > 0' "$XRLT_TMP/policy.json" >/dev/null ||
	why+=("stats --json: $(jq -c '[.rules[] | {prefix, shadow_dropped, blocked, blocked_sources}]' "$XRLT_TMP/policy.json")")
xrl stats | grep -qE "^$BLOCK_A/31: [0-9.]+[kMG]? packets of blocked sources; 2 blocked now$" ||
	why+=("stats: $(xrl stats | grep -F "$BLOCK_A/31:" | tail -1)")
verdict "stats --json: blocked_sources 2 for the --block rule, 0 for the others; stats says '2 blocked now'" "${why[@]}"
why=()
for i in $(seq 30); do
	curl -s "http://127.0.0.1:$MPORT/metrics" >"$XRLT_TMP/metrics" 2>/dev/null && [ -s "$XRLT_TMP/metrics" ] && break
	sleep 0.1
done
grep -qE "^xrl_blocked_sources\{instance=\"$INSTANCE\",rule=\"$BLOCK_A/31\"\} 2$" "$XRLT_TMP/metrics" ||
	why+=("xrl_blocked_sources: $(grep '^xrl_blocked_sources' "$XRLT_TMP/metrics" | tr '\n' ' ')")
grep -qE "^xrl_blocked_total\{instance=\"$INSTANCE\",rule=\"$BLOCK_A/31\"\} [1-9][0-9]*$" "$XRLT_TMP/metrics" ||
	why+=("xrl_blocked_total: $(grep '^xrl_blocked_total' "$XRLT_TMP/metrics" | tr '\n' ' ')")
grep -qE "^xrl_shadow_dropped_total\{instance=\"$INSTANCE\",rule=\"$SHADOW_SRC/32\"\} [1-9][0-9]*$" "$XRLT_TMP/metrics" ||
	why+=("xrl_shadow_dropped_total: $(grep '^xrl_shadow_dropped_total' "$XRLT_TMP/metrics" | tr '\n' ' ')")
# every metric docs/grafana-xrl.json's policy panels query is one this scrape has
for name in $(jq -r '.panels[] | select(.type != "row" and (.title | test("shadow|blocked|penalty"; "i"))) | .targets[].expr' \
	"$XRLT_REPO/docs/grafana-xrl.json" | grep -oE 'xrl_[a-z0-9_]+' | sort -u); do
	grep -q "^# TYPE $name " "$XRLT_TMP/metrics" || why+=("the dashboard queries $name, which the scrape lacks")
done
n=$(jq '[.panels[] | select(.type != "row" and (.title | test("shadow|blocked|penalty"; "i")))] | length' "$XRLT_REPO/docs/grafana-xrl.json")
[ "$n" = 3 ] || why+=("$n policy panels in docs/grafana-xrl.json, expected 3")
verdict "/metrics (the daemon, scraped): xrl_blocked_sources 2, xrl_blocked_total and xrl_shadow_dropped_total counting; the dashboard's 3 policy panels query only metrics the scrape has" "${why[@]}"
for p in "${pol_pids[@]}"; do xrlt_stop_pid "$p"; done
xrlt_stop_pid "$daemon_pid"

# ================================================================ 8. detach
section "8. detach under a running view"
start_view detach top --watch
wait_text detach "xrl top --watch" || xrlt_fail "top --watch shows nothing after 3 s"
xrl detach "$XRLT_ROOT_IF" >/dev/null 2>"$XRLT_TMP/detach.err" || bad "detach failed: $(cat "$XRLT_TMP/detach.err")"
ended_cap=$XRLT_TMP/detach.cap
wait_text detach XRLT-EXIT
capture detach "$ended_cap"
n=$(grep -c '^xrl: ' "$ended_cap")
grep -q "^xrl: instance '$INSTANCE' was detached" "$ended_cap" && [ "$n" = 1 ] &&
	ok "top --watch after a detach: one line, '$(grep '^xrl: ' "$ended_cap")'" ||
	{ show "$ended_cap"; bad "top --watch after a detach: expected one line 'xrl: instance '$INSTANCE' was detached ...'"; }
ended detach 1 "top --watch, instance detached"

xrlt_stop_pid "$new_pid"
xrlt_stop_pid "$polite_pid"
new_sent=$(xrlt_trafgen_sent "$XRLT_TMP/new.log")
new_secs=$(xrlt_trafgen_secs "$XRLT_TMP/new.log")
[ -n "$new_sent" ] && [ -n "$new_secs" ] &&
	xrlt_log "$NEW_SRC sent $new_sent frames in $new_secs s: $(xrlt_calc "$new_sent / $new_secs") /s"
xrlt_finish
