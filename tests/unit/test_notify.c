/* test_notify.c - the providers that only notify, in the provider layer:
 * Mollie's form post, Mercado Pago's signed id and GoCardless's signed
 * events read as the objects to fetch (their fixtures from the providers'
 * documents and SDKs, tests/fixtures/providers/, signatures computed by
 * the openssl command line, never by payhook); malformed forms, ids and
 * signatures refused; and what payhook-reconcile fetched from their APIs
 * read as payments, refunds and disputes with exact amounts.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "payload.h"
#include "pipeline.h"
#include "provider.h"
#include "request.h"
#include "testreq.h"

#define MP_SECRET "your_secret_key_here"
#define MP_REQUEST_ID "bb56a2f1-6aae-46ac-982e-9dcd3581d08e"
#define GC_SECRET "ED7D658C-D8EB-4941-948B-3973214F2D49"

static struct config cfg;
static struct provider_set *set;
static struct payload_parser *parser;
static struct provider_batch batch;
static struct error why;
static struct testreq req;
static char tmp_dir[64];

static void setup(void)
{
	struct error err;

	setenv("PAYHOOK_PROVIDERS", "mollie mercadopago gocardless", 1);
	setenv("PAYHOOK_MERCADOPAGO_SECRET", "old_secret " MP_SECRET, 1);
	setenv("PAYHOOK_GOCARDLESS_SECRET", GC_SECRET, 1);
	setenv("PAYHOOK_MOLLIE_API_KEY", "test_dHar4XY7LxsDOtmnkVtjNVWXLSlXsM", 1);
	setenv("PAYHOOK_MERCADOPAGO_API_KEY", "APP_USR-1", 1);
	setenv("PAYHOOK_GOCARDLESS_API_KEY", "sandbox_1", 1);
	ck_assert_msg(pipeline_load_config(&cfg, NULL, &err) == 0, "%s",
		      err.message);
	set = provider_set_new(&cfg, &err);
	ck_assert_msg(set != NULL, "%s", err.message);
	parser = payload_parser_new();
	ck_assert_ptr_nonnull(parser);
	strcpy(tmp_dir, "/tmp/test_notify.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
}

static void teardown(void)
{
	char cmd[128];

	payload_parser_free(parser);
	provider_set_free(set);
	config_cleanup(&cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* The fixture's bytes, NUL-terminated; the caller frees. */
static char *fixture(const char *name)
{
	const char *srcdir = getenv("top_srcdir");
	char path[512];
	FILE *f;
	long len;
	char *text;

	snprintf(path, sizeof(path), "%s/tests/fixtures/providers/%s",
		 srcdir != NULL ? srcdir : ".", name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "fixture %s", path);
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

/* The hex HMAC-SHA256 of text with key, by the openssl command line. */
static void hmac_hex(const char *key, const char *text, char *out, size_t cap)
{
	char path[128], cmd[1024];
	FILE *f, *p;
	size_t n;

	snprintf(path, sizeof(path), "%s/signed", tmp_dir);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd),
		 "openssl dgst -sha256 -hmac '%s' -r '%s' | cut -d' ' -f1",
		 key, path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	n = fread(out, 1, cap - 1, p);
	ck_assert_int_eq(pclose(p), 0);
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		n--;
	out[n] = '\0';
	ck_assert_uint_gt(n, 0);
}

static void start(const char *provider, const char *body)
{
	char uri[96];

	testreq_init(&req, "POST", body, strlen(body));
	snprintf(uri, sizeof(uri), "/webhook/%s", provider);
	testreq_set(&req, "REQUEST_URI", uri);
}

static enum provider_status read_as(enum config_provider id,
				    const char *body)
{
	const struct provider *p = provider_enabled(set, id);

	ck_assert_ptr_nonnull(p);
	error_clear(&why);
	return provider_read(p, &req.req, parser, body, strlen(body),
			     time(NULL), &batch, &why);
}

/* What payhook-reconcile fetched, read. */
static enum provider_status read_fetched(enum config_provider id,
					 const char *body)
{
	const struct provider *p = provider_enabled(set, id);

	testreq_init(&req, "POST", body, strlen(body));
	error_clear(&why);
	return provider_read_trusted(p, &req.req, parser, body, strlen(body),
				     &batch, &why);
}

#define assert_status(got, want)                                         \
	ck_assert_msg((got) == (want), "status %d, expected %d (%s)",       \
		      (int)(got), (int)(want), why.message)

