#!/usr/bin/env bash
# Whole-path benchmark: what a 64-byte UDP flood costs the receiving host,
# per packet, with no filter, a bare XDP_DROP program (the floor), xrl,
# nftables (netdev ingress, dynamic set + limit) and iptables (raw
# PREROUTING, hashlimit), all limiting each source to the same rate/burst.
# Two generators: trafgen (AF_PACKET: every frame is an skb before the
# receiver's XDP sees it) and bench/xdp_gen (cases lone, lrnd, ltwo: XDP
# live frames redirected into the veth, no skb before the receiver's XDP,
# as with a NIC driver's native XDP).
# See docs/BENCHMARKS.md for the last recorded figures. Not a test.
#
#   bench/bench_path.sh [--runs N] [--secs S] [--markdown FILE]
#                         [--cases LIST] [--big-tables] [--no-two-cpu]
#                         [--no-tables-full] [--no-build] [--quick]
#
#   --runs N          runs per cell (5); cells are measured round robin
#   --secs S          length of every measured flood in seconds (3)
#   --markdown FILE   write the markdown section to FILE instead of stdout
#   --cases LIST      comma-separated subset of one,rnd,two (trafgen) and
#                     lone,lrnd,ltwo (the same cases without skbs); all six
#   --big-tables      random-source case also with nftables (set size
#                     1048576) and hashlimit (htable-size/max 1048576)
#   --no-two-cpu      skip the "one source on both CPUs" case
#   --no-tables-full  skip the "tables full: a new abusive source" check
#   --no-build        do not run make for build/xrl, build/xrl_drop.bpf.o
#                     and build/xdp_gen
#   --quick           1 run of 1 s per cell (to try the script)
#
# Environment: XRL (build/xrl), DROP_OBJ (build/xrl_drop.bpf.o), RATE (1000),
# BURST (100), CLANG (clang: builds bench/bench_path.d/xdp_pass.bpf.c, the
# bare XDP_PASS reference, into the temp dir), GEN (build/xdp_gen, the
# no-skb generator), NEW_SOURCES (10000/s: the budget given to
# `xrl rule add ... --new-sources` in the "xrl --new-sources" row, skipped
# with xrl's message when it refuses the value).
#
# Topology (all private to one run, named xrlb<pid>):
#
#   netns xrlb<pid>s                  netns xrlb<pid>r
#   xrlb<pid>a  ======= veth =======  xrlb<pid>b   (2 TX + 2 RX queues each)
#   trafgen sends here                the contender runs here
#   (or xdp_gen redirects frames to xrlb<pid>a: they arrive at b as xdp_frames)
#
# Containment: both ends live in namespaces created here; the receiving
# namespace has no link out of the machine, no default route, forwarding
# off, rp_filter=1, and blackhole routes for every address the frames carry
# (10.0.0.0/12, 198.18.0.0/15), so whatever a contender lets through ends in
# ip_error() without an ICMP reply (checked: ICMP OutMsgs and IP OutRequests
# of that namespace stay 0, the sender's veth receives nothing, and a capture
# on the host's default-route interface sees none of those addresses). The
# root namespace gets no address, route, rule or table. Every flood is
# bounded by a packet count and by timeout(1); EXIT/INT/TERM clean up
# everything created (processes by pid, xrl instance, namespaces, tmp dir).
#
# trafgen 0.6.8 (see tests/e2e/lib.sh): fast path, run from a temp dir with
# --no-sock-mem --notouch-irq. On a veth with ONE queue pair `-P 2` fails;
# with two queue pairs (created here) `--cpus 2` works: worker i is pinned
# to CPU i, AF_PACKET picks TX queue i, veth delivers to RX queue i.
set -u

# ------------------------------------------------------------------ options
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=5
SECS=3
MARKDOWN=
BIG=0
TWO_CPU=1
TABLES_FULL=1
BUILD=1
CASES_OPT=one,rnd,two,lone,lrnd,ltwo
RATE=${RATE:-1000}
BURST=${BURST:-100}
XRL=${XRL:-$REPO/build/xrl}
DROP_OBJ=${DROP_OBJ:-$REPO/build/xrl_drop.bpf.o}
PASS_SRC=$REPO/bench/bench_path.d/xdp_pass.bpf.c
GEN=${GEN:-$REPO/build/xdp_gen}
NEW_SOURCES=${NEW_SOURCES:-10000/s}
CLANG=${CLANG:-clang}
ARGS="$*"

usage() { sed -n '/^#   bench\/bench_path.sh/,/^#   --quick/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--runs) RUNS=${2:-}; shift 2 ;;
	--secs) SECS=${2:-}; shift 2 ;;
	--markdown) MARKDOWN=${2:-}; shift 2 ;;
	--cases) CASES_OPT=${2:-}; shift 2 ;;
	--big-tables) BIG=1; shift ;;
	--no-two-cpu) TWO_CPU=0; shift ;;
	--no-tables-full) TABLES_FULL=0; shift ;;
	--no-build) BUILD=0; shift ;;
	--quick) RUNS=1; SECS=1; shift ;;
	-h|--help) usage ;;
	*) echo "bench_path: unknown option '$1'" >&2; usage ;;
	esac
