# shellcheck shell=bash
# common.sh - sourced by the end-to-end tests: the same table of webhook
# requests, sent with curl through a real web server to a pool of payhook
# workers, asserting statuses, bodies and rows in payments.
#
#   . "$top_srcdir/tests/e2e/common.sh"
#   e2e_init                  harness + redis + mariadb + PAYHOOK_* for workers
#   e2e_table URL             the table; returns non-zero on the first failure
#   e2e_gone, e2e_start_pool: see below; the public functions of
#   tests/lib/harness.sh (harness_start_lighttpd, harness_wait_http, harness_fill
#   for conf/ files...) for the rest
#
# Each assertion is a TAP line (tests/lib/tap.sh: ok, not_ok, expect, skip);
# e2e_ok, e2e_fail and e2e_expect are those, counting failures in E2E_FAILED.

# shellcheck source-path=SCRIPTDIR source=../lib/tap.sh
. "$top_srcdir/tests/lib/tap.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/harness.sh
. "$top_srcdir/tests/lib/harness.sh"

E2E_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
# Stripe's endpoint secrets are whsec_ strings used as the key as they are.
E2E_STRIPE_SECRET=whsec_e2e_stripe_endpoint_secret
E2E_FAILED=0

e2e_init() {
	harness_init || return 1
	harness_start_redis || return 1
	harness_start_mariadb || return 1
	harness_export_env || return 1
	export PAYHOOK_WEBHOOK_SECRET=$E2E_SECRET
	export PAYHOOK_SIGNATURE_SCHEME=standard
	# Two profiles on one pool: /webhook is standard, /webhook/stripe Stripe.
	export PAYHOOK_PROVIDERS="standard stripe"
	export PAYHOOK_STRIPE_SECRET=$E2E_STRIPE_SECRET
	export PAYHOOK_LOG_LEVEL=${PAYHOOK_LOG_LEVEL:-info}
	E2E_DIR=$HARNESS_DIR/e2e
	mkdir -p "$E2E_DIR"
	E2E_PAYHOOK=$top_builddir/app/payhook
	E2E_SIGN=$top_builddir/app/payhook-sign
	export E2E_PAYHOOK E2E_SIGN E2E_DIR
}

e2e_ok() { ok "$@"; }
e2e_fail() {
	not_ok "$@"
	E2E_FAILED=$((E2E_FAILED + 1))
	return 1
}

# e2e_expect WHAT EXPECTED ACTUAL
e2e_expect() {
	expect "$@" || {
		E2E_FAILED=$((E2E_FAILED + 1))
		return 1
	}
}

# e2e_post URL BODY [curl args...]: signed POST; sets E2E_STATUS, E2E_BODY and
# E2E_HEADERS (the response headers, CRs removed).
e2e_post() {
	local url=$1 body=$2
	shift 2
	# mktemp: $$ is the same in every background subshell, and so may
	# be $RANDOM's sequence, so concurrent posts once shared a file.
	local req
	req=$(mktemp "$E2E_DIR/req.XXXXXX") || { E2E_STATUS=000; return; }
	local -a headers=()
	printf '%s' "$body" >"$req.in"
	mapfile -t headers < <("$E2E_SIGN" --secret "$E2E_SECRET" "$req.in")
	E2E_STATUS=$(curl -sS -m 30 -o "$req.out" -D "$req.hdr" -w '%{http_code}' \
		-H 'Content-Type: application/json' \
		-H "${headers[0]}" -H "${headers[1]}" -H "${headers[2]}" \
		--data-binary "@$req.in" "$@" "$url") || E2E_STATUS=000
	E2E_BODY=$(cat "$req.out" 2>/dev/null)
	E2E_HEADERS=$(tr -d '\r' <"$req.hdr" 2>/dev/null)
	rm -f "$req" "$req.in" "$req.out" "$req.hdr"
}

# The "result" field of a JSON body, without a JSON parser in shell: the body
# is written by payhook's json-c renderer as {"result":"...",...}.
e2e_result() {
	sed -n 's/^{"result":"\([a-z_]*\)".*/\1/p' <<<"$1"
}

e2e_rows() {
	harness_sql "SELECT COUNT(*) FROM payments WHERE transaction_id = '$1'"
}

