/* backend_square.c - Square's events as its API reference documents them
 * (developer.squareup.com/reference/square/events-api/search-events and
 * /docs/events-api/overview): POST /v2/events (SearchEvents) with the JSON
 * body {"limit": 100 (Square's largest page), "query": {"filter":
 * {"event_types": [the events the square profile records: payment.updated
 * and the refund and dispute events of its lifecycle table], "created_at":
 * {"start_at", "end_at"} (one window, RFC 3339)}, "sort": {"field":
 * "DEFAULT", "order": "ASC"}}, "cursor": <the last page's>} (a cursor
 * comes with the original query, as Square requires); the personal access
 * token as a Bearer token (Square refuses OAuth tokens here). The answer
 * is {"events": [...], "metadata": [...], "cursor": ...} (no cursor or an
 * empty one: the last page); each event has the webhook body's shape
 * (merchant_id, type, event_id, created_at and data {type, id, object})
 * and is recorded as if delivered, its created_at given the "Z" the list
 * leaves out (zone_less). Checked against square/connect-api-specification
 * api.json (SearchEventsRequest limit maximum 100, SearchEventsQuery,
 * SearchEventsSortField DEFAULT, SortOrder, SearchEventsResponse, Event). Square keeps events 28 days, and only
 * those that occurred while events were enabled for the application (PUT
 * /v2/events/enable): an answer that says they are not enabled is made an
 * error that says to enable them. */
#include "config.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "backend_square.h"
#include "utc.h"

/* What the square profile records (provider.c, provider_lifecycle.c). */
static const char *const event_types[] = {
	"payment.updated",  "refund.created",	     "refund.updated",
	"dispute.created", "dispute.state.updated",
};

#define SQUARE_PAGE_LIMIT 100
#define SQUARE_RETENTION_S (28 * 86400)

static int square_page_url(const char *base, const struct backend_window *w,
			   const char *cursor, char *url, struct error *err)
{
	(void)w;
	(void)cursor;
	return backend_url("square", url, err, "%s/v2/events", base);
}

static int square_page_json(const struct backend_window *w, const char *cursor,
			    char *json, struct error *err)
{
	struct json_object *root, *query, *filter, *types, *created, *sort;
	char from[UTC_RFC3339_MAX], to[UTC_RFC3339_MAX];
	const char *text;
	int rc = -1;

	if (utc_format(w->from, UTC_RFC3339, from, sizeof(from)) != 0 ||
	    utc_format(w->to, UTC_RFC3339, to, sizeof(to)) != 0)
		return error_set(err, "square: the window has no calendar date");
	root = json_object_new_object();
	query = json_object_new_object();
	filter = json_object_new_object();
	types = json_object_new_array();
	created = json_object_new_object();
	sort = json_object_new_object();
	for (size_t i = 0; i < sizeof(event_types) / sizeof(event_types[0]); i++)
		json_object_array_add(types,
				      json_object_new_string(event_types[i]));
	json_object_object_add(created, "start_at", json_object_new_string(from));
	json_object_object_add(created, "end_at", json_object_new_string(to));
	json_object_object_add(filter, "event_types", types);
	json_object_object_add(filter, "created_at", created);
	json_object_object_add(sort, "field", json_object_new_string("DEFAULT"));
	json_object_object_add(sort, "order", json_object_new_string("ASC"));
	json_object_object_add(query, "filter", filter);
	json_object_object_add(query, "sort", sort);
	json_object_object_add(root, "limit",
			       json_object_new_int(SQUARE_PAGE_LIMIT));
	json_object_object_add(root, "query", query);
	if (cursor != NULL)
		json_object_object_add(root, "cursor",
				       json_object_new_string(cursor));
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	if (text == NULL || strlen(text) >= BACKEND_JSON_MAX)
		error_set(err, "square: the search body is too long");
	else {
		memcpy(json, text, strlen(text) + 1);
		rc = 0;
	}
	json_object_put(root);
	return rc;
}

static int square_auth_header(const char *key, char *out, struct error *err)
{
	return backend_key_header("Authorization: Bearer ", key,
				  "square: square_api_key", out, err);
}

/* Whether text is an RFC 3339 date-time without its zone
 * ("2022-04-26T10:08:40.454726"): SearchEvents writes an event's created_at
 * so (square/connect-api-specification api.json, SearchEventsResponse's
 * example), where the webhook body of the same event has "...Z". */
