/* itest.h - what the integration suites share: control of the servers that
 * tests/lib/harness.sh started, and sending one request body through a pipeline
 * the way the FastCGI worker does.
 */
#ifndef PAYHOOK_ITEST_H
#define PAYHOOK_ITEST_H

#include <stddef.h>

#include "configuration.h"
#include "pipeline.h"
#include "response.h"

/* Runs tests/lib/harness-ctl.sh with printf-formatted arguments (shell-quoted by
 * the caller) and returns its output without trailing blanks, in a static
 * buffer overwritten by the next call. Fails the current Check test when the
 * command fails. */
const char *itest_ctl(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* A transaction id unique to this run and call, "STEM-TIME-PID-N", so the
 * suites never see each other's rows; in a static buffer overwritten by the
 * next call. */
const char *itest_fresh_id(const char *stem);

/* POSTs body (application/json, its exact length) through p and fills *out. */
void itest_post(struct pipeline *p, const char *body, struct result *out);

/* The same with REQUEST_URI uri (NULL: none, which is the standard profile). */
void itest_post_to(struct pipeline *p, const char *uri, const char *body,
		   struct result *out);

/* What payhook logs (stderr) while a test posts: itest_capture_start sends
 * stderr to a file in HARNESS_DIR, itest_capture_end puts it back, copies
 * the text to the test's log and returns it (a static buffer). */
struct itest_capture {
	int saved_fd;
	char path[4096];
};
void itest_capture_start(struct itest_capture *c);
const char *itest_capture_end(struct itest_capture *c);

/* The body a storm's process `child` sends as its delivery i, written into
 * buf (cap bytes). */
typedef void itest_body_fn(void *ctx, int child, int i, char *buf, size_t cap);

/* Sends per_child deliveries from each of children (at most 64) processes
 * at once, each process with a pipeline of its own for cfg, the bodies from
 * body; counts the outcomes into counts[OUTCOME_COUNT]. Fails the current
 * Check test when a process fails. */
void itest_storm(const struct config *cfg, int children, int per_child,
		 itest_body_fn *body, void *ctx, int counts[OUTCOME_COUNT]);

#endif
