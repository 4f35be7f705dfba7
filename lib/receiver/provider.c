/* provider.c - the provider profiles (see provider.h). One table says, per
 * provider, which scheme signs its webhooks and where its fields are; the
 * code below only follows the table and dispatches to the scheme
 * (provider_scheme.h), so adding a provider that signs like an existing
 * one is one row, and one that signs its own way is a row and a scheme
 * module.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "provider.h"
#include "provider_adyen.h"
#include "provider_generic.h"
#include "provider_gocardless.h"
#include "provider_hmac.h"
#include "provider_mercadopago.h"
#include "provider_mollie.h"
#include "provider_paypal.h"
#include "provider_row.h"
#include "provider_scheme.h"

static const struct profile profiles[CONFIG_PROVIDER_COUNT] = {
	[CONFIG_PROVIDER_STANDARD] = {
		.id = CONFIG_PROVIDER_STANDARD, .scheme = &provider_scheme_standard,
		.form = SECRET_WHSEC_BASE64,
		.signature_header = "webhook-signature",
		.timestamp_header = "webhook-timestamp",
		.event_id_header = "webhook-id",
		.id_path = "transaction_id", .amount_path = "amount",
		.currency_path = "currency",
	},
	[CONFIG_PROVIDER_STRIPE] = {
		.id = CONFIG_PROVIDER_STRIPE, .scheme = &provider_scheme_stripe,
		.form = SECRET_TEXT,
		.signature_header = "Stripe-Signature",
		.event_path = "type", .payment_event = "payment_intent.succeeded",
		.event_id_path = "id",
		.id_path = "data.object.id",
		.amount_path = "data.object.amount_received",
		.currency_path = "data.object.currency",
	},
	[CONFIG_PROVIDER_PADDLE] = {
		.id = CONFIG_PROVIDER_PADDLE, .scheme = &provider_scheme_paddle,
		.form = SECRET_TEXT,
		.signature_header = "Paddle-Signature",
		.event_path = "event_type",
		.payment_event = "transaction.completed",
		.event_id_path = "event_id",
		.id_path = "data.id",
		.amount_path = "data.details.totals.grand_total",
		.amount_form = PAYLOAD_AMOUNT_MINOR_STRING,
		.currency_path = "data.currency_code",
	},
	[CONFIG_PROVIDER_RAZORPAY] = {
		.id = CONFIG_PROVIDER_RAZORPAY, .scheme = &provider_scheme_body_hex,
		.form = SECRET_TEXT,
		.signature_header = "X-Razorpay-Signature",
		.event_path = "event", .payment_event = "payment.captured",
		.event_id_header = "X-Razorpay-Event-Id",
		.id_path = "payload.payment.entity.id",
		.amount_path = "payload.payment.entity.amount",
		.currency_path = "payload.payment.entity.currency",
	},
	[CONFIG_PROVIDER_KOMOJU] = {
		.id = CONFIG_PROVIDER_KOMOJU, .scheme = &provider_scheme_body_hex,
		.form = SECRET_TEXT,
		.signature_header = "X-Komoju-Signature",
		.event_path = "type", .payment_event = "payment.captured",
		.event_id_path = "id",
		.id_path = "data.id", .amount_path = "data.amount",
		.currency_path = "data.currency",
	},
	[CONFIG_PROVIDER_PAYJP] = {
		.id = CONFIG_PROVIDER_PAYJP, .scheme = &provider_scheme_token,
		.form = SECRET_TEXT,
		.signature_header = "X-Payjp-Webhook-Token",
		.event_path = "type", .payment_event = "charge.succeeded",
		.event_id_path = "id",
		.id_path = "data.id", .amount_path = "data.amount",
		.currency_path = "data.currency",
	},
	[CONFIG_PROVIDER_SQUARE] = {
		.id = CONFIG_PROVIDER_SQUARE, .scheme = &provider_scheme_url_body,
		.form = SECRET_TEXT,
		.signature_header = "x-square-hmacsha256-signature",
		.event_path = "type", .payment_event = "payment.updated",
		.status_path = "data.object.payment.status",
		.status_value = "COMPLETED",
		.event_id_path = "event_id",
		.id_path = "data.id",
		.amount_path = "data.object.payment.amount_money.amount",
		.currency_path = "data.object.payment.amount_money.currency",
	},
	[CONFIG_PROVIDER_SHOPIFY] = {
		.id = CONFIG_PROVIDER_SHOPIFY, .scheme = &provider_scheme_body_base64,
		.form = SECRET_TEXT,
		.signature_header = "X-Shopify-Hmac-Sha256",
		.event_header = "X-Shopify-Topic",
		.payment_event = "orders/paid",
		.status_path = "financial_status", .status_value = "paid",
		.event_id_header = "X-Shopify-Event-Id",
		.id_path = "id", .id_integer = true,
		.amount_path = "total_price",
		.amount_form = PAYLOAD_AMOUNT_DECIMAL,
		.currency_path = "currency",
	},
	[CONFIG_PROVIDER_ADYEN] = {
		.id = CONFIG_PROVIDER_ADYEN, .scheme = &provider_scheme_adyen,
		.form = SECRET_HEX,
		.event_path = "eventCode", .payment_event = "AUTHORISATION",
		.status_path = "success", .status_value = "true",
		.id_path = "pspReference", .amount_path = "amount.value",
		.currency_path = "amount.currency",
	},
	[CONFIG_PROVIDER_GENERIC] = {
		.id = CONFIG_PROVIDER_GENERIC, .scheme = &provider_scheme_generic,
		.form = SECRET_TEXT, /* generic_secret_encoding decides */
	},
	/* developer.paypal.com/api/rest/webhooks; the capture's amount is a
	 * decimal string (the money object of payments_payment_v2). */
	[CONFIG_PROVIDER_PAYPAL] = {
		.id = CONFIG_PROVIDER_PAYPAL, .scheme = &provider_scheme_paypal,
		.form = SECRET_TEXT, /* keyless: its certificate signs */
		.signature_header = "PAYPAL-TRANSMISSION-SIG",
		.timestamp_header = "PAYPAL-TRANSMISSION-TIME",
		.more_headers = provider_paypal_headers,
		.event_path = "event_type",
		.payment_event = "PAYMENT.CAPTURE.COMPLETED",
		.event_id_path = "id",
		.id_path = "resource.id",
		.amount_path = "resource.amount.value",
		.amount_form = PAYLOAD_AMOUNT_DECIMAL,
		.currency_path = "resource.amount.currency_code",
	},
	/* checkout.com/docs: Cko-Signature, a hex HMAC-SHA256 of the body
	 * with the webhook's signature key; data.amount in minor units. */
	[CONFIG_PROVIDER_CHECKOUT] = {
		.id = CONFIG_PROVIDER_CHECKOUT, .scheme = &provider_scheme_body_hex,
		.form = SECRET_TEXT,
		.signature_header = "Cko-Signature",
		.event_path = "type", .payment_event = "payment_captured",
		.event_id_path = "id",
		.id_path = "data.id", .amount_path = "data.amount",
		.currency_path = "data.currency",
	},
	/* docs.lemonsqueezy.com/help/webhooks: X-Signature, a hex
	 * HMAC-SHA256 of the body with the signing secret; a JSON:API order
	 * whose total is in cents. */
	[CONFIG_PROVIDER_LEMONSQUEEZY] = {
		.id = CONFIG_PROVIDER_LEMONSQUEEZY,
		.scheme = &provider_scheme_body_hex, .form = SECRET_TEXT,
		.signature_header = "X-Signature",
		.event_path = "meta.event_name", .payment_event = "order_created",
		.status_path = "data.attributes.status", .status_value = "paid",
		.id_path = "data.id", .amount_path = "data.attributes.total",
		.currency_path = "data.attributes.currency",
	},
	/* The providers that only notify: the row reads what
	 * payhook-reconcile fetched from the API, a payment object, whose
	 * status says whether it is paid. */
	/* docs.mollie.com: a form post id=tr_...; GET /v2/payments/{id},
	 * status paid, amount.value a decimal string. */
	[CONFIG_PROVIDER_MOLLIE] = {
		.id = CONFIG_PROVIDER_MOLLIE, .scheme = &provider_scheme_mollie,
		.form = SECRET_TEXT, /* keyless: nothing is signed */
		.media = REQUEST_MEDIA_FORM,
		.event_path = "status", .payment_event = "paid",
		.id_path = "id", .amount_path = "amount.value",
		.amount_form = PAYLOAD_AMOUNT_DECIMAL,
		.currency_path = "amount.currency",
	},
	/* mercadopago.com developers: x-signature over data.id; GET
	 * /v1/payments/{id}, approved (or refunded, charged back or in
	 * mediation since), transaction_amount a JSON number in major
	 * units, the id a JSON integer. */
	[CONFIG_PROVIDER_MERCADOPAGO] = {
		.id = CONFIG_PROVIDER_MERCADOPAGO,
		.scheme = &provider_scheme_mercadopago, .form = SECRET_TEXT,
		.signature_header = "x-signature",
		.more_headers = provider_mercadopago_headers,
		.event_path = "status",
		.payment_event = "approved refunded charged_back in_mediation",
		.payment_event_list = true,
		.id_path = "id", .id_integer = true,
		.amount_path = "transaction_amount",
		.amount_form = PAYLOAD_AMOUNT_DECIMAL_NUMBER,
		.currency_path = "currency_id",
	},
	/* developer.gocardless.com: Webhook-Signature over the body; GET
	 * /payments/{id}, confirmed (or paid out, charged back since),
	 * amount in minor units. */
	[CONFIG_PROVIDER_GOCARDLESS] = {
		.id = CONFIG_PROVIDER_GOCARDLESS,
		.scheme = &provider_scheme_gocardless, .form = SECRET_TEXT,
		.signature_header = "Webhook-Signature",
		.event_path = "payments.status",
		.payment_event = "confirmed paid_out charged_back",
		.payment_event_list = true,
		.id_path = "payments.id", .amount_path = "payments.amount",
		.currency_path = "payments.currency",
	},
};

