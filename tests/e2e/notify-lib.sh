# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034 # top_builddir, HARNESS_DIR...: the test's and the harness's; NQ_*: for the test
# notify-lib.sh - what the tests of the providers that only notify share
# (sourced by notify-queue.test, notify-fetch.test and the benchmark after
# tests/e2e/common.sh): the real stack (a payhook pool behind lighttpd on a
# real mariadbd and redis-server) with the mollie, mercadopago and
# gocardless profiles, their notifications sent with curl as each
# provider sends them (payhook-sign's samples and signatures), the fake
# APIs (tests/servers/notify_api) and the rows.

NQ_MP_SECRET=your_secret_key_here
NQ_GC_SECRET=ED7D658C-D8EB-4941-948B-3973214F2D49
NQ_MOLLIE_KEY=test_dHar4XY7LxsDOtmnkVtjNVWXLSlXsM
NQ_MP_KEY=APP_USR-6295877106812064-notify-tests
NQ_GC_KEY=sandbox_notify_tests_token
NQ_SIGN=$top_builddir/app/payhook-sign
NQ_API=$top_builddir/tests/servers/notify_api
NQ_RECONCILE=$top_builddir/app/payhook-reconcile

# nq_env: the profiles, their secrets and keys, for the pool started next
# and for payhook-reconcile.
nq_env() {
	export PAYHOOK_PROVIDERS="standard mollie mercadopago gocardless"
	export PAYHOOK_MERCADOPAGO_SECRET=$NQ_MP_SECRET
	export PAYHOOK_GOCARDLESS_SECRET=$NQ_GC_SECRET
	export PAYHOOK_MOLLIE_API_KEY=$NQ_MOLLIE_KEY
	export PAYHOOK_MERCADOPAGO_API_KEY=$NQ_MP_KEY
	export PAYHOOK_GOCARDLESS_API_KEY=$NQ_GC_KEY
	export PAYHOOK_RECONCILE_RATE_PER_S=200
}

# nq_start NAME WORKERS: the pool and lighttpd; the base URL in NQ_BASE.
nq_start() {
	harness_fill "$top_srcdir/conf/lighttpd-spawn-fcgi.conf" \
		"$HARNESS_DIR/lighttpd-$1.conf" SOCKET="$HARNESS_DIR/$1.sock" ||
		return 1
	e2e_start_pool "$1" "$2" || return 1
	harness_start_lighttpd "lighttpd_$1" "$HARNESS_DIR/lighttpd-$1.conf" ||
		return 1
	NQ_BASE=http://127.0.0.1:$LIGHTTPD_PORT
	harness_wait_http "$NQ_BASE/webhook" 405 10 || return 1
}

# nq_post PATH CONTENT-TYPE BODYFILE [curl args...]: POSTs; the status in
# NQ_STATUS, the body in NQ_BODY, the headers in NQ_HEADERS.
nq_post() {
	local path=$1 type=$2 file=$3 out
	shift 3
	out=$(mktemp "$E2E_DIR/nq.XXXXXX") || return 1
	NQ_STATUS=$(curl -sS -m 30 -o "$out" -D "$out.h" -w '%{http_code}' \
		-H "Content-Type: $type" "$@" --data-binary "@$file" \
		"$NQ_BASE$path") || NQ_STATUS=000
	NQ_BODY=$(cat "$out")
	NQ_HEADERS=$(tr -d '\r' <"$out.h")
	rm -f "$out" "$out.h"
}

# mollie_notify ID: Mollie's notification of payment ID (a form post).
mollie_notify() {
	printf 'id=%s' "$1" >"$E2E_DIR/mollie.form"
	nq_post /webhook/mollie application/x-www-form-urlencoded \
		"$E2E_DIR/mollie.form"
}

