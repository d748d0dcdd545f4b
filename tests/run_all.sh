#!/usr/bin/env bash
# Run every test suite (cmocka unit and BPF_PROG_TEST_RUN programs, then the
# end-to-end scripts), each to the end even when an earlier one failed, and
# close with one line counting the tests of all of them.
#   tests/run_all.sh BUILD_DIR TEST_PROGRAM...   (make test passes what it built)
set -u
if [ $# -lt 2 ]; then
	echo "usage: tests/run_all.sh BUILD_DIR TEST_PROGRAM... (run it through make test)" >&2
	exit 2
fi
build=$1
total_pass=0
total_fail=0
failed_suites=()

run_suite() { # NAME CMD...
	local name=$1 out rc p f
	shift
	echo "== $name"
	out=$(mktemp)
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	# cmocka: "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s), listed below:"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed.*/\1/p' "$out" | tail -1)
	# our scripts: "N passed, M failed"
	if [ -z "$p" ] && [ -z "$f" ]; then
		read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$out" | tail -1)
	fi
	p=${p:-0}
	f=${f:-0}
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1   # died without saying what failed
	fi
	rm -f "$out"
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	[ "$rc" = 0 ] || failed_suites+=("$name")
}

# the tree's own checks (tests/checks: BPF headers, man page against the tables, completion, Debian versions)
for t in tests/checks/test_*.sh; do
	run_suite "$t" bash "$t"
done
# the test programs the Makefile built (its UNIT_TESTS, PROG_TESTS, REDIS_TESTS)
shift
for t in "$@"; do
	run_suite "$(basename "$t")" "$t"
done
for t in tests/e2e/test_*.sh; do
	run_suite "$t" env XRL="$build/xrl" bash "$t"
done

echo
if [ ${#failed_suites[@]} -gt 0 ]; then
	echo "failed suites: ${failed_suites[*]}"
fi
echo "all suites: $total_pass passed, $total_fail failed"
[ ${#failed_suites[@]} -eq 0 ]