static bool zone_less(const char *text)
{
	size_t i = 19;

	if (text == NULL || strlen(text) < 19 || text[10] != 'T')
		return false;
	if (text[i] == '.')
		for (i++; text[i] >= '0' && text[i] <= '9'; i++)
			;
	return text[i] == '\0';
}

/* Square's times are UTC: the zone the webhook writes is given back, so
 * that the event reads as its webhook would (the lifecycle takes
 * created_at only with a zone). */
static void square_mend(struct json_object *event)
{
	const char *at = backend_string(event, "created_at");

	if (zone_less(at)) {
		char zoned[64];

		snprintf(zoned, sizeof(zoned), "%.62sZ", at);
		json_object_object_add(event, "created_at",
				       json_object_new_string(zoned));
	}
}

static const struct backend_event_shape square_event = {
	.list = "events", .id_member = "event_id", .type_member = "type",
	.object_member = "data", .needs = "an event_id, a type and data",
	.mend = square_mend,
};

static int square_parse_page(const char *body, size_t len,
			     struct backend_page *page, struct error *err)
{
	struct json_object *root, *events, *v;
	const char *cursor;
	int rc = -1;

	if (backend_page_begin("square", body, len, page, &root, err) != 0)
		goto out;
	/* A page with errors lists nothing ("events" is absent then). */
	if (json_object_object_get_ex(root, "errors", &v) &&
	    json_object_is_type(v, json_type_array) &&
	    json_object_array_length(v) > 0) {
		error_set(err, "square: the answer holds errors");
		goto out;
	}
	if (!json_object_object_get_ex(root, "events", &events))
		events = NULL; /* no event in the window */
	else if (!json_object_is_type(events, json_type_array)) {
		error_set(err, "square: events is not a list");
		goto out;
	}
	if (events != NULL &&
	    backend_page_events("square", events, &square_event, page, NULL,
				err) != 0)
		goto out;
	cursor = backend_string(root, "cursor");
	if (json_object_object_get_ex(root, "cursor", &v) && cursor == NULL &&
	    !json_object_is_type(v, json_type_null)) {
		error_set(err, "square: cursor is not a string");
		goto out;
	}
	if (cursor != NULL && cursor[0] != '\0') {
		if (strlen(cursor) > BACKEND_CURSOR_MAX) {
			error_set(err, "square: a cursor longer than %d bytes",
				  BACKEND_CURSOR_MAX);
			goto out;
		}
		page->has_more = true;
		snprintf(page->next, sizeof(page->next), "%s", cursor);
	}
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

/* Whether text says events are not enabled (Square's error detail). */
static bool says_not_enabled(const char *text)
{
	return text != NULL && (strcasestr(text, "not enabled") != NULL ||
				strcasestr(text, "disabled") != NULL ||
				strcasestr(text, "enable events") != NULL);
}

static void square_explain_failure(long status, const char *body, size_t len,
				   struct error *err)
{
	struct json_object *root, *errors;
	bool disabled = false;
	char said[256] = "";

	if (status < 400 || status >= 500)
		return;
	root = backend_parse_json(body, len);
	if (root == NULL)
		return;
	if (json_object_object_get_ex(root, "errors", &errors) &&
	    json_object_is_type(errors, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(errors); i++) {
			struct json_object *e =
				json_object_array_get_idx(errors, i);
			const char *code = backend_string(e, "code");
			const char *detail = backend_string(e, "detail");

			if (said[0] == '\0')
				snprintf(said, sizeof(said), "%.60s: %.180s",
					 code != NULL ? code : "-",
					 detail != NULL ? detail : "-");
			if (says_not_enabled(detail) || says_not_enabled(code))
				disabled = true;
		}
	}
	json_object_put(root);
	if (disabled)
		error_set(err, "square: events are not enabled for this "
			  "application (Square says %s): enable them once with "
			  "PUT /v2/events/enable and the same access token; "
			  "only events from then on can be listed", said);
	else if (said[0] != '\0' && status != 401 && status != 403)
		error_set(err, "HTTP %ld: %s", status, said);
}

const struct backend backend_square = {
	.profile = CONFIG_PROVIDER_SQUARE,
	.default_base = "https://connect.squareup.com",
	.retention_s = SQUARE_RETENTION_S,
	.window_s = 86400,
	.page_url = square_page_url,
	.auth_header = square_auth_header,
	.parse_page = square_parse_page,
	.page_json = square_page_json,
	.explain_failure = square_explain_failure,
};
