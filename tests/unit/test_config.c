/* test_config.c - unit tests of lib/shared/configuration.c: defaults, the file,
 * the PAYHOOK_* overrides, the start-up checks, and secrets kept out of
 * error messages. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "configuration.h"
#include "endpoint.h"
#include "pipeline.h"

extern char **environ;

/* Valid secrets: base64 of 24 random bytes each. */
#define SECRET_A "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SECRET_B "whsec_GcrLeNsg9AEN578env1TT2Tu2td3vA/h"
#define SECRET_C "whsec_5v8EiWO9KhIj0iG6kjqkU+m3taUOMjxc"
#define SECRET_D "whsec_l0JZ7GQi4rk37BMvD8/hhljePVTqawz+"

static char tmp_dir[64];
static char conf_path[128];

/* Removes every PAYHOOK_* variable so tests do not see each other's (or the
 * caller's) environment. */
static void clear_payhook_env(void)
{
	char name[128];
	int found = 1;

	/* unsetenv changes environ, so start over after each removal. */
	while (found) {
		found = 0;
		for (char **e = environ; *e != NULL; e++) {
			const char *eq = strchr(*e, '=');
			size_t len;

			if (strncmp(*e, "PAYHOOK_", 8) != 0 || eq == NULL)
				continue;
			len = (size_t)(eq - *e);
			ck_assert_uint_lt(len, sizeof(name));
			memcpy(name, *e, len);
			name[len] = '\0';
			unsetenv(name);
			found = 1;
			break;
		}
	}
}

