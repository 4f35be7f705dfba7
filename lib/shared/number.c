/* number.c - the strict decimal parser (see number.h). */
#include "config.h"

#include <string.h>

#include "number.h"

enum number_status number_parse_n(const char *text, size_t len, uint64_t max,
				  uint64_t *out)
{
	uint64_t value = 0;
	int too_large = 0;

	if (text == NULL || len == 0)
		return NUMBER_INVALID;
	for (size_t i = 0; i < len; i++) {
		uint64_t digit = (uint64_t)(unsigned char)text[i] - '0';

		if (text[i] < '0' || text[i] > '9')
			return NUMBER_INVALID;
		/* Stop before value * 10 + digit can pass max (and overflow),
		 * but keep looking: junk later on is still junk. */
		if (too_large || digit > max || value > (max - digit) / 10)
			too_large = 1;
		else
			value = value * 10 + digit;
	}
	if (too_large)
		return NUMBER_TOO_LARGE;
	*out = value;
	return NUMBER_OK;
}

enum number_status number_parse(const char *text, uint64_t max, uint64_t *out)
{
	return number_parse_n(text, text != NULL ? strlen(text) : 0, max, out);
}
