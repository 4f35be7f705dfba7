/* request.c - the checks before the body and the request's variables (see
 * request.h). */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "number.h"
#include "request.h"

const char *request_param(const struct request *req, const char *name)
{
	size_t len = strlen(name);

	if (req->params == NULL)
		return NULL;
	/* The first byte first: a request has some 30 variables and a
	 * look-up happens about ten times per request. */
	for (char *const *p = req->params; *p != NULL; p++) {
		if ((*p)[0] == name[0] && strncmp(*p, name, len) == 0 &&
		    (*p)[len] == '=')
			return *p + len + 1;
	}
	return NULL;
}

static const char *skip_ows(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Whether text is type (compared case-insensitively), optionally with the
 * one parameter charset=utf-8 (its value optionally quoted). */
static bool is_media_type(const char *text, const char *type)
{
	static const char charset[] = "charset";
	static const char utf8[] = "utf-8";
	size_t type_len = strlen(type);
	const char *s;

	if (text == NULL)
		return false;
	s = skip_ows(text);
	if (strncasecmp(s, type, type_len) != 0)
		return false;
	s = skip_ows(s + type_len);
	if (*s == '\0')
		return true;
	if (*s != ';')
		return false;
	s = skip_ows(s + 1);
	if (strncasecmp(s, charset, sizeof(charset) - 1) != 0)
		return false;
	s = skip_ows(s + sizeof(charset) - 1);
	if (*s != '=')
		return false;
	s = skip_ows(s + 1);
	if (*s == '"') {
		if (strncasecmp(s + 1, utf8, sizeof(utf8) - 1) != 0 ||
		    s[sizeof(utf8)] != '"')
			return false;
		s += sizeof(utf8) + 1;
	} else {
		if (strncasecmp(s, utf8, sizeof(utf8) - 1) != 0)
			return false;
		s += sizeof(utf8) - 1;
	}
	return *skip_ows(s) == '\0';
}

bool request_is_json_media_type(const char *text)
{
	return is_media_type(text, "application/json");
}

bool request_is_form_media_type(const char *text)
{
	return is_media_type(text, "application/x-www-form-urlencoded");
}

static enum request_status fail(enum request_status status, const char *text,
				const char **reason)
{
	*reason = text;
	return status;
}

enum request_status request_check_media(const struct request *req,
					size_t max_body,
					enum request_media media,
					size_t *body_len, const char **reason)
{
	const char *method = request_param(req, "REQUEST_METHOD");
	uint64_t length;

	*reason = NULL;
	if (method == NULL || strcmp(method, "POST") != 0)
		return fail(REQUEST_BAD_METHOD, "only POST is allowed", reason);
	switch (number_parse(request_param(req, "CONTENT_LENGTH"), max_body,
			     &length)) {
	case NUMBER_OK:
		break;
	case NUMBER_TOO_LARGE:
		return fail(REQUEST_TOO_LARGE, "body larger than max_body_bytes",
			    reason);
	case NUMBER_INVALID:
	default:
		return fail(REQUEST_NO_LENGTH, "Content-Length is required",
			    reason);
	}
	if (media == REQUEST_MEDIA_FORM &&
	    !request_is_form_media_type(request_param(req, "CONTENT_TYPE")))
		return fail(REQUEST_BAD_MEDIA_TYPE, "Content-Type must be "
			    "application/x-www-form-urlencoded", reason);
	if (media == REQUEST_MEDIA_JSON &&
	    !request_is_json_media_type(request_param(req, "CONTENT_TYPE")))
		return fail(REQUEST_BAD_MEDIA_TYPE,
			    "Content-Type must be application/json", reason);
	*body_len = (size_t)length;
	return REQUEST_OK;
}

enum request_status request_read_body(const struct request *req, char *buf,
				      size_t len, const char **reason)
{
	size_t got = 0;

	*reason = NULL;
	while (got < len) {
		long n = req->read_body(req->read_ctx, buf + got, len - got);

		if (n <= 0)
			return fail(REQUEST_SHORT_BODY,
				    "body shorter than Content-Length", reason);
		got += (size_t)n;
	}
	return REQUEST_OK;
}

/* Copies the last '/'-separated segment of path[0..len) into out; "" when
 * it is longer than REQUEST_SEGMENT_MAX. */
static void last_segment(const char *path, size_t len, char *out)
{
	const char *end = path + len;
	const char *start;

	/* "/webhook/stripe/" names the same resource as "/webhook/stripe". */
	while (end > path && end[-1] == '/')
		end--;
	start = end;
	while (start > path && start[-1] != '/')
		start--;
	out[0] = '\0';
	if ((size_t)(end - start) <= REQUEST_SEGMENT_MAX) {
		memcpy(out, start, (size_t)(end - start));
		out[end - start] = '\0';
	}
}

void request_profile_segment(const struct request *req, char *out)
{
	const char *uri = request_param(req, "REQUEST_URI");
	const char *script, *info;

	out[0] = '\0';
	if (uri != NULL && uri[0] != '\0') {
		last_segment(uri, strcspn(uri, "?#"), out);
		return;
	}
	info = request_param(req, "PATH_INFO");
	if (info != NULL && info[0] != '\0' && strcmp(info, "/") != 0) {
		last_segment(info, strlen(info), out);
		return;
	}
	script = request_param(req, "SCRIPT_NAME");
	if (script != NULL)
		last_segment(script, strlen(script), out);
}

void request_path(const struct request *req, char *out, size_t cap)
{
	const char *uri = request_param(req, "REQUEST_URI");
	const char *script = request_param(req, "SCRIPT_NAME");
	const char *info = request_param(req, "PATH_INFO");
	size_t len;
	int n;

	out[0] = '\0';
	if (uri != NULL && uri[0] != '\0') {
		len = strcspn(uri, "?#");
		if (len < cap) {
			memcpy(out, uri, len);
			out[len] = '\0';
		}
		return;
	}
	n = snprintf(out, cap, "%s%s", script != NULL ? script : "",
		     info != NULL ? info : "");
	if (n < 0 || (size_t)n >= cap)
		out[0] = '\0';
}

int request_header_param(const char *header, char *out, size_t cap)
{
	size_t len = strlen(header);

	if (len + sizeof("HTTP_") > cap)
		return -1;
	memcpy(out, "HTTP_", 5);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)header[i];

		out[5 + i] = c == '-' ? '_' : (char)toupper(c);
	}
	out[5 + len] = '\0';
	return 0;
}

