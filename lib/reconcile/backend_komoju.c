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

static bool decimal(const char *text)
{
	if (text[0] == '\0' || strlen(text) > 9)
		return false;
	for (const char *c = text; *c != '\0'; c++)
		if (*c < '0' || *c > '9')
			return false;
	return true;
}

static int komoju_page_url(const char *base, const struct backend_window *w,
			   const char *cursor, char *url, struct error *err)
{
	char from[32], to[32];
	int n;

	if (cursor != NULL && !decimal(cursor))
		return error_set(err, "komoju: a page that is not a number");
	if (utc_format(w->from, UTC_RFC3339, from, sizeof(from)) != 0 ||
	    utc_format(w->to - 1, UTC_RFC3339, to, sizeof(to)) != 0)
		return error_set(err, "komoju: the window has no calendar date");
	/* ':' written as %3A: a query value, encoded. */
	n = snprintf(url, BACKEND_URL_MAX,
		     "%s/api/v1/events?start_time=%.13s%%3A%.2s%%3A%s"
		     "&end_time=%.13s%%3A%.2s%%3A%s&per_page=%d&page=%s",
		     base, from, from + 14, from + 17, to, to + 14, to + 17,
		     KOMOJU_PAGE_LIMIT, cursor != NULL ? cursor : "1");
	if (n < 0 || n >= BACKEND_URL_MAX)
		return error_set(err, "komoju: the list URL is too long");
	return 0;
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

static int komoju_parse_page(const char *body, size_t len,
			     struct backend_page *page, struct error *err)
{
	struct json_object *root = backend_parse_json(body, len);
	struct json_object *data;
	const char *resource;
	long long total, at, last;
	int rc = -1;

	memset(page, 0, sizeof(*page));
	page->total = -1;
	if (root == NULL) {
		error_set(err, "komoju: the page is not one JSON object "
			  "(cut short?)");
		goto out;
	}
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
	for (size_t i = 0; i < json_object_array_length(data); i++) {
		struct json_object *event = json_object_array_get_idx(data, i);
		const char *kind = backend_string(event, "resource");

		if (kind == NULL || strcmp(kind, "event") != 0 ||
		    backend_string(event, "id") == NULL ||
		    backend_string(event, "type") == NULL) {
			error_set(err, "komoju: item %zu of data is not an "
				  "event with an id and a type", i);
			goto out;
		}
		if (backend_page_add_json(page, event, NULL) != 0) {
			error_set(err, "komoju: out of memory");
			goto out;
		}
	}
	page->has_more = at < last;
	page->total = total;
	if (page->has_more && page->count == 0) {
		error_set(err, "komoju: an empty page before the last");
		goto out;
	}
	rc = 0;
out:
	if (rc != 0)
		backend_page_cleanup(page);
	json_object_put(root);
	return rc;
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
