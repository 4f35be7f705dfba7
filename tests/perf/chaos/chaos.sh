#!/bin/bash
# chaos.sh - "make chaos": random fault schedules against the live stack, and
# a checker that proves nothing was lost or recorded twice.
#
# The stack is the tests' own (tests/lib/harness.sh): MariaDB and Redis, a TCP
# proxy (tests/servers/tcpproxy.c) between the workers and each of them, a payhook
# master (payhook --workers, started by conf/spawn-fcgi.sh) and lighttpd in
# front. tests/perf/chaos/chaos_client delivers a fixed set of transactions through
# lighttpd as providers do and records every answer; meanwhile this script
# draws a fault from the seed every 1.5-4 s, alone or on top of others:
#
#   worker_kill    SIGKILL of a worker (the master must replace it)
#   worker_stop    SIGSTOP of a worker for longer than its lease, then SIGCONT
#   db_stop        MariaDB stopped cleanly, restarted 1-4 s later
#   db_kill        MariaDB SIGKILLed (its recorded PID), restarted 1-4 s later
#   db_readonly    SET GLOBAL read_only for 2-6 s
#   db_tablelock   LOCK TABLES payments WRITE held for 2-6 s
#   redis_kill     Redis SIGKILLed, restarted 1-4 s later (its locks gone)
#   redis_pause    Redis SIGSTOPped for 1-4 s (harness_pause)
#   proxy_delay    20-400 ms on every chunk to MariaDB or Redis for 2-8 s
#   proxy_stall    nothing relayed to MariaDB or Redis for 1-4 s
#   proxy_drop     every connection to MariaDB or Redis reset at once
#   web_restart    lighttpd stopped and started again
#   target_outage  the hand-off target (tests/servers/http_target) answers
#                  500, closes the connection, hangs past the attempt's
#                  timeout, or answers 503 with Retry-After, for 2-8 s
#   api_outage     the provider's API that payhook-reconcile lists
#                  answers 500, 429 without Retry-After, 503 with it, or
#                  1.5 s late, for 2-8 s
#
# Meanwhile payhook-reconcile --once runs every 2 s (as cron would) against
# a fake Stripe API whose payments appear one by one, half of them also
# delivered as Stripe's webhooks (tests/perf/chaos/reconcile.sh): a complete
# pass must have committed every payment of its span, a webhook's 200 its
# row, and in the end every payment listed is one row, none lost, none
# twice.
#
# Meanwhile the payments recorded are handed on by two payhook-dispatch
# daemons and a payhook-dispatch --once run every 3 s (as cron would),
# through the same proxy to MariaDB, to that target: after the faults every
# payment must be delivered and none dead (an outage makes none dead,
# whichever dispatcher sees it), and each --once run exits 0, 1 or 3.
#
# Meanwhile a provider that only notifies, Mollie: payments appear at a
# fake of its API, are notified through lighttpd as Mollie does, and are
# fetched by two payhook-reconcile --notify daemons and a --once --notify
# run every 3 s (tests/perf/chaos/notify.sh); the schedule's mollie_outage
# makes its API fail for a while, fetcher_kill SIGKILLs a daemon. No 200
# without a queued row; in the end every notified paid payment is one row
# with the API's amount, none lost, none twice, nothing pending.
#
# Then every fault is healed, the client delivers every transaction once more
# until it gets a 2xx, and its checker judges the history and the final table
# (tests/perf/chaos/chaos_check.c). This script adds what only it sees: workers
# that died without being killed on purpose, and Redis lock keys without a
# TTL (looked for at every tick and at the end).
#
#   BUILD_DIR=... SRC_DIR=... bash tests/perf/chaos/chaos.sh
#
# Settings (environment): CHAOS_SECONDS (300) of faults; CHAOS_SEED (random,
# printed: the same seed replays the same schedule, as far as timing allows);
# CHAOS_WORKERS (4); CHAOS_CLIENTS (8); CHAOS_TRANSACTIONS (20 per second of
# faults); CHAOS_FINAL_SECONDS (120, the final round's bound); CHAOS_FAULTS
# (the kinds to draw from, default all); CHAOS_PAYHOOK (the payhook binary,
# default BUILD_DIR/app/payhook); CHAOS_DISPATCH (1: the dispatchers and the
# target_outage faults; 0: neither); CHAOS_RECONCILE (1: payhook-reconcile's
# passes and the api_outage faults; 0: neither); CHAOS_NOTIFY (1: Mollie's
# notifications, their fetchers, the mollie_outage and fetcher_kill faults;
# 0: none); CHAOS_KEEP (where the history, the fault log
# and the pool's log are copied at the end; default /tmp/payhook-chaos-SEED). Exit 0: no violation; 1: violations; 2: bad
# settings; 99: the stack did not start.
set -u
: "${SRC_DIR:=$(cd "$(dirname "$0")/../../.." && pwd)}"
: "${BUILD_DIR:=$SRC_DIR}"
top_srcdir=$SRC_DIR top_builddir=$BUILD_DIR
export top_srcdir top_builddir

