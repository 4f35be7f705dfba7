/* status_reconcile.c - payhook-reconcile's series (see
 * status_reconcile.h). */
#include "config.h"

#include "metrics_reconcile.h"
#include "status_reconcile.h"

/* The exposition is written into a textbuf; put is its short name here. */
#define put textbuf_printf

/* The series of one figure, each known profile's value from value(). */
static void put_series(struct textbuf *o, const char *name, const char *type,
		       const char *help, const struct metrics_reconcile *rows,
		       long long (*value)(const struct metrics_reconcile *r))
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if (rows[p].known)
			put(o, "%s{provider=\"%s\"} %lld\n", name,
			    config_provider_name(p), value(&rows[p]));
}

static long long recovered(const struct metrics_reconcile *r)
{
	return (long long)r->recovered;
}

static long long discrepancies(const struct metrics_reconcile *r)
{
	return (long long)r->discrepancies;
}

static long long last_success(const struct metrics_reconcile *r)
{
	return (long long)r->last_success_s;
}

static long long failed_passes(const struct metrics_reconcile *r)
{
	return (long long)r->failed_passes;
}

void status_reconcile_put(struct textbuf *o, const struct metrics *m)
{
	struct metrics_reconcile rows[CONFIG_PROVIDER_COUNT];
	int64_t at_s;

	if (!metrics_reconcile_read(m, rows, &at_s))
		return;
	put_series(o, "payhook_reconcile_recovered_total", "counter",
		   "Rows payhook-reconcile recorded (payments, refunds, "
		   "disputes whose webhook never came), by profile.",
		   rows, recovered);
	put_series(o, "payhook_reconcile_discrepancies_total", "counter",
		   "Listed payments payhook holds with another amount or "
		   "currency (logged, never applied), by profile.",
		   rows, discrepancies);
	put_series(o, "payhook_reconcile_last_success_timestamp_seconds",
		   "gauge", "When the profile's last complete pass ended (Unix "
		   "time; 0: none yet).", rows, last_success);
	put_series(o, "payhook_reconcile_failed_passes", "gauge",
		   "The profile's failed passes in a row (0 after a complete "
		   "one).", rows, failed_passes);
	put(o, "# HELP payhook_reconcile_alert Alert episodes open: 1 while "
	       "the profile's passes keep failing (failing) or its last "
	       "complete pass is a day old or more (stale).\n"
	       "# TYPE payhook_reconcile_alert gauge\n");
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if (rows[p].known)
			put(o, "payhook_reconcile_alert{provider=\"%s\","
			       "kind=\"failing\"} %d\n"
			       "payhook_reconcile_alert{provider=\"%s\","
			       "kind=\"stale\"} %d\n",
			    config_provider_name(p), rows[p].failing ? 1 : 0,
			    config_provider_name(p), rows[p].stale ? 1 : 0);
	put(o, "# HELP payhook_reconcile_timestamp_seconds When "
	       "payhook-dispatch last read reconcile_cursors (Unix time).\n"
	       "# TYPE payhook_reconcile_timestamp_seconds gauge\n"
	       "payhook_reconcile_timestamp_seconds %lld\n", (long long)at_s);
}
