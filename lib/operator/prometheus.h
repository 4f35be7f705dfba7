/* prometheus.h - pieces of the Prometheus text exposition format that
 * status.c and status_dispatch.c both write: a histogram of the shared
 * segment's buckets.
 */
#ifndef PAYHOOK_PROMETHEUS_H
#define PAYHOOK_PROMETHEUS_H

#include "metrics.h"
#include "textbuf.h"

/* Appends histogram h as series name (its buckets in seconds, cumulative,
 * then +Inf, _sum and _count) with its HELP and TYPE lines. Can't fail
 * (o->full says when it did not fit). */
void prometheus_histogram(struct textbuf *o, const char *name,
			  const char *help, const struct metrics_histogram *h);

#endif
