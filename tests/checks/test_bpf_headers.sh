#!/usr/bin/env bash
# The BPF programs of the tree read no glibc header (scripts/check-bpf-headers,
# `make check-bpf-headers`), and the check refuses a program that does.
set -u
cd "$(dirname "$0")/../.." || exit 2
clang=${CLANG:-clang}
flags="-O2 -g -target bpf -mcpu=v3 -Wall -Wextra -I/usr/include/$(${CC:-gcc} -dumpmachine) -Ibpf"
pass=0
fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d /tmp/xrl-bpfhdr.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# 1. every BPF program of the tree, as make check-bpf-headers lists them
# shellcheck disable=SC2046
if out=$(scripts/check-bpf-headers "$clang" "$flags" bpf/*.bpf.c bench/*.bpf.c bench/bench_path.d/*.bpf.c 2>&1); then
	ok "the tree's BPF programs read no glibc header"
else
	bad "the tree's BPF programs read glibc headers:"; printf '%s\n' "$out"
fi

# 2. a program that pulls sys/socket.h through a UAPI header is refused, and told where
cat >"$tmp/bad.bpf.c" <<'C'
#include <linux/bpf.h>
#include <linux/if.h>
int x;
C
if out=$(scripts/check-bpf-headers "$clang" "$flags" "$tmp/bad.bpf.c" 2>&1); then
	bad "a program including linux/if.h passed the check"
elif printf '%s\n' "$out" | grep -q 'sys/socket.h'; then
	ok "a program including linux/if.h is refused, naming sys/socket.h"
else
	bad "refused without naming sys/socket.h:"; printf '%s\n' "$out"
fi

# 3. one that reads only UAPI headers passes
cat >"$tmp/good.bpf.c" <<'C'
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
int x;
C
if out=$(scripts/check-bpf-headers "$clang" "$flags" "$tmp/good.bpf.c" 2>&1); then
	ok "a program reading only UAPI headers passes"
else
	bad "a program reading only UAPI headers was refused:"; printf '%s\n' "$out"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
