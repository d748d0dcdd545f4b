#!/usr/bin/env bash
# End-to-end: one abusive source floods at >100x its limit while a polite
# source stays under the same limit. xrl, attached natively to the root end
# of a veth pair, must let the abusive source through at rate x elapsed +
# burst (within TOL %), and must not drop a single polite packet.
#
#   XRL=path/to/xrl bash tests/e2e/test_flood.sh
#
# Knobs (environment): RATE (1000 pps), BURST (100), FLOOD_SECS (2),
# POLITE_GAP (5ms, i.e. <= 200 pps), TOL (5 %), MIN_FLOOD_FACTOR (100).
# Needs root and BPF; fails (never skips) without them.
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
INSTANCE=${INSTANCE:-e2e$$}
RATE=${RATE:-1000}
BURST=${BURST:-100}
FLOOD_SECS=${FLOOD_SECS:-2}
FLOOD_MAX=$((FLOOD_SECS * 3000000))     # count bound, above what one CPU can send
POLITE_GAP=${POLITE_GAP:-5ms}
TOL=${TOL:-5}
MIN_FLOOD_FACTOR=${MIN_FLOOD_FACTOR:-100}
ABUSE_SRC=198.18.0.10
POLITE_SRC=198.18.0.20

xrl() { "$XRL" --instance "$INSTANCE" "$@"; }

# run an xrl command; on failure, report it with its output and stop
xrl_or_fail() {
	local out
	if ! out=$(xrl "$@" 2>&1); then
		xrlt_fail "xrl $* failed: $out"
	fi
	[ -n "$out" ] && printf '  %s\n' "$out"
	return 0
}

xrlt_require_root
xrlt_require_cmd ip trafgen netsniff-ng perl timeout awk
command -v jq >/dev/null 2>&1 || command -v python3 >/dev/null 2>&1 ||
	xrlt_fail "jq or python3 is needed to read xrl --json stats"
xrlt_require_bpf
[[ $INSTANCE =~ ^[A-Za-z0-9_-]+$ ]] || xrlt_fail "bad instance name '$INSTANCE'"
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (build it: make build/xrl, or set XRL=)"

xrlt_init
xrlt_log "test_flood: limit $RATE/s burst $BURST per source; abusive $ABUSE_SRC floods ~${FLOOD_SECS}s, polite $POLITE_SRC every $POLITE_GAP"
xrlt_setup_pair
xrlt_log "veth $XRLT_ROOT_IF (root, XDP) <-> $XRLT_NS_IF (netns $XRLT_NS); instance $INSTANCE"

# ---- attach and rules
export PIN_DIR=/sys/fs/bpf/xrl/$INSTANCE   # xrl's pin root (user/lib/xrl_instance.h) + instance
# shellcheck disable=SC2016  # expanded when the hook runs
# detach removes the instance's pins with its last interface; if it could
# not (the test died half way), remove this private instance's pins here
xrlt_on_cleanup 'xrl detach "$XRLT_ROOT_IF" >/dev/null 2>&1; if [ -d "$PIN_DIR" ]; then xrlt_warn "pins left in $PIN_DIR after detach: removing them"; rm -rf "$PIN_DIR"; rmdir /sys/fs/bpf/xrl 2>/dev/null; fi; true'
xrl_or_fail attach "$XRLT_ROOT_IF" --mode native
mode=$(xrlt_xdp_mode "$XRLT_ROOT_IF")
[ "$mode" = xdp ] || xrlt_fail "expected a native XDP program on $XRLT_ROOT_IF after attach --mode native, ip link shows: $mode"
xrlt_log "attached natively: $(ip -o link show dev "$XRLT_ROOT_IF" | grep -o 'prog/xdp id [0-9]*')"
for src in "$ABUSE_SRC" "$POLITE_SRC"; do
	xrl_or_fail rule add "$src/32" --rate "$RATE/s" --burst "$BURST" --per 32
done

# ---- traffic
xrlt_trafgen_cfg "$XRLT_TMP/abuse.cfg" "$ABUSE_SRC" 40000 9
xrlt_trafgen_cfg "$XRLT_TMP/polite.cfg" "$POLITE_SRC" 40001 9
gap_us=$(xrlt_gap_us "$POLITE_GAP")
# the polite source runs a little longer than the flood, on both sides of it
polite_count=$(((FLOOD_SECS * 1000000 + 500000) / gap_us))

xrlt_capture_start "$XRLT_TMP/passed.pcap" udp
rx0=$(xrlt_root_rx)
txdrop0=$(xrlt_ns_tx_dropped)

