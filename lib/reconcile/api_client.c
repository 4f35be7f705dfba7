/* api_client.c - the polite GET of a provider's list API (api_client.h). */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "api_client.h"
#include "curlopts.h"
#include "log.h"
#include "secret.h"
#include "timing.h"

/* The largest page read (Stripe's 100 events are far below). */
#define BODY_MAX (32L * 1024 * 1024)
/* The longest Retry-After waited for; longer ends the page. */
#define RETRY_AFTER_MAX_S 600L
/* Retry-After answers waited for per page, beside the tries. */
#define RETRY_AFTER_WAITS_MAX 10
/* Back-off after a failed try: 1 s, doubling, at most 30 s. */
#define BACKOFF_FIRST_MS 1000L
#define BACKOFF_MAX_MS 30000L

/* The media types of a POST's body. */
#define JSON_TYPE "Content-Type: application/json"
#define FORM_TYPE "Content-Type: application/x-www-form-urlencoded"

/* What a request sends: a GET, a POST of JSON, a POST of a form. */
enum method { METHOD_GET, METHOD_JSON, METHOD_FORM };

struct api_client {
	struct api_client_options options;
	char *auth_header;     /* NULL: none (yet) */
	char **extra;          /* options.headers, copied; NULL-terminated */
	CURL *curl;
	/* The headers of a GET: the key's and the extra ones. */
	struct curl_slist *headers;
	/* The headers of a POST of JSON: those and Content-Type JSON. */
	struct curl_slist *post_headers;
	long last_status;      /* of the last answer; 0: none */
	char curl_error[CURL_ERROR_SIZE];
	char *body;
	size_t body_len, body_cap;
	bool too_large;
	long retry_after_s;    /* of the last answer; -1: none */
	char link[API_CLIENT_LINK_MAX]; /* of the last answer; "": none */
	int64_t last_start_us; /* the last request's start; 0: none yet */
	unsigned long requests;
};

int api_client_global_init(struct error *err)
{
	CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);

	if (rc != CURLE_OK)
		return error_set(err, "libcurl: %s", curl_easy_strerror(rc));
	return 0;
}

void api_client_global_cleanup(void)
{
	curl_global_cleanup();
}

static size_t keep_body(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct api_client *c = ctx;
	size_t len = size * nmemb;

	if (c->body_len + len > (size_t)BODY_MAX) {
		c->too_large = true;
		return 0; /* ends the transfer */
	}
	if (c->body_len + len + 1 > c->body_cap) {
		size_t cap = (c->body_len + len + 1) * 2;
		char *grown = realloc(c->body, cap);

		if (grown == NULL)
			return 0;
		c->body = grown;
		c->body_cap = cap;
	}
	memcpy(c->body + c->body_len, data, len);
	c->body_len += len;
	c->body[c->body_len] = '\0';
	return len;
}

/* Reads Retry-After in seconds (an HTTP date is taken as absent). */
static size_t read_header(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct api_client *c = ctx;
	size_t len = size * nmemb;
	static const char name[] = "retry-after:";
	static const char link[] = "link:";
	char digits[16];
	size_t i = sizeof(name) - 1, n = 0;

	if (len > sizeof(link) - 1 &&
	    strncasecmp(data, link, sizeof(link) - 1) == 0) {
		size_t from = sizeof(link) - 1, end = len;

		while (from < len && (data[from] == ' ' || data[from] == '\t'))
			from++;
		while (end > from && (data[end - 1] == '\r' ||
				      data[end - 1] == '\n'))
			end--;
		/* A Link longer than kept is dropped, never cut: a cut one
		 * could name another page. */
		if (end - from < sizeof(c->link)) {
			memcpy(c->link, data + from, end - from);
			c->link[end - from] = '\0';
		}
		return len;
	}

	if (len > sizeof(name) - 1 && strncasecmp(data, name, i) == 0) {
		while (i < len && (data[i] == ' ' || data[i] == '\t'))
			i++;
		while (i < len && data[i] >= '0' && data[i] <= '9' &&
		       n < sizeof(digits) - 1)
			digits[n++] = data[i++];
		digits[n] = '\0';
		if (n > 0 && n < 9)
			c->retry_after_s = strtol(digits, NULL, 10);
	}
	return len;
}

