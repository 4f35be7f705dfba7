/* handoff_store.c - the hand-off's reads and writes of the payments table:
 * claims, fenced results, release, totals and back-off of payhook-dispatch
 * (see handoff_store.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handoff_store.h"
#include "number.h"
#include "schema.h"
#include "sqlconn.h"
#include "log.h"
#include "timing.h"

/* The client's packet limit: a row with a payload of 16 MiB - 1 bytes
 * (MEDIUMBLOB) and the rest of its columns. */
#define HANDOFF_STORE_CLIENT_PACKET (64UL * 1024 * 1024)
/* ER_NO_SUCH_TABLE: a database from before a migration. */
#define NO_SUCH_TABLE 1146
/* Room for one id and its comma in an "IN (...)" list. */
#define ID_TEXT_MAX 21

/* The prepared statements of one connection: the fenced writes, and the
 * wake-up that follows a delivery. */
enum stmt_index {
	STMT_DELIVERED,
	STMT_RETRY,
	STMT_DEFER,
	STMT_DEAD,
	STMT_RELEASE,
	STMT_WAKE,
	STMT_COUNT
};

#define CHANGES HANDOFF_STORE_CHANGES

/* The fenced writes of one table: payments and payment_event_changes
 * carry the same dispatch_ columns, so one text serves both. */
#define FENCED_SQL(table, at)                                                     \
	[(at) + STMT_DELIVERED] =                                                     \
		"UPDATE " table " SET dispatch_state = 'delivered', "          \
		"dispatch_due_at = NULL, delivered_at = UTC_TIMESTAMP(6), "    \
		"dispatch_owner = NULL, dispatch_last_error = NULL "           \
		"WHERE id = ? AND dispatch_token = ?",                         \
	[(at) + STMT_RETRY] =                                                         \
		"UPDATE " table " SET dispatch_due_at = UTC_TIMESTAMP(6) + "   \
		"INTERVAL ? MICROSECOND, dispatch_owner = NULL, "              \
		"dispatch_last_error = ? WHERE id = ? AND dispatch_token = ?", \
	/* A failure that does not count (a Retry-After, an outage): the    \
	 * claim's attempt is taken back, as a release does. */              \
	[(at) + STMT_DEFER] =                                                         \
		"UPDATE " table " SET dispatch_due_at = UTC_TIMESTAMP(6) + "   \
		"INTERVAL ? MICROSECOND, dispatch_owner = NULL, "              \
		"dispatch_last_error = ?, dispatch_attempts = "                \
		"IF(dispatch_attempts > 0, dispatch_attempts - 1, 0) "         \
		"WHERE id = ? AND dispatch_token = ?",                         \
	[(at) + STMT_DEAD] =                                                          \
		"UPDATE " table " SET dispatch_state = 'dead', "               \
		"dispatch_due_at = NULL, dispatch_owner = NULL, "              \
		"dispatch_last_error = ? WHERE id = ? AND dispatch_token = ?", \
	/* The claim counted an attempt that never happened: take it back. */ \
	[(at) + STMT_RELEASE] =                                                       \
		"UPDATE " table " SET dispatch_due_at = UTC_TIMESTAMP(6), "    \
		"dispatch_owner = NULL, dispatch_attempts = "                  \
		"IF(dispatch_attempts > 0, dispatch_attempts - 1, 0) "         \
		"WHERE id = ? AND dispatch_token = ?"

/* A change that waits (see claim_changes) is pending, never attempted,
 * unowned and due later: what a delivery wakes. */
#define WAITING                                                                \
	"dispatch_state = 'pending' AND dispatch_owner IS NULL AND "           \
	"dispatch_attempts = 0 AND dispatch_due_at > UTC_TIMESTAMP(6)"

/* The statement set (sqlconn, prepared at first use on each connection, so
 * that --check-config can connect to a table that lacks its columns): the
 * statements of a payment, then those of a change (STMT_AT). */
#define STMT_AT(kind, which)                                                   \
	((size_t)(kind) * STMT_COUNT + (size_t)(which))
static const char *const stmt_sql[2 * STMT_COUNT] = {
	FENCED_SQL("payments", STMT_AT(HANDOFF_ROW_PAYMENT, 0)),
	/* The payment's changes that waited for it. */
	[STMT_AT(HANDOFF_ROW_PAYMENT, STMT_WAKE)] =
		"UPDATE " CHANGES " SET dispatch_due_at = "
		"UTC_TIMESTAMP(6) WHERE event_row_id IN (SELECT id "
		"FROM payment_events WHERE provider = ? AND "
		"transaction_id = ?) AND " WAITING,
	FENCED_SQL(CHANGES, STMT_AT(HANDOFF_ROW_CHANGE, 0)),
	/* The object's later changes, which waited for this one. */
	[STMT_AT(HANDOFF_ROW_CHANGE, STMT_WAKE)] =
		"UPDATE " CHANGES " SET dispatch_due_at = "
		"UTC_TIMESTAMP(6) WHERE event_row_id = ? AND id > ? AND "
		WAITING,
};

static const char *const stmt_names[STMT_COUNT] = {
	[STMT_DELIVERED] = "record delivered",
	[STMT_RETRY] = "record retry",
	[STMT_DEFER] = "record deferred retry",
	[STMT_DEAD] = "record dead",
	[STMT_RELEASE] = "release",
	[STMT_WAKE] = "wake the waiting changes",
};

/* received_at as RFC 3339 UTC (the column holds UTC: payhook's sessions use
 * time_zone +00:00). Passed as an argument so no '%' reaches a printf. */
