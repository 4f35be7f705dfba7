/* handoff.c - the JSON handed on, its idempotency key, and one attempt to
 * deliver it through the target's transport (see handoff.h). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "handoff.h"
#include "signature.h"
#include "transport_pick.h"

struct handoff {
	const struct config *cfg;
	struct transport *transport;      /* HTTP POST or command */
};

int handoff_check_config(const struct config *cfg, struct error *err)
{
	bool url = cfg->dispatch_url != NULL && cfg->dispatch_url[0] != '\0';
	bool command = cfg->dispatch_command != NULL &&
		       cfg->dispatch_command[0] != '\0';

	if (url && command)
		return error_set(err, "both dispatch_url and dispatch_command "
				 "are set: set exactly one of them (the URL to "
				 "POST each payment to, or the command to run "
				 "per payment)");
	if (!url && !command)
		return error_set(err, "neither dispatch_url nor "
				 "dispatch_command is set: set exactly one of "
				 "them (the URL to POST each payment to, or the "
				 "command to run per payment)");
	/* The URL is never quoted: it may carry a token. */
	if (url && !transport_url_valid(cfg->dispatch_url))
		return error_set(err, "dispatch_url must start with http:// or "
				 "https://");
	if (command && cfg->dispatch_secret.count > 0)
		return error_set(err, "dispatch_secret signs HTTP POSTs: it has "
				 "no use with dispatch_command (remove it, or "
				 "set dispatch_url instead)");
	return 0;
}

struct handoff *handoff_new(const struct config *cfg, struct error *err)
{
	struct transport_options options = {
		.url = cfg->dispatch_url,
		.command = cfg->dispatch_command,
		.timeout_ms = cfg->dispatch_timeout_ms,
		/* The first secret signs; the others are for the receiver's
		 * rotation. */
		.secret = cfg->dispatch_secret.count > 0
				  ? cfg->dispatch_secret.items[0]
				  : NULL,
		.key_header = "Idempotency-Key",
		.key_variable = "PAYHOOK_IDEMPOTENCY_KEY=",
		.env_prefix = "PAYHOOK_",
		.user_agent = "payhook-dispatch/" PACKAGE_VERSION,
		.program = "payhook-dispatch",
	};
	struct handoff *h = calloc(1, sizeof(*h));
	struct error terr;

	if (h == NULL) {
		error_set(err, "handoff: out of memory");
		return NULL;
	}
	h->cfg = cfg;
	h->transport = transport_pick(&options, &terr);
	if (h->transport == NULL) {
		/* A bad secret is the likely cause: its key is named. */
		error_set(err, "%s%s", options.secret != NULL
				 ? "dispatch_secret or dispatch_url: " : "",
			  terr.message);
		free(h);
		return NULL;
	}
	return h;
}

void handoff_free(struct handoff *h)
{
	if (h == NULL)
		return;
	transport_free(h->transport);
	free(h);
}

int handoff_idempotency_key(const struct handoff_row *p, char *out,
			    size_t cap, struct error *err)
{
	const struct handoff_row_change *c = &p->change;
	size_t expected = strlen("payhook::") + strlen(p->provider) +
			  p->transaction_id_len;
	char n[24] = "";
	int len;

	if (p->kind == HANDOFF_ROW_CHANGE) {
		/* The object's first time in a state has no :n, so a key
		 * never changes once a change exists. */
		if (c->n > 1)
			snprintf(n, sizeof(n), ":%lu", c->n);
		len = snprintf(out, cap, "payhook:%s:%.*s:%s:%.*s:%s%s",
			       p->provider, (int)p->transaction_id_len,
			       p->transaction_id, c->kind,
			       (int)c->object_id_len, c->object_id, c->state,
			       n);
		expected += strlen("::") + strlen(c->kind) + c->object_id_len +
			    strlen(":") + strlen(c->state) + strlen(n);
	} else {
		len = snprintf(out, cap, "payhook:%s:%.*s", p->provider,
			       (int)p->transaction_id_len, p->transaction_id);
	}
	/* A NUL inside an id would cut it short: compare with the whole. */
	if (len < 0 || (size_t)len >= cap || (size_t)len != expected ||
	    !signature_id_valid(out)) {
		if (cap > 0)
			out[0] = '\0';
		return error_set(err, "the idempotency key of this %s is not "
				 "1-255 bytes of visible ASCII (it goes into a "
				 "header): it cannot be handed on",
				 p->kind == HANDOFF_ROW_CHANGE ? "change"
							       : "payment");
	}
	return 0;
}

/* True when text[0..len) is well-formed UTF-8: no overlong forms, no
 * surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const unsigned char *text, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = text[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			n = 1;
			cp = c & 0x1F;
		} else if (c >= 0xE0 && c <= 0xEF) {
			n = 2;
			cp = c & 0x0F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((text[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (text[i + k] & 0x3F);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += n + 1;
	}
	return true;
}

/* Adds key = value to obj, which takes value (NULL: out of memory, and
 * JSON's null is added with json_object_object_add directly). Returns 0, or
 * -1 with value freed. */
static int add_value(json_object *obj, const char *key, json_object *value)
{
	if (value == NULL)
		return -1;
	if (json_object_object_add(obj, key, value) != 0) {
		json_object_put(value);
		return -1;
	}
	return 0;
}

/* Adds key = a new string of text[0..len) to obj. Returns 0, or -1. */
static int add_string(json_object *obj, const char *key, const char *text,
		      size_t len)
{
	if (len > INT32_MAX)
		return -1;
	return add_value(obj, key, json_object_new_string_len(text, (int)len));
}

/* Adds key = value (an unsigned JSON integer) to obj. Returns 0, or -1. */
static int add_uint(json_object *obj, const char *key, uint64_t value)
{
	return add_value(obj, key, json_object_new_uint64(value));
}

