/* handoff_store.c - the hand-off's reads and writes of the payments table:
 * claims, fenced results and dead-letter tools of payhook-dispatch (see
 * handoff_store.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mysql.h>

#include "handoff_store.h"
#include "number.h"
#include "sqlconn.h"
#include "timing.h"

/* The client's packet limit: a row with a payload of 16 MiB - 1 bytes
 * (MEDIUMBLOB) and the rest of its columns. */
#define HANDOFF_STORE_CLIENT_PACKET (64UL * 1024 * 1024)
/* Room for one id and its comma in an "IN (...)" list. */
#define ID_TEXT_MAX 21

/* The prepared statements of one connection: the fenced writes. */
enum stmt_index {
	STMT_DELIVERED,
	STMT_RETRY,
	STMT_DEFER,
	STMT_DEAD,
	STMT_RELEASE,
	STMT_COUNT
};

static const char *const stmt_sql[STMT_COUNT] = {
	[STMT_DELIVERED] =
		"UPDATE payments SET dispatch_state = 'delivered', "
		"dispatch_due_at = NULL, delivered_at = UTC_TIMESTAMP(6), "
		"dispatch_owner = NULL, dispatch_last_error = NULL "
		"WHERE id = ? AND dispatch_token = ?",
	[STMT_RETRY] =
		"UPDATE payments SET dispatch_due_at = UTC_TIMESTAMP(6) + "
		"INTERVAL ? MICROSECOND, dispatch_owner = NULL, "
		"dispatch_last_error = ? WHERE id = ? AND dispatch_token = ?",
	/* A failure that does not count (a Retry-After, an outage): the
	 * claim's attempt is taken back, as a release does. */
	[STMT_DEFER] =
		"UPDATE payments SET dispatch_due_at = UTC_TIMESTAMP(6) + "
		"INTERVAL ? MICROSECOND, dispatch_owner = NULL, "
		"dispatch_last_error = ?, dispatch_attempts = "
		"IF(dispatch_attempts > 0, dispatch_attempts - 1, 0) "
		"WHERE id = ? AND dispatch_token = ?",
	[STMT_DEAD] =
		"UPDATE payments SET dispatch_state = 'dead', "
		"dispatch_due_at = NULL, dispatch_owner = NULL, "
		"dispatch_last_error = ? WHERE id = ? AND dispatch_token = ?",
	/* The claim counted an attempt that never happened: take it back. */
	[STMT_RELEASE] =
		"UPDATE payments SET dispatch_due_at = UTC_TIMESTAMP(6), "
		"dispatch_owner = NULL, dispatch_attempts = "
		"IF(dispatch_attempts > 0, dispatch_attempts - 1, 0) "
		"WHERE id = ? AND dispatch_token = ?",
};

static const char *const stmt_names[STMT_COUNT] = {
	[STMT_DELIVERED] = "record delivered",
	[STMT_RETRY] = "record retry",
	[STMT_DEFER] = "record deferred retry",
	[STMT_DEAD] = "record dead",
	[STMT_RELEASE] = "release",
};

/* received_at as RFC 3339 UTC (the column holds UTC: payhook's sessions use
 * time_zone +00:00). Passed as an argument so no '%' reaches a printf. */
static const char received_at_format[] = "%Y-%m-%dT%H:%i:%s.%fZ";

struct handoff_store {
	const struct config *cfg;
	/* The connection, on the node list with the receiver's failover. */
	struct sqlconn *conn;
	MYSQL_STMT *stmt[STMT_COUNT]; /* prepared at first use */
	char owner[HANDOFF_STORE_OWNER_MAX + 1]; /* "<host>:<pid>" */
};

static const char *const status_names[] = {
	[HANDOFF_STORE_OK] = "ok",
	[HANDOFF_STORE_SUPERSEDED] = "superseded",
	[HANDOFF_STORE_FAILED] = "failed",
};

const char *handoff_store_status_name(enum handoff_store_status status)
{
	if ((unsigned)status >= sizeof(status_names) / sizeof(status_names[0]))
		return "?";
	return status_names[status];
}

