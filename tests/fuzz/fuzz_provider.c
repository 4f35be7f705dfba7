/* fuzz_provider.c - libFuzzer target for the provider profiles: every
 * profile's signature, payment event and lifecycle events (refunds, disputes,
 * cancellations), Adyen batches and the headers the profiles read, through
 * route_profile, provider_enabled and provider_read, with every profile
 * enabled.
 *
 * Input: two header bytes, then three NUL-terminated text fields (the
 * signature header's value, the topic header's, the event-id header's),
 * then the body.
 *   b0 the profile (mod CONFIG_PROVIDER_COUNT, in enum config_provider's
 *      order)
 *   b1 bit 0: sign the body with the profile's secret through provider_sign
 *      (so the fuzzer gets past the signature; Adyen signs inside the body)
 *      instead of sending the first field as the signature;
 *      bit 1: send the topic field (Shopify's X-Shopify-Topic), else the
 *      signer's default or none; bit 2: send the event-id field (webhook-id,
 *      X-Razorpay-Event-Id, X-Shopify-Event-Id), else the signer's own;
 *      bit 3: a timestamp 10 s old instead of now
 * Every input is read twice by the same parser, and the two readings must
 * agree (no state carried from one request to the next).
 *
 * Asserted: the status is one of provider_status; a failure has a reason
 * that names no secret; a body signed by provider_sign is never refused as
 * unsigned (the two sides follow one profile table), and an unsigned one is
 * never accepted (no profile but PAY.JP's token can be guessed); every
 * payment and lifecycle event read holds what doc/providers.md promises (ids of
 * 1..128 / 1..255 visible ASCII bytes, amounts >= 1 (lifecycle: >= 0),
 * currencies of three upper-case letters, the profile's name, a known kind
 * and a state of that kind).
 */
#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "configuration.h"
#include "fuzz.h"
#include "lifecycle.h"
#include "payload.h"
#include "pipeline.h"
#include "provider.h"
#include "route.h"
#include "request.h"
#include "signature.h"

#define HEADER_BYTES 2
#define FIELDS 3
#define PARAMS_MAX 16

/* Secrets in each provider's form; none may appear in a reason. */
static const char *const secrets[CONFIG_PROVIDER_COUNT] = {
	[CONFIG_PROVIDER_STANDARD] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	[CONFIG_PROVIDER_STRIPE] = "whsec_fuzz_stripe_endpoint_secret",
	[CONFIG_PROVIDER_PADDLE] = "pdl_ntfset_01fuzz_paddle_secret_key",
	[CONFIG_PROVIDER_RAZORPAY] = "fuzz-razorpay-webhook-secret",
	[CONFIG_PROVIDER_KOMOJU] = "fuzz-komoju-webhook-secret",
	[CONFIG_PROVIDER_PAYJP] = "whook_fuzz_payjp_token",
	[CONFIG_PROVIDER_SQUARE] = "fuzz-square-signature-key",
	[CONFIG_PROVIDER_SHOPIFY] = "fuzz-shopify-client-secret",
	[CONFIG_PROVIDER_ADYEN] =
		"44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
	[CONFIG_PROVIDER_GENERIC] = "fuzz-generic-secret",
	/* PayPal signs with its certificate: no secret, so its bodies go
	 * unsigned here (fuzz_paypal.c fuzzes its headers). */
	[CONFIG_PROVIDER_PAYPAL] = "",
	[CONFIG_PROVIDER_CHECKOUT] = "fuzz-checkout-signature-key",
	[CONFIG_PROVIDER_LEMONSQUEEZY] = "fuzz-lemonsqueezy-signing-secret",
};

static struct config cfg;
static struct provider_set *set;
static struct payload_parser *parser;

