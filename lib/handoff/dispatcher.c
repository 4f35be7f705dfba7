/* dispatcher.c - payhook-dispatch's claim -> attempt -> record loop and the
 * policy behind it: back-off, dead letters, the target's back-pressure and
 * the lease's margin (see dispatcher.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dispatcher.h"
#include "log.h"
#include "notify_watch.h"
#include "reconcile_watch.h"

/* Waits after a failed claim: doubling from the first to the last, so a
 * database that is back is used again within DB_RETRY_MAX_MS. */
#define DB_RETRY_MIN_MS 100L
#define DB_RETRY_MAX_MS 2000L
/* While the database keeps failing, one warning per this many ms. */
#define DB_WARN_EVERY_MS 30000L
/* Waits between tries to record an attempt's result (within its lease). */
#define RECORD_RETRY_MIN_MS 100L
#define RECORD_RETRY_MAX_MS 1000L

/* The log label of a row: two ids, a change's kind, object and state. */
#define DISPATCHER_LABEL_MAX 768

/* Events one judgement can bring: a circuit closing, opening, a death. */
#define DISPATCHER_PENDING_MAX 4

/* The lease of an alert being sent (dispatch_alerts): another dispatcher
 * sends it when the one that claimed it died. */
#define ALERT_LEASE_MS 60000L

struct dispatcher {
	const struct config *cfg;
	struct dispatcher_env env;
	bool command;              /* dispatch_command, else dispatch_url */
	/* The target's state on env's clock: read from dispatch_target
	 * (shared), else this process's own. */
	struct target_state t;
	int64_t probe_us;          /* open: this process's probe under way
				    * started; 0 */
	int64_t next_start_us;     /* dispatch_rate_per_s */
	struct target_store *ts;   /* the shared state; NULL: none */
	bool shared;               /* ts works (the table exists) */
	/* This attempt closed the circuit: what the outage held back is
	 * made due once the attempt is recorded. */
	bool closed_now;
	int64_t synced_us;         /* when t was last read or written there */
	int64_t written_us;        /* when this process last wrote it */
	int64_t offset_us;         /* env's clock - the database's */
	bool offset_known;
	bool alerts_due;           /* alerts were decided here, not sent */
	struct dispatcher_circuit told; /* what on_circuit was last told */
	bool told_once;
	/* Events judged, not yet flushed (at most one per attempt of each
	 * kind). */
	struct dispatcher_event pending[DISPATCHER_PENDING_MAX];
	size_t pending_count;
	int64_t gauges_at_us;      /* when the gauges were last read */
	bool reconcile_missing;    /* no reconcile_cursors (or its counts) */
	bool notify_missing;       /* no notifications table */
	struct dispatcher_stats stats;
};

struct dispatcher *dispatcher_new(const struct config *cfg,
				  const struct dispatcher_env *env,
				  struct error *err)
{
	struct dispatcher *d = calloc(1, sizeof(*d));

	if (d == NULL) {
		error_set(err, "dispatcher: out of memory");
		return NULL;
	}
	d->cfg = cfg;
	d->env = *env;
	d->command = cfg->dispatch_url == NULL || cfg->dispatch_url[0] == '\0';
	d->t.since_us = env->now_us(env->ctx);
	return d;
}

void dispatcher_free(struct dispatcher *d)
{
	if (d != NULL)
		target_store_free(d->ts);
	free(d);
}

static int64_t now_us(const struct dispatcher *d)
{
	return d->env.now_us(d->env.ctx);
}

/* Keeps an event for dispatcher_flush_events; returns it (NULL when there
 * is no room). */
static struct dispatcher_event *fire(struct dispatcher *d,
				     enum dispatcher_event_kind kind,
				     const struct handoff_row *row,
				     const char *detail)
{
	struct dispatcher_event *event;

	if (d->pending_count == DISPATCHER_PENDING_MAX)
		return NULL;
	event = &d->pending[d->pending_count++];
	memset(event, 0, sizeof(*event));
	event->kind = kind;
	event->row_kind = row->kind;
	event->id = row->id;
	if (row->kind == HANDOFF_ROW_CHANGE)
		snprintf(event->change, sizeof(event->change), "%s %.*s %s",
			 row->change.kind, (int)row->change.object_id_len,
			 row->change.object_id, row->change.state);
	snprintf(event->provider, sizeof(event->provider), "%s", row->provider);
	snprintf(event->transaction_id, sizeof(event->transaction_id), "%s",
		 row->transaction_id);
	event->attempts = row->attempts;
	event->failures = d->t.failures;
	snprintf(event->detail, sizeof(event->detail), "%s",
		 detail != NULL ? detail : "");
	return event;
}

/* The log line of an event, where it was decided. */
static void log_event(const struct dispatcher *d,
		      const struct dispatcher_event *e)
{
	if (e->kind == DISPATCHER_EVENT_CIRCUIT_OPEN)
		log_error("circuit=open: the target failed %u attempts in a "
			  "row (last: %s); one probe at a time until it "
			  "answers 2xx, and no attempt counts meanwhile",
			  e->failures, e->detail);
	else if (e->kind == DISPATCHER_EVENT_CIRCUIT_CLOSED)
		log_info("circuit=closed: the target answered 2xx again; "
			 "delivering in full batches");
	else if (e->kind == DISPATCHER_EVENT_TARGET_WAITING)
		log_error("target=waiting: the target has asked to wait "
			  "(Retry-After) for %u s in a row, "
			  "dispatch_alert_after_s %ld (last: %s)",
			  e->failures, d->cfg->dispatch_alert_after_s,
			  e->detail);
}

void dispatcher_flush_events(struct dispatcher *d)
{
	for (size_t i = 0; i < d->pending_count; i++) {
		const struct dispatcher_event *e = &d->pending[i];

		log_event(d, e);
		/* No shared table: this process's only try (its line says
		 * why it failed). */
		if (d->env.on_event != NULL)
			(void)d->env.on_event(d->env.ctx, e);
	}
	d->pending_count = 0;
}

