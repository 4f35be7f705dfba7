/* handoff_admin.c - the operators' queries of the hand-off's tables (see
 * handoff_admin.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handoff_admin.h"
#include "schema.h"
#include "sqlconn.h"
#include "log.h"

#define CHANGES HANDOFF_STORE_CHANGES
#define CHANGE_JOINS HANDOFF_STORE_CHANGE_JOINS
/* ER_NO_SUCH_TABLE: a database from before a migration. */
#define NO_SUCH_TABLE SQLCONN_ER_NO_SUCH_TABLE

static const char received_at_format[] = HANDOFF_STORE_TIME_FORMAT;

/* sqlconn_query_number, dropping the connection when it fails. */
static int query_number(struct handoff_store *d, const char *sql,
			unsigned long long *out, struct error *err)
{
	if (sqlconn_query_number(handoff_store_core(d), sql, out, err) == 0)
		return 0;
	sqlconn_disconnect(handoff_store_core(d));
	return -1;
}

/* Fills err with what failed on the connection, then hands it to
 * sqlconn's classifier. Returns -1. */
static int failed_code(struct handoff_store *d, unsigned int code,
		       const char *what, struct error *err)
{
	struct sqlconn *c = handoff_store_core(d);

	error_set(err, "mysql %s: %u %s", what, code,
		  sqlconn_message(c, SQLCONN_SESSION));
	sqlconn_fail(c, code, false);
	return -1;
}

/* Ends the read's snapshot (autocommit is off). Returns 0, or -1 with err
 * set and the failure handled. */
static int end_read(struct handoff_store *d, struct error *err)
{
	unsigned code = sqlconn_exec(handoff_store_core(d), "ROLLBACK", NULL);

	return code == 0 ? 0 : failed_code(d, code, "rollback", err);
}

/* The caller's callback of handoff_admin_list_dead, per row. */
struct dead_walk {
	int (*each)(void *ctx, const struct handoff_admin_dead *row);
	void *ctx;
};

static int dead_row(void *ctx, const struct sqlconn_row *r)
{
	struct dead_walk *w = ctx;
	char **row = r->fields;
	struct handoff_admin_dead dead = {
		.id = handoff_store_number(row[0]),
		.provider = row[1] != NULL ? row[1] : "",
		.transaction_id = row[2] != NULL ? row[2] : "",
		.attempts = (unsigned long)handoff_store_number(row[3]),
		.last_error = row[4] != NULL ? row[4] : "",
		.kind = row[5] != NULL ? row[5] : "",
		.object_id = row[6] != NULL ? row[6] : "",
		.state = row[7] != NULL ? row[7] : "",
		.n = (unsigned long)handoff_store_number(row[8]),
	};

	return w->each(w->ctx, &dead);
}

int handoff_admin_list_dead(struct handoff_store *d, bool changes,
			    int (*each)(void *ctx,
					const struct handoff_admin_dead *row),
			    void *ctx, struct error *err)
{
	static const char payments_sql[] =
		"SELECT id, provider, transaction_id, dispatch_attempts, "
		"COALESCE(dispatch_last_error, ''), '', '', '', 0 FROM payments "
		"WHERE dispatch_state = 'dead' ORDER BY id";
	static const char changes_sql[] =
		"SELECT c.id, e.provider, e.transaction_id, c.dispatch_attempts, "
		"COALESCE(c.dispatch_last_error, ''), e.kind, e.object_id, "
		"c.state, c.n FROM " CHANGES " c JOIN payment_events e ON "
		"e.id = c.event_row_id WHERE c.dispatch_state = 'dead' "
		"ORDER BY c.id";
	struct dead_walk walk = { each, ctx };
	unsigned code;

	if (sqlconn_connect(handoff_store_core(d), err) != 0)
		return -1;
	/* Streamed: the list may be long. */
	code = sqlconn_query(handoff_store_core(d),
			     changes ? changes_sql : payments_sql, dead_row,
			     &walk);
	if (code != 0)
		return failed_code(d, code, "list dead", err);
	if (end_read(d, err) != 0)
		return -1;
	return 0;
}


