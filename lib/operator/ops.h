/* ops.h - the operator's paths of the FastCGI application: health_path (for
 * load balancers and uptime checks: 200 when this worker reaches its
 * backends, else 503, with a JSON body saying which), ping_path (liveness:
 * 200 pong, no backend asked), metrics_path (the pool's counters in the
 * Prometheus text format) and status_path (the pool and each worker, in the
 * Prometheus text or, for ?json or Accept: application/json, JSON), the
 * last two behind a bearer token when metrics_token is set, and
 * status_page_path (the operator's HTML page, lib/operator/page.h), always behind a
 * token: status_page_token, else metrics_token, as a bearer token or a
 * browser's Basic password. Each is off until its key is set.
 *
 * It sits above the pipeline: the health check uses the pipeline's own
 * backend connections, so it tells whether this worker could record a
 * payment now; the page's counts of refunds and disputes come over the same
 * connection, asked at most every 5 s.
 */
#ifndef PAYHOOK_OPS_H
#define PAYHOOK_OPS_H

#include <stddef.h>

#include "configuration.h"
#include "error.h"
#include "metrics.h"
#include "pipeline.h"
#include "request.h"
#include "route.h"

struct ops; /* opaque */

/* Returns the operator's paths for cfg, answering health from pipeline and
 * metrics from metrics (either may be NULL: that path then answers 503), or
 * NULL with err set. cfg, pipeline and metrics must outlive it. */
struct ops *ops_new(const struct config *cfg, struct pipeline *pipeline,
		    const struct metrics *metrics, struct error *err);

/* Frees it; NULL is fine. */
void ops_free(struct ops *ops);

/* Answers req, which route_request sent to target (an operator's path, not
 * ROUTE_WEBHOOK): returns the whole CGI response (status line, headers,
 * body) in a buffer owned by ops, valid until the next call, and its length
 * in *len. Can't fail: every fault is an answer. */
const char *ops_answer(struct ops *ops, enum route_target target,
		       const struct request *req, size_t *len);

#endif
