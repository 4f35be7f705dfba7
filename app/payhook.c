/* payhook.c - the program: a FastCGI worker (app/worker.c) by default, the
 * master of a pool of workers with --workers N (app/master.c), or one of the
 * operator's commands: --check-config, --stats, --version.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "configuration.h"
#include "lock.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "number.h"
#include "pipeline.h"
#include "pool.h"
#include "sharedfile.h"
#include "sqlconn.h"
#include "status.h"
#include "timing.h"
#include "worker.h"

/* Redis for --check-config: each sentinel's answer, then the server in use
 * (with its ROLE when found through the sentinels). Down is a warning when
 * the configuration records without it (db_only), an error under fail. */
static int check_redis(const struct config *cfg)
{
	struct error err = { "" };
	struct lock_client *lock;
	char line[ERROR_MESSAGE_MAX + 128];
	int rc = 0;

	if (cfg->lock_backend == CONFIG_LOCK_NONE) {
		printf("redis: not used (lock_backend = none: the unique key "
		       "alone keeps each payment once)\n");
		return 0;
	}
	lock = lock_client_new(cfg, &err);
	if (lock == NULL) {
		printf("redis: FAILED: %s\n", err.message);
		return 1;
	}
	for (size_t i = 0; i < lock_sentinel_count(lock); i++) {
		int ok = lock_probe_sentinel(lock, i, line, sizeof(line)) == 0;

		printf("redis: %s%s\n", ok ? "" : "WARNING: ", line);
	}
	if (lock_describe(lock, line, sizeof(line)) == 0) {
		printf("redis: ok (%s)\n", line);
		if (lock_eviction_warning(lock, line, sizeof(line)) != 0)
			printf("redis: WARNING: %s\n", line);
	} else if (cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_DB_ONLY) {
		printf("redis: WARNING: %s (redis_unavailable = db_only: "
		       "payments are recorded without the lock)\n", line);
	} else {
		printf("redis: FAILED: %s\n", line);
		rc = 1;
	}
	lock_client_free(lock);
	return rc;
}

/* Opens path as a worker will (sharedfile_check): nothing is created (run
 * as root, the file would be root's and the workers could not open it).
 * Returns 0, or 1 with a FAILED line printed. */
static int check_file(const char *key, const char *path, int flags)
{
	struct error err;

	if (sharedfile_check(path, flags, &err) == 0)
		return 0;
	printf("config: FAILED: %s %s\n", key, err.message);
	return 1;
}

/* A check that succeeded but took longer than a worker waits: the worker
 * would have answered 503 (a loaded machine, a slow server). */
static void report_slow(const char *what, int64_t elapsed_ms, long bound_ms,
			const char *keys)
{
	if (elapsed_ms > bound_ms)
		printf("%s: WARNING: the check took %lld ms, more than a worker "
		       "waits (%ld ms, %s)\n", what, (long long)elapsed_ms,
		       bound_ms, keys);
}

/* With an alert key set: payhook-dispatch beside this program, which
 * payhook --workers runs to send its alerts. A note, not a failure: only a
 * pool sends alerts, and it serves without them. */
static void check_alert_sender(const struct config *cfg)
{
	char self[PATH_MAX], sender[PATH_MAX];
	ssize_t n;

	if (!config_alerts_set(cfg))
		return;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	if (master_alert_sender(self, sender, sizeof(sender)) == 0)
		printf("alert: ok (payhook --workers sends its alerts with "
		       "%s)\n", sender);
	else
		printf("alert: WARNING: payhook --workers sends its alerts with "
		       "payhook-dispatch, which is not at %s: install it there, "
		       "or the pool's alerts fail\n", sender);
}

/* --check-config: one line per check, and every check that fails says so on
 * a FAILED line. The backends are asked with timeouts of at least
 * CHECK_TIMEOUT_S: a server slowed down for a moment (a loaded machine) is
 * not a configuration error; a check slower than the workers' own timeouts
 * gets a WARNING line instead. */
