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

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "configuration.h"
#include "error.h"
#include "metrics.h"
#include "payment.h"
#include "provider.h"
#include "request.h"
#include "response.h"
#include "store.h"

struct pipeline; /* configuration, parsers and backend connections; opaque */

/* The configuration as the receiver's programs (payhook, payhook-sign,
 * payhook-reconcile) load it: config_load, then the cross-key checks of
 * the keys' owners: provider_check_config, route_check_config (the
 * operator's paths and tokens), lock_check_config (Redis, the lease,
 * request_terminate_timeout_ms against it). Returns 0, or -1
 * with err set and cfg cleaned up. */
int pipeline_load_config(struct config *cfg, const char *path,
			 struct error *err);

/* Returns a pipeline for cfg (which must outlive it), or NULL with err set.
 * Backends are connected lazily, on the first request that needs them. */
struct pipeline *pipeline_new(const struct config *cfg, struct error *err);

/* Writes the inbox's batch (pipeline_flush), then frees everything; NULL
 * is fine. */
void pipeline_free(struct pipeline *pipeline);

/* Counts every request, backend error and lost lease in metrics from now on
 * (NULL: none). metrics must outlive the pipeline. Can't fail. */
void pipeline_set_metrics(struct pipeline *pipeline, struct metrics *metrics);

/* What the health check found. */
struct pipeline_health {
	bool mysql_ok, redis_ok;
	bool redis_required;      /* false under redis_unavailable = db_only */
	bool redis_used;          /* false under lock_backend = none */
	struct error mysql_err, redis_err;
};

/* Asks both backends over the pipeline's own connections (connecting when
 * needed, within the configured timeouts) and fills *health. Returns 0 when
 * the worker can record a payment now (MySQL, and Redis unless db_only),
 * else -1. */
int pipeline_health(struct pipeline *pipeline, struct pipeline_health *health);

/* Runs one request up to its answer and fills *result with its outcome.
 * Can't fail: every fault becomes an outcome. The locks it took are
 * released before it returns, so a provider that sends the next event of
 * the transaction once it has the answer never finds them; the caller
 * sends the answer, then must call pipeline_finish before the next
 * request. */
void pipeline_answer(struct pipeline *pipeline, const struct request *request,
		     struct result *result);

/* pipeline_answer for a request already routed (route.h) to profile. */
void pipeline_answer_profile(struct pipeline *pipeline,
			     const struct request *request,
			     enum config_provider profile,
			     struct result *result);

/* After the answer to the request of the last pipeline_answer went out:
 * counts it, logs its one line, holds a delivery answered 200 ignored or
 * 401 in the inbox's batch (inbox.h: written when the batch is full or its
 * oldest was held a second) and, when a lease found the early marks
 * incomplete, rebuilds them when due. Can't fail. */
void pipeline_finish(struct pipeline *pipeline, const struct result *result);

/* How many deliveries the inbox holds not written yet: the caller calls
 * pipeline_flush before it waits idle or exits. */
size_t pipeline_held(const struct pipeline *pipeline);

/* pipeline_flush when the oldest delivery held is due (INBOX_FLUSH_MS). */
void pipeline_flush_due(struct pipeline *pipeline);

/* inbox_idle_wait_ms and inbox_idle of the inbox (-1 and nothing without
 * one): for a worker that has waited idle_us for a connection. */
long pipeline_idle_wait_ms(const struct pipeline *pipeline, int64_t idle_us);
void pipeline_idle(struct pipeline *pipeline, int64_t idle_us);

/* Writes the deliveries the inbox holds (one multi-row INSERT, one
 * commit); nothing when it holds none. A write that fails is counted and
 * logged (at most a line a minute). Can't fail. */
void pipeline_flush(struct pipeline *pipeline);

/* Records body[0..len), an event payhook fetched itself from the
 * provider's API with the merchant's key (over verified TLS or loopback),
 * as if profile's provider had delivered it with headers (NULL, or a
 * NULL-terminated list of at most 8 CGI variables such as
 * "HTTP_X_SHOPIFY_TOPIC=orders/paid"): the webhook's own path (the checks,
 * the parse, the lock, the unique keys, the outcomes and the log line)
 * with the signature step left out, and source written on the rows it
 * inserts. With dry_run it judges from the committed rows alone and writes
 * nothing (a row not there yet is OUTCOME_PROCESSED, reason "dry run: not
 * recorded"). Releases its locks before it returns, so no pipeline_finish
 * follows. Can't fail: every fault becomes r's outcome. */
void pipeline_record_trusted(struct pipeline *pipeline,
			     enum config_provider profile,
			     char *const *headers, const char *body,
			     size_t len, enum payment_source source,
			     bool dry_run, struct result *result);

/* Puts body[0..len), a delivery kept in the inbox (inbox.h) with its
 * signature headers (as for pipeline_record_trusted; NULL-terminated, at
 * most 8), through the webhook's path again with today's configuration:
 * the signature checked with every configured secret, its timestamp judged
 * against received_at (the time the delivery came, not now), and source =
 * replay on the rows it inserts. Never kept in the inbox again. dry_run as
 * for pipeline_record_trusted. Releases its locks and finishes (log line,
 * counting) before it returns. Can't fail: every fault becomes r's
 * outcome. */
void pipeline_replay(struct pipeline *pipeline, enum config_provider profile,
		     char *const *headers, const char *body, size_t len,
		     time_t received_at, bool dry_run, struct result *result);

/* The payments and lifecycle events the last request carried, valid until
 * the next request. */
const struct provider_batch *pipeline_last_batch(const struct pipeline *pipeline);

/* Connects to MySQL and checks the schema, for --check-config, logging
 * nothing. Returns 0, or -1 with err naming what failed. */
int pipeline_check_mysql(struct pipeline *pipeline, struct error *err);

/* The operator's page's figures from MySQL (store_summary) over the
 * pipeline's own connection. Returns 0, or -1 with err set. */
int pipeline_summary(struct pipeline *pipeline, struct store_summary *summary,
		     struct error *err);

/* ---- test hooks: no program calls these; the tests do (hence the
 * _test_ in their names). ---- */

/* pipeline_answer, pipeline_finish and pipeline_flush, for a caller with
 * nothing to send in between. */
void pipeline_test_handle(struct pipeline *pipeline,
			  const struct request *request,
			  struct result *result);

#endif
