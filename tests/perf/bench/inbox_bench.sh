#!/bin/bash
# inbox_bench.sh - what the inbox costs the request path, and what a
# payhook-reconcile pass records a second next to the webhook path, in one
# run on one stack (`make bench` runs it after bench.sh; `make bench-inbox`
# alone). Speed is reported, never judged.
#
#   BUILD_DIR=... SRC_DIR=... bash tests/perf/bench/inbox_bench.sh
#
# It starts the real stack on 127.0.0.1 (tests/lib/harness.sh: redis-server,
# mariadbd with innodb_flush_log_at_trx_commit = 2 as bench.sh, BENCH_FLUSH=1
# for 1), lighttpd and three spawn-fcgi pools of 8 payhook workers with the
# standard (signature_scheme none) and stripe profiles, log_level warn:
#   /off   inbox_days = 0 (the inbox off)
#   /on    inbox_days = 1, inbox_max_bytes = 0 (no cap: nothing trimmed)
#   /cap   inbox_days = 1, inbox_max_bytes = 8 MiB, a database of its own: a
#          full inbox, the oldest dropped at every batch
#   /spool inbox_days = 1, inbox_max_bytes = 0, inbox_spool_dir set, a
#          database of its own: a busy worker's batches go to its spool
#          file, loaded into the table once the burst is over
# and measures with wrk at concurrency BENCH_C (32), BENCH_ROUNDS rounds (5)
# of BENCH_SECONDS seconds (5), the order reversed every other round so that
# machine drift cancels:
#   ign-off, ign-on, ign-cap, ign-spool
#                             a signed Stripe event the profile does not
#                             record (tests/perf/bench/ignored.lua): 200
#                             ignored, and kept where the inbox is on;
#                             for ign-spool also the load that follows
#                             the burst, measured apart (CPU a delivery
#                             from the end of the run until the table
#                             holds them all)
#   pay-off, pay-on           a payment with a new id per request
#                             (new_id.lua): the path that records
# then, in each round, one payhook-reconcile --once pass for stripe against
# tests/servers/provider_api (stripe mode) serving BENCH_RECONCILE_EVENTS
# (1000) payment_intent.succeeded events created in the last minutes,
# reconcile_rate_per_s = 1000 (its maximum: unthrottled), into a fresh
# database: the events it records a second (recorded / wall time of the
# pass, start-up included), next to pay-off's requests a second.
#
# With BENCH_BASELINE=PATH (another build's app/payhook, e.g. the commit
# before a change) two more pools run that program, /boff with the inbox
# off and /bon with it on (a database of its own), measured as ign-boff,
# ign-bon and pay-boff in the same rounds. (lighttpd sends a request to the
# first location that is a prefix of its path: no pool's name may start
# with another's.)
#
# Checks (exit 1 when one fails): every ign-* answer is 200; after each
# ign-on and ign-spool run the inbox holds exactly its 200s (then it is
# emptied), and the spool nothing; each
# pay-* run has a row per 200; each pass records every event it was served,
# with source = reconcile. Exit 99 when the stack cannot start.
#
# Prints per kind the median req/s and p99 (min-max over the rounds), the
# per-round ratios to the inbox off, and the reconciler's figures; writes the
# same to $BUILD_DIR/tests/perf/bench/inbox-results.md and every measurement
# to inbox-measurements.tsv beside it. HARNESS_KEEP=1 keeps the folder.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${SRC_DIR:-$(dirname "$(dirname "$(dirname "$here")")")}
BUILD_DIR=${BUILD_DIR:-$PWD}
ROUNDS=${BENCH_ROUNDS:-5}
SECS=${BENCH_SECONDS:-5}
C=${BENCH_C:-32}
EVENTS=${BENCH_RECONCILE_EVENTS:-1000}
POOL=8
DRAIN_MS=400
OUT=$BUILD_DIR/tests/perf/bench
PAYHOOK=$BUILD_DIR/app/payhook
SIGN=$BUILD_DIR/app/payhook-sign
RECONCILE=$BUILD_DIR/app/payhook-reconcile
API=$BUILD_DIR/tests/servers/provider_api
FIX=$SRC_DIR/tests/fixtures/providers/stripe
SECRET=whsec_inbox_bench_endpoint_secret
KEY=rk_test_inbox_bench_restricted_key

