/* payload.h - strict reading of a webhook body with json-c: one JSON object
 * of valid UTF-8, nothing but white space around it, at most 32 levels deep,
 * no key given twice and no key holding \u0000 (so every JSON reader of the
 * stored body sees what payhook saw), and the field rules for the
 * transaction id, amount, currency and event id wherever a provider puts
 * them.
 *
 * Reasons for the response go into a struct error; they name the field, never
 * quote the body.
 */
#ifndef PAYHOOK_PAYLOAD_H
#define PAYHOOK_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "error.h"
#include "payment.h"

#define PAYLOAD_MAX_DEPTH 32

struct payload_rules {
	const char *default_currency; /* NULL, or 3 upper-case letters */
	bool trim_transaction_id;     /* strip leading/trailing white space */
};

enum payload_status {
	PAYLOAD_VALID = 0,
	PAYLOAD_INVALID = -1, /* the body breaks a rule: why says which */
	PAYLOAD_ERROR = -2,   /* out of memory or our configuration: not the
			       * sender's fault */
};

/* How an amount is written. */
enum payload_amount_form {
	PAYLOAD_AMOUNT_INTEGER,      /* a JSON integer of minor units */
	PAYLOAD_AMOUNT_MINOR_STRING, /* a string of minor units: "1999" */
	PAYLOAD_AMOUNT_DECIMAL,      /* a string in major units: "19.99", read
				      * with the currency's ISO 4217 exponent */
	PAYLOAD_AMOUNT_DECIMAL_NUMBER, /* a JSON number in major units (Mercado
				      * Pago's 100.5), read from its text
				      * with the exponent as a decimal
				      * string is: never through a double */
};

/* A reusable parser (holds a json_tokener). Opaque. */
struct payload_parser;

/* Returns a new parser to free with payload_parser_free, or NULL when out of
 * memory. */
struct payload_parser *payload_parser_new(void);

/* Frees a parser; NULL is fine. */
void payload_parser_free(struct payload_parser *parser);

/* Parses body[0..len) (not NUL-terminated) strictly into *root, which the
 * caller releases with json_object_put. On PAYLOAD_INVALID or PAYLOAD_ERROR
 * *root is NULL and why says what is wrong. The parser is ready for the next
 * body afterwards in every case. */
enum payload_status payload_parse_json(struct payload_parser *parser,
				       const char *body, size_t len,
				       struct json_object **root,
				       struct error *why);

/* The value at a dotted path ("data.object.id") under root, or NULL when a
 * step is missing or not an object. Borrowed from root. */
struct json_object *payload_lookup(struct json_object *root, const char *path);

/* Whether value is a string equal to text, byte for byte over its whole
 * length (a "\u0000" inside never makes a prefix compare equal). */
bool payload_string_is(struct json_object *value, const char *text);

/* An id at path into out[0..max] (NUL-terminated, *out_len bytes): a JSON
 * string of 1-max visible ASCII bytes after unescaping (white space around
 * it stripped when trim), or, when integer_allowed, a positive JSON integer
 * written as decimal text (max must be at least 19). On PAYLOAD_INVALID why
 * names path and out is untouched. */
enum payload_status payload_take_id(struct json_object *root, const char *path,
				    bool integer_allowed, bool trim, size_t max,
				    char *out, size_t *out_len,
				    struct error *why);

/* The transaction id at path: a JSON string of 1-128 visible ASCII bytes
 * after unescaping (white space around it stripped under
 * rules->trim_transaction_id), or, when integer_allowed, a positive JSON
 * integer written as decimal text. Fills out->transaction_id. */
enum payload_status payload_take_transaction_id(struct json_object *root,
						const char *path,
						bool integer_allowed,
						const struct payload_rules *rules,
						struct payment *out,
						struct error *why);

/* The amount at path in form, 1 ..= 9223372036854775807 minor units, never
 * rounded or clamped; PAYLOAD_AMOUNT_DECIMAL (and _NUMBER) needs
 * out->currency set first.
 * Fills out->amount. */
enum payload_status payload_take_amount(struct json_object *root,
					const char *path,
					enum payload_amount_form form,
					struct payment *out, struct error *why);

/* The currency at path: 3 ASCII letters, stored upper-case; when absent,
 * rules->default_currency if set (a present null is still invalid). Fills
 * out->currency. */
enum payload_status payload_take_currency(struct json_object *root,
					  const char *path,
					  const struct payload_rules *rules,
					  struct payment *out,
					  struct error *why);

/* The amount at amount_path in form and the currency at currency_path, as
 * payload_take_amount and payload_take_currency read them: the currency
 * first for a decimal amount (which needs its exponent), else the amount
 * first. Fills out->amount and out->currency; on failure why names the
 * first field that broke a rule. */
enum payload_status payload_take_money(struct json_object *root,
				       const char *amount_path,
				       enum payload_amount_form form,
				       const char *currency_path,
				       const struct payload_rules *rules,
				       struct payment *out, struct error *why);

/* Copies an event id (1-255 visible ASCII bytes) into out->event_id; text
 * NULL or empty leaves it empty. Returns PAYLOAD_INVALID for anything else,
 * naming what. */
enum payload_status payload_set_event_id(struct payment *out, const char *text,
					 size_t len, const char *what,
					 struct error *why);

/* The standard profile's body: transaction_id, amount and currency at the
 * top level, checked in that order. Parses and fills *out (provider left
 * NULL). On PAYLOAD_INVALID, out->transaction_id is filled (len > 0) when
 * the transaction_id itself was valid, so the response can name it. */
enum payload_status payload_parse(struct payload_parser *parser,
				  const char *body, size_t len,
				  const struct payload_rules *rules,
				  struct payment *out, struct error *why);

#endif
