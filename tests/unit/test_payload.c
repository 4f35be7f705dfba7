/* test_payload.c - unit tests of lib/receiver/payload.c: the body and field rules of
 * the body rules of doc/providers.md, and what json-c 0.16 STRICT lets through on its own.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "payload.h"

/* A literal with its length, NUL bytes included. */
#define LIT(s) (s), (sizeof(s) - 1)

static struct payload_parser *parser;
static struct payment pay;
/* The reason of the last parse, as the response gets it. */
static struct error why;
static const struct payload_rules plain = { NULL, false };
static const struct payload_rules trim = { NULL, true };
static const struct payload_rules usd_default = { "USD", false };

static void setup(void)
{
	parser = payload_parser_new();
	ck_assert_ptr_nonnull(parser);
	memset(&pay, 0x5A, sizeof(pay)); /* payload_parse must overwrite it */
	error_clear(&why);
}

static void teardown(void)
{
	payload_parser_free(parser);
	parser = NULL;
}

static enum payload_status parse_rules(const char *body, size_t len,
				       const struct payload_rules *rules)
{
	return payload_parse(parser, body, len, rules, &pay, &why);
}

static enum payload_status parse(const char *body, size_t len)
{
	return parse_rules(body, len, &plain);
}

static enum payload_status parse_str(const char *body)
{
	return parse(body, strlen(body));
}

static void assert_invalid(const char *body, size_t len,
			   const struct payload_rules *rules, const char *want)
{
	enum payload_status st = parse_rules(body, len, rules);

	ck_assert_msg(st == PAYLOAD_INVALID, "accepted (%d): %.*s", (int)st,
		      (int)len, body);
	ck_assert_str_eq(why.message, want);
}

static void assert_valid(const char *body, size_t len,
			 const struct payload_rules *rules)
{
	enum payload_status st = parse_rules(body, len, rules);

	ck_assert_msg(st == PAYLOAD_VALID, "rejected (%s): %.*s", why.message,
		      (int)len, body);
	ck_assert_str_eq(why.message, "");
}

/* Builds {"transaction_id":<id>,"amount":100,"currency":"EUR"} with id
 * copied as written (quotes and escapes included). */
static char *body_with_id(const char *id_json)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"transaction_id\":%s,\"amount\":100,\"currency\":\"EUR\"}",
		 id_json);
	return buf;
}

static char *body_with_amount(const char *amount_json)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"transaction_id\":\"tx-1\",\"amount\":%s,\"currency\":\"EUR\"}",
		 amount_json);
	return buf;
}

static char *body_with_currency(const char *currency_json)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"transaction_id\":\"tx-1\",\"amount\":100,\"currency\":%s}",
		 currency_json);
	return buf;
}

/* Valid fields with extra_json appended inside the object as "x":extra. */
static char *body_with_extra(const char *extra_json)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf),
		 "{\"transaction_id\":\"tx-1\",\"amount\":100,\"currency\":\"EUR\",\"x\":%s}",
		 extra_json);
	return buf;
}

/* ---- a valid body and the basics ---- */

START_TEST(test_valid_body)
{
	assert_valid(LIT("{\"transaction_id\":\"tx-1\",\"amount\":1999,\"currency\":\"EUR\"}"),
		     &plain);
	ck_assert_str_eq(pay.transaction_id, "tx-1");
	ck_assert_uint_eq(pay.transaction_id_len, 4);
	ck_assert_int_eq(pay.amount, 1999);
	ck_assert_str_eq(pay.currency, "EUR");
}
END_TEST

START_TEST(test_field_order_and_spacing_free)
{
	assert_valid(LIT("{ \"currency\" : \"GBP\" ,\n\t\"amount\" : 7 , \"transaction_id\" : \"A\" }"),
		     &plain);
	ck_assert_str_eq(pay.transaction_id, "A");
	ck_assert_int_eq(pay.amount, 7);
	ck_assert_str_eq(pay.currency, "GBP");
}
END_TEST

START_TEST(test_unknown_fields_ignored)
{
	assert_valid(LIT("{\"event\":\"payment.succeeded\",\"transaction_id\":\"tx-9\","
			 "\"meta\":{\"a\":[1,2.5,-0,1e-5,1E+5,true,false,null,\"\\u00e9\"],\"b\":{}},"
			 "\"amount\":5,\"note\":\"caf\xc3\xa9 \xf0\x9f\x98\x80 \\ud83d\\ude00 \\\"q\\\" \\/\","
			 "\"currency\":\"JPY\",\"empty\":\"\",\"list\":[]}"),
		     &plain);
	ck_assert_str_eq(pay.transaction_id, "tx-9");
	ck_assert_int_eq(pay.amount, 5);
	ck_assert_str_eq(pay.currency, "JPY");
}
END_TEST

