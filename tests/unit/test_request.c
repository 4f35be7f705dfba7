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
#include "route.h"
#include "signature.h"
#include "testreq.h"

#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define BODY "{\"transaction_id\":\"tx-1\",\"amount\":5,\"currency\":\"EUR\"}"

static struct config cfg;
static struct pipeline *pipeline;

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
	ck_assert_msg(pipeline_load_config(&cfg, NULL, &err) == 0, "%s", err.message);
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
	char *secrets[] = { SECRET };
	struct signature_keyring *ring;
	struct error err;

	strcpy(id, "msg_test");
	snprintf(ts, 32, "%lld", (long long)time(NULL) + skew_s);
	ring = signature_keyring_new(secrets, 1, SECRET_WHSEC_BASE64, &err);
	ck_assert_ptr_nonnull(ring);
	ck_assert_int_eq(signature_sign_standard(ring, id, ts, body,
						 strlen(body), sig, &err), 0);
	signature_keyring_free(ring);
}

/* Runs one request to uri (NULL: none); content_length NULL means "the
 * body's length", content_type NULL means absent. */
static enum outcome run_at(const char *uri, const char *method,
			   const char *content_type, const char *content_length,
			   const char *body, bool signed_request)
{
	char id[32], ts[32], sig[SIGNATURE_TEXT_MAX];
	struct testreq t;
	struct result r;

	testreq_init(&t, method, body, strlen(body));
	testreq_set(&t, "CONTENT_TYPE", content_type);
	if (content_length != NULL)
		testreq_set(&t, "CONTENT_LENGTH", content_length);
	testreq_set(&t, "REQUEST_URI", uri);
	if (signed_request) {
		sign(body, 0, id, ts, sig);
		testreq_header(&t, "webhook-id", id);
		testreq_header(&t, "webhook-timestamp", ts);
		testreq_header(&t, "webhook-signature", sig);
	}
	pipeline_test_handle(pipeline, &t.req, &r);
	return r.outcome;
}

static enum outcome run(const char *method, const char *content_type,
			const char *content_length, const char *body,
			bool signed_request)
{
	return run_at("/webhook", method, content_type, content_length, body,
		      signed_request);
}


