#!/usr/bin/env bash
# The man page's option lists against the option tables: every option of a
# table (global options, rule words, the options of attach, stats, top and
# daemon: the tables of the command table's rows, `xrl help option-table`
# prints them) is documented in docs/xrl.8,
# and the man page documents no option that the tables do not have. The
# lists read from the man page are the tags (.TP) of GLOBAL OPTIONS and of
# RULES' Actions, Limit options and Match fields, and for a command the
# options in its .SS heading and its .TP tags (COMMANDS, ".SS stats ..."). The check runs on the real files, then on copies with one
# side edited alone (an option dropped from, or added to, the man page or a
# table), which it must refuse.
#   bash tests/checks/test_man_options.sh   (XRL=path/to/xrl; default build/xrl)
# Last line: "N passed, M failed".
set -u
export LC_ALL=C   # sort and comm agree on the order
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
XRL=${XRL:-$repo/build/xrl}
MAN=$repo/docs/xrl.8
pass=0
fail=0
ok() { echo "  ok    $*"; pass=$((pass + 1)); }
bad() { echo "  FAIL  $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# man_opts MANFILE SECTION SUBSECTION...: the options named in the .TP tags
# of .SH SECTION (only within the given .SS subsections, when some are given)
man_opts() {
	local man=$1 sh=$2
	shift 2
	awk -v sh="$sh" -v subs="$(IFS='|'; echo "$*")" '
		BEGIN { n = split(subs, s, "|"); for (i = 1; i <= n; i++) want[s[i]] = 1 }
		/^\.SH / { insh = (substr($0, 5) == sh || substr($0, 5) == "\"" sh "\""); inss = (n == 0); next }
		/^\.SS / { t = substr($0, 5); gsub(/"/, "", t); inss = (n == 0) || (t in want); next }
		/^\.TP/ { tag = 1; next }
		tag { tag = 0; if (insh && inss) print }
	' "$man" | grep -oE '(\\-){1,2}[A-Za-z0-9]([A-Za-z0-9]|\\-)*' | sed 's/\\-/-/g' | sort -u
}
# cmd_opts MANFILE CMD: the options in the heading and the .TP tags of ".SS CMD ..."
cmd_opts() {
	awk -v cmd="$2" '
		/^\.S[SH] / { in_cmd = ($1 == ".SS" && $2 == cmd); if (in_cmd) print; next }
		/^\.TP/ { tag = 1; next }
		tag { tag = 0; if (in_cmd) print }
	' "$1" | grep -oE '(\\-){1,2}[A-Za-z0-9]([A-Za-z0-9]|\\-)*' | sed 's/\\-/-/g' | sort -u
}
# table_opts DUMP TABLE: the options of one table (long and short forms)
table_opts() {
	awk -F'\t' -v t="$2" '$1 == t { print $4; if ($3 != "-") print $3 }' "$1" | sort -u
}
# compare MANFILE DUMP: prints what differs (one line); true when nothing does
compare() {
	local man=$1 dump=$2 diffs=0 m t
	for what in $tables; do
		case $what in
		global) man_opts "$man" "GLOBAL OPTIONS" >"$tmp/m" ;;
		rule) man_opts "$man" RULES Actions "Limit options" "Match fields" >"$tmp/m" ;;
		*) cmd_opts "$man" "$what" >"$tmp/m" ;;
		esac
		table_opts "$dump" "$what" >"$tmp/t"
		m=$(comm -23 "$tmp/m" "$tmp/t" | tr '\n' ' ')
		t=$(comm -13 "$tmp/m" "$tmp/t" | tr '\n' ' ')
		[ -z "$t" ] || { printf '%s options of the table not in the man page: %s; ' "$what" "$t"; diffs=1; }
		[ -z "$m" ] || { printf '%s options in the man page, not in the table: %s; ' "$what" "$m"; diffs=1; }
		[ -s "$tmp/t" ] || { printf 'the table dump has no %s options; ' "$what"; diffs=1; }
	done
	return $diffs
}

