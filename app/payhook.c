/* payhook.c - the FastCGI worker: a libfcgi accept loop that hands each
 * request to the pipeline and writes the answer. Run as plain CGI it serves
 * the one request in its environment and exits.
 *
 * SIGTERM and SIGINT ask for a clean stop: the request in hand is finished
 * (its lock released, its answer written), an idle worker leaves accept() at
 * once, and the process exits 0. SIGHUP reopens log_file (for logrotate)
 * before the next request; a stopped worker would never come back under
 * spawn-fcgi, which does not replace workers.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "configuration.h"
#include "log.h"
#include "number.h"
#include "pipeline.h"
#include "response.h"

extern char **environ;

/* The FastCGI spec hands a worker its listening socket as descriptor 0. */
#define LISTEN_FD 0

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t reopen_log;
static int devnull_fd = -1;

/* Stops accepting: the listening socket's descriptor is replaced by /dev/null,
 * so an accept() that is blocked (restarted after this handler) or about to
 * start fails at once, while the connection of a request in hand stays open. */
static void on_stop_signal(int signo)
{
	int saved_errno = errno;

	stop_requested = 1;
	stop_signal = signo;
	if (devnull_fd >= 0)
		dup2(devnull_fd, LISTEN_FD);
	errno = saved_errno;
}

static void on_hangup(int signo)
{
	(void)signo;
	reopen_log = 1;
}

static int install_signals(void)
{
	struct sigaction sa;
	const int stop_signals[] = { SIGTERM, SIGINT };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	/* A client that went away must not kill the worker. */
	if (sigaction(SIGPIPE, &sa, NULL) != 0)
		return -1;
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART; /* backend I/O of the request in hand goes on */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++) {
		if (sigaction(stop_signals[i], &sa, NULL) != 0)
			return -1;
	}
	sa.sa_handler = on_hangup;
	return sigaction(SIGHUP, &sa, NULL);
}

/* ---- body readers for the two ways a request arrives ---- */

static long read_fcgi_body(void *ctx, char *buf, size_t cap)
{
	FCGX_Stream *in = ctx;
	int want = cap > 65536 ? 65536 : (int)cap;

	return FCGX_GetStr(buf, want, in);
}

static long read_stdin_body(void *ctx, char *buf, size_t cap)
{
	size_t n;

	(void)ctx;
	n = fread(buf, 1, cap, stdin);
	if (n == 0 && ferror(stdin))
		return -1;
	return (long)n;
}

/* Renders result; on a rendering failure (a bug) falls back to a fixed 500. */
static long render(const struct result *result, const struct config *cfg,
		   char *buf, size_t cap)
{
	static const char fallback[] =
		"Status: 500 Internal Server Error\r\n"
		"Content-Type: application/json\r\n\r\n"
		"{\"result\":\"error\",\"reason\":\"response rendering failed\"}\n";
	struct error err;
	long len = response_render(result, cfg, buf, cap, &err);

	if (len < 0) {
		log_error("%s", err.message);
		memcpy(buf, fallback, sizeof(fallback));
		len = (long)sizeof(fallback) - 1;
	}
	return len;
}

static int serve_cgi(struct pipeline *pipeline, const struct config *cfg)
{
	struct request req = { .read_body = read_stdin_body };
	struct result result;
	char out[RESPONSE_BUFFER_SIZE];
	long len;

	req.params = environ;
	pipeline_handle(pipeline, &req, &result);
	len = render(&result, cfg, out, sizeof(out));
	if (fwrite(out, 1, (size_t)len, stdout) != (size_t)len || fflush(stdout) != 0)
		log_warn("writing the CGI response failed: %s", strerror(errno));
	return 0;
}

static int serve_fastcgi(struct pipeline *pipeline, const struct config *cfg,
			 unsigned long max_requests)
{
	FCGX_Request fcgi;
	struct result result;
	char out[RESPONSE_BUFFER_SIZE];
	unsigned long served = 0;

	if (FCGX_InitRequest(&fcgi, LISTEN_FD, 0) != 0) {
		log_error("FCGX_InitRequest failed");
		return 1;
	}
	while (!stop_requested && (max_requests == 0 || served < max_requests)) {
		struct request req = { .read_body = read_fcgi_body };
		long len;

		if (FCGX_Accept_r(&fcgi) < 0)
			break;
		if (reopen_log) {
			struct error err;

			reopen_log = 0;
			if (cfg->log_file != NULL &&
			    log_open_file(cfg->log_file, &err) != 0)
				log_error("%s", err.message);
		}
		req.read_ctx = fcgi.in;
		req.params = fcgi.envp;
		pipeline_handle(pipeline, &req, &result);
		len = render(&result, cfg, out, sizeof(out));
		/* A client that went away is its loss; the outcome is committed
		 * or not regardless, and the worker goes on. */
		if (FCGX_PutStr(out, (int)len, fcgi.out) != (int)len)
			log_info("client went away before the response for %s",
				 result.transaction_id[0] ? result.transaction_id : "-");
		FCGX_Finish_r(&fcgi);
		served++;
	}
	FCGX_Free(&fcgi, 1);
	if (stop_requested)
		log_info("worker exits after %lu requests: signal %d",
			 served, (int)stop_signal);
	else if (max_requests != 0 && served >= max_requests)
		log_info("worker exits after %lu requests: --max-requests",
			 served);
	else
		log_info("worker exits after %lu requests: the listening "
			 "socket closed", served);
	return 0;
}

