/* metrics.h - counters of a whole pool of workers in one shared-memory
 * segment: requests by provider and outcome, a latency histogram, backend
 * errors by kind, lost leases, workers alive and restarted. Every worker adds
 * to them (and refunds, disputes and cancellations by kind and outcome)
 * with relaxed atomic increments (no lock, no system call); any
 * reader renders the sum in the Prometheus text format.
 *
 * The segment is a memfd shared by a master and the workers it forks (and
 * handed on across an upgrade's exec), or the file metrics_file names, which
 * independent workers (spawn-fcgi, mod_fcgid), payhook --stats and
 * payhook-dispatch (its attempts, and the hand-off table's gauges) share.
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

/* payhook-dispatch's attempts, by what became of them. */
enum metrics_dispatch_result {
	METRICS_DISPATCH_DELIVERED = 0,
	METRICS_DISPATCH_RETRY,      /* failed, counted, due again */
	METRICS_DISPATCH_DEFERRED,   /* failed or told to wait, not counted */
	METRICS_DISPATCH_DEAD,
	METRICS_DISPATCH_SUPERSEDED, /* a newer claim took the row meanwhile */
	METRICS_DISPATCH_UNRECORDED, /* the database failed to take the result */
	METRICS_DISPATCH_RESULTS
};

/* The hand-off's table, as payhook-dispatch last read it. */
struct metrics_dispatch_gauges {
	unsigned long long pending;     /* not yet delivered nor dead */
	unsigned long long in_flight;   /* claimed under a lease now */
	unsigned long long dead;
	unsigned long long oldest_due_s; /* how long the most overdue pending
					 * payment has been due */
};

/* Counts one attempt of payhook-dispatch; a delivered one's elapsed_us goes
 * into the delivery-latency histogram. Can't fail; metrics NULL is fine. */
void metrics_dispatch_attempt(struct metrics *metrics,
			      enum metrics_dispatch_result result,
			      int64_t elapsed_us);

/* Counts the target's circuit opening. */
void metrics_dispatch_circuit_opened(struct metrics *metrics);

/* Stores the table's gauges with the time they were read. */
void metrics_dispatch_gauges(struct metrics *metrics,
			     const struct metrics_dispatch_gauges *gauges);

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
