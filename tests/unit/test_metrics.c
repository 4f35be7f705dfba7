/* test_metrics.c - unit tests of metrics, the pool's counters in a real
 * shared segment: a worker's slot through a request, the master's marks,
 * the hour's answers, the failures' ring and the counters read back.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics.h"

/* This process as a worker of a fresh segment: its slot through one
 * request, the master's marks once per request, and its failure. */
START_TEST(worker_slot)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct metrics_worker w[4];
	struct metrics_pool pool;
	struct metrics_hour *hour = malloc(sizeof(*hour));
	struct metrics_failure failures[METRICS_FAILURES];
	struct result r = { .outcome = OUTCOME_INVALID };
	unsigned long long total = 0;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(hour);
	metrics_pool_started(m, 4, true);
	ck_assert(metrics_worker_started(m, getpid()));
	ck_assert_uint_eq(metrics_read_status(m, &pool, w, 4), 1);
	ck_assert_int_eq(w[0].stage, METRICS_IDLE);
	ck_assert_uint_eq(pool.workers_configured, 4);
	ck_assert_uint_eq(pool.workers_idle, 1);

	metrics_request_begin(m);
	metrics_request_item(m, CONFIG_PROVIDER_STRIPE, "pi_123", 6);
	metrics_request_stage(m, METRICS_INSERTING);
	usleep(2000);
	ck_assert_uint_eq(metrics_read_status(m, &pool, w, 4), 1);
	ck_assert_int_eq(w[0].pid, getpid());
	ck_assert_str_eq(metrics_stage_name(w[0].stage), "inserting");
	ck_assert_uint_eq(w[0].provider, CONFIG_PROVIDER_STRIPE);
	ck_assert_str_eq(w[0].transaction_id, "pi_123");
	ck_assert_int_ge(w[0].elapsed_us, 2000);
	ck_assert_uint_eq(pool.workers_active, 1);
	ck_assert_uint_eq(pool.accepted, 1);
	/* The master logs and ends a request once, whatever its ticks. */
	ck_assert(metrics_slow_seen(m, getpid(), w[0].request));
	ck_assert(!metrics_slow_seen(m, getpid(), w[0].request));
	ck_assert(metrics_terminated_seen(m, getpid(), w[0].request));
	ck_assert(!metrics_terminated_seen(m, getpid(), w[0].request));
	metrics_pool_sample(m, 4, 2, 128);

	strcpy(r.transaction_id, "pi_123");
	strcpy(r.reason, "currency: must be 3 ASCII letters");
	metrics_request(m, CONFIG_PROVIDER_STRIPE, r.outcome, 2000);
	metrics_failure(m, CONFIG_PROVIDER_STRIPE, &r);
	metrics_request_end(m);

	ck_assert_uint_eq(metrics_read_status(m, &pool, w, 4), 1);
	ck_assert_int_eq(w[0].stage, METRICS_IDLE);
	ck_assert_uint_eq(w[0].served, 1);
	/* Idle: no transaction in hand, not the last one's. */
	ck_assert_str_eq(w[0].transaction_id, "");
	ck_assert_uint_eq(w[0].provider, CONFIG_PROVIDER_COUNT);
	ck_assert_uint_eq(pool.slow_requests, 1);
	ck_assert_uint_eq(pool.terminated_requests, 1);
	ck_assert_uint_eq(pool.max_active, 4);
	ck_assert_uint_eq(pool.max_children_reached, 1);
	ck_assert_int_eq(pool.listen_queue, 2);
	ck_assert_int_eq(pool.listen_queue_len, 128);

	ck_assert_uint_eq(metrics_read_recent(m, hour, failures), 1);
	ck_assert_int_eq(failures[0].outcome, OUTCOME_INVALID);
	ck_assert_uint_eq(failures[0].provider, CONFIG_PROVIDER_STRIPE);
	ck_assert_str_eq(failures[0].transaction_id, "pi_123");
	ck_assert_str_eq(failures[0].reason, "currency: must be 3 ASCII letters");
	for (int i = 0; i < METRICS_MINUTES; i++)
		total += hour->counts[CONFIG_PROVIDER_STRIPE][i][METRICS_REFUSED];
	ck_assert_uint_eq(total, 1);

	metrics_worker_gone(m, getpid());
	ck_assert_uint_eq(metrics_read_status(m, &pool, w, 4), 0);
	free(hour);
	metrics_free(m);
}
END_TEST

