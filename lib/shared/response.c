/* response.c - the outcome table and the CGI response it renders (see
 * response.h). The body is json-c's: written directly only where json-c
 * would write the same bytes, and by json-c whenever a string needs
 * escaping.
 */
#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
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

/* Whether json-c writes text as it is between its quotes (PLAIN and
 * NOSLASHESCAPE): no '"', no '\\' and no control byte to escape. */
static bool json_unchanged(const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p != '\0';
	     p++) {
		if (*p < 0x20 || *p == '"' || *p == '\\')
			return false;
	}
	return true;
}

/* A response being written into a caller's buffer: what does not fit
 * marks it as too small (len then stops growing). */
struct out {
	char *buf;
	size_t cap, len;
	bool full;
};

static void put(struct out *o, const char *text)
{
	size_t n = strlen(text);

	if (o->full || n >= o->cap - o->len) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->len, text, n + 1);
	o->len += n;
}

/* put, for a string member ,"key":"value" of the body (none when the
 * value is empty), the value already as json-c writes it. */
static void put_member(struct out *o, const char *key, const char *value)
{
	if (value[0] == '\0')
		return;
	put(o, ",\"");
	put(o, key);
	put(o, "\":\"");
	put(o, value);
	put(o, "\"");
}

/* The body as json-c writes an object {"result", "transaction_id",
 * "reason"} (either of the last two left out when empty), and its
 * newline. Each value is copied as it is when json-c would leave it so
 * (nearly always: an id is visible ASCII, a reason our own text);
 * otherwise the whole body is json-c's. Returns 0, or -1 with err set
 * when memory runs out. */
static int put_body(struct out *o, const struct result *r,
		    const struct outcome_row *row, struct error *err)
{
	/* A bare row's body is its result alone. */
	const char *id = row->bare ? "" : r->transaction_id;
	const char *reason = row->bare ? "" : r->reason;
	json_object *body;
	const char *text = NULL;

	if (json_unchanged(id) && json_unchanged(reason)) {
		put(o, "{\"result\":\"");
		put(o, row->name);
		put(o, "\"");
		put_member(o, "transaction_id", id);
		put_member(o, "reason", reason);
		put(o, "}\n");
		return 0;
	}
	body = json_object_new_object();
	if (body != NULL && body_add_string(body, "result", row->name) == 0 &&
	    (id[0] == '\0' || body_add_string(body, "transaction_id", id) == 0) &&
	    (reason[0] == '\0' ||
	     body_add_string(body, "reason", reason) == 0))
		text = json_object_to_json_string_ext(
			body, JSON_C_TO_STRING_PLAIN |
				      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (text != NULL) {
		put(o, text);
		put(o, "\n");
	}
	json_object_put(body);
	if (text == NULL)
		return error_set(err, "response: out of memory building the "
				 "body");
	return 0;
}

long response_render(const struct result *r, const struct config *cfg,
		     char *buf, size_t cap, struct error *err)
{
	const struct outcome_row *row = outcome_row(r->outcome);
	int status = response_outcome_status(r->outcome, cfg);
	const char *phrase = row->reason_phrase != NULL ? row->reason_phrase
							: status_phrase(status);
	struct out o = { buf, cap, 0, cap == 0 };
	char line[64];

	snprintf(line, sizeof(line), "Status: %d %s\r\n", status, phrase);
	put(&o, line);
	if (r->success_body != NULL && status >= 200 && status < 300) {
		put(&o, "Content-Type: text/plain\r\n"
			"Cache-Control: no-store\r\n"
			"\r\n");
		put(&o, r->success_body);
	} else {
		put(&o, "Content-Type: application/json\r\n"
			"Cache-Control: no-store\r\n");
		if (row->retry_after) {
			snprintf(line, sizeof(line), "Retry-After: %d\r\n",
				 cfg->retry_after_s);
			put(&o, line);
		} else if (row->allow_post) {
			put(&o, "Allow: POST\r\n");
		}
		put(&o, "\r\n");
		if (put_body(&o, r, row, err) != 0)
			return -1;
	}
	if (o.full)
		return error_set(err, "response: %zu-byte buffer too small", cap);
	return (long)o.len;
}
