#!/bin/bash
# dispatch_bench.sh - payhook-dispatch's throughput: payments handed off per
# second with 1 and with 3 dispatchers, against tests/servers/http_target answering
# 200 at once, BENCH_ROUNDS rounds (3) of BENCH_PAYMENTS payments (10000)
# each, the two cases interleaved round by round so that machine drift
# cancels. Prints a markdown table with the median, and writes it to
# $BUILD_DIR/tests/perf/bench/dispatch-results.md. `make bench-dispatch` runs it;
# it is not part of make check.
#
#   BUILD_DIR=... SRC_DIR=... bash tests/perf/bench/dispatch_bench.sh
#
# Each run: an empty payments table, BENCH_PAYMENTS rows inserted as payhook
# records them (pending, due now), N dispatchers started (defaults but
# dispatch_poll_ms = 50; log_level info, one line per attempt to a file, as
# deployed), the clock stopped when every row is 'delivered' (looked at every
# 50 ms). Speed is reported, never judged: the exit status is 1 only when a
# run lost or duplicated a payment (rows delivered, requests the target saw
# and distinct Idempotency-Keys must all equal BENCH_PAYMENTS), 99 when the
# stack cannot start.
#
# Settings (environment): BENCH_PAYMENTS, BENCH_ROUNDS; BENCH_FLUSH=1 runs
# MariaDB with innodb_flush_log_at_trx_commit=1 (the harness starts it with
# 2); BENCH_BATCH sets dispatch_batch_size (default 10); HARNESS_KEEP=1 keeps
# the folder with every log.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${SRC_DIR:-$(dirname "$(dirname "$(dirname "$here")")")}
BUILD_DIR=${BUILD_DIR:-$PWD}

PAYMENTS=${BENCH_PAYMENTS:-10000}
ROUNDS=${BENCH_ROUNDS:-3}
BATCH=${BENCH_BATCH:-10}
CASES=(1 3)
DISPATCH=$BUILD_DIR/app/payhook-dispatch
TARGET=$BUILD_DIR/tests/servers/http_target
OUT=$BUILD_DIR/tests/perf/bench

for prog in "$DISPATCH" "$TARGET" "$BUILD_DIR/tools/freeport"; do
	if [ ! -x "$prog" ]; then
		echo "bench: $prog is not built (make bench-dispatch builds it)" >&2
		exit 99
	fi
done

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
bench_start mariadb || exit 99
if [ "${BENCH_FLUSH:-0}" = 1 ]; then
	harness_sql "SET GLOBAL innodb_flush_log_at_trx_commit = 1" || exit 99
fi
W=$HARNESS_DIR/bench
mkdir -p "$W" "$OUT"
echo 200 >"$W/control"
: >"$W/record"
"$TARGET" --control "$W/control" --record "$W/record" >"$W/port" 2>"$W/target.err" &
harness_record target "$!"
port=
for _ in $(seq 100); do
	read -r port 2>/dev/null <"$W/port" && break
	sleep 0.02
done
[ -n "$port" ] || { echo "bench: the target did not start" >&2; exit 99; }

export PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_DISPATCH_URL=http://127.0.0.1:$port/hook
export PAYHOOK_DISPATCH_POLL_MS=50 PAYHOOK_DISPATCH_BATCH_SIZE=$BATCH
export PAYHOOK_LOG_LEVEL=info
unset PAYHOOK_CONFIG PAYHOOK_DISPATCH_COMMAND PAYHOOK_DISPATCH_SECRET

delivered() {
	harness_sql "SELECT COUNT(*) FROM payments WHERE dispatch_state = 'delivered'"
}

# run N: one measurement with N dispatchers; prints payments per second.
run() {
	local n=$1 i t0 t1 pids=() rows seen keys
	harness_sql "TRUNCATE payments;
		INSERT INTO payments (provider, transaction_id, amount, currency,
		payload) SELECT 'standard', CONCAT('bench-', seq), seq, 'EUR',
		CONCAT('{\"transaction_id\":\"bench-', seq, '\",\"amount\":', seq,
		',\"currency\":\"EUR\"}') FROM seq_1_to_$PAYMENTS" || return 1
	: >"$W/record"
	t0=$(harness_now_ms)
	for ((i = 0; i < n; i++)); do
		"$DISPATCH" >>"$W/dispatch-$n.log" 2>&1 &
		pids+=("$!")
		harness_record "d-$i" "$!"
	done
	until [ "$(delivered)" = "$PAYMENTS" ]; do
		if [ $(($(harness_now_ms) - t0)) -gt 600000 ]; then
			echo "bench: $n dispatchers did not finish in 10 minutes" >&2
			break
		fi
		sleep 0.05
	done
	t1=$(harness_now_ms)
	for ((i = 0; i < n; i++)); do
		harness_stop "d-$i"
	done
	rows=$(delivered)
	seen=$(wc -l <"$W/record")
	keys=$(cut -f 4 "$W/record" | sort -u | wc -l)
	if [ "$rows" != "$PAYMENTS" ] || [ "$seen" != "$PAYMENTS" ] ||
		[ "$keys" != "$PAYMENTS" ]; then
		echo "bench: $n dispatchers: $rows delivered, $seen requests, $keys keys (want $PAYMENTS each)" >&2
		BROKEN=1
	fi
	echo $((PAYMENTS * 1000 / (t1 - t0 > 0 ? t1 - t0 : 1)))
}

BROKEN=0
declare -A results
for ((r = 1; r <= ROUNDS; r++)); do
	for n in "${CASES[@]}"; do
		rate=$(run "$n") || exit 99
		results[$n]="${results[$n]:-} $rate"
		echo "# round $r, $n dispatcher(s): $rate payments/s" >&2
	done
done

{
	echo "payhook-dispatch: payments handed off per second ($PAYMENTS payments per run, target answering 200 at once, dispatch_batch_size $BATCH, innodb_flush_log_at_trx_commit $([ "${BENCH_FLUSH:-0}" = 1 ] && echo 1 || echo 2), $(nproc) cores)"
	echo
	printf '| dispatchers |'
	for ((r = 1; r <= ROUNDS; r++)); do printf ' round %s |' "$r"; done
	echo ' median |'
	printf '| ---: |'
	for ((r = 1; r <= ROUNDS; r++)); do printf ' ---: |'; done
	echo ' ---: |'
	for n in "${CASES[@]}"; do
		# shellcheck disable=SC2086 # the rates are split on purpose
		set -- ${results[$n]}
		printf '| %s |' "$n"
		for rate in "$@"; do printf ' %s |' "$rate"; done
		printf ' **%s** |\n' "$(printf '%s\n' "$@" | median)"
	done
} | tee "$OUT/dispatch-results.md"
exit "$BROKEN"
