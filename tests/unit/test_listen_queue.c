/* test_listen_queue.c - unit tests of listen_queue: a listening socket's
 * queue and backlog from the kernel (TCP and unix, with connections really
 * waiting), and a descriptor that is no listener.
 */
#include "config.h"

#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "listen_queue.h"

#define WAITING 3
#define BACKLOG 7

/* Connects WAITING clients to the listener at addr, which never accepts
 * them; the queue must say so, and the backlog be BACKLOG. */
static void check_queue(int listener, const struct sockaddr *addr,
			socklen_t len)
{
	int clients[WAITING];
	long long queued, backlog;
	struct error err;

	ck_assert_int_eq(listen_queue_read(listener, &queued, &backlog, &err), 0);
	ck_assert_int_eq(queued, 0);
	ck_assert_int_eq(backlog, BACKLOG);
	for (int i = 0; i < WAITING; i++) {
		clients[i] = socket(addr->sa_family, SOCK_STREAM, 0);
		ck_assert_int_ge(clients[i], 0);
		ck_assert_int_eq(connect(clients[i], addr, len), 0);
	}
	ck_assert_msg(listen_queue_read(listener, &queued, &backlog, &err) == 0,
		      "%s", err.message);
	ck_assert_int_eq(queued, WAITING);
	ck_assert_int_eq(backlog, BACKLOG);
	for (int i = 0; i < WAITING; i++)
		close(clients[i]);
}

START_TEST(tcp_queue)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof(addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	ck_assert_int_eq(listen(fd, BACKLOG), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
	check_queue(fd, (struct sockaddr *)&addr, len);
	close(fd);
}
END_TEST

START_TEST(unix_queue)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/test_status.XXXXXX";
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/s", dir);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	ck_assert_int_eq(listen(fd, BACKLOG), 0);
	check_queue(fd, (struct sockaddr *)&addr, sizeof(addr));
	close(fd);
	unlink(addr.sun_path);
	rmdir(dir);
}
END_TEST

START_TEST(not_a_listener)
{
	long long queued, backlog;
	struct error err;
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(listen_queue_read(fds[0], &queued, &backlog, &err), -1);
	ck_assert_int_eq(queued, -1);
	ck_assert_int_eq(backlog, -1);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("listen_queue");
	TCase *tc = tcase_create("listen_queue");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, tcp_queue);
	tcase_add_test(tc, unix_queue);
	tcase_add_test(tc, not_a_listener);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
