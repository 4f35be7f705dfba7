/* test_handoff_store.c - unit tests of what lib/handoff/handoff_store.c
 * decides without a server: the back-off and its jitter, and the lease's
 * bound (handoff_store_check_config). Its statements are
 * tests/integration/dispatch.test's. */
#include "config.h"

#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configuration.h"
#include "handoff_store.h"

/* The defaults of the dispatch keys and MySQL timeouts that matter here. */
static void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mysql_read_timeout_s = 2;
	cfg->mysql_write_timeout_s = 2;
	cfg->dispatch_timeout_ms = 10000;
	cfg->dispatch_backoff_ms = 1000;
	cfg->dispatch_backoff_max_ms = 3600000;
	cfg->dispatch_max_attempts = 20;
	cfg->dispatch_lease_ms = 60000;
}

/* ---- back-off ---- */

START_TEST(test_backoff_doubles_with_equal_jitter)
{
	struct config cfg;

	config_defaults(&cfg);
	/* random 0 gives the lower end (d / 2), d - d / 2 the upper (d). */
	ck_assert_int_eq(handoff_store_backoff_ms(&cfg, 1, 0), 500);
	ck_assert_int_eq(handoff_store_backoff_ms(&cfg, 1, 500), 1000);
	ck_assert_int_eq(handoff_store_backoff_ms(&cfg, 2, 0), 1000);
	ck_assert_int_eq(handoff_store_backoff_ms(&cfg, 2, 1000), 2000);
	ck_assert_int_eq(handoff_store_backoff_ms(&cfg, 3, 0), 2000);
	ck_assert_int_eq(handoff_store_backoff_ms(&cfg, 3, 2000), 4000);
	/* attempts 0 is treated as the first. */
	ck_assert_int_eq(handoff_store_backoff_ms(&cfg, 0, 0), 500);
}
END_TEST

START_TEST(test_backoff_capped_never_overflows)
{
	struct config cfg;

	config_defaults(&cfg);
	for (unsigned long attempts = 1; attempts < 100; attempts++) {
		long d = handoff_store_backoff_ms(&cfg, attempts, UINT64_MAX);

		ck_assert_int_ge(d, 1);
		ck_assert_int_le(d, cfg.dispatch_backoff_max_ms);
	}
	ck_assert_int_eq(handoff_store_backoff_ms(&cfg, ULONG_MAX, 0), 1800000);
	ck_assert_int_eq(handoff_store_backoff_ms(&cfg, 1000000, 1800000),
			 3600000);
	/* A first delay above the cap is the cap. */
	cfg.dispatch_backoff_ms = 5000;
	cfg.dispatch_backoff_max_ms = 3000;
	ck_assert_int_eq(handoff_store_backoff_ms(&cfg, 1, 1500), 3000);
	/* 1 ms: 0 or 1, never below. */
	cfg.dispatch_backoff_ms = 1;
	cfg.dispatch_backoff_max_ms = 1;
	ck_assert_int_le(handoff_store_backoff_ms(&cfg, 7, 12345), 1);
}
END_TEST

START_TEST(test_backoff_jitter_spreads)
{
	struct config cfg;
	long lo = LONG_MAX, hi = 0;

	config_defaults(&cfg);
	for (uint64_t r = 0; r < 5000; r += 7) {
		long d = handoff_store_backoff_ms(&cfg, 4, r * 2654435761u);

		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	ck_assert_int_ge(lo, 4000);
	ck_assert_int_le(hi, 8000);
	ck_assert_int_gt(hi - lo, 2000);
}
END_TEST

/* ---- start-up checks ---- */

START_TEST(test_lease_bound)
{
	struct config cfg;
	struct error err;

	config_defaults(&cfg);
	/* 10000 + 2 x (2 + 3 x 2) s + 1000 = 27000 */
	cfg.dispatch_lease_ms = 27000;
	ck_assert_int_eq(handoff_store_check_config(&cfg, &err), -1);
	ck_assert_msg(strstr(err.message, "dispatch_lease_ms = 27000 is too "
					  "short: set it above 27000") != NULL,
		      "%s", err.message);
	cfg.dispatch_lease_ms = 27001;
	ck_assert_int_eq(handoff_store_check_config(&cfg, &err), 0);
	cfg.mysql_read_timeout_s = 3;
	ck_assert_int_eq(handoff_store_check_config(&cfg, &err), -1);
}
END_TEST

static Suite *handoff_store_suite(void)
{
	Suite *s = suite_create("handoff_store");
	TCase *tc;

	tc = tcase_create("backoff");
	tcase_add_test(tc, test_backoff_doubles_with_equal_jitter);
	tcase_add_test(tc, test_backoff_capped_never_overflows);
	tcase_add_test(tc, test_backoff_jitter_spreads);
	suite_add_tcase(s, tc);

	tc = tcase_create("config");
	tcase_add_test(tc, test_lease_bound);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(handoff_store_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
