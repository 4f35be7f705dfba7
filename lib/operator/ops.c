/* ops.c - health_path, ping_path, metrics_path and status_path (see
 * ops.h). */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "encoding.h"
#include "log.h"
#include "ops.h"
#include "page.h"
#include "signature.h"
#include "status.h"
#include "timing.h"

#define BEARER "Bearer "
#define BASIC "Basic "
/* A page load asks MySQL at most this often per worker. */
#define SUMMARY_MS 5000
/* The most workers status_path lists one by one. */
#define POOL_STATUS_WORKERS 1024

struct ops {
	const struct config *cfg;
	struct pipeline *pipeline;
	const struct metrics *metrics;
	struct signature_keyring *token; /* metrics_token, NULL: none */
	struct signature_keyring *page_token; /* the page's, NULL: token */
	char *buf;                       /* STATUS_RENDER_MAX + headers */
	/* The page's figures from MySQL, asked at most every SUMMARY_MS. */
	struct store_summary summary;
	bool summary_ok;
	struct error summary_err;
	int64_t summary_at_us;           /* 0: never asked */
	size_t cap;
};

/* The keyring of one token key (NULL token: none). Returns 0, or -1 with
 * err naming the key. */
static int token_keyring(char *token, const char *key,
			 struct signature_keyring **keyring, struct error *err)
{
	char *tokens[] = { token };
	struct error inner;

	*keyring = NULL;
	if (token == NULL)
		return 0;
	*keyring = signature_keyring_new(tokens, 1, SECRET_TEXT, &inner);
	if (*keyring == NULL)
		return error_set(err, "%s: %s", key, inner.message);
	return 0;
}

struct ops *ops_new(const struct config *cfg, struct pipeline *pipeline,
		    const struct metrics *metrics, struct error *err)
{
	struct ops *ops = calloc(1, sizeof(*ops));

	if (ops == NULL) {
		error_set(err, "ops: out of memory");
		return NULL;
	}
	ops->cfg = cfg;
	ops->pipeline = pipeline;
	ops->metrics = metrics;
	if (token_keyring(cfg->metrics_token, "metrics_token", &ops->token,
			  err) != 0 ||
	    token_keyring(cfg->status_page_token, "status_page_token",
			  &ops->page_token, err) != 0)
		goto fail;
	/* Only a worker that serves metrics or pages needs a big buffer. */
	ops->cap = cfg->status_page_path != NULL ? 2 * STATUS_RENDER_MAX + 512 :
		   cfg->metrics_path != NULL || cfg->status_path != NULL ?
			   STATUS_RENDER_MAX + 512 : 1024;
	ops->buf = malloc(ops->cap);
	if (ops->buf == NULL) {
		error_set(err, "ops: out of memory");
		goto fail;
	}
	return ops;
fail:
	ops_free(ops);
	return NULL;
}

void ops_free(struct ops *ops)
{
	if (ops == NULL)
		return;
	signature_keyring_free(ops->token);
	signature_keyring_free(ops->page_token);
	free(ops->buf);
	free(ops);
}

