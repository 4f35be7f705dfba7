/* handoff_row.h - one row the hand-off claims, attempts and records: what
 * handoff_store reads from the table and handoff hands on (prefix
 * handoff_row_). One struct, so the sizes of its columns are said once.
 *
 * The dispatcher's loop (dispatcher.h) reads only the fencing fields (id,
 * token, attempts) and the label fields of the log (provider,
 * transaction_id): a lifecycle change (a row of payment_event_changes, with
 * its own idempotency key) is claimed, attempted and recorded by the same
 * loop, its kind telling handoff_store which table it fences on.
 */
#ifndef PAYHOOK_HANDOFF_ROW_H
#define PAYHOOK_HANDOFF_ROW_H

#include <stdbool.h>
#include <stddef.h>

#include "payment.h"

#define HANDOFF_ROW_PROVIDER_MAX 32     /* VARCHAR(32) */
#define HANDOFF_ROW_CURRENCY_MAX 3      /* CHAR(3) */
/* RFC 3339 UTC with microseconds: 2026-11-30T14:00:00.123456Z */
#define HANDOFF_ROW_TIME_MAX 31
#define HANDOFF_ROW_OBJECT_ID_MAX 255   /* payment_events.object_id */
/* "cancellation", the longest kind; "succeeded", the longest state. */
#define HANDOFF_ROW_NAME_MAX 12

enum handoff_row_kind {
	HANDOFF_ROW_PAYMENT = 0, /* a row of payments */
	HANDOFF_ROW_CHANGE,      /* a row of payment_event_changes: one change
				  * of a refund, dispute or cancellation */
};

/* What a change adds to a payment's fields (kind HANDOFF_ROW_CHANGE). The
 * totals are the payment's, read when the change was claimed. */
struct handoff_row_change {
	unsigned long long object_row_id;   /* payment_events.id */
	char kind[HANDOFF_ROW_NAME_MAX + 1];  /* refund, dispute, cancellation */
	char state[HANDOFF_ROW_NAME_MAX + 1]; /* pending ... lost */
	char object_id[HANDOFF_ROW_OBJECT_ID_MAX + 1];
	size_t object_id_len;
	unsigned long n;                    /* the object's n-th time in state */
	unsigned long long refunded_amount;
	char dispute_state[HANDOFF_ROW_NAME_MAX + 1]; /* "" when NULL */
	bool cancelled;
	/* false: the change is in another currency than its payment (a
	 * refund recorded before a payment that came in another currency):
	 * its amount counts for nothing in the payment's totals, and the
	 * body says so. */
	bool counted;
};

/* One claimed row. The arrays are NUL-terminated; event_id and payload are
 * owned by whoever filled the row (handoff_store's batch frees them). */
struct handoff_row {
	enum handoff_row_kind kind;
	unsigned long long id;
	char provider[HANDOFF_ROW_PROVIDER_MAX + 1];
	char transaction_id[PAYMENT_TRANSACTION_ID_MAX + 1];
	size_t transaction_id_len;
	char *event_id;             /* NULL when the column is NULL */
	size_t event_id_len;
	unsigned long long amount;  /* minor units */
	char currency[HANDOFF_ROW_CURRENCY_MAX + 1];
	char received_at[HANDOFF_ROW_TIME_MAX + 1];
	/* How the row came: webhook, reconcile, replay (the source column;
	 * a change's is its object's row's). */
	char source[HANDOFF_ROW_NAME_MAX + 1];
	char *payload;              /* the provider's raw body (NUL added); a
				     * change's is NULL unless it is its
				     * object's newest (the body that set the
				     * state the object holds) */
	size_t payload_len;
	unsigned long long token;   /* dispatch_token after this claim */
	unsigned long attempts;     /* dispatch_attempts, this attempt included */
	struct handoff_row_change change; /* kind HANDOFF_ROW_CHANGE only */
	bool attempted;             /* the caller's: set once an attempt began
				     * (such a claim is never released) */
};

#endif
