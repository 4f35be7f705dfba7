# shellcheck shell=bash
# shellcheck disable=SC2154 # top_builddir: from the Makefile or harness.sh
# dispatch-common.sh - sourced by the payhook-dispatch tests
# (dispatch.test, dispatch-lifecycle.test): a real mariadbd
# (tests/lib/harness.sh), the programs under test, small timeouts, and the
# helpers that make a database, start a tests/servers/http_target and a dispatcher,
# and judge what they did. Exits 77 when jq is missing, 99 when the harness
# cannot start.

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
# ok, not_ok, expect, skip: the TAP lines.
# shellcheck source=../lib/tap.sh
. "$top_srcdir/tests/lib/tap.sh"
command -v jq >/dev/null 2>&1 ||
	skip "jq is not installed (packaging/install-deps.sh installs it)"
# shellcheck source=../lib/harness.sh
. "$top_srcdir/tests/lib/harness.sh"

# check WHAT COMMAND...: ok when the command succeeds.
check() {
	local what=$1
	shift
	if "$@"; then
		ok "$what"
	else
		not_ok "$what"
	fi
}
# has WHAT OUTPUT REGEX: ok when OUTPUT has a line matching REGEX; else shows
# OUTPUT (on one line).
has() {
	if grep -qE -- "$3" <<<"$2"; then
		ok "$1"
	else
		not_ok "$1: no '$3' in: $(tr '\n' ' ' <<<"$2")"
	fi
}
# between WHAT LOW HIGH VALUE
between() {
	if [ "$4" -ge "$2" ] && [ "$4" -le "$3" ]; then
		ok "$1 ($4 in $2..$3)"
	else
		not_ok "$1: $4 not in $2..$3"
	fi
}

harness_init || exit 99
harness_start_mariadb || exit 99
T0=$(harness_now_ms)

DISPATCH=$top_builddir/app/payhook-dispatch
TARGET=$top_builddir/tests/servers/http_target
SIGN=$top_builddir/app/payhook-sign
for bin in "$DISPATCH" "$TARGET" "$SIGN"; do
	if [ ! -x "$bin" ]; then
		echo "# $bin is not built" >&2
		exit 99
	fi
done
W=$HARNESS_DIR/dispatch
mkdir -p "$W"

# Small timeouts, so a lease is 10.5 s: dispatch_lease_ms must exceed
# dispatch_timeout_ms (1000) + 2 round trips of 1 + 3 x 1 s + 1000.
LEASE_MS=10500
SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
export PAYHOOK_SIGNATURE_SCHEME=none
export PAYHOOK_MYSQL_CONNECT_TIMEOUT_S=1 PAYHOOK_MYSQL_READ_TIMEOUT_S=1
export PAYHOOK_MYSQL_WRITE_TIMEOUT_S=1 PAYHOOK_LOCK_TTL_MS=9500
export PAYHOOK_DISPATCH_TIMEOUT_MS=1000 PAYHOOK_DISPATCH_LEASE_MS=$LEASE_MS
export PAYHOOK_DISPATCH_POLL_MS=50 PAYHOOK_DISPATCH_BACKOFF_MS=200
export PAYHOOK_DISPATCH_BACKOFF_MAX_MS=5000 PAYHOOK_LOG_LEVEL=info
unset PAYHOOK_DISPATCH_URL PAYHOOK_DISPATCH_COMMAND PAYHOOK_DISPATCH_SECRET \
	PAYHOOK_CONFIG

# ---- helpers ------------------------------------------------------------------

# new_db NAME: a database d_NAME with db/schema.sql, for one scenario. (The
# helpers below take NAME.)
new_db() {
	harness_sql "CREATE DATABASE d_$1;
		GRANT ALL ON d_$1.* TO 'payhook'@'127.0.0.1';
		GRANT ALL ON d_$1.* TO 'payhook'@'localhost';
		USE d_$1; $(cat "$top_srcdir/db/schema.sql")"
}

# sql NAME "SQL": in database d_NAME, in UTC as payhook's sessions are.
sql() {
	harness_sql "USE d_$1; SET time_zone = '+00:00'; $2"
}

# insert DB PREFIX N: payments PREFIX-1..PREFIX-N as payhook records them.
insert() {
	sql "$1" "INSERT INTO payments (provider, transaction_id, amount,
		currency, payload) SELECT 'standard', CONCAT('$2-', seq), seq,
		'EUR', CONCAT('{\"transaction_id\":\"$2-', seq, '\",\"amount\":',
		seq, ',\"currency\":\"EUR\"}') FROM seq_1_to_$3"
}

