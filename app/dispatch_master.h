/* dispatch_master.h - payhook-dispatch with dispatch_concurrency N > 1: a
 * master keeps N forked dispatchers (dispatch_worker.h) running with the
 * pool manager (lib/shared/pool.h): it restarts one that dies (an alert
 * once per crash loop, sent by this program's --send-alert in a helper
 * process), passes SIGHUP on after reopening its own log, and stops them
 * on SIGTERM, SIGINT or SIGQUIT (SIGKILL for one still busy a lease
 * after).
 */
#ifndef PAYHOOK_DISPATCH_MASTER_H
#define PAYHOOK_DISPATCH_MASTER_H

#include "configuration.h"

/* Keeps cfg->dispatch_concurrency dispatchers running until SIGTERM,
 * SIGINT or SIGQUIT, then stops them and waits. config_path (-c's; NULL:
 * none) goes to --send-alert. Returns the exit status: 1 when it could
 * not start or a dispatcher did not stop cleanly. */
int dispatch_master_run(const struct config *cfg, const char *config_path);

#endif
