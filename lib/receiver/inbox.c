/* inbox.c - noting and keeping a delivery payhook did not record, in
 * batches, through the spool while busy when there is one (see inbox.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "inbox.h"
#include "inbox_spool.h"
#include "inbox_store.h"
#include "log.h"
#include "timing.h"

#define REASON_MAX (RESPONSE_REASON_MAX + PROVIDER_EVENT_TYPE_MAX + 32)

/* A delivery held for the next write: headers then body in one block. */
struct held {
	const struct provider *provider;
	enum inbox_signature signature;
	int64_t received_us;
	char reason[REASON_MAX];
	char *data;            /* headers, '\0', body */
	size_t headers_len, len;
};

struct inbox {
	struct inbox_store *store;
	struct inbox_spool *spool;           /* NULL: inbox_spool_dir unset */
	/* The spool: when its oldest delivery not loaded went in (0: none
	 * since the last load), and when a load may be tried after one
	 * failed (0: at once). */
	int64_t spooled_us, load_due_us;
	bool orphans_due;                    /* a load has not looked yet */
	const char *spool_dir;               /* cfg's inbox_spool_dir */
	int64_t spool_log_due_us;
	struct metrics *metrics;             /* NULL: nothing counted */
	/* The delivery noted: pending until inbox_keep. */
	bool pending;
	enum inbox_signature signature;
	const struct provider *provider;
	int64_t received_us;
	char reason[REASON_MAX];
	struct json_object *headers; /* the signature headers; NULL: none */
	/* The batch: count deliveries of bytes (bodies and headers), the
	 * first held at first_us (timing_now_us). */
	struct held batch[INBOX_BATCH_ROWS];
	size_t count, bytes;
	int64_t first_us;
	/* The failures' log: failures not in a line yet, the last one's
	 * error, when the next line may go (timing_now_us; 0: at once). */
	unsigned long unlogged;
	struct error last_err;
	int64_t log_due_us;
	/* A batch kept whose trim (inbox_max_bytes) failed: logged as
	 * often at most. */
	int64_t trim_log_due_us;
};

struct inbox *inbox_new(const struct config *cfg, struct error *err)
{
	struct inbox *in = calloc(1, sizeof(*in));

	if (in == NULL) {
		error_set(err, "inbox: out of memory");
		return NULL;
	}
	in->store = inbox_store_new(cfg, err);
	if (in->store == NULL) {
		free(in);
		return NULL;
	}
	if (cfg->inbox_spool_dir != NULL) {
		in->spool = inbox_spool_new(cfg->inbox_spool_dir, err);
		if (in->spool == NULL) {
			inbox_store_free(in->store);
			free(in);
			return NULL;
		}
		in->orphans_due = true;
		in->spool_dir = cfg->inbox_spool_dir;
	}
	return in;
}

/* The failures' log: failed more deliveries (the first to provider) did
 * not get written because of err (NULL: none failed now). A line when one
 * is due (the first at once), else counted for the next; force: a line now
 * for what is counted (the process is about to exit). */
static void report(struct inbox *in, size_t failed,
		   const struct provider *provider, const struct error *err,
		   bool force)
{
	int64_t now = timing_now_us();
	unsigned long before = in->unlogged;

	if (failed > 0) {
		in->unlogged += failed;
		in->last_err = *err;
	}
	if (in->unlogged == 0 || (!force && now < in->log_due_us))
		return;
	if (before == 0 && failed == 1)
		log_warn("inbox: a delivery to %s was not kept: %s",
			 provider_name(provider), in->last_err.message);
	else if (before == 0 && failed > 1)
		log_warn("inbox: %zu deliveries were not kept: %s", failed,
			 in->last_err.message);
	else
		log_warn("inbox: %lu deliveries were not kept since the last "
			 "line (lines at most every %d s; the metrics count "
			 "each), the last: %s", in->unlogged,
			 INBOX_LOG_EVERY_S, in->last_err.message);
	in->unlogged = 0;
	in->log_due_us = now + (int64_t)INBOX_LOG_EVERY_S * 1000000;
}

