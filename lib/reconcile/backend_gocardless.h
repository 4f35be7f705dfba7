/* backend_gocardless.h - GoCardless's API as a backend.h backend: the
 * fetch of a notified payment (GET /payments/{id} and its events) or
 * refund (GET /refunds/{id}), and the list of events (GET /events). */
#ifndef PAYHOOK_BACKEND_GOCARDLESS_H
#define PAYHOOK_BACKEND_GOCARDLESS_H

#include "backend.h"

extern const struct backend backend_gocardless;

#endif
