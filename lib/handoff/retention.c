/* retention.c - clearing old payloads in small steps (see retention.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inbox_store.h"
#include "log.h"
#include "retention.h"
#include "sqlconn.h"
#include "timing.h"

/* A pass starts where the last one stopped (rows older than that were
 * cleared already); once a day one starts at the first row again, for a
 * payment delivered late (requeued from dead) whose row was passed over. */
#define FULL_PASS_EVERY_US (24LL * 3600 * 1000000)

/* The tables whose payloads are cleared, each by its own rule: a payment
 * once handed on; a lifecycle object (payment_events, whose payload is the
 * raw body of the event that set its state: PAY.JP's charge with its card
 * fingerprint) once every change of it was handed on, counted from when
 * its row last changed. */
enum { TABLE_PAYMENTS, TABLE_EVENTS, TABLES };

struct table {
	const char *name, *time_column, *handed_on;
};

static const struct table tables[TABLES] = {
	[TABLE_PAYMENTS] = { "payments", "received_at",
			     "dispatch_state IN ('delivered', 'skipped')" },
	[TABLE_EVENTS] = { "payment_events", "updated_at",
			   "NOT EXISTS (SELECT 1 FROM payment_event_changes c "
			   "WHERE c.event_row_id = payment_events.id AND "
			   "c.dispatch_state NOT IN ('delivered', 'skipped'))" },
};

struct retention {
	const struct config *cfg;
	struct sqlconn *conn;
	unsigned long long cursor[TABLES]; /* the last id looked at */
	int table;                 /* the table this pass is at */
	bool owner;                /* holds the named lock on its session */
	int64_t full_pass_at_us;   /* when a pass last started at the first row */
	/* inbox_days: the inbox's old deliveries go first in each pass, then
	 * what inbox_max_bytes has no room for (NULL: off). */
	struct inbox_store *inbox;
	bool inbox_swept;          /* this pass's inbox work is done */
};

struct retention *retention_new(const struct config *cfg, struct error *err)
{
	/* Each statement commits by itself: a step holds its row locks for
	 * one UPDATE and no longer. */
	const struct sqlconn_options options = {
		.max_packet = 1024 * 1024,
		.autocommit = true,
		.read_committed = true,
	};
	struct retention *r;

	if (cfg->payload_retention_days <= 0 && cfg->inbox_days <= 0) {
		error_set(err, "retention: neither payload_retention_days nor "
			  "inbox_days is set");
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		error_set(err, "retention: out of memory");
		return NULL;
	}
	r->cfg = cfg;
	r->full_pass_at_us = timing_now_us();
	r->conn = sqlconn_new(cfg, &options, err);
	if (r->conn == NULL) {
		free(r);
		return NULL;
	}
	if (cfg->inbox_days > 0) {
		r->inbox = inbox_store_new(cfg, err);
		if (r->inbox == NULL) {
			retention_free(r);
			return NULL;
		}
	}
	return r;
}

void retention_free(struct retention *r)
{
	if (r == NULL)
		return;
	sqlconn_free(r->conn);
	inbox_store_free(r->inbox);
	free(r);
}

/* A statement failed with code: its error into err, the connection to
 * sqlconn's classifier. */
static long failed(struct retention *r, unsigned code, const char *what,
		   struct error *err)
{
	error_set(err, "retention: %s: %u %s", what, code,
		  sqlconn_message(r->conn, SQLCONN_SESSION));
	sqlconn_fail(r->conn, code, false);
	if (!sqlconn_connected(r->conn))
		r->owner = false; /* the lock went with the session */
	return -1;
}

/* The end of the current table, or rows too new: its pass is over, and its
 * next one starts here; the pass is over once every table's is. Returns 0
 * (nothing cleared). */
static long next_table(struct retention *r, bool *pass_done)
{
	if (++r->table < TABLES && r->cfg->payload_retention_days > 0)
		return 0;
	r->table = 0;
	r->inbox_swept = false;
	*pass_done = true;
	if (timing_now_us() - r->full_pass_at_us >= FULL_PASS_EVERY_US) {
		memset(r->cursor, 0, sizeof(r->cursor));
		r->full_pass_at_us = timing_now_us();
	}
	return 0;
}

