/* cert_store.h - PayPal's signing certificates in table paypal_certs
 * (prefix cert_store_), so that every worker of every host fetches one
 * certificate once: its URL, the PEM as fetched, when it expires. A
 * store of statements over sqlconn; what a certificate is worth is
 * paypal_cert.c's to judge (a row is checked again when read). A short
 * named lock (GET_LOCK) lets one worker fetch while the others wait for
 * its row.
 */
#ifndef PAYHOOK_CERT_STORE_H
#define PAYHOOK_CERT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "configuration.h"
#include "error.h"

/* The longest PEM kept (a leaf and its chain are a few KiB). */
#define CERT_STORE_PEM_MAX 32768

struct cert_store; /* a MySQL connection of its own; opaque */

/* Returns a store for cfg (which must outlive it), not connected yet, or
 * NULL with err set. */
struct cert_store *cert_store_new(const struct config *cfg, struct error *err);

/* Frees it; NULL is fine. */
void cert_store_free(struct cert_store *store);

/* The PEM kept for url into pem (CERT_STORE_PEM_MAX + 1 bytes, NUL
 * terminated): 1 when there is one, 0 when none, -1 with err set (the
 * database down, the table missing: err names db/migrate-15-paypal-certs.sql). */
int cert_store_get(struct cert_store *store, const char *url, char *pem,
		   struct error *err);

/* Keeps pem for url, expiring at not_after (Unix seconds). Returns 0, or
 * -1 with err set. */
int cert_store_put(struct cert_store *store, const char *url, const char *pem,
		   int64_t not_after, struct error *err);

/* Takes the named lock of url's fetch, waiting at most timeout_ms: 1 when
 * taken, 0 when another holds it still, -1 with err set. */
int cert_store_lock(struct cert_store *store, const char *url, long timeout_ms,
		    struct error *err);

/* Gives the lock of url's fetch back. Can't fail (a session that ends
 * gives it back too). */
void cert_store_unlock(struct cert_store *store, const char *url);

#endif
