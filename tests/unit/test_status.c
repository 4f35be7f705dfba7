/* test_status.c - unit tests of what the pool's status reads: a listening
 * socket's queue from the kernel (TCP and unix, with connections really
 * waiting), and a worker's slot, the hour's answers, the failures' ring
 * and payhook-dispatch's circuits in a real shared segment.
 */
#include "config.h"

#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "listen_queue.h"
#include "metrics_dispatch.h"
#include "status.h"

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

/* This process as a worker of a fresh segment: its slot through one
 * request, the master's marks once per request, and its failure. */
START_TEST(worker_slot)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct metrics_worker w[4];
	struct metrics_pool pool;
	struct metrics_hour *hour = malloc(sizeof(*hour));
	struct metrics_failure failures[METRICS_FAILURES];
	struct result r = { .outcome = OUTCOME_INVALID };
	unsigned long long total = 0;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(hour);
	metrics_pool_started(m, 4, true);
	ck_assert(metrics_worker_started(m, getpid()));
	ck_assert_uint_eq(metrics_read_status(m, &pool, w, 4), 1);
	ck_assert_int_eq(w[0].stage, METRICS_IDLE);
	ck_assert_uint_eq(pool.workers_configured, 4);
	ck_assert_uint_eq(pool.workers_idle, 1);

	metrics_request_begin(m);
	metrics_request_item(m, CONFIG_PROVIDER_STRIPE, "pi_123", 6);
	metrics_request_stage(m, METRICS_INSERTING);
	usleep(2000);
	ck_assert_uint_eq(metrics_read_status(m, &pool, w, 4), 1);
	ck_assert_int_eq(w[0].pid, getpid());
	ck_assert_str_eq(metrics_stage_name(w[0].stage), "inserting");
	ck_assert_uint_eq(w[0].provider, CONFIG_PROVIDER_STRIPE);
	ck_assert_str_eq(w[0].transaction_id, "pi_123");
	ck_assert_int_ge(w[0].elapsed_us, 2000);
	ck_assert_uint_eq(pool.workers_active, 1);
	ck_assert_uint_eq(pool.accepted, 1);
	/* The master logs and ends a request once, whatever its ticks. */
	ck_assert(metrics_slow_seen(m, getpid(), w[0].request));
	ck_assert(!metrics_slow_seen(m, getpid(), w[0].request));
	ck_assert(metrics_terminated_seen(m, getpid(), w[0].request));
	ck_assert(!metrics_terminated_seen(m, getpid(), w[0].request));
	metrics_pool_sample(m, 4, 2, 128);

	strcpy(r.transaction_id, "pi_123");
	strcpy(r.reason, "currency: must be 3 ASCII letters");
	metrics_request(m, CONFIG_PROVIDER_STRIPE, r.outcome, 2000);
	metrics_failure(m, CONFIG_PROVIDER_STRIPE, &r);
	metrics_request_end(m);

	ck_assert_uint_eq(metrics_read_status(m, &pool, w, 4), 1);
	ck_assert_int_eq(w[0].stage, METRICS_IDLE);
	ck_assert_uint_eq(w[0].served, 1);
	/* Idle: no transaction in hand, not the last one's. */
	ck_assert_str_eq(w[0].transaction_id, "");
	ck_assert_uint_eq(w[0].provider, CONFIG_PROVIDER_COUNT);
	ck_assert_uint_eq(pool.slow_requests, 1);
	ck_assert_uint_eq(pool.terminated_requests, 1);
	ck_assert_uint_eq(pool.max_active, 4);
	ck_assert_uint_eq(pool.max_children_reached, 1);
	ck_assert_int_eq(pool.listen_queue, 2);
	ck_assert_int_eq(pool.listen_queue_len, 128);

	ck_assert_uint_eq(metrics_read_recent(m, hour, failures), 1);
	ck_assert_int_eq(failures[0].outcome, OUTCOME_INVALID);
	ck_assert_uint_eq(failures[0].provider, CONFIG_PROVIDER_STRIPE);
	ck_assert_str_eq(failures[0].transaction_id, "pi_123");
	ck_assert_str_eq(failures[0].reason, "currency: must be 3 ASCII letters");
	for (int i = 0; i < METRICS_MINUTES; i++)
		total += hour->counts[CONFIG_PROVIDER_STRIPE][i][METRICS_REFUSED];
	ck_assert_uint_eq(total, 1);

	metrics_worker_gone(m, getpid());
	ck_assert_uint_eq(metrics_read_status(m, &pool, w, 4), 0);
	free(hour);
	metrics_free(m);
}
END_TEST

/* The ring keeps the latest METRICS_FAILURES, newest first. */
START_TEST(failure_ring)
{
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct metrics_hour *hour = malloc(sizeof(*hour));
	struct metrics_failure failures[METRICS_FAILURES];
	struct result r = { .outcome = OUTCOME_UNAVAILABLE };

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(hour);
	for (int i = 0; i < METRICS_FAILURES + 5; i++) {
		snprintf(r.transaction_id, sizeof(r.transaction_id), "tx-%d", i);
		metrics_failure(m, CONFIG_PROVIDER_COUNT, &r);
	}
	ck_assert_uint_eq(metrics_read_recent(m, hour, failures),
			  METRICS_FAILURES);
	ck_assert_str_eq(failures[0].transaction_id, "tx-20");
	ck_assert_str_eq(failures[METRICS_FAILURES - 1].transaction_id, "tx-5");
	free(hour);
	metrics_free(m);
}
END_TEST

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
	char *text = malloc(STATUS_RENDER_MAX);
	char series[96];
	struct config cfg;
	pid_t child;
	int status;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(text);
	memset(&cfg, 0, sizeof(cfg));
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
	/* The text: a state set, and the figures by pid. */
	snprintf(series, sizeof(series), "payhook_dispatch_circuit_state"
		 "{pid=\"%ld\",state=\"half_open\"}", (long)getpid());
	ck_assert_int_eq(status_value(m, &cfg, series), 1);
	snprintf(series, sizeof(series), "payhook_dispatch_circuit_state"
		 "{pid=\"%ld\",state=\"open\"}", (long)getpid());
	ck_assert_int_eq(status_value(m, &cfg, series), 0);
	snprintf(series, sizeof(series), "payhook_dispatch_circuit_failures"
		 "{pid=\"%ld\"}", (long)getpid());
	ck_assert_int_eq(status_value(m, &cfg, series), 5);
	ck_assert_int_ge(status_render(m, &cfg, text, STATUS_RENDER_MAX), 0);
	ck_assert_msg(strstr(text, "payhook_dispatch_circuit_since_seconds{pid=")
		      != NULL, "%s", text);
	metrics_dispatch_circuit_gone(m);
	ck_assert_uint_eq(metrics_dispatch_read_circuits(m, out, 4), 0);
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

	tcase_add_test(tc, tcp_queue);
	tcase_add_test(tc, unix_queue);
	tcase_add_test(tc, not_a_listener);
	tcase_add_test(tc, worker_slot);
	tcase_add_test(tc, failure_ring);
	tcase_add_test(tc, dispatcher_circuits);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
