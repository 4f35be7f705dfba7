/* dispatcher.h - payhook-dispatch's loop (prefix dispatcher_): claim due
 * rows under a lease (handoff_store.h), attempt each (handoff.h), record the
 * result fenced by the claim's token; and the policy that decides what a
 * result means: retry with back-off, dead after dispatch_max_attempts,
 * back-pressure from the target (Retry-After, an outage, the circuit,
 * dispatch_rate_per_s) and the lease's margin.
 *
 * The clock, the waits, the stop test and the randomness come from the
 * caller (struct dispatcher_env), so the policy runs in unit tests on a
 * clock of their own. The back-pressure state (the circuit, a Retry-After
 * pause, the failures in a row, the open episodes of the alerts) is the
 * target's, shared by every dispatcher of the database (target_store.h):
 * the loop reads it before each claim and attempt, judges each attempt on
 * the row locked, and sends the alerts decided with it once each. Without
 * the table (a database from before db/migrate-9-dispatch-target.sql) the
 * state is this process's alone.
 *
 * The loop reads only a row's id, token, attempts and its log label
 * (handoff_row.h): a second kind of row is claimed by the same loop.
 */
#ifndef PAYHOOK_DISPATCHER_H
#define PAYHOOK_DISPATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alert.h"
#include "configuration.h"
#include "error.h"
#include "handoff.h"
#include "handoff_row.h"
#include "handoff_admin.h"
#include "handoff_store.h"
#include "metrics_reconcile.h"
#include "target_store.h"

enum dispatcher_event_kind {
	DISPATCHER_EVENT_DEAD,           /* a row went dead (first of an
					  * episode) */
	DISPATCHER_EVENT_CIRCUIT_OPEN,   /* the target failed too often */
	DISPATCHER_EVENT_CIRCUIT_CLOSED, /* it answered 2xx again */
	DISPATCHER_EVENT_TARGET_WAITING, /* it asked to wait (Retry-After)
					  * dispatch_alert_after_s or longer */
	/* payhook-reconcile's, as reconcile_watch.h decides them: a
	 * profile's passes keep failing, its last complete pass is older
	 * than a day, a pass completed again after either. */
	DISPATCHER_EVENT_RECONCILE_FAILING,
	DISPATCHER_EVENT_RECONCILE_STALE,
	DISPATCHER_EVENT_RECONCILE_RECOVERED,
	/* A notification of a provider that only notifies pending past
	 * notify_alert_after_s (notify_watch.h decides it). */
	DISPATCHER_EVENT_NOTIFY_WAITING,
};

struct dispatcher_event {
	enum dispatcher_event_kind kind;
	/* The dead row; else the row whose attempt it was. */
	enum handoff_row_kind row_kind;
	unsigned long long id;
	/* A change's "<kind> <object_id> <state>" (cut to fit); else "". */
	char change[HANDOFF_ROW_NAME_MAX * 2 + 64];
	char provider[HANDOFF_ROW_PROVIDER_MAX + 1];
	char transaction_id[PAYMENT_TRANSACTION_ID_MAX + 1];
	unsigned long attempts;
	unsigned failures;              /* failed attempts at the target in a
					 * row */
	char detail[TRANSPORT_DETAIL_MAX]; /* the attempt's detail */
	/* The episode's row in dispatch_alerts (its alert's idempotency key
	 * on every try); 0 for an alert of this process alone. */
	unsigned long long alert_id;
};

/* What became of an attempt, for the metrics. */
enum dispatcher_count {
	DISPATCHER_COUNT_DELIVERED,
	DISPATCHER_COUNT_RETRY,      /* failed, counted */
	DISPATCHER_COUNT_DEFERRED,   /* failed or told to wait, not counted */
	DISPATCHER_COUNT_DEAD,
	DISPATCHER_COUNT_SUPERSEDED,
	DISPATCHER_COUNT_UNRECORDED,
};

/* The target's circuit as this dispatcher sees it. */
enum dispatcher_circuit_state {
	DISPATCHER_CIRCUIT_CLOSED,    /* delivering in full batches */
	DISPATCHER_CIRCUIT_OPEN,      /* failed too often: waits for the next
				       * probe */
	DISPATCHER_CIRCUIT_HALF_OPEN, /* a probe's attempt under way */
};

