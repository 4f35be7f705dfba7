/* handoff_row.h - one row the hand-off claims, attempts and records: what
 * handoff_store reads from the table and handoff hands on (prefix
 * handoff_row_). One struct, so the sizes of its columns are said once.
 *
 * The dispatcher's loop (dispatcher.h) reads only the fencing fields (id,
 * token, attempts) and the label fields of the log (provider,
 * transaction_id): a second kind of row (a lifecycle change with its own
 * idempotency key) adds a kind here and is claimed by the same loop.
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

enum handoff_row_kind {
	HANDOFF_ROW_PAYMENT = 0, /* a row of payments */
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
	char *payload;              /* the provider's raw body (NUL added) */
	size_t payload_len;
	unsigned long long token;   /* dispatch_token after this claim */
	unsigned long attempts;     /* dispatch_attempts, this attempt included */
	bool attempted;             /* the caller's: set once an attempt began
				     * (such a claim is never released) */
};

#endif
