#!/bin/bash
# bench.sh - payhook's benchmark suite: `make bench` (full, under 10 minutes)
# and `make bench-quick` (under 2 minutes, concurrency 32 only).
#
#   BUILD_DIR=... SRC_DIR=... bash tests/bench/bench.sh full|quick
#
# It starts the real stack on 127.0.0.1 with tests/harness.sh (redis-server,
# mariadbd), lighttpd on a free loopback port and spawn-fcgi pools of 8
# workers behind it, one location each:
#   /webhook  payhook, signature_scheme none, log_level warn   (the main runs)
#   /info     payhook, the same with the default log_level info
#   /signed   payhook, signature_scheme standard
#   /floor    fcgi_floor, an empty FastCGI responder: HTTP + FastCGI alone
# and measures, interleaved round by round so that machine drift cancels:
# payhook, raw_limit (payhook's backend work without HTTP, 8 processes) and
# the floor at each concurrency; log_level info and signed requests against
# unsigned at 32; a duplicate storm (10 ids) at 32; then payhook with Redis
# stopped (redis_unavailable = db_only) in one block; the workers' memory
# (smaps_rollup); and instructions per request of one worker under callgrind.
#
# It prints one markdown table and writes it, with the callgrind profile, to
# $BUILD_DIR/tests/bench/results.md, and draws $BUILD_DIR/tests/bench/latency.png
# (gnuplot). Speed is reported, never judged: the exit status is 1 only when
# an answer lied or work went missing (rows in payments differ from the 200s,
# the duplicate storm got a 5xx or did not end with exactly 10 rows,
# raw_limit or a callgrind worker did not record every request), 2 on a usage
# error, 99 when the stack cannot start.
#
# raw_limit runs with --queue shared (one FIFO of clients for its 8
# processes, as spawn-fcgi's workers share one listening socket) and the
# same coordinated-omission correction as wrk (--window-ms).
#
# Settings (environment): BENCH_FLUSH=1 runs MariaDB with
# innodb_flush_log_at_trx_commit=1 (SET GLOBAL; the harness starts it with 2);
# BENCH_ROUNDS and BENCH_SECONDS (whole seconds: wrk -d) override the mode's
# rounds and seconds per measurement; HARNESS_KEEP=1 keeps the folder with
# every log.

set -u
mode=${1:-quick}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${SRC_DIR:-$(dirname "$(dirname "$here")")}
BUILD_DIR=${BUILD_DIR:-$PWD}
top_srcdir=$SRC_DIR
top_builddir=$BUILD_DIR
export top_srcdir top_builddir

case $mode in
full)
	CONCS=(8 32 128) ROUNDS=3 SECS=8 DRAIN_MS=500 CG_N1=500 CG_N2=1500 ;;
quick)
	CONCS=(32) ROUNDS=3 SECS=2 DRAIN_MS=400 CG_N1=100 CG_N2=300 ;;
*)
	echo "usage: bench.sh full|quick" >&2
	exit 2 ;;
esac
ROUNDS=${BENCH_ROUNDS:-$ROUNDS}
SECS=${BENCH_SECONDS:-$SECS}
POOL=8                   # workers per spawn-fcgi pool = raw_limit --procs
SIDE_C=32                # concurrency of the info, signed and storm runs
SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
OUT=$BUILD_DIR/tests/bench
BENCH_BIN=$BUILD_DIR/tests/bench
PAYHOOK_BIN=$BUILD_DIR/app/payhook

for tool in wrk lighttpd spawn-fcgi valgrind callgrind_annotate redis-server mariadbd; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "bench: $tool is not installed (sh tests/install-deps.sh)" >&2
		exit 99
	fi
done
for prog in "$PAYHOOK_BIN" "$BENCH_BIN/raw_limit" "$BENCH_BIN/fcgi_floor" \
	"$BENCH_BIN/sign_pool" "$BUILD_DIR/tests/freeport"; do
	if [ ! -x "$prog" ]; then
		echo "bench: $prog is not built (make bench builds it)" >&2
		exit 99
	fi