/* Announcements of refunds and disputes that a profile does not read (the
 * change comes through another event of its provider, which would count
 * it twice), and what carries it: the note on an ignored event's log
 * line, so that an operator who subscribed to the wrong one learns it. */
static const struct ignored_instead {
	enum config_provider provider;
	const char *event;
	const char *instead;
} ignored_instead[] = {
#define STRIPE_REFUNDS "refund.created, refund.updated, refund.failed"
#define STRIPE_DISPUTES \
	"charge.dispute.created, charge.dispute.updated, charge.dispute.closed"
#define RAZORPAY_DISPUTES \
	"payment.dispute.created, payment.dispute.won, " \
	"payment.dispute.lost, payment.dispute.closed"
	{ CONFIG_PROVIDER_STRIPE, "charge.refunded", STRIPE_REFUNDS },
	{ CONFIG_PROVIDER_STRIPE, "charge.refund.updated", STRIPE_REFUNDS },
	{ CONFIG_PROVIDER_STRIPE, "charge.dispute.funds_withdrawn",
	  STRIPE_DISPUTES },
	{ CONFIG_PROVIDER_STRIPE, "charge.dispute.funds_reinstated",
	  STRIPE_DISPUTES },
	{ CONFIG_PROVIDER_RAZORPAY, "payment.dispute.under_review",
	  RAZORPAY_DISPUTES },
	{ CONFIG_PROVIDER_RAZORPAY, "payment.dispute.action_required",
	  RAZORPAY_DISPUTES },
#undef STRIPE_REFUNDS
#undef STRIPE_DISPUTES
#undef RAZORPAY_DISPUTES
};

