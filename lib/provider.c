/* provider.c - the provider profiles (see provider.h). One table says, per
 * provider, which scheme signs its webhooks and where its fields are; the
 * code below only follows the table, so adding a provider that signs like
 * an existing one is one row.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "provider.h"
#include "signature.h"

enum scheme {
	SCHEME_STANDARD,    /* Standard Webhooks headers */
	SCHEME_STRIPE,      /* Stripe-Signature t=,v1= */
	SCHEME_PADDLE,      /* Paddle-Signature ts=;h1= */
	SCHEME_BODY_HEX,    /* hex HMAC of the body in one header */
	SCHEME_BODY_BASE64, /* base64 HMAC of the body in one header */
	SCHEME_URL_BODY,    /* base64 HMAC of the notification URL + body */
	SCHEME_TOKEN,       /* a static token in one header */
	SCHEME_ADYEN,       /* an HMAC per notification item, in the body */
	SCHEME_GENERIC,     /* as the generic_ keys say */
};

/* One provider's conventions. Paths are dotted JSON paths in the body;
 * params are CGI variable names of request headers. */
struct profile {
	enum config_provider id;
	enum scheme scheme;
	enum secret_form form;
	const char *signature_param;   /* the header carrying the signature */
	const char *signature_missing; /* reason when it is absent */
	/* The payment event: event_path (or the header event_param) equals
	 * payment_event, and status_path equals status_value when set. NULL
	 * event_path and event_param: every body is a payment. */
	const char *event_path;
	const char *event_param;
	const char *payment_event;
	const char *status_path, *status_value;
	/* The provider's event id: a body path or a header, or neither. */
	const char *event_id_path;
	const char *event_id_param;
	const char *id_path, *amount_path, *currency_path;
	enum payload_amount_form amount_form;
	bool id_integer; /* the id may be a JSON integer (Shopify orders) */
};

