/* metrics.c - the pool's counters in shared memory (see metrics.h). The
 * segment is a fixed struct of C11 atomics: lock-free 64-bit atomics are
 * address-free on the platforms payhook runs on, so every process may map it
 * anywhere.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lifecycle.h"
#include "metrics.h"

#define MAGIC 0x70686d31u /* "phm1" */
#define PROVIDER_SLOTS (CONFIG_PROVIDER_COUNT + 1)
#define WORKER_SLOTS 1024

/* Upper bounds of the latency histogram, in microseconds. */
static const int64_t bucket_us[] = {
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000,
};
#define BUCKETS (sizeof(bucket_us) / sizeof(bucket_us[0]))

/* The MySQL errors counted on their own; any other is "other". */
static const unsigned mysql_codes[] = {
	1047, 1053, 1062, 1146, 1205, 1213, 1290, 1836, 1927, 2002, 2003, 2005,
	2006, 2013, 4031,
};
#define MYSQL_CODES (sizeof(mysql_codes) / sizeof(mysql_codes[0]))

static const char *const redis_fault_names[METRICS_REDIS_FAULTS] = {
	"connect", "io", "reply",
};

struct segment {
	uint32_t magic;
	uint32_t size;
	atomic_ullong requests[PROVIDER_SLOTS][OUTCOME_COUNT];
	atomic_ullong duration_buckets[BUCKETS];
	atomic_ullong duration_count;
	atomic_ullong duration_sum_us;
	atomic_ullong mysql_errors[MYSQL_CODES + 1];
	atomic_ullong redis_errors[METRICS_REDIS_FAULTS];
	atomic_ullong lost_leases;
	atomic_ullong workers_started;
	atomic_ullong worker_restarts;
	atomic_ullong reloads;
	atomic_ullong reloads_refused;
	atomic_int worker_pids[WORKER_SLOTS];
	/* payhook-dispatch's, when it shares metrics_file. */
	atomic_ullong dispatch_seen;
	atomic_ullong dispatch_attempts[METRICS_DISPATCH_RESULTS];
	atomic_ullong dispatch_buckets[BUCKETS];
	atomic_ullong dispatch_count;
	atomic_ullong dispatch_sum_us;
	atomic_ullong dispatch_circuit_opened;
	atomic_ullong dispatch_pending;
	atomic_ullong dispatch_in_flight;
	atomic_ullong dispatch_dead;
	atomic_ullong dispatch_oldest_due_s;
	atomic_ullong dispatch_gauges_at_s;
	/* Added last, so a segment of the version before (PREVIOUS_SIZE) is
	 * this one without them, and grows in place. */
	atomic_ullong lifecycle[PROVIDER_SLOTS][LIFECYCLE_KINDS][OUTCOME_COUNT];
};

static const char *const dispatch_result_names[METRICS_DISPATCH_RESULTS] = {
	"delivered", "retry", "deferred", "dead", "superseded", "unrecorded",
};

/* The size of the segment of the version without lifecycle counters. */
#define PREVIOUS_SIZE offsetof(struct segment, lifecycle)

struct metrics {
	struct segment *seg;
	int fd;
};

static struct metrics *map_fd(int fd, bool fresh, struct error *err)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct stat st;

	if (m == NULL) {
		error_set(err, "metrics: out of memory");
		return NULL;
	}
	if (fstat(fd, &st) != 0) {
		error_set(err, "metrics: fstat: %s", strerror(errno));
		goto fail;
	}
	if (st.st_size == 0)
		fresh = true;
	if (fresh && ftruncate(fd, (off_t)sizeof(struct segment)) != 0) {
		error_set(err, "metrics: ftruncate: %s", strerror(errno));
		goto fail;
	}
	/* A segment of the version before (a file, or the memfd an upgrade
	 * hands on) gets the new counters, as zeros, at its end. */
	if (!fresh && (size_t)st.st_size == PREVIOUS_SIZE &&
	    ftruncate(fd, (off_t)sizeof(struct segment)) == 0)
		st.st_size = (off_t)sizeof(struct segment);
	if (!fresh && (size_t)st.st_size != sizeof(struct segment)) {
		error_set(err, "metrics: the segment is %lld bytes, not %zu: "
			  "written by another version of payhook",
			  (long long)st.st_size, sizeof(struct segment));
		goto fail;
	}
	m->seg = mmap(NULL, sizeof(struct segment), PROT_READ | PROT_WRITE,
		      MAP_SHARED, fd, 0);
	if (m->seg == MAP_FAILED) {
		error_set(err, "metrics: mmap: %s", strerror(errno));
		goto fail;
	}
	/* A fresh file is all zeros: the counters start at 0. */
	if (m->seg->magic == 0) {
		m->seg->size = (uint32_t)sizeof(struct segment);
		m->seg->magic = MAGIC;
	}
	if (m->seg->magic == MAGIC && m->seg->size == (uint32_t)PREVIOUS_SIZE)
		m->seg->size = (uint32_t)sizeof(struct segment);
	if (m->seg->magic != MAGIC ||
	    m->seg->size != (uint32_t)sizeof(struct segment)) {
		munmap(m->seg, sizeof(struct segment));
		error_set(err, "metrics: the segment was written by another "
			  "version of payhook");
		goto fail;
	}
	m->fd = fd;
	return m;
