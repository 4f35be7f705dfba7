/* oauth.c - an OAuth2 access token by the client credentials grant
 * (oauth.h). The token answer is RFC 6749 section 5.1's: access_token,
 * token_type (Bearer: RFC 6750) and expires_in in seconds, as PayPal's
 * POST /v1/oauth2/token gives it (developer.paypal.com/api/rest/
 * authentication; paypal/PayPal-Java-SDK
 * rest-api-sdk/src/main/java/com/paypal/base/rest/OAuthTokenCredential.java
 * at 2a34212256626707c89d9c0d9ac7bcdb5935fa5e keeps it for expires_in).
 */
#include "config.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <openssl/crypto.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend.h"
#include "log.h"
#include "oauth.h"
#include "secret.h"
#include "timing.h"

#define BEARER "Authorization: Bearer "
/* A token is renewed this long before it expires (a tenth of its life
 * when that is shorter): a request sent just before the end would carry
 * a token that ended on its way. */
#define MARGIN_MAX_US (60 * 1000000LL)
/* The form of the grant (RFC 6749 section 4.4.2). */
#define GRANT "grant_type=client_credentials"

struct oauth {
	const char *name;
	char *token_url;
	char *basic_header;
	char header[sizeof(BEARER) + OAUTH_TOKEN_MAX]; /* "": no token */
	int64_t renew_at_us; /* timing_now_us; INT64_MAX: only when refused */
};

struct oauth *oauth_new(const char *name, const char *token_url,
			const char *basic_header, struct error *err)
{
	struct oauth *o = calloc(1, sizeof(*o));

	if (o == NULL ||
	    (o->token_url = strdup(token_url)) == NULL ||
	    (o->basic_header = strdup(basic_header)) == NULL) {
		oauth_free(o);
		error_set(err, "%s: out of memory", name);
		return NULL;
	}
	o->name = name;
	return o;
}

void oauth_free(struct oauth *o)
{
	if (o == NULL)
		return;
	secret_text_wipe(o->basic_header);
	free(o->basic_header);
	OPENSSL_cleanse(o->header, sizeof(o->header));
	free(o->token_url);
	free(o);
}

/* Whether token is RFC 6750's b64token (letters, digits, "-._~+/", then
 * '=' padding) and not empty: safe in a header as it is. */
static bool b64token(const char *token)
{
	size_t n = strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrs"
				 "tuvwxyz0123456789-._~+/");

	return n > 0 && token[n + strspn(token + n, "=")] == '\0';
}

/* Why the token endpoint gave no token: its refusal (400, 401, 403:
 * RFC 6749 section 5.2, an "error" code such as invalid_client) says the
 * credentials are wrong; anything else is the request's failure, why. */
static int refused(const struct oauth *o, struct api_client *client,
		   const struct error *why, struct error *err)
{
	const char *body, *code = NULL;
	size_t len;
	long status = api_client_last_answer(client, &body, &len);
	struct json_object *root;
	int rc;

	if (status != 400 && status != 401 && status != 403)
		return error_set(err, "%s: no access token: %s", o->name,
				 why->message);
	root = backend_parse_json(body, len);
	if (root != NULL)
		code = backend_string(root, "error");
	/* Only a plain code is quoted: the answer is not ours to trust. */
	if (code != NULL && (strlen(code) > 40 ||
			     code[strspn(code, "abcdefghijklmnopqrstuvwxyz_")] != '\0'))
		code = NULL;
	rc = error_set(err, "%s: the token endpoint refused %s_api_key (HTTP "
		       "%ld%s%s): check its client_id:secret, and that "
		       "%s_api_base is the API of the app's environment (live "
		       "or sandbox)", o->name, o->name, status,
		       code != NULL ? ", " : "", code != NULL ? code : "",
		       o->name);
	json_object_put(root);
	return rc;
}

/* Asks the token endpoint for a new token through client. Returns 0 with
 * o->header and o->renew_at_us set, or -1 with err set (no token kept). */
static int fetch(struct oauth *o, struct api_client *client, struct error *err)
{
	int64_t asked_us = timing_now_us(), expires_s = -1;
	struct json_object *root = NULL, *expires;
	const char *body, *token, *type;
	struct error why;
	size_t len;
	int rc = -1;

	OPENSSL_cleanse(o->header, sizeof(o->header));
	if (api_client_post_form(client, o->token_url, GRANT, o->basic_header,
				 &body, &len, &why) != 0)
		return refused(o, client, &why, err);
	root = backend_parse_json(body, len);
	token = root != NULL ? backend_string(root, "access_token") : NULL;
	type = root != NULL ? backend_string(root, "token_type") : NULL;
	if (root != NULL && json_object_object_get_ex(root, "expires_in",
						      &expires))
		expires_s = json_object_is_type(expires, json_type_int) &&
					    json_object_get_int64(expires) > 0 ?
				    json_object_get_int64(expires) : 0;
	if (token == NULL || !b64token(token) ||
	    strlen(token) > OAUTH_TOKEN_MAX || type == NULL ||
	    strcasecmp(type, "Bearer") != 0 || expires_s == 0) {
		error_set(err, "%s: the token endpoint's answer is not a "
			  "Bearer access_token with a positive expires_in",
			  o->name);
		goto out;
	}
	snprintf(o->header, sizeof(o->header), BEARER "%s", token);
	/* No expires_in (RFC 6749: RECOMMENDED): kept until refused. */
	o->renew_at_us = INT64_MAX;
	if (expires_s > 0 && expires_s < INT64_MAX / 1000000) {
		int64_t life_us = expires_s * 1000000;
		int64_t margin_us = life_us / 10 < MARGIN_MAX_US ? life_us / 10
								 : MARGIN_MAX_US;

		o->renew_at_us = asked_us + life_us - margin_us;
	}
	if (expires_s > 0)
		log_info("%s: a new access token, valid %" PRId64 " s",
			 o->name, expires_s);
	else
		log_info("%s: a new access token, without expires_in: kept "
			 "until refused", o->name);
	rc = 0;
out:
	json_object_put(root);
	return rc;
}

int oauth_authorize(struct oauth *o, struct api_client *client, bool renew,
		    struct error *err)
{
	if (renew || o->header[0] == '\0' || timing_now_us() >= o->renew_at_us) {
		if (fetch(o, client, err) != 0)
			return -1;
	}
	return api_client_set_auth(client, o->header, err);
}