/* Copies a column (NULL: "") into buf of cap bytes, cut to fit. */
static void copy_column(char *buf, size_t cap, const char *field)
{
	size_t n = field == NULL ? 0 : strnlen(field, cap - 1);

	if (n > 0)
		memcpy(buf, field, n);
	buf[n] = '\0';
}

int handoff_admin_show(struct handoff_store *d, bool changes,
		       unsigned long long id, struct handoff_admin_show *out,
		       struct error *err)
{
	struct sqlconn_result *res;
	struct sqlconn_row r;
	unsigned code;
	char *sql;

	memset(out, 0, sizeof(*out));
	if (sqlconn_connect(handoff_store_core(d), err) != 0)
		return -1;
	if (changes)
		sql = handoff_store_sql_new(
			err,
			"SELECT e.provider, e.transaction_id, c.dispatch_state, "
			"c.dispatch_attempts, c.dispatch_last_error, "
			"DATE_FORMAT(c.dispatch_due_at, '%s'), "
			"TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), "
			"c.dispatch_due_at) DIV 1000, c.dispatch_owner, "
			"CONCAT(e.kind, ' ', e.object_id, ' ', c.state), "
			"p.dispatch_state, (SELECT MIN(o.id) FROM " CHANGES " o "
			"WHERE o.event_row_id = c.event_row_id AND o.id < c.id "
			"AND o.dispatch_state IN ('pending', 'dead')), (SELECT "
			"o.dispatch_state FROM " CHANGES " o WHERE "
			"o.event_row_id = c.event_row_id AND o.id < c.id AND "
			"o.dispatch_state IN ('pending', 'dead') ORDER BY o.id "
			"LIMIT 1) FROM " CHANGES CHANGE_JOINS " WHERE c.id = %llu",
			received_at_format, id);
	else
		sql = handoff_store_sql_new(
			err,
			"SELECT provider, transaction_id, dispatch_state, "
			"dispatch_attempts, dispatch_last_error, "
			"DATE_FORMAT(dispatch_due_at, '%s'), "
			"TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), "
			"dispatch_due_at) DIV 1000, dispatch_owner, '', '', "
			"NULL, NULL FROM payments WHERE id = %llu",
			received_at_format, id);
	if (sql == NULL)
		return -1;
	res = sqlconn_select(handoff_store_core(d), sql, &code);
	free(sql);
	if (res == NULL)
		return failed_code(d, code, "show", err);
	if (sqlconn_next(res, &r)) {
		char **row = r.fields;

		out->found = true;
		copy_column(out->provider, sizeof(out->provider), row[0]);
		copy_column(out->transaction_id, sizeof(out->transaction_id),
			    row[1]);
		copy_column(out->state, sizeof(out->state), row[2]);
		out->attempts = (unsigned long)handoff_store_number(row[3]);
		copy_column(out->last_error, sizeof(out->last_error), row[4]);
		copy_column(out->due_at, sizeof(out->due_at), row[5]);
		out->due_in_ms = row[6] != NULL ? strtoll(row[6], NULL, 10) : 0;
		out->claimed = row[7] != NULL && out->due_in_ms > 0;
		copy_column(out->owner, sizeof(out->owner), row[7]);
		copy_column(out->change, sizeof(out->change), row[8]);
		copy_column(out->payment_state, sizeof(out->payment_state),
			    row[9]);
		out->earlier_id = handoff_store_number(row[10]);
		copy_column(out->earlier_state, sizeof(out->earlier_state),
			    row[11]);
	}
	sqlconn_result_free(res);
	return end_read(d, err);
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
		sqlconn_escape(handoff_store_core(d), escaped, value, len);
		grown = handoff_store_sql_new(err, "%s AND %s'%s'%s", *where, head, escaped,
				tail);
	}
	free(escaped);
	free(*where);
	*where = grown;
	return grown == NULL ? -1 : 0;
}

