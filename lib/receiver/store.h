/* store.h - the receiver's SQL on the MySQL client core (sqlconn.h): the
 * payments row written in one transaction under the unique key on
 * (provider, transaction_id), and the look-up that tells a duplicate from a
 * conflict.
 *
 * Only a 1062 whose row is then found by its provider and transaction id
 * means "already recorded" - whatever the language of the server's messages.
 * After a connection fault the next call reconnects explicitly, between
 * requests, never in the middle of a transaction. Several servers
 * (mysql_nodes, a Galera cluster) are tried in the order given (sqlconn):
 * every worker of a host writes to the same node until it fails.
 */
#ifndef PAYHOOK_STORE_H
#define PAYHOOK_STORE_H

#include <stddef.h>

#include "configuration.h"
#include "error.h"
#include "payment.h"
#include "sqlconn.h"

struct store; /* one connection and its prepared statements; opaque */

/* A payment's lifecycle totals from its payment_events rows (alias e):
 * STORE_TOTALS_COLUMNS, three aggregates, over STORE_TOTALS_FROM, whose
 * parameters are (provider, transaction_id, currency); one row, even when
 * the payment has no such rows. An event in another currency than the
 * payment's (recorded before the payment came) counts for nothing. refunded_amount is the sum of its succeeded
 * refunds (an object counts once, with its row's amount: a running total
 * such as PAY.JP's never adds up twice); dispute_state the state of the
 * dispute whose row changed last by the provider's time (at equal times
 * the later state), NULL when none; cancelled 1 once a cancellation
 * succeeded. The payment's INSERT and lifecycle_store's UPDATE both read
 * them, so both compute the same. refunded_amount stops at
 * STORE_AMOUNT_MAX: lifecycle_store refuses an event that would carry it
 * further, and rows written before that rule never keep the payment from
 * being recorded (a 1264, out of range, would). */
#define STORE_AMOUNT_MAX "9223372036854775807"
#define STORE_TOTALS_COLUMNS                                                   \
	"LEAST(COALESCE(SUM(CASE WHEN e.kind = 'refund' AND "                  \
	"e.state = 'succeeded' THEN e.amount END), 0), " STORE_AMOUNT_MAX ") "  \
	"AS refunded_amount, "                                                 \
	"SUBSTRING(MAX(CASE WHEN e.kind = 'dispute' THEN CONCAT(LPAD("         \
	"TIMESTAMPDIFF(MICROSECOND, '1970-01-01', e.occurred_at), 18, '0'), "  \
	"e.state + 0, e.state) END), 20) AS dispute_state, "                   \
	"COALESCE(MAX(e.kind = 'cancellation' AND e.state = 'succeeded'), 0) " \
	"AS cancelled"
#define STORE_TOTALS_FROM                                                      \
	"FROM payment_events e WHERE e.provider = ? AND e.transaction_id = ? " \
	"AND (e.currency IS NULL OR e.currency = ?)"

/* The totals written: of one payment, after an event changed them
 * (parameters: provider, transaction_id, currency as STORE_TOTALS_FROM,
 * then provider, transaction_id); and of every payment whose totals differ
 * from its events' (lifecycle_store_repair_totals), driven by
 * payment_events (far fewer rows than payments), the derived table
 * materialized before the UPDATE reads payments. The payment's INSERT
 * writes them with the row (store.c's INSERT_TOTALS_SQL). */
#define STORE_TOTALS_UPDATE_SQL                                                \
	"UPDATE payments p, (SELECT " STORE_TOTALS_COLUMNS " "                 \
	STORE_TOTALS_FROM ") t SET p.refunded_amount = t.refunded_amount, "    \
	"p.dispute_state = t.dispute_state, p.cancelled = t.cancelled "        \
	"WHERE p.provider = ? AND p.transaction_id = ?"
#define STORE_TOTALS_REPAIR_SQL                                                \
	"UPDATE payments p JOIN (SELECT q.id, " STORE_TOTALS_COLUMNS " "       \
	"FROM (SELECT DISTINCT provider, transaction_id FROM "                 \
	"payment_events) k JOIN payments q ON q.provider = k.provider "        \
	"AND q.transaction_id = k.transaction_id LEFT JOIN "                   \
	"payment_events e ON e.provider = q.provider AND "                     \
	"e.transaction_id = q.transaction_id AND (e.currency IS NULL "         \
	"OR e.currency = q.currency) GROUP BY q.id) t ON t.id = p.id "         \
	"SET p.refunded_amount = t.refunded_amount, "                          \
	"p.dispute_state = t.dispute_state, p.cancelled = t.cancelled "        \
	"WHERE NOT (p.refunded_amount <=> t.refunded_amount AND "              \
	"p.dispute_state <=> t.dispute_state AND "                             \
	"p.cancelled <=> t.cancelled)"

