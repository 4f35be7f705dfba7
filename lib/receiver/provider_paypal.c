/* provider_paypal.c - PayPal's scheme (see provider_paypal.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <zlib.h>

#include "encoding.h"
#include "endpoint.h"
#include "lifecycle.h"
#include "paypal_cert.h"
#include "provider_paypal.h"
#include "provider_row.h"
#include "utc.h"

#define ALGO "SHA256withRSA"
/* An RSA signature of up to 8192 bits. */
#define SIG_MAX 1024

const char *const provider_paypal_headers[] = {
	"PAYPAL-TRANSMISSION-ID", "PAYPAL-CERT-URL", "PAYPAL-AUTH-ALGO", NULL,
};

/* The more_params of the row, in provider_paypal_headers' order. */
enum { TRANSMISSION_ID, CERT_URL, AUTH_ALGO };

/* What the scheme keeps per worker: the certificates, and the text of the
 * last reason (verify's reason points into it). */
struct paypal_state {
	struct paypal_certs *certs;
	struct error why;
};

static int paypal_setup(struct provider *p, const struct config *cfg,
			struct error *err)
{
	struct paypal_state *st;

	if (cfg == NULL)
		return 0; /* the sending side needs no certificates */
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return error_set(err, "paypal: out of memory");
	st->certs = paypal_certs_new(cfg, err);
	if (st->certs == NULL) {
		free(st);
		return -1;
	}
	p->state = st;
	return 0;
}

static void paypal_cleanup(struct provider *p)
{
	struct paypal_state *st = p->state;

	paypal_certs_free(st->certs);
	free(st);
	p->state = NULL;
}

static int paypal_check_config(const struct config *cfg, struct error *err)
{
	struct endpoint hosts[ENDPOINT_LIST_MAX];
	struct error inner;
	size_t n;

	if (cfg->paypal_webhook_id == NULL)
		return error_set(err, "providers has paypal: set "
				 "paypal_webhook_id (the webhook's id in "
				 "PayPal's developer dashboard)");
	if (endpoint_list_parse(cfg->paypal_cert_hosts, 443, hosts, &n,
				&inner) != 0)
		return error_set(err, "paypal_cert_hosts: %s", inner.message);
	if (cfg->paypal_ca_file != NULL && access(cfg->paypal_ca_file, R_OK) != 0)
		return error_set(err, "paypal_ca_file %s cannot be read",
				 cfg->paypal_ca_file);
	return 0;
}

static int paypal_check_store(const struct provider *p, struct error *err)
{
	const struct paypal_state *st = p->state;

	return paypal_certs_check(st->certs, err);
}

int provider_paypal_signed_text(const char *id, const char *when,
				const char *webhook, const char *body,
				size_t len, char *out)
{
	unsigned long crc = crc32_z(crc32_z(0L, Z_NULL, 0),
				    (const unsigned char *)body, len);
	int n = snprintf(out, PROVIDER_PAYPAL_SIGNED_MAX, "%s|%s|%s|%lu", id,
			 when, webhook, crc & 0xffffffffUL);

	return n > 0 && n < PROVIDER_PAYPAL_SIGNED_MAX ? n : -1;
}

static enum signature_status paypal_verify(const struct provider *p,
					   const struct request *req,
					   const char *body, size_t len,
					   time_t now, bool replay,
					   const char **reason)
{
	struct paypal_state *st = p->state;
	const char *id = provider_row_header(req, p->more_params[TRANSMISSION_ID]);
	const char *url = provider_row_header(req, p->more_params[CERT_URL]);
	const char *algo = provider_row_header(req, p->more_params[AUTH_ALGO]);
	const char *when = provider_row_header(req, p->timestamp_param);
	const char *sig = provider_row_header(req, p->signature_param);
	struct lifecycle_time sent;
	unsigned char raw[SIG_MAX];
	char text[PROVIDER_PAYPAL_SIGNED_MAX];
	const EVP_MD_CTX *verifier;
	long raw_len;
	int n;

	(void)replay; /* the time judged is the receipt's either way */
	if (id == NULL || id[0] == '\0' || url == NULL || url[0] == '\0' ||
	    algo == NULL || when == NULL || when[0] == '\0' || sig == NULL ||
	    sig[0] == '\0') {
		*reason = "PayPal's signature headers missing";
		return SIGNATURE_MISSING;
	}
	if (strcmp(algo, ALGO) != 0) {
		*reason = "PAYPAL-AUTH-ALGO is not " ALGO;
		return SIGNATURE_MALFORMED;
	}
	if (lifecycle_time_parse(when, strlen(when), &sent) != 0) {
		*reason = "PAYPAL-TRANSMISSION-TIME is not RFC 3339";
		return SIGNATURE_MALFORMED;
	}
	if ((sent.seconds > (int64_t)now ? sent.seconds - (int64_t)now
					 : (int64_t)now - sent.seconds) >
	    p->tolerance_s) {
		*reason = "PAYPAL-TRANSMISSION-TIME outside the tolerance";
		return SIGNATURE_STALE;
	}
	raw_len = strlen(sig) <= ENCODING_BASE64_LEN(SIG_MAX) ?
			  encoding_base64_decode(sig, strlen(sig), raw,
						 sizeof(raw)) : -1;
	n = provider_paypal_signed_text(id, when, p->set->cfg->paypal_webhook_id,
					body, len, text);
	if (raw_len <= 0 || n < 0) {
		*reason = "PayPal's signature headers are not of their form";
		return SIGNATURE_MALFORMED;
	}
	switch (paypal_certs_verifier(st->certs, url, now, &verifier,
				      &st->why)) {
	case PAYPAL_CERT_OK:
		break;
	case PAYPAL_CERT_REFUSED:
		*reason = st->why.message;
		return SIGNATURE_MISMATCH;
	case PAYPAL_CERT_UNAVAILABLE:
		*reason = st->why.message;
		return SIGNATURE_UNAVAILABLE;
	case PAYPAL_CERT_ERROR:
	default:
		*reason = st->why.message;
		return SIGNATURE_ERROR;
	}
	switch (provider_paypal_check(verifier, raw, (size_t)raw_len, text,
				      (size_t)n)) {
	case 0:
		return SIGNATURE_VALID;
	case 1:
		*reason = "PAYPAL-TRANSMISSION-SIG does not match";
		return SIGNATURE_MISMATCH;
	default:
		*reason = "out of memory checking PayPal's signature";
		return SIGNATURE_ERROR;
	}
}

