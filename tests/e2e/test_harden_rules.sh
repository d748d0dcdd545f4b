#!/usr/bin/env bash
# End-to-end test of rule changes that cannot wipe or truncate the rule set,
# that scale, and that keep no reader waiting:
#
#   1. `rule load` of /dev/zero, of a file with a 300 MB line in the middle
#      (under a 256 MB address-space limit), of a directory and of a file
#      whose read fails: each refused (non-zero exit, the file and line
#      named), the rule set byte-identical (`rule save` before and after)
#   2. the daemon's --rules on SIGHUP (under a 512 MB address-space limit):
#      a file with an over-long line, then the path made a symlink to
#      /dev/zero: each reload refused in the log,
#      the rules in force unchanged; a good file then reloads
#   3. a reader while a rule change is held mid-change (strace delays the
#      change's write of its definitions, under the rule writers' lock):
#      `rule list`, `stats` and the daemon's /metrics answer at once, with
#      the old set
#   4. scale: with 4095 IPv4 or IPv6 rules, one `rule add` takes under 0.5 s
#   5. counters: a shadow rule's rows after --shadow is removed start at 0;
#      a rule added again unchanged keeps its counts
#
#   XRL=path/to/xrl bash tests/e2e/test_harden_rules.sh
#
# Prints every check; the last line is "N passed, M failed". Needs root, BPF,
# strace, prlimit, jq. One veth pair in the root namespace, both ends down
# (no traffic); instance hr<pid>. Takes about 30 s.
# shellcheck disable=SC2015  # "A && B || fail" is meant
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
PIN_ROOT=/sys/fs/bpf/xrl
I=hr$$
V=hr$$v
DPID=

xrlt_counted_checks

cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ -d "$PIN_ROOT/$I" ] && "$XRL" --instance "$I" detach "$V" >/dev/null 2>&1
	[ -e "$PIN_ROOT/$I" ] && { xrlt_warn "pins left in $PIN_ROOT/$I: removing them"; rm -rf "${PIN_ROOT:?}/$I"; }
	ip link del "$V" 2>/dev/null
	rm -f "/run/xrl/$I.rules.lock"
	return 0
}

xrlt_require_root
xrlt_require_cmd ip jq strace prlimit bpftool python3 curl
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (make build/xrl, or set XRL=)"
[ ! -e "$PIN_ROOT/$I" ] || xrlt_fail "$PIN_ROOT/$I exists already: not mine, not touching it"
xrlt_init
xrlt_on_cleanup cleanup
ip link add "$V" type veth peer name "$V"p || xrlt_fail "cannot create veth $V"
must "$I" attach "$V"

cat >"$XRLT_TMP/base.rules" <<'EOF2'
10.1.0.0/16 --rate 50/s
10.2.0.0/16 --deny
2001:db8::/32 --rate 5/s --burst 9
EOF2
must "$I" rule load "$XRLT_TMP/base.rules"
BASE=$("$XRL" --instance "$I" rule save)
unchanged() { [ "$("$XRL" --instance "$I" rule save)" = "$BASE" ]; }

# ================================================================ 1. rule load
section "1. rule load refuses a file it cannot read whole, and changes nothing"
# an endless file, under a memory limit: refused at its first line, not taken for an empty file
out=$(timeout 20 prlimit --as=268435456 "$XRL" --instance "$I" rule load /dev/zero 2>&1)
rc=$?
[ "$rc" = 2 ] && [[ $out == *"/dev/zero:1:"* ]] && [[ $out == *"nothing was changed"* ]] && unchanged &&
	ok "rule load /dev/zero under a 256 MB limit: exit 2, names /dev/zero:1, rule set unchanged: $out" ||
	bad "rule load /dev/zero: exit $rc: $out; rule save now [$("$XRL" --instance "$I" rule save | tr '\n' ';')]"
# a 300 MB line between two rules, through stdin under a 256 MB limit: the
# whole file refused, not its rules before the line loaded and the rest dropped
out=$({ printf '10.7.0.0/16 --deny\n10.8.0.0/16 --deny\n'; head -c 300000000 /dev/zero | tr '\0' x; printf '\n10.9.0.0/16 --deny\n'; } |
	timeout 60 prlimit --as=268435456 "$XRL" --instance "$I" rule load - 2>&1)