START_TEST(test_white_space_around_object)
{
	assert_valid(LIT(" \t\r\n{\"transaction_id\":\"t\",\"amount\":1,\"currency\":\"EUR\"}\r\n\t "),
		     &plain);
	ck_assert_str_eq(pay.transaction_id, "t");
}
END_TEST

/* ---- transaction_id ---- */

START_TEST(test_transaction_id_missing)
{
	assert_invalid(LIT("{\"amount\":1,\"currency\":\"EUR\"}"), &plain,
		       "transaction_id: required");
	ck_assert_uint_eq(pay.transaction_id_len, 0);
	ck_assert_str_eq(pay.transaction_id, "");
}
END_TEST

static const char *const id_wrong_types[] = {
	"1", "1.5", "true", "null", "{}", "[\"a\"]",
};

START_TEST(test_transaction_id_wrong_type)
{
	const char *b = body_with_id(id_wrong_types[_i]);

	assert_invalid(b, strlen(b), &plain, "transaction_id: must be a string");
	ck_assert_uint_eq(pay.transaction_id_len, 0);
}
END_TEST

START_TEST(test_transaction_id_empty)
{
	const char *b = body_with_id("\"\"");

	assert_invalid(b, strlen(b), &plain, "transaction_id: must be 1-128 bytes");
}
END_TEST

START_TEST(test_transaction_id_128_accepted_129_rejected)
{
	char id[PAYMENT_TRANSACTION_ID_MAX + 4];
	char *b;

	id[0] = '"';
	memset(id + 1, 'x', 128);
	id[129] = '"';
	id[130] = '\0';
	b = body_with_id(id);
	assert_valid(b, strlen(b), &plain);
	ck_assert_uint_eq(pay.transaction_id_len, 128);
	ck_assert_uint_eq(strlen(pay.transaction_id), 128);
	ck_assert_int_eq(pay.transaction_id[127], 'x');

	memset(id + 1, 'x', 129);
	id[130] = '"';
	id[131] = '\0';
	b = body_with_id(id);
	assert_invalid(b, strlen(b), &plain, "transaction_id: must be 1-128 bytes");
	ck_assert_uint_eq(pay.transaction_id_len, 0);
}
END_TEST

/* The limit counts bytes after unescaping: 100 + 28 escaped = 128. */
START_TEST(test_transaction_id_length_after_unescaping)
{
	char id[1024];
	size_t n = 0;
	int i;
	char *b;

	id[n++] = '"';
	for (i = 0; i < 100; i++)
		id[n++] = 'a';
	for (i = 0; i < 28; i++)
		n += (size_t)sprintf(id + n, "\\u0041");
	id[n++] = '"';
	id[n] = '\0';
	b = body_with_id(id);
	assert_valid(b, strlen(b), &plain);
	ck_assert_uint_eq(pay.transaction_id_len, 128);
	ck_assert_int_eq(pay.transaction_id[127], 'A');

	/* one more escaped byte: 129 */
	memcpy(id + n - 1, "\\u0041\"", 8);
	b = body_with_id(id);
	assert_invalid(b, strlen(b), &plain, "transaction_id: must be 1-128 bytes");
}
END_TEST

START_TEST(test_transaction_id_escapes_unescaped)
{
	const char *b = body_with_id("\"a\\\"b\\\\c\\/d\"");

	assert_valid(b, strlen(b), &plain);
	ck_assert_str_eq(pay.transaction_id, "a\"b\\c/d");
	ck_assert_uint_eq(pay.transaction_id_len, 7);
}
END_TEST

static const char *const id_not_visible[] = {
	"\"a b\"",         /* space */
	"\"a\\tb\"",       /* tab, escaped */
	"\"a\\u0001b\"",   /* control byte */
	"\"a\\u0000b\"",   /* NUL after unescaping */
	"\"\\u0000\"",     /* only a NUL */
	"\"caf\xc3\xa9\"", /* raw non-ASCII */
	"\"caf\\u00e9\"",  /* escaped non-ASCII */
	"\"a\\u007fb\"",   /* DEL */
	"\"a\\ud800b\"",   /* lone surrogate: json-c makes it U+FFFD */
	"\"a\\r\\nb\"",
};

START_TEST(test_transaction_id_not_visible_ascii)
{
	const char *b = body_with_id(id_not_visible[_i]);

	assert_invalid(b, strlen(b), &plain,
		       "transaction_id: must be visible ASCII without white space");
	ck_assert_uint_eq(pay.transaction_id_len, 0);
	ck_assert_str_eq(pay.transaction_id, "");
}
END_TEST