static void assert_notice(size_t i, const char *object, const char *event)
{
	ck_assert_uint_gt(batch.notice_count, i);
	ck_assert_str_eq(batch.notices[i].object_id, object);
	ck_assert_str_eq(batch.notices[i].event_id, event);
}

/* ---- Mollie ---- */

static enum provider_status mollie(const char *body)
{
	start("mollie", body);
	testreq_set(&req, "CONTENT_TYPE", "application/x-www-form-urlencoded");
	return read_as(CONFIG_PROVIDER_MOLLIE, body);
}

START_TEST(test_mollie_notification)
{
	char *body = fixture("mollie/webhook_classic_body.txt");
	char *old = fixture("mollie/webhook_classic_body_short_id.txt");
	const struct {
		const char *body, *reason;
	} refused[] = {
		{ "", "id: required" },
		{ "payment=tr_5B8cwPMGnU6qLbRvo7qEZo", "id: required" },
		{ "id=", "id: not a Mollie payment id" },
		{ "id=tr_", "id: not a Mollie payment id" },
		{ "id=re_4qqhO89gsT", "id: not a Mollie payment id" },
		{ "id=tr_I_dont_exist", "id: not a Mollie payment id" },
		{ "id=tr_abc%zz", "id: not a Mollie payment id" },
		{ "id=tr_a%00b", "id: not a Mollie payment id" },
		{ "id=tr_aaa&id=tr_bbb", "id: not a Mollie payment id" },
		{ "{\"id\":\"tr_5B8cwPMGnU6qLbRvo7qEZo\"}", "id: required" },
		{ "id=tr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaa", "id: not a Mollie payment id" },
	};

	assert_status(mollie(body), PROVIDER_NOTIFIED);
	ck_assert_uint_eq(batch.notice_count, 1);
	assert_notice(0, "tr_5B8cwPMGnU6qLbRvo7qEZo", "");
	assert_status(mollie(old), PROVIDER_NOTIFIED);
	assert_notice(0, "tr_d0b0E3EA3v", "");
	/* Escaped and with fields payhook does not read. */
	assert_status(mollie("testmode=true&id=%74r_abc123&x"), PROVIDER_NOTIFIED);
	assert_notice(0, "tr_abc123", "");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_status(mollie(refused[i].body), PROVIDER_INVALID);
		ck_assert_msg(strstr(why.message, refused[i].reason) != NULL,
			      "%s: %s", refused[i].body, why.message);
		ck_assert_uint_eq(batch.notice_count, 0);
	}
	/* A form post is what Mollie sends; JSON is not. */
	ck_assert_int_eq(provider_media(CONFIG_PROVIDER_MOLLIE),
			 REQUEST_MEDIA_FORM);
	ck_assert_int_eq(provider_media(CONFIG_PROVIDER_GOCARDLESS),
			 REQUEST_MEDIA_JSON);
	ck_assert(provider_unsigned(CONFIG_PROVIDER_MOLLIE));
	ck_assert(!provider_unsigned(CONFIG_PROVIDER_MERCADOPAGO));
	free(body);
	free(old);
}
END_TEST

START_TEST(test_media_types)
{
	size_t len;
	const char *reason;

	start("mollie", "id=tr_1");
	testreq_set(&req, "CONTENT_TYPE",
		    "Application/X-WWW-Form-Urlencoded; charset=\"utf-8\"");
	ck_assert_int_eq(request_check_media(&req.req, 100, REQUEST_MEDIA_FORM,
					     &len, &reason), REQUEST_OK);
	testreq_set(&req, "CONTENT_TYPE", "application/json");
	ck_assert_int_eq(request_check_media(&req.req, 100, REQUEST_MEDIA_FORM,
					     &len, &reason),
			 REQUEST_BAD_MEDIA_TYPE);
	ck_assert_int_eq(request_check_media(&req.req, 100, REQUEST_MEDIA_JSON,
					     &len, &reason), REQUEST_OK);
	testreq_set(&req, "CONTENT_TYPE",
		    "application/x-www-form-urlencoded; boundary=x");
	ck_assert_int_eq(request_check_media(&req.req, 100, REQUEST_MEDIA_FORM,
					     &len, &reason),
			 REQUEST_BAD_MEDIA_TYPE);
}
END_TEST

/* ---- Mercado Pago ---- */