static const struct profile profiles[CONFIG_PROVIDER_COUNT] = {
	[CONFIG_PROVIDER_STANDARD] = {
		.id = CONFIG_PROVIDER_STANDARD, .scheme = SCHEME_STANDARD,
		.form = SECRET_WHSEC_BASE64,
		.event_id_param = "HTTP_WEBHOOK_ID",
		.id_path = "transaction_id", .amount_path = "amount",
		.currency_path = "currency",
	},
	[CONFIG_PROVIDER_STRIPE] = {
		.id = CONFIG_PROVIDER_STRIPE, .scheme = SCHEME_STRIPE,
		.form = SECRET_TEXT,
		.signature_param = "HTTP_STRIPE_SIGNATURE",
		.event_path = "type", .payment_event = "payment_intent.succeeded",
		.event_id_path = "id",
		.id_path = "data.object.id",
		.amount_path = "data.object.amount_received",
		.currency_path = "data.object.currency",
	},
	[CONFIG_PROVIDER_PADDLE] = {
		.id = CONFIG_PROVIDER_PADDLE, .scheme = SCHEME_PADDLE,
		.form = SECRET_TEXT,
		.signature_param = "HTTP_PADDLE_SIGNATURE",
		.event_path = "event_type",
		.payment_event = "transaction.completed",
		.event_id_path = "event_id",
		.id_path = "data.id",
		.amount_path = "data.details.totals.grand_total",
		.amount_form = PAYLOAD_AMOUNT_MINOR_STRING,
		.currency_path = "data.currency_code",
	},
	[CONFIG_PROVIDER_RAZORPAY] = {
		.id = CONFIG_PROVIDER_RAZORPAY, .scheme = SCHEME_BODY_HEX,
		.form = SECRET_TEXT,
		.signature_param = "HTTP_X_RAZORPAY_SIGNATURE",
		.signature_missing = "X-Razorpay-Signature header missing",
		.event_path = "event", .payment_event = "payment.captured",
		.event_id_param = "HTTP_X_RAZORPAY_EVENT_ID",
		.id_path = "payload.payment.entity.id",
		.amount_path = "payload.payment.entity.amount",
		.currency_path = "payload.payment.entity.currency",
	},
	[CONFIG_PROVIDER_KOMOJU] = {
		.id = CONFIG_PROVIDER_KOMOJU, .scheme = SCHEME_BODY_HEX,
		.form = SECRET_TEXT,
		.signature_param = "HTTP_X_KOMOJU_SIGNATURE",
		.signature_missing = "X-Komoju-Signature header missing",
		.event_path = "type", .payment_event = "payment.captured",
		.event_id_path = "id",
		.id_path = "data.id", .amount_path = "data.amount",
		.currency_path = "data.currency",
	},
	[CONFIG_PROVIDER_PAYJP] = {
		.id = CONFIG_PROVIDER_PAYJP, .scheme = SCHEME_TOKEN,
		.form = SECRET_TEXT,
		.signature_param = "HTTP_X_PAYJP_WEBHOOK_TOKEN",
		.signature_missing = "X-Payjp-Webhook-Token header missing",
		.event_path = "type", .payment_event = "charge.succeeded",
		.event_id_path = "id",
		.id_path = "data.id", .amount_path = "data.amount",
		.currency_path = "data.currency",
	},
	[CONFIG_PROVIDER_SQUARE] = {
		.id = CONFIG_PROVIDER_SQUARE, .scheme = SCHEME_URL_BODY,
		.form = SECRET_TEXT,
		.signature_param = "HTTP_X_SQUARE_HMACSHA256_SIGNATURE",
		.signature_missing =
			"x-square-hmacsha256-signature header missing",
		.event_path = "type", .payment_event = "payment.updated",
		.status_path = "data.object.payment.status",
		.status_value = "COMPLETED",
		.event_id_path = "event_id",
		.id_path = "data.id",
		.amount_path = "data.object.payment.amount_money.amount",
		.currency_path = "data.object.payment.amount_money.currency",
	},
	[CONFIG_PROVIDER_SHOPIFY] = {
		.id = CONFIG_PROVIDER_SHOPIFY, .scheme = SCHEME_BODY_BASE64,
		.form = SECRET_TEXT,
		.signature_param = "HTTP_X_SHOPIFY_HMAC_SHA256",
		.signature_missing = "X-Shopify-Hmac-Sha256 header missing",
		.event_param = "HTTP_X_SHOPIFY_TOPIC",
		.payment_event = "orders/paid",
		.status_path = "financial_status", .status_value = "paid",
		.event_id_param = "HTTP_X_SHOPIFY_EVENT_ID",
		.id_path = "id", .id_integer = true,
		.amount_path = "total_price",
		.amount_form = PAYLOAD_AMOUNT_DECIMAL,
		.currency_path = "currency",
	},
	[CONFIG_PROVIDER_ADYEN] = {
		.id = CONFIG_PROVIDER_ADYEN, .scheme = SCHEME_ADYEN,
		.form = SECRET_HEX,
		.event_path = "eventCode", .payment_event = "AUTHORISATION",
		.status_path = "success", .status_value = "true",
		.id_path = "pspReference", .amount_path = "amount.value",
		.currency_path = "amount.currency",
	},
	[CONFIG_PROVIDER_GENERIC] = {
		.id = CONFIG_PROVIDER_GENERIC, .scheme = SCHEME_GENERIC,
		.form = SECRET_TEXT, /* generic_secret_encoding decides */
	},
};

void provider_fields(enum config_provider provider,
		     struct provider_fields *out)
{
	const struct profile *row = &profiles[provider % CONFIG_PROVIDER_COUNT];

