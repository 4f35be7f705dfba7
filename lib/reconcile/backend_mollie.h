/* backend_mollie.h - Mollie's Payments API as a backend.h backend: the
 * fetch of a notified payment (GET /v2/payments/{id}, with its refunds and
 * chargebacks) and the list of payments (GET /v2/payments). */
#ifndef PAYHOOK_BACKEND_MOLLIE_H
#define PAYHOOK_BACKEND_MOLLIE_H

#include "backend.h"

extern const struct backend backend_mollie;

#endif
