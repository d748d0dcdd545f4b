#!/bin/sh
# Decision-cost benchmark: build build/xrl_bench, say what machine it runs on,
# and run it. The figures are ns per packet through BPF_PROG_TEST_RUN (see
# bench/xrl_bench.c for the method); about 80 s with the defaults.
#
#   bench/bench_decision.sh [--against COMMIT] [--repeat N] [--runs K]
#                             [--sources S] [--passes P] [--cpu C]
#                             [--max-sources N] [--json]
#
# Options but --against go to build/xrl_bench unchanged. With --json, stdout
# carries only the JSON object and the machine description goes to stderr.
#
# --against COMMIT measures another build beside this one in the same run:
# COMMIT (any name git knows: a hash, a tag; "lru" is e7134ce, the last
# build whose buckets were LRU hashes, the baseline of the set table) is cloned
# into /tmp/xrl-bench-HASH and its build/xrl_bench built there (kept for the
# next run), then run with the same options before and after this build's,
# on the same CPU; a last section sets the two side by side: one source over
# its limit above a bare XDP_DROP (the target: this build's at most 2/3 of
# the commit's), and the many-source ratios; beside the medians, the least of
# the rounds of each build (on a shared VM a median of a few rounds can land
# on either side of the host's other load). Not with --json.
#
# Needs root (BPF programs are loaded). Run it on an otherwise idle machine:
# load on the other CPUs shows up in the figures (compare min..max).
set -e
cd "$(dirname "$0")/.."

out=1
against=
json=
for a in "$@"; do
	[ "$a" = "--json" ] && out=2 && json=1
done
# --against and its value are this script's; the rest is xrl_bench's
n=$#
i=0
while [ $i -lt $n ]; do
	a=$1
	shift
	i=$((i + 1))
	case $a in
	--against)
		[ $i -lt $n ] || { echo "bench_decision: --against needs a commit" >&2; exit 2; }
		against=$1
		shift
		i=$((i + 1))
		;;
	--against=*) against=${a#--against=} ;;
	*) set -- "$@" "$a" ;;
	esac
done

if [ "$(id -u)" != 0 ]; then
	echo "bench_decision: needs root to load BPF programs" >&2
	exit 1
fi
if [ -n "$against" ] && [ -n "$json" ]; then
	echo "bench_decision: --against prints a table; it does not go with --json" >&2
	exit 2
fi

make --no-print-directory build/xrl_bench >&2

old_bench=
if [ -n "$against" ]; then
	[ "$against" = lru ] && against=e7134ce
	hash=$(git rev-parse --verify --quiet "$against^{commit}") || {
		echo "bench_decision: --against $against: not a commit of this repository" >&2
		exit 2
	}
	old_dir=/tmp/xrl-bench-$(echo "$hash" | cut -c1-12)
	old_bench=$old_dir/build/xrl_bench
	if [ ! -x "$old_bench" ]; then
		echo "bench_decision: building $against's xrl_bench in $old_dir" >&2
		rm -rf "$old_dir"
		git clone -q --no-checkout "$(pwd)" "$old_dir"
		git -C "$old_dir" checkout -q "$hash"
		make -C "$old_dir" --no-print-directory -j2 build/xrl_bench >"$old_dir.log" 2>&1 || {
			echo "bench_decision: building $against failed; see $old_dir.log" >&2
			exit 1
		}
	fi
fi

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$cpu_model" ] || cpu_model=$(uname -m)
hyper=$(lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor:[[:space:]]*//p')
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo "?")
jit=$(cat /proc/sys/net/core/bpf_jit_enable 2>/dev/null || echo "?")

{
	echo "kernel:      $(uname -srm)"
	echo "cpu:         $cpu_model${hyper:+ (virtual machine, $hyper)}"
	echo "cores:       $(nproc) online of $(nproc --all)"
	echo "clocksource: $clocksource   bpf_jit_enable: $jit"
	echo "load:        $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at start"
	echo "command:     build/xrl_bench${*:+ $*}"
	[ -z "$against" ] || echo "against:     $against ($hash), built in $old_dir, run before and after"
	echo
} >&$out

[ -n "$against" ] || exec build/xrl_bench "$@"

# the same CPU for all three runs: the last one, unless --cpu says
cpu=$(($(nproc) - 1))
case " $* " in *" --cpu "*) cpu= ;; esac
tmp=$(mktemp -d /tmp/xrl-bench-decision.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$old_bench" "$@" ${cpu:+--cpu "$cpu"} --json >"$tmp/old1.json"
build/xrl_bench "$@" ${cpu:+--cpu "$cpu"} --json-out "$tmp/new.json"
"$old_bench" "$@" ${cpu:+--cpu "$cpu"} --json >"$tmp/old2.json"

jq -r -n --arg c "$against" \
	--slurpfile n "$tmp/new.json" --slurpfile a "$tmp/old1.json" --slurpfile b "$tmp/old2.json" '
def f: . * 100 | round / 100 | tostring;
def over(x): x.cases.xrl_v4_over.ns - x.cases.bare_drop.ns;
# the same per round (one-frame cases run round robin: a round is one run of each), least of the rounds
def best(x): [range(0; x.cases.xrl_v4_over.runs_ns | length) as $k |
	x.cases.xrl_v4_over.runs_ns[$k] - x.cases.bare_drop.runs_ns[$k]] | min;
$n[0] as $n | $a[0] as $a | $b[0] as $b |
(over($n)) as $on | ((over($a) + over($b)) / 2) as $oo | ($on / $oo) as $r |
"\nthis build against \($c), same run (\($c) before and after this build; ns per packet, medians):",
"  bare XDP_DROP                        this \($n.cases.bare_drop.ns | f)   \($c) \($a.cases.bare_drop.ns | f), \($b.cases.bare_drop.ns | f)",
"  IPv4 one source over limit           this \($n.cases.xrl_v4_over.ns | f)   \($c) \($a.cases.xrl_v4_over.ns | f), \($b.cases.xrl_v4_over.ns | f)",
"  over limit above bare drop           this \($on | f)   \($c) \(over($a) | f), \(over($b) | f) (mean \($oo | f))",
"  the same, least of the rounds        this \(best($n) | f)   \($c) \(best($a) | f), \(best($b) | f) (ratio to the lower: \(best($n) / ([best($a), best($b)] | min) | f); the host'"'"'s other load comes and goes: a median of few rounds can land on either side)",
"  many sources / one, over limit       this \($n.targets.many_vs_one_source_over.ratio | f)x   \($c) \($a.targets.many_vs_one_source_over.ratio | f)x, \($b.targets.many_vs_one_source_over.ratio | f)x",
"  many sources / one, under limit      this \($n.targets.many_vs_one_source_under.ratio | f)x   \($c) \($a.targets.many_vs_one_source_under.ratio | f)x, \($b.targets.many_vs_one_source_under.ratio | f)x",
"  many sources over limit, net ns      this \($n.many_sources_net_ns.over | f)   \($c) \($a.many_sources_net_ns.over | f), \($b.many_sources_net_ns.over | f)",
"  many sources under limit, net ns     this \($n.many_sources_net_ns.under | f)   \($c) \($a.many_sources_net_ns.under | f), \($b.many_sources_net_ns.under | f)",
"target: one source over limit, above bare drop <= 2/3 of \($c)'"'"'s: \($on | f) / \($oo | f) = \($r | f)  \(if $r <= 2 / 3 then "MET" else "NOT MET" end)"
'
