/* fuzz_config.c - libFuzzer target for config_load: the input is the
 * configuration file (written to a memfd, or to one /tmp file per process),
 * loaded and cleaned up again. Leaks show up through LeakSanitizer.
 *
 * Lines "#@env PAYHOOK_NAME=value" (comments to payhook) also set that
 * environment variable for the load, so the overrides are fuzzed too (a
 * name that is no key must be refused). Every other PAYHOOK_* variable is
 * cleared at start-up; the harness's own switches are named FUZZ_*.
 *
 * Invariants: a loaded configuration obeys the contract's ranges and its
 * secrets make the provider profiles' keyrings; a refused one leaves cfg
 * zeroed and says why, never quoting a secret (checked by loading the input
 * again with the value of every *_secret and *_password key scrambled: the
 * message must not change) nor an unknown key name (checked the same way,
 * with the capital letters and digits of every unknown name rotated).
 */
#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "configuration.h"
#include "fuzz.h"
#include "pipeline.h"
#include "provider.h"

extern char **environ;

#define ENV_DIRECTIVE "#@env "
#define ENV_MAX 4
#define ENV_NAME_MAX 64

static bool trace_results; /* FUZZ_TRACE set: one line per input */
static int config_fd = -1;
static char config_path[64];

static void remove_config_file(void)
{
	if (config_fd >= 0 && strncmp(config_path, "/tmp/", 5) == 0)
		unlink(config_path);
}

/* Unsets every PAYHOOK_* variable, so only the input decides. */
static void clear_payhook_env(void)
{
	char name[256];

	for (;;) {
		char **e;

		for (e = environ; *e != NULL; e++)
			if (strncmp(*e, "PAYHOOK_", 8) == 0)
				break;
		if (*e == NULL)
			return;
		size_t n = strcspn(*e, "=");

		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		memcpy(name, *e, n);
		name[n] = '\0';
		if (unsetenv(name) != 0)
			FUZZ_FATAL("cannot unset %s", name);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	trace_results = getenv("FUZZ_TRACE") != NULL;
	clear_payhook_env();
	log_init("payhook-fuzz", LOG_LEVEL_ERROR);
	/* A memfd leaves nothing behind, even when the fuzzer stops on a
	 * crash; /proc/self/fd/N opens it afresh at offset 0. */
	config_fd = memfd_create("payhook-fuzz-config", MFD_CLOEXEC);
	if (config_fd >= 0) {
		snprintf(config_path, sizeof(config_path), "/proc/self/fd/%d",
			 config_fd);
		if (access(config_path, R_OK) == 0)
			return 0;
		close(config_fd);
	}
	snprintf(config_path, sizeof(config_path),
		 "/tmp/payhook-fuzz-config.%ld", (long)getpid());
	config_fd = open(config_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
			 0600);
	if (config_fd < 0)
		FUZZ_FATAL("cannot create %s", config_path);
	atexit(remove_config_file);
	return 0;
}

static void write_config(const uint8_t *data, size_t size)
{
	size_t done = 0;

	if (ftruncate(config_fd, 0) != 0)
		FUZZ_FATAL("ftruncate %s failed", config_path);
	while (done < size) {
		ssize_t n = pwrite(config_fd, data + done, size - done,
				   (off_t)done);

		if (n <= 0)
			FUZZ_FATAL("write %s failed", config_path);
		done += (size_t)n;
	}
}

/* Environment directives: "#@env PAYHOOK_[A-Z_]+=value" at the start of a
 * line. Each string is handed to putenv (no copy kept by libc, so nothing
 * grows across millions of inputs) and taken out again by unset_env. */
struct env_set {
	char *entries[ENV_MAX];
	size_t count;
};

static void set_env(const uint8_t *data, size_t size, struct env_set *env)
{
	size_t pos = 0, dlen = strlen(ENV_DIRECTIVE);

	env->count = 0;
	while (pos < size && env->count < ENV_MAX) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t end = nl != NULL ? (size_t)(nl - data) : size;
		size_t len = end - pos;

		if (len > dlen + 8 &&
		    memcmp(data + pos, ENV_DIRECTIVE, dlen) == 0 &&
		    memcmp(data + pos + dlen, "PAYHOOK_", 8) == 0) {
			const char *s = (const char *)data + pos + dlen;
			size_t slen = len - dlen, name_len = 8;
			char *entry;

			while (name_len < slen && (isupper((unsigned char)s[name_len]) ||
						   s[name_len] == '_'))
				name_len++;
			/* Real names are short; the cap keeps unset_env simple. */
			if (name_len > 8 && name_len < ENV_NAME_MAX &&
			    name_len < slen && s[name_len] == '=') {
				entry = malloc(slen + 1);
				if (entry == NULL)
					FUZZ_FATAL("out of memory");
				memcpy(entry, s, slen);
				entry[slen] = '\0'; /* a NUL inside cuts it short */
				if (putenv(entry) != 0)
					FUZZ_FATAL("putenv failed");
				env->entries[env->count++] = entry;
			}
		}
		pos = end + 1;
	}
}