static const char *const id_outer_space[] = {
	"\" abc\"", "\"abc \"", "\"\\tabc\"", "\"abc\\n\"", "\" abc \"",
};

START_TEST(test_transaction_id_outer_space_rejected_by_default)
{
	const char *b = body_with_id(id_outer_space[_i]);

	assert_invalid(b, strlen(b), &plain,
		       "transaction_id: must be visible ASCII without white space");
}
END_TEST

START_TEST(test_transaction_id_outer_space_trimmed)
{
	const char *b = body_with_id(id_outer_space[_i]);

	assert_valid(b, strlen(b), &trim);
	ck_assert_str_eq(pay.transaction_id, "abc");
	ck_assert_uint_eq(pay.transaction_id_len, 3);
}
END_TEST

START_TEST(test_transaction_id_trim_keeps_inner_rules)
{
	const char *b = body_with_id("\" a b \"");

	assert_invalid(b, strlen(b), &trim,
		       "transaction_id: must be visible ASCII without white space");
	b = body_with_id("\"   \"");
	assert_invalid(b, strlen(b), &trim, "transaction_id: must be 1-128 bytes");
	b = body_with_id("\" \\t\\r\\n \"");
	assert_invalid(b, strlen(b), &trim, "transaction_id: must be 1-128 bytes");
	/* NUL is not white space: not trimmed */
	b = body_with_id("\"abc\\u0000\"");
	assert_invalid(b, strlen(b), &trim,
		       "transaction_id: must be visible ASCII without white space");
}
END_TEST

/* The 128-byte limit applies to the trimmed id. */
START_TEST(test_transaction_id_trim_then_length)
{
	char id[256];
	char *b;

	memcpy(id, "\"  ", 3);
	memset(id + 3, 'k', 128);
	memcpy(id + 131, "  \"", 4);
	b = body_with_id(id);
	assert_valid(b, strlen(b), &trim);
	ck_assert_uint_eq(pay.transaction_id_len, 128);
	ck_assert_int_eq(pay.transaction_id[0], 'k');
	/* untrimmed it is 132 bytes: the length rule is checked first */
	assert_invalid(b, strlen(b), &plain, "transaction_id: must be 1-128 bytes");
}
END_TEST

START_TEST(test_transaction_id_case_preserved)
{
	const char *b = body_with_id("\"abc\"");

	assert_valid(b, strlen(b), &plain);
	ck_assert_str_eq(pay.transaction_id, "abc");
	b = body_with_id("\"ABC\"");
	assert_valid(b, strlen(b), &plain);
	ck_assert_str_eq(pay.transaction_id, "ABC");
	b = body_with_id("\"!~aZ09\"");
	assert_valid(b, strlen(b), &plain);
	ck_assert_str_eq(pay.transaction_id, "!~aZ09");
}
END_TEST

/* ---- amount ---- */

START_TEST(test_amount_missing)
{
	assert_invalid(LIT("{\"transaction_id\":\"tx-1\",\"currency\":\"EUR\"}"), &plain,
		       "amount: required");
	/* the id was valid, so the response can name it */
	ck_assert_str_eq(pay.transaction_id, "tx-1");
	ck_assert_uint_eq(pay.transaction_id_len, 4);
}
END_TEST

static const char *const amount_not_integer[] = {
	"1.0", "1e3", "1E3", "1.5", "-1.0", "0.0", "1e400", "\"100\"", "true",
	"false", "null", "{}", "[1]",
};

START_TEST(test_amount_not_integer)
{
	const char *b = body_with_amount(amount_not_integer[_i]);

	assert_invalid(b, strlen(b), &plain, "amount: must be an integer");
	ck_assert_str_eq(pay.transaction_id, "tx-1");
	ck_assert_int_eq(pay.amount, 0);
}
END_TEST

static const char *const amount_out_of_range[] = {
	"0", "-0", "-1", "9223372036854775808", "18446744073709551615",
	"18446744073709551616", "99999999999999999999999999999",
	"-9223372036854775808", "-9223372036854775809",
};

START_TEST(test_amount_out_of_range)
{
	const char *b = body_with_amount(amount_out_of_range[_i]);

	assert_invalid(b, strlen(b), &plain,
		       "amount: must be 1-9223372036854775807");
	ck_assert_str_eq(pay.transaction_id, "tx-1");
	ck_assert_int_eq(pay.amount, 0);
}
END_TEST

START_TEST(test_amount_limits_accepted)
{
	const char *b = body_with_amount("9223372036854775807");

	assert_valid(b, strlen(b), &plain);
	ck_assert_int_eq(pay.amount, INT64_MAX);
	b = body_with_amount("1");
	assert_valid(b, strlen(b), &plain);
	ck_assert_int_eq(pay.amount, 1);
	b = body_with_amount("9223372036854775806");
	assert_valid(b, strlen(b), &plain);
	ck_assert_int_eq(pay.amount, INT64_MAX - 1);
}
END_TEST