#define CHECK_TIMEOUT_S 10
static int check_config(const struct config *cfg, const char *path)
{
	struct config patient = *cfg; /* shares cfg's strings: never cleaned */
	struct error err = { "" };
	struct pipeline *pipeline;
	char line[ERROR_MESSAGE_MAX];
	struct stat st;
	int64_t t0;
	int rc = 0;

	if (cfg->log_file != NULL)
		rc |= check_file("log_file", cfg->log_file, O_WRONLY | O_APPEND);
	if (cfg->metrics_file != NULL)
		rc |= check_file("metrics_file", cfg->metrics_file, O_RDWR);
	if (rc == 0 && path != NULL)
		printf("config: ok (%s)\n", path);
	else if (rc == 0)
		printf("config: ok (no configuration file is read: defaults and "
		       "environment only; -c FILE or PAYHOOK_CONFIG names "
		       "one)\n");
	if (path != NULL && stat(path, &st) == 0 && (st.st_mode & S_IROTH) != 0)
		printf("config: WARNING: %s is readable by every user; it "
		       "holds secrets: chmod o-r\n", path);
	for (size_t i = 0; config_warning(cfg, i, line, sizeof(line)) == 0; i++)
		printf("config: WARNING: %s\n", line);
	check_alert_sender(cfg);
	if (patient.mysql_connect_timeout_s < CHECK_TIMEOUT_S)
		patient.mysql_connect_timeout_s = CHECK_TIMEOUT_S;
	if (patient.mysql_read_timeout_s < CHECK_TIMEOUT_S)
		patient.mysql_read_timeout_s = CHECK_TIMEOUT_S;
	if (patient.mysql_write_timeout_s < CHECK_TIMEOUT_S)
		patient.mysql_write_timeout_s = CHECK_TIMEOUT_S;
	if (patient.redis_timeout_ms < CHECK_TIMEOUT_S * 1000)
		patient.redis_timeout_ms = CHECK_TIMEOUT_S * 1000;
	pipeline = pipeline_new(&patient, &err);
	if (pipeline == NULL) {
		printf("config: FAILED: %s\n", err.message);
		return 1;
	}
	t0 = timing_now_us();
	rc |= check_redis(&patient);
	report_slow("redis", (timing_now_us() - t0) / 1000,
		    cfg->redis_timeout_ms, "redis_timeout_ms");
	/* A node that is down is a warning (the workers move on to the
	 * next); the schema check below fails when none takes writes. */
	sqlconn_report_nodes(&patient, stdout);
	t0 = timing_now_us();
	if (pipeline_check_mysql(pipeline, &err) != 0) {
		printf("mysql: FAILED: %s\n", err.message);
		rc = 1;
	} else {
		printf("mysql: ok (%s, table payments with "
		       "uq_payments_provider_transaction_id)\n",
		       sqlconn_where(cfg));
		report_slow("mysql", (timing_now_us() - t0) / 1000,
			    1000L * cfg->mysql_connect_timeout_s,
			    "mysql_connect_timeout_s");
	}
	pipeline_free(pipeline);
	return rc;
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

static void usage(FILE *to)
{
	fprintf(to,
		"usage: payhook [-c FILE] [--max-requests N]\n"
		"       payhook --workers N [--listen PATH|HOST:PORT] "
		"[--socket-mode MODE]\n"
		"               [--socket-user USER] [--socket-group GROUP]\n"
		"               [--user USER] [--group GROUP]\n"
		"               [-c FILE] [--max-requests N]\n"
		"       payhook --test-config [-c FILE]\n"
		"       payhook --check-config [-c FILE]\n"
		"       payhook --stats [-c FILE]\n"
		"       payhook --version | --help\n"
		"\n"
		"A FastCGI worker that records each payment webhook exactly once.\n"
		"Started by spawn-fcgi, lighttpd (bin-path) or mod_fcgid; run as\n"
		"plain CGI it serves one request. With --workers N it is a master\n"
		"that keeps N workers on the listening socket (descriptor 0, a\n"
		"systemd socket, or --listen): SIGHUP reloads the configuration,\n"
		"SIGUSR2 re-executes the program file, SIGTERM stops the pool.\n"
		"The configuration file comes from -c, else $PAYHOOK_CONFIG; every\n"
		"key can be overridden by PAYHOOK_<KEY>.\n");
}

static int usage_error(const char *message)
{
	fprintf(stderr, "payhook: %s\n", message);
	usage(stderr);
	return 2;
}

/* Parses the command line. Returns -1 to go on, or the exit status (after
 * --version, --help or a usage error). */
static int parse_options(int argc, char **argv, const char **path, int *mode,
			 unsigned long *max_requests,
			 struct master_options *master)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "test-config", no_argument, NULL, 'T' },
		{ "stats", no_argument, NULL, 'S' },
		{ "max-requests", required_argument, NULL, 'm' },
		{ "workers", required_argument, NULL, 'w' },
		{ "listen", required_argument, NULL, 'l' },
		{ "socket-mode", required_argument, NULL, 'M' },
		{ "socket-user", required_argument, NULL, 'U' },
		{ "socket-group", required_argument, NULL, 'G' },
		{ "user", required_argument, NULL, 'u' },
		{ "group", required_argument, NULL, 'g' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t count;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			*path = optarg;
			break;
		case 'C':
		case 'T':
		case 'S':
			*mode = opt;
			break;
		case 'm':
			if (number_parse(optarg, ULONG_MAX, &count) != NUMBER_OK ||
			    count == 0)
				return usage_error("--max-requests needs a "
						   "positive number");
			*max_requests = (unsigned long)count;
			break;
		case 'w':
			if (number_parse(optarg, POOL_MAX, &count) != NUMBER_OK ||
			    count == 0)
				return usage_error("--workers needs a number "
						   "from 1 to 1024");
			master->workers = (unsigned)count;
			break;
		case 'l':
			master->listen = optarg;
			break;
		case 'M':
			if (strlen(optarg) > 4 ||
			    strspn(optarg, "01234567") != strlen(optarg) ||
			    optarg[0] == '\0')
				return usage_error("--socket-mode needs an octal "
						   "mode such as 0660");
			master->socket_mode = (unsigned)strtoul(optarg, NULL, 8);
			break;
		case 'U':
			master->socket_user = optarg;
			break;
		case 'G':
			master->socket_group = optarg;
			break;
		case 'u':
			master->user = optarg;
			break;
		case 'g':
			master->group = optarg;
			break;
		case 'V':
			printf("payhook %s\n", PACKAGE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc)
		return usage_error("unexpected argument");
	if (master->listen != NULL && master->workers == 0)
		return usage_error("--listen needs --workers");
	if ((master->socket_user != NULL || master->socket_group != NULL) &&
	    master->listen == NULL)
		return usage_error("--socket-user and --socket-group need "
				   "--listen PATH");
	if ((master->user != NULL || master->group != NULL) &&
	    master->workers == 0)
		return usage_error("--user and --group need --workers");
	return -1;
}

