/* error.c - bounded error messages (see error.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "error.h"

int error_set(struct error *err, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -1;
}

void error_clear(struct error *err)
{
	if (err != NULL)
		err->message[0] = '\0';
}
