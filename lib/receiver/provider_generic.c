/* provider_generic.c - the generic profile's scheme (see
 * provider_generic.h).
 */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "provider_generic.h"
#include "provider_row.h"
#include "secret.h"

/* The secret form the generic_secret_encoding names. */
static enum secret_form generic_form(enum config_encoding encoding)
{
	switch (encoding) {
	case CONFIG_ENCODING_HEX:
		return SECRET_HEX;
	case CONFIG_ENCODING_BASE64:
		return SECRET_BASE64;
	case CONFIG_ENCODING_TEXT:
		break;
	}
	return SECRET_TEXT;
}

/* The amount form the generic_amount_format names. */
static enum payload_amount_form generic_amount(enum config_amount_format f)
{
	switch (f) {
	case CONFIG_AMOUNT_MINOR_STRING:
		return PAYLOAD_AMOUNT_MINOR_STRING;
	case CONFIG_AMOUNT_DECIMAL:
		return PAYLOAD_AMOUNT_DECIMAL;
	case CONFIG_AMOUNT_INTEGER:
		break;
	}
	return PAYLOAD_AMOUNT_INTEGER;
}

/* An HTTP header name (RFC 9110 token): a request can carry no other. */
static bool is_header_name(const char *name)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";

	if (name[0] == '\0')
		return false;
	for (const char *c = name; *c != '\0'; c++)
		if (!isalnum((unsigned char)*c) || (unsigned char)*c > 0x7e)
			if (strchr(extra, *c) == NULL)
				return false;
	return true;
}

/* Splits generic_signed_payload into the parts the verifier signs, in
 * order, into parts[0..*count). Returns 0, or -1 with err set when the
 * template cannot be followed to its end: {body} not exactly once, more
 * than PROVIDER_TEMPLATE_PARTS_MAX parts, {timestamp} without
 * generic_timestamp_header or that header set but not signed, {url}
 * without generic_url. */
static int split_template(const struct config_generic *g,
			  struct provider_template_part *parts, size_t *count,
			  struct error *err)
{
	static const struct {
		const char *text;
		enum provider_template_kind kind;
	} placeholders[] = {
		{ "{body}", PROVIDER_TEMPLATE_BODY },
		{ "{timestamp}", PROVIDER_TEMPLATE_TIMESTAMP },
		{ "{url}", PROVIDER_TEMPLATE_URL },
	};
	const char *t = g->signed_payload != NULL ? g->signed_payload : "";
	size_t n = 0, at = 0, bodies = 0, stamps = 0, literal = 0;

	/* A '{' that starts no placeholder is literal text, as any other
	 * byte: literal runs stay whole, so "{v}{v}…" is one part. */
	while (t[at] != '\0') {
		size_t k, len = 0;

		for (k = 0; k < sizeof(placeholders) / sizeof(placeholders[0]);
		     k++) {
			len = strlen(placeholders[k].text);
			if (strncmp(t + at, placeholders[k].text, len) == 0)
				break;
		}
		if (k == sizeof(placeholders) / sizeof(placeholders[0])) {
			at++;
			literal++;
			continue;
		}
		if (n + (literal > 0) + 1 > PROVIDER_TEMPLATE_PARTS_MAX)
			return error_set(err, "generic_signed_payload: more than "
					 "%d parts", PROVIDER_TEMPLATE_PARTS_MAX);
		if (literal > 0)
			parts[n++] = (struct provider_template_part){
				PROVIDER_TEMPLATE_LITERAL, at - literal, literal };
		parts[n++] = (struct provider_template_part){
			placeholders[k].kind, 0, 0 };
		bodies += placeholders[k].kind == PROVIDER_TEMPLATE_BODY;
		stamps += placeholders[k].kind == PROVIDER_TEMPLATE_TIMESTAMP;
		if (placeholders[k].kind == PROVIDER_TEMPLATE_URL && g->url == NULL)
			return error_set(err, "generic_signed_payload has {url}: "
					 "set generic_url");
		at += len;
		literal = 0;
	}
	if (literal > 0) {
		if (n + 1 > PROVIDER_TEMPLATE_PARTS_MAX)
			return error_set(err, "generic_signed_payload: more than "
					 "%d parts", PROVIDER_TEMPLATE_PARTS_MAX);
		parts[n++] = (struct provider_template_part){
			PROVIDER_TEMPLATE_LITERAL, at - literal, literal };
	}
	if (bodies != 1)
		return error_set(err, "generic_signed_payload must hold {body} "
				 "exactly once");
	if (stamps > 0 && g->timestamp_header == NULL)
		return error_set(err, "generic_signed_payload has {timestamp}: "
				 "set generic_timestamp_header");
	/* A freshness check on a header nobody signed protects nothing. */
	if (stamps == 0 && g->timestamp_header != NULL)
		return error_set(err, "generic_timestamp_header is set but "
				 "generic_signed_payload has no {timestamp}: "
				 "an unsigned timestamp proves nothing");
	*count = n;
	return 0;
}

