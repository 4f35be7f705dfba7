#!/bin/bash
# walk.sh - counts the walks through the source that issue 31 names, so the
# structure's back-and-forth can be measured again after a change:
#   payment   a webhook body (standard provider, CGI mode) from the
#             pipeline's entry (pipeline_answer_profile) to the end of its INSERT
#             (store_insert_payment);
#   refund    a refund event of the same payment from pipeline_answer_profile to the
#             end of lifecycle_store_record;
#   delivery  that payment from the dispatcher's claim (handoff_store_claim)
#             to its HTTP delivery recorded (handoff_store_record_delivered),
#             payhook-dispatch --once against tests/servers/http_target;
#   reconcile a Stripe payment that no webhook delivered, from the pass's
#             start (reconcile_pass) to its INSERT (store_insert_payment),
#             payhook-reconcile --once against tests/servers/provider_api.
# For each: the files visited, the stays (maximal runs of calls in one file),
# the stays per file, and the climbs back up (returns into a file lower in the
# call stack after visiting another).
#
#   bash tools/walk/walk.sh [SOURCE_DIR]     (default: this tree)
#
# Method: the tracked and untracked files of SOURCE_DIR (its working tree)
# are copied to a temporary folder and built with -O0 -g
# -finstrument-functions and tools/walk/trace.c, whose hooks write each
# function's entry and exit to $WALK_TRACE; addr2line maps them to the
# function and the file that defines it; walk.awk counts. The servers are
# the test harness's (tools/harness.sh). Static functions count in their
# file; library calls (libmysqlclient, hiredis, ...) are not seen.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "${1:-$here/../..}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/walk.XXXXXX")
# WALK_KEEP=1 keeps the folder (the traces, the map) for a closer look.
[ "${WALK_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
b=$work/src
mkdir -p "$b"
(cd "$src" && git ls-files -co --exclude-standard -z |
	xargs -0 tar -cf - 2>/dev/null) | tar -xf - -C "$b" || exit 99
# The tracer comes from this script's tree, whatever SOURCE_DIR is.
cc -O2 -c -o "$work/trace.o" "$here/trace.c" || exit 99
(cd "$b" && ./autogen.sh && ./configure CFLAGS="-O0 -g -finstrument-functions" \
	LIBS="$work/trace.o -ldl" && make -j2 app/payhook app/payhook-dispatch \
	app/payhook-reconcile tests/servers/http_target \
	tests/servers/provider_api tools/freeport) >"$work/build.log" 2>&1 ||
	{ tail -20 "$work/build.log" >&2; exit 99; }

export top_srcdir=$b top_builddir=$b
# shellcheck source=../harness.sh
. "$b/tools/harness.sh"
harness_init >/dev/null || exit 99
harness_start_redis >/dev/null || exit 99
harness_start_mariadb >/dev/null || exit 99
export PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_LOG_LEVEL=warn
unset PAYHOOK_CONFIG PAYHOOK_DISPATCH_COMMAND PAYHOOK_DISPATCH_SECRET

# cgi TRACE BODY_FILE: one webhook through app/payhook as plain CGI.
cgi() {
	env WALK_TRACE="$1" REQUEST_METHOD=POST CONTENT_TYPE=application/json \
		CONTENT_LENGTH="$(wc -c <"$2")" SCRIPT_NAME=/webhook \
		REQUEST_URI=/webhook REMOTE_ADDR=127.0.0.1 \
		"$b/app/payhook" <"$2" | head -1 | tr -d '\r'
}

# count NAME BINARY TRACE FROM TO
count() {
	echo "== $1 ($4 .. $5)"
	awk '{ print $2 }' "$3" | sort -u >"$work/addrs"
	# addr2line: "function\nfile:line" per address; the file relative to
	# the tree (lib/shared/sqlconn.c).
	addr2line -f -e "$2" $(sed 's/^/0x/' "$work/addrs") |
		paste - - | paste "$work/addrs" - |
		awk -v root="$b/" '{ f = $3; sub(/:.*/, "", f); sub(root, "", f);
			sub(/^.*\/(lib|app)\//, "&", f); print "M", $1, $2, f }' \
			>"$work/map"
	cat "$work/map" "$3" | awk -v FROM="$4" -v TO="$5" -v FUNCS="${WALK_FUNCS:-0}" \
		-f "$here/walk.awk"
}

fx=$b/tests/fixtures/providers/standard
cgi "$work/payment.trace" "$fx/payment.json" | sed 's/^/# payment answered: /'
count payment "$b/app/payhook" "$work/payment.trace" pipeline_answer_profile store_insert_payment
cgi "$work/refund.trace" "$fx/refund.json" | sed 's/^/# refund answered: /'
count refund "$b/app/payhook" "$work/refund.trace" pipeline_answer_profile lifecycle_store_record

"$b/tests/servers/http_target" --control "$work/t.control" --record "$work/t.record" \
	>"$work/t.port" 2>/dev/null &
harness_record target $!
echo 200 >"$work/t.control"
for _ in $(seq 100); do read -r port <"$work/t.port" 2>/dev/null && break; sleep 0.05; done
WALK_TRACE=$work/delivery.trace PAYHOOK_DISPATCH_URL="http://127.0.0.1:$port/hook" \
	"$b/app/payhook-dispatch" --once >/dev/null 2>"$work/dispatch.err" ||
	{ cat "$work/dispatch.err" >&2; }
echo "# delivered: $(wc -l <"$work/t.record") request(s)"
count delivery "$b/app/payhook-dispatch" "$work/delivery.trace" handoff_store_claim handoff_store_record_delivered

# A Stripe payment only the list API has: the fake's events file holds it.
key=rk_test_walk0123456789
: >"$work/api.faults"
jq -c '.id = "evt_walk_reconcile" | .data.object.id = "pi_walk_reconcile" |
	.created = (now | floor) - 60' \
	"$b/tests/fixtures/providers/stripe/payment.json" >"$work/api.events"
"$b/tests/servers/provider_api" --mode stripe --key "$key" \
	--events "$work/api.events" --faults "$work/api.faults" \
	--log "$work/api.log" >"$work/api.port" 2>/dev/null &
harness_record provider-api $!
for _ in $(seq 100); do read -r port <"$work/api.port" 2>/dev/null && break; sleep 0.05; done
WALK_TRACE=$work/reconcile.trace PAYHOOK_PROVIDERS=stripe \
	PAYHOOK_STRIPE_SECRET=whsec_walk PAYHOOK_STRIPE_API_KEY=$key \
	PAYHOOK_STRIPE_API_BASE=http://127.0.0.1:$port \
	"$b/app/payhook-reconcile" --once 2>"$work/reconcile.err" |
	sed 's/^/# reconciled: /'
count reconcile "$b/app/payhook-reconcile" "$work/reconcile.trace" reconcile_pass store_insert_payment