int provider_paypal_check(const EVP_MD_CTX *verifier, const unsigned char *sig,
			  size_t sig_len, const char *text, size_t len)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int rc = -1;

	if (ctx != NULL && EVP_MD_CTX_copy_ex(ctx, verifier) == 1)
		rc = EVP_DigestVerify(ctx, sig, sig_len,
				      (const unsigned char *)text, len) == 1 ?
			     0 : 1;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return rc;
}

/* Signs as PayPal does, with the private key in the file in->secret and
 * in->cert_url as the certificate's address (for tests and demos: the
 * certificate there must be one payhook trusts). */
static int paypal_sign(const struct provider *p,
		       const struct provider_sign_input *in, const char *body,
		       size_t len, struct provider_headers *h,
		       char **signed_body, struct error *err)
{
	char when[UTC_RFC3339_MAX], text[PROVIDER_PAYPAL_SIGNED_MAX];
	unsigned char raw[SIG_MAX];
	char sig[ENCODING_BASE64_LEN(SIG_MAX) + 1];
	size_t raw_len = sizeof(raw);
	EVP_PKEY *key = NULL;
	EVP_MD_CTX *ctx = NULL;
	FILE *f;
	long seconds;
	const char *webhook = in->webhook_id != NULL ? in->webhook_id :
			      in->cfg != NULL ? in->cfg->paypal_webhook_id :
						NULL;
	char *end;
	int n, rc = -1;

	(void)p;
	(void)signed_body;
	if (provider_row_need(in->id, "a transmission id (--id)", err) != 0 ||
	    provider_row_need(in->timestamp, "a timestamp", err) != 0 ||
	    provider_row_need(in->cert_url, "the certificate's URL "
			      "(--cert-url)", err) != 0 ||
	    provider_row_need(webhook, "the webhook's id (--webhook-id or "
			      "paypal_webhook_id)", err) != 0)
		return -1;
	seconds = strtol(in->timestamp, &end, 10);
	if (*end != '\0' ||
	    utc_format(seconds, UTC_RFC3339, when, sizeof(when)) != 0)
		return error_set(err, "the timestamp is not Unix seconds");
	n = provider_paypal_signed_text(in->id, when, webhook, body, len, text);
	if (n < 0)
		return error_set(err, "the signed text does not fit");
	f = fopen(in->secret, "r");
	if (f == NULL)
		return error_set(err, "the private key's file cannot be read "
				 "(--key FILE: a PEM key)");
	key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	ctx = EVP_MD_CTX_new();
	if (key == NULL || ctx == NULL ||
	    EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(ctx, raw, &raw_len, (const unsigned char *)text,
			   (size_t)n) != 1) {
		error_set(err, "signing with the private key failed (not a "
			  "PEM RSA key?)");
		goto out;
	}
	encoding_base64_encode(raw, raw_len, sig);
	if (provider_row_add_header(h, "PAYPAL-TRANSMISSION-ID", in->id,
				    err) != 0 ||
	    provider_row_add_header(h, "PAYPAL-TRANSMISSION-TIME", when,
				    err) != 0 ||
	    provider_row_add_header(h, "PAYPAL-TRANSMISSION-SIG", sig, err) != 0 ||
	    provider_row_add_header(h, "PAYPAL-CERT-URL", in->cert_url,
				    err) != 0 ||
	    provider_row_add_header(h, "PAYPAL-AUTH-ALGO", ALGO, err) != 0)
		goto out;
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(key);
	return rc;
}

const struct provider_scheme provider_scheme_paypal = {
	.setup = paypal_setup,
	.cleanup = paypal_cleanup,
	.check_config = paypal_check_config,
	.check_store = paypal_check_store,
	.verify = paypal_verify,
	.sign = paypal_sign,
	.keyless = true,
};
