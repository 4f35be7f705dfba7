/* fuzz_payload.c - libFuzzer target for payload_parse and the pieces the
 * provider profiles build on (payload_parse_json, payload_lookup,
 * payload_take_amount in every amount form): any bytes as the webhook body,
 * under every rule set a configuration can choose.
 *
 * Input: byte 0 picks the rules and how the reason is asked for, the rest is
 * the body.
 *   bit 0: default_currency "EUR" (else none)   bit 1: trim_transaction_id
 *   bits 2-3: the struct error for the reason: 0,1 a cleared one; 2 one
 *             full of junk (no NUL anywhere), which must come back a
 *             NUL-terminated message; 3 none (NULL: the caller wants no
 *             reason)
 *   bits 4-7: the currency a decimal amount is read in when the body has
 *             no valid one (see decimal_currencies)
 * When the rest holds the marker 00 FF 00, what comes before it is parsed
 * first, as an earlier request on the same worker, and the body is what
 * follows: the answer for a body must not depend on the bodies before it
 * (compared with a parser made for this body alone).
 *
 * Invariants: an accepted body is one object of strict UTF-8 with no key
 * given twice and no key holding \u0000, and its payment obeys the field
 * rules; the answer never depends on earlier bodies; a reason never echoes
 * the input (checked by parsing the body again with the letters and digits
 * of every string value rotated: the reason must not change); the amount
 * forms agree with a model written here from the contract.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include <json-c/json.h>

#include "currency.h"
#include "fuzz.h"
#include "payload.h"

#define MARKER "\x00\xff\x00"
#define MARKER_LEN 3
#define JUNK 0xA5

/* The currencies a decimal amount is tried in when the body gives none:
 * every exponent ISO 4217 has, and codes payhook does not know. */
static const char *const decimal_currencies[16] = {
	"USD", "JPY", "KWD", "CLF", "EUR", "BHD", "KRW", "UYW",
	"XXX", "ABC", "GBP", "ISK", "TND", "XAU", "CHF", "VND",
};

/* One parser for every input, as a worker keeps one for every request. */
static struct payload_parser *parser;
static bool trace_results; /* FUZZ_TRACE set: one line per input */

static void free_parser(void)
{
	payload_parser_free(parser);
	parser = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	trace_results = getenv("FUZZ_TRACE") != NULL;
	parser = payload_parser_new();
	if (parser == NULL)
		FUZZ_FATAL("payload_parser_new: out of memory");
	atexit(free_parser);
	return 0;
}

static bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF),
 * written from the code point up rather than from a byte table. */
