/* scoreboard.h - the layout of the shared-memory segment that metrics.c
 * (the pool's counters and slots), metrics_dispatch.c (payhook-dispatch's
 * counters, circuits and target) and metrics_reconcile.c (reconciliation's
 * figures, as payhook-dispatch reads them) write and read, and the atomics
 * they use: relaxed counters, sequence locks, text in atomic words.
 * php-fpm's fpm_scoreboard.h is the model: the ground floor counts, it
 * renders nothing (lib/operator/status.c does).
 *
 * Only those three include this header; everyone else sees struct metrics
 * as opaque through metrics.h. The layout only ever
 * grows at its end, so that a segment of the version before grows in
 * place (metrics.c).
 */
#ifndef PAYHOOK_SCOREBOARD_H
#define PAYHOOK_SCOREBOARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "configuration.h"
#include "lifecycle.h"
#include "response.h"

/* The sizes of the segment's arrays; metrics.h and metrics_dispatch.h
 * name the public ones again (their sources check that they agree). */
#define SCOREBOARD_PROVIDERS (CONFIG_PROVIDER_COUNT + 1)
#define SCOREBOARD_WORKERS 1024
#define SCOREBOARD_BUCKETS 13
#define SCOREBOARD_MYSQL_CODES 15
#define SCOREBOARD_REDIS_FAULTS 3
#define SCOREBOARD_KINDS 3
#define SCOREBOARD_MINUTES 60
#define SCOREBOARD_FAILURES 16
#define SCOREBOARD_INBOX_RESULTS 2
#define SCOREBOARD_DISPATCH_RESULTS 6
#define SCOREBOARD_DISPATCHERS 256

/* The transaction id in 8-byte words: atomics, so a reader racing the
 * writer reads a torn value (which the sequence lock then refuses), never
 * undefined behaviour. */
#define SCOREBOARD_TXID_WORDS 17
#define SCOREBOARD_REASON_WORDS 16
#define SCOREBOARD_TARGET_ERROR_WORDS 26
#define SCOREBOARD_RECONCILE_ERROR_WORDS 16

/* One worker's slot: written by that worker only (and pid by whoever starts
 * and reaps it); read by anyone. */
struct scoreboard_slot {
	atomic_int pid;
	atomic_uint stage;
	atomic_uint seq;             /* odd while provider/txid change */
	atomic_uint provider;
	atomic_ullong served;
	atomic_ullong request;       /* requests begun */
	atomic_llong started_us;     /* CLOCK_MONOTONIC, of request */
	atomic_ullong slow_logged;   /* the request the master logged slow */
	atomic_ullong terminated;    /* the request whose worker it ended */
	atomic_ullong txid[SCOREBOARD_TXID_WORDS];
};

/* One minute of answers; stamp: the minute (Unix time / 60) it counts. */
struct scoreboard_minute {
	atomic_llong stamp;
	atomic_ullong counts[SCOREBOARD_PROVIDERS][SCOREBOARD_KINDS];
};

/* One entry of the failures' ring, under its own sequence lock. */
struct scoreboard_failure {
	atomic_uint seq;
	atomic_uint provider;
	atomic_uint outcome;
	atomic_llong time;
	atomic_ullong txid[SCOREBOARD_TXID_WORDS];
	atomic_ullong reason[SCOREBOARD_REASON_WORDS];
};

/* One payhook-dispatch's circuit (its view of the target), written by that
 * process only, under its sequence lock; pid 0: a free entry. */
struct scoreboard_circuit {
	atomic_int pid;
	atomic_uint seq;
	atomic_uint state;
	atomic_llong since_ms;       /* Unix time in ms */
	atomic_ullong failures;
	atomic_llong next_probe_ms;  /* Unix time in ms; 0: none */
};

/* The target's shared state (one for every dispatcher), under its
 * sequence lock; seq 0: never published. */
struct scoreboard_target {
	atomic_uint seq;
	atomic_uint state;
	atomic_llong since_ms;
	atomic_ullong failures;
	atomic_llong next_probe_ms;
	atomic_llong pause_until_ms;
	atomic_llong last_status;
	atomic_llong updated_ms;
	atomic_ullong error[SCOREBOARD_TARGET_ERROR_WORDS];
};

/* One profile's reconciliation as payhook-dispatch last read it from
 * reconcile_cursors, under its sequence lock. */
struct scoreboard_reconcile {
	atomic_uint seq;
	atomic_uint flags;           /* SCOREBOARD_RECONCILE_* */
	atomic_uint failed_passes;
	atomic_ullong recovered;
	atomic_ullong discrepancies;
	atomic_llong last_success_s; /* Unix time; 0: none */
	atomic_llong last_error_s;
	atomic_ullong error[SCOREBOARD_RECONCILE_ERROR_WORDS];
	/* The queue of a provider that only notifies. */
	atomic_ullong notify_pending, notify_done, notify_rejected;
	atomic_llong notify_oldest_s;
};
#define SCOREBOARD_RECONCILE_KNOWN 1u   /* the profile has a row */
#define SCOREBOARD_RECONCILE_FAILING 2u /* its alert episodes */
#define SCOREBOARD_RECONCILE_STALE 4u
#define SCOREBOARD_NOTIFY_KNOWN 8u      /* its queue's figures */
#define SCOREBOARD_NOTIFY_WAITING 16u   /* its notify_waiting episode */

