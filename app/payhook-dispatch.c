/* payhook-dispatch.c - hands every payment payhook recorded on to the
 * merchant's fulfilment, at least once, with an idempotency key that is the
 * same on every attempt: claims due payments from the payments table under a
 * lease, delivers each (lib/handoff.h), records the result fenced by the
 * claim's token (lib/handoff_store.h), and retries with back-off until delivered
 * or dead. Also the operators' --check-config, --list-dead and --requeue.
 *
 * Signals: SIGTERM and SIGINT finish the attempt in hand, give back the
 * claims not yet attempted and exit 0; SIGHUP reopens log_file. They stay
 * blocked except while the process waits (ppoll), so no database or HTTP
 * call is ever interrupted half-way, and a stop is noticed between attempts.
 * With dispatch_concurrency N > 1 a master keeps N forked dispatchers
 * running with the pool manager (lib/pool.h): it restarts one that dies,
 * passes SIGHUP on, and stops them on SIGTERM, SIGINT or SIGQUIT (SIGKILL
 * for one still busy a lease after).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYS_RANDOM_H
#include <sys/random.h>
#endif

#include "configuration.h"
#include "handoff_store.h"
#include "handoff.h"
#include "log.h"
#include "number.h"
#include "pool.h"
#include "sqlconn.h"
#include "timing.h"

#define PROGRAM "payhook-dispatch"
#define EXIT_USAGE 2
/* Waits after a failed claim: doubling from the first to the last, so a
 * database that is back is used again within DB_RETRY_MAX_MS. */
#define DB_RETRY_MIN_MS 100L
#define DB_RETRY_MAX_MS 2000L
/* While the database keeps failing, one warning per this many ms. */
#define DB_WARN_EVERY_MS 30000L
/* Waits between tries to record an attempt's result (within its lease). */
#define RECORD_RETRY_MIN_MS 100L
#define RECORD_RETRY_MAX_MS 1000L

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t reopen_log;
/* The signal mask while waiting: the stop and reload signals let through. */
static sigset_t wait_mask;

static void on_stop_signal(int signo)
{
	stop_requested = 1;
	stop_signal = signo;
}

static void on_hangup(int signo)
{
	(void)signo;
	reopen_log = 1;
}

/* A handler (not SIG_DFL, which discards it), so that SIGCHLD (a
 * dispatch_command's end) ends a wait. */
static void on_child(int signo)
{
	(void)signo;
}

/* Installs the handlers and blocks the signals they serve; wait_mask is the
 * mask that lets them through. Returns 0, or -1 with errno set. */
static int install_signals(void)
{
	const int handled[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD };
	struct sigaction sa;
	sigset_t block;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	/* A target that went away, a command that does not read its input. */
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) != 0)
		return -1;
	sa.sa_handler = on_stop_signal;
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
		return -1;
	sa.sa_handler = on_hangup;
	if (sigaction(SIGHUP, &sa, NULL) != 0)
		return -1;
	sa.sa_handler = on_child;
	if (sigaction(SIGCHLD, &sa, NULL) != 0)
		return -1;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaddset(&block, handled[i]);
	if (sigprocmask(SIG_BLOCK, &block, &wait_mask) != 0)
		return -1;
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigdelset(&wait_mask, handled[i]);
	return 0;
}

/* Waits ms milliseconds (-1: until a signal), or less when a signal comes.
 * Signals pending since the last wait are handled at once. */
static void wait_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	if (ppoll(NULL, 0, ms < 0 ? NULL : &ts, &wait_mask) < 0 &&
	    errno != EINTR) {
		/* Nothing to do: the caller's loop looks at the flags. */
	}
}

/* Runs the handlers of signals that came while they were blocked. */
static void take_signals(void)
{
	wait_ms(0);
}

static void reopen_log_file(const struct config *cfg)
{
	struct error err;

	reopen_log = 0;
	if (cfg->log_file != NULL && log_open_file(cfg->log_file, &err) != 0)
		log_error("%s", err.message);
}

/* 64 random bits from the OS for the back-off's jitter; the clock when the
 * OS has none to give (the jitter spreads retries, it guards no secret). */
static uint64_t random_u64(void)
{
	uint64_t value = 0;

#ifdef HAVE_GETRANDOM
	if (getrandom(&value, sizeof(value), GRND_NONBLOCK) ==
	    (ssize_t)sizeof(value))
		return value;
#endif
	return (uint64_t)timing_now_us() * 6364136223846793005ULL +
	       (uint64_t)getpid();
}

