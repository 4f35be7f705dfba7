/* metrics.c - the pool's counters and each worker's slot in shared memory
 * (see metrics.h): the segment is a fixed struct of C11 atomics laid out in
 * scoreboard.h. It counts and reads back; it renders nothing (the
 * receiver's status.c does), and payhook-dispatch's counters are in
 * metrics_dispatch.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
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
#include "log.h"
#include "metrics.h"
#include "scoreboard.h"
#include "timing.h"

#define MAGIC 0x70686d31u /* "phm1" */

/* The MySQL errors counted on their own; any other is "other". */
static const unsigned mysql_codes[SCOREBOARD_MYSQL_CODES] = {
	1047, 1053, 1062, 1146, 1205, 1213, 1290, 1836, 1927, 2002, 2003, 2005,
	2006, 2013, 4031,
};

static const char *const redis_fault_names[METRICS_REDIS_FAULTS] = {
	"connect", "io", "reply",
};

/* metrics.h's sizes are the segment's. */
_Static_assert(METRICS_BUCKETS == SCOREBOARD_BUCKETS, "buckets");
_Static_assert(METRICS_MYSQL_CODES == SCOREBOARD_MYSQL_CODES, "MySQL codes");
_Static_assert(METRICS_REDIS_FAULTS == SCOREBOARD_REDIS_FAULTS, "faults");
_Static_assert(METRICS_KINDS == SCOREBOARD_KINDS, "kinds");
_Static_assert(METRICS_MINUTES == SCOREBOARD_MINUTES, "minutes");
_Static_assert(METRICS_FAILURES == SCOREBOARD_FAILURES, "failures");
_Static_assert(METRICS_INBOX_RESULTS == SCOREBOARD_INBOX_RESULTS, "inbox");
_Static_assert(SCOREBOARD_TXID_WORDS * 8 <=
		       sizeof(((struct metrics_worker *)0)->transaction_id),
	       "metrics_worker.transaction_id holds a slot's id");
_Static_assert(SCOREBOARD_REASON_WORDS * 8 <=
		       sizeof(((struct metrics_failure *)0)->reason),
	       "metrics_failure.reason holds a ring entry's reason");

/* The sizes of the versions before, whose segments grow in place:
 * without the lifecycle counters, without the pool's status, without the
 * circuits, without the suspicious refunds, the refusals and the target,
 * without the inbox, without the reconciliation. */
#define PREVIOUS_SIZE offsetof(struct scoreboard, lifecycle)
#define BEFORE_STATUS_SIZE offsetof(struct scoreboard, start_time)
#define BEFORE_CIRCUITS_SIZE offsetof(struct scoreboard, circuits)
#define BEFORE_SUSPICIOUS_SIZE offsetof(struct scoreboard, suspicious_refunds)
#define BEFORE_INBOX_SIZE offsetof(struct scoreboard, inbox)
#define BEFORE_RECONCILE_SIZE offsetof(struct scoreboard, reconcile_at_s)

static bool older_size(size_t size)
{
	return size == PREVIOUS_SIZE || size == BEFORE_STATUS_SIZE ||
	       size == BEFORE_CIRCUITS_SIZE || size == BEFORE_SUSPICIOUS_SIZE ||
	       size == BEFORE_INBOX_SIZE || size == BEFORE_RECONCILE_SIZE;
}

/* The status fields that do not start at zero. */
static void status_init(struct scoreboard *seg)
{
	atomic_store(&seg->start_time, (long long)time(NULL));
	atomic_store(&seg->listen_queue, -1);
	atomic_store(&seg->max_listen_queue, -1);
	atomic_store(&seg->listen_queue_len, -1);
}

/* Writes zeros over the first len bytes of fd. Returns 0, or -1 with err
 * set. */
