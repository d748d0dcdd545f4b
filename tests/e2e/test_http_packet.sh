#!/usr/bin/env bash
# A request rule and a packet rule share one budget (xrl http --packet-rule):
# a real redis-server on a loopback port, an xrl instance on a veth pair (a
# namespace sending to it) with its `xrl daemon` reporting the data path's
# admissions each round, and `xrl http` on the same instance and Redis. A
# source that spends half its budget in packets then has only the other half
# for its requests; a source that sent no packets has the whole budget; the
# budget is the daemon's key, and the request layer writes no key of its own.
# Every load is bounded in count and by timeout(1).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/fleet_lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/http_lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd trafgen redis-server redis-cli jq curl /usr/bin/python3
xrlt_require_bpf
xrlt_init

FLEET_PORT=$(http_free_port)
FLEET_INTERVAL=100
FLEET_RULES=$XRLT_TMP/rules
# 10 a minute per source: one token every 6 s, so a few seconds of test
# time cannot refill one
printf '%s\n' '198.18.0.0/16 --rate 10/m --burst 10 --global' \
	'198.19.0.0/16 --rate 10/m --algo fixed-window --global' >"$FLEET_RULES"

section "setup: redis, an instance on a veth pair, its daemon, xrl http on the same instance"
fleet_redis_start
fleet_host_create 1
fleet_daemon_start 1
INST=$(fleet_inst 1)
for i in $(seq 50); do
	grep -q connected "$XRLT_TMP/daemon1.log" && break
	sleep 0.1
done
grep -q connected "$XRLT_TMP/daemon1.log" && ok "the daemon connected to redis" ||
	xrlt_fail "the daemon did not connect: $(tail -3 "$XRLT_TMP/daemon1.log")"
ID=$("$XRL" --instance "$INST" --json rule list | jq -r '.[] | select(.prefix == "198.18.0.0/16") | .id')
[ -n "$ID" ] || xrlt_fail "the daemon did not load the rules file"

printf '%s\n' 'p --key ip --rate 10/m --burst 10 --packet-rule 198.18.0.0/16' \
	'w --key ip --rate 10/m --algo fixed-window --packet-rule 198.19.0.0/16' >"$XRLT_TMP/http.rules"
HPORT=$(http_free_port)
"$XRL" --instance "$INST" http --rules "$XRLT_TMP/http.rules" --listen "127.0.0.1:$HPORT" \
	--trusted-proxy 127.0.0.1 --redis "$(fleet_redis_url)" --redis-timeout 50 \
	>"$XRLT_TMP/http.log" 2>&1 &
HTTP_PID=$!
xrlt_track $HTTP_PID
http_wait_url "http://127.0.0.1:$HPORT/healthz" ||
	xrlt_fail "xrl http did not answer: $(tail -3 "$XRLT_TMP/http.log")"