static bool valid_utf8(const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint32_t cp;
		size_t len, k;

		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((p[i] & 0xE0) == 0xC0) {
			len = 2;
			cp = p[i] & 0x1F;
		} else if ((p[i] & 0xF0) == 0xE0) {
			len = 3;
			cp = p[i] & 0x0F;
		} else if ((p[i] & 0xF8) == 0xF0) {
			len = 4;
			cp = p[i] & 0x07;
		} else {
			return false;
		}
		if (n - i < len)
			return false;
		for (k = 1; k < len; k++) {
			if ((p[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3F);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += len;
	}
	return true;
}

/* ---- a lexical view of the body: strings, and which of them are keys ---- */

struct lexed {
	size_t keys;      /* strings followed (after white space) by ':' */
	bool nul_key;     /* a key holding the escape \u0000 */
};

/* Walks the strings of body[0..len) by JSON's lexical rules (a '"' opens or
 * closes one, a backslash escapes the next byte inside one). For each
 * string, calls visit (when not NULL) with its content's bounds and whether
 * it is a key. Fills *out. */
static void lex_strings(unsigned char *body, size_t len, struct lexed *out,
			void (*visit)(unsigned char *s, size_t n, bool key))
{
	size_t i = 0;

	out->keys = 0;
	out->nul_key = false;
	while (i < len) {
		size_t start, end, j;
		bool nul = false, key;

		if (body[i] != '"') {
			i++;
			continue;
		}
		start = ++i;
		while (i < len && body[i] != '"') {
			if (body[i] == '\\' && i + 1 < len) {
				if (body[i + 1] == 'u' && len - (i + 2) >= 4 &&
				    memcmp(body + i + 2, "0000", 4) == 0)
					nul = true;
				i += 2;
			} else {
				i++;
			}
		}
		end = i < len ? i : len;
		if (i < len)
			i++; /* the closing quote */
		for (j = i; j < len && is_ws(body[j]); j++)
			;
		key = i <= len && end < len && j < len && body[j] == ':';
		if (key) {
			out->keys++;
			out->nul_key |= nul;
		}
		if (visit != NULL)
			visit(body + start, end - start, key);
	}
}

static bool is_hex(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Rotates letters and digits within their class (digits, a-f, g-z, A-F and
 * G-Z apart, so hex stays hex), leaving escapes alone: the letter after a
 * backslash, and the hex digits (up to four) after "\u". A string keeps its
 * length, its validity and its character classes. */
static void rotate_value(unsigned char *s, size_t n, bool key)
{
	if (key)
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c == '\\') {
			size_t k = 0;

			if (i + 1 < n && s[i + 1] == 'u')
				while (k < 4 && i + 2 + k < n &&
				       is_hex(s[i + 2 + k]))
					k++;
			i += 1 + k;
			continue;
		}
		if (c >= 'A' && c <= 'F')
			s[i] = (unsigned char)('A' + (c - 'A' + 1) % 6);
		else if (c >= 'G' && c <= 'Z')
			s[i] = (unsigned char)('G' + (c - 'G' + 7) % 20);
		else if (c >= 'a' && c <= 'f')
			s[i] = (unsigned char)('a' + (c - 'a' + 1) % 6);
		else if (c >= 'g' && c <= 'z')
			s[i] = (unsigned char)('g' + (c - 'g' + 7) % 20);
		else if (is_digit(c))
			s[i] = (unsigned char)('0' + (c - '0' + 7) % 10);
	}
}

/* The number of object members in the tree under value, as json-c holds
 * it (a key given twice counts once there). */
static size_t tree_keys(struct json_object *value)
{
	size_t n = 0;

	if (json_object_is_type(value, json_type_object)) {
		json_object_object_foreach(value, key, child) {
			(void)key;
			n += 1 + tree_keys(child);
		}
	} else if (json_object_is_type(value, json_type_array)) {
		size_t len = json_object_array_length(value);

		for (size_t i = 0; i < len; i++)
			n += tree_keys(json_object_array_get_idx(value, i));
	}
	return n;
}

/* ---- checks ---- */

static void check_id_text(const char *id, size_t len, const char *what)
{
	FUZZ_CHECK(len >= 1 && len <= PAYMENT_TRANSACTION_ID_MAX,
		   "%s: transaction_id_len %zu", what, len);
	FUZZ_CHECK(id[len] == '\0' && strlen(id) == len,
		   "%s: transaction_id not NUL-terminated at its length", what);
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK((unsigned char)id[i] >= 0x21 &&
			   (unsigned char)id[i] <= 0x7E,
			   "%s: transaction_id byte %zu is 0x%02x", what, i,
			   (unsigned char)id[i]);
}

/* The field rules (doc/providers.md, The standard profile's body) for a payment payload_parse accepted. */
static void check_payment(const struct payment *pay)
{
	check_id_text(pay->transaction_id, pay->transaction_id_len, "valid");
	FUZZ_CHECK(pay->amount >= 1, "amount %lld", (long long)pay->amount);
	for (size_t i = 0; i < 3; i++)
		FUZZ_CHECK(pay->currency[i] >= 'A' && pay->currency[i] <= 'Z',
			   "currency byte %zu is 0x%02x", i,
			   (unsigned char)pay->currency[i]);
	FUZZ_CHECK(pay->currency[3] == '\0', "currency not NUL-terminated");
	FUZZ_CHECK(pay->provider == NULL && pay->event_id_len == 0 &&
		   pay->event_id[0] == '\0',
		   "payload_parse set a provider or an event id");
}

/* What an accepted body must look like from the outside. */
static void check_accepted_body(const unsigned char *body, size_t len,
				const struct lexed *lx, struct json_object *root)
{
	size_t first = 0, last = len;

	while (first < len && is_ws(body[first]))
		first++;
	while (last > first && is_ws(body[last - 1]))
		last--;
	FUZZ_CHECK(last - first >= 2 && body[first] == '{' &&
		   body[last - 1] == '}',
		   "accepted a body that is not one object between white space");
	FUZZ_CHECK(memchr(body, '\0', len) == NULL, "accepted a NUL byte");
	FUZZ_CHECK(body[0] != 0xEF, "accepted a byte-order mark");
	FUZZ_CHECK(valid_utf8(body, len), "accepted invalid UTF-8");
	FUZZ_CHECK(!lx->nul_key, "accepted a key holding \\u0000");
	FUZZ_CHECK(root != NULL && tree_keys(root) == lx->keys,
		   "accepted a key given twice (%zu keys written, %zu kept)",
		   lx->keys, root != NULL ? tree_keys(root) : 0);
}

/* The reason as the caller sees it: a NUL-terminated message, empty exactly
 * when the answer is valid. */
static void check_reason(const struct error *why, enum payload_status st)
{
	FUZZ_CHECK(memchr(why->message, '\0', sizeof(why->message)) != NULL,
		   "reason not NUL-terminated");
	if (st == PAYLOAD_VALID)
		FUZZ_CHECK(why->message[0] == '\0',
			   "reason \"%s\" on a valid body", why->message);
	else
		FUZZ_CHECK(why->message[0] != '\0', "no reason for status %d",
			   (int)st);
}

static bool same_payment(const struct payment *a, const struct payment *b)
{
	return a->transaction_id_len == b->transaction_id_len &&
	       memcmp(a->transaction_id, b->transaction_id,
		      a->transaction_id_len + 1) == 0 &&
	       a->amount == b->amount &&
	       memcmp(a->currency, b->currency, sizeof(a->currency)) == 0;
}

/* ---- the amount forms, modelled from the contract ---- */

/* Digits only, 1 ..= INT64_MAX: the minor-units string. Returns whether
 * s[0..n) is one, with *out its value. */
static bool model_minor_string(const char *s, size_t n, int64_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit((unsigned char)s[i]))
			return false;
		if (v > (uint64_t)INT64_MAX / 10 ||
		    v * 10 + (uint64_t)(s[i] - '0') > (uint64_t)INT64_MAX)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = (int64_t)v;
	return v >= 1;
}

