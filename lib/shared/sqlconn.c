/* sqlconn.c - the one MySQL client core: nodes, session, Galera checks,
 * error classes, failover (see sqlconn.h). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errmsg.h>

#include "endpoint.h"
#include "log.h"
#include "number.h"
#include "sqlconn.h"

/* Server error codes that say what happened to the node or the session. */
#define SQLCONN_ER_UNKNOWN_COM 1047             /* Galera: node not ready */
#define SQLCONN_ER_SERVER_SHUTDOWN 1053
#define SQLCONN_ER_OPTION_PREVENTS 1290         /* read_only */
#define SQLCONN_ER_CONNECTION_KILLED 1927       /* MariaDB: KILL, shutdown */
#define SQLCONN_ER_CLIENT_INTERACTION_TIMEOUT 4031 /* MySQL 8.0.24+ */

struct sqlconn {
	const struct config *cfg;
	struct sqlconn_options options;
	/* The servers, in the order of preference: mysql_nodes, or the one
	 * of mysql_host/mysql_port (or mysql_socket). */
	struct endpoint nodes[ENDPOINT_LIST_MAX];
	size_t node_count;
	size_t node;            /* index of the node in use or tried next */
	/* The node of the last connection, so that a move is logged however
	 * it came about: the connect loop passing a node that refused, or
	 * sqlconn_fail stepping past one that failed mid-query. */
	size_t last_node;
	bool connected_once;
	bool galera;            /* the connected server runs wsrep */
	MYSQL *mysql;           /* NULL while not connected */
	unsigned connect_error; /* see sqlconn_connect_error */
	unsigned last_error;    /* see sqlconn_last_error */
	bool in_transaction;    /* between sqlconn_begin and its end */
	MYSQL_STMT **stmt;      /* the set, options.statement_count; NULL
				 * entries while not connected */
	/* The message of the last statement that failed to prepare on use. */
	char prepare_message[ERROR_MESSAGE_MAX];
	unsigned prepare_code; /* the last failed prepare's error, else 0 */
};

struct sqlconn *sqlconn_new(const struct config *cfg,
			    const struct sqlconn_options *options,
			    struct error *err)
{
	struct sqlconn *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		error_set(err, "mysql: out of memory");
		return NULL;
	}
	c->cfg = cfg;
	c->options = *options;
	if (options->statement_count > 0) {
		c->stmt = calloc(options->statement_count, sizeof(*c->stmt));
		if (c->stmt == NULL) {
			free(c);
			error_set(err, "mysql: out of memory");
			return NULL;
		}
	}
	/* One server: nodes[0] is filled from the configuration at each
	 * connect (connect_node). */
	if (cfg->mysql_nodes == NULL) {
		c->node_count = 1;
	} else if (endpoint_list_parse(cfg->mysql_nodes, cfg->mysql_port,
				       c->nodes, &c->node_count, err) != 0) {
		free(c->stmt);
		free(c);
		return NULL;
	}
	return c;
}

void sqlconn_disconnect(struct sqlconn *c)
{
	if (c->mysql == NULL)
		return;
	if (c->options.on_disconnect != NULL)
		c->options.on_disconnect(c->options.ctx);
	for (size_t i = 0; i < c->options.statement_count; i++) {
		if (c->stmt[i] != NULL)
			mysql_stmt_close(c->stmt[i]);
		c->stmt[i] = NULL;
	}
	c->in_transaction = false;
	mysql_close(c->mysql);
	c->mysql = NULL;
}

void sqlconn_free(struct sqlconn *c)
{
	if (c == NULL)
		return;
	sqlconn_disconnect(c);
	free(c->stmt);
	free(c);
}

bool sqlconn_galera(const struct sqlconn *c)
{
	return c->galera;
}

unsigned sqlconn_connect_error(const struct sqlconn *c)
{
	return c->connect_error;
}

