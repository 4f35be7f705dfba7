#!/bin/bash
# shellcheck disable=SC2154,SC2034 # seed, HARNESS_DIR, url...: chaos.sh's; notify_violations: for it
# notify.sh - sourced by chaos.sh (CHAOS_NOTIFY=1, the default): a provider
# that only notifies under the same faults as the webhooks. A fake Mollie
# (tests/servers/notify_api) holds payments that appear one by one while
# the schedule runs, every fifth one open first and paid a little later;
# each is notified as Mollie does (an unsigned form post id=tr_... through
# lighttpd, once or twice at once, again after a non-2xx answer as Mollie
# retries), and again when it turns paid. Two payhook-reconcile --notify
# daemons and a --once --notify run every 3 s (as cron would) fetch them
# through the same proxy to MariaDB as the workers; the schedule's
# mollie_outage makes the API answer 500, 429 with Retry-After, late or
# not at all for a while, and fetcher_kill SIGKILLs a daemon (restarted a
# second later).
#
# The rules, checked against MariaDB directly (not through the proxy):
#   - a notification answered 200 has its row in notifications committed
#     when the answer comes (no 200 without a queued row);
#   - each --once --notify run exits 0 or 1;
#   - after the faults, every notified paid payment is one row with the
#     amount the API holds (none lost, none twice), no notification is
#     left pending, none rejected, and an open payment recorded nothing
#     while it was open.

notify_api_bin=$BUILD_DIR/tests/servers/notify_api
notify_fetch_bin=$BUILD_DIR/app/payhook-reconcile
notify_key=test_ChaosMollieKeyNeverShown0123456789
notify_dir=$HARNESS_DIR/notify
notify_violations=0

# notify_setup: the fake API, and the configuration's keys for it.
notify_setup() {
	for bin in "$notify_api_bin" "$notify_fetch_bin"; do
		[ -x "$bin" ] || { echo "chaos: $bin is not built (make chaos builds it)" >&2; exit 2; }
	done
	command -v jq >/dev/null || { echo "chaos: jq is not installed" >&2; exit 2; }
	mkdir -p "$notify_dir" || exit 99
	: >"$notify_dir/objects"
	: >"$notify_dir/faults"
	: >"$notify_dir/notified"   # sent_ms id status queued
	: >"$notify_dir/payments"   # id amount (the API's, paid)
	: >"$notify_dir/opened"     # id (notified while open)
	: >"$notify_dir/once.rcs"
	: >"$notify_dir/violations"
	jq -c . "$SRC_DIR/tests/fixtures/providers/mollie/payment_paid.json" \
		>"$notify_dir/paid.json" || exit 99
	jq -c . "$SRC_DIR/tests/fixtures/providers/mollie/payment_open.json" \
		>"$notify_dir/open.json" || exit 99
	"$notify_api_bin" --mode mollie --key "$notify_key" \
		--objects "$notify_dir/objects" --faults "$notify_dir/faults" \
		--log "$notify_dir/api.log" >"$notify_dir/api.port" \
		2>"$notify_dir/api.err" &
	harness_record notify-api "$!"
	until read -r notify_api_port 2>/dev/null <"$notify_dir/api.port"; do
		harness_running notify-api || exit 99
		sleep 0.02
	done
	cat >>"$HARNESS_DIR/chaos.conf" <<EOF || exit 99
mollie_api_key = $notify_key
mollie_api_base = http://127.0.0.1:$notify_api_port
notify_poll_ms = 100
EOF
	# reconcile.sh's rate (50 a second) is ample for a payment a second;
	# a key set twice stops the programs.
	grep -q '^reconcile_rate_per_s' "$HARNESS_DIR/chaos.conf" ||
		echo 'reconcile_rate_per_s = 200' >>"$HARNESS_DIR/chaos.conf" ||
		exit 99
}

notify_violation() {
	printf 'chaos: VIOLATION: notify: %s (seed %s)\n' "$1" "$seed" >>"$notify_dir/violations"
}

