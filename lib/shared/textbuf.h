/* textbuf.h - a text growing in a caller's fixed buffer, which remembers
 * running out of room, so a renderer writes on and checks once at the end.
 */
#ifndef PAYHOOK_TEXTBUF_H
#define PAYHOOK_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

struct textbuf {
	char *buf;   /* the caller's, cap bytes; NUL-terminated while !full */
	size_t cap;
	size_t len;
	bool full;   /* something did not fit: the text is cut short */
};

/* A textbuf over buf (cap bytes, at least 1). Can't fail. */
struct textbuf textbuf_init(char *buf, size_t cap);

/* Appends the printf-formatted text; sets full instead when it does not
 * fit (and appends nothing more after that). Can't fail. */
void textbuf_printf(struct textbuf *tb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Appends text with &, <, >, " and ' escaped for HTML. Can't fail. */
void textbuf_html(struct textbuf *tb, const char *text);

#endif