done

# shellcheck source=../harness.sh
. "$SRC_DIR/tests/harness.sh"

started_ms=$(harness__now_ms)
harness_init || exit 99
harness_start_redis >/dev/null || exit 99
harness_start_mariadb >/dev/null || exit 99
W=$HARNESS_DIR/bench
mkdir -p "$W" "$OUT" "$HARNESS_DIR/www" "$HARNESS_DIR/upload" || exit 99
TSV=$OUT/measurements.tsv
: >"$TSV"
FAILURES=()

log() { printf '# bench: %s\n' "$*" >&2; }

# ---- MariaDB settings ------------------------------------------------------

# The harness sizes InnoDB for tests (64M buffer pool, 16M redo log); a run
# writes some 100k rows, so both are raised at run time (dynamic in 10.11)
# to keep checkpoint stalls of a too-small redo log out of the figures.
flush=2
[ "${BENCH_FLUSH:-0}" = 1 ] && flush=1
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

# ---- pools and lighttpd ----------------------------------------------------

# start_pool NAME PROGRAM [ARGS...]: spawn-fcgi -F $POOL on $W/NAME.sock, the
# workers' stderr appended to $W/NAME.log (as conf/spawn-fcgi.sh does), each
# PID recorded with the harness (stopped by PID at exit); sets POOL_PIDS.
start_pool() {
	local name=$1 pid n=0 rc
	shift
	POOL_PIDS=()
	# shellcheck disable=SC2016 # $0 and $@ are for the inner sh
	spawn-fcgi -s "$W/$name.sock" -F "${POOL_SIZE:-$POOL}" -P "$W/$name.pid" -- \
		/bin/sh -c 'exec "$0" "$@" 2>>"'"$W/$name.log"'"' "$@" \
		</dev/null >"$W/$name.out" 2>&1
	rc=$?
	while read -r pid; do
		POOL_PIDS+=("$pid")
		harness__record "$name-$n" "$pid"
		n=$((n + 1))
	done < <(sed -n 's/^spawn-fcgi: child spawned successfully: PID: \([0-9]*\)$/\1/p' "$W/$name.out")
	if [ "$rc" != 0 ] || [ "$n" != "${POOL_SIZE:-$POOL}" ]; then
		harness__log_tail "$W/$name.out"
		harness__log_tail "$W/$name.log"
		log "spawn-fcgi started $n workers of pool $name (status $rc)"
		return 1
	fi
}

# The workers get the harness's PAYHOOK_* (backend addresses) and these.
export PAYHOOK_REDIS_UNAVAILABLE=db_only
PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_LOG_LEVEL=warn \
	start_pool ph "$PAYHOOK_BIN" || exit 99
PH_PIDS=("${POOL_PIDS[@]}")
PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_LOG_LEVEL=info \
	start_pool info "$PAYHOOK_BIN" || exit 99
INFO_PIDS=("${POOL_PIDS[@]}")
PAYHOOK_SIGNATURE_SCHEME=standard PAYHOOK_LOG_LEVEL=warn \
	PAYHOOK_WEBHOOK_SECRET=$SECRET PAYHOOK_SIGNATURE_TOLERANCE_S=86400 \
	start_pool signed "$PAYHOOK_BIN" || exit 99
SIG_PIDS=("${POOL_PIDS[@]}")
start_pool floor "$BENCH_BIN/fcgi_floor" || exit 99
FLOOR_PIDS=("${POOL_PIDS[@]}")

