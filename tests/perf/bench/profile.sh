#!/bin/bash
# profile.sh - what one request costs a payhook worker, in counts that do
# not move with the machine's load: instructions (callgrind), heap
# allocations (memcheck's "total heap usage") and system calls (strace -c)
# per request, for one or more builds side by side. `make bench-profile`
# runs it.
#
#   bash tests/perf/bench/profile.sh [LABEL=PROGRAM ...]
#
# (Default: now=$BUILD_DIR/app/payhook.) Each PROGRAM runs as one FastCGI
# worker behind lighttpd with the harness's Redis and MariaDB, under each
# tool twice, serving exactly N1 then N2 requests (--max-requests) from one
# wrk connection; a figure per request is (count(N2) - count(N1)) / (N2 -
# N1), so the start-up and the first requests (connections, prepared
# statements, caches) cancel. The requests are the benchmark's signed
# payments (sign_pool, signature_scheme standard, a new transaction id
# each), or unsigned with PROFILE_SIGNED=0. Settings: PROFILE_N1 (100),
# PROFILE_N2 (400), PROFILE_TOOLS ("callgrind memcheck strace"),
# PROFILE_KEEP=DIR keeps each run's output there (LABEL.callgrind.N.out
# for callgrind_annotate). Exit status 1 when a run did not record every
# request it answered, 99 when the stack cannot start.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${SRC_DIR:-$(dirname "$(dirname "$(dirname "$here")")")}
BUILD_DIR=${BUILD_DIR:-$PWD}
SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
BENCH_BIN=$BUILD_DIR/tests/perf/bench

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# profile_run NAME TOOL N PROGRAM BASE SOCKDIR: one worker of PROGRAM under
# TOOL (callgrind, memcheck, strace) serving N requests at BASE/NAME (a
# location of lighttpd on SOCKDIR/NAME.sock); sets PROFILE_COUNT to the
# instructions, allocations or system calls the whole process made (empty
# when the run failed); its output is in SOCKDIR/NAME.TOOL.N.out.
profile_run() {
	local name=$1 tool=$2 n=$3 program=$4 base=$5 dir=$6
	local tag=$name-$tool-$n out=$6/$name.$tool.$n.out wrk_pid deadline
	local -a cmd pool_args=()
	PROFILE_COUNT=
	rm -f "$out"
	case $tool in
	callgrind) cmd=(valgrind --tool=callgrind --callgrind-out-file="$out") ;;
	memcheck) cmd=(valgrind --tool=memcheck --leak-check=no --log-file="$out") ;;
	strace) cmd=(strace -f -c -o "$out") ;;
	*) return 1 ;;
	esac
	if [ "${PROFILE_SIGNED:-1}" != 0 ]; then
		"$BENCH_BIN/sign_pool" --secret "$SECRET" --count "$n" --tag "$tag" \
			--out "$dir/$tag.pool.lua" || return 1
		pool_args=("$dir/$tag.pool.lua" 1)
	fi
	PAYHOOK_SIGNATURE_SCHEME=$([ "${PROFILE_SIGNED:-1}" != 0 ] && echo standard || echo none) \
		PAYHOOK_LOG_LEVEL=warn PAYHOOK_WEBHOOK_SECRET=$SECRET \
		PAYHOOK_SIGNATURE_TOLERANCE_S=86400 \
		harness_spawn_pool "$name" 1 "$dir/$name.sock" -- "${cmd[@]}" \
		"$program" --max-requests "$n" || return 1
	if [ "${PROFILE_SIGNED:-1}" != 0 ]; then
		timeout 600 wrk -t1 -c1 -d590s --timeout 60s -s "$here/signed.lua" \
			"$base/$name" -- "$tag" 99999999999999 "${pool_args[@]}" \
			>"$dir/$tag.wrk" 2>&1 &
	else
		timeout 600 wrk -t1 -c1 -d590s --timeout 60s -s "$here/new_id.lua" \
			"$base/$name" -- "$tag" 99999999999999 >"$dir/$tag.wrk" 2>&1 &
	fi
	wrk_pid=$!
	harness_record "$name-wrk" "$wrk_pid"
	deadline=$(($(harness_now_ms) + 300000))
	while harness_running "$name-0"; do
		if [ "$(harness_now_ms)" -ge "$deadline" ]; then
			echo "profile: $name under $tool did not finish $n requests" >&2
			break
		fi
		sleep 0.2
	done
	harness_stop "$name-wrk" "$name-0"
	wait "$wrk_pid" 2>/dev/null
	rm -f "$dir/$tag.pool.lua"
	# Every request answered and recorded.
	if [ "$(harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE '$tag-%'")" != "$n" ]; then
		echo "profile: $name under $tool: not $n rows for $n requests" >&2
		return 1
	fi
	case $tool in
	callgrind)
		PROFILE_COUNT=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p; s/^totals: *\([0-9]*\).*/\1/p' "$out" | head -n 1) ;;
	memcheck)
		PROFILE_COUNT=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' "$out" | tr -d , | tail -n 1) ;;
	strace)
		PROFILE_COUNT=$(awk '$NF == "total" { print $4 }' "$out") ;;
	esac
	[ -n "$PROFILE_COUNT" ]
}

