/* payload.c - strict reading of the webhook body (see payload.h): json-c
 * parses; a lexical pre-scan closes the gaps json-c 0.16 leaves in STRICT
 * mode and counts the keys, so that a key json-c merged away (a duplicate,
 * or one cut at an escaped NUL) is found.
 */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "currency.h"
#include "number.h"
#include "payload.h"

struct payload_parser {
	struct json_tokener *tok; /* reused for every body; reset before each */
};

/* A tokener with payhook's rules, or NULL when out of memory. json-c counts
 * the top-level object as depth 1 and accepts exactly max_depth levels
 * (checked by the unit tests at 32 and 33). No JSON_TOKENER_VALIDATE_UTF8:
 * scan_body has already checked every byte of the body against the
 * stricter table 3-7 (json-c's check would pass overlongs and surrogates),
 * and json-c's own pass costs about a tenth of a parse. */
static struct json_tokener *tokener_new(void)
{
	struct json_tokener *tok = json_tokener_new_ex(PAYLOAD_MAX_DEPTH);

	if (tok != NULL)
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
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

/* Sets the reason and evaluates to PAYLOAD_INVALID. */
#define invalid(why, ...) (error_set((why), __VA_ARGS__), PAYLOAD_INVALID)

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

enum scan_result {
	SCAN_OK,
	SCAN_BAD_UTF8,
	SCAN_BAD_JSON,
	SCAN_TOO_DEEP,
	SCAN_NUL_KEY,
};

/* What the scan learnt besides "no gap found". */
struct scan_info {
	size_t keys; /* object members seen, duplicates included */
};

/* One pass over the whole body, before json-c sees it. It does not parse:
 * it rejects what json-c 0.16 STRICT accepts although it is not JSON (raw
 * control characters in strings, single-quoted keys, NaN/Infinity, "1.",
 * "-.5", "00", "-01") and what VALIDATE_UTF8 misses (overlongs, encoded
 * surrogates, code points above U+10FFFF). Also catches NUL bytes, which
 * json-c would take as the end of input, and keys holding "\u0000", which
 * json-c cuts short (so "amount\u0000" would overwrite "amount"). It tracks
 * which strings are keys with a stack of open containers, and counts them.
 * Only makes the result stricter: a body must pass both this and json-c. */
static enum scan_result scan_body(const unsigned char *p, size_t len,
				  struct scan_info *info)
{
	bool in_string = false, escaped = false, in_key = false;
	bool expect_key = false;
	/* Bit d: the container at depth d + 1 is an object. */
	uint64_t objects = 0;
	size_t depth = 0, i = 0, n, start;