int main(int argc, char **argv)
{
	struct master_options master = { .socket_mode = 0660 };
	const char *path = NULL;
	char *resolved = NULL;
	char program[PATH_MAX];
	char **saved_argv, **args;
	int mode = 0, rc;
	unsigned long max_requests = 0;
	struct config cfg;
	struct error err = { "" };
	ssize_t n;

	/* The process title overwrites argv's strings, and getopt reorders
	 * argv: the options are parsed from copies (args, after the NULL
	 * that ends saved_argv), and an upgrade re-executes saved_argv. */
	saved_argv = calloc(2 * ((size_t)argc + 1), sizeof(char *));
	if (saved_argv == NULL) {
		fprintf(stderr, "payhook: out of memory\n");
		return 1;
	}
	args = saved_argv + argc + 1;
	for (int i = 0; i < argc; i++) {
		saved_argv[i] = strdup(argv[i]);
		if (saved_argv[i] == NULL) {
			fprintf(stderr, "payhook: out of memory\n");
			return 1;
		}
		args[i] = saved_argv[i];
	}
	rc = parse_options(argc, args, &path, &mode, &max_requests, &master);
	if (rc >= 0) {
		free_argv(saved_argv);
		return rc;
	}
	/* One path for the start, the reloads, the upgrade's check and the
	 * alerts: a copy, as the process title overwrites the environment. */
	if (config_resolve_path(path, &resolved, &err) != 0) {
		fprintf(stderr, "payhook: %s\n", err.message);
		free_argv(saved_argv);
		return 1;
	}
	path = resolved;
	if (mode == 'C') {
		/* Each line as it is printed, in order with the log lines on
		 * standard error, whatever ends the process. */
		setvbuf(stdout, NULL, _IOLBF, 0);
	}
	if (pipeline_load_config(&cfg, path, &err) != 0) {
		if (mode == 'C')
			printf("config: FAILED: %s\n", err.message);
		else
			fprintf(stderr, "payhook: %s\n", err.message);
		free_argv(saved_argv);
		free(resolved);
		return 1;
	}
	if (mode == 'T') {
		/* The master's upgrade asks this of the new binary: every
		 * check a worker makes before it serves. */
		rc = worker_check(&cfg, &err);
		if (rc != 0)
			fprintf(stderr, "payhook: %s\n", err.message);
		config_cleanup(&cfg);
		free_argv(saved_argv);
		free(resolved);
		return rc != 0 ? 1 : 0;
	}
	if (mode == 'C' || mode == 'S') {
		log_init("payhook", cfg.log_level);
		rc = mode == 'C' ? check_config(&cfg, path) : print_stats(&cfg);
		config_cleanup(&cfg);
		free_argv(saved_argv);
		free(resolved);
		return rc;
	}
	if (setup_logging(&cfg) != 0) {
		config_cleanup(&cfg);
		free_argv(saved_argv);
		free(resolved);
		return 1;
	}
	{
		char line[ERROR_MESSAGE_MAX];

		for (size_t i = 0;
		     config_warning(&cfg, i, line, sizeof(line)) == 0; i++)
			log_warn("config: %s", line);
	}
	if (master.workers > 0) {
		n = readlink("/proc/self/exe", program, sizeof(program) - 1);
		if (n <= 0) {
			fprintf(stderr, "payhook: cannot find the program file: "
				"%s\n", strerror(errno));
			config_cleanup(&cfg);
			free_argv(saved_argv);
			free(resolved);
			return 1;
		}
		program[n] = '\0';
		master.config_path = path;
		master.max_requests = max_requests;
		master.argv = saved_argv;
		master.program = program;
		/* Titles "payhook: master" and "payhook: worker" in ps. */
		pool_title_init(argc, argv);
		/* The master takes cfg over (and frees it). */
		rc = master_run(&master, &cfg);
		free_argv(saved_argv);
		free(resolved);
		return rc;
	}
	free_argv(saved_argv);
	free(resolved);
	{
		struct metrics *metrics = NULL;

		/* Independent workers share counters only through a file. */
		if (cfg.metrics_file != NULL) {
			metrics = metrics_open_file(cfg.metrics_file, &err);
			if (metrics == NULL)
				log_warn("metrics: %s", err.message);
		}
		rc = worker_run(&cfg, metrics, max_requests, -1);
		metrics_free(metrics);
	}
	config_cleanup(&cfg);
	return rc;
}