static int setup(struct api_client *c, struct error *err)
{
	CURL *h = c->curl;
	CURLcode rc;
	const char *what;

#define SET(option, value)                               \
	do {                                             \
		what = #option;                          \
		rc = curl_easy_setopt(h, option, value); \
		if (rc != CURLE_OK)                      \
			goto refused;                    \
	} while (0)

	/* A redirect is a failed page, never followed (the key would go
	 * where the configuration does not say). */
	if (curlopts_safe(h, c->options.timeout_ms, c->options.https_only,
			  "payhook-reconcile/" PACKAGE_VERSION, err) != 0)
		return -1;
	SET(CURLOPT_HTTPGET, 1L);
	SET(CURLOPT_HTTPHEADER, c->headers);
	SET(CURLOPT_WRITEFUNCTION, keep_body);
	SET(CURLOPT_WRITEDATA, c);
	SET(CURLOPT_HEADERFUNCTION, read_header);
	SET(CURLOPT_HEADERDATA, c);
	SET(CURLOPT_ERRORBUFFER, c->curl_error);
#undef SET
	return 0;
refused:
	return error_set(err, "libcurl refused %s: %s", what,
			 curl_easy_strerror(rc));
}

/* Frees list, wiping each line first (one may carry a key). */
static void free_list(struct curl_slist *list)
{
	for (struct curl_slist *l = list; l != NULL; l = l->next)
		secret_text_wipe(l->data);
	curl_slist_free_all(list);
}

/* Appends line to *list. Returns 0, or -1 when out of memory (*list
 * unchanged). */
static int append(struct curl_slist **list, const char *line)
{
	struct curl_slist *grown = curl_slist_append(*list, line);

	if (grown == NULL)
		return -1;
	*list = grown;
	return 0;
}

/* Builds *out: auth (NULL: none), the extra headers and content_type
 * (NULL: none); NULL is a list of none. Returns 0, or -1 when out of
 * memory (*out NULL). */
static int header_list(const struct api_client *c, const char *auth,
		       const char *content_type, struct curl_slist **out)
{
	struct curl_slist *list = NULL;
	int rc = 0;

	if (auth != NULL)
		rc |= append(&list, auth);
	for (size_t i = 0; c->extra != NULL && c->extra[i] != NULL; i++)
		rc |= append(&list, c->extra[i]);
	if (content_type != NULL)
		rc |= append(&list, content_type);
	if (rc != 0) {
		free_list(list);
		list = NULL;
	}
	*out = list;
	return rc == 0 ? 0 : -1;
}

int api_client_set_auth(struct api_client *c, const char *auth_header,
			struct error *err)
{
	struct curl_slist *get = NULL, *post = NULL;
	char *copy;

	if (c->auth_header != NULL && auth_header != NULL &&
	    strcmp(c->auth_header, auth_header) == 0)
		return 0;
	copy = auth_header != NULL ? strdup(auth_header) : NULL;
	if ((auth_header != NULL && copy == NULL) ||
	    header_list(c, copy, NULL, &get) != 0 ||
	    header_list(c, copy, JSON_TYPE, &post) != 0) {
		free_list(get);
		secret_text_wipe(copy);
		free(copy);
		return error_set(err, "reconcile: out of memory");
	}
	free_list(c->headers);
	free_list(c->post_headers);
	secret_text_wipe(c->auth_header);
	free(c->auth_header);
	c->auth_header = copy;
	c->headers = get;
	c->post_headers = post;
	return 0;
}

/* Copies the NULL-terminated headers into c->extra. Returns 0, or -1 when
 * out of memory. */
static int copy_extra(struct api_client *c, const char *const *headers)
{
	size_t n = 0;

	while (headers != NULL && headers[n] != NULL)
		n++;
	c->extra = calloc(n + 1, sizeof(*c->extra));
	if (c->extra == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		if ((c->extra[i] = strdup(headers[i])) == NULL)
			return -1;
	return 0;
}

struct api_client *api_client_new(const struct api_client_options *options,
				  struct error *err)
{
	struct api_client *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		error_set(err, "reconcile: out of memory");
		return NULL;
	}
	c->options = *options;
	c->options.auth_header = NULL;
	c->options.headers = NULL;
	c->curl = curl_easy_init();
	if (c->curl == NULL || copy_extra(c, options->headers) != 0) {
		error_set(err, "reconcile: out of memory");
		goto fail;
	}
	if (api_client_set_auth(c, options->auth_header, err) != 0 ||
	    setup(c, err) != 0)
		goto fail;
	return c;
fail:
	api_client_free(c);
	return NULL;
}

