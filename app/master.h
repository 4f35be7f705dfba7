/* master.h - payhook --workers N: a small master process that holds the
 * listening socket and keeps N workers on it, as php-fpm and uWSGI do.
 *
 * It restarts a worker that exits or is killed (with a back-off, so a crash
 * loop does not spin); SIGHUP re-reads the configuration and replaces the
 * workers (a new one starts before the old one is asked to finish its
 * request in hand and leave, so none is refused; a configuration that fails
 * to load leaves the pool as it is and says why); SIGUSR2 re-executes the
 * program file in place (same PID, same socket, workers replaced the same
 * way) for a zero-downtime upgrade; SIGTERM and SIGINT stop the pool
 * gracefully.
 */
#ifndef PAYHOOK_MASTER_H
#define PAYHOOK_MASTER_H

#include "configuration.h"

struct master_options {
	unsigned workers;          /* N, at least 1 */
	const char *config_path;   /* re-read on SIGHUP; NULL: none */
	const char *listen;        /* --listen: "PATH" or "HOST:PORT"; NULL */
	unsigned socket_mode;      /* for a unix socket made by --listen */
	unsigned long max_requests; /* passed on to each worker; 0: none */
	char **argv;               /* this program's arguments, for SIGUSR2 */
	const char *program;       /* this program's absolute path */
};

/* Runs the pool with cfg (taken over: the master frees it and loads the
 * next one on SIGHUP) until SIGTERM/SIGINT. Returns the exit status: 0
 * after a clean stop, 1 when it could not start (said on stderr and in the
 * log). In a worker process it returns the worker's status instead, and the
 * caller exits with it. */
int master_run(const struct master_options *opts, struct config *cfg);

#endif
