#!/usr/bin/env bash
# The daemon under faults, end to end: real daemons, a real redis-server
# (with requirepass) on a loopback port, real traffic over veth pairs.
#
#  1. the Redis password: --redis-password-file, XRL_REDIS_PASSWORD, a URL's
#     password gone from ps, never in a log line, an error or /metrics;
#  2. Redis refusing writes (maxmemory, noeviction): Redis failing, logged
#     once, xrl_redis_up 0, the failure policy (closed: nothing passes);
#  3. a partial partition (one host given a wrong password): it keeps its
#     last share for the hold (3 s) and then none, the others take the
#     whole budget, the fleet stays at the budget;
#  4. limit events at start: a flood over before the daemon started is not
#     replayed, one still going is logged once and closed;
#  5. a second daemon on the same instance refuses to start, naming the
#     first's PID; a stale pid file (killed daemon) blocks nothing;
#  6. the metrics endpoint under 16 slow clients (slowloris): /healthz
#     keeps answering and the slow clients are cut;
#  7. the instance detached and attached again: the daemon notices and stops.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/fleet_lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac

RATE=100             # the global rule, packets per second fleet-wide
BURST=20
FLOOD_GAP=500us      # trafgen -t: ~1500-1800 packets/s per host, >= 15x RATE
FLEET_INTERVAL=100
FLEET_PORT=$((22000 + $$ % 20000))
MPORT=$((FLEET_PORT + 1))      # host 1's metrics
MPORT3=$((FLEET_PORT + 2))     # host 3's metrics
FLEET_REDIS_PASS="xrl-t3st-$$-pw"
PY=/usr/bin/python3

xrlt_counted_checks

xrlt_require_root
xrlt_require_cmd trafgen redis-server redis-cli jq curl "$PY"
xrlt_require_bpf
xrlt_init

now_s() { fleet_now; }
sleep_until() { fleet_sleep_until "$@"; }
rate_between() { fleet_rate "$@"; }
alive() { kill -0 "$1" 2>/dev/null; }
# wait_exit PID SECONDS: wait for PID to end; its status in WAIT_RC (255: still running)
wait_exit() {
	local i
	WAIT_RC=255
	for i in $(seq $(($2 * 10))); do
		alive "$1" || break
		sleep 0.1
	done
	alive "$1" && return 1
	wait "$1"
	WAIT_RC=$?
	return 0
}

# ------------------------------------------------------------------ setup
section "setup: redis with requirepass on 127.0.0.1:$FLEET_PORT, 3 hosts"
FLEET_RULES=$XRLT_TMP/rules
cat >"$FLEET_RULES" <<EOF
198.18.0.0/16 --rate $RATE/s --burst $BURST --global
EOF
printf '%s\n' "$FLEET_REDIS_PASS" >"$XRLT_TMP/pw"
printf 'not-the-password\n' >"$XRLT_TMP/badpw"
chmod 600 "$XRLT_TMP/pw" "$XRLT_TMP/badpw"
fleet_redis_start
for i in 1 2 3; do fleet_host_create "$i"; done

# ------------------------------------------------------------------ 1. password
section "1. the Redis password: file, environment, URL; never shown"
out=$("$XRL" --instance "$(fleet_inst 1)" daemon --redis "redis://:$FLEET_REDIS_PASS@127.0.0.1:99999" 2>&1)
rc=$?
check "a bad URL with a password is refused (status $rc)" "$rc == 2"
case $out in *"$FLEET_REDIS_PASS"*) bad "the refusal shows the password: $out" ;;
*) ok "the refusal does not show the password: $out" ;; esac

fleet_daemon_start 1 --redis-password-file "$XRLT_TMP/pw" --metrics "127.0.0.1:$MPORT"
D1=${FLEET_DAEMON[1]}
"$XRL" --instance "$(fleet_inst 2)" daemon --redis "redis://:$FLEET_REDIS_PASS@127.0.0.1:$FLEET_PORT" \
	--host-id h2 --sync-interval "$FLEET_INTERVAL" --rules "$FLEET_RULES" >>"$XRLT_TMP/daemon2.log" 2>&1 &