seconds=${CHAOS_SECONDS:-300}
seed=${CHAOS_SEED:-}
[ -n "$seed" ] || seed=$(($(od -An -N2 -tu2 /dev/urandom) + 1))
workers=${CHAOS_WORKERS:-4}
clients=${CHAOS_CLIENTS:-8}
ntx=${CHAOS_TRANSACTIONS:-$((seconds * 20))}
final_seconds=${CHAOS_FINAL_SECONDS:-120}
payhook=${CHAOS_PAYHOOK:-$BUILD_DIR/app/payhook}
client=$BUILD_DIR/tests/perf/chaos/chaos_client
dispatch=${CHAOS_DISPATCH:-1}
reconcile=${CHAOS_RECONCILE:-1}
notify=${CHAOS_NOTIFY:-1}
dispatcher=$BUILD_DIR/app/payhook-dispatch
target_bin=$BUILD_DIR/tests/servers/http_target
all_kinds="worker_kill worker_stop db_stop db_kill db_readonly db_tablelock
redis_kill redis_pause proxy_delay proxy_stall proxy_drop web_restart"
[ "$dispatch" = 1 ] && all_kinds="$all_kinds target_outage"
[ "$reconcile" = 1 ] && all_kinds="$all_kinds api_outage"
[ "$notify" = 1 ] && all_kinds="$all_kinds mollie_outage fetcher_kill"
kinds=${CHAOS_FAULTS:-$all_kinds}
for n in "$seconds" "$seed" "$workers" "$clients" "$ntx" "$final_seconds"; do
	case $n in '' | *[!0-9]*)
		echo "chaos: CHAOS_SECONDS, _SEED, _WORKERS, _CLIENTS, _TRANSACTIONS and _FINAL_SECONDS are numbers" >&2
		exit 2
		;;
	esac
done
for tool in lighttpd spawn-fcgi redis-cli mariadb; do
	command -v "$tool" >/dev/null || { echo "chaos: $tool is not installed" >&2; exit 2; }
done
[ -x "$client" ] || { echo "chaos: $client is not built (make chaos builds it)" >&2; exit 2; }
if [ "$dispatch" = 1 ]; then
	for bin in "$dispatcher" "$target_bin"; do
		[ -x "$bin" ] || { echo "chaos: $bin is not built (make chaos builds it)" >&2; exit 2; }
	done
fi

# shellcheck source-path=SCRIPTDIR source=../../lib/harness.sh
. "$SRC_DIR/tests/lib/harness.sh"
harness_init || exit 99
harness_start_redis || exit 99
harness_start_mariadb || exit 99
harness_start_proxy db "127.0.0.1:$MYSQL_PORT" || exit 99
harness_start_proxy redis "127.0.0.1:$REDIS_PORT" || exit 99

# The lease is what a SIGSTOP must outlast: short timeouts keep it at 10 s
# (payhook requires more than 2 x (1 + 3 x 1) s + 1 s).
lease_ms=10000
secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
cat >"$HARNESS_DIR/chaos.conf" <<EOF || exit 99
webhook_secret = $secret
lock_ttl_ms = $lease_ms
mysql_connect_timeout_s = 1
mysql_read_timeout_s = 1
mysql_write_timeout_s = 1
log_level = warn
EOF
chaos_providers=standard
if [ "$reconcile" = 1 ]; then
	# shellcheck source-path=SCRIPTDIR source=reconcile.sh
	. "$SRC_DIR/tests/perf/chaos/reconcile.sh"
	reconcile_setup
	chaos_providers="$chaos_providers stripe"
fi
if [ "$notify" = 1 ]; then
	# shellcheck source-path=SCRIPTDIR source=notify.sh
	. "$SRC_DIR/tests/perf/chaos/notify.sh"
	notify_setup
	chaos_providers="$chaos_providers mollie"