e2e_body() {
	printf '{"transaction_id":"%s","amount":%s,"currency":"%s"}' "$1" "$2" "$3"
}

# The operator paths as doc/deploy.md's examples (nginx) set them, one segment below
# /webhook: e2e_operator_env exports them (and their token) for the workers
# a test starts next; e2e_operator_paths URL TAG asks each through the web
# server in front (URL is its /webhook) and expects payhook's own answer,
# not the web server's 404.
# METRICS_FILE is the metrics_file of workers without a master (spawn-fcgi
# -F N, lighttpd's bin-path, mod_fcgid), which share counters only there.
E2E_OPERATOR_TOKEN=operator-token-for-the-e2e-tests
# shellcheck disable=SC2120 # METRICS_FILE is optional
e2e_operator_env() {
	export PAYHOOK_HEALTH_PATH=/webhook/health PAYHOOK_METRICS_PATH=/webhook/metrics
	export PAYHOOK_PING_PATH=/webhook/ping PAYHOOK_STATUS_PATH=/webhook/status
	export PAYHOOK_STATUS_PAGE_PATH=/webhook/status-page
	export PAYHOOK_METRICS_TOKEN=$E2E_OPERATOR_TOKEN
	[ -z "${1:-}" ] || export PAYHOOK_METRICS_FILE=$1
}
# e2e_operator_lines [METRICS_FILE]: the same as key = value lines, for a
# configuration file.
e2e_operator_lines() {
	printf '%s\n' 'health_path = /webhook/health' 'metrics_path = /webhook/metrics' \
		'ping_path = /webhook/ping' 'status_path = /webhook/status' \
		'status_page_path = /webhook/status-page' "metrics_token = $E2E_OPERATOR_TOKEN"
	[ -z "${1:-}" ] || printf 'metrics_file = %s\n' "$1"
}
e2e_operator_paths() {
	local url=$1 tag=$2 auth="Authorization: Bearer $E2E_OPERATOR_TOKEN" out
	out=$(mktemp "$E2E_DIR/op.XXXXXX") || return 1
	# get PATH [curl args...]: "status content-type" of GET URL/PATH.
	get() {
		local path=$1
		shift
		curl -sS -m 30 -o "$out" -w '%{http_code} %{content_type}' "$@" \
			"$url/$path" 2>/dev/null || printf '000 -'
	}
	e2e_expect "$tag ping_path /webhook/ping" "200 pong" \
		"$(get ping | cut -d' ' -f1) $(cat "$out")"
	e2e_expect "$tag health_path /webhook/health" "200 ok" \
		"$(get health | cut -d' ' -f1) $(grep -q '"status":"ok"' "$out" && echo ok)"
	e2e_expect "$tag metrics_path /webhook/metrics, with the token" "200 yes" \
		"$(get metrics -H "$auth" | cut -d' ' -f1) $(grep -q '^payhook_' "$out" && echo yes)"
	e2e_expect "$tag metrics_path without the token: payhook's 401" "401" \
		"$(get metrics | cut -d' ' -f1)"
	e2e_expect "$tag status_path /webhook/status?json, with the token" "200 true" \
		"$(get 'status?json' -H "$auth" | cut -d' ' -f1) $(grep -q '"workers_total":' "$out" && echo true)"
	e2e_expect "$tag status_page_path /webhook/status-page, with the token" "200 text/html 1" \
		"$(get status-page -H "$auth" | cut -d';' -f1) $(grep -c '</html>' "$out")"
	e2e_expect "$tag status_page_path without the token: payhook's 401" "401" \
		"$(get status-page | cut -d' ' -f1)"
	rm -f "$out"
}