/* Writes the UTC wall-clock time ms from now as RFC 3339 into buf. */
static void utc_in(long ms, char *buf, size_t cap)
{
	struct timespec now;
	struct tm tm;
	time_t secs;
	long msec;

	clock_gettime(CLOCK_REALTIME, &now);
	msec = now.tv_nsec / 1000000L + ms % 1000;
	secs = now.tv_sec + ms / 1000 + msec / 1000;
	msec %= 1000;
	if (gmtime_r(&secs, &tm) == NULL ||
	    strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(buf, cap, "?");
		return;
	}
	snprintf(buf + strlen(buf), cap - strlen(buf), ".%03ldZ", msec);
}

/* ---- the dispatcher ---- */

struct dispatcher {
	const struct config *cfg;
	struct handoff_store *db;
	struct handoff *handoff;
	bool command;                  /* dispatch_command, else dispatch_url */
	unsigned long long delivered, retried, dead, superseded, unrecorded;
};

enum result_kind { RESULT_DELIVERED, RESULT_RETRY, RESULT_DEAD };

/* Records an attempt's result, trying again while the claim's lease lasts:
 * the writes are fenced and idempotent, so a late try is harmless, and the
 * lease's end is when another dispatcher may take the payment anyway. */
static enum handoff_store_status record_result(
	struct dispatcher *w, const struct handoff_store_batch *batch,
	const struct handoff_store_payment *p, enum result_kind kind,
	const char *detail, long delay_ms)
{
	long pause = RECORD_RETRY_MIN_MS;
	struct error err = { "" };

	for (;;) {
		enum handoff_store_status st;
		int64_t left_ms;

		if (kind == RESULT_DELIVERED)
			st = handoff_store_record_delivered(w->db, p, &err);
		else if (kind == RESULT_RETRY)
			st = handoff_store_record_retry(w->db, p, detail,
							delay_ms, &err);
		else
			st = handoff_store_record_dead(w->db, p, detail, &err);
		if (st != HANDOFF_STORE_FAILED)
			return st;
		left_ms = (batch->lease_end_us - timing_now_us()) / 1000;
		if (left_ms <= pause) {
			log_error("recording the attempt of provider=%s "
				  "transaction_id=%s failed: %s; giving up as "
				  "its lease ends", p->provider,
				  p->transaction_id, err.message);
			return HANDOFF_STORE_FAILED;
		}
		log_warn("recording the attempt of provider=%s transaction_id=%s "
			 "failed: %s; trying again in %ld ms", p->provider,
			 p->transaction_id, err.message, pause);
		wait_ms(pause);
		pause = pause * 2 < RECORD_RETRY_MAX_MS ? pause * 2
							: RECORD_RETRY_MAX_MS;
	}
}

/* "status=200", "status=-", "exit_status=3", "signal=9". */
static void answer_text(const struct dispatcher *w,
			const struct handoff_outcome *out, char *buf,
			size_t cap)
{
	if (!w->command) {
		if (out->http_status > 0)
			snprintf(buf, cap, "status=%ld", out->http_status);
		else
			snprintf(buf, cap, "status=-");
	} else if (out->exit_status >= 0) {
		snprintf(buf, cap, "exit_status=%d", out->exit_status);
	} else if (out->term_signal > 0) {
		snprintf(buf, cap, "exit_status=- signal=%d", out->term_signal);
	} else {
		snprintf(buf, cap, "exit_status=-");
	}
}

/* One attempt at p and its one log line. */
static void attempt(struct dispatcher *w, const struct handoff_store_batch *batch,
		    struct handoff_store_payment *p)
{
	const struct config *cfg = w->cfg;
	struct handoff_payment hp = {
		.provider = p->provider,
		.transaction_id = p->transaction_id,
		.transaction_id_len = p->transaction_id_len,
		.event_id = p->event_id,
		.event_id_len = p->event_id_len,
		.amount = p->amount,
		.currency = p->currency,
		.received_at = p->received_at,
		.payload = p->payload,
		.payload_len = p->payload_len,
	};
	struct handoff_outcome out;
	struct error err = { "" };
	enum result_kind kind;
	enum handoff_store_status st;
	long delay_ms = 0;
	long long elapsed_ms;
	int64_t started = timing_now_us();
	char answer[48], retry_at[40];

