/* handoff.h - hands one recorded payment, or one change of its refunds,
 * disputes and cancellations, on to the merchant's fulfilment (prefix
 * handoff_): the JSON object every target gets, the idempotency key that is
 * the same on every attempt, and one attempt, either an HTTP POST
 * (libcurl, signed as Standard Webhooks when dispatch_secret is set) or a
 * command run by /bin/sh with the JSON on its standard input.
 *
 * An attempt never lasts longer than dispatch_timeout_ms plus
 * TRANSPORT_KILL_GRACE_MS (a command that ignores SIGTERM), which the lease
 * check of payhook-dispatch counts on. The process must ignore SIGPIPE
 * (a command that does not read its input, a peer that went away).
 */
#ifndef PAYHOOK_HANDOFF_H
#define PAYHOOK_HANDOFF_H

#include <stdbool.h>
#include <stddef.h>

#include "configuration.h"
#include "error.h"
#include "handoff_row.h"
#include "transport.h"

/* A key is at most SIGNATURE_ID_MAX (255) bytes (it is the webhook-id too);
 * a change's may be formatted longer before that check. */
#define HANDOFF_KEY_MAX 512

struct handoff; /* the target's transport; opaque */

/* The start-up checks of the target keys: exactly one of dispatch_url and
 * dispatch_command, a URL of http:// or https://, a dispatch_secret only
 * with a URL. Returns 0, or -1 with err saying what to set. */
int handoff_check_config(const struct config *cfg, struct error *err);

/* Returns a hand-off for cfg's target (cfg must outlive it; the first
 * dispatch_secret becomes the signing key), or NULL with err set (out of
 * memory, libcurl refused an option, a bad secret). transport_pick_global_init
 * first. */
struct handoff *handoff_new(const struct config *cfg, struct error *err);

/* Frees it (closing kept-alive connections and wiping the key); NULL is
 * fine. */
void handoff_free(struct handoff *h);

/* Writes the key and a NUL into out (cap bytes, HANDOFF_KEY_MAX is
 * enough): "payhook:<provider>:<transaction_id>" for a payment;
 * "payhook:<provider>:<transaction_id>:<kind>:<object_id>:<state>" for a
 * change, with ":<n>" appended when n >= 2 (the object holds that state
 * again). Returns 0, or -1 with err set when it does not fit or is not 1-255
 * bytes of visible ASCII (it goes into a header and the command's
 * environment); out is then "". */
int handoff_idempotency_key(const struct handoff_row *p, char *out,
			    size_t cap, struct error *err);

/* One attempt to hand p on. Returns 0 with *out telling how it went
 * (delivered or not); or -1 when no attempt could be made (out of memory, no
 * pipe or process, a field that cannot be expressed: see out->permanent),
 * with err set and *out a failure whose detail is err's message. Bounded by
 * dispatch_timeout_ms (+ TRANSPORT_KILL_GRACE_MS for a command). */
int handoff_deliver(struct handoff *h, const struct handoff_row *p,
		    struct transport_outcome *out, struct error *err);

/* ---- test hooks: no program calls these; the tests do (hence the
 * _test_ in their names). ---- */

/* The JSON object handoff_deliver sends for p (json-c, so every string is
 * escaped): type ("payment", or the change's kind), provider,
 * transaction_id, amount (integer), currency, event_id (or null),
 * received_at, payload (the raw body as a string, or null); a change adds
 * state, object_id, n, refunded_amount, dispute_state (or null) and
 * cancelled (a boolean). Returns a new NUL-terminated string the caller
 * frees with free(), its length in *len; or NULL with err set: out of
 * memory, or a field that is not valid UTF-8 (no JSON string can carry
 * it). */
char *handoff_test_body_new(const struct handoff_row *p, size_t *len,
			    struct error *err);

#endif