void dispatcher_alert_init(struct dispatcher_alert *a,
			   const struct dispatcher_event *e)
{
	memset(a, 0, sizeof(*a));
	a->message.detail = e->detail;
	a->message.episode = e->alert_id;
	if (e->kind == DISPATCHER_EVENT_DEAD &&
	    e->row_kind == HANDOFF_ROW_CHANGE) {
		/* No "payment" object: the id is the change's. */
		a->message.event = "change_dead";
		a->message.provider = e->provider;
		a->message.transaction_id = e->transaction_id;
		snprintf(a->summary, sizeof(a->summary),
			 "the change %s of payment %s %s (change id %llu) is "
			 "dead after %lu attempts: it and the later changes of "
			 "its object will not be handed on by themselves",
			 e->change, e->provider, e->transaction_id, e->id,
			 e->attempts);
		snprintf(a->action, sizeof(a->action),
			 "fix what the target refused (see detail), then run "
			 "payhook-dispatch --requeue --changes %llu; "
			 "--list-dead --changes lists every dead change",
			 e->id);
	} else if (e->kind == DISPATCHER_EVENT_DEAD) {
		a->message.event = "payment_dead";
		a->message.id = e->id;
		a->message.provider = e->provider;
		a->message.transaction_id = e->transaction_id;
		snprintf(a->summary, sizeof(a->summary),
			 "payment %s %s (id %llu) is dead after %lu attempts: "
			 "it will not be handed on again by itself",
			 e->provider, e->transaction_id, e->id, e->attempts);
		snprintf(a->action, sizeof(a->action),
			 "fix what the target refused (see detail), then run "
			 "payhook-dispatch --requeue %llu; --list-dead lists "
			 "every dead payment", e->id);
	} else if (e->kind == DISPATCHER_EVENT_CIRCUIT_OPEN) {
		a->message.event = "circuit_open";
		snprintf(a->summary, sizeof(a->summary),
			 "the hand-off target failed %u attempts in a row: "
			 "payments wait (none goes dead), one probe at a time",
			 e->failures);
		snprintf(a->action, sizeof(a->action),
			 "check that the target (dispatch_url or "
			 "dispatch_command) is up and answers 2xx; a "
			 "circuit_closed alert follows when it does");
	} else if (e->kind == DISPATCHER_EVENT_RECONCILE_FAILING) {
		a->message.event = "reconcile_failing";
		a->message.provider = e->provider;
		snprintf(a->summary, sizeof(a->summary),
			 "payhook-reconcile's passes for %s failed %u times in "
			 "a row: webhooks that never came are not recovered "
			 "for it", e->provider, e->failures);
		snprintf(a->action, sizeof(a->action),
			 "fix what its error says (see detail: the API key, "
			 "%s_api_base, the provider), then run "
			 "payhook-reconcile --once --provider %s; a "
			 "reconcile_recovered alert follows when a pass "
			 "completes", e->provider, e->provider);
	} else if (e->kind == DISPATCHER_EVENT_RECONCILE_STALE) {
		a->message.event = "reconcile_stale";
		a->message.provider = e->provider;
		snprintf(a->summary, sizeof(a->summary),
			 "no pass of payhook-reconcile for %s has completed "
			 "for a day or more: webhooks that never came are not "
			 "recovered for it", e->provider);
		snprintf(a->action, sizeof(a->action),
			 "check that payhook-reconcile runs (its crontab line "
			 "or service) with %s_api_key set, and run "
			 "payhook-reconcile --once --provider %s; a "
			 "reconcile_recovered alert follows when a pass "
			 "completes", e->provider, e->provider);
	} else if (e->kind == DISPATCHER_EVENT_RECONCILE_RECOVERED) {
		a->message.event = "reconcile_recovered";
		a->message.provider = e->provider;
		snprintf(a->summary, sizeof(a->summary),
			 "a pass of payhook-reconcile for %s completed again",
			 e->provider);
		snprintf(a->action, sizeof(a->action),
			 "nothing; the pass listed again what the provider "
			 "holds since its cursor and recorded what was "
			 "missing");
	} else if (e->kind == DISPATCHER_EVENT_NOTIFY_WAITING) {
		a->message.event = "notify_waiting";
		a->message.provider = e->provider;
		snprintf(a->summary, sizeof(a->summary),
			 "%u notifications of %s are pending, one for "
			 "notify_alert_after_s or longer: what they name is "
			 "not recorded until payhook-reconcile fetches it",
			 e->failures, e->provider);
		snprintf(a->action, sizeof(a->action),
			 "check that payhook-reconcile runs as a daemon (or "
			 "its --once --notify cron line) with %s_api_key set "
			 "and can reach the API (see detail and its log); the "
			 "episode ends once none is pending that long",
			 e->provider);
	} else if (e->kind == DISPATCHER_EVENT_TARGET_WAITING) {
		a->message.event = "target_waiting";
		snprintf(a->summary, sizeof(a->summary),
			 "the hand-off target has asked to wait (429 or 503 "
			 "with Retry-After) for %u s or longer in a row: "
			 "payments wait (none goes dead)", e->failures);
		snprintf(a->action, sizeof(a->action),
			 "check the target's capacity or rate limit (see "
			 "detail; dispatch_rate_per_s caps payhook's rate); "
			 "delivery goes on by itself when it answers 2xx");
	} else {
		a->message.event = "circuit_closed";
		snprintf(a->summary, sizeof(a->summary),
			 "the hand-off target answers 2xx again: delivery "
			 "goes on in full batches");
		snprintf(a->action, sizeof(a->action),
			 "nothing; the payments that waited are delivered "
			 "now (payhook_dispatch_pending falls)");
	}
	a->message.summary = a->summary;
	a->message.action = a->action;
}

/* ---- the policy ---- */

void dispatcher_circuit(const struct dispatcher *d,
			struct dispatcher_circuit *c)
{
	memset(c, 0, sizeof(*c));
	c->failures = d->t.failures;
	c->since_us = d->t.since_us;
	c->pause_until_us = d->t.pause_until_us > now_us(d) ? d->t.pause_until_us
							    : 0;
	c->last_status = d->t.last_status;
	c->last_error = d->t.last_error;
	if (!d->t.open) {
		c->state = DISPATCHER_CIRCUIT_CLOSED;
	} else if (d->probe_us != 0 ||
		   (d->t.probe_until_us > now_us(d) && !d->t.probe_mine)) {
		/* A probe under way, here or in another process. */
		c->state = DISPATCHER_CIRCUIT_HALF_OPEN;
		if (d->probe_us != 0)
			c->since_us = d->probe_us;
	} else {
		c->state = DISPATCHER_CIRCUIT_OPEN;
		c->next_probe_us = d->t.next_probe_us;
	}
}

/* Tells env's on_circuit of the circuit when it changed since last told. */
static void tell_circuit(struct dispatcher *d)
{
	struct dispatcher_circuit c;

	dispatcher_circuit(d, &c);
	if (d->told_once && c.state == d->told.state &&
	    c.since_us == d->told.since_us && c.failures == d->told.failures &&
	    c.next_probe_us == d->told.next_probe_us &&
	    c.pause_until_us == d->told.pause_until_us &&
	    c.last_status == d->told.last_status)
		return;
	d->told = c;
	d->told_once = true;
	if (d->env.on_circuit != NULL)
		d->env.on_circuit(d->env.ctx, &c);
}

void dispatcher_test_target(const struct dispatcher *d,
			    struct target_state *s)
{
	*s = d->t;
}