	info->keys = 0;
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
			if (escaped) {
				escaped = false;
				if (in_key && c == 'u' && len - i > 4 &&
				    memcmp(p + i + 1, "0000", 4) == 0)
					return SCAN_NUL_KEY;
			} else if (c == '\\') {
				escaped = true;
			} else if (c == '"') {
				in_string = false;
				in_key = false;
			}
			i++;
			continue;
		}
		switch (c) {
		case ' ': case '\t': case '\r': case '\n': case ':':
			i++;
			break;
		case '{': case '[':
			if (depth >= PAYLOAD_MAX_DEPTH)
				return SCAN_TOO_DEEP;
			if (c == '{')
				objects |= (uint64_t)1 << depth;
			else
				objects &= ~((uint64_t)1 << depth);
			depth++;
			expect_key = c == '{';
			i++;
			break;
		case '}': case ']':
			if (depth > 0)
				depth--;
			expect_key = false;
			i++;
			break;
		case ',':
			expect_key = depth > 0 &&
				     (objects >> (depth - 1) & 1) != 0;
			i++;
			break;
		case '"':
			in_string = true;
			if (expect_key) {
				in_key = true;
				info->keys++;
			}
			expect_key = false;
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

/* The number of object members in the tree under value. */
static size_t count_keys(struct json_object *value)
{
	size_t n = 0;

	if (json_object_is_type(value, json_type_object)) {
		json_object_object_foreach(value, key, child) {
			(void)key;
			n += 1 + count_keys(child);
		}
	} else if (json_object_is_type(value, json_type_array)) {
		size_t len = json_object_array_length(value);

		for (size_t i = 0; i < len; i++)
			n += count_keys(json_object_array_get_idx(value, i));
	}
	return n;
}

/* Maps a json-c failure to a status and reason. */
static enum payload_status tokener_failure(enum json_tokener_error jerr,
					   struct error *why)
{
	switch (jerr) {
	case json_tokener_continue:
		return invalid(why, "%s: truncated JSON", "body");
	case json_tokener_error_depth:
		return invalid(why, "%s: nested deeper than 32 levels", "body");
	case json_tokener_error_parse_utf8_string:
		return invalid(why, "%s: not valid UTF-8", "body");
#if JSON_C_VERSION_NUM >= ((0 << 16) | (17 << 8))
	/* 0.16 has no such code: a failed allocation inside its tokener
	 * surfaces as a parse error, so as "invalid". */
	case json_tokener_error_memory:
		error_set(why, "out of memory parsing the body");
		return PAYLOAD_ERROR;
#endif
	default:
		return invalid(why, "%s: not valid JSON", "body");
	}
}

enum payload_status payload_parse_json(struct payload_parser *parser,
				       const char *body, size_t len,
				       struct json_object **root,
				       struct error *why)
{
	const unsigned char *p = (const unsigned char *)body;
	struct scan_info info;
	size_t i, end;

	*root = NULL;
	if (parser == NULL || (body == NULL && len > 0)) {
		error_set(why, "payload_parse_json: bad arguments");
		return PAYLOAD_ERROR;
	}
	/* json_tokener_parse_ex takes an int length. */
	if (len > INT_MAX)
		return invalid(why, "%s: too large", "body");

	switch (scan_body(p, len, &info)) {
	case SCAN_OK:
		break;
	case SCAN_BAD_UTF8:
		return invalid(why, "%s: not valid UTF-8", "body");
	case SCAN_TOO_DEEP:
		return invalid(why, "%s: nested deeper than 32 levels", "body");
	case SCAN_NUL_KEY:
		return invalid(why, "%s: a key holds \\u0000", "body");
	case SCAN_BAD_JSON:
	default:
		return invalid(why, "%s: not valid JSON", "body");
	}
	for (i = 0; i < len && is_json_ws(p[i]); i++)
		;
	if (i == len)
		return invalid(why, "%s: empty", "body");
	/* Tells arrays, strings and bare numbers apart from syntax errors;
	 * also, json-c can't finish a bare number without a NUL after it. */
	if (p[i] != '{')
		return invalid(why, "%s: must be a JSON object", "body");

	if (parser->tok == NULL && tokener_renew(parser) != 0) {
		error_set(why, "body: out of memory");
		return PAYLOAD_ERROR;
	}
	json_tokener_reset(parser->tok);
	*root = json_tokener_parse_ex(parser->tok, body, (int)len);
	if (*root == NULL) {
		enum json_tokener_error jerr = json_tokener_get_error(parser->tok);

		/* A fresh tokener for the next body: see tokener_renew. */
		tokener_renew(parser);
		return tokener_failure(jerr == json_tokener_success ?
				       json_tokener_error_parse_unexpected : jerr,
				       why);
	}
	/* Only white space may follow the object ("{}{}" and "{}x" are
	 * errors in STRICT mode already; this also covers a NUL). */
	end = json_tokener_get_parse_end(parser->tok);
	json_tokener_reset(parser->tok);
	for (i = end; i < len && is_json_ws(p[i]); i++)
		;
	if (end > len || i != len || !json_object_is_type(*root, json_type_object)) {
		json_object_put(*root);
		*root = NULL;
		return invalid(why, "%s: not valid JSON", "body");
	}
	/* json-c keeps the last of two equal keys; other readers keep the
	 * first or refuse the body. Refusing it keeps every reader of the
	 * stored payload in agreement with what was recorded. */
	if (count_keys(*root) != info.keys) {
		json_object_put(*root);
		*root = NULL;
		return invalid(why, "%s: a key is given twice", "body");
	}
	return PAYLOAD_VALID;
}

/* The value at a dotted path, and whether it is there at all: a JSON null
 * is present with a NULL value. */
static struct json_object *lookup(struct json_object *root, const char *path,
				  bool *present)
{
	struct json_object *node = root;
	char step[128];

	*present = false;
	while (*path != '\0') {
		size_t len = strcspn(path, ".");

		if (node == NULL || len >= sizeof(step))
			return NULL;
		memcpy(step, path, len);
		step[len] = '\0';
		/* A step of digits into an array: its entry ("items.0.id"). */
		if (json_object_is_type(node, json_type_array) && len > 0 &&
		    len <= 4 && strspn(step, "0123456789") == len) {
			node = json_object_array_get_idx(node,
							 (size_t)atoi(step));
			if (node == NULL)
				return NULL;
		} else if (!json_object_is_type(node, json_type_object) ||
			   !json_object_object_get_ex(node, step, &node)) {
			return NULL;
		}
		path += len;
		if (*path == '.')
			path++;
	}
	*present = true;
	return node;
}

struct json_object *payload_lookup(struct json_object *root, const char *path)
{
	bool present;

	return lookup(root, path, &present);
}

bool payload_string_is(struct json_object *value, const char *text)
{
	size_t len = strlen(text);
	int got;

	if (!json_object_is_type(value, json_type_string))
		return false;
	got = json_object_get_string_len(value);
	return got >= 0 && (size_t)got == len &&
	       memcmp(json_object_get_string(value), text, len) == 0;
}

static bool visible_ascii(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x21 || s[i] > 0x7E)
			return false;
	return true;
}

enum payload_status payload_take_id(struct json_object *root, const char *path,
				    bool integer_allowed, bool trim, size_t max,
				    char *out, size_t *out_len,
				    struct error *why)
{
	bool present;
	struct json_object *value = lookup(root, path, &present);
	const unsigned char *s;
	size_t start, end;
	int len;

