#!/usr/bin/env bash
# selfcheck.sh - proves that lib-sign.js / lib-verify.js really drive the
# providers' own libraries correctly, by comparing them with signatures
# computed independently with the openssl command line, on the fixtures in
# tests/fixtures/providers, plus known-answer vectors published by the
# providers themselves.
#
#   cd tests/interop && npm ci --no-audit --no-fund && bash selfcheck.sh
#
# Prints TAP (../lib/tap.sh: "ok - ..." / "not ok - ..." lines, the plan at
# exit) and a final "N passed, N failed"; exits non-zero if anything failed.
# Needs node, openssl, base64, xxd, python3.
set -u
cd "$(dirname "$0")" || exit 2
# shellcheck source=../lib/tap.sh
. ../lib/tap.sh
F=../fixtures/providers
T=$(mktemp -d)
tap_cleanup 'rm -rf "$T"'

check() { # check DESC EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; echo "#   expected: $2"; echo "#   actual:   $3"; fi
}

# --- independent HMAC-SHA256 helpers (openssl) ---------------------------
hmac_hex()       { openssl dgst -sha256 -hmac "$1" | awk '{print $NF}'; }                         # text key
hmac_b64()       { openssl dgst -sha256 -hmac "$1" -binary | base64 -w0; }
hmac_hex_hexkey(){ openssl dgst -sha256 -mac HMAC -macopt "hexkey:$1" | awk '{print $NF}'; }    # hex key
hmac_b64_hexkey(){ openssl dgst -sha256 -mac HMAC -macopt "hexkey:$1" -binary | base64 -w0; }
whsec_hexkey()   { printf '%s' "${1#whsec_}" | base64 -d | xxd -p -c 256; }                      # whsec_ -> hex

# --- running the scripts ---------------------------------------------------
verify() { # verify PROVIDER SECRET BODY HEADERS [--url URL]; prints the exit code
  local p=$1 s=$2 b=$3 h=$4; shift 4
  printf '%s\n' "$h" | node lib-verify.js "$p" "$s" "$b" "$@" 2>"$T/err" >/dev/null
  echo $?
}
expect_rc() { # expect_rc DESC WANT GOT
  if [ "$2" = "$3" ]; then ok "$1"
  else not_ok "$1 (exit $3, want $2)"; sed 's/^/#   /' "$T/err"; fi
}
tamper_tail() { cp "$1" "$2" && printf ' ' >>"$2"; }           # one extra byte at the end
tamper_sed()  { sed "0,/$1/s//$2/" "$3" >"$4"; cmp -s "$3" "$4" && echo "# tamper did not change $3" >&2; }

now=$(date +%s)

# ===== standard (Standard Webhooks, standardwebhooks npm) ==================
p=standard; b=$F/standard/payment.json
sec=whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD   # 24 random bytes, base64, whsec_ prefix
id=msg_2KWPBgLlAfxdpx2AI54pPJ85f4W
sig=$(printf '%s' "$id.$now.$(cat "$b")" | hmac_b64_hexkey "$(whsec_hexkey "$sec")")
hdr=$(printf 'webhook-id: %s\nwebhook-timestamp: %s\nwebhook-signature: v1,%s' "$id" "$now" "$sig")
check "$p: lib-sign output equals openssl" "$hdr" "$(node lib-sign.js $p "$sec" "$b" --id "$id" --timestamp "$now")"
expect_rc "$p: library accepts openssl signature" 0 "$(verify $p "$sec" "$b" "$hdr")"
expect_rc "$p: header names are matched case-insensitively" 0 \
  "$(verify $p "$sec" "$b" "$(printf 'Webhook-Id: %s\nWEBHOOK-TIMESTAMP: %s\nWebhook-Signature: v1,%s' "$id" "$now" "$sig")")"
expect_rc "$p: library accepts a list with one good v1 signature" 0 \
  "$(verify $p "$sec" "$b" "$(printf 'webhook-id: %s\nwebhook-timestamp: %s\nwebhook-signature: v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v1,%s' "$id" "$now" "$sig")")"
