/* transport_http.c - the HTTP backend of transport.h: one POST with
 * libcurl's easy interface, signed as Standard Webhooks when a secret is
 * given; a 429 or 503's Retry-After is read for the caller. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "curlopts.h"
#include "log.h"
#include "signature.h"
#include "transport_http.h"

/* Room in a header line beyond a signature: the name and a key. */
#define TRANSPORT_LINE_EXTRA 320
/* A Retry-After longer than a week is read as a week. */
#define RETRY_AFTER_MAX_S (86400L * 7)

struct http {
	struct transport base;            /* first: a struct transport * */
	struct transport_options options;
	CURL *curl;
	struct signature_keyring *ring;   /* NULL: unsigned */
	char curl_error[CURL_ERROR_SIZE];
	char response[TRANSPORT_OUTPUT_KEEP + 1]; /* first bytes of the body */
	size_t response_len;
};

/* Keeps the first bytes of a response body for the detail. */
static size_t keep_response(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct http *h = ctx;
	size_t len = size * nmemb;
	size_t room = TRANSPORT_OUTPUT_KEEP - h->response_len;
	size_t n = len < room ? len : room;

	memcpy(h->response + h->response_len, data, n);
	h->response_len += n;
	h->response[h->response_len] = '\0';
	return len;
}

/* The options that are the same on every attempt. Returns 0, or -1 with err
 * naming the option libcurl refused. */
static int setup_curl(struct http *h, struct error *err)
{
	const struct transport_options *o = &h->options;
	CURL *c = h->curl;
	CURLcode rc;
	const char *what;

#define SET(option, value)                              \
	do {                                            \
		what = #option;                         \
		rc = curl_easy_setopt(c, option, value); \
		if (rc != CURLE_OK)                     \
			goto refused;                   \
	} while (0)

	/* The whole attempt within the timeout, no signals, TLS verified;
	 * a redirect is an answer that is not 2xx: retried, never followed
	 * (the payment would go where the configuration does not say). */
	if (curlopts_safe(c, o->timeout_ms, false, o->user_agent, err) != 0)
		return -1;
	SET(CURLOPT_URL, o->url);
	SET(CURLOPT_POST, 1L);
	SET(CURLOPT_WRITEFUNCTION, keep_response);
	SET(CURLOPT_WRITEDATA, h);
	SET(CURLOPT_ERRORBUFFER, h->curl_error);
#undef SET
	return 0;
refused:
	return error_set(err, "libcurl refused %s: %s", what,
			 curl_easy_strerror(rc));
}

/* Appends "name: value" to *list ("name:" for an empty value, which tells
 * libcurl to leave out a header it would add). Returns 0, or -1 when out of
 * memory. */
static int add_header(struct curl_slist **list, const char *name,
		      const char *value)
{
	char line[SIGNATURE_TEXT_MAX + TRANSPORT_LINE_EXTRA];
	struct curl_slist *grown;

	snprintf(line, sizeof(line), "%s:%s%s", name, value[0] != '\0' ? " " : "",
		 value);
	grown = curl_slist_append(*list, line);
	if (grown == NULL)
		return -1;
	*list = grown;
	return 0;
}

static int http_send(struct transport *t, const char *key, const char *body,
		     size_t body_len, struct transport_outcome *out,
		     struct error *err)
{
	struct http *h = (struct http *)t;
	struct curl_slist *headers = NULL;
	char timestamp[24], signature[SIGNATURE_TEXT_MAX];
	CURLcode rc;
	long status = 0;
	int result = -1;

