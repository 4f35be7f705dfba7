/* notify_store.h - the notifications table (prefix notify_store_) over the
 * one MySQL core (sqlconn): what the providers that only notify (Mollie,
 * Mercado Pago, GoCardless) said changed. The receiver queues a
 * notification before it answers 200 {"result":"queued"}
 * (lib/receiver/notify.c); payhook-reconcile claims it, fetches the object
 * from the provider's API, records what the API says and marks it done,
 * rejected or due again after a back-off (lib/reconcile/notify_fetch.c).
 *
 * At most one pending row per (provider, object_id): a notification of an
 * object that has one pending adds to its notices instead. A fetch holds
 * its row by a lease (a random token and leased_until, the database's
 * clock): another fetcher leaves it alone until it runs out, and a fetcher
 * whose lease ran out changes nothing by its late result (every change is
 * fenced by the token). A notification that came while its row's fetch ran
 * (notices grew since the claim) keeps the row pending, due at once: the
 * fetch may have read the object before the change it announced.
 *
 * Every statement commits by itself (autocommit), but a queue (or a
 * notice) of several notices, which is one transaction.
 */
#ifndef PAYHOOK_NOTIFY_STORE_H
#define PAYHOOK_NOTIFY_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "configuration.h"
#include "error.h"

/* The longest object id and event id kept (the columns' VARBINARY(255)). */
#define NOTIFY_STORE_ID_MAX 255
#define NOTIFY_STORE_TOKEN_LEN 16

struct notify_store; /* a MySQL connection of its own; opaque */

/* What a failed statement meant: the table missing (the migration not
 * run), or anything else (the database down, busy, read-only). */
enum notify_store_failure {
	NOTIFY_STORE_FAILED = -1,
	NOTIFY_STORE_NO_TABLE = -2,
};

/* Returns a store for cfg (which must outlive it), not yet connected, or
 * NULL with err set. */
struct notify_store *notify_store_new(const struct config *cfg,
				      struct error *err);

/* Frees it; NULL is fine. */
void notify_store_free(struct notify_store *store);

/* Whether the table is there: 0, or -1 with err naming the migration that
 * adds it (db/migrate-16-notifications.sql) or what failed. */
int notify_store_check(struct notify_store *store, struct error *err);

/* ---- the receiver ---- */

/* One notification to queue: the object to fetch and the provider's event
 * id (NULL or "" when it has none). */
struct notify_notice {
	const char *object_id;
	const char *event_id;
};

/* Queues notices[0..n) of provider (its name), heard as source ("webhook",
 * "reconcile" or "replay"), in one transaction: a new pending row each, or
 * one more notice on the pending row of its object. Returns 0 once they
 * are committed, or a notify_store_failure with err set (nothing queued,
 * or, when the connection was lost during the commit, maybe queued: the
 * provider's retry then adds a notice). */
int notify_store_queue(struct notify_store *store, const char *provider,
		       const char *source, const struct notify_notice *notices,
		       size_t n, struct error *err);

/* Adds each of notices[0..n) to its object's pending row, only if every
 * one has one (no new row: what the receiver does when notify_max_pending
 * are pending); several in one transaction, all or none. Returns 1 when
 * every one had one (committed), 0 when one had none (nothing changed),
 * or a notify_store_failure with err set. */
int notify_store_notice(struct notify_store *store, const char *provider,
			const struct notify_notice *notices, size_t n,
			struct error *err);

/* How many notifications are pending, or a notify_store_failure with err
 * set. */
long long notify_store_pending(struct notify_store *store, struct error *err);

/* ---- the fetcher ---- */

/* One pending notification as the fetcher holds it. */
struct notify_item {
	unsigned long long id;
	char provider[33];
	char object_id[NOTIFY_STORE_ID_MAX + 1];
	char event_id[NOTIFY_STORE_ID_MAX + 1]; /* "" when none */
	char source[16];                        /* "webhook", ... */
	unsigned long notices;                  /* as claimed */
	unsigned long attempts;                 /* fetches begun, this one
						 * included once claimed */
	int64_t received_us;                    /* Unix microseconds */
	unsigned char token[NOTIFY_STORE_TOKEN_LEN]; /* the lease's */
};

/* The pending notifications due now and not held by a lease, oldest due
 * first, of provider (NULL: every provider), into items[0..*n) (at most
 * cap). Returns 0, or a notify_store_failure with err set. */
int notify_store_due(struct notify_store *store, const char *provider,
		     struct notify_item *items, size_t cap, size_t *n,
		     struct error *err);

/* Takes item (as notify_store_due read it) for lease_s seconds with a new
 * token, counting an attempt. Returns 1 when taken (item's token, notices
 * and attempts are the row's now), 0 when another fetcher took it or it is
 * no longer pending, or a notify_store_failure with err set. */
int notify_store_claim(struct notify_store *store, struct notify_item *item,
		       long lease_s, struct error *err);

/* Renews item's lease for lease_s seconds from now. Returns 1, 0 when the
 * lease was lost (run out and taken), or a notify_store_failure. */
int notify_store_renew(struct notify_store *store,
		       const struct notify_item *item, long lease_s,
		       struct error *err);

/* How a fetch ends its row. */
enum notify_store_end {
	NOTIFY_STORE_DONE,     /* what the API said is committed */
	NOTIFY_STORE_REJECTED, /* the API does not know the object */
};

/* What notify_store_finish did. */
enum notify_store_finished {
	NOTIFY_STORE_ENDED = 1, /* the row is done or rejected */
	NOTIFY_STORE_AGAIN = 2, /* notified again meanwhile: pending, due now */
	NOTIFY_STORE_LOST = 0,  /* the lease was lost: nothing changed */
};

/* Ends item's fetch as end says, with note (NULL: none) as last_error;
 * unless it was notified again since its claim (NOTIFY_STORE_AGAIN).
 * Returns an enum notify_store_finished, or a notify_store_failure with err
 * set. */
int notify_store_finish(struct notify_store *store,
			const struct notify_item *item,
			enum notify_store_end end, const char *note,
			struct error *err);

/* A failed fetch: item stays pending, due again delay_ms from now, with
 * note as last_error, its lease given back. Returns 1, 0 when the lease was
 * lost, or a notify_store_failure with err set. */
int notify_store_retry(struct notify_store *store,
		       const struct notify_item *item, long long delay_ms,
		       const char *note, struct error *err);

/* Deletes at most limit done and rejected rows last changed more than days
 * days ago. Returns how many, or a notify_store_failure with err set. */
long notify_store_prune(struct notify_store *store, long days, long limit,
			struct error *err);

#endif
