/* provider_generic.h - the generic profile's scheme
 * (provider_scheme_generic): a provider payhook has no profile for,
 * described by the generic_ keys. generic_signed_payload is a template of
 * literal text and {body}, {timestamp} and {url}, split once at set-up;
 * the HMAC of the text it makes travels in generic_signature_header (hex
 * or base64, with generic_signature_prefix), and a signed timestamp in
 * generic_timestamp_header is held to the tolerance.
 */
#ifndef PAYHOOK_PROVIDER_GENERIC_H
#define PAYHOOK_PROVIDER_GENERIC_H

#include "provider_scheme.h"

extern const struct provider_scheme provider_scheme_generic;

#endif