# notify_post ID: Mollie's notification of ID through lighttpd; one line
# in notified, and the rule: a 200 has its row.
notify_post() {
	local id=$1 sent status queued=-
	sent=$(harness_now_ms)
	status=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' \
		-H 'Content-Type: application/x-www-form-urlencoded' \
		--data-binary "id=$id" "$url/mollie" 2>/dev/null)
	if [ "$status" = 200 ]; then
		queued=$(harness_sql "SELECT COUNT(*) FROM notifications WHERE
			provider = 'mollie' AND object_id = '$id'" 2>/dev/null) || queued=-
		[ "$queued" = - ] || [ "$queued" -ge 1 ] ||
			notify_violation "notification of $id answered 200 with no queued row"
	fi
	echo "$sent $id $status $queued" >>"$notify_dir/notified"
	[ "$status" = 200 ]
}

# notify_send ID: as Mollie sends it: once, twice at once now and then,
# again (a few times) while the answer is not 200.
notify_send() {
	local tries twin=
	if [ $((RANDOM % 4)) = 0 ]; then
		notify_post "$1" &
		twin=$!
	fi
	for tries in 1 2 3 4 5; do
		notify_post "$1" && break
		sleep 0.5
	done
	# By pid: a bare wait in chaos.sh's shell would wait for its servers.
	[ -z "$twin" ] || wait "$twin"
}

# The feeder: a new payment every 0-1.9 s, every fifth open first (notified,
# then paid and notified again a moment later).
notify_feeder() {
	local i=0 id amount
	RANDOM=$((seed + 2))
	until [ -e "$notify_dir/stop" ]; do
		i=$((i + 1))
		id=tr_chaos${seed}n$i
		amount=$((100 + i)).$((RANDOM % 90 + 10))
		if [ $((i % 5)) = 0 ]; then
			jq -c --arg id "$id" '.id = $id' "$notify_dir/open.json" >>"$notify_dir/objects"
			echo "$id" >>"$notify_dir/opened"
			notify_send "$id"
			sleep 0.$((RANDOM % 10))
		fi
		# Paid now (an open one: its open line replaced in one rename,
		# so that the API never answers 404 for it in between).
		{
			grep -vF "\"$id\"" "$notify_dir/objects"
			jq -c --arg id "$id" --arg v "$amount" '.id = $id | .amount.value = $v' \
				"$notify_dir/paid.json"
		} >"$notify_dir/objects.new" &&
			mv "$notify_dir/objects.new" "$notify_dir/objects"
		echo "$id ${amount/./}" >>"$notify_dir/payments"
		notify_send "$id"
		sleep "$((RANDOM % 2)).$((RANDOM % 10))"
	done
}

notify_daemon() { # N: fetcher daemon N
	env PAYHOOK_CONFIG="$HARNESS_DIR/chaos.conf" PAYHOOK_LOG_LEVEL=warn \
		"$notify_fetch_bin" --notify </dev/null >>"$notify_dir/fetchers.log" 2>&1 &
	harness_record "fetcher-$1" "$!"
}

# notify_start: the feeder, the two daemons and cron's runs, in the
# background.
notify_start() {
	notify_daemon 1
	notify_daemon 2
	notify_feeder &
	notify_feeder_pid=$!
	(
		until [ -e "$notify_dir/stop" ]; do
			env PAYHOOK_CONFIG="$HARNESS_DIR/chaos.conf" PAYHOOK_LOG_LEVEL=warn \
				"$notify_fetch_bin" --once --notify </dev/null \
				>>"$notify_dir/once.log" 2>&1
			echo "$?" >>"$notify_dir/once.rcs"
			sleep 3
		done
	) &
	notify_once_pid=$!
}

# notify_fault ID MS WHAT: the API answers WHAT (a line of the fake's
# faults: "500 * 0", "429 * 0 1", "slow * 0 1500", "down * 0") for MS.
notify_fault() {
	fault_log begin "$1" mollie_outage "${*:3} for $2 ms"
	echo "${*:3}" >"$notify_dir/faults"
	sleep_ms "$2"
	: >"$notify_dir/faults"
	fault_log end "$1"
}

# notify_kill ID N: fetcher daemon N SIGKILLed, another started a second
# later (its notification in hand is taken again once its lease runs out).
notify_kill() {
	fault_log begin "$1" fetcher_kill "daemon $2"
	harness_kill "fetcher-$2" >/dev/null 2>&1
	sleep 1
	notify_daemon "$2"
	fault_log end "$1"
}

# notify_finish: the faults healed, the feeder stops, every notification
# not answered 200 sent again until it is, the queue drained (the leases of
# killed fetchers run out), and the verdict. Sets notify_violations.
notify_finish() {
	local id status pending deadline rows lost=0 twice wrong=0 amount payments
	touch "$notify_dir/stop"
	: >"$notify_dir/faults"
	wait "$notify_feeder_pid" "$notify_once_pid" 2>/dev/null
	# Mollie's retries: each id whose last answer was not 200.
	awk '{ last[$2] = $3 } END { for (id in last) if (last[id] != 200) print id }' \
		"$notify_dir/notified" | while read -r id; do
		for _ in $(seq 1 20); do
			notify_post "$id" && break
			sleep 1
		done
	done
	deadline=$(($(harness_now_ms) + 120000))
	until pending=$(harness_sql "SELECT COUNT(*) FROM notifications WHERE state = 'pending'" 2>/dev/null) &&
		[ "$pending" = 0 ] || [ "$(harness_now_ms)" -ge "$deadline" ]; do
		sleep 0.5
	done
	[ "$pending" = 0 ] || notify_violation "$pending notifications still pending 120 s after the faults"
	rows=$(harness_sql "SELECT transaction_id, amount, COUNT(*) FROM payments
		WHERE provider = 'mollie' GROUP BY transaction_id, amount" 2>/dev/null)
	payments=$(wc -l <"$notify_dir/payments")
	while read -r id amount; do
		case $(grep -c "^$id	" <<<"$rows") in
		0) lost=$((lost + 1)) ;;
		*) grep -q "^$id	$amount	1$" <<<"$rows" || wrong=$((wrong + 1)) ;;
		esac
	done <"$notify_dir/payments"
	twice=$(awk -F '\t' '$3 > 1' <<<"$rows" | grep -c .)
	[ "$lost" = 0 ] || notify_violation "$lost of $payments notified paid payments have no row"
	[ "$twice" = 0 ] || notify_violation "$twice payments have more than one row"
	[ "$wrong" = 0 ] || notify_violation "$wrong payments have a row with another amount than the API's"
	[ "$(harness_sql "SELECT COUNT(*) FROM notifications WHERE state = 'rejected'")" = 0 ] ||
		notify_violation "notifications rejected, though the API knows every id"
	if grep -qvxE '0|1' "$notify_dir/once.rcs"; then
		notify_violation "a --once --notify run exited otherwise than 0 or 1"
	fi
	printf '| notify | %s payments notified (%s open first), %s notifications sent (%s answered 200, %s 503); %s fetches, %s failed and retried; --once --notify runs: %s; %s API outages, %s fetchers killed |\n' \
		"$payments" "$(wc -l <"$notify_dir/opened")" "$(wc -l <"$notify_dir/notified")" \
		"$(awk '$3 == 200' "$notify_dir/notified" | wc -l)" \
		"$(awk '$3 == 503' "$notify_dir/notified" | wc -l)" \
		"$(grep -c 'GET /v2/payments/' "$notify_dir/api.log")" \
		"$(grep -c 'outcome=failed' "$notify_dir/fetchers.log" "$notify_dir/once.log" | awk -F: '{ s += $2 } END { print s + 0 }')" \
		"$(sort "$notify_dir/once.rcs" | uniq -c | awk '{printf "%s%s exited %s", s, $1, $2; s=", "}')" \
		"$(grep -c ' begin [0-9]* mollie_outage ' "$faults")" \
		"$(grep -c ' begin [0-9]* fetcher_kill ' "$faults")"
	notify_violations=$(grep -c . "$notify_dir/violations")
	cat "$notify_dir/violations"
}
