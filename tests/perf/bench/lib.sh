# shellcheck shell=bash
# lib.sh - sourced by the benchmark scripts (tests/perf/bench/bench.sh, ab.sh,
# dispatch_bench.sh, scale.sh and tests/ha/ha_bench.sh): what they all need
# to start the stack and read wrk's result line (tests/perf/bench/common.lua), and
# the CPU accounting per process group from /proc.
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
