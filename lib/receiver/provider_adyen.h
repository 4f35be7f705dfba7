/* provider_adyen.h - Adyen's scheme (provider_scheme_adyen): a batch of
 * notification items in the body, each signed on its own with an HMAC
 * over its field string (pspReference:originalReference:
 * merchantAccountCode:merchantReference:value:currency:eventCode:success,
 * docs.adyen.com's "verify HMAC signatures"), each a payment, a refund, a
 * dispute or a cancellation. Adyen signs only those fields, so a lifecycle
 * item carries the digest of its field string: an item resent with other
 * unsigned fields is the same item.
 */
#ifndef PAYHOOK_PROVIDER_ADYEN_H
#define PAYHOOK_PROVIDER_ADYEN_H

#include "provider_scheme.h"

extern const struct provider_scheme provider_scheme_adyen;

#endif
