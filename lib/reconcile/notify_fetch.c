/* notify_fetch.c - payhook-reconcile as the fetcher of notifications (see
 * notify_fetch.h). The handler shape per notification: claimed, fetched,
 * each body recorded, and one block that ends the row (done, rejected, or
 * due again) and writes its log line.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_client.h"
#include "backends.h"
#include "log.h"
#include "notify_fetch.h"
#include "notify_store.h"
#include "payment.h"
#include "pipeline.h"
#include "provider.h"
#include "timing.h"

/* One request to the API, connecting included. */
#define REQUEST_TIMEOUT_MS 10000L
/* Notifications read from the table at once. */
#define DUE_BATCH 16
/* A recording that could not be committed (the database busy or down) is
 * tried again this much later. */
#define RECORD_RETRY_MS 2000LL
/* Done and rejected rows are kept this long. */
#define KEEP_DAYS 30L
#define PRUNE_LIMIT 1000L

/* What one provider's fetches came to. */
struct tally {
	unsigned long taken, fetched, processed, duplicate, ignored, conflict,
		invalid, rejected, failed, again, requests;
};

struct notify_fetch {
	const struct config *cfg;
	struct notify_store *store;
	struct pipeline *pipeline;
	struct api_client *clients[CONFIG_PROVIDER_COUNT];
	struct tally tally[CONFIG_PROVIDER_COUNT];
	/* A provider whose notifications are not fetched here (disabled,
	 * no key) was said once. */
	bool told[CONFIG_PROVIDER_COUNT];
};

bool notify_fetch_wanted(const struct config *cfg, int only)
{
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if ((only < 0 || (unsigned)only == p) && provider_notifies(p) &&
		    config_provider_enabled(cfg, p) && backend_has_key(cfg, p))
			return true;
	return false;
}

struct notify_fetch *notify_fetch_new(const struct config *cfg,
				      struct error *err)
{
	struct notify_fetch *f = calloc(1, sizeof(*f));

	if (f == NULL) {
		error_set(err, "notifications: out of memory");
		return NULL;
	}
	f->cfg = cfg;
	f->store = notify_store_new(cfg, err);
	if (f->store == NULL)
		goto fail;
	f->pipeline = pipeline_new(cfg, err);
	if (f->pipeline == NULL)
		goto fail;
	return f;
fail:
	notify_fetch_free(f);
	return NULL;
}

void notify_fetch_free(struct notify_fetch *f)
{
	if (f == NULL)
		return;
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		api_client_free(f->clients[p]);
	pipeline_free(f->pipeline);
	notify_store_free(f->store);
	free(f);
}

/* The profile named name, or -1. */
static int profile_of(const char *name)
{
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if (strcmp(name, config_provider_name(p)) == 0)
			return (int)p;
	return -1;
}

static const char *base_of(const struct notify_fetch *f,
			   enum config_provider p)
{
	return f->cfg->api_base[p] != NULL ? f->cfg->api_base[p]
					   : backends_for(p)->default_base;
}

/* The client of provider p, made at its first use. Returns it, or NULL
 * with err set. */
static struct api_client *client_of(struct notify_fetch *f,
				    enum config_provider p,
				    const struct notify_fetch_options *o,
				    struct error *err)
{
	const struct backend *b = backends_for(p);
	char header[BACKEND_HEADER_MAX];
	struct api_client_options co = {
		.auth_header = header,
		.rate_per_s = f->cfg->reconcile_rate_per_s,
		.max_retries = 1,
		.timeout_ms = REQUEST_TIMEOUT_MS,
		.https_only = strncmp(base_of(f, p), "https://", 8) == 0,
		.stopping = o->stopping,
		.headers = b->headers,
		.no_wait = true,
	};

	if (f->clients[p] != NULL)
		return f->clients[p];
	if (b->auth_header(f->cfg->api_key[p], header, err) != 0)
		return NULL;
	f->clients[p] = api_client_new(&co, err);
	memset(header, 0, sizeof(header));
	return f->clients[p];
}

