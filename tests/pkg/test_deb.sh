#!/usr/bin/env bash
# The Debian package (make deb): its control data, then installed for real
# with apt-get, checked (binary, version, man page, completion, units,
# conffile, /usr/share/doc: copyright, changelog, the unit's example
# settings), removed with an instance attached (detached, and said so), and
# purged, leaving nothing of it. Changes the system while it runs; refuses
# to start when a package xrl is installed already, or when an xrl instance
# is attached (removing the package detaches every instance).
#   bash tests/pkg/test_deb.sh build/xrl_VERSION_ARCH.deb   (as root)
# Last line: "N passed, M failed".
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pass=0
fail=0
ok() { echo "  ok    $*"; pass=$((pass + 1)); }
bad() { echo "  FAIL  $*"; fail=$((fail + 1)); }
end() { echo "$pass passed, $fail failed"; [ "$fail" = 0 ]; exit; }
deb=${1:-}
[ -f "$deb" ] || { bad "usage: tests/pkg/test_deb.sh FILE.deb (make deb makes build/xrl_*.deb)"; end; }
[ "$(id -u)" = 0 ] || { bad "run as root: the test installs the package"; end; }
if dpkg-query -W -f='${Status}' xrl 2>/dev/null | grep -qv "not-installed"; then
	bad "a package xrl is installed already ($(dpkg-query -W -f='${Version} ${Status}' xrl)): not touching it"
	end
fi
if [ -n "$(ls /sys/fs/bpf/xrl 2>/dev/null)" ]; then
	bad "xrl instances are attached ($(ls /sys/fs/bpf/xrl | paste -sd' ' -)): removing the package would detach them"
	end
