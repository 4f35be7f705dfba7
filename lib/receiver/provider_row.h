/* provider_row.h - what every signature scheme does with a profile's row
 * (prefix provider_row_): the values of its headers, the signature's
 * outcome, the event and its fields read from a body (or an Adyen item),
 * and the headers a sender adds. The table (provider.c) and the scheme
 * modules share it, so a scheme holds only what is its own.
 */
#ifndef PAYHOOK_PROVIDER_ROW_H
#define PAYHOOK_PROVIDER_ROW_H

#include "provider_scheme.h"

/* The value of the header whose CGI name is param ("" for a header the
 * row does not have), or NULL when the request has none. */
const char *provider_row_header(const struct request *req, const char *param);

/* The provider status a signature's status makes: PROVIDER_PAYMENTS when
 * it verified, else why set to reason (or "bad signature") and
 * PROVIDER_UNAUTHORIZED, PROVIDER_ERROR for SIGNATURE_ERROR or
 * PROVIDER_UNAVAILABLE for SIGNATURE_UNAVAILABLE. */
enum provider_status provider_row_signature_outcome(enum signature_status status,
						    const char *reason,
						    struct error *why);

/* The provider status a field rule's status makes. */
enum provider_status provider_row_field_outcome(enum payload_status status);

/* Whether the event in node (a body or an Adyen item) is the profile's
 * payment event (its type noted in out->event_type). Returns
 * PROVIDER_PAYMENTS, PROVIDER_IGNORED, or PROVIDER_INVALID (why set) when
 * the event type is missing or not a string. */
enum provider_status provider_row_classify(const struct provider *p,
					   const struct request *req,
					   struct json_object *node,
					   struct provider_batch *out,
					   struct error *why);

/* Reads node's refunds, disputes and cancellations (root: the body) into
 * out. Returns PROVIDER_IGNORED when node announces some (they wait in
 * out->lifecycle), PROVIDER_PAYMENTS when it announces none (classify it
 * next), or PROVIDER_INVALID / PROVIDER_ERROR with why set. */
enum provider_status provider_row_take_lifecycle(const struct provider *p,
						 const struct request *req,
						 struct json_object *root,
						 struct json_object *node,
						 struct provider_batch *out,
						 struct error *why);

/* Fills one payment from node (the body, or an Adyen item; root: the
 * body). Returns PROVIDER_PAYMENTS, or PROVIDER_INVALID / PROVIDER_ERROR
 * with why set (out then holds the transaction id when it was valid). */
enum provider_status provider_row_take_payment(const struct provider *p,
					       const struct request *req,
					       struct json_object *root,
					       struct json_object *node,
					       struct payment *out,
					       struct error *why);

/* Adds "name: value" to h. Returns 0, or -1 with err set when it does not
 * fit. */
int provider_row_add_header(struct provider_headers *h, const char *name,
			    const char *value, struct error *err);

/* 0 when value is set, else -1 with err saying that what is needed to
 * sign. */
int provider_row_need(const char *value, const char *what,
		      struct error *err);

/* Adds the row's headers to h after a scheme's signature: the signature
 * header with signature (when not NULL), the event topic (in->topic, else
 * the payment event) and the event id (in->id) where the row has such
 * headers. Returns 0, or -1 with err set. */
int provider_row_sign_headers(const struct provider *p,
			      const struct provider_sign_input *in,
			      const char *signature, struct provider_headers *h,
			      struct error *err);

#endif
