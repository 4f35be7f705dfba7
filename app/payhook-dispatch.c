/* payhook-dispatch.c - hands every payment payhook recorded on to the
 * merchant's fulfilment, and then every change of its refunds, disputes and
 * cancellations, at least once, with an idempotency key that is the same on
 * every attempt: claims due rows (payments, payment_event_changes) under a
 * lease, delivers each (lib/handoff/handoff.h), records the result fenced by the
 * claim's token (lib/handoff/handoff_store.h), and retries with back-off until delivered
 * or dead. Also --check-config; the operators' commands (--list-dead,
 * --requeue, --show, --pause, ...) are app/dispatch_admin.c's.
 *
 * Signals: SIGTERM and SIGINT finish the attempt in hand, give back the
 * claims not yet attempted and exit 0; SIGHUP reopens log_file. They stay
 * blocked except while the process waits (ppoll), so no database or HTTP
 * call is ever interrupted half-way, and a stop is noticed between attempts.
 * With dispatch_concurrency N > 1 a master keeps N forked dispatchers
 * running with the pool manager (lib/shared/pool.h): it restarts one that dies,
 * passes SIGHUP on, and stops them on SIGTERM, SIGINT or SIGQUIT (SIGKILL
 * for one still busy a lease after).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYS_RANDOM_H
#include <sys/random.h>
#endif

#include "alert.h"
#include "configuration.h"
#include "dispatch_admin.h"
#include "dispatcher.h"
#include "handoff_admin.h"
#include "handoff_store.h"
#include "handoff.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "metrics_dispatch.h"
#include "metrics_reconcile.h"
#include "number.h"
#include "pool.h"
#include "retention.h"
#include "sharedfile.h"
#include "sqlconn.h"
#include "target_store.h"
#include "timing.h"
#include "transport_pick.h"

#define PROGRAM "payhook-dispatch"
#define EXIT_USAGE 2
/* --once: the target failed, refused or asked to wait (cron mails it). */
#define EXIT_TARGET 3
/* --once: the time bound without =SECONDS, and the largest. */
#define ONCE_DEFAULT_S 50
#define ONCE_MAX_S 86400

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t reopen_log;
/* The signal mask while waiting: the stop and reload signals let through. */
static sigset_t wait_mask;

static void on_stop_signal(int signo)
{
	stop_requested = 1;
	stop_signal = signo;
}

static void on_hangup(int signo)
{
	(void)signo;
	reopen_log = 1;
}

/* A handler (not SIG_DFL, which discards it), so that SIGCHLD (a
 * dispatch_command's end) ends a wait. */
static void on_child(int signo)
{
	(void)signo;
}

/* Installs the handlers and blocks the signals they serve; wait_mask is the
 * mask that lets them through. Returns 0, or -1 with errno set. */
static int install_signals(void)
{
	const int handled[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD };
	struct sigaction sa;
	sigset_t block;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	/* A target that went away, a command that does not read its input. */
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) != 0)
		return -1;
	sa.sa_handler = on_stop_signal;
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
		return -1;
	sa.sa_handler = on_hangup;
	if (sigaction(SIGHUP, &sa, NULL) != 0)
		return -1;
	sa.sa_handler = on_child;
	if (sigaction(SIGCHLD, &sa, NULL) != 0)
		return -1;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaddset(&block, handled[i]);
	if (sigprocmask(SIG_BLOCK, &block, &wait_mask) != 0)
		return -1;
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigdelset(&wait_mask, handled[i]);
	return 0;
}

/* Waits ms milliseconds (-1: until a signal), or less when a signal comes.
 * Signals pending since the last wait are handled at once. */
static void wait_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	if (ppoll(NULL, 0, ms < 0 ? NULL : &ts, &wait_mask) < 0 &&
	    errno != EINTR) {
		/* Nothing to do: the caller's loop looks at the flags. */
	}
}

/* Runs the handlers of signals that came while they were blocked. */
static void take_signals(void)
{
	wait_ms(0);
}

static void reopen_log_file(const struct config *cfg)
{
	struct error err;

	reopen_log = 0;
	if (cfg->log_file != NULL && log_open_file(cfg->log_file, &err) != 0)
		log_error("%s", err.message);
}

/* 64 random bits from the OS for the back-off's jitter; the clock when the
 * OS has none to give (the jitter spreads retries, it guards no secret). */
