#!/usr/bin/env bash
# End-to-end: the bucket table's promise to a source that keeps sending,
# under a random-source flood of another rule, on the smallest table the
# issue used and on the default one.
#
#   XRL=path/to/xrl bash tests/e2e/test_table_flood.sh
#
# One xrl instance (--max-sources TABLE) on the root ends of two veth pairs:
#   pair 1 ($XRLT_ROOT_IF): trafgen sends, paced, an abuser 172.16.0.1 every
#     AGAP (10 ms: ~95/s, about 10x its rule's --rate ARATE/s --burst
#     ABURST) and an established client 172.17.0.1 every CGAP (200 ms:
#     5/s, under its rule's 10/s, which has --new-sources 1/h
#     --new-burst 1: it gets one bucket, and could not get a second);
#   pair 2: bench/xdp_gen (no skb, --hold lo) sends SECS of frames from
#     random sources of 10.0.0.0/8 (16M addresses) under a third rule,
#     count-bounded too: every frame a new source, an insert.
# A sender of its own pair keeps the flood from crowding pair 1's frames
# out before XDP. Pair 1's frames are also captured on the sending side
# (every frame with its send time: the gaps between one source's frames).
#
# The promise (docs/DESIGN.md, "Replacement policy"): a source is replaced
# only when W = 8 other sources of its set are seen (the last a new one)
# within one of its gaps. A flood of R new sources a second over S = TABLE/8
# sets puts Poisson(R/S x gap) inserts into a set during a gap, so the
# expected number of replacements of a source over its gaps g_i is
#   E = sum_i P(Poisson(R/S x g_i) >= 8),
# computed here from the flood's rate in this run (while the generator
# ran: 1 / its ns per frame, or the average if higher) and the gaps captured. Checks, from exact counts (stats --json):
#  - where E < EXACT_E (0.05) the promise is exact: the abuser's rule created
#    one bucket (never replaced) and passed at most ABURST + ARATE x t
#    (t its first to last frame); the client's rule created one bucket and
#    passed every frame the client sent;
#  - where E >= EXACT_E (a table too small for the flood) replacements are
#    allowed, at most E + 4 sqrt(E) + 3, and reported;
#  - the abuser sent at least 5x its rate; the rules counted what they got.
# On the policy before the last-seen stamp (oldest admission among the
# ways not looked up since their set's last insert) the abuser's and
# client's buckets were replaced hundreds of times at these rates.
# Knobs: SECS (10), TABLES ("65536 1048576"), FLOOD_MAX (60M), EXACT_E
# (0.05). Needs root, BPF, trafgen, netsniff-ng, perl and build/xdp_gen;
# fails (never skips) without them.
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
EXACT_E=${EXACT_E:-0.05}
W=8
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

# one config of both sources: the abuser every AGAP, the client once in CEVERY frames
agap_us=$(xrlt_gap_us "$AGAP")
cevery=$(($(xrlt_gap_us "$CGAP") / agap_us))
cfg=$XRLT_TMP/pair1.cfg
: >"$cfg"
for i in $(seq 1 "$cevery"); do
	src=$A_SRC
	[ "$i" = 1 ] && src=$C_SRC
	printf '{ eth(da=%s, type=0x0800), ipv4(saddr=%s, daddr=%s, ttl=64, df), udp(sport=40000, dport=9), fill(0x78, 18) }\n' \
		"$XRLT_DST_MAC" "$src" "$XRLT_DST_IP" >>"$cfg"
done
cfg_c=$XRLT_TMP/client.cfg
xrlt_trafgen_cfg "$cfg_c" "$C_SRC"

# Per source of a pcap, the promise's E for a flood of R new sources a
# second over S sets: sum over the source's gaps of P(Poisson(R/S x gap) >= W).
# Prints "SRC FRAMES SPAN_NS MAX_GAP_NS E".
# promise_e PCAP R S
promise_e() {
	perl - "$1" "$2" "$3" "$W" <<'EOF'
use strict; use warnings;
my ($f, $r, $s, $w) = @ARGV; open(my $fh, '<:raw', $f) or die "open $f: $!\n";
read($fh, my $gh, 24) == 24 or exit 0;
my $ns = unpack('V', $gh) == 0xa1b23c4d;
sub tail { my $mu = shift; my ($t, $p) = (0, exp(-$mu)); for my $k (1 .. 200) { $p *= $mu / $k; $t += $p if $k >= $_[0]; } return $t; }
my %s;
while (read($fh, my $ph, 16) == 16) {
	my ($sec, $frac, $incl) = unpack('VVV', $ph);
	read($fh, my $d, $incl) == $incl or last;
	next if length($d) < 34 || unpack('n', substr($d, 12, 2)) != 0x0800;
	my $t = $sec * 1e9 + ($ns ? $frac : $frac * 1000);
	my $src = join('.', unpack('C4', substr($d, 26, 4)));
	my $e = $s{$src} //= { n => 0, first => $t, last => $t, gap => 0, e => 0 };
	my $g = $t - $e->{last};
	$e->{gap} = $g if $g > $e->{gap};
	$e->{e} += tail($r / $s * $g / 1e9, $w) if $e->{n};
	$e->{n}++;
	$e->{last} = $t;
}
printf("%s %d %d %d %.6g\n", $_, $s{$_}{n}, $s{$_}{last} - $s{$_}{first}, $s{$_}{gap}, $s{$_}{e}) for sort keys %s;
EOF
}

