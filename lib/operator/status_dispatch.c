/* status_dispatch.c - payhook-dispatch's series (see status_dispatch.h). */
#include "config.h"

#include "metrics_dispatch.h"
#include "prometheus.h"
#include "status_dispatch.h"

/* The exposition is written into a textbuf; put is its short name here. */
#define put textbuf_printf

/* Each running payhook-dispatch's circuit, labelled by its pid: the state
 * as a state set (1 for the one it is in), since when, the failures in a
 * row and the next probe. */
static void put_circuits(struct textbuf *o, const struct metrics *m)
{
	/* Their other series, in this order: since, failures, next probe. */
	static const struct {
		const char *name, *help;
	} gauges[] = {
		{ "payhook_dispatch_circuit_since_seconds",
		  "When the circuit entered its state (open: when it opened; "
		  "Unix time)." },
		{ "payhook_dispatch_circuit_failures",
		  "Failed attempts at the target in a row." },
		{ "payhook_dispatch_circuit_next_probe_seconds",
		  "When an open circuit sends its next probe (Unix time; 0: "
		  "not open)." },
	};
	struct metrics_circuit c[METRICS_DISPATCHERS];
	size_t n = metrics_dispatch_read_circuits(m, c, METRICS_DISPATCHERS);

	put(o, "# HELP payhook_dispatch_circuit_state The target's circuit as "
	       "each running payhook-dispatch sees it: 1 for its state.\n"
	       "# TYPE payhook_dispatch_circuit_state gauge\n");
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < METRICS_CIRCUIT_STATES; k++)
			put(o, "payhook_dispatch_circuit_state{pid=\"%ld\","
			       "state=\"%s\"} %d\n", (long)c[i].pid,
			    metrics_dispatch_circuit_state_name(k), c[i].state == k);
	for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
		put(o, "# HELP %s %s\n# TYPE %s gauge\n", gauges[g].name,
		    gauges[g].help, gauges[g].name);
		for (size_t i = 0; i < n; i++) {
			double value = g == 0 ? (double)c[i].since_ms / 1000
				     : g == 1 ? (double)c[i].failures
					      : (double)c[i].next_probe_ms / 1000;

			put(o, "%s{pid=\"%ld\"} %.15g\n", gauges[g].name,
			    (long)c[i].pid, value);
		}
	}
}

/* The target's shared state: one circuit for every dispatcher, its last
 * answer's status and error (a label, escaped as the format wants). */
static void put_target(struct textbuf *o, const struct metrics *m)
{
	struct metrics_target t;
	char error[2 * METRICS_TARGET_ERROR_MAX + 1];
	size_t n = 0;

	if (!metrics_dispatch_read_target(m, &t))
		return;
	put(o, "# HELP payhook_dispatch_target_circuit_state The target's "
	       "circuit, one for every payhook-dispatch of the database: 1 for "
	       "its state.\n"
	       "# TYPE payhook_dispatch_target_circuit_state gauge\n");
	for (unsigned k = 0; k < METRICS_CIRCUIT_STATES; k++)
		put(o, "payhook_dispatch_target_circuit_state{state=\"%s\"} "
		       "%d\n", metrics_dispatch_circuit_state_name(k),
		    t.state == k);
	for (const char *c = t.last_error; *c != '\0'; c++) {
		if (*c == '\\' || *c == '"')
			error[n++] = '\\';
		error[n++] = *c;
	}
	error[n] = '\0';
	put(o, "# HELP payhook_dispatch_target_since_seconds When the circuit "
	       "entered its state (Unix time).\n"
	       "# TYPE payhook_dispatch_target_since_seconds gauge\n"
	       "payhook_dispatch_target_since_seconds %.15g\n"
	       "# HELP payhook_dispatch_target_failures Outage-like failures "
	       "at the target in a row, from every dispatcher.\n"
	       "# TYPE payhook_dispatch_target_failures gauge\n"
	       "payhook_dispatch_target_failures %llu\n"
	       "# HELP payhook_dispatch_target_next_probe_seconds When an open "
	       "circuit sends its next probe (Unix time; 0: not open).\n"
	       "# TYPE payhook_dispatch_target_next_probe_seconds gauge\n"
	       "payhook_dispatch_target_next_probe_seconds %.15g\n"
	       "# HELP payhook_dispatch_target_pause_until_seconds Until when "
	       "the target asked to wait (Retry-After; Unix time; 0: none).\n"
	       "# TYPE payhook_dispatch_target_pause_until_seconds gauge\n"
	       "payhook_dispatch_target_pause_until_seconds %.15g\n"
	       "# HELP payhook_dispatch_target_last_status The HTTP status of "
	       "the target's last answer (0: none, or a command).\n"
	       "# TYPE payhook_dispatch_target_last_status gauge\n"
	       "payhook_dispatch_target_last_status %ld\n"
	       "# HELP payhook_dispatch_target_last_error_info The detail of "
	       "the target's last failure (empty after a 2xx).\n"
	       "# TYPE payhook_dispatch_target_last_error_info gauge\n"
	       "payhook_dispatch_target_last_error_info{error=\"%s\"} 1\n"
	       "# HELP payhook_dispatch_target_timestamp_seconds When a "
	       "dispatcher last published the target's state (Unix time).\n"
	       "# TYPE payhook_dispatch_target_timestamp_seconds gauge\n"
	       "payhook_dispatch_target_timestamp_seconds %.15g\n",
	    (double)t.since_ms / 1000, t.failures,
	    (double)t.next_probe_ms / 1000, (double)t.pause_until_ms / 1000,
	    t.last_status, error, (double)t.updated_ms / 1000);
}

