/* test_pool.c - unit tests of lib/pool.c with real forked children: a
 * crashed child is replaced while a helper runs (its wait is a timer of the
 * loop), a replacement that fails keeps the old generation and one that
 * starts retires it, a stop escalates to SIGKILL for a child that
 * ignores SIGTERM, and a crash loop is told once, and its end once.
 * Each test runs in its own process (Check's fork mode):
 * the pool blocks that process's signals, and a callback stops the loop by
 * sending SIGTERM to it.
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pool.h"
#include "timing.h"

/* What the callbacks saw, in the test's process. */
static struct {
	unsigned crashed;        /* on_child_gone with crashed */
	int helper_ok;           /* -1: done not called */
	size_t alive_at_done;    /* children when the helper ended */
	int replaced;            /* -1: on_replaced not called, else ok */
	pid_t before[8], after[8];
	size_t before_count, after_count;
	struct pool *pool;
	char alerts[4][32];      /* on_alert's events, in order */
	size_t alert_count;
	int64_t alert_us[4];     /* when each came */
} seen;

static void reset(void)
{
	memset(&seen, 0, sizeof(seen));
	seen.helper_ok = -1;
	seen.replaced = -1;
}

static void stop_self(void)
{
	kill(getpid(), SIGTERM);
}

/* A child that serves: ready, then waits for a signal. */
static void serve(int ready_fd)
{
	pool_child_ready(ready_fd);
	for (int i = 0; i < 600; i++)
		sleep(1);
	exit(0);
}

/* The first child crashes (exit 1) before it is ready; the next one, forked
 * once the pool counted the crash, serves. */
static void crash_first_entry(void *ctx, bool replacement, int ready_fd)
{
	(void)ctx;
	(void)replacement;
	if (seen.crashed == 0)
		exit(1);
	serve(ready_fd);
}

static void count_gone(void *ctx, pid_t pid, bool crashed)
{
	(void)ctx;
	(void)pid;
	if (crashed)
		seen.crashed++;
}

static void helper_done_stop(void *ctx, bool ok)
{
	(void)ctx;
	seen.helper_ok = ok;
	seen.alive_at_done = pool_pids(seen.pool, seen.after, 8);
	stop_self();
}

/* Runs a pool of pc with a helper, sleep(1) for seconds, whose end calls
 * done; a callback ends the loop with SIGTERM. Returns pool_run's unclean
 * count; seen.pool is freed. */
static unsigned run_pool(const struct pool_config *pc, const char *seconds,
			 void (*done)(void *ctx, bool ok))
{
	char *argv[] = { "/bin/sleep", (char *)seconds, NULL };
	struct error err;
	unsigned unclean = 99;

	seen.pool = pool_new(pc, &err);
	ck_assert_msg(seen.pool != NULL, "pool_new: %s", err.message);
	ck_assert_int_eq(pool_run_helper(seen.pool, argv, 5000, done, &err), 0);
	ck_assert_int_eq(pool_run(seen.pool, &unclean, &err), 0);
	pool_free(seen.pool);
	seen.pool = NULL;
	return unclean;
}

START_TEST(test_crash_replaced_during_helper)
{
	struct pool_config pc = {
		.noun = "sleeper", .count = 1, .stop_timeout_ms = 2000,
		.ready_timeout_ms = 2000, .entry = crash_first_entry,
		.on_child_gone = count_gone,
	};

	reset();
	/* The check of an upgrade takes 1 s; the child crashes at once and
	 * is restarted 100 ms later, while the helper runs. */
	run_pool(&pc, "1", helper_done_stop);
	ck_assert_int_eq(seen.helper_ok, 1);
	ck_assert_uint_eq(seen.crashed, 1);
	ck_assert_msg(seen.alive_at_done == 1, "children when the helper "
		      "ended: %zu, expected the restarted one", seen.alive_at_done);
}
END_TEST

/* A replacement exits before it is ready when told to fail. */
static bool replacements_fail;

static void generation_entry(void *ctx, bool replacement, int ready_fd)
{
	(void)ctx;
	if (replacement && replacements_fail)
		exit(1);
	serve(ready_fd);
}

static void replaced_stop(void *ctx, bool ok)
{
	(void)ctx;
	seen.replaced = ok;
	seen.after_count = pool_pids(seen.pool, seen.after, 8);
	stop_self();
}

static void helper_done_replace(void *ctx, bool ok)
{
	struct error err;

	(void)ctx;
	(void)ok;
	seen.before_count = pool_pids(seen.pool, seen.before, 8);
	if (pool_replace(seen.pool, &err) != 0)
		stop_self();
}

static void run_replacement(bool fail)
{
	struct pool_config pc = {
		.noun = "sleeper", .count = 3, .stop_timeout_ms = 2000,
		.ready_timeout_ms = 3000, .entry = generation_entry,
		.on_replaced = replaced_stop,
	};

	reset();
	replacements_fail = fail;
	/* The helper's end: the first generation runs by then. */
	run_pool(&pc, "0.3", helper_done_replace);
	ck_assert_int_eq(seen.replaced, !fail);
	ck_assert_uint_eq(seen.before_count, 3);
}

