/* sender.h - the provider's side of a webhook: the signature headers each
 * provider puts on a body, and sample events in each provider's shape. It is
 * what payhook-sign prints, and what the tests and benchmarks send; the
 * receiving side (lib/provider.c) never uses it.
 */
#ifndef PAYHOOK_SENDER_H
#define PAYHOOK_SENDER_H

#include <stddef.h>
#include <stdint.h>

#include "configuration.h"
#include "error.h"

#define SENDER_HEADERS_MAX 4
#define SENDER_NAME_MAX 64
#define SENDER_VALUE_MAX 320

/* The headers to send with the body, in order. */
struct sender_headers {
	size_t count;
	struct {
		char name[SENDER_NAME_MAX];
		char value[SENDER_VALUE_MAX];
	} items[SENDER_HEADERS_MAX];
};

/* What to sign with. Strings may be NULL where the provider has no use for
 * them; id and timestamp are required where it signs or sends them. */
struct sender_input {
	enum config_provider provider;
	const char *secret;    /* in the provider's own form */
	const char *id;        /* webhook-id (standard), X-Razorpay-Event-Id,
				* X-Shopify-Webhook-Id */
	const char *timestamp; /* Unix seconds (standard, stripe, paddle,
				* generic with {timestamp}) */
	const char *url;       /* the notification URL (square, generic {url}) */
	const char *topic;     /* X-Shopify-Topic; default orders/paid */
	const struct config *cfg; /* the generic_ keys (generic only) */
};

/* Signs body[0..len) as in->provider does. Fills *headers; for Adyen, whose
 * signatures travel in the body, *signed_body is a new body with every
 * item's additionalData.hmacSignature set (the caller frees it), else NULL.
 * Returns 0, or -1 with err saying what is missing or wrong (never quoting
 * the secret). */
int sender_sign(const struct sender_input *in, const char *body, size_t len,
		struct sender_headers *headers, char **signed_body,
		struct error *err);

/* What a sample event is about. */
struct sender_sample_input {
	enum config_provider provider;
	const char *event;          /* the event type; NULL: the payment event */
	const char *transaction_id; /* Shopify: digits only */
	int64_t amount;             /* minor units */
	const char *currency;       /* 3 letters */
	const char *event_id;       /* NULL: the sample's own */
};

/* Writes a sample event of the provider, in the shape its documentation
 * shows, with the given fields. The events it knows are the provider's
 * payment event and a few of the same object that record nothing; any other
 * event is refused. Returns a new NUL-terminated JSON text the caller frees,
 * or NULL with err set (for an unknown event: the events it has). */
char *sender_sample(const struct sender_sample_input *in, struct error *err);

/* Which id sender_sample_id writes. */
enum sender_id_kind {
	SENDER_ID_TRANSACTION, /* pi_... (Stripe), txn_... (Paddle), ... */
	SENDER_ID_EVENT,       /* evt_... (Stripe), evnt_... (PAY.JP), ... */
};

/* Bytes of randomness sender_sample_id may use (one per character). */
#define SENDER_ID_RANDOM 32

/* Writes into out (cap bytes, at least 64) a random id in the form the
 * provider gives its transactions or events, from rnd[0..n) (n at least
 * SENDER_ID_RANDOM; the caller draws them from the OS). Returns 0, or -1
 * when out or rnd is too small (out then untouched). */
int sender_sample_id(enum config_provider provider, enum sender_id_kind kind,
		     const unsigned char *rnd, size_t n, char *out, size_t cap);

#endif
