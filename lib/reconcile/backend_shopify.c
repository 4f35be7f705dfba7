/* backend_shopify.c - Shopify as a snapshot: Shopify has no list of past
 * webhooks, so the pass lists the shop's orders as the REST Admin API
 * reference documents them (shopify.dev/docs/api/admin-rest, Order
 * resource "Retrieve a list of orders"; paging as
 * shopify.dev/docs/api/usage/pagination-rest): GET
 * /admin/api/BACKEND_SHOPIFY_API_VERSION/orders.json with status=any (the
 * default lists open orders only), updated_at_min and updated_at_max (one
 * closed window of update times, both inclusive: the window's end less
 * one second) and limit=250 (Shopify's largest page); the next page is
 * the page_info of the answer's Link header rel="next", asked for with
 * limit alone (a page_info request takes no other filter); the Admin API
 * access token in X-Shopify-Access-Token. The answer is {"orders": [...]}.
 * The base is https://<shopify_shop> unless shopify_api_base is set.
 *
 * Each order is mapped to the bodies its webhooks would give: an order
 * whose financial_status is paid, partially_refunded or refunded (paid,
 * then refunded) is the order as orders/paid said it when it was paid
 * (the same order, financial_status "paid", topic orders/paid in
 * X-Shopify-Topic); each of its refunds (the order's refunds array, each
 * with order_id and its transactions) is the body refunds/create gives,
 * with that topic. Any other financial_status (pending, authorized,
 * partially_paid, voided) is left to its webhook or a later pass.
 */
#include "config.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "backend_shopify.h"
#include "utc.h"

#define SHOPIFY_PAGE_LIMIT 250
#define SHOPIFY_ORDERS "/admin/api/" BACKEND_SHOPIFY_API_VERSION "/orders.json"
#define TOPIC_PAID "HTTP_X_SHOPIFY_TOPIC=orders/paid"
#define TOPIC_REFUND "HTTP_X_SHOPIFY_TOPIC=refunds/create"

/* A page_info token as Shopify writes them: base64url-like text. */
static bool plain_token(const char *t, size_t len)
{
	if (len == 0 || len > BACKEND_CURSOR_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') ||
		      (t[i] >= 'A' && t[i] <= 'Z') ||
		      (t[i] >= '0' && t[i] <= '9') || t[i] == '_' ||
		      t[i] == '-' || t[i] == '='))
			return false;
	return true;
}

static int shopify_page_url(const char *base, const struct backend_window *w,
			    const char *cursor, char *url, struct error *err)
{
	char from[BACKEND_QUERY_TIME_MAX], to[BACKEND_QUERY_TIME_MAX];

	if (cursor != NULL) {
		if (!plain_token(cursor, strlen(cursor)))
			return error_set(err, "shopify: a page_info that is "
					 "not letters, digits, '_', '-', '='");
		return backend_url("shopify", url, err,
				   "%s" SHOPIFY_ORDERS "?limit=%d&page_info=%s",
				   base, SHOPIFY_PAGE_LIMIT, cursor);
	}
	if (backend_window_query("shopify", w, from, to, err) != 0)
		return -1;
	return backend_url("shopify", url, err,
			   "%s" SHOPIFY_ORDERS "?status=any&updated_at_min=%s"
			   "&updated_at_max=%s&limit=%d", base, from, to,
			   SHOPIFY_PAGE_LIMIT);
}

static int shopify_auth_header(const char *key, char *out, struct error *err)
{
	return backend_key_header("X-Shopify-Access-Token: ", key,
				  "shopify: shopify_api_key", out, err);
}

static int shopify_base_for(const struct config *cfg, char *out,
			    struct error *err)
{
	int n;

	if (cfg->shopify_shop == NULL)
		return error_set(err, "shopify: shopify_shop is not set");
	n = snprintf(out, BACKEND_URL_MAX, "https://%s", cfg->shopify_shop);
	if (n < 0 || n >= BACKEND_URL_MAX)
		return error_set(err, "shopify: shopify_shop is too long");
	return 0;
}

/* Reads the page_info of link's rel="next" into next. Returns 1 when
 * there is one, 0 when there is none, -1 with err set when it is not the
 * documented form (<URL>; rel="next", parts separated by ','). */
static int next_page_info(const char *link, char next[BACKEND_CURSOR_MAX + 1],
			  struct error *err)
{
	const char *part = link;

	while (part != NULL && *part != '\0') {
		const char *open = strchr(part, '<');
		const char *close = open != NULL ? strchr(open, '>') : NULL;
		const char *end, *info;
		size_t len;

		if (open == NULL || close == NULL)
			break;
		end = strchr(close, ',');
		len = end != NULL ? (size_t)(end - close) : strlen(close);
		/* Is this part rel="next"? */
		{
			char params[128];

			snprintf(params, sizeof(params), "%.*s",
				 (int)(len < sizeof(params) ? len :
				       sizeof(params) - 1), close);
			if (strstr(params, "rel=\"next\"") == NULL) {
				part = end != NULL ? end + 1 : NULL;
				continue;
			}
		}
		info = strstr(open, "page_info=");
		if (info == NULL || info > close)
			return error_set(err, "shopify: a Link rel=\"next\" "
					 "without page_info");
		info += strlen("page_info=");
		len = strcspn(info, "&>");
		if (!plain_token(info, len))
			return error_set(err, "shopify: a Link rel=\"next\" "
					 "whose page_info is not a token");
		memcpy(next, info, len);
		next[len] = '\0';
		return 1;
	}
	return 0;
}

