/* worker.h - one payhook worker: the libfcgi accept loop on descriptor 0
 * (or, run as plain CGI, the one request in its environment), answering the
 * operator's paths and handing every other request to the pipeline.
 *
 * Signals: SIGTERM and SIGINT finish the request in hand, write the
 * deliveries the inbox holds (pipeline_flush; also before waiting idle and
 * before exiting at max_requests) and stop accepting;
 * SIGHUP reopens the log before the next request. Either is taken only while
 * the worker waits for a connection, so a connection it took is answered.
 * The listening socket is set non-blocking (every worker of a pool shares
 * that flag).
 */
#ifndef PAYHOOK_WORKER_H
#define PAYHOOK_WORKER_H

#include "configuration.h"
#include "metrics.h"

/* Runs every start-up check a worker runs (the pipeline: providers,
 * secrets, backends' clients; the operator's paths: metrics_token...),
 * connecting to nothing. Returns 0, or -1 with err naming what failed. */
int worker_check(const struct config *cfg, struct error *err);

/* Serves requests until stopped (a signal, max_requests when not 0, the
 * listening socket closed), counting them in metrics (NULL: a private
 * segment is made, or none when that fails). Once its start-up checks
 * passed it tells its pool on ready_fd (pool_child_ready; -1: no pool).
 * Logs why it stops. Returns the process exit status: 0 after a clean
 * stop, 1 when the worker could not start (said on stderr and in the
 * log). ready_fd is closed either way. */
int worker_run(const struct config *cfg, struct metrics *metrics,
	       unsigned long max_requests, int ready_fd);

#endif
