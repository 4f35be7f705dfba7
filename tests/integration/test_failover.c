/* test_failover.c - a backend that fails over behind an address that stays
 * the same (a proxy, a virtual IP, a DNS name): the old server turns
 * read-only or replica, the address now leads to the new one. A worker that
 * kept its connection to the old server must notice (an error reply such as
 * READONLY, a MySQL 1290) and reconnect, rather than answer 503 for the rest
 * of its life. failover.test starts two redis-servers, two mariadbds and a
 * TCP proxy in front of each pair (tests/servers/tcpproxy.c); nothing is mocked.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "configuration.h"
#include "itest.h"
#include "pipeline.h"
#include "response.h"
#include "testreq.h"

#define ctl itest_ctl

static struct config cfg;

static const char *env(const char *name)
{
	const char *value = getenv(name);

	ck_assert_msg(value != NULL && *value != '\0',
		      "%s is not set: run this through failover.test", name);
	return value;
}

static void setup(void)
{
	struct error err;

	ck_assert_msg(pipeline_load_config(&cfg, NULL, &err) == 0, "config: %s",
		      err.message);
	log_init("test_failover", LOG_LEVEL_WARN);
}

static void teardown(void)
{
	config_cleanup(&cfg);
}

static enum outcome post_id(struct pipeline *p, const char *id)
{
	char body[256];
	struct result r;

	snprintf(body, sizeof(body),
		 "{\"transaction_id\":\"%s\",\"amount\":5,\"currency\":\"EUR\"}",
		 id);
	itest_post(p, body, &r);
	return r.outcome;
}


/* Redis: A is demoted to a replica of B (writes get READONLY) and the
 * address now leads to B. Under redis_unavailable = fail the request whose
 * kept connection A refuses reconnects at once, through the same address,
 * and locks on B: no 503 at all. */
START_TEST(test_redis_failover)
{
	struct pipeline *p;
	struct error err;
	char a[96], b[96], c[96];

	snprintf(a, sizeof(a), "%s", itest_fresh_id("rf-a"));
	snprintf(b, sizeof(b), "%s", itest_fresh_id("rf-b"));
	snprintf(c, sizeof(c), "%s", itest_fresh_id("rf-c"));
	cfg.redis_unavailable = CONFIG_REDIS_UNAVAILABLE_FAIL;
	p = pipeline_new(&cfg, &err);
	ck_assert_ptr_nonnull(p);
	assert_outcome(post_id(p, a), OUTCOME_PROCESSED);

	ctl("redis REPLICAOF 127.0.0.1 %s", env("REDIS_PORT_B"));
	ctl("proxy redis target 127.0.0.1:%s", env("REDIS_PORT_B"));
	/* The kept connection still reaches A, which refuses the SET; the
	 * request reconnects to B and records. */
	assert_outcome(post_id(p, b), OUTCOME_PROCESSED);
	ck_assert_str_eq(ctl("sql \"SELECT COUNT(*) FROM payments WHERE "
			     "transaction_id = '%s'\"", b), "1");
	/* The lock is B's now: a key held there makes the request wait. */
	ctl("redis-on b SET 'lock:webhook:tx:%s' foreign PX 60000", c);
	assert_outcome(post_id(p, c), OUTCOME_IN_PROGRESS);
	ctl("redis-on b DEL 'lock:webhook:tx:%s'", c);
	assert_outcome(post_id(p, c), OUTCOME_PROCESSED);
	assert_outcome(post_id(p, b), OUTCOME_DUPLICATE);

	pipeline_free(p);
	ctl("redis REPLICAOF NO ONE");
	ctl("proxy redis target 127.0.0.1:%s", env("REDIS_PORT"));
}
END_TEST

/* MySQL: A turns read-only (1290 for payhook's user) and the address now
 * leads to B. The first request on the old connection is a 503 and writes
 * nothing; the next reconnects and records on B. */
START_TEST(test_mysql_failover)
{
	struct pipeline *p;
	struct error err;
	char a[96], b[96];

	snprintf(a, sizeof(a), "%s", itest_fresh_id("mf-a"));
	snprintf(b, sizeof(b), "%s", itest_fresh_id("mf-b"));
	p = pipeline_new(&cfg, &err);
	ck_assert_ptr_nonnull(p);
	assert_outcome(post_id(p, a), OUTCOME_PROCESSED);
	ck_assert_str_eq(ctl("sql \"SELECT COUNT(*) FROM payments WHERE "
			     "transaction_id = '%s'\"", a), "1");

	ctl("sql \"SET GLOBAL read_only = 1\"");
	ctl("proxy mysql target 127.0.0.1:%s", env("MYSQL_PORT_B"));
	assert_outcome(post_id(p, b), OUTCOME_UNAVAILABLE);
	assert_outcome(post_id(p, b), OUTCOME_PROCESSED);
	ck_assert_str_eq(ctl("sql-on b \"SELECT COUNT(*) FROM payments WHERE "
			     "transaction_id = '%s'\"", b), "1");
	ck_assert_str_eq(ctl("sql \"SELECT COUNT(*) FROM payments WHERE "
			     "transaction_id = '%s'\"", b), "0");

	pipeline_free(p);
	ctl("sql \"SET GLOBAL read_only = 0\"");
	ctl("proxy mysql target 127.0.0.1:%s", env("MYSQL_PORT"));
}
END_TEST

/* A connection the server closed under a kept session (KILL, as an idle
 * timeout does) is reopened and the request goes through: trying the insert
 * once more on a new connection is safe, since had the first reached the
 * server and committed, the second gets 1062 and the look-up finds it. */
START_TEST(test_killed_session_reopened)
{
	struct pipeline *p;
	struct error err;
	char a[96], b[96];

	snprintf(a, sizeof(a), "%s", itest_fresh_id("ks-a"));
	snprintf(b, sizeof(b), "%s", itest_fresh_id("ks-b"));
	p = pipeline_new(&cfg, &err);
	ck_assert_ptr_nonnull(p);
	assert_outcome(post_id(p, a), OUTCOME_PROCESSED);
	{
		char ids[256], *save = NULL;

		snprintf(ids, sizeof(ids), "%s",
			 ctl("sql \"SELECT GROUP_CONCAT(ID) FROM "
			     "information_schema.PROCESSLIST WHERE USER = "
			     "'payhook'\""));
		ck_assert_str_ne(ids, "NULL");
		for (char *id = strtok_r(ids, ",", &save); id != NULL;
		     id = strtok_r(NULL, ",", &save))
			ctl("sql \"KILL %s\"", id);
	}
	assert_outcome(post_id(p, b), OUTCOME_PROCESSED);
	pipeline_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("failover");
	TCase *tc = tcase_create("failover");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_redis_failover);
	tcase_add_test(tc, test_mysql_failover);
	tcase_add_test(tc, test_killed_session_reopened);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
