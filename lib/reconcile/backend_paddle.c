/* backend_paddle.c - Paddle Billing's events as its API reference documents
 * them (developer.paddle.com/api-reference/events/list-events; the
 * paddle-node-sdk's ListEventsQueryParameters and ResponsePaginated):
 * GET /events with event_type (the events the paddle profile records:
 * transaction.completed and the adjustment events of its lifecycle
 * table, comma-separated), order_by=id[ASC], per_page=200 (Paddle's
 * largest page) and after=<a Paddle ID>; the API key as a Bearer token.
 * The answer is {"data": [...], "meta": {"request_id": ..., "pagination":
 * {"per_page", "next", "has_more", "estimated_total"}}}, each item an
 * event entity: event_id, event_type, occurred_at, notification_id (a
 * string or null: paddle-node-sdk src/types/events/events-response.ts)
 * and data, the webhook's body. It is recorded as if delivered, and
 * deduplicated on event_id as every webhook is (a notification_id names
 * one delivery, not the event). Paddle keeps events 90 days. A page may
 * hold fewer than per_page: Paddle answers its maximum when asked for
 * more (developer.paddle.com/api-reference/about/pagination); only
 * has_more and next are read.
 *
 * Paddle's list has no time filter: it is ordered by ID, and a Paddle ID
 * is a ULID, its first ten characters the creation time in milliseconds
 * (Paddle's own example evt_01h8e1jxjnw9ra6zarhnz1a7y1 reads 07:15:45.365Z,
 * its occurred_at 07:15:45.366Z). A window's first page is asked for after
 * the largest ID of the millisecond before it starts, so one walk lists
 * every event since the window's start; its pages continue after the
 * "after" of meta.pagination.next (never the URL itself: the key goes only
 * to the configured base). The window is the whole span: a walk runs to
 * the end of the list.
 */
#include "config.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "backend_paddle.h"

/* What the paddle profile records (provider.c, provider_lifecycle.c). */
static const char types_query[] =
	"event_type=transaction.completed%2Cadjustment.created"
	"%2Cadjustment.updated";

#define PADDLE_PAGE_LIMIT 200
#define PADDLE_RETENTION_S (90 * 86400)

/* Crockford's base32 as Paddle writes its IDs: lower case. */
static const char ulid_digits[] = "0123456789abcdefghjkmnpqrstvwxyz";

/* Paddle IDs after "evt_": lower-case base32 only, nothing to encode. */
static bool paddle_id(const char *id)
{
	if (strncmp(id, "evt_", 4) != 0 || id[4] == '\0')
		return false;
	for (const char *c = id + 4; *c != '\0'; c++)
		if (strchr(ulid_digits, *c) == NULL)
			return false;
	return true;
}

/* The largest event ID of millisecond ms: every event created from
 * ms + 1 on sorts after it. */
static void last_id_of(int64_t ms, char out[32])
{
	uint64_t v = ms < 0 ? 0 : (uint64_t)ms;

	memcpy(out, "evt_", 4);
	for (int i = 9; i >= 0; i--) {
		out[4 + i] = ulid_digits[v & 31];
		v >>= 5;
	}
	memset(out + 14, 'z', 16);
	out[30] = '\0';
}

static int paddle_page_url(const char *base, const struct backend_window *w,
			   const char *cursor, char *url, struct error *err)
{
	char first[32];
	if (cursor != NULL && !paddle_id(cursor))
		return error_set(err, "paddle: an event id that is not evt_ "
				 "and base32");
	if (cursor == NULL) {
		last_id_of(w->from * 1000 - 1, first);
		cursor = first;
	}
	return backend_url("paddle", url, err,
			   "%s/events?%s&order_by=id%%5BASC%%5D&per_page=%d"
			   "&after=%s",
			   base, types_query, PADDLE_PAGE_LIMIT, cursor);
}

static int paddle_auth_header(const char *key, char *out, struct error *err)
{
	return backend_key_header("Authorization: Bearer ", key,
				  "paddle: paddle_api_key", out, err);
}