# asks N SRC: of N requests from client SRC (behind the trusted proxy), how many passed
asks() {
	local n=0 k
	for k in $(seq "$1"); do
		[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' \
			-H "X-Forwarded-For: $2" "http://127.0.0.1:$HPORT/check")" = 200 ] && n=$((n + 1))
	done
	echo "$n"
}
# key_of SRC: the daemon's key of the source (waits up to 3 s for its round)
key_of() {
	local k i
	for i in $(seq 30); do
		k=$(fleet_redis_scan "xrl:{*:$1}" | head -1)
		[ -n "$k" ] && { echo "$k"; return; }
		sleep 0.1
	done
}

section "half the budget spent in packets leaves the other half for requests"
fleet_cfg "$XRLT_TMP/a.cfg" 198.18.7.7
fleet_send_once 1 "$XRLT_TMP/a.cfg" 5
passed=$(fleet_passed 1 198.18.0.0/16)
check "the data path admitted the source's 5 packets (got $passed)" "${passed:-0} == 5"
key=$(key_of 198.18.7.7)
check "the daemon reported them under the rule's key (${key:-none})" "-n \"$key\""
debt=$(redis-cli -p "$FLEET_PORT" eval 'local t = redis.call("TIME") return tonumber(redis.call("GET", KEYS[1])) - (t[1] * 1000000 + t[2])' 1 "$key")
check "its budget in Redis is 5 tokens spent (debt $debt us: 29-30 s of 60 s)" \
	"${debt:-0} > 28000000 && ${debt:-0} <= 30000000"
got=$(asks 10 198.18.7.7)
check "10 requests of the same source: 5 pass (got $got)" "$got == 5"
debt=$(redis-cli -p "$FLEET_PORT" eval 'local t = redis.call("TIME") return tonumber(redis.call("GET", KEYS[1])) - (t[1] * 1000000 + t[2])' 1 "$key")
check "the requests took from the same key: the budget is spent (debt $debt us: 55-60 s)" \
	"${debt:-0} > 55000000 && ${debt:-0} <= 60000000"

section "requests first: the packets that follow have what the requests left, from the daemon's next round on"
got=$(asks 6 198.18.7.9)
check "6 requests of a new source pass (got $got)" "$got == 6"
fleet_cfg "$XRLT_TMP/b.cfg" 198.18.7.9
p0=$(fleet_passed 1 198.18.0.0/16)
fleet_send_once 1 "$XRLT_TMP/b.cfg" 1
key_of 198.18.7.9 >/dev/null
sleep 0.5   # the daemon's rounds (100 ms) bring the fleet's debt back to the data path
fleet_send_once 1 "$XRLT_TMP/b.cfg" 9
p1=$(fleet_passed 1 198.18.0.0/16)
check "then 10 packets: the first, and 3 once the daemon brought back the requests' 6 (got $((p1 - p0)))" \
	"$p1 - $p0 == 4"

section "a source without packets has the whole budget; the request layer keeps no key of its own"
got=$(asks 11 198.18.7.8)
check "11 requests of a source that sent no packets: 10 pass (got $got)" "$got == 10"
check "no key of the request layer's own in Redis" \
	"$(redis-cli -p "$FLEET_PORT" --scan --pattern 'xrl:{http:*' | wc -l) == 0"
got=$(asks 3 203.0.113.1)
check "a client outside the packet rule's prefix is not under it: 3 of 3 pass (got $got)" "$got == 3"

section "a fixed window: 4 packets in a UTC minute leave 6 requests"
# inside one UTC minute: start between :01 and :50
/usr/bin/python3 -c '
import time
s = time.time() % 60
if not 1 <= s <= 50: time.sleep((61 - s) % 60)'
fleet_cfg "$XRLT_TMP/w.cfg" 198.19.7.7
p0=$(fleet_passed 1 198.19.0.0/16)
fleet_send_once 1 "$XRLT_TMP/w.cfg" 4
p1=$(fleet_passed 1 198.19.0.0/16)
check "the data path admitted 4 packets (got $((p1 - p0)))" "$p1 - $p0 == 4"
for i in $(seq 30); do
	[ "$(fleet_redis_scan 'xrl:{*:198.19.7.7}:w:*' | xargs -r redis-cli -p "$FLEET_PORT" mget | awk '{ s += $1 } END { print s + 0 }')" = 4 ] && break
	sleep 0.1
done
got=$(asks 10 198.19.7.7)
check "10 requests of the same source: 6 pass (got $got)" "$got == 6"

section "a packet rule that does not fit is refused, naming what to change"
cp "$XRLT_TMP/http.rules" "$XRLT_TMP/http.rules.good"
printf 'p --key ip --rate 10/m --burst 10 --packet-rule 77\n' >"$XRLT_TMP/http.rules"
kill -HUP "$HTTP_PID"
for i in $(seq 30); do grep -q 'rules in force are kept' "$XRLT_TMP/http.log" && break; sleep 0.1; done
check "SIGHUP with a packet rule the instance does not have: refused, the rules in force kept ($(grep -o "rule 'p': --packet-rule 77: [^;]*" "$XRLT_TMP/http.log" | head -1))" \
	"$(grep -c "packet-rule 77: the instance has no rule with id 77.*the rules in force are kept" "$XRLT_TMP/http.log") == 1"
got=$(asks 11 198.18.7.10)
check "and the packet rule's budget still holds: 10 of 11 pass (got $got)" "$got == 10"
cp "$XRLT_TMP/http.rules.good" "$XRLT_TMP/http.rules"
printf 'p --key ip --rate 20/m --burst 10 --packet-rule %s\n' "$ID" >"$XRLT_TMP/bad.rules"
out=$(timeout 10 "$XRL" --instance "$INST" http --rules "$XRLT_TMP/bad.rules" --listen "127.0.0.1:$(http_free_port)" \
	--redis "$(fleet_redis_url)" 2>&1)
rc=$?
check "another --rate: refused at start (status $rc: $out)" \
	"$rc != 0 && $(grep -c 'give this rule its --algo token-bucket, --rate and --burst' <<<"$out") == 1"
out=$(timeout 10 "$XRL" --instance "$INST" http --rules "$XRLT_TMP/http.rules" --listen "127.0.0.1:$(http_free_port)" 2>&1)
rc=$?
check "without --redis: refused at start (status $rc: $out)" \
	"$rc != 0 && $(grep -c 'give --redis' <<<"$out") == 1"

xrlt_finish
