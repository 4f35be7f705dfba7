/* provider_lifecycle.c - each provider's refund, dispute and cancellation
 * events (see provider_lifecycle.h). One table says, per event a provider
 * sends, which kind of object it announces and where its fields are; the
 * code follows the table. Shopify, whose topic travels in an unsigned
 * header, is read by the shape of its signed body instead.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "provider_lifecycle.h"

enum time_form {
	TIME_UNIX,    /* a JSON integer of Unix seconds */
	TIME_RFC3339, /* a JSON string, RFC 3339 */
};

/* A provider's status value and the state it means. */
struct state_map {
	const char *value;
	enum lifecycle_state state;
};

/* One event of one provider. Paths are dotted JSON paths under the node
 * (the body, or an Adyen item); under each_path's entries for the object's
 * own fields when each_path is set. */
struct rule {
	enum config_provider provider;
	const char *event_path, *event; /* event_path holds event */
	/* and, when match_key[i] is set, that key of the object at
	 * match_in[i] (the node itself when NULL) holds match[i]. A key, not
	 * a path: Adyen's additionalData keys hold dots ("modification.action"). */
	const char *match_in[2], *match_key[2], *match[2];
	enum lifecycle_kind kind;
	/* Every entry of this array is one object (KOMOJU's data.refunds). */
	const char *each_path;
	const char *object_path, *link_path;
	bool id_integer;   /* the ids may be JSON integers */
	bool link_nullable; /* a null link: no payment payhook records */
	/* NULL amount_path: the event carries no amount (0, no currency). */
	const char *amount_path, *currency_path;
	enum payload_amount_form amount_form;
	/* The state: fixed when state_path is NULL; else state_path's value
	 * through map (NULL map: payhook's own state names), and a value the
	 * map lacks is `state` when map_default, else invalid. */
	const char *state_path;
	const struct state_map *map;
	enum lifecycle_state state;
	bool map_default;
	const char *time_path;
	enum time_form time_form;
	/* Read when time_path is absent (Checkout.com writes timestamp or
	 * created_on, by event and version). */
	const char *time_path2;
	/* The link is the last path segment of the href of the entry of
	 * this array whose rel is "up" (a PayPal refund's capture). */
	const char *up_links_path;
	bool cumulative;
	/* The kind comes from an unsigned field: an object recorded before
	 * keeps its own (lifecycle_event.kind_from_first). */
	bool kind_from_first;
};

static const struct state_map stripe_refund[] = {
	{ "succeeded", LIFECYCLE_SUCCEEDED }, { "pending", LIFECYCLE_PENDING },
	{ "requires_action", LIFECYCLE_PENDING }, { "failed", LIFECYCLE_FAILED },
	{ "canceled", LIFECYCLE_FAILED }, { NULL, LIFECYCLE_PENDING },
};
static const struct state_map stripe_dispute[] = {
	{ "won", LIFECYCLE_WON }, { "lost", LIFECYCLE_LOST },
	{ NULL, LIFECYCLE_OPEN },
};
static const struct state_map paddle_refund[] = {
	{ "approved", LIFECYCLE_SUCCEEDED },
	{ "pending_approval", LIFECYCLE_PENDING },
	{ "rejected", LIFECYCLE_FAILED }, { "reversed", LIFECYCLE_FAILED },
	{ NULL, LIFECYCLE_PENDING },
};
/* closed: Razorpay closes a dispute without deducting the amount. */
static const struct state_map razorpay_dispute[] = {
	{ "won", LIFECYCLE_WON }, { "lost", LIFECYCLE_LOST },
	{ "closed", LIFECYCLE_WON }, { NULL, LIFECYCLE_OPEN },
};
static const struct state_map square_refund[] = {
	{ "COMPLETED", LIFECYCLE_SUCCEEDED }, { "PENDING", LIFECYCLE_PENDING },
	{ "REJECTED", LIFECYCLE_FAILED }, { "FAILED", LIFECYCLE_FAILED },
	{ NULL, LIFECYCLE_PENDING },
};
static const struct state_map square_dispute[] = {
	{ "WON", LIFECYCLE_WON }, { "LOST", LIFECYCLE_LOST },
	{ "ACCEPTED", LIFECYCLE_LOST }, { NULL, LIFECYCLE_OPEN },
};
/* developer.paypal.com: a refund's status, and a resolved dispute's
 * outcome_code (buyer favour or accepted: the money went back; seller
 * favour, canceled or denied: it stayed; a payout by PayPal: it stayed). */
static const struct state_map paypal_refund[] = {
	{ "COMPLETED", LIFECYCLE_SUCCEEDED }, { "PENDING", LIFECYCLE_PENDING },
	{ "FAILED", LIFECYCLE_FAILED }, { "CANCELLED", LIFECYCLE_FAILED },
	{ NULL, LIFECYCLE_PENDING },
};
static const struct state_map paypal_outcome[] = {
	{ "RESOLVED_BUYER_FAVOUR", LIFECYCLE_LOST }, { "ACCEPTED", LIFECYCLE_LOST },
	{ "RESOLVED_SELLER_FAVOUR", LIFECYCLE_WON },
	{ "CANCELED_BY_BUYER", LIFECYCLE_WON }, { "DENIED", LIFECYCLE_WON },
	{ "RESOLVED_WITH_PAYOUT", LIFECYCLE_WON }, { NULL, LIFECYCLE_OPEN },
};
/* accepted: the merchant conceded, the money went back to the buyer. */
static const struct state_map shopify_dispute[] = {
	{ "won", LIFECYCLE_WON }, { "lost", LIFECYCLE_LOST },
	{ "accepted", LIFECYCLE_LOST }, { NULL, LIFECYCLE_OPEN },
};

#define STANDARD(kind_name, kind_value) { \
	.provider = CONFIG_PROVIDER_STANDARD, \
	.event_path = "type", .event = kind_name, .kind = kind_value, \
	.object_path = "object_id", .link_path = "transaction_id", \
	.amount_path = "amount", .currency_path = "currency", \
	.state_path = "state", \
	.time_path = "occurred_at", .time_form = TIME_RFC3339 }

