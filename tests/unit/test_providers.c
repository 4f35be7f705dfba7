/* test_providers.c - the set of providers holds: every profile of enum
 * config_provider has its row in every table a provider needs (HACKING.md,
 * "Adding a provider"), or says there why it has none:
 *   - the profile table: its sample payment, signed by provider_sign, reads
 *     back as that payment through provider_read;
 *   - the samples (sample.c), or sample_test_none;
 *   - the lifecycle events (provider_lifecycle.c), or
 *     provider_lifecycle_test_none;
 *   - a reconcile backend (backends.c), or backends_none;
 *   - its row in doc/providers.md's table (and in
 *     doc/refunds-and-disputes.md's), its keys in payhook.conf(5)'s source
 *     (man/payhook.conf.keys): <name>_secret, and <name>_api_key when it
 *     has a backend.
 * A provider added without one of them fails here, naming it.
 */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends.h"
#include "configuration.h"
#include "payload.h"
#include "pipeline.h"
#include "provider.h"
#include "provider_lifecycle.h"
#include "sample.h"
#include "testreq.h"

/* A secret in each provider's own form, for the round trip. A provider
 * missing here fails the test: add one. */
static const char *const secrets[CONFIG_PROVIDER_COUNT] = {
	[CONFIG_PROVIDER_STANDARD] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	[CONFIG_PROVIDER_STRIPE] = "whsec_test_providers_secret",
	[CONFIG_PROVIDER_PADDLE] = "pdl_ntfset_01test_providers",
	[CONFIG_PROVIDER_RAZORPAY] = "test_providers_razorpay",
	[CONFIG_PROVIDER_KOMOJU] = "test_providers_komoju",
	[CONFIG_PROVIDER_PAYJP] = "whook_test_providers_payjp",
	[CONFIG_PROVIDER_SQUARE] = "test_providers_square",
	[CONFIG_PROVIDER_SHOPIFY] = "test_providers_shopify",
	[CONFIG_PROVIDER_ADYEN] = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C"
				  "057550C48EC2ACF6BA056",
	[CONFIG_PROVIDER_GENERIC] = "test_providers_generic",
	/* PayPal signs with a certificate of its own: its round trip needs a
	 * CA and a server (tests/integration/paypal.test). */
	[CONFIG_PROVIDER_PAYPAL] = "",
	[CONFIG_PROVIDER_CHECKOUT] = "sk_sbox_test_providers_checkout",
	[CONFIG_PROVIDER_LEMONSQUEEZY] = "test_providers_lemonsqueezy",
	/* Mollie's classic webhooks are unsigned. */
	[CONFIG_PROVIDER_MOLLIE] = "",
	[CONFIG_PROVIDER_MERCADOPAGO] = "test_providers_mercadopago",
	[CONFIG_PROVIDER_GOCARDLESS] = "test_providers_gocardless",
};

/* The file top_srcdir/path, NUL-terminated; the caller frees. */
static char *source_file(const char *path)
{
	const char *top = getenv("top_srcdir");
	char full[1024];
	FILE *f;
	char *text;
	long len;

	snprintf(full, sizeof(full), "%s/%s", top != NULL ? top : ".", path);
	f = fopen(full, "rb");
	ck_assert_msg(f != NULL, "cannot read %s", full);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	text = malloc((size_t)len + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
	text[len] = '\0';
	fclose(f);
	return text;
}

/* Whether text has a line that is exactly line. */
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *at = text; (at = strstr(at, line)) != NULL; at++)
		if ((at == text || at[-1] == '\n') &&
		    (at[n] == '\n' || at[n] == '\0'))
			return true;
	return false;
}

START_TEST(every_table_has_its_row)
{
	char *providers_md = source_file("doc/providers.md");
	char *refunds_md = source_file("doc/refunds-and-disputes.md");
	char *keys = source_file("man/payhook.conf.keys");

	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		const char *name = config_provider_name(p);
		char row[64], key[64];

		ck_assert_msg(name != NULL && name[0] != '\0',
			      "provider %u has no name", p);
		ck_assert_msg(secrets[p] != NULL,
			      "%s: no test secret in test_providers.c", name);
		ck_assert_msg((sample_name(p, 0) != NULL) !=
				      (sample_test_none(p) != NULL),
			      "%s: samples (sample.c) or sample_test_none, one of "
			      "them", name);
		ck_assert_msg(provider_lifecycle_test_reads(p) !=
				      (provider_lifecycle_test_none(p) != NULL),
			      "%s: lifecycle events (provider_lifecycle.c) or "
			      "provider_lifecycle_test_none, one of them", name);
		ck_assert_msg((backends_for(p) != NULL) !=
				      (backends_none(p) != NULL),
			      "%s: a reconcile backend (backends.c) or "
			      "backends_none, one of them", name);
		snprintf(row, sizeof(row), "| `%s` |", name);
		ck_assert_msg(strstr(providers_md, row) != NULL,
			      "%s: no row %s in doc/providers.md", name, row);
		ck_assert_msg(strstr(refunds_md, row) != NULL,
			      "%s: no row %s in doc/refunds-and-disputes.md",
			      name, row);
		/* Its secret, PayPal's webhook id, and nothing for Mollie,
		 * whose notifications are unsigned (its API key below). */
		snprintf(key, sizeof(key), "%s_%s",
			 p == CONFIG_PROVIDER_STANDARD ? "webhook" : name,
			 provider_keyless(p) ? "webhook_id" : "secret");
		ck_assert_msg((provider_keyless(p) && provider_notifies(p)) ||
				      has_line(keys, key),
			      "%s: %s not in man/payhook.conf.keys", name, key);
		snprintf(key, sizeof(key), "%s_api_key", name);
		ck_assert_msg((backends_for(p) == NULL && !provider_notifies(p)) ||
				      has_line(keys, key),
			      "%s: %s not in man/payhook.conf.keys", name, key);
	}
	free(providers_md);
	free(refunds_md);
	free(keys);
}
END_TEST

