/* transport_pick.c - which transport (see transport_pick.h). */
#include "config.h"

#include <curl/curl.h>

#include "transport_command.h"
#include "transport_http.h"
#include "transport_pick.h"

int transport_pick_global_init(struct error *err)
{
	CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);

	if (rc != CURLE_OK)
		return error_set(err, "libcurl initialisation: %s",
				 curl_easy_strerror(rc));
	return 0;
}

void transport_pick_global_cleanup(void)
{
	curl_global_cleanup();
}

struct transport *transport_pick(const struct transport_options *options,
				 struct error *err)
{
	if (options->url != NULL && options->url[0] != '\0')
		return transport_http_new(options, err);
	return transport_command_new(options, err);
}
