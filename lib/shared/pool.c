/* pool.c - the pool manager (see pool.h): slots, spawn, reap, back-off,
 * signals from the signal module's descriptor (signals.h) and every wait as
 * a timer of one poll loop.
 *
 * States, as php-fpm's process control has them: NORMAL; RELOADING while a
 * new generation starts beside the old one; FINISHING once a stop sent
 * SIGTERM to every child; TERMINATING once the stop's time ran out and
 * SIGKILL went out. The loop ends when a stop has no child left.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "log.h"
#include "pool.h"
#include "signals.h"
#include "timing.h"

#define RESPAWN_MIN_MS 100
#define RESPAWN_MAX_MS 30000
#define RETIRING_MAX (2 * POOL_MAX)
/* An alert's helper: the sender's own time bound (ALERT_TIMEOUT_MS of
 * alert.h) and a margin for its start-up. */
#define ALERT_HELPER_MS 10000

enum pool_state { POOL_NORMAL, POOL_RELOADING, POOL_FINISHING,
		  POOL_TERMINATING };

struct child {
	pid_t pid;          /* 0: none */
	int ready_fd;       /* the pipe's read end until ready; -1 */
	bool ready;         /* said so on the pipe */
	int64_t started_ms;
};

struct slot {
	struct child cur;   /* the child serving; pid 0: to be started */
	struct child next;  /* a replacement not yet ready */
	long backoff_ms;
	unsigned quick_exits; /* ended before POOL_STABLE_MS, in a row */
	int64_t respawn_at_ms;
};

struct helper {
	pid_t pid;          /* 0: a free entry */
	int64_t deadline_ms;
	void (*done)(void *ctx, bool ok); /* NULL: the pool logs the end */
	char what[32];      /* what it does, for that log line */
};

/* Helpers at once: an upgrade's check and a few alerts. */
#define HELPER_MAX 4

struct pool {
	struct pool_config cfg;
	enum pool_state state;
	pid_t self;
	int64_t ready_deadline_ms; /* RELOADING: the replacements' time */
	int64_t kill_at_ms;        /* FINISHING: when SIGKILL goes out */
	int64_t tick_at_ms;        /* the next on_tick; INT64_MAX: none */
	unsigned unclean;
	struct helper helpers[HELPER_MAX];
	/* A crash loop under way (pool.h): since when, and the quick exits
	 * after the one that began it. */
	bool crash_loop;
	int64_t crash_loop_ms;
	unsigned long long crash_loop_exits;
	struct slot *slots;
	pid_t retiring[RETIRING_MAX]; /* asked to leave, not yet reaped */
	size_t retiring_count;
};

static int64_t now_ms(void)
{
	return timing_now_us() / 1000;
}

static void child_clear(struct child *c)
{
	if (c->ready_fd >= 0)
		close(c->ready_fd);
	c->pid = 0;
	c->ready_fd = -1;
	c->ready = false;
	c->started_ms = 0;
}

struct pool *pool_new(const struct pool_config *cfg, struct error *err)
{
	static const int served[] = { SIGCHLD, SIGHUP, SIGTERM, SIGINT,
				      SIGQUIT, SIGUSR2, 0 };
	struct pool *pool;

	if (cfg->count == 0 || cfg->count > POOL_MAX || cfg->entry == NULL) {
		error_set(err, "pool: %u %ss: expected 1 to %d", cfg->count,
			  cfg->noun, POOL_MAX);
		return NULL;
	}
	pool = calloc(1, sizeof(*pool));
	if (pool != NULL)
		pool->slots = calloc(cfg->count, sizeof(*pool->slots));
	if (pool == NULL || pool->slots == NULL) {
		free(pool);
		error_set(err, "pool: out of memory");
		return NULL;
	}
	pool->cfg = *cfg;
	pool->self = getpid();
	pool->tick_at_ms = cfg->on_tick != NULL && cfg->tick_ms > 0 ?
				   now_ms() + cfg->tick_ms : INT64_MAX;
	for (unsigned i = 0; i < cfg->count; i++) {
		pool->slots[i].cur.ready_fd = -1;
		pool->slots[i].next.ready_fd = -1;
	}
	if (signals_open(served, err) != 0) {
		free(pool->slots);
		free(pool);
		return NULL;
	}
	return pool;
}

