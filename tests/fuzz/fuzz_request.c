/* fuzz_request.c - libFuzzer target for the whole request handler:
 * pipeline_test_handle from CGI variables and body to outcome, rendered with
 * response_render, with the backends replaced by stub_backends.c. The
 * configuration is the default one (providers = standard only) with the
 * variations below.
 *
 * Input: six header bytes, then the NUL-terminated text fields the header
 * asks for (in this order: content-type, content-length, webhook-id,
 * webhook-timestamp, webhook-signature, request path), then the body.
 *   b0 bits 0-2 method: POST x4, GET, absent, "post", PUT
 *      bits 3-4 reading: all at once, 1 byte, 7 bytes, 7 bytes failing
 *      from half the body on
 *      bits 5-7 path (see paths): the profile it routes to, standard or
 *      none (404); 5: REQUEST_URI is a field
 *   b1 bits 0-3 content-type (see content_types; 15: a field)
 *      bit 4 trim_transaction_id, bit 5 default_currency EUR and
 *      inbox_days 1 (the stub checks each delivery kept),
 *      bit 6 in_progress_status 503, bit 7 redis_unavailable = fail
 *   b2 bits 0-2 content-length: right, shorter, longer (by 1 + bits 3-7),
 *      absent, empty, a field, 2^64 * 10, max_body_bytes + 1 + bits 3-7
 *   b3 bit 0 signature_scheme none; bits 1-3 signing (see sign_mode);
 *      bit 4 extra entries around the signature; bit 5 max_body_bytes 64
 *   b4 bits 0-1 lock: acquired x2, busy, unavailable; bits 2-4 insert
 *      answer; bits 5-6 find answer; bit 7 store_connect fails
 *   b5 bits 0-1 release answer; bits 2-3 lease left (guard needs 5000 ms)
 * Input holding the marker 00 FF 00 is two requests, handled one after the
 * other by the same pipeline (each checked), so state carried from one
 * request to the next can be found and reproduced from one file.
 * Correct signatures are computed here (signature_sign_standard) with a
 * fresh timestamp, so the fuzzer gets past the signature check.
 *
 * Asserted: the outcome is what the README's check order and outcome table
 * give for these inputs and backend answers (a path whose last segment names
 * a profile that is not enabled is a 404 before anything else); the
 * rendered status and headers match the table; the body is one JSON object
 * (json-c); a 200 only when a backend said inserted or duplicate; no backend
 * call before the signature and the body passed; every lock taken is
 * released; the payment stored is the body's, with the standard profile's
 * name and the webhook-id as its event id; the raw body stored is the bytes
 * received.
 */
#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "configuration.h"
#include "fuzz.h"
#include "payload.h"
#include "pipeline.h"
#include "request.h"
#include "response.h"
#include "signature.h"
#include "stub_backends.h"

extern char **environ;

#define SECRET_A "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SECRET_B "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define SECRET_C "whsec_c2VjcmV0LW5vdC1jb25maWd1cmVk" /* not configured */
#define HEADER_BYTES 6
#define VARIANTS 64
#define NEEDED_MS 5000L
#define SMALL_MAX_BODY 64
#define MARKER "\x00\xff\x00"
#define MARKER_LEN 3

enum media { MEDIA_GOOD, MEDIA_BAD, MEDIA_FIELD };

static const struct {
	const char *text;
	enum media media;
} content_types[16] = {
	{ "application/json", MEDIA_GOOD },
	{ "application/json; charset=utf-8", MEDIA_GOOD },
	{ "Application/JSON;Charset=\"UTF-8\"", MEDIA_GOOD },
	{ "APPLICATION/JSON;charset=UTF-8", MEDIA_GOOD },
	{ "text/plain", MEDIA_BAD },
	{ NULL, MEDIA_BAD },
	{ "", MEDIA_BAD },
	{ "application/json; charset=iso-8859-1", MEDIA_BAD },
	{ "application/jsonx", MEDIA_BAD },
	{ "application/json; charset=utf-8; boundary=x", MEDIA_BAD },
	{ "application/x-www-form-urlencoded", MEDIA_BAD },
	{ "application/*", MEDIA_BAD },
	{ "multipart/form-data", MEDIA_BAD },
	{ "application/json; charset=\"utf-8", MEDIA_BAD },
	{ "application/json; charset=utf-16", MEDIA_BAD },
	{ NULL, MEDIA_FIELD },
};

enum sign_mode {
	SIGN_NONE,        /* no webhook-* headers */
	SIGN_A,           /* key A, fresh */
	SIGN_B,           /* key B (rotation), fresh */
	SIGN_C,           /* a key that is not configured */
	SIGN_A_STALE,     /* key A, 1000 s old */
	SIGN_A_AHEAD,     /* key A, 100 s in the future */
	SIGN_FIELDS,      /* the three headers from the input: a forgery */
	SIGN_A_FIELD_ID,  /* key A, fresh, webhook-id from the input */
};

/* Where the request is sent: the path variables, and which profile that is
 * with the default providers = standard (PATH_FIELD: the model decides). */
