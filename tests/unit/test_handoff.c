/* test_handoff.c - unit tests of lib/handoff/handoff.c: the target's keys
 * (handoff_check_config), the idempotency keys and the JSON handed on, of a
 * payment and of a lifecycle change. The database and delivery paths are
 * tests/integration/dispatch.test's. */
#include "config.h"

#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "configuration.h"
#include "handoff.h"

/* The defaults of the dispatch keys and MySQL timeouts that matter here. */
static void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mysql_read_timeout_s = 2;
	cfg->mysql_write_timeout_s = 2;
	cfg->dispatch_timeout_ms = 10000;
	cfg->dispatch_backoff_ms = 1000;
	cfg->dispatch_backoff_max_ms = 3600000;
	cfg->dispatch_max_attempts = 20;
	cfg->dispatch_lease_ms = 60000;
}

static const struct handoff_row sample = {
	.provider = "standard",
	.transaction_id = "tx_123",
	.transaction_id_len = 6,
	.event_id = "evt_1",
	.event_id_len = 5,
	.amount = 1999,
	.currency = "EUR",
	.received_at = "2026-11-30T14:00:00.123456Z",
	.payload = "{\"transaction_id\":\"tx_123\"}",
	.payload_len = 27,
};

START_TEST(test_target_keys)
{
	struct config cfg;
	struct error err;
	char url[] = "https://shop.example/hook", ftp[] = "ftp://x/",
	     command[] = "/usr/local/bin/fulfil", secret[] = "whsec_x";
	char *secrets[] = { secret };

	config_defaults(&cfg);
	ck_assert_int_eq(handoff_check_config(&cfg, &err), -1);
	ck_assert_msg(strstr(err.message, "neither dispatch_url nor "
					  "dispatch_command") != NULL, "%s",
		      err.message);
	cfg.dispatch_url = url;
	cfg.dispatch_command = command;
	ck_assert_int_eq(handoff_check_config(&cfg, &err), -1);
	ck_assert_msg(strstr(err.message, "set exactly one") != NULL, "%s",
		      err.message);
	cfg.dispatch_command = NULL;
	ck_assert_int_eq(handoff_check_config(&cfg, &err), 0);
	cfg.dispatch_url = ftp;
	ck_assert_int_eq(handoff_check_config(&cfg, &err), -1);
	ck_assert_ptr_null(strstr(err.message, "ftp"));
	cfg.dispatch_url = NULL;
	cfg.dispatch_command = command;
	cfg.dispatch_secret.items = secrets;
	cfg.dispatch_secret.count = 1;
	ck_assert_int_eq(handoff_check_config(&cfg, &err), -1);
	ck_assert_msg(strstr(err.message, "dispatch_secret") != NULL, "%s",
		      err.message);
}
END_TEST

/* ---- the idempotency key ---- */

START_TEST(test_key)
{
	struct handoff_row p = sample;
	struct error err;
	char key[HANDOFF_KEY_MAX], small[10];
	char longest[129];

	ck_assert_int_eq(handoff_idempotency_key(&p, key, sizeof(key), &err), 0);
	ck_assert_str_eq(key, "payhook:standard:tx_123");
	/* The longest provider and transaction id fit. */
	memset(longest, '!', 128);
	longest[128] = '\0';
	snprintf(p.provider, sizeof(p.provider), "%s",
		 "12345678901234567890123456789012");
	memcpy(p.transaction_id, longest, sizeof(longest));
	p.transaction_id_len = 128;
	ck_assert_int_eq(handoff_idempotency_key(&p, key, sizeof(key), &err), 0);
	ck_assert_uint_eq(strlen(key), 8 + 32 + 1 + 128);
	ck_assert_int_eq(handoff_idempotency_key(&p, small, sizeof(small), &err),
			 -1);
	ck_assert_str_eq(small, "");
}
END_TEST

