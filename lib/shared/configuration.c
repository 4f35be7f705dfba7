/* configuration.c - payhook's settings: the key table with its defaults, the
 * key = value file, the PAYHOOK_<KEY> overrides and the start-up checks. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "configuration.h"
#include "endpoint.h"
#include "number.h"
#include "secret.h"

extern char **environ;

/* How a key's text becomes a value. Every kind writes through the key's
 * offset into struct config, so a kind serves any number of keys. */
enum key_kind {
	KIND_STRING,    /* char *; empty means unset unless FLAG_NONEMPTY */
	KIND_INT,       /* int in [min, max] */
	KIND_LONG,      /* long in [min, max] */
	KIND_SIZE,      /* size_t in [min, max] */
	KIND_BOOL,      /* bool */
	KIND_CHOICE,    /* an int-sized enum, one of choices */
	KIND_CURRENCY,  /* char *, 3 letters stored upper-case; empty: unset */
	KIND_SECRETS,   /* one more entry of a struct config_secrets */
	KIND_PROVIDERS, /* unsigned bit set of enum config_provider */
};

#define FLAG_SECRET 1u      /* wiped on free (values never reach messages) */
#define FLAG_NONEMPTY 2u    /* an empty value is an error, not "unset" */
#define FLAG_FORM_LATER 4u  /* secrets whose form another key decides */

struct choice {
	const char *name;
	int value;
};

struct key_def {
	const char *name;
	enum key_kind kind;
	size_t offset;          /* of the field in struct config */
	long min, max;          /* integer kinds: range; strings: max length */
	const char *fallback;   /* default, as file text; NULL: none */
	unsigned flags;
	const struct choice *choices;   /* KIND_CHOICE */
	enum secret_form form;          /* KIND_SECRETS */
};

/* Booleans: yes/no, and the usual synonyms, any case. */
static const struct choice bool_choices[] = {
	{ "yes", 1 }, { "no", 0 }, { "true", 1 }, { "false", 0 },
	{ "on", 1 }, { "off", 0 }, { "1", 1 }, { "0", 0 }, { NULL, 0 },
};
static const struct choice redis_unavailable_choices[] = {
	{ "db_only", CONFIG_REDIS_UNAVAILABLE_DB_ONLY },
	{ "fail", CONFIG_REDIS_UNAVAILABLE_FAIL }, { NULL, 0 },
};
static const struct choice lock_backend_choices[] = {
	{ "redis", CONFIG_LOCK_REDIS }, { "none", CONFIG_LOCK_NONE }, { NULL, 0 },
};
static const struct choice scheme_choices[] = {
	{ "standard", CONFIG_SIGNATURE_STANDARD },
	{ "none", CONFIG_SIGNATURE_NONE }, { NULL, 0 },
};
static const struct choice status_choices[] = {
	{ "409", 409 }, { "503", 503 }, { NULL, 0 },
};
static const struct choice log_level_choices[] = {
	{ "error", LOG_LEVEL_ERROR }, { "warn", LOG_LEVEL_WARN },
	{ "info", LOG_LEVEL_INFO }, { "debug", LOG_LEVEL_DEBUG }, { NULL, 0 },
};
static const struct choice signature_encoding_choices[] = {
	{ "hex", CONFIG_ENCODING_HEX }, { "base64", CONFIG_ENCODING_BASE64 },
	{ NULL, 0 },
};
static const struct choice secret_encoding_choices[] = {
	{ "text", CONFIG_ENCODING_TEXT }, { "hex", CONFIG_ENCODING_HEX },
	{ "base64", CONFIG_ENCODING_BASE64 }, { NULL, 0 },
};
static const struct choice log_format_choices[] = {
	{ "text", LOG_FORMAT_TEXT }, { "json", LOG_FORMAT_JSON }, { NULL, 0 },
};
static const struct choice log_target_choices[] = {
	{ "stderr", CONFIG_LOG_TARGET_STDERR },
	{ "syslog", CONFIG_LOG_TARGET_SYSLOG }, { NULL, 0 },
};
static const struct choice amount_format_choices[] = {
	{ "integer", CONFIG_AMOUNT_INTEGER },
	{ "minor_string", CONFIG_AMOUNT_MINOR_STRING },
	{ "decimal", CONFIG_AMOUNT_DECIMAL }, { NULL, 0 },
};

static const char *const provider_names[CONFIG_PROVIDER_COUNT] = {
	[CONFIG_PROVIDER_STANDARD] = "standard",
	[CONFIG_PROVIDER_STRIPE] = "stripe",
	[CONFIG_PROVIDER_PADDLE] = "paddle",
	[CONFIG_PROVIDER_RAZORPAY] = "razorpay",
	[CONFIG_PROVIDER_KOMOJU] = "komoju",
	[CONFIG_PROVIDER_PAYJP] = "payjp",
	[CONFIG_PROVIDER_SQUARE] = "square",
	[CONFIG_PROVIDER_SHOPIFY] = "shopify",
	[CONFIG_PROVIDER_ADYEN] = "adyen",
	[CONFIG_PROVIDER_GENERIC] = "generic",
	[CONFIG_PROVIDER_PAYPAL] = "paypal",
	[CONFIG_PROVIDER_CHECKOUT] = "checkout",
	[CONFIG_PROVIDER_LEMONSQUEEZY] = "lemonsqueezy",
	[CONFIG_PROVIDER_MOLLIE] = "mollie",
	[CONFIG_PROVIDER_MERCADOPAGO] = "mercadopago",
	[CONFIG_PROVIDER_GOCARDLESS] = "gocardless",
};

#define FIELD(f) offsetof(struct config, f)

#define STRING(name, field, fallback, flags) \
	{ name, KIND_STRING, FIELD(field), 0, 0, fallback, flags, NULL, 0 }
#define BOUNDED_STRING(name, field, max, fallback, flags) \
	{ name, KIND_STRING, FIELD(field), 0, max, fallback, flags, NULL, 0 }
#define NUMBER(name, kind, field, min, max, fallback) \
	{ name, kind, FIELD(field), min, max, fallback, 0, NULL, 0 }
#define CHOICE(name, field, choices, fallback) \
	{ name, KIND_CHOICE, FIELD(field), 0, 0, fallback, 0, choices, 0 }
#define SECRETS(name, provider, form, flags)                               \
	{ name, KIND_SECRETS, FIELD(secrets[provider]), 0, 0, NULL,          \
	  FLAG_SECRET | (flags), NULL, form }
/* <profile>_api_key: the merchant's API key, never logged. */
#define API_KEY(name, provider) \
	STRING(name, api_key[provider], NULL, FLAG_SECRET | FLAG_NONEMPTY)
#define TOLERANCE(name, provider) \
	NUMBER(name, KIND_LONG, tolerance_s[provider], 1, 31536000, NULL)

