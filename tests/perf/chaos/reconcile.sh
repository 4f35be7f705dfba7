#!/bin/bash
# shellcheck disable=SC2154,SC2034 # seed, HARNESS_DIR, url...: chaos.sh's; recon_violations: for it
# reconcile.sh - sourced by chaos.sh (CHAOS_RECONCILE=1, the default): the
# reconciliation under the same faults as the webhooks, held to the same
# rules. A fake Stripe API (tests/servers/provider_api) lists payments that
# appear one by one while the schedule runs; half of them are also
# delivered as Stripe's signed webhooks through lighttpd, at the moment a
# pass may be listing them. payhook-reconcile --once runs every 2 s, as cron
# would, through the same proxy to MariaDB as the workers; the schedule's
# api_outage makes the API answer 500, 429 without Retry-After, 503 with
# it, or slowly for a while.
#
# The rules, checked against MariaDB directly (not through the proxy):
#   - a webhook answered 200 has its row committed when the answer comes;
#   - a pass that says status=complete has committed a row for every
#     payment the API listed in its span (from .. until) before it began;
#   - each --once run exits 0, 1 or 3 and prints its line;
#   - after the faults, one last complete pass, and every payment the API
#     holds is one row, with the amount it listed: none lost, none twice.

recon_bin=$BUILD_DIR/app/payhook-reconcile
recon_api_bin=$BUILD_DIR/tests/servers/provider_api
recon_sign=$BUILD_DIR/app/payhook-sign
recon_key=rk_test_51ChaosReconcileKey0123456789abcdefXYZ
recon_secret=whsec_chaos_reconcile_stripe_secret
recon_dir=$HARNESS_DIR/reconcile
recon_violations=0
# make chaos-ha: the mysql_nodes of each app host; the passes take them in
# turn. Empty: the passes use the configuration's database as it is.
recon_hosts=()
recon_npass=0

# reconcile_setup: the fake API, and the configuration's keys for it.
reconcile_setup() {
	local fixture=$SRC_DIR/tests/fixtures/providers/stripe/payment.json
	for bin in "$recon_bin" "$recon_api_bin" "$recon_sign"; do
		[ -x "$bin" ] || { echo "chaos: $bin is not built (make chaos builds it)" >&2; exit 2; }
	done
	command -v jq >/dev/null || { echo "chaos: jq is not installed" >&2; exit 2; }
	mkdir -p "$recon_dir" || exit 99
	: >"$recon_dir/events"
	: >"$recon_dir/faults"
	: >"$recon_dir/listed"   # append_ms transaction_id created amount
	: >"$recon_dir/passes"   # start_ms end_ms rc checked missing line
	: >"$recon_dir/webhooks" # sent_ms status seen
	: >"$recon_dir/violations"
	jq -c . "$fixture" >"$recon_dir/payment.json" || exit 99
	"$recon_api_bin" --mode stripe --key "$recon_key" \
		--events "$recon_dir/events" --faults "$recon_dir/faults" \
		--log "$recon_dir/api.log" >"$recon_dir/api.port" 2>"$recon_dir/api.err" &
	harness_record provider-api "$!"
	until read -r recon_api_port 2>/dev/null <"$recon_dir/api.port"; do
		harness_running provider-api || exit 99
		sleep 0.02
	done
	cat >>"$HARNESS_DIR/chaos.conf" <<EOF || exit 99
stripe_secret = $recon_secret
stripe_api_key = $recon_key
stripe_api_base = http://127.0.0.1:$recon_api_port
reconcile_rate_per_s = 50
reconcile_max_retries = 2
EOF
}

# recon_violation TEXT: one line of the verdict.
recon_violation() {
	printf 'chaos: VIOLATION: reconcile: %s (seed %s)\n' "$1" "$seed" >>"$recon_dir/violations"
}

# recon_rows IDS...: "transaction_id amount" of each row of those ids, read
# from MariaDB directly; fails when it does not answer.
recon_rows() {
	local list
	list=$(printf "'%s'," "$@")
	harness_sql "SELECT transaction_id, amount FROM payments WHERE provider = 'stripe'
		AND transaction_id IN (${list%,})" 2>/dev/null
}