#define STRIPE_REFUND(name) { \
	.provider = CONFIG_PROVIDER_STRIPE, \
	.event_path = "type", .event = name, .kind = LIFECYCLE_REFUND, \
	.object_path = "data.object.id", \
	.link_path = "data.object.payment_intent", .link_nullable = true, \
	.amount_path = "data.object.amount", \
	.currency_path = "data.object.currency", \
	.state_path = "data.object.status", .map = stripe_refund, \
	.time_path = "created", .time_form = TIME_UNIX }

#define STRIPE_DISPUTE(name) { \
	.provider = CONFIG_PROVIDER_STRIPE, \
	.event_path = "type", .event = name, .kind = LIFECYCLE_DISPUTE, \
	.object_path = "data.object.id", \
	.link_path = "data.object.payment_intent", .link_nullable = true, \
	.amount_path = "data.object.amount", \
	.currency_path = "data.object.currency", \
	.state_path = "data.object.status", .map = stripe_dispute, \
	.state = LIFECYCLE_OPEN, .map_default = true, \
	.time_path = "created", .time_form = TIME_UNIX }

/* A Paddle adjustment: its action says what it is. A refund is the
 * adjustment itself; a chargeback is one per transaction. */
#define PADDLE(name, action, kind_value, object, status, map_value, fixed) { \
	.provider = CONFIG_PROVIDER_PADDLE, \
	.event_path = "event_type", .event = name, \
	.match_in = { "data" }, .match_key = { "action" }, \
	.match = { action }, \
	.kind = kind_value, \
	.object_path = object, .link_path = "data.transaction_id", \
	.amount_path = "data.totals.total", \
	.amount_form = PAYLOAD_AMOUNT_MINOR_STRING, \
	.currency_path = "data.currency_code", \
	.state_path = status, .map = map_value, .state = fixed, \
	.time_path = "occurred_at", .time_form = TIME_RFC3339 }

#define RAZORPAY_REFUND(name, fixed) { \
	.provider = CONFIG_PROVIDER_RAZORPAY, \
	.event_path = "event", .event = name, .kind = LIFECYCLE_REFUND, \
	.object_path = "payload.refund.entity.id", \
	.link_path = "payload.refund.entity.payment_id", \
	.amount_path = "payload.refund.entity.amount", \
	.currency_path = "payload.refund.entity.currency", \
	.state = fixed, \
	.time_path = "created_at", .time_form = TIME_UNIX }

#define RAZORPAY_DISPUTE(name) { \
	.provider = CONFIG_PROVIDER_RAZORPAY, \
	.event_path = "event", .event = name, .kind = LIFECYCLE_DISPUTE, \
	.object_path = "payload.dispute.entity.id", \
	.link_path = "payload.dispute.entity.payment_id", \
	.amount_path = "payload.dispute.entity.amount", \
	.currency_path = "payload.dispute.entity.currency", \
	.state_path = "payload.dispute.entity.status", \
	.map = razorpay_dispute, .state = LIFECYCLE_OPEN, \
	.map_default = true, \
	.time_path = "created_at", .time_form = TIME_UNIX }

#define KOMOJU(name) { \
	.provider = CONFIG_PROVIDER_KOMOJU, \
	.event_path = "type", .event = name, .kind = LIFECYCLE_REFUND, \
	.each_path = "data.refunds", \
	.object_path = "id", .link_path = "data.id", \
	.amount_path = "amount", .currency_path = "currency", \
	.state = LIFECYCLE_SUCCEEDED, \
	.time_path = "created_at", .time_form = TIME_RFC3339 }

#define SQUARE_REFUND(name) { \
	.provider = CONFIG_PROVIDER_SQUARE, \
	.event_path = "type", .event = name, .kind = LIFECYCLE_REFUND, \
	.object_path = "data.object.refund.id", \
	.link_path = "data.object.refund.payment_id", \
	.amount_path = "data.object.refund.amount_money.amount", \
	.currency_path = "data.object.refund.amount_money.currency", \
	.state_path = "data.object.refund.status", .map = square_refund, \
	.time_path = "created_at", .time_form = TIME_RFC3339 }

#define SQUARE_DISPUTE(name) { \
	.provider = CONFIG_PROVIDER_SQUARE, \
	.event_path = "type", .event = name, .kind = LIFECYCLE_DISPUTE, \
	.object_path = "data.object.dispute.id", \
	.link_path = "data.object.dispute.disputed_payment.payment_id", \
	.amount_path = "data.object.dispute.amount_money.amount", \
	.currency_path = "data.object.dispute.amount_money.currency", \
	.state_path = "data.object.dispute.state", .map = square_dispute, \
	.state = LIFECYCLE_OPEN, .map_default = true, \
	.time_path = "created_at", .time_form = TIME_RFC3339 }

/* A PayPal refund (or reversal) of a capture: the capture is its "up"
 * link's last segment. */
#define PAYPAL_REFUND(name) { \
	.provider = CONFIG_PROVIDER_PAYPAL, \
	.event_path = "event_type", .event = name, .kind = LIFECYCLE_REFUND, \
	.object_path = "resource.id", .up_links_path = "resource.links", \
	.amount_path = "resource.amount.value", \
	.amount_form = PAYLOAD_AMOUNT_DECIMAL, \
	.currency_path = "resource.amount.currency_code", \
	.state_path = "resource.status", .map = paypal_refund, \
	.time_path = "resource.update_time", .time_form = TIME_RFC3339 }

/* A PayPal dispute of a capture (disputed_transactions' seller id). */
#define PAYPAL_DISPUTE(name, outcome, fixed) { \
	.provider = CONFIG_PROVIDER_PAYPAL, \
	.event_path = "event_type", .event = name, .kind = LIFECYCLE_DISPUTE, \
	.object_path = "resource.dispute_id", \
	.link_path = "resource.disputed_transactions.0.seller_transaction_id", \
	.amount_path = "resource.dispute_amount.value", \
	.amount_form = PAYLOAD_AMOUNT_DECIMAL, \
	.currency_path = "resource.dispute_amount.currency_code", \
	.state_path = outcome, .map = paypal_outcome, .state = fixed, \
	.map_default = true, \
	.time_path = "resource.update_time", .time_form = TIME_RFC3339 }

