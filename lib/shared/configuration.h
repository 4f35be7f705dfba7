/* configuration.h - payhook's settings (prefix config_): defaults, the
 * key = value file, the PAYHOOK_<KEY> environment overrides, and the checks
 * that refuse a configuration before any request is served.
 *
 * (The file is not called config.h: that name belongs to autoconf's header.)
 */
#ifndef PAYHOOK_CONFIGURATION_H
#define PAYHOOK_CONFIGURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"
#include "log.h"

enum config_redis_unavailable {
	CONFIG_REDIS_UNAVAILABLE_DB_ONLY, /* go on with the unique key alone */
	CONFIG_REDIS_UNAVAILABLE_FAIL,    /* answer 503 */
};

/* What guards a transaction while it is written. */
enum config_lock_backend {
	CONFIG_LOCK_REDIS = 0, /* the Redis lock (default) */
	CONFIG_LOCK_NONE,      /* no lock: the unique key alone, no Redis at
				* all (a shared host has none) */
};

enum config_signature_scheme {
	CONFIG_SIGNATURE_STANDARD, /* Standard Webhooks, the default */
	CONFIG_SIGNATURE_NONE,     /* no signature check: must be chosen */
};

/* The provider profiles, in the order of the providers key's documentation.
 * The names are config_provider_name's; what each profile does is
 * lib/receiver/provider.c's. */
enum config_provider {
	CONFIG_PROVIDER_STANDARD,
	CONFIG_PROVIDER_STRIPE,
	CONFIG_PROVIDER_PADDLE,
	CONFIG_PROVIDER_RAZORPAY,
	CONFIG_PROVIDER_KOMOJU,
	CONFIG_PROVIDER_PAYJP,
	CONFIG_PROVIDER_SQUARE,
	CONFIG_PROVIDER_SHOPIFY,
	CONFIG_PROVIDER_ADYEN,
	CONFIG_PROVIDER_GENERIC,
	CONFIG_PROVIDER_PAYPAL,
	CONFIG_PROVIDER_CHECKOUT,
	CONFIG_PROVIDER_LEMONSQUEEZY,
	CONFIG_PROVIDER_MOLLIE,
	CONFIG_PROVIDER_MERCADOPAGO,
	CONFIG_PROVIDER_GOCARDLESS,
	CONFIG_PROVIDER_COUNT
};

/* Text encodings a generic provider may use for its signature and secret. */
enum config_encoding {
	CONFIG_ENCODING_HEX,
	CONFIG_ENCODING_BASE64,
	CONFIG_ENCODING_TEXT, /* secrets only: the text is the key */
};

/* How a generic provider writes the amount. */
enum config_amount_format {
	CONFIG_AMOUNT_INTEGER,      /* a JSON integer of minor units */
	CONFIG_AMOUNT_MINOR_STRING, /* a string of minor units, e.g. "1999" */
	CONFIG_AMOUNT_DECIMAL,      /* a decimal string in major units, "19.99" */
};

/* Where log lines go. */
enum config_log_target {
	CONFIG_LOG_TARGET_STDERR = 0, /* standard error, or log_file when set */
	CONFIG_LOG_TARGET_SYSLOG,     /* syslog(3), facility daemon */
};

/* The secrets of one profile, in the order given (rotation: any may match). */
struct config_secrets {
	char **items;
	size_t count;
};

/* The generic profile's keys (generic_...): NULL when not set. */
struct config_generic {
	char *signature_header;       /* e.g. "X-Signature" */
	enum config_encoding signature_encoding; /* hex (default) or base64 */
	char *signature_prefix;       /* e.g. "sha256=", stripped first */
	char *signed_payload;         /* "{body}" (default), "{timestamp}.{body}",
				       * "{url}{body}" ... */
	char *timestamp_header;       /* needed when signed_payload has {timestamp} */
	char *url;                    /* needed when signed_payload has {url} */
	enum config_encoding secret_encoding; /* text (default), hex, base64 */
	char *event_path;             /* dotted JSON path of the event type */
	char *event_values;           /* white-space separated payment events */
	char *event_id_path;          /* dotted JSON path of the event id */
	char *transaction_id_path;
	char *amount_path;
	enum config_amount_format amount_format;
	char *currency_path;
};

