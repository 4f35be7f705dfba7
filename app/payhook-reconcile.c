/* payhook-reconcile - records the payments, refunds and disputes whose
 * webhooks never came, from each provider's own API (lib/reconcile), through
 * the receiver's own recording. The command line is its option table:
 * getopt's options and the usage are made from it.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_client.h"
#include "configuration.h"
#include "lifecycle.h"
#include "log.h"
#include "pipeline.h"
#include "backend.h"
#include "reconcile.h"
#include "replay.h"

#define PROGRAM "payhook-reconcile"
#define EXIT_USAGE 2

enum { OPT_ONCE = 256, OPT_PROVIDER, OPT_SINCE, OPT_DRY_RUN, OPT_VERSION,
       OPT_REPLAY, OPT_OUTCOME };

/* The one list of options: getopt's table and the usage come from it. */
static const struct {
	struct option option;
	const char *arg, *help;
} table[] = {
	{ { "config", required_argument, NULL, 'c' }, "FILE",
	  "the configuration file (else $PAYHOOK_CONFIG)" },
	{ { "once", no_argument, NULL, OPT_ONCE }, NULL,
	  "one pass over every profile with an API key, then exit: for cron" },
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

/* Sleeps seconds, or until SIGTERM. */
static void wait_interval(long seconds)
{
	struct timespec ts = { 0, 200 * 1000000L };

	for (long i = 0; i < seconds * 5 && !stop; i++)
		nanosleep(&ts, NULL);
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
	bool once = false, replay = false;
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
	    (replay && once)) {
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
	r = reconcile_new(&cfg, &err);
	if (r == NULL) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		api_client_global_cleanup();
		goto out;
	}
	for (;;) {
		rc = reconcile_pass(r, &ro, stdout);
		/* --since is this pass's start, not every pass's. */
		ro.has_since = false;
		if (once || stop)
			break;
		wait_interval(cfg.reconcile_interval_s);
		if (stop)
			break;
	}
	if (!once && stop)
		rc = 0;
	reconcile_free(r);
	api_client_global_cleanup();
out:
	config_cleanup(&cfg);
	return rc;
}
