/* metrics.c - the pool's counters in shared memory (see metrics.h). The
 * segment is a fixed struct of C11 atomics: lock-free 64-bit atomics are
 * address-free on the platforms payhook runs on, so every process may map it
 * anywhere.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
#include "textbuf.h"

/* The exposition is written into a textbuf; put is its short name here. */
#define put textbuf_printf
#include "timing.h"

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

/* The transaction id in 8-byte words: atomics, so a reader racing the
 * writer reads a torn value (which the sequence lock then refuses), never
 * undefined behaviour. */
#define TXID_WORDS 17
_Static_assert(TXID_WORDS * 8 <=
		       sizeof(((struct metrics_worker *)0)->transaction_id),
	       "metrics_worker.transaction_id holds a slot's id");

/* One worker's slot: written by that worker only (and pid by whoever starts
 * and reaps it); read by anyone. */
struct slot {
	atomic_int pid;
	atomic_uint stage;
	atomic_uint seq;             /* odd while provider/txid change */
	atomic_uint provider;
	atomic_ullong served;
	atomic_ullong request;       /* requests begun */
	atomic_llong started_us;     /* CLOCK_MONOTONIC, of request */
	atomic_ullong slow_logged;   /* the request the master logged slow */
	atomic_ullong terminated;    /* the request whose worker it ended */
	atomic_ullong txid[TXID_WORDS];
};

/* One minute of answers; stamp: the minute (Unix time / 60) it counts. */
struct minute {
	atomic_llong stamp;
	atomic_ullong counts[PROVIDER_SLOTS][METRICS_KINDS];
};

#define REASON_WORDS 16
_Static_assert(REASON_WORDS * 8 <=
		       sizeof(((struct metrics_failure *)0)->reason),
	       "metrics_failure.reason holds a ring entry's reason");

/* One entry of the failures' ring, under its own sequence lock. */
struct failure {
	atomic_uint seq;
	atomic_uint provider;
	atomic_uint outcome;
	atomic_llong time;
	atomic_ullong txid[TXID_WORDS];
	atomic_ullong reason[REASON_WORDS];
};

/* One payhook-dispatch's circuit (its view of the target), written by that
 * process only, under its sequence lock; pid 0: a free entry. */
struct circuit {
	atomic_int pid;
	atomic_uint seq;
	atomic_uint state;
	atomic_llong since_ms;       /* Unix time in ms */
	atomic_ullong failures;
	atomic_llong next_probe_ms;  /* Unix time in ms; 0: none */
};

/* The target's shared state (one for every dispatcher), under its
 * sequence lock; seq 0: never published. */
#define TARGET_ERROR_WORDS 26
_Static_assert(TARGET_ERROR_WORDS * 8 == METRICS_TARGET_ERROR_MAX + 1,
	       "the error's words hold METRICS_TARGET_ERROR_MAX bytes");
struct target_view {
	atomic_uint seq;
	atomic_uint state;
	atomic_llong since_ms;
	atomic_ullong failures;
	atomic_llong next_probe_ms;
	atomic_llong pause_until_ms;
	atomic_llong last_status;
	atomic_llong updated_ms;
	atomic_ullong error[TARGET_ERROR_WORDS];
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
	/* The versions before's; unused (slots[] below hold the pids), kept
	 * so their segments grow in place. */
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
	/* The pool's status, each worker's slot, the hour, the failures:
	 * added after the lifecycle counters, for the same reason. */
	atomic_llong start_time;
	atomic_uint workers_configured;
	atomic_ullong accepted;
	atomic_ullong max_active;
	atomic_ullong max_children_reached;
	atomic_llong listen_queue, max_listen_queue, listen_queue_len;
	atomic_ullong slow_requests;
	atomic_ullong terminated_requests;
	struct slot slots[WORKER_SLOTS];
	struct minute minutes[METRICS_MINUTES];
	atomic_ullong failures_next;
	struct failure failures[METRICS_FAILURES];
	/* Each running payhook-dispatch's circuit: added after the
	 * failures, for the same reason. */
	struct circuit circuits[METRICS_DISPATCHERS];
	/* Refunds past their payment's amount: added after the circuits. */
	atomic_ullong suspicious_refunds;
	/* The latest answers refused before the signature was checked
	 * (metrics_refusal): apart from failures[], so that anonymous
	 * requests never push a signed request's failure off the page.
	 * Added after the suspicious refunds, for the same reason. */
	atomic_ullong refusals_next;
	struct failure refusals[METRICS_FAILURES];
	/* The target's shared state: added after the refusals, for the same
	 * reason. */
	struct target_view target;
	/* The inbox (inbox_days): deliveries kept or whose write failed, by
	 * provider and outcome kept (ignored, unauthorized), and replayed
	 * deliveries that recorded something. Added after the target, for
	 * the same reason. */
	atomic_ullong inbox[PROVIDER_SLOTS][2][METRICS_INBOX_RESULTS];
	atomic_ullong inbox_replayed[PROVIDER_SLOTS];
};