rc=$?
[ "$rc" = 2 ] && [[ $out == *"-:3: line longer than 1022 characters"* ]] && unchanged &&
	ok "a 300 MB line 3 under a 256 MB limit: exit 2, refused at line 3, rule set unchanged: $out" ||
	bad "a 300 MB line 3: exit $rc: $out; rule save now [$("$XRL" --instance "$I" rule save | tr '\n' ';')]"
# an over-long line in the middle of a file
{ printf '10.7.0.0/16 --deny\n10.8.0.0/16 --deny # '; head -c 5000 /dev/zero | tr '\0' x; printf '\n10.9.0.0/16 --deny\n'; } >"$XRLT_TMP/long.rules"
xr "$I" rule load "$XRLT_TMP/long.rules"
[ "$RC" = 2 ] && [[ $ERR == *"$XRLT_TMP/long.rules:2: line longer than 1022 characters"* ]] && unchanged &&
	ok "a 5000-character line 2: exit 2, names the file and line: $ERR" || bad "a 5000-character line 2: exit $RC: $ERR$OUT"
# read errors: a directory, and a file whose read fails (/proc/self/mem at offset 0: EIO)
for f in "$XRLT_TMP" /proc/self/mem; do
	xr "$I" rule load "$f"
	[ "$RC" = 1 ] && [[ $ERR == *"cannot read $f"* ]] && unchanged &&
		ok "rule load $f: exit 1, $ERR; rule set unchanged" || bad "rule load $f: exit $RC: $ERR$OUT"
done
# a read error after the first lines (strace fails the second read(2) of fd 0
# with EIO): the first 4096 bytes of rules are not loaded alone
python3 -c 'for i in range(400): print("10.%d.%d.0/24 --deny" % (100 + i // 256, i % 256))' >"$XRLT_TMP/many.rules"
out=$(timeout 20 strace -qq -o /dev/null -e trace=read -e inject=read:error=EIO:when=2+ -e signal=none \
	-P /proc/self/fd/0 "$XRL" --instance "$I" rule load - <"$XRLT_TMP/many.rules" 2>&1 | grep -v '^strace: '
	exit "${PIPESTATUS[0]}")
rc=$?
[ "$rc" = 1 ] && [[ $out == *"cannot read -: Input/output error at line"* ]] && unchanged &&
	ok "a read error at line $(sed -n 's/.*at line \([0-9]*\).*/\1/p' <<<"$out"): exit 1, nothing loaded: $out" ||
	bad "a read error after the first block: exit $rc: $out; rule save now [$("$XRL" --instance "$I" rule save | head -3 | tr '\n' ';')...]"

# ================================================================ 2. daemon
section "2. the daemon's --rules on SIGHUP"
cp "$XRLT_TMP/base.rules" "$XRLT_TMP/d.rules"
# under a 512 MB address-space limit: a daemon that reads /dev/zero whole
# (as one did) would otherwise take the machine's memory
prlimit --as=536870912 "$XRL" --instance "$I" daemon --rules "$XRLT_TMP/d.rules" >"$XRLT_TMP/daemon.log" 2>&1 &
DPID=$!
for _ in $(seq 50); do grep -q "rules loaded from" "$XRLT_TMP/daemon.log" && break; sleep 0.1; done
grep -q "3 rules loaded from $XRLT_TMP/d.rules" "$XRLT_TMP/daemon.log" && unchanged && ok "daemon started with --rules: 3 rules" ||
	bad "daemon start: $(cat "$XRLT_TMP/daemon.log")"
# hup N WANT: send SIGHUP, wait for the Nth reload line, which must contain WANT
hup() {
	kill -HUP "$DPID"
	for _ in $(seq 50); do [ "$(grep -c "reload\|reloaded" "$XRLT_TMP/daemon.log")" -ge "$1" ] && break; sleep 0.1; done
	grep "reload\|reloaded" "$XRLT_TMP/daemon.log" | sed -n "$1p" | grep -qF -- "$2"
}
cp "$XRLT_TMP/long.rules" "$XRLT_TMP/d.rules"
hup 1 "reload refused: $XRLT_TMP/d.rules:2: line longer than 1022 characters" && unchanged && kill -0 "$DPID" &&
	ok "SIGHUP with a 5000-character line 2: refused in the log, rules in force unchanged" ||
	bad "SIGHUP with a long line: $(tail -3 "$XRLT_TMP/daemon.log")"
