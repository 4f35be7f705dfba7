/* store.c - the payments row under the unique key (see store.h). */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <errmsg.h>
#include <mysql.h>

#include "endpoint.h"
#include "log.h"
#include "store.h"
#include "timing.h"

/* Server error codes we decide on (mysqld_error.h names them ER_*). */
#define STORE_ER_DUP_ENTRY 1062
#define STORE_ER_LOCK_WAIT_TIMEOUT 1205
#define STORE_ER_LOCK_DEADLOCK 1213
#define STORE_ER_UNKNOWN_COM 1047             /* Galera: node not ready */
#define STORE_ER_SERVER_SHUTDOWN 1053
#define STORE_ER_OPTION_PREVENTS 1290         /* read_only */
#define STORE_ER_CONNECTION_KILLED 1927       /* MariaDB: KILL, shutdown */
#define STORE_ER_STATEMENT_TIMEOUT 1969       /* MariaDB: max_statement_time */
#define STORE_ER_CLIENT_INTERACTION_TIMEOUT 4031 /* MySQL 8.0.24+: wait_timeout */

#define UNIQUE_KEY "uq_payments_provider_transaction_id"
/* What a body needs beside itself in the INSERT's packet. */
#define PACKET_OVERHEAD 4096UL

#define INSERT_SQL                                                             \
	"INSERT INTO payments (provider, transaction_id, event_id, amount, "   \
	"currency, payload) VALUES (?, ?, ?, ?, ?, ?)"
static const char insert_sql[] = INSERT_SQL;
/* The one-round-trip write (see write_once): MariaDB ends the statement,
 * and rolls it back, once it has run this many seconds. */
static const char bounded_insert_format[] =
	"SET STATEMENT max_statement_time = %.3f FOR " INSERT_SQL;
static const char select_sql[] =
	"SELECT amount, currency FROM payments "
	"WHERE provider = ? AND transaction_id = ?";

struct store {
	const struct config *cfg;
	/* The servers, in the order of preference: mysql_nodes, or the one
	 * of mysql_host/mysql_port (or mysql_socket). A worker stays on the
	 * node it writes to until that node fails, then moves to the next. */
	struct endpoint nodes[ENDPOINT_LIST_MAX];
	size_t node_count;
	size_t node;           /* index of the node in use or tried next */
	bool galera;           /* the connected server runs wsrep */
	/* The INSERT commits by itself in one round trip, bounded on the
	 * server (MariaDB, not Galera); otherwise START TRANSACTION, INSERT,
	 * COMMIT. */
	bool one_round_trip;
	bool in_transaction;   /* between START TRANSACTION and its end */
	MYSQL *mysql;          /* NULL while not connected */
	MYSQL_STMT *insert;
	MYSQL_STMT *select;
	bool fresh;            /* connected during the current call */
	bool packet_checked;   /* max_allowed_packet compared once per process */
	unsigned last_error;   /* see store_last_error */
};

static const char *const status_names[] = {
	[STORE_INSERTED] = "inserted",
	[STORE_DUPLICATE] = "duplicate",
	[STORE_CONFLICT] = "conflict",
	[STORE_NOT_FOUND] = "not found",
	[STORE_RETRYABLE] = "retryable",
	[STORE_UNKNOWN_OUTCOME] = "unknown outcome",
	[STORE_LEASE_EXPIRED] = "lease expired",
	[STORE_UNAVAILABLE] = "unavailable",
};

unsigned store_last_error(const struct store *store)
{
	return store->last_error;
}

const char *store_status_name(enum store_status status)
{
	if ((unsigned)status >= sizeof(status_names) / sizeof(status_names[0]))
		return "?";
	return status_names[status];
}

struct store *store_new(const struct config *cfg, struct error *err)
{
	struct store *store = calloc(1, sizeof(*store));

	if (store == NULL) {
		error_set(err, "store: out of memory");
		return NULL;
	}
	store->cfg = cfg;
	/* One server: nodes[0] is filled from the configuration at each
	 * connect (connect_node). */
	if (cfg->mysql_nodes == NULL) {
		store->node_count = 1;
	} else if (endpoint_list_parse(cfg->mysql_nodes, cfg->mysql_port,
				       store->nodes, &store->node_count,
				       err) != 0) {
		free(store);
		return NULL;
	}
	return store;
}

size_t store_node_count(const struct store *store)
{
	return store->node_count;
}

