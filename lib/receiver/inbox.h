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
 * when its oldest was held INBOX_FLUSH_MS, once the worker got no
 * connection for INBOX_IDLE_MS (inbox_idle), and before it exits
 * (inbox_flush): a process killed with SIGKILL loses at most its unwritten
 * batch.
 * With inbox_spool_dir set, those batches go to the worker's spool file
 * instead (inbox_spool.h): a burst costs the request path a write to the
 * page cache and no database work, which waits until the worker got no
 * connection for INBOX_LOAD_IDLE_MS (long enough to mean the pool has
 * spare time, not that other workers took the last connections). Then the
 * spool is loaded into the table, with the orphans of workers that died.
 * A busy worker loads its spool itself once it holds INBOX_SPOOL_MAX_BYTES
 * or its oldest waited INBOX_SPOOL_MAX_MS, so a flood that never stops
 * pays the database as without a spool; a batch the database refused
 * waits in the spool (a load tried again every INBOX_RETRY_MS) instead of
 * being lost.
 * Each delivery is counted in the metrics once written or failed; a write
 * that fails is logged the first time, then as a count at most once every
 * INBOX_LOG_EVERY_S seconds.
 */
#ifndef PAYHOOK_INBOX_H
#define PAYHOOK_INBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* The spool: how long a worker gets no connection before it loads it; how
 * much a busy worker's file holds, and how long its oldest delivery waits,
 * before the worker loads it anyway; how long after a failed load the
 * next one is tried. */
#define INBOX_LOAD_IDLE_MS 1000
#define INBOX_SPOOL_MAX_BYTES (16u << 20)
#define INBOX_SPOOL_MAX_MS 30000
#define INBOX_RETRY_MS 5000
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

/* Whether table inbox is there and inbox_spool_dir, when set, can be
 * written (for --check-config): 0, or -1 with err naming the migration
 * that adds it or what is wrong with the directory. */
int inbox_check(struct inbox *inbox, struct error *err);

/* Whether r (for the request of an enabled profile) is kept: 200 ignored
 * or 401. */
bool inbox_wants(const struct result *r);

/* Notes the request answered r by provider (a copy of its signature
 * headers, the time now, the outcome and reason; event_type names what was
 * ignored; signature_missing: a 401 for a request that carried no
 * signature, which a full inbox lets go first), for the inbox_keep after
 * the answer. Replaces any delivery noted before. Can't fail: headers too
 * long to keep are left out, and the replay then finds the signature
 * missing. */
void inbox_note(struct inbox *inbox, const struct provider *provider,
		const struct request *req, const struct result *r,
		const char *event_type, bool signature_missing);

/* Holds the delivery noted, with a copy of body[0..len), in the batch and
 * forgets it; writes the batch when it is full or its oldest is due.
 * Returns 1 when a delivery was noted, else 0. Can't fail: a delivery
 * that cannot be held or written is counted and logged as a failed write. */
int inbox_keep(struct inbox *inbox, const char *body, size_t len);

/* How many deliveries the batch holds unwritten, plus one when the spool
 * holds deliveries not loaded yet or was not looked at for orphans: above
 * 0, inbox_flush has work before the worker exits. */
size_t inbox_held(const struct inbox *inbox);

/* How many more milliseconds a worker that has waited idle_us for a
 * connection may wait before inbox_idle has work (0: now), or -1 when it
 * has none. */
long inbox_idle_wait_ms(const struct inbox *inbox, int64_t idle_us);

/* The worker got no connection for idle_us: the batch goes out after
 * INBOX_IDLE_MS (to the spool when there is one), the spool is loaded
 * after INBOX_LOAD_IDLE_MS. Can't fail (as inbox_keep). */
void inbox_idle(struct inbox *inbox, int64_t idle_us);

/* Writes the batch when its oldest delivery was held INBOX_FLUSH_MS or
 * more. Can't fail (as inbox_keep). */
void inbox_flush_due(struct inbox *inbox);

/* Writes the batch to the database now (nothing when it is empty), then
 * loads the spool and its orphans unless a load failed less than
 * INBOX_RETRY_MS ago: for a process about to exit. Can't fail (as
 * inbox_keep). */
void inbox_flush(struct inbox *inbox);

#endif