const char *sqlconn_where(const struct config *cfg)
{
	return cfg->mysql_nodes != NULL ? cfg->mysql_nodes :
	       cfg->mysql_socket != NULL ? cfg->mysql_socket : cfg->mysql_host;
}

bool sqlconn_is_lost(unsigned int code)
{
	/* Client-side errors (CR_*, 2000-2999) mean the connection can't be
	 * trusted. */
	return (code >= 2000 && code < 3000) ||
	       code == SQLCONN_ER_CLIENT_INTERACTION_TIMEOUT ||
	       code == SQLCONN_ER_CONNECTION_KILLED;
}

/* Errors that say a node is gone or does not serve writes (down, killed,
 * shutting down, read-only, or a Galera node outside the primary component):
 * the next connection goes to the next node of mysql_nodes. */
static bool is_node_failure(unsigned int code)
{
	return code == CR_CONNECTION_ERROR || code == CR_CONN_HOST_ERROR ||
	       code == CR_SERVER_GONE_ERROR || code == CR_SERVER_LOST ||
	       code == SQLCONN_ER_UNKNOWN_COM ||
	       code == SQLCONN_ER_SERVER_SHUTDOWN ||
	       code == SQLCONN_ER_OPTION_PREVENTS ||
	       code == SQLCONN_ER_CONNECTION_KILLED;
}

static void next_node(struct sqlconn *c)
{
	c->node = (c->node + 1) % c->node_count;
}

/* The classes and what each does to the session (see sqlconn_fail). */
static enum sqlconn_failure classify(struct sqlconn *c, unsigned int code,
				     bool in_transaction)
{
	enum sqlconn_failure failure = SQLCONN_FAILED;

	if (sqlconn_is_lost(code)) {
		sqlconn_disconnect(c);
		failure = SQLCONN_LOST;
	} else {
		/* Outside a transaction a failed statement is already
		 * rolled back; a connection that can't even roll back is
		 * dropped, to be reopened by the next call. */
		if (c->mysql != NULL && in_transaction &&
		    mysql_rollback(c->mysql) != 0)
			sqlconn_disconnect(c);
		if (code == SQLCONN_ER_LOCK_DEADLOCK ||
		    code == SQLCONN_ER_LOCK_WAIT_TIMEOUT ||
		    code == SQLCONN_ER_STATEMENT_TIMEOUT)
			return SQLCONN_RETRYABLE;
		/* Read-only after a failover, a missing table, a node not
		 * ready: the next call reconnects, which may reach the
		 * server that now takes writes. */
		sqlconn_disconnect(c);
	}
	if (is_node_failure(code))
		next_node(c);
	return failure;
}

enum sqlconn_failure sqlconn_fail(struct sqlconn *c, unsigned int code,
				  bool committing)
{
	enum sqlconn_failure failure;
	/* Without autocommit every statement is in a transaction. */
	bool in_transaction = c->in_transaction || !c->options.autocommit;

	c->last_error = code;
	c->in_transaction = false;
	if (code == SQLCONN_ER_DUP_ENTRY) {
		/* The statement is rolled back; the transaction goes too, so
		 * that the caller's look-up sees what is committed. */
		if (c->mysql != NULL && in_transaction &&
		    mysql_rollback(c->mysql) != 0)
			sqlconn_disconnect(c);
		return SQLCONN_DUPLICATE;
	}
	failure = classify(c, code, in_transaction);
	if (failure == SQLCONN_LOST && committing)
		return SQLCONN_UNKNOWN_OUTCOME;
	return failure;
}

unsigned sqlconn_last_error(const struct sqlconn *c)
{
	return c->last_error != 0 ? c->last_error : c->connect_error;
}

const char *sqlconn_message(const struct sqlconn *c, size_t which)
{
	if (c->mysql == NULL)
		return "not connected";
	if (which != SQLCONN_SESSION && which < c->options.statement_count &&
	    c->stmt[which] == NULL && c->prepare_message[0] != '\0')
		return c->prepare_message;
	if (which == SQLCONN_SESSION || which >= c->options.statement_count ||
	    c->stmt[which] == NULL)
		return mysql_error(c->mysql);
	return mysql_stmt_error(c->stmt[which]);
}

