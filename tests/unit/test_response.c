/* test_response.c - the outcome table: status lines, extra headers and the
 * JSON body, for every outcome. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "configuration.h"
#include "response.h"

static struct config cfg;

static void setup(void)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.in_progress_status = 409;
	cfg.retry_after_s = 7;
}

/* Renders r and returns the body as a parsed JSON object (caller puts it). */
static json_object *render(const struct result *r, char *buf, size_t cap)
{
	struct error err;
	long len = response_render(r, &cfg, buf, cap, &err);
	const char *body;

	ck_assert_msg(len > 0, "render failed: %s", err.message);
	ck_assert_uint_eq(strlen(buf), (size_t)len);
	body = strstr(buf, "\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	return json_tokener_parse(body + 4);
}

static const struct {
	enum outcome outcome;
	const char *status_line;
	const char *name;
} table[] = {
	{ OUTCOME_PROCESSED, "Status: 200 OK\r\n", "processed" },
	{ OUTCOME_DUPLICATE, "Status: 200 OK\r\n", "duplicate" },
	{ OUTCOME_IN_PROGRESS, "Status: 409 Conflict\r\n", "in_progress" },
	{ OUTCOME_CONFLICT, "Status: 422 Unprocessable Content\r\n", "conflict" },
	{ OUTCOME_INVALID, "Status: 400 Bad Request\r\n", "invalid" },
	{ OUTCOME_UNAUTHORIZED, "Status: 401 Unauthorized\r\n", "unauthorized" },
	{ OUTCOME_METHOD_NOT_ALLOWED, "Status: 405 Method Not Allowed\r\n",
	  "method_not_allowed" },
	{ OUTCOME_LENGTH_REQUIRED, "Status: 411 Length Required\r\n",
	  "length_required" },
	{ OUTCOME_TOO_LARGE, "Status: 413 Content Too Large\r\n", "too_large" },
	{ OUTCOME_UNSUPPORTED_MEDIA_TYPE, "Status: 415 Unsupported Media Type\r\n",
	  "unsupported_media_type" },
	{ OUTCOME_UNAVAILABLE, "Status: 503 Service Unavailable\r\n",
	  "unavailable" },
	{ OUTCOME_ERROR, "Status: 500 Internal Server Error\r\n", "error" },
};

START_TEST(test_every_outcome)
{
	char buf[RESPONSE_BUFFER_SIZE];
	struct result r = { .transaction_id = "tx-1" };
	json_object *body, *field;

	response_set(&r, table[_i].outcome, "because %d", 42);
	body = render(&r, buf, sizeof(buf));
	ck_assert_msg(strncmp(buf, table[_i].status_line,
			      strlen(table[_i].status_line)) == 0,
		      "got %s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "Content-Type: application/json\r\n"));
	ck_assert_ptr_nonnull(body);
	ck_assert(json_object_object_get_ex(body, "result", &field));
	ck_assert_str_eq(json_object_get_string(field), table[_i].name);
	ck_assert_str_eq(response_outcome_name(table[_i].outcome), table[_i].name);
	ck_assert(json_object_object_get_ex(body, "transaction_id", &field));
	ck_assert_str_eq(json_object_get_string(field), "tx-1");
	ck_assert(json_object_object_get_ex(body, "reason", &field));
	ck_assert_str_eq(json_object_get_string(field), "because 42");
	json_object_put(body);
}
END_TEST

START_TEST(test_retry_after_and_allow)
{
	char buf[RESPONSE_BUFFER_SIZE];
	struct result r = { .transaction_id = "" };
	json_object *body;

	response_set(&r, OUTCOME_IN_PROGRESS, NULL);
	json_object_put(render(&r, buf, sizeof(buf)));
	ck_assert_ptr_nonnull(strstr(buf, "\r\nRetry-After: 7\r\n"));

	response_set(&r, OUTCOME_UNAVAILABLE, NULL);
	json_object_put(render(&r, buf, sizeof(buf)));
	ck_assert_ptr_nonnull(strstr(buf, "\r\nRetry-After: 7\r\n"));

	response_set(&r, OUTCOME_METHOD_NOT_ALLOWED, NULL);
	json_object_put(render(&r, buf, sizeof(buf)));
	ck_assert_ptr_nonnull(strstr(buf, "\r\nAllow: POST\r\n"));
	ck_assert_ptr_null(strstr(buf, "Retry-After"));

	response_set(&r, OUTCOME_PROCESSED, NULL);
	body = render(&r, buf, sizeof(buf));
	ck_assert_ptr_null(strstr(buf, "Retry-After"));
	ck_assert_ptr_null(strstr(buf, "Allow:"));
	/* No transaction id known, no reason: neither key is present. */
	ck_assert(!json_object_object_get_ex(body, "transaction_id", NULL));
	ck_assert(!json_object_object_get_ex(body, "reason", NULL));
	json_object_put(body);
}
END_TEST

START_TEST(test_in_progress_status_503)
{
	char buf[RESPONSE_BUFFER_SIZE];
	struct result r = { .transaction_id = "" };

	cfg.in_progress_status = 503;
	response_set(&r, OUTCOME_IN_PROGRESS, NULL);
	json_object_put(render(&r, buf, sizeof(buf)));
	ck_assert(strncmp(buf, "Status: 503 Service Unavailable\r\n", 33) == 0);
	ck_assert_int_eq(response_outcome_status(OUTCOME_IN_PROGRESS, &cfg), 503);
	ck_assert_ptr_nonnull(strstr(buf, "\r\nRetry-After: 7\r\n"));
}
END_TEST

START_TEST(test_strings_are_escaped)
{
	char buf[RESPONSE_BUFFER_SIZE];
	struct result r = { .transaction_id = "a\"b\\c</x>" };
	json_object *body, *field;

	response_set(&r, OUTCOME_INVALID, "quote \" newline \n tab \t");
	body = render(&r, buf, sizeof(buf));
	ck_assert_ptr_nonnull(body);
	ck_assert(json_object_object_get_ex(body, "transaction_id", &field));
	ck_assert_str_eq(json_object_get_string(field), "a\"b\\c</x>");
	ck_assert(json_object_object_get_ex(body, "reason", &field));
	ck_assert_str_eq(json_object_get_string(field), "quote \" newline \n tab \t");
	/* The header block has no raw newline from the reason. */
	ck_assert_ptr_null(strstr(buf, "newline \n"));
	json_object_put(body);
}
END_TEST

/* The body is byte for byte what json-c writes for the same object
 * (PLAIN, NOSLASHESCAPE), whether response.c copies the strings itself or
 * hands them to json-c to escape. */
START_TEST(test_body_is_json_c_s)
{
	static const char *const texts[] = {
		"", "tx-1", "a/b", "caf\xc3\xa9 \xe2\x82\xac", "del\x7f",
		"quote \"", "back\\slash", "tab\t", "nl\n", "bell\x07",
		"{\"result\":\"processed\"}",
	};
	const size_t n = sizeof(texts) / sizeof(texts[0]);

	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < n; j++) {
			char buf[RESPONSE_BUFFER_SIZE], want[RESPONSE_BUFFER_SIZE];
			struct result r = { .outcome = OUTCOME_PROCESSED };
			json_object *obj = json_object_new_object();
			const char *body;

			snprintf(r.transaction_id, sizeof(r.transaction_id), "%s",
				 texts[i]);
			response_set(&r, OUTCOME_INVALID, "%s", texts[j]);
			json_object_object_add(obj, "result",
					       json_object_new_string("invalid"));
			if (texts[i][0] != '\0')
				json_object_object_add(
					obj, "transaction_id",
					json_object_new_string(texts[i]));
			if (texts[j][0] != '\0')
				json_object_object_add(
					obj, "reason",
					json_object_new_string(texts[j]));
			snprintf(want, sizeof(want), "%s\n",
				 json_object_to_json_string_ext(
					 obj, JSON_C_TO_STRING_PLAIN |
						      JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_put(obj);
			json_object_put(render(&r, buf, sizeof(buf)));
			body = strstr(buf, "\r\n\r\n");
			ck_assert_ptr_nonnull(body);
			ck_assert_str_eq(body + 4, want);
		}
	}
}
END_TEST

START_TEST(test_buffer_too_small)
{
	char buf[16];
	struct result r = { .transaction_id = "tx" };
	struct error err;

	response_set(&r, OUTCOME_PROCESSED, NULL);
	ck_assert_int_eq(response_render(&r, &cfg, buf, sizeof(buf), &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "too small"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("response");
	TCase *tc = tcase_create("outcomes");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_loop_test(tc, test_every_outcome, 0,
			    (int)(sizeof(table) / sizeof(table[0])));
	tcase_add_test(tc, test_retry_after_and_allow);
	tcase_add_test(tc, test_in_progress_status_503);
	tcase_add_test(tc, test_strings_are_escaped);
	tcase_add_test(tc, test_body_is_json_c_s);
	tcase_add_test(tc, test_buffer_too_small);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
