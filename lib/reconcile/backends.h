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

#endif