/* The one list of keys: adding a key is one line here (and a field). The
 * defaults go through the same parser as the file, so they obey the rules. */
static const struct key_def keys[] = {
	STRING("redis_host", redis_host, "127.0.0.1", FLAG_NONEMPTY),
	NUMBER("redis_port", KIND_INT, redis_port, 1, 65535, "6379"),
	STRING("redis_socket", redis_socket, NULL, 0),
	STRING("redis_password", redis_password, NULL, FLAG_SECRET),
	NUMBER("redis_db", KIND_INT, redis_db, 0, 1000000, "0"),
	NUMBER("redis_timeout_ms", KIND_INT, redis_timeout_ms, 1, 600000, "500"),
	STRING("redis_sentinels", redis_sentinels, NULL, 0),
	STRING("redis_master_name", redis_master_name, "mymaster", FLAG_NONEMPTY),
	STRING("mysql_host", mysql_host, "127.0.0.1", FLAG_NONEMPTY),
	NUMBER("mysql_port", KIND_INT, mysql_port, 1, 65535, "3306"),
	STRING("mysql_socket", mysql_socket, NULL, 0),
	STRING("mysql_user", mysql_user, "payhook", FLAG_NONEMPTY),
	STRING("mysql_password", mysql_password, NULL, FLAG_SECRET),
	STRING("mysql_database", mysql_database, "payhook", FLAG_NONEMPTY),
	NUMBER("mysql_connect_timeout_s", KIND_INT, mysql_connect_timeout_s, 1, 3600, "2"),
	NUMBER("mysql_read_timeout_s", KIND_INT, mysql_read_timeout_s, 1, 3600, "2"),
	NUMBER("mysql_write_timeout_s", KIND_INT, mysql_write_timeout_s, 1, 3600, "2"),
	STRING("mysql_nodes", mysql_nodes, NULL, 0),
	NUMBER("lock_ttl_ms", KIND_LONG, lock_ttl_ms, 1, 86400000, "30000"),
	BOUNDED_STRING("lock_key_prefix", lock_key_prefix,
		       CONFIG_LOCK_KEY_PREFIX_MAX, "lock:webhook:tx:", FLAG_NONEMPTY),
	CHOICE("redis_unavailable", redis_unavailable, redis_unavailable_choices, "db_only"),
	CHOICE("lock_backend", lock_backend, lock_backend_choices, "redis"),
	NUMBER("max_body_bytes", KIND_SIZE, max_body_bytes, 1,
	       CONFIG_MAX_BODY_BYTES_MAX, "65536"),
	{ "default_currency", KIND_CURRENCY, FIELD(default_currency), 0, 0, NULL, 0, NULL, 0 },
	{ "trim_transaction_id", KIND_BOOL, FIELD(trim_transaction_id), 0, 0, "no", 0, NULL, 0 },
	CHOICE("signature_scheme", signature_scheme, scheme_choices, "standard"),
	SECRETS("webhook_secret", CONFIG_PROVIDER_STANDARD, SECRET_WHSEC_BASE64, 0),
	NUMBER("signature_tolerance_s", KIND_LONG, signature_tolerance_s, 1, 31536000, "300"),
	{ "providers", KIND_PROVIDERS, FIELD(providers), 0, 0, "standard", FLAG_NONEMPTY, NULL, 0 },
	SECRETS("stripe_secret", CONFIG_PROVIDER_STRIPE, SECRET_TEXT, 0),
	TOLERANCE("stripe_tolerance_s", CONFIG_PROVIDER_STRIPE),
	SECRETS("paddle_secret", CONFIG_PROVIDER_PADDLE, SECRET_TEXT, 0),
	TOLERANCE("paddle_tolerance_s", CONFIG_PROVIDER_PADDLE),
	SECRETS("razorpay_secret", CONFIG_PROVIDER_RAZORPAY, SECRET_TEXT, 0),
	SECRETS("komoju_secret", CONFIG_PROVIDER_KOMOJU, SECRET_TEXT, 0),
	SECRETS("payjp_secret", CONFIG_PROVIDER_PAYJP, SECRET_TEXT, 0),
	SECRETS("square_secret", CONFIG_PROVIDER_SQUARE, SECRET_TEXT, 0),
	STRING("square_notification_url", square_notification_url, NULL, 0),
	SECRETS("shopify_secret", CONFIG_PROVIDER_SHOPIFY, SECRET_TEXT, 0),
	SECRETS("adyen_secret", CONFIG_PROVIDER_ADYEN, SECRET_HEX, 0),
	SECRETS("generic_secret", CONFIG_PROVIDER_GENERIC, SECRET_TEXT, FLAG_FORM_LATER),
	TOLERANCE("generic_tolerance_s", CONFIG_PROVIDER_GENERIC),
	BOUNDED_STRING("generic_signature_header", generic.signature_header,
		       CONFIG_HEADER_NAME_MAX, NULL, 0),
	CHOICE("generic_signature_encoding", generic.signature_encoding,
	       signature_encoding_choices, "hex"),
	STRING("generic_signature_prefix", generic.signature_prefix, NULL, 0),
	STRING("generic_signed_payload", generic.signed_payload, "{body}", FLAG_NONEMPTY),
	BOUNDED_STRING("generic_timestamp_header", generic.timestamp_header,
		       CONFIG_HEADER_NAME_MAX, NULL, 0),
	STRING("generic_url", generic.url, NULL, 0),
	CHOICE("generic_secret_encoding", generic.secret_encoding,
	       secret_encoding_choices, "text"),
	STRING("generic_event_path", generic.event_path, NULL, 0),
	STRING("generic_event_values", generic.event_values, NULL, 0),
	STRING("generic_event_id_path", generic.event_id_path, NULL, 0),
	STRING("generic_transaction_id_path", generic.transaction_id_path, NULL, 0),
	STRING("generic_amount_path", generic.amount_path, NULL, 0),
	CHOICE("generic_amount_format", generic.amount_format,
	       amount_format_choices, "integer"),
	STRING("generic_currency_path", generic.currency_path, NULL, 0),
	BOUNDED_STRING("paypal_webhook_id", paypal_webhook_id, 255, NULL,
		       FLAG_NONEMPTY),
	STRING("paypal_cert_hosts", paypal_cert_hosts,
	       "api.paypal.com api-m.paypal.com api.sandbox.paypal.com "
	       "api-m.sandbox.paypal.com", FLAG_NONEMPTY),
	STRING("paypal_ca_file", paypal_ca_file, NULL, FLAG_NONEMPTY),
	NUMBER("paypal_cert_timeout_ms", KIND_LONG, paypal_cert_timeout_ms, 1,
	       60000, "2000"),
	TOLERANCE("paypal_tolerance_s", CONFIG_PROVIDER_PAYPAL),
	SECRETS("checkout_secret", CONFIG_PROVIDER_CHECKOUT, SECRET_TEXT, 0),
	SECRETS("lemonsqueezy_secret", CONFIG_PROVIDER_LEMONSQUEEZY,
		SECRET_TEXT, 0),
	/* Mollie's classic webhooks are unsigned: no mollie_secret. */
	SECRETS("mercadopago_secret", CONFIG_PROVIDER_MERCADOPAGO,
		SECRET_TEXT, 0),
	SECRETS("gocardless_secret", CONFIG_PROVIDER_GOCARDLESS,
		SECRET_TEXT, 0),
	STRING("dispatch_url", dispatch_url, NULL, 0),
	STRING("dispatch_command", dispatch_command, NULL, 0),
	{ "dispatch_secret", KIND_SECRETS, FIELD(dispatch_secret), 0, 0, NULL,
	  FLAG_SECRET, NULL, SECRET_WHSEC_BASE64 },
	NUMBER("dispatch_timeout_ms", KIND_LONG, dispatch_timeout_ms, 1, 3600000, "10000"),
	NUMBER("dispatch_concurrency", KIND_INT, dispatch_concurrency, 1, 256, "1"),
	NUMBER("dispatch_batch_size", KIND_INT, dispatch_batch_size, 1, 1000, "10"),
	NUMBER("dispatch_backoff_ms", KIND_LONG, dispatch_backoff_ms, 1, 86400000, "1000"),
	NUMBER("dispatch_backoff_max_ms", KIND_LONG, dispatch_backoff_max_ms, 1, 604800000, "3600000"),
	NUMBER("dispatch_max_attempts", KIND_INT, dispatch_max_attempts, 1, 1000000, "20"),
	NUMBER("dispatch_lease_ms", KIND_LONG, dispatch_lease_ms, 1000, 86400000, "60000"),
	NUMBER("dispatch_poll_ms", KIND_LONG, dispatch_poll_ms, 10, 3600000, "1000"),
	NUMBER("dispatch_rate_per_s", KIND_LONG, dispatch_rate_per_s, 0, 1000000, "0"),
	NUMBER("payload_retention_days", KIND_LONG, payload_retention_days, 0, 36500, "0"),
	NUMBER("inbox_days", KIND_LONG, inbox_days, 0, 36500, "0"),
	NUMBER("inbox_max_bytes", KIND_SIZE, inbox_max_bytes, 0,
	       1099511627776L, "104857600"),
	STRING("inbox_spool_dir", inbox_spool_dir, NULL, 0),
	NUMBER("dispatch_circuit_failures", KIND_INT, dispatch_circuit_failures, 1, 1000000, "5"),
	NUMBER("dispatch_alert_after_s", KIND_LONG, dispatch_alert_after_s, 1, 604800, "300"),
	STRING("alert_url", alert_url, NULL, 0),
	STRING("alert_command", alert_command, NULL, 0),
	{ "alert_secret", KIND_SECRETS, FIELD(alert_secret), 0, 0, NULL,
	  FLAG_SECRET, NULL, SECRET_WHSEC_BASE64 },
	/* payhook-reconcile (lib/reconcile checks the bases and keys). */
	API_KEY("stripe_api_key", CONFIG_PROVIDER_STRIPE),
	STRING("stripe_api_base", api_base[CONFIG_PROVIDER_STRIPE], NULL, FLAG_NONEMPTY),
	API_KEY("paddle_api_key", CONFIG_PROVIDER_PADDLE),
	STRING("paddle_api_base", api_base[CONFIG_PROVIDER_PADDLE], NULL, FLAG_NONEMPTY),
	API_KEY("razorpay_api_key", CONFIG_PROVIDER_RAZORPAY),
	STRING("razorpay_api_base", api_base[CONFIG_PROVIDER_RAZORPAY], NULL, FLAG_NONEMPTY),
	API_KEY("komoju_api_key", CONFIG_PROVIDER_KOMOJU),
	STRING("komoju_api_base", api_base[CONFIG_PROVIDER_KOMOJU], NULL, FLAG_NONEMPTY),
	API_KEY("payjp_api_key", CONFIG_PROVIDER_PAYJP),
	STRING("payjp_api_base", api_base[CONFIG_PROVIDER_PAYJP], NULL, FLAG_NONEMPTY),
	API_KEY("square_api_key", CONFIG_PROVIDER_SQUARE),
	STRING("square_api_base", api_base[CONFIG_PROVIDER_SQUARE], NULL, FLAG_NONEMPTY),
	API_KEY("shopify_api_key", CONFIG_PROVIDER_SHOPIFY),
	STRING("shopify_api_base", api_base[CONFIG_PROVIDER_SHOPIFY], NULL, FLAG_NONEMPTY),
	API_KEY("paypal_api_key", CONFIG_PROVIDER_PAYPAL),
	STRING("paypal_api_base", api_base[CONFIG_PROVIDER_PAYPAL], NULL, FLAG_NONEMPTY),
	API_KEY("lemonsqueezy_api_key", CONFIG_PROVIDER_LEMONSQUEEZY),
	STRING("lemonsqueezy_api_base", api_base[CONFIG_PROVIDER_LEMONSQUEEZY], NULL, FLAG_NONEMPTY),
	API_KEY("mollie_api_key", CONFIG_PROVIDER_MOLLIE),
	STRING("mollie_api_base", api_base[CONFIG_PROVIDER_MOLLIE], NULL, FLAG_NONEMPTY),
	API_KEY("mercadopago_api_key", CONFIG_PROVIDER_MERCADOPAGO),
	STRING("mercadopago_api_base", api_base[CONFIG_PROVIDER_MERCADOPAGO], NULL, FLAG_NONEMPTY),
	API_KEY("gocardless_api_key", CONFIG_PROVIDER_GOCARDLESS),
	STRING("gocardless_api_base", api_base[CONFIG_PROVIDER_GOCARDLESS], NULL, FLAG_NONEMPTY),
	BOUNDED_STRING("shopify_shop", shopify_shop, 255, NULL, FLAG_NONEMPTY),
	NUMBER("reconcile_lookback_s", KIND_LONG, reconcile_lookback_s, 1,
	       31536000, "259200"),
	NUMBER("reconcile_overlap_s", KIND_LONG, reconcile_overlap_s, 0,
	       86400, "600"),
	NUMBER("reconcile_rate_per_s", KIND_LONG, reconcile_rate_per_s, 1,
	       1000, "5"),
	NUMBER("reconcile_max_retries", KIND_INT, reconcile_max_retries, 1, 100,
	       "3"),
	NUMBER("reconcile_interval_s", KIND_LONG, reconcile_interval_s, 1,
	       86400, "900"),
	NUMBER("reconcile_max_pages", KIND_LONG, reconcile_max_pages, 1,
	       1000000, "5000"),
	NUMBER("reconcile_max_pass_s", KIND_LONG, reconcile_max_pass_s, 10,
	       86400, "3600"),
	NUMBER("notify_alert_after_s", KIND_LONG, notify_alert_after_s, 1,
	       604800, "600"),
	NUMBER("notify_max_pending", KIND_LONG, notify_max_pending, 1,
	       100000000, "100000"),
	NUMBER("notify_poll_ms", KIND_LONG, notify_poll_ms, 10, 1000, "200"),
	CHOICE("in_progress_status", in_progress_status, status_choices, "409"),
	NUMBER("retry_after_s", KIND_INT, retry_after_s, 0, 86400, "5"),
	CHOICE("log_level", log_level, log_level_choices, "info"),
	STRING("log_file", log_file, NULL, 0),
	CHOICE("log_format", log_format, log_format_choices, "text"),
	CHOICE("log_target", log_target, log_target_choices, "stderr"),
	STRING("health_path", health_path, NULL, 0),
	STRING("metrics_path", metrics_path, NULL, 0),
	/* Empty is refused: whoever writes the key means a token (to serve
	 * metrics_path without one, leave the key out). */
	STRING("metrics_token", metrics_token, NULL, FLAG_SECRET | FLAG_NONEMPTY),
	STRING("metrics_file", metrics_file, NULL, 0),
	STRING("status_path", status_path, NULL, 0),
	STRING("ping_path", ping_path, NULL, 0),
	STRING("status_page_path", status_page_path, NULL, 0),
	STRING("status_page_token", status_page_token, NULL,
	       FLAG_SECRET | FLAG_NONEMPTY),
	NUMBER("request_slowlog_timeout_ms", KIND_LONG, request_slowlog_timeout_ms,
	       0, 86400000, "0"),
	NUMBER("request_terminate_timeout_ms", KIND_LONG,
	       request_terminate_timeout_ms, 0, 86400000, "0"),
};

