#!/bin/bash
# ab.sh - side by side: two or more payhook pools behind one lighttpd, the
# same MariaDB and Redis, measured in interleaved rounds (order alternating)
# with the same wrk script, so that machine drift cancels. Prints one line per
# measurement, then per variant the median req/s, p99 and CPU per request
# (min-max) and each variant's per-round ratios to the first. `make
# bench-ab` runs it.
#
#   bash tests/perf/bench/ab.sh LABEL=SPEC LABEL=SPEC...
#
# SPEC is MODE:PROGRAM[:NAME=VALUE,...]:
#   spawn   spawn-fcgi -F 8 PROGRAM (the pool of conf/spawn-fcgi.sh before
#           the pool manager)
#   master  spawn-fcgi -F 1 PROGRAM --workers 8 (payhook's pool manager)
# and the NAME=VALUE pairs are PAYHOOK_* settings of that pool only, e.g.
#   before=spawn:/build-14f3fec/app/payhook now=spawn:$PWD/app/payhook
#   spawn=spawn:app/payhook master=master:app/payhook:PAYHOOK_METRICS_FILE=/tmp/m
#
# Every pool gets signature_scheme none (standard with AB_SIGNED=1) and
# log_level warn. Settings
# (environment): AB_ROUNDS (5), AB_SECONDS (5), AB_CONCS ("32"), AB_POOL (8),
# BENCH_FLUSH=1 for innodb_flush_log_at_trx_commit=1 (2 otherwise);
# AB_SCRIPT (a wrk script of this folder, default new_id.lua) and
# AB_SCRIPT_ARGS (its arguments after TAG and STOP_AT_MS), e.g. AB_SCRIPT=
# ignored.lua for an event answered 200 ignored, which records no row.
# AB_SIGNED=1 sends the signed payments of `make bench`'s signed row and
# callgrind (sign_pool, signed.lua: Standard Webhooks, a new transaction id
# each) to pools with signature_scheme standard and the bench's secret.
# Exit status 1 when a run's rows in payments differ from its 200s (with
# new_id.lua or AB_SIGNED=1).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${SRC_DIR:-$(dirname "$(dirname "$(dirname "$here")")")}
BUILD_DIR=${BUILD_DIR:-$PWD}
ROUNDS=${AB_ROUNDS:-5} SECS=${AB_SECONDS:-5} POOL=${AB_POOL:-8}
read -r -a CONCS <<<"${AB_CONCS:-32}"
DRAIN_MS=400
SCRIPT=$here/${AB_SCRIPT:-new_id.lua}
read -r -a SCRIPT_ARGS <<<"${AB_SCRIPT_ARGS:-}"
SIGNED=${AB_SIGNED:-0}
SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
[ "$SIGNED" = 1 ] && SCRIPT=$here/signed.lua

if [ "$#" -lt 2 ]; then
	sed -n '2,30s/^# \{0,1\}//p' "$0" >&2
	exit 2
fi
for tool in wrk lighttpd spawn-fcgi redis-server mariadbd; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "ab: $tool is not installed" >&2; exit 99; }
done

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
bench_start >/dev/null || exit 99
harness_sql "SET GLOBAL innodb_flush_log_at_trx_commit = $([ "${BENCH_FLUSH:-0}" = 1 ] && echo 1 || echo 2)" || exit 99
harness_sql "SET GLOBAL innodb_buffer_pool_size = 268435456" >/dev/null 2>&1
W=$HARNESS_DIR/ab
mkdir -p "$W" || exit 99
export PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_LOG_LEVEL=warn \
	PAYHOOK_REDIS_UNAVAILABLE=db_only
if [ "$SIGNED" = 1 ]; then
	[ -x "$BUILD_DIR/tests/perf/bench/sign_pool" ] ||
		{ echo "ab: AB_SIGNED=1 needs tests/perf/bench/sign_pool (make bench-ab builds it)" >&2; exit 99; }
	export PAYHOOK_SIGNATURE_SCHEME=standard PAYHOOK_WEBHOOK_SECRET=$SECRET \
		PAYHOOK_SIGNATURE_TOLERANCE_S=86400
fi

