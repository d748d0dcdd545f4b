# shellcheck shell=bash
# shellcheck disable=SC2034  # variables are for the tests that source this
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
# tests/e2e/lib.sh: helpers for xrl's end-to-end traffic tests. Source it.
#
# Topology (everything private to one run, named after $XRLT_NAME = xrlt<pid>):
#
#   root namespace                       namespace $XRLT_NS
#   $XRLT_ROOT_IF  <====== veth =======  $XRLT_NS_IF  (198.18.0.1/24)
#   (XDP attached here)                  trafgen sends from here
#
# Traffic is generated INSIDE the namespace with trafgen (raw Ethernet frames
# through an AF_PACKET socket, so any source address can be spoofed) and
# received by the root-namespace end, where the program under test runs.
#
# Containment: the frames are addressed to $XRLT_DST_MAC, a MAC from the
# RFC 7042 documentation range that no interface owns, and to
# $XRLT_DST_IP, an address nobody has. Whatever XDP passes is therefore
# PACKET_OTHERHOST on the root end and is discarded by ip_rcv(): it is never
# routed, answered (no ICMP unreachable towards the spoofed sources) or
# forwarded anywhere. The root end gets no address, so the run adds no route
# to the root namespace; IPv6 is disabled on both ends so that the veth
# carries only the test's frames (RX counters then equal what was sent).
#
# Every load is bounded by a packet count AND by timeout(1). Cleanup (EXIT,
# INT, TERM) stops the background processes this run started (by pid), runs
# the registered hooks (e.g. xrl detach), deletes the veth pair and the
# namespace, and removes the temporary directory.
#
# trafgen 0.6.8 facts this library relies on (found by experiment):
#  - Without -t/-b trafgen uses its TX_RING "fast path": ~1.1 Mpps on one
#    CPU of the 2-CPU VM into a veth whose peer has a native XDP_DROP program
#    (~650 kpps when every frame is passed up the stack). With -P 2 it dies
#    with "Flushing TX_RING failed: Resource temporarily unavailable", so
#    floods use -P 1. Worker i is pinned to CPU i, so -P 1 means CPU 0.
#  - -t GAP (slow path) sleeps GAP after every frame: smooth, and never faster
#    than 1/GAP; real rate is a little lower (5ms -> ~196/s idle, ~180/s
#    next to a flood; 1ms -> ~920/s).
#  - -b RATE is NOT a pacer: it sends RATE frames back to back, then sleeps
#    the rest of the second (a 999 ms gap was measured with -b 500pps). Only
#    its total duration is exact. Never use it for a "polite" source.
#  - It prints "N packets outgoing" and "S sec, U usec on CPU0" (the wall
#    time of its send loop) on exit, also when stopped by SIGINT.
#  - -A is listed in --help but missing from its getopt string: use
#    --no-sock-mem (otherwise it tries to retune global socket sysctls).
#  - It creates (and unlinks) .tmp_mmap.* in its working directory: it is
#    run from the temporary directory.
#  - netsniff-ng sizes its RX ring from the link speed (2.5 GB for a veth,
#    ~2.7 s to start): captures use -S to keep the ring small.

XRLT_NAME=${XRLT_NAME:-xrlt$$}
XRLT_NS=${XRLT_NAME}ns
XRLT_ROOT_IF=${XRLT_NAME}r          # at most 15 characters: xrlt + pid (<= 7 digits) + r
XRLT_NS_IF=${XRLT_NAME}n
XRLT_NS_ADDR=${XRLT_NS_ADDR:-198.18.0.1/24}
XRLT_DST_MAC=${XRLT_DST_MAC:-00:00:5e:00:53:01}
XRLT_DST_IP=${XRLT_DST_IP:-198.18.255.254}
XRLT_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
XRLT_TMP=
XRLT_PIDS=()
XRLT_HOOKS=()
XRLT_FAILS=()
XRLT_CLEANED=0
XRLT_CREATED_NS=0
XRLT_CREATED_LINK=0
XRLT_RESULT_PRINTED=0

# ---------------------------------------------------------------- messages

xrlt_log() { printf '[%s] %s\n' "$XRLT_NAME" "$*"; }
xrlt_warn() { printf '[%s] WARNING: %s\n' "$XRLT_NAME" "$*" >&2; }

# Record a failed check and carry on, so that one run reports every problem.
xrlt_check_fail() {
	printf '[%s] FAIL: %s\n' "$XRLT_NAME" "$*" >&2
	XRLT_FAILS+=("$*")
}

