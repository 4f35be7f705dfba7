/* metrics_dispatch.c - payhook-dispatch's counters, circuits and target in
 * the shared segment (see metrics_dispatch.h; the layout is scoreboard.h's).
 * Renders nothing: lib/operator/status_dispatch.c does.
 */
#include "config.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metrics_dispatch.h"
#include "scoreboard.h"

_Static_assert(METRICS_DISPATCH_RESULTS == SCOREBOARD_DISPATCH_RESULTS,
	       "the segment counts every result");
_Static_assert(METRICS_DISPATCHERS == SCOREBOARD_DISPATCHERS,
	       "the segment holds every dispatcher's circuit");
_Static_assert(SCOREBOARD_TARGET_ERROR_WORDS * 8 ==
		       METRICS_TARGET_ERROR_MAX + 1,
	       "the error's words hold METRICS_TARGET_ERROR_MAX bytes");

static const char *const dispatch_result_names[METRICS_DISPATCH_RESULTS] = {
	"delivered", "retry", "deferred", "dead", "superseded", "unrecorded",
};

const char *metrics_dispatch_result_name(enum metrics_dispatch_result result)
{
	return (unsigned)result < METRICS_DISPATCH_RESULTS
		       ? dispatch_result_names[result]
		       : "?";
}

void metrics_dispatch_attempt(struct metrics *m,
			      enum metrics_dispatch_result result,
			      int64_t elapsed_us)
{
	if (m == NULL || (unsigned)result >= METRICS_DISPATCH_RESULTS)
		return;
	scoreboard_set(&m->seg->dispatch_seen, 1);
	scoreboard_add(&m->seg->dispatch_attempts[result]);
	if (result == METRICS_DISPATCH_DELIVERED)
		scoreboard_observe(m->seg->dispatch_buckets, &m->seg->dispatch_count,
			&m->seg->dispatch_sum_us, elapsed_us);
}

void metrics_dispatch_circuit_opened(struct metrics *m)
{
	if (m == NULL)
		return;
	scoreboard_set(&m->seg->dispatch_seen, 1);
	scoreboard_add(&m->seg->dispatch_circuit_opened);
}

void metrics_dispatch_gauges(struct metrics *m,
			     const struct metrics_dispatch_gauges *g)
{
	if (m == NULL)
		return;
	scoreboard_set(&m->seg->dispatch_seen, 1);
	scoreboard_set(&m->seg->dispatch_pending, g->pending);
	scoreboard_set(&m->seg->dispatch_in_flight, g->in_flight);
	scoreboard_set(&m->seg->dispatch_dead, g->dead);
	scoreboard_set(&m->seg->dispatch_oldest_due_s, g->oldest_due_s);
	scoreboard_set(&m->seg->dispatch_gauges_at_s, (unsigned long long)time(NULL));
}

bool metrics_dispatch_read(const struct metrics *m,
			   struct metrics_dispatch_gauges *g, int64_t *at_s,
			   unsigned long long *circuit_opened)
{
	const struct scoreboard *seg = m->seg;

	*at_s = (int64_t)scoreboard_get(&seg->dispatch_gauges_at_s);
	if (*at_s == 0)
		return false;
	g->pending = scoreboard_get(&seg->dispatch_pending);
	g->in_flight = scoreboard_get(&seg->dispatch_in_flight);
	g->dead = scoreboard_get(&seg->dispatch_dead);
	g->oldest_due_s = scoreboard_get(&seg->dispatch_oldest_due_s);
	*circuit_opened = scoreboard_get(&seg->dispatch_circuit_opened);
	return true;
}

bool metrics_dispatch_read_counters(const struct metrics *m,
				    struct metrics_dispatch_counters *out)
{
	const struct scoreboard *seg = m->seg;

