/* request.h - the HTTP request as the web server hands it to a FastCGI or
 * CGI program: its CGI variables and a way to read the body, and the checks
 * payhook runs on it before anything else - method, length, size, media type,
 * in that order - plus the path segment that picks the provider profile.
 *
 * It knows nothing of FastCGI, so the same code serves FastCGI, plain CGI and
 * the tests.
 */
#ifndef PAYHOOK_REQUEST_H
#define PAYHOOK_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

/* The request. params is a NULL-terminated array of "NAME=value" CGI
 * variables (libfcgi's envp, or environ under plain CGI); it only needs to
 * live while the request is handled. */
struct request {
	char *const *params;
	/* Reads up to cap bytes of the body into buf. Returns how many (0 at the
	 * end of the body) or -1 when reading failed. */
	long (*read_body)(void *ctx, char *buf, size_t cap);
	void *read_ctx;
};

/* What the checks before the body decide. */
enum request_status {
	REQUEST_OK = 0,
	REQUEST_BAD_METHOD,      /* not POST */
	REQUEST_NO_LENGTH,       /* CONTENT_LENGTH absent, empty or not decimal */
	REQUEST_TOO_LARGE,       /* CONTENT_LENGTH above the cap */
	REQUEST_BAD_MEDIA_TYPE,  /* not application/json */
	REQUEST_SHORT_BODY,      /* the body ended before CONTENT_LENGTH */
};

/* The media types a body may come in. */
enum request_media {
	REQUEST_MEDIA_JSON = 0, /* application/json (charset=utf-8) */
	REQUEST_MEDIA_FORM,     /* application/x-www-form-urlencoded (Mollie's
				 * notifications) */
};

/* The longest path segment request_profile_segment returns. */
#define REQUEST_SEGMENT_MAX 64

/* The value of CGI variable name (e.g. "HTTP_STRIPE_SIGNATURE"), or NULL
 * when absent. Points into req->params. */
const char *request_param(const struct request *req, const char *name);

/* Checks method, length, size and media type (media: the body's, JSON or
 * a form), in that order, the first failure deciding; on REQUEST_OK
 * *body_len is CONTENT_LENGTH (at most max_body). *reason gets a short
 * static text for the response on failure. Reads nothing. */
enum request_status request_check_media(const struct request *req,
					size_t max_body,
					enum request_media media,
					size_t *body_len, const char **reason);

/* True when text is "application/x-www-form-urlencoded", optionally with
 * the one parameter charset=utf-8, compared case-insensitively. */
bool request_is_form_media_type(const char *text);

/* Reads exactly len bytes of the body into buf (which holds at least len).
 * Returns REQUEST_OK, or REQUEST_SHORT_BODY with *reason set when the body
 * ends early or reading fails. */
enum request_status request_read_body(const struct request *req, char *buf,
				      size_t len, const char **reason);

/* Copies the request path into out (cap bytes): REQUEST_URI without its
 * query, else SCRIPT_NAME followed by PATH_INFO; "" when it does not fit or
 * there is none. Can't fail. */
void request_path(const struct request *req, char *out, size_t cap);

/* Copies the last segment of the request path into out (REQUEST_SEGMENT_MAX
 * + 1 bytes): from REQUEST_URI without its query, else SCRIPT_NAME followed
 * by PATH_INFO. "" when there is no path or the segment is too long to be a
 * profile name. Can't fail. */
void request_profile_segment(const struct request *req, char *out);

/* True when text is "application/json", optionally with the one parameter
 * charset=utf-8 (value optionally quoted), compared case-insensitively. */
bool request_is_json_media_type(const char *text);

/* What request_form_value found. */
#define REQUEST_FORM_ABSENT (-1L)    /* no such field */
#define REQUEST_FORM_MALFORMED (-2L) /* a broken %-escape, the field twice,
				      * or a value longer than cap - 1 */

/* The value of field name in the application/x-www-form-urlencoded text
 * form[0..len) (a form body, or a query string), decoded ('+' a space,
 * %XX a byte) into out (cap bytes with its NUL). Returns its length, or
 * REQUEST_FORM_ABSENT or REQUEST_FORM_MALFORMED (out then undefined).
 * Fields of other names are skipped unread. Can't fail otherwise. */
long request_form_value(const char *form, size_t len, const char *name,
			char *out, size_t cap);

/* The request's query string: QUERY_STRING, else what follows '?' in
 * REQUEST_URI; "" when none. Points into req->params. */
const char *request_query(const struct request *req);

/* The CGI variable name of an HTTP header: "HTTP_" + the name upper-cased
 * with '-' as '_', into out (cap bytes). Returns 0, or -1 when it does not
 * fit. */
int request_header_param(const char *header, char *out, size_t cap);

#endif
