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
#include "schema.h"
#include "sqlconn.h"

#define VALUE_MAX 255
/* Rows looked at per statement when the inbox is trimmed. */
#define TRIM_BATCH 1000
/* A keep adds up the table's sizes again (a scan) only after this many
 * writes of its own, or when its own count says the cap is reached: the
 * other workers' writes are seen then (and by payhook-dispatch's
 * retention step). */
#define SUM_EVERY 100
#define STRINGIFY(x) #x
#define STR(x) STRINGIFY(x)

/* The statement set (sqlconn, prepared at first use: a database without
 * the table still connects, and the statement's 1146 names the
 * migration). */
enum {
	ST_CHECK, ST_SUM, ST_OLDEST, ST_DROP_RANGE, ST_EXPIRE,
	ST_NEXT, ST_REMOVE, ST_NOTE, ST_BATCH, STATEMENTS
};
static const char *const statement_sql[STATEMENTS] = {
	[ST_CHECK] = "SELECT id, provider, received_at, outcome, signature, "
		     "reason, headers, body, size FROM inbox LIMIT 0",
	[ST_SUM] = "SELECT COALESCE(SUM(size), 0) FROM inbox",
	/* One class of signature at a time (ix_inbox_signature). */
	[ST_OLDEST] = "SELECT id, size FROM inbox WHERE signature = ? AND "
		      "id > ? ORDER BY id LIMIT " STR(TRIM_BATCH),
	[ST_DROP_RANGE] = "DELETE FROM inbox WHERE signature = ? AND id > ? "
			  "AND id <= ?",
	[ST_EXPIRE] = "DELETE FROM inbox WHERE received_at < "
		      "UTC_TIMESTAMP(6) - INTERVAL ? DAY ORDER BY id LIMIT ?",
	/* A filter left NULL (or since 0) matches every row. */
	[ST_NEXT] = "SELECT id, provider, FLOOR(UNIX_TIMESTAMP(received_at)), "
		    "outcome, headers, body FROM inbox WHERE id > ? AND "
		    "(? IS NULL OR provider = ?) AND (? IS NULL OR outcome = ?) "
		    "AND (? = 0 OR received_at >= FROM_UNIXTIME(?)) "
		    "ORDER BY id LIMIT 1",
	[ST_REMOVE] = "DELETE FROM inbox WHERE id = ?",
	[ST_NOTE] = "UPDATE inbox SET reason = ?, outcome = COALESCE(?, "
		    "outcome) WHERE id = ?",
	/* ST_BATCH: inbox_store_keep_batch's INSERT of n rows, prepared
	 * for the n at hand (prepare_batch). */
	[ST_BATCH] = NULL,
};

struct inbox_store {
	const struct config *cfg;
	struct sqlconn *conn;
	/* inbox_store_next's headers and body, kept for its entry; grown
	 * to the largest row read. */
	char *headers, *body;
	size_t headers_cap, body_cap;
	/* The table's bytes as last added up, plus this store's writes
	 * since (writes of them); known false: add up at the next keep. */
	bool total_known;
	unsigned long long total;
	unsigned writes;
	unsigned long long since_sum; /* a batch's bytes since the last sum */
	size_t batch_rows; /* the rows ST_BATCH is prepared for */
};

