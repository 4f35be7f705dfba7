# shellcheck shell=bash
# shellcheck disable=SC2154 # top_srcdir, W, KEY, DB: set by the sourcing test
# reconcile-common.sh - what the payhook-reconcile tests share (sourced by
# reconcile.test and reconcile-lists.test after tests/lib/harness.sh has
# started mariadbd and redis-server and W, the test's folder, exists).

# start_api MODE: tests/servers/provider_api in MODE with key $KEY, the
# events in $W/events, the faults in $W/faults, its log in $W/api.log;
# sets API_PORT.
start_api() {
	local deadline
	: >"$W/events" >"$W/faults" >"$W/api.log"
	rm -f "$W/api.port"
	"$top_builddir/tests/servers/provider_api" --mode "$1" --key "$KEY" \
		--events "$W/events" --faults "$W/faults" --log "$W/api.log" \
		>"$W/api.port" 2>"$W/api.err" &
	harness_record provider-api "$!"
	deadline=$(($(harness_now_ms) + 5000))
	until read -r API_PORT 2>/dev/null <"$W/api.port"; do
		[ "$(harness_now_ms)" -lt "$deadline" ] ||
			bail "provider_api did not start"
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
	"$top_builddir/app/payhook-reconcile" "$@" >"$W/$name.out" 2>"$W/$name.err"
	RC=$?
	OUT=$(cat "$W/$name.out")
}
# field NAME: NAME's value in the last run's provider line.
field() {
	sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$OUT" | head -1
}
# has NAME TEXT REGEX: ok when TEXT matches REGEX (grep -E).
has() {
	if grep -qE -- "$3" <<<"$2"; then
		ok "$1"
	else
		not_ok "$1: no '$3' in: $(tr '\n' ' ' <<<"$2")"
	fi
}
# between NAME LOW HIGH VALUE: ok when LOW <= VALUE <= HIGH.
between() {
	if [ "$4" -ge "$2" ] && [ "$4" -le "$3" ]; then
		ok "$1 ($4)"
	else
		not_ok "$1: $4 not in $2..$3"
	fi
}
# webhook_as PROFILE SECRET BODYFILE [SIGN-ARGS...]: the real payhook as
# plain CGI, the body signed as PROFILE's provider signs (payhook-sign with
# SIGN-ARGS, e.g. --url for Square); prints the status.
webhook_as() {
	local line name value profile=$1 secret=$2 file=$3
	shift 3
	local -a env=(REQUEST_METHOD=POST CONTENT_TYPE=application/json
		"CONTENT_LENGTH=$(wc -c <"$file")" "REQUEST_URI=/webhook/$profile")
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		name=${line%%:*}
		value=${line#*: }
		name=${name^^}
		env+=("HTTP_${name//-/_}=$value")
	done < <("$top_builddir/app/payhook-sign" --provider "$profile" \
		--secret "$secret" "$@" "$file")
	env "${env[@]}" "$top_builddir/app/payhook" <"$file" 2>>"$W/cgi.err" |
		sed -n '1s/^Status: \([0-9]*\).*/\1/p'
}
# cursor_of PROFILE: the cursor's Unix time, or NULL.
cursor_of() {
	sql "SELECT IFNULL(UNIX_TIMESTAMP(cursor_at), 'NULL') FROM
		reconcile_cursors WHERE provider = '$1'"
}
