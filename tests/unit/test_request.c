/* test_request.c - the checks a request passes before any backend is asked:
 * method, length, size, media type, signature, body, in that order, the first
 * failure deciding the answer. The backends point at a closed port, so a
 * request that passes every check ends as "unavailable" (and proves it got
 * that far) without any server running. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "configuration.h"
#include "pipeline.h"
#include "response.h"
#include "signature.h"

#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define BODY "{\"transaction_id\":\"tx-1\",\"amount\":5,\"currency\":\"EUR\"}"

static struct config cfg;
static struct pipeline *pipeline;

struct body_reader {
	const char *data;
	size_t len, pos;
};

static long read_memory(void *ctx, char *buf, size_t cap)
{
	struct body_reader *r = ctx;
	size_t n = r->len - r->pos < cap ? r->len - r->pos : cap;

	memcpy(buf, r->data + r->pos, n);
	r->pos += n;
	return (long)n;
}

static void setup(void)
{
	struct error err;

	/* Nothing listens on port 1: a request that gets past every check
	 * fails to connect and answers unavailable. */
	setenv("PAYHOOK_MYSQL_PORT", "1", 1);
	setenv("PAYHOOK_REDIS_PORT", "1", 1);
	setenv("PAYHOOK_MYSQL_CONNECT_TIMEOUT_S", "1", 1);
	setenv("PAYHOOK_MAX_BODY_BYTES", "1000", 1);
	setenv("PAYHOOK_WEBHOOK_SECRET", SECRET, 1);
	setenv("PAYHOOK_LOG_LEVEL", "error", 1);
	ck_assert_msg(config_load(&cfg, NULL, &err) == 0, "%s", err.message);
	log_init("test_request", LOG_LEVEL_ERROR);
	pipeline = pipeline_new(&cfg, &err);
	ck_assert_msg(pipeline != NULL, "%s", err.message);
}

static void teardown(void)
{
	pipeline_free(pipeline);
	config_cleanup(&cfg);
}

/* Signs body at now (offset by skew_s) into the three header buffers. */
static void sign(const char *body, long skew_s, char *id, char *ts, char *sig)
{
	unsigned char key[SIGNATURE_KEY_MAX];
	size_t key_len;
	struct error err;

	strcpy(id, "msg_test");
	snprintf(ts, 32, "%lld", (long long)time(NULL) + skew_s);
	ck_assert_int_eq(signature_secret_decode(SECRET, key, sizeof(key),
						 &key_len, &err), 0);
	ck_assert_int_eq(signature_sign(key, key_len, id, ts, body,
					strlen(body), sig, SIGNATURE_TEXT_MAX,
					&err), 0);
}

/* Runs one request; content_length NULL means "the body's length". */
static enum outcome run(const char *method, const char *content_type,
			const char *content_length, const char *body,
			bool signed_request)
{
	char length[32], id[32], ts[32], sig[SIGNATURE_TEXT_MAX];
	struct body_reader reader = { body, strlen(body), 0 };
	struct request req = {
		.method = method,
		.content_type = content_type,
		.content_length = content_length,
		.read_body = read_memory,
		.read_ctx = &reader,
	};
	struct result r;

	if (content_length == NULL) {
		snprintf(length, sizeof(length), "%zu", reader.len);
		req.content_length = length;
	}
	if (signed_request) {
		sign(body, 0, id, ts, sig);
		req.webhook_id = id;
		req.webhook_timestamp = ts;
		req.webhook_signature = sig;
	}
	pipeline_handle(pipeline, &req, &r);
	return r.outcome;
}

#define assert_outcome(got, want)                                         \
	ck_assert_msg((got) == (want), "outcome %s, expected %s",         \
		      outcome_name(got), outcome_name(want))

START_TEST(test_order_of_checks)
{
	/* Each line breaks one more rule than the next: the first rule in
	 * SPEC.md's order decides. */
	assert_outcome(run("GET", "text/plain", "abc", "", false),
		       OUTCOME_METHOD_NOT_ALLOWED);
	assert_outcome(run("POST", "text/plain", "abc", "", false),
		       OUTCOME_LENGTH_REQUIRED);
	assert_outcome(run("POST", "text/plain", "5000", "", false),
		       OUTCOME_TOO_LARGE);
	assert_outcome(run("POST", "text/plain", NULL, "{}", false),
		       OUTCOME_UNSUPPORTED_MEDIA_TYPE);
	assert_outcome(run("POST", "application/json", NULL, "{}", false),
		       OUTCOME_UNAUTHORIZED);
	assert_outcome(run("POST", "application/json", NULL, "{}", true),
		       OUTCOME_INVALID);
	assert_outcome(run("POST", "application/json", NULL, BODY, true),
		       OUTCOME_UNAVAILABLE);
}
END_TEST

START_TEST(test_content_length_forms)
{
	assert_outcome(run("POST", "application/json", "", BODY, true),
		       OUTCOME_LENGTH_REQUIRED);
	assert_outcome(run("POST", "application/json", "-1", BODY, true),
		       OUTCOME_LENGTH_REQUIRED);
	assert_outcome(run("POST", "application/json", " 10", BODY, true),
		       OUTCOME_LENGTH_REQUIRED);
	assert_outcome(run("POST", "application/json", "0x10", BODY, true),
		       OUTCOME_LENGTH_REQUIRED);
	/* Larger than max_body_bytes, and larger than any size_t. */
	assert_outcome(run("POST", "application/json", "1001", BODY, true),
		       OUTCOME_TOO_LARGE);
	assert_outcome(run("POST", "application/json",
			   "99999999999999999999999999", BODY, true),
		       OUTCOME_TOO_LARGE);
	/* A body shorter than it says. */
	assert_outcome(run("POST", "application/json", "500", BODY, true),
		       OUTCOME_INVALID);
}
END_TEST

static const char *const json_types[] = {
	"application/json",
	"Application/JSON",
	"application/json; charset=utf-8",
	"application/json;charset=UTF-8",
	"application/json; charset=\"utf-8\"",
};

static const char *const other_types[] = {
	"text/plain",
	"application/jsonx",
	"application/json; charset=latin1",
	"application/json; charset=utf-8; x=y",
	"application/json; boundary=x",
	"application/json;",
	"application/json; charset=\"utf-8",
	"application/x-www-form-urlencoded",
	"",
};

START_TEST(test_json_media_types_pass)
{
	assert_outcome(run("POST", json_types[_i], NULL, BODY, true),
		       OUTCOME_UNAVAILABLE);
}
END_TEST

START_TEST(test_other_media_types_refused)
{
	assert_outcome(run("POST", other_types[_i], NULL, BODY, true),
		       OUTCOME_UNSUPPORTED_MEDIA_TYPE);
}
END_TEST

START_TEST(test_absent_media_type_refused)
{
	assert_outcome(run("POST", NULL, NULL, BODY, true),
		       OUTCOME_UNSUPPORTED_MEDIA_TYPE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("request");
	TCase *tc = tcase_create("checks");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_order_of_checks);
	tcase_add_test(tc, test_content_length_forms);
	tcase_add_loop_test(tc, test_json_media_types_pass, 0,
			    (int)(sizeof(json_types) / sizeof(json_types[0])));
	tcase_add_loop_test(tc, test_other_media_types_refused, 0,
			    (int)(sizeof(other_types) / sizeof(other_types[0])));
	tcase_add_test(tc, test_absent_media_type_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
