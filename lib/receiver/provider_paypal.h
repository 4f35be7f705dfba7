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

#include <stddef.h>

#include <openssl/evp.h>

#include "provider_scheme.h"

/* The signed text's parts at most (PayPal's own bounds: 50, 100, and the
 * webhook id's 255), the CRC, three '|', the NUL. */
#define PROVIDER_PAYPAL_SIGNED_MAX 512

extern const struct provider_scheme provider_scheme_paypal;

/* The text PayPal signs for a delivery of body[0..len) into out
 * (PROVIDER_PAYPAL_SIGNED_MAX bytes): id|when|webhook|CRC32 of the body,
 * unsigned decimal. Returns its length, or -1 when a part is too long. */
int provider_paypal_signed_text(const char *id, const char *when,
				const char *webhook, const char *body,
				size_t len, char *out);

/* Whether sig[0..sig_len) is the SHA256withRSA signature of text[0..len)
 * by the key verifier was initialised with (EVP_DigestVerifyInit; it is
 * copied, never changed): 0 it is, 1 it is not, -1 out of memory. */
int provider_paypal_check(const EVP_MD_CTX *verifier, const unsigned char *sig,
			  size_t sig_len, const char *text, size_t len);

/* The headers PayPal signs a delivery with, beside the profile row's. */
extern const char *const provider_paypal_headers[];

#endif