done
[[ $RUNS =~ ^[1-9][0-9]?$ ]] || { echo "bench_path: --runs wants 1..99" >&2; exit 2; }
[[ $SECS =~ ^[1-9][0-9]?$ ]] || { echo "bench_path: --secs wants 1..99" >&2; exit 2; }
[[ $CASES_OPT =~ ^(l?(one|rnd|two))(,l?(one|rnd|two))*$ ]] || { echo "bench_path: --cases wants a list of one,rnd,two,lone,lrnd,ltwo" >&2; exit 2; }
[[ $RATE =~ ^[1-9][0-9]*$ && $BURST =~ ^[1-9][0-9]*$ ]] || { echo "bench_path: bad RATE/BURST" >&2; exit 2; }
case $XRL in /*) ;; *) XRL=$PWD/$XRL ;; esac
case $DROP_OBJ in /*) ;; *) DROP_OBJ=$PWD/$DROP_OBJ ;; esac
case $GEN in /*) ;; *) GEN=$PWD/$GEN ;; esac

# ------------------------------------------------------------------ names
B=xrlb$$
# the e2e helpers (tests/e2e/lib.sh): temp dir, traps and cleanup, background
# processes, the veth pair between two namespaces, trafgen's figures
XRLT_NAME=$B
. "$REPO/tests/e2e/lib.sh"
NS_S=${B}s
NS_R=${B}r
IF_S=${B}a
IF_R=${B}b
INST=$B
PIN_DIR=/sys/fs/bpf/xrl/$INST
ONE_SRC=198.18.0.10
DST_IP=198.19.255.254                 # nobody's, inside a blackhole route
RND_LO=167772160                      # 10.0.0.0
RND_FIRST=10.0.0.0
NSRC=1000000
RND_HI=$((RND_LO + NSRC - 1))         # 10.15.66.63: 1,000,000 addresses
RANGES="10.0.0.0/12 198.18.0.0/15"
TMP=
MOUNTED_BPF=0
IPROUTE_PINS=             # iproute2's pin directories that existed at start
CAP_PID=
T_START=$(date +%s)

log() { printf '[bench_path %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ------------------------------------------------------------------ cleanup
# xrlt_cleanup (lib.sh) stops the background processes, then runs this
bench_cleanup() {
	if [ -e /run/netns/"$NS_R" ]; then
		ip -n "$NS_R" link set dev "$IF_R" xdpdrv off 2>/dev/null
		nsenter --net=/run/netns/"$NS_R" "$XRL" --instance "$INST" detach "$IF_R" >/dev/null 2>&1
	fi
	if [ -d "$PIN_DIR" ]; then
		log "pins left in $PIN_DIR: removing them"
		rm -rf "$PIN_DIR"
		rmdir /sys/fs/bpf/xrl 2>/dev/null
	fi
	# nft tables, iptables rules and hashlimit tables live in the namespace
	ip netns list 2>/dev/null | grep -qw "^$NS_S" && ip netns del "$NS_S"
	ip netns list 2>/dev/null | grep -qw "^$NS_R" && ip netns del "$NS_R"
	# `ip link set ... xdpdrv obj` creates iproute2's pin directories: remove
	# the ones that were not there before, if empty
	[ -n "$IPROUTE_PINS" ] || IPROUTE_PINS="ip tc xdp"
	for d in tc xdp; do
		case " $IPROUTE_PINS " in *" $d "*) ;; *) rmdir /sys/fs/bpf/"$d"/globals /sys/fs/bpf/"$d" 2>/dev/null ;; esac
	done
	case " $IPROUTE_PINS " in *" ip "*) ;; *) [ -L /sys/fs/bpf/ip ] && [ ! -e /sys/fs/bpf/tc ] && rm -f /sys/fs/bpf/ip ;; esac
	if [ "$MOUNTED_BPF" = 1 ] && [ -z "$(ls -A /sys/fs/bpf 2>/dev/null)" ]; then
		umount /sys/fs/bpf 2>/dev/null
	fi
	return 0
}
xrlt_on_cleanup bench_cleanup

# ------------------------------------------------------------------ checks
[ "$(id -u)" = 0 ] || die "needs root (namespaces, XDP, nftables, iptables)"
for c in ip nft iptables trafgen netsniff-ng nsenter jq awk timeout sed taskset; do
	command -v "$c" >/dev/null 2>&1 || die "required command '$c' not found"
done
if [ "$BUILD" = 1 ]; then
	make -C "$REPO" --no-print-directory build/xrl build/xrl_drop.bpf.o build/xdp_gen >&2 || die "make failed"
fi
xrlt_init   # the temp dir /tmp/$B.XXXXXX; EXIT, INT and TERM clean up
TMP=$XRLT_TMP
[ -x "$XRL" ] || die "xrl not found at $XRL"
[ -r "$DROP_OBJ" ] || die "XDP_DROP object not found at $DROP_OBJ"
case ",$CASES_OPT," in *,l*) [ -x "$GEN" ] || die "no-skb generator not found at $GEN (make build/xdp_gen)" ;; esac
if ! mountpoint -q /sys/fs/bpf 2>/dev/null; then
	mount -t bpf bpf /sys/fs/bpf || die "cannot mount bpffs"
	MOUNTED_BPF=1
fi
IPROUTE_PINS=-
for d in ip tc xdp; do [ -e /sys/fs/bpf/$d ] || [ -L /sys/fs/bpf/$d ] && IPROUTE_PINS="$IPROUTE_PINS $d"; done
NCPU=$(nproc)
[ "$NCPU" -ge 2 ] || TWO_CPU=0
CLK_TCK=$(getconf CLK_TCK)
IPT_VER=$(iptables --version 2>/dev/null)
case $IPT_VER in *nf_tables*) IPT_NFT=1 ;; *) IPT_NFT=0 ;; esac

PASS_OBJ=$TMP/xdp_pass.bpf.o
"$CLANG" -O2 -g -target bpf -mcpu=v3 -Wall -I/usr/include/"$(gcc -dumpmachine 2>/dev/null || echo "$(uname -m)-linux-gnu")" \
	-c "$PASS_SRC" -o "$PASS_OBJ" 2>"$TMP/clang.log" ||
	die "cannot build $PASS_SRC: $(cat "$TMP/clang.log")"
RES=$TMP/runs.tsv         # a header line, then one line per measured run
RES_COLS="case contender round sent secs pps busy cpu0 cpu1 steal ns rx let own bg icmp outreq txdrop percpu info run_ns ksoft"
echo "$RES_COLS" | tr ' ' '\t' >"$RES"

# ------------------------------------------------------------------ helpers
R() { ip netns exec "$NS_R" "$@"; }
xrlc() { nsenter --net=/run/netns/"$NS_R" "$XRL" --instance "$INST" "$@"; }

# busy ticks per CPU (user+nice+system+irq+softirq) and idle+iowait, steal
cpu_snap() { awk '/^cpu[0-9]/ { printf "%s %d %d %d\n", $1, $2+$3+$4+$7+$8, $5+$6, $9 }' /proc/stat; }
# CPU delta between two snapshots: "busy_total busy_cpu0 busy_cpu1 steal" in seconds
cpu_delta() { # FILE0 FILE1
	awk -v hz="$CLK_TCK" 'NR == FNR { b[$1] = $2; s[$1] = $4; next }
		{ d = $2 - b[$1]; t += d; st += $4 - s[$1]; c[$1] = d }
		END { printf "%.3f %.3f %.3f %.3f\n", t / hz, c["cpu0"] / hz, c["cpu1"] / hz, st / hz }' "$1" "$2"
}

# receiver's SNMP: packets that reached IP routing after every filter
# (forwarding is off: ip_error counts them in InAddrErrors/InNoRoutes),
# and what the namespace sent (must stay 0)
snmp_snap() {
	R awk '/^(Ip|Icmp|IpExt):/ { if (!($1 in h)) { for (i = 2; i <= NF; i++) n[$1, i] = $i; h[$1] = 1 }
		else for (i = 2; i <= NF; i++) v[$1 n[$1, i]] = $i }
		END { printf "%d %d %d %d\n", v["Ip:InAddrErrors"] + v["IpExt:InNoRoutes"], v["Icmp:OutMsgs"], v["Ip:OutRequests"], v["Ip:InReceives"] }' \
		/proc/net/snmp /proc/net/netstat
}
# CPU time of the ksoftirqd threads, in ticks: receive work the kernel defers
# there runs outside the generator's test-run timer
ksoft_ticks() { awk '{ t += $14 + $15 } END { print t + 0 }' $(pgrep -x 'ksoftirqd/[0-9]+' | sed 's|.*|/proc/&/stat|') 2>/dev/null; }
rx_r() { R cat /sys/class/net/"$IF_R"/statistics/rx_packets; }
rx_s() { ip netns exec "$NS_S" cat /sys/class/net/"$IF_S"/statistics/rx_packets; }
txdrop_s() { ip netns exec "$NS_S" cat /sys/class/net/"$IF_S"/statistics/tx_dropped; }

tg_secs() { tr '\r' '\n' <"$1" | awk '/usec on CPU/ && $1 ~ /^[0-9]+$/ { s = $1 + $3 / 1e6; if (s > m) m = s } END { if (m) printf "%.6f\n", m }'; }
# packets per CPU line: "cpu0=N cpu1=M"
tg_percpu() { tr '\r' '\n' <"$1" | awk '/usec on CPU/ { c = $6; sub(/^CPU/, "", c); n = $7; gsub(/[(]/, "", n); printf "cpu%s=%s ", c, n }'; }

untrack() { # PID: forget a background pid that has ended
	local p keep=()
	for p in "${XRLT_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	XRLT_PIDS=("${keep[@]}")
}

# trafgen in the sender namespace, from the temp dir, bounded by COUNT and
# by timeout(1); waits for it. run_tg LOG SECS CFG COUNT CPUS
run_tg() {
	local log=$1 secs=$2 cfg=$3 count=$4 cpus=$5 pid rc=0
	(
		cd "$TMP" || exit 1
		exec ip netns exec "$NS_S" timeout -s INT -k 3 "$secs" \
			trafgen --no-sock-mem --notouch-irq --dev "$IF_S" --conf "$cfg" --num "$count" --cpus "$cpus"
	) >"$log" 2>&1 &
	pid=$!
	xrlt_track "$pid"
	wait "$pid" || rc=$?
	untrack "$pid"
	[ "$rc" = 0 ] || [ "$rc" = 124 ]
}

# bench/xdp_gen in the sender namespace, one process per CPU (CPU i for
# process i), each bounded by COUNT frames and SECS seconds itself and by
# timeout(1); waits for them. run_gen LOG SECS COUNT CPUS SOURCE-ARGS...
# Writes LOG.0, LOG.1, ...: "sent=N secs=S run_ns=NS" each.
run_gen() {
	local log=$1 secs=$2 count=$3 cpus=$4 i pid rc=0 pids=()
	shift 4
	for ((i = 0; i < cpus; i++)); do
		timeout -s INT -k 3 $((secs + 15)) taskset -c "$i" "$GEN" send --netns /run/netns/"$NS_S" --ifname "$IF_S" \
			--dst-mac "$R_MAC" --dst "$DST_IP" "$@" --count "$count" --secs "$secs" >"$log.$i" 2>&1 &
		pid=$!
		xrlt_track "$pid"
		pids+=("$pid")
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || rc=1
		untrack "$pid"
	done
	[ "$rc" = 0 ]
}
# figures of run_gen's processes: gen_fig LOG CPUS -> "sent secs run_ns percpu"
# (sent summed, secs the longest, run_ns weighted by frames; percpu "cpu0=N cpu1=M")
gen_fig() {
	local i files=()
	for ((i = 0; i < $2; i++)); do files+=("$1.$i"); done
	awk 'FNR == 1 { cpu = nf++ }
	/^sent=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		n += f["sent"]; t += f["sent"] * f["run_ns"]; if (f["secs"] > s) s = f["secs"]
		pc = pc sprintf("cpu%d=%d ", cpu, f["sent"]); ok++ }
	END { if (ok == ARGC - 1 && n) { sub(/ $/, "", pc); printf "%d %.6f %.1f %s\n", n, s, t / n, pc } }' "${files[@]}"
}
# GRO on the receiving veth: veth accepts redirected frames when its peer has
# an XDP program or GRO on; the contenders without XDP get GRO in l* cases
gro_r() { "$GEN" gro --netns /run/netns/"$NS_R" --ifname "$IF_R" "$1"; }

# ------------------------------------------------------------------ topology
log "namespaces $NS_S -> $NS_R, veth $IF_S -> $IF_R (2 queue pairs)"
xrlt_make_ns_pair "$NS_S" "$IF_S" "$NS_R" "$IF_R" 2
R sysctl -qw net.ipv4.ip_forward=0 net.ipv4.conf.all.forwarding=0 \
	net.ipv4.conf.all.rp_filter=1 net.ipv4.conf."$IF_R".rp_filter=1 net.ipv4.conf.all.log_martians=0 >/dev/null ||
	die "cannot set the receiver's sysctls"
for r in $RANGES; do
	ip -n "$NS_R" route add blackhole "$r" || die "cannot add blackhole route $r in $NS_R"
done
R_MAC=$(R cat /sys/class/net/"$IF_R"/address)
[ -n "$R_MAC" ] || die "no MAC on $IF_R"
[ -z "$(ip -n "$NS_R" route show default)" ] || die "the receiver namespace has a default route"

# ------------------------------------------------------------------ frames
# 60 bytes + FCS = 64 on the wire; addressed to the receiver's MAC
# (PACKET_HOST: iptables sees it too) and to DST_IP, which nobody owns.
frame() { # SADDR_EXPR
	printf '{\n  eth(da=%s, type=0x0800),\n  ipv4(saddr=%s, daddr=%s, ttl=64, df),\n  udp(sport=40000, dport=9),\n  fill(0x78, 18)\n}\n' \
		"$R_MAC" "$1" "$DST_IP"
}
frame "$ONE_SRC" >"$TMP/one.cfg"
frame "drnd($RND_LO, $RND_HI)" >"$TMP/rnd.cfg"
frame "dinc($RND_LO, $RND_HI)" >"$TMP/sweep.cfg"
{ for _ in $(seq 15); do frame "drnd($RND_LO, $RND_HI)"; done; frame "$ONE_SRC"; } >"$TMP/mixed.cfg"

# ------------------------------------------------------------------ contenders
NFT_RULE="meta protocol ip update @m { ip saddr limit rate over $RATE/second burst $BURST packets } counter drop"
nft_conf() { # SIZE_CLAUSE
	cat <<EOF
table netdev xrlb {
	set m { type ipv4_addr; $1flags dynamic,timeout; timeout 10s; }
	chain in {
		type filter hook ingress device "$IF_R" priority 0;
		$NFT_RULE
	}
}
EOF
}
IPT_ARGS="-i $IF_R -m hashlimit --hashlimit-mode srcip --hashlimit-above $RATE/sec --hashlimit-burst $BURST --hashlimit-name xrlb"
IPT_BIG="--hashlimit-htable-size 1048576 --hashlimit-htable-max 1048576"

# setup CONTENDER: nothing may be left from the previous one. LIVE=1 (the
# no-skb cases): the contenders without an XDP program get GRO on the
# receiving veth, which it needs to accept redirected frames.
LIVE=0
setup() {
	if [ "$LIVE" = 1 ]; then
		case $1 in none|nft*|ipt*) gro_r on || return 1 ;; esac
	fi
	case $1 in
	none) ;;
	floor)
		ip -n "$NS_R" link set dev "$IF_R" xdpdrv obj "$DROP_OBJ" sec xdp || return 1 ;;
	pass)
		ip -n "$NS_R" link set dev "$IF_R" xdpdrv obj "$PASS_OBJ" sec xdp || return 1 ;;
	xrl|xrl64k|xrlns)
		local ms=() ns=()
		[ "$1" = xrl64k ] && ms=(--max-sources 65536)
		[ "$1" = xrlns ] && ns=(--new-sources "$NEW_SOURCES")
		xrlc attach "$IF_R" --mode native "${ms[@]}" >/dev/null &&
			xrlc rule add 0.0.0.0/0 --rate "$RATE/s" --burst "$BURST" --per 32 "${ns[@]}" >/dev/null || return 1
		ip -n "$NS_R" -o link show dev "$IF_R" | grep -q ' xdp ' || return 1 ;;
	nft) nft_conf "" | R nft -f - || return 1 ;;
	nft1m) nft_conf "size 1048576; " | R nft -f - || return 1 ;;
	ipt)
		# shellcheck disable=SC2086
		R iptables -w -t raw -A PREROUTING $IPT_ARGS -j DROP || return 1 ;;
	ipt1m)
		# shellcheck disable=SC2086
		R iptables -w -t raw -A PREROUTING $IPT_ARGS $IPT_BIG -j DROP || return 1 ;;
	esac
}
teardown() {
	case $1 in
	floor|pass) ip -n "$NS_R" link set dev "$IF_R" xdpdrv off ;;
	xrl|xrl64k|xrlns) xrlc detach "$IF_R" >/dev/null ;;
	nft|nft1m) R nft delete table netdev xrlb ;;
	ipt|ipt1m)
		R iptables -w -t raw -F PREROUTING
		# iptables-nft: remove the table too, or its hook stays for later runs
		[ "$IPT_NFT" = 1 ] && R nft delete table ip raw 2>/dev/null
		true ;;
	esac
	[ "$LIVE" = 1 ] && gro_r off
	# nothing may stay: no XDP, no nft table in the namespace
	if ip -n "$NS_R" -o link show dev "$IF_R" | grep -q 'prog/xdp'; then
		log "WARNING: an XDP program is still attached after $1"
	fi
	if [ -n "$(R nft list tables 2>/dev/null)" ]; then
		log "WARNING: nft tables left after $1: $(R nft list tables | tr '\n' ' ')"
	fi
}
# own counter of packets let through (or dropped), read after a run
own_counts() { # CONTENDER RX -> "let=N info"
	case $1 in
	none) echo "$2 -" ;;
	floor) echo "0 -" ;;
	pass) echo "$2 -" ;;
	xrl|xrl64k|xrlns)
		xrlc --json stats >"$TMP/stats.json" 2>/dev/null || { echo "? stats-failed"; return; }
		jq -r '"\(.passed) sources=\(.sources),evicted=\(.evicted),insert_failed=\(.insert_failed),cas_contended=\(.cas_contended)"' "$TMP/stats.json" ;;
	nft|nft1m)
		local d
		d=$(R nft -j list chain netdev xrlb in | jq '[.. | objects | select(has("counter")) | .counter.packets] | add // 0')
		echo "$(($2 - d)) rule_drops=$d" ;;
	ipt|ipt1m)
		local d n
		d=$(R iptables -w -t raw -vxnL PREROUTING | awk '$3 == "DROP" { s += $1 } END { print s + 0 }')
		n=$(R sh -c 'wc -l </proc/net/ipt_hashlimit/xrlb' 2>/dev/null || echo '?')
		echo "$(($2 - d)) rule_drops=$d,entries=$n" ;;
	esac
}
describe() {
	case $1 in
	none) echo "no filter" ;;
	floor) echo "bare XDP_DROP" ;;
	pass) echo "bare XDP_PASS" ;;
	xrl) echo "xrl" ;;
	xrl64k) echo "xrl --max-sources 65536" ;;
	xrlns) echo "xrl --new-sources $NEW_SOURCES" ;;
	nft) echo "nftables" ;;
	nft1m) echo "nftables, set size 1M" ;;
	ipt) echo "iptables hashlimit" ;;
	ipt1m) echo "iptables hashlimit, 1M" ;;
	esac
}
stateful() { case $1 in xrl*|nft*|ipt*) return 0 ;; esac; return 1; }

# ------------------------------------------------------------------ one run
# a run that gave no figures: FAILED in its "sent" column
res_failed() { # CASE CONTENDER ROUND
	printf '%s\t%s\t%s\tFAILED\n' "$1" "$2" "$3" >>"$RES"
}
# run_cell CASE CONTENDER ROUND: appends one line to $RES
#   case one: one source, 1 CPU; rnd: 1,000,000 random sources, 1 CPU
#   (stateful contenders first see one sequential sweep over all of them, so
#   their tables are full when timing starts); two: one source, 2 CPUs
run_cell() {
	local case=$1 c=$2 round=$3 cfg cpus=1 count s0 s1 rx0 rx1 td0 td1 la ic orq l1 i1 o1 src=()
	local sent secs pps busy cpu0 cpu1 steal ns thru own info rc=ok bg percpu run_ns=- rx k0 k1 ksoft
	LIVE=0
	case $case in
	one) cfg=$TMP/one.cfg ;;
	rnd) cfg=$TMP/rnd.cfg ;;
	two) cfg=$TMP/one.cfg; cpus=2 ;;
	lone) LIVE=1; src=(--src "$ONE_SRC") ;;
	lrnd) LIVE=1; src=(--random "$RND_FIRST" "$NSRC") ;;
	ltwo) LIVE=1; src=(--src "$ONE_SRC"); cpus=2 ;;
	esac
	if [ "$c" = xrlns ] && [ "$NEWSRC_OK" != 1 ]; then
		printf '%s\t%s\t%s\tSKIPPED\n' "$case" "$c" "$round" >>"$RES"; return
	fi
	count=$((SECS * 3000000 * cpus))      # above what trafgen can send: the timeout ends it
	[ "$LIVE" = 1 ] && count=$((SECS * 20000000))   # per generator process: its --secs ends it
	if ! setup "$c"; then
		log "setup of $c failed"; teardown "$c" 2>/dev/null
		res_failed "$case" "$c" "$round"; return
	fi
	if [ "$case" = rnd ] && stateful "$c"; then
		run_tg "$TMP/sweep.log" 20 "$TMP/sweep.cfg" "$NSRC" 1 || log "warm-up sweep for $c: trafgen failed"
	fi
	if [ "$case" = lrnd ] && stateful "$c"; then
		run_gen "$TMP/sweep.log" 20 "$NSRC" 1 --sweep "$RND_FIRST" "$NSRC" ||
			log "warm-up sweep for $c: xdp_gen failed: $(cat "$TMP/sweep.log.0")"
	fi
	case $c in
	xrl*)
		# xrl stats walk the bucket map: read them outside the timed window
		xrlc --json stats >"$TMP/stats0.json" 2>/dev/null || echo '{"passed":0}' >"$TMP/stats0.json" ;;
	esac
	# quiet window before the flood: background CPU load, for the notes
	cpu_snap >"$TMP/q0"; sleep 0.3; cpu_snap >"$TMP/q1"
	bg=$(cpu_delta "$TMP/q0" "$TMP/q1" | awk -v n="$NCPU" '{ printf "%.0f", $1 * 100 / (0.3 * n) }')
	s0=$(snmp_snap); rx0=$(rx_r); td0=$(txdrop_s); k0=$(ksoft_ticks)
	cpu_snap >"$TMP/c0"
	if [ "$LIVE" = 1 ]; then
		run_gen "$TMP/flood.log" "$SECS" "$count" "$cpus" "${src[@]}" || rc=xdp_gen-failed
	else
		run_tg "$TMP/flood.log" "$SECS" "$cfg" "$count" "$cpus" || rc=trafgen-failed
	fi
	cpu_snap >"$TMP/c1"
	k1=$(ksoft_ticks)
	ksoft=$(xrlt_calc "($k1 - $k0) / $CLK_TCK")
	sleep 0.2
	s1=$(snmp_snap); rx1=$(rx_r); td1=$(txdrop_s)
	rx=$((rx1 - rx0))
	if [ "$LIVE" = 1 ]; then
		read -r sent secs run_ns percpu < <(gen_fig "$TMP/flood.log" "$cpus")
	else
		sent=$(xrlt_trafgen_sent "$TMP/flood.log"); secs=$(tg_secs "$TMP/flood.log"); percpu=$(tg_percpu "$TMP/flood.log")
	fi
	read -r busy cpu0 cpu1 steal < <(cpu_delta "$TMP/c0" "$TMP/c1")
	read -r la ic orq _ <<<"$s0"
	read -r l1 i1 o1 _ <<<"$s1"
	thru=$((l1 - la))
	read -r own info < <(own_counts "$c" "$rx")
	case $c in
	xrl*)
		# xrl counters are cumulative since attach: subtract what the sweep left
		local p0
		p0=$(jq -r '.passed' "$TMP/stats0.json" 2>/dev/null || echo 0)
		own=$((own - p0)) ;;
	esac
	teardown "$c"
	if [ "$rc" != ok ] || [ -z "$sent" ] || [ -z "$secs" ] || { [ "$LIVE" = 1 ] && [ "$rx" -le 0 ]; }; then
		if [ "$LIVE" = 1 ]; then
			log "run $case/$c/$round: xdp_gen failed or nothing delivered (rx $rx): $(cat "$TMP/flood.log".* | tail -c 300)"
		else
			log "run $case/$c/$round: trafgen failed: $(tr '\r' ' ' <"$TMP/flood.log" | tail -c 300)"
		fi
		res_failed "$case" "$c" "$round"; return
	fi
	if [ "$LIVE" = 1 ]; then
		# per frame delivered to the receiving veth (its rx_packets)
		pps=$(xrlt_calc "$rx / $secs")
		ns=$(xrlt_calc "$busy * 1e9 / $rx")
	else
		pps=$(xrlt_calc "$sent / $secs")
		ns=$(xrlt_calc "$busy * 1e9 / $sent")
	fi
	# columns: $RES_COLS
	printf '%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\n' \
		"$case" "$c" "$round" "$sent" "$secs" "$pps" "$busy" "$cpu0" "$cpu1" "$steal" "$ns" \
		"$rx" "$thru" "$own" "$bg" $((i1 - ic)) $((o1 - orq)) $((td1 - td0)) "${percpu% }" "$info" "$run_ns" "$ksoft" >>"$RES"
	log "$(printf '%-4s %-6s run %s: %8.0f pps %7.1f ns/pkt (cpu0 %.2f s, cpu1 %.2f s; test-run timer %s ns/frame) let through %s (own counter %s), bg %s%%' \
		"$case" "$c" "$round" "$pps" "$ns" "$cpu0" "$cpu1" "$run_ns" "$thru" "$own" "$bg")"
	[ "$rx" -eq "$sent" ] || log "  note: receiver counted $rx frames of $sent sent ($((td1 - td0)) tx drops)"
}

# ------------------------------------------------------------------ tables full
# A new abusive source arrives while the table is full of random sources:
# 15 random frames + 1 from ONE_SRC (never seen before) round robin. What
# each contender lets through per class is counted behind every filter by an
# nft chain in the ip prerouting hook (priority -150: after XDP, netdev
# ingress and iptables' raw table).
FULL=$TMP/full.tsv        # a header line, then one line per contender
printf 'contender\tsent\tsecs\tab_let\trnd_let\tinfo\n' >"$FULL"
run_full() { # CONTENDER
	local c=$1 sent secs ab_let rnd_let info extra=
	setup "$c" || { log "setup of $c failed"; teardown "$c"; return; }
	run_tg "$TMP/sweep.log" 20 "$TMP/sweep.cfg" "$NSRC" 1 || log "warm-up sweep for $c: trafgen failed"
	R nft -f - <<EOF || { log "cannot add the counting table"; teardown "$c"; return; }
table ip xrlbcnt {
	chain pre {
		type filter hook prerouting priority -150;
		ip saddr $ONE_SRC counter
		ip saddr 10.0.0.0/12 counter
	}
}
EOF
	sleep 0.3
	run_tg "$TMP/full.log" "$SECS" "$TMP/mixed.cfg" $((SECS * 3000000)) 1 || log "mixed flood for $c: trafgen failed"
	sleep 0.2
	sent=$(xrlt_trafgen_sent "$TMP/full.log"); secs=$(tg_secs "$TMP/full.log")
	read -r ab_let rnd_let < <(R nft -j list chain ip xrlbcnt pre | jq -r '[.. | objects | select(has("counter")) | .counter.packets] | "\(.[0]) \(.[1])"')
	case $c in
	xrl*) read -r _ info < <(own_counts "$c" 0) ;;
	nft) info="set_elements=$(R nft -j list set netdev xrlb m | jq '[.nftables[].set.elem? // empty | length] | add // 0')/65535" ;;
	ipt) info="entries=$(R sh -c 'wc -l </proc/net/ipt_hashlimit/xrlb')/65536" ;;
	esac
	R nft delete table ip xrlbcnt
	teardown "$c"
	[ -n "$sent" ] && [ -n "$secs" ] || { log "tables-full $c: no trafgen figures"; return; }
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$sent" "$secs" "$ab_let" "$rnd_let" "$info$extra" >>"$FULL"
	log "tables full, $c: sent $sent in $secs s; new abusive source let through $ab_let of $((sent / 16)); random sources $rnd_let of $((sent - sent / 16)); $info"
}

# ------------------------------------------------------------------ machine
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
hyper=$(lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor:[[:space:]]*//p')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')
git -C "$REPO" diff --quiet HEAD -- bpf user 2>/dev/null || COMMIT="$COMMIT (bpf/ or user/ modified)"
MACHINE=$(cat <<EOF
kernel:      $(uname -srm)
cpu:         ${cpu_model:-$(uname -m)}${hyper:+ (virtual machine, $hyper)}
cores:       $(nproc) online of $(nproc --all); HZ $(zcat /proc/config.gz 2>/dev/null | sed -n 's/^CONFIG_HZ=//p' || echo '?'), USER_HZ $CLK_TCK
load:        $LOAD0 (1, 5, 15 min) at start
tools:       $(trafgen -v 2>/dev/null | head -n 1 | cut -d, -f1); $(nft --version); $IPT_VER
xrl:         commit $COMMIT
command:     bench/bench_path.sh${ARGS:+ $ARGS}
EOF
)
printf '%s\n\n' "$MACHINE" >&2

