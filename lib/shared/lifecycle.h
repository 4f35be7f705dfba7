/* lifecycle.h - what happens to a payment's money after it was recorded: a
 * refund, a dispute (chargeback) or a cancellation (void), each a lifecycle
 * object identified by (provider, kind, object_id) and holding one state.
 * This is the model only: the event a provider's webhook carries, the
 * states and their order, and which of two events of one object decides its
 * row. Pure: no JSON, no MySQL.
 */
#ifndef PAYHOOK_LIFECYCLE_H
#define PAYHOOK_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "payment.h"

/* payment_events.object_id is VARBINARY(255). */
#define LIFECYCLE_OBJECT_ID_MAX 255
/* payment_event_items.item_digest is BINARY(32): a SHA-256. */
#define LIFECYCLE_DIGEST_LEN 32

enum lifecycle_kind {
	LIFECYCLE_REFUND,
	LIFECYCLE_DISPUTE,
	LIFECYCLE_CANCELLATION,
};
#define LIFECYCLE_KINDS (LIFECYCLE_CANCELLATION + 1)

/* Refund: pending, succeeded, failed. Dispute: open, won, lost.
 * Cancellation: succeeded. Within a kind the enum order is the tie-break
 * order at equal times (a later state wins). */
enum lifecycle_state {
	LIFECYCLE_PENDING,
	LIFECYCLE_SUCCEEDED,
	LIFECYCLE_FAILED,
	LIFECYCLE_OPEN,
	LIFECYCLE_WON,
	LIFECYCLE_LOST,
};

/* A point in time in UTC, to the microsecond (payment_events.occurred_at is
 * DATETIME(6)): seconds since 1970-01-01T00:00:00Z, then micros 0..999999. */
struct lifecycle_time {
	int64_t seconds;
	int32_t micros;
};

/* One lifecycle event as a provider announced it. object_id is
 * NUL-terminated visible ASCII. link carries what ties the event to its
 * payment and what it moves: link.provider, link.transaction_id (the
 * payment's id exactly as payments.transaction_id holds it), link.amount
 * (minor units; 0 when the provider's event carries no amount),
 * link.currency ("" when it carries none) and link.event_id (the provider's
 * event id, empty when none). */
struct lifecycle_event {
	enum lifecycle_kind kind;
	enum lifecycle_state state;
	char object_id[LIFECYCLE_OBJECT_ID_MAX + 1];
	size_t object_id_len;
	struct payment link;
	struct lifecycle_time occurred_at; /* the provider's event time */
	/* link.amount is the object's running total so far (PAY.JP's
	 * amount_refunded), not one change: the row keeps the largest. */
	bool cumulative;
	/* A provider that signs only some fields of the event (Adyen): the
	 * SHA-256 of what it signs (the item's signing string). An event
	 * whose signed_digest was recorded before is a duplicate, whatever
	 * its unsigned fields (its time, its additionalData) say. */
	bool has_signed_digest;
	unsigned char signed_digest[LIFECYCLE_DIGEST_LEN];
	/* The kind came from an unsigned field (Adyen's CANCEL_OR_REFUND and
	 * its modification.action): an object of the other kind of
	 * kind_from_first recorded with this object_id keeps its kind. */
	bool kind_from_first;
};

/* "refund", "dispute", "cancellation": payment_events.kind. Can't fail. */
const char *lifecycle_kind_name(enum lifecycle_kind kind);

/* "pending", "succeeded", "failed", "open", "won", "lost":
 * payment_events.state. Can't fail. */
const char *lifecycle_state_name(enum lifecycle_state state);

/* Whether state is one an object of kind can hold. Can't fail. */
bool lifecycle_state_valid(enum lifecycle_kind kind,
			   enum lifecycle_state state);

/* The state of kind named text[0..len) (as lifecycle_state_name writes
 * it). Returns 0 with *out set, or -1 when no state of kind has that name.
 * Can't fail otherwise. */
int lifecycle_state_parse(enum lifecycle_kind kind, const char *text,
			  size_t len, enum lifecycle_state *out);

/* -1, 0 or 1 as a is before, equal to or after b. Can't fail. */
int lifecycle_time_compare(const struct lifecycle_time *a,
			   const struct lifecycle_time *b);

/* Parses an RFC 3339 date-time, text[0..len): YYYY-MM-DDTHH:MM:SS, an
 * optional fraction of 1-9 digits (kept to the microsecond, further digits
 * cut), then Z or an offset +HH:MM / -HH:MM; years 1970-9999. Returns 0 with
 * *out set in UTC, or -1 (out untouched) for anything else. Can't fail
 * otherwise. */
int lifecycle_time_parse(const char *text, size_t len,
			 struct lifecycle_time *out);

/* The time of a Unix timestamp in seconds: 0 with *out set, or -1 when it is
 * outside 1970-9999 (out untouched). Can't fail otherwise. */
int lifecycle_time_from_unix(int64_t seconds, struct lifecycle_time *out);

/* Whether incoming, an event of the object whose row now holds held (the
 * event that set the row's state), changes the row. Both must be of one
 * kind and one object. Rules, in order:
 *   - a cumulative amount (both cumulative, same state): only a larger
 *     amount changes the row, whatever the times (the row keeps the largest
 *     running total seen, so deliveries in any order end the same);
 *   - the state the row holds already: no (a duplicate);
 *   - a later occurred_at: yes; an earlier one: no;
 *   - the same occurred_at: yes when incoming's state comes later in the
 *     order pending -> succeeded -> failed, open -> won -> lost.
 * Pure; can't fail. */
bool lifecycle_supersedes(const struct lifecycle_event *held,
			  const struct lifecycle_event *incoming);

/* Whether incoming, which does not supersede held, says held's state again
 * at a later occurred_at (not for cumulative amounts): a duplicate that
 * still moves the row's time, so that an older event of another state that
 * arrives afterwards loses to it (lost at 2, lost at 4, then won at 3 ends
 * lost, as in time order). Pure; can't fail. */
bool lifecycle_restates(const struct lifecycle_event *held,
			const struct lifecycle_event *incoming);

#endif
