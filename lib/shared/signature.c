/* signature.c - webhook signature schemes over HMAC-SHA256 from libcrypto
 * (see signature.h). Each scheme only parses its header into candidate
 * signatures and says which bytes are signed; computing and comparing is
 * shared, so every scheme does one HMAC per key and compares in constant time.
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

#include "encoding.h"
#include "number.h"
#include "signature.h"

/* Length of the base64 text of a 32-byte MAC ("...=" with one pad). */
#define MAC_B64_LEN ENCODING_BASE64_LEN(SIGNATURE_MAC_LEN)
#define MAC_HEX_LEN (2 * SIGNATURE_MAC_LEN)

struct ring_key {
	/* HMAC-SHA256 already keyed: each request only resets it, which spares
	 * libcrypto's digest look-up and key set-up on the hot path. */
	EVP_MAC_CTX *ctx;
	/* SHA-256 of the secret, for the static-token scheme. */
	unsigned char token_digest[SIGNATURE_MAC_LEN];
};

struct signature_keyring {
	EVP_MAC *mac; /* fetched once */
	size_t count;
	struct ring_key keys[];
};

/* A piece of a header, pointing into it. */
struct span {
	const char *text;
	size_t len;
};

/* The signatures a header offered, and the timestamp when it has one. */
struct candidates {
	size_t count;
	struct span items[SIGNATURE_ENTRIES_MAX];
};

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

struct signature_keyring *signature_keyring_new(char *const *secrets,
						size_t count,
						enum secret_form form,
						struct error *err)
{
	struct signature_keyring *ring;
	struct secret_key key;
	struct error inner;
	unsigned int digest_len;

	if (secrets == NULL || count == 0) {
		error_set(err, "no secret configured");
		return NULL;
	}
	if (count > (SIZE_MAX - sizeof(*ring)) / sizeof(ring->keys[0])) {
		error_set(err, "too many secrets");
		return NULL;
	}
	ring = calloc(1, sizeof(*ring) + count * sizeof(ring->keys[0]));
	if (ring == NULL) {
		error_set(err, "out of memory");
		return NULL;
	}
	ring->mac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
	if (ring->mac == NULL) {
		error_set(err, "libcrypto has no HMAC");
		goto fail;
	}
	for (size_t i = 0; i < count; i++) {
		if (secret_decode(form, secrets[i], &key, &inner) < 0) {
			error_set(err, "secret %zu: %s", i + 1, inner.message);
			goto fail;
		}
		ring->count = i + 1;
		ring->keys[i].ctx = keyed_mac_new(ring->mac, key.bytes, key.len);
		if (ring->keys[i].ctx == NULL ||
		    EVP_Digest(key.bytes, key.len, ring->keys[i].token_digest,
			       &digest_len, EVP_sha256(), NULL) != 1) {
			secret_key_wipe(&key);
			error_set(err, "libcrypto: HMAC set-up failed");
			goto fail;
		}
		secret_key_wipe(&key);
	}
	return ring;
fail:
	signature_keyring_free(ring);
	return NULL;
}

void signature_keyring_free(struct signature_keyring *ring)
{
	if (ring == NULL)
		return;
	for (size_t i = 0; i < ring->count; i++)
		EVP_MAC_CTX_free(ring->keys[i].ctx);
	EVP_MAC_free(ring->mac);
	OPENSSL_cleanse(ring->keys, ring->count * sizeof(ring->keys[0]));
	free(ring);
}

int signature_keyring_mac(const struct signature_keyring *ring, size_t index,
			  const struct signature_part *parts, size_t count,
			  unsigned char mac[SIGNATURE_MAC_LEN])
{
	EVP_MAC_CTX *ctx;
	size_t out_len = 0;

	if (ring == NULL || index >= ring->count)
		return -1;
	ctx = ring->keys[index].ctx;
	/* A NULL key resets the context and keeps the key. */
	if (EVP_MAC_init(ctx, NULL, 0, NULL) != 1)
		return -1;
	for (size_t i = 0; i < count; i++) {
		if (parts[i].len > 0 &&
		    EVP_MAC_update(ctx, parts[i].data, parts[i].len) != 1)
			return -1;
	}
	if (EVP_MAC_final(ctx, mac, &out_len, SIGNATURE_MAC_LEN) != 1 ||
	    out_len != SIGNATURE_MAC_LEN)
		return -1;
	return 0;
}

