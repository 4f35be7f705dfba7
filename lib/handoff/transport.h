/* transport.h - one attempt to send a JSON body somewhere, behind one small
 * interface (prefix transport_), as curl keeps its TLS backends apart: an
 * HTTP POST (transport_http.c, libcurl) or a command run by /bin/sh with the
 * body on its standard input (transport_command.c). The hand-off
 * (handoff.h) and the alerts (alert.h) send through it.
 *
 * An attempt never lasts longer than timeout_ms plus
 * TRANSPORT_KILL_GRACE_MS (a command that ignores SIGTERM). The process
 * must ignore SIGPIPE (a command that does not read its input, a peer that
 * went away).
 */
#ifndef PAYHOOK_TRANSPORT_H
#define PAYHOOK_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* A short text about an attempt, for dispatch_last_error and the log. */
#define TRANSPORT_DETAIL_MAX 200
/* How long a command has between SIGTERM and SIGKILL once it outlasted
 * its timeout. */
#define TRANSPORT_KILL_GRACE_MS 500L
/* Bytes of a response body or of a command's output kept for the detail. */
#define TRANSPORT_OUTPUT_KEEP 120

struct transport_outcome {
	bool delivered;     /* 2xx, or exit status 0 */
	bool permanent;     /* retrying can never help (the payment cannot be
			     * put in JSON or a header): dead at once */
	bool timed_out;     /* the timeout ran out (command killed) */
	long http_status;   /* the answer's status; 0 when there was none */
	long retry_after_ms; /* a 429 or 503's Retry-After (seconds or a date),
			     * in ms; -1: none, or another status */
	int exit_status;    /* a command's exit status; -1 when it did not
			     * exit by itself */
	int term_signal;    /* the signal that ended a command, else 0 */
	char detail[TRANSPORT_DETAIL_MAX]; /* "HTTP 500: <body>", "exit status
			     * 3: <output>", curl's error ...; never a secret */
};

/* What a transport is made of. The strings must outlive it. */
struct transport_options {
	const char *url;          /* POST here (http:// or https://) ... */
	const char *command;      /* ... or run this by /bin/sh -c */
	long timeout_ms;          /* one attempt */
	/* HTTP: the whsec_ secret that signs each POST as Standard Webhooks
	 * (webhook-id = the key); NULL: unsigned. */
	const char *secret;
	const char *key_header;   /* HTTP: the header carrying the key */
	/* Command: "NAME=" of the variable carrying the key; every other
	 * variable starting with env_prefix is removed (secrets). */
	const char *key_variable;
	const char *env_prefix;
	const char *user_agent;   /* HTTP */
	const char *program;      /* for the message of a shell that fails */
};

/* One attempt's backend; opaque to callers. A backend's own struct starts
 * with it. */
struct transport {
	int (*send)(struct transport *t, const char *key, const char *body,
		    size_t body_len, struct transport_outcome *out,
		    struct error *err);
	void (*free)(struct transport *t);
};

/* Frees it (closing kept-alive connections, wiping the key); NULL is fine. */
void transport_free(struct transport *t);

/* Sends body once with key. Returns 0 with *out telling how it went
 * (delivered or not); or -1 when no attempt could be made (out of memory,
 * no pipe or process), with err set and *out a failure whose detail is
 * err's message. */
int transport_send(struct transport *t, const char *key, const char *body,
		   size_t body_len, struct transport_outcome *out,
		   struct error *err);

/* Whether url starts with http:// or https:// (any case). */
bool transport_url_valid(const char *url);

/* Clears out for an attempt: nothing delivered, no status, no
 * Retry-After. Can't fail. */
void transport_outcome_init(struct transport_outcome *out);

/* Sets out's detail to prefix and text[0..len), cut to fit, as printable
 * ASCII (other bytes of text become spaces), without trailing blanks.
 * Can't fail. */
void transport_detail_set(struct transport_outcome *out, const char *prefix,
			  const char *text, size_t len);

#endif
