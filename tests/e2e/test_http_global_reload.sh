#!/usr/bin/env bash
# xrl http reloaded (SIGHUP, the same rules file) while 10 requests of one
# address wait for a paused Redis (CLIENT PAUSE, 0.6 s: it ends by itself, as
# Redis 7.0 holds a CLIENT UNPAUSE sent on a new connection) on a --global
# rule that shares its path with a local rule of 10: the local rule's table
# carries over to the new rule set, the waiting decisions finish on the old
# set once Redis wakes and take their 10 from that same table, so the
# address's 11th request, decided on the new set, is refused by the local rule.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
XRL=${XRL:-build/xrl}
xrlt_counted_checks
xrlt_require_cmd redis-server redis-cli curl
xrlt_init

RPORT=$(http_free_port)
(cd "$XRLT_TMP" && exec redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no) \
	>"$XRLT_TMP/redis.log" 2>&1 &
xrlt_track $!
for _ in $(seq 50); do redis-cli -p "$RPORT" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
xrlt_on_cleanup "redis-cli -p $RPORT client unpause >/dev/null 2>&1 || true"

printf '%s\n' 'g --key ip --rate 100000/s --global --path /g' 'l --key ip --rate 10/m --burst 10 --path /g' \
	>"$XRLT_TMP/r.rules"
http_start r "$XRLT_TMP/r.rules" --redis "redis://127.0.0.1:$RPORT" --redis-timeout 1000 \
	--on-redis-failure closed
pid=$HTTP_PID_r
[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = xrl ] || pid=$(pgrep -P "$HTTP_PID_r" -x xrl | head -1)
url=http://127.0.0.1:$HTTP_PORT_r
code() { curl -s -m 8 -o /dev/null -w '%{http_code}' --interface "$1" -H 'X-Original-URI: /g' "$url/check"; }
# another address's request: the service is connected to Redis before the pause
c=$(code 127.0.0.3)
check "--global /check passes with Redis up (got $c)" "$c == 200"

section "10 requests waiting for a paused Redis across a reload"
# within the requests' deadline (--redis-timeout 1000)
redis-cli -p "$RPORT" client pause 600 all >/dev/null
urls=()
for _ in $(seq 10); do urls+=(-o /dev/null "$url/check"); done
timeout 10 curl -s --no-progress-meter -m 8 --parallel --parallel-immediate --parallel-max 10 \
	--interface 127.0.0.2 -w "%{http_code} %{time_total}\n" -H "X-Original-URI: /g" "${urls[@]}" \
	>"$XRLT_TMP/waiting" &
waiting=$!
for _ in $(seq 20); do
	open=$(ss -Htn state established "( sport = :$HTTP_PORT_r )" | wc -l)
	[ "$open" -ge 10 ] && break
	sleep 0.02
done
sleep 0.05
check "the 10 requests' connections are open, waiting (got $open)" "$open >= 10"
kill -HUP "$pid"
for _ in $(seq 20); do grep -q "reloaded 2 rules" "$XRLT_TMP/http-r.log" && break; sleep 0.05; done
grep -q "reloaded 2 rules" "$XRLT_TMP/http-r.log" && ok "SIGHUP: the same rules reloaded while they wait" ||
	bad "no reload logged: $(tail -2 "$XRLT_TMP/http-r.log")"
n=$(grep -c . "$XRLT_TMP/waiting")
check "the reload answered none of them early (answered so far: $n)" "$n == 0"
wait "$waiting"
n200=$(awk '$1 == 200' "$XRLT_TMP/waiting" | wc -l)
check "Redis awake within their deadline: the 10 decided, each passes (got $n200; $(awk '{ print $1 }' "$XRLT_TMP/waiting" | sort | uniq -c | tr '\n' ' ')slowest $(awk '{ if ($2 > m) m = $2 } END { print m + 0 }' "$XRLT_TMP/waiting") s)" \
	"$n200 == 10"
c=$(code 127.0.0.2)
check "their local takes count after the reload: the 11th request is refused by the local rule of 10 (got $c)" \
	"$c == 429"
c=$(code 127.0.0.3)
check "another address is not affected (got $c)" "$c == 200"

xrlt_finish