void dispatcher_set_target(struct dispatcher *d, const struct target_state *s)
{
	d->t = *s;
	tell_circuit(d);
}

static void judge(struct dispatcher *d, const struct handoff_row *row,
		  const struct transport_outcome *out,
		  struct dispatcher_verdict *verdict);

void dispatcher_judge(struct dispatcher *d, const struct handoff_row *row,
		      const struct transport_outcome *out,
		      struct dispatcher_verdict *verdict)
{
	/* The probe, if this was one, is over: its result decides. */
	d->probe_us = 0;
	d->t.probe_until_us = 0;
	d->t.probe_mine = false;
	judge(d, row, out, verdict);
	tell_circuit(d);
}

/* A 4xx other than 408 (a timeout) and 429 (too many): the target
 * answered, and refused that row. */
static bool rejected(const struct transport_outcome *out)
{
	return out->http_status >= 400 && out->http_status <= 499 &&
	       out->http_status != 408 && out->http_status != 429;
}

/* dispatcher_judge's verdict and the target's state. */
static void judge(struct dispatcher *d, const struct handoff_row *row,
		  const struct transport_outcome *out,
		  struct dispatcher_verdict *verdict)
{
	const struct config *cfg = d->cfg;
	struct target_state *t = &d->t;
	int64_t now = now_us(d);
	bool outage;
	unsigned long steps;

	memset(verdict, 0, sizeof(*verdict));
	verdict->counted = true;
	t->last_attempt_us = now;
	t->last_status = out->http_status > 0 ? out->http_status : 0;
	if (out->delivered) {
		verdict->result = DISPATCHER_DELIVERED;
		verdict->reason = "delivered";
		t->failures = 0;
		t->dead_episode = false;
		t->waiting_episode = false;
		t->pause_since_us = 0;
		t->last_success_us = now;
		t->last_error[0] = '\0';
		if (t->open) {
			t->open = false;
			t->since_us = now;
			t->next_probe_us = 0;
			d->closed_now = true;
			fire(d, DISPATCHER_EVENT_CIRCUIT_CLOSED, row, out->detail);
		}
		return;
	}
	snprintf(t->last_error, sizeof(t->last_error), "%s", out->detail);
	if (out->permanent) {
		/* The row's fault, not the target's: it says nothing of an
		 * outage. */
		verdict->result = DISPATCHER_DEAD;
		verdict->reason = "permanent";
		goto dead;
	}
	if (out->retry_after_ms > 0) {
		/* The target asks for time: all of it waits, and nothing is
		 * used up. Capped, so a year-long Retry-After is a long
		 * back-off, not a stuck dispatcher. */
		long wait = out->retry_after_ms < cfg->dispatch_backoff_max_ms
				    ? out->retry_after_ms
				    : cfg->dispatch_backoff_max_ms;
		int64_t until = now + (int64_t)wait * 1000;

		if (until > t->pause_until_us)
			t->pause_until_us = until;
		if (t->pause_since_us == 0)
			t->pause_since_us = now;
		verdict->result = DISPATCHER_RETRY;
		verdict->counted = false;
		verdict->delay_ms = wait;
		verdict->reason = "retry-after";
		/* Once per episode (until a 2xx): the wait asked for so far,
		 * this one included. */
		if (!t->waiting_episode &&
		    t->pause_until_us - t->pause_since_us >=
			    (int64_t)cfg->dispatch_alert_after_s * 1000000) {
			struct dispatcher_event *e;

			t->waiting_episode = true;
			e = fire(d, DISPATCHER_EVENT_TARGET_WAITING, row,
				 out->detail);
			/* Its "failures": the seconds asked for so far. */
			if (e != NULL)
				e->failures = (unsigned)((t->pause_until_us -
							  t->pause_since_us) /
							 1000000);
		}
		return;
	}
	if (rejected(out)) {
		/* That row's fault: an attempt used, the target's run of
		 * failures and its circuit untouched. */
		if (row->attempts >= (unsigned long)cfg->dispatch_max_attempts) {
			verdict->result = DISPATCHER_DEAD;
			verdict->reason = "rejected, no attempts left";
			goto dead;
		}
		verdict->result = DISPATCHER_RETRY;
		verdict->reason = "rejected";
		verdict->delay_ms = handoff_store_backoff_ms(
			cfg, row->attempts, d->env.random(d->env.ctx));
		return;
	}
	/* An outage: the target's previous attempt (from any dispatcher)
	 * failed as well (it answers nobody with 2xx), or its circuit is
	 * open. A payment that fails while others succeed finds the run
	 * broken by their 2xx. */
	outage = t->failures > 0 || t->open;
	t->failures++;
	if (!t->open && t->failures >= (unsigned)cfg->dispatch_circuit_failures) {
		t->open = true;
		t->since_us = now;
		t->opened_total++;
		d->stats.circuit_opened++;
		fire(d, DISPATCHER_EVENT_CIRCUIT_OPEN, row, out->detail);
	}
	/* The delay grows with the row's attempts and with the outage. */
	steps = row->attempts > t->failures ? row->attempts : t->failures;
	if (t->open) {
		/* The next probe waits as a retry would: doubling while the
		 * probes fail, at most dispatch_backoff_max_ms. */
		long probe = handoff_store_backoff_ms(
			cfg, t->failures - (unsigned)cfg->dispatch_circuit_failures + 1,
			d->env.random(d->env.ctx));

		t->next_probe_us = now + (int64_t)probe * 1000;
	}
	if (!outage && row->attempts >= (unsigned long)cfg->dispatch_max_attempts) {
		verdict->result = DISPATCHER_DEAD;
		verdict->reason = "no attempts left";
		goto dead;
	}
	verdict->result = DISPATCHER_RETRY;
	verdict->counted = !outage;
	verdict->reason = outage ? "outage" : "failed";
	verdict->delay_ms = handoff_store_backoff_ms(cfg, steps,
						     d->env.random(d->env.ctx));
	return;
dead:
	if (!t->dead_episode) {
		t->dead_episode = true;
		fire(d, DISPATCHER_EVENT_DEAD, row, out->detail);
	}
}

/* When the target takes an attempt again (env's clock): a Retry-After, an
 * open circuit's next probe, a probe another process holds. */
static int64_t target_free_at(const struct dispatcher *d)
{
	int64_t until = d->t.pause_until_us;

	if (d->t.open && d->probe_us == 0) {
		if (d->t.next_probe_us > until)
			until = d->t.next_probe_us;
		if (!d->t.probe_mine && d->t.probe_until_us > until)
			until = d->t.probe_until_us;
	}
	return until;
}

long dispatcher_wait_ms(const struct dispatcher *d)
{
	int64_t now = now_us(d);
	int64_t until = target_free_at(d);

	if (d->next_start_us > until)
		until = d->next_start_us;
	if (until <= now)
		return 0;
	/* Rounded up: a wait of 0 would spin. */
	return (long)((until - now + 999) / 1000);
}

