#!/usr/bin/env bash
# End-to-end: the bucket table's promise to a source that keeps sending,
# under a random-source flood of another rule, on a small table
# (65,536 entries) and on the default one.
#
#   XRL=path/to/xrl bash tests/e2e/test_table_flood.sh
#
# One xrl instance (--max-sources TABLE) on the root ends of two veth pairs:
#   pair 1 ($XRLT_ROOT_IF): two paced trafgens send an abuser 172.16.0.1
#     every AGAP (10 ms: ~95/s, about 10x its rule's --rate ARATE/s --burst
#     ABURST) and an established client 172.17.0.1 every CGAP (200 ms:
#     5/s, under its rule's 10/s, which has --new-sources 1/h --new-burst 1:
#     it gets one bucket, and could not get a second); both start LEAD
#     (0.5 s) before the flood, so both were looked up before it began;
#   pair 2: bench/xdp_gen (no skb, --hold lo) sends SECS of frames from
#     random sources of 10.0.0.0/8 (16M addresses) under a third rule,
#     count-bounded too: nearly every frame a new source, an insert.
# A sender of its own pair keeps the flood from crowding pair 1's frames
# out before XDP. Pair 1's frames are also captured on the sending side
# (every frame with its send time: the gaps between one source's frames).
#
# The promise (docs/DESIGN.md, "Replacement policy"): sources that send
# once replace each other, never a source looked up after its insert that
# is seen again within the probation (8.6 s), whatever the flood's rate and
# the table's size; a random source that repeats within a set's cycle
# (rare over 16M addresses) is one more sighting, and W - 1 of them in one
# set between two of a source's packets would be needed. Checks, from exact
# counts (stats --json), on each table size:
#  - the abuser's rule created one bucket (never replaced) and passed at
#    most ABURST + ARATE x t (t its first to last frame, sending side);
#  - the client's rule created one bucket, refused no new source, and
#    passed every frame the client sent;
#  - the senders' largest gaps stayed under the probation; the abuser sent
#    at least 5x its rate; the rules counted what they got; the flood
#    replaced buckets (the table was full: evicted > 0).
# On the policy before the last-seen stamp (oldest admission among the
# ways not looked up since their set's last insert) both lost their
# buckets many times over at these rates.
# Knobs: SECS (10), TABLES ("65536 1048576"), FLOOD_MAX (60M), FLOOD_CPU
# (1). Needs root, BPF, trafgen, netsniff-ng, perl, taskset and
# build/xdp_gen; fails (never skips) without them.
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
GEN=${GEN:-$(dirname "$XRL")/xdp_gen}
SECS=${SECS:-10}
TABLES=${TABLES:-65536 1048576}
FLOOD_MAX=${FLOOD_MAX:-60000000}
FLOOD_CPU=${FLOOD_CPU:-1}   # trafgen's one worker runs on CPU 0
PROBATION_NS=8589934592   # XRL_SEEN_PROBATION ticks of 2^20 ns
LEAD=0.5
A_SRC=172.16.0.1
A_RULE=172.16.0.0/16
ARATE=10
ABURST=10
AGAP=10ms
C_SRC=172.17.0.1
C_RULE=172.17.0.0/16
CGAP=200ms
F_RULE=10.0.0.0/8

NS2=${XRLT_NAME}f
ROOT2=${XRLT_NAME}x
NS2_IF=${XRLT_NAME}y
CREATED2=0
INSTANCE=

xrlt_counted_checks

xrlt_require_root
xrlt_require_cmd ip trafgen netsniff-ng perl timeout awk jq taskset
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (build it: make build/xrl, or set XRL=)"
[ -x "$GEN" ] || xrlt_fail "no-skb generator not found at $GEN (make build/xdp_gen, or set GEN=)"

xrlt_init
xrlt_setup_pair
# shellcheck disable=SC2034  # read by the cleanup hook
CREATED2=1
# shellcheck disable=SC2016  # expanded when the hook runs
xrlt_on_cleanup 'if [ "$CREATED2" = 1 ]; then ip link del dev "$ROOT2" 2>/dev/null; ip netns del "$NS2" 2>/dev/null; fi; true'
xrlt_make_pair "$NS2" "$ROOT2" "$NS2_IF" 198.19.0.1/24
# shellcheck disable=SC2016
xrlt_on_cleanup 'if [ -n "$INSTANCE" ]; then xrl detach "$ROOT2" >/dev/null 2>&1; xrl detach "$XRLT_ROOT_IF" >/dev/null 2>&1; [ -d "$PIN_DIR" ] && rm -rf "$PIN_DIR"; fi; true'
# a generator killed before it detached (--hold) leaves its program on the namespace's lo
# shellcheck disable=SC2016
xrlt_on_cleanup 'ip -n "$NS2" link set dev lo xdp off 2>/dev/null; true'

