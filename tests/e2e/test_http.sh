#!/usr/bin/env bash
# xrl http, the request layer, through a real nginx (auth_request) and
# directly (/check) with real HTTP clients (curl, hey): the literature's
# cases, trusted proxies and X-Forwarded-For, per-account and per-address
# rules at once, the missing-key policy, the leaky bucket's queue, bad rules
# and bad requests. Every load is bounded in count and by timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
XRL=${XRL:-build/xrl}
xrlt_counted_checks
xrlt_require_cmd nginx hey curl /usr/bin/python3
xrlt_init

# ---------------------------------------------------------------------------
section "token bucket of 10 refilled 5/s, through nginx"
cat >"$XRLT_TMP/tb.rules" <<'EOF'
# the literature's token bucket: 10 at once, then 5 a second
tb --key ip --rate 5/s --burst 10
EOF
http_start tb "$XRLT_TMP/tb.rules"
http_nginx tb "$HTTP_PORT_tb"
url=http://127.0.0.1:$NGINX_PORT_tb/
t0=$(date +%s.%N)
r1=$(hey_codes "$url" 20 20)
# "t=1 s": any time in [1.0, 1.2) s after the first request gives 5 (the 6th token
# comes at 1.2 s); aim at the middle, as hey's start-up delays differ by tens of ms
/usr/bin/python3 -c "import time; time.sleep(max(0, $t0 + 1.1 - time.time()))"
r2=$(hey_codes "$url" 10 10)
a1=$(code_count 200 <<<"$r1") d1=$(code_count 429 <<<"$r1")
a2=$(code_count 200 <<<"$r2") d2=$(code_count 429 <<<"$r2")
check "20 at t=0: 10 accepted, 10 refused with 429 (got $a1/$d1)" "$a1 == 10 && $d1 == 10"
check "10 more at t=1 s: 5 accepted, 5 refused (got $a2/$d2)" "$a2 == 5 && $d2 == 5"

section "every refusal: 429 with Retry-After and the RateLimit fields; waiting Retry-After is enough"
hdr=$XRLT_TMP/refused.hdr
for i in $(seq 12); do
	code=$(curl -s -m 5 -o /dev/null -D "$hdr" -w '%{http_code}' "$url")
	[ "$code" = 429 ] && break
