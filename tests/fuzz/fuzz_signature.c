/* fuzz_signature.c - libFuzzer target for the signature schemes
 * (signature_verify_standard, _stripe, _paddle, _digest, _token) and
 * secret_decode: the headers and the body as a stranger sends them, checked
 * against two configured secrets at a fixed now.
 *
 * Input: byte 0 is flags, the rest is split at the first three 0x00 bytes
 * into three fields and the body (the remainder, NULs and all); a field the
 * input runs out before is absent (NULL).
 *   bits 0-1: tolerance 300, 300, 0, LONG_MAX
 *   bits 2-3: with scheme 3: 0 a hex digest, 1 a base64 digest, 2 and 3 a
 *             static token
 *   bits 4-5: now 1614265330 (twice), 0, -1
 *   bits 6-7: scheme: 0 Standard Webhooks, 1 Stripe, 2 Paddle, 3 one header
 * The fields, by scheme:
 *   Standard    webhook-id, webhook-timestamp, webhook-signature
 *   Stripe      (unused), the timestamp "$A" signs, Stripe-Signature
 *   Paddle      (unused), the timestamp "$A" signs, Paddle-Signature
 *   digest      the prefix (empty: none), a text signed before the body
 *               (as Square's URL), the signature header
 *   token       (unused), (unused), the token header
 * In the signature header "$A" and "$B" are replaced by what the scheme
 * wants for secret A or B: the base64 HMAC of "<id>.<timestamp>.<body>"
 * (Standard), the hex HMAC of "<timestamp>.<body>" (Stripe) or
 * "<timestamp>:<body>" (Paddle), the HMAC of "<text><body>" in the digest's
 * encoding, or the secret itself (token); "$a" and "$b" give hex in upper
 * case. So the fuzzer can build correctly signed requests and mutate around
 * them. The first field is also decoded as a secret in every form.
 *
 * Invariant above all: SIGNATURE_VALID only when the header holds exactly
 * what one configured key signs (never accept a forgery), checked here with
 * a one-shot HMAC and parsers of our own; a key equal to a configured one up
 * to trailing zero bytes is the same HMAC key.
 */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fuzz.h"
#include "secret.h"
#include "signature.h"

/* Standard Webhooks secrets (whsec_ + base64). */
#define SECRET_A "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SECRET_B "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
/* The other schemes take their secrets as text: the same two strings. */
#define NOW_FIXED ((time_t)1614265330)
#define MAC_LEN 32
#define MAC_B64 44
#define MAC_HEX 64
#define TEXT_MAX (MAC_HEX + 1)
#define DIGEST_MISSING "fuzz: signature header missing"
#define TOKEN_MISSING "fuzz: token header missing"

enum scheme { STANDARD, STRIPE, PADDLE, DIGEST_HEX, DIGEST_BASE64, TOKEN };

static const char *const secret_text[2] = { SECRET_A, SECRET_B };
static struct signature_keyring *ring_whsec; /* A and B, whsec_ form */
static struct signature_keyring *ring_text;  /* A and B, as text */
static struct secret_key whsec_keys[2];
static bool trace_results; /* FUZZ_TRACE set: one line per input */

static void free_rings(void)
{
	signature_keyring_free(ring_whsec);
	signature_keyring_free(ring_text);
	ring_whsec = ring_text = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *secrets[] = { SECRET_A, SECRET_B };
	struct error err;

	(void)argc;
	(void)argv;
	trace_results = getenv("FUZZ_TRACE") != NULL;
	ring_whsec = signature_keyring_new(secrets, 2, SECRET_WHSEC_BASE64,
					   &err);
	if (ring_whsec == NULL)
		FUZZ_FATAL("signature_keyring_new: %s", err.message);
	ring_text = signature_keyring_new(secrets, 2, SECRET_TEXT, &err);
	if (ring_text == NULL)
		FUZZ_FATAL("signature_keyring_new (text): %s", err.message);
	atexit(free_rings);
	for (size_t i = 0; i < 2; i++)
		if (secret_decode(SECRET_WHSEC_BASE64, secrets[i],
				  &whsec_keys[i], &err) != 0)
			FUZZ_FATAL("secret_decode: %s", err.message);
	return 0;
}

/* The next field: up to the next 0x00, or NULL when the input ended. The
 * returned copy is NUL-terminated and freed by the caller. */
