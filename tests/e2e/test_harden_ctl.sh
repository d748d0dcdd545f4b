#!/usr/bin/env bash
# End-to-end test of the controller's hardening:
#
#   1. a rule change killed at every one of its bpf() calls (strace's syscall
#      fault injection, SIGKILL at call N): after each kill, `rule save`,
#      `stats` and the data path (the attached program run with
#      BPF_PROG_TEST_RUN on one frame per prefix, through bpftool) all show
#      the old rule set or all the new one, and the next `rule del` installs
#      that set minus one rule
#   2. an interface renamed under an instance: status shows the new name,
#      `detach OLDNAME` is refused and leaves the program, `attach NEWNAME`
#      says it is attached, `detach NEWNAME` removes the program
#   3. the pin root in a private mount namespace with its own bpffs (mounted
#      1777 like the host's): a /sys/fs/bpf/xrl made first by user nobody, a
#      symlink, a root directory writable by all: each refused, nothing
#      attached; the root xrl makes is 0700 and root's, nobody cannot rename
#      an instance away, and it stays after the last detach
#   4. under `ip netns exec` (bpffs hidden): every command says bpffs pins are
#      not visible here and what to do; attach attaches nothing there;
#      nsenter --net works
#   5. limits: --max-sources beyond the memory available refused with the
#      figures; user nobody gets "permission denied" (not "not attached");
#      the 65th interface of an instance is refused naming the limit
#   6. an instance whose maps have another layout (pinned by another build):
#      every command refuses it naming the map, status names it, nothing
#      reads its values into this build's structs
#
#   XRL=path/to/xrl bash tests/e2e/test_harden_ctl.sh
#
# Prints every check; the last line is "N passed, M failed". Needs root,
# BPF, strace, bpftool, unshare, runuser. Creates veth pairs (both ends in
# the root namespace and down: no traffic), one network namespace, instances
# hc<pid>*; the host's /sys/fs/bpf/xrl is never changed by part 3 (it runs
# in a mount namespace of its own). Everything is removed on exit. Takes
# about 25 s.
# shellcheck disable=SC2015  # "A && B || fail" is meant
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
PIN_ROOT=/sys/fs/bpf/xrl     # user/lib/xrl_instance.h
K=hc$$k                      # part 1: the killed rule changes
R=hc$$r                      # part 2: renamed interface
P=hc$$p                      # part 3: private bpffs
L=hc$$l                      # part 5: limits
M=hc$$m                      # part 5: never attached (--max-sources refused)
N=hc$$n                      # part 4: network namespace
IFS_ALL=()                   # root ends of our veth pairs
MAX_IFACES=64                # bpf/xrl_common.h XRL_MAX_IFACES

xrlt_counted_checks

# ---------------------------------------------------------------- helpers
# xr, must, rules_of, xdp_prog_id: lib.sh
# veth NAME: a veth pair NAME/NAMEp in the root namespace, both ends down
veth() {
	ip link add "$1" type veth peer name "$1"p || xrlt_fail "cannot create veth $1"
	IFS_ALL+=("$1")
}
# the rule set as stats shows it: prefix and action per line, sorted
stats_set() { "$XRL" --instance "$1" --json stats 2>&1 | jq -r '.rules[] | "\(.prefix) \(.action)"' 2>&1 | sort; }
save_set() { rules_of "$1" | awk '{ a = $2 == "--deny" ? "deny" : $2 == "--allow" ? "allow" : "limit"; print $1, a }' | sort; }

cleanup() {
	local i inst
	for inst in "$K" "$R" "$P" "$L" "$M"; do
		for i in "${IFS_ALL[@]}" "${IFS_ALL[@]/%/x}"; do
			[ -d "$PIN_ROOT/$inst" ] && "$XRL" --instance "$inst" detach "$i" >/dev/null 2>&1
		done
		[ -e "$PIN_ROOT/$inst" ] && { xrlt_warn "pins left in $PIN_ROOT/$inst: removing them"; rm -rf "${PIN_ROOT:?}/$inst"; }
	done
	for i in "${IFS_ALL[@]}"; do
		ip link del "$i" 2>/dev/null || ip link del "$i"x 2>/dev/null
	done
	ip netns del "$N" 2>/dev/null
	return 0
}

