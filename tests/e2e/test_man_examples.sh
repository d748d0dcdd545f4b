#!/usr/bin/env bash
# The man page's EXAMPLES against real output: each command of its example
# blocks (lines "# xrl ...") that needs no traffic and no terminal is run on
# the run's own veth pairs (eth0, eth1 in the page), with the rules file of
# RULES' "Rule files" (its first example), and its output must be the
# page's, once both are normalized (program ids, the run's instance and
# interface names). Commands that need traffic (stats, top) are run too,
# and their column titles must be the page's. A command or output that no
# longer exists (a status line, a column) fails the check.
#
#   XRL=path/to/xrl bash tests/e2e/test_man_examples.sh   (MAN=docs/xrl.8)
#
# The last line is "N passed, M failed". Needs root and BPF; no traffic.
# shellcheck disable=SC2015  # "A && B || fail" is meant: fail unless all hold
# shellcheck disable=SC2317  # cleanup functions run from lib.sh's hooks
set -u

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
MAN=${MAN:-$XRLT_REPO/docs/xrl.8}
DEF=mxd$$       # the page's instance "default"
EDGE=mxe$$      # the page's instance "edge"
IF1=${XRLT_NAME}r
IF2=${XRLT_NAME}s

xrlt_counted_checks
xrlt_require_root
xrlt_init
XRLT_CREATED_NS=1
XRLT_CREATED_LINK=1
xrlt_make_pair "$XRLT_NS" "$IF1" "$XRLT_NS_IF" "$XRLT_NS_ADDR"
ip link add "$IF2" type veth peer name "${IF2}p" netns "$XRLT_NS" && ip link set "$IF2" up ||
	xrlt_fail "cannot make $IF2"
xrlt_on_cleanup 'for _p in "$DEF $IF1" "$DEF $IF2" "$EDGE $IF1" "$EDGE $IF2"; do set -- $_p; "$XRL" --instance "$1" detach "$2" >/dev/null 2>&1; done; ip link del "$IF2" 2>/dev/null; true'

# groff to text: the escapes the page's examples use
unman() { sed 's/\\-/-/g; s/\\(aq/'"'"'/g; s/\\e/\\/g'; }
# the first example of "Rule files": the rules file the examples load
awk '/^\.SS Rule files/ { in_s = 1; next } in_s && /^\.S[SH] / { exit }
	in_s && /^\.EX/ { ex = 1; next } in_s && /^\.EE/ { exit } ex' "$MAN" | unman >"$XRLT_TMP/rules.conf"
[ "$(grep -vc '^#\|^$' "$XRLT_TMP/rules.conf")" -ge 3 ] || xrlt_fail "no rules file in the page's Rule files: $(cat "$XRLT_TMP/rules.conf")"
# EXAMPLES' blocks, one "# command" line then its output lines
awk '/^\.SH EXAMPLES/ { in_s = 1; next } in_s && /^\.SH / { exit }
	in_s && /^\.EX/ { ex = 1; next } in_s && /^\.EE/ { ex = 0; print "#END"; next } in_s && ex' "$MAN" | unman >"$XRLT_TMP/examples"

# normalize: the run's names as the page's, ids and ages as placeholders
norm() {
	sed -e "s/$DEF/default/g; s/$EDGE/edge/g; s/$IF1/eth0/g; s/$IF2/eth1/g" \
	    -e "s|$XRLT_TMP/rules.conf|/etc/xrl/rules.conf|g" \
	    -e 's/program id [0-9]*/program id N/g' -e 's/ *$//' \
	    -e 's/^  interface \([^ ]*\)  */  interface \1 /'   # its column's width follows the names
}
# run the page's command line as the run's: instance and interface names, paths
run() {
	local line=$1 inst=$DEF args
	args=${line#xrl }
	case $args in --instance\ edge\ *) inst=$EDGE; args=${args#--instance edge } ;; esac
	# a scene of its own on an attached instance (the page's "default" was detached before)
	if [ "$inst" = "$DEF" ] && [[ $args != attach* ]] && ! "$XRL" --instance "$DEF" status >/dev/null 2>&1; then
		"$XRL" --instance "$DEF" attach "$IF1" >/dev/null 2>&1
	fi
	args=${args//eth0/$IF1}
	args=${args//eth1/$IF2}
	args=${args//\/etc\/xrl\/rules.conf/$XRLT_TMP/rules.conf}
	if [[ $args == *"; echo \$?" ]]; then   # the page shows the exit status too
		eval "\"\$XRL\" --instance $inst ${args%%;*}" 2>&1
		echo $?
		return
	fi
	eval "\"\$XRL\" --instance $inst $args" 2>&1
}

n=0
cmd=
: >"$XRLT_TMP/want"
check_one() {
	local c=$1 why=()
	[ -n "$c" ] || return 0
	case $c in
	"xrl top --watch"*) return 0 ;;     # a terminal's view (test_watch.sh)
	"xrl --pretty top"*) return 0 ;;    # sources that need traffic
	esac
	run "$c" | norm >"$XRLT_TMP/got"
	norm <"$XRLT_TMP/want" >"$XRLT_TMP/want.n"
	case $c in
	"xrl stats"* | "xrl top"*)
		# traffic-dependent rows: the column titles only
		diff <(grep -E '^(RULE|SOURCE) ' "$XRLT_TMP/want.n") <(grep -E '^(RULE|SOURCE) ' "$XRLT_TMP/got") >"$XRLT_TMP/d" ||
			why+=("column titles differ: $(cat "$XRLT_TMP/d")") ;;
	*)
		diff "$XRLT_TMP/want.n" "$XRLT_TMP/got" >"$XRLT_TMP/d" || why+=("output differs: $(tr '\n' '|' <"$XRLT_TMP/d")") ;;
	esac
	n=$((n + 1))
	verdict "EXAMPLES: # $c" "${why[@]}"
}
while IFS= read -r line; do
	case $line in
	"#END") check_one "$cmd"; cmd=; : >"$XRLT_TMP/want" ;;
	"# xrl "*) check_one "$cmd"; cmd=${line#\# }; : >"$XRLT_TMP/want" ;;
	*) [ -n "$cmd" ] && printf '%s\n' "$line" >>"$XRLT_TMP/want" ;;
	esac
done <"$XRLT_TMP/examples"
check "the page's examples ran: $n commands" "$n >= 12"

xrlt_finish
