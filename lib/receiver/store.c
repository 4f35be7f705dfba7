/* store.c - the payments row under the unique key (see store.h). */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "schema.h"
#include "sqlconn.h"
#include "store.h"
#include "timing.h"

/* What a body needs beside itself in the INSERT's packet. */
#define PACKET_OVERHEAD 4096UL

/* Three forms of the payment's INSERT, by what is known of lifecycle rows
 * recorded before it (store_insert_payment's events):
 *   INSERT_ALONE   none (Redis's early marks say so): the plain INSERT, the
 *                  row gets the columns' defaults (nothing refunded, no
 *                  dispute, not cancelled);
 *   INSERT_PROBED  unknown: the same unless a NOT EXISTS probe finds a
 *                  row, and then it writes nothing;
 *   INSERT_TOTALS  some (or the probe found one): the totals come with the
 *                  row from an aggregate over them.
 * The aggregate costs the server about four times the plain INSERT and the
 * probe (with its next-key locks) about twice; both read payment_events
 * under those locks, so an event committing in between waits or is seen. */
#define INSERT_COLUMNS                                                         \
	"INSERT INTO payments (provider, transaction_id, event_id, amount, "   \
	"currency, payload, source"
#define INSERT_ALONE_SQL INSERT_COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?)"
#define INSERT_PROBED_SQL                                                      \
	INSERT_COLUMNS ") SELECT ?, ?, ?, ?, ?, ?, ? FROM DUAL WHERE NOT EXISTS " \
	"(SELECT 1 FROM payment_events e WHERE e.provider = ? "                \
	"AND e.transaction_id = ?)"
#define INSERT_TOTALS_SQL                                                      \
	INSERT_COLUMNS ", refunded_amount, dispute_state, cancelled) "         \
	"SELECT ?, ?, ?, ?, ?, ?, ?, " STORE_TOTALS_COLUMNS " " STORE_TOTALS_FROM
/* The one-round-trip write (see write_once): MariaDB ends the statement,
 * and rolls it back, once it has run this many seconds. */
#define BOUNDED "SET STATEMENT max_statement_time = %.3f FOR "
/* The statement set (sqlconn): the INSERT's forms, prepared by
 * prepare_insert as the server allows, then the look-up. */
enum insert_form { INSERT_ALONE, INSERT_PROBED, INSERT_TOTALS, INSERT_FORMS };
#define SELECT_PAYMENT INSERT_FORMS
#define STATEMENTS (INSERT_FORMS + 1)
static const char *const insert_sql[] = {
	INSERT_ALONE_SQL, INSERT_PROBED_SQL, INSERT_TOTALS_SQL,
};
static const char *const statement_sql[STATEMENTS] = {
	[SELECT_PAYMENT] = "SELECT amount, currency FROM payments "
			   "WHERE provider = ? AND transaction_id = ?",
};

struct store {
	const struct config *cfg;
	/* The connection, its node list and failover: a worker stays on the
	 * node it writes to until that node fails, then moves to the next. */
	struct sqlconn *conn;
	/* The INSERT commits by itself in one round trip, bounded on the
	 * server (MariaDB, not Galera); otherwise START TRANSACTION, INSERT,
	 * COMMIT. */
	bool one_round_trip;
	bool fresh;            /* connected during the current call */
	bool packet_checked;   /* max_allowed_packet compared once per process */
	unsigned last_error;   /* see store_last_error */
};

unsigned store_last_error(const struct store *store)
{
	return store->last_error;
}

static int ready_session(void *ctx, struct error *err);

struct store *store_new(const struct config *cfg, struct error *err)
{
	struct store *store = calloc(1, sizeof(*store));
	struct sqlconn_options options = {
		/* The client's packet limit: the largest body and the rest
		 * of the INSERT. */
		.max_packet = (unsigned long)cfg->max_body_bytes + PACKET_OVERHEAD,
		/* Every statement outside an explicit transaction commits by
		 * itself: a look-up holds no snapshot, and the one-statement
		 * write commits in its own round trip. */
		.autocommit = true,
		.on_connect = ready_session,
		.ctx = store,
		.statements = statement_sql,
		.statement_count = STATEMENTS,
	};

