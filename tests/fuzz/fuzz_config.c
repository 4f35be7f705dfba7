/* fuzz_config.c - libFuzzer target for config_load: the input is the
 * configuration file (written to a memfd, or to one /tmp file per process),
 * loaded and cleaned up again. Leaks show up through LeakSanitizer.
 *
 * Lines "#@env PAYHOOK_NAME=value" (comments to payhook) also set that
 * environment variable for the load, so the overrides are fuzzed too. Every
 * other PAYHOOK_* variable is cleared at start-up.
 *
 * Invariants: a loaded configuration obeys the contract's ranges and its
 * secrets make a verifier; a refused one leaves cfg zeroed and says why,
 * never quoting a secret (checked by loading the input again with every
 * secret value scrambled: the message must not change).
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
#include "signature.h"

extern char **environ;

#define ENV_DIRECTIVE "#@env "
#define ENV_MAX 4
#define ENV_NAME_MAX 64

static bool trace_results; /* PAYHOOK_FUZZ_TRACE set: one line per input */
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
	trace_results = getenv("PAYHOOK_FUZZ_TRACE") != NULL;
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

static bool no_control(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static void check_string(const char *name, const char *s, bool required)
{
	if (s == NULL) {
		FUZZ_CHECK(!required, "%s is NULL", name);
		return;
	}
	FUZZ_CHECK(s[0] != '\0', "%s is set but empty", name);
	FUZZ_CHECK(no_control(s), "%s holds a control character", name);
	FUZZ_CHECK(!isspace((unsigned char)s[0]) &&
		   !isspace((unsigned char)s[strlen(s) - 1]),
		   "%s is not trimmed", name);
}

/* What every configuration that loads must satisfy (SPEC.md, config.h). */
static void check_loaded(const struct config *cfg)
{
	struct signature_verifier *v;
	struct error err;

	check_string("redis_host", cfg->redis_host, true);
	check_string("redis_socket", cfg->redis_socket, false);
	check_string("redis_password", cfg->redis_password, false);
	check_string("mysql_host", cfg->mysql_host, true);
	check_string("mysql_socket", cfg->mysql_socket, false);
	check_string("mysql_user", cfg->mysql_user, true);
	check_string("mysql_password", cfg->mysql_password, false);
	check_string("mysql_database", cfg->mysql_database, true);
	check_string("lock_key_prefix", cfg->lock_key_prefix, true);
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
		   cfg->max_body_bytes <= 64u * 1024 * 1024,
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
	FUZZ_CHECK(cfg->signature_scheme != CONFIG_SIGNATURE_STANDARD ||
		   cfg->webhook_secret_count > 0,
		   "standard scheme without a secret");
	FUZZ_CHECK((cfg->webhook_secrets != NULL) ==
		   (cfg->webhook_secret_count > 0), "secrets array/count");
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
	if (cfg->webhook_secret_count > 0) {
		for (size_t i = 0; i < cfg->webhook_secret_count; i++)
			FUZZ_CHECK(cfg->webhook_secrets[i] != NULL &&
				   cfg->webhook_secrets[i][0] != '\0',
				   "secret %zu empty", i);
		/* The worker builds this next: a loaded config must let it. */
		v = signature_verifier_new(cfg->webhook_secrets,
					   cfg->webhook_secret_count, &err);
		FUZZ_CHECK(v != NULL, "loaded secrets refused: %s",
			   err.message);
		signature_verifier_free(v);
	}
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

/* Loads data (file and env directives). Returns config_load's result;
 * *cfg is checked and cleaned up, err keeps the message. */
static int load(const uint8_t *data, size_t size, struct error *err,
		struct config *out)
{
	struct env_set env;
	struct config cfg;
	int rc;

	write_config(data, size);
	set_env(data, size, &env);
	memset(&cfg, 0xA5, sizeof(cfg)); /* config_load must not trust it */
	rc = config_load(&cfg, config_path, err);
	unset_env(&env);
	FUZZ_CHECK(rc == 0 || rc == -1, "config_load returned %d", rc);
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
	static const char *const secret_keys[] = {
		"webhook_secret", "redis_password", "mysql_password",
	};

	for (size_t i = 0; i < 3; i++)
		if (strlen(secret_keys[i]) == len &&
		    memcmp(secret_keys[i], name, len) == 0)
			return true;
	return false;
}

/* Rotates letters and digits within their class by k, so base64 stays
 * base64 and every length, space and control byte stays where it was. */
static unsigned char rotate(unsigned char c, int k)
{
	if (c >= 'A' && c <= 'Z')
		return (unsigned char)('A' + (c - 'A' + k) % 26);
	if (c >= 'a' && c <= 'z')
		return (unsigned char)('a' + (c - 'a' + k) % 26);
	if (c >= '0' && c <= '9')
		return (unsigned char)('0' + (c - '0' + k) % 10);
	return c;
}

/* Scrambles one secret value v[0..n): each white-space separated word,
 * keeping a "whsec_" prefix and never creating one. */
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
		from = start;
		if (end - start >= 6 && memcmp(v + start, "whsec_", 6) == 0)
			from += 6;
		for (int k = 1; k <= 3; k++) {
			for (size_t j = from; j < end; j++)
				v[j] = rotate(v[j], 1);
			if (from != start || end - start < 6 ||
			    memcmp(v + start, "whsec_", 6) != 0)
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

			if ((nlen == 22 && memcmp(n, "PAYHOOK_WEBHOOK_SECRET", 22) == 0) ||
			    (nlen == 22 && memcmp(n, "PAYHOOK_REDIS_PASSWORD", 22) == 0) ||
			    (nlen == 22 && memcmp(n, "PAYHOOK_MYSQL_PASSWORD", 22) == 0)) {
				scramble_value(eq + 1, len - (size_t)(eq + 1 - line));
				any = true;
			}
		} else if (eq != NULL) {
			while (a < len && isspace(line[a]))
				a++;
			b = (size_t)(eq - line);
			while (b > a && isspace(line[b - 1]))
				b--;
			if (pos == 0 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0)
				a = len; /* BOM lines: leave alone */
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
		if (rc == 0)
			FUZZ_CHECK(cfg.webhook_secret_count ==
				   cfg2.webhook_secret_count &&
				   cfg.max_body_bytes == cfg2.max_body_bytes,
				   "scrambling a secret changed other keys");
		config_cleanup(&cfg2);
		free(scrambled);
	}
	config_cleanup(&cfg);
	FUZZ_CHECK(all_zero(&cfg, sizeof(cfg)), "config_cleanup left data");
	config_cleanup(&cfg); /* twice is fine, says the header */
	return 0;
}