fi
echo "providers = $chaos_providers" >>"$HARNESS_DIR/chaos.conf" || exit 99
# The workers reach both backends through the proxies (the environment wins
# over the file); the checker reads MariaDB directly.
export PAYHOOK_MYSQL_PORT=$PROXY_PORT_DB PAYHOOK_REDIS_PORT=$PROXY_PORT_REDIS
pool_log=$HARNESS_DIR/pool.log
harness_fill "$SRC_DIR/conf/spawn-fcgi.sh" "$HARNESS_DIR/pool.sh" \
	SOCKET="$HARNESS_DIR/pool.sock" WORKERS="$workers" \
	PIDFILE="$HARNESS_DIR/pool.pid" PAYHOOK="$payhook" \
	CONFIG="$HARNESS_DIR/chaos.conf" LOG="$pool_log" || exit 99
sh "$HARNESS_DIR/pool.sh" </dev/null >"$HARNESS_DIR/pool.out" 2>&1
harness_record_master pool "$workers" "$?" || exit 99
master=$HARNESS_MASTER_PID
harness_fill "$SRC_DIR/conf/lighttpd-spawn-fcgi.conf" "$HARNESS_DIR/fastcgi-snippet.conf" \
	SOCKET="$HARNESS_DIR/pool.sock" || exit 99
harness_start_lighttpd web "$HARNESS_DIR/fastcgi-snippet.conf" || exit 99
url=http://127.0.0.1:$LIGHTTPD_PORT/webhook
harness_wait_http "$url" 405 10 "$LIGHTTPD_PID" || exit 99

# ---- the hand-off: a target, two daemons and --once runs ----------------------

# Each dispatcher reaches MariaDB through the proxy too (its faults are
# theirs); few attempts, so that an outage counted as attempts would make
# payments dead within the run.
dispatch_log=$HARNESS_DIR/dispatch.log
target_control=$HARNESS_DIR/target.control
once_rcs=$HARNESS_DIR/once.rcs
: >"$dispatch_log"
: >"$once_rcs"
if [ "$dispatch" = 1 ]; then
	echo 200 >"$target_control"
	"$target_bin" --control "$target_control" --record "$HARNESS_DIR/target.record" \
		>"$HARNESS_DIR/target.port" 2>>"$dispatch_log" &
	harness_record target "$!"
	until read -r target_port 2>/dev/null <"$HARNESS_DIR/target.port"; do
		harness_running target || exit 99
		sleep 0.02
	done
	dispatch_env=(PAYHOOK_CONFIG="$HARNESS_DIR/chaos.conf"
		PAYHOOK_DISPATCH_URL="http://127.0.0.1:$target_port/hook"
		PAYHOOK_DISPATCH_TIMEOUT_MS=1000 PAYHOOK_DISPATCH_LEASE_MS=$((lease_ms + 2000))
		PAYHOOK_DISPATCH_MAX_ATTEMPTS=5 PAYHOOK_DISPATCH_CIRCUIT_FAILURES=3
		PAYHOOK_DISPATCH_BACKOFF_MS=200 PAYHOOK_DISPATCH_BACKOFF_MAX_MS=2000
		PAYHOOK_DISPATCH_POLL_MS=200 PAYHOOK_LOG_LEVEL=warn)
	for d in 1 2; do
		env "${dispatch_env[@]}" "$dispatcher" </dev/null >>"$dispatch_log" 2>&1 &
		harness_record "dispatcher-$d" "$!"
	done
	sleep 0.5
	for d in 1 2; do
		harness_running "dispatcher-$d" || {
			harness_log_tail "$dispatch_log"
			exit 99
		}
	done
	# cron: a run every 3 s until the file that stops it appears.
	(
		until [ -e "$HARNESS_DIR/once.stop" ]; do
			env "${dispatch_env[@]}" "$dispatcher" --once=5 </dev/null \
				>>"$dispatch_log" 2>&1
			echo "$?" >>"$once_rcs"
			sleep 3
		done
	) &
	once_loop=$!
fi

faults=$HARNESS_DIR/faults.log
killed=$HARNESS_DIR/killed # PIDs of the workers killed on purpose
: >"$faults"
: >"$killed"
printf '# chaos: seed %s, %s s of faults, %s workers, %s clients, %s transactions; replay: CHAOS_SEED=%s CHAOS_SECONDS=%s make chaos\n' \
	"$seed" "$seconds" "$workers" "$clients" "$ntx" "$seed" "$seconds"

