/* utc.h - Unix times written as UTC text (prefix utc_): the one place that
 * turns seconds into RFC 3339 for the providers' list APIs, the alerts,
 * the reconciler's line and the operators' commands.
 */
#ifndef PAYHOOK_UTC_H
#define PAYHOOK_UTC_H

#include <stddef.h>
#include <stdint.h>

/* RFC 3339 to the second, in UTC: 2026-12-01T00:00:00Z. */
#define UTC_RFC3339 "%Y-%m-%dT%H:%M:%SZ"
/* The longest UTC_RFC3339 text of a year of four digits, with its '\0'. */
#define UTC_RFC3339_MAX 21

/* Writes seconds (Unix time) as strftime's fmt in UTC into out[0..cap).
 * Returns 0, or -1 with out empty when the time has no calendar date or
 * the text does not fit. */
int utc_format(int64_t seconds, const char *fmt, char *out, size_t cap)
	__attribute__((format(strftime, 2, 0)));

#endif
