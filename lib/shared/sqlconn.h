/* sqlconn.h - the one MySQL client core (libmysqlclient API, from MariaDB
 * Connector/C) of payhook and payhook-dispatch: the servers to use
 * (mysql_nodes, else mysql_host/mysql_port or mysql_socket), the session
 * every connection gets, the Galera checks, what an error means, and the
 * move to the next node. The callers (store, handoff_store) keep only their
 * SQL.
 *
 * The session: connect, read and write timeouts from the configuration,
 * auto-reconnect off (a silent reconnect would lose the transaction and the
 * session settings; callers reconnect explicitly, between requests or
 * claims), utf8mb4, English messages whatever the server's lc_messages (for
 * the log; nothing is decided on a message's text), UTC, and a 1-second
 * innodb_lock_wait_timeout. A Galera node must be Synced, in the Primary
 * component and ready, and its session gets wsrep_sync_wait = 1, so reads
 * see every row committed anywhere in the cluster.
 *
 * With several nodes a connection stays on the node it has until that node
 * fails (down, killed, read-only, out of the primary component), then the
 * next connection tries the next node, in the order given.
 *
 * Beside the connection the core owns what every store repeats: a named set
 * of prepared statements (prepared on every connect, closed with the
 * connection, so re-prepared after a reconnect), running them and fetching
 * their rows, the explicit transaction (START TRANSACTION, COMMIT, ROLLBACK)
 * and the one classifier of a failed statement (sqlconn_fail). A store keeps
 * its statements' SQL, their parameters, and what their results mean. No
 * other module calls the client library (tests/unit/layers.test).
 */
#ifndef PAYHOOK_SQLCONN_H
#define PAYHOOK_SQLCONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <mysql.h>

#include "configuration.h"
#include "error.h"

/* Server error codes callers decide on (mysqld_error.h names them ER_*). */
#define SQLCONN_ER_DUP_ENTRY 1062
#define SQLCONN_ER_NO_SUCH_TABLE 1146
#define SQLCONN_ER_BAD_FIELD 1054
#define SQLCONN_ER_LOCK_WAIT_TIMEOUT 1205
#define SQLCONN_ER_LOCK_DEADLOCK 1213
#define SQLCONN_ER_STATEMENT_TIMEOUT 1969     /* MariaDB: max_statement_time */

struct sqlconn; /* the node list and at most one open connection; opaque */

/* What a caller's sessions need beyond the common set-up. */
struct sqlconn_options {
	unsigned long max_packet; /* the client's packet limit, bytes */
	bool autocommit;          /* else every statement opens a transaction */
	bool read_committed;      /* SET SESSION TRANSACTION ISOLATION LEVEL */
	bool found_rows;          /* CLIENT_FOUND_ROWS: UPDATE counts matches */
	/* Called once the session is ready (statements to prepare), and just
	 * before the connection is closed (statements to close); either may
	 * be NULL. A failing on_connect fails that node's connection. */
	int (*on_connect)(void *ctx, struct error *err);
	void (*on_disconnect)(void *ctx);
	void *ctx;
	/* The statement set: statement_count statements, numbered from 0 by
	 * the caller (an enum), whose SQL statements[i] is prepared on every
	 * connect before on_connect; a NULL entry (or statements NULL) is
	 * left to on_connect (sqlconn_prepare_as), for SQL that depends on
	 * the server. All are closed when the connection goes. */
	const char *const *statements;
	size_t statement_count;
	/* The statements are prepared at their first sqlconn_run on each
	 * connection rather than at connect: a store whose table may be
	 * missing (a migration not run) still connects, and its statement's
	 * failure (1146) says so. */
	bool prepare_on_use;
};

/* What a failed statement means for the caller: the one classifier of
 * MySQL errors (sqlconn_fail). */
enum sqlconn_failure {
	SQLCONN_LOST,      /* the session ended (client error, KILL, idle
			    * timeout): dropped; reconnect before the next use */
	SQLCONN_RETRYABLE, /* 1213, 1205, 1969: rolled back, connection kept
			    * (unless even the rollback failed) */
	SQLCONN_FAILED,    /* any other server error (read-only, missing
			    * table, node not ready): rolled back and dropped */
	SQLCONN_DUPLICATE, /* 1062 (sqlconn_fail only): the row collides on a
			    * unique key; the transaction rolled back, the
			    * connection kept. Which key, the store decides by
			    * a look-up (never by the message's text). */
	SQLCONN_UNKNOWN_OUTCOME, /* (sqlconn_fail only) the session ended
			    * during a COMMIT or a statement that commits by
			    * itself: it may or may not have committed;
			    * dropped */
};

/* A statement number meaning the session itself (sqlconn_message). */
#define SQLCONN_SESSION ((size_t)-1)

