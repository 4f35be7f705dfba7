/* target_store.c - dispatch_target and dispatch_alerts: the hand-off
 * target's shared state and its alerts (see target_store.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "log.h"
#include "sqlconn.h"
#include "target_store.h"

/* ER_NO_SUCH_TABLE: a database from before migration 9; ER_TABLEACCESS_
 * DENIED_ERROR: a user not granted the new tables. */
#define NO_SUCH_TABLE 1146
#define TABLE_ACCESS_DENIED 1142
/* The label's room: a URL cut to fit. */
#define LABEL_MAX 200

struct target_store {
	const struct config *cfg;
	struct handoff_store *store;
	char key[65];                 /* hex SHA-256 of the target */
	char label[LABEL_MAX + 1];
	bool missing_noted;           /* the warning of migration 9, once */
	bool row_made;                /* the row is known to exist */
};

/* The columns of dispatch_target, in struct target_state's order, read
 * with the database's clock after them. */
static const char state_columns[] =
	"circuit = 'open', since_us, failures, next_probe_us, probe_until_us, "
	"COALESCE(probe_owner = '%s', 0), pause_since_us, pause_until_us, "
	"last_status, COALESCE(last_error, ''), last_attempt_us, "
	"last_success_us, dead_episode, waiting_episode, opened_total, "
	"CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)";
#define STATE_COLUMN_COUNT 16

/* The database's clock, in statements. */
#define NOW_US "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)"
/* An alert not delivered is tried again after 5 s at the least, 10 min at
 * the most. */
#define ALERT_RETRY_MIN_US 5000000LL
#define ALERT_RETRY_MAX_US 600000000LL

/* The URL without its user, query or fragment, cut to fit; or
 * "dispatch_command". */
static void make_label(const struct config *cfg, char *buf, size_t cap)
{
	const char *url = cfg->dispatch_url, *host, *at, *end;

	if (url == NULL || url[0] == '\0') {
		snprintf(buf, cap, "dispatch_command");
		return;
	}
	host = strstr(url, "://");
	host = host != NULL ? host + 3 : url;
	end = host + strcspn(host, "/?#");
	at = memchr(host, '@', (size_t)(end - host));
	if (at != NULL)
		host = at + 1;
	snprintf(buf, cap, "%.*s%.*s", (int)(strstr(url, "://") != NULL
						     ? strstr(url, "://") + 3 - url
						     : 0),
		 url, (int)strcspn(host, "?#"), host);
	for (char *c = buf; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
}

struct target_store *target_store_new(const struct config *cfg,
				      struct handoff_store *store,
				      struct error *err)
{
	struct target_store *t = calloc(1, sizeof(*t));
	const char *text = cfg->dispatch_url != NULL && cfg->dispatch_url[0] != '\0'
				   ? cfg->dispatch_url
				   : cfg->dispatch_command != NULL
					     ? cfg->dispatch_command
					     : "";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	EVP_MD_CTX *ctx;

	if (t == NULL) {
		error_set(err, "dispatch target: out of memory");
		return NULL;
	}
	t->cfg = cfg;
	t->store = store;
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
	    (text == cfg->dispatch_command &&
	     EVP_DigestUpdate(ctx, "command:", 8) != 1) ||
	    EVP_DigestUpdate(ctx, text, strlen(text)) != 1 ||
	    EVP_DigestFinal_ex(ctx, md, &md_len) != 1 || md_len != 32) {
		EVP_MD_CTX_free(ctx);
		free(t);
		error_set(err, "dispatch target: SHA-256 failed");
		return NULL;
	}
	EVP_MD_CTX_free(ctx);
	for (unsigned i = 0; i < md_len; i++)
		snprintf(t->key + 2 * i, 3, "%02x", md[i]);
	make_label(cfg, t->label, sizeof(t->label));
	return t;
}

void target_store_free(struct target_store *t)
{
	free(t);
}

const char *target_store_label(const struct target_store *t)
{
	return t->label;
}

const char *target_store_key(const struct target_store *t)
{
	return t->key;
}

