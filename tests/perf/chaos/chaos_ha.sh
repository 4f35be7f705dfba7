#!/bin/bash
# shellcheck disable=SC2154 # GALERA_*, HA_*, E2E_*, REDIS_PORT_*: from common.sh and the harness
# chaos_ha.sh - "make chaos-ha": the random fault schedules of make chaos
# (tests/perf/chaos/chaos.sh) on the highly available stack of make
# check-ha, with network partitions, and the same history checker.
#
# The stack is tests/ha/common.sh's, started by its helpers, in a network
# namespace this script makes (ip netns: root only) and removes on exit,
# with its own loopback; no address outside it is used. In it each server
# is a host with an address of its own for the traffic between servers:
#
#   galera1..3      Galera nodes, gcomm, IST and SST on 127.0.1.K
#                   (HARNESS_GALERA_ADDR_PREFIX: Galera binds its outgoing
#                   connections to that address too)
#   rmaster, rreplica, rreplica2
#                   Redis, 127.0.2.1..3, each with a sentinel (s1..s3) on
#                   the same address; replication and the sentinels' links
#                   leave from it (bind-source-addr)
#   hosta, hostb    app hosts: lighttpd, a payhook pool (payhook
#                   --workers), payhook-dispatch and payhook-reconcile's
#                   passes; each reaches each Galera node through a TCP
#                   proxy of its own (tests/servers/tcpproxy: the link
#                   between that host and that node), host A in the order
#                   1 2 3, host B 2 3 1; Redis through the sentinels
#
# A partition between two servers is a pair of policy routing rules that
# drop every packet from one's address to the other's (ip rule ...
# blackhole: connections hang, new ones fail); a link of an app host is cut
# by stalling its proxy (nothing relayed: the connection hangs).
#
# tests/perf/chaos/chaos_client sends the workload of make chaos (payments,
# redeliveries, bursts, conflicts, refunds, disputes, cancellations, bad
# bodies and signatures, hang-ups) through both app hosts, a burst's copies
# going round them (the same transaction to both hosts at once); the Stripe
# webhooks and payhook-reconcile's passes of tests/perf/chaos/reconcile.sh
# run on the fake provider API, a pass on each host in turn; both
# dispatchers hand every payment and change on to one HTTP target that
# fails now and then. Meanwhile a fault is drawn from the seed every 2-5 s:
#
#   galera_isolate    node K cut from the two others and from both app
#                     hosts, 8-20 s
#   galera_split      node K cut from the two others only (2/1): the app
#                     hosts keep sending to it, 8-20 s
#   app_minority      host H cut from the primary component: node K split
#                     off and H's links to the two others stalled, 10-20 s
#                     (H's dispatcher holds claims past their lease)
#   app_cut           every link of host H to the cluster stalled, 3-15 s
#   galera_kill       node K SIGKILLed, restarted 2-10 s later (recovery
#                     and IST, or SST)
#   galera_pause      node K SIGSTOPped 12-16 s (past the lock's lease)
#   cluster_restart   every node stopped cleanly one after the other, the
#                     last one bootstraps from its grastate.dat, the others
#                     join (at most once a run)
#   redis_split       the Redis master cut from its replicas and their
#                     sentinels, 6-12 s: two sentinels of three fail over
#                     while the old master still takes the locks
#   sentinel_failover SENTINEL FAILOVER under load
#   redis_kill        the master or a replica SIGKILLed, restarted 1-5 s
#                     later
#   app_kill          host H's pool (master and workers) and dispatcher
#                     SIGKILLed, restarted 1-3 s later
#   slow_link         host H's links delayed 20-300 ms a chunk, 3-8 s
#   galera_flap       node K's link to the others lost for 100-400 ms of
#                     every three times that (packets dropped, TCP resends),
#                     3-8 s
#   target_outage     the hand-off target fails (as in make chaos)
#   api_outage        the provider's API fails (as in make chaos)
#
# At most one fault at a time on the cluster, one on Redis, one on the
# links; the others overlap. Then every fault is healed, the script waits
# until every node is Synced in one primary component and the sentinels
# agree on a master, and the client's final round and checker judge the
# history (tests/perf/chaos/chaos_check.c: each transaction that got a 200
# has exactly one row with its amount, no 200 without its row, read after
# the 200 from a node of the primary component and at the end; totals equal
# their succeeded objects) and compare every node's rows; this script adds
# the hand-off's rules (every payment and change delivered, none dead, each
# key with one body), the reconciliation's (reconcile.sh), and prints the
# figures: requests, faults by kind, failovers, recovery time after each
# kind, p99 during and outside faults.
#
#   BUILD_DIR=... SRC_DIR=... bash tests/perf/chaos/chaos_ha.sh
#
# Settings (environment): CHAOS_SECONDS (300), CHAOS_SEED (random, printed),
# CHAOS_WORKERS (3 per host), CHAOS_CLIENTS (6), CHAOS_TRANSACTIONS (6 per
# second of faults), CHAOS_FINAL_SECONDS (180), CHAOS_FAULTS (the kinds to
# draw from), CHAOS_PAYHOOK and CHAOS_DISPATCHER (the binaries), CHAOS_KEEP
# (default /tmp/payhook-chaos-ha-SEED). Exit 0: no violation; 1:
# violations; 2: bad settings or tools missing; 99: the stack did not start.
set -u
: "${SRC_DIR:=$(cd "$(dirname "$0")/../../.." && pwd)}"
: "${BUILD_DIR:=$SRC_DIR}"
top_srcdir=$SRC_DIR top_builddir=$BUILD_DIR
export SRC_DIR BUILD_DIR top_srcdir top_builddir

