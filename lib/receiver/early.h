/* early.h - the rebuild of the lock's early marks (lock.h, enum lock_early):
 * after Redis lost them (a restart, a flush, a failover, or a first start),
 * one worker waits until no transaction that marked an event on the server
 * before can still commit, then marks every payment that has lifecycle
 * rows and no row of its own, recomputes the totals of every payment that
 * has both (a payment's plain INSERT and an event before it, each under a
 * lock Redis had lost, may have missed each other), and declares the marks
 * complete for the server it is connected to. Until then every payment's INSERT probes
 * MySQL for such rows (store.h, STORE_EVENTS_UNKNOWN): slower, never
 * wrong.
 */
#ifndef PAYHOOK_EARLY_H
#define PAYHOOK_EARLY_H

#include "error.h"
#include "lifecycle_store.h"
#include "lock.h"

/* Rebuilds the marks when due (lock_early_rebuild_due). Returns 1 when it
 * rebuilt them (*marked: how many payments were marked; *repaired: how
 * many recorded payments' totals were wrong and are now recomputed), 0
 * when not due yet (*wait_ms: for how long still), -1 with err naming what
 * failed (the marks stay incomplete; a later call tries again). */
int early_rebuild(struct lock_client *lock, struct lifecycle_store *events,
		  unsigned long *marked, unsigned long *repaired,
		  long *wait_ms, struct error *err);

#endif