FLEET_DAEMON[2]=$!
xrlt_track $!
sleep 1
for i in 1 2; do
	grep -q "connected: fleet-wide limits in force" "$XRLT_TMP/daemon$i.log" &&
		ok "host $i: the daemon authenticated and connected" ||
		bad "host $i: no connection: $(tail -2 "$XRLT_TMP/daemon$i.log")"
done
if tr '\0' ' ' <"/proc/${FLEET_DAEMON[2]}/cmdline" | grep -qF "$FLEET_REDIS_PASS"; then
	bad "the URL's password is in ps: $(tr '\0' ' ' <"/proc/${FLEET_DAEMON[2]}/cmdline")"
else
	ok "the URL's password is gone from ps: $(tr '\0' ' ' <"/proc/${FLEET_DAEMON[2]}/cmdline")"
fi
fleet_daemon_stop 2
XRL_REDIS_PASSWORD=$FLEET_REDIS_PASS fleet_daemon_start 2
sleep 1
n=$(grep -c "connected: fleet-wide limits in force" "$XRLT_TMP/daemon2.log")
check "XRL_REDIS_PASSWORD: host 2 connected again ($n connections logged)" "$n == 2"
out=$("$XRL" --instance "$(fleet_inst 3)" daemon --redis "redis://:x@127.0.0.1:$FLEET_PORT" \
	--redis-password-file "$XRLT_TMP/pw" 2>&1)
rc=$?
check "a password in the URL and in a file is refused (status $rc: $out)" "$rc == 2"
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$XRLT_TMP/metrics1" || bad "GET /metrics failed"
grep -q '^xrl_redis_up{.*} 1$' "$XRLT_TMP/metrics1" && ok "xrl_redis_up is 1" || bad "xrl_redis_up: $(grep '^xrl_redis_up' "$XRLT_TMP/metrics1")"

# ------------------------------------------------------------------ 2. OOM
# 12 s flood of one source on hosts 1 and 2 under --on-redis-failure closed;
# Redis refuses writes (maxmemory under what it holds, noeviction) from 3.5 s
# to 7.5 s.
section "2. Redis refusing writes (maxmemory, noeviction) is Redis failing"
for i in 1 2; do fleet_daemon_stop "$i"; : >"$XRLT_TMP/daemon$i.log"; done
fleet_daemon_start 1 --redis-password-file "$XRLT_TMP/pw" --on-redis-failure closed --metrics "127.0.0.1:$MPORT"
fleet_daemon_start 2 --redis-password-file "$XRLT_TMP/pw" --on-redis-failure closed
sleep 0.5
fleet_cfg "$XRLT_TMP/oom.cfg" 198.18.6.1
for i in 1 2; do fleet_send_bg "$i" "$XRLT_TMP/oom.cfg" "$FLOOD_GAP" 12 "$XRLT_TMP/oom.$i.log"; done
t0=$(now_s)
s=() ts=()
snap() { sleep_until "$t0" "$1"; ts+=("$(now_s)"); s+=("$(fleet_passed_sum 198.18.0.0/16 1 2)"); }
snap 1.5
snap 3.5
head -c 3000000 /dev/zero | tr '\0' x | fleet_redis_cli -x SET xrl-test-ballast >/dev/null
fleet_redis_cli CONFIG SET maxmemory-policy noeviction >/dev/null
fleet_redis_cli CONFIG SET maxmemory 1mb >/dev/null
refused=$(fleet_redis_cli SET xrl-test-probe 1 2>&1)
case $refused in *OOM*) ok "redis now refuses writes: $refused" ;; *) bad "redis still takes writes: $refused" ;; esac
snap 4.5
sleep_until "$t0" 6
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$XRLT_TMP/metrics2" || bad "GET /metrics failed"
snap 7.5
fleet_redis_cli CONFIG SET maxmemory 0 >/dev/null
snap 8.5
snap 11.5
r_up=$(rate_between "${s[0]}" "${s[1]}" "${ts[0]}" "${ts[1]}")
r_oom=$(rate_between "${s[2]}" "${s[3]}" "${ts[2]}" "${ts[3]}")
r_back=$(rate_between "${s[4]}" "${s[5]}" "${ts[4]}" "${ts[5]}")
printf '        fleet passed/s: redis up %.0f, refusing writes %.0f, taking them again %.0f (limit %d/s)\n' \
	"$r_up" "$r_oom" "$r_back" "$RATE"
