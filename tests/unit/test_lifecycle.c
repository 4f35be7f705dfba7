/* test_lifecycle.c - unit tests of lib/shared/lifecycle.c: state names and kinds,
 * RFC 3339 event times, and which of two events of one object decides its
 * row (newer wins, older loses, the same state is a duplicate, equal times
 * break by the order, a cumulative amount keeps the largest).
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"

START_TEST(test_names_and_kinds)
{
	enum lifecycle_state st;

	ck_assert_str_eq(lifecycle_kind_name(LIFECYCLE_REFUND), "refund");
	ck_assert_str_eq(lifecycle_kind_name(LIFECYCLE_DISPUTE), "dispute");
	ck_assert_str_eq(lifecycle_kind_name(LIFECYCLE_CANCELLATION),
			 "cancellation");
	ck_assert_str_eq(lifecycle_state_name(LIFECYCLE_SUCCEEDED), "succeeded");
	ck_assert_str_eq(lifecycle_state_name(LIFECYCLE_LOST), "lost");
	ck_assert_int_eq(lifecycle_state_parse(LIFECYCLE_REFUND, "pending", 7,
					       &st), 0);
	ck_assert_int_eq(st, LIFECYCLE_PENDING);
	ck_assert_int_eq(lifecycle_state_parse(LIFECYCLE_DISPUTE, "won", 3, &st),
			 0);
	ck_assert_int_eq(st, LIFECYCLE_WON);
	/* A state of another kind is no state of this one. */
	ck_assert_int_eq(lifecycle_state_parse(LIFECYCLE_REFUND, "won", 3, &st),
			 -1);
	ck_assert_int_eq(lifecycle_state_parse(LIFECYCLE_DISPUTE, "failed", 6,
					       &st), -1);
	ck_assert_int_eq(lifecycle_state_parse(LIFECYCLE_CANCELLATION, "pending",
					       7, &st), -1);
	ck_assert_int_eq(lifecycle_state_parse(LIFECYCLE_CANCELLATION,
					       "succeeded", 9, &st), 0);
	/* Prefixes and case do not match. */
	ck_assert_int_eq(lifecycle_state_parse(LIFECYCLE_REFUND, "succeed", 7,
					       &st), -1);
	ck_assert_int_eq(lifecycle_state_parse(LIFECYCLE_REFUND, "Pending", 7,
					       &st), -1);
}
END_TEST

static struct lifecycle_time parsed(const char *text)
{
	struct lifecycle_time t = { -1, -1 };

	ck_assert_msg(lifecycle_time_parse(text, strlen(text), &t) == 0,
		      "refused %s", text);
	return t;
}

static void assert_refused(const char *text)
{
	struct lifecycle_time t = { 7, 7 };

	ck_assert_msg(lifecycle_time_parse(text, strlen(text), &t) == -1,
		      "accepted %s", text);
	ck_assert_int_eq(t.seconds, 7); /* untouched */
}

START_TEST(test_time_parse)
{
	struct lifecycle_time t;

	t = parsed("1970-01-01T00:00:00Z");
	ck_assert_int_eq(t.seconds, 0);
	ck_assert_int_eq(t.micros, 0);
	/* Paddle's example occurred_at, microseconds kept. */
	t = parsed("2023-08-21T14:08:43.786457Z");
	ck_assert_int_eq(t.seconds, 1692626923);
	ck_assert_int_eq(t.micros, 786457);
	/* Square's milliseconds. */
	t = parsed("2020-11-22T21:16:51.310Z");
	ck_assert_int_eq(t.seconds, 1606079811);
	ck_assert_int_eq(t.micros, 310000);
	/* Adyen's offset: 11:11:44+01:00 is 10:11:44Z. */
	t = parsed("2017-02-17T11:11:44+01:00");
	ck_assert_int_eq(t.seconds, 1487326304);
	t = parsed("2021-12-31T19:00:00-05:00");
	ck_assert_int_eq(t.seconds, parsed("2022-01-01T00:00:00Z").seconds);
	/* Nanoseconds are cut to the microsecond. */
	t = parsed("2024-02-29T23:59:59.123456789Z");
	ck_assert_int_eq(t.micros, 123456);
	ck_assert_int_eq(t.seconds, 1709251199);
	t = parsed("9999-12-31T23:59:59Z");
	ck_assert_int_eq(t.seconds, INT64_C(253402300799));
	t = parsed("2016-12-31T23:59:60Z"); /* a leap second */
	ck_assert_int_eq(t.seconds, parsed("2017-01-01T00:00:00Z").seconds);

	assert_refused("");
	assert_refused("2023-08-21");
	assert_refused("2023-08-21T14:08:43");       /* no zone */
	assert_refused("2023-08-21 14:08:43Z");      /* space */
	assert_refused("2023-02-29T00:00:00Z");      /* not a leap year */
	assert_refused("2023-13-01T00:00:00Z");
	assert_refused("2023-08-21T24:00:00Z");
	assert_refused("2023-08-21T14:08:43.Z");     /* empty fraction */
	assert_refused("2023-08-21T14:08:43.1234567890Z");
	assert_refused("2023-08-21T14:08:43+0100");
	assert_refused("2023-08-21T14:08:43Z ");
	assert_refused("1969-12-31T23:59:59Z");
	assert_refused("1970-01-01T00:30:00+01:00"); /* before 1970 in UTC */
	assert_refused("+2023-08-21T14:08:43Z");
	ck_assert_int_eq(lifecycle_time_from_unix(1692942318, &t), 0);
	ck_assert_int_eq(t.seconds, 1692942318);
	ck_assert_int_eq(lifecycle_time_from_unix(-1, &t), -1);
	ck_assert_int_eq(lifecycle_time_from_unix(INT64_C(253402300800), &t), -1);
}
END_TEST