unsigned sqlconn_errno(const struct sqlconn *c)
{
	return c->mysql != NULL ? mysql_errno(c->mysql) : 0;
}

unsigned sqlconn_stmt_errno(const struct sqlconn *c, size_t which)
{
	if (c->mysql == NULL || which >= c->options.statement_count)
		return 0;
	if (c->stmt[which] == NULL)
		return c->prepare_code;
	return mysql_stmt_errno(c->stmt[which]);
}

unsigned long long sqlconn_insert_id(const struct sqlconn *c, size_t which)
{
	return c->stmt[which] != NULL ?
		       (unsigned long long)mysql_stmt_insert_id(c->stmt[which]) :
		       0;
}

unsigned sqlconn_ping(struct sqlconn *c)
{
	if (c->mysql == NULL)
		return CR_SERVER_GONE_ERROR;
	return mysql_ping(c->mysql) != 0 ? mysql_errno(c->mysql) : 0;
}

bool sqlconn_connected(const struct sqlconn *c)
{
	return c->mysql != NULL;
}

unsigned sqlconn_begin(struct sqlconn *c)
{
	static const char begin_sql[] = "START TRANSACTION";

	if (c->mysql == NULL)
		return CR_SERVER_GONE_ERROR;
	if (mysql_real_query(c->mysql, begin_sql, sizeof(begin_sql) - 1) != 0)
		return mysql_errno(c->mysql);
	c->in_transaction = true;
	return 0;
}

unsigned sqlconn_commit(struct sqlconn *c)
{
	c->in_transaction = false;
	if (c->mysql == NULL)
		return CR_SERVER_GONE_ERROR;
	return mysql_commit(c->mysql) != 0 ? mysql_errno(c->mysql) : 0;
}

void sqlconn_rollback(struct sqlconn *c)
{
	/* Without autocommit every statement opened one. */
	if (c->mysql == NULL || (!c->in_transaction && c->options.autocommit))
		return;
	c->in_transaction = false;
	if (mysql_rollback(c->mysql) != 0)
		sqlconn_disconnect(c);
}

bool sqlconn_in_transaction(const struct sqlconn *c)
{
	return c->in_transaction;
}

/* Prepares sql on the connection. Returns the statement (the caller closes
 * it, before the connection goes), or NULL with err set. */
static MYSQL_STMT *prepare(struct sqlconn *c, const char *sql,
			   struct error *err)
{
	MYSQL_STMT *stmt = mysql_stmt_init(c->mysql);

	if (stmt == NULL) {
		error_set(err, "mysql: out of memory preparing a statement");
		return NULL;
	}
	if (mysql_stmt_prepare(stmt, sql, strlen(sql)) != 0) {
		error_set(err, "mysql prepare: %u %s", mysql_stmt_errno(stmt),
			  mysql_stmt_error(stmt));
		/* For sqlconn_stmt_errno and sqlconn_message of the slot. */
		c->prepare_code = mysql_stmt_errno(stmt);
		snprintf(c->prepare_message, sizeof(c->prepare_message), "%s",
			 mysql_stmt_error(stmt));
		mysql_stmt_close(stmt);
		return NULL;
	}
	c->prepare_code = 0;
	c->prepare_message[0] = '\0';
	return stmt;
}

int sqlconn_prepare_as(struct sqlconn *c, size_t which, const char *sql,
		       struct error *err)
{
	if (which >= c->options.statement_count)
		return error_set(err, "mysql: no statement %zu in the set",
				 which);
	if (c->stmt[which] != NULL) {
		mysql_stmt_close(c->stmt[which]);
		c->stmt[which] = NULL;
	}
	c->stmt[which] = prepare(c, sql, err);
	return c->stmt[which] != NULL ? 0 : -1;
}