struct inbox_store *inbox_store_new(const struct config *cfg,
				    struct error *err)
{
	struct inbox_store *s = calloc(1, sizeof(*s));
	struct sqlconn_options options = {
		/* The body and the headers; the rest of a statement is
		 * small. */
		.max_packet = 2 * (unsigned long)cfg->max_body_bytes + 65536,
		.autocommit = true,
		.read_committed = true,
		.statements = statement_sql,
		.statement_count = STATEMENTS,
		.prepare_on_use = true,
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
	sqlconn_free(s->conn);
	free(s->headers);
	free(s->body);
	free(s);
}

/* Statement which failed with code: its error into err, the connection to
 * sqlconn's classifier. Returns -1. */
static int failed(struct inbox_store *s, size_t which, unsigned code,
		  const char *what, struct error *err)
{
	if (code == SQLCONN_ER_NO_SUCH_TABLE)
		error_set(err, "inbox: %s: table inbox missing (run "
			  SCHEMA_MIGRATE_INBOX ")", what);
	else if (code == SQLCONN_ER_BAD_FIELD)
		error_set(err, "inbox: %s: table inbox lacks its signature "
			  "column (run " SCHEMA_MIGRATE_INBOX_SIGNATURE ")",
			  what);
	else
		error_set(err, "inbox: %s: mysql: %u %s", what, code,
			  sqlconn_message(s->conn, which));
	sqlconn_fail(s->conn, code, false);
	return -1;
}

/* Runs statement which (connected first) with params and results (either
 * NULL). Returns 0, or -1 with err set. */
static int run(struct inbox_store *s, size_t which, const char *what,
	       MYSQL_BIND *params, MYSQL_BIND *results, struct error *err)
{
	unsigned code;

	if (sqlconn_connect(s->conn, err) != 0)
		return -1;
	code = sqlconn_run(s->conn, which, params, results);
	return code != 0 ? failed(s, which, code, what, err) : 0;
}

/* Runs statement which that changes rows. Returns how many, or -1 with err
 * set. */
static long long run_change(struct inbox_store *s, size_t which,
			    const char *what, MYSQL_BIND *params,
			    struct error *err)
{
	if (run(s, which, what, params, NULL, err) != 0)
		return -1;
	return (long long)sqlconn_affected(s->conn, which);
}

/* Binds text[0..*len) (at most cap bytes), or NULL for SQL NULL. */
static void bind_text(MYSQL_BIND *b, const char *text, size_t cap,
		      unsigned long *len, my_bool *is_null)
{
	size_t n = text != NULL ? strlen(text) : 0;

	*is_null = text == NULL;
	*len = (unsigned long)(n > cap ? cap : n);
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = (void *)(text != NULL ? text : "");
	b->buffer_length = *len;
	b->length = len;
	b->is_null = is_null;
}

static void bind_u64(MYSQL_BIND *b, unsigned long long *value)
{
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = value;
	b->is_unsigned = 1;
}

static void bind_i64(MYSQL_BIND *b, long long *value)
{
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = value;
}

int inbox_store_check(struct inbox_store *s, struct error *err)
{
	if (run(s, ST_CHECK, "checking the table", NULL, NULL, err) != 0)
		return -1;
	sqlconn_done(s->conn, ST_CHECK);
	return 0;
}


/* The order in which a full inbox lets deliveries go: the unsigned
 * first, then those whose signature failed, the signed last (anyone can
 * post the first two; a flood of them must not push out what passed). */
static const char *const drop_order[] = { "missing", "failed", "verified" };

/* Drops the oldest deliveries of the class signature until their bodies
 * add up to bytes or more (or none is left), without adding the table up;
 * *dropped_bytes: what they held (another worker may have dropped some of
 * them first). Returns the rows it dropped, or -1 with err set. */
static long long drop_oldest_of(struct inbox_store *s, const char *signature,
				unsigned long long bytes,
				unsigned long long *dropped_bytes,
				struct error *err)
{
	unsigned long long last = 0, id = 0, size = 0;
	MYSQL_BIND param[3], out[2];
	unsigned long signature_len;
	my_bool no = 0;
	long long rows = 0;

	*dropped_bytes = 0;
	while (*dropped_bytes < bytes) {
		unsigned long long cut = 0;
		unsigned code = 0;
		long long n;
		int rc = 0;

		memset(param, 0, sizeof(param));
		memset(out, 0, sizeof(out));
		bind_text(&param[0], signature, VALUE_MAX, &signature_len, &no);
		bind_u64(&param[1], &last);
		bind_u64(&out[0], &id);
		bind_u64(&out[1], &size);
		if (run(s, ST_OLDEST, "finding the oldest", param, out,
			err) != 0)
			return -1;
		while (*dropped_bytes < bytes &&
		       (rc = sqlconn_fetch(s->conn, ST_OLDEST, &code)) == 1) {
			cut = id;
			*dropped_bytes += size;
		}
		sqlconn_done(s->conn, ST_OLDEST);
		if (rc < 0)
			return failed(s, ST_OLDEST, code, "finding the oldest",
				      err);
		if (cut == 0)
			break;
		bind_u64(&param[1], &last);
		bind_u64(&param[2], &cut);
		n = run_change(s, ST_DROP_RANGE, "dropping the oldest", param,
			       err);
		if (n < 0)
			return -1;
		rows += n;
		last = cut;
	}
	return rows;
}

/* Drops deliveries in drop_order, each class oldest first, until their
 * bodies add up to bytes or more (or the table is empty); *dropped_bytes:
 * what they held. Returns the rows it dropped, or -1 with err set. */
static long long drop_oldest(struct inbox_store *s, unsigned long long bytes,
			     unsigned long long *dropped_bytes,
			     struct error *err)
{
	long long rows = 0;

