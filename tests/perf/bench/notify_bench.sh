#!/bin/bash
# notify_bench.sh - what queueing a notification of a provider that only
# notifies costs next to recording a payment, and how long a notification
# waits for its row with the fetcher running, in one run on one stack
# (`make bench` runs it; `make bench-notify` alone). Speed is reported,
# never judged.
#
#   BUILD_DIR=... SRC_DIR=... bash tests/perf/bench/notify_bench.sh
#
# It starts the real stack on 127.0.0.1 (tests/lib/harness.sh: redis-server,
# mariadbd with innodb_flush_log_at_trx_commit = 2 as bench.sh, BENCH_FLUSH=1
# for 1), lighttpd and a spawn-fcgi pool of 8 payhook workers with the
# standard (signature_scheme none) and mollie profiles, log_level warn, and
# measures with wrk at concurrency BENCH_C (32), BENCH_ROUNDS rounds (5) of
# BENCH_SECONDS seconds (5), the order reversed every other round so that
# machine drift cancels:
#   payment   a payment with a new id per request (new_id.lua): lock,
#             INSERT, COMMIT
#   notify    Mollie's notification of a new payment id per request
#             (mollie_notify.lua): 200 {"result":"queued"} once its row in
#             table notifications is committed
# then the latency from a notification's commit to its payment's row:
# BENCH_NOTIFY_LATENCY (300) paid payments at a fake of Mollie's API
# (tests/servers/notify_api), notified BENCH_NOTIFY_RATE (20) a second
# through lighttpd while a payhook-reconcile --notify daemon fetches them
# (notify_poll_ms 200, its default): payments.received_at minus
# notifications.received_at, both the database's clock.
#
# Checks (exit 1 when one fails): every answer is 200; each payment run has
# a row per 200, each notify run a pending notification per 200 and no
# payment; the latency run records every notified payment once.
# Exit 99 when the stack cannot start.
#
# Prints per kind the median req/s and p99 (min-max over the rounds), the
# per-round ratio notify / payment, and the latency's p50, p99 and max;
# writes the same to $BUILD_DIR/tests/perf/bench/notify-results.md and every
# measurement to notify-measurements.tsv beside it.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${SRC_DIR:-$(dirname "$(dirname "$(dirname "$here")")")}
BUILD_DIR=${BUILD_DIR:-$PWD}
ROUNDS=${BENCH_ROUNDS:-5}
SECS=${BENCH_SECONDS:-5}
C=${BENCH_C:-32}
LATENCY_N=${BENCH_NOTIFY_LATENCY:-300}
RATE=${BENCH_NOTIFY_RATE:-20}
POOL=8
DRAIN_MS=400
OUT=$BUILD_DIR/tests/perf/bench
PAYHOOK=$BUILD_DIR/app/payhook
RECONCILE=$BUILD_DIR/app/payhook-reconcile
API=$BUILD_DIR/tests/servers/notify_api
KEY=test_NotifyBenchKeyNeverShown0123456789

for tool in wrk lighttpd spawn-fcgi redis-server mariadbd jq curl; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "notify-bench: $tool is not installed" >&2; exit 99; }
done
for prog in "$PAYHOOK" "$RECONCILE" "$API" "$BUILD_DIR/tools/freeport"; do
	[ -x "$prog" ] ||
		{ echo "notify-bench: $prog is not built (make bench builds it)" >&2; exit 99; }
done

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
bench_start >/dev/null || exit 99
W=$HARNESS_DIR/notify-bench
mkdir -p "$W" "$OUT" || exit 99
TSV=$OUT/notify-measurements.tsv
: >"$TSV"
FAILURES=0
log() { printf '# notify-bench: %s\n' "$*" >&2; }
fail_check() {
	FAILURES=$((FAILURES + 1))
	log "CHECK FAILED: $*"
}

harness_sql "SET GLOBAL innodb_flush_log_at_trx_commit = $([ "${BENCH_FLUSH:-0}" = 1 ] && echo 1 || echo 2)" || exit 99
harness_sql "SET GLOBAL innodb_buffer_pool_size = 268435456" >/dev/null 2>&1

# The fake Mollie, for the latency run (its objects written below).
: >"$W/objects"
"$API" --mode mollie --key "$KEY" --objects "$W/objects" --faults "$W/faults" \
	--log "$W/api.log" >"$W/api.port" 2>"$W/api.err" &
