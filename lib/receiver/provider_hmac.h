/* provider_hmac.h - the signature schemes that carry an HMAC, or a token,
 * in a header (prefix provider_hmac_ / provider_scheme_): Standard
 * Webhooks' three headers, Stripe's t=,v1=, Paddle's ts=;h1=, a hex or
 * base64 HMAC of the body (Razorpay, KOMOJU; Shopify), Square's HMAC of
 * the notification URL and the body, and PAY.JP's static token.
 */
#ifndef PAYHOOK_PROVIDER_HMAC_H
#define PAYHOOK_PROVIDER_HMAC_H

#include "provider_scheme.h"

extern const struct provider_scheme provider_scheme_standard;
extern const struct provider_scheme provider_scheme_stripe;
extern const struct provider_scheme provider_scheme_paddle;
extern const struct provider_scheme provider_scheme_body_hex;
extern const struct provider_scheme provider_scheme_body_base64;
extern const struct provider_scheme provider_scheme_url_body;
extern const struct provider_scheme provider_scheme_token;

#endif
