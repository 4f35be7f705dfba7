/* replay.h - payhook-reconcile --replay (prefix replay_): each delivery
 * kept in the inbox (inbox_store.h) put through the webhook's path again
 * with today's configuration (pipeline_replay: every configured secret, the
 * signature's timestamp judged against the time the delivery was
 * received), source = replay on what it records. A delivery that records
 * something (or finds it recorded already) leaves the inbox; one still
 * ignored, unauthorized or refused stays, with the new reason. One logfmt
 * line per delivery and one for the run on the output.
 */
#ifndef PAYHOOK_REPLAY_H
#define PAYHOOK_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "configuration.h"

struct replay_options {
	int only;               /* a profile (enum config_provider), or -1 */
	int64_t since_s;        /* received at or after; 0: any */
	const char *outcome;    /* "ignored", "unauthorized" or NULL: both */
	bool dry_run;           /* judge and print, change nothing */
	bool (*stopping)(void); /* true after SIGTERM: ends after the
				 * delivery in hand; may be NULL */
};

/* Replays the inbox as options say, writing its lines to out. Returns 0
 * when every delivery was judged (whatever the outcome), 1 when one could
 * not be (a database or lock fault: it stays, as it was) or the inbox
 * could not be read. */
int replay_run(const struct config *cfg, const struct replay_options *options,
	       FILE *out);

#endif