done
ra=$(awk -F': ' 'tolower($1) == "retry-after" { gsub("\r", "", $2); print $2 }' "$hdr")
rl=$(awk -F': ' '$1 == "RateLimit" { gsub("\r", "", $2); print $2 }' "$hdr")
rp=$(awk -F': ' '$1 == "RateLimit-Policy" { gsub("\r", "", $2); print $2 }' "$hdr")
check "a refusal is a 429 (got $code)" "\"$code\" == \"429\""
check "Retry-After is whole seconds >= 1 (got '$ra')" "\"$ra\" ~ /^[0-9]+\$/ && $ra + 0 >= 1"
[[ $rl =~ ^\"tb\"\;r=0\;t=[0-9]+$ ]] && ok "RateLimit: $rl" || bad "RateLimit field: '$rl'"
[[ $rp == '"tb";q=5;w=1' ]] && ok "RateLimit-Policy: $rp" || bad "RateLimit-Policy field: '$rp'"
sleep "${ra:-1}"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$url")
check "after waiting Retry-After ($ra s) the request is accepted (got $code)" "\"$code\" == \"200\""

# ---------------------------------------------------------------------------
section "20 simultaneous requests against a limit of 10 pass exactly 10"
cat >"$XRLT_TMP/race.rules" <<'EOF'
race --key ip --rate 10/m --burst 10
EOF
http_start race "$XRLT_TMP/race.rules"
http_nginx race "$HTTP_PORT_race"
r=$(hey_codes "http://127.0.0.1:$NGINX_PORT_race/" 20 20)
a=$(code_count 200 <<<"$r") d=$(code_count 429 <<<"$r")
check "through nginx: 10 accepted, 10 refused (got $a/$d)" "$a == 10 && $d == 10"
# 10 at once: nginx holds up to 20 idle keep-alive connections from 127.0.0.1, and the
# server takes 32 from one address
r=$(hey_codes "http://127.0.0.1:$HTTP_PORT_race/check" 20 10 -H "X-Original-URI: /other" -H "X-User: x")
a=$(code_count 200 <<<"$r") d=$(code_count 429 <<<"$r")
check "/check, the same key's budget already spent: 0 accepted, 20 refused (got $a/$d)" "$a == 0 && $d == 20"

section "the same through a unix socket between nginx and xrl http"
http_start_unix raceu "$XRLT_TMP/race.rules"
chmod 755 "$XRLT_TMP"
http_nginx raceu "unix:$HTTP_SOCK_raceu"
r=$(hey_codes "http://127.0.0.1:$NGINX_PORT_raceu/" 20 20)
a=$(code_count 200 <<<"$r") d=$(code_count 429 <<<"$r")
check "through nginx over unix:$HTTP_SOCK_raceu: 10 accepted, 10 refused (got $a/$d)" "$a == 10 && $d == 10"
hdr=$(curl -s -m 5 -D - -o /dev/null "http://127.0.0.1:$NGINX_PORT_raceu/")
[[ $hdr == *"Retry-After: "[0-9]* && $hdr == *'RateLimit: "race";r=0;t='* ]] && ok "its refusals carry Retry-After and RateLimit" ||
	bad "headers over the unix socket: $hdr"
stop_sock=$HTTP_SOCK_raceu
xrlt_stop_pid "$HTTP_PID_raceu"
[ -e "$stop_sock" ] && bad "the socket file stays after SIGTERM" || ok "SIGTERM removes the socket file"

# ---------------------------------------------------------------------------
section "fixed window 10/s: 10 at 0.90 s and 10 at 1.05 s all pass; sliding log refuses the second 10"
cat >"$XRLT_TMP/win.rules" <<'EOF'
fw --key ip --rate 10/s --algo fixed-window --path /fw
sl --key ip --rate 10/s --algo sliding-log --path /sl
EOF
http_start win "$XRLT_TMP/win.rules"
http_nginx win "$HTTP_PORT_win"
for algo in fw sl; do
	sleep_to_fraction 0.90
	t1=$(date +%s.%N)
	r1=$(hey_codes "http://127.0.0.1:$NGINX_PORT_win/$algo" 10 10)
	sleep_to_fraction 0.05 0
	t2=$(date +%s.%N)
	r2=$(hey_codes "http://127.0.0.1:$NGINX_PORT_win/$algo" 10 10)
	eval "${algo}_1=$(code_count 200 <<<"$r1") ${algo}_2=$(code_count 200 <<<"$r2")"
	eval "${algo}_at='${t1:9:4} s then ${t2:9:4} s'"
done
check "fixed window: 10 + 10 accepted (got $fw_1 + $fw_2; sent at $fw_at)" "$fw_1 == 10 && $fw_2 == 10"
check "sliding log: 10 accepted, then 0 (got $sl_1 + $sl_2; sent at $sl_at)" "$sl_1 == 10 && $sl_2 == 0"

# ---------------------------------------------------------------------------
section "X-Forwarded-For: believed only from trusted proxies (--trusted-proxy repeated), rightmost untrusted"
cat >"$XRLT_TMP/xff.rules" <<'EOF'
one --key ip --rate 1/m --burst 1
EOF
http_start xff "$XRLT_TMP/xff.rules" --trusted-proxy 127.0.0.1 --trusted-proxy 10.0.0.0/8,fd00::/8 --trusted-proxy 192.0.2.0/24
xu=http://127.0.0.1:$HTTP_PORT_xff/check
code_from() { # SOURCE_ADDR XFF
	curl -s -m 5 -o /dev/null -w '%{http_code}' --interface "$1" -H 'X-Original-URI: /' \
		${2:+-H "X-Forwarded-For: $2"} "$xu"
}
c1=$(code_from 127.0.0.7 198.51.100.1) c2=$(code_from 127.0.0.7 198.51.100.2)
check "untrusted peer 127.0.0.7: a forged X-Forwarded-For does not change the key (200 then 429: got $c1 $c2)" \
	"$c1 == 200 && $c2 == 429"
c1=$(code_from 127.0.0.1 198.51.100.1) c2=$(code_from 127.0.0.1 198.51.100.2)
c3=$(code_from 127.0.0.1 198.51.100.1)
check "trusted proxy: each X-Forwarded-For client has its own key (200 200 429: got $c1 $c2 $c3)" \
	"$c1 == 200 && $c2 == 200 && $c3 == 429"
c1=$(code_from 127.0.0.1 "203.0.113.9, 198.51.100.3, 10.1.1.1, 10.2.2.2")
c2=$(code_from 127.0.0.1 "203.0.113.10, 198.51.100.3, 10.9.9.9")
check "three hops: the rightmost untrusted address is the key, whatever stands left of it (200 429: got $c1 $c2)" \
	"$c1 == 200 && $c2 == 429"
c1=$(code_from 127.0.0.1 "2001:db8::1, 2001:db8:0:1::5, fd00::1, 10.0.0.1")
c2=$(code_from 127.0.0.1 "2001:db8:0:1::6, fd12::3")
c3=$(code_from 127.0.0.1 "2001:db8:0:2::6")
check "IPv6 across three hops, keyed by /64 (200 429 200: got $c1 $c2 $c3)" \
	"$c1 == 200 && $c2 == 429 && $c3 == 200"
c1=$(code_from 127.0.0.1 "not-an-address")
check "a trusted proxy's malformed X-Forwarded-For is a 400 (got $c1)" "$c1 == 400"

# ---------------------------------------------------------------------------
section "a login route limited per user and per address at once"
cat >"$XRLT_TMP/login.rules" <<'EOF'
login-user --key header:X-User --rate 3/m --burst 3 --path /login --method POST --missing refuse
login-ip   --key ip --rate 5/m --burst 5 --path /login --method POST
EOF
http_start login "$XRLT_TMP/login.rules" --trusted-proxy 127.0.0.1
lu=http://127.0.0.1:$HTTP_PORT_login/check
login() { # USER ADDR
	curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /login' \
		-H 'X-Original-Method: POST' ${1:+-H "X-User: $1"} -H "X-Forwarded-For: $2" "$lu"
}
seq_codes() { local i out=""; for i in $(seq "$1"); do out="$out$(login "$2" "$3") "; done; echo "$out"; }
s1=$(seq_codes 4 alice 198.51.100.20)
check "alice from one address: 3 pass, the 4th refused by the user rule (got $s1)" \
	"\"$s1\" == \"200 200 200 429 \""
s2=$(seq_codes 3 bob 198.51.100.20)
check "bob from the same address: 2 pass (the address's 5: alice's refusal took none), then refused (got $s2)" \
	"\"$s2\" == \"200 200 429 \""
s3=$(seq_codes 2 bob 198.51.100.21)
check "bob from another address: 1 passes (the address's refusal took none of bob's 3), then refused (got $s3)" \
	"\"$s3\" == \"200 429 \""
c=$(login "" 198.51.100.22)
check "no X-User: --missing refuse refuses (got $c)" "$c == 429"
c=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /login' -H 'X-Original-Method: GET' "$lu")
check "GET /login matches no rule (--method POST): passes (got $c)" "$c == 200"
cat >"$XRLT_TMP/miss.rules" <<'EOF'
api --key header:X-Api-Key --rate 1/m --burst 1 --missing pass
EOF
http_start miss "$XRLT_TMP/miss.rules"
mu=http://127.0.0.1:$HTTP_PORT_miss/check
c1=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' "$mu")
c2=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' "$mu")
c3=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' -H 'X-Api-Key: sk-live-S3CRET' "$mu")
c4=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' -H 'X-Api-Key: sk-live-S3CRET' "$mu")
c5=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' -H 'X-Api-Key: ' "$mu")
check "--missing pass: requests without the key pass and never share an empty key (200 200 200 429 200: got $c1 $c2 $c3 $c4 $c5)" \
	"$c1 == 200 && $c2 == 200 && $c3 == 200 && $c4 == 429 && $c5 == 200"


section "metrics on the service's /metrics"
curl -s -m 5 "http://127.0.0.1:$HTTP_PORT_miss/metrics" >"$XRLT_TMP/miss.metrics"
grep -q '^xrl_http_decisions_total{instance="default",rule="api",result="refuse"} 1$' "$XRLT_TMP/miss.metrics" &&
grep -q '^xrl_http_decisions_total{instance="default",rule="api",result="pass"} 1$' "$XRLT_TMP/miss.metrics" &&
	ok "decisions by rule and result (1 passed, 1 refused: the keyless ones match no rule)" ||
	bad "decisions: $(grep decisions_total "$XRLT_TMP/miss.metrics")"
grep -qE '^xrl_http_top_refused_requests\{instance="default",rule="api",key="hash:[0-9a-f]{16}"\} 1$' "$XRLT_TMP/miss.metrics" &&
	ok "the refused API key is in the top refused keys as a hash" ||
	bad "top refused: $(grep top_refused "$XRLT_TMP/miss.metrics")"
if grep -q S3CRET "$XRLT_TMP/miss.metrics" "$XRLT_TMP/http-miss.log"; then
	bad "the API key shows in the metrics or the log"
else
	ok "the API key shows in neither the metrics nor the log"
fi
curl -s -m 5 "http://127.0.0.1:$HTTP_PORT_tb/metrics" >"$XRLT_TMP/tb.metrics"
grep -qE '^xrl_http_top_refused_requests\{instance="default",rule="tb",key="127.0.0.1"\} [0-9]+$' "$XRLT_TMP/tb.metrics" &&
	ok "an address key is shown as the address" || bad "top refused: $(grep top_refused "$XRLT_TMP/tb.metrics")"

# ---------------------------------------------------------------------------
section "leaky bucket: 20 at once against 5/s with --queue 10"
cat >"$XRLT_TMP/leaky.rules" <<'EOF'
pace --key ip --rate 5/s --algo leaky-bucket --queue 10
EOF
http_start leaky "$XRLT_TMP/leaky.rules"
timeout 30 hey -n 20 -c 20 -o csv -H 'X-Original-URI: /' "http://127.0.0.1:$HTTP_PORT_leaky/check" \
	>"$XRLT_TMP/leaky.csv" 2>/dev/null
# offset + response time: when each answer came, from the first request's start
awk -F, 'NR > 1 && $7 == 200 { printf "%.4f\n", $8 + $1 }' "$XRLT_TMP/leaky.csv" | sort -n >"$XRLT_TMP/leaky.ok"
n200=$(wc -l <"$XRLT_TMP/leaky.ok")
n429=$(awk -F, 'NR > 1 && $7 == 429' "$XRLT_TMP/leaky.csv" | wc -l)
late_refusal=$(awk -F, 'NR > 1 && $7 == 429 && $8 + $1 > m { m = $8 + $1 } END { printf "%.3f", m + 0 }' "$XRLT_TMP/leaky.csv")
read -r spread bad_gap <<<"$(awk 'NR == 1 { f = $1 } NR > 1 { g = $1 - p; if (g < 0.13 || g > 0.30) b++ } { p = $1 }
	END { printf "%.3f %d\n", p - f, b }' "$XRLT_TMP/leaky.ok")"
check "10 answered 200, 10 refused 429 (got $n200 / $n429)" "$n200 == 10 && $n429 == 10"
check "the 10 answers spread over 1.8 s at 200 ms spacing (first to last ${spread} s; gaps outside 130-300 ms: $bad_gap)" \
	"$spread >= 1.7 && $spread <= 2.1 && $bad_gap <= 1"
check "the refusals come at once (the last after ${late_refusal} s)" "$late_refusal < 0.5"
w=$(curl -s -m 5 "http://127.0.0.1:$HTTP_PORT_leaky/metrics" | awk '$1 == "xrl_http_queue_waits_total{instance=\"default\"}" { print $2 }')
check "the metrics count 9 answers held (the first had no wait: got $w)" "\"$w\" == \"9\""

# ---------------------------------------------------------------------------
section "bad rules: refused with line and column; on SIGHUP the old rules stay"
printf 'ok --key ip --rate 1/m\nbad --key ip --rate 10/fortnight\n' >"$XRLT_TMP/bad.rules"
out=$(timeout 10 "$XRL" http --rules "$XRLT_TMP/bad.rules" --listen 127.0.0.1:1 2>&1)
rc=$?
[[ $rc == 1 && $out == *"line 2, column 21"* ]] && ok "a bad file: exit 1, 'line 2, column 21' ($out)" ||
	bad "a bad file: rc $rc, '$out'"
out=$(timeout 10 "$XRL" http --rules "$XRLT_TMP/bad.rules" --bogus 2>&1)
rc=$?
check "an unknown option: exit 2 (got $rc)" "$rc == 2"
printf 'hup --key ip --rate 2/m --burst 2\n' >"$XRLT_TMP/hup.rules"
http_start hup "$XRLT_TMP/hup.rules"
hu=http://127.0.0.1:$HTTP_PORT_hup/check
curl -s -m 5 -o /dev/null -H 'X-Original-URI: /' "$hu"
printf 'hup --key ip --rate 2/m --burst 2\nbroken --key\n' >"$XRLT_TMP/hup.rules"
kill -HUP "$HTTP_PID_hup"
sleep 0.5
c1=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' "$hu")
c2=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' "$hu")
grep -q "line 2, column 13: --key needs a value.*kept" "$XRLT_TMP/http-hup.log" && ok "SIGHUP with a bad file: logged with its line and column, old rules kept" ||
	bad "SIGHUP bad file log: $(tail -2 "$XRLT_TMP/http-hup.log")"
check "the old rules still in force, with their keys' state (200 429: got $c1 $c2)" "$c1 == 200 && $c2 == 429"
printf 'hup --key ip --rate 100/m --burst 100\n' >"$XRLT_TMP/hup.rules"
kill -HUP "$HTTP_PID_hup"
sleep 0.5
c1=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' "$hu")
check "SIGHUP with a good file: the new rules in force (got $c1)" "$c1 == 200"

section "bad requests get clean errors and never crash the service"
c=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$hu")
check "no X-Original-URI: 400 (got $c)" "$c == 400"
big=$(head -c 65536 /dev/zero | tr '\0' a)
c=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' -H "X-Big: $big" "$hu")
check "a 64 KB header: refused with a 4xx (got $c)" "$c >= 400 && $c < 500"
c=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST -H 'X-Original-URI: /' "$hu")
check "POST /check: 405 (got $c)" "$c == 405"
c=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X GET -d 'a body' -H 'X-Original-URI: /' "$hu")
check "GET /check with a body: 413 (got $c)" "$c == 413"
c=$(curl -s -m 5 -o /dev/null -w '%{num_connects} ' -H 'X-Original-URI: /' "$hu" "$hu" "$hu")
check "keep-alive: three requests on one connection (new connections per request: $c)" "\"$c\" == \"1 0 0 \""
/usr/bin/python3 - "$HTTP_PORT_hup" >"$XRLT_TMP/conns.out" 2>&1 <<'PY'
import socket, sys, time
port = int(sys.argv[1]); socks = []
for i in range(1000):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port)); socks.append(s)
    except OSError:
        s.close()
