/* test_dispatcher.c - unit tests of the hand-off's policy (lib/handoff/dispatcher.c)
 * on a clock of the test's own: retries counted or not, dead letters, the
 * target's Retry-After, the outage rule, the circuit (its state as told to
 * the metrics: closed, open, half-open) and its alerts once per
 * episode, dispatch_rate_per_s and the lease's margin; the classes of an
 * answer (a 4xx is that row's, 408/5xx/none outage-like, Retry-After a
 * pause), target_waiting, and the state another process left. The loop's
 * database and target paths are tests/integration/dispatch*.test's. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configuration.h"
#include "dispatcher.h"

/* The test's world: a clock moved by hand, no randomness (the back-off's
 * lower end), the events fired. */
struct world {
	int64_t now_us;
	unsigned events[4];
	struct dispatcher_circuit circuit; /* what on_circuit was last told */
	unsigned circuit_told;
};

static int64_t w_now(void *ctx)
{
	return ((struct world *)ctx)->now_us;
}

static void w_wait(void *ctx, long ms)
{
	((struct world *)ctx)->now_us += (int64_t)ms * 1000;
}

static bool w_stopping(void *ctx)
{
	(void)ctx;
	return false;
}

static uint64_t w_random(void *ctx)
{
	(void)ctx;
	return 0;
}

static int w_event(void *ctx, const struct dispatcher_event *event)
{
	((struct world *)ctx)->events[event->kind]++;
	return 0;
}

static void w_circuit(void *ctx, const struct dispatcher_circuit *c)
{
	struct world *w = ctx;

	w->circuit = *c;
	w->circuit_told++;
}

static struct config cfg;
static struct world world;
static struct dispatcher *d;

static void setup(void)
{
	struct dispatcher_env env = {
		.now_us = w_now,
		.wait_ms = w_wait,
		.stopping = w_stopping,
		.random = w_random,
		.on_event = w_event,
		.on_circuit = w_circuit,
		.ctx = &world,
	};
	struct error err;

	memset(&cfg, 0, sizeof(cfg));
	cfg.dispatch_url = "http://127.0.0.1:9/";
	cfg.dispatch_timeout_ms = 1000;
	cfg.dispatch_backoff_ms = 1000;
	cfg.dispatch_backoff_max_ms = 60000;
	cfg.dispatch_max_attempts = 3;
	cfg.dispatch_lease_ms = 60000;
	cfg.dispatch_batch_size = 10;
	cfg.dispatch_circuit_failures = 3;
	memset(&world, 0, sizeof(world));
	world.now_us = 1000000000;
	d = dispatcher_new(&cfg, &env, &err);
	ck_assert_ptr_nonnull(d);
}

static void teardown(void)
{
	dispatcher_free(d);
	d = NULL;
}

static struct transport_outcome answer(long status)
{
	struct transport_outcome out;

	memset(&out, 0, sizeof(out));
	out.http_status = status;
	out.delivered = status >= 200 && status <= 299;
	out.exit_status = -1;
	out.retry_after_ms = -1;
	snprintf(out.detail, sizeof(out.detail), "HTTP %ld", status);
	return out;
}

/* Judges out for a row claimed for its attempt number attempts; with flush,
 * tells the events as the loop does once the attempt is recorded. */
static struct dispatcher_verdict judge_out(unsigned long attempts,
					   const struct transport_outcome *out,
					   bool flush)
{
	struct handoff_row row;
	struct dispatcher_verdict v;

	memset(&row, 0, sizeof(row));
	row.id = 7;
	row.attempts = attempts;
	dispatcher_judge(d, &row, out, &v);
	if (flush)
		dispatcher_flush_events(d);
	return v;
}

/* Judges an HTTP answer of status. */
static struct dispatcher_verdict judge(unsigned long attempts, long status)
{
	struct transport_outcome out = answer(status);

	return judge_out(attempts, &out, true);
}

START_TEST(test_failure_among_successes_counts_then_dead)
{
	struct dispatcher_verdict v;

	/* Others are delivered between the bad payment's attempts. */
	for (unsigned long attempts = 1; attempts < 3; attempts++) {
		ck_assert_int_eq(judge(1, 200).result, DISPATCHER_DELIVERED);
		v = judge(attempts, 500);
		ck_assert_int_eq(v.result, DISPATCHER_RETRY);
		ck_assert(v.counted);
		ck_assert_str_eq(v.reason, "failed");
		/* Back-off: 1 s doubling, lower end of the jitter. */
		ck_assert_int_eq(v.delay_ms, 500L << (attempts - 1));
	}
	ck_assert_int_eq(judge(1, 200).result, DISPATCHER_DELIVERED);
	v = judge(3, 500);
	ck_assert_int_eq(v.result, DISPATCHER_DEAD);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_DEAD], 1);
	ck_assert_str_eq(dispatcher_circuit_name(d), "closed");
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_CIRCUIT_OPEN], 0);
}
END_TEST

