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

enum circuit { CIRCUIT_CLOSED, CIRCUIT_OPEN };

struct dispatcher {
	const struct config *cfg;
	struct dispatcher_env env;
	bool command;              /* dispatch_command, else dispatch_url */
	unsigned failures;         /* failed attempts at the target in a row */
	enum circuit circuit;
	int64_t circuit_since_us;  /* when it last opened or closed (or the
				    * dispatcher started) */
	int64_t probe_us;          /* open: the probe under way started; 0 */
	int64_t blocked_until_us;  /* no attempt before: Retry-After, the
				    * circuit's next probe */
	int64_t next_start_us;     /* dispatch_rate_per_s */
	bool dead_episode;         /* a dead alert was sent; ends with the
				    * next delivery */
	struct dispatcher_circuit told; /* what on_circuit was last told */
	bool told_once;
	/* Events judged, not yet flushed (at most one per attempt of each
	 * kind). */
	struct dispatcher_event pending[DISPATCHER_PENDING_MAX];
	size_t pending_count;
	int64_t gauges_at_us;      /* when the gauges were last read */
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
	d->circuit_since_us = env->now_us(env->ctx);
	return d;
}

void dispatcher_free(struct dispatcher *d)
{
	free(d);
}

static int64_t now_us(const struct dispatcher *d)
{
	return d->env.now_us(d->env.ctx);
}

/* Keeps an event for dispatcher_flush_events. */
static void fire(struct dispatcher *d, enum dispatcher_event_kind kind,
		 const struct handoff_row *row, const char *detail)
{
	struct dispatcher_event *event;

	if (d->pending_count == DISPATCHER_PENDING_MAX)
		return;
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
	event->failures = d->failures;
	snprintf(event->detail, sizeof(event->detail), "%s",
		 detail != NULL ? detail : "");
}

void dispatcher_flush_events(struct dispatcher *d)
{
	for (size_t i = 0; i < d->pending_count; i++) {
		const struct dispatcher_event *e = &d->pending[i];

		if (e->kind == DISPATCHER_EVENT_CIRCUIT_OPEN)
			log_error("circuit=open: the target failed %u attempts "
				  "in a row (last: %s); one probe at a time "
				  "until it answers 2xx, and no attempt counts "
				  "meanwhile", e->failures, e->detail);
		else if (e->kind == DISPATCHER_EVENT_CIRCUIT_CLOSED)
			log_info("circuit=closed: the target answered 2xx "
				 "again; delivering in full batches");
		if (d->env.on_event != NULL)
			d->env.on_event(d->env.ctx, e);
	}
	d->pending_count = 0;
}

void dispatcher_alert_init(struct dispatcher_alert *a,
			   const struct dispatcher_event *e)
{
	memset(a, 0, sizeof(*a));
	a->message.detail = e->detail;
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
	c->failures = d->failures;
	c->since_us = d->circuit_since_us;
	if (d->circuit == CIRCUIT_CLOSED) {
		c->state = DISPATCHER_CIRCUIT_CLOSED;
	} else if (d->probe_us != 0) {
		c->state = DISPATCHER_CIRCUIT_HALF_OPEN;
		c->since_us = d->probe_us;
	} else {
		c->state = DISPATCHER_CIRCUIT_OPEN;
		c->next_probe_us = d->blocked_until_us;
	}
}

/* Tells env's on_circuit of the circuit when it changed since last told. */
static void tell_circuit(struct dispatcher *d)
{
	struct dispatcher_circuit c;

	dispatcher_circuit(d, &c);
	if (d->told_once && c.state == d->told.state &&
	    c.since_us == d->told.since_us && c.failures == d->told.failures &&
	    c.next_probe_us == d->told.next_probe_us)
		return;
	d->told = c;
	d->told_once = true;
	if (d->env.on_circuit != NULL)
		d->env.on_circuit(d->env.ctx, &c);
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
	judge(d, row, out, verdict);
	tell_circuit(d);
}

/* dispatcher_judge's verdict and the target's state. */
static void judge(struct dispatcher *d, const struct handoff_row *row,
		  const struct transport_outcome *out,
		  struct dispatcher_verdict *verdict)
{
	const struct config *cfg = d->cfg;
	int64_t now = now_us(d);
	bool outage;
	unsigned long steps;

	memset(verdict, 0, sizeof(*verdict));
	verdict->counted = true;
	if (out->delivered) {
		verdict->result = DISPATCHER_DELIVERED;
		verdict->reason = "delivered";
		d->failures = 0;
		d->dead_episode = false;
		if (d->circuit == CIRCUIT_OPEN) {
			d->circuit = CIRCUIT_CLOSED;
			d->circuit_since_us = now;
			d->blocked_until_us = 0;
			fire(d, DISPATCHER_EVENT_CIRCUIT_CLOSED, row, out->detail);
		}
		return;
	}
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

