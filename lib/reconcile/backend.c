/* backend.c - the page helpers the backends share (backend.h). */
#include "config.h"

#include <json-c/json.h>
#include <openssl/crypto.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_client.h"
#include "backend.h"
#include "encoding.h"
#include "utc.h"

void backend_page_cleanup(struct backend_page *page)
{
	for (size_t i = 0; i < page->count; i++) {
		free(page->events[i].body);
		free(page->events[i].header);
	}
	free(page->events);
	memset(page, 0, sizeof(*page));
	page->total = -1;
}

int backend_page_add(struct backend_page *page, const char *body, size_t len)
{
	return backend_page_add_with(page, body, len, NULL);
}

int backend_page_add_with(struct backend_page *page, const char *body,
			  size_t len, const char *header)
{
	struct backend_event *grown;
	char *copy = malloc(len + 1), *head = NULL;

	if (copy == NULL)
		return -1;
	if (header != NULL && (head = strdup(header)) == NULL) {
		free(copy);
		return -1;
	}
	grown = realloc(page->events, (page->count + 1) * sizeof(*grown));
	if (grown == NULL) {
		free(copy);
		free(head);
		return -1;
	}
	memcpy(copy, body, len);
	copy[len] = '\0';
	page->events = grown;
	page->events[page->count++] = (struct backend_event){ copy, len, head };
	return 0;
}

/* Writes "Authorization: Basic <base64 of text[0..len)>" into out
 * (BACKEND_HEADER_MAX bytes). Returns 0, or -1 with err saying that the
 * key named key_name is too long. */
static int basic_header(const char *text, size_t len, const char *key_name,
			char *out, struct error *err)
{
	char basic[ENCODING_BASE64_LEN(BACKEND_HEADER_MAX) + 1];
	int rc;

	if (len >= BACKEND_HEADER_MAX) {
		memset(out, 0, BACKEND_HEADER_MAX);
		return error_set(err, "%s is too long", key_name);
	}
	encoding_base64_encode((const unsigned char *)text, len, basic);
	rc = backend_key_header("Authorization: Basic ", basic, key_name, out,
				err);
	OPENSSL_cleanse(basic, sizeof(basic));
	return rc;
}

int backend_basic_auth(const char *key, const char *key_name, char *out,
		       struct error *err)
{
	char user[BACKEND_HEADER_MAX];
	size_t len = strlen(key);
	int rc;

	if (len + 1 >= sizeof(user)) {
		memset(out, 0, BACKEND_HEADER_MAX);
		return error_set(err, "%s is too long", key_name);
	}
	memcpy(user, key, len);
	user[len] = ':';
	rc = basic_header(user, len + 1, key_name, out, err);
	/* The copy of the key is wiped before the stack is reused. */
	OPENSSL_cleanse(user, len + 1);
	return rc;
}

int backend_basic_pair(const char *pair, const char *key_name,
		       const char *form, char *out, struct error *err)
{
	const char *colon = strchr(pair, ':');

	if (colon == NULL || colon == pair || colon[1] == '\0') {
		memset(out, 0, BACKEND_HEADER_MAX);
		return error_set(err, "%s must be %s", key_name, form);
	}
	return basic_header(pair, strlen(pair), key_name, out, err);
}

struct json_object *backend_parse_json(const char *body, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root = NULL;

	if (tok == NULL)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	if (len <= INT_MAX)
		root = json_tokener_parse_ex(tok, body, (int)len);
	if (root != NULL &&
	    (json_tokener_get_error(tok) != json_tokener_success ||
	     json_tokener_get_parse_end(tok) != len)) {
		json_object_put(root);
		root = NULL;
	}
	json_tokener_free(tok);
	return root;
}

const char *backend_string(struct json_object *obj, const char *name)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, name, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int backend_read_page(const struct backend *b,
		      const struct backend_answer *answer,
		      struct backend_page *page, struct error *err)
{
	if (b->parse_answer != NULL)
		return b->parse_answer(answer, page, err);
	return b->parse_page(answer->body, answer->len, page, err);
}

int backend_key_header(const char *prefix, const char *key,
		       const char *key_name, char *out, struct error *err)
{
	int n = snprintf(out, BACKEND_HEADER_MAX, "%s%s", prefix, key);

	if (n < 0 || n >= BACKEND_HEADER_MAX) {
		memset(out, 0, BACKEND_HEADER_MAX);
		return error_set(err, "%s is too long", key_name);
	}
	return 0;
}

int backend_page_add_json(struct backend_page *page, struct json_object *obj,
			  const char *header)
{
	size_t len = 0;
	const char *text = json_object_to_json_string_length(
		obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
		&len);

	if (text == NULL)
		return -1;
	return backend_page_add_with(page, text, len, header);
}

int backend_key_live(const char *key)
{
	if (strncmp(key, "sk_live_", 8) == 0 || strncmp(key, "rk_live_", 8) == 0)
		return 1;
	if (strncmp(key, "sk_test_", 8) == 0 || strncmp(key, "rk_test_", 8) == 0)
		return 0;
	return -1;
}

