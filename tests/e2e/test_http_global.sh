#!/usr/bin/env bash
# xrl http's --global rules against a real redis-server on a loopback port:
# exact across services (20 simultaneous requests split over two services
# against a limit of 10 pass exactly 10, for the token bucket, the sliding
# window and the sliding log), the literature's window cases through nginx
# (10/s: 10 at 0.90 s and 10 at 1.05 s of a UTC second), per-instance memory against
# --global through nginx with two xrl http behind it (30 requests over 30 s
# against 10 per minute), and each --on-redis-failure policy with Redis
# stopped (SIGSTOP) and killed: every request answered within the deadline.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
XRL=${XRL:-build/xrl}
xrlt_counted_checks
xrlt_require_cmd nginx hey curl redis-server redis-cli /usr/bin/python3
xrlt_init

RPORT=$(http_free_port)
start_redis() {
	(cd "$XRLT_TMP" && exec redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no) \
		>"$XRLT_TMP/redis.log" 2>&1 &
	xrlt_track $!
	REDIS_PID=$!
	local i
	for i in $(seq 50); do
		redis-cli -p "$RPORT" ping 2>/dev/null | grep -q PONG && return 0
		sleep 0.1
	done
	xrlt_fail "redis-server did not answer on 127.0.0.1:$RPORT"
}
start_redis
xrlt_on_cleanup 'kill -CONT $REDIS_PID 2>/dev/null || true'
RURL=redis://127.0.0.1:$RPORT
# a deadline with room for this shared machine; the default is 5 ms
TMO=50

section "20 simultaneous requests split over two services against a limit of 10 pass exactly 10"
printf 'race --key header:X-Client --rate 10/m --burst 10 --global --missing refuse\n' >"$XRLT_TMP/race.rules"
http_start a "$XRLT_TMP/race.rules" --redis "$RURL" --redis-timeout $TMO
http_start b "$XRLT_TMP/race.rules" --redis "$RURL" --redis-timeout $TMO
hey_codes "http://127.0.0.1:$HTTP_PORT_a/check" 10 10 -H 'X-Original-URI: /' -H 'X-Client: c1' >"$XRLT_TMP/ra" &
p1=$!
hey_codes "http://127.0.0.1:$HTTP_PORT_b/check" 10 10 -H 'X-Original-URI: /' -H 'X-Client: c1' >"$XRLT_TMP/rb" &
p2=$!
wait $p1 $p2
a=$(( $(code_count 200 <"$XRLT_TMP/ra") + $(code_count 200 <"$XRLT_TMP/rb") ))
d=$(( $(code_count 429 <"$XRLT_TMP/ra") + $(code_count 429 <"$XRLT_TMP/rb") ))
check "--global: 10 accepted, 10 refused over both services (got $a/$d; a: $(tr '\n' ' ' <"$XRLT_TMP/ra"), b: $(tr '\n' ' ' <"$XRLT_TMP/rb"))" \
	"$a == 10 && $d == 10"
hdr=$(curl -s -m 2 -D - -o /dev/null -H 'X-Original-URI: /' -H 'X-Client: c1' "http://127.0.0.1:$HTTP_PORT_a/check")
ra=$(awk -F': ' 'tolower($1) == "retry-after" { gsub("\r", "", $2); print $2 }' <<<"$hdr")
check "a --global refusal carries Retry-After (6 s for 10/m: got '$ra')" "\"$ra\" == \"6\""
check "the key in Redis is hashed: no client value in it" \
	"$(redis-cli -p "$RPORT" --scan --pattern '*c1*' | wc -l) == 0 && $(redis-cli -p "$RPORT" --scan --pattern 'xrl:{http:race:*' | wc -l) == 1"

section "sliding window and sliding log --global: 20 simultaneous requests over two services against a limit of 10 pass exactly 10"
printf 'sw --key header:X-Client --rate 10/m --algo sliding-window --global --missing refuse --path /sw
sl --key header:X-Client --rate 10/m --algo sliding-log --global --missing refuse --path /sl\n' >"$XRLT_TMP/slide.rules"
http_start sa "$XRLT_TMP/slide.rules" --redis "$RURL" --redis-timeout $TMO
http_start sb "$XRLT_TMP/slide.rules" --redis "$RURL" --redis-timeout $TMO
for algo in sw sl; do
	hey_codes "http://127.0.0.1:$HTTP_PORT_sa/check" 10 10 -H "X-Original-URI: /$algo" -H 'X-Client: c1' >"$XRLT_TMP/ra" &
	p1=$!
	hey_codes "http://127.0.0.1:$HTTP_PORT_sb/check" 10 10 -H "X-Original-URI: /$algo" -H 'X-Client: c1' >"$XRLT_TMP/rb" &
	p2=$!
	wait $p1 $p2
	a=$(( $(code_count 200 <"$XRLT_TMP/ra") + $(code_count 200 <"$XRLT_TMP/rb") ))
	d=$(( $(code_count 429 <"$XRLT_TMP/ra") + $(code_count 429 <"$XRLT_TMP/rb") ))
	check "--algo $algo --global: 10 accepted, 10 refused over both services (got $a/$d)" \
		"$a == 10 && $d == 10"