static void unset_env(struct env_set *env)
{
	for (size_t i = 0; i < env->count; i++) {
		/* The name in a copy: the entry itself must keep its '=' for
		 * unsetenv to recognise it in environ. */
		char name[ENV_NAME_MAX];
		size_t n = strcspn(env->entries[i], "=");

		memcpy(name, env->entries[i], n);
		name[n] = '\0';
		if (unsetenv(name) != 0)
			FUZZ_FATAL("unsetenv %s failed", name);
	}
	for (char **e = environ; *e != NULL; e++)
		for (size_t i = 0; i < env->count; i++)
			FUZZ_CHECK(*e != env->entries[i],
				   "an environment entry outlived its input");
	/* Only now, with no environ entry pointing at them. */
	for (size_t i = 0; i < env->count; i++)
		free(env->entries[i]);
	env->count = 0;
}

/* Every key of configuration.h, as the file spells it. */
static const char *const known_keys[] = {
	"redis_host", "redis_port", "redis_socket", "redis_password",
	"redis_db", "redis_timeout_ms", "mysql_host", "mysql_port",
	"mysql_socket", "mysql_user", "mysql_password", "mysql_database",
	"mysql_connect_timeout_s", "mysql_read_timeout_s",
	"mysql_write_timeout_s", "lock_ttl_ms", "lock_key_prefix",
	"redis_unavailable", "max_body_bytes", "default_currency",
	"trim_transaction_id", "signature_scheme", "webhook_secret",
	"signature_tolerance_s", "providers", "stripe_secret",
	"stripe_tolerance_s", "paddle_secret", "paddle_tolerance_s",
	"razorpay_secret", "komoju_secret", "payjp_secret", "square_secret",
	"square_notification_url", "shopify_secret", "adyen_secret",
	"generic_secret", "generic_tolerance_s", "generic_signature_header",
	"generic_signature_encoding", "generic_signature_prefix",
	"generic_signed_payload", "generic_timestamp_header", "generic_url",
	"generic_secret_encoding", "generic_event_path",
	"generic_event_values", "generic_event_id_path",
	"generic_transaction_id_path", "generic_amount_path",
	"generic_amount_format", "generic_currency_path",
	"in_progress_status", "retry_after_s", "log_level", "log_file",
};
#define KNOWN_KEYS (sizeof(known_keys) / sizeof(known_keys[0]))

/* The keys whose values are secrets: never to be quoted. */
static const char *const secret_keys[] = {
	"webhook_secret", "stripe_secret", "paddle_secret", "razorpay_secret",
	"komoju_secret", "payjp_secret", "square_secret", "shopify_secret",
	"adyen_secret", "generic_secret", "redis_password", "mysql_password",
};
#define SECRET_KEYS (sizeof(secret_keys) / sizeof(secret_keys[0]))

static bool in_list(const char *const *list, size_t count, const char *name,
		    size_t len)
{
	for (size_t i = 0; i < count; i++)
		if (strlen(list[i]) == len && memcmp(list[i], name, len) == 0)
			return true;
	return false;
}

