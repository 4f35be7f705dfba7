/* backend_stripe.h - Stripe's list of events (GET /v1/events) as a
 * backend.h backend. */
#ifndef PAYHOOK_BACKEND_STRIPE_H
#define PAYHOOK_BACKEND_STRIPE_H

#include "backend.h"

extern const struct backend backend_stripe;

#endif