	p->attempted = true;
	/* A failure to even try (out of memory, no process, a payment that
	 * cannot be expressed) counts as a failed attempt; out.detail says
	 * why, and out.permanent whether retrying can help. */
	if (handoff_deliver(w->handoff, &hp, &out, &err) != 0)
		out.delivered = false;
	elapsed_ms = (long long)((timing_now_us() - started) / 1000);
	if (out.delivered) {
		kind = RESULT_DELIVERED;
	} else if (out.permanent ||
		   p->attempts >= (unsigned long)cfg->dispatch_max_attempts) {
		kind = RESULT_DEAD;
	} else {
		kind = RESULT_RETRY;
		delay_ms = handoff_store_backoff_ms(cfg, p->attempts,
						    random_u64());
	}
	st = record_result(w, batch, p, kind, out.detail, delay_ms);
	answer_text(w, &out, answer, sizeof(answer));

	if (st == HANDOFF_STORE_SUPERSEDED) {
		w->superseded++;
		log_warn("outcome=superseded provider=%s transaction_id=%s "
			 "attempt=%lu %s elapsed_ms=%lld: a newer claim took "
			 "this payment while the attempt ran, so its late "
			 "result (%s) changed nothing", p->provider,
			 p->transaction_id, p->attempts, answer, elapsed_ms,
			 kind == RESULT_DELIVERED ? "delivered" : "failed");
	} else if (st == HANDOFF_STORE_FAILED) {
		w->unrecorded++;
		log_error("outcome=unrecorded provider=%s transaction_id=%s "
			  "attempt=%lu %s elapsed_ms=%lld detail=\"%s\": the "
			  "result (%s) is not recorded; the payment comes due "
			  "again when its lease ends", p->provider,
			  p->transaction_id, p->attempts, answer, elapsed_ms,
			  out.detail,
			  kind == RESULT_DELIVERED ? "delivered" : "failed");
	} else if (kind == RESULT_DELIVERED) {
		w->delivered++;
		log_info("outcome=delivered provider=%s transaction_id=%s "
			 "attempt=%lu %s elapsed_ms=%lld", p->provider,
			 p->transaction_id, p->attempts, answer, elapsed_ms);
	} else if (kind == RESULT_RETRY) {
		w->retried++;
		utc_in(delay_ms, retry_at, sizeof(retry_at));
		log_warn("outcome=retry retry_at=%s delay_ms=%ld provider=%s "
			 "transaction_id=%s attempt=%lu %s elapsed_ms=%lld "
			 "detail=\"%s\"", retry_at, delay_ms, p->provider,
			 p->transaction_id, p->attempts, answer, elapsed_ms,
			 out.detail);
	} else {
		w->dead++;
		log_error("outcome=dead provider=%s transaction_id=%s "
			  "attempt=%lu %s elapsed_ms=%lld detail=\"%s\": %s; "
			  "payhook-dispatch --requeue %llu hands it on again",
			  p->provider, p->transaction_id, p->attempts, answer,
			  elapsed_ms, out.detail,
			  out.permanent ? "it can never be handed on as it is"
					: "no attempts left",
			  p->id);
	}
}

/* Delivers a batch in order while its lease leaves room for a whole
 * attempt and no stop was asked for; gives back the rest. */
static void deliver_batch(struct dispatcher *w, struct handoff_store_batch *batch)
{
	const struct config *cfg = w->cfg;
	size_t i, released = 0;
	const char *why = NULL;
	struct error err = { "" };

	for (i = 0; i < batch->count; i++) {
		int64_t left_ms;

		take_signals();
		if (stop_requested) {
			why = "stopping";
			break;
		}
		if (reopen_log)
			reopen_log_file(cfg);
		/* An attempt that could outlive the lease might run while
		 * another dispatcher delivers the same payment. */
		left_ms = (batch->lease_end_us - timing_now_us()) / 1000;
		if (left_ms <=
		    cfg->dispatch_timeout_ms + HANDOFF_STORE_LEASE_MARGIN_MS) {
			why = "the lease has too little left for an attempt";
			break;
		}
		attempt(w, batch, &batch->items[i]);
	}
	if (i == batch->count)
		return;
	for (size_t k = i; k < batch->count; k++) {
		enum handoff_store_status st;

		st = handoff_store_release(w->db, &batch->items[k], &err);
		if (st == HANDOFF_STORE_FAILED) {
			log_warn("giving back %zu claimed payments failed: %s; "
				 "they come due again when their lease ends",
				 batch->count - k, err.message);
			break;
		}
		if (st == HANDOFF_STORE_OK)
			released++;
	}
	log_info("gave back %zu of %zu claimed payments not attempted (%s)",
		 released, batch->count - i, why);
}

