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

#include "error.h"
#include "log.h"

enum config_redis_unavailable {
	CONFIG_REDIS_UNAVAILABLE_DB_ONLY, /* go on with the unique key alone */
	CONFIG_REDIS_UNAVAILABLE_FAIL,    /* answer 503 */
};

enum config_signature_scheme {
	CONFIG_SIGNATURE_STANDARD, /* Standard Webhooks, the default */
	CONFIG_SIGNATURE_NONE,     /* no signature check: must be chosen */
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

	char *mysql_host;           /* default "127.0.0.1" */
	int mysql_port;             /* default 3306 */
	char *mysql_socket;         /* unix socket path; wins over host/port */
	char *mysql_user;           /* default "payhook" */
	char *mysql_password;
	char *mysql_database;       /* default "payhook" */
	int mysql_connect_timeout_s; /* default 2 */
	int mysql_read_timeout_s;    /* default 2 */
	int mysql_write_timeout_s;   /* default 2 */

	long lock_ttl_ms;           /* default 30000 */
	char *lock_key_prefix;      /* default "lock:webhook:tx:" */
	enum config_redis_unavailable redis_unavailable; /* default db_only */

	size_t max_body_bytes;      /* default 65536 */
	char *default_currency;     /* NULL, or 3 upper-case letters */
	bool trim_transaction_id;   /* default no */

	enum config_signature_scheme signature_scheme; /* default standard */
	char **webhook_secrets;     /* webhook_secret_count "whsec_..." strings */
	size_t webhook_secret_count;
	long signature_tolerance_s; /* default 300 */

	int in_progress_status;     /* 409 (default) or 503 */
	int retry_after_s;          /* Retry-After value, default 5 */
	enum log_level log_level;   /* default info */
	char *log_file;             /* append log lines here instead of stderr
				     * (spawn-fcgi sends stderr to /dev/null) */
};

/* Loads the configuration: defaults, then the file at path (NULL: no file),
 * then every PAYHOOK_<KEY> environment variable, then the cross-key checks
 * (a secret for the standard scheme; the lease bound, see
 * config_write_bound_ms). The caller picks path: -c FILE, else
 * $PAYHOOK_CONFIG, else NULL (see config_default_path).
 *
 * Returns 0 with cfg filled, or -1 with err naming the file, line and key
 * (or the environment variable) that is wrong; cfg is then left empty, as
 * after config_cleanup. Values of secret keys never appear in err. */
int config_load(struct config *cfg, const char *path, struct error *err);

/* Frees what config_load allocated and zeroes cfg. Accepts a zeroed or
 * already cleaned struct. Can't fail. */
void config_cleanup(struct config *cfg);

/* The path payhook reads when no -c was given: $PAYHOOK_CONFIG when set and
 * not empty, else NULL. The string belongs to the environment. */
const char *config_default_path(void);

/* The longest the guarded MySQL write can take with these timeouts, in
 * milliseconds: two round trips (INSERT, COMMIT), each bounded by
 * write_timeout + 3 x read_timeout (the client library documents up to three
 * read attempts per call). config_load refuses lock_ttl_ms that is not
 * larger than this plus CONFIG_LEASE_MARGIN_MS. Can't fail. */
long config_write_bound_ms(const struct config *cfg);

/* The time one MySQL round trip may take (write + 3 x read timeout), in ms. */
long config_round_trip_bound_ms(const struct config *cfg);

#define CONFIG_LEASE_MARGIN_MS 1000L

#endif
