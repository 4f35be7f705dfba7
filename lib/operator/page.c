/* page.c - the operator's page (see page.h). Every figure sits in a table
 * row or a sentence a person reads, and the same figure is in the status
 * and the metrics, so a test (or an operator) can hold one against the
 * other.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "page.h"
#include "metrics_dispatch.h"
#include "metrics_reconcile.h"
#include "response.h"
#include "textbuf.h"

#define CHART_W 360
#define CHART_H 80
#define BAR_W (CHART_W / METRICS_MINUTES)
/* The most workers the page lists one by one (every slot). */
#define POOL_PAGE_WORKERS 1024

static const char style[] =
	"body{font-family:system-ui,sans-serif;margin:0 auto;padding:1rem;"
	"max-width:72rem;color:#1b1b1b;background:#fafafa}"
	"h1{font-size:1.4rem;margin:0 0 .25rem}"
	"h2{font-size:1.1rem;border-bottom:1px solid #ccc}"
	"h3{font-size:1rem;margin:.75rem 0 .25rem}"
	"main{display:grid;grid-template-columns:1fr 1fr;gap:0 2rem}"
	"@media (max-width:600px){main{grid-template-columns:1fr}}"
	"section{min-width:0}#failures,#refusals,#reconcile,#notifications"
	"{grid-column:1/-1}"
	".scroll{overflow-x:auto}"
	"table{border-collapse:collapse;font-size:.9rem}"
	"th,td{text-align:left;padding:.15rem .5rem .15rem 0;"
	"vertical-align:top}"
	"td.n{text-align:right;font-variant-numeric:tabular-nums}"
	"svg{max-width:100%;height:auto;background:#fff;border:1px solid #ddd}"
	".ok{fill:#2e7d32}.retry{fill:#ef6c00}.refused{fill:#c62828}"
	".key span{display:inline-block;width:.8em;height:.8em;"
	"margin:0 .25em 0 .75em}"
	".key .ok{background:#2e7d32}.key .retry{background:#ef6c00}"
	".key .refused{background:#c62828}";

static const char *const kind_names[METRICS_KINDS] = { "ok", "retry",
						      "refused" };

static const char *profile_name(unsigned p)
{
	return p < CONFIG_PROVIDER_COUNT ? config_provider_name(p) : "-";
}

static void row_number(struct textbuf *o, const char *label, long long value)
{
	textbuf_printf(o, "<tr><th scope=\"row\">%s</th><td class=\"n\">%lld"
			  "</td></tr>\n", label, value);
}

static void pool_section(struct textbuf *o, const struct metrics_pool *p,
			 const struct metrics_worker *w, size_t n)
{
	textbuf_printf(o, "<section id=\"pool\">\n<h2>Pool</h2>\n"
			  "<table>\n");
	row_number(o, "workers configured", p->workers_configured);
	row_number(o, "workers total", p->workers_total);
	row_number(o, "workers active", p->workers_active);
	row_number(o, "workers idle", p->workers_idle);
	row_number(o, "requests accepted", (long long)p->accepted);
	row_number(o, "max active", (long long)p->max_active);
	row_number(o, "max children reached",
		   (long long)p->max_children_reached);
	row_number(o, "listen queue", p->listen_queue);
	row_number(o, "max listen queue", p->max_listen_queue);
	row_number(o, "listen queue length", p->listen_queue_len);
	row_number(o, "slow requests", (long long)p->slow_requests);
	row_number(o, "terminated requests",
		   (long long)p->terminated_requests);
	textbuf_printf(o, "</table>\n<h3>Workers</h3>\n<div class=\"scroll\">"
			  "<table>\n<thead><tr><th>pid</th><th>state</th>"
			  "<th>requests</th><th>current ms</th>"
			  "<th>profile</th><th>transaction id</th></tr>"
			  "</thead>\n<tbody>\n");
	for (size_t i = 0; i < n; i++) {
		textbuf_printf(o, "<tr><td class=\"n\">%ld</td><td>%s</td>"
				  "<td class=\"n\">%llu</td>"
				  "<td class=\"n\">%lld</td><td>%s</td><td>",
			       (long)w[i].pid, metrics_stage_name(w[i].stage),
			       w[i].served,
			       (long long)(w[i].elapsed_us / 1000),
			       profile_name(w[i].provider));
		textbuf_html(o, w[i].transaction_id[0] != '\0' ?
					w[i].transaction_id : "-");
		textbuf_printf(o, "</td></tr>\n");
	}
	textbuf_printf(o, "</tbody>\n</table></div>\n</section>\n");
}

