/* provider.h - provider profiles: for each payment provider payhook speaks
 * to, how it signs a webhook, which of its events records a payment, and
 * where the transaction id, amount, currency and event id are. It sits
 * between the pipeline and the parsers (signature, payload): the pipeline
 * asks it which profile a request is for and what the request carries.
 */
#ifndef PAYHOOK_PROVIDER_H
#define PAYHOOK_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "configuration.h"
#include "error.h"
#include "lifecycle.h"
#include "payload.h"
#include "provider_lifecycle.h"
#include "request.h"
#include "signature.h"

/* Adyen may batch notification items; more than this in one request is
 * refused as invalid rather than half recorded. */
#define PROVIDER_PAYMENTS_MAX 64
#define PROVIDER_EVENT_TYPE_MAX 64

/* generic_signed_payload as the verifier follows it: literal runs of the
 * template and the three placeholders. A template needing more parts than
 * this is refused at load, so the verifier never stops short of the end. */
#define PROVIDER_TEMPLATE_PARTS_MAX 16

enum provider_template_kind {
	PROVIDER_TEMPLATE_LITERAL,   /* signed_payload[offset, offset + len) */
	PROVIDER_TEMPLATE_BODY,      /* {body} */
	PROVIDER_TEMPLATE_TIMESTAMP, /* {timestamp}: generic_timestamp_header */
	PROVIDER_TEMPLATE_URL,       /* {url}: generic_url */
};

struct provider_template_part {
	enum provider_template_kind kind;
	size_t offset, len; /* literals only */
};

/* Splits the generic profile's generic_signed_payload into the parts the
 * verifier signs, in order, into parts[0..*count). Returns 0, or -1 with err
 * set when the template cannot be followed to its end: {body} not exactly
 * once, more than PROVIDER_TEMPLATE_PARTS_MAX parts, {timestamp} without
 * generic_timestamp_header or that header set but not signed, {url}
 * without generic_url. Can be called on any loaded configuration. */
int provider_generic_template(const struct config_generic *generic,
			      struct provider_template_part *parts,
			      size_t *count, struct error *err);

/* The cross-key checks of the providers' keys, after config_load: every
 * enabled profile has a secret (the standard one unless signature_scheme
 * = none), square has square_notification_url, and generic has the keys
 * its template and fields need. Returns 0, or -1 with err saying what to
 * set. */
int provider_check_config(const struct config *cfg, struct error *err);

/* The enabled profiles with their keys. Opaque. */
struct provider_set;

/* One profile. Opaque; valid while its set lives. */
struct provider;

enum provider_status {
	PROVIDER_PAYMENTS = 0, /* signed, and carries 1 or more payments */
	PROVIDER_IGNORED,      /* signed, but not the profile's payment event
				* (lifecycle events, if any, are in the
				* batch: see provider_batch) */
	PROVIDER_UNAUTHORIZED, /* signature missing, malformed, stale or wrong */
	PROVIDER_INVALID,      /* a payment event that breaks a field rule, or a
				* body that is no event of this provider */
	PROVIDER_ERROR,        /* libcrypto or memory failed: ours, not theirs */
};

/* What a request carries. */
struct provider_batch {
	size_t count;                         /* payments[0..count) */
	struct payment payments[PROVIDER_PAYMENTS_MAX];
	/* Refunds, disputes and cancellations the request announces,
	 * lifecycle[0..lifecycle_count), read and checked. The status is
	 * PROVIDER_IGNORED for a request of lifecycle events only
	 * (PROVIDER_PAYMENTS when an Adyen batch holds payments too): the
	 * pipeline records them either way. */
	size_t lifecycle_count;
	struct lifecycle_event lifecycle[PROVIDER_LIFECYCLE_MAX];
	char event_type[PROVIDER_EVENT_TYPE_MAX + 1]; /* for the log; "" if none */
	/* The body to send for a 2xx instead of payhook's JSON, as the
	 * provider requires (Adyen: "[accepted]"); NULL for the JSON. */
	const char *success_body;
	/* PROVIDER_UNAUTHORIZED for a request that carried no signature at
	 * all (the inbox lets those go first). */
	bool signature_missing;
};

/* Where a provider puts what payhook reads, for the side that writes such
 * events (payhook-sign's samples). Paths are dotted JSON paths; NULL when the
 * provider has no such field or it travels in a header. The generic
 * profile's come from its configuration, so they are all NULL here. */
struct provider_fields {
	const char *event_path;     /* the event type */
	const char *payment_event;  /* its value for a payment */
	const char *status_path, *status_value; /* a second condition */
	const char *event_id_path;
	const char *id_path, *amount_path, *currency_path;
	enum payload_amount_form amount_form;
	bool id_integer;
};

/* The fields of a built-in profile. Can't fail. */
void provider_fields(enum config_provider provider,
		     struct provider_fields *out);

/* Builds the enabled profiles of cfg (which must outlive the set) with their
 * keyrings. Returns the set, or NULL with err set (a bad secret, out of
 * memory). */
struct provider_set *provider_set_new(const struct config *cfg,
				      struct error *err);

/* Frees the set; NULL is fine. */
void provider_set_free(struct provider_set *set);

/* Profile id (the one the request's path names, route.h) when it is
 * enabled; NULL when not (404). */
