#!/bin/bash
# bench.sh - payhook's benchmark suite: `make bench` (full, about 12 minutes)
# and `make bench-quick` (about 2 minutes, concurrency 32 only).
#
#   BUILD_DIR=... SRC_DIR=... bash tests/perf/bench/bench.sh full|quick
#
# It starts the real stack on 127.0.0.1 with tests/lib/harness.sh (redis-server,
# mariadbd), lighttpd on a free loopback port and spawn-fcgi pools of 8
# workers behind it, one location each:
#   /webhook  payhook, signature_scheme none, log_level warn   (the main runs)
#   /info     payhook, the same with the default log_level info
#   /signed   payhook, signature_scheme standard
#   /floor    fcgi_floor, an empty FastCGI responder: HTTP + FastCGI alone
#   /php/     the PHP-FPM peer: tests/perf/bench/php/webhook.php, the same
#             lock-and-unique-key recipe in PHP 8.2 (phpredis pconnect,
#             mysqli persistent, prepared INSERT in autocommit, EVAL unlock),
#             php-fpm with a static pool of 8 (tests/perf/bench/php/php-fpm.conf)
# and measures, interleaved round by round so that machine drift cancels:
# payhook, raw_limit (the least backend work of payhook's design without
# HTTP: SET NX PX, one autocommitted INSERT, the release; 8 processes), the
# floor and the PHP-FPM peer at each concurrency; log_level info and signed
# requests against unsigned at 32; the same workers under the pool manager
# (payhook --workers 8, with its shared metrics) at 32; a duplicate storm (10
# ids) at 32; then a
# block with the other innodb_flush_log_at_trx_commit (1, or 2 under
# BENCH_FLUSH=1; SET GLOBAL, then back), payhook, raw_limit and PHP at 8 and
# 32 (32 in quick mode) interleaved for the same rounds; then payhook with Redis
# stopped (redis_unavailable = db_only) in one block; the memory of the
# payhook, floor and PHP-FPM pools (smaps_rollup); and instructions,
# allocations and system calls per request of one signed worker under
# callgrind, memcheck and strace -c (lib.sh's profile_run).
#
# It writes every figure to $BUILD_DIR/tests/perf/bench/measurements.tsv (one row
# per measurement, plus the run's settings, memory and failed checks: see
# tests/perf/bench/report.sh) and the callgrind profile to callgrind.out beside
# it; then tests/perf/bench/report.sh turns them into results.md (one markdown
# table, which it prints, and the profile) and latency.png (gnuplot), which
# "make bench-report" redoes without running anything. Speed is reported,
# never judged: the exit status is 1 only when an answer lied or work went
# missing (rows in payments differ from the 200s, the duplicate storm got a
# 5xx or did not end with exactly 10 rows, raw_limit or a profiled worker
# did not record every request), 2 on a usage error, 99 when the stack cannot
# start.
#
# raw_limit runs with --queue shared (one FIFO of clients for its 8
# processes, as spawn-fcgi's workers share one listening socket) and the
# same coordinated-omission correction as wrk (--window-ms). The PHP peer
# gets the same wrk script (new_id.lua) and the same check as payhook (every
# 200 has its row); its CPU per request is that of the php-fpm children.
#
# The PHP peer needs php-fpm 8.2 with mysqli, redis and OPcache, which the
# test suite does not: "make bench-deps" (tests/perf/bench/install-bench-deps.sh)
# installs them. Without them the bench stops at once with status 99 and
# says so; BENCH_PHP=0 runs it without the PHP peer (its rows and ratios are
# then "-").
#
# Settings (environment): BENCH_FLUSH=1 runs MariaDB with
# innodb_flush_log_at_trx_commit=1 (SET GLOBAL; the harness starts it with 2)
# and the other-flush block with 2; BENCH_ROUNDS and BENCH_SECONDS (whole
# seconds: wrk -d) override the mode's rounds and seconds per measurement;
# BENCH_PHP=0 leaves out the PHP peer; BENCH_PHP_FPM=PATH names the php-fpm
# binary (default php-fpm8.2, then php-fpm, on PATH or in /usr/sbin);
# HARNESS_KEEP=1 keeps the folder with every log.