static const char received_at_format[] = HANDOFF_STORE_TIME_FORMAT;

struct handoff_store {
	const struct config *cfg;
	/* The connection, on the node list with the receiver's failover. */
	struct sqlconn *conn;            /* with the statements, stmt_sql */
	/* Whether payment_event_changes exists is known (changes_table);
	 * without it (a database from before
	 * db/migrate-6-lifecycle-changes.sql) payments only. Both are
	 * looked at again once the connection is made again. */
	bool changes_known;
	bool no_changes;
	char owner[HANDOFF_STORE_OWNER_MAX + 1]; /* "<host>:<pid>" */
};

/* What the store knows of the tables goes with the connection (sqlconn's
 * on_disconnect; the statements go by themselves). */
static void forget_tables(void *ctx)
{
	struct handoff_store *d = ctx;

	d->changes_known = false;
	d->no_changes = false;
}

struct handoff_store *handoff_store_new(const struct config *cfg,
					struct error *err)
{
	struct handoff_store *d = calloc(1, sizeof(*d));
	struct sqlconn_options options = {
		.max_packet = HANDOFF_STORE_CLIENT_PACKET,
		/* Every claim and every fenced write is a transaction of its
		 * own, ended by COMMIT or ROLLBACK. */
		.autocommit = false,
		/* The claim's locking read takes no gap locks, so it never
		 * blocks payhook's INSERTs of new payments, and each claim
		 * sees the rows committed before it. */
		.read_committed = true,
		/* An UPDATE reports the rows it matched, so a fenced write
		 * that matched its row is never mistaken for superseded. */
		.found_rows = true,
		.on_disconnect = forget_tables,
		.ctx = d,
		.statements = stmt_sql,
		.statement_count = 2 * STMT_COUNT,
		.prepare_on_use = true,
	};
	char host[256];

	if (d == NULL) {
		error_set(err, "dispatch: out of memory");
		return NULL;
	}
	d->cfg = cfg;
	d->conn = sqlconn_new(cfg, &options, err);
	if (d->conn == NULL) {
		free(d);
		return NULL;
	}
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "unknown-host");
	host[sizeof(host) - 1] = '\0';
	/* The pid is the part that must survive the cut. */
	snprintf(d->owner, sizeof(d->owner), "%.*s:%ld",
		 HANDOFF_STORE_OWNER_MAX - 21, host, (long)getpid());
	return d;
}

static void disconnect(struct handoff_store *d)
{
	sqlconn_disconnect(d->conn);
}

struct sqlconn *handoff_store_connection(struct handoff_store *d,
					 struct error *err)
{
	return sqlconn_connect(d->conn, err) == 0 ? d->conn : NULL;
}

struct sqlconn *handoff_store_core(struct handoff_store *d)
{
	return d->conn;
}

const char *handoff_store_owner(const struct handoff_store *d)
{
	return d->owner;
}

void handoff_store_free(struct handoff_store *d)
{
	if (d == NULL)
		return;
	sqlconn_free(d->conn);
	free(d);
}

/* After a failed statement (sqlconn_fail): a lock wait timeout or
 * deadlock rolls back and keeps the connection; anything else - a lost
 * connection, a read-only server after a failover, a missing column - drops
 * it (a failed node for the next one), and the next call reconnects. */
static void after_failure(struct handoff_store *d, unsigned int code)
{
	sqlconn_fail(d->conn, code, false);
}

/* Fills err with what failed with code on the connection, then cleans up.
 * Returns -1. */
static int failed_code(struct handoff_store *d, unsigned int code,
		       const char *what, struct error *err)
{
	error_set(err, "mysql %s: %u %s", what, code,
		  sqlconn_message(d->conn, SQLCONN_SESSION));
	after_failure(d, code);
	return -1;
}

/* The same, of the session's last error. */
static int connection_failed(struct handoff_store *d, const char *what,
			     struct error *err)
{
	return failed_code(d, sqlconn_errno(d->conn), what, err);
}

/* Ends the open transaction without effect; a connection that can't is
 * dropped. Can't fail. */
static void roll_back(struct handoff_store *d)
{
	if (sqlconn_connected(d->conn) &&
	    sqlconn_exec(d->conn, "ROLLBACK", NULL) != 0)
		disconnect(d);
}

/* Ends a read's transaction (no snapshot or metadata lock kept). Returns
 * 0, or -1 with err set and the failure handled. */
static int end_read(struct handoff_store *d, struct error *err)
{
	unsigned code = sqlconn_exec(d->conn, "ROLLBACK", NULL);

	return code == 0 ? 0 : failed_code(d, code, "rollback", err);
}

int handoff_store_check_config(const struct config *cfg, struct error *err)
{
	long round_trip = config_round_trip_bound_ms(cfg);
	long need = cfg->dispatch_timeout_ms + 2 * round_trip +
		    HANDOFF_STORE_LEASE_MARGIN_MS;

	if (cfg->dispatch_lease_ms <= need)
		return error_set(err,
				 "dispatch_lease_ms = %ld is too short: set it "
				 "above %ld (dispatch_timeout_ms %ld + 2 MySQL "
				 "round trips of %ld + margin %ld), or lower "
				 "dispatch_timeout_ms or the mysql_*_timeout_s",
				 cfg->dispatch_lease_ms, need,
				 cfg->dispatch_timeout_ms, round_trip,
				 HANDOFF_STORE_LEASE_MARGIN_MS);
	return 0;
}

int handoff_store_check_schema(struct handoff_store *d, struct error *err)
{
	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	return schema_check_dispatch(d->conn, err);
}

