#!/bin/bash
# demo.sh - payhook end to end on your machine: throwaway redis-server and
# mariadbd, a payhook pool of 4 workers started by spawn-fcgi (conf/spawn-fcgi.sh) and
# lighttpd on 127.0.0.1:8080 (conf/lighttpd-spawn-fcgi.conf). It sends four
# signed webhooks and shows the answers and the rows; then a Mollie
# notification (Mollie notifies only a payment's id), queued, which
# payhook-reconcile fetches from a local fake of Mollie's API
# (tests/servers/notify_api) and records; then it serves until Ctrl-C.
#
#   bash conf/demo.sh [BUILD_DIR [STATE_DIR]]
#
# BUILD_DIR holds the built app/payhook, app/payhook-sign,
# app/payhook-reconcile, tests/servers/notify_api and tools/freeport
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
for f in app/payhook app/payhook-sign app/payhook-reconcile \
	tests/servers/notify_api tools/freeport; do
	[ -x "$build/$f" ] || die "$build/$f is missing: build first (./configure && make)"
done
for tool in redis-server mariadbd mariadb-install-db mariadb lighttpd spawn-fcgi curl; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed"
done
mkdir -p "$state/pids" || die "cannot create $state"
state=$(cd "$state" && pwd)
payhook=$build/app/payhook
sign=$build/app/payhook-sign
reconcile=$build/app/payhook-reconcile
url=http://127.0.0.1:$port/webhook
# The demo's Mollie payment (its id tr_ and letters and digits) and the
# key the fake of Mollie's API asks for (a test key's form; no real one).
mollie_id=tr_Demo$(date +%Y%m%d%H%M%S)
mollie_key=test_payhookDemoNoRealMollieKey00

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

# ---- a stand-in for Mollie's API ---------------------------------------------

# Mollie's notification names only the payment; payhook-reconcile asks
# Mollie's API for the facts. The demo has no Mollie account, so a local
# fake of that API (the tests' own) serves the one payment it knows, paid,
# as GET /v2/payments/{id} answers (docs.mollie.com's example, abridged).
now=$(date -u +%Y-%m-%dT%H:%M:%S+00:00)
printf '%s%s%s%s\n' '{"resource":"payment","id":"'"$mollie_id"'","mode":"test",' \
	'"createdAt":"'"$now"'","paidAt":"'"$now"'","status":"paid",' \
	'"amount":{"value":"24.95","currency":"EUR"},"description":"payhook demo",' \
	'"amountRefunded":{"value":"0.00","currency":"EUR"}}' >"$state/mollie.objects"
: >"$state/mollie.faults"
rm -f "$state/mollie-api.port"
"$build/tests/servers/notify_api" --mode mollie --key "$mollie_key" \
	--objects "$state/mollie.objects" --faults "$state/mollie.faults" \
	--log "$state/mollie-api.log" >"$state/mollie-api.port" \
	2>"$state/mollie-api.err" &
harness_record mollie_api "$!"
mollie_port=
for _ in $(seq 50); do
	read -r mollie_port 2>/dev/null <"$state/mollie-api.port" && break
	sleep 0.1
done
[ -n "$mollie_port" ] || die "the fake Mollie API did not start (log: $state/mollie-api.err)"
echo "demo: a fake of Mollie's API on 127.0.0.1:$mollie_port (log: $state/mollie-api.log)"

# ---- workers: spawn-fcgi passes its environment on to payhook ----------------

# The standard profile (its secret) and Mollie's, whose notifications are
# unsigned: its API key is what payhook-reconcile fetches with.
export PAYHOOK_WEBHOOK_SECRET=$secret PAYHOOK_LOG_LEVEL=info \
	PAYHOOK_PROVIDERS="standard mollie" PAYHOOK_MOLLIE_API_KEY=$mollie_key \
	PAYHOOK_MOLLIE_API_BASE=http://127.0.0.1:$mollie_port
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

