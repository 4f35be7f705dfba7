#!/bin/bash
# shellcheck disable=SC2154,SC2034 # W, RECONCILE...: the sourcing test's; API_PORT, RC, OUT, DB: for it
# reconcile-lib.sh - what the payhook-reconcile tests share (sourced by
# reconcile.test, reconcile-lists.test, reconcile-snapshots.test and
# reconcile-more.test after
# tests/lib/harness.sh has started redis-server and mariadbd): the fake
# provider API (one per provider in reconcile-lists.test), one
# database per scenario, a run of payhook-reconcile with its line's fields,
# a webhook through the real payhook as plain CGI, and the cursor row.
# The test sets W (its folder), RECONCILE, API, PAYHOOK and SIGN first.

# start_api MODE KEY [ARGS...]: tests/servers/provider_api in MODE with KEY
# (and ARGS, e.g. --ttl 2), serving $W/events with the faults of $W/faults
# and logging to $W/api.log; its port in API_PORT.
start_api() {
	local deadline
	: >"$W/events"
	: >"$W/faults"
	: >"$W/api.log"
	# A test may start one fake per provider: the last one's port must
	# not be read as this one's.
	rm -f "$W/api.port"
	# One fake at a time: the one before is stopped (recorded under the
	# same name, it would be left running when the test ends).
	harness_stop provider-api
	"$API" --mode "$1" --key "$2" --events "$W/events" \
		--faults "$W/faults" --log "$W/api.log" "${@:3}" >"$W/api.port" \
		2>"$W/api.err" &
	harness_record provider-api "$!"
	deadline=$(($(harness_now_ms) + 5000))
	until read -r API_PORT 2>/dev/null <"$W/api.port"; do
		[ "$(harness_now_ms)" -lt "$deadline" ] || bail "provider_api did not start"
		sleep 0.02
	done
}
# new_db NAME: database d_NAME with db/schema.sql; payhook uses it from now on.
new_db() {
	harness_sql "CREATE DATABASE d_$1;
		GRANT ALL ON d_$1.* TO 'payhook'@'127.0.0.1';
		GRANT ALL ON d_$1.* TO 'payhook'@'localhost';
		USE d_$1; $(cat "$top_srcdir/db/schema.sql")" || bail "new_db $1"
	export PAYHOOK_MYSQL_DATABASE=d_$1
	DB=d_$1
	: >"$W/events"
	: >"$W/faults"
}
# sql "SQL": in the scenario's database; columns separated by one space.
sql() {
	harness_sql "USE $DB; SET time_zone = '+00:00'; $1" | tr '\t' ' '
}
# run NAME ARGS...: payhook-reconcile; its status in RC, output in OUT.
run() {
	local name=$1
	shift
	"$RECONCILE" "$@" >"$W/$name.out" 2>"$W/$name.err"
	RC=$?
	OUT=$(cat "$W/$name.out")
}
# field NAME: NAME's value in the last run's provider line.
field() {
	sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$OUT" | head -1
}
has() {
	if grep -qE -- "$3" <<<"$2"; then
		ok "$1"
	else
		not_ok "$1: no '$3' in: $(tr '\n' ' ' <<<"$2")"
	fi
}
between() {
	if [ "$4" -ge "$2" ] && [ "$4" -le "$3" ]; then ok "$1 ($4)"; else not_ok "$1: $4 not in $2..$3"; fi
}
# signed_webhook PROVIDER SECRET BODYFILE [SIGN ARGS...]: the real payhook
# as plain CGI, the body signed as PROVIDER signs (payhook-sign with SIGN
# ARGS, e.g. --url for Square; with its headers: Shopify's topic too);
# prints the status.
signed_webhook() {
	local provider=$1 secret=$2 body=$3 line name value
	shift 3
	local -a env=(REQUEST_METHOD=POST CONTENT_TYPE=application/json
		"CONTENT_LENGTH=$(wc -c <"$body")" "REQUEST_URI=/webhook/$provider")
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		name=${line%%:*}
		value=${line#*: }
		name=${name^^}
		env+=("HTTP_${name//-/_}=$value")
	done < <("$SIGN" --provider "$provider" --secret "$secret" "$@" "$body")
	env "${env[@]}" "$PAYHOOK" <"$body" 2>>"$W/cgi.err" |
		sed -n '1s/^Status: \([0-9]*\).*/\1/p'
}
# cursor_of PROVIDER: its cursor_at (Unix seconds) or NULL.
cursor_of() {
	sql "SELECT IFNULL(UNIX_TIMESTAMP(cursor_at), 'NULL') FROM
		reconcile_cursors WHERE provider = '$1'"
}