static enum payment_source source_of(const char *name)
{
	if (strcmp(name, "reconcile") == 0)
		return PAYMENT_SOURCE_RECONCILE;
	if (strcmp(name, "replay") == 0)
		return PAYMENT_SOURCE_REPLAY;
	return PAYMENT_SOURCE_WEBHOOK;
}

/* The back-off after the attempts-th failed fetch, in ms. */
static long long backoff_ms(unsigned long attempts)
{
	long long ms = NOTIFY_FETCH_BACKOFF_FIRST_MS;

	for (unsigned long i = 1; i < attempts && ms < NOTIFY_FETCH_BACKOFF_MAX_MS;
	     i++)
		ms *= 2;
	return ms < NOTIFY_FETCH_BACKOFF_MAX_MS ? ms : NOTIFY_FETCH_BACKOFF_MAX_MS;
}

/* What the recording of a fetch came to. */
struct recorded {
	enum outcome worst;     /* of every body; OUTCOME_IGNORED when none */
	bool committed;         /* every body's outcome is final */
	char note[RESPONSE_REASON_MAX + 32]; /* a conflict's or refusal's */
};

/* Records every body of page as profile p's, heard as source. */
static void record_page(struct notify_fetch *f, enum config_provider p,
			const struct backend_page *page,
			enum payment_source source, struct tally *t,
			struct recorded *out)
{
	out->worst = OUTCOME_IGNORED;
	out->committed = true;
	out->note[0] = '\0';
	for (size_t i = 0; i < page->count && out->committed; i++) {
		struct result res;

		pipeline_record_trusted(f->pipeline, p, NULL,
					page->events[i].body,
					page->events[i].len, source, false,
					&res);
		switch (res.outcome) {
		case OUTCOME_PROCESSED:
			t->processed++;
			out->worst = OUTCOME_PROCESSED;
			break;
		case OUTCOME_DUPLICATE:
			t->duplicate++;
			if (out->worst == OUTCOME_IGNORED)
				out->worst = OUTCOME_DUPLICATE;
			break;
		case OUTCOME_IGNORED:
			t->ignored++;
			break;
		case OUTCOME_CONFLICT:
		case OUTCOME_INVALID:
		case OUTCOME_TOO_LARGE:
			/* What the webhook would have been refused for:
			 * final, and said (the recording's own line has it). */
			if (res.outcome == OUTCOME_CONFLICT)
				t->conflict++;
			else
				t->invalid++;
			out->worst = res.outcome;
			snprintf(out->note, sizeof(out->note), "%s: %s",
				 response_outcome_name(res.outcome), res.reason);
			break;
		default:
			/* Not committed (the database busy or down, the
			 * lock held): the notification stays pending. */
			out->committed = false;
			out->worst = res.outcome;
			snprintf(out->note, sizeof(out->note),
				 "not recorded: %s: %s",
				 response_outcome_name(res.outcome), res.reason);
			break;
		}
	}
}

/* The fetch's one log line. */
static void log_fetch(const char *outcome, const struct notify_item *item,
		      const char *recorded, long requests, int64_t elapsed_us,
		      const char *reason)
{
	bool fine = strcmp(outcome, "fetched") == 0 ||
		    strcmp(outcome, "again") == 0;
	struct log_field fields[9];
	size_t n = 0;

	fields[n++] = (struct log_field)LOG_TEXT("outcome", outcome);
	fields[n++] = (struct log_field)LOG_TEXT("provider", item->provider);
	fields[n++] = (struct log_field)LOG_TEXT("object_id", item->object_id);
	fields[n++] = (struct log_field)LOG_TEXT(
		"event_id", item->event_id[0] != '\0' ? item->event_id : "-");
	fields[n++] = (struct log_field)LOG_NUMBER("attempts", item->attempts);
	fields[n++] = (struct log_field)LOG_NUMBER("requests", requests);
	fields[n++] = (struct log_field)LOG_NUMBER("elapsed_us", elapsed_us);
	if (recorded != NULL)
		fields[n++] = (struct log_field)LOG_TEXT("recorded", recorded);
	if (reason != NULL && reason[0] != '\0')
		fields[n++] = (struct log_field)LOG_TEXT("reason", reason);
	log_fields_at(fine ? LOG_LEVEL_INFO : LOG_LEVEL_WARN, fields, n);
}

