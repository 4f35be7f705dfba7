/* test_signature.c - unit tests of lib/signature (Standard Webhooks HMAC
 * signatures) against vectors computed independently with the openssl CLI,
 * and of the payhook-sign program when top_builddir is known.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "signature.h"

/*
 * Expected signatures were computed with the openssl CLI, not with this code:
 *
 *   printf '%s' '<id>.<timestamp>.<body>' \
 *     | openssl dgst -sha256 -mac HMAC -macopt hexkey:<key in hex> -binary \
 *     | base64
 *
 * (for the binary and large bodies the signed content was written to a file
 * with printf / python3 and fed the same way). KEY_A is the Standard Webhooks
 * example secret, hex 31f290f6bf06298aab4f08d43c3f082cf648a362da2da4b0;
 * KEY_B is the 32 bytes 00 01 02 ... 1f.
 */
#define SECRET_A "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SECRET_B "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define SECRET_C "whsec_c2VjcmV0LW5vdC1jb25maWd1cmVk" /* never signs */
#define ID_A "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define TS_A "1614265330"
#define NOW_A ((time_t)1614265330)
#define BODY_A "{\"test\": 2432232314}"
/* The published Standard Webhooks example, confirmed with openssl. */
#define SIG_A_A "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
/* KEY_B over ID_A.TS_A.BODY_A. */
#define SIG_B_A "v1,O4Gjv1HqPqsMrjmczoggs/sWA8gZD0VyHG+fLh4+ktI="
/* KEY_B over "msg_1.1700000000.a\0b\xff\n". */
#define SIG_B_BIN "v1,qyvdzWDsWPXtRRYxsdPPQXFy99jsQ+my4RPra6pKtEw="
/* KEY_A over "msg_empty.0." (empty body). */
#define SIG_A_EMPTY "v1,Ltehlpi5OGyGDYT88/KJ9HpvrUW0SPkONXfGUWfnq/w="
/* KEY_B over "msg_big.1614265330." + 100000 bytes, byte i = (i*7+3) & 0xff. */
#define SIG_B_BIG "v1,Hl5bK4Fraqi1KtT3S96yWD9BVe7A7dHFXWKVotFm3zU="
/* KEY_A over "msg_x.1614265330.it's {\"a\":1}". */
#define SIG_A_QUOTE "v1,mdKarnbGQqj2l5B3gkXM1nFARmASd/sngPK63HL8Zgs="
/* Well-formed (44 base64 characters, 32 bytes) but signs nothing here. */
#define SIG_OTHER "v1,AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

static const unsigned char key_a[] = {
	0x31, 0xf2, 0x90, 0xf6, 0xbf, 0x06, 0x29, 0x8a, 0xab, 0x4f, 0x08, 0xd4,
	0x3c, 0x3f, 0x08, 0x2c, 0xf6, 0x48, 0xa3, 0x62, 0xda, 0x2d, 0xa4, 0xb0,
};

static struct signature_verifier *verifier;

static struct signature_verifier *verifier_of(char *const *secrets, size_t n)
{
	struct error err;
	struct signature_verifier *v = signature_verifier_new(secrets, n, &err);

	ck_assert_msg(v != NULL, "verifier_new: %s", err.message);
	return v;
}

static void setup_a(void)
{
	char *secrets[] = { SECRET_A };

	verifier = verifier_of(secrets, 1);
}

static void teardown(void)
{
	signature_verifier_free(verifier);
	verifier = NULL;
}

static enum signature_status verify_a(const char *id, const char *ts,
				      const char *sig, const char **reason)
{
	return signature_verify(verifier, id, ts, sig, BODY_A,
				strlen(BODY_A), NOW_A, 300, reason);
}

/* ---- signing ---- */

START_TEST(test_sign_standard_webhooks_vector)
{
	char out[SIGNATURE_TEXT_MAX];
	struct error err;

	ck_assert_int_eq(signature_sign(key_a, sizeof(key_a), ID_A, TS_A,
					BODY_A, strlen(BODY_A), out,
					sizeof(out), &err), 0);
	ck_assert_str_eq(out, SIG_A_A);
}
END_TEST