# ------------------------------------------------------------------ containment watch
# the host's own way out: nothing from our ranges may ever appear there
OUT_IF=$(ip route show default 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
if [ -n "$OUT_IF" ]; then
	(
		cd "$TMP" || exit 1
		exec timeout -s INT -k 3 3600 netsniff-ng --in "$OUT_IF" --out "$TMP/out.pcap" --silent --no-promisc \
			--no-hwtimestamp --no-sock-mem --notouch-irq -S 2MiB "net 10.0.0.0/12 or net 198.18.0.0/15"
	) >"$TMP/out.log" 2>&1 &
	CAP_PID=$!
	xrlt_track "$CAP_PID"
	for _ in $(seq 60); do grep -q Running "$TMP/out.log" 2>/dev/null && break; sleep 0.1; done
	grep -q Running "$TMP/out.log" || log "WARNING: capture on $OUT_IF did not start: $(cat "$TMP/out.log")"
	OUT_TX0=$(cat /sys/class/net/"$OUT_IF"/statistics/tx_packets)
fi
SNMP0=$(snmp_snap)
RXS0=$(rx_s)

# ------------------------------------------------------------------ measure
CASES=
for cs in one rnd two lone lrnd ltwo; do
	case ",$CASES_OPT," in *",$cs,"*) ;; *) continue ;; esac
	case $cs in two|ltwo) [ "$TWO_CPU" = 0 ] && continue ;; esac
	CASES="$CASES $cs"