static void store_disconnect(struct store *store)
{
	if (store->insert != NULL)
		mysql_stmt_close(store->insert);
	if (store->select != NULL)
		mysql_stmt_close(store->select);
	if (store->mysql != NULL)
		mysql_close(store->mysql);
	store->insert = NULL;
	store->select = NULL;
	store->mysql = NULL;
	store->in_transaction = false;
}

void store_free(struct store *store)
{
	if (store == NULL)
		return;
	store_disconnect(store);
	free(store);
}

/* Client-side errors (CR_*, 2000-2999) mean the connection can't be trusted. */
static bool is_client_error(unsigned int code)
{
	return code >= 2000 && code < 3000;
}

/* Errors that end the session itself: the server closed it (MySQL's
 * wait_timeout, MariaDB's KILL) or the client lost it. */
static bool is_connection_lost(unsigned int code)
{
	return is_client_error(code) ||
	       code == STORE_ER_CLIENT_INTERACTION_TIMEOUT ||
	       code == STORE_ER_CONNECTION_KILLED;
}

static MYSQL_STMT *prepare(struct store *store, const char *sql,
			   struct error *err)
{
	MYSQL_STMT *stmt = mysql_stmt_init(store->mysql);

	if (stmt == NULL) {
		error_set(err, "mysql: out of memory preparing a statement");
		return NULL;
	}
	if (mysql_stmt_prepare(stmt, sql, strlen(sql)) != 0) {
		error_set(err, "mysql prepare: %u %s", mysql_stmt_errno(stmt),
			  mysql_stmt_error(stmt));
		mysql_stmt_close(stmt);
		return NULL;
	}
	return stmt;
}

/* Runs a query with one numeric result and stores it in *out. Returns 0, or
 * -1 with err set (the connection is left to the caller). */
static int query_number(struct store *store, const char *sql,
			unsigned long long *out, struct error *err)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	int rc = 0;

	if (mysql_query(store->mysql, sql) != 0 ||
	    (res = mysql_store_result(store->mysql)) == NULL)
		return error_set(err, "mysql: %u %s", mysql_errno(store->mysql),
				 mysql_error(store->mysql));
	row = mysql_fetch_row(res);
	if (row == NULL || row[0] == NULL)
		rc = error_set(err, "mysql: no result for a check query");
	else
		*out = strtoull(row[0], NULL, 10);
	mysql_free_result(res);
	return rc;
}

/* The server's max_allowed_packet must take the largest body with the rest
 * of the INSERT, or such a body gets 503 on every retry. Returns 0, or -1
 * with err set. */
static int check_packet_size(struct store *store, struct error *err)
{
	unsigned long long packet = 0;
	unsigned long long need = (unsigned long long)store->cfg->max_body_bytes +
				  PACKET_OVERHEAD;

	if (query_number(store, "SELECT @@max_allowed_packet", &packet, err) != 0)
		return -1;
	if (packet < need)
		return error_set(err, "the server's max_allowed_packet is %llu "
				 "bytes: a body of max_body_bytes = %zu needs "
				 "%llu; raise max_allowed_packet or lower "
				 "max_body_bytes", packet,
				 store->cfg->max_body_bytes, need);
	return 0;
}

/* Errors that say a node is gone or does not serve writes (down, killed,
 * shutting down, read-only, or a Galera node outside the primary component):
 * the next connection goes to the next node of mysql_nodes. */
static bool is_node_failure(unsigned int code)
{
	return code == CR_CONNECTION_ERROR || code == CR_CONN_HOST_ERROR ||
	       code == CR_SERVER_GONE_ERROR || code == CR_SERVER_LOST ||
	       code == STORE_ER_UNKNOWN_COM || code == STORE_ER_SERVER_SHUTDOWN ||
	       code == STORE_ER_OPTION_PREVENTS ||
	       code == STORE_ER_CONNECTION_KILLED;
}