done
# the refused requests counted nowhere: the window's counters and the log hold the 10 admitted
wc=$(redis-cli -p "$RPORT" --scan --pattern 'xrl:{http:sw:*}:w:*' | xargs -r redis-cli -p "$RPORT" mget | awk '{ s += $1 } END { print s + 0 }')
lc=$(redis-cli -p "$RPORT" --scan --pattern 'xrl:{http:sl:*}:l' | xargs -r redis-cli -p "$RPORT" zcard)
check "Redis holds the 10 admitted, not the 20 asked (window counters: $wc, log members: $lc)" \
	"${wc:-0} == 10 && ${lc:-0} == 10"
hdr=$(curl -s -m 2 -D - -o /dev/null -H 'X-Original-URI: /sl' -H 'X-Client: c1' "http://127.0.0.1:$HTTP_PORT_sa/check")
ra=$(awk -F': ' 'tolower($1) == "retry-after" { gsub("\r", "", $2); print $2 }' <<<"$hdr")
check "a sliding log's refusal waits for its oldest request to leave the minute (Retry-After 58-60: got '$ra')" \
	"${ra:-0} >= 58 && ${ra:-0} <= 60"

section "--global through nginx and two xrl http, 10/s: 10 at 0.90 s and 10 at 1.05 s of a UTC second"
printf '%s\n' 'fw --key ip --rate 10/s --algo fixed-window --global --path /fw' \
	'sw --key ip --rate 10/s --algo sliding-window --global --path /sw' \
	'sl --key ip --rate 10/s --algo sliding-log --global --path /sl' >"$XRLT_TMP/lit.rules"
http_start la "$XRLT_TMP/lit.rules" --redis "$RURL" --redis-timeout $TMO
http_start lb "$XRLT_TMP/lit.rules" --redis "$RURL" --redis-timeout $TMO
http_nginx lit "$HTTP_PORT_la" "$HTTP_PORT_lb"
for algo in fw sw sl; do
	sleep_to_fraction 0.90
	t1=$(date +%s.%N)
	r1=$(hey_codes "http://127.0.0.1:$NGINX_PORT_lit/$algo" 10 10)
	sleep_to_fraction 0.05 0
	t2=$(date +%s.%N)
	r2=$(hey_codes "http://127.0.0.1:$NGINX_PORT_lit/$algo" 10 10)
	eval "${algo}_1=$(code_count 200 <<<"$r1") ${algo}_2=$(code_count 200 <<<"$r2")"
	eval "${algo}_at='${t1:9:4} s then ${t2:9:4} s'"
done
check "fixed window --global: 10 + 10 accepted (got $fw_1 + $fw_2; sent at $fw_at)" "$fw_1 == 10 && $fw_2 == 10"
# at 1.05 s the previous window's 10 weigh 10 x 0.95: no room for one more
check "sliding window --global: 10 accepted, then 0 (got $sw_1 + $sw_2; sent at $sw_at)" "$sw_1 == 10 && $sw_2 == 0"
check "sliding log --global: 10 accepted, then 0 (got $sl_1 + $sl_2; sent at $sl_at)" "$sl_1 == 10 && $sl_2 == 0"

