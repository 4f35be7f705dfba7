/* cursor_store.c - the reconcile_cursors table and the look-ups of the
 * pass (cursor_store.h), over the one MySQL core (sqlconn). */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor_store.h"
#include "sqlconn.h"

/* Owner names, profile names and ids: at most this long. */
#define VALUE_MAX 255

/* The statement set (sqlconn, prepared at first use). */
enum {
	ST_ENSURE, ST_LEASE, ST_RELEASE, ST_READ, ST_ADVANCE, ST_SUCCESS,
	ST_ERROR, ST_COUNTS, ST_HELD, ST_DISCREPANCY, STATEMENTS
};
static const char *const statement_sql[STATEMENTS] = {
	[ST_ENSURE] = "INSERT IGNORE INTO reconcile_cursors (provider) "
		      "VALUES (?)",
	[ST_LEASE] = "UPDATE reconcile_cursors SET lease_owner = ?, "
		     "lease_until = UTC_TIMESTAMP(6) + INTERVAL ? SECOND "
		     "WHERE provider = ? AND (lease_owner IS NULL OR "
		     "lease_owner = ? OR lease_until IS NULL OR "
		     "lease_until < UTC_TIMESTAMP(6))",
	[ST_RELEASE] = "UPDATE reconcile_cursors SET lease_owner = NULL, "
		       "lease_until = NULL WHERE provider = ? AND "
		       "lease_owner = ?",
	[ST_READ] = "SELECT FLOOR(UNIX_TIMESTAMP(cursor_at)) FROM "
		    "reconcile_cursors WHERE provider = ? AND cursor_at IS NOT "
		    "NULL",
	[ST_ADVANCE] = "UPDATE reconcile_cursors SET cursor_at = "
		       "FROM_UNIXTIME(?), updated_at = UTC_TIMESTAMP(6) WHERE "
		       "provider = ? AND lease_owner = ?",
	[ST_SUCCESS] = "UPDATE reconcile_cursors SET last_success_at = "
		       "UTC_TIMESTAMP(6), last_error = NULL, "
		       "updated_at = UTC_TIMESTAMP(6) WHERE provider = ?",
	[ST_ERROR] = "UPDATE reconcile_cursors SET last_error = ?, "
		     "last_error_at = UTC_TIMESTAMP(6), updated_at = "
		     "UTC_TIMESTAMP(6) WHERE provider = ?",
	[ST_COUNTS] = "UPDATE reconcile_cursors SET recovered_total = "
		      "recovered_total + ?, discrepancies_total = "
		      "discrepancies_total + ?, failed_passes = IF(?, 0, "
		      "failed_passes + 1) WHERE provider = ?",
	[ST_HELD] = "SELECT amount, currency FROM payments WHERE provider = ? "
		    "AND transaction_id = ?",
	/* 1 row changed: new; 2: seen before (found_rows counts it). */
	[ST_DISCREPANCY] = "INSERT INTO reconcile_discrepancies (provider, "
			   "kind, object_id, transaction_id, listed_amount, "
			   "listed_currency, held_amount, held_currency) "
			   "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY "
			   "UPDATE last_seen_at = UTC_TIMESTAMP(6), seen = "
			   "seen + 1, held_amount = VALUES(held_amount), "
			   "held_currency = VALUES(held_currency)",
};

struct cursor_store {
	struct sqlconn *conn;
	char owner[VALUE_MAX + 1];
};

