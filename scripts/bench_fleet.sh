#!/usr/bin/env bash
# Fleet-wide (--global) rules measured: over- and under-admission for sync
# intervals of 10, 100 and 1000 ms with 2 and 3 hosts, and a daemon round
# with 10,000 sources over budget (round time, Redis commands per round).
# Hosts are xrl instances on veth pairs with their own daemons, one
# redis-server on a loopback port (tests/e2e/fleet_lib.sh). Not a test:
# figures are printed, never asserted. Cleans up everything, even when
# interrupted.
#
#   scripts/bench_fleet.sh [--quick] [--runs N] [--secs S] [--round-only] [--markdown FILE]
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/e2e/lib.sh"
. "$REPO/tests/e2e/fleet_lib.sh"

XRL=$REPO/build/xrl
RUNS=3
SECS=10
MD=
ROUND_ONLY=0
MANY_GAP=20us             # the 10,000-source flood: ~30,000 packets/s per host, ~3/s per source
while [ $# -gt 0 ]; do
	case $1 in
	--round-only) ROUND_ONLY=1; shift ;;
	--quick) RUNS=1; SECS=5; shift ;;
	--runs) RUNS=$2; shift 2 ;;
	--secs) SECS=$2; shift 2 ;;
	--markdown) MD=$2; shift 2 ;;
	*) echo "usage: scripts/bench_fleet.sh [--quick] [--runs N] [--secs S] [--round-only] [--markdown FILE]" >&2; exit 2 ;;
	esac
done

RATE=100
BURST=20
FLOOD_GAP=500us           # ~1700 packets/s per host: >= 17x the fleet's rate
FLEET_PORT=$((24000 + $$ % 8000))
MPORT=$((FLEET_PORT + 10000))
FLEET_RULES=
FLEET_INTERVAL=100
NSRC=10000

xrlt_require_root
xrlt_require_cmd trafgen redis-server redis-cli jq curl
xrlt_require_bpf
xrlt_init
FLEET_RULES=$XRLT_TMP/rules
cat >"$FLEET_RULES" <<EOF
198.18.0.0/16 --rate $RATE/s --burst $BURST --global
198.19.0.0/16 --rate $RATE/s --burst $BURST --global
10.0.0.0/8 --rate 1/s --burst 1 --global
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

printf '\n== 10,000 sources over budget, 2 hosts, sync every 100 ms\n'
for i in 1 2 3; do fleet_daemon_stop "$i"; done
FLEET_INTERVAL=100
for i in 1 2; do fleet_daemon_start "$i" --metrics "127.0.0.1:$((MPORT + i))"; done
sleep 0.5
metric() { # HOST NAME
	curl -sf "http://127.0.0.1:$((MPORT + $1))/metrics" | awk -v n="$2" '$1 ~ "^"n"({|$)" { print $NF; exit }'
}
snap() { # HOST -> "rounds sum commands reports"
	echo "$(metric "$1" xrl_redis_sync_duration_seconds_count) $(metric "$1" xrl_redis_sync_duration_seconds_sum) $(metric "$1" xrl_redis_commands_total) $(metric "$1" xrl_fleet_reports_total)"
}
xrlt_trafgen_cfg "$XRLT_TMP/many.cfg" "dinc(167772160, $((167772160 + NSRC - 1)))"
evalsha0=$(redis-cli -p "$FLEET_PORT" info commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\).*/\1/p')
before=$(fleet_passed_sum 10.0.0.0/8 1 2)
for i in 1 2; do fleet_send_bg "$i" "$XRLT_TMP/many.cfg" "$MANY_GAP" "$SECS" "$XRLT_TMP/m$i.log"; done
sleep 2
read -r r0 s0 c0 p0 < <(snap 1)
sleep $((SECS - 3))
read -r r1 s1 c1 p1 < <(snap 1)
sleep 2
evalsha1=$(redis-cli -p "$FLEET_PORT" info commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\).*/\1/p')
after=$(fleet_passed_sum 10.0.0.0/8 1 2)
sent1=$(xrlt_trafgen_sent "$XRLT_TMP/m1.log")
sent2=$(xrlt_trafgen_sent "$XRLT_TMP/m2.log")
rounds=$(xrlt_calc "$r1 - $r0")
mean_ms=$(xrlt_calc "($s1 - $s0) / $rounds * 1000")
cmds=$(xrlt_calc "($c1 - $c0) / $rounds")
reps=$(xrlt_calc "($p1 - $p0) / $rounds")
tracked=$(metric 1 xrl_fleet_sources)
hist=$(curl -sf "http://127.0.0.1:$((MPORT + 1))/metrics" | grep '^xrl_redis_sync_duration_seconds_bucket')
p99=$(echo "$hist" | sed -n 's/.*le="\([^"]*\)"} \([0-9]*\)$/\1 \2/p' |
	awk '{ b[NR] = $1; c[NR] = $2 } END { for (i = 1; i <= NR; i++) if (c[i] >= 0.99 * c[NR]) { print b[i]; exit } }')
