#!/usr/bin/env bash
# End-to-end: a random-source flood over 1M addresses
# against one limit rule with --new-sources, while 1,000 established
# sources each send at half their limit under the same rule.
#
#   XRL=path/to/xrl bash tests/e2e/test_spoof.sh
#
# One xrl instance on the root ends of two veth pairs (one rule set, one
# bucket table):
#   pair 1 ($XRLT_ROOT_IF): trafgen sends the established sources
#     10.200.0.1..10.200.3.232, one frame each in turn, a gap of GAP
#     between frames: at most 1/(1000 x GAP) per source (2/s for 500us), half
#     of the rule's RATE (4/s, burst BURST 4);
#   pair 2: bench/xdp_gen (no skb) sends FLOOD_SECS of frames from random
#     sources of 10.0.0.0/12 (1,048,576 addresses), count-bounded too.
# A flood of its own pair does not crowd the established frames out of the
# veth ring before XDP: what is measured is xrl's decision. During the flood,
# NPROBE (400) new sources 10.201.0.0/22 send one frame each on pair 1: the
# budget is the rule's on this host, so they and the flood share it.
# The rule: 10.0.0.0/8 --rate RATE/s --burst BURST --per 32
#           --new-sources NEW/s --new-burst NEW_BURST
# Checks, from exact counts:
#  - every established source got its bucket before the flood (rule created
#    1000, none refused);
#  - the established sources keep >= 99 % of their frames: what passed XDP
#    on pair 1 (a capture behind XDP) over what trafgen sent;
#  - the new sources' admitted frames (the rule's passed, stats --json, minus
#    the established ones captured: the flood's and the probe's) stay within
#    (NEW x t + NEW_BURST) x BURST, t the flood's wall time as this script
#    measured it around xdp_gen (an upper bound of how long it sent);
#  - the buckets created during the flood, on both interfaces together, stay
#    within NEW x t + NEW_BURST (fails when each interface's program has a
#    budget of its own);
#  - the rule's counters add up: passed + dropped = frames that reached XDP on
#    both pairs (receiver counters), new_refused > 0.
# NEWSRC=0 runs the same without --new-sources: the flood bound then fails
# (it is what the test is for), and the script says so.
# The live views are checked too: top --watch and stats --watch (in tmux)
# during the flood name the rule's new sources.
# Knobs: FLOOD_SECS (4), FLOOD_MAX (30M), GAP (500us), RATE (4), BURST (4),
# NEW (200), NEW_BURST (1000), NEWSRC (1). Needs root, BPF, trafgen,
# netsniff-ng and build/xdp_gen; fails (never skips) without them.
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
GEN=${GEN:-$(dirname "$XRL")/xdp_gen}
INSTANCE=${INSTANCE:-spoof$$}
FLOOD_SECS=${FLOOD_SECS:-4}
FLOOD_MAX=${FLOOD_MAX:-30000000}
GAP=${GAP:-500us}
RATE=${RATE:-4}
BURST=${BURST:-4}
NEW=${NEW:-200}
NEW_BURST=${NEW_BURST:-1000}
NEWSRC=${NEWSRC:-1}
NEST=1000
NPROBE=${NPROBE:-400}
KEEP_MIN=0.99

NS2=${XRLT_NAME}f
ROOT2=${XRLT_NAME}x
NS2_IF=${XRLT_NAME}y
CREATED2=0

xrlt_counted_checks

xrlt_require_root
xrlt_require_cmd ip trafgen netsniff-ng perl timeout awk jq tmux
xrlt_require_bpf
[[ $INSTANCE =~ ^[A-Za-z0-9_-]+$ ]] || xrlt_fail "bad instance name '$INSTANCE'"
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (build it: make build/xrl, or set XRL=)"
[ -x "$GEN" ] || xrlt_fail "no-skb generator not found at $GEN (make build/xdp_gen, or set GEN=)"