START_TEST(test_outage_counts_nothing_and_opens_the_circuit)
{
	struct dispatcher_verdict v;

	/* The first failure cannot tell an outage yet: it counts. */
	v = judge(3, 500);
	ck_assert_int_eq(v.result, DISPATCHER_DEAD);
	ck_assert_int_eq(dispatcher_claim_limit(d), 10);
	/* Every later failure in the run is the outage's: never dead, even
	 * far past dispatch_max_attempts; the delay still grows. */
	v = judge(3, 500);
	ck_assert_int_eq(v.result, DISPATCHER_RETRY);
	ck_assert(!v.counted);
	ck_assert_str_eq(v.reason, "outage");
	ck_assert_int_eq(dispatcher_wait_ms(d), 0);
	v = judge(3, 500);
	ck_assert_int_eq(v.result, DISPATCHER_RETRY);
	ck_assert(!v.counted);
	/* Three in a row: open, one probe at a time, after a wait. */
	ck_assert_str_eq(dispatcher_circuit_name(d), "open");
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_CIRCUIT_OPEN], 1);
	ck_assert_int_eq(dispatcher_claim_limit(d), 1);
	ck_assert(dispatcher_target_blocked(d));
	ck_assert_int_eq(dispatcher_wait_ms(d), 500);
	for (int probe = 0; probe < 20; probe++) {
		w_wait(&world, dispatcher_wait_ms(d));
		ck_assert(!dispatcher_target_blocked(d));
		v = judge(3, 503);
		ck_assert_int_eq(v.result, DISPATCHER_RETRY);
		ck_assert(!v.counted);
		ck_assert_int_le(v.delay_ms, cfg.dispatch_backoff_max_ms);
	}
	/* The probes' waits double up to the cap; the open alert was once. */
	ck_assert_int_eq(dispatcher_wait_ms(d), 30000);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_CIRCUIT_OPEN], 1);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_DEAD], 1);
	/* A 2xx closes it: full batches again, the close alert once. */
	w_wait(&world, dispatcher_wait_ms(d));
	ck_assert_int_eq(judge(1, 204).result, DISPATCHER_DELIVERED);
	ck_assert_str_eq(dispatcher_circuit_name(d), "closed");
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_CIRCUIT_CLOSED], 1);
	ck_assert_int_eq(dispatcher_claim_limit(d), 10);
	ck_assert_int_eq(dispatcher_wait_ms(d), 0);
	/* A new outage is a new episode: alerted again. */
	for (int i = 0; i < 3; i++)
		judge(1, 500);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_CIRCUIT_OPEN], 2);
	ck_assert_uint_eq(dispatcher_stats(d)->circuit_opened, 2);
}
END_TEST

/* The circuit as on_circuit is told it: its state, since when, the
 * failures in a row and the next probe. */
static void told(enum dispatcher_circuit_state state, int64_t since_us,
		 unsigned failures, int64_t next_probe_us)
{
	ck_assert_int_eq(world.circuit.state, state);
	ck_assert_int_eq(world.circuit.since_us, since_us);
	ck_assert_uint_eq(world.circuit.failures, failures);
	ck_assert_int_eq(world.circuit.next_probe_us, next_probe_us);
}

