/* payload.h - strict validation of the webhook body with json-c: one JSON
 * object of valid UTF-8, nothing but white space around it, at most 32 levels
 * deep, and the field rules of SPEC.md for transaction_id, amount and
 * currency. Other fields are allowed and ignored.
 */
#ifndef PAYHOOK_PAYLOAD_H
#define PAYHOOK_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PAYLOAD_TRANSACTION_ID_MAX 128
#define PAYLOAD_REASON_MAX 128
#define PAYLOAD_MAX_DEPTH 32

/* The fields payhook records. transaction_id is NUL-terminated and holds
 * visible ASCII only (so it never contains a NUL). */
struct payment {
	char transaction_id[PAYLOAD_TRANSACTION_ID_MAX + 1];
	size_t transaction_id_len;       /* 0 while not known */
	int64_t amount;                  /* 1 ..= INT64_MAX, minor units */
	char currency[4];                /* 3 upper-case ASCII letters + NUL */
};

struct payload_rules {
	const char *default_currency; /* NULL, or 3 upper-case letters */
	bool trim_transaction_id;     /* strip leading/trailing white space */
};

enum payload_status {
	PAYLOAD_VALID = 0,
	PAYLOAD_INVALID = -1, /* the body breaks a rule: reason says which */
	PAYLOAD_ERROR = -2,   /* out of memory: not the sender's fault */
};

/* A reusable parser (holds a json_tokener). Opaque. */
struct payload_parser;

/* Returns a new parser to free with payload_parser_free, or NULL when out of
 * memory. */
struct payload_parser *payload_parser_new(void);

/* Frees a parser; NULL is fine. */
void payload_parser_free(struct payload_parser *parser);

/* Validates body[0..len) (not NUL-terminated) under rules and fills *out.
 * On PAYLOAD_INVALID, reason holds a short text for the response such as
 * "amount: must be an integer" and out->transaction_id is filled (len > 0)
 * when the transaction_id itself was valid, so the response can name it.
 * The parser is ready for the next body afterwards in every case. */
enum payload_status payload_parse(struct payload_parser *parser,
				  const char *body, size_t len,
				  const struct payload_rules *rules,
				  struct payment *out, char *reason,
				  size_t reason_cap);

#endif
