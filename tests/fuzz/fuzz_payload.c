/* fuzz_payload.c - libFuzzer target for payload_parse: any bytes as the
 * webhook body, under every rule set a configuration can choose.
 *
 * Input: byte 0 picks the rules and the reason buffer, the rest is the body.
 *   bit 0: default_currency "EUR" (else none)   bit 1: trim_transaction_id
 *   bits 2-3: reason buffer: 0,1 full cap; 2 a cap of 1..16 (bits 4-7);
 *             3 no buffer (NULL, 0)
 * When the rest holds the marker 00 FF 00, what comes before it is parsed
 * first, as an earlier request on the same worker, and the body is what
 * follows: the answer for a body must not depend on the bodies before it
 * (compared with a parser made for this body alone).
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "payload.h"

/* Bytes past the cap must keep this value: nothing may write beyond it. */
#define SENTINEL 0xA5
#define MARKER "\x00\xff\x00"
#define MARKER_LEN 3
#define REASON_BUF (PAYLOAD_REASON_MAX + 32)

/* One parser for every input, as a worker keeps one for every request. */
static struct payload_parser *parser;

static void free_parser(void)
{
	payload_parser_free(parser);
	parser = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
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

/* The field rules of SPEC.md for a payment payload_parse accepted. */
static void check_payment(const struct payment *pay)
{
	size_t i;

	FUZZ_CHECK(pay->transaction_id_len >= 1 &&
		   pay->transaction_id_len <= PAYLOAD_TRANSACTION_ID_MAX,
		   "transaction_id_len %zu", pay->transaction_id_len);
	FUZZ_CHECK(pay->transaction_id[pay->transaction_id_len] == '\0',
		   "transaction_id not NUL-terminated at its length");
	for (i = 0; i < pay->transaction_id_len; i++)
		FUZZ_CHECK((unsigned char)pay->transaction_id[i] >= 0x21 &&
			   (unsigned char)pay->transaction_id[i] <= 0x7E,
			   "transaction_id byte %zu is 0x%02x", i,
			   (unsigned char)pay->transaction_id[i]);
	FUZZ_CHECK(pay->amount >= 1, "amount %lld", (long long)pay->amount);
	for (i = 0; i < 3; i++)
		FUZZ_CHECK(pay->currency[i] >= 'A' && pay->currency[i] <= 'Z',
			   "currency byte %zu is 0x%02x", i,
			   (unsigned char)pay->currency[i]);
	FUZZ_CHECK(pay->currency[3] == '\0', "currency not NUL-terminated");
}

/* What an accepted body must look like from the outside. */
static void check_accepted_body(const unsigned char *body, size_t len)
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
}

/* The reason is NUL-terminated inside its cap and nothing past the cap
 * changed. */
static void check_reason(const unsigned char *buf, size_t cap,
			 enum payload_status st)
{
	size_t i;

	for (i = cap; i < REASON_BUF; i++)
		FUZZ_CHECK(buf[i] == SENTINEL,
			   "reason written at byte %zu with cap %zu", i, cap);
	if (cap == 0)
		return;
	FUZZ_CHECK(memchr(buf, '\0', cap) != NULL,
		   "reason not NUL-terminated within cap %zu", cap);
	if (st == PAYLOAD_VALID)
		FUZZ_CHECK(buf[0] == '\0', "reason \"%s\" on a valid body",
			   (const char *)buf);
	else if (cap > 1)
		FUZZ_CHECK(buf[0] != '\0', "no reason for status %d", (int)st);
}