START_TEST(test_sign_matches_openssl)
{
	unsigned char key[SIGNATURE_KEY_MAX];
	size_t key_len = 0;
	char out[SIGNATURE_TEXT_MAX];
	static const char bin[] = "a\0b\xff\n";
	unsigned char *big;
	struct error err;

	ck_assert_int_eq(signature_secret_decode(SECRET_B, key, sizeof(key),
						 &key_len, &err), 0);
	ck_assert_uint_eq(key_len, 32);

	ck_assert_int_eq(signature_sign(key, key_len, ID_A, TS_A, BODY_A,
					strlen(BODY_A), out, sizeof(out),
					&err), 0);
	ck_assert_str_eq(out, SIG_B_A);

	/* Binary-safe: the NUL and 0xff bytes are signed, not cut. */
	ck_assert_int_eq(signature_sign(key, key_len, "msg_1", "1700000000",
					bin, sizeof(bin) - 1, out,
					sizeof(out), &err), 0);
	ck_assert_str_eq(out, SIG_B_BIN);

	big = malloc(100000);
	ck_assert_ptr_nonnull(big);
	for (size_t i = 0; i < 100000; i++)
		big[i] = (unsigned char)((i * 7 + 3) & 0xff);
	ck_assert_int_eq(signature_sign(key, key_len, "msg_big", TS_A, big,
					100000, out, sizeof(out), &err), 0);
	free(big);
	ck_assert_str_eq(out, SIG_B_BIG);

	/* An empty body, passed as NULL. */
	ck_assert_int_eq(signature_sign(key_a, sizeof(key_a), "msg_empty",
					"0", NULL, 0, out, sizeof(out), &err),
			 0);
	ck_assert_str_eq(out, SIG_A_EMPTY);
}
END_TEST

START_TEST(test_sign_rejects_bad_arguments)
{
	char out[SIGNATURE_TEXT_MAX];
	struct error err;

	error_clear(&err);
	ck_assert_int_eq(signature_sign(key_a, sizeof(key_a), ID_A, TS_A,
					BODY_A, strlen(BODY_A), out,
					SIGNATURE_TEXT_MAX - 1, &err), -1);
	ck_assert_str_ne(err.message, "");
	error_clear(&err);
	ck_assert_int_eq(signature_sign(key_a, 0, ID_A, TS_A, BODY_A,
					strlen(BODY_A), out, sizeof(out),
					&err), -1);
	ck_assert_str_ne(err.message, "");
}
END_TEST

/* ---- secrets ---- */

START_TEST(test_secret_decode_prefix_optional)
{
	unsigned char key[SIGNATURE_KEY_MAX];
	size_t key_len = 0;
	struct error err;

	ck_assert_int_eq(signature_secret_decode(SECRET_A, key, sizeof(key),
						 &key_len, &err), 0);
	ck_assert_uint_eq(key_len, sizeof(key_a));
	ck_assert_mem_eq(key, key_a, sizeof(key_a));

	memset(key, 0, sizeof(key));
	key_len = 0;
	ck_assert_int_eq(signature_secret_decode(SECRET_A + strlen("whsec_"),
						 key, sizeof(key), &key_len,
						 &err), 0);
	ck_assert_uint_eq(key_len, sizeof(key_a));
	ck_assert_mem_eq(key, key_a, sizeof(key_a));

	/* Padding is not key material: "AAE=" is 2 bytes, "AA==" is 1. */
	ck_assert_int_eq(signature_secret_decode("whsec_AAE=", key,
						 sizeof(key), &key_len, &err),
			 0);
	ck_assert_uint_eq(key_len, 2);
	ck_assert_int_eq(signature_secret_decode("AA==", key, sizeof(key),
						 &key_len, &err), 0);
	ck_assert_uint_eq(key_len, 1);
}
END_TEST