# One lighttpd, one location per pool (each as conf/lighttpd-spawn-fcgi.conf
# maps /webhook); cg1 and cg2 are the callgrind workers, started later.
# Client connections stay open for the whole run, as wrk expects.
PORT=$("$BUILD_DIR/tests/freeport") || exit 99
location() {
	printf '\t"/%s" => (( "socket" => "%s", "check-local" => "disable" )),\n' "$1" "$W/$2.sock"
}
{
	cat <<-EOF
	server.document-root = "$HARNESS_DIR/www"
	server.bind = "127.0.0.1"
	server.port = $PORT
	server.errorlog = "$W/lighttpd-error.log"
	server.upload-dirs = ( "$HARNESS_DIR/upload" )
	server.max-keep-alive-requests = 1000000
	server.max-keep-alive-idle = 60
	server.modules += ( "mod_fastcgi" )
	fastcgi.server += (
	EOF
	location webhook ph
	location info info
	location signed signed
	location floor floor
	location cg1 cg1
	location cg2 cg2
	printf ')\n'
} >"$W/lighttpd.conf"
lighttpd -D -f "$W/lighttpd.conf" </dev/null >>"$W/lighttpd.out" 2>&1 &
LIGHTTPD_PID=$!
harness__record lighttpd "$LIGHTTPD_PID"
BASE=http://127.0.0.1:$PORT
deadline=$(($(harness__now_ms) + 10000))
until [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$BASE/webhook")" = 405 ]; do
	if [ "$(harness__now_ms)" -ge "$deadline" ]; then
		harness__log_tail "$W/lighttpd-error.log"
		log "lighttpd did not come up on $BASE"
		exit 99
	fi
	sleep 0.1
done
log "stack up in $(($(harness__now_ms) - started_ms)) ms: lighttpd on $BASE, pools of $POOL"

# ---- measurements ----------------------------------------------------------

# kv LINE KEY: the value of KEY=... in a result line.
kv() {
	local w
	for w in $1; do
		case $w in "$2="*) printf '%s\n' "${w#*=}"; return 0 ;; esac
	done
	printf '\n'
}

rows_of() {
	harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE '$1-%'"
}

# status_count STATUSES CODE-PATTERN: the sum of the counts whose status
# matches the glob, from "200:N,409:M".
status_count() {
	local sum=0 pair
	local IFS=,
	for pair in $1; do
		# shellcheck disable=SC2254 # the pattern is a glob on purpose
		case ${pair%%:*} in $2) sum=$((sum + ${pair#*:})) ;; esac
	done
	printf '%s\n' "$sum"
}

# ---- CPU per request, by process group -------------------------------------

TICK_US=$((1000000 / $(getconf CLK_TCK)))

# ticks PID...: "TOTAL USER", the user + system and the user CPU time the
# live processes used so far, in clock ticks.
ticks() {
	local pid stat sum=0 user=0
	local -a f
	for pid in "$@"; do
		read -r stat 2>/dev/null <"/proc/$pid/stat" || continue
		read -r -a f <<<"${stat##*) }"
		sum=$((sum + f[11] + f[12]))
		user=$((user + f[11]))
	done
	printf '%s %s\n' "$sum" "$user"
}

# child_ticks: the same for this script's finished children (wrk, raw_limit).
child_ticks() {
	local stat
	local -a f
	read -r stat <"/proc/$$/stat"
	read -r -a f <<<"${stat##*) }"
	printf '%s %s\n' "$((f[13] + f[14]))" "${f[13]}"
}

# Prints the PID of harness server $1 while it runs (start time checked).
server_pid() {
	harness__running "$1" && printf '%s\n' "$harness__pid"
}

# cpu_begin PID...: a snapshot of the workers given, lighttpd, mariadbd,
# redis-server and the load generator; cpu_end REQUESTS sets CPU_US to the
# microseconds of CPU per request of each of the five (total, user).
cpu_snapshot() {
	# shellcheck disable=SC2046 # no PID: no argument
	printf '%s %s %s %s %s\n' "$(ticks "$@")" "$(ticks "$LIGHTTPD_PID")" \
		"$(ticks $(server_pid mariadb))" "$(ticks $(server_pid redis))" \
		"$(child_ticks)"
}
cpu_begin() {
	CPU_PIDS=("$@")
	read -r -a CPU_T0 < <(cpu_snapshot "$@")
}
cpu_end() {
	local n=$1 i
	local -a t1
	read -r -a t1 < <(cpu_snapshot "${CPU_PIDS[@]}")
	CPU_US=()
	for i in 0 1 2 3 4 5 6 7 8 9; do
		CPU_US+=("$(((t1[i] - CPU_T0[i]) * TICK_US / (n > 0 ? n : 1)))")
	done
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
	sig) cpu_begin "${SIG_PIDS[@]}" ;;
	floor) cpu_begin "${FLOOR_PIDS[@]}" ;;
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

measure_raw() {
	local conc=$1 round=$2 tag=r$2-raw-c$1 line rows check=ok
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
	record raw "$conc" "$round" "$(kv "$line" rps)" "$(kv "$line" p50_ms)" \
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

# One round, in the order given; rounds alternate direction so that no
# system always runs first.
run_round() {
	local round=$1 c i kind
	local -a steps=()
	for c in "${CONCS[@]}"; do
		steps+=("ph $c" "raw $c" "floor $c")
		if [ "$c" = "$SIDE_C" ]; then
			steps+=("info $c" "sig $c" "dup $c")
		fi
	done
	if [ $((round % 2)) = 0 ]; then
		local -a rev=()
		for ((i = ${#steps[@]} - 1; i >= 0; i--)); do rev+=("${steps[$i]}"); done
		steps=("${rev[@]}")
	fi
	for i in "${steps[@]}"; do
		read -r kind c <<<"$i"
		case $kind in
		ph) measure_wrk ph "$c" "$round" /webhook new_id.lua ;;
		raw) measure_raw "$c" "$round" ;;
		floor) measure_wrk floor "$c" "$round" /floor new_id.lua ;;
		info) measure_wrk info "$c" "$round" /info new_id.lua ;;
		sig) measure_signed "$round" ;;
		dup) measure_wrk dup "$c" "$round" /webhook dup_storm.lua ;;
		esac
	done
}