/* Checkout.com: a refund is the payment's refund action. */
#define CHECKOUT_REFUND(name, fixed) { \
	.provider = CONFIG_PROVIDER_CHECKOUT, \
	.event_path = "type", .event = name, .kind = LIFECYCLE_REFUND, \
	.object_path = "data.action_id", .link_path = "data.id", \
	.amount_path = "data.amount", .currency_path = "data.currency", \
	.state = fixed, \
	.time_path = "timestamp", .time_path2 = "created_on", \
	.time_form = TIME_RFC3339 }

#define CHECKOUT_DISPUTE(name, fixed) { \
	.provider = CONFIG_PROVIDER_CHECKOUT, \
	.event_path = "type", .event = name, .kind = LIFECYCLE_DISPUTE, \
	.object_path = "data.id", .link_path = "data.payment_id", \
	.amount_path = "data.amount", .currency_path = "data.currency", \
	.state = fixed, \
	.time_path = "timestamp", .time_path2 = "created_on", \
	.time_form = TIME_RFC3339 }

/* An Adyen item: the object is its pspReference, the payment its
 * originalReference. success and the modification's action narrow; the
 * action (in additionalData) is not signed, so it decides the kind of a
 * CANCEL_OR_REFUND only when its object is first seen. */
#define ADYEN_RULE(code, key0, value0, in1, key1, value1, kind_value, fixed) { \
	.provider = CONFIG_PROVIDER_ADYEN, \
	.kind_from_first = (in1) != NULL, \
	.event_path = "eventCode", .event = code, \
	.match_in = { NULL, in1 }, .match_key = { key0, key1 }, \
	.match = { value0, value1 }, \
	.kind = kind_value, \
	.object_path = "pspReference", .link_path = "originalReference", \
	.amount_path = "amount.value", .currency_path = "amount.currency", \
	.state = fixed, \
	.time_path = "eventDate", .time_form = TIME_RFC3339 }
#define ADYEN(code, kind_value, fixed) \
	ADYEN_RULE(code, NULL, NULL, NULL, NULL, NULL, kind_value, fixed)
#define ADYEN_IF(code, success, kind_value, fixed) \
	ADYEN_RULE(code, "success", success, NULL, NULL, NULL, kind_value, \
		   fixed)
#define ADYEN_ACTION(success, action, kind_value, fixed) \
	ADYEN_RULE("CANCEL_OR_REFUND", "success", success, "additionalData", \
		   "modification.action", action, kind_value, fixed)

