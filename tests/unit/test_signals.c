/* test_signals.c - unit tests of signals, the one signal set-up of the
 * programs: a signal that comes while the program works waits for its
 * wait (and does not end the process), a stop is kept, SIGHUP reopens a
 * log file logrotate moved, a signal ignored by whoever started the
 * program still comes, a ready descriptor ends the wait, and the mask
 * from before is given back. Each test runs in a process of its own
 * (Check's fork mode), as signals are the process's.
 */
#include "config.h"

#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "signals.h"

static const int served[] = { SIGTERM, SIGINT, SIGHUP, 0 };

static void open_served(void)
{
	struct error err = { "" };

	ck_assert_msg(signals_open(served, &err) == 0, "signals_open: %s",
		      err.message);
}

/* The file at path, whole (at most 4 KB), into buf. */
static void read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f != NULL) {
		n = fread(buf, 1, cap - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

START_TEST(a_stop_waits_for_the_wait)
{
	open_served();
	/* Blocked: the process goes on, and nothing is taken yet. */
	ck_assert_int_eq(raise(SIGTERM), 0);
	ck_assert_int_eq(signals_stop_signal(), 0);
	/* The wait ends at once, with the stop kept. */
	ck_assert_int_eq(signals_wait(NULL, 0, 10000), 0);
	ck_assert(signals_stopping());
	ck_assert_int_eq(signals_stop_signal(), SIGTERM);
	/* A second stop does not replace the first. */
	ck_assert_int_eq(raise(SIGINT), 0);
	ck_assert(signals_stopping());
	ck_assert_int_eq(signals_stop_signal(), SIGTERM);
}
END_TEST

START_TEST(the_hang_up_reopens_the_log)
{
	char dir[] = "/tmp/test_signals.XXXXXX", path[256], moved[256];
	char text[4096];
	struct error err = { "" };

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/payhook.log", dir);
	snprintf(moved, sizeof(moved), "%s/payhook.log.1", dir);
	log_init("test", LOG_LEVEL_INFO);
	ck_assert_msg(log_open_file(path, &err) == 0, "%s", err.message);
	open_served();
	log_info("before the rotation");
	ck_assert_int_eq(rename(path, moved), 0);
	ck_assert_int_eq(raise(SIGHUP), 0);
	ck_assert_int_eq(signals_wait(NULL, 0, 10000), 0);
	ck_assert(!signals_stopping());
	log_info("after the rotation");
	read_file(path, text, sizeof(text));
	ck_assert_ptr_nonnull(strstr(text, "after the rotation"));
	ck_assert_ptr_null(strstr(text, "before the rotation"));
	read_file(moved, text, sizeof(text));
	ck_assert_ptr_nonnull(strstr(text, "before the rotation"));
	ck_assert_ptr_null(strstr(text, "after the rotation"));
	unlink(path);
	unlink(moved);
	rmdir(dir);
}
END_TEST

START_TEST(an_ignored_signal_still_comes)
{
	/* As nohup starts a program. */
	signal(SIGHUP, SIG_IGN);
	open_served();
	ck_assert_int_eq(raise(SIGHUP), 0);
	ck_assert_int_eq(signals_next(), SIGHUP);
	ck_assert_int_eq(signals_next(), 0);
}
END_TEST

START_TEST(a_ready_descriptor_ends_the_wait)
{
	int fds[2];
	struct pollfd pfd;

	open_served();
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(write(fds[1], "x", 1), 1);
	pfd = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	ck_assert_int_eq(signals_wait(&pfd, 1, 10000), 1);
	ck_assert(pfd.revents & POLLIN);
	/* Nothing ready, no signal: the time runs out. */
	pfd = (struct pollfd){ .fd = fds[1], .events = 0 };
	ck_assert_int_eq(signals_wait(&pfd, 1, 20), 0);
	ck_assert(!signals_stopping());
	close(fds[0]);
	close(fds[1]);
}
END_TEST

START_TEST(the_mask_from_before_comes_back)
{
	sigset_t now;

	open_served();
	ck_assert_int_eq(sigprocmask(SIG_BLOCK, NULL, &now), 0);
	ck_assert(sigismember(&now, SIGTERM));
	ck_assert_int_ge(signals_fd(), 0);
	signals_close();
	ck_assert_int_eq(signals_fd(), -1);
	ck_assert_int_eq(sigprocmask(SIG_BLOCK, NULL, &now), 0);
	ck_assert(!sigismember(&now, SIGTERM));
	ck_assert(!sigismember(&now, SIGHUP));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("signals");
	TCase *tc = tcase_create("signals");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, a_stop_waits_for_the_wait);
	tcase_add_test(tc, the_hang_up_reopens_the_log);
	tcase_add_test(tc, an_ignored_signal_still_comes);
	tcase_add_test(tc, a_ready_descriptor_ends_the_wait);
	tcase_add_test(tc, the_mask_from_before_comes_back);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
