/* provider_hmac.c - the header-borne schemes (see provider_hmac.h): each
 * verifier beside its signer, over the same signed text, following
 * signature.c's verifiers and signers.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "provider_hmac.h"
#include "provider_row.h"

/* The layouts of this module (struct provider_scheme's variant). */
enum hmac_variant {
	HMAC_STANDARD,    /* Standard Webhooks headers */
	HMAC_STRIPE,      /* Stripe-Signature t=,v1= */
	HMAC_PADDLE,      /* Paddle-Signature ts=;h1= */
	HMAC_BODY_HEX,    /* hex HMAC of the body in one header */
	HMAC_BODY_BASE64, /* base64 HMAC of the body in one header */
	HMAC_URL_BODY,    /* base64 HMAC of the notification URL + body */
	HMAC_TOKEN,       /* a static token in one header */
};

static enum signature_status hmac_verify(const struct provider *p,
					 const struct request *req,
					 const char *body, size_t len,
					 time_t now, bool replay,
					 const char **reason)
{
	const struct profile *row = &p->profile;
	const char *header = provider_row_header(req, p->signature_param);
	struct signature_part parts[2] = { { body, len }, { NULL, 0 } };

	switch (row->scheme->variant) {
	case HMAC_STANDARD:
		return signature_verify_standard(
			p->ring, provider_row_header(req, p->event_id_param),
			provider_row_header(req, p->timestamp_param), header,
			body, len, now, p->tolerance_s, reason);
	case HMAC_STRIPE:
		return signature_verify_stripe(p->ring, header, body, len, now,
					       p->tolerance_s, reason);
	case HMAC_PADDLE:
		return signature_verify_paddle(p->ring, header, body, len, now,
					       p->tolerance_s, reason);
	case HMAC_BODY_HEX:
	case HMAC_BODY_BASE64:
		return signature_verify_digest(
			p->ring, header, NULL,
			row->scheme->variant == HMAC_BODY_HEX ? SIGNATURE_HEX
							      : SIGNATURE_BASE64,
			parts, 1, p->signature_missing, reason);
	case HMAC_URL_BODY: {
		const char *url = p->set->cfg->square_notification_url;

		parts[0] = (struct signature_part){ url, strlen(url) };
		parts[1] = (struct signature_part){ body, len };
		return signature_verify_digest(p->ring, header, NULL,
					       SIGNATURE_BASE64, parts, 2,
					       p->signature_missing, reason);
	}
	case HMAC_TOKEN:
	default:
		/* A replay holds the token's digest, never the token. */
		return replay ? signature_verify_token_marker(
					p->ring, header, p->signature_missing,
					reason)
			      : signature_verify_token(p->ring, header,
						       p->signature_missing,
						       reason);
	}
}

static int hmac_sign(const struct provider *p,
		     const struct provider_sign_input *in, const char *body,
		     size_t len, struct provider_headers *h,
		     char **signed_body, struct error *err)
{
	struct signature_part parts[2] = { { body, len }, { NULL, 0 } };
	char value[PROVIDER_HEADER_VALUE_MAX];
	const char *url;
	int rc;

	(void)signed_body;
	switch (p->profile.scheme->variant) {
	case HMAC_STANDARD:
		if (provider_row_need(in->id, "a webhook-id", err) != 0 ||
		    provider_row_need(in->timestamp, "a timestamp", err) != 0 ||
		    signature_sign_standard(p->ring, in->id, in->timestamp, body,
					    len, value, err) != 0)
			return -1;
		/* webhook-id is also its event id: the row adds nothing. */
		if (provider_row_add_header(h, "webhook-id", in->id, err) != 0 ||
		    provider_row_add_header(h, "webhook-timestamp",
					    in->timestamp, err) != 0)
			return -1;
		return provider_row_add_header(h, "webhook-signature", value,
					       err);
	case HMAC_STRIPE:
	case HMAC_PADDLE:
		if (provider_row_need(in->timestamp, "a timestamp", err) != 0)
			return -1;
		rc = p->profile.scheme->variant == HMAC_STRIPE ?
			     signature_sign_stripe(p->ring, in->timestamp, body,
						   len, value, sizeof(value), err) :
			     signature_sign_paddle(p->ring, in->timestamp, body,
						   len, value, sizeof(value), err);
		break;
	case HMAC_BODY_HEX:
	case HMAC_BODY_BASE64:
		rc = signature_sign_digest(
			p->ring, NULL,
			p->profile.scheme->variant == HMAC_BODY_HEX ?
				SIGNATURE_HEX : SIGNATURE_BASE64,
			parts, 1, value, sizeof(value), err);
		break;
	case HMAC_URL_BODY:
		url = in->url != NULL ? in->url :
		      in->cfg != NULL ? in->cfg->square_notification_url : NULL;
		if (provider_row_need(url, "the notification URL (--url)",
				      err) != 0)
			return -1;
		parts[0] = (struct signature_part){ url, strlen(url) };
		parts[1] = (struct signature_part){ body, len };
		rc = signature_sign_digest(p->ring, NULL, SIGNATURE_BASE64, parts,
					   2, value, sizeof(value), err);
		break;
	case HMAC_TOKEN:
	default:
		rc = (size_t)snprintf(value, sizeof(value), "%s", in->secret) <
				     sizeof(value) ?
			     0 : error_set(err, "the token does not fit");
		break;
	}
	if (rc != 0)
		return -1;
	return provider_row_sign_headers(p, in, value, h, err);
}

/* Square signs its notification URL: it must be set. */
static int url_body_check_config(const struct config *cfg, struct error *err)
{
	if (cfg->square_notification_url == NULL)
		return error_set(err, "providers has square: set "
				 "square_notification_url (the URL Square "
				 "signs)");
	return 0;
}

/* PAY.JP's header is the secret itself: the inbox keeps its digest. */
static const char *token_kept(const char *value,
			      char marker[SIGNATURE_TOKEN_MARKER_MAX])
{
	return signature_token_marker(value, marker) == 0 ? marker : NULL;
}

const struct provider_scheme provider_scheme_standard = {
	.verify = hmac_verify, .sign = hmac_sign, .variant = HMAC_STANDARD,
};
const struct provider_scheme provider_scheme_stripe = {
	.verify = hmac_verify, .sign = hmac_sign, .variant = HMAC_STRIPE,
};
const struct provider_scheme provider_scheme_paddle = {
	.verify = hmac_verify, .sign = hmac_sign, .variant = HMAC_PADDLE,
};
const struct provider_scheme provider_scheme_body_hex = {
	.verify = hmac_verify, .sign = hmac_sign, .variant = HMAC_BODY_HEX,
};
const struct provider_scheme provider_scheme_body_base64 = {
	.verify = hmac_verify, .sign = hmac_sign, .variant = HMAC_BODY_BASE64,
};
const struct provider_scheme provider_scheme_url_body = {
	.check_config = url_body_check_config,
	.verify = hmac_verify, .sign = hmac_sign, .variant = HMAC_URL_BODY,
};
const struct provider_scheme provider_scheme_token = {
	.verify = hmac_verify, .sign = hmac_sign, .header_kept = token_kept,
	.variant = HMAC_TOKEN,
};
