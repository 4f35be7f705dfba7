/* status.c - the Prometheus text and the pool's status (see status.h),
 * from what metrics.h reads out of the shared segment.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "prometheus.h"
#include "response.h"
#include "status.h"
#include "status_dispatch.h"
#include "status_reconcile.h"
#include "textbuf.h"

/* The exposition is written into a textbuf; put is its short name here. */
#define put textbuf_printf

static const char *provider_label(unsigned p)
{
	return p < CONFIG_PROVIDER_COUNT ? config_provider_name(p) : "-";
}

/* The pool's status series: the figures of metrics_read_status. */
static void put_status(struct textbuf *o, const struct metrics *m)
{
	struct metrics_pool p;
	struct metrics_worker w[128];
	size_t n = metrics_read_status(m, &p, w, sizeof(w) / sizeof(w[0]));

	put(o, "# HELP payhook_pool_start_time_seconds When the pool's "
	       "segment was made (Unix time).\n"
	       "# TYPE payhook_pool_start_time_seconds gauge\n"
	       "payhook_pool_start_time_seconds %lld\n"
	       "# HELP payhook_pool_uptime_seconds Seconds since then.\n"
	       "# TYPE payhook_pool_uptime_seconds gauge\n"
	       "payhook_pool_uptime_seconds %lld\n",
	    (long long)p.start_time, (long long)p.uptime_s);
	put(o, "# HELP payhook_pool_info The version serving.\n"
	       "# TYPE payhook_pool_info gauge\n"
	       "payhook_pool_info{version=\"%s\"} 1\n", PACKAGE_VERSION);
	put(o, "# HELP payhook_pool_workers Worker processes by state.\n"
	       "# TYPE payhook_pool_workers gauge\n"
	       "payhook_pool_workers{state=\"configured\"} %u\n"
	       "payhook_pool_workers{state=\"total\"} %u\n"
	       "payhook_pool_workers{state=\"active\"} %u\n"
	       "payhook_pool_workers{state=\"idle\"} %u\n",
	    p.workers_configured, p.workers_total, p.workers_active,
	    p.workers_idle);
	put(o, "# HELP payhook_pool_accepted_total Requests workers began.\n"
	       "# TYPE payhook_pool_accepted_total counter\n"
	       "payhook_pool_accepted_total %llu\n"
	       "# HELP payhook_pool_max_active Most workers seen busy at once "
	       "(sampled by the master).\n"
	       "# TYPE payhook_pool_max_active gauge\n"
	       "payhook_pool_max_active %llu\n"
	       "# HELP payhook_pool_max_children_reached_total Master samples "
	       "that found every worker busy.\n"
	       "# TYPE payhook_pool_max_children_reached_total counter\n"
	       "payhook_pool_max_children_reached_total %llu\n",
	    p.accepted, p.max_active, p.max_children_reached);
	put(o, "# HELP payhook_pool_listen_queue Connections waiting in the "
	       "listening socket's queue (-1: unknown).\n"
	       "# TYPE payhook_pool_listen_queue gauge\n"
	       "payhook_pool_listen_queue %lld\n"
	       "# HELP payhook_pool_max_listen_queue The most seen waiting.\n"
	       "# TYPE payhook_pool_max_listen_queue gauge\n"
	       "payhook_pool_max_listen_queue %lld\n"
	       "# HELP payhook_pool_listen_queue_len The queue's size (the "
	       "backlog).\n"
	       "# TYPE payhook_pool_listen_queue_len gauge\n"
	       "payhook_pool_listen_queue_len %lld\n",
	    p.listen_queue, p.max_listen_queue, p.listen_queue_len);
	put(o, "# HELP payhook_pool_slow_requests_total Requests that ran "
	       "longer than request_slowlog_timeout_ms.\n"
	       "# TYPE payhook_pool_slow_requests_total counter\n"
	       "payhook_pool_slow_requests_total %llu\n"
	       "# HELP payhook_pool_terminated_requests_total Workers ended "
	       "by request_terminate_timeout_ms.\n"
	       "# TYPE payhook_pool_terminated_requests_total counter\n"
	       "payhook_pool_terminated_requests_total %llu\n",
	    p.slow_requests, p.terminated_requests);
	put(o, "# HELP payhook_worker_requests_total Requests a worker "
	       "finished, with its stage now.\n"
	       "# TYPE payhook_worker_requests_total counter\n");
	for (size_t i = 0; i < n; i++)
		put(o, "payhook_worker_requests_total{pid=\"%ld\",state=\"%s\"} "
		       "%llu\n", (long)w[i].pid, metrics_stage_name(w[i].stage),
		    w[i].served);
	put(o, "# HELP payhook_worker_request_duration_seconds How long the "
	       "request in hand has run (0: idle).\n"
	       "# TYPE payhook_worker_request_duration_seconds gauge\n");
	for (size_t i = 0; i < n; i++)
		put(o, "payhook_worker_request_duration_seconds{pid=\"%ld\"} "
		       "%.6f\n", (long)w[i].pid, (double)w[i].elapsed_us / 1e6);
}

