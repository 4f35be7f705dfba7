/* lifecycle_store.c - refunds, disputes and cancellations recorded once,
 * with the payment's totals, in one transaction (see lifecycle_store.h). */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lifecycle_store.h"
#include "log.h"
#include "schema.h"
#include "sqlconn.h"
#include "timing.h"

#define UNIQUE_KEY SCHEMA_EVENTS_KEY
/* What a body needs beside itself in the INSERT's packet. */
#define PACKET_OVERHEAD 4096UL

/* The steps of the transaction return STORE_INSERTED to go on, any other
 * status to stop there (the transaction rolled back). */

/* Statements, in the order of the transaction. */
enum {
	SEL_PAYMENT, /* the payment's currency, its row locked */
	SEL_EVENT,   /* the object's row, locked */
	INS_EVENT,
	UPD_EVENT,
	UPD_EVENT_TIME, /* the same state restated later (lifecycle_restates) */
	INS_CHANGE,  /* one change, n = its number among the object's changes
		      * to that state */
	UPD_TOTALS,
	SEL_PAYMENT_PLAIN, /* the look-ups of lifecycle_store_find, no lock */
	SEL_EVENT_PLAIN,
	SEL_ITEM,    /* a signed item recorded before (has_signed_digest) */
	INS_ITEM,
	SEL_KIND,    /* the kind an object of kind_from_first holds, locked */
	SEL_KIND_PLAIN,
	SEL_REFUNDED, /* the payment's other succeeded refunds, locked */
	STATEMENTS
};

#define EVENT_COLUMNS                                                          \
	"SELECT id, state, TIMESTAMPDIFF(MICROSECOND, '1970-01-01', "          \
	"occurred_at), amount FROM payment_events "                            \
	"WHERE provider = ? AND kind = ? AND object_id = ?"
#define KIND_COLUMNS                                                           \
	"SELECT kind FROM payment_events WHERE provider = ? AND kind IN "      \
	"('refund', 'cancellation') AND object_id = ? ORDER BY id LIMIT 1"
#define PAYMENT_COLUMNS                                                        \
	"SELECT currency, amount FROM payments WHERE provider = ? AND "        \
	"transaction_id = ?"

static const char *const statement_sql[STATEMENTS] = {
	[SEL_PAYMENT] = PAYMENT_COLUMNS " FOR UPDATE",
	[SEL_EVENT] = EVENT_COLUMNS " FOR UPDATE",
	[INS_EVENT] = "INSERT INTO payment_events (provider, kind, object_id, "
		      "transaction_id, state, amount, currency, event_id, "
		      "occurred_at, payload, source) "
		      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[UPD_EVENT] = "UPDATE payment_events SET state = ?, amount = ?, "
		      "currency = ?, event_id = ?, occurred_at = ?, payload = ?, "
		      "updated_at = CURRENT_TIMESTAMP(6) WHERE id = ?",
	[UPD_EVENT_TIME] = "UPDATE payment_events SET event_id = ?, "
			   "occurred_at = ?, updated_at = CURRENT_TIMESTAMP(6) "
			   "WHERE id = ?",
	[INS_CHANGE] = "INSERT INTO payment_event_changes (event_row_id, state, "
		       "n, amount, currency, event_id, occurred_at) "
		       "SELECT ?, ?, COUNT(*) + 1, ?, ?, ?, ? FROM "
		       "payment_event_changes WHERE event_row_id = ? AND state = ?",
	[UPD_TOTALS] = STORE_TOTALS_UPDATE_SQL,
	[SEL_PAYMENT_PLAIN] = PAYMENT_COLUMNS,
	[SEL_EVENT_PLAIN] = EVENT_COLUMNS,
	/* A consistent read: an item another delivery commits meanwhile is
	 * caught by INS_ITEM's 1062. */
	[SEL_ITEM] = "SELECT event_row_id FROM payment_event_items WHERE "
		     "provider = ? AND item_digest = ?",
	[INS_ITEM] = "INSERT INTO payment_event_items (provider, item_digest, "
		     "event_row_id) VALUES (?, ?, ?)",
	[SEL_KIND] = KIND_COLUMNS " FOR UPDATE",
	[SEL_KIND_PLAIN] = KIND_COLUMNS,
	/* With this refund's amount, whether the payment's refunded_amount
	 * (the refunds counted in its currency: STORE_TOTALS_FROM) passes
	 * STORE_AMOUNT_MAX, and whether it passes the payment's amount;
	 * exact (DECIMAL) arithmetic. */
	[SEL_REFUNDED] = "SELECT COALESCE(SUM(amount), 0) + ? > "
			 STORE_AMOUNT_MAX ", COALESCE(SUM(amount), 0) + ? > ? "
			 "FROM payment_events WHERE provider = ? AND "
			 "transaction_id = ? AND kind = 'refund' AND "
			 "state = 'succeeded' AND object_id <> ? AND "
			 "(? IS NULL OR currency IS NULL OR currency = ?) "
			 "FOR UPDATE",
};

