/* url.h - a URL read by libcurl's own parser (prefix url_), so a URL that
 * payhook judges (an API base that must stay on the machine, a
 * certificate's address that must be on an allowed host) is read exactly
 * as libcurl will read it when it connects: no hand-written parsing that
 * a URL with userinfo ("http://127.0.0.1:1@other:9") could fool.
 */
#ifndef PAYHOOK_URL_H
#define PAYHOOK_URL_H

#include <stdbool.h>

#include "error.h"

#define URL_SCHEME_MAX 15
#define URL_HOST_MAX 255
#define URL_PATH_MAX 1023

/* A URL's parts as libcurl reads them. */
struct url_parts {
	char scheme[URL_SCHEME_MAX + 1]; /* lower case: "https" */
	char host[URL_HOST_MAX + 1];     /* an IPv6 address in brackets */
	long port;                       /* given, or the scheme's default */
	bool port_given;
	char path[URL_PATH_MAX + 1];     /* "/" when none */
	bool userinfo;                   /* a user or a password */
	bool query, fragment;
};

/* Reads text as an absolute URL (http or https only). Returns 0 with out
 * filled, or -1 with err saying why it is not one (out undefined). */
int url_parse(const char *text, struct url_parts *out, struct error *err);

/* Whether host (as url_parse gives it) is a loopback address:
 * 127.0.0.0/8, [::1] or localhost. Can't fail. */
bool url_host_loopback(const char *host);

#endif
