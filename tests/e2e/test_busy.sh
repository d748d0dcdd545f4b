#!/usr/bin/env bash
# tests/e2e/test_busy.sh: a busy real client that a --syn rule limits is
# told from spoofed SYNs, in `xrl top` and in the daemon's events.
#
#   netns C (clients)                      netns S (server)
#   c0 198.18.0.2/24  ==================== s0 198.18.0.1/24
#   the busy client (real TCP), hping3     echo listener on :8080, xrl on s0
#
# Rule: 0.0.0.0/0 --proto tcp --dport 8080 --syn --rate 20/s --burst 40.
#  1. the client opens connections as fast as 8 threads can (each sends and
#     reads back 100 bytes, then closes), for $SECS s or $MAX connections:
#     its SYNs go over the rule and some are dropped, while its connections
#     send established segments: `xrl top --json` marks it busy_client
#     "proven" (the kernel in S has its connections), the text view says
#     "busy client (completes handshakes)" and its advice, so does `top
#     --watch` (in a private tmux server), and the daemon's "limited" line
#     for it carries busy_client "proven";
#  2. hping3 sends $SPOOF SYNs from the spoofed 10.99.0.7 (no route to it
#     anywhere: S's SYN-ACKs go nowhere): limited, not marked;
#  3. hping3 sends SYNs and then bare ACKs from the spoofed 10.99.0.8: a
#     sighting only, busy_client "seen", never "proven".
# Needs root, BPF, nsenter, jq, tmux, hping3 and Debian's python3. Every load is
# bounded by count and by timeout(1). Takes about 20 s.
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
PY=/usr/bin/python3
PEER=$XRLT_REPO/tests/e2e/synproxy_peer.py
SECS=${SECS:-6}
MAX=${MAX:-3000}
SPOOF=${SPOOF:-400}
INST=$XRLT_NAME
NS_C=${XRLT_NAME}c
NS_S=${XRLT_NAME}s
RULE="0.0.0.0/0 --proto tcp --dport 8080 --syn"
# shellcheck disable=SC2034  # used by the cleanup hook (a string run later)
PIN_DIR=/sys/fs/bpf/xrl/$INST

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd ip nsenter jq timeout hping3 tmux
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (make build/xrl, or set XRL=)"
xrlt_init

xs() { nsenter --net=/run/netns/"$NS_S" "$XRL" --instance "$INST" "$@"; }
tm() { tmux -S "$XRLT_TMP/tmux.sock" -f /dev/null "$@"; }
xrlt_on_cleanup 'tm kill-server >/dev/null 2>&1; true'
# shellcheck disable=SC2016  # expanded when the hook runs
xrlt_on_cleanup 'xs detach s0 >/dev/null 2>&1; [ -d "$PIN_DIR" ] && rm -rf "$PIN_DIR"; ip netns del "$NS_C" 2>/dev/null; ip netns del "$NS_S" 2>/dev/null; true'

# ---- topology
for ns in "$NS_C" "$NS_S"; do
	ip netns add "$ns" || xrlt_fail "cannot create namespace $ns"
	ip -n "$ns" link set lo up
done
ip -n "$NS_C" link add c0 type veth peer name s0 netns "$NS_S" || xrlt_fail "cannot create c0/s0"
ip -n "$NS_C" addr add 198.18.0.2/24 dev c0
ip -n "$NS_S" addr add 198.18.0.1/24 dev s0
ip -n "$NS_C" link set c0 up && ip -n "$NS_S" link set s0 up || xrlt_fail "cannot bring the links up"
sleep 0.5

# ---- listener, xrl, daemon in S
ip netns exec "$NS_S" timeout 120 "$PY" "$PEER" serve 0.0.0.0 8080 /dev/null \
	>/dev/null 2>"$XRLT_TMP/serve.err" &
xrlt_track $!
xs attach s0 >/dev/null 2>"$XRLT_TMP/err" || xrlt_fail "xrl attach s0: $(cat "$XRLT_TMP/err")"
echo "$RULE --rate 20/s --burst 40" >"$XRLT_TMP/rules"
log=$XRLT_TMP/daemon.log
(exec nsenter --net=/run/netns/"$NS_S" timeout -k 3 90 "$XRL" --instance "$INST" daemon \
	--rules "$XRLT_TMP/rules" --log-format json --quiet-after 30) >"$log" 2>&1 &
xrlt_track $!
daemon=$!
for _ in $(seq 50); do grep -q '"started' "$log" && break; sleep 0.1; done
grep -q '"started' "$log" || xrlt_fail "the daemon did not start: $(cat "$log")"

# ---- 1. the busy client: 8 threads of short connections, bounded by time and count
cat >"$XRLT_TMP/client.py" <<'EOF'
import socket, sys, threading, time
secs, cap = float(sys.argv[1]), int(sys.argv[2])
end = time.monotonic() + secs
lock = threading.Lock()
n = {"ok": 0, "fail": 0, "started": 0}
def run():
    while time.monotonic() < end:
        with lock:
            if n["started"] >= cap:
                return
            n["started"] += 1
        try:
            c = socket.create_connection(("198.18.0.1", 8080), timeout=3)
            c.sendall(b"x" * 100)
            got = b""
            while len(got) < 100:
                d = c.recv(100 - len(got))
                if not d:
                    break
                got += d
            c.close()
            with lock:
                n["ok"] += 1
        except OSError:
            with lock:
                n["fail"] += 1
