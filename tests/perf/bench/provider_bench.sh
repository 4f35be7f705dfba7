#!/bin/bash
# provider_bench.sh - what a PayPal delivery costs next to a Stripe one, in
# one run on one stack (`make bench` runs it after bench.sh; `make
# bench-providers` alone). Speed is reported, never judged.
#
#   BUILD_DIR=... SRC_DIR=... bash tests/perf/bench/provider_bench.sh
#
# It starts the real stack on 127.0.0.1 (tests/lib/harness.sh: redis-server,
# mariadbd with innodb_flush_log_at_trx_commit = 2 as bench.sh, BENCH_FLUSH=1
# for 1), nginx serving a test CA's PayPal certificate over https
# (tests/lib/paypal.sh), lighttpd and one spawn-fcgi pool of 8 payhook
# workers with the stripe and paypal profiles, log_level warn. A warm-up
# has every worker hold the certificate in its memory (fetched once, then
# read from paypal_certs), so the runs measure a delivery whose certificate
# is cached, as all but the first are.
#
# Then BENCH_ROUNDS rounds (3) of BENCH_SECONDS seconds (5) at concurrency
# BENCH_C (32), the order reversed every other round so that machine drift
# cancels:
#   stripe   a payment_intent.succeeded with a new id per request, signed
#            (Stripe-Signature: HMAC-SHA256)
#   paypal   a PAYMENT.CAPTURE.COMPLETED with a new id per request, signed
#            as PayPal signs (RSA-SHA256 over id|time|webhook id|CRC32)
# each from a pool of BENCH_POOL (40000) deliveries signed before the round
# (tests/perf/bench/provider_pool, provider.lua).
#
# Then, unless BENCH_CALLGRIND=0, the instructions a delivery of each costs
# one worker under callgrind (BENCH_CG_N1 = 100 and BENCH_CG_N2 = 600
# deliveries, the difference divided: start-up cancels), a figure the
# machine's noise does not move.
#
# Checks (exit 1 when one fails): every answer is 200 and each has its row
# in payments; the certificate was fetched once. Exit 99 when the stack
# cannot start.
#
# Prints per kind the median req/s, p99 and CPU µs a request of the workers
# and of the whole stack that serves it (lighttpd, the workers, MariaDB,
# Redis: what the host pays), min-max over the rounds, and the per-round
# ratios paypal / stripe; writes
# the same to $BUILD_DIR/tests/perf/bench/provider-results.md and every
# measurement to provider-measurements.tsv beside it. HARNESS_KEEP=1 keeps
# the folder.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${SRC_DIR:-$(dirname "$(dirname "$(dirname "$here")")")}
BUILD_DIR=${BUILD_DIR:-$PWD}
ROUNDS=${BENCH_ROUNDS:-3}
SECS=${BENCH_SECONDS:-5}
C=${BENCH_C:-32}
COUNT=${BENCH_POOL:-40000}
POOL=8
DRAIN_MS=400
OUT=$BUILD_DIR/tests/perf/bench
PAYHOOK=$BUILD_DIR/app/payhook
POOLGEN=$BUILD_DIR/tests/perf/bench/provider_pool
STRIPE_SECRET=whsec_provider_bench_endpoint_secret
WEBHOOK_ID=7BENCH0PAYPAL0WEBHOOK

for tool in wrk lighttpd spawn-fcgi redis-server mariadbd nginx openssl curl; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "provider-bench: $tool is not installed" >&2; exit 99; }
done
for prog in "$PAYHOOK" "$POOLGEN" "$BUILD_DIR/tools/freeport"; do
	[ -x "$prog" ] ||
		{ echo "provider-bench: $prog is not built (make bench builds it)" >&2; exit 99; }
done

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
# shellcheck source-path=SCRIPTDIR source=../../lib/paypal.sh
. "$SRC_DIR/tests/lib/paypal.sh"
bench_start >/dev/null || exit 99
W=$HARNESS_DIR/provider-bench
PKI=$W/pki
WWW=$W/www
mkdir -p "$W" "$PKI" "$WWW/v1/notifications/certs" "$OUT" || exit 99
TSV=$OUT/provider-measurements.tsv
: >"$TSV"
FAILURES=0
log() { printf '# provider-bench: %s\n' "$*" >&2; }
fail_check() {
	FAILURES=$((FAILURES + 1))
	log "CHECK FAILED: $*"
}

