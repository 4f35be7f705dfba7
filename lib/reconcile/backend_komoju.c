/* backend_komoju.c - KOMOJU's events: GET /api/v1/events with start_time
 * and end_time (one closed window, ISO 8601: end_time is the window's end
 * less a second), per_page=100 and page (1 the first); the secret key as
 * the user of HTTP Basic authentication, with an empty password. The
 * answer is KOMOJU's list object {"resource": "list", "total": ...,
 * "page": ..., "per_page": ..., "last_page": ..., "data": [...]}, each
 * item the event object a webhook delivers (id, type, resource "event",
 * data, created_at). Every type is listed; the profile ignores what it
 * does not record. Checked against komoju/komoju-ruby-sdk docs/EventsApi.md
 * ("Lists out past webhook events from most-recent to least-recent";
 * start_time, end_time, per_page, page), docs/EventList.md and
 * docs/Event.md. KOMOJU publishes no largest per_page: a smaller page
 * than asked is read the same way, by page and last_page.
 *
 * Page-number paging over a list that moves: the window is closed, and an
 * event that shows up in it while it is read changes total, which makes
 * the walk list the window again (backend.h BACKEND_PAGING_NUMBER). */
#include "config.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "backend_komoju.h"
#include "utc.h"

#define KOMOJU_PAGE_LIMIT 100
/* KOMOJU states no retention for events; the lookback bounds a pass. */
#define KOMOJU_RETENTION_S (30 * 86400)

static int komoju_page_url(const char *base, const struct backend_window *w,
			   const char *cursor, char *url, struct error *err)
{
	char from[BACKEND_QUERY_TIME_MAX], to[BACKEND_QUERY_TIME_MAX];

	if (cursor != NULL && !backend_decimal(cursor))
		return error_set(err, "komoju: a page that is not a number");
	if (backend_window_query("komoju", w, from, to, err) != 0)
		return -1;
	return backend_url("komoju", url, err,
			   "%s/api/v1/events?start_time=%s&end_time=%s"
			   "&per_page=%d&page=%s",
			   base, from, to, KOMOJU_PAGE_LIMIT,
			   cursor != NULL ? cursor : "1");
}

static int komoju_auth_header(const char *key, char *out, struct error *err)
{
	return backend_basic_auth(key, "komoju: komoju_api_key", out, err);
}

/* The non-negative integer member name of obj, or -1. */
static long long count_member(struct json_object *obj, const char *name)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, name, &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0)
		return -1;
	return (long long)json_object_get_int64(v);
}

static const struct backend_event_shape komoju_event = {
	.list = "data", .kind_member = "resource", .kind_value = "event",
	.id_member = "id", .type_member = "type",
	.needs = "an id and a type",
};

static int komoju_parse_page(const char *body, size_t len,
			     struct backend_page *page, struct error *err)
{
	struct json_object *root, *data;
	const char *resource;
	long long total, at, last;
	int rc = -1;

	if (backend_page_begin("komoju", body, len, page, &root, err) != 0)
		goto out;
	resource = backend_string(root, "resource");
	total = count_member(root, "total");
	at = count_member(root, "page");
	last = count_member(root, "last_page");
	if (resource == NULL ||
	    strcmp(resource, "list") != 0 ||
	    !json_object_object_get_ex(root, "data", &data) ||
	    !json_object_is_type(data, json_type_array) || total < 0 ||
	    at < 0 || last < 0) {
		error_set(err, "komoju: the page is not a list with data, "
			  "total, page and last_page");
		goto out;
	}
	if (backend_page_events("komoju", data, &komoju_event, page, NULL,
				err) != 0)
		goto out;
	page->total = total;
	if (backend_page_more("komoju", page, at < last, err) != 0)
		goto out;
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

const struct backend backend_komoju = {
	.profile = CONFIG_PROVIDER_KOMOJU,
	.default_base = "https://komoju.com",
	.retention_s = KOMOJU_RETENTION_S,
	.window_s = 86400,
	.page_url = komoju_page_url,
	.auth_header = komoju_auth_header,
	.parse_page = komoju_parse_page,
	.paging = BACKEND_PAGING_NUMBER,
};
