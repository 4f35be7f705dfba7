/* inbox_store.c - the inbox table over the one MySQL core (see
 * inbox_store.h). */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inbox_store.h"
#include "sqlconn.h"

#define SQL_MAX 1024
#define VALUE_MAX 255
/* Rows looked at per statement when the inbox is trimmed. */
#define TRIM_BATCH 1000
/* A keep adds up the table's sizes again (a scan) only after this many
 * writes of its own, or when its own count says the cap is reached: the
 * other workers' writes are seen then (and by payhook-dispatch's
 * retention step). */
#define SUM_EVERY 100

struct inbox_store {
	const struct config *cfg;
	struct sqlconn *conn;
	MYSQL_RES *res;       /* inbox_store_next's row, kept for its entry */
	/* The table's bytes as last added up, plus this store's writes
	 * since (writes of them); known false: add up at the next keep. */
	bool total_known;
	unsigned long long total;
	unsigned writes;
	unsigned long long since_sum; /* a batch's bytes since the last sum */
};

struct inbox_store *inbox_store_new(const struct config *cfg,
				    struct error *err)
{
	struct inbox_store *s = calloc(1, sizeof(*s));
	struct sqlconn_options options = {
		/* A body escaped may double; the rest of a statement is
		 * small. */
		.max_packet = 2 * (unsigned long)cfg->max_body_bytes + 65536,
		.autocommit = true,
		.read_committed = true,
	};