/* "<digits>[.<digits>]" in major units of a currency with exponent decimals
 * (-1: unknown), converted exactly: extra decimals must be zeros. */
static bool model_decimal(const char *s, size_t n, int exponent, int64_t *out)
{
	const char *dot = memchr(s, '.', n);
	size_t whole_len = dot != NULL ? (size_t)(dot - s) : n;
	size_t frac_len = dot != NULL ? n - whole_len - 1 : 0;
	uint64_t whole = 0, minor = 0, scale = 1;
	int e;

	if (exponent < 0 || whole_len == 0 || (dot != NULL && frac_len == 0))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s + i != dot && !is_digit((unsigned char)s[i]))
			return false;
	for (size_t i = 0; i < whole_len; i++) {
		if (whole > (uint64_t)INT64_MAX / 10)
			return false;
		whole = whole * 10 + (uint64_t)(s[i] - '0');
		if (whole > (uint64_t)INT64_MAX)
			return false;
	}
	/* The fraction as minor units: digit k (from 0) is worth
	 * 10^(exponent - 1 - k); past the exponent only zeros may follow. */
	for (size_t k = 0; k < frac_len; k++) {
		unsigned d = (unsigned)(dot[1 + k] - '0');

		if ((int)k >= exponent) {
			if (d != 0)
				return false;
			continue;
		}
		minor = minor * 10 + d;
	}
	for (e = (int)(frac_len < (size_t)exponent ? frac_len : (size_t)exponent);
	     e < exponent; e++)
		minor *= 10;
	for (e = 0; e < exponent; e++)
		scale *= 10;
	if (whole != 0 && whole > ((uint64_t)INT64_MAX - minor) / scale)
		return false;
	*out = (int64_t)(whole * scale + minor);
	return *out >= 1;
}