xrlt_init
xrlt_setup_pair
# shellcheck disable=SC2034  # read by the cleanup hook
CREATED2=1
# shellcheck disable=SC2016  # expanded when the hook runs
xrlt_on_cleanup 'if [ "$CREATED2" = 1 ]; then ip link del dev "$ROOT2" 2>/dev/null; ip netns del "$NS2" 2>/dev/null; fi; true'
xrlt_make_pair "$NS2" "$ROOT2" "$NS2_IF" 198.19.0.1/24
export PIN_DIR=/sys/fs/bpf/xrl/$INSTANCE
# shellcheck disable=SC2016
xrlt_on_cleanup 'xrl detach "$ROOT2" >/dev/null 2>&1; xrl detach "$XRLT_ROOT_IF" >/dev/null 2>&1; if [ -d "$PIN_DIR" ]; then xrlt_warn "pins left in $PIN_DIR after detach: removing them"; rm -rf "$PIN_DIR"; fi; true'
xrl_or_fail attach "$XRLT_ROOT_IF" --mode native
xrl_or_fail attach "$ROOT2" --mode native
ns_opt=()
[ "$NEWSRC" = 1 ] && ns_opt=(--new-sources "$NEW/s" --new-burst "$NEW_BURST")
RULE=10.0.0.0/8
xrl_or_fail rule add "$RULE" --rate "$RATE/s" --burst "$BURST" --per 32 "${ns_opt[@]}"
xrlt_log "test_spoof: rule $RULE --rate $RATE/s --burst $BURST --per 32 ${ns_opt[*]:-(no --new-sources)}; $NEST established sources every $NEST x $GAP on $XRLT_ROOT_IF, a ${FLOOD_SECS}s flood over 10.0.0.0/12 on $ROOT2"

# A trafgen config of one frame from each of COUNT sources, sent in turn:
# the i-th (from 1) is 10.NET.(i / 256).(i % 256).
# sources_cfg FILE NET COUNT
sources_cfg() {
	local i
	: >"$1"
	for i in $(seq 1 "$3"); do
		printf '{ eth(da=%s, type=0x0800), ipv4(saddr=10.%d.%d.%d, daddr=%s, ttl=64, df), udp(sport=40000, dport=9), fill(0x78, 18) }\n' \
			"$XRLT_DST_MAC" "$2" $((i / 256)) $((i % 256)) "$XRLT_DST_IP" >>"$1"
	done
}
# ---- the established sources: 1000 frames in one trafgen config, sent in turn
cfg=$XRLT_TMP/est.cfg
sources_cfg "$cfg" 200 "$NEST"
# NPROBE new sources, one frame each, sent on the established sources' interface during the flood
pcfg=$XRLT_TMP/probe.cfg
sources_cfg "$pcfg" 201 "$NPROBE"
gap_us=$(xrlt_gap_us "$GAP")
# the whole run: a warm-up round and 1 s, the flood, 1 s after it
est_count=$(((FLOOD_SECS + 3) * 1000000 / gap_us))

xrlt_capture_start "$XRLT_TMP/est.pcap" "udp and src net 10.200.0.0/22"
rx1_0=$(xrlt_root_rx)
rx2_0=$(cat /sys/class/net/"$ROOT2"/statistics/rx_packets)
xrlt_paced_bg "$cfg" "$est_count" "$GAP" "$XRLT_TMP/est.log"
est_pid=$XRLT_LAST_PID
# every established source sends once in NEST x GAP (0.5 s at most: longer when slowed)
sleep "$(xrlt_calc "$NEST * $gap_us / 1e6 + 1")"
xrl --json stats >"$XRLT_TMP/pre.json" 2>&1 || xrlt_fail "xrl --json stats failed: $(cat "$XRLT_TMP/pre.json")"
pre_created=$(xrlt_json_rule_field "$XRLT_TMP/pre.json" "$RULE" sources_created)
pre_refused=$(xrlt_json_rule_field "$XRLT_TMP/pre.json" "$RULE" new_refused)

t0=$(date +%s%N)
(
	exec timeout -s INT -k 3 $((FLOOD_SECS + 10)) "$GEN" send --netns /run/netns/"$NS2" --ifname "$NS2_IF" \
		--dst-mac "$XRLT_DST_MAC" --dst "$XRLT_DST_IP" --random 10.0.0.0 1048576 \
		--count "$FLOOD_MAX" --secs "$FLOOD_SECS"
) >"$XRLT_TMP/flood.log" 2>&1 &
xrlt_track $!
gen_pid=$!
# new sources on the other interface meanwhile: the budget is the rule's, not an interface's
sleep 0.5
xrlt_paced_bg "$pcfg" "$NPROBE" 5ms "$XRLT_TMP/probe.log"
probe_pid=$XRLT_LAST_PID
# what an operator sees during the flood
sleep 0.5
during=$XRLT_TMP/during.json
xrl --json stats >"$during" 2>&1 || xrlt_fail "xrl --json stats failed: $(cat "$during")"
xrl top >"$XRLT_TMP/top.txt" 2>&1 || true
xrl --json top >"$XRLT_TMP/top.json" 2>&1 || true
# the live views, two readings 0.5 s apart and more
tm() { tmux -S "$XRLT_TMP/tmux.sock" -f /dev/null "$@"; }
# shellcheck disable=SC2016
xrlt_on_cleanup 'tm kill-server >/dev/null 2>&1; true'
tm new-session -d -s vtop -x 250 -y 40 "$XRL --instance $INSTANCE top --watch -d 0.5" ||
	xrlt_fail "tmux cannot start top --watch"