enum route { ROUTE_STANDARD, ROUTE_NONE, ROUTE_MODEL };

#define PATH_FIELD 5

static const struct {
	const char *uri, *script_name, *path_info;
	enum route route;
} paths[8] = {
	{ "/webhook", NULL, NULL, ROUTE_STANDARD },
	{ "/webhook/standard/", NULL, NULL, ROUTE_STANDARD },
	{ "/webhook/stripe", NULL, NULL, ROUTE_NONE },
	{ "/hooks/paddle/?from=standard#x", NULL, NULL, ROUTE_NONE },
	{ NULL, "/payhook.fcgi", "/generic", ROUTE_NONE },
	{ NULL, NULL, NULL, ROUTE_MODEL }, /* REQUEST_URI from the input */
	{ "/stripe/webhook?to=/stripe", NULL, NULL, ROUTE_STANDARD },
	{ NULL, NULL, NULL, ROUTE_STANDARD }, /* no path at all */
};

/* Every provider profile's name (the providers key's documentation). */
static const char *const profile_names[] = {
	"standard", "stripe", "paddle", "razorpay", "komoju", "payjp",
	"square", "shopify", "adyen", "generic",
};

/* Whether a checked step passes, fails, or cannot be told beforehand (then
 * the actual outcome says which, and the rest is checked from there). */
enum verdict { PASS, FAIL, EITHER };

static struct config configs[VARIANTS];
static struct pipeline *pipelines[VARIANTS];
static struct signature_keyring *sign_rings[3]; /* one key each: A, B, C */
static bool trace_outcomes; /* FUZZ_TRACE set: one line per input */

static void free_all(void)
{
	for (size_t i = 0; i < VARIANTS; i++) {
		pipeline_free(pipelines[i]);
		pipelines[i] = NULL;
		config_cleanup(&configs[i]);
	}
	for (size_t i = 0; i < 3; i++) {
		signature_keyring_free(sign_rings[i]);
		sign_rings[i] = NULL;
	}
}

