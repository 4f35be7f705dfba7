/* handoff.h - hands one recorded payment on to the merchant's fulfilment
 * (prefix handoff_): the JSON object every target gets, the idempotency key
 * that is the same on every attempt, and one attempt, either an HTTP POST
 * (libcurl, signed as Standard Webhooks when dispatch_secret is set) or a
 * command run by /bin/sh with the JSON on its standard input.
 *
 * An attempt never lasts longer than dispatch_timeout_ms plus
 * HANDOFF_KILL_GRACE_MS (a command that ignores SIGTERM), which the lease
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

/* "payhook:" + provider (32) + ":" + transaction id (128) + NUL. */
#define HANDOFF_KEY_MAX 176
/* A short text about an attempt, for dispatch_last_error and the log. */
#define HANDOFF_DETAIL_MAX 200
/* How long a command has between SIGTERM and SIGKILL once it outlasted
 * dispatch_timeout_ms. */
#define HANDOFF_KILL_GRACE_MS 500L
/* Bytes of a response body or of a command's output kept for the detail. */
#define HANDOFF_OUTPUT_KEEP 120

struct handoff; /* a libcurl handle or a command, the signing key; opaque */

struct handoff_outcome {
	bool delivered;     /* 2xx, or exit status 0 */
	bool permanent;     /* retrying can never help (the payment cannot be
			     * put in JSON or a header): dead at once */
	bool timed_out;     /* dispatch_timeout_ms ran out (command killed) */
	long http_status;   /* the answer's status; 0 when there was none */
	long retry_after_ms; /* a 429 or 503's Retry-After (seconds or a date),
			     * in ms; -1: none, or another status */
	int exit_status;    /* a command's exit status; -1 when it did not
			     * exit by itself */
	int term_signal;    /* the signal that ended a command, else 0 */
	char detail[HANDOFF_DETAIL_MAX]; /* "HTTP 500: <body>", "exit status
			     * 3: <output>", curl's error ...; never a secret */
};

/* libcurl's global set-up: once per process before any handoff_new, while
 * the process has one thread. Returns 0, or -1 with err set. */
int handoff_global_init(struct error *err);

/* Undoes handoff_global_init. Can't fail. */
void handoff_global_cleanup(void);

/* The start-up checks of the target keys: exactly one of dispatch_url and
 * dispatch_command, a URL of http:// or https://, a dispatch_secret only
 * with a URL. Returns 0, or -1 with err saying what to set. */
int handoff_check_config(const struct config *cfg, struct error *err);

/* Returns a hand-off for cfg's target (cfg must outlive it; the first
 * dispatch_secret becomes the signing key), or NULL with err set (out of
 * memory, libcurl refused an option, a bad secret). */
struct handoff *handoff_new(const struct config *cfg, struct error *err);

/* Frees it (closing kept-alive connections and wiping the key); NULL is
 * fine. */
void handoff_free(struct handoff *h);

/* Writes "payhook:<provider>:<transaction_id>" and a NUL into out (cap
 * bytes, HANDOFF_KEY_MAX is enough). Returns 0, or -1 with err set when it
 * does not fit or is not 1-255 bytes of visible ASCII (it goes into a header
 * and the command's environment); out is then "". */
int handoff_idempotency_key(const struct handoff_row *p, char *out,
			    size_t cap, struct error *err);

/* Builds the JSON object handed on (json-c, so every string is escaped):
 * provider, transaction_id, amount (integer), currency, event_id (or null),
 * received_at, payload (the raw body as a string). Returns a new
 * NUL-terminated string the caller frees with free(), its length in *len; or
 * NULL with err set: out of memory, or a field that is not valid UTF-8 (no
 * JSON string can carry it). */
char *handoff_body_new(const struct handoff_row *p, size_t *len,
		       struct error *err);

/* One attempt to hand p on. Returns 0 with *out telling how it went
 * (delivered or not); or -1 when no attempt could be made (out of memory, no
 * pipe or process, a field that cannot be expressed: see out->permanent),
 * with err set and *out a failure whose detail is err's message. Bounded by
 * dispatch_timeout_ms (+ HANDOFF_KILL_GRACE_MS for a command). */
int handoff_deliver(struct handoff *h, const struct handoff_row *p,
		    struct handoff_outcome *out, struct error *err);

#endif
