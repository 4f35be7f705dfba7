/* worker.c - the FastCGI worker loop (see worker.h). Run as plain CGI it
 * serves the one request in its environment and returns.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "inbox.h"
#include "log.h"
#include "ops.h"
#include "pipeline.h"
#include "timing.h"
#include "pool.h"
#include "response.h"
#include "route.h"
#include "signals.h"
#include "worker.h"

extern char **environ;

/* The FastCGI spec hands a worker its listening socket as descriptor 0. */
#define LISTEN_FD 0

/* Once woken for a connection, a worker must not block in accept() with its
 * signals held while another worker takes it. The flag is the listening
 * socket's, shared by every worker of the pool. Returns 0, or -1 (errno). */
static int listen_nonblocking(void)
{
	int flags = fcntl(LISTEN_FD, F_GETFL);

	if (flags < 0)
		return -1;
	return fcntl(LISTEN_FD, F_SETFL, flags | O_NONBLOCK);
}

/* The stop and hang-up signals are served only while the worker waits for
 * a connection (signals.h): one that came inside FCGX_Accept_r would end
 * its select() on a connection just taken, and libfcgi then closes that
 * connection unanswered (the web server's 500). Returns 0, or -1 with err
 * set. */
static int open_signals(struct error *err)
{
	static const int served[] = { SIGTERM, SIGINT, SIGHUP, 0 };

	return signals_open(served, err);
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

/* One request: the operator's paths, else the pipeline (whose locks are
 * released by the time it returns). Sets *text and *len to the whole CGI
 * response and, for a webhook, *result. Returns true for a webhook:
 * pipeline_finish is then due once the response is out. */
static bool answer(struct ops *ops, struct pipeline *pipeline,
		   const struct config *cfg, const struct request *req,
		   struct result *result, char *out, size_t cap,
		   const char **text, size_t *len)
{
	struct route route;

	route_request(cfg, req, &route);
	result->transaction_id[0] = '\0';
	if (route.target != ROUTE_WEBHOOK) {
		*text = ops_answer(ops, route.target, req, len);
		return false;
	}
	pipeline_answer_profile(pipeline, req, route.provider, result);
	*len = (size_t)render(result, cfg, out, cap);
	*text = out;
	return true;
}

static int serve_cgi(struct ops *ops, struct pipeline *pipeline,
		     const struct config *cfg)
{
	struct request req = { .params = environ, .read_body = read_stdin_body };
	struct result result;
	char out[RESPONSE_BUFFER_SIZE];
	const char *text;
	size_t len;

	bool webhook = answer(ops, pipeline, cfg, &req, &result, out,
			      sizeof(out), &text, &len);

	if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)
		log_warn("writing the CGI response failed: %s", strerror(errno));
	if (webhook) {
		pipeline_finish(pipeline, &result);
		pipeline_flush(pipeline);
	}
	return 0;
}

/* Waits for a connection on the listening socket, the only time the stop
 * and hang-up signals get in. While the inbox holds deliveries they are
 * written when the oldest is due (INBOX_FLUSH_MS), or once no connection
 * came for INBOX_IDLE_MS, and its spool is loaded once none came for
 * INBOX_LOAD_IDLE_MS (inbox_idle): a worker never waits idle with
 * deliveries in memory, and a busy one writes them in batches, not one by
 * one. Returns 1 when one may be there (another worker may take it
 * first), 0 when a signal came, -1 on an error (errno). */
static int wait_connection(struct pipeline *pipeline)
{
	struct pollfd pfd = { .fd = LISTEN_FD, .events = POLLIN };
	int64_t since = timing_now_us();

	pipeline_flush_due(pipeline);
	for (;;) {
		long ms = pipeline_idle_wait_ms(pipeline,
						timing_now_us() - since);
		int n = signals_wait(&pfd, 1, ms);

		if (n != 0)
			return n > 0 ? 1 : -1;
		if (signals_stopping())
			return 0;
		pipeline_idle(pipeline, timing_now_us() - since);
	}
}