static uint64_t random_u64(void)
{
	uint64_t value = 0;

#ifdef HAVE_GETRANDOM
	if (getrandom(&value, sizeof(value), GRND_NONBLOCK) ==
	    (ssize_t)sizeof(value))
		return value;
#endif
	return (uint64_t)timing_now_us() * 6364136223846793005ULL +
	       (uint64_t)getpid();
}

/* ---- the dispatcher's world: the process's clock, waits and signals ---- */

static int64_t env_now_us(void *ctx)
{
	(void)ctx;
	return timing_now_us();
}

static void env_wait_ms(void *ctx, long ms)
{
	(void)ctx;
	wait_ms(ms);
}

/* What the dispatcher's callbacks get. */
struct world {
	const struct config *cfg;
	struct alert *alert;
	struct metrics *metrics;   /* metrics_file's segment; NULL: none */
	struct retention *retention; /* NULL: payloads are kept */
	/* The circuit_open episode counted last: its alert's retries are
	 * not new openings. */
	unsigned long long opened_alert_id;
};

/* Steps of the payloads' retention per tick at most, and the time they may
 * take, so deliveries wait little behind it. */
#define RETENTION_STEPS_PER_TICK 20
#define RETENTION_TICK_BUDGET_US 200000

/* The attempt's result in metrics_file (payhook's metrics_path shows it). */
static void env_attempt(void *ctx, enum dispatcher_count what,
			int64_t elapsed_us)
{
	static const enum metrics_dispatch_result results[] = {
		[DISPATCHER_COUNT_DELIVERED] = METRICS_DISPATCH_DELIVERED,
		[DISPATCHER_COUNT_RETRY] = METRICS_DISPATCH_RETRY,
		[DISPATCHER_COUNT_DEFERRED] = METRICS_DISPATCH_DEFERRED,
		[DISPATCHER_COUNT_DEAD] = METRICS_DISPATCH_DEAD,
		[DISPATCHER_COUNT_SUPERSEDED] = METRICS_DISPATCH_SUPERSEDED,
		[DISPATCHER_COUNT_UNRECORDED] = METRICS_DISPATCH_UNRECORDED,
	};
	const struct world *world = ctx;

	if ((size_t)what < sizeof(results) / sizeof(results[0]))
		metrics_dispatch_attempt(world->metrics, results[what],
					 elapsed_us);
}

static void env_gauges(void *ctx, const struct handoff_admin_gauges *g)
{
	const struct world *world = ctx;
	struct metrics_dispatch_gauges mg = {
		.pending = g->pending,
		.in_flight = g->in_flight,
		.dead = g->dead,
		.oldest_due_s = g->oldest_due_s,
	};

	metrics_dispatch_gauges(world->metrics, &mg);
}

/* payhook-reconcile's figures in metrics_file, for payhook's metrics_path,
 * --stats and the operator's page (payhook-reconcile itself runs apart). */
static void env_reconcile(void *ctx, const struct metrics_reconcile *rows)
{
	const struct world *world = ctx;

	metrics_reconcile_publish(world->metrics, rows);
}

/* The circuit in metrics_file, its times on the wall clock (the page and
 * the scraper show them). */
