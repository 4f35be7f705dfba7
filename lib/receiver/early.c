/* early.c - the rebuild of the lock's early marks (see early.h). */
#include "config.h"

#include "early.h"

struct rebuild {
	struct lock_client *lock;
	unsigned long marked;
};

static int mark_one(void *ctx, const char *provider, const char *id,
		    size_t id_len, struct error *err)
{
	struct rebuild *r = ctx;

	if (lock_mark_early_id(r->lock, lock_scope_of(provider), id, id_len,
			       err) != 0)
		return -1;
	r->marked++;
	return 0;
}

int early_rebuild(struct lock_client *lock, struct lifecycle_store *events,
		  unsigned long *marked, unsigned long *repaired,
		  long *wait_ms, struct error *err)
{
	struct rebuild r = { lock, 0 };
	int due = lock_early_rebuild_due(lock, wait_ms, err);

	*marked = 0;
	*repaired = 0;
	if (due <= 0)
		return due;
	/* By now every transaction under a lease of the server before has
	 * ended: the repair sees all it could have missed. */
	if (lifecycle_store_early_scan(events, mark_one, &r, err) != 0 ||
	    lifecycle_store_repair_totals(events, repaired, err) != 0 ||
	    lock_early_complete(lock, err) != 0)
		return -1;
	*marked = r.marked;
	return 1;
}