/* ---- currency ---- */

START_TEST(test_currency_missing_without_default)
{
	assert_invalid(LIT("{\"transaction_id\":\"tx-1\",\"amount\":1}"), &plain,
		       "currency: required");
	ck_assert_str_eq(pay.transaction_id, "tx-1");
}
END_TEST

START_TEST(test_currency_default_when_absent)
{
	assert_valid(LIT("{\"transaction_id\":\"tx-1\",\"amount\":1}"), &usd_default);
	ck_assert_str_eq(pay.currency, "USD");
}
END_TEST

START_TEST(test_currency_default_not_used_when_present)
{
	const char *b = body_with_currency("\"EUR\"");

	assert_valid(b, strlen(b), &usd_default);
	ck_assert_str_eq(pay.currency, "EUR");
	b = body_with_currency("\"EU\"");
	assert_invalid(b, strlen(b), &usd_default,
		       "currency: must be 3 ASCII letters");
	b = body_with_currency("null");
	assert_invalid(b, strlen(b), &usd_default, "currency: must be a string");
}
END_TEST

START_TEST(test_currency_lower_case_normalised)
{
	const char *b = body_with_currency("\"usd\"");

	assert_valid(b, strlen(b), &plain);
	ck_assert_str_eq(pay.currency, "USD");
	b = body_with_currency("\"cHf\"");
	assert_valid(b, strlen(b), &plain);
	ck_assert_str_eq(pay.currency, "CHF");
	b = body_with_currency("\"\\u0065ur\""); /* "eur", escaped */
	assert_valid(b, strlen(b), &plain);
	ck_assert_str_eq(pay.currency, "EUR");
}
END_TEST

static const char *const currency_bad[] = {
	"\"US\"", "\"USDX\"", "\"U1D\"", "\"\"", "\"U D\"", "\"US \"",
	"\"\xc3\x89UR\"", "\"US\\u0000\"", "\"U$D\"",
};

START_TEST(test_currency_not_three_letters)
{
	const char *b = body_with_currency(currency_bad[_i]);

	assert_invalid(b, strlen(b), &plain, "currency: must be 3 ASCII letters");
	ck_assert_str_eq(pay.transaction_id, "tx-1");
}
END_TEST

static const char *const currency_wrong_types[] = {
	"840", "true", "null", "[\"USD\"]", "{\"code\":\"USD\"}",
};

START_TEST(test_currency_wrong_type)
{
	const char *b = body_with_currency(currency_wrong_types[_i]);

	assert_invalid(b, strlen(b), &plain, "currency: must be a string");
}
END_TEST

START_TEST(test_bad_default_currency_is_an_error)
{
	static const struct payload_rules bad = { "US", false };
	enum payload_status st;

	st = parse_rules(LIT("{\"transaction_id\":\"tx-1\",\"amount\":1}"), &bad);
	ck_assert_int_eq(st, PAYLOAD_ERROR);
	ck_assert_str_eq(why.message, "default_currency: not a 3-letter code");
}
END_TEST

/* ---- the body as a whole ---- */

struct raw {
	const char *body;
	size_t len;
	const char *reason;
};

#define RAW(s, r) { (s), sizeof(s) - 1, (r) }
#define NOT_JSON "body: not valid JSON"
#define NOT_UTF8 "body: not valid UTF-8"
#define NOT_OBJECT "body: must be a JSON object"
#define VALID_FIELDS "\"transaction_id\":\"tx-1\",\"amount\":1,\"currency\":\"EUR\""

static const struct raw bad_utf8[] = {
	RAW("{" VALID_FIELDS ",\"x\":\"\xff\"}", NOT_UTF8),
	RAW("{\"transaction_id\":\"t\xff\",\"amount\":1,\"currency\":\"EUR\"}", NOT_UTF8),
	RAW("{" VALID_FIELDS ",\"\xff\":1}", NOT_UTF8),       /* in a key */
	RAW("{" VALID_FIELDS "}\xff", NOT_UTF8),              /* after */
	RAW("\xff{" VALID_FIELDS "}", NOT_UTF8),              /* before */
	RAW("{" VALID_FIELDS ",\"x\":\"\xc0\xaf\"}", NOT_UTF8),     /* overlong */
	RAW("{" VALID_FIELDS ",\"x\":\"\xe0\x80\xaf\"}", NOT_UTF8), /* overlong */
	RAW("{" VALID_FIELDS ",\"x\":\"\xed\xa0\x80\"}", NOT_UTF8), /* surrogate */
	RAW("{" VALID_FIELDS ",\"x\":\"\xf4\x90\x80\x80\"}", NOT_UTF8), /* > U+10FFFF */
	RAW("{" VALID_FIELDS ",\"x\":\"\xf5\x80\x80\x80\"}", NOT_UTF8),
	RAW("{" VALID_FIELDS ",\"x\":\"\x80\"}", NOT_UTF8),   /* lone continuation */
	RAW("{" VALID_FIELDS ",\"x\":\"\xc3\"}", NOT_UTF8),   /* truncated */
	RAW("{" VALID_FIELDS ",\"x\":\"\xe2\x82\"}", NOT_UTF8),
	RAW("{" VALID_FIELDS "}\xc3", NOT_UTF8),              /* truncated at end */
};

