/* test_signature.c - unit tests of lib/signature (Standard Webhooks, Stripe,
 * Paddle, digest and token schemes over HMAC-SHA256) and lib/secret against
 * vectors computed independently with the openssl CLI, and of the
 * payhook-sign program when top_builddir is known.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "configuration.h"
#include "sample.h"
#include "secret.h"
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

static struct signature_keyring *verifier;

static struct signature_keyring *ring_of(char *const *secrets, size_t n,
					 enum secret_form form)
{
	struct error err;
	struct signature_keyring *r = signature_keyring_new(secrets, n, form,
							    &err);

	ck_assert_msg(r != NULL, "keyring_new: %s", err.message);
	return r;
}

static struct signature_keyring *verifier_of(char *const *secrets, size_t n)
{
	return ring_of(secrets, n, SECRET_WHSEC_BASE64);
}

static void setup_a(void)
{
	char *secrets[] = { SECRET_A };

	verifier = verifier_of(secrets, 1);
}

static void teardown(void)
{
	signature_keyring_free(verifier);
	verifier = NULL;
}

static enum signature_status verify_a(const char *id, const char *ts,
				      const char *sig, const char **reason)
{
	return signature_verify_standard(verifier, id, ts, sig, BODY_A,
					 strlen(BODY_A), NOW_A, 300, reason);
}

/* Signs with the one secret given, as payhook-sign does. */
static int sign_with(const char *secret, const char *id, const char *ts,
		     const void *body, size_t len, char *out)
{
	char *secrets[] = { (char *)secret };
	struct signature_keyring *ring = verifier_of(secrets, 1);
	struct error err;
	int rc = signature_sign_standard(ring, id, ts, body, len, out, &err);

	signature_keyring_free(ring);
	return rc;
}

/* ---- signing ---- */

START_TEST(test_sign_standard_webhooks_vector)
{
	char out[SIGNATURE_TEXT_MAX];

	ck_assert_int_eq(sign_with(SECRET_A, ID_A, TS_A, BODY_A,
				   strlen(BODY_A), out), 0);
	ck_assert_str_eq(out, SIG_A_A);
}
END_TEST

START_TEST(test_sign_matches_openssl)
{
	char out[SIGNATURE_TEXT_MAX];
	static const char bin[] = "a\0b\xff\n";
	unsigned char *big;

	ck_assert_int_eq(sign_with(SECRET_B, ID_A, TS_A, BODY_A, strlen(BODY_A),
				   out), 0);
	ck_assert_str_eq(out, SIG_B_A);

	/* Binary-safe: the NUL and 0xff bytes are signed, not cut. */
	ck_assert_int_eq(sign_with(SECRET_B, "msg_1", "1700000000", bin,
				   sizeof(bin) - 1, out), 0);
	ck_assert_str_eq(out, SIG_B_BIN);

	big = malloc(100000);
	ck_assert_ptr_nonnull(big);
	for (size_t i = 0; i < 100000; i++)
		big[i] = (unsigned char)((i * 7 + 3) & 0xff);
	ck_assert_int_eq(sign_with(SECRET_B, "msg_big", TS_A, big, 100000, out),
			 0);
	free(big);
	ck_assert_str_eq(out, SIG_B_BIG);

	/* An empty body, passed as NULL. */
	ck_assert_int_eq(sign_with(SECRET_A, "msg_empty", "0", NULL, 0, out), 0);
	ck_assert_str_eq(out, SIG_A_EMPTY);
}
END_TEST

START_TEST(test_sign_rejects_bad_arguments)
{
	char out[SIGNATURE_TEXT_MAX];
	struct error err;
	char *secrets[] = { SECRET_A };
	struct signature_keyring *ring = verifier_of(secrets, 1);

	error_clear(&err);
	ck_assert_int_eq(signature_sign_standard(ring, ID_A, TS_A, NULL, 5, out,
						 &err), -1);
	ck_assert_str_ne(err.message, "");
	signature_keyring_free(ring);
}
END_TEST

/* ---- secrets ---- */