struct dispatcher_circuit {
	enum dispatcher_circuit_state state;
	/* env's clock: when it entered the state; open: when it opened
	 * (failed probes keep it open, they do not open it again). */
	int64_t since_us;
	unsigned failures;         /* failed attempts at the target in a row */
	int64_t next_probe_us;     /* open: no probe before; else 0 */
	int64_t pause_until_us;    /* a Retry-After: no attempt before; 0 */
	long last_status;          /* the last answer's HTTP status; 0 */
	const char *last_error;    /* the last failure's detail ("" after a
				    * 2xx); lives as long as the dispatcher */
};

/* How often the loop reads the table's gauges (handoff_admin_gauges). */
#define DISPATCHER_GAUGES_EVERY_MS 5000L

/* The world the loop runs in. now_us must be timing_now_us's clock in a
 * real run (leases are measured on it). */
struct dispatcher_env {
	int64_t (*now_us)(void *ctx);
	/* Waits ms milliseconds, or less when a signal comes. */
	void (*wait_ms)(void *ctx, long ms);
	/* True once a stop was asked for; also where the caller serves its
	 * other signals (a log to reopen). */
	bool (*stopping)(void *ctx);
	/* 64 random bits for the back-off's jitter. */
	uint64_t (*random)(void *ctx);
	/* Told of each episode's start and end (alert.h sends them), after
	 * the attempt is recorded; may be NULL. Returns 0 when the alert
	 * was delivered (or none is set up), -1 when it was not: a shared
	 * alert (dispatch_alerts) then stays due and is tried again. */
	int (*on_event)(void *ctx, const struct dispatcher_event *event);
	/* Told of each attempt once recorded, and of the table's gauges every
	 * DISPATCHER_GAUGES_EVERY_MS; either may be NULL. */
	void (*on_attempt)(void *ctx, enum dispatcher_count what,
			   int64_t elapsed_us);
	void (*on_gauges)(void *ctx, const struct handoff_admin_gauges *gauges);
	/* Told of the circuit as the loop starts and whenever it changes
	 * (its state, the failures in a row, the next probe); may be NULL. */
	void (*on_circuit)(void *ctx, const struct dispatcher_circuit *circuit);
	/* Housekeeping between claims, as often as the gauges (the payloads'
	 * retention); may be NULL. Must return within a few hundred ms. */
	void (*on_tick)(void *ctx);
	/* Told, as often as the gauges, of payhook-reconcile's figures per
	 * profile (CONFIG_PROVIDER_COUNT entries) as reconcile_cursors holds
	 * them (reconcile_watch.h); may be NULL. */
	void (*on_reconcile)(void *ctx, const struct metrics_reconcile *rows);
	void *ctx;
};

/* An event as an alert (alert.h): what happened and what to do. */
struct dispatcher_alert {
	struct alert_message message;   /* its strings point into e and here */
	char summary[512];
	char action[256];
};

/* Fills a for e (which must outlive a's use). Can't fail. */
void dispatcher_alert_init(struct dispatcher_alert *a,
			   const struct dispatcher_event *e);

enum dispatcher_result {
	DISPATCHER_DELIVERED,
	DISPATCHER_RETRY,
	DISPATCHER_DEAD,
};

/* What one attempt's outcome means. */
struct dispatcher_verdict {
	enum dispatcher_result result;
	/* Toward dispatch_max_attempts: false for a Retry-After and for a
	 * failure during an outage (the target's previous attempt failed
	 * too, or its circuit is open). */
	bool counted;
	long delay_ms;          /* RETRY: due again this much later */
	const char *reason;     /* "retry-after", "outage", "failed",
				 * "rejected", ... */
};

/* Counts since dispatcher_new, for the log and the metrics. */
struct dispatcher_stats {
	unsigned long long delivered, retried, deferred, dead, superseded,
		unrecorded, released;
	/* Of deferred: told to wait (Retry-After). Times the loop found the
	 * target blocked (its circuit open, a Retry-After) before a claim. */
	unsigned long long waited, blocked;
	unsigned long long circuit_opened;
	int64_t latency_us_sum; /* the delivered attempts' durations */
};

