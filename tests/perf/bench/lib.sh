# shellcheck shell=bash
# lib.sh - sourced by the benchmark scripts (tests/perf/bench/bench.sh, ab.sh,
# dispatch_bench.sh, scale.sh, profile.sh and tests/ha/ha_bench.sh): what
# they all need to start the stack and read wrk's result line
# (tests/perf/bench/common.lua), the CPU accounting per process group from
# /proc, and the counts per request of one worker under a tool.
#
#   . "$SRC_DIR/tests/perf/bench/lib.sh"   (after setting SRC_DIR and BUILD_DIR)
#
# It exports top_srcdir and top_builddir for tests/lib/harness.sh and sources it.

top_srcdir=$SRC_DIR
top_builddir=$BUILD_DIR
export top_srcdir top_builddir
# shellcheck source-path=SCRIPTDIR source=../../lib/harness.sh
. "$SRC_DIR/tests/lib/harness.sh"

# bench_early_marks_wait CMD...: a fresh (or restarted) Redis holds no
# early marks (doc/refunds-and-disputes.md, "Early marks"), so payhook probes MySQL in every
# payment's INSERT until a worker has rebuilt them, lock_ttl_ms and a second
# after the first request that noticed. Runs CMD (a second of warm-up load)
# until they are rebuilt, 60 s at most; returns at once when no rebuild is
# under way (a build without early marks, or marks complete).
bench_early_marks_wait() {
	local end=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$end" ]; do
		[ -n "$(harness_redis --scan --pattern 'payhook:early-rebuild:*')" ] &&
			[ -z "$(harness_redis --scan --pattern 'payhook:early-complete:*')" ] ||
			return 0
		"$@"
	done
}

# bench_start [redis] [mariadb]: harness_init, then the servers named (both
# when none is), each printing its "# harness:" line. Fails when one does
# not start.
bench_start() {
	local what
	harness_init || return 1
	[ "$#" -gt 0 ] || set -- redis mariadb
	for what in "$@"; do
		case $what in
		redis) harness_start_redis || return 1 ;;
		mariadb) harness_start_mariadb || return 1 ;;
		esac
	done
}

# kv LINE KEY: the value of KEY=... in a result line.
kv() {
	local w
	for w in $1; do
		case $w in "$2="*) printf '%s\n' "${w#*=}"; return 0 ;; esac
	done
	printf '\n'
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

# median: the median of the numbers on standard input, one a line ("-" for
# none).
median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
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
	harness_running "$1" && printf '%s\n' "$HARNESS_PID"
}

# cpu_begin PID...: a snapshot of the workers given, the web server
# (WEB_PID, default LIGHTTPD_PID), mariadbd, redis-server and the load
# generator; cpu_end REQUESTS sets CPU_US to the microseconds of CPU per
# request of each of the five (total, user).
cpu_snapshot() {
	# shellcheck disable=SC2046,SC2086 # no PID: no argument
	printf '%s %s %s %s %s\n' "$(ticks "$@")" "$(ticks ${WEB_PID:-${LIGHTTPD_PID:-}})" \
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

# ---- counts per request of one worker (profile.sh, bench.sh) --------------

# profile_run NAME TOOL N PROGRAM BASE SOCKDIR: one worker of PROGRAM under
# TOOL (callgrind, memcheck, strace) serving N requests at BASE/NAME (a
# location of lighttpd on SOCKDIR/NAME.sock); sets PROFILE_COUNT to the
# instructions, allocations or system calls the whole process made (empty
# when the run failed); its output is in SOCKDIR/NAME.TOOL.N.out. The
# requests are signed payments (the caller's $BENCH_BIN/sign_pool with its
# $SECRET, signature_scheme standard), or unsigned with PROFILE_SIGNED=0.
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
		timeout 600 wrk -t1 -c1 -d590s --timeout 60s -s "$SRC_DIR/tests/perf/bench/signed.lua" \
			"$base/$name" -- "$tag" 99999999999999 "${pool_args[@]}" \
			>"$dir/$tag.wrk" 2>&1 &
	else
		timeout 600 wrk -t1 -c1 -d590s --timeout 60s -s "$SRC_DIR/tests/perf/bench/new_id.lua" \
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
	# shellcheck disable=SC2034 # the caller's
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