/* What the generic_ keys must say when the generic profile is enabled. */
static int generic_check_config(const struct config *cfg, struct error *err)
{
	const struct config_generic *g = &cfg->generic;
	const struct config_secrets *secrets =
		&cfg->secrets[CONFIG_PROVIDER_GENERIC];
	struct provider_template_part parts[PROVIDER_TEMPLATE_PARTS_MAX];
	size_t count;
	struct secret_key key;
	struct error inner;

	if (g->signature_header == NULL)
		return error_set(err, "providers has generic: set "
				 "generic_signature_header");
	if (!is_header_name(g->signature_header) ||
	    (g->timestamp_header != NULL && !is_header_name(g->timestamp_header)))
		return error_set(err, "generic_signature_header and "
				 "generic_timestamp_header must be header names: "
				 "letters, digits and - (no spaces)");
	if (g->transaction_id_path == NULL || g->amount_path == NULL ||
	    (g->currency_path == NULL && cfg->default_currency == NULL))
		return error_set(err, "providers has generic: set "
				 "generic_transaction_id_path, "
				 "generic_amount_path and "
				 "generic_currency_path (or default_currency)");
	if (split_template(g, parts, &count, err) != 0)
		return -1;
	if ((g->event_path == NULL) != (g->event_values == NULL))
		return error_set(err, "generic_event_path and "
				 "generic_event_values go together");
	for (size_t i = 0; i < secrets->count; i++) {
		if (secret_decode(generic_form(g->secret_encoding), secrets->items[i],
				  &key, &inner) != 0)
			return error_set(err, "generic_secret %zu: %s", i + 1,
					 inner.message);
		secret_key_wipe(&key);
	}
	return 0;
}

/* The generic profile is a row written from the generic_ keys. */
static int generic_setup(struct provider *p, const struct config *cfg,
			 struct error *err)
{
	const struct config_generic *g = &cfg->generic;
	struct profile *row = &p->profile;

	row->form = generic_form(g->secret_encoding);
	if (split_template(g, p->template, &p->template_count, err) != 0)
		return -1;
	row->signature_header = g->signature_header;
	row->timestamp_header = g->timestamp_header;
	row->event_path = g->event_path;
	row->payment_event = g->event_values;
	row->payment_event_list = true;
	row->event_id_path = g->event_id_path;
	row->id_path = g->transaction_id_path;
	row->amount_path = g->amount_path;
	row->amount_form = generic_amount(g->amount_format);
	row->currency_path = g->currency_path;
	return 0;
}

/* The generic profile's signed text as parts: generic_signed_payload with
 * {body}, {timestamp} (ts) and {url} filled in, nothing copied. parts holds
 * PROVIDER_TEMPLATE_PARTS_MAX. Returns whether the body is among them. */
static bool generic_parts(const struct provider *p,
			  const struct config_generic *g, const char *ts,
			  const char *url, const char *body, size_t len,
			  struct signature_part *parts)
{
	const char *text = g->signed_payload;
	bool body_signed = false;

