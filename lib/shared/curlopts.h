/* curlopts.h - what every HTTP request of payhook's programs sets on its
 * libcurl handle (prefix curlopts_): payhook-dispatch's hand-off and
 * alerts, payhook-reconcile's list pages. One place, so a request never
 * goes out with TLS unchecked or following a redirect because one program
 * forgot an option.
 */
#ifndef PAYHOOK_CURLOPTS_H
#define PAYHOOK_CURLOPTS_H

#include <stdbool.h>

#include <curl/curl.h>

#include "error.h"

/* Sets on h: the whole request (connecting included) within timeout_ms, no
 * signals, no redirect followed (an answer that is not 2xx), the peer's
 * certificate and host name verified, only http and https (https alone
 * when https_only), and user_agent. The CA store is libcurl's (the
 * release's libcurl asks OpenSSL's defaults: SSL_CERT_FILE, SSL_CERT_DIR).
 * Returns 0, or -1 with err naming the option libcurl refused. */
int curlopts_safe(CURL *h, long timeout_ms, bool https_only,
		  const char *user_agent, struct error *err);

#endif
