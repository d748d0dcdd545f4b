#!/usr/bin/env bash
# Fleet-wide (--global) rules measured: over- and under-admission for sync
# intervals of 10, 100 and 1000 ms with 2 and 3 hosts, and the daemon's
# round with 1,000 to 10,000 sources over budget (round time, Redis
# commands per round).
# Hosts are xrl instances on veth pairs with their own daemons, one
# redis-server on a loopback port (tests/e2e/fleet_lib.sh). Not a test:
# figures are printed, never asserted. Cleans up everything, even when
# interrupted.
#
#   bench/bench_fleet.sh [--quick] [--runs N] [--secs S] [--round-only] [--markdown FILE]
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/e2e/lib.sh"
. "$REPO/tests/e2e/fleet_lib.sh"

XRL=$REPO/build/xrl
RUNS=3
SECS=10
MD=
ROUND_ONLY=0
while [ $# -gt 0 ]; do
	case $1 in
	--round-only) ROUND_ONLY=1; shift ;;
	--quick) RUNS=1; SECS=5; shift ;;
	--runs) RUNS=$2; shift 2 ;;
	--secs) SECS=$2; shift 2 ;;
	--markdown) MD=$2; shift 2 ;;
	*) echo "usage: bench/bench_fleet.sh [--quick] [--runs N] [--secs S] [--round-only] [--markdown FILE]" >&2; exit 2 ;;
	esac
done

RATE=100
BURST=20
FLOOD_GAP=500us           # ~1700 packets/s per host: >= 17x the fleet's rate
FLEET_PORT=$((24000 + $$ % 8000))
FLEET_RULES=
FLEET_INTERVAL=100

xrlt_require_root
xrlt_require_cmd trafgen redis-server redis-cli jq
xrlt_require_bpf
xrlt_init
FLEET_RULES=$XRLT_TMP/rules
cat >"$FLEET_RULES" <<EOF
198.18.0.0/16 --rate $RATE/s --burst $BURST --global
198.19.0.0/16 --rate $RATE/s --burst $BURST --global
EOF
fleet_redis_start
for i in 1 2 3; do fleet_host_create "$i"; done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

restart_daemons() { # INTERVAL [extra options]
	local i
	FLEET_INTERVAL=$1
	shift
	for i in 1 2 3; do fleet_daemon_stop "$i"; done
	for i in 1 2 3; do fleet_daemon_start "$i" "$@"; done
	sleep 0.5
}

# One run: NHOSTS hosts each flooded by FSRC (>= 10x the fleet's rate) and
# sent the polite PSRC (its own rule, same rate and burst) at 80 % of the
# rate split evenly. Prints: over% refused% flood-passed polite-passed polite-sent
one_run() { # NHOSTS FSRC PSRC
	local n=$1 i secs=0 d fb fa pb pa psent=0 gap exp
	gap=$((1000000 * n * 10 / (RATE * 8)))us
	fleet_cfg "$XRLT_TMP/f.cfg" "$2"
	fleet_cfg "$XRLT_TMP/p.cfg" "$3"
	fb=$(fleet_passed_sum 198.18.0.0/16 $(seq "$n"))
	pb=$(fleet_passed_sum 198.19.0.0/16 $(seq "$n"))
	for i in $(seq "$n"); do
		fleet_send_bg "$i" "$XRLT_TMP/f.cfg" "$FLOOD_GAP" "$SECS" "$XRLT_TMP/f$i.log"
		fleet_send_bg "$i" "$XRLT_TMP/p.cfg" "$gap" "$SECS" "$XRLT_TMP/p$i.log"
	done
	sleep $((SECS + 1))
	for i in $(seq "$n"); do
		for _ in $(seq 40); do
			grep -q "usec on CPU" "$XRLT_TMP/f$i.log" && grep -q "usec on CPU" "$XRLT_TMP/p$i.log" && break
			sleep 0.1
		done
		d=$(xrlt_trafgen_secs "$XRLT_TMP/f$i.log")
		xrlt_true "$d > $secs" && secs=$d
		psent=$((psent + $(xrlt_trafgen_sent "$XRLT_TMP/p$i.log")))
	done
	fa=$(fleet_passed_sum 198.18.0.0/16 $(seq "$n"))
	pa=$(fleet_passed_sum 198.19.0.0/16 $(seq "$n"))
	exp=$(xrlt_calc "$RATE * $secs + $BURST")
	printf '%s %s %s %s %s\n' "$(xrlt_calc "($fa - $fb - $exp) / $exp * 100")" \
		"$(xrlt_calc "($psent - ($pa - $pb)) / $psent * 100")" $((fa - fb)) $((pa - pb)) "$psent"
}

