/* error.h - a bounded, human-readable error message that failing calls fill in.
 *
 * Functions in lib/ return 0 / -1 (or NULL) and put the detail here; the caller
 * logs it once, where the request is answered. Messages never contain secrets.
 */
#ifndef PAYHOOK_ERROR_H
#define PAYHOOK_ERROR_H

#include <stddef.h>

#define ERROR_MESSAGE_MAX 256

struct error {
	char message[ERROR_MESSAGE_MAX];
};

/* Formats the message into err (truncated to fit). err may be NULL. Always
 * returns -1 so callers can write "return error_set(err, ...);". */
int error_set(struct error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Empties the message. err may be NULL. Can't fail. */
void error_clear(struct error *err);

#endif
