#!/usr/bin/env bash
# The request layer's cost (xrl http): requests/s and p50/p99 latency with
# wrk through one nginx (worker_processes 1), all answered 200 (the limits
# are far above the load, so the figures are the machinery's cost):
#   plain        nginx serving a file, no limiter
#   limit_req    nginx's own limit_req at the same rate as the xrl rule
#   auth-204     auth_request to a trivial upstream that always answers 204,
#                an nginx process of its own on xrl http's CPU (what any
#                external decision service costs inside nginx)
#   xrl-local    auth_request to xrl http, local rule, over TCP
#   xrl-unix     the same over a unix socket
#   xrl-global   auth_request to xrl http, --global rule, local redis-server
# and /check alone with wrk (no nginx), xrl http pinned to CPU 0 and wrk to
# CPU 1: decisions/s on one core, local and --global, with the Redis calls
# per decision and per batch (pipelining) from its /metrics, and the CPU
# time per decision of xrl http and of redis-server (from /proc) with
# xrl http's thread count. Not a test: figures are printed, never asserted.
#
#   bench/bench_http.sh [--secs S] [--conns C] [--no-build] [--only CASES] [--markdown FILE]
#
#   --secs S        each wrk run (default 10)
#   --only CASES    only these cases, comma-separated (plain, limit_req, auth204, xrllocal,
#                   xrlunix, xrlglobal, check_local, check_global): the others print 0
#   --conns C       wrk's connections (default 16: xrl http takes 32 from one address)
#   --no-build      do not run make for build/xrl
#   --markdown FILE write the markdown section to FILE (else it is printed)
#
# Everything listens on free loopback ports; EXIT/INT/TERM stop the
# processes (by pid) and remove the temporary directory (tests/e2e/lib.sh).
set -u
cd "$(dirname "$0")/.." || exit 2
secs=10 conns=16 build=1 md= only=
while [ $# -gt 0 ]; do
	case $1 in
	--secs) secs=$2; shift 2 ;;
	--conns) conns=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	--only) only=,$2,; shift 2 ;;
	--markdown) md=$2; shift 2 ;;
	*) echo "usage: bench/bench_http.sh [--secs S] [--conns C] [--no-build] [--only CASES] [--markdown FILE]" >&2; exit 2 ;;
	esac
done
[ $build = 1 ] && make --no-print-directory build/xrl >&2
XRL=${XRL:-build/xrl}
XRLT_NAME=bhttp$$
. tests/e2e/lib.sh
. tests/e2e/http_lib.sh
xrlt_require_cmd nginx wrk redis-server redis-cli curl taskset
xrlt_init

rport=$(http_free_port)
(cd "$XRLT_TMP" && exec redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no) \
	>"$XRLT_TMP/redis.log" 2>&1 &
xrlt_track $!
redis_pid=$!
for _ in $(seq 50); do redis-cli -p "$rport" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done

printf 'api --key ip --rate 1000000/s --burst 1000000\n' >"$XRLT_TMP/local.rules"
printf 'api --key ip --rate 1000000/s --burst 1000000 --global\n' >"$XRLT_TMP/global.rules"
# the services on CPU 0 (wrk runs on CPU 1)
start_pinned() { # NAME RULES ARGS...
	local name=$1 rules=$2 port
	shift 2
	port=$(http_free_port)
	(exec taskset -c 0 "$XRL" http --rules "$rules" --listen "127.0.0.1:$port" "$@") \
		>"$XRLT_TMP/http-$name.log" 2>&1 &
	xrlt_track $!
	printf -v "HTTP_PORT_$name" '%s' "$port"
	printf -v "HTTP_PID_$name" '%s' "$!"
	http_wait_url "http://127.0.0.1:$port/healthz" || xrlt_fail "xrl http $name did not start"
}
start_pinned local "$XRLT_TMP/local.rules"
start_pinned global "$XRLT_TMP/global.rules" --redis "redis://127.0.0.1:$rport" --redis-timeout 50
usock=$XRLT_TMP/local.sock
(exec taskset -c 0 "$XRL" http --rules "$XRLT_TMP/local.rules" --listen "unix:$usock") \
	>"$XRLT_TMP/http-unix.log" 2>&1 &
xrlt_track $!
for _ in $(seq 50); do curl -s -o /dev/null -m 1 --unix-socket "$usock" http://x/healthz && break; sleep 0.1; done