	/* "Expect:" turns off curl's 100-continue for large bodies: one
	 * round trip fewer, and receivers that ignore it do not stall. */
	if (add_header(&headers, "Content-Type", "application/json") != 0 ||
	    add_header(&headers, h->options.key_header, key) != 0 ||
	    add_header(&headers, "Expect", "") != 0)
		goto oom;
	if (h->ring != NULL) {
		/* A fresh timestamp on every attempt, so a retry days later
		 * still passes the receiver's tolerance; the id stays. */
		snprintf(timestamp, sizeof(timestamp), "%lld",
			 (long long)time(NULL));
		if (signature_sign_standard(h->ring, key, timestamp, body,
					    body_len, signature, err) != 0) {
			transport_detail_set(out, err->message, "", 0);
			goto out;
		}
		if (add_header(&headers, "webhook-id", key) != 0 ||
		    add_header(&headers, "webhook-timestamp", timestamp) != 0 ||
		    add_header(&headers, "webhook-signature", signature) != 0)
			goto oom;
	}
	h->response_len = 0;
	h->response[0] = '\0';
	h->curl_error[0] = '\0';
	if (curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
			     (curl_off_t)body_len) != CURLE_OK) {
		error_set(err, "libcurl refused the request's options");
		transport_detail_set(out, err->message, "", 0);
		goto out;
	}
	rc = curl_easy_perform(h->curl);
	result = 0;
	if (rc != CURLE_OK) {
		char prefix[64];

		out->timed_out = rc == CURLE_OPERATION_TIMEDOUT;
		snprintf(prefix, sizeof(prefix), "curl %d: ", (int)rc);
		/* The error buffer names host and port, never the path or the
		 * query of the URL. */
		if (h->curl_error[0] != '\0')
			transport_detail_set(out, prefix, h->curl_error,
				   strlen(h->curl_error));
		else
			transport_detail_set(out, prefix, curl_easy_strerror(rc),
				   strlen(curl_easy_strerror(rc)));
		goto out;
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	out->http_status = status;
	out->delivered = status >= 200 && status <= 299;
	if (status == 429 || status == 503) {
		curl_off_t seconds = 0;

		/* libcurl reads both forms (delta-seconds and an HTTP date);
		 * 0 when the header is absent or says nothing usable. */
		if (curl_easy_getinfo(h->curl, CURLINFO_RETRY_AFTER,
				      &seconds) == CURLE_OK && seconds > 0)
			out->retry_after_ms = seconds > RETRY_AFTER_MAX_S
						      ? RETRY_AFTER_MAX_S * 1000
						      : (long)seconds * 1000;
	}
	{
		char prefix[48];

		snprintf(prefix, sizeof(prefix), "HTTP %ld%s", status,
			 h->response_len > 0 ? ": " : "");
		transport_detail_set(out, prefix, h->response, h->response_len);
	}
	goto out;
oom:
	error_set(err, "transport: out of memory building the request headers");
	transport_detail_set(out, err->message, "", 0);
out:
	/* The list is freed below: the handle must not keep pointing at it. */
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, NULL);
	curl_slist_free_all(headers);
	return result;
}

static void http_free(struct transport *t)
{
	struct http *h = (struct http *)t;

	if (h->curl != NULL)
		curl_easy_cleanup(h->curl);
	signature_keyring_free(h->ring);
	free(h);
}

struct transport *transport_http_new(const struct transport_options *options,
				     struct error *err)
{
	struct http *h = calloc(1, sizeof(*h));

	if (h == NULL) {
		error_set(err, "transport: out of memory");
		return NULL;
	}
	h->base.send = http_send;
	h->base.free = http_free;
	h->options = *options;
	h->curl = curl_easy_init();
	if (h->curl == NULL) {
		error_set(err, "libcurl: no easy handle (out of memory)");
		goto fail;
	}
	if (setup_curl(h, err) != 0)
		goto fail;
	/* Without an asynchronous resolver a DNS look-up ignores the
	 * timeout, and an attempt could outlast the lease. */
	if ((curl_version_info(CURLVERSION_NOW)->features &
	     CURL_VERSION_ASYNCHDNS) == 0)
		log_warn("this libcurl resolves names synchronously: a slow DNS "
			 "server can stretch an attempt beyond its timeout; use "
			 "an IP address in the URL");
	if (options->secret != NULL) {
		char *secrets[1] = { (char *)options->secret };

		h->ring = signature_keyring_new(secrets, 1, SECRET_WHSEC_BASE64,
						err);
		if (h->ring == NULL)
			goto fail;
	}
	return &h->base;
fail:
	http_free(&h->base);
	return NULL;
}
