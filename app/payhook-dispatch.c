/* payhook-dispatch.c - hands every payment payhook recorded on to the
 * merchant's fulfilment, and then every change of its refunds, disputes and
 * cancellations, at least once, with an idempotency key that is the same on
 * every attempt. This file is the command line (its option table makes
 * getopt's and the usage) and the choice of mode; the parts are apart:
 * one dispatcher (app/dispatch_worker.c), the master of several
 * (app/dispatch_master.c), --check-config (app/dispatch_check.c) and the
 * operators' commands (app/dispatch_admin.c).
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert.h"
#include "configuration.h"
#include "dispatch_admin.h"
#include "dispatch_check.h"
#include "dispatch_master.h"
#include "dispatch_worker.h"
#include "handoff.h"
#include "handoff_admin.h"
#include "handoff_store.h"
#include "log.h"
#include "number.h"
#include "options.h"
#include "pool.h"
#include "timing.h"
#include "transport_pick.h"

#define PROGRAM DISPATCH_PROGRAM
/* --once: the time bound without =SECONDS, and the largest. */
#define ONCE_DEFAULT_S 50
#define ONCE_MAX_S 86400
#define TEXT(x) TEXT_(x)
#define TEXT_(x) #x

/* getopt's values: the modes first (MODE_DISPATCH, none given, is 0). */
enum {
	MODE_DISPATCH = 0,
	MODE_CHECK_CONFIG = 256,
	MODE_LIST_DEAD,
	MODE_REQUEUE,
	MODE_REDELIVER,
	MODE_SEND_ALERT,
	MODE_PAUSE,
	MODE_RESUME,
	MODE_SHOW,
	OPT_PROVIDER,
	OPT_SINCE,
	OPT_UNTIL,
	OPT_ERROR,
	OPT_DRY_RUN,
	OPT_CHANGES,
	OPT_INCLUDE_SKIPPED,
	OPT_ONCE,
	OPT_FROM,
};

static const struct options_entry entries[] = {
	OPTIONS_ENTRY_CONFIG,
	{ "once", optional_argument, OPT_ONCE, "SECONDS",
	  "deliver what is due, then exit (within SECONDS, default "
	  TEXT(ONCE_DEFAULT_S) "; one process): for cron. Exits 0 when "
	  "nothing it tried failed, 3 when the target failed, refused or "
	  "asked to wait (or payments wait on its open circuit), 1 on other "
	  "trouble; its last line says what it did" },
	{ "check-config", no_argument, MODE_CHECK_CONFIG, NULL,
	  "check the configuration, MySQL and the schema" },
	{ "list-dead", no_argument, MODE_LIST_DEAD, NULL,
	  "print the dead payments (id, provider, transaction_id, attempts, "
	  "last error)" },
	{ "requeue", no_argument, MODE_REQUEUE, NULL,
	  "put dead payments back to pending, due now, attempts 0: those "
	  "with the ids given and matching every filter (--provider, "
	  "--since, --until, --error, --include-skipped)" },
	{ "provider", required_argument, OPT_PROVIDER, "P",
	  "with --requeue: the payments of provider P" },
	{ "since", required_argument, OPT_SINCE, "TIME",
	  "with --requeue: received_at at or after TIME (RFC 3339, "
	  "'YYYY-MM-DD HH:MM:SS' or YYYY-MM-DD in UTC, or an age such as "
	  "30m, 2h, 7d)" },
	{ "until", required_argument, OPT_UNTIL, "TIME",
	  "with --requeue: received_at before TIME (as --since)" },
	{ "error", required_argument, OPT_ERROR, "TEXT",
	  "with --requeue: TEXT in the last error" },
	{ "include-skipped", no_argument, OPT_INCLUDE_SKIPPED, NULL,
	  "with --requeue: the rows skipped by the migration (handled before "
	  "payhook) too" },
	{ "redeliver", no_argument, MODE_REDELIVER, NULL,
	  "hand the delivered payments ID... on again (the same "
	  "Idempotency-Key)" },
	{ "dry-run", no_argument, OPT_DRY_RUN, NULL,
	  "with --requeue or --redeliver: count, change nothing" },
	{ "changes", no_argument, OPT_CHANGES, NULL,
	  "with --list-dead, --requeue, --redeliver or --show: the "
	  "lifecycle changes (their own ids; --provider is their payment's) "
	  "instead of the payments" },
	{ "show", no_argument, MODE_SHOW, NULL,
	  "where payment ID (a change, with --changes) stands: attempts, "
	  "last error, next attempt, and whether the target's state or its "
	  "payment holds it back" },
	{ "pause", no_argument, MODE_PAUSE, NULL,
	  "stop delivery by every dispatcher of the database (they keep "
	  "running)" },
	{ "resume", no_argument, MODE_RESUME, NULL,
	  "start delivery again after --pause" },
	{ "send-alert", no_argument, MODE_SEND_ALERT, NULL,
	  "send one alert to alert_url or alert_command; payhook --workers "
	  "sends its crash loops this way, and it tests an alert set-up" },
	{ "from", required_argument, OPT_FROM, "NAME",
	  "with --send-alert: the program named in the alert (default "
	  PROGRAM ")" },
	OPTIONS_ENTRY_VERSION,
	OPTIONS_ENTRY_HELP,
};