START_TEST(test_invalid_utf8_anywhere)
{
	assert_invalid(bad_utf8[_i].body, bad_utf8[_i].len, &plain,
		       bad_utf8[_i].reason);
	ck_assert_uint_eq(pay.transaction_id_len, 0);
}
END_TEST

static const struct raw not_one_object[] = {
	RAW("{" VALID_FIELDS "}x", NOT_JSON),
	RAW("{" VALID_FIELDS "} x", NOT_JSON),
	RAW("{}{}", NOT_JSON),
	RAW("{" VALID_FIELDS "}{" VALID_FIELDS "}", NOT_JSON),
	RAW("{" VALID_FIELDS "}]", NOT_JSON),
	RAW("{" VALID_FIELDS "}}", NOT_JSON),
	RAW("{" VALID_FIELDS "}\0", NOT_JSON),          /* NUL after */
	RAW("{" VALID_FIELDS "}\0{}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":\"a\0b\"}", NOT_JSON), /* NUL in a string */
	RAW("{\0" VALID_FIELDS "}", NOT_JSON),          /* NUL as space */
	RAW("\0{" VALID_FIELDS "}", NOT_JSON),
	RAW("\xef\xbb\xbf{" VALID_FIELDS "}", NOT_JSON), /* BOM */
	RAW("\v{" VALID_FIELDS "}", NOT_JSON),          /* not JSON space */
	RAW("{" VALID_FIELDS "}\f", NOT_JSON),
	RAW("{" VALID_FIELDS "}\xc2\xa0", NOT_JSON),    /* NBSP */
	RAW("[{" VALID_FIELDS "}]", NOT_OBJECT),
	RAW("[]", NOT_OBJECT),
	RAW("\"tx-1\"", NOT_OBJECT),
	RAW("1", NOT_OBJECT),
	RAW("null", NOT_OBJECT),
	RAW("true", NOT_OBJECT),
	RAW(" 42 ", NOT_OBJECT),
	RAW("", "body: empty"),
	RAW(" \r\n\t", "body: empty"),
	RAW("{\"a\":", "body: truncated JSON"),
	RAW("{", "body: truncated JSON"),
	RAW("{\"transaction_id\":\"tx-1", "body: truncated JSON"),
	RAW("{" VALID_FIELDS, "body: truncated JSON"),
	RAW("{" VALID_FIELDS ",\"x\":[1,2", "body: truncated JSON"),
};

START_TEST(test_not_exactly_one_object)
{
	assert_invalid(not_one_object[_i].body, not_one_object[_i].len, &plain,
		       not_one_object[_i].reason);
}
END_TEST

/* What json-c 0.16 rejects in STRICT mode by itself, and (marked) what it
 * accepts although it is not JSON, which payload.c's scan rejects. */
static const struct raw not_json[] = {
	RAW("{" VALID_FIELDS ",'x':1}", NOT_JSON),      /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":'y'}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":NaN}", NOT_JSON),  /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":Infinity}", NOT_JSON), /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":-Infinity}", NOT_JSON), /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":nan}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":inf}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":1.}", NOT_JSON),   /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":1.e3}", NOT_JSON), /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":-.5}", NOT_JSON),  /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":.5}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":00}", NOT_JSON),   /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":-01}", NOT_JSON),  /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":01}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":0x10}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":+1}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":1e}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":\"a\x01" "b\"}", NOT_JSON), /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":\"a\tb\"}", NOT_JSON),      /* json-c accepts */
	RAW("{" VALID_FIELDS ",\"x\":\"a\nb\"}", NOT_JSON),      /* json-c accepts */
	RAW("{\"transaction_id\":\"a\tb\",\"amount\":1,\"currency\":\"EUR\"}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":\"\\x41\"}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":\"\\'\"}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":\"\\u12\"}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":1/*c*/}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":1//c\n}", NOT_JSON),
	RAW("/*c*/{" VALID_FIELDS "}", NOT_JSON),
	RAW("{" VALID_FIELDS ",}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":[1,]}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":[1,,2]}", NOT_JSON),
	RAW("{" VALID_FIELDS ",x:1}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":True}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":nul}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\":truex}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\"::1}", NOT_JSON),
	RAW("{" VALID_FIELDS ",\"x\"}", NOT_JSON),
	RAW("{" VALID_FIELDS " \"x\":1}", NOT_JSON),
};