static const struct rule rules_table[] = {
	STANDARD("refund", LIFECYCLE_REFUND),
	STANDARD("dispute", LIFECYCLE_DISPUTE),
	STANDARD("cancellation", LIFECYCLE_CANCELLATION),

	/* The Refund object's own events are the source of truth. Not
	 * charge.refunded: it repeats every refund of the charge, so one
	 * refund would count twice. */
	STRIPE_REFUND("refund.created"),
	STRIPE_REFUND("refund.updated"),
	STRIPE_REFUND("refund.failed"),
	STRIPE_DISPUTE("charge.dispute.created"),
	STRIPE_DISPUTE("charge.dispute.updated"),
	STRIPE_DISPUTE("charge.dispute.closed"),

	PADDLE("adjustment.created", "refund", LIFECYCLE_REFUND, "data.id",
	       "data.status", paddle_refund, LIFECYCLE_PENDING),
	PADDLE("adjustment.updated", "refund", LIFECYCLE_REFUND, "data.id",
	       "data.status", paddle_refund, LIFECYCLE_PENDING),
	PADDLE("adjustment.created", "chargeback_warning", LIFECYCLE_DISPUTE,
	       "data.transaction_id", NULL, NULL, LIFECYCLE_OPEN),
	PADDLE("adjustment.updated", "chargeback_warning", LIFECYCLE_DISPUTE,
	       "data.transaction_id", NULL, NULL, LIFECYCLE_OPEN),
	PADDLE("adjustment.created", "chargeback", LIFECYCLE_DISPUTE,
	       "data.transaction_id", NULL, NULL, LIFECYCLE_LOST),
	PADDLE("adjustment.updated", "chargeback", LIFECYCLE_DISPUTE,
	       "data.transaction_id", NULL, NULL, LIFECYCLE_LOST),
	PADDLE("adjustment.created", "chargeback_reverse", LIFECYCLE_DISPUTE,
	       "data.transaction_id", NULL, NULL, LIFECYCLE_WON),
	PADDLE("adjustment.updated", "chargeback_reverse", LIFECYCLE_DISPUTE,
	       "data.transaction_id", NULL, NULL, LIFECYCLE_WON),

	RAZORPAY_REFUND("refund.created", LIFECYCLE_PENDING),
	RAZORPAY_REFUND("refund.processed", LIFECYCLE_SUCCEEDED),
	RAZORPAY_REFUND("refund.failed", LIFECYCLE_FAILED),
	RAZORPAY_DISPUTE("payment.dispute.created"),
	RAZORPAY_DISPUTE("payment.dispute.won"),
	RAZORPAY_DISPUTE("payment.dispute.lost"),
	RAZORPAY_DISPUTE("payment.dispute.closed"),

	KOMOJU("payment.refund.created"),
	KOMOJU("payment.refunded"),

	/* PAY.JP: one refund object per charge, its running total. */
	{
		.provider = CONFIG_PROVIDER_PAYJP,
		.event_path = "type", .event = "charge.refunded",
		.kind = LIFECYCLE_REFUND,
		.object_path = "data.id", .link_path = "data.id",
		.amount_path = "data.amount_refunded",
		.currency_path = "data.currency",
		.state = LIFECYCLE_SUCCEEDED,
		.time_path = "created", .time_form = TIME_UNIX,
		.cumulative = true,
	},
	{
		.provider = CONFIG_PROVIDER_PAYJP,
		.event_path = "type", .event = "dispute.created",
		.kind = LIFECYCLE_DISPUTE,
		.object_path = "data.id", .link_path = "data.id",
		.amount_path = "data.amount", .currency_path = "data.currency",
		.state = LIFECYCLE_OPEN,
		.time_path = "created", .time_form = TIME_UNIX,
	},

	/* Not payment.updated's refunded_money: it repeats the refunds. */
	SQUARE_REFUND("refund.created"),
	SQUARE_REFUND("refund.updated"),
	SQUARE_DISPUTE("dispute.created"),
	SQUARE_DISPUTE("dispute.state.updated"),

	ADYEN_IF("REFUND", "true", LIFECYCLE_REFUND, LIFECYCLE_SUCCEEDED),
	ADYEN_IF("REFUND", "false", LIFECYCLE_REFUND, LIFECYCLE_FAILED),
	ADYEN("REFUND_FAILED", LIFECYCLE_REFUND, LIFECYCLE_FAILED),
	ADYEN("REFUNDED_REVERSED", LIFECYCLE_REFUND, LIFECYCLE_FAILED),
	ADYEN("NOTIFICATION_OF_CHARGEBACK", LIFECYCLE_DISPUTE, LIFECYCLE_OPEN),
	ADYEN("CHARGEBACK", LIFECYCLE_DISPUTE, LIFECYCLE_LOST),
	ADYEN("SECOND_CHARGEBACK", LIFECYCLE_DISPUTE, LIFECYCLE_LOST),
	ADYEN("CHARGEBACK_REVERSED", LIFECYCLE_DISPUTE, LIFECYCLE_WON),
	ADYEN("PREARBITRATION_WON", LIFECYCLE_DISPUTE, LIFECYCLE_WON),
	/* A cancellation that failed changed nothing: no row. */
	ADYEN_IF("CANCELLATION", "true", LIFECYCLE_CANCELLATION,
		 LIFECYCLE_SUCCEEDED),
	ADYEN_ACTION("true", "cancel", LIFECYCLE_CANCELLATION,
		     LIFECYCLE_SUCCEEDED),
	ADYEN_ACTION("true", "refund", LIFECYCLE_REFUND, LIFECYCLE_SUCCEEDED),
	ADYEN_ACTION("false", "refund", LIFECYCLE_REFUND, LIFECYCLE_FAILED),

	/* PayPal: a capture refunded or reversed (a reversal returns the
	 * money too: a refund), and disputes with their outcome. */
	PAYPAL_REFUND("PAYMENT.CAPTURE.REFUNDED"),
	PAYPAL_REFUND("PAYMENT.CAPTURE.REVERSED"),
	PAYPAL_DISPUTE("CUSTOMER.DISPUTE.CREATED", NULL, LIFECYCLE_OPEN),
	PAYPAL_DISPUTE("CUSTOMER.DISPUTE.UPDATED", NULL, LIFECYCLE_OPEN),
	PAYPAL_DISPUTE("CUSTOMER.DISPUTE.RESOLVED",
		       "resource.dispute_outcome.outcome_code", LIFECYCLE_OPEN),

	/* Checkout.com's refund actions and disputes (checkout.com/docs,
	 * webhook event types; the disputes API's event list). */
	CHECKOUT_REFUND("payment_refunded", LIFECYCLE_SUCCEEDED),
	CHECKOUT_REFUND("payment_refund_pending", LIFECYCLE_PENDING),
	CHECKOUT_REFUND("payment_refund_declined", LIFECYCLE_FAILED),
	CHECKOUT_DISPUTE("dispute_received", LIFECYCLE_OPEN),
	CHECKOUT_DISPUTE("dispute_evidence_required", LIFECYCLE_OPEN),
	CHECKOUT_DISPUTE("dispute_evidence_submitted", LIFECYCLE_OPEN),
	CHECKOUT_DISPUTE("dispute_evidence_acknowledged_by_scheme",
			 LIFECYCLE_OPEN),
	CHECKOUT_DISPUTE("dispute_arbitration_sent_to_scheme", LIFECYCLE_OPEN),
	CHECKOUT_DISPUTE("dispute_arbitration_evidence_submitted",
			 LIFECYCLE_OPEN),
	CHECKOUT_DISPUTE("dispute_won", LIFECYCLE_WON),
	CHECKOUT_DISPUTE("dispute_arbitration_won", LIFECYCLE_WON),
	CHECKOUT_DISPUTE("dispute_canceled", LIFECYCLE_WON),
	/* Resolved: it had been refunded already; nothing more moves. */
	CHECKOUT_DISPUTE("dispute_resolved", LIFECYCLE_WON),
	CHECKOUT_DISPUTE("dispute_lost", LIFECYCLE_LOST),
	CHECKOUT_DISPUTE("dispute_arbitration_lost", LIFECYCLE_LOST),
	CHECKOUT_DISPUTE("dispute_accepted", LIFECYCLE_LOST),
	CHECKOUT_DISPUTE("dispute_expired", LIFECYCLE_LOST),

	/* Lemon Squeezy: order_refunded is the order after the refund;
	 * refunded_amount is its running total (one refund object per
	 * order: the row keeps the largest seen). */
	{
		.provider = CONFIG_PROVIDER_LEMONSQUEEZY,
		.event_path = "meta.event_name", .event = "order_refunded",
		.kind = LIFECYCLE_REFUND,
		.object_path = "data.id", .link_path = "data.id",
		.amount_path = "data.attributes.refunded_amount",
		.currency_path = "data.attributes.currency",
		.state = LIFECYCLE_SUCCEEDED,
		.time_path = "data.attributes.updated_at",
		.time_form = TIME_RFC3339, .cumulative = true,
	},
};

#define RULE_COUNT (sizeof(rules_table) / sizeof(rules_table[0]))

#define invalid(why, ...) (error_set((why), __VA_ARGS__), PAYLOAD_INVALID)