fail:
	free(m);
	close(fd);
	return NULL;
}

struct metrics *metrics_new_shared(struct error *err)
{
	/* Not close-on-exec: an upgrade's exec hands it on. */
	int fd = memfd_create("payhook-metrics", 0);

	if (fd < 0) {
		error_set(err, "metrics: memfd_create: %s", strerror(errno));
		return NULL;
	}
	return map_fd(fd, true, err);
}

struct metrics *metrics_open_file(const char *path, struct error *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);

	if (fd < 0) {
		error_set(err, "metrics_file %s: %s", path, strerror(errno));
		return NULL;
	}
	return map_fd(fd, false, err);
}

struct metrics *metrics_attach_fd(int fd, struct error *err)
{
	return map_fd(fd, false, err);
}

void metrics_free(struct metrics *m)
{
	if (m == NULL)
		return;
	munmap(m->seg, sizeof(struct segment));
	close(m->fd);
	free(m);
}

int metrics_fd(const struct metrics *m)
{
	return m->fd;
}

static void add(atomic_ullong *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static unsigned long long get(const atomic_ullong *counter)
{
	return atomic_load_explicit(counter, memory_order_relaxed);
}

static void set(atomic_ullong *gauge, unsigned long long value)
{
	atomic_store_explicit(gauge, value, memory_order_relaxed);
}

/* Counts elapsed_us into a histogram of bucket_us. */
static void observe(atomic_ullong *buckets, atomic_ullong *count,
		    atomic_ullong *sum_us, int64_t elapsed_us)
{
	size_t b;

	for (b = 0; b < BUCKETS && elapsed_us > bucket_us[b]; b++)
		;
	if (b < BUCKETS)
		add(&buckets[b]);
	add(count);
	atomic_fetch_add_explicit(sum_us,
				  elapsed_us > 0 ? (unsigned long long)elapsed_us
						 : 0,
				  memory_order_relaxed);
}

void metrics_request(struct metrics *m, unsigned provider, enum outcome outcome,
		     int64_t elapsed_us)
{
	if (m == NULL)
		return;
	if (provider > CONFIG_PROVIDER_COUNT)
		provider = CONFIG_PROVIDER_COUNT;
	if ((unsigned)outcome >= OUTCOME_COUNT)
		outcome = OUTCOME_ERROR;
	add(&m->seg->requests[provider][outcome]);
	observe(m->seg->duration_buckets, &m->seg->duration_count,
		&m->seg->duration_sum_us, elapsed_us);
}

void metrics_dispatch_attempt(struct metrics *m,
			      enum metrics_dispatch_result result,
			      int64_t elapsed_us)
{
	if (m == NULL || (unsigned)result >= METRICS_DISPATCH_RESULTS)
		return;
	set(&m->seg->dispatch_seen, 1);
	add(&m->seg->dispatch_attempts[result]);
	if (result == METRICS_DISPATCH_DELIVERED)
		observe(m->seg->dispatch_buckets, &m->seg->dispatch_count,
			&m->seg->dispatch_sum_us, elapsed_us);
}

void metrics_dispatch_circuit_opened(struct metrics *m)
{
	if (m == NULL)
		return;
	set(&m->seg->dispatch_seen, 1);
	add(&m->seg->dispatch_circuit_opened);
}

void metrics_dispatch_gauges(struct metrics *m,
			     const struct metrics_dispatch_gauges *g)
{
	if (m == NULL)
		return;
	set(&m->seg->dispatch_seen, 1);
	set(&m->seg->dispatch_pending, g->pending);
	set(&m->seg->dispatch_in_flight, g->in_flight);
	set(&m->seg->dispatch_dead, g->dead);
	set(&m->seg->dispatch_oldest_due_s, g->oldest_due_s);
	set(&m->seg->dispatch_gauges_at_s, (unsigned long long)time(NULL));
}

void metrics_lifecycle(struct metrics *m, unsigned provider,
		       enum lifecycle_kind kind, enum outcome outcome)
{
	if (m == NULL)
		return;
	if (provider > CONFIG_PROVIDER_COUNT)
		provider = CONFIG_PROVIDER_COUNT;
	if ((unsigned)kind >= LIFECYCLE_KINDS)
		return;
	if ((unsigned)outcome >= OUTCOME_COUNT)
		outcome = OUTCOME_ERROR;
	add(&m->seg->lifecycle[provider][kind][outcome]);
}

void metrics_mysql_error(struct metrics *m, unsigned code)
{
	size_t i;

	if (m == NULL || code == 0)
		return;
	for (i = 0; i < MYSQL_CODES && mysql_codes[i] != code; i++)
		;
	add(&m->seg->mysql_errors[i]);
}

void metrics_redis_error(struct metrics *m, enum metrics_redis_fault fault)
{
	if (m != NULL && (unsigned)fault < METRICS_REDIS_FAULTS)
		add(&m->seg->redis_errors[fault]);
}

void metrics_lost_lease(struct metrics *m)
{
	if (m != NULL)
		add(&m->seg->lost_leases);
}

bool metrics_worker_started(struct metrics *m, pid_t pid)
{
	if (m == NULL)
		return false;
	add(&m->seg->workers_started);
	for (size_t i = 0; i < WORKER_SLOTS; i++) {
		int expected = 0;

		if (atomic_compare_exchange_strong(&m->seg->worker_pids[i],
						   &expected, (int)pid))
			return true;
	}
	return false;
}

void metrics_worker_gone(struct metrics *m, pid_t pid)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < WORKER_SLOTS; i++) {
		int expected = (int)pid;

		if (atomic_compare_exchange_strong(&m->seg->worker_pids[i],
						   &expected, 0))
			return;
	}
}