/* financial_status of an order that was paid (and perhaps refunded since). */
static bool paid_or_later(const char *status)
{
	return strcmp(status, "paid") == 0 ||
	       strcmp(status, "partially_refunded") == 0 ||
	       strcmp(status, "refunded") == 0;
}

/* Adds the orders/paid body of order and the refunds/create body of each
 * of its refunds. Returns 0, or -1 with err set. */
static int add_order(struct backend_page *page, size_t i,
		     struct json_object *order, struct error *err)
{
	struct json_object *refunds = NULL, *copy = NULL;
	int rc = -1;

	if (json_object_object_get_ex(order, "refunds", &refunds) &&
	    !json_object_is_type(refunds, json_type_array))
		return error_set(err, "shopify: order %zu's refunds is not an "
				 "array", i);
	/* The order as orders/paid said it: paid. */
	if (json_object_deep_copy(order, &copy, NULL) != 0 || copy == NULL ||
	    json_object_object_add(copy, "financial_status",
				   json_object_new_string("paid")) != 0 ||
	    backend_page_add_json(page, copy, TOPIC_PAID) != 0) {
		error_set(err, "shopify: out of memory");
		goto out;
	}
	for (size_t r = 0; refunds != NULL &&
			   r < json_object_array_length(refunds); r++) {
		struct json_object *refund = json_object_array_get_idx(refunds, r);

		if (!json_object_is_type(refund, json_type_object)) {
			error_set(err, "shopify: refund %zu of order %zu is not "
				  "an object", r, i);
			goto out;
		}
		if (backend_page_add_json(page, refund, TOPIC_REFUND) != 0) {
			error_set(err, "shopify: out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	json_object_put(copy);
	return rc;
}

static int shopify_parse_answer(const struct backend_answer *a,
				struct backend_page *page, struct error *err)
{
	struct json_object *root, *orders;
	int rc = -1, more = 0;
	size_t n;

	if (backend_page_begin("shopify", a->body, a->len, page, &root,
			       err) != 0)
		goto out;
	if (!json_object_object_get_ex(root, "orders", &orders) ||
	    !json_object_is_type(orders, json_type_array)) {
		error_set(err, "shopify: the page is not an object with an "
			  "orders array");
		goto out;
	}
	n = json_object_array_length(orders);
	if (n > SHOPIFY_PAGE_LIMIT) {
		error_set(err, "shopify: %zu orders, more than the %d asked "
			  "for", n, SHOPIFY_PAGE_LIMIT);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *order = json_object_array_get_idx(orders, i);
		struct json_object *id;
		const char *status = backend_string(order, "financial_status");

		if (!json_object_object_get_ex(order, "id", &id) ||
		    !json_object_is_type(id, json_type_int) || status == NULL) {
			error_set(err, "shopify: order %zu has no integer id "
				  "or no financial_status", i);
			goto out;
		}
		if (!paid_or_later(status))
			continue; /* its own webhook, or a later pass */
		if (add_order(page, i, order, err) != 0)
			goto out;
	}
	if (a->link != NULL &&
	    (more = next_page_info(a->link, page->next, err)) < 0)
		goto out;
	page->has_more = more == 1;
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

/* Whether shop is <shop>.myshopify.com: the shop's handle (letters,
 * digits, '-', not at either end) and Shopify's own domain. */
static bool shopify_shop_form(const char *shop)
{
	static const char domain[] = ".myshopify.com";
	size_t len = strlen(shop), handle = len - (sizeof(domain) - 1);

	if (len <= sizeof(domain) - 1 ||
	    strcasecmp(shop + handle, domain) != 0 || shop[0] == '-' ||
	    shop[handle - 1] == '-')
		return false;
	for (size_t i = 0; i < handle; i++)
		if (!((shop[i] >= 'a' && shop[i] <= 'z') ||
		      (shop[i] >= 'A' && shop[i] <= 'Z') ||
		      (shop[i] >= '0' && shop[i] <= '9') || shop[i] == '-'))
			return false;
	return true;
}

/* The shopify profile's own keys: its API lives on the shop's host. */
static int shopify_check_config(const struct config *cfg, struct error *err)
{
	if (cfg->shopify_shop != NULL && !shopify_shop_form(cfg->shopify_shop))
		return error_set(err, "shopify_shop must be the shop's "
				 "<shop>.myshopify.com domain (letters, digits "
				 "and '-' before .myshopify.com), not a URL or "
				 "a custom domain");
	if (backend_has_key(cfg, CONFIG_PROVIDER_SHOPIFY) &&
	    cfg->shopify_shop == NULL &&
	    cfg->api_base[CONFIG_PROVIDER_SHOPIFY] == NULL)
		return error_set(err, "shopify_api_key is set but shopify_shop "
				 "is not: set it to the shop's "
				 "<shop>.myshopify.com domain");
	return 0;
}


const struct backend backend_shopify = {
	.profile = CONFIG_PROVIDER_SHOPIFY,
	.default_base = NULL, /* the shop's own host: base_for */
	/* An access token with read_orders lists the last 60 days' orders
	 * (read_all_orders: all of them); payhook goes back that far. */
	.retention_s = 60 * 86400,
	.window_s = 86400,
	.page_url = shopify_page_url,
	.auth_header = shopify_auth_header,
	.parse_answer = shopify_parse_answer,
	.base_for = shopify_base_for,
	.check_config = shopify_check_config,
};
