/* testreq.c - requests for the tests (see testreq.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testreq.h"

static long read_memory(void *ctx, char *buf, size_t cap)
{
	struct testreq *t = ctx;
	size_t n = t->len - t->pos < cap ? t->len - t->pos : cap;

	memcpy(buf, t->body + t->pos, n);
	t->pos += n;
	return (long)n;
}

void testreq_init(struct testreq *t, const char *method, const char *body,
		  size_t len)
{
	char length[32];

	memset(t, 0, sizeof(*t));
	t->body = body;
	t->len = len;
	t->req.params = t->params;
	t->req.read_body = read_memory;
	t->req.read_ctx = t;
	snprintf(length, sizeof(length), "%zu", len);
	testreq_set(t, "REQUEST_METHOD", method);
	testreq_set(t, "CONTENT_TYPE", "application/json");
	testreq_set(t, "CONTENT_LENGTH", length);
}

void testreq_set(struct testreq *t, const char *name, const char *value)
{
	size_t name_len = strlen(name);
	size_t need;
	char *slot;

	for (size_t i = 0; i < t->count; i++) {
		if (strncmp(t->params[i], name, name_len) == 0 &&
		    t->params[i][name_len] == '=') {
			memmove(&t->params[i], &t->params[i + 1],
				(t->count - i) * sizeof(t->params[0]));
			t->count--;
			break;
		}
	}
	if (value == NULL)
		return;
	need = name_len + strlen(value) + 2;
	if (t->count >= TESTREQ_PARAMS_MAX || t->used + need > sizeof(t->storage)) {
		fprintf(stderr, "testreq: too many or too long variables\n");
		abort();
	}
	slot = t->storage + t->used;
	snprintf(slot, need, "%s=%s", name, value);
	t->used += need;
	t->params[t->count++] = slot;
	t->params[t->count] = NULL;
}

void testreq_header(struct testreq *t, const char *name, const char *value)
{
	char param[128];

	if (request_header_param(name, param, sizeof(param)) != 0) {
		fprintf(stderr, "testreq: header name too long\n");
		abort();
	}
	testreq_set(t, param, value);
}

void testreq_rewind(struct testreq *t)
{
	t->pos = 0;
}
