/* signature.c - Standard Webhooks signature checks: HMAC-SHA256 over
 * "<id>.<timestamp>.<body>" with libcrypto, base64 keys and signatures.
 */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "signature.h"

/* HMAC-SHA256 output size. */
#define MAC_LEN 32
/* Bounds on what a stranger can make us parse; a real header is far smaller. */
#define SIGNATURE_HEADER_MAX 4096
#define SIGNATURE_ENTRIES_MAX 16
/* Length of the base64 text of a 32-byte MAC ("...=" with one pad). */
#define MAC_B64_LEN 44
#define SECRET_PREFIX "whsec_"
/* Longest base64 text that can decode to SIGNATURE_KEY_MAX bytes. */
#define KEY_B64_MAX (((SIGNATURE_KEY_MAX + 2) / 3) * 4)

struct signature_key {
	size_t len;
	unsigned char bytes[SIGNATURE_KEY_MAX];
	/* HMAC-SHA256 already keyed: each request only resets it, which spares
	 * libcrypto's digest look-up and key set-up on the hot path. */
	EVP_MAC_CTX *ctx;
};

struct signature_verifier {
	EVP_MAC *mac; /* fetched once */
	size_t count;
	struct signature_key keys[];
};

static bool is_b64_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/* Decodes standard, padded base64 in[0..in_len) into out, which must hold
 * in_len / 4 * 3 bytes. Returns the decoded length, or -1 when in is empty,
 * not a multiple of 4 long, or holds anything but the alphabet and up to two
 * trailing '='. EVP_DecodeBlock alone would accept white space and count the
 * padding as zero bytes, hence the checks. */
static long b64_decode(const char *in, size_t in_len, unsigned char *out)
{
	size_t pad = 0;
	int n;

	if (in_len == 0 || in_len % 4 != 0 || in_len > INT_MAX)
		return -1;
	if (in[in_len - 1] == '=')
		pad++;
	if (in[in_len - 2] == '=')
		pad++;
	for (size_t i = 0; i < in_len - pad; i++)
		if (!is_b64_char((unsigned char)in[i]))
			return -1;
	n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)in_len);
	if (n < 0 || (size_t)n != in_len / 4 * 3)
		return -1;
	return (long)((size_t)n - pad);
}

int signature_secret_decode(const char *secret, unsigned char *key,
			    size_t key_cap, size_t *key_len, struct error *err)
{
	unsigned char buf[KEY_B64_MAX / 4 * 3];
	size_t text_len;
	long n;

	if (secret == NULL || secret[0] == '\0')
		return error_set(err, "webhook secret is empty");
	if (strncmp(secret, SECRET_PREFIX, strlen(SECRET_PREFIX)) == 0)
		secret += strlen(SECRET_PREFIX);
	text_len = strlen(secret);
	if (text_len == 0)
		return error_set(err, "webhook secret has no key after whsec_");
	if (text_len > KEY_B64_MAX)
		return error_set(err, "webhook secret is longer than %d bytes "
				 "once decoded", SIGNATURE_KEY_MAX);
	n = b64_decode(secret, text_len, buf);
	if (n < 0)
		return error_set(err, "webhook secret is not valid base64");
	if (n == 0 || (size_t)n > SIGNATURE_KEY_MAX) {
		OPENSSL_cleanse(buf, sizeof(buf));
		return error_set(err, "webhook secret decodes to %ld bytes "
				 "(1 to %d allowed)", n, SIGNATURE_KEY_MAX);
	}
	if ((size_t)n > key_cap) {
		OPENSSL_cleanse(buf, sizeof(buf));
		return error_set(err, "webhook secret decodes to %ld bytes, "
				 "more than the %zu available", n, key_cap);
	}
	memcpy(key, buf, (size_t)n);
	*key_len = (size_t)n;
	OPENSSL_cleanse(buf, sizeof(buf));
	return 0;
}

/* Returns a new HMAC-SHA256 context keyed with key (the caller frees it with
 * EVP_MAC_CTX_free), or NULL when libcrypto fails. */