/* A notification of data_id signed by openssl over the manifest (its
 * request id and ts), with query. */
static enum provider_status mercadopago(const char *body, const char *query,
					const char *manifest, const char *ts,
					const char *secret)
{
	char hex[80], header[160];

	start("mercadopago", body);
	testreq_set(&req, "QUERY_STRING", query);
	testreq_header(&req, "x-request-id", MP_REQUEST_ID);
	if (manifest != NULL) {
		hmac_hex(secret, manifest, hex, sizeof(hex));
		snprintf(header, sizeof(header), "ts=%s,v1=%s", ts, hex);
		testreq_header(&req, "x-signature", header);
	}
	return read_as(CONFIG_PROVIDER_MERCADOPAGO, body);
}

#define MP_MANIFEST(id) "id:" id ";request-id:" MP_REQUEST_ID ";ts:1704908010;"

START_TEST(test_mercadopago_notification)
{
	char *body = fixture("mercadopago/built_webhook_payment_updated_body.json");
	char *signature =
		fixture("mercadopago/built_x_signature_payment_updated.txt");
	char *order = fixture("mercadopago/webhook_order_docs_body.json");

	/* The research's vector: the header as published with the fixture. */
	start("mercadopago", body);
	testreq_set(&req, "QUERY_STRING", "data.id=123456&type=payment");
	testreq_header(&req, "x-request-id", MP_REQUEST_ID);
	testreq_header(&req, "x-signature", signature);
	assert_status(read_as(CONFIG_PROVIDER_MERCADOPAGO, body),
		      PROVIDER_NOTIFIED);
	assert_notice(0, "123456", "12345");
	ck_assert_str_eq(batch.event_type, "payment.updated");
	/* Signed by openssl; any configured secret; spaces and case in the
	 * header's parts as the SDK takes them; the query in REQUEST_URI. */
	assert_status(mercadopago(body, "data.id=123456&type=payment",
				  MP_MANIFEST("123456"), "1704908010",
				  "old_secret"),
		      PROVIDER_NOTIFIED);
	start("mercadopago", body);
	testreq_set(&req, "REQUEST_URI",
		    "/webhook/mercadopago?type=payment&data.id=123456");
	testreq_header(&req, "x-request-id", MP_REQUEST_ID);
	{
		char hex[80], header[160];

		hmac_hex(MP_SECRET, MP_MANIFEST("123456"), hex, sizeof(hex));
		snprintf(header, sizeof(header), " TS = 1704908010 , V1=%s ",
			 hex);
		testreq_header(&req, "x-signature", header);
	}
	assert_status(read_as(CONFIG_PROVIDER_MERCADOPAGO, body),
		      PROVIDER_NOTIFIED);
	assert_notice(0, "123456", "12345");
	/* Another id than the signed one: 401, nothing to fetch. */
	assert_status(mercadopago(body, "data.id=654321&type=payment",
				  MP_MANIFEST("123456"), "1704908010",
				  MP_SECRET),
		      PROVIDER_UNAUTHORIZED);
	ck_assert_uint_eq(batch.notice_count, 0);
	assert_status(mercadopago(body, "data.id=123456&type=payment",
				  MP_MANIFEST("123456"), "1704908010",
				  "another_secret"),
		      PROVIDER_UNAUTHORIZED);
	assert_status(mercadopago(body, "data.id=123456&type=payment", NULL,
				  NULL, NULL),
		      PROVIDER_UNAUTHORIZED);
	ck_assert(batch.signature_missing);
	start("mercadopago", body);
	testreq_set(&req, "QUERY_STRING", "data.id=123456&type=payment");
	testreq_header(&req, "x-signature", "v1=abcdef");
	assert_status(read_as(CONFIG_PROVIDER_MERCADOPAGO, body),
		      PROVIDER_UNAUTHORIZED);
	/* Signed, but no payment id to fetch: 400. */
	assert_status(mercadopago(body, "data.id=12ab&type=payment",
				  MP_MANIFEST("12ab"), "1704908010", MP_SECRET),
		      PROVIDER_INVALID);
	assert_status(mercadopago(body, "type=payment",
				  "request-id:" MP_REQUEST_ID ";ts:1704908010;",
				  "1704908010", MP_SECRET),
		      PROVIDER_INVALID);
	ck_assert_msg(strstr(why.message, "data.id") != NULL, "%s",
		      why.message);
	assert_status(mercadopago("{\"id\":", "data.id=123456&type=payment",
				  MP_MANIFEST("123456"), "1704908010",
				  MP_SECRET),
		      PROVIDER_INVALID);
	/* Another topic, signed: ignored (the id in lower case signed). */
	assert_status(mercadopago(order,
				  "data.id=ORD01JQ4S4KY8HWQ6NA5PXB65B3D3&type=order",
				  "id:ord01jq4s4ky8hwq6na5pxb65b3d3;request-id:"
				  MP_REQUEST_ID ";ts:1742505638683;",
				  "1742505638683", MP_SECRET),
		      PROVIDER_IGNORED);
	ck_assert_uint_eq(batch.notice_count, 0);
	free(body);
	free(signature);
	free(order);
}
END_TEST