START_TEST(test_circuit_told_closed_open_half_open)
{
	int64_t start = world.now_us, opened;
	unsigned calls;

	judge(1, 500);
	told(DISPATCHER_CIRCUIT_CLOSED, start, 1, 0);
	w_wait(&world, 100);
	judge(1, 500);
	w_wait(&world, 100);
	judge(1, 500);
	opened = world.now_us;
	told(DISPATCHER_CIRCUIT_OPEN, opened, 3, opened + 500000);
	/* The probe: half-open from its start until judged; a failed one
	 * leaves the circuit open since it opened, the next probe later. */
	w_wait(&world, dispatcher_wait_ms(d));
	dispatcher_started(d);
	told(DISPATCHER_CIRCUIT_HALF_OPEN, opened + 500000, 3, 0);
	w_wait(&world, 10);
	judge(1, 503);
	told(DISPATCHER_CIRCUIT_OPEN, opened, 4, world.now_us + 1000000);
	/* Nothing changed: nothing told. */
	calls = world.circuit_told;
	ck_assert_int_eq(dispatcher_wait_ms(d), 1000);
	ck_assert_uint_eq(world.circuit_told, calls);
	w_wait(&world, dispatcher_wait_ms(d));
	dispatcher_started(d);
	ck_assert_int_eq(world.circuit.state, DISPATCHER_CIRCUIT_HALF_OPEN);
	w_wait(&world, 10);
	judge(1, 200);
	told(DISPATCHER_CIRCUIT_CLOSED, world.now_us, 0, 0);
}
END_TEST

START_TEST(test_retry_after_waits_for_the_whole_target)
{
	struct transport_outcome out = answer(429);
	struct dispatcher_verdict v;

	out.retry_after_ms = 2000;
	/* The last attempt: still not dead. */
	v = judge_out(3, &out, true);
	ck_assert_int_eq(v.result, DISPATCHER_RETRY);
	ck_assert(!v.counted);
	ck_assert_str_eq(v.reason, "retry-after");
	ck_assert_int_eq(v.delay_ms, 2000);
	ck_assert(dispatcher_target_blocked(d));
	ck_assert_int_eq(dispatcher_wait_ms(d), 2000);
	w_wait(&world, 1999);
	ck_assert_int_eq(dispatcher_wait_ms(d), 1);
	w_wait(&world, 1);
	ck_assert_int_eq(dispatcher_wait_ms(d), 0);
	/* Not a failure of the target: no run of failures begins, so the
	 * next failure still counts, and the circuit stays closed. */
	for (int i = 0; i < 5; i++)
		judge_out(3, &out, true);
	ck_assert_str_eq(dispatcher_circuit_name(d), "closed");
	ck_assert(judge(1, 500).counted);
	/* A Retry-After beyond dispatch_backoff_max_ms waits the cap. */
	out.retry_after_ms = 86400000;
	v = judge_out(3, &out, true);
	ck_assert_int_eq(v.delay_ms, cfg.dispatch_backoff_max_ms);
	ck_assert_int_eq(dispatcher_wait_ms(d), cfg.dispatch_backoff_max_ms);
}
END_TEST

START_TEST(test_permanent_dead_once_per_episode)
{
	struct transport_outcome out = answer(0);

	out.permanent = true;
	ck_assert_int_eq(judge_out(1, &out, false).result, DISPATCHER_DEAD);
	/* Told once recorded: the loop flushes after the record. */
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_DEAD], 0);
	dispatcher_flush_events(d);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_DEAD], 1);
	ck_assert_int_eq(judge_out(1, &out, true).result, DISPATCHER_DEAD);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_DEAD], 1);
	/* A delivery ends the episode; the next dead row alerts again. */
	judge(1, 200);
	judge_out(1, &out, true);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_DEAD], 2);
	/* A row's own fault says nothing about the target. */
	ck_assert(judge(1, 500).counted);
}
END_TEST

START_TEST(test_alerts_say_what_to_do)
{
	struct dispatcher_event e;
	struct dispatcher_alert a;

	memset(&e, 0, sizeof(e));
	e.kind = DISPATCHER_EVENT_DEAD;
	e.id = 4711;
	e.attempts = 20;
	snprintf(e.provider, sizeof(e.provider), "stripe");
	snprintf(e.transaction_id, sizeof(e.transaction_id), "pi_1");
	snprintf(e.detail, sizeof(e.detail), "HTTP 500: boom");
	dispatcher_alert_init(&a, &e);
	ck_assert_str_eq(a.message.event, "payment_dead");
	ck_assert_uint_eq(a.message.id, 4711);
	ck_assert_str_eq(a.message.detail, "HTTP 500: boom");
	ck_assert_ptr_nonnull(strstr(a.message.summary, "stripe pi_1 (id 4711)"));
	ck_assert_ptr_nonnull(strstr(a.message.action,
				     "payhook-dispatch --requeue 4711"));
	/* A dead change: its own id, requeued with --changes. */
	e.row_kind = HANDOFF_ROW_CHANGE;
	e.id = 12;
	snprintf(e.change, sizeof(e.change), "refund re_1 succeeded");
	dispatcher_alert_init(&a, &e);
	ck_assert_str_eq(a.message.event, "change_dead");
	ck_assert_uint_eq(a.message.id, 0);
	ck_assert_ptr_nonnull(strstr(a.message.summary,
				     "refund re_1 succeeded of payment stripe "
				     "pi_1 (change id 12)"));
	ck_assert_ptr_nonnull(strstr(a.message.action,
				     "payhook-dispatch --requeue --changes 12"));
	e.row_kind = HANDOFF_ROW_PAYMENT;
	e.kind = DISPATCHER_EVENT_CIRCUIT_OPEN;
	e.failures = 5;
	dispatcher_alert_init(&a, &e);
	ck_assert_str_eq(a.message.event, "circuit_open");
	ck_assert_uint_eq(a.message.id, 0);
	ck_assert_ptr_nonnull(strstr(a.message.summary, "failed 5 attempts"));
	ck_assert_ptr_nonnull(strstr(a.message.action, "answers 2xx"));
	e.kind = DISPATCHER_EVENT_CIRCUIT_CLOSED;
	dispatcher_alert_init(&a, &e);
	ck_assert_str_eq(a.message.event, "circuit_closed");
}
END_TEST