/* The rule of node's event, or NULL when it announces no lifecycle object. */
static const struct rule *find_rule(enum config_provider provider,
				    struct json_object *node)
{
	for (size_t i = 0; i < RULE_COUNT; i++) {
		const struct rule *r = &rules_table[i];
		bool match = r->provider == provider &&
			     payload_string_is(payload_lookup(node,
							      r->event_path),
					       r->event);

		for (size_t m = 0; match && m < 2; m++) {
			struct json_object *in = r->match_in[m] != NULL ?
				payload_lookup(node, r->match_in[m]) : node;
			struct json_object *value = NULL;

			if (r->match_key[m] == NULL)
				continue;
			match = json_object_is_type(in, json_type_object) &&
				json_object_object_get_ex(in, r->match_key[m],
							  &value) &&
				payload_string_is(value, r->match[m]);
		}
		if (match)
			return r;
	}
	return NULL;
}

static enum payload_status take_time(struct json_object *node,
				     const char *path, enum time_form form,
				     struct lifecycle_time *out,
				     struct error *why)
{
	struct json_object *value = payload_lookup(node, path);

	if (value == NULL)
		return invalid(why, "%s: required", path);
	if (form == TIME_UNIX) {
		int64_t s = json_object_get_int64(value);

		if (!json_object_is_type(value, json_type_int) ||
		    (uint64_t)s != json_object_get_uint64(value) ||
		    lifecycle_time_from_unix(s, out) != 0)
			return invalid(why, "%s: must be Unix seconds "
				       "(1970-9999)", path);
		return PAYLOAD_VALID;
	}
	if (!json_object_is_type(value, json_type_string) ||
	    lifecycle_time_parse(json_object_get_string(value),
				 (size_t)json_object_get_string_len(value),
				 out) != 0)
		return invalid(why, "%s: must be an RFC 3339 date-time with "
			       "a zone (1970-9999)", path);
	return PAYLOAD_VALID;
}

/* The state of text[0..len) by map (NULL: payhook's names). */
static enum payload_status map_state(const struct rule *r,
				     struct json_object *value,
				     struct lifecycle_event *out,
				     struct error *why)
{
	const char *text = json_object_get_string(value);
	size_t len = (size_t)json_object_get_string_len(value);

	if (!json_object_is_type(value, json_type_string))
		return invalid(why, "%s: must be a string", r->state_path);
	if (r->map == NULL) {
		if (lifecycle_state_parse(r->kind, text, len, &out->state) != 0)
			return invalid(why, "%s: not a state of a %s",
				       r->state_path,
				       lifecycle_kind_name(r->kind));
		return PAYLOAD_VALID;
	}
	for (const struct state_map *m = r->map; m->value != NULL; m++) {
		if (payload_string_is(value, m->value)) {
			out->state = m->state;
			return PAYLOAD_VALID;
		}
	}
	if (!r->map_default)
		return invalid(why, "%s: not a %s status payhook knows",
			       r->state_path, lifecycle_kind_name(r->kind));
	out->state = r->state;
	return PAYLOAD_VALID;
}

/* One object: its own fields under entry, the rest under node. */
/* The payment's id as the last path segment of the href of the entry of
 * the array at path whose rel is "up" (PayPal's refund: .../captures/ID),
 * held to the transaction id's rules. */
static enum payload_status take_up_link(struct json_object *node,
					const char *path,
					const struct payload_rules *rules,
					struct payment *out, struct error *why)
{
	struct json_object *links = payload_lookup(node, path), *wrap, *id;
	const char *href = NULL, *last;
	enum payload_status status;

	if (!json_object_is_type(links, json_type_array))
		return invalid(why, "%s: must be an array", path);
	for (size_t i = 0; i < json_object_array_length(links); i++) {
		struct json_object *link = json_object_array_get_idx(links, i);

		if (payload_string_is(payload_lookup(link, "rel"), "up") &&
		    json_object_is_type(payload_lookup(link, "href"),
					json_type_string))
			href = json_object_get_string(payload_lookup(link,
								     "href"));
	}
	if (href == NULL)
		return invalid(why, "%s: no link with rel up", path);
	last = strrchr(href, '/');
	last = last != NULL ? last + 1 : href;
	/* Through the id's own rules: a wrapper, not a copy of them. */
	wrap = json_object_new_object();
	id = json_object_new_string(last);
	if (wrap == NULL || id == NULL) {
		json_object_put(wrap);
		json_object_put(id);
		error_set(why, "out of memory");
		return PAYLOAD_ERROR;
	}
	json_object_object_add(wrap, "up", id);
	status = payload_take_transaction_id(wrap, "up", false, rules, out,
					     why);
	json_object_put(wrap);
	if (status == PAYLOAD_INVALID)
		error_set(why, "%s: the up link's last segment is no "
			  "transaction id", path);
	return status;
}

static enum payload_status take_object(const struct rule *r,
				       struct json_object *node,
				       struct json_object *entry,
				       const struct payload_rules *rules,
				       struct lifecycle_event *out,
				       struct error *why)
{
	enum payload_status status;
	struct json_object *state;

	memset(out, 0, sizeof(*out));
	out->kind = r->kind;
	out->state = r->state;
	out->cumulative = r->cumulative;
	out->kind_from_first = r->kind_from_first;
	status = r->up_links_path != NULL ?
			 take_up_link(node, r->up_links_path, rules,
				      &out->link, why) :
			 payload_take_transaction_id(node, r->link_path,
						     r->id_integer, rules,
						     &out->link, why);
	if (status == PAYLOAD_VALID)
		status = payload_take_id(entry, r->object_path, r->id_integer,
					 false, LIFECYCLE_OBJECT_ID_MAX,
					 out->object_id, &out->object_id_len,
					 why);
	if (status == PAYLOAD_VALID && r->amount_path != NULL)
		status = payload_take_money(entry, r->amount_path,
					    r->amount_form, r->currency_path,
					    rules, &out->link, why);
	if (status == PAYLOAD_VALID && r->state_path != NULL) {
		state = payload_lookup(node, r->state_path);
		status = state == NULL ?
			invalid(why, "%s: required", r->state_path) :
			map_state(r, state, out, why);
	}
	if (status == PAYLOAD_VALID)
		status = take_time(node, r->time_path2 != NULL &&
					 payload_lookup(node, r->time_path) ==
						 NULL ?
					 r->time_path2 : r->time_path,
				   r->time_form, &out->occurred_at, why);
	return status;
}

/* ---- Shopify: by the shape of the signed body ---- */