static void env_circuit(void *ctx, const struct dispatcher_circuit *c)
{
	static const enum metrics_circuit_state states[] = {
		[DISPATCHER_CIRCUIT_CLOSED] = METRICS_CIRCUIT_CLOSED,
		[DISPATCHER_CIRCUIT_OPEN] = METRICS_CIRCUIT_OPEN,
		[DISPATCHER_CIRCUIT_HALF_OPEN] = METRICS_CIRCUIT_HALF_OPEN,
	};
	const struct world *world = ctx;
	struct timespec wall;
	int64_t now_ms, mono_us = timing_now_us();
	struct metrics_circuit mc = { 0 };
	struct metrics_target mt = { 0 };

	if (world->metrics == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &wall);
	now_ms = (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
	mc.state = states[c->state];
	mc.since_ms = now_ms - (mono_us - c->since_us) / 1000;
	mc.failures = c->failures;
	mc.next_probe_ms = c->next_probe_us != 0
				   ? now_ms + (c->next_probe_us - mono_us) / 1000
				   : 0;
	metrics_dispatch_circuit(world->metrics, &mc);
	/* The same, as the one target every dispatcher shares. */
	mt.state = mc.state;
	mt.since_ms = mc.since_ms;
	mt.failures = mc.failures;
	mt.next_probe_ms = mc.next_probe_ms;
	mt.pause_until_ms = c->pause_until_us != 0
				    ? now_ms + (c->pause_until_us - mono_us) / 1000
				    : 0;
	mt.last_status = c->last_status;
	snprintf(mt.last_error, sizeof(mt.last_error), "%.*s",
		 METRICS_TARGET_ERROR_MAX, c->last_error != NULL ? c->last_error : "");
	mt.updated_ms = now_ms;
	metrics_dispatch_target(world->metrics, &mt);
}

/* payload_retention_days, inbox_days: a few steps of clearing old payloads
 * and inbox deliveries. */
static void env_tick(void *ctx)
{
	const struct world *world = ctx;
	int64_t start = timing_now_us();
	struct error err = { "" };
	long cleared = 0;
	bool done = false;

	if (world->retention == NULL)
		return;
	for (int i = 0; i < RETENTION_STEPS_PER_TICK && !done &&
			timing_now_us() - start < RETENTION_TICK_BUDGET_US;
	     i++) {
		long n = retention_step(world->retention, &done, &err);

		if (n < 0) {
			log_warn("%s", err.message);
			break;
		}
		cleared += n;
	}
	if (cleared > 0)
		log_info("retention: cleared the payloads of %ld delivered "
			 "payments and lifecycle objects older than %ld days, "
			 "or inbox deliveries past inbox_days (%ld) or "
			 "inbox_max_bytes, in %lld ms", cleared,
			 world->cfg->payload_retention_days,
			 world->cfg->inbox_days,
			 (long long)(timing_now_us() - start) / 1000);
}

/* Serves the signals that came, between attempts. */
static bool env_stopping(void *ctx)
{
	const struct world *world = ctx;

	take_signals();
	if (reopen_log)
		reopen_log_file(world->cfg);
	return stop_requested != 0;
}

/* An episode's start or end: the alert, each saying what to do. */
static int env_event(void *ctx, const struct dispatcher_event *e)
{
	struct world *world = ctx;
	struct dispatcher_alert alert;
	struct error err = { "" };

	if (e->kind == DISPATCHER_EVENT_CIRCUIT_OPEN &&
	    (e->alert_id == 0 || e->alert_id != world->opened_alert_id)) {
		metrics_dispatch_circuit_opened(world->metrics);
		world->opened_alert_id = e->alert_id;
	}
	if (!alert_enabled(world->alert))
		return 0;
	dispatcher_alert_init(&alert, e);
	if (alert_send(world->alert, &alert.message, &err) != 0) {
		log_warn("alert %s: %s%s", alert.message.event, err.message,
			 e->alert_id != 0 ? " (tried again later)" : "");
		return -1;
	}
	log_info("alert %s sent", alert.message.event);
	return 0;
}

static uint64_t env_random(void *ctx)
{
	(void)ctx;
	return random_u64();
}

/* --once's last line, on standard output (cron mails it): what it did, and
 * why it exits as it does. left: the payments and changes left pending
 * (-1: unknown, taken as some). "waiting" is what the target held back:
 * those left pending behind its open circuit or its Retry-After when the
 * run ends, else the attempts it answered with Retry-After. Returns the
 * exit status: EXIT_TARGET when the target failed or asked to wait in
 * this run, or when payments are left pending while its circuit is open
 * or it asked to wait; else rc. */
static int once_report(const struct dispatcher *d, int rc, const char *why,
		       long long left)
{
	const struct dispatcher_stats *st = dispatcher_stats(d);
	unsigned long long waiting = st->waited,
			   failed = st->retried + st->deferred - st->waited;
	bool pending = left != 0;
	struct dispatcher_circuit c;
	char reason[TRANSPORT_DETAIL_MAX + 128];

	dispatcher_circuit(d, &c);
	if (left > 0 && (c.state != DISPATCHER_CIRCUIT_CLOSED ||
			 c.pause_until_us != 0))
		waiting = (unsigned long long)left;
	if (c.state != DISPATCHER_CIRCUIT_CLOSED && pending)
		snprintf(reason, sizeof(reason), "the target's circuit is "
			 "open (last: %s)", c.last_error);
	else if (c.pause_until_us != 0 && pending)
		snprintf(reason, sizeof(reason), "the target asked to wait "
			 "(Retry-After; last: %s)", c.last_error);
	else if (failed + st->dead > 0)
		snprintf(reason, sizeof(reason), "the target failed (last: "
			 "%s)", c.last_error);
	else if (waiting > 0)
		snprintf(reason, sizeof(reason), "the target asked to wait "
			 "(Retry-After)");
	else
		reason[0] = '\0';
	printf(PROGRAM " --once: delivered %llu, failed %llu, waiting %llu, "
	       "dead %llu: %s\n", st->delivered, failed, waiting, st->dead,
	       reason[0] != '\0' ? reason
	       : rc != 0	  ? why
				  : "nothing failed");
	fflush(stdout);
	return reason[0] != '\0' ? EXIT_TARGET : rc;
}

/* The dispatcher's loop (lib/handoff/dispatcher.h) until SIGTERM or SIGINT, or with
 * once until nothing is due or deadline_us; once started it tells its pool
 * on ready_fd (-1: none). Returns the exit status. */
static int run_dispatcher(const struct config *cfg, int ready_fd, bool once,
		      int64_t deadline_us)
{
	struct world world = { .cfg = cfg };
	struct dispatcher_env env = {
		.now_us = env_now_us,
		.wait_ms = env_wait_ms,
		.stopping = env_stopping,
		.random = env_random,
		.on_event = env_event,
		.on_attempt = env_attempt,
		.on_gauges = env_gauges,
		.on_circuit = env_circuit,
		.on_tick = env_tick,
		.on_reconcile = env_reconcile,
		.ctx = &world,
	};
	struct dispatcher_run_options options = {
		.once = once,
		.deadline_us = deadline_us,
	};
	struct handoff_store *db = NULL;
	struct handoff *handoff = NULL;
	struct dispatcher *d = NULL;
	const struct dispatcher_stats *st;
	struct error err = { "" };
	bool command = cfg->dispatch_url == NULL || cfg->dispatch_url[0] == '\0';
	int rc = 1;

	db = handoff_store_new(cfg, &err);
	if (db != NULL)
		handoff = handoff_new(cfg, &err);
	if (handoff != NULL)
		world.alert = alert_new(cfg, PROGRAM, &err);
	/* The dispatcher's figures join the pool's in metrics_file, which
	 * payhook's metrics_path and --stats render. */
	if (world.alert != NULL && cfg->metrics_file != NULL) {
		world.metrics = metrics_open_file(cfg->metrics_file, &err);
		if (world.metrics == NULL) {
			alert_free(world.alert);
			world.alert = NULL;
		}
	}
	if (world.alert != NULL &&
	    (cfg->payload_retention_days > 0 || cfg->inbox_days > 0)) {
		world.retention = retention_new(cfg, &err);
		if (world.retention == NULL) {
			alert_free(world.alert);
			world.alert = NULL;
		}
	}
	if (world.alert != NULL)
		d = dispatcher_new(cfg, &env, &err);
	if (d == NULL) {
		log_error("%s", err.message);
		if (ready_fd >= 0)
			close(ready_fd);
		goto out;
	}
	pool_child_ready(ready_fd);
	log_echo_errors(false);
	log_info("dispatcher started: %s, batch %d, lease %ld ms, attempt "
		 "timeout %ld ms, %d attempts%s", command ? "command" :
		 cfg->dispatch_secret.count > 0 ? "signed HTTP POST" : "HTTP POST",
		 cfg->dispatch_batch_size, cfg->dispatch_lease_ms,
		 cfg->dispatch_timeout_ms, cfg->dispatch_max_attempts,
		 once ? ", once" : "");
	rc = 0;
	if (dispatcher_run(d, db, handoff, &options, &err) != 0) {
		log_error("%s", err.message);
		rc = 1;
	}
	st = dispatcher_stats(d);
	log_info("dispatcher exits%s%.0d: %llu delivered, %llu to retry, "
		 "%llu deferred, %llu dead, %llu superseded, %llu unrecorded",
		 stop_signal != 0 ? " on signal " : "", (int)stop_signal,
		 st->delivered, st->retried, st->deferred, st->dead,
		 st->superseded, st->unrecorded);
	/* Last: the line cron shows (after every log line). */
	if (once) {
		struct handoff_admin_gauges g;
		struct error gauge_err = { "" };

		/* Unknown counts as pending: better a mail too many. */
		rc = once_report(d, rc, err.message,
				 handoff_admin_gauges(db, &g, &gauge_err) != 0 ?
					 -1 :
				 g.pending > g.in_flight ?
					 (long long)(g.pending - g.in_flight) : 0);
	}
out:
	dispatcher_free(d);
	retention_free(world.retention);
	alert_free(world.alert);
	/* Its circuit is this process's: gone with it. */
	metrics_dispatch_circuit_gone(world.metrics);
	metrics_free(world.metrics);
	handoff_free(handoff);
	handoff_store_free(db);
	return rc;
}

/* ---- dispatch_concurrency > 1: a master and its dispatchers ---- */

struct master {
	const struct config *cfg;
	const char *config_path;  /* -c's, for --send-alert; NULL: none */
	char self[PATH_MAX];      /* this program, which sends the alerts */
	struct pool *pool;
};

/* A dispatcher's entry (see pool.h): its signal handlers, then the
 * dispatcher's loop. Never returns. */
static void dispatcher_entry(void *ctx, bool replacement, int ready_fd)
{
	const struct config *cfg = ((struct master *)ctx)->cfg;

	(void)replacement;
	log_echo_errors(true);
	if (install_signals() != 0) {
		log_error("cannot set up signal handling: %s", strerror(errno));
		exit(1);
	}
	exit(run_dispatcher(cfg, ready_fd, false, 0));
}

/* SIGHUP: the master's log reopened, and each dispatcher's. */
static void master_signal(void *ctx, int signo)
{
	struct master *m = ctx;

	if (signo != SIGHUP)
		return;
	reopen_log_file(m->cfg);
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
	    pool_send_alert(m->pool, a, m->self, PROGRAM, m->config_path,
			    &err) != 0)
		log_error("alert %s not sent: %s", a->event,
			  m->self[0] == '\0' ? "this program's path is not "
						"known" : err.message);
}