struct cursor_store *cursor_store_new(const struct config *cfg,
				      const char *owner, struct error *err)
{
	struct cursor_store *s = calloc(1, sizeof(*s));
	struct sqlconn_options options = {
		.max_packet = 1024 * 1024,
		.autocommit = true,
		.found_rows = true,
		.statements = statement_sql,
		.statement_count = STATEMENTS,
		.prepare_on_use = true,
	};

	if (s == NULL) {
		error_set(err, "reconcile: out of memory");
		return NULL;
	}
	snprintf(s->owner, sizeof(s->owner), "%s", owner);
	s->conn = sqlconn_new(cfg, &options, err);
	if (s->conn == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

void cursor_store_free(struct cursor_store *s)
{
	if (s == NULL)
		return;
	sqlconn_free(s->conn);
	free(s);
}

/* Binds text (at most VALUE_MAX bytes, else -1 with err set). */
static int bind_text(MYSQL_BIND *b, const char *text, unsigned long *len,
		     struct error *err)
{
	size_t n = strlen(text);

	if (n > VALUE_MAX)
		return error_set(err, "reconcile: a value too long");
	*len = (unsigned long)n;
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = (void *)text;
	b->buffer_length = *len;
	b->length = len;
	return 0;
}

static void bind_i64(MYSQL_BIND *b, long long *value)
{
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = value;
}

/* Runs statement which with params (and results, stored, or NULL).
 * Returns the rows it changed (0 for a SELECT), or -1 with err set (the
 * connection to sqlconn's classifier). */
static long long run(struct cursor_store *s, size_t which, MYSQL_BIND *params,
		     MYSQL_BIND *results, struct error *err)
{
	unsigned code;

	if (sqlconn_connect(s->conn, err) != 0)
		return -1;
	code = sqlconn_run(s->conn, which, params, results);
	if (code != 0) {
		error_set(err, "mysql: %u %s", code,
			  sqlconn_message(s->conn, which));
		sqlconn_fail(s->conn, code, false);
		return -1;
	}
	return results != NULL ? 0 :
				 (long long)sqlconn_affected(s->conn, which);
}

/* INSERT IGNORE of profile's row. Returns 0, or -1 with err set. */
static int ensure_row(struct cursor_store *s, const char *profile,
		      struct error *err)
{
	MYSQL_BIND param[1];
	unsigned long len;

	memset(param, 0, sizeof(param));
	if (bind_text(&param[0], profile, &len, err) != 0)
		return -1;
	return run(s, ST_ENSURE, param, NULL, err) < 0 ? -1 : 0;
}

int cursor_store_lease(struct cursor_store *s, const char *profile,
		       long lease_s, struct error *err)
{
	MYSQL_BIND param[4];
	unsigned long len[2];
	long long secs = lease_s, rows;

	if (ensure_row(s, profile, err) != 0)
		return -1;
	memset(param, 0, sizeof(param));
	if (bind_text(&param[0], s->owner, &len[0], err) != 0 ||
	    bind_text(&param[2], profile, &len[1], err) != 0)
		return -1;
	bind_i64(&param[1], &secs);
	param[3] = param[0];
	rows = run(s, ST_LEASE, param, NULL, err);
	if (rows < 0)
		return -1;
	return rows > 0 ? 1 : 0;
}

void cursor_store_release(struct cursor_store *s, const char *profile)
{
	MYSQL_BIND param[2];
	unsigned long len[2];
	struct error err;

	memset(param, 0, sizeof(param));
	if (bind_text(&param[0], profile, &len[0], &err) != 0 ||
	    bind_text(&param[1], s->owner, &len[1], &err) != 0)
		return;
	run(s, ST_RELEASE, param, NULL, &err);
}

int cursor_store_read(struct cursor_store *s, const char *profile,
		      struct cursor_row *row, struct error *err)
{
	MYSQL_BIND param[1], out[1];
	unsigned long len;
	long long cursor = 0;
	my_bool is_null = 0;
	unsigned code = 0;
	int rc;

	memset(row, 0, sizeof(*row));
	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	if (bind_text(&param[0], profile, &len, err) != 0)
		return -1;
	bind_i64(&out[0], &cursor);
	out[0].is_null = &is_null;
	if (run(s, ST_READ, param, out, err) < 0)
		return -1;
	rc = sqlconn_fetch(s->conn, ST_READ, &code);
	sqlconn_done(s->conn, ST_READ);
	if (rc < 0) {
		error_set(err, "mysql: %u %s", code,
			  sqlconn_message(s->conn, ST_READ));
		sqlconn_fail(s->conn, code, false);
		return -1;
	}
	if (rc == 1 && !is_null) {
		row->has_cursor = true;
		row->cursor_s = cursor;
	}
	return 0;
}

int cursor_store_advance(struct cursor_store *s, const char *profile,
			 int64_t cursor_s, struct error *err)
{
	MYSQL_BIND param[3];
	unsigned long len[2];
	long long cursor = cursor_s, rows;

	memset(param, 0, sizeof(param));
	bind_i64(&param[0], &cursor);
	if (bind_text(&param[1], profile, &len[0], err) != 0 ||
	    bind_text(&param[2], s->owner, &len[1], err) != 0)
		return -1;
	rows = run(s, ST_ADVANCE, param, NULL, err);
	if (rows < 0)
		return -1;
	if (rows == 0)
		return error_set(err, "the pass lost its lease (another "
				 "host took it over): cursor not moved");
	return 0;
}

/* Adds a pass's recorded rows and discrepancies to profile's row and
 * counts its failed passes in a row (complete: back to 0). */
static int count_pass(struct cursor_store *s, const char *profile,
		      bool complete, unsigned long recovered,
		      unsigned long discrepancies, struct error *err)
{
	MYSQL_BIND param[4];
	long long added = (long long)recovered, differing = (long long)discrepancies;
	long long reset = complete ? 1 : 0;
	unsigned long len;

	memset(param, 0, sizeof(param));
	bind_i64(&param[0], &added);
	bind_i64(&param[1], &differing);
	bind_i64(&param[2], &reset);
	if (bind_text(&param[3], profile, &len, err) != 0)
		return -1;
	return run(s, ST_COUNTS, param, NULL, err) < 0 ? -1 : 0;
}

int cursor_store_finish(struct cursor_store *s, const char *profile,
			const char *error, unsigned long recovered,
			unsigned long discrepancies, struct error *err)
{
	MYSQL_BIND param[2];
	unsigned long len[2];
	char cut[VALUE_MAX + 1];
	struct error counted;

	if (ensure_row(s, profile, err) != 0)
		return -1;
	memset(param, 0, sizeof(param));
	if (error == NULL) {
		if (bind_text(&param[0], profile, &len[0], err) != 0 ||
		    run(s, ST_SUCCESS, param, NULL, err) < 0)
			return -1;
	} else {
		snprintf(cut, sizeof(cut), "%s", error);
		if (bind_text(&param[0], cut, &len[0], err) != 0 ||
		    bind_text(&param[1], profile, &len[1], err) != 0 ||
		    run(s, ST_ERROR, param, NULL, err) < 0)
			return -1;
	}
	/* Apart: a database without db/migrate-12-reconcile-status.sql
	 * still gets the cursor's times above. */
	if (count_pass(s, profile, error == NULL, recovered, discrepancies,
		       &counted) != 0)
		return error_set(err, "reconcile_cursors' counts not written "
				 "(db/migrate-12-reconcile-status.sql applied?): "
				 "%s", counted.message);
	return 0;
}

int cursor_store_held_payment(struct cursor_store *s, const char *profile,
			      const char *transaction_id,
			      unsigned long long *amount, char currency[4],
			      struct error *err)
{
	MYSQL_BIND param[2], out[2];
	unsigned long len[2], currency_len = 0;
	unsigned long long held = 0;
	char cur[8] = "";
	my_bool amount_null = 0, currency_null = 0;
	unsigned code = 0;
	int rc;

	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	if (bind_text(&param[0], profile, &len[0], err) != 0 ||
	    bind_text(&param[1], transaction_id, &len[1], err) != 0)
		return -1;
	out[0].buffer_type = MYSQL_TYPE_LONGLONG;
	out[0].buffer = &held;
	out[0].is_unsigned = 1;
	out[0].is_null = &amount_null;
	out[1].buffer_type = MYSQL_TYPE_STRING;
	out[1].buffer = cur;
	out[1].buffer_length = sizeof(cur) - 1;
	out[1].length = &currency_len;
	out[1].is_null = &currency_null;
	if (run(s, ST_HELD, param, out, err) < 0)
		return -1;
	rc = sqlconn_fetch(s->conn, ST_HELD, &code);
	sqlconn_done(s->conn, ST_HELD);
	if (rc < 0) {
		error_set(err, "mysql: %u %s", code,
			  sqlconn_message(s->conn, ST_HELD));
		sqlconn_fail(s->conn, code, false);
		return -1;
	}
	if (rc == 0 || amount_null || currency_null)
		return 0;
	*amount = held;
	cur[currency_len < sizeof(cur) ? currency_len : sizeof(cur) - 1] = '\0';
	snprintf(currency, 4, "%s", cur);
	return 1;
}

int cursor_store_note_discrepancy(struct cursor_store *s,
				  const struct cursor_discrepancy *d,
				  struct error *err)
{
	MYSQL_BIND param[8];
	unsigned long len[6];
	unsigned long long listed = d->listed_amount, held = d->held_amount;
	unsigned code;
	long long rows;

	memset(param, 0, sizeof(param));
	if (bind_text(&param[0], d->provider, &len[0], err) != 0 ||
	    bind_text(&param[1], d->kind, &len[1], err) != 0 ||
	    bind_text(&param[2], d->object_id, &len[2], err) != 0 ||
	    bind_text(&param[3], d->transaction_id, &len[3], err) != 0 ||
	    bind_text(&param[5], d->listed_currency, &len[4], err) != 0 ||
	    bind_text(&param[7], d->held_currency, &len[5], err) != 0)
		return -1;
	param[4].buffer_type = MYSQL_TYPE_LONGLONG;
	param[4].buffer = &listed;
	param[4].is_unsigned = 1;
	param[6].buffer_type = MYSQL_TYPE_LONGLONG;
	param[6].buffer = &held;
	param[6].is_unsigned = 1;
	if (sqlconn_connect(s->conn, err) != 0)
		return -1;
	code = sqlconn_run(s->conn, ST_DISCREPANCY, param, NULL);
	if (code == SQLCONN_ER_NO_SUCH_TABLE) {
		error_set(err, "table reconcile_discrepancies missing (run "
			  "db/migrate-14-reconcile-discrepancies.sql): each "
			  "pass reports every discrepancy it sees");
		sqlconn_fail(s->conn, code, false);
		return CURSOR_STORE_NO_TABLE;
	}
	if (code != 0) {
		error_set(err, "mysql: %u %s", code,
			  sqlconn_message(s->conn, ST_DISCREPANCY));
		sqlconn_fail(s->conn, code, false);
		return -1;
	}
	rows = (long long)sqlconn_affected(s->conn, ST_DISCREPANCY);
	return rows == 1 ? 1 : 0;
}