for tool in wrk lighttpd spawn-fcgi redis-server mariadbd jq; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "inbox-bench: $tool is not installed" >&2; exit 99; }
done
for prog in "$PAYHOOK" "$SIGN" "$RECONCILE" "$API" "$BUILD_DIR/tools/freeport"; do
	[ -x "$prog" ] ||
		{ echo "inbox-bench: $prog is not built (make bench builds it)" >&2; exit 99; }
done

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
bench_start >/dev/null || exit 99
W=$HARNESS_DIR/inbox-bench
mkdir -p "$W" "$OUT" || exit 99
TSV=$OUT/inbox-measurements.tsv
: >"$TSV"
FAILURES=0
log() { printf '# inbox-bench: %s\n' "$*" >&2; }
fail_check() {
	FAILURES=$((FAILURES + 1))
	log "CHECK FAILED: $*"
}

harness_sql "SET GLOBAL innodb_flush_log_at_trx_commit = $([ "${BENCH_FLUSH:-0}" = 1 ] && echo 1 || echo 2)" || exit 99
# As bench.sh: InnoDB sized for a run that writes some 100k rows, so that
# checkpoint stalls of the harness's small redo log stay out of the figures.
harness_sql "SET GLOBAL innodb_buffer_pool_size = 268435456" >/dev/null 2>&1
harness_sql "SET GLOBAL innodb_log_file_size = 268435456" >/dev/null 2>&1

# new_db NAME: database d_NAME with db/schema.sql, for payhook's user.
new_db() {
	harness_sql "CREATE DATABASE d_$1;
		GRANT ALL ON d_$1.* TO 'payhook'@'127.0.0.1';
		GRANT ALL ON d_$1.* TO 'payhook'@'localhost';
		USE d_$1; $(cat "$SRC_DIR/db/schema.sql")"
}

# ---- pools and lighttpd ----------------------------------------------------

export PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_LOG_LEVEL=warn \
	PAYHOOK_REDIS_UNAVAILABLE=db_only PAYHOOK_PROVIDERS="standard stripe" \
	PAYHOOK_STRIPE_SECRET=$SECRET PAYHOOK_STRIPE_TOLERANCE_S=86400
unset PAYHOOK_CONFIG PAYHOOK_INBOX_DAYS PAYHOOK_INBOX_MAX_BYTES
new_db cap || exit 99
new_db spool || exit 99
mkdir -p "$W/spool" || exit 99
# start_pool NAME NAME=VALUE...: 8 workers with those settings.
start_pool() {
	local name=$1
	shift
	(
		for e in "$@"; do export "${e?}"; done
		harness_spawn_pool "$name" "$POOL" "$W/$name.sock" -- "$PAYHOOK"
	) || exit 99
}
start_pool off PAYHOOK_INBOX_DAYS=0
start_pool on PAYHOOK_INBOX_DAYS=1 PAYHOOK_INBOX_MAX_BYTES=0
start_pool cap PAYHOOK_INBOX_DAYS=1 PAYHOOK_INBOX_MAX_BYTES=8388608 \
	PAYHOOK_MYSQL_DATABASE=d_cap
start_pool spool PAYHOOK_INBOX_DAYS=1 PAYHOOK_INBOX_MAX_BYTES=0 \
	PAYHOOK_MYSQL_DATABASE=d_spool PAYHOOK_INBOX_SPOOL_DIR="$W/spool"
POOLS=(off on cap spool)
STEPS=(ign-off ign-on ign-cap ign-spool pay-off pay-on)
if [ -n "${BENCH_BASELINE:-}" ]; then
	# Another build's payhook with the inbox off and on (its inbox in a
	# database of its own), against this one's.
	new_db base || exit 99
	PAYHOOK=$BENCH_BASELINE start_pool boff PAYHOOK_INBOX_DAYS=0
	PAYHOOK=$BENCH_BASELINE start_pool bon PAYHOOK_INBOX_DAYS=1 \
		PAYHOOK_INBOX_MAX_BYTES=0 PAYHOOK_MYSQL_DATABASE=d_base
	POOLS+=(boff bon)
	STEPS+=(ign-boff ign-bon pay-boff)