check "fleet-wide limit while redis takes writes" "$r_up >= 0.7 * $RATE && $r_up <= 1.3 * $RATE"
check "refusing writes: --on-redis-failure closed applies (nothing passes)" "$r_oom <= 0.05 * $RATE"
check "fleet-wide limit again once redis takes writes" "$r_back >= 0.6 * $RATE && $r_back <= 1.4 * $RATE"
up=$(grep '^xrl_redis_up{' "$XRLT_TMP/metrics2" | awk '{print $NF}')
check "xrl_redis_up is 0 while redis refuses the scripts (${up:-missing})" "${up:-1} == 0"
for i in 1 2; do
	n=$(grep -c "until it answers" "$XRLT_TMP/daemon$i.log")
	m=$(grep -c "is back after" "$XRLT_TMP/daemon$i.log")
	o=$(grep -c "OOM" "$XRLT_TMP/daemon$i.log")
	check "host $i: the refusal logged once, the recovery once (down $n, back $m)" "$n == 1 && $m == 1"
	check "host $i: no line per refused call ($o lines name the OOM error)" "$o == 1"
done
fleet_redis_cli DEL xrl-test-ballast >/dev/null

# ------------------------------------------------------------------ 3. partition
# 14 s flood of one source on hosts 1 and 2 (--on-redis-failure local, the
# default); at 3.5 s host 2's daemon is restarted with a wrong password: it
# cannot reach the fleet, the fleet cannot hear it.
section "3. a partial partition: one host cannot authenticate"
for i in 1 2; do fleet_daemon_stop "$i"; : >"$XRLT_TMP/daemon$i.log"; done
for i in 1 2; do fleet_daemon_start "$i" --redis-password-file "$XRLT_TMP/pw"; done
sleep 0.5
fleet_cfg "$XRLT_TMP/part.cfg" 198.18.7.1
for i in 1 2; do fleet_send_bg "$i" "$XRLT_TMP/part.cfg" "$FLOOD_GAP" 14 "$XRLT_TMP/part.$i.log"; done
t0=$(now_s)
s1=() s2=() ts=()
snap2() { sleep_until "$t0" "$1"; ts+=("$(now_s)"); s1+=("$(fleet_passed 1 198.18.0.0/16)"); s2+=("$(fleet_passed 2 198.18.0.0/16)"); }
snap2 1.5
snap2 3.5
fleet_daemon_stop 2
fleet_daemon_start 2 --redis-password-file "$XRLT_TMP/badpw"
snap2 4                 # the hold: host 2 on its last known share
snap2 6
snap2 8                 # past the hold (3 s) and the others' demand window (3 s)
snap2 13
r1() { rate_between "${s1[$1]}" "${s1[$2]}" "${ts[$1]}" "${ts[$2]}"; }
r2() { rate_between "${s2[$1]}" "${s2[$2]}" "${ts[$1]}" "${ts[$2]}"; }
r_up=$(xrlt_calc "$(r1 0 1) + $(r2 0 1)")
h2_hold=$(r2 2 3)
h1_after=$(r1 4 5)
h2_after=$(r2 4 5)
r_after=$(xrlt_calc "$h1_after + $h2_after")
printf '        before: fleet %.0f/s; hold: host 2 %.0f/s; after: host 1 %.0f/s, host 2 %.0f/s, fleet %.0f/s (limit %d/s)\n' \
	"$r_up" "$h2_hold" "$h1_after" "$h2_after" "$r_after" "$RATE"
check "before the partition: the fleet-wide limit" "$r_up >= 0.7 * $RATE && $r_up <= 1.3 * $RATE"
check "the cut-off host keeps its last known share for the hold (~half: ${h2_hold}/s)" \
	"$h2_hold >= 0.3 * $RATE && $h2_hold <= 0.8 * $RATE"