# Fatal: report, print the result line and exit (cleanup runs from the trap).
xrlt_fail() {
	printf '[%s] FAIL: %s\n' "$XRLT_NAME" "$*" >&2
	XRLT_FAILS+=("$*")
	xrlt_result
	exit 1
}

# The last line of every run: "1 passed, 0 failed" or "0 passed, 1 failed".
xrlt_result() {
	[ "$XRLT_RESULT_PRINTED" = 1 ] && return
	XRLT_RESULT_PRINTED=1
	if [ "${#XRLT_FAILS[@]}" -eq 0 ]; then
		echo "1 passed, 0 failed"
	else
		echo "0 passed, 1 failed"
	fi
}

# Scripts made of many checks call this once, before their first check: it
# defines ok, bad, check, verdict and section, counts what passes, and makes
# the result line "N passed, M failed" (on fd 3, the script's own stdout: a
# Ctrl-C can arrive while a function's output is redirected to a file).
xrlt_counted_checks() {
	PASSES=0
	exec 3>&1
	ok() { PASSES=$((PASSES + 1)); printf '  ok    %s\n' "$*"; }
	bad() { XRLT_FAILS+=("$*"); printf '  FAIL  %s\n' "$*"; }
	# check DESC AWK-CONDITION
	check() { if xrlt_true "$2"; then ok "$1"; else bad "$1 ($2)"; fi; }
	# verdict DESC WHY...: ok when no reason to fail was given
	verdict() {
		local desc=$1
		shift
		if [ $# -eq 0 ]; then
			ok "$desc"
		else
			local IFS=';'
			bad "$desc -- $*"
		fi
	}
	section() { printf '\n== %s\n' "$*"; }
	xrlt_result() {
		[ "$XRLT_RESULT_PRINTED" = 1 ] && return
		XRLT_RESULT_PRINTED=1
		echo "$PASSES passed, ${#XRLT_FAILS[@]} failed" >&3
	}
	xrlt_fail() {
		printf '  FAIL  %s (fatal: stopping)\n' "$*" >&3
		XRLT_FAILS+=("$*")
		xrlt_cleanup
		xrlt_result
		exit 1
	}
}

# End of a test: result line and exit status from the recorded checks.
xrlt_finish() {
	xrlt_result
	[ "${#XRLT_FAILS[@]}" -eq 0 ]
	exit $?
}

# ---------------------------------------------------------------- requirements

xrlt_require_root() {
	[ "$(id -u)" = 0 ] || xrlt_fail "must run as root (network namespaces, XDP, bpffs); not skipping"
}

xrlt_require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || xrlt_fail "required command '$c' not found (make deps installs the test tools)"
	done
}

# BPF must really be usable: the syscall works and bpffs is (or can be) mounted.
xrlt_require_bpf() {
	xrlt_require_cmd bpftool
	bpftool prog list >/dev/null 2>&1 ||
		xrlt_fail "the bpf() syscall is not usable here (bpftool prog list failed): BPF unavailable; not skipping"
	if ! mountpoint -q /sys/fs/bpf 2>/dev/null; then
		mount -t bpf bpf /sys/fs/bpf 2>/dev/null ||
			xrlt_fail "bpffs is not mounted at /sys/fs/bpf and cannot be mounted"
	fi
}

# jq when present, else python3: one field of a JSON object in a file.
xrlt_json_field() { # FILE FIELD
	if command -v jq >/dev/null 2>&1; then
		jq -r --arg f "$2" '.[$f] // empty' "$1"
	else
		python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2"
	fi
}