	memset(out, 0, sizeof(*out));
	if (row->scheme == SCHEME_GENERIC)
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

struct provider {
	struct profile profile;            /* generic: filled from config */
	const struct provider_set *set;
	struct signature_keyring *ring;    /* NULL: no signature checked */
	/* "HTTP_" + a header name of at most CONFIG_HEADER_NAME_MAX bytes */
	char generic_signature_param[sizeof("HTTP_") + CONFIG_HEADER_NAME_MAX];
	char generic_timestamp_param[sizeof("HTTP_") + CONFIG_HEADER_NAME_MAX];
	long tolerance_s;
	/* generic: generic_signed_payload, split once at set-up */
	struct config_template_part template[CONFIG_TEMPLATE_PARTS_MAX];
	size_t template_count;
};

struct provider_set {
	const struct config *cfg;
	struct payload_rules rules;
	struct provider providers[CONFIG_PROVIDER_COUNT];
	bool enabled[CONFIG_PROVIDER_COUNT];
};

static enum secret_form generic_form(enum config_encoding encoding)
{
	switch (encoding) {
	case CONFIG_ENCODING_HEX:
		return SECRET_HEX;
	case CONFIG_ENCODING_BASE64:
		return SECRET_BASE64;
	case CONFIG_ENCODING_TEXT:
		break;
	}
	return SECRET_TEXT;
}

static enum payload_amount_form generic_amount(enum config_amount_format f)
{
	switch (f) {
	case CONFIG_AMOUNT_MINOR_STRING:
		return PAYLOAD_AMOUNT_MINOR_STRING;
	case CONFIG_AMOUNT_DECIMAL:
		return PAYLOAD_AMOUNT_DECIMAL;
	case CONFIG_AMOUNT_INTEGER:
		break;
	}
	return PAYLOAD_AMOUNT_INTEGER;
}

/* The generic profile is a row written from the generic_ keys. */
static int generic_setup(struct provider *p, const struct config *cfg,
			 struct error *err)
{
	const struct config_generic *g = &cfg->generic;
	struct profile *row = &p->profile;

	row->form = generic_form(g->secret_encoding);
	if (request_header_param(g->signature_header,
				 p->generic_signature_param,
				 sizeof(p->generic_signature_param)) != 0 ||
	    (g->timestamp_header != NULL &&
	     request_header_param(g->timestamp_header,
				  p->generic_timestamp_param,
				  sizeof(p->generic_timestamp_param)) != 0))
		return error_set(err, "generic: a header name is too long");
	if (config_generic_template(g, p->template, &p->template_count,
				    err) != 0)
		return -1;
	row->signature_param = p->generic_signature_param;
	row->signature_missing = "signature header missing";
	row->event_path = g->event_path;
	row->event_id_path = g->event_id_path;
	row->id_path = g->transaction_id_path;
	row->amount_path = g->amount_path;
	row->amount_form = generic_amount(g->amount_format);
	row->currency_path = g->currency_path;
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
		if (i == CONFIG_PROVIDER_GENERIC &&
		    generic_setup(p, cfg, err) != 0)
			goto fail;
		/* Standard under signature_scheme = none checks nothing. */
		if (i == CONFIG_PROVIDER_STANDARD &&
		    cfg->signature_scheme == CONFIG_SIGNATURE_NONE)
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
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++)
		signature_keyring_free(set->providers[i].ring);
	free(set);
}

const struct provider *provider_route(const struct provider_set *set,
				      const struct request *req)
{
	char segment[REQUEST_SEGMENT_MAX + 1];

	request_profile_segment(req, segment);
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++) {
		if (strcmp(segment, config_provider_name(i)) == 0)
			return set->enabled[i] ? &set->providers[i] : NULL;
	}
	return set->enabled[CONFIG_PROVIDER_STANDARD] ?
		       &set->providers[CONFIG_PROVIDER_STANDARD] : NULL;
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

static enum provider_status signature_outcome(enum signature_status status,
					      const char *reason,
					      struct error *why)
{
	if (status == SIGNATURE_VALID)
		return PROVIDER_PAYMENTS;
	error_set(why, "%s", reason != NULL ? reason : "bad signature");
	return status == SIGNATURE_ERROR ? PROVIDER_ERROR
					 : PROVIDER_UNAUTHORIZED;
}

/* The generic profile's signed text: the parts of generic_signed_payload
 * with {body}, {timestamp} and {url} filled in (nothing is copied). */