#define KEY_COUNT (sizeof(keys) / sizeof(keys[0]))

/* KIND_CHOICE writes an int: every field it serves must be int-sized. */
_Static_assert(sizeof(enum config_redis_unavailable) == sizeof(int) &&
	       sizeof(enum config_lock_backend) == sizeof(int) &&
	       sizeof(enum config_signature_scheme) == sizeof(int) &&
	       sizeof(enum config_encoding) == sizeof(int) &&
	       sizeof(enum config_amount_format) == sizeof(int) &&
	       sizeof(enum log_level) == sizeof(int) &&
	       sizeof(enum log_format) == sizeof(int) &&
	       sizeof(enum config_log_target) == sizeof(int),
	       "choice fields are int-sized");

/* Room for "PAYHOOK_" and the longest key name. */
#define ENV_NAME_MAX 64
#define ENV_PREFIX "PAYHOOK_"

const char *config_provider_name(enum config_provider provider)
{
	if ((unsigned)provider >= CONFIG_PROVIDER_COUNT)
		return "?";
	return provider_names[provider];
}

bool config_provider_enabled(const struct config *cfg,
			     enum config_provider provider)
{
	return (unsigned)provider < CONFIG_PROVIDER_COUNT &&
	       (cfg->providers & (1u << provider)) != 0;
}

