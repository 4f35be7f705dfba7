/* pool.h - the one pool manager of payhook's programs: payhook --workers
 * (FastCGI workers) and payhook-dispatch (dispatchers) keep their children
 * with it, as php-fpm's fpm_children/fpm_signals/fpm_process_ctl do.
 *
 * N slots, each holding one child forked to run an entry function that never
 * returns. A child that ends is reaped and started again, after a back-off
 * when it did not live long. Signals are read from the signal module's
 * descriptor (signals.h) in the one poll loop, and every wait (a back-off,
 * a replacement's start, a helper process, a stop's escalation from
 * SIGTERM to SIGKILL) is a timer of that loop, so a child that dies is
 * replaced whatever else goes on.
 *
 * A replacement (pool_replace: a reload) starts a new generation beside the
 * old one; each old child is retired (SIGTERM) only once its replacement
 * said it is ready (pool_child_ready). A replacement that ends or stays
 * silent before that abandons the whole new generation: the old one keeps
 * serving.
 *
 * Children run with PR_SET_PDEATHSIG, so they end when the pool's process
 * dies (not across its exec: the PID stays), as the user and group set,
 * and with a process title.
 *
 * A crash loop: a slot's child ended within POOL_STABLE_MS of its start
 * POOL_CRASH_LOOP_EXITS times in a row, so the pool restarts it only after
 * a back-off (100 ms, doubling, at most 30 s) and runs short of children.
 * The episode starts then (logged, and on_alert told once) and ends once
 * every slot's child has run POOL_STABLE_MS (told once more). The owner
 * sends the alert with pool_send_alert, through a helper process: the
 * loop never waits for it.
 */
#ifndef PAYHOOK_POOL_H
#define PAYHOOK_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* The most children one pool keeps. */
#define POOL_MAX 1024
/* A child that lived this long did not crash on start: no back-off. */
#define POOL_STABLE_MS 5000
/* Quick exits in a row, in one slot, that make a crash loop. */
#define POOL_CRASH_LOOP_EXITS 3

/* The events of a crash loop, as alert names. */
#define POOL_ALERT_CRASH_LOOP "pool_crash_loop"
#define POOL_ALERT_RECOVERED "pool_recovered"

/* An episode's start or end, as alert.h's messages say it: what happened
 * and what to do. The strings live until on_alert returns. */
struct pool_alert {
	const char *event;    /* POOL_ALERT_CRASH_LOOP, POOL_ALERT_RECOVERED */
	const char *summary;
	const char *action;
	const char *detail;   /* the last exit; NULL: none */
};

struct pool;

struct pool_config {
	const char *noun;        /* "worker", "dispatcher": in log lines */
	unsigned count;          /* slots, 1 to POOL_MAX */
	const char *title;       /* the manager's process title */
	const char *child_title; /* each child's process title */
	long stop_timeout_ms;    /* SIGTERM, then SIGKILL after this long */
	long ready_timeout_ms;   /* a replacement silent this long failed */
	bool set_identity;       /* children run as uid:gid (from root) */
	uid_t uid;
	gid_t gid;
	const char *user_name;   /* its supplementary groups too; NULL: none */
	void *ctx;               /* passed to the functions below */
	/* Runs in the forked child and never returns (it exits). ready_fd:
	 * hand it to pool_child_ready once started; replacement: the child
	 * belongs to the generation pool_replace started. */
	void (*entry)(void *ctx, bool replacement, int ready_fd);
	/* SIGHUP and SIGUSR2, in the loop. NULL: SIGHUP is passed on to the
	 * children and SIGUSR2 ignored. */
	void (*on_signal)(void *ctx, int signo);
	/* The end of a replacement: ok when every old child was retired,
	 * else the old generation serves on. NULL: nothing to do. */
	void (*on_replaced)(void *ctx, bool ok);
	/* A child was reaped; crashed: it did not exit 0 and is restarted.
	 * NULL: nothing to do. */
	void (*on_child_gone)(void *ctx, pid_t pid, bool crashed);
	/* Called from the loop every tick_ms (in every state, a stop's
	 * too): the owner's periodic look at its children. NULL: none. */
	long tick_ms;
	void (*on_tick)(void *ctx);
	/* A crash loop's start and its end, once each per episode, from the
	 * loop (after the log line). NULL: only logged. */
	void (*on_alert)(void *ctx, const struct pool_alert *alert);
};

