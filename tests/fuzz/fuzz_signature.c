/* fuzz_signature.c - libFuzzer target for signature_verify and
 * signature_secret_decode: the three webhook headers and the body as a
 * stranger sends them, checked by a verifier of two secrets at a fixed now.
 *
 * Input: byte 0 is flags, the rest is split at the first three 0x00 bytes
 * into webhook-id, webhook-timestamp, webhook-signature and the body (the
 * remainder, NULs and all); a field the input runs out before is absent.
 *   bits 0-1: tolerance 300, 300, 0, LONG_MAX
 *   bits 2-3: key buffer for signature_secret_decode: 256, 32, 1, 0 bytes
 *   bits 4-5: now 1614265330 (twice), 0, -1
 * In the signature header "$A" and "$B" are replaced by the base64 HMAC of
 * "<id>.<timestamp>.<body>" under secret A or B, so the fuzzer can build
 * correctly signed requests and mutate around them. The id is also decoded
 * as a secret.
 *
 * Invariant above all: SIGNATURE_VALID only when some entry is exactly the
 * right v1 signature of one configured key (never accept a forgery).
 */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fuzz.h"
#include "signature.h"

#define SECRET_A "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SECRET_B "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define NOW_FIXED ((time_t)1614265330)
#define MAC_B64 44
#define SENTINEL 0xA5

struct key {
	unsigned char bytes[SIGNATURE_KEY_MAX];
	size_t len;
};

static struct signature_verifier *verifier; /* secrets A and B */
static struct key keys[2];

static void free_verifier(void)
{
	signature_verifier_free(verifier);
	verifier = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *secrets[] = { SECRET_A, SECRET_B };
	struct error err;

	(void)argc;
	(void)argv;
	verifier = signature_verifier_new(secrets, 2, &err);
	if (verifier == NULL)
		FUZZ_FATAL("signature_verifier_new: %s", err.message);
	atexit(free_verifier);
	for (size_t i = 0; i < 2; i++)
		if (signature_secret_decode(secrets[i], keys[i].bytes,
					    sizeof(keys[i].bytes), &keys[i].len,
					    &err) != 0)
			FUZZ_FATAL("signature_secret_decode: %s", err.message);
	return 0;
}

/* The next field: up to the next 0x00, or NULL when the input ended. The
 * returned copy is NUL-terminated and freed by the caller. */
static char *take_field(const uint8_t **p, size_t *left)
{
	const uint8_t *nul;
	size_t n;
	char *s;

	if (*left == 0)
		return NULL;
	nul = memchr(*p, 0, *left);
	n = nul != NULL ? (size_t)(nul - *p) : *left;
	s = malloc(n + 1);
	if (s == NULL)
		FUZZ_FATAL("out of memory");
	memcpy(s, *p, n);
	s[n] = '\0';
	*p += n;
	*left -= n;
	if (nul != NULL) {
		(*p)++;
		(*left)--;
	}
	return s;
}

/* signature_sign's "v1,<b64>" for key k, cross-checked against a one-shot
 * HMAC from libcrypto. */
static void expected_signature(size_t k, const char *id, const char *ts,
			       const void *body, size_t body_len,
			       char out[SIGNATURE_TEXT_MAX])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned char b64[MAC_B64 + 1];
	unsigned int mac_len = 0;
	struct error err;
	size_t n = strlen(id) + strlen(ts) + 2 + body_len;
	unsigned char *msg = malloc(n > 0 ? n : 1);

	FUZZ_CHECK(signature_sign(keys[k].bytes, keys[k].len, id, ts, body,
				  body_len, out, SIGNATURE_TEXT_MAX, &err) == 0,
		   "signature_sign failed: %s", err.message);
	if (msg == NULL)
		FUZZ_FATAL("out of memory");
	n = 0;
	memcpy(msg + n, id, strlen(id));
	n += strlen(id);
	msg[n++] = '.';
	memcpy(msg + n, ts, strlen(ts));
	n += strlen(ts);
	msg[n++] = '.';
	if (body_len > 0)
		memcpy(msg + n, body, body_len);
	n += body_len;
	if (HMAC(EVP_sha256(), keys[k].bytes, (int)keys[k].len, msg, n, mac,
		 &mac_len) == NULL)
		FUZZ_FATAL("HMAC failed");
	free(msg);
	FUZZ_CHECK(mac_len == 32, "HMAC length %u", mac_len);
	EVP_EncodeBlock(b64, mac, 32);
	FUZZ_CHECK(strncmp(out, "v1,", 3) == 0 &&
		   strcmp(out + 3, (const char *)b64) == 0,
		   "signature_sign disagrees with HMAC(): %s vs v1,%s", out,
		   (const char *)b64);
}