# ---------------------------------------------------------------- requirements
xrlt_require_root
xrlt_require_cmd ip jq strace bpftool unshare runuser nsenter python3 stat
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (make build/xrl, or set XRL=)"
for inst in "$K" "$R" "$P" "$L" "$M"; do
	[ ! -e "$PIN_ROOT/$inst" ] || xrlt_fail "$PIN_ROOT/$inst exists already: not mine, not touching it"
done
xrlt_init
cp "$XRL" "$XRLT_TMP/xrl" || xrlt_fail "cannot copy $XRL"
XRL=$XRLT_TMP/xrl
chmod 755 "$XRLT_TMP" "$XRL"   # part 5 runs it as nobody
xrlt_on_cleanup cleanup
I1=hc$$a; I2=hc$$b; I3=hc$$c; I4=hc$$d; I5=hc$$e
for i in "$I1" "$I2" "$I3" "$I4" "$I5"; do veth "$i"; done

# ================================================================ 1. killed rule changes
section "1. a rule change killed at each of its bpf() calls: old or new for every reader"
# Four prefixes tell the sets apart on the data path: a frame from 10.P.0.9
# gets XDP_DROP (1) or XDP_PASS (2). 10.1 and 10.2 keep their ids and change
# action, 10.4 goes, 10.3 comes, 10.5 stays as it is (same id and bucket).
cat >"$XRLT_TMP/old.rules" <<'EOF'
10.1.0.0/16 --deny
10.2.0.0/16 --allow
10.4.0.0/16 --deny
10.5.0.0/16 --rate 5/s
EOF
cat >"$XRLT_TMP/new.rules" <<'EOF'
10.1.0.0/16 --allow
10.2.0.0/16 --deny
10.3.0.0/16 --deny
10.5.0.0/16 --rate 5/s
EOF
OLD_SIG="1 2 2 1"   # 10.1 deny, 10.2 allow, 10.3 no rule, 10.4 deny
NEW_SIG="2 1 1 2"   # 10.1 allow, 10.2 deny, 10.3 deny, 10.4 no rule
# one UDP frame from 10.P.0.9 to a documentation address: Ethernet, IPv4, UDP
for p in 1 2 3 4; do
	python3 - "10.$p.0.9" >"$XRLT_TMP/frame$p" <<'EOF' || xrlt_fail "cannot write the test frames"
import struct, sys
src = bytes(int(x) for x in sys.argv[1].split('.'))
payload = bytes(18)
udp = struct.pack('!HHHH', 40000, 9, 8 + len(payload), 0) + payload
ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, bytes([198, 18, 255, 254]))
words = struct.unpack('!10H', ip)
s = sum(words)
s = (s & 0xffff) + (s >> 16)
ip = ip[:10] + struct.pack('!H', ~s & 0xffff) + ip[12:]
eth = bytes.fromhex('00005e005301' '020000000001' '0800')
sys.stdout.buffer.write(eth + ip + udp)
EOF
done
# the verdicts of the program attached for instance $1 on the four frames
sig() {
	local id p v verdicts=()
	id=$("$XRL" --instance "$1" --json status | jq -r '.[0].interfaces[0].program_id')
	for p in 1 2 3 4; do
		v=$(bpftool prog run id "$id" data_in "$XRLT_TMP/frame$p" 2>&1 | sed -n 's/^Return value: \([0-9]*\).*/\1/p')
		verdicts+=("${v:-?}")
	done
	echo "${verdicts[*]}"
}