	if (store == NULL) {
		error_set(err, "store: out of memory");
		return NULL;
	}
	store->cfg = cfg;
	store->conn = sqlconn_new(cfg, &options, err);
	if (store->conn == NULL) {
		free(store);
		return NULL;
	}
	return store;
}

static void store_disconnect(struct store *store)
{
	sqlconn_disconnect(store->conn);
}

void store_free(struct store *store)
{
	if (store == NULL)
		return;
	sqlconn_free(store->conn);
	free(store);
}

/* The server's max_allowed_packet must take the largest body with the rest
 * of the INSERT, or such a body gets 503 on every retry. Returns 0, or -1
 * with err set. */
static int check_packet_size(struct store *store, struct error *err)
{
	unsigned long long packet = 0;
	unsigned long long need = (unsigned long long)store->cfg->max_body_bytes +
				  PACKET_OVERHEAD;

	if (sqlconn_query_number(store->conn, "SELECT @@max_allowed_packet",
				 &packet, err) != 0)
		return -1;
	if (packet < need)
		return error_set(err, "the server's max_allowed_packet is %llu "
				 "bytes: a body of max_body_bytes = %zu needs "
				 "%llu; raise max_allowed_packet or lower "
				 "max_body_bytes", packet,
				 store->cfg->max_body_bytes, need);
	return 0;
}

/* Prepares the INSERT: bounded by max_statement_time where the server has
 * it (MariaDB) and the write is one statement (not on Galera, whose writes
 * go in an explicit transaction); a server without it (MySQL answers 1064
 * to SET STATEMENT) gets the plain one, in a transaction. The bound is a
 * little under the client's read timeout, so that the server, not the
 * client, gives up on a slow INSERT: a definite rollback instead of an
 * unknown outcome. */
static int prepare_insert(struct store *store, struct error *err)
{
	char sql[sizeof(BOUNDED INSERT_TOTALS_SQL) + 32];
	struct error unsupported;
	double bound_s = store->cfg->mysql_read_timeout_s - 0.25;

	store->one_round_trip = false;
	if (!sqlconn_galera(store->conn)) {
		snprintf(sql, sizeof(sql), BOUNDED INSERT_ALONE_SQL, bound_s);
		if (sqlconn_prepare_as(store->conn, INSERT_ALONE, sql,
				       &unsupported) == 0) {
			store->one_round_trip = true;
			snprintf(sql, sizeof(sql), BOUNDED INSERT_PROBED_SQL,
				 bound_s);
			if (sqlconn_prepare_as(store->conn, INSERT_PROBED, sql,
					       err) != 0)
				return -1;
			snprintf(sql, sizeof(sql), BOUNDED INSERT_TOTALS_SQL,
				 bound_s);
			return sqlconn_prepare_as(store->conn, INSERT_TOTALS,
						  sql, err);
		}
	}
	for (size_t i = 0; i < INSERT_FORMS; i++) {
		if (sqlconn_prepare_as(store->conn, i, insert_sql[i], err) != 0)
			return -1;
	}
	return 0;
}

/* sqlconn's on_connect: the packet size compared once per process, the
 * statements prepared. Returns 0, or -1 with err set. */
static int ready_session(void *ctx, struct error *err)
{
	struct store *store = ctx;

	if (!store->packet_checked) {
		struct error packet_err;

		/* Once per process: a log line, not a refusal (--check-config
		 * refuses). */
		store->packet_checked = true;
		if (check_packet_size(store, &packet_err) != 0)
			log_warn("%s", packet_err.message);
	}
	return prepare_insert(store, err);
}

