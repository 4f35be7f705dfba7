/* pipeline.c - one webhook request from CGI variables to outcome (see
 * pipeline.h). The handler shape: the outcome starts as "error", every step
 * either decides the outcome or passes on, and one exit releases the lock.
 */
#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lock.h"
#include "log.h"
#include "payload.h"
#include "pipeline.h"
#include "signature.h"
#include "store.h"
#include "timing.h"

struct pipeline {
	const struct config *cfg;
	struct signature_verifier *verifier; /* NULL with signature_scheme none */
	struct payload_parser *parser;
	struct lock_client *lock;
	struct store *store;
	struct payload_rules rules;
	char *body;                          /* max_body_bytes, allocated once */
};

struct pipeline *pipeline_new(const struct config *cfg, struct error *err)
{
	struct pipeline *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		error_set(err, "pipeline: out of memory");
		return NULL;
	}
	p->cfg = cfg;
	p->rules.default_currency = cfg->default_currency;
	p->rules.trim_transaction_id = cfg->trim_transaction_id;
	if (cfg->signature_scheme == CONFIG_SIGNATURE_STANDARD) {
		p->verifier = signature_verifier_new(cfg->webhook_secrets,
						     cfg->webhook_secret_count,
						     err);
		if (p->verifier == NULL)
			goto fail;
	}
	p->parser = payload_parser_new();
	if (p->parser == NULL) {
		error_set(err, "pipeline: out of memory for the JSON parser");
		goto fail;
	}
	p->lock = lock_client_new(cfg, err);
	if (p->lock == NULL)
		goto fail;
	p->store = store_new(cfg, err);
	if (p->store == NULL)
		goto fail;
	/* +1 so a zero max never means malloc(0). */
	p->body = malloc(cfg->max_body_bytes + 1);
	if (p->body == NULL) {
		error_set(err, "pipeline: out of memory for a %zu-byte body buffer",
			  cfg->max_body_bytes);
		goto fail;
	}
	return p;
fail:
	pipeline_free(p);
	return NULL;
}

void pipeline_free(struct pipeline *p)
{
	if (p == NULL)
		return;
	signature_verifier_free(p->verifier);
	payload_parser_free(p->parser);
	lock_client_free(p->lock);
	store_free(p->store);
	free(p->body);
	free(p);
}

int pipeline_check_redis(struct pipeline *p, struct error *err)
{
	return lock_connect(p->lock, err);
}

int pipeline_check_mysql(struct pipeline *p, struct error *err)
{
	return store_check_schema(p->store, err);
}

/* CONTENT_LENGTH: decimal digits only. Returns 0 with *len set, 1 when the
 * number is larger than max (without overflowing), -1 when absent or not a
 * number. */
static int parse_content_length(const char *text, size_t max, size_t *len)
{
	size_t value = 0;

	if (text == NULL || *text == '\0')
		return -1;
	for (const char *c = text; *c != '\0'; c++) {
		if (*c < '0' || *c > '9')
			return -1;
	}
	for (const char *c = text; *c != '\0'; c++) {
		value = value * 10 + (size_t)(*c - '0');
		if (value > max)
			return 1;
	}
	*len = value;
	return 0;
}

