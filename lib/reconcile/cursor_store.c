/* cursor_store.c - the reconcile_cursors table and the look-ups of the
 * pass (cursor_store.h), over the one MySQL core (sqlconn). */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor_store.h"
#include "sqlconn.h"

/* Owner names, profile names and ids go in escaped: at most this long. */
#define VALUE_MAX 255
#define SQL_MAX 2048

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

/* Runs sql (printf-style; %s values escaped by the caller). Returns the
 * rows it changed, or -1 with err set (the connection dropped when lost). */
static long long run(struct cursor_store *s, struct error *err,
		     const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static long long run(struct cursor_store *s, struct error *err,
		     const char *fmt, ...)
{
	char sql[SQL_MAX];
	va_list ap;
	int n;
	MYSQL *mysql;

	va_start(ap, fmt);
	n = vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(sql))
		return error_set(err, "reconcile: a statement too long");
	if (sqlconn_connect(s->conn, err) != 0)
		return -1;
	mysql = sqlconn_mysql(s->conn);
	if (mysql_real_query(mysql, sql, (unsigned long)n) != 0) {
		unsigned code = mysql_errno(mysql);

		error_set(err, "mysql: %u %s", code, mysql_error(mysql));
		sqlconn_failed(s->conn, code, false);
		return -1;
	}
	return (long long)mysql_affected_rows(mysql);
}

/* Escapes text into out (2 * VALUE_MAX + 1 bytes). Returns 0, or -1. */
static int escape(struct cursor_store *s, const char *text, char *out,
		  struct error *err)
{
	size_t len = strlen(text);

	if (len > VALUE_MAX)
		return error_set(err, "reconcile: a value too long");
	if (sqlconn_connect(s->conn, err) != 0)
		return -1;
	mysql_real_escape_string(sqlconn_mysql(s->conn), out, text,
				 (unsigned long)len);
	return 0;
}

/* Runs the SELECT sql. Returns its stored result (the caller frees it),
 * or NULL with err set (the connection dropped when lost). */
static MYSQL_RES *select_rows(struct cursor_store *s, const char *sql,
			      struct error *err)
{
	MYSQL *mysql = sqlconn_mysql(s->conn);
	MYSQL_RES *res = NULL;

	if (mysql_query(mysql, sql) != 0 ||
	    (res = mysql_store_result(mysql)) == NULL) {
		unsigned code = mysql_errno(mysql);

		error_set(err, "mysql: %u %s", code, mysql_error(mysql));
		sqlconn_failed(s->conn, code, false);
	}
	return res;
}

int cursor_store_lease(struct cursor_store *s, const char *profile,
		       long lease_s, struct error *err)
{
	char p[2 * VALUE_MAX + 1], o[2 * VALUE_MAX + 1];
	long long rows;

	if (escape(s, profile, p, err) != 0 || escape(s, s->owner, o, err) != 0)
		return -1;
	if (run(s, err, "INSERT IGNORE INTO reconcile_cursors (provider) "
		"VALUES ('%s')", p) < 0)
		return -1;
	rows = run(s, err,
		   "UPDATE reconcile_cursors SET lease_owner = '%s', "
		   "lease_until = UTC_TIMESTAMP(6) + INTERVAL %ld SECOND "
		   "WHERE provider = '%s' AND (lease_owner IS NULL OR "
		   "lease_owner = '%s' OR lease_until IS NULL OR "
		   "lease_until < UTC_TIMESTAMP(6))",
		   o, lease_s, p, o);
	if (rows < 0)
		return -1;
	return rows > 0 ? 1 : 0;
}

void cursor_store_release(struct cursor_store *s, const char *profile)
{
	char p[2 * VALUE_MAX + 1], o[2 * VALUE_MAX + 1];
	struct error err;

	if (escape(s, profile, p, &err) != 0 || escape(s, s->owner, o, &err) != 0)
		return;
	run(s, &err, "UPDATE reconcile_cursors SET lease_owner = NULL, "
	    "lease_until = NULL WHERE provider = '%s' AND lease_owner = '%s'",
	    p, o);
}

int cursor_store_read(struct cursor_store *s, const char *profile,
		      struct cursor_row *row, struct error *err)
{
	char p[2 * VALUE_MAX + 1], sql[SQL_MAX];
	MYSQL_RES *res;
	MYSQL_ROW r;

