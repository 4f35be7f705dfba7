/* paypal_cert.h - PayPal's message-verification certificates (prefix
 * paypal_cert_): where one may come from, what makes one trusted, and the
 * cache that fetches each once for every worker and host.
 *
 * A PAYPAL-CERT-URL is followed only when it is https://, without a user,
 * a query or a fragment, on a host of paypal_cert_hosts (host or
 * host:port), under /v1/notifications/certs/ (paypal_cert_url_allowed):
 * nothing is fetched from anywhere else. What it serves (PEM: the leaf
 * first, then its chain) is trusted when the leaf's chain verifies against
 * paypal_ca_file (else the system's CAs), every certificate of it is
 * within its dates at the time judged, and the leaf's subject CN is
 * messageverificationcerts.paypal.com or
 * messageverificationcerts.sandbox.paypal.com (the rule of PayPal's own
 * Java SDK, SSLUtil.validateCertificateChain).
 *
 * The cache: this worker's memory, then table paypal_certs (cert_store.h),
 * then one fetch with libcurl (TLS verified against the same CAs, no
 * redirect followed), under a named lock so that many workers fetch once;
 * the whole never takes longer than paypal_cert_timeout_ms.
 */
#ifndef PAYHOOK_PAYPAL_CERT_H
#define PAYHOOK_PAYPAL_CERT_H

#include <stddef.h>
#include <time.h>

#include <openssl/evp.h>

#include "configuration.h"
#include "error.h"

/* The subject CNs PayPal signs deliveries with. */
#define PAYPAL_CERT_CN_LIVE "messageverificationcerts.paypal.com"
#define PAYPAL_CERT_CN_SANDBOX "messageverificationcerts.sandbox.paypal.com"

enum paypal_cert_status {
	PAYPAL_CERT_OK = 0,
	PAYPAL_CERT_REFUSED,     /* not a certificate PayPal signs with, or
				  * from nowhere PayPal serves them: 401 */
	PAYPAL_CERT_UNAVAILABLE, /* it cannot be had now (no answer, a 5xx,
				  * the time ran out): 503, retried */
	PAYPAL_CERT_ERROR,       /* ours (out of memory, libcrypto): 500 */
};

/* Whether url is one payhook may fetch a certificate from (see above).
 * Returns 0, or -1 with why saying which rule it breaks. */
int paypal_cert_url_allowed(const struct config *cfg, const char *url,
			    struct error *why);

/* A certificate judged (paypal_cert_judge); paypal_cert_clear frees what
 * it holds. */
struct paypal_cert {
	EVP_PKEY *key;          /* the leaf's public key */
	EVP_MD_CTX *verifier;   /* SHA256withRSA with that key, initialised
				 * once: copy it for each signature (an
				 * initialisation costs a fetch of libcrypto's
				 * algorithms a copy does not) */
	time_t valid_from;      /* the latest notBefore of its chain */
	time_t valid_until;     /* the earliest notAfter of its chain */
};

/* Frees what cert holds; a cleared or zeroed one is fine. */
void paypal_cert_clear(struct paypal_cert *cert);

/* Judges pem[0..len) (what a certificate URL served): its leaf's chain
 * against cfg's CAs, its CN, its dates at time at. Returns PAYPAL_CERT_OK
 * with *out filled, or PAYPAL_CERT_REFUSED / PAYPAL_CERT_ERROR with why
 * set (out holds nothing). */
enum paypal_cert_status paypal_cert_judge(const struct config *cfg,
					  const char *pem, size_t len,
					  time_t at, struct paypal_cert *out,
					  struct error *why);

/* The cache of one worker; opaque. */
struct paypal_certs;

/* Returns a cache for cfg (which must outlive it), or NULL with err set. */
struct paypal_certs *paypal_certs_new(const struct config *cfg,
				      struct error *err);

/* Frees it; NULL is fine. */
void paypal_certs_free(struct paypal_certs *certs);

/* Whether table paypal_certs can be read. Returns 0, or -1 with err set
 * (the table missing names its migration). */
int paypal_certs_check(struct paypal_certs *certs, struct error *err);

/* The verifier of the certificate at url (struct paypal_cert), trusted at
 * time at (now, or a replayed delivery's receipt), from the cache, the
 * table, or one fetch. A URL the cache holds passed paypal_cert_url_allowed
 * when it was first asked. Returns PAYPAL_CERT_OK with *verifier set (the
 * cache's: valid until the next call), or another status with why set. */
enum paypal_cert_status paypal_certs_verifier(struct paypal_certs *certs,
					      const char *url, time_t at,
					      const EVP_MD_CTX **verifier,
					      struct error *why);

#endif
