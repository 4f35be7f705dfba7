/* stub_cert_store.c - table paypal_certs as the fuzz targets see it: not
 * there. paypal_cert.c links against cert_store.h; no target enables the
 * paypal profile's database, and none may open a MySQL connection. Each
 * call fails as a missing table does, so the cache goes on without it.
 */
#include "config.h"

#include "cert_store.h"
#include "fuzz.h"

struct cert_store *cert_store_new(const struct config *cfg, struct error *err)
{
	(void)cfg;
	error_set(err, "stub: no paypal_certs table");
	return NULL;
}

void cert_store_free(struct cert_store *store)
{
	FUZZ_CHECK(store == NULL, "cert_store_free: a store the stub never made");
}

int cert_store_get(struct cert_store *store, const char *url, char *pem,
		   struct error *err)
{
	(void)store;
	(void)url;
	(void)pem;
	return error_set(err, "stub: no paypal_certs table");
}

int cert_store_put(struct cert_store *store, const char *url, const char *pem,
		   int64_t not_after, struct error *err)
{
	(void)store;
	(void)url;
	(void)pem;
	(void)not_after;
	return error_set(err, "stub: no paypal_certs table");
}

int cert_store_lock(struct cert_store *store, const char *url, long timeout_ms,
		    struct error *err)
{
	(void)store;
	(void)url;
	(void)timeout_ms;
	return error_set(err, "stub: no paypal_certs table");
}

void cert_store_unlock(struct cert_store *store, const char *url)
{
	(void)store;
	(void)url;
}
