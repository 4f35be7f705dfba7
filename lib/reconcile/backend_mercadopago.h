/* backend_mercadopago.h - Mercado Pago's Payments API as a backend.h
 * backend: the fetch of a notified payment (GET /v1/payments/{id}) and the
 * search of payments (GET /v1/payments/search). */
#ifndef PAYHOOK_BACKEND_MERCADOPAGO_H
#define PAYHOOK_BACKEND_MERCADOPAGO_H

#include "backend.h"

extern const struct backend backend_mercadopago;

#endif