/* One profile's hour: its totals in a sentence and 60 stacked bars. */
static void profile_chart(struct textbuf *o, unsigned p,
			  const struct metrics_hour *h)
{
	unsigned long long total[METRICS_KINDS] = { 0 }, peak = 1;

	for (int m = 0; m < METRICS_MINUTES; m++) {
		unsigned long long sum = 0;

		for (int k = 0; k < METRICS_KINDS; k++) {
			total[k] += h->counts[p][m][k];
			sum += h->counts[p][m][k];
		}
		if (sum > peak)
			peak = sum;
	}
	textbuf_printf(o, "<h3>%s</h3>\n<p>ok %llu, retry %llu, refused "
			  "%llu</p>\n", profile_name(p), total[METRICS_OK],
		       total[METRICS_RETRY], total[METRICS_REFUSED]);
	textbuf_printf(o, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" "
			  "height=\"%d\" role=\"img\" aria-label=\"%s: "
			  "answers per minute over the last hour, at most "
			  "%llu\">\n", CHART_W, CHART_H, CHART_W, CHART_H,
		       profile_name(p), peak);
	for (int m = 0; m < METRICS_MINUTES; m++) {
		double y = CHART_H;

		for (int k = 0; k < METRICS_KINDS; k++) {
			double hgt = (double)h->counts[p][m][k] * CHART_H /
				     (double)peak;

			if (h->counts[p][m][k] == 0)
				continue;
			y -= hgt;
			textbuf_printf(o, "<rect class=\"%s\" x=\"%d\" y=\"%.1f\""
					  " width=\"%d\" height=\"%.1f\"/>\n",
				       kind_names[k], m * BAR_W, y, BAR_W - 1,
				       hgt);
		}
	}
	textbuf_printf(o, "</svg>\n");
}

static void hour_section(struct textbuf *o, const struct config *cfg,
			 const struct metrics_hour *h)
{
	textbuf_printf(o, "<section id=\"hour\">\n<h2>Last hour</h2>\n"
			  "<p class=\"key\">Answers per minute, oldest left:"
			  "<span class=\"ok\">&#160;</span>ok (2xx)"
			  "<span class=\"retry\">&#160;</span>retry (409, 5xx)"
			  "<span class=\"refused\">&#160;</span>refused (other 4xx)"
			  "</p>\n");
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		if (config_provider_enabled(cfg, p))
			profile_chart(o, p, h);
	textbuf_printf(o, "</section>\n");
}

/* Unix time t as "YYYY-MM-DD HH:MM:SS" (UTC) into buf, "-" for 0. */
static void utc_text(int64_t t, char *buf, size_t cap)
{
	time_t secs = (time_t)t;
	struct tm tm;

	snprintf(buf, cap, "-");
	if (t != 0 && gmtime_r(&secs, &tm) != NULL)
		strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
}

/* A list of the latest non-2xx answers: the failures of signed requests
 * (id "failures"), or the requests refused before their signature was
 * checked or failing it (id "refusals"). */
