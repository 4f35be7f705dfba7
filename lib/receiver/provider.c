/* provider.c - the provider profiles (see provider.h). One table says, per
 * provider, which scheme signs its webhooks and where its fields are; the
 * code below only follows the table, so adding a provider that signs like
 * an existing one is one row.
 */
#include "config.h"

#include <limits.h>
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

/* One provider's conventions: the one description of its wire format that
 * both the receiving side (provider_read) and the sending side
 * (provider_sign) follow. Paths are dotted JSON paths in the body; headers
 * are HTTP header names as the provider writes them. */
struct profile {
	enum config_provider id;
	enum scheme scheme;
	enum secret_form form;
	const char *signature_header;  /* the header carrying the signature */
	const char *timestamp_header;  /* generic: the signed timestamp */
	/* The payment event: event_path (or the header event_header) equals
	 * payment_event, and status_path equals status_value when set. NULL
	 * event_path and event_header: every body is a payment. */
	const char *event_path;
	const char *event_header;
	const char *payment_event;
	const char *status_path, *status_value;
	/* The provider's event id: a body path or a header, or neither. */
	const char *event_id_path;
	const char *event_id_header;
	const char *id_path, *amount_path, *currency_path;
	enum payload_amount_form amount_form;
	bool id_integer; /* the id may be a JSON integer (Shopify orders) */
};

