#!/usr/bin/env bash
# A real Redis Cluster on loopback for the tests (Debian's redis-server 7):
#   tests/redis/cluster.sh start DIR [NODE_TIMEOUT_MS]
#     six `redis-server --cluster-enabled yes` on free loopback ports (each
#     with its cluster bus port, +10000, free too), joined by `redis-cli
#     --cluster create --cluster-replicas 1`; waits for cluster_state:ok and
#     prints the six ports on one line. The masters keep serving their slots
#     while another shard has none (cluster-require-full-coverage no, as a
#     fleet's cluster should be configured). CLUSTER_PASS set: every node requires
#     it (and replicas use it). Files and logs in DIR.
#   tests/redis/cluster.sh restart DIR PORT
#     starts the node of PORT again (after a kill): it rejoins (a master
#     replaced meanwhile comes back as a replica); waits until the others
#     stop seeing it failed.
#   tests/redis/cluster.sh stop DIR
#     stops the nodes started in DIR (by their pids) and removes DIR.
set -u
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR [NODE_TIMEOUT_MS]" >&2; exit 2; }

cli() { # PORT ARGS...
	local p=$1
	shift
	if [ -n "${CLUSTER_PASS:-}" ]; then
		REDISCLI_AUTH=$CLUSTER_PASS redis-cli -p "$p" "$@"
	else
		redis-cli -p "$p" "$@"
	fi
}

if [ "$cmd" = stop ]; then
	if [ -f "$dir/pids" ]; then
		while read -r pid; do kill -CONT "$pid" 2>/dev/null; kill "$pid" 2>/dev/null; done <"$dir/pids"
		for _ in $(seq 50); do
			alive=0
			while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$dir/pids"
			[ "$alive" = 0 ] && break
			sleep 0.1
		done
		while read -r pid; do kill -9 "$pid" 2>/dev/null; done <"$dir/pids"
	fi
	rm -rf "$dir"
	exit 0
fi
auth=()
[ -n "${CLUSTER_PASS:-}" ] && auth=(--requirepass "$CLUSTER_PASS" --masterauth "$CLUSTER_PASS")
node_start() { # PORT TIMEOUT_MS: prints the pid
	(cd "$dir" && exec redis-server --port "$1" --bind 127.0.0.1 --cluster-enabled yes \
		--cluster-config-file "nodes-$1.conf" --cluster-node-timeout "$2" \
		--cluster-require-full-coverage no \
		--save '' --appendonly no --dir "$dir" "${auth[@]}") >>"$dir/redis-$1.log" 2>&1 &
	echo $!
}
if [ "$cmd" = restart ]; then
	port=${3:?usage: $0 restart DIR PORT}
	read -r -a all <"$dir/ports"
	n=0
	for i in "${!all[@]}"; do [ "${all[$i]}" = "$port" ] && n=$((i + 1)); done
	[ "$n" -gt 0 ] || { echo "cluster.sh: $port is not a node of $dir" >&2; exit 1; }
	pid=$(node_start "$port" "$(cat "$dir/timeout")")
	sed -i "${n}s/.*/$pid/" "$dir/pids"
	for _ in $(seq 200); do
		other=${all[0]}
		[ "$other" = "$port" ] && other=${all[1]}
		line=$(cli "$other" cluster nodes 2>/dev/null | grep ":$port@")
		if [ -n "$line" ] && ! grep -q fail <<<"$line" && cli "$port" ping 2>/dev/null | grep -q PONG; then
			exit 0
		fi
		sleep 0.1
	done
	echo "cluster.sh: the node on $port did not rejoin in 20 s" >&2
	exit 1
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop|restart DIR [NODE_TIMEOUT_MS|PORT]" >&2; exit 2; }
timeout_ms=${3:-2000}
mkdir -p "$dir"
echo "$timeout_ms" >"$dir/timeout"
# ports below the ephemeral range (bus ports too, so no outgoing connection holds one), none in use
listening=$(ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
in_use() { grep -qx "$1" <<<"$listening"; }
ports=()
p=$((12000 + (RANDOM % 9000)))
while [ ${#ports[@]} -lt 6 ] && [ "$p" -lt 22000 ]; do
	if ! in_use "$p" && ! in_use $((p + 10000)); then ports+=("$p"); fi
	p=$((p + 1))
done
[ ${#ports[@]} -eq 6 ] || { echo "cluster.sh: no six free loopback ports (with bus ports)" >&2; exit 1; }
: >"$dir/pids"
echo "${ports[@]}" >"$dir/ports"
for p in "${ports[@]}"; do
	node_start "$p" "$timeout_ms" >>"$dir/pids"
done
for p in "${ports[@]}"; do
	for i in $(seq 50); do
		cli "$p" ping 2>/dev/null | grep -q PONG && break
		[ "$i" = 50 ] && { echo "cluster.sh: redis-server on $p did not answer: $(tail -1 "$dir/redis-$p.log" 2>/dev/null)" >&2; exit 1; }
		sleep 0.1
	done
done
addrs=()
for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
if [ -n "${CLUSTER_PASS:-}" ]; then
	REDISCLI_AUTH=$CLUSTER_PASS timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1
else
	timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1
fi || { echo "cluster.sh: redis-cli --cluster create failed (see $dir/create.log)" >&2; exit 1; }
for i in $(seq 200); do
	ok=1
	for p in "${ports[@]}"; do
		cli "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || ok=0
		# every node sees three replicas, and each replica's link to its master is up
		[ "$(cli "$p" cluster nodes 2>/dev/null | grep -c slave)" = 3 ] || ok=0
		if cli "$p" role 2>/dev/null | head -1 | grep -q slave; then
			cli "$p" info replication 2>/dev/null | grep -q 'master_link_status:up' || ok=0
		fi
	done
	[ "$ok" = 1 ] && break
	[ "$i" = 200 ] && { echo "cluster.sh: the cluster did not reach cluster_state:ok in 20 s (with its replicas)" >&2; exit 1; }
	sleep 0.1
done
echo "${ports[@]}"