static void failures_section(struct textbuf *o, const struct config *cfg,
			     const char *id, const struct metrics_failure *f,
			     size_t n)
{
	bool refusals = strcmp(id, "refusals") == 0;

	textbuf_printf(o, "<section id=\"%s\">\n<h2>%s</h2>\n", id,
		       refusals ? "Refused before the signature"
				: "Recent failures");
	if (refusals)
		textbuf_printf(o, "<p>Requests refused before their "
				  "signature was checked (404, 405, 411, 413, "
				  "415, a short body) or failing it (401): "
				  "kept apart, so that anonymous requests never "
				  "hide a signed request's failure.</p>\n");
	if (n == 0) {
		textbuf_printf(o, "<p>%s since the pool started.</p>\n"
				  "</section>\n",
			       refusals ? "None" :
			       "No answer other than 2xx to a signed request");
		return;
	}
	textbuf_printf(o, "<div class=\"scroll\"><table>\n<thead><tr>"
			  "<th>time (UTC)</th><th>profile</th>"
			  "<th>transaction id</th><th>outcome</th>"
			  "<th>reason</th></tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < n; i++) {
		char when[32];

		utc_text(f[i].time, when, sizeof(when));
		textbuf_printf(o, "<tr><td>%s</td><td>%s</td><td>", when,
			       profile_name(f[i].provider));
		textbuf_html(o, f[i].transaction_id[0] != '\0' ?
					f[i].transaction_id : "-");
		textbuf_printf(o, "</td><td>%s %d</td><td>",
			       response_outcome_name(f[i].outcome),
			       response_outcome_status(f[i].outcome, cfg));
		textbuf_html(o, f[i].reason[0] != '\0' ? f[i].reason : "-");
		textbuf_printf(o, "</td></tr>\n");
	}
	textbuf_printf(o, "</tbody>\n</table></div>\n</section>\n");
}

/* The target as every payhook-dispatch of the database shares it: one
 * circuit, a Retry-After, the last answer's status and error. */
static void target_table(struct textbuf *o, const struct metrics *m)
{
	static const char *const shown[METRICS_CIRCUIT_STATES] = {
		"closed", "open", "half-open (probing)",
	};
	struct metrics_target t;
	char since[32], probe[32], pause[32], at[32];

	textbuf_printf(o, "<h3>Target</h3>\n");
	if (!metrics_dispatch_read_target(m, &t)) {
		textbuf_printf(o, "<p>Not known yet: a payhook-dispatch shows "
				  "the target's state here once it has read "
				  "it.</p>\n");
		return;
	}
	utc_text(t.since_ms / 1000, since, sizeof(since));
	utc_text(t.next_probe_ms / 1000, probe, sizeof(probe));
	utc_text(t.pause_until_ms / 1000, pause, sizeof(pause));
	utc_text(t.updated_ms / 1000, at, sizeof(at));
	textbuf_printf(o, "<table>\n<tr><th scope=\"row\">circuit</th><td>%s"
			  "</td></tr>\n<tr><th scope=\"row\">since (UTC)</th>"
			  "<td>%s</td></tr>\n", shown[t.state], since);
	row_number(o, "failures in a row", (long long)t.failures);
	textbuf_printf(o, "<tr><th scope=\"row\">next probe (UTC)</th><td>%s"
			  "</td></tr>\n<tr><th scope=\"row\">asked to wait "
			  "until (UTC)</th><td>%s</td></tr>\n", probe, pause);
	row_number(o, "last HTTP status", t.last_status);
	textbuf_printf(o, "<tr><th scope=\"row\">last error</th><td>");
	textbuf_html(o, t.last_error[0] != '\0' ? t.last_error : "-");
	textbuf_printf(o, "</td></tr>\n</table>\n<p>Shared by every "
			  "payhook-dispatch of the database (and its --once "
			  "runs), as one last read it at %s UTC. "
			  "<code>payhook-dispatch --show ID</code> says why a "
			  "payment waits.</p>\n", at);
}