START_TEST(test_rate_spaces_the_attempts)
{
	cfg.dispatch_rate_per_s = 4;
	ck_assert_int_eq(dispatcher_wait_ms(d), 0);
	dispatcher_started(d);
	ck_assert_int_eq(dispatcher_wait_ms(d), 250);
	ck_assert(!dispatcher_target_blocked(d));
	w_wait(&world, 100);
	ck_assert_int_eq(dispatcher_wait_ms(d), 150);
	w_wait(&world, 150);
	ck_assert_int_eq(dispatcher_wait_ms(d), 0);
	/* Without a cap, no wait. */
	cfg.dispatch_rate_per_s = 0;
	dispatcher_started(d);
	ck_assert_int_eq(dispatcher_wait_ms(d), 0);
}
END_TEST

START_TEST(test_lease_margin)
{
	/* timeout 1000 + margin 1000: more than 2000 ms must be left. */
	int64_t end = world.now_us + 2001 * 1000;

	ck_assert(dispatcher_lease_allows(d, end, 0));
	ck_assert(!dispatcher_lease_allows(d, end, 1));
	ck_assert(!dispatcher_lease_allows(d, world.now_us + 2000 * 1000, 0));
	ck_assert(!dispatcher_lease_allows(d, world.now_us - 1, 0));
}
END_TEST

START_TEST(test_a_4xx_is_that_rows_and_never_opens_the_circuit)
{
	static const long refused[] = { 400, 404, 409, 410, 422 };
	struct dispatcher_verdict v;

	/* Nothing else flowing: each refusal counts, in a row, and the row
	 * goes dead at dispatch_max_attempts; the circuit never opens. */
	for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
		for (unsigned long attempts = 1; attempts < 3; attempts++) {
			v = judge(attempts, refused[k]);
			ck_assert_int_eq(v.result, DISPATCHER_RETRY);
			ck_assert(v.counted);
			ck_assert_str_eq(v.reason, "rejected");
			ck_assert_int_eq(v.delay_ms, 500L << (attempts - 1));
		}
		v = judge(3, refused[k]);
		ck_assert_int_eq(v.result, DISPATCHER_DEAD);
		ck_assert_str_eq(dispatcher_circuit_name(d), "closed");
		ck_assert_int_eq(dispatcher_wait_ms(d), 0);
		judge(1, 200);
	}
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_CIRCUIT_OPEN], 0);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_DEAD], 5);
	/* The last answer is kept for the operators. */
	judge(1, 422);
	ck_assert_int_eq(world.circuit.last_status, 422);
	ck_assert_str_eq(world.circuit.last_error, "HTTP 422");
	/* A refusal neither starts nor breaks a run of outage failures. */
	judge(1, 500);
	judge(1, 422);
	v = judge(1, 500);
	ck_assert(!v.counted);
	ck_assert_str_eq(v.reason, "outage");
}
END_TEST

