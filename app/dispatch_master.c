/* dispatch_master.c - payhook-dispatch with dispatch_concurrency > 1 (see
 * dispatch_master.h): the pool manager keeps the dispatchers, each running
 * dispatch_worker_run in its own process.
 */
#include "config.h"

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "dispatch_master.h"
#include "dispatch_worker.h"
#include "log.h"
#include "pool.h"
#include "signals.h"

struct master {
	const struct config *cfg;
	const char *config_path;  /* -c's, for --send-alert; NULL: none */
	char self[PATH_MAX];      /* this program, which sends the alerts */
	struct pool *pool;
};

/* A dispatcher's entry (see pool.h): the dispatcher's loop, which sets
 * up its own signals. Never returns. */
static void dispatcher_entry(void *ctx, bool replacement, int ready_fd)
{
	const struct config *cfg = ((struct master *)ctx)->cfg;

	(void)replacement;
	log_echo_errors(true);
	exit(dispatch_worker_run(cfg, ready_fd, false, 0));
}

/* SIGHUP: the master's log reopened, and each dispatcher's. */
static void master_signal(void *ctx, int signo)
{
	struct master *m = ctx;

	if (signo != SIGHUP)
		return;
	signals_reopen_log();
	pool_signal(m->pool, SIGHUP);
}

/* A crash loop of the dispatchers (pool.h): sent by this program's
 * --send-alert in a helper process, so the master never waits for it. */
static void master_alert(void *ctx, const struct pool_alert *a)
{
	struct master *m = ctx;
	struct error err = { "" };

	if (!config_alerts_set(m->cfg))
		return;
	if (m->self[0] == '\0' ||
	    pool_send_alert(m->pool, a, m->self, DISPATCH_PROGRAM, m->config_path,
			    &err) != 0)
		log_error("alert %s not sent: %s", a->event,
			  m->self[0] == '\0' ? "this program's path is not "
						"known" : err.message);
}

int dispatch_master_run(const struct config *cfg, const char *config_path)
{
	struct pool_config pc = {
		.noun = "dispatcher",
		.count = (unsigned)cfg->dispatch_concurrency,
		.title = DISPATCH_PROGRAM ": master",
		.child_title = DISPATCH_PROGRAM ": dispatcher",
		/* An attempt in hand ends within its lease. */
		.stop_timeout_ms = cfg->dispatch_lease_ms + 5000,
		.ready_timeout_ms = 10000,
		.entry = dispatcher_entry,
		.on_signal = master_signal,
		.on_alert = master_alert,
	};
	struct master m = { .cfg = cfg, .config_path = config_path };
	struct error err = { "" };
	unsigned unclean = 0;
	ssize_t len;
	int rc;

	pc.ctx = &m;
	len = readlink("/proc/self/exe", m.self, sizeof(m.self) - 1);
	m.self[len > 0 ? len : 0] = '\0';
	m.pool = pool_new(&pc, &err);
	if (m.pool == NULL) {
		log_error("%s", err.message);
		return 1;
	}
	log_info("master started: %u dispatchers", pc.count);
	/* Each dispatcher turns it on and off around its own start. */
	log_echo_errors(false);
	rc = pool_run(m.pool, &unclean, &err);
	if (rc != 0)
		log_error("%s", err.message);
	pool_free(m.pool);
	log_info("master exits: every dispatcher stopped%s",
		 unclean > 0 ? ", not every one cleanly" : "");
	return rc != 0 || unclean > 0 ? 1 : 0;
}