set -u
mode=${1:-quick}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${SRC_DIR:-$(dirname "$(dirname "$(dirname "$here")")")}
BUILD_DIR=${BUILD_DIR:-$PWD}

# ALT_CONCS: the concurrencies of the other-flush block.
case $mode in
full)
	CONCS=(8 32 128) ALT_CONCS=(8 32) ROUNDS=3 SECS=8 DRAIN_MS=500 CG_N1=500 CG_N2=1500
	MC_N1=100 MC_N2=400 ;;
quick)
	CONCS=(32) ALT_CONCS=(32) ROUNDS=3 SECS=2 DRAIN_MS=400 CG_N1=100 CG_N2=300
	MC_N1=50 MC_N2=150 ;;
*)
	echo "usage: bench.sh full|quick" >&2
	exit 2 ;;
esac
ROUNDS=${BENCH_ROUNDS:-$ROUNDS}
SECS=${BENCH_SECONDS:-$SECS}
POOL=8                   # workers per spawn-fcgi pool = raw_limit --procs
SIDE_C=32                # concurrency of the info, signed and storm runs
SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
OUT=$BUILD_DIR/tests/perf/bench
BENCH_BIN=$BUILD_DIR/tests/perf/bench
E2E_PAYHOOK=$BUILD_DIR/app/payhook

for tool in wrk lighttpd spawn-fcgi valgrind callgrind_annotate strace redis-server mariadbd; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "bench: $tool is not installed (sh packaging/install-deps.sh)" >&2
		exit 99
	fi
done
for prog in "$E2E_PAYHOOK" "$BENCH_BIN/raw_limit" "$BENCH_BIN/fcgi_floor" \
	"$BENCH_BIN/sign_pool" "$BUILD_DIR/tools/freeport"; do
	if [ ! -x "$prog" ]; then
		echo "bench: $prog is not built (make bench builds it)" >&2
		exit 99
	fi
done

# The PHP-FPM peer: php-fpm 8.2 with mysqli, redis and OPcache.
PHP=${BENCH_PHP:-1}
PHP_FPM=
if [ "$PHP" != 0 ]; then
	PHP_FPM=${BENCH_PHP_FPM:-}
	for cand in php-fpm8.2 php-fpm /usr/sbin/php-fpm8.2 /usr/sbin/php-fpm; do
		[ -n "$PHP_FPM" ] && break
		PHP_FPM=$(command -v "$cand" 2>/dev/null)
	done
	php_modules=$("${PHP_FPM:-false}" -m 2>/dev/null)
	for m in mysqli redis 'Zend OPcache'; do
		if [ -z "$PHP_FPM" ] || ! grep -qixF "$m" <<<"$php_modules"; then
			{
				echo "bench: the PHP-FPM peer needs php-fpm 8.2 with mysqli, redis and OPcache"
				echo "bench: (${PHP_FPM:-no php-fpm found}${PHP_FPM:+: no $m})."
				echo "bench: install them with 'make bench-deps' (sh tests/perf/bench/install-bench-deps.sh, as root),"
				echo "bench: or run without the PHP peer: BENCH_PHP=0 make bench"
			} >&2
			exit 99
		fi
	done
fi

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

started_ms=$(harness_now_ms)
bench_start >/dev/null || exit 99
W=$HARNESS_DIR/bench
mkdir -p "$W" "$OUT" || exit 99
TSV=$OUT/measurements.tsv
# The last run's report stays until this run has its own.
: >"$TSV"
rm -f "$OUT/callgrind.out"
FAILURES=()

log() { printf '# bench: %s\n' "$*" >&2; }

