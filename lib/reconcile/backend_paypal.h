/* backend_paypal.h - PayPal's list of webhook event notifications (GET
 * /v1/notifications/webhooks-events, with an OAuth2 token) as a backend.h
 * backend. */
#ifndef PAYHOOK_BACKEND_PAYPAL_H
#define PAYHOOK_BACKEND_PAYPAL_H

#include "backend.h"

extern const struct backend backend_paypal;

#endif