int store_connect(struct store *store, struct error *err)
{
	if (sqlconn_connected(store->conn))
		return 0;
	store->fresh = true;
	if (sqlconn_connect(store->conn, err) != 0) {
		store->last_error = sqlconn_connect_error(store->conn);
		return -1;
	}
	return 0;
}

int store_ping(struct store *store, struct error *err)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		store->fresh = false;
		if (store_connect(store, err) != 0)
			return -1;
		unsigned code = sqlconn_ping(store->conn);

		if (code == 0)
			return 0;
		error_set(err, "mysql ping: %u %s", code,
			  sqlconn_message(store->conn, SQLCONN_SESSION));
		store_disconnect(store);
		/* A kept connection the server closed (a restart) says nothing
		 * of the server now: one fresh connection decides. */
		if (store->fresh)
			break;
	}
	return -1;
}

int store_summary(struct store *store, struct store_summary *summary,
		  struct error *err)
{
	static const char *const events_sql[] = {
		"SELECT COUNT(*) FROM payment_events WHERE kind = 'refund'",
		"SELECT COUNT(*) FROM payment_events WHERE kind = 'dispute'",
		"SELECT COUNT(*) FROM payment_events WHERE kind = 'dispute' "
		"AND state = 'open'",
		"SELECT COUNT(*) FROM payment_events WHERE kind = 'cancellation'",
	};
	unsigned long long *events_out[] = {
		&summary->refunds, &summary->disputes, &summary->disputes_open,
		&summary->cancellations,
	};
	struct sqlconn *c;

	memset(summary, 0, sizeof(*summary));
	if (store_connect(store, err) != 0)
		return -1;
	c = store->conn;
	for (size_t i = 0; i < sizeof(events_sql) / sizeof(events_sql[0]); i++) {
		if (sqlconn_query_number(c, events_sql[i], events_out[i],
					 err) == 0)
			continue;
		/* No payment_events table: the page says so. */
		if (sqlconn_errno(c) == SQLCONN_ER_NO_SUCH_TABLE)
			return 0;
		return -1;
	}
	summary->events = true;
	return 0;
}

int store_check_schema(struct store *store, struct error *err)
{
	int rc;

	if (store_connect(store, err) != 0)
		return -1;
	rc = schema_check_payments(store->conn, err);
	if (rc == 0 && check_packet_size(store, err) != 0)
		rc = -1;
	if (sqlconn_connected(store->conn))
		sqlconn_exec(store->conn, "ROLLBACK", NULL);
	return rc;
}

enum store_status store_failure_status(enum sqlconn_failure failure)
{
	static const enum store_status status[] = {
		[SQLCONN_LOST] = STORE_UNAVAILABLE,
		[SQLCONN_RETRYABLE] = STORE_RETRYABLE,
		[SQLCONN_FAILED] = STORE_UNAVAILABLE,
		[SQLCONN_DUPLICATE] = STORE_DUPLICATE,
		[SQLCONN_UNKNOWN_OUTCOME] = STORE_UNKNOWN_OUTCOME,
	};

	return status[failure];
}

/* After a failed call (sqlconn_fail classifies; committing: a COMMIT or a
 * self-committing INSERT, whose lost session leaves the outcome unknown). */
static enum store_status classify_failure(struct store *store,
					  unsigned int code, bool committing)
{
	store->last_error = code;
	return store_failure_status(sqlconn_fail(store->conn, code, committing));
}

/* Maps a failed statement to a status, fills err, and cleans up. */
static enum store_status statement_failed(struct store *store, size_t which,
					  unsigned code, const char *what,
					  struct error *err)
{
	error_set(err, "mysql %s: %u %s", what, code,
		  sqlconn_message(store->conn, which));
	return classify_failure(store, code, false);
}

/* True when a statement failed at once with code on a connection kept from
 * an earlier request: the signature of a server that restarted or closed an
 * idle session in between. A failure that took longer may be a timeout, and
 * is not retried (the time is already spent). Drops the connection in that
 * case. */
