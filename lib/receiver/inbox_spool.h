/* inbox_spool.h - the inbox's spool on the request host (prefix
 * inbox_spool_): with inbox_spool_dir set, a worker that is busy appends
 * the deliveries it keeps to a file of its own there (a write to the page
 * cache, no database round trip), and loads the file into table inbox once
 * it is idle (lib/receiver/inbox.c decides when). A file outlives its
 * worker: the files of workers that died (SIGKILL, a crash, a database
 * that was down when they stopped) are loaded by the next worker that
 * loads its own.
 *
 * A file is DIR/inbox-<pid>.spool, held with flock(LOCK_EX) by the worker
 * that writes it while that worker lives, so a file whose lock is free is
 * an orphan. It starts with a header naming how far it was loaded (moved
 * after each batch committed), then whole deliveries; a delivery cut short
 * by a crash is left out, and logged, when the file is loaded. A worker
 * killed between a batch's commit and the header's move keeps that batch
 * twice (a replay records it once).
 */
#ifndef PAYHOOK_INBOX_SPOOL_H
#define PAYHOOK_INBOX_SPOOL_H

#include <stddef.h>

#include "error.h"
#include "inbox_store.h"

struct inbox_spool; /* the directory, this process's file; opaque */

/* Returns a spool in directory dir (copied), the file not created yet,
 * or NULL with err set (out of memory). */
struct inbox_spool *inbox_spool_new(const char *dir, struct error *err);

/* Closes the file, which stays for whoever loads it next (removed when
 * it holds nothing); NULL is fine. */
void inbox_spool_free(struct inbox_spool *spool);

/* Appends rows[0..n) to this process's file (created and locked the first
 * time). Returns 0, or -1 with err set and the file as it was (the
 * directory missing or not writable, the disk full). */
int inbox_spool_append(struct inbox_spool *spool, const struct inbox_row *rows,
		       size_t n, struct error *err);

/* The bytes of deliveries in this process's file not loaded yet. */
size_t inbox_spool_pending(const struct inbox_spool *spool);

/* What loads a batch: 0 when rows[0..n) are committed, else -1 with err
 * set (nothing of them is taken as loaded). */
typedef int (*inbox_spool_load_fn)(void *ctx, const struct inbox_row *rows,
				   size_t n, struct error *err);

/* Loads this process's file, then every orphan in the directory, in
 * batches of at most max_rows deliveries and max_bytes bytes (a bigger
 * delivery alone), through load; a file loaded to its end is emptied (this
 * process's) or removed (an orphan). Stops at the first batch that fails.
 * Sets *loaded to the deliveries loaded and *lost to those left out as cut
 * short. Returns 0, or -1 with err set (a batch failed, a file could not
 * be read): what is not loaded stays for the next call. */
int inbox_spool_load(struct inbox_spool *spool, size_t max_rows,
		     size_t max_bytes, inbox_spool_load_fn load, void *ctx,
		     size_t *loaded, size_t *lost, struct error *err);

#endif