# Warm-up (not recorded): connections, caches, the buffer pool.
TAG_OVERRIDE=warm SECS=1 measure_wrk warm "${CONCS[0]}" 0 /webhook new_id.lua
for round in $(seq 1 "$ROUNDS"); do
	log "round $round of $ROUNDS"
	run_round "$round"
done

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
read -r MEM_PH_N MEM_PH_RSS MEM_PH_PSS MEM_PH_PRIV < <(mem_of "${PH_PIDS[@]}")
read -r MEM_FL_N MEM_FL_RSS MEM_FL_PSS MEM_FL_PRIV < <(mem_of "${FLOOR_PIDS[@]}")

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

# ---- callgrind: instructions per request in one worker ---------------------

# cg_run NAME N: one signed payhook worker under callgrind serving exactly N
# requests (--max-requests), driven by one wrk connection; sets CG_IR to the
# instructions it ran (empty when that failed).
cg_run() {
	local name=$1 n=$2 tag=cg-$1 wrk_pid deadline ir
	CG_IR=
	"$BENCH_BIN/sign_pool" --secret "$SECRET" --count "$n" --tag "$tag" \
		--out "$W/$tag.pool.lua" || return 1
	PAYHOOK_SIGNATURE_SCHEME=standard PAYHOOK_LOG_LEVEL=warn \
		PAYHOOK_WEBHOOK_SECRET=$SECRET PAYHOOK_SIGNATURE_TOLERANCE_S=86400 \
		POOL_SIZE=1 start_pool "$name" valgrind --tool=callgrind \
		--callgrind-out-file="$W/callgrind.$name.out" \
		"$PAYHOOK_BIN" --max-requests "$n" || return 1
	local worker=${POOL_PIDS[0]}
	timeout 600 wrk -t1 -c1 -d590s --timeout 60s -s "$here/signed.lua" \
		"$BASE/$name" -- "$tag" 99999999999999 "$W/$tag.pool.lua" 1 \
		>"$W/$tag.wrk" 2>&1 &
	wrk_pid=$!
	harness__record "$name-wrk" "$wrk_pid"
	deadline=$(($(harness__now_ms) + 240000))
	while harness__running "$name-0"; do
		if [ "$(harness__now_ms)" -ge "$deadline" ]; then
			log "callgrind worker $worker did not finish $n requests"
			break
		fi
		sleep 0.2
	done
	harness__stop "$name-wrk" "$name-0"
	wait "$wrk_pid" 2>/dev/null
	rm -f "$W/$tag.pool.lua"
	if [ "$(rows_of "$tag")" != "$n" ]; then
		fail_check "callgrind $name: $(rows_of "$tag") rows for $n signed requests"
	fi
	ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$W/callgrind.$name.out" 2>/dev/null)
	if [ -z "$ir" ]; then
		ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$W/callgrind.$name.out" 2>/dev/null)
	fi
	CG_IR=$ir
}
log "callgrind: $CG_N1 then $CG_N2 signed requests"
cg_run cg1 "$CG_N1"
CG_IR1=$CG_IR
cg_run cg2 "$CG_N2"
CG_IR2=$CG_IR
CG_PER_REQ=-
if [ -n "$CG_IR1" ] && [ -n "$CG_IR2" ]; then
	CG_PER_REQ=$(((CG_IR2 - CG_IR1) / (CG_N2 - CG_N1)))