/* Formats a statement into a new string the caller frees. Returns NULL with
 * err set when out of memory. */
char *handoff_store_sql_new(struct error *err, const char *fmt, ...)
{
	va_list ap;
	int len;
	char *sql;

	va_start(ap, fmt);
	len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (len < 0) {
		error_set(err, "dispatch: formatting a statement failed");
		return NULL;
	}
	sql = malloc((size_t)len + 1);
	if (sql == NULL) {
		error_set(err, "dispatch: out of memory");
		return NULL;
	}
	va_start(ap, fmt);
	vsnprintf(sql, (size_t)len + 1, fmt, ap);
	va_end(ap);
	return sql;
}

/* Writes ids as "1,2,3" into a new string the caller frees. Returns NULL with
 * err set when out of memory. */
char *handoff_store_id_list_new(const unsigned long long *ids, size_t count,
			 struct error *err)
{
	size_t cap, used = 0;
	char *list;

	if (count > ((size_t)-1 - 1) / ID_TEXT_MAX) {
		error_set(err, "dispatch: too many ids");
		return NULL;
	}
	cap = count * ID_TEXT_MAX + 1;
	list = malloc(cap);
	if (list == NULL) {
		error_set(err, "dispatch: out of memory");
		return NULL;
	}
	list[0] = '\0';
	for (size_t i = 0; i < count; i++)
		used += (size_t)snprintf(list + used, cap - used, "%s%llu",
					 i > 0 ? "," : "", ids[i]);
	return list;
}

void handoff_store_batch_cleanup(struct handoff_store_batch *batch)
{
	if (batch->items != NULL) {
		for (size_t i = 0; i < batch->count; i++) {
			free(batch->items[i].event_id);
			free(batch->items[i].payload);
		}
	}
	free(batch->items);
	memset(batch, 0, sizeof(*batch));
}

/* Copies field (len bytes, NULL for SQL NULL) into buf of cap bytes with a
 * NUL, cut to fit; the columns' sizes make a cut impossible in practice. */
static size_t copy_field(char *buf, size_t cap, const char *field,
			 unsigned long len)
{
	size_t n = field == NULL ? 0 : len;

	if (n > cap - 1)
		n = cap - 1;
	if (n > 0)
		memcpy(buf, field, n);
	buf[n] = '\0';
	return n;
}

/* A new NUL-terminated copy of field[0..len), or NULL when out of memory. */
static char *dup_field(const char *field, unsigned long len)
{
	char *copy = malloc((size_t)len + 1);

	if (copy == NULL)
		return NULL;
	if (len > 0)
		memcpy(copy, field, len);
	copy[len] = '\0';
	return copy;
}

unsigned long long handoff_store_number(const char *text)
{
	uint64_t value = 0;

	if (text == NULL || number_parse(text, UINT64_MAX, &value) != NUMBER_OK)
		return 0;
	return value;
}

/* Reads the claimed rows of kind into batch, after those it holds (its
 * items have room for cap): the 11 columns of a payment, then for a change
 * payment_events.id, kind, state, object_id, n, the payment's
 * refunded_amount, dispute_state, cancelled, and whether the change is in
 * the payment's currency (counted); both forms end with source. Returns
 * 0, or -1 with err set
 * (batch keeps what it read; the caller cleans it up). */
static int read_claimed(struct sqlconn_result *res,
			struct handoff_store_batch *batch, size_t cap,
			enum handoff_row_kind kind, struct error *err)
{
	unsigned int columns = kind == HANDOFF_ROW_CHANGE ? 20 : 11;
	struct sqlconn_row r;
	int rc = 0;

	while (batch->count < cap && sqlconn_next(res, &r)) {
		char **row = r.fields;
		unsigned long *len = r.lengths;
		struct handoff_row *p = &batch->items[batch->count];

		if (r.count != columns) {
			rc = error_set(err, "mysql claim read: %u columns, "
				       "not %u", r.count, columns);
			break;
		}

		/* A change's payload is NULL unless it is its object's
		 * newest. */
		if (len == NULL ||
		    (row[7] == NULL && kind == HANDOFF_ROW_PAYMENT)) {
			rc = error_set(err, "mysql claim read: a row without "
				       "its payload");
			break;
		}
		p->kind = kind;
		p->id = handoff_store_number(row[0]);
		copy_field(p->provider, sizeof(p->provider), row[1], len[1]);
		p->transaction_id_len = copy_field(p->transaction_id,
						   sizeof(p->transaction_id),
						   row[2], len[2]);
		p->amount = handoff_store_number(row[3]);
		copy_field(p->currency, sizeof(p->currency), row[4], len[4]);
		copy_field(p->received_at, sizeof(p->received_at), row[6],
			   len[6]);
		p->token = handoff_store_number(row[8]);
		p->attempts = (unsigned long)handoff_store_number(row[9]);
		/* source: the last column of both forms. */
		copy_field(p->source, sizeof(p->source), row[columns - 1],
			   len[columns - 1]);
		if (kind == HANDOFF_ROW_CHANGE) {
			struct handoff_row_change *c = &p->change;

			c->object_row_id = handoff_store_number(row[10]);
			copy_field(c->kind, sizeof(c->kind), row[11], len[11]);
			copy_field(c->state, sizeof(c->state), row[12], len[12]);
			c->object_id_len = copy_field(c->object_id,
						      sizeof(c->object_id),
						      row[13], len[13]);
			c->n = (unsigned long)handoff_store_number(row[14]);
			c->refunded_amount = handoff_store_number(row[15]);
			copy_field(c->dispute_state, sizeof(c->dispute_state),
				   row[16], len[16]);
			c->cancelled = handoff_store_number(row[17]) != 0;
			c->counted = handoff_store_number(row[18]) != 0;
		}
		/* Counted now, so cleanup frees what was copied so far. */
		batch->count++;
		if (row[5] != NULL) {
			p->event_id = dup_field(row[5], len[5]);
			p->event_id_len = len[5];
		}
		if (row[7] != NULL) {
			p->payload = dup_field(row[7], len[7]);
			p->payload_len = len[7];
		}
		if ((row[5] != NULL && p->event_id == NULL) ||
		    (row[7] != NULL && p->payload == NULL)) {
			rc = error_set(err, "dispatch: out of memory reading "
				       "a claimed row");
			break;
		}
	}
	sqlconn_result_free(res);
	return rc;
}

