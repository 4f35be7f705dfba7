/* reconcile_watch.c - reconcile_cursors as payhook-dispatch watches it:
 * the figures, and the alert episodes (see reconcile_watch.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "reconcile_watch.h"
#include "sqlconn.h"
#include "utc.h"

/* ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR: a database from before migration
 * 10 or 12; ER_TABLEACCESS_DENIED_ERROR: a user without rights on it. */
#define NO_SUCH_TABLE 1146
#define BAD_FIELD 1054
#define TABLE_ACCESS_DENIED 1142

/* What each episode's alert carries. */
#define DETAIL_MAX 255

/* A row as read, with what its episodes should be now. */
struct watched {
	bool failing_now, stale_now;
};

/* The row's columns: the figures, the episodes marked, and what they
 * should be by the database's clock. */
#define COLUMNS                                                              \
	"SELECT provider, recovered_total, discrepancies_total, "            \
	"failed_passes, IFNULL(FLOOR(UNIX_TIMESTAMP(last_success_at)), 0), " \
	"IFNULL(FLOOR(UNIX_TIMESTAMP(last_error_at)), 0), "                  \
	"IFNULL(last_error, ''), failing_episode, stale_episode, "           \
	"failed_passes >= %d, COALESCE(last_success_at, updated_at) < "      \
	"UTC_TIMESTAMP(6) - INTERVAL %ld SECOND FROM reconcile_cursors"

/* After a statement (or, committing, a COMMIT) failed with code: err says
 * what, and sqlconn's classifier rolls the transaction back (a lost
 * connection dropped). */
static enum reconcile_watch_status failed(struct sqlconn *c, const char *what,
					  unsigned code, bool committing,
					  struct error *err)
{
	error_set(err, "mysql %s: %u %s", what, code,
		  sqlconn_message(c, SQLCONN_SESSION));
	sqlconn_fail(c, code, committing);
	return code == NO_SUCH_TABLE || code == BAD_FIELD ||
			       code == TABLE_ACCESS_DENIED
		       ? RECONCILE_WATCH_MISSING
		       : RECONCILE_WATCH_FAILED;
}

static long long number(const char *text)
{
	return text != NULL ? strtoll(text, NULL, 10) : 0;
}

/* The profile named name, or CONFIG_PROVIDER_COUNT. */
static unsigned profile_of(const char *name)
{
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if (name != NULL && strcmp(name, config_provider_name(p)) == 0)
			return p;
	return CONFIG_PROVIDER_COUNT;
}

/* Reads every row (locked: FOR UPDATE) into rows and w. */
static enum reconcile_watch_status read_rows(struct sqlconn *c, bool locked,
					     struct metrics_reconcile *rows,
					     struct watched *w,
					     struct error *err)
{
	char sql[sizeof(COLUMNS) + 64];
	struct sqlconn_result *res;
	struct sqlconn_row row;
	unsigned code;

	snprintf(sql, sizeof(sql), COLUMNS "%s", RECONCILE_WATCH_FAILED_PASSES,
		 RECONCILE_WATCH_STALE_S, locked ? " FOR UPDATE" : "");
	res = sqlconn_select(c, sql, &code);
	if (res == NULL)
		return failed(c, "reconcile_cursors read", code, false, err);
	memset(rows, 0, CONFIG_PROVIDER_COUNT * sizeof(*rows));
	memset(w, 0, CONFIG_PROVIDER_COUNT * sizeof(*w));
	while (sqlconn_next(res, &row)) {
		char **r = row.fields;
		unsigned p = row.count >= 11 ? profile_of(r[0])
					     : CONFIG_PROVIDER_COUNT;

		if (p == CONFIG_PROVIDER_COUNT)
			continue;
		rows[p].known = true;
		rows[p].recovered = (unsigned long long)number(r[1]);
		rows[p].discrepancies = (unsigned long long)number(r[2]);
		rows[p].failed_passes = (unsigned)number(r[3]);
		rows[p].last_success_s = number(r[4]);
		rows[p].last_error_s = number(r[5]);
		snprintf(rows[p].last_error, sizeof(rows[p].last_error), "%s",
			 r[6] != NULL ? r[6] : "");
		rows[p].failing = number(r[7]) != 0;
		rows[p].stale = number(r[8]) != 0;
		w[p].failing_now = number(r[9]) != 0;
		w[p].stale_now = number(r[10]) != 0;
	}
	sqlconn_result_free(res);
	return RECONCILE_WATCH_OK;
}

/* Whether a row's episodes are not what they should be. */
static bool due(const struct metrics_reconcile *row, const struct watched *w)
{
	return row->known &&
	       (row->failing != w->failing_now || row->stale != w->stale_now);
}

/* Queues one alert for target_key in the open transaction. */
static enum reconcile_watch_status queue(struct sqlconn *c,
					 const char *target_key,
					 const char *event, unsigned profile,
					 unsigned failures, const char *detail,
					 struct error *err)
{
	char escaped[2 * DETAIL_MAX + 1], sql[3 * DETAIL_MAX + 256];
	size_t len = strnlen(detail, DETAIL_MAX);
	unsigned code;

	sqlconn_escape(c, escaped, detail, len);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO dispatch_alerts (target, event, provider, "
		 "failures, detail) VALUES ('%s', '%s', '%s', %u, '%s')",
		 target_key, event, config_provider_name(profile), failures,
		 escaped);
	code = sqlconn_exec(c, sql, NULL);
	if (code != 0)
		return failed(c, "dispatch_alerts insert", code, false, err);
	return RECONCILE_WATCH_OK;
}