struct lifecycle_store {
	const struct config *cfg;
	struct sqlconn *conn;         /* with the statements, statement_sql */
	bool fresh;                   /* connected during the current call */
	unsigned last_error;
	/* The last record's refund carried its payment's refunded_amount past
	 * the payment's amount: what it was, and the payment's amount. */
	bool suspicious;
	unsigned long long suspicious_amount;
};

/* What the transaction knows of the rows it reads. */
struct rows {
	bool payment_found;
	char payment_currency[4];
	unsigned long long payment_amount;
	bool event_found;
	unsigned long long event_row_id;
	struct lifecycle_event held; /* the row's state, time and amount */
};

/* The bound values of one event: what every statement binds from. */
struct bound {
	const char *provider;
	unsigned long provider_len, kind_len, object_len, tid_len, state_len,
		currency_len, event_id_len, payload_len, digest_len;
	const char *kind, *state;
	unsigned long long amount;
	my_bool no_currency, no_event_id;
	MYSQL_TIME occurred;
};

struct lifecycle_store *lifecycle_store_new(const struct config *cfg,
					    struct error *err)
{
	struct lifecycle_store *ls = calloc(1, sizeof(*ls));
	struct sqlconn_options options = {
		.max_packet = (unsigned long)cfg->max_body_bytes + PACKET_OVERHEAD,
		/* Look-ups commit by themselves; the write is an explicit
		 * transaction. REPEATABLE READ, not READ COMMITTED: the
		 * payment's FOR UPDATE that finds no row takes a gap lock
		 * which the payment's INSERT waits for, so without the
		 * Redis lock the two never both commit blind to each other
		 * (test_payment_during_event_without_lock). */
		.autocommit = true,
		.statements = statement_sql,
		.statement_count = STATEMENTS,
	};

	if (ls == NULL) {
		error_set(err, "lifecycle store: out of memory");
		return NULL;
	}
	ls->cfg = cfg;
	ls->conn = sqlconn_new(cfg, &options, err);
	if (ls->conn == NULL) {
		free(ls);
		return NULL;
	}
	return ls;
}

void lifecycle_store_free(struct lifecycle_store *ls)
{
	if (ls == NULL)
		return;
	sqlconn_free(ls->conn);
	free(ls);
}

unsigned lifecycle_store_last_error(const struct lifecycle_store *ls)
{
	return ls->last_error;
}

bool lifecycle_store_suspicious(const struct lifecycle_store *ls,
				struct error *why)
{
	if (!ls->suspicious)
		return false;
	error_set(why, "suspicious refund: the payment's refunded amount "
		  "passes its amount %llu", ls->suspicious_amount);
	return true;
}

int lifecycle_store_connect(struct lifecycle_store *ls, struct error *err)
{
	if (sqlconn_connected(ls->conn))
		return 0;
	ls->fresh = true;
	if (sqlconn_connect(ls->conn, err) != 0) {
		ls->last_error = sqlconn_connect_error(ls->conn);
		return -1;
	}
	return 0;
}

/* After a failed statement with code (what names it, which is its number or
 * SQLCONN_SESSION): the session's fate and the class by sqlconn_fail
 * (committing: during COMMIT, whose lost session leaves the outcome
 * unknown), the status by the class. A 1062 here is a failure like any
 * other (the expected ones are decided before). */
static enum store_status failed(struct lifecycle_store *ls, unsigned code,
				const char *what, size_t which, bool committing,
				struct error *err)
{
	enum sqlconn_failure failure;

	error_set(err, "mysql %s: %u %s", what, code,
		  sqlconn_message(ls->conn, which));
	ls->last_error = code;
	failure = sqlconn_fail(ls->conn, code, committing);
	return failure == SQLCONN_DUPLICATE ? STORE_UNAVAILABLE :
					      store_failure_status(failure);
}

static enum store_status stmt_failed(struct lifecycle_store *ls, int which,
				     const char *what, struct error *err)
{
	return failed(ls, sqlconn_stmt_errno(ls->conn, (size_t)which), what,
		      (size_t)which, false, err);
}

static void bind_bytes(MYSQL_BIND *b, enum enum_field_types type,
		       const void *bytes, unsigned long *len)
{
	b->buffer_type = type;
	b->buffer = (void *)bytes;
	b->buffer_length = *len;
	b->length = len;
}

static void bind_u64(MYSQL_BIND *b, unsigned long long *value)
{
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = value;
	b->is_unsigned = 1;
}

