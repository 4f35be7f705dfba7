/* transport_command.h - the command backend of transport.h (prefix
 * transport_command_): /bin/sh -c per attempt. */
#ifndef PAYHOOK_TRANSPORT_COMMAND_H
#define PAYHOOK_TRANSPORT_COMMAND_H

#include "transport.h"

/* Returns a transport running options->command, or NULL with err set (out
 * of memory). Freed with transport_free. */
struct transport *transport_command_new(const struct transport_options *options,
					struct error *err);

#endif