static char *take_field(const uint8_t **p, size_t *left)
{
	const uint8_t *nul;
	size_t n;
	char *s;

	if (*left == 0)
		return NULL;
	nul = memchr(*p, 0, *left);
	n = nul != NULL ? (size_t)(nul - *p) : *left;
	s = malloc(n + 1);
	if (s == NULL)
		FUZZ_FATAL("out of memory");
	memcpy(s, *p, n);
	s[n] = '\0';
	*p += n;
	*left -= n;
	if (nul != NULL) {
		(*p)++;
		(*left)--;
	}
	return s;
}

/* ---- what the right signatures are, computed here ---- */

struct piece {
	const void *data;
	size_t len;
};

/* One-shot HMAC-SHA256 of the concatenated pieces under key. */
static void hmac_of(const unsigned char *key, size_t key_len,
		    const struct piece *pieces, size_t count,
		    unsigned char mac[MAC_LEN])
{
	unsigned char out[EVP_MAX_MD_SIZE];
	unsigned int out_len = 0;
	size_t n = 0, o = 0;
	unsigned char *msg;

	for (size_t i = 0; i < count; i++)
		n += pieces[i].len;
	msg = malloc(n > 0 ? n : 1);
	if (msg == NULL)
		FUZZ_FATAL("out of memory");
	for (size_t i = 0; i < count; i++) {
		if (pieces[i].len > 0)
			memcpy(msg + o, pieces[i].data, pieces[i].len);
		o += pieces[i].len;
	}
	if (HMAC(EVP_sha256(), key, (int)key_len, msg, n, out, &out_len) ==
	    NULL)
		FUZZ_FATAL("HMAC failed");
	free(msg);
	FUZZ_CHECK(out_len == MAC_LEN, "HMAC length %u", out_len);
	memcpy(mac, out, MAC_LEN);
}

/* Key k of the scheme's ring, as bytes. */
static void key_of(enum scheme s, size_t k, const unsigned char **key,
		   size_t *len)
{
	if (s == STANDARD) {
		*key = whsec_keys[k].bytes;
		*len = whsec_keys[k].len;
	} else {
		*key = (const unsigned char *)secret_text[k];
		*len = strlen(secret_text[k]);
	}
}

static void hex_of(const unsigned char mac[MAC_LEN], bool upper, char *out)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";

	for (size_t i = 0; i < MAC_LEN; i++) {
		out[2 * i] = digits[mac[i] >> 4];
		out[2 * i + 1] = digits[mac[i] & 15];
	}
	out[MAC_HEX] = '\0';
}

static void base64_of(const unsigned char mac[MAC_LEN], char *out)
{
	EVP_EncodeBlock((unsigned char *)out, mac, MAC_LEN);
}

/* The MAC key k makes over pieces, cross-checked against the keyring's own
 * computation (signature_keyring_mac). */
static void expected_mac(enum scheme s, size_t k, const struct piece *pieces,
			 size_t count, unsigned char mac[MAC_LEN])
{
	const struct signature_keyring *ring = s == STANDARD ? ring_whsec
							     : ring_text;
	struct signature_part parts[4];
	unsigned char theirs[SIGNATURE_MAC_LEN];
	const unsigned char *key;
	size_t key_len;

	key_of(s, k, &key, &key_len);
	hmac_of(key, key_len, pieces, count, mac);
	for (size_t i = 0; i < count; i++) {
		parts[i].data = pieces[i].data;
		parts[i].len = pieces[i].len;
	}
	FUZZ_CHECK(signature_keyring_mac(ring, k, parts, count, theirs) == 0,
		   "signature_keyring_mac failed");
	FUZZ_CHECK(memcmp(mac, theirs, MAC_LEN) == 0,
		   "signature_keyring_mac disagrees with HMAC()");
}

/* signature_sign_standard's "v1,<b64>" for key k, cross-checked against a
 * one-shot HMAC. */
static void standard_signature(size_t k, const char *id, const char *ts,
			       const void *body, size_t body_len,
			       char out[SIGNATURE_TEXT_MAX])
{
	char *secrets[1] = { (char *)secret_text[k] };
	const struct piece pieces[] = {
		{ id, strlen(id) }, { ".", 1 }, { ts, strlen(ts) }, { ".", 1 },
		{ body, body_len },
	};
	struct signature_keyring *one;
	unsigned char mac[MAC_LEN];
	char b64[MAC_B64 + 1];
	struct error err;

	/* The ring signs with its first key: a ring of key k alone. */
	one = signature_keyring_new(secrets, 1, SECRET_WHSEC_BASE64, &err);
	if (one == NULL)
		FUZZ_FATAL("signature_keyring_new: %s", err.message);
	FUZZ_CHECK(signature_sign_standard(one, id, ts, body, body_len, out,
					   &err) == 0,
		   "signature_sign_standard failed: %s", err.message);
	signature_keyring_free(one);
	hmac_of(whsec_keys[k].bytes, whsec_keys[k].len, pieces, 5, mac);
	base64_of(mac, b64);
	FUZZ_CHECK(strncmp(out, "v1,", 3) == 0 && strcmp(out + 3, b64) == 0,
		   "signature_sign_standard disagrees with HMAC(): %s vs v1,%s",
		   out, b64);
}

