#!/usr/bin/env bash
# xrl http with Redis paused (CLIENT PAUSE, 3 s): 48 --global requests wait
# for Redis at once, on connections from two loopback addresses; meanwhile
# the service answers /healthz and a local rule's /check within 0.5 s and its
# threads stay the 7 DESIGN counts (the waiting connections are suspended in
# the event loops, not a thread each); each waiting request is answered by
# --on-redis-failure closed (429) at its deadline (1 s), also on a second
# service whose first connect to Redis is what hangs, and once Redis wakes
# the rule is decided in Redis again (200). Requests whose clients leave
# during a pause are each decided (and their state freed) when Redis answers.
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

printf '%s\n' 'g --key ip --rate 100000/s --global --path /g' 'l --key ip --rate 100000/s --path /l' \
	>"$XRLT_TMP/p.rules"
http_start p "$XRLT_TMP/p.rules" --redis "redis://127.0.0.1:$RPORT" --redis-timeout 1000 \
	--on-redis-failure closed
# q: no call before the pause, so its connect (and script load) is what waits
http_start q "$XRLT_TMP/p.rules" --redis "redis://127.0.0.1:$RPORT" --redis-timeout 1000 \
	--on-redis-failure closed
pid=$HTTP_PID_p
[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = xrl ] || pid=$(pgrep -P "$HTTP_PID_p" -x xrl | head -1)
url=http://127.0.0.1:$HTTP_PORT_p
threads() { awk '$1 == "Threads:" { print $2 }' "/proc/$pid/status"; }
[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /g' "$url/check")" = 200 ] ||
	xrlt_fail "--global /check did not pass with Redis up"
idle=$(threads)
# 2 event loops, the Redis dispatcher and its timer, the holder, the watchdog, the main thread
check "the service at rest runs 7 threads (got $idle)" "$idle == 7"

section "48 --global requests waiting for a paused Redis"
redis-cli -p "$RPORT" client pause 3000 all >/dev/null
t0=$(date +%s.%N) slow=()
for src in 127.0.0.2 127.0.0.3; do
	# one curl, 24 connections at once
	urls=()
	for i in $(seq 24); do urls+=(-o /dev/null "$url/check"); done
	timeout 10 curl -s --no-progress-meter -m 8 --parallel --parallel-immediate --parallel-max 24 --interface "$src" \
		-w '%{http_code} %{time_total}\n' -H 'X-Original-URI: /g' "${urls[@]}" >"$XRLT_TMP/slow-$src" &
	slow+=($!)
done
urls=()
for i in $(seq 16); do urls+=(-o /dev/null "http://127.0.0.1:$HTTP_PORT_q/check"); done
timeout 10 curl -s --no-progress-meter -m 8 --parallel --parallel-immediate --parallel-max 16 \
	--interface 127.0.0.4 -w '%{http_code} %{time_total}\n' -H 'X-Original-URI: /g' "${urls[@]}" \
	>"$XRLT_TMP/fresh" &
slow+=($!)
sleep 0.4
# the slow requests are in: their connections are open and waiting
open=$(ss -Htn state established "( sport = :$HTTP_PORT_p )" | wc -l)
busy=$(threads)
h=$(curl -s -m 2 -o /dev/null -w '%{http_code} %{time_total}' "$url/healthz")
l=$(curl -s -m 2 -o /dev/null -w '%{http_code} %{time_total}' -H 'X-Original-URI: /l' "$url/check")
check "the 48 requests' connections are open, waiting (got $open)" "$open >= 48"
check "/healthz answered within 0.5 s while they wait (got ${h:-none})" \
	"\"${h%% *}\" == 200 && ${h#* } < 0.5"
check "a local rule's /check answered within 0.5 s while they wait (got ${l:-none})" \
	"\"${l%% *}\" == 200 && ${l#* } < 0.5"
check "the service's threads stay 7 while 48 requests wait (idle $idle, waiting $busy)" \
	"$busy <= 7"
wait "${slow[@]}"
cat "$XRLT_TMP"/slow-* >"$XRLT_TMP/slow"
n429=$(awk '$1 == 429' "$XRLT_TMP/slow" | wc -l)
slowest=$(awk '{ if ($2 > m) m = $2 } END { print m + 0 }' "$XRLT_TMP/slow")
check "every waiting request answered by --on-redis-failure closed: 48 x 429 (got $n429; $(awk '{ print $1 }' "$XRLT_TMP/slow" | sort | uniq -c | tr '\n' ' '))" \
	"$n429 == 48"
check "each at its deadline, not at the pause's end (slowest ${slowest} s: under 1.5 s)" \
	"$slowest < 1.5"
n429=$(awk '$1 == 429' "$XRLT_TMP/fresh" | wc -l)
slowest=$(awk '{ if ($2 > m) m = $2 } END { print m + 0 }' "$XRLT_TMP/fresh")
check "a service connecting to the paused Redis: 16 x 429, each at its deadline (got $n429, slowest ${slowest} s: under 1.5 s)" \
	"$n429 == 16 && $slowest < 1.5"
# Redis wakes at 3 s: the rule is decided in Redis again, for up to 5 s more
/usr/bin/python3 -c "import time; time.sleep(max(0, $t0 + 3.1 - time.time()))"
for i in $(seq 50); do
	c=$(curl -s -m 2 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /g' "$url/check")
	[ "$c" = 200 ] && break
	sleep 0.1
done
check "Redis awake: --global decided in Redis again (got $c after $i tries)" "$c == 200"
now=$(threads)
check "the threads stay at the idle count (idle $idle, now $now)" "$now <= $idle + 1"

section "clients that leave while their requests wait for Redis"
metric() { curl -s -m 5 "$url/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
refused='xrl_http_decisions_total{instance="default",rule="g",result="refuse"}'
r0=$(metric "$refused")
# three rounds: whether libmicrohttpd hands a resumed connection whose client left
# to the handler again or closes it at once varies with the timing
for round in 1 2 3; do
	redis-cli -p "$RPORT" client pause 1500 all >/dev/null
	gone=()
	for i in $(seq 12); do
		timeout 5 curl -s -m 0.2 -o /dev/null -H 'X-Original-URI: /g' "$url/check" &
		gone+=($!)
	done
	wait "${gone[@]}"
	# their deadline (1 s) passes, the policy answers, the connections resume and close
	sleep 1.5
done
r1=$(metric "$refused")
check "3 x 12 requests whose clients left after 0.2 s: each decided once its deadline passed (refusals counted: $((r1 - r0)))" \
	"$((r1 - r0)) == 36"
now=$(threads)
check "the threads stay at the idle count (idle $idle, now $now)" "$now <= $idle + 1"

xrlt_finish