/* Escapes text (at most max bytes of it, as printable ASCII) into a new
 * string. */
static char *escaped_new(struct sqlconn *c, const char *text, size_t max,
			 struct error *err)
{
	size_t len = strnlen(text, max);
	char *clean = malloc(len + 1), *out = malloc(2 * len + 1);

	if (clean == NULL || out == NULL) {
		free(clean);
		free(out);
		error_set(err, "dispatch target: out of memory");
		return NULL;
	}
	for (size_t i = 0; i < len; i++)
		clean[i] = (unsigned char)text[i] >= 0x20 &&
					   (unsigned char)text[i] < 0x7f
				   ? text[i]
				   : '?';
	sqlconn_escape(c, out, clean, len);
	free(clean);
	return out;
}

/* After a failed statement: err says what, a lost connection is dropped,
 * an open transaction rolled back. TARGET_STORE_MISSING for a table that
 * is not there (noted once in the log). */
static enum target_store_status failed(struct target_store *t,
				       struct sqlconn *c, const char *what,
				       struct error *err)
{
	unsigned int code = sqlconn_errno(c);

	error_set(err, "mysql %s: %u %s", what, code,
		  sqlconn_message(c, SQLCONN_SESSION));
	if (code == NO_SUCH_TABLE || code == TABLE_ACCESS_DENIED) {
		if (sqlconn_exec(c, "ROLLBACK", NULL) != 0)
			sqlconn_fail(c, sqlconn_errno(c), false);
		if (!t->missing_noted)
			log_warn("%s: each payhook-dispatch keeps its own view "
				 "of the target, so a cron run or a second "
				 "dispatcher does not see an outage another one "
				 "saw (%s)",
				 code == NO_SUCH_TABLE
					 ? "no table dispatch_target"
					 : "no rights on dispatch_target",
				 code == NO_SUCH_TABLE
					 ? "run db/migrate-9-dispatch-target.sql"
					 : "grant the user SELECT, INSERT and "
					   "UPDATE on dispatch_target and "
					   "dispatch_alerts");
		t->missing_noted = true;
		return TARGET_STORE_MISSING;
	}
	sqlconn_fail(c, code, false);
	if (sqlconn_connected(c) && sqlconn_exec(c, "ROLLBACK", NULL) != 0)
		sqlconn_disconnect(c);
	return TARGET_STORE_FAILED;
}

/* Runs sql (a new string, freed here); *affected (NULL: not wanted) the
 * rows it changed. */
static enum target_store_status run_counted(struct target_store *t,
					    struct sqlconn *c, char *sql,
					    unsigned long long *affected,
					    const char *what,
					    struct error *err)
{
	if (sql == NULL)
		return TARGET_STORE_FAILED;
	if (sqlconn_exec(c, sql, affected) != 0) {
		free(sql);
		return failed(t, c, what, err);
	}
	free(sql);
	return TARGET_STORE_OK;
}

static enum target_store_status run(struct target_store *t, struct sqlconn *c,
				    char *sql, const char *what,
				    struct error *err)
{
	return run_counted(t, c, sql, NULL, what, err);
}

/* Runs the SELECT sql (a new string, freed here) into *res (the caller
 * frees it). */
static enum target_store_status run_select(struct target_store *t,
					   struct sqlconn *c, char *sql,
					   struct sqlconn_result **res,
					   const char *what,
					   struct error *err)
{
	unsigned code;

	if (sql == NULL)
		return TARGET_STORE_FAILED;
	*res = sqlconn_select(c, sql, &code);
	free(sql);
	return *res != NULL ? TARGET_STORE_OK : failed(t, c, what, err);
}

static int64_t parse_ll(const char *text)
{
	long long v = 0;

	if (text != NULL)
		sscanf(text, "%lld", &v);
	return (int64_t)v;
}