void metrics_worker_restarted(struct metrics *m)
{
	if (m != NULL)
		add(&m->seg->worker_restarts);
}

void metrics_reloaded(struct metrics *m, bool applied)
{
	if (m != NULL)
		add(applied ? &m->seg->reloads : &m->seg->reloads_refused);
}

/* Workers in the slots that still run: a worker killed outright never
 * cleared its slot (independent workers have no master to do it). */
static long workers_alive(const struct segment *seg)
{
	long alive = 0;

	for (size_t i = 0; i < WORKER_SLOTS; i++) {
		int pid = atomic_load_explicit(&seg->worker_pids[i],
					       memory_order_relaxed);

		if (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM))
			alive++;
	}
	return alive;
}

/* A growing text in a fixed buffer; remembers running out of room. */
struct out {
	char *buf;
	size_t cap, len;
	bool full;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->cap - o->len) {
		o->full = true;
		return;
	}
	o->len += (size_t)n;
}

/* A histogram of bucket_us in seconds. */
static void put_histogram(struct out *o, const char *name, const char *help,
			  const atomic_ullong *buckets,
			  const atomic_ullong *count,
			  const atomic_ullong *sum_us)
{
	unsigned long long cumulative = 0;

	put(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (size_t b = 0; b < BUCKETS; b++) {
		cumulative += get(&buckets[b]);
		put(o, "%s_bucket{le=\"%g\"} %llu\n", name,
		    (double)bucket_us[b] / 1e6, cumulative);
	}
	put(o, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n",
	    name, get(count), name, (double)get(sum_us) / 1e6, name,
	    get(count));
}

/* payhook-dispatch's series, once a dispatcher shares the segment. */
static void put_dispatch(struct out *o, const struct segment *seg)
{
	if (get(&seg->dispatch_seen) == 0)
		return;
	put(o, "# HELP payhook_dispatch_attempts_total Hand-off attempts, by "
	       "what became of them.\n"
	       "# TYPE payhook_dispatch_attempts_total counter\n");
	for (size_t r = 0; r < METRICS_DISPATCH_RESULTS; r++)
		put(o, "payhook_dispatch_attempts_total{result=\"%s\"} %llu\n",
		    dispatch_result_names[r], get(&seg->dispatch_attempts[r]));
	put_histogram(o, "payhook_dispatch_delivery_seconds",
		      "Time of the attempts that delivered.",
		      seg->dispatch_buckets, &seg->dispatch_count,
		      &seg->dispatch_sum_us);
	put(o, "# HELP payhook_dispatch_circuit_opened_total Times the target's "
	       "circuit opened.\n"
	       "# TYPE payhook_dispatch_circuit_opened_total counter\n"
	       "payhook_dispatch_circuit_opened_total %llu\n",
	    get(&seg->dispatch_circuit_opened));
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
	    get(&seg->dispatch_pending), get(&seg->dispatch_in_flight),
	    get(&seg->dispatch_dead), get(&seg->dispatch_oldest_due_s),
	    get(&seg->dispatch_gauges_at_s));
}

