/* url.c - a URL read by libcurl's own parser (see url.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <curl/curl.h>

#include "url.h"

/* Copies part of u into out (cap bytes): 1 copied, 0 absent, -1 too long
 * or refused. */
static int get_part(CURLU *u, CURLUPart what, unsigned flags, char *out,
		    size_t cap)
{
	char *text = NULL;
	CURLUcode rc = curl_url_get(u, what, &text, flags);
	int copied;

	if (rc != CURLUE_OK) {
		out[0] = '\0';
		return rc == CURLUE_NO_USER || rc == CURLUE_NO_PASSWORD ||
				       rc == CURLUE_NO_QUERY ||
				       rc == CURLUE_NO_FRAGMENT ||
				       rc == CURLUE_NO_PORT ?
			       0 : -1;
	}
	copied = strlen(text) < cap ? 1 : -1;
	if (copied == 1)
		memcpy(out, text, strlen(text) + 1);
	else
		out[0] = '\0';
	curl_free(text);
	return copied;
}

int url_parse(const char *text, struct url_parts *out, struct error *err)
{
	CURLU *u = curl_url();
	char port[16], scratch[2];
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (u == NULL)
		return error_set(err, "out of memory");
	/* No guessed scheme: "example.com" is not taken for http://. */
	if (curl_url_set(u, CURLUPART_URL, text, 0) != CURLUE_OK) {
		error_set(err, "not a URL");
		goto out;
	}
	if (get_part(u, CURLUPART_SCHEME, 0, out->scheme,
		     sizeof(out->scheme)) != 1 ||
	    (strcmp(out->scheme, "http") != 0 &&
	     strcmp(out->scheme, "https") != 0)) {
		error_set(err, "not an http:// or https:// URL");
		goto out;
	}
	if (get_part(u, CURLUPART_HOST, 0, out->host, sizeof(out->host)) != 1 ||
	    out->host[0] == '\0') {
		error_set(err, "no host, or one too long");
		goto out;
	}
	switch (get_part(u, CURLUPART_PORT, 0, port, sizeof(port))) {
	case 1:
		out->port_given = true;
		break;
	case 0:
		if (get_part(u, CURLUPART_PORT, CURLU_DEFAULT_PORT, port,
			     sizeof(port)) == 1)
			break;
		/* fall through */
	default:
		error_set(err, "a port that is not one");
		goto out;
	}
	out->port = strtol(port, NULL, 10);
	if (get_part(u, CURLUPART_PATH, 0, out->path, sizeof(out->path)) < 0) {
		error_set(err, "a path too long");
		goto out;
	}
	if (out->path[0] == '\0')
		snprintf(out->path, sizeof(out->path), "/");
	out->userinfo = get_part(u, CURLUPART_USER, 0, scratch, 1) != 0 ||
			get_part(u, CURLUPART_PASSWORD, 0, scratch, 1) != 0 ||
			get_part(u, CURLUPART_OPTIONS, 0, scratch, 1) > 0;
	out->query = get_part(u, CURLUPART_QUERY, 0, scratch, 1) != 0;
	out->fragment = get_part(u, CURLUPART_FRAGMENT, 0, scratch, 1) != 0;
	rc = 0;
out:
	curl_url_cleanup(u);
	return rc;
}

bool url_host_loopback(const char *host)
{
	struct in_addr v4;

	if (strcasecmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0)
		return true;
	/* inet_pton takes only the dotted quad: no "127.1", no octal. */
	if (inet_pton(AF_INET, host, &v4) != 1)
		return false;
	return (ntohl(v4.s_addr) >> 24) == 127;
}