	*dropped_bytes = 0;
	for (size_t i = 0; i < sizeof(drop_order) / sizeof(drop_order[0]) &&
			   *dropped_bytes < bytes; i++) {
		unsigned long long dropped = 0;
		long long n = drop_oldest_of(s, drop_order[i],
					     bytes - *dropped_bytes, &dropped,
					     err);

		if (n < 0)
			return -1;
		rows += n;
		*dropped_bytes += dropped;
	}
	return rows;
}

long inbox_store_trim(struct inbox_store *s, size_t max_bytes,
		      struct error *err)
{
	unsigned long long total = 0, dropped_bytes = 0;
	long long dropped = 0;
	MYSQL_BIND out[1];
	unsigned code = 0;
	int rc;

	s->total_known = false;
	memset(out, 0, sizeof(out));
	bind_u64(&out[0], &total);
	if (run(s, ST_SUM, "adding up its size", NULL, out, err) != 0)
		return -1;
	rc = sqlconn_fetch(s->conn, ST_SUM, &code);
	sqlconn_done(s->conn, ST_SUM);
	if (rc < 0)
		return failed(s, ST_SUM, code, "adding up its size", err);
	if (total > max_bytes) {
		/* The oldest rows, until what is left fits. */
		dropped = drop_oldest(s, total - max_bytes, &dropped_bytes, err);
		if (dropped < 0)
			return -1;
		total = dropped_bytes < total ? total - dropped_bytes : 0;
	}
	s->total = total;
	s->total_known = true;
	s->writes = 0;
	return (long)dropped;
}

long inbox_store_expire(struct inbox_store *s, long days, long limit,
			struct error *err)
{
	MYSQL_BIND param[2];
	long long d = days, n = limit;

	memset(param, 0, sizeof(param));
	bind_i64(&param[0], &d);
	bind_i64(&param[1], &n);
	return (long)run_change(s, ST_EXPIRE, "dropping the old", param, err);
}

/* Makes *buf hold at least need + 1 bytes. Returns 0, or -1 (out of
 * memory). */
static int grow(char **buf, size_t *cap, size_t need)
{
	char *p;

	if (need < *cap)
		return 0;
	p = realloc(*buf, need + 1);
	if (p == NULL)
		return -1;
	*buf = p;
	*cap = need + 1;
	return 0;
}

int inbox_store_next(struct inbox_store *s, const struct inbox_filter *f,
		     unsigned long long *after, struct inbox_entry *e,
		     struct error *err)
{
	MYSQL_BIND param[7], out[6];
	unsigned long plen[2], len[6] = { 0 };
	my_bool pnull[2];
	long long since = f->since_s, received = 0;
	unsigned long long id = 0;
	unsigned code = 0;
	int rc;

