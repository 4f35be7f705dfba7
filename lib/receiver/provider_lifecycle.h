/* provider_lifecycle.h - reading a provider's refund, dispute and
 * cancellation events: for each profile, which signed events announce a
 * lifecycle object, and where its id, its payment's id, its amount, state
 * and event time are. The provider floor: lib/receiver/provider.c calls it once the
 * signature is checked, with the parsed body (or one Adyen item).
 */
#ifndef PAYHOOK_PROVIDER_LIFECYCLE_H
#define PAYHOOK_PROVIDER_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "configuration.h"
#include "error.h"
#include "lifecycle.h"
#include "payload.h"

/* KOMOJU lists every refund of a payment in one event; more than this in
 * one request is refused as invalid rather than half read. */
#define PROVIDER_LIFECYCLE_MAX 64

/* Reads node (the parsed body, or one Adyen notification item, borrowed) as
 * the lifecycle events of provider, into out[0..*count), at most cap.
 * Returns PAYLOAD_VALID with *count = 0 when node is no lifecycle event of
 * provider (a payment, or an event payhook does not read); PAYLOAD_VALID
 * with *count >= 1 when it is, every field checked by the rules payments
 * follow (rules: trim_transaction_id for the payment's id,
 * default_currency); PAYLOAD_INVALID when it is one but breaks a field rule
 * (why names the field); PAYLOAD_ERROR when our configuration is at fault.
 * link.provider and link.event_id are left for the caller. After a failure
 * out and *count say nothing. */
enum payload_status provider_lifecycle_read(enum config_provider provider,
					    struct json_object *node,
					    const struct payload_rules *rules,
					    struct lifecycle_event *out,
					    size_t cap, size_t *count,
					    struct error *why);

/* ---- test hooks: no program calls these; the tests do (hence the
 * _test_ in their names). ---- */

/* Why provider has no refund, dispute or cancellation event payhook reads
 * (the generic profile records payments only), or NULL when it has some.
 * Every profile has one or the other (tests/unit/test_providers.c).
 * Can't fail. */
const char *provider_lifecycle_test_none(enum config_provider provider);

/* Whether provider_lifecycle_read knows events of provider. Can't fail. */
bool provider_lifecycle_test_reads(enum config_provider provider);

#endif