static enum signature_status generic_verify(const struct provider *p,
					    const struct request *req,
					    const char *body, size_t len,
					    time_t now, const char **reason)
{
	const struct config_generic *g = &p->set->cfg->generic;
	struct signature_part parts[CONFIG_TEMPLATE_PARTS_MAX];
	const char *ts = NULL;
	uint64_t ts_value;
	bool body_signed = false;

	if (g->timestamp_header != NULL) {
		ts = request_param(req, p->generic_timestamp_param);
		if (ts == NULL || ts[0] == '\0') {
			*reason = "timestamp header missing";
			return SIGNATURE_MISSING;
		}
		if (signature_timestamp_parse(ts, strlen(ts), &ts_value) != 0) {
			*reason = "timestamp header is not Unix seconds";
			return SIGNATURE_MALFORMED;
		}
		if ((ts_value > (uint64_t)now ? ts_value - (uint64_t)now
					      : (uint64_t)now - ts_value) >
		    (uint64_t)p->tolerance_s) {
			*reason = "timestamp outside the tolerance";
			return SIGNATURE_STALE;
		}
	}
	for (size_t i = 0; i < p->template_count; i++) {
		const struct config_template_part *t = &p->template[i];

		switch (t->kind) {
		case CONFIG_TEMPLATE_BODY:
			parts[i] = (struct signature_part){ body, len };
			body_signed = true;
			break;
		case CONFIG_TEMPLATE_TIMESTAMP:
			parts[i] = (struct signature_part){
				ts != NULL ? ts : "", ts != NULL ? strlen(ts) : 0 };
			break;
		case CONFIG_TEMPLATE_URL:
			parts[i] = (struct signature_part){ g->url,
							    strlen(g->url) };
			break;
		case CONFIG_TEMPLATE_LITERAL:
		default:
			parts[i] = (struct signature_part){
				g->signed_payload + t->offset, t->len };
			break;
		}
	}
	/* config_generic_template refuses such a template; should one get
	 * here anyway, a signature over less than the body accepts nothing. */
	if (!body_signed) {
		*reason = "generic_signed_payload does not cover the body";
		return SIGNATURE_ERROR;
	}
	return signature_verify_digest(
		p->ring, request_param(req, p->profile.signature_param),
		g->signature_prefix,
		g->signature_encoding == CONFIG_ENCODING_BASE64 ?
			SIGNATURE_BASE64 : SIGNATURE_HEX,
		parts, p->template_count, p->profile.signature_missing, reason);
}

/* Checks a signature carried in headers. */
static enum provider_status verify_headers(const struct provider *p,
					   const struct request *req,
					   const char *body, size_t len,
					   time_t now, struct error *why)
{
	const struct profile *row = &p->profile;
	const char *header;
	const char *reason = NULL;
	enum signature_status status;
	struct signature_part parts[2] = { { body, len }, { NULL, 0 } };

	if (p->ring == NULL)
		return PROVIDER_PAYMENTS; /* signature_scheme = none */
	header = row->signature_param != NULL ?
			 request_param(req, row->signature_param) : NULL;
	switch (row->scheme) {
	case SCHEME_STANDARD:
		status = signature_verify_standard(
			p->ring, request_param(req, "HTTP_WEBHOOK_ID"),
			request_param(req, "HTTP_WEBHOOK_TIMESTAMP"),
			request_param(req, "HTTP_WEBHOOK_SIGNATURE"), body, len,
			now, p->tolerance_s, &reason);
		break;
	case SCHEME_STRIPE:
		status = signature_verify_stripe(p->ring, header, body, len, now,
						 p->tolerance_s, &reason);
		break;
	case SCHEME_PADDLE:
		status = signature_verify_paddle(p->ring, header, body, len, now,
						 p->tolerance_s, &reason);
		break;
	case SCHEME_BODY_HEX:
	case SCHEME_BODY_BASE64:
		status = signature_verify_digest(
			p->ring, header, NULL,
			row->scheme == SCHEME_BODY_HEX ? SIGNATURE_HEX
						       : SIGNATURE_BASE64,
			parts, 1, row->signature_missing, &reason);
		break;
	case SCHEME_URL_BODY: {
		const char *url = p->set->cfg->square_notification_url;

		parts[0] = (struct signature_part){ url, strlen(url) };
		parts[1] = (struct signature_part){ body, len };
		status = signature_verify_digest(p->ring, header, NULL,
						 SIGNATURE_BASE64, parts, 2,
						 row->signature_missing,
						 &reason);
		break;
	}
	case SCHEME_TOKEN:
		status = signature_verify_token(p->ring, header,
						row->signature_missing, &reason);
		break;
	case SCHEME_GENERIC:
		status = generic_verify(p, req, body, len, now, &reason);
		break;
	case SCHEME_ADYEN:
	default:
		return PROVIDER_PAYMENTS; /* in the body: checked per item */
	}
	return signature_outcome(status, reason, why);
}