static bool no_control(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* A value as config_load keeps it: not empty, no control character, trimmed,
 * not wrapped in quotes, no '#' after white space. */
static void check_value(const char *name, const char *s)
{
	size_t n = strlen(s);

	FUZZ_CHECK(n > 0, "%s is set but empty", name);
	FUZZ_CHECK(no_control(s), "%s holds a control character", name);
	FUZZ_CHECK(!isspace((unsigned char)s[0]) &&
		   !isspace((unsigned char)s[n - 1]),
		   "%s is not trimmed", name);
	FUZZ_CHECK(n < 2 || !((s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]),
		   "%s is wrapped in quotes", name);
	for (size_t i = 1; i < n; i++)
		FUZZ_CHECK(!(s[i] == '#' && (s[i - 1] == ' ' || s[i - 1] == '\t')),
			   "%s has a '#' after white space", name);
}

static void check_string(const char *name, const char *s, bool required)
{
	if (s == NULL) {
		FUZZ_CHECK(!required, "%s is NULL", name);
		return;
	}
	check_value(name, s);
}

/* The provider profiles' settings of a loaded configuration. */
static void check_providers(const struct config *cfg)
{
	const struct config_generic *g = &cfg->generic;
	struct provider_set *set;
	struct error err;

	FUZZ_CHECK(cfg->providers != 0 &&
		   (cfg->providers >> CONFIG_PROVIDER_COUNT) == 0,
		   "providers 0x%x", cfg->providers);
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		const struct config_secrets *sec = &cfg->secrets[p];
		bool enabled = config_provider_enabled(cfg, p);

		FUZZ_CHECK((sec->items != NULL) == (sec->count > 0),
			   "%s: secrets array/count", config_provider_name(p));
		/* Secrets from PAYHOOK_<PROFILE>_SECRET are the white-space
		 * separated words of the variable, taken as they are: only
		 * those from the file pass check_value's rules. */
		for (size_t i = 0; i < sec->count; i++) {
			const char *t = sec->items[i];

			FUZZ_CHECK(t != NULL && t[0] != '\0' &&
				   !isspace((unsigned char)t[0]) &&
				   !isspace((unsigned char)t[strlen(t) - 1]),
				   "%s secret %zu empty or not trimmed",
				   config_provider_name(p), i);
		}
		if (enabled && p != CONFIG_PROVIDER_STANDARD)
			FUZZ_CHECK(sec->count > 0, "%s enabled without a secret",
				   config_provider_name(p));
		FUZZ_CHECK(cfg->tolerance_s[p] == 0 ||
			   (cfg->tolerance_s[p] >= 1 &&
			    cfg->tolerance_s[p] <= 31536000),
			   "%s tolerance %ld", config_provider_name(p),
			   cfg->tolerance_s[p]);
		FUZZ_CHECK(config_tolerance_s(cfg, p) >= 1,
			   "%s tolerance below 1", config_provider_name(p));
	}
	FUZZ_CHECK(!config_provider_enabled(cfg, CONFIG_PROVIDER_STANDARD) ||
		   cfg->signature_scheme != CONFIG_SIGNATURE_STANDARD ||
		   cfg->secrets[CONFIG_PROVIDER_STANDARD].count > 0,
		   "standard scheme without a secret");
	check_string("square_notification_url", cfg->square_notification_url,
		     config_provider_enabled(cfg, CONFIG_PROVIDER_SQUARE));
	check_string("generic_signature_header", g->signature_header,
		     config_provider_enabled(cfg, CONFIG_PROVIDER_GENERIC));
	check_string("generic_signature_prefix", g->signature_prefix, false);
	check_string("generic_signed_payload", g->signed_payload, true);
	check_string("generic_timestamp_header", g->timestamp_header, false);
	check_string("generic_url", g->url, false);
	check_string("generic_event_path", g->event_path, false);
	check_string("generic_event_values", g->event_values, false);
	check_string("generic_event_id_path", g->event_id_path, false);
	check_string("generic_transaction_id_path", g->transaction_id_path,
		     config_provider_enabled(cfg, CONFIG_PROVIDER_GENERIC));
	check_string("generic_amount_path", g->amount_path,
		     config_provider_enabled(cfg, CONFIG_PROVIDER_GENERIC));
	check_string("generic_currency_path", g->currency_path,
		     config_provider_enabled(cfg, CONFIG_PROVIDER_GENERIC) &&
			     cfg->default_currency == NULL);
	FUZZ_CHECK(g->signature_encoding == CONFIG_ENCODING_HEX ||
		   g->signature_encoding == CONFIG_ENCODING_BASE64,
		   "generic_signature_encoding %d", (int)g->signature_encoding);
	FUZZ_CHECK((unsigned)g->secret_encoding <= CONFIG_ENCODING_TEXT,
		   "generic_secret_encoding %d", (int)g->secret_encoding);
	FUZZ_CHECK((unsigned)g->amount_format <= CONFIG_AMOUNT_DECIMAL,
		   "generic_amount_format %d", (int)g->amount_format);
	if (config_provider_enabled(cfg, CONFIG_PROVIDER_GENERIC)) {
		const char *body = strstr(g->signed_payload, "{body}");

		FUZZ_CHECK(body != NULL && strstr(body + 1, "{body}") == NULL,
			   "generic_signed_payload without exactly one {body}");
	}
	/* The worker builds this next: a loaded config must let it. */
	set = provider_set_new(cfg, &err);
	FUZZ_CHECK(set != NULL, "loaded configuration refused by the "
		   "provider profiles: %s", err.message);
	provider_set_free(set);
}

