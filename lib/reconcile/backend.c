/* backend.c - the page helpers the backends share (backend.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"

void backend_page_cleanup(struct backend_page *page)
{
	for (size_t i = 0; i < page->count; i++)
		free(page->events[i].body);
	free(page->events);
	memset(page, 0, sizeof(*page));
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