# ---- the namespace ------------------------------------------------------------

if [ -z "${CHAOS_HA_NETNS:-}" ]; then
	if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
		echo "chaos-ha: needs root and ip (iproute2) for its network namespace" >&2
		exit 2
	fi
	ns=payhook-chaos-$$
	ip netns add "$ns" || exit 99
	trap 'ip netns del "$ns" 2>/dev/null' EXIT
	trap 'exit 130' INT TERM
	# Its loopback up; the local table looked up after the cuts (pref
	# 100), not before them (pref 0).
	ip netns exec "$ns" sh -c 'ip link set lo up &&
		ip rule add pref 1000 lookup local && ip rule del pref 0' || exit 99
	CHAOS_HA_NETNS=$ns ip netns exec "$ns" bash "$0" "$@"
	exit $?
fi

seconds=${CHAOS_SECONDS:-300}
seed=${CHAOS_SEED:-}
[ -n "$seed" ] || seed=$(($(od -An -N2 -tu2 /dev/urandom) + 1))
workers=${CHAOS_WORKERS:-3}
clients=${CHAOS_CLIENTS:-6}
ntx=${CHAOS_TRANSACTIONS:-$((seconds * 6))}
final_seconds=${CHAOS_FINAL_SECONDS:-180}
payhook=${CHAOS_PAYHOOK:-$BUILD_DIR/app/payhook}
dispatcher=${CHAOS_DISPATCHER:-$BUILD_DIR/app/payhook-dispatch}
client=$BUILD_DIR/tests/perf/chaos/chaos_client
all_kinds="galera_isolate galera_split app_minority app_cut galera_kill
galera_pause cluster_restart redis_split sentinel_failover redis_kill app_kill
slow_link galera_flap target_outage api_outage"
kinds=${CHAOS_FAULTS:-$all_kinds}
for n in "$seconds" "$seed" "$workers" "$clients" "$ntx" "$final_seconds"; do
	case $n in '' | *[!0-9]*)
		echo "chaos-ha: CHAOS_SECONDS, _SEED, _WORKERS, _CLIENTS, _TRANSACTIONS and _FINAL_SECONDS are numbers" >&2
		exit 2
		;;
	esac
done
for bin in "$client" "$payhook" "$dispatcher" "$BUILD_DIR/tests/servers/tcpproxy" \
	"$BUILD_DIR/tests/servers/http_target"; do
	[ -x "$bin" ] || { echo "chaos-ha: $bin is not built (make chaos-ha builds it)" >&2; exit 2; }
done

# shellcheck source-path=SCRIPTDIR source=../../ha/common.sh
. "$SRC_DIR/tests/ha/common.sh"
ha_skip_unless_tools jq >/dev/null || exit 2
export HARNESS_GALERA_ADDR_PREFIX=127.0.1.
HA_REDIS_ADDR_PREFIX=127.0.2. HA_REDIS_REPLICAS=2
# ha_init takes the pools' payhook from HA_PAYHOOK (planted-bug.sh's).
export HA_PAYHOOK=$payhook