int handoff_admin_requeue(struct handoff_store *d,
			  enum handoff_admin_change change,
			  const struct handoff_admin_selection *sel,
			  bool dry_run, unsigned long long *count,
			  struct error *err)
{
	const char *table;
	char *where = NULL, *sql = NULL, *list = NULL;
	unsigned long long rows = 0;
	unsigned code;
	int rc = -1;

	*count = 0;
	if (sqlconn_connect(handoff_store_core(d), err) != 0)
		return -1;
	/* Requeue: dead rows, and skipped (never attempted: handled before
	 * payhook) ones only when asked for; redeliver: delivered ones. The
	 * idempotency key is the row's own, so it stays. */
	table = sel->changes ? CHANGES : "payments";
	where = handoff_store_sql_new(err, "%s", change == HANDOFF_ADMIN_REDELIVER
					   ? "dispatch_state = 'delivered'"
				   : sel->include_skipped
					   ? "dispatch_state IN ('dead', 'skipped')"
					   : "dispatch_state = 'dead'");
	if (where == NULL)
		return -1;
	if (sel->id_count > 0) {
		char *grown;

		list = handoff_store_id_list_new(sel->ids, sel->id_count, err);
		if (list == NULL)
			goto out;
		grown = handoff_store_sql_new(err, "%s AND id IN (%s)", where, list);
		free(where);
		where = grown;
		if (where == NULL)
			goto out;
	}
	/* A change's provider is its payment's, on its object's row. */
	if (where_add(d, &where,
		      sel->changes ? "event_row_id IN (SELECT id FROM "
				     "payment_events WHERE provider = "
				   : "provider = ",
		      sel->provider, sel->changes ? ")" : "", err) != 0 ||
	    where_add(d, &where, "received_at >= ", sel->since, "", err) != 0 ||
	    where_add(d, &where, "received_at < ", sel->until, "", err) != 0 ||
	    where_add(d, &where, "LOCATE(", sel->error,
		      ", COALESCE(dispatch_last_error, '')) > 0", err) != 0)
		goto out;
	if (dry_run) {
		sql = handoff_store_sql_new(err, "SELECT COUNT(*) FROM %s WHERE %s", table,
			      where);
		if (sql == NULL)
			goto out;
		if (query_number(d, sql, count, err) != 0 ||
		    end_read(d, err) != 0)
			goto out;
		rc = 0;
		goto out;
	}
	sql = handoff_store_sql_new(err,
		      "UPDATE %s SET dispatch_state = 'pending', "
		      "dispatch_due_at = UTC_TIMESTAMP(6), dispatch_attempts = 0, "
		      "dispatch_owner = NULL WHERE %s", table, where);
	if (sql == NULL)
		goto out;
	code = sqlconn_exec(handoff_store_core(d), sql, &rows);
	if (code != 0) {
		failed_code(d, code, change == HANDOFF_ADMIN_REDELIVER
					     ? "redeliver" : "requeue", err);
		goto out;
	}
	code = sqlconn_commit(handoff_store_core(d));
	if (code != 0) {
		failed_code(d, code, "requeue commit", err);
		goto out;
	}
	*count = rows == (unsigned long long)-1 ? 0 : rows;
	rc = 0;
out:
	free(sql);
	free(list);
	free(where);
	return rc;
}

int handoff_admin_set_paused(struct handoff_store *d, bool paused,
			     struct error *err)
{
	char owner[2 * HANDOFF_STORE_OWNER_MAX + 1];
	char *sql;
	unsigned int code;

	if (sqlconn_connect(handoff_store_core(d), err) != 0)
		return -1;
	sqlconn_escape(handoff_store_core(d), owner, handoff_store_owner(d),
		       strlen(handoff_store_owner(d)));
	sql = handoff_store_sql_new(err,
		      "INSERT INTO dispatch_control (id, paused, changed_at, "
		      "changed_by) VALUES (1, %d, UTC_TIMESTAMP(6), '%s') "
		      "ON DUPLICATE KEY UPDATE paused = VALUES(paused), "
		      "changed_at = VALUES(changed_at), "
		      "changed_by = VALUES(changed_by)",
		      paused ? 1 : 0, owner);
	if (sql == NULL)
		return -1;
	code = sqlconn_exec(handoff_store_core(d), sql, NULL);
	if (code != 0) {
		free(sql);
		if (code == NO_SUCH_TABLE) {
			sqlconn_fail(handoff_store_core(d), code, false);
			return error_set(err, "no table dispatch_control in this "
					 "database: run "
					 "db/migrate-5-dispatch-control.sql");
		}
		return failed_code(d, code, "pause flag", err);
	}
	free(sql);
	code = sqlconn_commit(handoff_store_core(d));
	if (code != 0)
		return failed_code(d, code, "pause flag commit", err);
	return 0;
}