/* A refund's money: the transactions of kind refund, summed by status.
 * The refund succeeded when any succeeded (the sum of those), else is
 * pending when any is pending, else failed. No refund transaction at all
 * (a restock without money): no lifecycle object. */
static enum payload_status shopify_refund_money(struct json_object *body,
						const struct payload_rules *rules,
						struct lifecycle_event *out,
						bool *money, struct error *why)
{
	struct json_object *list = payload_lookup(body, "transactions");
	int64_t sums[3] = { 0, 0, 0 }; /* succeeded, pending, failed */
	char currency[4] = "";
	size_t n;

	if (!json_object_is_type(list, json_type_array))
		return invalid(why, "transactions: must be an array");
	n = json_object_array_length(list);
	for (size_t i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(list, i);
		struct json_object *status = payload_lookup(t, "status");
		struct payment part;
		enum payload_status st;
		size_t slot;

		if (!payload_string_is(payload_lookup(t, "kind"), "refund"))
			continue;
		if (payload_string_is(status, "success"))
			slot = 0;
		else if (payload_string_is(status, "pending"))
			slot = 1;
		else if (payload_string_is(status, "failure") ||
			 payload_string_is(status, "error"))
			slot = 2;
		else
			return invalid(why, "transactions.status: not a "
				       "refund status payhook knows");
		memset(&part, 0, sizeof(part));
		st = payload_take_money(t, "amount", PAYLOAD_AMOUNT_DECIMAL,
					"currency", rules, &part, why);
		if (st != PAYLOAD_VALID)
			return st;
		if (currency[0] != '\0' && strcmp(currency, part.currency) != 0)
			return invalid(why, "transactions: refunds in more "
				       "than one currency");
		memcpy(currency, part.currency, sizeof(currency));
		if (sums[slot] > INT64_MAX - part.amount)
			return invalid(why, "transactions: the refunds add up "
				       "to more than 9223372036854775807");
		sums[slot] += part.amount;
		*money = true;
	}
	if (!*money)
		return PAYLOAD_VALID;
	out->state = sums[0] > 0 ? LIFECYCLE_SUCCEEDED :
		     sums[1] > 0 ? LIFECYCLE_PENDING : LIFECYCLE_FAILED;
	out->link.amount = sums[0] > 0 ? sums[0] : sums[1] > 0 ? sums[1] :
								  sums[2];
	memcpy(out->link.currency, currency, sizeof(currency));
	return PAYLOAD_VALID;
}

static const struct rule shopify_refund = {
	.provider = CONFIG_PROVIDER_SHOPIFY, .kind = LIFECYCLE_REFUND,
	.object_path = "id", .link_path = "order_id", .id_integer = true,
	.time_path = "created_at", .time_form = TIME_RFC3339,
};

static const struct rule shopify_dispute_rule = {
	.provider = CONFIG_PROVIDER_SHOPIFY, .kind = LIFECYCLE_DISPUTE,
	.object_path = "id", .link_path = "order_id", .id_integer = true,
	.amount_path = "amount", .currency_path = "currency",
	.amount_form = PAYLOAD_AMOUNT_DECIMAL,
	.state_path = "status", .map = shopify_dispute,
	.state = LIFECYCLE_OPEN, .map_default = true,
	.time_path = "initiated_at", .time_form = TIME_RFC3339,
};

/* A refund carries order_id and a transactions list, a dispute order_id and
 * initiated_at; an order carries neither order_id. */
static enum payload_status read_shopify(struct json_object *body,
					const struct payload_rules *rules,
					struct lifecycle_event *out,
					size_t *count, struct error *why)
{
	enum payload_status status;
	bool money = false;

	if (payload_lookup(body, "order_id") == NULL)
		return PAYLOAD_VALID;
	if (payload_lookup(body, "transactions") != NULL) {
		status = take_object(&shopify_refund, body, body, rules, out,
				     why);
		if (status == PAYLOAD_VALID)
			status = shopify_refund_money(body, rules, out, &money,
						      why);
		if (status == PAYLOAD_VALID && money)
			*count = 1;
		return status;
	}
	if (payload_lookup(body, "initiated_at") == NULL)
		return PAYLOAD_VALID;
	status = take_object(&shopify_dispute_rule, body, body, rules, out,
			     why);
	/* A decided dispute is dated by its finalized_on. */
	if (status == PAYLOAD_VALID &&
	    payload_lookup(body, "finalized_on") != NULL)
		status = take_time(body, "finalized_on", TIME_RFC3339,
				   &out->occurred_at, why);
	if (status == PAYLOAD_VALID)
		*count = 1;
	return status;
}

/* ---- the providers that only notify: what payhook-reconcile fetched ----
 * The object the API gave (a payment, with its refunds and chargebacks as
 * the provider lists them; a GoCardless refund), each refund or dispute in
 * it one lifecycle object read with its own fields. */

static const struct state_map mollie_refund_states[] = {
	{ "refunded", LIFECYCLE_SUCCEEDED }, { "failed", LIFECYCLE_FAILED },
	{ "canceled", LIFECYCLE_FAILED }, { NULL, LIFECYCLE_PENDING },
};
/* docs.mollie.com refunds: queued, pending, processing, refunded, failed,
 * canceled. */
static const struct rule mollie_refund = {
	.provider = CONFIG_PROVIDER_MOLLIE, .kind = LIFECYCLE_REFUND,
	.object_path = "id", .link_path = "paymentId",
	.amount_path = "amount.value", .currency_path = "amount.currency",
	.amount_form = PAYLOAD_AMOUNT_DECIMAL,
	.state_path = "status", .map = mollie_refund_states,
	.state = LIFECYCLE_PENDING, .map_default = true,
	.time_path = "createdAt", .time_form = TIME_RFC3339,
};
/* A chargeback is lost once received, won once reversed (reversedAt). */
static const struct rule mollie_chargeback = {
	.provider = CONFIG_PROVIDER_MOLLIE, .kind = LIFECYCLE_DISPUTE,
	.object_path = "id", .link_path = "paymentId",
	.amount_path = "amount.value", .currency_path = "amount.currency",
	.amount_form = PAYLOAD_AMOUNT_DECIMAL, .state = LIFECYCLE_LOST,
	.time_path = "reversedAt", .time_path2 = "createdAt",
	.time_form = TIME_RFC3339,
};
static const struct state_map mercadopago_refund_states[] = {
	{ "approved", LIFECYCLE_SUCCEEDED }, { "in_process", LIFECYCLE_PENDING },
	{ "rejected", LIFECYCLE_FAILED }, { "cancelled", LIFECYCLE_FAILED },
	{ NULL, LIFECYCLE_PENDING },
};
/* An entry of the payment's refunds: its amount a JSON number in the
 * payment's currency (currency_id, read apart). */