# meta KEY VALUE: a setting of the run, for the report.
meta() {
	printf 'meta\t%s\t%s\n' "$1" "$2" >>"$TSV"
}
meta mode "$mode"
meta rounds "$ROUNDS"
meta seconds "$SECS"
meta drain_ms "$DRAIN_MS"
meta pool "$POOL"
meta side_c "$SIDE_C"
meta concs "${CONCS[*]}"
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta cpus "$(nproc)"
meta cpu_model "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
meta kernel "$(uname -r)"
meta redis_version "$(redis-server --version | cut -d' ' -f1-3)"
meta lighttpd_version "$(lighttpd -v 2>&1 | head -n 1 | cut -d' ' -f1)"
meta src_dir "$SRC_DIR"
meta cg_n1 "$CG_N1"
meta cg_n2 "$CG_N2"
meta mc_n1 "$MC_N1"
meta mc_n2 "$MC_N2"
meta alt_concs "${ALT_CONCS[*]}"
meta php "$PHP"
if [ "$PHP" != 0 ]; then
	meta php_version "$("$PHP_FPM" -v 2>/dev/null | head -n 1 | cut -d' ' -f1-2), phpredis $("$PHP_FPM" -i 2>/dev/null | sed -n 's/^Redis Version => //p' | head -n 1), mysqlnd $("$PHP_FPM" -i 2>/dev/null | sed -n 's/^Version => mysqlnd \([^ ]*\).*/\1/p' | head -n 1)"
fi

# ---- MariaDB settings ------------------------------------------------------

# The harness sizes InnoDB for tests (64M buffer pool, 16M redo log); a run
# writes some 100k rows, so both are raised at run time (dynamic in 10.11)
# to keep checkpoint stalls of a too-small redo log out of the figures.
flush=2
[ "${BENCH_FLUSH:-0}" = 1 ] && flush=1
# The other setting, measured in a block of its own.
alt_flush=$((3 - flush))
meta flush "$flush"
meta alt_flush "$alt_flush"
harness_sql "SET GLOBAL innodb_flush_log_at_trx_commit = $flush" || exit 99
harness_sql "SET GLOBAL innodb_buffer_pool_size = 268435456" ||
	log "could not resize the buffer pool; going on"
harness_sql "SET GLOBAL innodb_log_file_size = 268435456" ||
	log "could not resize the redo log; going on"
for _ in $(seq 1 100); do
	status=$(harness_sql "SHOW STATUS LIKE 'Innodb_buffer_pool_resize_status'" | cut -f2)
	case $status in *"Completed"* | "") break ;; esac
	sleep 0.1
done
DB_SETTINGS=$(harness_sql "SELECT CONCAT(VERSION(), ', innodb_flush_log_at_trx_commit=', @@innodb_flush_log_at_trx_commit, ', buffer pool ', @@innodb_buffer_pool_size DIV 1048576, 'M, redo log ', @@innodb_log_file_size DIV 1048576, 'M, doublewrite ', IF(@@innodb_doublewrite, 'on', 'off'))")
log "mariadb: $DB_SETTINGS"
meta db_settings "$DB_SETTINGS"

# ---- pools and lighttpd ----------------------------------------------------

# start_pool NAME PROGRAM [ARGS...]: spawn-fcgi -F $POOL (POOL_SIZE) on
# $W/NAME.sock, the workers' stderr appended to $HARNESS_DIR/NAME.log (as
# conf/spawn-fcgi.sh does), each PID recorded with the harness (stopped by PID
# at exit); sets POOL_PIDS.
start_pool() {
	local name=$1
	shift
	POOL_PIDS=()
	harness_spawn_pool "$name" "${POOL_SIZE:-$POOL}" "$W/$name.sock" -- "$@" ||
		return 1
	POOL_PIDS=("${HARNESS_POOL_PIDS[@]}")
}

# The workers get the harness's PAYHOOK_* (backend addresses) and these.
export PAYHOOK_REDIS_UNAVAILABLE=db_only
PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_LOG_LEVEL=warn \
	start_pool ph "$E2E_PAYHOOK" || exit 99
PH_PIDS=("${POOL_PIDS[@]}")
PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_LOG_LEVEL=info \
	start_pool info "$E2E_PAYHOOK" || exit 99