/* Runs sql (a new string, freed here) and returns its first column as ids
 * in a new array the caller frees, their number in *count (at most limit).
 * When missing is not NULL, a table that does not exist sets it and
 * returns an empty array. Returns NULL with err set (the failure handled). */
static unsigned long long *query_ids(struct handoff_store *d, char *sql,
				     size_t limit, const char *what,
				     size_t *count, bool *missing,
				     struct error *err)
{
	unsigned long long *ids;
	unsigned code;

	*count = 0;
	if (sql == NULL)
		return NULL;
	if (sqlconn_query_ids(d->conn, sql, limit, &ids, count, &code) == 0) {
		free(sql);
		return ids;
	}
	free(sql);
	if (code == 0) {
		error_set(err, "dispatch: out of memory");
		return NULL;
	}
	if (missing != NULL && code == NO_SUCH_TABLE) {
		/* A statement's error: the transaction goes on. */
		*missing = true;
		return calloc(1, sizeof(unsigned long long));
	}
	failed_code(d, code, what, err);
	return NULL;
}

/* Runs an UPDATE (a new string, freed here). Returns 0, or -1 with err set
 * and the failure handled. */
static int run_update(struct handoff_store *d, char *sql, const char *what,
		      struct error *err)
{
	int rc = 0;

	if (sql == NULL)
		return -1;
	unsigned code = sqlconn_exec(d->conn, sql, NULL);

	if (code != 0)
		rc = failed_code(d, code, what, err);
	free(sql);
	return rc;
}

/* The claim's UPDATE of table for the ids in list: a new token, one more
 * attempt, our name, and due again when the lease ends. */
static int claim_update(struct handoff_store *d, const char *table,
			const char *list, struct error *err)
{
	char owner[2 * HANDOFF_STORE_OWNER_MAX + 1];

	sqlconn_escape(d->conn, owner, d->owner, strlen(d->owner));
	return run_update(
		d,
		handoff_store_sql_new(err,
			"UPDATE %s SET dispatch_token = dispatch_token + 1, "
			"dispatch_attempts = dispatch_attempts + 1, "
			"dispatch_owner = '%s', dispatch_due_at = "
			"UTC_TIMESTAMP(6) + INTERVAL %lld MICROSECOND "
			"WHERE id IN (%s)",
			table, owner,
			(long long)d->cfg->dispatch_lease_ms * 1000, list),
		"claim update", err);
}

/* Runs the claim's read (a new string, freed here) into batch. */
static int claim_read(struct handoff_store *d, char *sql,
		      struct handoff_store_batch *batch, size_t cap,
		      enum handoff_row_kind kind, struct error *err)
{
	struct sqlconn_result *res;
	unsigned code;

	if (sql == NULL)
		return -1;
	res = sqlconn_select(d->conn, sql, &code);
	free(sql);
	if (res == NULL)
		return failed_code(d, code, "claim read", err);
	return read_claimed(res, batch, cap, kind, err);
}

/* Claims up to limit due payments into batch, in the open transaction.
 * Returns 0, or -1 with err set. */
static int claim_payments(struct handoff_store *d, size_t limit,
			  struct handoff_store_batch *batch, size_t cap,
			  struct error *err)
{
	unsigned long long *ids;
	size_t count;
	char *list;
	int rc;

	ids = query_ids(d,
			handoff_store_sql_new(err,
				"SELECT id FROM payments WHERE dispatch_due_at "
				"<= UTC_TIMESTAMP(6) AND dispatch_state = "
				"'pending' ORDER BY dispatch_due_at LIMIT %zu "
				"FOR UPDATE SKIP LOCKED", limit),
			limit, "claim select", &count, NULL, err);
	if (ids == NULL)
		return -1;
	if (count == 0) {
		free(ids);
		return 0;
	}
	list = handoff_store_id_list_new(ids, count, err);
	free(ids);
	if (list == NULL)
		return -1;
	/* In the order they came due; the ids are numbers we read. */
	rc = claim_update(d, "payments", list, err);
	if (rc == 0)
		rc = claim_read(
			d,
			handoff_store_sql_new(err,
				"SELECT id, provider, transaction_id, amount, "
				"currency, event_id, DATE_FORMAT(received_at, "
				"'%s'), payload, dispatch_token, "
				"dispatch_attempts, source FROM payments WHERE id IN "
				"(%s) ORDER BY FIELD(id, %s)",
				received_at_format, list, list),
			batch, cap, HANDOFF_ROW_PAYMENT, err);
	free(list);
	return rc;
}

/* Notes that payment_event_changes does not exist, in the log too. */
static void note_no_changes(struct handoff_store *d)
{
	log_warn("no table payment_event_changes: lifecycle changes are not "
		 "handed on (run db/migrate-6-lifecycle-changes.sql)");
	d->no_changes = true;
	d->changes_known = true;
}