# one nginx: a location per case, a trivial 204 server as the auth floor
nport=$(http_free_port) tport=$(http_free_port)
dir=$XRLT_TMP/nginx
mkdir -p "$dir/logs" "$dir/tmp" "$XRLT_TMP/www"
echo ok >"$XRLT_TMP/www/index.html"
chmod 755 "$XRLT_TMP" "$XRLT_TMP/www"
auth_loc() { # NAME UPSTREAM PATH
	cat <<EOF
        location /$1 {
            auth_request /_auth_$1;
            try_files /index.html =404;
        }
        location = /_auth_$1 {
            internal;
            proxy_pass http://$2$3;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URI \$request_uri;
            proxy_set_header X-Original-Method \$request_method;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
        }
EOF
}
{ http_nginx_head "$dir" 4096; cat; } >"$dir/nginx.conf" <<EOF
    limit_req_zone \$binary_remote_addr zone=z:1m rate=1000000r/s;
    upstream trivial { server 127.0.0.1:$tport; keepalive 16; }
    upstream xrl_local { server 127.0.0.1:$HTTP_PORT_local; keepalive 16; }
    upstream xrl_global { server 127.0.0.1:$HTTP_PORT_global; keepalive 16; }
    upstream xrl_unix { server unix:$usock; keepalive 16; }
    server {
        listen 127.0.0.1:$nport;
        root $XRLT_TMP/www;
        location /plain { try_files /index.html =404; }
        location /limit_req { limit_req zone=z burst=1000000 nodelay; try_files /index.html =404; }
$(auth_loc auth204 trivial /auth)
$(auth_loc xrllocal xrl_local /auth)
$(auth_loc xrlglobal xrl_global /auth)
$(auth_loc xrlunix xrl_unix /auth)
    }
}
EOF
(cd "$dir" && exec taskset -c 0 nginx -c "$dir/nginx.conf" -p "$dir" -g "daemon off; pid $dir/nginx.pid;") \
	>"$dir/logs/stdout.log" 2>&1 &
xrlt_track $!
# the trivial 204 upstream: a process of its own on CPU 0, as xrl http is
tdir=$XRLT_TMP/trivial
mkdir -p "$tdir/logs" "$tdir/tmp"
{ http_nginx_head "$tdir" 4096; cat; } >"$tdir/nginx.conf" <<EOF
    server {
        listen 127.0.0.1:$tport;
        location = /auth { return 204; }
    }
}
EOF
(cd "$tdir" && exec taskset -c 0 nginx -c "$tdir/nginx.conf" -p "$tdir" -g "daemon off; pid $tdir/nginx.pid;") \
	>"$tdir/logs/stdout.log" 2>&1 &
xrlt_track $!
http_wait_url "http://127.0.0.1:$nport/plain" || xrlt_fail "nginx did not start: $(tail -3 "$dir/logs/error.log")"