[ -x "$XRL" ] || { bad "no xrl at $XRL (make build/xrl)"; echo "$pass passed, $fail failed"; exit 1; }
"$XRL" help option-table >"$tmp/dump" 2>&1 || bad "xrl help option-table failed: $(head -3 "$tmp/dump")"
# the tables as the command table has them (a new command's table is checked without more)
tables=$(cut -f1 "$tmp/dump" | awk '!seen[$0]++')
for t in $tables; do
	n=$(table_opts "$tmp/dump" "$t" | wc -l)
	[ "$n" -ge 3 ] && ok "xrl help options: the $t table has $n option forms" ||
		bad "xrl help options: the $t table has $n option forms: $(head -3 "$tmp/dump")"
done
if out=$(compare "$MAN" "$tmp/dump"); then
	ok "docs/xrl.8 documents exactly the options of the tables ($(man_opts "$MAN" "GLOBAL OPTIONS" | tr '\n' ' ')| $(man_opts "$MAN" RULES Actions "Limit options" "Match fields" | tr '\n' ' '))"
else
	bad "docs/xrl.8 and the option tables differ: $out"
fi

# one side edited alone must be refused
# 1. an option dropped from the man page (the .TP entry of --burst)
awk '/^\.TP/ { skip = 0; held = $0; next }
	held != "" { if ($0 ~ /^\.BI \\-\\-burst /) { held = ""; skip = 1; next } print held; held = "" }
	skip && /^\.(SS|SH|PP)/ { skip = 0 }
	!skip' \
	"$MAN" >"$tmp/man1"
out=$(compare "$tmp/man1" "$tmp/dump") && bad "a man page without the --burst entry passed" ||
	{ [[ $out == *"not in the man page: --burst"* ]] && ok "refused: --burst dropped from the man page ($out)" || bad "--burst dropped from the man page: $out"; }
# 2. an option the tables do not have added to the man page's global options
sed '/^\.SH GLOBAL OPTIONS/,/^\.SH COMMANDS/ s/^\.SH COMMANDS/.TP\n.B \\-\\-frobnicate\nFrobnicate.\n.SH COMMANDS/' "$MAN" >"$tmp/man2"
out=$(compare "$tmp/man2" "$tmp/dump") && bad "a man page with an extra --frobnicate passed" ||
	{ [[ $out == *"not in the table: --frobnicate"* ]] && ok "refused: --frobnicate added to the man page alone ($out)" || bad "--frobnicate in the man page: $out"; }
# 3. a row added to a table alone (a new rule word)
{ cat "$tmp/dump"; printf 'rule\tadd\t-\t--frobnicate\t-\ta made-up option\n'; } >"$tmp/dump3"
out=$(compare "$MAN" "$tmp/dump3") && bad "a table with an undocumented --frobnicate passed" ||
	{ [[ $out == *"not in the man page: --frobnicate"* ]] && ok "refused: --frobnicate added to the rule table alone ($out)" || bad "--frobnicate in the table: $out"; }
# 4. a row dropped from a table alone (the short form -V)
grep -v $'\t--version\t' "$tmp/dump" >"$tmp/dump4"
out=$(compare "$MAN" "$tmp/dump4") && bad "a table without --version passed" ||
	{ [[ $out == *"not in the table: "*"--version"* ]] && ok "refused: --version dropped from the global table alone ($out)" || bad "--version dropped from the table: $out"; }

# 5. a command's option dropped from the man page (the daemon's --instance entry)
awk '/^\.S[SH] / { ind = ($1 == ".SS" && $2 == "daemon") }
	/^\.TP/ { skip = 0; held = $0; next }
	held != "" { if (ind && $0 ~ /^\.BI \\-\\-instance /) { held = ""; skip = 1; next } print held; held = "" }
	skip && /^\.(RE|SS|SH)/ { skip = 0 }
	!skip' "$MAN" >"$tmp/man5"
out=$(compare "$tmp/man5" "$tmp/dump") && bad "a man page without the daemon's --instance entry passed" ||
	{ [[ $out == *"daemon options of the table not in the man page: --instance"* ]] && ok "refused: the daemon's --instance dropped from the man page ($out)" || bad "daemon --instance dropped from the man page: $out"; }