	if (s == NULL) {
		error_set(err, "inbox: out of memory");
		return NULL;
	}
	s->cfg = cfg;
	s->conn = sqlconn_new(cfg, &options, err);
	if (s->conn == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

void inbox_store_free(struct inbox_store *s)
{
	if (s == NULL)
		return;
	if (s->res != NULL)
		mysql_free_result(s->res);
	sqlconn_free(s->conn);
	free(s);
}

/* A failed statement: its error into err, the connection to sqlconn.
 * Returns -1. */
static int failed(struct inbox_store *s, const char *what, struct error *err)
{
	MYSQL *mysql = sqlconn_mysql(s->conn);
	unsigned code = mysql != NULL ? mysql_errno(mysql) : 0;

	if (code == SQLCONN_ER_NO_SUCH_TABLE)
		error_set(err, "inbox: %s: table inbox missing (run "
			  "db/migrate-11-inbox.sql)", what);
	else
		error_set(err, "inbox: %s: mysql: %u %s", what, code,
			  mysql != NULL ? mysql_error(mysql) : "not connected");
	sqlconn_failed(s->conn, code, false);
	return -1;
}

/* Sends sql[0..len). Returns 0, or -1 with err set. */
static int query(struct inbox_store *s, const char *what, const char *sql,
		 size_t len, struct error *err)
{
	if (sqlconn_connect(s->conn, err) != 0)
		return -1;
	if (mysql_real_query(sqlconn_mysql(s->conn), sql,
			     (unsigned long)len) != 0)
		return failed(s, what, err);
	return 0;
}

/* Runs the statement sql[0..len) that changes rows. Returns how many, or
 * -1 with err set. */
static long long run(struct inbox_store *s, const char *what, const char *sql,
		     size_t len, struct error *err)
{
	if (query(s, what, sql, len, err) != 0)
		return -1;
	return (long long)mysql_affected_rows(sqlconn_mysql(s->conn));
}

/* Escapes text[0..len) into out (2 * len + 1 bytes), connected first.
 * Returns 0, or -1 with err set. */
static int escape(struct inbox_store *s, const char *text, size_t len,
		  char *out, struct error *err)
{
	if (sqlconn_connect(s->conn, err) != 0)
		return -1;
	mysql_real_escape_string(sqlconn_mysql(s->conn), out, text,
				 (unsigned long)len);
	return 0;
}

/* Escapes a short text (at most VALUE_MAX bytes, cut there). */
static int escape_short(struct inbox_store *s, const char *text, char *out,
			struct error *err)
{
	size_t len = strlen(text);

	return escape(s, text, len > VALUE_MAX ? VALUE_MAX : len, out, err);
}

int inbox_store_check(struct inbox_store *s, struct error *err)
{
	static const char sql[] = "SELECT id, provider, received_at, outcome, "
				  "reason, headers, body, size FROM inbox "
				  "LIMIT 0";
	MYSQL_RES *res;

	if (query(s, "checking the table", sql, sizeof(sql) - 1, err) != 0)
		return -1;
	res = mysql_store_result(sqlconn_mysql(s->conn));
	if (res != NULL)
		mysql_free_result(res);
	return 0;
}

int inbox_store_keep(struct inbox_store *s, const char *provider,
		     int64_t received_us, const char *outcome,
		     const char *reason, const char *headers,
		     const char *body, size_t len, struct error *err)
{
	char p[2 * VALUE_MAX + 1], o[2 * VALUE_MAX + 1], r[2 * VALUE_MAX + 1];
	size_t hlen = strlen(headers);
	size_t cap = 2 * (len + hlen) + 6 * VALUE_MAX + 512;
	char *sql = malloc(cap);
	char *h, *b;
	int n;
	long long rows = -1;

	if (sql == NULL)
		return error_set(err, "inbox: out of memory for a %zu-byte "
				 "body", len);
	h = malloc(2 * hlen + 1);
	b = malloc(2 * len + 1);
	if (h == NULL || b == NULL) {
		error_set(err, "inbox: out of memory for a %zu-byte body", len);
		goto out;
	}
	if (escape_short(s, provider, p, err) != 0 ||
	    escape_short(s, outcome, o, err) != 0 ||
	    escape_short(s, reason, r, err) != 0 ||
	    escape(s, headers, hlen, h, err) != 0 ||
	    escape(s, body, len, b, err) != 0)
		goto out;
	n = snprintf(sql, cap, "INSERT INTO inbox (provider, received_at, "
		     "outcome, reason, headers, body, size) VALUES ('%s', "
		     "FROM_UNIXTIME(%" PRId64 ".%06d), '%s', '%s', '%s', '%s', "
		     "%zu)", p, received_us / 1000000,
		     (int)(received_us % 1000000), o, r, h, b, len);
	if (n < 0 || (size_t)n >= cap) {
		error_set(err, "inbox: a statement too long");
		goto out;
	}
	rows = run(s, "keeping a delivery", sql, (size_t)n, err);
	if (rows < 0 || s->cfg->inbox_max_bytes == 0)
		goto out;
	s->total += len;
	if (!s->total_known || ++s->writes >= SUM_EVERY ||
	    s->total > s->cfg->inbox_max_bytes) {
		if (inbox_store_trim(s, s->cfg->inbox_max_bytes, err) < 0)
			rows = -1;
	}
out:
	free(sql);
	free(h);
	free(b);
	return rows < 0 ? -1 : 0;
}

/* Runs the SELECT sql into a stored result (the caller frees it), or NULL
 * with err set. */
static MYSQL_RES *select_rows(struct inbox_store *s, const char *what,
			      const char *sql, struct error *err)
{
	MYSQL_RES *res;

	if (query(s, what, sql, strlen(sql), err) != 0)
		return NULL;
	res = mysql_store_result(sqlconn_mysql(s->conn));
	if (res == NULL)
		failed(s, what, err);
	return res;
}

long inbox_store_trim(struct inbox_store *s, size_t max_bytes,
		      struct error *err)
{
	char sql[SQL_MAX];
	unsigned long long total = 0, cut = 0, last = 0;
	long dropped = 0;
	MYSQL_RES *res;
	MYSQL_ROW row;

	if (sqlconn_connect(s->conn, err) != 0)
		return -1;
	s->total_known = false;
	if (sqlconn_query_number(s->conn, "SELECT COALESCE(SUM(size), 0) "
				 "FROM inbox", &total, err) != 0)
		return failed(s, "adding up its size", err);
	while (total > max_bytes) {
		/* The oldest rows, until what is left fits. */
		snprintf(sql, sizeof(sql), "SELECT id, size FROM inbox WHERE "
			 "id > %llu ORDER BY id LIMIT %d", last, TRIM_BATCH);
		res = select_rows(s, "finding the oldest", sql, err);
		if (res == NULL)
			return -1;
		cut = 0;
		while (total > max_bytes && (row = mysql_fetch_row(res)) != NULL) {
			unsigned long long size = strtoull(row[1], NULL, 10);

			cut = strtoull(row[0], NULL, 10);
			total = size < total ? total - size : 0;
		}
		mysql_free_result(res);
		if (cut == 0)
			break;
		snprintf(sql, sizeof(sql), "DELETE FROM inbox WHERE id > %llu "
			 "AND id <= %llu", last, cut);
		{
			long long rows = run(s, "dropping the oldest", sql,
					     strlen(sql), err);

			if (rows < 0)
				return -1;
			dropped += (long)rows;
		}
		last = cut;
	}
	s->total = total;
	s->total_known = true;
	s->writes = 0;
	return dropped;
}

long inbox_store_expire(struct inbox_store *s, long days, long limit,
			struct error *err)
{
	char sql[SQL_MAX];
	int n = snprintf(sql, sizeof(sql), "DELETE FROM inbox WHERE "
			 "received_at < UTC_TIMESTAMP(6) - INTERVAL %ld DAY "
			 "ORDER BY id LIMIT %ld", days, limit);

	return (long)run(s, "dropping the old", sql, (size_t)n, err);
}

int inbox_store_next(struct inbox_store *s, const struct inbox_filter *f,
		     unsigned long long *after, struct inbox_entry *e,
		     struct error *err)
{
	char sql[SQL_MAX], p[2 * VALUE_MAX + 1] = "", o[2 * VALUE_MAX + 1] = "";
	MYSQL_ROW row;
	unsigned long *lengths;
	size_t n;

	if (s->res != NULL) {
		mysql_free_result(s->res);
		s->res = NULL;
	}
	if ((f->provider != NULL && escape_short(s, f->provider, p, err) != 0) ||
	    (f->outcome != NULL && escape_short(s, f->outcome, o, err) != 0))
		return -1;
	/* Each part is far below SQL_MAX (the values at most 2 * VALUE_MAX). */
	n = (size_t)snprintf(sql, sizeof(sql), "SELECT id, provider, "
			     "FLOOR(UNIX_TIMESTAMP(received_at)), outcome, "
			     "headers, body FROM inbox WHERE id > %llu", *after);
	if (f->provider != NULL)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n,
				      " AND provider = '%s'", p);
	if (f->outcome != NULL)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n,
				      " AND outcome = '%s'", o);
	if (f->since_s > 0)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, " AND "
				      "received_at >= FROM_UNIXTIME(%" PRId64
				      ")", f->since_s);
	snprintf(sql + n, sizeof(sql) - n, " ORDER BY id LIMIT 1");
	s->res = select_rows(s, "reading the next delivery", sql, err);
	if (s->res == NULL)
		return -1;
	row = mysql_fetch_row(s->res);
	if (row == NULL)
		return 0;
	lengths = mysql_fetch_lengths(s->res);
	e->id = strtoull(row[0], NULL, 10);
	snprintf(e->provider, sizeof(e->provider), "%s", row[1]);
	e->received_s = strtoll(row[2], NULL, 10);
	snprintf(e->outcome, sizeof(e->outcome), "%s", row[3]);
	e->headers = row[4];
	e->body = row[5];
	e->len = lengths[5];
	*after = e->id;
	return 1;
}