void provider_fields(enum config_provider provider,
		     struct provider_fields *out)
{
	const struct profile *row = &profiles[provider % CONFIG_PROVIDER_COUNT];

	memset(out, 0, sizeof(*out));
	if (row->scheme == &provider_scheme_generic)
		return;
	out->event_path = row->event_path;
	out->payment_event = row->payment_event;
	out->status_path = row->status_path;
	out->status_value = row->status_value;
	out->event_id_path = row->event_id_path;
	out->id_path = row->id_path;
	out->amount_path = row->amount_path;
	out->currency_path = row->currency_path;
	out->amount_form = row->amount_form;
	out->id_integer = row->id_integer;
}

/* One header's CGI name into param, or "" when the profile has none. */
static int header_param(const char *header, char *param, struct error *err)
{
	param[0] = '\0';
	if (header != NULL &&
	    request_header_param(header, param, PROVIDER_PARAM_MAX) != 0)
		return error_set(err, "header name %.64s is too long", header);
	return 0;
}

/* Fills p's CGI names from its profile's header names. Returns 0, or -1
 * with err set (a name too long: config_load bounds the generic ones). */
static int header_params(struct provider *p, struct error *err)
{
	const struct profile *row = &p->profile;
	bool ended = row->more_headers == NULL;

	if (header_param(row->signature_header, p->signature_param, err) != 0 ||
	    header_param(row->timestamp_header, p->timestamp_param, err) != 0 ||
	    header_param(row->event_header, p->event_param, err) != 0 ||
	    header_param(row->event_id_header, p->event_id_param, err) != 0)
		return -1;
	/* more_headers ends at its first NULL: a row's list may be shorter
	 * than PROVIDER_MORE_HEADERS_MAX, and nothing past it is read. */
	for (size_t i = 0; i < PROVIDER_MORE_HEADERS_MAX; i++) {
		const char *h = ended ? NULL : row->more_headers[i];

		ended = h == NULL;
		if (header_param(h, p->more_params[i], err) != 0)
			return -1;
	}
	snprintf(p->signature_missing, sizeof(p->signature_missing),
		 "%s header missing",
		 row->signature_header != NULL ? row->signature_header
					       : "signature");
	return 0;
}