static bool stale_connection_failed(struct store *store, unsigned int code,
				    int64_t started_us)
{
	if (store->fresh || !sqlconn_is_lost(code) ||
	    timing_now_us() - started_us > 500000)
		return false;
	store_disconnect(store);
	return true;
}

static const char *provider_of(const struct payment *payment)
{
	return payment->provider != NULL ? payment->provider : "standard";
}

static void bind_text(MYSQL_BIND *bind, const char *text, unsigned long *length)
{
	*length = (unsigned long)strlen(text);
	bind->buffer_type = MYSQL_TYPE_STRING;
	bind->buffer = (void *)text;
	bind->buffer_length = *length;
	bind->length = length;
}

/* Binds (provider, transaction_id) to the first two parameters. */
static void bind_key(MYSQL_BIND *bind, const struct payment *payment,
		     unsigned long lengths[2])
{
	bind_text(&bind[0], provider_of(payment), &lengths[0]);
	lengths[1] = (unsigned long)payment->transaction_id_len;
	bind[1].buffer_type = MYSQL_TYPE_STRING;
	bind[1].buffer = (void *)payment->transaction_id;
	bind[1].buffer_length = lengths[1];
	bind[1].length = &lengths[1];
}

enum store_status store_find_payment(struct store *store,
				     const struct payment *payment,
				     struct error *err)
{
	MYSQL_BIND param[2], out[2];
	unsigned long key_len[2], currency_len = 0;
	unsigned long long amount = 0;
	char currency[8] = "";
	my_bool amount_null = 0, currency_null = 0;
	enum store_status status;
	unsigned code;
	int rc;

	store->fresh = false;
	if (store_connect(store, err) != 0)
		return STORE_UNAVAILABLE;
	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	bind_key(param, payment, key_len);
	out[0].buffer_type = MYSQL_TYPE_LONGLONG;
	out[0].buffer = &amount;
	out[0].is_unsigned = 1;
	out[0].is_null = &amount_null;
	out[1].buffer_type = MYSQL_TYPE_STRING;
	out[1].buffer = currency;
	out[1].buffer_length = sizeof(currency) - 1;
	out[1].length = &currency_len;
	out[1].is_null = &currency_null;

	for (int attempt = 0;; attempt++) {
		int64_t started_us = timing_now_us();

		code = sqlconn_run(store->conn, SELECT_PAYMENT, param, out);
		if (code == 0)
			break;
		if (attempt > 0 ||
		    !stale_connection_failed(store, code, started_us))
			return statement_failed(store, SELECT_PAYMENT, code,
						"select", err);
		if (store_connect(store, err) != 0)
			return STORE_UNAVAILABLE;
	}

	rc = sqlconn_fetch(store->conn, SELECT_PAYMENT, &code);
	if (rc == 0) {
		status = STORE_NOT_FOUND;
	} else if (rc == 1) {
		bool same = !amount_null && !currency_null &&
			    amount == (unsigned long long)payment->amount &&
			    currency_len == 3 &&
			    memcmp(currency, payment->currency, 3) == 0;
		status = same ? STORE_DUPLICATE : STORE_CONFLICT;
	} else {
		sqlconn_done(store->conn, SELECT_PAYMENT);
		return statement_failed(store, SELECT_PAYMENT, code, "fetch",
					err);
	}
	sqlconn_done(store->conn, SELECT_PAYMENT);
	return status;
}

static bool guard_refuses(const struct store_guard *guard, long needed_ms)
{
	return guard != NULL && guard->enough_lease(guard->ctx, needed_ms) != 0;
}

/* After a 1062 on stmt: the row that collided is ours only if the
 * transaction is there now. The lookup decides, not the message (whose text
 * depends on the server's language and whose key name differs between MySQL
 * and MariaDB). */
