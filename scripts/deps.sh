#!/bin/sh
# Install every Debian package xrl's build, tests, demo and bench need.
# Idempotent, and quiet when everything is already there.
#   scripts/deps.sh                 the build, tests, demo and bench
#   scripts/deps.sh --fresh-check   and what scripts/fresh-check needs (debootstrap)
set -e
# build: compilers, libraries and bpftool (skeletons); tests and demo: trafgen and
# netsniff-ng, redis, prometheus (promtool), curl, jq, tmux, nft/iptables, perl, ip;
# the bench also calls git, lscpu/nsenter (util-linux), sysctl (procps), zcat (gzip),
# getconf (libc-bin), awk (mawk), mount, sed, grep, cmp (diffutils), the coreutils;
# test_harden_ctl runs rule changes under strace (its fault injection); make deb
# uses dpkg-deb (dpkg) and readelf (binutils); the e2e tests' frame senders
# and bench_newconn's listener are Python scripts run by /usr/bin/python3;
# test_unit checks the systemd unit with systemd-analyze (systemd) and
# test_deb its changelog with dpkg-parsechangelog (dpkg-dev).
PKGS="clang llvm gcc make pkg-config libbpf-dev libxdp-dev xdp-tools bpftool libelf-dev zlib1g-dev
libcmocka-dev libjansson-dev libhiredis-dev redis-server redis-tools libmicrohttpd-dev netsniff-ng
iproute2 nftables iptables util-linux procps man-db jq perl tmux prometheus curl
git gzip mawk coreutils libc-bin mount sed grep diffutils
strace dpkg binutils python3 systemd dpkg-dev
python3-scapy nginx-light wrk hey hping3"
# python3-scapy: tests/e2e/test_synproxy.sh crafts handshakes (forged, replayed ACKs);
# nginx-light: xrl http's tests and bench run a real nginx (auth_request is built in; the
# tests start their own on loopback ports, never the system one); wrk, hey: the HTTP load
# of those tests and of bench/bench_http.sh; hping3: tests/e2e/test_busy.sh's spoofed SYNs
case ${1:-} in
--fresh-check) PKGS="$PKGS debootstrap tar" ;;
"") ;;
*) echo "usage: scripts/deps.sh [--fresh-check]" >&2; exit 2 ;;
esac
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "xrl: missing packages:$missing; run as root to install them" >&2
		exit 1
	fi
	echo "xrl: installing$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# BPF programs and maps are pinned in bpffs; mount it when missing, as bpftool does.
if ! mountpoint -q /sys/fs/bpf 2>/dev/null; then
	mount -t bpf bpf /sys/fs/bpf
fi
