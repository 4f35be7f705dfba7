/* metrics.h - counters of a whole pool of workers in one shared-memory
 * segment: requests by provider and outcome, a latency histogram, backend
 * errors by kind, lost leases, workers alive and restarted. Every worker adds
 * to them (and refunds, disputes and cancellations by kind and outcome)
 * with relaxed atomic increments (no lock, no system call); any
 * reader reads the sum.
 *
 * Each worker also publishes its own slot (pid, stage, requests served, the
 * request in hand: since when, which profile and transaction id), with
 * relaxed atomic stores and a sequence lock around the transaction id, so
 * the master can log slow requests and end stuck ones, and a status can
 * show the pool as php-fpm's does.
 *
 * The segment is a memfd shared by a master and the workers it forks (and
 * handed on across an upgrade's exec), or the file metrics_file names, which
 * independent workers (spawn-fcgi, mod_fcgid), payhook --stats and
 * payhook-dispatch (its attempts, and the hand-off table's gauges:
 * metrics_dispatch.h) share. Its layout is in scoreboard.h; this module
 * counts and reads back, and renders nothing: lib/operator/status.c writes
 * the Prometheus text and the status, page.c the operator's page.
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
#include "sharedfile.h"

/* A view of a segment. Opaque. */
struct metrics;

enum metrics_redis_fault {
	METRICS_REDIS_CONNECT = 0, /* could not connect (or AUTH/SELECT failed) */
	METRICS_REDIS_IO,          /* timeout or connection lost mid-command */
	METRICS_REDIS_REPLY,       /* an error reply: READONLY, LOADING, OOM... */
	METRICS_REDIS_FAULTS
};

/* A new anonymous segment (a memfd, inherited by forked children; closed
 * on exec, so that no helper gets it: an upgrade clears FD_CLOEXEC on
 * metrics_fd itself before its exec). Returns it, or NULL with err set. */
struct metrics *metrics_new_shared(struct error *err);

/* The segment in the file at path, created (0640) and sized when missing or
 * empty. Returns it, or NULL with err set (a file of another layout is
 * refused, not overwritten). */
struct metrics *metrics_open_file(const char *path, struct error *err);

/* metrics_open_file for a master started as root: a file it creates
 * belongs to owner (its workers' user and group) when owner is set, so
 * that payhook-dispatch and --check-config, run as that user, open it. */
struct metrics *metrics_open_file_for(const char *path,
				      const struct sharedfile_owner *owner,
				      struct error *err);

/* The segment behind descriptor fd (from metrics_fd of an earlier image of
 * this program), which becomes close-on-exec. Returns it, or NULL with err
 * set. */
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

/* A refund recorded that carried its payment's refunded amount past the
 * payment's own amount. NULL metrics: nothing. Can't fail. */
void metrics_suspicious_refund(struct metrics *metrics);

/* What became of a delivery the inbox should keep (inbox_days). */
enum metrics_inbox_result {
	METRICS_INBOX_KEPT = 0,
	METRICS_INBOX_FAILED,   /* the write failed; the answer was the same */
	METRICS_INBOX_RESULTS
};

/* A delivery of provider answered 401 (unauthorized) or 200 ignored, kept
 * in the inbox or not. NULL metrics: nothing. Can't fail. */
void metrics_inbox(struct metrics *metrics, unsigned provider,
		   bool unauthorized, enum metrics_inbox_result result);

/* A kept delivery of provider that payhook-reconcile --replay recorded.
 * NULL metrics: nothing. Can't fail. */
void metrics_inbox_replayed(struct metrics *metrics, unsigned provider);

/* The inbox's counts over every provider: kept[0] ignored, kept[1]
 * unauthorized, write failures, replayed. Can't fail. */
struct metrics_inbox_totals {
	unsigned long long kept[2], failed, replayed;
};
void metrics_read_inbox(const struct metrics *metrics,
			struct metrics_inbox_totals *out);

/* The pool's own events: a worker started (it takes a slot, which this
 * process's view remembers for the request path; false when every slot is
 * taken), a worker gone, a worker restarted after an unplanned exit, a
 * reload that took effect or was refused. */