/* The header with every "$A"/"$B" ("$a"/"$b") replaced by subst[k][0]
 * ([k][1]). */
static char *substitute(const char *header, char subst[2][2][TEXT_MAX])
{
	size_t n = strlen(header), longest = 0;
	char *out;
	size_t o = 0;

	for (size_t k = 0; k < 2; k++)
		for (size_t c = 0; c < 2; c++)
			if (strlen(subst[k][c]) > longest)
				longest = strlen(subst[k][c]);
	out = malloc(n * (longest / 2 + 1) + 1);
	if (out == NULL)
		FUZZ_FATAL("out of memory");
	for (size_t i = 0; i < n; i++) {
		char c = header[i + 1];

		if (header[i] == '$' && (c == 'A' || c == 'B' || c == 'a' ||
					 c == 'b')) {
			const char *s = subst[c == 'A' || c == 'a' ? 0 : 1]
					     [c == 'a' || c == 'b'];

			memcpy(out + o, s, strlen(s));
			o += strlen(s);
			i++;
		} else {
			out[o++] = header[i];
		}
	}
	out[o] = '\0';
	return out;
}

/* ---- our own reading of the headers ---- */

static bool visible_ascii(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (i >= max || (unsigned char)s[i] < 0x21 ||
		    (unsigned char)s[i] > 0x7E)
			return false;
	return i > 0;
}

/* Parses 1..19 digits of s[0..n). Returns false for anything else. */
static bool digits_value(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 19)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

/* |ts - now| <= tolerance, exactly (tolerance below 0 counts as 0). */
static bool within(uint64_t ts, long long now, long tolerance)
{
	uint64_t tol = tolerance > 0 ? (uint64_t)tolerance : 0;

	if (now >= 0) {
		uint64_t n = (uint64_t)now;

		return (ts > n ? ts - n : n - ts) <= tol;
	}
	/* ts >= 0 > now: the distance is ts + |now|. */
	return ts <= tol && (uint64_t)0 - (uint64_t)now <= tol - ts;
}

/* One item of a list header: text[0..len). */
struct item {
	const char *text;
	size_t len;
};

#define ITEMS_MAX 64

/* Splits header into items at sep (white space and empty items around
 * them dropped). Returns the number of items, at most ITEMS_MAX (more are
 * not kept; *more says so). */
static size_t split_items(const char *header, char sep, struct item *items,
			  bool *more)
{
	size_t n = 0;
	const char *p = header;

	*more = false;
	for (;;) {
		const char *start, *end;

		while (*p == ' ' || *p == sep)
			p++;
		if (*p == '\0')
			break;
		start = p;
		while (*p != '\0' && *p != sep)
			p++;
		end = p;
		while (end > start && end[-1] == ' ')
			end--;
		if (n == ITEMS_MAX) {
			*more = true;
			break;
		}
		items[n].text = start;
		items[n].len = (size_t)(end - start);
		n++;
	}
	return n;
}

/* Whether item is "<name><kv><value>" with this name; *value gets the rest. */
static bool item_named(const struct item *it, const char *name, char kv,
		       struct item *value)
{
	size_t n = strlen(name);

	if (it->len <= n || memcmp(it->text, name, n) != 0 || it->text[n] != kv)
		return false;
	value->text = it->text + n + 1;
	value->len = it->len - n - 1;
	return true;
}

/* Whether text[0..len) is the hex of mac, in either case. */
static bool is_hex_of(const char *text, size_t len,
		      const unsigned char mac[MAC_LEN])
{
	char lower[MAC_HEX + 1];

	if (len != MAC_HEX)
		return false;
	hex_of(mac, false, lower);
	for (size_t i = 0; i < MAC_HEX; i++) {
		char c = text[i];

		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		if (c != lower[i])
			return false;
	}
	return true;
}

static bool is_base64_of(const char *text, size_t len,
			 const unsigned char mac[MAC_LEN])
{
	char b64[MAC_B64 + 1];

	base64_of(mac, b64);
	return len == MAC_B64 && memcmp(text, b64, MAC_B64) == 0;
}

/* ---- the schemes, checked ---- */

