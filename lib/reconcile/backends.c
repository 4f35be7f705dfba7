/* backends.c - the table of providers' list APIs (backends.h): every
 * profile has a row, its backend or why it has none.
 */
#include "config.h"

#include "backend_stripe.h"
/* The event-list backends beyond Stripe. */
#include "backend_paddle.h"
#include "backend_square.h"
#include "backend_payjp.h"
#include "backend_komoju.h"
/* PayPal's events, behind an OAuth2 token. */
#include "backend_paypal.h"
/* The snapshot backends (Razorpay, Shopify, Lemon Squeezy). */
#include "backend_razorpay.h"
#include "backend_shopify.h"
#include "backend_lemonsqueezy.h"
/* The providers that only notify: each notified object fetched, and
 * their lists. */
#include "backend_gocardless.h"
#include "backend_mercadopago.h"
#include "backend_mollie.h"
#include "backends.h"

static const struct backend_row {
	const struct backend *backend;
	const char *none; /* why there is none */
} rows[CONFIG_PROVIDER_COUNT] = {
	[CONFIG_PROVIDER_STANDARD] = { NULL, "the standard profile is "
				       "payhook's own format: no provider "
				       "API to list" },
	[CONFIG_PROVIDER_STRIPE] = { &backend_stripe, NULL },
	[CONFIG_PROVIDER_PADDLE] = { &backend_paddle, NULL },
	[CONFIG_PROVIDER_RAZORPAY] = { &backend_razorpay, NULL },
	[CONFIG_PROVIDER_KOMOJU] = { &backend_komoju, NULL },
	[CONFIG_PROVIDER_PAYJP] = { &backend_payjp, NULL },
	[CONFIG_PROVIDER_SQUARE] = { &backend_square, NULL },
	[CONFIG_PROVIDER_SHOPIFY] = { &backend_shopify, NULL },
	[CONFIG_PROVIDER_ADYEN] = { NULL, "Adyen has no API that lists past "
				    "notifications; it retries each one it "
				    "was not answered [accepted] for 30 days" },
	[CONFIG_PROVIDER_GENERIC] = { NULL, "the generic profile names no "
				      "provider's API" },
	[CONFIG_PROVIDER_PAYPAL] = { &backend_paypal, NULL },
	[CONFIG_PROVIDER_LEMONSQUEEZY] = { &backend_lemonsqueezy, NULL },
	[CONFIG_PROVIDER_MOLLIE] = { &backend_mollie, NULL },
	[CONFIG_PROVIDER_MERCADOPAGO] = { &backend_mercadopago, NULL },
	[CONFIG_PROVIDER_GOCARDLESS] = { &backend_gocardless, NULL },
	/* The current platform's webhooks are a workflow's actions; the
	 * previous platform's GET /events is for that platform only. */
	[CONFIG_PROVIDER_CHECKOUT] = { NULL, "Checkout.com has no API that "
				       "lists past webhook events on its "
				       "current platform; it retries each "
				       "one not answered 2xx for about a "
				       "day" },
};

const struct backend *backends_for(enum config_provider profile)
{
	return (unsigned)profile < CONFIG_PROVIDER_COUNT ? rows[profile].backend
							 : NULL;
}

const char *backends_none(enum config_provider profile)
{
	return (unsigned)profile < CONFIG_PROVIDER_COUNT ? rows[profile].none
							 : NULL;
}
