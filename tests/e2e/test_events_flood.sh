#!/usr/bin/env bash
# The daemon's limit events under a flood of spoofed sources, and "back
# under limit" for a source whose drops are too rare to be sampled:
#
#   1. rule FLOOD_RULE (10.0.0.0/8 --rate 1/s --burst 1) takes 3 s of
#      random sources (xdp_gen --random, 100,000 of them: the bucket
#      table keeps the slow source below): at most 20 "limited" lines for
#      the rule in a window of 10 s, a "back under limit" line only for a
#      source whose "limited" line was logged, and once the window ends one
#      "limited, not logged" line with the count of the sources left out
#      (and "back under limit, not logged" for theirs)
#   2. rule GLOBAL_RULE (198.18.1.0/24 --rate 1/h --burst 1 --global):
#      SLOW_SRC sends a frame every 2 s for 12 s, each dropped but the
#      first; the data path samples 1 drop in 64 per CPU, so its entry goes
#      quiet after the first: no "back under limit" while its drops go on
#      (quiet-after 3 s), one within quiet-after + 2.5 s after they stop
#
#   XRL=path/to/xrl bash tests/e2e/test_events_flood.sh   (GEN: xdp_gen)
#
# The last line is "N passed, M failed". Needs root, BPF, trafgen, jq and
# build/xdp_gen. Traffic bounded by count and time. Takes about 25 s.
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
GEN=${GEN:-$(dirname "$XRL")/xdp_gen}
INSTANCE=evf$$
FLOOD_RULE=10.0.0.0/8
GLOBAL_RULE=198.18.1.0/24
SLOW_SRC=198.18.1.7
QUIET=3

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd ip trafgen timeout jq
[ -x "$GEN" ] || xrlt_fail "no xdp_gen at $GEN (make build/xdp_gen, or set GEN=)"
xrlt_init
xrlt_setup_pair
xrlt_on_cleanup '"$XRL" --instance "$INSTANCE" detach "$XRLT_ROOT_IF" >/dev/null 2>&1; true'
xrl_or_fail attach "$XRLT_ROOT_IF" --mode native
cat >"$XRLT_TMP/rules" <<EOF
$FLOOD_RULE --rate 1/s --burst 1
$GLOBAL_RULE --rate 1/h --burst 1 --global
EOF
log=$XRLT_TMP/daemon.log
(exec timeout -k 3 120 "$XRL" --instance "$INSTANCE" daemon --rules "$XRLT_TMP/rules" --log-format json \
	--quiet-after "$QUIET") >"$log" 2>&1 &
xrlt_track $!
daemon=$!
for _ in $(seq 50); do grep -q '"started' "$log" && break; sleep 0.1; done

# the slow source: a frame every 2 s, 7 frames (12 s). Its first drop is the
# first of the instance, which the data path samples: its "limited" line
xrlt_trafgen_cfg "$XRLT_TMP/slow.cfg" "$SLOW_SRC"
xrlt_paced_bg "$XRLT_TMP/slow.cfg" 7 2s "$XRLT_TMP/slow.log"
slow_pid=$XRLT_LAST_PID
for _ in $(seq 60); do grep -q "\"limited\".*\"$SLOW_SRC\"" "$log" && break; sleep 0.1; done
grep -q "\"limited\".*\"$SLOW_SRC\"" "$log" || xrlt_fail "no limited line for $SLOW_SRC: $(cat "$log")"
# the flood meanwhile
(
	exec timeout -s INT -k 3 6 "$GEN" send --netns /run/netns/"$XRLT_NS" --ifname "$XRLT_NS_IF" \
		--dst-mac "$XRLT_DST_MAC" --dst "$XRLT_DST_IP" --random 10.0.0.0 100000 \
		--count 3000000 --secs 3
) >"$XRLT_TMP/flood.log" 2>&1 &
xrlt_track $!
gen_pid=$!
xrlt_wait "$slow_pid" || true
t_stop=$(date +%s.%N)
xrlt_wait "$gen_pid" || true
# the window of 10 s from the daemon's start has ended, and the slow source's quiet time
sleep $((QUIET + 3))
xrl --json stats | jq -c ".rules[] | {prefix, passed, dropped}" | sed "s/^/        /"
kill -TERM "$daemon" 2>/dev/null
xrlt_wait "$daemon" || true

ev() { jq -c "select(.msg == \"$1\" and .rule == \"$2\")" "$log" 2>/dev/null; }
section "1. a flood of random sources on $FLOOD_RULE"
n_lim=$(ev limited "$FLOOD_RULE" | wc -l)
n_back=$(ev "back under limit" "$FLOOD_RULE" | wc -l)
left=$(ev "limited, not logged" "$FLOOD_RULE" | jq -s 'map(.sources) | add // 0')
left_back=$(ev "back under limit, not logged" "$FLOOD_RULE" | jq -s 'map(.sources) | add // 0')
# each source back under limit had its "limited" line
unpaired=$(jq -s --arg r "$FLOOD_RULE" '[.[] | select(.rule == $r)] as $l |
	[$l[] | select(.msg == "limited") | .source] as $lim |
	[$l[] | select(.msg == "back under limit") | .source | select(. as $s | $lim | index($s) | not)] | length' "$log")
xrlt_log "$FLOOD_RULE: $n_lim limited lines, $n_back back, summaries: $left limited and $left_back back not logged"
check "at most 20 \"limited\" lines in a window of 10 s, at most 2 windows ($n_lim)" "$n_lim >= 1 && $n_lim <= 40"
check "\"limited, not logged\" counts the sources left out ($left)" "$left >= 20"
check "\"back under limit\" only for sources whose \"limited\" line was logged ($n_back lines, $unpaired without)" \
	"$n_back <= $n_lim && $unpaired == 0"
check "\"back under limit, not logged\" counts the others ($left_back)" "$left_back >= 20"
total=$(wc -l <"$log")
check "the whole log is short: $total lines" "$total <= 100"

section "2. $SLOW_SRC on a --global rule: dropped every 2 s, rarely sampled"
jq -c "select(.source == \"$SLOW_SRC\")" "$log" | sed 's/^/        /'
first_back=$(jq -r "select(.source == \"$SLOW_SRC\" and .msg == \"back under limit\") | .time" "$log" | head -1)
n_lim=$(jq -c "select(.source == \"$SLOW_SRC\" and .msg == \"limited\")" "$log" | wc -l)
if [ -n "$first_back" ]; then
	tb=$(date -d "$first_back" +%s.%N)
	check "\"back under limit\" after its drops stopped ($(xrlt_calc "$tb - $t_stop") s after its sender ended, 2 s after its last frame)" \
		"$tb >= $t_stop && $tb - $t_stop <= $QUIET + 2.5"
else
	bad "no \"back under limit\" line for $SLOW_SRC after its drops stopped"
fi
check "one \"limited\" line for it: one episode ($n_lim)" "$n_lim == 1"
n_back=$(jq -c "select(.source == \"$SLOW_SRC\" and .msg == \"back under limit\")" "$log" | wc -l)
check "one \"back under limit\" line ($n_back)" "$n_back == 1"

xrlt_finish
