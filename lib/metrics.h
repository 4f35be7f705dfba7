/* metrics.h - counters of a whole pool of workers in one shared-memory
 * segment: requests by provider and outcome, a latency histogram, backend
 * errors by kind, lost leases, workers alive and restarted. Every worker adds
 * to them (and refunds, disputes and cancellations by kind and outcome)
 * with relaxed atomic increments (no lock, no system call); any
 * reader renders the sum in the Prometheus text format.
 *
 * The segment is a memfd shared by a master and the workers it forks (and
 * handed on across an upgrade's exec), or the file metrics_file names, which
 * independent workers (spawn-fcgi, mod_fcgid) and payhook --stats share.
 */
#ifndef PAYHOOK_METRICS_H
#define PAYHOOK_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "configuration.h"
#include "error.h"
#include "lifecycle.h"
#include "response.h"

/* A view of a segment. Opaque. */
struct metrics;

enum metrics_redis_fault {
	METRICS_REDIS_CONNECT = 0, /* could not connect (or AUTH/SELECT failed) */
	METRICS_REDIS_IO,          /* timeout or connection lost mid-command */
	METRICS_REDIS_REPLY,       /* an error reply: READONLY, LOADING, OOM... */
	METRICS_REDIS_FAULTS
};

/* A new anonymous segment (a memfd, inherited by forked children and across
 * exec). Returns it, or NULL with err set. */
struct metrics *metrics_new_shared(struct error *err);

/* The segment in the file at path, created (0640) and sized when missing or
 * empty. Returns it, or NULL with err set (a file of another layout is
 * refused, not overwritten). */
struct metrics *metrics_open_file(const char *path, struct error *err);

/* The segment behind descriptor fd (from metrics_fd of an earlier image of
 * this program). Returns it, or NULL with err set. */
struct metrics *metrics_attach_fd(int fd, struct error *err);

/* Unmaps the view and closes its descriptor; the segment lives on while
 * others map it. NULL is fine. */
void metrics_free(struct metrics *metrics);

/* The descriptor of the segment, for handing it on across exec. */
int metrics_fd(const struct metrics *metrics);

/* Counts one request. provider is CONFIG_PROVIDER_COUNT when the request
 * named none (not_found). Can't fail; metrics NULL is fine (counts nothing). */
void metrics_request(struct metrics *metrics, unsigned provider,
		     enum outcome outcome, int64_t elapsed_us);

/* Counts one refund, dispute or cancellation of a request by the outcome
 * it alone came to (a request may carry several, and payments too). Can't
 * fail; metrics NULL is fine. */
void metrics_lifecycle(struct metrics *metrics, unsigned provider,
		       enum lifecycle_kind kind, enum outcome outcome);

/* Counts a MySQL error by its number, a Redis fault by kind, a lost lease. */
void metrics_mysql_error(struct metrics *metrics, unsigned code);
void metrics_redis_error(struct metrics *metrics, enum metrics_redis_fault fault);
void metrics_lost_lease(struct metrics *metrics);

/* The pool's own events: a worker started (its slot; false when every slot
 * is taken), a worker gone, a worker restarted after an unplanned exit, a
 * reload that took effect or was refused. */
bool metrics_worker_started(struct metrics *metrics, pid_t pid);
void metrics_worker_gone(struct metrics *metrics, pid_t pid);
void metrics_worker_restarted(struct metrics *metrics);
void metrics_reloaded(struct metrics *metrics, bool applied);

/* Writes the Prometheus text exposition of everything counted into buf (cap
 * bytes, NUL-terminated). Returns its length, or -1 when it does not fit. */
long metrics_render(const struct metrics *metrics, const struct config *cfg,
		    char *buf, size_t cap);

/* Enough for metrics_render's output. */
#define METRICS_RENDER_MAX 65536

/* Reads one counter by its rendered name and labels, e.g.
 * metrics_value(m, cfg, "payhook_requests_total{provider=\"stripe\","
 * "outcome=\"processed\",status=\"200\"}"); -1 when there is no such line.
 * For tests and payhook --stats. */
long long metrics_value(const struct metrics *metrics, const struct config *cfg,
			const char *series);

#endif
