/* status_dispatch.h - payhook-dispatch's part of the Prometheus text
 * (status.c's metrics_path and payhook --stats): its attempts and delivery
 * latency, the hand-off table's gauges, each running dispatcher's circuit
 * and the target's shared state, as metrics_dispatch.h reads them from the
 * shared segment. Nothing when no dispatcher shares the segment.
 */
#ifndef PAYHOOK_STATUS_DISPATCH_H
#define PAYHOOK_STATUS_DISPATCH_H

#include "metrics.h"
#include "textbuf.h"

/* Appends the series to o (o->full says when they did not fit). Can't
 * fail otherwise. */
void status_dispatch_put(struct textbuf *o, const struct metrics *metrics);

#endif