	if (!present)
		return invalid(why, "%s: required", path);
	if (integer_allowed && json_object_is_type(value, json_type_int)) {
		int64_t id = json_object_get_int64(value);

		/* Positive and exactly an int64 (json-c clamps beyond). The
		 * 19 digits of INT64_MAX fit every max payhook uses. */
		if (id < 1 || (uint64_t)id != json_object_get_uint64(value))
			return invalid(why, "%s: must be a positive integer",
				       path);
		*out_len = (size_t)snprintf(out, max + 1, "%lld",
					    (long long)id);
		return PAYLOAD_VALID;
	}
	if (!json_object_is_type(value, json_type_string))
		return invalid(why, integer_allowed ?
			       "%s: must be an integer or a string" :
			       "%s: must be a string", path);
	/* The unescaped bytes, which may hold a NUL from "\u0000". */
	s = (const unsigned char *)json_object_get_string(value);
	len = json_object_get_string_len(value);
	if (s == NULL || len < 0)
		len = 0;
	start = 0;
	end = (size_t)len;
	if (trim) {
		while (start < end && is_json_ws(s[start]))
			start++;
		while (end > start && is_json_ws(s[end - 1]))
			end--;
	}
	if (end - start < 1 || end - start > max)
		return invalid(why, "%s: must be 1-%zu bytes", path, max);
	if (!visible_ascii(s + start, end - start))
		return invalid(why, "%s: must be visible ASCII without white "
			       "space", path);
	memcpy(out, s + start, end - start);
	out[end - start] = '\0';
	*out_len = end - start;
	return PAYLOAD_VALID;
}

enum payload_status payload_take_transaction_id(struct json_object *root,
						const char *path,
						bool integer_allowed,
						const struct payload_rules *rules,
						struct payment *out,
						struct error *why)
{
	return payload_take_id(root, path, integer_allowed,
			       rules->trim_transaction_id,
			       PAYMENT_TRANSACTION_ID_MAX, out->transaction_id,
			       &out->transaction_id_len, why);
}

/* An amount of minor units written as a decimal string ("1999"): digits
 * only, 1 ..= INT64_MAX. */
static enum payload_status minor_string(struct json_object *value,
					const char *path, int64_t *amount,
					struct error *why)
{
	uint64_t n;
	int len = json_object_get_string_len(value);

