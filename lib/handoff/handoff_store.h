/* handoff_store.h - payhook-dispatch's reads and writes of the payments
 * table and of payment_event_changes (the changes of refunds, disputes and
 * cancellations) for the hand-off (prefix handoff_store_): claiming due
 * rows under a lease with a fencing token,
 * recording each attempt's result only while that token is still current,
 * giving back claims that were never attempted, and the operators' tools for
 * dead payments.
 *
 * One struct handoff_store is one MySQL connection on the client core
 * (sqlconn.h), so it follows mysql_nodes, the Galera checks and the move to
 * the next node as the receiver does; its sessions add autocommit off and
 * READ COMMITTED. After a connection fault the next call reconnects
 * explicitly, never in the middle of a transaction.
 *
 * The fencing rule: every claim adds one to dispatch_token, and every write
 * about an attempt names the token it was claimed with. A dispatcher that was
 * paused past its lease (or whose result arrives late for any reason) finds
 * a newer token and changes nothing: HANDOFF_STORE_SUPERSEDED.
 */
#ifndef PAYHOOK_HANDOFF_STORE_H
#define PAYHOOK_HANDOFF_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "configuration.h"
#include "error.h"
#include "handoff_row.h"

/* dispatch_owner is VARCHAR(128): "<host>:<pid>" is cut to fit. */
#define HANDOFF_STORE_OWNER_MAX 128
/* dispatch_last_error is VARCHAR(255): longer texts are cut. */
#define HANDOFF_STORE_LAST_ERROR_MAX 255
/* What the lease must keep beyond an attempt's own timeout: the kill grace
 * of a command (TRANSPORT_KILL_GRACE_MS) and scheduling. */
#define HANDOFF_STORE_LEASE_MARGIN_MS 1000L
/* A change whose payment (or an earlier change of its object) was not
 * handed on yet is looked at again as long after as it has waited since it
 * was recorded, within these bounds (a wait that doubles), or at once when
 * that delivery is recorded. */
#define HANDOFF_STORE_WAIT_MIN_MS 1000L
#define HANDOFF_STORE_WAIT_MAX_MS 3600000L
/* At most this many changes that wait are pushed back by one claim. */
#define HANDOFF_STORE_WAIT_BATCH 500

struct handoff_store; /* one connection; opaque */

/* The payments of one claim and its lease, measured on the monotonic clock
 * (timing_now_us) from before the claim was sent: the server's lease ends
 * later than lease_end_us, never earlier. */
struct handoff_store_batch {
	struct handoff_row *items;
	size_t count;
	int64_t lease_start_us;
	int64_t lease_end_us;
	/* Due changes found waiting and pushed back (not claimed): a claim
	 * that found only those is followed by another at once. */
	size_t waiting;
};

/* One row of handoff_store_list_dead. The strings live until the callback
 * returns. */