int inbox_store_remove(struct inbox_store *s, unsigned long long id,
		       struct error *err)
{
	char sql[SQL_MAX];
	int n = snprintf(sql, sizeof(sql), "DELETE FROM inbox WHERE id = %llu",
			 id);

	return run(s, "removing a replayed delivery", sql, (size_t)n, err) < 0 ?
		       -1 : 0;
}

int inbox_store_note(struct inbox_store *s, unsigned long long id,
		     const char *outcome, const char *reason, struct error *err)
{
	char sql[SQL_MAX], o[2 * VALUE_MAX + 1] = "", r[2 * VALUE_MAX + 1];
	int n;

	if (escape_short(s, reason, r, err) != 0 ||
	    (outcome != NULL && escape_short(s, outcome, o, err) != 0))
		return -1;
	n = snprintf(sql, sizeof(sql), "UPDATE inbox SET reason = '%s'%s%s%s "
		     "WHERE id = %llu", r, outcome != NULL ? ", outcome = '" : "",
		     o, outcome != NULL ? "'" : "", id);
	if (n < 0 || (size_t)n >= sizeof(sql))
		return error_set(err, "inbox: a statement too long");
	return run(s, "noting a replay", sql, (size_t)n, err) < 0 ? -1 : 0;
}

/* ---- a batch of deliveries in one statement ---- */

/* A statement of a batch: the columns, then "(?, ?, ?, ?, ?, ?, ?)" a row,
 * the values sent in the binary protocol (no escaping, nothing for the
 * server to parse in the bodies). */
static const char batch_head[] = "INSERT INTO inbox (provider, received_at, "
				 "outcome, reason, headers, body, size) "
				 "VALUES ";
static const char batch_row[] = "(?, ?, ?, ?, ?, ?, ?)";
#define BATCH_PARAMS 7