START_TEST(test_not_json)
{
	assert_invalid(not_json[_i].body, not_json[_i].len, &plain,
		       not_json[_i].reason);
}
END_TEST

/* Valid JSON in an ignored field passes, even values payhook would refuse
 * for amount, and a lone surrogate escape (allowed by the RFC 8259
 * grammar; json-c turns it into U+FFFD). */
static const char *const extra_valid[] = {
	"-0", "0", "0.5", "-1.5e10", "1e-5", "1E+5", "1e400", "18446744073709551616",
	"-9223372036854775809", "\"\\ud800\"", "\"\\u0000\"", "\"\x7f\"",
	"\"'\"", "\"\\b\\f\\n\\r\\t\"", "[]", "{}", "[[],{},[{}]]",
	"\"{\\\"not\\\":\\\"parsed\\\"}\"", "\"NaN\"", "true", "false", "null",
};

START_TEST(test_ignored_field_any_json)
{
	const char *b = body_with_extra(extra_valid[_i]);

	assert_valid(b, strlen(b), &plain);
	ck_assert_str_eq(pay.transaction_id, "tx-1");
	ck_assert_int_eq(pay.amount, 100);
	ck_assert_str_eq(pay.currency, "EUR");
}
END_TEST

/* levels counts the top-level object as 1: {"x":{"x":...{}...}}, or the
 * inner levels as arrays: {"x":[[...]]}. */
static char *nested_body(int levels, bool arrays)
{
	static char buf[1024];
	size_t n;
	int i;

	n = (size_t)snprintf(buf, sizeof(buf), "{" VALID_FIELDS ",\"x\":");
	for (i = 1; i < levels; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s",
				      arrays ? "[" : "{\"x\":");
	/* innermost level holds nothing */
	if (levels > 1 && !arrays) {
		n -= strlen("{\"x\":");
		buf[n++] = '{';
	}
	for (i = 1; i < levels; i++)
		buf[n++] = arrays ? ']' : '}';
	buf[n++] = '}';
	buf[n] = '\0';
	return buf;
}

START_TEST(test_nesting_32_accepted_33_rejected)
{
	const bool arrays = _i != 0;
	char *b;
	size_t opens;

	b = nested_body(32, arrays);
	opens = 0;
	for (const char *c = b; *c != '\0'; c++)
		opens += (*c == '{' || *c == '[');
	ck_assert_uint_eq(opens, 32); /* the helper builds what it says */
	assert_valid(b, strlen(b), &plain);
	ck_assert_str_eq(pay.transaction_id, "tx-1");

	b = nested_body(33, arrays);
	assert_invalid(b, strlen(b), &plain, "body: nested deeper than 32 levels");
	b = nested_body(40, arrays);
	assert_invalid(b, strlen(b), &plain, "body: nested deeper than 32 levels");
}
END_TEST

/* A key given twice: json-c keeps the last one, other JSON readers the
 * first or refuse the body. payhook refuses it, so the stored payload means
 * the same to every reader; a key with \u0000, which json-c cuts short and
 * so merges with another, is refused on its own. */
START_TEST(test_duplicate_keys_refused)
{
	assert_invalid(LIT("{\"transaction_id\":\"first\",\"amount\":1,\"currency\":\"EUR\","
			   "\"transaction_id\":\"second\"}"),
		       &plain, "body: a key is given twice");
	assert_invalid(LIT("{\"transaction_id\":\"tx-1\",\"amount\":1,\"amount\":2,"
			   "\"currency\":\"EUR\"}"),
		       &plain, "body: a key is given twice");
	/* anywhere in the body, not only among the known fields */
	assert_invalid(LIT("{" VALID_FIELDS ",\"x\":{\"a\":1,\"b\":[{\"c\":1,\"c\":1}]}}"),
		       &plain, "body: a key is given twice");
	/* equal after unescaping */
	assert_invalid(LIT("{" VALID_FIELDS ",\"ab\":1,\"a\\u0062\":2}"),
		       &plain, "body: a key is given twice");
	/* the same key in two objects is two keys */
	assert_valid(LIT("{" VALID_FIELDS ",\"x\":{\"amount\":2},\"y\":[{\"amount\":3}]}"),
		     &plain);
	ck_assert_int_eq(pay.amount, 1);
}
END_TEST