void pool_free(struct pool *pool)
{
	if (pool == NULL)
		return;
	/* The signals stay blocked: one that comes now waits for the exit
	 * (or for the next pool), it does not end the process. */
	for (unsigned i = 0; pool->slots != NULL && i < pool->cfg.count; i++) {
		child_clear(&pool->slots[i].cur);
		child_clear(&pool->slots[i].next);
	}
	free(pool->slots);
	free(pool);
}

/* ---- helper processes: an upgrade's check, alerts ---- */

/* Forks argv (argv[0] a path) into a free helper entry, without the pool's
 * signal mask. Returns 0, or -1 with err set (no free entry, no fork). */
static int helper_start(struct pool *pool, char *const argv[], long timeout_ms,
			void (*done)(void *ctx, bool ok), const char *what,
			struct error *err)
{
	struct helper *h = NULL;
	pid_t pid;

	for (size_t i = 0; i < HELPER_MAX && h == NULL; i++)
		if (pool->helpers[i].pid == 0)
			h = &pool->helpers[i];
	if (h == NULL)
		return error_set(err, "%d helper processes already run",
				 HELPER_MAX);
	pid = fork();
	if (pid < 0)
		return error_set(err, "fork: %s", strerror(errno));
	if (pid == 0) {
		sigset_t none;
		int null = open("/dev/null", O_RDONLY);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
#ifdef __linux__
		prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
		/* Descriptor 0 may be the listening socket (spawn-fcgi's):
		 * a helper has no use for it. */
		if (null > 0) {
			dup2(null, 0);
			close(null);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	h->pid = pid;
	h->deadline_ms = now_ms() + timeout_ms;
	h->done = done;
	snprintf(h->what, sizeof(h->what), "%s", what);
	return 0;
}

/* pid, when it is a helper: its end told (done, or the log). Returns
 * whether it was one. */
static bool helper_ended(struct pool *pool, pid_t pid, int status,
			 const char *how)
{
	bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;

	for (size_t i = 0; i < HELPER_MAX; i++) {
		struct helper *h = &pool->helpers[i];
		void (*done)(void *, bool) = h->done;

		if (h->pid != pid)
			continue;
		h->pid = 0;
		if (done != NULL)
			/* Once stopping, nothing it checked is acted on. */
			done(pool->cfg.ctx, ok && pool->state < POOL_FINISHING);
		else if (ok)
			log_info("%s: done", h->what);
		else
			log_warn("%s: failed (%s%s)", h->what, how,
				 !WIFEXITED(status) ? ": killed, or out of time"
				 : WEXITSTATUS(status) == 127
					 ? ": the program could not be run"
					 : "; its reason is logged above");
		return true;
	}
	return false;
}

static void signal_helpers(struct pool *pool, int signo)
{
	for (size_t i = 0; i < HELPER_MAX; i++)
		if (pool->helpers[i].pid > 0)
			kill(pool->helpers[i].pid, signo);
}

int pool_run_helper(struct pool *pool, char *const argv[], long timeout_ms,
		    void (*done)(void *ctx, bool ok), struct error *err)
{
	for (size_t i = 0; i < HELPER_MAX; i++)
		if (pool->helpers[i].pid > 0 && pool->helpers[i].done == done)
			return error_set(err, "%s is already being checked",
					 argv[0]);
	return helper_start(pool, argv, timeout_ms, done, argv[0], err);
}

int pool_send_alert(struct pool *pool, const struct pool_alert *a,
		    const char *sender, const char *from,
		    const char *config_path, struct error *err)
{
	char *argv[16];
	char what[32];
	size_t n = 0;

	argv[n++] = (char *)sender;
	argv[n++] = "--send-alert";
	argv[n++] = "--from";
	argv[n++] = (char *)from;
	if (config_path != NULL) {
		argv[n++] = "-c";
		argv[n++] = (char *)config_path;
	}
	/* The texts are never taken for options. */
	argv[n++] = "--";
	argv[n++] = (char *)a->event;
	argv[n++] = (char *)a->summary;
	argv[n++] = (char *)a->action;
	argv[n++] = (char *)(a->detail != NULL ? a->detail : "");
	argv[n] = NULL;
	snprintf(what, sizeof(what), "alert %s", a->event);
	return helper_start(pool, argv, ALERT_HELPER_MS, NULL, what, err);
}

/* ---- crash loops: children that keep ending soon after they start ---- */

/* Tells the owner of an episode's start or end (once each), and logs it. */
static void crash_loop_tell(struct pool *pool, const struct pool_alert *a)
{
	if (strcmp(a->event, POOL_ALERT_CRASH_LOOP) == 0)
		log_error("crash loop: %s (%s); %s", a->summary, a->detail,
			  a->action);
	else
		log_info("crash loop over: %s", a->summary);
	if (pool->cfg.on_alert != NULL)
		pool->cfg.on_alert(pool->cfg.ctx, a);
}

/* A slot's child ended its POOL_CRASH_LOOP_EXITS-th quick exit in a row:
 * the episode starts (nothing more while it lasts). */
static void crash_loop_begin(struct pool *pool, const struct slot *s,
			     pid_t pid, const char *how, int64_t lived)
{
	const char *noun = pool->cfg.noun;
	char summary[512], action[512], detail[160];
	struct pool_alert a = { POOL_ALERT_CRASH_LOOP, summary, action, detail };

	pool->crash_loop = true;
	pool->crash_loop_ms = now_ms();
	pool->crash_loop_exits = 0;
	snprintf(summary, sizeof(summary),
		 "the %ss of pool %ld keep ending soon after they start (%u in "
		 "a row ended within %d s of their start): the pool restarts "
		 "each only after a back-off, now %ld ms and at most %d s, so "
		 "it runs with fewer %ss meanwhile", noun, (long)pool->self,
		 s->quick_exits, POOL_STABLE_MS / 1000, s->backoff_ms,
		 RESPAWN_MAX_MS / 1000, noun);
	snprintf(detail, sizeof(detail), "%s %ld ended (%s) after %lld ms",
		 noun, (long)pid, how, (long long)lived);
	snprintf(action, sizeof(action),
		 "read why in the log lines the %ss wrote as they ended (a "
		 "configuration they refuse, a backend they cannot reach as "
		 "they start, a crash) and fix that; the pool keeps restarting "
		 "them, and a changed configuration file needs a reload "
		 "(payhook: SIGHUP) or a restart (payhook-dispatch); a %s alert "
		 "follows once every %s has run %d s", noun,
		 POOL_ALERT_RECOVERED, noun, POOL_STABLE_MS / 1000);
	crash_loop_tell(pool, &a);
}

/* During a crash loop: a child that has run POOL_STABLE_MS is past it
 * (its slot's back-off starts again from nothing), and once every slot's
 * child is, the episode ends. */
static void crash_loop_check(struct pool *pool, int64_t now)
{
	char summary[512];
	struct pool_alert a = { POOL_ALERT_RECOVERED, summary,
				"nothing to do now; the log keeps what the "
				"children said as they ended", NULL };
	bool all = true;

	for (unsigned i = 0; i < pool->cfg.count; i++) {
		struct slot *s = &pool->slots[i];

		if (s->cur.pid > 0 && now - s->cur.started_ms >= POOL_STABLE_MS) {
			s->quick_exits = 0;
			s->backoff_ms = 0;
		} else {
			all = false;
		}
	}
	if (!all)
		return;
	pool->crash_loop = false;
	snprintf(summary, sizeof(summary),
		 "every %s of pool %ld has run %d s: the crash loop that began "
		 "%lld s ago is over (%llu more quick exits during it)",
		 pool->cfg.noun, (long)pool->self, POOL_STABLE_MS / 1000,
		 (long long)(now - pool->crash_loop_ms) / 1000,
		 pool->crash_loop_exits);
	crash_loop_tell(pool, &a);
}

/* ---- children ---- */

/* In the child: none of the pool's descriptors, its death ends the child,
 * the signal mask from before the pool, the title; then the entry. */
static void child_enter(struct pool *pool, bool replacement, int ready_fd)
{
	for (unsigned i = 0; i < pool->cfg.count; i++) {
		if (pool->slots[i].cur.ready_fd >= 0)
			close(pool->slots[i].cur.ready_fd);
		if (pool->slots[i].next.ready_fd >= 0)
			close(pool->slots[i].next.ready_fd);
	}
	/* The identity first: changing it clears PR_SET_PDEATHSIG. */
	if (pool->cfg.set_identity &&
	    ((pool->cfg.user_name != NULL ?
		      initgroups(pool->cfg.user_name, pool->cfg.gid) :
		      setgroups(1, &pool->cfg.gid)) != 0 ||
	     setgid(pool->cfg.gid) != 0 || setuid(pool->cfg.uid) != 0)) {
		log_error("%s cannot start: running as %ld:%ld: %s",
			  pool->cfg.noun, (long)pool->cfg.uid,
			  (long)pool->cfg.gid, strerror(errno));
		_exit(1);
	}
#ifdef __linux__
	/* SIGTERM: a worker finishes the request in hand, then leaves. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
	/* The pool may have died before the line above. */
	if (getppid() != pool->self)
		_exit(0);
	pool_set_title(pool->cfg.child_title);
	/* The signals the entry serves are its own to set up. */
	signals_close();
	pool->cfg.entry(pool->cfg.ctx, replacement, ready_fd);
	/* An entry function that returns is a bug. */
	log_error("%s entry returned", pool->cfg.noun);
	_exit(70);
}

/* Forks a child into c. Returns 0, or -1 with err set. */
static int spawn(struct pool *pool, struct child *c, bool replacement,
		 struct error *err)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return error_set(err, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		error_set(err, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		child_enter(pool, replacement, fds[1]);
	}
	close(fds[1]);
	c->pid = pid;
	c->ready_fd = fds[0];
	c->started_ms = now_ms();
	log_debug("%s %ld started", pool->cfg.noun, (long)pid);
	return 0;
}

static void retire(struct pool *pool, pid_t pid)
{
	if (pid <= 0)
		return;
	if (pool->retiring_count < RETIRING_MAX)
		pool->retiring[pool->retiring_count++] = pid;
	kill(pid, SIGTERM);
}

void pool_adopt(struct pool *pool, pid_t pid)
{
	for (unsigned i = 0; i < pool->cfg.count; i++) {
		struct slot *s = &pool->slots[i];

		if (s->cur.pid == 0) {
			s->cur.pid = pid;
			s->cur.started_ms = now_ms();
			return;
		}
	}
	retire(pool, pid);
}

/* Fills every empty slot whose time has come (none while stopping, none
 * whose replacement is on its way). */
static void fill_slots(struct pool *pool)
{
	int64_t now = now_ms();
	struct error err;

	if (pool->state >= POOL_FINISHING)
		return;
	for (unsigned i = 0; i < pool->cfg.count; i++) {
		struct slot *s = &pool->slots[i];

		if (s->cur.pid != 0 || s->next.pid != 0 || s->respawn_at_ms > now)
			continue;
		if (spawn(pool, &s->cur, false, &err) != 0) {
			log_error("starting a %s: %s", pool->cfg.noun,
				  err.message);
			s->respawn_at_ms = now + RESPAWN_MAX_MS;
		}
	}
}

/* Ends a replacement: ok once every slot's new child took over, else every
 * new child not yet ready is retired and the old ones serve on. */
static void replacement_end(struct pool *pool, bool ok)
{
	for (unsigned i = 0; i < pool->cfg.count && !ok; i++) {
		struct slot *s = &pool->slots[i];

		if (s->next.pid != 0) {
			retire(pool, s->next.pid);
			child_clear(&s->next);
		}
	}
	if (pool->state == POOL_RELOADING)
		pool->state = POOL_NORMAL;
	if (pool->cfg.on_replaced != NULL)
		pool->cfg.on_replaced(pool->cfg.ctx, ok);
}

static bool replacement_done(const struct pool *pool)
{
	for (unsigned i = 0; i < pool->cfg.count; i++)
		if (pool->slots[i].next.pid != 0 && !pool->slots[i].next.ready)
			return false;
	return true;
}

int pool_replace(struct pool *pool, struct error *err)
{
	if (pool->state != POOL_NORMAL)
		return error_set(err, "a replacement or a stop is under way");
	pool->state = POOL_RELOADING;
	pool->ready_deadline_ms = now_ms() + pool->cfg.ready_timeout_ms;
	for (unsigned i = 0; i < pool->cfg.count; i++) {
		if (spawn(pool, &pool->slots[i].next, true, err) != 0) {
			/* The ones started are retired; nothing changes. */
			for (unsigned k = 0; k < i; k++) {
				retire(pool, pool->slots[k].next.pid);
				child_clear(&pool->slots[k].next);
			}
			pool->state = POOL_NORMAL;
			return -1;
		}
	}
	return 0;
}

/* A byte (or the end) on a child's readiness pipe. Once every replacement
 * is ready, the whole old generation is retired at once: the pool never
 * serves with two configurations for longer than that. */
static void child_ready(struct pool *pool, struct child *c)
{
	char byte;
	ssize_t n = read(c->ready_fd, &byte, 1);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	close(c->ready_fd);
	c->ready_fd = -1;
	/* The end without a byte: the child is dying; reap() says so. */
	c->ready = n == 1;
	if (pool->state != POOL_RELOADING || !replacement_done(pool))
		return;
	for (unsigned i = 0; i < pool->cfg.count; i++) {
		struct slot *s = &pool->slots[i];

		retire(pool, s->cur.pid);
		s->cur = s->next;
		s->backoff_ms = 0;
		s->quick_exits = 0;
		s->next.pid = 0;
		s->next.ready = false;
	}
	log_info("every %s replaced", pool->cfg.noun);
	replacement_end(pool, true);
}

static bool take_retiring(struct pool *pool, pid_t pid)
{
	for (size_t i = 0; i < pool->retiring_count; i++) {
		if (pool->retiring[i] == pid) {
			pool->retiring[i] = pool->retiring[--pool->retiring_count];
			return true;
		}
	}
	return false;
}

static void describe_exit(int status, char *out, size_t cap)
{
	if (WIFSIGNALED(status))
		snprintf(out, cap, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(out, cap, "exit status %d", WEXITSTATUS(status));
}

/* A slot's serving child ended: started again, after a back-off when it
 * did not live long (a clean exit, --max-requests, at once). */
static void slot_child_ended(struct pool *pool, struct slot *s, pid_t pid,
			     int status, const char *how)
{
	int64_t lived = now_ms() - s->cur.started_ms;
	bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;

	child_clear(&s->cur);
	if (pool->state >= POOL_FINISHING) {
		if (!clean)
			pool->unclean++;
		log_debug("%s %ld left (%s)", pool->cfg.noun, (long)pid, how);
		return;
	}
	if (pool->cfg.on_child_gone != NULL)
		pool->cfg.on_child_gone(pool->cfg.ctx, pid, !clean);
	if (clean || lived >= POOL_STABLE_MS) {
		s->backoff_ms = 0;
		s->quick_exits = 0;
	} else {
		s->backoff_ms = s->backoff_ms == 0 ? RESPAWN_MIN_MS :
			s->backoff_ms * 2 > RESPAWN_MAX_MS ? RESPAWN_MAX_MS :
			s->backoff_ms * 2;
		s->quick_exits++;
	}
	s->respawn_at_ms = now_ms() + s->backoff_ms;
	if (clean)
		log_info("%s %ld ended (%s) after %lld ms: replaced",
			 pool->cfg.noun, (long)pid, how, (long long)lived);
	else if (s->next.pid != 0)
		log_warn("%s %ld ended (%s) after %lld ms: its replacement "
			 "takes over", pool->cfg.noun, (long)pid, how,
			 (long long)lived);
	else
		log_warn("%s %ld ended (%s) after %lld ms: restarted in %ld ms",
			 pool->cfg.noun, (long)pid, how, (long long)lived,
			 s->backoff_ms);
	if (s->quick_exits == 0)
		return;
	if (pool->crash_loop)
		pool->crash_loop_exits++;
	else if (s->quick_exits >= POOL_CRASH_LOOP_EXITS)
		crash_loop_begin(pool, s, pid, how, lived);
}

/* Reaps every child that ended. */
static void reap(struct pool *pool)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		char how[64];
		bool found = false;

		describe_exit(status, how, sizeof(how));
		if (helper_ended(pool, pid, status, how))
			continue;
		if (take_retiring(pool, pid)) {
			if (pool->cfg.on_child_gone != NULL)
				pool->cfg.on_child_gone(pool->cfg.ctx, pid, false);
			log_debug("%s %ld left (%s)", pool->cfg.noun, (long)pid,
				  how);
			continue;
		}
		for (unsigned i = 0; i < pool->cfg.count && !found; i++) {
			struct slot *s = &pool->slots[i];

			if (s->cur.pid == pid) {
				slot_child_ended(pool, s, pid, status, how);
				found = true;
			} else if (s->next.pid == pid) {
				child_clear(&s->next);
				found = true;
				if (pool->state >= POOL_FINISHING)
					continue;
				if (pool->cfg.on_child_gone != NULL)
					pool->cfg.on_child_gone(pool->cfg.ctx,
								pid, false);
				log_error("replacing the %ss refused: the new %s "
					  "%ld ended before it was ready (%s); "
					  "the %u %ss keep serving as they were",
					  pool->cfg.noun, pool->cfg.noun,
					  (long)pid, how, pool->cfg.count,
					  pool->cfg.noun);
				replacement_end(pool, false);
			}
		}
	}
}

void pool_set_stop_timeout(struct pool *pool, long ms)
{
	pool->cfg.stop_timeout_ms = ms;
}

void pool_signal(struct pool *pool, int signo)
{
	for (unsigned i = 0; i < pool->cfg.count; i++) {
		if (pool->slots[i].cur.pid > 0)
			kill(pool->slots[i].cur.pid, signo);
		if (pool->slots[i].next.pid > 0)
			kill(pool->slots[i].next.pid, signo);
	}
	for (size_t i = 0; i < pool->retiring_count; i++)
		kill(pool->retiring[i], signo);
}

static bool any_child(const struct pool *pool)
{
	if (pool->retiring_count > 0)
		return true;
	for (size_t i = 0; i < HELPER_MAX; i++)
		if (pool->helpers[i].pid > 0)
			return true;
	for (unsigned i = 0; i < pool->cfg.count; i++)
		if (pool->slots[i].cur.pid > 0 || pool->slots[i].next.pid > 0)
			return true;
	return false;
}

/* SIGTERM, SIGINT, SIGQUIT: FINISHING. */
static void stop(struct pool *pool, int signo)
{
	if (pool->state >= POOL_FINISHING)
		return;
	log_info("%s pool %ld: signal %d, stopping the %ss", pool->cfg.noun,
		 (long)pool->self, signo, pool->cfg.noun);
	pool->state = POOL_FINISHING;
	pool->kill_at_ms = now_ms() + pool->cfg.stop_timeout_ms;
	pool_signal(pool, SIGTERM);
	signal_helpers(pool, SIGTERM);
}

/* The timers whose time came: the replacements', the helper's, the
 * owner's tick, the stop's. */
static void run_timers(struct pool *pool)
{
	int64_t now = now_ms();

	if (pool->state == POOL_RELOADING && now >= pool->ready_deadline_ms) {
		log_error("replacing the %ss refused: a new %s was not ready "
			  "within %ld ms; the %u %ss keep serving as they were",
			  pool->cfg.noun, pool->cfg.noun,
			  pool->cfg.ready_timeout_ms, pool->cfg.count,
			  pool->cfg.noun);
		replacement_end(pool, false);
	}
	for (size_t i = 0; i < HELPER_MAX; i++) {
		struct helper *h = &pool->helpers[i];

		if (h->pid > 0 && now >= h->deadline_ms) {
			kill(h->pid, SIGKILL);
			h->deadline_ms = INT64_MAX;
		}
	}
	if (pool->crash_loop && pool->state < POOL_FINISHING)
		crash_loop_check(pool, now);
	if (now >= pool->tick_at_ms) {
		pool->tick_at_ms = now + pool->cfg.tick_ms;
		pool->cfg.on_tick(pool->cfg.ctx);
	}
	if (pool->state == POOL_FINISHING && now >= pool->kill_at_ms) {
		log_warn("%ss still busy after %ld ms: SIGKILL", pool->cfg.noun,
			 pool->cfg.stop_timeout_ms);
		pool->state = POOL_TERMINATING;
		pool_signal(pool, SIGKILL);
		signal_helpers(pool, SIGKILL);
	}
}

/* Milliseconds until the next timer; -1: none. */
static int next_timer_ms(const struct pool *pool)
{
	int64_t now = now_ms(), next = INT64_MAX;

	if (pool->state < POOL_FINISHING)
		for (unsigned i = 0; i < pool->cfg.count; i++) {
			const struct slot *s = &pool->slots[i];

			if (s->cur.pid == 0 && s->next.pid == 0 &&
			    s->respawn_at_ms < next)
				next = s->respawn_at_ms;
		}
	if (pool->state == POOL_RELOADING && pool->ready_deadline_ms < next)
		next = pool->ready_deadline_ms;
	for (size_t i = 0; i < HELPER_MAX; i++)
		if (pool->helpers[i].pid > 0 &&
		    pool->helpers[i].deadline_ms < next)
			next = pool->helpers[i].deadline_ms;
	/* A crash loop ends once every child has run POOL_STABLE_MS. */
	for (unsigned i = 0; pool->crash_loop && pool->state < POOL_FINISHING &&
			     i < pool->cfg.count; i++) {
		const struct slot *s = &pool->slots[i];

		if (s->cur.pid > 0 && s->cur.started_ms + POOL_STABLE_MS > now &&
		    s->cur.started_ms + POOL_STABLE_MS < next)
			next = s->cur.started_ms + POOL_STABLE_MS;
	}
	if (pool->state == POOL_FINISHING && pool->kill_at_ms < next)
		next = pool->kill_at_ms;
	if (pool->tick_at_ms < next)
		next = pool->tick_at_ms;
	if (next == INT64_MAX)
		return -1;
	return next <= now ? 0 : next - now > 60000 ? 60000 : (int)(next - now);
}

static void take_signals(struct pool *pool)
{
	int signo;

	while ((signo = signals_next()) != 0) {
		switch (signo) {
		case SIGCHLD:
			reap(pool);
			break;
		case SIGTERM:
		case SIGINT:
		case SIGQUIT:
			stop(pool, signo);
			break;
		case SIGHUP:
		case SIGUSR2:
			if (pool->state >= POOL_FINISHING)
				break;
			if (pool->cfg.on_signal != NULL)
				pool->cfg.on_signal(pool->cfg.ctx,
						    signo);
			else if (signo == SIGHUP)
				pool_signal(pool, SIGHUP);
			break;
		default:
			break;
		}
	}
	/* A SIGCHLD merged with one already read is not lost. */
	reap(pool);
}

int pool_run(struct pool *pool, unsigned *unclean, struct error *err)
{
	/* The signals' descriptor and every readiness pipe. */
	struct pollfd *pfd = calloc(1 + 2 * (size_t)pool->cfg.count,
				    sizeof(*pfd));

	if (pfd == NULL)
		return error_set(err, "pool: out of memory");
	pool_set_title(pool->cfg.title);
	while (pool->state < POOL_FINISHING || any_child(pool)) {
		size_t n = 1;

		fill_slots(pool);
		pfd[0].fd = signals_fd();
		pfd[0].events = POLLIN;
		for (unsigned i = 0; i < pool->cfg.count; i++) {
			const struct slot *s = &pool->slots[i];

			if (s->cur.ready_fd >= 0)
				pfd[n++] = (struct pollfd){ s->cur.ready_fd, POLLIN, 0 };
			if (s->next.ready_fd >= 0)
				pfd[n++] = (struct pollfd){ s->next.ready_fd, POLLIN, 0 };
		}
		if (poll(pfd, n, next_timer_ms(pool)) < 0 && errno != EINTR) {
			error_set(err, "pool: poll: %s", strerror(errno));
			pool_signal(pool, SIGKILL);
			while (waitpid(-1, NULL, 0) > 0)
				;
			free(pfd);
			return -1;
		}
		/* Readiness first: a child that wrote its byte and died is
		 * then reaped as a child that was ready. */
		for (size_t k = 1; k < n; k++) {
			if (pfd[k].revents == 0)
				continue;
			for (unsigned i = 0; i < pool->cfg.count; i++) {
				struct slot *s = &pool->slots[i];

				if (s->cur.ready_fd == pfd[k].fd)
					child_ready(pool, &s->cur);
				else if (s->next.ready_fd == pfd[k].fd)
					child_ready(pool, &s->next);
			}
		}
		take_signals(pool);
		run_timers(pool);
	}
	free(pfd);
	*unclean = pool->unclean;
	return 0;
}

size_t pool_pids(const struct pool *pool, pid_t *pids, size_t cap)
{
	size_t n = 0;

	for (unsigned i = 0; i < pool->cfg.count; i++) {
		if (pool->slots[i].cur.pid > 0 && n < cap)
			pids[n++] = pool->slots[i].cur.pid;
		if (pool->slots[i].next.pid > 0 && n < cap)
			pids[n++] = pool->slots[i].next.pid;
	}
	for (size_t i = 0; i < pool->retiring_count && n < cap; i++)
		pids[n++] = pool->retiring[i];
	return n;
}

void pool_child_ready(int ready_fd)
{
	char byte = 1;

	if (ready_fd < 0)
		return;
	if (write(ready_fd, &byte, 1) != 1)
		log_debug("telling the pool this child is ready: %s",
			  strerror(errno));
	close(ready_fd);
}

/* ---- process titles, as nginx and php-fpm set them ---- */

static char *title_start;
static size_t title_cap;

int pool_title_init(int argc, char **argv)
{
	extern char **environ;
	char *end;
	int rc = 0;

	if (argc <= 0 || argv[0] == NULL)
		return 0;
	end = argv[0] + strlen(argv[0]) + 1;
	for (int i = 1; i < argc && argv[i] == end; i++)
		end = argv[i] + strlen(argv[i]) + 1;
	/* The environment's strings usually follow: moved, their room is
	 * the title's too. */
	for (size_t i = 0; environ[i] != NULL && environ[i] == end; i++) {
		char *copy = strdup(environ[i]);

		if (copy == NULL) {
			rc = -1;
			break;
		}
		end = environ[i] + strlen(environ[i]) + 1;
		environ[i] = copy;
	}
	title_start = argv[0];
	title_cap = (size_t)(end - argv[0]);
	return rc;
}

void pool_set_title(const char *title)
{
	if (title == NULL)
		return;
#ifdef __linux__
	prctl(PR_SET_NAME, title, 0, 0, 0);
#endif
	if (title_start == NULL || title_cap < 2)
		return;
	memset(title_start, 0, title_cap);
	snprintf(title_start, title_cap - 1, "%s", title);
}