static void bound_init(struct bound *v, const struct lifecycle_event *e,
		       size_t payload_len)
{
	struct tm tm;
	time_t seconds = (time_t)e->occurred_at.seconds;

	memset(v, 0, sizeof(*v));
	v->provider = e->link.provider != NULL ? e->link.provider : "standard";
	v->provider_len = (unsigned long)strlen(v->provider);
	v->kind = lifecycle_kind_name(e->kind);
	v->kind_len = (unsigned long)strlen(v->kind);
	v->state = lifecycle_state_name(e->state);
	v->state_len = (unsigned long)strlen(v->state);
	v->object_len = (unsigned long)e->object_id_len;
	v->tid_len = (unsigned long)e->link.transaction_id_len;
	v->amount = (unsigned long long)e->link.amount;
	v->currency_len = (unsigned long)strlen(e->link.currency);
	v->no_currency = v->currency_len == 0;
	v->event_id_len = (unsigned long)e->link.event_id_len;
	v->no_event_id = v->event_id_len == 0;
	v->payload_len = (unsigned long)payload_len;
	v->digest_len = LIFECYCLE_DIGEST_LEN;
	/* Years 1970-9999 (lifecycle_time_parse): gmtime_r can't fail. */
	gmtime_r(&seconds, &tm);
	v->occurred.year = (unsigned)tm.tm_year + 1900;
	v->occurred.month = (unsigned)tm.tm_mon + 1;
	v->occurred.day = (unsigned)tm.tm_mday;
	v->occurred.hour = (unsigned)tm.tm_hour;
	v->occurred.minute = (unsigned)tm.tm_min;
	v->occurred.second = (unsigned)tm.tm_sec;
	v->occurred.second_part = (unsigned long)e->occurred_at.micros;
	v->occurred.time_type = MYSQL_TIMESTAMP_DATETIME;
}

/* Binds (provider, kind, object_id) to b[0..3). */
static void bind_object(MYSQL_BIND *b, struct bound *v,
			const struct lifecycle_event *e)
{
	bind_bytes(&b[0], MYSQL_TYPE_STRING, v->provider, &v->provider_len);
	bind_bytes(&b[1], MYSQL_TYPE_STRING, v->kind, &v->kind_len);
	bind_bytes(&b[2], MYSQL_TYPE_STRING, e->object_id, &v->object_len);
}

/* Binds (provider, transaction_id) to b[0..2). */
static void bind_payment(MYSQL_BIND *b, struct bound *v,
			 const struct lifecycle_event *e)
{
	bind_bytes(&b[0], MYSQL_TYPE_STRING, v->provider, &v->provider_len);
	bind_bytes(&b[1], MYSQL_TYPE_STRING, e->link.transaction_id,
		   &v->tid_len);
}

/* Binds the state's columns: state, amount, currency, event_id,
 * occurred_at to b[0..5). */
static void bind_state(MYSQL_BIND *b, struct bound *v,
		       const struct lifecycle_event *e)
{
	bind_bytes(&b[0], MYSQL_TYPE_STRING, v->state, &v->state_len);
	bind_u64(&b[1], &v->amount);
	bind_bytes(&b[2], MYSQL_TYPE_STRING, e->link.currency, &v->currency_len);
	b[2].is_null = &v->no_currency;
	bind_bytes(&b[3], MYSQL_TYPE_STRING, e->link.event_id, &v->event_id_len);
	b[3].is_null = &v->no_event_id;
	b[4].buffer_type = MYSQL_TYPE_DATETIME;
	b[4].buffer = &v->occurred;
}

/* Runs statement which with params (results, if any, stored). Returns 0 or
 * the MySQL error. */
static unsigned run(struct lifecycle_store *ls, int which, MYSQL_BIND *params,
		    MYSQL_BIND *results)
{
	return sqlconn_run(ls->conn, (size_t)which, params, results);
}

/* Runs statement which and fetches its first row into results (*found set,
 * the rest dropped). Returns 0 or the MySQL error. */
static unsigned run_one(struct lifecycle_store *ls, int which,
			MYSQL_BIND *params, MYSQL_BIND *results, bool *found)
{
	unsigned code = run(ls, which, params, results);
	int rc;

	if (code != 0)
		return code;
	rc = sqlconn_fetch(ls->conn, (size_t)which, &code);
	sqlconn_done(ls->conn, (size_t)which);
	if (rc < 0)
		return code;
	*found = rc == 1;
	return 0;
}

/* Reads the payment's row (locked when which is SEL_PAYMENT) into *rows.
 * Returns 0 or the MySQL error. */
static unsigned read_payment(struct lifecycle_store *ls, int which,
			     struct bound *v, const struct lifecycle_event *e,
			     struct rows *rows)
{
	MYSQL_BIND param[2], out[2];
	unsigned long currency_len = 0;
	unsigned code;
	int rc;

	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	bind_payment(param, v, e);
	out[0].buffer_type = MYSQL_TYPE_STRING;
	out[0].buffer = rows->payment_currency;
	out[0].buffer_length = sizeof(rows->payment_currency);
	out[0].length = &currency_len;
	bind_u64(&out[1], &rows->payment_amount);
	code = run(ls, which, param, out);
	if (code != 0)
		return code;
	rc = sqlconn_fetch(ls->conn, (size_t)which, &code);
	rows->payment_found = rc == 1;
	rows->payment_currency[currency_len < 4 ? currency_len : 3] = '\0';
	sqlconn_done(ls->conn, (size_t)which);
	return rc < 0 ? code : 0;
}

