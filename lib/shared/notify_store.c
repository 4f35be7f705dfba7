/* notify_store.c - the notifications table over the one MySQL core (see
 * notify_store.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "notify_store.h"
#include "schema.h"
#include "sqlconn.h"

/* A queue that deadlocks with another worker's (two notices of one
 * object, InnoDB's gap locks) is tried again at once this many times in
 * all before the request gets 503. */
#define QUEUE_TRIES 3

/* The statement set (sqlconn, prepared at first use: a database without
 * the table still connects, and the statement's 1146 names the
 * migration). */
enum {
	ST_CHECK, ST_QUEUE, ST_NOTICE, ST_PENDING, ST_DUE, ST_CLAIM, ST_CLAIMED,
	ST_RENEW, ST_END, ST_AGAIN, ST_RETRY, ST_PRUNE, STATEMENTS
};
static const char *const statement_sql[STATEMENTS] = {
	[ST_CHECK] = "SELECT id, provider, object_id, event_id, source, state, "
		     "received_at, notices, attempts, next_attempt_at, "
		     "last_error, lease_token, leased_until, pending_object "
		     "FROM notifications LIMIT 0",
	/* One more notice on the object's pending row when it has one
	 * (uq_notifications_pending); its event id the latest heard. */
	[ST_QUEUE] = "INSERT INTO notifications (provider, object_id, "
		     "event_id, source, received_at, next_attempt_at) VALUES "
		     "(?, ?, NULLIF(?, ''), ?, UTC_TIMESTAMP(6), "
		     "UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE notices = "
		     "notices + 1, event_id = COALESCE(VALUES(event_id), "
		     "event_id)",
	/* One more notice on the object's pending row, only if it has one
	 * (the queue full: an equal one pending takes it, nothing new). */
	[ST_NOTICE] = "UPDATE notifications SET notices = notices + 1, "
		      "event_id = COALESCE(NULLIF(?, ''), event_id) WHERE "
		      "provider = ? AND pending_object = ?",
	[ST_PENDING] = "SELECT COUNT(*) FROM notifications WHERE state = "
		       "'pending'",
	/* ix_notifications_due; a NULL provider is every provider. */
	[ST_DUE] = "SELECT id, provider, object_id, IFNULL(event_id, ''), "
		   "source, notices, attempts, "
		   "FLOOR(UNIX_TIMESTAMP(received_at) * 1000000) "
		   "FROM notifications WHERE state = 'pending' AND "
		   "next_attempt_at <= UTC_TIMESTAMP(6) AND (leased_until IS "
		   "NULL OR leased_until <= UTC_TIMESTAMP(6)) AND (? IS NULL "
		   "OR provider = ?) ORDER BY next_attempt_at, id LIMIT ?",
	[ST_CLAIM] = "UPDATE notifications SET lease_token = ?, leased_until = "
		     "UTC_TIMESTAMP(6) + INTERVAL ? SECOND, attempts = "
		     "attempts + 1 WHERE id = ? AND state = 'pending' AND "
		     "next_attempt_at <= UTC_TIMESTAMP(6) AND (leased_until IS "
		     "NULL OR leased_until <= UTC_TIMESTAMP(6))",
	[ST_CLAIMED] = "SELECT notices, attempts FROM notifications WHERE "
		       "id = ? AND lease_token = ?",
	[ST_RENEW] = "UPDATE notifications SET leased_until = UTC_TIMESTAMP(6) "
		     "+ INTERVAL ? SECOND WHERE id = ? AND lease_token = ? AND "
		     "state = 'pending'",
	/* Only when no notice came since the claim. */
	[ST_END] = "UPDATE notifications SET state = ?, last_error = ?, "
		   "lease_token = NULL, leased_until = NULL WHERE id = ? AND "
		   "lease_token = ? AND notices = ?",
	[ST_AGAIN] = "UPDATE notifications SET lease_token = NULL, "
		     "leased_until = NULL, next_attempt_at = UTC_TIMESTAMP(6), "
		     "last_error = ? WHERE id = ? AND lease_token = ?",
	[ST_RETRY] = "UPDATE notifications SET lease_token = NULL, "
		     "leased_until = NULL, next_attempt_at = UTC_TIMESTAMP(6) + "
		     "INTERVAL ? MICROSECOND, last_error = ? WHERE id = ? AND "
		     "lease_token = ?",
	[ST_PRUNE] = "DELETE FROM notifications WHERE state <> 'pending' AND "
		     "updated_at < UTC_TIMESTAMP(6) - INTERVAL ? DAY ORDER BY "
		     "id LIMIT ?",
};

