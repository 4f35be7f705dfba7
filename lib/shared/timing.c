/* timing.c - the monotonic clock (see timing.h). */
#include "config.h"

#include <time.h>

#include "timing.h"

int64_t timing_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