static enum store_status duplicate_entry(struct store *store,
					 size_t which,
					 const struct payment *payment,
					 struct error *err)
{
	char message[ERROR_MESSAGE_MAX];
	enum store_status status;

	snprintf(message, sizeof(message), "mysql insert: 1062 %s",
		 sqlconn_message(store->conn, which));
	classify_failure(store, SQLCONN_ER_DUP_ENTRY, false);
	status = store_find_payment(store, payment, err);
	if (status == STORE_NOT_FOUND) {
		error_set(err, "%s (on another unique key: not a duplicate)",
			  message);
		return STORE_UNAVAILABLE;
	}
	return status;
}

/* The transaction of a write in more than one round trip. On Galera,
 * wsrep_sync_wait makes START TRANSACTION wait for every row committed
 * anywhere in the cluster. Returns 0 or the MySQL error. */
static unsigned int begin_write(struct store *store)
{
	return store->one_round_trip ? 0 : sqlconn_begin(store->conn);
}

/* Runs one form of the INSERT. Returns 0 and sets *inserted to whether it
 * wrote the row (the plain form writes nothing when the payment has
 * lifecycle rows), or the MySQL error. */
static unsigned int execute_insert(struct store *store, enum insert_form form,
				   MYSQL_BIND *param, bool *inserted)
{
	unsigned code = sqlconn_run(store->conn, form, param, NULL);

	if (code == 0)
		*inserted = sqlconn_affected(store->conn, form) == 1;
	return code;
}

/* One attempt at the write under the guard. Where the server allows it the
 * INSERT commits by itself in one round trip: the guard asks for one round
 * trip of lease before it is sent, and the server ends it within
 * max_statement_time (less than that round trip) of starting it, so no
 * commit lands after the lease. Otherwise START TRANSACTION, INSERT, and a
 * COMMIT sent only while the lease still covers it. A payment with
 * lifecycle rows takes one more INSERT (the totals form), asked of the
 * guard in the same way. */
static enum store_status write_once(struct store *store,
				    const struct payment *payment,
				    MYSQL_BIND *param, enum insert_form form,
				    const struct store_guard *guard,
				    struct error *err)
{
	long round_trip_ms = config_round_trip_bound_ms(store->cfg);
	long needed_ms = (store->one_round_trip ? 1 : 2) * round_trip_ms;
	enum insert_form first = form;
	unsigned int code;

	for (int attempt = 0;; attempt++) {
		int64_t started_us;
		bool at_insert = false, inserted = false;

		if (guard_refuses(guard, needed_ms)) {
			if (form != first)
				sqlconn_rollback(store->conn);
			error_set(err, "lease too short to start the write");
			return STORE_LEASE_EXPIRED;
		}
		started_us = timing_now_us();
		code = form == first ? begin_write(store) : 0;
		if (code == 0) {
			at_insert = true;
			code = execute_insert(store, form, param, &inserted);
			if (code == 0 && (inserted || form != INSERT_PROBED))
				break;
			if (code == 0) {
				/* The payment has lifecycle rows. */
				form = INSERT_TOTALS;
				continue;
			}
		}
		if (attempt == 0 &&
		    stale_connection_failed(store, code, started_us)) {
			/* The kept connection was dead before this request: a
			 * server that restarted or closed it. One fresh
			 * attempt is safe: had the write reached the server
			 * and committed after all, the attempt gets 1062 and
			 * the look-up finds the row. */
			if (store_connect(store, err) != 0)
				return STORE_UNAVAILABLE;
			continue;
		}
		if (code == SQLCONN_ER_DUP_ENTRY)
			return duplicate_entry(store, form, payment, err);
		error_set(err, "mysql %s: %u %s",
			  at_insert ? "insert" : "start transaction", code,
			  sqlconn_message(store->conn,
					  at_insert ? (size_t)form :
						      SQLCONN_SESSION));
		/* A connection lost during a self-committing INSERT leaves its
		 * outcome as unknown as one lost during COMMIT. */
		return classify_failure(store, code,
					at_insert && store->one_round_trip);
	}
	if (store->one_round_trip)
		return STORE_INSERTED;
	if (guard_refuses(guard, round_trip_ms)) {
		sqlconn_rollback(store->conn);
		error_set(err, "lease ran out before COMMIT: rolled back");
		return STORE_LEASE_EXPIRED;
	}
	code = sqlconn_commit(store->conn);
	if (code != 0) {
		error_set(err, "mysql commit: %u %s", code,
			  sqlconn_message(store->conn, SQLCONN_SESSION));
		/* A broken connection during COMMIT: the server may or may not
		 * have committed, and nobody can know. */
		return classify_failure(store, code, true);
	}
	return STORE_INSERTED;
}

