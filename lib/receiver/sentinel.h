/* sentinel.h - asking Redis Sentinel where the master is. hiredis 0.14 has
 * no Sentinel support of its own; this is the client side of the documented
 * protocol: SENTINEL get-master-addr-by-name, one sentinel at a time.
 */
#ifndef PAYHOOK_SENTINEL_H
#define PAYHOOK_SENTINEL_H

#include "endpoint.h"
#include "error.h"

/* Asks the sentinel at *sentinel (within timeout_ms for the connection and
 * for the answer) for the address of the master it knows as name. Returns 0
 * with *master filled, or -1 with err naming the sentinel and what failed
 * (unreachable, an error reply, or no such master). */
int sentinel_ask_master(const struct endpoint *sentinel, const char *name,
			int timeout_ms, struct endpoint *master,
			struct error *err);

#endif