static const char *const bad_secrets[] = {
	"",
	"whsec_",
	"whsec_!!!!",
	"whsec_abc",                       /* not a multiple of 4 */
	"whsec_ab=c",                      /* '=' inside */
	"whsec_a===",                      /* too much padding */
	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS ", /* white space */
	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n",
	"whsec_MfKQ-r8GKYqrTwjUPD8ILPZIo2LaLaSw", /* URL-safe alphabet */
};

START_TEST(test_secret_decode_rejects)
{
	unsigned char key[SIGNATURE_KEY_MAX];
	size_t key_len = 99;
	struct error err;
	const char *secret = bad_secrets[_i];

	error_clear(&err);
	ck_assert_int_eq(signature_secret_decode(secret, key, sizeof(key),
						 &key_len, &err), -1);
	ck_assert_str_ne(err.message, "");
	ck_assert_uint_eq(key_len, 99);
	/* The message never quotes the secret. */
	if (strlen(secret) > strlen("whsec_"))
		ck_assert_ptr_null(strstr(err.message,
					  secret + strlen("whsec_")));
}
END_TEST

START_TEST(test_secret_decode_bounds)
{
	unsigned char key[SIGNATURE_KEY_MAX];
	size_t key_len = 0;
	struct error err;
	/* 258 bytes of key material (344 base64 chars): too long. */
	char longer[400];

	memset(longer, 'A', 344);
	longer[344] = '\0';
	ck_assert_int_eq(signature_secret_decode(longer, key, sizeof(key),
						 &key_len, &err), -1);
	/* Exactly SIGNATURE_KEY_MAX bytes: 256 = 85*3 + 1 -> "...AA==". */
	memset(longer, 'A', 344);
	longer[342] = '=';
	longer[343] = '=';
	ck_assert_int_eq(signature_secret_decode(longer, key, sizeof(key),
						 &key_len, &err), 0);
	ck_assert_uint_eq(key_len, SIGNATURE_KEY_MAX);
	/* A key larger than the caller's buffer is refused, not cut. */
	ck_assert_int_eq(signature_secret_decode(SECRET_A, key, 8, &key_len,
						 &err), -1);
	ck_assert_ptr_null(strstr(err.message, "MfKQ"));
}
END_TEST

START_TEST(test_verifier_new_errors)
{
	char *none[] = { NULL };
	char *one_bad[] = { SECRET_A, "whsec_not base64" };
	struct error err;

	error_clear(&err);
	ck_assert_ptr_null(signature_verifier_new(none, 0, &err));
	ck_assert_str_ne(err.message, "");
	error_clear(&err);
	ck_assert_ptr_null(signature_verifier_new(one_bad, 2, &err));
	ck_assert_ptr_nonnull(strstr(err.message, "2"));
	ck_assert_ptr_null(strstr(err.message, "not base64"));
	signature_verifier_free(NULL);
}
END_TEST

/* ---- verification ---- */

START_TEST(test_verify_valid)
{
	const char *reason = "unset";

	ck_assert_int_eq(verify_a(ID_A, TS_A, SIG_A_A, &reason),
			 SIGNATURE_VALID);
	ck_assert_ptr_null(reason);
	/* reason may be NULL. */
	ck_assert_int_eq(verify_a(ID_A, TS_A, SIG_A_A, NULL), SIGNATURE_VALID);
}
END_TEST

START_TEST(test_verify_empty_body)
{
	ck_assert_int_eq(signature_verify(verifier, "msg_empty", "0",
					  SIG_A_EMPTY, NULL, 0, 100, 300,
					  NULL), SIGNATURE_VALID);
}
END_TEST