START_TEST(test_order_of_checks)
{
	/* Each line breaks one more rule than the next: the first rule in
	 * README's order of checks decides. */
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

/* The last path segment picks the profile: any other segment is the
 * standard profile; a profile that is not enabled is 404, before any other
 * check (the resource does not exist, whatever the method). */
START_TEST(test_routing)
{
	assert_outcome(run_at("/webhook/stripe", "POST", "application/json",
			      NULL, BODY, true), OUTCOME_NOT_FOUND);
	assert_outcome(run_at("/webhook/stripe", "GET", NULL, NULL, "", false),
		       OUTCOME_NOT_FOUND);
	assert_outcome(run_at("/webhook/stripe/?x=1", "POST",
			      "application/json", NULL, BODY, true),
		       OUTCOME_NOT_FOUND);
	assert_outcome(run_at("/hooks/standard", "POST", "application/json",
			      NULL, BODY, true), OUTCOME_UNAVAILABLE);
	assert_outcome(run_at("/webhook?provider=stripe", "POST",
			      "application/json", NULL, BODY, true),
		       OUTCOME_UNAVAILABLE);
	assert_outcome(run_at(NULL, "POST", "application/json", NULL, BODY,
			      true), OUTCOME_UNAVAILABLE);
	/* Case matters: "Stripe" is not a profile name, so standard. */
	assert_outcome(run_at("/webhook/Stripe", "POST", "application/json",
			      NULL, BODY, true), OUTCOME_UNAVAILABLE);
}
END_TEST

/* Where route_request sends uri (REQUEST_URI) under the operator's paths
 * below. */
static struct route route_of(const char *uri)
{
	struct config c = cfg;
	struct testreq t;
	struct route r;

	c.health_path = "/health";
	c.ping_path = "/ping";
	c.metrics_path = "/metrics";
	c.status_path = "/status";
	c.status_page_path = "/ops";
	testreq_init(&t, "GET", "", 0);
	testreq_set(&t, "REQUEST_URI", uri);
	route_request(&c, &t.req, &r);
	return r;
}

/* The operator's paths are whole paths (a query aside); everything else is
 * a webhook whose last segment names its profile, or standard. */
START_TEST(test_route_request)
{
	static const struct {
		const char *uri;
		enum route_target target;
		enum config_provider provider;
	} cases[] = {
		{ "/health", ROUTE_HEALTH, CONFIG_PROVIDER_STANDARD },
		{ "/health?full=1", ROUTE_HEALTH, CONFIG_PROVIDER_STANDARD },
		{ "/ping", ROUTE_PING, CONFIG_PROVIDER_STANDARD },
		{ "/metrics", ROUTE_METRICS, CONFIG_PROVIDER_STANDARD },
		{ "/status", ROUTE_STATUS, CONFIG_PROVIDER_STANDARD },
		{ "/ops", ROUTE_PAGE, CONFIG_PROVIDER_STANDARD },
		{ "/health/", ROUTE_WEBHOOK, CONFIG_PROVIDER_STANDARD },
		{ "/x/health", ROUTE_WEBHOOK, CONFIG_PROVIDER_STANDARD },
		{ "/webhook/stripe", ROUTE_WEBHOOK, CONFIG_PROVIDER_STRIPE },
		{ "/webhook/adyen?x=1", ROUTE_WEBHOOK, CONFIG_PROVIDER_ADYEN },
		{ "/webhook/Stripe", ROUTE_WEBHOOK, CONFIG_PROVIDER_STANDARD },
		{ "/webhook", ROUTE_WEBHOOK, CONFIG_PROVIDER_STANDARD },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct route r = route_of(cases[i].uri);

		ck_assert_msg(r.target == cases[i].target &&
			      r.provider == cases[i].provider,
			      "%s: target %d provider %d, want %d %d",
			      cases[i].uri, (int)r.target, (int)r.provider,
			      (int)cases[i].target, (int)cases[i].provider);
	}
}
END_TEST

static void assert_segment(const char *uri, const char *script,
			   const char *info, const char *want)
{
	struct testreq t;
	char out[REQUEST_SEGMENT_MAX + 1];

	testreq_init(&t, "POST", "", 0);
	testreq_set(&t, "REQUEST_URI", uri);
	testreq_set(&t, "SCRIPT_NAME", script);
	testreq_set(&t, "PATH_INFO", info);
	request_profile_segment(&t.req, out);
	ck_assert_msg(strcmp(out, want) == 0, "%s|%s|%s: got '%s', want '%s'",
		      uri ? uri : "-", script ? script : "-",
		      info ? info : "-", out, want);
}

START_TEST(test_profile_segment)
{
	assert_segment("/webhook/stripe", NULL, NULL, "stripe");
	assert_segment("/webhook/stripe/", NULL, NULL, "stripe");
	assert_segment("/webhook/stripe?a=/b/c", NULL, NULL, "stripe");
	assert_segment("/webhook/stripe#x", NULL, NULL, "stripe");
	assert_segment("/", NULL, NULL, "");
	assert_segment("stripe", NULL, NULL, "stripe");
	/* REQUEST_URI wins; without it SCRIPT_NAME + PATH_INFO. */
	assert_segment("/a/paddle", "/payhook.fcgi", "/stripe", "paddle");
	assert_segment(NULL, "/payhook.fcgi", "/stripe", "stripe");
	assert_segment(NULL, "/webhook/komoju", NULL, "komoju");
	assert_segment(NULL, "/webhook/komoju", "/", "komoju");
	/* Longer than any profile name could be: no segment. */
	assert_segment("/webhook/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		       NULL, NULL, "");
}
END_TEST

START_TEST(test_header_param)
{
	char out[32];

	ck_assert_int_eq(request_header_param("Stripe-Signature", out,
					      sizeof(out)), 0);
	ck_assert_str_eq(out, "HTTP_STRIPE_SIGNATURE");
	ck_assert_int_eq(request_header_param("x-square-hmacsha256-signature",
					      out, sizeof(out)), -1);
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
	tcase_add_test(tc, test_routing);
	tcase_add_test(tc, test_route_request);
	tcase_add_test(tc, test_profile_segment);
	tcase_add_test(tc, test_header_param);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