/* One due notification: claimed, fetched, recorded, ended. Returns 1 when
 * it was taken, 0 when another fetcher had it (or it is not fetched here),
 * -1 with err set when the table failed. */
static int take(struct notify_fetch *f, struct notify_item *item,
		const struct notify_fetch_options *o, bool *failed,
		struct error *err)
{
	int p = profile_of(item->provider);
	const struct backend *b = p >= 0 ? backends_for(p) : NULL;
	struct backend_page page = { 0 };
	struct api_client *client;
	struct recorded rec = { OUTCOME_IGNORED, true, "" };
	struct error why = { "" };
	const char *outcome = "failed";
	int64_t started_us = timing_now_us();
	unsigned long before = 0;
	long long delay_ms = 0;
	enum backend_fetch fetched;
	struct tally *t;
	int rc;

	if (p < 0 || b == NULL || b->fetch == NULL ||
	    !config_provider_enabled(f->cfg, p) || !backend_has_key(f->cfg, p) ||
	    (o->only >= 0 && o->only != p)) {
		if (p >= 0 && !f->told[p])
			log_warn("notifications of %s are pending, but %s is "
				 "not enabled with %s_api_key here: not fetched",
				 item->provider, item->provider, item->provider);
		if (p >= 0)
			f->told[p] = true;
		return 0;
	}
	t = &f->tally[p];
	rc = notify_store_claim(f->store, item, NOTIFY_FETCH_LEASE_S, err);
	if (rc <= 0)
		return rc < 0 ? -1 : 0;
	t->taken++;
	client = client_of(f, p, o, &why);
	if (client == NULL) {
		fetched = BACKEND_FETCH_FAILED;
	} else {
		before = api_client_requests(client);
		fetched = b->fetch(client, base_of(f, p), item->object_id,
				   &page, &why);
	}
	if (fetched == BACKEND_FETCHED &&
	    timing_now_us() - started_us > NOTIFY_FETCH_LEASE_S * 1000000 / 3 &&
	    notify_store_renew(f->store, item, NOTIFY_FETCH_LEASE_S, err) <= 0) {
		/* Its lease gone: another fetcher has it now. */
		backend_page_cleanup(&page);
		log_fetch("lost", item, NULL,
			  client != NULL ? (long)(api_client_requests(client) -
						  before) : 0,
			  timing_now_us() - started_us, "the lease ran out");
		return 1;
	}
	switch (fetched) {
	case BACKEND_FETCHED:
		record_page(f, p, &page, source_of(item->source), t, &rec);
		if (!rec.committed) {
			delay_ms = RECORD_RETRY_MS;
			snprintf(why.message, sizeof(why.message), "%s",
				 rec.note);
			break;
		}
		rc = notify_store_finish(f->store, item, NOTIFY_STORE_DONE,
					 rec.note[0] != '\0' ? rec.note : NULL,
					 err);
		if (rc < 0)
			goto table_failed;
		outcome = rc == NOTIFY_STORE_ENDED ? "fetched" :
			  rc == NOTIFY_STORE_AGAIN ? "again" : "lost";
		if (rc == NOTIFY_STORE_ENDED)
			t->fetched++;
		else if (rc == NOTIFY_STORE_AGAIN)
			t->again++;
		break;
	case BACKEND_UNKNOWN:
		rc = notify_store_finish(f->store, item, NOTIFY_STORE_REJECTED,
					 why.message, err);
		if (rc < 0)
			goto table_failed;
		outcome = rc == NOTIFY_STORE_ENDED ? "rejected" :
			  rc == NOTIFY_STORE_AGAIN ? "again" : "lost";
		if (rc == NOTIFY_STORE_ENDED)
			t->rejected++;
		else if (rc == NOTIFY_STORE_AGAIN)
			t->again++;
		break;
	case BACKEND_FETCH_FAILED:
	default:
		delay_ms = backoff_ms(item->attempts);
		if (client != NULL && api_client_retry_after(client) >= 0 &&
		    api_client_retry_after(client) * 1000LL > delay_ms)
			delay_ms = api_client_retry_after(client) * 1000LL;
		break;
	}
	if (delay_ms > 0) {
		rc = notify_store_retry(f->store, item, delay_ms, why.message,
					err);
		if (rc < 0)
			goto table_failed;
		outcome = rc == 1 ? "failed" : "lost";
		t->failed++;
		*failed = true;
		snprintf(why.message + strlen(why.message),
			 sizeof(why.message) - strlen(why.message),
			 "; again in %lld ms", delay_ms);
	}
	if (client != NULL)
		t->requests += api_client_requests(client) - before;
	log_fetch(outcome, item,
		  fetched == BACKEND_FETCHED ? response_outcome_name(rec.worst)
					     : NULL,
		  client != NULL ? (long)(api_client_requests(client) - before)
				 : 0,
		  timing_now_us() - started_us,
		  strcmp(outcome, "fetched") == 0 ? rec.note : why.message);
	backend_page_cleanup(&page);
	return 1;
table_failed:
	/* The lease runs out and the notification is taken again. */
	backend_page_cleanup(&page);
	t->failed++;
	*failed = true;
	return -1;
}

