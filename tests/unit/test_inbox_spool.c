/* test_inbox_spool.c - unit tests of inbox_spool on a real directory: what
 * is appended comes back whole and in order, in batches of the size asked;
 * a load that fails resumes where the last committed batch ended (nothing
 * twice); the file of a process that died is loaded by another and
 * removed, one whose writer lives is left alone; a delivery cut short is
 * left out and counted; an orphan that cannot be opened is said in the log;
 * a directory that is missing is an error that names it.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inbox_spool.h"
#include "log.h"

#define MAX_SEEN 64

/* What the load callback was given, copied. */
static struct seen {
	char provider[40], outcome[16], reason[64], headers[128];
	char body[64];
	size_t len;
	int64_t received_us;
} seen[MAX_SEEN];
static size_t seen_n, batches, fail_at_batch;

static int collect(void *ctx, const struct inbox_row *rows, size_t n,
		   struct error *err)
{
	(void)ctx;
	batches++;
	if (fail_at_batch != 0 && batches == fail_at_batch)
		return error_set(err, "the database said no");
	for (size_t i = 0; i < n && seen_n < MAX_SEEN; i++) {
		struct seen *s = &seen[seen_n++];

		snprintf(s->provider, sizeof(s->provider), "%s", rows[i].provider);
		snprintf(s->outcome, sizeof(s->outcome), "%s", rows[i].outcome);
		snprintf(s->reason, sizeof(s->reason), "%s", rows[i].reason);
		snprintf(s->headers, sizeof(s->headers), "%s", rows[i].headers);
		ck_assert_uint_le(rows[i].len, sizeof(s->body));
		memcpy(s->body, rows[i].body, rows[i].len);
		s->len = rows[i].len;
		s->received_us = rows[i].received_us;
	}
	return 0;
}

static void reset_seen(void)
{
	seen_n = batches = fail_at_batch = 0;
}

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/payhook-spool.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	reset_seen();
}

/* The spool files in dir. */
static int spool_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, "inbox-", 6) == 0;
	closedir(d);
	return n;
}

static void remove_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Delivery i: a body with a '\0' inside, every third one unauthorized. */
static struct inbox_row row(int i, char *body, size_t cap)
{
	int len = snprintf(body, cap, "{\"id\":\"evt_%d\"}", i);

	body[len] = '\0';
	body[len + 1] = 'x';
	return (struct inbox_row){
		.provider = i % 2 ? "stripe" : "adyen",
		.received_us = 1764630000000000LL + i,
		.outcome = i % 3 == 0 ? "unauthorized" : "ignored",
		.reason = "payment_intent.created is not recorded",
		.headers = "{\"Stripe-Signature\":\"t=1,v1=ab\"}",
		.body = body,
		.len = (size_t)len + 2,
	};
}

static void append(struct inbox_spool *spool, int first, int n)
{
	for (int i = first; i < first + n; i++) {
		char body[64];
		struct inbox_row r = row(i, body, sizeof(body));
		struct error err;

		ck_assert_msg(inbox_spool_append(spool, &r, 1, &err) == 0, "%s",
			      err.message);
	}
}

/* seen[k] is delivery i, whole. */
static void check_seen(size_t k, int i)
{
	char body[64];
	struct inbox_row r = row(i, body, sizeof(body));

	ck_assert_str_eq(seen[k].provider, r.provider);
	ck_assert_str_eq(seen[k].outcome, r.outcome);
	ck_assert_str_eq(seen[k].reason, r.reason);
	ck_assert_str_eq(seen[k].headers, r.headers);
	ck_assert_uint_eq(seen[k].len, r.len);
	ck_assert_mem_eq(seen[k].body, r.body, r.len);
	ck_assert_int_eq(seen[k].received_us, r.received_us);
}

static int load(struct inbox_spool *spool, size_t max_rows, size_t *loaded,
		size_t *lost)
{
	struct error err;

	return inbox_spool_load(spool, max_rows, 65536, collect, NULL, loaded,
				lost, &err);
}