ln -sf /dev/zero "$XRLT_TMP/d.rules"
hup 2 "reload refused: $XRLT_TMP/d.rules:1: NUL byte at column 1" && unchanged && kill -0 "$DPID" &&
	ok "SIGHUP with --rules a symlink to /dev/zero: refused, rules in force unchanged" ||
	bad "SIGHUP with /dev/zero: $(tail -3 "$XRLT_TMP/daemon.log")"
rm -f "$XRLT_TMP/d.rules"
printf '10.1.0.0/16 --rate 50/s\n' >"$XRLT_TMP/d.rules"
hup 3 "1 rules reloaded from $XRLT_TMP/d.rules" && [ "$("$XRL" --instance "$I" rule save | grep -vc '^#')" = 1 ] &&
	ok "SIGHUP with a good file: reloaded (1 rule)" || bad "SIGHUP with a good file: $(tail -3 "$XRLT_TMP/daemon.log")"
kill "$DPID" && wait "$DPID" 2>/dev/null
DPID=
must "$I" rule load "$XRLT_TMP/base.rules"

# ================================================================ 3. readers during a change
section "3. readers answer while a rule change is held mid-change"
# the change's last batched write before the switch is its definitions'
n=$(strace -qq -e trace=bpf -o "$XRLT_TMP/calls" "$XRL" --instance "$I" rule add 192.0.2.0/24 --deny >/dev/null 2>&1;
	grep -n 'BPF_MAP_UPDATE_BATCH' "$XRLT_TMP/calls" | tail -1 | cut -d: -f1)
must "$I" rule del 192.0.2.0/24
[ -n "$n" ] || bad "no batched write found in a rule add's bpf() calls"
# the exporter too: it waits 2 s at most for the lock, then answers 503
MPORT=$((20000 + $$ % 20000))
"$XRL" --instance "$I" daemon --metrics "127.0.0.1:$MPORT" >"$XRLT_TMP/daemon3.log" 2>&1 &
DPID=$!
for _ in $(seq 50); do grep -q "metrics on" "$XRLT_TMP/daemon3.log" && break; sleep 0.1; done
strace -qq -o /dev/null -e trace=bpf -e inject=bpf:delay_enter=5000000:when="${n:-1}" \
	"$XRL" --instance "$I" rule add 192.0.2.0/24 --deny >"$XRLT_TMP/held.out" 2>&1 &
held=$!
sleep 1
t0=$(date +%s%N)
list=$(timeout 10 "$XRL" --instance "$I" --json rule list 2>&1)
t1=$(date +%s%N)
stats=$(timeout 10 "$XRL" --instance "$I" --json stats 2>&1)
t2=$(date +%s%N)
code=$(curl -s -o "$XRLT_TMP/metrics" -w '%{http_code}' --max-time 10 "http://127.0.0.1:$MPORT/metrics")
t3=$(date +%s%N)
still=$(kill -0 "$held" 2>/dev/null && echo held || echo done)
wait "$held"
hrc=$?
ms_list=$(((t1 - t0) / 1000000)) ms_stats=$(((t2 - t1) / 1000000))
[ "$still" = held ] && [ "$ms_list" -lt 2000 ] && [ "$(jq -r '[.[].prefix] | sort | join(" ")' <<<"$list")" = "10.1.0.0/16 10.2.0.0/16 2001:db8::/32" ] &&
	ok "rule list answered in $ms_list ms with the old set while the change was held" ||
	bad "rule list during the held change: $ms_list ms (change $still), $list"
[ "$still" = held ] && [ "$ms_stats" -lt 2000 ] && [ "$(jq '.rules | length' <<<"$stats")" = 3 ] &&
	ok "stats answered in $ms_stats ms with the old set while the change was held" ||
	bad "stats during the held change: $ms_stats ms (change $still), $stats"
ms_metrics=$(((t3 - t2) / 1000000))
[ "$still" = held ] && [ "$code" = 200 ] && [ "$ms_metrics" -lt 2000 ] && grep -q 'rule="10.1.0.0/16"' "$XRLT_TMP/metrics" &&
	! grep -q 'rule="192.0.2.0/24"' "$XRLT_TMP/metrics" &&
	ok "/metrics answered 200 in $ms_metrics ms with the old set while the change was held" ||
	bad "/metrics during the held change: HTTP $code in $ms_metrics ms (change $still): $(grep -c . "$XRLT_TMP/metrics") lines"
