/* payload.c - strict validation of the webhook body (see payload.h): json-c
 * parses, a lexical pre-scan closes the gaps json-c 0.16 leaves in STRICT mode.
 */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "payload.h"

struct payload_parser {
	struct json_tokener *tok; /* reused for every body; reset before each */
};

/* A tokener with payhook's rules, or NULL when out of memory. json-c counts
 * the top-level object as depth 1 and accepts exactly max_depth levels
 * (checked by the unit tests at 32 and 33). */
static struct json_tokener *tokener_new(void)
{
	struct json_tokener *tok = json_tokener_new_ex(PAYLOAD_MAX_DEPTH);

	if (tok != NULL)
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
						    JSON_TOKENER_VALIDATE_UTF8);
	return tok;
}

struct payload_parser *payload_parser_new(void)
{
	struct payload_parser *parser;

	parser = calloc(1, sizeof(*parser));
	if (parser == NULL)
		return NULL;
	parser->tok = tokener_new();
	if (parser->tok == NULL) {
		free(parser);
		return NULL;
	}
	return parser;
}

/* Replaces the tokener after a failed parse: json-c 0.16's
 * json_tokener_reset keeps a pending \uD800-\uDBFF escape, which then
 * turns the first \u escape of the next body into U+FFFD (found by the
 * fuzzer: a truncated body made the worker's next valid one a 400).
 * Returns 0, or -1 when out of memory (the old tokener is then freed too,
 * and the next call tries again). */
static int tokener_renew(struct payload_parser *parser)
{
	if (parser->tok != NULL)
		json_tokener_free(parser->tok);
	parser->tok = tokener_new();
	return parser->tok != NULL ? 0 : -1;
}

void payload_parser_free(struct payload_parser *parser)
{
	if (parser == NULL)
		return;
	if (parser->tok != NULL)
		json_tokener_free(parser->tok);
	free(parser);
}

/* Copies a fixed text (never input bytes) into reason; returns status. */
static enum payload_status fail(enum payload_status status, char *reason,
				size_t reason_cap, const char *text)
{
	if (reason != NULL && reason_cap > 0)
		snprintf(reason, reason_cap, "%s", text);
	return status;
}

static bool is_json_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool is_ascii_letter(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* Returns the length (2..4) of the well-formed UTF-8 sequence at p (Unicode
 * table 3-7: no overlongs, no surrogates, nothing above U+10FFFF), or 0.
 * p[0] must be >= 0x80. json-c's VALIDATE_UTF8 lets all three through. */
static size_t utf8_sequence(const unsigned char *p, size_t avail)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t need, i;

	if (p[0] >= 0xC2 && p[0] <= 0xDF) {
		need = 2;
	} else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
		need = 3;
		if (p[0] == 0xE0)
			lo = 0xA0;
		else if (p[0] == 0xED)
			hi = 0x9F;
	} else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
		need = 4;
		if (p[0] == 0xF0)
			lo = 0x90;
		else if (p[0] == 0xF4)
			hi = 0x8F;
	} else {
		return 0;
	}
	if (avail < need)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < need; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return need;
}

/* True when p[0..n) matches the JSON number grammar (RFC 8259 section 6). */
static bool is_json_number(const unsigned char *p, size_t n)
{
	size_t i = 0, start;

	if (i < n && p[i] == '-')
		i++;
	if (i < n && p[i] == '0') {
		i++;
	} else if (i < n && p[i] >= '1' && p[i] <= '9') {
		while (i < n && is_digit(p[i]))
			i++;
	} else {
		return false;
	}
	if (i < n && p[i] == '.') {
		start = ++i;
		while (i < n && is_digit(p[i]))
			i++;
		if (i == start)
			return false;
	}
	if (i < n && (p[i] == 'e' || p[i] == 'E')) {
		i++;
		if (i < n && (p[i] == '+' || p[i] == '-'))
			i++;
		start = i;
		while (i < n && is_digit(p[i]))
			i++;
		if (i == start)
			return false;
	}
	return i == n;
}

static bool is_number_char(unsigned char c)
{
	return is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' ||
	       c == 'E';
}

enum scan_result { SCAN_OK, SCAN_BAD_UTF8, SCAN_BAD_JSON };

/* One pass over the whole body, before json-c sees it. It does not parse:
 * it rejects what json-c 0.16 STRICT accepts although it is not JSON (raw
 * control characters in strings, single-quoted keys, NaN/Infinity, "1.",
 * "-.5", "00", "-01") and what VALIDATE_UTF8 misses (overlongs, encoded
 * surrogates, code points above U+10FFFF). Also catches NUL bytes, which
 * json-c would take as the end of input. Only makes the result stricter:
 * a body must pass both this scan and json-c. */
static enum scan_result scan_body(const unsigned char *p, size_t len)
{
	bool in_string = false, escaped = false;
	size_t i = 0, n, start;