/* The gauges' statement on one table: each part stays on an index (pending
 * rows are those with a due time, leased ones the future end of that range,
 * dead ones the index on dispatch_state). */
#define GAUGES_SQL(table)                                                      \
	"SELECT (SELECT COUNT(*) FROM " table                                   \
	" WHERE dispatch_due_at IS NOT NULL), "                                 \
	"(SELECT COUNT(*) FROM " table " WHERE dispatch_due_at > "              \
	"UTC_TIMESTAMP(6) AND dispatch_owner IS NOT NULL), "                    \
	"(SELECT COUNT(*) FROM " table " WHERE dispatch_state = 'dead'), "      \
	"(SELECT GREATEST(0, COALESCE(TIMESTAMPDIFF(SECOND, "                  \
	"MIN(dispatch_due_at), UTC_TIMESTAMP(6)), 0)) FROM " table             \
	" WHERE dispatch_due_at IS NOT NULL)"

/* Adds the gauges of one table (sql) to g. Returns 0, or -1 with err set
 * and the failure handled; a table that does not exist adds nothing when
 * optional. */
static int add_gauges(struct handoff_store *d, const char *sql, bool optional,
		      struct handoff_admin_gauges *g, struct error *err)
{
	struct sqlconn_result *res;
	struct sqlconn_row r;
	unsigned long long oldest;
	unsigned code;

	res = sqlconn_select(handoff_store_core(d), sql, &code);
	if (res == NULL) {
		if (optional && code == NO_SUCH_TABLE)
			return 0;
		return failed_code(d, code, "gauges", err);
	}
	if (sqlconn_next(res, &r) && r.count == 4) {
		char **row = r.fields;

		g->pending += handoff_store_number(row[0]);
		g->in_flight += handoff_store_number(row[1]);
		g->dead += handoff_store_number(row[2]);
		oldest = handoff_store_number(row[3]);
		if (oldest > g->oldest_due_s)
			g->oldest_due_s = oldest;
	}
	sqlconn_result_free(res);
	return 0;
}

int handoff_admin_gauges(struct handoff_store *d,
			 struct handoff_admin_gauges *g, struct error *err)
{
	memset(g, 0, sizeof(*g));
	if (sqlconn_connect(handoff_store_core(d), err) != 0)
		return -1;
	/* Payments and lifecycle changes alike: both are handed on. */
	if (add_gauges(d, GAUGES_SQL("payments"), false, g, err) != 0 ||
	    add_gauges(d, GAUGES_SQL(CHANGES), true, g, err) != 0) {
		memset(g, 0, sizeof(*g));
		return -1;
	}
	if (end_read(d, err) != 0) {
		memset(g, 0, sizeof(*g));
		return -1;
	}
	return 0;
}

int handoff_admin_check_control(struct handoff_store *d, bool *migrated,
				bool *paused, struct error *err)
{
	*migrated = false;
	*paused = false;
	if (sqlconn_connect(handoff_store_core(d), err) != 0)
		return -1;
	if (schema_dispatch_control(handoff_store_core(d), migrated, err) != 0)
		return -1;
	return handoff_store_paused(d, paused, err);
}

int handoff_admin_check_changes(struct handoff_store *d, bool *table,
				bool *indexed, struct error *err)
{
	*table = false;
	*indexed = false;
	if (sqlconn_connect(handoff_store_core(d), err) != 0)
		return -1;
	return schema_changes(handoff_store_core(d), table, indexed, err);
}

