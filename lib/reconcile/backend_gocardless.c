/* backend_gocardless.c - GoCardless's API, version 2015-07-06 (see
 * backend_gocardless.h), as gocardless/gocardless-nodejs@d15252ad
 * (src/api/api.ts: "Authorization: Bearer <token>" and "GoCardless-Version:
 * 2015-07-06"; src/services/eventService.ts) and
 * gocardless/gocardless-pro-go@553b873c (payment_service.go,
 * refund_service.go, event_service.go) describe it: one resource under its
 * plural name ({"payments": {...}}), amounts integers of minor units; the
 * list of events {"events": [...], "meta": {"cursors": {"before", "after"},
 * "limit"}}, newest first, filtered by created_at[gte] and [lte], payment
 * and resource_type, paged by after (the cursor meta.cursors.after names;
 * null on the last page) and limit (at most 500).
 *
 * A payment's fetch is the payment and its events of resource_type
 * payments: whether it was charged back, and whether the chargeback was
 * cancelled, is said by its events, not by its status. The list's events
 * are recorded as a webhook's are: queued, then fetched. */
#include "config.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_client.h"
#include "backend_gocardless.h"

#define GC_PAGE_LIMIT 500
/* Pages of one payment's events read at most. */
#define GC_EVENT_PAGES 10
#define GC_RETENTION_S (365LL * 86400)

static int gc_auth_header(const char *key, char *out, struct error *err)
{
	return backend_key_header("Authorization: Bearer ", key,
				  "gocardless: gocardless_api_key", out, err);
}

/* The resource under name of root whose id is id, or NULL. Borrowed. */
static struct json_object *resource(struct json_object *root,
				    const char *name, const char *id)
{
	struct json_object *r;
	const char *got;

	if (root == NULL || !json_object_object_get_ex(root, name, &r) ||
	    !json_object_is_type(r, json_type_object))
		return NULL;
	got = backend_string(r, "id");
	return got != NULL && strcmp(got, id) == 0 ? r : NULL;
}

/* The payment's events of resource_type payments, page after page, into
 * into. Returns an enum backend_fetch. */
static enum backend_fetch payment_events(struct api_client *client,
					 const char *base, const char *id,
					 struct json_object *into,
					 struct error *err)
{
	char url[BACKEND_URL_MAX], after[BACKEND_CURSOR_MAX + 1] = "";

	for (int pages = 0; pages < GC_EVENT_PAGES; pages++) {
		struct json_object *root, *events, *meta, *cursors, *next;
		const char *body;
		size_t len;

		if (backend_url("gocardless", url, err,
				"%s/events?payment=%s&resource_type=payments&"
				"limit=%d%s%s", base, id, GC_PAGE_LIMIT,
				after[0] != '\0' ? "&after=" : "", after) != 0)
			return BACKEND_FETCH_FAILED;
		if (backend_fetch_get(client, url, &body, &len, err) !=
		    BACKEND_FETCHED)
			return BACKEND_FETCH_FAILED;
		root = backend_parse_json(body, len);
		if (root == NULL ||
		    !json_object_object_get_ex(root, "events", &events) ||
		    !json_object_is_type(events, json_type_array) ||
		    !json_object_object_get_ex(root, "meta", &meta) ||
		    !json_object_object_get_ex(meta, "cursors", &cursors)) {
			json_object_put(root);
			error_set(err, "gocardless: the events of %s are not a "
				  "list of the documented form", id);
			return BACKEND_FETCH_FAILED;
		}
		for (size_t i = 0; i < json_object_array_length(events); i++)
			json_object_array_add(into, json_object_get(
				json_object_array_get_idx(events, i)));
		next = NULL;
		json_object_object_get_ex(cursors, "after", &next);
		if (next == NULL || json_object_array_length(events) == 0) {
			json_object_put(root);
			return BACKEND_FETCHED;
		}
		snprintf(after, sizeof(after), "%s",
			 json_object_get_string(next));
		json_object_put(root);
		if (!backend_plain_id(after)) {
			error_set(err, "gocardless: a cursor of the events of "
				  "%s that is no event id", id);
			return BACKEND_FETCH_FAILED;
		}
	}
	error_set(err, "gocardless: more than %d pages of events of %s",
		  GC_EVENT_PAGES, id);
	return BACKEND_FETCH_FAILED;
}

static enum backend_fetch gc_fetch(struct api_client *client,
				   const char *base, const char *id,
				   struct backend_page *page, struct error *err)
{
	bool payment = strncmp(id, "PM", 2) == 0;
	const char *name = payment ? "payments" : "refunds";
	char url[BACKEND_URL_MAX];
	struct json_object *root, *events;
	const char *body;
	size_t len;
	enum backend_fetch rc;