static const struct rule mercadopago_refund = {
	.provider = CONFIG_PROVIDER_MERCADOPAGO, .kind = LIFECYCLE_REFUND,
	.object_path = "id", .link_path = "payment_id", .id_integer = true,
	.state_path = "status", .map = mercadopago_refund_states,
	.state = LIFECYCLE_PENDING, .map_default = true,
	.time_path = "date_created", .time_form = TIME_RFC3339,
};
/* A payment charged back: one dispute per payment, lost. */
static const struct rule mercadopago_chargeback = {
	.provider = CONFIG_PROVIDER_MERCADOPAGO, .kind = LIFECYCLE_DISPUTE,
	.object_path = "id", .link_path = "id", .id_integer = true,
	.amount_path = "transaction_amount", .currency_path = "currency_id",
	.amount_form = PAYLOAD_AMOUNT_DECIMAL_NUMBER, .state = LIFECYCLE_LOST,
	.time_path = "date_last_updated", .time_path2 = "date_created",
	.time_form = TIME_RFC3339,
};
static const struct state_map gocardless_refund_states[] = {
	{ "paid", LIFECYCLE_SUCCEEDED }, { "cancelled", LIFECYCLE_FAILED },
	{ "bounced", LIFECYCLE_FAILED }, { "funds_returned", LIFECYCLE_FAILED },
	{ "failed", LIFECYCLE_FAILED }, { NULL, LIFECYCLE_PENDING },
};
/* GET /refunds/{id}: created, pending_submission, submitted, paid,
 * cancelled, bounced, funds_returned. */
static const struct rule gocardless_refund = {
	.provider = CONFIG_PROVIDER_GOCARDLESS, .kind = LIFECYCLE_REFUND,
	.object_path = "id", .link_path = "links.payment",
	.link_nullable = true,
	.amount_path = "amount", .currency_path = "currency",
	.state_path = "status", .map = gocardless_refund_states,
	.state = LIFECYCLE_PENDING, .map_default = true,
	.time_path = "created_at", .time_form = TIME_RFC3339,
};
/* A payment charged back: one dispute per payment, its state and time
 * from each of its events charged_back (lost) and chargeback_cancelled
 * (won). */
static const struct rule gocardless_chargeback = {
	.provider = CONFIG_PROVIDER_GOCARDLESS, .kind = LIFECYCLE_DISPUTE,
	.object_path = "id", .link_path = "id",
	.amount_path = "amount", .currency_path = "currency",
	.state = LIFECYCLE_LOST,
	.time_path = "created_at", .time_form = TIME_RFC3339,
};

/* Adds out[*count] by rule r from node (its own fields) when there is
 * room. */
static enum payload_status take_one(const struct rule *r,
				    struct json_object *node,
				    const struct payload_rules *rules,
				    struct lifecycle_event *out, size_t cap,
				    size_t *count, struct error *why)
{
	enum payload_status status;

	if (*count >= cap)
		return invalid(why, "more than %d lifecycle objects in one "
			       "answer", PROVIDER_LIFECYCLE_MAX);
	status = take_object(r, node, node, rules, &out[*count], why);
	if (status == PAYLOAD_VALID)
		++*count;
	return status;
}

/* The array at path of node: absent or null is none. */
static enum payload_status list_at(struct json_object *node, const char *path,
				   struct json_object **list,
				   struct error *why)
{
	*list = payload_lookup(node, path);
	if (*list == NULL)
		return PAYLOAD_VALID;
	if (!json_object_is_type(*list, json_type_array))
		return invalid(why, "%s: must be an array", path);
	return PAYLOAD_VALID;
}

/* Mollie: the payment, its refunds and chargebacks under _embedded. */
static enum payload_status read_mollie(struct json_object *node,
				       const struct payload_rules *rules,
				       struct lifecycle_event *out, size_t cap,
				       size_t *count, struct error *why)
{
	struct json_object *list;
	enum payload_status status = list_at(node, "_embedded.refunds", &list,
					     why);

	for (size_t i = 0; status == PAYLOAD_VALID && list != NULL &&
			   i < json_object_array_length(list); i++)
		status = take_one(&mollie_refund,
				  json_object_array_get_idx(list, i), rules,
				  out, cap, count, why);
	if (status == PAYLOAD_VALID)
		status = list_at(node, "_embedded.chargebacks", &list, why);
	for (size_t i = 0; status == PAYLOAD_VALID && list != NULL &&
			   i < json_object_array_length(list); i++) {
		struct json_object *entry = json_object_array_get_idx(list, i);

		status = take_one(&mollie_chargeback, entry, rules, out, cap,
				  count, why);
		if (status == PAYLOAD_VALID &&
		    payload_lookup(entry, "reversedAt") != NULL)
			out[*count - 1].state = LIFECYCLE_WON;
	}
	return status;
}

/* Mercado Pago: the payment, each entry of its refunds, and a lost
 * dispute when it is charged back. */
static enum payload_status read_mercadopago(struct json_object *node,
					    const struct payload_rules *rules,
					    struct lifecycle_event *out,
					    size_t cap, size_t *count,
					    struct error *why)
{
	struct json_object *list;
	enum payload_status status = list_at(node, "refunds", &list, why);

