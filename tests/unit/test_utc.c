/* test_utc.c - unit tests of utc: Unix times as UTC text, a format of the
 * caller's, and the failures (no room, no calendar date) that leave the
 * text empty.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "utc.h"

START_TEST(rfc3339)
{
	char out[UTC_RFC3339_MAX];

	ck_assert_int_eq(utc_format(0, UTC_RFC3339, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "1970-01-01T00:00:00Z");
	ck_assert_int_eq(utc_format(1796169600, UTC_RFC3339, out, sizeof(out)),
			 0);
	ck_assert_str_eq(out, "2026-12-02T00:00:00Z");
	ck_assert_int_eq(utc_format(253402300799LL, UTC_RFC3339, out,
				    sizeof(out)), 0);
	ck_assert_str_eq(out, "9999-12-31T23:59:59Z");
}
END_TEST

START_TEST(a_format_of_the_callers)
{
	char out[64];

	ck_assert_int_eq(utc_format(1796173323, "%Y-%m-%dT%H%%3A%M%%3A%SZ", out,
				    sizeof(out)), 0);
	ck_assert_str_eq(out, "2026-12-02T01%3A02%3A03Z");
	ck_assert_int_eq(utc_format(1796173323, "last %H:%M", out,
				    sizeof(out)), 0);
	ck_assert_str_eq(out, "last 01:02");
}
END_TEST

START_TEST(failures_leave_it_empty)
{
	char out[UTC_RFC3339_MAX] = "x";

	/* No room for the '\0'. */
	ck_assert_int_eq(utc_format(0, UTC_RFC3339, out, UTC_RFC3339_MAX - 1),
			 -1);
	ck_assert_str_eq(out, "");
	out[0] = 'x';
	/* Far past any calendar year gmtime gives. */
	ck_assert_int_eq(utc_format(INT64_MAX, UTC_RFC3339, out, sizeof(out)),
			 -1);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(utc_format(0, UTC_RFC3339, out, 0), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("utc");
	TCase *tc = tcase_create("utc");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, rfc3339);
	tcase_add_test(tc, a_format_of_the_callers);
	tcase_add_test(tc, failures_leave_it_empty);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
