/* provider_notify.h - what the schemes of the providers that only notify
 * share (prefix provider_notify_): Mollie (provider_mollie), Mercado Pago
 * (provider_mercadopago) and GoCardless (provider_gocardless) post only
 * that an object changed; their scheme's notice reads the delivery into
 * notices (the objects to fetch), which the receiver queues (notify.h),
 * and its read (PROVIDER_READ_TRUSTED) reads what payhook-reconcile
 * fetched from the provider's API: the payment by the profile's row, its
 * refunds and disputes by provider_lifecycle.c. Only the provider modules
 * include it.
 */
#ifndef PAYHOOK_PROVIDER_NOTIFY_H
#define PAYHOOK_PROVIDER_NOTIFY_H

#include "provider_scheme.h"

/* A notify profile's keys: <name>_api_key, without which nothing could
 * fetch what it queues. Returns 0, or -1 with err saying what to set. */
int provider_notify_check_config(enum config_provider id,
				 const struct config *cfg, struct error *err);

/* Adds the object id[0..len) (its shape checked by the caller) with the
 * event id event[0..event_len) (NULL: none; longer than an id may be: cut
 * off, it only helps an operator) to out->notices, once per object (the
 * latest event id kept). Returns PROVIDER_NOTIFIED, or PROVIDER_INVALID
 * with why set when the request names more objects than
 * PROVIDER_NOTICES_MAX. */
enum provider_status provider_notify_add(struct provider_batch *out,
					 const char *id, size_t len,
					 const char *event, size_t event_len,
					 struct error *why);

/* Whether text[0..len) is prefix followed by 1 or more characters of
 * chars ("a-z", "A-Z", "0-9" ranges as letters: 'a' lower, 'A' upper, '0'
 * digits), PROVIDER_NOTICE_ID_MAX bytes at most. Can't fail. */
bool provider_notify_id(const char *text, size_t len, const char *prefix,
			const char *chars);

/* The read of a fetched object root (PROVIDER_READ_TRUSTED; the scheme's
 * read as it is, mode unused): its refunds
 * and disputes (provider_lifecycle.c) into out->lifecycle, and the
 * payment it is when the row's event path holds the payment event
 * (absent: no payment, as a GoCardless refund). Returns PROVIDER_PAYMENTS
 * with a payment, PROVIDER_IGNORED without (out->lifecycle may hold
 * some), or PROVIDER_INVALID / PROVIDER_ERROR with why set. */
enum provider_status provider_notify_read_object(const struct provider *p,
						 const struct request *req,
						 struct json_object *root,
						 enum provider_read_mode mode,
						 struct provider_batch *out,
						 struct error *why);

#endif
