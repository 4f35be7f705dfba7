/* lifecycle.c - the lifecycle model (see lifecycle.h): state names, the
 * order of states, event times and which event of an object wins.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lifecycle.h"

static const char *const state_names[] = {
	[LIFECYCLE_PENDING] = "pending",
	[LIFECYCLE_SUCCEEDED] = "succeeded",
	[LIFECYCLE_FAILED] = "failed",
	[LIFECYCLE_OPEN] = "open",
	[LIFECYCLE_WON] = "won",
	[LIFECYCLE_LOST] = "lost",
};

#define STATE_COUNT (sizeof(state_names) / sizeof(state_names[0]))

const char *lifecycle_kind_name(enum lifecycle_kind kind)
{
	switch (kind) {
	case LIFECYCLE_REFUND:
		return "refund";
	case LIFECYCLE_DISPUTE:
		return "dispute";
	case LIFECYCLE_CANCELLATION:
		return "cancellation";
	}
	return "?";
}

const char *lifecycle_state_name(enum lifecycle_state state)
{
	return (unsigned)state < STATE_COUNT ? state_names[state] : "?";
}

bool lifecycle_state_valid(enum lifecycle_kind kind,
			   enum lifecycle_state state)
{
	switch (kind) {
	case LIFECYCLE_REFUND:
		return state == LIFECYCLE_PENDING ||
		       state == LIFECYCLE_SUCCEEDED ||
		       state == LIFECYCLE_FAILED;
	case LIFECYCLE_DISPUTE:
		return state == LIFECYCLE_OPEN || state == LIFECYCLE_WON ||
		       state == LIFECYCLE_LOST;
	case LIFECYCLE_CANCELLATION:
		return state == LIFECYCLE_SUCCEEDED;
	}
	return false;
}

int lifecycle_state_parse(enum lifecycle_kind kind, const char *text,
			  size_t len, enum lifecycle_state *out)
{
	for (unsigned i = 0; i < STATE_COUNT; i++) {
		if (strlen(state_names[i]) == len &&
		    memcmp(state_names[i], text, len) == 0 &&
		    lifecycle_state_valid(kind, (enum lifecycle_state)i)) {
			*out = (enum lifecycle_state)i;
			return 0;
		}
	}
	return -1;
}

int lifecycle_time_compare(const struct lifecycle_time *a,
			   const struct lifecycle_time *b)
{
	if (a->seconds != b->seconds)
		return a->seconds < b->seconds ? -1 : 1;
	if (a->micros != b->micros)
		return a->micros < b->micros ? -1 : 1;
	return 0;
}

/* ---- RFC 3339 ---- */

/* 253402300799 is 9999-12-31T23:59:59Z, the end of DATETIME. */
#define TIME_MAX_SECONDS INT64_C(253402300799)

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (H.
 * Hinnant's days_from_civil), no time zone involved. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static unsigned days_in_month(unsigned y, unsigned m)
{
	static const unsigned char days[12] = { 31, 28, 31, 30, 31, 30,
						 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : days[m - 1];
}

/* n ASCII digits at s as a number; false if any is not a digit. */
static bool digits(const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return true;
}

int lifecycle_time_parse(const char *s, size_t len, struct lifecycle_time *out)
{
	unsigned y, mo, d, h, mi, sec, oh = 0, om = 0;
	int32_t micros = 0;
	int64_t t, offset = 0;
	size_t i = 19, scale = 100000;

	if (s == NULL || len < 20 || !digits(s, 4, &y) || s[4] != '-' ||
	    !digits(s + 5, 2, &mo) || s[7] != '-' || !digits(s + 8, 2, &d) ||
	    (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, &h) ||
	    s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
	    !digits(s + 17, 2, &sec))
		return -1;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 ||
	    d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60)
		return -1;
	if (s[i] == '.') {
		size_t first = ++i;

		while (i < len && s[i] >= '0' && s[i] <= '9') {
			if (scale > 0) {
				micros += (int32_t)((size_t)(s[i] - '0') * scale);
				scale /= 10;
			}
			i++;
		}
		if (i == first || i - first > 9)
			return -1;
	}
	if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i + 6 == len && (s[i] == '+' || s[i] == '-')) {
		if (!digits(s + i + 1, 2, &oh) || s[i + 3] != ':' ||
		    !digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
			return -1;
		offset = ((int64_t)oh * 60 + om) * 60;
		if (s[i] == '-')
			offset = -offset;
		i = len;
	} else {
		return -1;
	}
	if (i != len)
		return -1;
	/* A leap second (:60) folds into the next second. */
	t = days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 +
	    (int64_t)mi * 60 + sec - offset;
	if (t < 0 || t > TIME_MAX_SECONDS)
		return -1;
	out->seconds = t;
	out->micros = micros;
	return 0;
}

int lifecycle_time_from_unix(int64_t seconds, struct lifecycle_time *out)
{
	if (seconds < 0 || seconds > TIME_MAX_SECONDS)
		return -1;
	out->seconds = seconds;
	out->micros = 0;
	return 0;
}

/* ---- which event decides ---- */

bool lifecycle_restates(const struct lifecycle_event *held,
			const struct lifecycle_event *incoming)
{
	return !(held->cumulative && incoming->cumulative) &&
	       held->state == incoming->state &&
	       lifecycle_time_compare(&incoming->occurred_at,
				      &held->occurred_at) > 0;
}

bool lifecycle_supersedes(const struct lifecycle_event *held,
			  const struct lifecycle_event *incoming)
{
	int order;

	if (held->cumulative && incoming->cumulative &&
	    held->state == incoming->state)
		return incoming->link.amount > held->link.amount;
	if (held->state == incoming->state)
		return false;
	order = lifecycle_time_compare(&incoming->occurred_at,
				       &held->occurred_at);
	if (order != 0)
		return order > 0;
	/* Equal times: the enum lists each kind's states in the order. */
	return incoming->state > held->state;
}
