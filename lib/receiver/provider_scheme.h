/* provider_scheme.h - what the profile table (provider.c) and the
 * signature schemes behind it share, as curl's vtls_int.h is for its TLS
 * backends: a profile's row, a profile as set up, and the interface each
 * scheme implements. The schemes: provider_hmac (an HMAC, or PAY.JP's
 * token, in a header), provider_adyen (items in the body, each signed on
 * its own), provider_generic (the generic_ keys' template), provider_paypal
 * (a certificate), and the providers that only notify, whose deliveries
 * name objects to fetch (provider_notify: provider_mollie,
 * provider_mercadopago, provider_gocardless). Only the provider modules
 * include it.
 */
#ifndef PAYHOOK_PROVIDER_SCHEME_H
#define PAYHOOK_PROVIDER_SCHEME_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "configuration.h"
#include "error.h"
#include "payload.h"
#include "provider_types.h"
#include "request.h"
#include "secret.h"
#include "signature.h"

struct json_object;
struct provider_scheme;

/* One provider's conventions: the one description of its wire format that
 * both the receiving side (provider_read) and the sending side
 * (provider_sign) follow. Paths are dotted JSON paths in the body; headers
 * are HTTP header names as the provider writes them. */
struct profile {
	enum config_provider id;
	const struct provider_scheme *scheme;
	enum secret_form form;
	const char *signature_header;  /* the header carrying the signature */
	const char *timestamp_header;  /* the signed timestamp's, when apart */
	/* The payment event: event_path (or the header event_header) equals
	 * payment_event, and status_path equals status_value when set. NULL
	 * event_path and event_header: every body is a payment. */
	const char *event_path;
	const char *event_header;
	const char *payment_event;
	bool payment_event_list; /* payment_event: values apart by spaces */
	const char *status_path, *status_value;
	/* The provider's event id: a body path or a header, or neither. */
	const char *event_id_path;
	const char *event_id_header;
	const char *id_path, *amount_path, *currency_path;
	enum payload_amount_form amount_form;
	bool id_integer; /* the id may be a JSON integer (Shopify orders) */
	/* Headers the scheme reads besides those above (PayPal's
	 * transmission id, certificate URL and algorithm), NULL-terminated;
	 * the inbox keeps them with the others. NULL: none. */
	const char *const *more_headers;
	/* The media type of a delivery's body (Mollie's form post); JSON
	 * when not set. */
	enum request_media media;
};

/* The most more_headers a row names. */
#define PROVIDER_MORE_HEADERS_MAX 4

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

/* "HTTP_" + a header name of at most CONFIG_HEADER_NAME_MAX bytes */
#define PROVIDER_PARAM_MAX (sizeof("HTTP_") + CONFIG_HEADER_NAME_MAX)

/* A profile as set up for a configuration. */
struct provider {
	struct profile profile;            /* generic: filled from config */
	const struct provider_set *set;
	struct signature_keyring *ring;    /* NULL: no signature checked */
	/* The CGI names of the profile's headers ("" for none), made from its
	 * header names once, and the reason for a missing signature. */
	char signature_param[PROVIDER_PARAM_MAX];
	char timestamp_param[PROVIDER_PARAM_MAX];
	char event_param[PROVIDER_PARAM_MAX], event_id_param[PROVIDER_PARAM_MAX];
	char more_params[PROVIDER_MORE_HEADERS_MAX][PROVIDER_PARAM_MAX];
	char signature_missing[CONFIG_HEADER_NAME_MAX + sizeof(" header missing")];
	long tolerance_s;
	/* The scheme's own, made by its setup and freed by its cleanup
	 * (PayPal's certificates); NULL: none. */
	void *state;
	/* generic: generic_signed_payload, split once at set-up */
	struct provider_template_part template[PROVIDER_TEMPLATE_PARTS_MAX];
	size_t template_count;
};

struct provider_set {
	const struct config *cfg;
	struct payload_rules rules;
	struct provider providers[CONFIG_PROVIDER_COUNT];
	bool enabled[CONFIG_PROVIDER_COUNT];
};