static void setup(void)
{
	clear_payhook_env();
	strcpy(tmp_dir, "/tmp/test_config.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
	snprintf(conf_path, sizeof(conf_path), "%s/payhook.conf", tmp_dir);
}

static void teardown(void)
{
	unlink(conf_path);
	rmdir(tmp_dir);
	clear_payhook_env();
}

/* Writes text as the configuration file and returns its path. */
static const char *write_conf(const char *text)
{
	FILE *f = fopen(conf_path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	return conf_path;
}

/* Loads path and expects failure with a message containing want; the struct
 * must be left empty. */
static void expect_failure(const char *path, const char *want,
			   struct error *err)
{
	struct config cfg;
	struct config zero;

	memset(&zero, 0, sizeof(zero));
	memset(&cfg, 0xAB, sizeof(cfg));
	ck_assert_int_eq(pipeline_load_config(&cfg, path, err), -1);
	ck_assert_msg(strstr(err->message, want) != NULL,
		      "message '%s' lacks '%s'", err->message, want);
	ck_assert_int_eq(memcmp(&cfg, &zero, sizeof(cfg)), 0);
}

static void load_ok(struct config *cfg, const char *path)
{
	struct error err;

	error_clear(&err);
	ck_assert_msg(pipeline_load_config(cfg, path, &err) == 0, "load failed: %s",
		      err.message);
}

START_TEST(defaults_without_file)
{
	struct config cfg;

	setenv("PAYHOOK_SIGNATURE_SCHEME", "none", 1);
	load_ok(&cfg, NULL);
	ck_assert_str_eq(cfg.redis_host, "127.0.0.1");
	ck_assert_int_eq(cfg.redis_port, 6379);
	ck_assert_ptr_null(cfg.redis_socket);
	ck_assert_ptr_null(cfg.redis_password);
	ck_assert_int_eq(cfg.redis_db, 0);
	ck_assert_int_eq(cfg.redis_timeout_ms, 500);
	ck_assert_str_eq(cfg.mysql_host, "127.0.0.1");
	ck_assert_int_eq(cfg.mysql_port, 3306);
	ck_assert_ptr_null(cfg.mysql_socket);
	ck_assert_str_eq(cfg.mysql_user, "payhook");
	ck_assert_ptr_null(cfg.mysql_password);
	ck_assert_str_eq(cfg.mysql_database, "payhook");
	ck_assert_int_eq(cfg.mysql_connect_timeout_s, 2);
	ck_assert_int_eq(cfg.mysql_read_timeout_s, 2);
	ck_assert_int_eq(cfg.mysql_write_timeout_s, 2);
	ck_assert_int_eq(cfg.lock_ttl_ms, 30000);
	ck_assert_str_eq(cfg.lock_key_prefix, "lock:webhook:tx:");
	ck_assert_int_eq(cfg.redis_unavailable, CONFIG_REDIS_UNAVAILABLE_DB_ONLY);
	ck_assert_uint_eq(cfg.max_body_bytes, 65536);
	ck_assert_ptr_null(cfg.default_currency);
	ck_assert(!cfg.trim_transaction_id);
	ck_assert_int_eq(cfg.signature_scheme, CONFIG_SIGNATURE_NONE);
	ck_assert_uint_eq(cfg.secrets[CONFIG_PROVIDER_STANDARD].count, 0);
	ck_assert_int_eq(cfg.signature_tolerance_s, 300);
	ck_assert_int_eq(cfg.in_progress_status, 409);
	ck_assert_int_eq(cfg.retry_after_s, 5);
	ck_assert_int_eq(cfg.log_level, LOG_LEVEL_INFO);
	ck_assert_int_eq(config_round_trip_bound_ms(&cfg), 8000);
	ck_assert_int_eq(config_write_bound_ms(&cfg), 16000);
	config_cleanup(&cfg);
}
END_TEST

START_TEST(full_file_every_key)
{
	struct config cfg;

	load_ok(&cfg, write_conf(
		"redis_host = redis.internal\n"
		"redis_port = 6380\n"
		"redis_socket = /run/redis/redis.sock\n"
		"redis_password = r-pass\n"
		"redis_db = 3\n"
		"redis_timeout_ms = 250\n"
		"mysql_host = db.internal\n"
		"mysql_port = 3307\n"
		"mysql_socket = /run/mysqld/mysqld.sock\n"
		"mysql_user = hooks\n"
		"mysql_password = m-pass\n"
		"mysql_database = payments\n"
		"mysql_connect_timeout_s = 1\n"
		"mysql_read_timeout_s = 3\n"
		"mysql_write_timeout_s = 4\n"
		"lock_ttl_ms = 60000\n"
		"lock_key_prefix = lk:\n"
		"redis_unavailable = fail\n"
		"max_body_bytes = 1024\n"
		"default_currency = EUR\n"
		"trim_transaction_id = yes\n"
		"signature_scheme = standard\n"
		"webhook_secret = " SECRET_A "\n"
		"webhook_secret = " SECRET_B "\n"
		"signature_tolerance_s = 60\n"
		"in_progress_status = 503\n"
		"retry_after_s = 0\n"
		"log_level = debug\n"
		"log_file = /var/log/payhook/payhook.log\n"));
	ck_assert_str_eq(cfg.redis_host, "redis.internal");
	ck_assert_int_eq(cfg.redis_port, 6380);
	ck_assert_str_eq(cfg.redis_socket, "/run/redis/redis.sock");
	ck_assert_str_eq(cfg.redis_password, "r-pass");
	ck_assert_int_eq(cfg.redis_db, 3);
	ck_assert_int_eq(cfg.redis_timeout_ms, 250);
	ck_assert_str_eq(cfg.mysql_host, "db.internal");
	ck_assert_int_eq(cfg.mysql_port, 3307);
	ck_assert_str_eq(cfg.mysql_socket, "/run/mysqld/mysqld.sock");
	ck_assert_str_eq(cfg.mysql_user, "hooks");
	ck_assert_str_eq(cfg.mysql_password, "m-pass");
	ck_assert_str_eq(cfg.mysql_database, "payments");
	ck_assert_int_eq(cfg.mysql_connect_timeout_s, 1);
	ck_assert_int_eq(cfg.mysql_read_timeout_s, 3);
	ck_assert_int_eq(cfg.mysql_write_timeout_s, 4);
	ck_assert_int_eq(cfg.lock_ttl_ms, 60000);
	ck_assert_str_eq(cfg.lock_key_prefix, "lk:");
	ck_assert_int_eq(cfg.redis_unavailable, CONFIG_REDIS_UNAVAILABLE_FAIL);
	ck_assert_uint_eq(cfg.max_body_bytes, 1024);
	ck_assert_str_eq(cfg.default_currency, "EUR");
	ck_assert(cfg.trim_transaction_id);
	ck_assert_int_eq(cfg.signature_scheme, CONFIG_SIGNATURE_STANDARD);
	ck_assert_uint_eq(cfg.secrets[CONFIG_PROVIDER_STANDARD].count, 2);
	ck_assert_str_eq(cfg.secrets[CONFIG_PROVIDER_STANDARD].items[0], SECRET_A);
	ck_assert_str_eq(cfg.secrets[CONFIG_PROVIDER_STANDARD].items[1], SECRET_B);
	ck_assert_int_eq(cfg.signature_tolerance_s, 60);
	ck_assert_int_eq(cfg.in_progress_status, 503);
	ck_assert_int_eq(cfg.retry_after_s, 0);
	ck_assert_int_eq(cfg.log_level, LOG_LEVEL_DEBUG);
	ck_assert_str_eq(cfg.log_file, "/var/log/payhook/payhook.log");
	/* 1000 * (4 + 3 * 3) per round trip, two of them. */
	ck_assert_int_eq(config_round_trip_bound_ms(&cfg), 13000);
	ck_assert_int_eq(config_write_bound_ms(&cfg), 26000);
	config_cleanup(&cfg);
}
END_TEST

START_TEST(comments_blank_lines_and_spacing)
{
	struct config cfg;

	load_ok(&cfg, write_conf(
		"# payhook configuration\n"
		"\n"
		"   \t\n"
		"   # an indented comment = with an equals sign\n"
		"signature_scheme=none\n"
		"redis_host\t=\t  cache.example  \t\n"
		"mysql_user =hooks\r\n"
		"lock_key_prefix = a#b = c\n"
		"redis_socket =\n"
		"# redis_port = 1\n"));
	ck_assert_int_eq(cfg.signature_scheme, CONFIG_SIGNATURE_NONE);
	ck_assert_str_eq(cfg.redis_host, "cache.example");
	ck_assert_str_eq(cfg.mysql_user, "hooks");
	/* Only whole lines are comments; the first '=' splits key and value. */
	ck_assert_str_eq(cfg.lock_key_prefix, "a#b = c");
	ck_assert_ptr_null(cfg.redis_socket);
	ck_assert_int_eq(cfg.redis_port, 6379);
	config_cleanup(&cfg);
}
END_TEST

START_TEST(unknown_key_names_file_line_and_key)
{
	struct error err;
	char want[256];

	write_conf("signature_scheme = none\n# comment\nredis_prot = 1\n");
	snprintf(want, sizeof(want), "%s:3: unknown key (not shown, it may be "
		 "a secret); did you mean 'redis_port'?", conf_path);
	expect_failure(conf_path, want, &err);
	write_conf("signature_scheme = none\nsome_other_thing = 1\n");
	snprintf(want, sizeof(want), "%s:2: unknown key (not shown, it may be "
		 "a secret); conf/payhook.conf.example lists them all", conf_path);
	expect_failure(conf_path, want, &err);
	ck_assert_ptr_null(strstr(err.message, "some_other"));
}
END_TEST

/* A secret pasted without its key ("whsec_...=" from a base64 pad) reads as
 * an unknown key: the message must not quote any of it. */
START_TEST(unknown_key_never_quoted)
{
	struct error err;

	write_conf("signature_scheme = none\n"
		   "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwAAAAAA==\n");
	expect_failure(conf_path, ":2: unknown key", &err);
	ck_assert_ptr_null(strstr(err.message, "whsec"));
	ck_assert_ptr_null(strstr(err.message, "MfKQ9r8"));
	write_conf("signature_scheme = none\nsk_live_51Habc = 1\n");
	expect_failure(conf_path, ":2: unknown key", &err);
	ck_assert_ptr_null(strstr(err.message, "sk_live"));
}
END_TEST

/* Quotes around a value and a comment after it are mistakes that a lax
 * reader would keep as part of the value. */
START_TEST(quotes_and_inline_comments_refused)
{
	struct error err;

	write_conf("signature_scheme = none\nmysql_user = \"hooks\"\n");
	expect_failure(conf_path, ":2: value of key 'mysql_user' is wrapped in "
		       "quotes", &err);
	write_conf("signature_scheme = none\nmysql_user = 'hooks'\n");
	expect_failure(conf_path, "wrapped in quotes", &err);
	write_conf("signature_scheme = none\nredis_port = 6380 # replica\n");
	expect_failure(conf_path, ":2: value of key 'redis_port' has a '#' "
		       "after white space: comments go on their own line", &err);
	ck_assert_ptr_null(strstr(err.message, "replica"));
	setenv("PAYHOOK_MYSQL_USER", "\"hooks\"", 1);
	expect_failure(NULL, "environment PAYHOOK_MYSQL_USER: value of key "
		       "'mysql_user' is wrapped in quotes", &err);
	unsetenv("PAYHOOK_MYSQL_USER");
	/* A '#' inside a value (no white space before it) is the value's. */
	struct config cfg;

	write_conf("signature_scheme = none\nmysql_password = a#b\n");
	load_ok(&cfg, conf_path);
	ck_assert_str_eq(cfg.mysql_password, "a#b");
	config_cleanup(&cfg);
}
END_TEST

/* A PAYHOOK_ variable that names no key is a typo, not to be ignored. */
START_TEST(unknown_env_variable_refused)
{
	struct error err;
	struct config cfg;

	setenv("PAYHOOK_SIGNATURE_SCHEME", "none", 1);
	setenv("PAYHOOK_MYSQL_PASWORD", "x", 1);
	expect_failure(NULL, "environment PAYHOOK_MYSQL_PASWORD names no "
		       "configuration key", &err);
	unsetenv("PAYHOOK_MYSQL_PASWORD");
	/* PAYHOOK_CONFIG names the file, not a key. */
	setenv("PAYHOOK_CONFIG", "/nonexistent", 1);
	load_ok(&cfg, NULL);
	config_cleanup(&cfg);
}
END_TEST

/* Bounds that a backend would otherwise enforce too late: every lock of a
 * long prefix fails, a body larger than a MEDIUMBLOB gets 503 forever. */
START_TEST(bounds_of_prefix_and_body)
{
	struct error err;
	struct config cfg;
	char text[512];

	snprintf(text, sizeof(text), "signature_scheme = none\n"
		 "lock_key_prefix = %0129d\n", 0);
	write_conf(text);
	expect_failure(conf_path, "bad value for key 'lock_key_prefix': "
		       "expected at most 128 bytes", &err);
	snprintf(text, sizeof(text), "signature_scheme = none\n"
		 "lock_key_prefix = %0128d\nmax_body_bytes = 16777215\n", 0);
	write_conf(text);
	load_ok(&cfg, conf_path);
	ck_assert_uint_eq(strlen(cfg.lock_key_prefix), 128);
	ck_assert_uint_eq(cfg.max_body_bytes, 16777215);
	config_cleanup(&cfg);
	write_conf("signature_scheme = none\nmax_body_bytes = 16777216\n");
	expect_failure(conf_path, "bad value for key 'max_body_bytes': expected "
		       "a whole number from 1 to 16777215", &err);
}
END_TEST

/* A Standard Webhooks secret needs its whsec_ prefix: a raw key pasted
 * without it would silently be decoded into another key. */
START_TEST(whsec_prefix_required)
{
	struct error err;

	write_conf("webhook_secret = MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n");
	expect_failure(conf_path, ":1: bad value for key 'webhook_secret': "
		       "secret is not valid: expected whsec_ followed by base64",
		       &err);
	ck_assert_ptr_null(strstr(err.message, "MfKQ9r8"));
	write_conf("webhook_secret = 00112233445566778899aabbccddeeff\n");
	expect_failure(conf_path, "expected whsec_ followed by base64", &err);
}
END_TEST

START_TEST(providers_and_their_secrets)
{
	struct error err;
	struct config cfg;

	write_conf("signature_scheme = none\nproviders = standard stripe\n");
	expect_failure(conf_path, "providers has stripe: set stripe_secret",
		       &err);
	write_conf("providers = stripe paddle\n"
		   "stripe_secret = whsec_test_abc\n"
		   "paddle_secret = pdl_ntfset_01abc_def\n"
		   "stripe_tolerance_s = 60\n");
	load_ok(&cfg, conf_path);
	ck_assert(!config_provider_enabled(&cfg, CONFIG_PROVIDER_STANDARD));
	ck_assert(config_provider_enabled(&cfg, CONFIG_PROVIDER_STRIPE));
	ck_assert(config_provider_enabled(&cfg, CONFIG_PROVIDER_PADDLE));
	ck_assert_int_eq(config_tolerance_s(&cfg, CONFIG_PROVIDER_STRIPE), 60);
	ck_assert_int_eq(config_tolerance_s(&cfg, CONFIG_PROVIDER_PADDLE), 300);
	ck_assert_str_eq(cfg.secrets[CONFIG_PROVIDER_STRIPE].items[0],
			 "whsec_test_abc");
	config_cleanup(&cfg);
	/* Rotation through the environment, as for webhook_secret. */
	setenv("PAYHOOK_PADDLE_SECRET", "pdl_ntfset_a pdl_ntfset_b", 1);
	load_ok(&cfg, conf_path);
	ck_assert_uint_eq(cfg.secrets[CONFIG_PROVIDER_PADDLE].count, 2);
	ck_assert_str_eq(cfg.secrets[CONFIG_PROVIDER_PADDLE].items[1],
			 "pdl_ntfset_b");
	config_cleanup(&cfg);
	unsetenv("PAYHOOK_PADDLE_SECRET");

	write_conf("providers = stripe bogus\nstripe_secret = x\n");
	expect_failure(conf_path, "bad value for key 'providers'", &err);
	write_conf("providers =\n");
	expect_failure(conf_path, "bad value for key 'providers'", &err);
	/* Adyen's key is hex. */
	write_conf("providers = adyen\nadyen_secret = not-hex-at-all\n");
	expect_failure(conf_path, "bad value for key 'adyen_secret': secret is "
		       "not valid: expected hex digits", &err);
	ck_assert_ptr_null(strstr(err.message, "not-hex"));
	write_conf("providers = square\nsquare_secret = sq\n");
	expect_failure(conf_path, "set square_notification_url", &err);
	write_conf("providers = generic\ngeneric_secret = g\n");
	expect_failure(conf_path, "set generic_signature_header", &err);
	/* Found by fuzz_config: a name longer than the profile takes, or
	 * one no request can carry, passed config_load. */
	write_conf("providers = generic\ngeneric_secret = g\n"
		   "generic_signature_header = X-Sig X-Other\n"
		   "generic_transaction_id_path = id\n"
		   "generic_amount_path = amount\n"
		   "generic_currency_path = currency\n");
	expect_failure(conf_path, "must be header names", &err);
	write_conf("providers = generic\ngeneric_secret = g\n"
		   "generic_signature_header = "
		   "X-0123456789012345678901234567890123456789012345678901234567890123456789\n");
	expect_failure(conf_path, "expected at most 64 bytes", &err);
	write_conf("providers = generic\ngeneric_secret = g\n"
		   "generic_signature_header = X-Sig\n"
		   "generic_transaction_id_path = id\n"
		   "generic_amount_path = amount\n"
		   "generic_currency_path = currency\n"
		   "generic_signed_payload = {timestamp}.{body}\n");
	expect_failure(conf_path, "set generic_timestamp_header", &err);
	/* A template the verifier cannot follow to its end, and a freshness
	 * check on a header nobody signed, are refused. */
	write_conf("providers = generic\ngeneric_secret = g\n"
		   "generic_signature_header = X-Sig\n"
		   "generic_timestamp_header = X-Ts\n"
		   "generic_transaction_id_path = id\n"
		   "generic_amount_path = amount\n"
		   "generic_currency_path = currency\n"
		   "generic_signed_payload = {timestamp}{timestamp}{timestamp}"
		   "{timestamp}{timestamp}{timestamp}{timestamp}{timestamp}"
		   "{timestamp}{timestamp}{timestamp}{timestamp}{timestamp}"
		   "{timestamp}{timestamp}{timestamp}{body}\n");
	expect_failure(conf_path, "generic_signed_payload: more than 16 parts",
		       &err);
	write_conf("providers = generic\ngeneric_secret = g\n"
		   "generic_signature_header = X-Sig\n"
		   "generic_timestamp_header = X-Ts\n"
		   "generic_transaction_id_path = id\n"
		   "generic_amount_path = amount\n"
		   "generic_currency_path = currency\n");
	expect_failure(conf_path, "generic_timestamp_header is set but "
		       "generic_signed_payload has no {timestamp}", &err);
	write_conf("providers = generic\ngeneric_secret = g\n"
		   "generic_signature_header = X-Sig\n"
		   "generic_transaction_id_path = id\n"
		   "generic_amount_path = amount\n"
		   "generic_currency_path = currency\n"
		   "generic_signed_payload = {body}.{body}\n");
	expect_failure(conf_path, "must hold {body} exactly once", &err);
	write_conf("providers = generic\ngeneric_secret = g\n"
		   "generic_signature_header = X-Sig\n"
		   "generic_transaction_id_path = id\n"
		   "generic_amount_path = amount\n"
		   "generic_currency_path = currency\n"
		   "generic_signed_payload = {v}{v}{v}{v}{v}{v}{v}{v}{body}\n");
	load_ok(&cfg, conf_path);
	config_cleanup(&cfg);
	write_conf("providers = generic\ngeneric_secret = zz\n"
		   "generic_secret_encoding = hex\n"
		   "generic_signature_header = X-Sig\n"
		   "generic_transaction_id_path = id\n"
		   "generic_amount_path = amount\n"
		   "generic_currency_path = currency\n");
	expect_failure(conf_path, "generic_secret 1: secret is not valid: "
		       "expected hex digits", &err);
}
END_TEST

START_TEST(line_without_equals)
{
	struct error err;
	char want[256];

	write_conf("signature_scheme = none\nredis_port 6379\n");
	snprintf(want, sizeof(want), "%s:2:", conf_path);
	expect_failure(conf_path, want, &err);
	ck_assert_ptr_nonnull(strstr(err.message, "key = value"));

	write_conf("= 6379\n");
	snprintf(want, sizeof(want), "%s:1: missing key", conf_path);
	expect_failure(conf_path, want, &err);
}
END_TEST

START_TEST(bad_integers_rejected)
{
	static const char *const bad[] = {
		"0", "65536", "-1", "+80", "12x", "0x50", "8 0", "1.5",
		"99999999999999999999999999", "", "abc",
	};
	struct error err;
	char text[128];
	char want[256];

	snprintf(want, sizeof(want),
		 "%s:2: bad value for key 'redis_port': expected a whole "
		 "number from 1 to 65535", conf_path);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "signature_scheme = none\nredis_port = %s\n", bad[i]);
		write_conf(text);
		expect_failure(conf_path, want, &err);
	}
	/* The edges themselves are accepted. */
	struct config cfg;

	write_conf("signature_scheme = none\nredis_port = 65535\n"
		   "mysql_port = 1\nretry_after_s = 0\n");
	load_ok(&cfg, conf_path);
	ck_assert_int_eq(cfg.redis_port, 65535);
	ck_assert_int_eq(cfg.mysql_port, 1);
	ck_assert_int_eq(cfg.retry_after_s, 0);
	config_cleanup(&cfg);

	write_conf("signature_scheme = none\nmax_body_bytes = 0\n");
	expect_failure(conf_path, "bad value for key 'max_body_bytes'", &err);
	write_conf("signature_scheme = none\nredis_timeout_ms = 0\n");
	expect_failure(conf_path, "bad value for key 'redis_timeout_ms'", &err);
}
END_TEST