	memset(row, 0, sizeof(*row));
	if (escape(s, profile, p, err) != 0)
		return -1;
	snprintf(sql, sizeof(sql),
		 "SELECT FLOOR(UNIX_TIMESTAMP(cursor_at)) FROM "
		 "reconcile_cursors WHERE provider = '%s' AND cursor_at IS NOT "
		 "NULL", p);
	res = select_rows(s, sql, err);
	if (res == NULL)
		return -1;
	r = mysql_fetch_row(res);
	if (r != NULL && r[0] != NULL) {
		row->has_cursor = true;
		row->cursor_s = strtoll(r[0], NULL, 10);
	}
	mysql_free_result(res);
	return 0;
}

int cursor_store_advance(struct cursor_store *s, const char *profile,
			 int64_t cursor_s, struct error *err)
{
	char p[2 * VALUE_MAX + 1], o[2 * VALUE_MAX + 1];
	long long rows;

	if (escape(s, profile, p, err) != 0 || escape(s, s->owner, o, err) != 0)
		return -1;
	rows = run(s, err,
		   "UPDATE reconcile_cursors SET cursor_at = FROM_UNIXTIME(%"
		   PRId64 "), updated_at = UTC_TIMESTAMP(6) WHERE provider = "
		   "'%s' AND lease_owner = '%s'", cursor_s, p, o);
	if (rows < 0)
		return -1;
	if (rows == 0)
		return error_set(err, "the pass lost its lease (another "
				 "host took it over): cursor not moved");
	return 0;
}

int cursor_store_finish(struct cursor_store *s, const char *profile,
			const char *error, unsigned long recovered,
			unsigned long discrepancies, struct error *err)
{
	char p[2 * VALUE_MAX + 1], e[2 * VALUE_MAX + 1];
	char cut[VALUE_MAX + 1];
	struct error counted;

	if (escape(s, profile, p, err) != 0)
		return -1;
	if (run(s, err, "INSERT IGNORE INTO reconcile_cursors (provider) "
		"VALUES ('%s')", p) < 0)
		return -1;
	if (error == NULL) {
		if (run(s, err,
			"UPDATE reconcile_cursors SET last_success_at = "
			"UTC_TIMESTAMP(6), last_error = NULL, "
			"updated_at = UTC_TIMESTAMP(6) WHERE provider = '%s'",
			p) < 0)
			return -1;
	} else {
		snprintf(cut, sizeof(cut), "%s", error);
		if (escape(s, cut, e, err) != 0 ||
		    run(s, err,
			"UPDATE reconcile_cursors SET last_error = '%s', "
			"last_error_at = UTC_TIMESTAMP(6), updated_at = "
			"UTC_TIMESTAMP(6) WHERE provider = '%s'", e, p) < 0)
			return -1;
	}
	/* Apart: a database without db/migrate-12-reconcile-status.sql
	 * still gets the cursor's times above. */
	if (run(s, &counted,
		"UPDATE reconcile_cursors SET recovered_total = "
		"recovered_total + %lu, discrepancies_total = "
		"discrepancies_total + %lu, failed_passes = %s WHERE "
		"provider = '%s'", recovered, discrepancies,
		error == NULL ? "0" : "failed_passes + 1", p) < 0)
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
	char p[2 * VALUE_MAX + 1], t[2 * VALUE_MAX + 1], sql[SQL_MAX];
	MYSQL_RES *res;
	MYSQL_ROW r;
	int found = 0;

	if (escape(s, profile, p, err) != 0 ||
	    escape(s, transaction_id, t, err) != 0)
		return -1;
	snprintf(sql, sizeof(sql),
		 "SELECT amount, currency FROM payments WHERE provider = '%s' "
		 "AND transaction_id = '%s'", p, t);
	res = select_rows(s, sql, err);
	if (res == NULL)
		return -1;
	r = mysql_fetch_row(res);
	if (r != NULL && r[0] != NULL && r[1] != NULL) {
		*amount = strtoull(r[0], NULL, 10);
		snprintf(currency, 4, "%s", r[1]);
		found = 1;
	}
	mysql_free_result(res);
	return found;
}