/* Reads the row (FOR UPDATE with lock) into *s and the clock into *now. */
static enum target_store_status read_row(struct target_store *t,
					 struct sqlconn *c, bool lock,
					 struct target_state *s, int64_t *now,
					 struct error *err)
{
	char owner[2 * HANDOFF_STORE_OWNER_MAX + 1], columns[sizeof(state_columns) + sizeof(owner)];
	const char *name = handoff_store_owner(t->store);
	enum target_store_status st;
	struct sqlconn_result *res;
	struct sqlconn_row r;
	char **row;
	char *label;

	/* The row, once per store (again after it went missing). */
	if (!t->row_made) {
		label = escaped_new(c, t->label, LABEL_MAX, err);
		if (label == NULL)
			return TARGET_STORE_FAILED;
		st = run(t, c,
			 handoff_store_sql_new(err,
				 "INSERT IGNORE INTO dispatch_target (target, "
				 "label) VALUES ('%s', '%s')",
				 t->key, label),
			 "dispatch_target insert", err);
		free(label);
		if (st != TARGET_STORE_OK)
			return st;
	}
	sqlconn_escape(c, owner, name, strnlen(name, HANDOFF_STORE_OWNER_MAX));
	snprintf(columns, sizeof(columns), state_columns, owner);
	st = run_select(t, c,
		 handoff_store_sql_new(err, "SELECT %s FROM dispatch_target WHERE target = "
			 "'%s'%s", columns, t->key, lock ? " FOR UPDATE" : ""),
		 &res, "dispatch_target read", err);
	if (st != TARGET_STORE_OK)
		return st;
	if (!sqlconn_next(res, &r) || r.count != STATE_COLUMN_COUNT) {
		sqlconn_result_free(res);
		t->row_made = false;
		error_set(err, "mysql dispatch_target read: no row");
		if (sqlconn_exec(c, "ROLLBACK", NULL) != 0)
			sqlconn_disconnect(c);
		return TARGET_STORE_FAILED;
	}
	row = r.fields;
	memset(s, 0, sizeof(*s));
	s->open = parse_ll(row[0]) != 0;
	s->since_us = parse_ll(row[1]);
	s->failures = (unsigned)parse_ll(row[2]);
	s->next_probe_us = parse_ll(row[3]);
	s->probe_until_us = parse_ll(row[4]);
	s->probe_mine = parse_ll(row[5]) != 0;
	s->pause_since_us = parse_ll(row[6]);
	s->pause_until_us = parse_ll(row[7]);
	s->last_status = (long)parse_ll(row[8]);
	snprintf(s->last_error, sizeof(s->last_error), "%s",
		 row[9] != NULL ? row[9] : "");
	s->last_attempt_us = parse_ll(row[10]);
	s->last_success_us = parse_ll(row[11]);
	s->dead_episode = parse_ll(row[12]) != 0;
	s->waiting_episode = parse_ll(row[13]) != 0;
	s->opened_total = (unsigned long long)parse_ll(row[14]);
	*now = parse_ll(row[15]);
	sqlconn_result_free(res);
	t->row_made = true;
	return TARGET_STORE_OK;
}

enum target_store_status target_store_read(struct target_store *t,
					   struct target_state *s,
					   int64_t *now_us, struct error *err)
{
	struct sqlconn *c = handoff_store_connection(t->store, err);
	enum target_store_status st;

	if (c == NULL)
		return TARGET_STORE_FAILED;
	st = read_row(t, c, false, s, now_us, err);
	if (st != TARGET_STORE_OK)
		return st;
	/* The INSERT IGNORE of a first read is kept. */
	if (sqlconn_commit(c) != 0)
		return failed(t, c, "dispatch_target commit", err);
	return TARGET_STORE_OK;
}

/* Writes s back, in the open transaction; the probe is given back. */
static enum target_store_status write_row(struct target_store *t,
					  struct sqlconn *c,
					  const struct target_state *s,
					  struct error *err)
{
	char *error = escaped_new(c, s->last_error,
				  TARGET_STORE_ERROR_MAX, err);
	enum target_store_status st;