struct handoff_store_dead {
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

enum handoff_store_status {
	HANDOFF_STORE_OK = 0,     /* written and committed */
	HANDOFF_STORE_SUPERSEDED, /* the token is no longer ours: nothing
				   * changed */
	HANDOFF_STORE_FAILED,     /* the database failed; err says why. Writes
				   * are idempotent under one token: retry
				   * them */
};

/* Returns a hand-off store for cfg (not connected yet; cfg must outlive it), or
 * NULL with err set (out of memory, mysql_nodes that do not parse). Its
 * owner name holds getpid(): make it in the process that uses it (after
 * fork). */
struct handoff_store *handoff_store_new(const struct config *cfg,
					struct error *err);

struct sqlconn; /* sqlconn.h */

/* The connection, connected (sqlconn.h), for the modules that keep other
 * hand-off tables on it (target_store.h); NULL with err set when it cannot
 * connect. */
struct sqlconn *handoff_store_connection(struct handoff_store *d,
					 struct error *err);

/* Formats a statement into a new string the caller frees (the modules on
 * the same connection build theirs with it too). Returns NULL with err set
 * when out of memory. */
char *handoff_store_sql_new(struct error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "<host>:<pid>", the name claims are made under. Can't fail. */
const char *handoff_store_owner(const struct handoff_store *d);

/* Closes the connection and frees it; NULL is fine. An open transaction is
 * rolled back by the server. */
void handoff_store_free(struct handoff_store *d);

/* The start-up checks of the dispatch keys that concern the database: the
 * lease must be larger than dispatch_timeout_ms plus two MySQL round trips
 * (config_round_trip_bound_ms) plus HANDOFF_STORE_LEASE_MARGIN_MS. Returns 0,
 * or -1 with err saying what to set. Can't fail otherwise. */
int handoff_store_check_config(const struct config *cfg, struct error *err);

/* For --check-config: the payments table has the columns payhook-dispatch
 * reads and writes, dispatch_state has its four values, the index
 * ix_payments_dispatch_due starts with dispatch_due_at, and the server knows
 * FOR UPDATE SKIP LOCKED (MariaDB 10.6+, MySQL 8.0+). Returns 0, or -1 with
 * err saying what is wrong and what to run. */
int handoff_store_check_schema(struct handoff_store *d, struct error *err);

/* Claims up to limit due rows in one short transaction (SELECT ... FOR
 * UPDATE SKIP LOCKED, UPDATE token/attempts/owner/due_at = now + lease, read
 * the rows, COMMIT) and fills batch: payments, oldest due first, then
 * changes whose payment was handed on (delivered, or skipped by
 * db/migrate-3-dispatch.sql) and whose object has no earlier change left
 * (one change per object at a time, in the order they were recorded),
 * tested in the claim's query, so changes that wait never hide one that
 * may go. Up to HANDOFF_STORE_WAIT_BATCH due changes that must wait are set
 * due later in the same transaction (HANDOFF_STORE_WAIT_MIN_MS, growing
 * with their age; batch->waiting counts them); the delivery one waits for
 * makes it due at once. Returns 0 (batch->count
 * may be 0), or -1 with err set and batch empty: nothing was claimed, or a
 * COMMIT whose outcome is unknown claimed rows that come due again when their
 * lease ends. The caller frees batch with handoff_store_batch_cleanup. */
int handoff_store_claim(struct handoff_store *d, size_t limit,
			struct handoff_store_batch *batch, struct error *err);

/* Frees what handoff_store_claim put in batch and empties it; an empty batch is
 * fine. Can't fail. */
void handoff_store_batch_cleanup(struct handoff_store_batch *batch);

/* Reads again, for a change, its payment's totals (refunded_amount,
 * dispute_state, cancelled) into p->change, so that the body carries those
 * standing when the attempt is made, not when the batch was claimed; a
 * payment's row is left alone. Returns 0, or -1 with err set and p
 * unchanged (the claim's totals). */
int handoff_store_refresh_totals(struct handoff_store *d, struct handoff_row *p,
				 struct error *err);

/* Marks p delivered (due_at NULL, delivered_at now, owner and last error
 * cleared) while its token is current, and in the same transaction makes
 * due now the changes that waited for it (a payment's; a change's later
 * ones of its object). */
enum handoff_store_status handoff_store_record_delivered(
	struct handoff_store *d, const struct handoff_row *p,
	struct error *err);

/* Records a failed attempt while p's token is current: due again delay_ms
 * from now (server time), owner cleared, last_error kept (cut to
 * HANDOFF_STORE_LAST_ERROR_MAX, bytes outside printable ASCII replaced by '?').
 * Not counted: the claim's attempt is taken back (dispatch_attempts - 1), as
 * for a Retry-After or a failure during an outage. */
enum handoff_store_status handoff_store_record_retry(
	struct handoff_store *d, const struct handoff_row *p,
	const char *last_error, long delay_ms, bool counted, struct error *err);

/* Records a failed attempt as the last one while p's token is current:
 * dispatch_state 'dead', due_at NULL, last_error kept as above. */
enum handoff_store_status handoff_store_record_dead(
	struct handoff_store *d, const struct handoff_row *p,
	const char *last_error, struct error *err);

/* Gives back a claim that was never attempted while its token is current:
 * due now, owner cleared, and the claim's attempt not counted. */
enum handoff_store_status handoff_store_release(
	struct handoff_store *d, const struct handoff_row *p,
	struct error *err);

/* The delay before attempt number attempts + 1, after attempts failed ones:
 * d = min(dispatch_backoff_ms * 2^(attempts - 1), dispatch_backoff_max_ms),
 * then "equal jitter": d / 2 + (random mod (d - d / 2 + 1)), so retries of
 * payments that failed together spread out. random should come from the OS.
 * Never overflows. Can't fail. */
long handoff_store_backoff_ms(const struct config *cfg, unsigned long attempts,
			      uint64_t random);

/* Calls each for every dead payment (with changes, every dead lifecycle
 * change), by id; stops early when each returns non-zero. Returns 0, or -1
 * with err set (some rows may have been passed). */
int handoff_store_list_dead(struct handoff_store *d, bool changes,
			    int (*each)(void *ctx,
					const struct handoff_store_dead *row),
			    void *ctx, struct error *err);

/* One row as payhook-dispatch --show tells it: where it stands and what it
 * waits for. */
struct handoff_store_show {
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
int handoff_store_show(struct handoff_store *d, bool changes,
		       unsigned long long id, struct handoff_store_show *out,
		       struct error *err);

enum handoff_store_change {
	HANDOFF_STORE_REQUEUE,   /* dead (and with include_skipped, skipped)
				  * -> pending */
	HANDOFF_STORE_REDELIVER, /* delivered -> pending (the same key) */
};

/* Which rows an operator's bulk change takes: every filter given (not NULL,
 * or ids) must match. Times are UTC, as MySQL reads them
 * ("2026-11-30 14:00:00"), already checked by the caller (MySQL reads any
 * other text as a zero date), compared with received_at; error is a text the
 * last error contains. */
struct handoff_store_selection {
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
int handoff_store_requeue(struct handoff_store *d,
			  enum handoff_store_change change,
			  const struct handoff_store_selection *sel,
			  bool dry_run, unsigned long long *count,
			  struct error *err);

/* The pause flag every dispatcher of this database reads before it claims
 * (payhook-dispatch --pause, --resume): the one row of dispatch_control, so
 * it holds across processes and hosts. Stores it in *paused (false without
 * the table: a database from before db/migrate-5-dispatch-control.sql).
 * Returns 0, or -1 with err set and *paused false. */
int handoff_store_paused(struct handoff_store *d, bool *paused,
			 struct error *err);

/* Sets the pause flag (with when and by whom). Returns 0, or -1 with err set
 * (saying which migration to run when the table is missing) and the flag
 * unchanged. */
int handoff_store_set_paused(struct handoff_store *d, bool paused,
			     struct error *err);

/* For --check-config: whether db/migrate-5-dispatch-control.sql ran (the
 * table dispatch_control and ix_payments_dispatch_state are there), and the
 * pause flag. Returns 0, or -1 with err set. */
int handoff_store_check_control(struct handoff_store *d, bool *migrated,
				bool *paused, struct error *err);

/* For --check-config: whether payment_event_changes exists
 * (db/migrate-6-lifecycle-changes.sql: without it no lifecycle change is
 * handed on) and has the indexes of db/migrate-7-lifecycle-handoff.sql.
 * Returns 0, or -1 with err set. */
int handoff_store_check_changes(struct handoff_store *d, bool *table,
				bool *indexed, struct error *err);

/* The hand-off tables at a glance (payments and lifecycle changes
 * together), for the metrics. */
struct handoff_store_gauges {
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
int handoff_store_gauges(struct handoff_store *d,
			 struct handoff_store_gauges *g, struct error *err);

/* A short name of a status, for logs. */
const char *handoff_store_status_name(enum handoff_store_status status);

#endif
