/* notify_watch.h - payhook-dispatch's watch over the queue of the
 * providers that only notify (prefix notify_watch_): payhook-reconcile
 * fetches their notifications, and a fetcher that stopped running (or
 * cannot reach the API) cannot alert, so the dispatcher, which runs all
 * along, reads table notifications on the hand-off store's connection:
 * each provider's pending, done and rejected notifications and the
 * oldest pending one's age (for the metrics and the operator's page), and
 * its alert episode. An episode opens when a notification has been
 * pending for notify_alert_after_s (notify_waiting, queued in
 * dispatch_alerts for the dispatcher's target in the transaction that
 * marks it in notification_episodes, so it is sent once however many
 * dispatchers watch), and ends, logged, once none is.
 *
 * Times are the database's clock. A database without the tables
 * (db/migrate-16-notifications.sql) says NOTIFY_WATCH_MISSING.
 */
#ifndef PAYHOOK_NOTIFY_WATCH_H
#define PAYHOOK_NOTIFY_WATCH_H

#include "configuration.h"
#include "error.h"
#include "handoff_store.h"
#include "metrics_reconcile.h"

enum notify_watch_status {
	NOTIFY_WATCH_OK = 0,
	NOTIFY_WATCH_MISSING, /* no notifications table */
	NOTIFY_WATCH_FAILED,  /* the database failed; err says why */
};

/* Reads each provider's queue into rows' notify_ fields
 * (CONFIG_PROVIDER_COUNT entries by enum config_provider: known for each
 * enabled profile that only notifies), and, for each episode that opens
 * or ends, marks it and queues its alert for the target whose
 * dispatch_alerts key is target_key in one transaction. Stores how many
 * alerts it queued in *queued. Returns NOTIFY_WATCH_OK, or another status
 * with err set (the transaction rolled back). */
enum notify_watch_status notify_watch_run(struct handoff_store *store,
					  const struct config *cfg,
					  const char *target_key,
					  struct metrics_reconcile *rows,
					  unsigned *queued, struct error *err);

#endif