/* ---- the event and its fields ---- */

static enum provider_status field_outcome(enum payload_status status)
{
	switch (status) {
	case PAYLOAD_VALID:
		return PROVIDER_PAYMENTS;
	case PAYLOAD_INVALID:
		return PROVIDER_INVALID;
	case PAYLOAD_ERROR:
	default:
		return PROVIDER_ERROR;
	}
}

/* Copies a JSON string's text (or "-") into the batch's event type. */
static void note_event_type(struct provider_batch *out, const char *text,
			    size_t len)
{
	if (len > PROVIDER_EVENT_TYPE_MAX)
		len = PROVIDER_EVENT_TYPE_MAX;
	memcpy(out->event_type, text, len);
	out->event_type[len] = '\0';
}

/* Whether the event type is one of the white-space separated
 * generic_event_values. */
static bool generic_is_payment(const char *values, struct json_object *type)
{
	const char *text = json_object_get_string(type);
	size_t text_len = (size_t)json_object_get_string_len(type);

	while (*values != '\0') {
		size_t n;

		values += strspn(values, " \t");
		n = strcspn(values, " \t");
		if (n > 0 && n == text_len && memcmp(values, text, n) == 0)
			return true;
		values += n;
	}
	return false;
}

/* Whether the event in node (a body or an Adyen item) is the profile's
 * payment event. Returns PROVIDER_PAYMENTS, PROVIDER_IGNORED, or
 * PROVIDER_INVALID when the event type is missing or not a string. */
static enum provider_status classify(const struct provider *p,
				     const struct request *req,
				     struct json_object *node,
				     struct provider_batch *out,
				     struct error *why)
{
	const struct profile *row = &p->profile;
	const struct config_generic *g = &p->set->cfg->generic;
	struct json_object *type, *status;
	bool payment;

	if (row->event_param != NULL) {
		/* A header the provider does not sign (Shopify's topic) only
		 * narrows: the signed status_path below must agree, so a
		 * signed unpaid order resent with another topic is ignored. */
		const char *topic = request_param(req, row->event_param);

		if (topic == NULL || topic[0] == '\0') {
			error_set(why, "event topic header missing");
			return PROVIDER_INVALID;
		}
		note_event_type(out, topic, strlen(topic));
		payment = strcmp(topic, row->payment_event) == 0;
	} else if (row->event_path == NULL) {
		return PROVIDER_PAYMENTS;
	} else {
		type = payload_lookup(node, row->event_path);
		if (!json_object_is_type(type, json_type_string)) {
			error_set(why, "%s: must be a string naming the event",
				  row->event_path);
			return PROVIDER_INVALID;
		}
		note_event_type(out, json_object_get_string(type),
				(size_t)json_object_get_string_len(type));
		payment = row->scheme == SCHEME_GENERIC ?
				  generic_is_payment(g->event_values, type) :
				  payload_string_is(type, row->payment_event);
	}
	if (payment && row->status_path != NULL) {
		status = payload_lookup(node, row->status_path);
		payment = payload_string_is(status, row->status_value);
	}
	return payment ? PROVIDER_PAYMENTS : PROVIDER_IGNORED;
}

/* The event id of a payment: from a header or a body path. */
static enum payload_status take_event_id(const struct profile *row,
					 const struct request *req,
					 struct json_object *root,
					 struct payment *out, struct error *why)
{
	struct json_object *value;

	if (row->event_id_param != NULL) {
		const char *text = request_param(req, row->event_id_param);

		return payload_set_event_id(out, text,
					    text != NULL ? strlen(text) : 0,
					    "event id header", why);
	}
	if (row->event_id_path == NULL)
		return PAYLOAD_VALID;
	value = payload_lookup(root, row->event_id_path);
	if (value == NULL)
		return PAYLOAD_VALID;
	if (!json_object_is_type(value, json_type_string)) {
		error_set(why, "%s: must be a string", row->event_id_path);
		return PAYLOAD_INVALID;
	}
	return payload_set_event_id(out, json_object_get_string(value),
				    (size_t)json_object_get_string_len(value),
				    row->event_id_path, why);
}