static const char *skip_ows(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* "application/json", optionally with the one parameter charset=utf-8 (the
 * value may be quoted); media type and parameter compared case-insensitively. */
static bool is_json_media_type(const char *text)
{
	static const char type[] = "application/json";
	static const char charset[] = "charset";
	static const char utf8[] = "utf-8";
	const char *s;

	if (text == NULL)
		return false;
	s = skip_ows(text);
	if (strncasecmp(s, type, sizeof(type) - 1) != 0)
		return false;
	s = skip_ows(s + sizeof(type) - 1);
	if (*s == '\0')
		return true;
	if (*s != ';')
		return false;
	s = skip_ows(s + 1);
	if (strncasecmp(s, charset, sizeof(charset) - 1) != 0)
		return false;
	s = skip_ows(s + sizeof(charset) - 1);
	if (*s != '=')
		return false;
	s = skip_ows(s + 1);
	if (*s == '"') {
		if (strncasecmp(s + 1, utf8, sizeof(utf8) - 1) != 0 ||
		    s[sizeof(utf8)] != '"')
			return false;
		s += sizeof(utf8) + 1;
	} else {
		if (strncasecmp(s, utf8, sizeof(utf8) - 1) != 0)
			return false;
		s += sizeof(utf8) - 1;
	}
	return *skip_ows(s) == '\0';
}

/* Reads exactly want bytes into p->body. Returns 0, or -1 when the body ends
 * early or reading fails. */
static int read_exact(struct pipeline *p, const struct request *req,
		      size_t want)
{
	size_t got = 0;

	while (got < want) {
		long n = req->read_body(req->read_ctx, p->body + got, want - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static int enough_lease(void *ctx, long needed_ms)
{
	const struct lock_lease *lease = ctx;

	return lock_lease_remaining_ms(lease) > needed_ms ? 0 : -1;
}

/* Turns what the store said into the outcome. */
static void store_outcome(enum store_status status, struct result *r)
{
	switch (status) {
	case STORE_INSERTED:
		result_set(r, OUTCOME_PROCESSED, NULL);
		break;
	case STORE_DUPLICATE:
		result_set(r, OUTCOME_DUPLICATE, NULL);
		break;
	case STORE_CONFLICT:
		result_set(r, OUTCOME_CONFLICT,
			   "transaction_id already recorded with a different "
			   "amount or currency");
		break;
	case STORE_RETRYABLE:
		result_set(r, OUTCOME_UNAVAILABLE,
			   "database busy (deadlock or lock wait): retry");
		break;
	case STORE_UNKNOWN_OUTCOME:
		result_set(r, OUTCOME_UNAVAILABLE,
			   "commit outcome unknown: retry");
		break;
	case STORE_LEASE_EXPIRED:
		result_set(r, OUTCOME_UNAVAILABLE,
			   "lock lease ran out before commit: retry");
		break;
	case STORE_UNAVAILABLE:
		result_set(r, OUTCOME_UNAVAILABLE, "database unavailable: retry");
		break;
	case STORE_NOT_FOUND:
	default:
		result_set(r, OUTCOME_ERROR, "unexpected store result");
		break;
	}
}

/* The backend part: lock, write, release. Fills r; detail gets what failed,
 * note what went wrong without changing the outcome (a lost lease, Redis
 * down under db_only), for the request's log line. */
static void record_payment(struct pipeline *p, const struct payment *payment,
			   size_t body_len, struct result *r,
			   struct error *detail, struct error *note)
{
	struct lock_lease lease;
	struct store_guard guard = { enough_lease, &lease };
	struct error lock_err = { "" };
	enum lock_status locked;
	enum store_status stored;

	/* Connect first, so the lease is not spent on connecting. */
	if (store_connect(p->store, detail) != 0) {
		result_set(r, OUTCOME_UNAVAILABLE, "database unavailable: retry");
		return;
	}

	locked = lock_acquire(p->lock, payment->transaction_id,
			      payment->transaction_id_len, p->cfg->lock_ttl_ms,
			      &lease, &lock_err);
	switch (locked) {
	case LOCK_ACQUIRED:
		stored = store_insert_payment(p->store, payment, p->body,
					      body_len, &guard, detail);
		store_outcome(stored, r);
		switch (lock_release(p->lock, &lease, &lock_err)) {
		case LOCK_RELEASED:
			break;
		case LOCK_RELEASE_EXPIRED:
			error_set(note, "lost lease: the lock expired before "
					"release");
			break;
		case LOCK_RELEASE_STOLEN:
			error_set(note, "lost lease: the lock is held by another "
					"worker, left alone");
			break;
		case LOCK_RELEASE_FAILED:
			error_set(note, "lock release failed (%s); it expires "
					"by itself", lock_err.message);
			break;
		}
		return;
	case LOCK_BUSY:
		/* Busy is not done: only a committed row justifies a 2xx. */
		stored = store_find_payment(p->store, payment, detail);
		if (stored == STORE_NOT_FOUND)
			result_set(r, OUTCOME_IN_PROGRESS,
				   "another delivery of this transaction is "
				   "being processed: retry");
		else
			store_outcome(stored, r);
		return;
	case LOCK_UNAVAILABLE:
		if (p->cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_FAIL) {
			error_set(detail, "%s", lock_err.message);
			result_set(r, OUTCOME_UNAVAILABLE,
				   "lock service unavailable: retry");
			return;
		}
		/* db_only: the unique key alone still prevents a second row. */
		error_set(note, "redis unavailable, recorded without the "
				"lock: %s", lock_err.message);
		stored = store_insert_payment(p->store, payment, p->body,
					      body_len, NULL, detail);
		store_outcome(stored, r);
		return;
	}
	result_set(r, OUTCOME_ERROR, "unexpected lock result");
}

/* The one log line of a request: info for an answer that went as it
 * should, warn for 5xx answers (with the backend's error) and for answers
 * that came with a note. */
static void log_request(const struct config *cfg, const struct result *r,
			int64_t elapsed_us, const struct error *detail,
			const struct error *note)
{
	const char *id = r->transaction_id[0] != '\0' ? r->transaction_id : "-";
	bool fault = r->outcome == OUTCOME_UNAVAILABLE ||
		     r->outcome == OUTCOME_ERROR;

	if (fault || note->message[0] != '\0')
		log_warn("outcome=%s status=%d transaction_id=%s elapsed_us=%lld "
			 "reason=\"%s\" detail=\"%s%s%s\"",
			 outcome_name(r->outcome),
			 outcome_status(r->outcome, cfg), id,
			 (long long)elapsed_us, r->reason,
			 fault ? detail->message : "",
			 fault && note->message[0] != '\0' ? "; " : "",
			 note->message);
	else
		log_info("outcome=%s status=%d transaction_id=%s elapsed_us=%lld%s%s%s",
			 outcome_name(r->outcome),
			 outcome_status(r->outcome, cfg), id,
			 (long long)elapsed_us,
			 r->reason[0] != '\0' ? " reason=\"" : "", r->reason,
			 r->reason[0] != '\0' ? "\"" : "");
}

void pipeline_handle(struct pipeline *p, const struct request *req,
		     struct result *r)
{
	const struct config *cfg = p->cfg;
	int64_t started_us = timing_now_us();
	struct error detail = { "" }, note = { "" };
	struct payment payment;
	char reason[PAYLOAD_REASON_MAX];
	const char *sig_reason = NULL;
	size_t body_len = 0;
	int status;

	r->transaction_id[0] = '\0';
	result_set(r, OUTCOME_ERROR, "internal error");

	if (req->method == NULL || strcmp(req->method, "POST") != 0) {
		result_set(r, OUTCOME_METHOD_NOT_ALLOWED, "only POST is allowed");
		goto out;
	}
	status = parse_content_length(req->content_length, cfg->max_body_bytes,
				      &body_len);
	if (status < 0) {
		result_set(r, OUTCOME_LENGTH_REQUIRED,
			   "Content-Length is required");
		goto out;
	}
	if (status > 0) {
		result_set(r, OUTCOME_TOO_LARGE, "body larger than %zu bytes",
			   cfg->max_body_bytes);
		goto out;
	}
	if (!is_json_media_type(req->content_type)) {
		result_set(r, OUTCOME_UNSUPPORTED_MEDIA_TYPE,
			   "Content-Type must be application/json");
		goto out;
	}
	if (read_exact(p, req, body_len) != 0) {
		result_set(r, OUTCOME_INVALID,
			   "body shorter than Content-Length");
		goto out;
	}
	if (p->verifier != NULL) {
		enum signature_status sig = signature_verify(
			p->verifier, req->webhook_id, req->webhook_timestamp,
			req->webhook_signature, p->body, body_len, time(NULL),
			cfg->signature_tolerance_s, &sig_reason);

		if (sig == SIGNATURE_ERROR) {
			error_set(&detail, "signature: %s", sig_reason);
			goto out; /* 500: ours, not the sender's */
		}
		if (sig != SIGNATURE_VALID) {
			result_set(r, OUTCOME_UNAUTHORIZED, "%s",
				   sig_reason != NULL ? sig_reason
						      : "bad signature");
			goto out;
		}
	}
	switch (payload_parse(p->parser, p->body, body_len, &p->rules, &payment,
			      reason, sizeof(reason))) {
	case PAYLOAD_VALID:
		break;
	case PAYLOAD_INVALID:
		if (payment.transaction_id_len > 0)
			memcpy(r->transaction_id, payment.transaction_id,
			       payment.transaction_id_len + 1);
		result_set(r, OUTCOME_INVALID, "%s", reason);
		goto out;
	case PAYLOAD_ERROR:
	default:
		error_set(&detail, "payload: out of memory");
		goto out;
	}
	memcpy(r->transaction_id, payment.transaction_id,
	       payment.transaction_id_len + 1);
	record_payment(p, &payment, body_len, r, &detail, &note);
out:
	log_request(cfg, r, timing_now_us() - started_us, &detail, &note);
}