static int zero_fill(int fd, size_t len, struct error *err)
{
	static const char zeros[4096];

	for (size_t at = 0; at < len;) {
		size_t n = len - at < sizeof(zeros) ? len - at : sizeof(zeros);
		ssize_t w = pwrite(fd, zeros, n, (off_t)at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return error_set(err, "metrics: zeroing the segment: %s",
					 w < 0 ? strerror(errno) : "no progress");
		at += (size_t)w;
	}
	return 0;
}

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
	if (fresh && ftruncate(fd, (off_t)sizeof(struct scoreboard)) != 0) {
		error_set(err, "metrics: ftruncate: %s", strerror(errno));
		goto fail;
	}
	/* A segment of the version before (a file, or the memfd an upgrade
	 * hands on) gets the new counters, as zeros, at its end. */
	if (!fresh && older_size((size_t)st.st_size) &&
	    ftruncate(fd, (off_t)sizeof(struct scoreboard)) == 0)
		st.st_size = (off_t)sizeof(struct scoreboard);
	/* A segment laid out by another version (providers added: the
	 * arrays per provider grew in its middle) starts again from zero:
	 * its figures cannot be read, and refusing it would stop every
	 * program sharing metrics_file after an upgrade. It is zeroed in
	 * place and only ever grown: a process of that version may still
	 * have it mapped, and a shorter file would fault it (SIGBUS). */
	if (!fresh && (size_t)st.st_size != sizeof(struct scoreboard)) {
		log_warn("metrics: the segment is %lld bytes, not %zu: written "
			 "by another version of payhook; its counters start "
			 "again from zero", (long long)st.st_size,
			 sizeof(struct scoreboard));
		if (zero_fill(fd, (size_t)st.st_size, err) != 0)
			goto fail;
		if ((size_t)st.st_size < sizeof(struct scoreboard) &&
		    ftruncate(fd, (off_t)sizeof(struct scoreboard)) != 0) {
			error_set(err, "metrics: ftruncate: %s", strerror(errno));
			goto fail;
		}
		st.st_size = (off_t)sizeof(struct scoreboard);
	}
	m->seg = mmap(NULL, sizeof(struct scoreboard), PROT_READ | PROT_WRITE,
		      MAP_SHARED, fd, 0);
	if (m->seg == MAP_FAILED) {
		error_set(err, "metrics: mmap: %s", strerror(errno));
		goto fail;
	}
	/* A fresh file is all zeros: the counters start at 0. */
	if (m->seg->magic == 0) {
		m->seg->size = (uint32_t)sizeof(struct scoreboard);
		status_init(m->seg);
		m->seg->magic = MAGIC;
	}
	if (m->seg->magic == MAGIC && older_size(m->seg->size)) {
		/* The status came with the version before the circuits. */
		if (m->seg->size < BEFORE_CIRCUITS_SIZE)
			status_init(m->seg);
		m->seg->size = (uint32_t)sizeof(struct scoreboard);
	}
	if (m->seg->magic != MAGIC ||
	    m->seg->size != (uint32_t)sizeof(struct scoreboard)) {
		munmap(m->seg, sizeof(struct scoreboard));
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
	struct error why;
	int fd = sharedfile_open(path, O_RDWR, 0640, owner, NULL, &why);

	if (fd < 0) {
		error_set(err, "metrics_file %s", why.message);
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
	munmap(m->seg, sizeof(struct scoreboard));
	close(m->fd);
	free(m);
}

int metrics_fd(const struct metrics *m)
{
	return m->fd;
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
static void count_minute(struct scoreboard *seg, unsigned provider,
			 enum outcome outcome)
{
	long long now = (long long)time(NULL) / 60;
	struct scoreboard_minute *b = &seg->minutes[now % METRICS_MINUTES];
	long long stamp = atomic_load_explicit(&b->stamp, memory_order_relaxed);

	if (stamp != now &&
	    atomic_compare_exchange_strong(&b->stamp, &stamp, now)) {
		for (unsigned p = 0; p < SCOREBOARD_PROVIDERS; p++)
			for (unsigned k = 0; k < METRICS_KINDS; k++)
				atomic_store_explicit(&b->counts[p][k], 0,
						      memory_order_relaxed);
	}
	scoreboard_add(&b->counts[provider][kind_of(outcome)]);
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
	scoreboard_add(&m->seg->requests[provider][outcome]);
	count_minute(m->seg, provider, outcome);
	scoreboard_observe(m->seg->duration_buckets, &m->seg->duration_count,
		&m->seg->duration_sum_us, elapsed_us);
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
	scoreboard_add(&m->seg->lifecycle[provider][kind][outcome]);
}

void metrics_inbox(struct metrics *m, unsigned provider, bool unauthorized,
		   enum metrics_inbox_result result)
{
	if (m == NULL || (unsigned)result >= METRICS_INBOX_RESULTS)
		return;
	if (provider > CONFIG_PROVIDER_COUNT)
		provider = CONFIG_PROVIDER_COUNT;
	scoreboard_add(&m->seg->inbox[provider][unauthorized ? 1 : 0][result]);
}

void metrics_inbox_replayed(struct metrics *m, unsigned provider)
{
	if (m == NULL)
		return;
	if (provider > CONFIG_PROVIDER_COUNT)
		provider = CONFIG_PROVIDER_COUNT;
	scoreboard_add(&m->seg->inbox_replayed[provider]);
}

void metrics_read_inbox(const struct metrics *m,
			struct metrics_inbox_totals *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned p = 0; p < SCOREBOARD_PROVIDERS; p++) {
		for (unsigned u = 0; u < 2; u++) {
			out->kept[u] += scoreboard_get(&m->seg->inbox[p][u][METRICS_INBOX_KEPT]);
			out->failed +=
				scoreboard_get(&m->seg->inbox[p][u][METRICS_INBOX_FAILED]);
		}
		out->replayed += scoreboard_get(&m->seg->inbox_replayed[p]);
	}
}

void metrics_mysql_error(struct metrics *m, unsigned code)
{
	size_t i;

	if (m == NULL || code == 0)
		return;
	for (i = 0; i < SCOREBOARD_MYSQL_CODES && mysql_codes[i] != code; i++)
		;
	scoreboard_add(&m->seg->mysql_errors[i]);
}

void metrics_redis_error(struct metrics *m, enum metrics_redis_fault fault)
{
	if (m != NULL && (unsigned)fault < METRICS_REDIS_FAULTS)
		scoreboard_add(&m->seg->redis_errors[fault]);
}

void metrics_lost_lease(struct metrics *m)
{
	if (m != NULL)
		scoreboard_add(&m->seg->lost_leases);
}

void metrics_suspicious_refund(struct metrics *m)
{
	if (m != NULL)
		scoreboard_add(&m->seg->suspicious_refunds);
}

bool metrics_worker_started(struct metrics *m, pid_t pid)
{
	if (m == NULL)
		return false;
	scoreboard_add(&m->seg->workers_started);
	for (size_t i = 0; i < SCOREBOARD_WORKERS; i++) {
		struct scoreboard_slot *s = &m->seg->slots[i];
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
	for (size_t i = 0; i < SCOREBOARD_WORKERS; i++) {
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
		scoreboard_add(&m->seg->worker_restarts);
}

void metrics_reloaded(struct metrics *m, bool applied)
{
	if (m != NULL)
		scoreboard_add(applied ? &m->seg->reloads : &m->seg->reloads_refused);
}

/* Whether the slot's worker runs: a worker killed outright never cleared
 * its slot (independent workers have no master to do it). */
static bool slot_alive(const struct scoreboard_slot *s)
{
	return scoreboard_pid_alive(atomic_load_explicit(&s->pid, memory_order_relaxed));
}

/* Workers in the slots that still run: a worker killed outright never
 * cleared its slot (independent workers have no master to do it). */
static long workers_alive(const struct scoreboard *seg)
{
	long alive = 0;

	for (size_t i = 0; i < SCOREBOARD_WORKERS; i++) {
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

static void set_stage(struct scoreboard_slot *s, enum metrics_stage stage)
{
	atomic_store_explicit(&s->stage, (unsigned)stage, memory_order_relaxed);
}

/* The worker's payment in hand, in its own slot (it alone writes there). */
static void publish_item(struct scoreboard_slot *s, unsigned provider, const char *id,
			 size_t len)
{
	scoreboard_write_begin(&s->seq);
	atomic_store_explicit(&s->provider, provider, memory_order_relaxed);
	scoreboard_store_words(s->txid, SCOREBOARD_TXID_WORDS, id, len);
	scoreboard_write_end(&s->seq);
}

void metrics_request_begin(struct metrics *m)
{
	struct scoreboard_slot *s = m != NULL ? m->mine : NULL;

	if (s == NULL)
		return;
	scoreboard_add(&m->seg->accepted);
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
	struct scoreboard_slot *s = m != NULL ? m->mine : NULL;

	if (s == NULL)
		return;
	scoreboard_add(&s->served);
	/* An idle worker has no transaction in hand: the page and the
	 * status show none, not the last one's. */
	publish_item(s, CONFIG_PROVIDER_COUNT, "", 0);
	set_stage(s, METRICS_IDLE);
}

/* The reader's half: a consistent provider and id, or none after a bounded
 * number of tries (the writer changes them twice per request at most). */
static void read_item(const struct scoreboard_slot *s, struct metrics_worker *w)
{
	for (int tries = 0; tries < 64; tries++) {
		unsigned before = scoreboard_read_begin(&s->seq);

		if (before % 2 != 0)
			continue;
		w->provider = atomic_load_explicit(&s->provider,
						   memory_order_relaxed);
		scoreboard_load_words(s->txid, SCOREBOARD_TXID_WORDS, w->transaction_id);
		if (!scoreboard_read_end(&s->seq, before))
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
	const struct scoreboard *seg = m->seg;
	int64_t now = timing_now_us();
	size_t n = 0;
	unsigned total = 0, active = 0;

	for (size_t i = 0; i < SCOREBOARD_WORKERS; i++) {
		const struct scoreboard_slot *s = &seg->slots[i];
		struct metrics_worker w;

		if (!slot_alive(s))
			continue;
		w.pid = atomic_load_explicit(&s->pid, memory_order_relaxed);
		w.stage = atomic_load_explicit(&s->stage, memory_order_acquire);
		if (w.stage >= METRICS_STAGES)
			w.stage = METRICS_IDLE;
		w.served = scoreboard_get(&s->served);
		w.request = scoreboard_get(&s->request);
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
		pool->accepted = scoreboard_get(&seg->accepted);
		pool->max_active = scoreboard_get(&seg->max_active);
		pool->max_children_reached = scoreboard_get(&seg->max_children_reached);
		pool->listen_queue = atomic_load(&seg->listen_queue);
		pool->max_listen_queue = atomic_load(&seg->max_listen_queue);
		pool->listen_queue_len = atomic_load(&seg->listen_queue_len);
		pool->slow_requests = scoreboard_get(&seg->slow_requests);
		pool->terminated_requests = scoreboard_get(&seg->terminated_requests);
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
	struct scoreboard *seg;
	unsigned long long seen;

	if (m == NULL)
		return;
	seg = m->seg;
	seen = scoreboard_get(&seg->max_active);
	while (active > seen &&
	       !atomic_compare_exchange_weak(&seg->max_active, &seen, active))
		;
	if (active > 0 && active >= atomic_load(&seg->workers_configured))
		scoreboard_add(&seg->max_children_reached);
	atomic_store(&seg->listen_queue, queue);
	atomic_store(&seg->listen_queue_len, backlog);
	raise_max(&seg->max_listen_queue, queue);
}

/* Marks pid's request in the slot field at offset mark (once: true the
 * first time) and counts it in *counter. */
static bool mark_once(struct metrics *m, pid_t pid, unsigned long long request,
		      size_t mark, atomic_ullong *counter)
{
	for (size_t i = 0; i < SCOREBOARD_WORKERS; i++) {
		struct scoreboard_slot *s = &m->seg->slots[i];
		atomic_ullong *field = (atomic_ullong *)((char *)s + mark);
		unsigned long long marked;

		if (atomic_load(&s->pid) != (int)pid)
			continue;
		marked = atomic_load(field);
		if (marked >= request ||
		    !atomic_compare_exchange_strong(field, &marked, request))
			return false;
		scoreboard_add(counter);
		return true;
	}
	return false;
}

bool metrics_slow_seen(struct metrics *m, pid_t pid, unsigned long long request)
{
	return m != NULL && mark_once(m, pid, request,
				      offsetof(struct scoreboard_slot, slow_logged),
				      &m->seg->slow_requests);
}

bool metrics_terminated_seen(struct metrics *m, pid_t pid,
			     unsigned long long request)
{
	return m != NULL && mark_once(m, pid, request,
				      offsetof(struct scoreboard_slot, terminated),
				      &m->seg->terminated_requests);
}

/* Writes r into the next entry of ring (METRICS_FAILURES entries, next
 * its counter). */
static void ring_push(atomic_ullong *next, struct scoreboard_failure *ring,
		      unsigned provider, const struct result *r)
{
	struct scoreboard_failure *f = &ring[atomic_fetch_add(next, 1) % METRICS_FAILURES];

	scoreboard_write_begin(&f->seq);
	atomic_store_explicit(&f->time, (long long)time(NULL),
			      memory_order_relaxed);
	atomic_store_explicit(&f->provider, provider, memory_order_relaxed);
	atomic_store_explicit(&f->outcome, (unsigned)r->outcome,
			      memory_order_relaxed);
	scoreboard_store_words(f->txid, SCOREBOARD_TXID_WORDS, r->transaction_id,
		    strlen(r->transaction_id));
	scoreboard_store_words(f->reason, SCOREBOARD_REASON_WORDS, r->reason, strlen(r->reason));
	scoreboard_write_end(&f->seq);
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
static bool read_failure(const struct scoreboard_failure *f, struct metrics_failure *out)
{
	for (int tries = 0; tries < 64; tries++) {
		unsigned before = scoreboard_read_begin(&f->seq);

		if (before == 0)
			return false;
		if (before % 2 != 0)
			continue;
		out->time = atomic_load_explicit(&f->time, memory_order_relaxed);
		out->provider = atomic_load_explicit(&f->provider,
						     memory_order_relaxed);
		out->outcome = (enum outcome)atomic_load_explicit(
			&f->outcome, memory_order_relaxed);
		scoreboard_load_words(f->txid, SCOREBOARD_TXID_WORDS, out->transaction_id);
		scoreboard_load_words(f->reason, SCOREBOARD_REASON_WORDS, out->reason);
		if (!scoreboard_read_end(&f->seq, before))
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
static size_t read_ring(unsigned long long next, const struct scoreboard_failure *ring,
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
	const struct scoreboard *seg = m->seg;
	long long now = (long long)time(NULL) / 60;
	unsigned long long next = scoreboard_get(&seg->failures_next);

	memset(hour, 0, sizeof(*hour));
	for (int i = 0; i < METRICS_MINUTES; i++) {
		long long minute = now - (METRICS_MINUTES - 1) + i;
		const struct scoreboard_minute *b = &seg->minutes[minute % METRICS_MINUTES];

		if (atomic_load(&b->stamp) != minute)
			continue;
		for (unsigned p = 0; p < SCOREBOARD_PROVIDERS; p++)
			for (unsigned k = 0; k < METRICS_KINDS; k++)
				hour->counts[p][i][k] = scoreboard_get(&b->counts[p][k]);
	}
	return read_ring(next, seg->failures, failures);
}

size_t metrics_read_refusals(const struct metrics *m,
			     struct metrics_failure *refusals)
{
	return read_ring(scoreboard_get(&m->seg->refusals_next), m->seg->refusals,
			 refusals);
}

int64_t metrics_bucket_us(size_t b)
{
	return scoreboard_bucket_us(b);
}

unsigned metrics_mysql_code(size_t i)
{
	return i < SCOREBOARD_MYSQL_CODES ? mysql_codes[i] : 0;
}

const char *metrics_redis_fault_name(enum metrics_redis_fault fault)
{
	return (unsigned)fault < METRICS_REDIS_FAULTS ? redis_fault_names[fault]
						      : "?";
}

/* A histogram's atomics into out. */
static void read_histogram(const atomic_ullong *buckets,
			   const atomic_ullong *count,
			   const atomic_ullong *sum_us,
			   struct metrics_histogram *out)
{
	for (size_t b = 0; b < METRICS_BUCKETS; b++)
		out->buckets[b] = scoreboard_get(&buckets[b]);
	out->count = scoreboard_get(count);
	out->sum_us = scoreboard_get(sum_us);
}

void metrics_read_counters(const struct metrics *m,
			   struct metrics_counters *out)
{
	const struct scoreboard *seg = m->seg;

	for (unsigned p = 0; p < SCOREBOARD_PROVIDERS; p++) {
		for (unsigned oc = 0; oc < OUTCOME_COUNT; oc++) {
			out->requests[p][oc] = scoreboard_get(&seg->requests[p][oc]);
			for (unsigned k = 0; k < LIFECYCLE_KINDS; k++)
				out->lifecycle[p][k][oc] =
					scoreboard_get(&seg->lifecycle[p][k][oc]);
		}
		for (unsigned u = 0; u < 2; u++)
			for (unsigned r = 0; r < METRICS_INBOX_RESULTS; r++)
				out->inbox[p][u][r] = scoreboard_get(&seg->inbox[p][u][r]);
		out->inbox_replayed[p] = scoreboard_get(&seg->inbox_replayed[p]);
	}
	read_histogram(seg->duration_buckets, &seg->duration_count,
		       &seg->duration_sum_us, &out->duration);
	for (size_t i = 0; i <= METRICS_MYSQL_CODES; i++)
		out->mysql_errors[i] = scoreboard_get(&seg->mysql_errors[i]);
	for (size_t i = 0; i < METRICS_REDIS_FAULTS; i++)
		out->redis_errors[i] = scoreboard_get(&seg->redis_errors[i]);
	out->lost_leases = scoreboard_get(&seg->lost_leases);
	out->suspicious_refunds = scoreboard_get(&seg->suspicious_refunds);
	out->workers_alive = workers_alive(seg);
	out->worker_restarts = scoreboard_get(&seg->worker_restarts);
	out->reloads = scoreboard_get(&seg->reloads);
	out->reloads_refused = scoreboard_get(&seg->reloads_refused);
}