static void env(const char *key, const char *value)
{
	if (setenv(key, value, 1) != 0)
		FUZZ_FATAL("setenv %s failed", key);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const keys[CONFIG_PROVIDER_COUNT] = {
		"PAYHOOK_WEBHOOK_SECRET", "PAYHOOK_STRIPE_SECRET",
		"PAYHOOK_PADDLE_SECRET", "PAYHOOK_RAZORPAY_SECRET",
		"PAYHOOK_KOMOJU_SECRET", "PAYHOOK_PAYJP_SECRET",
		"PAYHOOK_SQUARE_SECRET", "PAYHOOK_SHOPIFY_SECRET",
		"PAYHOOK_ADYEN_SECRET", "PAYHOOK_GENERIC_SECRET",
		"PAYHOOK_PAYPAL_WEBHOOK_ID", "PAYHOOK_CHECKOUT_SECRET",
		"PAYHOOK_LEMONSQUEEZY_SECRET",
	};
	struct error err;

	(void)argc;
	(void)argv;
	env("PAYHOOK_PROVIDERS", "standard stripe paddle razorpay komoju payjp "
	    "square shopify adyen generic paypal checkout lemonsqueezy");
	/* The providers that only notify have no row here: they are
	 * queued, not read, on the request path. */
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++)
		if (i != CONFIG_PROVIDER_PAYPAL && keys[i] != NULL &&
		    secrets[i] != NULL)
			env(keys[i], secrets[i]);
	env("PAYHOOK_PAYPAL_WEBHOOK_ID", "1JE4291016473214C");
	/* No certificate URL is sent; were one, nothing listens there. */
	env("PAYHOOK_PAYPAL_CERT_HOSTS", "127.0.0.1:1");
	env("PAYHOOK_SQUARE_NOTIFICATION_URL", "https://shop.example/webhook/square");
	env("PAYHOOK_GENERIC_SIGNATURE_HEADER", "X-Signature");
	env("PAYHOOK_GENERIC_SIGNATURE_PREFIX", "sha256=");
	env("PAYHOOK_GENERIC_SIGNED_PAYLOAD", "{timestamp}.{body}");
	env("PAYHOOK_GENERIC_TIMESTAMP_HEADER", "X-Timestamp");
	env("PAYHOOK_GENERIC_EVENT_PATH", "event");
	env("PAYHOOK_GENERIC_EVENT_VALUES", "order.paid charge.paid");
	env("PAYHOOK_GENERIC_EVENT_ID_PATH", "id");
	env("PAYHOOK_GENERIC_TRANSACTION_ID_PATH", "data.id");
	env("PAYHOOK_GENERIC_AMOUNT_PATH", "data.total");
	env("PAYHOOK_GENERIC_AMOUNT_FORMAT", "decimal");
	env("PAYHOOK_GENERIC_CURRENCY_PATH", "data.currency");
	env("PAYHOOK_LOG_LEVEL", "error");
	if (pipeline_load_config(&cfg, NULL, &err) != 0)
		FUZZ_FATAL("configuration: %s", err.message);
	set = provider_set_new(&cfg, &err);
	parser = payload_parser_new();
	if (set == NULL || parser == NULL)
		FUZZ_FATAL("providers: %s", set == NULL ? err.message : "parser");
	return 0;
}

/* The CGI variables of one request, "NAME=value" strings in one buffer. */
struct params {
	char *items[PARAMS_MAX + 1];
	size_t count;
	char storage[8192];
	size_t used;
};

static void param(struct params *ps, const char *name, const char *value)
{
	int n;

	if (ps->count >= PARAMS_MAX)
		return;
	n = snprintf(ps->storage + ps->used, sizeof(ps->storage) - ps->used,
		     "%s=%s", name, value);
	if (n < 0 || (size_t)n >= sizeof(ps->storage) - ps->used)
		return; /* too long for the buffer: the header is absent */
	ps->items[ps->count++] = ps->storage + ps->used;
	ps->items[ps->count] = NULL;
	ps->used += (size_t)n + 1;
}

/* A header by its HTTP name, as a web server hands it over. */
static void header(struct params *ps, const char *name, const char *value)
{
	char cgi[96];

	if (request_header_param(name, cgi, sizeof(cgi)) == 0)
		param(ps, cgi, value);
}

static bool visible(const char *text, size_t len, size_t max)
{
	if (len < 1 || len > max || strlen(text) != len)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (text[i] < 0x21 || text[i] > 0x7e)
			return false;
	}
	return true;
}

static bool currency_ok(const char *c)
{
	return strlen(c) == 3 && isupper((unsigned char)c[0]) &&
	       isupper((unsigned char)c[1]) && isupper((unsigned char)c[2]);
}