const struct provider *provider_enabled(const struct provider_set *set,
					enum config_provider id);

/* The profile's name ("stripe") and its place in enum config_provider. */
const char *provider_name(const struct provider *provider);
enum config_provider provider_id(const struct provider *provider);

/* When event_type is an announcement of a refund or a dispute that the
 * profile does not read because another event of its provider carries
 * the same change (Stripe's charge.refunded: the Refund's refund.*
 * events), the events to subscribe to instead ("refund.created,
 * refund.updated, refund.failed"); else NULL. Can't fail. */
const char *provider_ignored_instead(const struct provider *provider,
				     const char *event_type);

/* Checks the signature of body[0..len) as the profile's provider signs it
 * (at time now), parses the body strictly and classifies the event: on
 * PROVIDER_PAYMENTS, out holds the payments to record; on PROVIDER_IGNORED,
 * out->event_type says what came and out->lifecycle the refunds, disputes
 * and cancellations it announces (a lifecycle event that breaks a field
 * rule is PROVIDER_INVALID). On any other status why holds a short
 * reason for the response (never quoting the body or a secret). When a
 * payment event's transaction id was valid before another field broke a
 * rule, out->payments[0] keeps it so the answer can name it. */
enum provider_status provider_read(const struct provider *provider,
				   const struct request *req,
				   struct payload_parser *parser,
				   const char *body, size_t len, time_t now,
				   struct provider_batch *out,
				   struct error *why);

/* provider_read of a delivery the inbox kept (payhook-reconcile --replay):
 * its signature judged at received_at, a token that is the secret compared
 * as the marker the inbox kept (provider_header_kept), and nothing read
 * without a secret to verify against (signature_scheme = none:
 * PROVIDER_UNAUTHORIZED). Returns as provider_read does. */
enum provider_status provider_read_replay(const struct provider *provider,
					  const struct request *req,
					  struct payload_parser *parser,
					  const char *body, size_t len,
					  time_t received_at,
					  struct provider_batch *out,
					  struct error *why);

/* provider_read without the signature step, for a body payhook fetched
 * itself from the provider's API with the merchant's key (over verified
 * TLS or loopback): the parse, the event table and the field rules are
 * the same. Never for a body that came in a request. Returns as
 * provider_read does (never PROVIDER_UNAUTHORIZED). */
enum provider_status provider_read_trusted(const struct provider *provider,
					   const struct request *req,
					   struct payload_parser *parser,
					   const char *body, size_t len,
					   struct provider_batch *out,
					   struct error *why);

/* The most provider_header_params gives. */
#define PROVIDER_HEADER_PARAMS_MAX 4

/* The CGI names ("HTTP_STRIPE_SIGNATURE") of the headers the profile reads
 * to check a signature and classify an event (signature, timestamp, webhook
 * id, event topic or id), into names[0..return), at most
 * PROVIDER_HEADER_PARAMS_MAX; owned by the profile. Nothing else of a
 * request is ever named here (no cookie, no authorization unless it is the
 * profile's signature header). Can't fail. */
size_t provider_header_params(const struct provider *provider,
			      const char **names);

/* What the inbox keeps of header name (one of provider_header_params)
 * whose value the request carried: the value itself (returned), or, where
 * the header is the secret itself (PAY.JP's X-Payjp-Webhook-Token), only
 * its marker, written into marker. NULL when the marker cannot be made
 * (keep nothing). Can't fail otherwise. */
const char *provider_header_kept(const struct provider *provider,
				 const char *name, const char *value,
				 char marker[SIGNATURE_TOKEN_MARKER_MAX]);

/* ---- the sending side (payhook-sign, the tests, the benchmarks) ---- */

#define PROVIDER_HEADERS_MAX 4
#define PROVIDER_HEADER_NAME_MAX 64
#define PROVIDER_HEADER_VALUE_MAX 320

/* The headers a provider sends with a body, in order. */
struct provider_headers {
	size_t count;
	struct {
		char name[PROVIDER_HEADER_NAME_MAX];
		char value[PROVIDER_HEADER_VALUE_MAX];
	} items[PROVIDER_HEADERS_MAX];
};

/* What to sign with. Strings may be NULL where the provider has no use for
 * them; id and timestamp are required where it signs or sends them. */
struct provider_sign_input {
	enum config_provider provider;
	const char *secret;    /* in the provider's own form */
	const char *id;        /* webhook-id (standard), X-Razorpay-Event-Id,
				* X-Shopify-Event-Id */
	const char *timestamp; /* Unix seconds (standard, stripe, paddle,
				* generic with {timestamp}) */
	const char *url;       /* the notification URL (square; generic
				* {url}, default generic_url) */
	const char *topic;     /* X-Shopify-Topic; default orders/paid */
	const struct config *cfg; /* the generic_ keys (generic only) */
};

/* Signs body[0..len) as in->provider does, from the same profile table
 * provider_read follows. Fills *headers; for Adyen, whose signatures travel
 * in the body, *signed_body is a new body with every item's
 * additionalData.hmacSignature set (the caller frees it), else NULL.
 * Returns 0, or -1 with err saying what is missing or wrong (never quoting
 * the secret). */
int provider_sign(const struct provider_sign_input *in, const char *body,
		  size_t len, struct provider_headers *headers,
		  char **signed_body, struct error *err);

#endif
