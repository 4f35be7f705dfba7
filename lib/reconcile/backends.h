/* backends.h - which provider's list API each profile has (prefix
 * backends_): the one table of backend.h backends. */
#ifndef PAYHOOK_BACKENDS_H
#define PAYHOOK_BACKENDS_H

#include "backend.h"
#include "configuration.h"

/* The backend of profile, or NULL when this version cannot reconcile it
 * (Adyen has no such API). Stripe, Paddle, Square, PAY.JP and KOMOJU list
 * events; Razorpay and Shopify are snapshots: objects listed and mapped to
 * the bodies their webhooks give. */
const struct backend *backends_for(enum config_provider profile);

/* Why profile has no backend (Adyen keeps no list of its notifications),
 * or NULL when it has one. Every profile has one or the other
 * (tests/unit/test_providers.c). Can't fail. */
const char *backends_none(enum config_provider profile);

#endif
