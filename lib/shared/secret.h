/* secret.h - the forms in which providers hand out signing secrets, and how
 * each becomes the bytes of an HMAC key. Messages never quote a secret.
 */
#ifndef PAYHOOK_SECRET_H
#define PAYHOOK_SECRET_H

#include <stddef.h>

#include "error.h"

/* Longest key accepted, in bytes (provider secrets are 16 to 64). */
#define SECRET_KEY_MAX 256

enum secret_form {
	SECRET_WHSEC_BASE64, /* "whsec_" + base64 of the key (Standard Webhooks) */
	SECRET_TEXT,         /* the text is the key (Stripe, Paddle, Shopify...) */
	SECRET_HEX,          /* hex digits of the key (Adyen) */
	SECRET_BASE64,       /* base64 of the key, no prefix */
};

struct secret_key {
	size_t len;
	unsigned char bytes[SECRET_KEY_MAX];
};

/* Decodes text in the given form into *key. Returns 0, or -1 with err saying
 * which form was expected (the secret itself is never quoted); *key is wiped
 * on failure. */
int secret_decode(enum secret_form form, const char *text,
		  struct secret_key *key, struct error *err);

/* Wipes a key; NULL is fine. Can't fail. */
void secret_key_wipe(struct secret_key *key);

/* Overwrites the NUL-terminated text (a key, a header that carries one)
 * with zeros before its memory is reused or freed; NULL is fine. Can't
 * fail. */
void secret_text_wipe(char *text);

/* A short description of the form, for messages: "whsec_ followed by
 * base64", "hex digits", ... */
const char *secret_form_description(enum secret_form form);

#endif