/* The target's circuit as each running payhook-dispatch sees it. */
static void circuit_table(struct textbuf *o, const struct metrics *m)
{
	static const char *const shown[METRICS_CIRCUIT_STATES] = {
		"closed", "open", "half-open (probing)",
	};
	struct metrics_circuit *c = calloc(METRICS_DISPATCHERS, sizeof(*c));
	size_t n = c != NULL ? metrics_dispatch_read_circuits(m, c, METRICS_DISPATCHERS)
			     : 0;
	int64_t now = (int64_t)time(NULL);

	textbuf_printf(o, "<h3>Circuit</h3>\n");
	if (n == 0) {
		textbuf_printf(o, "<p>No payhook-dispatch runs now: each one "
				  "that runs shows its view of the target "
				  "here.</p>\n");
		free(c);
		return;
	}
	textbuf_printf(o, "<div class=\"scroll\"><table>\n<thead><tr>"
			  "<th>dispatcher</th><th>circuit</th>"
			  "<th>since (UTC)</th><th>for (s)</th>"
			  "<th>failures in a row</th><th>next probe (UTC)</th>"
			  "</tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < n; i++) {
		char since[32], probe[32];

		utc_text(c[i].since_ms / 1000, since, sizeof(since));
		utc_text(c[i].next_probe_ms / 1000, probe, sizeof(probe));
		textbuf_printf(o, "<tr><td class=\"n\">%ld</td><td>%s</td>"
				  "<td>%s</td><td class=\"n\">%lld</td>"
				  "<td class=\"n\">%llu</td><td>%s</td></tr>\n",
			       (long)c[i].pid, shown[c[i].state], since,
			       (long long)(now - c[i].since_ms / 1000),
			       c[i].failures, probe);
	}
	textbuf_printf(o, "</tbody>\n</table></div>\n<p>Open: the target "
			  "failed dispatch_circuit_failures attempts in a "
			  "row; payments wait (none goes dead) and one probe "
			  "at a time is sent until it answers 2xx.</p>\n");
	free(c);
}

/* The hand-off's figures older than this are said to be stale. */
#define HANDOFF_STALE_S 60

static void handoff_section(struct textbuf *o, const struct metrics *m)
{
	struct metrics_dispatch_gauges g;
	unsigned long long opened;
	int64_t at_s, age_s;

	textbuf_printf(o, "<section id=\"handoff\">\n<h2>Hand-off</h2>\n");
	if (!metrics_dispatch_read(m, &g, &at_s, &opened)) {
		textbuf_printf(o, "<p>Not known: no payhook-dispatch counts into "
				  "this pool's counters (run it with the same "
				  "metrics_file).</p>\n</section>\n");
		return;
	}
	age_s = (int64_t)time(NULL) - at_s;
	textbuf_printf(o, "<table>\n");
	row_number(o, "payments pending", (long long)g.pending);
	row_number(o, "payments in flight", (long long)g.in_flight);
	row_number(o, "payments dead", (long long)g.dead);
	row_number(o, "longest overdue (s)", (long long)g.oldest_due_s);
	row_number(o, "circuit openings", (long long)opened);
	textbuf_printf(o, "</table>\n<p>From payhook-dispatch's metrics, read "
			  "%lld s ago%s. Pending: recorded, not yet delivered "
			  "nor dead.</p>\n", (long long)age_s,
		       age_s > HANDOFF_STALE_S ?
			       " (stale: is payhook-dispatch running?)" : "");
	target_table(o, m);
	circuit_table(o, m);
	textbuf_printf(o, "</section>\n");
}

/* payhook-reconcile's figures per profile, as payhook-dispatch last read
 * them from reconcile_cursors (payhook-reconcile itself runs apart). */
