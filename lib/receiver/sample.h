/* sample.h - sample events in each provider's shape (prefix sample_): what
 * payhook-sign --sample writes, and what the tests and benchmarks send. The
 * receiving side never uses it; signing is provider_sign's (provider.h).
 */
#ifndef PAYHOOK_SAMPLE_H
#define PAYHOOK_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "configuration.h"
#include "error.h"

/* What a sample event is about. */
struct sample_input {
	enum config_provider provider;
	const char *event;          /* the event type; NULL: the payment event */
	const char *transaction_id; /* Shopify: digits only */
	int64_t amount;             /* minor units */
	const char *currency;       /* 3 letters; NULL: the provider's
				     * usual one (USD, JPY for PAY.JP...) */
	const char *event_id;       /* NULL: the sample's own */
	/* Refund, dispute and cancellation samples only: */
	const char *object_id;      /* the object's id; NULL: derived from
				     * transaction_id */
	int64_t occurred_at;        /* the event's time, Unix seconds;
				     * 0: 2024-06-17T04:03:25Z */
};

/* Writes a sample event of the provider, in the shape its documentation
 * shows, with the given fields. The events it knows are the provider's
 * payment event, a few of the same object that record nothing, and its
 * refund, dispute and cancellation events (of object_id, for the payment
 * transaction_id, with amount and currency, at occurred_at); any other
 * event is refused. Returns a new NUL-terminated JSON text the caller frees,
 * or NULL with err set (an unknown event: where the samples are listed). */
char *sample_event(const struct sample_input *in, struct error *err);

/* The index-th event sample_event knows for provider: its payment event
 * first, then the others of its object, then its refund, dispute and
 * cancellation events, as --sample takes them. Returns a static string, or
 * NULL past the last (and for a provider without samples). Can't fail. */
const char *sample_name(enum config_provider provider, size_t index);


/* Which id sample_id writes. */
enum sample_id_kind {
	SAMPLE_ID_TRANSACTION, /* pi_... (Stripe), txn_... (Paddle), ... */
	SAMPLE_ID_EVENT,       /* evt_... (Stripe), evnt_... (PAY.JP), ... */
};

/* Bytes of randomness sample_id may use (one per character). */
#define SAMPLE_ID_RANDOM 32

/* Writes into out (cap bytes, at least 64) a random id in the form the
 * provider gives its transactions or events, from rnd[0..n) (n at least
 * SAMPLE_ID_RANDOM; the caller draws them from the OS). Returns 0, or -1
 * when out or rnd is too small (out then untouched). */
int sample_id(enum config_provider provider, enum sample_id_kind kind,
		     const unsigned char *rnd, size_t n, char *out, size_t cap);

/* ---- test hooks: no program calls these; the tests do (hence the
 * _test_ in their names). ---- */

/* Why provider has no samples (the generic profile: its fields are the
 * generic_ keys'), or NULL when it has some. Every profile has one or the
 * other (tests/unit/test_providers.c). Can't fail. */
const char *sample_test_none(enum config_provider provider);

#endif