/* ---- GoCardless ---- */

static enum provider_status gocardless(const char *body, const char *secret)
{
	char hex[80];

	start("gocardless", body);
	if (secret != NULL) {
		hmac_hex(secret, body, hex, sizeof(hex));
		testreq_header(&req, "Webhook-Signature", hex);
	}
	return read_as(CONFIG_PROVIDER_GOCARDLESS, body);
}

START_TEST(test_gocardless_notification)
{
	char *vector = fixture("gocardless/webhook_sdk_vector_body.json");
	char *vector_sig = fixture("gocardless/webhook_sdk_vector_signature.txt");
	char *body = fixture(
		"gocardless/built_webhook_payment_confirmed_refund_paid_body.json");
	char *bad;

	/* The SDKs' published vector verifies; its events are the
	 * mandate's and a payment's that payhook does not fetch for. */
	start("gocardless", vector);
	testreq_header(&req, "Webhook-Signature", vector_sig);
	ck_assert_int_ne(read_as(CONFIG_PROVIDER_GOCARDLESS, vector),
			 PROVIDER_UNAUTHORIZED);
	assert_status(gocardless(body, GC_SECRET), PROVIDER_NOTIFIED);
	ck_assert_uint_eq(batch.notice_count, 2);
	assert_notice(0, "PM000BD1QX4R2A", "EV00BD1QX4TB3S");
	assert_notice(1, "RF0000BD1QX9Z1", "EV00BD1QXB7KP9");
	assert_status(gocardless(body, "another secret"), PROVIDER_UNAUTHORIZED);
	assert_status(gocardless(body, NULL), PROVIDER_UNAUTHORIZED);
	/* Two events of one payment: one object to fetch, the later event. */
	bad = strdup("{\"events\":[{\"id\":\"EV1\",\"resource_type\":"
		     "\"payments\",\"action\":\"confirmed\",\"links\":"
		     "{\"payment\":\"PM1\"}},{\"id\":\"EV2\",\"resource_type\":"
		     "\"payments\",\"action\":\"paid_out\",\"links\":"
		     "{\"payment\":\"PM1\"}},{\"id\":\"EV3\",\"resource_type\":"
		     "\"mandates\",\"action\":\"cancelled\",\"links\":"
		     "{\"mandate\":\"MD1\"}}]}");
	assert_status(gocardless(bad, GC_SECRET), PROVIDER_NOTIFIED);
	ck_assert_uint_eq(batch.notice_count, 1);
	assert_notice(0, "PM1", "EV2");
	free(bad);
	{
		const char *refused[] = {
			"{\"events\":{}}",
			"{\"events\":[{\"id\":\"ev1\",\"resource_type\":"
			"\"payments\",\"action\":\"confirmed\",\"links\":"
			"{\"payment\":\"PM1\"}}]}",
			"{\"events\":[{\"id\":\"EV1\",\"resource_type\":"
			"\"payments\",\"action\":\"confirmed\",\"links\":"
			"{\"payment\":\"RF1\"}}]}",
			"{\"events\":[{\"id\":\"EV1\",\"resource_type\":"
			"\"refunds\",\"action\":\"paid\",\"links\":{}}]}",
			"{\"events\":[{\"id\":\"EV1\",\"action\":\"paid\"}]}",
			"{\"events\":[1]}",
			"[]",
		};

		for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]);
		     i++) {
			assert_status(gocardless(refused[i], GC_SECRET),
				      PROVIDER_INVALID);
			ck_assert_uint_eq(batch.notice_count, 0);
		}
	}
	/* Events of nothing payhook fetches: ignored. */
	assert_status(gocardless("{\"events\":[]}", GC_SECRET),
		      PROVIDER_IGNORED);
	free(vector);
	free(vector_sig);
	free(body);
}
END_TEST