fi
STEPS+=(reconcile)
{
	printf 'server.max-keep-alive-requests = 1000000\n'
	printf 'server.modules += ( "mod_fastcgi" )\nfastcgi.server += (\n'
	for name in "${POOLS[@]}"; do
		printf '\t"/%s" => (( "socket" => "%s", "check-local" => "disable" )),\n' \
			"$name" "$W/$name.sock"
	done
	printf ')\n'
} >"$W/lighttpd.conf"
harness_start_lighttpd lighttpd "$W/lighttpd.conf" >/dev/null || exit 99
BASE=http://127.0.0.1:$LIGHTTPD_PORT
for name in "${POOLS[@]}"; do
	harness_wait_http "$BASE/$name" 405 10 "$LIGHTTPD_PID" || exit 99
done

# The ignored event (Stripe's payment_intent.created), signed now.
IGNORED=$W/ignored.json
jq -c . "$FIX/other.json" >"$IGNORED" || exit 99
SIG=$("$SIGN" --provider stripe --secret "$SECRET" "$IGNORED" |
	sed -n 's/^Stripe-Signature: //p')
[ -n "$SIG" ] || { log "payhook-sign gave no Stripe-Signature"; exit 99; }

# ---- measurements ----------------------------------------------------------

# inbox_rows [DB]: the count of table inbox (of database payhook, or DB).
inbox_rows() {
	harness_sql "SELECT COUNT(*) FROM ${1:-payhook}.inbox"
}
# settle_inbox [DB]: the inbox's count once it stops moving (the workers
# write what they hold when they wait idle, and load their spool; 5 s at
# most without a move).
settle_inbox() {
	local last=-1 now deadline=$(($(harness_now_ms) + 5000))
	now=$(inbox_rows "$@")
	while [ "$now" != "$last" ] && [ "$(harness_now_ms)" -lt "$deadline" ]; do
		sleep 0.2
		last=$now
		now=$(inbox_rows "$@")
		[ "$now" = "$last" ] || deadline=$(($(harness_now_ms) + 5000))
	done
	printf '%s\n' "$now"
}
# wait_rows DB N: the count of DB's inbox once it reaches N, or after 60 s
# (the spool is loaded once a worker idles a second).
wait_rows() {
	local now deadline=$(($(harness_now_ms) + 60000))
	now=$(inbox_rows "$1")
	while [ "$now" != "$2" ] && [ "$(harness_now_ms)" -lt "$deadline" ]; do
		sleep 0.1
		now=$(inbox_rows "$1")
	done
	printf '%s\n' "$now"
}
# spooled: the bytes of deliveries in the spool's files (16 a header).
spooled() {
	local f total=0 size
	for f in "$W/spool"/inbox-*.spool; do
		[ -e "$f" ] || continue
		size=$(stat -c %s "$f")
		total=$((total + size - 16))
	done
	echo "$total"
}

# pool_pids NAME: the PIDs of pool NAME's workers.
pool_pids() {
	local f pid _
	for f in "$HARNESS_DIR/pids/$1"-*; do
		read -r pid _ <"$f" && printf '%s\n' "$pid"
	done
}