/* Reads the object's row (locked when which is SEL_EVENT) into *rows,
 * rows->held as lifecycle_supersedes compares it with e. Returns 0 or the
 * MySQL error. */
static unsigned read_event(struct lifecycle_store *ls, int which,
			   struct bound *v, const struct lifecycle_event *e,
			   struct rows *rows)
{
	MYSQL_BIND param[3], out[4];
	char state[16];
	unsigned long state_len = 0;
	long long micros = 0;
	unsigned long long amount = 0;
	unsigned code;

	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	bind_object(param, v, e);
	bind_u64(&out[0], &rows->event_row_id);
	out[1].buffer_type = MYSQL_TYPE_STRING;
	out[1].buffer = state;
	out[1].buffer_length = sizeof(state);
	out[1].length = &state_len;
	out[2].buffer_type = MYSQL_TYPE_LONGLONG;
	out[2].buffer = &micros;
	bind_u64(&out[3], &amount);
	code = run_one(ls, which, param, out, &rows->event_found);
	if (code != 0 || !rows->event_found)
		return code;
	rows->held = *e;
	if (state_len >= sizeof(state) ||
	    lifecycle_state_parse(e->kind, state, state_len,
				  &rows->held.state) != 0)
		return 0; /* cannot be: the kind is part of the key */
	rows->held.occurred_at.seconds = micros / 1000000;
	rows->held.occurred_at.micros = (int32_t)(micros % 1000000);
	rows->held.link.amount = (int64_t)amount;
	return 0;
}

/* Whether the signed item of e (has_signed_digest) was recorded before:
 * *seen set. Returns 0 or the MySQL error. */
static unsigned read_item(struct lifecycle_store *ls, struct bound *v,
			  const struct lifecycle_event *e, bool *seen)
{
	MYSQL_BIND param[2], out[1];
	unsigned long long row_id = 0;

	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	bind_bytes(&param[0], MYSQL_TYPE_STRING, v->provider, &v->provider_len);
	bind_bytes(&param[1], MYSQL_TYPE_BLOB, e->signed_digest,
		   &v->digest_len);
	bind_u64(&out[0], &row_id);
	return run_one(ls, SEL_ITEM, param, out, seen);
}

/* For an event whose kind came from an unsigned field (kind_from_first):
 * *out is e with the kind its object was first recorded with, when one of
 * the other kind is recorded (read with statement which); *valid false when
 * e's state is none an object of that kind holds (it changes nothing).
 * Returns 0 or the MySQL error. */
static unsigned resolve_kind(struct lifecycle_store *ls, int which,
			     struct bound *v, const struct lifecycle_event *e,
			     struct lifecycle_event *out, bool *valid)
{
	MYSQL_BIND param[2], out_kind[1];
	char kind[16];
	unsigned long kind_len = 0;
	unsigned code;
	bool found = false;

	*out = *e;
	*valid = true;
	memset(param, 0, sizeof(param));
	memset(out_kind, 0, sizeof(out_kind));
	bind_bytes(&param[0], MYSQL_TYPE_STRING, v->provider, &v->provider_len);
	bind_bytes(&param[1], MYSQL_TYPE_STRING, e->object_id, &v->object_len);
	out_kind[0].buffer_type = MYSQL_TYPE_STRING;
	out_kind[0].buffer = kind;
	out_kind[0].buffer_length = sizeof(kind);
	out_kind[0].length = &kind_len;
	code = run_one(ls, which, param, out_kind, &found);
	if (code != 0 || !found || kind_len >= sizeof(kind))
		return code; /* no object yet: e's kind stands */
	kind[kind_len] = '\0';
	for (int k = 0; k < LIFECYCLE_KINDS; k++) {
		if (strcmp(kind, lifecycle_kind_name((enum lifecycle_kind)k)) == 0)
			out->kind = (enum lifecycle_kind)k;
	}
	*valid = lifecycle_state_valid(out->kind, out->state);
	return 0;
}

static bool guard_refuses(const struct store_guard *guard, long needed_ms)
{
	return guard != NULL && guard->enough_lease(guard->ctx, needed_ms) != 0;
}

static void rollback(struct lifecycle_store *ls)
{
	sqlconn_rollback(ls->conn);
}

/* START TRANSACTION; a kept connection that fails at once (the server
 * restarted or closed it since) is replaced once. Returns STORE_INSERTED,
 * or a failure status with err set. */