# mp_notify ID [SECRET [QUERY-ID]]: Mercado Pago's notification of payment
# ID, signed by payhook-sign (x-signature over the query's data.id,
# QUERY-ID when given, and x-request-id).
mp_notify() {
	local id=$1 secret=${2:-$NQ_MP_SECRET} qid=${3:-$1} req
	local -a headers
	req=$(cat /proc/sys/kernel/random/uuid)
	"$NQ_SIGN" --provider mercadopago --sample payment.updated \
		--transaction-id "$id" >"$E2E_DIR/mp.json" || return 1
	mapfile -t headers < <("$NQ_SIGN" --provider mercadopago \
		--secret "$secret" --id "$req" "$E2E_DIR/mp.json")
	nq_post "/webhook/mercadopago?data.id=$qid&type=payment" \
		application/json "$E2E_DIR/mp.json" \
		-H "${headers[0]}" -H "${headers[1]}"
}

# gc_notify FILE [SECRET]: GoCardless's webhook FILE, signed.
gc_notify() {
	local sig
	sig=$("$NQ_SIGN" --provider gocardless --secret "${2:-$NQ_GC_SECRET}" \
		"$1" | sed -n 's/^Webhook-Signature: //p')
	nq_post /webhook/gocardless application/json "$1" \
		-H "Webhook-Signature: $sig"
}

# gc_events RESOURCE:ACTION:ID ...: a webhook body of those events (a
# payment's or a refund's), in $E2E_DIR/gc.json.
gc_events() {
	local spec type action id n=0 events=""
	for spec in "$@"; do
		IFS=: read -r type action id <<<"$spec"
		n=$((n + 1))
		local link="\"payment\":\"$id\""
		[ "$type" = refunds ] && link="\"refund\":\"$id\""
		events+="${events:+,}{\"id\":\"EV$(printf '%012d' "$RANDOM$n")\",\"created_at\":\"2024-03-20T09:13:51.404Z\",\"resource_type\":\"$type\",\"action\":\"$action\",\"links\":{$link},\"details\":{\"origin\":\"gocardless\"}}"
	done
	printf '{"events":[%s],"meta":{"webhook_id":"WB0000BD1QXC44"}}' \
		"$events" >"$E2E_DIR/gc.json"
}

# nq_sql "SQL": columns apart by one space.
nq_sql() {
	harness_sql "SET time_zone = '+00:00'; $1" | tr '\t' ' '
}

# nq_pending PROVIDER OBJECT: "state notices attempts" of its newest row.
nq_row() {
	nq_sql "SELECT state, notices, attempts FROM notifications WHERE
		provider = '$1' AND object_id = '$2' ORDER BY id DESC LIMIT 1"
}

# nq_api MODE: the fake API of MODE, serving $E2E_DIR/MODE.objects with
# the faults of $E2E_DIR/MODE.faults, logging to $E2E_DIR/MODE.log; its
# base exported as PAYHOOK_<MODE>_API_BASE.
nq_api() {
	local mode=$1 key deadline port
	case $mode in
	mollie) key=$NQ_MOLLIE_KEY ;;
	mercadopago) key=$NQ_MP_KEY ;;
	*) key=$NQ_GC_KEY ;;
	esac
	: >>"$E2E_DIR/$mode.objects"
	: >"$E2E_DIR/$mode.faults"
	: >"$E2E_DIR/$mode.log"
	rm -f "$E2E_DIR/$mode.port"
	"$NQ_API" --mode "$mode" --key "$key" --objects "$E2E_DIR/$mode.objects" \
		--faults "$E2E_DIR/$mode.faults" --log "$E2E_DIR/$mode.log" \
		>"$E2E_DIR/$mode.port" 2>"$E2E_DIR/$mode.err" &
	harness_record "api_$mode" "$!"
	deadline=$(($(harness_now_ms) + 5000))
	until read -r port 2>/dev/null <"$E2E_DIR/$mode.port"; do
		[ "$(harness_now_ms)" -lt "$deadline" ] || return 1
		sleep 0.02
	done
	export "PAYHOOK_${mode^^}_API_BASE=http://127.0.0.1:$port"
}

# nq_fetches MODE PATTERN: how many requests of the fake's log match.
nq_fetches() {
	grep -cE "$2" "$E2E_DIR/$1.log"
}