	if (number_parse_n(json_object_get_string(value),
			   len > 0 ? (size_t)len : 0, INT64_MAX, &n) != NUMBER_OK ||
	    n < 1)
		return invalid(why, "%s: must be a string of 1-9223372036854775807 "
			       "minor units", path);
	*amount = (int64_t)n;
	return PAYLOAD_VALID;
}

/* A decimal string in major units ("19.99") into minor units with the
 * currency's exponent; refused unless the conversion is exact: "10.001" USD
 * is no number of cents, "1000.00" JPY is 1000 yen. Digits and one dot only:
 * no sign, no exponent, no white space. */
static enum payload_status major_decimal(struct json_object *value,
					 const char *path, const char *currency,
					 int64_t *amount, struct error *why)
{
	const char *s = json_object_get_string(value);
	/* A number's text (get_string_len counts strings only). */
	int slen = json_object_is_type(value, json_type_string) ?
			   json_object_get_string_len(value) :
			   (s != NULL ? (int)strlen(s) : 0);
	size_t len = slen > 0 ? (size_t)slen : 0;
	const char *dot = memchr(s, '.', len);
	size_t int_len = dot != NULL ? (size_t)(dot - s) : len;
	const char *frac = dot != NULL ? dot + 1 : s + len;
	size_t frac_len = len - int_len - (dot != NULL ? 1 : 0);
	int exponent = currency_exponent(currency);
	uint64_t whole, fraction = 0, scale = 1;

	if (exponent < 0)
		return invalid(why, "%s: decimal amount in a currency without a "
			       "known ISO 4217 exponent", path);
	if (number_parse_n(s, int_len, INT64_MAX, &whole) != NUMBER_OK ||
	    (dot != NULL && frac_len == 0))
		return invalid(why, "%s: must be a decimal string such as "
			       "\"19.99\"", path);
	for (size_t i = 0; i < frac_len; i++)
		if (!is_digit((unsigned char)frac[i]))
			return invalid(why, "%s: must be a decimal string such "
				       "as \"19.99\"", path);
	/* Zeros beyond the currency's decimals change nothing. */
	while (frac_len > (size_t)exponent && frac[frac_len - 1] == '0')
		frac_len--;
	if (frac_len > (size_t)exponent)
		return invalid(why, "%s: more decimals than the currency has: "
			       "not an exact amount", path);
	if (frac_len > 0 &&
	    number_parse_n(frac, frac_len, UINT64_MAX, &fraction) != NUMBER_OK)
		return invalid(why, "%s: must be a decimal string such as "
			       "\"19.99\"", path);
	for (size_t i = frac_len; i < (size_t)exponent; i++)
		fraction *= 10;
	for (int i = 0; i < exponent; i++)
		scale *= 10;
	if (whole > (INT64_MAX - fraction) / scale)
		return invalid(why, "%s: must be at most 9223372036854775807 "
			       "minor units", path);
	if (whole * scale + fraction < 1)
		return invalid(why, "%s: must be at least 1 minor unit", path);
	*amount = (int64_t)(whole * scale + fraction);
	return PAYLOAD_VALID;
}

enum payload_status payload_take_amount(struct json_object *root,
					const char *path,
					enum payload_amount_form form,
					struct payment *out, struct error *why)
{
	bool present;
	struct json_object *value = lookup(root, path, &present);
	int64_t i64;
	uint64_t u64;

	if (!present)
		return invalid(why, "%s: required", path);
	if (form == PAYLOAD_AMOUNT_DECIMAL_NUMBER) {
		/* The number's text as the body wrote it (json-c keeps a
		 * double's own text): 1e2 and -5 are refused as a string
		 * would be, 100.50 read exactly. */
		if (!json_object_is_type(value, json_type_int) &&
		    !json_object_is_type(value, json_type_double))
			return invalid(why, "%s: must be a number", path);
		return major_decimal(value, path, out->currency, &out->amount,
				     why);
	}
	if (form != PAYLOAD_AMOUNT_INTEGER) {
		if (!json_object_is_type(value, json_type_string))
			return invalid(why, "%s: must be a string", path);
		if (form == PAYLOAD_AMOUNT_MINOR_STRING)
			return minor_string(value, path, &out->amount, why);
		return major_decimal(value, path, out->currency, &out->amount,
				     why);
	}
	/* json_type_int only: 1.0 and 1e3 are doubles, "1" a string, true a
	 * boolean. */
	if (!json_object_is_type(value, json_type_int))
		return invalid(why, "%s: must be an integer", path);
	/* json-c 0.16 keeps 2^63..2^64-1 as uint64 (get_int64 clamps them to
	 * INT64_MAX), clamps anything larger to UINT64_MAX and anything below
	 * INT64_MIN to INT64_MIN. A value is in range exactly when both views
	 * agree and it is positive. */
	i64 = json_object_get_int64(value);
	u64 = json_object_get_uint64(value);
	if (i64 < 1 || (uint64_t)i64 != u64)
		return invalid(why, "%s: must be 1-9223372036854775807", path);
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

enum payload_status payload_take_currency(struct json_object *root,
					  const char *path,
					  const struct payload_rules *rules,
					  struct payment *out,
					  struct error *why)
{
	bool present = false;
	struct json_object *value = NULL;
	int len;