show_logs() {
	local f
	for f in "$HARNESS_DIR"/galera*/error.log "$HARNESS_DIR"/*/sentinel.log \
		"$HARNESS_DIR"/host*.log; do
		[ -f "$f" ] && harness_log_tail "$f"
	done
}

t_start=$(harness_now_ms)
ha_init || exit 99
ha_start_galera || { show_logs; exit 99; }
ha_start_redis || { show_logs; exit 99; }
# Reads of the checks (reconcile.sh's too): the first node that answers,
# after every commit of the cluster.
harness_sql() { ha_sql "$1"; }

# The lease is what a SIGSTOP must outlast: short timeouts keep it at 10 s,
# as in make chaos.
lease_ms=10000
secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
cat >"$HARNESS_DIR/chaos.conf" <<EOF || exit 99
webhook_secret = $secret
signature_scheme = standard
lock_ttl_ms = $lease_ms
mysql_connect_timeout_s = 1
mysql_read_timeout_s = 1
mysql_write_timeout_s = 1
log_level = warn
EOF
unset PAYHOOK_SIGNATURE_SCHEME PAYHOOK_LOG_LEVEL
export E2E_CONFIG=$HARNESS_DIR/chaos.conf

# Each host's link to each node: a proxy, cut or slowed alone.
declare -A nodes_of=()
for h in a b; do
	order="1 2 3"
	[ "$h" = b ] && order="2 3 1"
	nodes_of[$h]=
	for k in $order; do
		harness_start_proxy "${h}db$k" "${GALERA_NODE[k]}" >/dev/null || exit 99
		port_var=PROXY_PORT_${h^^}DB$k
		nodes_of[$h]+=${nodes_of[$h]:+ }127.0.0.1:${!port_var}
	done
done

faults=$HARNESS_DIR/faults.log
: >"$faults"
url=
# shellcheck source-path=SCRIPTDIR source=reconcile.sh
. "$SRC_DIR/tests/perf/chaos/reconcile.sh"
reconcile_setup
# A pass on each host in turn, through that host's links.
recon_hosts=("${nodes_of[a]}" "${nodes_of[b]}")

for h in a b; do
	ha_start_app "host$h" "$workers" "${nodes_of[$h]}" || { show_logs; exit 99; }
done
url_a=$HA_URL_HOSTA url_b=$HA_URL_HOSTB
# The Stripe webhooks go to host B (the client's go to both).
url=$url_b

# The hand-off: one dispatcher per host, each through its host's links;
# few attempts, so that an outage counted as attempts would make payments
# dead within the run.
dispatch_env=(PAYHOOK_CONFIG="$HARNESS_DIR/chaos.conf"
	PAYHOOK_MYSQL_READ_TIMEOUT_S=1 PAYHOOK_MYSQL_WRITE_TIMEOUT_S=1
	PAYHOOK_DISPATCH_TIMEOUT_MS=1000 PAYHOOK_DISPATCH_LEASE_MS=$((lease_ms + 2000))
	PAYHOOK_DISPATCH_MAX_ATTEMPTS=5 PAYHOOK_DISPATCH_CIRCUIT_FAILURES=3
	PAYHOOK_DISPATCH_BACKOFF_MS=200 PAYHOOK_DISPATCH_BACKOFF_MAX_MS=2000
	PAYHOOK_DISPATCH_POLL_MS=200 PAYHOOK_LOG_LEVEL=warn)
start_dispatcher() {
	HA_DISPATCHER=$dispatcher ha_start_dispatcher "${nodes_of[$1]}" "dispatch-$1" "${dispatch_env[@]}"
}
for h in a b; do
	start_dispatcher "$h" || exit 99
done
target_control=$E2E_DIR/target.control
sleep 0.5
for h in a b; do
	harness_running "dispatch-$h" || { harness_log_tail "$E2E_DIR/dispatch-$h.log"; exit 99; }
done

printf '# chaos-ha: stack up in %s s (namespace %s): galera %s, redis master and 2 replicas with 3 sentinels, host A %s (nodes via %s), host B %s (nodes via %s), %s workers each\n' \
	"$(ha_seconds $(($(harness_now_ms) - t_start)))" "$CHAOS_HA_NETNS" "$GALERA_NODES" \
	"$url_a" "${nodes_of[a]}" "$url_b" "${nodes_of[b]}" "$workers"
printf '# chaos-ha: seed %s, %s s of faults, %s clients, %s transactions; replay: CHAOS_SEED=%s CHAOS_SECONDS=%s make chaos-ha\n' \
	"$seed" "$seconds" "$clients" "$ntx" "$seed" "$seconds"

node_args=()
for k in 1 2 3; do
	node_args+=(--mysql-node "${GALERA_NODE[k]}")
done
"$client" --url "$url_a" --url "$url_b" --secret "$secret" --tag "ha$seed" \
	--seed "$seed" --seconds "$seconds" --transactions "$ntx" \
	--clients "$clients" --final-seconds "$final_seconds" \
	--history "$HARNESS_DIR/history.tsv" --faults "$faults" \
	--mysql-host 127.0.0.1 --mysql-port "${GALERA_NODE[1]#*:}" "${node_args[@]}" \
	--mysql-user payhook --mysql-password payhook-test \
	--mysql-database payhook > >(tee "$HARNESS_DIR/client.out") 2>&1 &
client_pid=$!
harness_record chaos-client "$client_pid"
reconcile_start
harness_record reconcile-feeder "$recon_feeder"
harness_record reconcile-loop "$recon_loop"

# ---- the faults ---------------------------------------------------------------

# fault_log begin ID KIND DETAIL... | end ID: one line of the log the checker
# reads, in the client's clock (wall-clock milliseconds).
fault_log() {
	printf '%s %s\n' "$(harness_now_ms)" "$*" >>"$faults"
	if [ "$1" = begin ]; then
		printf '# chaos-ha: %6.1f s  %s\n' \
			"$(($(harness_now_ms) - t0))e-3" "${*:3}"
	fi
}

sleep_ms() { sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"; }

# net_cut A B / net_uncut A B: every packet between addresses A and B dropped, or
# no longer.
net_cut() {
	ip rule add pref 100 from "$1" to "$2" blackhole
	ip rule add pref 100 from "$2" to "$1" blackhole
}
net_uncut() {
	ip rule del pref 100 from "$1" to "$2" blackhole 2>/dev/null
	ip rule del pref 100 from "$2" to "$1" blackhole 2>/dev/null
}

# split K on|off: galera node K cut from the other two nodes.
split() {
	local j
	for j in 1 2 3; do
		[ "$j" = "$1" ] && continue
		if [ "$2" = on ]; then
			net_cut "127.0.1.$1" "127.0.1.$j"
		else
			net_uncut "127.0.1.$1" "127.0.1.$j"
		fi
	done
}

# links H "NODES" stall|delay MS|heal: host H's links to NODES.
links() {
	local h=$1 k
	for k in $2; do
		case $3 in
		stall) harness_proxy "${h}db$k" stall on >/dev/null ;;
		delay) harness_proxy "${h}db$k" delay "$4" >/dev/null ;;
		heal)
			harness_proxy "${h}db$k" stall off >/dev/null
			harness_proxy "${h}db$k" delay 0 >/dev/null
			;;
		esac
	done
}

others() { local j; for j in 1 2 3; do [ "$j" = "$1" ] || printf '%s ' "$j"; done; }

# redis_master_name: the Redis server the sentinels name master (a majority
# of them), e.g. rreplica.
redis_master_name() {
	local port name
	port=$(ha_sentinel_master) || return 1
	for name in "${HA_REDIS_NODES[@]}"; do
		var=REDIS_PORT_${name^^}
		[ "${!var}" = "$port" ] && { printf '%s\n' "$name"; return 0; }
	done
	return 1
}

redis_addr() { cat "$HARNESS_DIR/$1/address"; }

# app_kill H: host H's pool and dispatcher SIGKILLed.
app_kill() {
	local h=$1 master pid
	local -a pids=()
	master=$(cat "$HARNESS_DIR/host$h.pid" 2>/dev/null)
	if [ -n "$master" ]; then
		mapfile -t pids < <(harness_children "$master")
		kill -KILL "$master" "${pids[@]}" 2>/dev/null
	fi
	harness_running "dispatch-$h" && kill -KILL "$HARNESS_PID"
	for pid in $master; do
		while [ -d "/proc/$pid" ]; do sleep 0.02; done
	done
}
app_start() {
	local h=$1
	harness_running "host$h-master" ||
		PAYHOOK_MYSQL_NODES=${nodes_of[$h]} e2e_start_pool "host$h" "$workers" >/dev/null
	harness_running "dispatch-$h" || start_dispatcher "$h"
}

galera_running() { harness_running "mariadb-galera$1"; }

# fault ID KIND A B C: injects fault ID and heals it; the parameters come
# from the main shell, whose RANDOM follows the seed.
fault() {
	local id=$1 kind=$2 a=${3:-} b=${4:-} c=${5:-} k pid name order last end
	case $kind in
	galera_isolate)
		fault_log begin "$id" galera_isolate "node $a for $b ms"
		split "$a" on
		links a "$a" stall
		links b "$a" stall
		sleep_ms "$b"
		split "$a" off
		links a "$a" heal
		links b "$a" heal
		fault_log end "$id"
		;;
	galera_split)
		fault_log begin "$id" galera_split "node $a from the others for $b ms"
		split "$a" on
		sleep_ms "$b"
		split "$a" off
		fault_log end "$id"
		;;
	app_minority)
		fault_log begin "$id" app_minority "host $c with node $a only, for $b ms"
		split "$a" on
		links "$c" "$(others "$a")" stall
		sleep_ms "$b"
		split "$a" off
		links "$c" "$(others "$a")" heal
		fault_log end "$id"
		;;
	app_cut)
		fault_log begin "$id" app_cut "host $c from every node for $b ms"
		links "$c" "1 2 3" stall
		sleep_ms "$b"
		links "$c" "1 2 3" heal
		fault_log end "$id"
		;;
	galera_kill)
		galera_running "$a" || return 0
		fault_log begin "$id" galera_kill "node $a down $b ms"
		harness_kill "mariadb-galera$a"
		sleep_ms "$b"
		harness_start_galera_node galera "$a" >>"$HARNESS_DIR/restarts.log" 2>&1
		fault_log end "$id"
		;;
	galera_pause)
		galera_running "$a" || return 0
		pid=$HARNESS_PID
		fault_log begin "$id" galera_pause "node $a for $b ms"
		kill -STOP "$pid"
		sleep_ms "$b"
		kill -CONT "$pid"
		fault_log end "$id"
		;;
	cluster_restart)
		# The order the nodes stop in; the last one holds every commit
		# and may bootstrap (safe_to_bootstrap: 1).
		order="$a $(others "$a")"
		fault_log begin "$id" cluster_restart "stopped in the order $order"
		for k in $order; do
			harness_stop_mariadb "galera$k"
			last=$k
		done
		grep -q '^safe_to_bootstrap: *1' "$HARNESS_DIR/galera$last/data/grastate.dat" ||
			printf '# chaos-ha: node %s stopped last but its grastate.dat says: %s\n' \
				"$last" "$(tr '\n' ' ' <"$HARNESS_DIR/galera$last/data/grastate.dat")"
		sleep_ms "$b"
		harness_start_galera_node galera "$last" --wsrep-new-cluster \
			>>"$HARNESS_DIR/restarts.log" 2>&1
		for k in $order; do
			[ "$k" = "$last" ] ||
				harness_start_galera_node galera "$k" >>"$HARNESS_DIR/restarts.log" 2>&1
		done
		fault_log end "$id"
		;;
	redis_split)
		name=$(redis_master_name) || return 0
		fault_log begin "$id" redis_split "master $name cut from the replicas and their sentinels for $b ms"
		for k in "${HA_REDIS_NODES[@]}"; do
			[ "$k" = "$name" ] || net_cut "$(redis_addr "$name")" "$(redis_addr "$k")"
		done
		sleep_ms "$b"
		for k in "${HA_REDIS_NODES[@]}"; do
			[ "$k" = "$name" ] || net_uncut "$(redis_addr "$name")" "$(redis_addr "$k")"
		done
		fault_log end "$id"
		;;
	sentinel_failover)
		fault_log begin "$id" sentinel_failover "asked of s$a"
		harness_sentinel "s$a" SENTINEL FAILOVER "$HA_MASTER_NAME" >/dev/null
		fault_log end "$id"
		;;
	redis_kill)
		name=$(redis_master_name) || return 0
		# a even: the master; odd: a replica.
		if [ $((a % 2)) = 1 ]; then
			for k in "${HA_REDIS_NODES[@]}"; do
				[ "$k" != "$name" ] && { name=$k; break; }
			done
		fi
		harness_running "redis-$name" || return 0
		fault_log begin "$id" redis_kill "$name down $b ms"
		harness_kill "redis-$name"
		sleep_ms "$b"
		harness_start_redis "$name" >/dev/null
		fault_log end "$id"
		;;
	app_kill)
		fault_log begin "$id" app_kill "host $c down $b ms"
		app_kill "$c"
		sleep_ms "$b"
		app_start "$c"
		# Healed once the host serves again: its web server answers 503
		# until it notices the pool is back (lighttpd re-enables a
		# backend a second or two after its last failed connect).
		harness_wait_http "$([ "$c" = a ] && echo "$url_a" || echo "$url_b")" 405 15 >/dev/null
		fault_log end "$id"
		;;
	slow_link)
		fault_log begin "$id" slow_link "host $c: $a ms a chunk for $b ms"
		links "$c" "1 2 3" delay "$a"
		sleep_ms "$b"
		links "$c" "1 2 3" heal
		fault_log end "$id"
		;;
	galera_flap)
		# Bursts of loss: TCP resends, late.
		fault_log begin "$id" galera_flap "node $a: its packets lost $c ms of every $((c * 3)) ms, for $b ms"
		end=$(($(harness_now_ms) + b))
		while [ "$(harness_now_ms)" -lt "$end" ]; do
			split "$a" on
			sleep_ms "$c"
			split "$a" off
			sleep_ms $((c * 2))
		done
		fault_log end "$id"
		;;
	target_outage)
		fault_log begin "$id" target_outage "$b for $a ms"
		echo "$b" >"$target_control"
		sleep_ms "$a"
		echo 200 >"$target_control"
		fault_log end "$id"
		;;
	api_outage) reconcile_fault "$id" "$a" "$b" ;;
	esac
}

# The schedule: at each tick (every 2-5 s) one kind and its parameters are
# drawn, whether or not it then runs, so that a seed always draws the same
# schedule; a fault is skipped while an earlier one holds its resource
# (planned times: the same seed skips the same ones).
RANDOM=$seed
read -r -d '' -a kind_list <<<"$kinds"
t0=$(harness_now_ms)
tick=3000
id=0
restarted=0
jobs=()
declare -A busy=()
while [ "$tick" -lt "$((seconds * 1000))" ]; do
	while [ "$(harness_now_ms)" -lt "$((t0 + tick))" ]; do sleep 0.1; done
	kind=${kind_list[$((RANDOM % ${#kind_list[@]}))]}
	node=$((1 + RANDOM % 3)) host=a
	[ $((RANDOM % 2)) = 0 ] && host=b
	index=$RANDOM duration=$((1000 + RANDOM % 4000)) a=$node b='' c=$host
	res2=none
	case $kind in
	galera_isolate | galera_split)
		b=$((8000 + RANDOM % 12000)) span=$b res=galera
		[ "$kind" = galera_isolate ] && res2=links
		;;
	app_minority) b=$((10000 + RANDOM % 10000)) span=$b res=galera res2=links ;;
	app_cut) b=$((3000 + RANDOM % 12000)) span=$b res=links ;;
	galera_kill) b=$((2000 + RANDOM % 8000)) span=$((b + 30000)) res=galera ;;
	galera_pause) b=$((lease_ms + 2000 + RANDOM % 4000)) span=$((b + 15000)) res=galera ;;
	cluster_restart)
		b=$((1000 + RANDOM % 2000)) span=90000 res=galera
		# Once a run: the next ones are skipped.
		[ "$restarted" = 1 ] && res=cluster_restarted
		restarted=1
		;;
	redis_split) b=$((6000 + RANDOM % 6000)) span=$((b + 5000)) res=redis ;;
	sentinel_failover) a=$((1 + RANDOM % 3)) span=8000 res=redis ;;
	redis_kill) a=$index b=$duration span=$((b + 5000)) res=redis ;;
	app_kill) b=$((duration / 2)) span=$((b + 5000)) res=app_$host ;;
	slow_link) a=$((20 + RANDOM % 281)) b=$((3000 + RANDOM % 5000)) span=$b res=links ;;
	galera_flap) b=$((3000 + RANDOM % 5000)) c=$((100 + RANDOM % 300)) span=$b res=galera ;;
	target_outage)
		a=$((duration * 2)) span=$a res=target
		case $((index % 4)) in
		0) b=500 ;;
		1) b=close ;;
		2) b=hang ;;
		3) b="503 retry-after 1" ;;
		esac
		;;
	api_outage)
		a=$((duration * 2)) span=$a res=api
		case $((index % 4)) in
		0) b="500 0 0" ;;
		1) b="429 0 0" ;;
		2) b="503 0 0 1" ;;
		3) b="slow 0 0 1500" ;;
		esac
		;;
	esac
	now=$tick
	tick=$((tick + 2000 + RANDOM % 3000))
	[ "$res" = cluster_restarted ] && continue
	[ "${busy[$res]:-0}" -gt "$now" ] && continue
	[ "$res2" != none ] && [ "${busy[$res2]:-0}" -gt "$now" ] && continue
	id=$((id + 1))
	busy[$res]=$((now + span + 1000))
	[ "$res2" = none ] || busy[$res2]=$((now + span + 1000))
	fault "$id" "$kind" "$a" "$b" "$c" &
	jobs+=($!)
done

# ---- heal, final round, verdict --------------------------------------------

printf '# chaos-ha: faults stop; healing\n'
for job in "${jobs[@]}"; do
	wait "$job" 2>/dev/null
done
heal0=$(harness_now_ms)
while ip rule del pref 100 2>/dev/null; do :; done
for h in a b; do
	links "$h" "1 2 3" heal
	app_start "$h"
done
echo 200 >"$target_control"
for k in 1 2 3; do
	galera_running "$k" && kill -CONT "$HARNESS_PID"
done
for k in 1 2 3; do
	galera_running "$k" || harness_start_galera_node galera "$k" >>"$HARNESS_DIR/restarts.log" 2>&1
done
for name in "${HA_REDIS_NODES[@]}"; do
	harness_start_redis "$name" >/dev/null
done
# Every node Synced in one primary component of three.
deadline=$(($(harness_now_ms) + 180000))
synced=0
while [ "$(harness_now_ms)" -lt "$deadline" ]; do
	synced=0
	for k in 1 2 3; do
		[ "$(harness_galera_state galera "$k")" = "Synced Primary ON" ] &&
			[ "$(harness_sql_on "galera$k" "SHOW STATUS LIKE 'wsrep_cluster_size'" 2>/dev/null | cut -f2)" = 3 ] &&
			synced=$((synced + 1))
	done
	[ "$synced" = 3 ] && break
	sleep 0.5
done
galera_healed=$(($(harness_now_ms) - heal0))
# The sentinels agree, and the master they name says it is one.
deadline=$(($(harness_now_ms) + 60000))
while [ "$(harness_now_ms)" -lt "$deadline" ]; do
	m=$(redis_master_name) && [ "$(harness_redis_on "$m" ROLE 2>/dev/null | head -n 1)" = master ] &&
		[ "$(for s in s1 s2 s3; do harness_sentinel "$s" SENTINEL get-master-addr-by-name "$HA_MASTER_NAME" | sed -n 2p; done | sort -u | wc -l)" = 1 ] &&
		break
	sleep 0.5
done
printf '# chaos-ha: healed: %s of 3 nodes Synced in the primary component after %s s; Redis master %s\n' \
	"$synced" "$(ha_seconds "$galera_healed")" "$(redis_master_name)"
heal_violations=0
if [ "$synced" != 3 ]; then
	printf 'chaos-ha: VIOLATION: the cluster did not heal: %s (seed %s)\n' \
		"$(for k in 1 2 3; do printf 'node %s %s; ' "$k" "$(harness_galera_state galera "$k")"; done)" "$seed"
	heal_violations=1
fi
for u in "$url_a" "$url_b"; do
	harness_wait_http "$u" 405 10
done
kill -USR1 "$client_pid"
wait "$client_pid"
client_rc=$?

recon_violations=0
reconcile_finish

# The hand-off: the target answers 200 again; every payment and change
# recorded is delivered within two minutes, none dead; each key delivered
# with one body (the totals a change carries are those at the attempt).
dispatch_violations=0
deadline=$(($(harness_now_ms) + 120000))
pending_sql="SELECT (SELECT COUNT(*) FROM payments WHERE dispatch_state = 'pending')
	+ (SELECT COUNT(*) FROM payment_event_changes WHERE dispatch_state = 'pending')"
until [ "$(ha_sql "$pending_sql")" = 0 ] || [ "$(harness_now_ms)" -ge "$deadline" ]; do
	sleep 0.5
done
read -r d_total d_delivered d_dead d_pending <<<"$(ha_sql "SELECT COUNT(*),
	COALESCE(SUM(dispatch_state = 'delivered'), 0), COALESCE(SUM(dispatch_state = 'dead'), 0),
	COALESCE(SUM(dispatch_state = 'pending'), 0) FROM payments")"
read -r c_total c_delivered c_dead c_pending <<<"$(ha_sql "SELECT COUNT(*),
	COALESCE(SUM(dispatch_state = 'delivered'), 0), COALESCE(SUM(dispatch_state = 'dead'), 0),
	COALESCE(SUM(dispatch_state = 'pending'), 0) FROM payment_event_changes")"
target_record=$E2E_DIR/target.record
awk -F '\t' '$10 ~ /^200/ { print $4 "\t" $11 }' "$target_record" >"$E2E_DIR/delivered.tsv"
jq -rR 'split("\t") | [.[0], (.[1] | fromjson
	| del(.refunded_amount, .dispute_state, .cancelled) | tojson)] | @tsv' \
	<"$E2E_DIR/delivered.tsv" | sort -u | cut -f1 | uniq -d >"$E2E_DIR/keys.bodies"
ha_sql "SELECT CONCAT('payhook:', provider, ':', transaction_id) FROM payments" |
	sort >"$E2E_DIR/keys.rows"
cut -f1 "$E2E_DIR/delivered.tsv" | grep -v ':.*:.*:.*:' | sort -u >"$E2E_DIR/keys.payments"
undelivered=$(comm -23 "$E2E_DIR/keys.rows" "$E2E_DIR/keys.payments" | wc -l)
stray=$(comm -13 "$E2E_DIR/keys.rows" "$E2E_DIR/keys.payments" | wc -l)
deliveries=$(wc -l <"$E2E_DIR/delivered.tsv")
printf '| hand-off | %s payments: %s delivered, %s dead, %s pending; %s changes: %s delivered, %s dead, %s pending; %s deliveries answered 200 for %s keys; %s keys with two bodies; %s payments never delivered, %s keys of no payment; %s target outages |\n' \
	"$d_total" "$d_delivered" "$d_dead" "$d_pending" "$c_total" "$c_delivered" "$c_dead" \
	"$c_pending" "$deliveries" "$(cut -f1 "$E2E_DIR/delivered.tsv" | sort -u | wc -l)" \
	"$(wc -l <"$E2E_DIR/keys.bodies")" "$undelivered" "$stray" \
	"$(grep -c ' begin [0-9]* target_outage ' "$faults")"
if [ "$d_dead" != 0 ] || [ "$d_pending" != 0 ] || [ "$c_dead" != 0 ] || [ "$c_pending" != 0 ]; then
	printf 'chaos-ha: VIOLATION: the hand-off left payments or changes dead or pending (seed %s)\n' "$seed"
	dispatch_violations=1
fi
if [ -s "$E2E_DIR/keys.bodies" ]; then
	printf 'chaos-ha: VIOLATION: keys delivered with two different bodies (seed %s): %s\n' \
		"$seed" "$(head -n 5 "$E2E_DIR/keys.bodies" | tr '\n' ' ')"
	dispatch_violations=1
fi
if [ "$undelivered" != 0 ] || [ "$stray" != 0 ]; then
	printf 'chaos-ha: VIOLATION: %s payments never delivered, %s keys delivered of no payment (seed %s)\n' \
		"$undelivered" "$stray" "$seed"
	dispatch_violations=1
fi

# ---- figures ------------------------------------------------------------------

# The client's clock: the history's times are seconds from its start.
client_t0=$(sed -n 's/^# chaos: workload starts at \([0-9]*\) ms$/\1/p' "$HARNESS_DIR/client.out")
printf '\n| faults injected (%s) |' "$(grep -c ' begin ' "$faults")"
for kind in $all_kinds; do
	printf ' %s %s,' "$kind" "$(grep -c " begin [0-9]* $kind " "$faults")"
done
printf ' |\n'
printf '| Redis failovers | %s (+switch-master seen by sentinel s2) |\n' \
	"$(grep -c '+switch-master' "$HARNESS_DIR/s2/sentinel.log")"
# (The two joiners of the start each log one of both.)
ist=$(($(cat "$HARNESS_DIR"/galera*/error.log | grep -c 'WSREP: IST received') - 2))
sst=$(($(cat "$HARNESS_DIR"/galera*/error.log | grep -c 'WSREP: SST succeeded') - 2))
printf '| Galera | %s node starts after the first (%s of them recovered with --wsrep-recover); %s IST and %s SST received; the cluster Synced again %s s after the heal |\n' \
	"$(grep -c 'harness: galera node' "$HARNESS_DIR/restarts.log" 2>/dev/null)" \
	"$(grep -c ' recovered at ' "$HARNESS_DIR/restarts.log" 2>/dev/null)" \
	"$((ist < 0 ? 0 : ist))" "$((sst < 0 ? 0 : sst))" "$(ha_seconds "$galera_healed")"