START_TEST(in_progress_status_only_409_or_503)
{
	struct config cfg;
	struct error err;

	write_conf("signature_scheme = none\nin_progress_status = 404\n");
	expect_failure(conf_path,
		       "bad value for key 'in_progress_status': expected 409 "
		       "or 503", &err);
	write_conf("signature_scheme = none\nin_progress_status = 503\n");
	load_ok(&cfg, conf_path);
	ck_assert_int_eq(cfg.in_progress_status, 503);
	config_cleanup(&cfg);
}
END_TEST

START_TEST(default_currency_rules)
{
	static const char *const bad[] = { "US", "USDX", "U$D", "U D", "€UR" };
	struct config cfg;
	struct error err;
	char text[128];

	write_conf("signature_scheme = none\ndefault_currency = usd\n");
	load_ok(&cfg, conf_path);
	ck_assert_str_eq(cfg.default_currency, "USD");
	config_cleanup(&cfg);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "signature_scheme = none\ndefault_currency = %s\n",
			 bad[i]);
		write_conf(text);
		expect_failure(conf_path,
			       ":2: bad value for key 'default_currency'",
			       &err);
	}
}
END_TEST

START_TEST(booleans_and_choices)
{
	struct config cfg;
	struct error err;

	write_conf("signature_scheme = NONE\ntrim_transaction_id = On\n"
		   "redis_unavailable = fail\nlog_level = Warn\n");
	load_ok(&cfg, conf_path);
	ck_assert(cfg.trim_transaction_id);
	ck_assert_int_eq(cfg.redis_unavailable, CONFIG_REDIS_UNAVAILABLE_FAIL);
	ck_assert_int_eq(cfg.log_level, LOG_LEVEL_WARN);
	config_cleanup(&cfg);

	write_conf("signature_scheme = none\ntrim_transaction_id = maybe\n");
	expect_failure(conf_path, "'trim_transaction_id': expected yes or no",
		       &err);
	write_conf("signature_scheme = none\nredis_unavailable = ignore\n");
	expect_failure(conf_path, "'redis_unavailable': expected db_only or fail",
		       &err);
	write_conf("signature_scheme = hmac\n");
	expect_failure(conf_path, "'signature_scheme': expected standard or none",
		       &err);
	write_conf("signature_scheme = none\nlog_level = verbose\n");
	expect_failure(conf_path, "'log_level': expected", &err);
}
END_TEST