tamper_tail "$b" "$T/std-t.json"
expect_rc "$p: library rejects tampered body (extra byte)" 1 "$(verify $p "$sec" "$T/std-t.json" "$hdr")"
tamper_sed 1999 2999 "$b" "$T/std-a.json"
expect_rc "$p: library rejects tampered amount" 1 "$(verify $p "$sec" "$T/std-a.json" "$hdr")"
for off in -310 +310; do   # the library allows 300 s either way
  t=$(($(date +%s) + off)); s2=$(printf '%s' "$id.$t.$(cat "$b")" | hmac_b64_hexkey "$(whsec_hexkey "$sec")")
  expect_rc "$p: library rejects timestamp now${off} s" 1 \
    "$(verify $p "$sec" "$b" "$(printf 'webhook-id: %s\nwebhook-timestamp: %s\nwebhook-signature: v1,%s' "$id" "$t" "$s2")")"
done
# Known answer: the vector in standard-webhooks libraries/javascript/src/webhook.test.ts ("sign function works").
printf '%s' '{"test": 2432232314}' >"$T/kat-std.json"
check "$p: known-answer vector (openssl)" "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" \
  "$(printf '%s' 'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}' | hmac_b64_hexkey "$(whsec_hexkey whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw)")"
check "$p: known-answer vector (lib-sign)" "webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" \
  "$(node lib-sign.js $p whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw "$T/kat-std.json" --id msg_p5jXN8AQM9LWM0D4loKWxJek --timestamp 1614265330 | grep '^webhook-signature')"

# ===== stripe (stripe npm) =================================================
p=stripe
sec=whsec_4eC39HqLyjWDarjtT1zdp7dcOt2jkVdo      # the whole string is the HMAC key
now=$(date +%s)
for f in payment other second-success; do
  b=$F/stripe/$f.json
  v1=$(printf '%s' "$now.$(cat "$b")" | hmac_hex "$sec")
  hdr="Stripe-Signature: t=$now,v1=$v1"
  check "$p/$f: lib-sign output equals openssl" "$hdr" "$(node lib-sign.js $p "$sec" "$b" --timestamp "$now")"
  expect_rc "$p/$f: library accepts openssl signature" 0 "$(verify $p "$sec" "$b" "$hdr")"
  tamper_tail "$b" "$T/stripe-t.json"
  expect_rc "$p/$f: library rejects tampered body" 1 "$(verify $p "$sec" "$T/stripe-t.json" "$hdr")"
done
b=$F/stripe/payment.json
v1=$(printf '%s' "$now.$(cat "$b")" | hmac_hex "$sec")
expect_rc "$p: header name matched case-insensitively" 0 "$(verify $p "$sec" "$b" "stripe-signature: t=$now,v1=$v1")"
expect_rc "$p: library accepts when one of several v1 matches" 0 \
  "$(verify $p "$sec" "$b" "Stripe-Signature: t=$now,v1=$(printf '0%.0s' {1..64}),v1=$v1,v0=deadbeef")"
tamper_sed '"amount_received": 2000' '"amount_received": 2001' "$b" "$T/stripe-a.json"
expect_rc "$p: library rejects tampered amount_received" 1 "$(verify $p "$sec" "$T/stripe-a.json" "Stripe-Signature: t=$now,v1=$v1")"
expect_rc "$p: library rejects a signature made with another secret" 1 \
  "$(verify $p "$sec" "$b" "Stripe-Signature: t=$now,v1=$(printf '%s' "$now.$(cat "$b")" | hmac_hex whsec_other)")"
t=$(($(date +%s) - 301)); v=$(printf '%s' "$t.$(cat "$b")" | hmac_hex "$sec")
expect_rc "$p: library rejects t older than 300 s" 1 "$(verify $p "$sec" "$b" "Stripe-Signature: t=$t,v1=$v")"
t=$(($(date +%s) - 280)); v=$(printf '%s' "$t.$(cat "$b")" | hmac_hex "$sec")
expect_rc "$p: library accepts t 280 s old" 0 "$(verify $p "$sec" "$b" "Stripe-Signature: t=$t,v1=$v")"
t=$(($(date +%s) + 3600)); v=$(printf '%s' "$t.$(cat "$b")" | hmac_hex "$sec")
expect_rc "$p: pinned library accepts t 1 h in the future (no lower bound)" 0 "$(verify $p "$sec" "$b" "Stripe-Signature: t=$t,v1=$v")"

