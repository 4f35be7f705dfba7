/* retention.h - payload_retention_days (prefix retention_): payhook-dispatch
 * clears the raw payload of payments that were handed on (delivered, or
 * skipped by a migration) and were received more than that many days ago.
 * The row stays whole otherwise: its id, amount, currency, event id, key and
 * hand-off state, so a redelivery of the provider's webhook is still a
 * duplicate and the unique key still fences. The same for payment_events
 * (a refund's, dispute's or cancellation's raw body: PAY.JP's charge holds
 * a card fingerprint): cleared once every change of the object was handed
 * on and its row last changed more than that many days ago; each table has
 * a cursor of its own, payments first.
 *
 * The work goes in small steps on a connection of its own (autocommit): each
 * step looks at the next RETENTION_BATCH rows by primary key after a cursor
 * and clears the old ones among them in one short UPDATE, so no lock is held
 * longer than one such statement and the receiver's INSERTs at the end of
 * the table never wait behind it. Rows are examined in id order, which is
 * the order they were received in, so a pass ends at the first batch that
 * holds no row old enough, and the next pass starts there.
 *
 * With inbox_days above 0 each pass starts with the inbox (inbox_store.h):
 * its deliveries received more than inbox_days ago go, RETENTION_BATCH a
 * step, then the oldest of what is over inbox_max_bytes.
 */
#ifndef PAYHOOK_RETENTION_H
#define PAYHOOK_RETENTION_H

#include <stdbool.h>

#include "configuration.h"
#include "error.h"

/* Rows looked at in one step. */
#define RETENTION_BATCH 500

struct retention; /* a cursor and a connection; opaque */

/* Returns a retention for cfg (which must outlive it; payload_retention_days
 * or inbox_days above 0), not yet connected, or NULL with err set. */
struct retention *retention_new(const struct config *cfg, struct error *err);

/* Closes its connection and frees it; NULL is fine. */
void retention_free(struct retention *r);

/* One step: removes old inbox deliveries, or clears the payloads due among
 * the next RETENTION_BATCH rows.
 * Returns how many it cleared (0 or more), with *pass_done set when this
 * pass reached rows too new to clear or the end of the table (the next pass
 * goes on from there, and once a day starts again at the first row); or -1
 * with err set (the connection is dropped, the cursor kept). */
long retention_step(struct retention *r, bool *pass_done, struct error *err);

#endif