/* ---- what payhook-reconcile fetched ---- */

static void assert_payment(const char *id, long long amount,
			   const char *currency)
{
	ck_assert_uint_eq(batch.count, 1);
	ck_assert_str_eq(batch.payments[0].transaction_id, id);
	ck_assert_int_eq(batch.payments[0].amount, amount);
	ck_assert_str_eq(batch.payments[0].currency, currency);
}

static void assert_event(size_t i, enum lifecycle_kind kind,
			 enum lifecycle_state state, const char *object,
			 const char *payment, long long amount,
			 long long occurred_at)
{
	const struct lifecycle_event *e = &batch.lifecycle[i];

	ck_assert_uint_gt(batch.lifecycle_count, i);
	ck_assert_str_eq(lifecycle_kind_name(e->kind), lifecycle_kind_name(kind));
	ck_assert_str_eq(lifecycle_state_name(e->state),
			 lifecycle_state_name(state));
	ck_assert_str_eq(e->object_id, object);
	ck_assert_str_eq(e->link.transaction_id, payment);
	ck_assert_int_eq(e->link.amount, amount);
	ck_assert_int_eq(e->occurred_at.seconds, occurred_at);
}

/* payment with the entries of refunds' and chargebacks' lists under
 * _embedded, as the fetch composes it; the caller frees. */
static char *mollie_fetched(const char *payment, const char *refunds,
			    const char *chargebacks)
{
	char *p = fixture(payment), *text;
	struct json_object *root = json_tokener_parse(p), *embedded;

	ck_assert_ptr_nonnull(root);
	embedded = json_object_new_object();
	if (refunds != NULL) {
		char *r = fixture(refunds);
		struct json_object *list = json_tokener_parse(r), *items;

		ck_assert(json_object_object_get_ex(
			json_object_object_get(list, "_embedded"), "refunds",
			&items));
		json_object_object_add(embedded, "refunds",
				       json_object_get(items));
		json_object_put(list);
		free(r);
	}
	if (chargebacks != NULL) {
		char *c = fixture(chargebacks);
		struct json_object *list = json_tokener_parse(c), *items;

		ck_assert(json_object_object_get_ex(
			json_object_object_get(list, "_embedded"),
			"chargebacks", &items));
		json_object_object_add(embedded, "chargebacks",
				       json_object_get(items));
		json_object_put(list);
		free(c);
	}
	json_object_object_add(root, "_embedded", embedded);
	text = strdup(json_object_to_json_string_ext(root,
						     JSON_C_TO_STRING_PLAIN));
	json_object_put(root);
	free(p);
	return text;
}

START_TEST(test_mollie_fetched)
{
	char *paid = fixture("mollie/payment_paid.json");
	char *open = fixture("mollie/payment_open.json");
	char *full = mollie_fetched(
		"mollie/built_payment_paid_partially_refunded.json",
		"mollie/built_refunds_list_two.json",
		"mollie/built_chargebacks_list_one_reversed.json");

	assert_status(read_fetched(CONFIG_PROVIDER_MOLLIE, paid),
		      PROVIDER_PAYMENTS);
	assert_payment("tr_oWpmDXm6sT", 1000, "EUR");
	/* Not paid: nothing recorded. */
	assert_status(read_fetched(CONFIG_PROVIDER_MOLLIE, open),
		      PROVIDER_IGNORED);
	ck_assert_uint_eq(batch.count + batch.lifecycle_count, 0);
	ck_assert_str_eq(batch.event_type, "open");
	assert_status(read_fetched(CONFIG_PROVIDER_MOLLIE, full),
		      PROVIDER_PAYMENTS);
	assert_payment("tr_5B8cwPMGnU6qLbRvo7qEZo", 1000, "EUR");
	ck_assert_uint_eq(batch.lifecycle_count, 4);
	assert_event(0, LIFECYCLE_REFUND, LIFECYCLE_FAILED, "re_APBiGPH2vV",
		     "tr_5B8cwPMGnU6qLbRvo7qEZo", 150, 1711015200);
	assert_event(1, LIFECYCLE_REFUND, LIFECYCLE_SUCCEEDED, "re_4qqhO89gsT",
		     "tr_5B8cwPMGnU6qLbRvo7qEZo", 400, 1711011600);
	assert_event(2, LIFECYCLE_DISPUTE, LIFECYCLE_LOST,
		     "chb_xFzwUN4ci8HAmSGUACS4J", "tr_5B8cwPMGnU6qLbRvo7qEZo",
		     1000, 1712044800);
	assert_event(3, LIFECYCLE_DISPUTE, LIFECYCLE_WON, "chb_n9z0tp",
		     "tr_5B8cwPMGnU6qLbRvo7qEZo", 1000, 1711800000);
	free(paid);
	free(open);
	free(full);
}
END_TEST