done
CASES=${CASES# }
BASE="none floor xrl nft ipt"
LBASE="none floor pass xrl xrlns nft ipt"
contenders_of() {
	case $1 in
	rnd) echo "none floor pass xrl nft ipt$([ "$BIG" = 1 ] && echo " nft1m ipt1m")" ;;
	lrnd) echo "$LBASE$([ "$BIG" = 1 ] && echo " nft1m ipt1m")" ;;
	l*) echo "$LBASE" ;;
	*) echo "$BASE" ;;
	esac
}
# does xrl take --new-sources $NEW_SOURCES? A trial rule on a fresh attach
# (bad input changes nothing); when it refuses, the xrlns rows are skipped
NEWSRC_OK=0
NEWSRC_WHY="not measured"
case " $CASES " in *" l"*)
	if xrlc attach "$IF_R" --mode native >/dev/null 2>"$TMP/probe.err"; then
		if xrlc rule add 0.0.0.0/0 --rate "$RATE/s" --burst "$BURST" --per 32 --new-sources "$NEW_SOURCES" >/dev/null 2>"$TMP/probe.err"; then
			NEWSRC_OK=1
		else
			NEWSRC_WHY="not measured: xrl refuses 'rule add ... --new-sources $NEW_SOURCES' ($(head -n 1 "$TMP/probe.err" | tr '\t' ' '))"
		fi
		xrlc detach "$IF_R" >/dev/null
	else
		NEWSRC_WHY="not measured: xrl attach failed for the --new-sources trial ($(head -n 1 "$TMP/probe.err" | tr '\t' ' '))"
	fi
	[ "$NEWSRC_OK" = 1 ] && log "xrl takes --new-sources: the xrlns rows run" || log "xrl --new-sources: $NEWSRC_WHY"
	;;
