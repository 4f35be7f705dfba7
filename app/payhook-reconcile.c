/* payhook-reconcile - records the payments, refunds and disputes whose
 * webhooks never came, from each provider's own API (lib/reconcile), through
 * the receiver's own recording; with --replay, puts the inbox through the
 * webhook's path again; for the providers that only notify, fetches what
 * their queued notifications name (notify_fetch.h), in a child of its own
 * while the passes run. The command line is its option table (options.h);
 * the signals are signals.h's: SIGTERM and SIGINT end the pass after the
 * page in hand, SIGHUP reopens the log.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/wait.h>

#include "api_client.h"
#include "backend.h"
#include "configuration.h"
#include "lifecycle.h"
#include "log.h"
#include "notify_fetch.h"
#include "options.h"
#include "pipeline.h"
#include "reconcile.h"
#include "replay.h"
#include "signals.h"
#include "timing.h"

#define PROGRAM "payhook-reconcile"

enum { OPT_ONCE = 256, OPT_PROVIDER, OPT_SINCE, OPT_DRY_RUN, OPT_REPLAY,
       OPT_OUTCOME, OPT_NOTIFY };

static const struct options_entry entries[] = {
	OPTIONS_ENTRY_CONFIG,
	{ "once", no_argument, OPT_ONCE, NULL,
	  "one pass over every profile with an API key, then exit: for cron" },
	{ "notify", no_argument, OPT_NOTIFY, NULL,
	  "only the pending notifications (mollie, mercadopago, gocardless)" },
	{ "provider", required_argument, OPT_PROVIDER, "NAME",
	  "this profile only (stripe, ...)" },
	{ "since", required_argument, OPT_SINCE, "TIME",
	  "this pass starts at TIME (RFC 3339, e.g. 2026-11-01T00:00:00Z)" },
	{ "dry-run", no_argument, OPT_DRY_RUN, NULL,
	  "list and judge, record nothing, keep the cursor (the inbox)" },
	{ "replay", no_argument, OPT_REPLAY, NULL,
	  "replay the inbox once (--since: received since), then exit" },
	{ "outcome", required_argument, OPT_OUTCOME, "OUTCOME",
	  "with --replay: ignored or unauthorized deliveries only" },
	OPTIONS_ENTRY_VERSION,
	OPTIONS_ENTRY_HELP,
};

static const char *const forms[] = {
	"[-c FILE] [--once] [--provider NAME] [--since TIME] [--dry-run]",
	"--notify [-c FILE] [--once] [--provider NAME]",
	"--replay [-c FILE] [--provider NAME] [--since TIME] "
	"[--outcome ignored|unauthorized] [--dry-run]",
	"--version | --help",
	NULL,
};

static const struct options_program program = {
	.name = PROGRAM,
	.forms = forms,
	.about =
		"Asks each provider's API (every profile with <profile>_api_key)\n"
		"for the events it holds and records those payhook never received,\n"
		"through the webhook's own recording (source = reconcile). Without\n"
		"--once it repeats every reconcile_interval_s until SIGTERM. One\n"
		"line per provider per pass on standard output. Exit 0: every pass\n"
		"complete, no discrepancy; 1: a pass failed; 3: complete, with\n"
		"discrepancies; 2: usage.\n\n"
		"The providers that only notify (mollie, mercadopago, gocardless)\n"
		"queue what they notify; payhook-reconcile fetches each from the\n"
		"provider's API and records what it says (source = webhook): as a\n"
		"daemon within notify_poll_ms of its queueing, with --once before\n"
		"its passes. --notify takes only the notifications (--once --notify:\n"
		"the cron line of a shared host, every minute); one line per\n"
		"provider. Exit 0: every fetch succeeded; 1: one failed (it stays\n"
		"pending).\n\n"
		"--replay puts each delivery kept in the inbox (inbox_days) through\n"
		"the webhook's path again with today's configuration, the signature\n"
		"judged against the time it was received (source = replay); one\n"
		"line per delivery and one for the run. Exit 0: every delivery\n"
		"judged; 1: one could not be; 2: usage.\n",
	.entries = entries,
	.count = sizeof(entries) / sizeof(entries[0]),
};

/* The command line, as read. */
struct cmdline {
	const char *path, *provider, *outcome;
	bool once, replay, notify;
	struct reconcile_options ro;
};