struct provider_set *provider_set_new(const struct config *cfg,
				      struct error *err)
{
	struct provider_set *set = calloc(1, sizeof(*set));
	struct error inner;

	if (set == NULL) {
		error_set(err, "providers: out of memory");
		return NULL;
	}
	set->cfg = cfg;
	set->rules.default_currency = cfg->default_currency;
	set->rules.trim_transaction_id = cfg->trim_transaction_id;
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++) {
		struct provider *p = &set->providers[i];

		p->profile = profiles[i];
		p->set = set;
		p->tolerance_s = config_tolerance_s(cfg, i);
		if (!config_provider_enabled(cfg, i))
			continue;
		set->enabled[i] = true;
		if ((p->profile.scheme->setup != NULL &&
		     p->profile.scheme->setup(p, cfg, err) != 0) ||
		    header_params(p, err) != 0)
			goto fail;
		/* Standard under signature_scheme = none checks nothing; a
		 * keyless scheme has no secret to hold. */
		if ((i == CONFIG_PROVIDER_STANDARD &&
		     cfg->signature_scheme == CONFIG_SIGNATURE_NONE) ||
		    p->profile.scheme->keyless)
			continue;
		p->ring = signature_keyring_new(cfg->secrets[i].items,
						cfg->secrets[i].count,
						p->profile.form, &inner);
		if (p->ring == NULL) {
			error_set(err, "%s: %s", config_provider_name(i),
				  inner.message);
			goto fail;
		}
	}
	return set;
fail:
	provider_set_free(set);
	return NULL;
}

void provider_set_free(struct provider_set *set)
{
	if (set == NULL)
		return;
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++) {
		struct provider *p = &set->providers[i];

		signature_keyring_free(p->ring);
		if (p->state != NULL && p->profile.scheme->cleanup != NULL)
			p->profile.scheme->cleanup(p);
	}
	free(set);
}

int provider_set_check_stores(const struct provider_set *set,
			      struct error *err)
{
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++) {
		const struct provider *p = &set->providers[i];

		if (set->enabled[i] && p->profile.scheme->check_store != NULL &&
		    p->profile.scheme->check_store(p, err) != 0)
			return -1;
	}
	return 0;
}

const struct provider *provider_enabled(const struct provider_set *set,
					enum config_provider id)
{
	return (unsigned)id < CONFIG_PROVIDER_COUNT && set->enabled[id] ?
		       &set->providers[id] : NULL;
}

bool provider_keyless(enum config_provider id)
{
	return (unsigned)id < CONFIG_PROVIDER_COUNT && profiles[id].scheme->keyless;
}

bool provider_notifies(enum config_provider id)
{
	return (unsigned)id < CONFIG_PROVIDER_COUNT &&
	       profiles[id].scheme->notice != NULL;
}

enum request_media provider_media(enum config_provider id)
{
	return (unsigned)id < CONFIG_PROVIDER_COUNT ? profiles[id].media
						    : REQUEST_MEDIA_JSON;
}

bool provider_unsigned(enum config_provider id)
{
	return (unsigned)id < CONFIG_PROVIDER_COUNT &&
	       profiles[id].scheme->unsigned_deliveries;
}

const char *provider_name(const struct provider *provider)
{
	return config_provider_name(provider->profile.id);
}

enum config_provider provider_id(const struct provider *provider)
{
	return provider->profile.id;
}

/* ---- signatures ---- */

