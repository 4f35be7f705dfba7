/* provider_row.c - what every signature scheme does with a profile's row
 * (see provider_row.h).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "provider_row.h"

const char *provider_row_header(const struct request *req, const char *param)
{
	return param[0] != '\0' ? request_param(req, param) : NULL;
}

enum provider_status provider_row_signature_outcome(enum signature_status status,
						    const char *reason,
						    struct error *why)
{
	if (status == SIGNATURE_VALID)
		return PROVIDER_PAYMENTS;
	error_set(why, "%s", reason != NULL ? reason : "bad signature");
	return status == SIGNATURE_ERROR ? PROVIDER_ERROR :
	       status == SIGNATURE_UNAVAILABLE ? PROVIDER_UNAVAILABLE :
						 PROVIDER_UNAUTHORIZED;
}

enum provider_status provider_row_field_outcome(enum payload_status status)
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

/* Whether the event type is one of the white-space separated values
 * (generic_event_values). */
static bool one_of(const char *values, struct json_object *type)
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

enum provider_status provider_row_classify(const struct provider *p,
					   const struct request *req,
					   struct json_object *node,
					   struct provider_batch *out,
					   struct error *why)
{
	const struct profile *row = &p->profile;
	struct json_object *type, *status;
	bool payment;

	if (row->event_header != NULL) {
		/* A header the provider does not sign (Shopify's topic) only
		 * narrows: the signed status_path below must agree, so a
		 * signed unpaid order resent with another topic is ignored. */
		const char *topic = provider_row_header(req, p->event_param);

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
		payment = row->payment_event_list ?
				  one_of(row->payment_event, type) :
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
		const char *text = provider_row_header(req, p->event_id_param);

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

enum provider_status provider_row_take_lifecycle(const struct provider *p,
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

	status = provider_row_field_outcome(provider_lifecycle_read(
		row->id, node, &p->set->rules, first,
		PROVIDER_LIFECYCLE_MAX - out->lifecycle_count, &n, why));
	if (status != PROVIDER_PAYMENTS || n == 0)
		return status;
	for (size_t i = 0; i < n; i++) {
		first[i].link.provider = config_provider_name(row->id);
		status = provider_row_field_outcome(
			take_event_id(p, req, root, &first[i].link, why));
		if (status != PROVIDER_PAYMENTS)
			return status;
	}
	out->lifecycle_count += n;
	/* For the log: the provider's event type, else the kind. */
	type = row->event_path != NULL ?
		       json_object_get_string(payload_lookup(node,
							     row->event_path)) :
		       NULL;
	/* A fetched object of a provider that only notifies may lack the
	 * row's event (a GoCardless refund has no payment status). */
	if (type == NULL)
		type = lifecycle_kind_name(first[0].kind);
	note_event_type(out, type, strlen(type));
	return PROVIDER_IGNORED;
}

enum provider_status provider_row_take_payment(const struct provider *p,
					       const struct request *req,
					       struct json_object *root,
					       struct json_object *node,
					       struct payment *out,
					       struct error *why)
{
	const struct profile *row = &p->profile;
	const struct payload_rules *rules = &p->set->rules;
	enum payload_status status;

	memset(out, 0, sizeof(*out));
	out->provider = config_provider_name(row->id);
	status = payload_take_transaction_id(node, row->id_path,
					     row->id_integer, rules, out, why);
	if (status == PAYLOAD_VALID)
		status = payload_take_money(node, row->amount_path,
					    row->amount_form,
					    row->currency_path, rules, out,
					    why);
	if (status == PAYLOAD_VALID)
		status = take_event_id(p, req, root, out, why);
	return provider_row_field_outcome(status);
}

int provider_row_add_header(struct provider_headers *h, const char *name,
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

int provider_row_need(const char *value, const char *what, struct error *err)
{
	if (value == NULL || value[0] == '\0')
		return error_set(err, "%s is needed to sign", what);
	return 0;
}

int provider_row_sign_headers(const struct provider *p,
			      const struct provider_sign_input *in,
			      const char *signature, struct provider_headers *h,
			      struct error *err)
{
	const struct profile *row = &p->profile;

	if (signature != NULL &&
	    provider_row_add_header(h, row->signature_header, signature,
				    err) != 0)
		return -1;
	if (row->event_header != NULL &&
	    provider_row_add_header(h, row->event_header,
				    in->topic != NULL ? in->topic
						      : row->payment_event,
				    err) != 0)
		return -1;
	if (row->event_id_header != NULL && in->id != NULL &&
	    provider_row_add_header(h, row->event_id_header, in->id, err) != 0)
		return -1;
	return 0;
}