/* The header with every "$A"/"$B" replaced by that key's base64 MAC. */
static char *substitute(const char *header, char sig[2][SIGNATURE_TEXT_MAX])
{
	size_t n = strlen(header);
	char *out = malloc(n * MAC_B64 / 2 + n + 1);
	size_t o = 0;

	if (out == NULL)
		FUZZ_FATAL("out of memory");
	for (size_t i = 0; i < n; i++) {
		if (header[i] == '$' && (header[i + 1] == 'A' ||
					 header[i + 1] == 'B')) {
			memcpy(out + o, sig[header[i + 1] - 'A'] + 3, MAC_B64);
			o += MAC_B64;
			i++;
		} else {
			out[o++] = header[i];
		}
	}
	out[o] = '\0';
	return out;
}

/* Space-separated tokens of the header. Returns whether some token is
 * exactly want; *count gets the number of tokens and *all_pairs whether each
 * has a comma after at least one character. */
static bool header_has(const char *header, const char *want, size_t *count,
		       bool *all_pairs)
{
	size_t wlen = strlen(want);
	const char *p = header;
	bool found = false;

	*count = 0;
	*all_pairs = true;
	for (;;) {
		const char *start, *comma;
		size_t len;

		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		start = p;
		while (*p != ' ' && *p != '\0')
			p++;
		len = (size_t)(p - start);
		(*count)++;
		comma = memchr(start, ',', len);
		if (comma == NULL || comma == start)
			*all_pairs = false;
		if (len == wlen && memcmp(start, want, len) == 0)
			found = true;
	}
	return found;
}

static bool visible_ascii(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (i >= max || (unsigned char)s[i] < 0x21 ||
		    (unsigned char)s[i] > 0x7E)
			return false;
	return i > 0;
}