/* Finds out, once per connection, whether payment_event_changes exists
 * (d->no_changes), before the first claim or delivery uses it. Returns 0,
 * or -1 with err set and the failure handled. */
static int changes_table(struct handoff_store *d, struct error *err)
{
	unsigned code;

	if (d->changes_known)
		return 0;
	code = sqlconn_exec(d->conn, "SELECT 1 FROM " CHANGES " LIMIT 0", NULL);
	if (code != 0) {
		if (code != NO_SUCH_TABLE)
			return failed_code(d, code, "look for " CHANGES, err);
		note_no_changes(d);
		return 0;
	}
	d->changes_known = true;
	return 0;
}

/* A change (c, with its object e and its payment p: CHANGE_JOINS) may be
 * handed on: its payment was (delivered, or skipped by
 * db/migrate-3-dispatch.sql) and no earlier change of its object (by id:
 * the order they were recorded in) is left pending or dead. */
#define CHANGE_READY                                                           \
	"(COALESCE(p.dispatch_state IN ('delivered', 'skipped'), 0) AND NOT "  \
	"EXISTS (SELECT 1 FROM " CHANGES " o WHERE o.event_row_id = "          \
	"c.event_row_id AND o.id < c.id AND o.dispatch_state IN ('pending', "  \
	"'dead')))"
#define CHANGE_JOINS HANDOFF_STORE_CHANGE_JOINS
#define CHANGE_DUE                                                             \
	"c.dispatch_due_at <= UTC_TIMESTAMP(6) AND c.dispatch_state = 'pending'"

/* Appends the count ids of more to the n of all (room for both), leaving
 * out those all holds already. */
static void ids_append(unsigned long long *all, size_t *n,
		       const unsigned long long *more, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		size_t k = 0;

		while (k < *n && all[k] != more[i])
			k++;
		if (k == *n)
			all[(*n)++] = more[i];
	}
}

/* Sets the changes in list, which wait, due again as long after now as
 * they have waited since they were recorded (HANDOFF_STORE_WAIT_MIN_MS to
 * HANDOFF_STORE_WAIT_MAX_MS): a wait that doubles, so changes whose payment
 * never comes cost a claim less and less often. The delivery they wait for
 * wakes them at once (wake_waiting). Returns 0, or -1 with err set. */
static int push_back_waiting(struct handoff_store *d, const char *list,
			     struct error *err)
{
	return run_update(
		d,
		handoff_store_sql_new(err,
			"UPDATE " CHANGES " SET dispatch_due_at = "
			"UTC_TIMESTAMP(6) + INTERVAL LEAST(GREATEST("
			"TIMESTAMPDIFF(MICROSECOND, received_at, "
			"UTC_TIMESTAMP(6)), %lld), %lld) MICROSECOND WHERE id "
			"IN (%s)",
			(long long)HANDOFF_STORE_WAIT_MIN_MS * 1000,
			(long long)HANDOFF_STORE_WAIT_MAX_MS * 1000, list),
		"claim: changes that wait", err);
}

/* Claims up to limit due changes into batch, in the open transaction: the
 * oldest due that may be handed on (CHANGE_READY, tested in the query, so
 * any number of changes that wait never hide one that may go), locked
 * with SKIP LOCKED and tested again once locked (a row read without a lock
 * may have moved on). Up to HANDOFF_STORE_WAIT_BATCH due changes that must
 * wait are locked in the same way and pushed back (push_back_waiting);
 * batch->waiting counts them. Returns 0, or -1 with err set. */
static int claim_changes(struct handoff_store *d, size_t limit,
			 struct handoff_store_batch *batch, size_t cap,
			 struct error *err)
{
	unsigned long long *first = NULL, *more = NULL, *all = NULL,
			   *locked = NULL, *ready = NULL, *waiting = NULL;
	size_t n_first = 0, n_more = 0, n_all = 0, n_locked = 0, n_ready = 0,
	       n_waiting = 0;
	char *list = NULL, *sql;
	struct sqlconn_result *res;
	struct sqlconn_row row;
	unsigned code;
	bool missing = false;
	int rc = -1;