/* Each Adyen item is one lifecycle event at most: room for every item. */
_Static_assert(PROVIDER_LIFECYCLE_MAX >= PROVIDER_PAYMENTS_MAX,
	       "an Adyen batch of lifecycle items must fit the batch");

/* Reads node's refunds, disputes and cancellations into the batch. Returns
 * PROVIDER_IGNORED when node announces some (they wait in out->lifecycle),
 * PROVIDER_PAYMENTS when it announces none (classify it next), or
 * PROVIDER_INVALID / PROVIDER_ERROR. */
static enum provider_status take_lifecycle(const struct provider *p,
					   const struct request *req,
					   struct json_object *root,
					   struct json_object *node,
					   struct provider_batch *out,
					   struct error *why)
{
	const struct profile *row = &p->profile;
	struct lifecycle_event *first = &out->lifecycle[out->lifecycle_count];
	const char *type;
	size_t n = 0;
	enum provider_status status;

	status = field_outcome(provider_lifecycle_read(
		row->id, node, &p->set->rules, first,
		PROVIDER_LIFECYCLE_MAX - out->lifecycle_count, &n, why));
	if (status != PROVIDER_PAYMENTS || n == 0)
		return status;
	for (size_t i = 0; i < n; i++) {
		first[i].link.provider = provider_name(p);
		status = field_outcome(take_event_id(row, req, root,
						     &first[i].link, why));
		if (status != PROVIDER_PAYMENTS)
			return status;
	}
	out->lifecycle_count += n;
	/* For the log: the provider's event type, else the kind. */
	type = row->event_path != NULL ?
		       json_object_get_string(payload_lookup(node,
							     row->event_path)) :
		       lifecycle_kind_name(first[0].kind);
	note_event_type(out, type, strlen(type));
	return PROVIDER_IGNORED;
}

/* Fills one payment from node (the body, or an Adyen item). */
static enum provider_status take_payment(const struct provider *p,
					 const struct request *req,
					 struct json_object *root,
					 struct json_object *node,
					 struct payment *out, struct error *why)
{
	const struct profile *row = &p->profile;
	const struct payload_rules *rules = &p->set->rules;
	enum payload_status status;

	memset(out, 0, sizeof(*out));
	out->provider = provider_name(p);
	status = payload_take_transaction_id(node, row->id_path,
					     row->id_integer, rules, out, why);
	if (status == PAYLOAD_VALID)
		status = payload_take_money(node, row->amount_path,
					    row->amount_form,
					    row->currency_path, rules, out,
					    why);
	if (status == PAYLOAD_VALID)
		status = take_event_id(row, req, root, out, why);
	return field_outcome(status);
}

/* ---- Adyen: a batch of items, each signed on its own ---- */

/* A JSON string's text, or "" for anything else (Adyen's signing string
 * renders a missing field as empty). */
static struct signature_part text_part(struct json_object *node,
				       const char *path)
{
	struct json_object *value = payload_lookup(node, path);

	if (!json_object_is_type(value, json_type_string))
		return (struct signature_part){ "", 0 };
	return (struct signature_part){
		json_object_get_string(value),
		(size_t)json_object_get_string_len(value)
	};
}

/* Checks one item's additionalData.hmacSignature over Adyen's string:
 * pspReference:originalReference:merchantAccountCode:merchantReference:
 * amount.value:amount.currency:eventCode:success. */
static enum signature_status adyen_item_verify(const struct provider *p,
					       struct json_object *item,
					       const char **reason)
{
	struct json_object *value = payload_lookup(item, "amount.value");
	struct json_object *sig =
		payload_lookup(item, "additionalData.hmacSignature");
	char amount[24] = "";
	static const char *const fields[] = {
		"pspReference", "originalReference", "merchantAccountCode",
		"merchantReference", NULL, "amount.currency", "eventCode",
		"success",
	};
	struct signature_part parts[2 * 8 - 1];
	size_t count = 0;

	if (json_object_is_type(value, json_type_int))
		snprintf(amount, sizeof(amount), "%lld",
			 (long long)json_object_get_int64(value));
	for (size_t i = 0; i < 8; i++) {
		if (i > 0)
			parts[count++] = (struct signature_part){ ":", 1 };
		parts[count++] = fields[i] != NULL ?
			text_part(item, fields[i]) :
			(struct signature_part){ amount, strlen(amount) };
	}
	return signature_verify_digest(
		p->ring,
		json_object_is_type(sig, json_type_string) ?
			json_object_get_string(sig) : NULL,
		NULL, SIGNATURE_BASE64, parts, count,
		"additionalData.hmacSignature missing", reason);
}

