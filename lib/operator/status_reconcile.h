/* status_reconcile.h - payhook-reconcile's part of the Prometheus text
 * (status.c's metrics_path and payhook --stats): per profile with a cursor
 * row, the rows its passes recorded, the discrepancies, the last complete
 * pass, the failed passes in a row and the alert episodes open, as
 * payhook-dispatch last read them from reconcile_cursors into the shared
 * segment (metrics_reconcile.h). Nothing when no dispatcher did.
 */
#ifndef PAYHOOK_STATUS_RECONCILE_H
#define PAYHOOK_STATUS_RECONCILE_H

#include "metrics.h"
#include "textbuf.h"

/* Appends the series to o (o->full says when they did not fit). Can't
 * fail otherwise. */
void status_reconcile_put(struct textbuf *o, const struct metrics *metrics);

#endif