bool dispatcher_target_blocked(const struct dispatcher *d)
{
	return target_free_at(d) > now_us(d);
}

size_t dispatcher_claim_limit(const struct dispatcher *d)
{
	return d->t.open ? 1 : (size_t)d->cfg->dispatch_batch_size;
}

bool dispatcher_lease_allows(const struct dispatcher *d, int64_t lease_end_us,
			     long wait_ms)
{
	int64_t left_ms = (lease_end_us - now_us(d)) / 1000 - wait_ms;

	/* An attempt that could outlive the lease might run while another
	 * dispatcher delivers the same row. */
	return left_ms > d->cfg->dispatch_timeout_ms + HANDOFF_STORE_LEASE_MARGIN_MS;
}

void dispatcher_started(struct dispatcher *d)
{
	int64_t now = now_us(d), from;

	if (d->t.open) {
		/* The probe: half-open until its result is judged. */
		d->probe_us = now;
		tell_circuit(d);
	}
	if (d->cfg->dispatch_rate_per_s <= 0)
		return;
	from = d->next_start_us > now ? d->next_start_us : now;
	d->next_start_us = from + 1000000 / d->cfg->dispatch_rate_per_s;
}

const char *dispatcher_circuit_name(const struct dispatcher *d)
{
	return d->t.open ? "open" : "closed";
}

const struct dispatcher_stats *dispatcher_stats(const struct dispatcher *d)
{
	return &d->stats;
}

/* ---- the loop ---- */

static bool stopping(struct dispatcher *d)
{
	return d->env.stopping(d->env.ctx);
}

static void wait_ms(struct dispatcher *d, long ms)
{
	d->env.wait_ms(d->env.ctx, ms);
}

/* ---- the target's shared state (target_store.h) ---- */

/* Moves s's times by by microseconds: from the database's clock onto env's,
 * or back. 0 stays "none". */
static void shift_state(struct target_state *s, int64_t by)
{
	int64_t *times[] = { &s->since_us, &s->next_probe_us,
			     &s->probe_until_us, &s->pause_since_us,
			     &s->pause_until_us, &s->last_attempt_us,
			     &s->last_success_us };

	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
		if (*times[i] != 0)
			*times[i] += by;
}

/* Moves within which the clocks' offset is kept: the reads' latency, which
 * would otherwise move every time in the state a little at each read. */
#define CLOCK_SLACK_US 250000

/* env's clock minus the database's, db_now being the database's now: the
 * one kept while it moves less than CLOCK_SLACK_US. */
static int64_t clock_offset(struct dispatcher *d, int64_t db_now)
{
	int64_t by = now_us(d) - db_now;

	if (!d->offset_known || by - d->offset_us > CLOCK_SLACK_US ||
	    d->offset_us - by > CLOCK_SLACK_US) {
		d->offset_us = by;
		d->offset_known = true;
	}
	return d->offset_us;
}

/* A store's answer other than OK: without the table, this process's own
 * view from now on; a failure keeps the view it has. */
static void shared_failed(struct dispatcher *d, enum target_store_status st,
			  const struct error *err)
{
	if (st == TARGET_STORE_MISSING)
		d->shared = false;
	else
		log_debug("the target's shared state: %s", err->message);
}

/* Reads the target's shared state into d. */
static void sync_target(struct dispatcher *d)
{
	struct target_state s;
	struct error err = { "" };
	enum target_store_status st;
	int64_t db_now;

	if (!d->shared)
		return;
	st = target_store_read(d->ts, &s, &db_now, &err);
	if (st != TARGET_STORE_OK) {
		shared_failed(d, st, &err);
		return;
	}
	shift_state(&s, clock_offset(d, db_now));
	dispatcher_set_target(d, &s);
	d->synced_us = now_us(d);
}

/* An event as a row of dispatch_alerts, and back. */
static void event_to_alert(const struct dispatcher_event *e,
			   struct target_alert *a)
{
	static const char *const names[] = {
		[DISPATCHER_EVENT_DEAD] = "payment_dead",
		[DISPATCHER_EVENT_CIRCUIT_OPEN] = "circuit_open",
		[DISPATCHER_EVENT_CIRCUIT_CLOSED] = "circuit_closed",
		[DISPATCHER_EVENT_TARGET_WAITING] = "target_waiting",
		[DISPATCHER_EVENT_RECONCILE_FAILING] = "reconcile_failing",
		[DISPATCHER_EVENT_RECONCILE_STALE] = "reconcile_stale",
		[DISPATCHER_EVENT_RECONCILE_RECOVERED] = "reconcile_recovered",
		[DISPATCHER_EVENT_NOTIFY_WAITING] = "notify_waiting",
	};

	memset(a, 0, sizeof(*a));
	snprintf(a->event, sizeof(a->event), "%s",
		 e->kind == DISPATCHER_EVENT_DEAD &&
				 e->row_kind == HANDOFF_ROW_CHANGE
			 ? "change_dead"
			 : names[e->kind]);
	a->row_kind = (int)e->row_kind;
	a->row_id = e->id;
	snprintf(a->change, sizeof(a->change), "%s", e->change);
	snprintf(a->provider, sizeof(a->provider), "%s", e->provider);
	snprintf(a->transaction_id, sizeof(a->transaction_id), "%s",
		 e->transaction_id);
	a->attempts = e->attempts;
	a->failures = e->failures;
	snprintf(a->detail, sizeof(a->detail), "%s", e->detail);
}

