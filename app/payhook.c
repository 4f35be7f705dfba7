/* payhook.c - the program: a FastCGI worker (app/worker.c) by default, the
 * master of a pool of workers with --workers N (app/master.c), or one of the
 * operator's commands: --check-config (app/check.c), --test-config, --stats,
 * --version. The command line is its option table (options.h).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "configuration.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "number.h"
#include "options.h"
#include "pipeline.h"
#include "pool.h"
#include "status.h"
#include "worker.h"

enum {
	MODE_SERVE = 0,
	MODE_CHECK_CONFIG = 256,
	MODE_TEST_CONFIG,
	MODE_STATS,
	OPT_MAX_REQUESTS,
	OPT_WORKERS,
	OPT_LISTEN,
	OPT_SOCKET_MODE,
	OPT_SOCKET_USER,
	OPT_SOCKET_GROUP,
	OPT_USER,
	OPT_GROUP,
};

static const struct options_entry entries[] = {
	OPTIONS_ENTRY_CONFIG,
	{ "max-requests", required_argument, OPT_MAX_REQUESTS, "N",
	  "a worker exits after N requests (its master or spawner starts "
	  "another)" },
	{ "workers", required_argument, OPT_WORKERS, "N",
	  "run as a pool's master with N workers (1 to 1024)" },
	{ "listen", required_argument, OPT_LISTEN, "PATH|HOST:PORT",
	  "with --workers: the socket the pool listens on, a Unix socket "
	  "path or a TCP address (else the socket systemd passes, or "
	  "descriptor 0)" },
	{ "socket-mode", required_argument, OPT_SOCKET_MODE, "MODE",
	  "the octal mode of the Unix socket of --listen (default 0660)" },
	{ "socket-user", required_argument, OPT_SOCKET_USER, "USER",
	  "the owner of the Unix socket of --listen" },
	{ "socket-group", required_argument, OPT_SOCKET_GROUP, "GROUP",
	  "the group of the Unix socket of --listen" },
	{ "user", required_argument, OPT_USER, "USER",
	  "with --workers, started as root: the workers' user" },
	{ "group", required_argument, OPT_GROUP, "GROUP",
	  "with --workers, started as root: the workers' group (default: "
	  "the user's)" },
	{ "test-config", no_argument, MODE_TEST_CONFIG, NULL,
	  "load the configuration and run every check a worker makes before "
	  "it serves, connecting to nothing" },
	{ "check-config", no_argument, MODE_CHECK_CONFIG, NULL,
	  "load the configuration and check Redis, MySQL and the schema, "
	  "one line a check" },
	{ "stats", no_argument, MODE_STATS, NULL,
	  "print the pool's counters (from metrics_file)" },
	OPTIONS_ENTRY_VERSION,
	OPTIONS_ENTRY_HELP,
};

static const char *const forms[] = {
	"[-c FILE] [--max-requests N]",
	"--workers N [--listen PATH|HOST:PORT] [--socket-mode MODE] "
	"[--socket-user USER] [--socket-group GROUP] [--user USER] "
	"[--group GROUP] [-c FILE] [--max-requests N]",
	"--test-config [-c FILE]",
	"--check-config [-c FILE]",
	"--stats [-c FILE]",
	"--version | --help",
	NULL,
};

static const struct options_program program = {
	.name = "payhook",
	.forms = forms,
	.about =
		"A FastCGI worker that records each payment webhook exactly once.\n"
		"Started by spawn-fcgi, lighttpd (bin-path) or mod_fcgid; run as\n"
		"plain CGI it serves one request. With --workers N it is a master\n"
		"that keeps N workers on the listening socket (descriptor 0, a\n"
		"systemd socket, or --listen): SIGHUP reloads the configuration,\n"
		"SIGUSR2 re-executes the program file, SIGTERM stops the pool.\n"
		"The configuration file comes from -c, else $PAYHOOK_CONFIG; every\n"
		"key can be overridden by PAYHOOK_<KEY>.\n",
	.entries = entries,
	.count = sizeof(entries) / sizeof(entries[0]),
};

/* The command line, as read. */
struct cmdline {
	const char *path;
	int mode;
	unsigned long max_requests;
	struct master_options master;
};