/* Every string is owned by the struct (freed by config_cleanup); an optional
 * string that is not set is NULL. */
struct config {
	char *redis_host;           /* default "127.0.0.1" */
	int redis_port;             /* default 6379 */
	char *redis_socket;         /* unix socket path; wins over host/port */
	char *redis_password;       /* AUTH when set */
	int redis_db;               /* SELECT when not 0 */
	int redis_timeout_ms;       /* connect and command timeout, default 500 */
	char *redis_sentinels;      /* "host:port ..." of Redis Sentinels: the
				     * master is asked of them (redis_host and
				     * redis_port are then not used) */
	char *redis_master_name;    /* the master's name in Sentinel, default
				     * "mymaster" */

	char *mysql_host;           /* default "127.0.0.1" */
	int mysql_port;             /* default 3306 */
	char *mysql_socket;         /* unix socket path; wins over host/port */
	char *mysql_user;           /* default "payhook" */
	char *mysql_password;
	char *mysql_database;       /* default "payhook" */
	int mysql_connect_timeout_s; /* default 2 */
	int mysql_read_timeout_s;    /* default 2 */
	int mysql_write_timeout_s;   /* default 2 */
	char *mysql_nodes;           /* "host[:port] ..." of a cluster's nodes
				      * (Galera): replaces mysql_host/port */

	long lock_ttl_ms;           /* default 30000 */
	char *lock_key_prefix;      /* default "lock:webhook:tx:" */
	enum config_redis_unavailable redis_unavailable; /* default db_only */
	enum config_lock_backend lock_backend; /* default redis */

	size_t max_body_bytes;      /* default 65536 */
	char *default_currency;     /* NULL, or 3 upper-case letters */
	bool trim_transaction_id;   /* default no */

	enum config_signature_scheme signature_scheme; /* default standard */
	long signature_tolerance_s; /* default 300 */

	/* Bit (1u << profile) for each enabled profile; default standard. */
	unsigned providers;
	/* secrets[CONFIG_PROVIDER_STANDARD] holds the webhook_secret lines. */
	struct config_secrets secrets[CONFIG_PROVIDER_COUNT];
	/* <profile>_tolerance_s; 0 when not set (signature_tolerance_s then). */
	long tolerance_s[CONFIG_PROVIDER_COUNT];
	char *square_notification_url;
	struct config_generic generic;

	/* payhook-dispatch: the hand-off of recorded payments. */
	char *dispatch_url;         /* POST each payment here ... */
	char *dispatch_command;     /* ... or run this per payment (sh -c) */
	struct config_secrets dispatch_secret; /* whsec_: signs each POST */
	long dispatch_timeout_ms;   /* one attempt, default 10000 */
	int dispatch_concurrency;   /* deliveries in flight, default 1 */
	int dispatch_batch_size;    /* payments claimed at once, default 10 */
	long dispatch_backoff_ms;   /* first retry delay, default 1000 */
	long dispatch_backoff_max_ms; /* longest retry delay, default 3600000 */
	int dispatch_max_attempts;  /* then dead, default 20 */
	long dispatch_lease_ms;     /* a claim's lease, default 60000 */
	long dispatch_poll_ms;      /* idle wait between looks, default 1000 */
	long dispatch_rate_per_s;   /* attempts per second at most; 0: no cap */
	long payload_retention_days; /* clear delivered payloads older; 0: keep */
	long inbox_days;            /* keep ignored and 401 deliveries in
				     * table inbox this long; 0 (default): off */
	size_t inbox_max_bytes;     /* the inbox's bodies at most (oldest out
				     * first); 0: no cap; default 100 MiB */
	char *inbox_spool_dir;      /* a busy worker's kept deliveries go to
				     * a file here, loaded into table inbox
				     * once it is idle; NULL (default): to
				     * the table at once */
	int dispatch_circuit_failures; /* failures in a row that open the
				     * target's circuit, default 5 */
	long dispatch_alert_after_s; /* a Retry-After wait this long alerts
				     * target_waiting, default 300 */
	/* Alerts (alert.h): a dead payment, the circuit opening or closing. */
	char *alert_url;            /* POST each alert here ... */
	char *alert_command;        /* ... or run this per alert (sh -c) */
	struct config_secrets alert_secret; /* whsec_: signs each alert POST
				     * (else dispatch_secret) */

