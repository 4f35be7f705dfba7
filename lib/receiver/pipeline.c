/* pipeline.c - one webhook request from CGI variables to outcome (see
 * pipeline.h). The handler shape: the outcome starts as "error", every step
 * either decides the outcome or passes on, and the request's locks are
 * released before its answer goes out.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "early.h"
#include "inbox.h"
#include "lifecycle_store.h"
#include "lock.h"
#include "log.h"
#include "notify.h"
#include "payload.h"
#include "pipeline.h"
#include "provider.h"
#include "route.h"
#include "store.h"
#include "timing.h"

struct pipeline {
	const struct config *cfg;
	struct provider_set *providers;
	struct payload_parser *parser;
	struct lock_client *lock;
	struct store *store;
	struct lifecycle_store *events;      /* refunds, disputes, cancellations */
	struct notify *notify;               /* the providers that only notify:
					      * their queue (NULL: none enabled) */
	struct provider_batch *batch;        /* allocated once */
	char *body;                          /* max_body_bytes, allocated once */
	struct metrics *metrics;             /* NULL: nothing counted */
	/* The request between pipeline_answer and pipeline_finish: the locks
	 * it still holds (held_for[i] the payment or lifecycle link whose
	 * transaction held[i] locks: items of one transaction share it), and
	 * what its log line needs. */
	struct lock_lease *held;             /* HELD_MAX, allocated once */
	const struct payment **held_for;     /* HELD_MAX, allocated once */
	size_t held_count;
	const struct provider *provider;
	int64_t elapsed_us;
	struct error detail, note;
	/* Refused before its signature was checked, or failing it (404,
	 * 405, 411, 413, 415, a short body, 401): counted apart from the
	 * failures of signed requests. */
	bool unsigned_refusal;
	/* A lease came back with the early marks incomplete: the rebuild is
	 * tried once the answer is out (pipeline_finish), not before
	 * early_due_us (timing_now_us), when the last try said "not yet". */
	bool early_incomplete;
	int64_t early_due_us;
	/* pipeline_record_trusted's request: no signature step, the rows'
	 * source, and (dry_run) look-ups instead of writes. */
	bool trusted, dry_run;
	enum payment_source source;
	/* inbox_days: the deliveries answered 200 ignored or 401 are noted
	 * by the answer and held by pipeline_finish in the inbox's batch,
	 * written when it fills or by pipeline_flush (NULL: off); body_len is
	 * the request's body in p->body. pipeline_replay's request: its
	 * signature judged at replay_at, the time it was received (0: now),
	 * and never kept again. */
	struct inbox *inbox;
	size_t body_len;
	time_t replay_at;
};

/* A request locks each payment and each lifecycle event's payment once. */
#define HELD_MAX (PROVIDER_PAYMENTS_MAX + PROVIDER_LIFECYCLE_MAX)

struct pipeline *pipeline_new(const struct config *cfg, struct error *err)
{
	struct pipeline *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		error_set(err, "pipeline: out of memory");
		return NULL;
	}
	p->cfg = cfg;
	p->providers = provider_set_new(cfg, err);
	if (p->providers == NULL)
		goto fail;
	p->parser = payload_parser_new();
	p->batch = malloc(sizeof(*p->batch));
	p->held = malloc(HELD_MAX * sizeof(*p->held));
	p->held_for = malloc(HELD_MAX * sizeof(*p->held_for));
	/* +1 so a zero max never means malloc(0). */
	p->body = malloc(cfg->max_body_bytes + 1);
	if (p->parser == NULL || p->batch == NULL || p->body == NULL ||
	    p->held == NULL || p->held_for == NULL) {
		error_set(err, "pipeline: out of memory for a %zu-byte body",
			  cfg->max_body_bytes);
		goto fail;
	}
	p->lock = lock_client_new(cfg, err);
	if (p->lock == NULL)
		goto fail;
	p->store = store_new(cfg, err);
	if (p->store == NULL)
		goto fail;
	p->events = lifecycle_store_new(cfg, err);
	if (p->events == NULL)
		goto fail;
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT && p->notify == NULL;
	     i++) {
		if (!config_provider_enabled(cfg, i) || !provider_notifies(i))
			continue;
		p->notify = notify_new(cfg, err);
		if (p->notify == NULL)
			goto fail;
	}
	if (cfg->inbox_days > 0) {
		p->inbox = inbox_new(cfg, err);
		if (p->inbox == NULL)
			goto fail;
	}
	return p;
