/* test_sharedfile.c - unit tests of sharedfile: the files a root master
 * opens in folders its workers' user may own. A symbolic link is never
 * followed, and, run as root, a file with another name elsewhere (a hard
 * link) or another owner is refused; a file made is given to the owner;
 * --check-config's check says the same and creates nothing.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sharedfile.h"

static char dir[] = "/tmp/payhook-sharedfile.XXXXXX";
static char path[256], secret[256];

static void setup(void)
{
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/payhook.log", dir);
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	f = fopen(secret, "w");
	ck_assert_ptr_nonnull(f);
	fputs("root only\n", f);
	fclose(f);
	chmod(secret, 0600);
}

static void teardown(void)
{
	unlink(path);
	unlink(secret);
	rmdir(dir);
	strcpy(dir, "/tmp/payhook-sharedfile.XXXXXX");
}

/* The size of secret: what a write through a followed link would grow. */
static off_t secret_size(void)
{
	struct stat st;

	ck_assert_int_eq(stat(secret, &st), 0);
	return st.st_size;
}

START_TEST(a_symbolic_link_is_not_followed)
{
	struct error err = { "" };
	int fd;

	ck_assert_int_eq(symlink(secret, path), 0);
	fd = sharedfile_open(path, O_WRONLY | O_APPEND, 0640, NULL, NULL, &err);
	ck_assert_int_eq(fd, -1);
	ck_assert_ptr_nonnull(strstr(err.message, "symbolic link"));
	ck_assert_ptr_nonnull(strstr(err.message, path));
	ck_assert_int_eq(secret_size(), 10);
	ck_assert_int_eq(sharedfile_check(path, O_RDWR, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "symbolic link"));
	/* A link to nowhere is not made into a file either. */
	unlink(path);
	ck_assert_int_eq(symlink("/tmp/payhook-sharedfile-nowhere", path), 0);
	ck_assert_int_eq(sharedfile_open(path, O_RDWR, 0640, NULL, NULL, &err),
			 -1);
	ck_assert_int_eq(access("/tmp/payhook-sharedfile-nowhere", F_OK), -1);
}
END_TEST

START_TEST(root_refuses_a_hard_link)
{
	struct error err = { "" };

	if (geteuid() != 0)
		return; /* only root's opens are checked this way */
	ck_assert_int_eq(link(secret, path), 0);
	ck_assert_int_eq(sharedfile_open(path, O_WRONLY | O_APPEND, 0640, NULL,
					 NULL, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "hard link"));
	ck_assert_int_eq(sharedfile_check(path, O_RDWR, &err), -1);
	ck_assert_int_eq(secret_size(), 10);
}
END_TEST

START_TEST(root_takes_its_own_or_the_owners_file_only)
{
	struct passwd *pw = getpwnam("daemon");
	struct sharedfile_owner owner = { 0 };
	struct error err = { "" };
	int fd;

	if (geteuid() != 0 || pw == NULL)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0640);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchown(fd, pw->pw_uid, pw->pw_gid), 0);
	close(fd);
	/* Another user's file, the workers being nobody: not opened. */
	pw = getpwnam("nobody");
	ck_assert_ptr_nonnull(pw);
	owner = (struct sharedfile_owner){ true, pw->pw_uid, pw->pw_gid };
	ck_assert_int_eq(sharedfile_open(path, O_RDWR, 0640, &owner, NULL,
					 &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "owned by uid"));
	/* The workers' own file: theirs, opened. */
	ck_assert_int_eq(chown(path, pw->pw_uid, pw->pw_gid), 0);
	fd = sharedfile_open(path, O_RDWR, 0640, &owner, NULL, &err);
	ck_assert_int_ge(fd, 0);
	close(fd);
}
END_TEST

START_TEST(a_file_made_is_the_owners)
{
	struct passwd *pw = getpwnam("nobody");
	struct sharedfile_owner owner = { 0 };
	struct error err = { "" };
	struct stat st;
	bool created = false;
	int fd;

	if (geteuid() == 0 && pw != NULL)
		owner = (struct sharedfile_owner){ true, pw->pw_uid, pw->pw_gid };
	ck_assert_int_eq(sharedfile_check(path, O_WRONLY | O_APPEND, &err), 0);
	ck_assert_int_eq(access(path, F_OK), -1); /* the check made nothing */
	fd = sharedfile_open(path, O_WRONLY | O_APPEND, 0640, &owner, &created,
			     &err);
	ck_assert_int_ge(fd, 0);
	ck_assert(created);
	ck_assert_int_eq(fstat(fd, &st), 0);
	if (owner.set)
		ck_assert_uint_eq(st.st_uid, owner.uid);
	close(fd);
	/* Opened again: not made this time. */
	fd = sharedfile_open(path, O_WRONLY | O_APPEND, 0640, &owner, &created,
			     &err);
	ck_assert_int_ge(fd, 0);
	ck_assert(!created);
	close(fd);
	ck_assert_int_eq(sharedfile_check(path, O_WRONLY | O_APPEND, &err), 0);
}
END_TEST

START_TEST(the_check_names_a_folder_it_cannot_write)
{
	struct error err = { "" };

	ck_assert_int_eq(sharedfile_check("/proc/payhook-nowhere/metrics",
					  O_RDWR, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "cannot be created in "
					  "/proc/payhook-nowhere"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sharedfile");
	TCase *tc = tcase_create("sharedfile");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_symbolic_link_is_not_followed);
	tcase_add_test(tc, root_refuses_a_hard_link);
	tcase_add_test(tc, root_takes_its_own_or_the_owners_file_only);
	tcase_add_test(tc, a_file_made_is_the_owners);
	tcase_add_test(tc, the_check_names_a_folder_it_cannot_write);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