/* The value at a dotted path, walked here with json-c alone. */
static struct json_object *walk(struct json_object *root, const char *path)
{
	struct json_object *node = root;
	char step[64];

	while (*path != '\0') {
		size_t len = strcspn(path, ".");

		if (!json_object_is_type(node, json_type_object) ||
		    len >= sizeof(step))
			return NULL;
		memcpy(step, path, len);
		step[len] = '\0';
		if (!json_object_object_get_ex(node, step, &node))
			return NULL;
		path += len + (path[len] == '.');
	}
	return node;
}

/* A reason for a field names its path first and echoes nothing else of the
 * body; a short check here, the rotation check does the rest. */
static void check_field_reason(const struct error *why, const char *path)
{
	size_t n = strlen(path);

	FUZZ_CHECK(strncmp(why->message, path, n) == 0 &&
		   why->message[n] == ':',
		   "reason for %s does not name it: \"%s\"", path, why->message);
}

/* payload_take_amount at path in all three forms, against the model. */
static void check_amounts(struct json_object *root, const char *path,
			  const char *currency_path,
			  const struct payload_rules *rules, unsigned flags,
			  const struct payment *parsed)
{
	struct json_object *value = payload_lookup(root, path);
	struct payment pay;
	struct error why;
	enum payload_status st;
	const char *text = NULL;
	size_t text_len = 0;
	int64_t want = 0;
	bool ok;

	FUZZ_CHECK(value == walk(root, path),
		   "payload_lookup(%s) disagrees with json-c", path);
	if (json_object_is_type(value, json_type_string)) {
		int l = json_object_get_string_len(value);

		text = json_object_get_string(value);
		text_len = l > 0 ? (size_t)l : 0;
	}

	/* A JSON integer of minor units. */
	memset(&pay, 0, sizeof(pay));
	st = payload_take_amount(root, path, PAYLOAD_AMOUNT_INTEGER, &pay, &why);
	FUZZ_CHECK(st == PAYLOAD_VALID || st == PAYLOAD_INVALID,
		   "integer amount: status %d", (int)st);
	if (st == PAYLOAD_VALID) {
		FUZZ_CHECK(json_object_is_type(value, json_type_int) &&
			   pay.amount >= 1 &&
			   pay.amount == json_object_get_int64(value),
			   "integer amount %lld accepted",
			   (long long)pay.amount);
		if (parsed != NULL)
			FUZZ_CHECK(pay.amount == parsed->amount,
				   "amount %lld here, %lld from payload_parse",
				   (long long)pay.amount,
				   (long long)parsed->amount);
	} else {
		check_field_reason(&why, path);
		FUZZ_CHECK(parsed == NULL, "payload_parse accepted an amount "
			   "payload_take_amount refuses: %s", why.message);
	}

	/* A string of minor units. */
	memset(&pay, 0, sizeof(pay));
	st = payload_take_amount(root, path, PAYLOAD_AMOUNT_MINOR_STRING, &pay,
				 &why);
	ok = text != NULL && model_minor_string(text, text_len, &want);
	FUZZ_CHECK((st == PAYLOAD_VALID) == ok,
		   "minor-units string: status %d, the model says %s (%s)",
		   (int)st, ok ? "valid" : "invalid", why.message);
	if (ok)
		FUZZ_CHECK(pay.amount == want, "minor-units string: %lld, "
			   "want %lld", (long long)pay.amount, (long long)want);
	else
		check_field_reason(&why, path);

	/* A decimal in major units, in the body's currency when it has a
	 * valid one, else in the one byte 0 picks. */
	memset(&pay, 0, sizeof(pay));
	if (payload_take_currency(root, currency_path, rules, &pay, &why) !=
	    PAYLOAD_VALID)
		memcpy(pay.currency, decimal_currencies[flags >> 4 & 15u], 4);
	st = payload_take_amount(root, path, PAYLOAD_AMOUNT_DECIMAL, &pay, &why);
	ok = text != NULL && model_decimal(text, text_len,
					   currency_exponent(pay.currency),
					   &want);
	FUZZ_CHECK((st == PAYLOAD_VALID) == ok,
		   "decimal %.40s %s: status %d, the model says %s (%s)",
		   text != NULL ? text : "(not a string)", pay.currency,
		   (int)st, ok ? "valid" : "invalid", why.message);
	if (ok)
		FUZZ_CHECK(pay.amount == want, "decimal %s %s: %lld, want %lld",
			   text, pay.currency, (long long)pay.amount,
			   (long long)want);
	else
		check_field_reason(&why, path);
}

