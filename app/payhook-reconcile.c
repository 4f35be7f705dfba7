/* payhook-reconcile - records the payments, refunds and disputes whose
 * webhooks never came, from each provider's own API (lib/reconcile), through
 * the receiver's own recording; with --replay, puts the inbox through the
 * webhook's path again. The command line is its option table (options.h);
 * the signals are signals.h's: SIGTERM and SIGINT end the pass after the
 * page in hand, SIGHUP reopens the log.
 */
#include "config.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api_client.h"
#include "backend.h"
#include "configuration.h"
#include "lifecycle.h"
#include "log.h"
#include "options.h"
#include "pipeline.h"
#include "reconcile.h"
#include "replay.h"
#include "signals.h"
#include "timing.h"

#define PROGRAM "payhook-reconcile"

enum { OPT_ONCE = 256, OPT_PROVIDER, OPT_SINCE, OPT_DRY_RUN, OPT_REPLAY,
       OPT_OUTCOME };

static const struct options_entry entries[] = {
	OPTIONS_ENTRY_CONFIG,
	{ "once", no_argument, OPT_ONCE, NULL,
	  "one pass over every profile with an API key, then exit: for cron" },
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
	bool once, replay;
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
	static const int served[] = { SIGTERM, SIGINT, SIGHUP, 0 };
	struct error err;

	if (signals_open(served, &err) == 0)
		return 0;
	fprintf(stderr, PROGRAM ": %s\n", err.message);
	return -1;
}

/* Waits seconds, or until SIGTERM. */
static void wait_interval(long seconds)
{
	int64_t until = timing_now_us() + seconds * 1000000LL;

	while (!signals_stopping() && timing_now_us() < until)
		signals_wait(NULL, 0, (long)((until - timing_now_us()) / 1000) + 1);
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
	struct error err;
	struct reconcile *r;
	int rc;

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
	if (open_signals() != 0)
		return RECONCILE_FAILED;
	if (api_client_global_init(&err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return RECONCILE_FAILED;
	}
	r = reconcile_new(cfg, &err);
	if (r == NULL) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		api_client_global_cleanup();
		return RECONCILE_FAILED;
	}
	for (;;) {
		rc = reconcile_pass(r, &c->ro, stdout);
		/* --since is this pass's start, not every pass's. */
		c->ro.has_since = false;
		if (c->once || signals_stopping())
			break;
		wait_interval(cfg->reconcile_interval_s);
		if (signals_stopping())
			break;
	}
	if (!c->once && signals_stopping())
		rc = RECONCILE_COMPLETE;
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
	    (c.replay && c.once))
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
		rc = c.replay ? run_replay(&cfg, &c) : run_passes(&cfg, &c);
	}
	config_cleanup(&cfg);
	return rc;
}
