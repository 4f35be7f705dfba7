/* test_status.c - unit tests of status and status_dispatch: the
 * Prometheus text of a real shared segment, read back by series (what
 * metrics_path and payhook --stats show), the pool's status alone, and
 * payhook-dispatch's part once a dispatcher counts, payhook-reconcile's
 * once a dispatcher published it.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics_dispatch.h"
#include "metrics_reconcile.h"
#include "status.h"

/* A profile's requests by outcome and status, the histogram cumulative in
 * seconds, the backends' errors. */
START_TEST(requests)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	char *text = malloc(STATUS_RENDER_MAX);
	struct config cfg;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(text);
	memset(&cfg, 0, sizeof(cfg));
	metrics_request(m, CONFIG_PROVIDER_STRIPE, OUTCOME_PROCESSED, 700);
	metrics_request(m, CONFIG_PROVIDER_STRIPE, OUTCOME_PROCESSED, 30000);
	metrics_mysql_error(m, 9999);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_requests_total{provider="
				      "\"stripe\",outcome=\"processed\","
				      "status=\"200\"}"), 2);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_request_duration_"
				      "seconds_bucket{le=\"0.001\"}"), 1);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_request_duration_"
				      "seconds_bucket{le=\"0.05\"}"), 2);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_request_duration_"
				      "seconds_count"), 2);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_backend_errors_total"
				      "{backend=\"mysql\",code=\"other\"}"), 1);
	/* No dispatcher counted: none of its series. */
	ck_assert_int_ge(status_render(m, &cfg, text, STATUS_RENDER_MAX), 0);
	ck_assert_ptr_null(strstr(text, "payhook_dispatch_"));
	/* The pool's status alone, and a buffer too small. */
	ck_assert_int_gt(status_render_pool(m, text, STATUS_RENDER_MAX), 0);
	ck_assert_ptr_nonnull(strstr(text, "payhook_pool_workers{state="
					   "\"configured\"} 0\n"));
	ck_assert_ptr_null(strstr(text, "payhook_requests_total"));
	ck_assert_int_eq(status_render(m, &cfg, text, 64), -1);
	free(text);
	metrics_free(m);
}
END_TEST

/* payhook-dispatch's part: its attempts, a circuit as a state set and its
 * figures by pid, the target's state with its error escaped. */
START_TEST(dispatcher)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct metrics_circuit c = {
		.state = METRICS_CIRCUIT_HALF_OPEN, .since_ms = 1764600000123LL,
		.failures = 5, .next_probe_ms = 1764600060000LL,
	};
	struct metrics_target t = { .state = METRICS_CIRCUIT_OPEN,
				    .failures = 3, .last_status = 503 };
	char *text = malloc(STATUS_RENDER_MAX);
	char series[96];
	struct config cfg;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(text);
	memset(&cfg, 0, sizeof(cfg));
	metrics_dispatch_attempt(m, METRICS_DISPATCH_DEAD, 1000);
	metrics_dispatch_circuit(m, &c);
	strcpy(t.last_error, "HTTP 503 \"busy\"");
	metrics_dispatch_target(m, &t);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_dispatch_attempts_total"
				      "{result=\"dead\"}"), 1);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_dispatch_delivery_"
				      "seconds_count"), 0);
	snprintf(series, sizeof(series), "payhook_dispatch_circuit_state"
		 "{pid=\"%ld\",state=\"half_open\"}", (long)getpid());
	ck_assert_int_eq(status_value(m, &cfg, series), 1);
	snprintf(series, sizeof(series), "payhook_dispatch_circuit_state"
		 "{pid=\"%ld\",state=\"open\"}", (long)getpid());
	ck_assert_int_eq(status_value(m, &cfg, series), 0);
	snprintf(series, sizeof(series), "payhook_dispatch_circuit_failures"
		 "{pid=\"%ld\"}", (long)getpid());
	ck_assert_int_eq(status_value(m, &cfg, series), 5);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_dispatch_target_"
				      "circuit_state{state=\"open\"}"), 1);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_dispatch_target_"
				      "last_status"), 503);
	ck_assert_int_ge(status_render(m, &cfg, text, STATUS_RENDER_MAX), 0);
	ck_assert_msg(strstr(text, "payhook_dispatch_circuit_since_seconds{pid=")
		      != NULL, "%s", text);
	ck_assert_msg(strstr(text, "last_error_info{error=\"HTTP 503 "
				   "\\\"busy\\\"\"} 1\n") != NULL, "%s", text);
	metrics_dispatch_circuit_gone(m);
	free(text);
	metrics_free(m);
}
END_TEST

/* payhook-reconcile's part: none before a dispatcher published it, then
 * each profile with a row, its alerts as a pair of 0/1. */
START_TEST(reconcile)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct metrics_reconcile rows[CONFIG_PROVIDER_COUNT];
	char *text = malloc(STATUS_RENDER_MAX);
	struct config cfg;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(text);
	memset(&cfg, 0, sizeof(cfg));
	ck_assert_int_ge(status_render(m, &cfg, text, STATUS_RENDER_MAX), 0);
	ck_assert_ptr_null(strstr(text, "payhook_reconcile_"));
	memset(rows, 0, sizeof(rows));
	rows[CONFIG_PROVIDER_STRIPE] = (struct metrics_reconcile){
		.known = true, .recovered = 5, .discrepancies = 2,
		.failed_passes = 0, .last_success_s = 1764600000, .stale = true,
	};
	metrics_reconcile_publish(m, rows);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_reconcile_recovered_"
				      "total{provider=\"stripe\"}"), 5);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_reconcile_"
				      "discrepancies_total{provider="
				      "\"stripe\"}"), 2);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_reconcile_last_success_"
				      "timestamp_seconds{provider="
				      "\"stripe\"}"), 1764600000);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_reconcile_alert{"
				      "provider=\"stripe\",kind=\"stale\"}"),
			 1);
	ck_assert_int_eq(status_value(m, &cfg, "payhook_reconcile_alert{"
				      "provider=\"stripe\",kind=\"failing\"}"),
			 0);
	/* A profile without a row shows nothing. */
	ck_assert_int_eq(status_value(m, &cfg, "payhook_reconcile_recovered_"
				      "total{provider=\"paddle\"}"), -1);
	ck_assert_int_gt(status_value(m, &cfg, "payhook_reconcile_timestamp_"
				      "seconds"), 0);
	free(text);
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("status");
	TCase *tc = tcase_create("status");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, requests);
	tcase_add_test(tc, dispatcher);
	tcase_add_test(tc, reconcile);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