/* Returns a core for cfg and options (copied; cfg must outlive it), not yet
 * connected, or NULL with err set (out of memory, or mysql_nodes that do
 * not parse). */
struct sqlconn *sqlconn_new(const struct config *cfg,
			    const struct sqlconn_options *options,
			    struct error *err);

/* Closes the connection (on_disconnect first) and frees the core; NULL is
 * fine. */
void sqlconn_free(struct sqlconn *c);

/* Connects unless connected: to the node in use, or when it fails to each
 * next one in turn (logged when the node changes). Returns 0, or -1 with
 * err naming what failed on the last node tried (then not connected, and
 * the next call starts again at the preferred node). */
int sqlconn_connect(struct sqlconn *c, struct error *err);

/* Closes the connection (on_disconnect first), if any. Can't fail. */
void sqlconn_disconnect(struct sqlconn *c);

/* Whether the connected server runs Galera (wsrep_on). */
bool sqlconn_galera(const struct sqlconn *c);

/* The MySQL error of the last failed connect (0 after a success); a node
 * that does not take writes counts as 1047. */
unsigned sqlconn_connect_error(const struct sqlconn *c);


/* The one classifier, after a statement (of the set, the session's, or a
 * COMMIT) failed with code: records code (sqlconn_last_error); 1062 rolls
 * back an open transaction and keeps the connection (SQLCONN_DUPLICATE);
 * otherwise a lost session is dropped (SQLCONN_LOST, or
 * SQLCONN_UNKNOWN_OUTCOME during a COMMIT or a self-committing statement:
 * committing); an open transaction (sqlconn_begin's, or any statement's
 * without autocommit) is rolled back, and the connection is kept only for a
 * retryable error (SQLCONN_RETRYABLE), else dropped (SQLCONN_FAILED). A node
 * that failed (gone, shutting down, read-only, not ready) sends the next
 * connection to the next node. Can't fail. */
enum sqlconn_failure sqlconn_fail(struct sqlconn *c, unsigned int code,
				  bool committing);

/* The code of the last failure sqlconn_fail saw (0 before any), or of the
 * last failed connect. */
unsigned sqlconn_last_error(const struct sqlconn *c);

/* The text of the last error of statement which, or of the session
 * (SQLCONN_SESSION); "not connected" without a connection. Owned by c,
 * valid until its next call. */
const char *sqlconn_message(const struct sqlconn *c, size_t which);

/* The code of the last error of the session (0 when none, or not
 * connected). */
unsigned sqlconn_errno(const struct sqlconn *c);

/* The code of the last error of statement which of the set (0 when none,
 * or not connected; for a slot left empty by a failed prepare, that
 * prepare's error). */
unsigned sqlconn_stmt_errno(const struct sqlconn *c, size_t which);

/* The AUTO_INCREMENT value the last sqlconn_run of which generated. */
unsigned long long sqlconn_insert_id(const struct sqlconn *c, size_t which);

/* Pings the server. Returns 0, or the MySQL error. */
unsigned sqlconn_ping(struct sqlconn *c);

/* Whether a connection is open. */
bool sqlconn_connected(const struct sqlconn *c);

/* START TRANSACTION. Returns 0, or the MySQL error (nothing begun; the
 * caller hands it to sqlconn_fail). */
unsigned sqlconn_begin(struct sqlconn *c);

/* COMMIT of the open transaction (then none is open, whatever the result).
 * Returns 0, or the MySQL error (hand it to sqlconn_fail with committing:
 * a lost session leaves the outcome unknown). */
unsigned sqlconn_commit(struct sqlconn *c);

/* Ends the open transaction, if any, without effect; a connection that
 * can't even do that is dropped, to be reopened by the next call. Can't
 * fail. */
void sqlconn_rollback(struct sqlconn *c);

/* Whether a transaction begun by sqlconn_begin is open. */
bool sqlconn_in_transaction(const struct sqlconn *c);

/* Prepares sql as statement which of the set (for on_connect: SQL that
 * depends on the server). Returns 0, or -1 with err set (the slot left
 * empty). */
int sqlconn_prepare_as(struct sqlconn *c, size_t which, const char *sql,
		       struct error *err);

/* Whether statement which of the set is prepared. */
bool sqlconn_prepared(const struct sqlconn *c, size_t which);

/* Runs statement which of the set with params bound (NULL: none); with
 * results (NULL: none) bound to its columns, its rows are stored on the
 * client for sqlconn_fetch, and sqlconn_done frees them. Returns 0, or the
 * MySQL error (sqlconn_message(c, which) has its text; nothing stored). */