static void check_payment(const struct payment *pay, const char *profile,
			  bool lifecycle)
{
	FUZZ_CHECK(pay->provider != NULL && strcmp(pay->provider, profile) == 0,
		   "payment of %s read by %s",
		   pay->provider != NULL ? pay->provider : "(null)", profile);
	FUZZ_CHECK(visible(pay->transaction_id, pay->transaction_id_len,
			   PAYMENT_TRANSACTION_ID_MAX),
		   "transaction id of %zu bytes", pay->transaction_id_len);
	FUZZ_CHECK(lifecycle ? pay->amount >= 0 : pay->amount >= 1,
		   "amount %lld", (long long)pay->amount);
	FUZZ_CHECK((lifecycle && pay->currency[0] == '\0') ||
			   currency_ok(pay->currency),
		   "currency '%s'", pay->currency);
	FUZZ_CHECK(pay->event_id_len == 0 ||
			   visible(pay->event_id, pay->event_id_len,
				   PAYMENT_EVENT_ID_MAX),
		   "event id of %zu bytes", pay->event_id_len);
}

static void check_lifecycle(const struct lifecycle_event *ev,
			    const char *profile)
{
	bool refund_state = ev->state == LIFECYCLE_PENDING ||
			    ev->state == LIFECYCLE_SUCCEEDED ||
			    ev->state == LIFECYCLE_FAILED;

	FUZZ_CHECK(ev->kind == LIFECYCLE_REFUND || ev->kind == LIFECYCLE_DISPUTE ||
			   ev->kind == LIFECYCLE_CANCELLATION,
		   "kind %d", (int)ev->kind);
	FUZZ_CHECK(ev->kind == LIFECYCLE_DISPUTE ? !refund_state :
		   ev->kind == LIFECYCLE_CANCELLATION ?
			   ev->state == LIFECYCLE_SUCCEEDED :
			   refund_state,
		   "state %s for a %s", lifecycle_state_name(ev->state),
		   lifecycle_kind_name(ev->kind));
	FUZZ_CHECK(visible(ev->object_id, ev->object_id_len,
			   LIFECYCLE_OBJECT_ID_MAX),
		   "object id of %zu bytes", ev->object_id_len);
	FUZZ_CHECK(ev->occurred_at.micros >= 0 &&
			   ev->occurred_at.micros < 1000000,
		   "micros %d", (int)ev->occurred_at.micros);
	check_payment(&ev->link, profile, true);
}

