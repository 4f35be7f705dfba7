/* backend.c - the page helpers the backends share (backend.h). */
#include "config.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "encoding.h"

void backend_page_cleanup(struct backend_page *page)
{
	for (size_t i = 0; i < page->count; i++)
		free(page->events[i].body);
	free(page->events);
	memset(page, 0, sizeof(*page));
	page->total = -1;
}

int backend_page_add(struct backend_page *page, const char *body, size_t len)
{
	struct backend_event *grown;
	char *copy = malloc(len + 1);

	if (copy == NULL)
		return -1;
	grown = realloc(page->events, (page->count + 1) * sizeof(*grown));
	if (grown == NULL) {
		free(copy);
		return -1;
	}
	memcpy(copy, body, len);
	copy[len] = '\0';
	page->events = grown;
	page->events[page->count++] = (struct backend_event){ copy, len };
	return 0;
}

int backend_basic_auth(const char *key, char *out, struct error *err)
{
	static const char prefix[] = "Authorization: Basic ";
	char user[BACKEND_HEADER_MAX];
	size_t len = strlen(key);
	int rc = 0;

	/* base64 of len + 1 bytes, the prefix and the NUL must fit. */
	if (len + 1 >= sizeof(user) ||
	    sizeof(prefix) + (len + 1 + 2) / 3 * 4 > BACKEND_HEADER_MAX)
		return error_set(err, "the API key is too long");
	memcpy(user, key, len);
	user[len] = ':';
	memcpy(out, prefix, sizeof(prefix) - 1);
	encoding_base64_encode((const unsigned char *)user, len + 1,
			       out + sizeof(prefix) - 1);
	/* The copy of the key is wiped before the stack is reused. */
	{
		volatile char *p = user;

		for (size_t i = 0; i <= len; i++)
			p[i] = '\0';
	}
	return rc;
}

int backend_bearer_auth(const char *key, char *out, struct error *err)
{
	int n = snprintf(out, BACKEND_HEADER_MAX, "Authorization: Bearer %s",
			 key);

	if (n < 0 || n >= BACKEND_HEADER_MAX)
		return error_set(err, "the API key is too long");
	return 0;
}

const char *backend_string_member(struct json_object *obj, const char *name)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, name, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

struct json_object *backend_parse_object(const char *body, size_t len)
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
	     json_tokener_get_parse_end(tok) != len ||
	     !json_object_is_type(root, json_type_object))) {
		json_object_put(root);
		root = NULL;
	}
	json_tokener_free(tok);
	return root;
}

int backend_page_add_json(struct backend_page *page, struct json_object *event)
{
	size_t len = 0;
	const char *text = json_object_to_json_string_length(
		event, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
		&len);

	if (text == NULL)
		return -1;
	return backend_page_add(page, text, len);
}