/* One option (options_parse's take). */
static int take_option(void *ctx, int val, const char *arg)
{
	struct cmdline *c = ctx;
	struct lifecycle_time since;

	switch (val) {
	case 'c':
		c->path = arg;
		break;
	case OPT_ONCE:
		c->once = true;
		break;
	case OPT_PROVIDER:
		c->provider = arg;
		break;
	case OPT_SINCE:
		if (lifecycle_time_parse(arg, strlen(arg), &since) != 0) {
			fprintf(stderr, PROGRAM ": --since wants an RFC 3339 "
				"time such as 2026-11-01T00:00:00Z\n");
			return OPTIONS_EXIT_USAGE;
		}
		c->ro.has_since = true;
		c->ro.since_s = since.seconds;
		break;
	case OPT_DRY_RUN:
		c->ro.dry_run = true;
		break;
	case OPT_REPLAY:
		c->replay = true;
		break;
	case OPT_NOTIFY:
		c->notify = true;
		break;
	default: /* OPT_OUTCOME */
		if (strcmp(arg, "ignored") != 0 &&
		    strcmp(arg, "unauthorized") != 0) {
			fprintf(stderr, PROGRAM ": --outcome is ignored or "
				"unauthorized\n");
			return OPTIONS_EXIT_USAGE;
		}
		c->outcome = arg;
		break;
	}
	return OPTIONS_GO_ON;
}

/* The profile called name, or -1. */
static int profile_named(const char *name)
{
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++)
		if (strcmp(name, config_provider_name(i)) == 0)
			return (int)i;
	return -1;
}

/* SIGTERM and SIGINT (a stop), SIGHUP (the log reopened), read between
 * pages and in the wait between passes. Returns 0, or -1 said. */
static int open_signals(void)
{
	/* SIGCHLD ends a wait: the fetcher's end is seen at once. */
	static const int served[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD, 0 };
	struct error err;

	if (signals_open(served, &err) == 0)
		return 0;
	fprintf(stderr, PROGRAM ": %s\n", err.message);
	return -1;
}

/* The pending notifications, once: their line per provider on standard
 * output. Returns RECONCILE_COMPLETE, or RECONCILE_FAILED when a fetch
 * failed or the table could not be read. */
static int fetch_once(struct notify_fetch *nf,
		      const struct notify_fetch_options *o)
{
	struct error err;
	bool failed = false;
	long taken = notify_fetch_due(nf, o, &failed, &err);

	if (taken < 0) {
		log_error("notifications not fetched: %s", err.message);
		failed = true;
	}
	notify_fetch_report(nf, o, stdout);
	return failed ? RECONCILE_FAILED : RECONCILE_COMPLETE;
}

/* Waits ms, or until a stop. */
static void wait_ms(long ms)
{
	int64_t until = timing_now_us() + ms * 1000LL;

	while (!signals_stopping() && timing_now_us() < until)
		signals_wait(NULL, 0, (long)((until - timing_now_us()) / 1000) + 1);
}

/* The fetcher as a daemon: every notification due, then a look at the
 * table every notify_poll_ms while none is. Returns 0 at SIGTERM, 1 when
 * it cannot start. */
static int fetch_loop(const struct config *cfg, int only)
{
	struct notify_fetch_options o = { .only = only,
					   .stopping = signals_stopping };
	struct notify_fetch *nf;
	struct error err;
	int64_t told_s = 0, pruned_s = 0;

	nf = notify_fetch_new(cfg, &err);
	if (nf == NULL) {
		log_error("the fetcher cannot start: %s", err.message);
		return 1;
	}
	log_info("fetching the notifications of the providers that only "
		 "notify (every %ld ms while idle)", cfg->notify_poll_ms);
	while (!signals_stopping()) {
		bool failed = false;
		long taken = notify_fetch_due(nf, &o, &failed, &err);
		int64_t now = (int64_t)time(NULL);

		if (taken < 0) {
			/* Said once a minute while it lasts. */
			if (now - told_s >= 60) {
				log_warn("notifications not fetched: %s",
					 err.message);
				told_s = now;
			}
			wait_ms(1000);
			continue;
		}
		if (now - pruned_s >= 3600) {
			notify_fetch_prune(nf);
			pruned_s = now;
		}
		if (taken == 0)
			wait_ms(cfg->notify_poll_ms);
	}
	notify_fetch_free(nf);
	return 0;
}

