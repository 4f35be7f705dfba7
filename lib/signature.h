/* signature.h - Standard Webhooks signatures (HMAC-SHA256, base64) over
 * "<webhook-id>.<webhook-timestamp>.<raw body>", checked before the body is
 * parsed. HMAC and base64 come from libcrypto; comparisons are constant-time.
 */
#ifndef PAYHOOK_SIGNATURE_H
#define PAYHOOK_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "error.h"

/* Longest decoded key we accept, in bytes (Standard Webhooks keys are 24-64). */
#define SIGNATURE_KEY_MAX 256
/* "v1," + base64 of 32 bytes (44) + NUL, with room to spare. */
#define SIGNATURE_TEXT_MAX 64

/* The decoded keys of every configured secret. Opaque. */
struct signature_verifier;

enum signature_status {
	SIGNATURE_VALID = 0,
	SIGNATURE_MISSING,   /* a header absent or empty */
	SIGNATURE_MALFORMED, /* a header not of the documented form */
	SIGNATURE_STALE,     /* timestamp outside the tolerance, either way */
	SIGNATURE_MISMATCH,  /* well formed, but no signature matches any key */
	SIGNATURE_ERROR,     /* libcrypto failed (out of memory): not the
			      * sender's fault, so the answer must ask for a retry */
};

/* The longest webhook-id and webhook-timestamp accepted. */
#define SIGNATURE_ID_MAX 256
#define SIGNATURE_TIMESTAMP_DIGITS_MAX 19

/* True when id is 1..SIGNATURE_ID_MAX bytes of visible ASCII (0x21-0x7E):
 * the webhook-id rule of signature_verify. */
bool signature_id_valid(const char *id);

/* Parses a webhook-timestamp, 1..SIGNATURE_TIMESTAMP_DIGITS_MAX ASCII digits
 * (no sign, no space), into *out. Returns 0, or -1 (out untouched). */
int signature_timestamp_parse(const char *text, uint64_t *out);

/* Decodes a "whsec_<base64>" secret (the prefix is optional, as in the
 * reference libraries) into key[0..*key_len). Returns 0, or -1 with err set
 * (the message never quotes the secret). */
int signature_secret_decode(const char *secret, unsigned char *key,
			    size_t key_cap, size_t *key_len, struct error *err);

/* Builds a verifier from count secrets (each as for signature_secret_decode).
 * Returns a new verifier that the caller frees with signature_verifier_free,
 * or NULL with err set (bad secret, no secrets, out of memory). */
struct signature_verifier *signature_verifier_new(char *const *secrets,
						  size_t count,
						  struct error *err);

/* Frees a verifier; NULL is fine. Wipes the keys. */
void signature_verifier_free(struct signature_verifier *verifier);

/* Checks the three header values (NULL when absent) against the raw body.
 * webhook_timestamp must be ASCII digits and within tolerance_s of now, both
 * directions. webhook_signature is a space-separated list of "v<N>,<base64>"
 * entries; entries of versions other than v1 are skipped; any v1 entry that
 * matches any key passes. On anything but SIGNATURE_VALID, *reason (when
 * reason is not NULL) points to a short static text for the response, e.g.
 * "webhook-timestamp outside the tolerance". Never fails otherwise. */
enum signature_status signature_verify(const struct signature_verifier *verifier,
				       const char *webhook_id,
				       const char *webhook_timestamp,
				       const char *webhook_signature,
				       const void *body, size_t body_len,
				       time_t now, long tolerance_s,
				       const char **reason);

/* Computes "v1,<base64 HMAC-SHA256>" of "<id>.<timestamp>.<body>" with key
 * into out (out_cap >= SIGNATURE_TEXT_MAX). Returns 0, or -1 with err set. */
int signature_sign(const unsigned char *key, size_t key_len,
		   const char *webhook_id, const char *webhook_timestamp,
		   const void *body, size_t body_len, char *out, size_t out_cap,
		   struct error *err);

#endif