ts = [threading.Thread(target=run) for _ in range(8)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(n["ok"], n["fail"])
EOF
ip netns exec "$NS_C" timeout 30 "$PY" "$XRLT_TMP/client.py" "$SECS" "$MAX" >"$XRLT_TMP/client.out" 2>&1 &
xrlt_track $!
client=$!
sleep 2   # the client is over its limit by now, and still connecting

# ---- 2. spoofed SYNs from 10.99.0.7; 3. SYNs then bare ACKs from 10.99.0.8
ip netns exec "$NS_C" timeout 10 hping3 -q -S -p 8080 -a 10.99.0.7 -c "$SPOOF" -i u2000 198.18.0.1 \
	>"$XRLT_TMP/hping7.out" 2>&1
ip netns exec "$NS_C" timeout 10 hping3 -q -S -p 8080 -a 10.99.0.8 -c "$SPOOF" -i u2000 198.18.0.1 \
	>"$XRLT_TMP/hping8.out" 2>&1
ip netns exec "$NS_C" timeout 10 hping3 -q -A -p 8080 -a 10.99.0.8 -c 50 -i u10000 198.18.0.1 \
	>"$XRLT_TMP/hping8a.out" 2>&1
xs --json top -n 100 >"$XRLT_TMP/top.json" 2>"$XRLT_TMP/top.err"
xs top -n 100 >"$XRLT_TMP/top.txt" 2>&1
# the live view, in a private tmux server: it ends by itself after 6 s
tm new-session -d -s top -x 240 -y 40 \
	"nsenter --net=/run/netns/$NS_S timeout --foreground 6 $XRL --instance $INST top --watch; sleep 3" ||
	xrlt_fail "tmux cannot start a session for top --watch"
for _ in $(seq 40); do
	tm capture-pane -p -t top 2>/dev/null | grep -q "busy client (completes handshakes):" && break
	sleep 0.1
done
tm capture-pane -p -t top >"$XRLT_TMP/watch.txt" 2>&1
xrlt_wait "$client" || true
sleep 1.5   # the daemon's held lines (1 s at most)
kill -TERM "$daemon" 2>/dev/null
xrlt_wait "$daemon" || true

read -r ok fail <"$XRLT_TMP/client.out" || true
xrlt_log "busy client: ${ok:-?} connections completed, ${fail:-?} failed"
sed 's/^/        /' "$XRLT_TMP/top.txt"
mark() { jq -r --arg s "$1" '[.[] | select(.source == $s)][0] | if . == null then "absent" else (.busy_client // "none") end' "$XRLT_TMP/top.json"; }
evmark() { jq -r --arg s "$1" 'select(.msg == "limited" and .source == $s) | .busy_client // "none"' "$log" | head -1; }

section "1. a real client over the SYN limit"
check "the client completed connections (${ok:-0}) and the rule dropped some of its SYNs" \
	"${ok:-0} >= 100 && $(xs --json stats | jq '[.rules[].dropped] | add // 0') > 0"
m=$(mark 198.18.0.2)
check "xrl top --json: 198.18.0.2 is a busy client, proven ($m)" "\"$m\" == \"proven\""
grep -q "198.18.0.2 .*busy client (completes handshakes)" "$XRLT_TMP/top.txt"
check "xrl top: its row says busy client (completes handshakes)" "$? == 0"
grep -q "^busy client (completes handshakes): .*--rate/--burst.*keepalive" "$XRLT_TMP/top.txt"
check "xrl top: the advice is the rule's rate or an allow rule or keepalive, not an attacker's" "$? == 0"
grep -q "198.18.0.2 .*busy client (completes handshakes)" "$XRLT_TMP/watch.txt" &&
	grep -q "^busy client (completes handshakes): " "$XRLT_TMP/watch.txt"
w=$?
check "xrl top --watch: its row is marked, the advice under the table" "$w == 0"
[ "$w" = 0 ] || sed 's/^/        /' "$XRLT_TMP/watch.txt"
e=$(evmark 198.18.0.2)
check "the daemon's limited line for it: busy_client proven ($e)" "\"$e\" == \"proven\""

section "2. spoofed SYNs from 10.99.0.7"
m=$(mark 10.99.0.7)
check "xrl top --json: 10.99.0.7 is limited, not marked ($m)" "\"$m\" == \"none\""
e=$(evmark 10.99.0.7)
check "its limited line carries no mark ($e)" "\"$e\" == \"none\""

section "3. spoofed SYNs and bare ACKs from 10.99.0.8"
m=$(mark 10.99.0.8)
check "xrl top --json: 10.99.0.8 is seen, not proven ($m)" "\"$m\" == \"seen\""
jq -c 'select(.msg == "limited")' "$log" | sed 's/^/        /'

xrlt_finish