# measure KIND ROUND: one wrk run of KIND (ign-off, ign-on, ign-cap,
# pay-off, pay-on) and its check; a line in the TSV.
measure() {
	local kind=$1 round=$2 pool=${1#*-} tag line s200 non2xx rows stop
	local load_workers=- load_db=- t0
	local -a script
	tag=r$round-$kind
	case $kind in
	ign-*) script=(ignored.lua "$SIG" "$IGNORED") ;;
	pay-*) script=(new_id.lua) ;;
	esac
	stop=$(($(date +%s%3N) + SECS * 1000 - DRAIN_MS))
	# Emptied with TRUNCATE, not DELETE: InnoDB purges deleted rows in
	# the background, which would land in the next run's MariaDB CPU.
	if [ "$kind" = ign-on ]; then
		harness_sql "TRUNCATE TABLE inbox"
	elif [ "$kind" = ign-spool ]; then
		harness_sql "TRUNCATE TABLE d_spool.inbox"
	fi
	cpu_begin $(pool_pids "$pool")
	line=$(timeout $((SECS + 60)) wrk -t2 -c"$C" -d"${SECS}s" --latency \
		--timeout 10s -s "$here/${script[0]}" "$BASE/$pool" -- "$tag" \
		"$stop" "${script[@]:1}" 2>&1 | grep '^wrk tag=')
	if [ -z "$line" ]; then
		fail_check "$tag: wrk printed no result line"
		return
	fi
	# The workers write what they hold within INBOX_IDLE_MS of the end
	# (the spool's load takes longer: measured apart below).
	sleep 0.2
	cpu_end "$(kv "$line" requests)"
	local flood_workers=${CPU_US[0]} flood_db=${CPU_US[4]}
	local flood_all=$((CPU_US[0] + CPU_US[2] + CPU_US[4] + CPU_US[6] + CPU_US[8]))
	s200=$(status_count "$(kv "$line" statuses)" 200)
	non2xx=$(kv "$line" non2xx)
	case $kind in
	ign-*)
		[ "$non2xx" = 0 ] ||
			fail_check "$tag: $non2xx answers other than 200 ($(kv "$line" statuses))"
		if [ "$kind" = ign-on ]; then
			rows=$(settle_inbox)
			[ "$rows" = "$s200" ] ||
				fail_check "$tag: $rows deliveries in the inbox for $s200 answers 200"
		elif [ "$kind" = ign-spool ]; then
			# The load after the burst: its CPU a delivery loaded.
			cpu_begin $(pool_pids "$pool")
			t0=$(harness_now_ms)
			rows=$(wait_rows d_spool "$s200")
			cpu_end "$s200"
			load_workers=${CPU_US[0]} load_db=${CPU_US[4]}
			log "$tag: the load took about $(($(harness_now_ms) - t0)) ms"
			[ "$rows" = "$s200" ] ||
				fail_check "$tag: $rows deliveries in the inbox for $s200 answers 200"
			[ "$(spooled)" = 0 ] ||
				fail_check "$tag: $(spooled) bytes left in the spool"
		fi ;;
	pay-*)
		rows=$(harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE '$tag-%'")
		[ "$rows" = "$s200" ] ||
			fail_check "$tag: $rows rows for $s200 answers 200" ;;
	esac
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$round" \
		"$(kv "$line" rps)" "$(kv "$line" p99_ms)" "$s200" "$flood_workers" \
		"$flood_db" "$flood_all" "$load_workers" "$load_db" >>"$TSV"
	log "$tag: rps=$(kv "$line" rps) p99=$(kv "$line" p99_ms) statuses=$(kv "$line" statuses)${rows:+ rows=$rows} cpu us/request: workers $flood_workers mariadb $flood_db$([ "$load_db" = - ] || echo "; the load after it, cpu us/delivery: workers $load_workers mariadb $load_db")"
}

# ---- payhook-reconcile against the fake Stripe API -------------------------

"$API" --mode stripe --key "$KEY" --events "$W/events" --faults "$W/faults" \
	--log "$W/api.log" >"$W/api.port" 2>"$W/api.err" &
harness_record provider-api "$!"
API_PID=$!
: >"$W/faults"
deadline=$(($(harness_now_ms) + 5000))
until read -r API_PORT 2>/dev/null <"$W/api.port"; do
	[ "$(harness_now_ms)" -lt "$deadline" ] || { log "provider_api did not start"; exit 99; }
	sleep 0.02
done