	if (scoreboard_get(&seg->dispatch_seen) == 0)
		return false;
	for (size_t r = 0; r < METRICS_DISPATCH_RESULTS; r++)
		out->attempts[r] = scoreboard_get(&seg->dispatch_attempts[r]);
	for (size_t b = 0; b < METRICS_BUCKETS; b++)
		out->delivery.buckets[b] = scoreboard_get(&seg->dispatch_buckets[b]);
	out->delivery.count = scoreboard_get(&seg->dispatch_count);
	out->delivery.sum_us = scoreboard_get(&seg->dispatch_sum_us);
	out->circuit_opened = scoreboard_get(&seg->dispatch_circuit_opened);
	out->gauges.pending = scoreboard_get(&seg->dispatch_pending);
	out->gauges.in_flight = scoreboard_get(&seg->dispatch_in_flight);
	out->gauges.dead = scoreboard_get(&seg->dispatch_dead);
	out->gauges.oldest_due_s = scoreboard_get(&seg->dispatch_oldest_due_s);
	out->gauges_at_s = (int64_t)scoreboard_get(&seg->dispatch_gauges_at_s);
	return true;
}

static const char *const circuit_state_names[METRICS_CIRCUIT_STATES] = {
	"closed", "open", "half_open",
};

const char *metrics_dispatch_circuit_state_name(enum metrics_circuit_state state)
{
	return (unsigned)state < METRICS_CIRCUIT_STATES
		       ? circuit_state_names[state]
		       : "?";
}

/* This process's circuit entry: the one it holds, else a free one, else
 * one whose process is gone (killed before it could give it back). NULL
 * when every entry is held. */
static struct scoreboard_circuit *circuit_entry(struct metrics *m)
{
	int self = (int)getpid();

	if (m->circuit != NULL &&
	    atomic_load_explicit(&m->circuit->pid, memory_order_relaxed) == self)
		return m->circuit;
	m->circuit = NULL;
	for (int pass = 0; pass < 2 && m->circuit == NULL; pass++) {
		for (size_t i = 0; i < METRICS_DISPATCHERS; i++) {
			struct scoreboard_circuit *c = &m->seg->circuits[i];
			int pid = atomic_load(&c->pid);

			if (pid == self ||
			    ((pid == 0 || (pass == 1 && !scoreboard_pid_alive(pid))) &&
			     atomic_compare_exchange_strong(&c->pid, &pid,
							    self))) {
				m->circuit = c;
				break;
			}
		}
	}
	return m->circuit;
}

void metrics_dispatch_circuit(struct metrics *m,
			      const struct metrics_circuit *circuit)
{
	struct scoreboard_circuit *c;

	if (m == NULL)
		return;
	c = circuit_entry(m);
	scoreboard_set(&m->seg->dispatch_seen, 1);
	if (c == NULL)
		return;
	scoreboard_write_begin(&c->seq);
	atomic_store_explicit(&c->state, (unsigned)circuit->state,
			      memory_order_relaxed);
	atomic_store_explicit(&c->since_ms, circuit->since_ms,
			      memory_order_relaxed);
	atomic_store_explicit(&c->failures, circuit->failures,
			      memory_order_relaxed);
	atomic_store_explicit(&c->next_probe_ms, circuit->next_probe_ms,
			      memory_order_relaxed);
	scoreboard_write_end(&c->seq);
}

void metrics_dispatch_circuit_gone(struct metrics *m)
{
	int self = (int)getpid();

	if (m == NULL || m->circuit == NULL)
		return;
	atomic_compare_exchange_strong(&m->circuit->pid, &self, 0);
	m->circuit = NULL;
}