xrlt_paced_bg "$XRLT_TMP/polite.cfg" "$polite_count" "$POLITE_GAP" "$XRLT_TMP/polite.log"
polite_pid=$XRLT_LAST_PID
sleep 0.2
t0=$(date +%s%N)
xrlt_flood_bg "$XRLT_TMP/abuse.cfg" "$FLOOD_MAX" "$FLOOD_SECS" "$XRLT_TMP/abuse.log"
flood_pid=$XRLT_LAST_PID
rc=0
xrlt_wait "$flood_pid" || rc=$?
t1=$(date +%s%N)
[ "$rc" = 0 ] || [ "$rc" = 124 ] || xrlt_fail "abusive trafgen exited with $rc: $(tail -5 "$XRLT_TMP/abuse.log")"
rc=0
xrlt_wait "$polite_pid" || rc=$?
[ "$rc" = 0 ] || xrlt_fail "polite trafgen exited with $rc (stopped by its timeout?): $(tail -5 "$XRLT_TMP/polite.log")"
sleep 0.2
xrlt_capture_stop
rx1=$(xrlt_root_rx)
txdrop1=$(xrlt_ns_tx_dropped)

stats=$XRLT_TMP/stats.json
xrl --json stats >"$stats" 2>"$XRLT_TMP/stats.err" ||
	xrlt_fail "xrl --json stats failed: $(cat "$XRLT_TMP/stats.err")"

# ---- figures
ab_sent=$(xrlt_trafgen_sent "$XRLT_TMP/abuse.log")
ab_tg_secs=$(xrlt_trafgen_secs "$XRLT_TMP/abuse.log")
pol_sent=$(xrlt_trafgen_sent "$XRLT_TMP/polite.log")
pol_tg_secs=$(xrlt_trafgen_secs "$XRLT_TMP/polite.log")
xrlt_is_uint "$ab_sent" && [ -n "$ab_tg_secs" ] && xrlt_true "$ab_tg_secs > 0" ||
	xrlt_fail "no count/time from the abusive trafgen: $(tr '\r' ' ' <"$XRLT_TMP/abuse.log")"
xrlt_is_uint "$pol_sent" && [ -n "$pol_tg_secs" ] && xrlt_true "$pol_tg_secs > 0" ||
	xrlt_fail "no count/time from the polite trafgen: $(tr '\r' ' ' <"$XRLT_TMP/polite.log")"

ab_passed=$(xrlt_json_rule_field "$stats" "$ABUSE_SRC/32" passed)
ab_dropped=$(xrlt_json_rule_field "$stats" "$ABUSE_SRC/32" dropped)
pol_passed=$(xrlt_json_rule_field "$stats" "$POLITE_SRC/32" passed)
pol_dropped=$(xrlt_json_rule_field "$stats" "$POLITE_SRC/32" dropped)
xrlt_is_uint "$ab_passed" && xrlt_is_uint "$ab_dropped" && xrlt_is_uint "$pol_passed" && xrlt_is_uint "$pol_dropped" ||
	xrlt_fail "xrl --json stats has no passed/dropped for the rules $ABUSE_SRC/32 and $POLITE_SRC/32: $(cat "$stats")"

# first/last passed packet of each source, as the capture behind XDP saw them
read -r _ cap_ab_n cap_ab_first cap_ab_last cap_ab_gap < <(xrlt_pcap_sources "$XRLT_TMP/passed.pcap" | grep "^$ABUSE_SRC ") || true
read -r _ cap_pol_n cap_pol_first cap_pol_last cap_pol_gap < <(xrlt_pcap_sources "$XRLT_TMP/passed.pcap" | grep "^$POLITE_SRC ") || true
cap_ab_n=${cap_ab_n:-0}
cap_pol_n=${cap_pol_n:-0}

# Elapsed = how long the abusive source really sent: trafgen's own send loop
# (gettimeofday around it: the first frame leaves microseconds after the
# loop starts, the last one just before it ends). The bucket starts full at
# the first packet and a flood never pauses long enough to refill it, so
# passed = burst + rate x elapsed. The capture gives an independent clock:
# xrl passes the first packet, then one every 1/rate, so the first to last
# PASSED packet span must cover the whole send time (if xrl stopped passing
# half way, the count alone could still look right for the shorter span).
elapsed=$ab_tg_secs
wall_secs=$(xrlt_calc "($t1 - $t0) / 1e9")
if [ "$cap_ab_n" -ge 2 ]; then
	cap_secs=$(xrlt_calc "($cap_ab_last - $cap_ab_first) / 1e9")
else
	cap_secs=0
fi
expected=$(xrlt_calc "$RATE * $elapsed + $BURST")
err=$(xrlt_calc "($ab_passed - $expected) * 100 / $expected")
flood_pps=$(xrlt_calc "$ab_sent / $ab_tg_secs")
factor=$(xrlt_calc "$flood_pps / $RATE")
span_tol=$(xrlt_calc "0.01 * $elapsed + 2 / $RATE")   # 1 % + 2 packet intervals
rx_delta=$((rx1 - rx0))
txdrop_delta=$((txdrop1 - txdrop0))
ms() { xrlt_calc "${1:-0} / 1e6"; }