START_TEST(test_secret_decode_prefix_required)
{
	struct secret_key key;
	struct error err;

	ck_assert_int_eq(secret_decode(SECRET_WHSEC_BASE64, SECRET_A, &key,
				       &err), 0);
	ck_assert_uint_eq(key.len, sizeof(key_a));
	ck_assert_mem_eq(key.bytes, key_a, sizeof(key_a));

	/* Without whsec_ it would silently be another key: refused. */
	ck_assert_int_eq(secret_decode(SECRET_WHSEC_BASE64,
				       SECRET_A + strlen("whsec_"), &key, &err),
			 -1);
	ck_assert_ptr_nonnull(strstr(err.message, "expected whsec_"));
	ck_assert_ptr_null(strstr(err.message, "MfKQ"));

	/* Padding is not key material: "AAE=" is 2 bytes, "AA==" is 1. */
	ck_assert_int_eq(secret_decode(SECRET_WHSEC_BASE64, "whsec_AAE=", &key,
				       &err), 0);
	ck_assert_uint_eq(key.len, 2);
	ck_assert_int_eq(secret_decode(SECRET_BASE64, "AA==", &key, &err), 0);
	ck_assert_uint_eq(key.len, 1);
}
END_TEST

/* The other forms: text is the key; hex (Adyen) either case. */
START_TEST(test_secret_forms)
{
	struct secret_key key;
	struct error err;

	ck_assert_int_eq(secret_decode(SECRET_TEXT, "whsec_test", &key, &err), 0);
	ck_assert_uint_eq(key.len, 10);
	ck_assert_mem_eq(key.bytes, "whsec_test", 10);
	ck_assert_int_eq(secret_decode(SECRET_HEX, "00fFa0", &key, &err), 0);
	ck_assert_uint_eq(key.len, 3);
	ck_assert_mem_eq(key.bytes, "\x00\xff\xa0", 3);
	ck_assert_int_eq(secret_decode(SECRET_HEX, "0fa", &key, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "expected hex digits"));
	ck_assert_int_eq(secret_decode(SECRET_HEX, "zz", &key, &err), -1);
	ck_assert_int_eq(secret_decode(SECRET_TEXT, "", &key, &err), -1);
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
	"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", /* no prefix */
};

START_TEST(test_secret_decode_rejects)
{
	struct secret_key key;
	struct error err;
	const char *secret = bad_secrets[_i];

	error_clear(&err);
	ck_assert_int_eq(secret_decode(SECRET_WHSEC_BASE64, secret, &key, &err),
			 -1);
	ck_assert_str_ne(err.message, "");
	ck_assert_uint_eq(key.len, 0);
	/* The message never quotes the secret. */
	if (strlen(secret) > strlen("whsec_"))
		ck_assert_ptr_null(strstr(err.message,
					  secret + strlen("whsec_")));
}
END_TEST

START_TEST(test_secret_decode_bounds)
{
	struct secret_key key;
	struct error err;
	/* 258 bytes of key material (344 base64 chars): too long. */
	char longer[400] = "whsec_";

	memset(longer + 6, 'A', 344);
	longer[350] = '\0';
	ck_assert_int_eq(secret_decode(SECRET_WHSEC_BASE64, longer, &key, &err),
			 -1);
	/* Exactly SECRET_KEY_MAX bytes: 256 = 85*3 + 1 -> "...AA==". */
	longer[348] = '=';
	longer[349] = '=';
	ck_assert_int_eq(secret_decode(SECRET_WHSEC_BASE64, longer, &key, &err),
			 0);
	ck_assert_uint_eq(key.len, SECRET_KEY_MAX);
}
END_TEST

START_TEST(test_verifier_new_errors)
{
	char *none[] = { NULL };
	char *one_bad[] = { SECRET_A, "whsec_not base64" };
	struct error err;

	error_clear(&err);
	ck_assert_ptr_null(signature_keyring_new(none, 0, SECRET_WHSEC_BASE64,
						 &err));
	ck_assert_str_ne(err.message, "");
	error_clear(&err);
	ck_assert_ptr_null(signature_keyring_new(one_bad, 2,
						 SECRET_WHSEC_BASE64, &err));
	ck_assert_ptr_nonnull(strstr(err.message, "2"));
	ck_assert_ptr_null(strstr(err.message, "not base64"));
	signature_keyring_free(NULL);
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
	ck_assert_int_eq(signature_verify_standard(verifier, "msg_empty", "0",
					  SIG_A_EMPTY, NULL, 0, 100, 300,
					  NULL), SIGNATURE_VALID);
}
END_TEST