long status_render_pool(const struct metrics *m, char *buf, size_t cap)
{
	struct textbuf o = textbuf_init(buf, cap);

	put_status(&o, m);
	return o.full ? -1 : (long)o.len;
}

/* The inbox's series name for result, once they happen. */
static void put_inbox(struct textbuf *o, const struct metrics_counters *c,
		      enum metrics_inbox_result result, const char *name)
{
	for (unsigned p = 0; p <= CONFIG_PROVIDER_COUNT; p++)
		for (unsigned u = 0; u < 2; u++) {
			unsigned long long n = c->inbox[p][u][result];

			if (n > 0)
				put(o, "%s{provider=\"%s\",outcome=\"%s\"} "
					"%llu\n", name, provider_label(p),
				    u ? "unauthorized" : "ignored", n);
		}
}

long status_render(const struct metrics *m, const struct config *cfg,
		   char *buf, size_t cap)
{
	struct metrics_counters *c = malloc(sizeof(*c));
	struct textbuf o = textbuf_init(buf, cap);

	if (c == NULL)
		return -1;
	metrics_read_counters(m, c);

	put(&o, "# HELP payhook_requests_total Webhook requests answered, by "
		"provider, outcome and HTTP status.\n"
		"# TYPE payhook_requests_total counter\n");
	for (unsigned p = 0; p <= CONFIG_PROVIDER_COUNT; p++) {
		for (unsigned oc = 0; oc < OUTCOME_COUNT; oc++) {
			unsigned long long n = c->requests[p][oc];

			/* Every profile's payment outcomes always show, so
			 * a rate is defined from the start; the rest once
			 * they happen. */
			if (n == 0 && (p == CONFIG_PROVIDER_COUNT ||
				       !config_provider_enabled(cfg, p) ||
				       oc > OUTCOME_CONFLICT))
				continue;
			put(&o, "payhook_requests_total{provider=\"%s\","
				"outcome=\"%s\",status=\"%d\"} %llu\n",
			    provider_label(p), response_outcome_name(oc),
			    response_outcome_status(oc, cfg), n);
		}
	}
	put(&o, "# HELP payhook_lifecycle_events_total Refunds, disputes and "
		"cancellations recorded, by provider, kind and outcome.\n"
		"# TYPE payhook_lifecycle_events_total counter\n");
	for (unsigned p = 0; p <= CONFIG_PROVIDER_COUNT; p++)
		for (unsigned k = 0; k < LIFECYCLE_KINDS; k++)
			for (unsigned oc = 0; oc < OUTCOME_COUNT; oc++) {
				unsigned long long n =
					c->lifecycle[p][k][oc];

				/* Once they happen: most sites see few. */
				if (n == 0)
					continue;
				put(&o, "payhook_lifecycle_events_total{"
					"provider=\"%s\",kind=\"%s\","
					"outcome=\"%s\"} %llu\n",
				    provider_label(p), lifecycle_kind_name(k),
				    response_outcome_name(oc), n);
			}
	put(&o, "# HELP payhook_inbox_kept_total Deliveries answered 200 "
		"ignored or 401 kept in the inbox, by provider and outcome.\n"
		"# TYPE payhook_inbox_kept_total counter\n");
	put_inbox(&o, c, METRICS_INBOX_KEPT, "payhook_inbox_kept_total");
	put(&o, "# HELP payhook_inbox_write_failures_total Deliveries the "
		"inbox should have kept whose write failed (the answer was "
		"the same).\n"
		"# TYPE payhook_inbox_write_failures_total counter\n");
	put_inbox(&o, c, METRICS_INBOX_FAILED,
		  "payhook_inbox_write_failures_total");
	put(&o, "# HELP payhook_inbox_replayed_total Kept deliveries "
		"payhook-reconcile --replay recorded, by provider.\n"
		"# TYPE payhook_inbox_replayed_total counter\n");
	for (unsigned p = 0; p <= CONFIG_PROVIDER_COUNT; p++) {
		unsigned long long n = c->inbox_replayed[p];

		if (n > 0)
			put(&o, "payhook_inbox_replayed_total{provider=\"%s\"} "
				"%llu\n", provider_label(p), n);
	}
	prometheus_histogram(&o, "payhook_request_duration_seconds",
			     "Time from the request to its answer.",
			     &c->duration);
	put(&o, "# HELP payhook_backend_errors_total Errors from MySQL (by "
		"error number) and Redis (by kind).\n"
		"# TYPE payhook_backend_errors_total counter\n");
	for (size_t i = 0; i <= METRICS_MYSQL_CODES; i++) {
		unsigned long long n = c->mysql_errors[i];

		if (n == 0)
			continue;
		if (i < METRICS_MYSQL_CODES)
			put(&o, "payhook_backend_errors_total{backend=\"mysql\","
				"code=\"%u\"} %llu\n", metrics_mysql_code(i), n);
		else
			put(&o, "payhook_backend_errors_total{backend=\"mysql\","
				"code=\"other\"} %llu\n", n);
	}
	for (size_t i = 0; i < METRICS_REDIS_FAULTS; i++)
		put(&o, "payhook_backend_errors_total{backend=\"redis\","
			"code=\"%s\"} %llu\n", metrics_redis_fault_name(i),
		    c->redis_errors[i]);
	put(&o, "# HELP payhook_lost_leases_total Lock releases that found the "
		"lease gone or taken over.\n"
		"# TYPE payhook_lost_leases_total counter\n"
		"payhook_lost_leases_total %llu\n", c->lost_leases);
	put(&o, "# HELP payhook_suspicious_refunds_total Refunds recorded "
		"that carried their payment's refunded amount past the "
		"payment's amount.\n"
		"# TYPE payhook_suspicious_refunds_total counter\n"
		"payhook_suspicious_refunds_total %llu\n",
	    c->suspicious_refunds);
	put(&o, "# HELP payhook_workers Worker processes alive.\n"
		"# TYPE payhook_workers gauge\n"
		"payhook_workers %ld\n", c->workers_alive);
	put(&o, "# HELP payhook_worker_restarts_total Workers started again "
		"after an exit nobody asked for.\n"
		"# TYPE payhook_worker_restarts_total counter\n"
		"payhook_worker_restarts_total %llu\n",
	    c->worker_restarts);
	put(&o, "# HELP payhook_reloads_total Configuration reloads, applied "
		"or refused.\n"
		"# TYPE payhook_reloads_total counter\n"
		"payhook_reloads_total{result=\"applied\"} %llu\n"
		"payhook_reloads_total{result=\"refused\"} %llu\n",
	    c->reloads, c->reloads_refused);
	put_status(&o, m);
	status_dispatch_put(&o, m);
	status_reconcile_put(&o, m);
	free(c);
	return o.full ? -1 : (long)o.len;
}

long long status_value(const struct metrics *m, const struct config *cfg,
		       const char *series)
{
	char *text = malloc(STATUS_RENDER_MAX);
	size_t len = strlen(series);
	long long value = -1;

	if (text == NULL)
		return -1;
	if (status_render(m, cfg, text, STATUS_RENDER_MAX) >= 0) {
		for (char *line = text; line != NULL && *line != '\0';) {
			char *next = strchr(line, '\n');

			if (strncmp(line, series, len) == 0 && line[len] == ' ') {
				value = strtoll(line + len + 1, NULL, 10);
				break;
			}
			line = next != NULL ? next + 1 : NULL;
		}
	}
	free(text);
	return value;
}