	if (grow(&s->headers, &s->headers_cap, 1024) != 0 ||
	    grow(&s->body, &s->body_cap, 4096) != 0)
		return error_set(err, "inbox: out of memory");
	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	bind_u64(&param[0], after);
	bind_text(&param[1], f->provider, VALUE_MAX, &plen[0], &pnull[0]);
	param[2] = param[1];
	bind_text(&param[3], f->outcome, VALUE_MAX, &plen[1], &pnull[1]);
	param[4] = param[3];
	bind_i64(&param[5], &since);
	param[6] = param[5];
	bind_u64(&out[0], &id);
	out[1].buffer_type = MYSQL_TYPE_STRING;
	out[1].buffer = e->provider;
	out[1].buffer_length = sizeof(e->provider);
	out[1].length = &len[1];
	bind_i64(&out[2], &received);
	out[3].buffer_type = MYSQL_TYPE_STRING;
	out[3].buffer = e->outcome;
	out[3].buffer_length = sizeof(e->outcome);
	out[3].length = &len[3];
	out[4].buffer_type = MYSQL_TYPE_BLOB;
	out[4].buffer = s->headers;
	out[4].buffer_length = s->headers_cap - 1;
	out[4].length = &len[4];
	out[5].buffer_type = MYSQL_TYPE_BLOB;
	out[5].buffer = s->body;
	out[5].buffer_length = s->body_cap - 1;
	out[5].length = &len[5];
	if (run(s, ST_NEXT, "reading the next delivery", param, out, err) != 0)
		return -1;
	rc = sqlconn_fetch(s->conn, ST_NEXT, &code);
	/* A longer headers object or body than the buffers: read again
	 * whole into grown ones. */
	for (unsigned col = 4; rc == 1 && col <= 5; col++) {
		char **buf = col == 4 ? &s->headers : &s->body;
		size_t *cap = col == 4 ? &s->headers_cap : &s->body_cap;

		if (len[col] < *cap)
			continue;
		if (grow(buf, cap, len[col]) != 0) {
			sqlconn_done(s->conn, ST_NEXT);
			return error_set(err, "inbox: out of memory for a "
					 "%lu-byte row", len[col]);
		}
		out[col].buffer = *buf;
		out[col].buffer_length = *cap - 1;
		code = sqlconn_fetch_column(s->conn, ST_NEXT, &out[col], col);
		if (code != 0)
			rc = -1;
	}
	sqlconn_done(s->conn, ST_NEXT);
	if (rc < 0)
		return failed(s, ST_NEXT, code, "reading the next delivery",
			      err);
	if (rc == 0)
		return 0;
	e->id = id;
	e->provider[len[1] < sizeof(e->provider) ? len[1] :
						    sizeof(e->provider) - 1] = '\0';
	e->received_s = received;
	e->outcome[len[3] < sizeof(e->outcome) ? len[3] :
						  sizeof(e->outcome) - 1] = '\0';
	s->headers[len[4]] = '\0';
	s->body[len[5]] = '\0';
	e->headers = s->headers;
	e->body = s->body;
	e->len = len[5];
	*after = e->id;
	return 1;
}

int inbox_store_remove(struct inbox_store *s, unsigned long long id,
		       struct error *err)
{
	MYSQL_BIND param[1];

	memset(param, 0, sizeof(param));
	bind_u64(&param[0], &id);
	return run_change(s, ST_REMOVE, "removing a replayed delivery", param,
			  err) < 0 ? -1 : 0;
}

int inbox_store_note(struct inbox_store *s, unsigned long long id,
		     const char *outcome, const char *reason, struct error *err)
{
	MYSQL_BIND param[3];
	unsigned long lens[2];
	my_bool nulls[2];

	memset(param, 0, sizeof(param));
	bind_text(&param[0], reason, VALUE_MAX, &lens[0], &nulls[0]);
	bind_text(&param[1], outcome, VALUE_MAX, &lens[1], &nulls[1]);
	bind_u64(&param[2], &id);
	return run_change(s, ST_NOTE, "noting a replay", param, err) < 0 ?
		       -1 : 0;
}

/* ---- a batch of deliveries in one statement ---- */

/* A statement of a batch: the columns, then "(?, ?, ...)" a row,
 * the values sent in the binary protocol (no escaping, nothing for the
 * server to parse in the bodies). */
static const char batch_head[] = "INSERT INTO inbox (provider, received_at, "
				 "outcome, signature, reason, headers, body, "
				 "size) VALUES ";
static const char batch_row[] = "(?, ?, ?, ?, ?, ?, ?, ?)";
#define BATCH_PARAMS 8

/* The most a batch sends in one statement: the client's packet that
 * inbox_store_new asks for (2 * max_body_bytes + 65536), less a margin. */
static size_t statement_max(const struct config *cfg)
{
	return 2 * cfg->max_body_bytes + 65536 - 1024;
}

/* The signature column's value of row. */
static const char *signature_name(const struct inbox_row *row)
{
	switch (row->signature) {
	case INBOX_SIGNATURE_VERIFIED:
		return "verified";
	case INBOX_SIGNATURE_FAILED:
		return "failed";
	case INBOX_SIGNATURE_MISSING:
		return "missing";
	case INBOX_SIGNATURE_BY_OUTCOME:
	default:
		return strcmp(row->outcome, "ignored") == 0 ? "verified"
							     : "failed";
	}
}

/* The most row adds to a statement's packet. */
static size_t row_max(const struct inbox_row *row)
{
	return row->len + strlen(row->headers) + 3 * VALUE_MAX + 64;
}

/* Binds text[0..len) (cut at max bytes) to b as type. */
static void bind_bytes(MYSQL_BIND *b, enum enum_field_types type,
		       const char *text, size_t len, size_t max,
		       unsigned long *length)
{
	*length = (unsigned long)(len > max ? max : len);
	b->buffer_type = type;
	b->buffer = (void *)text;
	b->buffer_length = *length;
	b->length = length;
}

/* Prepares ST_BATCH for n rows, unless it holds that statement already (a
 * reconnect closes it). Returns 0, or -1 with err set. */
static int prepare_batch(struct inbox_store *s, size_t n, struct error *err)
{
	size_t at = sizeof(batch_head) - 1;
	char *sql;
	struct error why;
	unsigned code;
	int rc;

	if (s->batch_rows == n && sqlconn_prepared(s->conn, ST_BATCH))
		return 0;
	sql = malloc(at + n * sizeof(batch_row) + 1);
	if (sql == NULL)
		return error_set(err, "inbox: out of memory for %zu deliveries",
				 n);
	memcpy(sql, batch_head, at);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			sql[at++] = ',';
		memcpy(sql + at, batch_row, sizeof(batch_row) - 1);
		at += sizeof(batch_row) - 1;
	}
	sql[at] = '\0';
	s->batch_rows = 0;
	rc = sqlconn_prepare_as(s->conn, ST_BATCH, sql, &why);
	free(sql);
	if (rc == 0) {
		s->batch_rows = n;
		return 0;
	}
	code = sqlconn_stmt_errno(s->conn, ST_BATCH);
	if (code != 0)
		return failed(s, ST_BATCH, code, "keeping deliveries", err);
	/* No server error: the statement could not even be sent. */
	error_set(err, "inbox: keeping deliveries: %s", why.message);
	sqlconn_disconnect(s->conn);
	return -1;
}