static enum store_status begin(struct lifecycle_store *ls, struct error *err)
{
	for (int attempt = 0;; attempt++) {
		int64_t started_us = timing_now_us();
		unsigned code = sqlconn_begin(ls->conn);

		if (code == 0)
			return STORE_INSERTED;
		if (attempt == 0 && !ls->fresh && sqlconn_is_lost(code) &&
		    timing_now_us() - started_us < 500000) {
			sqlconn_disconnect(ls->conn);
			if (lifecycle_store_connect(ls, err) != 0)
				return STORE_UNAVAILABLE;
			continue;
		}
		return failed(ls, code, "start transaction", SQLCONN_SESSION,
			      false, err);
	}
}

/* Inserts the object's row; after a 1062 the row another delivery created
 * first is read (it is ours to decide on only when found on this key).
 * Returns STORE_INSERTED, or a failure status with err set. */
static enum store_status insert_event(struct lifecycle_store *ls,
				      struct bound *v,
				      const struct lifecycle_event *e,
				      const void *payload, struct rows *rows,
				      struct error *err)
{
	MYSQL_BIND param[11];
	const char *source = payment_source_name(e->link.source);
	unsigned long source_len = (unsigned long)strlen(source);
	unsigned code;

	memset(param, 0, sizeof(param));
	bind_object(param, v, e);
	bind_bytes(&param[3], MYSQL_TYPE_STRING, e->link.transaction_id,
		   &v->tid_len);
	bind_state(&param[4], v, e);
	bind_bytes(&param[9], MYSQL_TYPE_BLOB, payload, &v->payload_len);
	bind_bytes(&param[10], MYSQL_TYPE_STRING, source, &source_len);
	code = run(ls, INS_EVENT, param, NULL);
	if (code == 0) {
		rows->event_row_id = sqlconn_insert_id(ls->conn, INS_EVENT);
		return STORE_INSERTED;
	}
	if (code != SQLCONN_ER_DUP_ENTRY)
		return stmt_failed(ls, INS_EVENT, "insert event", err);
	/* The statement is undone, the transaction goes on. */
	code = read_event(ls, SEL_EVENT, v, e, rows);
	if (code != 0)
		return stmt_failed(ls, SEL_EVENT, "select event", err);
	if (!rows->event_found) {
		error_set(err, "mysql insert event: 1062 on another unique key "
			       "than " UNIQUE_KEY ": not a duplicate");
		ls->last_error = SQLCONN_ER_DUP_ENTRY;
		rollback(ls);
		return STORE_UNAVAILABLE;
	}
	return STORE_INSERTED;
}

static enum store_status update_event(struct lifecycle_store *ls,
				      struct bound *v,
				      const struct lifecycle_event *e,
				      const void *payload, struct rows *rows,
				      struct error *err)
{
	MYSQL_BIND param[7];

	memset(param, 0, sizeof(param));
	bind_state(param, v, e);
	bind_bytes(&param[5], MYSQL_TYPE_BLOB, payload, &v->payload_len);
	bind_u64(&param[6], &rows->event_row_id);
	if (run(ls, UPD_EVENT, param, NULL) != 0)
		return stmt_failed(ls, UPD_EVENT, "update event", err);
	return STORE_INSERTED;
}

/* The row's state said again at a later time: its event id and time move
 * on, nothing else (no change is appended: the state did not change). */
static enum store_status restate_event(struct lifecycle_store *ls,
				       struct bound *v,
				       const struct lifecycle_event *e,
				       struct rows *rows, struct error *err)
{
	MYSQL_BIND state[5], param[3];

	memset(state, 0, sizeof(state));
	bind_state(state, v, e);
	param[0] = state[3];
	param[1] = state[4];
	memset(&param[2], 0, sizeof(param[2]));
	bind_u64(&param[2], &rows->event_row_id);
	if (run(ls, UPD_EVENT_TIME, param, NULL) != 0)
		return stmt_failed(ls, UPD_EVENT_TIME, "restate event", err);
	return STORE_INSERTED;
}

/* Appends the change: the row's new state, numbered among the object's
 * changes to that state. */
static enum store_status append_change(struct lifecycle_store *ls,
				       struct bound *v,
				       const struct lifecycle_event *e,
				       struct rows *rows, struct error *err)
{
	MYSQL_BIND param[8];

	memset(param, 0, sizeof(param));
	bind_u64(&param[0], &rows->event_row_id);
	bind_state(&param[1], v, e);
	bind_u64(&param[6], &rows->event_row_id);
	bind_bytes(&param[7], MYSQL_TYPE_STRING, v->state, &v->state_len);
	if (run(ls, INS_CHANGE, param, NULL) != 0)
		return stmt_failed(ls, INS_CHANGE, "insert change", err);
	return STORE_INSERTED;
}