START_TEST(test_outage_like_answers)
{
	/* 408, 429 without Retry-After, 5xx, no answer at all (status 0):
	 * outage-like, so after the first none counts and three open. */
	static const long outage[] = { 408, 429, 500, 502, 503, 504, 0 };

	for (size_t k = 0; k < sizeof(outage) / sizeof(outage[0]); k++) {
		struct dispatcher_verdict v;

		judge(1, 200);
		ck_assert(judge(1, outage[k]).counted);
		v = judge(3, outage[k]);
		ck_assert_int_eq(v.result, DISPATCHER_RETRY);
		ck_assert(!v.counted);
		ck_assert_str_eq(v.reason, "outage");
	}
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_CIRCUIT_OPEN], 0);
	judge(1, 0);
	ck_assert_str_eq(dispatcher_circuit_name(d), "open");
	ck_assert_int_eq(world.circuit.last_status, 0);
}
END_TEST

START_TEST(test_target_waiting_once_per_episode)
{
	struct transport_outcome out = answer(503);
	struct dispatcher_verdict v;

	cfg.dispatch_alert_after_s = 5;
	out.retry_after_ms = 2000;
	/* Asked to wait 2 s, then again and again: alerted once the waits
	 * asked for since the first reach 5 s, and only once. */
	v = judge_out(1, &out, true);
	ck_assert(!v.counted);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_TARGET_WAITING], 0);
	w_wait(&world, 2000);
	judge_out(1, &out, true);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_TARGET_WAITING], 0);
	w_wait(&world, 2000);
	judge_out(1, &out, true);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_TARGET_WAITING], 1);
	for (int i = 0; i < 10; i++) {
		w_wait(&world, 2000);
		judge_out(1, &out, true);
	}
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_TARGET_WAITING], 1);
	ck_assert_str_eq(dispatcher_circuit_name(d), "closed");
	ck_assert_int_eq(world.circuit.pause_until_us, world.now_us + 2000000);
	/* A 2xx ends the episode: the next long wait alerts again. */
	w_wait(&world, 2000);
	judge(1, 200);
	out.retry_after_ms = 6000;
	judge_out(1, &out, true);
	ck_assert_uint_eq(world.events[DISPATCHER_EVENT_TARGET_WAITING], 2);
}
END_TEST

START_TEST(test_the_state_of_another_process_holds)
{
	struct target_state s;
	struct dispatcher_verdict v;

	/* Another dispatcher saw the target fail (a run of 2) and holds the
	 * open circuit's probe: this one waits for that probe, and a
	 * failure of its own does not count. */
	dispatcher_test_target(d, &s);
	s.failures = 2;
	dispatcher_set_target(d, &s);
	v = judge(1, 500);
	ck_assert(!v.counted);
	ck_assert_str_eq(dispatcher_circuit_name(d), "open");
	dispatcher_test_target(d, &s);
	s.probe_until_us = world.now_us + 60000000;
	s.probe_mine = false;
	s.next_probe_us = world.now_us;
	dispatcher_set_target(d, &s);
	ck_assert(dispatcher_target_blocked(d));
	ck_assert_int_eq(dispatcher_wait_ms(d), 60000);
	ck_assert_int_eq(world.circuit.state, DISPATCHER_CIRCUIT_HALF_OPEN);
	/* Its lease ends (it died): the probe may be taken here. */
	w_wait(&world, 60000);
	ck_assert(!dispatcher_target_blocked(d));
	/* Another one's Retry-After holds here too. */
	dispatcher_test_target(d, &s);
	s.open = false;
	s.pause_until_us = world.now_us + 3000000;
	dispatcher_set_target(d, &s);
	ck_assert_int_eq(dispatcher_wait_ms(d), 3000);
	ck_assert_int_eq(dispatcher_claim_limit(d), 10);
}
END_TEST

static Suite *dispatcher_suite(void)
{
	Suite *s = suite_create("dispatcher");
	TCase *tc = tcase_create("policy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_failure_among_successes_counts_then_dead);
	tcase_add_test(tc, test_outage_counts_nothing_and_opens_the_circuit);
	tcase_add_test(tc, test_circuit_told_closed_open_half_open);
	tcase_add_test(tc, test_retry_after_waits_for_the_whole_target);
	tcase_add_test(tc, test_permanent_dead_once_per_episode);
	tcase_add_test(tc, test_alerts_say_what_to_do);
	tcase_add_test(tc, test_rate_spaces_the_attempts);
	tcase_add_test(tc, test_lease_margin);
	tcase_add_test(tc, test_a_4xx_is_that_rows_and_never_opens_the_circuit);
	tcase_add_test(tc, test_outage_like_answers);
	tcase_add_test(tc, test_target_waiting_once_per_episode);
	tcase_add_test(tc, test_the_state_of_another_process_holds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dispatcher_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
