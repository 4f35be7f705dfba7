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
    # byte 0: bit 0 default EUR, bit 1 trim, bits 2-3 reason buffer
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
    }
    for name, data in seeds.items():
        write("payload", name, data)


def signature():
    # byte 0 flags; then id \0 timestamp \0 signature header \0 body
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
    }
    if os.path.exists(example):
        with open(example, "rb") as f:
            seeds["example"] = f.read() + b"\nwebhook_secret = " + a + b"\n"
    for name, data in seeds.items():
        write("config", name, data)


# ---- request: header bytes, fields, body (see fuzz_request.c) ----
def req(method=0, read=0, ct=0, trim=0, eur=0, ip503=0, rfail=0, cl=0,
        delta=0, none=0, sign=1, decorate=0, small=0, lock=0, insert=0,
        find=0, connect_fails=0, release=0, lease=0, fields=(), body=VALID):
    b0 = method | read << 3
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
        "invalid-amount": req(body=b'{"transaction_id":"tx-1","amount":"1999","currency":"EUR"}'),
        "bytewise-read": req(read=1, release=1),
        "read-fails": req(read=3, release=2),
        "empty-body": req(cl=0, body=b""),
        "two-requests": req(body=VALID) + MARKER + req(insert=1),
        "regress-surrogate-state": req(none=1, sign=0, body=SURROGATE_POISON) + MARKER + req(none=1, sign=0, body=ESCAPED_VICTIM),
    }
    for name, data in seeds.items():
        write("request", name, data)


if __name__ == "__main__":
    payload()
    signature()
    config()
    request()
    sys.exit(0)
