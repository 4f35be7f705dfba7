#!/bin/bash
# soak.sh - "make soak": about 200,000 mixed requests (new transactions,
# redeliveries, bad bodies) through lighttpd to a spawn-fcgi pool of payhook
# workers, against the real redis-server and mariadbd of tests/lib/harness.sh.
# It reports the workers' memory (RSS) and open descriptors after a warm-up
# and at the end (flat means no leak), the answers by status, and rows in
# payments against the distinct new transactions sent (they must be equal).
#
#   BUILD_DIR=... SRC_DIR=... bash tests/perf/soak/soak.sh
#
# Settings (environment): SOAK_REQUESTS (200000), SOAK_WORKERS (8),
# SOAK_CONNECTIONS (32), SOAK_MAX_SECONDS (900: stops earlier, reporting how
# far it got). Exit status 1 when an answer lied or work went missing (rows
# differ from the new transactions, a 5xx, a request unanswered, a worker
# gone); the memory figures are reported, not judged.
set -u
: "${SRC_DIR:=$(cd "$(dirname "$0")/../../.." && pwd)}"
: "${BUILD_DIR:=$SRC_DIR}"
top_srcdir=$SRC_DIR top_builddir=$BUILD_DIR
export top_srcdir top_builddir
requests=${SOAK_REQUESTS:-200000}
workers=${SOAK_WORKERS:-8}
conns=${SOAK_CONNECTIONS:-32}
max_seconds=${SOAK_MAX_SECONDS:-900}
chunk_seconds=20

# shellcheck source-path=SCRIPTDIR source=../../e2e/common.sh
. "$SRC_DIR/tests/e2e/common.sh"
command -v wrk >/dev/null || { echo "soak: wrk is not installed" >&2; exit 2; }
e2e_init || exit 99
export PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_LOG_LEVEL=warn
harness_fill "$SRC_DIR/conf/lighttpd-spawn-fcgi.conf" "$HARNESS_DIR/soak-lighttpd.conf" \
	SOCKET="$HARNESS_DIR/soak.sock" || exit 99
e2e_start_pool soak "$workers" || exit 99
harness_start_lighttpd lighttpd "$HARNESS_DIR/soak-lighttpd.conf" || exit 99
url=http://127.0.0.1:$LIGHTTPD_PORT/webhook
harness_wait_http "$url" 405 10 "$LIGHTTPD_PID" || exit 99
tag="soak$(date +%s)"

# memory: "RSS_KIB FDS" summed over the pool.
memory() {
	local pid rss=0 fds=0 r
	for pid in "${POOL_PIDS[@]}"; do
		r=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || r=0
		rss=$((rss + ${r:-0}))
		fds=$((fds + $(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)))
	done
	echo "$rss $fds"
}

alive() {
	local pid n=0 state
	for pid in "${POOL_PIDS[@]}"; do
		state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
		[ -n "$state" ] && [ "$state" != Z ] && n=$((n + 1))
	done
	echo "$n"
}

# field NAME LINE: the value of NAME=... in a result line.
field() {
	local re="(^| )$1=([^ ]*)"
	[[ $2 =~ $re ]] && printf '%s\n' "${BASH_REMATCH[2]}"
}

declare -A statuses=()
sent=0 answered=0 unanswered=0 new=0 redelivered=0 bad=0 chunks=0
started=$(date +%s)
warm=""
while [ "$sent" -lt "$requests" ]; do
	if [ $(($(date +%s) - started)) -ge "$max_seconds" ]; then
		echo "# soak: stopped after ${max_seconds} s with $sent requests sent"
		break
	fi
	stop_at=$(( $(date +%s%3N) + (chunk_seconds - 2) * 1000 ))
	out=$(wrk -t2 -c"$conns" -d"${chunk_seconds}s" --timeout 10s \
		-s "$SRC_DIR/tests/perf/soak/mixed.lua" "$url" -- "$tag-$chunks" "$stop_at")
	line=$(grep '^wrk ' <<<"$out")
	soak=$(grep '^soak ' <<<"$out")
	if [ -z "$line" ] || [ -z "$soak" ]; then
		echo "soak: wrk gave no result: $out" >&2
		exit 1
	fi
	chunks=$((chunks + 1))
	answered=$((answered + $(field requests "$line")))
	unanswered=$((unanswered + $(field unanswered "$line")))
	for kv in $(field statuses "$line" | tr ',' ' '); do
		[ "$kv" = none ] && continue
		statuses[${kv%%:*}]=$(( ${statuses[${kv%%:*}]:-0} + ${kv#*:} ))
	done
	new=$((new + $(field new "$soak")))
	redelivered=$((redelivered + $(field redelivered "$soak")))
	bad=$((bad + $(field bad "$soak")))
	sent=$((answered + unanswered))
	printf '# soak: chunk %d: %s\n' "$chunks" "${line#wrk }"
	# The first chunk warms the workers up (connections, caches, the
	# allocator's arenas): memory is compared from there on.
	[ -n "$warm" ] || warm=$(memory)
done
end=$(memory)
rows=$(harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE '$tag-%'")
elapsed=$(($(date +%s) - started))

status_line=""
fivexx=0
for s in $(printf '%s\n' "${!statuses[@]}" | sort -n); do
	status_line+="$s: ${statuses[$s]}, "
	[ "$s" -ge 500 ] && fivexx=$((fivexx + ${statuses[$s]}))
done
read -r warm_rss warm_fds <<<"${warm:-0 0}"
read -r end_rss end_fds <<<"$end"
cat <<REPORT

## Soak ($(date -u +%Y-%m-%d), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo))

| figure | value |
| --- | --- |
| requests answered | $answered in ${elapsed} s ($chunks wrk runs of ${chunk_seconds} s, $conns connections, $workers workers) |
| unanswered | $unanswered |
| answers by status | ${status_line%, } |
| new transactions sent / redeliveries / bad bodies | $new / $redelivered / $bad |
| rows in payments for the run | $rows |
| pool RSS after warm-up → end | ${warm_rss} KiB → ${end_rss} KiB |
| pool open descriptors after warm-up → end | ${warm_fds} → ${end_fds} |
| workers alive at the end | $(alive) of $workers |
REPORT

rc=0
[ "$rows" = "$new" ] || { echo "soak: FAILED: $rows rows for $new new transactions"; rc=1; }
[ "$fivexx" = 0 ] || { echo "soak: FAILED: $fivexx answers were 5xx"; rc=1; }
[ "$unanswered" = 0 ] || { echo "soak: FAILED: $unanswered requests unanswered"; rc=1; }
[ "${statuses[400]:-0}" = "$bad" ] || { echo "soak: FAILED: ${statuses[400]:-0} answers 400 for $bad bad bodies"; rc=1; }
[ "$(alive)" = "$workers" ] || { echo "soak: FAILED: a worker is gone"; rc=1; }
[ "$rc" = 0 ] && echo "soak: ok"
exit "$rc"