bool sqlconn_prepared(const struct sqlconn *c, size_t which)
{
	return which < c->options.statement_count && c->stmt[which] != NULL;
}

unsigned sqlconn_run(struct sqlconn *c, size_t which, MYSQL_BIND *params,
		     MYSQL_BIND *results)
{
	MYSQL_STMT *stmt = c->stmt[which];

	if (stmt == NULL && c->mysql != NULL && c->options.prepare_on_use &&
	    c->options.statements != NULL &&
	    c->options.statements[which] != NULL) {
		const char *sql = c->options.statements[which];
		unsigned code;

		stmt = mysql_stmt_init(c->mysql);
		if (stmt == NULL)
			return CR_OUT_OF_MEMORY;
		if (mysql_stmt_prepare(stmt, sql, strlen(sql)) != 0) {
			code = mysql_stmt_errno(stmt);
			c->prepare_code = code;
			snprintf(c->prepare_message, sizeof(c->prepare_message),
				 "%s", mysql_stmt_error(stmt));
			mysql_stmt_close(stmt);
			return code;
		}
		c->prepare_code = 0;
		c->prepare_message[0] = '\0';
		c->stmt[which] = stmt;
	}
	if (stmt == NULL)
		return CR_SERVER_GONE_ERROR;
	if ((params != NULL && mysql_stmt_bind_param(stmt, params) != 0) ||
	    (results != NULL && mysql_stmt_bind_result(stmt, results) != 0) ||
	    mysql_stmt_execute(stmt) != 0 ||
	    (results != NULL && mysql_stmt_store_result(stmt) != 0))
		return mysql_stmt_errno(stmt);
	return 0;
}

unsigned long long sqlconn_affected(const struct sqlconn *c, size_t which)
{
	return c->stmt[which] != NULL ?
		       (unsigned long long)mysql_stmt_affected_rows(c->stmt[which]) :
		       0;
}

unsigned sqlconn_fetch_column(struct sqlconn *c, size_t which,
			      MYSQL_BIND *bind, unsigned column)
{
	if (mysql_stmt_fetch_column(c->stmt[which], bind, column, 0) != 0)
		return mysql_stmt_errno(c->stmt[which]);
	return 0;
}

int sqlconn_fetch(struct sqlconn *c, size_t which, unsigned *code)
{
	int rc = mysql_stmt_fetch(c->stmt[which]);

	if (rc == 0 || rc == MYSQL_DATA_TRUNCATED)
		return 1;
	if (rc == MYSQL_NO_DATA)
		return 0;
	*code = mysql_stmt_errno(c->stmt[which]);
	return -1;
}

void sqlconn_done(struct sqlconn *c, size_t which)
{
	if (c->stmt[which] != NULL)
		mysql_stmt_free_result(c->stmt[which]);
}

unsigned sqlconn_exec(struct sqlconn *c, const char *sql,
		      unsigned long long *affected)
{
	MYSQL_RES *res;

	if (c->mysql == NULL)
		return CR_SERVER_GONE_ERROR;
	if (mysql_real_query(c->mysql, sql, strlen(sql)) != 0)
		return mysql_errno(c->mysql);
	if (affected != NULL)
		*affected = (unsigned long long)mysql_affected_rows(c->mysql);
	/* A statement with rows: read and dropped. */
	res = mysql_store_result(c->mysql);
	if (res != NULL)
		mysql_free_result(res);
	else if (mysql_field_count(c->mysql) != 0)
		return mysql_errno(c->mysql);
	return 0;
}