static enum store_status update_totals(struct lifecycle_store *ls,
				       struct bound *v,
				       const struct lifecycle_event *e,
				       struct rows *rows, struct error *err)
{
	MYSQL_BIND param[5];
	unsigned long currency_len = (unsigned long)strlen(rows->payment_currency);

	memset(param, 0, sizeof(param));
	bind_payment(param, v, e);
	bind_bytes(&param[2], MYSQL_TYPE_STRING, rows->payment_currency,
		   &currency_len);
	bind_payment(&param[3], v, e);
	if (run(ls, UPD_TOTALS, param, NULL) != 0)
		return stmt_failed(ls, UPD_TOTALS, "update totals", err);
	return STORE_INSERTED;
}

/* Records e's signed item (has_signed_digest) as one its object was told
 * by. Returns STORE_INSERTED, STORE_DUPLICATE rolled back when another
 * delivery of the item committed it meanwhile, or a failure status. */
static enum store_status record_item(struct lifecycle_store *ls,
				     struct bound *v,
				     const struct lifecycle_event *e,
				     struct rows *rows, struct error *err)
{
	MYSQL_BIND param[3];
	unsigned code;

	if (!e->has_signed_digest)
		return STORE_INSERTED;
	memset(param, 0, sizeof(param));
	bind_bytes(&param[0], MYSQL_TYPE_STRING, v->provider, &v->provider_len);
	bind_bytes(&param[1], MYSQL_TYPE_BLOB, e->signed_digest,
		   &v->digest_len);
	bind_u64(&param[2], &rows->event_row_id);
	code = run(ls, INS_ITEM, param, NULL);
	if (code == SQLCONN_ER_DUP_ENTRY) {
		rollback(ls);
		return STORE_DUPLICATE;
	}
	if (code != 0)
		return stmt_failed(ls, INS_ITEM, "insert item", err);
	return STORE_INSERTED;
}

/* Before a succeeded refund is written: refuses it (STORE_INVALID, rolled
 * back, err saying why) when it would carry its payment's refunded_amount
 * past STORE_AMOUNT_MAX, counting the payment's other succeeded refunds in
 * its currency (the payment's when recorded, else e's; every currency when
 * neither is known), so that neither this UPDATE of the totals nor the
 * payment's INSERT later can fail with 1264 (out of range) and be retried
 * for days. Notes a refund that carries it past the payment's amount
 * (ls->suspicious). Returns STORE_INSERTED to go on, or a failure status. */
static enum store_status check_refunded(struct lifecycle_store *ls,
					struct bound *v,
					const struct lifecycle_event *e,
					const struct rows *rows,
					struct error *err)
{
	MYSQL_BIND param[9], out[2];
	const char *currency = rows->payment_found ? rows->payment_currency
						    : e->link.currency;
	unsigned long currency_len = (unsigned long)strlen(currency);
	my_bool no_currency = currency_len == 0;
	unsigned long long payment_amount = rows->payment_amount;
	long long past_max = 0, past_payment = 0;
	bool found = false;

	if (e->kind != LIFECYCLE_REFUND || e->state != LIFECYCLE_SUCCEEDED)
		return STORE_INSERTED;
	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	bind_u64(&param[0], &v->amount);
	bind_u64(&param[1], &v->amount);
	bind_u64(&param[2], &payment_amount);
	bind_payment(&param[3], v, e);
	bind_bytes(&param[5], MYSQL_TYPE_STRING, e->object_id, &v->object_len);
	for (int i = 6; i < 9; i++) {
		bind_bytes(&param[i], MYSQL_TYPE_STRING, currency,
			   &currency_len);
		param[i].is_null = &no_currency;
	}
	out[0].buffer_type = MYSQL_TYPE_LONGLONG;
	out[0].buffer = &past_max;
	out[1].buffer_type = MYSQL_TYPE_LONGLONG;
	out[1].buffer = &past_payment;
	if (run_one(ls, SEL_REFUNDED, param, out, &found) != 0)
		return stmt_failed(ls, SEL_REFUNDED, "select refunded", err);
	if (past_max != 0) {
		rollback(ls);
		error_set(err, "amount: %llu would carry the payment's "
			  "refunded_amount past " STORE_AMOUNT_MAX, v->amount);
		return STORE_INVALID;
	}
	if (rows->payment_found && past_payment != 0) {
		ls->suspicious = true;
		ls->suspicious_amount = rows->payment_amount;
	}
	return STORE_INSERTED;
}

/* Whether the payment (when recorded) is in another currency than e's. */
static bool other_currency(const struct rows *rows,
			   const struct lifecycle_event *e)
{
	return rows->payment_found && e->link.currency[0] != '\0' &&
	       strcmp(rows->payment_currency, e->link.currency) != 0;
}

