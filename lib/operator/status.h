/* status.h - the pool's counters (metrics.h) rendered for scrapers and
 * people: the Prometheus text of metrics_path and payhook --stats (with
 * payhook-dispatch's part, status_dispatch.h, and payhook-reconcile's,
 * status_reconcile.h), the pool's status of
 * status_path, and one series read back by name. php-fpm's fpm_status.c
 * beside its fpm_scoreboard.c: the segment counts, this module speaks.
 */
#ifndef PAYHOOK_STATUS_H
#define PAYHOOK_STATUS_H

#include <stddef.h>

#include "configuration.h"
#include "metrics.h"

/* Enough for status_render's output. */
#define STATUS_RENDER_MAX 262144

/* Writes the Prometheus text exposition of everything counted into buf (cap
 * bytes, NUL-terminated). Returns its length, or -1 when it does not fit. */
long status_render(const struct metrics *metrics, const struct config *cfg,
		   char *buf, size_t cap);

/* Writes only the pool's status (the payhook_pool_* and payhook_worker_*
 * series, which status_render includes) into buf. Returns its length, or
 * -1 when it does not fit. */
long status_render_pool(const struct metrics *metrics, char *buf, size_t cap);

/* Reads one counter by its rendered name and labels, e.g.
 * status_value(m, cfg, "payhook_requests_total{provider=\"stripe\","
 * "outcome=\"processed\",status=\"200\"}"); -1 when there is no such line
 * (or memory ran out). For tests and payhook --stats. */
long long status_value(const struct metrics *metrics, const struct config *cfg,
		       const char *series);

#endif
