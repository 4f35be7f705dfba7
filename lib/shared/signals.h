/* signals.h - the one signal set-up of payhook's programs, as php-fpm's
 * fpm_signals.c: the signals a program serves stay blocked and are read
 * from a signalfd in its one wait (signals_wait, or the pool manager's
 * poll loop through signals_fd), so that none lands inside a database,
 * HTTP or FastCGI call, and one that came meanwhile is served at the next
 * wait. SIGPIPE is ignored: a peer that went away is the call's error,
 * not the process's end.
 *
 * What a signal means is served here for every program but a pool's
 * master (signals_stopping): SIGTERM, SIGINT and SIGQUIT ask to stop,
 * SIGHUP reopens the log (logrotate), SIGCHLD only ends a wait. The pool
 * manager takes them one by one (signals_next) and decides itself.
 *
 * One set a process: the state is the process's, as its signal mask is.
 */
#ifndef PAYHOOK_SIGNALS_H
#define PAYHOOK_SIGNALS_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The most descriptors signals_wait watches beside the signals. */
#define SIGNALS_WAIT_MAX 8

/* Blocks the signals of list (ended by 0) and opens the descriptor they
 * are read from; each gets its default action first (one ignored by
 * whoever started the program, nohup's SIGHUP, would never reach the
 * descriptor). SIGPIPE is ignored. Called again, adds list to the set.
 * Returns 0, or -1 with err set (the mask as it was). */
int signals_open(const int *list, struct error *err);

/* The descriptor, readable while a signal is pending; -1 when not open. */
int signals_fd(void);

/* Takes one pending signal. Returns its number, or 0 when none is. */
int signals_next(void);

/* Takes every pending signal as the programs mean them: a stop signal is
 * kept (signals_stop_signal), SIGHUP reopens the log, the others are
 * dropped. Returns whether a stop was asked, now or before. */
bool signals_stopping(void);

/* The first stop signal taken, or 0. */
int signals_stop_signal(void);

/* Reopens the log (log_reopen: the file logrotate moved, the syslog
 * connection); a failure is logged, the old target stays. */
void signals_reopen_log(void);

/* Waits until one of fds[0..n) is ready (n at most SIGNALS_WAIT_MAX),
 * a signal came (served as signals_stopping does) or ms passed (-1: no
 * limit). Returns how many of fds are ready, 0 after a signal or the
 * time, or -1 with errno set. */
int signals_wait(struct pollfd *fds, size_t n, long ms);

/* Closes the descriptor and gives back the mask from before the first
 * signals_open: in a forked child before it sets up its own, or when
 * done. Only async-signal-safe calls. */
void signals_close(void);

#endif
