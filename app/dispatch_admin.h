/* dispatch_admin.h - payhook-dispatch's operators' commands, apart from the
 * program's start-up and dispatch loop (app/payhook-dispatch.c): the dead
 * rows, --requeue and --redeliver, --show, --pause and --resume, and
 * --send-alert. Each opens its own connection (lib/handoff/handoff_admin.h
 * holds the queries), prints what it found or did on standard output (or
 * why not on standard error), and returns the process's exit status: 0
 * when done, 1 when it failed, DISPATCH_ADMIN_EXIT_USAGE for a bad
 * argument.
 */
#ifndef PAYHOOK_DISPATCH_ADMIN_H
#define PAYHOOK_DISPATCH_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "configuration.h"
#include "handoff_admin.h"

#define DISPATCH_ADMIN_EXIT_USAGE 2
/* A time as MySQL reads it, "YYYY-MM-DD HH:MM:SS.ffffff", and its NUL. */
#define DISPATCH_ADMIN_TIME_MAX 32

/* --list-dead: the dead payments, or with changes the dead lifecycle
 * changes. */
int dispatch_admin_list_dead(const struct config *cfg, bool changes);

/* --since/--until's TEXT (an RFC 3339 time, a date, or "N{s,m,h,d} ago")
 * into buf as MySQL reads UTC; false with a message on stderr when it is
 * none of those. buf holds DISPATCH_ADMIN_TIME_MAX bytes. */
bool dispatch_admin_time_arg(const char *option, const char *text, char *buf);

/* --requeue and --redeliver: the rows named by ids (args) and the filters
 * in sel back to pending, or with dry_run only counted. */
int dispatch_admin_change_rows(const struct config *cfg,
			       enum handoff_admin_change change, char **args,
			       size_t count, struct handoff_admin_selection *sel,
			       bool dry_run);

/* --show ID: where a payment (a change, with changes) stands and what it
 * waits for; then the target's shared state. 0 when found. */
int dispatch_admin_show(const struct config *cfg, bool changes, char **args,
			size_t count);

/* --pause and --resume: the flag every dispatcher of the database reads. */
int dispatch_admin_set_paused(const struct config *cfg, bool paused);

/* --send-alert EVENT [DETAIL]: one alert through alert_url/alert_command,
 * from (the program it comes from). 0 when delivered or when no alert key
 * is set. */
int dispatch_admin_send_alert(const struct config *cfg, const char *from,
			      char **args, size_t count);

#endif