	while (i < len) {
		unsigned char c = p[i];

		if (c >= 0x80) {
			n = utf8_sequence(p + i, len - i);
			if (n == 0)
				return SCAN_BAD_UTF8;
			if (!in_string)
				return SCAN_BAD_JSON; /* a BOM, say */
			escaped = false; /* json-c rejects "\<non-ASCII>" */
			i += n;
			continue;
		}
		if (in_string) {
			if (c < 0x20)
				return SCAN_BAD_JSON;
			if (escaped)
				escaped = false;
			else if (c == '\\')
				escaped = true;
			else if (c == '"')
				in_string = false;
			i++;
			continue;
		}
		switch (c) {
		case ' ': case '\t': case '\r': case '\n':
		case '{': case '}': case '[': case ']': case ':': case ',':
			i++;
			break;
		case '"':
			in_string = true;
			i++;
			break;
		/* letters of true, false and null; json-c checks the words */
		case 'a': case 'e': case 'f': case 'l': case 'n':
		case 'r': case 's': case 't': case 'u':
			i++;
			break;
		case '-': case '0': case '1': case '2': case '3': case '4':
		case '5': case '6': case '7': case '8': case '9':
			start = i;
			while (i < len && is_number_char(p[i]))
				i++;
			if (!is_json_number(p + start, i - start))
				return SCAN_BAD_JSON;
			break;
		default:
			return SCAN_BAD_JSON;
		}
	}
	return SCAN_OK;
}

/* Checks transaction_id and fills out on success. Returns PAYLOAD_VALID or
 * PAYLOAD_INVALID with reason set. */
static enum payload_status take_transaction_id(struct json_object *root,
					       const struct payload_rules *rules,
					       struct payment *out,
					       char *reason, size_t reason_cap)
{
	struct json_object *value;
	const unsigned char *s;
	size_t start, end, i;
	int len;

	if (!json_object_object_get_ex(root, "transaction_id", &value))
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "transaction_id: required");
	if (!json_object_is_type(value, json_type_string))
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "transaction_id: must be a string");
	/* The unescaped bytes, which may hold a NUL from "\u0000". */
	s = (const unsigned char *)json_object_get_string(value);
	len = json_object_get_string_len(value);
	if (s == NULL || len < 0)
		len = 0;
	start = 0;
	end = (size_t)len;
	if (rules->trim_transaction_id) {
		while (start < end && is_json_ws(s[start]))
			start++;
		while (end > start && is_json_ws(s[end - 1]))
			end--;
	}
	if (end - start < 1 || end - start > PAYLOAD_TRANSACTION_ID_MAX)
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "transaction_id: must be 1-128 bytes");
	for (i = start; i < end; i++)
		if (s[i] < 0x21 || s[i] > 0x7E)
			return fail(PAYLOAD_INVALID, reason, reason_cap,
				    "transaction_id: must be visible ASCII without white space");
	memcpy(out->transaction_id, s + start, end - start);
	out->transaction_id[end - start] = '\0';
	out->transaction_id_len = end - start;
	return PAYLOAD_VALID;
}

/* Checks amount and fills out on success; never clamps. */
static enum payload_status take_amount(struct json_object *root,
				       struct payment *out, char *reason,
				       size_t reason_cap)
{
	struct json_object *value;
	int64_t i64;
	uint64_t u64;

	if (!json_object_object_get_ex(root, "amount", &value))
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "amount: required");
	/* json_type_int only: 1.0 and 1e3 are doubles, "1" a string, true a
	 * boolean. */
	if (!json_object_is_type(value, json_type_int))
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "amount: must be an integer");
	/* json-c 0.16 keeps 2^63..2^64-1 as uint64 (get_int64 clamps them to
	 * INT64_MAX), clamps anything larger to UINT64_MAX and anything below
	 * INT64_MIN to INT64_MIN. A value is in range exactly when both views
	 * agree and it is positive. */
	i64 = json_object_get_int64(value);
	u64 = json_object_get_uint64(value);
	if (i64 < 1 || (uint64_t)i64 != u64)
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "amount: must be 1-9223372036854775807");
	out->amount = i64;
	return PAYLOAD_VALID;
}

/* Copies a 3-letter code upper-cased into dst[4]; false if s[0..len) is not
 * exactly 3 ASCII letters. */
static bool copy_currency(char dst[4], const char *s, size_t len)
{
	size_t i;

	if (s == NULL || len != 3)
		return false;
	for (i = 0; i < 3; i++)
		if (!is_ascii_letter((unsigned char)s[i]))
			return false;
	for (i = 0; i < 3; i++) {
		unsigned char c = (unsigned char)s[i];

		dst[i] = (char)(c >= 'a' ? c - ('a' - 'A') : c);
	}
	dst[3] = '\0';
	return true;
}