	if (error == NULL)
		return TARGET_STORE_FAILED;
	st = run(t, c,
		 handoff_store_sql_new(err,
			 "UPDATE dispatch_target SET circuit = '%s', since_us = "
			 "%lld, failures = %u, next_probe_us = %lld, "
			 "probe_owner = NULL, probe_until_us = 0, "
			 "pause_since_us = %lld, pause_until_us = %lld, "
			 "last_status = %ld, last_error = '%s', "
			 "last_attempt_us = %lld, last_success_us = %lld, "
			 "dead_episode = %d, waiting_episode = %d, "
			 "opened_total = %llu WHERE target = '%s'",
			 s->open ? "open" : "closed", (long long)s->since_us,
			 s->failures, (long long)s->next_probe_us,
			 (long long)s->pause_since_us,
			 (long long)s->pause_until_us, s->last_status, error,
			 (long long)s->last_attempt_us,
			 (long long)s->last_success_us, s->dead_episode ? 1 : 0,
			 s->waiting_episode ? 1 : 0, s->opened_total, t->key),
		 "dispatch_target update", err);
	free(error);
	return st;
}

/* Adds alert a to dispatch_alerts, in the open transaction. */
static enum target_store_status add_alert(struct target_store *t,
					  struct sqlconn *c,
					  const struct target_alert *a,
					  struct error *err)
{
	char *event = escaped_new(c, a->event, 32, err);
	char *change = escaped_new(c, a->change, TARGET_STORE_LABEL_MAX, err);
	char *provider = escaped_new(c, a->provider, HANDOFF_ROW_PROVIDER_MAX, err);
	char *tid = escaped_new(c, a->transaction_id,
				PAYMENT_TRANSACTION_ID_MAX, err);
	char *detail = escaped_new(c, a->detail, TARGET_STORE_DETAIL_MAX, err);
	enum target_store_status st = TARGET_STORE_FAILED;

	if (event != NULL && change != NULL && provider != NULL &&
	    tid != NULL && detail != NULL)
		st = run(t, c,
			 handoff_store_sql_new(err,
				 "INSERT INTO dispatch_alerts (target, event, "
				 "row_kind, row_id, change_label, provider, "
				 "transaction_id, attempts, failures, detail) "
				 "VALUES ('%s', '%s', %d, %llu, '%s', '%s', "
				 "'%s', %lu, %u, '%s')",
				 t->key, event, a->row_kind, a->row_id, change,
				 provider, tid, a->attempts, a->failures,
				 detail),
			 "dispatch_alerts insert", err);
	free(event);
	free(change);
	free(provider);
	free(tid);
	free(detail);
	return st;
}

enum target_store_status target_store_change(
	struct target_store *t,
	bool (*change)(void *ctx, struct target_state *s, int64_t now_us,
		       struct target_alert *alerts, size_t *count),
	void *ctx, struct target_state *s, struct error *err)
{
	struct sqlconn *c = handoff_store_connection(t->store, err);
	struct target_alert alerts[TARGET_STORE_ALERTS_MAX];
	enum target_store_status st;
	size_t count = 0;
	int64_t now;

	if (c == NULL)
		return TARGET_STORE_FAILED;
	st = read_row(t, c, true, s, &now, err);
	if (st != TARGET_STORE_OK)
		return st;
	if (!change(ctx, s, now, alerts, &count)) {
		if (sqlconn_exec(c, "ROLLBACK", NULL) != 0)
			return failed(t, c, "dispatch_target rollback", err);
		return TARGET_STORE_OK;
	}
	st = write_row(t, c, s, err);
	for (size_t i = 0; st == TARGET_STORE_OK && i < count; i++)
		st = add_alert(t, c, &alerts[i], err);
	if (st != TARGET_STORE_OK)
		return st;
	if (sqlconn_commit(c) != 0)
		return failed(t, c, "dispatch_target commit", err);
	s->probe_mine = false;
	s->probe_until_us = 0;
	return TARGET_STORE_OK;
}