"$client" --url "$url" --secret "$secret" --tag "chaos$seed" --seed "$seed" \
	--seconds "$seconds" --transactions "$ntx" --clients "$clients" \
	--final-seconds "$final_seconds" --history "$HARNESS_DIR/history.tsv" \
	--faults "$faults" --mysql-host 127.0.0.1 --mysql-port "$MYSQL_PORT" \
	--mysql-user payhook --mysql-password payhook-test \
	--mysql-database payhook > >(tee "$HARNESS_DIR/client.out") 2>&1 &
client_pid=$!
[ "$reconcile" = 1 ] && reconcile_start
[ "$notify" = 1 ] && notify_start

# ---- the faults ---------------------------------------------------------------

# fault_log begin ID KIND DETAIL... | end ID: one line of the log the checker
# reads, in the client's clock (wall-clock milliseconds).
fault_log() {
	printf '%s %s\n' "$(harness_now_ms)" "$*" >>"$faults"
	if [ "$1" = begin ]; then
		printf '# chaos: %6.1f s  %s\n' \
			"$(($(harness_now_ms) - t0))e-3" "${*:3}"
	fi
}

sleep_ms() { sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"; }

# The master's workers, by PID: the schedule picks one by index.
workers_now() { harness_children "$master" | sort -n; }

# worker_pid INDEX [busy]: the worker at INDEX modulo their number, not
# stopped. With busy, for up to 1 s, the first from there that is inside a
# request (its current system call is not accept, 43): a worker stopped
# between requests holds no lock, and would test little.
worker_pid() {
	local -a w
	local pid state call i try
	for try in $(seq 1 100); do
		mapfile -t w < <(workers_now)
		[ "${#w[@]}" -gt 0 ] || return 1
		for i in $(seq 0 $((${#w[@]} - 1))); do
			pid=${w[$((($1 + i) % ${#w[@]}))]}
			read -r _ _ state _ <"/proc/$pid/stat" 2>/dev/null || continue
			[ "$state" != T ] || continue
			read -r call _ <"/proc/$pid/syscall" 2>/dev/null || continue
			if [ -z "${2:-}" ] || [ "$call" != 43 ] || [ "$try" = 100 ]; then
				printf '%s\n' "$pid"
				return 0
			fi
		done
		sleep 0.01
	done
	return 1
}

# fault ID KIND A B C: injects fault ID and heals it; the parameters come
# from the main shell, whose RANDOM follows the seed. Faults with a duration
# run as background jobs.
fault() {
	local id=$1 kind=$2 a=${3:-} b=${4:-} c=${5:-} pid start
	case $kind in
	worker_kill)
		pid=$(worker_pid "$a") || return 0
		fault_log begin "$id" worker_kill "pid $pid"
		echo "$pid" >>"$killed"
		kill -KILL "$pid"
		fault_log end "$id"
		;;
	worker_stop)
		pid=$(worker_pid "$a" busy) || return 0
		start=$(harness_starttime "$pid") || return 0
		fault_log begin "$id" worker_stop "pid $pid for $b ms"
		kill -STOP "$pid"
		sleep_ms "$b"
		[ "$(harness_starttime "$pid")" = "$start" ] && kill -CONT "$pid"
		fault_log end "$id"
		;;
	db_stop | db_kill)
		fault_log begin "$id" "$kind" "down $a ms"
		if [ "$kind" = db_stop ]; then
			harness_stop_mariadb
		elif harness_running mariadb; then
			kill -KILL "$HARNESS_PID"
			while harness_running mariadb; do sleep 0.05; done
		fi
		sleep_ms "$a"
		harness_start_mariadb >/dev/null
		fault_log end "$id"
		;;
	db_readonly)
		fault_log begin "$id" db_readonly "for $a ms"
		harness_sql "SET GLOBAL read_only = ON"
		sleep_ms "$a"
		harness_sql "SET GLOBAL read_only = OFF"
		fault_log end "$id"
		;;
	db_tablelock)
		fault_log begin "$id" db_tablelock "for $a ms"
		harness_sql "LOCK TABLES payments WRITE; DO SLEEP($a / 1000); UNLOCK TABLES"
		fault_log end "$id"
		;;
	redis_kill)
		fault_log begin "$id" redis_kill "down $a ms"
		if harness_running redis; then
			kill -KILL "$HARNESS_PID"
			while harness_running redis; do sleep 0.05; done
		fi
		sleep_ms "$a"
		harness_start_redis >/dev/null
		fault_log end "$id"
		;;
	redis_pause)
		fault_log begin "$id" redis_pause "for $a ms"
		harness_pause redis
		sleep_ms "$a"
		harness_resume redis
		fault_log end "$id"
		;;
	proxy_delay)
		fault_log begin "$id" proxy_delay "$a: $b ms a chunk for $c ms"
		harness_proxy "$a" delay "$b" >/dev/null
		sleep_ms "$c"
		harness_proxy "$a" delay 0 >/dev/null
		fault_log end "$id"
		;;
	proxy_stall)
		fault_log begin "$id" proxy_stall "$a for $b ms"
		harness_proxy "$a" stall on >/dev/null
		sleep_ms "$b"
		harness_proxy "$a" stall off >/dev/null
		fault_log end "$id"
		;;
	proxy_drop)
		fault_log begin "$id" proxy_drop "$a"
		harness_proxy "$a" drop >/dev/null
		fault_log end "$id"
		;;
	web_restart)
		fault_log begin "$id" web_restart "down $a ms"
		harness_stop web
		sleep_ms "$a"
		harness_start_lighttpd web "$HARNESS_DIR/fastcgi-snippet.conf" >/dev/null
		fault_log end "$id"
		;;
	api_outage) reconcile_fault "$id" "$a" "$b" ;;
	mollie_outage) notify_fault "$id" "$a" "$b" ;;
	fetcher_kill) notify_kill "$id" "$a" ;;
	target_outage)
		fault_log begin "$id" target_outage "$b for $a ms"
		echo "$b" >"$target_control"
		sleep_ms "$a"
		echo 200 >"$target_control"
		fault_log end "$id"
		;;
	esac
}