struct input {
	enum scheme scheme;
	const char *f1, *f2, *header; /* fields (NULL: absent) */
	const void *body;
	size_t body_len;
	time_t now;
	long tolerance;
};

static void check_status(enum signature_status st, const char *reason)
{
	FUZZ_CHECK(st >= SIGNATURE_VALID && st <= SIGNATURE_MISMATCH,
		   "status %d (SIGNATURE_ERROR means libcrypto failed)",
		   (int)st);
	if (st == SIGNATURE_VALID)
		FUZZ_CHECK(reason == NULL, "reason on success");
	else
		FUZZ_CHECK(reason != NULL && reason[0] != '\0',
			   "no reason for status %d", (int)st);
}

/* Standard Webhooks: "v1,<base64>" entries separated by spaces. */
static void check_standard(const struct input *in, enum signature_status st,
			   const char *reason, char sig[2][SIGNATURE_TEXT_MAX])
{
	const char *id = in->f1, *ts = in->f2, *header = in->header;
	struct item items[ITEMS_MAX];
	size_t count = 0;
	bool more = false, match = false, pairs = true;
	uint64_t ts_value = 0;
	bool ts_ok = ts != NULL && digits_value(ts, strlen(ts), &ts_value);

	if (header != NULL)
		count = split_items(header, ' ', items, &more);
	for (size_t i = 0; i < count; i++) {
		const char *comma = memchr(items[i].text, ',', items[i].len);

		if (comma == NULL || comma == items[i].text)
			pairs = false;
		for (size_t k = 0; k < 2 && id != NULL && ts != NULL; k++)
			if (items[i].len == strlen(sig[k]) &&
			    memcmp(items[i].text, sig[k], items[i].len) == 0)
				match = true;
	}
	if (st == SIGNATURE_VALID) {
		FUZZ_CHECK(id != NULL && ts != NULL && header != NULL,
			   "valid with a header absent");
		FUZZ_CHECK(visible_ascii(id, SIGNATURE_ID_MAX),
			   "valid with a malformed webhook-id");
		FUZZ_CHECK(ts_ok, "valid with a malformed webhook-timestamp");
		FUZZ_CHECK(within(ts_value, (long long)in->now, in->tolerance),
			   "valid with a stale timestamp %s", ts);
		FUZZ_CHECK(match, "accepted a forged signature: \"%s\"",
			   header);
	}
	if (st == SIGNATURE_MISSING)
		FUZZ_CHECK(id == NULL || ts == NULL || header == NULL ||
			   id[0] == '\0' || ts[0] == '\0' || header[0] == '\0',
			   "missing, with all three present");
	/* The other way round: a request signed right, with a well-formed
	 * header of few entries, must pass. */
	if (match && pairs && !more && count <= 8 && strlen(header) <= 1024 &&
	    visible_ascii(id, SIGNATURE_ID_MAX) && ts_ok &&
	    within(ts_value, (long long)in->now, in->tolerance))
		FUZZ_CHECK(st == SIGNATURE_VALID,
			   "right signature refused (%d, %s): \"%s\"", (int)st,
			   reason, header);
}

/* Stripe ("t=", "v1=", ',') and Paddle ("ts=", "h1=", ';'): hex HMAC over
 * "<timestamp><glue><body>", computed here from the header's timestamp. */
static void check_timed(const struct input *in, enum signature_status st,
			const char *reason)
{
	bool paddle = in->scheme == PADDLE;
	char sep = paddle ? ';' : ',';
	const char *ts_name = paddle ? "ts" : "t";
	const char *sig_name = paddle ? "h1" : "v1";
	const char *glue = paddle ? ":" : ".";
	struct item items[ITEMS_MAX], value, ts = { NULL, 0 };
	size_t count, ts_items = 0;
	bool more, match = false, pairs = true, ts_ok;
	uint64_t ts_value = 0;
	unsigned char mac[2][MAC_LEN];

	if (in->header == NULL || in->header[0] == '\0') {
		FUZZ_CHECK(st == SIGNATURE_MISSING,
			   "no header, status %d", (int)st);
		return;
	}
	FUZZ_CHECK(st != SIGNATURE_MISSING, "missing, with a header");
	count = split_items(in->header, sep, items, &more);
	for (size_t i = 0; i < count; i++) {
		if (memchr(items[i].text, '=', items[i].len) == NULL ||
		    items[i].text[0] == '=')
			pairs = false;
		if (item_named(&items[i], ts_name, '=', &value) &&
		    ts_items++ == 0)
			ts = value;
	}
	ts_ok = ts_items == 1 && digits_value(ts.text, ts.len, &ts_value);
	if (ts_ok) {
		const struct piece pieces[] = {
			{ ts.text, ts.len }, { glue, 1 },
			{ in->body, in->body_len },
		};

		for (size_t k = 0; k < 2; k++)
			expected_mac(in->scheme, k, pieces, 3, mac[k]);
		for (size_t i = 0; i < count; i++)
			if (item_named(&items[i], sig_name, '=', &value) &&
			    (is_hex_of(value.text, value.len, mac[0]) ||
			     is_hex_of(value.text, value.len, mac[1])))
				match = true;
	}
	if (st == SIGNATURE_VALID) {
		FUZZ_CHECK(ts_ok, "valid without exactly one timestamp of "
			   "digits: \"%s\"", in->header);
		FUZZ_CHECK(within(ts_value, (long long)in->now, in->tolerance),
			   "valid with a stale timestamp: \"%s\"", in->header);
		FUZZ_CHECK(match, "accepted a forged signature: \"%s\"",
			   in->header);
	}
	if (match && pairs && !more && count <= SIGNATURE_ENTRIES_MAX &&
	    strlen(in->header) <= SIGNATURE_HEADER_MAX &&
	    within(ts_value, (long long)in->now, in->tolerance))
		FUZZ_CHECK(st == SIGNATURE_VALID,
			   "right signature refused (%d, %s): \"%s\"", (int)st,
			   reason, in->header);
}