bool config_alerts_set(const struct config *cfg)
{
	return (cfg->alert_url != NULL && cfg->alert_url[0] != '\0') ||
	       (cfg->alert_command != NULL && cfg->alert_command[0] != '\0');
}

long config_tolerance_s(const struct config *cfg,
			enum config_provider provider)
{
	if ((unsigned)provider < CONFIG_PROVIDER_COUNT &&
	    cfg->tolerance_s[provider] > 0)
		return cfg->tolerance_s[provider];
	return cfg->signature_tolerance_s;
}

static void free_string(char **field, int secret)
{
	if (*field == NULL)
		return;
	if (secret)
		OPENSSL_cleanse(*field, strlen(*field));
	free(*field);
	*field = NULL;
}

static void free_secrets(struct config_secrets *secrets)
{
	for (size_t i = 0; i < secrets->count; i++)
		free_string(&secrets->items[i], 1);
	free(secrets->items);
	secrets->items = NULL;
	secrets->count = 0;
}

static void *field_of(struct config *cfg, const struct key_def *def)
{
	return (char *)cfg + def->offset;
}

void config_cleanup(struct config *cfg)
{
	if (cfg == NULL)
		return;
	for (size_t i = 0; i < KEY_COUNT; i++) {
		void *field = field_of(cfg, &keys[i]);

		if (keys[i].kind == KIND_STRING || keys[i].kind == KIND_CURRENCY)
			free_string(field, (keys[i].flags & FLAG_SECRET) != 0);
		else if (keys[i].kind == KIND_SECRETS)
			free_secrets(field);
	}
	memset(cfg, 0, sizeof(*cfg));
}

const char *config_default_path(void)
{
	const char *path = getenv("PAYHOOK_CONFIG");

	return path != NULL && path[0] != '\0' ? path : NULL;
}

int config_resolve_path(const char *given, char **out, struct error *err)
{
	const char *path = given != NULL ? given : config_default_path();

	*out = NULL;
	if (path == NULL)
		return 0;
	*out = strdup(path);
	if (*out == NULL)
		return error_set(err, "out of memory");
	return 0;
}

long config_round_trip_bound_ms(const struct config *cfg)
{
	return 1000L * ((long)cfg->mysql_write_timeout_s +
			3L * (long)cfg->mysql_read_timeout_s);
}

long config_write_bound_ms(const struct config *cfg)
{
	return 2L * config_round_trip_bound_ms(cfg);
}

static int parse_choice(const struct choice *choices, const char *text,
			int *out)
{
	for (const struct choice *c = choices; c->name != NULL; c++) {
		if (strcasecmp(text, c->name) == 0) {
			*out = c->value;
			return 0;
		}
	}
	return -1;
}