LABELS=() MODES=()
conf=$W/lighttpd-ab.conf
printf 'server.max-keep-alive-requests = 1000000\nserver.modules += ( "mod_fastcgi" )\nfastcgi.server += (\n' >"$conf"
for arg in "$@"; do
	label=${arg%%=*} spec=${arg#*=}
	IFS=: read -r mode program settings <<<"$spec"
	case $label in '' | *[!a-z0-9_]*)
		echo "ab: label '$label': lower-case letters, digits and _" >&2
		exit 2 ;;
	esac
	[ -x "$program" ] || { echo "ab: $program is not a program" >&2; exit 2; }
	envs=()
	if [ -n "${settings:-}" ]; then
		IFS=, read -r -a envs <<<"$settings"
	fi
	# A subshell keeps the settings to this pool (the harness records
	# its processes in files, so they are stopped all the same).
	(
		for e in "${envs[@]}"; do export "${e?}"; done
		case $mode in
		spawn) harness_spawn_pool "$label" "$POOL" "$W/$label.sock" -- "$program" ;;
		master) harness_spawn_pool "$label" 1 "$W/$label.sock" -- "$program" --workers "$POOL" ;;
		*) echo "ab: mode '$mode': spawn or master" >&2; exit 2 ;;
		esac
	) || exit 99
	LABELS+=("$label")
	MODES+=("$mode")
	printf '\t"/%s" => (( "socket" => "%s", "check-local" => "disable" )),\n' "$label" "$W/$label.sock" >>"$conf"
done
printf ')\n' >>"$conf"
harness_start_lighttpd lighttpd "$conf" >/dev/null || exit 99
BASE=http://127.0.0.1:$LIGHTTPD_PORT
for label in "${LABELS[@]}"; do
	harness_wait_http "$BASE/$label" 405 10 "$LIGHTTPD_PID" || exit 99
done

# pool_pids I: the PIDs of the Ith pool's processes (a master and its
# workers), for its CPU per request.
pool_pids() {
	local i=$1 n
	if [ "${MODES[$i]}" = master ]; then
		harness_running "${LABELS[$i]}-0" && printf '%s\n' "$HARNESS_PID"
		harness_children "$HARNESS_PID"
		return
	fi
	for ((n = 0; n < POOL; n++)); do
		harness_running "${LABELS[$i]}-$n" && printf '%s\n' "$HARNESS_PID"
	done
}

# switches PID...: the context switches (voluntary and not) the processes
# made so far: each wait for a connection or a backend's answer is one.
switches() {
	local pid sum=0 k v
	for pid in "$@"; do
		while read -r k v; do
			case $k in voluntary_ctxt_switches: | nonvoluntary_ctxt_switches:)
				sum=$((sum + v)) ;;
			esac
		done <"/proc/$pid/status"
	done
	printf '%s\n' "$sum"
}

