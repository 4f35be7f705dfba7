/* testreq.h - builds a struct request for the tests: CGI variables set one
 * by one, and a body read from memory, the way the FastCGI worker hands a
 * request to the pipeline.
 */
#ifndef PAYHOOK_TESTREQ_H
#define PAYHOOK_TESTREQ_H

#include <stddef.h>

#include <check.h>

#include "request.h"
#include "response.h"

#define TESTREQ_PARAMS_MAX 40
#define TESTREQ_STORAGE 16384

struct testreq {
	struct request req;           /* what to hand to the pipeline */
	char *params[TESTREQ_PARAMS_MAX + 1];
	size_t count;
	char storage[TESTREQ_STORAGE];
	size_t used;
	const char *body;
	size_t len, pos;
};

/* Starts a request: REQUEST_METHOD method (NULL: absent), CONTENT_TYPE
 * application/json and CONTENT_LENGTH len, with body[0..len) as the body
 * (not copied: it must outlive the request). */
void testreq_init(struct testreq *t, const char *method, const char *body,
		  size_t len);

/* Sets CGI variable name to value, replacing an earlier value; NULL value
 * removes it. Aborts when the storage is full (a test bug). */
void testreq_set(struct testreq *t, const char *name, const char *value);

/* Sets the HTTP header name ("Stripe-Signature") as its CGI variable. */
void testreq_header(struct testreq *t, const char *name, const char *value);

/* Rewinds the body, so the same request can be handled again. */
void testreq_rewind(struct testreq *t);

/* Asserts that got, an enum outcome, is want, naming both when not; got is
 * evaluated once (it is usually a request). */
#define assert_outcome(got, want)                                         \
	do {                                                              \
		enum outcome got_ = (got);                                \
		ck_assert_msg(got_ == (want), "outcome %s, expected %s",  \
			      response_outcome_name(got_), response_outcome_name(want));    \
	} while (0)

#endif
