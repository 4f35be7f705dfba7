/* backends.c - the table of providers' list APIs (backends.h). */
#include "config.h"

#include "backend_stripe.h"
/* The event-list backends beyond Stripe. */
#include "backend_paddle.h"
#include "backend_square.h"
#include "backend_payjp.h"
#include "backend_komoju.h"
/* The snapshot backends (Razorpay, Shopify). */
#include "backend_razorpay.h"
#include "backend_shopify.h"
#include "backends.h"

const struct backend *backends_for(enum config_provider profile)
{
	switch (profile) {
	case CONFIG_PROVIDER_STRIPE:
		return &backend_stripe;
	/* The event-list backends beyond Stripe. */
	case CONFIG_PROVIDER_PADDLE:
		return &backend_paddle;
	case CONFIG_PROVIDER_SQUARE:
		return &backend_square;
	case CONFIG_PROVIDER_PAYJP:
		return &backend_payjp;
	case CONFIG_PROVIDER_KOMOJU:
		return &backend_komoju;
	/* The snapshot backends: objects listed, mapped to webhook bodies. */
	case CONFIG_PROVIDER_RAZORPAY:
		return &backend_razorpay;
	case CONFIG_PROVIDER_SHOPIFY:
		return &backend_shopify;
	default:
		return NULL;
	}
}