/* What every configuration that loads must satisfy (doc/configuration.md, configuration.h). */
static void check_loaded(const struct config *cfg)
{
	check_string("redis_host", cfg->redis_host, true);
	check_string("redis_socket", cfg->redis_socket, false);
	check_string("redis_password", cfg->redis_password, false);
	check_string("mysql_host", cfg->mysql_host, true);
	check_string("mysql_socket", cfg->mysql_socket, false);
	check_string("mysql_user", cfg->mysql_user, true);
	check_string("mysql_password", cfg->mysql_password, false);
	check_string("mysql_database", cfg->mysql_database, true);
	check_string("lock_key_prefix", cfg->lock_key_prefix, true);
	check_string("log_file", cfg->log_file, false);
	FUZZ_CHECK(strlen(cfg->lock_key_prefix) <= CONFIG_LOCK_KEY_PREFIX_MAX,
		   "lock_key_prefix of %zu bytes", strlen(cfg->lock_key_prefix));
	FUZZ_CHECK(cfg->redis_port >= 1 && cfg->redis_port <= 65535,
		   "redis_port %d", cfg->redis_port);
	FUZZ_CHECK(cfg->mysql_port >= 1 && cfg->mysql_port <= 65535,
		   "mysql_port %d", cfg->mysql_port);
	FUZZ_CHECK(cfg->redis_db >= 0, "redis_db %d", cfg->redis_db);
	FUZZ_CHECK(cfg->redis_timeout_ms >= 1, "redis_timeout_ms %d",
		   cfg->redis_timeout_ms);
	FUZZ_CHECK(cfg->mysql_connect_timeout_s >= 1 &&
		   cfg->mysql_read_timeout_s >= 1 &&
		   cfg->mysql_write_timeout_s >= 1, "a MySQL timeout below 1");
	FUZZ_CHECK(cfg->lock_ttl_ms > config_write_bound_ms(cfg) +
					 CONFIG_LEASE_MARGIN_MS,
		   "lock_ttl_ms %ld does not outlive the write bound %ld",
		   cfg->lock_ttl_ms, config_write_bound_ms(cfg));
	FUZZ_CHECK(cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_DB_ONLY ||
		   cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_FAIL,
		   "redis_unavailable %d", (int)cfg->redis_unavailable);
	FUZZ_CHECK(cfg->max_body_bytes >= 1 &&
		   cfg->max_body_bytes <= (size_t)CONFIG_MAX_BODY_BYTES_MAX,
		   "max_body_bytes %zu", cfg->max_body_bytes);
	if (cfg->default_currency != NULL)
		FUZZ_CHECK(strlen(cfg->default_currency) == 3 &&
			   isupper((unsigned char)cfg->default_currency[0]) &&
			   isupper((unsigned char)cfg->default_currency[1]) &&
			   isupper((unsigned char)cfg->default_currency[2]) &&
			   cfg->default_currency[0] <= 'Z' &&
			   cfg->default_currency[1] <= 'Z' &&
			   cfg->default_currency[2] <= 'Z',
			   "default_currency \"%s\"", cfg->default_currency);
	FUZZ_CHECK(cfg->signature_scheme == CONFIG_SIGNATURE_STANDARD ||
		   cfg->signature_scheme == CONFIG_SIGNATURE_NONE,
		   "signature_scheme %d", (int)cfg->signature_scheme);
	FUZZ_CHECK(cfg->signature_tolerance_s >= 1, "signature_tolerance_s %ld",
		   cfg->signature_tolerance_s);
	FUZZ_CHECK(cfg->in_progress_status == 409 ||
		   cfg->in_progress_status == 503, "in_progress_status %d",
		   cfg->in_progress_status);
	FUZZ_CHECK(cfg->retry_after_s >= 0, "retry_after_s %d",
		   cfg->retry_after_s);
	FUZZ_CHECK((int)cfg->log_level >= LOG_LEVEL_ERROR &&
		   cfg->log_level <= LOG_LEVEL_DEBUG, "log_level %d",
		   (int)cfg->log_level);
	check_providers(cfg);
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

/* Whether an environment entry "PAYHOOK_NAME=..." names no key (and is not
 * PAYHOOK_CONFIG, the file's path): config_load must refuse it. */
static bool names_no_key(const char *entry)
{
	char lower[ENV_NAME_MAX];
	size_t n = strcspn(entry, "=");

	if (n == strlen("PAYHOOK_CONFIG") && memcmp(entry, "PAYHOOK_CONFIG", n) == 0)
		return false;
	if (n <= 8 || n - 8 >= sizeof(lower))
		return true;
	for (size_t i = 8; i < n; i++)
		lower[i - 8] = (char)tolower((unsigned char)entry[i]);
	return !in_list(known_keys, KNOWN_KEYS, lower, n - 8);
}

/* Loads data (file and env directives). Returns config_load's result;
 * *cfg is checked and cleaned up, err keeps the message. */
static int load(const uint8_t *data, size_t size, struct error *err,
		struct config *out)
{
	struct env_set env;
	struct config cfg;
	bool unknown_env = false;
	int rc;

	write_config(data, size);
	set_env(data, size, &env);
	for (size_t i = 0; i < env.count; i++)
		unknown_env |= names_no_key(env.entries[i]);
	memset(&cfg, 0xA5, sizeof(cfg)); /* config_load must not trust it */
	rc = pipeline_load_config(&cfg, config_path, err);
	unset_env(&env);
	FUZZ_CHECK(rc == 0 || rc == -1, "config_load returned %d", rc);
	FUZZ_CHECK(rc == -1 || !unknown_env,
		   "loaded with a PAYHOOK_ variable that names no key");
	FUZZ_CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL,
		   "error message not NUL-terminated");
	if (rc == 0) {
		check_loaded(&cfg);
	} else {
		FUZZ_CHECK(err->message[0] != '\0', "refused without a message");
		FUZZ_CHECK(all_zero(&cfg, sizeof(cfg)),
			   "refused config not left empty");
	}
	*out = cfg; /* the caller compares, then cleans up */
	return rc;
}