static EVP_MAC_CTX *keyed_mac_new(EVP_MAC *mac, const unsigned char *key,
				  size_t key_len)
{
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						 digest, 0),
		OSSL_PARAM_construct_end(),
	};
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);

	if (ctx != NULL && EVP_MAC_init(ctx, key, key_len, params) != 1) {
		EVP_MAC_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

struct signature_verifier *signature_verifier_new(char *const *secrets,
						  size_t count,
						  struct error *err)
{
	struct signature_verifier *v;
	struct error inner;

	if (secrets == NULL || count == 0) {
		error_set(err, "no webhook secret configured");
		return NULL;
	}
	if (count > (SIZE_MAX - sizeof(*v)) / sizeof(v->keys[0])) {
		error_set(err, "too many webhook secrets");
		return NULL;
	}
	v = calloc(1, sizeof(*v) + count * sizeof(v->keys[0]));
	if (v == NULL) {
		error_set(err, "out of memory");
		return NULL;
	}
	v->count = count;
	for (size_t i = 0; i < count; i++) {
		if (signature_secret_decode(secrets[i], v->keys[i].bytes,
					    sizeof(v->keys[i].bytes),
					    &v->keys[i].len, &inner) < 0) {
			error_set(err, "webhook secret %zu: %s", i + 1,
				  inner.message);
			signature_verifier_free(v);
			return NULL;
		}
	}
	v->mac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
	if (v->mac == NULL) {
		error_set(err, "libcrypto has no HMAC");
		signature_verifier_free(v);
		return NULL;
	}
	for (size_t i = 0; i < count; i++) {
		v->keys[i].ctx = keyed_mac_new(v->mac, v->keys[i].bytes,
					       v->keys[i].len);
		if (v->keys[i].ctx == NULL) {
			error_set(err, "libcrypto: HMAC set-up failed");
			signature_verifier_free(v);
			return NULL;
		}
	}
	return v;
}

void signature_verifier_free(struct signature_verifier *verifier)
{
	if (verifier == NULL)
		return;
	for (size_t i = 0; i < verifier->count; i++)
		EVP_MAC_CTX_free(verifier->keys[i].ctx);
	EVP_MAC_free(verifier->mac);
	OPENSSL_cleanse(verifier->keys, verifier->count *
			sizeof(verifier->keys[0]));
	free(verifier);
}

/* Computes HMAC-SHA256 of "<id>.<ts>.<body>" into out[MAC_LEN] with the key
 * ctx was made with (keyed_mac_new): a NULL key to EVP_MAC_init resets the
 * context and keeps the key. The body is fed in place, not copied.
 * Returns 0, or -1 when libcrypto fails. */
static int compute_mac(EVP_MAC_CTX *ctx, const char *id, const char *ts,
		       const void *body, size_t body_len,
		       unsigned char out[MAC_LEN])
{
	size_t out_len = 0;

	if (EVP_MAC_init(ctx, NULL, 0, NULL) != 1 ||
	    EVP_MAC_update(ctx, (const unsigned char *)id, strlen(id)) != 1 ||
	    EVP_MAC_update(ctx, (const unsigned char *)".", 1) != 1 ||
	    EVP_MAC_update(ctx, (const unsigned char *)ts, strlen(ts)) != 1 ||
	    EVP_MAC_update(ctx, (const unsigned char *)".", 1) != 1)
		return -1;
	if (body_len > 0 && EVP_MAC_update(ctx, body, body_len) != 1)
		return -1;
	if (EVP_MAC_final(ctx, out, &out_len, MAC_LEN) != 1 ||
	    out_len != MAC_LEN)
		return -1;
	return 0;
}

int signature_sign(const unsigned char *key, size_t key_len,
		   const char *webhook_id, const char *webhook_timestamp,
		   const void *body, size_t body_len, char *out, size_t out_cap,
		   struct error *err)
{
	unsigned char mac[MAC_LEN];
	EVP_MAC *hmac = NULL;
	EVP_MAC_CTX *ctx = NULL;
	int rc = -1;

	if (out == NULL || out_cap < SIGNATURE_TEXT_MAX)
		return error_set(err, "signature buffer too small");
	if (key == NULL || key_len == 0 || key_len > SIGNATURE_KEY_MAX)
		return error_set(err, "signing key must be 1 to %d bytes",
				 SIGNATURE_KEY_MAX);
	if (webhook_id == NULL || webhook_timestamp == NULL ||
	    (body == NULL && body_len > 0))
		return error_set(err, "nothing to sign");
	hmac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
	if (hmac == NULL) {
		error_set(err, "libcrypto has no HMAC");
		goto out;
	}
	ctx = keyed_mac_new(hmac, key, key_len);
	if (ctx == NULL) {
		error_set(err, "libcrypto: HMAC set-up failed");
		goto out;
	}
	if (compute_mac(ctx, webhook_id, webhook_timestamp, body, body_len,
			mac) < 0) {
		error_set(err, "HMAC-SHA256 failed");
		goto out;
	}
	memcpy(out, "v1,", 3);
	/* 32 bytes always encode to 44 characters plus the NUL it writes. */
	EVP_EncodeBlock((unsigned char *)out + 3, mac, MAC_LEN);
	rc = 0;
out:
	OPENSSL_cleanse(mac, sizeof(mac));
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(hmac);
	return rc;
}

bool signature_id_valid(const char *id)
{
	size_t i;

	for (i = 0; id[i] != '\0'; i++) {
		if (i >= SIGNATURE_ID_MAX)
			return false;
		if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e)
			return false;
	}
	return i > 0;
}

