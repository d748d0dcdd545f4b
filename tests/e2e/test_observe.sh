#!/usr/bin/env bash
# Watching xrl from the outside: the daemon's /metrics and /healthz
# (promtool-clean, equal to `xrl stats --json`, scraped by a real Prometheus
# server whose query API returns the same counts), the top-K bound under a
# 100,000-source flood, and limit events (one "limited" line per source, a
# "back under limit" line once it stops, a bounded number under a
# random-source flood).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/fleet_lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
INST=obs$$
MPORT=$((21000 + $$ % 9000))         # the daemon's metrics
PPORT=$((MPORT + 10000))              # Prometheus
FLEET_PORT=$((MPORT + 20000))         # Redis
ABUSER=198.18.0.10
POLITE=198.18.0.20
TOPK=5

xrlt_counted_checks

xrlt_require_root
xrlt_require_cmd trafgen redis-server curl jq promtool prometheus
xrlt_require_bpf
xrlt_init
xrlt_setup_pair
xrlt_on_cleanup "$XRL --instance $INST detach $XRLT_ROOT_IF >/dev/null 2>&1"
"$XRL" --instance "$INST" attach "$XRLT_ROOT_IF" --mode native >/dev/null || xrlt_fail "attach failed"

fleet_redis_start
cat >"$XRLT_TMP/rules" <<EOF
$ABUSER/32 --rate 1000/s --burst 100
$POLITE/32 --rate 1000/s --burst 100
10.0.0.0/8 --rate 1/s --burst 1
198.18.1.0/24 --rate 100/s --global
EOF
"$XRL" --instance "$INST" daemon --rules "$XRLT_TMP/rules" --metrics "127.0.0.1:$MPORT" \
	--metrics-top "$TOPK" --log-format json --quiet-after 1 --sync-interval 100 \
	--redis "redis://127.0.0.1:$FLEET_PORT" >"$XRLT_TMP/daemon.log" 2>&1 &
DAEMON=$!
xrlt_track $DAEMON
M=http://127.0.0.1:$MPORT
for _ in $(seq 50); do curl -sf "$M/healthz" >/dev/null && break; sleep 0.1; done

section "endpoint"
code=$(curl -s -o "$XRLT_TMP/h" -w '%{http_code}' "$M/healthz")
check "/healthz answers 200 ok" "$code == 200"
grep -qx ok "$XRLT_TMP/h" || bad "/healthz body: $(cat "$XRLT_TMP/h")"
code=$(curl -s -o /dev/null -w '%{http_code}' "$M/nope")
check "other paths answer 404" "$code == 404"
ctype=$(curl -s -o /dev/null -w '%{content_type}' "$M/metrics")
[ "$ctype" = "text/plain; version=0.0.4; charset=utf-8" ] && ok "/metrics content type $ctype" ||
	bad "/metrics content type: $ctype"

section "known traffic: the endpoint equals xrl stats --json"
xrlt_trafgen_cfg "$XRLT_TMP/abuser.cfg" "$ABUSER"
xrlt_trafgen_cfg "$XRLT_TMP/polite.cfg" "$POLITE"
xrlt_flood_bg "$XRLT_TMP/abuser.cfg" 2000000 2 "$XRLT_TMP/abuser.log"
FLOOD=$XRLT_LAST_PID
xrlt_paced_bg "$XRLT_TMP/polite.cfg" 200 5ms "$XRLT_TMP/polite.log"
POL=$XRLT_LAST_PID
xrlt_wait "$FLOOD"
xrlt_wait "$POL"
t_stop=$(date +%s.%N)
curl -sf "$M/metrics" >"$XRLT_TMP/metrics" || bad "GET /metrics failed"
"$XRL" --instance "$INST" --json stats >"$XRLT_TMP/stats.json"
if promtool check metrics <"$XRLT_TMP/metrics" >"$XRLT_TMP/promtool.out" 2>&1; then
	ok "promtool check metrics passes on the endpoint's output"
else
	bad "promtool check metrics: $(head -5 "$XRLT_TMP/promtool.out")"