/* Keeps cfg->dispatch_concurrency dispatchers running with the pool
 * manager until SIGTERM, SIGINT or SIGQUIT, then stops them and waits.
 * Returns the exit status: 1 when a dispatcher did not stop cleanly. */
static int run_master(const struct config *cfg, const char *config_path)
{
	struct pool_config pc = {
		.noun = "dispatcher",
		.count = (unsigned)cfg->dispatch_concurrency,
		.title = PROGRAM ": master",
		.child_title = PROGRAM ": dispatcher",
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

/* --check-config: one line per check; 0 when all pass. */
static int check_config(const struct config *cfg, const char *path)
{
	struct error err = { "" };
	struct handoff_store *db;
	struct target_store *ts = NULL;
	enum target_store_status tst;
	int rc = 0;

	printf("config: ok (%s)\n",
	       path != NULL ? path : "defaults and environment");
	/* The files the daemon opens, as it opens them. */
	if (cfg->log_file != NULL &&
	    sharedfile_check(cfg->log_file, O_WRONLY | O_APPEND, &err) != 0) {
		printf("config: FAILED: log_file %s\n", err.message);
		rc = 1;
	}
	if (cfg->metrics_file != NULL &&
	    sharedfile_check(cfg->metrics_file, O_RDWR, &err) != 0) {
		printf("config: FAILED: metrics_file %s\n", err.message);
		rc = 1;
	}
	if (handoff_check_config(cfg, &err) != 0) {
		printf("target: FAILED: %s\n", err.message);
		rc = 1;
	} else if (cfg->dispatch_url != NULL && cfg->dispatch_url[0] != '\0') {
		printf("target: ok (HTTP POST%s)\n", cfg->dispatch_secret.count > 0
							     ? ", signed with dispatch_secret"
							     : ", unsigned");
	} else {
		printf("target: ok (command run by /bin/sh -c)\n");
	}
	if (alert_check_config(cfg, &err) != 0) {
		printf("alert: FAILED: %s\n", err.message);
		rc = 1;
	} else if (cfg->alert_url != NULL && cfg->alert_url[0] != '\0') {
		printf("alert: ok (HTTP POST to alert_url)\n");
	} else if (cfg->alert_command != NULL && cfg->alert_command[0] != '\0') {
		printf("alert: ok (alert_command run by /bin/sh -c)\n");
	}
	if (handoff_store_check_config(cfg, &err) != 0) {
		printf("lease: FAILED: %s\n", err.message);
		rc = 1;
	} else {
		printf("lease: ok (dispatch_lease_ms = %ld)\n",
		       cfg->dispatch_lease_ms);
	}
	/* A node that is down is a warning (the dispatcher moves on to the
	 * next); the schema check below fails when none takes writes. */
	sqlconn_report_nodes(cfg, stdout);
	db = handoff_store_new(cfg, &err);
	if (db == NULL || handoff_store_check_schema(db, &err) != 0) {
		printf("mysql: FAILED: %s\n", err.message);
		rc = 1;
	} else {
		bool migrated = false, paused = false, indexed = false;

		printf("mysql: ok (%s, table payments with the dispatch columns "
		       "and ix_payments_dispatch_due)\n", sqlconn_where(cfg));
		/* Both are notes: delivery works without them. */
		if (handoff_admin_check_control(db, &migrated, &paused, &err) != 0)
			printf("mysql: WARNING: %s\n", err.message);
		else if (!migrated)
			printf("mysql: WARNING: no table dispatch_control or index "
			       "ix_payments_dispatch_state: --pause and a cheap "
			       "dead count need db/migrate-5-dispatch-control.sql\n");
		if (paused)
			printf("mysql: WARNING: delivery is paused "
			       "(payhook-dispatch --resume starts it)\n");
		if (handoff_admin_check_changes(db, &migrated, &indexed,
						&err) != 0)
			printf("mysql: WARNING: %s\n", err.message);
		else if (!migrated)
			printf("mysql: WARNING: no table payment_event_changes: "
			       "refunds, disputes and cancellations are not "
			       "handed on; run db/migrate-4-lifecycle.sql and "
			       "db/migrate-6-lifecycle-changes.sql\n");
		else if (!indexed)
			printf("mysql: WARNING: payment_event_changes lacks "
			       "ix_payment_event_changes_object_state or "
			       "ix_payment_event_changes_state: handing changes "
			       "on reads more rows; run "
			       "db/migrate-7-lifecycle-handoff.sql\n");
		ts = target_store_new(cfg, db, &err);
		tst = ts != NULL ? target_store_check(ts, &err)
				 : TARGET_STORE_FAILED;
		if (tst == TARGET_STORE_MISSING)
			printf("mysql: WARNING: no table dispatch_target or "
			       "dispatch_alerts (or no rights on them: %s): "
			       "each payhook-dispatch (and "
			       "each --once run) keeps its own view of the "
			       "target, so an outage can make payments dead "
			       "and alert once per process; run "
			       "db/migrate-9-dispatch-target.sql\n",
			       err.message);
		else if (tst != TARGET_STORE_OK)
			printf("mysql: WARNING: %s\n", err.message);
	}
	target_store_free(ts);
	handoff_store_free(db);
	return rc;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: " PROGRAM " [-c FILE] [--once[=SECONDS]]\n"
		"       " PROGRAM " --check-config [-c FILE]\n"
		"       " PROGRAM " --list-dead [--changes] [-c FILE]\n"
		"       " PROGRAM " --requeue [--changes] [-c FILE] [--dry-run] [ID...]\n"
		"                 [--provider P] [--since TIME] [--until TIME] [--error TEXT]\n"
		"                 [--include-skipped]\n"
		"       " PROGRAM " --redeliver [--changes] [-c FILE] [--dry-run] ID...\n"
		"       " PROGRAM " --pause | --resume [-c FILE]\n"
		"       " PROGRAM " --show [--changes] [-c FILE] ID\n"
		"       " PROGRAM " --send-alert [-c FILE] [--from NAME] EVENT SUMMARY ACTION\n"
		"                 [DETAIL]\n"
		"       " PROGRAM " --version | --help\n"
		"\n"
		"Hands every payment payhook recorded on to dispatch_url (HTTP\n"
		"POST) or dispatch_command, at least once, with the header\n"
		"Idempotency-Key: payhook:<provider>:<transaction_id> (the same on\n"
		"every attempt), retrying with back-off until delivered or dead;\n"
		"then each change of its refunds, disputes and cancellations, in\n"
		"order, keyed ...:<kind>:<object_id>:<state>[:<n>].\n"
		"Runs until SIGTERM. The configuration file comes from -c, else\n"
		"$PAYHOOK_CONFIG; every key can be overridden by PAYHOOK_<KEY>.\n"
		"\n"
		"  --once[=SECONDS] deliver what is due, then exit (within SECONDS,\n"
		"                  default %d; one process): for cron. Exits 0 when\n"
		"                  nothing it tried failed, 3 when the target failed,\n"
		"                  refused or asked to wait (or payments wait on its\n"
		"                  open circuit), 1 on other trouble; its last line\n"
		"                  says what it did\n"
		"  --check-config  check the configuration, MySQL and the schema\n"
		"  --list-dead     print the dead payments (id, provider,\n"
		"                  transaction_id, attempts, last error)\n"
		"  --requeue       put dead payments back to pending, due now,\n"
		"                  attempts 0: those with the ids given and\n"
		"                  matching every filter: --provider P,\n"
		"                  --since/--until TIME (received_at: RFC 3339,\n"
		"                  'YYYY-MM-DD HH:MM:SS' or YYYY-MM-DD in UTC, or\n"
		"                  an age such as 30m, 2h, 7d), --error TEXT (in\n"
		"                  the last error); --include-skipped takes the\n"
		"                  rows skipped by the migration (handled before\n"
		"                  payhook) too\n"
		"  --redeliver ID... hand delivered payments on again (the same\n"
		"                  Idempotency-Key)\n"
		"  --dry-run       with --requeue or --redeliver: count, change\n"
		"                  nothing\n"
		"  --changes       with --list-dead, --requeue or --redeliver: the\n"
		"                  lifecycle changes (their own ids; --provider is\n"
		"                  their payment's) instead of the payments\n"
		"  --show ID       where a payment (a change, with --changes) stands:\n"
		"                  attempts, last error, next attempt, and whether\n"
		"                  the target's state or its payment holds it back\n"
		"  --pause         stop delivery by every dispatcher of the database\n"
		"                  (they keep running); --resume starts it again\n"
		"  --send-alert    send one alert to alert_url or alert_command\n"
		"                  (--from: the program named in it, default\n"
		"                  " PROGRAM "); payhook --workers sends its crash\n"
		"                  loops this way, and it tests an alert set-up\n",
		ONCE_DEFAULT_S);
}

/* The modes of the command line (getopt's values). */
enum {
	OPT_PROVIDER = 256,
	OPT_SINCE,
	OPT_UNTIL,
	OPT_ERROR,
	OPT_DRY_RUN,
	OPT_CHANGES,
	OPT_INCLUDE_SKIPPED,
	OPT_ONCE,
	OPT_FROM,
	MODE_REDELIVER,
	MODE_SEND_ALERT,
	MODE_PAUSE,
	MODE_RESUME,
	MODE_SHOW,
};

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "list-dead", no_argument, NULL, 'L' },
		{ "requeue", no_argument, NULL, 'R' },
		{ "redeliver", no_argument, NULL, MODE_REDELIVER },
		{ "pause", no_argument, NULL, MODE_PAUSE },
		{ "resume", no_argument, NULL, MODE_RESUME },
		{ "show", no_argument, NULL, MODE_SHOW },
		{ "once", optional_argument, NULL, OPT_ONCE },
		{ "send-alert", no_argument, NULL, MODE_SEND_ALERT },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "provider", required_argument, NULL, OPT_PROVIDER },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "until", required_argument, NULL, OPT_UNTIL },
		{ "error", required_argument, NULL, OPT_ERROR },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "changes", no_argument, NULL, OPT_CHANGES },
		{ "include-skipped", no_argument, NULL, OPT_INCLUDE_SKIPPED },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct handoff_admin_selection sel = { 0 };
	const char *path = NULL, *from = NULL;
	char *resolved = NULL;
	int mode = 0, opt, rc;
	bool dry_run = false, once = false, filtered = false;
	uint64_t once_s = ONCE_DEFAULT_S;
	char since[DISPATCH_ADMIN_TIME_MAX], until[DISPATCH_ADMIN_TIME_MAX];
	struct config cfg;
	struct error err = { "" };

	while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'C':
		case 'L':
		case 'R':
		case MODE_REDELIVER:
		case MODE_PAUSE:
		case MODE_RESUME:
		case MODE_SEND_ALERT:
		case MODE_SHOW:
			if (mode != 0 && mode != opt) {
				fprintf(stderr, PROGRAM ": --check-config, "
						"--list-dead, --requeue, "
						"--redeliver, --pause, "
						"--resume, --show and "
						"--send-alert "
						"exclude each other\n");
				return EXIT_USAGE;
			}
			mode = opt;
			break;
		case OPT_ONCE:
			once = true;
			if (optarg != NULL &&
			    (number_parse(optarg, ONCE_MAX_S, &once_s) !=
				     NUMBER_OK || once_s == 0)) {
				fprintf(stderr, PROGRAM ": --once=SECONDS takes "
						"1 to %d\n", ONCE_MAX_S);
				return EXIT_USAGE;
			}
			break;
		case OPT_FROM:
			from = optarg;
			break;
		case OPT_PROVIDER:
			sel.provider = optarg;
			filtered = true;
			break;
		case OPT_SINCE:
			if (!dispatch_admin_time_arg("since", optarg, since))
				return EXIT_USAGE;
			sel.since = since;
			filtered = true;
			break;
		case OPT_UNTIL:
			if (!dispatch_admin_time_arg("until", optarg, until))
				return EXIT_USAGE;
			sel.until = until;
			filtered = true;
			break;
		case OPT_INCLUDE_SKIPPED:
			sel.include_skipped = true;
			break;
		case OPT_ERROR:
			sel.error = optarg;
			filtered = true;
			break;
		case OPT_DRY_RUN:
			dry_run = true;
			break;
		case OPT_CHANGES:
			sel.changes = true;
			break;
		case 'V':
			printf(PROGRAM " %s\n", PACKAGE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (sel.since != NULL && sel.until != NULL &&
	    strcmp(sel.since, sel.until) >= 0) {
		fprintf(stderr, PROGRAM ": --since must come before --until: "
				"the range %s to %s is empty\n", sel.since,
			sel.until);
		return EXIT_USAGE;
	}
	if ((optind != argc && mode != 'R' && mode != MODE_REDELIVER &&
	     mode != MODE_SEND_ALERT && mode != MODE_SHOW) ||
	    (from != NULL && mode != MODE_SEND_ALERT) ||
	    ((filtered || sel.include_skipped) && mode != 'R') ||
	    (dry_run && mode != 'R' && mode != MODE_REDELIVER) ||
	    (sel.changes && mode != 'L' && mode != 'R' &&
	     mode != MODE_REDELIVER && mode != MODE_SHOW) ||
	    (once && mode != 0)) {
		usage(stderr);
		return EXIT_USAGE;
	}
	/* A copy: the process title overwrites argv and the environment,
	 * and --send-alert is given the path after that. */
	if (config_resolve_path(path, &resolved, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return 1;
	}
	path = resolved;
	if (config_load(&cfg, path, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		free(resolved);
		return 1;
	}
	log_init(PROGRAM, cfg.log_level);
	/* --check-config creates nothing: its log lines go to stderr. */
	if (mode != 'C' && cfg.log_file != NULL &&
	    log_open_file(cfg.log_file, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		config_cleanup(&cfg);
		free(resolved);
		return 1;
	}
	/* Until it runs, what stops it is said on stderr too (the journal). */
	log_echo_errors(true);
	switch (mode) {
	case 'C':
		rc = check_config(&cfg, path);
		goto out;
	case 'L':
		rc = dispatch_admin_list_dead(&cfg, sel.changes);
		goto out;
	case 'R':
	case MODE_REDELIVER:
		rc = dispatch_admin_change_rows(&cfg, mode == 'R' ? HANDOFF_ADMIN_REQUEUE
						   : HANDOFF_ADMIN_REDELIVER,
				 argv + optind, (size_t)(argc - optind), &sel,
				 dry_run);
		goto out;
	case MODE_PAUSE:
	case MODE_RESUME:
		rc = dispatch_admin_set_paused(&cfg, mode == MODE_PAUSE);
		goto out;
	case MODE_SHOW:
		rc = dispatch_admin_show(&cfg, sel.changes, argv + optind,
			      (size_t)(argc - optind));
		goto out;
	case MODE_SEND_ALERT:
		rc = dispatch_admin_send_alert(&cfg, from != NULL ? from : PROGRAM,
				argv + optind, (size_t)(argc - optind));
		goto out;
	default:
		break;
	}
	if (handoff_check_config(&cfg, &err) != 0 ||
	    handoff_store_check_config(&cfg, &err) != 0 ||
	    alert_check_config(&cfg, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = 1;
		goto out;
	}
	if (transport_pick_global_init(&err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = 1;
		goto out;
	}
	if (cfg.dispatch_concurrency > 1 && !once) {
		/* Nothing points into argv's strings any more (the options
		 * are read): they become the process titles. */
		pool_title_init(argc, argv);
		rc = run_master(&cfg, path);
	} else if (install_signals() != 0) {
		log_error("cannot set up signal handling: %s", strerror(errno));
		rc = 1;
	} else {
		rc = run_dispatcher(&cfg, -1, once,
				once ? timing_now_us() +
					       (int64_t)once_s * 1000000
				     : 0);
	}
	transport_pick_global_cleanup();
out:
	config_cleanup(&cfg);
	free(resolved);
	return rc;
}
