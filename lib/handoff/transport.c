/* transport.c - the interface of the hand-off's and the alerts' transports
 * and what both backends share (see transport.h). */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "transport.h"

void transport_free(struct transport *t)
{
	if (t != NULL)
		t->free(t);
}

bool transport_url_valid(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0 ||
	       strncasecmp(url, "https://", 8) == 0;
}

void transport_outcome_init(struct transport_outcome *out)
{
	memset(out, 0, sizeof(*out));
	out->exit_status = -1;
	out->retry_after_ms = -1;
}

int transport_send(struct transport *t, const char *key, const char *body,
		   size_t body_len, struct transport_outcome *out,
		   struct error *err)
{
	return t->send(t, key, body, body_len, out, err);
}

void transport_detail_set(struct transport_outcome *out, const char *prefix,
			  const char *text, size_t len)
{
	size_t used = 0, prefix_len = strlen(prefix);

	for (size_t i = 0; i < prefix_len && used + 1 < sizeof(out->detail); i++)
		out->detail[used++] = prefix[i];
	for (size_t i = 0; i < len && used + 1 < sizeof(out->detail); i++) {
		unsigned char c = (unsigned char)text[i];

		out->detail[used++] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
	}
	/* Trailing white space (a final newline) says nothing. */
	while (used > 0 && out->detail[used - 1] == ' ')
		used--;
	out->detail[used] = '\0';
}
