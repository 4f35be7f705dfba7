/* test_paypal.c - PayPal's signature scheme against PayPal's own vector
 * (the Java SDK's ValidateCertTest: its body, headers, webhook id and
 * certificate, tests/fixtures/providers/paypal/java-sdk-vector*), and the
 * rule of the URLs a certificate may be fetched from. The whole path, with
 * a CA and a certificate server, is tests/e2e/paypal.test.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "configuration.h"
#include "encoding.h"
#include "lifecycle.h"
#include "paypal_cert.h"
#include "pipeline.h"
#include "provider_lifecycle.h"
#include "provider_paypal.h"

#define VECTOR_ID "071f7d20-1584-11e7-abf0-6b62a8a99ac4"
#define VECTOR_TIME "2017-03-30T20:04:05Z"
#define VECTOR_WEBHOOK "96605875FF6516633"
#define VECTOR_SIG                                                             \
	"aBjgm5/xljRYu3G64Q0axISrP2xcy7WbW1u4UTCKnQvyprOZ1a1BBmqn2Jdr6ce8E76I3Ti/"   \
	"AL9y4VYSHyGSEaoE6dVQcCDebLbOXLH0fjTAbTc1/rmfdWmsk0DPltW84Y8W8jOHe3CLWDOwg5" \
	"zmozyt+AceG2x5eOiw7mLSycaEoj/5RG+dOIWXnmWcLEArbG3VFshy0wuhZrKuGa9C/bD4Ku+" \
	"Y9gK7Bv5I5IuGRVnTGpcFnVG0KxOyJxccLGyBVCIUMY5IZS7LkmJszQ3HZZFDTNihvgJHECSLw" \
	"LhzUaysIye5G6CbbLdtAmeeb6wiDciEAvr2dFf+SplOR4Lrng=="

/* The fixture file top_srcdir/tests/fixtures/providers/paypal/name, read
 * whole into *len bytes; the caller frees. */
static char *fixture(const char *name, size_t *len)
{
	const char *top = getenv("top_srcdir");
	char path[1024];
	FILE *f;
	char *text;
	long n;

	snprintf(path, sizeof(path), "%s/tests/fixtures/providers/paypal/%s",
		 top != NULL ? top : ".", name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot read %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	text = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	text[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return text;
}

static EVP_PKEY *vector_key(void);

/* A verifier (SHA256withRSA) of the vector's certificate's key; the
 * caller frees it. */
static EVP_MD_CTX *vector_verifier(void)
{
	EVP_PKEY *key = vector_key();
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL,
					      key), 1);
	EVP_PKEY_free(key);
	return ctx;
}

/* The public key of the vector's certificate. */
static EVP_PKEY *vector_key(void)
{
	size_t len;
	char *pem = fixture("java-sdk-vector-cert.pem", &len);
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	X509 *cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	EVP_PKEY *key;

	ck_assert_ptr_nonnull(cert);
	key = X509_get_pubkey(cert);
	ck_assert_ptr_nonnull(key);
	X509_free(cert);
	BIO_free(bio);
	free(pem);
	return key;
}

/* The signed text: the CRC32 of the raw body as an unsigned decimal (it is
 * above 2^31 here: a signed CRC would show), as PayPal's SDK writes it. */
START_TEST(the_signed_text_is_paypals)
{
	size_t len;
	char *body = fixture("java-sdk-vector.json", &len);
	char text[PROVIDER_PAYPAL_SIGNED_MAX];
	int n = provider_paypal_signed_text(VECTOR_ID, VECTOR_TIME,
					    VECTOR_WEBHOOK, body, len, text);

	ck_assert_int_gt(n, 0);
	ck_assert_str_eq(text, VECTOR_ID "|" VECTOR_TIME "|" VECTOR_WEBHOOK
			 "|3494065244");
	free(body);
}
END_TEST

/* PayPal's own signature verifies against its certificate's key; one
 * byte of the body changed, or another webhook id, does not. */
