/* backend_lemonsqueezy.c - Lemon Squeezy as a snapshot: it has no list of
 * past webhooks, so the pass lists the store's orders as its API reference
 * documents them (docs.lemonsqueezy.com/api/orders/list-all-orders, and
 * /api/getting-started/requests for the JSON:API headers and paging; the
 * same call as lmsqueezy/lemonsqueezy.js listOrders, src/orders/index.ts
 * and src/internal/fetch/index.ts at
 * b1f66e905ee0614be87c3711d6529f2582e5729f): GET /v1/orders with
 * page[number] (1 the first), page[size]=100 and sort=-createdAt (as the
 * answers' own links write it), the API key as a Bearer token and
 * "Accept: application/vnd.api+json". The answer is a JSON:API document
 * {"meta": {"page": {"currentPage", "lastPage", ...}}, "links": {"next",
 * ...}, "data": [...]}, each item an order resource {"type": "orders",
 * "id": "1", "attributes": {...}}, newest first ("ordered by created_at in
 * descending"); links.next is absent on the last page.
 *
 * The list has no time filter: a window's walk reads pages from the
 * newest and stops at the first order created before the window starts;
 * orders created after it ends are left to the next pass. The window is
 * the whole span since the cursor, one walk a pass. An order arriving
 * while the list is read moves the others one place down: one may be
 * listed twice (recorded once), none is missed. The next page's number is
 * the page's own plus one (never its link's URL: the key goes only to the
 * configured base).
 *
 * Each order is mapped to the bodies its webhooks would give, the order
 * resource as data under {"meta": {"event_name": ...}}: one whose status
 * is paid, refunded or partial_refund (paid, then refunded in full or in
 * part; partial_refund is not in the docs' list but seen in deliveries)
 * is the order_created of its payment, its status written "paid" as
 * order_created said it; one whose refunded_amount (cents, cumulative:
 * docs.lemonsqueezy.com/api/orders/the-order-object) is above zero is
 * also the order_refunded of that running total, the order as listed.
 * A pending, failed or fraudulent order is left alone.
 *
 * Lemon Squeezy publishes no largest page[size] (100 is what clients ask
 * for) and keeps orders for good; payhook goes back at most a year.
 * A refund of an order created before the window is seen only by a pass
 * whose window holds the order's creation (--since).
 */
#include "config.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_lemonsqueezy.h"
#include "lifecycle.h"

#define LS_PAGE_SIZE 100
#define LS_ORDERS "/v1/orders"

static int ls_page_url(const char *base, const struct backend_window *w,
		       const char *cursor, char *url, struct error *err)
{
	(void)w; /* no time filter: parse_answer cuts the list */
	if (cursor != NULL && !backend_decimal(cursor))
		return error_set(err, "lemonsqueezy: a page that is not a "
				 "number");
	return backend_url("lemonsqueezy", url, err,
			   "%s" LS_ORDERS "?page%%5Bnumber%%5D=%s"
			   "&page%%5Bsize%%5D=%d&sort=-createdAt", base,
			   cursor != NULL ? cursor : "1", LS_PAGE_SIZE);
}

static int ls_auth_header(const char *key, char *out, struct error *err)
{
	return backend_key_header("Authorization: Bearer ", key,
				  "lemonsqueezy: lemonsqueezy_api_key", out,
				  err);
}

/* JSON:API's media type, which Lemon Squeezy's requests carry. */
static const char *const ls_headers[] = {
	"Accept: application/vnd.api+json", NULL,
};

/* The integer member name of obj, or -1 when it has none (or a negative
 * one). */
static int64_t count_of(struct json_object *obj, const char *name)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, name, &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0)
		return -1;
	return json_object_get_int64(v);
}

/* Whether an order of status was paid (and perhaps refunded since). */
static bool paid_or_later(const char *status)
{
	return strcmp(status, "paid") == 0 || strcmp(status, "refunded") == 0 ||
	       strcmp(status, "partial_refund") == 0;
}

/* Adds {"meta": {"event_name": event}, "data": order} to page. Returns 0,
 * or -1 when out of memory. */
static int add_event(struct backend_page *page, const char *event,
		     struct json_object *order)
{
	struct json_object *body = json_object_new_object();
	struct json_object *meta = json_object_new_object();
	int rc = -1;

	if (body == NULL || meta == NULL ||
	    json_object_object_add(meta, "event_name",
				   json_object_new_string(event)) != 0 ||
	    json_object_object_add(body, "meta", meta) != 0) {
		json_object_put(meta);
		goto out;
	}
	if (json_object_object_add(body, "data", json_object_get(order)) == 0 &&
	    backend_page_add_json(page, body, NULL) == 0)
		rc = 0;
out:
	json_object_put(body);
	return rc;
}