struct scoreboard {
	uint32_t magic;
	uint32_t size;
	atomic_ullong requests[SCOREBOARD_PROVIDERS][OUTCOME_COUNT];
	atomic_ullong duration_buckets[SCOREBOARD_BUCKETS];
	atomic_ullong duration_count;
	atomic_ullong duration_sum_us;
	atomic_ullong mysql_errors[SCOREBOARD_MYSQL_CODES + 1];
	atomic_ullong redis_errors[SCOREBOARD_REDIS_FAULTS];
	atomic_ullong lost_leases;
	atomic_ullong workers_started;
	atomic_ullong worker_restarts;
	atomic_ullong reloads;
	atomic_ullong reloads_refused;
	/* The versions before's; unused (slots[] below hold the pids), kept
	 * so their segments grow in place. */
	atomic_int worker_pids[SCOREBOARD_WORKERS];
	/* payhook-dispatch's, when it shares metrics_file. */
	atomic_ullong dispatch_seen;
	atomic_ullong dispatch_attempts[SCOREBOARD_DISPATCH_RESULTS];
	atomic_ullong dispatch_buckets[SCOREBOARD_BUCKETS];
	atomic_ullong dispatch_count;
	atomic_ullong dispatch_sum_us;
	atomic_ullong dispatch_circuit_opened;
	atomic_ullong dispatch_pending;
	atomic_ullong dispatch_in_flight;
	atomic_ullong dispatch_dead;
	atomic_ullong dispatch_oldest_due_s;
	atomic_ullong dispatch_gauges_at_s;
	/* Added last, so a segment of the version before (PREVIOUS_SIZE) is
	 * this one without them, and grows in place. */
	atomic_ullong lifecycle[SCOREBOARD_PROVIDERS][LIFECYCLE_KINDS]
			       [OUTCOME_COUNT];
	/* The pool's status, each worker's slot, the hour, the failures:
	 * added after the lifecycle counters, for the same reason. */
	atomic_llong start_time;
	atomic_uint workers_configured;
	atomic_ullong accepted;
	atomic_ullong max_active;
	atomic_ullong max_children_reached;
	atomic_llong listen_queue, max_listen_queue, listen_queue_len;
	atomic_ullong slow_requests;
	atomic_ullong terminated_requests;
	struct scoreboard_slot slots[SCOREBOARD_WORKERS];
	struct scoreboard_minute minutes[SCOREBOARD_MINUTES];
	atomic_ullong failures_next;
	struct scoreboard_failure failures[SCOREBOARD_FAILURES];
	/* Each running payhook-dispatch's circuit: added after the
	 * failures, for the same reason. */
	struct scoreboard_circuit circuits[SCOREBOARD_DISPATCHERS];
	/* Refunds past their payment's amount: added after the circuits. */
	atomic_ullong suspicious_refunds;
	/* The latest answers refused before the signature was checked
	 * (metrics_refusal): apart from failures[], so that anonymous
	 * requests never push a signed request's failure off the page.
	 * Added after the suspicious refunds, for the same reason. */
	atomic_ullong refusals_next;
	struct scoreboard_failure refusals[SCOREBOARD_FAILURES];
	/* The target's shared state: added after the refusals, for the same
	 * reason. */
	struct scoreboard_target target;
	/* The inbox (inbox_days): deliveries kept or whose write failed, by
	 * provider and outcome kept (ignored, unauthorized), and replayed
	 * deliveries that recorded something. Added after the target, for
	 * the same reason. */
	atomic_ullong inbox[SCOREBOARD_PROVIDERS][2][SCOREBOARD_INBOX_RESULTS];
	atomic_ullong inbox_replayed[SCOREBOARD_PROVIDERS];
	/* payhook-reconcile's figures per profile, as payhook-dispatch last
	 * read them (reconcile_at_s; 0: never). Added after the inbox, for
	 * the same reason. */
	atomic_ullong reconcile_at_s;
	struct scoreboard_reconcile reconcile[CONFIG_PROVIDER_COUNT];
};

/* A process's view of a segment (metrics.h's opaque struct metrics). */
struct metrics {
	struct scoreboard *seg;
	int fd;
	struct scoreboard_slot *mine;       /* this worker's slot, or NULL */
	struct scoreboard_circuit *circuit; /* this dispatcher's, or NULL */
};

/* Relaxed counters and gauges: no lock, no system call. */
static inline void scoreboard_add(atomic_ullong *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static inline unsigned long long scoreboard_get(const atomic_ullong *counter)
{
	return atomic_load_explicit(counter, memory_order_relaxed);
}

static inline void scoreboard_set(atomic_ullong *gauge,
				  unsigned long long value)
{
	atomic_store_explicit(gauge, value, memory_order_relaxed);
}

/* The upper bound of histogram bucket b (< SCOREBOARD_BUCKETS), in
 * microseconds. */
int64_t scoreboard_bucket_us(size_t b);

/* Counts elapsed_us into a histogram of those buckets. Can't fail. */
void scoreboard_observe(atomic_ullong *buckets, atomic_ullong *count,
			atomic_ullong *sum_us, int64_t elapsed_us);

/* Whether process pid runs (one of another user's too). */
bool scoreboard_pid_alive(int pid);

/* The writer's half of a sequence lock: seq odd while the fields change. */
unsigned scoreboard_write_begin(atomic_uint *seq);
void scoreboard_write_end(atomic_uint *seq);

/* The reader's half: seq before the fields are read (odd: the writer is at
 * them), then whether what was read since is consistent. */
unsigned scoreboard_read_begin(const atomic_uint *seq);
bool scoreboard_read_end(const atomic_uint *seq, unsigned before);

/* Text into atomic words (a reader racing the writer reads a torn value,
 * which its sequence lock then refuses): only the words the text and its
 * NUL cover, at most nwords. */
void scoreboard_store_words(atomic_ullong *dst, size_t nwords,
			    const char *text, size_t len);

/* The reader's copy of what scoreboard_store_words wrote (out: nwords * 8
 * bytes), NUL-terminated. */
void scoreboard_load_words(const atomic_ullong *src, size_t nwords,
			   char *out);

#endif
