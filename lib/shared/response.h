/* response.h - the outcome table: from each outcome to its HTTP status line,
 * its extra headers and its JSON body. Nothing else in payhook writes a
 * status code.
 */
#ifndef PAYHOOK_RESPONSE_H
#define PAYHOOK_RESPONSE_H

#include <stddef.h>

#include "configuration.h"
#include "error.h"
#include "payment.h"

enum outcome {
	OUTCOME_PROCESSED = 0,
	OUTCOME_DUPLICATE,
	OUTCOME_IN_PROGRESS,
	OUTCOME_CONFLICT,
	OUTCOME_INVALID,
	OUTCOME_UNAUTHORIZED,
	OUTCOME_METHOD_NOT_ALLOWED,
	OUTCOME_LENGTH_REQUIRED,
	OUTCOME_TOO_LARGE,
	OUTCOME_UNSUPPORTED_MEDIA_TYPE,
	OUTCOME_UNAVAILABLE,
	OUTCOME_ERROR,
	OUTCOME_IGNORED,
	OUTCOME_NOT_FOUND,
	OUTCOME_QUEUED,  /* a notification durably queued (notify.h) */
};
#define OUTCOME_COUNT (OUTCOME_QUEUED + 1)

#define RESPONSE_REASON_MAX 160

/* What a request came to: filled by the pipeline, rendered by response_render. */
struct result {
	enum outcome outcome;
	char transaction_id[PAYMENT_TRANSACTION_ID_MAX + 1]; /* "" when not known */
	char reason[RESPONSE_REASON_MAX];                    /* "" for successes */
	/* Sent as text/plain instead of the JSON body when the status is 2xx,
	 * for a provider that requires it (Adyen's "[accepted]"); NULL for the
	 * JSON body. Static. */
	const char *success_body;
};

/* Sets r to outcome with a printf-formatted reason (NULL fmt: no reason);
 * keeps r->transaction_id and r->success_body. Can't fail. */
void response_set(struct result *r, enum outcome outcome, const char *fmt,
		  ...) __attribute__((format(printf, 3, 4)));

/* The outcome's name as it appears in the body and the log, e.g. "in_progress". */
const char *response_outcome_name(enum outcome outcome);

/* The HTTP status code for outcome under cfg (in_progress_status). */
int response_outcome_status(enum outcome outcome, const struct config *cfg);

/* Writes the complete CGI response for r into buf: "Status: ...", the
 * Content-Type, any Retry-After / Allow header, a blank line and the JSON body
 * {"result": ..., "transaction_id": ..., "reason": ...} built with json-c (or
 * r->success_body for a 2xx when it is set). A queued notification's body
 * is {"result": "queued"} alone: what it names is no transaction yet.
 * Returns the length written (buf is also NUL-terminated), or -1 with err set
 * when cap is too small or memory runs out. */
long response_render(const struct result *r, const struct config *cfg,
		     char *buf, size_t cap, struct error *err);

/* Enough for any response response_render writes. */
#define RESPONSE_BUFFER_SIZE 1024

#endif