/* Each profile with samples: its sample payment, signed as the provider
 * signs it, reads back as that payment (the profile table's row, the
 * signer and the verifier agree). */
START_TEST(each_sample_payment_reads_back)
{
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		const char *name = config_provider_name(p);
		struct sample_input in = {
			.provider = p, .transaction_id = "1234567",
			.amount = 1999,
		};
		struct provider_sign_input sign = {
			.provider = p, .secret = secrets[p], .id = "msg_1",
			.timestamp = NULL, .url = "https://example.com/webhook",
		};
		struct provider_headers h;
		struct provider_batch *batch = calloc(1, sizeof(*batch));
		struct payload_parser *parser = payload_parser_new();
		struct provider_set *set;
		struct config cfg;
		struct error err = { "" };
		struct testreq t;
		char now[32], *body, *signed_body = NULL, var[128];
		char api_var[128];
		const char *text;

		ck_assert_ptr_nonnull(batch);
		ck_assert_ptr_nonnull(parser);
		if (sample_name(p, 0) == NULL ||
		    (provider_keyless(p) && !provider_notifies(p))) {
			free(batch);
			payload_parser_free(parser);
			continue;
		}
		snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
		sign.timestamp = now;
		setenv("PAYHOOK_PROVIDERS", name, 1);
		snprintf(var, sizeof(var), "PAYHOOK_%s_SECRET",
			 p == CONFIG_PROVIDER_STANDARD ? "WEBHOOK" : name);
		for (char *c = var; *c != '\0'; c++)
			*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
		if (secrets[p][0] != '\0')
			setenv(var, secrets[p], 1);
		setenv("PAYHOOK_SQUARE_NOTIFICATION_URL", sign.url, 1);
		/* A provider that only notifies needs the key to fetch. */
		snprintf(api_var, sizeof(api_var), "PAYHOOK_%s_API_KEY", name);
		for (char *c = api_var; *c != '\0'; c++)
			*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
		if (provider_notifies(p))
			setenv(api_var, "test_providers_api_key", 1);
		ck_assert_msg(pipeline_load_config(&cfg, NULL, &err) == 0,
			      "%s: %s", name, err.message);
		set = provider_set_new(&cfg, &err);
		ck_assert_msg(set != NULL, "%s: %s", name, err.message);
		body = sample_event(&in, &err);
		ck_assert_msg(body != NULL, "%s: %s", name, err.message);
		ck_assert_msg(provider_sign(&sign, body, strlen(body), &h,
					    &signed_body, &err) == 0,
			      "%s: %s", name, err.message);
		text = signed_body != NULL ? signed_body : body;
		testreq_init(&t, "POST", text, strlen(text));
		for (size_t i = 0; i < h.count; i++)
			testreq_header(&t, h.items[i].name, h.items[i].value);
		/* Mercado Pago signs the query's data.id. */
		if (p == CONFIG_PROVIDER_MERCADOPAGO)
			testreq_set(&t, "QUERY_STRING",
				    "data.id=1234567&type=payment");
		if (provider_notifies(p)) {
			/* Its sample is a notification: it names the
			 * payment to fetch. */
			ck_assert_msg(provider_read(provider_enabled(set, p),
						    &t.req, parser, text,
						    strlen(text), time(NULL),
						    batch, &err) ==
					      PROVIDER_NOTIFIED,
				      "%s: its sample notification does not "
				      "read back: %s", name, err.message);
			ck_assert_uint_eq(batch->notice_count, 1);
			ck_assert_msg(strstr(batch->notices[0].object_id,
					     "1234567") != NULL,
				      "%s: notified %s", name,
				      batch->notices[0].object_id);
		} else {
			ck_assert_msg(provider_read(provider_enabled(set, p),
						    &t.req, parser, text,
						    strlen(text), time(NULL),
						    batch, &err) ==
					      PROVIDER_PAYMENTS,
				      "%s: its sample payment does not read "
				      "back: %s", name, err.message);
			ck_assert_uint_eq(batch->count, 1);
			ck_assert_str_eq(batch->payments[0].transaction_id,
					 "1234567");
			ck_assert_int_eq(batch->payments[0].amount, 1999);
		}
		unsetenv(var);
		unsetenv(api_var);
		free(body);
		free(signed_body);
		provider_set_free(set);
		config_cleanup(&cfg);
		payload_parser_free(parser);
		free(batch);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("providers");
	TCase *tc = tcase_create("providers");
	SRunner *sr;
	int failed;

	unsetenv("PAYHOOK_CONFIG");
	tcase_add_test(tc, every_table_has_its_row);
	tcase_add_test(tc, each_sample_payment_reads_back);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
