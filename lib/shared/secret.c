/* secret.c - provider secrets into HMAC keys (see secret.h). */
#include "config.h"

#include <string.h>

#include <openssl/crypto.h>

#include "encoding.h"
#include "secret.h"

#define WHSEC_PREFIX "whsec_"

const char *secret_form_description(enum secret_form form)
{
	switch (form) {
	case SECRET_WHSEC_BASE64:
		return "whsec_ followed by base64";
	case SECRET_TEXT:
		return "the secret text";
	case SECRET_HEX:
		return "hex digits";
	case SECRET_BASE64:
		return "base64";
	}
	return "?";
}

void secret_key_wipe(struct secret_key *key)
{
	if (key != NULL)
		OPENSSL_cleanse(key, sizeof(*key));
}

void secret_text_wipe(char *text)
{
	if (text != NULL)
		OPENSSL_cleanse(text, strlen(text));
}

static int decoded(long n, struct secret_key *key, enum secret_form form,
		   struct error *err)
{
	if (n <= 0) {
		secret_key_wipe(key);
		return error_set(err, "secret is not valid: expected %s, "
				 "1 to %d bytes once decoded",
				 secret_form_description(form), SECRET_KEY_MAX);
	}
	key->len = (size_t)n;
	return 0;
}

int secret_decode(enum secret_form form, const char *text,
		  struct secret_key *key, struct error *err)
{
	size_t len;

	secret_key_wipe(key);
	if (text == NULL || text[0] == '\0')
		return error_set(err, "secret is empty");
	len = strlen(text);
	switch (form) {
	case SECRET_WHSEC_BASE64:
		/* A raw hex or base64 key pasted without its prefix would
		 * silently decode into another key: the prefix is required. */
		if (strncmp(text, WHSEC_PREFIX, strlen(WHSEC_PREFIX)) != 0)
			return error_set(err, "secret is not valid: expected "
					 "whsec_ followed by base64 (the "
					 "form Standard Webhooks hands out)");
		text += strlen(WHSEC_PREFIX);
		len -= strlen(WHSEC_PREFIX);
		return decoded(encoding_base64_decode(text, len, key->bytes,
						      sizeof(key->bytes)),
			       key, form, err);
	case SECRET_BASE64:
		return decoded(encoding_base64_decode(text, len, key->bytes,
						      sizeof(key->bytes)),
			       key, form, err);
	case SECRET_HEX:
		return decoded(encoding_hex_decode(text, len, key->bytes,
						   sizeof(key->bytes)),
			       key, form, err);
	case SECRET_TEXT:
		if (len > sizeof(key->bytes))
			return decoded(-1, key, form, err);
		memcpy(key->bytes, text, len);
		key->len = len;
		return 0;
	}
	return error_set(err, "secret: unknown form");
}