# ===== razorpay (razorpay npm; verify only) ================================
p=razorpay
sec='rzp-webhook-secret_7Yq2'                      # chosen by the merchant in the Dashboard
node lib-sign.js $p "$sec" "$F/razorpay/payment.json" >/dev/null 2>"$T/err"
expect_rc "$p: lib-sign reports the library has no signer" 3 "$?"
for f in payment other second-success; do
  b=$F/razorpay/$f.json
  hdr="X-Razorpay-Signature: $(hmac_hex "$sec" <"$b")"
  expect_rc "$p/$f: library accepts openssl signature" 0 "$(verify $p "$sec" "$b" "$hdr")"
  tamper_tail "$b" "$T/rzp-t.json"
  expect_rc "$p/$f: library rejects tampered body" 1 "$(verify $p "$sec" "$T/rzp-t.json" "$hdr")"
done
b=$F/razorpay/payment.json
expect_rc "$p: header name matched case-insensitively" 0 "$(verify $p "$sec" "$b" "x-razorpay-signature: $(hmac_hex "$sec" <"$b")")"
expect_rc "$p: library rejects upper-case hex (exact string compare)" 1 \
  "$(verify $p "$sec" "$b" "X-Razorpay-Signature: $(hmac_hex "$sec" <"$b" | tr a-f A-F)")"
tamper_sed '"amount":100,' '"amount":1,' "$b" "$T/rzp-a.json"
expect_rc "$p: library rejects tampered amount" 1 "$(verify $p "$sec" "$T/rzp-a.json" "X-Razorpay-Signature: $(hmac_hex "$sec" <"$b")")"

# ===== square (square npm WebhooksHelper; verify only) =====================
p=square
sec='Ibxx_5AKakO-3qeNVR61Dw'                      # signature key as shown in the Developer Console
url='https://payhook.example.com/hooks/square'
node lib-sign.js $p "$sec" "$F/square/payment.json" >/dev/null 2>"$T/err"
expect_rc "$p: lib-sign reports the library has no signer" 3 "$?"
for f in payment other second-success; do
  b=$F/square/$f.json
  hdr="x-square-hmacsha256-signature: $(printf '%s' "$url$(cat "$b")" | hmac_b64 "$sec")"
  expect_rc "$p/$f: library accepts openssl signature" 0 "$(verify $p "$sec" "$b" "$hdr" --url "$url")"
  tamper_tail "$b" "$T/sq-t.json"
  expect_rc "$p/$f: library rejects tampered body" 1 "$(verify $p "$sec" "$T/sq-t.json" "$hdr" --url "$url")"
  expect_rc "$p/$f: library rejects another notification URL" 1 "$(verify $p "$sec" "$b" "$hdr" --url "$url/")"
done
b=$F/square/payment.json
expect_rc "$p: header name matched case-insensitively" 0 \
  "$(verify $p "$sec" "$b" "X-Square-HmacSha256-Signature: $(printf '%s' "$url$(cat "$b")" | hmac_b64 "$sec")" --url "$url")"
# Known answer: square-nodejs-sdk tests/integration/webhooks.test.ts
printf '%s' '{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}' >"$T/kat-sq.json"
katurl='https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9'
check "$p: known-answer vector (openssl)" "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=" \
  "$(printf '%s' "$katurl$(cat "$T/kat-sq.json")" | hmac_b64 Ibxx_5AKakO-3qeNVR61Dw)"
expect_rc "$p: known-answer vector (library)" 0 \
  "$(verify $p Ibxx_5AKakO-3qeNVR61Dw "$T/kat-sq.json" "x-square-hmacsha256-signature: GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=" --url "$katurl")"

