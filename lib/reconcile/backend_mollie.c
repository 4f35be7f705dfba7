/* backend_mollie.c - Mollie's Payments API v2 (see backend_mollie.h), as
 * Mollie's OpenAPI document (mollie/mollie-api-typescript@2bee2a58
 * .speakeasy/out.openapi.yaml: get-payment, list-payments, list-refunds,
 * list-chargebacks) and mollie/api-documentation@55628855 describe it:
 * the key as a Bearer token; a payment with "resource": "payment", its
 * amounts as {"value": "10.00", "currency": "EUR"}; amountRefunded and
 * amountChargedBack only when not zero; the lists {"count", "_embedded":
 * {"<name>": [...]}, "_links": {"next": {"href"} or null}} paged by from
 * (an id, included) and limit (at most 250), newest first.
 *
 * The fetch composes what Mollie's own embed=refunds,chargebacks would
 * give: the payment with the refunds and chargebacks its lists hold under
 * _embedded (asked only when amountRefunded or amountChargedBack says
 * there are some), so the receiver's profile reads one object.
 *
 * The list of payments has no time filter: one window from the pass's
 * start to now, read from the newest until a payment older than the
 * window; each payment as listed (its refunds and chargebacks come with
 * the fetch of its notifications). */
#include "config.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_client.h"
#include "backend_mollie.h"
#include "lifecycle.h"

#define MOLLIE_PAGE_LIMIT 250
/* Pages of one payment's refunds or chargebacks read at most. */
#define MOLLIE_SUB_PAGES 20
/* Mollie keeps payments; one window spans any lookback. */
#define MOLLIE_KEEPS_S (10LL * 365 * 86400)

static int mollie_auth_header(const char *key, char *out, struct error *err)
{
	return backend_key_header("Authorization: Bearer ", key,
				  "mollie: mollie_api_key", out, err);
}

/* The from= of a list's next link into out (BACKEND_CURSOR_MAX + 1), ""
 * when there is no next page. Returns 0, or -1 when the link is not of
 * the documented form. */
static int next_from(struct json_object *root, char *out)
{
	struct json_object *links, *next, *href;
	const char *text, *from;
	size_t n;

	out[0] = '\0';
	if (!json_object_object_get_ex(root, "_links", &links) ||
	    !json_object_object_get_ex(links, "next", &next) || next == NULL)
		return 0;
	if (!json_object_object_get_ex(next, "href", &href) ||
	    !json_object_is_type(href, json_type_string))
		return -1;
	text = json_object_get_string(href);
	from = strstr(text, "?from=");
	if (from == NULL)
		from = strstr(text, "&from=");
	if (from == NULL)
		return -1;
	from += 6;
	n = strcspn(from, "&");
	if (n == 0 || n > BACKEND_CURSOR_MAX)
		return -1;
	memcpy(out, from, n);
	out[n] = '\0';
	return backend_plain_id(out) ? 0 : -1;
}

/* The items of a list answer body[0..len) under _embedded.name (borrowed
 * from *root, which the caller puts). Returns the array, or NULL. */
static struct json_object *list_items(const char *body, size_t len,
				      const char *name,
				      struct json_object **root)
{
	struct json_object *embedded, *items;

	*root = backend_parse_json(body, len);
	if (*root == NULL || !json_object_is_type(*root, json_type_object) ||
	    !json_object_object_get_ex(*root, "_embedded", &embedded) ||
	    !json_object_object_get_ex(embedded, name, &items) ||
	    !json_object_is_type(items, json_type_array))
		return NULL;
	return items;
}

/* Whether an amount object's value is above zero ("0.00" is not). */
static bool above_zero(struct json_object *payment, const char *member)
{
	struct json_object *amount, *value;
	const char *text;

	if (!json_object_object_get_ex(payment, member, &amount) ||
	    !json_object_object_get_ex(amount, "value", &value) ||
	    !json_object_is_type(value, json_type_string))
		return false;
	for (text = json_object_get_string(value); *text != '\0'; text++)
		if (*text >= '1' && *text <= '9')
			return true;
	return false;
}

/* Every item of the payment's list name (refunds, chargebacks), page
 * after page, into into. Returns an enum backend_fetch. */
static enum backend_fetch fetch_list(struct api_client *client,
				     const char *base, const char *id,
				     const char *name, struct json_object *into,
				     struct error *err)
{
	char url[BACKEND_URL_MAX], from[BACKEND_CURSOR_MAX + 1] = "";

	for (int pages = 0; pages < MOLLIE_SUB_PAGES; pages++) {
		struct json_object *root = NULL, *items;
		const char *body;
		size_t len;
		enum backend_fetch rc;

		if (backend_url("mollie", url, err,
				"%s/v2/payments/%s/%s?limit=%d%s%s", base, id,
				name, MOLLIE_PAGE_LIMIT,
				from[0] != '\0' ? "&from=" : "", from) != 0)
			return BACKEND_FETCH_FAILED;
		rc = backend_fetch_get(client, url, &body, &len, err);
		if (rc != BACKEND_FETCHED)
			/* The payment's list of a payment that is there:
			 * a 404 is no answer to trust. */
			return BACKEND_FETCH_FAILED;
		items = list_items(body, len, name, &root);
		if (items == NULL || next_from(root, from) != 0) {
			json_object_put(root);
			error_set(err, "mollie: the %s of %s are not a list of "
				  "the documented form", name, id);
			return BACKEND_FETCH_FAILED;
		}
		for (size_t i = 0; i < json_object_array_length(items); i++)
			json_object_array_add(into, json_object_get(
				json_object_array_get_idx(items, i)));
		json_object_put(root);
		if (from[0] == '\0')
			return BACKEND_FETCHED;
	}
	error_set(err, "mollie: more than %d pages of %s of %s",
		  MOLLIE_SUB_PAGES, name, id);
	return BACKEND_FETCH_FAILED;
}