START_TEST(test_verify_rotation)
{
	char *secrets[] = { SECRET_C, SECRET_B };
	char *both[] = { SECRET_A, SECRET_B };
	struct signature_verifier *v = verifier_of(secrets, 2);
	struct signature_verifier *w = verifier_of(both, 2);

	/* Signed with the second configured secret. */
	ck_assert_int_eq(signature_verify(v, ID_A, TS_A, SIG_B_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify(v, ID_A, TS_A, SIG_A_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_MISMATCH);
	ck_assert_int_eq(signature_verify(w, ID_A, TS_A, SIG_A_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify(w, ID_A, TS_A, SIG_B_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_VALID);
	signature_verifier_free(v);
	signature_verifier_free(w);
}
END_TEST

/* HMAC zero-pads keys up to its block size, so a secret that is key A plus
 * trailing zero bytes is key A (found by the fuzzer's "no other key
 * verifies" check; a property of HMAC, documented in the README). A key that
 * differs anywhere else is another key. */
START_TEST(test_verify_zero_padded_key_is_the_same_key)
{
	char *padded[] = { "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwAA==" };
	char *changed[] = { "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwAQ==" };
	struct signature_verifier *p = verifier_of(padded, 1);
	struct signature_verifier *c = verifier_of(changed, 1);

	ck_assert_int_eq(signature_verify(p, ID_A, TS_A, SIG_A_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify(c, ID_A, TS_A, SIG_A_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_MISMATCH);
	signature_verifier_free(p);
	signature_verifier_free(c);
}
END_TEST

START_TEST(test_verify_several_entries)
{
	/* Only the last entry matches; extra spaces are tolerated. */
	ck_assert_int_eq(verify_a(ID_A, TS_A,
				  "  " SIG_OTHER "   " SIG_B_A " v1,AAAA "
				  SIG_A_A "  ", NULL),
			 SIGNATURE_VALID);
	/* Unknown versions are skipped, a v1 entry still counts. */
	ck_assert_int_eq(verify_a(ID_A, TS_A, "v2,xxx " SIG_A_A, NULL),
			 SIGNATURE_VALID);
	ck_assert_int_eq(verify_a(ID_A, TS_A,
				  "v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= "
				  SIG_A_A, NULL),
			 SIGNATURE_VALID);
	/* "v1a" (asymmetric) and "v10" are other versions, not v1. */
	ck_assert_int_eq(verify_a(ID_A, TS_A,
				  "v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
				  NULL), SIGNATURE_MALFORMED);
	ck_assert_int_eq(verify_a(ID_A, TS_A,
				  "v10,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= "
				  SIG_OTHER, NULL), SIGNATURE_MISMATCH);
	/* The right MAC under another version label does not count. */
	ck_assert_int_eq(verify_a(ID_A, TS_A,
				  "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= "
				  SIG_OTHER, NULL),
			 SIGNATURE_MISMATCH);
}
END_TEST

START_TEST(test_verify_mismatch)
{
	char *wrong[] = { SECRET_C };
	struct signature_verifier *v = verifier_of(wrong, 1);
	const char *reason = NULL;
	char body[] = BODY_A;

	ck_assert_int_eq(signature_verify(v, ID_A, TS_A, SIG_A_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, &reason),
			 SIGNATURE_MISMATCH);
	ck_assert_ptr_nonnull(reason);
	ck_assert_ptr_null(strstr(reason, "g0hM"));
	signature_verifier_free(v);

	/* One byte of the body changed. */
	body[10] ^= 1;
	ck_assert_int_eq(signature_verify(verifier, ID_A, TS_A, SIG_A_A, body,
					  strlen(body), NOW_A, 300, NULL),
			 SIGNATURE_MISMATCH);
	/* One byte fewer. */
	ck_assert_int_eq(signature_verify(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A) - 1, NOW_A,
					  300, NULL),
			 SIGNATURE_MISMATCH);
	/* Another id or timestamp (still fresh). */
	ck_assert_int_eq(verify_a("msg_p5jXN8AQM9LWM0D4loKWxJeK", TS_A,
				  SIG_A_A, NULL), SIGNATURE_MISMATCH);
	ck_assert_int_eq(verify_a(ID_A, "1614265331", SIG_A_A, NULL),
			 SIGNATURE_MISMATCH);
	/* Leading zeros are digits too, but change the signed text. */
	ck_assert_int_eq(verify_a(ID_A, "01614265330", SIG_A_A, NULL),
			 SIGNATURE_MISMATCH);
	/* One base64 character of the signature changed. */
	ck_assert_int_eq(verify_a(ID_A, TS_A,
				  "v1,g0hN9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
				  NULL), SIGNATURE_MISMATCH);
	/* A non-canonical encoding of the same bytes (unused low bits set)
	 * is not the signature text: refused, as by the reference libraries. */
	ck_assert_int_eq(verify_a(ID_A, TS_A,
				  "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OF=",
				  NULL), SIGNATURE_MISMATCH);
}
END_TEST

START_TEST(test_verify_wrong_length_base64)
{
	static const char *const sigs[] = {
		"v1,AAAA",
		"v1,",
		/* the right MAC without its padding */
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE",
		/* the right MAC with a byte appended */
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OEA",
		"v1,AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIQ==",
		"v1,!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!=",
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1O==",
	};

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		ck_assert_msg(verify_a(ID_A, TS_A, sigs[i], NULL) ==
			      SIGNATURE_MISMATCH, "%s", sigs[i]);
}
END_TEST

START_TEST(test_verify_tolerance)
{
	const char *reason = NULL;

	ck_assert_int_eq(signature_verify(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A + 300,
					  300, NULL), SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A - 300,
					  300, NULL), SIGNATURE_VALID);
	/* 301 s old. */
	ck_assert_int_eq(signature_verify(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A + 301,
					  300, &reason), SIGNATURE_STALE);
	ck_assert_str_eq(reason, "webhook-timestamp outside the tolerance");
	/* 301 s in the future. */
	ck_assert_int_eq(signature_verify(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A - 301,
					  300, NULL), SIGNATURE_STALE);
	/* Tolerance 0 means the same second only. */
	ck_assert_int_eq(signature_verify(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A, 0,
					  NULL), SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A + 1, 0,
					  NULL), SIGNATURE_STALE);
	/* Staleness is reported before a mismatch. */
	ck_assert_int_eq(signature_verify(verifier, ID_A, TS_A, SIG_OTHER,
					  BODY_A, strlen(BODY_A), NOW_A + 301,
					  300, NULL), SIGNATURE_STALE);
	/* The largest well-formed timestamp is stale, not an overflow. */
	ck_assert_int_eq(verify_a(ID_A, "9999999999999999999", SIG_A_A,
				  NULL), SIGNATURE_STALE);
	ck_assert_int_eq(verify_a(ID_A, "0", SIG_A_A, NULL), SIGNATURE_STALE);
}
END_TEST

static const char *const bad_timestamps[] = {
	"-1", "12a", " 123", "123 ", "+123", "1614265330.5", "0x10",
	"12345678901234567890", /* 20 digits */
	"\xd9\xa1",              /* a non-ASCII digit */
};

START_TEST(test_verify_bad_timestamp)
{
	const char *reason = NULL;

	ck_assert_int_eq(verify_a(ID_A, bad_timestamps[_i], SIG_A_A, &reason),
			 SIGNATURE_MALFORMED);
	ck_assert_ptr_nonnull(reason);
	ck_assert_ptr_nonnull(strstr(reason, "webhook-timestamp"));
}
END_TEST

START_TEST(test_verify_bad_id)
{
	char long_id[300];

	ck_assert_int_eq(verify_a("msg 1", TS_A, SIG_A_A, NULL),
			 SIGNATURE_MALFORMED);
	ck_assert_int_eq(verify_a("msg\x01", TS_A, SIG_A_A, NULL),
			 SIGNATURE_MALFORMED);
	ck_assert_int_eq(verify_a("msg_\xc3\xa9", TS_A, SIG_A_A, NULL),
			 SIGNATURE_MALFORMED);
	memset(long_id, 'a', 257);
	long_id[257] = '\0';
	ck_assert_int_eq(verify_a(long_id, TS_A, SIG_A_A, NULL),
			 SIGNATURE_MALFORMED);
	/* 256 bytes is still well formed: it just does not match. */
	long_id[256] = '\0';
	ck_assert_int_eq(verify_a(long_id, TS_A, SIG_A_A, NULL),
			 SIGNATURE_MISMATCH);
}
END_TEST

START_TEST(test_verify_missing)
{
	const char *reason = NULL;

	ck_assert_int_eq(verify_a(NULL, TS_A, SIG_A_A, &reason),
			 SIGNATURE_MISSING);
	ck_assert_ptr_nonnull(strstr(reason, "webhook-id"));
	ck_assert_int_eq(verify_a(ID_A, NULL, SIG_A_A, &reason),
			 SIGNATURE_MISSING);
	ck_assert_ptr_nonnull(strstr(reason, "webhook-timestamp"));
	ck_assert_int_eq(verify_a(ID_A, TS_A, NULL, &reason),
			 SIGNATURE_MISSING);
	ck_assert_ptr_nonnull(strstr(reason, "webhook-signature"));
	ck_assert_int_eq(verify_a("", TS_A, SIG_A_A, NULL), SIGNATURE_MISSING);
	ck_assert_int_eq(verify_a(ID_A, "", SIG_A_A, NULL), SIGNATURE_MISSING);
	ck_assert_int_eq(verify_a(ID_A, TS_A, "", NULL), SIGNATURE_MISSING);
	/* Missing wins over malformed in another header. */
	ck_assert_int_eq(verify_a("bad id", TS_A, NULL, NULL),
			 SIGNATURE_MISSING);
}
END_TEST

START_TEST(test_verify_malformed_signature_header)
{
	const char *reason = NULL;
	char many[1024] = "";
	char *huge;

	ck_assert_int_eq(verify_a(ID_A, TS_A, "v1", &reason),
			 SIGNATURE_MALFORMED);
	ck_assert_int_eq(verify_a(ID_A, TS_A, "garbage", &reason),
			 SIGNATURE_MALFORMED);
	ck_assert_int_eq(verify_a(ID_A, TS_A, SIG_A_A " garbage", &reason),
			 SIGNATURE_MALFORMED);
	ck_assert_int_eq(verify_a(ID_A, TS_A, ",abcd", &reason),
			 SIGNATURE_MALFORMED);
	ck_assert_int_eq(verify_a(ID_A, TS_A, "v2,abcd", &reason),
			 SIGNATURE_MALFORMED);
	ck_assert_str_eq(reason, "webhook-signature has no v1 signature");
	ck_assert_int_eq(verify_a(ID_A, TS_A, "   ", &reason),
			 SIGNATURE_MALFORMED);
	ck_assert_str_eq(reason, "webhook-signature has no v1 signature");

	/* 16 entries are checked, 17 are refused. */
	for (int i = 0; i < 15; i++)
		strcat(many, "v1,AAAA ");
	strcat(many, SIG_A_A);
	ck_assert_int_eq(verify_a(ID_A, TS_A, many, NULL), SIGNATURE_VALID);
	strcat(many, " v1,AAAA");
	ck_assert_int_eq(verify_a(ID_A, TS_A, many, &reason),
			 SIGNATURE_MALFORMED);
	ck_assert_str_eq(reason, "webhook-signature has too many entries");

	/* A header beyond 4096 bytes is refused before any parsing. */
	huge = malloc(5000);
	ck_assert_ptr_nonnull(huge);
	memcpy(huge, SIG_A_A, strlen(SIG_A_A));
	memset(huge + strlen(SIG_A_A), ' ', 4999 - strlen(SIG_A_A));
	huge[4999] = '\0';
	ck_assert_int_eq(verify_a(ID_A, TS_A, huge, NULL),
			 SIGNATURE_MALFORMED);
	free(huge);

	/* A malformed timestamp is reported before a bad signature list. */
	ck_assert_int_eq(verify_a(ID_A, "x", "garbage", &reason),
			 SIGNATURE_MALFORMED);
	ck_assert_ptr_nonnull(strstr(reason, "webhook-timestamp"));
	/* A malformed list is reported before staleness. */
	ck_assert_int_eq(verify_a(ID_A, "0", "garbage", &reason),
			 SIGNATURE_MALFORMED);
}
END_TEST

/* ---- the payhook-sign program ---- */

/* Runs cmd with sh, stores its standard output in out (NUL-terminated) and
 * returns its exit status, or -1 when it could not run. */
static int run(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	size_t len = 0, n;
	int status;

	ck_assert_ptr_nonnull(p);
	while ((n = fread(out + len, 1, cap - 1 - len, p)) > 0)
		len += n;
	out[len] = '\0';
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Puts the path of the built program in buf. These tests are only added to
 * the suite when top_builddir is set (by make check). */
static void sign_program(char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/app/payhook-sign", getenv("top_builddir"));
}

/* Writes len bytes into a new temporary file and returns its path in path. */
static void temp_file(char *path, size_t cap, const char *data, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, cap, "%s/test_signature.XXXXXX",
		 dir != NULL && dir[0] != '\0' ? dir : "/tmp");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

START_TEST(test_program_headers)
{
	char prog[1024], path[1024], cmd[4096], out[4096];

	sign_program(prog, sizeof(prog));
	temp_file(path, sizeof(path), BODY_A, strlen(BODY_A));
	snprintf(cmd, sizeof(cmd), "'%s' --secret " SECRET_A " --id " ID_A
		 " --timestamp " TS_A " '%s'", prog, path);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "webhook-id: " ID_A "\n"
			      "webhook-timestamp: " TS_A "\n"
			      "webhook-signature: " SIG_A_A "\n");

	/* The first secret of PAYHOOK_WEBHOOK_SECRET, body on stdin. */
	snprintf(cmd, sizeof(cmd), "PAYHOOK_WEBHOOK_SECRET=' " SECRET_B " "
		 SECRET_A "' '%s' --id " ID_A " --timestamp " TS_A
		 " < '%s'", prog, path);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "webhook-id: " ID_A "\n"
			      "webhook-timestamp: " TS_A "\n"
			      "webhook-signature: " SIG_B_A "\n");

	/* A default id is msg_ plus 24 hex digits. */
	snprintf(cmd, sizeof(cmd), "'%s' --secret " SECRET_A " '%s' | "
		 "grep -c '^webhook-id: msg_[0-9a-f]\\{24\\}$'", prog, path);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "1\n");
	unlink(path);
}
END_TEST

START_TEST(test_program_curl)
{
	static const char body[] = "it's {\"a\":1}";
	char prog[1024], path[1024], script[1040], cmd[4096], out[4096];
	char line[4096];
	FILE *f;

	sign_program(prog, sizeof(prog));
	temp_file(path, sizeof(path), body, strlen(body));
	snprintf(cmd, sizeof(cmd), "'%s' --secret " SECRET_A " --id msg_x "
		 "--timestamp " TS_A " --curl 'http://h/p?a=1&b=2' < '%s'",
		 prog, path);
	ck_assert_int_eq(run(cmd, line, sizeof(line)), 0);
	ck_assert_ptr_eq(strchr(line, '\n'), line + strlen(line) - 1);

	/* Run the command with curl replaced by a function that prints its
	 * arguments, one per line: sh must see exactly what curl would. */
	snprintf(script, sizeof(script), "%s.sh", path);
	f = fopen(script, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "curl() { for a in \"$@\"; do printf '%%s\\n' \"$a\"; "
		"done; }\n%s", line);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "sh '%s'", script);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "-sS\n-X\nPOST\nhttp://h/p?a=1&b=2\n"
			      "-H\nContent-Type: application/json\n"
			      "-H\nwebhook-id: msg_x\n"
			      "-H\nwebhook-timestamp: " TS_A "\n"
			      "-H\nwebhook-signature: " SIG_A_QUOTE "\n"
			      "--data-binary\nit's {\"a\":1}\n");
	unlink(script);

	/* A body in FILE is sent with @FILE. */
	snprintf(cmd, sizeof(cmd), "'%s' --secret " SECRET_A " --id msg_x "
		 "--timestamp " TS_A " --curl http://h/ '%s'", prog, path);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 0);
	snprintf(line, sizeof(line), " --data-binary '@%s'\n", path);
	ck_assert_ptr_nonnull(strstr(out, line));
	ck_assert_ptr_nonnull(strstr(out, SIG_A_QUOTE));
	unlink(path);
}
END_TEST