unsigned sqlconn_query(struct sqlconn *c, const char *sql,
		       int (*each)(void *ctx, const struct sqlconn_row *row),
		       void *ctx)
{
	MYSQL_RES *res;
	MYSQL_ROW fields;

	bool stopped = false;
	unsigned code;

	if (c->mysql == NULL)
		return CR_SERVER_GONE_ERROR;
	/* The rows are read as they come (mysql_use_result), not stored:
	 * a long list costs no memory. */
	if (mysql_real_query(c->mysql, sql, strlen(sql)) != 0 ||
	    (res = mysql_use_result(c->mysql)) == NULL)
		return mysql_errno(c->mysql);
	while (!stopped && (fields = mysql_fetch_row(res)) != NULL) {
		struct sqlconn_row row = {
			.fields = fields,
			.lengths = mysql_fetch_lengths(res),
			.count = mysql_num_fields(res),
		};

		stopped = each(ctx, &row) != 0;
	}
	/* mysql_fetch_row returns NULL at the end and on an error alike. */
	code = stopped ? 0 : mysql_errno(c->mysql);
	mysql_free_result(res); /* reads and drops the rest */
	return code;
}

struct sqlconn_result *sqlconn_select(struct sqlconn *c, const char *sql,
				      unsigned *code)
{
	MYSQL_RES *res;

	*code = 0;
	if (c->mysql == NULL) {
		*code = CR_SERVER_GONE_ERROR;
		return NULL;
	}
	if (mysql_real_query(c->mysql, sql, strlen(sql)) != 0 ||
	    (res = mysql_store_result(c->mysql)) == NULL) {
		*code = mysql_errno(c->mysql);
		if (*code == 0)
			*code = CR_UNKNOWN_ERROR; /* a statement with no rows */
		return NULL;
	}
	return (struct sqlconn_result *)res;
}

bool sqlconn_next(struct sqlconn_result *r, struct sqlconn_row *row)
{
	MYSQL_RES *res = (MYSQL_RES *)r;
	MYSQL_ROW fields = mysql_fetch_row(res);

	if (fields == NULL)
		return false;
	row->fields = fields;
	row->lengths = mysql_fetch_lengths(res);
	row->count = mysql_num_fields(res);
	return true;
}

void sqlconn_result_free(struct sqlconn_result *r)
{
	if (r != NULL)
		mysql_free_result((MYSQL_RES *)r);
}

size_t sqlconn_escape(struct sqlconn *c, char *out, const char *text,
		      size_t len)
{
	if (c->mysql == NULL) {
		out[0] = '\0';
		return 0;
	}
	return (size_t)mysql_real_escape_string(c->mysql, out, text,
						(unsigned long)len);
}

int sqlconn_query_ids(struct sqlconn *c, const char *sql, size_t limit,
		      unsigned long long **ids, size_t *count, unsigned *code)
{
	struct sqlconn_result *res = sqlconn_select(c, sql, code);
	MYSQL_ROW row;

	*ids = NULL;
	*count = 0;
	if (res == NULL)
		return -1;
	*ids = calloc(mysql_num_rows((MYSQL_RES *)res) + 1, sizeof(**ids));
	if (*ids == NULL) {
		sqlconn_result_free(res);
		*code = 0;
		return -1;
	}
	while (*count < limit &&
	       (row = mysql_fetch_row((MYSQL_RES *)res)) != NULL) {
		uint64_t value = 0;

		if (row[0] != NULL &&
		    number_parse(row[0], UINT64_MAX, &value) != NUMBER_OK)
			value = 0;
		(*ids)[(*count)++] = value;
	}
	sqlconn_result_free(res);
	return 0;
}

static int first_u64(void *ctx, const struct sqlconn_row *row)
{
	unsigned long long *out = ctx;

	if (row->count > 0 && row->fields[0] != NULL)
		*out = strtoull(row->fields[0], NULL, 10);
	return 1;
}

unsigned sqlconn_query_u64(struct sqlconn *c, const char *sql,
			   unsigned long long *out)
{
	*out = 0;
	return sqlconn_query(c, sql, first_u64, out);
}


