/* notify.h - the receiver's path for a provider that only notifies
 * (prefix notify_): Mollie, Mercado Pago and GoCardless post that an
 * object changed, never what it holds. Once the provider layer has checked
 * the notification (its form, the ids' shape, the signature where the
 * provider signs: PROVIDER_NOTIFIED), this module queues each object it
 * names in table notifications (notify_store.h) and answers 200
 * {"result":"queued"} only once that is committed; 503 with Retry-After
 * when the database cannot take it or the queue holds notify_max_pending
 * notifications already (never a silent drop). It never calls the
 * provider: payhook-reconcile fetches what is queued and records what the
 * API says through the webhook's own recording (lib/reconcile/
 * notify_fetch.h). Queued is never a payment: totals, metrics and the
 * hand-off see only what the fetch records.
 */
#ifndef PAYHOOK_NOTIFY_H
#define PAYHOOK_NOTIFY_H

#include <stdbool.h>

#include "configuration.h"
#include "error.h"
#include "payment.h"
#include "provider.h"
#include "response.h"

struct notify; /* the queue's store and the pending count; opaque */

/* Returns the queue for cfg (which must outlive it), not yet connected,
 * or NULL with err set. */
struct notify *notify_new(const struct config *cfg, struct error *err);

/* Frees it; NULL is fine. */
void notify_free(struct notify *notify);

/* Queues the objects batch's notices name, of provider's profile, heard as
 * source (a delivery, a listed event, a replay), all in one transaction
 * (dry_run: none, OUTCOME_QUEUED with the reason "dry run: not queued").
 * Sets r's outcome: OUTCOME_QUEUED once committed; OUTCOME_UNAVAILABLE
 * when the database could not take them (detail says why) or
 * notify_max_pending are pending (the count is at most a second old).
 * r->transaction_id names the first object (the log line's). Can't fail
 * otherwise. */
void notify_queue(struct notify *notify, const struct provider *provider,
		  const struct provider_batch *batch,
		  enum payment_source source, bool dry_run, struct result *r,
		  struct error *detail);

/* Whether the table is there, for --check-config: 0, or -1 with err naming
 * the migration that adds it. */
int notify_check(struct notify *notify, struct error *err);

#endif
