#!/bin/bash
# ha_bench.sh - `make bench-ha`: payhook on one MariaDB server against the
# same payhook on a 3-node MariaDB Galera cluster, in one run, side by side.
#
#   BUILD_DIR=... SRC_DIR=... bash tests/ha/ha_bench.sh [--optional]
#
# One stack on 127.0.0.1 (tests/lib/harness.sh): a single mariadbd, a Galera
# cluster galera1..3 (tests/ha/common.sh), one redis-server, and one lighttpd
# with a location per system, each a spawn-fcgi pool of HA_BENCH_POOL (8)
# payhook workers of the same build, signature_scheme none, log_level warn:
#   /single    mysql_host/mysql_port: the single server
#   /galera    mysql_nodes "node1 node2 node3": every worker writes to node 1,
#              each commit certified by the three nodes
#   /galera2w  two pools of half as many workers, one preferring node 1 and
#              one node 2, which lighttpd balances: writes on two nodes at
#              once (multi-primary), as two app hosts would send them
# The same wrk script as make bench (tests/perf/bench/new_id.lua: a new
# transaction id per request, so every request takes the whole path: lock,
# INSERT, COMMIT, release) runs HA_BENCH_SECONDS (8) at HA_BENCH_CONC (32)
# connections on each location in turn, HA_BENCH_ROUNDS (3) rounds, the
# order reversed every other round so that machine drift cancels. It prints
# one line per run and a table of the medians with the ratio of each
# Galera row to the single server, and writes them to
# $BUILD_DIR/tests/ha/bench-ha.tsv and bench-ha.md.
#
# All the nodes share this machine's cores (a real cluster has a machine per
# node and a network round trip per commit): the ratio is what certification
# and the group communication cost here, not a prediction for a LAN.
#
# Exit 1 when an answer lied (rows in payments differ from the 200s beyond
# the answers that never came or were 503), 99 when the stack cannot start;
# a missing galera-4 or rsync is exit 77, or 0 with a note under --optional
# (for a "make bench" that runs it when it can).

set -u
optional=0
[ "${1:-}" = --optional ] && optional=1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${SRC_DIR:-$(dirname "$(dirname "$here")")}
BUILD_DIR=${BUILD_DIR:-$PWD}

ROUNDS=${HA_BENCH_ROUNDS:-3}
SECS=${HA_BENCH_SECONDS:-8}
CONC=${HA_BENCH_CONC:-32}
POOL=${HA_BENCH_POOL:-8}
DRAIN_MS=500
OUT=$BUILD_DIR/tests/ha
BENCH_LUA=$SRC_DIR/tests/perf/bench

missing=
for tool in wrk lighttpd spawn-fcgi redis-server mariadbd mariadb rsync; do
	command -v "$tool" >/dev/null 2>&1 || missing+=" $tool"
done
[ -r "${HARNESS_GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}" ] ||
	missing+=" galera-4"
if [ -n "$missing" ]; then
	echo "bench-ha: not installed:$missing (sh packaging/install-deps.sh)" >&2
	[ "$optional" = 1 ] && exit 0
	exit 77
fi
for prog in "$BUILD_DIR/app/payhook" "$BUILD_DIR/tools/freeport"; do
	if [ ! -x "$prog" ]; then
		echo "bench-ha: $prog is not built (make bench-ha builds it)" >&2
		exit 99
	fi
done

# kv, status_count, median (and tests/lib/harness.sh).
# shellcheck source-path=SCRIPTDIR source=../perf/bench/lib.sh
. "$SRC_DIR/tests/perf/bench/lib.sh"
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$here/common.sh"

log() { printf '# bench-ha: %s\n' "$*" >&2; }

started=$(harness_now_ms)
ha_init || exit 99
export PAYHOOK_LOG_LEVEL=warn
harness_start_redis >/dev/null || exit 99
harness_start_mariadb >/dev/null || exit 99
ha_start_galera >/dev/null || exit 99
N1=${GALERA_NODE[1]} N2=${GALERA_NODE[2]} N3=${GALERA_NODE[3]}
W=$HARNESS_DIR/bench
mkdir -p "$W" "$OUT" || exit 99

# pool NAME [NAME=VALUE...]: spawn-fcgi -F POOL payhook workers on
# $W/NAME.sock, with these variables on top of the harness's PAYHOOK_*.
pool() {
	local name=$1 size=${POOL_SIZE:-$POOL}
	shift
	(
		[ "$#" = 0 ] || export "${@?}"
		harness_spawn_pool "$name" "$size" "$W/$name.sock" -- "$E2E_PAYHOOK" >/dev/null
	)
}
# The single server by mysql_host/port (the harness's PAYHOOK_MYSQL_*), the
# cluster by mysql_nodes.
pool single || exit 99
pool galera PAYHOOK_MYSQL_NODES="$N1 $N2 $N3" || exit 99
# Two app hosts of half the workers each: as many workers in all.
POOL_SIZE=$(((POOL + 1) / 2)) pool galera2a PAYHOOK_MYSQL_NODES="$N1 $N2 $N3" || exit 99
POOL_SIZE=$((POOL / 2)) pool galera2b PAYHOOK_MYSQL_NODES="$N2 $N3 $N1" || exit 99
{
	cat <<-EOF
	server.max-keep-alive-requests = 1000000
	server.max-keep-alive-idle = 60
	server.modules += ( "mod_fastcgi" )
	fastcgi.server += (
	  "/single" => (( "socket" => "$W/single.sock", "check-local" => "disable" )),
	  "/galera" => (( "socket" => "$W/galera.sock", "check-local" => "disable" )),
	  "/galera2w" => (
	    ( "socket" => "$W/galera2a.sock", "check-local" => "disable" ),
	    ( "socket" => "$W/galera2b.sock", "check-local" => "disable" ),
	  ),
	)
	EOF
} >"$W/lighttpd-bench.conf"
harness_start_lighttpd lighttpd "$W/lighttpd-bench.conf" >/dev/null || exit 99
BASE=http://127.0.0.1:$LIGHTTPD_PORT
for loc in single galera galera2w; do
	harness_wait_http "$BASE/$loc" 405 10 "$LIGHTTPD_PID" || exit 99