/* Parses 1..19 digits. Returns false for anything else. */
static bool digits_value(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; s[i] != '\0'; i++) {
		if (i >= 19 || s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return i > 0;
}

/* |ts - now| <= tolerance, exactly (tolerance below 0 counts as 0). */
static bool within(uint64_t ts, long long now, long tolerance)
{
	uint64_t tol = tolerance > 0 ? (uint64_t)tolerance : 0;

	if (now >= 0) {
		uint64_t n = (uint64_t)now;

		return (ts > n ? ts - n : n - ts) <= tol;
	}
	/* ts >= 0 > now: the distance is ts + |now|. */
	return ts <= tol && (uint64_t)0 - (uint64_t)now <= tol - ts;
}

/* signature_secret_decode on text: on success the key has the length the
 * base64 text gives, and nothing past key_len or key_cap is touched. */
static void check_decode(const char *text, size_t cap)
{
	unsigned char key[SIGNATURE_KEY_MAX + 16];
	const char *b64 = text;
	size_t key_len = SIZE_MAX, n, pad = 0, i;
	struct error err = { "" };
	int rc;

	memset(key, SENTINEL, sizeof(key));
	rc = signature_secret_decode(text, key, cap, &key_len, &err);
	if (strncmp(b64, "whsec_", 6) == 0)
		b64 += 6;
	n = strlen(b64);
	if (rc != 0) {
		FUZZ_CHECK(rc == -1, "rc %d", rc);
		FUZZ_CHECK(err.message[0] != '\0', "no error message");
		/* Long enough not to be a word of the message by chance. */
		if (n >= 16)
			FUZZ_CHECK(strstr(err.message, b64) == NULL,
				   "error message quotes the secret: %s",
				   err.message);
		for (i = 0; i < sizeof(key); i++)
			FUZZ_CHECK(key[i] == SENTINEL,
				   "key written at %zu on failure", i);
		return;
	}
	FUZZ_CHECK(n > 0 && n % 4 == 0, "accepted base64 of length %zu", n);
	if (b64[n - 1] == '=')
		pad++;
	if (n >= 2 && b64[n - 2] == '=')
		pad++;
	for (i = 0; i < n - pad; i++) {
		unsigned char c = (unsigned char)b64[i];

		FUZZ_CHECK((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			   (c >= '0' && c <= '9') || c == '+' || c == '/',
			   "accepted 0x%02x in a secret", c);
	}
	FUZZ_CHECK(key_len == n / 4 * 3 - pad,
		   "key_len %zu for %zu base64 characters", key_len, n);
	FUZZ_CHECK(key_len >= 1 && key_len <= cap &&
		   key_len <= SIGNATURE_KEY_MAX,
		   "key_len %zu with cap %zu", key_len, cap);
	for (i = key_len; i < sizeof(key); i++)
		FUZZ_CHECK(key[i] == SENTINEL, "key written at %zu past %zu",
			   i, key_len);
}

/* True when HMAC treats keys a and b as the same key: a key up to the
 * SHA-256 block size (64 bytes) is zero-padded to it, so keys that differ
 * only by trailing zero bytes are one key (found by the fuzzer: the secret
 * of key A with "AA==" appended verifies A's signatures, as it must). Longer
 * keys are hashed first; those are compared as they are. */
static bool hmac_same_key(const unsigned char *a, size_t a_len,
			  const unsigned char *b, size_t b_len)
{
	if (a_len > 64 || b_len > 64)
		return a_len == b_len && memcmp(a, b, a_len) == 0;
	while (a_len > 0 && a[a_len - 1] == 0)
		a_len--;
	while (b_len > 0 && b[b_len - 1] == 0)
		b_len--;
	return a_len == b_len && memcmp(a, b, a_len) == 0;
}

/* A secret that decodes must sign requests its own verifier accepts, and
 * that the A/B verifier refuses unless it is (HMAC-wise) one of those keys. */
static void check_round_trip(const char *secret, const void *body,
			     size_t body_len, time_t now, long tolerance)
{
	char *secrets[1];
	struct signature_key_copy {
		unsigned char bytes[SIGNATURE_KEY_MAX];
		size_t len;
	} k;
	char ts[32], sig[SIGNATURE_TEXT_MAX];
	struct signature_verifier *own;
	enum signature_status st;
	struct error err;
	bool is_ab;

	if (signature_secret_decode(secret, k.bytes, sizeof(k.bytes), &k.len,
				    &err) != 0 || now < 0)
		return;
	secrets[0] = (char *)secret;
	own = signature_verifier_new(secrets, 1, &err);
	FUZZ_CHECK(own != NULL, "verifier refused a secret that decodes: %s",
		   err.message);
	snprintf(ts, sizeof(ts), "%lld", (long long)now);
	FUZZ_CHECK(signature_sign(k.bytes, k.len, "msg_fuzz", ts, body,
				  body_len, sig, sizeof(sig), &err) == 0,
		   "signature_sign: %s", err.message);
	st = signature_verify(own, "msg_fuzz", ts, sig, body, body_len, now,
			      tolerance, NULL);
	FUZZ_CHECK(st == SIGNATURE_VALID, "own signature refused: %d",
		   (int)st);
	signature_verifier_free(own);
	is_ab = hmac_same_key(k.bytes, k.len, keys[0].bytes, keys[0].len) ||
		hmac_same_key(k.bytes, k.len, keys[1].bytes, keys[1].len);
	st = signature_verify(verifier, "msg_fuzz", ts, sig, body, body_len,
			      now, tolerance, NULL);
	FUZZ_CHECK(is_ab ? st == SIGNATURE_VALID : st == SIGNATURE_MISMATCH,
		   "another key's signature gave %d", (int)st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long tolerances[] = { 300, 300, 0, LONG_MAX };
	static const size_t caps[] = { SIGNATURE_KEY_MAX, 32, 1, 0 };
	static const time_t nows[] = { NOW_FIXED, NOW_FIXED, 0, -1 };
	char sig[2][SIGNATURE_TEXT_MAX];
	char *id, *ts, *header, *expanded = NULL;
	const uint8_t *p;
	const char *reason = NULL;
	const void *body;
	enum signature_status st;
	size_t left, body_len, tokens;
	bool match, pairs;
	long tolerance;
	uint64_t ts_value;
	time_t now;
	unsigned flags;

	if (size < 1)
		return 0;
	flags = data[0];
	tolerance = tolerances[flags & 3u];
	now = nows[(flags >> 4) & 3u];
	p = data + 1;
	left = size - 1;
	id = take_field(&p, &left);
	ts = take_field(&p, &left);
	header = take_field(&p, &left);
	body = p; /* what is left, possibly nothing */
	body_len = left;

	if (id != NULL && ts != NULL) {
		expected_signature(0, id, ts, body, body_len, sig[0]);
		expected_signature(1, id, ts, body, body_len, sig[1]);
		if (header != NULL)
			expanded = substitute(header, sig);
	}
	st = signature_verify(verifier, id, ts,
			      expanded != NULL ? expanded : header, body,
			      body_len, now, tolerance, &reason);
	FUZZ_CHECK(st >= SIGNATURE_VALID && st <= SIGNATURE_MISMATCH,
		   "status %d (SIGNATURE_ERROR means libcrypto failed)",
		   (int)st);
	if (st == SIGNATURE_VALID) {
		FUZZ_CHECK(reason == NULL, "reason on success");
		FUZZ_CHECK(id != NULL && ts != NULL && expanded != NULL,
			   "valid with a header absent");
		FUZZ_CHECK(id[0] != '\0' && visible_ascii(id, SIZE_MAX),
			   "valid with a malformed webhook-id");
		FUZZ_CHECK(digits_value(ts, &ts_value),
			   "valid with a malformed webhook-timestamp");
		FUZZ_CHECK(within(ts_value, (long long)now, tolerance),
			   "valid with a stale timestamp %s", ts);
		FUZZ_CHECK(header_has(expanded, sig[0], &tokens, &pairs) ||
			   header_has(expanded, sig[1], &tokens, &pairs),
			   "accepted a forged signature: \"%s\"", expanded);
	} else {
		FUZZ_CHECK(reason != NULL && reason[0] != '\0',
			   "no reason for status %d", (int)st);
	}
	if (st == SIGNATURE_MISSING)
		FUZZ_CHECK(id == NULL || ts == NULL || expanded == NULL ||
			   id[0] == '\0' || ts[0] == '\0' || expanded[0] == '\0',
			   "missing, with all three present");

	/* The other way round: a request signed right, with a well-formed
	 * header of few entries, must pass. */
	if (expanded != NULL && visible_ascii(id, 128) &&
	    digits_value(ts, &ts_value) &&
	    within(ts_value, (long long)now, tolerance) &&
	    strlen(expanded) <= 1024) {
		match = header_has(expanded, sig[0], &tokens, &pairs) ||
			header_has(expanded, sig[1], &tokens, &pairs);
		if (match && pairs && tokens <= 8)
			FUZZ_CHECK(st == SIGNATURE_VALID,
				   "right signature refused (%d, %s): \"%s\"",
				   (int)st, reason, expanded);
	}

	if (id != NULL) {
		check_decode(id, caps[(flags >> 2) & 3u]);
		check_round_trip(id, body, body_len, now, tolerance);
	}
	free(id);
	free(ts);
	free(header);
	free(expanded);
	return 0;
}