static void next_node(struct store *store)
{
	store->node = (store->node + 1) % store->node_count;
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

/* Opens a connection to node with payhook's session settings. Returns it,
 * or NULL with err set and *code the MySQL error. */
static MYSQL *open_node(const struct config *cfg, const struct endpoint *node,
			unsigned int *code, struct error *err)
{
	unsigned int connect_s = (unsigned int)cfg->mysql_connect_timeout_s;
	unsigned int read_s = (unsigned int)cfg->mysql_read_timeout_s;
	unsigned int write_s = (unsigned int)cfg->mysql_write_timeout_s;
	unsigned long packet = (unsigned long)cfg->max_body_bytes +
			       PACKET_OVERHEAD;
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
	/* A lock wait far shorter than the lease: never stuck behind a row.
	 * English messages make the log readable whatever lc_messages the
	 * server has; nothing is decided on a message's text. UTC, so that
	 * received_at and the hand-off's due times mean the same on every
	 * host. */
	mysql_options(mysql, MYSQL_INIT_COMMAND,
		      "SET SESSION innodb_lock_wait_timeout = 1, "
		      "lc_messages = 'en_US', time_zone = '+00:00'");
	if (mysql_real_connect(mysql, socket ? "localhost" : node->host,
			       cfg->mysql_user, cfg->mysql_password,
			       cfg->mysql_database, (unsigned int)node->port,
			       socket ? cfg->mysql_socket : NULL, 0) == NULL) {
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

/* Prepares the INSERT: bounded by max_statement_time where the server has
 * it (MariaDB) and the write is one statement (not on Galera, whose writes
 * go in an explicit transaction); a server without it (MySQL answers 1064
 * to SET STATEMENT) gets the plain one, in a transaction. The bound is a
 * little under the client's read timeout, so that the server, not the
 * client, gives up on a slow INSERT: a definite rollback instead of an
 * unknown outcome. */
static int prepare_insert(struct store *store, struct error *err)
{
	char sql[sizeof(bounded_insert_format) + 32];
	struct error unsupported;

	store->one_round_trip = false;
	if (!store->galera) {
		snprintf(sql, sizeof(sql), bounded_insert_format,
			 store->cfg->mysql_read_timeout_s - 0.25);
		store->insert = prepare(store, sql, &unsupported);
		if (store->insert != NULL) {
			store->one_round_trip = true;
			return 0;
		}
	}
	store->insert = prepare(store, insert_sql, err);
	return store->insert != NULL ? 0 : -1;
}

/* Connects to the current node and readies the session: autocommit on,
 * the node's Galera state checked, wsrep_sync_wait set, statements
 * prepared. Returns 0, or -1 with err set (nothing left open). */
static int connect_node(struct store *store, struct error *err)
{
	const struct endpoint *node = &store->nodes[store->node];
	struct node_state st;
	unsigned int code;

	/* One server: as the configuration says now (cfg may be changed
	 * between calls, e.g. by a test moving the port). */
	if (store->cfg->mysql_nodes == NULL) {
		snprintf(store->nodes[0].host, sizeof(store->nodes[0].host),
			 "%s", store->cfg->mysql_host);
		store->nodes[0].port = store->cfg->mysql_port;
	}

	store->mysql = open_node(store->cfg, node, &code, err);
	if (store->mysql == NULL) {
		store->last_error = code;
		return -1;
	}
	/* Every statement outside an explicit transaction commits by itself:
	 * a look-up holds no snapshot, and the one-statement write commits
	 * in its own round trip. */
	if (mysql_autocommit(store->mysql, 1) != 0) {
		error_set(err, "mysql autocommit on: %s", mysql_error(store->mysql));
		goto fail;
	}
	if (read_node_state(store->mysql, &st, err) != 0)
		goto fail;
	if (!node_writable(&st)) {
		store->last_error = STORE_ER_UNKNOWN_COM;
		error_set(err, "mysql node %s:%d does not take writes: "
			  "wsrep_local_state_comment %s, wsrep_cluster_status "
			  "%s, wsrep_ready %s", node->host, node->port,
			  st.state, st.cluster, st.ready);
		goto fail;
	}
	store->galera = st.galera;
	/* Every read and every START TRANSACTION first waits for what the
	 * cluster has committed: the duplicate look-up finds a row just
	 * committed on another node, and the loser of a race on two nodes
	 * gets a clean 1062 rather than a certification failure. */
	if (store->galera && mysql_query(store->mysql,
					 "SET SESSION wsrep_sync_wait = 1") != 0) {
		error_set(err, "mysql SET wsrep_sync_wait: %u %s",
			  mysql_errno(store->mysql), mysql_error(store->mysql));
		goto fail;
	}
	if (!store->packet_checked) {
		struct error packet_err;

		/* Once per process: a log line, not a refusal (--check-config
		 * refuses). */
		store->packet_checked = true;
		if (check_packet_size(store, &packet_err) != 0)
			log_warn("%s", packet_err.message);
	}
	if (prepare_insert(store, err) != 0)
		goto fail;
	store->select = prepare(store, select_sql, err);
	if (store->select == NULL)
		goto fail;
	return 0;
fail:
	if (store->last_error == 0)
		store->last_error = mysql_errno(store->mysql);
	store_disconnect(store);
	return -1;
}

int store_connect(struct store *store, struct error *err)
{
	size_t first = store->node;

	if (store->mysql != NULL)
		return 0;
	store->fresh = true;
	for (size_t tried = 0; tried < store->node_count; tried++) {
		store->last_error = 0;
		if (connect_node(store, err) == 0) {
			if (store->node != first)
				log_warn("mysql: now writing to node %s:%d "
					 "(%s:%d does not take writes)",
					 store->nodes[store->node].host,
					 store->nodes[store->node].port,
					 store->nodes[first].host,
					 store->nodes[first].port);
			return 0;
		}
		next_node(store);
	}
	/* Back where this call started: the preferred order is kept. */
	store->node = first;
	return -1;
}

int store_probe_node(struct store *store, size_t index, char *out,
		     size_t out_size)
{
	const struct endpoint *node = &store->nodes[index];
	struct node_state st;
	struct error err;
	unsigned int code;
	MYSQL *mysql;
	int rc;

	mysql = open_node(store->cfg, node, &code, &err);
	if (mysql == NULL) {
		snprintf(out, out_size, "%s:%d unreachable: %s", node->host,
			 node->port, err.message);
		return -1;
	}
	if (read_node_state(mysql, &st, &err) != 0) {
		snprintf(out, out_size, "%s:%d reachable, state unknown: %s",
			 node->host, node->port, err.message);
		rc = -1;
	} else if (!st.galera) {
		snprintf(out, out_size, "%s:%d reachable (not Galera)",
			 node->host, node->port);
		rc = 0;
	} else {
		rc = node_writable(&st) ? 0 : -1;
		snprintf(out, out_size, "%s:%d reachable, Galera %s, %s, ready "
			 "%s%s", node->host, node->port, st.state, st.cluster,
			 st.ready, rc == 0 ? "" : ": does not take writes");
	}
	mysql_close(mysql);
	return rc;
}

int store_ping(struct store *store, struct error *err)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		store->fresh = false;
		if (store_connect(store, err) != 0)
			return -1;
		if (mysql_ping(store->mysql) == 0)
			return 0;
		error_set(err, "mysql ping: %u %s", mysql_errno(store->mysql),
			  mysql_error(store->mysql));
		store_disconnect(store);
		/* A kept connection the server closed (a restart) says nothing
		 * of the server now: one fresh connection decides. */
		if (store->fresh)
			break;
	}
	return -1;
}

int store_check_schema(struct store *store, struct error *err)
{
	static const char key_sql[] =
		"SELECT COALESCE(SUM(non_unique = 0 AND ("
		"(seq_in_index = 1 AND column_name = 'provider') OR "
		"(seq_in_index = 2 AND column_name = 'transaction_id'))), 0) "
		"* 10 + COUNT(*) FROM information_schema.statistics "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND index_name = '" UNIQUE_KEY "'";
	static const char columns_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' AND ("
		"(column_name = 'transaction_id' AND data_type = 'varbinary') OR "
		"(column_name = 'provider' AND data_type = 'varchar') OR "
		"(column_name = 'event_id' AND data_type = 'varbinary') OR "
		"column_name IN ('amount', 'currency', 'payload', 'received_at'))";
	static const char old_key_sql[] =
		"SELECT COUNT(*) FROM information_schema.statistics "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND index_name = 'uq_payments_transaction_id'";
	unsigned long long key = 0, columns = 0, old_key = 0;
	int rc = 0;

	if (store_connect(store, err) != 0)
		return -1;
	if (query_number(store, columns_sql, &columns, err) != 0 ||
	    query_number(store, key_sql, &key, err) != 0 ||
	    query_number(store, old_key_sql, &old_key, err) != 0) {
		store_disconnect(store);
		return -1;
	}
	if (old_key > 0 && key == 0)
		rc = error_set(err, "table payments is of an older payhook: run "
			       "db/migrate-2-providers.sql");
	else if (columns != 7)
		rc = error_set(err, "table payments lacks a column payhook writes, "
			       "or transaction_id is not VARBINARY (compared "
			       "byte for byte): load db/schema.sql");
	/* Two rows, both unique and in this order: 2 * 10 + 2. */
	else if (key != 22)
		rc = error_set(err, "unique key " UNIQUE_KEY " must cover exactly "
			       "(provider, transaction_id): a key over more "
			       "columns lets one transaction be recorded twice; "
			       "load db/schema.sql");
	else if (check_packet_size(store, err) != 0)
		rc = -1;
	mysql_rollback(store->mysql);
	return rc;
}

/* Ends the current transaction, if one is open, without effect; a
 * connection that can't even do that is dropped, to be reopened by the next
 * request. (Outside one, a failed statement has already been rolled back.) */
static void store_rollback(struct store *store)
{
	if (store->mysql == NULL || !store->in_transaction)
		return;
	store->in_transaction = false;
	if (mysql_rollback(store->mysql) != 0)
		store_disconnect(store);
}

/* After a failed call: a lost connection is dropped (status client_status);
 * a server error rolls back and is retryable for deadlocks (on Galera also
 * a certification failure) and lock wait timeouts. Any other server error
 * (read-only after a failover, a missing table, a node not ready) also
 * drops the connection: the next request reconnects, which may reach the
 * server that now takes writes. A failure of the node itself sends the next
 * connection to the next node. */
static enum store_status classify_failure(struct store *store,
					  unsigned int code,
					  enum store_status client_status)
{
	enum store_status status = STORE_UNAVAILABLE;

	store->last_error = code;
	if (is_connection_lost(code)) {
		store_disconnect(store);
		status = client_status;
	} else {
		store_rollback(store);
		if (code == STORE_ER_LOCK_DEADLOCK ||
		    code == STORE_ER_LOCK_WAIT_TIMEOUT ||
		    code == STORE_ER_STATEMENT_TIMEOUT)
			return STORE_RETRYABLE;
		store_disconnect(store);
	}
	if (is_node_failure(code))
		next_node(store);
	return status;
}

/* Maps a failed statement to a status, fills err, and cleans up. */
static enum store_status statement_failed(struct store *store, MYSQL_STMT *stmt,
					  const char *what, struct error *err)
{
	unsigned int code = mysql_stmt_errno(stmt);

	error_set(err, "mysql %s: %u %s", what, code, mysql_stmt_error(stmt));
	return classify_failure(store, code, STORE_UNAVAILABLE);
}

/* True when a statement failed at once with code on a connection kept from
 * an earlier request: the signature of a server that restarted or closed an
 * idle session in between. A failure that took longer may be a timeout, and
 * is not retried (the time is already spent). Drops the connection in that
 * case. */
static bool stale_connection_failed(struct store *store, unsigned int code,
				    int64_t started_us)
{
	if (store->fresh || !is_connection_lost(code) ||
	    timing_now_us() - started_us > 500000)
		return false;
	store_disconnect(store);
	return true;
}

static const char *provider_of(const struct payment *payment)
{
	return payment->provider != NULL ? payment->provider : "standard";
}

static void bind_text(MYSQL_BIND *bind, const char *text, unsigned long *length)
{
	*length = (unsigned long)strlen(text);
	bind->buffer_type = MYSQL_TYPE_STRING;
	bind->buffer = (void *)text;
	bind->buffer_length = *length;
	bind->length = length;
}

/* Binds (provider, transaction_id) to the first two parameters. */
static void bind_key(MYSQL_BIND *bind, const struct payment *payment,
		     unsigned long lengths[2])
{
	bind_text(&bind[0], provider_of(payment), &lengths[0]);
	lengths[1] = (unsigned long)payment->transaction_id_len;
	bind[1].buffer_type = MYSQL_TYPE_STRING;
	bind[1].buffer = (void *)payment->transaction_id;
	bind[1].buffer_length = lengths[1];
	bind[1].length = &lengths[1];
}

enum store_status store_find_payment(struct store *store,
				     const struct payment *payment,
				     struct error *err)
{
	MYSQL_BIND param[2], out[2];
	unsigned long key_len[2], currency_len = 0;
	unsigned long long amount = 0;
	char currency[8] = "";
	my_bool amount_null = 0, currency_null = 0;
	enum store_status status;
	int rc;

	store->fresh = false;
	if (store_connect(store, err) != 0)
		return STORE_UNAVAILABLE;
	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	bind_key(param, payment, key_len);
	out[0].buffer_type = MYSQL_TYPE_LONGLONG;
	out[0].buffer = &amount;
	out[0].is_unsigned = 1;
	out[0].is_null = &amount_null;
	out[1].buffer_type = MYSQL_TYPE_STRING;
	out[1].buffer = currency;
	out[1].buffer_length = sizeof(currency) - 1;
	out[1].length = &currency_len;
	out[1].is_null = &currency_null;

	for (int attempt = 0;; attempt++) {
		int64_t started_us = timing_now_us();

		if (mysql_stmt_bind_param(store->select, param) == 0 &&
		    mysql_stmt_bind_result(store->select, out) == 0 &&
		    mysql_stmt_execute(store->select) == 0 &&
		    mysql_stmt_store_result(store->select) == 0)
			break;
		if (attempt > 0 ||
		    !stale_connection_failed(store,
					     mysql_stmt_errno(store->select),
					     started_us))
			return statement_failed(store, store->select, "select",
						err);
		if (store_connect(store, err) != 0)
			return STORE_UNAVAILABLE;
	}

	rc = mysql_stmt_fetch(store->select);
	if (rc == MYSQL_NO_DATA) {
		status = STORE_NOT_FOUND;
	} else if (rc == 0 || rc == MYSQL_DATA_TRUNCATED) {
		bool same = !amount_null && !currency_null &&
			    amount == (unsigned long long)payment->amount &&
			    currency_len == 3 &&
			    memcmp(currency, payment->currency, 3) == 0;
		status = same ? STORE_DUPLICATE : STORE_CONFLICT;
	} else {
		mysql_stmt_free_result(store->select);
		return statement_failed(store, store->select, "fetch", err);
	}
	mysql_stmt_free_result(store->select);
	return status;
}

static bool guard_refuses(const struct store_guard *guard, long needed_ms)
{
	return guard != NULL && guard->enough_lease(guard->ctx, needed_ms) != 0;
}

/* After a 1062: the row that collided is ours only if the transaction is
 * there now. The lookup decides, not the message (whose text depends on the
 * server's language and whose key name differs between MySQL and MariaDB). */
static enum store_status duplicate_entry(struct store *store,
					 const struct payment *payment,
					 struct error *err)
{
	char message[ERROR_MESSAGE_MAX];
	enum store_status status;

	store->last_error = STORE_ER_DUP_ENTRY;
	snprintf(message, sizeof(message), "mysql insert: 1062 %s",
		 mysql_stmt_error(store->insert));
	store_rollback(store);
	status = store_find_payment(store, payment, err);
	if (status == STORE_NOT_FOUND) {
		error_set(err, "%s (on another unique key: not a duplicate)",
			  message);
		return STORE_UNAVAILABLE;
	}
	return status;
}

/* The transaction of a write in more than one round trip. On Galera,
 * wsrep_sync_wait makes START TRANSACTION wait for every row committed
 * anywhere in the cluster. Returns 0 or the MySQL error. */
static unsigned int begin_write(struct store *store)
{
	static const char begin_sql[] = "START TRANSACTION";

	if (store->one_round_trip)
		return 0;
	if (mysql_real_query(store->mysql, begin_sql, sizeof(begin_sql) - 1) != 0)
		return mysql_errno(store->mysql);
	store->in_transaction = true;
	return 0;
}

/* One attempt at the write under the guard. Where the server allows it the
 * INSERT commits by itself in one round trip: the guard asks for one round
 * trip of lease before it is sent, and the server ends it within
 * max_statement_time (less than that round trip) of starting it, so no
 * commit lands after the lease. Otherwise START TRANSACTION, INSERT, and a
 * COMMIT sent only while the lease still covers it. */
static enum store_status write_once(struct store *store,
				    const struct payment *payment,
				    MYSQL_BIND *param,
				    const struct store_guard *guard,
				    struct error *err)
{
	long round_trip_ms = config_round_trip_bound_ms(store->cfg);
	unsigned int code;

	for (int attempt = 0;; attempt++) {
		int64_t started_us;
		bool at_insert = false;

		if (guard_refuses(guard, (store->one_round_trip ? 1 : 2) *
					 round_trip_ms)) {
			error_set(err, "lease too short to start the write");
			return STORE_LEASE_EXPIRED;
		}
		started_us = timing_now_us();
		code = begin_write(store);
		if (code == 0) {
			at_insert = true;
			if (mysql_stmt_bind_param(store->insert, param) != 0)
				return statement_failed(store, store->insert,
							"insert bind", err);
			if (mysql_stmt_execute(store->insert) == 0)
				break;
			code = mysql_stmt_errno(store->insert);
		}
		if (attempt == 0 &&
		    stale_connection_failed(store, code, started_us)) {
			/* The kept connection was dead before this request: a
			 * server that restarted or closed it. One fresh
			 * attempt is safe: had the write reached the server
			 * and committed after all, the attempt gets 1062 and
			 * the look-up finds the row. */
			if (store_connect(store, err) != 0)
				return STORE_UNAVAILABLE;
			continue;
		}
		if (code == STORE_ER_DUP_ENTRY)
			return duplicate_entry(store, payment, err);
		error_set(err, "mysql %s: %u %s",
			  at_insert ? "insert" : "start transaction", code,
			  at_insert ? mysql_stmt_error(store->insert)
				    : mysql_error(store->mysql));
		/* A connection lost during a self-committing INSERT leaves its
		 * outcome as unknown as one lost during COMMIT. */
		return classify_failure(store, code,
					at_insert && store->one_round_trip ?
						STORE_UNKNOWN_OUTCOME :
						STORE_UNAVAILABLE);
	}
	if (store->one_round_trip)
		return STORE_INSERTED;
	if (guard_refuses(guard, round_trip_ms)) {
		store_rollback(store);
		error_set(err, "lease ran out before COMMIT: rolled back");
		return STORE_LEASE_EXPIRED;
	}
	store->in_transaction = false;
	if (mysql_commit(store->mysql) != 0) {
		code = mysql_errno(store->mysql);
		error_set(err, "mysql commit: %u %s", code, mysql_error(store->mysql));
		/* A broken connection during COMMIT: the server may or may not
		 * have committed, and nobody can know. */
		return classify_failure(store, code, STORE_UNKNOWN_OUTCOME);
	}
	return STORE_INSERTED;
}

enum store_status store_insert_payment(struct store *store,
				       const struct payment *payment,
				       const void *payload, size_t payload_len,
				       const struct store_guard *guard,
				       struct error *err)
{
	MYSQL_BIND param[6];
	unsigned long key_len[2], event_len, currency_len = 3;
	unsigned long payload_len_ul = payload_len;
	unsigned long long amount = (unsigned long long)payment->amount;
	my_bool no_event = payment->event_id_len == 0;
	enum store_status status;

	store->fresh = false;
	store->last_error = 0;
	if (store_connect(store, err) != 0)
		return STORE_UNAVAILABLE;

	memset(param, 0, sizeof(param));
	bind_key(param, payment, key_len);
	event_len = (unsigned long)payment->event_id_len;
	param[2].buffer_type = MYSQL_TYPE_STRING;
	param[2].buffer = (void *)payment->event_id;
	param[2].buffer_length = event_len;
	param[2].length = &event_len;
	param[2].is_null = &no_event;
	param[3].buffer_type = MYSQL_TYPE_LONGLONG;
	param[3].buffer = &amount;
	param[3].is_unsigned = 1;
	param[4].buffer_type = MYSQL_TYPE_STRING;
	param[4].buffer = (void *)payment->currency;
	param[4].buffer_length = 3;
	param[4].length = &currency_len;
	param[5].buffer_type = MYSQL_TYPE_BLOB;
	param[5].buffer = (void *)payload;
	param[5].buffer_length = payload_len_ul;
	param[5].length = &payload_len_ul;

	status = write_once(store, payment, param, guard, err);
	if (status == STORE_RETRYABLE && store->galera &&
	    store->last_error == STORE_ER_LOCK_DEADLOCK) {
		/* On Galera the loser of a race between two nodes gets 1213
		 * (at INSERT or at COMMIT): rolled back, nothing written. One
		 * re-run within the lease normally finds the winner's row and
		 * answers a clean duplicate. (On a single server a 1213 is a
		 * deadlock with the merchant's own work, e.g. a trigger: 503,
		 * and the provider's retry comes later.) */
		log_info("mysql: %s: running the write once more", err->message);
		if (store_connect(store, err) != 0)
			return STORE_UNAVAILABLE;
		status = write_once(store, payment, param, guard, err);
	}
	return status;
}