static int serve_fastcgi(struct ops *ops, struct pipeline *pipeline,
			 const struct config *cfg, struct metrics *metrics,
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
	while (!signals_stopping() &&
	       (max_requests == 0 || served < max_requests)) {
		struct request req = { .read_body = read_fcgi_body };
		const char *text;
		size_t len;
		bool webhook;
		int rc = wait_connection(pipeline);

		if (rc < 0) {
			log_error("waiting for a connection: %s", strerror(errno));
			break;
		}
		if (rc == 0)
			continue;
		/* The listening socket does not block: a connection another
		 * worker took first is no error. */
		rc = FCGX_Accept_r(&fcgi);
		if (rc == -EAGAIN || rc == -EWOULDBLOCK)
			continue;
		if (rc < 0)
			break;
		req.read_ctx = fcgi.in;
		req.params = fcgi.envp;
		metrics_request_begin(metrics);
		webhook = answer(ops, pipeline, cfg, &req, &result, out,
				 sizeof(out), &text, &len);
		/* Once the web server's input is read to its end (its empty
		 * stdin record, normally in the buffer already), nothing more
		 * can come on this connection: it is closed as it is, without
		 * libfcgi's lingering close (shutdown, then poll and read
		 * until the web server closes: three system calls and a wait
		 * per request), which guards against unread input only. */
		if (FCGX_GetChar(fcgi.in) == EOF)
			FCGX_Detach(&fcgi);
		metrics_request_stage(metrics, METRICS_ANSWERING);
		/* A client that went away is its loss; the outcome is committed
		 * or not regardless, and the worker goes on. */
		if (FCGX_PutStr(text, (int)len, fcgi.out) != (int)len)
			log_info("client went away before the response for %s",
				 result.transaction_id[0] ? result.transaction_id : "-");
		/* The locks were released before the answer (pipeline.h);
		 * what is left (counting, the log line, a rebuild of the
		 * early marks) waits until the answer is out. */
		FCGX_Finish_r(&fcgi);
		metrics_request_stage(metrics, METRICS_FINISHING);
		if (webhook)
			pipeline_finish(pipeline, &result);
		metrics_request_end(metrics);
		served++;
	}
	FCGX_Free(&fcgi, 1);
	/* Graceful stop, recycling: the inbox's batch is written first. */
	if (pipeline_held(pipeline) > 0) {
		log_info("inbox: writing the deliveries held before the "
			 "worker exits");
		pipeline_flush(pipeline);
	}
	if (signals_stop_signal() != 0)
		log_info("worker exits after %lu requests: signal %d",
			 served, signals_stop_signal());
	else if (max_requests != 0 && served >= max_requests)
		log_info("worker exits after %lu requests: --max-requests",
			 served);
	else
		log_info("worker exits after %lu requests: the listening "
			 "socket closed", served);
	return 0;
}

/* A worker that cannot start says why where an operator looks: on standard
 * error (spawn-fcgi's or the master's) and in the log. */
static int cannot_start(const char *why)
{
	fprintf(stderr, "payhook: worker cannot start: %s\n", why);
	log_error("worker cannot start: %s", why);
	return 1;
}

/* The start-up checks of a worker, whose objects it keeps: the pipeline
 * (providers, secrets, backends' clients) and the operator's paths. */
static int prepare(const struct config *cfg, struct metrics *metrics,
		   struct pipeline **pipeline, struct ops **ops,
		   struct error *err)
{
	*ops = NULL;
	*pipeline = pipeline_new(cfg, err);
	if (*pipeline == NULL)
		return -1;
	pipeline_set_metrics(*pipeline, metrics);
	*ops = ops_new(cfg, *pipeline, metrics, err);
	if (*ops == NULL) {
		pipeline_free(*pipeline);
		*pipeline = NULL;
		return -1;
	}
	return 0;
}

int worker_check(const struct config *cfg, struct error *err)
{
	struct pipeline *pipeline;
	struct ops *ops;

	if (prepare(cfg, NULL, &pipeline, &ops, err) != 0)
		return -1;
	ops_free(ops);
	pipeline_free(pipeline);
	return 0;
}

int worker_run(const struct config *cfg, struct metrics *metrics,
	       unsigned long max_requests, int ready_fd)
{
	struct pipeline *pipeline;
	struct ops *ops = NULL;
	struct error err = { "" };
	int rc;

	if (prepare(cfg, metrics, &pipeline, &ops, &err) != 0) {
		if (ready_fd >= 0)
			close(ready_fd);
		return cannot_start(err.message);
	}
	if (FCGX_Init() != 0) {
		rc = cannot_start("FCGX_Init failed");
	} else if (FCGX_IsCGI()) {
		rc = serve_cgi(ops, pipeline, cfg);
	} else if (listen_nonblocking() != 0) {
		rc = cannot_start(strerror(errno));
	} else if (open_signals(&err) != 0) {
		rc = cannot_start(err.message);
	} else {
		metrics_worker_started(metrics, getpid());
		pool_child_ready(ready_fd);
		ready_fd = -1;
		rc = serve_fastcgi(ops, pipeline, cfg, metrics, max_requests);
		metrics_worker_gone(metrics, getpid());
	}
	if (ready_fd >= 0)
		close(ready_fd);
	ops_free(ops);
	pipeline_free(pipeline);
	return rc;
}