static bool is_secret_key(const char *name, size_t len)
{
	return in_list(secret_keys, SECRET_KEYS, name, len);
}

/* Whether name[0..len) is PAYHOOK_ and a secret key upper-cased. */
static bool is_secret_env(const char *name, size_t len)
{
	char lower[ENV_NAME_MAX];

	if (len <= 8 || len >= sizeof(lower) || memcmp(name, "PAYHOOK_", 8) != 0)
		return false;
	for (size_t i = 8; i < len; i++)
		lower[i - 8] = (char)tolower((unsigned char)name[i]);
	return is_secret_key(lower, len - 8);
}

/* Rotates letters and digits within their class by k: digits, a-f, g-z,
 * A-F and G-Z apart, so hex stays hex, base64 stays base64 and every
 * length, space, sign and control byte stays where it was. */
static unsigned char rotate(unsigned char c, int k)
{
	if (c >= 'A' && c <= 'F')
		return (unsigned char)('A' + (c - 'A' + k) % 6);
	if (c >= 'G' && c <= 'Z')
		return (unsigned char)('G' + (c - 'G' + k) % 20);
	if (c >= 'a' && c <= 'f')
		return (unsigned char)('a' + (c - 'a' + k) % 6);
	if (c >= 'g' && c <= 'z')
		return (unsigned char)('g' + (c - 'g' + k) % 20);
	if (c >= '0' && c <= '9')
		return (unsigned char)('0' + (c - '0' + k) % 10);
	return c;
}