fi
series() { # NAME LABEL-MATCH: the value of the one series of NAME whose labels contain LABEL-MATCH
	grep "^$1{" "$XRLT_TMP/metrics" | grep -F "$2" | awk '{ print $NF }' | head -1
}
for src in "$ABUSER" "$POLITE"; do
	for act in pass drop; do
		field=$([ $act = pass ] && echo passed || echo dropped)
		want=$(jq -r --arg p "$src/32" --arg f "$field" '.rules[] | select(.prefix == $p) | .[$f]' "$XRLT_TMP/stats.json")
		got=$(series xrl_packets_total "rule=\"$src/32\",action=\"$act\"")
		[ -n "$got" ] || bad "xrl_packets_total{rule=$src/32,action=$act} is missing"
		check "xrl_packets_total{rule=$src/32,action=$act} = stats --json $field ($got = $want)" "${got:-0} == $want"
		want=$(jq -r --arg p "$src/32" --arg f "${field}_bytes" '.rules[] | select(.prefix == $p) | .[$f]' "$XRLT_TMP/stats.json")
		got=$(series xrl_bytes_total "rule=\"$src/32\",action=\"$act\"")
		[ -n "$got" ] || bad "xrl_bytes_total{rule=$src/32,action=$act} is missing"
		check "xrl_bytes_total{rule=$src/32,action=$act} = stats --json ${field}_bytes" "${got:-0} == $want"
	done
done
want=$(jq -r '.rules[] | select(.prefix == "'$ABUSER'/32") | .dropped' "$XRLT_TMP/stats.json")
check "the flood was limited (dropped $want)" "$want > 100000"
for fam in xrl_malformed_packets_total xrl_sources_tracked xrl_sources_capacity \
	xrl_source_evictions_total xrl_rules xrl_redis_up xrl_redis_errors_total \
	xrl_redis_sync_duration_seconds xrl_fleet_share xrl_top_source_dropped_packets; do
	grep -q "^# TYPE $fam " "$XRLT_TMP/metrics" && ok "family $fam is exported" || bad "family $fam missing"
done
got=$(series xrl_redis_up "")
check "xrl_redis_up is 1 with redis running" "${got:-0} == 1"
got=$(series xrl_top_source_dropped_packets "source=\"$ABUSER\"")
check "the flooding source is a top dropped source (${got:-none})" "${got:-0} > 100000"

section "a real Prometheus server scrapes the daemon"
cat >"$XRLT_TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: xrl
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
EOF
(cd "$XRLT_TMP" && exec prometheus --config.file="$XRLT_TMP/prometheus.yml" \
	--storage.tsdb.path="$XRLT_TMP/tsdb" --web.listen-address="127.0.0.1:$PPORT") \
	>"$XRLT_TMP/prometheus.log" 2>&1 &
xrlt_track $!
P=http://127.0.0.1:$PPORT
want=$(jq -r '.rules[] | select(.prefix == "'$ABUSER'/32") | .passed' "$XRLT_TMP/stats.json")
wantd=$(jq -r '.rules[] | select(.prefix == "'$ABUSER'/32") | .dropped' "$XRLT_TMP/stats.json")
got=
for _ in $(seq 60); do
	got=$(curl -sf -G "$P/api/v1/query" \
		--data-urlencode "query=xrl_packets_total{instance=\"$INST\",rule=\"$ABUSER/32\",action=\"pass\"}" |
		jq -r '.data.result[0].value[1] // empty' 2>/dev/null)
	[ -n "$got" ] && break
	sleep 0.5
done
check "Prometheus query API: passed packets of $ABUSER/32 = stats --json (${got:-no answer} = $want)" "${got:-0} == $want"
gotd=$(curl -sf -G "$P/api/v1/query" \
	--data-urlencode "query=xrl_packets_total{instance=\"$INST\",rule=\"$ABUSER/32\",action=\"drop\"}" |
	jq -r '.data.result[0].value[1] // empty')
check "Prometheus query API: dropped packets of $ABUSER/32 = stats --json (${gotd:-no answer} = $wantd)" "${gotd:-0} == $wantd"
up=$(curl -sf -G "$P/api/v1/query" --data-urlencode 'query=up{job="xrl"}' | jq -r '.data.result[0].value[1] // empty')
check "Prometheus sees the target up" "${up:-0} == 1"