	/* Plain reads (READ COMMITTED: the newest committed rows, no locks):
	 * what may go, oldest due first, then what waits. */
	first = query_ids(d,
			  handoff_store_sql_new(err,
				  "SELECT c.id FROM " CHANGES CHANGE_JOINS
				  " WHERE " CHANGE_DUE " AND " CHANGE_READY
				  " ORDER BY c.dispatch_due_at, c.id LIMIT %zu",
				  limit),
			  limit, "claim select changes", &n_first, &missing,
			  err);
	if (missing) {
		note_no_changes(d);
		rc = 0;
		goto out;
	}
	if (first == NULL)
		goto out;
	more = query_ids(d,
			 handoff_store_sql_new(err,
				 "SELECT c.id FROM " CHANGES CHANGE_JOINS
				 " WHERE " CHANGE_DUE " AND NOT " CHANGE_READY
				 " ORDER BY c.dispatch_due_at, c.id LIMIT %d",
				 HANDOFF_STORE_WAIT_BATCH),
			 HANDOFF_STORE_WAIT_BATCH, "claim select waiting changes",
			 &n_more, NULL, err);
	if (more == NULL)
		goto out;
	if (n_first + n_more == 0) {
		rc = 0;
		goto out;
	}
	all = calloc(n_first + n_more, sizeof(*all));
	if (all == NULL) {
		error_set(err, "dispatch: out of memory");
		goto out;
	}
	ids_append(all, &n_all, first, n_first);
	ids_append(all, &n_all, more, n_more);
	list = handoff_store_id_list_new(all, n_all, err);
	if (list == NULL)
		goto out;
	/* Locked by id: rows another claim holds are skipped, rows that
	 * moved on since the read are left out. */
	locked = query_ids(d,
			   handoff_store_sql_new(err,
				   "SELECT id FROM " CHANGES " WHERE id IN (%s) "
				   "AND dispatch_state = 'pending' AND "
				   "dispatch_due_at <= UTC_TIMESTAMP(6) ORDER BY "
				   "FIELD(id, %s) FOR UPDATE SKIP LOCKED",
				   list, list),
			   n_all, "claim lock changes", &n_locked, NULL, err);
	free(list);
	list = NULL;
	if (locked == NULL)
		goto out;
	if (n_locked == 0) {
		rc = 0;
		goto out;
	}
	ready = calloc(n_locked, sizeof(*ready));
	waiting = calloc(n_locked, sizeof(*waiting));
	list = handoff_store_id_list_new(locked, n_locked, err);
	if (ready == NULL || waiting == NULL || list == NULL) {
		error_set(err, "dispatch: out of memory");
		goto out;
	}
	/* Tested again now that they are ours: a delivery committed before
	 * the lock is seen; one committed after wakes them. */
	sql = handoff_store_sql_new(err,
		      "SELECT c.id, " CHANGE_READY " FROM " CHANGES CHANGE_JOINS
		      " WHERE c.id IN (%s) ORDER BY FIELD(c.id, %s)",
		      list, list);
	if (sql == NULL)
		goto out;
	res = sqlconn_select(d->conn, sql, &code);
	free(sql);
	if (res == NULL) {
		failed_code(d, code, "claim check changes", err);
		goto out;
	}
	while (n_ready + n_waiting < n_locked && sqlconn_next(res, &row)) {
		if (handoff_store_number(row.fields[1]) == 0)
			waiting[n_waiting++] =
				handoff_store_number(row.fields[0]);
		else if (n_ready < limit)
			ready[n_ready++] = handoff_store_number(row.fields[0]);
		/* Else one that may go beyond the limit: the next claim's. */
	}
	sqlconn_result_free(res);
	free(list);
	list = NULL;
	if (n_waiting > 0) {
		list = handoff_store_id_list_new(waiting, n_waiting, err);
		if (list == NULL || push_back_waiting(d, list, err) != 0)
			goto out;
		batch->waiting += n_waiting;
		free(list);
		list = NULL;
	}
	if (n_ready == 0) {
		rc = 0;
		goto out;
	}
	list = handoff_store_id_list_new(ready, n_ready, err);
	if (list == NULL || claim_update(d, CHANGES, list, err) != 0)
		goto out;
	rc = claim_read(
		d,
		handoff_store_sql_new(err,
			"SELECT c.id, e.provider, e.transaction_id, c.amount, "
			"COALESCE(c.currency, p.currency, ''), c.event_id, "
			"DATE_FORMAT(c.received_at, '%s'), IF(c.id = (SELECT "
			"MAX(m.id) FROM " CHANGES " m WHERE m.event_row_id = "
			"c.event_row_id), e.payload, NULL), c.dispatch_token, "
			"c.dispatch_attempts, e.id, e.kind, c.state, "
			"e.object_id, c.n, COALESCE(p.refunded_amount, 0), "
			"p.dispute_state, COALESCE(p.cancelled, 0), "
			"COALESCE(c.currency = p.currency, 1), e.source FROM "
			CHANGES CHANGE_JOINS " WHERE c.id IN (%s) ORDER BY "
			"FIELD(c.id, %s)",
			received_at_format, list, list),
		batch, cap, HANDOFF_ROW_CHANGE, err);
out:
	free(list);
	free(first);
	free(more);
	free(all);
	free(locked);
	free(ready);
	free(waiting);
	return rc;
}

int handoff_store_claim(struct handoff_store *d, size_t limit,
			struct handoff_store_batch *batch, struct error *err)
{
	memset(batch, 0, sizeof(*batch));
	if (limit == 0)
		return 0;
	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	/* The lease is measured from before the claim is sent: the server's
	 * due_at is computed later, so it can only end after ours. */
	batch->lease_start_us = timing_now_us();
	batch->lease_end_us = batch->lease_start_us +
			      (int64_t)d->cfg->dispatch_lease_ms * 1000;
	batch->items = calloc(limit, sizeof(*batch->items));
	if (batch->items == NULL) {
		error_set(err, "dispatch: out of memory");
		goto fail;
	}
	/* Payments first: their changes wait for them. */
	if (changes_table(d, err) != 0 ||
	    claim_payments(d, limit, batch, limit, err) != 0)
		goto fail;
	if (batch->count < limit && !d->no_changes &&
	    claim_changes(d, limit - batch->count, batch, limit, err) != 0)
		goto fail;
	if (batch->count == 0) {
		/* Nothing claimed (changes may have been set to wait: keep
		 * the count). */
		size_t waiting = batch->waiting;

		if (sqlconn_commit(d->conn) != 0) {
			connection_failed(d, "claim commit", err);
			goto fail;
		}
		handoff_store_batch_cleanup(batch);
		batch->waiting = waiting;
		return 0;
	}
	/* A COMMIT that fails may or may not have claimed the rows: either
	 * way they come due again when the server's lease ends. */
	if (sqlconn_commit(d->conn) != 0) {
		connection_failed(d, "claim commit", err);
		goto fail;
	}
	return 0;

fail:
	roll_back(d);
	handoff_store_batch_cleanup(batch);
	return -1;
}

