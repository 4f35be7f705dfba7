/* dispatch_worker.h - one dispatcher of payhook-dispatch: claims due
 * payments and changes under a lease, delivers each and records the
 * result (lib/handoff/dispatcher.h), in its own process or as a child of
 * the master (dispatch_master.h).
 *
 * Signals (signals.h): SIGTERM and SIGINT finish the attempt in hand, give
 * back the claims not yet attempted and end the loop; SIGHUP reopens
 * log_file; SIGCHLD (a dispatch_command's end) ends a wait. They are
 * served only between attempts, so no database or HTTP call is ever cut
 * half-way.
 */
#ifndef PAYHOOK_DISPATCH_WORKER_H
#define PAYHOOK_DISPATCH_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "configuration.h"

/* The program's name, in its messages, alerts and lines. */
#define DISPATCH_PROGRAM "payhook-dispatch"
/* --once: the target failed, refused or asked to wait (cron mails it). */
#define DISPATCH_EXIT_TARGET 3

/* Runs the dispatcher's loop until SIGTERM or SIGINT, or with once until
 * nothing is due or deadline_us (timing_now_us; 0: none), then prints
 * --once's last line. Once started it tells its pool on ready_fd (-1:
 * none; closed either way). Returns the exit status: 0, 1 when it could
 * not start or the loop failed, DISPATCH_EXIT_TARGET (once) when the
 * target failed or asked to wait. */
int dispatch_worker_run(const struct config *cfg, int ready_fd, bool once,
			int64_t deadline_us);

#endif