/* One digest of "<text><body>" after an optional prefix. */
static void check_digest(const struct input *in, enum signature_status st,
			 const char *reason, const unsigned char mac[2][MAC_LEN])
{
	const char *prefix = in->f1 != NULL && in->f1[0] != '\0' ? in->f1 : "";
	size_t plen = strlen(prefix);
	const char *rest;
	bool match = false;

	if (in->header == NULL || in->header[0] == '\0') {
		FUZZ_CHECK(st == SIGNATURE_MISSING && reason != NULL &&
			   strcmp(reason, DIGEST_MISSING) == 0,
			   "no header, status %d (%s)", (int)st, reason);
		return;
	}
	FUZZ_CHECK(st != SIGNATURE_MISSING, "missing, with a header");
	if (strncmp(in->header, prefix, plen) == 0) {
		rest = in->header + plen;
		for (size_t k = 0; k < 2; k++)
			match |= in->scheme == DIGEST_HEX ?
					 is_hex_of(rest, strlen(rest), mac[k]) :
					 is_base64_of(rest, strlen(rest), mac[k]);
	}
	if (st == SIGNATURE_VALID)
		FUZZ_CHECK(match, "accepted a forged digest: \"%s\"",
			   in->header);
	if (match && strlen(in->header) <= SIGNATURE_HEADER_MAX)
		FUZZ_CHECK(st == SIGNATURE_VALID,
			   "right digest refused (%d, %s): \"%s\"", (int)st,
			   reason, in->header);
}

/* A static token: the header is one of the secrets, exactly. */
static void check_token(const struct input *in, enum signature_status st,
			const char *reason)
{
	bool match = in->header != NULL &&
		     (strcmp(in->header, SECRET_A) == 0 ||
		      strcmp(in->header, SECRET_B) == 0);

	if (in->header == NULL || in->header[0] == '\0') {
		FUZZ_CHECK(st == SIGNATURE_MISSING && reason != NULL &&
			   strcmp(reason, TOKEN_MISSING) == 0,
			   "no header, status %d (%s)", (int)st, reason);
		return;
	}
	FUZZ_CHECK(st == (match ? SIGNATURE_VALID :
			  strlen(in->header) > SIGNATURE_HEADER_MAX ?
				  SIGNATURE_MALFORMED : SIGNATURE_MISMATCH),
		   "token \"%.80s\": status %d", in->header, (int)st);
}

/* ---- secrets ---- */

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

static bool is_base64_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '+' || c == '/';
}

static int hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* What text decodes to in form, by our own reading of secret.h: false
 * when it is no secret of that form. */