fi
# Top 15 by exclusive and inclusive cost, from callgrind_annotate.
cg_top() {
	callgrind_annotate --auto=no "$@" "$W/callgrind.cg2.out" 2>/dev/null |
		awk '/^-+$/ { sep++; next }
			sep >= 3 && $1 ~ /^[0-9,]+$/ && !/PROGRAM TOTALS/ { print; if (++n == 15) exit }'
}
CG_EXCL=$(cg_top --inclusive=no)
CG_INCL=$(cg_top --inclusive=yes)
# payhook's own functions, inclusive, as instructions per request (Ir / N2;
# what runs once, such as pipeline_new, is spread over the N2 requests).
CG_OWN=$(callgrind_annotate --auto=no --inclusive=yes "$W/callgrind.cg2.out" 2>/dev/null |
	awk -v src="$SRC_DIR/" -v n="$CG_N2" '$1 ~ /^[0-9,]+$/ && index($0, src) {
		ir = $1; gsub(/,/, "", ir); f = $0; sub(/^.*\)  /, "", f); sub(/ \[.*$/, "", f)
		sub(src, "", f); printf "%9d  %s\n", ir / n, f }' | head -n 25)
cp "$W/callgrind.cg2.out" "$OUT/callgrind.out" 2>/dev/null

# ---- the table -------------------------------------------------------------

# stat KIND C COLUMN: "median min max" over the rounds (- when none).
stat() {
	awk -F'\t' -v k="$1" -v c="$2" -v col="$3" '$1 == k && $2 == c && $col != "" { print $col }' "$TSV" |
		sort -g | awk '{ a[NR] = $1 } END {
			if (NR == 0) { print "- - -"; exit }
			m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			print m, a[1], a[NR] }'
}

# ratio KIND_A KIND_B C_A C_B COLUMN: per-round A/B, "median min max".
ratio() {
	awk -F'\t' -v ka="$1" -v kb="$2" -v ca="$3" -v cb="$4" -v col="$5" '
		$1 == ka && $2 == ca { a[$3] = $col }
		$1 == kb && $2 == cb { b[$3] = $col }
		END { for (r in a) if ((r in b) && b[r] > 0) print a[r] / b[r] }' "$TSV" |
		sort -g | awk '{ a[NR] = $1 } END {
			if (NR == 0) { print "- - -"; exit }
			m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			print m, a[1], a[NR] }'
}