static bool same_payment(const struct payment *a, const struct payment *b)
{
	return a->transaction_id_len == b->transaction_id_len &&
	       memcmp(a->transaction_id, b->transaction_id,
		      a->transaction_id_len + 1) == 0 &&
	       a->amount == b->amount &&
	       memcmp(a->currency, b->currency, sizeof(a->currency)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct payload_rules lenient = { "EUR", true };
	unsigned char reason[REASON_BUF];
	char again_reason[PAYLOAD_REASON_MAX];
	struct payload_rules rules;
	struct payment pay, again;
	struct payload_parser *fresh;
	const char *prelude;
	enum payload_status st, st2;
	const char *body;
	size_t len, cap;
	unsigned flags;

	if (size < 1)
		return 0;
	flags = data[0];
	body = (const char *)data + 1;
	len = size - 1;
	prelude = memmem(body, len, MARKER, MARKER_LEN);
	rules.default_currency = (flags & 1u) != 0 ? "EUR" : NULL;
	rules.trim_transaction_id = (flags & 2u) != 0;
	switch ((flags >> 2) & 3u) {
	case 2:
		cap = 1 + (flags >> 4);
		break;
	case 3:
		cap = 0;
		break;
	default:
		cap = PAYLOAD_REASON_MAX;
		break;
	}

	if (prelude != NULL) {
		/* An earlier request: its answer is not checked here. */
		st = payload_parse(parser, body, (size_t)(prelude - body),
				   &rules, &pay, again_reason,
				   sizeof(again_reason));
		FUZZ_CHECK(st != PAYLOAD_ERROR, "prelude: %s", again_reason);
		len -= (size_t)(prelude - body) + MARKER_LEN;
		body = prelude + MARKER_LEN;
	}

	memset(reason, SENTINEL, sizeof(reason));
	st = payload_parse(parser, body, len, &rules, &pay,
			   cap > 0 ? (char *)reason : NULL, cap);
	FUZZ_CHECK(st == PAYLOAD_VALID || st == PAYLOAD_INVALID,
		   "status %d with valid rules and no memory pressure", (int)st);
	check_reason(reason, cap, st);
	if (st == PAYLOAD_VALID) {
		check_payment(&pay);
		check_accepted_body((const unsigned char *)body, len);
	} else if (pay.transaction_id_len > 0) {
		/* The id named in an error response obeys the rules too. */
		FUZZ_CHECK(pay.transaction_id_len <= PAYLOAD_TRANSACTION_ID_MAX,
			   "transaction_id_len %zu", pay.transaction_id_len);
		FUZZ_CHECK(strlen(pay.transaction_id) == pay.transaction_id_len,
			   "transaction_id length mismatch");
		for (size_t i = 0; i < pay.transaction_id_len; i++)
			FUZZ_CHECK((unsigned char)pay.transaction_id[i] >= 0x21 &&
				   (unsigned char)pay.transaction_id[i] <= 0x7E,
				   "transaction_id byte 0x%02x",
				   (unsigned char)pay.transaction_id[i]);
	}

	/* A parser that never saw another body agrees. */
	fresh = payload_parser_new();
	if (fresh == NULL)
		FUZZ_FATAL("payload_parser_new: out of memory");
	st2 = payload_parse(fresh, body, len, &rules, &again, again_reason,
			    sizeof(again_reason));
	payload_parser_free(fresh);
	FUZZ_CHECK(st2 == st,
		   "the answer depends on earlier bodies: %d here, %d from a "
		   "fresh parser (%s)", (int)st, (int)st2, again_reason);
	if (st == PAYLOAD_VALID)
		FUZZ_CHECK(same_payment(&pay, &again),
			   "the payment depends on earlier bodies");

	/* The reused parser gives the same answer the second time. */
	st2 = payload_parse(parser, body, len, &rules, &again, again_reason,
			    sizeof(again_reason));
	FUZZ_CHECK(st2 == st, "second parse gave %d, first %d", (int)st2,
		   (int)st);
	if (st == PAYLOAD_VALID)
		FUZZ_CHECK(same_payment(&pay, &again),
			   "second parse gave another payment");

	/* A default currency and trimming only ever accept more: a body
	 * valid under stricter rules is valid, and the same, under both. */
	if (st == PAYLOAD_VALID) {
		st2 = payload_parse(parser, body, len, &lenient, &again,
				    again_reason, sizeof(again_reason));
		FUZZ_CHECK(st2 == PAYLOAD_VALID,
			   "valid under stricter rules, not under lenient: %s",
			   again_reason);
		FUZZ_CHECK(same_payment(&pay, &again),
			   "lenient rules changed the payment");
	}
	return 0;
}
