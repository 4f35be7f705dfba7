/* test_metrics_reconcile.c - unit tests of metrics_reconcile:
 * payhook-reconcile's figures per profile in a real shared segment, as
 * payhook-dispatch publishes them and payhook reads them back.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_reconcile.h"

/* Nothing before a dispatcher publishes; then each profile as published. */
START_TEST(publish_and_read)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct metrics_reconcile in[CONFIG_PROVIDER_COUNT];
	struct metrics_reconcile out[CONFIG_PROVIDER_COUNT];
	int64_t at_s;

	ck_assert_ptr_nonnull(m);
	ck_assert(!metrics_reconcile_read(m, out, &at_s));
	memset(in, 0, sizeof(in));
	in[CONFIG_PROVIDER_STRIPE] = (struct metrics_reconcile){
		.known = true, .recovered = 12, .discrepancies = 1,
		.failed_passes = 3, .last_success_s = 1764600000,
		.last_error_s = 1764603600, .failing = true,
	};
	strcpy(in[CONFIG_PROVIDER_STRIPE].last_error, "page 1: HTTP 401");
	metrics_reconcile_publish(m, in);
	ck_assert(metrics_reconcile_read(m, out, &at_s));
	ck_assert_int_gt(at_s, 0);
	ck_assert(out[CONFIG_PROVIDER_STRIPE].known);
	ck_assert_uint_eq(out[CONFIG_PROVIDER_STRIPE].recovered, 12);
	ck_assert_uint_eq(out[CONFIG_PROVIDER_STRIPE].discrepancies, 1);
	ck_assert_uint_eq(out[CONFIG_PROVIDER_STRIPE].failed_passes, 3);
	ck_assert_int_eq(out[CONFIG_PROVIDER_STRIPE].last_success_s, 1764600000);
	ck_assert_int_eq(out[CONFIG_PROVIDER_STRIPE].last_error_s, 1764603600);
	ck_assert(out[CONFIG_PROVIDER_STRIPE].failing);
	ck_assert(!out[CONFIG_PROVIDER_STRIPE].stale);
	ck_assert_str_eq(out[CONFIG_PROVIDER_STRIPE].last_error,
			 "page 1: HTTP 401");
	ck_assert(!out[CONFIG_PROVIDER_PADDLE].known);
	/* The episode ends, the error goes: so does what was shown. */
	in[CONFIG_PROVIDER_STRIPE].failing = false;
	in[CONFIG_PROVIDER_STRIPE].failed_passes = 0;
	in[CONFIG_PROVIDER_STRIPE].last_error[0] = '\0';
	metrics_reconcile_publish(m, in);
	ck_assert(metrics_reconcile_read(m, out, &at_s));
	ck_assert(!out[CONFIG_PROVIDER_STRIPE].failing);
	ck_assert_str_eq(out[CONFIG_PROVIDER_STRIPE].last_error, "");
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics_reconcile");
	TCase *tc = tcase_create("metrics_reconcile");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, publish_and_read);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
