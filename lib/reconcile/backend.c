/* backend.c - the page helpers the backends share (backend.h). */
#include "config.h"

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