static struct lifecycle_event event(enum lifecycle_kind kind,
				    enum lifecycle_state state, int64_t s,
				    int32_t us)
{
	struct lifecycle_event e;

	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.state = state;
	e.occurred_at.seconds = s;
	e.occurred_at.micros = us;
	e.link.amount = 500;
	return e;
}

START_TEST(test_supersedes)
{
	struct lifecycle_event pending = event(LIFECYCLE_REFUND,
					       LIFECYCLE_PENDING, 1000, 0);
	struct lifecycle_event done = event(LIFECYCLE_REFUND,
					    LIFECYCLE_SUCCEEDED, 1000, 1);
	struct lifecycle_event done_early = event(LIFECYCLE_REFUND,
						  LIFECYCLE_SUCCEEDED, 999, 0);
	struct lifecycle_event failed_tie = event(LIFECYCLE_REFUND,
						  LIFECYCLE_FAILED, 1000, 1);
	struct lifecycle_event pending_tie = event(LIFECYCLE_REFUND,
						   LIFECYCLE_PENDING, 1000, 1);

	/* Newer wins, older loses, by the microsecond. */
	ck_assert(lifecycle_supersedes(&pending, &done));
	ck_assert(!lifecycle_supersedes(&done, &pending));
	ck_assert(!lifecycle_supersedes(&pending, &done_early));
	/* The state the row holds is a duplicate, even when newer. */
	done_early.state = LIFECYCLE_PENDING;
	ck_assert(!lifecycle_supersedes(&done_early, &pending));
	ck_assert(!lifecycle_supersedes(&pending, &pending));
	/* Equal times: pending -> succeeded -> failed. */
	ck_assert(lifecycle_supersedes(&done, &failed_tie));
	ck_assert(!lifecycle_supersedes(&failed_tie, &done));
	ck_assert(lifecycle_supersedes(&pending_tie, &done));
	ck_assert(!lifecycle_supersedes(&done, &pending_tie));
}
END_TEST

START_TEST(test_supersedes_dispute_order)
{
	struct lifecycle_event open = event(LIFECYCLE_DISPUTE, LIFECYCLE_OPEN,
					    50, 0);
	struct lifecycle_event won = event(LIFECYCLE_DISPUTE, LIFECYCLE_WON,
					   50, 0);
	struct lifecycle_event lost = event(LIFECYCLE_DISPUTE, LIFECYCLE_LOST,
					    50, 0);
	struct lifecycle_event reopened = event(LIFECYCLE_DISPUTE,
						LIFECYCLE_OPEN, 51, 0);

	ck_assert(lifecycle_supersedes(&open, &won));
	ck_assert(lifecycle_supersedes(&won, &lost));
	ck_assert(lifecycle_supersedes(&open, &lost));
	ck_assert(!lifecycle_supersedes(&lost, &won));
	ck_assert(!lifecycle_supersedes(&won, &open));
	/* A later event wins whatever the order says: a dispute reopened. */
	ck_assert(lifecycle_supersedes(&lost, &reopened));
}
END_TEST

START_TEST(test_supersedes_cumulative)
{
	struct lifecycle_event first = event(LIFECYCLE_REFUND,
					     LIFECYCLE_SUCCEEDED, 100, 0);
	struct lifecycle_event more = event(LIFECYCLE_REFUND,
					    LIFECYCLE_SUCCEEDED, 90, 0);

	first.cumulative = more.cumulative = true;
	more.link.amount = 800;
	/* The larger running total wins even when announced earlier... */
	ck_assert(lifecycle_supersedes(&first, &more));
	/* ...and a smaller or equal one never, even when later. */
	ck_assert(!lifecycle_supersedes(&more, &first));
	ck_assert(!lifecycle_supersedes(&more, &more));
	/* Not cumulative: the same state is a duplicate whatever the amount. */
	first.cumulative = more.cumulative = false;
	ck_assert(!lifecycle_supersedes(&first, &more));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lifecycle");
	TCase *tc = tcase_create("model");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_names_and_kinds);
	tcase_add_test(tc, test_time_parse);
	tcase_add_test(tc, test_supersedes);
	tcase_add_test(tc, test_supersedes_dispute_order);
	tcase_add_test(tc, test_supersedes_cumulative);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