must "$K" attach "$I1"
must "$K" rule load "$XRLT_TMP/old.rules"
OLD_SAVE=$(rules_of "$K")
[ "$(sig "$K")" = "$OLD_SIG" ] && ok "old set on the data path: $OLD_SIG" || bad "old set: verdicts $(sig "$K"), expected $OLD_SIG"
must "$K" rule load "$XRLT_TMP/new.rules"
NEW_SAVE=$(rules_of "$K")
[ "$(sig "$K")" = "$NEW_SIG" ] && ok "new set on the data path: $NEW_SIG" || bad "new set: verdicts $(sig "$K"), expected $NEW_SIG"
calls=0 olds=0 news=0 mixed=()
for n in $(seq 1 300); do
	"$XRL" --instance "$K" rule load "$XRLT_TMP/old.rules" >/dev/null 2>&1 || { mixed+=("cannot restore the old set before kill point $n"); break; }
	OLD_ID5=$("$XRL" --instance "$K" --json rule list | jq -r '.[] | select(.prefix == "10.5.0.0/16") | .id')
	# strace dies of the tracee's SIGKILL too: the group keeps bash's "Killed" quiet
	{ strace -qq -o /dev/null -e trace=bpf -e inject=bpf:signal=KILL:when="$n" \
		"$XRL" --instance "$K" rule load "$XRLT_TMP/new.rules" >/dev/null 2>&1; } 2>/dev/null
	rc=$?
	if [ "$rc" = 0 ]; then
		calls=$((n - 1))
		break
	fi
	save=$(rules_of "$K")
	s=$(sig "$K")
	if [ "$save" = "$OLD_SAVE" ] && [ "$s" = "$OLD_SIG" ]; then
		olds=$((olds + 1))
		want=$(grep -v '^10.5.0.0/16' <<<"$OLD_SAVE")
		wsig=$OLD_SIG
	elif [ "$save" = "$NEW_SAVE" ] && [ "$s" = "$NEW_SIG" ]; then
		news=$((news + 1))
		want=$(grep -v '^10.5.0.0/16' <<<"$NEW_SAVE")
		wsig=$NEW_SIG
	else
		mixed+=("killed at bpf call $n (exit $rc): rule save [$(tr '\n' ';' <<<"$save")], data path $s")
		continue
	fi
	[ "$(stats_set "$K")" = "$(save_set "$K")" ] || mixed+=("killed at bpf call $n: stats shows [$(stats_set "$K" | tr '\n' ';')], rule save [$(save_set "$K" | tr '\n' ';')]")
	id5=$("$XRL" --instance "$K" --json rule list | jq -r '.[] | select(.prefix == "10.5.0.0/16") | .id')
	[ "$id5" = "$OLD_ID5" ] || mixed+=("killed at bpf call $n: 10.5.0.0/16 has id $id5, had $OLD_ID5")
	# the next change starts from what the kill left
	"$XRL" --instance "$K" rule del 10.5.0.0/16 >/dev/null 2>&1 || mixed+=("rule del after kill point $n failed")
	[ "$(rules_of "$K")" = "$want" ] && [ "$(sig "$K")" = "$wsig" ] ||
		mixed+=("rule del after kill point $n: rule save [$(rules_of "$K" | tr '\n' ';')], data path $(sig "$K"); expected [$(tr '\n' ';' <<<"$want")], $wsig")
done
xrlt_log "rule load makes $calls bpf() calls; killed at each: $olds left the old set, $news the new one, ${#mixed[@]} a mix"
[ "$calls" -gt 10 ] && ok "the uninterrupted rule load ran to the end after $calls bpf() calls" ||
	bad "rule load under strace never completed (or made only $calls bpf() calls)"
# the switch is the change's last bpf() call in xrl_ruleset_apply (nothing
# is left to clean after it): kill points after it come only from what the
# command does once the change is made, and the run that completes is the
# one that leaves the new set
[ "$olds" -gt 0 ] && [ $((olds + news)) = "$calls" ] && ok "kill points before the switch ($olds) left the old set, after it ($news) the new one; the run not killed the new one" ||
	bad "kill points: $olds of $calls left the old set, $news the new one"
verdict "every kill point left rule save, stats and the data path on one set, and rule del worked from it" "${mixed[@]}"

# ================================================================ 2. renamed interface
section "2. an interface renamed under an instance"
must "$R" attach "$I2"
pid=$(xdp_prog_id "$I2")
ip link set dev "$I2" name "$I2"x || xrlt_fail "cannot rename $I2"
"$XRL" --instance "$R" --json status >"$XRLT_TMP/st" 2>&1
jq -e --arg n "$I2"x --arg o "$I2" '.[0].interfaces[0] | .interface == $n and .attached_as == $o and .attached == true' \
	"$XRLT_TMP/st" >/dev/null 2>&1 && ok "status --json follows the rename: interface ${I2}x, attached_as $I2, attached" ||
	bad "status after the rename: $(cat "$XRLT_TMP/st")"
"$XRL" --instance "$R" status 2>&1 | grep -q "interface ${I2}x.*(attached as $I2)" && ! "$XRL" --instance "$R" status | grep -q 'NOT ATTACHED' &&
	ok "status (text) shows ${I2}x (attached as $I2)" || bad "status (text) after the rename: $("$XRL" --instance "$R" status 2>&1)"