START_TEST(own_file_comes_back_in_batches)
{
	struct error err;
	struct inbox_spool *spool;
	size_t loaded, lost;

	make_dir();
	spool = inbox_spool_new(dir, &err);
	ck_assert_ptr_nonnull(spool);
	ck_assert_uint_eq(inbox_spool_pending(spool), 0);
	append(spool, 1, 5);
	ck_assert_uint_gt(inbox_spool_pending(spool), 0);
	ck_assert_int_eq(load(spool, 2, &loaded, &lost), 0);
	ck_assert_uint_eq(loaded, 5);
	ck_assert_uint_eq(lost, 0);
	ck_assert_uint_eq(batches, 3);
	for (int i = 0; i < 5; i++)
		check_seen((size_t)i, i + 1);
	ck_assert_uint_eq(inbox_spool_pending(spool), 0);
	/* Loaded once: a second load finds nothing. */
	ck_assert_int_eq(load(spool, 2, &loaded, &lost), 0);
	ck_assert_uint_eq(loaded, 0);
	ck_assert_uint_eq(seen_n, 5);
	/* Emptied, written on. */
	append(spool, 6, 1);
	ck_assert_int_eq(load(spool, 2, &loaded, &lost), 0);
	ck_assert_uint_eq(loaded, 1);
	check_seen(5, 6);
	/* An empty file goes with its process. */
	inbox_spool_free(spool);
	ck_assert_int_eq(spool_files(), 0);
	remove_dir();
}
END_TEST

START_TEST(failed_load_resumes_after_the_last_batch)
{
	struct error err;
	struct inbox_spool *spool;
	size_t loaded, lost;

	make_dir();
	spool = inbox_spool_new(dir, &err);
	append(spool, 1, 5);
	fail_at_batch = 2;
	ck_assert_int_eq(load(spool, 2, &loaded, &lost), -1);
	ck_assert_uint_eq(loaded, 2);
	ck_assert_uint_eq(seen_n, 2);
	ck_assert_uint_gt(inbox_spool_pending(spool), 0);
	fail_at_batch = 0;
	ck_assert_int_eq(load(spool, 2, &loaded, &lost), 0);
	ck_assert_uint_eq(loaded, 3);
	ck_assert_uint_eq(seen_n, 5);
	for (int i = 0; i < 5; i++)
		check_seen((size_t)i, i + 1);
	inbox_spool_free(spool);
	remove_dir();
}
END_TEST

/* A child that appends n deliveries from first and exits without freeing
 * its spool (as a worker killed would), or waits for a byte on hold first
 * (-1: none). */
static pid_t child_appends(int first, int n, int hold)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct error err;
		struct inbox_spool *spool = inbox_spool_new(dir, &err);
		char c;

		if (spool == NULL)
			_exit(2);
		append(spool, first, n);
		if (hold >= 0 && read(hold, &c, 1) < 0)
			_exit(3);
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

START_TEST(orphans_are_loaded_and_removed)
{
	struct error err;
	struct inbox_spool *spool;
	size_t loaded, lost;
	int gate[2];
	pid_t live;

	make_dir();
	reap(child_appends(1, 3, -1));
	ck_assert_int_eq(pipe(gate), 0);
	live = child_appends(10, 2, gate[0]);
	/* The live one has written once its file is there twice over. */
	for (int i = 0; i < 500 && spool_files() < 2; i++)
		usleep(10000);
	ck_assert_int_eq(spool_files(), 2);
	usleep(50000);
	spool = inbox_spool_new(dir, &err);
	ck_assert_int_eq(load(spool, 64, &loaded, &lost), 0);
	/* The dead one's, not the live one's. */
	ck_assert_uint_eq(loaded, 3);
	for (int i = 0; i < 3; i++)
		check_seen((size_t)i, i + 1);
	ck_assert_int_eq(spool_files(), 1);
	ck_assert_int_eq(write(gate[1], "x", 1), 1);
	reap(live);
	ck_assert_int_eq(load(spool, 64, &loaded, &lost), 0);
	ck_assert_uint_eq(loaded, 2);
	check_seen(3, 10);
	check_seen(4, 11);
	ck_assert_int_eq(spool_files(), 0);
	close(gate[0]);
	close(gate[1]);
	inbox_spool_free(spool);
	remove_dir();
}
END_TEST