printf '\n'
printf '  abusive %s: sent %s in %.4f s (trafgen send loop; %.3f s wall) = %.0f pps = %.0fx the limit\n' \
	"$ABUSE_SRC" "$ab_sent" "$ab_tg_secs" "$wall_secs" "$flood_pps" "$factor"
printf '    passed %s, dropped %s (xrl); capture behind XDP: %s passed over %.4f s, max gap %.1f ms\n' \
	"$ab_passed" "$ab_dropped" "$cap_ab_n" "$cap_secs" "$(ms "${cap_ab_gap:-0}")"
printf '    expected %.1f = %s/s x %.4f s + %s; error %+.2f %% (tolerance %s %%)\n' \
	"$expected" "$RATE" "$elapsed" "$BURST" "$err" "$TOL"
printf '  polite %s: sent %s in %.3f s (%.0f pps), passed %s, dropped %s (xrl); capture: %s, max gap %.1f ms\n' \
	"$POLITE_SRC" "$pol_sent" "$pol_tg_secs" "$(xrlt_calc "$pol_sent / $pol_tg_secs")" \
	"$pol_passed" "$pol_dropped" "$cap_pol_n" "$(ms "${cap_pol_gap:-0}")"
printf '  veth: %s frames reached %s (trafgen sent %s), %s tx drops in the namespace\n' \
	"$rx_delta" "$XRLT_ROOT_IF" "$((ab_sent + pol_sent))" "$txdrop_delta"
printf '  xrl totals: %s passed, %s dropped\n\n' "$(xrlt_json_field "$stats" passed)" "$(xrlt_json_field "$stats" dropped)"

# ---- checks
# the frames must have reached the XDP hook: otherwise nothing below means anything
[ "$rx_delta" -eq $((ab_sent + pol_sent)) ] ||
	xrlt_check_fail "the root veth received $rx_delta frames but trafgen sent $((ab_sent + pol_sent)) ($txdrop_delta tx drops): frames lost before XDP, the run is inconclusive"
[ $((ab_passed + ab_dropped)) -eq "$ab_sent" ] ||
	xrlt_check_fail "xrl counted $((ab_passed + ab_dropped)) abusive packets (passed+dropped), trafgen sent $ab_sent"
xrlt_true "$factor >= $MIN_FLOOD_FACTOR" ||
	xrlt_check_fail "the flood reached only $(printf %.0f "$flood_pps") pps = $(printf %.0f "$factor")x the limit, below ${MIN_FLOOD_FACTOR}x: not a flood"
xrlt_true "$err <= $TOL && $err >= -$TOL" ||
	xrlt_check_fail "abusive source: $ab_passed passed, expected $(printf %.1f "$expected") +- $TOL % (error $(printf %+.2f "$err") %)"
xrlt_true "$cap_secs - $elapsed <= $span_tol && $elapsed - $cap_secs <= $span_tol" ||
	xrlt_check_fail "abusive source: its passed packets span $(printf %.4f "$cap_secs") s but it sent for $(printf %.4f "$elapsed") s (tolerance $(printf %.4f "$span_tol") s)"
[ "$pol_dropped" -eq 0 ] ||
	xrlt_check_fail "polite source: xrl dropped $pol_dropped of its packets"
[ "$pol_passed" -eq "$pol_sent" ] ||
	xrlt_check_fail "polite source: $pol_passed passed of $pol_sent sent"
# the polite source must really have sent during the whole flood
[ "$cap_pol_n" -ge 2 ] && [ "$cap_ab_n" -ge 2 ] &&
	[ "$cap_pol_first" -le "$cap_ab_first" ] && [ "$cap_pol_last" -ge "$cap_ab_last" ] ||
	xrlt_check_fail "the polite source did not send during the whole flood (capture: polite ${cap_pol_first:-?}..${cap_pol_last:-?}, abusive ${cap_ab_first:-?}..${cap_ab_last:-?} ns)"
# the capture behind XDP must agree with xrl's own counters
[ "$cap_ab_n" -eq "$ab_passed" ] && [ "$cap_pol_n" -eq "$pol_passed" ] ||
	xrlt_check_fail "capture behind XDP saw $cap_ab_n abusive + $cap_pol_n polite packets, xrl says $ab_passed + $pol_passed passed"

if [ "${#XRLT_FAILS[@]}" -eq 0 ]; then
	xrlt_log "PASS: abusive source held to $RATE/s (error $(printf %+.2f "$err") %), polite source lost nothing"
fi
xrlt_finish