static const struct profile profiles[CONFIG_PROVIDER_COUNT] = {
	[CONFIG_PROVIDER_STANDARD] = {
		.id = CONFIG_PROVIDER_STANDARD, .scheme = SCHEME_STANDARD,
		.form = SECRET_WHSEC_BASE64,
		.event_id_header = "webhook-id",
		.id_path = "transaction_id", .amount_path = "amount",
		.currency_path = "currency",
	},
	[CONFIG_PROVIDER_STRIPE] = {
		.id = CONFIG_PROVIDER_STRIPE, .scheme = SCHEME_STRIPE,
		.form = SECRET_TEXT,
		.signature_header = "Stripe-Signature",
		.event_path = "type", .payment_event = "payment_intent.succeeded",
		.event_id_path = "id",
		.id_path = "data.object.id",
		.amount_path = "data.object.amount_received",
		.currency_path = "data.object.currency",
	},
	[CONFIG_PROVIDER_PADDLE] = {
		.id = CONFIG_PROVIDER_PADDLE, .scheme = SCHEME_PADDLE,
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
		.id = CONFIG_PROVIDER_RAZORPAY, .scheme = SCHEME_BODY_HEX,
		.form = SECRET_TEXT,
		.signature_header = "X-Razorpay-Signature",
		.event_path = "event", .payment_event = "payment.captured",
		.event_id_header = "X-Razorpay-Event-Id",
		.id_path = "payload.payment.entity.id",
		.amount_path = "payload.payment.entity.amount",
		.currency_path = "payload.payment.entity.currency",
	},
	[CONFIG_PROVIDER_KOMOJU] = {
		.id = CONFIG_PROVIDER_KOMOJU, .scheme = SCHEME_BODY_HEX,
		.form = SECRET_TEXT,
		.signature_header = "X-Komoju-Signature",
		.event_path = "type", .payment_event = "payment.captured",
		.event_id_path = "id",
		.id_path = "data.id", .amount_path = "data.amount",
		.currency_path = "data.currency",
	},
	[CONFIG_PROVIDER_PAYJP] = {
		.id = CONFIG_PROVIDER_PAYJP, .scheme = SCHEME_TOKEN,
		.form = SECRET_TEXT,
		.signature_header = "X-Payjp-Webhook-Token",
		.event_path = "type", .payment_event = "charge.succeeded",
		.event_id_path = "id",
		.id_path = "data.id", .amount_path = "data.amount",
		.currency_path = "data.currency",
	},
	[CONFIG_PROVIDER_SQUARE] = {
		.id = CONFIG_PROVIDER_SQUARE, .scheme = SCHEME_URL_BODY,
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
		.id = CONFIG_PROVIDER_SHOPIFY, .scheme = SCHEME_BODY_BASE64,
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

/* "HTTP_" + a header name of at most CONFIG_HEADER_NAME_MAX bytes */
#define PARAM_MAX (sizeof("HTTP_") + CONFIG_HEADER_NAME_MAX)

struct provider {
	struct profile profile;            /* generic: filled from config */
	const struct provider_set *set;
	struct signature_keyring *ring;    /* NULL: no signature checked */
	/* The CGI names of the profile's headers ("" for none), made from its
	 * header names once, and the reason for a missing signature. */
	char signature_param[PARAM_MAX], timestamp_param[PARAM_MAX];
	char event_param[PARAM_MAX], event_id_param[PARAM_MAX];
	char signature_missing[CONFIG_HEADER_NAME_MAX + sizeof(" header missing")];
	long tolerance_s;
	/* generic: generic_signed_payload, split once at set-up */
	struct provider_template_part template[PROVIDER_TEMPLATE_PARTS_MAX];
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
	if (provider_generic_template(g, p->template, &p->template_count,
				    err) != 0)
		return -1;
	row->signature_header = g->signature_header;
	row->timestamp_header = g->timestamp_header;
	row->event_path = g->event_path;
	row->event_id_path = g->event_id_path;
	row->id_path = g->transaction_id_path;
	row->amount_path = g->amount_path;
	row->amount_form = generic_amount(g->amount_format);
	row->currency_path = g->currency_path;
	return 0;
}

/* One header's CGI name into param, or "" when the profile has none. */
static int header_param(const char *header, char *param, struct error *err)
{
	param[0] = '\0';
	if (header != NULL &&
	    request_header_param(header, param, PARAM_MAX) != 0)
		return error_set(err, "header name %.64s is too long", header);
	return 0;
}

/* Fills p's CGI names from its profile's header names. Returns 0, or -1
 * with err set (a name too long: config_load bounds the generic ones). */
static int header_params(struct provider *p, struct error *err)
{
	const struct profile *row = &p->profile;

	if (header_param(row->signature_header, p->signature_param, err) != 0 ||
	    header_param(row->timestamp_header, p->timestamp_param, err) != 0 ||
	    header_param(row->event_header, p->event_param, err) != 0 ||
	    header_param(row->event_id_header, p->event_id_param, err) != 0)
		return -1;
	snprintf(p->signature_missing, sizeof(p->signature_missing),
		 "%s header missing",
		 row->signature_header != NULL ? row->signature_header
					       : "signature");
	return 0;
}

/* The value of the header whose CGI name is param, or NULL when the request
 * has none or the profile names no such header. */
static const char *header_value(const struct request *req, const char *param)
{
	return param[0] != '\0' ? request_param(req, param) : NULL;
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
		if ((i == CONFIG_PROVIDER_GENERIC &&
		     generic_setup(p, cfg, err) != 0) ||
		    header_params(p, err) != 0)
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

const struct provider *provider_enabled(const struct provider_set *set,
					enum config_provider id)
{
	return (unsigned)id < CONFIG_PROVIDER_COUNT && set->enabled[id] ?
		       &set->providers[id] : NULL;
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

/* The generic profile's signed text as parts: generic_signed_payload with
 * {body}, {timestamp} (ts) and {url} filled in, nothing copied. parts holds
 * PROVIDER_TEMPLATE_PARTS_MAX. Returns whether the body is among them. */
static bool generic_parts(const struct provider *p,
			  const struct config_generic *g, const char *ts,
			  const char *url, const char *body, size_t len,
			  struct signature_part *parts)
{
	const char *text = g->signed_payload;
	bool body_signed = false;

	for (size_t i = 0; i < p->template_count; i++) {
		const struct provider_template_part *t = &p->template[i];

		switch (t->kind) {
		case PROVIDER_TEMPLATE_BODY:
			parts[i] = (struct signature_part){ body, len };
			body_signed = true;
			break;
		case PROVIDER_TEMPLATE_TIMESTAMP:
			parts[i] = (struct signature_part){
				ts != NULL ? ts : "", ts != NULL ? strlen(ts) : 0 };
			break;
		case PROVIDER_TEMPLATE_URL:
			parts[i] = (struct signature_part){
				url != NULL ? url : "", url != NULL ? strlen(url) : 0 };
			break;
		case PROVIDER_TEMPLATE_LITERAL:
		default:
			parts[i] = (struct signature_part){ text + t->offset,
							    t->len };
			break;
		}
	}
	return body_signed;
}

/* The generic profile's signed text: the parts of generic_signed_payload
 * with {body}, {timestamp} and {url} filled in (nothing is copied). */
static enum signature_status generic_verify(const struct provider *p,
					    const struct request *req,
					    const char *body, size_t len,
					    time_t now, const char **reason)
{
	const struct config_generic *g = &p->set->cfg->generic;
	struct signature_part parts[PROVIDER_TEMPLATE_PARTS_MAX];
	const char *ts = NULL;
	uint64_t ts_value;

	if (g->timestamp_header != NULL) {
		ts = header_value(req, p->timestamp_param);
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
	/* provider_generic_template refuses such a template; should one get
	 * here anyway, a signature over less than the body accepts nothing. */
	if (!generic_parts(p, g, ts, g->url, body, len, parts)) {
		*reason = "generic_signed_payload does not cover the body";
		return SIGNATURE_ERROR;
	}
	return signature_verify_digest(
		p->ring, header_value(req, p->signature_param),
		g->signature_prefix,
		g->signature_encoding == CONFIG_ENCODING_BASE64 ?
			SIGNATURE_BASE64 : SIGNATURE_HEX,
		parts, p->template_count, p->signature_missing, reason);
}

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

	if (p->profile.scheme == SCHEME_STANDARD) {
		add_param("HTTP_WEBHOOK_ID", names, &n);
		add_param("HTTP_WEBHOOK_TIMESTAMP", names, &n);
		add_param("HTTP_WEBHOOK_SIGNATURE", names, &n);
	}
	add_param(p->signature_param, names, &n);
	add_param(p->timestamp_param, names, &n);
	add_param(p->event_param, names, &n);
	add_param(p->event_id_param, names, &n);
	return n;
}

const char *provider_header_kept(const struct provider *p, const char *name,
				 const char *value,
				 char marker[SIGNATURE_TOKEN_MARKER_MAX])
{
	if (p->profile.scheme != SCHEME_TOKEN ||
	    strcmp(name, p->signature_param) != 0)
		return value;
	/* The header is the secret itself (PAY.JP): its marker only. */
	return signature_token_marker(value, marker) == 0 ? marker : NULL;
}

/* Checks a signature carried in headers; replay: of a delivery the inbox
 * kept, which never records without a secret to verify against and holds
 * a token that is the secret only as its marker. */
static enum provider_status verify_headers(const struct provider *p,
					   const struct request *req,
					   const char *body, size_t len,
					   time_t now, bool replay,
					   bool *missing, struct error *why)
{
	const struct profile *row = &p->profile;
	const char *header;
	const char *reason = NULL;
	enum signature_status status;
	struct signature_part parts[2] = { { body, len }, { NULL, 0 } };

	if (p->ring == NULL && replay)
		return signature_outcome(SIGNATURE_MISSING, "no secret to verify "
					 "a replay against (signature_scheme "
					 "= none)", why);
	if (p->ring == NULL)
		return PROVIDER_PAYMENTS; /* signature_scheme = none */
	header = header_value(req, p->signature_param);
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
			parts, 1, p->signature_missing, &reason);
		break;
	case SCHEME_URL_BODY: {
		const char *url = p->set->cfg->square_notification_url;

		parts[0] = (struct signature_part){ url, strlen(url) };
		parts[1] = (struct signature_part){ body, len };
		status = signature_verify_digest(p->ring, header, NULL,
						 SIGNATURE_BASE64, parts, 2,
						 p->signature_missing,
						 &reason);
		break;
	}
	case SCHEME_TOKEN:
		status = replay ? signature_verify_token_marker(
					  p->ring, header, p->signature_missing,
					  &reason)
				: signature_verify_token(p->ring, header,
							 p->signature_missing,
							 &reason);
		break;
	case SCHEME_GENERIC:
		status = generic_verify(p, req, body, len, now, &reason);
		break;
	case SCHEME_ADYEN:
	default:
		return PROVIDER_PAYMENTS; /* in the body: checked per item */
	}
	*missing = status == SIGNATURE_MISSING;
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

	if (row->event_header != NULL) {
		/* A header the provider does not sign (Shopify's topic) only
		 * narrows: the signed status_path below must agree, so a
		 * signed unpaid order resent with another topic is ignored. */
		const char *topic = header_value(req, p->event_param);

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
static enum payload_status take_event_id(const struct provider *p,
					 const struct request *req,
					 struct json_object *root,
					 struct payment *out, struct error *why)
{
	const struct profile *row = &p->profile;
	struct json_object *value;

	if (row->event_id_header != NULL) {
		const char *text = header_value(req, p->event_id_param);

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
		status = field_outcome(take_event_id(p, req, root,
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
		status = take_event_id(p, req, root, out, why);
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

/* Adyen's signing string of one item as parts (amount holds 24 bytes for
 * its value's text, parts ADYEN_PARTS): pspReference:originalReference:
 * merchantAccountCode:merchantReference:amount.value:amount.currency:
 * eventCode:success. Returns the number of parts. */
#define ADYEN_FIELDS 8
#define ADYEN_PARTS (2 * ADYEN_FIELDS - 1)
static size_t adyen_parts(struct json_object *item, char amount[24],
			  struct signature_part parts[ADYEN_PARTS])
{
	struct json_object *value = payload_lookup(item, "amount.value");
	static const char *const fields[ADYEN_FIELDS] = {
		"pspReference", "originalReference", "merchantAccountCode",
		"merchantReference", NULL, "amount.currency", "eventCode",
		"success",
	};
	size_t count = 0;

	amount[0] = '\0';
	if (json_object_is_type(value, json_type_int))
		snprintf(amount, 24, "%lld",
			 (long long)json_object_get_int64(value));
	for (size_t i = 0; i < ADYEN_FIELDS; i++) {
		if (i > 0)
			parts[count++] = (struct signature_part){ ":", 1 };
		parts[count++] = fields[i] != NULL ?
			text_part(item, fields[i]) :
			(struct signature_part){ amount, strlen(amount) };
	}
	return count;
}

/* Checks one item's additionalData.hmacSignature over its signing string. */
static enum signature_status adyen_item_verify(const struct provider *p,
					       struct json_object *item,
					       const char **reason)
{
	struct json_object *sig =
		payload_lookup(item, "additionalData.hmacSignature");
	char amount[24];
	struct signature_part parts[ADYEN_PARTS];
	size_t count = adyen_parts(item, amount, parts);

	return signature_verify_digest(
		p->ring,
		json_object_is_type(sig, json_type_string) ?
			json_object_get_string(sig) : NULL,
		NULL, SIGNATURE_BASE64, parts, count,
		"additionalData.hmacSignature missing", reason);
}

/* Gives the count lifecycle events read from item the digest of its
 * signed fields (its signing string): Adyen signs only those, so an item
 * resent with other unsigned fields (a later eventDate, another
 * modification.action) is known as the same item. Returns 0, or -1 with
 * why set when libcrypto fails. */
static int adyen_sign_lifecycle(struct json_object *item,
				struct lifecycle_event *events, size_t count,
				struct error *why)
{
	char amount[24];
	struct signature_part parts[ADYEN_PARTS];
	size_t n = adyen_parts(item, amount, parts);
	unsigned char digest[SIGNATURE_MAC_LEN];

	_Static_assert(SIGNATURE_MAC_LEN == LIFECYCLE_DIGEST_LEN,
		       "a lifecycle digest is a SHA-256");
	if (count == 0)
		return 0;
	if (signature_parts_sha256(parts, n, digest) != 0)
		return error_set(why, "SHA-256 of an Adyen item failed");
	for (size_t i = 0; i < count; i++) {
		events[i].has_signed_digest = true;
		memcpy(events[i].signed_digest, digest, sizeof(digest));
	}
	return 0;
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

		size_t before = out->lifecycle_count;

		status = take_lifecycle(p, req, root, item, out, why);
		if (status == PROVIDER_IGNORED &&
		    adyen_sign_lifecycle(item, &out->lifecycle[before],
					 out->lifecycle_count - before,
					 why) != 0)
			return PROVIDER_ERROR;
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

/* How read_event takes a body: a delivery (its signature checked), a
 * kept delivery replayed (checked as verify_headers says), or one payhook
 * fetched itself (vouched for by the caller). */
enum read_mode { READ_DELIVERY, READ_REPLAY, READ_TRUSTED };

/* provider_read, provider_read_replay and provider_read_trusted. */
static enum provider_status read_event(const struct provider *p,
				       const struct request *req,
				       struct payload_parser *parser,
				       const char *body, size_t len,
				       time_t now, enum read_mode mode,
				       struct provider_batch *out,
				       struct error *why)
{
	struct json_object *root = NULL;
	enum provider_status status;

	out->count = 0;
	out->lifecycle_count = 0;
	out->event_type[0] = '\0';
	out->success_body = NULL;
	out->signature_missing = false;
	memset(&out->payments[0], 0, sizeof(out->payments[0]));
	/* The signature on the raw body first, before parsing it. */
	status = mode != READ_TRUSTED ?
			 verify_headers(p, req, body, len, now,
					mode == READ_REPLAY,
					&out->signature_missing, why) :
			 PROVIDER_PAYMENTS;
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

enum provider_status provider_read(const struct provider *p,
				   const struct request *req,
				   struct payload_parser *parser,
				   const char *body, size_t len, time_t now,
				   struct provider_batch *out,
				   struct error *why)
{
	return read_event(p, req, parser, body, len, now, READ_DELIVERY, out,
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
	return read_event(p, req, parser, body, len, received_at, READ_REPLAY,
			  out, why);
}

enum provider_status provider_read_trusted(const struct provider *p,
					   const struct request *req,
					   struct payload_parser *parser,
					   const char *body, size_t len,
					   struct provider_batch *out,
					   struct error *why)
{
	return read_event(p, req, parser, body, len, time(NULL), READ_TRUSTED,
			  out, why);
}

/* ---- the sending side: the same profile, written instead of read ---- */

static int add_header(struct provider_headers *h, const char *name,
		      const char *value, struct error *err)
{
	if (h->count >= PROVIDER_HEADERS_MAX ||
	    strlen(name) >= PROVIDER_HEADER_NAME_MAX ||
	    strlen(value) >= PROVIDER_HEADER_VALUE_MAX)
		return error_set(err, "header %.64s does not fit", name);
	snprintf(h->items[h->count].name, PROVIDER_HEADER_NAME_MAX, "%s", name);
	snprintf(h->items[h->count].value, PROVIDER_HEADER_VALUE_MAX, "%s",
		 value);
	h->count++;
	return 0;
}

static int need(const char *value, const char *what, struct error *err)
{
	if (value == NULL || value[0] == '\0')
		return error_set(err, "%s is needed to sign", what);
	return 0;
}

/* Adyen: sets additionalData.hmacSignature of every item of the body, over
 * the signing string adyen_item_verify checks. *signed_body is the new body
 * (the caller frees it). */
static int sign_adyen(const struct provider *p, const char *body, size_t len,
		      char **signed_body, struct error *err)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root = NULL, *items;
	const char *text;
	int rc = -1;

	if (tok == NULL)
		return error_set(err, "out of memory");
	if (len <= INT_MAX)
		root = json_tokener_parse_ex(tok, body, (int)len);
	json_tokener_free(tok);
	items = payload_lookup(root, "notificationItems");
	if (!json_object_is_type(items, json_type_array)) {
		error_set(err, "an Adyen body needs notificationItems");
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *item = payload_lookup(
			json_object_array_get_idx(items, i),
			"NotificationRequestItem");
		struct json_object *extra;
		struct signature_part parts[ADYEN_PARTS];
		char amount[24], sig[SIGNATURE_TEXT_MAX];
		size_t count;

		if (!json_object_is_type(item, json_type_object)) {
			error_set(err, "item %zu has no NotificationRequestItem",
				  i + 1);
			goto out;
		}
		count = adyen_parts(item, amount, parts);
		if (signature_sign_digest(p->ring, NULL, SIGNATURE_BASE64, parts,
					  count, sig, sizeof(sig), err) != 0)
			goto out;
		extra = payload_lookup(item, "additionalData");
		if (!json_object_is_type(extra, json_type_object)) {
			extra = json_object_new_object();
			if (extra == NULL ||
			    json_object_object_add(item, "additionalData",
						   extra) != 0) {
				json_object_put(extra);
				error_set(err, "out of memory");
				goto out;
			}
		}
		if (json_object_object_add(extra, "hmacSignature",
					   json_object_new_string(sig)) != 0) {
			error_set(err, "out of memory");
			goto out;
		}
	}
	text = json_object_to_json_string_ext(
		root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	*signed_body = text != NULL ? strdup(text) : NULL;
	rc = *signed_body != NULL ? 0 : error_set(err, "out of memory");
out:
	json_object_put(root);
	return rc;
}

/* The headers of p's scheme over body[0..len), signed with p's one key. */
static int sign_headers(const struct provider *p,
			const struct provider_sign_input *in, const char *body,
			size_t len, struct provider_headers *h,
			char **signed_body, struct error *err)
{
	const struct profile *row = &p->profile;
	/* provider_sign checked that generic has its keys */
	const struct config_generic *g =
		in->cfg != NULL ? &in->cfg->generic : NULL;
	struct signature_part parts[PROVIDER_TEMPLATE_PARTS_MAX] = {
		{ body, len },
	};
	char value[PROVIDER_HEADER_VALUE_MAX];
	const char *url;
	int rc = -1;

	switch (row->scheme) {
	case SCHEME_STANDARD:
		if (need(in->id, "a webhook-id", err) != 0 ||
		    need(in->timestamp, "a timestamp", err) != 0 ||
		    signature_sign_standard(p->ring, in->id, in->timestamp, body,
					    len, value, err) != 0)
			return -1;
		/* webhook-id is also its event id: no header below. */
		if (add_header(h, "webhook-id", in->id, err) != 0 ||
		    add_header(h, "webhook-timestamp", in->timestamp, err) != 0)
			return -1;
		return add_header(h, "webhook-signature", value, err);
	case SCHEME_STRIPE:
	case SCHEME_PADDLE:
		if (need(in->timestamp, "a timestamp", err) != 0)
			return -1;
		rc = row->scheme == SCHEME_STRIPE ?
			     signature_sign_stripe(p->ring, in->timestamp, body,
						   len, value, sizeof(value), err) :
			     signature_sign_paddle(p->ring, in->timestamp, body,
						   len, value, sizeof(value), err);
		break;
	case SCHEME_BODY_HEX:
	case SCHEME_BODY_BASE64:
		rc = signature_sign_digest(p->ring, NULL,
					   row->scheme == SCHEME_BODY_HEX ?
						   SIGNATURE_HEX :
						   SIGNATURE_BASE64,
					   parts, 1, value, sizeof(value), err);
		break;
	case SCHEME_URL_BODY:
		url = in->url != NULL ? in->url :
		      in->cfg != NULL ? in->cfg->square_notification_url : NULL;
		if (need(url, "the notification URL (--url)", err) != 0)
			return -1;
		parts[0] = (struct signature_part){ url, strlen(url) };
		parts[1] = (struct signature_part){ body, len };
		rc = signature_sign_digest(p->ring, NULL, SIGNATURE_BASE64, parts,
					   2, value, sizeof(value), err);
		break;
	case SCHEME_TOKEN:
		rc = (size_t)snprintf(value, sizeof(value), "%s", in->secret) <
				     sizeof(value) ?
			     0 : error_set(err, "the token does not fit");
		break;
	case SCHEME_GENERIC:
		url = in->url != NULL ? in->url : g->url;
		if (row->timestamp_header != NULL &&
		    need(in->timestamp, "a timestamp", err) != 0)
			return -1;
		for (size_t i = 0; i < p->template_count; i++) {
			if (p->template[i].kind == PROVIDER_TEMPLATE_URL &&
			    need(url, "generic_url (or --url)", err) != 0)
				return -1;
		}
		generic_parts(p, g, in->timestamp, url, body, len, parts);
		rc = signature_sign_digest(
			p->ring, g->signature_prefix,
			g->signature_encoding == CONFIG_ENCODING_BASE64 ?
				SIGNATURE_BASE64 : SIGNATURE_HEX,
			parts, p->template_count, value, sizeof(value), err);
		if (rc == 0 && row->timestamp_header != NULL)
			rc = add_header(h, row->timestamp_header, in->timestamp,
					err);
		break;
	case SCHEME_ADYEN:
	default:
		return sign_adyen(p, body, len, signed_body, err);
	}
	if (rc == 0)
		rc = add_header(h, row->signature_header, value, err);
	if (rc == 0 && row->event_header != NULL)
		rc = add_header(h, row->event_header,
				in->topic != NULL ? in->topic : row->payment_event,
				err);
	if (rc == 0 && row->event_id_header != NULL && in->id != NULL)
		rc = add_header(h, row->event_id_header, in->id, err);
	return rc;
}

int provider_sign(const struct provider_sign_input *in, const char *body,
		  size_t len, struct provider_headers *h, char **signed_body,
		  struct error *err)
{
	struct provider p;
	char *secrets[1];
	struct error inner;
	int rc;

	h->count = 0;
	*signed_body = NULL;
	if ((unsigned)in->provider >= CONFIG_PROVIDER_COUNT)
		return error_set(err, "unknown provider");
	if (need(in->secret, "a secret", err) != 0)
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
	if (in->provider == CONFIG_PROVIDER_GENERIC &&
	    generic_setup(&p, in->cfg, err) != 0)
		return -1;
	secrets[0] = (char *)in->secret;
	p.ring = signature_keyring_new(secrets, 1, p.profile.form, &inner);
	if (p.ring == NULL)
		return error_set(err, "%s", inner.message);
	rc = sign_headers(&p, in, body, len, h, signed_body, err);
	signature_keyring_free(p.ring);
	return rc;
}

/* ---- the providers' keys (their cross-key checks live with them) ---- */

#include <ctype.h>

#include "secret.h"

/* The generic profile: what its keys must say when it is enabled. */
/* An HTTP header name (RFC 9110 token): a request can carry no other. */
static bool is_header_name(const char *name)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";

	if (name[0] == '\0')
		return false;
	for (const char *c = name; *c != '\0'; c++)
		if (!isalnum((unsigned char)*c) || (unsigned char)*c > 0x7e)
			if (strchr(extra, *c) == NULL)
				return false;
	return true;
}

int provider_generic_template(const struct config_generic *g,
			      struct provider_template_part *parts,
			      size_t *count, struct error *err)
{
	static const struct {
		const char *text;
		enum provider_template_kind kind;
	} placeholders[] = {
		{ "{body}", PROVIDER_TEMPLATE_BODY },
		{ "{timestamp}", PROVIDER_TEMPLATE_TIMESTAMP },
		{ "{url}", PROVIDER_TEMPLATE_URL },
	};
	const char *t = g->signed_payload != NULL ? g->signed_payload : "";
	size_t n = 0, at = 0, bodies = 0, stamps = 0, literal = 0;

	/* A '{' that starts no placeholder is literal text, as any other
	 * byte: literal runs stay whole, so "{v}{v}…" is one part. */
	while (t[at] != '\0') {
		size_t k, len = 0;

		for (k = 0; k < sizeof(placeholders) / sizeof(placeholders[0]);
		     k++) {
			len = strlen(placeholders[k].text);
			if (strncmp(t + at, placeholders[k].text, len) == 0)
				break;
		}
		if (k == sizeof(placeholders) / sizeof(placeholders[0])) {
			at++;
			literal++;
			continue;
		}
		if (n + (literal > 0) + 1 > PROVIDER_TEMPLATE_PARTS_MAX)
			return error_set(err, "generic_signed_payload: more than "
					 "%d parts", PROVIDER_TEMPLATE_PARTS_MAX);
		if (literal > 0)
			parts[n++] = (struct provider_template_part){
				PROVIDER_TEMPLATE_LITERAL, at - literal, literal };
		parts[n++] = (struct provider_template_part){
			placeholders[k].kind, 0, 0 };
		bodies += placeholders[k].kind == PROVIDER_TEMPLATE_BODY;
		stamps += placeholders[k].kind == PROVIDER_TEMPLATE_TIMESTAMP;
		if (placeholders[k].kind == PROVIDER_TEMPLATE_URL && g->url == NULL)
			return error_set(err, "generic_signed_payload has {url}: "
					 "set generic_url");
		at += len;
		literal = 0;
	}
	if (literal > 0) {
		if (n + 1 > PROVIDER_TEMPLATE_PARTS_MAX)
			return error_set(err, "generic_signed_payload: more than "
					 "%d parts", PROVIDER_TEMPLATE_PARTS_MAX);
		parts[n++] = (struct provider_template_part){
			PROVIDER_TEMPLATE_LITERAL, at - literal, literal };
	}
	if (bodies != 1)
		return error_set(err, "generic_signed_payload must hold {body} "
				 "exactly once");
	if (stamps > 0 && g->timestamp_header == NULL)
		return error_set(err, "generic_signed_payload has {timestamp}: "
				 "set generic_timestamp_header");
	/* A freshness check on a header nobody signed protects nothing. */
	if (stamps == 0 && g->timestamp_header != NULL)
		return error_set(err, "generic_timestamp_header is set but "
				 "generic_signed_payload has no {timestamp}: "
				 "an unsigned timestamp proves nothing");
	*count = n;
	return 0;
}

static int check_generic(const struct config *cfg, struct error *err)
{
	const struct config_generic *g = &cfg->generic;
	const struct config_secrets *secrets =
		&cfg->secrets[CONFIG_PROVIDER_GENERIC];
	static const enum secret_form forms[] = {
		[CONFIG_ENCODING_HEX] = SECRET_HEX,
		[CONFIG_ENCODING_BASE64] = SECRET_BASE64,
		[CONFIG_ENCODING_TEXT] = SECRET_TEXT,
	};
	struct provider_template_part parts[PROVIDER_TEMPLATE_PARTS_MAX];
	size_t count;
	struct secret_key key;
	struct error inner;

	if (g->signature_header == NULL)
		return error_set(err, "providers has generic: set "
				 "generic_signature_header");
	if (!is_header_name(g->signature_header) ||
	    (g->timestamp_header != NULL && !is_header_name(g->timestamp_header)))
		return error_set(err, "generic_signature_header and "
				 "generic_timestamp_header must be header names: "
				 "letters, digits and - (no spaces)");
	if (g->transaction_id_path == NULL || g->amount_path == NULL ||
	    (g->currency_path == NULL && cfg->default_currency == NULL))
		return error_set(err, "providers has generic: set "
				 "generic_transaction_id_path, "
				 "generic_amount_path and "
				 "generic_currency_path (or default_currency)");
	if (provider_generic_template(g, parts, &count, err) != 0)
		return -1;
	if ((g->event_path == NULL) != (g->event_values == NULL))
		return error_set(err, "generic_event_path and "
				 "generic_event_values go together");
	for (size_t i = 0; i < secrets->count; i++) {
		if (secret_decode(forms[g->secret_encoding], secrets->items[i],
				  &key, &inner) != 0)
			return error_set(err, "generic_secret %zu: %s", i + 1,
					 inner.message);
		secret_key_wipe(&key);
	}
	return 0;
}

int provider_check_config(const struct config *cfg, struct error *err)
{
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		if (!config_provider_enabled(cfg, p) || cfg->secrets[p].count > 0)
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
	if (config_provider_enabled(cfg, CONFIG_PROVIDER_SQUARE) &&
	    cfg->square_notification_url == NULL)
		return error_set(err, "providers has square: set "
				 "square_notification_url (the URL Square signs)");
	if (config_provider_enabled(cfg, CONFIG_PROVIDER_GENERIC) &&
	    check_generic(cfg, err) != 0)
		return -1;
	return 0;
}