/* Why a change's amount counts for nothing in its payment's totals. */
#define NOT_COUNTED_CURRENCY "currency differs from the payment's"

/* Adds what a change carries beside a payment's fields: its state and
 * object, n, the payment's totals, and whether the change counts in them
 * (counted, with not_counted_reason when not). Returns 0, or -1 (out of
 * memory). */
static int add_change(json_object *obj, const struct handoff_row_change *c)
{
	if (add_value(obj, "counted", json_object_new_boolean(c->counted)) != 0 ||
	    (c->counted
		     ? json_object_object_add(obj, "not_counted_reason", NULL)
		     : add_string(obj, "not_counted_reason",
				  NOT_COUNTED_CURRENCY,
				  strlen(NOT_COUNTED_CURRENCY))) != 0)
		return -1;
	if (add_string(obj, "state", c->state, strlen(c->state)) != 0 ||
	    add_string(obj, "object_id", c->object_id, c->object_id_len) != 0 ||
	    add_uint(obj, "n", c->n) != 0 ||
	    add_uint(obj, "refunded_amount", c->refunded_amount) != 0)
		return -1;
	/* No dispute: null. */
	if (c->dispute_state[0] != '\0'
		    ? add_string(obj, "dispute_state", c->dispute_state,
				 strlen(c->dispute_state)) != 0
		    : json_object_object_add(obj, "dispute_state", NULL) != 0)
		return -1;
	return add_value(obj, "cancelled", json_object_new_boolean(c->cancelled));
}

/* handoff_test_body_new; *not_utf8 tells a field that can never be sent from
 * running out of memory, which may pass. */
static char *body_new(const struct handoff_row *p, size_t *len,
		      bool *not_utf8, struct error *err)
{
	bool change = p->kind == HANDOFF_ROW_CHANGE;
	const char *type = change ? p->change.kind : "payment";
	json_object *obj = NULL;
	const char *text;
	char *body = NULL;
	size_t text_len = 0;

	/* json-c copies bytes of 0x80 and above as they are: a field that is
	 * not UTF-8 would make the whole body invalid JSON. payhook checked
	 * the body it received, so only a row written by other means gets
	 * here. */
	if (!utf8_valid((const unsigned char *)p->transaction_id,
			p->transaction_id_len) ||
	    (p->event_id != NULL &&
	     !utf8_valid((const unsigned char *)p->event_id, p->event_id_len)) ||
	    (p->payload != NULL &&
	     !utf8_valid((const unsigned char *)p->payload, p->payload_len)) ||
	    (change &&
	     !utf8_valid((const unsigned char *)p->change.object_id,
			 p->change.object_id_len))) {
		*not_utf8 = true;
		error_set(err, "the transaction id, object id, event id or "
			  "payload is not valid UTF-8: no JSON string can "
			  "carry it");
		return NULL;
	}
	obj = json_object_new_object();
	if (obj == NULL)
		goto oom;
	if (add_string(obj, "type", type, strlen(type)) != 0 ||
	    add_string(obj, "provider", p->provider, strlen(p->provider)) != 0 ||
	    add_string(obj, "transaction_id", p->transaction_id,
		       p->transaction_id_len) != 0)
		goto oom;
	if (add_uint(obj, "amount", p->amount) != 0)
		goto oom;
	if (add_string(obj, "currency", p->currency, strlen(p->currency)) != 0)
		goto oom;
	/* A NULL value is JSON's null. */
	if (p->event_id != NULL ? add_string(obj, "event_id", p->event_id,
					     p->event_id_len) != 0
				: json_object_object_add(obj, "event_id", NULL) != 0)
		goto oom;
	if (add_string(obj, "received_at", p->received_at,
		       strlen(p->received_at)) != 0 ||
	    add_string(obj, "source",
		       p->source[0] != '\0' ? p->source : "webhook",
		       strlen(p->source[0] != '\0' ? p->source : "webhook")) != 0 ||
	    (p->payload != NULL
		     ? add_string(obj, "payload", p->payload, p->payload_len)
		     : json_object_object_add(obj, "payload", NULL)) != 0)
		goto oom;
	if (change && add_change(obj, &p->change) != 0)
		goto oom;
	text = json_object_to_json_string_length(
		obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
		&text_len);
	if (text == NULL)
		goto oom;
	body = malloc(text_len + 1);
	if (body == NULL)
		goto oom;
	memcpy(body, text, text_len + 1);
	*len = text_len;
	json_object_put(obj);
	return body;
oom:
	json_object_put(obj);
	error_set(err, "handoff: out of memory building the JSON body");
	return NULL;
}

char *handoff_test_body_new(const struct handoff_row *p, size_t *len,
			    struct error *err)
{
	bool not_utf8 = false;

	return body_new(p, len, &not_utf8, err);
}

int handoff_deliver(struct handoff *h, const struct handoff_row *p,
		    struct transport_outcome *out, struct error *err)
{
	char key[HANDOFF_KEY_MAX];
	char *body;
	size_t body_len = 0;
	bool not_utf8 = false;
	int rc;

	transport_outcome_init(out);
	if (handoff_idempotency_key(p, key, sizeof(key), err) != 0) {
		out->permanent = true;
		transport_detail_set(out, err->message, "", 0);
		return -1;
	}
	body = body_new(p, &body_len, &not_utf8, err);
	if (body == NULL) {
		/* Out of memory may pass; bytes that are not UTF-8 stay. */
		out->permanent = not_utf8;
		transport_detail_set(out, err->message, "", 0);
		return -1;
	}
	rc = transport_send(h->transport, key, body, body_len, out, err);
	free(body);
	return rc;
}