	memset(page, 0, sizeof(*page));
	page->total = -1;
	if (!payment && strncmp(id, "RF", 2) != 0) {
		error_set(err, "gocardless: %s is neither a payment nor a "
			  "refund", id);
		return BACKEND_FETCH_FAILED;
	}
	if (backend_url("gocardless", url, err, "%s/%s/%s", base, name, id) != 0)
		return BACKEND_FETCH_FAILED;
	rc = backend_fetch_get(client, url, &body, &len, err);
	if (rc != BACKEND_FETCHED)
		return rc;
	root = backend_parse_json(body, len);
	if (resource(root, name, id) == NULL) {
		json_object_put(root);
		error_set(err, "gocardless: the answer for %s is not that %s",
			  id, payment ? "payment" : "refund");
		return BACKEND_FETCH_FAILED;
	}
	if (!payment) {
		json_object_put(root);
		/* What the API said, byte for byte. */
		if (backend_page_add(page, body, len) != 0) {
			error_set(err, "gocardless: out of memory");
			return BACKEND_FETCH_FAILED;
		}
		return BACKEND_FETCHED;
	}
	events = json_object_new_array();
	json_object_object_add(root, "events", events);
	rc = payment_events(client, base, id, events, err);
	if (rc == BACKEND_FETCHED &&
	    backend_page_add_json(page, root, NULL) != 0) {
		error_set(err, "gocardless: out of memory");
		rc = BACKEND_FETCH_FAILED;
	}
	json_object_put(root);
	return rc;
}

static int gc_page_url(const char *base, const struct backend_window *w,
		       const char *cursor, char *url, struct error *err)
{
	char from[BACKEND_QUERY_TIME_MAX], to[BACKEND_QUERY_TIME_MAX];

	if (cursor != NULL && !backend_plain_id(cursor))
		return error_set(err, "gocardless: a cursor that is no event "
				 "id");
	if (backend_window_query("gocardless", w, from, to, err) != 0)
		return -1;
	return backend_url("gocardless", url, err,
			   "%s/events?created_at%%5Bgte%%5D=%s&"
			   "created_at%%5Blte%%5D=%s&limit=%d%s%s", base, from,
			   to, GC_PAGE_LIMIT, cursor != NULL ? "&after=" : "",
			   cursor != NULL ? cursor : "");
}

static const struct backend_event_shape gc_event = {
	.list = "events", .id_member = "id", .id_form = backend_plain_id,
	.type_member = "resource_type", .needs = "an id and a resource_type",
};

static int gc_parse_page(const char *body, size_t len,
			 struct backend_page *page, struct error *err)
{
	struct json_object *root, *events, *meta, *cursors, *after = NULL;
	int rc = -1;

	if (backend_page_begin("gocardless", body, len, page, &root, err) != 0)
		goto out;
	if (!json_object_object_get_ex(root, "events", &events) ||
	    !json_object_is_type(events, json_type_array) ||
	    !json_object_object_get_ex(root, "meta", &meta) ||
	    !json_object_object_get_ex(meta, "cursors", &cursors) ||
	    !json_object_is_type(cursors, json_type_object)) {
		error_set(err, "gocardless: the page is not a list of events "
			  "with meta.cursors");
		goto out;
	}
	if (backend_page_events("gocardless", events, &gc_event, page, NULL,
				err) != 0)
		goto out;
	json_object_object_get_ex(cursors, "after", &after);
	if (after != NULL) {
		if (!json_object_is_type(after, json_type_string) ||
		    json_object_get_string_len(after) > BACKEND_CURSOR_MAX) {
			error_set(err, "gocardless: meta.cursors.after is not "
				  "a cursor");
			goto out;
		}
		snprintf(page->next, sizeof(page->next), "%s",
			 json_object_get_string(after));
	}
	page->has_more = after != NULL && page->count > 0;
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

/* The API's version every request names. */
static const char *const gc_headers[] = { "GoCardless-Version: 2015-07-06",
					  NULL };

const struct backend backend_gocardless = {
	.profile = CONFIG_PROVIDER_GOCARDLESS,
	.default_base = "https://api.gocardless.com",
	.retention_s = GC_RETENTION_S,
	.window_s = 86400,
	.page_url = gc_page_url,
	.auth_header = gc_auth_header,
	.parse_page = gc_parse_page,
	.paging = BACKEND_PAGING_CURSOR,
	.headers = gc_headers,
	.fetch = gc_fetch,
};
