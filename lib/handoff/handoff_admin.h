/* handoff_admin.h - the operators' reads and changes of the hand-off's
 * tables (prefix handoff_admin_), apart from the dispatcher's path
 * (handoff_store.h: claims, fenced results, release, totals, back-off):
 * payhook-dispatch --list-dead, --show, --requeue, --redeliver, --pause,
 * --resume, the --check-config checks of the control and changes tables,
 * and the gauges of the metrics. Every function runs on the store's
 * connection (handoff_store_core), connecting first; a failure drops it
 * by sqlconn's classifier and the next call reconnects.
 */
#ifndef PAYHOOK_HANDOFF_ADMIN_H
#define PAYHOOK_HANDOFF_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "handoff_store.h"

/* One row of handoff_admin_list_dead. The strings live until the callback
 * returns. */
struct handoff_admin_dead {
	unsigned long long id;
	const char *provider;
	const char *transaction_id;
	unsigned long attempts;
	const char *last_error;     /* "" when NULL */
	/* A change's (else "" and 0): */
	const char *kind;
	const char *object_id;
	const char *state;
	unsigned long n;
};

/* Calls each for every dead payment (with changes, every dead lifecycle
 * change), by id; stops early when each returns non-zero. Returns 0, or -1
 * with err set (some rows may have been passed). */
int handoff_admin_list_dead(struct handoff_store *d, bool changes,
			    int (*each)(void *ctx,
					const struct handoff_admin_dead *row),
			    void *ctx, struct error *err);

/* One row as payhook-dispatch --show tells it: where it stands and what it
 * waits for. */
struct handoff_admin_show {
	bool found;
	char provider[HANDOFF_ROW_PROVIDER_MAX + 1];
	char transaction_id[PAYMENT_TRANSACTION_ID_MAX + 1];
	char state[16];               /* pending, delivered, dead, skipped */
	unsigned long attempts;
	char last_error[HANDOFF_STORE_LAST_ERROR_MAX + 1];
	char due_at[40];              /* RFC 3339 UTC; "" when none */
	long long due_in_ms;          /* from now; <= 0: due */
	bool claimed;                 /* an owner holds it (its lease runs) */
	char owner[HANDOFF_STORE_OWNER_MAX + 1];
	/* A change's: its kind, object and state; its payment's dispatch
	 * state ("" when payhook never recorded it); the id of an earlier
	 * change of its object not handed on (0: none) and that one's state. */
	char change[HANDOFF_ROW_NAME_MAX * 2 + HANDOFF_ROW_OBJECT_ID_MAX + 8];
	char payment_state[16];
	unsigned long long earlier_id;
	char earlier_state[16];
};

/* Reads row id (a payment's, or with changes a change's) into *out
 * (out->found false when there is none). Returns 0, or -1 with err set. */
int handoff_admin_show(struct handoff_store *d, bool changes,
		       unsigned long long id, struct handoff_admin_show *out,
		       struct error *err);

enum handoff_admin_change {
	HANDOFF_ADMIN_REQUEUE,   /* dead (and with include_skipped, skipped)
				  * -> pending */
	HANDOFF_ADMIN_REDELIVER, /* delivered -> pending (the same key) */
};

/* Which rows an operator's bulk change takes: every filter given (not NULL,
 * or ids) must match. Times are UTC, as MySQL reads them
 * ("2026-11-30 14:00:00"), already checked by the caller (MySQL reads any
 * other text as a zero date), compared with received_at; error is a text the
 * last error contains. */
struct handoff_admin_selection {
	bool changes;               /* rows of payment_event_changes (provider:
				     * their payment's) instead of payments */
	const unsigned long long *ids;
	size_t id_count;
	const char *provider;
	const char *since;          /* received_at >= since */
	const char *until;          /* received_at < until */
	const char *error;
	/* A requeue takes the rows skipped by db/migrate-3-dispatch.sql
	 * (handled before payhook existed) as well as the dead ones. */
	bool include_skipped;
};

/* Puts the selected rows of the change's states back to pending: due now,
 * attempts 0 (the last error is kept until the next attempt). With dry_run
 * changes nothing and counts them. Stores how many changed (or would) in
 * *count. Returns 0, or -1 with err set and nothing changed. */
int handoff_admin_requeue(struct handoff_store *d,
			  enum handoff_admin_change change,
			  const struct handoff_admin_selection *sel,
			  bool dry_run, unsigned long long *count,
			  struct error *err);

/* Sets the pause flag (with when and by whom). Returns 0, or -1 with err set
 * (saying which migration to run when the table is missing) and the flag
 * unchanged. */
int handoff_admin_set_paused(struct handoff_store *d, bool paused,
			     struct error *err);

/* For --check-config: whether db/migrate-5-dispatch-control.sql ran (the
 * table dispatch_control and ix_payments_dispatch_state are there), and the
 * pause flag. Returns 0, or -1 with err set. */
int handoff_admin_check_control(struct handoff_store *d, bool *migrated,
				bool *paused, struct error *err);

/* For --check-config: whether payment_event_changes exists
 * (db/migrate-6-lifecycle-changes.sql: without it no lifecycle change is
 * handed on) and has the indexes of db/migrate-7-lifecycle-handoff.sql.
 * Returns 0, or -1 with err set. */
int handoff_admin_check_changes(struct handoff_store *d, bool *table,
				bool *indexed, struct error *err);

/* The hand-off tables at a glance (payments and lifecycle changes
 * together), for the metrics. */
struct handoff_admin_gauges {
	unsigned long long pending;      /* neither delivered nor dead */
	unsigned long long in_flight;    /* claimed, lease running */
	unsigned long long dead;
	unsigned long long oldest_due_s; /* how long the most overdue pending
					  * payment has been due (0: none) */
};

/* Reads the gauges with one statement per table whose parts each stay on
 * an index (ix_payments_dispatch_due, ix_payments_dispatch_state, and
 * payment_event_changes' own; none from it before its migration). Returns
 * 0, or -1 with err set and *g zero. */
int handoff_admin_gauges(struct handoff_store *d,
			 struct handoff_admin_gauges *g, struct error *err);

#endif