/* The ring keeps the latest METRICS_FAILURES, newest first. */
START_TEST(failure_ring)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct metrics_hour *hour = malloc(sizeof(*hour));
	struct metrics_failure failures[METRICS_FAILURES];
	struct result r = { .outcome = OUTCOME_UNAVAILABLE };

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(hour);
	for (int i = 0; i < METRICS_FAILURES + 5; i++) {
		snprintf(r.transaction_id, sizeof(r.transaction_id), "tx-%d", i);
		metrics_failure(m, CONFIG_PROVIDER_COUNT, &r);
	}
	ck_assert_uint_eq(metrics_read_recent(m, hour, failures),
			  METRICS_FAILURES);
	ck_assert_str_eq(failures[0].transaction_id, "tx-20");
	ck_assert_str_eq(failures[METRICS_FAILURES - 1].transaction_id, "tx-5");
	free(hour);
	metrics_free(m);
}
END_TEST

/* The counters read back as one reading: by provider and outcome, the
 * histogram, the backends' errors (an uncounted MySQL code as "other"). */
START_TEST(counters)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct metrics_counters *c = malloc(sizeof(*c));

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(c);
	metrics_request(m, CONFIG_PROVIDER_STRIPE, OUTCOME_PROCESSED, 700);
	metrics_request(m, CONFIG_PROVIDER_STRIPE, OUTCOME_PROCESSED, 20000000);
	metrics_request(m, CONFIG_PROVIDER_COUNT + 5, OUTCOME_NOT_FOUND, 10);
	metrics_mysql_error(m, 1213);
	metrics_mysql_error(m, 9999);
	metrics_redis_error(m, METRICS_REDIS_REPLY);
	metrics_reloaded(m, false);
	metrics_read_counters(m, c);
	ck_assert_uint_eq(c->requests[CONFIG_PROVIDER_STRIPE][OUTCOME_PROCESSED],
			  2);
	ck_assert_uint_eq(c->requests[CONFIG_PROVIDER_COUNT][OUTCOME_NOT_FOUND],
			  1);
	ck_assert_uint_eq(c->duration.count, 3);
	ck_assert_uint_eq(c->duration.buckets[0], 2);
	/* 20 s is past the last bucket: only in the count and the sum. */
	ck_assert_uint_eq(c->duration.sum_us, 20000710);
	ck_assert_uint_eq(metrics_mysql_code(5), 1213);
	ck_assert_uint_eq(c->mysql_errors[5], 1);
	ck_assert_uint_eq(metrics_mysql_code(METRICS_MYSQL_CODES), 0);
	ck_assert_uint_eq(c->mysql_errors[METRICS_MYSQL_CODES], 1);
	ck_assert_uint_eq(c->redis_errors[METRICS_REDIS_REPLY], 1);
	ck_assert_str_eq(metrics_redis_fault_name(METRICS_REDIS_REPLY), "reply");
	ck_assert_uint_eq(c->reloads_refused, 1);
	ck_assert_int_eq(c->workers_alive, 0);
	free(c);
	metrics_free(m);
}
END_TEST

/* A metrics_file written by another version of another layout (here:
 * 3 bytes longer than ours, then 4 KiB shorter) opens with its counters
 * from zero, and is never made shorter: a process of that version may
 * still have it mapped. */
static void another_layout(long delta)
{
	char path[] = "/tmp/payhook-test-metrics-XXXXXX";
	int fd = mkstemp(path);
	struct metrics *m;
	struct metrics_counters *c = malloc(sizeof(*c));
	struct error err;
	struct stat st;
	off_t theirs;
	char junk[512];

	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_nonnull(c);
	/* Our size, as a file of ours would be. */
	m = metrics_open_file(path, &err);
	ck_assert_msg(m != NULL, "%s", err.message);
	metrics_free(m);
	ck_assert_int_eq(fstat(fd, &st), 0);
	theirs = st.st_size + delta;
	ck_assert_int_eq(ftruncate(fd, theirs), 0);
	memset(junk, 0x5a, sizeof(junk));
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	m = metrics_open_file(path, &err);
	ck_assert_msg(m != NULL, "another layout refused: %s", err.message);
	metrics_read_counters(m, c);
	ck_assert_uint_eq(c->requests[CONFIG_PROVIDER_STRIPE][OUTCOME_PROCESSED], 0);
	metrics_request(m, CONFIG_PROVIDER_STRIPE, OUTCOME_PROCESSED, 700);
	metrics_read_counters(m, c);
	ck_assert_uint_eq(c->requests[CONFIG_PROVIDER_STRIPE][OUTCOME_PROCESSED], 1);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_ge(st.st_size, theirs);
	metrics_free(m);
	free(c);
	close(fd);
	unlink(path);
}

START_TEST(another_layout_starts_from_zero)
{
	another_layout(3);
	another_layout(-4096);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("metrics");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, worker_slot);
	tcase_add_test(tc, failure_ring);
	tcase_add_test(tc, counters);
	tcase_add_test(tc, another_layout_starts_from_zero);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