INFO_PIDS=("${POOL_PIDS[@]}")
PAYHOOK_SIGNATURE_SCHEME=standard PAYHOOK_LOG_LEVEL=warn \
	PAYHOOK_WEBHOOK_SECRET=$SECRET PAYHOOK_SIGNATURE_TOLERANCE_S=86400 \
	start_pool signed "$E2E_PAYHOOK" || exit 99
SIG_PIDS=("${POOL_PIDS[@]}")
start_pool floor "$BENCH_BIN/fcgi_floor" || exit 99
FLOOR_PIDS=("${POOL_PIDS[@]}")
# The same workers under payhook's pool manager (payhook --workers, spawned
# with -F 1 as conf/spawn-fcgi.sh does), counting every request in the
# pool's shared metrics: against ph, what the master and the metrics cost.
PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_LOG_LEVEL=warn POOL_SIZE=1 \
	start_pool mgr "$E2E_PAYHOOK" --workers "$POOL" || exit 99
MGR_MASTER=${POOL_PIDS[0]}
for _ in $(seq 1 100); do
	mapfile -t MGR_PIDS < <(harness_children "$MGR_MASTER")
	[ "${#MGR_PIDS[@]}" -ge "$POOL" ] && break
	sleep 0.05
done
[ "${#MGR_PIDS[@]}" -ge "$POOL" ] || { log "the pool manager runs ${#MGR_PIDS[@]} of $POOL workers"; exit 99; }

# The PHP-FPM peer: php-fpm in the foreground (-F) with the pool of
# tests/perf/bench/php/php-fpm.conf on $W/php.sock, as a background job of this
# script; the master recorded as php-fpm, its children as php-0...; sets
# PHP_PIDS (the children).
PHP_PIDS=()
start_php() {
	local conf=$W/php-fpm.conf user_line master deadline pid n=0
	local -a opts=()
	# As root php-fpm wants -R and a user for the pool; otherwise it runs
	# as whoever starts it.
	user_line="; runs as the user who starts it"
	if [ "$(id -u)" = 0 ]; then
		user_line="user = $(id -un)"
		opts=(-R)
	fi
	harness_fill "$here/php/php-fpm.conf" "$conf" DIR="$W" \
		SOCKET="$W/php.sock" CHILDREN="$POOL" USER_LINE="$user_line" ||
		return 1
	"$PHP_FPM" -F -y "$conf" -c "$here/php/php.ini" "${opts[@]}" \
		</dev/null >>"$HARNESS_DIR/php-fpm.out" 2>&1 &
	master=$!
	harness_record php-fpm "$master"
	deadline=$(($(harness_now_ms) + 10000))
	while mapfile -t PHP_PIDS < <(harness_children "$master")
		[ "${#PHP_PIDS[@]}" -lt "$POOL" ] || [ ! -S "$W/php.sock" ]; do
		if [ "$(harness_now_ms)" -ge "$deadline" ] || ! harness_running php-fpm; then
			harness_log_tail "$HARNESS_DIR/php-fpm.out"
			harness_log_tail "$W/php-fpm.log"
			log "php-fpm ($PHP_FPM) did not start ${POOL} children on $W/php.sock"
			return 1
		fi
		sleep 0.05
	done
	for pid in "${PHP_PIDS[@]}"; do
		harness_record "php-$n" "$pid"
		n=$((n + 1))
	done
}
if [ "$PHP" != 0 ]; then
	start_php || exit 99
fi