# Lock keys without a TTL would hold their transaction for ever.
ttl_script="local bad = {} for _, k in ipairs(redis.call('KEYS', ARGV[1])) do if redis.call('PTTL', k) == -1 then bad[#bad + 1] = k end end return bad"
ttl_violations=0 ttl_scans=0
scan_locks() {
	local keys
	keys=$(timeout 1 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" EVAL "$ttl_script" 0 'lock:webhook:tx:*' 2>&1) || return 0
	case $keys in *ERR* | *rror*) return 0 ;; esac
	ttl_scans=$((ttl_scans + 1))
	if [ -n "$keys" ]; then
		printf 'chaos: VIOLATION: Redis lock key(s) without a TTL (seed %s): %s\n' "$seed" "$keys"
		ttl_violations=$((ttl_violations + 1))
	fi
}

declare -A seen=() busy=()
remember_workers() {
	local pid
	for pid in $(workers_now); do
		[ -n "${seen[$pid]:-}" ] || seen[$pid]=$(harness_starttime "$pid")
	done
}

# The schedule: at each tick (every 1.5-4 s) one kind, its target and its
# parameters are drawn, whether or not it then runs, so that a seed always
# draws the same schedule. A fault is skipped while an earlier one holds its
# resource (planned times, not measured ones: the same seed skips the same
# ones), so that two faults never fight over one server (a restart during a
# stop); faults on different resources overlap.
RANDOM=$seed
read -r -d '' -a kind_list <<<"$kinds"
t0=$(harness_now_ms)
tick=2000
id=0
jobs=()
while [ "$tick" -lt "$((seconds * 1000))" ]; do
	remember_workers
	while [ "$(harness_now_ms)" -lt "$((t0 + tick))" ]; do sleep 0.1; done
	[ "${busy[redis]:-0}" -gt "$tick" ] || scan_locks
	kind=${kind_list[$((RANDOM % ${#kind_list[@]}))]}
	target=db
	[ $((RANDOM % 2)) = 0 ] && target=redis
	index=$RANDOM duration=$((1000 + RANDOM % 3000)) b='' c=''
	case $kind in
	worker_kill) a=$index span=0 res=none ;;
	worker_stop)
		# Longer than the lease; at most half the pool at once.
		a=$index b=$((lease_ms + 2000 + RANDOM % 3000)) span=$b
		res=stop_$((index % (workers > 1 ? workers / 2 : 1)))
		;;
	db_stop | db_kill) a=$duration span=$((a + 4000)) res=db ;;
	db_readonly | db_tablelock) a=$((duration + 1000 + RANDOM % 2000)) span=$a res=db ;;
	redis_kill) a=$duration span=$((a + 2000)) res=redis ;;
	redis_pause) a=$duration span=$a res=redis ;;
	proxy_delay) a=$target b=$((20 + RANDOM % 381)) c=$((duration * 2)) span=$c res=proxy_$target ;;
	proxy_stall) a=$target b=$duration span=$b res=proxy_$target ;;
	proxy_drop) a=$target span=0 res=none ;;
	web_restart) a=$((duration - 1000)) span=$((a + 2000)) res=web ;;
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
	mollie_outage)
		a=$((duration * 2)) span=$a res=mollie
		case $((index % 4)) in
		0) b="500 * 0" ;;
		1) b="429 * 0 1" ;;
		2) b="slow * 0 1500" ;;
		3) b="down * 0" ;;
		esac
		;;
	fetcher_kill) a=$((index % 2 + 1)) span=2000 res=fetcher_$a ;;
	esac
	now=$tick
	tick=$((tick + 1500 + RANDOM % 2500))
	[ "${busy[$res]:-0}" -gt "$now" ] && continue
	id=$((id + 1))
	[ "$res" = none ] || busy[$res]=$((now + span + 1000))
	if [ "$span" = 0 ]; then
		fault "$id" "$kind" "$a" "$b" "$c"
	else
		fault "$id" "$kind" "$a" "$b" "$c" &
		jobs+=($!)
	fi