/* The transaction after START TRANSACTION, up to the COMMIT (not sent).
 * Returns STORE_INSERTED with the transaction open and the write done
 * (*duplicate_written: a write all the same answered as a duplicate),
 * STORE_DUPLICATE or STORE_CONFLICT rolled back, or a failure status. */
static enum store_status write_event(struct lifecycle_store *ls,
				     const struct lifecycle_event *asked,
				     const void *payload, size_t payload_len,
				     bool *payment_found,
				     bool *duplicate_written, struct error *err)
{
	const struct lifecycle_event *e = asked;
	struct lifecycle_event resolved;
	struct bound v;
	struct rows rows;
	enum store_status status;
	bool seen = false, valid = true;

	bound_init(&v, e, payload_len);
	memset(&rows, 0, sizeof(rows));
	/* The payment's row first, then the object's: every writer takes
	 * them in this order. */
	if (read_payment(ls, SEL_PAYMENT, &v, e, &rows) != 0)
		return stmt_failed(ls, SEL_PAYMENT, "select payment", err);
	if (other_currency(&rows, e)) {
		rollback(ls);
		return STORE_CONFLICT;
	}
	/* A signed item told before: nothing its unsigned fields say counts. */
	if (e->has_signed_digest && read_item(ls, &v, e, &seen) != 0)
		return stmt_failed(ls, SEL_ITEM, "select item", err);
	if (e->kind_from_first) {
		if (resolve_kind(ls, SEL_KIND, &v, e, &resolved, &valid) != 0)
			return stmt_failed(ls, SEL_KIND, "select kind", err);
		e = &resolved;
		bound_init(&v, e, payload_len);
	}
	if (seen || !valid) {
		rollback(ls);
		return STORE_DUPLICATE;
	}
	if (read_event(ls, SEL_EVENT, &v, e, &rows) != 0)
		return stmt_failed(ls, SEL_EVENT, "select event", err);
	if (!rows.event_found) {
		status = check_refunded(ls, &v, e, &rows, err);
		if (status == STORE_INSERTED)
			status = insert_event(ls, &v, e, payload, &rows, err);
		if (status != STORE_INSERTED)
			return status;
	}
	if (rows.event_found) {
		/* The row was there (or another delivery just created it). */
		rows.held.cumulative = e->cumulative;
		if (!lifecycle_supersedes(&rows.held, e)) {
			if (!lifecycle_restates(&rows.held, e)) {
				/* A signed item older than the row's state:
				 * it changes nothing, now or when resent
				 * later with another time. */
				if (!e->has_signed_digest) {
					rollback(ls);
					return STORE_DUPLICATE;
				}
				*duplicate_written = true;
				return record_item(ls, &v, e, &rows, err);
			}
			/* A duplicate all the same, written: the row's
			 * time decides what an older event does later, and
			 * the totals' dispute_state follows the times. */
			*duplicate_written = true;
			status = restate_event(ls, &v, e, &rows, err);
			if (status == STORE_INSERTED && rows.payment_found)
				status = update_totals(ls, &v, e, &rows, err);
			if (status == STORE_INSERTED)
				status = record_item(ls, &v, e, &rows, err);
			return status;
		}
		status = check_refunded(ls, &v, e, &rows, err);
		if (status == STORE_INSERTED)
			status = update_event(ls, &v, e, payload, &rows, err);
		if (status != STORE_INSERTED)
			return status;
	}
	*payment_found = rows.payment_found;
	status = append_change(ls, &v, e, &rows, err);
	if (status == STORE_INSERTED && rows.payment_found)
		status = update_totals(ls, &v, e, &rows, err);
	if (status == STORE_INSERTED)
		status = record_item(ls, &v, e, &rows, err);
	return status;
}

enum store_status lifecycle_store_record(struct lifecycle_store *ls,
					 const struct lifecycle_event *e,
					 const void *payload, size_t payload_len,
					 const struct store_guard *guard,
					 struct error *err)
{
	long round_trip_ms = config_round_trip_bound_ms(ls->cfg);
	enum store_status status;
	bool payment_found = false, restated = false;
	unsigned code;

	ls->fresh = false;
	ls->last_error = 0;
	ls->suspicious = false;
	if (lifecycle_store_connect(ls, err) != 0)
		return STORE_UNAVAILABLE;
	/* Enough lease for the transaction's start and its first write. */
	if (guard_refuses(guard, 2 * round_trip_ms)) {
		error_set(err, "lease too short to start the write");
		return STORE_LEASE_EXPIRED;
	}
	status = begin(ls, err);
	if (status != STORE_INSERTED)
		return status;
	status = write_event(ls, e, payload, payload_len, &payment_found,
			     &restated, err);
	if (status != STORE_INSERTED)
		return status;
	/* An event before its payment: the payment's INSERT must learn of it
	 * (the lock's early mark), or the event is not written. */
	if (!payment_found && !restated && guard != NULL &&
	    guard->early_event != NULL &&
	    guard->early_event(guard->ctx, err) != 0) {
		rollback(ls);
		return STORE_UNAVAILABLE;
	}
	if (guard_refuses(guard, round_trip_ms)) {
		rollback(ls);
		error_set(err, "lease ran out before COMMIT: rolled back");
		return STORE_LEASE_EXPIRED;
	}
	code = sqlconn_commit(ls->conn);
	if (code != 0)
		/* A broken connection during COMMIT: nobody can know. */
		return failed(ls, code, "commit", SQLCONN_SESSION, true, err);
	return restated ? STORE_DUPLICATE : STORE_INSERTED;
}