fail:
	pipeline_free(p);
	return NULL;
}

void pipeline_free(struct pipeline *p)
{
	if (p == NULL)
		return;
	pipeline_flush(p);
	provider_set_free(p->providers);
	payload_parser_free(p->parser);
	lock_client_free(p->lock);
	store_free(p->store);
	lifecycle_store_free(p->events);
	notify_free(p->notify);
	inbox_free(p->inbox);
	free(p->batch);
	free(p->body);
	free(p->held);
	free(p->held_for);
	free(p);
}

void pipeline_set_metrics(struct pipeline *p, struct metrics *metrics)
{
	p->metrics = metrics;
	if (p->inbox != NULL)
		inbox_set_metrics(p->inbox, metrics);
}

int pipeline_health(struct pipeline *p, struct pipeline_health *h)
{
	error_clear(&h->mysql_err);
	error_clear(&h->redis_err);
	h->redis_required =
		p->cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_FAIL;
	h->redis_used = p->cfg->lock_backend == CONFIG_LOCK_REDIS;
	h->mysql_ok = store_ping(p->store, &h->mysql_err) == 0;
	h->redis_ok = h->redis_used && lock_ping(p->lock, &h->redis_err) == 0;
	return h->mysql_ok && (h->redis_ok || !h->redis_required) ? 0 : -1;
}

int pipeline_check_mysql(struct pipeline *p, struct error *err)
{
	if (store_check_schema(p->store, err) != 0)
		return -1;
	if (p->inbox != NULL && inbox_check(p->inbox, err) != 0)
		return -1;
	if (provider_set_check_stores(p->providers, err) != 0)
		return -1;
	if (p->notify != NULL && notify_check(p->notify, err) != 0)
		return -1;
	return lifecycle_store_check_schema(p->events, err);
}

int pipeline_summary(struct pipeline *p, struct store_summary *summary,
		     struct error *err)
{
	return store_summary(p->store, summary, err);
}

/* The guard of one write: the lease of its transaction, NULL when Redis
 * is down under redis_unavailable = db_only. */
struct write_guard {
	struct pipeline *p;
	struct lock_lease *lease;
	bool early_refused; /* early_event said no */
};

static int enough_lease(void *ctx, long needed_ms)
{
	const struct write_guard *g = ctx;

	return g->lease == NULL ||
		       lock_lease_remaining_ms(g->lease) > needed_ms ? 0 : -1;
}

/* An event before its payment is committed only once the payment's
 * INSERT will know of it: its early mark is set in Redis. Without Redis
 * the mark cannot be set, so such an event waits (503) for Redis, where a
 * payment's INSERT never does (it asks MySQL). */
static int early_event(void *ctx, struct error *err)
{
	struct write_guard *g = ctx;
	int rc;

	if (g->lease == NULL)
		rc = error_set(err, "redis unavailable: an event before its "
			       "payment is recorded only with its early mark");
	else
		rc = lock_mark_early(g->p->lock, g->lease, err);
	g->early_refused = rc != 0;
	return rc;
}

/* What the lease's early marks say of lifecycle rows before the payment. */
static enum store_events known_events(const struct lock_lease *lease)
{
	if (lease == NULL)
		return STORE_EVENTS_UNKNOWN;
	switch (lease->early) {
	case LOCK_EARLY_NONE:
		return STORE_EVENTS_NONE;
	case LOCK_EARLY_MARKED:
		return STORE_EVENTS_SOME;
	case LOCK_EARLY_UNKNOWN:
	case LOCK_EARLY_INCOMPLETE:
		break;
	}
	return STORE_EVENTS_UNKNOWN;
}

/* Turns what the store said into the outcome. */
static void store_outcome(enum store_status status, struct result *r)
{
	switch (status) {
	case STORE_INSERTED:
		response_set(r, OUTCOME_PROCESSED, NULL);
		break;
	case STORE_DUPLICATE:
		response_set(r, OUTCOME_DUPLICATE, NULL);
		break;
	case STORE_CONFLICT:
		response_set(r, OUTCOME_CONFLICT,
			   "transaction_id already recorded with a different "
			   "amount or currency");
		break;
	case STORE_RETRYABLE:
		response_set(r, OUTCOME_UNAVAILABLE,
			   "database busy (deadlock, lock wait or slow "
			   "statement): retry");
		break;
	case STORE_UNKNOWN_OUTCOME:
		response_set(r, OUTCOME_UNAVAILABLE,
			   "commit outcome unknown: retry");
		break;
	case STORE_LEASE_EXPIRED:
		response_set(r, OUTCOME_UNAVAILABLE,
			   "lock lease ran out before commit: retry");
		break;
	case STORE_UNAVAILABLE:
		response_set(r, OUTCOME_UNAVAILABLE, "database unavailable: retry");
		break;
	case STORE_NOT_FOUND:
	default:
		response_set(r, OUTCOME_ERROR, "unexpected store result");
		break;
	}
}

