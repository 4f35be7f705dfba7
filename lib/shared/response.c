/* response.c - the outcome table and the CGI response it renders (see
 * response.h). The body is built with json-c so every string is escaped.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "response.h"

struct outcome_row {
	const char *name;
	int status;          /* 0: decided by the configuration */
	const char *reason_phrase;
	int retry_after;     /* adds Retry-After */
	int allow_post;      /* adds Allow: POST */
	int bare;            /* the body is the result alone */
};

static const struct outcome_row outcome_table[OUTCOME_COUNT] = {
	[OUTCOME_PROCESSED] = { "processed", 200, "OK", 0, 0 },
	[OUTCOME_DUPLICATE] = { "duplicate", 200, "OK", 0, 0 },
	[OUTCOME_IN_PROGRESS] = { "in_progress", 0, NULL, 1, 0 },
	[OUTCOME_CONFLICT] = { "conflict", 422, "Unprocessable Content", 0, 0 },
	[OUTCOME_INVALID] = { "invalid", 400, "Bad Request", 0, 0 },
	[OUTCOME_UNAUTHORIZED] = { "unauthorized", 401, "Unauthorized", 0, 0 },
	[OUTCOME_METHOD_NOT_ALLOWED] = { "method_not_allowed", 405,
					 "Method Not Allowed", 0, 1 },
	[OUTCOME_LENGTH_REQUIRED] = { "length_required", 411, "Length Required",
				      0, 0 },
	[OUTCOME_TOO_LARGE] = { "too_large", 413, "Content Too Large", 0, 0 },
	[OUTCOME_UNSUPPORTED_MEDIA_TYPE] = { "unsupported_media_type", 415,
					     "Unsupported Media Type", 0, 0 },
	[OUTCOME_UNAVAILABLE] = { "unavailable", 503, "Service Unavailable", 1,
				  0 },
	[OUTCOME_ERROR] = { "error", 500, "Internal Server Error", 0, 0 },
	[OUTCOME_IGNORED] = { "ignored", 200, "OK", 0, 0 },
	[OUTCOME_NOT_FOUND] = { "not_found", 404, "Not Found", 0, 0 },
	[OUTCOME_QUEUED] = { "queued", 200, "OK", 0, 0, 1 },
};

void response_set(struct result *r, enum outcome outcome, const char *fmt, ...)
{
	va_list ap;

	r->outcome = outcome;
	r->reason[0] = '\0';
	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
		va_end(ap);
	}
}

/* Adds key: value to obj; json-c takes ownership of the new string. */
static int body_add_string(json_object *obj, const char *key, const char *value)
{
	json_object *s = json_object_new_string(value);

	if (s == NULL)
		return -1;
	if (json_object_object_add(obj, key, s) != 0) {
		json_object_put(s);
		return -1;
	}
	return 0;
}

static const struct outcome_row *outcome_row(enum outcome outcome)
{
	if ((unsigned)outcome >= OUTCOME_COUNT)
		outcome = OUTCOME_ERROR;
	return &outcome_table[outcome];
}

const char *response_outcome_name(enum outcome outcome)
{
	return outcome_row(outcome)->name;
}

int response_outcome_status(enum outcome outcome, const struct config *cfg)
{
	const struct outcome_row *row = outcome_row(outcome);

	if (row->status != 0)
		return row->status;
	return cfg->in_progress_status == 503 ? 503 : 409;
}

static const char *status_phrase(int status)
{
	return status == 503 ? "Service Unavailable" : "Conflict";
}

long response_render(const struct result *r, const struct config *cfg,
		     char *buf, size_t cap, struct error *err)
{
	const struct outcome_row *row = outcome_row(r->outcome);
	int status = response_outcome_status(r->outcome, cfg);
	const char *phrase = row->reason_phrase != NULL ? row->reason_phrase
							: status_phrase(status);
	json_object *body;
	const char *json;
	char extra[64] = "";
	int n;

	if (r->success_body != NULL && status >= 200 && status < 300) {
		n = snprintf(buf, cap,
			     "Status: %d %s\r\n"
			     "Content-Type: text/plain\r\n"
			     "Cache-Control: no-store\r\n"
			     "\r\n"
			     "%s",
			     status, phrase, r->success_body);
		if (n < 0 || (size_t)n >= cap)
			return error_set(err, "response: %zu-byte buffer too small",
					 cap);
		return n;
	}
	body = json_object_new_object();
	if (body == NULL)
		return error_set(err, "response: out of memory");
	if (body_add_string(body, "result", row->name) != 0)
		goto oom;
	if (!row->bare && r->transaction_id[0] != '\0' &&
	    body_add_string(body, "transaction_id", r->transaction_id) != 0)
		goto oom;
	if (!row->bare && r->reason[0] != '\0' &&
	    body_add_string(body, "reason", r->reason) != 0)
		goto oom;
	json = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
						    JSON_C_TO_STRING_NOSLASHESCAPE);
	if (json == NULL)
		goto oom;

	if (row->retry_after)
		snprintf(extra, sizeof(extra), "Retry-After: %d\r\n",
			 cfg->retry_after_s);
	else if (row->allow_post)
		snprintf(extra, sizeof(extra), "Allow: POST\r\n");

	n = snprintf(buf, cap,
		     "Status: %d %s\r\n"
		     "Content-Type: application/json\r\n"
		     "Cache-Control: no-store\r\n"
		     "%s"
		     "\r\n"
		     "%s\n",
		     status, phrase, extra, json);
	json_object_put(body);
	if (n < 0 || (size_t)n >= cap)
		return error_set(err, "response: %zu-byte buffer too small", cap);
	return n;
oom:
	json_object_put(body);
	return error_set(err, "response: out of memory building the body");
}