# ===== paddle (@paddle/paddle-node-sdk; verify only, 5 s window) ===========
p=paddle
sec='pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEI'
node lib-sign.js $p "$sec" "$F/paddle/payment.json" >/dev/null 2>"$T/err"
expect_rc "$p: lib-sign reports the library has no signer" 3 "$?"
psig() { printf '%s' "$1:$(cat "$2")" | hmac_hex "$sec"; }   # psig TS BODYFILE
for f in payment other second-success; do
  b=$F/paddle/$f.json
  ts=$(date +%s); hdr="Paddle-Signature: ts=$ts;h1=$(psig "$ts" "$b")"
  expect_rc "$p/$f: library accepts openssl signature" 0 "$(verify $p "$sec" "$b" "$hdr")"
  tamper_tail "$b" "$T/pd-t.json"
  expect_rc "$p/$f: library rejects tampered body" 1 "$(verify $p "$sec" "$T/pd-t.json" "$hdr")"
done
b=$F/paddle/payment.json
tamper_sed '"grand_total":"65215"' '"grand_total":"6521"' "$b" "$T/pd-a.json"
ts=$(date +%s); h1=$(psig "$ts" "$b")
expect_rc "$p: library rejects tampered grand_total" 1 "$(verify $p "$sec" "$T/pd-a.json" "Paddle-Signature: ts=$ts;h1=$h1")"
ts=$(date +%s); h1=$(psig "$ts" "$b")
expect_rc "$p: header name matched case-insensitively" 0 "$(verify $p "$sec" "$b" "paddle-signature: ts=$ts;h1=$h1")"
ts=$(($(date +%s) - 10)); h1=$(psig "$ts" "$b")
expect_rc "$p: library rejects ts 10 s old (SDK window is 5 s)" 1 "$(verify $p "$sec" "$b" "Paddle-Signature: ts=$ts;h1=$h1")"
ts=$(($(date +%s) + 3600)); h1=$(psig "$ts" "$b")
expect_rc "$p: pinned SDK accepts ts 1 h in the future (no lower bound)" 0 "$(verify $p "$sec" "$b" "Paddle-Signature: ts=$ts;h1=$h1")"
ts=$(date +%s); h1=$(psig "$ts" "$b"); bad=$(printf '0%.0s' {1..64})
expect_rc "$p: SDK accepts rotation header when the LAST h1 matches" 0 "$(verify $p "$sec" "$b" "Paddle-Signature: ts=$ts;h1=$bad;h1=$h1")"
ts=$(date +%s); h1=$(psig "$ts" "$b")
expect_rc "$p: SDK rejects rotation header when only an earlier h1 matches" 1 "$(verify $p "$sec" "$b" "Paddle-Signature: ts=$ts;h1=$h1;h1=$bad")"

