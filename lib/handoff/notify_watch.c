/* notify_watch.c - the queue of the providers that only notify as
 * payhook-dispatch watches it: the figures, and the notify_waiting
 * episodes (see notify_watch.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "notify_watch.h"
#include "sqlconn.h"

/* ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR, ER_TABLEACCESS_DENIED_ERROR. */
#define NO_SUCH_TABLE 1146
#define BAD_FIELD 1054
#define TABLE_ACCESS_DENIED 1142

/* Each provider's and state's count, and the oldest pending one's age. */
#define FIGURES                                                               \
	"SELECT provider, state, COUNT(*), IF(state = 'pending', "            \
	"TIMESTAMPDIFF(SECOND, MIN(received_at), UTC_TIMESTAMP(6)), 0) "      \
	"FROM notifications GROUP BY provider, state"

static enum notify_watch_status failed(struct sqlconn *c, const char *what,
				       unsigned code, bool committing,
				       struct error *err)
{
	error_set(err, "mysql %s: %u %s", what, code,
		  sqlconn_message(c, SQLCONN_SESSION));
	sqlconn_fail(c, code, committing);
	return code == NO_SUCH_TABLE || code == BAD_FIELD ||
			       code == TABLE_ACCESS_DENIED
		       ? NOTIFY_WATCH_MISSING
		       : NOTIFY_WATCH_FAILED;
}

static unsigned profile_of(const char *name)
{
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if (name != NULL && strcmp(name, config_provider_name(p)) == 0)
			return p;
	return CONFIG_PROVIDER_COUNT;
}

static long long number(const char *text)
{
	return text != NULL ? strtoll(text, NULL, 10) : 0;
}

/* Every provider's figures into rows. */
static enum notify_watch_status read_figures(struct sqlconn *c,
					     const struct config *cfg,
					     struct metrics_reconcile *rows,
					     struct error *err)
{
	struct sqlconn_result *res = NULL;
	struct sqlconn_row row;
	unsigned code;

	(void)cfg;
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		/* Known once the queue has held one of its notifications:
		 * the table holds the notifying providers' only. */
		rows[p].notify_known = false;
		rows[p].notify_waiting = false;
		rows[p].notify_pending = rows[p].notify_done = 0;
		rows[p].notify_rejected = 0;
		rows[p].notify_oldest_s = 0;
	}
	res = sqlconn_select(c, FIGURES, &code);
	if (res == NULL)
		return failed(c, "notifications read", code, false, err);
	while (sqlconn_next(res, &row)) {
		unsigned p = row.count >= 4 ? profile_of(row.fields[0])
					    : CONFIG_PROVIDER_COUNT;
		const char *state = row.count >= 4 ? row.fields[1] : NULL;
		unsigned long long n = (unsigned long long)number(row.fields[2]);

		if (p == CONFIG_PROVIDER_COUNT || state == NULL)
			continue;
		rows[p].notify_known = true;
		if (strcmp(state, "pending") == 0) {
			rows[p].notify_pending = n;
			rows[p].notify_oldest_s = number(row.fields[3]);
		} else if (strcmp(state, "done") == 0) {
			rows[p].notify_done = n;
		} else {
			rows[p].notify_rejected = n;
		}
	}
	sqlconn_result_free(res);
	return NOTIFY_WATCH_OK;
}

/* Marks provider p's episode as waiting says, and queues its alert when
 * it opens; in the open transaction, with the episode's row locked. */
static enum notify_watch_status mark(struct sqlconn *c,
				     const struct config *cfg,
				     const char *target_key, unsigned p,
				     struct metrics_reconcile *row,
				     bool waiting, unsigned *queued,
				     struct error *err)
{
	const char *name = config_provider_name(p);
	char sql[512], detail[160], escaped[2 * sizeof(detail) + 1];
	struct sqlconn_result *res;
	struct sqlconn_row r;
	unsigned code;
	bool marked = false;