kill "$DPID" && wait "$DPID" 2>/dev/null
DPID=
[ "$hrc" = 0 ] && "$XRL" --instance "$I" rule save | grep -q '^192.0.2.0/24 --deny' &&
	ok "the held change then completed" || bad "the held change: exit $hrc: $(cat "$XRLT_TMP/held.out")"

# ================================================================ 4. scale
section "4. one rule change at 4095 rules"
for fam in 4 6; do
	python3 -c "
import sys
for i in range(4095):
    print('10.%d.%d.0/24 --rate 100/s' % (i // 256, i % 256) if sys.argv[1] == '4' else '2001:db8:%x::/48 --rate 100/s' % i)" "$fam" >"$XRLT_TMP/r$fam"
	must "$I" rule load "$XRLT_TMP/r$fam"
	p=$([ "$fam" = 4 ] && echo 192.0.2.0/24 || echo 2001:db8:ffff::/48)
	# the best of three changes (an add, then two changes of its rate): the machine is shared
	ms=999999 all=()
	for k in 5 6 7; do
		t0=$(date +%s%N)
		xr "$I" rule add "$p" --rate "$k"/s
		t=$((($(date +%s%N) - t0) / 1000000))
		all+=("$t")
		[ "$RC" = 0 ] || { ms=999999; break; }
		[ "$t" -lt "$ms" ] && ms=$t
	done
	[ "$RC" = 0 ] && [ "$ms" -lt 500 ] && [ "$("$XRL" --instance "$I" rule save | grep -vc '^#')" = 4096 ] &&
		ok "IPv$fam: one rule change at 4095-4096 rules took $ms ms at best (${all[*]} ms; bound 500)" ||
		bad "IPv$fam: rule changes at 4095-4096 rules: exit $RC, ${all[*]} ms: $ERR"
done

# ================================================================ 5. counters
section "5. a changed rule's counters start afresh; an unchanged one keeps them"
must "$I" rule load "$XRLT_TMP/base.rules"
must "$I" rule add 10.1.0.0/16 --rate 1/h --burst 1 --shadow
# one UDP frame from 10.1.0.9, run through the attached program (BPF_PROG_TEST_RUN)
python3 - >"$XRLT_TMP/frame" <<'EOF2' || xrlt_fail "cannot write the test frame"
import struct, sys
payload = bytes(18)
udp = struct.pack('!HHHH', 40000, 9, 8 + len(payload), 0) + payload
ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, bytes([10, 1, 0, 9]), bytes([198, 18, 255, 254]))
s = sum(struct.unpack('!10H', ip))
s = (s & 0xffff) + (s >> 16)
ip = ip[:10] + struct.pack('!H', ~s & 0xffff) + ip[12:]
sys.stdout.buffer.write(bytes.fromhex('00005e005301' '020000000001' '0800') + ip + udp)
EOF2
send() {
	local id k
	id=$("$XRL" --instance "$I" --json status | jq -r '.[0].interfaces[0].program_id')
	for k in $(seq "$1"); do bpftool prog run id "$id" data_in "$XRLT_TMP/frame" >/dev/null 2>&1; done
}
row() { "$XRL" --instance "$I" --json stats | jq -c '.rules[] | select(.prefix == "10.1.0.0/16") | {passed, dropped, shadow_dropped}'; }
send 3
[ "$(row)" = '{"passed":1,"dropped":0,"shadow_dropped":2}' ] && ok "shadow rule: 3 frames over a burst of 1, 2 would-drops: $(row)" ||
	bad "shadow rule after 3 frames: $(row)"
must "$I" rule add 10.1.0.0/16 --rate 1/h --burst 1
[ "$(row)" = '{"passed":0,"dropped":0,"shadow_dropped":0}' ] && ok "--shadow removed: the rule's rows start afresh: $(row)" ||
	bad "--shadow removed: the rule's rows carry $(row)"
send 2
must "$I" rule add 10.1.0.0/16 --rate 1/h --burst 1
[ "$(row)" = '{"passed":1,"dropped":1,"shadow_dropped":0}' ] && ok "the same rule added again (unchanged) keeps its counts: $(row)" ||
	bad "the same rule added again: $(row)"

section "cleanup"
xrlt_cleanup
xrlt_finish