/* Writes rows[0..n) as one statement, connected. Returns 0, or -1 with err
 * set (nothing written). */
static int keep_rows(struct inbox_store *s, const struct inbox_row *rows,
		     size_t n, struct error *err)
{
	MYSQL_BIND *binds = calloc(n * BATCH_PARAMS, sizeof(*binds));
	unsigned long *lengths = calloc(n * BATCH_PARAMS, sizeof(*lengths));
	MYSQL_TIME *times = calloc(n, sizeof(*times));
	unsigned long long *sizes = calloc(n, sizeof(*sizes));
	unsigned code;
	int rc = -1;

	if (binds == NULL || lengths == NULL || times == NULL ||
	    sizes == NULL) {
		error_set(err, "inbox: out of memory for %zu deliveries", n);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct inbox_row *row = &rows[i];
		MYSQL_BIND *b = &binds[i * BATCH_PARAMS];
		unsigned long *len = &lengths[i * BATCH_PARAMS];
		time_t secs = (time_t)(row->received_us / 1000000);
		struct tm tm;

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
		bind_bytes(&b[0], MYSQL_TYPE_STRING, row->provider,
			   strlen(row->provider), VALUE_MAX, &len[0]);
		b[1].buffer_type = MYSQL_TYPE_DATETIME;
		b[1].buffer = &times[i];
		bind_bytes(&b[2], MYSQL_TYPE_STRING, row->outcome,
			   strlen(row->outcome), VALUE_MAX, &len[2]);
		bind_bytes(&b[3], MYSQL_TYPE_STRING, signature_name(row),
			   strlen(signature_name(row)), VALUE_MAX, &len[3]);
		bind_bytes(&b[4], MYSQL_TYPE_STRING, row->reason,
			   strlen(row->reason), VALUE_MAX, &len[4]);
		bind_bytes(&b[5], MYSQL_TYPE_STRING, row->headers,
			   strlen(row->headers), SIZE_MAX, &len[5]);
		bind_bytes(&b[6], MYSQL_TYPE_BLOB, row->body, row->len,
			   SIZE_MAX, &len[6]);
		bind_u64(&b[7], &sizes[i]);
	}
	if (prepare_batch(s, n, err) != 0)
		goto out;
	code = sqlconn_run(s->conn, ST_BATCH, binds, NULL);
	if (code != 0) {
		failed(s, ST_BATCH, code, "keeping deliveries", err);
		goto out;
	}
	rc = 0;
out:
	free(binds);
	free(lengths);
	free(times);
	free(sizes);
	return rc;
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
	unsigned long long dropped;

	s->total += bytes;
	s->since_sum += bytes;
	if (!s->total_known || s->since_sum >= max / 16) {
		s->since_sum = 0;
		return inbox_store_trim(s, max, err) < 0 ? -1 : 0;
	}
	if (s->total <= max)
		return 0;
	if (drop_oldest(s, s->total - max, &dropped, err) < 0)
		return -1;
	s->total = dropped < s->total ? s->total - dropped : 0;
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
