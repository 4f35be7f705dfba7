/* itest.c - shared helpers of the integration suites (see itest.h). */
#include "config.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "itest.h"
#include "testreq.h"

const char *itest_ctl(const char *fmt, ...)
{
	static char out[4096];
	char args[2048], cmd[2560];
	const char *srcdir = getenv("top_srcdir");
	va_list ap;
	FILE *f;
	size_t n;
	int status;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "bash '%s/tests/lib/harness-ctl.sh' %s",
		 srcdir != NULL ? srcdir : ".", args);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	status = pclose(f);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "harness-ctl %s failed: %s", args, out);
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = '\0';
	return out;
}

const char *itest_fresh_id(const char *stem)
{
	static char id[96];
	static unsigned counter;

	snprintf(id, sizeof(id), "%s-%ld-%d-%u", stem, (long)time(NULL),
		 (int)getpid(), counter++);
	return id;
}

void itest_post(struct pipeline *p, const char *body, struct result *out)
{
	itest_post_to(p, NULL, body, out);
}

void itest_post_to(struct pipeline *p, const char *uri, const char *body,
		   struct result *out)
{
	struct testreq t;

	testreq_init(&t, "POST", body, strlen(body));
	testreq_set(&t, "REQUEST_URI", uri);
	pipeline_test_handle(p, &t.req, out);
}

void itest_storm(const struct config *cfg, int children, int per_child,
		 itest_body_fn *body, void *ctx, int counts[OUTCOME_COUNT])
{
	int fds[2];
	pid_t pids[64];
	unsigned char o;

	ck_assert_int_le(children, 64);
	ck_assert_int_eq(pipe(fds), 0);
	for (int c = 0; c < children; c++) {
		pids[c] = fork();
		ck_assert_int_ge(pids[c], 0);
		if (pids[c] == 0) {
			struct error err;
			struct pipeline *p;
			struct result r;

			close(fds[0]);
			p = pipeline_new(cfg, &err);
			if (p == NULL)
				_exit(3);
			for (int i = 0; i < per_child; i++) {
				char buf[1024];

				body(ctx, c, i, buf, sizeof(buf));
				itest_post(p, buf, &r);
				o = (unsigned char)r.outcome;
				if (write(fds[1], &o, 1) != 1)
					_exit(4);
			}
			pipeline_free(p);
			_exit(0);
		}
	}
	close(fds[1]);
	memset(counts, 0, sizeof(int) * OUTCOME_COUNT);
	while (read(fds[0], &o, 1) == 1)
		if (o < OUTCOME_COUNT)
			counts[o]++;
	close(fds[0]);
	for (int c = 0; c < children; c++) {
		int status;

		ck_assert_int_eq(waitpid(pids[c], &status, 0), pids[c]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "child %d failed", c);
	}
}

void itest_capture_start(struct itest_capture *c)
{
	const char *dir = getenv("HARNESS_DIR");
	int fd;

	snprintf(c->path, sizeof(c->path), "%s/itest-log.XXXXXX",
		 dir != NULL ? dir : "/tmp");
	fd = mkstemp(c->path);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	c->saved_fd = dup(STDERR_FILENO);
	ck_assert_int_ge(c->saved_fd, 0);
	ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
}

const char *itest_capture_end(struct itest_capture *c)
{
	static char text[16384];
	FILE *f;
	size_t n;

	fflush(stderr);
	ck_assert_int_eq(dup2(c->saved_fd, STDERR_FILENO), STDERR_FILENO);
	close(c->saved_fd);
	f = fopen(c->path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	unlink(c->path);
	if (n > 0 && write(STDERR_FILENO, text, n) < 0) {
		/* Only a copy for the test's log. */
	}
	return text;
}