/* The most a batch sends in one statement: the client's packet that
 * inbox_store_new asks for (2 * max_body_bytes + 65536), less a margin. */
static size_t statement_max(const struct config *cfg)
{
	return 2 * cfg->max_body_bytes + 65536 - 1024;
}

/* The most row adds to a statement's packet. */
static size_t row_max(const struct inbox_row *row)
{
	return row->len + strlen(row->headers) + 3 * VALUE_MAX + 64;
}

/* A failed statement of a batch: its error into err, the connection to
 * sqlconn. Returns -1. */
static int stmt_failed(struct inbox_store *s, MYSQL_STMT *stmt,
		       const char *what, struct error *err)
{
	unsigned code = mysql_stmt_errno(stmt);

	if (code == SQLCONN_ER_NO_SUCH_TABLE)
		error_set(err, "inbox: %s: table inbox missing (run "
			  "db/migrate-11-inbox.sql)", what);
	else
		error_set(err, "inbox: %s: mysql: %u %s", what, code,
			  mysql_stmt_error(stmt));
	sqlconn_failed(s->conn, code, false);
	return -1;
}

/* Binds text[0..len) (cut at max bytes) to b. */
static void bind_text(MYSQL_BIND *b, enum enum_field_types type,
		      const char *text, size_t len, size_t max,
		      unsigned long *length)
{
	*length = (unsigned long)(len > max ? max : len);
	b->buffer_type = type;
	b->buffer = (void *)text;
	b->buffer_length = *length;
	b->length = length;
}

/* Writes rows[0..n) as one statement, connected. Returns 0, or -1 with err
 * set (nothing written). */
static int keep_rows(struct inbox_store *s, const struct inbox_row *rows,
		     size_t n, struct error *err)
{
	size_t sql_len = sizeof(batch_head) - 1 + n * sizeof(batch_row);
	char *sql = malloc(sql_len);
	MYSQL_BIND *binds = calloc(n * BATCH_PARAMS, sizeof(*binds));
	unsigned long *lengths = calloc(n * BATCH_PARAMS, sizeof(*lengths));
	MYSQL_TIME *times = calloc(n, sizeof(*times));
	unsigned long long *sizes = calloc(n, sizeof(*sizes));
	MYSQL_STMT *stmt = NULL;
	size_t at = sizeof(batch_head) - 1;
	int rc = -1;

	if (sql == NULL || binds == NULL || lengths == NULL || times == NULL ||
	    sizes == NULL) {
		error_set(err, "inbox: out of memory for %zu deliveries", n);
		goto out;
	}
	memcpy(sql, batch_head, at);
	for (size_t i = 0; i < n; i++) {
		const struct inbox_row *row = &rows[i];
		MYSQL_BIND *b = &binds[i * BATCH_PARAMS];
		unsigned long *len = &lengths[i * BATCH_PARAMS];
		time_t secs = (time_t)(row->received_us / 1000000);
		struct tm tm;

		if (i > 0)
			sql[at++] = ',';
		memcpy(sql + at, batch_row, sizeof(batch_row) - 1);
		at += sizeof(batch_row) - 1;
		/* The session is in UTC (sqlconn.h). */
		gmtime_r(&secs, &tm);
		times[i] = (MYSQL_TIME){
			.year = (unsigned)tm.tm_year + 1900,
			.month = (unsigned)tm.tm_mon + 1,
			.day = (unsigned)tm.tm_mday,
			.hour = (unsigned)tm.tm_hour,
			.minute = (unsigned)tm.tm_min,
			.second = (unsigned)tm.tm_sec,
			.second_part = (unsigned long)(row->received_us % 1000000),
			.time_type = MYSQL_TIMESTAMP_DATETIME,
		};
		sizes[i] = row->len;
		bind_text(&b[0], MYSQL_TYPE_STRING, row->provider,
			  strlen(row->provider), VALUE_MAX, &len[0]);
		b[1].buffer_type = MYSQL_TYPE_DATETIME;
		b[1].buffer = &times[i];
		bind_text(&b[2], MYSQL_TYPE_STRING, row->outcome,
			  strlen(row->outcome), VALUE_MAX, &len[2]);
		bind_text(&b[3], MYSQL_TYPE_STRING, row->reason,
			  strlen(row->reason), VALUE_MAX, &len[3]);
		bind_text(&b[4], MYSQL_TYPE_STRING, row->headers,
			  strlen(row->headers), SIZE_MAX, &len[4]);
		bind_text(&b[5], MYSQL_TYPE_BLOB, row->body, row->len,
			  SIZE_MAX, &len[5]);
		b[6].buffer_type = MYSQL_TYPE_LONGLONG;
		b[6].buffer = &sizes[i];
		b[6].is_unsigned = 1;
	}
	stmt = mysql_stmt_init(sqlconn_mysql(s->conn));
	if (stmt == NULL) {
		error_set(err, "inbox: out of memory for a statement");
		goto out;
	}
	if (mysql_stmt_prepare(stmt, sql, (unsigned long)at) != 0 ||
	    mysql_stmt_bind_param(stmt, binds) != 0 ||
	    mysql_stmt_execute(stmt) != 0) {
		stmt_failed(s, stmt, "keeping deliveries", err);
		goto out;
	}
	rc = 0;
out:
	if (stmt != NULL)
		mysql_stmt_close(stmt);
	free(sql);
	free(binds);
	free(lengths);
	free(times);
	free(sizes);
	return rc;
}

