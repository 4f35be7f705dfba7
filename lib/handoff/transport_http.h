/* transport_http.h - the HTTP backend of transport.h (prefix
 * transport_http_): a POST by libcurl. */
#ifndef PAYHOOK_TRANSPORT_HTTP_H
#define PAYHOOK_TRANSPORT_HTTP_H

#include "transport.h"

/* Returns a transport POSTing to options->url, or NULL with err set (out
 * of memory, libcurl refused an option, a bad secret). Freed with
 * transport_free. */
struct transport *transport_http_new(const struct transport_options *options,
				     struct error *err);

#endif