# reconcile ROUND: EVENTS new payments in the fake, one pass into a fresh
# database, timed; a line in the TSV.
reconcile() {
	local round=$1 db=rc$1 t0 t1 ms line rows processed
	new_db "$db" || { fail_check "reconcile $round: no database"; return; }
	jq -c --argjson n "$EVENTS" --argjson now "$(date +%s)" --arg r "$round" '
		. as $e | range(1; $n + 1) | . as $i | $e |
		.id = "evt_rc\($r)_\($i)" | .data.object.id = "pi_rc\($r)_\($i)" |
		.created = ($now - 300 + ($i % 240))' "$FIX/payment.json" \
		>"$W/events" || { fail_check "reconcile $round: no events"; return; }
	cpu_begin "$API_PID"
	t0=$(harness_now_ms)
	line=$(PAYHOOK_MYSQL_DATABASE=d_$db PAYHOOK_PROVIDERS=stripe \
		PAYHOOK_STRIPE_API_KEY=$KEY \
		PAYHOOK_STRIPE_API_BASE=http://127.0.0.1:$API_PORT \
		PAYHOOK_RECONCILE_RATE_PER_S=1000 \
		"$RECONCILE" --once --provider stripe 2>"$W/reconcile-$round.err" |
		grep '^provider=stripe')
	t1=$(harness_now_ms)
	# CPU_US: the fake API, lighttpd, MariaDB, Redis, payhook-reconcile
	# (this script's children), in µs for the whole pass.
	cpu_end 1
	ms=$((t1 - t0))
	processed=$(kv "$line" processed)
	rows=$(harness_sql "SELECT COUNT(*) FROM d_$db.payments WHERE source = 'reconcile'")
	[ "$(kv "$line" status)" = complete ] && [ "$rows" = "$EVENTS" ] &&
		[ "$processed" = "$EVENTS" ] ||
		fail_check "reconcile $round: '$line' with $rows rows for $EVENTS events; $(tail -n 3 "$W/reconcile-$round.err")"
	printf 'reconcile\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" \
		"$(awk -v n="${rows:-0}" -v ms="$ms" 'BEGIN { printf "%.2f", (ms > 0) ? n * 1000 / ms : 0 }')" \
		"$ms" "${rows:-0}" "$((CPU_US[0] / 1000))" "$((CPU_US[8] / 1000))" \
		"$((CPU_US[4] / 1000))" >>"$TSV"
	log "reconcile r$round: $rows events recorded in $ms ms ($(kv "$line" pages) pages); CPU ms: payhook-reconcile $((CPU_US[8] / 1000)), MariaDB $((CPU_US[4] / 1000)), the fake API $((CPU_US[0] / 1000))"
	harness_sql "DROP DATABASE d_$db"
}

# ---- the run ---------------------------------------------------------------