fi
deb=$(readlink -f "$deb")
tmp=$(mktemp -d)
installed=0
cleanup() {
	[ "$installed" = 1 ] && DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq xrl >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive

echo "-- the package's control data"
version=$(dpkg-deb -f "$deb" Version)
depends=$(dpkg-deb -f "$deb" Depends)
[ "$(dpkg-deb -f "$deb" Package)" = xrl ] && ok "package xrl, version $version" || bad "package name: $(dpkg-deb -f "$deb" Package)"
[ "$(basename "$deb")" = "xrl_${version}_$(dpkg-deb -f "$deb" Architecture).deb" ] &&
	ok "file name $(basename "$deb") is xrl_VERSION_ARCH.deb" || bad "file name $(basename "$deb") does not match version $version"
dpkg --compare-versions "$version" gt 0 2>/dev/null && ! [[ $version == *-* ]] &&
	ok "$version is a valid Debian version, without a revision" || bad "invalid Debian version '$version'"
dpkg-deb -x "$deb" "$tmp/x"
# every library the binary links directly comes from a package in Depends
missing=()
for so in $(readelf -d "$tmp/x/usr/sbin/xrl" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
	path=$(ldd "$tmp/x/usr/sbin/xrl" | awk -v s="$so" '$1 == s && $3 ~ /^\// { print $3; exit }')
	pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "/usr$path" 2>/dev/null)
	pkg=${pkg%%:*}
	[[ ", $depends" == *", $pkg "* ]] || missing+=("$so (${pkg:-no package})")
done
[ ${#missing[@]} = 0 ] && ok "Depends names the package of each linked library: $depends" ||
	bad "Depends ($depends) lacks: ${missing[*]}"
[ "$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | grep -c .)" -ge 5 ] || bad "Depends has fewer than 5 packages: $depends"
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" = /etc/xrl/rules ] &&
	ok "conffiles: /etc/xrl/rules" || bad "conffiles: $(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles 2>&1)"

echo "-- apt-get install"
if apt-get install -y -qq "$deb" >"$tmp/apt" 2>&1; then
	installed=1
	ok "apt-get install $(basename "$deb")"
else
	bad "apt-get install failed: $(tail -5 "$tmp/apt")"
	end
fi
dpkg-query -W -f='${Status}' xrl | grep -q "install ok installed" && ok "dpkg: xrl install ok installed" ||
	bad "dpkg status: $(dpkg-query -W -f='${Status}' xrl)"
dpkg -L xrl >"$tmp/list"
# xrl --version: the package's version, then the git describe it was built from
out=$(/usr/sbin/xrl --version 2>&1) && [ "${out%%$'\n'*}" = "xrl $version" ] &&
	want=$("$repo/scripts/mkdeb" --version-of "$(sed -n 's/^built from //p' <<<"$out")") && [ "$want" = "$version" ] &&
	ok "xrl --version: '$(head -2 <<<"$out" | paste -sd'|')' (package version $version)" ||
	bad "xrl --version: '$out' does not give the package version $version"
# /usr/share/doc/xrl: copyright (machine-readable) and the changelog of this version
doc=/usr/share/doc/xrl
grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' $doc/copyright 2>/dev/null &&
	grep -q '^License: GPL-2.0 or BSD-2-Clause' $doc/copyright && ok "$doc/copyright: DEP-5, GPL-2.0 or BSD-2-Clause" ||
	bad "$doc/copyright: $(head -3 $doc/copyright 2>&1)"
zcat $doc/changelog.gz >"$tmp/changelog" 2>&1 && [ "$(dpkg-parsechangelog -l "$tmp/changelog" -S Version 2>&1)" = "$version" ] &&
	ok "$doc/changelog.gz: dpkg-parsechangelog reads version $version" ||
	bad "$doc/changelog.gz: $(head -3 "$tmp/changelog")"
[ -f $doc/examples/xrl-NAME.default ] && ok "$doc/examples/xrl-NAME.default: the unit's settings, commented" ||
	bad "no $doc/examples/xrl-NAME.default"
[ "$(dpkg-deb -f "$deb" Recommends)" = bash-completion ] && ok "Recommends: bash-completion" ||
	bad "Recommends: '$(dpkg-deb -f "$deb" Recommends)'"
grep -q '^xrl=${XRL:-/usr/sbin/xrl}' /usr/lib/xrl/xrl-unit-start && [ -x /usr/lib/xrl/xrl-unit-start ] &&
	grep -q '^ExecStartPre=+/usr/lib/xrl/xrl-unit-start %i' /lib/systemd/system/xrl@.service &&
	ok "the unit's ExecStartPre /usr/lib/xrl/xrl-unit-start runs /usr/sbin/xrl" ||
	bad "/usr/lib/xrl/xrl-unit-start: $(grep -n 'xrl=' /usr/lib/xrl/xrl-unit-start 2>&1)"
man -P cat xrl 2>/dev/null | grep -q "rate limiter" && ok "man xrl renders the page (NAME: $(man -P cat xrl 2>/dev/null | grep -m1 'rate limiter' | sed 's/^ *//'))" ||
	bad "man xrl does not render: $(man -w xrl 2>&1)"
comp=/usr/share/bash-completion/completions/xrl
got=$(bash --norc --noprofile -c 'source "$1" && COMP_WORDS=(xrl ru) COMP_CWORD=1 && _xrl && echo "${COMPREPLY[*]}"' _ "$comp" 2>&1)
[ "$got" = rule ] && ok "$comp completes 'xrl ru' to rule" || bad "$comp: 'xrl ru' gives '$got'"
unit=/lib/systemd/system/xrl@.service
[ -f "$unit" ] && grep -q '^ExecStart=/usr/sbin/xrl ' "$unit" && ! grep -q /usr/local "$unit" &&
	ok "$unit runs /usr/sbin/xrl" || bad "$unit: $(grep -n 'Exec' "$unit" 2>&1 | head -3)"
[ -f /etc/xrl/rules ] && ! grep -qv '^#' /etc/xrl/rules && ok "/etc/xrl/rules: comments only (an empty rule set)" ||
	bad "/etc/xrl/rules: $(grep -v '^#' /etc/xrl/rules 2>&1 | head -2)"
for f in /usr/sbin/xrl /usr/share/man/man8/xrl.8.gz "$comp" "$unit" /etc/xrl/rules; do
	grep -qx "$f" "$tmp/list" || bad "dpkg -L xrl does not list $f"
done
# the files of make install are the package's files (one list, the Makefile's install-files)
[ -x "$repo/build/xrl" ] && make -s -C "$repo" install DESTDIR="$tmp/inst" PREFIX=/usr UNITDIR=/lib/systemd/system >/dev/null 2>&1 &&
	diff <(cd "$tmp/inst" && find . -type f | sed 's|^\.||' | sort) \
		<(cd "$tmp/x" && find . -type f | sed 's|^\.||' | grep -vx /usr/share/doc/xrl/changelog.gz | sort) >"$tmp/d" &&
	ok "make install DESTDIR=... PREFIX=/usr installs the package's files (but the changelog of the package)" || bad "make install and the package differ: $(head -5 "$tmp/d")"

echo "-- apt-get remove with an instance attached: its program is detached, and said so"
inst=pkgt$$ vif=xrlpkg$$
ip link add "$vif" type veth peer name "${vif}p" && ip link set "$vif" up && ip link set "${vif}p" up ||
	bad "cannot make the veth pair $vif"
/usr/sbin/xrl --instance "$inst" attach "$vif" >"$tmp/att" 2>&1 || bad "xrl attach $vif: $(cat "$tmp/att")"
prog=$(ip -o link show dev "$vif" | grep -o 'prog/xdp id [0-9]*')
echo "# edited by the test" >>/etc/xrl/rules
apt-get remove -y -q xrl >"$tmp/apt" 2>&1 && ok "apt-get remove xrl" || bad "apt-get remove failed: $(tail -3 "$tmp/apt")"
if [ -n "$prog" ] && ! ip -o link show dev "$vif" | grep -q 'prog/xdp' && [ ! -e "/sys/fs/bpf/xrl/$inst" ] &&
	grep -q "detaching instance $inst from $vif" "$tmp/apt"; then
	ok "remove with instance $inst attached to $vif ($prog): detached, pins gone, '$(grep -m1 "detaching instance $inst" "$tmp/apt")'"
else
	bad "remove with an instance attached: $(ip -o link show dev "$vif" | grep -o 'prog/xdp.*' | head -c 80); $(ls "/sys/fs/bpf/xrl/$inst" 2>&1 | head -2); $(grep -i xrl "$tmp/apt" | head -3)"
fi
ip link show dev "$vif" 2>/dev/null | grep -q 'prog/xdp' && ip link set dev "$vif" xdp off
ip link del "$vif" 2>/dev/null

echo "-- after remove, purge"
[ ! -e /usr/sbin/xrl ] && [ -f /etc/xrl/rules ] && dpkg-query -W -f='${Status}' xrl | grep -q config-files &&
	ok "after remove: binary gone, the edited conffile /etc/xrl/rules kept (config-files)" ||
	bad "after remove: $(ls -l /usr/sbin/xrl /etc/xrl/rules 2>&1 | tr '\n' ' ') $(dpkg-query -W -f='${Status}' xrl 2>&1)"
apt-get purge -y -qq xrl >"$tmp/apt" 2>&1 && ok "apt-get purge xrl" || bad "apt-get purge failed: $(tail -3 "$tmp/apt")"
installed=0
left=()
while read -r f; do
	[ -d "$f" ] && continue   # directories shared with other packages stay
	[ -e "$f" ] || [ -L "$f" ] && left+=("$f")
done <"$tmp/list"
[ -e /etc/xrl ] && left+=(/etc/xrl)
[ -e /usr/share/bash-completion/completions/xrl ] && left+=(completion)
[ ${#left[@]} = 0 ] && ok "after purge: none of the $(wc -l <"$tmp/list") paths of dpkg -L is left, nor /etc/xrl" ||
	bad "after purge, left: ${left[*]}"
dpkg-query -W -f='${Status}' xrl 2>/dev/null | grep -qv "not-installed" && bad "dpkg still knows xrl: $(dpkg-query -W -f='${Status}' xrl)" ||
	ok "dpkg: xrl is not installed"
end