xr "$R" detach "$I2"
[ "$RC" = 1 ] && [[ $ERR == *"${I2}x"* ]] && [ "$(xdp_prog_id "$I2"x)" = "$pid" ] && [ -d "$PIN_ROOT/$R" ] &&
	ok "detach $I2 (the old name) refused, naming ${I2}x; program $pid still there, pins kept: $ERR" ||
	bad "detach $I2 after the rename: exit $RC, '$ERR$OUT', program on ${I2}x '$(xdp_prog_id "$I2"x)' (was $pid), pins $([ -d "$PIN_ROOT/$R" ] && echo kept || echo gone)"
xr "$R" attach "$I2"x
[ "$RC" = 1 ] && [[ $ERR == *"already attached to ${I2}x"* ]] && ok "attach ${I2}x: already attached ($ERR)" ||
	bad "attach ${I2}x after the rename: exit $RC: $ERR$OUT"
must "$R" detach "$I2"x
[ -z "$(xdp_prog_id "$I2"x)" ] && [ ! -e "$PIN_ROOT/$R" ] && ok "detach ${I2}x removed the program and the pins" ||
	bad "after detach ${I2}x: program '$(xdp_prog_id "$I2"x)', pins $(ls -d "$PIN_ROOT/$R" 2>&1)"
ip link set dev "$I2"x name "$I2"

# ================================================================ 3. pin root
section "3. the pin root in a private mount namespace with its own bpffs"
host_root=$(stat -c '%i %u %a' "$PIN_ROOT" 2>/dev/null)
cat >"$XRLT_TMP/pins.sh" <<'EOF'
# run by unshare -m: this namespace's own bpffs, mounted 1777 as the host's
set -u
XRL=$1 P=$2 IF=$3 TMP=$4
R=/sys/fs/bpf/xrl
mount --make-rprivate / && mount -t bpf bpf /sys/fs/bpf && chmod 1777 /sys/fs/bpf || { echo "bad|cannot mount a private bpffs"; exit 1; }
[ ! -e /sys/fs/bpf/xrl ] || { echo "bad|the private bpffs has the host's pins"; exit 1; }
res() { if [ "$1" = 0 ]; then echo "ok|$2"; else echo "bad|$2${3:+: $3}"; fi; }
prog() { ip -o link show dev "$IF" | grep -o 'prog/xdp id [0-9]*'; }
refused() { # DESC TOKEN: attach must fail naming TOKEN, attach nothing, create no instance
	local out rc
	out=$("$XRL" --instance "$P" attach "$IF" 2>&1); rc=$?
	[ "$rc" = 1 ] && [[ $out == *"$2"* ]] && [ -z "$(prog)" ] && [ ! -e "$R/$P" ] && [ ! -e "$TMP/evil/$P" ]
	res $? "$1: attach refused ($out)" "exit $rc, program '$(prog)'"
	"$XRL" --instance "$P" detach "$IF" >/dev/null 2>&1
}
# a directory made first by an unprivileged user
runuser -u nobody -- mkdir -m 0755 $R || { echo "bad|nobody cannot mkdir in the 1777 bpffs"; exit 1; }
refused "$R made by nobody" "owned by uid $(id -u nobody)"
out=$("$XRL" status 2>&1); rc=$?
[ "$rc" = 1 ] && [[ $out == *"owned by uid"* ]]; res $? "status refuses it too ($out)" "exit $rc"
rmdir $R
# a symlink of nobody's to a directory of nobody's
mkdir -m 0777 "$TMP/evil" && runuser -u nobody -- ln -s "$TMP/evil" $R
refused "$R a symlink" "symlink"
rm -f $R
# root's, but writable by all
mkdir -m 0777 $R && chmod 0777 $R
refused "$R of root's, mode 0777" "mode 0777"
rmdir $R
# made by xrl: 0700, root's; nobody cannot move an instance away
"$XRL" --instance "$P" attach "$IF" >/dev/null 2>&1
res $? "attach with no $R: made it"
[ "$(stat -c '%u %a' $R)" = "0 700" ]; res $? "$R is root's, mode 0700" "$(stat -c '%u %a' $R)"
runuser -u nobody -- mv "$R/$P" /sys/fs/bpf/stolen 2>/dev/null
[ $? != 0 ] && [ -d "$R/$P" ]; res $? "nobody cannot rename $R/$P away"
runuser -u nobody -- mv $R /sys/fs/bpf/stolen 2>/dev/null
[ $? != 0 ] && [ -d "$R/$P" ]; res $? "nobody cannot rename $R away (sticky bpffs)"
"$XRL" --instance "$P" detach "$IF" >/dev/null 2>&1
res $? "detach"
[ -z "$(prog)" ] && [ ! -e "$R/$P" ] && [ "$(stat -c '%u %a' $R)" = "0 700" ]
res $? "after the last detach the instance is gone and $R stays (root's, 0700)"
EOF
unshare -m bash "$XRLT_TMP/pins.sh" "$XRL" "$P" "$I3" "$XRLT_TMP" >"$XRLT_TMP/pins.out" 2>&1
while IFS='|' read -r v d; do
	case $v in ok) ok "$d" ;; bad) bad "$d" ;; *) bad "private bpffs part: $v $d" ;; esac
