/* oauth.h - an OAuth2 access token by the client credentials grant (RFC
 * 6749 section 4.4; prefix oauth_), for a list API that takes no key of
 * its own (PayPal): a POST of grant_type=client_credentials to the token
 * endpoint with the client's id and secret as HTTP Basic, through the
 * pass's api_client (so the token request is paced and retried as a page
 * is), the access_token kept until shortly before its expires_in passes,
 * and asked for again then or when the API answers 401. The token and the
 * credentials are never logged, and wiped before their memory is freed.
 */
#ifndef PAYHOOK_OAUTH_H
#define PAYHOOK_OAUTH_H

#include <stdbool.h>

#include "api_client.h"
#include "error.h"

/* The longest access token kept (PayPal's are about 100 characters). */
#define OAUTH_TOKEN_MAX 2048

struct oauth; /* one client's token and when to renew it; opaque */

/* Returns a token keeper for the client whose credentials header is
 * basic_header ("Authorization: Basic <base64 of id:secret>", copied),
 * asking token_url (copied) for its tokens; name (static: the profile,
 * "paypal") names it and its keys (<name>_api_key, <name>_api_base) in
 * messages. Returns NULL with err set when out of memory. */
struct oauth *oauth_new(const char *name, const char *token_url,
			const char *basic_header, struct error *err);

/* Frees it, wiping the credentials and the token; NULL is fine. */
void oauth_free(struct oauth *oauth);

/* Makes client's header "Authorization: Bearer <token>": the token kept,
 * or, when there is none, it is about to expire or renew is set (the API
 * refused it), a new one from the token endpoint through client. Returns
 * 0, or -1 with err saying why no token could be had (the endpoint's
 * refusal, and what to check; never quoting a secret). api_client's
 * authorize, with the oauth as its context. */
int oauth_authorize(struct oauth *oauth, struct api_client *client,
		    bool renew, struct error *err);

#endif