void signature_mac_text(const unsigned char mac[SIGNATURE_MAC_LEN],
			enum signature_encoding enc, char *out)
{
	if (enc == SIGNATURE_HEX)
		encoding_hex_encode(mac, SIGNATURE_MAC_LEN, out);
	else
		encoding_base64_encode(mac, SIGNATURE_MAC_LEN, out);
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

int signature_timestamp_parse(const char *text, size_t len, uint64_t *out)
{
	if (len > SIGNATURE_TIMESTAMP_DIGITS_MAX)
		return -1;
	return number_parse_n(text, len, UINT64_MAX, out) == NUMBER_OK ? 0 : -1;
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

static enum signature_status finish(enum signature_status status,
				    const char *text, const char **reason)
{
	if (reason != NULL)
		*reason = status == SIGNATURE_VALID ? NULL : text;
	return status;
}

/* Whether candidate equals mac written in enc, in constant time for a
 * candidate of the right length. Hex is compared as bytes (either case);
 * base64 as the canonical text, as the reference libraries do, so another
 * encoding of the same bytes simply does not match. */
static bool candidate_matches(const struct span *candidate,
			      const unsigned char mac[SIGNATURE_MAC_LEN],
			      enum signature_encoding enc)
{
	unsigned char bytes[SIGNATURE_MAC_LEN];
	char text[MAC_B64_LEN + 1];
	bool same;

	if (enc == SIGNATURE_HEX) {
		if (candidate->len != MAC_HEX_LEN ||
		    encoding_hex_decode(candidate->text, candidate->len, bytes,
					sizeof(bytes)) != SIGNATURE_MAC_LEN)
			return false;
		same = CRYPTO_memcmp(bytes, mac, SIGNATURE_MAC_LEN) == 0;
		OPENSSL_cleanse(bytes, sizeof(bytes));
		return same;
	}
	if (candidate->len != MAC_B64_LEN)
		return false;
	encoding_base64_encode(mac, SIGNATURE_MAC_LEN, text);
	same = CRYPTO_memcmp(candidate->text, text, MAC_B64_LEN) == 0;
	OPENSSL_cleanse(text, sizeof(text));
	return same;
}

/* One HMAC per key over parts, compared against every candidate: the work is
 * bounded by the number of configured keys, not by what the sender sends. */
static enum signature_status match_any(const struct signature_keyring *ring,
				       const struct signature_part *parts,
				       size_t count,
				       const struct candidates *cands,
				       enum signature_encoding enc,
				       const char **reason)
{
	unsigned char mac[SIGNATURE_MAC_LEN];
	bool found = false;

	if (ring == NULL)
		return finish(SIGNATURE_ERROR, "signature could not be checked",
			      reason);
	for (size_t k = 0; k < ring->count && !found; k++) {
		if (signature_keyring_mac(ring, k, parts, count, mac) < 0) {
			OPENSSL_cleanse(mac, sizeof(mac));
			return finish(SIGNATURE_ERROR,
				      "signature could not be computed", reason);
		}
		for (size_t c = 0; c < cands->count && !found; c++)
			found = candidate_matches(&cands->items[c], mac, enc);
	}
	OPENSSL_cleanse(mac, sizeof(mac));
	if (found)
		return finish(SIGNATURE_VALID, NULL, reason);
	return finish(SIGNATURE_MISMATCH, "no matching signature", reason);
}

/* Finds the next item of header at or after *pos, items separated by sep
 * (surrounding spaces ignored). Returns false at the end of the header. */
static bool next_item(const char **pos, char sep, struct span *item)
{
	const char *p = *pos;
	const char *end;

	while (*p == ' ' || *p == sep)
		p++;
	if (*p == '\0')
		return false;
	item->text = p;
	while (*p != sep && *p != '\0')
		p++;
	end = p;
	while (end > item->text && end[-1] == ' ')
		end--;
	item->len = (size_t)(end - item->text);
	*pos = p;
	return true;
}

/* Splits item at the first kv_sep into name and value. Returns false when
 * there is no separator or no name. */
static bool split_pair(const struct span *item, char kv_sep, struct span *name,
		       struct span *value)
{
	const char *mark = memchr(item->text, kv_sep, item->len);

	if (mark == NULL || mark == item->text)
		return false;
	name->text = item->text;
	name->len = (size_t)(mark - item->text);
	value->text = mark + 1;
	value->len = item->len - name->len - 1;
	return true;
}

static bool span_is(const struct span *s, const char *text)
{
	size_t n = strlen(text);

	return s->len == n && memcmp(s->text, text, n) == 0;
}

static bool header_too_long(const char *header)
{
	return strnlen(header, SIGNATURE_HEADER_MAX + 1) > SIGNATURE_HEADER_MAX;
}

/* ---- Standard Webhooks ---- */

enum signature_status signature_verify_standard(
	const struct signature_keyring *ring, const char *webhook_id,
	const char *webhook_timestamp, const char *webhook_signature,
	const void *body, size_t body_len, time_t now, long tolerance_s,
	const char **reason)
{
	struct candidates cands = { 0 };
	struct span item, version, value;
	const char *pos;
	uint64_t ts;
	size_t entries = 0;

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
	if (signature_timestamp_parse(webhook_timestamp,
				      strlen(webhook_timestamp), &ts) < 0)
		return finish(SIGNATURE_MALFORMED,
			      "webhook-timestamp is not Unix seconds", reason);
	if (header_too_long(webhook_signature))
		return finish(SIGNATURE_MALFORMED,
			      "webhook-signature is too long", reason);
	/* Space-separated "v<N>,<base64>" entries; only v1 is checked. */
	pos = webhook_signature;
	while (next_item(&pos, ' ', &item)) {
		if (++entries > SIGNATURE_ENTRIES_MAX)
			return finish(SIGNATURE_MALFORMED,
				      "webhook-signature has too many entries",
				      reason);
		if (!split_pair(&item, ',', &version, &value))
			return finish(SIGNATURE_MALFORMED,
				      "webhook-signature entry is not "
				      "<version>,<signature>", reason);
		if (span_is(&version, "v1"))
			cands.items[cands.count++] = value;
	}
	if (cands.count == 0)
		return finish(SIGNATURE_MALFORMED,
			      "webhook-signature has no v1 signature", reason);
	if (!timestamp_fresh(ts, now, tolerance_s))
		return finish(SIGNATURE_STALE,
			      "webhook-timestamp outside the tolerance", reason);
	if (body == NULL && body_len > 0)
		return finish(SIGNATURE_ERROR, "signature could not be checked",
			      reason);
	{
		const struct signature_part parts[] = {
			{ webhook_id, strlen(webhook_id) }, { ".", 1 },
			{ webhook_timestamp, strlen(webhook_timestamp) },
			{ ".", 1 }, { body, body_len },
		};

		return match_any(ring, parts, 5, &cands, SIGNATURE_BASE64,
				 reason);
	}
}

int signature_sign_standard(const struct signature_keyring *ring,
			    const char *webhook_id,
			    const char *webhook_timestamp, const void *body,
			    size_t body_len, char *out, struct error *err)
{
	unsigned char mac[SIGNATURE_MAC_LEN];
	const struct signature_part parts[] = {
		{ webhook_id, strlen(webhook_id) }, { ".", 1 },
		{ webhook_timestamp, strlen(webhook_timestamp) }, { ".", 1 },
		{ body, body_len },
	};

	if (body == NULL && body_len > 0)
		return error_set(err, "nothing to sign");
	if (signature_keyring_mac(ring, 0, parts, 5, mac) < 0)
		return error_set(err, "HMAC-SHA256 failed");
	memcpy(out, "v1,", 3);
	signature_mac_text(mac, SIGNATURE_BASE64, out + 3);
	OPENSSL_cleanse(mac, sizeof(mac));
	return 0;
}

/* ---- "name=value" lists with a timestamp: Stripe and Paddle ---- */

/* The form both schemes share: items separated by sep, one timestamp item
 * named ts_name, signatures named sig_name (others skipped). */
struct timed_scheme {
	char sep;
	const char *ts_name, *sig_name;
	const char *ts_sep; /* between timestamp and body in the signed text */
	const char *missing, *malformed, *no_signature, *bad_timestamp,
		*stale, *too_long;
};

static enum signature_status verify_timed(const struct timed_scheme *scheme,
					  const struct signature_keyring *ring,
					  const char *header, const void *body,
					  size_t body_len, time_t now,
					  long tolerance_s, const char **reason)
{
	struct candidates cands = { 0 };
	struct span item, name, value, ts_text = { NULL, 0 };
	const char *pos = header;
	size_t entries = 0;
	uint64_t ts;

	if (header == NULL || header[0] == '\0')
		return finish(SIGNATURE_MISSING, scheme->missing, reason);
	if (header_too_long(header))
		return finish(SIGNATURE_MALFORMED, scheme->too_long, reason);
	while (next_item(&pos, scheme->sep, &item)) {
		if (++entries > SIGNATURE_ENTRIES_MAX ||
		    !split_pair(&item, '=', &name, &value))
			return finish(SIGNATURE_MALFORMED, scheme->malformed,
				      reason);
		if (span_is(&name, scheme->ts_name)) {
			if (ts_text.text != NULL)
				return finish(SIGNATURE_MALFORMED,
					      scheme->malformed, reason);
			ts_text = value;
		} else if (span_is(&name, scheme->sig_name)) {
			cands.items[cands.count++] = value;
		}
	}
	if (ts_text.text == NULL ||
	    signature_timestamp_parse(ts_text.text, ts_text.len, &ts) < 0)
		return finish(SIGNATURE_MALFORMED, scheme->bad_timestamp,
			      reason);
	if (cands.count == 0)
		return finish(SIGNATURE_MALFORMED, scheme->no_signature, reason);
	if (!timestamp_fresh(ts, now, tolerance_s))
		return finish(SIGNATURE_STALE, scheme->stale, reason);
	if (body == NULL && body_len > 0)
		return finish(SIGNATURE_ERROR, "signature could not be checked",
			      reason);
	{
		const struct signature_part parts[] = {
			{ ts_text.text, ts_text.len },
			{ scheme->ts_sep, strlen(scheme->ts_sep) },
			{ body, body_len },
		};

		return match_any(ring, parts, 3, &cands, SIGNATURE_HEX, reason);
	}
}

static const struct timed_scheme stripe_scheme = {
	',', "t", "v1", ".",
	"Stripe-Signature header missing",
	"Stripe-Signature is not t=...,v1=...",
	"Stripe-Signature has no v1 signature",
	"Stripe-Signature has no valid timestamp",
	"Stripe-Signature timestamp outside the tolerance",
	"Stripe-Signature is too long",
};

static const struct timed_scheme paddle_scheme = {
	';', "ts", "h1", ":",
	"Paddle-Signature header missing",
	"Paddle-Signature is not ts=...;h1=...",
	"Paddle-Signature has no h1 signature",
	"Paddle-Signature has no valid timestamp",
	"Paddle-Signature timestamp outside the tolerance",
	"Paddle-Signature is too long",
};

enum signature_status signature_verify_stripe(
	const struct signature_keyring *ring, const char *header,
	const void *body, size_t body_len, time_t now, long tolerance_s,
	const char **reason)
{
	return verify_timed(&stripe_scheme, ring, header, body, body_len, now,
			    tolerance_s, reason);
}

enum signature_status signature_verify_paddle(
	const struct signature_keyring *ring, const char *header,
	const void *body, size_t body_len, time_t now, long tolerance_s,
	const char **reason)
{
	return verify_timed(&paddle_scheme, ring, header, body, body_len, now,
			    tolerance_s, reason);
}

/* The senders' side of the same two forms: "<ts_name>=<ts><sep><sig_name>=
 * <hex>", over the same signed text verify_timed checks. */
static int sign_timed(const struct timed_scheme *scheme,
		      const struct signature_keyring *ring,
		      const char *timestamp, const void *body, size_t body_len,
		      char *out, size_t cap, struct error *err)
{
	const struct signature_part parts[] = {
		{ timestamp, strlen(timestamp) },
		{ scheme->ts_sep, strlen(scheme->ts_sep) },
		{ body, body_len },
	};
	char text[SIGNATURE_TEXT_MAX];
	int n;

	if (signature_sign_digest(ring, NULL, SIGNATURE_HEX, parts, 3, text,
				  sizeof(text), err) != 0)
		return -1;
	n = snprintf(out, cap, "%s=%s%c%s=%s", scheme->ts_name, timestamp,
		     scheme->sep, scheme->sig_name, text);
	if (n < 0 || (size_t)n >= cap)
		return error_set(err, "signature header does not fit");
	return 0;
}

int signature_sign_stripe(const struct signature_keyring *ring,
			  const char *timestamp, const void *body,
			  size_t body_len, char *out, size_t cap,
			  struct error *err)
{
	return sign_timed(&stripe_scheme, ring, timestamp, body, body_len, out,
			  cap, err);
}

int signature_sign_paddle(const struct signature_keyring *ring,
			  const char *timestamp, const void *body,
			  size_t body_len, char *out, size_t cap,
			  struct error *err)
{
	return sign_timed(&paddle_scheme, ring, timestamp, body, body_len, out,
			  cap, err);
}

/* ---- one digest, one header ---- */

int signature_sign_digest(const struct signature_keyring *ring,
			  const char *prefix, enum signature_encoding enc,
			  const struct signature_part *parts, size_t count,
			  char *out, size_t cap, struct error *err)
{
	unsigned char mac[SIGNATURE_MAC_LEN];
	char text[SIGNATURE_TEXT_MAX];
	int n;

	for (size_t i = 0; i < count; i++) {
		if (parts[i].data == NULL && parts[i].len > 0)
			return error_set(err, "nothing to sign");
	}
	if (signature_keyring_mac(ring, 0, parts, count, mac) < 0)
		return error_set(err, "HMAC-SHA256 failed");
	signature_mac_text(mac, enc, text);
	OPENSSL_cleanse(mac, sizeof(mac));
	n = snprintf(out, cap, "%s%s", prefix != NULL ? prefix : "", text);
	if (n < 0 || (size_t)n >= cap)
		return error_set(err, "signature does not fit");
	return 0;
}

enum signature_status signature_verify_digest(
	const struct signature_keyring *ring, const char *header,
	const char *prefix, enum signature_encoding enc,
	const struct signature_part *parts, size_t count,
	const char *header_missing, const char **reason)
{
	struct candidates cands = { 0 };
	size_t prefix_len = prefix != NULL ? strlen(prefix) : 0;

	if (header == NULL || header[0] == '\0')
		return finish(SIGNATURE_MISSING, header_missing, reason);
	if (header_too_long(header))
		return finish(SIGNATURE_MALFORMED, "signature header is too long",
			      reason);
	if (prefix_len > 0 && strncmp(header, prefix, prefix_len) != 0)
		return finish(SIGNATURE_MALFORMED,
			      "signature header lacks its prefix", reason);
	cands.items[0].text = header + prefix_len;
	cands.items[0].len = strlen(header + prefix_len);
	cands.count = 1;
	for (size_t i = 0; i < count; i++) {
		if (parts[i].data == NULL && parts[i].len > 0)
			return finish(SIGNATURE_ERROR,
				      "signature could not be checked", reason);
	}
	return match_any(ring, parts, count, &cands, enc, reason);
}

enum signature_status signature_verify_token(
	const struct signature_keyring *ring, const char *header,
	const char *header_missing, const char **reason)
{
	unsigned char digest[SIGNATURE_MAC_LEN];
	unsigned int digest_len = 0;
	bool found = false;

	if (header == NULL || header[0] == '\0')
		return finish(SIGNATURE_MISSING, header_missing, reason);
	if (header_too_long(header))
		return finish(SIGNATURE_MALFORMED, "token header is too long",
			      reason);
	if (ring == NULL ||
	    EVP_Digest(header, strlen(header), digest, &digest_len,
		       EVP_sha256(), NULL) != 1)
		return finish(SIGNATURE_ERROR, "token could not be checked",
			      reason);
	for (size_t k = 0; k < ring->count; k++)
		found |= CRYPTO_memcmp(digest, ring->keys[k].token_digest,
				       SIGNATURE_MAC_LEN) == 0;
	OPENSSL_cleanse(digest, sizeof(digest));
	if (found)
		return finish(SIGNATURE_VALID, NULL, reason);
	return finish(SIGNATURE_MISMATCH, "token does not match", reason);
}

int signature_token_marker(const char *token,
			   char out[SIGNATURE_TOKEN_MARKER_MAX])
{
	unsigned char digest[SIGNATURE_MAC_LEN];
	unsigned int len = 0;
	size_t prefix = strlen(SIGNATURE_TOKEN_MARKER_PREFIX);

	out[0] = '\0';
	if (header_too_long(token) ||
	    EVP_Digest(token, strlen(token), digest, &len, EVP_sha256(),
		       NULL) != 1 || len != SIGNATURE_MAC_LEN)
		return -1;
	memcpy(out, SIGNATURE_TOKEN_MARKER_PREFIX, prefix);
	encoding_hex_encode(digest, SIGNATURE_MAC_LEN, out + prefix);
	OPENSSL_cleanse(digest, sizeof(digest));
	return 0;
}

enum signature_status signature_verify_token_marker(
	const struct signature_keyring *ring, const char *marker,
	const char *header_missing, const char **reason)
{
	size_t prefix = strlen(SIGNATURE_TOKEN_MARKER_PREFIX);
	unsigned char digest[SIGNATURE_MAC_LEN];
	bool found = false;

	if (marker == NULL || marker[0] == '\0')
		return finish(SIGNATURE_MISSING, header_missing, reason);
	if (strncmp(marker, SIGNATURE_TOKEN_MARKER_PREFIX, prefix) != 0 ||
	    strlen(marker + prefix) != 2 * SIGNATURE_MAC_LEN ||
	    encoding_hex_decode(marker + prefix, 2 * SIGNATURE_MAC_LEN, digest,
				sizeof(digest)) != SIGNATURE_MAC_LEN)
		return finish(SIGNATURE_MALFORMED, "the token kept is not its "
			      "digest", reason);
	if (ring == NULL)
		return finish(SIGNATURE_ERROR, "token could not be checked",
			      reason);
	for (size_t k = 0; k < ring->count; k++)
		found |= CRYPTO_memcmp(digest, ring->keys[k].token_digest,
				       SIGNATURE_MAC_LEN) == 0;
	if (found)
		return finish(SIGNATURE_VALID, NULL, reason);
	return finish(SIGNATURE_MISMATCH, "token does not match", reason);
}

int signature_parts_sha256(const struct signature_part *parts, size_t count,
			   unsigned char out[SIGNATURE_MAC_LEN])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char digest[SIGNATURE_MAC_LEN];
	unsigned int len = 0;
	int ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;

	for (size_t i = 0; ok && i < count; i++)
		ok = EVP_DigestUpdate(ctx, parts[i].data, parts[i].len) == 1;
	ok = ok && EVP_DigestFinal_ex(ctx, digest, &len) == 1 &&
	     len == SIGNATURE_MAC_LEN;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -1;
	memcpy(out, digest, SIGNATURE_MAC_LEN);
	return 0;
}