/* A hex digit's value, or -1. */
static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes text[0..len) ('+' a space, %XX a byte) into out (cap bytes with
 * its NUL). Returns the length, or REQUEST_FORM_MALFORMED. */
static long form_decode(const char *text, size_t len, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (c == '%') {
			if (i + 2 >= len || hex_value(text[i + 1]) < 0 ||
			    hex_value(text[i + 2]) < 0)
				return REQUEST_FORM_MALFORMED;
			c = (char)(hex_value(text[i + 1]) * 16 +
				   hex_value(text[i + 2]));
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (n + 1 >= cap)
			return REQUEST_FORM_MALFORMED;
		out[n++] = c;
	}
	out[n] = '\0';
	return (long)n;
}

long request_form_value(const char *form, size_t len, const char *name,
			char *out, size_t cap)
{
	size_t name_len = strlen(name), at = 0;
	long found = REQUEST_FORM_ABSENT;
	char key[64];

	while (at < len) {
		const char *field = form + at;
		const char *end = memchr(field, '&', len - at);
		size_t flen = end != NULL ? (size_t)(end - field) : len - at;
		const char *eq = memchr(field, '=', flen);
		size_t klen = eq != NULL ? (size_t)(eq - field) : flen;

		at += flen + 1;
		if (flen == 0 || klen >= sizeof(key) * 3)
			continue;
		if (form_decode(field, klen, key, sizeof(key)) !=
			    (long)name_len ||
		    memcmp(key, name, name_len) != 0)
			continue;
		if (found != REQUEST_FORM_ABSENT)
			return REQUEST_FORM_MALFORMED; /* given twice */
		found = eq != NULL ?
				form_decode(eq + 1, flen - klen - 1, out, cap) :
				form_decode("", 0, out, cap);
		if (found < 0)
			return REQUEST_FORM_MALFORMED;
	}
	return found;
}

const char *request_query(const struct request *req)
{
	const char *query = request_param(req, "QUERY_STRING");
	const char *uri;

	if (query != NULL && query[0] != '\0')
		return query;
	uri = request_param(req, "REQUEST_URI");
	if (uri != NULL && (uri = strchr(uri, '?')) != NULL)
		return uri + 1;
	return "";
}