/* The adversarial review's body: "amount\u0000" would have replaced
 * amount for payhook (json-c cuts the key) but not for other readers. */
START_TEST(test_nul_in_key_refused)
{
	assert_invalid(LIT("{\"transaction_id\":\"tx1\",\"amount\":100,"
			   "\"amount\\u0000\":99999,\"currency\":\"EUR\"}"),
		       &plain, "body: a key holds \\u0000");
	assert_invalid(LIT("{\"transaction_id\\u0000\":\"tx2\",\"transaction_id\":\"tx1\","
			   "\"amount\":1,\"currency\":\"EUR\"}"),
		       &plain, "body: a key holds \\u0000");
	/* alone, too, and nested */
	assert_invalid(LIT("{" VALID_FIELDS ",\"x\":{\"\\u0000\":1}}"),
		       &plain, "body: a key holds \\u0000");
	/* \u0000 in a value is a value's business (the id rule refuses it) */
	assert_valid(LIT("{" VALID_FIELDS ",\"note\":\"a\\u0000b\"}"), &plain);
	assert_invalid(LIT("{\"transaction_id\":\"tx\\u0000\",\"amount\":1,\"currency\":\"EUR\"}"),
		       &plain, "transaction_id: must be visible ASCII without white space");
	/* "\\u0000" is a backslash and "u0000", no NUL */
	assert_valid(LIT("{" VALID_FIELDS ",\"k\\\\u0000\":1}"), &plain);
}
END_TEST

/* ---- the parser across calls, and the API edges ---- */

START_TEST(test_parser_reused_after_errors)
{
	const char *good = "{\"transaction_id\":\"again\",\"amount\":3,\"currency\":\"EUR\"}";

	assert_invalid(LIT("{\"a\":"), &plain, "body: truncated JSON");
	assert_valid(good, strlen(good), &plain);
	ck_assert_str_eq(pay.transaction_id, "again");
	assert_invalid(LIT("{" VALID_FIELDS ",\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"),
		       &plain, "body: nested deeper than 32 levels");
	assert_valid(good, strlen(good), &plain);
	assert_invalid(LIT("{" VALID_FIELDS ",\"x\":\"\\x\"}"), &plain, NOT_JSON);
	assert_valid(good, strlen(good), &plain);
	/* STRICT still in force after the resets */
	assert_invalid(LIT("{" VALID_FIELDS "}x"), &plain, NOT_JSON);
	assert_valid(good, strlen(good), &plain);
	ck_assert_int_eq(pay.amount, 3);
}
END_TEST

/* The body need not be NUL-terminated: parse from a buffer that ends
 * exactly at the closing brace (valgrind/ASan catch an overread). */
START_TEST(test_body_not_nul_terminated)
{
	const char text[] = "{" VALID_FIELDS "}";
	char *heap = malloc(sizeof(text) - 1);

	ck_assert_ptr_nonnull(heap);
	memcpy(heap, text, sizeof(text) - 1);
	assert_valid(heap, sizeof(text) - 1, &plain);
	ck_assert_str_eq(pay.transaction_id, "tx-1");
	/* a prefix of a valid body is truncated, not read past */
	assert_invalid(heap, sizeof(text) - 2, &plain, "body: truncated JSON");
	free(heap);
}
END_TEST

START_TEST(test_reason_never_echoes_input)
{
	static const char *const bodies[] = {
		"{\"transaction_id\":\"SECRET x\",\"amount\":1,\"currency\":\"EUR\"}",
		"{\"transaction_id\":\"tx\",\"amount\":\"SECRET\",\"currency\":\"EUR\"}",
		"{\"transaction_id\":\"tx\",\"amount\":1,\"currency\":\"SECRET\"}",
		"{\"SECRET\":SECRET}",
		"SECRET",
		"{\"transaction_id\":\"tx\",\"amount\":1}SECRET",
	};
	size_t i;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		ck_assert_int_eq(parse_str(bodies[i]), PAYLOAD_INVALID);
		ck_assert_msg(strstr(why.message, "SECRET") == NULL, "%s",
			      why.message);
		ck_assert_uint_gt(strlen(why.message), 0);
	}
}
END_TEST

/* Found by the fuzzer: json-c's reset kept a pending high-surrogate escape
 * from a truncated body, and the next body's first \u escape turned into
 * U+FFFD, so a valid delivery got a 400. */