/* The dispatcher's loop, until SIGTERM or SIGINT; once started it tells
 * its pool on ready_fd (-1: none). Returns the exit status. */
static int run_dispatcher(const struct config *cfg, int ready_fd)
{
	struct dispatcher w = { .cfg = cfg };
	struct error err = { "" };
	long retry_ms = 0;
	int64_t last_warn_us = 0;

	w.command = cfg->dispatch_url == NULL || cfg->dispatch_url[0] == '\0';
	w.db = handoff_store_new(cfg, &err);
	if (w.db != NULL)
		w.handoff = handoff_new(cfg, &err);
	if (w.db == NULL || w.handoff == NULL) {
		log_error("%s", err.message);
		handoff_store_free(w.db);
		if (ready_fd >= 0)
			close(ready_fd);
		return 1;
	}
	pool_child_ready(ready_fd);
	log_info("dispatcher started: %s, batch %d, lease %ld ms, attempt "
		 "timeout %ld ms, %d attempts", w.command ? "command" :
		 cfg->dispatch_secret.count > 0 ? "signed HTTP POST" : "HTTP POST",
		 cfg->dispatch_batch_size, cfg->dispatch_lease_ms,
		 cfg->dispatch_timeout_ms, cfg->dispatch_max_attempts);
	for (;;) {
		struct handoff_store_batch batch;

		take_signals();
		if (stop_requested)
			break;
		if (reopen_log)
			reopen_log_file(cfg);
		if (handoff_store_claim(w.db, (size_t)cfg->dispatch_batch_size,
					&batch, &err) != 0) {
			int64_t now = timing_now_us();

			retry_ms = retry_ms == 0 ? DB_RETRY_MIN_MS
				   : retry_ms * 2 < DB_RETRY_MAX_MS ? retry_ms * 2
								    : DB_RETRY_MAX_MS;
			if (last_warn_us == 0 ||
			    now - last_warn_us >= DB_WARN_EVERY_MS * 1000) {
				log_warn("claiming due payments failed: %s; "
					 "trying again every %ld ms at most",
					 err.message, DB_RETRY_MAX_MS);
				last_warn_us = now;
			} else {
				log_debug("claiming due payments failed: %s",
					  err.message);
			}
			wait_ms(retry_ms);
			continue;
		}
		if (retry_ms != 0) {
			log_info("claiming due payments works again");
			retry_ms = 0;
			last_warn_us = 0;
		}
		if (batch.count == 0) {
			wait_ms(cfg->dispatch_poll_ms);
			continue;
		}
		deliver_batch(&w, &batch);
		handoff_store_batch_cleanup(&batch);
	}
	log_info("dispatcher exits on signal %d: %llu delivered, %llu to retry, "
		 "%llu dead, %llu superseded, %llu unrecorded",
		 (int)stop_signal, w.delivered, w.retried, w.dead, w.superseded,
		 w.unrecorded);
	handoff_free(w.handoff);
	handoff_store_free(w.db);
	return 0;
}

/* ---- dispatch_concurrency > 1: a master and its dispatchers ---- */

struct master {
	const struct config *cfg;
	struct pool *pool;
};

/* A dispatcher's entry (see pool.h): its signal handlers, then the
 * dispatcher's loop. Never returns. */
static void dispatcher_entry(void *ctx, bool replacement, int ready_fd)
{
	const struct config *cfg = ((struct master *)ctx)->cfg;

	(void)replacement;
	if (install_signals() != 0) {
		log_error("cannot set up signal handling: %s", strerror(errno));
		exit(1);
	}
	exit(run_dispatcher(cfg, ready_fd));
}

/* SIGHUP: the master's log reopened, and each dispatcher's. */
static void master_signal(void *ctx, int signo)
{
	struct master *m = ctx;

	if (signo != SIGHUP)
		return;
	reopen_log_file(m->cfg);
	pool_signal(m->pool, SIGHUP);
}

/* Keeps cfg->dispatch_concurrency dispatchers running with the pool
 * manager until SIGTERM, SIGINT or SIGQUIT, then stops them and waits.
 * Returns the exit status: 1 when a dispatcher did not stop cleanly. */