esac
log "rate $RATE/s burst $BURST per source for every contender; $RUNS runs x ${SECS}s per cell, round robin"
for round in $(seq "$RUNS"); do
	for case in $CASES; do
		# the order rotates by one each round, so that no contender always
		# follows the same predecessor
		read -r -a list <<<"$(contenders_of "$case")"
		for ((j = 0; j < ${#list[@]}; j++)); do
			run_cell "$case" "${list[$(((j + round - 1) % ${#list[@]}))]}" "$round"
		done
	done
done
if [ "$TABLES_FULL" = 1 ]; then
	for c in xrl xrl64k nft ipt; do run_full "$c"; done
fi

# ------------------------------------------------------------------ containment result
SNMP1=$(snmp_snap)
RXS1=$(rx_s)
if [ -n "$CAP_PID" ]; then
	kill -INT "$CAP_PID" 2>/dev/null   # netsniff-ng writes out its pcap
	for _ in $(seq 50); do kill -0 "$CAP_PID" 2>/dev/null || break; sleep 0.1; done
	xrlt_stop_pid "$CAP_PID"
	OUT_TX1=$(cat /sys/class/net/"$OUT_IF"/statistics/tx_packets)
	cap_bytes=$(stat -c %s "$TMP/out.pcap" 2>/dev/null || echo 0)
	# pcap file = 24-byte header + 16-byte header and data per packet
	if [ "$cap_bytes" -le 24 ] && grep -q Running "$TMP/out.log"; then
		cap_msg="capture on $OUT_IF (filter: net 10.0.0.0/12 or net 198.18.0.0/15) for the whole run: 0 packets; $OUT_IF sent $((OUT_TX1 - OUT_TX0)) packets of other traffic meanwhile"
	else
		cap_msg="capture on $OUT_IF: $cap_bytes bytes of pcap (see $TMP/out.pcap): CHECK FAILED"
		XRLT_KEEP_TMP=1
	fi
else
	cap_msg="no default route: no outside interface to watch"
fi
read -r sn_la sn_ic sn_or _ <<<"$SNMP0"
read -r sn_la1 sn_ic1 sn_or1 _ <<<"$SNMP1"
CONTAIN=$(cat <<EOF
receiver namespace: ICMP messages sent $((sn_ic1 - sn_ic)), IP packets sent $((sn_or1 - sn_or)), packets that reached IP routing (and ended in ip_error) $((sn_la1 - sn_la))
sender namespace: frames received back on $IF_S $((RXS1 - RXS0))
$cap_msg
EOF
)

# ------------------------------------------------------------------ report
TOTAL_SECS=$(($(date +%s) - T_START))
# medians per cell; above floor = median over rounds of (run - floor run of the same round and case)
SUMMARY=$TMP/summary.tsv
awk -F'\t' -v rate="$RATE" -v burst="$BURST" '
function median(arr, n,    i, j, t) {
	for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j + 1] = arr[j]; arr[j + 1] = t }
	return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
}
function v(name) { if (!(name in col)) { print "bench_path: runs table has no column " name > "/dev/stderr"; exit 1 } return $col[name] }
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
v("sent") == "FAILED" { failed[v("case") SUBSEP v("contender")]++; next }
v("sent") == "SKIPPED" { skipped[v("case") SUBSEP v("contender")]++; next }
{
	cs = v("case"); c = v("contender"); k = cs SUBSEP c; x = v("ns"); y = v("run_ns")
	if (!(k in seen)) { seen[k] = 1; order[++no] = k }
	n[k]++; i = n[k]
	ns[k, i] = x; pps[k, i] = v("pps"); let[k, i] = v("let"); own[k, i] = v("own"); secs[k, i] = v("secs"); sent[k, i] = v("sent")
	bg[k, i] = v("bg"); info[k] = v("info"); pc[k] = v("percpu")
	byround[cs, c, v("round")] = x
	if (min[k] == "" || x + 0 < min[k] + 0) min[k] = x
	if (max[k] == "" || x + 0 > max[k] + 0) max[k] = x
	rx[k, i] = v("rx"); ks[k, i] = v("ksoft")
	# the generator'"'"'s test-run timer (no-skb cases only; "-" for trafgen)
	if (y != "-") {
		run[k, i] = y; rbyround[cs, c, v("round")] = y
		if (rmin[k] == "" || y + 0 < rmin[k] + 0) rmin[k] = y
		if (rmax[k] == "" || y + 0 > rmax[k] + 0) rmax[k] = y
	}
}
END {
	print "case\tcontender\tn\tpps\tns\tmin\tmax\tabove\tlet\town\tsent\tsecs\tinfo\tpercpu\tbg\tfailed\tamin\tamax" \
		"\trx\trun_ns\trun_min\trun_max\trun_above\trun_amin\trun_amax\tskipped\tksoft"
	for (o = 1; o <= no; o++) {
		k = order[o]; split(k, kk, SUBSEP); cs = kk[1]; c = kk[2]; m = n[k]
		delete a; for (i = 1; i <= m; i++) a[i] = ns[k, i]; mns = median(a, m)
		delete a; for (i = 1; i <= m; i++) a[i] = pps[k, i]; mpps = median(a, m)
		delete a; for (i = 1; i <= m; i++) a[i] = let[k, i]; mlet = median(a, m)
		delete a; for (i = 1; i <= m; i++) a[i] = own[k, i]; mown = median(a, m)
		delete a; for (i = 1; i <= m; i++) a[i] = sent[k, i]; msent = median(a, m)
		delete a; for (i = 1; i <= m; i++) a[i] = secs[k, i]; msecs = median(a, m)
		delete a; for (i = 1; i <= m; i++) a[i] = bg[k, i]; mbg = median(a, m)
		delete a; j = 0
		for (r = 1; r <= 99; r++)
			if (((cs, c, r) in byround) && ((cs, "floor", r) in byround)) a[++j] = byround[cs, c, r] - byround[cs, "floor", r]
		amin = "nan"; amax = "nan"
		for (i = 1; i <= j; i++) {
			if (amin == "nan" || a[i] < amin) amin = a[i]
			if (amax == "nan" || a[i] > amax) amax = a[i]
		}
		above = j ? median(a, j) : "nan"
		delete a; for (i = 1; i <= m; i++) a[i] = rx[k, i]; mrx = median(a, m)
		delete a; for (i = 1; i <= m; i++) a[i] = ks[k, i]; mks = median(a, m)
		mrun = "-"; rabove = "nan"; ramin = "nan"; ramax = "nan"
		if (rmin[k] != "") {
			delete a; for (i = 1; i <= m; i++) a[i] = run[k, i]; mrun = sprintf("%.1f", median(a, m))
			delete a; j = 0
			for (r = 1; r <= 99; r++)
				if (((cs, c, r) in rbyround) && ((cs, "floor", r) in rbyround)) a[++j] = rbyround[cs, c, r] - rbyround[cs, "floor", r]
			for (i = 1; i <= j; i++) {
				if (ramin == "nan" || a[i] < ramin) ramin = a[i]
				if (ramax == "nan" || a[i] > ramax) ramax = a[i]
			}
			if (j) rabove = median(a, j)
		} else { rmin[k] = "-"; rmax[k] = "-" }
		printf "%s\t%s\t%d\t%.0f\t%.1f\t%.1f\t%.1f\t%s\t%.0f\t%.0f\t%.0f\t%.4f\t%s\t%s\t%.0f\t%d\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.2f\n", \
			cs, c, m, mpps, mns, min[k], max[k], above, mlet, mown, msent, msecs, info[k], pc[k], mbg, failed[k] + 0, amin, amax, \
			mrx, mrun, rmin[k], rmax[k], rabove, ramin, ramax, skipped[k] + 0, mks
	}
	for (k in failed) if (!(k in seen)) { split(k, kk, SUBSEP); printf "%s\t%s\t0\t0\t0\t0\t0\tnan\t0\t0\t0\t0\t-\t-\t0\t%d\tnan\tnan\t0\t-\t-\t-\tnan\tnan\tnan\t%d\t0\n", kk[1], kk[2], failed[k], skipped[k] + 0 }
	for (k in skipped) if (!(k in seen) && !(k in failed)) { split(k, kk, SUBSEP); printf "%s\t%s\t0\t0\t0\t0\t0\tnan\t0\t0\t0\t0\t-\t-\t0\t0\tnan\tnan\t0\t-\t-\t-\tnan\tnan\tnan\t%d\t0\n", kk[1], kk[2], skipped[k] }
}' "$RES" >"$SUMMARY"

get() { # CASE CONTENDER COLUMN (a name from the summary's header line)
	awk -F'\t' -v a="$1" -v b="$2" -v f="$3" '
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i
		if (!(f in col)) { print "bench_path: summary has no column " f > "/dev/stderr"; exit 1 }
		next }
	$col["case"] == a && $col["contender"] == b { print $col[f]; exit }' "$SUMMARY"
}
case_name() {
	case $1 in
	one) echo "1 source, 1 CPU" ;;
	rnd) echo "1M random sources, 1 CPU" ;;
	two) echo "1 source, 2 CPUs" ;;
	lone) echo "1 source, 1 CPU, no skb" ;;
	lrnd) echo "1M random, 1 CPU, no skb" ;;
	ltwo) echo "1 source, 2 CPUs, no skb" ;;
	esac
}
# let-through note per row
row_note() { # CASE CONTENDER
	local cs=$1 c=$2 thru own secs exp info sent
	thru=$(get "$cs" "$c" let); own=$(get "$cs" "$c" own); secs=$(get "$cs" "$c" secs); info=$(get "$cs" "$c" info); sent=$(get "$cs" "$c" sent)
	case $cs in
	one|two|lone|ltwo)
		exp=$(xrlt_calc "$BURST + $RATE * $secs")
		case $c in
		none|floor|pass) printf 'exact limiter: %.0f' "$exp" ;;
		*) printf '%+.1f %% vs %.0f' "$(xrlt_calc "($thru - $exp) * 100 / $exp")" "$exp" ;;
		esac ;;
	rnd|lrnd)
		case $c in
		none|floor|pass) printf '%s sent' "$sent" ;;
		*) printf '%.1f %% of %s sent' "$(xrlt_calc "$thru * 100 / $sent")" "$sent" ;;
		esac ;;
	esac
	case $cs in
	l*)
		local rx
		rx=$(get "$cs" "$c" rx)
		[ "$rx" != "$sent" ] && printf '; %s delivered' "$rx"
		printf '; ksoftirqd %.0f ms' "$(xrlt_calc "$(get "$cs" "$c" ksoft) * 1000")"
		[ "$c" = xrlns ] && printf '; passes %.0f/s (budget %s)' "$(xrlt_calc "$thru / $secs")" "$NEW_SOURCES" ;;
	esac
	case $c in
	xrl*) printf '; %s' "$(echo "$info" | tr ',' ' ')" ;;
	ipt*)
		local hd=$((own - thru))
		case $cs in *rnd) [ "$hd" -gt 0 ] && printf '; %s dropped unseen by the rule counter (hotdrop: table full)' "$hd" ;; esac
		printf '; hashlimit entries %s' "${info##*entries=}" ;;
	nft*) [ "$thru" != "$own" ] && printf '; own counter %s' "$own" ;;
	esac
	case $cs in *two) printf '; per CPU sent: %s' "$(get "$cs" "$c" percpu)" ;; esac
	return 0
}

