/* provider_gocardless.c - GoCardless's webhooks (see
 * provider_gocardless.h), as gocardless/gocardless-nodejs@d15252ad
 * (src/webhooks.ts: the hex HMAC-SHA256 of the raw body in
 * Webhook-Signature, compared in constant time) and the API reference's
 * events describe them. An event of resource_type payments whose action
 * is confirmed, paid_out, charged_back or chargeback_cancelled names a
 * payment to fetch (links.payment, PM...), one of refunds a refund
 * (links.refund, RF...); every event's id is EV.... Other events are
 * read and left alone (GoCardless: "Webhooks about unknown events should
 * be ignored").
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "provider_gocardless.h"
#include "provider_notify.h"
#include "provider_row.h"

/* The payments actions that change what payhook records. */
static const char *const payment_actions[] = {
	"confirmed", "paid_out", "charged_back", "chargeback_cancelled", NULL,
};

static enum signature_status gc_verify(const struct provider *p,
				       const struct request *req,
				       const char *body, size_t len,
				       time_t now, bool replay,
				       const char **reason)
{
	struct signature_part part = { body, len };

	(void)now;
	(void)replay;
	return signature_verify_digest(p->ring,
				       provider_row_header(req,
							   p->signature_param),
				       NULL, SIGNATURE_HEX, &part, 1,
				       p->signature_missing, reason);
}

static int gc_sign(const struct provider *p,
		   const struct provider_sign_input *in, const char *body,
		   size_t len, struct provider_headers *h, char **signed_body,
		   struct error *err)
{
	struct signature_part part = { body, len };
	char value[PROVIDER_HEADER_VALUE_MAX];

	(void)signed_body;
	if (signature_sign_digest(p->ring, NULL, SIGNATURE_HEX, &part, 1, value,
				  sizeof(value), err) != 0)
		return -1;
	return provider_row_sign_headers(p, in, value, h, err);
}

static enum provider_status invalid(struct error *why, const char *what,
				    size_t index)
{
	error_set(why, "events[%zu]: %s", index, what);
	return PROVIDER_INVALID;
}

/* The string member name of obj, or NULL. */
static const char *string_of(struct json_object *obj, const char *path)
{
	struct json_object *v = payload_lookup(obj, path);

	return json_object_is_type(v, json_type_string) ?
		       json_object_get_string(v) : NULL;
}

/* Event i: checked, and its object added to out when it names one payhook
 * fetches. */
static enum provider_status take_event(struct json_object *event, size_t i,
				       struct provider_batch *out,
				       struct error *why)
{
	const char *id = string_of(event, "id");
	const char *type = string_of(event, "resource_type");
	const char *action = string_of(event, "action");
	const char *object = NULL, *prefix = NULL;

	if (!json_object_is_type(event, json_type_object))
		return invalid(why, "not an event object", i);
	if (id == NULL || !provider_notify_id(id, strlen(id), "EV", "A0"))
		return invalid(why, "id: not a GoCardless event id (EV...)", i);
	if (type == NULL || action == NULL)
		return invalid(why, "resource_type and action required", i);
	if (out->event_type[0] == '\0')
		snprintf(out->event_type, sizeof(out->event_type), "%s.%s",
			 type, action);
	if (strcmp(type, "payments") == 0) {
		for (size_t a = 0; payment_actions[a] != NULL; a++)
			if (strcmp(action, payment_actions[a]) == 0)
				prefix = "PM";
		object = prefix != NULL ? string_of(event, "links.payment")
					: NULL;
	} else if (strcmp(type, "refunds") == 0) {
		prefix = "RF";
		object = string_of(event, "links.refund");
	}
	if (prefix == NULL)
		return PROVIDER_IGNORED;
	if (object == NULL ||
	    !provider_notify_id(object, strlen(object), prefix, "A0"))
		return invalid(why, strcmp(prefix, "PM") == 0 ?
				       "links.payment: not a payment id (PM...)" :
				       "links.refund: not a refund id (RF...)",
			       i);
	return provider_notify_add(out, object, strlen(object), id, strlen(id),
				   why);
}

/* Every event of events: the objects to fetch, or PROVIDER_IGNORED when
 * none names one. */
static enum provider_status take_events(struct json_object *events,
					struct provider_batch *out,
					struct error *why)
{
	if (!json_object_is_type(events, json_type_array)) {
		error_set(why, "events: must be an array");
		return PROVIDER_INVALID;
	}
	for (size_t i = 0; i < json_object_array_length(events); i++) {
		enum provider_status st = take_event(
			json_object_array_get_idx(events, i), i, out, why);

		if (st != PROVIDER_NOTIFIED && st != PROVIDER_IGNORED)
			return st;
	}
	return out->notice_count > 0 ? PROVIDER_NOTIFIED : PROVIDER_IGNORED;
}

static enum provider_status gc_notice(const struct provider *p,
				      const struct request *req,
				      struct payload_parser *parser,
				      const char *body, size_t len,
				      struct provider_batch *out,
				      struct error *why)
{
	struct json_object *root = NULL;
	enum provider_status status;

	(void)p;
	(void)req;
	status = provider_row_field_outcome(
		payload_parse_json(parser, body, len, &root, why));
	if (status != PROVIDER_PAYMENTS)
		return status;
	status = take_events(payload_lookup(root, "events"), out, why);
	json_object_put(root);
	return status;
}

/* What payhook-reconcile fetched ({"payments": ...} with the payment's
 * events, {"refunds": ...}), or an event its list of events gave (one to
 * queue, as a webhook's). */
static enum provider_status gc_read(const struct provider *p,
				    const struct request *req,
				    struct json_object *root,
				    enum provider_read_mode mode,
				    struct provider_batch *out,
				    struct error *why)
{
	enum provider_status status;

	if (payload_lookup(root, "resource_type") != NULL) {
		status = take_event(root, 0, out, why);
		return status;
	}
	return provider_notify_read_object(p, req, root, mode, out, why);
}

static int gc_check_config(const struct config *cfg, struct error *err)
{
	return provider_notify_check_config(CONFIG_PROVIDER_GOCARDLESS, cfg,
					    err);
}

const struct provider_scheme provider_scheme_gocardless = {
	.check_config = gc_check_config,
	.verify = gc_verify,
	.notice = gc_notice,
	.read = gc_read,
	.sign = gc_sign,
};
