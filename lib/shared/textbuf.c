/* textbuf.c - text in a fixed buffer (see textbuf.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "textbuf.h"

struct textbuf textbuf_init(char *buf, size_t cap)
{
	struct textbuf tb = { buf, cap, 0, false };

	buf[0] = '\0';
	return tb;
}

void textbuf_printf(struct textbuf *tb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (tb->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(tb->buf + tb->len, tb->cap - tb->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= tb->cap - tb->len) {
		tb->full = true;
		return;
	}
	tb->len += (size_t)n;
}

void textbuf_html(struct textbuf *tb, const char *text)
{
	static const char *const entities[][2] = {
		{ "&", "&amp;" }, { "<", "&lt;" }, { ">", "&gt;" },
		{ "\"", "&quot;" }, { "'", "&#39;" },
	};

	for (const char *p = text; *p != '\0' && !tb->full; p++) {
		const char *entity = NULL;

		for (size_t i = 0; i < sizeof(entities) / sizeof(entities[0]); i++)
			if (*p == entities[i][0][0])
				entity = entities[i][1];
		if (entity != NULL)
			textbuf_printf(tb, "%s", entity);
		else
			textbuf_printf(tb, "%c", *p);
	}
}