harness_record notify-api "$!"
deadline=$(($(harness_now_ms) + 5000))
until read -r API_PORT 2>/dev/null <"$W/api.port"; do
	[ "$(harness_now_ms)" -lt "$deadline" ] || { log "notify_api did not start"; exit 99; }
	sleep 0.02
done

export PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_LOG_LEVEL=warn \
	PAYHOOK_REDIS_UNAVAILABLE=db_only PAYHOOK_PROVIDERS="standard mollie" \
	PAYHOOK_MOLLIE_API_KEY=$KEY PAYHOOK_MOLLIE_API_BASE=http://127.0.0.1:$API_PORT \
	PAYHOOK_RECONCILE_RATE_PER_S=1000
# Nothing fetches the notify rounds' notifications: past the default
# bound (100000 pending, about three rounds here) every one would be 503.
export PAYHOOK_NOTIFY_MAX_PENDING=100000000
unset PAYHOOK_CONFIG
harness_spawn_pool p "$POOL" "$W/p.sock" -- "$PAYHOOK" || exit 99
{
	printf 'server.max-keep-alive-requests = 1000000\n'
	printf 'server.modules += ( "mod_fastcgi" )\nfastcgi.server += (\n'
	printf '\t"/p" => (( "socket" => "%s", "check-local" => "disable" )),\n' \
		"$W/p.sock"
	printf ')\n'
} >"$W/lighttpd.conf"
harness_start_lighttpd lighttpd "$W/lighttpd.conf" >/dev/null || exit 99
BASE=http://127.0.0.1:$LIGHTTPD_PORT
harness_wait_http "$BASE/p" 405 10 "$LIGHTTPD_PID" || exit 99

# measure KIND ROUND: one wrk run and its check; a line in the TSV.
measure() {
	local kind=$1 round=$2 tag line s200 rows url script
	tag=r${round}${kind}
	case $kind in
	payment) script=new_id.lua url=$BASE/p ;;
	notify) script=mollie_notify.lua url=$BASE/p/mollie ;;
	esac
	line=$(timeout $((SECS + 60)) wrk -t2 -c"$C" -d"${SECS}s" --latency \
		--timeout 10s -s "$here/$script" "$url" -- "$tag" \
		"$(($(date +%s%3N) + SECS * 1000 - DRAIN_MS))" 2>&1 | grep '^wrk tag=')
	if [ -z "$line" ]; then
		fail_check "$tag: wrk printed no result line"
		return
	fi
	s200=$(status_count "$(kv "$line" statuses)" 200)
	[ "$(kv "$line" non2xx)" = 0 ] ||
		fail_check "$tag: answers other than 200 ($(kv "$line" statuses))"
	case $kind in
	payment)
		rows=$(harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE '$tag-%'")
		[ "$rows" = "$s200" ] || fail_check "$tag: $rows rows for $s200 answers 200" ;;
	notify)
		rows=$(harness_sql "SELECT COUNT(*) FROM notifications WHERE
			object_id LIKE 'tr_$tag%' AND state = 'pending'")
		[ "$rows" = "$s200" ] || fail_check "$tag: $rows notifications for $s200 answers 200"
		[ "$(harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE 'tr_$tag%'")" = 0 ] ||
			fail_check "$tag: a queued notification made a payment"
		;;
	esac
	printf '%s\t%s\t%s\t%s\t%s\n' "$kind" "$round" "$(kv "$line" rps)" \
		"$(kv "$line" p99_ms)" "$s200" >>"$TSV"
	log "$tag: rps=$(kv "$line" rps) p99=$(kv "$line" p99_ms) rows=$rows"
}

# A second of each before the rounds: connections, caches, the pending count.
timeout 30 wrk -t2 -c"$C" -d1s -s "$here/new_id.lua" "$BASE/p" -- warm0 \
	"$(($(date +%s%3N) + 600))" >/dev/null 2>&1
timeout 30 wrk -t2 -c"$C" -d1s -s "$here/mollie_notify.lua" "$BASE/p/mollie" -- warm1 \
	"$(($(date +%s%3N) + 600))" >/dev/null 2>&1
for round in $(seq 1 "$ROUNDS"); do
	if [ $((round % 2)) = 1 ]; then
		kinds=(payment notify)
	else
		kinds=(notify payment)
	fi
	for kind in "${kinds[@]}"; do
		measure "$kind" "$round"
	done
