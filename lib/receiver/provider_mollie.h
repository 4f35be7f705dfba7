/* provider_mollie.h - Mollie's classic webhooks (prefix provider_mollie_ /
 * provider_scheme_mollie): an unsigned form post "id=tr_..." naming a
 * payment whose status changed (or whose refund or chargeback did), which
 * payhook queues and payhook-reconcile fetches (GET /v2/payments/{id}):
 * Mollie's "fake calls to your webhook will never result in orders being
 * processed without being actually paid" holds because the API is the
 * proof.
 */
#ifndef PAYHOOK_PROVIDER_MOLLIE_H
#define PAYHOOK_PROVIDER_MOLLIE_H

#include "provider_scheme.h"

extern const struct provider_scheme provider_scheme_mollie;

#endif