print(len(socks), "opened")
time.sleep(1)
for s in socks: s.close()
PY
c=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' "$hu")
check "after 1,000 concurrent idle connections the service still answers (got $c; $(cat "$XRLT_TMP/conns.out"))" "$c == 200"
kill -0 "$HTTP_PID_hup" 2>/dev/null && ok "the service is still running" || bad "the service died"
# the hardening holds in the event loops too: 32 connections from one address,
# and a connection that sends no request is cut at its header deadline (3 s)
/usr/bin/python3 - "$HTTP_PORT_hup" >"$XRLT_TMP/harden.out" 2>&1 <<'PY'
import socket, sys, time
port = int(sys.argv[1]); socks = []
def closed(s):
    s.settimeout(0.05)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True
for i in range(40):
    s = socket.socket(); s.settimeout(2); s.connect(("127.0.0.1", port)); socks.append(s)
time.sleep(1)
print(sum(closed(s) for s in socks), end=" ")
time.sleep(4)
print(sum(closed(s) for s in socks))
PY
read -r early late <"$XRLT_TMP/harden.out"
check "40 idle connections from one address: 8 over the cap of 32 closed at once (got ${early:-?}: $(cat "$XRLT_TMP/harden.out"))" "${early:-0} == 8"
check "and all 40 cut by the header deadline 5 s later (got ${late:-?})" "${late:-0} == 40"
c=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'X-Original-URI: /' "$hu")
check "then a request is answered (got $c)" "$c == 200"

section "the systemd unit xrl-http@.service"
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$XRLT_TMP/unit"
	sed "s|/usr/local/sbin/xrl|$(realpath "$XRL")|g" "$XRLT_REPO/scripts/systemd/xrl-http@.service" \
		>"$XRLT_TMP/unit/xrl-http@.service"
	out=$(systemd-analyze verify "$XRLT_TMP/unit/xrl-http@t.service" 2>&1 | grep -v "man xrl(8)\|man:xrl(8)")
	[ -z "$out" ] && ok "systemd-analyze verify finds nothing wrong" || bad "systemd-analyze verify: $out"
	score=$(systemd-analyze security --offline=true "$XRLT_TMP/unit/xrl-http@.service" 2>&1 |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	check "its exposure level is at most 2.0 (got $score)" "\"$score\" != \"\" && $score <= 2.0"
else
	bad "systemd-analyze is missing (deps.sh installs systemd)"
fi

xrlt_finish