# ceiling_ratio C: per round, payhook's req/s over the ceiling of the raw
# backend work and the HTTP + FastCGI floor done one after the other on the
# same cores, 1 / (1 / raw + 1 / floor): "median min max". On a machine where
# the web server shares the CPU with the workers and the backends, this is the
# most any FastCGI receiver doing payhook's backend work could reach.
ceiling_ratio() {
	awk -F'\t' -v c="$1" '
		$2 == c && $1 == "ph" { a[$3] = $4 }
		$2 == c && $1 == "raw" { b[$3] = $4 }
		$2 == c && $1 == "floor" { f[$3] = $4 }
		END { for (r in a) if ((r in b) && (r in f) && b[r] > 0 && f[r] > 0)
			print a[r] * (1 / b[r] + 1 / f[r]) }' "$TSV" |
		sort -g | awk '{ a[NR] = $1 } END {
			if (NR == 0) { print "- - -"; exit }
			m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			print m, a[1], a[NR] }'
}

# cell FORMAT "MEDIAN MIN MAX": "median (min–max)", numbers in FORMAT.
# shellcheck disable=SC2059 # the format is the caller's, one of ours
cell() {
	local m lo hi
	read -r m lo hi <<<"$2"
	if [ "$m" = - ]; then
		printf -- '-'
	elif [ "$ROUNDS" = 1 ]; then
		printf -- "$1" "$m"
	else
		printf -- "$1 ($1–$1)" "$m" "$lo" "$hi"
	fi
}

sum_col() {
	awk -F'\t' -v k="$1" -v c="$2" -v col="$3" '$1 == k && $2 == c { s += $col } END { print s + 0 }' "$TSV"
}

# checks_of KIND C: each distinct check result with its count, e.g. "ok 3/3",
# then the rows and the answers 200 (raw_limit: successes) summed.
checks_of() {
	awk -F'\t' -v k="$1" -v c="$2" '$1 == k && $2 == c {
			n++; if (!($12 in s)) o[++m] = $12; s[$12]++; rows += $10
			np = split($11, p, ",")
			for (i = 1; i <= np; i++) { split(p[i], q, ":"); if (q[1] ~ /^(2..|ok)$/) good += q[2] }
		}
		END { if (n == 0) { print "-"; exit }
			for (i = 1; i <= m; i++) printf "%s%s %d/%d", (i > 1 ? ", " : ""), o[i], s[o[i]], n
			printf "; rows %d, %s %d\n", rows, (k == "raw" ? "ok" : "200s"), good }' "$TSV"
}

# cpu_cell KIND C: medians of the CPU columns, "w (user u) + l + m + r + c =
# total".
cpu_cell() {
	local col m user sum=0
	local -a parts=()
	for col in 13 15 17 19 21; do
		read -r m _ _ <<<"$(stat "$1" "$2" "$col")"
		[ "$m" = - ] && { printf -- '-'; return; }
		m=$(printf '%.0f' "$m")
		parts+=("$m")
		sum=$((sum + m))
	done
	read -r user _ _ <<<"$(stat "$1" "$2" 14)"
	printf '%s (user %.0f) + %s + %s + %s + %s = %s' "${parts[0]}" "$user" \
		"${parts[@]:1}" "$sum"
}

row() {
	local label=$1 kind=$2 c=$3 check=$4
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$c" \
		"$(cell %.0f "$(stat "$kind" "$c" 4)")" "$(cell %.2f "$(stat "$kind" "$c" 5)")" \
		"$(cell %.2f "$(stat "$kind" "$c" 6)")" "$(cell %.2f "$(stat "$kind" "$c" 7)")" \
		"$(sum_col "$kind" "$c" 8)" "$(cpu_cell "$kind" "$c")" "$check"
}

ratio_row() {
	local label=$1 a=$2 b=$3 ca=$4 cb=$5
	printf '| %s | %s | %s× | | %s× | | | | per-round ratio, median (min–max) |\n' "$label" "$ca" \
		"$(cell %.2f "$(ratio "$a" "$b" "$ca" "$cb" 4)")" "$(cell %.2f "$(ratio "$a" "$b" "$ca" "$cb" 6)")"
}