	/* payhook-reconcile: what each provider's API holds (reconcile.h
	 * checks these keys). */
	char *api_key[CONFIG_PROVIDER_COUNT];  /* <profile>_api_key: the
				     * merchant's read-only key; NULL: that
				     * profile is not reconciled */
	char *api_base[CONFIG_PROVIDER_COUNT]; /* <profile>_api_base; NULL:
				     * the provider's public API */
	char *shopify_shop;         /* <shop>.myshopify.com: the shopify
				     * profile's API host (its default base) */
	/* PayPal signs with a certificate (provider_paypal.h). */
	char *paypal_webhook_id;    /* the webhook's id, in the signed text */
	char *paypal_cert_hosts;    /* hosts (host[:port]) a certificate may
				     * come from, apart by spaces */
	char *paypal_ca_file;       /* CAs its chain ends in; NULL: the
				     * system's */
	long paypal_cert_timeout_ms; /* the longest a request waits for one */
	long reconcile_lookback_s;  /* the first pass, default 259200 */
	long reconcile_overlap_s;   /* listed again each pass, default 600 */
	long reconcile_rate_per_s;  /* requests a second per provider, 5 */
	int reconcile_max_retries;  /* tries of a page that fails, default 3 */
	long reconcile_interval_s;  /* between passes without --once, 900 */
	long reconcile_max_pages;   /* pages of one provider's pass, 5000 */
	long reconcile_max_pass_s;  /* seconds of one provider's pass, 3600 */
	/* Providers that only notify (notify.h): the queue of their
	 * notifications, fetched by payhook-reconcile. */
	long notify_alert_after_s;  /* a pending one this old alerts
				     * notify_waiting, default 600 */
	long notify_max_pending;    /* pending ones at most; past it 503,
				     * default 100000 */
	long notify_poll_ms;        /* the fetcher daemon's look at the
				     * table when idle, default 200 */

	int in_progress_status;     /* 409 (default) or 503 */
	int retry_after_s;          /* Retry-After value, default 5 */
	enum log_level log_level;   /* default info */
	char *log_file;             /* append log lines here instead of stderr
				     * (spawn-fcgi sends stderr to /dev/null) */
	enum log_format log_format; /* text (default) or json */
	enum config_log_target log_target; /* stderr (or log_file), syslog */

	/* Operations: paths of the same FastCGI application, off when NULL. */
	char *health_path;          /* e.g. /webhook/health */
	char *metrics_path;         /* e.g. /webhook/metrics */
	char *metrics_token;        /* Authorization: Bearer <token> */
	char *metrics_file;         /* the shared counter segment's file */
	char *status_path;          /* the pool's status (metrics_token) */
	char *ping_path;            /* liveness: 200 pong, no backend */
	char *status_page_path;     /* the operator's HTML page */
	char *status_page_token;    /* its token; NULL: metrics_token's */
	long request_slowlog_timeout_ms;   /* log longer requests; 0: off */
	long request_terminate_timeout_ms; /* SIGKILL stuck ones; 0: off */
};

/* Loads the configuration: defaults, then the file at path (NULL: no file),
 * then every PAYHOOK_<KEY> environment variable, then the cross-key checks
 * common to every program (MySQL's nodes, logging). A program then runs the
 * cross-key checks of the keys it reads, each in the module that owns them:
 * the receiver's programs load through pipeline_load_config (the
 * providers', the operator's, Redis's and the lease's keys),
 * payhook-dispatch calls handoff_check_config and its modules' own. The caller picks path: -c
 * FILE, else $PAYHOOK_CONFIG, else NULL (see config_default_path).
 *
 * Returns 0 with cfg filled, or -1 with err naming the file, line and key
 * (or the environment variable) that is wrong; cfg is then left empty, as
 * after config_cleanup. No value is ever quoted in err, and neither is an
 * unknown key name read from the file (it may be a pasted secret); the one
 * exception is an unknown word of providers that looks like a name
 * ("paypal"). A provider secret in a form that provider never hands out (an
 * API key where the webhook secret belongs) is refused, saying what was
 * expected. */