RESULTS=$W/results.tsv
: >"$RESULTS"
failed=0
# measure I C ROUND: one run of the Ith pool, with the CPU per request of
# its processes and of the whole stack (lighttpd, MariaDB, Redis, wrk).
measure() {
	local i=$1 c=$2 round=$3 label=${LABELS[$1]} tag line rows s200 stop sw
	local -a args=("${SCRIPT_ARGS[@]}") pids
	tag=r$round-$label-c$c
	mapfile -t pids < <(pool_pids "$i")
	if [ "$SIGNED" = 1 ]; then
		# Each entry is sent once: more than any pool answers in SECS.
		"$BUILD_DIR/tests/perf/bench/sign_pool" --secret "$SECRET" \
			--count $((20000 * SECS + 2000)) --tag "$tag" \
			--out "$W/$tag.pool.lua" || exit 99
		args=("$W/$tag.pool.lua" 2)
	fi
	cpu_begin "${pids[@]}"
	sw=$(switches "${pids[@]}")
	stop=$(($(date +%s%3N) + SECS * 1000 - DRAIN_MS))
	line=$(timeout $((SECS + 60)) wrk -t2 -c"$c" -d"${SECS}s" --latency \
		--timeout 10s -s "$SCRIPT" "$BASE/$label" -- "$tag" \
		"$stop" "${args[@]}" 2>&1 | grep '^wrk tag=')
	cpu_end "$(kv "$line" requests)"
	sw=$(awk -v a="$sw" -v b="$(switches "${pids[@]}")" -v n="$(kv "$line" requests)" \
		'BEGIN { printf "%.2f", (n > 0 ? (b - a) / n : 0) }')
	rm -f "$W/$tag.pool.lua"
	[ "$(kv "$line" exhausted)" = 0 ] || [ "$SIGNED" != 1 ] ||
		echo "ab: $tag: the signed pool ran out" >&2
	rows=$(harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE '$tag-%'")
	s200=$(kv "$line" statuses | tr ',' '\n' | sed -n 's/^200://p')
	# Another script's 200s record no row: only its line is checked.
	[ -n "${AB_SCRIPT:-}" ] && rows=${s200:-0}
	if [ -z "$line" ] || [ "$rows" != "${s200:-0}" ]; then
		echo "ab: $tag: $rows rows for ${s200:-no} answers 200: ${line:-no wrk line}" >&2
		failed=1
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$c" "$round" "$(kv "$line" rps)" \
		"$(kv "$line" p99_ms)" "${CPU_US[0]}" \
		"$((CPU_US[0] + CPU_US[2] + CPU_US[4] + CPU_US[6] + CPU_US[8]))" "$sw" >>"$RESULTS"
	printf '# ab: %s rps=%s p99_ms=%s rows=%s cpu_us: pool=%s lighttpd=%s mariadb=%s redis=%s wrk=%s; pool switches/request=%s\n' \
		"$tag" "$(kv "$line" rps)" "$(kv "$line" p99_ms)" "$rows" "${CPU_US[0]}" \
		"${CPU_US[2]}" "${CPU_US[4]}" "${CPU_US[6]}" "${CPU_US[8]}" "$sw"
}

WARM_N=0
warm_up() {
	local tag
	for label in "${LABELS[@]}"; do
		WARM_N=$((WARM_N + 1)) tag=warm-$WARM_N-$label
		if [ "$SIGNED" = 1 ]; then
			"$BUILD_DIR/tests/perf/bench/sign_pool" --secret "$SECRET" \
				--count 30000 --tag "$tag" --out "$W/$tag.pool.lua" || exit 99
			timeout 30 wrk -t1 -c4 -d1s -s "$here/signed.lua" "$BASE/$label" -- \
				"$tag" 99999999999999 "$W/$tag.pool.lua" 1 >/dev/null 2>&1
			rm -f "$W/$tag.pool.lua"
		else
			timeout 30 wrk -t1 -c4 -d1s -s "$here/new_id.lua" "$BASE/$label" -- \
				"$tag" 99999999999999 >/dev/null 2>&1
		fi
	done
}
# Warm-up, not recorded, until the early marks are complete.
warm_up
bench_early_marks_wait warm_up
for round in $(seq 1 "$ROUNDS"); do
	order=("${!LABELS[@]}")
	if [ $((round % 2)) = 0 ]; then
		order=()
		for ((i = ${#LABELS[@]} - 1; i >= 0; i--)); do order+=("$i"); done
	fi
	for c in "${CONCS[@]}"; do
		for i in "${order[@]}"; do
			measure "$i" "$c" "$round"
		done
	done
done

# Median (min-max) of each variant, and per-round ratios to the first: of
# the requests a second, p99, and the CPU a request cost the whole stack
# (the pool, lighttpd, MariaDB, Redis and wrk), which moves less than the
# rate when other work shares the machine.
awk -F'\t' -v first="${LABELS[0]}" -v labels="${LABELS[*]}" '
function med(list, n,   a, i, j, t) {
	split(list, a, " "); n = 0
	for (i in a) n++
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return sprintf("%.2f (%.2f-%.2f)", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2, a[1], a[n])
}
{ rps[$1, $2, $3] = $4; p99[$1, $2, $3] = $5; pool[$1, $2, $3] = $6; all[$1, $2, $3] = $7; sw[$1, $2, $3] = $8
  concs[$2] = 1; rounds[$3] = 1 }
END {
	n = split(labels, L, " ")
	for (c in concs) {
		for (k = 1; k <= n; k++) {
			r = ""; q = ""; ratio = ""; pr = ""; w = ""; t = ""; cr = ""; x = ""
			for (rd in rounds) {
				r = r " " rps[L[k], c, rd]; q = q " " p99[L[k], c, rd]
				w = w " " pool[L[k], c, rd]; t = t " " all[L[k], c, rd]
				x = x " " sw[L[k], c, rd]
				if (rps[first, c, rd] > 0)
					ratio = ratio " " rps[L[k], c, rd] / rps[first, c, rd]
				if (p99[first, c, rd] > 0)
					pr = pr " " p99[L[k], c, rd] / p99[first, c, rd]
				if (all[first, c, rd] > 0)
					cr = cr " " all[L[k], c, rd] / all[first, c, rd]
			}
			printf "ab: c=%s %-10s req/s %s  p99 ms %s  CPU us/request: pool %s, all %s  pool switches/request %s", c, L[k], med(r), med(q), med(w), med(t), med(x)
			if (k > 1) printf "  /%s: req/s %sx p99 %sx CPU %sx", first, med(ratio), med(pr), med(cr)
			printf "\n"
		}
	}
}' "$RESULTS"
exit "$failed"
