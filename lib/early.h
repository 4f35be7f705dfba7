/* early.h - the rebuild of the lock's early marks (lock.h, enum lock_early):
 * after Redis lost them (a restart, a flush, a failover, or a first start),
 * one worker waits until no transaction that marked an event on the server
 * before can still commit, then marks every payment that has lifecycle
 * rows and no row of its own, and declares the marks complete for the
 * server it is connected to. Until then every payment's INSERT probes
 * MySQL for such rows (store.h, STORE_EVENTS_UNKNOWN): slower, never
 * wrong.
 */
#ifndef PAYHOOK_EARLY_H
#define PAYHOOK_EARLY_H

#include "error.h"
#include "lifecycle_store.h"
#include "lock.h"

/* Rebuilds the marks when due (lock_early_rebuild_due). Returns 1 when it
 * rebuilt them (*marked: how many payments were marked), 0 when not due
 * yet, -1 with err naming what failed (the marks stay incomplete; a later
 * call tries again). */
int early_rebuild(struct lock_client *lock, struct lifecycle_store *events,
		  unsigned long *marked, struct error *err);

#endif