/* Runs an UPDATE of the row and commits; *changed: it matched. */
static enum target_store_status update_row(struct target_store *t,
					   char *sql, bool *changed,
					   struct error *err)
{
	struct sqlconn *c = handoff_store_connection(t->store, err);
	enum target_store_status st;
	unsigned long long affected = 0;

	*changed = false;
	if (c == NULL) {
		free(sql);
		return TARGET_STORE_FAILED;
	}
	st = run_counted(t, c, sql, &affected, "dispatch_target probe", err);
	if (st != TARGET_STORE_OK)
		return st;
	*changed = affected == 1;
	if (sqlconn_commit(c) != 0)
		return failed(t, c, "dispatch_target commit", err);
	return TARGET_STORE_OK;
}

/* The owner's name ("<host>:<pid>") with ' and \\ escaped, into buf of
 * 2 * HANDOFF_STORE_OWNER_MAX + 1 bytes. */
static void owner_quoted(const struct target_store *t, char *buf)
{
	const char *name = handoff_store_owner(t->store);
	size_t n = 0;

	for (size_t i = 0; name[i] != '\0' && i < HANDOFF_STORE_OWNER_MAX; i++) {
		if (name[i] == '\'' || name[i] == '\\')
			buf[n++] = '\\';
		buf[n++] = name[i];
	}
	buf[n] = '\0';
}

enum target_store_status target_store_take_probe(struct target_store *t,
						 long lease_ms, bool *taken,
						 struct error *err)
{
	char owner[2 * HANDOFF_STORE_OWNER_MAX + 1];

	owner_quoted(t, owner);
	return update_row(
		t,
		handoff_store_sql_new(err,
			"UPDATE dispatch_target SET probe_owner = '%s', "
			"probe_until_us = " NOW_US " + %lld WHERE target = '%s' "
			"AND circuit = 'open' AND next_probe_us <= " NOW_US
			" AND (probe_owner IS NULL OR probe_owner = '%s' OR "
			"probe_until_us <= " NOW_US ")",
			owner, (long long)lease_ms * 1000, t->key, owner),
		taken, err);
}

enum target_store_status target_store_release_probe(struct target_store *t,
						    struct error *err)
{
	char owner[2 * HANDOFF_STORE_OWNER_MAX + 1];
	bool changed;

	owner_quoted(t, owner);
	return update_row(t,
			  handoff_store_sql_new(err,
				  "UPDATE dispatch_target SET probe_owner = "
				  "NULL, probe_until_us = 0 WHERE target = '%s' "
				  "AND probe_owner = '%s'",
				  t->key, owner),
			  &changed, err);
}

