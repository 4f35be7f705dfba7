/* reconcile_watch.h - payhook-dispatch's watch over payhook-reconcile
 * (prefix reconcile_watch_). payhook-reconcile runs apart (from cron,
 * maybe on another host) and a reconciler that stopped running cannot
 * alert, so the dispatcher, which runs all along, reads reconcile_cursors
 * on the hand-off store's connection: each profile's figures (for the
 * metrics and the operator's page), and its alert episodes. An episode
 * opens when a profile's passes failed RECONCILE_WATCH_FAILED_PASSES times
 * in a row (reconcile_failing) or its last complete pass is older than
 * RECONCILE_WATCH_STALE_S (reconcile_stale; a profile that never completed
 * one counts from its row's last change), and ends with one
 * reconcile_recovered when a pass completes. The alert is queued in
 * dispatch_alerts for the dispatcher's target in the transaction that
 * marks the episode in the cursor row (locked meanwhile), so it is queued
 * once however many dispatchers watch; the dispatcher sends it as it sends
 * its own (target_store_send_alerts).
 *
 * Times are the database's clock. A database without the table or its
 * counts (db/migrate-10-reconcile.sql, db/migrate-12-reconcile-status.sql)
 * says RECONCILE_WATCH_MISSING: nothing is watched.
 */
#ifndef PAYHOOK_RECONCILE_WATCH_H
#define PAYHOOK_RECONCILE_WATCH_H

#include "configuration.h"
#include "error.h"
#include "handoff_store.h"
#include "metrics_reconcile.h"

/* Failed passes in a row that open a reconcile_failing episode, and the
 * age of the last complete pass that opens a reconcile_stale one (a day):
 * metrics_reconcile.h's, which the operator's page states. */
#define RECONCILE_WATCH_FAILED_PASSES METRICS_RECONCILE_ALERT_FAILED_PASSES
#define RECONCILE_WATCH_STALE_S METRICS_RECONCILE_ALERT_STALE_S

enum reconcile_watch_status {
	RECONCILE_WATCH_OK = 0,
	RECONCILE_WATCH_MISSING, /* no reconcile_cursors or its counts */
	RECONCILE_WATCH_FAILED,  /* the database failed; err says why */
};

/* Makes the row of each profile of cfg with an API key that has none yet
 * (its age then counts toward reconcile_stale: a reconciler that never
 * runs is alerted too), reads every profile's figures into rows
 * (CONFIG_PROVIDER_COUNT entries by enum config_provider; known false
 * without a row), and, for each episode that opens or ends, marks it and
 * queues its alert for the target whose dispatch_alerts key is target_key
 * in one transaction. Stores how many alerts it queued in *queued.
 * Returns RECONCILE_WATCH_OK, or another status with err set (the
 * transaction rolled back). */
enum reconcile_watch_status reconcile_watch_run(struct handoff_store *store,
						const struct config *cfg,
						const char *target_key,
						struct metrics_reconcile *rows,
						unsigned *queued,
						struct error *err);

#endif
