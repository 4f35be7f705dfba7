#!/bin/bash
# demo.sh - payhook end to end on your machine: throwaway redis-server and
# mariadbd, a payhook pool of 4 workers started by spawn-fcgi (conf/spawn-fcgi.sh) and
# lighttpd on 127.0.0.1:8080 (conf/lighttpd-spawn-fcgi.conf). It sends four
# signed webhooks, shows the answers and the rows, then serves until Ctrl-C.
#
#   bash conf/demo.sh [BUILD_DIR [STATE_DIR]]
#
# BUILD_DIR holds the built app/payhook, app/payhook-sign and tools/freeport
# (default: the source tree; build first: ./configure && make). STATE_DIR
# (default ./demo-state) keeps the servers' data, sockets and logs between
# runs. DEMO_PORT=N picks another port.
# Needs redis-server, mariadbd (mariadb-server), lighttpd, spawn-fcgi, curl.
# Everything it starts is stopped, by PID, when it exits.
set -u

srcdir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$srcdir}
state=${2:-./demo-state}
port=${DEMO_PORT:-8080}
secret=whsec_cGF5aG9vay1kZW1vLXNlY3JldC0wMTIzNDU2Nzg5

die() {
	printf 'demo: %s\n' "$*" >&2
	exit 1
}

build=$(cd "$build" 2>/dev/null && pwd) || die "no build folder $1"
for f in app/payhook app/payhook-sign tools/freeport; do
	[ -x "$build/$f" ] || die "$build/$f is missing: build first (./configure && make)"
done
for tool in redis-server mariadbd mariadb-install-db mariadb lighttpd spawn-fcgi curl; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed"
done
mkdir -p "$state/pids" || die "cannot create $state"
state=$(cd "$state" && pwd)
payhook=$build/app/payhook
sign=$build/app/payhook-sign
url=http://127.0.0.1:$port/webhook

# The local server harness (tools/harness.sh, which the tests use too) runs
# the servers, with the state folder as its folder (its public functions
# only: see the top of tools/harness.sh).
# shellcheck disable=SC2034 # read by tools/harness.sh
top_srcdir=$srcdir top_builddir=$build
# shellcheck source-path=SCRIPTDIR source=../tools/harness.sh
. "$srcdir/tools/harness.sh" || exit 1
export HARNESS_DIR=$state

# Stops every process recorded in $state/pids (each checked by its start
# time, so a recycled PID is never signalled).
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	local f
	local -a names=()
	# Output may be gone (demo.sh | head): never die here of SIGPIPE.
	trap '' INT TERM HUP PIPE
	for f in "$state"/pids/*; do
		[ -e "$f" ] && names+=("${f##*/}")
	done
	if [ "${#names[@]}" -gt 0 ]; then
		printf '\ndemo: stopping %s\n' "${names[*]}"
		harness_stop "${names[@]}"
	fi
	printf 'demo: stopped; %s is kept (remove it to start afresh)\n' "$state"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
# Without this, a closed standard output would kill the script unstopped.
trap 'exit 141' PIPE


# ---- backends ---------------------------------------------------------------

harness_start_redis >/dev/null || die "redis-server did not start (log: $state/redis/redis.log)"
harness_start_mariadb >/dev/null || die "mariadbd did not start (log: $state/mariadb/error.log)"
echo "demo: redis-server on 127.0.0.1:$REDIS_PORT, mariadbd on 127.0.0.1:$MYSQL_PORT (database payhook)"

# ---- workers: spawn-fcgi passes its environment on to payhook ----------------

export PAYHOOK_WEBHOOK_SECRET=$secret PAYHOOK_LOG_LEVEL=info
cp "$srcdir/conf/payhook.conf.example" "$state/payhook.conf"
harness_fill "$srcdir/conf/spawn-fcgi.sh" "$state/spawn-fcgi.sh" \
	SOCKET="$state/payhook.sock" WORKERS=4 PIDFILE="$state/payhook.pid" \
	PAYHOOK="$payhook" CONFIG="$state/payhook.conf" LOG="$state/payhook.log"
# The PID file of an earlier run is not this one's.
rm -f "$state/payhook.pid"
sh "$state/spawn-fcgi.sh" </dev/null >"$state/payhook.out" 2>&1
# The master (payhook-master) and each worker recorded, so that cleanup
# stops them.
harness_record_master payhook 4 "$?" ||
	die "the pool did not start (log: $state/payhook.log)"
echo "demo: a payhook master ($HARNESS_MASTER_PID) keeping 4 workers on $state/payhook.sock (log: $state/payhook.log)"

# ---- lighttpd in the foreground, as a background job of this script ---------

harness_fill "$srcdir/conf/lighttpd-spawn-fcgi.conf" "$state/lighttpd-payhook.conf" \
	SOCKET="$state/payhook.sock"
HARNESS_LIGHTTPD_PORT=$port harness_start_lighttpd lighttpd \
	"$state/lighttpd-payhook.conf" >/dev/null ||
	die "lighttpd did not come up on 127.0.0.1:$port (another server there? try DEMO_PORT=8081)"
harness_wait_http "$url" 405 10 "$LIGHTTPD_PID" ||
	die "lighttpd does not reach the workers (log: $LIGHTTPD_LOG)"
echo "demo: lighttpd on $url (log: $LIGHTTPD_LOG)"

# ---- four deliveries ---------------------------------------------------------

# send TITLE BODY: signs BODY with payhook-sign --curl, runs the command and
# prints the status and payhook's answer.
send() {
	local cmd status
	cmd=$(printf '%s' "$2" | "$sign" --secret "$secret" --curl "$url") || exit 1
	status=$(sh -c "$cmd"' -o "$0" -w "%{http_code}"' "$state/response") || status=000
	printf '\n%s\n  body:   %s\n  answer: HTTP %s %s\n' "$1" "$2" "$status" \
		"$(cat "$state/response" 2>/dev/null)"
}

tx="demo-$(date +%Y%m%d-%H%M%S)"
send "1. first delivery: recorded" \
	'{"transaction_id":"'"$tx"'","amount":1999,"currency":"EUR"}'
send "2. the provider delivers it again: already recorded, still 200" \
	'{"transaction_id":"'"$tx"'","amount":1999,"currency":"EUR"}'
send "3. same id, another amount: a conflict, the row stays as it is" \
	'{"transaction_id":"'"$tx"'","amount":2500,"currency":"EUR"}'
send "4. a bad body (amount as a string): rejected, no row" \
	'{"transaction_id":"'"$tx"'-bad","amount":"19.99","currency":"EUR"}'

printf '\nThe payments table (last 10 rows):\n'
mariadb --no-defaults --socket="$MYSQL_SOCKET" --user="$(id -un)" --table \
	--database=payhook -e "SELECT * FROM (SELECT id, transaction_id, amount,
	currency, received_at FROM payments ORDER BY id DESC LIMIT 10) AS last
	ORDER BY id" </dev/null

cat <<EOF

Send your own webhook (signed with the demo secret; payhook-sign prints the
curl command, sh runs it):

  printf '%s' '{"transaction_id":"my-tx-1","amount":500,"currency":"EUR"}' |
    $(printf %q "$sign") --secret $secret --curl $url | sh

Look at the rows:
  mariadb --no-defaults --socket=$MYSQL_SOCKET --user=$(id -un) payhook -e 'SELECT * FROM payments'
Worker log: $state/payhook.log

Serving on $url until Ctrl-C.
EOF

wait "$LIGHTTPD_PID"
echo "demo: lighttpd exited" >&2
exit 1