long notify_fetch_due(struct notify_fetch *f,
		      const struct notify_fetch_options *o, bool *failed,
		      struct error *err)
{
	struct notify_item items[DUE_BATCH];
	const char *only = o->only >= 0 ? config_provider_name(o->only) : NULL;
	long taken = 0;
	size_t n;

	do {
		if (notify_store_due(f->store, only, items, DUE_BATCH, &n,
				     err) != 0)
			return -1;
		for (size_t i = 0; i < n; i++) {
			int rc;

			if (o->stopping != NULL && o->stopping())
				return taken;
			rc = take(f, &items[i], o, failed, err);
			if (rc < 0)
				return -1;
			taken += rc;
		}
		/* A batch of only others' or unfetchable ones: no more. */
	} while (n == DUE_BATCH && taken > 0 &&
		 (o->stopping == NULL || !o->stopping()));
	return taken;
}

void notify_fetch_report(struct notify_fetch *f,
			 const struct notify_fetch_options *o, FILE *out)
{
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		struct tally *t = &f->tally[p];

		if ((o->only >= 0 && (unsigned)o->only != p) ||
		    !notify_fetch_wanted(f->cfg, (int)p))
			continue;
		fprintf(out, "provider=%s notifications=%lu fetched=%lu "
			"processed=%lu duplicate=%lu ignored=%lu conflict=%lu "
			"invalid=%lu rejected=%lu failed=%lu again=%lu "
			"requests=%lu\n", config_provider_name(p), t->taken,
			t->fetched, t->processed, t->duplicate, t->ignored,
			t->conflict, t->invalid, t->rejected, t->failed,
			t->again, t->requests);
		memset(t, 0, sizeof(*t));
	}
	fflush(out);
}

void notify_fetch_prune(struct notify_fetch *f)
{
	struct error err;
	long gone = notify_store_prune(f->store, KEEP_DAYS, PRUNE_LIMIT, &err);

	if (gone < 0)
		log_warn("notifications: old rows not pruned: %s", err.message);
	else if (gone > 0)
		log_info("notifications: %ld done or rejected rows older than "
			 "%ld days deleted", gone, KEEP_DAYS);
}