# e2e_table URL [TAG]: every outcome a web server must carry through.
e2e_table() {
	local url=$1 tag=${2:-e2e} id status i pids=() codes
	id="$tag-$(date +%s)-$$"

	e2e_post "$url" "$(e2e_body "$id" 1999 EUR)"
	e2e_expect "$tag first delivery status" 200 "$E2E_STATUS"
	e2e_expect "$tag first delivery result" processed "$(e2e_result "$E2E_BODY")"
	e2e_expect "$tag one row" 1 "$(e2e_rows "$id")"
	e2e_expect "$tag lock released" 0 "$(harness_redis EXISTS "lock:webhook:tx:$id")"

	e2e_post "$url" "$(e2e_body "$id" 1999 EUR)"
	e2e_expect "$tag redelivery status" 200 "$E2E_STATUS"
	e2e_expect "$tag redelivery result" duplicate "$(e2e_result "$E2E_BODY")"

	e2e_post "$url" "$(e2e_body "$id" 2000 EUR)"
	e2e_expect "$tag conflicting redelivery status" 422 "$E2E_STATUS"
	e2e_expect "$tag conflicting redelivery result" conflict "$(e2e_result "$E2E_BODY")"
	e2e_expect "$tag still one row" 1 "$(e2e_rows "$id")"
	e2e_expect "$tag row untouched" 1999 \
		"$(harness_sql "SELECT amount FROM payments WHERE transaction_id = '$id'")"

	e2e_post "$url" '{"transaction_id":"'"$id"'-bad","amount":1.5,"currency":"EUR"}'
	e2e_expect "$tag invalid body status" 400 "$E2E_STATUS"
	e2e_expect "$tag invalid body result" invalid "$(e2e_result "$E2E_BODY")"
	e2e_expect "$tag invalid body: no row" 0 "$(e2e_rows "$id-bad")"

	status=$(curl -sS -m 30 -o /dev/null -w '%{http_code}' \
		-H 'Content-Type: application/json' \
		-H 'webhook-id: msg_1' -H "webhook-timestamp: $(date +%s)" \
		-H 'webhook-signature: v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' \
		--data-binary "$(e2e_body "$id-unsigned" 1 EUR)" "$url") || status=000
	e2e_expect "$tag bad signature status" 401 "$status"
	e2e_expect "$tag bad signature: no row" 0 "$(e2e_rows "$id-unsigned")"

	E2E_HEADERS=$(curl -sS -m 30 -o /dev/null -D - "$url" | tr -d '\r')
	e2e_expect "$tag GET status" 405 "$(sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' <<<"$E2E_HEADERS")"
	e2e_expect "$tag GET Allow header" "Allow: POST" "$(grep -i '^Allow:' <<<"$E2E_HEADERS")"

	head -c 70000 /dev/zero | tr '\0' ' ' >"$E2E_DIR/big"
	status=$(curl -sS -m 30 -o /dev/null -w '%{http_code}' \
		-H 'Content-Type: application/json' \
		--data-binary "@$E2E_DIR/big" "$url") || status=000
	e2e_expect "$tag oversized body status" 413 "$status"

	# A same-id storm: 50 concurrent deliveries, exactly one row.
	id="$tag-storm-$(date +%s)-$$"
	for i in $(seq 1 50); do
		(e2e_post "$url" "$(e2e_body "$id" 777 USD)"
		 printf '%s %s\n' "$E2E_STATUS" "$(e2e_result "$E2E_BODY")" \
			>"$E2E_DIR/storm.$i") &
		pids+=($!)
	done
	wait "${pids[@]}"
	codes=$(cat "$E2E_DIR"/storm.* | sort | uniq -c | tr -s ' ' | tr '\n' ';')
	rm -f "$E2E_DIR"/storm.*
	e2e_expect "$tag storm: one row" 1 "$(e2e_rows "$id")"
	e2e_expect "$tag storm: exactly one processed" 1 \
		"$(grep -o '[0-9]* 200 processed' <<<"$codes" | cut -d' ' -f1)"
	if grep -Eq ' (5[0-9][0-9]|000) ' <<<"$codes"; then
		e2e_fail "$tag storm: no 5xx or lost request ($codes)"
	else
		e2e_ok "$tag storm: no 5xx ($codes)"
	fi
	[ "$E2E_FAILED" = 0 ]
}

# e2e_post_provider URL PROVIDER BODY [payhook-sign args...]: POSTs BODY to
# URL signed as PROVIDER signs (payhook-sign --provider); sets E2E_STATUS and
# E2E_BODY.
e2e_post_provider() {
	local url=$1 provider=$2 body=$3 h
	local req
	req=$(mktemp "$E2E_DIR/preq.XXXXXX") || { E2E_STATUS=000; return; }
	local -a args=()
	shift 3
	printf '%s' "$body" >"$req.in"
	while IFS= read -r h; do
		args+=(-H "$h")
	done < <("$E2E_SIGN" --provider "$provider" "$@" "$req.in")
	E2E_STATUS=$(curl -sS -m 30 -o "$req.out" -w '%{http_code}' \
		-H 'Content-Type: application/json' "${args[@]}" \
		--data-binary "@$req.in" "$url") || E2E_STATUS=000
	E2E_BODY=$(cat "$req.out" 2>/dev/null)
	rm -f "$req" "$req.in" "$req.out"
}