static enum provider_status read_adyen(const struct provider *p,
				       const struct request *req,
				       struct json_object *root,
				       struct provider_batch *out,
				       struct error *why)
{
	struct json_object *items = payload_lookup(root, "notificationItems");
	size_t n;
	enum provider_status status;

	if (!json_object_is_type(items, json_type_array) ||
	    json_object_array_length(items) == 0) {
		error_set(why, "notificationItems: must be a non-empty array");
		return PROVIDER_INVALID;
	}
	n = json_object_array_length(items);
	if (n > PROVIDER_PAYMENTS_MAX) {
		error_set(why, "notificationItems: more than %d items",
			  PROVIDER_PAYMENTS_MAX);
		return PROVIDER_INVALID;
	}
	/* Every item is signed before any is recorded: one forged item
	 * makes the whole request suspect. */
	for (size_t i = 0; i < n; i++) {
		struct json_object *item = payload_lookup(
			json_object_array_get_idx(items, i),
			"NotificationRequestItem");
		const char *reason = NULL;
		enum signature_status checked;

		if (!json_object_is_type(item, json_type_object)) {
			error_set(why, "notificationItems: each must hold a "
				       "NotificationRequestItem object");
			return PROVIDER_INVALID;
		}
		checked = adyen_item_verify(p, item, &reason);
		status = signature_outcome(checked, reason, why);
		if (status != PROVIDER_PAYMENTS)
			return status;
	}
	out->success_body = "[accepted]";
	for (size_t i = 0; i < n; i++) {
		struct json_object *item = payload_lookup(
			json_object_array_get_idx(items, i),
			"NotificationRequestItem");

		status = take_lifecycle(p, req, root, item, out, why);
		if (status == PROVIDER_PAYMENTS)
			status = classify(p, req, item, out, why);
		if (status == PROVIDER_IGNORED)
			continue;
		if (status != PROVIDER_PAYMENTS)
			return status;
		status = take_payment(p, req, root, item,
				      &out->payments[out->count], why);
		if (status != PROVIDER_PAYMENTS) {
			/* Name the item's id, if it was valid, in the answer. */
			if (out->count > 0)
				out->payments[0] = out->payments[out->count];
			return status;
		}
		out->count++;
	}
	return out->count > 0 ? PROVIDER_PAYMENTS : PROVIDER_IGNORED;
}

enum provider_status provider_read(const struct provider *p,
				   const struct request *req,
				   struct payload_parser *parser,
				   const char *body, size_t len, time_t now,
				   struct provider_batch *out,
				   struct error *why)
{
	struct json_object *root = NULL;
	enum provider_status status;

	out->count = 0;
	out->lifecycle_count = 0;
	out->event_type[0] = '\0';
	out->success_body = NULL;
	memset(&out->payments[0], 0, sizeof(out->payments[0]));
	/* The signature on the raw body first, before parsing it. */
	status = verify_headers(p, req, body, len, now, why);
	if (status != PROVIDER_PAYMENTS)
		return status;
	status = field_outcome(payload_parse_json(parser, body, len, &root, why));
	if (status != PROVIDER_PAYMENTS)
		return status;
	if (p->profile.scheme == SCHEME_ADYEN) {
		status = read_adyen(p, req, root, out, why);
	} else {
		/* Lifecycle first: a standard body is a payment unless its
		 * type names a lifecycle kind. */
		status = take_lifecycle(p, req, root, root, out, why);
		if (status == PROVIDER_PAYMENTS)
			status = classify(p, req, root, out, why);
		if (status == PROVIDER_PAYMENTS) {
			status = take_payment(p, req, root, root,
					      &out->payments[0], why);
			if (status == PROVIDER_PAYMENTS)
				out->count = 1;
		}
	}
	json_object_put(root);
	return status;
}