bool metrics_worker_started(struct metrics *metrics, pid_t pid);
void metrics_worker_gone(struct metrics *metrics, pid_t pid);
void metrics_worker_restarted(struct metrics *metrics);
void metrics_reloaded(struct metrics *metrics, bool applied);

/* Where a worker's request is. */
enum metrics_stage {
	METRICS_IDLE = 0,   /* waiting for a request */
	METRICS_READING,    /* reading and checking the request */
	METRICS_CONNECTING, /* reaching MySQL */
	METRICS_LOCKING,    /* taking the transaction's lock */
	METRICS_INSERTING,  /* the row: its INSERT (or looking it up) */
	METRICS_ANSWERING,  /* writing the answer */
	METRICS_FINISHING,  /* counting, logging (the locks are released
			     * before the answer) */
	METRICS_STAGES
};

/* The stage's name ("idle", "reading", ...). */
const char *metrics_stage_name(enum metrics_stage stage);

/* The request path of a worker, on its own slot (the one
 * metrics_worker_started took in this process): no lock, no system call.
 * metrics NULL, or no slot, is fine (nothing is published). Can't fail. */
void metrics_request_begin(struct metrics *metrics);
void metrics_request_stage(struct metrics *metrics, enum metrics_stage stage);
/* The payment in hand: its profile and transaction id (len bytes). */
void metrics_request_item(struct metrics *metrics, unsigned provider,
			  const char *transaction_id, size_t len);
void metrics_request_end(struct metrics *metrics);

/* One worker as read from its slot. */
struct metrics_worker {
	pid_t pid;
	enum metrics_stage stage;
	unsigned long long served;   /* requests finished */
	unsigned long long request;  /* requests begun (names the current one) */
	int64_t elapsed_us;          /* the current request's; 0 when idle */
	unsigned provider;           /* CONFIG_PROVIDER_COUNT: none yet */
	char transaction_id[136];    /* "" when none yet */
};

/* The pool as a whole. Listen queue figures are -1 where unknown (no
 * master, or a socket whose queue the kernel does not report). */
struct metrics_pool {
	int64_t start_time;          /* Unix time the segment was made */
	int64_t uptime_s;
	unsigned workers_configured; /* 0: no master (independent workers) */
	unsigned workers_total, workers_active, workers_idle;
	unsigned long long accepted; /* requests begun */
	unsigned long long max_active;
	unsigned long long max_children_reached;
	long long listen_queue, max_listen_queue, listen_queue_len;
	unsigned long long slow_requests;
	unsigned long long terminated_requests;
};

/* Reads every live worker's slot (up to cap) into workers, and the pool's
 * figures into pool (either may be NULL). Returns how many workers. Can't
 * fail. */
size_t metrics_read_status(const struct metrics *metrics,
			   struct metrics_pool *pool,
			   struct metrics_worker *workers, size_t cap);

/* The master's side: how many workers it keeps, at start (started_now:
 * the start time is now; false after an upgrade's exec, whose pool goes
 * on); a sample of its loop (active workers now, the listening socket's
 * queue and backlog, -1 when unknown) for the maxima. Can't fail. */
void metrics_pool_started(struct metrics *metrics, unsigned workers,
			  bool started_now);
void metrics_pool_sample(struct metrics *metrics, unsigned active,
			 long long queue, long long backlog);

/* What the master did about pid's request number request: logged it slow,
 * or ended its worker. Each returns true the first time only for that
 * request (and then counts it), so a request is logged and counted once.
 * Can't fail. */
bool metrics_slow_seen(struct metrics *metrics, pid_t pid,
		       unsigned long long request);
bool metrics_terminated_seen(struct metrics *metrics, pid_t pid,
			     unsigned long long request);

/* A non-2xx answer to a request whose signature was checked (or that
 * needs none), kept in a small ring of the latest (time, provider,
 * outcome, transaction id, reason: never a body or a secret) for the
 * operator's page. Can't fail; metrics NULL is fine. */
