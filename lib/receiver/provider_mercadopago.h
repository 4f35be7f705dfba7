/* provider_mercadopago.h - Mercado Pago's webhooks (prefix
 * provider_scheme_mercadopago): a POST to the notification URL with
 * data.id and type in its query and a JSON body, signed in x-signature
 * (ts=...,v1=...: the hex HMAC-SHA256 of the manifest
 * "id:<data.id>;request-id:<x-request-id>;ts:<ts>;" with the secret
 * signature). Only the id is signed: payhook queues it and
 * payhook-reconcile fetches the payment (GET /v1/payments/{id}).
 */
#ifndef PAYHOOK_PROVIDER_MERCADOPAGO_H
#define PAYHOOK_PROVIDER_MERCADOPAGO_H

#include "provider_scheme.h"

extern const struct provider_scheme provider_scheme_mercadopago;
/* The headers read besides x-signature (the row's more_headers). */
extern const char *const provider_mercadopago_headers[];

#endif
