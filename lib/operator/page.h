/* page.h - the operator's page (status_page_path): one read-only HTML5
 * page with the pool's status, each profile's answers over the last hour as
 * an inline SVG chart, the latest failures, the hand-off's gauges (from
 * payhook-dispatch's metrics, when it shares the segment), the counts of
 * refunds and disputes, and payhook-reconcile's figures per profile (as
 * payhook-dispatch read them from reconcile_cursors). No script, no external asset;
 * readable on a phone (one column under 600 px).
 */
#ifndef PAYHOOK_PAGE_H
#define PAYHOOK_PAGE_H

#include <stddef.h>

#include "configuration.h"
#include "metrics.h"
#include "store.h"

/* What MySQL told the page of refunds and disputes (the hand-off's
 * figures come from payhook-dispatch's metrics in the segment). */
struct page_backend {
	const struct store_summary *summary; /* NULL: MySQL did not answer */
	long age_s;                          /* how old summary is */
};

/* Writes the page (the HTML document only, no headers) into buf (cap
 * bytes). Returns its length, or -1 when it does not fit (or memory ran
 * out). */
long page_render(const struct metrics *metrics, const struct config *cfg,
		 const struct page_backend *backend, char *buf, size_t cap);

#endif
