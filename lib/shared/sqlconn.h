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
};

/* What a failed statement means for the caller. */
enum sqlconn_failure {
	SQLCONN_LOST,      /* the session ended (client error, KILL, idle
			    * timeout): dropped; reconnect before the next use */
	SQLCONN_RETRYABLE, /* 1213, 1205, 1969: rolled back, connection kept
			    * (unless even the rollback failed) */
	SQLCONN_FAILED,    /* any other server error (read-only, missing
			    * table, node not ready): rolled back and dropped */
};

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

/* The open connection, or NULL while not connected. Owned by c: valid until
 * the next sqlconn_disconnect, sqlconn_failed or sqlconn_free. */
MYSQL *sqlconn_mysql(const struct sqlconn *c);

/* Whether the connected server runs Galera (wsrep_on). */
bool sqlconn_galera(const struct sqlconn *c);

/* The MySQL error of the last failed connect (0 after a success); a node
 * that does not take writes counts as 1047. */
unsigned sqlconn_connect_error(const struct sqlconn *c);

/* After a statement failed with code: a lost session is dropped; otherwise
 * the transaction is rolled back when in_transaction, and the connection is
 * kept only for a retryable error. A node that failed (gone, shutting down,
 * read-only, not ready) sends the next connection to the next node. Returns
 * the class of code. Can't fail. */
enum sqlconn_failure sqlconn_failed(struct sqlconn *c, unsigned int code,
				    bool in_transaction);

/* Whether code ends the session itself: a client error (2000-2999), MySQL's
 * idle timeout (4031) or MariaDB's KILL (1927). */
bool sqlconn_is_lost(unsigned int code);

/* Prepares sql on the connection. Returns the statement (the caller closes
 * it, before the connection goes), or NULL with err set. */
MYSQL_STMT *sqlconn_prepare(struct sqlconn *c, const char *sql,
			    struct error *err);

/* Runs sql, whose first column of the first row is a number, into *out.
 * Returns 0, or -1 with err set (the connection is left to the caller). */
int sqlconn_query_number(struct sqlconn *c, const char *sql,
			 unsigned long long *out, struct error *err);

/* The number of servers: those of mysql_nodes, or 1. */
size_t sqlconn_node_count(const struct sqlconn *c);

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
