/* reconcile.c - one reconciliation pass (reconcile.h). The handler shape
 * per provider: the status starts as "failed", every step either ends the
 * pass with its reason or passes on, and one block writes the line and
 * the cursor row's last_success_at or last_error.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "api_client.h"
#include "backends.h"
#include "cursor_store.h"
#include "encoding.h"
#include "log.h"
#include "oauth.h"
#include "payment.h"
#include "pipeline.h"
#include "provider.h"
#include "reconcile.h"
#include "signature.h"
#include "timing.h"
#include "url.h"
#include "utc.h"

/* A pass's lease on its profile, renewed at every page. */
#define LEASE_S 300L
/* One request to the API, connecting included. */
#define REQUEST_TIMEOUT_MS 30000L
/* An event answered in_progress or unavailable is tried again after
 * 250 ms, doubling up to 5 s, reconcile_max_retries times in all. */
#define EVENT_RETRY_FIRST_MS 250L
#define EVENT_RETRY_MAX_MS 5000L

struct reconcile {
	const struct config *cfg;
	struct pipeline *pipeline;
	struct cursor_store *cursors;
	/* A database without reconcile_discrepancies was said once. */
	bool discrepancies_told;
	/* The access tokens of the profiles whose key is OAuth2 client
	 * credentials (backend token_path), kept from pass to pass until
	 * they expire; NULL until the first pass needs one. */
	struct oauth *oauth[CONFIG_PROVIDER_COUNT];
};

/* What one provider's pass did. */
struct tally {
	unsigned long listed, processed, duplicate, ignored, discrepancy,
		known_discrepancy, invalid, invalid_new, pages, requests;
	/* Listed objects of a provider that only notifies, queued to be
	 * fetched (notify_fetch.h). */
	unsigned long queued;
	int64_t from_s, until_s;
	/* Progress lines on standard error, when it is a terminal. */
	bool progress;
	int64_t started_us;
	/* When the pass's time is up (reconcile_max_pass_s). */
	int64_t deadline_us;
	struct api_client *client;
	/* The pass's lease, renewed while it waits (NULL: a dry run, which
	 * holds none). */
	struct reconcile *leased_by;
	const char *name;
};

/* Renews the pass's lease (struct tally as ctx): api_client's on_wait,
 * and before an event's retry. Returns 0, or -1 with err set when the
 * lease is lost or cannot be renewed. */
static int renew_lease(void *ctx, struct error *err)
{
	struct tally *t = ctx;
	struct error why;
	int rc;

	if (t->leased_by == NULL)
		return 0;
	rc = cursor_store_lease(t->leased_by->cursors, t->name, LEASE_S, &why);
	if (rc == 1)
		return 0;
	return error_set(err, "%s", rc == 0 ?
			 "the pass lost its lease to another host" :
			 why.message);
}

static void format_time(int64_t seconds, char out[32]);

/* One progress line after a page of window w: where the pass is, what it
 * did, the request rate and the time left, estimated from the span of
 * creation times done (Stripe gives no totals). */
static void show_progress(const char *name, const struct backend_window *w,
			  const struct tally *t)
{
	double elapsed_s = (double)(timing_now_us() - t->started_us) / 1e6;
	int64_t total = t->until_s - t->from_s, done = w->from - t->from_s;
	char at[32];

	if (!t->progress)
		return;
	format_time(w->from, at);
	fprintf(stderr, "%s: at %s, page %lu: %lu listed, %lu recorded, "
		"%.1f requests/s", name, at, t->pages, t->listed, t->processed,
		elapsed_s > 0 ? (double)api_client_requests(t->client) /
					elapsed_s : 0.0);
	if (done > 0 && total > done)
		fprintf(stderr, ", about %.0f s left",
			elapsed_s * (double)(total - done) / (double)done);
	fputc('\n', stderr);
}

/* Checks <name>_api_base as libcurl will read it: https://, or http://
 * to a loopback address only (the key travels with every request), never
 * with userinfo (http://127.0.0.1:1@elsewhere:9 connects elsewhere).
 * Returns 0, or -1 with err set. */
