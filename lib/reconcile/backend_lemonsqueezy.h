/* backend_lemonsqueezy.h - Lemon Squeezy's orders (GET /v1/orders, JSON:API)
 * as a snapshot backend.h backend. */
#ifndef PAYHOOK_BACKEND_LEMONSQUEEZY_H
#define PAYHOOK_BACKEND_LEMONSQUEEZY_H

#include "backend.h"

extern const struct backend backend_lemonsqueezy;

#endif
