/* metrics_dispatch.h - payhook-dispatch's counters in the pool's
 * shared-memory segment (metrics.h, laid out in scoreboard.h), when it
 * shares metrics_file: its attempts by result and the delivered ones'
 * latency, the hand-off table's gauges as it last read them, each running
 * dispatcher's circuit and the target's shared state. Written by
 * payhook-dispatch; read by payhook's status.c (metrics_path, --stats) and
 * page.c. Relaxed atomics and sequence locks, as metrics.c's.
 */
#ifndef PAYHOOK_METRICS_DISPATCH_H
#define PAYHOOK_METRICS_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "metrics.h"

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

/* The gauges payhook-dispatch last stored, when it shares this segment:
 * returns true with *gauges, *at_s (Unix time they were read) and
 * *circuit_opened (times the circuit opened) filled; false when it never
 * stored any. Can't fail. */
bool metrics_dispatch_read(const struct metrics *metrics,
			   struct metrics_dispatch_gauges *gauges,
			   int64_t *at_s, unsigned long long *circuit_opened);

/* "delivered", "retry", "deferred", "dead", "superseded", "unrecorded"
 * (static). */
const char *metrics_dispatch_result_name(enum metrics_dispatch_result result);

/* The attempts' counters, when a payhook-dispatch ever counted into this
 * segment: true with *out filled (the attempts by result, the delivered
 * ones' histogram), false otherwise. Can't fail. */
struct metrics_dispatch_counters {
	unsigned long long attempts[METRICS_DISPATCH_RESULTS];
	struct metrics_histogram delivery;
	unsigned long long circuit_opened;
	struct metrics_dispatch_gauges gauges;
	int64_t gauges_at_s;             /* 0: never stored */
};
bool metrics_dispatch_read_counters(const struct metrics *metrics,
				    struct metrics_dispatch_counters *out);

/* The target's circuit as one payhook-dispatch sees it (each process keeps
 * its own): closed (delivering), open (failed too often: waiting for its
 * next probe), half-open (a probe's attempt under way). */
enum metrics_circuit_state {
	METRICS_CIRCUIT_CLOSED = 0,
	METRICS_CIRCUIT_OPEN,
	METRICS_CIRCUIT_HALF_OPEN,
	METRICS_CIRCUIT_STATES
};

/* The most payhook-dispatch processes whose circuits one segment shows. */
#define METRICS_DISPATCHERS 256

struct metrics_circuit {
	pid_t pid;                   /* the dispatcher's (read side only) */
	enum metrics_circuit_state state;
	int64_t since_ms;            /* Unix time it entered the state (open:
				      * when it opened, probes or not) */
	unsigned long long failures; /* failed attempts in a row */
	int64_t next_probe_ms;       /* open: Unix time of the next probe;
				      * else 0 */
};

/* "closed", "open", "half_open" (static). */
const char *metrics_dispatch_circuit_state_name(enum metrics_circuit_state state);

/* Publishes this process's circuit (its pid, not c->pid) in an entry of its
 * own, taken on the first call. Can't fail: with every entry held by a
 * running process nothing is shown. metrics NULL is fine. */
void metrics_dispatch_circuit(struct metrics *metrics,
			      const struct metrics_circuit *c);

/* Gives this process's entry back (it stops dispatching). Can't fail. */
void metrics_dispatch_circuit_gone(struct metrics *metrics);

/* The circuits of the payhook-dispatch processes that run and share this
 * segment, up to cap, into out. Returns how many. Can't fail. */
size_t metrics_dispatch_read_circuits(const struct metrics *metrics,
			     struct metrics_circuit *out, size_t cap);

/* The hand-off target as every payhook-dispatch of the database shares it
 * (the table dispatch_target): one circuit whatever the number of
 * dispatchers, published by whichever read or changed it last. */
#define METRICS_TARGET_ERROR_MAX 207
struct metrics_target {
	enum metrics_circuit_state state;
	int64_t since_ms;             /* Unix time it entered the state */
	unsigned long long failures;  /* outage-like failures in a row */
	int64_t next_probe_ms;        /* open: its next probe; else 0 */
	int64_t pause_until_ms;       /* a Retry-After: no attempt before; 0 */
	long last_status;             /* the last answer's HTTP status; 0 */
	char last_error[METRICS_TARGET_ERROR_MAX + 1]; /* "" after a 2xx */
	int64_t updated_ms;           /* when it was published */
};

/* Publishes the target's shared state. Can't fail; metrics NULL is fine. */
void metrics_dispatch_target(struct metrics *metrics,
			     const struct metrics_target *t);

/* The target's state last published: true with *out filled, false when no
 * dispatcher published one. Can't fail. */
bool metrics_dispatch_read_target(const struct metrics *metrics,
			 struct metrics_target *out);

#endif