/* How a body is taken: a delivery (its signature checked), a kept
 * delivery replayed (a secret required; a token kept as its digest), or
 * one payhook fetched itself from the provider's API (vouched for). */
enum provider_read_mode {
	PROVIDER_READ_DELIVERY,
	PROVIDER_READ_REPLAY,
	PROVIDER_READ_TRUSTED,
};

/* One signature scheme: the functions a profile's row names. */
struct provider_scheme {
	/* Optional: writes what the row cannot say by itself from cfg (the
	 * generic profile's row comes from the generic_ keys). Returns 0, or
	 * -1 with err set. */
	int (*setup)(struct provider *p, const struct config *cfg,
		     struct error *err);
	/* Optional: frees what setup made (p->state). */
	void (*cleanup)(struct provider *p);
	/* Optional: the start-up checks of the scheme's own keys, for an
	 * enabled profile of it (its secret is checked by the table).
	 * Returns 0, or -1 with err saying what to set. */
	int (*check_config)(const struct config *cfg, struct error *err);
	/* Optional: whether the tables the scheme keeps its state in are
	 * there (--check-config), for an enabled profile. Returns 0, or -1
	 * with err naming the table and its migration. */
	int (*check_store)(const struct provider *p, struct error *err);
	/* Checks the signature of body[0..len) that req's headers carry, at
	 * now (replay: a delivery the inbox kept), with p's ring (not NULL).
	 * Sets *reason for anything but SIGNATURE_VALID. NULL: the signature
	 * travels in the body and read checks it. */
	enum signature_status (*verify)(const struct provider *p,
					const struct request *req,
					const char *body, size_t len,
					time_t now, bool replay,
					const char **reason);
	/* Optional: reads the parsed body root in place of the one-event
	 * reading (Adyen's items), checking the signatures it carries
	 * unless mode is PROVIDER_READ_TRUSTED. Returns as provider_read
	 * does. */
	enum provider_status (*read)(const struct provider *p,
				     const struct request *req,
				     struct json_object *root,
				     enum provider_read_mode mode,
				     struct provider_batch *out,
				     struct error *why);
	/* Writes what the provider sends with body[0..len), signed with p's
	 * one key: the headers into h (provider_row_sign_headers adds the
	 * row's own), or, when the signatures travel in the body, a new body
	 * into *signed_body (the caller frees it). Returns 0, or -1 with err
	 * set (never quoting the secret). */
	int (*sign)(const struct provider *p,
		    const struct provider_sign_input *in, const char *body,
		    size_t len, struct provider_headers *h,
		    char **signed_body, struct error *err);
	/* Optional, for a provider that only notifies: reads a delivery
	 * body[0..len) (its signature checked by verify, unless the scheme
	 * signs nothing) as a notification: its form, the shape of the ids
	 * it names, into out->notices. Returns PROVIDER_NOTIFIED,
	 * PROVIDER_IGNORED (signed, but naming nothing payhook fetches:
	 * out->event_type says what), or PROVIDER_INVALID / PROVIDER_ERROR
	 * with why set. The objects payhook then fetches itself are read by
	 * read (PROVIDER_READ_TRUSTED). */
	enum provider_status (*notice)(const struct provider *p,
				       const struct request *req,
				       struct payload_parser *parser,
				       const char *body, size_t len,
				       struct provider_batch *out,
				       struct error *why);
	/* Optional: what the inbox keeps of the signature header's value
	 * when it is a credential (PAY.JP's token: its digest, written into
	 * marker). NULL: keep nothing. */
	const char *(*header_kept)(const char *value,
				   char marker[SIGNATURE_TOKEN_MARKER_MAX]);
	/* The scheme's own: which layout of the module it is. */
	int variant;
	/* Signs with no shared secret (PayPal's certificates): no
	 * <profile>_secret is needed, and p->ring stays NULL. */
	bool keyless;
	/* Its deliveries carry no signature at all (Mollie's classic
	 * webhooks: the fetch is the proof): keyless, and payhook-sign
	 * needs no secret for it. */
	bool unsigned_deliveries;
};

#endif
