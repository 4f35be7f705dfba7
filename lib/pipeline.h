/* pipeline.h - one webhook request from CGI variables and body to outcome:
 * method, length, size, media type, signature, body, then the Redis lock and
 * the MySQL write, in that order, the first failing check deciding the answer.
 *
 * It knows nothing of FastCGI: the caller hands it the variables and a way to
 * read the body, so the same code serves FastCGI, plain CGI and the tests.
 */
#ifndef PAYHOOK_PIPELINE_H
#define PAYHOOK_PIPELINE_H

#include <stddef.h>

#include "configuration.h"
#include "error.h"
#include "response.h"

/* The request as the web server describes it. Strings are NUL-terminated and
 * NULL when absent; they only need to live during pipeline_handle. */
struct request {
	const char *method;            /* REQUEST_METHOD */
	const char *content_type;      /* CONTENT_TYPE */
	const char *content_length;    /* CONTENT_LENGTH */
	const char *webhook_id;        /* HTTP_WEBHOOK_ID */
	const char *webhook_timestamp; /* HTTP_WEBHOOK_TIMESTAMP */
	const char *webhook_signature; /* HTTP_WEBHOOK_SIGNATURE */
	/* Reads up to cap bytes of the body into buf. Returns how many (0 at the
	 * end of the body) or -1 when reading failed. */
	long (*read_body)(void *ctx, char *buf, size_t cap);
	void *read_ctx;
};

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

/* Connects to both backends and checks the schema (for --check-config),
 * logging nothing. Returns 0, or -1 with err naming the first failure. */
int pipeline_check_redis(struct pipeline *pipeline, struct error *err);
int pipeline_check_mysql(struct pipeline *pipeline, struct error *err);

#endif
