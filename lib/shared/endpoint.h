/* endpoint.h - lists of servers written as "host[:port] host[:port] ...",
 * for a cluster's nodes (mysql_nodes) and Redis Sentinels (redis_sentinels).
 */
#ifndef PAYHOOK_ENDPOINT_H
#define PAYHOOK_ENDPOINT_H

#include <stddef.h>

#include "error.h"

#define ENDPOINT_HOST_MAX 255
#define ENDPOINT_LIST_MAX 16

struct endpoint {
	char host[ENDPOINT_HOST_MAX + 1];
	int port;
};

/* Parses text, white-space separated "host" or "host:port" items (an IPv6
 * address as "[addr]:port"), into out[0..*count) (at most
 * ENDPOINT_LIST_MAX), default_port where an item has none. Returns 0, or -1
 * with err saying what is wrong (an empty list, a bad port, too many). */
int endpoint_list_parse(const char *text, int default_port,
			struct endpoint *out, size_t *count, struct error *err);

#endif
