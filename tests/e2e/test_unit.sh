#!/usr/bin/env bash
# The systemd unit xrl@NAME.service (scripts/systemd) checked without
# systemd as PID 1: what it runs is run here, as systemd would run it.
#
#   1. the unit file: systemd-analyze verify finds nothing wrong with it;
#      it asserts both settings files (a start without them fails once,
#      not in a restart loop); the attach is not an ignored ("-") command;
#      the daemon's capability bounding set has no CAP_SYS_ADMIN, and
#      systemd-analyze security --offline scores it under 5.0
#   2. its ExecStartPre (xrl-unit-start NAME) on the run's veth: with
#      XRL_IFACE unset: status 78 and a message naming the settings file;
#      with an interface that does not exist: xrl's attach error and a
#      non-zero status; with the veth: attached; again: "attached
#      already", status 0; with rules added at run time: they are saved
#      in RUN_DIR/NAME.rules.previous (which rule load reads back) and
#      the message says the rules file replaces them
#   3. the example settings file is commented and sets XRL_IFACE
#
#   XRL=path/to/xrl bash tests/e2e/test_unit.sh
#
# The last line is "N passed, M failed". Needs root and BPF (no traffic).
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
INSTANCE=unit$$
UNIT=$XRLT_REPO/scripts/systemd/xrl@.service
START=$XRLT_REPO/scripts/systemd/xrl-unit-start

xrlt_counted_checks
xrlt_require_root
xrlt_init

section "1. the unit file"
if command -v systemd-analyze >/dev/null; then
	# as installed: the paths of the package (verify checks the commands exist)
	mkdir -p "$XRLT_TMP/unit"
	sed "s|/usr/local/sbin/xrl|$XRL|g; s|/usr/local/lib/xrl/xrl-unit-start|$START|g" "$UNIT" >"$XRLT_TMP/unit/xrl@.service"
	out=$(systemd-analyze verify "$XRLT_TMP/unit/xrl@$INSTANCE.service" 2>&1 | grep -v "Command 'man xrl(8)' failed\|man:xrl(8)")
	[ -z "$out" ] && ok "systemd-analyze verify: nothing to say" || bad "systemd-analyze verify: $out"
	score=$(systemd-analyze security --offline=true "$XRLT_TMP/unit/xrl@.service" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	[ -n "$score" ] && xrlt_true "$score < 5.0" && ok "systemd-analyze security --offline: exposure $score (< 5.0)" ||
		bad "systemd-analyze security --offline: exposure '$score', expected < 5.0"
else
	bad "systemd-analyze is missing (package systemd)"
fi
grep -qx 'AssertPathExists=/etc/default/xrl-%i' "$UNIT" && grep -qx 'AssertPathExists=/etc/xrl/%i.rules' "$UNIT" &&
	ok "the unit asserts /etc/default/xrl-%i and /etc/xrl/%i.rules (a start without them fails once)" ||
	bad "the unit does not assert its settings files: $(grep -n 'Assert\|EnvironmentFile' "$UNIT")"
grep -E '^Exec[A-Za-z]*=[+!@:]*-' "$UNIT" && bad "an Exec line of the unit ignores its failure ('-')" ||
	ok "no Exec line of the unit ignores its failure"
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
[ -n "$caps" ] && [[ $caps != *SYS_ADMIN* ]] && ok "CapabilityBoundingSet=$caps (no CAP_SYS_ADMIN)" ||
	bad "CapabilityBoundingSet='$caps'"
grep -q 'RestartPreventExitStatus=.*2' "$UNIT" && ok "a usage error of the daemon (status 2) is not restarted" ||
	bad "the unit restarts the daemon after a usage error"

section "2. ExecStartPre: xrl-unit-start NAME"
XRLT_CREATED_NS=1
XRLT_CREATED_LINK=1
xrlt_make_pair "$XRLT_NS" "$XRLT_ROOT_IF" "$XRLT_NS_IF" "$XRLT_NS_ADDR"
xrlt_on_cleanup '"$XRL" --instance "$INSTANCE" detach "$XRLT_ROOT_IF" >/dev/null 2>&1'
run_start() { env -u XRL_IFACE XRL="$XRL" XRL_RUN_DIR="$XRLT_TMP/run" "$@" sh "$START" "$INSTANCE" >"$XRLT_TMP/o" 2>&1; RC=$?; OUT=$(cat "$XRLT_TMP/o"); }

run_start
[ "$RC" = 78 ] && [[ $OUT == *"XRL_IFACE is not set"*"/etc/default/xrl-$INSTANCE"* ]] &&
	ok "XRL_IFACE unset: status 78, '$OUT'" || bad "XRL_IFACE unset: status $RC: $OUT"
run_start XRL_IFACE=nosuchif$$
[ "$RC" != 0 ] && [[ $OUT == *nosuchif$$* ]] && [ -z "$(xdp_prog_id "$XRLT_ROOT_IF")" ] &&
	ok "an interface that does not exist: status $RC, '$OUT'" || bad "a missing interface: status $RC: $OUT"
run_start XRL_IFACE="$XRLT_ROOT_IF"
[ "$RC" = 0 ] && [ -n "$(xdp_prog_id "$XRLT_ROOT_IF")" ] && ok "attached to $XRLT_ROOT_IF: '$OUT'" ||
	bad "attach to $XRLT_ROOT_IF: status $RC: $OUT"
id1=$(xdp_prog_id "$XRLT_ROOT_IF")
run_start XRL_IFACE="$XRLT_ROOT_IF"
[ "$RC" = 0 ] && [[ $OUT == *"attached to $XRLT_ROOT_IF already"* ]] && [ "$(xdp_prog_id "$XRLT_ROOT_IF")" = "$id1" ] &&
	ok "a restart: '$OUT', the same program ($id1)" || bad "a second start: status $RC: $OUT"
[ ! -e "$XRLT_TMP/run/$INSTANCE.rules.previous" ] && ok "no rules in force: nothing saved" ||
	bad "an empty rule set was saved"
xrl rule add 192.0.2.0/24 --rate 10/s >/dev/null && xrl rule add 198.51.100.0/24 --deny >/dev/null
run_start XRL_IFACE="$XRLT_ROOT_IF"
saved=$XRLT_TMP/run/$INSTANCE.rules.previous
if [ "$RC" = 0 ] && [[ $OUT == *"replaces the 2 rules in force"*"$saved"* ]] && [ -f "$saved" ]; then
	xrl rule load /dev/null >/dev/null && xrl rule load "$saved" >/dev/null
	[ "$(rules_of "$INSTANCE")" = "$(grep -v '^#' "$saved")" ] && [ "$(rules_of "$INSTANCE" | wc -l)" = 2 ] &&
		ok "rules added at run time: saved in $saved and said so ('$(tail -1 "$XRLT_TMP/o")'); rule load reads them back" ||
		bad "the saved rules do not load back: $(cat "$saved")"
else
	bad "rules added at run time: status $RC: $OUT; $(ls "$XRLT_TMP/run" 2>&1)"
fi

section "3. the example settings"
ex=$XRLT_REPO/scripts/etc/xrl-NAME.default
grep -q '^XRL_IFACE=' "$ex" && [ "$(grep -vc '^#\|^XRL_IFACE=' "$ex")" = 0 ] &&
	ok "$(basename "$ex"): comments and XRL_IFACE=" || bad "$ex: $(grep -v '^#' "$ex")"

xrlt_finish