done <"$XRLT_TMP/pins.out"
[ -z "$(xdp_prog_id "$I3")" ] || { bad "a program is left on $I3"; ip link set dev "$I3" xdp off; }
[ "$(stat -c '%i %u %a' "$PIN_ROOT" 2>/dev/null)" = "$host_root" ] && [ ! -e "$PIN_ROOT/$P" ] &&
	ok "the host's $PIN_ROOT was not touched" || bad "the host's $PIN_ROOT changed: '$host_root' -> '$(stat -c '%i %u %a' "$PIN_ROOT" 2>&1)'"

# ================================================================ 4. ip netns exec
section "4. under ip netns exec, where the host's bpffs is not visible"
k_before=$(rules_of "$K")
ip netns add "$N" || xrlt_fail "cannot create namespace $N"
ip link set "$I4"p netns "$N" || xrlt_fail "cannot move ${I4}p to $N"
for c in "status" "--instance $K rule list" "--instance $K rule save" "--instance $K stats" "--instance $K top" \
	"--instance $K rule add 10.9.0.0/16 --deny" "--instance $K detach $I1" "--instance $K daemon" \
	"--instance $L attach ${I4}p"; do
	# shellcheck disable=SC2086  # c is split on purpose
	out=$(timeout 20 ip netns exec "$N" "$XRL" $c 2>&1)
	rc=$?
	[ "$rc" = 1 ] && [[ $out == *"not visible in this mount namespace"* ]] && [[ $out == *"nsenter --net=/run/netns/$N "* ]] &&
		ok "ip netns exec $N xrl $c: exit 1, says the pins are not visible and to use nsenter" ||
		bad "ip netns exec $N xrl $c: exit $rc: $out"
done
! ip -n "$N" -o link show dev "$I4"p | grep -q 'prog/xdp' && ok "nothing was attached inside $N" ||
	bad "a program was attached to ${I4}p in $N"
[ "$(rules_of "$K")" = "$k_before" ] && [ -n "$k_before" ] && ok "instance $K unchanged by the commands in $N" ||
	bad "instance $K changed: [$k_before] -> [$(rules_of "$K")]"
out=$(nsenter --net=/run/netns/"$N" "$XRL" --instance "$K" rule list 2>&1) && [[ $out == *10.1.0.0/16* ]] &&
	ok "nsenter --net=/run/netns/$N xrl --instance $K rule list works" || bad "nsenter --net: $out"
ip -n "$N" link set "$I4"p netns 1

# ================================================================ 5. limits
section "5. limits: memory for --max-sources, permission, interfaces per instance"
avail=$(($(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo) * 1024))
# the most --max-sources takes, 268435456 sources per family: about 28 GB of
# preallocated set tables (40 bytes per IPv4 source, 64 per IPv6), more than
# this 24 GiB machine has
big=268435456
if [ "$avail" -lt $((big * 104)) ]; then
	xr "$M" attach "$I5" --max-sources $big
	[ "$RC" = 2 ] && [[ $ERR == *"--max-sources $big needs"* ]] && [[ $ERR == *"available"* ]] && [[ $ERR == *GB* ]] &&
		[ -z "$(xdp_prog_id "$I5")" ] && [ ! -e "$PIN_ROOT/$M" ] &&
		ok "attach --max-sources $big refused with the figures, nothing attached: $ERR" ||
		bad "attach --max-sources $big: exit $RC: $ERR$OUT; program '$(xdp_prog_id "$I5")', pins $(ls -d "$PIN_ROOT/$M" 2>&1)"
else
	bad "MemAvailable $avail B: the machine has room for --max-sources $big, cannot test the refusal"
