/* provider_gocardless.h - GoCardless's webhooks (prefix
 * provider_scheme_gocardless): a JSON body {"events": [...]}, each event
 * naming a resource by its links, signed in Webhook-Signature (the hex
 * HMAC-SHA256 of the body with the endpoint's secret). The amounts live
 * behind the API: payhook queues each payment (PM...) and refund (RF...)
 * an event names, and payhook-reconcile fetches them (GET /payments/{id}
 * with the payment's events, GET /refunds/{id}).
 */
#ifndef PAYHOOK_PROVIDER_GOCARDLESS_H
#define PAYHOOK_PROVIDER_GOCARDLESS_H

#include "provider_scheme.h"

extern const struct provider_scheme provider_scheme_gocardless;

#endif