START_TEST(test_key_refuses_what_no_header_can_carry)
{
	static const char *const bad[] = { "tx 1", "tx\r\nX-Evil: 1", "tx\x7f",
					   "t\xc3\xa9" };
	struct handoff_row p = sample;
	struct error err;
	char key[HANDOFF_KEY_MAX];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(p.transaction_id, sizeof(p.transaction_id), "%s",
			 bad[i]);
		p.transaction_id_len = strlen(bad[i]);
		ck_assert_int_eq(handoff_idempotency_key(&p, key, sizeof(key),
							 &err), -1);
	}
	/* A NUL inside the id would cut the key short. */
	memcpy(p.transaction_id, "tx\0tail", 8);
	p.transaction_id_len = 7;
	ck_assert_int_eq(handoff_idempotency_key(&p, key, sizeof(key), &err), -1);
}
END_TEST

/* A dispute of sample's payment: "lost" for the second time. */
static struct handoff_row change_sample(void)
{
	struct handoff_row p = sample;

	p.kind = HANDOFF_ROW_CHANGE;
	p.amount = 500;
	p.payload = NULL;
	p.payload_len = 0;
	snprintf(p.change.kind, sizeof(p.change.kind), "dispute");
	snprintf(p.change.state, sizeof(p.change.state), "lost");
	snprintf(p.change.object_id, sizeof(p.change.object_id), "dp_1");
	p.change.object_id_len = 4;
	p.change.n = 2;
	p.change.refunded_amount = 300;
	snprintf(p.change.dispute_state, sizeof(p.change.dispute_state),
		 "lost");
	p.change.counted = true;
	return p;
}

START_TEST(test_key_of_a_change)
{
	struct handoff_row p = change_sample();
	struct error err;
	char key[HANDOFF_KEY_MAX];

	ck_assert_int_eq(handoff_idempotency_key(&p, key, sizeof(key), &err), 0);
	ck_assert_str_eq(key, "payhook:standard:tx_123:dispute:dp_1:lost:2");
	/* The first time in a state has no :n. */
	p.change.n = 1;
	ck_assert_int_eq(handoff_idempotency_key(&p, key, sizeof(key), &err), 0);
	ck_assert_str_eq(key, "payhook:standard:tx_123:dispute:dp_1:lost");
	p.change.n = 10;
	ck_assert_int_eq(handoff_idempotency_key(&p, key, sizeof(key), &err), 0);
	ck_assert_str_eq(key, "payhook:standard:tx_123:dispute:dp_1:lost:10");
	/* An object id no header can carry, or one cut by a NUL. */
	memcpy(p.change.object_id, "dp 1", 5);
	ck_assert_int_eq(handoff_idempotency_key(&p, key, sizeof(key), &err), -1);
	ck_assert_str_eq(key, "");
	ck_assert_msg(strstr(err.message, "change") != NULL, "%s", err.message);
	memcpy(p.change.object_id, "dp\0x", 5);
	ck_assert_int_eq(handoff_idempotency_key(&p, key, sizeof(key), &err), -1);
	/* Longer than 255 bytes (it is the webhook-id too): refused. */
	memset(p.change.object_id, 'o', 250);
	p.change.object_id[250] = '\0';
	p.change.object_id_len = 250;
	ck_assert_int_eq(handoff_idempotency_key(&p, key, sizeof(key), &err), -1);
}
END_TEST

/* ---- the JSON handed on ---- */

static json_object *parse(const char *text, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *obj;

	ck_assert_ptr_nonnull(tok);
	obj = json_tokener_parse_ex(tok, text, (int)len);
	ck_assert_int_eq(json_tokener_get_error(tok), json_tokener_success);
	ck_assert_int_eq((int)json_tokener_get_parse_end(tok), (int)len);
	json_tokener_free(tok);
	return obj;
}

static const char *get_string(json_object *obj, const char *key)
{
	json_object *value = NULL;

	ck_assert(json_object_object_get_ex(obj, key, &value));
	ck_assert(json_object_is_type(value, json_type_string));
	return json_object_get_string(value);
}

