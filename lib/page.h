/* page.h - the operator's page (status_page_path): one read-only HTML5
 * page with the pool's status, each profile's answers over the last hour as
 * an inline SVG chart, the latest failures, and what the page knows of the
 * hand-off and of refunds and disputes. No script, no external asset;
 * readable on a phone (one column under 600 px).
 */
#ifndef PAYHOOK_PAGE_H
#define PAYHOOK_PAGE_H

#include <stddef.h>

#include "configuration.h"
#include "metrics.h"

/* Writes the page (the HTML document only, no headers) into buf (cap
 * bytes). Returns its length, or -1 when it does not fit. */
long page_render(const struct metrics *metrics, const struct config *cfg,
		 char *buf, size_t cap);

#endif
