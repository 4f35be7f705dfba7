/* inbox.h - keeping what payhook answered but did not record (prefix
 * inbox_): with inbox_days above 0, each delivery on an enabled profile's
 * path answered 200 ignored or 401 is kept in table inbox (inbox_store.h)
 * with its raw body, the profile's signature headers only, the time it was
 * received, the outcome and the reason, for payhook-reconcile --replay.
 *
 * The pipeline notes the delivery while its request is at hand (a copy of
 * the few headers, no I/O) and keeps it after the answer went out
 * (pipeline_finish): the write never delays an answer nor changes one.
 * Kept deliveries are held in memory, at most INBOX_BATCH_ROWS of them and
 * INBOX_BATCH_BYTES of bodies and headers, and written as one multi-row
 * INSERT in one commit (inbox_store_keep_batch) when the batch is full,
 * when its oldest was held INBOX_FLUSH_MS, and whenever the caller calls
 * inbox_flush (a worker that got no connection for INBOX_IDLE_MS, or about
 * to exit): a process killed with SIGKILL loses at most its unwritten
 * batch.
 * Each delivery is counted in the metrics once written or failed; a write
 * that fails is logged the first time, then as a count at most once every
 * INBOX_LOG_EVERY_S seconds.
 */
#ifndef PAYHOOK_INBOX_H
#define PAYHOOK_INBOX_H

#include <stdbool.h>
#include <stddef.h>

#include "configuration.h"
#include "error.h"
#include "metrics.h"
#include "provider.h"
#include "request.h"
#include "response.h"

/* The batch: its limits, how long a delivery waits at most while its
 * worker stays busy, and how long a worker holding deliveries waits for the
 * next connection before it writes them. */
#define INBOX_BATCH_ROWS 64
#define INBOX_BATCH_BYTES 65536
#define INBOX_FLUSH_MS 1000
#define INBOX_IDLE_MS 50
/* The failures' log lines: one at most this often (each process). */
#define INBOX_LOG_EVERY_S 60

struct inbox; /* the store, the delivery noted, the batch; opaque */

/* Returns an inbox for cfg (which must outlive it), not yet connected, or
 * NULL with err set. Only for inbox_days above 0. */
struct inbox *inbox_new(const struct config *cfg, struct error *err);

/* Logs the count of failed writes not logged yet, frees the inbox and
 * drops the batch it holds unwritten (inbox_flush first); NULL is fine. */
void inbox_free(struct inbox *inbox);

/* Counts each delivery written or failed in metrics from now on (NULL:
 * none). metrics must outlive the inbox. Can't fail. */
void inbox_set_metrics(struct inbox *inbox, struct metrics *metrics);

/* Whether table inbox is there (for --check-config): 0, or -1 with err
 * naming the migration that adds it. */
int inbox_check(struct inbox *inbox, struct error *err);

/* Whether r (for the request of an enabled profile) is kept: 200 ignored
 * or 401. */
bool inbox_wants(const struct result *r);

/* Notes the request answered r by provider (a copy of its signature
 * headers, the time now, the outcome and reason; event_type names what was
 * ignored), for the inbox_keep after the answer. Replaces any delivery
 * noted before. Can't fail: headers too long to keep are left out, and the
 * replay then finds the signature missing. */
void inbox_note(struct inbox *inbox, const struct provider *provider,
		const struct request *req, const struct result *r,
		const char *event_type);

/* Holds the delivery noted, with a copy of body[0..len), in the batch and
 * forgets it; writes the batch when it is full or its oldest is due.
 * Returns 1 when a delivery was noted, else 0. Can't fail: a delivery
 * that cannot be held or written is counted and logged as a failed write. */
int inbox_keep(struct inbox *inbox, const char *body, size_t len);

/* How many deliveries the batch holds unwritten. */
size_t inbox_held(const struct inbox *inbox);

/* Writes the batch when its oldest delivery was held INBOX_FLUSH_MS or
 * more. Can't fail (as inbox_keep). */
void inbox_flush_due(struct inbox *inbox);

/* Writes the batch now (nothing when it is empty). Can't fail (as
 * inbox_keep). */
void inbox_flush(struct inbox *inbox);

#endif