enum store_status store_insert_payment(struct store *store,
				       const struct payment *payment,
				       const void *payload, size_t payload_len,
				       enum store_events events,
				       const struct store_guard *guard,
				       struct error *err)
{
	static const enum insert_form forms[] = {
		[STORE_EVENTS_UNKNOWN] = INSERT_PROBED,
		[STORE_EVENTS_NONE] = INSERT_ALONE,
		[STORE_EVENTS_SOME] = INSERT_TOTALS,
	};
	enum insert_form form = forms[events];
	MYSQL_BIND param[10];
	const char *source = payment_source_name(payment->source);
	unsigned long key_len[2], event_len, currency_len = 3;
	unsigned long source_len = (unsigned long)strlen(source);
	unsigned long payload_len_ul = payload_len;
	unsigned long long amount = (unsigned long long)payment->amount;
	my_bool no_event = payment->event_id_len == 0;
	enum store_status status;

	store->fresh = false;
	store->last_error = 0;
	if (store_connect(store, err) != 0)
		return STORE_UNAVAILABLE;

	memset(param, 0, sizeof(param));
	bind_key(param, payment, key_len);
	event_len = (unsigned long)payment->event_id_len;
	param[2].buffer_type = MYSQL_TYPE_STRING;
	param[2].buffer = (void *)payment->event_id;
	param[2].buffer_length = event_len;
	param[2].length = &event_len;
	param[2].is_null = &no_event;
	param[3].buffer_type = MYSQL_TYPE_LONGLONG;
	param[3].buffer = &amount;
	param[3].is_unsigned = 1;
	param[4].buffer_type = MYSQL_TYPE_STRING;
	param[4].buffer = (void *)payment->currency;
	param[4].buffer_length = 3;
	param[4].length = &currency_len;
	param[5].buffer_type = MYSQL_TYPE_BLOB;
	param[5].buffer = (void *)payload;
	param[5].buffer_length = payload_len_ul;
	param[5].length = &payload_len_ul;
	param[6].buffer_type = MYSQL_TYPE_STRING;
	param[6].buffer = (void *)source;
	param[6].buffer_length = source_len;
	param[6].length = &source_len;
	/* The plain form's probe and the totals form's aggregate: the same
	 * provider, transaction id (and currency). */
	param[7] = param[0];
	param[8] = param[1];
	param[9] = param[4];

	status = write_once(store, payment, param, form, guard, err);
	if (status == STORE_RETRYABLE && sqlconn_galera(store->conn) &&
	    store->last_error == SQLCONN_ER_LOCK_DEADLOCK) {
		/* On Galera the loser of a race between two nodes gets 1213
		 * (at INSERT or at COMMIT): rolled back, nothing written. One
		 * re-run within the lease normally finds the winner's row and
		 * answers a clean duplicate. (On a single server a 1213 is a
		 * deadlock with the merchant's own work, e.g. a trigger: 503,
		 * and the provider's retry comes later.) */
		log_info("mysql: %s: running the write once more", err->message);
		if (store_connect(store, err) != 0)
			return STORE_UNAVAILABLE;
		status = write_once(store, payment, param, form, guard, err);
	}
	return status;
}