# Recovery after each fault that ended while no other was going on: from
# its end to the first request from which 20 in a row (by time sent) were
# answered (anything but 503, 5xx or none,
# a hang-up of the client's own aside);
# latency during faults (sent between a begin and its end) and outside.
if [ -n "$client_t0" ]; then
	awk -F '\t' -v t0="$client_t0" -v faults="$faults" -v dlat="$E2E_DIR/lat.during" \
		-v olat="$E2E_DIR/lat.outside" '
		BEGIN {
			while ((getline line < faults) > 0) {
				split(line, f, " ")
				if (f[2] == "begin") { b[f[3]] = f[1] - t0; k[f[3]] = f[4] }
				else e[f[3]] = f[1] - t0
			}
		}
		NR > 1 && $5 != "final" {
			s = $1 * 1000; n++; sent[n] = s
			st = $7; bad[n] = ((st == 0 && $5 != "hangup") || st >= 500)
			lat = ($2 - $1) * 1000; during = 0
			for (id in b) if (s >= b[id] && (!(id in e) || s <= e[id])) { during = 1; break }
			print lat > (during ? dlat : olat)
		}
		END {
			for (id in b) {
				if (!(id in e)) continue
				# The first fault of another kind that begins after
				# this one ends; one still going then: not measured.
				next_b = -1; alone = 1
				for (o in b) {
					if (o == id) continue
					if (b[o] <= e[id] && (!(o in e) || e[o] >= e[id])) alone = 0
					if (b[o] > e[id] && (next_b < 0 || b[o] < next_b)) next_b = b[o]
				}
				for (i = 1; i <= n && sent[i] < e[id]; i++) ;
				for (; i <= n; i++) {
					ok = 1
					for (j = i; j < i + 20 && j <= n; j++) if (bad[j]) { ok = 0; i = j; break }
					if (ok) break
				}
				r = (i <= n ? sent[i] - e[id] : -1); if (r < 0) r = 0
				if (!alone || (next_b >= 0 && e[id] + r > next_b)) { skip[k[id]]++; continue }
				cnt[k[id]]++; sum[k[id]] += r; if (r > max[k[id]]) max[k[id]] = r
			}
			for (x in skip) if (!(x in cnt)) cnt[x] = 0
			for (x in cnt)
				if (cnt[x] > 0)
					printf "| recovery after %s | mean %.1f s, max %.1f s (%d faults alone; %d overlapped by another, not measured) |\n", \
						x, sum[x] / cnt[x] / 1000, max[x] / 1000, cnt[x], skip[x]
				else
					printf "| recovery after %s | not measured (%d faults, each overlapped by another) |\n", x, skip[x]
		}' "$HARNESS_DIR/history.tsv" | sort
	: >>"$E2E_DIR/lat.during"
	: >>"$E2E_DIR/lat.outside"
	printf '| latency during faults | %s requests: p50 %s ms, p99 %s ms, max %s ms |\n' \
		"$(wc -l <"$E2E_DIR/lat.during")" "$(ha__pct "$E2E_DIR/lat.during" 50)" \
		"$(ha__pct "$E2E_DIR/lat.during" 99)" "$(ha__pct "$E2E_DIR/lat.during" 100)"
	printf '| latency outside faults | %s requests: p50 %s ms, p99 %s ms, max %s ms |\n' \
		"$(wc -l <"$E2E_DIR/lat.outside")" "$(ha__pct "$E2E_DIR/lat.outside" 50)" \
		"$(ha__pct "$E2E_DIR/lat.outside" 99)" "$(ha__pct "$E2E_DIR/lat.outside" 100)"