		if (until > d->blocked_until_us)
			d->blocked_until_us = until;
		verdict->result = DISPATCHER_RETRY;
		verdict->counted = false;
		verdict->delay_ms = wait;
		verdict->reason = "retry-after";
		return;
	}
	/* An outage: the target's previous attempt failed as well (it answers
	 * nobody with 2xx), or its circuit is open. A payment that fails while
	 * others succeed finds the run broken by their 2xx. */
	outage = d->failures > 0 || d->circuit == CIRCUIT_OPEN;
	d->failures++;
	if (d->circuit == CIRCUIT_CLOSED &&
	    d->failures >= (unsigned)cfg->dispatch_circuit_failures) {
		d->circuit = CIRCUIT_OPEN;
		d->circuit_since_us = now;
		d->stats.circuit_opened++;
		fire(d, DISPATCHER_EVENT_CIRCUIT_OPEN, row, out->detail);
	}
	/* The delay grows with the row's attempts and with the outage. */
	steps = row->attempts > d->failures ? row->attempts : d->failures;
	if (d->circuit == CIRCUIT_OPEN) {
		/* The next probe waits as a retry would: doubling while the
		 * probes fail, at most dispatch_backoff_max_ms. */
		long probe = handoff_store_backoff_ms(
			cfg, d->failures - (unsigned)cfg->dispatch_circuit_failures + 1,
			d->env.random(d->env.ctx));

		d->blocked_until_us = now + (int64_t)probe * 1000;
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
	if (!d->dead_episode) {
		d->dead_episode = true;
		fire(d, DISPATCHER_EVENT_DEAD, row, out->detail);
	}
}

long dispatcher_wait_ms(const struct dispatcher *d)
{
	int64_t now = now_us(d);
	int64_t until = d->blocked_until_us > d->next_start_us
				? d->blocked_until_us
				: d->next_start_us;

	if (until <= now)
		return 0;
	/* Rounded up: a wait of 0 would spin. */
	return (long)((until - now + 999) / 1000);
}

bool dispatcher_target_blocked(const struct dispatcher *d)
{
	return d->blocked_until_us > now_us(d);
}

size_t dispatcher_claim_limit(const struct dispatcher *d)
{
	return d->circuit == CIRCUIT_OPEN ? 1 : (size_t)d->cfg->dispatch_batch_size;
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

	if (d->circuit == CIRCUIT_OPEN) {
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
	return d->circuit == CIRCUIT_OPEN ? "open" : "closed";
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
	dispatcher_judge(d, p, &out, &v);
	st = record_result(d, store, lease_end_us, p, &v, out.detail);
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
	dispatcher_flush_events(d);
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
					     d->circuit == CIRCUIT_OPEN
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

	tell_circuit(d);
	while (!stopping(d)) {
		struct handoff_store_batch batch;
		struct handoff_store_gauges gauges;
		struct error claim_err = { "" };
		long wait = dispatcher_wait_ms(d);
		bool paused = false;
		int rc;

		if (deadline != 0 && now_us(d) >= deadline)
			return error_set(err, "--once: the time bound ran out "
					 "with payments still due");
		if (wait > 0) {
			/* The target's time (Retry-After, the circuit's next
			 * probe) or the rate: nothing to claim before. */
			if (deadline != 0 &&
			    now_us(d) + (int64_t)wait * 1000 >= deadline)
				return error_set(err, "--once: the target asks "
						 "to wait past the time bound");
			wait_ms(d, wait);
			continue;
		}
		/* The metrics' view of the table, now and then: one
		 * indexed statement. */
		if (d->gauges_at_us == 0 ||
		    now_us(d) - d->gauges_at_us >=
			    DISPATCHER_GAUGES_EVERY_MS * 1000) {
			d->gauges_at_us = now_us(d);
			if (d->env.on_gauges != NULL &&
			    handoff_store_gauges(store, &gauges, &claim_err) == 0)
				d->env.on_gauges(d->env.ctx, &gauges);
			else if (d->env.on_gauges != NULL)
				log_debug("reading the gauges failed: %s",
					  claim_err.message);
			if (d->env.on_tick != NULL)
				d->env.on_tick(d->env.ctx);
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
		if (rc == 0)
			rc = handoff_store_claim(store, dispatcher_claim_limit(d),
						 &batch, &claim_err);
		if (rc != 0) {
			int64_t now = now_us(d);

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
		if (rc != 0)
			return error_set(err, "--once: the time bound ran out "
					 "with payments still due");
	}
	return 0;
}