/* Scrambles one secret value v[0..n): each white-space separated word,
 * keeping the prefix that decides its form ("whsec_", "pdl_ntfset_", an API
 * key's "sk_live_": config_test_secret_form_prefix) and never creating one. */
static void scramble_value(unsigned char *v, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t start, end, from;

		while (i < n && isspace(v[i]))
			i++;
		start = i;
		while (i < n && !isspace(v[i]))
			i++;
		end = i;
		from = start + config_test_secret_form_prefix(
					       (const char *)v + start,
					       end - start);
		for (int k = 1; k <= 6; k++) {
			for (size_t j = from; j < end; j++)
				v[j] = rotate(v[j], 1);
			if (from != start ||
			    config_test_secret_form_prefix(
				    (const char *)v + start, end - start) == 0)
				break;
		}
	}
}

/* A copy of data with the value of every secret line and secret env
 * directive scrambled. Returns NULL when there is no secret to scramble. */
static uint8_t *scrambled_copy(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size > 0 ? size : 1);
	size_t pos = 0, dlen = strlen(ENV_DIRECTIVE);
	bool any = false;

	if (copy == NULL)
		FUZZ_FATAL("out of memory");
	memcpy(copy, data, size);
	while (pos < size) {
		uint8_t *line = copy + pos;
		const uint8_t *nl = memchr(line, '\n', size - pos);
		size_t len = nl != NULL ? (size_t)(nl - line) : size - pos;
		size_t a = 0, b;
		const uint8_t *nul = memchr(line, '\0', len);
		uint8_t *eq;

		/* Only up to a NUL, as putenv and the checks see it. */
		if (nul != NULL)
			len = (size_t)(nul - line);
		eq = memchr(line, '=', len);
		if (eq != NULL && len > dlen &&
		    memcmp(line, ENV_DIRECTIVE, dlen) == 0) {
			const char *n = (const char *)line + dlen;
			size_t nlen = (size_t)(eq - line) - dlen;

			if (is_secret_env(n, nlen)) {
				scramble_value(eq + 1, len - (size_t)(eq + 1 - line));
				any = true;
			}
		} else if (eq != NULL) {
			while (a < len && isspace(line[a]))
				a++;
			b = (size_t)(eq - line);
			while (b > a && isspace(line[b - 1]))
				b--;
			/* config_load skips a byte-order mark on line 1. */
			if (pos == 0 && len >= 3 &&
			    memcmp(line, "\xEF\xBB\xBF", 3) == 0)
				for (a = 3; a < len && isspace(line[a]); a++)
					;
			if (a < b && is_secret_key((const char *)line + a, b - a)) {
				scramble_value(eq + 1, len - (size_t)(eq + 1 - line));
				any = true;
			}
		}
		pos = nl != NULL ? (size_t)(nl - copy) + 1 : size;
	}
	if (!any) {
		free(copy);
		return NULL;
	}
	return copy;
}

/* The key names of the file's lines as config_load reads them: up to the
 * first line holding a NUL byte (config_load stops there), line 1 without a
 * byte-order mark, comment and blank lines skipped, the name trimmed before
 * the first '='. Calls visit with each name's bounds in data. */