enum store_status {
	STORE_INSERTED = 0,   /* this call committed the row */
	STORE_DUPLICATE,      /* a committed row with the same amount and currency */
	STORE_CONFLICT,       /* a committed row with another amount or currency */
	STORE_NOT_FOUND,      /* (store_find_payment) no committed row */
	STORE_RETRYABLE,      /* deadlock (1213), lock wait timeout (1205) or
			       * statement timeout (1969): rolled back */
	STORE_UNKNOWN_OUTCOME, /* the connection broke during COMMIT */
	STORE_LEASE_EXPIRED,  /* the guard refused: not written, or rolled back */
	STORE_INVALID,        /* a value would pass its column (a payment's
			       * refunded_amount past STORE_AMOUNT_MAX): not
			       * written, never worth a retry */
	STORE_UNAVAILABLE,    /* anything else: down, timed out, schema, ... */
};

/* Asked before the INSERT and again before the COMMIT: return 0 when the
 * caller's lease still covers needed_ms of work, -1 to stop the write. */
struct store_guard {
	int (*enough_lease)(void *ctx, long needed_ms);
	/* lifecycle_store_record, before the COMMIT of an event whose
	 * payment is not recorded: 0 to go on, -1 with err set to roll back
	 * (STORE_UNAVAILABLE). NULL: nothing to ask. */
	int (*early_event)(void *ctx, struct error *err);
	void *ctx;
};

/* Returns a store for cfg (not yet connected; cfg must outlive it), or NULL
 * with err set when out of memory. */
struct store *store_new(const struct config *cfg, struct error *err);

/* Closes the connection and frees the store; NULL is fine. */
void store_free(struct store *store);

/* Connects when not connected (sqlconn_connect: the node in use or the next
 * that takes writes, the common session), with autocommit on and the
 * statements prepared. Returns 0, or -1 with err naming what failed (the
 * last node tried). */
int store_connect(struct store *store, struct error *err);

/* For --check-config: the payments table has the columns payhook writes,
 * transaction_id is VARBINARY, the unique key uq_payments_provider_transaction_id
 * covers exactly (provider, transaction_id), and the server's
 * max_allowed_packet takes a body of max_body_bytes. Returns 0, or -1 with
 * err saying what is wrong and what to run. */
int store_check_schema(struct store *store, struct error *err);

/* What the caller knows of lifecycle rows recorded for a payment before
 * the payment itself (from the lock's early marks, lock.h). */
enum store_events {
	STORE_EVENTS_UNKNOWN = 0, /* the INSERT probes for them */
	STORE_EVENTS_NONE,        /* the plain INSERT */
	STORE_EVENTS_SOME,        /* the INSERT with their totals */
};

/* Inserts payment (its provider, transaction id, event id, amount, currency)
 * with the raw body as payload and its totals from the lifecycle events
 * already recorded for it (STORE_TOTALS_COLUMNS; with events
 * STORE_EVENTS_NONE the caller vouches there are none and the columns keep
 * their defaults) and commits, asking guard (may be NULL) first:
 * on MariaDB in one round trip (an INSERT that commits by itself, ended by
 * the server after max_statement_time; two when a probe finds events),
 * elsewhere in a transaction whose COMMIT is sent only while the guard
 * allows.
 * On Galera, after a 1213 (the loser of a certification race) it runs the
 * write once more when the guard allows.
 * On STORE_INSERTED the row is committed. On a 1062 it rolls back and reads
 * the committed row: STORE_DUPLICATE or STORE_CONFLICT, or STORE_UNAVAILABLE
 * when there is none (the duplicate was on another key). Every other result
 * leaves no row of this call behind (except STORE_UNKNOWN_OUTCOME, where
 * nobody can know) and err says why. */
enum store_status store_insert_payment(struct store *store,
				       const struct payment *payment,
				       const void *payload, size_t payload_len,
				       enum store_events events,
				       const struct store_guard *guard,
				       struct error *err);

/* Looks for the committed row of payment's provider and transaction id:
 * STORE_DUPLICATE, STORE_CONFLICT, STORE_NOT_FOUND, or a failure status with
 * err set. */
enum store_status store_find_payment(struct store *store,
				     const struct payment *payment,
				     struct error *err);

/* Answers whether the server is reachable with a round trip (for the health
 * check). Returns 0, or -1 with err set. */
int store_ping(struct store *store, struct error *err);

/* What the operator's page shows of payment_events: refunds, disputes
 * (and those still open), cancellations; events: false when the table is
 * missing (db/migrate-4-lifecycle.sql not run). */
struct store_summary {
	bool events;
	unsigned long long refunds, disputes, disputes_open, cancellations;
};

/* Fills *summary with one pass over payment_events per figure (refunds
 * and disputes are far fewer than payments; the caller asks seldom).
 * Returns 0, or -1 with err set. */
int store_summary(struct store *store, struct store_summary *summary,
		  struct error *err);

/* The MySQL error number of the last failure of any call (a server error
 * 1000-1999, 3000+, or a client error 2000-2999), 0 after a success. For the
 * metrics. */
unsigned store_last_error(const struct store *store);

/* What a failure sqlconn_fail classified means as a status (for store and
 * lifecycle_store): lost or failed is unavailable, a retryable error
 * retryable, a duplicate a duplicate, an unknown commit unknown. */
enum store_status store_failure_status(enum sqlconn_failure failure);

#endif