# One lighttpd, one location per pool (each as conf/lighttpd-spawn-fcgi.conf
# maps /webhook); cg1 and cg2 are the callgrind workers, started later.
# Client connections stay open for the whole run, as wrk expects.
location() {
	printf '\t"/%s" => (( "socket" => "%s", "check-local" => "disable" )),\n' "$1" "$W/$2.sock"
}
{
	cat <<-EOF
	server.max-keep-alive-requests = 1000000
	server.max-keep-alive-idle = 60
	server.modules += ( "mod_fastcgi" )
	fastcgi.server += (
	EOF
	location webhook ph
	location info info
	location mgr mgr
	location signed signed
	location floor floor
	location cg1 cg1
	location cg2 cg2
	# SCRIPT_FILENAME = docroot + /php/webhook.php, from the source tree.
	if [ "$PHP" != 0 ]; then
		printf '\t"/php/" => (( "socket" => "%s", "check-local" => "disable", "docroot" => "%s" )),\n' \
			"$W/php.sock" "$here"
	fi
	printf ')\n'
} >"$W/lighttpd-bench.conf"
harness_start_lighttpd lighttpd "$W/lighttpd-bench.conf" >/dev/null || exit 99
BASE=http://127.0.0.1:$LIGHTTPD_PORT
harness_wait_http "$BASE/webhook" 405 10 "$LIGHTTPD_PID" || exit 99
PHP_PATH=/php/webhook.php
if [ "$PHP" != 0 ]; then
	harness_wait_http "$BASE$PHP_PATH" 405 10 "$LIGHTTPD_PID" || {
		harness_log_tail "$W/php-fpm.log"
		harness_log_tail "$W/php-error.log"
		exit 99
	}
fi
log "stack up in $(($(harness_now_ms) - started_ms)) ms: lighttpd on $BASE, pools of $POOL"

# ---- measurements ----------------------------------------------------------

rows_of() {
	harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE '$1-%'"
}

# record KIND C ROUND RPS P50 P99 P999 NON2XX REQUESTS ROWS STATUSES CHECK
#        then CPU us/request, total and user, of: workers (13, 14),
#        lighttpd (15, 16), mariadbd (17, 18), redis (19, 20), client (21, 22)
record() {
	local IFS=$'\t'
	printf '%s\n' "$*" >>"$TSV"
}

fail_check() {
	FAILURES+=("$*")
	printf 'failure\t%s\n' "$*" >>"$TSV"
	log "CHECK FAILED: $*"
}

# measure_wrk KIND C ROUND PATH SCRIPT [EXTRA SCRIPT ARGS]: one wrk run of
# SECS seconds with a run tag of its own, then the rows it left.
measure_wrk() {
	local kind=$1 conc=$2 round=$3 path=$4 script=$5 tag line rows s200 s5xx
	local unanswered check stop
	shift 5
	tag=${TAG_OVERRIDE:-r$round-$kind-c$conc}
	case $kind in
	info) cpu_begin "${INFO_PIDS[@]}" ;;
	mgr) cpu_begin "$MGR_MASTER" "${MGR_PIDS[@]}" ;;
	sig) cpu_begin "${SIG_PIDS[@]}" ;;
	floor) cpu_begin "${FLOOR_PIDS[@]}" ;;
	php | phpalt | warmphp) cpu_begin "${PHP_PIDS[@]}" ;;
	*) cpu_begin "${PH_PIDS[@]}" ;;
	esac
	stop=$(($(date +%s%3N) + SECS * 1000 - DRAIN_MS))
	timeout $((SECS + 60)) wrk -t2 -c"$conc" -d"${SECS}s" --latency --timeout 10s \
		-s "$here/$script" "$BASE$path" -- "$tag" "$stop" "$@" \
		>"$W/$tag.wrk" 2>&1
	line=$(grep '^wrk tag=' "$W/$tag.wrk")
	cpu_end "$(kv "$line" requests)"
	if [ -z "$line" ]; then
		tail -n 5 "$W/$tag.wrk" >&2
		fail_check "$tag: wrk printed no result line"
		return 1
	fi
	rows=$(rows_of "$tag")
	s200=$(status_count "$(kv "$line" statuses)" '2??')
	s5xx=$(status_count "$(kv "$line" statuses)" '5??')
	unanswered=$(kv "$line" unanswered)
	check=ok
	case $kind in
	floor) check="-" ;;
	dup)
		if [ "$rows" != 10 ] || [ "$s5xx" != 0 ]; then
			check=FAIL
			fail_check "$tag: duplicate storm: $rows rows (want 10), $s5xx 5xx"
		fi ;;
	*)
		# Every 200 has its row; a row without a 200 only for an answer
		# that never arrived or a 503 (unknown commit outcome).
		if [ "$rows" -lt "$s200" ] ||
			[ "$rows" -gt $((s200 + unanswered + s5xx)) ]; then
			check=FAIL
			fail_check "$tag: $rows rows for $s200 answers 200 ($unanswered unanswered, $s5xx 5xx)"
		fi ;;
	esac
	if [ "$(kv "$line" exhausted)" != 0 ]; then
		check="$check,pool-exhausted"
		log "$tag: the signed pool ran out: size it up"
	fi
	record "$kind" "$conc" "$round" "$(kv "$line" rps)" "$(kv "$line" p50_ms)" \
		"$(kv "$line" p99_ms)" "$(kv "$line" p999_ms)" "$(kv "$line" non2xx)" \
		"$(kv "$line" requests)" "$rows" "$(kv "$line" statuses)" "$check" \
		"${CPU_US[@]}"
	log "$tag: rps=$(kv "$line" rps) p50=$(kv "$line" p50_ms) p99=$(kv "$line" p99_ms) statuses=$(kv "$line" statuses) rows=$rows $check"
}

