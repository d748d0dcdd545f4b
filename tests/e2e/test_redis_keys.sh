#!/usr/bin/env bash
# The daemon against a Redis that does not keep xrl's keys as xrl wrote them:
# real daemons, a real redis-server on a loopback port, real traffic over a
# veth pair.
#
#  1. a key of the wrong type planted on xrl's keys (a string on a rule's
#     hosts hash, then on a source's demand hash): the daemon names the key
#     and its type, deletes it (xrl's namespace) and goes on; legitimate
#     traffic well under the limit is not dropped, Redis is not "down";
#  2. maxmemory-policy allkeys-lru with a maxmemory: warned at start;
#  3. Redis evicting keys: warned once per episode, counted in /metrics;
#  4. a Redis with CONFIG and INFO renamed away: the daemon says so and
#     watches a sentinel key, whose loss it warns about.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/fleet_lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac

RATE=100
BURST=20
FLEET_INTERVAL=100
FLEET_PORT=$((24000 + $$ % 20000))
MPORT=$((FLEET_PORT + 1))
PORT2=$((FLEET_PORT + 2))      # the Redis without CONFIG and INFO

xrlt_counted_checks

xrlt_require_root
xrlt_require_cmd trafgen redis-server redis-cli jq curl
xrlt_require_bpf
xrlt_init

metric() { curl -sf --max-time 2 "http://127.0.0.1:$MPORT/metrics" | awk -v n="$1" '$1 ~ "^"n"[{]" {print $NF}'; }
rule_counter() { "$XRL" --instance "$(fleet_inst 1)" --json stats | jq -r --arg p 198.18.0.0/16 --arg f "$1" '.rules[] | select(.prefix == $p) | .[$f]'; }
log_count() { grep -c "$1" "$XRLT_TMP/daemon1.log"; }

section "setup: redis on 127.0.0.1:$FLEET_PORT, one host"
FLEET_RULES=$XRLT_TMP/rules
echo "198.18.0.0/16 --rate $RATE/s --burst $BURST --global" >"$FLEET_RULES"
fleet_redis_start
fleet_host_create 1
fleet_daemon_start 1 --metrics "127.0.0.1:$MPORT"
sleep 1
grep -q "connected: fleet-wide limits in force" "$XRLT_TMP/daemon1.log" ||
	xrlt_fail "the daemon did not connect: $(tail -2 "$XRLT_TMP/daemon1.log")"

# ------------------------------------------------------------------ 1. wrong types
# 10 s of one source at 10 packets/s (a tenth of the limit); a string on the
# rule's hosts hash at once, on the source's demand hash at 5 s (a hash on
# its TAT key would be no fault: gcra.lua SETs a TAT it cannot add to).
section "1. keys of the wrong type on xrl's keys"
fleet_cfg "$XRLT_TMP/legit.cfg" 198.18.9.1
fleet_send_once 1 "$XRLT_TMP/legit.cfg" 1     # the source's keys exist
sleep 0.5
HOSTS_KEY=$(fleet_redis_cli --scan --pattern 'xrl:{*}:hosts' | head -1)
TAT_KEY=$(fleet_redis_cli --scan --pattern 'xrl:{*:198.18.9.1}' | head -1)
[ -n "$HOSTS_KEY" ] && [ -n "$TAT_KEY" ] || xrlt_fail "no xrl keys in Redis: hosts '$HOSTS_KEY', TAT '$TAT_KEY'"
p0=$(rule_counter passed)
d0=$(rule_counter dropped)
fleet_redis_cli SET "$HOSTS_KEY" x >/dev/null
fleet_send_bg 1 "$XRLT_TMP/legit.cfg" 100ms 10 "$XRLT_TMP/legit.log"
sleep 5
fleet_redis_cli SET "$TAT_KEY:d" x >/dev/null
sleep 5.5
p=$(($(rule_counter passed) - p0))
d=$(($(rule_counter dropped) - d0))
printf '        legitimate packets at a tenth of the limit: %d passed, %d dropped\n' "$p" "$d"
check "the legitimate source's packets went through ($p passed)" "$p >= 80"
check "none dropped beyond one interval's (${d} dropped)" "$d <= 1"
line=$(grep "is a string where xrl keeps a hash" "$XRLT_TMP/daemon1.log" | head -1)
case $line in
*"$HOSTS_KEY"*deleted*) ok "the log names the key, its type and what was done: ${line#* }" ;;
*) bad "no line names $HOSTS_KEY and its type: $(grep -i redis "$XRLT_TMP/daemon1.log" | tail -3)" ;;
esac
n=$(log_count "where xrl keeps a")
check "one line for both keys within 10 s ($n)" "$n == 1"
t=$(fleet_redis_cli TYPE "$HOSTS_KEY")
[ "$t" = hash ] && ok "the hosts key is a hash again" || bad "the hosts key is a $t"
t=$(fleet_redis_cli TYPE "$TAT_KEY:d")
[ "$t" = hash ] && ok "the demand key is a hash again" || bad "the demand key is a $t"
r=$(metric xrl_redis_keys_repaired_total)
check "xrl_redis_keys_repaired_total counts both (${r:-missing})" "${r:-0} == 2"
n=$(log_count "until it answers")
check "Redis was never taken for down ($n lines)" "$n == 0"
up=$(metric xrl_redis_up)
check "xrl_redis_up is 1 (${up:-missing})" "${up:-0} == 1"