/* Reads the request once; returns the status, with the batch checked. */
static enum provider_status read_once(const struct provider *p,
				      const struct request *req,
				      const char *body, size_t len,
				      time_t now, struct provider_batch *batch)
{
	struct error why;
	enum provider_status status;

	error_clear(&why);
	status = provider_read(p, req, parser, body, len, now, batch, &why);
	FUZZ_CHECK(status >= PROVIDER_PAYMENTS && status <= PROVIDER_ERROR,
		   "status %d", (int)status);
	if (status == PROVIDER_UNAUTHORIZED || status == PROVIDER_INVALID ||
	    status == PROVIDER_ERROR) {
		FUZZ_CHECK(why.message[0] != '\0', "status %d without a reason",
			   (int)status);
		for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++)
			FUZZ_CHECK(secrets[i] == NULL || secrets[i][0] == '\0' ||
					   strstr(why.message, secrets[i]) == NULL,
				   "a secret in the reason: %s", why.message);
		return status;
	}
	if (status == PROVIDER_PAYMENTS)
		FUZZ_CHECK(batch->count >= 1 && batch->count <= PROVIDER_PAYMENTS_MAX,
			   "%zu payments", batch->count);
	else
		FUZZ_CHECK(batch->count == 0, "ignored with %zu payments",
			   batch->count);
	for (size_t i = 0; i < batch->count; i++)
		check_payment(&batch->payments[i], provider_name(p), false);
	FUZZ_CHECK(batch->lifecycle_count <= PROVIDER_LIFECYCLE_MAX,
		   "%zu lifecycle events", batch->lifecycle_count);
	for (size_t i = 0; i < batch->lifecycle_count; i++)
		check_lifecycle(&batch->lifecycle[i], provider_name(p));
	return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct provider_batch first, second;
	const char *field[FIELDS];
	const uint8_t *at = data + HEADER_BYTES, *end = data + size;
	enum config_provider id;
	struct provider_headers headers;
	struct provider_sign_input in;
	struct params ps = { .count = 0 };
	struct request req;
	const struct provider *p;
	char *copy, *signed_body = NULL, uri[64], stamp[24];
	const char *body;
	size_t len;
	bool sign, signed_ok = false;
	time_t now = time(NULL);
	struct error err;
	enum provider_status a, b;

	if (size < HEADER_BYTES)
		return 0;
	/* The fields and the body, NUL-terminated, in one copy. */
	copy = malloc(size + 1);
	if (copy == NULL)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (size_t i = 0; i < FIELDS; i++) {
		const uint8_t *nul = memchr(at, '\0', (size_t)(end - at));

		field[i] = copy + (at - data);
		at = nul != NULL ? nul + 1 : end;
	}
	body = copy + (at - data);
	len = (size_t)(end - at);
	/* The profiles read on the request path; those after them only
	 * notify (queued: notify.c, fuzzed as they are fetched). */
	id = (enum config_provider)(data[0] % (CONFIG_PROVIDER_LEMONSQUEEZY + 1));
	sign = (data[1] & 1) != 0;
	snprintf(stamp, sizeof(stamp), "%lld",
		 (long long)(now - ((data[1] & 8) ? 10 : 0)));

	/* The path first: a header too long for the storage is left out,
	 * the route never. */
	snprintf(uri, sizeof(uri), "/webhook/%s", config_provider_name(id));
	param(&ps, "REQUEST_URI", uri);
	in = (struct provider_sign_input){
		.provider = id, .secret = secrets[id],
		.id = (data[1] & 4) ? field[2] : "msg_fuzz_2Lk4eUvNq7",
		.timestamp = stamp,
		.topic = (data[1] & 2) ? field[1] : NULL, .cfg = &cfg,
	};
	if (sign && provider_sign(&in, body, len, &headers, &signed_body,
				  &err) == 0) {
		signed_ok = true;
		for (size_t i = 0; i < headers.count; i++)
			header(&ps, headers.items[i].name,
			       headers.items[i].value);
		if (signed_body != NULL) {
			body = signed_body;
			len = strlen(signed_body);
		}
	} else {
		static const char *const sig_headers[CONFIG_PROVIDER_COUNT] = {
			"webhook-signature", "Stripe-Signature",
			"Paddle-Signature", "X-Razorpay-Signature",
			"X-Komoju-Signature", "X-Payjp-Webhook-Token",
			"x-square-hmacsha256-signature", "X-Shopify-Hmac-Sha256",
			NULL, "X-Signature", "PAYPAL-TRANSMISSION-SIG",
			"Cko-Signature", "X-Signature",
		};

		if (sig_headers[id] != NULL)
			header(&ps, sig_headers[id], field[0]);
		header(&ps, "webhook-id", in.id);
		header(&ps, "webhook-timestamp", stamp);
		header(&ps, "X-Timestamp", stamp);
		if (data[1] & 2)
			header(&ps, "X-Shopify-Topic", field[1]);
		if (data[1] & 4) {
			header(&ps, "X-Razorpay-Event-Id", field[2]);
			header(&ps, "X-Shopify-Event-Id", field[2]);
		}
	}
	req = (struct request){ .params = ps.items };
	p = provider_enabled(set, route_profile(&req));
	FUZZ_CHECK(p != NULL && provider_id(p) == id, "%s not routed", uri);

	a = read_once(p, &req, body, len, now, &first);
	/* A webhook-id the fuzzer chose may break Standard Webhooks' id rule,
	 * which the verifier checks and the signer leaves to its caller. */
	if (signed_ok && (id != CONFIG_PROVIDER_STANDARD ||
			  signature_id_valid(in.id)))
		FUZZ_CHECK(a != PROVIDER_UNAUTHORIZED,
			   "%s refused what provider_sign signed",
			   config_provider_name(id));
	if (!signed_ok && id != CONFIG_PROVIDER_PAYJP)
		FUZZ_CHECK(a == PROVIDER_UNAUTHORIZED || a == PROVIDER_INVALID ||
				   a == PROVIDER_ERROR,
			   "%s accepted an unsigned body (status %d)",
			   config_provider_name(id), (int)a);
	b = read_once(p, &req, body, len, now, &second);
	FUZZ_CHECK(a == b && first.count == second.count &&
			   first.lifecycle_count == second.lifecycle_count,
		   "a second reading differs: %d/%zu/%zu then %d/%zu/%zu",
		   (int)a, first.count, first.lifecycle_count, (int)b,
		   second.count, second.lifecycle_count);
	for (size_t i = 0; i < first.count; i++) {
		const struct payment *x = &first.payments[i];
		const struct payment *y = &second.payments[i];

		FUZZ_CHECK(strcmp(x->transaction_id, y->transaction_id) == 0 &&
				   x->amount == y->amount &&
				   strcmp(x->currency, y->currency) == 0 &&
				   strcmp(x->event_id, y->event_id) == 0,
			   "payment %zu differs on a second reading", i);
	}
	free(signed_body);
	free(copy);
	return 0;
}