long retention_step(struct retention *r, bool *pass_done, struct error *err)
{
	char sql[768];
	unsigned long long last = 0, affected = 0;
	const struct table *t;
	unsigned code;

	*pass_done = false;
	if (!sqlconn_connected(r->conn))
		r->owner = false;
	if (sqlconn_connect(r->conn, err) != 0)
		return -1;
	/* One dispatcher of the database does it (several would do the same
	 * work twice): the one whose session holds the named lock. */
	if (!r->owner) {
		unsigned long long got = 0;

		code = sqlconn_query_u64(r->conn, "SELECT GET_LOCK("
					 "'payhook_retention', 0)", &got);
		if (code != 0)
			return failed(r, code, "taking the retention lock", err);
		r->owner = got == 1;
		if (!r->owner) {
			*pass_done = true;
			return 0;
		}
		log_info("retention: this dispatcher clears the payloads older "
			 "than %ld days (it holds the named lock "
			 "payhook_retention)", r->cfg->payload_retention_days);
	}
	/* The inbox first: the old, a batch a step, then what is over
	 * inbox_max_bytes. A step of its own counts what it removed. */
	if (r->inbox != NULL && !r->inbox_swept) {
		long n = inbox_store_expire(r->inbox, r->cfg->inbox_days,
					    RETENTION_BATCH, err);

		if (n < 0)
			return -1;
		if (n == RETENTION_BATCH)
			return n;
		if (r->cfg->inbox_max_bytes > 0) {
			long trimmed = inbox_store_trim(
				r->inbox, r->cfg->inbox_max_bytes, err);

			if (trimmed < 0)
				return -1;
			n += trimmed;
		}
		r->inbox_swept = true;
		if (n > 0)
			return n;
	}
	if (r->cfg->payload_retention_days <= 0)
		return next_table(r, pass_done);
	t = &tables[r->table];
	/* The window: the next rows by primary key (a range read of the
	 * clustered index), and the last of them old enough to clear: the
	 * step ends there, so a row too new today is looked at again. */
	snprintf(sql, sizeof(sql),
		 "SELECT MAX(IF(%s < UTC_TIMESTAMP(6) - INTERVAL %ld "
		 "DAY, id, 0)) FROM (SELECT id, %s FROM %s "
		 "WHERE id > %llu ORDER BY id LIMIT %d) AS w", t->time_column,
		 r->cfg->payload_retention_days, t->time_column, t->name,
		 r->cursor[r->table], RETENTION_BATCH);
	code = sqlconn_query_u64(r->conn, sql, &last);
	if (code != 0) {
		/* A database without the lifecycle tables (migrations 4
		 * and 6 not run): nothing of theirs to clear. */
		if (r->table != TABLE_PAYMENTS &&
		    code == SQLCONN_ER_NO_SUCH_TABLE)
			return next_table(r, pass_done);
		return failed(r, code, "reading the next rows", err);
	}
	if (last == 0)
		return next_table(r, pass_done);
	snprintf(sql, sizeof(sql),
		 "UPDATE %s SET payload = '' WHERE id > %llu AND id <= %llu "
		 "AND %s AND %s < UTC_TIMESTAMP(6) - INTERVAL %ld DAY AND "
		 "LENGTH(payload) > 0", t->name, r->cursor[r->table], last,
		 t->handed_on, t->time_column, r->cfg->payload_retention_days);
	code = sqlconn_exec(r->conn, sql, &affected);
	if (code != 0) {
		if (r->table != TABLE_PAYMENTS &&
		    code == SQLCONN_ER_NO_SUCH_TABLE)
			return next_table(r, pass_done);
		return failed(r, code, "clearing payloads", err);
	}
	r->cursor[r->table] = last;
	return (long)affected;
}