/* The statements go with their connection (sqlconn's on_disconnect). */
static void close_statements(void *ctx)
{
	struct handoff_store *d = ctx;

	for (size_t i = 0; i < STMT_COUNT; i++) {
		if (d->stmt[i] != NULL)
			mysql_stmt_close(d->stmt[i]);
		d->stmt[i] = NULL;
	}
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
		.on_disconnect = close_statements,
		.ctx = d,
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

void handoff_store_free(struct handoff_store *d)
{
	if (d == NULL)
		return;
	sqlconn_free(d->conn);
	free(d);
}

/* After a failed statement (sqlconn_failed): a lock wait timeout or
 * deadlock rolls back and keeps the connection; anything else - a lost
 * connection, a read-only server after a failover, a missing column - drops
 * it (a failed node for the next one), and the next call reconnects. */
static void after_failure(struct handoff_store *d, unsigned int code)
{
	sqlconn_failed(d->conn, code, true);
}

/* Fills err with what failed on the connection, then cleans up. Returns -1. */
static int connection_failed(struct handoff_store *d, const char *what,
			     struct error *err)
{
	MYSQL *mysql = sqlconn_mysql(d->conn);
	unsigned int code = mysql_errno(mysql);

	error_set(err, "mysql %s: %u %s", what, code, mysql_error(mysql));
	after_failure(d, code);
	return -1;
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

/* sqlconn_query_number, dropping the connection when it fails. */
static int query_number(struct handoff_store *d, const char *sql,
			unsigned long long *out, struct error *err)
{
	if (sqlconn_query_number(d->conn, sql, out, err) == 0)
		return 0;
	disconnect(d);
	return -1;
}

int handoff_store_check_schema(struct handoff_store *d, struct error *err)
{
	static const char table_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND column_name IN ('id', 'provider', 'transaction_id', "
		"'event_id', 'amount', 'currency', 'payload', 'received_at')";
	static const char columns_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND column_name IN ('dispatch_state', 'dispatch_due_at', "
		"'dispatch_attempts', 'dispatch_token', 'dispatch_owner', "
		"'dispatch_last_error', 'delivered_at')";
	static const char state_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND column_name = 'dispatch_state' AND column_type = "
		"'enum(''pending'',''delivered'',''dead'',''skipped'')'";
	static const char index_sql[] =
		"SELECT COUNT(*) FROM information_schema.statistics "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND index_name = 'ix_payments_dispatch_due' "
		"AND seq_in_index = 1 AND column_name = 'dispatch_due_at'";
	static const char skip_locked_sql[] =
		"SELECT id FROM payments WHERE 1 = 0 FOR UPDATE SKIP LOCKED";
	unsigned long long table = 0, columns = 0, state = 0, index = 0;
	MYSQL_RES *res;
	int rc = 0;

	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	if (query_number(d, table_sql, &table, err) != 0 ||
	    query_number(d, columns_sql, &columns, err) != 0 ||
	    query_number(d, state_sql, &state, err) != 0 ||
	    query_number(d, index_sql, &index, err) != 0)
		return -1;
	if (table == 0)
		rc = error_set(err, "no table payments in this database: load "
			       "db/schema.sql");
	else if (table != 8)
		rc = error_set(err, "table payments lacks provider or event_id: "
			       "run db/migrate-2-providers.sql, then "
			       "db/migrate-3-dispatch.sql");
	else if (columns == 0)
		rc = error_set(err, "table payments has no dispatch columns: run "
			       "db/migrate-3-dispatch.sql");
	else if (columns != 7 || state != 1)
		rc = error_set(err, "table payments has %llu of the 7 dispatch "
			       "columns, or dispatch_state is not "
			       "ENUM('pending','delivered','dead','skipped'): "
			       "compare with db/schema.sql", columns);
	else if (index == 0)
		rc = error_set(err, "index ix_payments_dispatch_due on "
			       "(dispatch_due_at) is missing: finding due "
			       "payments would read the whole table; add it as "
			       "db/migrate-3-dispatch.sql does");
	if (rc != 0) {
		mysql_rollback(sqlconn_mysql(d->conn));
		return rc;
	}
	if (mysql_query(sqlconn_mysql(d->conn), skip_locked_sql) != 0) {
		error_set(err, "the server refuses FOR UPDATE SKIP LOCKED "
			  "(MariaDB 10.6+ or MySQL 8.0.1+ is needed): %u %s",
			  mysql_errno(sqlconn_mysql(d->conn)), mysql_error(sqlconn_mysql(d->conn)));
		after_failure(d, mysql_errno(sqlconn_mysql(d->conn)));
		return -1;
	}
	res = mysql_store_result(sqlconn_mysql(d->conn));
	if (res != NULL)
		mysql_free_result(res);
	if (mysql_rollback(sqlconn_mysql(d->conn)) != 0)
		return connection_failed(d, "rollback", err);
	return 0;
}

/* Formats a statement into a new string the caller frees. Returns NULL with
 * err set when out of memory. */
static char *sql_new(struct error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static char *sql_new(struct error *err, const char *fmt, ...)
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
static char *id_list_new(const unsigned long long *ids, size_t count,
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

static unsigned long long parse_ull(const char *text)
{
	uint64_t value = 0;

	if (text == NULL || number_parse(text, UINT64_MAX, &value) != NUMBER_OK)
		return 0;
	return value;
}

/* Reads the claimed rows (10 columns, see claim_rows_sql) into batch.
 * Returns 0, or -1 with err set (batch keeps what it read; the caller
 * cleans it up). */
static int read_claimed(struct handoff_store *d,
			struct handoff_store_batch *batch, size_t expected,
			struct error *err)
{
	MYSQL_RES *res = mysql_store_result(sqlconn_mysql(d->conn));
	MYSQL_ROW row;
	int rc = 0;

	if (res == NULL)
		return connection_failed(d, "claim read", err);
	batch->items = calloc(expected, sizeof(*batch->items));
	if (batch->items == NULL) {
		mysql_free_result(res);
		return error_set(err, "dispatch: out of memory");
	}
	while (batch->count < expected && (row = mysql_fetch_row(res)) != NULL) {
		unsigned long *len = mysql_fetch_lengths(res);
		struct handoff_row *p = &batch->items[batch->count];

		if (len == NULL || row[7] == NULL) {
			rc = error_set(err, "mysql claim read: a row without "
				       "its payload");
			break;
		}
		p->id = parse_ull(row[0]);
		copy_field(p->provider, sizeof(p->provider), row[1], len[1]);
		p->transaction_id_len = copy_field(p->transaction_id,
						   sizeof(p->transaction_id),
						   row[2], len[2]);
		p->amount = parse_ull(row[3]);
		copy_field(p->currency, sizeof(p->currency), row[4], len[4]);
		copy_field(p->received_at, sizeof(p->received_at), row[6],
			   len[6]);
		p->token = parse_ull(row[8]);
		p->attempts = (unsigned long)parse_ull(row[9]);
		/* Counted now, so cleanup frees what was copied so far. */
		batch->count++;
		if (row[5] != NULL) {
			p->event_id = dup_field(row[5], len[5]);
			p->event_id_len = len[5];
		}
		p->payload = dup_field(row[7], len[7]);
		p->payload_len = len[7];
		if ((row[5] != NULL && p->event_id == NULL) ||
		    p->payload == NULL) {
			rc = error_set(err, "dispatch: out of memory reading "
				       "a claimed payment");
			break;
		}
	}
	mysql_free_result(res);
	return rc;
}

int handoff_store_claim(struct handoff_store *d, size_t limit,
			struct handoff_store_batch *batch, struct error *err)
{
	const struct config *cfg = d->cfg;
	unsigned long long *ids = NULL;
	size_t count = 0;
	char *list = NULL, *sql = NULL;
	char owner[2 * HANDOFF_STORE_OWNER_MAX + 1];
	MYSQL_RES *res = NULL;
	MYSQL_ROW row;

	memset(batch, 0, sizeof(*batch));
	if (limit == 0)
		return 0;
	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	/* The lease is measured from before the claim is sent: the server's
	 * due_at is computed later, so it can only end after ours. */
	batch->lease_start_us = timing_now_us();
	batch->lease_end_us = batch->lease_start_us +
			      (int64_t)cfg->dispatch_lease_ms * 1000;

	sql = sql_new(err,
		      "SELECT id FROM payments WHERE dispatch_due_at <= "
		      "UTC_TIMESTAMP(6) AND dispatch_state = 'pending' "
		      "ORDER BY dispatch_due_at LIMIT %zu "
		      "FOR UPDATE SKIP LOCKED", limit);
	if (sql == NULL)
		goto fail;
	if (mysql_query(sqlconn_mysql(d->conn), sql) != 0 ||
	    (res = mysql_store_result(sqlconn_mysql(d->conn))) == NULL) {
		connection_failed(d, "claim select", err);
		goto fail;
	}
	free(sql);
	sql = NULL;
	ids = calloc(mysql_num_rows(res) + 1, sizeof(*ids));
	if (ids == NULL) {
		error_set(err, "dispatch: out of memory");
		goto fail_rollback;
	}
	while ((row = mysql_fetch_row(res)) != NULL && count < limit)
		ids[count++] = parse_ull(row[0]);
	mysql_free_result(res);
	res = NULL;
	if (count == 0) {
		/* End the (empty) transaction: nothing is claimed. */
		if (mysql_rollback(sqlconn_mysql(d->conn)) != 0) {
			connection_failed(d, "rollback", err);
			goto fail;
		}
		free(ids);
		return 0;
	}

	list = id_list_new(ids, count, err);
	if (list == NULL)
		goto fail_rollback;
	mysql_real_escape_string(sqlconn_mysql(d->conn), owner, d->owner,
				 (unsigned long)strlen(d->owner));
	sql = sql_new(err,
		      "UPDATE payments SET dispatch_token = dispatch_token + 1, "
		      "dispatch_attempts = dispatch_attempts + 1, "
		      "dispatch_owner = '%s', dispatch_due_at = "
		      "UTC_TIMESTAMP(6) + INTERVAL %lld MICROSECOND "
		      "WHERE id IN (%s)",
		      owner, (long long)cfg->dispatch_lease_ms * 1000, list);
	if (sql == NULL)
		goto fail_rollback;
	if (mysql_query(sqlconn_mysql(d->conn), sql) != 0) {
		connection_failed(d, "claim update", err);
		goto fail;
	}
	free(sql);
	/* In the order they came due; the ids are numbers we read. */
	sql = sql_new(err,
		      "SELECT id, provider, transaction_id, amount, currency, "
		      "event_id, DATE_FORMAT(received_at, '%s'), payload, "
		      "dispatch_token, dispatch_attempts FROM payments "
		      "WHERE id IN (%s) ORDER BY FIELD(id, %s)",
		      received_at_format, list, list);
	if (sql == NULL)
		goto fail_rollback;
	if (mysql_query(sqlconn_mysql(d->conn), sql) != 0) {
		connection_failed(d, "claim read", err);
		goto fail;
	}
	if (read_claimed(d, batch, count, err) != 0)
		goto fail_rollback;
	/* A COMMIT that fails may or may not have claimed the rows: either
	 * way they come due again when the server's lease ends. */
	if (mysql_commit(sqlconn_mysql(d->conn)) != 0) {
		connection_failed(d, "claim commit", err);
		goto fail;
	}
	free(sql);
	free(list);
	free(ids);
	return 0;

fail_rollback:
	if (sqlconn_mysql(d->conn) != NULL && mysql_rollback(sqlconn_mysql(d->conn)) != 0)
		disconnect(d);
fail:
	if (res != NULL)
		mysql_free_result(res);
	free(sql);
	free(list);
	free(ids);
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

/* The statement number which, prepared on this connection at first use (so
 * that --check-config can connect to a table that lacks its columns).
 * Returns it, or NULL with err set and the connection dropped. */
static MYSQL_STMT *prepared(struct handoff_store *d, enum stmt_index which,
			    struct error *err)
{
	MYSQL_STMT *stmt = d->stmt[which];

	if (stmt != NULL)
		return stmt;
	stmt = sqlconn_prepare(d->conn, stmt_sql[which], err);
	if (stmt == NULL) {
		disconnect(d);
		return NULL;
	}
	d->stmt[which] = stmt;
	return stmt;
}

/* Runs the fenced statement number which with param bound, then COMMIT.
 * HANDOFF_STORE_SUPERSEDED when it matched no row: the token has moved on. */
static enum handoff_store_status fenced_write(struct handoff_store *d,
					      enum stmt_index which,
					      MYSQL_BIND *param,
					      struct error *err)
{
	MYSQL_STMT *stmt;
	my_ulonglong matched;
	unsigned int code;

	if (sqlconn_connect(d->conn, err) != 0)
		return HANDOFF_STORE_FAILED;
	stmt = prepared(d, which, err);
	if (stmt == NULL)
		return HANDOFF_STORE_FAILED;
	if (mysql_stmt_bind_param(stmt, param) != 0 ||
	    mysql_stmt_execute(stmt) != 0) {
		code = mysql_stmt_errno(stmt);
		error_set(err, "mysql %s: %u %s", stmt_names[which], code,
			  mysql_stmt_error(stmt));
		after_failure(d, code);
		return HANDOFF_STORE_FAILED;
	}
	matched = mysql_stmt_affected_rows(stmt);
	if (mysql_commit(sqlconn_mysql(d->conn)) != 0) {
		connection_failed(d, "commit", err);
		return HANDOFF_STORE_FAILED;
	}
	/* (my_ulonglong)-1 only follows a failed statement. */
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
	return fenced_write(d, which, param, err);
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

int handoff_store_list_dead(struct handoff_store *d,
			    int (*each)(void *ctx,
					const struct handoff_store_dead *row),
			    void *ctx, struct error *err)
{
	static const char sql[] =
		"SELECT id, provider, transaction_id, dispatch_attempts, "
		"COALESCE(dispatch_last_error, '') FROM payments "
		"WHERE dispatch_state = 'dead' ORDER BY id";
	MYSQL_RES *res;
	MYSQL_ROW row;
	int stop = 0;

	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	if (mysql_query(sqlconn_mysql(d->conn), sql) != 0)
		return connection_failed(d, "list dead", err);
	/* Streamed: the list may be long. */
	res = mysql_use_result(sqlconn_mysql(d->conn));
	if (res == NULL)
		return connection_failed(d, "list dead", err);
	while (!stop && (row = mysql_fetch_row(res)) != NULL) {
		struct handoff_store_dead dead = {
			.id = parse_ull(row[0]),
			.provider = row[1] != NULL ? row[1] : "",
			.transaction_id = row[2] != NULL ? row[2] : "",
			.attempts = (unsigned long)parse_ull(row[3]),
			.last_error = row[4] != NULL ? row[4] : "",
		};

		stop = each(ctx, &dead);
	}
	/* mysql_fetch_row returns NULL at the end and on an error alike. */
	if (!stop && mysql_errno(sqlconn_mysql(d->conn)) != 0) {
		mysql_free_result(res);
		return connection_failed(d, "list dead", err);
	}
	mysql_free_result(res);
	if (mysql_rollback(sqlconn_mysql(d->conn)) != 0)
		return connection_failed(d, "rollback", err);
	return 0;
}

/* Appends " AND <head>'<value, escaped>'<tail>" to the WHERE clause in
 * *where (a new string; the old one is freed) when value is not NULL.
 * Returns 0, or -1 with err set (out of memory; *where is then NULL). */
static int where_add(struct handoff_store *d, char **where, const char *head,
		     const char *value, const char *tail, struct error *err)
{
	char *escaped, *grown;
	size_t len;

	if (value == NULL)
		return 0;
	len = strlen(value);
	escaped = malloc(2 * len + 1);
	if (escaped == NULL) {
		grown = NULL;
		error_set(err, "dispatch: out of memory");
	} else {
		mysql_real_escape_string(sqlconn_mysql(d->conn), escaped, value,
					 (unsigned long)len);
		grown = sql_new(err, "%s AND %s'%s'%s", *where, head, escaped,
				tail);
	}
	free(escaped);
	free(*where);
	*where = grown;
	return grown == NULL ? -1 : 0;
}

int handoff_store_requeue(struct handoff_store *d,
			  enum handoff_store_change change,
			  const struct handoff_store_selection *sel,
			  bool dry_run, unsigned long long *count,
			  struct error *err)
{
	MYSQL *mysql;
	char *where = NULL, *sql = NULL, *list = NULL;
	my_ulonglong rows;
	int rc = -1;

	*count = 0;
	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	mysql = sqlconn_mysql(d->conn);
	/* Requeue: dead or skipped (never attempted) rows; redeliver:
	 * delivered ones. The idempotency key is the row's own, so it stays. */
	where = sql_new(err, "%s", change == HANDOFF_STORE_REDELIVER
					   ? "dispatch_state = 'delivered'"
					   : "dispatch_state IN ('dead', 'skipped')");
	if (where == NULL)
		return -1;
	if (sel->id_count > 0) {
		char *grown;

		list = id_list_new(sel->ids, sel->id_count, err);
		if (list == NULL)
			goto out;
		grown = sql_new(err, "%s AND id IN (%s)", where, list);
		free(where);
		where = grown;
		if (where == NULL)
			goto out;
	}
	if (where_add(d, &where, "provider = ", sel->provider, "", err) != 0 ||
	    where_add(d, &where, "received_at >= ", sel->since, "", err) != 0 ||
	    where_add(d, &where, "received_at < ", sel->until, "", err) != 0 ||
	    where_add(d, &where, "LOCATE(", sel->error,
		      ", COALESCE(dispatch_last_error, '')) > 0", err) != 0)
		goto out;
	if (dry_run) {
		sql = sql_new(err, "SELECT COUNT(*) FROM payments WHERE %s", where);
		if (sql == NULL)
			goto out;
		if (query_number(d, sql, count, err) != 0)
			goto out;
		if (mysql_rollback(mysql) != 0) {
			connection_failed(d, "rollback", err);
			goto out;
		}
		rc = 0;
		goto out;
	}
	sql = sql_new(err,
		      "UPDATE payments SET dispatch_state = 'pending', "
		      "dispatch_due_at = UTC_TIMESTAMP(6), dispatch_attempts = 0, "
		      "dispatch_owner = NULL WHERE %s", where);
	if (sql == NULL)
		goto out;
	if (mysql_query(mysql, sql) != 0) {
		connection_failed(d, change == HANDOFF_STORE_REDELIVER
					     ? "redeliver" : "requeue", err);
		goto out;
	}
	rows = mysql_affected_rows(mysql);
	if (mysql_commit(mysql) != 0) {
		connection_failed(d, "requeue commit", err);
		goto out;
	}
	*count = rows == (my_ulonglong)-1 ? 0 : (unsigned long long)rows;
	rc = 0;
out:
	free(sql);
	free(list);
	free(where);
	return rc;
}

/* ER_NO_SUCH_TABLE: a database from before db/migrate-5-dispatch-control.sql. */
#define NO_SUCH_TABLE 1146

int handoff_store_paused(struct handoff_store *d, bool *paused,
			 struct error *err)
{
	static const char sql[] =
		"SELECT COALESCE(MAX(paused), 0) FROM dispatch_control";
	MYSQL *mysql;
	unsigned long long value = 0;

	*paused = false;
	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	mysql = sqlconn_mysql(d->conn);
	if (sqlconn_query_number(d->conn, sql, &value, err) != 0) {
		if (mysql_errno(mysql) != NO_SUCH_TABLE) {
			disconnect(d);
			return -1;
		}
		/* No table, no pause: the flag came with migration 5. */
		value = 0;
	}
	/* End the read's transaction: no snapshot or metadata lock kept. */
	if (mysql_rollback(mysql) != 0)
		return connection_failed(d, "rollback", err);
	*paused = value != 0;
	return 0;
}

int handoff_store_set_paused(struct handoff_store *d, bool paused,
			     struct error *err)
{
	char owner[2 * HANDOFF_STORE_OWNER_MAX + 1];
	char *sql;
	MYSQL *mysql;

	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	mysql = sqlconn_mysql(d->conn);
	mysql_real_escape_string(mysql, owner, d->owner,
				 (unsigned long)strlen(d->owner));
	sql = sql_new(err,
		      "INSERT INTO dispatch_control (id, paused, changed_at, "
		      "changed_by) VALUES (1, %d, UTC_TIMESTAMP(6), '%s') "
		      "ON DUPLICATE KEY UPDATE paused = VALUES(paused), "
		      "changed_at = VALUES(changed_at), "
		      "changed_by = VALUES(changed_by)",
		      paused ? 1 : 0, owner);
	if (sql == NULL)
		return -1;
	if (mysql_query(mysql, sql) != 0) {
		unsigned int code = mysql_errno(mysql);

		free(sql);
		if (code == NO_SUCH_TABLE) {
			after_failure(d, code);
			return error_set(err, "no table dispatch_control in this "
					 "database: run "
					 "db/migrate-5-dispatch-control.sql");
		}
		return connection_failed(d, "pause flag", err);
	}
	free(sql);
	if (mysql_commit(mysql) != 0)
		return connection_failed(d, "pause flag commit", err);
	return 0;
}

int handoff_store_gauges(struct handoff_store *d,
			 struct handoff_store_gauges *g, struct error *err)
{
	/* Each part stays on an index: pending rows are those with a due
	 * time (ix_payments_dispatch_due), leased ones the future end of that
	 * range, dead ones ix_payments_dispatch_state. */
	static const char sql[] =
		"SELECT (SELECT COUNT(*) FROM payments "
		"WHERE dispatch_due_at IS NOT NULL), "
		"(SELECT COUNT(*) FROM payments WHERE dispatch_due_at > "
		"UTC_TIMESTAMP(6) AND dispatch_owner IS NOT NULL), "
		"(SELECT COUNT(*) FROM payments WHERE dispatch_state = 'dead'), "
		"(SELECT GREATEST(0, COALESCE(TIMESTAMPDIFF(SECOND, "
		"MIN(dispatch_due_at), UTC_TIMESTAMP(6)), 0)) FROM payments "
		"WHERE dispatch_due_at IS NOT NULL)";
	MYSQL *mysql;
	MYSQL_RES *res;
	MYSQL_ROW row;

	memset(g, 0, sizeof(*g));
	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	mysql = sqlconn_mysql(d->conn);
	if (mysql_query(mysql, sql) != 0)
		return connection_failed(d, "gauges", err);
	res = mysql_store_result(mysql);
	if (res == NULL)
		return connection_failed(d, "gauges", err);
	row = mysql_fetch_row(res);
	if (row != NULL && mysql_num_fields(res) == 4) {
		g->pending = parse_ull(row[0]);
		g->in_flight = parse_ull(row[1]);
		g->dead = parse_ull(row[2]);
		g->oldest_due_s = parse_ull(row[3]);
	}
	mysql_free_result(res);
	if (mysql_rollback(mysql) != 0)
		return connection_failed(d, "rollback", err);
	return 0;
}

int handoff_store_check_control(struct handoff_store *d, bool *migrated,
				bool *paused, struct error *err)
{
	static const char sql[] =
		"SELECT (SELECT COUNT(*) FROM information_schema.tables "
		"WHERE table_schema = DATABASE() AND "
		"table_name = 'dispatch_control') + "
		"(SELECT COUNT(*) FROM information_schema.statistics "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND index_name = 'ix_payments_dispatch_state' "
		"AND seq_in_index = 1)";
	unsigned long long found = 0;

	*migrated = false;
	*paused = false;
	if (sqlconn_connect(d->conn, err) != 0)
		return -1;
	if (query_number(d, sql, &found, err) != 0)
		return -1;
	if (mysql_rollback(sqlconn_mysql(d->conn)) != 0)
		return connection_failed(d, "rollback", err);
	*migrated = found == 2;
	return handoff_store_paused(d, paused, err);
}
