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
#include "signature.h"

/* How a key's text becomes a value, and where it goes. */
enum key_kind {
	KIND_STRING,   /* char *; empty means unset unless FLAG_NONEMPTY */
	KIND_INT,      /* int in [min, max] */
	KIND_LONG,     /* long in [min, max] */
	KIND_SIZE,     /* size_t in [min, max] */
	KIND_BOOL,     /* bool */
	KIND_STATUS,   /* int, 409 or 503 */
	KIND_CURRENCY, /* char *, 3 letters stored upper-case; empty means unset */
	KIND_REDIS_UNAVAILABLE,
	KIND_SCHEME,
	KIND_LOG_LEVEL,
	KIND_SECRET,   /* one more entry of webhook_secrets */
};

#define FLAG_SECRET 1u      /* wiped on free (values never reach messages) */
#define FLAG_NONEMPTY 2u    /* an empty value is an error, not "unset" */

struct key_def {
	const char *name;
	enum key_kind kind;
	size_t offset;          /* of the field in struct config */
	long min, max;          /* for the integer kinds */
	const char *fallback;   /* default, as file text; NULL: none */
	unsigned flags;
};

#define FIELD(f) offsetof(struct config, f)

/* The one list of keys: adding a key is one line here (and a field). The
 * defaults go through the same parser as the file, so they obey the rules. */
static const struct key_def keys[] = {
	{ "redis_host", KIND_STRING, FIELD(redis_host), 0, 0, "127.0.0.1", FLAG_NONEMPTY },
	{ "redis_port", KIND_INT, FIELD(redis_port), 1, 65535, "6379", 0 },
	{ "redis_socket", KIND_STRING, FIELD(redis_socket), 0, 0, NULL, 0 },
	{ "redis_password", KIND_STRING, FIELD(redis_password), 0, 0, NULL, FLAG_SECRET },
	{ "redis_db", KIND_INT, FIELD(redis_db), 0, 1000000, "0", 0 },
	{ "redis_timeout_ms", KIND_INT, FIELD(redis_timeout_ms), 1, 600000, "500", 0 },
	{ "mysql_host", KIND_STRING, FIELD(mysql_host), 0, 0, "127.0.0.1", FLAG_NONEMPTY },
	{ "mysql_port", KIND_INT, FIELD(mysql_port), 1, 65535, "3306", 0 },
	{ "mysql_socket", KIND_STRING, FIELD(mysql_socket), 0, 0, NULL, 0 },
	{ "mysql_user", KIND_STRING, FIELD(mysql_user), 0, 0, "payhook", FLAG_NONEMPTY },
	{ "mysql_password", KIND_STRING, FIELD(mysql_password), 0, 0, NULL, FLAG_SECRET },
	{ "mysql_database", KIND_STRING, FIELD(mysql_database), 0, 0, "payhook", FLAG_NONEMPTY },
	{ "mysql_connect_timeout_s", KIND_INT, FIELD(mysql_connect_timeout_s), 1, 3600, "2", 0 },
	{ "mysql_read_timeout_s", KIND_INT, FIELD(mysql_read_timeout_s), 1, 3600, "2", 0 },
	{ "mysql_write_timeout_s", KIND_INT, FIELD(mysql_write_timeout_s), 1, 3600, "2", 0 },
	{ "lock_ttl_ms", KIND_LONG, FIELD(lock_ttl_ms), 1, 86400000, "30000", 0 },
	{ "lock_key_prefix", KIND_STRING, FIELD(lock_key_prefix), 0, 0, "lock:webhook:tx:", FLAG_NONEMPTY },
	{ "redis_unavailable", KIND_REDIS_UNAVAILABLE, FIELD(redis_unavailable), 0, 0, "db_only", 0 },
	{ "max_body_bytes", KIND_SIZE, FIELD(max_body_bytes), 1, 64L * 1024 * 1024, "65536", 0 },
	{ "default_currency", KIND_CURRENCY, FIELD(default_currency), 0, 0, NULL, 0 },
	{ "trim_transaction_id", KIND_BOOL, FIELD(trim_transaction_id), 0, 0, "no", 0 },
	{ "signature_scheme", KIND_SCHEME, FIELD(signature_scheme), 0, 0, "standard", 0 },
	{ "webhook_secret", KIND_SECRET, FIELD(webhook_secrets), 0, 0, NULL, FLAG_SECRET },
	{ "signature_tolerance_s", KIND_LONG, FIELD(signature_tolerance_s), 1, 31536000, "300", 0 },
	{ "in_progress_status", KIND_STATUS, FIELD(in_progress_status), 0, 0, "409", 0 },
	{ "retry_after_s", KIND_INT, FIELD(retry_after_s), 0, 86400, "5", 0 },
	{ "log_level", KIND_LOG_LEVEL, FIELD(log_level), 0, 0, "info", 0 },
	{ "log_file", KIND_STRING, FIELD(log_file), 0, 0, NULL, 0 },
};