fi
must "$L" attach "$I4" --max-sources 1000
for c in "status" "rule list" "rule save" "rule add 10.9.0.0/16 --deny" "stats" "top" "daemon" "detach $I4" "attach $I5"; do
	# shellcheck disable=SC2086
	out=$(cd / && timeout 20 runuser -u nobody -- "$XRL" --instance "$L" $c 2>&1)
	rc=$?
	[ "$rc" = 1 ] && [[ ${out,,} == *"permission denied"* ]] && [[ $out != *"not attached"* ]] &&
		ok "as nobody: xrl $c: exit 1, permission denied" || bad "as nobody: xrl $c: exit $rc: $out"
done
[ -n "$(xdp_prog_id "$I4")" ] && [ -d "$PIN_ROOT/$L" ] && ok "nobody's commands left $L attached" || bad "$L lost its program or pins"
# the instance on $I4 and 63 records of interfaces that are gone: 64 in all
ifmap=$PIN_ROOT/$L/xrl_ifaces
for i in $(seq 1 $((MAX_IFACES - 1))); do
	idx=$((2000000 + i))
	key=$(printf '%08x' "$idx" | sed 's/\(..\)\(..\)\(..\)\(..\)/0x\4 0x\3 0x\2 0x\1/')
	name=$(printf 'gone%d' "$i" | od -An -tx1 | tr -s ' \n' ' ' | sed 's/ \([0-9a-f][0-9a-f]\)/ 0x\1/g')
	pad=$((16 - 4 - ${#i}))
	# name, prog_id, mode, multiprog, pad; netns cookie 0 (the reader's namespace), inode, pad
	val="$name$(printf ' 0x00%.0s' $(seq $pad)) 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00$(printf ' 0x00%.0s' $(seq 16))"
	# shellcheck disable=SC2086
	bpftool map update pinned "$ifmap" key $key value $val || { bad "cannot add a record to $ifmap"; break; }
done
n=$("$XRL" --instance "$L" --json status | jq '.[0].interfaces | length')
[ "$n" = "$MAX_IFACES" ] && ok "$L has $MAX_IFACES interface records" || bad "$L has $n interface records"
xr "$L" attach "$I5"
[ "$RC" = 1 ] && [[ $ERR == *"$MAX_IFACES interfaces"* ]] && [[ $ERR == *"most"* ]] && [ -z "$(xdp_prog_id "$I5")" ] &&
	ok "the 65th interface refused, naming the limit: $ERR" || bad "attach of the 65th interface: exit $RC: $ERR$OUT; program '$(xdp_prog_id "$I5")'"
for i in $(seq 1 $((MAX_IFACES - 1))); do
	"$XRL" --instance "$L" detach gone"$i" >/dev/null 2>&1 || { bad "detach of the record gone$i failed"; break; }
done
must "$L" detach "$I4"

# ======================================================= 6. another layout
section "6. an instance whose maps another build of xrl pinned"
# xrl_stats replaced by a map of the same type whose value is 4096 bytes:
# read into this build's struct, it would overrun it (seen: a heap corruption
# in status while another build's instance was attached)
must "$L" attach "$I4"
rm -f "$PIN_ROOT/$L/xrl_stats"
bpftool map create "$PIN_ROOT/$L/xrl_stats" type percpu_array key 4 value 4096 entries 1 name xrl_stats ||
	bad "cannot pin a stand-in xrl_stats"
for c in "stats" "top" "rule list" "rule add 10.9.0.0/16 --deny"; do
	# shellcheck disable=SC2086
	xr "$L" $c
	[ "$RC" = 1 ] && [[ $ERR == *"another build of xrl"* ]] && [[ $ERR == *xrl_stats* ]] &&
		ok "xrl $c on it: exit 1, names the map and what to do: $ERR" || bad "xrl $c on it: exit $RC: $ERR$OUT"
done
out=$("$XRL" --instance "$L" --json status 2>&1)
rc=$?
[ "$rc" = 0 ] && [ "$(jq -r '.[0].error' <<<"$out" 2>/dev/null)" != null ] && [[ $out == *xrl_stats* ]] &&
	ok "status --json names it and the map: $out" || bad "status --json: exit $rc: $out"
must "$L" detach "$I4"

section "cleanup"
xrlt_cleanup
left=()
for inst in "$K" "$R" "$P" "$L" "$M"; do [ -e "$PIN_ROOT/$inst" ] && left+=("pins $PIN_ROOT/$inst"); done
for i in "${IFS_ALL[@]}"; do ip link show dev "$i" >/dev/null 2>&1 && left+=("link $i"); done
ip netns list | grep -qw "^$N" && left+=("namespace $N")
verdict "cleanup left no pins, veth or namespace" "${left[@]}"
xrlt_finish