tm new-session -d -s vstats -x 250 -y 40 "$XRL --instance $INSTANCE stats --watch -d 0.5" ||
	xrlt_fail "tmux cannot start stats --watch"
sleep 1.3
tm capture-pane -p -t vtop: >"$XRLT_TMP/topw.txt" 2>/dev/null
tm capture-pane -p -t vstats: >"$XRLT_TMP/statsw.txt" 2>/dev/null
tm kill-server >/dev/null 2>&1
grc=0
xrlt_wait "$gen_pid" || grc=$?
prc=0
xrlt_wait "$probe_pid" || prc=$?
[ "$prc" = 0 ] || xrlt_fail "probe trafgen exited with $prc: $(tail -3 "$XRLT_TMP/probe.log")"
t1=$(date +%s%N)
[ "$grc" = 0 ] || xrlt_fail "xdp_gen exited with $grc: $(cat "$XRLT_TMP/flood.log")"
rc=0
xrlt_wait "$est_pid" || rc=$?
[ "$rc" = 0 ] || xrlt_fail "established trafgen exited with $rc: $(tail -3 "$XRLT_TMP/est.log")"
sleep 0.3
xrlt_capture_stop
rx1=$(($(xrlt_root_rx) - rx1_0))
rx2=$(($(cat /sys/class/net/"$ROOT2"/statistics/rx_packets) - rx2_0))
stats=$XRLT_TMP/stats.json
xrl --json stats >"$stats" 2>&1 || xrlt_fail "xrl --json stats failed: $(cat "$stats")"

# ---- figures
est_sent=$(xrlt_trafgen_sent "$XRLT_TMP/est.log")
flood_sent=$(sed -n 's/^sent=\([0-9]*\) .*/\1/p' "$XRLT_TMP/flood.log")
xrlt_is_uint "$est_sent" || xrlt_fail "no count from the established trafgen: $(tr '\r' ' ' <"$XRLT_TMP/est.log")"
xrlt_is_uint "$flood_sent" || xrlt_fail "no count from xdp_gen: $(cat "$XRLT_TMP/flood.log")"
read -r est_passed est_seen < <(xrlt_pcap_sources "$XRLT_TMP/est.pcap" | awk '{ n += $2; s++ } END { print n + 0, s + 0 }')
r_passed=$(xrlt_json_rule_field "$stats" "$RULE" passed)
r_dropped=$(xrlt_json_rule_field "$stats" "$RULE" dropped)
r_created=$(xrlt_json_rule_field "$stats" "$RULE" sources_created)
r_refused=$(xrlt_json_rule_field "$stats" "$RULE" new_refused)
for v in r_passed r_dropped r_created r_refused; do
	xrlt_is_uint "${!v}" || xrlt_fail "stats --json has no $v for $RULE: $(head -c 400 "$stats")"
done
t=$(xrlt_calc "($t1 - $t0) / 1e9")
created_flood=$((r_created - pre_created))
cbound=$(xrlt_calc "$NEW * $t + $NEW_BURST")
probe_sent=$(xrlt_trafgen_sent "$XRLT_TMP/probe.log")
flood_passed=$((r_passed - est_passed))
bound=$(xrlt_calc "($NEW * $t + $NEW_BURST) * $BURST")
keep=$(xrlt_calc "$est_passed / $est_sent")

printf '\n'
printf '  established: %d sent, %d passed XDP (%.4f) from %d sources; %d reached XDP on %s\n' \
	"$est_sent" "$est_passed" "$keep" "$est_seen" "$rx1" "$XRLT_ROOT_IF"
printf '  flood: %d sent by xdp_gen in %.2f s (%s), %d reached XDP on %s, %d passed\n' \
	"$flood_sent" "$t" "$(cat "$XRLT_TMP/flood.log")" "$rx2" "$ROOT2" "$flood_passed"
printf '  rule: passed %d, dropped %d, sources_created %d (before the flood %s), new_refused %d (before %s)\n' \
	"$r_passed" "$r_dropped" "$r_created" "$pre_created" "$r_refused" "$pre_refused"