section "limit events"
for _ in $(seq 40); do grep -q '"back under limit"' "$XRLT_TMP/daemon.log" && break; sleep 0.1; done
n_lim=$(jq -c "select(.msg == \"limited\" and .source == \"$ABUSER\")" "$XRLT_TMP/daemon.log" | wc -l)
n_back=$(jq -c "select(.msg == \"back under limit\" and .source == \"$ABUSER\")" "$XRLT_TMP/daemon.log" | wc -l)
n_pol=$(jq -c "select(.source == \"$POLITE\")" "$XRLT_TMP/daemon.log" | wc -l)
check "the flood produced one \"limited\" line for its source ($n_lim)" "$n_lim == 1"
check "and one \"back under limit\" line after it stopped ($n_back)" "$n_back == 1"
# quiet for --quiet-after 1 s, plus the 100 ms between last-drop refreshes and a round
t_back=$(jq -r "select(.msg == \"back under limit\" and .source == \"$ABUSER\") | .time" "$XRLT_TMP/daemon.log" | head -1)
t_back=$([ -n "$t_back" ] && date -d "$t_back" +%s.%N || echo 0)
check "it came quiet-after (1 s) after the flood stopped ($(xrlt_calc "$t_back - $t_stop") s)" \
	"$t_back - $t_stop >= 0.9 && $t_back - $t_stop <= 2.5"
check "the polite source produced no event ($n_pol)" "$n_pol == 0"
jq -s -e "[.[] | select(.msg == \"limited\")] | length == 1 and
	all(.rule == \"$ABUSER/32\" and (.time | length > 0) and .level == \"info\" and .instance == \"$INST\")" \
	"$XRLT_TMP/daemon.log" >/dev/null && ok "event lines are JSON with time, level, source and rule" ||
	bad "event line fields: $(grep limited "$XRLT_TMP/daemon.log" | head -1)"

section "a flood of 100,000 random sources: top-K bound and event bound"
# 100,000 addresses from 10.0.0.0 (trafgen takes the range as integers)
xrlt_trafgen_cfg "$XRLT_TMP/random.cfg" "drnd(167772160, 167872159)"
before=$(jq -c 'select(.msg == "limited")' "$XRLT_TMP/daemon.log" | wc -l)
t0=$(date +%s.%N)
xrlt_flood_bg "$XRLT_TMP/random.cfg" 3000000 3 "$XRLT_TMP/random.log"
xrlt_wait "$XRLT_LAST_PID"
secs=$(xrlt_calc "$(date +%s.%N) - $t0")
sleep 0.3
after=$(jq -c 'select(.msg == "limited")' "$XRLT_TMP/daemon.log" | wc -l)
sources=$(jq -r '.sources' <("$XRL" --instance "$INST" --json stats))
curl -sf "$M/metrics" >"$XRLT_TMP/metrics2"
ntop=$(grep -c '^xrl_top_source_dropped_packets{' "$XRLT_TMP/metrics2")
printf '        %s sources tracked; %d top-source series; %d "limited" lines in %.1f s\n' \
	"$sources" "$ntop" $((after - before)) "$secs"
check "tens of thousands of sources tracked ($sources)" "$sources > 30000"
check "at most --metrics-top $TOPK top-source series ($ntop)" "$ntop <= $TOPK && $ntop >= 1"
# the kernel bounds the events (100/s); the daemon logs at most 20 lines per rule in 10 s
# (the flood may straddle two of its windows) and sums up the rest
check "limited lines bounded: <= 2 x 20 for the flood's rule ($((after - before)) in $secs s)" \
	"$after - $before <= 40 && $after - $before >= 1"
promtool check metrics <"$XRLT_TMP/metrics2" >/dev/null 2>&1 && ok "promtool still passes" || bad "promtool fails after the random flood"

kill -0 "$DAEMON" 2>/dev/null && ok "the daemon is still running" || bad "the daemon died: $(tail -3 "$XRLT_TMP/daemon.log")"
xrlt_cleanup
xrlt_result
[ ${#XRLT_FAILS[@]} -eq 0 ]