START_TEST(paypals_signature_verifies)
{
	size_t len;
	char *body = fixture("java-sdk-vector.json", &len);
	char text[PROVIDER_PAYPAL_SIGNED_MAX];
	unsigned char sig[1024];
	long sig_len = encoding_base64_decode(VECTOR_SIG, strlen(VECTOR_SIG),
					      sig, sizeof(sig));
	EVP_MD_CTX *key = vector_verifier();
	int n;

	ck_assert_int_eq(sig_len, 256);
	n = provider_paypal_signed_text(VECTOR_ID, VECTOR_TIME, VECTOR_WEBHOOK,
					body, len, text);
	ck_assert_int_eq(provider_paypal_check(key, sig, (size_t)sig_len, text,
					       (size_t)n), 0);
	body[len / 2] ^= 1;
	n = provider_paypal_signed_text(VECTOR_ID, VECTOR_TIME, VECTOR_WEBHOOK,
					body, len, text);
	ck_assert_int_eq(provider_paypal_check(key, sig, (size_t)sig_len, text,
					       (size_t)n), 1);
	body[len / 2] ^= 1;
	n = provider_paypal_signed_text(VECTOR_ID, VECTOR_TIME,
					"96605875FF6516634", body, len, text);
	ck_assert_int_eq(provider_paypal_check(key, sig, (size_t)sig_len, text,
					       (size_t)n), 1);
	EVP_MD_CTX_free(key);
	free(body);
}
END_TEST

/* The vector's certificate is PayPal's, but it expired in 2019 and its
 * issuer is no CA of ours: never trusted. */
