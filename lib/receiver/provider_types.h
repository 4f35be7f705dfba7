/* provider_types.h - the types the provider layer shares with its callers
 * (the pipeline, payhook-sign, the samples) and with its scheme modules:
 * what a request carries (provider_batch), how it was judged
 * (provider_status), and what a provider sends with a body
 * (provider_headers). Types only; provider.h has the functions.
 */
#ifndef PAYHOOK_PROVIDER_TYPES_H
#define PAYHOOK_PROVIDER_TYPES_H

#include <stdbool.h>
#include <stddef.h>

#include "configuration.h"
#include "lifecycle.h"
#include "payload.h"
#include "payment.h"
#include "provider_lifecycle.h"

/* Adyen may batch notification items; more than this in one request is
 * refused as invalid rather than half recorded. */
#define PROVIDER_PAYMENTS_MAX 64
#define PROVIDER_EVENT_TYPE_MAX 64
/* A GoCardless webhook may batch events; more objects to fetch than this in
 * one request is refused as invalid rather than half queued. */
#define PROVIDER_NOTICES_MAX 256
/* The longest id a notification names (Mollie tr_ and 22 characters,
 * GoCardless PM and 12, Mercado Pago's digits: far below). */
#define PROVIDER_NOTICE_ID_MAX 64

enum provider_status {
	PROVIDER_PAYMENTS = 0, /* signed, and carries 1 or more payments */
	PROVIDER_IGNORED,      /* signed, but not the profile's payment event
				* (lifecycle events, if any, are in the
				* batch: see provider_batch) */
	PROVIDER_UNAUTHORIZED, /* signature missing, malformed, stale or wrong */
	PROVIDER_INVALID,      /* a payment event that breaks a field rule, or a
				* body that is no event of this provider */
	PROVIDER_ERROR,        /* libcrypto or memory failed: ours, not theirs */
	PROVIDER_UNAVAILABLE,  /* what checks the signature cannot be had now
				* (PayPal's certificate): 503, retried */
	PROVIDER_NOTIFIED,     /* a provider that only notifies: its
				* notification, checked, names objects to
				* fetch (provider_batch's notices), to queue */
};

/* One object a notification says changed, to fetch from the provider's
 * API: its id, and the provider's event id ("" when none). */
struct provider_notice {
	char object_id[PROVIDER_NOTICE_ID_MAX + 1];
	char event_id[PROVIDER_NOTICE_ID_MAX + 1];
};

/* What a request carries. */
struct provider_batch {
	size_t count;                         /* payments[0..count) */
	struct payment payments[PROVIDER_PAYMENTS_MAX];
	/* Refunds, disputes and cancellations the request announces,
	 * lifecycle[0..lifecycle_count), read and checked. The status is
	 * PROVIDER_IGNORED for a request of lifecycle events only
	 * (PROVIDER_PAYMENTS when an Adyen batch holds payments too): the
	 * pipeline records them either way. */
	size_t lifecycle_count;
	struct lifecycle_event lifecycle[PROVIDER_LIFECYCLE_MAX];
	char event_type[PROVIDER_EVENT_TYPE_MAX + 1]; /* for the log; "" if none */
	/* The body to send for a 2xx instead of payhook's JSON, as the
	 * provider requires (Adyen: "[accepted]"); NULL for the JSON. */
	const char *success_body;
	/* PROVIDER_UNAUTHORIZED for a request that carried no signature at
	 * all (the inbox lets those go first). */
	bool signature_missing;
	/* PROVIDER_NOTIFIED: the objects to fetch, notices[0..notice_count),
	 * one notice per object. */
	size_t notice_count;
	struct provider_notice notices[PROVIDER_NOTICES_MAX];
};

/* Where a provider puts what payhook reads, for the side that writes such
 * events (payhook-sign's samples). Paths are dotted JSON paths; NULL when the
 * provider has no such field or it travels in a header. The generic
 * profile's come from its configuration, so they are all NULL here. */
struct provider_fields {
	const char *event_path;     /* the event type */
	const char *payment_event;  /* its value for a payment */
	const char *status_path, *status_value; /* a second condition */
	const char *event_id_path;
	const char *id_path, *amount_path, *currency_path;
	enum payload_amount_form amount_form;
	bool id_integer;
};

/* ---- the sending side (payhook-sign, the tests, the benchmarks) ---- */

#define PROVIDER_HEADERS_MAX 6
#define PROVIDER_HEADER_NAME_MAX 64
#define PROVIDER_HEADER_VALUE_MAX 600

/* The headers a provider sends with a body, in order. */
struct provider_headers {
	size_t count;
	struct {
		char name[PROVIDER_HEADER_NAME_MAX];
		char value[PROVIDER_HEADER_VALUE_MAX];
	} items[PROVIDER_HEADERS_MAX];
};

/* What to sign with. Strings may be NULL where the provider has no use for
 * them; id and timestamp are required where it signs or sends them. */
struct provider_sign_input {
	enum config_provider provider;
	const char *secret;    /* in the provider's own form */
	const char *id;        /* webhook-id (standard), X-Razorpay-Event-Id,
				* X-Shopify-Event-Id */
	const char *timestamp; /* Unix seconds (standard, stripe, paddle,
				* generic with {timestamp}) */
	const char *url;       /* the notification URL (square; generic
				* {url}, default generic_url) */
	const char *topic;     /* X-Shopify-Topic; default orders/paid */
	const char *cert_url;  /* PayPal: the certificate's URL (its
				* secret is the file of the key to sign with) */
	const char *webhook_id; /* PayPal: paypal_webhook_id (default: the
				 * one of cfg) */
	const struct config *cfg; /* the generic_ keys (generic only) */
};

#endif
