#!/usr/bin/env python3
# make-corpus.py - writes the named seed inputs of tests/fuzz/corpus/<target>/
# (a maintainer tool; `make check` only replays the files). Files it does not
# name, such as crash reproducers and merged fuzzer finds, are left alone.
# The input layouts are described at the top of each fuzz_<target>.c.
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

VALID = b'{"transaction_id":"tx-1","amount":1999,"currency":"EUR"}'
# Two inputs in one: an earlier request, then the one under test.
MARKER = b"\x00\xff\x00"
# A body that stops right after a high surrogate escape, and one whose first
# escape is in transaction_id (found by fuzz_payload: json-c 0.16's
# json_tokener_reset keeps the pending surrogate).
SURROGATE_POISON = b'{"a":"\\ud800'
ESCAPED_VICTIM = b'{"transaction_id":"\\u0041BC","amount":1,"currency":"EUR"}'
FIELDS = b'"transaction_id":"tx-1","amount":1,"currency":"EUR"'


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def payload():
    # byte 0: bit 0 default EUR, bit 1 trim, bits 2-3 how the reason is
    # asked for (2: a struct error full of junk, 3: none), bits 4-7 the
    # currency of decimal amounts when the body has none
    seeds = {
        "valid": b"\x00" + VALID,
        "valid-spaces-extra-fields": b"\x00" + b' \r\n{ "event" : "payment.succeeded",\n\t"currency" : "gbp" , "amount" : 7 , "transaction_id" : "A", "meta": {"a": [1, 2.5e-3, null, true, "\\u00e9\\ud83d\\ude00"]} }\n',
        "default-currency": b"\x01" + b'{"transaction_id":"tx-1","amount":1}',
        "trim-id": b"\x02" + b'{"transaction_id":"  tx-1\\t","amount":5,"currency":"usd"}',
        "amount-max": b"\x00" + b'{"transaction_id":"tx-max","amount":9223372036854775807,"currency":"JPY"}',
        "amount-over": b"\x00" + b'{"transaction_id":"tx-over","amount":9223372036854775808,"currency":"JPY"}',
        "amount-forms": b"\x00" + b'{"transaction_id":"tx-2","amount":1.0,"currency":"EUR","x":1e3,"y":-0,"z":"1"}',
        "depth-32": b"\x00" + b'{' + FIELDS + b',"x":' + b'[' * 31 + b']' * 31 + b'}',
        "depth-33": b"\x00" + b'{' + FIELDS + b',"x":' + b'[' * 32 + b']' * 32 + b'}',
        "escaped-id": b"\x00" + b'{"transaction_id":"\\u0041\\"\\\\\\/x","amount":3,"currency":"EUR"}',
        "nul-escape-id": b"\x00" + b'{"transaction_id":"a\\u0000b","amount":3,"currency":"EUR"}',
        "bom": b"\x00" + b"\xef\xbb\xbf" + VALID,
        "overlong-utf8": b"\x00" + b'{' + FIELDS + b',"x":"\xc0\xaf"}',
        "duplicate-keys": b"\x00" + b'{"transaction_id":"a","transaction_id":"b","amount":1,"amount":2,"currency":"EUR"}',
        "id-128": b"\x00" + b'{"transaction_id":"' + b"x" * 128 + b'","amount":1,"currency":"EUR"}',
        "id-129": b"\x00" + b'{"transaction_id":"' + b"x" * 129 + b'","amount":1,"currency":"EUR"}',
        "nan-trailing": b"\x00" + b'{' + FIELDS + b',"x":NaN} x',
        "small-reason-cap": b"\x28" + b'{"transaction_id":"tx-1","amount":"1","currency":"EUR"}',
        "no-reason-buffer": b"\x0c" + b'{"transaction_id":"tx-1","amount":0}',
        "two-bodies": b"\x00" + VALID + MARKER + VALID,
        "regress-surrogate-state": b"\x00" + SURROGATE_POISON + MARKER + ESCAPED_VICTIM,
        # A key given twice anywhere, or holding \u0000, is refused.
        "duplicate-key-nested": b"\x00" + b'{' + FIELDS + b',"meta":{"a":1,"b":[{"a":2,"a":3}]}}',
        "duplicate-key-escaped": b"\x00" + b'{' + FIELDS + b',"\\u0061":1,"a":2}',
        "same-key-other-objects": b"\x00" + b'{' + FIELDS + b',"x":{"amount":2},"y":[{"amount":3},{"amount":4}]}',
        "nul-key": b"\x00" + b'{' + FIELDS + b',"amount\\u0000":2}',
        "nul-key-alone": b"\x00" + b'{' + FIELDS + b',"note\\u0000":2}',
        "escaped-backslash-key": b"\x00" + b'{' + FIELDS + b',"a\\\\u0000":1}',
        # The reason never echoes a value, even one made of its words.
        "reason-words-in-value": b"\x00" + b'{"transaction_id":"must be a string","amount":1,"currency":"EUR"}',
        # Amounts as other providers write them: data.object.amount and
        # the top-level amount are read in every form.
        "decimal-amounts": b"\x00" + b'{"transaction_id":"tx-3","amount":"19.99","currency":"USD","data":{"object":{"amount":"1000.00","currency":"JPY"}}}',
        "decimal-three-places": b"\x00" + b'{"transaction_id":"tx-4","amount":1,"currency":"KWD","data":{"object":{"amount":"0.001","currency":"kwd"}}}',
        "decimal-inexact": b"\x00" + b'{"transaction_id":"tx-5","amount":"10.001","currency":"USD","data":{"object":{"amount":"10.","currency":"USD"}}}',
        "decimal-max": b"\x00" + b'{"transaction_id":"tx-6","amount":"92233720368547758.07","currency":"EUR","data":{"object":{"amount":"92233720368547758.08","currency":"EUR"}}}',
        "decimal-unknown-currency": b"\x80" + b'{"transaction_id":"tx-7","amount":"5","data":{"object":{"amount":"5.00"}}}',
        "decimal-four-places": b"\x30" + b'{"transaction_id":"tx-8","amount":"1.2345","data":{"object":{"amount":"0.0001"}}}',
        "minor-string": b"\x00" + b'{"transaction_id":"tx-9","amount":"00012","currency":"EUR","data":{"object":{"amount":"9223372036854775807"}}}',
        "minor-string-over": b"\x00" + b'{"transaction_id":"tx-10","amount":"+1","currency":"EUR","data":{"object":{"amount":"9223372036854775808"}}}',
        "junk-reason-valid": b"\x08" + VALID,
        "no-reason-valid": b"\x0c" + VALID,
    }
    for name, data in seeds.items():
        write("payload", name, data)