START_TEST(test_no_state_from_a_failed_body)
{
	const char *truncated = "{\"a\":\"\\ud800";
	const char *valid = "{\"transaction_id\":\"\\u0041BC\",\"amount\":1,"
			    "\"currency\":\"EUR\"}";

	ck_assert_int_eq(parse_str(truncated), PAYLOAD_INVALID);
	ck_assert_int_eq(parse_str(valid), PAYLOAD_VALID);
	ck_assert_str_eq(pay.transaction_id, "ABC");
}
END_TEST

START_TEST(test_api_edges)
{
	enum payload_status st;

	st = payload_parse(NULL, LIT("{" VALID_FIELDS "}"), &plain, &pay, &why);
	ck_assert_int_eq(st, PAYLOAD_ERROR);
	st = payload_parse(parser, NULL, 5, &plain, &pay, &why);
	ck_assert_int_eq(st, PAYLOAD_ERROR);
	/* NULL, 0 is an empty body */
	st = payload_parse(parser, NULL, 0, &plain, &pay, &why);
	ck_assert_int_eq(st, PAYLOAD_INVALID);
	ck_assert_str_eq(why.message, "body: empty");
	/* NULL rules: the defaults (no default currency, no trimming) */
	st = payload_parse(parser, LIT("{\"transaction_id\":\"t\",\"amount\":1}"),
			   NULL, &pay, &why);
	ck_assert_int_eq(st, PAYLOAD_INVALID);
	ck_assert_str_eq(why.message, "currency: required");
	payload_parser_free(NULL);
}
END_TEST

#define LOOP(tc, fn, table) \
	tcase_add_loop_test((tc), (fn), 0, (int)(sizeof(table) / sizeof((table)[0])))

static Suite *payload_suite(void)
{
	Suite *s = suite_create("payload");
	TCase *tc;

	tc = tcase_create("basics");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_valid_body);
	tcase_add_test(tc, test_field_order_and_spacing_free);
	tcase_add_test(tc, test_unknown_fields_ignored);
	tcase_add_test(tc, test_white_space_around_object);
	suite_add_tcase(s, tc);

	tc = tcase_create("transaction_id");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_transaction_id_missing);
	LOOP(tc, test_transaction_id_wrong_type, id_wrong_types);
	tcase_add_test(tc, test_transaction_id_empty);
	tcase_add_test(tc, test_transaction_id_128_accepted_129_rejected);
	tcase_add_test(tc, test_transaction_id_length_after_unescaping);
	tcase_add_test(tc, test_transaction_id_escapes_unescaped);
	LOOP(tc, test_transaction_id_not_visible_ascii, id_not_visible);
	LOOP(tc, test_transaction_id_outer_space_rejected_by_default, id_outer_space);
	LOOP(tc, test_transaction_id_outer_space_trimmed, id_outer_space);
	tcase_add_test(tc, test_transaction_id_trim_keeps_inner_rules);
	tcase_add_test(tc, test_transaction_id_trim_then_length);
	tcase_add_test(tc, test_transaction_id_case_preserved);
	suite_add_tcase(s, tc);

	tc = tcase_create("amount");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_amount_missing);
	LOOP(tc, test_amount_not_integer, amount_not_integer);
	LOOP(tc, test_amount_out_of_range, amount_out_of_range);
	tcase_add_test(tc, test_amount_limits_accepted);
	suite_add_tcase(s, tc);

	tc = tcase_create("currency");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_currency_missing_without_default);
	tcase_add_test(tc, test_currency_default_when_absent);
	tcase_add_test(tc, test_currency_default_not_used_when_present);
	tcase_add_test(tc, test_currency_lower_case_normalised);
	LOOP(tc, test_currency_not_three_letters, currency_bad);
	LOOP(tc, test_currency_wrong_type, currency_wrong_types);
	tcase_add_test(tc, test_bad_default_currency_is_an_error);
	suite_add_tcase(s, tc);

	tc = tcase_create("body");
	tcase_add_checked_fixture(tc, setup, teardown);
	LOOP(tc, test_invalid_utf8_anywhere, bad_utf8);
	LOOP(tc, test_not_exactly_one_object, not_one_object);
	LOOP(tc, test_not_json, not_json);
	LOOP(tc, test_ignored_field_any_json, extra_valid);
	tcase_add_loop_test(tc, test_nesting_32_accepted_33_rejected, 0, 2);
	tcase_add_test(tc, test_duplicate_keys_refused);
	tcase_add_test(tc, test_nul_in_key_refused);
	tcase_add_test(tc, test_no_state_from_a_failed_body);
	suite_add_tcase(s, tc);

	tc = tcase_create("parser");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_parser_reused_after_errors);
	tcase_add_test(tc, test_body_not_nul_terminated);
	tcase_add_test(tc, test_reason_never_echoes_input);
	tcase_add_test(tc, test_api_edges);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(payload_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
