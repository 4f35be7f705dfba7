/* target_store.h - the hand-off target's state as every payhook-dispatch of
 * the database shares it (prefix target_store_): one row of dispatch_target
 * per target, read and changed in short transactions on the hand-off
 * store's connection (handoff_store.h), the probe taken by one process at a
 * time under a lease, and the alerts decided with a change, kept in
 * dispatch_alerts until one dispatcher has sent them.
 *
 * Times are Unix microseconds of the database's clock (UNIX_TIMESTAMP(NOW(6)))
 * so that every host reads one clock; 0 is "none". The policy that decides
 * what the state becomes is the dispatcher's (dispatcher.h): this module only
 * stores it.
 *
 * A database from before db/migrate-9-dispatch-target.sql has no such
 * tables: every call then says so (TARGET_STORE_MISSING) and the caller
 * keeps a view of its own.
 */
#ifndef PAYHOOK_TARGET_STORE_H
#define PAYHOOK_TARGET_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "configuration.h"
#include "error.h"
#include "handoff_store.h"

/* dispatch_target.last_error is VARCHAR(255). */
#define TARGET_STORE_ERROR_MAX 255
/* dispatch_alerts.change_label, .detail. */
#define TARGET_STORE_LABEL_MAX 600
#define TARGET_STORE_DETAIL_MAX 255

/* One row of dispatch_target. */
struct target_state {
	bool open;                  /* the circuit */
	int64_t since_us;           /* it last opened or closed; 0: never */
	unsigned failures;          /* outage-like failures in a row */
	int64_t next_probe_us;      /* open: no probe before */
	int64_t probe_until_us;     /* a probe in hand: its lease; 0: none */
	bool probe_mine;            /* (read) this process holds it */
	int64_t pause_since_us;     /* a Retry-After episode began; 0: none */
	int64_t pause_until_us;     /* no attempt before (Retry-After) */
	long last_status;           /* the last answer's HTTP status; 0: none */
	char last_error[TARGET_STORE_ERROR_MAX + 1];
	int64_t last_attempt_us;
	int64_t last_success_us;
	bool dead_episode;          /* payment_dead alerted; until a 2xx */
	bool waiting_episode;       /* target_waiting alerted; until a 2xx */
	unsigned long long opened_total; /* times the circuit opened */
};

/* An alert decided with a change of the state (dispatch_alerts). */
struct target_alert {
	unsigned long long alert_id;   /* (read) its row */
	char event[33];                /* "circuit_open", "payment_dead", ... */
	int row_kind;                  /* handoff_row_kind of the row */
	unsigned long long row_id;
	char change[TARGET_STORE_LABEL_MAX + 1];
	char provider[HANDOFF_ROW_PROVIDER_MAX + 1];
	char transaction_id[PAYMENT_TRANSACTION_ID_MAX + 1];
	unsigned long attempts;
	unsigned failures;
	char detail[TARGET_STORE_DETAIL_MAX + 1];
};

/* The most alerts one change decides. */
#define TARGET_STORE_ALERTS_MAX 4

enum target_store_status {
	TARGET_STORE_OK = 0,
	TARGET_STORE_MISSING,  /* no dispatch_target: a database from before
				* db/migrate-9-dispatch-target.sql, or a
				* user without rights on it */
	TARGET_STORE_FAILED,   /* the database failed; err says why */
};

struct target_store; /* the target's key and label, and the store; opaque */

/* Returns a target store for cfg's target (dispatch_url, else
 * dispatch_command) on store's connection (both must outlive it), or NULL
 * with err set (out of memory). */
struct target_store *target_store_new(const struct config *cfg,
				      struct handoff_store *store,
				      struct error *err);

/* Frees it; NULL is fine. */
void target_store_free(struct target_store *t);

/* The target's label ("http://host:port/path", or "dispatch_command"). */
const char *target_store_label(const struct target_store *t);

/* The target's key in dispatch_target and dispatch_alerts (64 hex digits:
 * the SHA-256 of its URL or command), for the modules that queue alerts of
 * their own (reconcile_watch.h). */
const char *target_store_key(const struct target_store *t);

/* Reads the row (made when missing) into *s, and the database's clock into
 * *now_us, in a transaction of its own. Can fail. */
enum target_store_status target_store_read(struct target_store *t,
					   struct target_state *s,
					   int64_t *now_us, struct error *err);

/* Changes the row in one short transaction: locks it, calls change with
 * the row and the database's clock (it edits the row and may add up to
 * TARGET_STORE_ALERTS_MAX alerts to alerts[*count]), writes it back with
 * the alerts, commits. When change returns false nothing is written.
 * Returns TARGET_STORE_OK with *s the row as written. */
enum target_store_status target_store_change(
	struct target_store *t,
	bool (*change)(void *ctx, struct target_state *s, int64_t now_us,
		       struct target_alert *alerts, size_t *count),
	void *ctx, struct target_state *s, struct error *err);

/* Takes the probe of an open circuit whose next probe is due, unless
 * another process holds it and its lease (lease_ms) has not ended: *taken
 * says whether this process holds it now. */
enum target_store_status target_store_take_probe(struct target_store *t,
						 long lease_ms, bool *taken,
						 struct error *err);

/* Gives the probe back (nothing was due to probe with). */
enum target_store_status target_store_release_probe(struct target_store *t,
						    struct error *err);

/* Sends the alerts not sent yet (oldest first) whose claim is free or
 * ended: each is claimed for lease_ms, passed to send, and marked sent
 * when send returns 0; else it stays due, tried again after a back-off
 * (half the time it has been due: 5 s at least, 10 min at most). Sent ones stay (one
 * row per episode: the alerts' history; the user needs no DELETE). Stores
 * how many were sent in *sent. */
enum target_store_status target_store_send_alerts(
	struct target_store *t, long lease_ms,
	int (*send)(void *ctx, const struct target_alert *a), void *ctx,
	unsigned *sent, struct error *err);

/* For --check-config and --show: whether the tables exist. */
enum target_store_status target_store_check(struct target_store *t,
					    struct error *err);

#endif
