/* provider.h - provider profiles: for each payment provider payhook speaks
 * to, how it signs a webhook, which of its events records a payment, and
 * where the transaction id, amount, currency and event id are. It sits
 * between the pipeline and the parsers (signature, payload): the pipeline
 * asks it which profile a request is for and what the request carries.
 * provider.c is the table of profiles and the dispatch to their signature
 * schemes, each a module behind provider_scheme.h (provider_hmac,
 * provider_adyen, provider_generic), as curl's TLS backends are.
 */
#ifndef PAYHOOK_PROVIDER_H
#define PAYHOOK_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "configuration.h"
#include "error.h"
#include "payload.h"
#include "provider_types.h"
#include "request.h"
#include "signature.h"

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

/* Whether the tables the enabled profiles keep their state in are there
 * (PayPal's certificates): for --check-config. Returns 0, or -1 with err
 * naming the table and its migration. */
int provider_set_check_stores(const struct provider_set *set,
			      struct error *err);

/* Profile id (the one the request's path names, route.h) when it is
 * enabled; NULL when not (404). */
const struct provider *provider_enabled(const struct provider_set *set,
					enum config_provider id);

/* The profile's name ("stripe") and its place in enum config_provider. */
const char *provider_name(const struct provider *provider);
enum config_provider provider_id(const struct provider *provider);

/* Whether id's deliveries are signed by a certificate of the provider's
 * (PayPal), not with a shared <name>_secret. */
bool provider_keyless(enum config_provider id);

/* Whether id's provider only notifies (Mollie, Mercado Pago, GoCardless):
 * provider_read of its delivery gives PROVIDER_NOTIFIED and the objects to
 * fetch, which the receiver queues (notify.h); provider_read_trusted reads
 * what payhook-reconcile fetched. Can't fail. */
bool provider_notifies(enum config_provider id);

/* The media type id's deliveries come in (Mollie's form posts; JSON for
 * every other). Can't fail. */
enum request_media provider_media(enum config_provider id);

/* Whether id's deliveries carry no signature at all (Mollie's classic
 * webhooks: its API is the proof), so that nothing signs them. Can't
 * fail. */
bool provider_unsigned(enum config_provider id);

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
#define PROVIDER_HEADER_PARAMS_MAX 8

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