# The feeder: a new payment every 0-1.9 s (ids of letters, digits and _,
# as Stripe's), created a second before it is
# listed; every other one also delivered as Stripe's webhook, its row
# looked for as soon as the 200 comes.
reconcile_feeder() {
	local i=0 now_ms created id amount status req
	RANDOM=$((seed + 1))
	until [ -e "$recon_dir/stop" ]; do
		i=$((i + 1))
		now_ms=$(harness_now_ms)
		created=$((now_ms / 1000 - 1))
		id=chaos${seed}_stripe_$i amount=$((1000 + i))
		jq -c --arg pi "$id" --argjson amount "$amount" --argjson created "$created" \
			'.id = "evt_" + $pi | .data.object.id = $pi |
			.data.object.amount = $amount | .data.object.amount_received = $amount |
			.created = $created' "$recon_dir/payment.json" >"$recon_dir/next.json"
		cat "$recon_dir/next.json" >>"$recon_dir/events"
		# When it is in the list: a pass that began later must list it.
		echo "$(harness_now_ms) $id $created $amount" >>"$recon_dir/listed"
		if [ $((i % 2)) = 0 ]; then
			req=(-H 'Content-Type: application/json')
			while IFS= read -r line; do
				req+=(-H "$line")
			done < <("$recon_sign" --provider stripe --secret "$recon_secret" "$recon_dir/next.json")
			status=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' "${req[@]}" \
				--data-binary "@$recon_dir/next.json" "$url/stripe" 2>/dev/null)
			seen=-
			if [ "$status" = 200 ] && rows=$(recon_rows "$id"); then
				seen=$(grep -c . <<<"$rows")
				[ "$seen" = 1 ] ||
					recon_violation "webhook $id answered 200 with $seen committed rows"
			fi
			echo "$now_ms $status $seen" >>"$recon_dir/webhooks"
		fi
		sleep "$((RANDOM % 2)).$((RANDOM % 10))"
	done
}

# One pass as cron runs it, then its rule: a complete pass committed every
# payment listed in its span before it began.
reconcile_pass() {
	local start_ms end_ms rc line from until ids=() missing=- id created row rows
	local -a hostenv=()
	start_ms=$(harness_now_ms)
	if [ "${#recon_hosts[@]}" -gt 0 ]; then
		hostenv=(PAYHOOK_MYSQL_NODES="${recon_hosts[$((recon_npass % ${#recon_hosts[@]}))]}")
		recon_npass=$((recon_npass + 1))
	fi
	line=$(env PAYHOOK_CONFIG="$HARNESS_DIR/chaos.conf" PAYHOOK_LOG_LEVEL=warn "${hostenv[@]}" \
		"$recon_bin" --once 2>>"$recon_dir/reconcile.log")
	rc=$?
	end_ms=$(harness_now_ms)
	case $rc in
	0 | 1 | 3) ;;
	*) recon_violation "payhook-reconcile --once exited $rc: $line" ;;
	esac
	[ -n "$line" ] || recon_violation "payhook-reconcile --once (exit $rc) printed no line"
	if [[ $line == *" status=complete "* ]]; then
		from=$(date -u -d "$(sed -n 's/.* from=\([^ ]*\).*/\1/p' <<<"$line")" +%s 2>/dev/null)
		until=$(date -u -d "$(sed -n 's/.* until=\([^ ]*\).*/\1/p' <<<"$line")" +%s 2>/dev/null)
		while read -r ms id created _; do
			[ "$ms" -lt "$start_ms" ] && [ "$created" -ge "${from:-0}" ] &&
				[ "$created" -lt "${until:-0}" ] && ids+=("$id")
		done <"$recon_dir/listed"
		missing=0
		if [ "${#ids[@]}" -gt 0 ]; then
			if rows=$(recon_rows "${ids[@]}"); then
				for id in "${ids[@]}"; do
					row=$(grep -c "^$id	" <<<"$rows")
					[ "$row" = 1 ] || missing=$((missing + 1))
				done
				[ "$missing" = 0 ] ||
					recon_violation "a pass said complete with $missing of ${#ids[@]} listed payments uncommitted: $line"
			else
				missing=-
			fi
		fi
	fi
	echo "$start_ms $end_ms $rc ${#ids[@]} $missing $line" >>"$recon_dir/passes"
	return "$rc"
}

