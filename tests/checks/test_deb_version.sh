#!/usr/bin/env bash
# The Debian version of an xrl version (scripts/mkdeb --version-of, what
# make deb writes in the package): valid for dpkg, and ordered as the
# releases are (a build after a tag sorts after it and before the next one;
# a release candidate before its release).
#   bash tests/checks/test_deb_version.sh
# Last line: "N passed, M failed".
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pass=0
fail=0
ok() { echo "  ok    $*"; pass=$((pass + 1)); }
bad() { echo "  FAIL  $*"; fail=$((fail + 1)); }
base=$(tr -d ' \n' <"$repo/VERSION")
of() { "$repo/scripts/mkdeb" --version-of "$1" 2>&1; }
# expect DESCRIBE DEBIAN_VERSION
expect() {
	local got
	got=$(of "$1")
	if [ "$got" = "$2" ] && dpkg --validate-version "$got" 2>/dev/null && [[ $got != *-* ]]; then
		ok "'$1' -> $got"
	else
		bad "'$1' -> '$got', expected $2 (valid, no revision)"
	fi
}
expect 0.1.0 0.1.0
expect v0.1.0 0.1.0
expect 0.1.0-12-gabc1234 0.1.0+12.gabc1234
expect v0.1.0-12-gabc1234-dirty 0.1.0+12.gabc1234.dirty
expect 0.2.0-rc1 0.2.0~rc1
expect 0.2.0-rc1-3-gdeadbee 0.2.0~rc1+3.gdeadbee
expect 005db95 "$base+g005db95"          # git describe --always without a tag
expect 005db95-dirty "$base+g005db95.dirty"
expect unknown "$base"
# order: each one before the next
prev=
for d in 0.1.0 0.1.0-1-gaaaaaaa 0.1.0-12-gabc1234 0.2.0-rc1 0.2.0-rc1-3-gdeadbee 0.2.0 0.2.0-1-g0000000 0.10.0; do
	v=$(of "$d")
	if [ -n "$prev" ]; then
		dpkg --compare-versions "$prev" lt "$v" && ok "$prev < $v" || bad "$prev is not before $v"
	fi
	prev=$v
done
out=$(of "not a version") && bad "'not a version' gave '$out'" || ok "'not a version' is refused: $out"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
