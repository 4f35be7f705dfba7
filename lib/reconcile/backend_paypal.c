/* backend_paypal.c - PayPal's webhook event notifications as its API
 * reference documents them (developer.paypal.com/api/webhooks/v1, "List
 * event notifications"; paypal/paypal-rest-api-specifications
 * openapi/notifications_webhooks_v1.json at
 * ec4d8f36a6ab0abcc3865e1072aaddc85ea14d5c, operation webhooks-events.list):
 * GET /v1/notifications/webhooks-events with start_time and end_time (RFC
 * 3339, "on or after" and "on or before": the window's first and last
 * second) and page_size. The answer is an EventList {"events": [...],
 * "count": ..., "links": [...]}, each event the body a webhook delivers
 * (id, create_time, event_type, resource, ...): recorded as if delivered.
 * The list filters one event_type at most, so every type is listed; the
 * profile ignores what it does not record. Further pages are the links
 * entry whose rel is "next" (none on the last page: the PayPal-node-SDK's
 * test/mocks/notification.js at 965a132d7f5d5880840e55d82f9dbc80eb44e159);
 * its query (PayPal-PHP-SDK's WebhookFunctionalTest/testEventSearch.json at
 * 1a2ed767bb09374a8a222069930e94fccf99009e: move_to=next, index_time,
 * index_id) is asked of the configured base, never its host: the token
 * goes nowhere else.
 *
 * The list takes an OAuth2 access token, not a key (the spec's
 * securitySchemes: clientCredentials, tokenUrl /v1/oauth2/token):
 * paypal_api_key is the REST app's client_id:secret, sent as HTTP Basic
 * to POST /v1/oauth2/token (oauth.h keeps the token). The events listed
 * are the app's own: the app of paypal_webhook_id.
 *
 * PayPal publishes no largest page_size (the spec: default 10, and "the
 * response might have fewer items than the requested page_size"): 50 is
 * asked, the largest page of PayPal's other v1 list with one
 * (customer_disputes_v1.json: page_size maximum 50), and pages are
 * followed by their links whatever their size. The events are kept 30
 * days (developer.paypal.com/api/rest/webhooks/events-dashboard: "The
 * range must be in the last 30 days"; the node SDK's mock answers a
 * start_time a year back with 400 VALIDATION_ERROR).
 */
#include "config.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "backend_paypal.h"

#define PAYPAL_PAGE_SIZE 50
#define PAYPAL_EVENTS "/v1/notifications/webhooks-events"

/* Whether q is a non-empty query as PayPal writes its next links: letters,
 * digits, "-._~" and "%=&:+,", nothing that would end or change the URL. */
static bool plain_query(const char *q)
{
	size_t n = strspn(q, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvw"
			     "xyz0123456789-._~%=&:+,");

	return n > 0 && q[n] == '\0';
}

static int paypal_page_url(const char *base, const struct backend_window *w,
			   const char *cursor, char *url, struct error *err)
{
	char from[BACKEND_QUERY_TIME_MAX], to[BACKEND_QUERY_TIME_MAX];

	if (cursor != NULL) {
		if (!plain_query(cursor))
			return error_set(err, "paypal: a next page whose query "
					 "is not plain URL text");
		return backend_url("paypal", url, err, "%s" PAYPAL_EVENTS "?%s",
				   base, cursor);
	}
	if (backend_window_query("paypal", w, from, to, err) != 0)
		return -1;
	return backend_url("paypal", url, err,
			   "%s" PAYPAL_EVENTS "?page_size=%d&start_time=%s"
			   "&end_time=%s", base, PAYPAL_PAGE_SIZE, from, to);
}

/* The token request's credentials: the app's client_id:secret. */
static int paypal_auth_header(const char *key, char *out, struct error *err)
{
	return backend_basic_pair(key, "paypal: paypal_api_key",
				  "client_id:secret", out, err);
}

/* Copies the query of href, a link to this list ("https://<host>/v1/
 * notifications/webhooks-events[/]?<query>"), into out. Returns whether
 * it is one with a plain query. */
static bool next_query(const char *href, char out[BACKEND_CURSOR_MAX + 1])
{
	const char *scheme = strstr(href, "://");
	const char *path = scheme != NULL ? strchr(scheme + 3, '/') : href;
	const char *q;
	size_t len;

	if (path == NULL || strncmp(path, PAYPAL_EVENTS,
				    sizeof(PAYPAL_EVENTS) - 1) != 0)
		return false;
	q = path + sizeof(PAYPAL_EVENTS) - 1;
	if (*q == '/')
		q++;
	if (*q++ != '?')
		return false;
	len = strlen(q);
	if (len > BACKEND_CURSOR_MAX || !plain_query(q))
		return false;
	memcpy(out, q, len + 1);
	return true;
}

/* What each event of events carries to be one a webhook would deliver. */
static const struct backend_event_shape paypal_event = {
	.list = "events", .id_member = "id", .type_member = "event_type",
	.object_member = "resource",
	.needs = "an id, an event_type and a resource object",
};

static int paypal_parse_page(const char *body, size_t len,
			     struct backend_page *page, struct error *err)
{
	struct json_object *root, *events, *links = NULL;
	int rc = -1;

	if (backend_page_begin("paypal", body, len, page, &root, err) != 0)
		goto out;
	if (!json_object_object_get_ex(root, "events", &events) ||
	    !json_object_is_type(events, json_type_array) ||
	    (json_object_object_get_ex(root, "links", &links) &&
	     !json_object_is_type(links, json_type_array))) {
		error_set(err, "paypal: the page is not an event list with "
			  "events (and links)");
		goto out;
	}
	if (backend_page_events("paypal", events, &paypal_event, page, NULL,
				err) != 0)
		goto out;
	for (size_t i = 0; links != NULL && i < json_object_array_length(links);
	     i++) {
		struct json_object *link = json_object_array_get_idx(links, i);
		const char *rel = backend_string(link, "rel");
		const char *href = backend_string(link, "href");

		if (rel == NULL || strcmp(rel, "next") != 0)
			continue;
		if (href == NULL || !next_query(href, page->next)) {
			error_set(err, "paypal: a next link that is not this "
				  "list's with a plain query");
			goto out;
		}
		page->has_more = true;
	}
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

const struct backend backend_paypal = {
	.profile = CONFIG_PROVIDER_PAYPAL,
	.default_base = "https://api-m.paypal.com",
	.retention_s = 30 * 86400,
	.window_s = 86400,
	.page_url = paypal_page_url,
	.auth_header = paypal_auth_header,
	.parse_page = paypal_parse_page,
	.token_path = "/v1/oauth2/token",
};
