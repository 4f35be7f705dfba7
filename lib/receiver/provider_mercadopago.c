/* provider_mercadopago.c - Mercado Pago's webhooks (see
 * provider_mercadopago.h), as mercadopago/devsite-docs@00648efe
 * (guides/additional-content/your-integrations/webhooks.en.md) and
 * mercadopago/sdk-nodejs@4339894c (src/utils/webhook/index.ts) describe
 * them: x-signature split on ',' into trimmed key=value parts (keys in
 * any case), the manifest's parts left out when the notification lacks
 * them (the SDK's buildManifest), data.id used in lower case (the Orders
 * page's rule; payment ids are digits). ts is signed but not held to a
 * tolerance: its unit differs between the documents (seconds, or
 * milliseconds), and a retry must not be refused for its age; what it
 * could let through is an id to fetch, which the API judges.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "provider_mercadopago.h"
#include "provider_notify.h"
#include "provider_row.h"

const char *const provider_mercadopago_headers[] = { "x-request-id", NULL };

/* The longest value of the manifest's parts payhook reads. */
#define PART_MAX 128
#define MANIFEST_MAX (3 * PART_MAX + 32)

/* x-signature's ts and v1 (v1 "" when absent). Returns 0, or -1 when the
 * header is not of the documented form. */
static int split_signature(const char *header, char ts[PART_MAX + 1],
			   char v1[PART_MAX + 1])
{
	const char *at = header;

	ts[0] = v1[0] = '\0';
	while (*at != '\0') {
		const char *end = strchr(at, ',');
		size_t len = end != NULL ? (size_t)(end - at) : strlen(at);
		const char *eq = memchr(at, '=', len);
		const char *k = at, *v;
		size_t klen, vlen;

		at += len + (end != NULL ? 1 : 0);
		if (eq == NULL)
			continue;
		klen = (size_t)(eq - k);
		v = eq + 1;
		vlen = len - klen - 1;
		while (klen > 0 && (*k == ' ' || *k == '\t'))
			k++, klen--;
		while (klen > 0 && (k[klen - 1] == ' ' || k[klen - 1] == '\t'))
			klen--;
		while (vlen > 0 && (*v == ' ' || *v == '\t'))
			v++, vlen--;
		while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			vlen--;
		if (vlen > PART_MAX)
			return -1;
		if (klen == 2 && strncasecmp(k, "ts", 2) == 0) {
			memcpy(ts, v, vlen);
			ts[vlen] = '\0';
		} else if (klen == 2 && strncasecmp(k, "v1", 2) == 0) {
			memcpy(v1, v, vlen);
			v1[vlen] = '\0';
		}
	}
	return ts[0] != '\0' && v1[0] != '\0' ? 0 : -1;
}

/* The manifest of data.id (NULL or "": left out), request id (the same)
 * and ts into out (MANIFEST_MAX bytes). Returns its length, or -1 when a
 * part is too long. */
static int manifest(const char *data_id, const char *request_id,
		    const char *ts, char *out)
{
	char id[PART_MAX + 1];
	size_t n = 0;
	int w;

	out[0] = '\0';
	if (data_id != NULL && data_id[0] != '\0') {
		if (strlen(data_id) > PART_MAX)
			return -1;
		for (size_t i = 0; data_id[i] != '\0'; i++)
			id[i] = (char)(data_id[i] >= 'A' && data_id[i] <= 'Z' ?
					       data_id[i] + 32 : data_id[i]);
		id[strlen(data_id)] = '\0';
		n += (size_t)snprintf(out + n, MANIFEST_MAX - n, "id:%s;", id);
	}
	if (request_id != NULL && request_id[0] != '\0') {
		if (strlen(request_id) > PART_MAX)
			return -1;
		n += (size_t)snprintf(out + n, MANIFEST_MAX - n,
				      "request-id:%s;", request_id);
	}
	w = snprintf(out + n, MANIFEST_MAX - n, "ts:%s;", ts);
	if (w < 0 || (size_t)w >= MANIFEST_MAX - n)
		return -1;
	return (int)(n + (size_t)w);
}

/* The query's data.id (decoded) into out, "" when absent; -1 when
 * malformed. */
static long query_data_id(const struct request *req, char out[PART_MAX + 1])
{
	const char *query = request_query(req);
	long n = request_form_value(query, strlen(query), "data.id", out,
				    PART_MAX + 1);

	if (n == REQUEST_FORM_ABSENT) {
		out[0] = '\0';
		return 0;
	}
	return n;
}

static enum signature_status mp_verify(const struct provider *p,
				       const struct request *req,
				       const char *body, size_t len,
				       time_t now, bool replay,
				       const char **reason)
{
	const char *header = provider_row_header(req, p->signature_param);
	const char *request_id = provider_row_header(req, p->more_params[0]);
	char ts[PART_MAX + 1], v1[PART_MAX + 1], data_id[PART_MAX + 1];
	char text[MANIFEST_MAX];
	struct signature_part part;
	int n;

	(void)body;
	(void)len;
	(void)now;
	(void)replay;
	if (header == NULL || header[0] == '\0') {
		*reason = p->signature_missing;
		return SIGNATURE_MISSING;
	}
	if (split_signature(header, ts, v1) != 0) {
		*reason = "x-signature: ts and v1 required";
		return SIGNATURE_MALFORMED;
	}
	if (query_data_id(req, data_id) < 0 ||
	    (n = manifest(data_id, request_id, ts, text)) < 0) {
		*reason = "data.id or x-request-id: not of the documented form";
		return SIGNATURE_MALFORMED;
	}
	part = (struct signature_part){ text, (size_t)n };
	return signature_verify_digest(p->ring, v1, NULL, SIGNATURE_HEX, &part,
				       1, p->signature_missing, reason);
}

