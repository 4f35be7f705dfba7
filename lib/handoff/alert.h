/* alert.h - tells an operator that something needs them (prefix alert_):
 * one JSON object per alert, POSTed to alert_url (signed as Standard
 * Webhooks with alert_secret, else dispatch_secret) or given to
 * alert_command on its standard input, through the hand-off's transports
 * (transport.h). payhook-dispatch sends a payment going dead and its
 * target's circuit opening and closing; any program holding a
 * configuration can send its own (the pool: workers restarting faster than
 * the back-off allows).
 *
 * Each alert says what happened and what to do. Alerts are sent once, never
 * retried: the log has the same lines, and an alert that fails is logged.
 */
#ifndef PAYHOOK_ALERT_H
#define PAYHOOK_ALERT_H

#include <stdbool.h>

#include "configuration.h"
#include "error.h"

/* One alert's attempt may take this long (the sender waits for it). */
#define ALERT_TIMEOUT_MS 5000L

struct alert; /* a transport, or nothing when no alert key is set; opaque */

/* What one alert says. Strings may be NULL where marked. */
struct alert_message {
	const char *event;          /* "payment_dead", "circuit_open", ... */
	const char *summary;        /* what happened, one sentence */
	const char *action;         /* what to do about it */
	const char *detail;         /* the last error seen; may be NULL */
	/* The payment concerned; id 0 when none (then provider, when set,
	 * is the profile the alert is about: payhook-reconcile's). */
	unsigned long long id;
	const char *provider;
	const char *transaction_id;
	/* The episode's row in dispatch_alerts: the idempotency key is then
	 * "alert:<event>:<episode>" on every try, so a receiver can drop a
	 * resend; 0 for an alert sent once (a key of its own). */
	unsigned long long episode;
};

/* The start-up checks of the alert keys: at most one of alert_url and
 * alert_command, a URL of http:// or https://, alert_secret only with a
 * URL. Returns 0, or -1 with err saying what to set. */
int alert_check_config(const struct config *cfg, struct error *err);

/* Returns an alert sender for cfg (cfg must outlive it; transport_pick_global_init
 * first), one that sends nothing when neither alert key is set, or NULL
 * with err set (out of memory, libcurl refused an option, a bad secret).
 * program names the sender in each alert. */
struct alert *alert_new(const struct config *cfg, const char *program,
			struct error *err);

/* Frees it; NULL is fine. */
void alert_free(struct alert *a);

/* Whether alerts go anywhere. */
bool alert_enabled(const struct alert *a);

/* Sends m once, within ALERT_TIMEOUT_MS. Returns 0 (also when alerts are
 * off), or -1 with err saying why it was not delivered. */
int alert_send(struct alert *a, const struct alert_message *m,
	       struct error *err);

#endif
