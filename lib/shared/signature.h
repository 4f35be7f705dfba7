/* signature.h - webhook signatures: HMAC-SHA256 (libcrypto) over what each
 * scheme signs, compared in constant time with what the sender wrote, before
 * the body is parsed. The schemes here are the header formats providers use:
 * Standard Webhooks, Stripe's "t=,v1=", Paddle's "ts=;h1=", a plain digest
 * of the body (hex or base64), and a static token.
 */
#ifndef PAYHOOK_SIGNATURE_H
#define PAYHOOK_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "error.h"
#include "secret.h"

/* HMAC-SHA256 output size. */
#define SIGNATURE_MAC_LEN 32
/* "v1," + base64 of 32 bytes (44) + NUL, with room to spare. */
#define SIGNATURE_TEXT_MAX 72
/* The longest webhook-id and webhook-timestamp accepted. */
#define SIGNATURE_ID_MAX 255 /* the event_id column holds 255 bytes */
#define SIGNATURE_TIMESTAMP_DIGITS_MAX 19
/* Bounds on what a stranger can make us parse; real headers are far smaller. */
#define SIGNATURE_HEADER_MAX 4096
#define SIGNATURE_ENTRIES_MAX 16

/* Keyed HMAC-SHA256 contexts, one per configured secret. Opaque. */
struct signature_keyring;

enum signature_status {
	SIGNATURE_VALID = 0,
	SIGNATURE_MISSING,   /* a header absent or empty */
	SIGNATURE_MALFORMED, /* a header not of the documented form */
	SIGNATURE_STALE,     /* timestamp outside the tolerance, either way */
	SIGNATURE_MISMATCH,  /* well formed, but no signature matches any key */
	SIGNATURE_ERROR,     /* libcrypto failed (out of memory): not the
			      * sender's fault, so the answer must ask for a retry */
	SIGNATURE_UNAVAILABLE, /* what checks it cannot be had now (PayPal's
				* certificate): ask for a retry later (503) */
};

/* How a digest is written as text. */
enum signature_encoding {
	SIGNATURE_HEX,    /* lower or upper case */
	SIGNATURE_BASE64, /* standard, padded; compared as canonical text */
};

/* One piece of the signed text; the pieces are hashed one after another. */
struct signature_part {
	const void *data;
	size_t len;
};

/* Builds a keyring from count secrets (each decoded as form). Returns a new
 * keyring that the caller frees with signature_keyring_free, or NULL with err
 * set (no secrets, a bad secret, out of memory); messages never quote a
 * secret. */
struct signature_keyring *signature_keyring_new(char *const *secrets,
						size_t count,
						enum secret_form form,
						struct error *err);

/* Frees a keyring and wipes its keys; NULL is fine. */
void signature_keyring_free(struct signature_keyring *ring);

/* Computes the HMAC of the concatenated parts with key number index of ring.
 * Returns 0, or -1 when index is out of range or libcrypto fails. */
int signature_keyring_mac(const struct signature_keyring *ring, size_t index,
			  const struct signature_part *parts, size_t count,
			  unsigned char mac[SIGNATURE_MAC_LEN]);

/* Computes the SHA-256 (no key) of the concatenated parts: what a signed
 * text is known by, for telling one signed content from another. Returns
 * 0, or -1 when libcrypto fails (out untouched then). */
int signature_parts_sha256(const struct signature_part *parts, size_t count,
			   unsigned char out[SIGNATURE_MAC_LEN]);

/* Writes mac as text in enc (hex: 64 lower-case digits; base64: 44
 * characters) and a NUL into out, which holds at least SIGNATURE_TEXT_MAX
 * bytes. Can't fail. */
void signature_mac_text(const unsigned char mac[SIGNATURE_MAC_LEN],
			enum signature_encoding enc, char *out);

/* True when id is 1..SIGNATURE_ID_MAX bytes of visible ASCII (0x21-0x7E):
 * the webhook-id rule of Standard Webhooks. */
bool signature_id_valid(const char *id);

/* Parses a Unix timestamp of 1..SIGNATURE_TIMESTAMP_DIGITS_MAX ASCII digits
 * (no sign, no space) from text[0..len). Returns 0, or -1 (out untouched). */
int signature_timestamp_parse(const char *text, size_t len, uint64_t *out);

/* Every verify function below returns SIGNATURE_VALID when any signature the
 * sender wrote matches the HMAC under any key of ring; otherwise the status,
 * and *reason (when reason is not NULL) points to a short static text for the
 * response such as "webhook-timestamp outside the tolerance". Header values
 * are NULL when absent. The work is one HMAC per key, whatever the headers
 * hold. They never fail otherwise. */

