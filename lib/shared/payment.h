/* payment.h - one payment as payhook records it: the row of payments that a
 * provider's event describes. The parsers fill it, the lock and the store
 * take it, the response names its transaction id; none of them needs the
 * JSON reader to know its shape.
 */
#ifndef PAYHOOK_PAYMENT_H
#define PAYHOOK_PAYMENT_H

#include <stddef.h>
#include <stdint.h>

#define PAYMENT_TRANSACTION_ID_MAX 128 /* the VARBINARY(128) column */
#define PAYMENT_EVENT_ID_MAX 255       /* the VARBINARY(255) column */

/* How a row came to payhook: the source column of payments and
 * payment_events, set when the row is inserted and never changed. */
enum payment_source {
	PAYMENT_SOURCE_WEBHOOK = 0, /* delivered to payhook (the default) */
	PAYMENT_SOURCE_RECONCILE,   /* payhook-reconcile read it from the API */
	PAYMENT_SOURCE_REPLAY,      /* replayed from the inbox */
};

/* The column's value for source ("webhook", "reconcile", "replay"). */
static inline const char *payment_source_name(enum payment_source source)
{
	return source == PAYMENT_SOURCE_RECONCILE ? "reconcile" :
	       source == PAYMENT_SOURCE_REPLAY	  ? "replay" :
						    "webhook";
}

/* transaction_id and event_id are NUL-terminated and hold visible ASCII only
 * (so never a NUL). */
struct payment {
	const char *provider;            /* the profile's name (static) */
	char transaction_id[PAYMENT_TRANSACTION_ID_MAX + 1];
	size_t transaction_id_len;       /* 0 while not known */
	int64_t amount;                  /* 1 ..= INT64_MAX, minor units */
	char currency[4];                /* 3 upper-case ASCII letters + NUL */
	char event_id[PAYMENT_EVENT_ID_MAX + 1];
	size_t event_id_len;             /* 0: the provider sent none */
	enum payment_source source;      /* the pipeline sets it per request */
};

#endif