static const char *const forms[] = {
	"[-c FILE] [--once[=SECONDS]]",
	"--check-config [-c FILE]",
	"--list-dead [--changes] [-c FILE]",
	"--requeue [--changes] [-c FILE] [--dry-run] [ID...] [--provider P] "
	"[--since TIME] [--until TIME] [--error TEXT] [--include-skipped]",
	"--redeliver [--changes] [-c FILE] [--dry-run] ID...",
	"--pause | --resume [-c FILE]",
	"--show [--changes] [-c FILE] ID",
	"--send-alert [-c FILE] [--from NAME] EVENT SUMMARY ACTION [DETAIL]",
	"--version | --help",
	NULL,
};

static const struct options_program program = {
	.name = PROGRAM,
	.forms = forms,
	.about =
		"Hands every payment payhook recorded on to dispatch_url (HTTP\n"
		"POST) or dispatch_command, at least once, with the header\n"
		"Idempotency-Key: payhook:<provider>:<transaction_id> (the same on\n"
		"every attempt), retrying with back-off until delivered or dead;\n"
		"then each change of its refunds, disputes and cancellations, in\n"
		"order, keyed ...:<kind>:<object_id>:<state>[:<n>].\n"
		"Runs until SIGTERM. The configuration file comes from -c, else\n"
		"$PAYHOOK_CONFIG; every key can be overridden by PAYHOOK_<KEY>.\n",
	.entries = entries,
	.count = sizeof(entries) / sizeof(entries[0]),
};

/* The command line, as read. */
struct cmdline {
	const char *path, *from;
	int mode;
	bool dry_run, once, filtered;
	uint64_t once_s;
	struct handoff_admin_selection sel;
	char since[DISPATCH_ADMIN_TIME_MAX], until[DISPATCH_ADMIN_TIME_MAX];
};

/* One option (options_parse's take). */
static int take_option(void *ctx, int val, const char *arg)
{
	struct cmdline *c = ctx;

	switch (val) {
	case 'c':
		c->path = arg;
		break;
	case OPT_ONCE:
		c->once = true;
		if (arg != NULL &&
		    (number_parse(arg, ONCE_MAX_S, &c->once_s) != NUMBER_OK ||
		     c->once_s == 0)) {
			fprintf(stderr, PROGRAM ": --once=SECONDS takes 1 to "
				"%d\n", ONCE_MAX_S);
			return OPTIONS_EXIT_USAGE;
		}
		break;
	case OPT_FROM:
		c->from = arg;
		break;
	case OPT_PROVIDER:
		c->sel.provider = arg;
		c->filtered = true;
		break;
	case OPT_SINCE:
	case OPT_UNTIL:
		if (!dispatch_admin_time_arg(val == OPT_SINCE ? "since" : "until",
					     arg, val == OPT_SINCE ? c->since
								   : c->until))
			return OPTIONS_EXIT_USAGE;
		if (val == OPT_SINCE)
			c->sel.since = c->since;
		else
			c->sel.until = c->until;
		c->filtered = true;
		break;
	case OPT_INCLUDE_SKIPPED:
		c->sel.include_skipped = true;
		break;
	case OPT_ERROR:
		c->sel.error = arg;
		c->filtered = true;
		break;
	case OPT_DRY_RUN:
		c->dry_run = true;
		break;
	case OPT_CHANGES:
		c->sel.changes = true;
		break;
	default: /* a mode */
		if (c->mode != MODE_DISPATCH && c->mode != val) {
			fprintf(stderr, PROGRAM ": --check-config, --list-dead, "
				"--requeue, --redeliver, --pause, --resume, "
				"--show and --send-alert exclude each other\n");
			return OPTIONS_EXIT_USAGE;
		}
		c->mode = val;
		break;
	}
	return OPTIONS_GO_ON;
}

/* The options that go with the mode only, and its operands. Returns
 * OPTIONS_GO_ON, or the exit status after the message or the usage. */
