/* backend_shopify.h - Shopify's orders (GET /admin/api/<version>/orders.json)
 * as a snapshot backend.h backend. */
#ifndef PAYHOOK_BACKEND_SHOPIFY_H
#define PAYHOOK_BACKEND_SHOPIFY_H

#include "backend.h"

/* The REST Admin API version payhook asks for (one a year, each
 * supported by Shopify for at least twelve months after its release). */
#define BACKEND_SHOPIFY_API_VERSION "2026-10"

extern const struct backend backend_shopify;

#endif
