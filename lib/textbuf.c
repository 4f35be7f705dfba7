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
	for (const char *p = text; *p != '\0' && !tb->full; p++) {
		switch (*p) {
		case '&':
			textbuf_printf(tb, "&amp;");
			break;
		case '<':
			textbuf_printf(tb, "&lt;");
			break;
		case '>':
			textbuf_printf(tb, "&gt;");
			break;
		case '"':
			textbuf_printf(tb, "&quot;");
			break;
		case '\'':
			textbuf_printf(tb, "&#39;");
			break;
		default:
			textbuf_printf(tb, "%c", *p);
			break;
		}
	}
}
