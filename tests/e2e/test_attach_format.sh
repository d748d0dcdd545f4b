#!/usr/bin/env bash
# tests/e2e/test_attach_format.sh: an instance whose pins hold no interface
# record and a config of another table format (what an attach killed before
# it initialized the config leaves: format 0), through a real attach to a
# veth:
#  1. while a program still uses those maps, attach is refused and says
#     which program, what format, and what to do;
#  2. once no program uses them, attach makes the maps afresh: the config
#     is of this build's format (a new xrl_config map), and rules can be
#     written to the instance (maps of another format are refused as
#     "another build").
# No traffic is sent.
# shellcheck disable=SC2016  # cleanup hooks are eval'ed later, on purpose
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
I=af$$
PIN_DIR=/sys/fs/bpf/xrl/$I   # user/lib/xrl_instance.h
CFG_FORMAT_OFF=72            # offsetof(struct xrl_config, table_format), bpf/xrl_common.h

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd ip timeout jq bpftool
xrlt_require_bpf
[ -x "$XRL" ] || xrlt_fail "xrl CLI not found at $XRL (build it: make build/xrl, or set XRL=)"

xrlt_init
xrlt_setup_pair
xrlt_on_cleanup 'ip link set dev "$XRLT_ROOT_IF" xdp off 2>/dev/null; "$XRL" --instance "$I" detach "$XRLT_ROOT_IF" >/dev/null 2>&1; [ -d "$PIN_DIR" ] && rm -rf "$PIN_DIR"; true'

xa() {
	"$XRL" --instance "$I" "$@" >"$XRLT_TMP/o" 2>"$XRLT_TMP/e"
	RC=$?
	OUT=$(cat "$XRLT_TMP/o")
	ERR=$(cat "$XRLT_TMP/e")
}
xdp_prog_id() { ip -o link show dev "$1" 2>/dev/null | grep -o 'prog/xdp id [0-9]*' | awk '{print $3}'; }
cfg_id() { bpftool -j map show pinned "$PIN_DIR/xrl_config" | jq '.id'; }
# the 4 bytes of xrl_config.table_format, little-endian, as a number
cfg_format() {
	bpftool -j map lookup pinned "$PIN_DIR/xrl_config" key 0 0 0 0 |
		jq --argjson o "$CFG_FORMAT_OFF" '[.value[$o:$o + 4][] | ltrimstr("0x") | explode |
			map(if . >= 97 then . - 87 else . - 48 end) | .[0] * 16 + .[1]] |
			.[0] + 256 * .[1] + 65536 * .[2] + 16777216 * .[3]'
}

section "the instance made: attached, then its record removed and its format set to 0"
xa attach "$XRLT_ROOT_IF"
[ "$RC" = 0 ] || xrlt_fail "attach $XRLT_ROOT_IF: exit $RC: $ERR"
FORMAT=$(cfg_format)
xrlt_is_uint "$FORMAT" && [ "$FORMAT" -gt 0 ] || xrlt_fail "cannot read xrl_config.table_format: '$FORMAT'"
P=$(xdp_prog_id "$XRLT_ROOT_IF")
OLD_CFG=$(cfg_id)
val=$(bpftool -j map lookup pinned "$PIN_DIR/xrl_config" key 0 0 0 0 |
	jq -r --argjson o "$CFG_FORMAT_OFF" '.value | .[$o] = "0x00" | .[$o + 1] = "0x00" | .[$o + 2] = "0x00" | .[$o + 3] = "0x00" | join(" ")')
# shellcheck disable=SC2086
bpftool map update pinned "$PIN_DIR/xrl_config" key 0 0 0 0 value $val || xrlt_fail "cannot write xrl_config"
key=$(printf '%08x' "$(cat /sys/class/net/"$XRLT_ROOT_IF"/ifindex)" | sed 's/\(..\)\(..\)\(..\)\(..\)/0x\4 0x\3 0x\2 0x\1/')
# shellcheck disable=SC2086
bpftool map delete pinned "$PIN_DIR/xrl_ifaces" key $key || xrlt_fail "cannot delete the record of $XRLT_ROOT_IF"
[ "$(cfg_format)" = 0 ] && ok "format $FORMAT made 0, the record of $XRLT_ROOT_IF removed (program $P runs on)" ||
	xrlt_fail "xrl_config.table_format is $(cfg_format), not 0"

section "1. a program still uses the maps: refused"
xa attach "$XRLT_ROOT_IF"
[ "$RC" != 0 ] && [[ $ERR == *"table format 0 (this xrl's is $FORMAT), are used by XDP program id $P"* ]] &&
	[[ $ERR == *"detach that program"* ]] && [ "$(cfg_id)" = "$OLD_CFG" ] &&
	ok "attach refused: $ERR" || bad "attach with program $P on the maps: exit $RC: $ERR$OUT"

section "2. no program uses them: made afresh"
ip link set dev "$XRLT_ROOT_IF" xdp off || xrlt_fail "cannot remove program $P from $XRLT_ROOT_IF"
for _ in $(seq 50); do
	bpftool prog show id "$P" >/dev/null 2>&1 || break
	sleep 0.1
done
bpftool prog show id "$P" >/dev/null 2>&1 && xrlt_fail "program $P still loaded 5 s after its detach"
xa attach "$XRLT_ROOT_IF"
[ "$RC" = 0 ] && [ "$(cfg_format)" = "$FORMAT" ] && [ "$(cfg_id)" != "$OLD_CFG" ] &&
	ok "attach: a new xrl_config (map $(cfg_id), was $OLD_CFG) of format $FORMAT" ||
	bad "attach after the program went: exit $RC: $ERR; config map $(cfg_id) (was $OLD_CFG), format $(cfg_format)"
xa rule add 10.9.0.0/16 --deny
[ "$RC" = 0 ] && ok "rule add on the instance made afresh" || bad "rule add: exit $RC: $ERR"
xa detach "$XRLT_ROOT_IF"
[ "$RC" = 0 ] && [ ! -d "$PIN_DIR" ] && ok "detach: pins removed" || bad "detach: exit $RC: $ERR$OUT"

xrlt_finish
