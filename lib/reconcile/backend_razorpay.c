/* backend_razorpay.c - Razorpay as a snapshot: Razorpay has no list of
 * events, so the pass lists its payments and refunds as its API reference
 * documents them (razorpay.com/docs/api/payments "Fetch Multiple
 * Payments", razorpay.com/docs/api/refunds "Fetch All Refunds"; the same
 * calls as razorpay-node's payments.all and refunds.all): GET /v1/payments
 * then GET /v1/refunds of one closed window, with from and to (Unix
 * seconds of created_at, both inclusive: to is the window's end less one
 * second), count=100 (Razorpay's largest page) and skip; the key pair
 * key_id:key_secret as HTTP Basic. An answer is a collection
 * {"entity": "collection", "count": n, "items": [...]}, newest first; a
 * page of fewer than count items is the last.
 *
 * Each object is mapped to the body its webhook would give: a payment
 * whose status is captured becomes the payment.captured event
 * {"entity": "event", "event": "payment.captured", "contains":
 * ["payment"], "payload": {"payment": {"entity": <the payment>}},
 * "created_at": <its created_at>}, and so does one whose status is
 * refunded with captured true (a payment's status is created, authorized,
 * captured, refunded or failed: razorpay.com/docs/api/payments, the
 * payment entity; refunded in full, it was captured first), its status
 * written as captured, as payment.captured said it; a refund whose status
 * is processed the refund.processed event around the refund entity; any
 * other status is left to its webhook (or to a later pass). The cursor of a page says
 * which list and how many were skipped: "payments:<skip>" or
 * "refunds:<skip>". Paging by skip over a list that grows newest first
 * can list an object twice (recorded once: duplicate), never miss one.
 */
#include "config.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_razorpay.h"

#define RAZORPAY_PAGE_COUNT 100

static const char payments_list[] = "payments";
static const char refunds_list[] = "refunds";

/* Reads cursor ("payments:<skip>", "refunds:<skip>" or NULL: the first
 * page of payments) into *list and *skip. Returns 0, or -1 with err set. */
static int read_cursor(const char *cursor, const char **list, long *skip,
		       struct error *err)
{
	const char *digits;
	char *end;

	*list = payments_list;
	*skip = 0;
	if (cursor == NULL)
		return 0;
	if (strncmp(cursor, "payments:", 9) == 0) {
		digits = cursor + 9;
	} else if (strncmp(cursor, "refunds:", 8) == 0) {
		*list = refunds_list;
		digits = cursor + 8;
	} else {
		return error_set(err, "razorpay: a page cursor that is not "
				 "payments:<skip> or refunds:<skip>");
	}
	if (digits[0] < '0' || digits[0] > '9')
		return error_set(err, "razorpay: a skip that is not a number");
	*skip = strtol(digits, &end, 10);
	if (*end != '\0' || *skip < 0 || *skip > INT_MAX - RAZORPAY_PAGE_COUNT)
		return error_set(err, "razorpay: a skip that is not a number");
	return 0;
}

static int razorpay_page_url(const char *base, const struct backend_window *w,
			     const char *cursor, char *url, struct error *err)
{
	const char *list;
	long skip;

	if (read_cursor(cursor, &list, &skip, err) != 0)
		return -1;
	return backend_url("razorpay", url, err,
			   "%s/v1/%s?from=%" PRId64 "&to=%" PRId64
			   "&count=%d&skip=%ld", base, list, w->from,
			   w->to - 1, RAZORPAY_PAGE_COUNT, skip);
}

static int razorpay_auth_header(const char *key, char *out, struct error *err)
{
	return backend_basic_pair(key, "razorpay: razorpay_api_key",
				  "key_id:key_secret", out, err);
}

/* Adds the webhook body of item (a payment or a refund entity) to page:
 * the event named event around it under payload.<what>.entity. Returns 0,
 * or -1 when out of memory. */
static int add_event(struct backend_page *page, const char *event,
		     const char *what, struct json_object *item)
{
	struct json_object *envelope = json_object_new_object();
	struct json_object *contains = json_object_new_array();
	struct json_object *payload = json_object_new_object();
	struct json_object *holder = json_object_new_object();
	struct json_object *created;
	int rc = -1;

	if (envelope == NULL || contains == NULL || payload == NULL ||
	    holder == NULL)
		goto out;
	json_object_object_add(envelope, "entity",
			       json_object_new_string("event"));
	json_object_object_add(envelope, "event", json_object_new_string(event));
	json_object_array_add(contains, json_object_new_string(what));
	json_object_object_add(envelope, "contains", contains);
	contains = NULL;
	json_object_object_add(holder, "entity", json_object_get(item));
	json_object_object_add(payload, what, holder);
	holder = NULL;
	json_object_object_add(envelope, "payload", payload);
	payload = NULL;
	if (json_object_object_get_ex(item, "created_at", &created))
		json_object_object_add(envelope, "created_at",
				       json_object_get(created));
	if (backend_page_add_json(page, envelope, NULL) == 0)
		rc = 0;
out:
	json_object_put(envelope);
	json_object_put(contains);
	json_object_put(payload);
	json_object_put(holder);
	return rc;
}