TABLE=$TMP/table.txt
{
	printf '%-24s %-26s %9s %10s %17s %11s %10s  %s\n' contender case pps "CPU ns/pkt" "min..max" "above floor" "let thru" "notes"
	for cs in $CASES; do
		case $cs in l*) continue ;; esac
		for c in $(contenders_of "$cs"); do
			m=$(get "$cs" "$c" n)
			if [ -z "$m" ] || [ "$m" = 0 ]; then
				printf '%-24s %-26s %s\n' "$(describe "$c")" "$(case_name "$cs")" "FAILED (no run completed)"; continue
			fi
			above=$(get "$cs" "$c" above)
			[ "$c" = floor ] && above=0
			printf '%-24s %-26s %9s %10s %17s %11s %10s  %s\n' "$(describe "$c")" "$(case_name "$cs")" \
				"$(get "$cs" "$c" pps)" "$(get "$cs" "$c" ns)" "$(get "$cs" "$c" min)..$(get "$cs" "$c" max)" \
				"$(printf '%+.1f' "$above")" "$(get "$cs" "$c" let)" "$(row_note "$cs" "$c")"
		done
		echo
	done
} >"$TABLE"
# the no-skb cases: the generator's test-run timer first (see the method)
LTABLE=$TMP/ltable.txt
: >"$LTABLE"
case " $CASES " in *" l"*)
	{
		printf '%-26s %-26s %9s %10s %15s %11s %10s %10s %10s  %s\n' contender case pps "run ns/pkt" "min..max" "above floor" \
			"CPU ns/pkt" "CPU above" "let thru" "notes"
		for cs in $CASES; do
			case $cs in l*) ;; *) continue ;; esac
			for c in $(contenders_of "$cs"); do
				m=$(get "$cs" "$c" n)
				if [ "$(get "$cs" "$c" skipped)" != 0 ] && [ "${m:-0}" = 0 ]; then
					printf '%-26s %-26s %s\n' "$(describe "$c")" "$(case_name "$cs")" "SKIPPED: $NEWSRC_WHY"; continue
				fi
				if [ -z "$m" ] || [ "$m" = 0 ]; then
					printf '%-26s %-26s %s\n' "$(describe "$c")" "$(case_name "$cs")" "FAILED (no run completed)"; continue
				fi
				above=$(get "$cs" "$c" run_above); cabove=$(get "$cs" "$c" above)
				[ "$c" = floor ] && above=0 && cabove=0
				printf '%-26s %-26s %9s %10s %15s %11s %10s %10s %10s  %s\n' "$(describe "$c")" "$(case_name "$cs")" \
					"$(get "$cs" "$c" pps)" "$(get "$cs" "$c" run_ns)" "$(get "$cs" "$c" run_min)..$(get "$cs" "$c" run_max)" \
					"$(printf '%+.1f' "$above")" "$(get "$cs" "$c" ns)" "$(printf '%+.1f' "$cabove")" \
					"$(get "$cs" "$c" let)" "$(row_note "$cs" "$c")"
			done
			echo
		done
	} >"$LTABLE" ;;
esac

# ---- targets
a_one() { get one "$1" above; }
ab() { get "$1" "$2" above; }
# fastest run of each cell minus the fastest floor: fastest CASE C1 NAME1 C2 NAME2 ...
fastest() {
	local cs=$1 f out=''
	f=$(get "$cs" floor min)
	shift
	while [ $# -ge 2 ]; do
		out="$out${out:+, }$2 $(printf '%.1f' "$(xrlt_calc "$(get "$cs" "$1" min) - $f")")"
		shift 2
	done
	echo "$out"
}
# "median (per-round min..max)" of the cost above the floor
abr() { printf '%.1f (%.1f..%.1f)' "$(get "$1" "$2" above)" "$(get "$1" "$2" amin)" "$(get "$1" "$2" amax)"; }
T1='' T2='' T2c='' T3='' T4=''
if [ -n "$(a_one xrl)" ] && [ -n "$(a_one nft)" ] && [ -n "$(a_one ipt)" ]; then
	best=$(awk -v a="$(a_one nft)" -v b="$(a_one ipt)" 'BEGIN { print (a < b ? a : b) }')
	bestn=$(awk -v a="$(a_one nft)" -v b="$(a_one ipt)" 'BEGIN { print (a < b ? "nftables" : "iptables") }')
	x=$(a_one xrl)
	verdict=$(awk -v x="$x" -v b="$best" 'BEGIN { print (x <= b / 4 ? "MET" : "NOT MET") }')
	T1=$(printf 'one source, above the floor: xrl %.1f ns <= 1/4 of the better peer (%s %.1f ns -> %.1f ns): %.2f x the better peer  %s' \
		"$x" "$bestn" "$best" "$(xrlt_calc "$best / 4")" "$(xrlt_calc "$x / $best")" "$verdict")
	T1="$T1"$'\n'"  (ns above the floor, median and per-round range: xrl $(abr one xrl), nftables $(abr one nft), iptables $(abr one ipt))"
	T1="$T1"$'\n'"  (fastest run of each cell minus the fastest floor: $(fastest one xrl xrl nft nftables ipt iptables))"
fi
if [ -n "$(ab rnd xrl)" ] && [ -n "$(ab rnd nft)" ] && [ -n "$(ab rnd ipt)" ]; then
	best=$(awk -v a="$(ab rnd nft)" -v b="$(ab rnd ipt)" 'BEGIN { print (a < b ? a : b) }')
	bestn=$(awk -v a="$(ab rnd nft)" -v b="$(ab rnd ipt)" 'BEGIN { print (a < b ? "nftables" : "iptables") }')
	x=$(ab rnd xrl)
	verdict=$(awk -v x="$x" -v b="$best" 'BEGIN { print (x <= b / 2 ? "MET" : "NOT MET") }')
	T2=$(printf '1M random sources, above the floor: xrl %.1f ns <= 1/2 of the better peer (%s %.1f ns -> %.1f ns): %.2f x the better peer  %s' \
		"$x" "$bestn" "$best" "$(xrlt_calc "$best / 2")" "$(xrlt_calc "$x / $best")" "$verdict")
	T2="$T2"$'\n'"  (ns above the floor, median and per-round range: xrl $(abr rnd xrl), nftables $(abr rnd nft), iptables $(abr rnd ipt))"
	T2="$T2"$'\n'"  (fastest run of each cell minus the fastest floor: $(fastest rnd xrl xrl nft nftables ipt iptables))"
	tx=$(get rnd xrl ns); tn=$(get rnd nft ns); ti=$(get rnd ipt ns)
	# like for like: what each limiter adds to delivering the packets it passes
	if [ -n "$(ab rnd pass)" ] && [ -n "$(ab rnd none)" ]; then
		T2c=$(printf '  (own cost beyond delivering what it passes: xrl - bare XDP_PASS = %.1f ns; nftables - no filter = %.1f ns; xrl/nftables = %.2f x)' \
			"$(xrlt_calc "$(ab rnd xrl) - $(ab rnd pass)")" "$(xrlt_calc "$(ab rnd nft) - $(ab rnd none)")" \
			"$(xrlt_calc "($(ab rnd xrl) - $(ab rnd pass)) / ($(ab rnd nft) - $(ab rnd none))")")
	fi
	tb=$(awk -v a="$tn" -v b="$ti" 'BEGIN { print (a < b ? a : b) }')
	T2b=$(printf '  (whole CPU cost per packet, trafgen included: xrl %.1f ns vs the better peer %.1f ns = %.2f x)' "$tx" "$tb" "$(xrlt_calc "$tx / $tb")")
	T2="$T2"$'\n'"$T2b"${T2c:+$'\n'"$T2c"}
	if [ -n "$(ab rnd nft1m)" ] && [ -n "$(ab rnd ipt1m)" ]; then
		T2="$T2"$'\n'"$(printf '  (peers with tables as large as xrl'"'"'s, above the floor: nftables set 1M %.1f ns, hashlimit 1M %.1f ns; xrl %.1f ns = %.2f x the better of them)' \
			"$(ab rnd nft1m)" "$(ab rnd ipt1m)" "$(ab rnd xrl)" \
			"$(xrlt_calc "$(ab rnd xrl) / ($(ab rnd nft1m) < $(ab rnd ipt1m) ? $(ab rnd nft1m) : $(ab rnd ipt1m))")")"
	fi
