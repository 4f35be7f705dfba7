/* timing.h - the one clock payhook measures durations with: monotonic, so
 * leases and elapsed times never jump with the wall clock.
 */
#ifndef PAYHOOK_TIMING_H
#define PAYHOOK_TIMING_H

#include <stdint.h>

/* Microseconds on CLOCK_MONOTONIC. Can't fail. */
int64_t timing_now_us(void);

#endif