/* Forgets the batch. */
static void drop_batch(struct inbox *in)
{
	for (size_t i = 0; i < in->count; i++)
		free(in->batch[i].data);
	in->count = 0;
	in->bytes = 0;
}

void inbox_free(struct inbox *in)
{
	if (in == NULL)
		return;
	/* The failures counted since the last line get theirs. */
	report(in, 0, NULL, NULL, true);
	drop_batch(in);
	json_object_put(in->headers);
	inbox_spool_free(in->spool);
	inbox_store_free(in->store);
	free(in);
}

void inbox_set_metrics(struct inbox *in, struct metrics *metrics)
{
	in->metrics = metrics;
}

int inbox_check(struct inbox *in, struct error *err)
{
	const char *dir = in->spool_dir;

	if (dir != NULL && access(dir, W_OK | X_OK) != 0)
		return error_set(err, "inbox_spool_dir %s: %s", dir,
				 strerror(errno));
	return inbox_store_check(in->store, err);
}

bool inbox_wants(const struct result *r)
{
	return r->outcome == OUTCOME_IGNORED ||
	       r->outcome == OUTCOME_UNAUTHORIZED;
}

void inbox_note(struct inbox *in, const struct provider *provider,
		const struct request *req, const struct result *r,
		const char *event_type, bool signature_missing)
{
	const char *names[PROVIDER_HEADER_PARAMS_MAX];
	size_t n = provider_header_params(provider, names);
	struct timespec now;

	json_object_put(in->headers);
	in->headers = json_object_new_object();
	for (size_t i = 0; in->headers != NULL && i < n; i++) {
		char marker[SIGNATURE_TOKEN_MARKER_MAX];
		const char *value = request_param(req, names[i]);

		/* Never a credential: a token that is the secret, hashed. */
		if (value != NULL)
			value = provider_header_kept(provider, names[i], value,
						     marker);
		if (value != NULL)
			json_object_object_add(in->headers, names[i],
					       json_object_new_string(value));
	}
	clock_gettime(CLOCK_REALTIME, &now);
	in->received_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
	in->provider = provider;
	in->signature = r->outcome != OUTCOME_UNAUTHORIZED ?
				INBOX_SIGNATURE_VERIFIED :
			signature_missing ? INBOX_SIGNATURE_MISSING :
					    INBOX_SIGNATURE_FAILED;
	if (r->reason[0] != '\0')
		snprintf(in->reason, sizeof(in->reason), "%s", r->reason);
	else
		snprintf(in->reason, sizeof(in->reason), "%s is not recorded",
			 event_type[0] != '\0' ? event_type : "the event");
	in->pending = true;
}

/* The profile named name's place (for the metrics), or the count of
 * them when none has the name. */
static unsigned provider_index(const char *name)
{
	unsigned i;

	for (i = 0; i < CONFIG_PROVIDER_COUNT; i++)
		if (strcmp(config_provider_name(i), name) == 0)
			break;
	return i;
}

/* Counts rows[0..n) as result. */
static void count_rows(struct inbox *in, const struct inbox_row *rows,
		       size_t n, enum metrics_inbox_result result)
{
	for (size_t i = 0; i < n; i++)
		metrics_inbox(in->metrics, provider_index(rows[i].provider),
			      strcmp(rows[i].outcome, "unauthorized") == 0,
			      result);
}

/* A line at most every INBOX_LOG_EVERY_S seconds for what *due_us
 * paces. */
static bool log_due(int64_t *due_us)
{
	int64_t now = timing_now_us();

	if (now < *due_us)
		return false;
	*due_us = now + (int64_t)INBOX_LOG_EVERY_S * 1000000;
	return true;
}

/* Writes rows[0..n) to table inbox and counts each row kept. Returns how
 * many were written; err names why the others were not. */
