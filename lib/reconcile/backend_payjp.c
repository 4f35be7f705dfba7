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

static int payjp_page_url(const char *base, const struct backend_window *w,
			  const char *cursor, char *url, struct error *err)
{
	if (cursor != NULL && !backend_decimal(cursor))
		return error_set(err, "payjp: an offset that is not a number");
	return backend_url("payjp", url, err,
			   "%s/v1/events?since=%" PRId64 "&until=%" PRId64
			   "&limit=%d&offset=%s",
			   base, w->from, w->to - 1, PAYJP_PAGE_LIMIT,
			   cursor != NULL ? cursor : "0");
}

static int payjp_auth_header(const char *key, char *out, struct error *err)
{
	return backend_basic_auth(key, "payjp: payjp_api_key", out, err);
}

static const struct backend_event_shape payjp_event = {
	.list = "data", .kind_member = "object", .kind_value = "event",
	.id_member = "id", .type_member = "type",
	.needs = "an id and a type",
};

static int payjp_parse_page(const char *body, size_t len,
			    struct backend_page *page, struct error *err)
{
	struct json_object *root, *data, *more, *count;
	const char *object;
	int rc = -1;

	if (backend_page_begin("payjp", body, len, page, &root, err) != 0)
		goto out;
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
	if (backend_page_events("payjp", data, &payjp_event, page, NULL,
				err) != 0)
		goto out;
	page->total = (long long)json_object_get_int64(count);
	/* The next offset is the walk's (BACKEND_PAGING_OFFSET). */
	if (backend_page_more("payjp", page, json_object_get_boolean(more),
			      err) != 0)
		goto out;
	rc = 0;
out:
	return backend_page_end(page, root, rc);
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