# Warm-up, not recorded: connections, caches; the early marks.
warm_up() {
	local p
	for p in "${POOLS[@]}"; do
		timeout 30 wrk -t1 -c4 -d1s -s "$here/new_id.lua" "$BASE/$p" -- \
			"warm-$p" 99999999999999 >/dev/null 2>&1
		timeout 30 wrk -t1 -c4 -d1s -s "$here/ignored.lua" "$BASE/$p" -- \
			"warm-$p" 99999999999999 "$SIG" "$IGNORED" >/dev/null 2>&1
	done
}
warm_up
bench_early_marks_wait warm_up
for round in $(seq 1 "$ROUNDS"); do
	log "round $round of $ROUNDS"
	order=("${STEPS[@]}")
	if [ $((round % 2)) = 0 ]; then
		order=()
		for ((i = ${#STEPS[@]} - 1; i >= 0; i--)); do order+=("${STEPS[$i]}"); done
	fi
	for step in "${order[@]}"; do
		if [ "$step" = reconcile ]; then
			reconcile "$round"
		else
			measure "$step" "$round"
		fi
	done
done

# ---- the report ------------------------------------------------------------

REPORT=$OUT/inbox-results.md
awk -F'\t' -v rounds="$ROUNDS" -v c="$C" -v secs="$SECS" -v events="$EVENTS" '
function med(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (n == 0) return "-"
	return sprintf("%.2f (%.2f-%.2f)", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2, a[1], a[n])
}
$1 == "reconcile" { rc[$2] = $3; rcms[$2] = $4; rcfake[$2] = $6; rcself[$2] = $7; rcdb[$2] = $8; next }
{ rps[$1, $2] = $3; p99[$1, $2] = $4; wcpu[$1, $2] = $6; dbcpu[$1, $2] = $7; allcpu[$1, $2] = $8
  if ($9 != "-" && $9 != "") { lw[$1, $2] = $9; ld[$1, $2] = $10 } }
END {
	printf "# The inbox on the request path, and payhook-reconcile\n\n"
	printf "c = %s, 8 workers a pool, %s rounds of %s s (median, min-max).\n\n", c, rounds, secs
	printf "| | req/s | p99 ms | req/s / inbox off | p99 / inbox off | CPU µs a request: workers | MariaDB | all | all / inbox off |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
	nk = split("ign-off ign-on ign-cap ign-spool ign-boff ign-bon pay-off pay-on pay-boff", kinds, " ")
	split("ignored event, inbox off|ignored event, inbox on|ignored event, inbox full (8 MiB cap)|ignored event, inbox on, inbox_spool_dir (the burst)|ignored event, BENCH_BASELINE, inbox off|ignored event, BENCH_BASELINE, inbox on|payment, inbox off|payment, inbox on|payment, BENCH_BASELINE", names, "|")
	for (k = 1; k <= nk; k++) {
		kind = kinds[k]; base = (kind ~ /^ign/) ? "ign-off" : "pay-off"
		if (!((kind, 1) in rps)) continue
		r = ""; q = ""; rr = ""; qr = ""; wc = ""; dc = ""; ac = ""; ar = ""
		for (rd = 1; rd <= rounds; rd++) {
			if (!((kind, rd) in rps)) continue
			r = r " " rps[kind, rd]; q = q " " p99[kind, rd]
			wc = wc " " wcpu[kind, rd]; dc = dc " " dbcpu[kind, rd]; ac = ac " " allcpu[kind, rd]
			if (rps[base, rd] > 0) rr = rr " " rps[kind, rd] / rps[base, rd]
			if (p99[base, rd] > 0) qr = qr " " p99[kind, rd] / p99[base, rd]
			if (allcpu[base, rd] > 0) ar = ar " " allcpu[kind, rd] / allcpu[base, rd]
		}
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", names[k], med(r), med(q),
			kind == base ? "1" : med(rr), kind == base ? "1" : med(qr),
			med0(wc), med0(dc), med0(ac), kind == base ? "1" : med(ar)
	}
	w = ""; d = ""; t = ""; tr = ""
	for (rd = 1; rd <= rounds; rd++) {
		if (!(("ign-spool", rd) in lw)) continue
		w = w " " lw["ign-spool", rd]; d = d " " ld["ign-spool", rd]
		t = t " " (allcpu["ign-spool", rd] + lw["ign-spool", rd] + ld["ign-spool", rd])
		if (allcpu["ign-off", rd] > 0)
			tr = tr " " (allcpu["ign-spool", rd] + lw["ign-spool", rd] + ld["ign-spool", rd]) / allcpu["ign-off", rd]
	}
	if (w != "") {
		printf "\nThe load of the spool after each burst (from the end of the run until the table holds every delivery), CPU µs a delivery:\n\n"
		printf "| workers | MariaDB | the burst and the load, all | / inbox off, all |\n| ---: | ---: | ---: | ---: |\n"
		printf "| %s | %s | %s | %s |\n", med0(w), med0(d), med0(t), med(tr)
	}
	r = ""; ms = ""; fake = ""; ratio = ""; self = ""; db = ""
	for (rd = 1; rd <= rounds; rd++) {
		if (!(rd in rc)) continue
		r = r " " rc[rd]; ms = ms " " rcms[rd]; fake = fake " " rcfake[rd]
		self = self " " rcself[rd]; db = db " " rcdb[rd]
		if (rps["pay-off", rd] > 0) ratio = ratio " " rc[rd] / rps["pay-off", rd]
	}
	printf "\npayhook-reconcile --once, stripe, %s events a pass, reconcile_rate_per_s = 1000:\n\n", events
	printf "| | median (min-max) |\n| --- | ---: |\n"
	printf "| events recorded a second (one process) | %s |\n", med(r)
	printf "| a pass, ms | %s |\n", med(ms)
	printf "| CPU a pass, ms: payhook-reconcile | %s |\n", med(self)
	printf "| CPU a pass, ms: MariaDB | %s |\n", med(db)
	printf "| CPU a pass, ms: the fake API | %s |\n", med(fake)
	printf "| the webhook path (payment, inbox off, 8 workers), req/s | %s |\n", med(rps_list("pay-off"))
	printf "| reconcile events/s / webhook req/s | %s |\n", med(ratio)
}
function med0(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (n == 0) return "-"
	return sprintf("%d", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
}
function rps_list(kind,   s, rd) {
	s = ""
	for (rd = 1; rd <= rounds; rd++) if ((kind, rd) in rps) s = s " " rps[kind, rd]
	return s
}' "$TSV" | tee "$REPORT"
if [ "$FAILURES" -gt 0 ]; then
	log "$FAILURES check(s) failed"
	exit 1
fi
exit 0