/* Node lists: host, host:port, [IPv6]:port; every malformed item refused
 * with what is wrong; combinations that cannot work refused. */
START_TEST(node_lists)
{
	struct config cfg;
	struct error err;
	struct endpoint list[ENDPOINT_LIST_MAX];
	size_t n = 0;

	write_conf("signature_scheme = none\nmysql_port = 3310\n"
		   "mysql_nodes = db1 db2:3307  [::1]:3308\n"
		   "redis_sentinels = s1 s2:26380\nredis_master_name = pay\n");
	load_ok(&cfg, conf_path);
	ck_assert_int_eq(endpoint_list_parse(cfg.mysql_nodes, cfg.mysql_port,
					     list, &n, &err), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(list[0].host, "db1");
	ck_assert_int_eq(list[0].port, 3310);
	ck_assert_str_eq(list[1].host, "db2");
	ck_assert_int_eq(list[1].port, 3307);
	ck_assert_str_eq(list[2].host, "::1");
	ck_assert_int_eq(list[2].port, 3308);
	ck_assert_str_eq(cfg.redis_master_name, "pay");
	config_cleanup(&cfg);

	write_conf("signature_scheme = none\nmysql_nodes = db1:0\n");
	expect_failure(conf_path, "mysql_nodes: a port is not a number", &err);
	write_conf("signature_scheme = none\nmysql_nodes = db1:x\n");
	expect_failure(conf_path, "mysql_nodes: a port is not a number", &err);
	write_conf("signature_scheme = none\nredis_sentinels = :26379\n");
	expect_failure(conf_path, "redis_sentinels: a host is empty", &err);
	write_conf("signature_scheme = none\nmysql_nodes = [::1\n");
	expect_failure(conf_path, "mysql_nodes: an IPv6 address lacks", &err);
	write_conf("signature_scheme = none\nmysql_nodes = a b c d e f g h i j "
		   "k l m n o p q\n");
	expect_failure(conf_path, "mysql_nodes: more than 16 servers", &err);
	write_conf("signature_scheme = none\nmysql_nodes = db1\n"
		   "mysql_socket = /run/mysqld/mysqld.sock\n");
	expect_failure(conf_path, "mysql_nodes and mysql_socket", &err);
	write_conf("signature_scheme = none\nredis_sentinels = s1\n"
		   "redis_socket = /run/redis.sock\n");
	expect_failure(conf_path, "redis_sentinels and redis_socket", &err);
	write_conf("signature_scheme = none\nlock_backend = none\n"
		   "redis_unavailable = fail\n");
	expect_failure(conf_path, "lock_backend = none and redis_unavailable",
		       &err);
	write_conf("signature_scheme = none\nlock_backend = memcached\n");
	expect_failure(conf_path, "'lock_backend': expected redis or none",
		       &err);
}
END_TEST

/* payhook-dispatch's configuration: MySQL and dispatch_ keys only. The
 * receiver's cross-key checks (a webhook_secret, the lock's lease against
 * the MySQL timeouts) are not its business; MySQL's and logging's are. */
START_TEST(dispatcher_checks_only_its_keys)
{
	static const char dispatcher_only[] =
		"mysql_nodes = db1 db2:3307\nmysql_user = payhook\n"
		"mysql_read_timeout_s = 30\n"
		"dispatch_url = https://shop.example/hook\n"
		"log_level = info\n";
	struct config cfg;
	struct error err;

	write_conf(dispatcher_only);
	expect_failure(conf_path, "needs at least one webhook_secret", &err);
	error_clear(&err);
	ck_assert_msg(config_load(&cfg, conf_path, &err) == 0,
		      "dispatcher-only configuration refused: %s", err.message);
	ck_assert_str_eq(cfg.mysql_nodes, "db1 db2:3307");
	ck_assert_str_eq(cfg.dispatch_url, "https://shop.example/hook");
	config_cleanup(&cfg);

	/* What it reads is still checked. */
	write_conf("mysql_nodes = db1\nmysql_socket = /run/mysqld/mysqld.sock\n");
	ck_assert_int_eq(config_load(&cfg, conf_path, &err), -1);
	ck_assert_msg(strstr(err.message, "mysql_nodes and mysql_socket") != NULL,
		      "message '%s'", err.message);
	write_conf("mysql_nodes = db1:x\n");
	ck_assert_int_eq(config_load(&cfg, conf_path, &err), -1);
	ck_assert_msg(strstr(err.message, "mysql_nodes: a port") != NULL,
		      "message '%s'", err.message);
	write_conf("log_target = syslog\nlog_file = /tmp/x.log\n");
	ck_assert_int_eq(config_load(&cfg, conf_path, &err), -1);
	ck_assert_msg(strstr(err.message, "log_target = syslog and log_file") !=
		      NULL, "message '%s'", err.message);
	write_conf("webhook_secret_typo = 1\n");
	ck_assert_int_eq(config_load(&cfg, conf_path, &err), -1);
	ck_assert_msg(strstr(err.message, "unknown key") != NULL,
		      "message '%s'", err.message);
}
END_TEST

START_TEST(empty_values)
{
	struct config cfg;
	struct error err;

	/* An empty optional string is unset; a string with a default must not
	 * be emptied. */
	write_conf("signature_scheme = none\nmysql_password =\n"
		   "default_currency = \n");
	load_ok(&cfg, conf_path);
	ck_assert_ptr_null(cfg.mysql_password);
	ck_assert_ptr_null(cfg.default_currency);
	config_cleanup(&cfg);

	write_conf("signature_scheme = none\nredis_host =\n");
	expect_failure(conf_path, ":2: bad value for key 'redis_host'", &err);
}
END_TEST

START_TEST(duplicate_key_refused)
{
	struct error err;
	char want[256];

	write_conf("signature_scheme = none\nredis_port = 1\n\nredis_port = 2\n");
	snprintf(want, sizeof(want),
		 "%s:4: key 'redis_port' is already set on line 2", conf_path);
	expect_failure(conf_path, want, &err);
}
END_TEST

START_TEST(env_overrides_file)
{
	struct config cfg;
	struct error err;

	write_conf("signature_scheme = none\nredis_port = 1111\n"
		   "mysql_host = file-host\n");
	setenv("PAYHOOK_REDIS_PORT", "2222", 1);
	setenv("PAYHOOK_MYSQL_HOST", "env-host", 1);
	setenv("PAYHOOK_DEFAULT_CURRENCY", "gbp", 1);
	load_ok(&cfg, conf_path);
	ck_assert_int_eq(cfg.redis_port, 2222);
	ck_assert_str_eq(cfg.mysql_host, "env-host");
	ck_assert_str_eq(cfg.default_currency, "GBP");
	config_cleanup(&cfg);

	setenv("PAYHOOK_REDIS_PORT", "70000", 1);
	expect_failure(conf_path,
		       "environment PAYHOOK_REDIS_PORT: bad value for key "
		       "'redis_port'", &err);
}
END_TEST

START_TEST(empty_env_ignored)
{
	struct config cfg;

	write_conf("signature_scheme = none\nredis_port = 1111\n"
		   "redis_host = file-host\n");
	setenv("PAYHOOK_REDIS_PORT", "", 1);
	setenv("PAYHOOK_REDIS_HOST", "", 1);
	setenv("PAYHOOK_SIGNATURE_SCHEME", "  ", 1);
	load_ok(&cfg, conf_path);
	ck_assert_int_eq(cfg.redis_port, 1111);
	ck_assert_str_eq(cfg.redis_host, "file-host");
	ck_assert_int_eq(cfg.signature_scheme, CONFIG_SIGNATURE_NONE);
	config_cleanup(&cfg);
}
END_TEST

START_TEST(env_secrets_replace_file_lines)
{
	struct config cfg;

	write_conf("webhook_secret = " SECRET_A "\n"
		   "webhook_secret = " SECRET_B "\n"
		   "webhook_secret = " SECRET_C "\n");
	setenv("PAYHOOK_WEBHOOK_SECRET", " " SECRET_D " \t" SECRET_A "\n", 1);
	load_ok(&cfg, conf_path);
	ck_assert_uint_eq(cfg.secrets[CONFIG_PROVIDER_STANDARD].count, 2);
	ck_assert_str_eq(cfg.secrets[CONFIG_PROVIDER_STANDARD].items[0], SECRET_D);
	ck_assert_str_eq(cfg.secrets[CONFIG_PROVIDER_STANDARD].items[1], SECRET_A);
	config_cleanup(&cfg);

	/* Set but empty counts as unset: the file lines stay. */
	setenv("PAYHOOK_WEBHOOK_SECRET", "", 1);
	load_ok(&cfg, conf_path);
	ck_assert_uint_eq(cfg.secrets[CONFIG_PROVIDER_STANDARD].count, 3);
	ck_assert_str_eq(cfg.secrets[CONFIG_PROVIDER_STANDARD].items[2], SECRET_C);
	config_cleanup(&cfg);
}
END_TEST

START_TEST(standard_without_secret_refused)
{
	struct error err;

	expect_failure(NULL,
		       "signature_scheme = standard needs at least one "
		       "webhook_secret", &err);
	write_conf("signature_scheme = standard\n");
	expect_failure(conf_path, "needs at least one webhook_secret", &err);
}
END_TEST

START_TEST(bad_secret_refused_without_quoting_it)
{
	struct error err;
	char want[256];

	write_conf("webhook_secret = " SECRET_A "\n"
		   "webhook_secret = whsec_Not!Base64*SecretText\n");
	snprintf(want, sizeof(want), "%s:2: bad value for key 'webhook_secret'",
		 conf_path);
	expect_failure(conf_path, want, &err);
	ck_assert_ptr_null(strstr(err.message, "Not!Base64"));
	ck_assert_ptr_null(strstr(err.message, "SecretText"));

	setenv("PAYHOOK_WEBHOOK_SECRET", SECRET_A " whsec_Env!Secret*Value", 1);
	expect_failure(NULL, "environment PAYHOOK_WEBHOOK_SECRET", &err);
	ck_assert_ptr_null(strstr(err.message, "Env!Secret"));
	ck_assert_ptr_null(strstr(err.message, "MfKQ9r8"));
}
END_TEST

START_TEST(lease_bound)
{
	struct config cfg;
	struct error err;

	/* Defaults: 2 x 1000 x (2 + 3 x 2) = 16000, plus the 1000 margin. */
	write_conf("signature_scheme = none\nlock_ttl_ms = 17000\n");
	expect_failure(conf_path,
		       "lock_ttl_ms = 17000 is too short: with "
		       "mysql_read_timeout_s = 2 and mysql_write_timeout_s = 2 "
		       "the write may take up to 16000 ms; set lock_ttl_ms "
		       "above 17000", &err);
	write_conf("signature_scheme = none\nlock_ttl_ms = 17001\n");
	load_ok(&cfg, conf_path);
	ck_assert_int_eq(cfg.lock_ttl_ms, 17001);
	config_cleanup(&cfg);

	/* Longer timeouts push the default 30000 under the bound:
	 * 2 x 1000 x (3 + 3 x 5) = 36000. */
	write_conf("signature_scheme = none\nmysql_read_timeout_s = 5\n"
		   "mysql_write_timeout_s = 3\n");
	expect_failure(conf_path, "lock_ttl_ms = 30000 is too short", &err);
	ck_assert_ptr_nonnull(strstr(err.message, "up to 36000 ms"));
	ck_assert_ptr_nonnull(strstr(err.message, "above 37000"));
	setenv("PAYHOOK_LOCK_TTL_MS", "37001", 1);
	load_ok(&cfg, conf_path);
	ck_assert_int_eq(cfg.lock_ttl_ms, 37001);
	config_cleanup(&cfg);
}
END_TEST

/* The operator's keys: a terminate timeout no shorter than the lease, a
 * page never without a token. */
START_TEST(operator_keys)
{
	struct config cfg;
	struct error err;
	char line[512];

	write_conf("signature_scheme = none\nlock_ttl_ms = 20000\n"
		   "request_terminate_timeout_ms = 19999\n");
	expect_failure(conf_path, "request_terminate_timeout_ms = 19999 is "
		       "shorter than lock_ttl_ms = 20000", &err);
	write_conf("signature_scheme = none\nlock_ttl_ms = 20000\n"
		   "request_terminate_timeout_ms = 20000\n"
		   "request_slowlog_timeout_ms = 1000\nping_path = /ping\n"
		   "status_path = /status\n");
	load_ok(&cfg, conf_path);
	ck_assert_int_eq(cfg.request_terminate_timeout_ms, 20000);
	ck_assert_int_eq(cfg.request_slowlog_timeout_ms, 1000);
	ck_assert_str_eq(cfg.ping_path, "/ping");
	config_cleanup(&cfg);

	write_conf("signature_scheme = none\nstatus_page_path = /page\n");
	expect_failure(conf_path, "status_page_path needs a token", &err);
	write_conf("signature_scheme = none\nstatus_page_token = t\n");
	expect_failure(conf_path, "status_page_token is set but "
		       "status_page_path is not", &err);
	write_conf("signature_scheme = none\nping_path = ping\n");
	expect_failure(conf_path, "are request paths", &err);
	write_conf("signature_scheme = none\nstatus_page_path = /page\n"
		   "status_page_token = t\n");
	load_ok(&cfg, conf_path);
	ck_assert_str_eq(cfg.status_page_path, "/page");
	config_cleanup(&cfg);

	/* status_path shows transaction ids: without a token, a warning. */
	write_conf("signature_scheme = none\nstatus_path = /status\n");
	load_ok(&cfg, conf_path);
	ck_assert_int_eq(config_warning(&cfg, 0, line, sizeof(line)), 0);
	ck_assert_ptr_nonnull(strstr(line, "status_path is served without a "
				     "token"));
	ck_assert_int_eq(config_warning(&cfg, 1, line, sizeof(line)), -1);
	config_cleanup(&cfg);
}
END_TEST

START_TEST(missing_file)
{
	struct error err;
	char want[256];
	char path[160];

	setenv("PAYHOOK_SIGNATURE_SCHEME", "none", 1);
	snprintf(path, sizeof(path), "%s/does-not-exist.conf", tmp_dir);
	snprintf(want, sizeof(want), "%s: %s", path, strerror(ENOENT));
	expect_failure(path, want, &err);
	/* A directory is not a file either. */
	expect_failure(tmp_dir, tmp_dir, &err);
}
END_TEST

START_TEST(passwords_never_in_errors)
{
	static const char *const tails[] = {
		"redis_port = nope\n",        /* a bad value after it */
		"redis_password = Other\n",   /* the key twice */
		"no equals sign here\n",      /* a malformed line */
		"unknown_key = x\n",          /* an unknown key */
	};
	struct error err;
	char text[256];

	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		snprintf(text, sizeof(text),
			 "signature_scheme = none\n"
			 "redis_password = Sup3rS3cretPw\n"
			 "mysql_password = MyS3cretPw\n%s", tails[i]);
		write_conf(text);
		expect_failure(conf_path, ":4:", &err);
		ck_assert_ptr_null(strstr(err.message, "Sup3rS3cretPw"));
		ck_assert_ptr_null(strstr(err.message, "MyS3cretPw"));
		ck_assert_ptr_null(strstr(err.message, "Other"));
	}
	/* A bad password line itself (a control character) is not quoted. */
	write_conf("signature_scheme = none\nredis_password = Sup3r\001Pw\n");
	expect_failure(conf_path, ":2: bad value for key 'redis_password'", &err);
	ck_assert_ptr_null(strstr(err.message, "Sup3r"));
}
END_TEST

