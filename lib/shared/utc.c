/* utc.c - Unix times as UTC text (see utc.h). */
#include "config.h"

#include <time.h>

#include "utc.h"

int utc_format(int64_t seconds, const char *fmt, char *out, size_t cap)
{
	time_t t = (time_t)seconds;
	struct tm tm;

	if (cap == 0)
		return -1;
	if ((int64_t)t != seconds || gmtime_r(&t, &tm) == NULL) {
		out[0] = '\0';
		return -1;
	}
	/* fmt is checked where it is written: utc.h gives utc_format
	 * strftime's format attribute. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	if (strftime(out, cap, fmt, &tm) == 0) {
#pragma GCC diagnostic pop
		out[0] = '\0';
		return -1;
	}
	return 0;
}