static bool model_decode(enum secret_form form, const char *text,
			 unsigned char *out, size_t *out_len)
{
	size_t n = strlen(text), pad = 0;

	if (n == 0)
		return false;
	switch (form) {
	case SECRET_TEXT:
		if (n > SECRET_KEY_MAX)
			return false;
		memcpy(out, text, n);
		*out_len = n;
		return true;
	case SECRET_HEX:
		if (n % 2 != 0 || n / 2 > SECRET_KEY_MAX)
			return false;
		for (size_t i = 0; i < n; i += 2) {
			int hi = hex_value((unsigned char)text[i]);
			int lo = hex_value((unsigned char)text[i + 1]);

			if (hi < 0 || lo < 0)
				return false;
			out[i / 2] = (unsigned char)(hi << 4 | lo);
		}
		*out_len = n / 2;
		return true;
	case SECRET_WHSEC_BASE64:
		if (strncmp(text, "whsec_", 6) != 0)
			return false;
		text += 6;
		n -= 6;
		/* fall through */
	case SECRET_BASE64: {
		unsigned char buf[3 * 1024];
		int got;

		if (n == 0 || n % 4 != 0 || n / 4 * 3 > sizeof(buf))
			return false;
		if (text[n - 1] == '=')
			pad++;
		if (n >= 2 && text[n - 2] == '=')
			pad++;
		for (size_t i = 0; i < n - pad; i++)
			if (!is_base64_char((unsigned char)text[i]))
				return false;
		got = EVP_DecodeBlock(buf, (const unsigned char *)text, (int)n);
		if (got < 0 || (size_t)got != n / 4 * 3 ||
		    (size_t)got - pad < 1 || (size_t)got - pad > SECRET_KEY_MAX)
			return false;
		memcpy(out, buf, (size_t)got - pad);
		*out_len = (size_t)got - pad;
		return true;
	}
	}
	return false;
}

/* Rotates letters and digits within their class (digits, a-f, g-z, A-F
 * and G-Z apart), keeping a "whsec_" prefix and never making one: the text
 * stays a secret of exactly the forms it was one of. */
static void rotate_secret(char *t)
{
	size_t from = strncmp(t, "whsec_", 6) == 0 ? 6 : 0;

	for (int round = 0; round < 3; round++) {
		for (size_t i = from; t[i] != '\0'; i++) {
			char c = t[i];

			if (c >= 'A' && c <= 'F')
				t[i] = (char)('A' + (c - 'A' + 1) % 6);
			else if (c >= 'G' && c <= 'Z')
				t[i] = (char)('G' + (c - 'G' + 1) % 20);
			else if (c >= 'a' && c <= 'f')
				t[i] = (char)('a' + (c - 'a' + 1) % 6);
			else if (c >= 'g' && c <= 'z')
				t[i] = (char)('g' + (c - 'g' + 1) % 20);
			else if (c >= '0' && c <= '9')
				t[i] = (char)('0' + (c - '0' + 1) % 10);
		}
		if (from != 0 || strncmp(t, "whsec_", 6) != 0)
			break;
	}
}

/* secret_decode on text in form, against the model; never quotes the
 * secret (the message is the same for another secret of the same shape).
 * Returns whether it decoded, with the key in *key. */
static bool check_decode(enum secret_form form, const char *text,
			 struct secret_key *key)
{
	unsigned char want[SECRET_KEY_MAX];
	size_t want_len = 0;
	struct error err = { "" };
	bool ok = model_decode(form, text, want, &want_len);
	int rc;

	memset(key, 0xA5, sizeof(*key));
	rc = secret_decode(form, text, key, &err);
	FUZZ_CHECK(rc == 0 || rc == -1, "secret_decode returned %d", rc);
	FUZZ_CHECK((rc == 0) == ok, "form %d: secret_decode says %d, the "
		   "model %s (%s)", (int)form, rc, ok ? "valid" : "invalid",
		   err.message);
	if (rc != 0) {
		struct secret_key other;
		struct error err2 = { "" };
		char *rotated = strdup(text);

		if (rotated == NULL)
			FUZZ_FATAL("out of memory");
		FUZZ_CHECK(err.message[0] != '\0', "no error message");
		FUZZ_CHECK(all_zero(key, sizeof(*key)),
			   "key not wiped on failure");
		rotate_secret(rotated);
		FUZZ_CHECK(secret_decode(form, rotated, &other, &err2) == -1 &&
			   strcmp(err.message, err2.message) == 0,
			   "the message depends on the secret:\n  %s\n  %s",
			   err.message, err2.message);
		free(rotated);
		return false;
	}
	FUZZ_CHECK(key->len == want_len && memcmp(key->bytes, want, want_len) == 0,
		   "form %d: decoded %zu bytes, the model %zu", (int)form,
		   key->len, want_len);
	FUZZ_CHECK(all_zero(key->bytes + key->len, sizeof(key->bytes) - key->len),
		   "key written past its %zu bytes", key->len);
	return true;
}

/* True when HMAC treats keys a and b as the same key: a key up to the
 * SHA-256 block size (64 bytes) is zero-padded to it, so keys that differ
 * only by trailing zero bytes are one key (found by the fuzzer: the secret
 * of key A with "AA==" appended verifies A's signatures, as it must). Longer
 * keys are hashed first; those are compared as they are. */