/* One item of a request: a payment, or a refund, dispute or cancellation
 * of one (then link is the event's link to its payment). */
struct item {
	const struct payment *link;
	const struct lifecycle_event *event; /* NULL for a payment */
};

/* Counts the MySQL error behind a store result that is a failure (a 1062
 * that was a duplicate is none). */
static void count_store_error(struct pipeline *p, const struct item *it,
			      enum store_status status)
{
	if (status != STORE_INSERTED && status != STORE_DUPLICATE &&
	    status != STORE_CONFLICT && status != STORE_NOT_FOUND &&
	    status != STORE_LEASE_EXPIRED && status != STORE_INVALID)
		metrics_mysql_error(p->metrics,
				    it->event != NULL ?
					    lifecycle_store_last_error(p->events) :
					    store_last_error(p->store));
}

static void count_lock_fault(struct pipeline *p)
{
	switch (lock_last_fault(p->lock)) {
	case LOCK_FAULT_CONNECT:
		metrics_redis_error(p->metrics, METRICS_REDIS_CONNECT);
		break;
	case LOCK_FAULT_IO:
		metrics_redis_error(p->metrics, METRICS_REDIS_IO);
		break;
	case LOCK_FAULT_REPLY:
		metrics_redis_error(p->metrics, METRICS_REDIS_REPLY);
		break;
	case LOCK_FAULT_NONE:
		break;
	}
}

/* Releases the locks the request holds, once its items are written and
 * before its answer goes out. A lease that ran out, or a release that
 * failed, is a note for the log line: the outcome stands, it was decided
 * by the row. */
static void release_held(struct pipeline *p, struct error *note)
{
	struct error lock_err = { "" };

	for (size_t i = 0; i < p->held_count; i++) {
		switch (lock_release(p->lock, &p->held[i], &lock_err)) {
		case LOCK_RELEASED:
			break;
		case LOCK_RELEASE_EXPIRED:
			metrics_lost_lease(p->metrics);
			error_set(note, "lost lease: the lock expired before "
					"release");
			break;
		case LOCK_RELEASE_STOLEN:
			metrics_lost_lease(p->metrics);
			error_set(note, "lost lease: the lock is held by another "
					"worker, left alone");
			break;
		case LOCK_RELEASE_FAILED:
			count_lock_fault(p);
			error_set(note, "lock release failed (%s); it expires "
					"by itself", lock_err.message);
			break;
		}
	}
	p->held_count = 0;
}

/* The write of one item under guard (NULL: no lock at all), its status
 * counted and turned into the outcome. */
static void write_item(struct pipeline *p, const struct item *it,
		       size_t body_len, struct write_guard *g,
		       struct result *r, struct error *detail)
{
	struct store_guard guard = { enough_lease, early_event, g };
	struct lock_lease *lease = g != NULL ? g->lease : NULL;
	enum store_events events = known_events(lease);
	enum store_status stored;

	if (it->event != NULL)
		stored = lifecycle_store_record(p->events, it->event, p->body,
						body_len, g != NULL ? &guard : NULL,
						detail);
	else
		stored = store_insert_payment(p->store, it->link, p->body,
					      body_len, events,
					      g != NULL ? &guard : NULL, detail);
	count_store_error(p, it, stored);
	store_outcome(stored, r);
	if (stored == STORE_CONFLICT && it->event != NULL)
		response_set(r, OUTCOME_CONFLICT, "the payment is recorded in "
			     "another currency");
	/* A total past its column: never a 503 retried for days. */
	if (stored == STORE_INVALID)
		response_set(r, OUTCOME_INVALID, "%s", detail->message);
	/* Recorded, as the provider says, but worth a look. */
	if (stored == STORE_INSERTED && it->event != NULL &&
	    lifecycle_store_suspicious(p->events, &p->note))
		metrics_suspicious_refund(p->metrics);
	if (g != NULL && g->early_refused)
		response_set(r, OUTCOME_UNAVAILABLE, "lock service unavailable: "
			     "retry");
	/* The payment is recorded: its mark has done its work. */
	if (it->event == NULL && events == STORE_EVENTS_SOME &&
	    (stored == STORE_INSERTED || stored == STORE_DUPLICATE ||
	     stored == STORE_CONFLICT))
		lock_clear_early(p->lock, lease);
}