# profile_per_request NAME TOOL N1 N2 PROGRAM BASE SOCKDIR: the two runs;
# sets PROFILE_PER_REQUEST ("-" when a run failed).
profile_per_request() {
	local name=$1 tool=$2 n1=$3 n2=$4 c1
	PROFILE_PER_REQUEST=-
	profile_run "$name" "$tool" "$n1" "$5" "$6" "$7" || return 1
	c1=$PROFILE_COUNT
	profile_run "$name" "$tool" "$n2" "$5" "$6" "$7" || return 1
	PROFILE_PER_REQUEST=$(awk -v a="$c1" -v b="$PROFILE_COUNT" -v n1="$n1" -v n2="$n2" \
		'BEGIN { printf "%.1f\n", (b - a) / (n2 - n1) }')
}

# strace_per_call OUT1 OUT2 N1 N2: the system calls per request by name.
strace_per_call() {
	awk -v n1="$3" -v n2="$4" '
		FNR == 1 { file++ }
		$1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" {
			c[file, $NF] = $4; names[$NF] = 1 }
		END { for (s in names) { d = (c[2, s] - c[1, s]) / (n2 - n1)
			if (d >= 0.05) printf "%s=%.2f\n", s, d } }' "$1" "$2" | sort -t= -k2 -gr | tr '\n' ' '
}

# Run as a script (not sourced by bench.sh).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	N1=${PROFILE_N1:-100} N2=${PROFILE_N2:-400}
	read -r -a TOOLS <<<"${PROFILE_TOOLS:-callgrind memcheck strace}"
	[ "$#" -gt 0 ] || set -- "now=$BUILD_DIR/app/payhook"
	for tool in wrk lighttpd spawn-fcgi redis-server mariadbd valgrind strace; do
		command -v "$tool" >/dev/null 2>&1 ||
			{ echo "profile: $tool is not installed" >&2; exit 99; }
	done
	[ -x "$BENCH_BIN/sign_pool" ] ||
		{ echo "profile: $BENCH_BIN/sign_pool is not built (make bench-profile builds it)" >&2; exit 99; }
	bench_start >/dev/null || exit 99
	W=$HARNESS_DIR/profile
	mkdir -p "$W" || exit 99
	export PAYHOOK_REDIS_UNAVAILABLE=db_only
	LABELS=() PROGRAMS=()
	for arg in "$@"; do
		LABELS+=("${arg%%=*}")
		PROGRAMS+=("${arg#*=}")
		[ -x "${arg#*=}" ] || { echo "profile: ${arg#*=} is not a program" >&2; exit 2; }
	done
	# A fresh Redis holds no early marks: a pool of two rebuilds them
	# before anything counts.
	PAYHOOK_SIGNATURE_SCHEME=none harness_spawn_pool warm 2 "$W/warm.sock" -- \
		"${PROGRAMS[0]}" || exit 99
	{
		printf 'server.modules += ( "mod_fastcgi" )\nfastcgi.server += (\n'
		for label in warm "${LABELS[@]}"; do
			printf '\t"/%s" => (( "socket" => "%s", "check-local" => "disable" )),\n' \
				"$label" "$W/$label.sock"
		done
		printf ')\n'
	} >"$W/lighttpd-profile.conf"
	harness_start_lighttpd lighttpd "$W/lighttpd-profile.conf" >/dev/null || exit 99
	BASE=http://127.0.0.1:$LIGHTTPD_PORT
	warm() {
		timeout 30 wrk -t1 -c4 -d1s -s "$here/new_id.lua" "$BASE/warm" -- \
			warm 99999999999999 >/dev/null 2>&1
	}
	warm
	bench_early_marks_wait warm
	harness_stop warm-0 warm-1
	failed=0
	printf '# profile: %s requests, per request = (count(N2) - count(N1)) / (N2 - N1) with N1 = %s, N2 = %s\n' \
		"$([ "${PROFILE_SIGNED:-1}" != 0 ] && echo signed || echo unsigned)" "$N1" "$N2"
	for i in "${!LABELS[@]}"; do
		label=${LABELS[$i]} line="profile: $label"
		for tool in "${TOOLS[@]}"; do
			if ! profile_per_request "$label" "$tool" "$N1" "$N2" "${PROGRAMS[$i]}" "$BASE" "$W"; then
				failed=1
			fi
			case $tool in
			callgrind) line="$line instructions=$PROFILE_PER_REQUEST" ;;
			memcheck) line="$line allocations=$PROFILE_PER_REQUEST" ;;
			strace) line="$line syscalls=$PROFILE_PER_REQUEST"
				calls=$(strace_per_call "$W/$label.strace.$N1.out" "$W/$label.strace.$N2.out" "$N1" "$N2") ;;
			esac
		done
		printf '%s\n' "$line"
		[ -n "${calls:-}" ] && printf 'profile: %s syscalls: %s\n' "$label" "$calls"
		calls=
		if [ -n "${PROFILE_KEEP:-}" ]; then
			mkdir -p "$PROFILE_KEEP" && cp "$W/$label".*.out "$PROFILE_KEEP/" 2>/dev/null
		fi
	done
	exit "$failed"
fi
