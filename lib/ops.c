/* ops.c - health_path and metrics_path (see ops.h). */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "log.h"
#include "ops.h"
#include "signature.h"

#define PATH_MAX_BYTES 512
#define BEARER "Bearer "

struct ops {
	const struct config *cfg;
	struct pipeline *pipeline;
	const struct metrics *metrics;
	struct signature_keyring *token; /* metrics_token, NULL: none */
	char *buf;                       /* METRICS_RENDER_MAX + headers */
	size_t cap;
};

struct ops *ops_new(const struct config *cfg, struct pipeline *pipeline,
		    const struct metrics *metrics, struct error *err)
{
	struct ops *ops = calloc(1, sizeof(*ops));
	struct error inner;

	if (ops == NULL) {
		error_set(err, "ops: out of memory");
		return NULL;
	}
	ops->cfg = cfg;
	ops->pipeline = pipeline;
	ops->metrics = metrics;
	if (cfg->metrics_token != NULL) {
		char *tokens[] = { cfg->metrics_token };

		ops->token = signature_keyring_new(tokens, 1, SECRET_TEXT,
						   &inner);
		if (ops->token == NULL) {
			error_set(err, "metrics_token: %s", inner.message);
			goto fail;
		}
	}
	/* Only a worker that serves metrics needs the big buffer. */
	ops->cap = cfg->metrics_path != NULL ? METRICS_RENDER_MAX + 512 : 1024;
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

/* Whether the request carries "Authorization: Bearer <metrics_token>". The
 * comparison is the static-token check of the signatures: constant time in
 * content and length. */
static bool authorized(const struct ops *ops, const struct request *req)
{
	const char *auth = request_param(req, "HTTP_AUTHORIZATION");

	if (ops->token == NULL)
		return true;
	if (auth == NULL || strncmp(auth, BEARER, strlen(BEARER)) != 0)
		return false;
	return signature_verify_token(ops->token, auth + strlen(BEARER), "",
				      NULL) == SIGNATURE_VALID;
}

static const char *metrics(struct ops *ops, const struct request *req,
			   bool head, size_t *len)
{
	static const char header[] =
		"Status: 200 OK\r\n"
		"Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
		"Cache-Control: no-store\r\n\r\n";
	long n;

	if (!authorized(ops, req))
		return answer_json(ops, 401, "Unauthorized",
				   "WWW-Authenticate: Bearer\r\n",
				   result_body("unauthorized",
					       "a valid bearer token is "
					       "required"), head, len);
	if (ops->metrics == NULL)
		return answer_json(ops, 503, "Service Unavailable", "",
				   result_body("unavailable",
					       "no metrics segment"), head, len);
	memcpy(ops->buf, header, sizeof(header) - 1);
	*len = sizeof(header) - 1;
	if (head)
		return ops->buf;
	n = metrics_render(ops->metrics, ops->cfg, ops->buf + *len,
			   ops->cap - *len);
	if (n < 0)
		return answer_json(ops, 500, "Internal Server Error", "",
				   result_body("error", "metrics too large"),
				   head, len);
	*len += (size_t)n;
	return ops->buf;
}

const char *ops_handle(struct ops *ops, const struct request *req,
		       size_t *len)
{
	const struct config *cfg = ops->cfg;
	char path[PATH_MAX_BYTES];
	const char *method;
	bool is_health, head;

	if (cfg->health_path == NULL && cfg->metrics_path == NULL)
		return NULL;
	request_path(req, path, sizeof(path));
	is_health = cfg->health_path != NULL &&
		    strcmp(path, cfg->health_path) == 0;
	if (!is_health && (cfg->metrics_path == NULL ||
			   strcmp(path, cfg->metrics_path) != 0))
		return NULL;
	method = request_param(req, "REQUEST_METHOD");
	head = method != NULL && strcmp(method, "HEAD") == 0;
	if (method == NULL || (strcmp(method, "GET") != 0 && !head))
		return answer_json(ops, 405, "Method Not Allowed",
				   "Allow: GET, HEAD\r\n",
				   result_body("method_not_allowed",
					       "only GET is allowed"),
				   false, len);
	return is_health ? health(ops, head, len) : metrics(ops, req, head, len);
}