static int check_base(const char *name, const char *base, struct error *err)
{
	struct url_parts url;
	struct error why;

	if (url_parse(base, &url, &why) != 0)
		return error_set(err, "%s_api_base: %s", name, why.message);
	if (url.userinfo)
		return error_set(err, "%s_api_base must not hold a user or a "
				 "password (user@host): payhook sends the key "
				 "itself", name);
	if (strcmp(url.scheme, "https") == 0 || url_host_loopback(url.host))
		return 0;
	return error_set(err, "%s_api_base must be https://... (http:// "
			 "only to a loopback address such as 127.0.0.1): the "
			 "key travels with every request", name);
}

int reconcile_check_config(const struct config *cfg, struct error *err)
{
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++) {
		const char *name = config_provider_name(i);
		const char *base = cfg->api_base[i];
		const struct backend *b = backends_for(i);

		/* Each backend's own keys (Shopify's shop, Paddle's key
		 * against its base). */
		if (b != NULL && b->check_config != NULL &&
		    b->check_config(cfg, err) != 0)
			return -1;

		if (backend_has_key(cfg, i) && !config_provider_enabled(cfg, i))
			return error_set(err, "%s_api_key is set but providers "
					 "does not enable %s", name, name);
		if (base != NULL && check_base(name, base, err) != 0)
			return -1;
	}
	return 0;
}

struct reconcile *reconcile_new(const struct config *cfg, struct error *err)
{
	struct reconcile *r = calloc(1, sizeof(*r));
	char owner[256], host[128] = "";

	if (r == NULL) {
		error_set(err, "reconcile: out of memory");
		return NULL;
	}
	r->cfg = cfg;
	gethostname(host, sizeof(host) - 1);
	snprintf(owner, sizeof(owner), "%.120s:%ld", host, (long)getpid());
	r->pipeline = pipeline_new(cfg, err);
	if (r->pipeline == NULL)
		goto fail;
	r->cursors = cursor_store_new(cfg, owner, err);
	if (r->cursors == NULL)
		goto fail;
	return r;
fail:
	reconcile_free(r);
	return NULL;
}

void reconcile_free(struct reconcile *r)
{
	if (r == NULL)
		return;
	pipeline_free(r->pipeline);
	cursor_store_free(r->cursors);
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++)
		oauth_free(r->oauth[i]);
	free(r);
}

/* seconds in RFC 3339 for a line or a message; "?" when it has no date. */
static void format_time(int64_t seconds, char out[32])
{
	if (utc_format(seconds, UTC_RFC3339, out, 32) != 0)
		snprintf(out, 32, "?");
}

static bool stopped(const struct reconcile_options *o)
{
	return o->stopping != NULL && o->stopping();
}

/* A discrepancy found (the listed payment's, or lifecycle event's, amount
 * and currency beside what payhook holds): noted in
 * reconcile_discrepancies unless dry_run, and logged at warn when it is
 * new, at info when a pass reported it before. Returns whether it is new
 * (a pass counts only those). */