/* Adds the order_created body of order (its attributes attrs): the order
 * as it was paid. Returns 0, or -1 when out of memory. */
static int add_created(struct backend_page *page, struct json_object *order)
{
	struct json_object *copy = NULL, *attrs;
	int rc = -1;

	if (json_object_deep_copy(order, &copy, NULL) == 0 && copy != NULL &&
	    json_object_object_get_ex(copy, "attributes", &attrs) &&
	    json_object_object_add(attrs, "status",
				   json_object_new_string("paid")) == 0)
		rc = add_event(page, "order_created", copy);
	json_object_put(copy);
	return rc;
}

/* Reads order i (an item of data) into page, as the window w takes it:
 * *past set when it was created before the window. Returns 0, or -1 with
 * err set. */
static int read_order(size_t i, struct json_object *order,
		      const struct backend_window *w, struct backend_page *page,
		      bool *past, struct error *err)
{
	struct json_object *attrs;
	const char *type = backend_string(order, "type");
	const char *id = backend_string(order, "id");
	const char *status = NULL, *created = NULL;
	struct lifecycle_time at;

	if (json_object_object_get_ex(order, "attributes", &attrs) &&
	    json_object_is_type(attrs, json_type_object)) {
		status = backend_string(attrs, "status");
		created = backend_string(attrs, "created_at");
	}
	if (type == NULL || strcmp(type, "orders") != 0 || id == NULL ||
	    id[0] == '\0' || status == NULL || created == NULL ||
	    lifecycle_time_parse(created, strlen(created), &at) != 0)
		return error_set(err, "lemonsqueezy: item %zu of data is not "
				 "an order with an id, a status and a "
				 "created_at", i);
	if (at.seconds < w->from) {
		/* Newest first: this one and every one after it are
		 * older than the window. */
		*past = true;
		return 0;
	}
	if (at.seconds >= w->to || !paid_or_later(status))
		return 0; /* the next pass's, or its own webhook's */
	if (add_created(page, order) != 0 ||
	    (count_of(attrs, "refunded_amount") > 0 &&
	     add_event(page, "order_refunded", order) != 0))
		return error_set(err, "lemonsqueezy: out of memory");
	return 0;
}

static int ls_parse_answer(const struct backend_answer *a,
			   struct backend_page *page, struct error *err)
{
	struct json_object *root, *data, *meta, *pages, *links;
	long long asked = a->cursor != NULL ? strtoll(a->cursor, NULL, 10) : 1;
	bool past = false;
	int64_t current;
	size_t n;
	int rc = -1;

	if (backend_page_begin("lemonsqueezy", a->body, a->len, page, &root,
			       err) != 0)
		goto out;
	if (!json_object_object_get_ex(root, "data", &data) ||
	    !json_object_is_type(data, json_type_array) ||
	    !json_object_object_get_ex(root, "meta", &meta) ||
	    !json_object_object_get_ex(meta, "page", &pages) ||
	    (current = count_of(pages, "currentPage")) < 0 ||
	    !json_object_object_get_ex(root, "links", &links) ||
	    !json_object_is_type(links, json_type_object)) {
		error_set(err, "lemonsqueezy: the page is not a JSON:API "
			  "list with data, meta.page.currentPage and links");
		goto out;
	}
	if (current != asked) {
		error_set(err, "lemonsqueezy: page %lld asked for, page %lld "
			  "answered", asked, (long long)current);
		goto out;
	}
	n = json_object_array_length(data);
	if (n > LS_PAGE_SIZE) {
		error_set(err, "lemonsqueezy: %zu orders, more than the %d "
			  "asked for", n, LS_PAGE_SIZE);
		goto out;
	}
	for (size_t i = 0; i < n && !past; i++)
		if (read_order(i, json_object_array_get_idx(data, i),
			       a->window, page, &past, err) != 0)
			goto out;
	/* links.next is absent on the last page. */
	if (!past && backend_string(links, "next") != NULL) {
		page->has_more = true;
		snprintf(page->next, sizeof(page->next), "%lld", asked + 1);
	}
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

const struct backend backend_lemonsqueezy = {
	.profile = CONFIG_PROVIDER_LEMONSQUEEZY,
	.default_base = "https://api.lemonsqueezy.com",
	.retention_s = 365 * 86400,
	/* One walk from the newest order back to the cursor. */
	.window_s = 365 * 86400,
	.page_url = ls_page_url,
	.auth_header = ls_auth_header,
	.parse_answer = ls_parse_answer,
	.headers = ls_headers,
};