static void reconcile_section(struct textbuf *o, const struct metrics *m)
{
	struct metrics_reconcile r[CONFIG_PROVIDER_COUNT];
	int64_t at_s, now = (int64_t)time(NULL);
	unsigned known = 0;

	textbuf_printf(o, "<section id=\"reconcile\">\n"
			  "<h2>Reconciliation</h2>\n");
	if (!metrics_reconcile_read(m, r, &at_s)) {
		textbuf_printf(o, "<p>Not known: no payhook-dispatch reads "
				  "reconcile_cursors into this pool's counters "
				  "(run it with the same metrics_file).</p>\n"
				  "</section>\n");
		return;
	}
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		known += r[p].known;
	if (known == 0) {
		textbuf_printf(o, "<p>No profile is reconciled: "
				  "reconcile_cursors has no row yet "
				  "(payhook-reconcile makes one for each "
				  "profile with an API key).</p>\n</section>\n");
		return;
	}
	textbuf_printf(o, "<div class=\"scroll\"><table>\n<thead><tr>"
			  "<th>profile</th><th>recovered</th>"
			  "<th>discrepancies</th>"
			  "<th>last complete pass (UTC)</th>"
			  "<th>failed passes in a row</th><th>alert</th>"
			  "<th>last error</th></tr></thead>\n<tbody>\n");
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		char when[32] = "none yet";

		if (!r[p].known)
			continue;
		if (r[p].last_success_s != 0)
			utc_text(r[p].last_success_s, when, sizeof(when));
		textbuf_printf(o, "<tr><th scope=\"row\">%s</th>"
				  "<td class=\"n\">%llu</td>"
				  "<td class=\"n\">%llu</td><td>%s</td>"
				  "<td class=\"n\">%u</td><td>%s</td><td>",
			       config_provider_name(p), r[p].recovered,
			       r[p].discrepancies, when, r[p].failed_passes,
			       r[p].failing && r[p].stale ? "failing, stale"
			       : r[p].failing		  ? "failing"
			       : r[p].stale		  ? "stale"
							  : "-");
		textbuf_html(o, r[p].last_error[0] != '\0' ? r[p].last_error
							    : "-");
		textbuf_printf(o, "</td></tr>\n");
	}
	textbuf_printf(o, "</tbody>\n</table></div>\n<p>Recovered: rows "
			  "payhook-reconcile recorded because their webhook "
			  "never came. Discrepancies are logged, never "
			  "applied. An alert goes out when a profile's "
			  "passes fail %d times in a row or its last complete "
			  "pass is %ld hours old. From reconcile_cursors, as "
			  "payhook-dispatch read it %lld s ago.</p>\n"
			  "</section>\n", METRICS_RECONCILE_ALERT_FAILED_PASSES,
		       METRICS_RECONCILE_ALERT_STALE_S / 3600,
		       (long long)(now - at_s));
}

/* The queue of the providers that only notify (table notifications), as
 * payhook-dispatch last counted it; nothing when none has notified. */
static void notify_section(struct textbuf *o, const struct metrics *m,
			   const struct config *cfg)
{
	struct metrics_reconcile r[CONFIG_PROVIDER_COUNT];
	int64_t at_s;
	unsigned known = 0;

	if (!metrics_reconcile_read(m, r, &at_s))
		return;
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		known += r[p].notify_known;
	if (known == 0)
		return;
	textbuf_printf(o, "<section id=\"notifications\">\n"
			  "<h2>Notifications</h2>\n"
			  "<div class=\"scroll\"><table>\n<thead><tr>"
			  "<th>profile</th><th>pending</th>"
			  "<th>oldest pending (s)</th><th>done</th>"
			  "<th>rejected</th><th>alert</th></tr></thead>\n"
			  "<tbody>\n");
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		if (!r[p].notify_known)
			continue;
		textbuf_printf(o, "<tr><th scope=\"row\">%s</th>"
				  "<td class=\"n\">%llu</td>"
				  "<td class=\"n\">%lld</td>"
				  "<td class=\"n\">%llu</td>"
				  "<td class=\"n\">%llu</td><td>%s</td></tr>\n",
			       config_provider_name(p), r[p].notify_pending,
			       r[p].notify_oldest_s, r[p].notify_done,
			       r[p].notify_rejected,
			       r[p].notify_waiting ? "waiting" : "-");
	}
	textbuf_printf(o, "</tbody>\n</table></div>\n<p>What Mollie, Mercado "
			  "Pago and GoCardless notified, queued until "
			  "payhook-reconcile fetches it from their APIs: a "
			  "notification is no payment until then. Rejected: "
			  "ids their API does not know. An alert goes out when "
			  "one is pending for %ld s. From table notifications, "
			  "as payhook-dispatch counted it %lld s ago.</p>\n"
			  "</section>\n", cfg->notify_alert_after_s,
		       (long long)((int64_t)time(NULL) - at_s));
}