# e2e_provider_table URL [TAG]: the provider routes through the web server:
# a Stripe payment at URL/stripe (the row is Stripe's), its redelivery, the
# same id from the standard profile (a second row), a Stripe event that
# records nothing (ignored), another secret (401), a profile that is not
# enabled (404), and one Stripe event from 16 processes at once (one row).
e2e_provider_table() {
	local url=$1 tag=${2:-e2e} id evt body i codes
	local -a pids=()
	id="pi_$tag-$(date +%s)-$$"
	evt="evt_$tag-$(date +%s)-$$"
	body=$("$E2E_SIGN" --provider stripe --sample payment_intent.succeeded \
		--transaction-id "$id" --amount 2599 --currency usd --event-id "$evt")
	e2e_post_provider "$url/stripe" stripe "$body" --secret "$E2E_STRIPE_SECRET"
	e2e_expect "$tag stripe payment" "200 processed" "$E2E_STATUS $(e2e_result "$E2E_BODY")"
	e2e_expect "$tag stripe row: provider, amount, currency, event id" \
		"stripe 2599 USD $evt" \
		"$(harness_sql "SELECT provider, amount, currency, event_id FROM payments WHERE transaction_id = '$id'" | tr '\t' ' ')"
	e2e_post_provider "$url/stripe" stripe "$body" --secret "$E2E_STRIPE_SECRET"
	e2e_expect "$tag stripe redelivery" "200 duplicate" "$E2E_STATUS $(e2e_result "$E2E_BODY")"
	e2e_post "$url" "$(e2e_body "$id" 2599 USD)"
	e2e_expect "$tag the same id from the standard profile" "200 processed" \
		"$E2E_STATUS $(e2e_result "$E2E_BODY")"
	e2e_expect "$tag two rows for one id from two providers" "standard stripe" \
		"$(harness_sql "SELECT provider FROM payments WHERE transaction_id = '$id' ORDER BY provider" | tr '\n' ' ' | sed 's/ $//')"
	body=$("$E2E_SIGN" --provider stripe --sample payment_intent.created \
		--transaction-id "$id-created" --amount 2599 --currency usd)
	e2e_post_provider "$url/stripe" stripe "$body" --secret "$E2E_STRIPE_SECRET"
	e2e_expect "$tag stripe event that records nothing" "200 ignored 0" \
		"$E2E_STATUS $(e2e_result "$E2E_BODY") $(e2e_rows "$id-created")"
	e2e_post_provider "$url/stripe" stripe "$body" --secret whsec_someone_else
	e2e_expect "$tag stripe event signed with another secret" 401 "$E2E_STATUS"
	e2e_post_provider "$url/paddle" paddle "$body" --secret pdl_x
	e2e_expect "$tag a profile that is not enabled" "404 not_found" \
		"$E2E_STATUS $(e2e_result "$E2E_BODY")"

	id="pi_$tag-storm-$(date +%s)-$$"
	body=$("$E2E_SIGN" --provider stripe --sample payment_intent.succeeded \
		--transaction-id "$id" --amount 700 --currency eur)
	for i in $(seq 1 16); do
		(e2e_post_provider "$url/stripe" stripe "$body" --secret "$E2E_STRIPE_SECRET"
		 printf '%s %s\n' "$E2E_STATUS" "$(e2e_result "$E2E_BODY")" \
			>"$E2E_DIR/pstorm.$i") &
		pids+=($!)
	done
	wait "${pids[@]}"
	codes=$(cat "$E2E_DIR"/pstorm.* | sort | uniq -c | tr -s ' ' | tr '\n' ';')
	rm -f "$E2E_DIR"/pstorm.*
	e2e_expect "$tag stripe storm: one row ($codes)" 1 "$(e2e_rows "$id")"
	e2e_expect "$tag stripe storm: exactly one processed" 1 \
		"$(grep -o '[0-9]* 200 processed' <<<"$codes" | cut -d' ' -f1)"
	if grep -Eq ' (5[0-9][0-9]|000) ' <<<"$codes"; then
		e2e_fail "$tag stripe storm: no 5xx or lost request ($codes)"
	else
		e2e_ok "$tag stripe storm: no 5xx"
	fi
	[ "$E2E_FAILED" = 0 ]
}