static int run_master(const struct config *cfg)
{
	struct pool_config pc = {
		.noun = "dispatcher",
		.count = (unsigned)cfg->dispatch_concurrency,
		.title = PROGRAM ": master",
		.child_title = PROGRAM ": dispatcher",
		/* An attempt in hand ends within its lease. */
		.stop_timeout_ms = cfg->dispatch_lease_ms + 5000,
		.ready_timeout_ms = 10000,
		.entry = dispatcher_entry,
		.on_signal = master_signal,
	};
	struct master m = { .cfg = cfg };
	struct error err = { "" };
	unsigned unclean = 0;
	int rc;

	pc.ctx = &m;
	m.pool = pool_new(&pc, &err);
	if (m.pool == NULL) {
		log_error("%s", err.message);
		return 1;
	}
	log_info("master started: %u dispatchers", pc.count);
	rc = pool_run(m.pool, &unclean, &err);
	if (rc != 0)
		log_error("%s", err.message);
	pool_free(m.pool);
	log_info("master exits: every dispatcher stopped%s",
		 unclean > 0 ? ", not every one cleanly" : "");
	return rc != 0 || unclean > 0 ? 1 : 0;
}

/* ---- the operators' commands ---- */

/* Prints text with anything but visible ASCII and space as '?': ids and
 * errors go to a terminal. */