static const char *provider_label(unsigned p)
{
	return p < CONFIG_PROVIDER_COUNT ? config_provider_name(p) : "-";
}

long metrics_render(const struct metrics *m, const struct config *cfg,
		    char *buf, size_t cap)
{
	const struct segment *seg = m->seg;
	struct out o = { buf, cap, 0, false };

	put(&o, "# HELP payhook_requests_total Webhook requests answered, by "
		"provider, outcome and HTTP status.\n"
		"# TYPE payhook_requests_total counter\n");
	for (unsigned p = 0; p < PROVIDER_SLOTS; p++) {
		for (unsigned oc = 0; oc < OUTCOME_COUNT; oc++) {
			unsigned long long n = get(&seg->requests[p][oc]);

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
	for (unsigned p = 0; p < PROVIDER_SLOTS; p++)
		for (unsigned k = 0; k < LIFECYCLE_KINDS; k++)
			for (unsigned oc = 0; oc < OUTCOME_COUNT; oc++) {
				unsigned long long n =
					get(&seg->lifecycle[p][k][oc]);

				/* Once they happen: most sites see few. */
				if (n == 0)
					continue;
				put(&o, "payhook_lifecycle_events_total{"
					"provider=\"%s\",kind=\"%s\","
					"outcome=\"%s\"} %llu\n",
				    provider_label(p), lifecycle_kind_name(k),
				    response_outcome_name(oc), n);
			}
	put_histogram(&o, "payhook_request_duration_seconds",
		      "Time from the request to its answer.",
		      seg->duration_buckets, &seg->duration_count,
		      &seg->duration_sum_us);
	put(&o, "# HELP payhook_backend_errors_total Errors from MySQL (by "
		"error number) and Redis (by kind).\n"
		"# TYPE payhook_backend_errors_total counter\n");
	for (size_t i = 0; i <= MYSQL_CODES; i++) {
		unsigned long long n = get(&seg->mysql_errors[i]);

		if (n == 0)
			continue;
		if (i < MYSQL_CODES)
			put(&o, "payhook_backend_errors_total{backend=\"mysql\","
				"code=\"%u\"} %llu\n", mysql_codes[i], n);
		else
			put(&o, "payhook_backend_errors_total{backend=\"mysql\","
				"code=\"other\"} %llu\n", n);
	}
	for (size_t i = 0; i < METRICS_REDIS_FAULTS; i++)
		put(&o, "payhook_backend_errors_total{backend=\"redis\","
			"code=\"%s\"} %llu\n", redis_fault_names[i],
		    get(&seg->redis_errors[i]));
	put(&o, "# HELP payhook_lost_leases_total Lock releases that found the "
		"lease gone or taken over.\n"
		"# TYPE payhook_lost_leases_total counter\n"
		"payhook_lost_leases_total %llu\n", get(&seg->lost_leases));
	put(&o, "# HELP payhook_workers Worker processes alive.\n"
		"# TYPE payhook_workers gauge\n"
		"payhook_workers %ld\n", workers_alive(seg));
	put(&o, "# HELP payhook_worker_restarts_total Workers started again "
		"after an exit nobody asked for.\n"
		"# TYPE payhook_worker_restarts_total counter\n"
		"payhook_worker_restarts_total %llu\n",
	    get(&seg->worker_restarts));
	put(&o, "# HELP payhook_reloads_total Configuration reloads, applied "
		"or refused.\n"
		"# TYPE payhook_reloads_total counter\n"
		"payhook_reloads_total{result=\"applied\"} %llu\n"
		"payhook_reloads_total{result=\"refused\"} %llu\n",
	    get(&seg->reloads), get(&seg->reloads_refused));
	put_dispatch(&o, seg);
	if (o.full)
		return -1;
	return (long)o.len;
}

long long metrics_value(const struct metrics *m, const struct config *cfg,
			const char *series)
{
	char *text = malloc(METRICS_RENDER_MAX);
	size_t len = strlen(series);
	long long value = -1;

	if (text == NULL)
		return -1;
	if (metrics_render(m, cfg, text, METRICS_RENDER_MAX) >= 0) {
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