static bool hmac_same_key(const unsigned char *a, size_t a_len,
			  const unsigned char *b, size_t b_len)
{
	if (a_len > 64 || b_len > 64)
		return a_len == b_len && memcmp(a, b, a_len) == 0;
	while (a_len > 0 && a[a_len - 1] == 0)
		a_len--;
	while (b_len > 0 && b[b_len - 1] == 0)
		b_len--;
	return a_len == b_len && memcmp(a, b, a_len) == 0;
}

/* A secret that decodes in form must sign requests its own keyring
 * accepts, and that the A/B keyring refuses unless it is (HMAC-wise) one of
 * those keys. */
static void check_round_trip(enum secret_form form, const char *secret,
			     const struct secret_key *k, const void *body,
			     size_t body_len, time_t now, long tolerance)
{
	char *secrets[1] = { (char *)secret };
	char ts[32], sig[SIGNATURE_TEXT_MAX];
	struct signature_keyring *own;
	enum signature_status st;
	struct error err;
	bool is_ab;

	if (now < 0)
		return;
	own = signature_keyring_new(secrets, 1, form, &err);
	FUZZ_CHECK(own != NULL, "keyring refused a secret that decodes: %s",
		   err.message);
	snprintf(ts, sizeof(ts), "%lld", (long long)now);
	FUZZ_CHECK(signature_sign_standard(own, "msg_fuzz", ts, body, body_len,
					   sig, &err) == 0,
		   "signature_sign_standard: %s", err.message);
	st = signature_verify_standard(own, "msg_fuzz", ts, sig, body,
				       body_len, now, tolerance, NULL);
	FUZZ_CHECK(st == SIGNATURE_VALID, "own signature refused: %d",
		   (int)st);
	signature_keyring_free(own);
	is_ab = hmac_same_key(k->bytes, k->len, whsec_keys[0].bytes,
			      whsec_keys[0].len) ||
		hmac_same_key(k->bytes, k->len, whsec_keys[1].bytes,
			      whsec_keys[1].len);
	st = signature_verify_standard(ring_whsec, "msg_fuzz", ts, sig, body,
				       body_len, now, tolerance, NULL);
	FUZZ_CHECK(is_ab ? st == SIGNATURE_VALID : st == SIGNATURE_MISMATCH,
		   "another key's signature gave %d", (int)st);
}

static void check_secret(const char *text, const void *body, size_t body_len,
			 time_t now, long tolerance)
{
	static const enum secret_form forms[] = {
		SECRET_WHSEC_BASE64, SECRET_TEXT, SECRET_HEX, SECRET_BASE64,
	};
	struct secret_key key;

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		if (check_decode(forms[i], text, &key))
			check_round_trip(forms[i], text, &key, body, body_len,
					 now, tolerance);
		secret_key_wipe(&key);
	}
}