int config_load(struct config *cfg, const char *path, struct error *err);

/* Writes the index-th warning about a loaded configuration into out (cap
 * bytes): something allowed but probably not meant, such as a
 * <profile>_secret for a profile that providers does not enable, or
 * metrics_path without metrics_token. Returns 0 with out filled, or -1 when
 * there are not that many warnings (out untouched). Can't fail otherwise. */
int config_warning(const struct config *cfg, size_t index, char *out,
		   size_t cap);

/* Writes the key table to out, one key a line, five tab-separated fields:
 * name, kind (string, integer, boolean, choice, currency, secrets,
 * providers), default as file text (empty: none), what the value may be
 * (a range "min..max", the choices "a|b", a length), and "secret" for a key
 * whose value is never shown. tools/config-reference prints it; payhook.conf(5)
 * is made from it. Returns 0, or -1 when writing failed. */
int config_write_reference(FILE *out);

/* Frees what config_load allocated and zeroes cfg. Accepts a zeroed or
 * already cleaned struct. Can't fail. */
void config_cleanup(struct config *cfg);

/* The path payhook reads when no -c was given: $PAYHOOK_CONFIG when set and
 * not empty, else NULL. The string belongs to the environment. */
const char *config_default_path(void);

/* The configuration file every part of a program reads (its start, a
 * reload, an upgrade's --test-config, --send-alert): given (-c FILE), else
 * config_default_path(), else none. *out is a copy the caller frees, or NULL
 * for none: it outlives a process title written over argv and the
 * environment (pool_title_init). Returns 0, or -1 with err set (out of
 * memory). */
int config_resolve_path(const char *given, char **out, struct error *err);

/* The profile's name as in the providers key and the request path
 * ("standard", "stripe", ...). */
const char *config_provider_name(enum config_provider provider);

/* Whether the profile is enabled by the providers key. */
bool config_provider_enabled(const struct config *cfg,
			     enum config_provider provider);

/* Whether alerts go anywhere: alert_url or alert_command is set and not
 * empty. */
bool config_alerts_set(const struct config *cfg);

/* The signature tolerance of a profile: <profile>_tolerance_s when set,
 * else signature_tolerance_s. */
long config_tolerance_s(const struct config *cfg,
			enum config_provider provider);

/* The longest the guarded MySQL write can take with these timeouts, in
 * milliseconds: two round trips (INSERT, COMMIT), each bounded by
 * write_timeout + 3 x read_timeout (the client library documents up to three
 * read attempts per call). config_load refuses lock_ttl_ms that is not
 * larger than this plus CONFIG_LEASE_MARGIN_MS. Can't fail. */
long config_write_bound_ms(const struct config *cfg);

/* The time one MySQL round trip may take (write + 3 x read timeout), in ms. */
long config_round_trip_bound_ms(const struct config *cfg);

#define CONFIG_LEASE_MARGIN_MS 1000L
/* lock_key_prefix is at most this long, so that prefix, provider and a
 * 128-byte transaction id always fit in a lock key. */
#define CONFIG_LOCK_KEY_PREFIX_MAX 128
/* The longest HTTP header name the generic profile may be told to read. */
#define CONFIG_HEADER_NAME_MAX 64
/* The payload column is a MEDIUMBLOB: 16 MiB - 1 bytes at most. */
#define CONFIG_MAX_BODY_BYTES_MAX 16777215L

/* ---- test hooks: no program calls these; the tests do (hence the
 * _test_ in their names). ---- */

/* The length of the prefix of text[0..len) that config_load's secret-form
 * rules look at ("whsec_", "pdl_ntfset_", "sk_live_", ...), or 0 when text
 * starts with none: what decides a secret's form, as opposed to its content
 * (the fuzzer keeps it when it scrambles secrets). Can't fail. */
size_t config_test_secret_form_prefix(const char *text, size_t len);

#endif