static enum payload_status take_currency(struct json_object *root,
					 const struct payload_rules *rules,
					 struct payment *out, char *reason,
					 size_t reason_cap)
{
	struct json_object *value;
	int len;

	if (!json_object_object_get_ex(root, "currency", &value)) {
		if (rules->default_currency == NULL)
			return fail(PAYLOAD_INVALID, reason, reason_cap,
				    "currency: required");
		/* A bad default is our configuration's fault, not the
		 * sender's. */
		if (!copy_currency(out->currency, rules->default_currency,
				   strlen(rules->default_currency)))
			return fail(PAYLOAD_ERROR, reason, reason_cap,
				    "default_currency: not a 3-letter code");
		return PAYLOAD_VALID;
	}
	/* Present, null included: the default never replaces a bad value. */
	if (!json_object_is_type(value, json_type_string))
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "currency: must be a string");
	len = json_object_get_string_len(value);
	if (len < 0 || !copy_currency(out->currency, json_object_get_string(value),
				      (size_t)len))
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "currency: must be 3 ASCII letters");
	return PAYLOAD_VALID;
}

/* Maps a json-c failure to a status and reason. */
static enum payload_status tokener_failure(enum json_tokener_error jerr,
					   char *reason, size_t reason_cap)
{
	switch (jerr) {
	case json_tokener_continue:
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "body: truncated JSON");
	case json_tokener_error_depth:
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "body: nested deeper than 32 levels");
	case json_tokener_error_parse_utf8_string:
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "body: not valid UTF-8");
#if JSON_C_VERSION_NUM >= ((0 << 16) | (17 << 8))
	/* 0.16 has no such code: a failed allocation inside its tokener
	 * surfaces as a parse error, so as "invalid". */
	case json_tokener_error_memory:
		return fail(PAYLOAD_ERROR, reason, reason_cap,
			    "out of memory parsing the body");
#endif
	default:
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "body: not valid JSON");
	}
}

enum payload_status payload_parse(struct payload_parser *parser,
				  const char *body, size_t len,
				  const struct payload_rules *rules,
				  struct payment *out, char *reason,
				  size_t reason_cap)
{
	static const struct payload_rules no_rules = { NULL, false };
	const unsigned char *p = (const unsigned char *)body;
	struct json_object *root = NULL;
	enum payload_status status;
	enum scan_result scan;
	size_t i, end;

	if (reason != NULL && reason_cap > 0)
		reason[0] = '\0';
	if (parser == NULL || out == NULL || (body == NULL && len > 0))
		return fail(PAYLOAD_ERROR, reason, reason_cap,
			    "payload_parse: bad arguments");
	memset(out, 0, sizeof(*out));
	if (rules == NULL)
		rules = &no_rules;
	/* json_tokener_parse_ex takes an int length. */
	if (len > INT_MAX)
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "body: too large");

	scan = scan_body(p, len);
	if (scan == SCAN_BAD_UTF8)
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "body: not valid UTF-8");
	if (scan == SCAN_BAD_JSON)
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "body: not valid JSON");
	for (i = 0; i < len && is_json_ws(p[i]); i++)
		;
	if (i == len)
		return fail(PAYLOAD_INVALID, reason, reason_cap, "body: empty");
	/* Tells arrays, strings and bare numbers apart from syntax errors;
	 * also, json-c can't finish a bare number without a NUL after it. */
	if (p[i] != '{')
		return fail(PAYLOAD_INVALID, reason, reason_cap,
			    "body: must be a JSON object");

	if (parser->tok == NULL && tokener_renew(parser) != 0)
		return fail(PAYLOAD_ERROR, reason, reason_cap,
			    "body: out of memory");
	json_tokener_reset(parser->tok);
	root = json_tokener_parse_ex(parser->tok, body, (int)len);
	if (root == NULL) {
		enum json_tokener_error jerr = json_tokener_get_error(parser->tok);

		/* A fresh tokener for the next body: see tokener_renew. */
		tokener_renew(parser);
		return tokener_failure(jerr == json_tokener_success ?
				       json_tokener_error_parse_unexpected : jerr,
				       reason, reason_cap);
	}
	/* Only white space may follow the object ("{}{}" and "{}x" are
	 * errors in STRICT mode already; this also covers a NUL). */
	end = json_tokener_get_parse_end(parser->tok);
	for (i = end; i < len && is_json_ws(p[i]); i++)
		;
	if (end > len || i != len) {
		status = fail(PAYLOAD_INVALID, reason, reason_cap,
			      "body: not valid JSON");
		goto out;
	}
	if (!json_object_is_type(root, json_type_object)) {
		status = fail(PAYLOAD_INVALID, reason, reason_cap,
			      "body: must be a JSON object");
		goto out;
	}

	/* transaction_id first, so the response can name it when a later
	 * field is wrong. Duplicate keys: json-c keeps the last one. */
	status = take_transaction_id(root, rules, out, reason, reason_cap);
	if (status != PAYLOAD_VALID)
		goto out;
	status = take_amount(root, out, reason, reason_cap);
	if (status != PAYLOAD_VALID)
		goto out;
	status = take_currency(root, rules, out, reason, reason_cap);
out:
	json_object_put(root);
	json_tokener_reset(parser->tok);
	return status;
}