int sqlconn_query_number(struct sqlconn *c, const char *sql,
			 unsigned long long *out, struct error *err)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	int rc = 0;

	if (mysql_query(c->mysql, sql) != 0 ||
	    (res = mysql_store_result(c->mysql)) == NULL)
		return error_set(err, "mysql: %u %s", mysql_errno(c->mysql),
				 mysql_error(c->mysql));
	row = mysql_fetch_row(res);
	if (row == NULL || row[0] == NULL)
		rc = error_set(err, "mysql: no result for a check query");
	else
		*out = strtoull(row[0], NULL, 10);
	mysql_free_result(res);
	return rc;
}

/* What a node says of itself: Galera or not, and if so whether it takes
 * writes. */
struct node_state {
	bool galera;
	char state[32];   /* wsrep_local_state_comment: Synced, Donor/Desynced, ... */
	char cluster[32]; /* wsrep_cluster_status: Primary, non-Primary */
	char ready[8];    /* wsrep_ready: ON, OFF */
};

static bool node_writable(const struct node_state *st)
{
	return !st->galera || (strcmp(st->state, "Synced") == 0 &&
			       strcmp(st->cluster, "Primary") == 0 &&
			       strcmp(st->ready, "ON") == 0);
}

/* Runs a SHOW statement and copies the second column of each row into the
 * field of st its first column names. Returns 0, or -1 with err set. */
static int read_show(MYSQL *mysql, const char *sql, struct node_state *st,
		     struct error *err)
{
	MYSQL_RES *res;
	MYSQL_ROW row;

	if (mysql_query(mysql, sql) != 0 ||
	    (res = mysql_store_result(mysql)) == NULL)
		return error_set(err, "mysql: %u %s", mysql_errno(mysql),
				 mysql_error(mysql));
	while ((row = mysql_fetch_row(res)) != NULL) {
		char *field = NULL;
		size_t size = 0;

		if (row[0] == NULL || row[1] == NULL)
			continue;
		if (strcmp(row[0], "wsrep_on") == 0) {
			st->galera = strcmp(row[1], "ON") == 0;
		} else if (strcmp(row[0], "wsrep_local_state_comment") == 0) {
			field = st->state;
			size = sizeof(st->state);
		} else if (strcmp(row[0], "wsrep_cluster_status") == 0) {
			field = st->cluster;
			size = sizeof(st->cluster);
		} else if (strcmp(row[0], "wsrep_ready") == 0) {
			field = st->ready;
			size = sizeof(st->ready);
		}
		if (field != NULL)
			snprintf(field, size, "%s", row[1]);
	}
	mysql_free_result(res);
	return 0;
}

/* Reads whether the server runs Galera (a MySQL or a MariaDB without wsrep
 * has no wsrep_on = ON) and, if so, its node's state. */
static int read_node_state(MYSQL *mysql, struct node_state *st,
			   struct error *err)
{
	memset(st, 0, sizeof(*st));
	if (read_show(mysql, "SHOW VARIABLES LIKE 'wsrep_on'", st, err) != 0)
		return -1;
	if (!st->galera)
		return 0;
	return read_show(mysql, "SHOW STATUS WHERE Variable_name IN ("
			 "'wsrep_local_state_comment', 'wsrep_cluster_status', "
			 "'wsrep_ready')", st, err);
}

/* Opens a connection to node with the common session settings and the
 * caller's packet limit and flags. Returns it, or NULL with err set and
 * *code the MySQL error. */
static MYSQL *open_node(const struct config *cfg,
			const struct sqlconn_options *options,
			const struct endpoint *node, unsigned int *code,
			struct error *err)
{
	unsigned int connect_s = (unsigned int)cfg->mysql_connect_timeout_s;
	unsigned int read_s = (unsigned int)cfg->mysql_read_timeout_s;
	unsigned int write_s = (unsigned int)cfg->mysql_write_timeout_s;
	unsigned long packet = options->max_packet;
	my_bool reconnect = 0;
	bool socket = cfg->mysql_socket != NULL && cfg->mysql_nodes == NULL;
	MYSQL *mysql = mysql_init(NULL);

