/* provider_paypal.h - PayPal's scheme (provider_scheme_paypal): each
 * delivery is signed with a certificate, not a shared secret. The signed
 * text is <PAYPAL-TRANSMISSION-ID>|<PAYPAL-TRANSMISSION-TIME>|
 * <paypal_webhook_id>|<CRC32 of the raw body, unsigned decimal>;
 * PAYPAL-TRANSMISSION-SIG is its base64 RSA signature with
 * PAYPAL-AUTH-ALGO (SHA256withRSA), checked against the public key of the
 * certificate at PAYPAL-CERT-URL (paypal_cert.h judges and caches it).
 * Checked against paypal/PayPal-Java-SDK@2a34212256626707
 * (rest-api-sdk: Event.validateReceivedEvent, SSLUtil.crc32,
 * SSLUtil.validateData, Constants' header names) and
 * paypal/PayPal-Python-SDK@0d704e7d3bb0c9c7 (notifications.py's
 * _get_expected_sig: the CRC masked to 32 bits, unsigned).
 */
#ifndef PAYHOOK_PROVIDER_PAYPAL_H
#define PAYHOOK_PROVIDER_PAYPAL_H

#include "provider_scheme.h"

extern const struct provider_scheme provider_scheme_paypal;

/* The headers PayPal signs a delivery with, beside the profile row's. */
extern const char *const provider_paypal_headers[];

#endif
