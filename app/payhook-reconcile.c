/* payhook-reconcile - records the payments, refunds and disputes whose
 * webhooks never came, from each provider's own API (lib/reconcile), through
 * the receiver's own recording; and, for the providers that only notify,
 * fetches what their queued notifications name (notify_fetch.h). The
 * command line is its option table: getopt's options and the usage are
 * made from it.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_client.h"
#include "configuration.h"
#include "lifecycle.h"
#include "log.h"
#include "notify_fetch.h"
#include "pipeline.h"
#include "backend.h"
#include "reconcile.h"
#include "replay.h"

#define PROGRAM "payhook-reconcile"
#define EXIT_USAGE 2

enum { OPT_ONCE = 256, OPT_PROVIDER, OPT_SINCE, OPT_DRY_RUN, OPT_VERSION,
       OPT_REPLAY, OPT_OUTCOME, OPT_NOTIFY };

/* The one list of options: getopt's table and the usage come from it. */
static const struct {
	struct option option;
	const char *arg, *help;
} table[] = {
	{ { "config", required_argument, NULL, 'c' }, "FILE",
	  "the configuration file (else $PAYHOOK_CONFIG)" },
	{ { "once", no_argument, NULL, OPT_ONCE }, NULL,
	  "one pass over every profile with an API key, then exit: for cron" },
	{ { "notify", no_argument, NULL, OPT_NOTIFY }, NULL,
	  "only the pending notifications (mollie, mercadopago, gocardless)" },
	{ { "provider", required_argument, NULL, OPT_PROVIDER }, "NAME",
	  "this profile only (stripe, ...)" },
	{ { "since", required_argument, NULL, OPT_SINCE }, "TIME",
	  "this pass starts at TIME (RFC 3339, e.g. 2026-11-01T00:00:00Z)" },
	{ { "dry-run", no_argument, NULL, OPT_DRY_RUN }, NULL,
	  "list and judge, record nothing, keep the cursor (the inbox)" },
	{ { "replay", no_argument, NULL, OPT_REPLAY }, NULL,
	  "replay the inbox once (--since: received since), then exit" },
	{ { "outcome", required_argument, NULL, OPT_OUTCOME }, "OUTCOME",
	  "with --replay: ignored or unauthorized deliveries only" },
	{ { "version", no_argument, NULL, OPT_VERSION }, NULL,
	  "print the version" },
	{ { "help", no_argument, NULL, 'h' }, NULL, "this text" },
};
#define OPTION_COUNT (sizeof(table) / sizeof(table[0]))

static void usage(FILE *to)
{
	fputs("usage: " PROGRAM " [-c FILE] [--once] [--provider NAME] "
	      "[--since TIME] [--dry-run]\n"
	      "       " PROGRAM " --notify [-c FILE] [--once] "
	      "[--provider NAME]\n"
	      "       " PROGRAM " --replay [-c FILE] [--provider NAME] "
	      "[--since TIME]\n"
	      "           [--outcome ignored|unauthorized] [--dry-run]\n"
	      "\n"
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
	      "judged; 1: one could not be; 2: usage.\n\n",
	      to);
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		char left[40];

		snprintf(left, sizeof(left), "%s%c%s--%s%s%s",
			 table[i].option.val < 256 && table[i].option.val != 'h'
				 ? "-" : "",
			 table[i].option.val < 256 && table[i].option.val != 'h'
				 ? table[i].option.val : ' ',
			 table[i].option.val < 256 && table[i].option.val != 'h'
				 ? ", " : "",
			 table[i].option.name, table[i].arg != NULL ? " " : "",
			 table[i].arg != NULL ? table[i].arg : "");
		fprintf(to, "  %-24s %s\n", left + (left[0] == ' ' ? 1 : 0),
			table[i].help);
	}
}

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static int install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) != 0 ||
	    sigaction(SIGINT, &sa, NULL) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return 0;
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

/* Sleeps ms, or until SIGTERM. */
static void wait_ms(long ms)
{
	struct timespec ts = { 0, 50 * 1000000L };

	for (long i = 0; i < ms / 50 + 1 && !stop; i++)
		nanosleep(&ts, NULL);
}