static bool judge_discrepancy(struct reconcile *r, const char *profile,
			      const struct result *res, bool dry_run)
{
	const struct provider_batch *batch = pipeline_last_batch(r->pipeline);
	const struct lifecycle_event *event =
		batch->count == 0 && batch->lifecycle_count > 0 ?
			&batch->lifecycle[0] : NULL;
	const struct payment *listed =
		batch->count > 0 ? &batch->payments[0] :
		event != NULL ? &event->link : NULL;
	unsigned long long held_amount = 0;
	char held_currency[4] = "-";
	struct error err;
	struct log_field fields[10];
	struct cursor_discrepancy d;
	size_t n = 0;
	bool fresh = true;
	int rc;

	if (listed != NULL &&
	    cursor_store_held_payment(r->cursors, profile,
				      listed->transaction_id, &held_amount,
				      held_currency, &err) < 0)
		log_warn("%s: the payment held could not be read: %s", profile,
			 err.message);
	d = (struct cursor_discrepancy){
		.provider = profile,
		.kind = event != NULL ? lifecycle_kind_name(event->kind)
				      : "payment",
		.object_id = event != NULL ? event->object_id :
			     listed != NULL ? listed->transaction_id : "",
		.transaction_id = listed != NULL ? listed->transaction_id : "",
		.listed_amount = listed != NULL ? (unsigned long long)
							  listed->amount : 0,
		.listed_currency = listed != NULL ? listed->currency : "",
		.held_amount = held_amount,
		.held_currency = held_currency,
	};
	if (!dry_run && listed != NULL) {
		rc = cursor_store_note_discrepancy(r->cursors, &d, &err);
		if (rc == 0)
			fresh = false;
		else if (rc == CURSOR_STORE_NO_TABLE && !r->discrepancies_told) {
			log_warn("%s: %s", profile, err.message);
			r->discrepancies_told = true;
		} else if (rc == -1) {
			log_warn("%s: the discrepancy could not be noted: %s",
				 profile, err.message);
		}
	}
	fields[n++] = (struct log_field)LOG_TEXT("outcome", "discrepancy");
	fields[n++] = (struct log_field)LOG_TEXT("provider", profile);
	fields[n++] = (struct log_field)LOG_TEXT("transaction_id",
						 res->transaction_id);
	fields[n++] = (struct log_field)LOG_TEXT("kind", listed != NULL ?
						 d.kind : "-");
	fields[n++] = (struct log_field)LOG_TEXT(
		"event_id", listed != NULL && listed->event_id_len > 0 ?
				    listed->event_id : "-");
	fields[n++] = (struct log_field)LOG_NUMBER("listed_amount",
						   d.listed_amount);
	fields[n++] = (struct log_field)LOG_TEXT(
		"listed_currency", listed != NULL && listed->currency[0] != '\0' ?
					   listed->currency : "-");
	fields[n++] = (struct log_field)LOG_NUMBER("held_amount", held_amount);
	fields[n++] = (struct log_field)LOG_TEXT("held_currency", held_currency);
	fields[n++] = (struct log_field)LOG_TEXT(
		"action", fresh ? "not applied" : "not applied, reported before");
	log_fields_at(fresh ? LOG_LEVEL_WARN : LOG_LEVEL_INFO, fields, n);
	return fresh;
}

/* A listed event that payhook cannot record (what its webhook would get
 * 400 for): noted once in reconcile_discrepancies as kind "invalid", its
 * object the SHA-256 of its body, so the pass that first lists it reports
 * it (exit 3) and the next ones (the overlap lists it again) do not.
 * Returns whether it is new. */
static bool judge_invalid(struct reconcile *r, const char *profile,
			  const struct backend_event *event,
			  const struct result *res, bool dry_run)
{
	struct signature_part part = { event->body, event->len };
	unsigned char digest[SIGNATURE_MAC_LEN];
	char hex[2 * SIGNATURE_MAC_LEN + 1];
	struct cursor_discrepancy d;
	struct error err;
	int rc;

	if (dry_run || signature_parts_sha256(&part, 1, digest) != 0)
		return true;
	encoding_hex_encode(digest, sizeof(digest), hex);
	d = (struct cursor_discrepancy){
		.provider = profile, .kind = "invalid", .object_id = hex,
		.transaction_id = res->transaction_id,
		.listed_currency = "", .held_currency = "",
	};
	rc = cursor_store_note_discrepancy(r->cursors, &d, &err);
	if (rc == 0)
		return false;
	if (rc == -1)
		log_warn("%s: the invalid event could not be noted: %s",
			 profile, err.message);
	else if (rc > 0)
		log_warn("%s: a listed event payhook cannot record (%s: %s), "
			 "reported once (reconcile_discrepancies, kind invalid)",
			 profile, response_outcome_name(res->outcome),
			 res->reason);
	return true;
}

/* Records one listed event, trying again while another delivery of it is
 * in hand or a backend is down. Returns 0 with t counted, or -1 with err
 * set when it could not be recorded (the page fails). */
static int record_event(struct reconcile *r, enum config_provider profile,
			const struct backend_event *event,
			const struct reconcile_options *o, struct tally *t,
			struct error *err)
{
	const char *name = config_provider_name(profile);
	long wait_ms = EVENT_RETRY_FIRST_MS;
	struct result res;