printf '== fleet: rate %d/s burst %d, floods of %s s at ~1700/s per host, a polite source at 80 %% of the rate; median of %d\n' \
	"$RATE" "$BURST" "$SECS" "$RUNS"
rows=()
idx=0
for iv in 10 100 1000; do
	[ $ROUND_ONLY = 1 ] && break
	restart_daemons "$iv"
	idx=$((idx + 1))
	for n in 2 3; do
		overs=()
		losses=()
		for r in $(seq "$RUNS"); do
			read -r over loss total ppass psent < <(one_run "$n" "198.18.$idx.$((r * 10 + n))" "198.19.$idx.$((r * 10 + n))")
			overs+=("$over")
			losses+=("$loss")
			printf '   interval %4d ms, %d hosts, run %d: fleet passed %d (%+.2f %% vs rate x time + burst); polite %d of %d (%.2f %% refused)\n' \
				"$iv" "$n" "$r" "$total" "$over" "$ppass" "$psent" "$loss"
		done
		mo=$(printf '%s\n' "${overs[@]}" | median)
		ml=$(printf '%s\n' "${losses[@]}" | median)
		bound=$(xrlt_calc "($n - 1) * ($RATE * $iv / 1000 + 1) / ($RATE * $SECS + $BURST) * 100")
		rows+=("$(printf '| %d ms | %d | %+.2f %% | %.2f %% | +%.1f %% |' "$iv" "$n" "$mo" "$ml" "$bound")")
	done
done

for i in 1 2 3; do fleet_daemon_stop "$i"; done