void status_dispatch_put(struct textbuf *o, const struct metrics *m)
{
	struct metrics_dispatch_counters d;

	if (!metrics_dispatch_read_counters(m, &d))
		return;
	put(o, "# HELP payhook_dispatch_attempts_total Hand-off attempts, by "
	       "what became of them.\n"
	       "# TYPE payhook_dispatch_attempts_total counter\n");
	for (size_t r = 0; r < METRICS_DISPATCH_RESULTS; r++)
		put(o, "payhook_dispatch_attempts_total{result=\"%s\"} %llu\n",
		    metrics_dispatch_result_name(r), d.attempts[r]);
	prometheus_histogram(o, "payhook_dispatch_delivery_seconds",
		      "Time of the attempts that delivered.",
		      &d.delivery);
	put(o, "# HELP payhook_dispatch_circuit_opened_total Times the target's "
	       "circuit opened.\n"
	       "# TYPE payhook_dispatch_circuit_opened_total counter\n"
	       "payhook_dispatch_circuit_opened_total %llu\n",
	    d.circuit_opened);
	put(o, "# HELP payhook_dispatch_pending Payments not yet delivered nor "
	       "dead (as last read by payhook-dispatch).\n"
	       "# TYPE payhook_dispatch_pending gauge\n"
	       "payhook_dispatch_pending %llu\n"
	       "# HELP payhook_dispatch_in_flight Payments claimed under a "
	       "lease.\n"
	       "# TYPE payhook_dispatch_in_flight gauge\n"
	       "payhook_dispatch_in_flight %llu\n"
	       "# HELP payhook_dispatch_dead Dead payments, waiting for "
	       "--requeue.\n"
	       "# TYPE payhook_dispatch_dead gauge\n"
	       "payhook_dispatch_dead %llu\n"
	       "# HELP payhook_dispatch_oldest_pending_seconds How long the "
	       "most overdue pending payment has been due.\n"
	       "# TYPE payhook_dispatch_oldest_pending_seconds gauge\n"
	       "payhook_dispatch_oldest_pending_seconds %llu\n"
	       "# HELP payhook_dispatch_gauges_timestamp_seconds When "
	       "payhook-dispatch last read the gauges above (Unix time).\n"
	       "# TYPE payhook_dispatch_gauges_timestamp_seconds gauge\n"
	       "payhook_dispatch_gauges_timestamp_seconds %llu\n",
	    d.gauges.pending, d.gauges.in_flight, d.gauges.dead,
	    d.gauges.oldest_due_s, (unsigned long long)d.gauges_at_s);
	put_circuits(o, m);
	put_target(o, m);
}