static void bind_ull(MYSQL_BIND *bind, unsigned long long *value)
{
	bind->buffer_type = MYSQL_TYPE_LONGLONG;
	bind->buffer = value;
	bind->is_unsigned = 1;
}

/* Copies text into buf (HANDOFF_STORE_LAST_ERROR_MAX + 1 bytes) as printable
 * ASCII: the column's character set then never refuses it, and a log or a
 * terminal showing it never sees control bytes. */
static void clean_error_text(const char *text, char *buf)
{
	size_t n = 0;

	for (; text != NULL && text[n] != '\0' &&
	       n < HANDOFF_STORE_LAST_ERROR_MAX;
	     n++) {
		unsigned char c = (unsigned char)text[n];

		buf[n] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	buf[n] = '\0';
}

/* Runs the statement number which of p's kind with param bound (in the
 * open transaction). Returns the rows it matched, or -1 with err set and
 * the failure handled (after_failure). */
static long long run_statement(struct handoff_store *d,
			       const struct handoff_row *p,
			       enum stmt_index which, MYSQL_BIND *param,
			       struct error *err)
{
	size_t at = STMT_AT(p->kind, which);
	unsigned int code = sqlconn_run(d->conn, at, param, NULL);

	if (code != 0) {
		error_set(err, "mysql %s: %u %s", stmt_names[which], code,
			  sqlconn_message(d->conn, at));
		after_failure(d, code);
		return -1;
	}
	/* (my_ulonglong)-1 only follows a failed statement. */
	return (long long)sqlconn_affected(d->conn, at);
}

/* After a delivery, in its transaction: the changes that waited for p (a
 * payment's; a change's later ones of its object) are due now. Returns 0,
 * or -1 with err set and the failure handled. */
static int wake_waiting(struct handoff_store *d, const struct handoff_row *p,
			struct error *err)
{
	MYSQL_BIND param[2];
	unsigned long provider_len = (unsigned long)strlen(p->provider);
	unsigned long tid_len = (unsigned long)p->transaction_id_len;
	unsigned long long object = p->change.object_row_id, id = p->id;

	if (changes_table(d, err) != 0)
		return -1;
	if (d->no_changes)
		return 0;
	memset(param, 0, sizeof(param));
	if (p->kind == HANDOFF_ROW_CHANGE) {
		bind_ull(&param[0], &object);
		bind_ull(&param[1], &id);
	} else {
		param[0].buffer_type = MYSQL_TYPE_STRING;
		param[0].buffer = (void *)p->provider;
		param[0].buffer_length = provider_len;
		param[0].length = &provider_len;
		param[1].buffer_type = MYSQL_TYPE_BLOB;
		param[1].buffer = (void *)p->transaction_id;
		param[1].buffer_length = tid_len;
		param[1].length = &tid_len;
	}
	return run_statement(d, p, STMT_WAKE, param, err) < 0 ? -1 : 0;
}

/* Runs the fenced statement number which with param bound, then (for a
 * delivery that matched) wakes the changes that waited for p, then COMMIT.
 * HANDOFF_STORE_SUPERSEDED when it matched no row: the token has moved on. */
static enum handoff_store_status fenced_write(struct handoff_store *d,
					      const struct handoff_row *p,
					      enum stmt_index which,
					      MYSQL_BIND *param,
					      struct error *err)
{
	long long matched;

	if (sqlconn_connect(d->conn, err) != 0)
		return HANDOFF_STORE_FAILED;
	matched = run_statement(d, p, which, param, err);
	if (matched < 0)
		return HANDOFF_STORE_FAILED;
	if (matched > 0 && which == STMT_DELIVERED &&
	    wake_waiting(d, p, err) != 0) {
		roll_back(d);
		return HANDOFF_STORE_FAILED;
	}
	if (sqlconn_commit(d->conn) != 0) {
		connection_failed(d, "commit", err);
		return HANDOFF_STORE_FAILED;
	}
	return matched == 0 ? HANDOFF_STORE_SUPERSEDED : HANDOFF_STORE_OK;
}

/* The fenced statements end with "id = ? AND dispatch_token = ?". */
static enum handoff_store_status fenced_by_token(
	struct handoff_store *d, enum stmt_index which,
	const struct handoff_row *p, const char *last_error,
	long long delay_us, struct error *err)
{
	MYSQL_BIND param[4];
	unsigned long long id = p->id, token = p->token;
	long long delay = delay_us;
	char text[HANDOFF_STORE_LAST_ERROR_MAX + 1];
	unsigned long text_len;
	size_t n = 0;

	memset(param, 0, sizeof(param));
	if (which == STMT_RETRY || which == STMT_DEFER) {
		param[n].buffer_type = MYSQL_TYPE_LONGLONG;
		param[n].buffer = &delay;
		n++;
	}
	if (which == STMT_RETRY || which == STMT_DEFER || which == STMT_DEAD) {
		clean_error_text(last_error, text);
		text_len = (unsigned long)strlen(text);
		param[n].buffer_type = MYSQL_TYPE_STRING;
		param[n].buffer = text;
		param[n].buffer_length = text_len;
		param[n].length = &text_len;
		n++;
	}
	bind_ull(&param[n++], &id);
	bind_ull(&param[n], &token);
	return fenced_write(d, p, which, param, err);
}

enum handoff_store_status handoff_store_record_delivered(
	struct handoff_store *d, const struct handoff_row *p,
	struct error *err)
{
	return fenced_by_token(d, STMT_DELIVERED, p, NULL, 0, err);
}

enum handoff_store_status handoff_store_record_retry(
	struct handoff_store *d, const struct handoff_row *p,
	const char *last_error, long delay_ms, bool counted, struct error *err)
{
	return fenced_by_token(d, counted ? STMT_RETRY : STMT_DEFER, p,
			       last_error,
			       (long long)(delay_ms < 0 ? 0 : delay_ms) * 1000,
			       err);
}

enum handoff_store_status handoff_store_record_dead(
	struct handoff_store *d, const struct handoff_row *p,
	const char *last_error, struct error *err)
{
	return fenced_by_token(d, STMT_DEAD, p, last_error, 0, err);
}

enum handoff_store_status handoff_store_release(
	struct handoff_store *d, const struct handoff_row *p,
	struct error *err)
{
	return fenced_by_token(d, STMT_RELEASE, p, NULL, 0, err);
}

long handoff_store_backoff_ms(const struct config *cfg, unsigned long attempts,
			      uint64_t random)
{
	long max = cfg->dispatch_backoff_max_ms > 0 ? cfg->dispatch_backoff_max_ms
						    : 1;
	long delay = cfg->dispatch_backoff_ms < max ? cfg->dispatch_backoff_ms
						    : max;
	long half;

	if (delay < 1)
		delay = 1;
	/* Doubling stops at max, so this runs at most ~40 times. */
	for (unsigned long i = 1; i < attempts && delay < max; i++)
		delay = delay > max / 2 ? max : delay * 2;
	half = delay / 2;
	return half + (long)(random % (uint64_t)(delay - half + 1));
}

int handoff_store_paused(struct handoff_store *d, bool *paused,
			 struct error *err)
{
	static const char sql[] =
		"SELECT COALESCE(MAX(paused), 0) FROM dispatch_control";
	unsigned long long value = 0;

	*paused = false;
	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	if (sqlconn_query_number(d->conn, sql, &value, err) != 0) {
		if (sqlconn_errno(d->conn) != NO_SUCH_TABLE) {
			disconnect(d);
			return -1;
		}
		/* No table, no pause: the flag came with migration 5. */
		value = 0;
	}
	/* End the read's transaction: no snapshot or metadata lock kept. */
	if (end_read(d, err) != 0)
		return -1;
	*paused = value != 0;
	return 0;
}

int handoff_store_refresh_totals(struct handoff_store *d, struct handoff_row *p,
				 struct error *err)
{
	struct handoff_row_change *c = &p->change;
	char provider[2 * HANDOFF_ROW_PROVIDER_MAX + 1];
	char tid[2 * PAYMENT_TRANSACTION_ID_MAX + 1];
	struct sqlconn_result *res;
	struct sqlconn_row row;
	unsigned code;
	char *sql;

	if (p->kind != HANDOFF_ROW_CHANGE)
		return 0;
	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	sqlconn_escape(d->conn, provider, p->provider, strlen(p->provider));
	sqlconn_escape(d->conn, tid, p->transaction_id, p->transaction_id_len);
	sql = handoff_store_sql_new(err,
		      "SELECT refunded_amount, dispute_state, cancelled FROM "
		      "payments WHERE provider = '%s' AND transaction_id = '%s'",
		      provider, tid);
	if (sql == NULL)
		return -1;
	res = sqlconn_select(d->conn, sql, &code);
	free(sql);
	if (res == NULL)
		return failed_code(d, code, "payment totals", err);
	/* No row (the payment was deleted by hand): the claim's totals. */
	if (sqlconn_next(res, &row) && row.count == 3) {
		c->refunded_amount = handoff_store_number(row.fields[0]);
		copy_field(c->dispute_state, sizeof(c->dispute_state),
			   row.fields[1], row.lengths[1]);
		c->cancelled = handoff_store_number(row.fields[2]) != 0;
	}
	sqlconn_result_free(res);
	/* End the read's transaction: no snapshot kept. */
	return end_read(d, err);
}

long long handoff_store_wake_outage(struct handoff_store *d, struct error *err)
{
	static const char *const sql[] = {
		"UPDATE payments SET dispatch_due_at = UTC_TIMESTAMP(6) WHERE "
		"dispatch_state = 'pending' AND dispatch_due_at > "
		"UTC_TIMESTAMP(6) AND dispatch_last_error LIKE '"
		HANDOFF_STORE_OUTAGE_PREFIX "%'",
		"UPDATE " CHANGES " SET dispatch_due_at = UTC_TIMESTAMP(6) "
		"WHERE dispatch_state = 'pending' AND dispatch_due_at > "
		"UTC_TIMESTAMP(6) AND dispatch_last_error LIKE '"
		HANDOFF_STORE_OUTAGE_PREFIX "%'",
	};
	unsigned long long woke = 0, n;
	unsigned code;

	if (sqlconn_connect(d->conn, err) != 0 || changes_table(d, err) != 0)
		return -1;
	for (size_t i = 0; i < (d->no_changes ? 1u : 2u); i++) {
		n = 0;
		code = sqlconn_exec(d->conn, sql[i], &n);
		if (code != 0) {
			failed_code(d, code, "wake what the outage held back",
				    err);
			roll_back(d);
			return -1;
		}
		woke += n;
	}
	if (sqlconn_commit(d->conn) != 0) {
		connection_failed(d, "wake commit", err);
		roll_back(d);
		return -1;
	}
	return (long long)woke;
}
