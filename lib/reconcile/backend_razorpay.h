/* backend_razorpay.h - Razorpay's payments and refunds (GET /v1/payments,
 * GET /v1/refunds) as a snapshot backend.h backend. */
#ifndef PAYHOOK_BACKEND_RAZORPAY_H
#define PAYHOOK_BACKEND_RAZORPAY_H

#include "backend.h"

extern const struct backend backend_razorpay;

#endif
