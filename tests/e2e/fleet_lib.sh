# shellcheck shell=bash
# tests/e2e/fleet_lib.sh: a simulated fleet for xrl's fleet-wide rules, on top
# of lib.sh (source that first, and call xrlt_init). Each "host" is an xrl
# instance on its own veth pair, with a namespace sending to it and its own
# `xrl daemon`; all daemons share one redis-server on a loopback port.
#
# Set before use: XRL (the binary), FLEET_PORT (Redis), FLEET_RULES (rules
# file for the daemons), FLEET_INTERVAL (sync interval, ms); optionally
# FLEET_REDIS_PASS (Redis then requires it; the daemons are given it by the
# caller, e.g. through --redis-password-file).
#
# REDIS=cluster: the daemons share a real Redis Cluster instead (six
# redis-server --cluster-enabled yes, 3 masters with a replica each, made by
# tests/redis/cluster.sh on free loopback ports; FLEET_PORT unused), through
# redis-cluster:// with every node a seed; FLEET_CLUSTER_PORTS lists them.

REDIS=${REDIS:-single}
FLEET_REDIS_PID=
FLEET_CLUSTER_PORTS=()
FLEET_CLUSTER_DIR=
declare -a FLEET_DAEMON=()
declare -a FLEET_SENDERS=()   # the background senders of fleet_send_bg