START_TEST(test_body_fields)
{
	struct error err;
	size_t len = 0;
	char *body = handoff_test_body_new(&sample, &len, &err);
	json_object *obj, *amount = NULL;

	ck_assert_ptr_nonnull(body);
	ck_assert_uint_eq(strlen(body), len);
	obj = parse(body, len);
	ck_assert_int_eq(json_object_object_length(obj), 9);
	/* A row that says nothing of its source came by webhook. */
	ck_assert_str_eq(get_string(obj, "source"), "webhook");
	ck_assert_str_eq(get_string(obj, "type"), "payment");
	ck_assert_str_eq(get_string(obj, "provider"), "standard");
	ck_assert_str_eq(get_string(obj, "transaction_id"), "tx_123");
	ck_assert_str_eq(get_string(obj, "currency"), "EUR");
	ck_assert_str_eq(get_string(obj, "event_id"), "evt_1");
	ck_assert_str_eq(get_string(obj, "received_at"),
			 "2026-11-30T14:00:00.123456Z");
	ck_assert_str_eq(get_string(obj, "payload"), sample.payload);
	ck_assert(json_object_object_get_ex(obj, "amount", &amount));
	ck_assert(json_object_is_type(amount, json_type_int));
	ck_assert_int_eq(json_object_get_int64(amount), 1999);
	json_object_put(obj);
	free(body);

	{
		struct handoff_row p = sample;

		p.event_id = NULL;
		p.event_id_len = 0;
		p.amount = 9223372036854775807ULL;
		body = handoff_test_body_new(&p, &len, &err);
		ck_assert_ptr_nonnull(body);
		ck_assert_ptr_nonnull(strstr(body, "\"event_id\":null"));
		ck_assert_ptr_nonnull(strstr(body, "\"amount\":9223372036854775807,"));
		free(body);
	}
}
END_TEST

START_TEST(test_body_of_a_change)
{
	struct handoff_row p = change_sample();
	struct error err;
	size_t len = 0;
	char *body;
	json_object *obj, *value = NULL;

	/* A state first learnt by payhook-reconcile says so. */
	snprintf(p.source, sizeof(p.source), "reconcile");
	body = handoff_test_body_new(&p, &len, &err);
	ck_assert_ptr_nonnull(body);
	obj = parse(body, len);
	ck_assert_int_eq(json_object_object_length(obj), 17);
	ck_assert_str_eq(get_string(obj, "source"), "reconcile");
	ck_assert_str_eq(get_string(obj, "type"), "dispute");
	ck_assert_str_eq(get_string(obj, "state"), "lost");
	ck_assert_str_eq(get_string(obj, "object_id"), "dp_1");
	ck_assert_str_eq(get_string(obj, "transaction_id"), "tx_123");
	ck_assert_str_eq(get_string(obj, "dispute_state"), "lost");
	ck_assert(json_object_object_get_ex(obj, "amount", &value));
	ck_assert_int_eq(json_object_get_int64(value), 500);
	ck_assert(json_object_object_get_ex(obj, "n", &value));
	ck_assert_int_eq(json_object_get_int64(value), 2);
	ck_assert(json_object_object_get_ex(obj, "refunded_amount", &value));
	ck_assert(json_object_is_type(value, json_type_int));
	ck_assert_int_eq(json_object_get_int64(value), 300);
	ck_assert(json_object_object_get_ex(obj, "cancelled", &value));
	ck_assert(json_object_is_type(value, json_type_boolean));
	ck_assert(!json_object_get_boolean(value));
	ck_assert(json_object_object_get_ex(obj, "counted", &value));
	ck_assert(json_object_is_type(value, json_type_boolean));
	ck_assert(json_object_get_boolean(value));
	ck_assert(json_object_object_get_ex(obj, "not_counted_reason", &value));
	ck_assert_ptr_null(value);
	/* Not the object's newest change: no raw body. */
	ck_assert(json_object_object_get_ex(obj, "payload", &value));
	ck_assert_ptr_null(value);
	json_object_put(obj);
	free(body);

	/* No dispute, cancelled, and the newest change's raw body. */
	p.change.dispute_state[0] = '\0';
	p.change.cancelled = true;
	p.payload = (char *)"{\"x\":1}";
	p.payload_len = 7;
	body = handoff_test_body_new(&p, &len, &err);
	ck_assert_ptr_nonnull(body);
	ck_assert_ptr_nonnull(strstr(body, "\"dispute_state\":null"));
	ck_assert_ptr_nonnull(strstr(body, "\"cancelled\":true"));
	ck_assert_ptr_nonnull(strstr(body, "\"payload\":\"{\\\"x\\\":1}\""));
	free(body);

	/* In another currency than its payment: marked, with the reason. */
	p.change.counted = false;
	body = handoff_test_body_new(&p, &len, &err);
	ck_assert_ptr_nonnull(body);
	ck_assert_ptr_nonnull(strstr(body, "\"counted\":false,"
				     "\"not_counted_reason\":\"currency "
				     "differs from the payment's\""));
	free(body);

	/* An object id that is not UTF-8 can never be sent. */
	memcpy(p.change.object_id, "\xff", 2);
	p.change.object_id_len = 1;
	ck_assert_ptr_null(handoff_test_body_new(&p, &len, &err));
	ck_assert_msg(strstr(err.message, "UTF-8") != NULL, "%s", err.message);
}
END_TEST