done
DB_VERSION=$(mariadbd --version | sed 's/.* Ver \([^ ]*\).*/\1/')
log "stack up in $(ha_seconds $(($(harness_now_ms) - started))) s: MariaDB $DB_VERSION, galera $N1 $N2 $N3, pools of $POOL, wrk -c$CONC ${SECS}s x $ROUNDS rounds"

TSV=$OUT/bench-ha.tsv
: >"$TSV"
FAILED=0

rows_of() {
	case $1 in
	single) harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE '$2-%'" ;;
	*) ha_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE '$2-%'" ;;
	esac
}

# run SYSTEM ROUND: one wrk run on /SYSTEM; one TSV row "SYSTEM ROUND RPS
# P50 P99 P999 REQUESTS ROWS STATUSES CHECK".
run() {
	local sys=$1 round=$2 tag line rows s200 s5xx unanswered check=ok stop
	tag=r$round-$sys
	stop=$(($(date +%s%3N) + SECS * 1000 - DRAIN_MS))
	timeout $((SECS + 60)) wrk -t2 -c"$CONC" -d"${SECS}s" --latency --timeout 10s \
		-s "$BENCH_LUA/new_id.lua" "$BASE/$sys" -- "$tag" "$stop" \
		>"$W/$tag.wrk" 2>&1
	line=$(grep '^wrk tag=' "$W/$tag.wrk")
	if [ -z "$line" ]; then
		tail -n 5 "$W/$tag.wrk" >&2
		log "CHECK FAILED: $tag: wrk printed no result line"
		FAILED=$((FAILED + 1))
		return 1
	fi
	rows=$(rows_of "$sys" "$tag")
	s200=$(status_count "$(kv "$line" statuses)" '2??')
	s5xx=$(status_count "$(kv "$line" statuses)" '5??')
	unanswered=$(kv "$line" unanswered)
	if [ "${rows:-0}" -lt "$s200" ] ||
		[ "${rows:-0}" -gt $((s200 + unanswered + s5xx)) ]; then
		check=FAIL
		FAILED=$((FAILED + 1))
		log "CHECK FAILED: $tag: $rows rows for $s200 answers 200 ($unanswered unanswered, $s5xx 5xx)"
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sys" "$round" \
		"$(kv "$line" rps)" "$(kv "$line" p50_ms)" "$(kv "$line" p99_ms)" \
		"$(kv "$line" p999_ms)" "$(kv "$line" requests)" "$rows" \
		"$(kv "$line" statuses)" "$check" >>"$TSV"
	log "$tag: rps=$(kv "$line" rps) p50=$(kv "$line" p50_ms) p99=$(kv "$line" p99_ms) statuses=$(kv "$line" statuses) rows=$rows $check"
}

# Warm-up, not recorded: connections, buffer pools, the cluster's gcache.
for sys in single galera galera2w; do
	SECS=2 run "$sys" 0 >/dev/null 2>&1
done
: >"$TSV"
SYSTEMS=(single galera galera2w)
for round in $(seq 1 "$ROUNDS"); do
	order=("${SYSTEMS[@]}")
	if [ $((round % 2)) = 0 ]; then
		order=(galera2w galera single)
	fi
	for sys in "${order[@]}"; do
		run "$sys" "$round"
	done
done

# The medians, and each row against the single server.
declare -A RPS P50 P99
for sys in "${SYSTEMS[@]}"; do
	RPS[$sys]=$(awk -F'\t' -v s="$sys" '$1 == s { print $3 }' "$TSV" | median)
	P50[$sys]=$(awk -F'\t' -v s="$sys" '$1 == s { print $4 }' "$TSV" | median)
	P99[$sys]=$(awk -F'\t' -v s="$sys" '$1 == s { print $5 }' "$TSV" | median)
done
{
	printf '| payhook on | req/s | p50 ms | p99 ms | vs single |\n'
	printf '| --- | ---: | ---: | ---: | ---: |\n'
	for sys in "${SYSTEMS[@]}"; do
		case $sys in
		single) what="one MariaDB server" ;;
		galera) what="3-node Galera, writes on node 1" ;;
		galera2w) what="3-node Galera, writes on nodes 1 and 2" ;;
		esac
		printf '| %s | %.0f | %s | %s | %s |\n' "$what" "${RPS[$sys]}" \
			"${P50[$sys]}" "${P99[$sys]}" \
			"$(awk -v a="${RPS[$sys]}" -v b="${RPS[single]}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
	done
	printf '\nMedians of %s rounds of %s s, wrk -c%s, pools of %s workers, all on one machine (%s cores): %s.\n' \
		"$ROUNDS" "$SECS" "$CONC" "$POOL" "$(nproc)" "$DB_VERSION"
} >"$OUT/bench-ha.md"
cat "$OUT/bench-ha.md"
log "$(ha_seconds $(($(harness_now_ms) - started))) s; figures in $TSV and $OUT/bench-ha.md"
if [ "$FAILED" -gt 0 ]; then
	log "$FAILED correctness check(s) failed"
	exit 1
fi
exit 0