/* The lock this request already holds for link's transaction (an Adyen
 * batch, a KOMOJU event listing every refund of a payment), or NULL. */
static struct lock_lease *held_lease(struct pipeline *p,
				     const struct payment *link)
{
	for (size_t i = 0; i < p->held_count; i++) {
		const struct payment *other = p->held_for[i];

		if (strcmp(other->provider, link->provider) == 0 &&
		    other->transaction_id_len == link->transaction_id_len &&
		    memcmp(other->transaction_id, link->transaction_id,
			   link->transaction_id_len) == 0)
			return &p->held[i];
	}
	return NULL;
}

/* The backend part for one item: the lock of its payment's transaction,
 * then the write; the lock is kept in p->held (the request's other items
 * of the same transaction share it), released once every item is
 * written, before the answer. Fills r; detail gets what failed, note what went wrong without
 * changing the outcome (Redis down under db_only), for the request's log
 * line. */
static void record_item(struct pipeline *p, const struct item *it,
			size_t body_len, struct result *r,
			struct error *detail, struct error *note)
{
	const struct payment *link = it->link;
	const char *scope = lock_scope_of(link->provider);
	struct lock_lease *lease = held_lease(p, link);
	struct write_guard guard = { p, NULL, false };
	struct error lock_err = { "" };
	enum lock_status locked = LOCK_ACQUIRED;
	enum store_status stored;
	int connected;

	metrics_request_item(p->metrics, (unsigned)provider_id(p->provider),
			     link->transaction_id, link->transaction_id_len);
	metrics_request_stage(p->metrics, METRICS_CONNECTING);
	/* Connect first, so the lease is not spent on connecting. */
	connected = it->event != NULL ?
			    lifecycle_store_connect(p->events, detail) :
			    store_connect(p->store, detail);
	if (connected != 0) {
		metrics_mysql_error(p->metrics,
				    it->event != NULL ?
					    lifecycle_store_last_error(p->events) :
					    store_last_error(p->store));
		response_set(r, OUTCOME_UNAVAILABLE, "database unavailable: retry");
		return;
	}
	metrics_request_stage(p->metrics, METRICS_INSERTING);
	/* No lock at all (lock_backend = none): the unique key alone. */
	/* A dry run judges from the committed rows alone. */
	if (p->dry_run) {
		stored = it->event != NULL ?
				 lifecycle_store_find(p->events, it->event, detail) :
				 store_find_payment(p->store, link, detail);
		count_store_error(p, it, stored);
		if (stored == STORE_NOT_FOUND)
			response_set(r, OUTCOME_PROCESSED, "dry run: not recorded");
		else
			store_outcome(stored, r);
		return;
	}
	if (p->cfg->lock_backend == CONFIG_LOCK_NONE) {
		write_item(p, it, body_len, NULL, r, detail);
		return;
	}

	if (lease == NULL) {
		metrics_request_stage(p->metrics, METRICS_LOCKING);
		lease = &p->held[p->held_count];
		locked = lock_acquire(p->lock, scope, link->transaction_id,
				      link->transaction_id_len,
				      p->cfg->lock_ttl_ms, lease, &lock_err);
		if (locked == LOCK_ACQUIRED) {
			p->held_for[p->held_count++] = link;
			if (lease->early == LOCK_EARLY_INCOMPLETE)
				p->early_incomplete = true;
		}
		metrics_request_stage(p->metrics, METRICS_INSERTING);
	}
	switch (locked) {
	case LOCK_ACQUIRED:
		guard.lease = lease;
		write_item(p, it, body_len, &guard, r, detail);
		return;
	case LOCK_BUSY:
		/* Busy is not done: only a committed row justifies a 2xx. */
		stored = it->event != NULL ?
				 lifecycle_store_find(p->events, it->event, detail) :
				 store_find_payment(p->store, link, detail);
		count_store_error(p, it, stored);
		if (stored == STORE_NOT_FOUND)
			response_set(r, OUTCOME_IN_PROGRESS,
				   "another delivery of this transaction is "
				   "being processed: retry");
		else
			store_outcome(stored, r);
		return;
	case LOCK_UNAVAILABLE:
		count_lock_fault(p);
		if (p->cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_FAIL) {
			error_set(detail, "%s", lock_err.message);
			response_set(r, OUTCOME_UNAVAILABLE,
				   "lock service unavailable: retry");
			return;
		}
		/* db_only: the unique key alone still prevents a second row. */
		error_set(note, "redis unavailable, recorded without the "
				"lock: %s", lock_err.message);
		write_item(p, it, body_len, &guard, r, detail);
		return;
	}
	response_set(r, OUTCOME_ERROR, "unexpected lock result");
}