# (Re)start redis-server on 127.0.0.1:$FLEET_PORT, no persistence; wait for it.
fleet_redis_start() {
	if [ "$REDIS" = cluster ]; then
		fleet_cluster_start
		return
	fi
	local auth=()
	[ -n "${FLEET_REDIS_PASS:-}" ] && auth=(--requirepass "$FLEET_REDIS_PASS")
	(cd "$XRLT_TMP" && exec redis-server --port "$FLEET_PORT" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$XRLT_TMP" "${auth[@]}") >>"$XRLT_TMP/redis.log" 2>&1 &
	FLEET_REDIS_PID=$!
	xrlt_track "$FLEET_REDIS_PID"
	local i
	for i in $(seq 50); do
		fleet_redis_cli ping 2>/dev/null | grep -q PONG && return 0
		sleep 0.1
	done
	xrlt_fail "redis-server did not answer on 127.0.0.1:$FLEET_PORT (see $XRLT_TMP/redis.log)"
}

# The cluster (REDIS=cluster), node timeout 1 s: removed by the cleanup.
fleet_cluster_start() {
	local out
	FLEET_CLUSTER_DIR=$XRLT_TMP/cluster
	xrlt_on_cleanup "CLUSTER_PASS='${FLEET_REDIS_PASS:-}' bash '$XRLT_REPO/tests/redis/cluster.sh' stop '$FLEET_CLUSTER_DIR'"
	out=$(CLUSTER_PASS=${FLEET_REDIS_PASS:-} bash "$XRLT_REPO/tests/redis/cluster.sh" start \
		"$FLEET_CLUSTER_DIR" 1000) || xrlt_fail "the Redis Cluster did not start: $out"
	read -r -a FLEET_CLUSTER_PORTS <<<"$out"
	FLEET_PORT=${FLEET_CLUSTER_PORTS[0]}
}

# --redis for the daemons
fleet_redis_url() {
	local p u=""
	if [ "$REDIS" = cluster ]; then
		for p in "${FLEET_CLUSTER_PORTS[@]}"; do u+="${u:+,}127.0.0.1:$p"; done
		echo "redis-cluster://$u"
	else
		echo "redis://127.0.0.1:$FLEET_PORT"
	fi
}

# redis-cli on the fleet's Redis (with its password, kept out of ps through
# REDISCLI_AUTH); on a cluster on a live node, following redirects (-c)
fleet_redis_cli() {
	local args=(-p "$FLEET_PORT") p
	if [ "$REDIS" = cluster ]; then
		for p in "${FLEET_CLUSTER_PORTS[@]}"; do
			fleet_cli_at "$p" ping 2>/dev/null | grep -q PONG && break
		done
		args=(-c -p "$p")
	fi
	if [ -n "${FLEET_REDIS_PASS:-}" ]; then
		REDISCLI_AUTH=$FLEET_REDIS_PASS redis-cli "${args[@]}" "$@"
	else
		redis-cli "${args[@]}" "$@"
	fi
}
# redis-cli on one node (no redirects)
fleet_cli_at() {
	local p=$1
	shift
	if [ -n "${FLEET_REDIS_PASS:-}" ]; then
		REDISCLI_AUTH=$FLEET_REDIS_PASS redis-cli -p "$p" "$@"
	else
		redis-cli -p "$p" "$@"
	fi
}
# fleet_redis_scan PATTERN: the keys matching it, on every master of a cluster
fleet_redis_scan() {
	local p
	if [ "$REDIS" != cluster ]; then
		fleet_redis_cli --scan --pattern "$1"
		return
	fi
	for p in $(fleet_cluster_masters); do fleet_cli_at "$p" --scan --pattern "$1"; done
}
# fleet_cluster_restart PORT: the node of PORT started again (it rejoins)
fleet_cluster_restart() {
	CLUSTER_PASS=${FLEET_REDIS_PASS:-} bash "$XRLT_REPO/tests/redis/cluster.sh" restart \
		"$FLEET_CLUSTER_DIR" "$1" || xrlt_fail "the cluster node on $1 did not rejoin"
}
# the ports of the cluster's masters serving slots, as a live node sees them
fleet_cluster_masters() {
	fleet_redis_cli cluster nodes 2>/dev/null |
		awk '$3 ~ /master/ && $3 !~ /fail/ && NF >= 9 {split($2, a, "[:@]"); print a[2]}'
}
# fleet_cluster_pid PORT: the pid of the node on PORT
fleet_cluster_pid() {
	local i
	for i in "${!FLEET_CLUSTER_PORTS[@]}"; do
		[ "${FLEET_CLUSTER_PORTS[$i]}" = "$1" ] && sed -n "$((i + 1))p" "$FLEET_CLUSTER_DIR/pids"
	done
}

fleet_ns() { echo "${XRLT_NAME}h$1"; }
fleet_rif() { echo "${XRLT_NAME}h${1}r"; }
fleet_nif() { echo "${XRLT_NAME}h${1}n"; }
fleet_inst() { echo "fleet$$h$1"; }

# Host I: namespace, veth pair, xrl attached natively to the root end.
fleet_host_create() {
	local i=$1
	xrlt_on_cleanup "ip netns del $(fleet_ns "$i") 2>/dev/null; ip link del $(fleet_rif "$i") 2>/dev/null; true"
	xrlt_on_cleanup "$XRL --instance $(fleet_inst "$i") detach $(fleet_rif "$i") >/dev/null 2>&1; true"
	xrlt_make_pair "$(fleet_ns "$i")" "$(fleet_rif "$i")" "$(fleet_nif "$i")" "198.18.0.1/24"
	"$XRL" --instance "$(fleet_inst "$i")" attach "$(fleet_rif "$i")" --mode native >/dev/null ||
		xrlt_fail "cannot attach xrl to $(fleet_rif "$i")"
}

# fleet_daemon_start HOST [DAEMON OPTIONS...]: log in $XRLT_TMP/daemonHOST.log
fleet_daemon_start() {
	local i=$1
	shift
	"$XRL" --instance "$(fleet_inst "$i")" daemon --redis "$(fleet_redis_url)" \
		--host-id "h$i" --sync-interval "$FLEET_INTERVAL" --rules "$FLEET_RULES" "$@" \
		>>"$XRLT_TMP/daemon$i.log" 2>&1 &
	FLEET_DAEMON[$i]=$!
	xrlt_track $!
}
fleet_daemon_stop() {
	[ -n "${FLEET_DAEMON[$1]:-}" ] && xrlt_stop_pid "${FLEET_DAEMON[$1]}"
	return 0
}

# fleet_passed HOST PREFIX: packets the host's rule PREFIX admitted so far
fleet_passed() {
	"$XRL" --instance "$(fleet_inst "$1")" --json stats |
		jq -r --arg p "$2" '.rules[] | select(.prefix == $p) | .passed'
}
# fleet_passed_sum PREFIX HOSTS...
fleet_passed_sum() {
	local p=$1 t=0 i
	shift
	for i in "$@"; do t=$((t + $(fleet_passed "$i" "$p"))); done
	echo "$t"
}

# fleet_cfg FILE SRC...: a trafgen config, one UDP frame per source
fleet_cfg() {
	local f=$1 s
	shift
	: >"$f"
	for s in "$@"; do
		cat >>"$f" <<CFG
{
  eth(da=$XRLT_DST_MAC, type=0x0800),
  ipv4(saddr=$s, daddr=$XRLT_DST_IP, ttl=64, df),
  udp(sport=40000, dport=9),
  fill(0x78, 18)
}
CFG
	done
}

# fleet_send_bg HOST CFG GAP SECONDS LOG: paced trafgen (-t GAP) in the
# host's namespace, bounded by timeout; GAP "" for the fast path (flood).
fleet_send_bg() {
	local gap=()
	[ -n "$3" ] && gap=(--gap "$3")
	(
		cd "$XRLT_TMP" || exit 1
		exec ip netns exec "$(fleet_ns "$1")" timeout -s INT -k 3 "$4" \
			trafgen --no-sock-mem --notouch-irq --dev "$(fleet_nif "$1")" --conf "$2" \
			--num 100000000 "${gap[@]}" --cpus 1
	) >"$5" 2>&1 &
	xrlt_track $!
	FLEET_SENDERS+=($!)
}

# Stop every sender fleet_send_bg started that still runs (a section's
# counters must not take in an earlier section's flood), and wait for them.
fleet_senders_stop() {
	local p
	for p in "${FLEET_SENDERS[@]}"; do
		kill -INT "$p" 2>/dev/null
	done
	for p in "${FLEET_SENDERS[@]}"; do
		wait "$p" 2>/dev/null
	done
	FLEET_SENDERS=()
}

# fleet_send_once HOST CFG COUNT: the config's frames, COUNT in all, now
fleet_send_once() {
	(cd "$XRLT_TMP" && ip netns exec "$(fleet_ns "$1")" timeout 5 trafgen --no-sock-mem \
		--notouch-irq --dev "$(fleet_nif "$1")" --conf "$2" --num "$3" --cpus 1) >/dev/null 2>&1
}

fleet_now() { date +%s.%N; }
# fleet_sleep_until T0 OFFSET: sleep until T0 + OFFSET seconds
fleet_sleep_until() {
	local d
	d=$(xrlt_calc "$1 + $2 - $(fleet_now)")
	xrlt_true "$d > 0" && sleep "$d"
	return 0
}
# fleet_rate A_COUNT B_COUNT A_TIME B_TIME
fleet_rate() { xrlt_calc "($2 - $1) / ($4 - $3)"; }