/* The daemon's fetcher in a child of its own (its connections its own), so
 * that a long pass never delays a notification: started when it is not
 * running (at most once a second), and said when it ended. */
struct fetcher {
	const struct config *cfg;
	int only;
	pid_t pid;         /* -1: not running */
	int64_t started_s; /* when it was last started */
};

static void fetcher_watch(struct fetcher *f)
{
	int status;

	if (f->pid > 0 && waitpid(f->pid, &status, WNOHANG) == f->pid) {
		log_error("the fetcher (pid %ld) ended (%s %d): starting it "
			  "again", (long)f->pid,
			  WIFSIGNALED(status) ? "signal" : "status",
			  WIFSIGNALED(status) ? WTERMSIG(status)
					      : WEXITSTATUS(status));
		f->pid = -1;
	}
	if (f->pid < 0 && !signals_stopping() &&
	    (int64_t)time(NULL) > f->started_s) {
		f->started_s = (int64_t)time(NULL);
		f->pid = fork();
		if (f->pid == 0) {
			fflush(stdout);
			_exit(fetch_loop(f->cfg, f->only));
		}
		if (f->pid < 0)
			log_error("the fetcher could not be started: fork: %s",
				  strerror(errno));
	}
}

static void fetcher_stop(struct fetcher *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGTERM);
		waitpid(f->pid, NULL, 0);
		f->pid = -1;
	}
}

/* --notify: the notifications only, once or as a daemon. Returns the exit
 * status. */
static int run_notify(const struct config *cfg, const struct cmdline *c)
{
	struct notify_fetch_options o = { .only = -1,
					   .stopping = signals_stopping };
	struct notify_fetch *nf;
	struct error err;
	int rc;

	if (c->provider != NULL) {
		o.only = profile_named(c->provider);
		if (o.only < 0) {
			fprintf(stderr, PROGRAM ": --provider %s: no such "
				"profile\n", c->provider);
			return OPTIONS_EXIT_USAGE;
		}
	}
	if (!notify_fetch_wanted(cfg, o.only)) {
		fprintf(stderr, PROGRAM ": --notify: no provider that only "
			"notifies is enabled with its API key (mollie, "
			"mercadopago, gocardless)\n");
		return OPTIONS_EXIT_USAGE;
	}
	if (open_signals() != 0)
		return RECONCILE_FAILED;
	if (api_client_global_init(&err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return RECONCILE_FAILED;
	}
	if (!c->once) {
		rc = fetch_loop(cfg, o.only);
	} else if ((nf = notify_fetch_new(cfg, &err)) == NULL) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = RECONCILE_FAILED;
	} else {
		rc = fetch_once(nf, &o);
		notify_fetch_free(nf);
	}
	api_client_global_cleanup();
	return rc;
}

/* --replay: the inbox, once. Returns the exit status. */
static int run_replay(const struct config *cfg, const struct cmdline *c)
{
	struct replay_options o = {
		.only = -1, .since_s = c->ro.has_since ? c->ro.since_s : 0,
		.outcome = c->outcome, .dry_run = c->ro.dry_run,
		.stopping = signals_stopping,
	};

	if (c->provider != NULL) {
		o.only = profile_named(c->provider);
		if (o.only < 0) {
			fprintf(stderr, PROGRAM ": --provider %s: no such "
				"profile\n", c->provider);
			return OPTIONS_EXIT_USAGE;
		}
	}
	if (open_signals() != 0)
		return 1;
	return replay_run(cfg, &o, stdout);
}