START_TEST(default_path_from_env)
{
	ck_assert_ptr_null(config_default_path());
	setenv("PAYHOOK_CONFIG", "", 1);
	ck_assert_ptr_null(config_default_path());
	setenv("PAYHOOK_CONFIG", "/etc/payhook.conf", 1);
	ck_assert_str_eq(config_default_path(), "/etc/payhook.conf");
}
END_TEST

START_TEST(cleanup_is_idempotent)
{
	struct config cfg;
	struct config zero;

	memset(&zero, 0, sizeof(zero));
	memset(&cfg, 0, sizeof(cfg));
	config_cleanup(&cfg);
	config_cleanup(NULL);
	setenv("PAYHOOK_WEBHOOK_SECRET", SECRET_A, 1);
	load_ok(&cfg, NULL);
	ck_assert_uint_eq(cfg.secrets[CONFIG_PROVIDER_STANDARD].count, 1);
	config_cleanup(&cfg);
	ck_assert_int_eq(memcmp(&cfg, &zero, sizeof(cfg)), 0);
	config_cleanup(&cfg);
	ck_assert_int_eq(memcmp(&cfg, &zero, sizeof(cfg)), 0);
}
END_TEST

/* An empty metrics_token would leave metrics_path open: refused in the file;
 * in the environment, set but empty counts as unset (a metrics_token line
 * still holds), and is refused when no token is left at all. */