fi
# ---- targets of the no-skb cases, on the generator's test-run timer
rab() { get "$1" "$2" run_above; }
rabr() { printf '%.1f (%.1f..%.1f)' "$(get "$1" "$2" run_above)" "$(get "$1" "$2" run_amin)" "$(get "$1" "$2" run_amax)"; }
# better of nftables and iptables on a column: better CASE COLUMN -> "value name"
better() {
	awk -v a="$(get "$1" nft "$2")" -v b="$(get "$1" ipt "$2")" 'BEGIN { if (a < b) print a, "nftables"; else print b, "iptables" }'
}
num_ok() { [[ ${1:-} =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }
TL1='' TL2=''
if num_ok "$(rab lone xrl)" && num_ok "$(rab lone nft)" && num_ok "$(rab lone ipt)"; then
	read -r best bestn < <(better lone run_above)
	x=$(rab lone xrl)
	verdict=$(awk -v x="$x" -v b="$best" 'BEGIN { print (x <= b / 10 ? "MET" : "NOT MET") }')
	TL1=$(printf 'no-skb path, one source, above the floor: xrl %.1f ns <= 1/10 of the better peer (%s %.1f ns -> %.1f ns): %.2f x the better peer  %s' \
		"$x" "$bestn" "$best" "$(xrlt_calc "$best / 10")" "$(xrlt_calc "$x / $best")" "$verdict")
	TL1="$TL1"$'\n'"  (test-run timer, ns above the floor, median and per-round range: xrl $(rabr lone xrl), nftables $(rabr lone nft), iptables $(rabr lone ipt); floor $(get lone floor run_ns) ns)"
	TL1="$TL1"$'\n'"  (all-CPU busy time instead, as for trafgen: xrl $(ab lone xrl), nftables $(ab lone nft), iptables $(ab lone ipt) ns above a floor of $(get lone floor ns) ns)"
	if num_ok "$(rab ltwo xrl)" && num_ok "$(rab ltwo nft)" && num_ok "$(rab ltwo ipt)"; then
		read -r best2 bestn2 < <(better ltwo run_above)
		TL1="$TL1"$'\n'"$(printf '  (2 CPUs: xrl %.1f ns above the floor, %s %.1f ns: %.2f x the better peer)' "$(rab ltwo xrl)" "$bestn2" "$best2" "$(xrlt_calc "$(rab ltwo xrl) / $best2")")"
	fi
fi
if num_ok "$(rab lrnd nft)" && num_ok "$(rab lrnd ipt)"; then
	read -r best bestn < <(better lrnd run_above)
	if num_ok "$(rab lrnd xrlns)"; then
		x=$(rab lrnd xrlns)
		verdict=$(awk -v x="$x" -v b="$best" 'BEGIN { print (x <= b / 2 ? "MET" : "NOT MET") }')
		TL2=$(printf 'no-skb path, 1M random sources, xrl --new-sources %s above the floor: %.1f ns <= 1/2 of the better peer (%s %.1f ns -> %.1f ns): %.2f x the better peer  %s' \
			"$NEW_SOURCES" "$x" "$bestn" "$best" "$(xrlt_calc "$best / 2")" "$(xrlt_calc "$x / $best")" "$verdict")
		# what passes, against the bound of --new-sources: at most (budget x t + new
		# burst) sources get a bucket during the run (the new burst defaults
		# to one second of the budget), and each passes at most the
		# per-source burst; the sweep before the run went through the same
		# budget, so its sources are counted in "sources" too
		bud=${NEW_SOURCES%%/s}
		thru=$(get lrnd xrlns let); secs=$(get lrnd xrlns secs)
		if [[ $bud =~ ^[0-9]+$ ]]; then
			bound=$(xrlt_calc "($bud * $secs + $bud) * $BURST")
			verdict=$(awk -v t="$thru" -v b="$bound" 'BEGIN { print (t <= b ? "MET" : "NOT MET") }')
			TL2="$TL2"$'\n'"$(printf 'no-skb path, 1M random sources, what xrl --new-sources passes stays within (budget x t + new burst) x per-source burst: %s in %.2f s <= (%s x %.2f + %s) x %s = %.0f  %s' \
				"$thru" "$secs" "$bud" "$secs" "$bud" "$BURST" "$bound" "$verdict")"
		fi
		TL2="$TL2"$'\n'"  (test-run timer, ns above the floor, median and per-round range: xrl --new-sources $(rabr lrnd xrlns), nftables $(rabr lrnd nft), iptables $(rabr lrnd ipt))"
	else
		TL2="no-skb path, 1M random sources, xrl --new-sources above the floor <= 1/2 of the better peer ($bestn $(printf '%.1f' "$best") ns): NOT MET ($NEWSRC_WHY)"
	fi
	if num_ok "$(rab lrnd xrl)"; then
		TL2="$TL2"$'\n'"$(printf '  (xrl without --new-sources: %.1f ns above the floor = %.2f x the better peer; bare XDP_PASS %s, no filter %s ns above the floor)' \
			"$(rab lrnd xrl)" "$(xrlt_calc "$(rab lrnd xrl) / $best")" "$(rab lrnd pass)" "$(rab lrnd none)")"
		TL2="$TL2"$'\n'"  (all-CPU busy time instead, as for trafgen: xrl $(ab lrnd xrl), nftables $(ab lrnd nft), iptables $(ab lrnd ipt) ns above a floor of $(get lrnd floor ns) ns)"
	fi
fi

if [ "$(wc -l <"$FULL")" -gt 1 ]; then
	# columns by name from the header line
	FULL_COLS='function v(name) { if (!(name in col)) { print "bench_path: tables-full table has no column " name > "/dev/stderr"; exit 1 } return $col[name] }
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }'
	T3=$(awk -F'\t' -v rate="$RATE" -v burst="$BURST" "$FULL_COLS"'
	function name(c) { return c == "xrl" ? "xrl (1,048,576 sources)" : c == "xrl64k" ? "xrl --max-sources 65536" : c == "nft" ? "nftables (set 65535)" : "iptables hashlimit (65536)" }
	{
		sent = v("sent"); al = v("ab_let")
		ab = int(sent / 16); lim = burst + rate * v("secs"); e = (al - lim) * 100 / lim
		vd = (al <= lim * 1.05 && al >= lim * 0.95) ? "limited" : (al > lim * 1.05 ? "NOT LIMITED (fails open)" : (al < lim * 0.05 ? "dropped entirely (fails closed)" : "under-admitted"))
		printf "  %-27s new abusive source: %7d of %7d let through (limit: %.0f, %+.1f %%) -> %s; random sources: %.1f %% let through; %s\n", \
			name(v("contender")), al, ab, lim, e, vd, v("rnd_let") * 100 / (sent - ab), v("info")
	}' "$FULL")
	xl=$(awk -F'\t' -v rate="$RATE" -v burst="$BURST" "$FULL_COLS"'
	v("contender") == "xrl" || v("contender") == "xrl64k" { lim = burst + rate * v("secs"); al = v("ab_let"); if (!(al <= lim * 1.05 && al >= lim * 0.95)) bad = 1; n++ }
	END { print (n && !bad) ? "MET" : "NOT MET" }' "$FULL")
	T4="xrl keeps limiting the sources it tracks with its table full (new abusive source held to rate x t + burst, within 5 %; evictions counted): $xl"
fi

METHOD=$(cat <<EOF
* Topology: two network namespaces made for the run, joined by a veth pair
  with 2 TX and 2 RX queues per end. trafgen 0.6.8 sends from one end;
  the contender runs on the other (native XDP for the floor and xrl,
  netdev ingress for nftables, raw PREROUTING for iptables). Frames: 64
  bytes on the wire (60 + FCS), Ethernet/IPv4/UDP, to the receiver's MAC
  and to $DST_IP, which nobody owns; the same frame for every contender.
* One source: $ONE_SRC. Random: saddr=drnd() over the $NSRC addresses
  10.0.0.0-10.15.66.63, a new random address per frame. Before each timed
  random run, a stateful contender sees one sequential sweep over all
  $NSRC addresses, so its table is as full as it gets when timing starts.
* Every contender: rate $RATE/s, burst $BURST per source address.
  xrl: \`xrl attach IF --mode native\` (default --max-sources 1048576),
  \`xrl rule add 0.0.0.0/0 --rate $RATE/s --burst $BURST --per 32\`.
  nftables: table netdev, set \`{ type ipv4_addr; flags dynamic,timeout;
  timeout 10s; }\` (nft's default size: 65535), rule \`$NFT_RULE\`.
  iptables ($IPT_VER): \`iptables -t raw -A PREROUTING $IPT_ARGS -j DROP\`
  (defaults here: htable-size 8192 buckets, htable-max 65536 entries;
  iptables sets htable-expire to 1 s for a rate per second, GC every 1 s).
* CPU ns/packet = CPU time of ALL CPUs during the flood (/proc/stat:
  user+nice+system+irq+softirq, from just before trafgen starts to just
  after it exits) / frames trafgen sent. trafgen is pinned to CPU 0 (CPU 0
  and 1 for "2 CPUs") and keeps its CPUs 100 % busy; the veth receive path
  runs in softirq on the sending CPU, so a costlier receive path shows as
  fewer packets per CPU-second. The floor (bare XDP_DROP) includes trafgen's
  own cost and the veth's copy of each frame for XDP; "above floor" is the
  median over rounds of (contender - floor measured in the same round),
  i.e. the receive-path cost beyond the cheapest possible drop.
* Let through = packets that reached IP routing in the receiving namespace
  behind every filter (its SNMP InAddrErrors + InNoRoutes: forwarding is
  off, so ip_error() discards them), the same counter for every contender;
  the contender's own counters are in the notes. For one source an exact
  limiter lets burst + rate x (trafgen's send time) through; with random
  sources every address sends about 1.5 frames per run, far below its
  burst, so an exact limiter lets everything through.
* Bare XDP_PASS (random case only, bench/bench_path.d/xdp_pass.bpf.c):
  what delivering every frame through the veth's XDP path costs (the frame
  is copied for XDP, then rebuilt as an skb and goes up the stack), the
  reference for xrl when it passes what it sees; "no filter" is that
  reference for nftables.
* Medians of $RUNS runs of ${SECS} s per cell; cells run round robin
  (each contender of each case, then again, the order rotated by one each
  round), each run with a freshly created contender; min..max is over the
  runs. The host is a shared VM: a run now and then comes out 10-30 %
  slower for no reason visible inside the guest (no steal time, no other
  load), so the fastest run of each cell is shown next to the medians.
EOF
)

METHOD_L=$(cat <<EOF
* No-skb cases (lone, lrnd, ltwo): the same namespaces, veth, frames,
  contenders and rates, but the frames come from bench/xdp_gen: a small
  XDP program (bench/xdp_gen.bpf.c) run by bpf_prog_test_run_opts() with
  BPF_F_TEST_XDP_LIVE_FRAMES (batch_size 64, calls of at most 131072
  frames, until ${SECS} s) in the sender namespace, pinned by taskset to CPU 0
  (one process each on CPU 0 and 1 for "2 CPUs"). It returns
  bpf_redirect(sender's veth end), so every frame enters the peer veth as
  an xdp_frame and the contender's XDP program sees it before any skb
  exists, as with a NIC driver's native XDP; without an XDP program the
  frame becomes an skb there (what no filter, nftables and iptables see).
  veth accepts redirected frames only when the receiving end has an XDP
  program or GRO on: no filter, nftables and iptables get GRO on
  (SIOCETHTOOL, by xdp_gen gro), the XDP contenders do not. Random
  sources: the program rewrites the IPv4 source to 10.0.0.0 +
  bpf_get_prandom_u32() % $NSRC and fixes the header checksum
  incrementally (UDP checksum 0); the warm-up is one sweep in order over
  the $NSRC sources by the same program. "xrl --new-sources": the xrl
  rule with \`--new-sources $NEW_SOURCES\` added (skipped, marked "not
  built yet", while xrl refuses that option).
* run ns/packet (the first figure of those rows) = the kernel's test-run
  timer summed over the calls / frames sent: time on the sending CPU
  while the test runs ran, which includes the receiving veth's whole
  path (the NAPI poll runs in the softirq at the end of every batch, on
  the same CPU) and excludes time the generator was scheduled out, so
  other load on the machine does not inflate it. CPU ns/packet = the same
  definition as for trafgen (CPU time of ALL CPUs from /proc/stat during
  the flood) / frames delivered (the receiving veth's rx_packets): it
  counts whatever else the machine ran meanwhile. "above floor" is the
  median over rounds of (contender - floor of the same round and case),
  on each figure.
EOF
)

LIMITS_L=$(cat <<'EOF'
* No-skb cases: the floor is the generator's own cost (test-run loop,
  page-pool frame, redirect, veth ring) plus a bare XDP_DROP, not a NIC's
  receive cost; every frame carries the same bytes (the random source is
  rewritten in place). The test-run timer reads the clock per call, not
  per frame; interrupts that hit the CPU during a call are counted;
  receive work the kernel defers to ksoftirqd runs outside it (the
  notes give ksoftirqd's CPU time during each run, all CPUs, whatever
  it ran: what the timer may have missed, which makes the peers look
  cheaper, not xrl). veth
  keeps GRO on for the non-XDP contenders only; each call of 131072
  frames sets up a page pool outside the timer but inside CPU ns/packet.
EOF
)

LIMITS=$(cat <<'EOF'
* On veth, native XDP does not run before an skb exists: the sender's
  AF_PACKET socket already built it, and veth copies each frame into a
  page for XDP (too little headroom, paged TX-ring skb), then builds a new
  skb for XDP_PASS. The floor therefore pays costs a NIC driver's XDP
  avoids, nftables and iptables drop an skb that exists anyway, and
  XDP_PASS costs more than no program at all. This setup cannot show
  XDP's main saving (no skb at all for a dropped packet).
* trafgen's own sending is most of the ~900 ns floor; the differences
  between limiters on one source are 5-10 % of the total, the size of the
  run-to-run noise of this shared VM (compare min..max and the fastest runs).
* CPU time comes from /proc/stat ticks (USER_HZ 100, tick-based
  accounting): 10 ms granularity over ~3 s per CPU, and trafgen's start
  and exit (~1 %) fall inside the window for every contender alike.
EOF
)

# ---- output
{
	echo "xrl whole-path benchmark (veth between namespaces; trafgen floods, XDP live frames without skbs)"
	echo
	printf '%s\n' "$MACHINE"
	echo
	[ "$(wc -l <"$TABLE")" -gt 1 ] && cat "$TABLE"
	[ -s "$LTABLE" ] && cat "$LTABLE"
	echo "targets:"
	[ -n "$T1" ] && echo "  $T1"
	[ -n "$T2" ] && echo "  $T2"
	[ -n "$TL1" ] && echo "$TL1" | sed 's/^/  /'
	[ -n "$TL2" ] && echo "$TL2" | sed 's/^/  /'
	[ -n "$T4" ] && echo "  $T4"
	if [ -n "$T3" ]; then
		echo
		echo "tables full (one sequential sweep over $NSRC sources, then 15 random frames : 1 from a NEW source $ONE_SRC, ${SECS} s; counted behind every filter):"
		echo "$T3"
	fi
	echo
	echo "containment:"
	echo "$CONTAIN" | sed 's/^/  /'
	echo
	echo "method:"
	echo "$METHOD" | sed 's/^/  /'
	[ -s "$LTABLE" ] && echo "$METHOD_L" | sed 's/^/  /'
	echo
	echo "limits of this measurement:"
	echo "$LIMITS" | sed 's/^/  /'
	[ -s "$LTABLE" ] && echo "$LIMITS_L" | sed 's/^/  /'
	echo
	echo "per run (busy, cpu0, cpu1, steal in s; ns per packet; bg in %):"
	sed 's/^/  /' "$RES"
	echo
	echo "total time $TOTAL_SECS s"
} | tee "$TMP/human.txt"

MD=$(cat <<EOF
## Whole-path cost over veth (trafgen floods; XDP live frames without skbs)

Command: \`bench/bench_path.sh\` (about $(( (TOTAL_SECS + 30) / 60 )) min). What a flood of 64-byte UDP
frames costs the receiving host per packet, from the driver to the drop,
with each contender limiting every source to $RATE/s, burst $BURST.

$METHOD
$( [ -s "$LTABLE" ] && echo "$METHOD_L")

Limits of this measurement:

$LIMITS
$( [ -s "$LTABLE" ] && echo "$LIMITS_L")

### Result ($(date +%Y-%m-%d), load average ${LOAD0%% *} at start)

\`\`\`
$MACHINE

$( [ "$(wc -l <"$TABLE")" -gt 1 ] && cat "$TABLE")
$( [ -s "$LTABLE" ] && cat "$LTABLE")
$( [ -n "$T3" ] && { echo "tables full (one sweep over $NSRC sources, then 15 random frames : 1 from a NEW source, ${SECS} s):"; echo "$T3"; } )

containment:
$(echo "$CONTAIN" | sed 's/^/  /')

total time $TOTAL_SECS s
\`\`\`

### Against the targets

\`\`\`
$( [ -n "$T1" ] && echo "$T1")
$( [ -n "$T2" ] && echo "$T2")
$( [ -n "$TL1" ] && echo "$TL1")
$( [ -n "$TL2" ] && echo "$TL2")
$( [ -n "$T4" ] && echo "$T4")
\`\`\`
EOF
)
if [ -n "$MARKDOWN" ]; then
	printf '%s\n' "$MD" >"$MARKDOWN" && log "markdown section written to $MARKDOWN"
else
	echo
	echo "<!-- bench_path.sh markdown: begin -->"
	printf '%s\n' "$MD"
	echo "<!-- bench_path.sh markdown: end -->"
fi
exit 0
