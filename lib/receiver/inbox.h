/* inbox.h - keeping what payhook answered but did not record (prefix
 * inbox_): with inbox_days above 0, each delivery on an enabled profile's
 * path answered 200 ignored or 401 is kept in table inbox (inbox_store.h)
 * with its raw body, the profile's signature headers only, the time it was
 * received, the outcome and the reason, for payhook-reconcile --replay.
 *
 * The pipeline notes the delivery while its request is at hand (a copy of
 * the few headers, no I/O) and keeps it after the answer went out
 * (pipeline_finish): the write never delays an answer nor changes one; a
 * write that fails is the caller's to log and count.
 */
#ifndef PAYHOOK_INBOX_H
#define PAYHOOK_INBOX_H

#include <stdbool.h>
#include <stddef.h>

#include "configuration.h"
#include "error.h"
#include "provider.h"
#include "request.h"
#include "response.h"

struct inbox; /* the store and the delivery noted; opaque */

/* Returns an inbox for cfg (which must outlive it), not yet connected, or
 * NULL with err set. Only for inbox_days above 0. */
struct inbox *inbox_new(const struct config *cfg, struct error *err);

/* Frees it; NULL is fine. */
void inbox_free(struct inbox *inbox);

/* Whether table inbox is there (for --check-config): 0, or -1 with err
 * naming the migration that adds it. */
int inbox_check(struct inbox *inbox, struct error *err);

/* Whether r (for the request of an enabled profile) is kept: 200 ignored
 * or 401. */
bool inbox_wants(const struct result *r);

/* Notes the request answered r by provider (a copy of its signature
 * headers, the time now, the outcome and reason; event_type names what was
 * ignored), for the inbox_keep after the answer. Replaces any delivery
 * noted before. Can't fail: headers too long to keep are left out, and the
 * replay then finds the signature missing. */
void inbox_note(struct inbox *inbox, const struct provider *provider,
		const struct request *req, const struct result *r,
		const char *event_type);

/* Writes the delivery noted, with body[0..len), and forgets it. Returns 1
 * when it was kept, 0 when none was noted, -1 with err set when the write
 * failed. */
int inbox_keep(struct inbox *inbox, const char *body, size_t len,
	       struct error *err);

/* The provider and outcome ("ignored", "unauthorized") of the delivery
 * noted last, for the caller's counting; NULL before any. */
const struct provider *inbox_noted_provider(const struct inbox *inbox);
bool inbox_noted_unauthorized(const struct inbox *inbox);

#endif
