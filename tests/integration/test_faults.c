/* test_faults.c - payhook's fault behaviour against a real redis-server, a
 * real mariadbd and silent listeners, started by faults.test.
 *
 * Every test asserts what a user sees: the outcome and its status, how long
 * the answer took (a hang bound, see HANG_BOUND_MS), the rows in payments, the
 * keys in Redis, and that the same pipeline serves the next request correctly
 * once the fault is gone. Faults are real: silent ports, SIGSTOP, triggers
 * that sleep, read_only, a renamed table, InnoDB deadlocks and lock waits, a
 * worker killed with SIGKILL. Nothing is mocked.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <mysql.h>

#include "configuration.h"
#include "itest.h"
#include "lock.h"
#include "pipeline.h"
#include "response.h"

/* The longest an answer may take when a backend stalls, for a fault whose
 * configured timeout is t ms: three times t plus 2 s. This is a hang bound,
 * not a performance assertion: it proves the request did not hang (or wait
 * for the server to finish) while leaving room for a slow, shared machine and
 * for valgrind. */
#define HANG_BOUND_MS(t) (3L * (t) + 2000L)

#define BODY_MAX 512

/* ---- small helpers ---- */

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long ms_since(long long start_us)
{
	return (long)((now_us() - start_us) / 1000);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int env_int(const char *name)
{
	const char *value = getenv(name);

	ck_assert_msg(value != NULL && *value != '\0',
		      "%s is not set: run this through faults.test", name);
	return atoi(value);
}

/* One line on stdout for the log of the run, e.g. how long a timeout took. */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	fputs("# faults: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

/* ---- harness access (tests/lib/harness-ctl.sh) ---- */

#define ctl itest_ctl

/* ---- MySQL as the test sees it (libmysqlclient, not payhook's code) ---- */

static struct config cfg;
static MYSQL *admin; /* root over the harness's socket, autocommit on */

/* Opens a connection to database payhook: the admin account over the unix
 * socket (user NULL), or user/password over TCP. A 10 s read timeout keeps a
 * broken scenario from hanging the test. */
static MYSQL *db_open(const char *user, const char *password)
{
	const char *socket_path = getenv("MYSQL_SOCKET");
	unsigned int timeout = 10;
	MYSQL *m = mysql_init(NULL);
	MYSQL *ok;

	ck_assert_ptr_nonnull(m);
	mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
	mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &timeout);
	if (user == NULL) {
		struct passwd *pw = getpwuid(geteuid());

		ck_assert_ptr_nonnull(pw);
		ck_assert_ptr_nonnull(socket_path);
		ok = mysql_real_connect(m, "localhost", pw->pw_name, NULL,
					"payhook", 0, socket_path, 0);
	} else {
		ok = mysql_real_connect(m, cfg.mysql_host, user, password,
					"payhook", (unsigned int)cfg.mysql_port,
					NULL, 0);
	}
	ck_assert_msg(ok != NULL, "test connection: %s", mysql_error(m));
	return m;
}

/* Runs one statement and drops any result. Returns 0 or the error number. */
static unsigned int sql_try(MYSQL *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static unsigned int sql_try(MYSQL *m, const char *fmt, ...)
{
	char q[1024];
	va_list ap;
	MYSQL_RES *res;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	if (mysql_query(m, q) != 0)
		return mysql_errno(m);
	res = mysql_store_result(m);
	if (res != NULL)
		mysql_free_result(res);
	return 0;
}

static void sql_do(MYSQL *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void sql_do(MYSQL *m, const char *fmt, ...)
{
	char q[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	ck_assert_msg(mysql_query(m, q) == 0, "%s: %u %s", q, mysql_errno(m),
		      mysql_error(m));
	{
		MYSQL_RES *res = mysql_store_result(m);

		if (res != NULL)
			mysql_free_result(res);
	}
}

/* The first column of the first row as a number; -1 when there is no row. */
static long sql_long(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static long sql_long(const char *fmt, ...)
{
	char q[1024];
	va_list ap;
	MYSQL_RES *res;
	MYSQL_ROW row;
	long value = -1;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	ck_assert_msg(mysql_query(admin, q) == 0, "%s: %s", q,
		      mysql_error(admin));
	res = mysql_store_result(admin);
	ck_assert_ptr_nonnull(res);
	row = mysql_fetch_row(res);
	if (row != NULL && row[0] != NULL)
		value = strtol(row[0], NULL, 10);
	mysql_free_result(res);
	return value;
}

static long rows_in(const char *table, const char *id)
{
	return sql_long("SELECT COUNT(*) FROM %s WHERE transaction_id = '%s'",
			table, id);
}

static long rows_for(const char *id)
{
	return rows_in("payments", id);
}

/* Rows of id including those of transactions not committed yet. */
static long dirty_rows_for(const char *id)
{
	long n;

	sql_do(admin, "SET SESSION TRANSACTION ISOLATION LEVEL "
		      "READ UNCOMMITTED");
	n = rows_for(id);
	sql_do(admin, "SET SESSION TRANSACTION ISOLATION LEVEL "
		      "REPEATABLE READ");
	return n;
}

/* The server thread of payhook's connection sleeping in a trigger, or -1.
 * Inside a trigger the process list shows the trigger's definer and the
 * trigger's statement, so the thread is found as a prepared statement
 * (payhook's; the test's own connections send plain queries) that sleeps. */
#define SLEEPING_INSERT_SQL                                                  \
	"SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = "     \
	"'Execute' AND STATE = 'User sleep' LIMIT 1"

static long payhook_insert_thread(void)
{
	return sql_long(SLEEPING_INSERT_SQL);
}

/* Polls the query (a COUNT or an id, through sql_long) every 5 ms until it
 * gives a positive number, at most timeout_ms. Returns what it gave last. */
static long wait_for_positive(long timeout_ms, const char *query)
{
	long long start = now_us();
	long v;

	while ((v = sql_long("%s", query)) <= 0 && ms_since(start) < timeout_ms)
		sleep_ms(5);
	return v;
}

/* Waits until server thread id is gone: the statement it ran has ended and
 * the server has cleaned up the connection (rolled back what was open). */
static void wait_thread_gone(long id, long timeout_ms)
{
	long long start = now_us();

	while (sql_long("SELECT COUNT(*) FROM information_schema.PROCESSLIST "
			"WHERE ID = %ld", id) != 0) {
		ck_assert_msg(ms_since(start) < timeout_ms,
			      "server thread %ld still there after %ld ms", id,
			      timeout_ms);
		sleep_ms(20);
	}
}

/* Puts the server back the way the tests expect it, whatever a failed test
 * left behind (Check ends a failed test without its teardown). */
static void restore_server_state(void)
{
	sql_do(admin, "SET GLOBAL read_only = 0");
	sql_do(admin, "DROP TRIGGER IF EXISTS faults_slow_insert");
	sql_do(admin, "DROP TRIGGER IF EXISTS faults_slow_after_insert");
	sql_do(admin, "DROP TRIGGER IF EXISTS faults_ledger_effect");
	if (sql_long("SELECT COUNT(*) FROM information_schema.TABLES WHERE "
		     "TABLE_SCHEMA = 'payhook' AND TABLE_NAME = 'payments'") == 0)
		sql_do(admin, "RENAME TABLE payments_away TO payments");
	sql_do(admin, "DROP TABLE IF EXISTS test_ledger");
}

/* ---- Redis as the test sees it (hiredis, not payhook's code) ---- */

static redisContext *redis;

static void redis_open(void)
{
	struct timeval tv = { 5, 0 };

	redis = redisConnectWithTimeout("127.0.0.1", env_int("REDIS_PORT"), tv);
	ck_assert_msg(redis != NULL && redis->err == 0, "redis: %s",
		      redis != NULL ? redis->errstr : "out of memory");
	ck_assert_int_eq(redisSetTimeout(redis, tv), REDIS_OK);
}

/* The integer reply of a command on the lock key of id (EXISTS, PTTL). */
static long long lock_key_int(const char *command, const char *id)
{
	redisReply *reply = redisCommand(redis, "%s %s%s", command,
					 cfg.lock_key_prefix, id);
	long long value;

	ck_assert_msg(reply != NULL, "redis %s: %s", command, redis->errstr);
	ck_assert_int_eq(reply->type, REDIS_REPLY_INTEGER);
	value = reply->integer;
	freeReplyObject(reply);
	return value;
}

static long long lock_key_exists(const char *id)
{
	return lock_key_int("EXISTS", id);
}

/* ---- the log payhook writes on stderr ---- */

struct capture {
	int saved_fd;
	char path[PATH_MAX];
};

/* Sends stderr (payhook's log) to a file until capture_end. A child forked
 * meanwhile logs there too. */
static void capture_start(struct capture *c)
{
	const char *dir = getenv("HARNESS_DIR");
	int fd;

	snprintf(c->path, sizeof(c->path), "%s/faults-log.XXXXXX",
		 dir != NULL ? dir : "/tmp");
	fd = mkstemp(c->path);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	c->saved_fd = dup(STDERR_FILENO);
	ck_assert_int_ge(c->saved_fd, 0);
	ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
}

/* Puts stderr back, copies what was logged to it, and returns that text (a
 * static buffer). */
static const char *capture_end(struct capture *c)
{
	static char text[16384];
	FILE *f;
	size_t n;

	ck_assert_int_eq(dup2(c->saved_fd, STDERR_FILENO), STDERR_FILENO);
	close(c->saved_fd);
	f = fopen(c->path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	unlink(c->path);
	if (n > 0 && write(STDERR_FILENO, text, n) < 0) {
		/* Only a copy for the test log. */
	}
	return text;
}

/* ---- requests ---- */

static struct pipeline *pipeline;

static void setup(void)
{
	struct error err;

	ck_assert_msg(pipeline_load_config(&cfg, NULL, &err) == 0, "config: %s",
		      err.message);
	log_init("test_faults", LOG_LEVEL_WARN);
	admin = db_open(NULL, NULL);
	redis_open();
	restore_server_state();
	ctl("resume-redis"); /* harmless when it runs */
	pipeline = pipeline_new(&cfg, &err);
	ck_assert_msg(pipeline != NULL, "pipeline: %s", err.message);
}

static void teardown(void)
{
	pipeline_free(pipeline);
	pipeline = NULL;
	if (redis != NULL)
		redisFree(redis);
	redis = NULL;
	if (admin != NULL)
		mysql_close(admin);
	admin = NULL;
	config_cleanup(&cfg);
}

/* Runs one request with body on p; fills *r and *elapsed_ms. */
static void post_timed(struct pipeline *p, const char *body, struct result *r,
		       long *elapsed_ms)
{
	long long start = now_us();

	itest_post(p, body, r);
	*elapsed_ms = ms_since(start);
}

/* The body of a delivery; note marks it for the triggers (may be ""). */
static const char *body_for(char out[BODY_MAX], const char *id, long amount,
			    const char *note_text)
{
	snprintf(out, BODY_MAX,
		 "{\"transaction_id\":\"%s\",\"amount\":%ld,\"currency\":\"EUR\","
		 "\"note\":\"%s\"}", id, amount, note_text);
	return out;
}

/* A unique id per test run, so tests never see each other's rows. */
static void fresh_id(char out[96], const char *stem)
{
	snprintf(out, 96, "%s", itest_fresh_id(stem));
}

/* Asserts the outcome and the HTTP status the provider gets, with
 * Retry-After on a 503. */
static void assert_answer(const struct result *r, enum outcome want)
{
	char buf[RESPONSE_BUFFER_SIZE], status[32];
	struct error err;

	ck_assert_msg(r->outcome == want, "outcome %s (%s), expected %s",
		      response_outcome_name(r->outcome), r->reason, response_outcome_name(want));
	ck_assert_int_gt(response_render(r, &cfg, buf, sizeof(buf), &err), 0);
	snprintf(status, sizeof(status), "Status: %d ",
		 response_outcome_status(want, &cfg));
	ck_assert_msg(strncmp(buf, status, strlen(status)) == 0, "%s", buf);
	if (want == OUTCOME_UNAVAILABLE)
		ck_assert_ptr_nonnull(strstr(buf, "\r\nRetry-After: "));
}

/* Posts body on the test's pipeline and asserts outcome and hang bound. */
static long post_expect(const char *body, enum outcome want, long bound_ms)
{
	struct result r;
	long ms;

	post_timed(pipeline, body, &r, &ms);
	assert_answer(&r, want);
	ck_assert_msg(ms < bound_ms, "answer took %ld ms (hang bound %ld ms)",
		      ms, bound_ms);
	return ms;
}

/* ---- a worker in a child process ---- */

/* Its own pipeline (own connections: the parent's are never shared), and
 * requests on command, so a request that blocks does not block the test. */
struct worker {
	pid_t pid;
	int to_child;   /* BODY_MAX-byte bodies */
	int from_child; /* one struct answer per body */
};

struct answer {
	enum outcome outcome;
	char reason[RESPONSE_REASON_MAX];
	long elapsed_ms;
};

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static void worker_start(struct worker *w)
{
	int down[2], up[2];

	ck_assert_int_eq(pipe(down), 0);
	ck_assert_int_eq(pipe(up), 0);
	fflush(NULL);
	w->pid = fork();
	ck_assert_int_ge(w->pid, 0);
	if (w->pid == 0) {
		char body[BODY_MAX];
		struct error err;
		struct pipeline *own;

		close(down[1]);
		close(up[0]);
		/* The test's Redis context is the parent's: closing our copy of
		 * its socket is harmless (unlike admin's, whose mysql_close
		 * would end the parent's session). */
		redisFree(redis);
		redis = NULL;
		own = pipeline_new(&cfg, &err);
		if (own == NULL)
			_exit(3);
		while (read_full(down[0], body, sizeof(body)) == 0) {
			struct answer a;
			struct result r;

			memset(&a, 0, sizeof(a));
			post_timed(own, body, &r, &a.elapsed_ms);
			a.outcome = r.outcome;
			snprintf(a.reason, sizeof(a.reason), "%s", r.reason);
			if (write(up[1], &a, sizeof(a)) != (ssize_t)sizeof(a))
				_exit(4);
		}
		pipeline_free(own);
		_exit(0);
	}
	close(down[0]);
	close(up[1]);
	w->to_child = down[1];
	w->from_child = up[0];
}

static void worker_send(struct worker *w, const char *body)
{
	char buf[BODY_MAX];

	memset(buf, 0, sizeof(buf));
	snprintf(buf, sizeof(buf), "%s", body);
	ck_assert_int_eq(write(w->to_child, buf, sizeof(buf)), sizeof(buf));
}

static void worker_answer(struct worker *w, struct answer *a)
{
	ck_assert_msg(read_full(w->from_child, a, sizeof(*a)) == 0,
		      "the worker died before answering");
}

/* Ends the worker (it finishes its loop) and checks it exited cleanly. */
static void worker_stop(struct worker *w)
{
	int status;

	close(w->to_child);
	close(w->from_child);
	ck_assert_int_eq(waitpid(w->pid, &status, 0), w->pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "worker exit status %d", status);
}

/* ---- tests ---- */

/* 1. Redis accepts connections and never answers. db_only: each request waits
 * one redis_timeout_ms for the SET, then goes on with the unique key alone;
 * fail: 503 within the same time. The same pipeline is used throughout, and
 * serves normally (with its lock) once Redis answers again. */
START_TEST(test_silent_redis)
{
	char id[96], id2[96], body[BODY_MAX], body2[BODY_MAX];
	long bound = HANG_BOUND_MS(cfg.redis_timeout_ms) + 1000; /* + DB time */
	long ms;

	fresh_id(id, "silent-redis");
	fresh_id(id2, "silent-redis-fail");
	body_for(body, id, 100, "");
	body_for(body2, id2, 200, "");
	cfg.redis_port = env_int("SILENT_PORT_REDIS");

	ms = post_expect(body, OUTCOME_PROCESSED, bound);
	note("silent redis, db_only: processed in %ld ms (redis_timeout_ms %d)",
	     ms, cfg.redis_timeout_ms);
	ck_assert_int_eq(rows_for(id), 1);
	post_expect(body, OUTCOME_DUPLICATE, bound);
	ck_assert_int_eq(rows_for(id), 1);

	cfg.redis_unavailable = CONFIG_REDIS_UNAVAILABLE_FAIL;
	ms = post_expect(body2, OUTCOME_UNAVAILABLE, bound);
	note("silent redis, fail: 503 in %ld ms", ms);
	ck_assert_int_eq(rows_for(id2), 0);

	/* Redis answers again: the same pipeline reconnects and locks. */
	cfg.redis_port = env_int("REDIS_PORT");
	post_expect(body2, OUTCOME_PROCESSED, bound);
	ck_assert_int_eq(rows_for(id2), 1);
	ck_assert_int_eq(lock_key_exists(id2), 0);
	post_expect(body, OUTCOME_DUPLICATE, bound);
	ck_assert_int_eq(rows_for(id), 1);
}
END_TEST

/* 2. MySQL accepts connections and never answers: 503 within the connect
 * timeout, and Redis untouched (payhook connects to MySQL before it takes
 * the lock, so not a single SET reached Redis). */
START_TEST(test_silent_mysql)
{
	char id[96], body[BODY_MAX];
	long bound = HANG_BOUND_MS(1000L * (cfg.mysql_connect_timeout_s +
					    cfg.mysql_read_timeout_s));
	redisReply *reply;
	long ms;

	fresh_id(id, "silent-mysql");
	body_for(body, id, 300, "");
	cfg.mysql_port = env_int("SILENT_PORT_MYSQL");
	reply = redisCommand(redis, "CONFIG RESETSTAT");
	ck_assert_ptr_nonnull(reply);
	freeReplyObject(reply);

	ms = post_expect(body, OUTCOME_UNAVAILABLE, bound);
	note("silent mysql: 503 in %ld ms (connect timeout %d s, read %d s)", ms,
	     cfg.mysql_connect_timeout_s, cfg.mysql_read_timeout_s);
	ck_assert_int_eq(lock_key_exists(id), 0);
	reply = redisCommand(redis, "INFO commandstats");
	ck_assert_ptr_nonnull(reply);
	ck_assert_int_eq(reply->type, REDIS_REPLY_STRING);
	ck_assert_msg(strstr(reply->str, "cmdstat_set:") == NULL,
		      "a SET reached Redis while MySQL was unreachable:\n%s",
		      reply->str);
	freeReplyObject(reply);
	ck_assert_int_eq(rows_for(id), 0);

	/* MySQL answers again: the same pipeline connects and records. */
	cfg.mysql_port = env_int("MYSQL_PORT");
	post_expect(body, OUTCOME_PROCESSED, bound);
	ck_assert_int_eq(rows_for(id), 1);
	ck_assert_int_eq(lock_key_exists(id), 0);
}
END_TEST

/* 3. MySQL slower than mysql_read_timeout_s: a trigger sleeps 5 s inside the
 * INSERT. The server itself ends the INSERT at its max_statement_time (a
 * little under the read timeout) and rolls it back: 503 within the read
 * timeout, no statement left running on the server, no row ever, and the
 * same connection serves the next request. */
START_TEST(test_mysql_slower_than_read_timeout)
{
	char id[96], other[96], body[BODY_MAX], other_body[BODY_MAX];
	long bound = HANG_BOUND_MS(1000L * cfg.mysql_read_timeout_s);
	struct capture cap;
	const char *log;
	long ms;

	fresh_id(id, "slow");
	fresh_id(other, "after-slow");
	body_for(body, id, 400, "slow-3");
	body_for(other_body, other, 401, "");
	sql_do(admin, "CREATE TRIGGER faults_slow_insert BEFORE INSERT ON "
		      "payments FOR EACH ROW SET @s = IF(NEW.payload LIKE "
		      "'%%slow-3%%', SLEEP(5), 0)");
	/* Warm up: the connection exists, so only the INSERT is timed. */
	post_expect(other_body, OUTCOME_PROCESSED, bound);

	capture_start(&cap);
	ms = post_expect(body, OUTCOME_UNAVAILABLE, bound);
	log = capture_end(&cap);
	note("read timeout %d s: the slow INSERT was ended by the server after "
	     "%ld ms", cfg.mysql_read_timeout_s, ms);
	ck_assert_msg(ms < 1000L * cfg.mysql_read_timeout_s,
		      "answer took %ld ms: the client timed out first", ms);
	ck_assert_msg(strstr(log, "mysql insert: 1969 ") != NULL,
		      "no 1969 (max_statement_time) in the log:\n%s", log);
	/* Ended on the server, not abandoned there. */
	ck_assert_int_eq(payhook_insert_thread(), -1);
	ck_assert_int_eq(lock_key_exists(id), 0);
	ck_assert_int_eq(rows_for(id), 0);

	/* The same pipeline serves the next requests. */
	post_expect(body_for(other_body, other, 401, ""), OUTCOME_DUPLICATE,
		    bound);
	fresh_id(other, "after-slow-2");
	post_expect(body_for(other_body, other, 402, ""), OUTCOME_PROCESSED,
		    bound);
	/* Long after: still no row of the slow INSERT. */
	usleep(500 * 1000);
	ck_assert_int_eq(rows_for(id), 0);

	sql_do(admin, "DROP TRIGGER faults_slow_insert");
	post_expect(body, OUTCOME_PROCESSED, bound);
	ck_assert_int_eq(rows_for(id), 1);
}
END_TEST

/* 4. The server is read-only (SET GLOBAL read_only = 1), and payhook's user
 * has no privilege that bypasses it: 503, no row; writable again: the same
 * pipeline records. */
START_TEST(test_read_only_server)
{
	char id[96], warm[96], body[BODY_MAX], warm_body[BODY_MAX];
	long bound = HANG_BOUND_MS(1000L * cfg.mysql_read_timeout_s);

	fresh_id(id, "read-only");
	body_for(body, id, 500, "");
	/* Only USAGE globally: neither SUPER nor READ_ONLY ADMIN. */
	ck_assert_int_eq(sql_long("SELECT COUNT(*) FROM "
				  "information_schema.USER_PRIVILEGES WHERE "
				  "GRANTEE LIKE '''payhook''@%%' AND "
				  "PRIVILEGE_TYPE <> 'USAGE'"), 0);
	ck_assert_int_gt(sql_long("SELECT COUNT(*) FROM "
				  "information_schema.USER_PRIVILEGES WHERE "
				  "GRANTEE LIKE '''payhook''@%%'"), 0);
	/* Warm up: connected and prepared while the server is writable. */
	fresh_id(warm, "read-only-warm");
	post_expect(body_for(warm_body, warm, 1, ""), OUTCOME_PROCESSED, bound);

	sql_do(admin, "SET GLOBAL read_only = 1");
	ck_assert_int_eq(sql_long("SELECT @@GLOBAL.read_only"), 1);
	post_expect(body, OUTCOME_UNAVAILABLE, bound);
	ck_assert_int_eq(rows_for(id), 0);
	ck_assert_int_eq(lock_key_exists(id), 0);

	sql_do(admin, "SET GLOBAL read_only = 0");
	post_expect(body, OUTCOME_PROCESSED, bound);
	ck_assert_int_eq(rows_for(id), 1);
}
END_TEST

/* 5. The table is missing (renamed away): 503, never duplicate; renamed
 * back: the same pipeline (same prepared statements) records, and a
 * redelivery is a duplicate. */
START_TEST(test_table_missing)
{
	char id[96], warm[96], body[BODY_MAX], warm_body[BODY_MAX];
	long bound = HANG_BOUND_MS(1000L * cfg.mysql_read_timeout_s);

	fresh_id(id, "no-table");
	fresh_id(warm, "no-table-warm");
	body_for(body, id, 600, "");
	/* The statements are prepared while the table is there. */
	post_expect(body_for(warm_body, warm, 1, ""), OUTCOME_PROCESSED, bound);

	sql_do(admin, "RENAME TABLE payments TO payments_away");
	post_expect(body, OUTCOME_UNAVAILABLE, bound);
	/* A redelivery of a committed id is not a duplicate either: nothing
	 * can be known without the table. */
	post_expect(warm_body, OUTCOME_UNAVAILABLE, bound);
	ck_assert_int_eq(lock_key_exists(id), 0);
	ck_assert_int_eq(rows_in("payments_away", id), 0);
	ck_assert_int_eq(rows_in("payments_away", warm), 1);
	sql_do(admin, "RENAME TABLE payments_away TO payments");
	ck_assert_int_eq(rows_for(id), 0);

	post_expect(body, OUTCOME_PROCESSED, bound);
	post_expect(body, OUTCOME_DUPLICATE, bound);
	ck_assert_int_eq(rows_for(id), 1);
}
END_TEST

/* 6. A real deadlock (1213). payhook's transaction is one INSERT; a trigger
 * gives it a business effect on a second table (test_ledger row 1). The
 * test's transaction T updates every ledger row (50 rows: the heavier
 * transaction), payhook's INSERT then waits for ledger row 1, and T inserts
 * the same transaction id: T waits for payhook's row, payhook for T's ledger
 * row. InnoDB rolls back the transaction with the smaller weight (rows
 * modified + locks), payhook's, so the victim is deterministic; T's INSERT
 * succeeding proves it. */
START_TEST(test_deadlock_is_retryable)
{
	char id[96], body[BODY_MAX], values[1024];
	long bound = HANG_BOUND_MS(1000L * cfg.mysql_read_timeout_s);
	struct capture cap;
	struct worker w;
	struct answer a;
	const char *log;
	MYSQL *t;
	size_t used = 0;

	fresh_id(id, "deadlock");
	body_for(body, id, 700, "");
	sql_do(admin, "CREATE TABLE test_ledger (id INT PRIMARY KEY, "
		      "n INT NOT NULL) ENGINE=InnoDB");
	for (int i = 1; i <= 50; i++)
		used += (size_t)snprintf(values + used, sizeof(values) - used,
					 "%s(%d, 0)", i > 1 ? "," : "", i);
	sql_do(admin, "INSERT INTO test_ledger (id, n) VALUES %s", values);
	sql_do(admin, "CREATE TRIGGER faults_ledger_effect AFTER INSERT ON "
		      "payments FOR EACH ROW UPDATE test_ledger SET n = n + 1 "
		      "WHERE id = 1");

	t = db_open(cfg.mysql_user, cfg.mysql_password);
	sql_do(t, "START TRANSACTION");
	sql_do(t, "UPDATE test_ledger SET n = n + 1");

	capture_start(&cap);
	worker_start(&w);
	worker_send(&w, body);
	/* payhook's INSERT is in the trigger's UPDATE, which must wait for T's
	 * ledger row 1 (payhook's lock wait times out after 1 s, so T closes
	 * the cycle well before that). The process list, not INNODB_TRX: that
	 * table is a cache refreshed only after 100 ms without readers. */
	if (wait_for_positive(800, "SELECT COUNT(*) FROM "
			      "information_schema.PROCESSLIST WHERE "
			      "COMMAND = 'Execute' AND "
			      "INFO LIKE 'UPDATE test_ledger%'") != 1) {
		worker_answer(&w, &a);
		log = capture_end(&cap);
		ck_abort_msg("payhook did not wait for the ledger row: "
			     "%s (%s)\n%s", response_outcome_name(a.outcome), a.reason,
			     log);
	}
	ck_assert_msg(sql_try(t, "INSERT INTO payments (transaction_id, "
			      "amount, currency, payload) "
			      "VALUES ('%s', 1, 'EUR', 'T')", id) == 0,
		      "the test's transaction was the victim: %s",
		      mysql_error(t));
	worker_answer(&w, &a);
	log = capture_end(&cap);

	ck_assert_msg(a.outcome == OUTCOME_UNAVAILABLE, "outcome %s (%s)",
		      response_outcome_name(a.outcome), a.reason);
	ck_assert_msg(strstr(a.reason, "deadlock") != NULL, "reason: %s",
		      a.reason);
	ck_assert_msg(a.elapsed_ms < bound, "answer took %ld ms", a.elapsed_ms);
	ck_assert_msg(strstr(log, "mysql insert: 1213 ") != NULL,
		      "no 1213 in the log:\n%s", log);
	note("deadlock: 503 in %ld ms", a.elapsed_ms);
	sql_do(t, "ROLLBACK");
	mysql_close(t);
	ck_assert_int_eq(rows_for(id), 0);
	ck_assert_int_eq(lock_key_exists(id), 0);
	ck_assert_int_eq(sql_long("SELECT n FROM test_ledger WHERE id = 1"), 0);

	/* The same worker's retry is processed, the effect applied once. */
	worker_send(&w, body);
	worker_answer(&w, &a);
	ck_assert_msg(a.outcome == OUTCOME_PROCESSED, "retry: %s (%s)",
		      response_outcome_name(a.outcome), a.reason);
	ck_assert_msg(a.elapsed_ms < bound, "retry took %ld ms", a.elapsed_ms);
	worker_send(&w, body);
	worker_answer(&w, &a);
	ck_assert_int_eq(a.outcome, OUTCOME_DUPLICATE);
	worker_stop(&w);
	ck_assert_int_eq(rows_for(id), 1);
	ck_assert_int_eq(sql_long("SELECT n FROM test_ledger WHERE id = 1"), 1);
	sql_do(admin, "DROP TRIGGER faults_ledger_effect");
	sql_do(admin, "DROP TABLE test_ledger");
}
END_TEST

/* Another connection inserts id and keeps its transaction open; payhook's
 * INSERT of the same id waits for that row. Returns the answer and fills
 * *ms and, from the log, *log. The other transaction then rolls back. */
static struct result lock_wait_request(const char *id, const char *body,
				       long *ms, const char **log)
{
	struct capture cap;
	struct result r;
	MYSQL *t = db_open(cfg.mysql_user, cfg.mysql_password);

	sql_do(t, "START TRANSACTION");
	sql_do(t, "INSERT INTO payments (transaction_id, amount, currency, "
		  "payload) VALUES ('%s', 800, 'EUR', 'T')", id);
	capture_start(&cap);
	post_timed(pipeline, body, &r, ms);
	*log = capture_end(&cap);
	sql_do(t, "ROLLBACK");
	mysql_close(t);
	return r;
}

/* 7. A lock wait timeout (1205): another connection inserted the same id and
 * keeps its transaction open. payhook (the Redis lock is free) waits its
 * session's innodb_lock_wait_timeout (1 s), gets 1205 and answers 503; once
 * the other transaction rolls back, the same pipeline records. The read
 * timeout is 2 s here (and the lease long enough for it, as config_load
 * demands): with 1 s the client gives up first, see the next test. */
START_TEST(test_lock_wait_timeout_is_retryable)
{
	char id[96], body[BODY_MAX];
	long bound = HANG_BOUND_MS(1000L); /* innodb_lock_wait_timeout = 1 s */
	const char *log;
	struct result r;
	long ms;

	cfg.mysql_read_timeout_s = 2; /* before the pipeline's first connect */
	cfg.lock_ttl_ms = 16000;
	ck_assert_int_gt(cfg.lock_ttl_ms,
			 config_write_bound_ms(&cfg) + CONFIG_LEASE_MARGIN_MS);
	fresh_id(id, "lock-wait");
	body_for(body, id, 800, "");

	r = lock_wait_request(id, body, &ms, &log);
	assert_answer(&r, OUTCOME_UNAVAILABLE);
	ck_assert_msg(strstr(r.reason, "lock wait") != NULL, "reason: %s",
		      r.reason);
	ck_assert_msg(strstr(log, "mysql insert: 1205 ") != NULL,
		      "no 1205 in the log:\n%s", log);
	ck_assert_msg(ms >= 900 && ms < bound, "answer took %ld ms", ms);
	note("lock wait timeout (read timeout 2 s): 503 in %ld ms", ms);
	ck_assert_int_eq(lock_key_exists(id), 0);
	ck_assert_int_eq(rows_for(id), 0);

	post_expect(body, OUTCOME_PROCESSED, bound);
	ck_assert_int_eq(rows_for(id), 1);
	ck_assert_int_eq(sql_long("SELECT COUNT(*) FROM payments WHERE "
				  "transaction_id = '%s' AND payload = 'T'", id),
			 0);
}
END_TEST

/* 7b. The same lock wait with the smallest read timeout, 1 s: the client's
 * read timeout and the session's 1 s innodb_lock_wait_timeout race, and the
 * client gives up first (the server's 1 s starts later), so payhook sees a
 * lost connection rather than 1205. Either way: 503 in time, never a
 * duplicate, no row, and the same pipeline records the retry. */
START_TEST(test_lock_wait_with_1s_read_timeout)
{
	char id[96], body[BODY_MAX];
	long bound = HANG_BOUND_MS(1000L);
	const char *log, *detail;
	struct result r;
	long ms;

	fresh_id(id, "lock-wait-1s");
	body_for(body, id, 801, "");
	r = lock_wait_request(id, body, &ms, &log);
	assert_answer(&r, OUTCOME_UNAVAILABLE);
	ck_assert_msg(ms < bound, "answer took %ld ms", ms);
	detail = strstr(log, "detail=");
	note("lock wait, read timeout 1 s: 503 in %ld ms, reason \"%s\", %.60s",
	     ms, r.reason, detail != NULL ? detail : "no detail");
	ck_assert_int_eq(lock_key_exists(id), 0);
	ck_assert_int_eq(rows_for(id), 0);

	post_expect(body, OUTCOME_PROCESSED, bound);
	ck_assert_int_eq(rows_for(id), 1);
}
END_TEST

/* 8. A worker SIGKILLed inside its transaction (its row inserted, not
 * committed: an AFTER INSERT trigger sleeps). The server rolls the row back
 * when it finds the client gone; the dead worker's lock stays until its TTL
 * runs out (a redelivery meanwhile is in_progress), and then a redelivery is
 * processed. Nothing is deleted by hand. */
START_TEST(test_worker_killed_in_transaction)
{
	char id[96], body[BODY_MAX];
	long bound = HANG_BOUND_MS(1000L * cfg.mysql_read_timeout_s);
	long long sent_us;
	long long pttl;
	struct worker w;
	long thread;
	int status;

	fresh_id(id, "killed");
	body_for(body, id, 900, "killed-8");
	sql_do(admin, "CREATE TRIGGER faults_slow_after_insert AFTER INSERT ON "
		      "payments FOR EACH ROW SET @s = IF(NEW.payload LIKE "
		      "'%%killed-8%%', SLEEP(2), 0)");
	worker_start(&w);
	sent_us = now_us();
	worker_send(&w, body);
	/* Kill it well inside its 1 s read timeout. */
	thread = wait_for_positive(900, SLEEPING_INSERT_SQL);
	ck_assert_int_gt(thread, 0);
	/* Its row is written, in a transaction not committed. */
	ck_assert_int_eq(dirty_rows_for(id), 1);
	ck_assert_int_eq(kill(w.pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(w.pid, &status, 0), w.pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(w.to_child);
	close(w.from_child);

	pttl = lock_key_int("PTTL", id);
	ck_assert_msg(pttl > 0 && pttl <= cfg.lock_ttl_ms, "PTTL %lld", pttl);
	wait_thread_gone(thread, 10000);
	ck_assert_int_eq(rows_for(id), 0);
	ck_assert_int_eq(dirty_rows_for(id), 0);
	sql_do(admin, "DROP TRIGGER faults_slow_after_insert");

	/* The dead worker's lease still runs: not a duplicate, not processed. */
	ck_assert_int_gt(lock_key_int("PTTL", id), 0);
	post_expect(body, OUTCOME_IN_PROGRESS, bound);
	ck_assert_int_eq(rows_for(id), 0);

	/* The key expires by itself within its TTL of the worker's SET. */
	while (lock_key_exists(id) != 0) {
		ck_assert_msg(ms_since(sent_us) < cfg.lock_ttl_ms + 1000,
			      "lock key still there %ld ms after the SET",
			      ms_since(sent_us));
		sleep_ms(50);
	}
	note("killed worker: its lock expired %ld ms after the request",
	     ms_since(sent_us));
	post_expect(body, OUTCOME_PROCESSED, bound);
	ck_assert_int_eq(rows_for(id), 1);
	ck_assert_int_eq(lock_key_exists(id), 0);
}
END_TEST

/* The lease is measured from before the SET is sent: Redis is stopped
 * (SIGSTOP) when lock_acquire sends the SET and resumed 400 ms later, so
 * the reply arrives at least 400 ms after the send. The lease must then
 * look at least that much shorter than the TTL, never fresher than the key
 * Redis holds; the same client then works normally. */
START_TEST(test_lease_measured_before_set)
{
	const long ttl = 5000, pause_ms = 400;
	struct lock_client *client;
	struct lock_lease lease;
	struct error err;
	enum lock_status got;
	char id[96], byte = 'g';
	long took, remaining;
	long long start, pttl;
	int go[2], status;
	pid_t pid;

	fresh_id(id, "lease-start");
	cfg.redis_timeout_ms = 3000; /* longer than the pause */
	client = lock_client_new(&cfg, &err);
	ck_assert_ptr_nonnull(client);
	ck_assert_msg(lock_connect(client, &err) == 0, "%s", err.message);

	ck_assert_int_eq(pipe(go), 0);
	ctl("pause-redis");
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char script[PATH_MAX];
		const char *srcdir = getenv("top_srcdir");

		close(go[1]);
		if (read(go[0], &byte, 1) != 1)
			_exit(3);
		sleep_ms(pause_ms);
		snprintf(script, sizeof(script), "%s/tests/lib/harness-ctl.sh",
			 srcdir != NULL ? srcdir : ".");
		/* exec, not system: under valgrind this copy of the test would
		 * otherwise run a leak check of the parent's memory at exit. */
		execlp("bash", "bash", script, "resume-redis", (char *)NULL);
		_exit(5);
	}
	close(go[0]);
	start = now_us();
	ck_assert_int_eq(write(go[1], &byte, 1), 1);
	got = lock_acquire(client, NULL, id, strlen(id), ttl, &lease, &err);
	took = ms_since(start);
	remaining = lock_lease_remaining_ms(&lease);
	close(go[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "resuming redis failed");

	ck_assert_msg(got == LOCK_ACQUIRED, "lock_acquire: %d %s", got,
		      err.message);
	ck_assert_msg(took >= pause_ms && took < HANG_BOUND_MS(pause_ms),
		      "SET answered after %ld ms", took);
	ck_assert_msg(remaining <= ttl - 300,
		      "lease %ld ms after a %ld ms pause (ttl %ld)", remaining,
		      took, ttl);
	pttl = lock_key_int("PTTL", id);
	ck_assert_msg(remaining < pttl, "lease %ld ms, Redis PTTL %lld",
		      remaining, pttl);
	note("lease: SET answered after %ld ms, lease left %ld of %ld ms, "
	     "Redis PTTL %lld", took, remaining, ttl, pttl);

	ck_assert_int_eq(lock_release(client, &lease, &err), LOCK_RELEASED);
	ck_assert_int_eq(lock_key_exists(id), 0);
	ck_assert_int_eq(lock_acquire(client, NULL, id, strlen(id), ttl, &lease, &err),
			 LOCK_ACQUIRED);
	ck_assert_int_ge(lock_lease_remaining_ms(&lease), ttl - 1000);
	ck_assert_int_eq(lock_release(client, &lease, &err), LOCK_RELEASED);
	lock_client_free(client);
}
END_TEST

int main(void)
{
	/* One case per fault, so CK_RUN_CASE=deadlock runs just that one. */
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{ "silent_redis", test_silent_redis },
		{ "silent_mysql", test_silent_mysql },
		{ "slow_mysql", test_mysql_slower_than_read_timeout },
		{ "read_only", test_read_only_server },
		{ "table_missing", test_table_missing },
		{ "deadlock", test_deadlock_is_retryable },
		{ "lock_wait", test_lock_wait_timeout_is_retryable },
		{ "lock_wait_1s", test_lock_wait_with_1s_read_timeout },
		{ "killed_worker", test_worker_killed_in_transaction },
		{ "lease_start", test_lease_measured_before_set },
	};
	Suite *s = suite_create("faults");
	SRunner *sr;
	int failed;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_VERBOSE);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