START_TEST(test_mercadopago_fetched)
{
	char *approved = fixture("mercadopago/built_payment_approved.json");
	char *refunded =
		fixture("mercadopago/built_payment_partially_refunded.json");
	char *charged = fixture("mercadopago/built_payment_charged_back.json");
	char *pending = fixture("mercadopago/built_payment_pending.json");
	char *recorded = fixture("mercadopago/payment_approved_recorded.json");

	assert_status(read_fetched(CONFIG_PROVIDER_MERCADOPAGO, approved),
		      PROVIDER_PAYMENTS);
	assert_payment("123456", 10050, "BRL");
	ck_assert_uint_eq(batch.lifecycle_count, 0);
	/* Recorded from the live API: 5 BRL, an integer JSON number. */
	assert_status(read_fetched(CONFIG_PROVIDER_MERCADOPAGO, recorded),
		      PROVIDER_PAYMENTS);
	ck_assert_int_eq(batch.payments[0].amount, 500);
	assert_status(read_fetched(CONFIG_PROVIDER_MERCADOPAGO, refunded),
		      PROVIDER_PAYMENTS);
	assert_payment("123456", 10050, "BRL");
	ck_assert_uint_eq(batch.lifecycle_count, 1);
	assert_event(0, LIFECYCLE_REFUND, LIFECYCLE_SUCCEEDED, "1009042015",
		     "123456", 3000, 1705064400);
	ck_assert_str_eq(batch.lifecycle[0].link.currency, "BRL");
	assert_status(read_fetched(CONFIG_PROVIDER_MERCADOPAGO, charged),
		      PROVIDER_PAYMENTS);
	assert_payment("123456", 10050, "BRL");
	assert_event(0, LIFECYCLE_DISPUTE, LIFECYCLE_LOST, "123456", "123456",
		     10050, 1706788800);
	assert_status(read_fetched(CONFIG_PROVIDER_MERCADOPAGO, pending),
		      PROVIDER_IGNORED);
	ck_assert_uint_eq(batch.count + batch.lifecycle_count, 0);
	/* An amount that is no number of centavos is refused, never
	 * rounded; nor an exponent's, a string's or a negative one. */
	{
		const char *bodies[] = {
			"{\"id\":1,\"status\":\"approved\",\"transaction_amount\":"
			"100.555,\"currency_id\":\"BRL\"}",
			"{\"id\":1,\"status\":\"approved\",\"transaction_amount\":"
			"1e2,\"currency_id\":\"BRL\"}",
			"{\"id\":1,\"status\":\"approved\",\"transaction_amount\":"
			"\"100.5\",\"currency_id\":\"BRL\"}",
			"{\"id\":1,\"status\":\"approved\",\"transaction_amount\":"
			"-5,\"currency_id\":\"BRL\"}",
		};

		for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
			assert_status(read_fetched(CONFIG_PROVIDER_MERCADOPAGO,
						   bodies[i]),
				      PROVIDER_INVALID);
		assert_status(read_fetched(CONFIG_PROVIDER_MERCADOPAGO,
					   "{\"id\":1,\"status\":\"approved\","
					   "\"transaction_amount\":100.50000,"
					   "\"currency_id\":\"BRL\"}"),
			      PROVIDER_PAYMENTS);
		ck_assert_int_eq(batch.payments[0].amount, 10050);
		assert_status(read_fetched(CONFIG_PROVIDER_MERCADOPAGO,
					   "{\"id\":1,\"status\":\"approved\","
					   "\"transaction_amount\":1500,"
					   "\"currency_id\":\"CLP\"}"),
			      PROVIDER_PAYMENTS);
		ck_assert_int_eq(batch.payments[0].amount, 1500);
	}
	free(approved);
	free(refunded);
	free(charged);
	free(pending);
	free(recorded);
}
END_TEST

