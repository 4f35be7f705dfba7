/* master.h - payhook --workers N: a small master process that holds the
 * listening socket and keeps N workers on it (with the pool manager,
 * lib/pool.h), as php-fpm and uWSGI do.
 *
 * It restarts a worker that exits or is killed (with a back-off, so a crash
 * loop does not spin, and an alert once per crash loop, sent by
 * payhook-dispatch --send-alert so that payhook links no HTTP client);
 * SIGHUP re-reads the configuration and starts a new generation of
 * workers, retiring the old one only once every new worker
 * passed its start-up checks (a file that fails to load, or that a worker
 * refuses, leaves the pool as it is and says why); SIGUSR2 re-executes the
 * program file in place (same PID, same socket, workers replaced the same
 * way) for a zero-downtime upgrade; SIGTERM, SIGINT and SIGQUIT stop the
 * pool gracefully and remove the socket --listen made.
 */
#ifndef PAYHOOK_MASTER_H
#define PAYHOOK_MASTER_H

#include <stddef.h>

#include "configuration.h"

struct master_options {
	unsigned workers;          /* N, at least 1 */
	const char *config_path;   /* re-read on SIGHUP; NULL: none */
	const char *listen;        /* --listen: "PATH" or "HOST:PORT"; NULL */
	unsigned socket_mode;      /* for a unix socket made by --listen */
	const char *socket_user;   /* its owner (name or number); NULL */
	const char *socket_group;  /* its group; NULL */
	const char *user;          /* the workers' user (root only); NULL */
	const char *group;         /* the workers' group; NULL: the user's */
	unsigned long max_requests; /* passed on to each worker; 0: none */
	char **argv;               /* this program's arguments, for SIGUSR2 */
	const char *program;       /* this program's absolute path */
};

/* The program that sends the pool's alerts (payhook-dispatch --send-alert)
 * into buf: payhook-dispatch in program's directory. Returns 0 when it is
 * there and executable, else -1 (buf still names where it was looked
 * for). */
int master_alert_sender(const char *program, char *buf, size_t cap);

/* Runs the pool with cfg (taken over: the master frees it and loads the
 * next one on SIGHUP) until SIGTERM/SIGINT/SIGQUIT. Returns the exit
 * status: 0 after a stop, 1 when it could not start (said on stderr and in
 * the log). Workers never return from it: they exit. */
int master_run(const struct master_options *opts, struct config *cfg);

#endif