	for (int tries = 1;; tries++) {
		char *headers[2] = { event->header, NULL };

		pipeline_record_trusted(r->pipeline, profile, headers, event->body,
					event->len, PAYMENT_SOURCE_RECONCILE,
					o->dry_run, &res);
		switch (res.outcome) {
		case OUTCOME_PROCESSED:
			t->processed++;
			return 0;
		case OUTCOME_DUPLICATE:
			t->duplicate++;
			return 0;
		case OUTCOME_IGNORED:
			t->ignored++;
			return 0;
		case OUTCOME_QUEUED:
			/* A provider that only notifies: its event names what
			 * the fetcher records, as a notification would. */
			t->queued++;
			return 0;
		case OUTCOME_CONFLICT:
			if (judge_discrepancy(r, name, &res, o->dry_run))
				t->discrepancy++;
			else
				t->known_discrepancy++;
			return 0;
		case OUTCOME_INVALID:
		case OUTCOME_TOO_LARGE:
			/* The webhook would have been refused the same way
			 * (its line is logged): nothing to record, but the
			 * provider says it happened, so a new one is
			 * reported as a discrepancy is. */
			t->invalid++;
			if (judge_invalid(r, name, event, &res, o->dry_run))
				t->invalid_new++;
			return 0;
		case OUTCOME_IN_PROGRESS:
		case OUTCOME_UNAVAILABLE:
			if (tries < r->cfg->reconcile_max_retries &&
			    !stopped(o) &&
			    timing_now_us() + wait_ms * 1000 < t->deadline_us) {
				struct timespec ts = { wait_ms / 1000,
						       (wait_ms % 1000) * 1000000L };

				if (renew_lease(t, err) != 0)
					return -1;
				nanosleep(&ts, NULL);
				wait_ms = wait_ms * 2 > EVENT_RETRY_MAX_MS ?
						  EVENT_RETRY_MAX_MS : wait_ms * 2;
				continue;
			}
			break;
		default:
			break;
		}
		return error_set(err, "event of %s not recorded: %s (%s)",
				 res.transaction_id[0] != '\0' ?
					 res.transaction_id : "unknown id",
				 response_outcome_name(res.outcome), res.reason);
	}
}

/* How often one walk lists a window again because it moved (offset or
 * page-number paging) before the pass fails. */
#define WINDOW_RESTARTS_MAX 10

/* After a page of an offset or page-number list: the next page's cursor
 * (the events or pages of the window listed so far), or a restart of the
 * window when its total moved since its first page. Returns 0, or -1 with
 * err set when it keeps moving. */
static int next_of_numbered(const struct backend *b,
			    const struct backend_page *page,
			    unsigned long *listed, unsigned long *pages,
			    long long *total, int *restarts, char *after,
			    size_t cap, struct error *err)
{
	const char *name = config_provider_name(b->profile);

	*listed += page->count;
	*pages += 1;
	if (*total < 0)
		*total = page->total;
	else if (page->total >= 0 && page->total != *total) {
		/* Events came (or went) while the window was read: offsets
		 * shifted, and one may have moved to a page already read. */
		if (++*restarts > WINDOW_RESTARTS_MAX)
			return error_set(err, "%s: the list kept changing while "
					 "it was read (%d times)", name,
					 WINDOW_RESTARTS_MAX);
		log_info("%s: the list holds %lld events, not %lld: listing "
			 "the window again from its start", name, page->total,
			 *total);
		*listed = 0;
		*pages = 0;
		*total = -1;
		after[0] = '\0';
		return 0;
	}
	if (page->has_more)
		snprintf(after, cap, "%lu",
			 b->paging == BACKEND_PAGING_OFFSET ? *listed
							    : *pages + 1);
	return 0;
}

/* Lists and records window w, page by page. Returns 0 once every page of
 * it is recorded, or -1 with err set. */
static int walk_window(struct reconcile *r, const struct backend *b,
		       struct api_client *client, const char *base,
		       const struct backend_window *w,
		       const struct reconcile_options *o, struct tally *t,
		       struct error *err)
{
	const char *name = config_provider_name(b->profile);
	char url[BACKEND_URL_MAX], after[BACKEND_CURSOR_MAX + 1] = "";
	char json[BACKEND_JSON_MAX];
	struct backend_page page = { 0 };
	struct error why;
	/* Offset and page-number paging: the window's events and pages
	 * listed so far, its first page's total, the restarts. */
	unsigned long in_window = 0, pages_in_window = 0;
	long long total = -1;
	int restarts = 0;

