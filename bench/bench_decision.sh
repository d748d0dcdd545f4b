#!/bin/sh
# Decision-cost benchmark: build build/xrl_bench, say what machine it runs on,
# and run it. The figures are ns per packet through BPF_PROG_TEST_RUN (see
# bench/xrl_bench.c for the method); about 80 s with the defaults.
#
#   bench/bench_decision.sh [--repeat N] [--runs K] [--sources S] [--passes P]
#                             [--cpu C] [--json]
#
# Options go to build/xrl_bench unchanged. With --json, stdout carries only
# the JSON object and the machine description goes to stderr.
# Needs root (BPF programs are loaded). Run it on an otherwise idle machine:
# load on the other CPUs shows up in the figures (compare min..max).
set -e
cd "$(dirname "$0")/.."

out=1
for a in "$@"; do
	[ "$a" = "--json" ] && out=2
done

if [ "$(id -u)" != 0 ]; then
	echo "bench_decision: needs root to load BPF programs" >&2
	exit 1
fi

make --no-print-directory build/xrl_bench >&2

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
	echo
} >&$out

exec build/xrl_bench "$@"