int backend_check_owner(const struct backend *b, const char *key,
			const struct backend_event *event, struct error *err)
{
	const char *name = config_provider_name(b->profile);
	struct json_object *root, *member;
	int live = backend_key_live(key), rc = 0;

	if (b->livemode_member == NULL && b->account_member == NULL)
		return 0;
	root = backend_parse_json(event->body, event->len);
	if (root == NULL)
		return error_set(err, "%s: a listed event is not JSON", name);
	if (b->account_member != NULL &&
	    json_object_object_get_ex(root, b->account_member, &member) &&
	    !json_object_is_type(member, json_type_null))
		rc = error_set(err, "%s listed an event of another account "
			       "(its %s is set): the key lists its own "
			       "account's, so the API base is not what it "
			       "should be", name, b->account_member);
	else if (b->livemode_member != NULL && live >= 0 &&
		 (!json_object_object_get_ex(root, b->livemode_member,
					     &member) ||
		  !json_object_is_type(member, json_type_boolean) ||
		  json_object_get_boolean(member) != (live == 1)))
		rc = error_set(err, "%s listed a%s event with a %s key: test "
			       "data is not the merchant's books (or the "
			       "other way round); check %s_api_key and "
			       "%s_api_base", name,
			       live ? " test (or unmarked)" : " live (or unmarked)",
			       live ? "live" : "test", name, name);
	json_object_put(root);
	return rc;
}

bool backend_has_key(const struct config *cfg, enum config_provider profile)
{
	return cfg->api_key[profile] != NULL && cfg->api_key[profile][0] != '\0';
}

int backend_page_begin(const char *name, const char *body, size_t len,
		       struct backend_page *page, struct json_object **root,
		       struct error *err)
{
	memset(page, 0, sizeof(*page));
	page->total = -1;
	*root = backend_parse_json(body, len);
	if (*root == NULL || !json_object_is_type(*root, json_type_object))
		return error_set(err, "%s: the page is not one JSON object "
				 "(cut short?)", name);
	return 0;
}

int backend_page_events(const char *name, struct json_object *items,
			const struct backend_event_shape *shape,
			struct backend_page *page, const char **last,
			struct error *err)
{
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *event = json_object_array_get_idx(items, i);
		const char *kind = shape->kind_member != NULL ?
					   backend_string(event,
							  shape->kind_member) :
					   NULL;
		const char *id = backend_string(event, shape->id_member);
		struct json_object *object;

		if (!json_object_is_type(event, json_type_object) ||
		    (shape->kind_member != NULL &&
		     (kind == NULL || strcmp(kind, shape->kind_value) != 0)) ||
		    id == NULL || (shape->id_form != NULL && !shape->id_form(id)) ||
		    backend_string(event, shape->type_member) == NULL ||
		    (shape->object_member != NULL &&
		     (!json_object_object_get_ex(event, shape->object_member,
						 &object) ||
		      !json_object_is_type(object, json_type_object))))
			return error_set(err, "%s: item %zu of %s is not an "
					 "event with %s", name, i, shape->list,
					 shape->needs);
		if (last != NULL)
			*last = id;
		if (shape->mend != NULL)
			shape->mend(event);
		if (backend_page_add_json(page, event, NULL) != 0)
			return error_set(err, "%s: out of memory", name);
	}
	return 0;
}

int backend_page_more(const char *name, struct backend_page *page, bool more,
		      struct error *err)
{
	page->has_more = more;
	if (more && page->count == 0)
		return error_set(err, "%s: the page says more follows but "
				 "holds nothing", name);
	return 0;
}

int backend_page_end(struct backend_page *page, struct json_object *root,
		     int rc)
{
	if (rc != 0)
		backend_page_cleanup(page);
	json_object_put(root);
	return rc;
}

bool backend_plain_id(const char *id)
{
	if (id[0] == '\0')
		return false;
	for (const char *c = id; *c != '\0'; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_'))
			return false;
	return true;
}

int backend_url(const char *name, char *url, struct error *err,
		const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(url, BACKEND_URL_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= BACKEND_URL_MAX)
		return error_set(err, "%s: the list URL is too long", name);
	return 0;
}

/* RFC 3339 UTC with ':' as %3A: a query value. */
#define QUERY_TIME "%Y-%m-%dT%H%%3A%M%%3A%SZ"

int backend_window_query(const char *name, const struct backend_window *w,
			 char *from, char *to, struct error *err)
{
	if (utc_format(w->from, QUERY_TIME, from, BACKEND_QUERY_TIME_MAX) != 0 ||
	    utc_format(w->to - 1, QUERY_TIME, to, BACKEND_QUERY_TIME_MAX) != 0)
		return error_set(err, "%s: the window has no calendar date",
				 name);
	return 0;
}

bool backend_decimal(const char *text)
{
	if (text[0] == '\0' || strlen(text) > 18)
		return false;
	for (const char *c = text; *c != '\0'; c++)
		if (*c < '0' || *c > '9')
			return false;
	return true;
}

enum backend_fetch backend_fetch_get(struct api_client *client,
				     const char *url, const char **body,
				     size_t *len, struct error *err)
{
	struct error why;

	if (api_client_get(client, url, body, len, &why) == 0)
		return BACKEND_FETCHED;
	if (api_client_last_answer(client, body, len) == 404) {
		error_set(err, "HTTP 404: the API does not know it");
		return BACKEND_UNKNOWN;
	}
	error_set(err, "%s", why.message);
	return BACKEND_FETCH_FAILED;
}