# mem_row NAME N RSS PSS PRIVATE (KiB, summed over the pool).
mem_row() {
	local n=$(($2 > 0 ? $2 : 1))
	printf '| memory, %s pool (%s workers, after the runs) | | | | | | | | PSS %d KiB total, %d per worker; RSS %d KiB total, %d per worker; private %d KiB total |\n' \
		"$1" "$2" "$4" "$(($4 / n))" "$3" "$(($3 / n))" "$5"
}

statuses_of() {
	awk -F'\t' -v k="$1" -v c="$2" '$1 == k && $2 == c { n = split($11, p, ","); for (i = 1; i <= n; i++) { split(p[i], q, ":"); s[q[1]] += q[2] } }
		END { for (k2 in s) printf "%s%s: %d", (o++ ? ", " : ""), k2, s[k2]; print "" }' "$TSV"
}

total_s=$((($(harness__now_ms) - started_ms) / 1000))
{
	printf '## payhook benchmark (%s)\n\n' "$mode"
	printf -- '- %s, %s CPUs (%s), %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)" \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" "$(uname -r)"
	printf -- '- MariaDB %s; %s; lighttpd %s; wrk -t2 --timeout 10s\n' "$DB_SETTINGS" \
		"$(redis-server --version | cut -d' ' -f1-3)" "$(lighttpd -v 2>&1 | head -n 1 | cut -d' ' -f1)"
	printf -- '- %s rounds, interleaved (alternating order), %s s per measurement (the last %s ms a drain: no new request, so every answer arrives), pools of %s workers, raw_limit --procs %s\n' \
		"$ROUNDS" "$SECS" "$DRAIN_MS" "$POOL" "$POOL"
	printf -- '- cells: median (min–max) over the rounds; latencies in ms as wrk reports them (corrected for coordinated omission; raw_limit applies the same correction)\n'
	printf -- '- CPU: user + system time per request of each process group during the run (/proc/PID/stat; for raw_limit its processes count as the workers)\n'
	printf -- '- check: rows in payments for the run tag vs answers 200 (equal unless an answer never arrived); storm: 10 rows and no 5xx\n\n'
	printf '| measurement | C | req/s | p50 ms | p99 ms | p99.9 ms | non-2xx | CPU µs/request: workers (user) + lighttpd + mariadbd + redis + client | check |\n'
	printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
	for c in "${CONCS[@]}"; do
		row "payhook (signature none, log warn)" ph "$c" "$(checks_of ph "$c")"
		row "raw_limit (backend work only, 8 procs, shared queue)" raw "$c" "$(checks_of raw "$c")"
		row "floor (fcgi_floor: HTTP + FastCGI only)" floor "$c" "-"
	done
	row "payhook, log_level info" info "$SIDE_C" "$(checks_of info "$SIDE_C")"
	row "payhook, signed (standard)" sig "$SIDE_C" "$(checks_of sig "$SIDE_C")"
	for c in "${CONCS[@]}"; do
		row "payhook, Redis stopped (db_only)" dbo "$c" "$(checks_of dbo "$c")"
	done
	row "duplicate storm (10 ids)" dup "$SIDE_C" \
		"$(checks_of dup "$SIDE_C"); rows per round $(awk -F'\t' '$1 == "dup" { printf "%s%s", (n++ ? "/" : ""), $10 }' "$TSV"); answers $(statuses_of dup "$SIDE_C")"
	for c in "${CONCS[@]}"; do
		ratio_row "payhook / raw_limit" ph raw "$c" "$c"
	done
	for c in "${CONCS[@]}"; do
		ratio_row "payhook / floor" ph floor "$c" "$c"
	done
	for c in "${CONCS[@]}"; do
		printf '| payhook / ceiling 1/(1/raw + 1/floor) | %s | %s× | | | | | | the backend work and HTTP + FastCGI sharing the same cores |\n' \
			"$c" "$(cell %.2f "$(ceiling_ratio "$c")")"
	done
	ratio_row "log info / log warn" info ph "$SIDE_C" "$SIDE_C"
	ratio_row "signed / unsigned" sig ph "$SIDE_C" "$SIDE_C"
	for c in "${CONCS[@]}"; do
		ratio_row "db_only, Redis stopped / with Redis" dbo ph "$c" "$c"
	done
	mem_row payhook "$MEM_PH_N" "$MEM_PH_RSS" "$MEM_PH_PSS" "$MEM_PH_PRIV"
	mem_row floor "$MEM_FL_N" "$MEM_FL_RSS" "$MEM_FL_PSS" "$MEM_FL_PRIV"
	printf '| callgrind, one signed worker | 1 | | | | | | | %s instructions/request = (%s − %s) / (%s − %s) |\n' \
		"$CG_PER_REQ" "${CG_IR2:-?}" "${CG_IR1:-?}" "$CG_N2" "$CG_N1"
	printf '\nrun time %d s; raw measurements: %s\n' "$total_s" "$TSV"
	# shellcheck disable=SC2016 # markdown code fences, not expansions
	printf '\n### callgrind: top 15 by exclusive cost (%s signed requests, %s)\n\n```\n%s\n```\n' \
		"$CG_N2" "callgrind_annotate $OUT/callgrind.out" "$CG_EXCL"
	# shellcheck disable=SC2016 # markdown code fences, not expansions
	printf '\n### callgrind: top 15 by inclusive cost\n\n```\n%s\n```\n' "$CG_INCL"
	# shellcheck disable=SC2016 # markdown code fences, not expansions
	printf '\n### callgrind: payhook functions, inclusive instructions per request (Ir / %s)\n\n```\n%s\n```\n' \
		"$CG_N2" "$CG_OWN"
	if [ "${#FAILURES[@]}" -gt 0 ]; then
		printf '\n### correctness checks that FAILED\n\n'
		printf -- '- %s\n' "${FAILURES[@]}"
	fi
} >"$OUT/results.md"
cat "$OUT/results.md"