# ---- workers ----------------------------------------------------------------

# e2e_gone PID [SECONDS]: waits until process PID has exited (a zombie counts:
# the workers' parent may be a PID 1 that never reaps them).
e2e_gone() {
	local deadline=$(($(harness_now_ms) + ${2:-5} * 1000))
	while harness_starttime "$1" >/dev/null; do
		[ "$(harness_now_ms)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# e2e_start_pool NAME WORKERS [PAYHOOK ARGS...]: conf/spawn-fcgi.sh, the file
# under test (spawn-fcgi starts a payhook master with --workers WORKERS),
# with its socket, PID file and log in HARNESS_DIR; the master and its
# workers recorded by harness_record_master; sets POOL_MASTER, POOL_PIDS (the
# workers), POOL_SOCKET and POOL_LOG. The configuration file is E2E_CONFIG
# when set, else a copy of conf/payhook.conf.example.
e2e_start_pool() {
	local name=$1 workers=$2 rc
	shift 2
	POOL_SOCKET=$HARNESS_DIR/$name.sock
	POOL_LOG=$HARNESS_DIR/$name.log
	POOL_PIDS=()
	harness_fill "$top_srcdir/conf/spawn-fcgi.sh" "$HARNESS_DIR/$name.sh" \
		SOCKET="$POOL_SOCKET" WORKERS="$workers" \
		PIDFILE="$HARNESS_DIR/$name.pid" PAYHOOK="$E2E_PAYHOOK" \
		CONFIG="${E2E_CONFIG:-$HARNESS_DIR/payhook.conf}" \
		LOG="$POOL_LOG" || return 1
	# The example configuration as it is: every line a comment, so the
	# workers run on defaults and the PAYHOOK_* of e2e_init.
	if [ -z "${E2E_CONFIG:-}" ]; then
		cp "$top_srcdir/conf/payhook.conf.example" "$HARNESS_DIR/payhook.conf"
	fi
	# A PID file of an earlier pool of this name is not this one's.
	rm -f "$HARNESS_DIR/$name.pid"
	sh "$HARNESS_DIR/$name.sh" "$@" </dev/null >"$HARNESS_DIR/$name.out" 2>&1
	rc=$?
	harness_record_master "$name" "$workers" "$rc" || return 1
	# shellcheck disable=SC2034 # for the caller
	POOL_MASTER=$HARNESS_MASTER_PID
	# shellcheck disable=SC2034 # for the caller
	POOL_PIDS=("${HARNESS_POOL_PIDS[@]}")
}

# e2e_start_workers NAME WORKERS [PAYHOOK ARGS...]: workers without a master,
# as spawn-fcgi -F WORKERS starts them (nothing replaces one that exits), on
# $HARNESS_DIR/NAME.sock, their log appended to $HARNESS_DIR/NAME.log; sets
# POOL_PIDS, POOL_SOCKET and POOL_LOG.
e2e_start_workers() {
	local name=$1 workers=$2
	shift 2
	POOL_SOCKET=$HARNESS_DIR/$name.sock
	POOL_LOG=$HARNESS_DIR/$name.log
	harness_spawn_pool "$name" "$workers" "$POOL_SOCKET" -- \
		"$E2E_PAYHOOK" "$@" || return 1
	# shellcheck disable=SC2034 # for the caller
	POOL_PIDS=("${HARNESS_POOL_PIDS[@]}")
}

# e2e_workers NAME: the current workers of pool NAME's master, one per line.
e2e_workers() {
	harness_children "$POOL_MASTER"
}

# e2e_finish: the exit status for the test script.
e2e_finish() {
	printf '# %d assertion(s) failed\n' "$E2E_FAILED"
	[ "$E2E_FAILED" = 0 ]
}
