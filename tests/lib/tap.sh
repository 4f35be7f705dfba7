# shellcheck shell=bash
# tap.sh - the one TAP producer of payhook's shell tests, sourced by each of
# them: one line per assertion, "ok - WHAT" or "not ok - WHAT", "# ..." for
# diagnostics, and at exit the plan "1..N", which automake's tap-driver.sh
# reads, so that make check reports every assertion. The lines carry no
# number: assertions made in background subshells would race for one, and
# TAP numbers unnumbered lines itself.
#
#   . "$top_srcdir/tests/lib/tap.sh"
#   ok WHAT                       one assertion that held
#   not_ok WHAT                   one that did not (returns 0: callers go on)
#   expect WHAT EXPECTED ACTUAL   ok when equal, else not_ok showing both;
#                                 returns 1 when they differ
#   skip REASON                   skips the whole script (exit 77)
#   bail REASON                   the test cannot go on (exit 99)
#   tap_failed, tap_passed        print how many not_ok, ok so far
#   tap_cleanup COMMAND           run COMMAND at exit, before the plan
#
# The plan comes from tap_finish, the EXIT trap this file installs;
# harness_init keeps it, after its own cleanup. At exit, status 77 (a skip)
# becomes the plan "1..0 # SKIP REASON" when no assertion was made (else
# one "ok # SKIP" for the rest); 99
# "Bail out!"; any other non-zero status with no "not ok" line becomes one
# "not ok" naming it, so a script that died is a failure, not a pass. The
# exit status stays what it was (make check's driver runs with
# --ignore-exit and reads the lines; make check-ha reads the status).
# The counts live in a temporary file, so that assertions made in
# subshells count too.

TAP_COUNTS=$(mktemp "${TMPDIR:-/tmp}/payhook-tap.XXXXXX") || {
	echo "Bail out! tap.sh: mktemp failed"
	exit 99
}
TAP_SKIP_REASON=
TAP_CLEANUP=

ok() {
	printf 'ok - %s\n' "$*"
	printf . >>"$TAP_COUNTS"
}

not_ok() {
	printf 'not ok - %s\n' "$*"
	printf x >>"$TAP_COUNTS"
	return 0
}

# expect WHAT EXPECTED ACTUAL
expect() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1: expected '$2', got '$3'"
		return 1
	fi
}

skip() {
	TAP_SKIP_REASON=$*
	printf '# SKIP: %s\n' "$*"
	exit 77
}

bail() {
	printf 'Bail out! %s\n' "$*"
	exit 99
}

tap_failed() {
	tr -cd x <"$TAP_COUNTS" | wc -c
}

tap_passed() {
	tr -cd . <"$TAP_COUNTS" | wc -c
}

# tap_cleanup COMMAND: a script's own cleanup, run at exit before the plan
# (instead of a trap of its own, which would replace tap_finish).
tap_cleanup() {
	TAP_CLEANUP=$1
}

# The EXIT trap: the plan, from the exit status and the counts. Keeps the
# exit status.
tap_finish() {
	local rc=$? total failed
	# A failing step here must not end the trap before the plan (errexit
	# holds in traps too).
	set +e
	if [ -n "$TAP_CLEANUP" ]; then
		eval "$TAP_CLEANUP"
	fi
	total=$(wc -c <"$TAP_COUNTS")
	failed=$(tap_failed)
	if [ "$rc" = 77 ] && [ "$total" = 0 ]; then
		printf '1..0 # SKIP %s\n' "${TAP_SKIP_REASON:-exit status 77}"
	elif [ "$rc" = 77 ]; then
		printf 'ok # SKIP the rest: %s\n1..%s\n' \
			"${TAP_SKIP_REASON:-exit status 77}" "$((total + 1))"
	elif [ "$rc" = 99 ]; then
		printf 'Bail out! exit status 99 (a server or tool did not start)\n'
	else
		if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
			printf 'not ok - the script exited with status %s\n' "$rc"
			total=$((total + 1))
		fi
		printf '1..%s\n' "$total"
	fi
	rm -f "$TAP_COUNTS"
	exit "$rc"
}
trap tap_finish EXIT