	if (path != NULL)
		value = lookup(root, path, &present);
	if (!present) {
		if (rules->default_currency == NULL)
			return invalid(why, "%s: required",
				       path != NULL ? path : "currency");
		/* A bad default is our configuration's fault, not the
		 * sender's. */
		if (!copy_currency(out->currency, rules->default_currency,
				   strlen(rules->default_currency))) {
			error_set(why, "default_currency: not a 3-letter code");
			return PAYLOAD_ERROR;
		}
		return PAYLOAD_VALID;
	}
	/* Present, null included: the default never replaces a bad value. */
	if (!json_object_is_type(value, json_type_string))
		return invalid(why, "%s: must be a string", path);
	len = json_object_get_string_len(value);
	if (len < 0 || !copy_currency(out->currency, json_object_get_string(value),
				      (size_t)len))
		return invalid(why, "%s: must be 3 ASCII letters", path);
	return PAYLOAD_VALID;
}

enum payload_status payload_take_money(struct json_object *root,
				       const char *amount_path,
				       enum payload_amount_form form,
				       const char *currency_path,
				       const struct payload_rules *rules,
				       struct payment *out, struct error *why)
{
	enum payload_status status = PAYLOAD_VALID;

	bool decimal = form == PAYLOAD_AMOUNT_DECIMAL ||
		       form == PAYLOAD_AMOUNT_DECIMAL_NUMBER;

	if (decimal)
		status = payload_take_currency(root, currency_path, rules, out,
					       why);
	if (status == PAYLOAD_VALID)
		status = payload_take_amount(root, amount_path, form, out, why);
	if (status == PAYLOAD_VALID && !decimal)
		status = payload_take_currency(root, currency_path, rules, out,
					       why);
	return status;
}

enum payload_status payload_set_event_id(struct payment *out, const char *text,
					 size_t len, const char *what,
					 struct error *why)
{
	out->event_id[0] = '\0';
	out->event_id_len = 0;
	if (text == NULL || len == 0)
		return PAYLOAD_VALID;
	if (len > PAYMENT_EVENT_ID_MAX ||
	    !visible_ascii((const unsigned char *)text, len))
		return invalid(why, "%s: must be 1-255 visible ASCII bytes",
			       what);
	memcpy(out->event_id, text, len);
	out->event_id[len] = '\0';
	out->event_id_len = len;
	return PAYLOAD_VALID;
}

enum payload_status payload_parse(struct payload_parser *parser,
				  const char *body, size_t len,
				  const struct payload_rules *rules,
				  struct payment *out, struct error *why)
{
	static const struct payload_rules no_rules = { NULL, false };
	struct json_object *root = NULL;
	enum payload_status status;

	error_clear(why);
	if (out == NULL) {
		error_set(why, "payload_parse: bad arguments");
		return PAYLOAD_ERROR;
	}
	memset(out, 0, sizeof(*out));
	if (rules == NULL)
		rules = &no_rules;
	status = payload_parse_json(parser, body, len, &root, why);
	if (status != PAYLOAD_VALID)
		return status;
	/* transaction_id first, so the response can name it when a later
	 * field is wrong. */
	status = payload_take_transaction_id(root, "transaction_id", false,
					     rules, out, why);
	if (status == PAYLOAD_VALID)
		status = payload_take_amount(root, "amount",
					     PAYLOAD_AMOUNT_INTEGER, out, why);
	if (status == PAYLOAD_VALID)
		status = payload_take_currency(root, "currency", rules, out,
					       why);
	json_object_put(root);
	return status;
}