/* Standard Webhooks: webhook-id, webhook-timestamp (within tolerance_s of now,
 * both ways) and webhook-signature, a space-separated list of "v<N>,<base64>"
 * of which the v1 entries are checked, over "<id>.<timestamp>.<body>". */
enum signature_status signature_verify_standard(
	const struct signature_keyring *ring, const char *webhook_id,
	const char *webhook_timestamp, const char *webhook_signature,
	const void *body, size_t body_len, time_t now, long tolerance_s,
	const char **reason);

/* Stripe: Stripe-Signature "t=<unix>,v1=<hex>[,v1=<hex>...]" (other schemes
 * such as v0 are skipped) over "<t>.<body>"; t within tolerance_s of now. */
enum signature_status signature_verify_stripe(
	const struct signature_keyring *ring, const char *header,
	const void *body, size_t body_len, time_t now, long tolerance_s,
	const char **reason);

/* Paddle Billing: Paddle-Signature "ts=<unix>;h1=<hex>[;h1=<hex>...]" over
 * "<ts>:<body>"; ts within tolerance_s of now. */
enum signature_status signature_verify_paddle(
	const struct signature_keyring *ring, const char *header,
	const void *body, size_t body_len, time_t now, long tolerance_s,
	const char **reason);

/* One digest in header (after prefix, e.g. "sha256=", when prefix is not
 * NULL), written in enc, over the concatenated parts: Razorpay, KOMOJU,
 * Square, Shopify, Adyen items and the generic profile. header_missing is the
 * reason given when header is absent or empty. */
enum signature_status signature_verify_digest(
	const struct signature_keyring *ring, const char *header,
	const char *prefix, enum signature_encoding enc,
	const struct signature_part *parts, size_t count,
	const char *header_missing, const char **reason);

/* PAY.JP: header must equal one of the secrets (a static token). Compared as
 * SHA-256 digests in constant time, so neither content nor length leaks. */
enum signature_status signature_verify_token(
	const struct signature_keyring *ring, const char *header,
	const char *header_missing, const char **reason);

/* What is kept of a token that is itself the secret (PAY.JP's): "sha256:"
 * and the hex SHA-256 of it, never the token. */
#define SIGNATURE_TOKEN_MARKER_PREFIX "sha256:"
#define SIGNATURE_TOKEN_MARKER_MAX (sizeof(SIGNATURE_TOKEN_MARKER_PREFIX) - 1 + \
				    2 * SIGNATURE_MAC_LEN + 1)

/* Writes token's marker into out (SIGNATURE_TOKEN_MARKER_MAX bytes).
 * Returns 0, or -1 when the digest fails or the token is too long to be
 * one (out then empty). */
int signature_token_marker(const char *token,
			   char out[SIGNATURE_TOKEN_MARKER_MAX]);

/* signature_verify_token for a token kept as its marker (a replay of a
 * kept delivery): the marker must name one of the secrets' digests,
 * compared in constant time. */
enum signature_status signature_verify_token_marker(
	const struct signature_keyring *ring, const char *marker,
	const char *header_missing, const char **reason);

/* The signers: the senders' side of the verifiers above, over the same
 * signed text, with the first key of ring (what payhook-sign and the tests
 * send). Each writes a header value and a NUL into out (cap bytes) and
 * returns 0, or -1 with err set (HMAC failed, out too small); out is then
 * undefined. */

/* Stripe-Signature "t=<timestamp>,v1=<hex>". */
int signature_sign_stripe(const struct signature_keyring *ring,
			  const char *timestamp, const void *body,
			  size_t body_len, char *out, size_t cap,
			  struct error *err);

/* Paddle-Signature "ts=<timestamp>;h1=<hex>". */
int signature_sign_paddle(const struct signature_keyring *ring,
			  const char *timestamp, const void *body,
			  size_t body_len, char *out, size_t cap,
			  struct error *err);

/* prefix (may be NULL) and the digest of the concatenated parts in enc. */
int signature_sign_digest(const struct signature_keyring *ring,
			  const char *prefix, enum signature_encoding enc,
			  const struct signature_part *parts, size_t count,
			  char *out, size_t cap, struct error *err);

/* Signs for Standard Webhooks with the first key of ring: writes
 * "v1,<base64>" into out (SIGNATURE_TEXT_MAX bytes). Returns 0, or -1 with err
 * set. */
int signature_sign_standard(const struct signature_keyring *ring,
			    const char *webhook_id,
			    const char *webhook_timestamp, const void *body,
			    size_t body_len, char *out, struct error *err);

#endif