# the client's rule field F and the abuser's, from stats --json in $stats
rf() { xrlt_json_rule_field "$stats" "$1" "$2"; }

run_case() {
	local table=$1 sets t0 t1 grc rc stats pcap rx2 flood_sent t_flood r e_a e_c a_n a_span a_gap c_n c_span c_gap
	local a_passed a_dropped a_created c_passed c_dropped c_created c_refused a_bound allowed v
	sets=$((table / W))
	INSTANCE=tf$$t$table
	PIN_DIR=/sys/fs/bpf/xrl/$INSTANCE
	export PIN_DIR
	section "--max-sources $table ($sets sets of $W): abuser and client on $XRLT_ROOT_IF, a ${SECS}s random-source flood on $ROOT2"
	xrl_or_fail attach "$XRLT_ROOT_IF" --mode native --max-sources "$table"
	xrl_or_fail attach "$ROOT2" --mode native --max-sources "$table"
	xrl_or_fail rule add "$A_RULE" --rate "$ARATE/s" --burst "$ABURST" --per 32
	xrl_or_fail rule add "$C_RULE" --rate 10/s --burst 10 --per 32 --new-sources 1/h --new-burst 1
	xrl_or_fail rule add "$F_RULE" --rate 1/s --burst 1 --per 32

	# the sending side of pair 1: every frame, with its send time
	pcap=$XRLT_TMP/sent$table.pcap
	(
		cd "$XRLT_TMP" || exit 1
		exec ip netns exec "$XRLT_NS" timeout -s INT -k 3 $((SECS + 60)) netsniff-ng --in "$XRLT_NS_IF" \
			--out "$pcap" --silent --no-promisc --no-hwtimestamp --no-sock-mem --notouch-irq \
			--ring-size 4MiB --magic 0xa1b23c4d udp
	) >"$pcap.log" 2>&1 &
	xrlt_track $!
	cap_pid=$!
	for i in $(seq 100); do
		grep -q 'Running' "$pcap.log" 2>/dev/null && break
		sleep 0.05
	done
	grep -q 'Running' "$pcap.log" || xrlt_fail "netsniff-ng did not start on $XRLT_NS_IF: $(cat "$pcap.log")"

	# the client is established before the flood: its first frame, then both senders with the flood
	xrlt_trafgen_bg "$XRLT_TMP/c0.log" 5 --conf "$cfg_c" --num 1 --cpus 1 --qdisc-path
	sleep 0.3
	rx2_0=$(cat /sys/class/net/"$ROOT2"/statistics/rx_packets)
	t0=$(date +%s%N)
	(
		exec taskset -c "$FLOOD_CPU" timeout -s INT -k 3 $((SECS + 10)) "$GEN" send --netns /run/netns/"$NS2" --ifname "$NS2_IF" \
			--dst-mac "$XRLT_DST_MAC" --dst "$XRLT_DST_IP" --random 10.0.0.0 16777216 \
			--count "$FLOOD_MAX" --secs "$SECS" --hold lo
	) >"$XRLT_TMP/flood$table.log" 2>&1 &
	xrlt_track $!
	gen_pid=$!
	sleep 0.2
	xrlt_trafgen_bg "$XRLT_TMP/p1_$table.log" $((3 * SECS + 5)) --conf "$cfg" \
		--num $(((SECS - 1) * 1000000 / agap_us)) --gap "$AGAP" --cpus 1 --qdisc-path
	p1_pid=$XRLT_LAST_PID
	rc=0
	xrlt_wait "$p1_pid" || rc=$?
	[ "$rc" = 0 ] || xrlt_fail "pair 1's trafgen exited with $rc: $(tail -3 "$XRLT_TMP/p1_$table.log")"
	grc=0
	xrlt_wait "$gen_pid" || grc=$?
	t1=$(date +%s%N)
	[ "$grc" = 0 ] || xrlt_fail "xdp_gen exited with $grc: $(cat "$XRLT_TMP/flood$table.log")"
	rx2=$(($(cat /sys/class/net/"$ROOT2"/statistics/rx_packets) - rx2_0))
	sleep 0.2
	kill -INT "$cap_pid" 2>/dev/null
	xrlt_wait "$cap_pid" >/dev/null 2>&1 || true
	stats=$XRLT_TMP/stats$table.json
	xrl --json stats >"$stats" 2>&1 || xrlt_fail "xrl --json stats failed: $(cat "$stats")"

	flood_sent=$(sed -n 's/^sent=\([0-9]*\) .*/\1/p' "$XRLT_TMP/flood$table.log")
	xrlt_is_uint "$flood_sent" || xrlt_fail "no count from xdp_gen: $(cat "$XRLT_TMP/flood$table.log")"
	t_flood=$(xrlt_calc "($t1 - $t0) / 1e9")
	# the rate while the generator ran (it pauses between its test runs): 1 / its ns per frame
	run_ns=$(sed -n 's/.* run_ns=\([0-9.]*\).*/\1/p' "$XRLT_TMP/flood$table.log")
	r=$(xrlt_calc "$rx2 / $t_flood")
	xrlt_true "${run_ns:-0} > 0 && 1e9 / $run_ns > $r" && r=$(xrlt_calc "1e9 / $run_ns")
	read -r _ a_n a_span a_gap e_a < <(promise_e "$pcap" "$r" "$sets" | grep "^$A_SRC ")
	read -r _ c_n c_span c_gap e_c < <(promise_e "$pcap" "$r" "$sets" | grep "^$C_SRC ")
	a_passed=$(rf "$A_RULE" passed)
	a_dropped=$(rf "$A_RULE" dropped)
	a_created=$(rf "$A_RULE" sources_created)
	c_passed=$(rf "$C_RULE" passed)
	c_dropped=$(rf "$C_RULE" dropped)
	c_created=$(rf "$C_RULE" sources_created)
	c_refused=$(rf "$C_RULE" new_refused)
	for v in a_n c_n a_passed a_dropped a_created c_passed c_dropped c_created c_refused; do
		xrlt_is_uint "${!v:-}" || xrlt_fail "no figure for $v (stats: $(head -c 300 "$stats"); capture: $(promise_e "$pcap" "$r" "$sets" | head -3))"
	done
	a_bound=$(xrlt_calc "$ABURST + $ARATE * $a_span / 1e9")
	printf '  flood: %d frames reached XDP in %.2f s (%.0f/s; xdp_gen: %s; %.0f/s while it ran): %.2f new sources a second per set\n' \
		"$rx2" "$t_flood" "$(xrlt_calc "$rx2 / $t_flood")" "$(cat "$XRLT_TMP/flood$table.log")" "$r" "$(xrlt_calc "$r / $sets")"
	printf '  abuser: %d frames over %.2f s (largest gap %.1f ms), passed %d, dropped %d, buckets %d; bound %s + %s x t = %.1f; E = %.3g\n' \
		"$a_n" "$(xrlt_calc "$a_span / 1e9")" "$(xrlt_calc "$a_gap / 1e6")" "$a_passed" "$a_dropped" "$a_created" "$ABURST" "$ARATE" "$a_bound" "$e_a"
	printf '  client: %d frames over %.2f s (largest gap %.1f ms), passed %d, dropped %d, buckets %d, new_refused %d; E = %.3g\n' \
		"$c_n" "$(xrlt_calc "$c_span / 1e9")" "$(xrlt_calc "$c_gap / 1e6")" "$c_passed" "$c_dropped" "$c_created" "$c_refused" "$e_c"

	check "the abuser sent at least 5x its rate: $a_n frames in $(xrlt_calc "$a_span / 1e9") s" "$a_n >= 5 * $ARATE * $a_span / 1e9"
	check "the abuser's rule counted its frames: passed $a_passed + dropped $a_dropped = $a_n sent" "$a_passed + $a_dropped == $a_n"
	check "the client's rule counted its frames: passed $c_passed + dropped $c_dropped = $c_n sent" "$c_passed + $c_dropped == $c_n"
	check "the flood was a flood: $rx2 frames reached XDP" "$rx2 >= 100000"
	if xrlt_true "$e_a < $EXACT_E"; then
		check "abuser (E = $e_a < $EXACT_E): one bucket, never replaced (buckets $a_created)" "$a_created == 1"
		check "abuser passed $a_passed <= burst + rate x t = $(printf '%.1f' "$a_bound")" "$a_passed <= $a_bound"
	else
		allowed=$(xrlt_calc "$e_a + 4 * sqrt($e_a) + 3")
		xrlt_log "table too small for this flood at the abuser's gaps: E = $e_a replacements promised at most"
		check "abuser replaced $((a_created - 1)) times <= E + 4 sqrt(E) + 3 = $allowed" "$a_created - 1 <= $allowed"
	fi
	if xrlt_true "$e_c < $EXACT_E"; then
		check "client (E = $e_c < $EXACT_E): one bucket (buckets $c_created, new_refused $c_refused)" "$c_created == 1 && $c_refused == 0"
		check "client kept every frame: passed $c_passed of $c_n" "$c_passed == $c_n"
	else
		allowed=$(xrlt_calc "$e_c + 4 * sqrt($e_c) + 3")
		xrlt_log "table too small for this flood at the client's gaps: E = $e_c replacements promised at most"
		check "client lost its bucket $((c_created - 1 + c_refused)) times <= E + 4 sqrt(E) + 3 = $allowed" \
			"$c_created - 1 + $c_refused <= $allowed"
	fi
	xrl detach "$ROOT2" >/dev/null 2>&1
	xrl detach "$XRLT_ROOT_IF" >/dev/null 2>&1
	[ -d "$PIN_DIR" ] && { xrlt_warn "pins left in $PIN_DIR after detach: removing them"; rm -rf "$PIN_DIR"; }
	INSTANCE=
}

for table in $TABLES; do
	run_case "$table"
done

xrlt_finish