/* The value of "after" in next (a URL), copied into out; false when it
 * has none that is a plain event ID. */
static bool after_of(const char *next, char out[BACKEND_CURSOR_MAX + 1])
{
	const char *q = strchr(next, '?');

	while (q != NULL) {
		size_t len;

		q++;
		len = strcspn(q, "&#");
		if (strncmp(q, "after=", 6) == 0 && len - 6 <= BACKEND_CURSOR_MAX) {
			memcpy(out, q + 6, len - 6);
			out[len - 6] = '\0';
			return paddle_id(out);
		}
		q = q[len] == '&' ? q + len : NULL;
	}
	return false;
}

static const struct backend_event_shape paddle_event = {
	.list = "data", .id_member = "event_id", .id_form = paddle_id,
	.type_member = "event_type",
	.needs = "an event_id (evt_, base32) and an event_type",
};

static int paddle_parse_page(const char *body, size_t len,
			     struct backend_page *page, struct error *err)
{
	struct json_object *root, *data, *meta, *pagination, *more;
	const char *next, *last = NULL;
	int rc = -1;

	if (backend_page_begin("paddle", body, len, page, &root, err) != 0)
		goto out;
	if (!json_object_object_get_ex(root, "data", &data) ||
	    !json_object_is_type(data, json_type_array) ||
	    !json_object_object_get_ex(root, "meta", &meta) ||
	    !json_object_object_get_ex(meta, "pagination", &pagination) ||
	    !json_object_object_get_ex(pagination, "has_more", &more) ||
	    !json_object_is_type(more, json_type_boolean)) {
		error_set(err, "paddle: the page is not a list with data and "
			  "meta.pagination.has_more");
		goto out;
	}
	if (backend_page_events("paddle", data, &paddle_event, page, &last,
				err) != 0)
		goto out;
	page->has_more = json_object_get_boolean(more);
	if (page->has_more) {
		next = backend_string(pagination, "next");
		if (next != NULL && after_of(next, page->next))
			;
		else if (last != NULL && strlen(last) <= BACKEND_CURSOR_MAX)
			snprintf(page->next, sizeof(page->next), "%s", last);
		else {
			error_set(err, "paddle: has_more with no event to "
				  "continue after");
			goto out;
		}
	}
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

/* A Paddle API key names its environment (pdl_sdbx_... the sandbox,
 * pdl_live_... live), and each lives on its own API: a sandbox key
 * against the live API lists nothing of the merchant's, and a live key
 * against the sandbox lists test data as if it were real. */
static int paddle_check_config(const struct config *cfg, struct error *err)
{
	const char *key = cfg->api_key[CONFIG_PROVIDER_PADDLE];
	const char *base = cfg->api_base[CONFIG_PROVIDER_PADDLE];
	bool sandbox_base = base != NULL &&
			    strstr(base, "://sandbox-api.paddle.com") != NULL;

	if (!backend_has_key(cfg, CONFIG_PROVIDER_PADDLE))
		return 0;
	if (strncmp(key, "pdl_sdbx_", 9) == 0 &&
	    (base == NULL || strstr(base, "://api.paddle.com") != NULL))
		return error_set(err, "paddle_api_key is a sandbox key "
				 "(pdl_sdbx_...): set paddle_api_base = "
				 "https://sandbox-api.paddle.com, or use a live "
				 "key");
	if (strncmp(key, "pdl_live_", 9) == 0 && sandbox_base)
		return error_set(err, "paddle_api_key is a live key "
				 "(pdl_live_...) but paddle_api_base is the "
				 "sandbox: the sandbox's test data is not the "
				 "merchant's books");
	return 0;
}

const struct backend backend_paddle = {
	.profile = CONFIG_PROVIDER_PADDLE,
	.default_base = "https://api.paddle.com",
	.check_config = paddle_check_config,
	.retention_s = PADDLE_RETENTION_S,
	.window_s = PADDLE_RETENTION_S,
	.page_url = paddle_page_url,
	.auth_header = paddle_auth_header,
	.parse_page = paddle_parse_page,
};