# measure_raw C ROUND [KIND]: one raw_limit run, recorded as KIND (raw).
measure_raw() {
	local conc=$1 round=$2 kind=${3:-raw} line rows check=ok
	local tag=r$2-$kind-c$1
	cpu_begin
	# As long as wrk sends (its run less the drain), and the same run time
	# in the coordinated-omission correction as wrk's; one queue for all
	# processes, as spawn-fcgi's workers share one listening socket.
	line=$(timeout $((SECS + 60)) "$BENCH_BIN/raw_limit" --procs "$POOL" \
		--clients "$conc" --queue shared --id-prefix "$tag" \
		--seconds "$(awk -v s="$SECS" -v d="$DRAIN_MS" 'BEGIN { print s - d / 1000 }')" \
		--window-ms $((SECS * 1000)) 2>"$W/$tag.err")
	printf '%s\n' "$line" >"$W/$tag.out"
	cpu_end "$(kv "$line" requests)"
	# raw_limit's processes do the workers' part; there is no HTTP client.
	CPU_US=("${CPU_US[8]}" "${CPU_US[9]}" "${CPU_US[@]:2:6}" 0 0)
	rows=$(rows_of "$tag")
	if [ -z "$line" ] || [ "$(kv "$line" errors)" != 0 ] ||
		[ "$rows" != "$(kv "$line" ok)" ]; then
		check=FAIL
		fail_check "$tag: raw_limit: '${line:-no output}' with $rows rows; $(head -c 300 "$W/$tag.err")"
	fi
	record "$kind" "$conc" "$round" "$(kv "$line" rps)" "$(kv "$line" p50_ms)" \
		"$(kv "$line" p99_ms)" "$(kv "$line" p999_ms)" "$(kv "$line" errors)" \
		"$(kv "$line" requests)" "$rows" "ok:$(kv "$line" ok)" "$check" \
		"${CPU_US[@]}"
	log "$tag: rps=$(kv "$line" rps) p50=$(kv "$line" p50_ms) p99=$(kv "$line" p99_ms) (uncorrected $(kv "$line" p99u_ms)) rows=$rows $check"
}

# A pool of pre-signed requests big enough for the run: 1.5 x the best
# unsigned rate at SIDE_C so far, plus a margin.
measure_signed() {
	local round=$1 tag=r$1-sig-c$SIDE_C best n
	best=$(awk -F'\t' -v c="$SIDE_C" '$1 == "ph" && $2 == c && $4 > m { m = $4 } END { printf "%d\n", m }' "$TSV")
	n=$(((best > 0 ? best : 5000) * SECS * 3 / 2 + 2000))
	"$BENCH_BIN/sign_pool" --secret "$SECRET" --count "$n" --tag "$tag" \
		--out "$W/$tag.pool.lua" || { fail_check "$tag: sign_pool failed"; return 1; }
	TAG_OVERRIDE=$tag measure_wrk sig "$SIDE_C" "$round" /signed signed.lua \
		"$W/$tag.pool.lua" 2
	rm -f "$W/$tag.pool.lua"
}

