/* endpoint.c - "host[:port]" lists (see endpoint.h). */
#include "config.h"

#include <string.h>

#include "endpoint.h"
#include "number.h"

static int parse_item(const char *item, size_t len, int default_port,
		      struct endpoint *out, struct error *err)
{
	const char *host = item, *colon = NULL;
	size_t host_len = len;
	uint64_t port;

	if (len > 0 && item[0] == '[') {
		const char *close = memchr(item, ']', len);

		if (close == NULL)
			return error_set(err, "an IPv6 address lacks its ]");
		host = item + 1;
		host_len = (size_t)(close - host);
		if (close + 1 < item + len) {
			if (close[1] != ':')
				return error_set(err, "expected :port after ]");
			colon = close + 1;
		}
	} else {
		colon = memchr(item, ':', len);
		if (colon != NULL)
			host_len = (size_t)(colon - item);
	}
	if (host_len == 0 || host_len > ENDPOINT_HOST_MAX)
		return error_set(err, "a host is empty or longer than %d bytes",
				 ENDPOINT_HOST_MAX);
	memcpy(out->host, host, host_len);
	out->host[host_len] = '\0';
	out->port = default_port;
	if (colon != NULL) {
		if (number_parse_n(colon + 1, (size_t)(item + len - colon - 1),
				   65535, &port) != NUMBER_OK || port == 0)
			return error_set(err, "a port is not a number from 1 "
					 "to 65535");
		out->port = (int)port;
	}
	return 0;
}

int endpoint_list_parse(const char *text, int default_port,
			struct endpoint *out, size_t *count, struct error *err)
{
	const char *p = text != NULL ? text : "";

	*count = 0;
	for (;;) {
		size_t len;

		p += strspn(p, " \t");
		len = strcspn(p, " \t");
		if (len == 0)
			break;
		if (*count >= ENDPOINT_LIST_MAX)
			return error_set(err, "more than %d servers",
					 ENDPOINT_LIST_MAX);
		if (parse_item(p, len, default_port, &out[*count], err) != 0)
			return -1;
		(*count)++;
		p += len;
	}
	if (*count == 0)
		return error_set(err, "no server listed");
	return 0;
}
