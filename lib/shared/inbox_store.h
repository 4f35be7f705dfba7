/* inbox_store.h - the inbox table (prefix inbox_store_) over the one MySQL
 * core (sqlconn): the deliveries payhook answered 200 ignored or 401 on an
 * enabled profile's path, kept while inbox_days is above 0 for
 * payhook-reconcile --replay (lib/reconcile/replay.c). Written by the
 * receiver after the answer went out (lib/receiver/inbox.c), read and
 * cleared by the replay, aged out by payhook-dispatch's retention step.
 *
 * Every statement commits by itself (autocommit): nothing here holds a lock
 * past one statement.
 */
#ifndef PAYHOOK_INBOX_STORE_H
#define PAYHOOK_INBOX_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "configuration.h"
#include "error.h"

struct inbox_store; /* a MySQL connection of its own; opaque */

/* One kept delivery as the replay reads it. headers and body are owned by
 * the store: valid until the next inbox_store_next or inbox_store_free. */
struct inbox_entry {
	unsigned long long id;
	char provider[33];
	int64_t received_s;       /* when it came, Unix seconds */
	char outcome[16];         /* "ignored" or "unauthorized" */
	const char *headers;      /* the JSON object of signature headers */
	const char *body;
	size_t len;
};

/* What the replay asks for: NULL or 0 for no filter. */
struct inbox_filter {
	const char *provider;
	int64_t since_s;          /* received at or after */
	const char *outcome;
};

/* Returns a store for cfg (which must outlive it), not yet connected, or
 * NULL with err set. */
struct inbox_store *inbox_store_new(const struct config *cfg,
				    struct error *err);

/* Frees it; NULL is fine. */
void inbox_store_free(struct inbox_store *store);

/* Whether the table is there: 0, or -1 with err naming the migration that
 * adds it (db/migrate-11-inbox.sql) or what failed. */
int inbox_store_check(struct inbox_store *store, struct error *err);

/* What a kept delivery's signature was, which decides the order in which
 * a full inbox (inbox_max_bytes) lets deliveries go: those that carried
 * none first, then those whose signature failed, the signed ones (answered
 * ignored) last; each oldest first. Anyone can post the first two. */
enum inbox_signature {
	INBOX_SIGNATURE_BY_OUTCOME = 0, /* verified if ignored, else failed */
	INBOX_SIGNATURE_VERIFIED,
	INBOX_SIGNATURE_FAILED,
	INBOX_SIGNATURE_MISSING,
};

/* One delivery for inbox_store_keep_batch: the provider's name, when it
 * was received (Unix microseconds), its outcome ("ignored" or
 * "unauthorized") and signature, the reason, the kept headers' JSON
 * object and body[0..len). */
struct inbox_row {
	const char *provider;
	int64_t received_us;
	const char *outcome;
	enum inbox_signature signature;
	const char *reason;
	const char *headers;
	const char *body;
	size_t len;
};

/* Keeps rows[0..n) as one multi-row INSERT (one commit; more than one only
 * when the rows would not fit in one statement of this store's packet),
 * then, with inbox_max_bytes above 0, keeps the cap once for the whole
 * batch: it adds the table up (inbox_store_trim) at its first batch and
 * once its writes since pass a sixteenth of the cap; in between, when its
 * count says the cap is passed, it drops deliveries adding up to the
 * excess, in enum inbox_signature's order, without a scan (so other workers' writes may pass the cap
 * by up to a sixteenth of it each until the next sum, or payhook-dispatch's
 * retention step). Sets *kept to how many rows were written.
 * Returns 0, or -1 with err set: the rows from *kept on were not written,
 * or (*kept == n) the trim failed and is tried again at the next batch. */
int inbox_store_keep_batch(struct inbox_store *store,
			   const struct inbox_row *rows, size_t n,
			   size_t *kept, struct error *err);

/* Drops deliveries, in enum inbox_signature's order and each class oldest
 * first, until the bodies of the others add up to at most max_bytes. Returns how many it dropped, or -1 with err set. */
long inbox_store_trim(struct inbox_store *store, size_t max_bytes,
		      struct error *err);

/* Drops at most limit deliveries received more than days days ago, oldest
 * first. Returns how many, or -1 with err set. */
long inbox_store_expire(struct inbox_store *store, long days, long limit,
			struct error *err);

/* The next delivery after id *after (oldest first) that filter allows:
 * 1 with *entry filled and *after moved to it, 0 when there is none, -1
 * with err set. */
int inbox_store_next(struct inbox_store *store,
		     const struct inbox_filter *filter,
		     unsigned long long *after, struct inbox_entry *entry,
		     struct error *err);

/* Removes delivery id (replayed and recorded). Returns 0, or -1. */
int inbox_store_remove(struct inbox_store *store, unsigned long long id,
		       struct error *err);

/* Gives delivery id the outcome ("ignored", "unauthorized", or NULL to
 * keep it) and reason its last replay found. Returns 0, or -1. */
int inbox_store_note(struct inbox_store *store, unsigned long long id,
		     const char *outcome, const char *reason,
		     struct error *err);

#endif