void metrics_failure(struct metrics *metrics, unsigned provider,
		     const struct result *result);

/* The same for an answer refused before the signature was checked or
 * failing it (404, 405, 411, 413, 415, a short body, 401), in a ring of
 * its own: anonymous requests never push a signed request's failure off
 * the page. Can't fail; metrics NULL is fine. */
void metrics_refusal(struct metrics *metrics, unsigned provider,
		     const struct result *result);

/* Answers by kind, for the per-minute chart: ok (2xx), retry (what makes
 * the provider retry: 409 and 5xx), refused (any other 4xx). */
enum metrics_kind { METRICS_OK = 0, METRICS_RETRY, METRICS_REFUSED,
		    METRICS_KINDS };
#define METRICS_MINUTES 60
#define METRICS_FAILURES 16

/* One non-2xx answer of the ring. */
struct metrics_failure {
	int64_t time;                /* Unix time */
	unsigned provider;           /* CONFIG_PROVIDER_COUNT: none */
	enum outcome outcome;
	char transaction_id[136];
	char reason[128];
};

/* The answers of the last hour per profile (index CONFIG_PROVIDER_COUNT:
 * none named) and minute (index METRICS_MINUTES - 1: this minute), and the
 * latest failures, newest first (up to METRICS_FAILURES). Returns how many
 * failures. Can't fail. */
struct metrics_hour {
	unsigned long long counts[CONFIG_PROVIDER_COUNT + 1][METRICS_MINUTES]
				 [METRICS_KINDS];
};
size_t metrics_read_recent(const struct metrics *metrics,
			   struct metrics_hour *hour,
			   struct metrics_failure *failures);

/* The latest refusals (metrics_refusal), newest first, up to
 * METRICS_FAILURES. Returns how many. Can't fail. */
size_t metrics_read_refusals(const struct metrics *metrics,
			     struct metrics_failure *refusals);

/* The histograms' buckets: METRICS_BUCKETS upper bounds (in
 * microseconds: metrics_bucket_us), counts not cumulative, and the count
 * and sum of every observation. */
#define METRICS_BUCKETS 13
struct metrics_histogram {
	unsigned long long buckets[METRICS_BUCKETS];
	unsigned long long count, sum_us;
};

/* The upper bound of bucket b (< METRICS_BUCKETS), in microseconds. */
int64_t metrics_bucket_us(size_t b);

/* The MySQL error numbers counted on their own: slot i (<
 * METRICS_MYSQL_CODES) counts metrics_mysql_code(i); slot
 * METRICS_MYSQL_CODES counts any other (metrics_mysql_code: 0). */
#define METRICS_MYSQL_CODES 15
unsigned metrics_mysql_code(size_t i);

/* "connect", "io", "reply" (static). */
const char *metrics_redis_fault_name(enum metrics_redis_fault fault);

/* Every counter of the pool at one reading (index CONFIG_PROVIDER_COUNT:
 * no profile named). */
struct metrics_counters {
	unsigned long long requests[CONFIG_PROVIDER_COUNT + 1][OUTCOME_COUNT];
	unsigned long long lifecycle[CONFIG_PROVIDER_COUNT + 1]
				    [LIFECYCLE_KINDS][OUTCOME_COUNT];
	/* [provider][0 ignored, 1 unauthorized][enum metrics_inbox_result] */
	unsigned long long inbox[CONFIG_PROVIDER_COUNT + 1][2]
				[METRICS_INBOX_RESULTS];
	unsigned long long inbox_replayed[CONFIG_PROVIDER_COUNT + 1];
	struct metrics_histogram duration;  /* request to answer */
	unsigned long long mysql_errors[METRICS_MYSQL_CODES + 1];
	unsigned long long redis_errors[METRICS_REDIS_FAULTS];
	unsigned long long lost_leases, suspicious_refunds;
	long workers_alive;                 /* in the slots, running */
	unsigned long long worker_restarts, reloads, reloads_refused;
};

/* Reads them into out. Can't fail. */
void metrics_read_counters(const struct metrics *metrics,
			   struct metrics_counters *out);

#endif