check "after the hold the cut-off host holds no share (${h2_after}/s)" "$h2_after <= 0.05 * $RATE"
check "after the hold the other host takes the whole budget (${h1_after}/s)" "$h1_after >= 0.7 * $RATE && $h1_after <= 1.3 * $RATE"
check "after the hold the fleet is at its budget, not above it (${r_after}/s)" "$r_after <= 1.2 * $RATE"
n=$(grep -c "unavailable: AUTH refused" "$XRLT_TMP/daemon2.log")
m=$(grep -c "no longer count this host's share" "$XRLT_TMP/daemon2.log")
check "host 2 logged the refused AUTH once ($n) and the end of its share once ($m)" "$n == 1 && $m == 1"
for i in 1 2; do
	if grep -qF "$FLEET_REDIS_PASS" "$XRLT_TMP/daemon$i.log"; then bad "host $i's log shows the password"
	else ok "host $i's log never shows the password"; fi
done
grep -qF "$FLEET_REDIS_PASS" "$XRLT_TMP/metrics1" "$XRLT_TMP/metrics2" && bad "/metrics shows the password" ||
	ok "/metrics never shows the password"
for i in 1 2; do fleet_daemon_stop "$i"; done

# ------------------------------------------------------------------ 4. events at start
# Host 3, local rules, no Redis: source A floods and stops before the daemon
# starts; source B floods across the start.
section "4. limit events at start: from the current state"
I3=$(fleet_inst 3)
cat >"$XRLT_TMP/rules3" <<EOF
198.18.5.10/32 --rate 100/s --burst 10
198.18.5.20/32 --rate 100/s --burst 10
EOF
"$XRL" --instance "$I3" rule load "$XRLT_TMP/rules3" >/dev/null || bad "rule load on host 3 failed"
fleet_cfg "$XRLT_TMP/evA.cfg" 198.18.5.10
fleet_cfg "$XRLT_TMP/evB.cfg" 198.18.5.20
fleet_send_bg 3 "$XRLT_TMP/evA.cfg" "$FLOOD_GAP" 1.5 "$XRLT_TMP/evA.log"
sleep 3.5
fleet_send_bg 3 "$XRLT_TMP/evB.cfg" "$FLOOD_GAP" 4 "$XRLT_TMP/evB.log"
sleep 1
start3() {
	"$XRL" --instance "$I3" daemon --log-format json --quiet-after 1 "$@" >>"$XRLT_TMP/daemon3.log" 2>&1 &
	D3=$!
	xrlt_track $D3
}
start3 --metrics "127.0.0.1:$MPORT3"
sleep 6       # B's flood ends 3 s after the start; back under limit 1 s later
evlines() { jq -c --arg s "$1" 'select(.source == $s) | .msg' "$XRLT_TMP/daemon3.log" | tr -d '"' | paste -sd, -; }
a=$(evlines 198.18.5.10)
b=$(evlines 198.18.5.20)
printf '        events of A (flood over before the start): [%s]; of B (flood across it): [%s]\n' "$a" "$b"
[ -z "$a" ] && ok "the flood over before the start is not replayed" || bad "events of the old flood replayed: [$a]"
[ "$b" = "limited,back under limit" ] && ok "the flood going on at the start: limited, then back under limit" ||
	bad "events of the flood across the start: [$b]"

# ------------------------------------------------------------------ 5. one daemon per instance
section "5. a second daemon on the same instance refuses to start"
"$XRL" --instance "$I3" daemon >"$XRLT_TMP/second.log" 2>&1 &
D3b=$!
xrlt_track $D3b
if wait_exit "$D3b" 5; then
	check "the second daemon exits with status 1 ($WAIT_RC)" "$WAIT_RC == 1"
	grep -q "PID $D3\b" "$XRLT_TMP/second.log" && ok "its message names the first's PID: $(cat "$XRLT_TMP/second.log")" ||
		bad "its message does not name PID $D3: $(cat "$XRLT_TMP/second.log")"
else
	bad "a second daemon runs on the same instance"
	xrlt_stop_pid "$D3b"
fi
alive "$D3" && ok "the first daemon runs on" || bad "the first daemon died: $(tail -2 "$XRLT_TMP/daemon3.log")"