/* Which of two answers for the items of one request wins: whatever asks the
 * provider to retry comes first, then a conflict, then success. */
static int outcome_rank(enum outcome outcome)
{
	switch (outcome) {
	case OUTCOME_ERROR:
		return 5;
	case OUTCOME_UNAVAILABLE:
		return 4;
	case OUTCOME_IN_PROGRESS:
		return 3;
	case OUTCOME_CONFLICT:
		return 2;
	case OUTCOME_PROCESSED:
		return 1;
	default:
		return 0;
	}
}

/* Records every payment of the batch, then every refund, dispute and
 * cancellation (so one that comes with its payment in an Adyen batch finds
 * the payment recorded), each in its own transaction under its payment's
 * lock, and answers for the lot. Each lifecycle event's outcome is counted
 * by its kind. */
static void record_batch(struct pipeline *p, size_t body_len, struct result *r,
			 struct error *detail, struct error *note)
{
	const struct provider_batch *batch = p->batch;
	struct result one;
	bool first = true;

	for (size_t i = 0; i < batch->count; i++)
		p->batch->payments[i].source = p->source;
	for (size_t i = 0; i < batch->lifecycle_count; i++)
		p->batch->lifecycle[i].link.source = p->source;
	for (size_t i = 0; i < batch->count + batch->lifecycle_count; i++) {
		const struct lifecycle_event *event =
			i < batch->count ? NULL
					 : &batch->lifecycle[i - batch->count];
		struct item it = {
			event != NULL ? &event->link : &batch->payments[i],
			event,
		};

		one.success_body = NULL;
		memcpy(one.transaction_id, it.link->transaction_id,
		       it.link->transaction_id_len + 1);
		record_item(p, &it, body_len, &one, detail, note);
		if (event != NULL)
			metrics_lifecycle(p->metrics, provider_id(p->provider),
					  event->kind, one.outcome);
		if (first || outcome_rank(one.outcome) > outcome_rank(r->outcome)) {
			memcpy(r->transaction_id, one.transaction_id,
			       sizeof(r->transaction_id));
			response_set(r, one.outcome, "%s", one.reason);
			first = false;
		}
	}
	r->success_body = batch->success_body;
}

/* The one log line of a request: info for an answer that went as it
 * should, warn for 5xx answers (with the backend's error) and for answers
 * that came with a note (a lost lease, Redis down under db_only). The
 * webhook's own id (the provider's event id, Standard Webhooks' webhook-id)
 * is on it, so an operator can follow one delivery. */
static void log_request(const struct config *cfg, const char *provider,
			const struct provider_batch *batch,
			const struct result *r, int64_t elapsed_us,
			const struct error *detail, const struct error *note)
{
	bool fault = r->outcome == OUTCOME_UNAVAILABLE ||
		     r->outcome == OUTCOME_ERROR;
	enum log_level level = fault || note->message[0] != '\0' ?
				       LOG_LEVEL_WARN : LOG_LEVEL_INFO;
	struct log_field fields[11];
	/* The first payment's event id, else the first lifecycle event's,
	 * else the first notification's. */
	const struct payment *first =
		batch->count > 0 ? &batch->payments[0] :
		batch->lifecycle_count > 0 ? &batch->lifecycle[0].link : NULL;
	const char *event_id = first != NULL && first->event_id_len > 0 ?
				       first->event_id :
			       first == NULL && batch->notice_count > 0 &&
					       batch->notices[0].event_id[0] != '\0' ?
				       batch->notices[0].event_id : "-";
	size_t n = 0;

	if (level > log_threshold)
		return;
	fields[n++] = (struct log_field)LOG_TEXT("outcome",
						 response_outcome_name(r->outcome));
	fields[n++] = (struct log_field)LOG_NUMBER(
		"status", response_outcome_status(r->outcome, cfg));
	fields[n++] = (struct log_field)LOG_TEXT("provider", provider);
	fields[n++] = (struct log_field)LOG_TEXT(
		"transaction_id",
		r->transaction_id[0] != '\0' ? r->transaction_id : "-");
	fields[n++] = (struct log_field)LOG_TEXT("event_id", event_id);
	fields[n++] = (struct log_field)LOG_NUMBER("elapsed_us", elapsed_us);
	if (first != NULL && first->source != PAYMENT_SOURCE_WEBHOOK)
		fields[n++] = (struct log_field)LOG_TEXT(
			"source", payment_source_name(first->source));
	if (batch->event_type[0] != '\0')
		fields[n++] = (struct log_field)LOG_TEXT("event_type",
							 batch->event_type);
	if (r->reason[0] != '\0')
		fields[n++] = (struct log_field)LOG_TEXT("reason", r->reason);
	if (fault && detail->message[0] != '\0')
		fields[n++] = (struct log_field)LOG_TEXT("detail",
							 detail->message);
	if (note->message[0] != '\0')
		fields[n++] = (struct log_field)LOG_TEXT("note", note->message);
	log_fields_at(level, fields, n);
}