# run_steps ROUND STEP...: the steps ("KIND C") in the order given, or
# reversed in even rounds, so that no system always runs first.
run_steps() {
	local round=$1 c i kind
	shift
	local -a steps=("$@")
	if [ $((round % 2)) = 0 ]; then
		local -a rev=()
		for ((i = ${#steps[@]} - 1; i >= 0; i--)); do rev+=("${steps[$i]}"); done
		steps=("${rev[@]}")
	fi
	for i in "${steps[@]}"; do
		read -r kind c <<<"$i"
		case $kind in
		ph | phalt) measure_wrk "$kind" "$c" "$round" /webhook new_id.lua ;;
		php | phpalt) measure_wrk "$kind" "$c" "$round" "$PHP_PATH" new_id.lua ;;
		raw | rawalt) measure_raw "$c" "$round" "$kind" ;;
		floor) measure_wrk floor "$c" "$round" /floor new_id.lua ;;
		info) measure_wrk info "$c" "$round" /info new_id.lua ;;
		mgr) measure_wrk mgr "$c" "$round" /mgr new_id.lua ;;
		sig) measure_signed "$round" ;;
		dup) measure_wrk dup "$c" "$round" /webhook dup_storm.lua ;;
		esac
	done
}

# One round of the main measurements.
run_round() {
	local round=$1 c
	local -a steps=()
	for c in "${CONCS[@]}"; do
		steps+=("ph $c" "raw $c" "floor $c")
		[ "$PHP" != 0 ] && steps+=("php $c")
		if [ "$c" = "$SIDE_C" ]; then
			steps+=("info $c" "mgr $c" "sig $c" "dup $c")
		fi
	done
	run_steps "$round" "${steps[@]}"
}

# Warm-up (not recorded): connections, caches, the buffer pool; the PHP
# children's persistent connections and OPcache.
# warm_once: one second of warm-up, under a tag of its own (the check of
# each run counts the rows of its tag).
WARM_N=0
warm_once() {
	WARM_N=$((WARM_N + 1))
	TAG_OVERRIDE=warm-$WARM_N SECS=1 measure_wrk warm "${CONCS[0]}" 0 /webhook new_id.lua
}
warm_once
bench_early_marks_wait warm_once
if [ "$PHP" != 0 ]; then
	TAG_OVERRIDE=warmphp SECS=1 measure_wrk warmphp "${CONCS[0]}" 0 "$PHP_PATH" new_id.lua
fi
for round in $(seq 1 "$ROUNDS"); do
	log "round $round of $ROUNDS"
	run_round "$round"
done

# The other innodb_flush_log_at_trx_commit, in one block: payhook (phalt),
# raw_limit (rawalt: the backend work's limit under that setting) and PHP
# (phpalt) interleaved for the same rounds, then the main setting again.
log "flush block: innodb_flush_log_at_trx_commit = $alt_flush"
if harness_sql "SET GLOBAL innodb_flush_log_at_trx_commit = $alt_flush"; then
	for round in $(seq 1 "$ROUNDS"); do
		steps=()
		for c in "${ALT_CONCS[@]}"; do
			steps+=("phalt $c" "rawalt $c")
			[ "$PHP" != 0 ] && steps+=("phpalt $c")
		done
		run_steps "$round" "${steps[@]}"
	done
	harness_sql "SET GLOBAL innodb_flush_log_at_trx_commit = $flush" || exit 99
	log "innodb_flush_log_at_trx_commit = $flush again"
else
	log "could not set innodb_flush_log_at_trx_commit = $alt_flush: no flush block"
fi

