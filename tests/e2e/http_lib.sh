# shellcheck shell=bash
# tests/e2e/http_lib.sh: helpers of the request layer's tests (test_http*.sh):
# `xrl http` and a real nginx in front of it, each on a free loopback port, all
# stopped by lib.sh's cleanup. Source after lib.sh, call after xrlt_init.

# a free TCP port on 127.0.0.1 (the kernel's choice)
http_free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Wait until URL answers (any status) within 5 s.
http_wait_url() {
	local i
	for i in $(seq 50); do
		curl -s -o /dev/null -m 1 "$1" && return 0
		sleep 0.1
	done
	return 1
}

# http_start NAME RULES_FILE [ARGS...]: start `xrl http` on a free port; sets
# HTTP_PORT_<NAME> and HTTP_PID_<NAME>; its log is $XRLT_TMP/http-NAME.log.
http_start() {
	local name=$1 rules=$2 port
	shift 2
	port=$(http_free_port)
	("$XRL" http --rules "$rules" --listen "127.0.0.1:$port" "$@") >"$XRLT_TMP/http-$name.log" 2>&1 &
	xrlt_track $!
	printf -v "HTTP_PORT_$name" '%s' "$port"
	printf -v "HTTP_PID_$name" '%s' "$!"
	http_wait_url "http://127.0.0.1:$port/healthz" ||
		xrlt_fail "xrl http $name did not answer on 127.0.0.1:$port: $(tail -3 "$XRLT_TMP/http-$name.log")"
}

# http_start_unix NAME RULES_FILE [ARGS...]: the same on the unix socket
# $XRLT_TMP/NAME.sock (HTTP_SOCK_<NAME>).
http_start_unix() {
	local name=$1 rules=$2 sock i
	shift 2
	sock=$XRLT_TMP/$name.sock
	("$XRL" http --rules "$rules" --listen "unix:$sock" "$@") >"$XRLT_TMP/http-$name.log" 2>&1 &
	xrlt_track $!
	printf -v "HTTP_SOCK_$name" '%s' "$sock"
	printf -v "HTTP_PID_$name" '%s' "$!"
	for i in $(seq 50); do
		curl -s -o /dev/null -m 1 --unix-socket "$sock" http://x/healthz && return 0
		sleep 0.1
	done
	xrlt_fail "xrl http $name did not answer on unix:$sock: $(tail -3 "$XRLT_TMP/http-$name.log")"
}

# http_nginx_head DIR CONNS: the start of an nginx.conf for a private nginx
# under DIR (logs and temp files there, no access log), into its http block
http_nginx_head() {
	cat <<EOF
worker_processes 1;
error_log $1/logs/error.log warn;
events { worker_connections $2; }
http {
    access_log off;
    client_body_temp_path $1/tmp/body;
    proxy_temp_path $1/tmp/proxy;
    fastcgi_temp_path $1/tmp/fastcgi;
    uwsgi_temp_path $1/tmp/uwsgi;
    scgi_temp_path $1/tmp/scgi;
EOF
}

# http_nginx NAME XRL_PORT|unix:PATH...: nginx on a free port (NGINX_PORT_<NAME>) serving
# $XRLT_TMP/www/index.html behind auth_request to the xrl http services given
# (one upstream, keepalive), refusals turned into 429 with the RateLimit fields
# and Retry-After, as README's configuration does.
http_nginx() {
	local name=$1 port dir servers="" p
	shift
	port=$(http_free_port)
	dir=$XRLT_TMP/nginx-$name
	mkdir -p "$dir/logs" "$dir/tmp" "$XRLT_TMP/www"
	echo ok >"$XRLT_TMP/www/index.html"
	chmod 755 "$XRLT_TMP" "$XRLT_TMP/www"   # nginx's workers run as nobody
	for p in "$@"; do
		case $p in
		unix:*) servers="$servers server $p;" ;;
		*) servers="$servers server 127.0.0.1:$p;" ;;
		esac
	done
	{ http_nginx_head "$dir" 1024; cat; } >"$dir/nginx.conf" <<EOF
    upstream xrl_http { $servers keepalive 16; }
    server {
        listen 127.0.0.1:$port;
        root $XRLT_TMP/www;
        location / {
            auth_request /_xrl;
            auth_request_set \$xrl_ratelimit \$upstream_http_ratelimit;
            auth_request_set \$xrl_policy \$upstream_http_ratelimit_policy;
            auth_request_set \$xrl_retry \$upstream_http_retry_after;
            add_header RateLimit \$xrl_ratelimit always;
            add_header RateLimit-Policy \$xrl_policy always;
            error_page 403 = @limited;
            try_files /index.html =404;
        }
        location = /_xrl {
            internal;
            proxy_pass http://xrl_http/auth;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URI \$request_uri;
            proxy_set_header X-Original-Method \$request_method;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
        }
        location = /_ready { return 204; }
        location @limited {
            add_header Retry-After \$xrl_retry always;
            add_header RateLimit \$xrl_ratelimit always;
            add_header RateLimit-Policy \$xrl_policy always;
            return 429;
        }
    }
}
EOF
	(cd "$dir" && exec nginx -c "$dir/nginx.conf" -p "$dir" -g "daemon off; pid $dir/nginx.pid;") \
		>"$dir/logs/stdout.log" 2>&1 &
	xrlt_track $!
	printf -v "NGINX_PORT_$name" '%s' "$port"
	http_wait_url "http://127.0.0.1:$port/_ready" ||
		xrlt_fail "nginx $name did not start: $(tail -3 "$dir/logs/error.log" "$dir/logs/stdout.log")"
}

# hey_codes URL N C [hey args...]: N requests C at a time; prints "CODE COUNT" lines
hey_codes() {
	local url=$1 n=$2 c=$3
	shift 3
	timeout 30 hey -n "$n" -c "$c" -o csv "$@" "$url" 2>/dev/null |
		awk -F, 'NR > 1 && $7 ~ /^[0-9]+$/ { n[$7]++ } END { for (k in n) print k, n[k] }' | sort
}

# count of CODE in hey_codes output
code_count() { awk -v c="$1" '$1 == c { print $2; f = 1 } END { if (!f) print 0 }'; }

# sleep_to_fraction F [LEAD]: sleep until the fraction F (0.90) of a UTC second at least
# LEAD seconds (default 0.5) from now
sleep_to_fraction() {
	/usr/bin/python3 -c '
import time, sys
f = float(sys.argv[1]); lead = float(sys.argv[2]); t = time.time(); s = int(t)
while s + f - t < lead: s += 1
time.sleep(s + f - t)' "$1" "${2:-0.5}"
}