/* Sets up the pool: blocks the signals it handles and reads them from
 * signals.h's descriptor (each child gets the mask from before and sets up
 * its own). Adopts no child. Returns the pool, or NULL with err set
 * (nothing left blocked). */
struct pool *pool_new(const struct pool_config *cfg, struct error *err);

/* Frees the pool (NULL accepted); the children are not signalled. */
void pool_free(struct pool *pool);

/* A child of an earlier image of this process (an upgrade's exec): it
 * holds a slot until pool_replace's generation takes over, or is retired at
 * once when every slot is held. Can't fail. */
void pool_adopt(struct pool *pool, pid_t pid);

/* Runs the loop until a stop (SIGTERM, SIGINT, SIGQUIT: every child gets
 * SIGTERM, then SIGKILL after stop_timeout_ms) has ended every child.
 * Returns 0, and in *unclean the children that did not exit 0 on the stop;
 * -1 with err set when the loop itself failed (the children then get
 * SIGKILL and are reaped). */
int pool_run(struct pool *pool, unsigned *unclean, struct error *err);

/* Starts a new generation: one child per slot, each retiring its slot's
 * old child once ready. Returns 0; -1 with err set when one could not be
 * forked (the generation is abandoned, on_replaced is not called) or a
 * replacement is already under way. */
int pool_replace(struct pool *pool, struct error *err);

/* A new stop_timeout_ms (a reload changed the longest a request may take),
 * for the next stop. Can't fail. */
void pool_set_stop_timeout(struct pool *pool, long ms);

/* Sends signo to every child. Can't fail. */
void pool_signal(struct pool *pool, int signo);

/* Runs argv (argv[0] a path) as a helper, without the pool's signal mask;
 * done(ctx, ok) comes from the loop once it ended (ok: exit status 0, and
 * no stop under way) or was killed after timeout_ms. Returns 0; -1 with
 * err set when it could not be started, or a helper with the same done
 * still runs (done is then not called). */
int pool_run_helper(struct pool *pool, char *const argv[], long timeout_ms,
		    void (*done)(void *ctx, bool ok), struct error *err);

/* Sends alert a through a helper: "SENDER --send-alert --from FROM [-c
 * CONFIG_PATH] -- EVENT SUMMARY ACTION DETAIL" (payhook-dispatch, which
 * sends it to alert_url or alert_command), killed after 10 s; its end is
 * logged. A stop sends it SIGTERM. Returns 0, or -1 with err set when it
 * could not be started (nothing is sent). */
int pool_send_alert(struct pool *pool, const struct pool_alert *a,
		    const char *sender, const char *from,
		    const char *config_path, struct error *err);

/* Writes up to cap PIDs of the children (of every generation) into pids.
 * Returns how many. */
size_t pool_pids(const struct pool *pool, pid_t *pids, size_t cap);

/* In a child: tells the pool it started. Closes ready_fd; -1 is accepted
 * (a child started without a pool). Can't fail. */
void pool_child_ready(int ready_fd);

/* Takes over the memory of argv (and of the environment after it, moved
 * elsewhere) for pool_set_title. Call once, before anything keeps a pointer
 * into argv's strings. Returns 0, or -1 when the environment could not be
 * copied (titles are then cut to argv's length). */
int pool_title_init(int argc, char **argv);

/* Sets the process title shown by ps (argv) and the name (PR_SET_NAME).
 * Without pool_title_init only the name. Can't fail. */
void pool_set_title(const char *title);

#endif