START_TEST(a_delivery_cut_short_is_left_out)
{
	struct error err;
	struct inbox_spool *spool;
	size_t loaded, lost;
	DIR *d;
	struct dirent *e;
	char path[512] = "";

	make_dir();
	reap(child_appends(1, 3, -1));
	d = opendir(dir);
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "inbox-", 6) == 0)
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
	closedir(d);
	ck_assert_str_ne(path, "");
	{
		struct stat st;

		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_int_eq(truncate(path, st.st_size - 5), 0);
	}
	spool = inbox_spool_new(dir, &err);
	ck_assert_int_eq(load(spool, 64, &loaded, &lost), 0);
	ck_assert_uint_eq(loaded, 2);
	ck_assert_uint_eq(lost, 1);
	check_seen(0, 1);
	check_seen(1, 2);
	ck_assert_int_eq(spool_files(), 0);
	inbox_spool_free(spool);
	remove_dir();
}
END_TEST

START_TEST(a_file_with_deliveries_outlives_its_spool)
{
	struct error err;
	struct inbox_spool *spool;
	size_t loaded, lost;

	make_dir();
	spool = inbox_spool_new(dir, &err);
	append(spool, 1, 2);
	inbox_spool_free(spool);
	ck_assert_int_eq(spool_files(), 1);
	spool = inbox_spool_new(dir, &err);
	ck_assert_int_eq(load(spool, 64, &loaded, &lost), 0);
	ck_assert_uint_eq(loaded, 2);
	ck_assert_int_eq(spool_files(), 0);
	inbox_spool_free(spool);
	remove_dir();
}
END_TEST

/* An orphan that cannot be opened (here a link, never followed) is said
 * in the log, once a minute at most, and the rest is loaded. */
START_TEST(an_orphan_that_cannot_be_opened_is_said)
{
	struct error err;
	struct inbox_spool *spool;
	size_t loaded, lost;
	char link_path[128], log_path[128], text[4096] = "";
	FILE *f;
	size_t n;

	make_dir();
	reap(child_appends(1, 2, -1));
	snprintf(link_path, sizeof(link_path), "%s/inbox-1-99999.spool", dir);
	ck_assert_int_eq(symlink("/etc/hostname", link_path), 0);
	snprintf(log_path, sizeof(log_path), "%s.log", dir);
	ck_assert_int_eq(log_open_file(log_path, &err), 0);
	spool = inbox_spool_new(dir, &err);
	ck_assert_int_eq(load(spool, 64, &loaded, &lost), 0);
	ck_assert_uint_eq(loaded, 2);
	ck_assert_int_eq(load(spool, 64, &loaded, &lost), 0);
	f = fopen(log_path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	ck_assert_msg(strstr(text, "inbox-1-99999.spool cannot be opened") !=
			      NULL, "%s", text);
	/* Once, though two loads passed it. */
	ck_assert_ptr_null(strstr(strstr(text, "cannot be opened") + 1,
				  "cannot be opened"));
	inbox_spool_free(spool);
	unlink(log_path);
	remove_dir();
}
END_TEST

START_TEST(a_missing_directory_is_named)
{
	struct error err;
	struct inbox_spool *spool = inbox_spool_new("/nonexistent/spool", &err);
	char body[64];
	struct inbox_row r = row(1, body, sizeof(body));
	size_t loaded, lost;

	ck_assert_ptr_nonnull(spool);
	ck_assert_int_eq(inbox_spool_append(spool, &r, 1, &err), -1);
	ck_assert_msg(strstr(err.message, "inbox_spool_dir /nonexistent/spool") !=
			      NULL, "%s", err.message);
	ck_assert_int_eq(inbox_spool_load(spool, 64, 65536, collect, NULL,
					  &loaded, &lost, &err), -1);
	ck_assert_msg(strstr(err.message, "/nonexistent/spool") != NULL, "%s",
		      err.message);
	inbox_spool_free(spool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("inbox_spool");
	TCase *tc = tcase_create("inbox_spool");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, own_file_comes_back_in_batches);
	tcase_add_test(tc, failed_load_resumes_after_the_last_batch);
	tcase_add_test(tc, orphans_are_loaded_and_removed);
	tcase_add_test(tc, a_delivery_cut_short_is_left_out);
	tcase_add_test(tc, a_file_with_deliveries_outlives_its_spool);
	tcase_add_test(tc, an_orphan_that_cannot_be_opened_is_said);
	tcase_add_test(tc, a_missing_directory_is_named);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
