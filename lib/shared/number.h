/* number.h - the one strict decimal parser: ASCII digits only, no sign, no
 * white space, no junk, checked against a maximum without ever overflowing.
 * Content-Length, configuration values, signature timestamps and command-line
 * counts all go through it, so "+5", " 5", "5 " and "0x5" mean the same
 * thing (nothing) everywhere.
 */
#ifndef PAYHOOK_NUMBER_H
#define PAYHOOK_NUMBER_H

#include <stddef.h>
#include <stdint.h>

enum number_status {
	NUMBER_OK = 0,
	NUMBER_INVALID = -1,   /* empty, or anything but ASCII digits */
	NUMBER_TOO_LARGE = 1,  /* all digits, but larger than max */
};

/* Parses text[0..len) as a decimal number no larger than max. Returns
 * NUMBER_OK with *out set, or another status with *out untouched. A number
 * too large is told apart from junk only once every byte is a digit, so
 * "99999999999999999999x" is NUMBER_INVALID. Can't fail otherwise. */
enum number_status number_parse_n(const char *text, size_t len, uint64_t max,
				  uint64_t *out);

/* The same for a NUL-terminated text (NULL counts as empty). */
enum number_status number_parse(const char *text, uint64_t max, uint64_t *out);

#endif