SECRET_A = b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def signature():
    # byte 0 flags (bits 6-7 the scheme: 0 standard, 1 stripe, 2 paddle,
    # 3 one header: bits 2-3 then 0 hex digest, 1 base64 digest, 2-3 token);
    # then three fields \0-separated, the body last (see fuzz_signature.c)
    ida = b"msg_p5jXN8AQM9LWM0D4loKWxJek"
    tsa = b"1614265330"
    body = b'{"test": 2432232314}'

    def sig(flags, i, t, h, b):
        return bytes([flags]) + i + b"\0" + t + b"\0" + h + b"\0" + b

    seeds = {
        "valid-a": sig(0, ida, tsa, b"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", body),
        "valid-b": sig(0, ida, tsa, b"v1,O4Gjv1HqPqsMrjmczoggs/sWA8gZD0VyHG+fLh4+ktI=", body),
        "placeholder-a": sig(0, b"msg_1", tsa, b"v1,$A", VALID),
        "placeholder-list": sig(0, b"msg_2", b"1614265100", b"  v2,Zm9v v1,AAAA  v1,$B v1a,x ", VALID),
        "stale": sig(0, b"msg_3", b"1614264000", b"v1,$A", VALID),
        "leading-zero-ts": sig(0, ida, b"01614265330", b"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", body),
        "non-canonical": sig(0, ida, tsa, b"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OF=", body),
        "malformed-entries": sig(0, b"msg 4", b"-5", b",x v1", b""),
        "too-many-entries": sig(0, b"msg_5", tsa, b" ".join([b"v1,AAAA"] * 17) + b" v1,$A", body),
        "binary-body": sig(0, b"msg_1", b"1700000000", b"v1,$B", b"a\0b\xff\n"),
        "secret-as-id": sig(4, b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", tsa, b"v1,$A", body),
        "secret-padding": sig(8, b"whsec_AAE=", tsa, b"v1,$A", b""),
        "now-zero": sig(0x20, b"msg_6", b"0", b"v1,$A", b""),
        "now-negative-tolerance-max": sig(0x33, b"msg_7", b"9999999999999999999", b"v1,$A", body),
        "missing-header": bytes([0]) + ida + b"\0" + tsa,
        "id-255": sig(0, b"m" * 255, tsa, b"v1,$A", body),
        "id-256": sig(0, b"m" * 256, tsa, b"v1,$A", body),
        # whsec_ is required: key A's base64 alone is refused in that form
        # (and read as plain base64, it is key A again).
        "secret-no-prefix": sig(0, SECRET_A[6:], tsa, b"v1,$A", body),
        "secret-hex-as-id": sig(0, b"000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F", tsa, b"v1,$B", body),
        # Stripe: t=<unix>,v1=<hex> over "<t>.<body>"
        "stripe-valid-a": sig(0x40, b"", tsa, b"t=1614265330,v1=$A", body),
        "stripe-rotation": sig(0x40, b"", tsa, b" t=1614265330, v0=$B ,v1=00ff,v1=$b", body),
        "stripe-stale": sig(0x40, b"", b"1614264000", b"t=1614264000,v1=$A", body),
        "stripe-two-timestamps": sig(0x40, b"", tsa, b"t=1614265330,t=1614265330,v1=$A", body),
        "stripe-other-timestamp": sig(0x40, b"", tsa, b"t=1614265331,v1=$A", body),
        "stripe-no-timestamp": sig(0x40, b"", tsa, b"v1=$A", body),
        "stripe-too-many-entries": sig(0x40, b"", tsa, b"t=1614265330," + b",".join([b"v0=1"] * 16) + b",v1=$A", body),
        # Paddle: ts=<unix>;h1=<hex> over "<ts>:<body>"
        "paddle-valid-b": sig(0x80, b"", tsa, b"ts=1614265330;h1=$B", body),
        "paddle-comma": sig(0x80, b"", tsa, b"ts=1614265330,h1=$A", body),
        "paddle-now-negative": sig(0xB3, b"", b"0", b"ts=0;h1=$A", b""),
        # One digest of "<text><body>", hex or base64, with or without a
        # prefix (the first field)
        "digest-hex": sig(0xC0, b"", b"", b"$A", body),
        "digest-hex-upper-prefix": sig(0xC0, b"sha256=", b"", b"sha256=$a", body),
        "digest-hex-missing-prefix": sig(0xC0, b"sha256=", b"", b"$A", body),
        "digest-base64-url": sig(0xC4, b"", b"https://example.com/webhook", b"$B", body),
        "digest-base64-prefix": sig(0xC4, b"sha256=", b"", b"sha256=$A", b"a\0b"),
        "digest-missing": bytes([0xC0]) + b"\0",
        # A static token: one of the secrets, exactly
        "token-a": sig(0xC8, b"", b"", b"$A", b""),
        "token-prefix-of-secret": sig(0xC8, b"", b"", SECRET_A[:-1], b""),
        "token-b-with-space": sig(0xCC, b"", b"", b"$B ", b""),
    }
    for name, data in seeds.items():
        write("signature", name, data)


def config():
    a = b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    b = b"whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
    example = os.path.join(HERE, "..", "..", "conf", "payhook.conf.example")
    seeds = {
        "minimal-none": b"signature_scheme = none\n",
        "one-secret": b"webhook_secret = " + a + b"\n",
        "rotation": b"# two keys during a rotation\nwebhook_secret = " + a + b"\nwebhook_secret=" + b + b"\n",
        "all-keys": b"\n".join([
            b"redis_host = redis.internal", b"redis_port = 6380",
            b"redis_socket = /run/redis/redis.sock", b"redis_password = s3cret-redis-pass",
            b"redis_db = 2", b"redis_timeout_ms = 250", b"mysql_host = db",
            b"mysql_port = 3307", b"mysql_socket = /run/mysqld/mysqld.sock",
            b"mysql_user = hook", b"mysql_password = s3cret-mysql-pass",
            b"mysql_database = payments", b"mysql_connect_timeout_s = 1",
            b"mysql_read_timeout_s = 1", b"mysql_write_timeout_s = 1",
            b"lock_ttl_ms = 20000", b"lock_key_prefix = lk:",
            b"redis_unavailable = fail", b"max_body_bytes = 1048576",
            b"default_currency = eur", b"trim_transaction_id = yes",
            b"signature_scheme = standard", b"webhook_secret = " + a,
            b"signature_tolerance_s = 60", b"in_progress_status = 503",
            b"retry_after_s = 10", b"log_level = debug", b""]),
        "crlf-bom": b"\xef\xbb\xbfsignature_scheme = none\r\nmax_body_bytes = 10\r\n",
        # Several servers: a Galera cluster's nodes, Redis Sentinels.
        "nodes-and-sentinels": b"signature_scheme = none\nmysql_nodes = db1 db2:3307 [::1]:3308\nredis_sentinels = s1:26379 s2\nredis_master_name = pay\n",
        "nodes-bad": b"signature_scheme = none\nmysql_nodes = db1:0 [::1\n",
        "lock-none": b"signature_scheme = none\nlock_backend = none\n",
        "bad-port": b"signature_scheme = none\nredis_port = 70000\n",
        "ttl-too-short": b"signature_scheme = none\nlock_ttl_ms = 17000\n",
        "unknown-key": b"signature_scheme = none\nfrobnicate = 1\n",
        "duplicate-key": b"signature_scheme = none\nredis_db = 1\nredis_db = 2\n",
        "nul-line": b"signature_scheme = none\nredis_host = a\0b\n",
        "bad-secret": b"webhook_secret = whsec_not base64 at all!\n",
        "env-secrets": b"#@env PAYHOOK_WEBHOOK_SECRET= " + a + b"\t" + b + b" \nwebhook_secret = whsec_AAE=\n",
        "env-overrides": b"#@env PAYHOOK_SIGNATURE_SCHEME=none\n#@env PAYHOOK_MAX_BODY_BYTES=  12 \n#@env PAYHOOK_REDIS_PASSWORD=envpassword12345678\nmax_body_bytes = 100\n",
        "file-bad-number": b"signature_scheme = none\nmax_body_bytes = 99999999999\n",
        "env-bad-secret": b"#@env PAYHOOK_WEBHOOK_SECRET=whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo= whsec_QUJD!\n",
        "no-equals": b"signature_scheme none\n",
        # Quoting and comments after a value are refused, not kept.
        "quoted-value": b"signature_scheme = none\nredis_host = \"db\"\n",
        "quoted-secret": b"webhook_secret = '" + a + b"'\n",
        "inline-comment": b"signature_scheme = none\nredis_port = 6380 # the other one\n",
        "hash-in-value": b"signature_scheme = none\nredis_password = pa#ss word#1\n",
        # An unknown key is never quoted: it may be a pasted secret.
        "pasted-secret-as-key": b"signature_scheme = none\n" + b + b"\n",
        "unknown-key-near": b"signature_scheme = none\nredis_hots = x\n",
        # A PAYHOOK_ variable that names no key is refused (PAYHOOK_CONFIG
        # is the file's path, not a key).
        "env-unknown-name": b"#@env PAYHOOK_FUZZ_TRACE=1\nsignature_scheme = none\n",
        "env-config-name": b"#@env PAYHOOK_CONFIG=/nonexistent\nsignature_scheme = none\n",
        # Provider profiles and their secrets.
        "providers-all": b"\n".join([
            b"providers = standard stripe paddle razorpay komoju payjp square shopify adyen generic",
            b"webhook_secret = " + a, b"stripe_secret = whsec_stripe0123456789",
            b"stripe_tolerance_s = 600", b"paddle_secret = pdl_ntfset_01abc_secret",
            b"paddle_tolerance_s = 5", b"razorpay_secret = razorpay-secret",
            b"komoju_secret = komoju-secret", b"payjp_secret = whook_payjp_token",
            b"square_secret = square-signature-key",
            b"square_notification_url = https://example.com/webhook/square",
            b"shopify_secret = shpss_0123456789abcdef",
            b"adyen_secret = 44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
            b"generic_secret = c2VjcmV0", b"generic_secret_encoding = base64",
            b"generic_tolerance_s = 120", b"generic_signature_header = X-Signature",
            b"generic_signature_encoding = base64", b"generic_signature_prefix = sha256=",
            b"generic_signed_payload = {timestamp}.{url}{body}",
            b"generic_timestamp_header = X-Timestamp", b"generic_url = https://example.com/w",
            b"generic_event_path = event.type", b"generic_event_values = paid settled",
            b"generic_event_id_path = event.id", b"generic_transaction_id_path = data.id",
            b"generic_amount_path = data.amount", b"generic_amount_format = decimal",
            b"generic_currency_path = data.currency", b"log_file = /var/log/payhook.log",
            b""]),
        "providers-missing-secret": b"providers = standard stripe\nwebhook_secret = " + a + b"\n",
        "unknown-provider": b"signature_scheme = none\nproviders = standard paypal\n",
        "adyen-bad-hex": b"providers = adyen\nadyen_secret = 0g12\n",
        "env-provider-secrets": b"#@env PAYHOOK_STRIPE_SECRET=whsec_test1 whsec_test2\n#@env PAYHOOK_ADYEN_SECRET=00ff00ff\n#@env PAYHOOK_MYSQL_PASSWORD=mysql-pass-123\nproviders = stripe adyen\nstripe_secret = replaced-by-env\n",
        "generic-bad-secret": b"providers = generic\ngeneric_signature_header = X-Sig\ngeneric_transaction_id_path = id\ngeneric_amount_path = amount\ndefault_currency = usd\ngeneric_secret_encoding = hex\ngeneric_secret = abcdefgh\n",
        "generic-two-bodies": b"providers = generic\ngeneric_secret = s\ngeneric_signature_header = X-Sig\ngeneric_transaction_id_path = id\ngeneric_amount_path = amount\ngeneric_currency_path = cur\ngeneric_signed_payload = {body}{body}\n",
        "square-without-url": b"providers = square\nsquare_secret = k\n",
        "lock-prefix-too-long": b"signature_scheme = none\nlock_key_prefix = " + b"p" * 129 + b"\n",
        "max-body-over": b"signature_scheme = none\nmax_body_bytes = 16777216\n",
    }
    if os.path.exists(example):
        with open(example, "rb") as f:
            seeds["example"] = f.read() + b"\nwebhook_secret = " + a + b"\n"
    for name, data in seeds.items():
        write("config", name, data)


# ---- request: header bytes, fields, body (see fuzz_request.c) ----
PROFILES = ["standard", "stripe", "paddle", "razorpay", "komoju", "payjp",
            "square", "shopify", "adyen", "generic"]


def provider():
    # byte 0: the profile; byte 1: bit 0 sign, bit 1 topic field, bit 2
    # event-id field, bit 3 an older timestamp; three NUL-terminated fields
    # (signature, topic, event id), then the body. Every fixture of
    # tests/fixtures/providers/, signed, and some unsigned or odd.
    fixtures = os.path.join(HERE, "..", "fixtures", "providers")
    for idx, name in enumerate(PROFILES):
        d = os.path.join(fixtures, name)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith(".json"):
                continue
            with open(os.path.join(d, f), "rb") as fh:
                body = fh.read()
            stem = f[:-5]
            write("provider", "%s-%s" % (name, stem),
                  bytes([idx, 1]) + b"\0\0\0" + body)
            if name == "shopify":
                write("provider", "%s-%s-as-refund-topic" % (name, stem),
                      bytes([idx, 3]) + b"\0refunds/create\0\0" + body)
        write("provider", "%s-unsigned" % name,
              bytes([idx, 0]) + b"v1,AAAA\0\0\0" + VALID)
    write("provider", "standard-refund",
          bytes([0, 1]) + b"\0\0\0" + b'{"type":"refund","object_id":"re_1",'
          b'"transaction_id":"tx-1","amount":500,"currency":"EUR",'
          b'"state":"succeeded","occurred_at":"2026-11-30T12:00:00.123456Z"}')
    write("provider", "standard-bad-webhook-id",
          bytes([0, 5]) + b"\0\0msg with space\0" + VALID)
    write("provider", "generic-paid",
          bytes([9, 1]) + b"\0\0\0" + b'{"id":"ev_1","event":"order.paid",'
          b'"data":{"id":"ord_1","total":"12.50","currency":"eur"}}')


def req(method=0, read=0, path=0, ct=0, trim=0, eur=0, ip503=0, rfail=0,
        cl=0, delta=0, none=0, sign=1, decorate=0, small=0, lock=0,
        insert=0, find=0, connect_fails=0, release=0, lease=0, fields=(),
        body=VALID):
    b0 = method | read << 3 | path << 5
    b1 = ct | trim << 4 | eur << 5 | ip503 << 6 | rfail << 7
    b2 = cl | delta << 3
    b3 = none | sign << 1 | decorate << 4 | small << 5
    b4 = lock | insert << 2 | find << 5 | connect_fails << 7
    b5 = release | lease << 2
    out = bytes([b0, b1, b2, b3, b4, b5])
    for f in fields:
        out += f + b"\0"
    return out + body


def request():
    seeds = {
        "processed": req(),
        "duplicate-key-b": req(sign=2, insert=1),
        "conflict": req(insert=2),
        "busy-not-found": req(lock=2, find=2),
        "busy-duplicate-503": req(lock=2, find=0, ip503=1),
        "busy-conflict": req(lock=2, find=1),
        "busy-unavailable": req(lock=2, find=3),
        "content-type-field-empty-param": req(ct=15, fields=[b"application/json;"]),
        "redis-down-db-only": req(lock=3, insert=0),
        "redis-down-fail": req(lock=3, rfail=1),
        "lease-short": req(lease=1),
        "connect-fails": req(connect_fails=1),
        "scheme-none-default-eur-trim": req(none=1, sign=0, eur=1, trim=1,
                                           body=b'{"transaction_id":" tx-9 ","amount":42}'),
        "unsigned": req(sign=0),
        "get": req(method=4),
        "no-length": req(cl=3),
        "huge-length": req(cl=6),
        "too-large-small-max": req(small=1, body=VALID[:-1] + b',"event":"payment.succeeded"}'),
        "text-plain": req(ct=4),
        "length-longer": req(cl=2, delta=3),
        "length-shorter": req(cl=1, delta=1),
        "content-type-field": req(ct=15, fields=[b'application/json ; charset = "UTF-8"']),
        "content-length-field": req(cl=5, fields=[b"%05d" % len(VALID)]),
        "forged-fields": req(sign=6, fields=[b"msg_1", b"1614265330", b"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="]),
        "field-id": req(sign=7, decorate=1, fields=[b"msg_from_input"]),
        "stale": req(sign=4),
        "unknown-key": req(sign=3),
        # eur=1 is a variant with inbox_days too: a 401 kept in the inbox.
        "inbox-forged-fields": req(sign=6, eur=1, fields=[b"msg_1", b"1614265330", b"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="]),
        "inbox-stale": req(sign=4, eur=1),
        "invalid-amount": req(body=b'{"transaction_id":"tx-1","amount":"1999","currency":"EUR"}'),
        "bytewise-read": req(read=1, release=1),
        "read-fails": req(read=3, release=2),
        "empty-body": req(cl=0, body=b""),
        "two-requests": req(body=VALID) + MARKER + req(insert=1),
        "regress-surrogate-state": req(none=1, sign=0, body=SURROGATE_POISON) + MARKER + req(none=1, sign=0, body=ESCAPED_VICTIM),
        # Routing by path (providers = standard): a last segment naming
        # another profile is a 404, before anything else is looked at.
        "path-standard": req(path=1),
        "path-stripe-404": req(path=2),
        "path-paddle-query-404": req(path=3),
        "path-info-generic-404": req(path=4),
        "path-field-adyen-404": req(path=5, fields=[b"/pay/hooks/adyen//"]),
        "path-field-query": req(path=5, fields=[b"/hooks/payments?to=/stripe"]),
        "path-field-long-segment": req(path=5, fields=[b"/" + b"s" * 65]),
        "path-field-empty": req(path=5, fields=[b""]),
        "path-stripe-not-last": req(path=6),
        "path-none": req(path=7),
        "path-stripe-404-get": req(path=2, method=4),
        "two-requests-404-then-processed": req(path=2) + MARKER + req(path=6),
        # The standard profile's event id is the webhook-id.
        "event-id-255": req(sign=7, fields=[b"e" * 255]),
        "event-id-256": req(sign=7, fields=[b"e" * 256]),
        "event-id-unsigned-bad": req(none=1, sign=6, fields=[b"msg with space", b"1", b"x"]),
        "duplicate-key-body": req(body=b'{"transaction_id":"tx-1","amount":1999,"currency":"EUR","amount":1}'),
    }
    for name, data in seeds.items():
        write("request", name, data)


def paypal():
    # fuzz_paypal.c: b0 % 3 picks the delivery (five NUL-ended headers, then
    # the body), a certificate URL, or a certificate's PEM.
    fix = os.path.join(HERE, "..", "fixtures", "providers", "paypal")
    with open(os.path.join(fix, "java-sdk-vector.json"), "rb") as f:
        body = f.read()
    with open(os.path.join(fix, "java-sdk-vector-cert.pem"), "rb") as f:
        pem = f.read()
    sig = (b"aBjgm5/xljRYu3G64Q0axISrP2xcy7WbW1u4UTCKnQvyprOZ1a1BBmqn2Jdr6ce8"
           b"E76I3Ti/AL9y4VYSHyGSEaoE6dVQcCDebLbOXLH0fjTAbTc1/rmfdWmsk0DPltW8"
           b"4Y8W8jOHe3CLWDOwg5zmozyt+AceG2x5eOiw7mLSycaEoj/5RG+dOIWXnmWcLEAr"
           b"bG3VFshy0wuhZrKuGa9C/bD4Ku+Y9gK7Bv5I5IuGRVnTGpcFnVG0KxOyJxccLGyB"
           b"VCIUMY5IZS7LkmJszQ3HZZFDTNihvgJHECSLwLhzUaysIye5G6CbbLdtAmeeb6wi"
           b"DciEAvr2dFf+SplOR4Lrng==")
    now = b"2026-12-07T18:00:00Z"

    def headers(url, when=now, algo=b"SHA256withRSA"):
        return (b"\x00" + b"071f7d20-1584-11e7-abf0-6b62a8a99ac4\x00" + when +
                b"\x00" + sig + b"\x00" + url + b"\x00" + algo + b"\x00" + body)

    write("paypal", "delivery-allowed-url",
          headers(b"https://127.0.0.1:1/v1/notifications/certs/CERT-1"))
    write("paypal", "delivery-paypal-url",
          headers(b"https://api.sandbox.paypal.com/v1/notifications/test"))
    write("paypal", "delivery-stale", headers(
        b"https://127.0.0.1:1/v1/notifications/certs/CERT-1",
        when=b"2017-03-30T20:04:05Z"))
    write("paypal", "delivery-sha1", headers(
        b"https://127.0.0.1:1/v1/notifications/certs/CERT-1",
        algo=b"SHA1withRSA"))
    write("paypal", "delivery-no-headers", b"\x00\x00\x00\x00\x00\x00" + body)
    write("paypal", "url-allowed",
          b"\x01https://127.0.0.1:1/v1/notifications/certs/CERT-1")
    write("paypal", "url-user",
          b"\x01https://127.0.0.1:1@evil.example/v1/notifications/certs/CERT-1")
    write("paypal", "url-query",
          b"\x01https://127.0.0.1:1/v1/notifications/certs/CERT-1?a=b")
    write("paypal", "url-http", b"\x01http://127.0.0.1:1/v1/notifications/certs/X")
    write("paypal", "url-ipv6", b"\x01https://[::1]:1/v1/notifications/certs/X")
    write("paypal", "cert-paypal-expired", b"\x02" + pem)
    write("paypal", "cert-two", b"\x02" + pem + pem)
    write("paypal", "cert-cut", b"\x02" + pem[: len(pem) // 2])


if __name__ == "__main__":
    # Every target, or those named: make-corpus.py provider
    targets = {"payload": payload, "signature": signature, "config": config,
               "request": request, "provider": provider, "paypal": paypal}
    for t in sys.argv[1:] or list(targets):
        targets[t]()
    sys.exit(0)