/* One option (options_parse's take). */
static int take_option(void *ctx, int val, const char *arg)
{
	struct cmdline *c = ctx;
	uint64_t count;

	switch (val) {
	case 'c':
		c->path = arg;
		break;
	case OPT_MAX_REQUESTS:
		if (number_parse(arg, ULONG_MAX, &count) != NUMBER_OK ||
		    count == 0)
			return options_usage_error(&program, "--max-requests "
						   "needs a positive number");
		c->max_requests = (unsigned long)count;
		break;
	case OPT_WORKERS:
		if (number_parse(arg, POOL_MAX, &count) != NUMBER_OK ||
		    count == 0)
			return options_usage_error(&program, "--workers needs "
						   "a number from 1 to 1024");
		c->master.workers = (unsigned)count;
		break;
	case OPT_LISTEN:
		c->master.listen = arg;
		break;
	case OPT_SOCKET_MODE:
		if (strlen(arg) > 4 || arg[0] == '\0' ||
		    strspn(arg, "01234567") != strlen(arg))
			return options_usage_error(&program, "--socket-mode "
						   "needs an octal mode such "
						   "as 0660");
		c->master.socket_mode = (unsigned)strtoul(arg, NULL, 8);
		break;
	case OPT_SOCKET_USER:
		c->master.socket_user = arg;
		break;
	case OPT_SOCKET_GROUP:
		c->master.socket_group = arg;
		break;
	case OPT_USER:
		c->master.user = arg;
		break;
	case OPT_GROUP:
		c->master.group = arg;
		break;
	default: /* a mode */
		c->mode = val;
		break;
	}
	return OPTIONS_GO_ON;
}

/* The options that need another. Returns OPTIONS_GO_ON, or the exit
 * status after the message and the usage. */
static int check_combination(const struct cmdline *c, int operands)
{
	const struct master_options *m = &c->master;
	const char *why = NULL;

	if (operands > 0)
		why = "unexpected argument";
	else if (m->listen != NULL && m->workers == 0)
		why = "--listen needs --workers";
	else if ((m->socket_user != NULL || m->socket_group != NULL) &&
		 m->listen == NULL)
		why = "--socket-user and --socket-group need --listen PATH";
	else if ((m->user != NULL || m->group != NULL) && m->workers == 0)
		why = "--user and --group need --workers";
	return why != NULL ? options_usage_error(&program, "%s", why)
			   : OPTIONS_GO_ON;
}

/* --stats: the counters in metrics_file, as metrics_path serves them. */
static int print_stats(const struct config *cfg)
{
	struct error err;
	struct metrics *m;
	char *text;
	long len;

	if (cfg->metrics_file == NULL) {
		fprintf(stderr, "payhook: --stats reads metrics_file: set it "
			"(the pool's workers then count there)\n");
		return 1;
	}
	m = metrics_open_file(cfg->metrics_file, &err);
	if (m == NULL) {
		fprintf(stderr, "payhook: %s\n", err.message);
		return 1;
	}
	text = malloc(STATUS_RENDER_MAX);
	len = text != NULL ? status_render(m, cfg, text, STATUS_RENDER_MAX) : -1;
	if (len >= 0)
		fwrite(text, 1, (size_t)len, stdout);
	free(text);
	metrics_free(m);
	return len >= 0 && fflush(stdout) == 0 ? 0 : 1;
}

/* Log lines go where the configuration says; a file that cannot be opened
 * is said on standard error (where spawn-fcgi or systemd shows it). */
static int setup_logging(const struct config *cfg)
{
	struct error err;

	log_init("payhook", cfg->log_level);
	log_set_format(cfg->log_format);
	if (cfg->log_target == CONFIG_LOG_TARGET_SYSLOG) {
		log_open_syslog();
	} else if (cfg->log_file != NULL && log_open_file(cfg->log_file, &err) != 0) {
		fprintf(stderr, "payhook: cannot start: %s\n", err.message);
		return -1;
	}
	return 0;
}

