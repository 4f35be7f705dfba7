/* dispatch_worker.c - one dispatcher of payhook-dispatch (see
 * dispatch_worker.h): the dispatcher's world (the process's clock, waits,
 * signals, metrics, alerts, retention) around lib/handoff/dispatcher.h's
 * loop, and --once's last line.
 */
#include "config.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYS_RANDOM_H
#include <sys/random.h>
#endif

#include "alert.h"
#include "dispatch_worker.h"
#include "dispatcher.h"
#include "handoff.h"
#include "handoff_admin.h"
#include "handoff_store.h"
#include "log.h"
#include "metrics.h"
#include "metrics_dispatch.h"
#include "metrics_reconcile.h"
#include "pool.h"
#include "retention.h"
#include "signals.h"
#include "timing.h"
#include "transport.h"

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
	signals_wait(NULL, 0, ms);
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
	(void)ctx;
	return signals_stopping();
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
 * exit status: DISPATCH_EXIT_TARGET when the target failed or asked to wait in
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
	printf(DISPATCH_PROGRAM " --once: delivered %llu, failed %llu, waiting %llu, "
	       "dead %llu: %s\n", st->delivered, failed, waiting, st->dead,
	       reason[0] != '\0' ? reason
	       : rc != 0	  ? why
				  : "nothing failed");
	fflush(stdout);
	return reason[0] != '\0' ? DISPATCH_EXIT_TARGET : rc;
}

int dispatch_worker_run(const struct config *cfg, int ready_fd, bool once,
			int64_t deadline_us)
{
	static const int served[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD, 0 };
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

	if (signals_open(served, &err) != 0) {
		log_error("cannot set up signal handling: %s", err.message);
		if (ready_fd >= 0)
			close(ready_fd);
		return 1;
	}
	db = handoff_store_new(cfg, &err);
	if (db != NULL)
		handoff = handoff_new(cfg, &err);
	if (handoff != NULL)
		world.alert = alert_new(cfg, DISPATCH_PROGRAM, &err);
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
		 signals_stop_signal() != 0 ? " on signal " : "",
		 signals_stop_signal(),
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