START_TEST(test_verify_rotation)
{
	char *secrets[] = { SECRET_C, SECRET_B };
	char *both[] = { SECRET_A, SECRET_B };
	struct signature_keyring *v = verifier_of(secrets, 2);
	struct signature_keyring *w = verifier_of(both, 2);

	/* Signed with the second configured secret. */
	ck_assert_int_eq(signature_verify_standard(v, ID_A, TS_A, SIG_B_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify_standard(v, ID_A, TS_A, SIG_A_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_MISMATCH);
	ck_assert_int_eq(signature_verify_standard(w, ID_A, TS_A, SIG_A_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify_standard(w, ID_A, TS_A, SIG_B_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_VALID);
	signature_keyring_free(v);
	signature_keyring_free(w);
}
END_TEST

/* HMAC zero-pads keys up to its block size, so a secret that is key A plus
 * trailing zero bytes is key A (found by the fuzzer's "no other key
 * verifies" check; a property of HMAC, documented in doc/providers.md). A key that
 * differs anywhere else is another key. */
START_TEST(test_verify_zero_padded_key_is_the_same_key)
{
	char *padded[] = { "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwAA==" };
	char *changed[] = { "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwAQ==" };
	struct signature_keyring *p = verifier_of(padded, 1);
	struct signature_keyring *c = verifier_of(changed, 1);

	ck_assert_int_eq(signature_verify_standard(p, ID_A, TS_A, SIG_A_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify_standard(c, ID_A, TS_A, SIG_A_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, NULL),
			 SIGNATURE_MISMATCH);
	signature_keyring_free(p);
	signature_keyring_free(c);
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
	struct signature_keyring *v = verifier_of(wrong, 1);
	const char *reason = NULL;
	char body[] = BODY_A;

	ck_assert_int_eq(signature_verify_standard(v, ID_A, TS_A, SIG_A_A, BODY_A,
					  strlen(BODY_A), NOW_A, 300, &reason),
			 SIGNATURE_MISMATCH);
	ck_assert_ptr_nonnull(reason);
	ck_assert_ptr_null(strstr(reason, "g0hM"));
	signature_keyring_free(v);

	/* One byte of the body changed. */
	body[10] ^= 1;
	ck_assert_int_eq(signature_verify_standard(verifier, ID_A, TS_A, SIG_A_A, body,
					  strlen(body), NOW_A, 300, NULL),
			 SIGNATURE_MISMATCH);
	/* One byte fewer. */
	ck_assert_int_eq(signature_verify_standard(verifier, ID_A, TS_A, SIG_A_A,
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

	ck_assert_int_eq(signature_verify_standard(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A + 300,
					  300, NULL), SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify_standard(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A - 300,
					  300, NULL), SIGNATURE_VALID);
	/* 301 s old. */
	ck_assert_int_eq(signature_verify_standard(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A + 301,
					  300, &reason), SIGNATURE_STALE);
	ck_assert_str_eq(reason, "webhook-timestamp outside the tolerance");
	/* 301 s in the future. */
	ck_assert_int_eq(signature_verify_standard(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A - 301,
					  300, NULL), SIGNATURE_STALE);
	/* Tolerance 0 means the same second only. */
	ck_assert_int_eq(signature_verify_standard(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A, 0,
					  NULL), SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify_standard(verifier, ID_A, TS_A, SIG_A_A,
					  BODY_A, strlen(BODY_A), NOW_A + 1, 0,
					  NULL), SIGNATURE_STALE);
	/* Staleness is reported before a mismatch. */
	ck_assert_int_eq(signature_verify_standard(verifier, ID_A, TS_A, SIG_OTHER,
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
	/* The id becomes the row's event_id, a VARBINARY(255). */
	memset(long_id, 'a', 256);
	long_id[256] = '\0';
	ck_assert_int_eq(verify_a(long_id, TS_A, SIG_A_A, NULL),
			 SIGNATURE_MALFORMED);
	/* 255 bytes is still well formed: it just does not match. */
	long_id[255] = '\0';
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
	char prog[1024], cmd[4096], out[16384];

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

/* The usage names every event --sample knows (the refunds, disputes and
 * cancellations too), each under its provider, and each one it names is
 * one --sample writes. */
START_TEST(test_program_usage_samples)
{
	char prog[1024], cmd[4096], out[16384], one[4096];
	const char *name;
	size_t named = 0;

	sign_program(prog, sizeof(prog));
	snprintf(cmd, sizeof(cmd), "'%s' --help", prog);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 0);
	for (int p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		char head[64];
		const char *para, *end;

		if (sample_name((enum config_provider)p, 0) == NULL)
			continue;
		snprintf(head, sizeof(head), "\n  %s:",
			 config_provider_name((enum config_provider)p));
		para = strstr(out, head);
		ck_assert_msg(para != NULL, "usage has no paragraph %s", head + 1);
		/* To the next provider's line (wrapped lines go deeper). */
		for (end = strstr(para + 1, "\n  ");
		     end != NULL && end[3] == ' '; end = strstr(end + 1, "\n  "))
			;
		if (end == NULL)
			end = para + strlen(para);
		for (size_t i = 0; (name = sample_name((enum config_provider)p,
						       i)) != NULL; i++) {
			const char *at;
			bool found = false;

			for (at = para; (at = strstr(at, name)) != NULL &&
					at < end; at++) {
				size_t n = strlen(name);

				if (at[-1] == ' ' &&
				    (at[n] == ',' || at[n] == '\n'))
					found = true;
			}
			ck_assert_msg(found, "usage of %s does not name %s",
				      head + 3, name);
			snprintf(cmd, sizeof(cmd), "'%s' --provider %s --sample "
				 "'%s' >/dev/null 2>&1 && echo ok", prog,
				 config_provider_name((enum config_provider)p),
				 name);
			ck_assert_int_eq(run(cmd, one, sizeof(one)), 0);
			ck_assert_str_eq(one, "ok\n");
			named++;
		}
	}
	/* The lifecycle ones are there: the count is the tables' own. */
	ck_assert_ptr_nonnull(strstr(out, " refund.updated,"));
	ck_assert_ptr_nonnull(strstr(out, " charge.dispute.closed\n"));
	ck_assert_uint_gt(named, 60);
}
END_TEST

/* ---- the other schemes (vectors from the openssl CLI, e.g.
 *   printf '%s' "1614265330.$BODY_E" | openssl dgst -sha256 -hmac whsec_test_secret
 * and -binary | base64 for the base64 ones) ---- */

#define BODY_E "{\"id\":\"evt_1\",\"type\":\"payment_intent.succeeded\"}"
#define STRIPE_HEX "f60156f07d9fcede64d2d4c42b7e1f12f459a2e0c0c293d0bd7f817fbc59ecf6"
#define PADDLE_HEX "61379d765b9d699687e7299e2d484ca70ad0301bb883337681661b14691af5dc"
#define RAZORPAY_HEX "703e4068b5737db92ced6bd48ce801a9120dfe4aa93d3038aaded28af51df0b6"
#define SHOPIFY_B64 "uGw8Y/Q6BtDDN9WdYLXza56oFRTueNwE9y59aA8hDsg="
#define SQUARE_URL "https://example.com/webhook/square"
#define SQUARE_B64 "v8zEGYj481yFZ8/zzBiUCEAnZ+Vi54QleB33cssdZnw="
#define ADYEN_KEY "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
#define ADYEN_B64 "8xPPMAXS3BIGcMjxBaUDESnHOMl9b7WezsxOA5u4xxQ="

static struct signature_keyring *text_ring(const char *secret)
{
	char *secrets[] = { "another-secret", (char *)secret };

	return ring_of(secrets, 2, SECRET_TEXT);
}

START_TEST(test_verify_stripe)
{
	struct signature_keyring *ring = text_ring("whsec_test_secret");
	const char *reason = NULL;

#define STRIPE(header, now)                                                   \
	signature_verify_stripe(ring, header, BODY_E, strlen(BODY_E), now, 300, \
				&reason)
	ck_assert_int_eq(STRIPE("t=1614265330,v1=" STRIPE_HEX, NOW_A),
			 SIGNATURE_VALID);
	/* Several v1 (rotation), a v0 skipped, any order, upper-case hex. */
	ck_assert_int_eq(STRIPE("v0=abc,v1=" RAZORPAY_HEX ",t=1614265330,v1="
				STRIPE_HEX, NOW_A), SIGNATURE_VALID);
	ck_assert_int_eq(STRIPE("t=1614265330,v1=F60156F07D9FCEDE64D2D4C42B7E1F12"
				"F459A2E0C0C293D0BD7F817FBC59ECF6", NOW_A),
			 SIGNATURE_VALID);
	/* The timestamp is signed: another t does not verify. */
	ck_assert_int_eq(STRIPE("t=1614265331,v1=" STRIPE_HEX, NOW_A),
			 SIGNATURE_MISMATCH);
	ck_assert_int_eq(STRIPE("t=1614265330,v1=" STRIPE_HEX, NOW_A + 301),
			 SIGNATURE_STALE);
	ck_assert_ptr_nonnull(strstr(reason, "tolerance"));
	ck_assert_int_eq(STRIPE("t=1614265330,v1=" STRIPE_HEX, NOW_A - 301),
			 SIGNATURE_STALE);
	ck_assert_int_eq(STRIPE(NULL, NOW_A), SIGNATURE_MISSING);
	ck_assert_str_eq(reason, "Stripe-Signature header missing");
	ck_assert_int_eq(STRIPE("v1=" STRIPE_HEX, NOW_A), SIGNATURE_MALFORMED);
	ck_assert_int_eq(STRIPE("t=1614265330", NOW_A), SIGNATURE_MALFORMED);
	ck_assert_int_eq(STRIPE("t=1614265330,t=1614265330,v1=" STRIPE_HEX,
				NOW_A), SIGNATURE_MALFORMED);
	ck_assert_int_eq(STRIPE("t=-5,v1=" STRIPE_HEX, NOW_A),
			 SIGNATURE_MALFORMED);
	ck_assert_int_eq(STRIPE("garbage", NOW_A), SIGNATURE_MALFORMED);
#undef STRIPE
	signature_keyring_free(ring);
}
END_TEST

START_TEST(test_verify_paddle)
{
	struct signature_keyring *ring = text_ring("pdl_ntfset_01abc_secret");

#define PADDLE(header) signature_verify_paddle(ring, header, BODY_E,    \
					       strlen(BODY_E), NOW_A, 5, NULL)
	ck_assert_int_eq(PADDLE("ts=1614265330;h1=" PADDLE_HEX), SIGNATURE_VALID);
	ck_assert_int_eq(PADDLE("ts=1614265330; h1=" STRIPE_HEX "; h1="
				PADDLE_HEX), SIGNATURE_VALID);
	/* Stripe's separators are not Paddle's. */
	ck_assert_int_eq(PADDLE("ts=1614265330,h1=" PADDLE_HEX),
			 SIGNATURE_MALFORMED);
	ck_assert_int_eq(PADDLE("ts=1614265330;h1=" STRIPE_HEX),
			 SIGNATURE_MISMATCH);
#undef PADDLE
	ck_assert_int_eq(signature_verify_paddle(ring,
						 "ts=1614265330;h1=" PADDLE_HEX,
						 BODY_E, strlen(BODY_E),
						 NOW_A + 6, 5, NULL),
			 SIGNATURE_STALE);
	signature_keyring_free(ring);
}
END_TEST

START_TEST(test_verify_digest)
{
	struct signature_keyring *rzp = text_ring("rzp_secret");
	struct signature_keyring *shop = text_ring("shpss_secret");
	struct signature_keyring *sq = text_ring("sq_key");
	char *adyen_keys[] = { ADYEN_KEY };
	struct signature_keyring *adyen = ring_of(adyen_keys, 1, SECRET_HEX);
	struct signature_part body[] = { { BODY_E, strlen(BODY_E) } };
	struct signature_part url_body[] = {
		{ SQUARE_URL, strlen(SQUARE_URL) }, { BODY_E, strlen(BODY_E) },
	};
	const char *reason = NULL;

	ck_assert_int_eq(signature_verify_digest(rzp, RAZORPAY_HEX, NULL,
						 SIGNATURE_HEX, body, 1, "m",
						 &reason), SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify_digest(rzp, "sha256=" RAZORPAY_HEX,
						 "sha256=", SIGNATURE_HEX, body,
						 1, "m", &reason),
			 SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify_digest(rzp, RAZORPAY_HEX, "sha256=",
						 SIGNATURE_HEX, body, 1, "m",
						 &reason), SIGNATURE_MALFORMED);
	ck_assert_int_eq(signature_verify_digest(rzp, STRIPE_HEX, NULL,
						 SIGNATURE_HEX, body, 1, "m",
						 &reason), SIGNATURE_MISMATCH);
	ck_assert_int_eq(signature_verify_digest(rzp, "", NULL, SIGNATURE_HEX,
						 body, 1, "X-Sig missing",
						 &reason), SIGNATURE_MISSING);
	ck_assert_str_eq(reason, "X-Sig missing");
	ck_assert_int_eq(signature_verify_digest(shop, SHOPIFY_B64, NULL,
						 SIGNATURE_BASE64, body, 1, "m",
						 &reason), SIGNATURE_VALID);
	/* Hex where base64 is expected, and the reverse, never match. */
	ck_assert_int_eq(signature_verify_digest(rzp, RAZORPAY_HEX, NULL,
						 SIGNATURE_BASE64, body, 1, "m",
						 &reason), SIGNATURE_MISMATCH);
	ck_assert_int_eq(signature_verify_digest(sq, SQUARE_B64, NULL,
						 SIGNATURE_BASE64, url_body, 2,
						 "m", &reason), SIGNATURE_VALID);
	/* Square signs the URL too: the body alone does not verify. */
	ck_assert_int_eq(signature_verify_digest(sq, SQUARE_B64, NULL,
						 SIGNATURE_BASE64, body, 1, "m",
						 &reason), SIGNATURE_MISMATCH);
	ck_assert_int_eq(signature_verify_digest(adyen, ADYEN_B64, NULL,
						 SIGNATURE_BASE64, body, 1, "m",
						 &reason), SIGNATURE_VALID);
	signature_keyring_free(rzp);
	signature_keyring_free(shop);
	signature_keyring_free(sq);
	signature_keyring_free(adyen);
}
END_TEST

START_TEST(test_verify_token)
{
	struct signature_keyring *ring = text_ring("whook_payjp_token");
	const char *reason = NULL;

	ck_assert_int_eq(signature_verify_token(ring, "whook_payjp_token", "m",
						&reason), SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify_token(ring, "another-secret", "m",
						&reason), SIGNATURE_VALID);
	ck_assert_int_eq(signature_verify_token(ring, "whook_payjp_toke", "m",
						&reason), SIGNATURE_MISMATCH);
	ck_assert_int_eq(signature_verify_token(ring, "whook_payjp_tokenx",
						"m", &reason),
			 SIGNATURE_MISMATCH);
	ck_assert_int_eq(signature_verify_token(ring, NULL, "token missing",
						&reason), SIGNATURE_MISSING);
	ck_assert_str_eq(reason, "token missing");
	signature_keyring_free(ring);
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
	tcase_add_test(tc, test_secret_decode_prefix_required);
	tcase_add_test(tc, test_secret_forms);
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
	tcase_add_test(tc, test_verify_stripe);
	tcase_add_test(tc, test_verify_paddle);
	tcase_add_test(tc, test_verify_digest);
	tcase_add_test(tc, test_verify_token);
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
	tcase_add_test(tc, test_program_usage_samples);
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