static void print_clean(const char *text)
{
	for (const char *c = text; *c != '\0'; c++)
		putchar((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f ? *c
									 : '?');
}

static int print_dead(void *ctx, const struct handoff_store_dead *row)
{
	unsigned long long *count = ctx;

	printf("%llu\t", row->id);
	print_clean(row->provider);
	putchar('\t');
	print_clean(row->transaction_id);
	printf("\t%lu\t", row->attempts);
	print_clean(row->last_error);
	putchar('\n');
	(*count)++;
	return 0;
}

static int list_dead(const struct config *cfg)
{
	struct error err = { "" };
	struct handoff_store *db = handoff_store_new(cfg, &err);
	unsigned long long count = 0;
	int rc = 0;

	if (db == NULL) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return 1;
	}
	printf("id\tprovider\ttransaction_id\tattempts\tlast_error\n");
	if (handoff_store_list_dead(db, print_dead, &count, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = 1;
	} else {
		fprintf(stderr, PROGRAM ": %llu dead payment%s\n", count,
			count == 1 ? "" : "s");
	}
	if (fflush(stdout) != 0)
		rc = 1;
	handoff_store_free(db);
	return rc;
}

static int requeue(const struct config *cfg, char **args, size_t count)
{
	struct error err = { "" };
	struct handoff_store *db;
	unsigned long long *ids, changed = 0;
	int rc = 0;

	if (count == 0) {
		fprintf(stderr, PROGRAM ": --requeue needs the ids of the "
				"payments (--list-dead shows them)\n");
		return EXIT_USAGE;
	}
	ids = calloc(count, sizeof(*ids));
	if (ids == NULL) {
		fprintf(stderr, PROGRAM ": out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < count; i++) {
		uint64_t id;

		if (number_parse(args[i], UINT64_MAX, &id) != NUMBER_OK ||
		    id == 0) {
			fprintf(stderr, PROGRAM ": not a payment id: ");
			for (const char *c = args[i]; *c != '\0' && c - args[i] < 40; c++)
				fputc((unsigned char)*c >= 0x20 &&
					      (unsigned char)*c < 0x7f ? *c : '?',
				      stderr);
			fputc('\n', stderr);
			free(ids);
			return EXIT_USAGE;
		}
		ids[i] = id;
	}
	db = handoff_store_new(cfg, &err);
	if (db == NULL ||
	    handoff_store_requeue(db, ids, count, &changed, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = 1;
	} else {
		printf("requeued %llu of %zu payment%s%s\n", changed, count,
		       count == 1 ? "" : "s",
		       changed < count ? " (the others are not dead or "
					 "skipped, or do not exist)" : "");
	}
	handoff_store_free(db);
	free(ids);
	return rc;
}

/* --check-config: one line per check; 0 when all pass. */
static int check_config(const struct config *cfg, const char *path)
{
	struct error err = { "" };
	struct handoff_store *db;
	int rc = 0;

	printf("config: ok (%s)\n",
	       path != NULL ? path : "defaults and environment");
	if (handoff_check_config(cfg, &err) != 0) {
		printf("target: FAILED: %s\n", err.message);
		rc = 1;
	} else if (cfg->dispatch_url != NULL && cfg->dispatch_url[0] != '\0') {
		printf("target: ok (HTTP POST%s)\n", cfg->dispatch_secret.count > 0
							     ? ", signed with dispatch_secret"
							     : ", unsigned");
	} else {
		printf("target: ok (command run by /bin/sh -c)\n");
	}
	if (handoff_store_check_config(cfg, &err) != 0) {
		printf("lease: FAILED: %s\n", err.message);
		rc = 1;
	} else {
		printf("lease: ok (dispatch_lease_ms = %ld)\n",
		       cfg->dispatch_lease_ms);
	}
	/* A node that is down is a warning (the dispatcher moves on to the
	 * next); the schema check below fails when none takes writes. */
	sqlconn_report_nodes(cfg, stdout);
	db = handoff_store_new(cfg, &err);
	if (db == NULL || handoff_store_check_schema(db, &err) != 0) {
		printf("mysql: FAILED: %s\n", err.message);
		rc = 1;
	} else {
		printf("mysql: ok (%s, table payments with the dispatch columns "
		       "and ix_payments_dispatch_due)\n", sqlconn_where(cfg));
	}
	handoff_store_free(db);
	return rc;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: " PROGRAM " [-c FILE]\n"
		"       " PROGRAM " --check-config [-c FILE]\n"
		"       " PROGRAM " --list-dead [-c FILE]\n"
		"       " PROGRAM " --requeue [-c FILE] ID...\n"
		"       " PROGRAM " --version | --help\n"
		"\n"
		"Hands every payment payhook recorded on to dispatch_url (HTTP\n"
		"POST) or dispatch_command, at least once, with the header\n"
		"Idempotency-Key: payhook:<provider>:<transaction_id> (the same on\n"
		"every attempt), retrying with back-off until delivered or dead.\n"
		"Runs until SIGTERM. The configuration file comes from -c, else\n"
		"$PAYHOOK_CONFIG; every key can be overridden by PAYHOOK_<KEY>.\n"
		"\n"
		"  --check-config  check the configuration, MySQL and the schema\n"
		"  --list-dead     print the dead payments (id, provider,\n"
		"                  transaction_id, attempts, last error)\n"
		"  --requeue ID... put dead or skipped payments back to pending,\n"
		"                  due now, attempts 0\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "list-dead", no_argument, NULL, 'L' },
		{ "requeue", no_argument, NULL, 'R' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	int mode = 0, opt, rc;
	struct config cfg;
	struct error err = { "" };

	while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'C':
		case 'L':
		case 'R':
			if (mode != 0 && mode != opt) {
				fprintf(stderr, PROGRAM ": --check-config, "
						"--list-dead and --requeue "
						"exclude each other\n");
				return EXIT_USAGE;
			}
			mode = opt;
			break;
		case 'V':
			printf(PROGRAM " %s\n", PACKAGE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc && mode != 'R') {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (path == NULL)
		path = config_default_path();
	if (config_load_dispatcher(&cfg, path, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return 1;
	}
	log_init(PROGRAM, cfg.log_level);
	if (cfg.log_file != NULL && log_open_file(cfg.log_file, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		config_cleanup(&cfg);
		return 1;
	}
	if (mode == 'C') {
		rc = check_config(&cfg, path);
		goto out;
	}
	if (mode == 'L') {
		rc = list_dead(&cfg);
		goto out;
	}
	if (mode == 'R') {
		rc = requeue(&cfg, argv + optind, (size_t)(argc - optind));
		goto out;
	}
	if (handoff_check_config(&cfg, &err) != 0 ||
	    handoff_store_check_config(&cfg, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = 1;
		goto out;
	}
	if (handoff_global_init(&err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = 1;
		goto out;
	}
	if (cfg.dispatch_concurrency > 1) {
		/* Nothing points into argv's strings any more (the options
		 * are read): they become the process titles. */
		pool_title_init(argc, argv);
		rc = run_master(&cfg);
	} else if (install_signals() != 0) {
		log_error("cannot set up signal handling: %s", strerror(errno));
		rc = 1;
	} else {
		rc = run_dispatcher(&cfg, -1);
	}
	handoff_global_cleanup();
out:
	config_cleanup(&cfg);
	return rc;
}