struct notify_store {
	struct sqlconn *conn;
};

struct notify_store *notify_store_new(const struct config *cfg,
				      struct error *err)
{
	struct notify_store *s = calloc(1, sizeof(*s));
	struct sqlconn_options options = {
		.max_packet = 65536,
		.autocommit = true,
		.read_committed = true,
		.found_rows = true,
		.statements = statement_sql,
		.statement_count = STATEMENTS,
		.prepare_on_use = true,
	};

	if (s == NULL) {
		error_set(err, "notifications: out of memory");
		return NULL;
	}
	s->conn = sqlconn_new(cfg, &options, err);
	if (s->conn == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

void notify_store_free(struct notify_store *s)
{
	if (s == NULL)
		return;
	sqlconn_free(s->conn);
	free(s);
}

/* Statement which (SQLCONN_SESSION: a COMMIT) failed with code: its error
 * into err, the connection to sqlconn's classifier (committing: the
 * statement commits by itself). Returns the notify_store_failure. */
static int failed(struct notify_store *s, size_t which, unsigned code,
		  bool committing, const char *what, struct error *err)
{
	if (code == SQLCONN_ER_NO_SUCH_TABLE || code == SQLCONN_ER_BAD_FIELD) {
		error_set(err, "notifications: %s: table notifications "
			  "missing or old (run " SCHEMA_MIGRATE_NOTIFICATIONS
			  ")", what);
		sqlconn_fail(s->conn, code, committing);
		return NOTIFY_STORE_NO_TABLE;
	}
	error_set(err, "notifications: %s: mysql: %u %s", what, code,
		  sqlconn_message(s->conn, which));
	sqlconn_fail(s->conn, code, committing);
	return NOTIFY_STORE_FAILED;
}

/* Runs statement which (connected first) with params and results (either
 * NULL). Returns 0, or a notify_store_failure with err set. */
static int run(struct notify_store *s, size_t which, const char *what,
	       MYSQL_BIND *params, MYSQL_BIND *results, struct error *err)
{
	unsigned code;

	if (sqlconn_connect(s->conn, err) != 0)
		return NOTIFY_STORE_FAILED;
	code = sqlconn_run(s->conn, which, params, results);
	if (code != 0)
		return failed(s, which, code, !sqlconn_in_transaction(s->conn),
			      what, err);
	return 0;
}

/* Runs statement which that changes rows: how many it matched, or a
 * notify_store_failure with err set. */
static long long run_change(struct notify_store *s, size_t which,
			    const char *what, MYSQL_BIND *params,
			    struct error *err)
{
	int rc = run(s, which, what, params, NULL, err);

	return rc != 0 ? rc : (long long)sqlconn_affected(s->conn, which);
}

/* Binds text (NULL: SQL NULL) of len bytes. */
static void bind_text(MYSQL_BIND *b, const char *text, unsigned long *len,
		      my_bool *is_null)
{
	*is_null = text == NULL;
	*len = text != NULL ? (unsigned long)strlen(text) : 0;
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = (void *)(text != NULL ? text : "");
	b->buffer_length = *len;
	b->length = len;
	b->is_null = is_null;
}

static void bind_token(MYSQL_BIND *b, const unsigned char *token,
		       unsigned long *len)
{
	*len = NOTIFY_STORE_TOKEN_LEN;
	b->buffer_type = MYSQL_TYPE_BLOB;
	b->buffer = (void *)token;
	b->buffer_length = *len;
	b->length = len;
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

int notify_store_check(struct notify_store *s, struct error *err)
{
	if (run(s, ST_CHECK, "checking the table", NULL, NULL, err) != 0)
		return -1;
	sqlconn_done(s->conn, ST_CHECK);
	return 0;
}

/* Binds notice's parameters for statement which: ST_QUEUE's (provider,
 * object, event, source) or ST_NOTICE's (event, provider, object). */
static void bind_notice(size_t which, MYSQL_BIND *p, unsigned long *len,
			my_bool *null, const char *provider, const char *source,
			const struct notify_notice *notice)
{
	const char *event = notice->event_id != NULL ? notice->event_id : "";

	memset(p, 0, 4 * sizeof(*p));
	if (which == ST_NOTICE) {
		bind_text(&p[0], event, &len[0], &null[0]);
		bind_text(&p[1], provider, &len[1], &null[1]);
		bind_text(&p[2], notice->object_id, &len[2], &null[2]);
		return;
	}
	bind_text(&p[0], provider, &len[0], &null[0]);
	bind_text(&p[1], notice->object_id, &len[1], &null[1]);
	bind_text(&p[2], event, &len[2], &null[2]);
	bind_text(&p[3], source, &len[3], &null[3]);
}

/* One try of statement which (ST_QUEUE or ST_NOTICE) for every notice,
 * then the commit. Returns 1 once committed, 0 when an ST_NOTICE found no
 * pending row of its object (nothing changed), or a notify_store_failure
 * with err set. */
static int apply_once(struct notify_store *s, size_t which,
		      const char *provider, const char *source,
		      const struct notify_notice *notices, size_t n,
		      struct error *err)
{
	const char *what = which == ST_NOTICE ? "noting a notice" :
						"queueing a notification";
	unsigned code;

	if (sqlconn_connect(s->conn, err) != 0)
		return NOTIFY_STORE_FAILED;
	/* One notice commits by itself; several, all or none. */
	if (n > 1 && (code = sqlconn_begin(s->conn)) != 0)
		return failed(s, SQLCONN_SESSION, code, false, "begin", err);
	for (size_t i = 0; i < n; i++) {
		MYSQL_BIND p[4];
		unsigned long len[4];
		my_bool null[4];
		long long changed;

		bind_notice(which, p, len, null, provider, source, &notices[i]);
		changed = run_change(s, which, what, p, err);
		if (changed < 0)
			return (int)changed;
		if (changed == 0 && which == ST_NOTICE) {
			/* Not pending: the notices before it are undone. */
			sqlconn_rollback(s->conn);
			return 0;
		}
	}
	if (n > 1 && (code = sqlconn_commit(s->conn)) != 0)
		return failed(s, SQLCONN_SESSION, code, true, "commit", err);
	return 1;
}

/* apply_once, tried again at once after a deadlock or a lock wait (two
 * workers' notices of the same objects, InnoDB's gap locks), QUEUE_TRIES
 * times in all. */
static int apply(struct notify_store *s, size_t which, const char *provider,
		 const char *source, const struct notify_notice *notices,
		 size_t n, struct error *err)
{
	int rc = 1;

	for (int tries = 1; n > 0 && tries <= QUEUE_TRIES; tries++) {
		rc = apply_once(s, which, provider, source, notices, n, err);
		/* Rolled back, the connection kept: at once again; anything
		 * else is the answer's. */
		if (rc >= 0 ||
		    sqlconn_last_error(s->conn) != SQLCONN_ER_LOCK_DEADLOCK)
			break;
	}
	return rc;
}

int notify_store_queue(struct notify_store *s, const char *provider,
		       const char *source, const struct notify_notice *notices,
		       size_t n, struct error *err)
{
	int rc = apply(s, ST_QUEUE, provider, source, notices, n, err);

	return rc < 0 ? rc : 0;
}

int notify_store_notice(struct notify_store *s, const char *provider,
			const struct notify_notice *notices, size_t n,
			struct error *err)
{
	return apply(s, ST_NOTICE, provider, NULL, notices, n, err);
}

long long notify_store_pending(struct notify_store *s, struct error *err)
{
	long long count = 0;
	MYSQL_BIND r[1];
	unsigned code;
	int rc;

	memset(r, 0, sizeof(r));
	bind_i64(&r[0], &count);
	rc = run(s, ST_PENDING, "counting the pending", NULL, r, err);
	if (rc != 0)
		return rc;
	if (sqlconn_fetch(s->conn, ST_PENDING, &code) < 0) {
		sqlconn_done(s->conn, ST_PENDING);
		return failed(s, ST_PENDING, code, false, "counting", err);
	}
	sqlconn_done(s->conn, ST_PENDING);
	return count;
}

int notify_store_due(struct notify_store *s, const char *provider,
		     struct notify_item *items, size_t cap, size_t *n,
		     struct error *err)
{
	MYSQL_BIND p[3], r[8];
	unsigned long plen[2], rlen[8];
	my_bool pnull[2], rnull[8];
	long long limit = (long long)cap, received = 0;
	unsigned long long id = 0, notices = 0, attempts = 0;
	struct notify_item row;
	unsigned code;
	int rc, got;

	*n = 0;
	memset(p, 0, sizeof(p));
	memset(r, 0, sizeof(r));
	memset(&row, 0, sizeof(row));
	bind_text(&p[0], provider, &plen[0], &pnull[0]);
	bind_text(&p[1], provider, &plen[1], &pnull[1]);
	bind_i64(&p[2], &limit);
	bind_u64(&r[0], &id);
	r[1].buffer_type = MYSQL_TYPE_STRING;
	r[1].buffer = row.provider;
	r[1].buffer_length = sizeof(row.provider);
	r[2].buffer_type = MYSQL_TYPE_STRING;
	r[2].buffer = row.object_id;
	r[2].buffer_length = sizeof(row.object_id);
	r[3].buffer_type = MYSQL_TYPE_STRING;
	r[3].buffer = row.event_id;
	r[3].buffer_length = sizeof(row.event_id);
	r[4].buffer_type = MYSQL_TYPE_STRING;
	r[4].buffer = row.source;
	r[4].buffer_length = sizeof(row.source);
	bind_u64(&r[5], &notices);
	bind_u64(&r[6], &attempts);
	bind_i64(&r[7], &received);
	for (size_t i = 0; i < 8; i++) {
		r[i].length = &rlen[i];
		r[i].is_null = &rnull[i];
	}
	rc = run(s, ST_DUE, "reading the due", p, r, err);
	if (rc != 0)
		return rc;
	while (*n < cap && (got = sqlconn_fetch(s->conn, ST_DUE, &code)) != 0) {
		if (got < 0) {
			sqlconn_done(s->conn, ST_DUE);
			return failed(s, ST_DUE, code, false, "reading", err);
		}
		/* The columns' lengths (no terminator is written). */
		if (rlen[1] >= sizeof(row.provider) ||
		    rlen[2] >= sizeof(row.object_id) ||
		    rlen[3] >= sizeof(row.event_id) ||
		    rlen[4] >= sizeof(row.source))
			continue;
		row.provider[rlen[1]] = '\0';
		row.object_id[rlen[2]] = '\0';
		row.event_id[rlen[3]] = '\0';
		row.source[rlen[4]] = '\0';
		row.id = id;
		row.notices = (unsigned long)notices;
		row.attempts = (unsigned long)attempts;
		row.received_us = received;
		items[(*n)++] = row;
	}
	sqlconn_done(s->conn, ST_DUE);
	return 0;
}

/* A new lease token from the OS. Returns 0, or -1 with err set. */
static int new_token(unsigned char *token, struct error *err)
{
	size_t got = 0;

	while (got < NOTIFY_STORE_TOKEN_LEN) {
		ssize_t n = getrandom(token + got, NOTIFY_STORE_TOKEN_LEN - got,
				      0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return error_set(err, "notifications: getrandom: %s",
					 strerror(errno));
		got += (size_t)n;
	}
	return 0;
}

int notify_store_claim(struct notify_store *s, struct notify_item *item,
		       long lease_s, struct error *err)
{
	unsigned char token[NOTIFY_STORE_TOKEN_LEN];
	long long lease = lease_s, changed;
	unsigned long long id = item->id, notices = 0, attempts = 0;
	MYSQL_BIND p[3], r[2];
	unsigned long tlen;
	unsigned code;
	int rc, got;

	if (new_token(token, err) != 0)
		return NOTIFY_STORE_FAILED;
	memset(p, 0, sizeof(p));
	bind_token(&p[0], token, &tlen);
	bind_i64(&p[1], &lease);
	bind_u64(&p[2], &id);
	changed = run_change(s, ST_CLAIM, "claiming", p, err);
	if (changed <= 0)
		return (int)changed;
	memcpy(item->token, token, sizeof(token));
	memset(p, 0, sizeof(p));
	memset(r, 0, sizeof(r));
	bind_u64(&p[0], &id);
	bind_token(&p[1], token, &tlen);
	bind_u64(&r[0], &notices);
	bind_u64(&r[1], &attempts);
	rc = run(s, ST_CLAIMED, "reading a claim", p, r, err);
	if (rc != 0)
		return rc;
	got = sqlconn_fetch(s->conn, ST_CLAIMED, &code);
	sqlconn_done(s->conn, ST_CLAIMED);
	if (got < 0)
		return failed(s, ST_CLAIMED, code, false, "reading", err);
	if (got == 0)
		return 0; /* gone between the two: another's now */
	item->notices = (unsigned long)notices;
	item->attempts = (unsigned long)attempts;
	return 1;
}

int notify_store_renew(struct notify_store *s, const struct notify_item *item,
		       long lease_s, struct error *err)
{
	long long lease = lease_s, changed;
	unsigned long long id = item->id;
	MYSQL_BIND p[3];
	unsigned long tlen;

	memset(p, 0, sizeof(p));
	bind_i64(&p[0], &lease);
	bind_u64(&p[1], &id);
	bind_token(&p[2], item->token, &tlen);
	changed = run_change(s, ST_RENEW, "renewing a lease", p, err);
	return changed < 0 ? (int)changed : changed > 0;
}

/* ST_AGAIN or ST_RETRY: the lease given back, due delay_us from now (0:
 * at once). Returns 1, 0 when the lease was lost, or a failure. */
static int give_back(struct notify_store *s, const struct notify_item *item,
		     long long delay_us, const char *note, struct error *err)
{
	unsigned long long id = item->id;
	MYSQL_BIND p[4];
	unsigned long len[2];
	my_bool null;
	long long changed;
	size_t i = 0;

	memset(p, 0, sizeof(p));
	if (delay_us > 0)
		bind_i64(&p[i++], &delay_us);
	bind_text(&p[i++], note, &len[0], &null);
	bind_u64(&p[i++], &id);
	bind_token(&p[i++], item->token, &len[1]);
	changed = run_change(s, delay_us > 0 ? ST_RETRY : ST_AGAIN,
			     "giving a notification back", p, err);
	return changed < 0 ? (int)changed : changed > 0;
}

int notify_store_finish(struct notify_store *s, const struct notify_item *item,
			enum notify_store_end end, const char *note,
			struct error *err)
{
	const char *state = end == NOTIFY_STORE_REJECTED ? "rejected" : "done";
	unsigned long long id = item->id, notices = item->notices;
	MYSQL_BIND p[5];
	unsigned long len[3];
	my_bool null[2];
	long long changed;
	int rc;

	memset(p, 0, sizeof(p));
	bind_text(&p[0], state, &len[0], &null[0]);
	bind_text(&p[1], note, &len[1], &null[1]);
	bind_u64(&p[2], &id);
	bind_token(&p[3], item->token, &len[2]);
	bind_u64(&p[4], &notices);
	changed = run_change(s, ST_END, "ending a fetch", p, err);
	if (changed < 0)
		return (int)changed;
	if (changed > 0)
		return NOTIFY_STORE_ENDED;
	/* Notified again meanwhile (or the lease lost): pending, due now. */
	rc = give_back(s, item, 0, "notified again during the fetch", err);
	if (rc < 0)
		return rc;
	return rc == 1 ? NOTIFY_STORE_AGAIN : NOTIFY_STORE_LOST;
}

int notify_store_retry(struct notify_store *s, const struct notify_item *item,
		       long long delay_ms, const char *note, struct error *err)
{
	/* At least a microsecond: 0 is ST_AGAIN's. */
	return give_back(s, item, delay_ms > 0 ? delay_ms * 1000 : 1, note,
			 err);
}

long notify_store_prune(struct notify_store *s, long days, long limit,
			struct error *err)
{
	long long d = days, l = limit;
	MYSQL_BIND p[2];

	memset(p, 0, sizeof(p));
	bind_i64(&p[0], &d);
	bind_i64(&p[1], &l);
	return (long)run_change(s, ST_PRUNE, "pruning", p, err);
}