START_TEST(an_expired_certificate_is_refused)
{
	struct config cfg;
	struct paypal_cert cert;
	struct error err, why;
	size_t len;
	char *pem = fixture("java-sdk-vector-cert.pem", &len);

	setenv("PAYHOOK_PROVIDERS", "standard", 1);
	setenv("PAYHOOK_WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	       1);
	ck_assert_msg(pipeline_load_config(&cfg, NULL, &err) == 0, "%s",
		      err.message);
	ck_assert_int_eq(paypal_cert_judge(&cfg, pem, len, time(NULL), &cert,
					   &why), PAYPAL_CERT_REFUSED);
	ck_assert_msg(strstr(why.message, "does not verify") != NULL, "%s",
		      why.message);
	config_cleanup(&cfg);
	free(pem);
}
END_TEST

/* Where a certificate may come from: https, a host of paypal_cert_hosts
 * (its port too), under /v1/notifications/certs/, nothing else. */
static const struct {
	const char *url;
	int allowed;
} urls[] = {
	{ "https://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-a5cafa77", 1 },
	{ "https://API.Sandbox.PayPal.com/v1/notifications/certs/CERT-1", 1 },
	{ "https://api-m.paypal.com:443/v1/notifications/certs/CERT-1", 1 },
	{ "https://127.0.0.1:8443/v1/notifications/certs/CERT-1", 1 },
	{ "http://api.paypal.com/v1/notifications/certs/CERT-1", 0 },
	{ "https://api.paypal.com:8443/v1/notifications/certs/CERT-1", 0 },
	{ "https://127.0.0.1/v1/notifications/certs/CERT-1", 0 },
	{ "https://api.paypal.com.evil.example/v1/notifications/certs/CERT-1", 0 },
	{ "https://evil.example/v1/notifications/certs/CERT-1", 0 },
	{ "https://api.paypal.com@evil.example/v1/notifications/certs/CERT-1", 0 },
	{ "https://evil.example@api.paypal.com/v1/notifications/certs/CERT-1", 0 },
	{ "https://api.paypal.com/v1/notifications/certs/CERT-1?x=1", 0 },
	{ "https://api.paypal.com/v1/notifications/certs/CERT-1#x", 0 },
	/* Empty ones, which libcurl drops (fuzz_paypal found the first). */
	{ "https://api.paypal.com/v1/notifications/certs/CERT-1#", 0 },
	{ "https://api.paypal.com/v1/notifications/certs/CERT-1?", 0 },
	{ "https://@api.paypal.com/v1/notifications/certs/CERT-1", 0 },
	{ "https://api.paypal.com/v1/notifications/certs/", 0 },
	{ "https://api.paypal.com/v1/notifications/test", 0 },
	{ "https://api.paypal.com/v1/oauth2/token", 0 },
	{ "https://api.paypal.com/v1/notifications/certs/../../oauth2/token", 0 },
	{ "https://api.paypal.com/v1/notifications/certs/%2e%2e/x", 0 },
	{ "https://api.paypal.com/v1/notifications/certs/CERT-1/x", 0 },
	{ "https://127.1:8443/v1/notifications/certs/CERT-1", 1 },
	{ "https:///api.paypal.com/v1/notifications/certs/CERT-1", 0 },
	{ "https://api.paypal.com\\@evil.example/v1/notifications/certs/CERT-1", 0 },
	{ "file:///etc/passwd", 0 },
	{ "", 0 },
	{ "https://", 0 },
};

START_TEST(certificate_urls)
{
	struct config cfg;
	struct error err, why;

	setenv("PAYHOOK_PROVIDERS", "standard", 1);
	setenv("PAYHOOK_WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	       1);
	setenv("PAYHOOK_PAYPAL_CERT_HOSTS", "api.paypal.com api-m.paypal.com "
	       "api.sandbox.paypal.com 127.0.0.1:8443", 1);
	ck_assert_msg(pipeline_load_config(&cfg, NULL, &err) == 0, "%s",
		      err.message);
	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		int rc = paypal_cert_url_allowed(&cfg, urls[i].url, &why);

		ck_assert_msg((rc == 0) == urls[i].allowed, "%s: %s",
			      urls[i].url, rc == 0 ? "allowed" : why.message);
	}
	unsetenv("PAYHOOK_PAYPAL_CERT_HOSTS");
	config_cleanup(&cfg);
}
END_TEST

/* PayPal's published refund, reversal and dispute events read as the
 * Lifecycle tables say: the refund's capture from its "up" link, the
 * amount a decimal string converted exactly, a resolved dispute by its
 * outcome (a buyer who cancels: won; the buyer's favour: lost). */
static const struct {
	const char *file;
	enum lifecycle_kind kind;
	enum lifecycle_state state;
	const char *object, *tx;
	long long amount;
	long long seconds;
} events[] = {
	{ "refund.json", LIFECYCLE_REFUND, LIFECYCLE_SUCCEEDED,
	  "1Y107995YT783435V", "0JF852973C016714D", 99, 1534360409 },
	{ "reversal.json", LIFECYCLE_REFUND, LIFECYCLE_SUCCEEDED,
	  "09E71677NS257044M", "4L335234718889942", 251, 1534368610 },
	{ "dispute-created.json", LIFECYCLE_DISPUTE, LIFECYCLE_OPEN,
	  "PP-000-042-663-135", "00D10444LD479031K", 300, 1529588144 },
	{ "dispute-resolved.json", LIFECYCLE_DISPUTE, LIFECYCLE_WON,
	  "PP-000-042-663-135", "00D10444LD479031K", 300, 1529589358 },
	{ "dispute-resolved-buyer.json", LIFECYCLE_DISPUTE, LIFECYCLE_LOST,
	  "PP-000-042-663-135", "00D10444LD479031K", 300, 1529589358 },
};

START_TEST(lifecycle_events_read)
{
	struct lifecycle_event out[2];
	struct payload_rules rules = { NULL, false };
	struct error why;
	size_t len, count = 0;
	char *text = fixture(events[_i].file, &len);
	struct json_object *body = json_tokener_parse(text);

	ck_assert_ptr_nonnull(body);
	ck_assert_msg(provider_lifecycle_read(CONFIG_PROVIDER_PAYPAL, body,
					      &rules, out, 2, &count, &why) ==
			      PAYLOAD_VALID,
		      "%s: %s", events[_i].file, why.message);
	ck_assert_uint_eq(count, 1);
	ck_assert_int_eq(out[0].kind, events[_i].kind);
	ck_assert_str_eq(lifecycle_state_name(out[0].state),
			 lifecycle_state_name(events[_i].state));
	ck_assert_str_eq(out[0].object_id, events[_i].object);
	ck_assert_str_eq(out[0].link.transaction_id, events[_i].tx);
	ck_assert_int_eq(out[0].link.amount, events[_i].amount);
	ck_assert_str_eq(out[0].link.currency, "USD");
	ck_assert_int_eq(out[0].occurred_at.seconds, events[_i].seconds);
	json_object_put(body);
	free(text);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("paypal");
	TCase *tc = tcase_create("paypal");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, the_signed_text_is_paypals);
	tcase_add_test(tc, paypals_signature_verifies);
	tcase_add_test(tc, an_expired_certificate_is_refused);
	tcase_add_test(tc, certificate_urls);
	tcase_add_loop_test(tc, lifecycle_events_read, 0,
			    (int)(sizeof(events) / sizeof(events[0])));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