static void lifecycle_section(struct textbuf *o, const struct page_backend *b)
{
	const struct store_summary *s = b->summary;

	textbuf_printf(o, "<section id=\"lifecycle\">\n"
			  "<h2>Refunds and disputes</h2>\n");
	if (s == NULL)
		textbuf_printf(o, "<p>Not known: MySQL did not answer.</p>\n");
	else if (!s->events)
		textbuf_printf(o, "<p>Not recorded: the table payment_events is "
				  "missing (db/migrate-4-lifecycle.sql).</p>\n");
	else if (s->refunds + s->disputes + s->cancellations == 0)
		textbuf_printf(o, "<p>None recorded yet: payment_events is "
				  "empty.</p>\n");
	else {
		textbuf_printf(o, "<table>\n");
		row_number(o, "refunds", (long long)s->refunds);
		row_number(o, "disputes", (long long)s->disputes);
		row_number(o, "disputes open", (long long)s->disputes_open);
		row_number(o, "cancellations", (long long)s->cancellations);
		textbuf_printf(o, "</table>\n<p>From MySQL, %ld s ago.</p>\n",
			       b->age_s);
	}
	textbuf_printf(o, "</section>\n");
}

/* inbox_days: what the inbox kept and replayed since the counters began. */
static void inbox_section(struct textbuf *o, const struct metrics *m,
			  const struct config *cfg)
{
	struct metrics_inbox_totals t;

	if (cfg->inbox_days <= 0)
		return;
	metrics_read_inbox(m, &t);
	textbuf_printf(o, "<section id=\"inbox\">\n<h2>Inbox</h2>\n<table>\n");
	row_number(o, "kept: ignored", (long long)t.kept[0]);
	row_number(o, "kept: unauthorized", (long long)t.kept[1]);
	row_number(o, "not kept (write failed)", (long long)t.failed);
	row_number(o, "replayed and recorded", (long long)t.replayed);
	textbuf_printf(o, "</table>\n<p>Kept %ld days; payhook-reconcile "
			  "--replay puts them through again.</p>\n</section>\n",
		       cfg->inbox_days);
}

long page_render(const struct metrics *m, const struct config *cfg,
		 const struct page_backend *backend, char *buf, size_t cap)
{
	struct textbuf o = textbuf_init(buf, cap);
	struct metrics_pool pool;
	struct metrics_worker *w = calloc(POOL_PAGE_WORKERS, sizeof(*w));
	struct metrics_hour *hour = malloc(sizeof(*hour));
	struct metrics_failure failures[METRICS_FAILURES];
	struct metrics_failure refusals[METRICS_FAILURES];
	size_t n, nf = 0, nr = 0;
	long len = -1;

	if (w == NULL || hour == NULL)
		goto out;
	n = metrics_read_status(m, &pool, w, POOL_PAGE_WORKERS);
	nf = metrics_read_recent(m, hour, failures);
	nr = metrics_read_refusals(m, refusals);
	textbuf_printf(&o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
			   "<meta charset=\"utf-8\">\n"
			   "<meta name=\"viewport\" content=\"width=device-width, "
			   "initial-scale=1\">\n<title>payhook status</title>\n"
			   "<style>%s</style>\n</head>\n<body>\n"
			   "<h1>payhook</h1>\n<p>version %s, up %lld s</p>\n"
			   "<main>\n", style, PACKAGE_VERSION,
		       (long long)pool.uptime_s);
	pool_section(&o, &pool, w, n);
	hour_section(&o, cfg, hour);
	handoff_section(&o, m);
	lifecycle_section(&o, backend);
	reconcile_section(&o, m);
	notify_section(&o, m, cfg);
	inbox_section(&o, m, cfg);
	failures_section(&o, cfg, "failures", failures, nf);
	failures_section(&o, cfg, "refusals", refusals, nr);
	textbuf_printf(&o, "</main>\n</body>\n</html>\n");
	if (!o.full)
		len = (long)o.len;
out:
	free(w);
	free(hour);
	return len;
}
