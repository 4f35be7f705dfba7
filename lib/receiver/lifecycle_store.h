/* lifecycle_store.h - the receiver's SQL for refunds, disputes and
 * cancellations, on the MySQL client core (sqlconn.h): one payment_events
 * row per lifecycle object under the unique key uq_payment_events_object,
 * one payment_event_changes row per change of it (what the hand-off sends
 * on), and the payment's totals recomputed from the rows, all in one
 * transaction.
 *
 * The caller holds the payment's lock (the same key as the payment's); the
 * transaction still locks the payment's row and then the object's row
 * (SELECT ... FOR UPDATE), so two writers without the lock (Redis down
 * under db_only) serialise on the rows, or one gets a deadlock (503).
 *
 * It keeps a connection of its own, opened on the first lifecycle event a
 * worker receives.
 */
#ifndef PAYHOOK_LIFECYCLE_STORE_H
#define PAYHOOK_LIFECYCLE_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "configuration.h"
#include "error.h"
#include "lifecycle.h"
#include "store.h"

struct lifecycle_store; /* one connection and its statements; opaque */

/* Returns a store for cfg (not yet connected; cfg must outlive it), or NULL
 * with err set when out of memory. */
struct lifecycle_store *lifecycle_store_new(const struct config *cfg,
					    struct error *err);

/* Closes the connection and frees the store; NULL is fine. */
void lifecycle_store_free(struct lifecycle_store *ls);

/* Connects when not connected, statements prepared. Returns 0, or -1 with
 * err naming what failed. */
int lifecycle_store_connect(struct lifecycle_store *ls, struct error *err);

/* Records event (with the raw body as the row's payload) in one
 * transaction, asking guard (may be NULL) before the write and before the
 * COMMIT:
 *   STORE_INSERTED  a new object, or a state (or a larger running total)
 *                   the row did not hold: the row, one change and the
 *                   payment's totals (when the payment is recorded) are
 *                   committed; when the payment is not recorded, only after
 *                   guard's early_event (when set) agreed;
 *   STORE_DUPLICATE the row holds this state already, or a newer event set
 *                   it (lifecycle_supersedes), or the event's signed item
 *                   (has_signed_digest) was recorded before, whatever its
 *                   unsigned fields say: nothing written, except that the
 *                   same state said at a later time moves the row's event
 *                   id and time on (lifecycle_restates), and that a signed
 *                   item not seen before is recorded (payment_event_items)
 *                   so that resent with a later time it still changes
 *                   nothing, committed;
 *   STORE_CONFLICT  the payment is recorded in another currency: nothing
 *                   written;
 *   STORE_INVALID   a succeeded refund that would carry the payment's
 *                   refunded_amount past STORE_AMOUNT_MAX (with the
 *                   refunds already counted in its currency, recorded
 *                   payment or not): nothing written, err says why;
 * else a failure status as store_insert_payment's (RETRYABLE after 1213 or
 * 1205, UNKNOWN_OUTCOME when the connection broke during COMMIT,
 * LEASE_EXPIRED, UNAVAILABLE), nothing of this call left behind except
 * for UNKNOWN_OUTCOME, with err naming what failed. An event of
 * kind_from_first whose object is recorded with the other kind is recorded
 * as of that kind (a duplicate when its state is none of that kind's). */
enum store_status lifecycle_store_record(struct lifecycle_store *ls,
					 const struct lifecycle_event *event,
					 const void *payload, size_t payload_len,
					 const struct store_guard *guard,
					 struct error *err);

/* Calls each for every payment (provider, transaction id) that has
 * lifecycle rows and no payments row yet, for the rebuild of the lock's
 * early marks, until each returns -1. Returns 0, or -1 with err set (by
 * each, or naming the query that failed). */
int lifecycle_store_early_scan(struct lifecycle_store *ls,
			       int (*each)(void *ctx, const char *provider,
					   const char *transaction_id,
					   size_t transaction_id_len,
					   struct error *err),
			       void *ctx, struct error *err);

/* Recomputes, from its lifecycle rows, the totals of every recorded
 * payment that has such rows, for the rebuild of the early marks: while
 * Redis had lost the locks, a payment's plain INSERT (no mark when its lock
 * was taken) and an event recorded before it by another worker, neither
 * seeing the other, may have left the payment without that event in its
 * totals. *repaired: how many payments' totals changed. Returns 0, or -1
 * with err naming the query that failed (nothing changed). */
int lifecycle_store_repair_totals(struct lifecycle_store *ls,
				  unsigned long *repaired, struct error *err);

/* Without a lock (another delivery holds it): STORE_DUPLICATE when the
 * committed row would not change at all for event (neither its state nor
 * its event time: a state said again later is not a duplicate here, see
 * lifecycle_restates), STORE_CONFLICT when the
 * payment is recorded in another currency, STORE_NOT_FOUND otherwise, or a
 * failure status with err set. */
enum store_status lifecycle_store_find(struct lifecycle_store *ls,
				       const struct lifecycle_event *event,
				       struct error *err);

/* For --check-config: payment_events with the columns payhook writes,
 * VARBINARY ids and the unique key uq_payment_events_object on exactly
 * (provider, kind, object_id); the payments totals columns;
 * payment_event_changes; and payment_event_items. Returns 0, or -1 with
 * err naming the migration file to run. */
int lifecycle_store_check_schema(struct lifecycle_store *ls,
				 struct error *err);

/* Whether the refund the last lifecycle_store_record committed
 * (STORE_INSERTED) carried its recorded payment's refunded_amount past the
 * payment's own amount: recorded all the same (it is what the provider
 * says), but worth a look. When so, why says it for the log. Can't fail. */
bool lifecycle_store_suspicious(const struct lifecycle_store *ls,
				struct error *why);

/* The MySQL error number of the last failure, 0 after a success (for the
 * metrics). */
unsigned lifecycle_store_last_error(const struct lifecycle_store *ls);

#endif