START_TEST(test_program_usage)
{
	char prog[1024], cmd[4096], out[4096];

	sign_program(prog, sizeof(prog));
	snprintf(cmd, sizeof(cmd), "'%s' --help", prog);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "--secret"));
	/* No secret at all. */
	snprintf(cmd, sizeof(cmd), "PAYHOOK_WEBHOOK_SECRET= '%s' "
		 "</dev/null 2>&1", prog);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 2);
	ck_assert_ptr_nonnull(strstr(out, "payhook-sign: "));
	snprintf(cmd, sizeof(cmd), "'%s' --bogus </dev/null 2>/dev/null",
		 prog);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 2);
	snprintf(cmd, sizeof(cmd), "'%s' --secret whsec_!!!! </dev/null "
		 "2>&1", prog);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 2);
	ck_assert_ptr_null(strstr(out, "!!!!"));
	snprintf(cmd, sizeof(cmd), "'%s' --secret " SECRET_A " --timestamp "
		 "-5 </dev/null 2>/dev/null", prog);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 2);
	ck_assert_str_eq(out, "");
}
END_TEST

static Suite *signature_suite(void)
{
	Suite *s = suite_create("signature");
	const char *top;
	TCase *tc;

	tc = tcase_create("sign");
	tcase_add_test(tc, test_sign_standard_webhooks_vector);
	tcase_add_test(tc, test_sign_matches_openssl);
	tcase_add_test(tc, test_sign_rejects_bad_arguments);
	suite_add_tcase(s, tc);

	tc = tcase_create("secret");
	tcase_add_test(tc, test_secret_decode_prefix_optional);
	tcase_add_loop_test(tc, test_secret_decode_rejects, 0,
			    (int)(sizeof(bad_secrets) / sizeof(bad_secrets[0])));
	tcase_add_test(tc, test_secret_decode_bounds);
	tcase_add_test(tc, test_verifier_new_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("verify");
	tcase_add_checked_fixture(tc, setup_a, teardown);
	tcase_add_test(tc, test_verify_valid);
	tcase_add_test(tc, test_verify_empty_body);
	tcase_add_test(tc, test_verify_rotation);
	tcase_add_test(tc, test_verify_zero_padded_key_is_the_same_key);
	tcase_add_test(tc, test_verify_several_entries);
	tcase_add_test(tc, test_verify_mismatch);
	tcase_add_test(tc, test_verify_wrong_length_base64);
	tcase_add_test(tc, test_verify_tolerance);
	tcase_add_loop_test(tc, test_verify_bad_timestamp, 0,
			    (int)(sizeof(bad_timestamps) /
				  sizeof(bad_timestamps[0])));
	tcase_add_test(tc, test_verify_bad_id);
	tcase_add_test(tc, test_verify_missing);
	tcase_add_test(tc, test_verify_malformed_signature_header);
	suite_add_tcase(s, tc);

	top = getenv("top_builddir");
	if (top == NULL || top[0] == '\0') {
		fprintf(stderr, "top_builddir unset: payhook-sign not tested\n");
		return s;
	}
	tc = tcase_create("program");
	tcase_add_test(tc, test_program_headers);
	tcase_add_test(tc, test_program_curl);
	tcase_add_test(tc, test_program_usage);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(signature_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