START_TEST(metrics_token_never_empty)
{
	struct config cfg;
	struct error err;
	char line[ERROR_MESSAGE_MAX];

	write_conf("signature_scheme = none\nmetrics_path = /m\n"
		   "metrics_token =\n");
	expect_failure(conf_path, ":3: bad value for key 'metrics_token': "
		       "expected a non-empty value", &err);
	write_conf("signature_scheme = none\nmetrics_path = /m\n"
		   "metrics_token = t0ken\n");
	setenv("PAYHOOK_METRICS_TOKEN", "", 1);
	load_ok(&cfg, conf_path);
	ck_assert_str_eq(cfg.metrics_token, "t0ken");
	ck_assert_int_eq(config_warning(&cfg, 0, line, sizeof(line)), -1);
	config_cleanup(&cfg);
	write_conf("signature_scheme = none\nmetrics_path = /m\n");
	expect_failure(conf_path, "PAYHOOK_METRICS_TOKEN is set but empty",
		       &err);
	setenv("PAYHOOK_METRICS_TOKEN", " \t", 1);
	expect_failure(conf_path, "PAYHOOK_METRICS_TOKEN is set but empty",
		       &err);
	/* Without a token on purpose: no line, no variable; a warning. */
	unsetenv("PAYHOOK_METRICS_TOKEN");
	load_ok(&cfg, conf_path);
	ck_assert_ptr_null(cfg.metrics_token);
	ck_assert_int_eq(config_warning(&cfg, 0, line, sizeof(line)), 0);
	ck_assert_msg(strstr(line, "metrics_path is served without a token"),
		      "%s", line);
	config_cleanup(&cfg);
}
END_TEST

