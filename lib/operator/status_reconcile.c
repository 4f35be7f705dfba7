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

/* The queue of the providers that only notify. */
static void put_notify(struct textbuf *o, const struct metrics_reconcile *rows)
{
	put(o, "# HELP payhook_notifications Notifications of the providers "
	       "that only notify in table notifications, by state: pending "
	       "(queued, not fetched yet), done, rejected (an id the API does "
	       "not know).\n# TYPE payhook_notifications gauge\n");
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if (rows[p].notify_known)
			put(o, "payhook_notifications{provider=\"%s\","
			       "state=\"pending\"} %llu\n"
			       "payhook_notifications{provider=\"%s\","
			       "state=\"done\"} %llu\n"
			       "payhook_notifications{provider=\"%s\","
			       "state=\"rejected\"} %llu\n",
			    config_provider_name(p), rows[p].notify_pending,
			    config_provider_name(p), rows[p].notify_done,
			    config_provider_name(p), rows[p].notify_rejected);
	put(o, "# HELP payhook_notifications_oldest_pending_seconds The age of "
	       "the oldest pending notification (0: none pending).\n"
	       "# TYPE payhook_notifications_oldest_pending_seconds gauge\n");
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if (rows[p].notify_known)
			put(o, "payhook_notifications_oldest_pending_seconds"
			       "{provider=\"%s\"} %lld\n",
			    config_provider_name(p), rows[p].notify_oldest_s);
	put(o, "# HELP payhook_notify_waiting 1 while the provider's "
	       "notify_waiting episode is open (one pending past "
	       "notify_alert_after_s).\n# TYPE payhook_notify_waiting gauge\n");
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if (rows[p].notify_known)
			put(o, "payhook_notify_waiting{provider=\"%s\"} %d\n",
			    config_provider_name(p),
			    rows[p].notify_waiting ? 1 : 0);
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
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if (rows[p].notify_known) {
			put_notify(o, rows);
			break;
		}
	put(o, "# HELP payhook_reconcile_timestamp_seconds When "
	       "payhook-dispatch last read reconcile_cursors (Unix time).\n"
	       "# TYPE payhook_reconcile_timestamp_seconds gauge\n"
	       "payhook_reconcile_timestamp_seconds %lld\n", (long long)at_s);
}