# ------------------------------------------------------------------ 2. policy
section "2. an evicting maxmemory-policy is warned about at start"
fleet_daemon_stop 1
: >"$XRLT_TMP/daemon1.log"
fleet_redis_cli CONFIG SET maxmemory-policy allkeys-lru >/dev/null
used=$(fleet_redis_cli INFO memory | awk -F: '/^used_memory:/ {print $2+0}')
fleet_redis_cli CONFIG SET maxmemory $((used + 3000000)) >/dev/null
fleet_daemon_start 1 --metrics "127.0.0.1:$MPORT"
sleep 1
line=$(grep "maxmemory-policy is allkeys-lru" "$XRLT_TMP/daemon1.log")
[ -n "$line" ] && ok "warned: ${line#* }" || bad "no warning of allkeys-lru: $(tail -3 "$XRLT_TMP/daemon1.log")"

# ------------------------------------------------------------------ 3. evictions
section "3. Redis evicting keys: warned once per episode, counted"
fleet_send_bg 1 "$XRLT_TMP/legit.cfg" 100ms 8 "$XRLT_TMP/legit2.log"
fill() { # fill PREFIX: 30000 keys of 200 bytes, past maxmemory
	awk -v p="$1" 'BEGIN { v = sprintf("%200s", ""); gsub(/ /, "x", v); for (i = 0; i < 30000; i++) printf "SET %s:%d %s\r\n", p, i, v }' |
		fleet_redis_cli --pipe >/dev/null 2>&1
}
fill ballast1
sleep 2
fill ballast2
sleep 2
ev=$(fleet_redis_cli INFO stats | awk -F: '/^evicted_keys:/ {print $2+0}')
n=$(log_count "redis is evicting keys")
check "Redis evicted keys ($ev)" "$ev > 0"
check "the daemon warned once for the episode ($n lines)" "$n == 1"
r=$(metric xrl_redis_evicted_keys_total)
check "xrl_redis_evicted_keys_total counts them (${r:-missing}, Redis $ev)" "${r:-0} > 0 && ${r:-0} <= $ev"
fleet_daemon_stop 1
fleet_redis_cli CONFIG SET maxmemory 0 >/dev/null

# ------------------------------------------------------------------ 4. sentinel
section "4. CONFIG and INFO renamed away: a sentinel key"
(cd "$XRLT_TMP" && exec redis-server --port "$PORT2" --bind 127.0.0.1 --save '' --appendonly no \
	--dir "$XRLT_TMP" --rename-command CONFIG "" --rename-command INFO "") >>"$XRLT_TMP/redis2.log" 2>&1 &
xrlt_track $!
for _ in $(seq 50); do redis-cli -p "$PORT2" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
: >"$XRLT_TMP/daemon1.log"
"$XRL" --instance "$(fleet_inst 1)" daemon --redis "redis://127.0.0.1:$PORT2" --host-id h1 \
	--sync-interval "$FLEET_INTERVAL" --rules "$FLEET_RULES" >>"$XRLT_TMP/daemon1.log" 2>&1 &
FLEET_DAEMON[1]=$!
xrlt_track $!
sleep 2
n=$(log_count "cannot read redis' maxmemory-policy")
m=$(log_count "refuses INFO")
check "the daemon said it cannot read the policy ($n) nor INFO ($m)" "$n == 1 && $m == 1"
s=$(redis-cli -p "$PORT2" EXISTS "xrl:{h1}:sentinel")
check "its sentinel key is there ($s)" "${s:-0} == 1"
redis-cli -p "$PORT2" FLUSHALL >/dev/null
sleep 2
line=$(grep "sentinel key vanished" "$XRLT_TMP/daemon1.log")
[ -n "$line" ] && ok "the lost sentinel was warned about: ${line#* }" || bad "no warning of the lost sentinel: $(tail -3 "$XRLT_TMP/daemon1.log")"
fleet_daemon_stop 1

xrlt_cleanup
xrlt_result
[ ${#XRLT_FAILS[@]} -eq 0 ]