static size_t write_rows(struct inbox *in, const struct inbox_row *rows,
			 size_t n, struct error *err)
{
	size_t kept = 0;
	int rc = inbox_store_keep_batch(in->store, rows, n, &kept, err);

	count_rows(in, rows, kept, METRICS_INBOX_KEPT);
	if (kept == n && rc != 0 && log_due(&in->trim_log_due_us))
		/* Kept; the trim after them failed (tried again next). */
		log_warn("%s (the deliveries were kept; inbox_max_bytes is "
			 "tried again at the next batch)", err->message);
	return kept;
}

/* The batch as rows for the store or the spool (pointing into it). */
static void batch_rows(const struct inbox *in, struct inbox_row *rows)
{
	for (size_t i = 0; i < in->count; i++) {
		const struct held *h = &in->batch[i];

		rows[i] = (struct inbox_row){
			.provider = provider_name(h->provider),
			.received_us = h->received_us,
			.outcome = h->signature == INBOX_SIGNATURE_VERIFIED ?
					   "ignored" : "unauthorized",
			.signature = h->signature,
			.reason = h->reason,
			.headers = h->data,
			.body = h->data + h->headers_len + 1,
			.len = h->len,
		};
	}
}

/* Puts rows[0..n) in the spool: 0, or -1 logged (paced). */
static int spool_rows(struct inbox *in, const struct inbox_row *rows,
		      size_t n)
{
	struct error err;

	if (inbox_spool_append(in->spool, rows, n, &err) != 0) {
		if (log_due(&in->spool_log_due_us))
			log_warn("%s (written to the database instead; a line "
				 "at most every %d s)", err.message,
				 INBOX_LOG_EVERY_S);
		return -1;
	}
	if (in->spooled_us == 0)
		in->spooled_us = timing_now_us();
	return 0;
}

/* The batch to the database; with a spool, what the database did not take
 * goes there for the next load, else it is counted failed. */
static void write_batch(struct inbox *in)
{
	struct inbox_row rows[INBOX_BATCH_ROWS];
	struct error err = { "" };
	size_t kept;

	batch_rows(in, rows);
	kept = write_rows(in, rows, in->count, &err);
	if (kept < in->count) {
		if (in->spool != NULL &&
		    spool_rows(in, rows + kept, in->count - kept) == 0) {
			/* The database said no: not again at once. */
			in->load_due_us = timing_now_us() +
					  (int64_t)INBOX_RETRY_MS * 1000;
			if (log_due(&in->spool_log_due_us))
				log_warn("inbox: %zu deliveries wait in the "
					 "spool: %s", in->count - kept,
					 err.message);
		} else {
			count_rows(in, rows + kept, in->count - kept,
				   METRICS_INBOX_FAILED);
			report(in, in->count - kept, in->batch[kept].provider,
			       &err, false);
		}
	}
	drop_batch(in);
}

/* inbox_spool_load's batch: 0 when every row was written. */
static int load_rows(void *ctx, const struct inbox_row *rows, size_t n,
		     struct error *err)
{
	return write_rows(ctx, rows, n, err) == n ? 0 : -1;
}

/* Loads the spool and its orphans into the database, unless a load
 * failed less than INBOX_RETRY_MS ago. */
static void load_spool(struct inbox *in)
{
	struct error err;
	size_t loaded, lost;
	int64_t now = timing_now_us();

	if (now < in->load_due_us)
		return;
	if (inbox_spool_load(in->spool, INBOX_BATCH_ROWS, INBOX_BATCH_BYTES,
			     load_rows, in, &loaded, &lost, &err) != 0) {
		in->load_due_us = now + (int64_t)INBOX_RETRY_MS * 1000;
		if (log_due(&in->spool_log_due_us))
			log_warn("inbox: loading the spool stopped after %zu "
				 "deliveries (the rest is tried again in %d "
				 "ms): %s", loaded, INBOX_RETRY_MS,
				 err.message);
		return;
	}
	in->orphans_due = false;
	if (inbox_spool_pending(in->spool) == 0)
		in->spooled_us = 0;
}

/* The batch before the worker is idle long enough to load: to the spool
 * when there is one (else the table), the spool loaded only once it is too
 * old or too big to wait for that moment. */
