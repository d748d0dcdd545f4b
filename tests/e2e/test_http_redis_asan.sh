#!/usr/bin/env bash
# The --global path's deadlines under AddressSanitizer: build/test_http's
# test_redis_deadlines built again with -fsanitize=address (the test and
# user/http/xrl_http_redis.c instrumented, over the build's libraries) and
# XRL_TEST_SLOW_UNLOCK, which makes the calls' timer thread sleep 2 ms after
# each release of a lock, as if preempted there. Against a real TCP listener
# that never answers, the timer answers every call -1 while the dispatcher
# frees the calls once its connect fails: a thread that reads a call after
# releasing the lock reads freed memory, and AddressSanitizer stops the test.
set -u
. "$(dirname "$0")/lib.sh"
XRL=${XRL:-build/xrl}
xrlt_counted_checks
xrlt_require_cmd cc
xrlt_init

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "$(dirname "$XRL")" && pwd)
for f in libxrl_http.a libxrl_daemon.a libxrl.a; do
	[ -f "$BUILD/$f" ] || xrlt_fail "$BUILD/$f missing: run make first"
done

section "test_redis_deadlines under AddressSanitizer"
if ! (cd "$SRC" && cc -O1 -g -fsanitize=address -fno-omit-frame-pointer -DXRL_TEST_SLOW_UNLOCK \
	-Ibpf -Iuser/lib -I"$BUILD" -Iuser/daemon -Iuser/http -Iuser/cli -DXRL_SRC_DIR="\"$SRC\"" \
	tests/unit/test_http.c user/http/xrl_http_redis.c \
	"$BUILD/libxrl_http.a" "$BUILD/libxrl_daemon.a" "$BUILD/libxrl.a" -o "$XRLT_TMP/test_http_asan" \
	-lcmocka -lhiredis -lmicrohttpd -lpthread -lm -lbpf -lelf -lz -ljansson -ldl) \
	>"$XRLT_TMP/cc.log" 2>&1; then
	xrlt_fail "the AddressSanitizer build failed: $(tail -3 "$XRLT_TMP/cc.log")"
fi
# the Redis path's struct lives until the process ends (its stats are read
# until the server stops): no leak check
ASAN_OPTIONS=detect_leaks=0 timeout 60 "$XRLT_TMP/test_http_asan" test_redis_deadlines \
	>"$XRLT_TMP/asan.log" 2>&1
rc=$?
err=$(grep -m1 -A3 "ERROR: AddressSanitizer" "$XRLT_TMP/asan.log" | tr -s ' \n' ' ')
[ -z "$err" ] && ok "no memory error while the timer answers calls the dispatcher frees" ||
	bad "a memory error while the timer answers calls the dispatcher frees: $err"
passed=$(grep -c 'OK \] test_redis_deadlines' "$XRLT_TMP/asan.log")
check "test_redis_deadlines passes: each call answered once, -1 (exit $rc)" "$rc == 0 && $passed == 1"

xrlt_finish