# wrk URL [ARGS...]: "req/s p50_ms p99_ms non2xx"
run_wrk() {
	local url=$1
	shift
	timeout $((secs + 30)) taskset -c 1 wrk -t1 -c"$conns" -d"${secs}s" --latency "$@" "$url" 2>&1 |
		awk '
		function ms(v) { if (v ~ /us$/) return v * 0.001; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
		/Requests\/sec:/ { rps = $2 }
		$1 == "50%" { p50 = ms($2) }
		$1 == "99%" { p99 = ms($2) }
		/Non-2xx or 3xx responses:/ { bad = $NF }
		END { printf "%.0f %.3f %.3f %d\n", rps, p50, p99, bad }'
}
# a series of the service's /metrics, without its instance label: NAME or NAME{LABELS}
metric() { curl -s -m 5 "http://127.0.0.1:$1/metrics" | sed 's/instance="default",\{0,1\}//; s/{}//' | awk -v n="$2" '$1 == n { print $2 }'; }

# a process's CPU time so far (utime + stime), in clock ticks
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
want() { [ -z "$only" ] || [[ $only == *,$1,* ]]; }

declare -A R
for c in plain limit_req auth204 xrllocal xrlunix xrlglobal; do
	R[$c]="0 0 0 0"
	want "$c" || continue
	echo "== nginx /$c" >&2
	R[$c]=$(run_wrk "http://127.0.0.1:$nport/$c")
	echo "   ${R[$c]}" >&2
done
R[check_local]="0 0 0 0"
if want check_local; then
	echo "== /check local" >&2
	R[check_local]=$(run_wrk "http://127.0.0.1:$HTTP_PORT_local/check" -H 'X-Original-URI: /')
	echo "   ${R[check_local]}" >&2
fi
R[check_global]="0 0 0 0"
c0=$(metric "$HTTP_PORT_global" xrl_http_redis_calls_total) b0=$(metric "$HTTP_PORT_global" xrl_http_redis_batches_total)
d0=$(metric "$HTTP_PORT_global" 'xrl_http_decisions_total{rule="api",result="pass"}')
t0=$(metric "$HTTP_PORT_global" xrl_http_redis_timeouts_total)
x0=$(cpu_ticks "$HTTP_PID_global") r0=$(cpu_ticks "$redis_pid") threads=0
if want check_global; then
	echo "== /check --global" >&2
	R[check_global]=$(run_wrk "http://127.0.0.1:$HTTP_PORT_global/check" -H 'X-Original-URI: /')
	echo "   ${R[check_global]}" >&2
	threads=$(awk '$1 == "Threads:" { print $2 }' "/proc/$HTTP_PID_global/status")
fi
c1=$(metric "$HTTP_PORT_global" xrl_http_redis_calls_total) b1=$(metric "$HTTP_PORT_global" xrl_http_redis_batches_total)
d1=$(metric "$HTTP_PORT_global" 'xrl_http_decisions_total{rule="api",result="pass"}')
t1=$(metric "$HTTP_PORT_global" xrl_http_redis_timeouts_total)
x1=$(cpu_ticks "$HTTP_PID_global") r1=$(cpu_ticks "$redis_pid")
calls=$((c1 - c0)) batches=$((b1 - b0)) decisions=$((d1 - d0))
hz=$(getconf CLK_TCK)
# CPU µs per decision of one process: TICKS0 TICKS1
cpu_us() { awk -v a="$1" -v b="$2" -v d="$decisions" -v hz="$hz" 'BEGIN { printf "%.1f", d ? (b - a) * 1e6 / hz / d : 0 }'; }

rps() { echo "${R[$1]}" | awk '{ print $1 }'; }
ratio() { awk -v a="$(rps "$1")" -v b="$(rps "$2")" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
{
	echo "## 7. The request layer: \`xrl http\`"
	echo
	echo "wrk -t1 -c$conns -d${secs}s --latency on CPU 1; nginx (worker_processes 1) and xrl http on"
	echo "CPU 0; every request answered 200 (limits far above the load: the figures are the"
	echo "machinery's cost). $(date -u +%Y-%m-%d) $(date -u +%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg) at the end."
	echo
	echo '| case | requests/s | p50 ms | p99 ms | non-2xx |'
	echo '|---|---:|---:|---:|---:|'
	for c in plain limit_req auth204 xrllocal xrlunix xrlglobal check_local check_global; do
		case $c in
		plain) l="nginx, no limiter" ;;
		limit_req) l="nginx limit_req, same rate" ;;
		auth204) l="auth_request to a trivial 204 upstream (the floor)" ;;
		xrllocal) l="auth_request to xrl http, local rule (TCP)" ;;
		xrlunix) l="auth_request to xrl http, local rule (unix socket)" ;;
		xrlglobal) l="auth_request to xrl http, --global (local Redis)" ;;
		check_local) l="/check alone, local, one core" ;;
		check_global) l="/check alone, --global, one core" ;;
		esac
		echo "${R[$c]}" | awk -v l="$l" '{ printf "| %s | %d | %.3f | %.3f | %d |\n", l, $1, $2, $3, $4 }'
	done
	echo
	echo "- xrl http local through nginx: $(ratio xrllocal auth204)x the trivial-204 floor's throughput over TCP,"
	echo "  $(ratio xrlunix auth204)x over a unix socket (target 0.85x)."
	echo "- /check: $(rps check_local) decisions/s local (target 50,000), $(rps check_global) with --global (target 25,000)."
	echo "- --global: $calls Redis calls for $decisions decisions ($(awk -v c="$calls" -v d="$decisions" 'BEGIN { printf "%.2f", d ? c / d : 0 }') per decision),"
	echo "  in $batches pipelined batches ($(awk -v c="$calls" -v b="$batches" 'BEGIN { printf "%.1f", b ? c / b : 0 }') calls per batch);"
	echo "  CPU per decision: xrl http $(cpu_us "$x0" "$x1") µs, redis-server $(cpu_us "$r0" "$r1") µs;"
	echo "  $((t1 - t0)) calls not answered by the deadline (50 ms); xrl http's threads at the end of the run: $threads."
} >"$XRLT_TMP/section.md"
if [ -n "$md" ]; then cp "$XRLT_TMP/section.md" "$md"; fi
cat "$XRLT_TMP/section.md"