/* --check-config: one line per check. Redis being down is a warning when
 * the configuration records without it (db_only), an error under fail. */
static int check_config(const struct config *cfg, const char *path,
			struct pipeline *pipeline)
{
	struct error err = { "" };
	int rc = 0;

	printf("config: ok (%s)\n", path != NULL ? path : "defaults and environment");
	if (pipeline_check_redis(pipeline, &err) != 0) {
		if (cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_DB_ONLY) {
			printf("redis: WARNING: %s (redis_unavailable = db_only: "
			       "payments are recorded without the lock)\n",
			       err.message);
		} else {
			printf("redis: FAILED: %s\n", err.message);
			rc = 1;
		}
	} else if (cfg->redis_socket != NULL) {
		printf("redis: ok (%s)\n", cfg->redis_socket);
	} else {
		printf("redis: ok (%s:%d)\n", cfg->redis_host, cfg->redis_port);
	}
	if (pipeline_check_mysql(pipeline, &err) != 0) {
		printf("mysql: FAILED: %s\n", err.message);
		return 1;
	}
	printf("mysql: ok (%s, table payments with "
	       "uq_payments_provider_transaction_id)\n",
	       cfg->mysql_socket != NULL ? cfg->mysql_socket : cfg->mysql_host);
	return rc;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: payhook [-c FILE] [--max-requests N]\n"
		"       payhook --check-config [-c FILE]\n"
		"       payhook --version | --help\n"
		"\n"
		"A FastCGI worker that records each payment webhook exactly once.\n"
		"Started by spawn-fcgi, lighttpd (bin-path) or mod_fcgid; run as\n"
		"plain CGI it serves one request. The configuration file comes\n"
		"from -c, else $PAYHOOK_CONFIG; every key can be overridden by\n"
		"PAYHOOK_<KEY>.\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "max-requests", required_argument, NULL, 'm' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	int want_check = 0, opt, rc;
	unsigned long max_requests = 0;
	struct config cfg;
	struct error err = { "" };
	struct pipeline *pipeline;
	uint64_t count;

	while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'C':
			want_check = 1;
			break;
		case 'm':
			if (number_parse(optarg, ULONG_MAX, &count) != NUMBER_OK ||
			    count == 0) {
				fprintf(stderr, "payhook: --max-requests needs a "
						"positive number\n");
				return 2;
			}
			max_requests = (unsigned long)count;
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
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (path == NULL)
		path = config_default_path();
	if (config_load(&cfg, path, &err) != 0) {
		fprintf(stderr, "payhook: %s\n", err.message);
		return 1;
	}
	log_init("payhook", cfg.log_level);
	if (cfg.log_file != NULL && log_open_file(cfg.log_file, &err) != 0) {
		fprintf(stderr, "payhook: %s\n", err.message);
		config_cleanup(&cfg);
		return 1;
	}
	pipeline = pipeline_new(&cfg, &err);
	if (pipeline == NULL) {
		fprintf(stderr, "payhook: %s\n", err.message);
		config_cleanup(&cfg);
		return 1;
	}
	if (want_check) {
		rc = check_config(&cfg, path, pipeline);
	} else if (FCGX_Init() != 0) {
		log_error("FCGX_Init failed");
		rc = 1;
	} else if (FCGX_IsCGI()) {
		rc = serve_cgi(pipeline, &cfg);
	} else {
		devnull_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (devnull_fd < 0 || install_signals() != 0) {
			log_error("cannot set up signal handling: %s",
				  strerror(errno));
			rc = 1;
		} else {
			rc = serve_fastcgi(pipeline, &cfg, max_requests);
		}
	}
	pipeline_free(pipeline);
	config_cleanup(&cfg);
	if (devnull_fd >= 0)
		close(devnull_fd);
	return rc;
}