/* Whether payment (an entity) is one refunded in full after its capture:
 * status refunded, captured true. */
static bool refunded_after_capture(struct json_object *payment)
{
	const char *status = backend_string(payment, "status");
	struct json_object *captured;

	return status != NULL && strcmp(status, "refunded") == 0 &&
	       json_object_object_get_ex(payment, "captured", &captured) &&
	       json_object_is_type(captured, json_type_boolean) &&
	       json_object_get_boolean(captured);
}

/* Adds the payment.captured body of payment, refunded since: the payment
 * as it was captured (status captured). Returns 0, or -1 when out of
 * memory. */
static int add_captured(struct backend_page *page, struct json_object *payment)
{
	struct json_object *copy = NULL;
	int rc = -1;

	if (json_object_deep_copy(payment, &copy, NULL) == 0 && copy != NULL &&
	    json_object_object_add(copy, "status",
				   json_object_new_string("captured")) == 0)
		rc = add_event(page, "payment.captured", "payment", copy);
	json_object_put(copy);
	return rc;
}

static int razorpay_parse_answer(const struct backend_answer *a,
				 struct backend_page *page, struct error *err)
{
	struct json_object *root = NULL, *items;
	const char *list, *entity, *kind, *wanted, *event;
	size_t n;
	long skip;
	int rc = -1;

	if (backend_page_begin("razorpay", a->body, a->len, page, &root,
			       err) != 0 ||
	    read_cursor(a->cursor, &list, &skip, err) != 0)
		goto out;
	kind = list == payments_list ? "payment" : "refund";
	wanted = list == payments_list ? "captured" : "processed";
	event = list == payments_list ? "payment.captured" : "refund.processed";
	entity = backend_string(root, "entity");
	if (entity == NULL ||
	    strcmp(entity, "collection") != 0 ||
	    !json_object_object_get_ex(root, "items", &items) ||
	    !json_object_is_type(items, json_type_array)) {
		error_set(err, "razorpay: the page is not a collection with "
			  "items");
		goto out;
	}
	n = json_object_array_length(items);
	if (n > RAZORPAY_PAGE_COUNT) {
		error_set(err, "razorpay: %zu items, more than the %d asked "
			  "for", n, RAZORPAY_PAGE_COUNT);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *item = json_object_array_get_idx(items, i);
		const char *is = backend_string(item, "entity");
		const char *status = backend_string(item, "status");

		if (is == NULL || strcmp(is, kind) != 0 ||
		    backend_string(item, "id") == NULL || status == NULL) {
			error_set(err, "razorpay: item %zu of %s is not a %s "
				  "with an id and a status", i, list, kind);
			goto out;
		}
		if (list == payments_list && refunded_after_capture(item)) {
			if (add_captured(page, item) != 0) {
				error_set(err, "razorpay: out of memory");
				goto out;
			}
			continue;
		}
		if (strcmp(status, wanted) != 0)
			continue; /* its own webhook, or a later pass */
		if (add_event(page, event, kind, item) != 0) {
			error_set(err, "razorpay: out of memory");
			goto out;
		}
	}
	/* A full page: more may follow. A short one: the refunds follow
	 * the payments, and end the window. */
	if (n == RAZORPAY_PAGE_COUNT) {
		page->has_more = true;
		snprintf(page->next, sizeof(page->next), "%s:%ld", list,
			 skip + RAZORPAY_PAGE_COUNT);
	} else if (list == payments_list) {
		page->has_more = true;
		snprintf(page->next, sizeof(page->next), "refunds:0");
	}
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

const struct backend backend_razorpay = {
	.profile = CONFIG_PROVIDER_RAZORPAY,
	.default_base = "https://api.razorpay.com",
	/* Razorpay lists payments of any age; payhook goes back at most a
	 * year, as far as a --since or a stale cursor may reach. */
	.retention_s = 365 * 86400,
	.window_s = 86400,
	.page_url = razorpay_page_url,
	.auth_header = razorpay_auth_header,
	.parse_answer = razorpay_parse_answer,
};