	for (;;) {
		const char *body;
		size_t len;
		int rc;

		if (stopped(o))
			return error_set(err, "stopped (SIGTERM)");
		if (t->pages >= (unsigned long)r->cfg->reconcile_max_pages)
			return error_set(err, "%lu pages read, the most a pass "
					 "reads (reconcile_max_pages): the next "
					 "pass goes on from the cursor",
					 t->pages);
		if (timing_now_us() >= t->deadline_us)
			return error_set(err, "the pass ran %ld s, the most it "
					 "may (reconcile_max_pass_s): the next "
					 "pass goes on from the cursor",
					 r->cfg->reconcile_max_pass_s);
		if (renew_lease(t, err) != 0)
			return -1;
		if (b->page_url(base, w, after[0] != '\0' ? after : NULL, url,
				err) != 0)
			return -1;
		if (b->page_json != NULL &&
		    b->page_json(w, after[0] != '\0' ? after : NULL, json,
				 err) != 0)
			return -1;
		if ((b->page_json != NULL ?
			     api_client_post(client, url, json, &body, &len,
					     &why) :
			     api_client_get(client, url, &body, &len, &why)) != 0) {
			if (b->explain_failure != NULL) {
				long status = api_client_last_answer(client,
								     &body, &len);

				b->explain_failure(status, body, len, &why);
			}
			return error_set(err, "page %lu: %s", t->pages + 1,
					 why.message);
		}
		{
			struct backend_answer a = {
				body, len, after[0] != '\0' ? after : NULL,
				api_client_link(client), w
			};

			rc = backend_read_page(b, &a, &page, &why);
		}
		if (rc != 0)
			return error_set(err, "page %lu: %s", t->pages + 1,
					 why.message);
		/* Only the account's own, in the key's mode, is signed
		 * data: a mix-up of keys or bases fails the page before
		 * anything of it is recorded. */
		for (size_t i = 0; i < page.count; i++) {
			if (backend_check_owner(b, r->cfg->api_key[b->profile],
						&page.events[i], &why) != 0) {
				backend_page_cleanup(&page);
				return error_set(err, "page %lu: %s",
						 t->pages + 1, why.message);
			}
		}
		t->listed += page.count;
		for (size_t i = 0; i < page.count; i++) {
			if (record_event(r, b->profile, &page.events[i], o, t,
					 err) != 0) {
				backend_page_cleanup(&page);
				return -1;
			}
		}
		t->pages++;
		show_progress(name, w, t);
		rc = page.has_more;
		if (b->paging == BACKEND_PAGING_CURSOR) {
			/* A list that names the page just read (or none) as
			 * the next would be read for ever. */
			if (rc && (page.next[0] == '\0' ||
				   strcmp(page.next, after) == 0)) {
				backend_page_cleanup(&page);
				return error_set(err, "page %lu: the list did not "
						 "advance (it has more, but names "
						 "%s as the next page)", t->pages,
						 page.next[0] == '\0' ?
							 "no cursor" :
							 "the same cursor");
			}
			snprintf(after, sizeof(after), "%s", page.next);
		} else {
			bool restarted;

			if (next_of_numbered(b, &page, &in_window,
					     &pages_in_window, &total,
					     &restarts, after, sizeof(after),
					     err) != 0) {
				backend_page_cleanup(&page);
				return -1;
			}
			restarted = in_window == 0 && pages_in_window == 0;
			rc = rc || restarted;
		}
		backend_page_cleanup(&page);
		if (!rc)
			return 0;
	}
}

/* Where this pass starts (*start), and how far the cursor already is
 * (*cursor_s; INT64_MIN before the first complete window), or -1 with err
 * set when it would start before what the provider keeps. The cursor
 * moves only past what the pass covered from the cursor on: a --since
 * that starts after the cursor (or after where a first pass would start)
 * leaves a gap never listed, so that pass keeps the cursor
 * (*keeps_cursor). */
static int pass_start(struct reconcile *r, const struct backend *b,
		      const struct reconcile_options *o, int64_t now,
		      int64_t *start, int64_t *cursor_s, bool *keeps_cursor,
		      struct error *err)
{
	const char *name = config_provider_name(b->profile);
	int64_t kept_from = now - b->retention_s;
	int64_t first = now - r->cfg->reconcile_lookback_s < kept_from ?
				kept_from : now - r->cfg->reconcile_lookback_s;
	struct cursor_row row;
	char from[32], kept[32];