fi
printf '| pool logs (level warn) | %s warnings: %s recorded without the lock, %s Redis master changes seen by a worker, %s early-mark rebuilds that failed |\n' \
	"$(cat "$HARNESS_DIR"/host?.log | grep -c ' warn ')" \
	"$(cat "$HARNESS_DIR"/host?.log | grep -c 'recorded without the lock')" \
	"$(cat "$HARNESS_DIR"/host?.log | grep -c 'redis: the master is now')" \
	"$(cat "$HARNESS_DIR"/host?.log | grep -c 'early marks not rebuilt')"

keep=${CHAOS_KEEP:-${TMPDIR:-/tmp}/payhook-chaos-ha-$seed}
if mkdir -p "$keep" && cp "$HARNESS_DIR/history.tsv" "$faults" "$HARNESS_DIR/client.out" \
	"$HARNESS_DIR"/host?.log "$E2E_DIR"/dispatch-?.log "$target_record" "$keep/"; then
	cp -r "$recon_dir" "$keep/" 2>/dev/null
	for k in 1 2 3; do cp "$HARNESS_DIR/galera$k/error.log" "$keep/galera$k.err" 2>/dev/null; done
	printf '| kept | %s: history.tsv (every request), faults.log, client.out, host?.log, dispatch-?.log, target.record, reconcile/, galera?.err |\n' "$keep"
fi
rc=0
[ "$heal_violations" = 0 ] || rc=1
[ "$dispatch_violations" = 0 ] || rc=1
[ "$recon_violations" = 0 ] || rc=1
[ "$client_rc" = 0 ] || rc=$((client_rc == 1 ? 1 : 99))
client_v=$(sed -n 's/^| violations | \([0-9]*\) |$/\1/p' "$HARNESS_DIR/client.out")
violations=$((${client_v:-0} + $(grep -c 'VIOLATION: node' "$HARNESS_DIR/client.out") +
	heal_violations + dispatch_violations + recon_violations))
[ "$rc" = 0 ] || [ "$violations" -gt 0 ] || violations=1
if [ "$rc" = 0 ]; then
	printf 'violations: 0\nchaos-ha: ok (seed %s, %s s)\n' "$seed" "$seconds"
else
	printf 'violations: %s\nchaos-ha: FAILED (seed %s): replay with CHAOS_SEED=%s CHAOS_SECONDS=%s make chaos-ha; the history is in %s\n' \
		"$violations" "$seed" "$seed" "$seconds" "$keep"
fi
exit "$rc"