/* Writes a complete response with a JSON body into ops->buf. */
static const char *answer_json(struct ops *ops, int status, const char *phrase,
			       const char *extra_headers, json_object *body,
			       bool head, size_t *len)
{
	const char *json = json_object_to_json_string_ext(
		body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	int n = snprintf(ops->buf, ops->cap,
			 "Status: %d %s\r\n"
			 "Content-Type: application/json\r\n"
			 "Cache-Control: no-store\r\n"
			 "%s\r\n%s%s",
			 status, phrase, extra_headers,
			 head || json == NULL ? "" : json,
			 head || json == NULL ? "" : "\n");

	json_object_put(body);
	if (n < 0 || (size_t)n >= ops->cap)
		n = snprintf(ops->buf, ops->cap,
			     "Status: 500 Internal Server Error\r\n\r\n");
	*len = (size_t)n;
	return ops->buf;
}

static json_object *result_body(const char *result, const char *reason)
{
	json_object *body = json_object_new_object();

	json_object_object_add(body, "result", json_object_new_string(result));
	if (reason != NULL)
		json_object_object_add(body, "reason",
				       json_object_new_string(reason));
	return body;
}

static const char *health(struct ops *ops, bool head, size_t *len)
{
	struct pipeline_health h;
	json_object *body = json_object_new_object();
	bool ok;

	ok = ops->pipeline != NULL && pipeline_health(ops->pipeline, &h) == 0;
	if (ops->pipeline == NULL) {
		json_object_object_add(body, "status",
				       json_object_new_string("unavailable"));
		return answer_json(ops, 503, "Service Unavailable", "", body,
				   head, len);
	}
	json_object_object_add(body, "status", json_object_new_string(
					       ok ? "ok" : "unavailable"));
	json_object_object_add(body, "mysql", json_object_new_string(
					       h.mysql_ok ? "ok" : "unavailable"));
	json_object_object_add(body, "redis", json_object_new_string(
		!h.redis_used ? "not used (lock_backend = none)" :
		h.redis_ok ? "ok" :
		h.redis_required ? "unavailable" :
		"unavailable (not needed: redis_unavailable = db_only)"));
	/* The detail (host names, ports) goes to the log, not to whoever
	 * asks the health path. */
	if (!h.mysql_ok)
		log_warn("health: mysql: %s", h.mysql_err.message);
	if (h.redis_used && !h.redis_ok)
		log_warn("health: redis: %s", h.redis_err.message);
	return answer_json(ops, ok ? 200 : 503,
			   ok ? "OK" : "Service Unavailable", "", body, head,
			   len);
}

/* Whether the request carries "Authorization: Bearer <token>" for keyring
 * (NULL: no token needed), or, when basic, the token as the password of
 * "Authorization: Basic" (what a browser sends; the user name is not
 * looked at). The comparison is the static-token check of the signatures:
 * constant time in content and length. */
static bool token_in(const struct signature_keyring *keyring,
		     const struct request *req, bool basic)
{
	const char *auth = request_param(req, "HTTP_AUTHORIZATION");
	unsigned char pair[512];
	const char *colon;
	long n;

	if (keyring == NULL)
		return true;
	if (auth == NULL)
		return false;
	if (strncmp(auth, BEARER, strlen(BEARER)) == 0)
		return signature_verify_token(keyring, auth + strlen(BEARER),
					      "", NULL) == SIGNATURE_VALID;
	if (!basic || strncmp(auth, BASIC, strlen(BASIC)) != 0)
		return false;
	n = encoding_base64_decode(auth + strlen(BASIC),
				   strlen(auth + strlen(BASIC)), pair,
				   sizeof(pair) - 1);
	if (n < 0)
		return false;
	pair[n] = '\0';
	colon = memchr(pair, ':', (size_t)n);
	return colon != NULL && strlen((const char *)pair) == (size_t)n &&
	       signature_verify_token(keyring, colon + 1, "", NULL) ==
		       SIGNATURE_VALID;
}

/* metrics_path and status_path: metrics_token as a bearer token. */
static bool authorized(const struct ops *ops, const struct request *req)
{
	return token_in(ops->token, req, false);
}

static const char *unauthorized(struct ops *ops, bool head, size_t *len)
{
	return answer_json(ops, 401, "Unauthorized",
			   "WWW-Authenticate: Bearer\r\n",
			   result_body("unauthorized",
				       "a valid bearer token is required"),
			   head, len);
}

static const char prometheus_header[] =
	"Status: 200 OK\r\n"
	"Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
	"Cache-Control: no-store\r\n\r\n";

/* Renders one of the metrics segment's views for ops into buf (cap
 * bytes); returns its length or -1 when it does not fit. */
typedef long (*render_fn)(const struct ops *ops, char *buf, size_t cap);

/* A 200 with header (a NUL-terminated string of complete header lines and
 * the blank line) and what render writes, or the 503 of a worker without
 * a segment, or a 500 naming what when it is too large. */
static const char *answer_rendered(struct ops *ops, const char *header,
				   render_fn render, const char *what,
				   bool head, size_t *len)
{
	char too_large[64];
	long n;

	if (ops->metrics == NULL)
		return answer_json(ops, 503, "Service Unavailable", "",
				   result_body("unavailable",
					       "no metrics segment"), head, len);
	*len = strlen(header);
	memcpy(ops->buf, header, *len);
	if (head)
		return ops->buf;
	n = render(ops, ops->buf + *len, ops->cap - *len);
	if (n < 0) {
		snprintf(too_large, sizeof(too_large), "%s too large", what);
		return answer_json(ops, 500, "Internal Server Error", "",
				   result_body("error", too_large), head, len);
	}
	*len += (size_t)n;
	return ops->buf;
}

static long render_metrics(const struct ops *ops, char *buf, size_t cap)
{
	return status_render(ops->metrics, ops->cfg, buf, cap);
}

static const char *metrics(struct ops *ops, const struct request *req,
			   bool head, size_t *len)
{
	if (!authorized(ops, req))
		return unauthorized(ops, head, len);
	return answer_rendered(ops, prometheus_header, render_metrics,
			       "metrics", head, len);
}

/* ping_path: this worker runs and answers; no backend is asked. */
static const char *ping(struct ops *ops, bool head, size_t *len)
{
	int n = snprintf(ops->buf, ops->cap,
			 "Status: 200 OK\r\n"
			 "Content-Type: text/plain\r\n"
			 "Cache-Control: no-store\r\n\r\n%s",
			 head ? "" : "pong\n");

	*len = (size_t)n;
	return ops->buf;
}

/* Whether the client asked for JSON: ?json, or an Accept naming it. */
static bool wants_json(const struct request *req)
{
	const char *query = request_param(req, "QUERY_STRING");
	const char *accept = request_param(req, "HTTP_ACCEPT");

	return (query != NULL && (strcmp(query, "json") == 0 ||
				  strncmp(query, "json&", 5) == 0 ||
				  strstr(query, "&json") != NULL)) ||
	       (accept != NULL && strstr(accept, "application/json") != NULL);
}

static json_object *status_json(const struct metrics *m)
{
	struct metrics_pool p;
	struct metrics_worker *w = calloc(POOL_STATUS_WORKERS, sizeof(*w));
	size_t n = metrics_read_status(m, &p, w,
				       w != NULL ? POOL_STATUS_WORKERS : 0);
	json_object *body = json_object_new_object();
	json_object *list = json_object_new_array();

#define ADD_INT(key, value) \
	json_object_object_add(body, key, json_object_new_int64((int64_t)(value)))
	json_object_object_add(body, "version",
			       json_object_new_string(PACKAGE_VERSION));
	ADD_INT("start_time", p.start_time);
	ADD_INT("uptime_s", p.uptime_s);
	ADD_INT("workers_configured", p.workers_configured);
	ADD_INT("workers_total", p.workers_total);
	ADD_INT("workers_active", p.workers_active);
	ADD_INT("workers_idle", p.workers_idle);
	ADD_INT("accepted", p.accepted);
	ADD_INT("max_active", p.max_active);
	ADD_INT("max_children_reached", p.max_children_reached);
	ADD_INT("listen_queue", p.listen_queue);
	ADD_INT("max_listen_queue", p.max_listen_queue);
	ADD_INT("listen_queue_len", p.listen_queue_len);
	ADD_INT("slow_requests", p.slow_requests);
	ADD_INT("terminated_requests", p.terminated_requests);
#undef ADD_INT
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "pid", json_object_new_int64(w[i].pid));
		json_object_object_add(o, "state", json_object_new_string(
					       metrics_stage_name(w[i].stage)));
		json_object_object_add(o, "requests",
				       json_object_new_int64((int64_t)w[i].served));
		json_object_object_add(o, "request_duration_ms",
				       json_object_new_int64(w[i].elapsed_us / 1000));
		json_object_object_add(o, "profile", json_object_new_string(
			w[i].provider < CONFIG_PROVIDER_COUNT ?
				config_provider_name(w[i].provider) : "-"));
		json_object_object_add(o, "transaction_id",
				       json_object_new_string(w[i].transaction_id));
		json_object_array_add(list, o);
	}
	json_object_object_add(body, "workers", list);
	free(w);
	return body;
}