static void clear_payhook_env(void)
{
	char name[256];

	for (;;) {
		char **e;
		size_t n;

		for (e = environ; *e != NULL; e++)
			if (strncmp(*e, "PAYHOOK_", 8) == 0)
				break;
		if (*e == NULL)
			return;
		n = strcspn(*e, "=");
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
	char *secrets[3] = { SECRET_A, SECRET_B, SECRET_C };
	static const char *const levels[] = { "error", "warn", "info",
					      "debug" };
	const char *level = getenv("FUZZ_LOG");
	enum log_level threshold = LOG_LEVEL_ERROR;
	struct error err;

	(void)argc;
	(void)argv;
	trace_outcomes = getenv("FUZZ_TRACE") != NULL;
	clear_payhook_env();
	/* The pipeline logs a line per request; quiet unless asked. */
	for (int i = LOG_LEVEL_ERROR; level != NULL && i <= LOG_LEVEL_DEBUG; i++)
		if (strcmp(level, levels[i]) == 0)
			threshold = (enum log_level)i;
	log_init("payhook-fuzz", threshold);
	if (setenv("PAYHOOK_WEBHOOK_SECRET", SECRET_A " " SECRET_B, 1) != 0)
		FUZZ_FATAL("setenv failed");
	atexit(free_all);
	for (size_t i = 0; i < 3; i++) {
		sign_rings[i] = signature_keyring_new(&secrets[i], 1,
						      SECRET_WHSEC_BASE64, &err);
		if (sign_rings[i] == NULL)
			FUZZ_FATAL("secret %zu: %s", i, err.message);
	}
	return 0;
}

/* The pipeline for config variant v, made on first use. */
static struct pipeline *pipeline_for(unsigned v)
{
	struct config *cfg = &configs[v];
	struct error err;

	if (pipelines[v] != NULL)
		return pipelines[v];
	if (pipeline_load_config(cfg, NULL, &err) != 0)
		FUZZ_FATAL("config_load: %s", err.message);
	if ((v & 1u) != 0)
		cfg->signature_scheme = CONFIG_SIGNATURE_NONE;
	cfg->trim_transaction_id = (v & 2u) != 0;
	if ((v & 4u) != 0) {
		cfg->default_currency = strdup("EUR");
		if (cfg->default_currency == NULL)
			FUZZ_FATAL("out of memory");
	}
	cfg->in_progress_status = (v & 8u) != 0 ? 503 : 409;
	cfg->redis_unavailable = (v & 16u) != 0 ?
					 CONFIG_REDIS_UNAVAILABLE_FAIL :
					 CONFIG_REDIS_UNAVAILABLE_DB_ONLY;
	if ((v & 32u) != 0)
		cfg->max_body_bytes = SMALL_MAX_BODY;
	/* Half the variants keep what they ignore or refuse (inbox.h): the
	 * stub checks each kept delivery. */
	cfg->inbox_days = (v & 4u) != 0 ? 1 : 0;
	pipelines[v] = pipeline_new(cfg, &err);
	if (pipelines[v] == NULL)
		FUZZ_FATAL("pipeline_new: %s", err.message);
	return pipelines[v];
}

/* ---- input ---- */

struct cursor {
	const uint8_t *p;
	size_t left;
};

/* The next NUL-terminated field as a new C string ("" when the input ran
 * out). Freed by the caller. */
static char *take_field(struct cursor *c)
{
	const uint8_t *nul = c->left > 0 ? memchr(c->p, 0, c->left) : NULL;
	size_t n = nul != NULL ? (size_t)(nul - c->p) : c->left;
	char *s = malloc(n + 1);

	if (s == NULL)
		FUZZ_FATAL("out of memory");
	memcpy(s, c->p, n);
	s[n] = '\0';
	c->p += n;
	c->left -= n;
	if (nul != NULL) {
		c->p++;
		c->left--;
	}
	return s;
}

struct body_reader {
	const uint8_t *data;
	size_t len, pos;
	size_t chunk;      /* most bytes per call; 0: as many as asked */
	size_t fail_at;    /* reads at or past this offset fail */
	size_t declared;   /* CONTENT_LENGTH, to catch reads past it */
	int calls;
};

static long read_body(void *ctx, char *buf, size_t cap)
{
	struct body_reader *r = ctx;
	size_t n;

	r->calls++;
	FUZZ_CHECK(cap > 0, "read_body asked for 0 bytes");
	FUZZ_CHECK(r->pos + cap <= r->declared,
		   "read past CONTENT_LENGTH: at %zu asked %zu of %zu", r->pos,
		   cap, r->declared);
	if (r->pos >= r->fail_at)
		return -1;
	n = r->len - r->pos;
	if (n > cap)
		n = cap;
	if (r->chunk > 0 && n > r->chunk)
		n = r->chunk;
	memcpy(buf, r->data + r->pos, n);
	r->pos += n;
	return (long)n;
}

/* ---- the model: the README's contract, written apart from lib/ ---- */

/* Whether reading want (<= r->len) bytes hits the reader's failure, given
 * that each call asks for exactly what is still missing. */
static bool read_fails(const struct body_reader *r, size_t want)
{
	size_t pos = 0;

	while (pos < want) {
		size_t n = want - pos;

		if (pos >= r->fail_at)
			return true;
		if (r->chunk > 0 && n > r->chunk)
			n = r->chunk;
		pos += n;
	}
	return false;
}

static const struct {
	const char *name;
	int status; /* 0: in_progress_status */
} table[OUTCOME_COUNT] = {
	[OUTCOME_PROCESSED] = { "processed", 200 },
	[OUTCOME_DUPLICATE] = { "duplicate", 200 },
	[OUTCOME_IN_PROGRESS] = { "in_progress", 0 },
	[OUTCOME_CONFLICT] = { "conflict", 422 },
	[OUTCOME_INVALID] = { "invalid", 400 },
	[OUTCOME_UNAUTHORIZED] = { "unauthorized", 401 },
	[OUTCOME_METHOD_NOT_ALLOWED] = { "method_not_allowed", 405 },
	[OUTCOME_LENGTH_REQUIRED] = { "length_required", 411 },
	[OUTCOME_TOO_LARGE] = { "too_large", 413 },
	[OUTCOME_UNSUPPORTED_MEDIA_TYPE] = { "unsupported_media_type", 415 },
	[OUTCOME_UNAVAILABLE] = { "unavailable", 503 },
	[OUTCOME_ERROR] = { "error", 500 },
	[OUTCOME_IGNORED] = { "ignored", 200 },
	[OUTCOME_NOT_FOUND] = { "not_found", 404 },
};

static int expected_status(enum outcome o, const struct config *cfg)
{
	return table[o].status != 0 ? table[o].status : cfg->in_progress_status;
}

/* A store answer as an outcome. */
static enum outcome from_store(enum store_status st)
{
	switch (st) {
	case STORE_INSERTED:
		return OUTCOME_PROCESSED;
	case STORE_DUPLICATE:
		return OUTCOME_DUPLICATE;
	case STORE_CONFLICT:
		return OUTCOME_CONFLICT;
	case STORE_INVALID:
		return OUTCOME_INVALID;
	case STORE_RETRYABLE:
	case STORE_UNKNOWN_OUTCOME:
	case STORE_LEASE_EXPIRED:
	case STORE_UNAVAILABLE:
		return OUTCOME_UNAVAILABLE;
	case STORE_NOT_FOUND:
		break;
	}
	return OUTCOME_ERROR;
}

/* The backend part of the contract: lock, write (guarded by the lease),
 * busy -> look for the committed row, Redis down -> db_only or fail. */
static enum outcome expected_backend(const struct stub_script *s,
				     const struct config *cfg)
{
	if (s->connect_fails)
		return OUTCOME_UNAVAILABLE;
	switch (s->acquire) {
	case LOCK_ACQUIRED:
		if (s->lease_remaining_ms <= s->needed_ms)
			return OUTCOME_UNAVAILABLE;
		return from_store(s->insert);
	case LOCK_BUSY:
		if (s->find == STORE_NOT_FOUND)
			return OUTCOME_IN_PROGRESS;
		return from_store(s->find);
	case LOCK_UNAVAILABLE:
		break;
	}
	if (cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_FAIL)
		return OUTCOME_UNAVAILABLE;
	return from_store(s->insert);
}

/* CONTENT_LENGTH per the contract: absent, empty or not decimal -> 411; above the
 * cap -> 413. Returns the outcome, or -1 with *len set. */
static int expected_length(const char *text, size_t max, size_t *len)
{
	size_t v = 0;
	bool big = false;

	if (text == NULL || text[0] == '\0')
		return OUTCOME_LENGTH_REQUIRED;
	for (const char *c = text; *c != '\0'; c++)
		if (!isdigit((unsigned char)*c))
			return OUTCOME_LENGTH_REQUIRED;
	for (const char *c = text; *c != '\0' && !big; c++) {
		if (v > (SIZE_MAX - 9) / 10)
			big = true;
		else
			v = v * 10 + (size_t)(*c - '0');
	}
	if (big || v > max)
		return OUTCOME_TOO_LARGE;
	*len = v;
	return -1;
}

/* Anything the pipeline accepts as JSON must be application/json with at
 * most charset=utf-8, once case and blanks are set aside. */
static bool plausible_json_type(const char *text)
{
	char norm[128];
	size_t n = 0;

	for (const char *c = text; *c != '\0'; c++) {
		if (*c == ' ' || *c == '\t')
			continue;
		if (n + 1 >= sizeof(norm))
			return false;
		norm[n++] = (char)tolower((unsigned char)*c);
	}
	norm[n] = '\0';
	return strcmp(norm, "application/json") == 0 ||
	       strcmp(norm, "application/json;charset=utf-8") == 0 ||
	       strcmp(norm, "application/json;charset=\"utf-8\"") == 0;
}

static bool visible_id(const char *id, size_t max)
{
	size_t i;

	for (i = 0; id[i] != '\0'; i++)
		if (i >= max || (unsigned char)id[i] < 0x21 ||
		    (unsigned char)id[i] > 0x7E)
			return false;
	return i > 0;
}

/* Whether a request to REQUEST_URI uri (no other path variable) reaches the
 * standard profile with providers = standard: the path's last segment
 * (before any query or fragment, trailing slashes ignored, "" when longer
 * than a profile name can be) must not name another profile. */
static bool routes_to_standard(const char *uri)
{
	size_t end = strcspn(uri, "?#"), start;

	while (end > 0 && uri[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && uri[start - 1] != '/')
		start--;
	if (end - start > REQUEST_SEGMENT_MAX)
		return true;
	for (size_t i = 0; i < sizeof(profile_names) / sizeof(profile_names[0]);
	     i++)
		if (strlen(profile_names[i]) == end - start &&
		    memcmp(profile_names[i], uri + start, end - start) == 0)
			return i == 0;
	return true;
}

/* The CGI variables of one request, "NAME=value", NULL-terminated. */
struct params {
	char *items[16];
	size_t count;
};

static void param_set(struct params *ps, const char *name, const char *value)
{
	size_t n;

	if (value == NULL)
		return;
	if (ps->count + 1 >= sizeof(ps->items) / sizeof(ps->items[0]))
		FUZZ_FATAL("too many CGI variables");
	n = strlen(name) + strlen(value) + 2;
	ps->items[ps->count] = malloc(n);
	if (ps->items[ps->count] == NULL)
		FUZZ_FATAL("out of memory");
	snprintf(ps->items[ps->count], n, "%s=%s", name, value);
	ps->items[++ps->count] = NULL;
}

static void params_free(struct params *ps)
{
	for (size_t i = 0; i < ps->count; i++)
		free(ps->items[i]);
	ps->count = 0;
	ps->items[0] = NULL;
}

/* ---- checks on what comes out ---- */

/* The CGI response: status line and headers of the table, JSON body. */
static void check_rendered(const struct result *r, const struct config *cfg)
{
	char buf[RESPONSE_BUFFER_SIZE];
	char want[64];
	struct error err = { "" };
	const char *body, *line, *end;
	bool retry_after = false, allow = false;
	struct json_tokener *tok;
	struct json_object *obj, *v;
	size_t body_len;
	int status = expected_status(r->outcome, cfg);
	long n = response_render(r, cfg, buf, sizeof(buf), &err);

	FUZZ_CHECK(n > 0 && (size_t)n < sizeof(buf) && buf[n] == '\0',
		   "response_render: %ld (%s)", n, err.message);
	FUZZ_CHECK(strlen(buf) == (size_t)n, "NUL inside the response");
	snprintf(want, sizeof(want), "Status: %d ", status);
	FUZZ_CHECK(strncmp(buf, want, strlen(want)) == 0,
		   "outcome %s rendered as \"%.20s\", want %d",
		   table[r->outcome].name, buf, status);
	body = strstr(buf, "\r\n\r\n");
	FUZZ_CHECK(body != NULL, "no blank line after the headers");
	for (line = buf; line < body; line = end + 2) {
		end = strstr(line, "\r\n");
		for (const char *c = line; c < end; c++)
			FUZZ_CHECK(*c != '\r' && *c != '\n' &&
				   (unsigned char)*c >= 0x20,
				   "control byte in a header line");
		if (strncmp(line, "Retry-After: ", 13) == 0)
			retry_after = true;
		if (strncmp(line, "Allow: POST\r\n", 13) == 0)
			allow = true;
	}
	FUZZ_CHECK(retry_after == (r->outcome == OUTCOME_IN_PROGRESS ||
				   r->outcome == OUTCOME_UNAVAILABLE),
		   "Retry-After %s for %s", retry_after ? "sent" : "missing",
		   table[r->outcome].name);
	FUZZ_CHECK(allow == (r->outcome == OUTCOME_METHOD_NOT_ALLOWED),
		   "Allow %s for %s", allow ? "sent" : "missing",
		   table[r->outcome].name);

	body += 4;
	body_len = strlen(body);
	FUZZ_CHECK(body_len > 1 && body[body_len - 1] == '\n',
		   "body does not end with a newline");
	tok = json_tokener_new();
	if (tok == NULL)
		FUZZ_FATAL("out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
				    JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, body, (int)body_len - 1);
	FUZZ_CHECK(obj != NULL &&
		   json_tokener_get_parse_end(tok) == body_len - 1,
		   "response body is not one JSON value: %s", body);
	json_tokener_free(tok);
	FUZZ_CHECK(json_object_is_type(obj, json_type_object),
		   "response body is not an object");
	FUZZ_CHECK(json_object_object_get_ex(obj, "result", &v) &&
		   json_object_is_type(v, json_type_string) &&
		   strcmp(json_object_get_string(v),
			  table[r->outcome].name) == 0,
		   "result is not \"%s\": %s", table[r->outcome].name, body);
	if (r->transaction_id[0] != '\0')
		FUZZ_CHECK(json_object_object_get_ex(obj, "transaction_id",
						     &v) &&
			   strcmp(json_object_get_string(v),
				  r->transaction_id) == 0,
			   "transaction_id missing or changed: %s", body);
	else
		FUZZ_CHECK(!json_object_object_get_ex(obj, "transaction_id",
						      NULL),
			   "transaction_id without one known: %s", body);
	if (r->outcome != OUTCOME_PROCESSED && r->outcome != OUTCOME_DUPLICATE &&
	    r->outcome != OUTCOME_IGNORED)
		FUZZ_CHECK(json_object_object_get_ex(obj, "reason", &v) &&
			   json_object_get_string_len(v) > 0,
			   "error without a reason: %s", body);
	json_object_put(obj);
}

/* Puts "<sep>v1,..." style entries around sig when decorate is set. */
static void signature_header(char *out, size_t cap, const char *sig,
			     bool decorate)
{
	if (decorate)
		snprintf(out, cap, "v2,Zm9v v1,AAAA  %s v1a,x", sig);
	else
		snprintf(out, cap, "%s", sig);
}

/* One request, checked. */
static void run_request(const uint8_t *data, size_t size)
{
	static const char *const methods[8] = {
		"POST", "POST", "POST", "POST", "GET", NULL, "post", "PUT",
	};
	static const enum store_status inserts[8] = {
		STORE_INSERTED, STORE_DUPLICATE, STORE_CONFLICT,
		STORE_RETRYABLE, STORE_UNKNOWN_OUTCOME, STORE_UNAVAILABLE,
		STORE_INSERTED, STORE_LEASE_EXPIRED,
	};
	static const enum store_status finds[4] = {
		STORE_DUPLICATE, STORE_CONFLICT, STORE_NOT_FOUND,
		STORE_UNAVAILABLE,
	};
	static const enum lock_status locks[4] = {
		LOCK_ACQUIRED, LOCK_ACQUIRED, LOCK_BUSY, LOCK_UNAVAILABLE,
	};
	static const long leases[4] = { 30000, NEEDED_MS, -5, 10000 };
	char *ct_field = NULL, *cl_field = NULL, *id_field = NULL;
	char *ts_field = NULL, *sig_field = NULL, *uri_field = NULL;
	char cl_text[48], ts_text[32], sig[SIGNATURE_TEXT_MAX], sig_hdr[160];
	const char *method, *content_type, *content_length;
	const char *hdr_id = NULL, *hdr_ts = NULL, *hdr_sig = NULL;
	const char *event_id = "";
	struct stub_script script;
	struct body_reader reader;
	struct params params = { { NULL }, 0 };
	struct request req;
	struct result r;
	struct payment pay;
	struct error err, why;
	const struct stub_trace *tr;
	const struct config *cfg;
	struct payload_parser *parser;
	struct pipeline *p;
	struct cursor cur;
	enum sign_mode mode;
	enum payload_status pst = PAYLOAD_INVALID;
	enum verdict media, sig_ok = PASS;
	enum outcome expect;
	enum route route;
	const char *signed_id = "msg_fuzz";
	unsigned variant, cl_mode, delta, path, key = 0;
	size_t declared = 0, signed_len = 0;
	bool reached_body = false;
	time_t now;
	int st;

	if (size < HEADER_BYTES)
		return;
	variant = ((data[3] & 1u) ? 1u : 0) | ((data[1] >> 4) & 1u) << 1 |
		  ((data[1] >> 5) & 1u) << 2 | ((data[1] >> 6) & 1u) << 3 |
		  ((data[1] >> 7) & 1u) << 4 | ((data[3] >> 5) & 1u) << 5;
	p = pipeline_for(variant);
	cfg = &configs[variant];
	mode = (enum sign_mode)((data[3] >> 1) & 7u);
	cl_mode = data[2] & 7u;
	delta = 1 + (data[2] >> 3);
	path = (data[0] >> 5) & 7u;

	cur.p = data + HEADER_BYTES;
	cur.left = size - HEADER_BYTES;
	if (content_types[data[1] & 15u].media == MEDIA_FIELD)
		ct_field = take_field(&cur);
	if (cl_mode == 5)
		cl_field = take_field(&cur);
	if (mode == SIGN_FIELDS) {
		id_field = take_field(&cur);
		ts_field = take_field(&cur);
		sig_field = take_field(&cur);
	} else if (mode == SIGN_A_FIELD_ID) {
		id_field = take_field(&cur);
	}
	if (path == PATH_FIELD)
		uri_field = take_field(&cur);

	method = methods[data[0] & 7u];
	content_type = ct_field != NULL ? ct_field :
					  content_types[data[1] & 15u].text;
	switch (cl_mode) {
	case 0:
		snprintf(cl_text, sizeof(cl_text), "%zu", cur.left);
		break;
	case 1:
		snprintf(cl_text, sizeof(cl_text), "%zu",
			 cur.left >= delta ? cur.left - delta : 0);
		break;
	case 2:
		snprintf(cl_text, sizeof(cl_text), "%zu", cur.left + delta);
		break;
	case 6:
		snprintf(cl_text, sizeof(cl_text), "184467440737095516160");
		break;
	case 7:
		snprintf(cl_text, sizeof(cl_text), "%zu",
			 cfg->max_body_bytes + delta);
		break;
	default:
		cl_text[0] = '\0';
		break;
	}
	content_length = cl_mode == 3 ? NULL : cl_mode == 5 ? cl_field : cl_text;

	/* What is signed is what the pipeline will read: at most
	 * CONTENT_LENGTH bytes of the body. */
	if (expected_length(content_length, SIZE_MAX, &signed_len) >= 0 ||
	    signed_len > cur.left)
		signed_len = cur.left;
	now = time(NULL);
	snprintf(ts_text, sizeof(ts_text), "%lld",
		 (long long)now + (mode == SIGN_A_STALE ? -1000 :
				   mode == SIGN_A_AHEAD ? 100 : 0));
	switch (mode) {
	case SIGN_NONE:
		sig_ok = FAIL;
		break;
	case SIGN_FIELDS:
		hdr_id = id_field;
		hdr_ts = ts_field;
		hdr_sig = sig_field;
		sig_ok = FAIL; /* nobody can forge HMAC-SHA256 */
		break;
	default:
		key = mode == SIGN_B ? 1 : mode == SIGN_C ? 2 : 0;
		if (mode == SIGN_A_FIELD_ID)
			signed_id = id_field;
		if (signature_sign_standard(sign_rings[key], signed_id, ts_text,
					    cur.p, signed_len, sig, &err) != 0)
			FUZZ_FATAL("signature_sign_standard: %s", err.message);
		signature_header(sig_hdr, sizeof(sig_hdr), sig,
				 (data[3] & 16u) != 0);
		hdr_id = signed_id;
		hdr_ts = ts_text;
		hdr_sig = sig_hdr;
		sig_ok = (mode == SIGN_C || mode == SIGN_A_STALE) ? FAIL : PASS;
		/* The webhook-id rule: 1-255 visible ASCII bytes. */
		if (mode == SIGN_A_FIELD_ID &&
		    !visible_id(signed_id, SIGNATURE_ID_MAX))
			sig_ok = FAIL;
		break;
	}
	if (cfg->signature_scheme == CONFIG_SIGNATURE_NONE)
		sig_ok = PASS;

	param_set(&params, "GATEWAY_INTERFACE", "CGI/1.1");
	param_set(&params, "REQUEST_METHOD", method);
	param_set(&params, "CONTENT_TYPE", content_type);
	param_set(&params, "CONTENT_LENGTH", content_length);
	param_set(&params, "HTTP_WEBHOOK_ID", hdr_id);
	param_set(&params, "HTTP_WEBHOOK_TIMESTAMP", hdr_ts);
	param_set(&params, "HTTP_WEBHOOK_SIGNATURE", hdr_sig);
	param_set(&params, "REQUEST_URI",
		  path == PATH_FIELD ? uri_field : paths[path].uri);
	param_set(&params, "SCRIPT_NAME", paths[path].script_name);
	param_set(&params, "PATH_INFO", paths[path].path_info);
	route = paths[path].route;
	if (route == ROUTE_MODEL)
		route = routes_to_standard(uri_field) ? ROUTE_STANDARD
						      : ROUTE_NONE;

	memset(&reader, 0, sizeof(reader));
	reader.data = cur.p;
	reader.len = cur.left;
	reader.chunk = ((data[0] >> 3) & 3u) == 1 ? 1 :
		       ((data[0] >> 3) & 3u) >= 2 ? 7 : 0;
	reader.fail_at = ((data[0] >> 3) & 3u) == 3 ? cur.left / 2 : SIZE_MAX;
	memset(&req, 0, sizeof(req));
	req.params = params.items;
	req.read_body = read_body;
	req.read_ctx = &reader;

	memset(&script, 0, sizeof(script));
	script.connect_fails = (data[4] & 128u) != 0;
	script.acquire = locks[data[4] & 3u];
	script.insert = inserts[(data[4] >> 2) & 7u];
	script.find = finds[(data[4] >> 5) & 3u];
	script.release = (enum lock_release_status)(data[5] & 3u);
	script.lease_remaining_ms = leases[(data[5] >> 2) & 3u];
	script.needed_ms = NEEDED_MS;
	stub_reset(&script);
	reader.declared = SIZE_MAX;
	if (expected_length(content_length, cfg->max_body_bytes, &declared) < 0)
		reader.declared = declared;

	memset(&r, 0x5A, sizeof(r));
	pipeline_test_handle(p, &req, &r);
	tr = stub_trace();
	if (trace_outcomes)
		fprintf(stderr, "fuzz_request: %s (%s) transaction_id=\"%s\"\n",
			response_outcome_name(r.outcome), r.reason, r.transaction_id);

	/* Shape of the result itself. */
	FUZZ_CHECK((unsigned)r.outcome < OUTCOME_COUNT, "outcome %d",
		   (int)r.outcome);
	FUZZ_CHECK(memchr(r.transaction_id, 0, sizeof(r.transaction_id)) &&
		   memchr(r.reason, 0, sizeof(r.reason)),
		   "result strings not NUL-terminated");
	FUZZ_CHECK(r.outcome != OUTCOME_ERROR,
		   "500 (a bug, never input or backend): %s", r.reason);
	/* Only Adyen answers with a body of its own. */
	FUZZ_CHECK(r.success_body == NULL, "success body for the standard "
		   "profile");
	check_rendered(&r, cfg);
	/* The inbox (the variants with inbox_days) keeps exactly the answers
	 * 200 ignored and 401 on a path that names a profile, once each. */
	FUZZ_CHECK(tr->inbox_kept ==
			   (cfg->inbox_days > 0 && route != ROUTE_NONE &&
					    (r.outcome == OUTCOME_IGNORED ||
					     r.outcome == OUTCOME_UNAUTHORIZED) ?
				    1 : 0),
		   "inbox: %d kept for %s", tr->inbox_kept,
		   response_outcome_name(r.outcome));
	FUZZ_CHECK(tr->held == 0 && tr->bad_release == 0,
		   "locks left held %d, bad releases %d", tr->held,
		   tr->bad_release);
	if (expected_status(r.outcome, cfg) / 100 == 2)
		FUZZ_CHECK(tr->committed,
			   "2xx (%s) without a committed row",
			   table[r.outcome].name);

	/* The model, step by step in the contract's order: the path first. */
	if (route == ROUTE_NONE) {
		expect = OUTCOME_NOT_FOUND;
		goto compare;
	}
	if (method == NULL || strcmp(method, "POST") != 0) {
		expect = OUTCOME_METHOD_NOT_ALLOWED;
		goto compare;
	}
	st = expected_length(content_length, cfg->max_body_bytes, &declared);
	if (st >= 0) {
		expect = (enum outcome)st;
		goto compare;
	}
	media = content_types[data[1] & 15u].media == MEDIA_GOOD ? PASS :
		content_types[data[1] & 15u].media == MEDIA_BAD ? FAIL : EITHER;
	if (media == EITHER)
		media = r.outcome == OUTCOME_UNSUPPORTED_MEDIA_TYPE ? FAIL : PASS;
	if (media == FAIL) {
		expect = OUTCOME_UNSUPPORTED_MEDIA_TYPE;
		goto compare;
	}
	if (ct_field != NULL)
		FUZZ_CHECK(plausible_json_type(ct_field),
			   "accepted Content-Type \"%s\"", ct_field);
	if (declared > cur.left || read_fails(&reader, declared)) {
		expect = OUTCOME_INVALID; /* body shorter than it says */
		goto compare;
	}
	if (sig_ok == FAIL) {
		expect = OUTCOME_UNAUTHORIZED;
		goto compare;
	}
	reached_body = true;
	/* A parser of its own, fresh for each body: the pipeline's answer
	 * must not depend on earlier requests. */
	parser = payload_parser_new();
	if (parser == NULL)
		FUZZ_FATAL("out of memory");
	pst = payload_parse(parser, (const char *)cur.p, declared,
			    &(struct payload_rules){ cfg->default_currency,
						     cfg->trim_transaction_id },
			    &pay, &why);
	payload_parser_free(parser);
	FUZZ_CHECK(pst != PAYLOAD_ERROR, "payload_parse: %s", why.message);
	if (pst == PAYLOAD_INVALID) {
		expect = OUTCOME_INVALID;
		FUZZ_CHECK(strcmp(r.transaction_id,
				  pay.transaction_id_len > 0 ?
					  pay.transaction_id : "") == 0,
			   "invalid body named \"%s\", want \"%s\"",
			   r.transaction_id, pay.transaction_id);
		goto compare;
	}
	/* The standard profile's event id is the webhook-id header, when
	 * there is one: 1-255 visible ASCII bytes (only a request that is not
	 * signed can carry another). */
	event_id = hdr_id != NULL ? hdr_id : "";
	if (event_id[0] != '\0' && !visible_id(event_id, PAYMENT_EVENT_ID_MAX)) {
		pst = PAYLOAD_INVALID;
		expect = OUTCOME_INVALID;
		FUZZ_CHECK(strcmp(r.transaction_id, pay.transaction_id) == 0,
			   "bad event id, named \"%s\", want \"%s\"",
			   r.transaction_id, pay.transaction_id);
		goto compare;
	}
	expect = expected_backend(&script, cfg);
	FUZZ_CHECK(strcmp(r.transaction_id, pay.transaction_id) == 0,
		   "result names \"%s\", body \"%s\"", r.transaction_id,
		   pay.transaction_id);
compare:
	FUZZ_CHECK(r.outcome == expect,
		   "outcome %s (%s), the contract says %s", table[r.outcome].name,
		   r.reason, table[expect].name);

	/* Nothing reaches a backend before the signature and body passed. */
	if (!reached_body || pst != PAYLOAD_VALID) {
		FUZZ_CHECK(tr->acquires == 0 && tr->inserts == 0 &&
			   tr->finds == 0,
			   "backend called for a request refused up front");
	} else {
		FUZZ_CHECK(tr->inserts + tr->finds + (script.connect_fails ? 1 : 0) > 0 ||
			   (script.acquire == LOCK_UNAVAILABLE &&
			    cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_FAIL),
			   "valid request never reached the store");
		if (tr->acquires > 0) {
			FUZZ_CHECK(strcmp(tr->lock_id, pay.transaction_id) == 0,
				   "locked \"%s\" for \"%s\"", tr->lock_id,
				   pay.transaction_id);
			/* The standard profile locks by transaction id alone
			 * or scoped by its own name, never another's. */
			FUZZ_CHECK(tr->lock_scope_null ||
				   strcmp(tr->lock_scope, "standard") == 0,
				   "standard request locked in scope \"%s\"",
				   tr->lock_scope);
		}
		if (tr->inserts > 0) {
			FUZZ_CHECK(tr->inserted.amount == pay.amount &&
				   strcmp(tr->inserted.transaction_id,
					  pay.transaction_id) == 0 &&
				   strcmp(tr->inserted.currency,
					  pay.currency) == 0,
				   "stored another payment than the body's");
			FUZZ_CHECK(strcmp(tr->inserted.provider, "standard") == 0,
				   "stored for provider \"%s\"",
				   tr->inserted.provider);
			FUZZ_CHECK(strcmp(tr->inserted.event_id, event_id) == 0,
				   "stored event id \"%s\", webhook-id \"%s\"",
				   tr->inserted.event_id, event_id);
			FUZZ_CHECK(tr->payload_len == declared &&
				   !tr->payload_truncated &&
				   memcmp(tr->payload, cur.p, declared) == 0,
				   "stored payload is not the raw body");
			/* Under the Redis lock every write has a guard: the
			 * lease's, or (db_only, Redis down) one that refuses
			 * an event before its payment. */
			FUZZ_CHECK(tr->insert_guarded,
				   "guard missing with lock %d",
				   (int)script.acquire);
		}
	}
	if (r.outcome == OUTCOME_NOT_FOUND ||
	    r.outcome == OUTCOME_METHOD_NOT_ALLOWED ||
	    r.outcome == OUTCOME_LENGTH_REQUIRED ||
	    r.outcome == OUTCOME_TOO_LARGE ||
	    r.outcome == OUTCOME_UNSUPPORTED_MEDIA_TYPE)
		FUZZ_CHECK(reader.calls == 0, "body read for a %s",
			   table[r.outcome].name);

	params_free(&params);
	free(ct_field);
	free(cl_field);
	free(id_field);
	free(ts_field);
	free(sig_field);
	free(uri_field);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *marker = memmem(data, size, MARKER, MARKER_LEN);

	/* An earlier request on the same worker first, when marked. */
	if (marker != NULL) {
		run_request(data, (size_t)(marker - data));
		size -= (size_t)(marker - data) + MARKER_LEN;
		data = marker + MARKER_LEN;
	}
	run_request(data, size);
	return 0;
}