harness_sql "SET GLOBAL innodb_flush_log_at_trx_commit = $([ "${BENCH_FLUSH:-0}" = 1 ] && echo 1 || echo 2)" || exit 99
harness_sql "SET GLOBAL innodb_buffer_pool_size = 268435456" >/dev/null 2>&1

# ---- PayPal's certificate, the pool and lighttpd ---------------------------

paypal_pki "$PKI" || exit 99
cp "$PKI/good.pem" "$WWW/v1/notifications/certs/CERT-bench"
CERT_PORT=$(harness_free_port) || exit 99
paypal_cert_server certs "$PKI" "$WWW" "$CERT_PORT" || exit 99
CERT_URL=https://127.0.0.1:$CERT_PORT/v1/notifications/certs/CERT-bench

export PAYHOOK_LOG_LEVEL=warn PAYHOOK_REDIS_UNAVAILABLE=db_only \
	PAYHOOK_PROVIDERS="stripe paypal" PAYHOOK_STRIPE_SECRET=$STRIPE_SECRET \
	PAYHOOK_STRIPE_TOLERANCE_S=86400 PAYHOOK_PAYPAL_TOLERANCE_S=86400 \
	PAYHOOK_PAYPAL_WEBHOOK_ID=$WEBHOOK_ID \
	PAYHOOK_PAYPAL_CERT_HOSTS="127.0.0.1:$CERT_PORT" \
	PAYHOOK_PAYPAL_CA_FILE=$PKI/ca.pem
unset PAYHOOK_CONFIG
harness_spawn_pool p "$POOL" "$W/p.sock" -- "$PAYHOOK" || exit 99
{
	printf 'server.max-keep-alive-requests = 1000000\n'
	printf 'server.modules += ( "mod_fastcgi" )\nfastcgi.server += (\n'
	printf '\t"/p" => (( "socket" => "%s", "check-local" => "disable" )),\n' "$W/p.sock"
	printf '\t"/cg" => (( "socket" => "%s", "check-local" => "disable" )),\n' "$W/cg.sock"
	printf ')\n'
} >"$W/lighttpd.conf"
harness_start_lighttpd lighttpd "$W/lighttpd.conf" >/dev/null || exit 99
BASE=http://127.0.0.1:$LIGHTTPD_PORT/p
harness_wait_http "$BASE/stripe" 405 10 "$LIGHTTPD_PID" || exit 99

# pool_pids: the PIDs of the workers.
pool_pids() {
	local f pid _
	for f in "$HARNESS_DIR/pids/p"-*; do
		read -r pid _ <"$f" && printf '%s\n' "$pid"
	done
}

# make_pool KIND TAG COUNT: the pool file of COUNT signed deliveries.
make_pool() {
	case $1 in
	stripe) "$POOLGEN" --provider stripe --secret "$STRIPE_SECRET" \
		--count "$3" --tag "$2" --out "$W/$2.lua" ;;
	paypal) "$POOLGEN" --provider paypal --key "$PKI/good.key" \
		--cert-url "$CERT_URL" --webhook-id "$WEBHOOK_ID" \
		--count "$3" --tag "$2" --out "$W/$2.lua" ;;
	esac
}