# ---- the plot --------------------------------------------------------------

if command -v gnuplot >/dev/null 2>&1; then
	for c in "${CONCS[@]}"; do
		printf '%s' "$c"
		for k in ph raw floor; do
			for col in 5 6; do
				read -r m _ _ < <(stat "$k" "$c" "$col")
				printf ' %s' "$m"
			done
		done
		printf '\n'
	done >"$W/latency.dat"
	gnuplot <<-EOF 2>"$W/gnuplot.err" || log "gnuplot failed: $(cat "$W/gnuplot.err")"
	set terminal pngcairo size 900,600 noenhanced
	set output "$OUT/latency.png"
	set title "payhook latency vs concurrency ($mode, median of $ROUNDS rounds)"
	set xlabel "concurrency (connections / logical clients)"
	set ylabel "latency (ms, log scale)"
	set logscale y
	set logscale x 2
	set xrange [${CONCS[0]} * 0.7:${CONCS[-1]} * 1.4]
	set xtics ($(IFS=,; printf '%s' "${CONCS[*]}"))
	set key top left
	set grid
	plot "$W/latency.dat" using 1:2 with linespoints lw 2 lc rgb "#d62728" title "payhook p50", \
	     "" using 1:3 with linespoints lw 2 dt 2 lc rgb "#d62728" title "payhook p99", \
	     "" using 1:4 with linespoints lw 2 lc rgb "#1f77b4" title "raw_limit p50", \
	     "" using 1:5 with linespoints lw 2 dt 2 lc rgb "#1f77b4" title "raw_limit p99", \
	     "" using 1:6 with linespoints lw 2 lc rgb "#2ca02c" title "floor p50", \
	     "" using 1:7 with linespoints lw 2 dt 2 lc rgb "#2ca02c" title "floor p99"
	EOF
	[ -s "$OUT/latency.png" ] && log "plot: $OUT/latency.png"
else
	log "gnuplot not installed: no plot"
fi

log "results: $OUT/results.md ($total_s s)"
if [ "${#FAILURES[@]}" -gt 0 ]; then
	log "${#FAILURES[@]} correctness check(s) failed"
	exit 1
fi
exit 0