/* How dispatcher_run ends. */
struct dispatcher_run_options {
	/* --once: return when nothing is due any more, or at deadline_us
	 * (env's clock; 0: none), instead of polling. */
	bool once;
	int64_t deadline_us;
};

struct dispatcher; /* the policy's state and the counts; opaque */

/* Returns a dispatcher for cfg (which, like env's ctx, must outlive it),
 * or NULL with err set (out of memory). */
struct dispatcher *dispatcher_new(const struct config *cfg,
				  const struct dispatcher_env *env,
				  struct error *err);

/* Frees it; NULL is fine. */
void dispatcher_free(struct dispatcher *d);

/* ---- the policy (no I/O: unit-tested on env's clock) ---- */

/* Judges the outcome of an attempt at row (attempts counted by its claim)
 * and updates the target's state: the circuit, a Retry-After, the run of
 * failures, the last answer. The classes: a 2xx delivers; a 429 or 503
 * with Retry-After pauses the whole target and is no attempt; no answer, a
 * timeout, a 408 or a 5xx (a command's failure) is outage-like: it counts
 * only when the target's previous attempt was not such a failure (it
 * answers others with 2xx), and several in a row open the circuit; any
 * other 4xx is the target refusing that row: it counts, and never opens
 * the circuit. Keeps the episodes' events for dispatcher_flush_events
 * (each once per episode of the target). Can't fail. */
void dispatcher_judge(struct dispatcher *d, const struct handoff_row *row,
		      const struct transport_outcome *out,
		      struct dispatcher_verdict *verdict);

/* Tells env's on_event of the events judged since the last flush, in
 * order (the loop does so once an attempt is recorded, so a slow alert
 * never delays a record). Can't fail. */
void dispatcher_flush_events(struct dispatcher *d);

/* Milliseconds before the next attempt may start: a Retry-After or an open
 * circuit not yet due for its probe, or dispatch_rate_per_s. 0: now.
 * Can't fail. */
long dispatcher_wait_ms(const struct dispatcher *d);

/* True when the wait is the target's (Retry-After, the circuit), not the
 * rate's. Can't fail. */
bool dispatcher_target_blocked(const struct dispatcher *d);

/* How many rows to claim: dispatch_batch_size, or 1 (the probe) while the
 * circuit is open. Can't fail. */
size_t dispatcher_claim_limit(const struct dispatcher *d);

/* True when an attempt starting after wait_ms more still ends (timeout plus
 * HANDOFF_STORE_LEASE_MARGIN_MS) before lease_end_us. Can't fail. */
bool dispatcher_lease_allows(const struct dispatcher *d, int64_t lease_end_us,
			     long wait_ms);

/* Notes that an attempt starts now: dispatch_rate_per_s, and while the
 * circuit is open, its probe (half-open until the attempt is judged).
 * Can't fail. */
void dispatcher_started(struct dispatcher *d);

/* "closed" or "open" (static). Can't fail. */
const char *dispatcher_circuit_name(const struct dispatcher *d);

/* The circuit now, into c. Can't fail. */
void dispatcher_circuit(const struct dispatcher *d,
			struct dispatcher_circuit *c);

/* The counts so far, owned by d. Can't fail. */
const struct dispatcher_stats *dispatcher_stats(const struct dispatcher *d);

/* Replaces the target's state by s (env's clock), as another process left
 * it. Can't fail. */
void dispatcher_set_target(struct dispatcher *d, const struct target_state *s);

/* ---- the loop ---- */

/* Claims, attempts and records until env's stopping() (or, with
 * options->once, until nothing is due or the deadline), with store and
 * handoff made in this process; a database that fails is tried again with
 * back-off. Claims not attempted are given back. Returns 0; -1 with err set
 * only when --once ends with work left (the deadline came, or the database
 * kept failing). */
int dispatcher_run(struct dispatcher *d, struct handoff_store *store,
		   struct handoff *handoff,
		   const struct dispatcher_run_options *options,
		   struct error *err);

/* ---- test hooks: no program calls these; the tests do (hence the
 * _test_ in their names). ---- */

/* The target's state now (env's clock), into s. Can't fail. */
void dispatcher_test_target(const struct dispatcher *d,
			    struct target_state *s);

#endif