reconcile_loop() {
	until [ -e "$recon_dir/stop" ]; do
		reconcile_pass
		sleep 2
	done
}

# reconcile_start: the feeder and cron's passes, in the background.
reconcile_start() {
	reconcile_feeder &
	recon_feeder=$!
	reconcile_loop &
	recon_loop=$!
}

# reconcile_fault ID MS WHAT: the API answers WHAT (a line of the fake's
# faults: "500 0 0", "429 0 0", "503 0 0 1", "slow 0 0 1500") for MS.
reconcile_fault() {
	fault_log begin "$1" api_outage "${*:3} for $2 ms"
	echo "${*:3}" >"$recon_dir/faults"
	sleep_ms "$2"
	: >"$recon_dir/faults"
	fault_log end "$1"
}

# reconcile_finish: the faults healed, the feeder and the passes stop; one
# last pass completes (a few tries), and the verdict. Sets recon_violations.
reconcile_finish() {
	local listed rows lost twice wrong passes complete webhooks
	touch "$recon_dir/stop"
	: >"$recon_dir/faults"
	wait "$recon_feeder" "$recon_loop" 2>/dev/null
	# A pass that lost MariaDB mid-way could not give its lease back:
	# the next ones say status=busy until it runs out (300 s).
	for _ in $(seq 1 120); do
		reconcile_pass
		tail -n 1 "$recon_dir/passes" | grep -q ' status=complete ' && break
		sleep 3
	done
	listed=$(wc -l <"$recon_dir/listed")
	rows=$(harness_sql "SELECT transaction_id, amount, COUNT(*) FROM payments
		WHERE provider = 'stripe' GROUP BY transaction_id, amount" 2>/dev/null)
	lost=0 wrong=0
	while read -r _ id _ amount; do
		case $(grep -c "^$id	" <<<"$rows") in
		0) lost=$((lost + 1)) ;;
		*) grep -q "^$id	$amount	1$" <<<"$rows" || wrong=$((wrong + 1)) ;;
		esac
	done <"$recon_dir/listed"
	twice=$(awk -F '\t' '$3 > 1' <<<"$rows" | grep -c .)
	[ "$lost" = 0 ] || recon_violation "$lost of $listed payments the API lists have no row after the last pass"
	[ "$twice" = 0 ] || recon_violation "$twice payments have more than one row"
	[ "$wrong" = 0 ] || recon_violation "$wrong payments have a row with another amount"
	[ "$(grep -c . <<<"$rows")" -le "$listed" ] ||
		recon_violation "rows of stripe payments the API never listed"
	passes=$(wc -l <"$recon_dir/passes")
	complete=$(grep -c ' status=complete ' "$recon_dir/passes")
	webhooks=$(awk '$2 == 200' "$recon_dir/webhooks" | wc -l)
	printf '| reconcile | %s payments listed, %s also as webhooks (%s answered 200); %s passes: %s complete (%s checked, each payment of its span committed), %s failed, %s busy (a lease a failed pass could not give back); %s API outages; sources: %s |\n' \
		"$listed" "$(wc -l <"$recon_dir/webhooks")" "$webhooks" "$passes" "$complete" \
		"$(awk '$5 ~ /^[0-9]+$/ && $4 > 0' "$recon_dir/passes" | wc -l)" \
		"$(grep -c ' status=failed ' "$recon_dir/passes")" \
		"$(grep -c ' status=busy ' "$recon_dir/passes")" \
		"$(grep -c ' begin [0-9]* api_outage ' "$faults")" \
		"$(harness_sql "SELECT source, COUNT(*) FROM payments WHERE provider = 'stripe'
			GROUP BY source" 2>/dev/null | awk '{printf "%s%s %s", s, $2, $1; s=", "}')"
	recon_violations=$(grep -c . "$recon_dir/violations")
	cat "$recon_dir/violations"
}
