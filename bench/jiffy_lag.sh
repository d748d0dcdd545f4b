#!/usr/bin/env bash
# How far the jiffy clock lags CLOCK_MONOTONIC as the data path reads it
# (bpf_jiffies64() and bpf_ktime_get_ns() in one BPF program, run through
# BPF_PROG_TEST_RUN every 200 µs): the kernel's lateness in advancing
# jiffies, idle and beside BUSY bounded busy loops, and the lag of xrl's
# jiffy clock it gives (xrl_jiffy_recheck allows XRL_JIFFY_LAG_TICKS).
# usage: bench/jiffy_lag.sh [SECS [BUSY]]   (root; builds into build/)
set -eu
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SECS=${1:-10}
BUSY=${2:-4}
mkdir -p build
clang -O2 -g -target bpf -mcpu=v3 -Wall -Wextra -I"/usr/include/$(cc -dumpmachine)" -Ibpf \
	-c bench/xrl_jiffy_lag.bpf.c -o build/xrl_jiffy_lag.bpf.o
cc -O2 -g -Wall -Wextra bench/xrl_jiffy_lag.c -o build/xrl_jiffy_lag -lbpf -lelf -lz
# the kernel's tick: CLOCK_MONOTONIC_COARSE's resolution, as xrl_coarse_tick_ns reads it
TICK=$(/usr/bin/python3 -c 'import time; print(int(round(time.clock_getres(6) * 1e9)))')
echo "tick $TICK ns; idle:"
timeout $((SECS + 10)) build/xrl_jiffy_lag build/xrl_jiffy_lag.bpf.o "$SECS" 200 "$TICK"
echo "beside $BUSY busy loops of $((SECS + 2)) s:"
pids=()
for _ in $(seq "$BUSY"); do
	timeout $((SECS + 2)) sh -c 'while :; do :; done' &
	pids+=($!)
done
timeout $((SECS + 10)) build/xrl_jiffy_lag build/xrl_jiffy_lag.bpf.o "$SECS" 200 "$TICK"
wait "${pids[@]}" 2>/dev/null || true