static const char *const dispatch_result_names[METRICS_DISPATCH_RESULTS] = {
	"delivered", "retry", "deferred", "dead", "superseded", "unrecorded",
};

/* The sizes of the versions before, whose segments grow in place:
 * without the lifecycle counters, without the pool's status, without the
 * circuits, without the suspicious refunds, the refusals and the target,
 * without the inbox. */
#define PREVIOUS_SIZE offsetof(struct segment, lifecycle)
#define BEFORE_STATUS_SIZE offsetof(struct segment, start_time)
#define BEFORE_CIRCUITS_SIZE offsetof(struct segment, circuits)
#define BEFORE_SUSPICIOUS_SIZE offsetof(struct segment, suspicious_refunds)
#define BEFORE_INBOX_SIZE offsetof(struct segment, inbox)

static bool older_size(size_t size)
{
	return size == PREVIOUS_SIZE || size == BEFORE_STATUS_SIZE ||
	       size == BEFORE_CIRCUITS_SIZE || size == BEFORE_SUSPICIOUS_SIZE ||
	       size == BEFORE_INBOX_SIZE;
}

/* The status fields that do not start at zero. */
static void status_init(struct segment *seg)
{
	atomic_store(&seg->start_time, (long long)time(NULL));
	atomic_store(&seg->listen_queue, -1);
	atomic_store(&seg->max_listen_queue, -1);
	atomic_store(&seg->listen_queue_len, -1);
}

struct metrics {
	struct segment *seg;
	int fd;
	struct slot *mine; /* this process's slot (a worker's), or NULL */
	struct circuit *circuit; /* this dispatcher's entry, or NULL */
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
	if (!fresh && older_size((size_t)st.st_size) &&
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
		status_init(m->seg);
		m->seg->magic = MAGIC;
	}
	if (m->seg->magic == MAGIC && older_size(m->seg->size)) {
		/* The status came with the version before the circuits. */
		if (m->seg->size < BEFORE_CIRCUITS_SIZE)
			status_init(m->seg);
		m->seg->size = (uint32_t)sizeof(struct segment);
	}
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
	/* Close-on-exec: only an upgrade's exec hands it on (master.c). */
	int fd = memfd_create("payhook-metrics", MFD_CLOEXEC);

	if (fd < 0) {
		error_set(err, "metrics: memfd_create: %s", strerror(errno));
		return NULL;
	}
	return map_fd(fd, true, err);
}

struct metrics *metrics_open_file_for(const char *path,
				      const struct sharedfile_owner *owner,
				      struct error *err)
{
	int fd = sharedfile_open(path, O_RDWR, 0640, owner, NULL);

	if (fd < 0) {
		error_set(err, "metrics_file %s: %s", path, strerror(errno));
		return NULL;
	}
	return map_fd(fd, false, err);
}

struct metrics *metrics_open_file(const char *path, struct error *err)
{
	return metrics_open_file_for(path, NULL, err);
}

struct metrics *metrics_attach_fd(int fd, struct error *err)
{
	int flags = fcntl(fd, F_GETFD);

	if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0) {
		error_set(err, "metrics: descriptor %d: %s", fd,
			  strerror(errno));
		close(fd);
		return NULL;
	}
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

static enum metrics_kind kind_of(enum outcome outcome)
{
	switch (outcome) {
	case OUTCOME_PROCESSED:
	case OUTCOME_DUPLICATE:
	case OUTCOME_IGNORED:
		return METRICS_OK;
	case OUTCOME_IN_PROGRESS:
	case OUTCOME_UNAVAILABLE:
	case OUTCOME_ERROR:
		return METRICS_RETRY;
	default:
		return METRICS_REFUSED;
	}
}

/* This minute's bucket of the hour: the first answer of a new minute
 * claims the bucket and clears what it held an hour ago (an answer racing
 * that clearing may be lost: the chart is a picture, the counters above are
 * the figures). time() reads the vDSO: no system call. */
static void count_minute(struct segment *seg, unsigned provider,
			 enum outcome outcome)
{
	long long now = (long long)time(NULL) / 60;
	struct minute *b = &seg->minutes[now % METRICS_MINUTES];
	long long stamp = atomic_load_explicit(&b->stamp, memory_order_relaxed);

