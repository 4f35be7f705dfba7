/* provider_mollie.c - Mollie's classic webhooks (see provider_mollie.h).
 * Read as docs.mollie.com/reference/webhooks and mollie-api-php@53e49e71
 * (docs/recipes/payments/handle-webhook.md) describe them: a POST of
 * application/x-www-form-urlencoded with one field, id, the payment's
 * id (tr_ and letters or digits: mollie-api-node@bddef14a
 * src/plumbing/assertWellFormedId.ts checks the prefix); no signature.
 */
#include "config.h"

#include <string.h>

#include "provider_mollie.h"
#include "provider_notify.h"
#include "provider_row.h"

static enum provider_status invalid(struct error *why, const char *reason)
{
	error_set(why, "%s", reason);
	return PROVIDER_INVALID;
}

/* The form's id field: "id=tr_...", other fields (none documented) left
 * alone. */
static enum provider_status mollie_notice(const struct provider *p,
					  const struct request *req,
					  struct payload_parser *parser,
					  const char *body, size_t len,
					  struct provider_batch *out,
					  struct error *why)
{
	char id[PROVIDER_NOTICE_ID_MAX + 1];
	long id_len = request_form_value(body, len, "id", id, sizeof(id));

	(void)p;
	(void)req;
	(void)parser;
	if (id_len == REQUEST_FORM_ABSENT)
		return invalid(why, "id: required (the form field naming "
			       "the payment)");
	if (id_len < 0 ||
	    !provider_notify_id(id, (size_t)id_len, "tr_", "aA0"))
		return invalid(why, "id: not a Mollie payment id (tr_ and "
			       "letters or digits)");
	return provider_notify_add(out, id, (size_t)id_len, NULL, 0, why);
}

/* Nothing to sign: the sample notification goes as it is. */
static int mollie_sign(const struct provider *p,
		       const struct provider_sign_input *in, const char *body,
		       size_t len, struct provider_headers *h,
		       char **signed_body, struct error *err)
{
	(void)p;
	(void)in;
	(void)body;
	(void)len;
	(void)h;
	(void)signed_body;
	(void)err;
	return 0;
}

static int mollie_check_config(const struct config *cfg, struct error *err)
{
	return provider_notify_check_config(CONFIG_PROVIDER_MOLLIE, cfg, err);
}

const struct provider_scheme provider_scheme_mollie = {
	.check_config = mollie_check_config,
	.notice = mollie_notice,
	/* What was fetched: the payment, its refunds and chargebacks under
	 * _embedded as GET /v2/payments/{id}?embed= gives them. */
	.read = provider_notify_read_object,
	.sign = mollie_sign,
	.keyless = true,
	.unsigned_deliveries = true,
};