	*code = 0;
	if (mysql == NULL) {
		error_set(err, "mysql: out of memory");
		return NULL;
	}
	mysql_options(mysql, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
	mysql_options(mysql, MYSQL_OPT_READ_TIMEOUT, &read_s);
	mysql_options(mysql, MYSQL_OPT_WRITE_TIMEOUT, &write_s);
	/* The client has a packet limit of its own. */
	mysql_options(mysql, MYSQL_OPT_MAX_ALLOWED_PACKET, &packet);
	/* A silent reconnect would lose the transaction and the session settings. */
	mysql_options(mysql, MYSQL_OPT_RECONNECT, &reconnect);
	mysql_options(mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	/* A lock wait far shorter than any lease: never stuck behind a row.
	 * English messages make the log readable whatever lc_messages the
	 * server has; nothing is decided on a message's text. UTC, so that
	 * received_at and the hand-off's due times mean the same on every
	 * host. */
	mysql_options(mysql, MYSQL_INIT_COMMAND,
		      "SET SESSION innodb_lock_wait_timeout = 1, "
		      "lc_messages = 'en_US', time_zone = '+00:00'");
	/* CLIENT_FOUND_ROWS: an UPDATE reports the rows it matched. */
	if (mysql_real_connect(mysql, socket ? "localhost" : node->host,
			       cfg->mysql_user, cfg->mysql_password,
			       cfg->mysql_database, (unsigned int)node->port,
			       socket ? cfg->mysql_socket : NULL,
			       options->found_rows ? CLIENT_FOUND_ROWS : 0) ==
	    NULL) {
		*code = mysql_errno(mysql);
		if (socket)
			error_set(err, "mysql connect to %s: %u %s",
				  cfg->mysql_socket, *code, mysql_error(mysql));
		else
			error_set(err, "mysql connect to %s:%d: %u %s",
				  node->host, node->port, *code,
				  mysql_error(mysql));
		mysql_close(mysql);
		return NULL;
	}
	return mysql;
}

/* Connects to the current node and readies the session: autocommit and
 * isolation as asked, the node's Galera state checked, wsrep_sync_wait set,
 * then the caller's on_connect. Returns 0, or -1 with err set (nothing left
 * open). */
static int connect_node(struct sqlconn *c, struct error *err)
{
	const struct endpoint *node = &c->nodes[c->node];
	struct node_state st;
	unsigned int code;

	/* One server: as the configuration says now (cfg may be changed
	 * between calls, e.g. by a test moving the port). */
	if (c->cfg->mysql_nodes == NULL) {
		snprintf(c->nodes[0].host, sizeof(c->nodes[0].host), "%s",
			 c->cfg->mysql_host);
		c->nodes[0].port = c->cfg->mysql_port;
	}

	c->mysql = open_node(c->cfg, &c->options, node, &code, err);
	if (c->mysql == NULL) {
		c->connect_error = code;
		return -1;
	}
	if (mysql_autocommit(c->mysql, c->options.autocommit) != 0) {
		error_set(err, "mysql autocommit: %s", mysql_error(c->mysql));
		goto fail;
	}
	/* READ COMMITTED: a locking read takes no gap locks, and each
	 * transaction sees the rows committed before it. */
	if (c->options.read_committed &&
	    mysql_query(c->mysql, "SET SESSION TRANSACTION ISOLATION LEVEL "
				  "READ COMMITTED") != 0) {
		error_set(err, "mysql session setup: %u %s",
			  mysql_errno(c->mysql), mysql_error(c->mysql));
		goto fail;
	}
	if (read_node_state(c->mysql, &st, err) != 0)
		goto fail;
	if (!node_writable(&st)) {
		c->connect_error = SQLCONN_ER_UNKNOWN_COM;
		error_set(err, "mysql node %s:%d does not take writes: "
			  "wsrep_local_state_comment %s, wsrep_cluster_status "
			  "%s, wsrep_ready %s", node->host, node->port,
			  st.state, st.cluster, st.ready);
		goto fail;
	}
	c->galera = st.galera;
	/* Every read and every START TRANSACTION first waits for what the
	 * cluster has committed: a look-up finds a row just committed on
	 * another node, and the loser of a race on two nodes gets a clean
	 * 1062 rather than a certification failure. */
	if (c->galera && mysql_query(c->mysql,
				     "SET SESSION wsrep_sync_wait = 1") != 0) {
		error_set(err, "mysql SET wsrep_sync_wait: %u %s",
			  mysql_errno(c->mysql), mysql_error(c->mysql));
		goto fail;
	}
	for (size_t i = 0; i < c->options.statement_count &&
			   !c->options.prepare_on_use; i++) {
		if (c->options.statements != NULL &&
		    c->options.statements[i] != NULL &&
		    sqlconn_prepare_as(c, i, c->options.statements[i], err) != 0)
			goto fail;
	}
	if (c->options.on_connect != NULL &&
	    c->options.on_connect(c->options.ctx, err) != 0)
		goto fail;
	return 0;
fail:
	if (c->connect_error == 0)
		c->connect_error = mysql_errno(c->mysql);
	sqlconn_disconnect(c);
	return -1;
}

int sqlconn_connect(struct sqlconn *c, struct error *err)
{
	size_t first = c->node;

	if (c->mysql != NULL)
		return 0;
	for (size_t tried = 0; tried < c->node_count; tried++) {
		c->connect_error = 0;
		if (connect_node(c, err) == 0) {
			size_t before = c->connected_once ? c->last_node : first;

			if (c->node != before)
				log_warn("mysql: now writing to node %s:%d "
					 "(%s:%d does not take writes)",
					 c->nodes[c->node].host,
					 c->nodes[c->node].port,
					 c->nodes[before].host,
					 c->nodes[before].port);
			c->last_node = c->node;
			c->connected_once = true;
			return 0;
		}
		next_node(c);
	}
	/* Back where this call started: the preferred order is kept. */
	c->node = first;
	return -1;
}

/* Writes node number n's line for sqlconn_report_nodes to out. */
static void probe_node(const struct config *cfg, const struct endpoint *node,
		       size_t n, FILE *out)
{
	static const struct sqlconn_options plain = { .max_packet = 1UL << 20 };
	struct node_state st;
	struct error err;
	unsigned int code;
	MYSQL *mysql;

	fprintf(out, "mysql: node %zu: ", n);
	mysql = open_node(cfg, &plain, node, &code, &err);
	if (mysql == NULL) {
		fprintf(out, "WARNING: %s:%d unreachable: %s\n", node->host,
			node->port, err.message);
		return;
	}
	if (read_node_state(mysql, &st, &err) != 0)
		fprintf(out, "WARNING: %s:%d reachable, state unknown: %s\n",
			node->host, node->port, err.message);
	else if (!st.galera)
		fprintf(out, "%s:%d reachable (not Galera)\n", node->host,
			node->port);
	else if (node_writable(&st))
		fprintf(out, "%s:%d reachable, Galera %s, %s, ready %s\n",
			node->host, node->port, st.state, st.cluster, st.ready);
	else
		fprintf(out, "WARNING: %s:%d reachable, Galera %s, %s, ready "
			"%s: does not take writes\n", node->host, node->port,
			st.state, st.cluster, st.ready);
	mysql_close(mysql);
}

void sqlconn_report_nodes(const struct config *cfg, FILE *out)
{
	struct endpoint nodes[ENDPOINT_LIST_MAX];
	struct error err = { "" };
	size_t count = 0;

	if (cfg->mysql_nodes == NULL)
		return;
	if (endpoint_list_parse(cfg->mysql_nodes, cfg->mysql_port, nodes,
				&count, &err) != 0) {
		fprintf(out, "mysql: WARNING: %s\n", err.message);
		return;
	}
	for (size_t i = 0; i < count; i++)
		probe_node(cfg, &nodes[i], i + 1, out);
}
