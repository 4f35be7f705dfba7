/* metrics_reconcile.c - reconciliation's figures in the shared segment
 * (see metrics_reconcile.h; the layout is scoreboard.h's). Renders nothing:
 * lib/operator/status_reconcile.c and page.c do.
 */
#include "config.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "metrics_reconcile.h"
#include "scoreboard.h"

_Static_assert(SCOREBOARD_RECONCILE_ERROR_WORDS * 8 ==
		       METRICS_RECONCILE_ERROR_MAX + 1,
	       "the error's words hold METRICS_RECONCILE_ERROR_MAX bytes");

static void publish_one(struct scoreboard_reconcile *v,
			const struct metrics_reconcile *r)
{
	unsigned flags = (r->known ? SCOREBOARD_RECONCILE_KNOWN : 0) |
			 (r->failing ? SCOREBOARD_RECONCILE_FAILING : 0) |
			 (r->stale ? SCOREBOARD_RECONCILE_STALE : 0) |
			 (r->notify_known ? SCOREBOARD_NOTIFY_KNOWN : 0) |
			 (r->notify_waiting ? SCOREBOARD_NOTIFY_WAITING : 0);

	scoreboard_write_begin(&v->seq);
	atomic_store_explicit(&v->flags, flags, memory_order_relaxed);
	atomic_store_explicit(&v->failed_passes, r->failed_passes,
			      memory_order_relaxed);
	atomic_store_explicit(&v->recovered, r->recovered,
			      memory_order_relaxed);
	atomic_store_explicit(&v->discrepancies, r->discrepancies,
			      memory_order_relaxed);
	atomic_store_explicit(&v->last_success_s, r->last_success_s,
			      memory_order_relaxed);
	atomic_store_explicit(&v->last_error_s, r->last_error_s,
			      memory_order_relaxed);
	atomic_store_explicit(&v->notify_pending, r->notify_pending,
			      memory_order_relaxed);
	atomic_store_explicit(&v->notify_done, r->notify_done,
			      memory_order_relaxed);
	atomic_store_explicit(&v->notify_rejected, r->notify_rejected,
			      memory_order_relaxed);
	atomic_store_explicit(&v->notify_oldest_s, r->notify_oldest_s,
			      memory_order_relaxed);
	scoreboard_store_words(v->error, SCOREBOARD_RECONCILE_ERROR_WORDS,
			       r->last_error,
			       strnlen(r->last_error,
				       METRICS_RECONCILE_ERROR_MAX));
	scoreboard_write_end(&v->seq);
}

void metrics_reconcile_publish(struct metrics *m,
			       const struct metrics_reconcile *rows)
{
	if (m == NULL)
		return;
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		publish_one(&m->seg->reconcile[p], &rows[p]);
	scoreboard_set(&m->seg->reconcile_at_s, (unsigned long long)time(NULL));
}

/* One entry, consistent; an entry that kept changing reads as unknown. */
static void read_one(const struct scoreboard_reconcile *v,
		     struct metrics_reconcile *out)
{
	for (int tries = 0; tries < 64; tries++) {
		unsigned before = scoreboard_read_begin(&v->seq), flags;

		if (before % 2 != 0)
			continue;
		flags = atomic_load_explicit(&v->flags, memory_order_relaxed);
		out->failed_passes = atomic_load_explicit(&v->failed_passes,
							  memory_order_relaxed);
		out->recovered = atomic_load_explicit(&v->recovered,
						      memory_order_relaxed);
		out->discrepancies = atomic_load_explicit(&v->discrepancies,
							  memory_order_relaxed);
		out->last_success_s = atomic_load_explicit(
			&v->last_success_s, memory_order_relaxed);
		out->last_error_s = atomic_load_explicit(&v->last_error_s,
							 memory_order_relaxed);
		out->notify_pending = atomic_load_explicit(
			&v->notify_pending, memory_order_relaxed);
		out->notify_done = atomic_load_explicit(&v->notify_done,
							memory_order_relaxed);
		out->notify_rejected = atomic_load_explicit(
			&v->notify_rejected, memory_order_relaxed);
		out->notify_oldest_s = atomic_load_explicit(
			&v->notify_oldest_s, memory_order_relaxed);
		scoreboard_load_words(v->error, SCOREBOARD_RECONCILE_ERROR_WORDS,
				      out->last_error);
		if (!scoreboard_read_end(&v->seq, before))
			continue;
		out->known = (flags & SCOREBOARD_RECONCILE_KNOWN) != 0;
		out->failing = (flags & SCOREBOARD_RECONCILE_FAILING) != 0;
		out->stale = (flags & SCOREBOARD_RECONCILE_STALE) != 0;
		out->notify_known = (flags & SCOREBOARD_NOTIFY_KNOWN) != 0;
		out->notify_waiting = (flags & SCOREBOARD_NOTIFY_WAITING) != 0;
		return;
	}
	memset(out, 0, sizeof(*out));
}

bool metrics_reconcile_read(const struct metrics *m,
			    struct metrics_reconcile *rows, int64_t *at_s)
{
	*at_s = (int64_t)scoreboard_get(&m->seg->reconcile_at_s);
	if (*at_s == 0)
		return false;
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		read_one(&m->seg->reconcile[p], &rows[p]);
	return true;
}