done

# ---- heal, final round, verdict --------------------------------------------

printf '# chaos: faults stop; healing\n'
# Not a bare wait: the client is a child too. Bash forgets the status of
# jobs reaped long ago, and says so: nothing to wait for then.
for job in "${jobs[@]}"; do
	wait "$job" 2>/dev/null
done
for p in db redis; do
	harness_proxy "$p" delay 0 >/dev/null
	harness_proxy "$p" stall off >/dev/null
done
harness_start_mariadb >/dev/null || exit 99
harness_start_redis >/dev/null || exit 99
harness_resume redis
harness_sql "SET GLOBAL read_only = OFF"
harness_running web || harness_start_lighttpd web "$HARNESS_DIR/fastcgi-snippet.conf" >/dev/null || exit 99
# The master's back-off after kills in a row reaches 30 s at most.
deadline=$(($(harness_now_ms) + 40000))
until [ "$(workers_now | wc -l)" -ge "$workers" ] || [ "$(harness_now_ms)" -ge "$deadline" ]; do
	sleep 0.2
done
remember_workers
harness_wait_http "$url" 405 10 || exit 99
kill -USR1 "$client_pid"
wait "$client_pid"
client_rc=$?
scan_locks

# The reconciliation: the API healed, one last complete pass, the verdict
# (before the hand-off's, whose payments then include what it recorded).
recon_violations=0
[ "$reconcile" = 1 ] && reconcile_finish
notify_violations=0
[ "$notify" = 1 ] && notify_finish

# The hand-off: the target answers 200 again; every payment recorded is
# delivered within a minute, none dead.
dispatch_violations=0
if [ "$dispatch" = 1 ]; then
	echo 200 >"$target_control"
	touch "$HARNESS_DIR/once.stop"
	wait "$once_loop" 2>/dev/null
	deadline=$(($(harness_now_ms) + 60000))
	until [ "$(harness_sql "SELECT COUNT(*) FROM payhook.payments WHERE dispatch_state = 'pending'")" = 0 ] ||
		[ "$(harness_now_ms)" -ge "$deadline" ]; do
		sleep 0.5
	done
	read -r d_total d_delivered d_dead d_pending <<<"$(harness_sql "SELECT COUNT(*),
		COALESCE(SUM(dispatch_state = 'delivered'), 0),
		COALESCE(SUM(dispatch_state = 'dead'), 0),
		COALESCE(SUM(dispatch_state = 'pending'), 0) FROM payhook.payments")"
	read -r opened closed <<<"$(harness_sql "SELECT
		COALESCE(SUM(event = 'circuit_open'), 0),
		COALESCE(SUM(event = 'circuit_closed'), 0) FROM payhook.dispatch_alerts")"
	printf '| hand-off | %s payments: %s delivered, %s dead, %s pending; %s target outages; circuit opened %s times, closed %s times (one alert each); --once runs: %s |\n' \
		"$d_total" "${d_delivered:-0}" "${d_dead:-0}" "${d_pending:-0}" \
		"$(grep -c ' begin [0-9]* target_outage ' "$faults")" "${opened:-0}" "${closed:-0}" \
		"$(sort "$once_rcs" | uniq -c | awk '{printf "%s%s exited %s", s, $1, $2; s=", "}')"
	if [ "${d_dead:-0}" != 0 ] || [ "${d_pending:-0}" != 0 ]; then
		printf 'chaos: VIOLATION: the hand-off left %s dead and %s pending of %s payments (seed %s)\n' \
			"${d_dead:-0}" "${d_pending:-0}" "$d_total" "$seed"
		grep -E 'outcome=dead' "$dispatch_log" | head -5
		dispatch_violations=1
	fi
	if grep -qvxE '0|1|3' "$once_rcs"; then
		printf 'chaos: VIOLATION: a --once run exited otherwise than 0, 1 or 3 (seed %s)\n' "$seed"
		dispatch_violations=1
	fi