# measure KIND ROUND: one wrk run of KIND and its check; a line in the TSV.
measure() {
	local kind=$1 round=$2 tag line s200 non2xx rows stop
	tag=r$round-$kind
	stop=$(($(date +%s%3N) + SECS * 1000 - DRAIN_MS))
	cpu_begin $(pool_pids)
	line=$(timeout $((SECS + 60)) wrk -t2 -c"$C" -d"${SECS}s" --latency \
		--timeout 10s -s "$here/provider.lua" "$BASE/$kind" -- "$tag" \
		"$stop" "$W/$tag.lua" 2 2>&1 | grep '^wrk tag=')
	if [ -z "$line" ]; then
		fail_check "$tag: wrk printed no result line"
		return
	fi
	cpu_end "$(kv "$line" requests)"
	s200=$(status_count "$(kv "$line" statuses)" 200)
	non2xx=$(kv "$line" non2xx)
	[ "$non2xx" = 0 ] ||
		fail_check "$tag: $non2xx answers other than 200 ($(kv "$line" statuses))"
	[ "$(kv "$line" exhausted)" = 0 ] ||
		fail_check "$tag: the pool ran out (BENCH_POOL above $COUNT)"
	rows=$(harness_sql "SELECT COUNT(*) FROM payments WHERE provider = '$kind' AND transaction_id LIKE '$tag-%'")
	[ "$rows" = "$s200" ] || fail_check "$tag: $rows rows for $s200 answers 200"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$round" "$(kv "$line" rps)" \
		"$(kv "$line" p99_ms)" "$s200" "${CPU_US[0]}" \
		"$((CPU_US[0] + CPU_US[2] + CPU_US[4] + CPU_US[6]))" >>"$TSV"
	log "$tag: rps=$(kv "$line" rps) p99=$(kv "$line" p99_ms) statuses=$(kv "$line" statuses) rows=$rows cpu us/request: workers ${CPU_US[0]} lighttpd ${CPU_US[2]} mariadb ${CPU_US[4]} redis ${CPU_US[6]}"
	rm -f "$W/$tag.lua"
}

# ---- the run ---------------------------------------------------------------

# Warm-up, not recorded: connections, caches, the early marks, and the
# certificate in every worker's memory.
for kind in stripe paypal; do
	make_pool "$kind" "warm-$kind" 4000 || exit 99
done
warm_up() {
	local kind
	for kind in stripe paypal; do
		timeout 30 wrk -t2 -c16 -d1s -s "$here/provider.lua" \
			"$BASE/$kind" -- "warm-$kind" 99999999999999 \
			"$W/warm-$kind.lua" 2 >/dev/null 2>&1
	done
}
warm_up
bench_early_marks_wait warm_up
fetched=$(grep -c 'GET /v1/notifications/certs/CERT-bench ' "$PKI/certs.log")
[ "$fetched" = 1 ] || fail_check "the certificate was fetched $fetched times, not once"
log "the certificate fetched $fetched time(s) for 8 workers"

for round in $(seq 1 "$ROUNDS"); do
	log "round $round of $ROUNDS: signing $COUNT deliveries of each"
	for kind in stripe paypal; do
		make_pool "$kind" "r$round-$kind" "$COUNT" || exit 99
	done
	order=(stripe paypal)
	[ $((round % 2)) = 0 ] && order=(paypal stripe)
	for kind in "${order[@]}"; do
		measure "$kind" "$round"
	done
done

# ---- instructions a delivery (callgrind) -----------------------------------

# cg_count KIND N: one worker under callgrind serves N deliveries of KIND
# (certificate cached: the cert store holds it since the warm-up); prints
# the instructions the whole process ran, nothing when the run failed.
cg_count() {
	local kind=$1 n=$2 tag=cg-$1-$2 out=$W/cg-$1-$2.out wrk_pid deadline
	command -v valgrind >/dev/null 2>&1 || return 1
	make_pool "$kind" "$tag" "$n" || return 1
	harness_spawn_pool "$tag" 1 "$W/cg.sock" -- valgrind --tool=callgrind \
		--callgrind-out-file="$out" "$PAYHOOK" --max-requests "$n" || return 1
	timeout 600 wrk -t1 -c1 -d590s --timeout 60s -s "$here/provider.lua" \
		"${BASE%/p}/cg/$kind" -- "$tag" 99999999999999 "$W/$tag.lua" 1 \
		>"$W/$tag.wrk" 2>&1 &
	wrk_pid=$!
	harness_record "$tag-wrk" "$wrk_pid"
	deadline=$(($(harness_now_ms) + 300000))
	while harness_running "$tag-0" && [ "$(harness_now_ms)" -lt "$deadline" ]; do
		sleep 0.2
	done
	harness_stop "$tag-wrk" "$tag-0"
	wait "$wrk_pid" 2>/dev/null
	[ "$(harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE '$tag-%'")" = "$n" ] ||
		{ fail_check "$tag: not $n rows for $n deliveries under callgrind"; return 1; }
	sed -n 's/^summary: *\([0-9]*\).*/\1/p; s/^totals: *\([0-9]*\).*/\1/p' "$out" | head -n 1
}