/* Loads text and expects the message to hold want and not the secret. */
static void expect_secret_refused(const char *text, const char *want,
				  const char *secret)
{
	struct error err;

	write_conf(text);
	expect_failure(conf_path, want, &err);
	ck_assert_msg(strstr(err.message, secret) == NULL, "quoted: %s",
		      err.message);
}

/* A provider's API key where its webhook secret belongs, or a secret
 * without the prefix every such secret has, is refused by name. */
START_TEST(provider_secret_forms)
{
	struct config cfg;
	struct error err;

	expect_secret_refused("providers = stripe\n"
			      "stripe_secret = sk_live_51HxYzAbCdEf\n",
			      ":2: bad value for key 'stripe_secret': this is "
			      "a Stripe API key", "51HxYzAbCdEf");
	expect_secret_refused("providers = stripe\n"
			      "stripe_secret = rk_test_51HxYzAbCdEf\n",
			      "this is a Stripe API key", "51HxYzAbCdEf");
	expect_secret_refused("providers = stripe\n"
			      "stripe_secret = 51HxYzAbCdEf\n",
			      "expected the endpoint's signing secret (whsec_",
			      "51HxYzAbCdEf");
	expect_secret_refused("providers = paddle\n"
			      "paddle_secret = 0a1b2c3d4e5f\n",
			      "'paddle_secret': expected the notification "
			      "destination's secret key (pdl_ntfset_",
			      "0a1b2c3d4e5f");
	expect_secret_refused("providers = paddle\n"
			      "paddle_secret = pdl_live_apikey_01gtgztp8f\n",
			      "this is a Paddle API key", "01gtgztp8f");
	expect_secret_refused("providers = razorpay\n"
			      "razorpay_secret = rzp_live_ILgsfZCZoFIKMb\n",
			      "this is a Razorpay API key id", "ILgsfZCZoFIKMb");
	expect_secret_refused("providers = komoju\n"
			      "komoju_secret = sk_test_0123abcd\n",
			      "this is a KOMOJU API key", "0123abcd");
	expect_secret_refused("providers = payjp\n"
			      "payjp_secret = pk_live_0123abcd\n",
			      "this is a PAY.JP API key", "0123abcd");
	expect_secret_refused("providers = square\nsquare_secret = "
			      "EAAAl3bQTxKxW8ek0gWqnUNRYxGZCaJnH1yhVz3KbLrX"
			      "iEUqWm7xl4QZEDyNv5Z8\n",
			      "this is a Square access token", "EAAAl3bQ");
	expect_secret_refused("providers = shopify\n"
			      "shopify_secret = shpat_0123456789abcdef\n",
			      "this is a Shopify access token", "0123456789");
	/* The environment goes through the same rules. */
	write_conf("providers = stripe\n");
	setenv("PAYHOOK_STRIPE_SECRET", "whsec_ok sk_test_0123abcd", 1);
	expect_failure(conf_path, "environment PAYHOOK_STRIPE_SECRET (secret "
		       "2): bad value for key 'stripe_secret': this is a "
		       "Stripe API key", &err);
	unsetenv("PAYHOOK_STRIPE_SECRET");
	/* What each provider does hand out passes. */
	load_ok(&cfg, write_conf(
		"providers = stripe paddle razorpay komoju payjp square shopify\n"
		"stripe_secret = whsec_abc\n"
		"paddle_secret = pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3q\n"
		"razorpay_secret = rzp_test_secret\n"
		"komoju_secret = my-webhook-token\n"
		"payjp_secret = whook_0123abcd\n"
		"square_secret = 3Kx_2NuQ0sRkVj7YcE1wAg\n"
		"square_notification_url = https://example.com/webhook/square\n"
		"shopify_secret = shpss_0123456789abcdef0123456789abcdef\n"));
	config_cleanup(&cfg);
}
END_TEST