exp=$(xrlt_calc "$NSRC * (1 * $SECS + 1)")
printf '   host 1: %d sources tracked, %.0f rounds measured, mean round %.1f ms (p99 <= %s s), %.0f Redis commands per round (%.0f sources reported)\n' \
	"$tracked" "$rounds" "$mean_ms" "$p99" "$cmds" "$reps"
printf '   redis: %d EVALSHA calls in the run; floods sent %d + %d packets (%.0f per source per second)\n' \
	$((evalsha1 - evalsha0)) "$sent1" "$sent2" "$(xrlt_calc "($sent1 + $sent2) / $NSRC / $SECS")"
printf '   fleet passed %d for %d sources at 1/s burst 1 over %d s: rate x time + burst = %d (%+.2f %%)\n' \
	$((after - before)) "$NSRC" "$SECS" "${exp%.*}" "$(xrlt_calc "($after - $before - $exp) / $exp * 100")"

if [ -n "$MD" ]; then
	{
		echo "## 4. Fleet-wide rules through Redis"
		echo
		echo "\`scripts/bench_fleet.sh --runs $RUNS --secs $SECS\`: hosts are xrl instances on veth pairs, each with its own"
		echo "\`xrl daemon\`, one redis-server on loopback (tests/e2e/fleet_lib.sh). A rule of $RATE/s burst $BURST"
		echo "\`--global\`; one source floods every host for $SECS s at ~1700 packets/s each (>= 17x the fleet's"
		echo "rate), while a polite source sends 80 % of the rate split evenly over the same hosts. Over-admission:"
		echo "the fleet's total for the rule against rate x time + burst, median of $RUNS runs. Under-admission: the"
		echo "polite source's packets refused (it stays under its budget, so the exact figure is 0). The bound is"
		echo "(n - 1) x (r x I + 1) packets over rate x time + burst (README, docs/DESIGN.md), as a percentage."
		echo
		echo "| sync interval | hosts | over-admission (fleet) | polite source refused | bound |"
		echo "|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
		echo
		echo "A round with $NSRC sources over budget (each sent ~$(xrlt_calc "($sent1 + $sent2) / $NSRC / $SECS" | cut -d. -f1) packets/s against 1/s burst 1) on 2 hosts, sync every 100 ms, measured from host 1's metrics:"
		echo
		echo "| sources tracked | rounds | mean round | p99 round | Redis commands per round | sources reported per round | fleet passed vs rate x time + burst |"
		echo "|---|---|---|---|---|---|---|"
		printf '| %d | %.0f | %.1f ms | <= %s s | %.0f | %.0f | %+.2f %% |\n' "$tracked" "$rounds" "$mean_ms" "$p99" "$cmds" "$reps" \
			"$(xrlt_calc "($after - $before - $exp) / $exp * 100")"
		echo
		echo "A command is one EVALSHA per (rule, source) with new admissions or demand, or whose floor is still"
		echo "ahead of now, plus one per global rule; pipelined in batches of 1024 (docs/DESIGN.md)."
	} >"$MD"
fi
xrlt_cleanup