	snprintf(sql, sizeof(sql),
		 "INSERT IGNORE INTO notification_episodes (provider) VALUES "
		 "('%s')", name);
	code = sqlconn_exec(c, sql, NULL);
	if (code != 0)
		return failed(c, "notification_episodes insert", code, false,
			      err);
	snprintf(sql, sizeof(sql), "SELECT waiting FROM notification_episodes "
		 "WHERE provider = '%s' FOR UPDATE", name);
	res = sqlconn_select(c, sql, &code);
	if (res == NULL)
		return failed(c, "notification_episodes read", code, false, err);
	if (sqlconn_next(res, &r) && r.count >= 1)
		marked = number(r.fields[0]) != 0;
	sqlconn_result_free(res);
	row->notify_waiting = marked;
	if (marked == waiting)
		return NOTIFY_WATCH_OK;
	if (waiting) {
		snprintf(detail, sizeof(detail), "%llu notifications pending, "
			 "the oldest for %lld s (notify_alert_after_s %ld)",
			 row->notify_pending, row->notify_oldest_s,
			 cfg->notify_alert_after_s);
		log_error("notify=waiting provider=%s: %s: is payhook-reconcile "
			  "running, and can it reach the API?", name, detail);
		sqlconn_escape(c, escaped, detail, strlen(detail));
		snprintf(sql, sizeof(sql),
			 "INSERT INTO dispatch_alerts (target, event, provider, "
			 "failures, detail) VALUES ('%s', 'notify_waiting', "
			 "'%s', %llu, '%s')", target_key, name,
			 row->notify_pending, escaped);
		code = sqlconn_exec(c, sql, NULL);
		if (code != 0)
			return failed(c, "dispatch_alerts insert", code, false,
				      err);
		++*queued;
	} else {
		log_info("notify=fetched provider=%s: no notification pending "
			 "past notify_alert_after_s any more", name);
	}
	snprintf(sql, sizeof(sql), "UPDATE notification_episodes SET waiting "
		 "= %d WHERE provider = '%s'", waiting ? 1 : 0, name);
	code = sqlconn_exec(c, sql, NULL);
	if (code != 0)
		return failed(c, "notification_episodes update", code, false,
			      err);
	row->notify_waiting = waiting;
	return NOTIFY_WATCH_OK;
}

/* Each provider's episode as marked into rows' notify_waiting. */
static enum notify_watch_status read_episodes(struct sqlconn *c,
					      struct metrics_reconcile *rows,
					      struct error *err)
{
	struct sqlconn_result *res;
	struct sqlconn_row row;
	unsigned code;

	res = sqlconn_select(c, "SELECT provider, waiting FROM "
			     "notification_episodes", &code);
	if (res == NULL)
		return failed(c, "notification_episodes read", code, false, err);
	while (sqlconn_next(res, &row)) {
		unsigned p = row.count >= 2 ? profile_of(row.fields[0])
					    : CONFIG_PROVIDER_COUNT;

		if (p < CONFIG_PROVIDER_COUNT)
			rows[p].notify_waiting = number(row.fields[1]) != 0;
	}
	sqlconn_result_free(res);
	return NOTIFY_WATCH_OK;
}

static bool waiting_now(const struct config *cfg,
			const struct metrics_reconcile *row)
{
	return row->notify_pending > 0 &&
	       row->notify_oldest_s >= cfg->notify_alert_after_s;
}

enum notify_watch_status notify_watch_run(struct handoff_store *store,
					  const struct config *cfg,
					  const char *target_key,
					  struct metrics_reconcile *rows,
					  unsigned *queued, struct error *err)
{
	struct sqlconn *c = handoff_store_connection(store, err);
	enum notify_watch_status st;
	unsigned code;

	*queued = 0;
	if (c == NULL)
		return NOTIFY_WATCH_FAILED;
	st = read_figures(c, cfg, rows, err);
	if (st == NOTIFY_WATCH_OK)
		st = read_episodes(c, rows, err);
	/* An episode to mark: again, locked, so that of several dispatchers
	 * one marks it and queues its alert, the others find it marked. */
	for (unsigned p = 0; st == NOTIFY_WATCH_OK && p < CONFIG_PROVIDER_COUNT;
	     p++) {
		if (rows[p].notify_known &&
		    rows[p].notify_waiting != waiting_now(cfg, &rows[p]))
			st = mark(c, cfg, target_key, p, &rows[p],
				  waiting_now(cfg, &rows[p]), queued, err);
	}
	if (st != NOTIFY_WATCH_OK) {
		*queued = 0;
		return st;
	}
	code = sqlconn_commit(c);
	if (code != 0) {
		*queued = 0;
		return failed(c, "notification_episodes commit", code, true,
			      err);
	}
	return NOTIFY_WATCH_OK;
}