/* One entry, consistent, of a process that runs; false otherwise. */
static bool read_circuit(const struct scoreboard_circuit *c, struct metrics_circuit *out)
{
	for (int tries = 0; tries < 64; tries++) {
		unsigned before = scoreboard_read_begin(&c->seq);

		if (before % 2 != 0)
			continue;
		out->pid = (pid_t)atomic_load_explicit(&c->pid,
						       memory_order_relaxed);
		out->state = (enum metrics_circuit_state)atomic_load_explicit(
			&c->state, memory_order_relaxed);
		out->since_ms = atomic_load_explicit(&c->since_ms,
						     memory_order_relaxed);
		out->failures = atomic_load_explicit(&c->failures,
						     memory_order_relaxed);
		out->next_probe_ms = atomic_load_explicit(&c->next_probe_ms,
							  memory_order_relaxed);
		if (!scoreboard_read_end(&c->seq, before))
			continue;
		/* seq 0: taken, nothing published yet. */
		if (before == 0 || !scoreboard_pid_alive((int)out->pid))
			return false;
		if ((unsigned)out->state >= METRICS_CIRCUIT_STATES)
			out->state = METRICS_CIRCUIT_CLOSED;
		return true;
	}
	return false;
}

static size_t read_circuits(const struct scoreboard *seg,
			    struct metrics_circuit *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < METRICS_DISPATCHERS && n < cap; i++)
		if (read_circuit(&seg->circuits[i], &out[n]))
			n++;
	return n;
}

size_t metrics_dispatch_read_circuits(const struct metrics *m,
			     struct metrics_circuit *out, size_t cap)
{
	return read_circuits(m->seg, out, cap);
}

void metrics_dispatch_target(struct metrics *m, const struct metrics_target *t)
{
	struct scoreboard_target *v;

	if (m == NULL)
		return;
	v = &m->seg->target;
	scoreboard_set(&m->seg->dispatch_seen, 1);
	scoreboard_write_begin(&v->seq);
	atomic_store_explicit(&v->state, (unsigned)t->state,
			      memory_order_relaxed);
	atomic_store_explicit(&v->since_ms, t->since_ms, memory_order_relaxed);
	atomic_store_explicit(&v->failures, t->failures, memory_order_relaxed);
	atomic_store_explicit(&v->next_probe_ms, t->next_probe_ms,
			      memory_order_relaxed);
	atomic_store_explicit(&v->pause_until_ms, t->pause_until_ms,
			      memory_order_relaxed);
	atomic_store_explicit(&v->last_status, t->last_status,
			      memory_order_relaxed);
	atomic_store_explicit(&v->updated_ms, t->updated_ms,
			      memory_order_relaxed);
	scoreboard_store_words(v->error, SCOREBOARD_TARGET_ERROR_WORDS, t->last_error,
		    strnlen(t->last_error, METRICS_TARGET_ERROR_MAX));
	scoreboard_write_end(&v->seq);
}

static bool read_target(const struct scoreboard *seg, struct metrics_target *out)
{
	const struct scoreboard_target *v = &seg->target;

	for (int tries = 0; tries < 64; tries++) {
		unsigned before = scoreboard_read_begin(&v->seq);

		if (before % 2 != 0)
			continue;
		out->state = (enum metrics_circuit_state)atomic_load_explicit(
			&v->state, memory_order_relaxed);
		out->since_ms = atomic_load_explicit(&v->since_ms,
						     memory_order_relaxed);
		out->failures = atomic_load_explicit(&v->failures,
						     memory_order_relaxed);
		out->next_probe_ms = atomic_load_explicit(&v->next_probe_ms,
							  memory_order_relaxed);
		out->pause_until_ms = atomic_load_explicit(
			&v->pause_until_ms, memory_order_relaxed);
		out->last_status = (long)atomic_load_explicit(
			&v->last_status, memory_order_relaxed);
		out->updated_ms = atomic_load_explicit(&v->updated_ms,
						       memory_order_relaxed);
		scoreboard_load_words(v->error, SCOREBOARD_TARGET_ERROR_WORDS, out->last_error);
		if (!scoreboard_read_end(&v->seq, before))
			continue;
		if (before == 0)
			return false;
		if ((unsigned)out->state >= METRICS_CIRCUIT_STATES)
			out->state = METRICS_CIRCUIT_CLOSED;
		return true;
	}
	return false;
}

bool metrics_dispatch_read_target(const struct metrics *m, struct metrics_target *out)
{
	return read_target(m->seg, out);
}