	if (cursor_store_read(r->cursors, name, &row, err) != 0)
		return -1;
	*cursor_s = row.has_cursor ? row.cursor_s : INT64_MIN;
	/* The first pass: never further back than kept. */
	*start = row.has_cursor ? row.cursor_s - r->cfg->reconcile_overlap_s
				: first;
	*keeps_cursor = false;
	if (o->has_since) {
		*keeps_cursor = o->since_s > (row.has_cursor ? row.cursor_s
							      : first);
		*start = o->since_s;
	}
	if (*start >= kept_from)
		return 0;
	format_time(*start, from);
	format_time(kept_from, kept);
	return error_set(err, "%s starts at %s, but %s keeps events %" PRId64
			 " days: events created from %s to %s were not "
			 "checked and cannot be; run again with --since %s to "
			 "check what it still keeps",
			 o->has_since ? "--since" : "the cursor", from, name,
			 b->retention_s / 86400, from, kept, kept);
}

/* api_client's authorize: the profile's token keeper (oauth.h) as ctx. */
static int authorize(void *ctx, struct api_client *client, bool renew,
		     struct error *err)
{
	return oauth_authorize(ctx, client, renew, err);
}

/* Makes r->oauth[b->profile], the keeper of the profile's access tokens
 * (asked for at base + b->token_path with the credentials header basic),
 * unless it exists. Returns 0, or -1 with err set. */
static int token_keeper(struct reconcile *r, const struct backend *b,
			const char *base, const char *basic, struct error *err)
{
	const char *name = config_provider_name(b->profile);
	char url[BACKEND_URL_MAX];
	int n;

	if (r->oauth[b->profile] != NULL)
		return 0;
	n = snprintf(url, sizeof(url), "%s%s", base, b->token_path);
	if (n < 0 || (size_t)n >= sizeof(url))
		return error_set(err, "%s_api_base is too long", name);
	r->oauth[b->profile] = oauth_new(name, url, basic, err);
	return r->oauth[b->profile] != NULL ? 0 : -1;
}