void api_client_free(struct api_client *c)
{
	if (c == NULL)
		return;
	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
	free_list(c->headers);
	free_list(c->post_headers);
	secret_text_wipe(c->auth_header);
	free(c->auth_header);
	for (size_t i = 0; c->extra != NULL && c->extra[i] != NULL; i++)
		free(c->extra[i]);
	free(c->extra);
	free(c->body);
	free(c);
}

long api_client_retry_after(const struct api_client *c)
{
	return c->retry_after_s;
}

unsigned long api_client_requests(const struct api_client *c)
{
	return c->requests;
}

/* Sleeps until until_us (timing_now_us), in steps that ask stopping,
 * calling on_wait before a wait of a second or more and every
 * API_CLIENT_WAIT_CALL_S seconds in it. Returns 0, or -1 with err set
 * (stopped, past the deadline, or on_wait's error). */
static int sleep_until(const struct api_client *c, int64_t until_us,
		       struct error *err)
{
	const struct api_client_options *o = &c->options;
	int64_t call_us = until_us - timing_now_us() >= 1000000 ?
				  timing_now_us() : INT64_MAX;

	if (o->deadline_us != 0 && until_us > o->deadline_us)
		return error_set(err, "a wait of %lld s would end past the "
				 "pass's time (reconcile_max_pass_s)",
				 (long long)((until_us - timing_now_us()) /
					     1000000));
	for (;;) {
		int64_t now = timing_now_us(), left = until_us - now;
		struct timespec ts;

		if (o->stopping != NULL && o->stopping())
			return error_set(err, "stopped");
		if (left <= 0)
			return 0;
		if (o->on_wait != NULL && now >= call_us) {
			if (o->on_wait(o->wait_ctx, err) != 0)
				return -1;
			call_us = now + API_CLIENT_WAIT_CALL_S * 1000000LL;
		}
		if (left > 100000)
			left = 100000;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left * 1000;
		nanosleep(&ts, NULL);
	}
}

/* Makes the next request m: a GET, or a POST of payload with the
 * client's headers (JSON) or form_headers (a form). Returns 0, or -1 when
 * libcurl refuses. */
static int set_method(struct api_client *c, enum method m, const char *payload,
		      struct curl_slist *form_headers)
{
	if (m == METHOD_GET)
		return curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L) == CURLE_OK &&
			       curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER,
						c->headers) == CURLE_OK ?
		       0 : -1;
	return curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, payload) == CURLE_OK &&
		       curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE,
					(long)strlen(payload)) == CURLE_OK &&
		       curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER,
					m == METHOD_FORM ? form_headers :
							   c->post_headers) == CURLE_OK ?
	       0 : -1;
}

/* One request, paced: its HTTP status, 0 when no answer came, or -1
 * with err set when the wait before it failed. */
static long send_once(struct api_client *c, const char *url, enum method m,
		      const char *payload, struct curl_slist *form_headers,
		      struct error *err)
{
	int64_t gap_us = 1000000 / c->options.rate_per_s;
	long status = 0;
	CURLcode rc;

	if (c->last_start_us != 0 &&
	    sleep_until(c, c->last_start_us + gap_us, err) != 0)
		return -1;
	c->last_start_us = timing_now_us();
	c->requests++;
	c->body_len = 0;
	if (c->body != NULL)
		c->body[0] = '\0';
	c->too_large = false;
	c->retry_after_s = -1;
	c->link[0] = '\0';
	c->curl_error[0] = '\0';
	c->last_status = 0;
	if (curl_easy_setopt(c->curl, CURLOPT_URL, url) != CURLE_OK ||
	    set_method(c, m, payload, form_headers) != 0)
		return 0;
	rc = curl_easy_perform(c->curl);
	if (rc != CURLE_OK)
		return 0;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	c->last_status = status;
	return status;
}

/* One request of api_client_get, _post or _post_form (m, payload,
 * form_headers as set_method takes them), paced and retried. */