# Memory of the pools after their runs: PSS shares the libraries' pages
# among the workers, RSS counts them in every worker.
mem_of() {
	local pid rss=0 pss=0 priv=0 k v n=0
	for pid in "$@"; do
		[ -r "/proc/$pid/smaps_rollup" ] || continue
		while read -r k v _; do
			case $k in
			Rss:) rss=$((rss + v)) ;;
			Pss:) pss=$((pss + v)) ;;
			Private_Clean: | Private_Dirty:) priv=$((priv + v)) ;;
			esac
		done <"/proc/$pid/smaps_rollup"
		n=$((n + 1))
	done
	printf '%s %s %s %s\n' "$n" "$rss" "$pss" "$priv"
}
# mem POOL N RSS PSS PRIVATE (KiB, summed over the pool's N workers).
printf 'mem\tpayhook\t%s\n' "$(mem_of "${PH_PIDS[@]}" | tr ' ' '\t')" >>"$TSV"
printf 'mem\tfloor\t%s\n' "$(mem_of "${FLOOR_PIDS[@]}" | tr ' ' '\t')" >>"$TSV"
printf 'mem\tmgr\t%s\n' "$(mem_of "$MGR_MASTER" "${MGR_PIDS[@]}" | tr ' ' '\t')" >>"$TSV"
if [ "$PHP" != 0 ]; then
	printf 'mem\tphp\t%s\n' "$(mem_of "${PHP_PIDS[@]}" | tr ' ' '\t')" >>"$TSV"
	# Done with PHP. The master first: children stopped before it would
	# only be replaced.
	harness_stop php-fpm
	for i in "${!PHP_PIDS[@]}"; do harness_stop "php-$i"; done
fi

# Redis stopped, redis_unavailable = db_only: the unique key alone.
log "db_only block: redis stopped"
harness_stop_redis
for round in $(seq 1 "$ROUNDS"); do
	for c in "${CONCS[@]}"; do
		measure_wrk dbo "$c" "$round" /webhook new_id.lua
	done
done
harness_start_redis >/dev/null || exit 99
log "redis restarted"
# The early marks of the new Redis, before callgrind counts a request.
warm_once
bench_early_marks_wait warm_once

# ---- one worker's counts per request ----------------------------------------

# Instructions (callgrind), allocations (memcheck) and system calls (strace
# -c) of one signed payhook worker (lib.sh's profile_run at /cg1 and /cg2):
# per request, the difference of two runs over the difference of their
# requests, so that start-up and the first connections cancel.
log "callgrind: $CG_N1 then $CG_N2 signed requests"
profile_run cg1 callgrind "$CG_N1" "$E2E_PAYHOOK" "$BASE" "$W" ||
	fail_check "callgrind: $CG_N1 signed requests not all recorded"
CG_IR1=$PROFILE_COUNT
profile_run cg2 callgrind "$CG_N2" "$E2E_PAYHOOK" "$BASE" "$W" ||
	fail_check "callgrind: $CG_N2 signed requests not all recorded"
CG_IR2=$PROFILE_COUNT
meta cg_ir1 "$CG_IR1"
meta cg_ir2 "$CG_IR2"
# The raw profile, for the report's tables and callgrind_annotate by hand.
cp "$W/cg2.callgrind.$CG_N2.out" "$OUT/callgrind.out" 2>/dev/null ||
	log "no callgrind profile to keep"
log "memcheck and strace: $MC_N1 then $MC_N2 signed requests"
profile_per_request cg1 memcheck "$MC_N1" "$MC_N2" "$E2E_PAYHOOK" "$BASE" "$W" ||
	fail_check "memcheck: signed requests not all recorded"
meta allocs_per_request "$PROFILE_PER_REQUEST"
profile_per_request cg1 strace "$MC_N1" "$MC_N2" "$E2E_PAYHOOK" "$BASE" "$W" ||
	fail_check "strace: signed requests not all recorded"
meta syscalls_per_request "$PROFILE_PER_REQUEST"
meta syscalls_by_name "$(strace_per_call "$W/cg1.strace.$MC_N1.out" \
	"$W/cg1.strace.$MC_N2.out" "$MC_N1" "$MC_N2" 2>/dev/null)"
meta run_seconds "$((($(harness_now_ms) - started_ms) / 1000))"

# ---- the report ------------------------------------------------------------

bash "$here/report.sh" "$TSV" ||
	log "report.sh failed: measurements.tsv is there for make bench-report"
if [ "${#FAILURES[@]}" -gt 0 ]; then
	log "${#FAILURES[@]} correctness check(s) failed"
	exit 1
fi
exit 0