static void each_key_name(uint8_t *data, size_t size,
			  void (*visit)(uint8_t *name, size_t len, void *ctx),
			  void *ctx)
{
	size_t pos = 0;

	while (pos < size) {
		uint8_t *line = data + pos;
		const uint8_t *nl = memchr(line, '\n', size - pos);
		size_t len = nl != NULL ? (size_t)(nl - line) : size - pos;
		size_t a = 0, b;
		uint8_t *eq;

		if (memchr(line, '\0', len) != NULL)
			return;
		if (pos == 0 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0)
			a = 3;
		while (a < len && isspace(line[a]))
			a++;
		eq = memchr(line, '=', len);
		if (a < len && line[a] != '#' && eq != NULL) {
			b = (size_t)(eq - line);
			while (b > a && isspace(line[b - 1]))
				b--;
			if (b > a)
				visit(line + a, b - a, ctx);
		}
		pos = nl != NULL ? (size_t)(nl - data) + 1 : size;
	}
}

/* Rotates the capital letters and digits of an unknown key name. Key names
 * are made of a-z and '_' alone, so such a character matches no key's: the
 * name stays unknown and as far from every key as it was (the same
 * suggestion, if any), while a message that quoted it would change. */
static void rotate_unknown(uint8_t *name, size_t len, void *ctx)
{
	bool *any = ctx;

	if (in_list(known_keys, KNOWN_KEYS, (const char *)name, len))
		return;
	for (size_t i = 0; i < len; i++) {
		if (name[i] >= 'A' && name[i] <= 'Z') {
			name[i] = (uint8_t)('A' + (name[i] - 'A' + 1) % 26);
			*any = true;
		} else if (name[i] >= '0' && name[i] <= '9') {
			name[i] = (uint8_t)('0' + (name[i] - '0' + 1) % 10);
			*any = true;
		}
	}
}

/* For a refused input: an unknown key name is never quoted (it may be a
 * pasted secret), so the message must not change when the names change. */
static void check_unknown_keys(const uint8_t *data, size_t size, int rc,
			       const struct error *err)
{
	struct error err2 = { "" };
	struct config cfg2;
	uint8_t *rotated;
	bool any = false;
	int rc2;

	rotated = malloc(size > 0 ? size : 1);
	if (rotated == NULL)
		FUZZ_FATAL("out of memory");
	if (size > 0)
		memcpy(rotated, data, size);
	each_key_name(rotated, size, rotate_unknown, &any);
	if (any) {
		rc2 = load(rotated, size, &err2, &cfg2);
		config_cleanup(&cfg2);
		FUZZ_CHECK(rc2 == rc && strcmp(err->message, err2.message) == 0,
			   "the message depends on an unknown key's name:\n"
			   "  %s\n  %s", err->message, err2.message);
	}
	free(rotated);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err = { "" }, err2 = { "" };
	struct config cfg, cfg2;
	uint8_t *scrambled;
	int rc, rc2;

	rc = load(data, size, &err, &cfg);
	if (trace_results)
		fprintf(stderr, "fuzz_config: %s\n",
			rc == 0 ? "loaded" : err.message);
	scrambled = scrambled_copy(data, size);
	if (scrambled != NULL) {
		rc2 = load(scrambled, size, &err2, &cfg2);
		FUZZ_CHECK(rc2 == rc, "scrambling a secret changed the result "
			   "(%d -> %d: %s)", rc, rc2,
			   rc != 0 ? err.message : err2.message);
		FUZZ_CHECK(strcmp(err.message, err2.message) == 0,
			   "the message depends on a secret's value:\n  %s\n  %s",
			   err.message, err2.message);
		if (rc == 0) {
			for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
				FUZZ_CHECK(cfg.secrets[p].count ==
					   cfg2.secrets[p].count,
					   "scrambling changed the number of "
					   "%s secrets",
					   config_provider_name(p));
			FUZZ_CHECK(cfg.max_body_bytes == cfg2.max_body_bytes &&
				   cfg.providers == cfg2.providers,
				   "scrambling a secret changed other keys");
		}
		config_cleanup(&cfg2);
		free(scrambled);
	}
	if (rc != 0)
		check_unknown_keys(data, size, rc, &err);
	config_cleanup(&cfg);
	FUZZ_CHECK(all_zero(&cfg, sizeof(cfg)), "config_cleanup left data");
	config_cleanup(&cfg); /* twice is fine, says the header */
	return 0;
}