section "Redis calls per decision: one Lua call per request, pipelined"
metric() { curl -s -m 5 "http://127.0.0.1:$HTTP_PORT_a/metrics" | awk -v n="$1" '$1 == n"{instance=\"default\"}" { print $2 }'; }
calls0=$(redis-cli -p "$RPORT" info commandstats | awk -F'[=,:]' '/^cmdstat_evalsha/ { print $3 }')
b0=$(metric xrl_http_redis_batches_total)
hey_codes "http://127.0.0.1:$HTTP_PORT_a/check" 200 20 -H 'X-Original-URI: /' -H 'X-Client: c2' >/dev/null
calls1=$(redis-cli -p "$RPORT" info commandstats | awk -F'[=,:]' '/^cmdstat_evalsha/ { print $3 }')
b1=$(metric xrl_http_redis_batches_total)
check "200 decisions, $((calls1 - calls0)) EVALSHA calls (Redis' own count)" "$calls1 - $calls0 == 200"
check "pipelined: 200 calls in $((b1 - b0)) batches (20 clients at once)" "$b1 - $b0 < 200"
curl -s -m 5 "http://127.0.0.1:$HTTP_PORT_a/metrics" | grep -q '^xrl_http_redis_call_seconds_bucket{instance="default",le="+Inf"} [1-9]' &&
	ok "the Redis latency histogram counts the calls" || bad "no Redis latency histogram in /metrics"

section "30 requests over 30 s against 10 per minute, two xrl http behind one nginx"
printf 'm --key ip --rate 10/m --algo fixed-window\n' >"$XRLT_TMP/local.rules"
printf 'm --key ip --rate 10/m --algo fixed-window --global\n' >"$XRLT_TMP/global.rules"
http_start l1 "$XRLT_TMP/local.rules"
http_start l2 "$XRLT_TMP/local.rules"
http_start g1 "$XRLT_TMP/global.rules" --redis "$RURL" --redis-timeout $TMO
http_start g2 "$XRLT_TMP/global.rules" --redis "$RURL" --redis-timeout $TMO
http_nginx loc "$HTTP_PORT_l1" "$HTTP_PORT_l2"
http_nginx glo "$HTTP_PORT_g1" "$HTTP_PORT_g2"
# the 30 s inside one UTC minute: start between :01 and :25
/usr/bin/python3 -c '
import time
s = time.time() % 60
if not 1 <= s <= 25: time.sleep((61 - s) % 60)'
nl=0 ng=0
for i in $(seq 30); do
	t=$(date +%s.%N)
	[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NGINX_PORT_loc/")" = 200 ] && nl=$((nl + 1))
	[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NGINX_PORT_glo/")" = 200 ] && ng=$((ng + 1))
	/usr/bin/python3 -c "import time; time.sleep(max(0, $t + 1 - time.time()))"
done
check "per-instance memory: 20 pass (got $nl)" "$nl == 20"
check "--global: 10 pass (got $ng)" "$ng == 10"

section "--on-redis-failure with Redis stopped (SIGSTOP) and killed"
printf 'p --key header:X-Client --rate 1/m --burst 1 --global --missing refuse\n' >"$XRLT_TMP/p.rules"
for pol in local open closed; do
	http_start "$pol" "$XRLT_TMP/p.rules" --redis "$RURL" --redis-timeout $TMO --on-redis-failure "$pol"
done
# one request: did it pass, and how long did it take (s)
ask() { curl -s -m 5 -o /dev/null -w '%{http_code} %{time_total}' -H 'X-Original-URI: /' -H "X-Client: $2" "http://127.0.0.1:$1/check"; }
for state in stopped killed; do
	if [ "$state" = stopped ]; then kill -STOP "$REDIS_PID"; else kill -CONT "$REDIS_PID"; kill -KILL "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null; fi
	sleep 0.2
	for pol in local open closed; do
		eval "port=\$HTTP_PORT_$pol"
		r1=$(ask "$port" "k-$state") r2=$(ask "$port" "k-$state") r3=$(ask "$port" "k-$state")
		slow=$(awk -v a="${r1#* }" -v b="${r2#* }" -v c="${r3#* }" 'BEGIN { m = a; if (b > m) m = b; if (c > m) m = c; print m }')
		case $pol in
		local) want="200 429 429" ;;   # this service's own memory: 1/m
		open) want="200 200 200" ;;
		closed) want="429 429 429" ;;
		esac
		got="${r1%% *} ${r2%% *} ${r3%% *}"
		check "Redis $state, --on-redis-failure $pol: $want (got $got), each within 0.5 s (slowest ${slow} s)" \
			"\"$got\" == \"$want\" && $slow < 0.5"
	done
done
start_redis
# the service reconnects on its own: a fresh key each try (a 429 from Redis
# and one from the closed policy look alike), for up to 5 s
for i in $(seq 50); do
	c=$(ask "$HTTP_PORT_closed" "k-back-$i")
	[ "${c%% *}" = 200 ] && break
	sleep 0.1
done
check "Redis back: --global decided in Redis again within 5 s (got ${c%% *} after $i tries)" "${c%% *} == 200"

xrlt_finish