# 6. a short form dropped from a command's table alone (top's -d)
awk -F'\t' -v OFS='\t' '$1 == "top" && $4 == "--interval" { $3 = "-" } 1' "$tmp/dump" >"$tmp/dump6"
out=$(compare "$MAN" "$tmp/dump6") && bad "a top table without -d passed" ||
	{ [[ $out == *"top options in the man page, not in the table: -d"* ]] && ok "refused: -d dropped from the top table alone ($out)" || bad "-d dropped from the top table: $out"; }

# Every command and subcommand of the command table (`xrl help commands`) has
# its SYNOPSIS entry (.SY "xrl PATH") naming each of its options (MATCH's
# options count for the rule words), and its heading under COMMANDS (.SS PATH)
# synopsis MANFILE PATH: the text of its .SY entries, escapes removed
synopsis() {
	awk -v p="xrl $2" '/^\.SH / { in_s = ($2 == "SYNOPSIS") } in_s && /^\.SY/ { t = substr($0, 5); gsub(/"/, "", t); on = (t == p); found += on; next }
		in_s && /^\.YS/ { on = 0 } in_s && on { e = e $0 "\n" } in_s && /^where/ { w = 1 } in_s && w { m = m $0 "\n" }
		END { if (found) printf "%s%s", e, m }' "$1" | sed 's/\\-/-/g'
}
# check_synopsis MANFILE: what lacks (one line), true when nothing does
check_synopsis() {
	local man=$1 miss=() path usage o sh
	while IFS=$'\t' read -r path usage; do
		[[ $usage == *SUBCOMMAND* ]] && continue
		synopsis "$man" "$path" >"$tmp/syn"
		grep -q . "$tmp/syn" || { miss+=("no SYNOPSIS entry for xrl $path"); continue; }
		for o in $(grep -oE -- '--[a-z][a-z-]*' <<<"$usage" | sort -u); do
			# its long form, or its short one ("-n|--count": -n)
			sh=$(grep -oE -- "-[a-zA-Z]\|$o( |\]|\$)" <<<"$usage" | cut -c1-2)
			grep -qE -- "(^|[^a-z-])$o([^a-z-]|\$)" "$tmp/syn" ||
				{ [ -n "$sh" ] && grep -qE -- "(^|[^a-z-])$sh([^a-z-]|\$)" "$tmp/syn"; } ||
				miss+=("SYNOPSIS of xrl $path lacks $o")
		done
		grep -qxF ".SS $path" <(sed -n '/^\.SH COMMANDS/,/^\.SH RULES/p' "$man" | sed 's/ \\f.*//; s/ \[.*//') ||
			miss+=("no .SS $path under COMMANDS")
	done <"$tmp/cmds"
	[ ${#miss[@]} = 0 ] || { printf '%s; ' "${miss[@]}"; return 1; }
}
"$XRL" help commands >"$tmp/cmds" 2>&1 || bad "xrl help commands failed: $(head -3 "$tmp/cmds")"
if out=$(check_synopsis "$MAN"); then
	ok "SYNOPSIS and COMMANDS: each of the $(wc -l <"$tmp/cmds") commands of the table, with every option of its usage"
else
	bad "docs/xrl.8 against the command table: $out"
fi
# one side alone: --global dropped from the SYNOPSIS, a command the page lacks
sed '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/ { /^\.RB \[ \\-\\-global \]$/d }' "$MAN" >"$tmp/man7"
out=$(check_synopsis "$tmp/man7") && bad "a SYNOPSIS without --global passed" ||
	{ [[ $out == *"SYNOPSIS of xrl rule add lacks --global"* ]] && ok "refused: --global dropped from the SYNOPSIS ($out)" || bad "--global dropped: $out"; }
printf 'frob\txrl frob [--frobnicate]\n' >>"$tmp/cmds"
out=$(check_synopsis "$MAN") && bad "a command the page lacks passed" ||
	{ [[ $out == *"no SYNOPSIS entry for xrl frob"* ]] && ok "refused: a command of the table the page lacks ($out)" || bad "xrl frob: $out"; }

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
