/* prometheus.c - the Prometheus text format's shared pieces (see
 * prometheus.h). */
#include "config.h"

#include "prometheus.h"

void prometheus_histogram(struct textbuf *o, const char *name,
			  const char *help, const struct metrics_histogram *h)
{
	unsigned long long cumulative = 0;

	textbuf_printf(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help,
		       name);
	for (size_t b = 0; b < METRICS_BUCKETS; b++) {
		cumulative += h->buckets[b];
		textbuf_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name,
			       (double)metrics_bucket_us(b) / 1e6, cumulative);
	}
	textbuf_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n"
			  "%s_count %llu\n", name, h->count, name,
		       (double)h->sum_us / 1e6, name, h->count);
}