cfg_a=$XRLT_TMP/abuser.cfg
xrlt_trafgen_cfg "$cfg_a" "$A_SRC"
cfg_c=$XRLT_TMP/client.cfg
xrlt_trafgen_cfg "$cfg_c" "$C_SRC"
agap_us=$(xrlt_gap_us "$AGAP")
cgap_us=$(xrlt_gap_us "$CGAP")

# Per IPv4 source of a pcap: "SRC FRAMES SPAN_NS MAX_GAP_NS".
gaps_of() { xrlt_pcap_sources "$1" | awk '{ printf "%s %d %.0f %d\n", $1, $2, $4 - $3, $5 }'; }
# a rule's field from stats --json in $stats
rf() { xrlt_json_rule_field "$stats" "$1" "$2"; }

run_case() {
	local table=$1 t0 t1 grc rc stats pcap rx2_0 rx2 flood_sent t_flood a_pid c_pid gen_pid cap_pid
	local a_n a_span a_gap c_n c_span c_gap a_passed a_dropped a_created c_passed c_dropped
	local c_created c_refused a_bound evicted v
	INSTANCE=tf$$t$table
	PIN_DIR=/sys/fs/bpf/xrl/$INSTANCE
	export PIN_DIR
	section "--max-sources $table ($((table / 8)) IPv4 sets of 8): abuser and client on $XRLT_ROOT_IF, a ${SECS}s random-source flood on $ROOT2"
	xrl_or_fail attach "$XRLT_ROOT_IF" --mode native --max-sources "$table"
	xrl_or_fail attach "$ROOT2" --mode native --max-sources "$table"
	xrl_or_fail rule add "$A_RULE" --rate "$ARATE/s" --burst "$ABURST" --per 32
	xrl_or_fail rule add "$C_RULE" --rate 10/s --burst 10 --per 32 --new-sources 1/h --new-burst 1
	xrl_or_fail rule add "$F_RULE" --rate 1/s --burst 1 --per 32

	# the sending side of pair 1: every frame, with its send time (trafgen through the qdisc path: taps see it)
	pcap=$XRLT_TMP/sent$table.pcap
	(
		cd "$XRLT_TMP" || exit 1
		exec ip netns exec "$XRLT_NS" timeout -s INT -k 3 $((SECS + 60)) netsniff-ng --in "$XRLT_NS_IF" \
			--out "$pcap" --silent --no-promisc --no-hwtimestamp --no-sock-mem --notouch-irq \
			--ring-size 4MiB --magic 0xa1b23c4d udp
	) >"$pcap.log" 2>&1 &
	xrlt_track $!
	cap_pid=$!
	for _ in $(seq 100); do
		grep -q 'Running' "$pcap.log" 2>/dev/null && break
		sleep 0.05
	done
	grep -q 'Running' "$pcap.log" || xrlt_fail "netsniff-ng did not start on $XRLT_NS_IF: $(cat "$pcap.log")"

	# abuser and client first (both looked up before the flood), the flood LEAD later, they end after it
	xrlt_trafgen_bg "$XRLT_TMP/a$table.log" $((3 * SECS + 10)) --conf "$cfg_a" \
		--num $(((SECS + 1) * 1000000 / agap_us)) --gap "$AGAP" --cpus 1 --qdisc-path
	a_pid=$XRLT_LAST_PID
	xrlt_trafgen_bg "$XRLT_TMP/c$table.log" $((3 * SECS + 10)) --conf "$cfg_c" \
		--num $(((SECS + 1) * 1000000 / cgap_us)) --gap "$CGAP" --cpus 1 --qdisc-path
	c_pid=$XRLT_LAST_PID
	sleep "$LEAD"
	rx2_0=$(cat /sys/class/net/"$ROOT2"/statistics/rx_packets)
	t0=$(date +%s%N)
	(
		exec taskset -c "$FLOOD_CPU" timeout -s INT -k 3 $((SECS + 10)) "$GEN" send --netns /run/netns/"$NS2" \
			--ifname "$NS2_IF" --dst-mac "$XRLT_DST_MAC" --dst "$XRLT_DST_IP" --random 10.0.0.0 16777216 \
			--count "$FLOOD_MAX" --secs "$SECS" --hold lo
	) >"$XRLT_TMP/flood$table.log" 2>&1 &
	xrlt_track $!
	gen_pid=$!
	grc=0
	xrlt_wait "$gen_pid" || grc=$?
	t1=$(date +%s%N)
	[ "$grc" = 0 ] || xrlt_fail "xdp_gen exited with $grc: $(cat "$XRLT_TMP/flood$table.log")"
	rx2=$(($(cat /sys/class/net/"$ROOT2"/statistics/rx_packets) - rx2_0))
	rc=0
	xrlt_wait "$a_pid" || rc=$?
	xrlt_wait "$c_pid" || rc=$?
	[ "$rc" = 0 ] || xrlt_fail "a pair-1 trafgen exited with $rc: $(tail -3 "$XRLT_TMP/a$table.log" "$XRLT_TMP/c$table.log")"
	sleep 0.2
	kill -INT "$cap_pid" 2>/dev/null
	xrlt_wait "$cap_pid" >/dev/null 2>&1 || true
	stats=$XRLT_TMP/stats$table.json
	xrl --json stats >"$stats" 2>&1 || xrlt_fail "xrl --json stats failed: $(cat "$stats")"

	flood_sent=$(sed -n 's/^sent=\([0-9]*\) .*/\1/p' "$XRLT_TMP/flood$table.log")
	xrlt_is_uint "$flood_sent" || xrlt_fail "no count from xdp_gen: $(cat "$XRLT_TMP/flood$table.log")"
	t_flood=$(xrlt_calc "($t1 - $t0) / 1e9")
	read -r _ a_n a_span a_gap < <(gaps_of "$pcap" | grep "^$A_SRC ")
	read -r _ c_n c_span c_gap < <(gaps_of "$pcap" | grep "^$C_SRC ")
	a_passed=$(rf "$A_RULE" passed)
	a_dropped=$(rf "$A_RULE" dropped)
	a_created=$(rf "$A_RULE" sources_created)
	c_passed=$(rf "$C_RULE" passed)
	c_dropped=$(rf "$C_RULE" dropped)
	c_created=$(rf "$C_RULE" sources_created)
	c_refused=$(rf "$C_RULE" new_refused)
	evicted=$(jq -r '.. | objects | select(has("evicted")) | .evicted' "$stats" 2>/dev/null | head -1)
	for v in a_n a_span a_gap c_n c_span c_gap a_passed a_dropped a_created c_passed c_dropped c_created c_refused evicted; do
		xrlt_is_uint "${!v:-}" || xrlt_fail "no figure for $v (stats: $(head -c 300 "$stats"); capture: $(gaps_of "$pcap" | head -3))"
	done
	a_bound=$(xrlt_calc "$ABURST + $ARATE * $a_span / 1e9")
	printf '  flood: %d frames reached XDP in %.2f s (%.0f/s; xdp_gen: %s), %.1f a second per set of 8; evicted %d\n' \
		"$rx2" "$t_flood" "$(xrlt_calc "$rx2 / $t_flood")" "$(cat "$XRLT_TMP/flood$table.log")" \
		"$(xrlt_calc "$rx2 / $t_flood / ($table / 8)")" "$evicted"
	printf '  abuser: %d frames over %.2f s (largest gap %.1f ms), passed %d, dropped %d, buckets %d; bound %s + %s x t = %.1f\n' \
		"$a_n" "$(xrlt_calc "$a_span / 1e9")" "$(xrlt_calc "$a_gap / 1e6")" "$a_passed" "$a_dropped" "$a_created" "$ABURST" "$ARATE" "$a_bound"
	printf '  client: %d frames over %.2f s (largest gap %.1f ms), passed %d, dropped %d, buckets %d, new_refused %d\n' \
		"$c_n" "$(xrlt_calc "$c_span / 1e9")" "$(xrlt_calc "$c_gap / 1e6")" "$c_passed" "$c_dropped" "$c_created" "$c_refused"

	check "the flood was a flood: $rx2 frames reached XDP, the table full (evicted $evicted)" "$rx2 >= 100000 && $evicted > 0"
	check "the abuser sent at least 5x its rate: $a_n frames in $(xrlt_calc "$a_span / 1e9") s" "$a_n >= 5 * $ARATE * $a_span / 1e9"
	check "the senders' gaps stayed under the probation: $a_gap and $c_gap ns" "$a_gap < $PROBATION_NS && $c_gap < $PROBATION_NS"
	check "the abuser's rule counted its frames: passed $a_passed + dropped $a_dropped = $a_n sent" "$a_passed + $a_dropped == $a_n"
	check "the client's rule counted its frames: passed $c_passed + dropped $c_dropped = $c_n sent" "$c_passed + $c_dropped == $c_n"
	check "abuser: one bucket, never replaced (buckets $a_created)" "$a_created == 1"
	check "abuser passed $a_passed <= burst + rate x t = $(printf '%.1f' "$a_bound")" "$a_passed <= $a_bound"
	check "client: one bucket (buckets $c_created, new sources refused $c_refused)" "$c_created == 1 && $c_refused == 0"
	check "client kept every frame: passed $c_passed of $c_n" "$c_passed == $c_n"
	xrl detach "$ROOT2" >/dev/null 2>&1
	xrl detach "$XRLT_ROOT_IF" >/dev/null 2>&1
	[ -d "$PIN_DIR" ] && { xrlt_warn "pins left in $PIN_DIR after detach: removing them"; rm -rf "$PIN_DIR"; }
	INSTANCE=
}

for table in $TABLES; do
	run_case "$table"
done

xrlt_finish