enum target_store_status target_store_send_alerts(
	struct target_store *t, long lease_ms,
	int (*send)(void *ctx, const struct target_alert *a), void *ctx,
	unsigned *sent, struct error *err)
{
	struct sqlconn *c = handoff_store_connection(t->store, err);
	struct target_alert batch[TARGET_STORE_ALERTS_MAX * 2];
	size_t count = 0;
	enum target_store_status st;
	struct sqlconn_result *res;
	struct sqlconn_row r;
	char owner[2 * HANDOFF_STORE_OWNER_MAX + 1];
	const char *name = handoff_store_owner(t->store);

	*sent = 0;
	if (c == NULL)
		return TARGET_STORE_FAILED;
	sqlconn_escape(c, owner, name, strnlen(name, HANDOFF_STORE_OWNER_MAX));
	st = run_select(t, c,
		 handoff_store_sql_new(err,
			 "SELECT id, event, row_kind, row_id, change_label, "
			 "provider, transaction_id, attempts, failures, detail "
			 "FROM dispatch_alerts WHERE sent_at IS NULL AND target "
			 "= '%s' AND claim_until_us <= " NOW_US " ORDER BY id "
			 "LIMIT %zu FOR UPDATE SKIP LOCKED",
			 t->key, sizeof(batch) / sizeof(batch[0])),
		 &res, "dispatch_alerts claim", err);
	if (st != TARGET_STORE_OK)
		return st;
	while (count < sizeof(batch) / sizeof(batch[0]) &&
	       sqlconn_next(res, &r)) {
		struct target_alert *a = &batch[count++];
		char **row = r.fields;

		memset(a, 0, sizeof(*a));
		a->alert_id = (unsigned long long)parse_ll(row[0]);
		snprintf(a->event, sizeof(a->event), "%s", row[1] ? row[1] : "");
		a->row_kind = (int)parse_ll(row[2]);
		a->row_id = (unsigned long long)parse_ll(row[3]);
		snprintf(a->change, sizeof(a->change), "%s", row[4] ? row[4] : "");
		snprintf(a->provider, sizeof(a->provider), "%s",
			 row[5] ? row[5] : "");
		snprintf(a->transaction_id, sizeof(a->transaction_id), "%s",
			 row[6] ? row[6] : "");
		a->attempts = (unsigned long)parse_ll(row[7]);
		a->failures = (unsigned)parse_ll(row[8]);
		snprintf(a->detail, sizeof(a->detail), "%s", row[9] ? row[9] : "");
	}
	sqlconn_result_free(res);
	for (size_t i = 0; i < count; i++) {
		st = run(t, c,
			 handoff_store_sql_new(err,
				 "UPDATE dispatch_alerts SET claim_owner = '%s', "
				 "claim_until_us = " NOW_US " + %lld WHERE id = "
				 "%llu",
				 owner, (long long)lease_ms * 1000,
				 batch[i].alert_id),
			 "dispatch_alerts claim", err);
		if (st != TARGET_STORE_OK)
			return st;
	}
	if (sqlconn_commit(c) != 0)
		return failed(t, c, "dispatch_alerts commit", err);
	if (count == 0)
		return TARGET_STORE_OK;
	/* Sent outside any transaction: a slow alert holds no lock. */
	for (size_t i = 0; i < count; i++) {
		bool delivered = send(ctx, &batch[i]) == 0;

		/* Not delivered: due again after half the time it has been
		 * due (ALERT_RETRY_MIN_US to ALERT_RETRY_MAX_US), a back-off
		 * that needs no count of the tries. */
		st = run(t, c, delivered ?
			 handoff_store_sql_new(err,
				 "UPDATE dispatch_alerts SET sent_at = "
				 "UTC_TIMESTAMP(6), claim_owner = NULL WHERE id "
				 "= %llu",
				 batch[i].alert_id) :
			 handoff_store_sql_new(err,
				 "UPDATE dispatch_alerts SET claim_owner = NULL, "
				 "claim_until_us = " NOW_US " + GREATEST(%lld, "
				 "LEAST(%lld, (" NOW_US " - CAST(UNIX_TIMESTAMP("
				 "created_at) * 1000000 AS SIGNED)) DIV 2)) WHERE "
				 "id = %llu",
				 (long long)ALERT_RETRY_MIN_US,
				 (long long)ALERT_RETRY_MAX_US,
				 batch[i].alert_id),
			 "dispatch_alerts sent", err);
		if (st == TARGET_STORE_OK && sqlconn_commit(c) != 0)
			st = failed(t, c, "dispatch_alerts commit", err);
		if (st != TARGET_STORE_OK)
			return st;
		if (delivered)
			(*sent)++;
	}
	return TARGET_STORE_OK;
}

enum target_store_status target_store_check(struct target_store *t,
					    struct error *err)
{
	struct sqlconn *c = handoff_store_connection(t->store, err);
	enum target_store_status st;
	struct sqlconn_result *res;

	if (c == NULL)
		return TARGET_STORE_FAILED;
	st = run_select(t, c,
		 handoff_store_sql_new(err, "SELECT 1 FROM dispatch_target, dispatch_alerts "
			 "LIMIT 0"),
		 &res, "dispatch_target check", err);
	if (st != TARGET_STORE_OK)
		return st;
	sqlconn_result_free(res);
	if (sqlconn_exec(c, "ROLLBACK", NULL) != 0)
		return failed(t, c, "rollback", err);
	return TARGET_STORE_OK;
}
