/* notify_fetch.h - payhook-reconcile as the fetcher of the providers that
 * only notify (prefix notify_fetch_): Mollie, Mercado Pago and GoCardless
 * post only what changed; the receiver queued it in table notifications
 * (lib/receiver/notify.h) and this module takes each pending notification
 * under a lease (notify_store.h), fetches the object from the provider's
 * API with its backend's fetch (backend.h) and the polite client
 * (api_client.h, one try: the queue is the back-off), and records what
 * the API says through the receiver's one recording path
 * (pipeline_record_trusted), with the webhook's outcomes and the
 * notification's source (webhook, unless a list or a replay queued it).
 *
 * The notification is done once that is committed (also when it recorded
 * nothing: a payment not paid yet), rejected when the API does not know
 * the object (404), and due again after a back-off when the fetch failed
 * (no answer, 5xx, 429 and its Retry-After, 401/403) or the recording
 * could not be committed: never lost.
 */
#ifndef PAYHOOK_NOTIFY_FETCH_H
#define PAYHOOK_NOTIFY_FETCH_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "configuration.h"
#include "error.h"

/* A fetch's lease on its notification, renewed between its requests: a
 * fetcher killed mid-fetch holds the notification this long at most. */
#define NOTIFY_FETCH_LEASE_S 15L
/* The back-off after a failed fetch: 1 s, doubling per attempt, at most an
 * hour (a Retry-After longer than that is waited for all the same). */
#define NOTIFY_FETCH_BACKOFF_FIRST_MS 1000LL
#define NOTIFY_FETCH_BACKOFF_MAX_MS 3600000LL

struct notify_fetch; /* the queue, the pipeline, a client per provider */

struct notify_fetch_options {
	int only;                    /* a profile (enum config_provider), or
				      * -1 for every one */
	bool (*stopping)(void); /* true after SIGTERM: the fetch in hand
				 * ends, the rest waits; may be NULL */
};

/* Whether cfg has a provider that only notifies with its API key (of
 * only, or of any when only is -1): something to fetch for. Can't fail. */
bool notify_fetch_wanted(const struct config *cfg, int only);

/* Returns a fetcher for cfg (which must outlive it), whose leases carry
 * owner in the log (host:pid), or NULL with err set. Backends are
 * connected lazily. */
struct notify_fetch *notify_fetch_new(const struct config *cfg,
				      struct error *err);

/* Frees it, giving back a lease it holds; NULL is fine. */
void notify_fetch_free(struct notify_fetch *fetch);

/* Takes every notification due now, one after another, until none is
 * left (or o->stopping()). Returns how many it took, or -1 with err set when
 * the table could not be read (the database down, the migration not run).
 * *failed is set when a fetch failed (the notification stays pending). */
long notify_fetch_due(struct notify_fetch *fetch,
		      const struct notify_fetch_options *o, bool *failed,
		      struct error *err);

/* Writes one logfmt line per provider that only notifies and has a key
 * (of o->only) to out: what its fetches came to since the last report
 * (notifications taken, fetched, the recording's outcomes, rejected,
 * failed, notified again meanwhile, requests), and starts counting anew.
 * Can't fail. */
void notify_fetch_report(struct notify_fetch *fetch,
			 const struct notify_fetch_options *o, FILE *out);

/* Deletes done and rejected notifications older than 30 days, a thousand
 * at most (the daemon calls it now and then). Failures are logged. Can't
 * fail. */
void notify_fetch_prune(struct notify_fetch *fetch);

#endif
