/* backend_payjp.c - PAY.JP's events as its API reference documents them
 * (pay.jp/docs/api, "イベントリストを取得"; payjp/payjp-go v1/event.go's
 * list parameters): GET /v1/events with since and until (one closed
 * window: created at or after since, at or before until, so until is the
 * window's end less a second), limit=100 (PAY.JP's largest page) and
 * offset (the window's events listed before the page); the secret key as
 * the user of HTTP Basic authentication, with an empty password. The
 * answer is a list object {"object": "list", "count": ..., "has_more":
 * ..., "data": [...], "url": "/v1/events"}, newest first, each event the
 * object a webhook delivers. PAY.JP filters by one type only, so every
 * type is listed and the profile ignores what it does not record.
 * Checked against payjp/payjp-go v1/event.go (limit 1-100, offset, since
 * "at or after", until "at or before", type; newest first) and
 * payjp/payjp-python payjp/api_requestor.py (Basic "<key>:").
 *
 * Offset paging over a list that moves: the window is closed (nothing
 * created later enters it), and an event that shows up in it while it is
 * read changes count, which makes the walk list the window again
 * (backend.h BACKEND_PAGING_OFFSET). */
#include "config.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_payjp.h"

#define PAYJP_PAGE_LIMIT 100
/* PAY.JP states no retention for events; the lookback bounds a pass. */
#define PAYJP_RETENTION_S (30 * 86400)

static bool decimal(const char *text)
{
	if (text[0] == '\0' || strlen(text) > 18)
		return false;
	for (const char *c = text; *c != '\0'; c++)
		if (*c < '0' || *c > '9')
			return false;
	return true;
}

static int payjp_page_url(const char *base, const struct backend_window *w,
			  const char *cursor, char *url, struct error *err)
{
	int n;

	if (cursor != NULL && !decimal(cursor))
		return error_set(err, "payjp: an offset that is not a number");
	n = snprintf(url, BACKEND_URL_MAX,
		     "%s/v1/events?since=%" PRId64 "&until=%" PRId64
		     "&limit=%d&offset=%s",
		     base, w->from, w->to - 1, PAYJP_PAGE_LIMIT,
		     cursor != NULL ? cursor : "0");
	if (n < 0 || n >= BACKEND_URL_MAX)
		return error_set(err, "payjp: the list URL is too long");
	return 0;
}

static int payjp_auth_header(const char *key, char *out, struct error *err)
{
	return backend_basic_auth(key, "payjp: payjp_api_key", out, err);
}

static int payjp_parse_page(const char *body, size_t len,
			    struct backend_page *page, struct error *err)
{
	struct json_object *root = backend_parse_json(body, len);
	struct json_object *data, *more, *count;
	const char *object;
	int rc = -1;

	memset(page, 0, sizeof(*page));
	page->total = -1;
	if (root == NULL) {
		error_set(err, "payjp: the page is not one JSON object "
			  "(cut short?)");
		goto out;
	}
	object = backend_string(root, "object");
	if (object == NULL ||
	    strcmp(object, "list") != 0 ||
	    !json_object_object_get_ex(root, "data", &data) ||
	    !json_object_is_type(data, json_type_array) ||
	    !json_object_object_get_ex(root, "has_more", &more) ||
	    !json_object_is_type(more, json_type_boolean) ||
	    !json_object_object_get_ex(root, "count", &count) ||
	    !json_object_is_type(count, json_type_int) ||
	    json_object_get_int64(count) < 0) {
		error_set(err, "payjp: the page is not a list object with "
			  "data, count and has_more");
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(data); i++) {
		struct json_object *event = json_object_array_get_idx(data, i);
		const char *kind = backend_string(event, "object");

		if (kind == NULL || strcmp(kind, "event") != 0 ||
		    backend_string(event, "id") == NULL ||
		    backend_string(event, "type") == NULL) {
			error_set(err, "payjp: item %zu of data is not an "
				  "event with an id and a type", i);
			goto out;
		}
		if (backend_page_add_json(page, event, NULL) != 0) {
			error_set(err, "payjp: out of memory");
			goto out;
		}
	}
	page->has_more = json_object_get_boolean(more);
	page->total = (long long)json_object_get_int64(count);
	/* The next offset is the walk's (BACKEND_PAGING_OFFSET); a page
	 * that says more but holds nothing would be asked for again. */
	if (page->has_more && page->count == 0) {
		error_set(err, "payjp: has_more with an empty page");
		goto out;
	}
	rc = 0;
out:
	if (rc != 0)
		backend_page_cleanup(page);
	json_object_put(root);
	return rc;
}

const struct backend backend_payjp = {
	.profile = CONFIG_PROVIDER_PAYJP,
	.default_base = "https://api.pay.jp",
	.retention_s = PAYJP_RETENTION_S,
	.window_s = 86400,
	.page_url = payjp_page_url,
	.auth_header = payjp_auth_header,
	.parse_page = payjp_parse_page,
	.livemode_member = "livemode",
	.paging = BACKEND_PAGING_OFFSET,
};
