#!/usr/bin/env bash
# Every command and subcommand of the command table (`xrl help commands`
# lists its rows, so a new row is checked without more) answers
# `xrl CMD [SUB] --help`, `-h` and `xrl help CMD [SUB]` with the same text,
# exit 0: its usage line, every option of its table, the syntax of each
# value word its usage names, and examples that start with its name.
# `xrl help options` is readable (no tab-separated dump); `xrl --version`
# says the package version and the git describe it comes from.
#   bash tests/checks/test_help.sh   (XRL=path/to/xrl; default build/xrl)
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
"$XRL" help commands >"$tmp/cmds" 2>&1 || bad "xrl help commands: exit $?"
n=$(wc -l <"$tmp/cmds")
[ "$n" -ge 15 ] && ok "xrl help commands lists $n commands and subcommands" ||
	bad "xrl help commands lists $n rows: $(head -3 "$tmp/cmds")"

while IFS=$'\t' read -r path usage; do
	why=()
	# shellcheck disable=SC2086  # path is one or two words
	"$XRL" $path --help >"$tmp/h1" 2>"$tmp/e1"
	rc1=$?
	# shellcheck disable=SC2086
	"$XRL" help $path >"$tmp/h2" 2>"$tmp/e2"
	rc2=$?
	# shellcheck disable=SC2086
	"$XRL" $path -h >"$tmp/h3" 2>&1
	[ $rc1 = 0 ] || why+=("xrl $path --help: exit $rc1: $(head -2 "$tmp/e1")")
	[ $rc2 = 0 ] || why+=("xrl help $path: exit $rc2: $(head -2 "$tmp/e2")")
	[ -s "$tmp/e1" ] && why+=("xrl $path --help wrote to stderr: $(head -2 "$tmp/e1")")
	cmp -s "$tmp/h1" "$tmp/h2" || why+=("xrl help $path differs from xrl $path --help")
	cmp -s "$tmp/h1" "$tmp/h3" || why+=("xrl $path -h differs from xrl $path --help")
	head -1 "$tmp/h1" | grep -q "^usage: xrl $path\( \|$\)" ||
		why+=("its first line is not 'usage: xrl $path ...': $(head -1 "$tmp/h1")")
	grep -qx 'Examples:' "$tmp/h1" || why+=("no Examples:")
	ex=$(sed -n '/^Examples:$/,/^$/p' "$tmp/h1" | grep -c "^  xrl \(--instance [^ ]* \|--json \|-j \)*$path\( \|$\)")
	[ "$ex" -ge 1 ] || why+=("no example starts with 'xrl $path'")
	if [[ $usage == *SUBCOMMAND* ]]; then
		# a command with subcommands: each subcommand's usage line is in its help
		while IFS=$'\t' read -r sp su; do
			[[ $sp == "$path "* ]] || continue
			grep -q "^  xrl $sp\( \|$\)" "$tmp/h1" || why+=("the subcommand '$sp' is not in it")
		done <"$tmp/cmds"
	else
		# each option of the usage line has a line of its own; each value word its syntax
		for o in $(grep -oE -- '--[a-z][a-z-]*' <<<"$usage" | sort -u); do
			grep -qE -- "^  (-[a-zA-Z], )?$o( |\$)" "$tmp/h1" || why+=("option $o has no line")
		done
		for w in $(grep -oE '(^|[ [{|])[A-Z][A-Z_:]*[A-Z]' <<<"${usage#xrl }" | tr -d ' [{|' | sort -u); do
			sed -n '/^Values:$/,/^$/p' "$tmp/h1" | grep -q "^  $w  " || why+=("value $w has no syntax")
		done
	fi
	if [ ${#why[@]} = 0 ]; then
		ok "xrl $path --help, -h and xrl help $path: usage, options, values, $ex example(s), exit 0"
	else
		bad "xrl $path: $(IFS=';'; echo "${why[*]}")"
	fi
done <"$tmp/cmds"

# --algo's values and the RATE and DURATION syntax are in rule add's help
"$XRL" help rule add >"$tmp/ra"
for want in token-bucket fixed-window sliding-window sliding-log '100/s' '30s, 10m, 1h'; do
	grep -q -- "$want" "$tmp/ra" && ok "xrl help rule add names '$want'" || bad "xrl help rule add lacks '$want'"
done
# an unknown command or subcommand for help: status 2 and the list
"$XRL" help frob >/dev/null 2>"$tmp/e"; rc=$?
[ $rc = 2 ] && grep -q "expected attach" "$tmp/e" && ok "xrl help frob: status 2, $(cat "$tmp/e")" ||
	bad "xrl help frob: status $rc: $(cat "$tmp/e")"
"$XRL" help rule frob >/dev/null 2>"$tmp/e"; rc=$?
[ $rc = 2 ] && grep -q "expected add" "$tmp/e" && ok "xrl help rule frob: status 2, $(cat "$tmp/e")" ||
	bad "xrl help rule frob: status $rc: $(cat "$tmp/e")"
# the option after "--" is an operand, not a request for help
out=$("$XRL" rule del -- --help 2>&1); rc=$?
[ $rc = 2 ] && ok "xrl rule del -- --help is not help: status 2 ($out)" || bad "xrl rule del -- --help: status $rc: $out"

# xrl help options: every option under its command, no tab-separated columns
"$XRL" help options >"$tmp/o" 2>&1; rc=$?
if [ $rc = 0 ] && ! grep -q $'\t' "$tmp/o" && grep -q '^  --algo ALGO ' "$tmp/o" && grep -q '^xrl daemon ' "$tmp/o" &&
	[ "$(awk 'length > 80' "$tmp/o" | wc -l)" = 0 ]; then
	ok "xrl help options: aligned, at most 80 columns, no tabs ($(wc -l <"$tmp/o") lines)"
else
	bad "xrl help options: status $rc: $(grep -m2 $'\t' "$tmp/o")"
fi
# every help is at most 80 columns wide
wide=$(while IFS=$'\t' read -r path _; do "$XRL" help $path; done <"$tmp/cmds" | awk 'length > 80' | head -2)
[ -z "$wide" ] && ok "every command's help fits 80 columns" || bad "lines over 80 columns: $wide"

# --version: the package's version (as make deb names it) and the git describe
"$XRL" --version >"$tmp/v"
line1=$(head -1 "$tmp/v")
desc=$(sed -n 's/^built from \([^ ]*\).*/\1/p' "$tmp/v")
if [ -n "$desc" ]; then
	want=$("$repo/scripts/mkdeb" --version-of "$desc")
	[ "$line1" = "xrl $want" ] && ok "xrl --version: '$line1', built from $desc" ||
		bad "xrl --version: '$line1', expected 'xrl $want' (the package version of $desc)"
else
	bad "xrl --version does not say what it was built from: $(cat "$tmp/v")"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