static int check_combination(const struct cmdline *c, int operands)
{
	int m = c->mode;
	bool takes_ids = m == MODE_REQUEUE || m == MODE_REDELIVER ||
			 m == MODE_SEND_ALERT || m == MODE_SHOW;

	if (c->sel.since != NULL && c->sel.until != NULL &&
	    strcmp(c->sel.since, c->sel.until) >= 0) {
		fprintf(stderr, PROGRAM ": --since must come before --until: "
			"the range %s to %s is empty\n", c->sel.since,
			c->sel.until);
		return OPTIONS_EXIT_USAGE;
	}
	if ((operands > 0 && !takes_ids) ||
	    (c->from != NULL && m != MODE_SEND_ALERT) ||
	    ((c->filtered || c->sel.include_skipped) && m != MODE_REQUEUE) ||
	    (c->dry_run && m != MODE_REQUEUE && m != MODE_REDELIVER) ||
	    (c->sel.changes && m != MODE_LIST_DEAD && m != MODE_REQUEUE &&
	     m != MODE_REDELIVER && m != MODE_SHOW) ||
	    (c->once && m != MODE_DISPATCH))
		return options_usage_error(&program, NULL);
	return OPTIONS_GO_ON;
}

/* The configuration, and the log it names (--check-config creates
 * nothing: its log lines go to standard error). Returns 0, or -1 with
 * the reason said (nothing to clean up). */
static int load(const struct cmdline *c, struct config *cfg)
{
	struct error err = { "" };

	if (config_load(cfg, c->path, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return -1;
	}
	log_init(PROGRAM, cfg->log_level);
	if (c->mode != MODE_CHECK_CONFIG && cfg->log_file != NULL &&
	    log_open_file(cfg->log_file, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		config_cleanup(cfg);
		return -1;
	}
	/* Until it runs, what stops it is said on stderr too (the
	 * journal). */
	log_echo_errors(true);
	return 0;
}

/* --check-config and the operators' commands (dispatch_admin.h), with the
 * operands ids[0..n). Returns the exit status. */
static int run_command(struct cmdline *c, const struct config *cfg,
		       char **ids, size_t n)
{
	switch (c->mode) {
	case MODE_CHECK_CONFIG:
		return dispatch_check_config(cfg, c->path);
	case MODE_LIST_DEAD:
		return dispatch_admin_list_dead(cfg, c->sel.changes);
	case MODE_REQUEUE:
	case MODE_REDELIVER:
		return dispatch_admin_change_rows(
			cfg, c->mode == MODE_REQUEUE ? HANDOFF_ADMIN_REQUEUE
						     : HANDOFF_ADMIN_REDELIVER,
			ids, n, &c->sel, c->dry_run);
	case MODE_PAUSE:
	case MODE_RESUME:
		return dispatch_admin_set_paused(cfg, c->mode == MODE_PAUSE);
	case MODE_SHOW:
		return dispatch_admin_show(cfg, c->sel.changes, ids, n);
	default:
		return dispatch_admin_send_alert(
			cfg, c->from != NULL ? c->from : PROGRAM, ids, n);
	}
}

/* Delivery: one dispatcher (with --once, within its time), or a master of
 * dispatch_concurrency of them, whose titles take argv's memory. Returns
 * the exit status. */
static int run_dispatch(const struct cmdline *c, const struct config *cfg,
			int argc, char **argv)
{
	struct error err = { "" };
	int rc;

	if (handoff_check_config(cfg, &err) != 0 ||
	    handoff_store_check_config(cfg, &err) != 0 ||
	    alert_check_config(cfg, &err) != 0 ||
	    transport_pick_global_init(&err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return 1;
	}
	if (cfg->dispatch_concurrency > 1 && !c->once) {
		/* Nothing points into argv's strings any more (the path is
		 * a copy): they become the process titles. */
		pool_title_init(argc, argv);
		rc = dispatch_master_run(cfg, c->path);
	} else {
		rc = dispatch_worker_run(cfg, -1, c->once,
					 c->once ? timing_now_us() +
							   (int64_t)c->once_s *
								   1000000
						 : 0);
	}
	transport_pick_global_cleanup();
	return rc;
}

int main(int argc, char **argv)
{
	struct cmdline c = { .once_s = ONCE_DEFAULT_S };
	struct config cfg;
	struct error err = { "" };
	char *resolved = NULL;
	int rc = options_parse(&program, argc, argv, take_option, &c);

	if (rc == OPTIONS_GO_ON)
		rc = check_combination(&c, argc - optind);
	if (rc != OPTIONS_GO_ON)
		return rc;
	/* A copy: the process title overwrites argv and the environment,
	 * and --send-alert is given the path after that. */
	if (config_resolve_path(c.path, &resolved, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return 1;
	}
	c.path = resolved;
	if (load(&c, &cfg) != 0) {
		free(resolved);
		return 1;
	}
	if (c.mode != MODE_DISPATCH)
		rc = run_command(&c, &cfg, argv + optind,
				 (size_t)(argc - optind));
	else
		rc = run_dispatch(&c, &cfg, argc, argv);
	config_cleanup(&cfg);
	free(resolved);
	return rc;
}
