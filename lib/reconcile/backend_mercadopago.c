/* backend_mercadopago.c - Mercado Pago's Payments API v1 (see
 * backend_mercadopago.h), as mercadopago/openapi@f224df3f spec3.yaml
 * (/v1/payments/{id}, /v1/payments/search, Payment, PaymentSearchResult)
 * and mercadopago/sdk-nodejs@4339894c (src/clients/payment: the access
 * token as a Bearer token) describe it: a payment is one object with its
 * refunds in it; the search answers {"paging": {"total", "limit",
 * "offset"}, "results": [...]}, filtered by range=date_created with
 * begin_date and end_date (ISO 8601), sorted by date_created ascending,
 * paged by offset and limit (no largest limit is documented: 50 is
 * asked). Payments of the last twelve months are searched. */
#include "config.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_client.h"
#include "backend_mercadopago.h"

#define MP_PAGE_LIMIT 50
#define MP_RETENTION_S (365LL * 86400)

static int mp_auth_header(const char *key, char *out, struct error *err)
{
	return backend_key_header("Authorization: Bearer ", key,
				  "mercadopago: mercadopago_api_key", out, err);
}

static enum backend_fetch mp_fetch(struct api_client *client,
				   const char *base, const char *id,
				   struct backend_page *page, struct error *err)
{
	char url[BACKEND_URL_MAX];
	struct json_object *root, *got;
	const char *body;
	size_t len;
	enum backend_fetch rc;
	bool same;

	memset(page, 0, sizeof(*page));
	page->total = -1;
	if (backend_url("mercadopago", url, err, "%s/v1/payments/%s", base,
			id) != 0)
		return BACKEND_FETCH_FAILED;
	rc = backend_fetch_get(client, url, &body, &len, err);
	if (rc != BACKEND_FETCHED)
		return rc;
	root = backend_parse_json(body, len);
	same = root != NULL && json_object_is_type(root, json_type_object) &&
	       json_object_object_get_ex(root, "id", &got) &&
	       (json_object_is_type(got, json_type_int) ||
		json_object_is_type(got, json_type_string)) &&
	       strcmp(json_object_get_string(got), id) == 0;
	json_object_put(root);
	if (!same) {
		error_set(err, "mercadopago: the answer for %s is not that "
			  "payment", id);
		return BACKEND_FETCH_FAILED;
	}
	/* What the API said, byte for byte. */
	if (backend_page_add(page, body, len) != 0) {
		error_set(err, "mercadopago: out of memory");
		return BACKEND_FETCH_FAILED;
	}
	return BACKEND_FETCHED;
}

static int mp_page_url(const char *base, const struct backend_window *w,
		       const char *cursor, char *url, struct error *err)
{
	char from[BACKEND_QUERY_TIME_MAX], to[BACKEND_QUERY_TIME_MAX];

	if (cursor != NULL && !backend_decimal(cursor))
		return error_set(err, "mercadopago: an offset that is not a "
				 "number");
	if (backend_window_query("mercadopago", w, from, to, err) != 0)
		return -1;
	return backend_url("mercadopago", url, err,
			   "%s/v1/payments/search?sort=date_created&criteria="
			   "asc&range=date_created&begin_date=%s&end_date=%s"
			   "&offset=%s&limit=%d", base, from, to,
			   cursor != NULL ? cursor : "0", MP_PAGE_LIMIT);
}

static int mp_parse_page(const char *body, size_t len,
			 struct backend_page *page, struct error *err)
{
	struct json_object *root, *paging, *results, *total, *offset;
	int rc = -1;

	if (backend_page_begin("mercadopago", body, len, page, &root, err) != 0)
		goto out;
	if (!json_object_object_get_ex(root, "paging", &paging) ||
	    !json_object_object_get_ex(paging, "total", &total) ||
	    !json_object_is_type(total, json_type_int) ||
	    !json_object_object_get_ex(paging, "offset", &offset) ||
	    !json_object_is_type(offset, json_type_int) ||
	    !json_object_object_get_ex(root, "results", &results) ||
	    !json_object_is_type(results, json_type_array)) {
		error_set(err, "mercadopago: the page is not a search result "
			  "with paging and results");
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *p = json_object_array_get_idx(results, i);
		struct json_object *id;

		if (!json_object_object_get_ex(p, "id", &id) ||
		    backend_string(p, "status") == NULL) {
			error_set(err, "mercadopago: item %zu of results is "
				  "not a payment with an id and a status", i);
			goto out;
		}
		if (backend_page_add_json(page, p, NULL) != 0) {
			error_set(err, "mercadopago: out of memory");
			goto out;
		}
	}
	page->total = (long long)json_object_get_int64(total);
	if (backend_page_more("mercadopago", page,
			      json_object_get_int64(offset) +
					      (long long)page->count <
				      page->total,
			      err) != 0)
		goto out;
	rc = 0;
out:
	return backend_page_end(page, root, rc);
}

const struct backend backend_mercadopago = {
	.profile = CONFIG_PROVIDER_MERCADOPAGO,
	.default_base = "https://api.mercadopago.com",
	.retention_s = MP_RETENTION_S,
	.window_s = 86400,
	.page_url = mp_page_url,
	.auth_header = mp_auth_header,
	.parse_page = mp_parse_page,
	.paging = BACKEND_PAGING_OFFSET,
	.fetch = mp_fetch,
};
