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
	snprintf(cmd, sizeof(cmd), "bash '%s/tests/harness-ctl.sh' %s",
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
	pipeline_handle(p, &t.req, out);
}
