/* curlopts.c - the options every HTTP request shares (curlopts.h). */
#include "config.h"

#include "curlopts.h"

int curlopts_safe(CURL *h, long timeout_ms, bool https_only,
		  const char *user_agent, struct error *err)
{
	CURLcode rc;
	const char *what;

#define SET(option, value)                               \
	do {                                             \
		what = #option;                          \
		rc = curl_easy_setopt(h, option, value); \
		if (rc != CURLE_OK)                      \
			goto refused;                    \
	} while (0)

	SET(CURLOPT_TIMEOUT_MS, timeout_ms);
	SET(CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_SSL_VERIFYPEER, 1L);
	SET(CURLOPT_SSL_VERIFYHOST, 2L);
#if LIBCURL_VERSION_NUM >= 0x075500
	SET(CURLOPT_PROTOCOLS_STR, https_only ? "https" : "http,https");
#else
	SET(CURLOPT_PROTOCOLS, https_only ? (long)CURLPROTO_HTTPS
					  : (long)(CURLPROTO_HTTP |
						   CURLPROTO_HTTPS));
#endif
	SET(CURLOPT_USERAGENT, user_agent);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
#undef SET
	return 0;
refused:
	return error_set(err, "libcurl refused %s: %s", what,
			 curl_easy_strerror(rc));
}
