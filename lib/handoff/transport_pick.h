/* transport_pick.h - which transport a hand-off or an alert uses: HTTP
 * (libcurl, transport_http.h) when a URL is configured, else the command
 * (transport_command.h). Above both backends, so that the interface they
 * implement (transport.h) depends on neither. */
#ifndef PAYHOOK_TRANSPORT_PICK_H
#define PAYHOOK_TRANSPORT_PICK_H

#include "error.h"
#include "transport.h"

/* libcurl's global set-up: once per process before any transport_pick,
 * while the process has one thread. Returns 0, or -1 with err set. */
int transport_pick_global_init(struct error *err);

/* Undoes transport_pick_global_init. Can't fail. */
void transport_pick_global_cleanup(void);

/* Returns the HTTP transport when options->url is set, else the command's,
 * or NULL with err set (out of memory, libcurl refused an option, a bad
 * secret). Free it with transport_free. */
struct transport *transport_pick(const struct transport_options *options,
				 struct error *err);

#endif
