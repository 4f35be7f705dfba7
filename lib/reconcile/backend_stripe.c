/* backend_stripe.c - Stripe's events as its API reference documents them
 * (docs.stripe.com/api/events/list): GET /v1/events with types[] (the
 * events the stripe profile records: payment_intent.succeeded and the
 * refund and dispute events of its lifecycle table), created[gte] and
 * created[lt] (one closed window), limit=100 (Stripe's largest page) and
 * starting_after=<the last event's id> while has_more; the secret or
 * restricted key (Events read) as a Bearer token. The answer is a list
 * object {"object": "list", "data": [...], "has_more": ...}, newest event
 * first, and each event in data is the object a webhook delivers. Stripe
 * keeps events 30 days. Checked against stripe/stripe-node
 * src/resources/Events.ts (EventListParams: created, types "up to 20",
 * "going back up to 30 days") and src/shared.ts (PaginationParams: limit
 * "between 1 and 100", starting_after; RangeQueryParam gte/lt). */
#include "config.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "backend_stripe.h"

/* What the stripe profile records (provider.c, provider_lifecycle.c), as
 * types[] asks for them, URL-encoded. */
static const char types_query[] =
	"types%5B%5D=payment_intent.succeeded"
	"&types%5B%5D=refund.created&types%5B%5D=refund.updated"
	"&types%5B%5D=refund.failed"
	"&types%5B%5D=charge.dispute.created"
	"&types%5B%5D=charge.dispute.updated"
	"&types%5B%5D=charge.dispute.closed";

#define STRIPE_PAGE_LIMIT 100

static int stripe_page_url(const char *base, const struct backend_window *w,
			   const char *cursor, char *url, struct error *err)
{
	/* Stripe's ids are letters, digits and '_': nothing to encode. */
	if (cursor != NULL && !backend_plain_id(cursor))
		return error_set(err, "stripe: an event id that is not "
				 "letters, digits and '_'");
	return backend_url("stripe", url, err,
			   "%s/v1/events?%s&created%%5Bgte%%5D=%" PRId64
			   "&created%%5Blt%%5D=%" PRId64 "&limit=%d%s%s",
			   base, types_query, w->from, w->to,
			   STRIPE_PAGE_LIMIT,
			   cursor != NULL ? "&starting_after=" : "",
			   cursor != NULL ? cursor : "");
}

static int stripe_auth_header(const char *key, char *out, struct error *err)
{
	return backend_key_header("Authorization: Bearer ", key,
				  "stripe: stripe_api_key", out, err);
}

/* What each event of data carries: its id is the next page's
 * starting_after. */
static const struct backend_event_shape stripe_event = {
	.list = "data", .kind_member = "object", .kind_value = "event",
	.id_member = "id", .id_form = backend_plain_id, .type_member = "type",
	.needs = "an id (letters, digits, '_') and a type",
};

static int stripe_parse_page(const char *body, size_t len,
			     struct backend_page *page, struct error *err)
{
	struct json_object *root, *data, *more;
	const char *object, *last = NULL;
	int rc = -1;

	if (backend_page_begin("stripe", body, len, page, &root, err) != 0)
		goto out;
	object = backend_string(root, "object");
	if (object == NULL || strcmp(object, "list") != 0 ||
	    !json_object_object_get_ex(root, "data", &data) ||
	    !json_object_is_type(data, json_type_array) ||
	    !json_object_object_get_ex(root, "has_more", &more) ||
	    !json_object_is_type(more, json_type_boolean)) {
		error_set(err, "stripe: the page is not a list object with "
			  "data and has_more");
		goto out;
	}
	if (backend_page_events("stripe", data, &stripe_event, page, &last,
				err) != 0)
		goto out;
	page->has_more = json_object_get_boolean(more);
	if (page->has_more) {
		if (last == NULL || strlen(last) > BACKEND_CURSOR_MAX) {
			error_set(err, "stripe: has_more with no event to "
				  "continue after");
			goto out;
		}
		snprintf(page->next, sizeof(page->next), "%s", last);
	}
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

const struct backend backend_stripe = {
	.profile = CONFIG_PROVIDER_STRIPE,
	.default_base = "https://api.stripe.com",
	.retention_s = 30 * 86400,
	.window_s = 86400,
	.page_url = stripe_page_url,
	.auth_header = stripe_auth_header,
	.parse_page = stripe_parse_page,
	.livemode_member = "livemode",
	.account_member = "account",
};