/* An ignored event that announces a refund or a dispute which another
 * event of the provider carries (Stripe's charge.refunded): the note of
 * its log line says which to subscribe to, since nothing of it is
 * recorded. */
static void ignored_note(const struct provider *provider,
			 const char *event_type, struct error *note)
{
	const char *instead = provider_ignored_instead(provider, event_type);

	if (instead != NULL)
		error_set(note, "%s is not recorded; subscribe to %s, which "
			  "carry the change", event_type, instead);
}

/* Maps the checks before the body to their outcome. */
static enum outcome request_outcome(enum request_status status)
{
	switch (status) {
	case REQUEST_BAD_METHOD:
		return OUTCOME_METHOD_NOT_ALLOWED;
	case REQUEST_NO_LENGTH:
		return OUTCOME_LENGTH_REQUIRED;
	case REQUEST_TOO_LARGE:
		return OUTCOME_TOO_LARGE;
	case REQUEST_BAD_MEDIA_TYPE:
		return OUTCOME_UNSUPPORTED_MEDIA_TYPE;
	case REQUEST_SHORT_BODY:
		return OUTCOME_INVALID;
	case REQUEST_OK:
	default:
		return OUTCOME_ERROR;
	}
}

void pipeline_answer(struct pipeline *p, const struct request *req,
		     struct result *r)
{
	pipeline_answer_profile(p, req, route_profile(req), r);
}

void pipeline_answer_profile(struct pipeline *p, const struct request *req,
			     enum config_provider profile, struct result *r)
{
	const struct config *cfg = p->cfg;
	int64_t started_us = timing_now_us();
	struct error *detail = &p->detail, *note = &p->note, why = { "" };
	const struct provider *provider;
	const char *reason = NULL;
	enum request_status checked;
	enum provider_status read;
	size_t body_len = 0;

	error_clear(detail);
	error_clear(note);
	p->held_count = 0;
	p->unsigned_refusal = true;
	r->transaction_id[0] = '\0';
	r->success_body = NULL;
	/* Nothing of the request before may reach this one's log line (its
	 * event id) when it is refused before its body is read. */
	p->batch->count = 0;
	p->batch->lifecycle_count = 0;
	p->batch->notice_count = 0;
	p->batch->event_type[0] = '\0';
	response_set(r, OUTCOME_ERROR, "internal error");

