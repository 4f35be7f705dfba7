/* handoff_store.h - payhook-dispatch's reads and writes of the payments
 * table and of payment_event_changes (the changes of refunds, disputes and
 * cancellations) for the hand-off (prefix handoff_store_): claiming due
 * rows under a lease with a fencing token,
 * recording each attempt's result only while that token is still current,
 * giving back claims that were never attempted, the totals a change's
 * attempt carries, and the back-off: the dispatcher's path. The operators'
 * queries (dead rows, --show, --requeue, --pause, the gauges) are
 * handoff_admin's, on the same connection.
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

/* What begins the last_error of a row deferred by an outage (its failure
 * counted no attempt): handoff_store_wake_outage finds them by it. */
#define HANDOFF_STORE_OUTAGE_PREFIX "outage: "

/* Makes due now every pending payment and change whose back-off comes
 * from an outage (its last_error begins with HANDOFF_STORE_OUTAGE_PREFIX):
 * once the target's circuit closes, what waited only because of it need
 * not wait out back-offs that grew with the outage. The claims pace them
 * (dispatch_batch_size at a time). Returns how many, or -1 with err set
 * (they then come due as their back-off says). */
long long handoff_store_wake_outage(struct handoff_store *d,
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

/* The pause flag every dispatcher of this database reads before it claims
 * (payhook-dispatch --pause, --resume): the one row of dispatch_control, so
 * it holds across processes and hosts. Stores it in *paused (false without
 * the table: a database from before db/migrate-5-dispatch-control.sql).
 * Returns 0, or -1 with err set and *paused false. */
int handoff_store_paused(struct handoff_store *d, bool *paused,
			 struct error *err);

/* For handoff_admin, which reads the same tables: the lifecycle changes'
 * table, its joins to the change's object (e) and payment (p), and
 * received_at's DATE_FORMAT as RFC 3339 UTC (the column holds UTC). */
#define HANDOFF_STORE_CHANGES "payment_event_changes"
#define HANDOFF_STORE_CHANGE_JOINS                                            \
	" c JOIN payment_events e ON e.id = c.event_row_id LEFT JOIN payments " \
	"p ON p.provider = e.provider AND p.transaction_id = e.transaction_id"
#define HANDOFF_STORE_TIME_FORMAT "%Y-%m-%dT%H:%i:%s.%fZ"

/* The store's connection core, connected or not (handoff_admin's queries
 * run on it). Owned by d. */
struct sqlconn *handoff_store_core(struct handoff_store *d);

/* A column's text as a number; NULL or not a number: 0. Can't fail. */
unsigned long long handoff_store_number(const char *text);

/* "id1,id2,..." of count ids (count > 0), a new string the caller frees,
 * or NULL with err set (out of memory). */
char *handoff_store_id_list_new(const unsigned long long *ids, size_t count,
				struct error *err);

#endif