# Instructions a delivery: (count(N2) - count(N1)) / (N2 - N1), so the
# start-up and the first connections cancel. Deterministic where the
# machine's noise is not: the figure to compare the two schemes' own cost.
CG_N1=${BENCH_CG_N1:-100}
CG_N2=${BENCH_CG_N2:-600}
declare -A CG_PER
if [ "${BENCH_CALLGRIND:-1}" != 0 ]; then
	for kind in stripe paypal; do
		a=$(cg_count "$kind" "$CG_N1") && b=$(cg_count "$kind" "$CG_N2") &&
			[ -n "$a" ] && [ -n "$b" ] &&
			CG_PER[$kind]=$(awk -v a="$a" -v b="$b" -v n1="$CG_N1" -v n2="$CG_N2" \
				'BEGIN { printf "%.0f", (b - a) / (n2 - n1) }')
		log "callgrind: $kind: ${CG_PER[$kind]:-?} instructions a delivery"
	done
	printf 'callgrind\t%s\t%s\n' "${CG_PER[stripe]:-}" "${CG_PER[paypal]:-}" >>"$TSV"
fi

# ---- the report ------------------------------------------------------------

REPORT=$OUT/provider-results.md
awk -F'\t' -v rounds="$ROUNDS" -v c="$C" -v secs="$SECS" '
function med(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (n == 0) return "-"
	return sprintf("%.2f (%.2f-%.2f)", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2, a[1], a[n])
}
$1 == "callgrind" { cg_stripe = $2; cg_paypal = $3; next }
{ rps[$1, $2] = $3; p99[$1, $2] = $4; cpu[$1, $2] = $6; stack[$1, $2] = $7 }
END {
	printf "# A PayPal delivery (certificate cached) next to a Stripe one\n\n"
	printf "c = %s, 8 workers, %s rounds of %s s (median, min-max); a new payment per request.\n\n", c, rounds, secs
	printf "| | req/s | p99 ms | CPU µs a request, workers | CPU µs a request, the stack |\n| --- | ---: | ---: | ---: | ---: |\n"
	split("stripe paypal", kinds, " ")
	for (k = 1; k <= 2; k++) {
		r = ""; q = ""; w = ""; t = ""
		for (rd = 1; rd <= rounds; rd++) {
			if (!((kinds[k], rd) in rps)) continue
			r = r " " rps[kinds[k], rd]; q = q " " p99[kinds[k], rd]; w = w " " cpu[kinds[k], rd]; t = t " " stack[kinds[k], rd]
		}
		printf "| %s | %s | %s | %s | %s |\n", kinds[k], med(r), med(q), med(w), med(t)
	}
	rr = ""; cr = ""; sr = ""
	for (rd = 1; rd <= rounds; rd++) {
		if (rps["stripe", rd] > 0) rr = rr " " rps["paypal", rd] / rps["stripe", rd]
		if (cpu["stripe", rd] > 0) cr = cr " " cpu["paypal", rd] / cpu["stripe", rd]
		if (stack["stripe", rd] > 0) sr = sr " " stack["paypal", rd] / stack["stripe", rd]
	}
	printf "\npaypal / stripe, per round: req/s %s, workers'"'"' CPU a request %s, the stack'"'"'s %s\n", med(rr), med(cr), med(sr)
	if (cg_stripe > 0 && cg_paypal > 0)
		printf "\nInstructions a delivery in one worker (callgrind): stripe %d, paypal %d, paypal / stripe %.2f\n", cg_stripe, cg_paypal, cg_paypal / cg_stripe
}' "$TSV" | tee "$REPORT"
[ "$FAILURES" = 0 ] || { log "$FAILURES check(s) failed"; exit 1; }