done

# ---- the latency: notification committed -> payment row -----------------------

# The throughput runs' notifications are none of the fetcher's business.
harness_sql "DELETE FROM notifications" || exit 99
for i in $(seq 1 "$LATENCY_N"); do
	jq -c --arg id "tr_lat$i" '.id = $id' \
		"$SRC_DIR/tests/fixtures/providers/mollie/payment_paid.json"
done >"$W/objects"
PAYHOOK_LOG_FILE=$W/fetcher.log "$RECONCILE" --notify </dev/null \
	>"$W/fetcher.out" 2>&1 &
harness_record fetcher "$!"
sleep 1
gap=$(awk -v r="$RATE" 'BEGIN { printf "%.3f", 1 / r }')
# The clients are waited for by pid: a bare wait would wait for the
# servers too.
clients=()
for i in $(seq 1 "$LATENCY_N"); do
	curl -sS -m 10 -o /dev/null -H 'Content-Type: application/x-www-form-urlencoded' \
		--data-binary "id=tr_lat$i" "$BASE/p/mollie" &
	clients+=($!)
	sleep "$gap"
done
wait "${clients[@]}"
deadline=$(($(harness_now_ms) + 60000))
until [ "$(harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE 'tr_lat%'")" = "$LATENCY_N" ] ||
	[ "$(harness_now_ms)" -ge "$deadline" ]; do
	sleep 0.2
done
harness_stop fetcher
rows=$(harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE 'tr_lat%'")
[ "$rows" = "$LATENCY_N" ] ||
	fail_check "latency: $rows of $LATENCY_N notified payments recorded"
harness_sql "SELECT ROUND(TIMESTAMPDIFF(MICROSECOND, n.received_at, p.received_at) / 1000)
	FROM payments p JOIN notifications n ON n.provider = 'mollie' AND
	n.object_id = p.transaction_id WHERE p.transaction_id LIKE 'tr_lat%'" |
	sort -n >"$W/latency"
for q in 50 99 100; do
	awk -v q="$q" '{ v[NR] = $1 } END { i = int((NR * q + 99) / 100); if (i < 1) i = 1; print v[i] }' \
		"$W/latency"
done | {
	read -r p50
	read -r p99
	read -r pmax
	printf 'latency\t%s\t%s\t%s\t%s\n' "$p50" "$p99" "$pmax" "$(wc -l <"$W/latency")" >>"$TSV"
}

# ---- the report ----------------------------------------------------------------

REPORT=$OUT/notify-results.md
awk -F'\t' -v rounds="$ROUNDS" -v c="$C" -v secs="$SECS" -v rate="$RATE" '
function med(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (n == 0) return "-"
	return sprintf("%.2f (%.2f-%.2f)", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2, a[1], a[n])
}
$1 == "latency" { p50 = $2; p99 = $3; pmax = $4; n = $5; next }
{ rps[$1, $2] = $3; p99r[$1, $2] = $4 }
END {
	printf "# Notifications of the providers that only notify\n\n"
	printf "c = %s, 8 workers, %s rounds of %s s (median, min-max).\n\n", c, rounds, secs
	printf "| | req/s | p99 ms | / payment, per round |\n| --- | ---: | ---: | ---: |\n"
	split("payment notify", kinds, " ")
	split("payment (recorded)|Mollie notification (queued)", names, "|")
	for (k = 1; k <= 2; k++) {
		r = ""; q = ""; rr = ""
		for (rd = 1; rd <= rounds; rd++) {
			if (!((kinds[k], rd) in rps)) continue
			r = r " " rps[kinds[k], rd]; q = q " " p99r[kinds[k], rd]
			if (rps["payment", rd] > 0) rr = rr " " rps[kinds[k], rd] / rps["payment", rd]
		}
		printf "| %s | %s | %s | %s |\n", names[k], med(r), med(q), k == 1 ? "1" : med(rr)
	}
	printf "\nFrom a notification'"'"'s commit to its payment'"'"'s row, payhook-reconcile --notify running (notify_poll_ms 200), %s notifications at %s a second: p50 %s ms, p99 %s ms, max %s ms.\n", n, rate, p50, p99, pmax
}' "$TSV" | tee "$REPORT"
if [ "$FAILURES" -gt 0 ]; then
	log "$FAILURES check(s) failed"
	exit 1
fi
exit 0
