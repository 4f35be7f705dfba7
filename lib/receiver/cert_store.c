/* cert_store.c - PayPal's signing certificates in table paypal_certs (see
 * cert_store.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cert_store.h"
#include "encoding.h"
#include "signature.h"
#include "sqlconn.h"

#define URL_MAX 500

enum { ST_GET, ST_PUT, ST_LOCK, ST_UNLOCK, STATEMENTS };
static const char *const statement_sql[STATEMENTS] = {
	[ST_GET] = "SELECT pem FROM paypal_certs WHERE url = ?",
	[ST_PUT] = "INSERT INTO paypal_certs (url, pem, not_after) VALUES "
		   "(?, ?, FROM_UNIXTIME(?)) ON DUPLICATE KEY UPDATE pem = "
		   "VALUES(pem), not_after = VALUES(not_after), fetched_at = "
		   "UTC_TIMESTAMP(6)",
	[ST_LOCK] = "SELECT GET_LOCK(?, ?)",
	[ST_UNLOCK] = "SELECT RELEASE_LOCK(?)",
};

struct cert_store {
	struct sqlconn *conn;
};

struct cert_store *cert_store_new(const struct config *cfg, struct error *err)
{
	struct cert_store *s = calloc(1, sizeof(*s));
	struct sqlconn_options options = {
		.max_packet = 2 * CERT_STORE_PEM_MAX + 65536,
		.autocommit = true,
		.statements = statement_sql,
		.statement_count = STATEMENTS,
		.prepare_on_use = true,
	};

	if (s == NULL) {
		error_set(err, "paypal certificates: out of memory");
		return NULL;
	}
	s->conn = sqlconn_new(cfg, &options, err);
	if (s->conn == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

void cert_store_free(struct cert_store *s)
{
	if (s == NULL)
		return;
	sqlconn_free(s->conn);
	free(s);
}

static void bind_text(MYSQL_BIND *b, const char *text, unsigned long *len)
{
	*len = (unsigned long)strlen(text);
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = (void *)text;
	b->buffer_length = *len;
	b->length = len;
}

/* Runs which (connected first). Returns 0, or -1 with err set and the
 * connection to sqlconn's classifier. */
static int run(struct cert_store *s, size_t which, MYSQL_BIND *params,
	       MYSQL_BIND *results, struct error *err)
{
	unsigned code;

	if (sqlconn_connect(s->conn, err) != 0)
		return -1;
	code = sqlconn_run(s->conn, which, params, results);
	if (code == 0)
		return 0;
	if (code == SQLCONN_ER_NO_SUCH_TABLE)
		error_set(err, "table paypal_certs missing (run "
			  "db/migrate-15-paypal-certs.sql)");
	else
		error_set(err, "paypal certificates: mysql: %u %s", code,
			  sqlconn_message(s->conn, which));
	sqlconn_fail(s->conn, code, false);
	return -1;
}

/* The lock's name: a hash of the URL, within GET_LOCK's 64 characters. */
static void lock_name(const char *url, char name[96])
{
	struct signature_part part = { url, strlen(url) };
	unsigned char digest[SIGNATURE_MAC_LEN];
	char hex[2 * SIGNATURE_MAC_LEN + 1];

	if (signature_parts_sha256(&part, 1, digest) != 0)
		memset(digest, 0, sizeof(digest));
	encoding_hex_encode(digest, 20, hex);
	snprintf(name, 96, "payhook-paypal-cert:%s", hex);
}

int cert_store_get(struct cert_store *s, const char *url, char *pem,
		   struct error *err)
{
	MYSQL_BIND param[1], out[1];
	unsigned long len, pem_len = 0;
	my_bool is_null = 0;
	unsigned code = 0;
	int rc;

	if (strlen(url) > URL_MAX)
		return 0;
	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	bind_text(&param[0], url, &len);
	out[0].buffer_type = MYSQL_TYPE_STRING;
	out[0].buffer = pem;
	out[0].buffer_length = CERT_STORE_PEM_MAX;
	out[0].length = &pem_len;
	out[0].is_null = &is_null;
	if (run(s, ST_GET, param, out, err) != 0)
		return -1;
	rc = sqlconn_fetch(s->conn, ST_GET, &code);
	sqlconn_done(s->conn, ST_GET);
	if (rc < 0) {
		error_set(err, "paypal certificates: mysql: %u", code);
		sqlconn_fail(s->conn, code, false);
		return -1;
	}
	/* None, or one too long for the buffer: taken as none. */
	if (rc == 0 || is_null || pem_len > CERT_STORE_PEM_MAX)
		return 0;
	pem[pem_len] = '\0';
	return 1;
}

int cert_store_put(struct cert_store *s, const char *url, const char *pem,
		   int64_t not_after, struct error *err)
{
	MYSQL_BIND param[3];
	unsigned long len[2];
	long long when = not_after;

	if (strlen(url) > URL_MAX || strlen(pem) > CERT_STORE_PEM_MAX)
		return error_set(err, "paypal certificates: too long to keep");
	memset(param, 0, sizeof(param));
	bind_text(&param[0], url, &len[0]);
	bind_text(&param[1], pem, &len[1]);
	param[2].buffer_type = MYSQL_TYPE_LONGLONG;
	param[2].buffer = &when;
	return run(s, ST_PUT, param, NULL, err);
}

int cert_store_lock(struct cert_store *s, const char *url, long timeout_ms,
		    struct error *err)
{
	MYSQL_BIND param[2], out[1];
	unsigned long len;
	char name[96];
	double seconds = (double)timeout_ms / 1000.0;
	long long got = 0;
	my_bool is_null = 0;
	unsigned code = 0;
	int rc;

	lock_name(url, name);
	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	bind_text(&param[0], name, &len);
	param[1].buffer_type = MYSQL_TYPE_DOUBLE;
	param[1].buffer = &seconds;
	out[0].buffer_type = MYSQL_TYPE_LONGLONG;
	out[0].buffer = &got;
	out[0].is_null = &is_null;
	if (run(s, ST_LOCK, param, out, err) != 0)
		return -1;
	rc = sqlconn_fetch(s->conn, ST_LOCK, &code);
	sqlconn_done(s->conn, ST_LOCK);
	if (rc < 0) {
		error_set(err, "paypal certificates: mysql: %u", code);
		sqlconn_fail(s->conn, code, false);
		return -1;
	}
	return rc == 1 && !is_null && got == 1 ? 1 : 0;
}

void cert_store_unlock(struct cert_store *s, const char *url)
{
	MYSQL_BIND param[1], out[1];
	unsigned long len;
	long long freed = 0;
	char name[96];
	struct error err;
	unsigned code;

	lock_name(url, name);
	memset(param, 0, sizeof(param));
	memset(out, 0, sizeof(out));
	bind_text(&param[0], name, &len);
	out[0].buffer_type = MYSQL_TYPE_LONGLONG;
	out[0].buffer = &freed;
	if (run(s, ST_UNLOCK, param, out, &err) != 0)
		return;
	while (sqlconn_fetch(s->conn, ST_UNLOCK, &code) == 1)
		;
	sqlconn_done(s->conn, ST_UNLOCK);
}