/* The passes: once, or every reconcile_interval_s until SIGTERM. Returns
 * the exit status. */
static int run_passes(const struct config *cfg, struct cmdline *c)
{
	struct notify_fetch_options no = { .only = -1,
					    .stopping = signals_stopping };
	struct fetcher fetcher = { .cfg = cfg, .only = -1, .pid = -1 };
	struct notify_fetch *nf = NULL;
	bool fetching;
	struct error err;
	struct reconcile *r;
	int rc = RECONCILE_COMPLETE;

	if (reconcile_check_config(cfg, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return RECONCILE_FAILED;
	}
	if (c->provider != NULL) {
		c->ro.only = profile_named(c->provider);
		if (c->ro.only < 0 ||
		    !backend_has_key(cfg, (enum config_provider)c->ro.only)) {
			fprintf(stderr, PROGRAM ": --provider %s: no such "
				"profile with an API key (set %s_api_key)\n",
				c->provider, c->provider);
			return OPTIONS_EXIT_USAGE;
		}
	}
	no.only = fetcher.only = c->ro.only;
	if (open_signals() != 0)
		return RECONCILE_FAILED;
	if (api_client_global_init(&err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return RECONCILE_FAILED;
	}
	fetching = !c->ro.dry_run && notify_fetch_wanted(cfg, no.only);
	if (fetching && c->once && (nf = notify_fetch_new(cfg, &err)) == NULL) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		api_client_global_cleanup();
		return RECONCILE_FAILED;
	}
	r = reconcile_new(cfg, &err);
	if (r == NULL) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		notify_fetch_free(nf);
		api_client_global_cleanup();
		return RECONCILE_FAILED;
	}
	/* --once: the pending notifications before the lists, and those the
	 * lists queued after them. */
	if (nf != NULL)
		rc = fetch_once(nf, &no);
	if (fetching && !c->once)
		fetcher_watch(&fetcher);
	for (;;) {
		int pass = reconcile_pass(r, &c->ro, stdout);

		rc = rc == RECONCILE_FAILED && nf != NULL ? rc : pass;
		/* --since is this pass's start, not every pass's. */
		c->ro.has_since = false;
		if (c->once || signals_stopping())
			break;
		/* Until the next pass, the fetcher watched. */
		for (int64_t until = timing_now_us() +
				     cfg->reconcile_interval_s * 1000000LL;
		     !signals_stopping() && timing_now_us() < until;) {
			if (fetching)
				fetcher_watch(&fetcher);
			wait_ms(1000);
		}
		if (signals_stopping())
			break;
	}
	if (nf != NULL && fetch_once(nf, &no) == RECONCILE_FAILED)
		rc = RECONCILE_FAILED;
	fetcher_stop(&fetcher);
	if (!c->once && signals_stopping())
		rc = RECONCILE_COMPLETE;
	notify_fetch_free(nf);
	reconcile_free(r);
	api_client_global_cleanup();
	return rc;
}

int main(int argc, char **argv)
{
	struct cmdline c = {
		.ro = { .only = -1, .stopping = signals_stopping },
	};
	struct config cfg;
	struct error err;
	int rc = options_parse(&program, argc, argv, take_option, &c);

	if (rc != OPTIONS_GO_ON)
		return rc;
	if (optind != argc || (c.outcome != NULL && !c.replay) ||
	    (c.replay && c.once) ||
	    (c.notify && (c.replay || c.ro.dry_run || c.ro.has_since)))
		return options_usage_error(&program, NULL);
	if (pipeline_load_config(&cfg, c.path != NULL ? c.path
						       : config_default_path(),
				 &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return 1;
	}
	log_init(PROGRAM, cfg.log_level);
	if (cfg.log_file != NULL && log_open_file(cfg.log_file, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = RECONCILE_FAILED;
	} else {
		rc = c.replay ? run_replay(&cfg, &c) :
		     c.notify ? run_notify(&cfg, &c) :
				run_passes(&cfg, &c);
	}
	config_cleanup(&cfg);
	return rc;
}