/* A secret for a profile providers does not enable is allowed, but its
 * webhooks would get 404: a warning names it. */
START_TEST(secret_of_disabled_profile_warned)
{
	struct config cfg;
	char line[ERROR_MESSAGE_MAX];

	load_ok(&cfg, write_conf("providers = stripe\n"
				 "stripe_secret = whsec_abc\n"
				 "razorpay_secret = my-secret\n"
				 "webhook_secret = " SECRET_A "\n"));
	ck_assert_int_eq(config_warning(&cfg, 0, line, sizeof(line)), 0);
	ck_assert_msg(strstr(line, "webhook_secret is set but providers does "
			     "not enable standard") != NULL, "%s", line);
	ck_assert_int_eq(config_warning(&cfg, 1, line, sizeof(line)), 0);
	ck_assert_msg(strstr(line, "razorpay_secret is set but providers does "
			     "not enable razorpay") != NULL, "%s", line);
	ck_assert_ptr_null(strstr(line, "my-secret"));
	ck_assert_int_eq(config_warning(&cfg, 2, line, sizeof(line)), -1);
	config_cleanup(&cfg);
}
END_TEST

/* An unknown profile is named when it looks like a name, never when it may
 * be a pasted secret. */
START_TEST(unknown_profile_named)
{
	struct error err;

	write_conf("providers = standard worldpay\n");
	expect_failure(conf_path, ":1: bad value for key 'providers': unknown "
		       "profile 'worldpay'", &err);
	write_conf("providers = stripe whsec_Ab+/cd=\n");
	expect_failure(conf_path, "a word names no profile (not shown)", &err);
	ck_assert_ptr_null(strstr(err.message, "Ab+/cd"));
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, defaults_without_file);
	tcase_add_test(tc, full_file_every_key);
	tcase_add_test(tc, comments_blank_lines_and_spacing);
	tcase_add_test(tc, unknown_key_names_file_line_and_key);
	tcase_add_test(tc, unknown_key_never_quoted);
	tcase_add_test(tc, quotes_and_inline_comments_refused);
	tcase_add_test(tc, unknown_env_variable_refused);
	tcase_add_test(tc, bounds_of_prefix_and_body);
	tcase_add_test(tc, whsec_prefix_required);
	tcase_add_test(tc, providers_and_their_secrets);
	tcase_add_test(tc, line_without_equals);
	tcase_add_test(tc, bad_integers_rejected);
	tcase_add_test(tc, in_progress_status_only_409_or_503);
	tcase_add_test(tc, default_currency_rules);
	tcase_add_test(tc, booleans_and_choices);
	tcase_add_test(tc, node_lists);
	tcase_add_test(tc, empty_values);
	tcase_add_test(tc, duplicate_key_refused);
	tcase_add_test(tc, env_overrides_file);
	tcase_add_test(tc, empty_env_ignored);
	tcase_add_test(tc, env_secrets_replace_file_lines);
	tcase_add_test(tc, standard_without_secret_refused);
	tcase_add_test(tc, bad_secret_refused_without_quoting_it);
	tcase_add_test(tc, lease_bound);
	tcase_add_test(tc, operator_keys);
	tcase_add_test(tc, missing_file);
	tcase_add_test(tc, passwords_never_in_errors);
	tcase_add_test(tc, default_path_from_env);
	tcase_add_test(tc, cleanup_is_idempotent);
	tcase_add_test(tc, metrics_token_never_empty);
	tcase_add_test(tc, provider_secret_forms);
	tcase_add_test(tc, secret_of_disabled_profile_warned);
	tcase_add_test(tc, unknown_profile_named);
	tcase_add_test(tc, dispatcher_checks_only_its_keys);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