printf '  probe: %s new sources sent on %s during the flood\n' "${probe_sent:-?}" "$XRLT_ROOT_IF"
printf '  during the flood: %s\n' "$(jq -c --arg p "$RULE" '.rules[] | select(.prefix == $p) | {sources, new_sources_per_s, new_refused_per_s}' "$during" 2>/dev/null)"
printf '  top said: %s\n' "$(grep -i 'new sources\|spoofed' "$XRLT_TMP/top.txt" | head -3 | tr '\n' ' ')"
printf '  flood bound: (%s x %.2f + %s) x %s = %.0f\n\n' "$NEW" "$t" "$NEW_BURST" "$BURST" "$bound"

section "before the flood"
[ "$pre_created" = "$NEST" ] && [ "${pre_refused:-0}" = 0 ] &&
	ok "the $NEST established sources have their buckets (created $pre_created, refused ${pre_refused:-0})" ||
	bad "before the flood: created $pre_created, new_refused ${pre_refused:-?} (want $NEST and 0)"

section "during a random-source flood over 1M addresses"
check "the flood was a flood: $flood_sent frames, $rx2 reached XDP (at least 100 x the bound)" "$rx2 >= 100 * $bound"
[ "$est_seen" = "$NEST" ] && ok "all $NEST established sources passed frames" ||
	bad "only $est_seen of the $NEST established sources passed any frame"
check "established sources keep >= 99 % of their frames: $est_passed of $est_sent ($keep)" "$keep >= $KEEP_MIN"
check "new sources (flood and probe) admitted $flood_passed <= (new-source budget x t + new burst) x per-source burst = $(printf '%.0f' "$bound")" "$flood_passed <= $bound"
# both interfaces draw on one budget: the flood's sources and the ${probe_sent:-?} new sources of the other interface together
check "new sources given a bucket during the flood, both interfaces: $created_flood <= budget x t + new burst = $(printf '%.0f' "$cbound")" "$created_flood <= $cbound"
[ "$NEWSRC" = 1 ] || xrlt_true "$flood_passed <= $bound" ||
	xrlt_log "(NEWSRC=0: without --new-sources every spoofed source passes its first frames: the failure above is what the test is for)"
check "the rule counted what reached XDP: passed $r_passed + dropped $r_dropped = $rx1 + $rx2" "$r_passed + $r_dropped == $rx1 + $rx2"
check "pair 1 received the established and probe frames: $rx1 = $est_sent + ${probe_sent:-?}" "$rx1 == $est_sent + ${probe_sent:-0}"
# What the live views said during the flood: top and top --watch a line
# matching TOP_RE and WATCH_RE (WHAT, as the operator reads it), top --json
# the rule's ALERT last, its entry also meeting the jq condition COND.
# views_say WHAT TOP_RE WATCH_RE ALERT [COND]
views_say() {
	local what=$1 top_re=$2 watch_re=$3 alert=$4 cond=${5:-true}
	grep -q "$top_re" "$XRLT_TMP/top.txt" &&
		ok "top, during the flood, $what" ||
		bad "top, during the flood, did not say it ($what): $(head -c 400 "$XRLT_TMP/top.txt")"
	jq -e --arg r "$RULE" --arg a "$alert" "map(select(.alert == \$a and .rule == \$r and ($cond))) | length == 1" \
		"$XRLT_TMP/top.json" >/dev/null 2>&1 &&
		ok "top --json, during the flood, ends with the rule's $alert alert" ||
		bad "top --json has no $alert alert for $RULE: $(head -c 400 "$XRLT_TMP/top.json")"
	grep -q "$watch_re" "$XRLT_TMP/topw.txt" &&
		ok "top --watch, during the flood, $what" ||
		bad "top --watch, during the flood, did not say it ($what): $(head -c 600 "$XRLT_TMP/topw.txt")"
}

if [ "$NEWSRC" = 1 ]; then
	check "the budget refused the flood's new sources: new_refused $r_refused > 0" "$r_refused > 0"
	views_say "says new sources arrive far above the budget" "new sources arrive at" \
		"rule $RULE: new sources arrive at" new_sources_over_budget \
		'.source == null and .arrivals_per_s > 2 * .new_budget_per_s'
	grep -q "^$RULE: new sources refused .*/s (--new-sources $NEW/s)" "$XRLT_TMP/statsw.txt" &&
		ok "stats --watch gives the rule's refused new sources per second and its budget" ||
		bad "stats --watch has no refused-new-sources line: $(head -c 600 "$XRLT_TMP/statsw.txt")"
else
	views_say "warns that a spoofed-source flood passes per-source limits" \
		"a spoofed-source flood passes per-source limits" \
		"a spoofed-source flood passes per-source limits" new_sources_unbudgeted
fi

xrlt_finish