/* 19 digits always fit in 64 unsigned bits: no overflow is possible. */
int signature_timestamp_parse(const char *text, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; text[i] != '\0'; i++) {
		if (i >= SIGNATURE_TIMESTAMP_DIGITS_MAX || text[i] < '0' || text[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(text[i] - '0');
	}
	if (i == 0)
		return -1;
	*out = v;
	return 0;
}

/* |now - ts| <= tolerance, computed without overflow for any inputs. */
static bool timestamp_fresh(uint64_t ts, time_t now, long tolerance_s)
{
	uint64_t tol = tolerance_s > 0 ? (uint64_t)tolerance_s : 0;
	uint64_t diff;
	long long n = (long long)now;

	if (n >= 0) {
		uint64_t un = (uint64_t)n;

		diff = ts > un ? ts - un : un - ts;
	} else {
		uint64_t neg = (uint64_t)0 - (uint64_t)n;

		if (ts > UINT64_MAX - neg)
			return false;
		diff = ts + neg;
	}
	return diff <= tol;
}

/* One entry of the webhook-signature list, pointing into the header. */
struct sig_entry {
	const char *text;
	size_t len;
};

/* Finds the next space-separated token at or after *pos. Returns false at the
 * end of the header. */
static bool next_token(const char **pos, struct sig_entry *tok)
{
	const char *p = *pos;

	while (*p == ' ')
		p++;
	if (*p == '\0')
		return false;
	tok->text = p;
	while (*p != ' ' && *p != '\0')
		p++;
	tok->len = (size_t)(p - tok->text);
	*pos = p;
	return true;
}

/* For a token "<version>,<value>", returns whether the version is "v1" and
 * sets *value. Returns -1 when the token has no comma or no version. */
static int entry_split(const struct sig_entry *tok, struct sig_entry *value)
{
	const char *comma = memchr(tok->text, ',', tok->len);

	if (comma == NULL || comma == tok->text)
		return -1;
	value->text = comma + 1;
	value->len = tok->len - (size_t)(comma + 1 - tok->text);
	return (size_t)(comma - tok->text) == 2 &&
	       memcmp(tok->text, "v1", 2) == 0;
}

/* Checks the form of the signature header. Returns 0 with reason NULL, or -1
 * with *reason set. */
static int signature_header_check(const char *header, const char **reason)
{
	const char *pos = header;
	struct sig_entry tok, value;
	size_t entries = 0, v1 = 0;
	int kind;

	if (strnlen(header, SIGNATURE_HEADER_MAX + 1) > SIGNATURE_HEADER_MAX) {
		*reason = "webhook-signature is too long";
		return -1;
	}
	while (next_token(&pos, &tok)) {
		if (++entries > SIGNATURE_ENTRIES_MAX) {
			*reason = "webhook-signature has too many entries";
			return -1;
		}
		kind = entry_split(&tok, &value);
		if (kind < 0) {
			*reason = "webhook-signature entry is not "
				  "<version>,<signature>";
			return -1;
		}
		if (kind == 1)
			v1++;
	}
	if (v1 == 0) {
		*reason = "webhook-signature has no v1 signature";
		return -1;
	}
	return 0;
}

/* Whether any v1 entry of the (already checked) header equals mac. The
 * canonical base64 text of mac is compared in constant time with each entry,
 * as the reference libraries do: an entry of another length, or a
 * non-canonical encoding of the same bytes, simply does not match. */
static bool header_matches(const char *header, const unsigned char *mac)
{
	const char *pos = header;
	struct sig_entry tok, value;
	unsigned char text[MAC_B64_LEN + 1];
	bool found = false;

	EVP_EncodeBlock(text, mac, MAC_LEN);
	while (!found && next_token(&pos, &tok)) {
		if (entry_split(&tok, &value) != 1 ||
		    value.len != MAC_B64_LEN)
			continue;
		found = CRYPTO_memcmp(value.text, text, MAC_B64_LEN) == 0;
	}
	OPENSSL_cleanse(text, sizeof(text));
	return found;
}

static enum signature_status finish(enum signature_status status,
				    const char *text, const char **reason)
{
	if (reason != NULL)
		*reason = status == SIGNATURE_VALID ? NULL : text;
	return status;
}

enum signature_status signature_verify(const struct signature_verifier *verifier,
				       const char *webhook_id,
				       const char *webhook_timestamp,
				       const char *webhook_signature,
				       const void *body, size_t body_len,
				       time_t now, long tolerance_s,
				       const char **reason)
{
	unsigned char mac[MAC_LEN];
	const char *why = NULL;
	uint64_t ts;
	bool found = false;

	if (webhook_id == NULL || webhook_id[0] == '\0')
		return finish(SIGNATURE_MISSING, "webhook-id header missing",
			      reason);
	if (webhook_timestamp == NULL || webhook_timestamp[0] == '\0')
		return finish(SIGNATURE_MISSING,
			      "webhook-timestamp header missing", reason);
	if (webhook_signature == NULL || webhook_signature[0] == '\0')
		return finish(SIGNATURE_MISSING,
			      "webhook-signature header missing", reason);
	if (!signature_id_valid(webhook_id))
		return finish(SIGNATURE_MALFORMED, "webhook-id is malformed",
			      reason);
	if (signature_timestamp_parse(webhook_timestamp, &ts) < 0)
		return finish(SIGNATURE_MALFORMED,
			      "webhook-timestamp is not Unix seconds", reason);
	if (signature_header_check(webhook_signature, &why) < 0)
		return finish(SIGNATURE_MALFORMED, why, reason);
	if (!timestamp_fresh(ts, now, tolerance_s))
		return finish(SIGNATURE_STALE,
			      "webhook-timestamp outside the tolerance", reason);
	if (verifier == NULL || (body == NULL && body_len > 0))
		return finish(SIGNATURE_ERROR,
			      "signature could not be checked", reason);

	/* One HMAC per key, compared against every entry: the work is bounded
	 * by the number of configured keys, not by what the sender sends. */
	for (size_t k = 0; k < verifier->count && !found; k++) {
		if (compute_mac(verifier->keys[k].ctx, webhook_id,
				webhook_timestamp, body, body_len, mac) < 0) {
			why = "signature could not be computed";
			break;
		}
		found = header_matches(webhook_signature, mac);
	}
	OPENSSL_cleanse(mac, sizeof(mac));
	if (found)
		return finish(SIGNATURE_VALID, NULL, reason);
	if (why != NULL)
		return finish(SIGNATURE_ERROR, why, reason);
	return finish(SIGNATURE_MISMATCH, "no matching signature", reason);
}