# insert_raw DB TXID EVENT_ID PAYLOAD_FILE: one payment with the exact bytes
# of PAYLOAD_FILE (as a hex literal) and an event id ('' for NULL).
insert_raw() {
	local hex event=NULL
	hex=$(od -An -v -tx1 "$4" | tr -d ' \n')
	[ -n "$3" ] && event="'$3'"
	sql "$1" "INSERT INTO payments (provider, transaction_id, event_id,
		amount, currency, payload) VALUES ('standard', '$2', $event, 4200,
		'EUR', X'$hex')"
}

# count DB WHERE: rows of payments matching WHERE.
count() {
	sql "$1" "SELECT COUNT(*) FROM payments WHERE $2"
}

# wait_for WHAT TIMEOUT_MS COMMAND...: until COMMAND succeeds; prints
# "not ok" and fails after TIMEOUT_MS.
wait_for() {
	local what=$1 timeout=$2 deadline=$(($(harness_now_ms) + $2))
	shift 2
	until "$@"; do
		if [ "$(harness_now_ms)" -ge "$deadline" ]; then
			not_ok "$what: not within $timeout ms"
			return 1
		fi
		sleep 0.05
	done
}

# is DB WHERE N: exactly N rows match WHERE.
is() {
	[ "$(count "$1" "$2")" = "$3" ]
}

# at_least DB WHERE N: N rows or more match WHERE.
at_least() {
	local n
	n=$(count "$1" "$2")
	[ -n "$n" ] && [ "$n" -ge "$3" ]
}

# start_target NAME [PORT]: an HTTP target answering 200 (on PORT, else one
# the kernel chose); sets PORT_<NAME>.
start_target() {
	local port='' deadline=$(($(harness_now_ms) + 5000))
	echo 200 >"$W/$1.control"
	: >"$W/$1.record"
	rm -f "$W/$1.port"
	"$TARGET" --control "$W/$1.control" --record "$W/$1.record" \
		${2:+--port "$2"} >"$W/$1.port" 2>"$W/$1.target.err" &
	harness_record "target-$1" "$!"
	until read -r port 2>/dev/null <"$W/$1.port"; do
		if [ "$(harness_now_ms)" -ge "$deadline" ]; then
			echo "# target $1 did not start" >&2
			return 1
		fi
		sleep 0.02
	done
	printf -v "PORT_$1" '%s' "$port"
}

# control NAME LINE: how target NAME answers from now on.
control() {
	echo "$2" >"$W/$1.control"
}

# records NAME: the lines target NAME recorded.
records() {
	wc -l <"$W/$1.record" | tr -d ' '
}

# records_are NAME N: target NAME recorded N requests.
records_are() {
	[ "$(records "$1")" = "$2" ]
}

# field NAME N: field N (tab-separated) of every record of target NAME.
field() {
	cut -f "$2" "$W/$1.record"
}

declare -A PID
# start NAME DB [VAR=VALUE...]: a dispatcher of database d_DB delivering to
# target DB (unless PAYHOOK_DISPATCH_COMMAND is given), its log in NAME.log.
start() {
	local name=$1 db=$2 port_var="PORT_$2"
	shift 2
	env PAYHOOK_MYSQL_DATABASE="d_$db" \
		PAYHOOK_DISPATCH_URL="http://127.0.0.1:${!port_var:-}/hook" \
		"$@" "$DISPATCH" >>"$W/$name.log" 2>&1 &
	PID[$name]=$!
	harness_record "d-$name" "${PID[$name]}"
}

# stop NAME: SIGTERM, then its exit status (124 after 10 s).
stop() {
	local pid=${PID[$1]} i
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 200; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			return
		fi
		sleep 0.05
	done
	return 124
}

# logged NAME PATTERN: lines of NAME.log matching the extended regex.
logged() {
	grep -cE "$2" "$W/$1.log"
}

# logged_times NAME REGEX N: NAME.log has N lines matching REGEX.
logged_times() {
	[ "$(logged "$1" "$2")" = "$3" ]
}

# gone PID: the process has ended (a zombie counts as ended).
gone() {
	! harness_starttime "$1" >/dev/null 2>&1
}

show_log() {
	harness_log_tail "$W/$1.log"
}

# metric NAME SERIES: the value of SERIES in metrics file NAME.metrics, as
# payhook --stats (and metrics_path) renders it; "" when absent.
metric() {
	PAYHOOK_METRICS_FILE="$W/$1.metrics" "$top_builddir/app/payhook" --stats 2>/dev/null |
		awk -v s="$2" '$1 == s {print $2}'
}

# lines_are FILE N: FILE has N non-empty lines.
lines_are() {
	[ "$(grep -c . "$1" 2>/dev/null)" = "$2" ]
}

# metric_is NAME SERIES VALUE
metric_is() {
	[ "$(metric "$1" "$2")" = "$3" ]
}
