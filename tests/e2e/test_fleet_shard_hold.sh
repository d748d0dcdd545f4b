#!/usr/bin/env bash
# --on-redis-failure local on a Redis Cluster, one shard down for good: the
# hold (how long a host keeps its last known share without Redis) runs per
# shard. Two hosts flood two sources of one --global rule, each source's
# counters on another master; the master of the first and its replica are
# stopped (SIGSTOP: no failover) while the other masters answer. Within the
# hold (3 s at a 100-ms interval) both sources keep the fleet's limit (the
# lost one at the hosts' last known shares); past it the lost shard's source
# gets nothing (the other hosts stop counting this host's demand for it)
# while the other source keeps its limit, logged once per host; once the
# shard answers again, both are held to their fleet-wide limits.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REDIS=cluster
. "$(dirname "${BASH_SOURCE[0]}")/fleet_lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac

RATE=100
BURST=20
FLOOD_GAP=500us     # ~1700 frames/s per host, half to each source: >= 8x RATE each
FLEET_INTERVAL=100
# shards (FNV-1a of the address mod 64, xrl_fleet_source_shard): 198.18.5.3
# is shard 13 (first master of redis-cli --cluster create's ranges),
# 198.18.5.2 shard 58 (the third); checked below against the live cluster
LOST=198.18.5.3
OTHER=198.18.5.2

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd trafgen redis-server redis-cli
xrlt_require_bpf
xrlt_init

section "setup: a Redis Cluster (3 masters, a replica each), 2 hosts, --on-redis-failure local"
FLEET_RULES=$XRLT_TMP/rules
echo "198.18.0.0/16 --rate $RATE/s --burst $BURST --global" >"$FLEET_RULES"
fleet_redis_start
for i in 1 2; do
	fleet_host_create "$i"
	fleet_daemon_start "$i"
done
sleep 0.5

# the master serving KEY's slot, as a live node says
key_master() {
	local s
	s=$(fleet_redis_cli cluster keyslot "$1")
	fleet_redis_cli cluster shards | awk -v s="$s" '
		/^slots$/ { getline a; getline b; lo = a; hi = b; next }
		/^port$/ { getline p; port = p }
		/^role$/ { getline r; role = r }
		/^health$/ { getline h; if (role == "master" && h == "online" && s >= lo && s <= hi) { print port; exit } }'
}
source_key() { fleet_redis_scan "xrl:*:$1" | head -1; }
# the port of the replica of the master on PORT
replica_of() {
	local id
	id=$(fleet_cli_at "$1" cluster myid)
	fleet_redis_cli cluster nodes | awk -v id="$id" '$3 ~ /slave/ && $4 == id { split($2, a, "[:@]"); print a[2] }'
}

section "a shard's master and replica stopped mid-flood, past the hold, then continued"
fleet_cfg "$XRLT_TMP/f.cfg" "$LOST" "$OTHER"
for i in 1 2; do fleet_send_bg "$i" "$XRLT_TMP/f.cfg" "$FLOOD_GAP" 26 "$XRLT_TMP/f.$i.log"; done
t0=$(fleet_now)
s=()
ts=()
snap() { fleet_sleep_until "$t0" "$1"; ts+=("$(fleet_now)"); s+=("$(fleet_passed_sum 198.18.0.0/16 1 2)"); }
snap 1.5                                                     # 0
victim=$(key_master "$(source_key "$LOST")")
omaster=$(key_master "$(source_key "$OTHER")")
replica=$(replica_of "$victim")
check "the two sources' counters are on different masters ($victim, $omaster)" \
	"${victim:-0} > 0 && ${omaster:-0} > 0 && $victim != $omaster"
check "the lost shard's master has a replica ($replica)" "${replica:-0} > 0"
snap 3                                                       # 1
kill -STOP "$(fleet_cluster_pid "$victim")" "$(fleet_cluster_pid "$replica")"
t_stop=$(fleet_now)
xrlt_on_cleanup "kill -CONT $(fleet_cluster_pid "$victim") $(fleet_cluster_pid "$replica") 2>/dev/null; true"
# within the hold (3 s from the last answered round)
snap 3.5                                                     # 2
snap 5.3                                                     # 3
# past it
snap 7.5                                                     # 4
snap 11                                                      # 5
kill -CONT "$(fleet_cluster_pid "$victim")" "$(fleet_cluster_pid "$replica")"
t_cont=$(fleet_now)
# the shard answers again once the others clear its master's failed flag
t_back=0
for _ in $(seq 100); do
	if grep -q "every shard answers again" "$XRLT_TMP/daemon1.log" &&
		grep -q "every shard answers again" "$XRLT_TMP/daemon2.log"; then
		t_back=$(fleet_now)
		break
	fi
	sleep 0.1
done
b=$(xrlt_calc "$t_back - $t0 + 0.5")
snap "$b"                                                    # 6
snap "$(xrlt_calc "$b + 2.5")"                              # 7
r_up=$(fleet_rate "${s[0]}" "${s[1]}" "${ts[0]}" "${ts[1]}")
r_hold=$(fleet_rate "${s[2]}" "${s[3]}" "${ts[2]}" "${ts[3]}")
r_lost=$(fleet_rate "${s[4]}" "${s[5]}" "${ts[4]}" "${ts[5]}")
r_back=$(fleet_rate "${s[6]}" "${s[7]}" "${ts[6]}" "${ts[7]}")
printf '        fleet passed/s (2 sources, limit %d/s each): up %.0f, within the hold %.0f, past it %.0f, shard back %.0f (%.1f s after SIGCONT)\n' \
	"$RATE" "$r_up" "$r_hold" "$r_lost" "$r_back" "$(xrlt_calc "$t_back - $t_cont")"
check "both sources limited fleet-wide before" "$r_up >= 1.4 * $RATE && $r_up <= 2.6 * $RATE"
check "within the hold: both keep the fleet's limit (the lost one at the last known shares)" \
	"$r_hold >= 1.4 * $RATE && $r_hold <= 2.6 * $RATE"
check "past the hold: the lost shard's source gets nothing, the other keeps its limit" \
	"$r_lost >= 0.6 * $RATE && $r_lost <= 1.3 * $RATE"
check "the shard answers again (both hosts logged it)" "$t_back > 0"
check "the shard back: both sources limited fleet-wide again" "$r_back >= 1.4 * $RATE && $r_back <= 2.6 * $RATE"
for i in 1 2; do
	n=$(grep -c "holds none; global rules drop what they match from them" "$XRLT_TMP/daemon$i.log")
	check "host $i logged the shard's hold running out once ($n)" "$n == 1"
	n=$(grep -c "until it answers" "$XRLT_TMP/daemon$i.log")
	check "host $i: the other shards answered throughout (no round failed: $n)" "$n == 0"
	kill -0 "${FLEET_DAEMON[$i]}" 2>/dev/null && ok "host $i daemon still running" ||
		bad "host $i daemon exited: $(tail -3 "$XRLT_TMP/daemon$i.log")"
done

xrlt_cleanup
xrlt_result
[ ${#XRLT_FAILS[@]} -eq 0 ]