	provider = p->provider = provider_enabled(p->providers, profile);
	if (provider == NULL) {
		response_set(r, OUTCOME_NOT_FOUND,
			   "no enabled provider profile at this path");
		goto out;
	}
	/* What payhook fetched itself is JSON; a delivery, the profile's. */
	checked = request_check_media(req, cfg->max_body_bytes,
				      p->trusted ? REQUEST_MEDIA_JSON
						 : provider_media(profile),
				      &body_len, &reason);
	if (checked == REQUEST_OK)
		checked = request_read_body(req, p->body, body_len, &reason);
	if (checked == REQUEST_TOO_LARGE) {
		response_set(r, OUTCOME_TOO_LARGE, "body larger than %zu bytes",
			   cfg->max_body_bytes);
		goto out;
	}
	if (checked != REQUEST_OK) {
		response_set(r, request_outcome(checked), "%s", reason);
		goto out;
	}
	if (p->trusted)
		read = provider_read_trusted(provider, req, p->parser, p->body,
					     body_len, p->batch, &why);
	else if (p->replay_at != 0)
		read = provider_read_replay(provider, req, p->parser, p->body,
					    body_len, p->replay_at, p->batch,
					    &why);
	else
		read = provider_read(provider, req, p->parser, p->body,
				     body_len, time(NULL), p->batch, &why);
	p->unsigned_refusal = read == PROVIDER_UNAUTHORIZED;
	switch (read) {
	case PROVIDER_PAYMENTS:
		record_batch(p, body_len, r, detail, note);
		break;
	case PROVIDER_IGNORED:
		/* No payment, but refunds, disputes or cancellations. */
		if (p->batch->lifecycle_count > 0) {
			record_batch(p, body_len, r, detail, note);
			break;
		}
		response_set(r, OUTCOME_IGNORED, NULL);
		r->success_body = p->batch->success_body;
		ignored_note(provider, p->batch->event_type, note);
		break;
	case PROVIDER_NOTIFIED:
		/* A provider that only notifies: queued, fetched later. */
		notify_queue(p->notify, provider, p->batch, p->source,
			     p->dry_run, r, detail);
		break;
	case PROVIDER_UNAUTHORIZED:
		response_set(r, OUTCOME_UNAUTHORIZED, "%s", why.message);
		break;
	case PROVIDER_INVALID:
		if (p->batch->payments[0].transaction_id_len > 0)
			memcpy(r->transaction_id,
			       p->batch->payments[0].transaction_id,
			       p->batch->payments[0].transaction_id_len + 1);
		response_set(r, OUTCOME_INVALID, "%s", why.message);
		break;
	case PROVIDER_UNAVAILABLE:
		/* The signature cannot be checked yet (PayPal's certificate
		 * out of reach): 503 and Retry-After, never 200 or 401. */
		response_set(r, OUTCOME_UNAVAILABLE, "%s", why.message);
		break;
	case PROVIDER_ERROR:
	default:
		/* 500: ours, not the sender's, so the provider retries. */
		error_set(detail, "%s", why.message);
		break;
	}
out:
	/* Only the delivery itself: never a reconciled or replayed one. */
	if (p->inbox != NULL && provider != NULL && !p->trusted &&
	    p->replay_at == 0 && inbox_wants(r)) {
		inbox_note(p->inbox, provider, req, r, p->batch->event_type,
			   p->batch->signature_missing);
		p->body_len = body_len;
	}
	/* Before the answer goes out: a provider that sends the next event
	 * of the transaction once it has this answer (a refund right after
	 * its payment) must not find this request's lock. */
	release_held(p, note);
	p->elapsed_us = timing_now_us() - started_us;
}

/* After an answer, when a lease found the early marks incomplete: the
 * rebuild, when due (early.h). Its failure is logged, not the request's. */
static void rebuild_early(struct pipeline *p)
{
	struct error err;
	unsigned long marked, repaired;
	long wait_ms = 0;

	p->early_incomplete = false;
	if (timing_now_us() < p->early_due_us)
		return;
	switch (early_rebuild(p->lock, p->events, &marked, &repaired, &wait_ms,
			      &err)) {
	case 1:
		log_info("redis: early marks rebuilt (%lu payments with "
			 "lifecycle events before them)", marked);
		/* Warned: each is a payment whose totals were wrong until
		 * now. */
		if (repaired > 0)
			log_warn("redis: the totals of %lu payment(s) missed "
				 "an event recorded while Redis had lost the "
				 "locks: recomputed", repaired);
		break;
	case 0:
		/* Asked again when due, not at every request meanwhile. */
		p->early_due_us = timing_now_us() + wait_ms * 1000L;
		break;
	default:
		log_warn("redis: early marks not rebuilt: %s", err.message);
		p->early_due_us = timing_now_us() + 1000000L;
		break;
	}
}

/* After an answer: the delivery the answer noted goes into the inbox's
 * batch, written when full or due (inbox.h); a write that fails is logged
 * and counted there, the answer was the same. */
static void keep_delivery(struct pipeline *p)
{
	if (inbox_keep(p->inbox, p->body, p->body_len) == 0)
		inbox_flush_due(p->inbox);
}

void pipeline_finish(struct pipeline *p, const struct result *r)
{
	const struct provider *provider = p->provider;

	if (p->early_incomplete)
		rebuild_early(p);
	metrics_request(p->metrics,
			provider != NULL ? (unsigned)provider_id(provider)
					 : CONFIG_PROVIDER_COUNT,
			r->outcome, p->elapsed_us);
	if (response_outcome_status(r->outcome, p->cfg) >= 300) {
		unsigned id = provider != NULL ? (unsigned)provider_id(provider)
					       : CONFIG_PROVIDER_COUNT;

		if (p->unsigned_refusal)
			metrics_refusal(p->metrics, id, r);
		else
			metrics_failure(p->metrics, id, r);
	}
	log_request(p->cfg, provider != NULL ? provider_name(provider) : "-",
		    p->batch, r, p->elapsed_us, &p->detail, &p->note);
	if (p->inbox != NULL)
		keep_delivery(p);
}