/* "a, b or c" for a message about a choice key. */
static void describe_choices(const struct choice *choices, char *out,
			     size_t cap)
{
	size_t n = 0, used = 0;

	for (const struct choice *c = choices; c->name != NULL; c++)
		n++;
	out[0] = '\0';
	for (size_t i = 0; i < n && used < cap; i++) {
		int w = snprintf(out + used, cap - used, "%s%s",
				 i == 0 ? "" : i + 1 == n ? " or " : ", ",
				 choices[i].name);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

static int bad_value(struct error *err, const char *where,
		     const struct key_def *def, const char *expected)
{
	return error_set(err, "%s: bad value for key '%s': expected %s", where,
			 def->name, expected);
}

/* A provider's webhook secret against the other credentials of its
 * dashboard: what every such secret starts with, and the API keys and
 * tokens that get pasted in its place. Either would pass config_load and
 * then fail every signature (401), so both are refused here. */
struct pasted {
	const char *prefix;
	size_t min_len, max_len; /* of the whole text; 0: any */
};

struct secret_rule {
	const char *key;
	const char *required;     /* prefix every such secret has, or NULL */
	const char *expected;     /* for the message: what belongs here */
	const char *wrong_what;   /* for the message: what the wrong ones are */
	struct pasted wrong[6];
};

static const struct secret_rule secret_rules[] = {
	{ "stripe_secret", "whsec_",
	  "the endpoint's signing secret (whsec_..., Developers > Webhooks)",
	  "a Stripe API key (sk_, rk_ or pk_)",
	  { { "sk_live_", 0, 0 }, { "sk_test_", 0, 0 }, { "rk_live_", 0, 0 },
	    { "rk_test_", 0, 0 }, { "pk_live_", 0, 0 }, { "pk_test_", 0, 0 } } },
	{ "paddle_secret", "pdl_ntfset_",
	  "the notification destination's secret key (pdl_ntfset_...)",
	  "a Paddle API key (pdl_live_apikey_ or pdl_sdbx_apikey_)",
	  { { "pdl_live_apikey_", 0, 0 }, { "pdl_sdbx_apikey_", 0, 0 } } },
	{ "razorpay_secret", NULL,
	  "the secret typed in when the webhook was set up",
	  "a Razorpay API key id (rzp_live_ or rzp_test_ and 14 characters)",
	  { { "rzp_live_", 23, 23 }, { "rzp_test_", 23, 23 } } },
	{ "komoju_secret", NULL, "the webhook's secret token",
	  "a KOMOJU API key (sk_ or pk_)",
	  { { "sk_live_", 0, 0 }, { "sk_test_", 0, 0 }, { "pk_live_", 0, 0 },
	    { "pk_test_", 0, 0 } } },
	{ "payjp_secret", NULL, "the webhook token (whook_...)",
	  "a PAY.JP API key (sk_ or pk_)",
	  { { "sk_live_", 0, 0 }, { "sk_test_", 0, 0 }, { "pk_live_", 0, 0 },
	    { "pk_test_", 0, 0 } } },
	{ "square_secret", NULL, "the subscription's signature key",
	  "a Square access token or application credential (EAAA..., sq0...)",
	  { { "EAAA", 60, 0 }, { "sq0idp-", 0, 0 }, { "sq0csp-", 0, 0 },
	    { "sq0atp-", 0, 0 }, { "sandbox-sq0", 0, 0 } } },
	{ "mercadopago_secret", NULL,
	  "the webhook's secret signature (Your integrations > Webhooks)",
	  "a Mercado Pago access token or public key (APP_USR- or TEST-)",
	  { { "APP_USR-", 0, 0 }, { "TEST-", 0, 0 } } },
	{ "gocardless_secret", NULL,
	  "the webhook endpoint's secret (Developers > Webhook endpoints)",
	  "a GoCardless access token (live_ or sandbox_)",
	  { { "live_", 0, 0 }, { "sandbox_", 0, 0 } } },
	{ "shopify_secret", NULL,
	  "the app's client secret (shpss_... or 32 hex digits)",
	  "a Shopify access token (shpat_, shpca_, shppa_ or shpua_)",
	  { { "shpat_", 0, 0 }, { "shpca_", 0, 0 }, { "shppa_", 0, 0 },
	    { "shpua_", 0, 0 } } },
};

/* Returns 0 when text may be def's secret, or -1 with err saying what it
 * looks like and what was expected (never quoting it). */
static int check_secret_rule(const struct key_def *def, const char *text,
			     const char *where, struct error *err)
{
	size_t len = strlen(text);

	for (size_t i = 0; i < sizeof(secret_rules) / sizeof(secret_rules[0]);
	     i++) {
		const struct secret_rule *r = &secret_rules[i];

		if (strcmp(r->key, def->name) != 0)
			continue;
		for (size_t w = 0; w < sizeof(r->wrong) / sizeof(r->wrong[0]) &&
				   r->wrong[w].prefix != NULL; w++) {
			const struct pasted *x = &r->wrong[w];

			if (strncmp(text, x->prefix, strlen(x->prefix)) == 0 &&
			    len >= x->min_len &&
			    (x->max_len == 0 || len <= x->max_len))
				return error_set(err, "%s: bad value for key "
						 "'%s': this is %s, not the "
						 "webhook secret; expected %s",
						 where, def->name, r->wrong_what,
						 r->expected);
		}
		if (r->required != NULL &&
		    strncmp(text, r->required, strlen(r->required)) != 0)
			return error_set(err, "%s: bad value for key '%s': "
					 "expected %s", where, def->name,
					 r->expected);
	}
	return 0;
}

size_t config_test_secret_form_prefix(const char *text, size_t len)
{
	size_t best = 0;

	if (len >= strlen("whsec_") && strncmp(text, "whsec_", 6) == 0)
		best = strlen("whsec_");
	for (size_t i = 0; i < sizeof(secret_rules) / sizeof(secret_rules[0]);
	     i++) {
		const struct secret_rule *r = &secret_rules[i];

		for (size_t w = 0; w <= sizeof(r->wrong) / sizeof(r->wrong[0]);
		     w++) {
			const char *prefix = w == 0 ? r->required :
					     r->wrong[w - 1].prefix;
			size_t n = prefix != NULL ? strlen(prefix) : 0;

			if (n > best && n <= len && strncmp(text, prefix, n) == 0)
				best = n;
		}
	}
	return best;
}

static int add_secret(struct config_secrets *secrets, const struct key_def *def,
		      const char *text, const char *where, struct error *err)
{
	struct secret_key key;
	struct error decode_err;
	char **grown;
	char *copy;

	/* Validate now, so the message names the line the secret is on. */
	if (check_secret_rule(def, text, where, err) != 0)
		return -1;
	if ((def->flags & FLAG_FORM_LATER) == 0) {
		if (secret_decode(def->form, text, &key, &decode_err) != 0)
			return error_set(err, "%s: bad value for key '%s': %s",
					 where, def->name, decode_err.message);
		secret_key_wipe(&key);
	}
	if (secrets->count >= SIZE_MAX / sizeof(char *) - 1)
		return error_set(err, "%s: too many secrets", where);
	grown = realloc(secrets->items, (secrets->count + 1) * sizeof(char *));
	if (grown == NULL)
		return error_set(err, "%s: out of memory", where);
	secrets->items = grown;
	copy = strdup(text);
	if (copy == NULL)
		return error_set(err, "%s: out of memory", where);
	secrets->items[secrets->count++] = copy;
	return 0;
}

/* The providers key: white-space separated profile names. Returns 0, or -1
 * with *bad and *bad_len on the first word that names no profile (*bad_len
 * 0 when the value names none at all). */
static int parse_providers(const char *text, unsigned *out, const char **bad,
			   size_t *bad_len)
{
	unsigned set = 0;
	const char *p = text;

	*bad = NULL;
	*bad_len = 0;
	while (*p != '\0') {
		size_t len;
		int found = 0;

		while (isspace((unsigned char)*p))
			p++;
		len = strcspn(p, " \t");
		if (len == 0)
			break;
		for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++) {
			if (strlen(provider_names[i]) == len &&
			    strncmp(p, provider_names[i], len) == 0) {
				set |= 1u << i;
				found = 1;
			}
		}
		if (!found) {
			*bad = p;
			*bad_len = len;
			return -1;
		}
		p += len;
	}
	if (set == 0)
		return -1;
	*out = set;
	return 0;
}

/* The message for a providers value that parse_providers refused: the
 * unknown word is named when it looks like a name (letters, digits, _ . -,
 * short); anything else may be a pasted secret and is not shown. */
static int bad_providers(struct error *err, const char *where,
			 const char *bad, size_t bad_len)
{
	static const char names[] = "standard, stripe, paddle, razorpay, "
				    "komoju, payjp, square, shopify, adyen, "
				    "generic";
	bool name = bad_len > 0 && bad_len <= 32;

	for (size_t i = 0; i < bad_len && name; i++)
		name = isalnum((unsigned char)bad[i]) || bad[i] == '_' ||
		       bad[i] == '-' || bad[i] == '.';
	if (bad_len == 0)
		return error_set(err, "%s: bad value for key 'providers': "
				 "expected profile names separated by spaces, "
				 "from %s", where, names);
	if (!name)
		return error_set(err, "%s: bad value for key 'providers': a "
				 "word names no profile (not shown); expected "
				 "names from %s", where, names);
	return error_set(err, "%s: bad value for key 'providers': unknown "
			 "profile '%.*s'; expected names from %s", where,
			 (int)bad_len, bad, names);
}

/* A value that looks like shell or INI quoting, or an inline comment, is
 * almost surely not meant literally: say so rather than keep the quotes.
 * Returns 0, or -1 with err set. */
static int check_value_form(const struct key_def *def, const char *text,
			    const char *where, struct error *err)
{
	size_t len = strlen(text);

	if (len >= 2 && (text[0] == '"' || text[0] == '\'') &&
	    text[len - 1] == text[0])
		return error_set(err, "%s: value of key '%s' is wrapped in "
				 "quotes: write it without them", where,
				 def->name);
	for (size_t i = 1; i < len; i++) {
		if (text[i] == '#' && (text[i - 1] == ' ' || text[i - 1] == '\t'))
			return error_set(err, "%s: value of key '%s' has a '#' "
					 "after white space: comments go on "
					 "their own line", where, def->name);
	}
	return 0;
}

/* What every value must be, wherever it comes from: no control
 * characters, no quotes around it, no comment after it. Returns 0, or -1
 * with err set. */
static int check_value(const struct key_def *def, const char *text,
		       const char *where, struct error *err)
{
	for (const char *p = text; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return bad_value(err, where, def,
					 "no control characters");
	}
	return check_value_form(def, text, where, err);
}

/* Parses text (already trimmed) for def and stores it in cfg. where is
 * "FILE:LINE", "environment PAYHOOK_X" or "default". Returns 0, or -1 with
 * err set (the value itself is never quoted). */
static int set_value(struct config *cfg, const struct key_def *def,
		     const char *text, const char *where, struct error *err)
{
	void *field = field_of(cfg, def);
	char expected[160];
	uint64_t number;
	int choice;
	char *copy;

	if (check_value(def, text, where, err) != 0)
		return -1;

	switch (def->kind) {
	case KIND_STRING:
		if (text[0] == '\0' && (def->flags & FLAG_NONEMPTY) != 0)
			return bad_value(err, where, def, def->fallback == NULL ?
					 "a non-empty value (remove the line "
					 "to leave the key unset)" :
					 "a non-empty value (remove the line "
					 "for the default)");
		if (def->max > 0 && strlen(text) > (size_t)def->max) {
			snprintf(expected, sizeof(expected),
				 "at most %ld bytes", def->max);
			return bad_value(err, where, def, expected);
		}
		copy = NULL;
		if (text[0] != '\0') {
			copy = strdup(text);
			if (copy == NULL)
				return error_set(err, "%s: out of memory", where);
		}
		free_string(field, (def->flags & FLAG_SECRET) != 0);
		*(char **)field = copy;
		return 0;
	case KIND_INT:
	case KIND_LONG:
	case KIND_SIZE:
		/* A number without a default may be left empty: unset (0). */
		if (text[0] == '\0' && def->fallback == NULL) {
			number = 0;
			goto store_number;
		}
		if (number_parse(text, (uint64_t)def->max, &number) != NUMBER_OK ||
		    number < (uint64_t)def->min) {
			snprintf(expected, sizeof(expected),
				 "a whole number from %ld to %ld", def->min,
				 def->max);
			return bad_value(err, where, def, expected);
		}
store_number:
		if (def->kind == KIND_INT)
			*(int *)field = (int)number;
		else if (def->kind == KIND_LONG)
			*(long *)field = (long)number;
		else
			*(size_t *)field = (size_t)number;
		return 0;
	case KIND_BOOL:
		if (parse_choice(bool_choices, text, &choice) != 0)
			return bad_value(err, where, def, "yes or no");
		*(bool *)field = choice != 0;
		return 0;
	case KIND_CHOICE:
		if (parse_choice(def->choices, text, &choice) != 0) {
			describe_choices(def->choices, expected,
					 sizeof(expected));
			return bad_value(err, where, def, expected);
		}
		*(int *)field = choice;
		return 0;
	case KIND_CURRENCY:
		copy = NULL;
		if (text[0] != '\0') {
			if (strlen(text) != 3 || !isalpha((unsigned char)text[0]) ||
			    !isalpha((unsigned char)text[1]) ||
			    !isalpha((unsigned char)text[2]))
				return bad_value(err, where, def,
						 "3 ASCII letters (ISO 4217 code)");
			copy = strdup(text);
			if (copy == NULL)
				return error_set(err, "%s: out of memory", where);
			for (char *p = copy; *p != '\0'; p++)
				*p = (char)toupper((unsigned char)*p);
		}
		free_string(field, 0);
		*(char **)field = copy;
		return 0;
	case KIND_SECRETS:
		/* An empty line adds nothing, like an unset optional string. */
		if (text[0] == '\0')
			return 0;
		return add_secret(field, def, text, where, err);
	case KIND_PROVIDERS: {
		const char *bad;
		size_t bad_len;

		if (parse_providers(text, field, &bad, &bad_len) != 0)
			return bad_providers(err, where, bad, bad_len);
		return 0;
	}
	}
	return error_set(err, "%s: key '%s' has no parser", where, def->name);
}

static const struct key_def *find_key(const char *name)
{
	for (size_t i = 0; i < KEY_COUNT; i++) {
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	}
	return NULL;
}

/* Edit distance between a and b, or more than limit (then limit + 1), so a
 * line that is a typo of a key can be named by the key it resembles. */
static size_t edit_distance(const char *a, const char *b, size_t limit)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[ENV_NAME_MAX + 1];

	if (la > ENV_NAME_MAX || lb > ENV_NAME_MAX ||
	    (la > lb ? la - lb : lb - la) > limit)
		return limit + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb] > limit ? limit + 1 : row[lb];
}