/* Copies src into dst (cap bytes), cut to fit. */
static void copy_text(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void alert_to_event(const struct target_alert *a,
			   struct dispatcher_event *e)
{
	memset(e, 0, sizeof(*e));
	if (strcmp(a->event, "circuit_open") == 0)
		e->kind = DISPATCHER_EVENT_CIRCUIT_OPEN;
	else if (strcmp(a->event, "circuit_closed") == 0)
		e->kind = DISPATCHER_EVENT_CIRCUIT_CLOSED;
	else if (strcmp(a->event, "target_waiting") == 0)
		e->kind = DISPATCHER_EVENT_TARGET_WAITING;
	else if (strcmp(a->event, "reconcile_failing") == 0)
		e->kind = DISPATCHER_EVENT_RECONCILE_FAILING;
	else if (strcmp(a->event, "reconcile_stale") == 0)
		e->kind = DISPATCHER_EVENT_RECONCILE_STALE;
	else if (strcmp(a->event, "reconcile_recovered") == 0)
		e->kind = DISPATCHER_EVENT_RECONCILE_RECOVERED;
	else if (strcmp(a->event, "notify_waiting") == 0)
		e->kind = DISPATCHER_EVENT_NOTIFY_WAITING;
	else
		e->kind = DISPATCHER_EVENT_DEAD;
	e->row_kind = a->row_kind == HANDOFF_ROW_CHANGE ? HANDOFF_ROW_CHANGE
							: HANDOFF_ROW_PAYMENT;
	e->id = a->row_id;
	copy_text(e->change, sizeof(e->change), a->change);
	snprintf(e->provider, sizeof(e->provider), "%s", a->provider);
	snprintf(e->transaction_id, sizeof(e->transaction_id), "%s",
		 a->transaction_id);
	e->attempts = a->attempts;
	e->failures = a->failures;
	copy_text(e->detail, sizeof(e->detail), a->detail);
	e->alert_id = a->alert_id;
}

/* One attempt judged on the target's row, locked. */
struct judging {
	struct dispatcher *d;
	const struct handoff_row *row;
	const struct transport_outcome *out;
	struct dispatcher_verdict *verdict;
	bool judged;
};

static bool judge_locked(void *ctx, struct target_state *s, int64_t db_now,
			 struct target_alert *alerts, size_t *count)
{
	struct judging *j = ctx;
	struct dispatcher *d = j->d;
	int64_t by = clock_offset(d, db_now);

	shift_state(s, by);
	d->t = *s;
	d->pending_count = 0;
	dispatcher_judge(d, j->row, j->out, j->verdict);
	j->judged = true;
	*s = d->t;
	shift_state(s, -by);
	for (size_t i = 0; i < d->pending_count && *count < TARGET_STORE_ALERTS_MAX;
	     i++)
		event_to_alert(&d->pending[i], &alerts[(*count)++]);
	return true;
}

/* Judges an attempt: on the target's shared row (its alerts then go to
 * dispatch_alerts, logged here), else on this process's view (its alerts
 * then go out from here). */
/* True for a delivery to a target that is well as this process saw it
 * within dispatch_poll_ms (closed, no failure in a row, no pause, no
 * episode, the same answer last time): judged on that view, so that the
 * shared row is not locked for every delivery; it is written all the same
 * at least every dispatch_poll_ms (its last 2xx, a run of failures another
 * process began). */
static bool judge_quietly(const struct dispatcher *d,
			  const struct transport_outcome *out)
{
	const struct target_state *t = &d->t;
	int64_t now = now_us(d), every = d->cfg->dispatch_poll_ms * 1000;

	return out->delivered && !t->open && t->failures == 0 &&
	       !t->dead_episode && !t->waiting_episode &&
	       t->pause_since_us == 0 && t->last_error[0] == '\0' &&
	       t->last_status == (out->http_status > 0 ? out->http_status : 0) &&
	       now - d->synced_us < every && now - d->written_us < every;
}

static void judge_attempt(struct dispatcher *d, const struct handoff_row *row,
			  const struct transport_outcome *out,
			  struct dispatcher_verdict *v)
{
	struct judging j = { d, row, out, v, false };
	struct target_state s;
	struct error err = { "" };
	enum target_store_status st = TARGET_STORE_MISSING;

	if (d->shared && judge_quietly(d, out)) {
		dispatcher_judge(d, row, out, v);
		return;
	}
	if (d->shared)
		st = target_store_change(d->ts, judge_locked, &j, &s, &err);
	if (st == TARGET_STORE_OK) {
		d->synced_us = now_us(d);
		d->written_us = d->synced_us;
		for (size_t i = 0; i < d->pending_count; i++)
			log_event(d, &d->pending[i]);
		if (d->pending_count > 0)
			d->alerts_due = true;
		d->pending_count = 0;
		tell_circuit(d);
		return;
	}
	if (st != TARGET_STORE_MISSING || d->shared)
		shared_failed(d, st, &err);
	/* Not written: judged on the view at hand (the judgement made on
	 * the row read, if the failure came after it), its alerts sent from
	 * here. */
	if (!j.judged)
		dispatcher_judge(d, row, out, v);
}

static int send_one(void *ctx, const struct target_alert *a)
{
	struct dispatcher *d = ctx;
	struct dispatcher_event e;

	alert_to_event(a, &e);
	return d->env.on_event != NULL ? d->env.on_event(d->env.ctx, &e) : 0;
}

/* Sends the shared alerts not sent yet (this process's and those of one
 * that died before it sent them). */
static void send_alerts(struct dispatcher *d)
{
	struct error err = { "" };
	enum target_store_status st;
	unsigned sent;

	if (!d->shared)
		return;
	d->alerts_due = false;
	st = target_store_send_alerts(d->ts, ALERT_LEASE_MS, send_one, d,
				      &sent, &err);
	if (st != TARGET_STORE_OK)
		shared_failed(d, st, &err);
}

/* The notifications' queue of the providers that only notify
 * (notify_watch.h): its figures into rows, its alert episodes. A database
 * without the table is said once. */
static void watch_notify(struct dispatcher *d, struct handoff_store *store,
			 struct metrics_reconcile *rows)
{
	struct error err = { "" };
	enum notify_watch_status st;
	unsigned queued;

	if (d->notify_missing)
		return;
	st = notify_watch_run(store, d->cfg, target_store_key(d->ts), rows,
			      &queued, &err);
	if (st == NOTIFY_WATCH_MISSING) {
		log_info("the notifications' queue not watched: %s (its "
			 "figures and alerts need "
			 "db/migrate-16-notifications.sql)", err.message);
		d->notify_missing = true;
		return;
	}
	if (st != NOTIFY_WATCH_OK) {
		log_debug("reading notifications failed: %s", err.message);
		return;
	}
	if (queued > 0)
		d->alerts_due = true;
}

/* payhook-reconcile's figures and alert episodes (reconcile_watch.h),
 * when the target's table is shared (its alerts go to dispatch_alerts).
 * A database without reconcile_cursors' counts is said once. */
static void watch_reconcile(struct dispatcher *d, struct handoff_store *store)
{
	struct metrics_reconcile rows[CONFIG_PROVIDER_COUNT];
	struct error err = { "" };
	enum reconcile_watch_status st;
	unsigned queued;

	if (!d->shared || d->reconcile_missing)
		return;
	st = reconcile_watch_run(store, d->cfg, target_store_key(d->ts), rows,
				 &queued, &err);
	if (st == RECONCILE_WATCH_MISSING) {
		log_info("payhook-reconcile not watched: %s (its figures and "
			 "alerts need db/migrate-10-reconcile.sql and "
			 "db/migrate-12-reconcile-status.sql)", err.message);
		d->reconcile_missing = true;
		return;
	}
	if (st != RECONCILE_WATCH_OK) {
		log_debug("reading reconcile_cursors failed: %s", err.message);
		return;
	}
	if (queued > 0)
		d->alerts_due = true;
	watch_notify(d, store, rows);
	if (d->env.on_reconcile != NULL)
		d->env.on_reconcile(d->env.ctx, rows);
}

/* Writes the UTC wall-clock time ms from now as RFC 3339 into buf. */
static void utc_in(long ms, char *buf, size_t cap)
{
	struct timespec now;
	struct tm tm;
	time_t secs;
	long msec;

	clock_gettime(CLOCK_REALTIME, &now);
	msec = now.tv_nsec / 1000000L + ms % 1000;
	secs = now.tv_sec + ms / 1000 + msec / 1000;
	msec %= 1000;
	if (gmtime_r(&secs, &tm) == NULL ||
	    strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(buf, cap, "?");
		return;
	}
	snprintf(buf + strlen(buf), cap - strlen(buf), ".%03ldZ", msec);
}

/* The row's label in the log: "provider=... transaction_id=...", and for a
 * change its kind, object, state and n. */
static const char *row_label(const struct handoff_row *p, char *buf,
			     size_t cap)
{
	int len = snprintf(buf, cap, "provider=%s transaction_id=%s",
			   p->provider, p->transaction_id);

	if (p->kind == HANDOFF_ROW_CHANGE && len > 0 && (size_t)len < cap)
		snprintf(buf + len, cap - (size_t)len,
			 " change_id=%llu kind=%s object_id=%.*s state=%s n=%lu",
			 p->id, p->change.kind, (int)p->change.object_id_len,
			 p->change.object_id, p->change.state, p->change.n);
	return buf;
}

/* Records an attempt's result, trying again while the claim's lease lasts:
 * the writes are fenced and idempotent, so a late try is harmless, and the
 * lease's end is when another dispatcher may take the row anyway. */
static enum handoff_store_status record_result(
	struct dispatcher *d, struct handoff_store *store, int64_t lease_end_us,
	const struct handoff_row *p, const struct dispatcher_verdict *v,
	const char *detail)
{
	long pause = RECORD_RETRY_MIN_MS;
	struct error err = { "" };
	char label[DISPATCHER_LABEL_MAX];

	row_label(p, label, sizeof(label));

	for (;;) {
		enum handoff_store_status st;
		int64_t left_ms;

		if (v->result == DISPATCHER_DELIVERED)
			st = handoff_store_record_delivered(store, p, &err);
		else if (v->result == DISPATCHER_RETRY)
			st = handoff_store_record_retry(store, p, detail,
							v->delay_ms, v->counted,
							&err);
		else
			st = handoff_store_record_dead(store, p, detail, &err);
		if (st != HANDOFF_STORE_FAILED)
			return st;
		left_ms = (lease_end_us - now_us(d)) / 1000;
		if (left_ms <= pause) {
			log_error("recording the attempt of %s failed: %s; "
				  "giving up as its lease ends", label,
				  err.message);
			return HANDOFF_STORE_FAILED;
		}
		log_warn("recording the attempt of %s failed: %s; trying "
			 "again in %ld ms", label, err.message, pause);
		wait_ms(d, pause);
		pause = pause * 2 < RECORD_RETRY_MAX_MS ? pause * 2
							: RECORD_RETRY_MAX_MS;
	}
}

/* "status=200", "status=-", "exit_status=3", "signal=9". */
static void answer_text(const struct dispatcher *d,
			const struct transport_outcome *out, char *buf,
			size_t cap)
{
	if (!d->command) {
		if (out->http_status > 0)
			snprintf(buf, cap, "status=%ld", out->http_status);
		else
			snprintf(buf, cap, "status=-");
	} else if (out->exit_status >= 0) {
		snprintf(buf, cap, "exit_status=%d", out->exit_status);
	} else if (out->term_signal > 0) {
		snprintf(buf, cap, "exit_status=- signal=%d", out->term_signal);
	} else {
		snprintf(buf, cap, "exit_status=-");
	}
}

static const char *result_name(enum dispatcher_result result)
{
	return result == DISPATCHER_DELIVERED ? "delivered" : "failed";
}

static void counted(struct dispatcher *d, enum dispatcher_count what,
		    int64_t elapsed_us)
{
	if (d->env.on_attempt != NULL)
		d->env.on_attempt(d->env.ctx, what, elapsed_us);
}

/* One attempt at p, its record and its one log line. */
static void attempt(struct dispatcher *d, struct handoff_store *store,
		    struct handoff *handoff, int64_t lease_end_us,
		    struct handoff_row *p)
{
	struct transport_outcome out;
	struct dispatcher_verdict v;
	struct error err = { "" };
	enum handoff_store_status st;
	long long elapsed_ms;
	int64_t started = now_us(d), elapsed_us;
	char answer[48], retry_at[40], label[DISPATCHER_LABEL_MAX];
	const char *what = p->kind == HANDOFF_ROW_CHANGE ? "change" : "payment";

	row_label(p, label, sizeof(label));
	p->attempted = true;
	dispatcher_started(d);
	/* A failure to even try (out of memory, no process, a row that
	 * cannot be expressed) counts as a failed attempt; out.detail says
	 * why, and out.permanent whether retrying can help. */
	if (handoff_deliver(handoff, p, &out, &err) != 0)
		out.delivered = false;
	elapsed_us = now_us(d) - started;
	elapsed_ms = (long long)(elapsed_us / 1000);
	judge_attempt(d, p, &out, &v);
	if (v.result == DISPATCHER_RETRY && strcmp(v.reason, "outage") == 0) {
		/* Marked, so the circuit's closing makes it due at once
		 * (handoff_store_wake_outage). */
		char marked[sizeof(out.detail) + sizeof(HANDOFF_STORE_OUTAGE_PREFIX)];

		snprintf(marked, sizeof(marked), HANDOFF_STORE_OUTAGE_PREFIX "%s",
			 out.detail);
		st = record_result(d, store, lease_end_us, p, &v, marked);
	} else {
		st = record_result(d, store, lease_end_us, p, &v, out.detail);
	}
	if (d->closed_now) {
		long long woke;

		d->closed_now = false;
		woke = handoff_store_wake_outage(store, &err);
		if (woke < 0)
			log_warn("the circuit closed, but what the outage held "
				 "back could not be made due now: %s (it comes "
				 "due as its back-off says)", err.message);
		else if (woke > 0)
			log_info("the circuit closed: %lld payments and changes "
				 "held back by the outage are due now", woke);
	}
	answer_text(d, &out, answer, sizeof(answer));

	if (st == HANDOFF_STORE_SUPERSEDED) {
		d->stats.superseded++;
		counted(d, DISPATCHER_COUNT_SUPERSEDED, elapsed_us);
		log_warn("outcome=superseded %s attempt=%lu %s "
			 "elapsed_ms=%lld: a newer claim took this %s while "
			 "the attempt ran, so its late result (%s) changed "
			 "nothing", label, p->attempts, answer, elapsed_ms,
			 what, result_name(v.result));
	} else if (st == HANDOFF_STORE_FAILED) {
		d->stats.unrecorded++;
		counted(d, DISPATCHER_COUNT_UNRECORDED, elapsed_us);
		log_error("outcome=unrecorded %s attempt=%lu %s "
			  "elapsed_ms=%lld detail=\"%s\": the result (%s) is "
			  "not recorded; the %s comes due again when its lease "
			  "ends", label, p->attempts, answer, elapsed_ms,
			  out.detail, result_name(v.result), what);
	} else if (v.result == DISPATCHER_DELIVERED) {
		d->stats.delivered++;
		d->stats.latency_us_sum += elapsed_us;
		counted(d, DISPATCHER_COUNT_DELIVERED, elapsed_us);
		log_info("outcome=delivered %s attempt=%lu %s elapsed_ms=%lld",
			 label, p->attempts, answer, elapsed_ms);
	} else if (v.result == DISPATCHER_RETRY) {
		if (v.counted)
			d->stats.retried++;
		else
			d->stats.deferred++;
		if (strcmp(v.reason, "retry-after") == 0)
			d->stats.waited++;
		counted(d, v.counted ? DISPATCHER_COUNT_RETRY
				     : DISPATCHER_COUNT_DEFERRED, elapsed_us);
		utc_in(v.delay_ms, retry_at, sizeof(retry_at));
		log_warn("outcome=retry retry_at=%s delay_ms=%ld %s "
			 "attempt=%lu %s elapsed_ms=%lld "
			 "counted=%s reason=%s circuit=%s detail=\"%s\"",
			 retry_at, v.delay_ms, label, p->attempts, answer,
			 elapsed_ms,
			 v.counted ? "yes" : "no", v.reason,
			 dispatcher_circuit_name(d), out.detail);
	} else {
		d->stats.dead++;
		counted(d, DISPATCHER_COUNT_DEAD, elapsed_us);
		log_error("outcome=dead %s attempt=%lu %s elapsed_ms=%lld "
			  "detail=\"%s\": %s; payhook-dispatch --requeue%s "
			  "%llu hands it on again", label, p->attempts, answer,
			  elapsed_ms, out.detail,
			  out.permanent ? "it can never be handed on as it is"
					: "no attempts left",
			  p->kind == HANDOFF_ROW_CHANGE ? " --changes" : "",
			  p->id);
	}
	/* Judged without the shared row: its alerts go from here; judged
	 * on it, those decided here go now (others' left over, at the
	 * gauges' pace). */
	dispatcher_flush_events(d);
	if (d->alerts_due)
		send_alerts(d);
}

/* Gives back batch->items[from..count): not attempted, not counted. */
static void release_rest(struct dispatcher *d, struct handoff_store *store,
			 struct handoff_store_batch *batch, size_t from,
			 const char *why)
{
	struct error err = { "" };
	size_t released = 0;

	for (size_t k = from; k < batch->count; k++) {
		enum handoff_store_status st;

		st = handoff_store_release(store, &batch->items[k], &err);
		if (st == HANDOFF_STORE_FAILED) {
			log_warn("giving back %zu claimed payments failed: %s; "
				 "they come due again when their lease ends",
				 batch->count - k, err.message);
			break;
		}
		if (st == HANDOFF_STORE_OK)
			released++;
	}
	d->stats.released += released;
	log_info("gave back %zu of %zu claimed payments not attempted (%s)",
		 released, batch->count - from, why);
}

/* Reads a change's payment totals again before its attempt; logs a
 * failure, which leaves the claim's. */
static void refresh_totals(struct handoff_store *store, struct handoff_row *p)
{
	struct error err = { "" };
	char label[DISPATCHER_LABEL_MAX];

	if (p->kind != HANDOFF_ROW_CHANGE ||
	    handoff_store_refresh_totals(store, p, &err) == 0)
		return;
	log_warn("reading the payment's totals for %s failed: %s; handing on "
		 "those read when it was claimed",
		 row_label(p, label, sizeof(label)), err.message);
}

/* Delivers a batch in order while no stop was asked for, the target takes
 * attempts and the lease leaves room for a whole one; gives back the rest.
 * Returns false when deadline_us (not 0) left no room for an attempt. */
static bool deliver_batch(struct dispatcher *d, struct handoff_store *store,
			  struct handoff *handoff,
			  struct handoff_store_batch *batch, int64_t deadline_us)
{
	for (size_t i = 0; i < batch->count; i++) {
		long wait;

		/* Another dispatcher may have seen the target fail (or ask
		 * to wait) since: its view is the one that holds. Each
		 * attempt is judged on the row locked anyway, so a view
		 * younger than dispatch_poll_ms is good enough to go on. */
		if (i > 0 && now_us(d) - d->synced_us >=
				     d->cfg->dispatch_poll_ms * 1000)
			sync_target(d);
		for (;;) {
			if (stopping(d)) {
				release_rest(d, store, batch, i, "stopping");
				return true;
			}
			wait = dispatcher_wait_ms(d);
			if (wait == 0)
				break;
			if (dispatcher_target_blocked(d)) {
				release_rest(d, store, batch, i,
					     d->t.open
						     ? "the target's circuit is open"
						     : "the target asked to wait "
						       "(Retry-After)");
				return true;
			}
			/* dispatch_rate_per_s: a short wait, if the lease
			 * and the deadline allow it. */
			if (!dispatcher_lease_allows(d, batch->lease_end_us,
						     wait) ||
			    (deadline_us != 0 &&
			     now_us(d) + (int64_t)wait * 1000 >= deadline_us)) {
				release_rest(d, store, batch, i,
					     "dispatch_rate_per_s leaves too "
					     "little of the lease");
				return true;
			}
			wait_ms(d, wait);
		}
		/* A change's totals as they stand now (the claim's if that
		 * fails), read before the lease is judged: the read takes
		 * lease time too. */
		refresh_totals(store, &batch->items[i]);
		if (!dispatcher_lease_allows(d, batch->lease_end_us, 0)) {
			release_rest(d, store, batch, i,
				     "the lease has too little left for an "
				     "attempt");
			return true;
		}
		if (deadline_us != 0 &&
		    now_us(d) + (int64_t)d->cfg->dispatch_timeout_ms * 1000 >
			    deadline_us) {
			release_rest(d, store, batch, i,
				     "--once: its time is up");
			return false;
		}
		attempt(d, store, handoff, batch->lease_end_us, &batch->items[i]);
	}
	return true;
}

/* Takes the probe of an open circuit for this process. Returns false when
 * another process holds it (or the state moved on): then nothing is
 * claimed now. */
static bool take_probe(struct dispatcher *d)
{
	struct error err = { "" };
	enum target_store_status st;
	bool taken = false;

	if (!d->shared || !d->t.open)
		return true;
	st = target_store_take_probe(d->ts, d->cfg->dispatch_lease_ms, &taken,
				     &err);
	if (st != TARGET_STORE_OK) {
		shared_failed(d, st, &err);
		/* Without the shared row, this process's own probe. */
		return !d->shared;
	}
	if (taken) {
		d->t.probe_mine = true;
		d->t.probe_until_us = now_us(d) +
				      (int64_t)d->cfg->dispatch_lease_ms * 1000;
	}
	return taken;
}

/* Gives the probe back: nothing was due to probe with. */
static void release_probe(struct dispatcher *d)
{
	struct error err = { "" };
	enum target_store_status st;

	if (!d->shared || !d->t.probe_mine)
		return;
	st = target_store_release_probe(d->ts, &err);
	if (st != TARGET_STORE_OK)
		shared_failed(d, st, &err);
	d->t.probe_mine = false;
	d->t.probe_until_us = 0;
}

int dispatcher_run(struct dispatcher *d, struct handoff_store *store,
		   struct handoff *handoff,
		   const struct dispatcher_run_options *options,
		   struct error *err)
{
	const struct config *cfg = d->cfg;
	int64_t deadline = options->once ? options->deadline_us : 0;
	long retry_ms = 0;
	int64_t last_warn_us = 0;
	bool paused_logged = false;

	if (d->ts == NULL) {
		d->ts = target_store_new(cfg, store, err);
		if (d->ts == NULL)
			return -1;
		d->shared = true;
	}
	sync_target(d);
	tell_circuit(d);
	/* Alerts a dispatcher that died left unsent. */
	send_alerts(d);
	while (!stopping(d)) {
		struct handoff_store_batch batch;
		struct handoff_admin_gauges gauges;
		struct error claim_err = { "" };
		long wait;
		bool paused = false, probing = false;
		int rc;

		if (deadline != 0 && now_us(d) >= deadline)
			return error_set(err, "--once: the time bound ran out "
					 "with payments still due");
		sync_target(d);
		/* The metrics' view of the table, now and then: one
		 * indexed statement; and the alerts due again, the
		 * reconcile watch. Before any wait: an open circuit's wait
		 * (when its own alert may be what is due again) does not
		 * pause them. */
		if (d->gauges_at_us == 0 ||
		    now_us(d) - d->gauges_at_us >=
			    DISPATCHER_GAUGES_EVERY_MS * 1000) {
			d->gauges_at_us = now_us(d);
			if (d->env.on_gauges != NULL &&
			    handoff_admin_gauges(store, &gauges, &claim_err) == 0)
				d->env.on_gauges(d->env.ctx, &gauges);
			else if (d->env.on_gauges != NULL)
				log_debug("reading the gauges failed: %s",
					  claim_err.message);
			if (d->env.on_tick != NULL)
				d->env.on_tick(d->env.ctx);
			watch_reconcile(d, store);
			send_alerts(d);
		}
		wait = dispatcher_wait_ms(d);
		if (wait > 0) {
			/* The target's time (Retry-After, the circuit's next
			 * probe, another's probe) or the rate: nothing to
			 * claim before. */
			if (dispatcher_target_blocked(d))
				d->stats.blocked++;
			if (deadline != 0 &&
			    now_us(d) + (int64_t)wait * 1000 >= deadline)
				return error_set(err, "--once: the target asks "
						 "to wait past the time bound");
			/* Shared: another process may end the wait (a probe
			 * that closes the circuit), so look again soon. */
			if (d->shared && wait > cfg->dispatch_poll_ms)
				wait = cfg->dispatch_poll_ms;
			wait_ms(d, wait);
			continue;
		}
		rc = handoff_store_paused(store, &paused, &claim_err);
		if (rc == 0 && paused) {
			if (!paused_logged)
				log_info("delivery paused (payhook-dispatch "
					 "--resume starts it again)");
			paused_logged = true;
			/* Not a failure: the operator asked for it. */
			if (options->once)
				return 0;
			wait_ms(d, cfg->dispatch_poll_ms);
			continue;
		}
		if (rc == 0 && paused_logged) {
			log_info("delivery resumed");
			paused_logged = false;
		}
		if (rc == 0 && d->t.open) {
			/* One probe at a time, whichever process sends it. */
			probing = take_probe(d);
			if (!probing) {
				d->stats.blocked++;
				if (deadline != 0 &&
				    now_us(d) + cfg->dispatch_poll_ms * 1000 >=
					    deadline)
					return error_set(
						err, "--once: another "
						     "payhook-dispatch holds the "
						     "target's probe past the "
						     "time bound");
				wait_ms(d, cfg->dispatch_poll_ms);
				continue;
			}
		}
		if (rc == 0)
			rc = handoff_store_claim(store, dispatcher_claim_limit(d),
						 &batch, &claim_err);
		if (rc != 0) {
			int64_t now = now_us(d);

			if (probing)
				release_probe(d);
			retry_ms = retry_ms == 0 ? DB_RETRY_MIN_MS
				   : retry_ms * 2 < DB_RETRY_MAX_MS ? retry_ms * 2
								    : DB_RETRY_MAX_MS;
			if (last_warn_us == 0 ||
			    now - last_warn_us >= DB_WARN_EVERY_MS * 1000) {
				log_warn("claiming due payments failed: %s; "
					 "trying again every %ld ms at most",
					 claim_err.message, DB_RETRY_MAX_MS);
				last_warn_us = now;
			} else {
				log_debug("claiming due payments failed: %s",
					  claim_err.message);
			}
			if (deadline != 0 &&
			    now + (int64_t)retry_ms * 1000 >= deadline)
				return error_set(err, "--once: %s",
						 claim_err.message);
			wait_ms(d, retry_ms);
			continue;
		}
		if (retry_ms != 0) {
			log_info("claiming due payments works again");
			retry_ms = 0;
			last_warn_us = 0;
		}
		if (batch.count == 0) {
			if (probing)
				release_probe(d);
			/* Changes that wait were pushed back: more may be
			 * due behind them, so claim again at once. */
			if (batch.waiting > 0)
				continue;
			if (options->once)
				return 0;
			wait_ms(d, cfg->dispatch_poll_ms);
			continue;
		}
		rc = deliver_batch(d, store, handoff, &batch, deadline) ? 0 : -1;
		handoff_store_batch_cleanup(&batch);
		/* A probe given back unused (the batch was released). */
		if (probing && d->t.probe_mine)
			release_probe(d);
		if (rc != 0)
			return error_set(err, "--once: the time bound ran out "
					 "with payments still due");
	}
	return 0;
}