/* One provider's pass. Returns its exit status. */
static int pass_one(struct reconcile *r, enum config_provider profile,
		    const struct reconcile_options *o, FILE *out)
{
	const struct config *cfg = r->cfg;
	const char *name = config_provider_name(profile);
	const struct backend *b = backends_for(profile);
	const char *status = "failed";
	struct api_client *client = NULL;
	struct tally t = { 0 };
	struct error err = { "" }, ignored;
	char header[BACKEND_HEADER_MAX], own_base[BACKEND_URL_MAX];
	char from[32] = "-", until[32] = "-";
	const char *base;
	int64_t now = (int64_t)time(NULL), start, cursor_s;
	bool leased = false, keeps_cursor;
	int rc = RECONCILE_FAILED, got;

	if (b == NULL) {
		fprintf(out, "provider=%s status=unsupported\n", name);
		fflush(out);
		log_warn("%s: %s_api_key is set, but %s cannot be "
			 "reconciled: %s", name, name, name,
			 backends_none(profile) != NULL ?
				 backends_none(profile) : "no list API");
		return RECONCILE_COMPLETE;
	}
	base = cfg->api_base[profile] != NULL ? cfg->api_base[profile]
					      : b->default_base;
	if (base == NULL) {
		/* The provider's API lives on the merchant's own host. */
		if (b->base_for == NULL || b->base_for(cfg, own_base, &err) != 0)
			goto out;
		base = own_base;
	}
	if (!o->dry_run) {
		got = cursor_store_lease(r->cursors, name, LEASE_S, &err);
		if (got == 0) {
			/* Another host's pass: its own line says how it went. */
			status = "busy";
			rc = RECONCILE_COMPLETE;
			error_set(&err, "another host's pass holds the lease");
			goto out;
		}
		if (got < 0)
			goto out;
		leased = true;
	}
	t.name = name;
	t.leased_by = leased ? r : NULL;
	t.started_us = timing_now_us();
	t.deadline_us = t.started_us + cfg->reconcile_max_pass_s * 1000000LL;
	if (pass_start(r, b, o, now, &start, &cursor_s, &keeps_cursor,
		       &err) != 0)
		goto out;
	if (keeps_cursor)
		log_info("%s: --since starts after the cursor: this pass does "
			 "not move it (what lies between was not listed)", name);
	t.from_s = start;
	t.until_s = now;
	{
		struct api_client_options co = {
			.auth_header = header,
			.headers = b->headers,
			.rate_per_s = cfg->reconcile_rate_per_s,
			.max_retries = cfg->reconcile_max_retries,
			.timeout_ms = REQUEST_TIMEOUT_MS,
			.https_only = strncmp(base, "https://", 8) == 0,
			.stopping = o->stopping,
			.deadline_us = t.deadline_us,
			.on_wait = renew_lease,
			.wait_ctx = &t,
		};

		if (b->auth_header(cfg->api_key[profile], header, &err) != 0)
			goto out;
		if (b->token_path != NULL) {
			/* The key buys tokens; the pages carry those. */
			if (token_keeper(r, b, base, header, &err) != 0) {
				memset(header, 0, sizeof(header));
				goto out;
			}
			co.auth_header = NULL;
			co.authorize = authorize;
			co.authorize_ctx = r->oauth[profile];
		}
		client = api_client_new(&co, &err);
		memset(header, 0, sizeof(header));
		if (client == NULL)
			goto out;
	}
	t.client = client;
	t.progress = isatty(STDERR_FILENO) != 0;
	/* Oldest window first; the cursor moves past each once recorded. */
	for (int64_t at = start; at < now;) {
		struct backend_window w = { at, at + b->window_s < now ?
							at + b->window_s : now };

		if (walk_window(r, b, client, base, &w, o, &t, &err) != 0)
			goto out;
		/* Never back: a --since before the cursor lists again what
		 * it already passed. */
		if (!o->dry_run && !keeps_cursor && w.to > cursor_s &&
		    cursor_store_advance(r->cursors, name, w.to, &err) != 0)
			goto out;
		at = w.to;
	}
	status = "complete";
	rc = t.discrepancy > 0 || t.invalid_new > 0 ? RECONCILE_DISCREPANCY
						    : RECONCILE_COMPLETE;
out:
	if (client != NULL)
		t.requests = api_client_requests(client);
	api_client_free(client);
	if (t.until_s != 0) {
		format_time(t.from_s, from);
		format_time(t.until_s, until);
	}
	fprintf(out, "provider=%s status=%s listed=%lu processed=%lu "
		"duplicate=%lu ignored=%lu discrepancy=%lu pages=%lu "
		"invalid=%lu requests=%lu reported_before=%lu from=%s "
		"until=%s%s",
		name, status, t.listed, t.processed, t.duplicate, t.ignored,
		t.discrepancy, t.pages, t.invalid, t.requests,
		t.known_discrepancy + (t.invalid - t.invalid_new), from, until,
		o->dry_run ? " dry_run=yes" : "");
	if (t.queued > 0)
		fprintf(out, " queued=%lu", t.queued);
	if (rc == RECONCILE_FAILED) {
		/* The reason, quoted as logfmt quotes (no '"' in it). */
		for (char *c = err.message; *c != '\0'; c++)
			if (*c == '"')
				*c = '\'';
		fprintf(out, " error=\"%s\"", err.message);
		log_error("%s: pass failed: %s", name, err.message);
	}
	fputc('\n', out);
	fflush(out);
	if (!o->dry_run && strcmp(status, "busy") != 0 &&
	    cursor_store_finish(r->cursors, name,
				rc == RECONCILE_FAILED ? err.message : NULL,
				t.processed, t.discrepancy + t.invalid_new,
				&ignored) != 0)
		log_warn("%s: the pass's end not written to reconcile_cursors: "
			 "%s", name, ignored.message);
	if (leased)
		cursor_store_release(r->cursors, name);
	return rc;
}

int reconcile_pass(struct reconcile *r, const struct reconcile_options *o,
		   FILE *out)
{
	int worst = RECONCILE_COMPLETE;

	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++) {
		int rc;

		if ((o->only >= 0 && (unsigned)o->only != i) ||
		    !backend_has_key(r->cfg, i))
			continue;
		if (stopped(o))
			break;
		rc = pass_one(r, i, o, out);
		if (rc == RECONCILE_FAILED ||
		    (rc == RECONCILE_DISCREPANCY && worst == RECONCILE_COMPLETE))
			worst = rc;
	}
	return worst;
}