/* The known key closest to name (at most 2 edits away), or NULL. */
static const struct key_def *closest_key(const char *name)
{
	const struct key_def *best = NULL;
	size_t best_distance = 3;

	for (size_t i = 0; i < KEY_COUNT; i++) {
		size_t d = edit_distance(name, keys[i].name, 2);

		if (d < best_distance) {
			best = &keys[i];
			best_distance = d;
		}
	}
	return best;
}

/* An unknown key: its text is never quoted (a pasted secret "whsec_...="
 * would otherwise reach the log), only a known key it resembles. */
static int unknown_key(const char *where, const char *name, struct error *err)
{
	const struct key_def *near = closest_key(name);

	if (near != NULL)
		return error_set(err, "%s: unknown key (not shown, it may be a "
				 "secret); did you mean '%s'?", where,
				 near->name);
	return error_set(err, "%s: unknown key (not shown, it may be a "
			 "secret); conf/payhook.conf.example lists them all",
			 where);
}

static char *trim(char *text)
{
	char *end;

	while (isspace((unsigned char)*text))
		text++;
	end = text + strlen(text);
	while (end > text && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	return text;
}

/* One line of the file: blank, a whole-line comment or "key = value". */
static int load_line(struct config *cfg, char *line, const char *path,
		     unsigned long lineno, unsigned long *seen,
		     struct error *err)
{
	char where[ERROR_MESSAGE_MAX];
	const struct key_def *def;
	char *text = trim(line);
	char *equals;
	char *name;

	snprintf(where, sizeof(where), "%s:%lu", path, lineno);
	if (text[0] == '\0' || text[0] == '#')
		return 0;
	/* Never quote the line: it may be a pasted secret. */
	equals = strchr(text, '=');
	if (equals == NULL)
		return error_set(err, "%s: expected 'key = value'", where);
	*equals = '\0';
	name = trim(text);
	if (name[0] == '\0')
		return error_set(err, "%s: missing key before '='", where);
	def = find_key(name);
	if (def == NULL)
		return unknown_key(where, name, err);
	if (def->kind != KIND_SECRETS) {
		/* A second line for a key is more likely a mistake than a wish. */
		size_t index = (size_t)(def - keys);

		if (seen[index] != 0)
			return error_set(err,
					 "%s: key '%s' is already set on line %lu",
					 where, def->name, seen[index]);
		seen[index] = lineno;
	}
	return set_value(cfg, def, trim(equals + 1), where, err);
}

static int load_file(struct config *cfg, const char *path, struct error *err)
{
	unsigned long seen[KEY_COUNT] = { 0 };
	unsigned long lineno = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0;
	FILE *file;

	file = fopen(path, "r");
	if (file == NULL)
		return error_set(err, "config file %s: %s", path,
				 strerror(errno));
	errno = 0;
	while ((len = getline(&line, &cap, file)) >= 0) {
		char *text = line;

		lineno++;
		if (strlen(line) != (size_t)len) {
			rc = error_set(err, "%s:%lu: line contains a NUL byte",
				       path, lineno);
			break;
		}
		/* A UTF-8 byte-order mark left by an editor is not part of a key. */
		if (lineno == 1 && strncmp(text, "\xEF\xBB\xBF", 3) == 0)
			text += 3;
		rc = load_line(cfg, text, path, lineno, seen, err);
		if (rc != 0)
			break;
		errno = 0;
	}
	if (rc == 0 && ferror(file))
		rc = error_set(err, "config file %s: %s", path,
			       strerror(errno != 0 ? errno : EIO));
	if (line != NULL) {
		/* The buffer held passwords and secrets. */
		OPENSSL_cleanse(line, cap);
		free(line);
	}
	fclose(file);
	return rc;
}

/* PAYHOOK_<PROFILE>_SECRET: white-space separated secrets that replace every
 * line of the key. Only white space counts as unset. */
static int load_env_secrets(struct config *cfg, const struct key_def *def,
			    const char *name, const char *value,
			    struct error *err)
{
	struct config_secrets *secrets = field_of(cfg, def);
	char where[ERROR_MESSAGE_MAX];
	char *copy;
	char *token;
	char *save = NULL;
	int rc = 0;

	copy = strdup(value);
	if (copy == NULL)
		return error_set(err, "environment %s: out of memory", name);
	token = strtok_r(copy, " \t\r\n\v\f", &save);
	if (token != NULL)
		free_secrets(secrets);
	for (unsigned n = 1; token != NULL && rc == 0; n++) {
		snprintf(where, sizeof(where), "environment %s (secret %u)",
			 name, n);
		rc = check_value(def, token, where, err);
		if (rc == 0)
			rc = add_secret(secrets, def, token, where, err);
		token = strtok_r(NULL, " \t\r\n\v\f", &save);
	}
	OPENSSL_cleanse(copy, strlen(value));
	free(copy);
	return rc;
}

/* PAYHOOK_<KEY> for def, upper-cased into name. */
static int env_name(const struct key_def *def, char *name, size_t cap,
		    struct error *err)
{
	int n = snprintf(name, cap, ENV_PREFIX "%s", def->name);

	if (n < 0 || (size_t)n >= cap)
		return error_set(err, "key '%s' is too long", def->name);
	for (char *p = name; *p != '\0'; p++)
		*p = (char)toupper((unsigned char)*p);
	return 0;
}

/* A PAYHOOK_ variable that names no key is a typo that would otherwise be
 * ignored in silence. */
static int check_env_names(struct error *err)
{
	char name[ENV_NAME_MAX];

	for (char **env = environ; env != NULL && *env != NULL; env++) {
		const char *var = *env;
		size_t len = strcspn(var, "=");
		int known = 0;

		if (strncmp(var, ENV_PREFIX, strlen(ENV_PREFIX)) != 0)
			continue;
		if (len == strlen("PAYHOOK_CONFIG") &&
		    strncmp(var, "PAYHOOK_CONFIG", len) == 0)
			continue;
		for (size_t i = 0; i < KEY_COUNT && !known; i++) {
			if (env_name(&keys[i], name, sizeof(name), err) != 0)
				return -1;
			known = strlen(name) == len && strncmp(var, name, len) == 0;
		}
		if (!known)
			return error_set(err, "environment %.*s names no "
					 "configuration key", (int)(len > 64 ? 64 : len),
					 var);
	}
	return 0;
}

/* Every PAYHOOK_<KEY> that is set and not empty overrides the file. */
static int load_env(struct config *cfg, struct error *err)
{
	char name[ENV_NAME_MAX];
	char where[ENV_NAME_MAX + 16];

	if (check_env_names(err) != 0)
		return -1;
	for (size_t i = 0; i < KEY_COUNT; i++) {
		const struct key_def *def = &keys[i];
		const char *value;
		char *copy;
		int rc;

		if (env_name(def, name, sizeof(name), err) != 0)
			return -1;
		value = getenv(name);
		if (value == NULL || value[0] == '\0')
			continue;
		if (def->kind == KIND_SECRETS) {
			if (load_env_secrets(cfg, def, name, value, err) != 0)
				return -1;
			continue;
		}
		copy = strdup(value);
		if (copy == NULL)
			return error_set(err, "environment %s: out of memory",
					 name);
		snprintf(where, sizeof(where), "environment %s", name);
		rc = 0;
		/* White space only counts as empty, like an empty variable. */
		if (trim(copy)[0] != '\0')
			rc = set_value(cfg, def, trim(copy), where, err);
		OPENSSL_cleanse(copy, strlen(value));
		free(copy);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* Checks that involve more than one key, after every source is applied,
 * of the keys every program reads: MySQL and logging. */
static int check_common(const struct config *cfg, struct error *err)
{
	struct endpoint list[ENDPOINT_LIST_MAX];
	struct error inner;
	size_t n;

	if (cfg->mysql_nodes != NULL &&
	    endpoint_list_parse(cfg->mysql_nodes, cfg->mysql_port, list, &n,
				&inner) != 0)
		return error_set(err, "mysql_nodes: %s", inner.message);
	if (cfg->mysql_nodes != NULL && cfg->mysql_socket != NULL)
		return error_set(err, "mysql_nodes and mysql_socket are both set: "
				 "a cluster's nodes are reached over TCP");
	if (cfg->log_target == CONFIG_LOG_TARGET_SYSLOG && cfg->log_file != NULL)
		return error_set(err, "log_target = syslog and log_file are both "
				 "set: choose one");
	return 0;
}

int config_warning(const struct config *cfg, size_t index, char *out,
		   size_t cap)
{
	size_t n = 0;

	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		if (cfg->secrets[p].count == 0 || config_provider_enabled(cfg, p))
			continue;
		if (n++ != index)
			continue;
		snprintf(out, cap, "%s%s is set but providers does not enable "
			 "%s: the secret is not used, and requests for %s get "
			 "404 not_found", p == CONFIG_PROVIDER_STANDARD ?
			 "webhook_" : provider_names[p],
			 p == CONFIG_PROVIDER_STANDARD ? "secret" : "_secret",
			 provider_names[p], provider_names[p]);
		return 0;
	}
	if (cfg->status_path != NULL && cfg->metrics_token == NULL &&
	    n++ == index) {
		snprintf(out, cap, "status_path is served without a token: "
			 "whoever reaches it reads the pool's workers and the "
			 "transaction ids in hand (set metrics_token to require "
			 "one)");
		return 0;
	}
	if (cfg->metrics_path != NULL && cfg->metrics_token == NULL &&
	    n++ == index) {
		snprintf(out, cap, "metrics_path is served without a token: "
			 "whoever reaches it reads the counters (set "
			 "metrics_token to require one)");
		return 0;
	}
	return -1;
}

int config_load(struct config *cfg, const char *path, struct error *err)
{
	memset(cfg, 0, sizeof(*cfg));
	error_clear(err);
	for (size_t i = 0; i < KEY_COUNT; i++) {
		if (keys[i].fallback != NULL &&
		    set_value(cfg, &keys[i], keys[i].fallback, "default",
			      err) != 0)
			goto fail;
	}
	if (path != NULL && load_file(cfg, path, err) != 0)
		goto fail;
	if (load_env(cfg, err) != 0)
		goto fail;
	if (check_common(cfg, err) != 0)
		goto fail;
	return 0;
fail:
	config_cleanup(cfg);
	return -1;
}

/* "a|b|c" of a choice table, for the reference. */
static void join_choices(const struct choice *choices, char *out, size_t cap)
{
	size_t used = 0;

	out[0] = '\0';
	for (const struct choice *c = choices; c->name != NULL && used < cap;
	     c++) {
		int w = snprintf(out + used, cap - used, "%s%s",
				 c == choices ? "" : "|", c->name);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* What a key accepts, in words, for config_write_reference. */
static void describe_bounds(const struct key_def *def, char *out, size_t cap)
{
	switch (def->kind) {
	case KIND_INT:
	case KIND_LONG:
	case KIND_SIZE:
		snprintf(out, cap, "%ld..%ld", def->min, def->max);
		break;
	case KIND_STRING:
		if (def->max > 0)
			snprintf(out, cap, "at most %ld characters%s", def->max,
				 (def->flags & FLAG_NONEMPTY) ? ", not empty" : "");
		else
			snprintf(out, cap, "%s", (def->flags & FLAG_NONEMPTY) ?
				 "text, not empty" : "text");
		break;
	case KIND_BOOL:
		snprintf(out, cap, "yes|no");
		break;
	case KIND_CHOICE:
		join_choices(def->choices, out, cap);
		break;
	case KIND_CURRENCY:
		snprintf(out, cap, "3-letter ISO 4217 code");
		break;
	case KIND_SECRETS:
		snprintf(out, cap, "%s; several separated by spaces",
			 secret_form_description(def->form));
		break;
	case KIND_PROVIDERS: {
		size_t used = 0;

		out[0] = '\0';
		for (size_t i = 0; i < CONFIG_PROVIDER_COUNT && used < cap; i++) {
			int w = snprintf(out + used, cap - used, "%s%s",
					 i == 0 ? "" : "|", provider_names[i]);

			if (w < 0)
				break;
			used += (size_t)w;
		}
		break;
	}
	}
}

static const char *kind_name(enum key_kind kind)
{
	static const char *const names[] = {
		[KIND_STRING] = "string", [KIND_INT] = "integer",
		[KIND_LONG] = "integer", [KIND_SIZE] = "integer",
		[KIND_BOOL] = "boolean", [KIND_CHOICE] = "choice",
		[KIND_CURRENCY] = "currency", [KIND_SECRETS] = "secrets",
		[KIND_PROVIDERS] = "providers",
	};

	return names[kind];
}

int config_write_reference(FILE *out)
{
	char bounds[512];

	for (size_t i = 0; i < KEY_COUNT; i++) {
		const struct key_def *def = &keys[i];

		describe_bounds(def, bounds, sizeof(bounds));
		if (fprintf(out, "%s\t%s\t%s\t%s\t%s\n", def->name,
			    kind_name(def->kind),
			    def->fallback != NULL ? def->fallback : "",
			    bounds, (def->flags & FLAG_SECRET) ? "secret" : "") < 0)
			return -1;
	}
	return fflush(out) == 0 ? 0 : -1;
}