/* signature_timestamp_parse and signature_id_valid against ours. */
static void check_helpers(const char *text)
{
	size_t n = strlen(text);
	uint64_t want = 0, got = 12345;
	bool ok = digits_value(text, n, &want);
	int rc = signature_timestamp_parse(text, n, &got);

	FUZZ_CHECK((rc == 0) == ok, "timestamp \"%.40s\": %d", text, rc);
	FUZZ_CHECK(ok ? got == want : got == 12345,
		   "timestamp \"%.40s\": %llu", text, (unsigned long long)got);
	FUZZ_CHECK(signature_id_valid(text) ==
			   visible_ascii(text, SIGNATURE_ID_MAX),
		   "signature_id_valid(\"%.40s\")", text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long tolerances[] = { 300, 300, 0, LONG_MAX };
	static const time_t nows[] = { NOW_FIXED, NOW_FIXED, 0, -1 };
	static const enum scheme schemes[4] = { STANDARD, STRIPE, PADDLE,
						DIGEST_HEX };
	char subst[2][2][TEXT_MAX];
	char sig[2][SIGNATURE_TEXT_MAX];
	unsigned char mac[2][MAC_LEN];
	char *f1, *f2, *header, *expanded = NULL;
	const uint8_t *p;
	const char *reason = NULL;
	struct input in;
	enum signature_status st;
	size_t left;
	unsigned flags;

	if (size < 1)
		return 0;
	flags = data[0];
	memset(&in, 0, sizeof(in));
	in.tolerance = tolerances[flags & 3u];
	in.now = nows[(flags >> 4) & 3u];
	in.scheme = schemes[flags >> 6];
	if (in.scheme == DIGEST_HEX)
		in.scheme = (flags & 8u) != 0 ? TOKEN :
			    (flags & 4u) != 0 ? DIGEST_BASE64 : DIGEST_HEX;
	p = data + 1;
	left = size - 1;
	f1 = take_field(&p, &left);
	f2 = take_field(&p, &left);
	header = take_field(&p, &left);
	in.body = p; /* what is left, possibly nothing */
	in.body_len = left;
	in.f1 = f1;
	in.f2 = f2;

	/* What "$A" and "$B" stand for. */
	memset(subst, 0, sizeof(subst));
	switch (in.scheme) {
	case STANDARD:
		if (f1 != NULL && f2 != NULL) {
			for (size_t k = 0; k < 2; k++) {
				standard_signature(k, f1, f2, in.body,
						   in.body_len, sig[k]);
				memcpy(subst[k][0], sig[k] + 3, MAC_B64 + 1);
				memcpy(subst[k][1], sig[k] + 3, MAC_B64 + 1);
			}
		}
		break;
	case STRIPE:
	case PADDLE:
		if (f2 != NULL) {
			const struct piece pieces[] = {
				{ f2, strlen(f2) },
				{ in.scheme == PADDLE ? ":" : ".", 1 },
				{ in.body, in.body_len },
			};

			for (size_t k = 0; k < 2; k++) {
				expected_mac(in.scheme, k, pieces, 3, mac[k]);
				hex_of(mac[k], false, subst[k][0]);
				hex_of(mac[k], true, subst[k][1]);
			}
		}
		break;
	case DIGEST_HEX:
	case DIGEST_BASE64: {
		const struct piece pieces[] = {
			{ f2 != NULL ? f2 : "", f2 != NULL ? strlen(f2) : 0 },
			{ in.body, in.body_len },
		};

		for (size_t k = 0; k < 2; k++) {
			expected_mac(in.scheme, k, pieces, 2, mac[k]);
			if (in.scheme == DIGEST_HEX) {
				hex_of(mac[k], false, subst[k][0]);
				hex_of(mac[k], true, subst[k][1]);
			} else {
				base64_of(mac[k], subst[k][0]);
				base64_of(mac[k], subst[k][1]);
			}
		}
		break;
	}
	case TOKEN:
		for (size_t k = 0; k < 2; k++) {
			snprintf(subst[k][0], TEXT_MAX, "%s", secret_text[k]);
			snprintf(subst[k][1], TEXT_MAX, "%s", secret_text[k]);
		}
		break;
	}
	if (header != NULL)
		expanded = substitute(header, subst);
	in.header = expanded;

	switch (in.scheme) {
	case STANDARD:
		st = signature_verify_standard(ring_whsec, f1, f2, expanded,
					       in.body, in.body_len, in.now,
					       in.tolerance, &reason);
		check_status(st, reason);
		check_standard(&in, st, reason, sig);
		break;
	case STRIPE:
		st = signature_verify_stripe(ring_text, expanded, in.body,
					     in.body_len, in.now, in.tolerance,
					     &reason);
		check_status(st, reason);
		check_timed(&in, st, reason);
		break;
	case PADDLE:
		st = signature_verify_paddle(ring_text, expanded, in.body,
					     in.body_len, in.now, in.tolerance,
					     &reason);
		check_status(st, reason);
		check_timed(&in, st, reason);
		break;
	case DIGEST_HEX:
	case DIGEST_BASE64: {
		const struct signature_part parts[] = {
			{ f2 != NULL ? f2 : "", f2 != NULL ? strlen(f2) : 0 },
			{ in.body, in.body_len },
		};

		st = signature_verify_digest(
			ring_text, expanded,
			f1 != NULL && f1[0] != '\0' ? f1 : NULL,
			in.scheme == DIGEST_HEX ? SIGNATURE_HEX
						: SIGNATURE_BASE64,
			parts, 2, DIGEST_MISSING, &reason);
		check_status(st, reason);
		check_digest(&in, st, reason, mac);
		break;
	}
	case TOKEN:
		st = signature_verify_token(ring_text, expanded, TOKEN_MISSING,
					    &reason);
		check_status(st, reason);
		check_token(&in, st, reason);
		break;
	}

	if (trace_results)
		fprintf(stderr, "fuzz_signature: scheme %d: %s\n",
			(int)in.scheme, reason != NULL ? reason : "valid");
	if (f2 != NULL)
		check_helpers(f2);
	if (f1 != NULL) {
		check_helpers(f1);
		check_secret(f1, in.body, in.body_len, in.now, in.tolerance);
	}
	free(f1);
	free(f2);
	free(header);
	free(expanded);
	return 0;
}