START_TEST(test_failed_replacement_keeps_old)
{
	run_replacement(true);
	/* The new children are retired (they may not be reaped yet); the
	 * old three are all still there. */
	for (size_t i = 0; i < seen.before_count; i++) {
		bool kept = false;

		for (size_t k = 0; k < seen.after_count; k++)
			kept = kept || seen.after[k] == seen.before[i];
		ck_assert_msg(kept, "old child %ld was retired",
			      (long)seen.before[i]);
	}
}
END_TEST

START_TEST(test_replacement_retires_old)
{
	run_replacement(false);
	/* Every old child is retired: none serves in a slot any more. */
	ck_assert_uint_ge(seen.after_count, 3);
	for (size_t i = 0; i < seen.before_count; i++)
		for (size_t k = 0; k < 3; k++)
			ck_assert_int_ne(seen.after[k], seen.before[i]);
}
END_TEST

/* A child that ignores SIGTERM: the stop ends with SIGKILL. */
static void stubborn_entry(void *ctx, bool replacement, int ready_fd)
{
	(void)ctx;
	(void)replacement;
	signal(SIGTERM, SIG_IGN);
	serve(ready_fd);
}

/* A helper's end that changes nothing. */
static void helper_done_nothing(void *ctx, bool ok)
{
	(void)ctx;
	ck_assert(ok);
}

static void helper_done_just_stop(void *ctx, bool ok)
{
	(void)ctx;
	(void)ok;
	stop_self();
}

START_TEST(test_stop_escalates)
{
	struct pool_config pc = {
		.noun = "sleeper", .count = 2, .stop_timeout_ms = 300,
		.ready_timeout_ms = 2000, .entry = stubborn_entry,
	};
	int64_t started = timing_now_us();
	unsigned unclean;
	long elapsed_ms;

	reset();
	unclean = run_pool(&pc, "0.3", helper_done_just_stop);
	elapsed_ms = (long)((timing_now_us() - started) / 1000);
	ck_assert_uint_eq(unclean, 2);
	ck_assert_msg(elapsed_ms >= 550 && elapsed_ms < 5000,
		      "the stop took %ld ms, expected 0.3 s + 300 ms", elapsed_ms);
	/* No child left to reap. */
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
}
END_TEST

/* Four children end at once (each a quick exit), the fifth serves. */
static void crash_four_entry(void *ctx, bool replacement, int ready_fd)
{
	(void)ctx;
	(void)replacement;
	if (seen.crashed < 4)
		exit(1);
	serve(ready_fd);
}

static void note_alert(void *ctx, const struct pool_alert *a)
{
	(void)ctx;
	if (seen.alert_count < 4) {
		snprintf(seen.alerts[seen.alert_count], sizeof(seen.alerts[0]),
			 "%s", a->event);
		seen.alert_us[seen.alert_count++] = timing_now_us();
	}
	ck_assert_ptr_nonnull(a->summary);
	ck_assert_ptr_nonnull(a->action);
	if (strcmp(a->event, POOL_ALERT_RECOVERED) == 0)
		stop_self();
}

START_TEST(test_crash_loop_told_once)
{
	struct pool_config pc = {
		.noun = "sleeper", .count = 1, .stop_timeout_ms = 2000,
		.ready_timeout_ms = 2000, .entry = crash_four_entry,
		.on_child_gone = count_gone, .on_alert = note_alert,
	};
	int64_t started = timing_now_us();
	long loop_ms, recovered_ms;

	reset();
	/* The helper (1 s) ends before the loop does: it changes nothing. */
	run_pool(&pc, "1", helper_done_nothing);
	ck_assert_uint_eq(seen.crashed, 4);
	ck_assert_uint_eq(seen.alert_count, 2);
	ck_assert_str_eq(seen.alerts[0], POOL_ALERT_CRASH_LOOP);
	ck_assert_str_eq(seen.alerts[1], POOL_ALERT_RECOVERED);
	/* The third quick exit (after 100 + 200 ms of back-off) begins it;
	 * the fifth child's POOL_STABLE_MS (after 400 + 800 more) ends it. */
	loop_ms = (long)((seen.alert_us[0] - started) / 1000);
	recovered_ms = (long)((seen.alert_us[1] - seen.alert_us[0]) / 1000);
	ck_assert_msg(loop_ms >= 250 && loop_ms < 1500, "the crash loop was "
		      "told after %ld ms, expected about 300", loop_ms);
	ck_assert_msg(recovered_ms >= POOL_STABLE_MS + 1100 &&
			      recovered_ms < POOL_STABLE_MS + 3000,
		      "its end was told %ld ms later, expected about %d",
		      recovered_ms, POOL_STABLE_MS + 1200);
}
END_TEST

static Suite *pool_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_crash_replaced_during_helper);
	tcase_add_test(tc, test_failed_replacement_keeps_old);
	tcase_add_test(tc, test_replacement_retires_old);
	tcase_add_test(tc, test_stop_escalates);
	tcase_add_test(tc, test_crash_loop_told_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pool_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