START_TEST(test_gocardless_fetched)
{
	char *payment =
		fixture("gocardless/built_payment_confirmed_partially_refunded.json");
	char *refund = fixture("gocardless/built_refund_paid.json");
	char *with_events;

	assert_status(read_fetched(CONFIG_PROVIDER_GOCARDLESS, payment),
		      PROVIDER_PAYMENTS);
	assert_payment("PM000BD1QX4R2A", 2500, "GBP");
	ck_assert_uint_eq(batch.lifecycle_count, 0);
	assert_status(read_fetched(CONFIG_PROVIDER_GOCARDLESS, refund),
		      PROVIDER_IGNORED);
	ck_assert_uint_eq(batch.count, 0);
	assert_event(0, LIFECYCLE_REFUND, LIFECYCLE_SUCCEEDED, "RF0000BD1QX9Z1",
		     "PM000BD1QX4R2A", 1000, 1710924000);
	/* Charged back, then the chargeback cancelled: both, in order. */
	with_events = malloc(strlen(payment) + 512);
	ck_assert_ptr_nonnull(with_events);
	sprintf(with_events, "%.*s,\"events\":[{\"id\":\"EV1\",\"created_at\":"
		"\"2024-04-01T10:00:00.000Z\",\"resource_type\":\"payments\","
		"\"action\":\"charged_back\",\"links\":{\"payment\":"
		"\"PM000BD1QX4R2A\"}},{\"id\":\"EV2\",\"created_at\":"
		"\"2024-04-10T10:00:00.000Z\",\"resource_type\":\"payments\","
		"\"action\":\"chargeback_cancelled\",\"links\":{\"payment\":"
		"\"PM000BD1QX4R2A\"}},{\"id\":\"EV0\",\"created_at\":"
		"\"2024-03-20T09:13:51.404Z\",\"resource_type\":\"payments\","
		"\"action\":\"confirmed\",\"links\":{\"payment\":"
		"\"PM000BD1QX4R2A\"}}]}",
		(int)strlen(payment) - 1, payment);
	assert_status(read_fetched(CONFIG_PROVIDER_GOCARDLESS, with_events),
		      PROVIDER_PAYMENTS);
	ck_assert_uint_eq(batch.lifecycle_count, 2);
	assert_event(0, LIFECYCLE_DISPUTE, LIFECYCLE_LOST, "PM000BD1QX4R2A",
		     "PM000BD1QX4R2A", 2500, 1711965600);
	assert_event(1, LIFECYCLE_DISPUTE, LIFECYCLE_WON, "PM000BD1QX4R2A",
		     "PM000BD1QX4R2A", 2500, 1712743200);
	/* An event as the list of events gives it: one to queue. */
	assert_status(read_fetched(CONFIG_PROVIDER_GOCARDLESS,
				   "{\"id\":\"EV00BD1QXB7KP9\",\"resource_type\":"
				   "\"refunds\",\"action\":\"paid\",\"links\":"
				   "{\"refund\":\"RF0000BD1QX9Z1\"}}"),
		      PROVIDER_NOTIFIED);
	assert_notice(0, "RF0000BD1QX9Z1", "EV00BD1QXB7KP9");
	free(payment);
	free(refund);
	free(with_events);
}
END_TEST

/* A notify profile without its API key stops start-up. */
START_TEST(test_api_key_required)
{
	struct config c;
	struct error err;

	unsetenv("PAYHOOK_MOLLIE_API_KEY");
	ck_assert_int_ne(pipeline_load_config(&c, NULL, &err), 0);
	ck_assert_msg(strstr(err.message, "mollie_api_key") != NULL, "%s",
		      err.message);
	setenv("PAYHOOK_MOLLIE_API_KEY", "test_x", 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("notify");
	TCase *tc = tcase_create("notify");
	SRunner *sr;
	int failed;

	unsetenv("PAYHOOK_CONFIG");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_mollie_notification);
	tcase_add_test(tc, test_media_types);
	tcase_add_test(tc, test_mercadopago_notification);
	tcase_add_test(tc, test_gocardless_notification);
	tcase_add_test(tc, test_mollie_fetched);
	tcase_add_test(tc, test_mercadopago_fetched);
	tcase_add_test(tc, test_gocardless_fetched);
	tcase_add_test(tc, test_api_key_required);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