# ===== adyen (@adyen/api-library hmacValidator; per item) ==================
p=adyen
key=44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056
# Independent signing string: pspReference:originalReference:merchantAccountCode:
# merchantReference:value:currency:eventCode:success, absent fields as "".
adyen_strings() {
  python3 - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
for n in doc["notificationItems"]:
    it = n["NotificationRequestItem"]
    f = [it.get("pspReference"), it.get("originalReference"), it.get("merchantAccountCode"),
         it.get("merchantReference"), it["amount"].get("value"), it["amount"].get("currency"),
         it.get("eventCode"), it.get("success")]
    print(":".join("" if v is None else str(v) for v in f))
PY
}
for f in payment three-items failed-auth other; do
  b=$F/adyen/$f.json
  node lib-sign.js $p "$key" "$b" >"$T/ad-$f.json" 2>"$T/err"
  want=$(adyen_strings "$b" | while IFS= read -r line; do printf '%s' "$line" | hmac_b64_hexkey "$key"; echo; done)
  got=$(python3 -c 'import json,sys; [print(n["NotificationRequestItem"]["additionalData"]["hmacSignature"]) for n in json.load(open(sys.argv[1]))["notificationItems"]]' "$T/ad-$f.json")
  check "$p/$f: lib-sign hmacSignature values equal openssl" "$want" "$got"
  check "$p/$f: lib-sign changed nothing but the signatures" \
    "$(sed 's/"hmacSignature": "[^"]*"/"hmacSignature": "HMAC"/' "$T/ad-$f.json")" "$(cat "$b")"
  expect_rc "$p/$f: library accepts the signed body" 0 "$(verify $p "$key" "$T/ad-$f.json" "")"
  expect_rc "$p/$f: library rejects the unsigned placeholder body" 1 "$(verify $p "$key" "$b" "")"
done
tamper_sed '"value": 1130' '"value": 1131' "$T/ad-payment.json" "$T/ad-a.json"
expect_rc "$p: library rejects tampered amount.value" 1 "$(verify $p "$key" "$T/ad-a.json" "")"
tamper_sed '"value": 500' '"value": 501' "$T/ad-three-items.json" "$T/ad-3a.json"
expect_rc "$p: library rejects when only the 2nd of 3 items is tampered" 1 "$(verify $p "$key" "$T/ad-3a.json" "")"
tamper_sed '"success": "false"' '"success": "true"' "$T/ad-failed-auth.json" "$T/ad-fa.json"
expect_rc "$p: library rejects success flipped to \"true\"" 1 "$(verify $p "$key" "$T/ad-fa.json" "")"
expect_rc "$p: library rejects another key" 1 "$(verify $p "$(printf 'A%.0s' {1..64})" "$T/ad-payment.json" "")"
# Known answers: Adyen's documented example (empty originalReference -> "::"),
# and the vector in adyen-node-api-library src/__tests__/hmacValidator.spec.ts.
check "$p: Adyen docs example signature (openssl)" "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=" \
  "$(printf '%s' '7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true' | hmac_b64_hexkey "$key")"
check "$p: fixture payment.json reproduces the docs signature (lib-sign)" "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=" \
  "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["notificationItems"][0]["NotificationRequestItem"]["additionalData"]["hmacSignature"])' "$T/ad-payment.json")"
check "$p: adyen-node-api-library test vector (openssl)" "xhpHvYq2u2Np0rstbZ6QjLGu7JWhvf7Iwaa6EviJSX0=" \
  "$(printf '%s' 'pspReference:originalReference:merchantAccount:reference:1000:EUR:CAPTURE:true' | hmac_b64_hexkey DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00)"

# ===== komoju / payjp / shopify: no official npm verifier ==================
for p in komoju payjp shopify; do
  b=$(ls "$F/$p"/*.json | head -n1)
  node lib-sign.js $p x "$b" >/dev/null 2>"$T/err"; expect_rc "$p: lib-sign reports no library signer" 3 "$?"
  printf 'X: y\n' | node lib-verify.js $p x "$b" >/dev/null 2>"$T/err"; expect_rc "$p: lib-verify reports no library" 3 "$?"
done
# Reference values for payhook's own tests (openssl only): KOMOJU hex(HMAC(body)),
# Shopify base64(HMAC(body)); PAY.JP sends the token itself in X-Payjp-Webhook-Token.
echo "# komoju/payment.json X-Komoju-Signature with secret 'komoju-secret': $(hmac_hex komoju-secret <"$F/komoju/payment.json")"
echo "# shopify/payment.json X-Shopify-Hmac-Sha256 with secret 'shpss_test': $(hmac_b64 shpss_test <"$F/shopify/payment.json")"

# ===== usage errors =========================================================
node lib-verify.js stripe x >/dev/null 2>&1 </dev/null; expect_rc "usage: missing BODYFILE exits 2" 2 "$?"
node lib-verify.js square x "$F/square/payment.json" >/dev/null 2>&1 </dev/null; expect_rc "usage: square without --url exits 2" 2 "$?"
node lib-sign.js nosuch x "$F/standard/payment.json" >/dev/null 2>&1; expect_rc "usage: unknown provider exits 2" 2 "$?"

echo "$(tap_passed) passed, $(tap_failed) failed"
[ "$(tap_failed)" -eq 0 ]