/* Drops the oldest deliveries until their bodies add up to bytes or more
 * (or the table is empty), without adding the table up. Returns the bytes
 * it meant to drop (another worker may have dropped some of them first),
 * or -1 with err set. */
static long long drop_oldest(struct inbox_store *s, unsigned long long bytes,
			     struct error *err)
{
	char sql[SQL_MAX];
	unsigned long long dropped = 0;

	while (dropped < bytes) {
		unsigned long long cut = 0;
		MYSQL_RES *res;
		MYSQL_ROW row;

		snprintf(sql, sizeof(sql), "SELECT id, size FROM inbox ORDER "
			 "BY id LIMIT %d", TRIM_BATCH);
		res = select_rows(s, "finding the oldest", sql, err);
		if (res == NULL)
			return -1;
		while (dropped < bytes && (row = mysql_fetch_row(res)) != NULL) {
			cut = strtoull(row[0], NULL, 10);
			dropped += strtoull(row[1], NULL, 10);
		}
		mysql_free_result(res);
		if (cut == 0)
			break;
		snprintf(sql, sizeof(sql), "DELETE FROM inbox WHERE id <= %llu",
			 cut);
		if (run(s, "dropping the oldest", sql, strlen(sql), err) < 0)
			return -1;
	}
	return (long long)dropped;
}

/* inbox_max_bytes after a batch of bytes: the table is added up (a scan:
 * inbox_store_trim) at the first batch and once this store's writes since
 * pass a sixteenth of the cap; in between, when this store's count says
 * the cap is passed, the oldest deliveries adding up to the excess go
 * (a full inbox drops about what each batch adds, no scan). The other
 * workers' writes are seen at the next sum: until then the table may pass
 * the cap by up to a sixteenth of it a worker. Returns 0, or -1 with err
 * set. */
static int trim_batch(struct inbox_store *s, unsigned long long bytes,
		      struct error *err)
{
	size_t max = s->cfg->inbox_max_bytes;
	long long dropped;

	s->total += bytes;
	s->since_sum += bytes;
	if (!s->total_known || s->since_sum >= max / 16) {
		s->since_sum = 0;
		return inbox_store_trim(s, max, err) < 0 ? -1 : 0;
	}
	if (s->total <= max)
		return 0;
	dropped = drop_oldest(s, s->total - max, err);
	if (dropped < 0)
		return -1;
	s->total = (unsigned long long)dropped < s->total ?
			   s->total - (unsigned long long)dropped : 0;
	return 0;
}

int inbox_store_keep_batch(struct inbox_store *s, const struct inbox_row *rows,
			   size_t n, size_t *kept, struct error *err)
{
	size_t cap = statement_max(s->cfg);
	unsigned long long bytes = 0;

	*kept = 0;
	if (n == 0)
		return 0;
	if (sqlconn_connect(s->conn, err) != 0)
		return -1;
	while (*kept < n) {
		/* As many rows as the packet surely holds, one at least. */
		size_t from = *kept, to = from, size = 0;

		while (to < n && (to == from || size + row_max(&rows[to]) <= cap))
			size += row_max(&rows[to++]);
		if (keep_rows(s, rows + from, to - from, err) != 0)
			return -1;
		for (size_t i = from; i < to; i++)
			bytes += rows[i].len;
		*kept = to;
	}
	if (s->cfg->inbox_max_bytes == 0)
		return 0;
	return trim_batch(s, bytes, err);
}
