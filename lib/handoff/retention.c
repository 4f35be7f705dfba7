/* retention.c - clearing old payloads in small steps (see retention.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "retention.h"
#include "sqlconn.h"
#include "timing.h"

/* A pass starts where the last one stopped (rows older than that were
 * cleared already); once a day one starts at the first row again, for a
 * payment delivered late (requeued from dead) whose row was passed over. */
#define FULL_PASS_EVERY_US (24LL * 3600 * 1000000)

struct retention {
	const struct config *cfg;
	struct sqlconn *conn;
	unsigned long long cursor; /* the last id looked at */
	bool owner;                /* holds the named lock on its session */
	int64_t full_pass_at_us;   /* when a pass last started at the first row */
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

	if (cfg->payload_retention_days <= 0) {
		error_set(err, "retention: payload_retention_days is not set");
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
	return r;
}

void retention_free(struct retention *r)
{
	if (r == NULL)
		return;
	sqlconn_free(r->conn);
	free(r);
}

/* A failed statement: its error into err, the connection to sqlconn. */
static long failed(struct retention *r, const char *what, struct error *err)
{
	MYSQL *mysql = sqlconn_mysql(r->conn);
	unsigned code = mysql != NULL ? mysql_errno(mysql) : 0;

	error_set(err, "retention: %s: %u %s", what, code,
		  mysql != NULL ? mysql_error(mysql) : "not connected");
	sqlconn_failed(r->conn, code, false);
	if (sqlconn_mysql(r->conn) == NULL)
		r->owner = false; /* the lock went with the session */
	return -1;
}

long retention_step(struct retention *r, bool *pass_done, struct error *err)
{
	char sql[512];
	unsigned long long last = 0;
	MYSQL_RES *res;
	MYSQL_ROW row;
	MYSQL *mysql;

	*pass_done = false;
	if (sqlconn_mysql(r->conn) == NULL)
		r->owner = false;
	if (sqlconn_connect(r->conn, err) != 0)
		return -1;
	mysql = sqlconn_mysql(r->conn);
	/* One dispatcher of the database does it (several would do the same
	 * work twice): the one whose session holds the named lock. */
	if (!r->owner) {
		unsigned long long got = 0;

		if (sqlconn_query_number(r->conn, "SELECT GET_LOCK("
					 "'payhook_retention', 0)", &got,
					 err) != 0)
			return failed(r, "taking the retention lock", err);
		r->owner = got == 1;
		if (!r->owner) {
			*pass_done = true;
			return 0;
		}
		log_info("retention: this dispatcher clears the payloads older "
			 "than %ld days (it holds the named lock "
			 "payhook_retention)", r->cfg->payload_retention_days);
	}
	/* The window: the next rows by primary key (a range read of the
	 * clustered index), and the last of them old enough to clear: the
	 * step ends there, so a row too new today is looked at again. */
	snprintf(sql, sizeof(sql),
		 "SELECT MAX(IF(received_at < UTC_TIMESTAMP(6) - INTERVAL %ld "
		 "DAY, id, 0)) FROM (SELECT id, received_at FROM payments "
		 "WHERE id > %llu ORDER BY id LIMIT %d) AS w",
		 r->cfg->payload_retention_days, r->cursor, RETENTION_BATCH);
	if (mysql_query(mysql, sql) != 0)
		return failed(r, "reading the next rows", err);
	res = mysql_store_result(mysql);
	if (res == NULL)
		return failed(r, "reading the next rows", err);
	row = mysql_fetch_row(res);
	if (row != NULL && row[0] != NULL)
		last = strtoull(row[0], NULL, 10);
	mysql_free_result(res);
	if (last == 0) {
		/* The end of the table, or rows too new: this pass is over,
		 * and the next one starts here. */
		*pass_done = true;
		if (timing_now_us() - r->full_pass_at_us >= FULL_PASS_EVERY_US) {
			r->cursor = 0;
			r->full_pass_at_us = timing_now_us();
		}
		return 0;
	}
	snprintf(sql, sizeof(sql),
		 "UPDATE payments SET payload = '' WHERE id > %llu AND id <= %llu "
		 "AND dispatch_state IN ('delivered', 'skipped') AND "
		 "received_at < UTC_TIMESTAMP(6) - INTERVAL %ld DAY AND "
		 "LENGTH(payload) > 0",
		 r->cursor, last, r->cfg->payload_retention_days);
	if (mysql_query(mysql, sql) != 0)
		return failed(r, "clearing payloads", err);
	r->cursor = last;
	return (long)mysql_affected_rows(mysql);
}
