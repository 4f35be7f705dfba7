/* pipeline.h - one webhook request from CGI variables and body to outcome:
 * the profile its path names, the request checks (method, length, size,
 * media type), the provider's signature and body, then for each payment the
 * Redis lock and the MySQL write, the first failing check deciding the
 * answer.
 *
 * It knows nothing of FastCGI: the caller hands it a struct request, so the
 * same code serves FastCGI, plain CGI and the tests.
 */
#ifndef PAYHOOK_PIPELINE_H
#define PAYHOOK_PIPELINE_H

#include <stddef.h>

#include "configuration.h"
#include "error.h"
#include "request.h"
#include "response.h"

struct pipeline; /* configuration, parsers and backend connections; opaque */

/* Returns a pipeline for cfg (which must outlive it), or NULL with err set.
 * Backends are connected lazily, on the first request that needs them. */
struct pipeline *pipeline_new(const struct config *cfg, struct error *err);

/* Frees everything; NULL is fine. */
void pipeline_free(struct pipeline *pipeline);

/* Runs one request and fills *result with its outcome; logs one line for it.
 * Can't fail: every fault becomes an outcome. A lock taken is released before
 * it returns. */
void pipeline_handle(struct pipeline *pipeline, const struct request *request,
		     struct result *result);

/* Connects to a backend (Redis; MySQL with the schema check) for
 * --check-config, logging nothing. Returns 0, or -1 with err naming what
 * failed. */
int pipeline_check_redis(struct pipeline *pipeline, struct error *err);
int pipeline_check_mysql(struct pipeline *pipeline, struct error *err);

#endif