static enum provider_status invalid(struct error *why, const char *reason)
{
	error_set(why, "%s", reason);
	return PROVIDER_INVALID;
}

/* The notification: its topic (the query's type, else the body's), the
 * signed data.id of the query, the body's id as the event id. */
static enum provider_status mp_notice(const struct provider *p,
				      const struct request *req,
				      struct payload_parser *parser,
				      const char *body, size_t len,
				      struct provider_batch *out,
				      struct error *why)
{
	const char *query = request_query(req);
	char data_id[PART_MAX + 1], type[PART_MAX + 1];
	struct json_object *root = NULL, *action, *event;
	enum provider_status status;
	const char *event_text = NULL;
	long n, t;

	(void)p;
	status = provider_row_field_outcome(
		payload_parse_json(parser, body, len, &root, why));
	if (status != PROVIDER_PAYMENTS)
		return status;
	t = request_form_value(query, strlen(query), "type", type,
			       sizeof(type));
	if (t == REQUEST_FORM_ABSENT) {
		struct json_object *bt = payload_lookup(root, "type");

		snprintf(type, sizeof(type), "%s",
			 json_object_is_type(bt, json_type_string) ?
				 json_object_get_string(bt) : "");
	} else if (t < 0) {
		json_object_put(root);
		return invalid(why, "type: not of the documented form");
	}
	action = payload_lookup(root, "action");
	snprintf(out->event_type, sizeof(out->event_type), "%.*s",
		 PROVIDER_EVENT_TYPE_MAX,
		 json_object_is_type(action, json_type_string) ?
			 json_object_get_string(action) : type);
	if (strcmp(type, "payment") != 0) {
		json_object_put(root);
		return PROVIDER_IGNORED; /* an order, a subscription ... */
	}
	n = query_data_id(req, data_id);
	if (n <= 0 || !provider_notify_id(data_id, (size_t)n, "", "0") ||
	    n > 20) {
		json_object_put(root);
		return invalid(why, n == 0 ? "data.id: required in the query "
					     "(the signed payment id)"
					   : "data.id: not a Mercado Pago "
					     "payment id (digits)");
	}
	event = payload_lookup(root, "id");
	if (json_object_is_type(event, json_type_string) ||
	    json_object_is_type(event, json_type_int))
		event_text = json_object_get_string(event);
	status = provider_notify_add(out, data_id, (size_t)n, event_text,
				     event_text != NULL ? strlen(event_text)
							: 0, why);
	json_object_put(root);
	return status;
}

/* Signs the notification body[0..len): data.id from its data.id (a
 * sender posts it in the query too), in->id as x-request-id,
 * in->timestamp as ts. */
static int mp_sign(const struct provider *p,
		   const struct provider_sign_input *in, const char *body,
		   size_t len, struct provider_headers *h, char **signed_body,
		   struct error *err)
{
	struct json_object *root, *id;
	char text[MANIFEST_MAX], data_id[PART_MAX + 1] = "";
	char digest[SIGNATURE_TEXT_MAX], value[PROVIDER_HEADER_VALUE_MAX];
	struct signature_part part;
	int n;

	(void)signed_body;
	if (provider_row_need(in->id, "a request id (--id)", err) != 0 ||
	    provider_row_need(in->timestamp, "a timestamp", err) != 0)
		return -1;
	root = json_tokener_parse(body != NULL ? body : "");
	(void)len;
	id = payload_lookup(root, "data.id");
	if (json_object_is_type(id, json_type_string) ||
	    json_object_is_type(id, json_type_int))
		snprintf(data_id, sizeof(data_id), "%s",
			 json_object_get_string(id));
	json_object_put(root);
	n = manifest(data_id, in->id, in->timestamp, text);
	if (n < 0)
		return error_set(err, "data.id or the request id is too long");
	part = (struct signature_part){ text, (size_t)n };
	if (signature_sign_digest(p->ring, NULL, SIGNATURE_HEX, &part, 1,
				  digest, sizeof(digest), err) != 0)
		return -1;
	if ((size_t)snprintf(value, sizeof(value), "ts=%.64s,v1=%s",
			     in->timestamp, digest) >= sizeof(value))
		return error_set(err, "x-signature does not fit");
	if (provider_row_add_header(h, "x-signature", value, err) != 0)
		return -1;
	return provider_row_add_header(h, "x-request-id", in->id, err);
}

static int mp_check_config(const struct config *cfg, struct error *err)
{
	return provider_notify_check_config(CONFIG_PROVIDER_MERCADOPAGO, cfg,
					    err);
}

const struct provider_scheme provider_scheme_mercadopago = {
	.check_config = mp_check_config,
	.verify = mp_verify,
	.notice = mp_notice,
	/* What was fetched: the payment, its refunds in it. */
	.read = provider_notify_read_object,
	.sign = mp_sign,
};