	for (size_t i = 0; i < p->template_count; i++) {
		const struct provider_template_part *t = &p->template[i];

		switch (t->kind) {
		case PROVIDER_TEMPLATE_BODY:
			parts[i] = (struct signature_part){ body, len };
			body_signed = true;
			break;
		case PROVIDER_TEMPLATE_TIMESTAMP:
			parts[i] = (struct signature_part){
				ts != NULL ? ts : "", ts != NULL ? strlen(ts) : 0 };
			break;
		case PROVIDER_TEMPLATE_URL:
			parts[i] = (struct signature_part){
				url != NULL ? url : "", url != NULL ? strlen(url) : 0 };
			break;
		case PROVIDER_TEMPLATE_LITERAL:
		default:
			parts[i] = (struct signature_part){ text + t->offset,
							    t->len };
			break;
		}
	}
	return body_signed;
}

/* The generic profile's signed text: the parts of generic_signed_payload
 * with {body}, {timestamp} and {url} filled in (nothing is copied). */
static enum signature_status generic_verify(const struct provider *p,
					    const struct request *req,
					    const char *body, size_t len,
					    time_t now, bool replay,
					    const char **reason)
{
	const struct config_generic *g = &p->set->cfg->generic;
	struct signature_part parts[PROVIDER_TEMPLATE_PARTS_MAX];
	const char *ts = NULL;
	uint64_t ts_value;

	(void)replay;
	if (g->timestamp_header != NULL) {
		ts = provider_row_header(req, p->timestamp_param);
		if (ts == NULL || ts[0] == '\0') {
			*reason = "timestamp header missing";
			return SIGNATURE_MISSING;
		}
		if (signature_timestamp_parse(ts, strlen(ts), &ts_value) != 0) {
			*reason = "timestamp header is not Unix seconds";
			return SIGNATURE_MALFORMED;
		}
		if ((ts_value > (uint64_t)now ? ts_value - (uint64_t)now
					      : (uint64_t)now - ts_value) >
		    (uint64_t)p->tolerance_s) {
			*reason = "timestamp outside the tolerance";
			return SIGNATURE_STALE;
		}
	}
	/* provider_generic_template refuses such a template; should one get
	 * here anyway, a signature over less than the body accepts nothing. */
	if (!generic_parts(p, g, ts, g->url, body, len, parts)) {
		*reason = "generic_signed_payload does not cover the body";
		return SIGNATURE_ERROR;
	}
	return signature_verify_digest(
		p->ring, provider_row_header(req, p->signature_param),
		g->signature_prefix,
		g->signature_encoding == CONFIG_ENCODING_BASE64 ?
			SIGNATURE_BASE64 : SIGNATURE_HEX,
		parts, p->template_count, p->signature_missing, reason);
}

/* The HMAC of the text the template makes, in generic_signature_header,
 * and the timestamp in its own header when the template signs one. */
static int generic_sign(const struct provider *p,
			const struct provider_sign_input *in, const char *body,
			size_t len, struct provider_headers *h,
			char **signed_body, struct error *err)
{
	/* provider_sign checked that generic has its keys */
	const struct config_generic *g = &in->cfg->generic;
	const struct profile *row = &p->profile;
	struct signature_part parts[PROVIDER_TEMPLATE_PARTS_MAX];
	char value[PROVIDER_HEADER_VALUE_MAX];
	const char *url = in->url != NULL ? in->url : g->url;

	(void)signed_body;
	if (row->timestamp_header != NULL &&
	    provider_row_need(in->timestamp, "a timestamp", err) != 0)
		return -1;
	for (size_t i = 0; i < p->template_count; i++) {
		if (p->template[i].kind == PROVIDER_TEMPLATE_URL &&
		    provider_row_need(url, "generic_url (or --url)", err) != 0)
			return -1;
	}
	generic_parts(p, g, in->timestamp, url, body, len, parts);
	if (signature_sign_digest(
		    p->ring, g->signature_prefix,
		    g->signature_encoding == CONFIG_ENCODING_BASE64 ?
			    SIGNATURE_BASE64 : SIGNATURE_HEX,
		    parts, p->template_count, value, sizeof(value), err) != 0)
		return -1;
	if (row->timestamp_header != NULL &&
	    provider_row_add_header(h, row->timestamp_header, in->timestamp,
				    err) != 0)
		return -1;
	return provider_row_sign_headers(p, in, value, h, err);
}

const struct provider_scheme provider_scheme_generic = {
	.setup = generic_setup,
	.check_config = generic_check_config,
	.verify = generic_verify,
	.sign = generic_sign,
};