static long render_status(const struct ops *ops, char *buf, size_t cap)
{
	return status_render_pool(ops->metrics, buf, cap);
}

/* status_path: the pool's status, Prometheus text or JSON (the same
 * numbers). */
static const char *status(struct ops *ops, const struct request *req,
			  bool head, size_t *len)
{
	if (!authorized(ops, req))
		return unauthorized(ops, head, len);
	if (ops->metrics != NULL && wants_json(req))
		return answer_json(ops, 200, "OK", "", status_json(ops->metrics),
				   head, len);
	return answer_rendered(ops, prometheus_header, render_status,
			       "status", head, len);
}

/* The page, with what the last summary found. */
static long render_page(const struct ops *ops, char *buf, size_t cap)
{
	struct page_backend b = {
		.summary = ops->summary_ok ? &ops->summary : NULL,
		.age_s = (long)((timing_now_us() - ops->summary_at_us) /
				1000000),
	};

	return page_render(ops->metrics, ops->cfg, &b, buf, cap);
}

/* status_page_path: the operator's page, behind status_page_token (else
 * metrics_token), as a bearer token or a browser's Basic password. */
static const char *page(struct ops *ops, const struct request *req,
			bool head, size_t *len)
{
	static const char header[] =
		"Status: 200 OK\r\n"
		"Content-Type: text/html; charset=utf-8\r\n"
		"Cache-Control: no-store\r\n"
		"X-Content-Type-Options: nosniff\r\n"
		"Content-Security-Policy: default-src 'none'; "
		"style-src 'unsafe-inline'; img-src 'self'\r\n\r\n";

	if (!token_in(ops->page_token != NULL ? ops->page_token : ops->token,
		      req, true))
		return answer_json(ops, 401, "Unauthorized",
				   "WWW-Authenticate: Basic realm=\"payhook\", "
				   "charset=\"UTF-8\"\r\n",
				   result_body("unauthorized",
					       "a valid token is required"),
				   head, len);
	if (ops->summary_at_us == 0 ||
	    timing_now_us() - ops->summary_at_us >= SUMMARY_MS * 1000L) {
		ops->summary_at_us = timing_now_us();
		ops->summary_ok = ops->pipeline != NULL &&
				  pipeline_summary(ops->pipeline, &ops->summary,
						   &ops->summary_err) == 0;
		/* The detail (host names) goes to the log. */
		if (ops->pipeline != NULL && !ops->summary_ok)
			log_warn("status page: %s", ops->summary_err.message);
	}
	return answer_rendered(ops, header, render_page, "page", head, len);
}

const char *ops_answer(struct ops *ops, enum route_target target,
		       const struct request *req, size_t *len)
{
	const char *method;
	bool head;

	method = request_param(req, "REQUEST_METHOD");
	head = method != NULL && strcmp(method, "HEAD") == 0;
	if (method == NULL || (strcmp(method, "GET") != 0 && !head))
		return answer_json(ops, 405, "Method Not Allowed",
				   "Allow: GET, HEAD\r\n",
				   result_body("method_not_allowed",
					       "only GET is allowed"),
				   false, len);
	switch (target) {
	case ROUTE_HEALTH:
		return health(ops, head, len);
	case ROUTE_PING:
		return ping(ops, head, len);
	case ROUTE_STATUS:
		return status(ops, req, head, len);
	case ROUTE_PAGE:
		return page(ops, req, head, len);
	case ROUTE_METRICS:
	case ROUTE_WEBHOOK: /* not an operator's path: a caller's bug */
		break;
	}
	return metrics(ops, req, head, len);
}