#define KEY_COUNT (sizeof(keys) / sizeof(keys[0]))

/* Room for "PAYHOOK_" and the longest key name. */
#define ENV_NAME_MAX 64

struct choice {
	const char *name;
	int value;
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
static const struct choice scheme_choices[] = {
	{ "standard", CONFIG_SIGNATURE_STANDARD },
	{ "none", CONFIG_SIGNATURE_NONE }, { NULL, 0 },
};

static void free_string(char **field, int secret)
{
	if (*field == NULL)
		return;
	if (secret)
		OPENSSL_cleanse(*field, strlen(*field));
	free(*field);
	*field = NULL;
}

static void free_secrets(struct config *cfg)
{
	for (size_t i = 0; i < cfg->webhook_secret_count; i++)
		free_string(&cfg->webhook_secrets[i], 1);
	free(cfg->webhook_secrets);
	cfg->webhook_secrets = NULL;
	cfg->webhook_secret_count = 0;
}

void config_cleanup(struct config *cfg)
{
	if (cfg == NULL)
		return;
	for (size_t i = 0; i < KEY_COUNT; i++) {
		if (keys[i].kind == KIND_STRING || keys[i].kind == KIND_CURRENCY)
			free_string((char **)((char *)cfg + keys[i].offset),
				    (keys[i].flags & FLAG_SECRET) != 0);
	}
	free_secrets(cfg);
	memset(cfg, 0, sizeof(*cfg));
}

const char *config_default_path(void)
{
	const char *path = getenv("PAYHOOK_CONFIG");

	return path != NULL && path[0] != '\0' ? path : NULL;
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

/* Strict decimal: digits only (no sign, no space, no junk), at most max.
 * Returns 0 with *out set, or -1. */
static int parse_decimal(const char *text, long min, long max, long *out)
{
	long value = 0;

	if (*text == '\0')
		return -1;
	for (const char *p = text; *p != '\0'; p++) {
		long digit = *p - '0';

		if (*p < '0' || *p > '9')
			return -1;
		/* Stop before value * 10 + digit can pass max (and overflow). */
		if (digit > max || value > (max - digit) / 10)
			return -1;
		value = value * 10 + digit;
	}
	if (value < min)
		return -1;
	*out = value;
	return 0;
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

static int bad_value(struct error *err, const char *where,
		     const struct key_def *def, const char *expected)
{
	return error_set(err, "%s: bad value for key '%s': expected %s", where,
			 def->name, expected);
}

static int add_secret(struct config *cfg, const struct key_def *def,
		      const char *text, const char *where, struct error *err)
{
	unsigned char key[SIGNATURE_KEY_MAX];
	size_t key_len = 0;
	struct error decode_err;
	char **grown;
	char *copy;
	int rc;

	/* Validate now, so the message names the line the secret is on. */
	error_clear(&decode_err);
	rc = signature_secret_decode(text, key, sizeof(key), &key_len,
				     &decode_err);
	OPENSSL_cleanse(key, sizeof(key));
	if (rc != 0)
		return error_set(err, "%s: bad value for key '%s': %s", where,
				 def->name, decode_err.message);
	if (cfg->webhook_secret_count >= SIZE_MAX / sizeof(char *) - 1)
		return error_set(err, "%s: too many webhook secrets", where);
	grown = realloc(cfg->webhook_secrets,
			(cfg->webhook_secret_count + 1) * sizeof(char *));
	if (grown == NULL)
		return error_set(err, "%s: out of memory", where);
	cfg->webhook_secrets = grown;
	copy = strdup(text);
	if (copy == NULL)
		return error_set(err, "%s: out of memory", where);
	cfg->webhook_secrets[cfg->webhook_secret_count++] = copy;
	return 0;
}

/* Parses text (already trimmed) for def and stores it in cfg. where is
 * "FILE:LINE", "environment PAYHOOK_X" or "default". Returns 0, or -1 with
 * err set (the value itself is never quoted). */
static int set_value(struct config *cfg, const struct key_def *def,
		     const char *text, const char *where, struct error *err)
{
	void *field = (char *)cfg + def->offset;
	char expected[96];
	long number;
	int choice;
	char *copy;

	for (const char *p = text; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return bad_value(err, where, def,
					 "no control characters");
	}

	switch (def->kind) {
	case KIND_STRING:
		if (text[0] == '\0' && (def->flags & FLAG_NONEMPTY) != 0)
			return bad_value(err, where, def, "a non-empty value");
		copy = NULL;
		if (text[0] != '\0') {
			copy = strdup(text);
			if (copy == NULL)
				return error_set(err, "%s: out of memory", where);
		}
		free_string((char **)field, (def->flags & FLAG_SECRET) != 0);
		*(char **)field = copy;
		return 0;
	case KIND_INT:
	case KIND_LONG:
	case KIND_SIZE:
		if (parse_decimal(text, def->min, def->max, &number) != 0) {
			snprintf(expected, sizeof(expected),
				 "a whole number from %ld to %ld", def->min,
				 def->max);
			return bad_value(err, where, def, expected);
		}
		if (def->kind == KIND_INT)
			*(int *)field = (int)number;
		else if (def->kind == KIND_LONG)
			*(long *)field = number;
		else
			*(size_t *)field = (size_t)number;
		return 0;
	case KIND_STATUS:
		if (parse_decimal(text, 0, 999, &number) != 0 ||
		    (number != 409 && number != 503))
			return bad_value(err, where, def, "409 or 503");
		cfg->in_progress_status = (int)number;
		return 0;
	case KIND_BOOL:
		if (parse_choice(bool_choices, text, &choice) != 0)
			return bad_value(err, where, def, "yes or no");
		cfg->trim_transaction_id = choice != 0;
		return 0;
	case KIND_REDIS_UNAVAILABLE:
		if (parse_choice(redis_unavailable_choices, text, &choice) != 0)
			return bad_value(err, where, def, "db_only or fail");
		cfg->redis_unavailable = (enum config_redis_unavailable)choice;
		return 0;
	case KIND_SCHEME:
		if (parse_choice(scheme_choices, text, &choice) != 0)
			return bad_value(err, where, def, "standard or none");
		cfg->signature_scheme = (enum config_signature_scheme)choice;
		return 0;
	case KIND_LOG_LEVEL:
		if (log_level_parse(text, &cfg->log_level) != 0)
			return bad_value(err, where, def,
					 "error, warn, info or debug");
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
		free_string(&cfg->default_currency, 0);
		cfg->default_currency = copy;
		return 0;
	case KIND_SECRET:
		/* An empty line adds nothing, like an unset optional string. */
		if (text[0] == '\0')
			return 0;
		return add_secret(cfg, def, text, where, err);
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
		return error_set(err, "%s: unknown key '%.64s'", where, name);
	if (def->kind != KIND_SECRET) {
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

/* PAYHOOK_WEBHOOK_SECRET: white-space separated secrets that replace every
 * webhook_secret line. Only white space counts as unset. */
static int load_env_secrets(struct config *cfg, const struct key_def *def,
			    const char *name, const char *value,
			    struct error *err)
{
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
		free_secrets(cfg);
	for (unsigned n = 1; token != NULL && rc == 0; n++) {
		snprintf(where, sizeof(where), "environment %s (secret %u)",
			 name, n);
		rc = add_secret(cfg, def, token, where, err);
		token = strtok_r(NULL, " \t\r\n\v\f", &save);
	}
	OPENSSL_cleanse(copy, strlen(value));
	free(copy);
	return rc;
}

/* Every PAYHOOK_<KEY> that is set and not empty overrides the file. */
static int load_env(struct config *cfg, struct error *err)
{
	char name[ENV_NAME_MAX];
	char where[ENV_NAME_MAX + 16];

	for (size_t i = 0; i < KEY_COUNT; i++) {
		const struct key_def *def = &keys[i];
		const char *value;
		char *copy;
		size_t n;
		int rc;

		n = (size_t)snprintf(name, sizeof(name), "PAYHOOK_%s",
				     def->name);
		if (n >= sizeof(name))
			return error_set(err, "key '%s' is too long", def->name);
		for (char *p = name; *p != '\0'; p++)
			*p = (char)toupper((unsigned char)*p);
		value = getenv(name);
		if (value == NULL || value[0] == '\0')
			continue;
		if (def->kind == KIND_SECRET) {
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

/* Checks that involve more than one key, after every source is applied. */
static int check_config(const struct config *cfg, struct error *err)
{
	long bound = config_write_bound_ms(cfg);

	if (cfg->signature_scheme == CONFIG_SIGNATURE_STANDARD &&
	    cfg->webhook_secret_count == 0)
		return error_set(err, "signature_scheme = standard needs at least "
				      "one webhook_secret (or set "
				      "signature_scheme = none)");
	if (cfg->lock_ttl_ms <= bound + CONFIG_LEASE_MARGIN_MS)
		return error_set(err,
				 "lock_ttl_ms = %ld is too short: with "
				 "mysql_read_timeout_s = %d and "
				 "mysql_write_timeout_s = %d the write may take "
				 "up to %ld ms; set lock_ttl_ms above %ld or "
				 "lower the timeouts",
				 cfg->lock_ttl_ms, cfg->mysql_read_timeout_s,
				 cfg->mysql_write_timeout_s, bound,
				 bound + CONFIG_LEASE_MARGIN_MS);
	return 0;
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
	if (check_config(cfg, err) != 0)
		goto fail;
	return 0;
fail:
	config_cleanup(cfg);
	return -1;
}