/* "last complete pass <RFC 3339>" or "no complete pass yet" into buf. */
static void last_pass(int64_t at_s, char *buf, size_t cap)
{
	if (at_s <= 0 ||
	    utc_format(at_s, "last complete pass " UTC_RFC3339, buf, cap) != 0)
		snprintf(buf, cap, "no complete pass yet");
}

/* Marks profile p's episodes as they should be and queues their alerts. */
static enum reconcile_watch_status mark(struct sqlconn *c,
					const char *target_key, unsigned p,
					struct metrics_reconcile *row,
					const struct watched *w,
					unsigned *queued, struct error *err)
{
	enum reconcile_watch_status st = RECONCILE_WATCH_OK;
	const char *name = config_provider_name(p);
	char sql[256], when[64];
	unsigned code;

	last_pass(row->last_success_s, when, sizeof(when));
	if (w->failing_now && !row->failing) {
		log_error("reconcile=failing provider=%s: %u passes of "
			  "payhook-reconcile failed in a row (last: %s)", name,
			  row->failed_passes, row->last_error);
		st = queue(c, target_key, "reconcile_failing", p,
			   row->failed_passes, row->last_error, err);
		++*queued;
	}
	if (st == RECONCILE_WATCH_OK && w->stale_now && !row->stale) {
		log_error("reconcile=stale provider=%s: no pass of "
			  "payhook-reconcile completed for %ld s or more (%s)",
			  name, RECONCILE_WATCH_STALE_S, when);
		st = queue(c, target_key, "reconcile_stale", p,
			   row->failed_passes, when, err);
		++*queued;
	}
	if (st == RECONCILE_WATCH_OK && !w->failing_now && !w->stale_now &&
	    (row->failing || row->stale)) {
		log_info("reconcile=recovered provider=%s: a pass of "
			 "payhook-reconcile completed again (%s)", name, when);
		st = queue(c, target_key, "reconcile_recovered", p, 0, when,
			   err);
		++*queued;
	}
	if (st != RECONCILE_WATCH_OK)
		return st;
	snprintf(sql, sizeof(sql),
		 "UPDATE reconcile_cursors SET failing_episode = %d, "
		 "stale_episode = %d WHERE provider = '%s'",
		 w->failing_now ? 1 : 0, w->stale_now ? 1 : 0, name);
	code = sqlconn_exec(c, sql, NULL);
	if (code != 0)
		return failed(c, "reconcile_cursors episode", code, false, err);
	row->failing = w->failing_now;
	row->stale = w->stale_now;
	return RECONCILE_WATCH_OK;
}

/* Makes the rows of the profiles with a key that have none; true when it
 * made one. */
static enum reconcile_watch_status make_rows(struct sqlconn *c,
					     const struct config *cfg,
					     const struct metrics_reconcile *rows,
					     bool *made, struct error *err)
{
	char sql[64 + CONFIG_PROVIDER_COUNT * 40];
	size_t n = (size_t)snprintf(sql, sizeof(sql),
				    "INSERT IGNORE INTO reconcile_cursors "
				    "(provider) VALUES ");
	bool any = false;
	unsigned code;

	*made = false;
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		if (cfg->api_key[p] == NULL || rows[p].known)
			continue;
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s('%s')",
				      any ? ", " : "", config_provider_name(p));
		any = true;
	}
	if (!any)
		return RECONCILE_WATCH_OK;
	code = sqlconn_exec(c, sql, NULL);
	if (code != 0)
		return failed(c, "reconcile_cursors insert", code, false, err);
	code = sqlconn_commit(c);
	if (code != 0)
		return failed(c, "reconcile_cursors insert", code, true, err);
	*made = true;
	return RECONCILE_WATCH_OK;
}

enum reconcile_watch_status reconcile_watch_run(struct handoff_store *store,
						const struct config *cfg,
						const char *target_key,
						struct metrics_reconcile *rows,
						unsigned *queued,
						struct error *err)
{
	struct sqlconn *c = handoff_store_connection(store, err);
	struct watched w[CONFIG_PROVIDER_COUNT];
	enum reconcile_watch_status st;
	bool made, any = false;
	unsigned code;

	*queued = 0;
	if (c == NULL)
		return RECONCILE_WATCH_FAILED;
	st = read_rows(c, false, rows, w, err);
	if (st == RECONCILE_WATCH_OK)
		st = make_rows(c, cfg, rows, &made, err);
	if (st == RECONCILE_WATCH_OK && made)
		st = read_rows(c, false, rows, w, err);
	if (st != RECONCILE_WATCH_OK)
		return st;
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		any = any || due(&rows[p], &w[p]);
	if (!any) {
		code = sqlconn_commit(c);
		if (code != 0)
			return failed(c, "reconcile_cursors read", code, true,
				      err);
		return RECONCILE_WATCH_OK;
	}
	/* An episode to mark: again, locked, so that of several dispatchers
	 * one marks it and queues its alert, the others find it marked. */
	st = read_rows(c, true, rows, w, err);
	for (unsigned p = 0; st == RECONCILE_WATCH_OK && p < CONFIG_PROVIDER_COUNT;
	     p++)
		if (due(&rows[p], &w[p]))
			st = mark(c, target_key, p, &rows[p], &w[p], queued,
				  err);
	if (st != RECONCILE_WATCH_OK) {
		*queued = 0;
		return st;
	}
	code = sqlconn_commit(c);
	if (code != 0) {
		*queued = 0;
		return failed(c, "reconcile_cursors commit", code, true, err);
	}
	return RECONCILE_WATCH_OK;
}
