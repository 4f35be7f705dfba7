/* inbox.c - noting and keeping a delivery payhook did not record (see
 * inbox.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "inbox.h"
#include "inbox_store.h"

struct inbox {
	struct inbox_store *store;
	/* The delivery noted: pending until inbox_keep. */
	bool pending, unauthorized;
	const struct provider *provider;
	int64_t received_us;
	char reason[RESPONSE_REASON_MAX + PROVIDER_EVENT_TYPE_MAX + 32];
	struct json_object *headers; /* the signature headers; NULL: none */
};

struct inbox *inbox_new(const struct config *cfg, struct error *err)
{
	struct inbox *in = calloc(1, sizeof(*in));

	if (in == NULL) {
		error_set(err, "inbox: out of memory");
		return NULL;
	}
	in->store = inbox_store_new(cfg, err);
	if (in->store == NULL) {
		free(in);
		return NULL;
	}
	return in;
}

void inbox_free(struct inbox *in)
{
	if (in == NULL)
		return;
	json_object_put(in->headers);
	inbox_store_free(in->store);
	free(in);
}

int inbox_check(struct inbox *in, struct error *err)
{
	return inbox_store_check(in->store, err);
}

bool inbox_wants(const struct result *r)
{
	return r->outcome == OUTCOME_IGNORED ||
	       r->outcome == OUTCOME_UNAUTHORIZED;
}

void inbox_note(struct inbox *in, const struct provider *provider,
		const struct request *req, const struct result *r,
		const char *event_type)
{
	const char *names[PROVIDER_HEADER_PARAMS_MAX];
	size_t n = provider_header_params(provider, names);
	struct timespec now;

	json_object_put(in->headers);
	in->headers = json_object_new_object();
	for (size_t i = 0; in->headers != NULL && i < n; i++) {
		const char *value = request_param(req, names[i]);

		if (value != NULL)
			json_object_object_add(in->headers, names[i],
					       json_object_new_string(value));
	}
	clock_gettime(CLOCK_REALTIME, &now);
	in->received_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
	in->provider = provider;
	in->unauthorized = r->outcome == OUTCOME_UNAUTHORIZED;
	if (r->reason[0] != '\0')
		snprintf(in->reason, sizeof(in->reason), "%s", r->reason);
	else
		snprintf(in->reason, sizeof(in->reason), "%s is not recorded",
			 event_type[0] != '\0' ? event_type : "the event");
	in->pending = true;
}

int inbox_keep(struct inbox *in, const char *body, size_t len,
	       struct error *err)
{
	const char *headers;

	if (!in->pending)
		return 0;
	in->pending = false;
	headers = in->headers != NULL ?
			  json_object_to_json_string_ext(in->headers,
							 JSON_C_TO_STRING_PLAIN) :
			  "{}";
	if (inbox_store_keep(in->store, provider_name(in->provider),
			     in->received_us,
			     in->unauthorized ? "unauthorized" : "ignored",
			     in->reason, headers, body, len, err) != 0)
		return -1;
	return 1;
}

const struct provider *inbox_noted_provider(const struct inbox *in)
{
	return in->provider;
}

bool inbox_noted_unauthorized(const struct inbox *in)
{
	return in->unauthorized;
}
