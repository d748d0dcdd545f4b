#!/bin/sh
# Install every Debian package xrl's build, tests, demo and bench need.
# Idempotent, and quiet when everything is already there.
set -e
PKGS="clang llvm gcc make pkg-config libbpf-dev libxdp-dev xdp-tools bpftool libelf-dev zlib1g-dev
libcmocka-dev libjansson-dev libhiredis-dev redis-server libmicrohttpd-dev netsniff-ng
iproute2 nftables iptables util-linux man-db jq perl tmux prometheus curl"
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
