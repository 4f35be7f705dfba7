/* metrics_reconcile.h - payhook-reconcile's figures per profile in the
 * pool's shared segment (metrics.h, laid out in scoreboard.h): the rows its
 * passes recorded, the discrepancies they found, the last complete pass,
 * the failed passes in a row and the last error, and the alert episodes
 * open. payhook-reconcile runs apart (cron, another host): payhook-dispatch,
 * which runs all along, reads them from reconcile_cursors and publishes
 * them here as it does the hand-off's gauges; payhook's status.c
 * (metrics_path, --stats) and page.c read them.
 */
#ifndef PAYHOOK_METRICS_RECONCILE_H
#define PAYHOOK_METRICS_RECONCILE_H

#include <stdbool.h>
#include <stdint.h>

#include "configuration.h"
#include "metrics.h"

/* When payhook-dispatch alerts (reconcile_watch.h): a profile's passes
 * failed this many times in a row, or its last complete pass is this old
 * (a day). */
#define METRICS_RECONCILE_ALERT_FAILED_PASSES 3
#define METRICS_RECONCILE_ALERT_STALE_S 86400L

/* The last error as shown (reconcile_cursors.last_error, cut). */
#define METRICS_RECONCILE_ERROR_MAX 127

/* One profile's figures. */
struct metrics_reconcile {
	bool known;                    /* the profile has a cursor row */
	unsigned long long recovered;  /* rows recorded by its passes */
	unsigned long long discrepancies;
	unsigned failed_passes;        /* in a row; 0 after a complete one */
	int64_t last_success_s;        /* the last complete pass (Unix time);
					* 0: none yet */
	int64_t last_error_s;          /* the last failed one's; 0: none */
	bool failing, stale;           /* the alert episodes open */
	char last_error[METRICS_RECONCILE_ERROR_MAX + 1]; /* "" after a
							   * complete pass */
	/* A provider that only notifies: its queue (table notifications),
	 * as payhook-dispatch counts it (notify_watch.h). */
	bool notify_known;             /* the figures below are read */
	unsigned long long notify_pending, notify_done, notify_rejected;
	long long notify_oldest_s;     /* the oldest pending one's age, s;
					* 0: none pending */
	bool notify_waiting;           /* its notify_waiting episode open */
};

/* Publishes every profile's figures (rows: CONFIG_PROVIDER_COUNT entries,
 * by enum config_provider) with the time they were read. Can't fail;
 * metrics NULL is fine. */
void metrics_reconcile_publish(struct metrics *metrics,
			       const struct metrics_reconcile *rows);

/* The figures last published: true with rows (CONFIG_PROVIDER_COUNT
 * entries) and *at_s (Unix time they were read) filled; false when no
 * payhook-dispatch published any. Can't fail. */
bool metrics_reconcile_read(const struct metrics *metrics,
			    struct metrics_reconcile *rows, int64_t *at_s);

#endif