enum store_status lifecycle_store_find(struct lifecycle_store *ls,
				       const struct lifecycle_event *e,
				       struct error *err)
{
	struct bound v;
	struct rows rows;
	struct lifecycle_event resolved;
	bool seen = false, valid = true;

	ls->fresh = false;
	if (lifecycle_store_connect(ls, err) != 0)
		return STORE_UNAVAILABLE;
	bound_init(&v, e, 0);
	memset(&rows, 0, sizeof(rows));
	if (read_payment(ls, SEL_PAYMENT_PLAIN, &v, e, &rows) != 0)
		return stmt_failed(ls, SEL_PAYMENT_PLAIN, "select payment", err);
	if (other_currency(&rows, e))
		return STORE_CONFLICT;
	if (e->has_signed_digest && read_item(ls, &v, e, &seen) != 0)
		return stmt_failed(ls, SEL_ITEM, "select item", err);
	if (e->kind_from_first) {
		if (resolve_kind(ls, SEL_KIND_PLAIN, &v, e, &resolved,
				 &valid) != 0)
			return stmt_failed(ls, SEL_KIND_PLAIN, "select kind",
					   err);
		e = &resolved;
		bound_init(&v, e, 0);
	}
	if (seen || !valid)
		return STORE_DUPLICATE;
	if (read_event(ls, SEL_EVENT_PLAIN, &v, e, &rows) != 0)
		return stmt_failed(ls, SEL_EVENT_PLAIN, "select event", err);
	if (!rows.event_found)
		return STORE_NOT_FOUND;
	rows.held.cumulative = e->cumulative;
	/* A state said again later moves the row's time: not "nothing to
	 * record", so the provider retries it once the lock is free. */
	return lifecycle_supersedes(&rows.held, e) ||
			       lifecycle_restates(&rows.held, e) ?
		       STORE_NOT_FOUND :
		       STORE_DUPLICATE;
}

int lifecycle_store_check_schema(struct lifecycle_store *ls, struct error *err)
{
	if (lifecycle_store_connect(ls, err) != 0)
		return -1;
	return schema_check_lifecycle(ls->conn, err);
}

int lifecycle_store_repair_totals(struct lifecycle_store *ls,
				  unsigned long *repaired, struct error *err)
{
	static const char sql[] = STORE_TOTALS_REPAIR_SQL;
	unsigned long long affected = 0;
	unsigned code;

	*repaired = 0;
	if (lifecycle_store_connect(ls, err) != 0)
		return -1;
	code = sqlconn_exec(ls->conn, sql, &affected);
	if (code != 0) {
		failed(ls, code, "repair totals", SQLCONN_SESSION, false, err);
		return -1;
	}
	*repaired = (unsigned long)affected;
	return 0;
}

/* lifecycle_store_early_scan's walk: the caller's callback per row, its
 * failure kept. */
struct early_walk {
	int (*each)(void *ctx, const char *provider, const char *transaction_id,
		    size_t transaction_id_len, struct error *err);
	void *ctx;
	struct error *err;
	int rc;
};

static int early_row(void *ctx, const struct sqlconn_row *row)
{
	struct early_walk *w = ctx;

	if (row->fields[0] != NULL && row->fields[1] != NULL)
		w->rc = w->each(w->ctx, row->fields[0], row->fields[1],
				row->lengths[1], w->err);
	return w->rc;
}

int lifecycle_store_early_scan(struct lifecycle_store *ls,
			       int (*each)(void *ctx, const char *provider,
					   const char *transaction_id,
					   size_t transaction_id_len,
					   struct error *err),
			       void *ctx, struct error *err)
{
	static const char sql[] =
		"SELECT DISTINCT e.provider, e.transaction_id "
		"FROM payment_events e WHERE NOT EXISTS (SELECT 1 FROM "
		"payments p WHERE p.provider = e.provider AND "
		"p.transaction_id = e.transaction_id)";
	struct early_walk walk = { each, ctx, err, 0 };
	unsigned code;

	if (lifecycle_store_connect(ls, err) != 0)
		return -1;
	code = sqlconn_query(ls->conn, sql, early_row, &walk);
	if (code != 0) {
		failed(ls, code, "early events", SQLCONN_SESSION, false, err);
		return -1;
	}
	return walk.rc;
}