/* Adds name to names[0..*n) unless it is "" or there already. */
static void add_param(const char *name, const char **names, size_t *n)
{
	if (name[0] == '\0' || *n >= PROVIDER_HEADER_PARAMS_MAX)
		return;
	for (size_t i = 0; i < *n; i++)
		if (strcmp(names[i], name) == 0)
			return;
	names[(*n)++] = name;
}

size_t provider_header_params(const struct provider *p, const char **names)
{
	size_t n = 0;

	add_param(p->signature_param, names, &n);
	add_param(p->timestamp_param, names, &n);
	add_param(p->event_param, names, &n);
	add_param(p->event_id_param, names, &n);
	for (size_t i = 0; i < PROVIDER_MORE_HEADERS_MAX; i++)
		add_param(p->more_params[i], names, &n);
	return n;
}

const char *provider_header_kept(const struct provider *p, const char *name,
				 const char *value,
				 char marker[SIGNATURE_TOKEN_MARKER_MAX])
{
	if (p->profile.scheme->header_kept == NULL ||
	    strcmp(name, p->signature_param) != 0)
		return value;
	return p->profile.scheme->header_kept(value, marker);
}

/* Checks the signature the request's headers carry, as the profile's
 * scheme says; replay: a delivery the inbox kept, which never reads
 * without a secret to verify against. *missing: no signature came at all
 * (the inbox lets those go first). */
static enum provider_status verify_headers(const struct provider *p,
					   const struct request *req,
					   const char *body, size_t len,
					   time_t now, bool replay,
					   bool *missing, struct error *why)
{
	const char *reason = NULL;
	enum signature_status status;
	bool keyless = p->profile.scheme->keyless;

	if (p->ring == NULL && !keyless && replay)
		return provider_row_signature_outcome(
			SIGNATURE_MISSING, "no secret to verify a replay "
			"against (signature_scheme = none)", why);
	if (p->ring == NULL && !keyless)
		return PROVIDER_PAYMENTS; /* signature_scheme = none */
	if (p->profile.scheme->verify == NULL)
		return PROVIDER_PAYMENTS; /* in the body: the scheme's read */
	status = p->profile.scheme->verify(p, req, body, len, now, replay,
					   &reason);
	*missing = status == SIGNATURE_MISSING;
	return provider_row_signature_outcome(status, reason, why);
}

/* ---- the event ---- */

const char *provider_ignored_instead(const struct provider *p,
				     const char *event_type)
{
	for (size_t i = 0;
	     i < sizeof(ignored_instead) / sizeof(ignored_instead[0]); i++) {
		if (ignored_instead[i].provider == p->profile.id &&
		    strcmp(ignored_instead[i].event, event_type) == 0)
			return ignored_instead[i].instead;
	}
	return NULL;
}

/* provider_read, provider_read_replay and provider_read_trusted. */
static enum provider_status read_event(const struct provider *p,
				       const struct request *req,
				       struct payload_parser *parser,
				       const char *body, size_t len,
				       time_t now, enum provider_read_mode mode,
				       struct provider_batch *out,
				       struct error *why)
{
	struct json_object *root = NULL;
	enum provider_status status;

	out->count = 0;
	out->lifecycle_count = 0;
	out->notice_count = 0;
	out->event_type[0] = '\0';
	out->success_body = NULL;
	out->signature_missing = false;
	memset(&out->payments[0], 0, sizeof(out->payments[0]));
	/* The signature on the raw body first, before parsing it. */
	status = mode != PROVIDER_READ_TRUSTED ?
			 verify_headers(p, req, body, len, now,
					mode == PROVIDER_READ_REPLAY,
					&out->signature_missing, why) :
			 PROVIDER_PAYMENTS;
	if (status != PROVIDER_PAYMENTS)
		return status;
	/* A notification names what to fetch; what was fetched is read
	 * below. */
	if (mode != PROVIDER_READ_TRUSTED && p->profile.scheme->notice != NULL)
		return p->profile.scheme->notice(p, req, parser, body, len, out,
						 why);
	status = provider_row_field_outcome(
		payload_parse_json(parser, body, len, &root, why));
	if (status != PROVIDER_PAYMENTS)
		return status;
	if (p->profile.scheme->read != NULL) {
		status = p->profile.scheme->read(p, req, root, mode, out, why);
	} else {
		/* Lifecycle first: a standard body is a payment unless its
		 * type names a lifecycle kind. */
		status = provider_row_take_lifecycle(p, req, root, root, out,
						     why);
		if (status == PROVIDER_PAYMENTS)
			status = provider_row_classify(p, req, root, out, why);
		if (status == PROVIDER_PAYMENTS) {
			status = provider_row_take_payment(p, req, root, root,
							   &out->payments[0],
							   why);
			if (status == PROVIDER_PAYMENTS)
				out->count = 1;
		}
	}
	json_object_put(root);
	return status;
}