/* The fetcher as a daemon: every notification due, then a look at the
 * table every notify_poll_ms while none is. Returns 0 at SIGTERM, 1 when
 * it cannot start. */
static int fetch_loop(const struct config *cfg, int only)
{
	struct notify_fetch_options o = { .only = only, .stop = &stop };
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
	while (!stop) {
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

/* Starts fetch_loop in a child of its own (its connections its own), so
 * that a long pass never delays a notification. Returns its pid, or -1. */
static pid_t start_fetcher(const struct config *cfg, int only)
{
	pid_t pid = fork();

	if (pid == 0) {
		fflush(stdout);
		_exit(fetch_loop(cfg, only));
	}
	if (pid < 0)
		log_error("the fetcher could not be started: fork: %s",
			  strerror(errno));
	return pid;
}

/* The fetcher child, when it ended: said, and started again (at most once
 * a second). */
static void watch_fetcher(const struct config *cfg, int only, pid_t *pid,
			  int64_t *started_s)
{
	int status;

	if (*pid > 0 && waitpid(*pid, &status, WNOHANG) == *pid) {
		log_error("the fetcher (pid %ld) ended (%s %d): starting it "
			  "again", (long)*pid,
			  WIFSIGNALED(status) ? "signal" : "status",
			  WIFSIGNALED(status) ? WTERMSIG(status)
					      : WEXITSTATUS(status));
		*pid = -1;
	}
	if (*pid < 0 && !stop && (int64_t)time(NULL) > *started_s) {
		*started_s = (int64_t)time(NULL);
		*pid = start_fetcher(cfg, only);
	}
}

/* --replay: the inbox, once. */
static int run_replay(const struct config *cfg, const char *provider,
		      const char *outcome, const struct reconcile_options *ro)
{
	struct replay_options o = {
		.only = -1, .since_s = ro->has_since ? ro->since_s : 0,
		.outcome = outcome, .dry_run = ro->dry_run, .stop = &stop,
	};

	if (provider != NULL) {
		for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++)
			if (strcmp(provider, config_provider_name(i)) == 0)
				o.only = (int)i;
		if (o.only < 0) {
			fprintf(stderr, PROGRAM ": --provider %s: no such "
				"profile\n", provider);
			return EXIT_USAGE;
		}
	}
	if (install_signals() != 0) {
		fprintf(stderr, PROGRAM ": signals: %s\n", strerror(errno));
		return 1;
	}
	return replay_run(cfg, &o, stdout);
}

int main(int argc, char **argv)
{
	struct option options[OPTION_COUNT + 1];
	struct reconcile_options ro = { .only = -1, .stop = &stop };
	struct config cfg;
	struct error err;
	struct reconcile *r = NULL;
	const char *path = NULL, *provider = NULL, *outcome = NULL;
	bool once = false, replay = false, notify = false, fetching;
	struct notify_fetch *nf = NULL;
	struct notify_fetch_options no = { .only = -1, .stop = &stop };
	pid_t fetcher = -1;
	int64_t fetcher_s = 0;
	int opt, rc = RECONCILE_FAILED;

	for (size_t i = 0; i < OPTION_COUNT; i++)
		options[i] = table[i].option;
	memset(&options[OPTION_COUNT], 0, sizeof(options[0]));
	while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
		struct lifecycle_time since;

		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case OPT_ONCE:
			once = true;
			break;
		case OPT_PROVIDER:
			provider = optarg;
			break;
		case OPT_SINCE:
			if (lifecycle_time_parse(optarg, strlen(optarg),
						 &since) != 0) {
				fprintf(stderr, PROGRAM ": --since wants an RFC "
					"3339 time such as "
					"2026-11-01T00:00:00Z\n");
				return EXIT_USAGE;
			}
			ro.has_since = true;
			ro.since_s = since.seconds;
			break;
		case OPT_DRY_RUN:
			ro.dry_run = true;
			break;
		case OPT_REPLAY:
			replay = true;
			break;
		case OPT_NOTIFY:
			notify = true;
			break;
		case OPT_OUTCOME:
			if (strcmp(optarg, "ignored") != 0 &&
			    strcmp(optarg, "unauthorized") != 0) {
				fprintf(stderr, PROGRAM ": --outcome is ignored "
					"or unauthorized\n");
				return EXIT_USAGE;
			}
			outcome = optarg;
			break;
		case OPT_VERSION:
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
	if (optind != argc || (outcome != NULL && !replay) ||
	    (replay && once) || (notify && (replay || ro.dry_run ||
					    ro.has_since))) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (path == NULL)
		path = config_default_path();
	if (pipeline_load_config(&cfg, path, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return 1;
	}
	log_init(PROGRAM, cfg.log_level);
	if (cfg.log_file != NULL && log_open_file(cfg.log_file, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		goto out;
	}
	if (replay) {
		rc = run_replay(&cfg, provider, outcome, &ro);
		goto out;
	}
	if (reconcile_check_config(&cfg, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		goto out;
	}
	if (provider != NULL) {
		for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++)
			if (strcmp(provider, config_provider_name(i)) == 0)
				ro.only = (int)i;
		no.only = ro.only;
		if (ro.only < 0 ||
		    !backend_has_key(&cfg, (enum config_provider)ro.only)) {
			fprintf(stderr, PROGRAM ": --provider %s: no such "
				"profile with an API key (set %s_api_key)\n",
				provider, provider);
			rc = EXIT_USAGE;
			goto out;
		}
	}
	if (install_signals() != 0) {
		fprintf(stderr, PROGRAM ": signals: %s\n", strerror(errno));
		goto out;
	}
	if (api_client_global_init(&err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		goto out;
	}
	if (notify && !notify_fetch_wanted(&cfg, no.only)) {
		fprintf(stderr, PROGRAM ": --notify: no provider that only "
			"notifies is enabled with its API key (mollie, "
			"mercadopago, gocardless)\n");
		rc = EXIT_USAGE;
		api_client_global_cleanup();
		goto out;
	}
	/* The daemon's fetcher runs apart (its own process and
	 * connections): a pass may take long, a notification must not. */
	if (notify && !once) {
		rc = fetch_loop(&cfg, no.only);
		api_client_global_cleanup();
		goto out;
	}
	fetching = !once && !ro.dry_run && notify_fetch_wanted(&cfg, no.only);
	if (fetching)
		watch_fetcher(&cfg, no.only, &fetcher, &fetcher_s);
	if (once && !ro.dry_run && notify_fetch_wanted(&cfg, no.only)) {
		nf = notify_fetch_new(&cfg, &err);
		if (nf == NULL) {
			fprintf(stderr, PROGRAM ": %s\n", err.message);
			api_client_global_cleanup();
			goto out;
		}
	}
	r = notify ? NULL : reconcile_new(&cfg, &err);
	if (r == NULL && !notify) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		notify_fetch_free(nf);
		api_client_global_cleanup();
		goto out;
	}
	/* --once: the pending notifications before the lists, and those the
	 * lists queued after them. */
	if (nf != NULL)
		rc = fetch_once(nf, &no);
	for (; r != NULL;) {
		int pass = reconcile_pass(r, &ro, stdout);

		rc = rc == RECONCILE_FAILED && once && nf != NULL ? rc : pass;
		/* --since is this pass's start, not every pass's. */
		ro.has_since = false;
		if (once || stop)
			break;
		/* Until the next pass, the fetcher watched. */
		for (long i = 0; i < cfg.reconcile_interval_s * 5 && !stop; i++) {
			if (fetching)
				watch_fetcher(&cfg, no.only, &fetcher,
					      &fetcher_s);
			wait_ms(200);
		}
		if (stop)
			break;
	}
	if (nf != NULL && r != NULL && fetch_once(nf, &no) == RECONCILE_FAILED)
		rc = RECONCILE_FAILED;
	if (!once && stop)
		rc = 0;
	if (fetcher > 0) {
		kill(fetcher, SIGTERM);
		waitpid(fetcher, NULL, 0);
	}
	notify_fetch_free(nf);
	reconcile_free(r);
	api_client_global_cleanup();
out:
	config_cleanup(&cfg);
	return rc;
}