/* payload_parse_json on its own: the first step of payload_parse, and what
 * every other profile parses with. */
static void check_json_steps(const char *body, size_t len,
			     const struct payload_rules *rules, unsigned flags,
			     enum payload_status st, const struct error *why,
			     const struct payment *pay, struct json_object **out)
{
	struct json_object *root = (struct json_object *)&root; /* not NULL */
	struct error jwhy;
	enum payload_status jst;

	*out = NULL;
	jst = payload_parse_json(parser, body, len, &root, &jwhy);
	FUZZ_CHECK(jst == PAYLOAD_VALID || jst == PAYLOAD_INVALID,
		   "payload_parse_json: status %d", (int)jst);
	if (jst != PAYLOAD_VALID) {
		FUZZ_CHECK(root == NULL, "root set on status %d", (int)jst);
		FUZZ_CHECK(strncmp(jwhy.message, "body: ", 6) == 0,
			   "JSON reason does not name the body: %s",
			   jwhy.message);
		FUZZ_CHECK(st == jst && strcmp(why->message, jwhy.message) == 0,
			   "payload_parse said %d \"%s\", payload_parse_json "
			   "%d \"%s\"", (int)st, why->message, (int)jst,
			   jwhy.message);
		return;
	}
	FUZZ_CHECK(root != NULL && json_object_is_type(root, json_type_object),
		   "payload_parse_json accepted something else than an object");
	if (st != PAYLOAD_VALID)
		FUZZ_CHECK(strncmp(why->message, "body:", 5) != 0,
			   "JSON accepted, yet payload_parse refused the body: "
			   "%s", why->message);
	check_amounts(root, "amount", "currency", rules, flags,
		      st == PAYLOAD_VALID ? pay : NULL);
	/* Where Stripe and others keep theirs. */
	check_amounts(root, "data.object.amount", "data.object.currency",
		      rules, flags, NULL);
	*out = root;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct payload_rules lenient = { "EUR", true };
	struct payload_rules rules;
	struct payment pay, again;
	struct error why, why2;
	struct payload_parser *fresh;
	struct json_object *root;
	struct lexed lx, lx2;
	unsigned char *rotated;
	const char *prelude;
	enum payload_status st, st2;
	const char *body;
	size_t len;
	unsigned flags, mode;

	if (size < 1)
		return 0;
	flags = data[0];
	body = (const char *)data + 1;
	len = size - 1;
	prelude = memmem(body, len, MARKER, MARKER_LEN);
	rules.default_currency = (flags & 1u) != 0 ? "EUR" : NULL;
	rules.trim_transaction_id = (flags & 2u) != 0;
	mode = (flags >> 2) & 3u;

	if (prelude != NULL) {
		/* An earlier request: its answer is not checked here. */
		st = payload_parse(parser, body, (size_t)(prelude - body),
				   &rules, &pay, &why);
		FUZZ_CHECK(st != PAYLOAD_ERROR, "prelude: %s", why.message);
		len -= (size_t)(prelude - body) + MARKER_LEN;
		body = prelude + MARKER_LEN;
	}

	if (mode == 3) {
		/* No reason wanted: nothing may be written anywhere. */
		st = payload_parse(parser, body, len, &rules, &pay, NULL);
		st2 = payload_parse(parser, body, len, &rules, &again, &why);
		FUZZ_CHECK(st2 == st, "%d without a reason, %d with one",
			   (int)st, (int)st2);
	} else {
		if (mode == 2)
			memset(&why, JUNK, sizeof(why));
		else
			error_clear(&why);
		st = payload_parse(parser, body, len, &rules, &pay, &why);
	}
	FUZZ_CHECK(st == PAYLOAD_VALID || st == PAYLOAD_INVALID,
		   "status %d with valid rules and no memory pressure", (int)st);
	check_reason(&why, st);
	if (trace_results)
		fprintf(stderr, "fuzz_payload: %s\n",
			st == PAYLOAD_VALID ? "valid" : why.message);
	if (st == PAYLOAD_VALID) {
		check_payment(&pay);
	} else if (pay.transaction_id_len > 0) {
		/* The id named in an error response obeys the rules too. */
		check_id_text(pay.transaction_id, pay.transaction_id_len,
			      "named");
	}

	check_json_steps(body, len, &rules, flags, st, &why, &pay, &root);
	/* A copy, so the rotation below has bytes of its own. */
	rotated = malloc(len > 0 ? len : 1);
	if (rotated == NULL)
		FUZZ_FATAL("out of memory");
	if (len > 0)
		memcpy(rotated, body, len);
	lex_strings(rotated, len, &lx, NULL);
	if (st == PAYLOAD_VALID)
		check_accepted_body((const unsigned char *)body, len, &lx, root);
	json_object_put(root);

	/* A parser that never saw another body agrees. */
	fresh = payload_parser_new();
	if (fresh == NULL)
		FUZZ_FATAL("payload_parser_new: out of memory");
	st2 = payload_parse(fresh, body, len, &rules, &again, &why2);
	payload_parser_free(fresh);
	FUZZ_CHECK(st2 == st,
		   "the answer depends on earlier bodies: %d here, %d from a "
		   "fresh parser (%s)", (int)st, (int)st2, why2.message);
	FUZZ_CHECK(strcmp(why.message, why2.message) == 0,
		   "the reason depends on earlier bodies: \"%s\", then \"%s\"",
		   why.message, why2.message);
	if (st == PAYLOAD_VALID)
		FUZZ_CHECK(same_payment(&pay, &again),
			   "the payment depends on earlier bodies");

	/* The reused parser gives the same answer the second time. */
	st2 = payload_parse(parser, body, len, &rules, &again, &why2);
	FUZZ_CHECK(st2 == st, "second parse gave %d, first %d", (int)st2,
		   (int)st);
	if (st == PAYLOAD_VALID)
		FUZZ_CHECK(same_payment(&pay, &again),
			   "second parse gave another payment");

	/* The reason never echoes the body: with every string value's
	 * letters and digits rotated (keys, escapes, lengths and classes
	 * kept, so every rule gives the same answer), it is the same. */
	lex_strings(rotated, len, &lx2, rotate_value);
	st2 = payload_parse(parser, (const char *)rotated, len, &rules, &again,
			    &why2);
	FUZZ_CHECK(st2 == st && strcmp(why.message, why2.message) == 0,
		   "the reason depends on the values in the body:\n  %d %s\n"
		   "  %d %s", (int)st, why.message, (int)st2, why2.message);
	free(rotated);

	/* A default currency and trimming only ever accept more: a body
	 * valid under stricter rules is valid, and the same, under both. */
	if (st == PAYLOAD_VALID) {
		st2 = payload_parse(parser, body, len, &lenient, &again, &why2);
		FUZZ_CHECK(st2 == PAYLOAD_VALID,
			   "valid under stricter rules, not under lenient: %s",
			   why2.message);
		FUZZ_CHECK(same_payment(&pay, &again),
			   "lenient rules changed the payment");
	}
	return 0;
}