enum provider_status provider_read(const struct provider *p,
				   const struct request *req,
				   struct payload_parser *parser,
				   const char *body, size_t len, time_t now,
				   struct provider_batch *out,
				   struct error *why)
{
	return read_event(p, req, parser, body, len, now, PROVIDER_READ_DELIVERY, out,
			  why);
}

enum provider_status provider_read_replay(const struct provider *p,
					  const struct request *req,
					  struct payload_parser *parser,
					  const char *body, size_t len,
					  time_t received_at,
					  struct provider_batch *out,
					  struct error *why)
{
	return read_event(p, req, parser, body, len, received_at, PROVIDER_READ_REPLAY,
			  out, why);
}

enum provider_status provider_read_trusted(const struct provider *p,
					   const struct request *req,
					   struct payload_parser *parser,
					   const char *body, size_t len,
					   struct provider_batch *out,
					   struct error *why)
{
	return read_event(p, req, parser, body, len, time(NULL), PROVIDER_READ_TRUSTED,
			  out, why);
}

/* ---- the sending side: the same profile, written instead of read ---- */

int provider_sign(const struct provider_sign_input *in, const char *body,
		  size_t len, struct provider_headers *h, char **signed_body,
		  struct error *err)
{
	struct provider p;
	char *secrets[1];
	struct error inner;
	int rc = -1;

	h->count = 0;
	*signed_body = NULL;
	if ((unsigned)in->provider >= CONFIG_PROVIDER_COUNT)
		return error_set(err, "unknown provider");
	if (!profiles[in->provider].scheme->unsigned_deliveries &&
	    provider_row_need(in->secret, "a secret", err) != 0)
		return -1;
	if (body == NULL && len > 0)
		return error_set(err, "nothing to sign");
	/* A profile of its own with the one key, as provider_set_new makes
	 * them: the sender follows the receiver's description. */
	memset(&p, 0, sizeof(p));
	p.profile = profiles[in->provider];
	if (in->provider == CONFIG_PROVIDER_GENERIC &&
	    (in->cfg == NULL || in->cfg->generic.signature_header == NULL))
		return error_set(err, "generic: the generic_ keys are needed "
				 "(pass -c FILE)");
	if (p.profile.scheme->setup != NULL &&
	    p.profile.scheme->setup(&p, in->cfg, err) != 0)
		return -1;
	/* A keyless scheme's secret is its own (PayPal: the key's file). */
	if (!p.profile.scheme->keyless) {
		secrets[0] = (char *)in->secret;
		p.ring = signature_keyring_new(secrets, 1, p.profile.form,
					       &inner);
		if (p.ring == NULL)
			rc = error_set(err, "%s", inner.message);
	}
	if (p.profile.scheme->keyless || p.ring != NULL)
		rc = p.profile.scheme->sign(&p, in, body, len, h, signed_body,
					    err);
	signature_keyring_free(p.ring);
	if (p.state != NULL && p.profile.scheme->cleanup != NULL)
		p.profile.scheme->cleanup(&p);
	return rc;
}

/* ---- the providers' keys (their cross-key checks live with them) ---- */

int provider_check_config(const struct config *cfg, struct error *err)
{
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		if (!config_provider_enabled(cfg, p) || cfg->secrets[p].count > 0 ||
		    profiles[p].scheme->keyless)
			continue;
		if (p == CONFIG_PROVIDER_STANDARD) {
			if (cfg->signature_scheme == CONFIG_SIGNATURE_STANDARD)
				return error_set(err, "signature_scheme = "
						 "standard needs at least one "
						 "webhook_secret (or set "
						 "signature_scheme = none)");
			continue;
		}
		return error_set(err, "providers has %s: set %s_secret",
				 config_provider_name(p), config_provider_name(p));
	}
	/* Then each enabled profile's own keys, its scheme's to check. */
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		const struct provider_scheme *scheme = profiles[p].scheme;

		if (config_provider_enabled(cfg, p) &&
		    scheme->check_config != NULL &&
		    scheme->check_config(cfg, err) != 0)
			return -1;
	}
	return 0;
}