# ------------------------------------------------------------------ 6. slowloris
# 16 clients, each sending a request's headers one line a second for up to
# 12 s; /healthz asked every 0.5 s meanwhile (2 s timeout each).
section "6. the metrics endpoint under 16 slow clients"
cat >"$XRLT_TMP/slow.py" <<'PY'
import socket, sys, threading, time
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
cut, opened = [], []
lock = threading.Lock()
def client(k):
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
    except OSError:
        return
    with lock:
        opened.append(k)
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        i = 0
        while time.monotonic() - t0 < secs:
            s.settimeout(1.0)
            try:
                if s.recv(1) == b"":
                    raise ConnectionResetError
            except socket.timeout:
                pass
            s.sendall(b"X-Slow-%d: %d\r\n" % (k, i))
            i += 1
    except OSError:
        with lock:
            cut.append(time.monotonic() - t0)
    s.close()
ts = [threading.Thread(target=client, args=(k,)) for k in range(n)]
for t in ts: t.start()
for t in ts: t.join()
print(len(opened), len(cut), "%.1f" % (max(cut) if cut else -1))
PY
"$PY" "$XRLT_TMP/slow.py" "$MPORT3" 16 12 >"$XRLT_TMP/slow.out" 2>&1 &
SLOW=$!
xrlt_track $SLOW
sleep 0.5
hz_ok=0 hz_bad=0
for _ in $(seq 20); do
	if curl -sf --max-time 2 "http://127.0.0.1:$MPORT3/healthz" >/dev/null; then hz_ok=$((hz_ok + 1))
	else hz_bad=$((hz_bad + 1)); fi
	sleep 0.5
done
wait "$SLOW"
read -r opened ncut maxcut <"$XRLT_TMP/slow.out"
printf '        /healthz: %d answered, %d failed; slow clients: %s connected, %s cut (the last after %s s)\n' \
	"$hz_ok" "$hz_bad" "${opened:-?}" "${ncut:-?}" "${maxcut:-?}"
check "/healthz answered every time under 16 slow clients ($hz_bad failed)" "$hz_bad == 0 && $hz_ok == 20"
check "every slow client got a connection (${opened:-0})" "${opened:-0} == 16"
# a client that is not cut sends for its 12 s and is not counted
check "every slow client was cut before its 12 s were over (${ncut:-0} cut, the last after ${maxcut:-?} s)" \
	"${ncut:-0} == 16"
alive "$D3" && ok "the daemon runs on" || bad "the daemon died: $(tail -2 "$XRLT_TMP/daemon3.log")"

# ------------------------------------------------------------------ 5b. stale lock
section "5. (continued) a daemon killed leaves its pid file: a new one starts"
kill -KILL "$D3"
wait "$D3" 2>/dev/null
: >"$XRLT_TMP/daemon3.log"
start3 --sync-interval 5000
sleep 1
alive "$D3" && grep -q '"started without --redis' "$XRLT_TMP/daemon3.log" &&
	ok "the new daemon started despite the stale pid file" ||
	bad "the new daemon did not start: $(tail -2 "$XRLT_TMP/daemon3.log")"

# ------------------------------------------------------------------ 7. re-attach
section "7. the instance detached and attached again under a running daemon"
"$XRL" --instance "$I3" detach "$(fleet_rif 3)" >/dev/null || bad "detach failed"
"$XRL" --instance "$I3" attach "$(fleet_rif 3)" --mode native >/dev/null || bad "attach again failed"
# one sync interval (5 s) and some slack
if wait_exit "$D3" 8; then
	check "the daemon stopped with status 1 ($WAIT_RC)" "$WAIT_RC == 1"
	jq -r 'select(.level == "error") | .msg' "$XRLT_TMP/daemon3.log" | grep -q "was detached" &&
		ok "it said why: $(jq -r 'select(.level == "error") | .msg' "$XRLT_TMP/daemon3.log" | tail -1)" ||
		bad "no reason logged: $(tail -2 "$XRLT_TMP/daemon3.log")"
else
	bad "the daemon still serves the maps of the old attachment"
fi

xrlt_cleanup
xrlt_result
[ ${#XRLT_FAILS[@]} -eq 0 ]