static enum backend_fetch mollie_fetch(struct api_client *client,
				       const char *base, const char *id,
				       struct backend_page *page,
				       struct error *err)
{
	char url[BACKEND_URL_MAX];
	struct json_object *root, *embedded, *refunds, *chargebacks;
	const char *body, *resource, *got;
	size_t len;
	enum backend_fetch rc;

	memset(page, 0, sizeof(*page));
	page->total = -1;
	if (backend_url("mollie", url, err, "%s/v2/payments/%s", base, id) != 0)
		return BACKEND_FETCH_FAILED;
	rc = backend_fetch_get(client, url, &body, &len, err);
	if (rc != BACKEND_FETCHED)
		return rc;
	root = backend_parse_json(body, len);
	resource = root != NULL ? backend_string(root, "resource") : NULL;
	got = root != NULL ? backend_string(root, "id") : NULL;
	if (resource == NULL || strcmp(resource, "payment") != 0 ||
	    got == NULL || strcmp(got, id) != 0) {
		json_object_put(root);
		error_set(err, "mollie: the answer for %s is not that payment",
			  id);
		return BACKEND_FETCH_FAILED;
	}
	embedded = json_object_new_object();
	refunds = json_object_new_array();
	chargebacks = json_object_new_array();
	json_object_object_add(embedded, "refunds", refunds);
	json_object_object_add(embedded, "chargebacks", chargebacks);
	/* Replaces whatever the payment embeds by what its lists hold. */
	json_object_object_add(root, "_embedded", embedded);
	rc = BACKEND_FETCHED;
	if (above_zero(root, "amountRefunded"))
		rc = fetch_list(client, base, id, "refunds", refunds, err);
	if (rc == BACKEND_FETCHED && above_zero(root, "amountChargedBack"))
		rc = fetch_list(client, base, id, "chargebacks", chargebacks,
				err);
	if (rc == BACKEND_FETCHED &&
	    backend_page_add_json(page, root, NULL) != 0) {
		error_set(err, "mollie: out of memory");
		rc = BACKEND_FETCH_FAILED;
	}
	json_object_put(root);
	if (rc != BACKEND_FETCHED)
		backend_page_cleanup(page);
	return rc;
}

static int mollie_page_url(const char *base, const struct backend_window *w,
			   const char *cursor, char *url, struct error *err)
{
	(void)w;
	if (cursor != NULL && !backend_plain_id(cursor))
		return error_set(err, "mollie: a cursor that is no payment id");
	return backend_url("mollie", url, err, "%s/v2/payments?limit=%d%s%s",
			   base, MOLLIE_PAGE_LIMIT,
			   cursor != NULL ? "&from=" : "",
			   cursor != NULL ? cursor : "");
}

/* A page of payments, newest first: those created in the window kept,
 * and the walk ends at the first one older than the window. */
static int mollie_parse_answer(const struct backend_answer *a,
			       struct backend_page *page, struct error *err)
{
	struct json_object *root = NULL, *items;
	bool older = false;
	int rc = -1;

	memset(page, 0, sizeof(*page));
	page->total = -1;
	items = list_items(a->body, a->len, "payments", &root);
	if (items == NULL || next_from(root, page->next) != 0) {
		error_set(err, "mollie: the page is not a list of payments "
			  "of the documented form");
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *p = json_object_array_get_idx(items, i);
		const char *created = backend_string(p, "createdAt");
		struct lifecycle_time t;

		if (created == NULL || backend_string(p, "id") == NULL ||
		    lifecycle_time_parse(created, strlen(created), &t) != 0) {
			error_set(err, "mollie: item %zu of payments is not a "
				  "payment with an id and a createdAt", i);
			goto out;
		}
		if (a->window != NULL && t.seconds < a->window->from) {
			older = true;
			break;
		}
		if (a->window != NULL && t.seconds >= a->window->to)
			continue;
		if (backend_page_add_json(page, p, NULL) != 0) {
			error_set(err, "mollie: out of memory");
			goto out;
		}
	}
	page->has_more = !older && page->next[0] != '\0';
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

const struct backend backend_mollie = {
	.profile = CONFIG_PROVIDER_MOLLIE,
	.default_base = "https://api.mollie.com",
	.retention_s = MOLLIE_KEEPS_S,
	.window_s = MOLLIE_KEEPS_S,
	.page_url = mollie_page_url,
	.auth_header = mollie_auth_header,
	.parse_answer = mollie_parse_answer,
	.paging = BACKEND_PAGING_CURSOR,
	.fetch = mollie_fetch,
};