void pipeline_test_handle(struct pipeline *p, const struct request *req,
			  struct result *r)
{
	pipeline_answer(p, req, r);
	pipeline_finish(p, r);
	pipeline_flush(p);
}

size_t pipeline_held(const struct pipeline *p)
{
	return p->inbox != NULL ? inbox_held(p->inbox) : 0;
}

void pipeline_flush_due(struct pipeline *p)
{
	if (p->inbox != NULL)
		inbox_flush_due(p->inbox);
}

long pipeline_idle_wait_ms(const struct pipeline *p, int64_t idle_us)
{
	return p->inbox != NULL ? inbox_idle_wait_ms(p->inbox, idle_us) : -1;
}

void pipeline_idle(struct pipeline *p, int64_t idle_us)
{
	if (p->inbox != NULL)
		inbox_idle(p->inbox, idle_us);
}

void pipeline_flush(struct pipeline *p)
{
	if (p->inbox != NULL)
		inbox_flush(p->inbox);
}

/* A request in memory: the trusted body with the CGI variables of a POST
 * of JSON, and the caller's headers. */
struct trusted_body {
	const char *body;
	size_t len, offset;
};

static long read_trusted(void *ctx, char *buf, size_t cap)
{
	struct trusted_body *t = ctx;
	size_t n = t->len - t->offset < cap ? t->len - t->offset : cap;

	memcpy(buf, t->body + t->offset, n);
	t->offset += n;
	return (long)n;
}

#define TRUSTED_HEADERS_MAX 8

/* body[0..len) with headers as a POST of JSON to profile's path, answered
 * and finished. */
static void answer_in_memory(struct pipeline *p, enum config_provider profile,
			     char *const *headers, const char *body,
			     size_t len, struct result *r)
{
	char length[32];
	char *params[TRUSTED_HEADERS_MAX + 4];
	struct trusted_body t = { body, len, 0 };
	struct request req = { params, read_trusted, &t };
	size_t n = 0;

	snprintf(length, sizeof(length), "CONTENT_LENGTH=%zu", len);
	params[n++] = (char *)"REQUEST_METHOD=POST";
	params[n++] = (char *)"CONTENT_TYPE=application/json";
	params[n++] = length;
	for (size_t i = 0; headers != NULL && headers[i] != NULL &&
			   i < TRUSTED_HEADERS_MAX; i++)
		params[n++] = headers[i];
	params[n] = NULL;
	pipeline_answer_profile(p, &req, profile, r);
	pipeline_finish(p, r);
}

void pipeline_record_trusted(struct pipeline *p, enum config_provider profile,
			     char *const *headers, const char *body,
			     size_t len, enum payment_source source,
			     bool dry_run, struct result *r)
{
	p->trusted = true;
	p->dry_run = dry_run;
	p->source = source;
	answer_in_memory(p, profile, headers, body, len, r);
	p->trusted = false;
	p->dry_run = false;
	p->source = PAYMENT_SOURCE_WEBHOOK;
}

void pipeline_replay(struct pipeline *p, enum config_provider profile,
		     char *const *headers, const char *body, size_t len,
		     time_t received_at, bool dry_run, struct result *r)
{
	/* 0 would mean now. */
	p->replay_at = received_at > 0 ? received_at : 1;
	p->dry_run = dry_run;
	p->source = PAYMENT_SOURCE_REPLAY;
	answer_in_memory(p, profile, headers, body, len, r);
	p->replay_at = 0;
	p->dry_run = false;
	p->source = PAYMENT_SOURCE_WEBHOOK;
}

const struct provider_batch *pipeline_last_batch(const struct pipeline *p)
{
	return p->batch;
}

int pipeline_load_config(struct config *cfg, const char *path,
			 struct error *err)
{
	if (config_load(cfg, path, err) != 0)
		return -1;
	if (provider_check_config(cfg, err) != 0 ||
	    route_check_config(cfg, err) != 0 ||
	    lock_check_config(cfg, err) != 0) {
		config_cleanup(cfg);
		return -1;
	}
	return 0;
}