static void spool_batch(struct inbox *in)
{
	struct inbox_row rows[INBOX_BATCH_ROWS];

	if (in->spool == NULL) {
		write_batch(in);
		return;
	}
	batch_rows(in, rows);
	if (spool_rows(in, rows, in->count) != 0) {
		write_batch(in);
		return;
	}
	drop_batch(in);
	if (inbox_spool_pending(in->spool) >= INBOX_SPOOL_MAX_BYTES ||
	    timing_now_us() - in->spooled_us >= INBOX_SPOOL_MAX_MS * 1000L)
		load_spool(in);
}

/* Whether the spool has work for an idle moment. */
static bool spool_due(const struct inbox *in)
{
	return in->spool != NULL &&
	       (in->orphans_due || inbox_spool_pending(in->spool) > 0);
}

void inbox_flush(struct inbox *in)
{
	if (in->count > 0)
		write_batch(in);
	if (spool_due(in))
		load_spool(in);
}

long inbox_idle_wait_ms(const struct inbox *in, int64_t idle_us)
{
	long idle_ms = (long)(idle_us / 1000), wait;

	if (in->count > 0) {
		wait = INBOX_IDLE_MS - idle_ms;
	} else if (spool_due(in)) {
		int64_t retry_ms =
			(in->load_due_us - timing_now_us() + 999) / 1000;

		wait = INBOX_LOAD_IDLE_MS - idle_ms;
		if (retry_ms > wait)
			wait = (long)retry_ms;
	} else {
		return -1;
	}
	return wait > 0 ? wait : 0;
}

void inbox_idle(struct inbox *in, int64_t idle_us)
{
	if (in->count > 0 && idle_us >= INBOX_IDLE_MS * 1000L)
		spool_batch(in);
	if (spool_due(in) && idle_us >= INBOX_LOAD_IDLE_MS * 1000L)
		load_spool(in);
}

void inbox_flush_due(struct inbox *in)
{
	if (in->count > 0 &&
	    timing_now_us() - in->first_us >= INBOX_FLUSH_MS * 1000L)
		spool_batch(in);
}

size_t inbox_held(const struct inbox *in)
{
	return in->count + (spool_due(in) ? 1 : 0);
}

int inbox_keep(struct inbox *in, const char *body, size_t len)
{
	const char *headers;
	size_t hlen;
	struct held *h;
	struct error err;

	if (!in->pending)
		return 0;
	in->pending = false;
	headers = in->headers != NULL ?
			  json_object_to_json_string_ext(in->headers,
							 JSON_C_TO_STRING_PLAIN) :
			  "{}";
	hlen = strlen(headers);
	/* A batch has room for at least one delivery. */
	if (in->count > 0 && in->bytes + hlen + len > INBOX_BATCH_BYTES)
		spool_batch(in);
	h = &in->batch[in->count];
	h->data = malloc(hlen + 1 + len + 1);
	if (h->data == NULL) {
		error_set(&err, "inbox: out of memory for a %zu-byte body",
			  len);
		metrics_inbox(in->metrics, provider_id(in->provider),
			      in->signature != INBOX_SIGNATURE_VERIFIED,
			      METRICS_INBOX_FAILED);
		report(in, 1, in->provider, &err, false);
		return 1;
	}
	memcpy(h->data, headers, hlen + 1);
	memcpy(h->data + hlen + 1, body, len);
	h->data[hlen + 1 + len] = '\0';
	h->headers_len = hlen;
	h->len = len;
	h->provider = in->provider;
	h->signature = in->signature;
	h->received_us = in->received_us;
	memcpy(h->reason, in->reason, sizeof(h->reason));
	if (in->count == 0)
		in->first_us = timing_now_us();
	in->count++;
	in->bytes += hlen + len;
	if (in->count == INBOX_BATCH_ROWS || in->bytes >= INBOX_BATCH_BYTES)
		spool_batch(in);
	else
		inbox_flush_due(in);
	return 1;
}