/* Frees main's copy of argv: the strings up to its NULL, and the array. */
static void free_argv(char **argv)
{
	for (size_t i = 0; argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
}

/* The configuration warnings, logged; then the pool's master (which takes
 * cfg over) or one worker. saved_argv is what an upgrade re-executes.
 * Returns the exit status. */
static int serve(struct cmdline *c, struct config *cfg, char **saved_argv,
		 int argc, char **argv)
{
	char line[ERROR_MESSAGE_MAX], program_path[PATH_MAX];
	struct metrics *metrics = NULL;
	struct error err = { "" };
	ssize_t n;
	int rc;

	for (size_t i = 0; config_warning(cfg, i, line, sizeof(line)) == 0; i++)
		log_warn("config: %s", line);
	if (c->master.workers > 0) {
		n = readlink("/proc/self/exe", program_path,
			     sizeof(program_path) - 1);
		if (n <= 0) {
			fprintf(stderr, "payhook: cannot find the program file: "
				"%s\n", strerror(errno));
			config_cleanup(cfg);
			return 1;
		}
		program_path[n] = '\0';
		c->master.config_path = c->path;
		c->master.max_requests = c->max_requests;
		c->master.argv = saved_argv;
		c->master.program = program_path;
		/* Titles "payhook: master" and "payhook: worker" in ps. */
		pool_title_init(argc, argv);
		return master_run(&c->master, cfg);
	}
	/* Independent workers share counters only through a file. */
	if (cfg->metrics_file != NULL) {
		metrics = metrics_open_file(cfg->metrics_file, &err);
		if (metrics == NULL)
			log_warn("metrics: %s", err.message);
	}
	rc = worker_run(cfg, metrics, c->max_requests, -1);
	metrics_free(metrics);
	config_cleanup(cfg);
	return rc;
}

/* The configuration (from c->path, resolved), then the mode. Returns the
 * exit status. */
static int run(struct cmdline *c, char **saved_argv, int argc, char **argv)
{
	struct config cfg;
	struct error err = { "" };
	char *resolved = NULL;
	int rc;

	/* One path for the start, the reloads, the upgrade's check and the
	 * alerts: a copy, as the process title overwrites the environment. */
	if (config_resolve_path(c->path, &resolved, &err) != 0) {
		fprintf(stderr, "payhook: %s\n", err.message);
		return 1;
	}
	c->path = resolved;
	/* --check-config: each line as it is printed, in order with the log
	 * lines on standard error, whatever ends the process. */
	if (c->mode == MODE_CHECK_CONFIG)
		setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipeline_load_config(&cfg, c->path, &err) != 0) {
		if (c->mode == MODE_CHECK_CONFIG)
			printf("config: FAILED: %s\n", err.message);
		else
			fprintf(stderr, "payhook: %s\n", err.message);
		free(resolved);
		return 1;
	}
	if (c->mode == MODE_TEST_CONFIG) {
		/* The master's upgrade asks this of the new binary: every
		 * check a worker makes before it serves. */
		rc = worker_check(&cfg, &err) != 0 ? 1 : 0;
		if (rc != 0)
			fprintf(stderr, "payhook: %s\n", err.message);
		config_cleanup(&cfg);
	} else if (c->mode != MODE_SERVE) {
		log_init("payhook", cfg.log_level);
		rc = c->mode == MODE_CHECK_CONFIG ? check_config(&cfg, c->path)
						  : print_stats(&cfg);
		config_cleanup(&cfg);
	} else if (setup_logging(&cfg) != 0) {
		config_cleanup(&cfg);
		rc = 1;
	} else {
		rc = serve(c, &cfg, saved_argv, argc, argv);
	}
	free(resolved);
	return rc;
}

/* A copy of argv (the strings and the array), and after its NULL the
 * array again for getopt to reorder. NULL when out of memory. */
static char **copy_argv(int argc, char **argv)
{
	char **copy = calloc(2 * ((size_t)argc + 1), sizeof(char *));

	for (int i = 0; copy != NULL && i < argc; i++) {
		copy[i] = strdup(argv[i]);
		if (copy[i] == NULL) {
			free_argv(copy);
			return NULL;
		}
		copy[argc + 1 + i] = copy[i];
	}
	return copy;
}

int main(int argc, char **argv)
{
	struct cmdline c = { .master = { .socket_mode = 0660 } };
	/* The process title overwrites argv's strings, and getopt reorders
	 * argv: the options are read from a copy, and an upgrade
	 * re-executes the copy's first half. */
	char **saved_argv = copy_argv(argc, argv);
	int rc;

	if (saved_argv == NULL) {
		fprintf(stderr, "payhook: out of memory\n");
		return 1;
	}
	rc = options_parse(&program, argc, saved_argv + argc + 1, take_option,
			   &c);
	if (rc == OPTIONS_GO_ON)
		rc = check_combination(&c, argc - optind);
	if (rc == OPTIONS_GO_ON)
		rc = run(&c, saved_argv, argc, argv);
	free_argv(saved_argv);
	return rc;
}
