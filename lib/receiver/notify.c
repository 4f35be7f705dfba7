/* notify.c - the receiver's path for a provider that only notifies (see
 * notify.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "notify.h"
#include "notify_store.h"
#include "timing.h"

/* The pending count is read again once it is this old. */
#define COUNT_MS 1000

struct notify {
	const struct config *cfg;
	struct notify_store *store;
	/* The pending notifications as last counted, plus this worker's
	 * queued since; when (timing_now_us), 0: never. */
	long long pending;
	int64_t counted_us;
};

struct notify *notify_new(const struct config *cfg, struct error *err)
{
	struct notify *n = calloc(1, sizeof(*n));

	if (n == NULL) {
		error_set(err, "notifications: out of memory");
		return NULL;
	}
	n->cfg = cfg;
	n->store = notify_store_new(cfg, err);
	if (n->store == NULL) {
		free(n);
		return NULL;
	}
	return n;
}

void notify_free(struct notify *n)
{
	if (n == NULL)
		return;
	notify_store_free(n->store);
	free(n);
}

int notify_check(struct notify *n, struct error *err)
{
	return notify_store_check(n->store, err);
}

/* Whether the queue has room for more: notify_max_pending bounds it, by a
 * count at most COUNT_MS old (a count a request waits for would cost every
 * request a scan of the pending). Returns 1, 0 when full, or -1 with err
 * set. */
static int room(struct notify *n, size_t more, struct error *err)
{
	int64_t now = timing_now_us();

	if (n->counted_us == 0 || now - n->counted_us >= COUNT_MS * 1000L) {
		long long count = notify_store_pending(n->store, err);

		if (count < 0)
			return -1;
		n->pending = count;
		n->counted_us = now;
	}
	return n->pending + (long long)more <= n->cfg->notify_max_pending;
}

void notify_queue(struct notify *n, const struct provider *provider,
		  const struct provider_batch *batch,
		  enum payment_source source, bool dry_run, struct result *r,
		  struct error *detail)
{
	struct notify_notice notices[PROVIDER_NOTICES_MAX];
	size_t count = batch->notice_count;
	int rc;

	snprintf(r->transaction_id, sizeof(r->transaction_id), "%s",
		 count > 0 ? batch->notices[0].object_id : "");
	if (dry_run) {
		response_set(r, OUTCOME_QUEUED, "dry run: not queued");
		return;
	}
	rc = room(n, count, detail);
	if (rc < 0) {
		response_set(r, OUTCOME_UNAVAILABLE,
			     "database unavailable: retry");
		return;
	}
	for (size_t i = 0; i < count; i++)
		notices[i] = (struct notify_notice){
			batch->notices[i].object_id,
			batch->notices[i].event_id,
		};
	if (rc == 0) {
		/* Full, but equal ones may be pending: when every object is,
		 * each row takes its notice (nothing new is queued) and the
		 * answer is queued; else nothing changes, and 503. */
		rc = notify_store_notice(n->store, provider_name(provider),
					 notices, count, detail);
		if (rc < 0) {
			response_set(r, OUTCOME_UNAVAILABLE,
				     "database unavailable: retry");
			return;
		}
		if (rc == 1) {
			response_set(r, OUTCOME_QUEUED, NULL);
			return;
		}
	}
	if (rc == 0) {
		error_set(detail, "%lld notifications pending, "
			  "notify_max_pending is %ld: is payhook-reconcile "
			  "fetching them?", n->pending,
			  n->cfg->notify_max_pending);
		response_set(r, OUTCOME_UNAVAILABLE,
			     "too many notifications pending: retry");
		return;
	}
	if (notify_store_queue(n->store, provider_name(provider),
			       payment_source_name(source), notices, count,
			       detail) != 0) {
		response_set(r, OUTCOME_UNAVAILABLE,
			     "database unavailable: retry");
		return;
	}
	/* Counted as pending until the next count: a burst of one worker
	 * meets the bound before a second has passed. */
	n->pending += (long long)count;
	response_set(r, OUTCOME_QUEUED, NULL);
}
