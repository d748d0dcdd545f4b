#!/usr/bin/env bash
# The bash completion script (`xrl help completion`, build/xrl.bash, installed
# as /usr/share/bash-completion/completions/xrl) completes commands,
# subcommands, each command's options and their fixed choices, from the
# tables: bash runs with the script sourced, COMP_WORDS/COMP_CWORD set as
# bash sets them, the function called, COMPREPLY checked.
#   bash tests/checks/test_completion.sh   (XRL=path/to/xrl; default build/xrl)
# Last line: "N passed, M failed".
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
XRL=${XRL:-$repo/build/xrl}
pass=0
fail=0
ok() { echo "  ok    $*"; pass=$((pass + 1)); }
bad() { echo "  FAIL  $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[ -x "$XRL" ] || { bad "no xrl at $XRL (make build/xrl)"; echo "$pass passed, $fail failed"; exit 1; }
"$XRL" help completion >"$tmp/xrl.bash" 2>"$tmp/err" || bad "xrl help completion: exit $?: $(cat "$tmp/err")"
bash -n "$tmp/xrl.bash" 2>"$tmp/err" && ok "xrl help completion is a bash script" ||
	bad "xrl help completion is not valid bash: $(head -3 "$tmp/err")"
if [ -f "$repo/build/xrl.bash" ] && [ "$XRL" -nt "$repo/build/xrl.bash" ]; then
	: # build/xrl.bash is older than the binary: make has not made it yet
elif [ -f "$repo/build/xrl.bash" ]; then
	cmp -s "$tmp/xrl.bash" "$repo/build/xrl.bash" && ok "build/xrl.bash is the output of xrl help completion" ||
		bad "build/xrl.bash differs from xrl help completion (make build/xrl.bash)"
fi

# complete WORD... : COMPREPLY (sorted, one line) for the command line "WORD..." with the
# cursor on the last word (an empty last word: completion after a space)
complete_words() {
	bash --norc --noprofile -c '
		source "$1" || exit 1
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		_xrl xrl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd" " -' _ "$tmp/xrl.bash" "$@" 2>&1
}
# expect "WANT" WORD...: the completions are exactly WANT
expect() {
	local want=$1 got
	shift
	got=$(complete_words "$@")
	[ "$got" = "$want" ] && ok "'$*' completes to '$want'" || bad "'$*' completes to '$got', expected '$want'"
}
expect "rule" xrl ru
expect "--rate" xrl rule add 10.0.0.0/8 --ra
expect "--redis-password-file" xrl daemon --redis-p
expect "stats status" xrl st
expect "rule" xrl --instance edge -j ru            # a global option's value is skipped
expect "add del list load save" xrl rule ""
expect "--dport --dst --proto --syn" xrl rule del 10.0.0.0/8 --   # rule del: the match fields only
expect "native" xrl attach eth0 --mode n
expect "drop pass" xrl attach eth0 --malformed ""
expect "closed local open" xrl daemon --on-redis-failure ""
expect "--count --interval --watch -d -n" xrl top -
expect "--interval" xrl --instance x stats --watch --in   # after the command, its options only
expect "--metrics --metrics-top" xrl daemon --rules /etc/xrl/rules --metr
expect "--instance" xrl --inst
expect "" xrl stats --interval ""                  # a free value: nothing offered
expect "udp" xrl rule add 10.0.0.0/8 --rate 5 --proto u
expect "del list" xrl block ""                     # block list | del
expect "--shadow" xrl rule add 10.0.0.0/8 --rate 5 --sh
expect "" xrl rule add 10.0.0.0/8 --rate 5 --block ""   # a duration: nothing offered
expect "fixed-window sliding-log sliding-window token-bucket" xrl rule add 10.0.0.0/8 --rate 5 --algo ""   # an enum's choices, not file names
expect "sliding-log sliding-window" xrl rule add 10.0.0.0/8 --rate 5 --algo sl
expect "add del list load save" xrl help rule ""   # xrl help CMD SUB
expect "options" xrl help op
# --instance: the instances pinned now (the directories of the pin root)
mkdir -p "$tmp/pins/edge" "$tmp/pins/edge2" "$tmp/pins/core"
export XRL_PIN_ROOT=$tmp/pins
expect "edge edge2" xrl --instance ed
expect "core edge edge2" xrl --instance ""
expect "core" xrl daemon --instance c
unset XRL_PIN_ROOT

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