# send TITLE BODY [PROVIDER]: signs BODY with payhook-sign --curl (as
# PROVIDER does, to its URL; default: standard, with the demo secret), runs
# the command and prints the status and payhook's answer.
send() {
	local cmd status
	if [ -n "${3:-}" ]; then
		cmd=$(printf '%s' "$2" | "$sign" --provider "$3" --curl "$url/$3")
	else
		cmd=$(printf '%s' "$2" | "$sign" --secret "$secret" --curl "$url")
	fi || exit 1
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

# rows SQL: the rows SQL selects, as a table.
rows() {
	mariadb --no-defaults --socket="$MYSQL_SOCKET" --user="$(id -un)" --table \
		--database=payhook -e "$1" </dev/null
}

printf '\nThe payments table (last 10 rows):\n'
rows "SELECT * FROM (SELECT id, transaction_id, amount, currency,
	received_at FROM payments ORDER BY id DESC LIMIT 10) AS last ORDER BY id"

# ---- a provider that only notifies: Mollie ------------------------------------

# payhook-sign writes Mollie's notification (a form post, unsigned).
send "5. Mollie notifies only a payment's id: queued, not a payment yet" \
	"$("$sign" --provider mollie --sample payment --transaction-id "${mollie_id#tr_}")" \
	mollie
printf '\nIts row in table notifications, pending until fetched:\n'
rows "SELECT id, provider, object_id, state, notices, attempts FROM
	notifications WHERE provider = 'mollie' AND object_id = '$mollie_id'"
printf '\n6. payhook-reconcile --once --notify (the cron line; as a daemon it fetches\n'
printf '   within notify_poll_ms) asks Mollie'"'"'s API for the payment and records it:\n'
# The same run, kept as a script to run again: the servers' settings and
# Mollie's profile, from this environment.
{
	echo '#!/bin/bash'
	echo "# payhook-reconcile --once --notify on the demo's servers (written by conf/demo.sh)"
	for v in PAYHOOK_MYSQL_HOST PAYHOOK_MYSQL_PORT PAYHOOK_MYSQL_USER \
		PAYHOOK_MYSQL_PASSWORD PAYHOOK_MYSQL_DATABASE PAYHOOK_REDIS_HOST \
		PAYHOOK_REDIS_PORT PAYHOOK_PROVIDERS PAYHOOK_WEBHOOK_SECRET \
		PAYHOOK_MOLLIE_API_KEY PAYHOOK_MOLLIE_API_BASE; do
		printf 'export %s=%q\n' "$v" "${!v}"
	done
	printf 'exec %q -c %q --once --notify "$@"\n' "$reconcile" "$state/payhook.conf"
} >"$state/fetch-notifications.sh"
bash "$state/fetch-notifications.sh" 2>>"$state/payhook-reconcile.log" |
	sed 's/^/  /'
printf '\nThe notification done, the payment recorded (source webhook: what\n'
printf 'Mollie'"'"'s API said of the notified payment):\n'
rows "SELECT id, provider, object_id, state, notices, attempts FROM
	notifications WHERE provider = 'mollie' AND object_id = '$mollie_id'"
rows "SELECT id, provider, transaction_id, amount, currency, source,
	received_at FROM payments WHERE provider = 'mollie' AND
	transaction_id = '$mollie_id'"

cat <<EOF

Send your own webhook (signed with the demo secret; payhook-sign prints the
curl command, sh runs it):

  printf '%s' '{"transaction_id":"my-tx-1","amount":500,"currency":"EUR"}' |
    $(printf %q "$sign") --secret $secret --curl $url | sh

Notify as Mollie (unsigned), then fetch (the fake API knows only
$mollie_id: another id is answered 404, and its notification rejected,
as a forged one would be):

  printf '%s' 'id=tr_MyPayment1' |
    $(printf %q "$sign") --provider mollie --curl $url/mollie | sh
  bash $state/fetch-notifications.sh

Look at the rows:
  mariadb --no-defaults --socket=$MYSQL_SOCKET --user=$(id -un) payhook -e 'SELECT * FROM payments'
  mariadb --no-defaults --socket=$MYSQL_SOCKET --user=$(id -un) payhook -e 'SELECT * FROM notifications'
Worker log: $state/payhook.log

Serving on $url until Ctrl-C.
EOF

wait "$LIGHTTPD_PID"
echo "demo: lighttpd exited" >&2
exit 1