START_TEST(test_body_escapes_the_payload)
{
	/* Quotes, backslashes, control bytes, a raw newline between tokens,
	 * "</script>", UTF-8 of 2, 3 and 4 bytes, and a NUL: the string that
	 * comes back out of the JSON is the payload, byte for byte. */
	static const char raw[] = "{\"a\": \"q\\\" b\\\\ </script>\",\n"
				  "\t\"b\": \"\xc3\xa9\xe2\x9c\x93\xf0\x9f\x92\xb3\"}"
				  "\x01\x1f\x00z";
	struct handoff_row p = sample;
	struct error err;
	size_t len = 0;
	char *body;
	json_object *obj, *payload = NULL;

	p.payload = (char *)raw;
	p.payload_len = sizeof(raw) - 1;
	body = handoff_test_body_new(&p, &len, &err);
	ck_assert_ptr_nonnull(body);
	for (size_t i = 0; i < len; i++)
		ck_assert_int_ge((unsigned char)body[i], 0x20);
	obj = parse(body, len);
	ck_assert(json_object_object_get_ex(obj, "payload", &payload));
	ck_assert_int_eq(json_object_get_string_len(payload), (int)sizeof(raw) - 1);
	ck_assert_mem_eq(json_object_get_string(payload), raw, sizeof(raw) - 1);
	json_object_put(obj);
	free(body);
}
END_TEST

START_TEST(test_body_refuses_what_is_not_utf8)
{
	static const char *const bad[] = {
		"\xff", "\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
		"\xf4\x90\x80\x80", "a\x80", "\xf0\x9f\x92",
	};
	struct handoff_row p = sample;
	struct error err;
	size_t len;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p.payload = (char *)bad[i];
		p.payload_len = strlen(bad[i]);
		ck_assert_ptr_null(handoff_test_body_new(&p, &len, &err));
		ck_assert_msg(strstr(err.message, "UTF-8") != NULL, "%s",
			      err.message);
	}
	p = sample;
	p.event_id = (char *)"\xfe";
	p.event_id_len = 1;
	ck_assert_ptr_null(handoff_test_body_new(&p, &len, &err));
}
END_TEST

static Suite *handoff_suite(void)
{
	Suite *s = suite_create("handoff");
	TCase *tc;

	tc = tcase_create("config");
	tcase_add_test(tc, test_target_keys);
	suite_add_tcase(s, tc);

	tc = tcase_create("handoff");
	tcase_add_test(tc, test_key);
	tcase_add_test(tc, test_key_refuses_what_no_header_can_carry);
	tcase_add_test(tc, test_key_of_a_change);
	tcase_add_test(tc, test_body_fields);
	tcase_add_test(tc, test_body_of_a_change);
	tcase_add_test(tc, test_body_escapes_the_payload);
	tcase_add_test(tc, test_body_refuses_what_is_not_utf8);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(handoff_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
