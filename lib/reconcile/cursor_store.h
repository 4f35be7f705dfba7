/* cursor_store.h - the reconcile_cursors table (prefix cursor_store_):
 * each profile's place in its provider's event list, the last complete
 * pass, the last error, and the lease that lets one pass per profile run
 * at a time however many hosts run payhook-reconcile. Also the look-up of
 * a payment as payhook holds it, for a discrepancy's log line.
 *
 * The lease is a row lock of our own in the cursor row (lease_owner,
 * lease_until by the database's clock), not GET_LOCK: it holds across
 * several MySQL connections and a Galera cluster's nodes, it survives a
 * reconnect, and a pass that stopped mid-way leaves it to run out.
 */
#ifndef PAYHOOK_CURSOR_STORE_H
#define PAYHOOK_CURSOR_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "configuration.h"
#include "error.h"

struct cursor_store; /* a MySQL connection (sqlconn) and our owner name */

/* A profile's row as the pass reads it. */
struct cursor_row {
	bool has_cursor;   /* false before the first complete window */
	int64_t cursor_s;  /* where the next pass starts (Unix seconds) */
};

/* Returns a store for cfg (which must outlive it), named owner in the
 * lease (host:pid), or NULL with err set. Connects lazily. */
struct cursor_store *cursor_store_new(const struct config *cfg,
				      const char *owner, struct error *err);

/* Frees the store; NULL is fine. */
void cursor_store_free(struct cursor_store *store);

/* Takes (or renews) profile's lease for lease_s seconds: 1 when this
 * process holds it now, 0 when another holds it, -1 with err set. */
int cursor_store_lease(struct cursor_store *store, const char *profile,
		       long lease_s, struct error *err);

/* Gives the lease back (when we still hold it). Failures are ignored: the
 * lease runs out by itself. */
void cursor_store_release(struct cursor_store *store, const char *profile);

/* Reads profile's row (none yet: no cursor). Returns 0, or -1. */
int cursor_store_read(struct cursor_store *store, const char *profile,
		      struct cursor_row *row, struct error *err);

/* Moves profile's cursor to cursor_s, while we hold the lease. Returns 0,
 * or -1 with err set (the lease lost included). */
int cursor_store_advance(struct cursor_store *store, const char *profile,
			 int64_t cursor_s, struct error *err);

/* Records the end of a pass: last_success_at now, last_error cleared and
 * failed_passes 0 (error NULL), or last_error = error and failed_passes
 * one more; either way the pass's recorded rows (recovered) and
 * discrepancies are added to the profile's totals. Returns 0, or -1 (the
 * times written, not the counts, when the counts' columns are missing:
 * err names db/migrate-12-reconcile-status.sql). */
int cursor_store_finish(struct cursor_store *store, const char *profile,
			const char *error, unsigned long recovered,
			unsigned long discrepancies, struct error *err);

/* The amount and currency payhook holds for (profile, transaction_id):
 * 1 with them set, 0 when there is no such payment, -1 with err set. */
int cursor_store_held_payment(struct cursor_store *store, const char *profile,
			      const char *transaction_id,
			      unsigned long long *amount, char currency[4],
			      struct error *err);

/* A discrepancy: an object payhook-reconcile listed (kind "payment",
 * "refund", ...; object_id: the transaction id for a payment) whose
 * payment payhook holds with another amount or currency. */
struct cursor_discrepancy {
	const char *provider, *kind, *object_id, *transaction_id;
	unsigned long long listed_amount, held_amount;
	const char *listed_currency, *held_currency;
};

/* cursor_store_note_discrepancy's answer for a database without table
 * reconcile_discrepancies (err says which migration adds it). */
#define CURSOR_STORE_NO_TABLE (-2)

/* Notes d in reconcile_discrepancies, once per object and listed value.
 * Returns 1 when it is new (the pass reports it), 0 when a pass saw it
 * before (its last_seen_at moves), CURSOR_STORE_NO_TABLE, or -1 with err
 * set. */
int cursor_store_note_discrepancy(struct cursor_store *store,
				  const struct cursor_discrepancy *d,
				  struct error *err);

#endif