unsigned sqlconn_run(struct sqlconn *c, size_t which, MYSQL_BIND *params,
		     MYSQL_BIND *results);

/* The rows the last sqlconn_run of which changed (or matched, with
 * found_rows). */
unsigned long long sqlconn_affected(const struct sqlconn *c, size_t which);

/* Fetches column column of the current row of which into bind (after a
 * truncated sqlconn_fetch, into a larger buffer). Returns 0, or the MySQL
 * error. */
unsigned sqlconn_fetch_column(struct sqlconn *c, size_t which,
			      MYSQL_BIND *bind, unsigned column);

/* The next stored row of which into its bound results. Returns 1 for a row
 * (a truncated column is the caller's to notice by its length), 0 when
 * there are no more, or -1 with *code set. */
int sqlconn_fetch(struct sqlconn *c, size_t which, unsigned *code);

/* Frees what sqlconn_run stored for which. Can't fail. */
void sqlconn_done(struct sqlconn *c, size_t which);

/* Runs sql (a statement of the session, not of the set), discarding any
 * rows. Returns 0 and *affected (NULL: not wanted), or the MySQL error
 * (sqlconn_message(c, SQLCONN_SESSION) has its text). */
unsigned sqlconn_exec(struct sqlconn *c, const char *sql,
		      unsigned long long *affected);

/* One row of a sqlconn_query's result: its columns (NULL for SQL NULL)
 * and their lengths. Valid during the callback only. */
struct sqlconn_row {
	char **fields;
	unsigned long *lengths;
	unsigned count;
};

/* Runs sql and calls each(ctx, row) for every row of its result as it
 * comes from the server, until each returns non-zero (each must not use c
 * meanwhile). Returns 0, or the MySQL error (the session's message has its
 * text); a callback's stop is not an error. */
unsigned sqlconn_query(struct sqlconn *c, const char *sql,
		       int (*each)(void *ctx, const struct sqlconn_row *row),
		       void *ctx);

/* The stored rows of a text statement (sqlconn_select); opaque. */
struct sqlconn_result;

/* Runs sql and stores its rows on the client. Returns them (the caller
 * frees them with sqlconn_result_free before the connection goes), or NULL
 * with *code set to the MySQL error (the session's message has its text). */
struct sqlconn_result *sqlconn_select(struct sqlconn *c, const char *sql,
				      unsigned *code);

/* The next row of r into *row (valid until the next call on r): true, or
 * false when there are no more. */
bool sqlconn_next(struct sqlconn_result *r, struct sqlconn_row *row);

/* Frees r; NULL is fine. */
void sqlconn_result_free(struct sqlconn_result *r);

/* Escapes text[0..len) into out (2 * len + 1 bytes) for a quoted SQL
 * literal in the connection's character set (connected: else out is "").
 * Returns the length written. */
size_t sqlconn_escape(struct sqlconn *c, char *out, const char *text,
		      size_t len);

/* Runs sql and reads the first column of at most limit of its rows as
 * numbers (NULL or not a number: 0) into *ids, a new array of *count of
 * them (at least one element) the caller frees. Returns 0, or -1 with *ids
 * NULL and *code the MySQL error, or 0 when out of memory. */
int sqlconn_query_ids(struct sqlconn *c, const char *sql, size_t limit,
		      unsigned long long **ids, size_t *count, unsigned *code);

/* Runs sql and reads the first column of its first row as a number into
 * *out (0 when there is no row or the value is NULL). Returns 0, or the
 * MySQL error (the session's message has its text). */
unsigned sqlconn_query_u64(struct sqlconn *c, const char *sql,
			   unsigned long long *out);

/* Whether code ends the session itself: a client error (2000-2999), MySQL's
 * idle timeout (4031) or MariaDB's KILL (1927). */
bool sqlconn_is_lost(unsigned int code);

/* Runs sql, whose first column of the first row is a number, into *out.
 * Returns 0, or -1 with err set (the connection is left to the caller). */
int sqlconn_query_number(struct sqlconn *c, const char *sql,
			 unsigned long long *out, struct error *err);

/* For --check-config: with mysql_nodes, connects to each node on a
 * connection of its own and writes one line per node to out, "mysql: node
 * N: " and whether it is reachable, for Galera its
 * wsrep_local_state_comment, wsrep_cluster_status and wsrep_ready, with
 * "WARNING: " before a node that would not take writes (the others are
 * used then). Writes nothing without mysql_nodes. Can't fail: what goes
 * wrong is in the lines. */
void sqlconn_report_nodes(const struct config *cfg, FILE *out);

/* The servers as the configuration names them ("h1:p1 h2:p2", a socket
 * path, or host:port), for messages. Owned by cfg. */
const char *sqlconn_where(const struct config *cfg);

#endif
