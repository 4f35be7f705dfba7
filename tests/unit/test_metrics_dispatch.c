/* test_metrics_dispatch.c - unit tests of metrics_dispatch:
 * payhook-dispatch's circuits and counters in a real shared segment.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "metrics_dispatch.h"

/* A payhook-dispatch's circuit: published in an entry of its own, read
 * back by pid, gone once given back; a process that died without giving
 * it back is not shown, and its entry is taken again. */
START_TEST(dispatcher_circuits)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct metrics_circuit c = {
		.state = METRICS_CIRCUIT_OPEN, .since_ms = 1764600000123LL,
		.failures = 5, .next_probe_ms = 1764600060000LL,
	}, out[4];
	pid_t child;
	int status;

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(metrics_dispatch_read_circuits(m, out, 4), 0);
	/* A dispatcher that publishes and dies without giving it back. */
	child = fork();
	if (child == 0) {
		metrics_dispatch_circuit(m, &c);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_uint_eq(metrics_dispatch_read_circuits(m, out, 4), 0);
	c.state = METRICS_CIRCUIT_HALF_OPEN;
	metrics_dispatch_circuit(m, &c);
	ck_assert_uint_eq(metrics_dispatch_read_circuits(m, out, 4), 1);
	ck_assert_int_eq(out[0].pid, getpid());
	ck_assert_int_eq(out[0].state, METRICS_CIRCUIT_HALF_OPEN);
	ck_assert_int_eq(out[0].since_ms, c.since_ms);
	ck_assert_uint_eq(out[0].failures, 5);
	ck_assert_int_eq(out[0].next_probe_ms, c.next_probe_ms);
	metrics_dispatch_circuit_gone(m);
	ck_assert_uint_eq(metrics_dispatch_read_circuits(m, out, 4), 0);
	metrics_free(m);
}
END_TEST

/* The attempts, the delivered ones' latency and the gauges: nothing until
 * a dispatcher counts, then what it counted. */
START_TEST(dispatch_counters)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct metrics_dispatch_counters d;
	struct metrics_dispatch_gauges g = { .pending = 7, .in_flight = 2,
					     .dead = 1, .oldest_due_s = 30 };

	ck_assert_ptr_nonnull(m);
	ck_assert(!metrics_dispatch_read_counters(m, &d));
	metrics_dispatch_attempt(m, METRICS_DISPATCH_DELIVERED, 30000);
	metrics_dispatch_attempt(m, METRICS_DISPATCH_RETRY, 30000);
	metrics_dispatch_circuit_opened(m);
	metrics_dispatch_gauges(m, &g);
	ck_assert(metrics_dispatch_read_counters(m, &d));
	ck_assert_uint_eq(d.attempts[METRICS_DISPATCH_DELIVERED], 1);
	ck_assert_uint_eq(d.attempts[METRICS_DISPATCH_RETRY], 1);
	ck_assert_uint_eq(d.attempts[METRICS_DISPATCH_DEAD], 0);
	/* Only the delivered attempt is timed: 30 ms is in the 50 ms bucket. */
	ck_assert_uint_eq(d.delivery.count, 1);
	ck_assert_uint_eq(d.delivery.sum_us, 30000);
	ck_assert_int_eq(metrics_bucket_us(5), 50000);
	ck_assert_uint_eq(d.delivery.buckets[5], 1);
	ck_assert_uint_eq(d.circuit_opened, 1);
	ck_assert_uint_eq(d.gauges.pending, 7);
	ck_assert_uint_eq(d.gauges.dead, 1);
	ck_assert_int_gt(d.gauges_at_s, 0);
	ck_assert_str_eq(metrics_dispatch_result_name(METRICS_DISPATCH_DEAD),
			 "dead");
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics_dispatch");
	TCase *tc = tcase_create("metrics_dispatch");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, dispatcher_circuits);
	tcase_add_test(tc, dispatch_counters);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