static int request(struct api_client *c, const char *url, enum method m,
		   const char *payload, struct curl_slist *form_headers,
		   const char **body, size_t *len, struct error *err)
{
	long backoff_ms = BACKOFF_FIRST_MS;
	int tries = 0, waits = 0;
	/* A form carries its own credential (a token request). */
	bool authorized = m != METHOD_FORM && c->options.authorize != NULL;
	bool renew = false, renewed = false;

	for (;;) {
		long status;

		if (authorized &&
		    c->options.authorize(c->options.authorize_ctx, c, renew,
					 err) != 0)
			return -1;
		renew = false;
		status = send_once(c, url, m, payload, form_headers, err);
		if (status < 0)
			return -1;
		if (status == 200 && !c->too_large) {
			if (c->body == NULL && keep_body("", 1, 0, c) != 0)
				return error_set(err, "out of memory");
			*body = c->body != NULL ? c->body : "";
			*len = c->body_len;
			return 0;
		}
		if (status == 200)
			return error_set(err, "the page is larger than %ld "
					 "bytes", BODY_MAX);
		/* A credential that expired early (revoked, or the clocks
		 * disagree): renewed once, the request sent again. */
		if (status == 401 && authorized && !renewed) {
			renew = renewed = true;
			log_info("HTTP 401: renewing the credential and asking "
				 "again");
			continue;
		}
		if (status == 401 || status == 403)
			return error_set(err, "HTTP %ld: the API key is refused "
					 "or lacks the permission to list "
					 "events", status);
		if ((status == 429 || status == 503) && c->retry_after_s >= 0) {
			if (c->options.no_wait)
				return error_set(err, "HTTP %ld: asked to wait "
						 "%ld s", status,
						 c->retry_after_s);
			if (c->retry_after_s > RETRY_AFTER_MAX_S ||
			    ++waits > RETRY_AFTER_WAITS_MAX)
				return error_set(err, "HTTP %ld: asked to wait "
						 "%ld s", status,
						 c->retry_after_s);
			log_info("HTTP %ld with Retry-After: %ld s: waiting",
				 status, c->retry_after_s);
			if (sleep_until(c, timing_now_us() +
						   c->retry_after_s * 1000000L,
					err) != 0)
				return -1;
			continue;
		}
		/* No answer, a 5xx or a 429 without Retry-After: tried again
		 * after a back-off; anything else is final. */
		if (status != 0 && status != 429 && status < 500)
			return error_set(err, "HTTP %ld", status);
		if (++tries >= c->options.max_retries || c->options.no_wait) {
			if (status == 0)
				return error_set(err, "no answer after %d "
						 "tries: %s", tries,
						 c->too_large ? "page too large"
							      : c->curl_error);
			return error_set(err, "HTTP %ld after %d tries", status,
					 tries);
		}
		log_info("HTTP %ld%s%s: trying again in %ld ms", status,
			 status == 0 ? ", no answer: " : "",
			 status == 0 ? c->curl_error : "", backoff_ms);
		if (sleep_until(c, timing_now_us() + backoff_ms * 1000L,
				err) != 0)
			return -1;
		backoff_ms = backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
							     : backoff_ms * 2;
	}
}

int api_client_get(struct api_client *c, const char *url, const char **body,
		   size_t *len, struct error *err)
{
	return request(c, url, METHOD_GET, NULL, NULL, body, len, err);
}

int api_client_post(struct api_client *c, const char *url, const char *json,
		    const char **body, size_t *len, struct error *err)
{
	return request(c, url, METHOD_JSON, json, NULL, body, len, err);
}

int api_client_post_form(struct api_client *c, const char *url,
			 const char *form, const char *auth_header,
			 const char **body, size_t *len, struct error *err)
{
	struct curl_slist *list;
	int rc;

	if (header_list(c, auth_header, FORM_TYPE, &list) != 0)
		return error_set(err, "reconcile: out of memory");
	rc = request(c, url, METHOD_FORM, form, list, body, len, err);
	/* The handle never keeps a list about to be freed. */
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	free_list(list);
	return rc;
}

long api_client_last_answer(const struct api_client *c, const char **body,
			    size_t *len)
{
	*body = c->body != NULL ? c->body : "";
	*len = c->body != NULL ? c->body_len : 0;
	return c->last_status;
}

const char *api_client_link(const struct api_client *client)
{
	return client->link[0] != '\0' ? client->link : NULL;
}