# The round on its own: build/xrl_bench_fleet runs the daemon's round
# (user/daemon/xrl_fleet.c) on the maps of a loaded (not attached) object whose
# xrl_fleet_used holds N sources that all admitted packets since the last
# round, against the same Redis; two at once are two hosts of one fleet.
printf '\n== the sync round with N sources over budget, every 100 ms (build/xrl_bench_fleet)\n'
# Redis' figures from here on are the rounds' alone (full calls of 64 sources)
redis-cli -p "$FLEET_PORT" config resetstat >/dev/null
round_rows=()
one10k=
two10k=
for n in 1000 5000 10000; do
	for hosts in 1 2; do
		for h in $(seq "$hosts"); do
			"$REPO/build/xrl_bench_fleet" --redis-port "$FLEET_PORT" --sources "$n" \
				--seconds "$SECS" --host "bench$h" >"$XRLT_TMP/round$h.txt" 2>&1 &
			xrlt_track $!
		done
		for h in $(seq "$hosts"); do wait "${XRLT_PIDS[-$h]}" 2>/dev/null; done
		for h in $(seq "$hosts"); do
			line=$(grep "fleet round" "$XRLT_TMP/round$h.txt")
			echo "   $hosts host(s): $line"
			[ -z "$line" ] && { cat "$XRLT_TMP/round$h.txt"; continue; }
			mean=$(sed -n 's/.*: mean \([0-9.]*\) ms.*/\1/p' <<<"$line")
			med=$(sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' <<<"$line")
			max=$(sed -n 's/.*max \([0-9.]*\) ms.*/\1/p' <<<"$line")
			cmds=$(sed -n 's/.*; \([0-9.]*\) Redis commands.*/\1/p' <<<"$line")
			round_rows+=("$(printf '| %d | %d | host %d | %s ms | %s ms | %s ms | %s |' "$n" "$hosts" "$h" "$mean" "$med" "$max" "$cmds")")
			[ "$n" = 10000 ] && [ "$hosts" = 1 ] && one10k=$mean
			[ "$n" = 10000 ] && [ "$hosts" = 2 ] && [ "$h" = 1 ] && two10k=$mean
		done
	done
done
evalsha=$(redis-cli -p "$FLEET_PORT" info commandstats | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')
printf '   redis: %s µs per EVALSHA of up to 64 sources over the rounds\n' "$evalsha"
per_src=$(awk -v e="$evalsha" 'BEGIN { if (e > 0) printf "%.1f", e / 64; else print "?" }')
per_sec=$(awk -v e="$evalsha" 'BEGIN { if (e > 0) printf "%.0f", 64e6 / e; else print "?" }')
printf 'target: 10,000 sources over budget in one round within half of a 100 ms interval: %s (one host %s ms, two hosts %s ms)\n' \
	"$(awk -v m="$one10k" 'BEGIN { print (m != "" && m <= 50) ? "MET" : "NOT MET" }')" "${one10k:-?}" "${two10k:-?}"

if [ -n "$MD" ]; then
	{
		echo "## 4. Fleet-wide rules through Redis"
		echo
		echo "\`bench/bench_fleet.sh --runs $RUNS --secs $SECS\`: hosts are xrl instances on veth pairs, each with its own"
		echo "\`xrl daemon\`, one redis-server on loopback (tests/e2e/fleet_lib.sh). A rule of $RATE/s burst $BURST"
		echo "\`--global\`; one source floods every host for $SECS s at ~1700 packets/s each (>= 17x the fleet's"
		echo "rate), while a polite source sends 80 % of the rate split evenly over the same hosts. Over-admission:"
		echo "the fleet's total for the rule against rate x time + burst, median of $RUNS runs. Under-admission: the"
		echo "polite source's packets refused (it stays under its budget, so the exact figure is 0). The bound is"
		echo "(n - 1) x (r x (I + L) + 1) packets over rate x time + burst (README, docs/DESIGN.md), as a percentage,"
		echo "with L taken as 0 (rounds of a few sources take about a millisecond)."
		echo
		echo "| sync interval | hosts | over-admission (fleet) | polite source refused | bound |"
		echo "|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
		echo
		echo "The sync round alone (\`build/xrl_bench_fleet\`, $SECS s of rounds every 100 ms): the daemon's own round"
		echo "code on the maps of a loaded xrl object, N sources that all admitted packets since the previous round"
		echo "(as sources over budget at more than one token per round do), against the same Redis; \"2\" hosts"
		echo "are two of them at once on the same keys. Redis spent $evalsha µs per EVALSHA (64 sources)."
		echo
		echo "| sources | hosts | | mean round | median | max | Redis commands per round |"
		echo "|---|---|---|---|---|---|---|"
		printf '%s\n' "${round_rows[@]}"
		echo
		verdict=$(awk -v m="$one10k" 'BEGIN { print (m != "" && m <= 50) ? "met" : "NOT met" }')
		echo "Target (issue: 10,000 sources over budget in one round finish well inside the interval, taken as"
		echo "at most half of it): $verdict — one host ${one10k:-?} ms mean at 100 ms; with two hosts Redis serves both"
		echo "and each round takes ${two10k:-?} ms. Redis spends ~$per_src µs per source reported, so one Redis core serves"
		echo "~$per_sec source reports a second on this machine; that is what bounds a round (docs/DESIGN.md, round cost)."
		echo
		echo "A command is one EVALSHA per 64 (rule, source) pairs with new admissions or demand, or whose floor"
		echo "is about to release the source, plus one per global rule; they are written as they are built, so"
		echo "Redis works while the daemon formats the rest (docs/DESIGN.md)."
	} >"$MD"
fi
xrlt_cleanup