	for (size_t i = 0; status == PAYLOAD_VALID && list != NULL &&
			   i < json_object_array_length(list); i++) {
		struct json_object *entry = json_object_array_get_idx(list, i);
		struct lifecycle_event *e = &out[*count];

		status = take_one(&mercadopago_refund, entry, rules, out, cap,
				  count, why);
		/* The payment's currency, then the entry's amount in it. */
		if (status == PAYLOAD_VALID)
			status = payload_take_currency(node, "currency_id",
						       rules, &e->link, why);
		if (status == PAYLOAD_VALID)
			status = payload_take_amount(
				entry, "amount", PAYLOAD_AMOUNT_DECIMAL_NUMBER,
				&e->link, why);
	}
	if (status == PAYLOAD_VALID &&
	    payload_string_is(payload_lookup(node, "status"), "charged_back"))
		status = take_one(&mercadopago_chargeback, node, rules, out,
				  cap, count, why);
	return status;
}

/* GoCardless: a refund ({"refunds": ...}), or a payment ({"payments":
 * ...}) with its events, of which charged_back and chargeback_cancelled
 * make its dispute. */
static enum payload_status read_gocardless(struct json_object *node,
					   const struct payload_rules *rules,
					   struct lifecycle_event *out,
					   size_t cap, size_t *count,
					   struct error *why)
{
	struct json_object *refund = payload_lookup(node, "refunds");
	struct json_object *payment = payload_lookup(node, "payments");
	struct json_object *events;
	enum payload_status status;

	if (json_object_is_type(refund, json_type_object)) {
		if (payload_lookup(refund, "links.payment") == NULL)
			return PAYLOAD_VALID; /* a mandate's: no payment */
		return take_one(&gocardless_refund, refund, rules, out, cap,
				count, why);
	}
	if (!json_object_is_type(payment, json_type_object))
		return PAYLOAD_VALID;
	status = list_at(node, "events", &events, why);
	for (size_t i = 0; status == PAYLOAD_VALID && events != NULL &&
			   i < json_object_array_length(events); i++) {
		struct json_object *event = json_object_array_get_idx(events, i);
		struct json_object *action = payload_lookup(event, "action");
		bool lost = payload_string_is(action, "charged_back");
		struct lifecycle_event *e = &out[*count];

		if (!lost && !payload_string_is(action, "chargeback_cancelled"))
			continue;
		status = take_one(&gocardless_chargeback, payment, rules, out,
				  cap, count, why);
		if (status == PAYLOAD_VALID) {
			e->state = lost ? LIFECYCLE_LOST : LIFECYCLE_WON;
			status = take_time(event, "created_at", TIME_RFC3339,
					   &e->occurred_at, why);
		}
	}
	return status;
}

/* The providers whose lifecycle objects are read by the body's shape
 * rather than by an event's type: Shopify (its topic is unsigned) and the
 * providers that only notify (what was fetched has no event type). */
static const struct {
	enum config_provider provider;
	enum payload_status (*read)(struct json_object *node,
				    const struct payload_rules *rules,
				    struct lifecycle_event *out, size_t cap,
				    size_t *count, struct error *why);
} shaped[] = {
	{ CONFIG_PROVIDER_MOLLIE, read_mollie },
	{ CONFIG_PROVIDER_MERCADOPAGO, read_mercadopago },
	{ CONFIG_PROVIDER_GOCARDLESS, read_gocardless },
};

#define SHAPED_COUNT (sizeof(shaped) / sizeof(shaped[0]))

enum payload_status provider_lifecycle_read(enum config_provider provider,
					    struct json_object *node,
					    const struct payload_rules *rules,
					    struct lifecycle_event *out,
					    size_t cap, size_t *count,
					    struct error *why)
{
	const struct rule *r;
	struct json_object *list;
	enum payload_status status;
	size_t n;

	*count = 0;
	/* The caller keeps room for one at least: Adyen's items are as many
	 * as PROVIDER_LIFECYCLE_MAX at most, every other body is one event. */
	if (cap == 0)
		return invalid(why, "more than %d lifecycle events in one "
			       "request", PROVIDER_LIFECYCLE_MAX);
	if (provider == CONFIG_PROVIDER_SHOPIFY)
		return read_shopify(node, rules, out, count, why);
	for (size_t i = 0; i < SHAPED_COUNT; i++)
		if (shaped[i].provider == provider)
			return shaped[i].read(node, rules, out, cap, count,
					      why);
	r = find_rule(provider, node);
	if (r == NULL)
		return PAYLOAD_VALID;
	/* A refund of no PaymentIntent (Stripe) is of no payment payhook
	 * records. */
	if (r->link_nullable && payload_lookup(node, r->link_path) == NULL)
		return PAYLOAD_VALID;
	if (r->each_path == NULL) {
		status = take_object(r, node, node, rules, out, why);
		if (status == PAYLOAD_VALID)
			*count = 1;
		return status;
	}
	list = payload_lookup(node, r->each_path);
	if (!json_object_is_type(list, json_type_array) ||
	    json_object_array_length(list) == 0)
		return invalid(why, "%s: must be a non-empty array",
			       r->each_path);
	n = json_object_array_length(list);
	if (n > cap)
		return invalid(why, "%s: more than %d entries", r->each_path,
			       PROVIDER_LIFECYCLE_MAX);
	for (size_t i = 0; i < n; i++) {
		status = take_object(r, node, json_object_array_get_idx(list, i),
				     rules, &out[i], why);
		if (status != PAYLOAD_VALID)
			return status;
	}
	*count = n;
	return PAYLOAD_VALID;
}

const char *provider_lifecycle_test_none(enum config_provider provider)
{
	/* The providers with no lifecycle event payhook reads, and why. */
	static const char *const none[CONFIG_PROVIDER_COUNT] = {
		[CONFIG_PROVIDER_GENERIC] = "the generic_ keys describe "
					    "payments only",
	};

	return (unsigned)provider < CONFIG_PROVIDER_COUNT ? none[provider]
							  : NULL;
}

bool provider_lifecycle_test_reads(enum config_provider provider)
{
	if (provider == CONFIG_PROVIDER_SHOPIFY)
		return true; /* read_shopify: by the body's shape */
	for (size_t i = 0; i < SHAPED_COUNT; i++)
		if (shaped[i].provider == provider)
			return true;
	for (size_t i = 0; i < RULE_COUNT; i++)
		if (rules_table[i].provider == provider)
			return true;
	return false;
}