fi

# Workers that ended without being killed on purpose: gone from /proc, or
# named by the master's log.
gone=()
for pid in "${!seen[@]}"; do
	grep -qx "$pid" "$killed" && continue
	[ "$(harness_starttime "$pid")" = "${seen[$pid]}" ] || gone+=("$pid")
done
while read -r pid; do
	grep -qx "$pid" "$killed" || gone+=("$pid")
done < <(sed -n 's/.*worker \([0-9]*\) ended.*/\1/p' "$pool_log" | sort -u)
mapfile -t gone < <(printf '%s\n' "${gone[@]}" | sed '/^$/d' | sort -u)
harness_running pool-master || gone+=("master $master")

printf '\n| faults injected (%s) |' "$(grep -c ' begin ' "$faults")"
for kind in $all_kinds; do
	printf ' %s %s,' "$kind" "$(grep -c " begin [0-9]* $kind " "$faults")"
done
printf ' |\n| worker processes seen | %s, %s killed on purpose, %s ended otherwise |\n' \
	"${#seen[@]}" "$(wc -l <"$killed")" "${#gone[@]}"
printf '| Redis lock keys without a TTL | %s found in %s scans |\n' "$ttl_violations" "$ttl_scans"
printf '| pool log | %s warnings, %s lost leases |\n' \
	"$(grep -c ' warn ' "$pool_log")" "$(grep -c 'lost lease' "$pool_log")"
keep=${CHAOS_KEEP:-${TMPDIR:-/tmp}/payhook-chaos-$seed}
if mkdir -p "$keep" && cp "$HARNESS_DIR/history.tsv" "$faults" "$HARNESS_DIR/client.out" \
	"$pool_log" "$dispatch_log" "$keep/"; then
	printf '| kept | %s: history.tsv (every request), faults.log, client.out (this report), pool.log, dispatch.log |\n' "$keep"
fi
if [ "$reconcile" = 1 ] && cp -r "$recon_dir" "$keep/"; then
	printf '| kept | %s/reconcile: listed (the API'"'"'s payments), passes (each --once: times, exit, checked, missing, its line), webhooks, reconcile.log |\n' "$keep"
fi
if [ "$notify" = 1 ] && cp -r "$notify_dir" "$keep/"; then
	printf '| kept | %s/notify: objects (the API'"'"'s), notified (each notification: time, id, status, rows), api.log, fetchers.log, once.log |\n' "$keep"
fi
rc=0
if [ "${#gone[@]}" -gt 0 ]; then
	printf 'chaos: VIOLATION: worker(s) ended without being killed on purpose (seed %s): %s\n' "$seed" "${gone[*]}"
	grep -E "worker ($(IFS='|'; echo "${gone[*]}")) ended" "$pool_log"
	rc=1
fi
[ "$ttl_violations" = 0 ] || rc=1
[ "$dispatch_violations" = 0 ] || rc=1
[ "$recon_violations" = 0 ] || rc=1
[ "$notify_violations" = 0 ] || rc=1
[ "$client_rc" = 0 ] || rc=$((client_rc == 1 ? 1 : 99))
if [ "$rc" = 0 ]; then
	printf 'chaos: ok (seed %s, %s s)\n' "$seed" "$seconds"
else
	printf 'chaos: FAILED (seed %s): replay with CHAOS_SEED=%s CHAOS_SECONDS=%s make chaos; the history is in %s\n' \
		"$seed" "$seed" "$seconds" "$keep"
fi
exit "$rc"
