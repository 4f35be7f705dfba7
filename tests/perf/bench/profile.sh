#!/bin/bash
# profile.sh - what one request costs a payhook worker, in counts that do
# not move with the machine's load: instructions (callgrind), heap
# allocations (memcheck's "total heap usage") and system calls (strace -c)
# per request, for one or more builds side by side. `make bench-profile`
# runs it; the runs are lib.sh's profile_run, which bench.sh uses too.
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