# FIELD of the rule whose prefix is PREFIX in `xrl --json stats` output
# (empty when there is no such rule). A bare address matches ADDR/32.
xrlt_json_rule_field() { # FILE PREFIX FIELD
	local p=$2 alt=$2
	case $p in */*) ;; *) alt=$p/32 ;; esac
	if command -v jq >/dev/null 2>&1; then
		jq -r --arg p "$p" --arg a "$alt" --arg f "$3" \
			'[.rules[]? | select(.prefix == $p or .prefix == $a)][0][$f] // empty' "$1"
	else
		python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for r in d.get("rules", []):
    if r.get("prefix") in (sys.argv[2], sys.argv[3]):
        v = r.get(sys.argv[4]); print("" if v is None else v); break
' "$1" "$p" "$alt" "$3"
	fi
}

# ---------------------------------------------------------------- lifecycle

# Temporary directory and traps. Call once, before creating anything.
xrlt_init() {
	XRLT_TMP=$(mktemp -d "/tmp/${XRLT_NAME}.XXXXXX") || xrlt_fail "mktemp failed"
	trap 'xrlt_cleanup' EXIT
	trap 'xrlt_warn "interrupted"; XRLT_FAILS+=("interrupted"); xrlt_cleanup; xrlt_result; exit 130' INT
	trap 'xrlt_warn "terminated"; XRLT_FAILS+=("terminated"); xrlt_cleanup; xrlt_result; exit 143' TERM
}

# Run CMD (a string, eval'ed) at cleanup, after background processes are
# stopped and before the veth and namespace go. Hooks run newest first.
xrlt_on_cleanup() { XRLT_HOOKS+=("$1"); }

# Stop one of our background processes (by pid): TERM, then KILL after 3 s.
xrlt_stop_pid() {
	local pid=$1 i
	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 30); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

xrlt_cleanup() {
	[ "$XRLT_CLEANED" = 1 ] && return 0
	XRLT_CLEANED=1
	local i pid
	for pid in "${XRLT_PIDS[@]}"; do
		xrlt_stop_pid "$pid"
	done
	for ((i = ${#XRLT_HOOKS[@]} - 1; i >= 0; i--)); do
		eval "${XRLT_HOOKS[$i]}" || xrlt_warn "cleanup step failed: ${XRLT_HOOKS[$i]}"
	done
	# deleting one end deletes the pair; deleting the namespace would too
	if [ "$XRLT_CREATED_LINK" = 1 ] && ip link show dev "$XRLT_ROOT_IF" >/dev/null 2>&1; then
		ip link del dev "$XRLT_ROOT_IF" 2>/dev/null || xrlt_warn "cannot delete $XRLT_ROOT_IF"
	fi
	if [ "$XRLT_CREATED_NS" = 1 ] && ip netns list 2>/dev/null | grep -qw "^$XRLT_NS"; then
		ip netns del "$XRLT_NS" 2>/dev/null || xrlt_warn "cannot delete namespace $XRLT_NS"
	fi
	if [ -n "$XRLT_TMP" ] && [ -d "$XRLT_TMP" ] && [ -z "${XRLT_KEEP_TMP:-}" ]; then
		rm -rf "$XRLT_TMP"
	fi
	return 0
}

# Remember a background pid for cleanup (the pid of the process itself:
# start it as `( cd DIR && exec CMD ) >LOG 2>&1 &` so that $! is CMD).
xrlt_track() {
	XRLT_LAST_PID=$1
	XRLT_PIDS+=("$1")
}

# Wait for one background pid; returns its exit status.
xrlt_wait() {
	local rc=0
	wait "$1" || rc=$?
	return $rc
}

# ---------------------------------------------------------------- topology

# Namespace NS + veth pair: root end ROOT_IF, namespace end NS_IF with
# NS_ADDR. Both ends up, IPv6 off, no root address. The caller marks both
# for cleanup before calling (names are private to the run).
# xrlt_make_pair NS ROOT_IF NS_IF NS_ADDR
xrlt_make_pair() {
	local ns=$1 root_if=$2 ns_if=$3 addr=$4 i
	[ ${#root_if} -le 15 ] || xrlt_fail "interface name $root_if is longer than 15 characters"
	ip netns add "$ns" || xrlt_fail "cannot create network namespace $ns"
	ip link add "$root_if" type veth peer name "$ns_if" netns "$ns" ||
		xrlt_fail "cannot create veth pair $root_if/$ns_if"
	if [ -d /proc/sys/net/ipv6/conf/"$root_if" ]; then
		sysctl -qw net.ipv6.conf."$root_if".disable_ipv6=1 >/dev/null
		ip netns exec "$ns" sysctl -qw net.ipv6.conf."$ns_if".disable_ipv6=1 >/dev/null
	fi
	ip -n "$ns" link set lo up &&
		ip -n "$ns" addr add "$addr" dev "$ns_if" &&
		ip -n "$ns" link set "$ns_if" up &&
		ip link set "$root_if" up ||
		xrlt_fail "cannot configure the veth pair $root_if/$ns_if"
	for i in $(seq 50); do
		[ "$(cat /sys/class/net/"$root_if"/operstate 2>/dev/null)" = up ] && return 0
		sleep 0.1
	done
	xrlt_fail "$root_if did not come up"
}

# Two namespaces NS_A and NS_B joined by a veth pair (IF_A in NS_A, IF_B in
# NS_B) with QUEUES TX and RX queues at each end; IPv6 off in both, lo and
# both ends up, no address. The caller deletes the namespaces at cleanup
# (the benches' topology: bench/bench_path.sh).
# xrlt_make_ns_pair NS_A IF_A NS_B IF_B QUEUES
xrlt_make_ns_pair() {
	local ns_a=$1 if_a=$2 ns_b=$3 if_b=$4 q=$5 ns i
	ip netns add "$ns_a" || xrlt_fail "cannot create network namespace $ns_a"
	ip netns add "$ns_b" || xrlt_fail "cannot create network namespace $ns_b"
	ip -n "$ns_a" link add "$if_a" numtxqueues "$q" numrxqueues "$q" type veth \
		peer name "$if_b" numtxqueues "$q" numrxqueues "$q" netns "$ns_b" ||
		xrlt_fail "cannot create veth pair $if_a/$if_b"
	for ns in "$ns_a" "$ns_b"; do
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null ||
			xrlt_fail "cannot disable IPv6 in $ns"
		ip -n "$ns" link set lo up
	done
	ip netns exec "$ns_a" sysctl -qw net.ipv6.conf."$if_a".disable_ipv6=1 >/dev/null
	ip netns exec "$ns_b" sysctl -qw net.ipv6.conf."$if_b".disable_ipv6=1 >/dev/null
	ip -n "$ns_a" link set "$if_a" up && ip -n "$ns_b" link set "$if_b" up ||
		xrlt_fail "cannot bring the veth pair $if_a/$if_b up"
	for i in $(seq 50); do
		[ "$(ip netns exec "$ns_b" cat /sys/class/net/"$if_b"/operstate 2>/dev/null)" = up ] && return 0
		sleep 0.1
	done
	xrlt_fail "$if_b did not come up"
}

# The run's own pair: $XRLT_NS, $XRLT_ROOT_IF, $XRLT_NS_IF, $XRLT_NS_ADDR.
xrlt_setup_pair() {
	XRLT_CREATED_NS=1
	XRLT_CREATED_LINK=1
	xrlt_make_pair "$XRLT_NS" "$XRLT_ROOT_IF" "$XRLT_NS_IF" "$XRLT_NS_ADDR"
}

# Packet counters of the root end (what reached the XDP hook: veth counts a
# frame as received before its XDP program runs, dropped or not).
xrlt_root_rx() { cat /sys/class/net/"$XRLT_ROOT_IF"/statistics/rx_packets; }
xrlt_ns_tx() { ip netns exec "$XRLT_NS" cat /sys/class/net/"$XRLT_NS_IF"/statistics/tx_packets; }
xrlt_ns_tx_dropped() { ip netns exec "$XRLT_NS" cat /sys/class/net/"$XRLT_NS_IF"/statistics/tx_dropped; }

# XDP mode on the root end as `ip link` shows it: xdp (native), xdpgeneric,
# xdpoffload, or none.
xrlt_xdp_mode() {
	local l
	l=$(ip -o link show dev "${1:-$XRLT_ROOT_IF}" 2>/dev/null)
	case $l in
	*" xdpgeneric"*) echo xdpgeneric ;;
	*" xdpoffload"*) echo xdpoffload ;;
	*" xdpmulti"*) echo xdpmulti ;;
	*" xdp "*|*" xdp/"*|*"prog/xdp"*) echo xdp ;;
	*) echo none ;;
	esac
}

# ---------------------------------------------------------------- traffic

# Write a trafgen config: one Ethernet/IPv4/UDP frame from SRC_IP, or an
# Ethernet/IPv6/UDP frame to XRLT_DST_IP6 (default a documentation address
# nobody has) when SRC_IP is an IPv6 address.
# xrlt_trafgen_cfg FILE SRC_IP [SPORT [DPORT [PAYLOAD_BYTES]]]
# (60-byte IPv4 frame by default; trafgen fills the checksums and the
# source MAC of the sending device.)
xrlt_trafgen_cfg() {
	local file=$1 src=$2 sport=${3:-40000} dport=${4:-9} plen=${5:-18}
	case $src in
	*:*)
		cat >"$file" <<EOF
{
  eth(da=$XRLT_DST_MAC, type=0x86dd),
  ipv6(sa=$src, da=${XRLT_DST_IP6:-2001:db8:ffff::fe}, hoplimit=64),
  udp(sport=$sport, dport=$dport),
  fill(0x78, $plen)
}
EOF
		return
		;;
	esac
	cat >"$file" <<EOF
{
  eth(da=$XRLT_DST_MAC, type=0x0800),
  ipv4(saddr=$src, daddr=$XRLT_DST_IP, ttl=64, df),
  udp(sport=$sport, dport=$dport),
  fill(0x78, $plen)
}
EOF
}

# trafgen inside the namespace, from the temporary directory, in the
# background, bounded by timeout(1) (SIGINT first: trafgen then stops
# cleanly and prints its count; SIGKILL 3 s later if it did not). $! is
# timeout's pid (ip netns exec execs), so stopping it stops trafgen.
# xrlt_trafgen_bg LOG SECONDS TRAFGEN_ARGS...; sets XRLT_LAST_PID.
xrlt_trafgen_bg() {
	local log=$1 secs=$2
	shift 2
	(
		cd "$XRLT_TMP" || exit 1
		exec ip netns exec "$XRLT_NS" timeout -s INT -k 3 "$secs" \
			trafgen --no-sock-mem --notouch-irq --dev "$XRLT_NS_IF" "$@"
	) >"$log" 2>&1 &
	xrlt_track $!
}

# Flood: fast path on one CPU, as fast as it goes, for SECONDS (timeout) or
# MAX_COUNT frames, whichever comes first. Background; sets XRLT_LAST_PID.
# Exit status 124 (stopped by the timeout) is normal.
# xrlt_flood_bg CFG MAX_COUNT SECONDS LOG
xrlt_flood_bg() {
	xrlt_trafgen_bg "$4" "$3" --conf "$1" --num "$2" --cpus 1
}

# Paced sender: COUNT frames, GAP between them (trafgen -t, e.g. 5ms):
# never faster than 1/GAP. Bounded by count and by a timeout of
# 3 x COUNT x GAP + 5 s. Background; sets XRLT_LAST_PID.
# xrlt_paced_bg CFG COUNT GAP LOG
xrlt_paced_bg() {
	local us
	us=$(xrlt_gap_us "$3") || xrlt_fail "bad gap '$3'"
	xrlt_trafgen_bg "$4" $((3 * $2 * us / 1000000 + 5)) --conf "$1" --num "$2" --gap "$3" --cpus 1
}

# Rate-shaped sender (trafgen -b RATEpps). Bursty: RATE frames back to back
# each second (see the top of this file). Background; sets XRLT_LAST_PID.
# xrlt_rate_bg CFG COUNT RATE LOG
xrlt_rate_bg() {
	xrlt_trafgen_bg "$4" $(($2 / $3 + 6)) --conf "$1" --num "$2" --rate "$3pps" --cpus 1
}

xrlt_gap_us() { # 5ms -> 5000
	case $1 in
	*ns) echo $((${1%ns} / 1000)) ;;
	*us) echo "${1%us}" ;;
	*ms) echo $((${1%ms} * 1000)) ;;
	*s) echo $((${1%s} * 1000000)) ;;
	*[!0-9]*) return 1 ;;
	*) echo "$1" ;;
	esac
}

# Frames trafgen reports as sent ("N packets outgoing"); empty if it died.
# (trafgen starts these lines with a carriage return.)
xrlt_trafgen_sent() {
	tr '\r' '\n' <"$1" | awk '/packets outgoing/ && $1 ~ /^[0-9]+$/ { print $1; exit }'
}
# Wall time of trafgen's send loop in seconds ("S sec, U usec on CPU0").
xrlt_trafgen_secs() {
	tr '\r' '\n' <"$1" | awk '/usec on CPU/ && $1 ~ /^[0-9]+$/ { printf "%d.%06d\n", $1, $3; exit }'
}

# ---------------------------------------------------------------- capture

# Capture UDP frames on the root end into PCAP (ns timestamps). Taps run
# after XDP, so this records what the XDP program PASSED. Background; waits
# until netsniff-ng is receiving. xrlt_capture_start PCAP [FILTER]
xrlt_capture_start() {
	local pcap=$1 filter=${2:-udp} log=$1.log i
	(
		cd "$XRLT_TMP" || exit 1
		# bounded too: a capture never outlives 120 s
		exec timeout -s INT -k 3 120 netsniff-ng --in "$XRLT_ROOT_IF" --out "$pcap" --silent \
			--no-promisc --no-hwtimestamp --no-sock-mem --notouch-irq --ring-size 4MiB \
			--magic 0xa1b23c4d "$filter"
	) >"$log" 2>&1 &
	xrlt_track $!
	XRLT_CAPTURE_PID=$!
	for i in $(seq 100); do
		grep -q 'Running' "$log" 2>/dev/null && return 0
		kill -0 "$XRLT_CAPTURE_PID" 2>/dev/null || break
		sleep 0.05
	done
	xrlt_fail "netsniff-ng did not start capturing on $XRLT_ROOT_IF: $(cat "$log" 2>/dev/null)"
}

# Stop the capture (SIGINT: netsniff-ng flushes the pcap).
xrlt_capture_stop() {
	local i
	[ -n "${XRLT_CAPTURE_PID:-}" ] || return 0
	kill -INT "$XRLT_CAPTURE_PID" 2>/dev/null
	for i in $(seq 50); do
		kill -0 "$XRLT_CAPTURE_PID" 2>/dev/null || break
		sleep 0.1
	done
	xrlt_stop_pid "$XRLT_CAPTURE_PID"
	XRLT_CAPTURE_PID=
}

# Per IPv4 source in a pcap: "SRC COUNT FIRST_NS LAST_NS MAX_GAP_NS".
xrlt_pcap_sources() {
	perl - "$1" <<'EOF'
use strict; use warnings;
my $f = shift; open(my $fh, '<:raw', $f) or die "open $f: $!\n";
read($fh, my $gh, 24) == 24 or exit 0;
my $magic = unpack('V', $gh);
my $ns = $magic == 0xa1b23c4d ? 1 : $magic == 0xa1b2c3d4 ? 0 : die sprintf("pcap magic %x?\n", $magic);
my %s;
while (read($fh, my $ph, 16) == 16) {
	my ($sec, $frac, $incl) = unpack('VVV', $ph);
	read($fh, my $d, $incl) == $incl or last;
	next if length($d) < 34 || unpack('n', substr($d, 12, 2)) != 0x0800;
	my $t = $sec * 1000000000 + ($ns ? $frac : $frac * 1000);
	my $src = join('.', unpack('C4', substr($d, 26, 4)));
	my $e = $s{$src} //= { n => 0, first => $t, last => $t, gap => 0 };
	$e->{gap} = $t - $e->{last} if $t - $e->{last} > $e->{gap};
	$e->{n}++;
	$e->{last} = $t;
}
printf("%s %d %d %d %d\n", $_, @{$s{$_}}{qw(n first last gap)}) for sort keys %s;
EOF
}

# ---------------------------------------------------------------- arithmetic

# awk-evaluated floating-point expression, e.g. xrlt_calc "1000 * 2.0 + 100"
xrlt_calc() { awk "BEGIN { printf \"%.6f\\n\", ($1) }"; }
xrlt_is_uint() { [[ ${1:-} =~ ^[0-9]+$ ]]; }
# exit status 0 when the awk condition holds, e.g. xrlt_true "3 < 5"
xrlt_true() { awk "BEGIN { exit !($1) }"; }

# ---------------------------------------------------------------- the CLI
# xrl on the test's instance ($XRL and $INSTANCE, set by the test), and the
# same stopping the test with the command's output when it fails. A test
# that wants them otherwise defines its own after sourcing this file.
xrl() { "$XRL" --instance "$INSTANCE" "$@"; }
xrl_or_fail() {
	local out
	out=$(xrl "$@" 2>&1) || xrlt_fail "xrl $* failed: $out"
	return 0
}
# xr INSTANCE ARGS...: run xrl on INSTANCE; OUT, ERR (text), RC; files
# $XRLT_TMP/o and $XRLT_TMP/e
xr() {
	local inst=$1
	shift
	"$XRL" --instance "$inst" "$@" >"$XRLT_TMP/o" 2>"$XRLT_TMP/e"
	RC=$?
	OUT=$(cat "$XRLT_TMP/o")
	ERR=$(cat "$XRLT_TMP/e")
}
# must INSTANCE ARGS...: run xrl, which must succeed (one check)
must() {
	local inst=$1
	shift
	xr "$inst" "$@"
	if [ "$RC" = 0 ]; then
		ok "xrl --instance $inst $* (exit 0)"
	else
		bad "xrl --instance $inst $*: exit $RC: $ERR$OUT"
	fi
}
# rules_of INSTANCE: its rule set, without the header comment (it names the instance)
rules_of() { "$XRL" --instance "$1" rule save 2>&1 | grep -v '^#'; }
# xdp_prog_id IFACE: the id of the XDP program attached to IFACE, or nothing
xdp_prog_id() { ip -o link show dev "$1" 2>/dev/null | grep -o 'prog/xdp id [0-9]*' | awk '{print $3}'; }