	if (stamp != now &&
	    atomic_compare_exchange_strong(&b->stamp, &stamp, now)) {
		for (unsigned p = 0; p < PROVIDER_SLOTS; p++)
			for (unsigned k = 0; k < METRICS_KINDS; k++)
				atomic_store_explicit(&b->counts[p][k], 0,
						      memory_order_relaxed);
	}
	add(&b->counts[provider][kind_of(outcome)]);
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
	count_minute(m->seg, provider, outcome);
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

bool metrics_read_dispatch(const struct metrics *m,
			   struct metrics_dispatch_gauges *g, int64_t *at_s,
			   unsigned long long *circuit_opened)
{
	const struct segment *seg = m->seg;

	*at_s = (int64_t)get(&seg->dispatch_gauges_at_s);
	if (*at_s == 0)
		return false;
	g->pending = get(&seg->dispatch_pending);
	g->in_flight = get(&seg->dispatch_in_flight);
	g->dead = get(&seg->dispatch_dead);
	g->oldest_due_s = get(&seg->dispatch_oldest_due_s);
	*circuit_opened = get(&seg->dispatch_circuit_opened);
	return true;
}

/* Whether process pid runs (one of another user's too). */
static bool pid_alive(int pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
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

void metrics_inbox(struct metrics *m, unsigned provider, bool unauthorized,
		   enum metrics_inbox_result result)
{
	if (m == NULL || (unsigned)result >= METRICS_INBOX_RESULTS)
		return;
	if (provider > CONFIG_PROVIDER_COUNT)
		provider = CONFIG_PROVIDER_COUNT;
	add(&m->seg->inbox[provider][unauthorized ? 1 : 0][result]);
}

void metrics_inbox_replayed(struct metrics *m, unsigned provider)
{
	if (m == NULL)
		return;
	if (provider > CONFIG_PROVIDER_COUNT)
		provider = CONFIG_PROVIDER_COUNT;
	add(&m->seg->inbox_replayed[provider]);
}

void metrics_read_inbox(const struct metrics *m,
			struct metrics_inbox_totals *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned p = 0; p < PROVIDER_SLOTS; p++) {
		for (unsigned u = 0; u < 2; u++) {
			out->kept[u] += get(&m->seg->inbox[p][u][METRICS_INBOX_KEPT]);
			out->failed +=
				get(&m->seg->inbox[p][u][METRICS_INBOX_FAILED]);
		}
		out->replayed += get(&m->seg->inbox_replayed[p]);
	}
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

void metrics_suspicious_refund(struct metrics *m)
{
	if (m != NULL)
		add(&m->seg->suspicious_refunds);
}

bool metrics_worker_started(struct metrics *m, pid_t pid)
{
	if (m == NULL)
		return false;
	add(&m->seg->workers_started);
	for (size_t i = 0; i < WORKER_SLOTS; i++) {
		struct slot *s = &m->seg->slots[i];
		int expected = 0;

		if (atomic_compare_exchange_strong(&s->pid, &expected,
						   (int)pid)) {
			/* The slot's figures are this worker's from now. */
			atomic_store(&s->stage, METRICS_IDLE);
			atomic_store(&s->served, 0);
			atomic_store(&s->request, 0);
			atomic_store(&s->slow_logged, 0);
			atomic_store(&s->terminated, 0);
			atomic_store(&s->provider, CONFIG_PROVIDER_COUNT);
			atomic_store(&s->txid[0], 0);
			if (pid == getpid())
				m->mine = s;
			return true;
		}
	}
	return false;
}

void metrics_worker_gone(struct metrics *m, pid_t pid)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < WORKER_SLOTS; i++) {
		int expected = (int)pid;

		if (atomic_compare_exchange_strong(&m->seg->slots[i].pid,
						   &expected, 0)) {
			if (m->mine == &m->seg->slots[i])
				m->mine = NULL;
			return;
		}
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

/* Whether the slot's worker runs: a worker killed outright never cleared
 * its slot (independent workers have no master to do it). */
static bool slot_alive(const struct slot *s)
{
	return pid_alive(atomic_load_explicit(&s->pid, memory_order_relaxed));
}

/* Workers in the slots that still run: a worker killed outright never
 * cleared its slot (independent workers have no master to do it). */
static long workers_alive(const struct segment *seg)
{
	long alive = 0;

	for (size_t i = 0; i < WORKER_SLOTS; i++) {
		if (slot_alive(&seg->slots[i]))
			alive++;
	}
	return alive;
}

static const char *const stage_names[METRICS_STAGES] = {
	"idle", "reading", "connecting", "locking", "inserting", "answering",
	"finishing",
};

const char *metrics_stage_name(enum metrics_stage stage)
{
	return (unsigned)stage < METRICS_STAGES ? stage_names[stage] : "-";
}

static void set_stage(struct slot *s, enum metrics_stage stage)
{
	atomic_store_explicit(&s->stage, (unsigned)stage, memory_order_relaxed);
}

/* Text into atomic words (a reader racing the writer reads a torn value,
 * which its sequence lock then refuses): only the words the text and its
 * NUL cover, at most nwords. */
static void store_words(atomic_ullong *dst, size_t nwords, const char *text,
			size_t len)
{
	uint64_t word;

	if (len > nwords * 8 - 1)
		len = nwords * 8 - 1;
	for (size_t w = 0; w <= len / 8; w++) {
		size_t from = w * 8, n = len - from < 8 ? len - from : 8;

		word = 0;
		memcpy(&word, text + from, n);
		atomic_store_explicit(&dst[w], word, memory_order_relaxed);
	}
}

/* The reader's copy of what store_words wrote (out: nwords * 8 bytes),
 * NUL-terminated. */
static void load_words(const atomic_ullong *src, size_t nwords, char *out)
{
	for (size_t w = 0; w < nwords; w++) {
		uint64_t word = atomic_load_explicit(&src[w],
						     memory_order_relaxed);

		memcpy(out + w * 8, &word, 8);
	}
	out[nwords * 8 - 1] = '\0';
}

/* The writer's half of a sequence lock: seq odd while the fields change. */
static unsigned write_begin(atomic_uint *seq)
{
	unsigned before = atomic_fetch_add_explicit(seq, 1,
						    memory_order_relaxed);

	atomic_thread_fence(memory_order_release);
	return before;
}

static void write_end(atomic_uint *seq)
{
	atomic_thread_fence(memory_order_release);
	atomic_fetch_add_explicit(seq, 1, memory_order_relaxed);
}

/* The reader's half: seq before the fields are read (odd: the writer is at
 * them), then whether what was read since is consistent. */
static unsigned read_begin(const atomic_uint *seq)
{
	return atomic_load_explicit(seq, memory_order_acquire);
}

static bool read_end(const atomic_uint *seq, unsigned before)
{
	atomic_thread_fence(memory_order_acquire);
	return before % 2 == 0 &&
	       atomic_load_explicit(seq, memory_order_relaxed) == before;
}

/* The worker's payment in hand, in its own slot (it alone writes there). */
static void publish_item(struct slot *s, unsigned provider, const char *id,
			 size_t len)
{
	write_begin(&s->seq);
	atomic_store_explicit(&s->provider, provider, memory_order_relaxed);
	store_words(s->txid, TXID_WORDS, id, len);
	write_end(&s->seq);
}

void metrics_request_begin(struct metrics *m)
{
	struct slot *s = m != NULL ? m->mine : NULL;

	if (s == NULL)
		return;
	add(&m->seg->accepted);
	atomic_store_explicit(&s->started_us, (long long)timing_now_us(),
			      memory_order_relaxed);
	atomic_fetch_add_explicit(&s->request, 1, memory_order_relaxed);
	publish_item(s, CONFIG_PROVIDER_COUNT, "", 0);
	/* Last: a reader that sees the stage sees the request's start. */
	atomic_store_explicit(&s->stage, METRICS_READING, memory_order_release);
}

void metrics_request_stage(struct metrics *m, enum metrics_stage stage)
{
	if (m != NULL && m->mine != NULL)
		set_stage(m->mine, stage);
}

void metrics_request_item(struct metrics *m, unsigned provider,
			  const char *transaction_id, size_t len)
{
	if (m != NULL && m->mine != NULL)
		publish_item(m->mine, provider, transaction_id, len);
}

void metrics_request_end(struct metrics *m)
{
	struct slot *s = m != NULL ? m->mine : NULL;

	if (s == NULL)
		return;
	add(&s->served);
	/* An idle worker has no transaction in hand: the page and the
	 * status show none, not the last one's. */
	publish_item(s, CONFIG_PROVIDER_COUNT, "", 0);
	set_stage(s, METRICS_IDLE);
}

/* The reader's half: a consistent provider and id, or none after a bounded
 * number of tries (the writer changes them twice per request at most). */
static void read_item(const struct slot *s, struct metrics_worker *w)
{
	for (int tries = 0; tries < 64; tries++) {
		unsigned before = read_begin(&s->seq);

		if (before % 2 != 0)
			continue;
		w->provider = atomic_load_explicit(&s->provider,
						   memory_order_relaxed);
		load_words(s->txid, TXID_WORDS, w->transaction_id);
		if (!read_end(&s->seq, before))
			continue;
		if (w->provider > CONFIG_PROVIDER_COUNT)
			w->provider = CONFIG_PROVIDER_COUNT;
		return;
	}
	w->provider = CONFIG_PROVIDER_COUNT;
	w->transaction_id[0] = '\0';
}

size_t metrics_read_status(const struct metrics *m, struct metrics_pool *pool,
			   struct metrics_worker *workers, size_t cap)
{
	const struct segment *seg = m->seg;
	int64_t now = timing_now_us();
	size_t n = 0;
	unsigned total = 0, active = 0;

	for (size_t i = 0; i < WORKER_SLOTS; i++) {
		const struct slot *s = &seg->slots[i];
		struct metrics_worker w;

		if (!slot_alive(s))
			continue;
		w.pid = atomic_load_explicit(&s->pid, memory_order_relaxed);
		w.stage = atomic_load_explicit(&s->stage, memory_order_acquire);
		if (w.stage >= METRICS_STAGES)
			w.stage = METRICS_IDLE;
		w.served = get(&s->served);
		w.request = get(&s->request);
		w.elapsed_us = 0;
		if (w.stage != METRICS_IDLE) {
			w.elapsed_us = now - atomic_load_explicit(
				&s->started_us, memory_order_relaxed);
			if (w.elapsed_us < 0)
				w.elapsed_us = 0;
			active++;
		}
		read_item(s, &w);
		total++;
		if (workers != NULL && n < cap)
			workers[n++] = w;
	}
	if (pool != NULL) {
		pool->start_time = atomic_load(&seg->start_time);
		pool->uptime_s = (int64_t)time(NULL) - pool->start_time;
		pool->workers_configured = atomic_load(&seg->workers_configured);
		pool->workers_total = total;
		pool->workers_active = active;
		pool->workers_idle = total - active;
		pool->accepted = get(&seg->accepted);
		pool->max_active = get(&seg->max_active);
		pool->max_children_reached = get(&seg->max_children_reached);
		pool->listen_queue = atomic_load(&seg->listen_queue);
		pool->max_listen_queue = atomic_load(&seg->max_listen_queue);
		pool->listen_queue_len = atomic_load(&seg->listen_queue_len);
		pool->slow_requests = get(&seg->slow_requests);
		pool->terminated_requests = get(&seg->terminated_requests);
	}
	return n;
}

void metrics_pool_started(struct metrics *m, unsigned workers,
			  bool started_now)
{
	if (m == NULL)
		return;
	atomic_store(&m->seg->workers_configured, workers);
	if (started_now)
		atomic_store(&m->seg->start_time, (long long)time(NULL));
}

/* Raises *max to value when it is higher. */
static void raise_max(atomic_llong *max, long long value)
{
	long long seen = atomic_load(max);

	while (value > seen &&
	       !atomic_compare_exchange_weak(max, &seen, value))
		;
}

void metrics_pool_sample(struct metrics *m, unsigned active, long long queue,
			 long long backlog)
{
	struct segment *seg;
	unsigned long long seen;

	if (m == NULL)
		return;
	seg = m->seg;
	seen = get(&seg->max_active);
	while (active > seen &&
	       !atomic_compare_exchange_weak(&seg->max_active, &seen, active))
		;
	if (active > 0 && active >= atomic_load(&seg->workers_configured))
		add(&seg->max_children_reached);
	atomic_store(&seg->listen_queue, queue);
	atomic_store(&seg->listen_queue_len, backlog);
	raise_max(&seg->max_listen_queue, queue);
}

/* Marks pid's request in the slot field at offset mark (once: true the
 * first time) and counts it in *counter. */
static bool mark_once(struct metrics *m, pid_t pid, unsigned long long request,
		      size_t mark, atomic_ullong *counter)
{
	for (size_t i = 0; i < WORKER_SLOTS; i++) {
		struct slot *s = &m->seg->slots[i];
		atomic_ullong *field = (atomic_ullong *)((char *)s + mark);
		unsigned long long marked;

		if (atomic_load(&s->pid) != (int)pid)
			continue;
		marked = atomic_load(field);
		if (marked >= request ||
		    !atomic_compare_exchange_strong(field, &marked, request))
			return false;
		add(counter);
		return true;
	}
	return false;
}

bool metrics_slow_seen(struct metrics *m, pid_t pid, unsigned long long request)
{
	return m != NULL && mark_once(m, pid, request,
				      offsetof(struct slot, slow_logged),
				      &m->seg->slow_requests);
}

bool metrics_terminated_seen(struct metrics *m, pid_t pid,
			     unsigned long long request)
{
	return m != NULL && mark_once(m, pid, request,
				      offsetof(struct slot, terminated),
				      &m->seg->terminated_requests);
}

/* Writes r into the next entry of ring (METRICS_FAILURES entries, next
 * its counter). */
static void ring_push(atomic_ullong *next, struct failure *ring,
		      unsigned provider, const struct result *r)
{
	struct failure *f = &ring[atomic_fetch_add(next, 1) % METRICS_FAILURES];

	write_begin(&f->seq);
	atomic_store_explicit(&f->time, (long long)time(NULL),
			      memory_order_relaxed);
	atomic_store_explicit(&f->provider, provider, memory_order_relaxed);
	atomic_store_explicit(&f->outcome, (unsigned)r->outcome,
			      memory_order_relaxed);
	store_words(f->txid, TXID_WORDS, r->transaction_id,
		    strlen(r->transaction_id));
	store_words(f->reason, REASON_WORDS, r->reason, strlen(r->reason));
	write_end(&f->seq);
}

void metrics_failure(struct metrics *m, unsigned provider,
		     const struct result *r)
{
	if (m != NULL)
		ring_push(&m->seg->failures_next, m->seg->failures, provider,
			  r);
}

void metrics_refusal(struct metrics *m, unsigned provider,
		     const struct result *r)
{
	if (m != NULL)
		ring_push(&m->seg->refusals_next, m->seg->refusals, provider,
			  r);
}

/* One ring entry, consistent; false when it is empty or kept changing. */
static bool read_failure(const struct failure *f, struct metrics_failure *out)
{
	for (int tries = 0; tries < 64; tries++) {
		unsigned before = read_begin(&f->seq);

		if (before == 0)
			return false;
		if (before % 2 != 0)
			continue;
		out->time = atomic_load_explicit(&f->time, memory_order_relaxed);
		out->provider = atomic_load_explicit(&f->provider,
						     memory_order_relaxed);
		out->outcome = (enum outcome)atomic_load_explicit(
			&f->outcome, memory_order_relaxed);
		load_words(f->txid, TXID_WORDS, out->transaction_id);
		load_words(f->reason, REASON_WORDS, out->reason);
		if (!read_end(&f->seq, before))
			continue;
		if (out->provider > CONFIG_PROVIDER_COUNT)
			out->provider = CONFIG_PROVIDER_COUNT;
		if ((unsigned)out->outcome >= OUTCOME_COUNT)
			out->outcome = OUTCOME_ERROR;
		return true;
	}
	return false;
}

/* The entries of ring (next: its counter), newest first, into out (up to
 * METRICS_FAILURES). Returns how many. */
static size_t read_ring(unsigned long long next, const struct failure *ring,
			struct metrics_failure *out)
{
	size_t n = 0;

	for (unsigned i = 1; i <= METRICS_FAILURES && i <= next; i++) {
		if (read_failure(&ring[(next - i) % METRICS_FAILURES], &out[n]))
			n++;
	}
	return n;
}

size_t metrics_read_recent(const struct metrics *m,
			   struct metrics_hour *hour,
			   struct metrics_failure *failures)
{
	const struct segment *seg = m->seg;
	long long now = (long long)time(NULL) / 60;
	unsigned long long next = get(&seg->failures_next);

	memset(hour, 0, sizeof(*hour));
	for (int i = 0; i < METRICS_MINUTES; i++) {
		long long minute = now - (METRICS_MINUTES - 1) + i;
		const struct minute *b = &seg->minutes[minute % METRICS_MINUTES];

		if (atomic_load(&b->stamp) != minute)
			continue;
		for (unsigned p = 0; p < PROVIDER_SLOTS; p++)
			for (unsigned k = 0; k < METRICS_KINDS; k++)
				hour->counts[p][i][k] = get(&b->counts[p][k]);
	}
	return read_ring(next, seg->failures, failures);
}

size_t metrics_read_refusals(const struct metrics *m,
			     struct metrics_failure *refusals)
{
	return read_ring(get(&m->seg->refusals_next), m->seg->refusals,
			 refusals);
}

/* A histogram of bucket_us in seconds. */
static void put_histogram(struct textbuf *o, const char *name, const char *help,
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

static const char *const circuit_state_names[METRICS_CIRCUIT_STATES] = {
	"closed", "open", "half_open",
};

const char *metrics_circuit_state_name(enum metrics_circuit_state state)
{
	return (unsigned)state < METRICS_CIRCUIT_STATES
		       ? circuit_state_names[state]
		       : "?";
}

/* This process's circuit entry: the one it holds, else a free one, else
 * one whose process is gone (killed before it could give it back). NULL
 * when every entry is held. */
static struct circuit *circuit_entry(struct metrics *m)
{
	int self = (int)getpid();

	if (m->circuit != NULL &&
	    atomic_load_explicit(&m->circuit->pid, memory_order_relaxed) == self)
		return m->circuit;
	m->circuit = NULL;
	for (int pass = 0; pass < 2 && m->circuit == NULL; pass++) {
		for (size_t i = 0; i < METRICS_DISPATCHERS; i++) {
			struct circuit *c = &m->seg->circuits[i];
			int pid = atomic_load(&c->pid);

			if (pid == self ||
			    ((pid == 0 || (pass == 1 && !pid_alive(pid))) &&
			     atomic_compare_exchange_strong(&c->pid, &pid,
							    self))) {
				m->circuit = c;
				break;
			}
		}
	}
	return m->circuit;
}

void metrics_dispatch_circuit(struct metrics *m,
			      const struct metrics_circuit *circuit)
{
	struct circuit *c;

	if (m == NULL)
		return;
	c = circuit_entry(m);
	set(&m->seg->dispatch_seen, 1);
	if (c == NULL)
		return;
	write_begin(&c->seq);
	atomic_store_explicit(&c->state, (unsigned)circuit->state,
			      memory_order_relaxed);
	atomic_store_explicit(&c->since_ms, circuit->since_ms,
			      memory_order_relaxed);
	atomic_store_explicit(&c->failures, circuit->failures,
			      memory_order_relaxed);
	atomic_store_explicit(&c->next_probe_ms, circuit->next_probe_ms,
			      memory_order_relaxed);
	write_end(&c->seq);
}

void metrics_dispatch_circuit_gone(struct metrics *m)
{
	int self = (int)getpid();

	if (m == NULL || m->circuit == NULL)
		return;
	atomic_compare_exchange_strong(&m->circuit->pid, &self, 0);
	m->circuit = NULL;
}

/* One entry, consistent, of a process that runs; false otherwise. */
static bool read_circuit(const struct circuit *c, struct metrics_circuit *out)
{
	for (int tries = 0; tries < 64; tries++) {
		unsigned before = read_begin(&c->seq);

		if (before % 2 != 0)
			continue;
		out->pid = (pid_t)atomic_load_explicit(&c->pid,
						       memory_order_relaxed);
		out->state = (enum metrics_circuit_state)atomic_load_explicit(
			&c->state, memory_order_relaxed);
		out->since_ms = atomic_load_explicit(&c->since_ms,
						     memory_order_relaxed);
		out->failures = atomic_load_explicit(&c->failures,
						     memory_order_relaxed);
		out->next_probe_ms = atomic_load_explicit(&c->next_probe_ms,
							  memory_order_relaxed);
		if (!read_end(&c->seq, before))
			continue;
		/* seq 0: taken, nothing published yet. */
		if (before == 0 || !pid_alive((int)out->pid))
			return false;
		if ((unsigned)out->state >= METRICS_CIRCUIT_STATES)
			out->state = METRICS_CIRCUIT_CLOSED;
		return true;
	}
	return false;
}

static size_t read_circuits(const struct segment *seg,
			    struct metrics_circuit *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < METRICS_DISPATCHERS && n < cap; i++)
		if (read_circuit(&seg->circuits[i], &out[n]))
			n++;
	return n;
}

size_t metrics_read_circuits(const struct metrics *m,
			     struct metrics_circuit *out, size_t cap)
{
	return read_circuits(m->seg, out, cap);
}

/* Each running payhook-dispatch's circuit, labelled by its pid: the state
 * as a state set (1 for the one it is in), since when, the failures in a
 * row and the next probe. */
static void put_circuits(struct textbuf *o, const struct segment *seg)
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
	size_t n = read_circuits(seg, c, METRICS_DISPATCHERS);

	put(o, "# HELP payhook_dispatch_circuit_state The target's circuit as "
	       "each running payhook-dispatch sees it: 1 for its state.\n"
	       "# TYPE payhook_dispatch_circuit_state gauge\n");
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < METRICS_CIRCUIT_STATES; k++)
			put(o, "payhook_dispatch_circuit_state{pid=\"%ld\","
			       "state=\"%s\"} %d\n", (long)c[i].pid,
			    circuit_state_names[k], c[i].state == k);
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

void metrics_dispatch_target(struct metrics *m, const struct metrics_target *t)
{
	struct target_view *v;

	if (m == NULL)
		return;
	v = &m->seg->target;
	set(&m->seg->dispatch_seen, 1);
	write_begin(&v->seq);
	atomic_store_explicit(&v->state, (unsigned)t->state,
			      memory_order_relaxed);
	atomic_store_explicit(&v->since_ms, t->since_ms, memory_order_relaxed);
	atomic_store_explicit(&v->failures, t->failures, memory_order_relaxed);
	atomic_store_explicit(&v->next_probe_ms, t->next_probe_ms,
			      memory_order_relaxed);
	atomic_store_explicit(&v->pause_until_ms, t->pause_until_ms,
			      memory_order_relaxed);
	atomic_store_explicit(&v->last_status, t->last_status,
			      memory_order_relaxed);
	atomic_store_explicit(&v->updated_ms, t->updated_ms,
			      memory_order_relaxed);
	store_words(v->error, TARGET_ERROR_WORDS, t->last_error,
		    strnlen(t->last_error, METRICS_TARGET_ERROR_MAX));
	write_end(&v->seq);
}

static bool read_target(const struct segment *seg, struct metrics_target *out)
{
	const struct target_view *v = &seg->target;

	for (int tries = 0; tries < 64; tries++) {
		unsigned before = read_begin(&v->seq);

		if (before % 2 != 0)
			continue;
		out->state = (enum metrics_circuit_state)atomic_load_explicit(
			&v->state, memory_order_relaxed);
		out->since_ms = atomic_load_explicit(&v->since_ms,
						     memory_order_relaxed);
		out->failures = atomic_load_explicit(&v->failures,
						     memory_order_relaxed);
		out->next_probe_ms = atomic_load_explicit(&v->next_probe_ms,
							  memory_order_relaxed);
		out->pause_until_ms = atomic_load_explicit(
			&v->pause_until_ms, memory_order_relaxed);
		out->last_status = (long)atomic_load_explicit(
			&v->last_status, memory_order_relaxed);
		out->updated_ms = atomic_load_explicit(&v->updated_ms,
						       memory_order_relaxed);
		load_words(v->error, TARGET_ERROR_WORDS, out->last_error);
		if (!read_end(&v->seq, before))
			continue;
		if (before == 0)
			return false;
		if ((unsigned)out->state >= METRICS_CIRCUIT_STATES)
			out->state = METRICS_CIRCUIT_CLOSED;
		return true;
	}
	return false;
}

bool metrics_read_target(const struct metrics *m, struct metrics_target *out)
{
	return read_target(m->seg, out);
}

/* The target's shared state: one circuit for every dispatcher, its last
 * answer's status and error (a label, escaped as the format wants). */
static void put_target(struct textbuf *o, const struct segment *seg)
{
	struct metrics_target t;
	char error[2 * METRICS_TARGET_ERROR_MAX + 1];
	size_t n = 0;

	if (!read_target(seg, &t))
		return;
	put(o, "# HELP payhook_dispatch_target_circuit_state The target's "
	       "circuit, one for every payhook-dispatch of the database: 1 for "
	       "its state.\n"
	       "# TYPE payhook_dispatch_target_circuit_state gauge\n");
	for (unsigned k = 0; k < METRICS_CIRCUIT_STATES; k++)
		put(o, "payhook_dispatch_target_circuit_state{state=\"%s\"} "
		       "%d\n", circuit_state_names[k], t.state == k);
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

/* payhook-dispatch's series, once a dispatcher shares the segment. */
static void put_dispatch(struct textbuf *o, const struct segment *seg)
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
	put_circuits(o, seg);
	put_target(o, seg);
}

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

long metrics_render_status(const struct metrics *m, char *buf, size_t cap)
{
	struct textbuf o = textbuf_init(buf, cap);

	put_status(&o, m);
	return o.full ? -1 : (long)o.len;
}

/* The inbox's series name for result, once they happen. */
static void put_inbox(struct textbuf *o, const struct segment *seg,
		      enum metrics_inbox_result result, const char *name)
{
	for (unsigned p = 0; p < PROVIDER_SLOTS; p++)
		for (unsigned u = 0; u < 2; u++) {
			unsigned long long n = get(&seg->inbox[p][u][result]);

			if (n > 0)
				put(o, "%s{provider=\"%s\",outcome=\"%s\"} "
					"%llu\n", name, provider_label(p),
				    u ? "unauthorized" : "ignored", n);
		}
}

long metrics_render(const struct metrics *m, const struct config *cfg,
		    char *buf, size_t cap)
{
	const struct segment *seg = m->seg;
	struct textbuf o = textbuf_init(buf, cap);

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
	put(&o, "# HELP payhook_inbox_kept_total Deliveries answered 200 "
		"ignored or 401 kept in the inbox, by provider and outcome.\n"
		"# TYPE payhook_inbox_kept_total counter\n");
	put_inbox(&o, seg, METRICS_INBOX_KEPT, "payhook_inbox_kept_total");
	put(&o, "# HELP payhook_inbox_write_failures_total Deliveries the "
		"inbox should have kept whose write failed (the answer was "
		"the same).\n"
		"# TYPE payhook_inbox_write_failures_total counter\n");
	put_inbox(&o, seg, METRICS_INBOX_FAILED,
		  "payhook_inbox_write_failures_total");
	put(&o, "# HELP payhook_inbox_replayed_total Kept deliveries "
		"payhook-reconcile --replay recorded, by provider.\n"
		"# TYPE payhook_inbox_replayed_total counter\n");
	for (unsigned p = 0; p < PROVIDER_SLOTS; p++) {
		unsigned long long n = get(&seg->inbox_replayed[p]);

		if (n > 0)
			put(&o, "payhook_inbox_replayed_total{provider=\"%s\"} "
				"%llu\n", provider_label(p), n);
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
	put(&o, "# HELP payhook_suspicious_refunds_total Refunds recorded "
		"that carried their payment's refunded amount past the "
		"payment's amount.\n"
		"# TYPE payhook_suspicious_refunds_total counter\n"
		"payhook_suspicious_refunds_total %llu\n",
	    get(&seg->suspicious_refunds));
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
	put_status(&o, m);
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
