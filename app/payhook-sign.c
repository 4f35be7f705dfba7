/* payhook-sign.c - signs a webhook body the way a provider would and prints
 * its signature headers (or, for Adyen, the signed body), or a ready curl
 * command; --sample writes a sample event of the provider. For trying an
 * endpoint the way `stripe trigger` does.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYS_RANDOM_H
#include <sys/random.h>
#endif

#include <openssl/crypto.h>

#include "configuration.h"
#include "number.h"
#include "options.h"
#include "pipeline.h"
#include "provider.h"
#include "sample.h"
#include "signature.h"

#define PROGRAM "payhook-sign"
/* Largest body we read; far above any sane max_body_bytes. */
#define BODY_MAX ((size_t)64 * 1024 * 1024)

#define EXIT_USAGE 2

struct body {
	unsigned char *data;
	size_t len;
};

/* The events --sample knows, as sample_name lists them: one paragraph per
 * provider, wrapped under 80 columns, so the usage cannot miss one. */
static void print_samples(FILE *out)
{
	for (int p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		const char *name = sample_name((enum config_provider)p, 0);
		int column;

		if (name == NULL)
			continue;
		column = fprintf(out, "  %s:", config_provider_name(
						      (enum config_provider)p));
		for (size_t i = 0; name != NULL;
		     name = sample_name((enum config_provider)p, ++i)) {
			int width = (int)strlen(name) + 2;

			if (column + width > 78)
				column = fprintf(out, "\n   ") - 1;
			column += fprintf(out, " %s%s", name,
					  sample_name((enum config_provider)p,
						      i + 1) != NULL ? "," : "");
		}
		fputc('\n', out);
	}
}

enum {
	OPT_PROVIDER = 256, OPT_SECRET, OPT_SECRET_FILE, OPT_ID, OPT_TIMESTAMP,
	OPT_URL, OPT_TOPIC, OPT_CURL, OPT_SAMPLE, OPT_TRANSACTION_ID,
	OPT_AMOUNT, OPT_CURRENCY, OPT_EVENT_ID, OPT_OBJECT_ID, OPT_TIME,
	OPT_KEY, OPT_CERT_URL, OPT_WEBHOOK_ID,
};

static const struct options_entry entries[] = {
	{ "provider", required_argument, OPT_PROVIDER, "NAME",
	  "the profile whose scheme signs: standard (default) or another of "
	  "the providers below" },
	{ "secret-file", required_argument, OPT_SECRET_FILE, "FILE",
	  "read the provider's secret (its own form, the first word of FILE) "
	  "from FILE; default: the first of $PAYHOOK_WEBHOOK_SECRET "
	  "(standard) or $PAYHOOK_<PROVIDER>_SECRET" },
	{ "secret", required_argument, OPT_SECRET, "SECRET",
	  "the secret itself: for tests only, since every user sees it in ps "
	  "and it stays in the shell's history" },
	{ "id", required_argument, OPT_ID, "ID",
	  "webhook-id (standard), X-Razorpay-Event-Id, X-Shopify-Event-Id, "
	  "x-request-id (mercadopago, whose URL takes ?data.id=ID&type="
	  "payment) (default: random)" },
	{ "timestamp", required_argument, OPT_TIMESTAMP, "UNIX",
	  "the signed timestamp (default: now)" },
	{ "url", required_argument, OPT_URL, "URL",
	  "the notification URL Square signs (default: "
	  "$PAYHOOK_SQUARE_NOTIFICATION_URL)" },
	{ "topic", required_argument, OPT_TOPIC, "TOPIC",
	  "X-Shopify-Topic (default: orders/paid)" },
	{ "key", required_argument, OPT_KEY, "FILE",
	  "paypal: the PEM private key to sign with (PayPal signs with its "
	  "own: for tests and demos, whose certificate payhook is told to "
	  "trust)" },
	{ "cert-url", required_argument, OPT_CERT_URL, "URL",
	  "paypal: PAYPAL-CERT-URL, where that key's certificate is served" },
	{ "webhook-id", required_argument, OPT_WEBHOOK_ID, "ID",
	  "paypal: the webhook's id (default: $PAYHOOK_PAYPAL_WEBHOOK_ID)" },
	{ "config", required_argument, 'c', "FILE",
	  "configuration with the generic_ keys (generic)" },
	{ "curl", required_argument, OPT_CURL, "URL",
	  "print a curl command that POSTs the signed body to URL" },
	{ "sample", required_argument, OPT_SAMPLE, "EVENT",
	  "write a sample EVENT of the provider instead (e.g. "
	  "payment_intent.succeeded; the samples are below)" },
	{ "transaction-id", required_argument, OPT_TRANSACTION_ID, "ID",
	  "with --sample: the transaction's id (default: random, in the "
	  "provider's form)" },
	{ "amount", required_argument, OPT_AMOUNT, "N",
	  "with --sample: the amount in minor units (default 1999)" },
	{ "currency", required_argument, OPT_CURRENCY, "CUR",
	  "with --sample: the currency" },
	{ "event-id", required_argument, OPT_EVENT_ID, "ID",
	  "with --sample: the event's id (default: random)" },
	{ "object-id", required_argument, OPT_OBJECT_ID, "ID",
	  "with --sample of a refund, dispute or cancellation (e.g. "
	  "refund.updated): its object's id (default: from the transaction "
	  "id)" },
	{ "time", required_argument, OPT_TIME, "UNIX",
	  "with --sample of a refund, dispute or cancellation: its time in "
	  "Unix seconds (default 2024-06-17T04:03:25Z)" },
	OPTIONS_ENTRY_VERSION,
	OPTIONS_ENTRY_HELP,
};

static const char *const forms[] = {
	"[--provider NAME] [--secret-file FILE | --secret SECRET] [--id ID] "
	"[--timestamp UNIX] [--url URL] [--topic TOPIC] [-c FILE] "
	"[--curl URL] [BODY]",
	"--provider paypal --key FILE --cert-url URL [--webhook-id ID] "
	"[--id ID] [--timestamp UNIX] [BODY]",
	"[--provider NAME] --sample EVENT [--transaction-id ID] [--amount N] "
	"[--currency CUR] [--event-id ID] [--object-id ID] [--time UNIX]",
	"--version | --help",
	NULL,
};

/* After the options: the providers, and the samples of each. */
static void epilogue(FILE *out)
{
	int column = fprintf(out, "Providers (--provider NAME):");

	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		const char *name = config_provider_name(p);

		if (column + (int)strlen(name) + 2 > 78)
			column = fprintf(out, "\n   ") - 1;
		column += fprintf(out, " %s%s", name,
				  p + 1 < CONFIG_PROVIDER_COUNT ? "," : "\n");
	}
	fputs("\nSamples (--sample EVENT), by provider; the first is the "
	      "payment:\n", out);
	print_samples(out);
}

static const struct options_program program = {
	.name = PROGRAM,
	.forms = forms,
	.about =
		"Signs the webhook body in BODY (standard input without one, or with -)\n"
		"as the provider does and prints its signature headers, one per line as\n"
		"'name: value' (for adyen: the body with every item's hmacSignature set).\n",
	.entries = entries,
	.count = sizeof(entries) / sizeof(entries[0]),
	.epilogue = epilogue,
	.own_messages = true,
};

/* Prints msg (and the offending argument, when there is one) and the usage,
 * then exits with EXIT_USAGE. */
_Noreturn static void die_usage(const char *msg, const char *arg)
{
	if (arg != NULL)
		fprintf(stderr, PROGRAM ": %s: %s\n", msg, arg);
	else
		fprintf(stderr, PROGRAM ": %s\n", msg);
	options_usage(&program, stderr);
	exit(EXIT_USAGE);
}

/* Fills buf with len random bytes from the OS. Returns 0 or -1. */
static int random_bytes(unsigned char *buf, size_t len)
{
#ifdef HAVE_GETRANDOM
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(buf + got, len - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		got += (size_t)n;
	}
	if (got == len)
		return 0;
#endif
	{
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		size_t off = 0;

		if (fd < 0)
			return -1;
		while (off < len) {
			ssize_t n = read(fd, buf + off, len - off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			off += (size_t)n;
		}
		close(fd);
		return off == len ? 0 : -1;
	}
}

/* Reads all of in into body (binary-safe, at most BODY_MAX bytes). Returns 0,
 * or -1 with a message printed. */
static int read_body(FILE *in, const char *name, struct body *body)
{
	size_t cap = 0;

	body->data = NULL;
	body->len = 0;
	for (;;) {
		size_t n;

		if (body->len == cap) {
			size_t ncap = cap == 0 ? 65536 : cap * 2;
			unsigned char *p;

			if (cap >= BODY_MAX + 1)
				break;
			if (ncap > BODY_MAX + 1)
				ncap = BODY_MAX + 1;
			p = realloc(body->data, ncap);
			if (p == NULL) {
				fprintf(stderr, PROGRAM ": out of memory\n");
				return -1;
			}
			body->data = p;
			cap = ncap;
		}
		n = fread(body->data + body->len, 1, cap - body->len, in);
		body->len += n;
		if (n == 0)
			break;
	}
	if (ferror(in)) {
		fprintf(stderr, PROGRAM ": %s: read error\n", name);
		return -1;
	}
	if (body->len > BODY_MAX) {
		fprintf(stderr, PROGRAM ": %s: body larger than %zu bytes\n",
			name, BODY_MAX);
		return -1;
	}
	return 0;
}

/* Writes text[0..len) for use inside sh single quotes: ' becomes '\''. */
static void put_escaped(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\'')
			fputs("'\\''", stdout);
		else
			putchar(text[i]);
	}
}

/* Writes text[0..len) as one single-quoted sh word. */
static void put_quoted(const char *text, size_t len)
{
	putchar('\'');
	put_escaped(text, len);
	putchar('\'');
}

static void put_header(const char *name, const char *value)
{
	fputs(" -H '", stdout);
	put_escaped(name, strlen(name));
	fputs(": ", stdout);
	put_escaped(value, strlen(value));
	putchar('\'');
}

/* Copies the first white-space-separated word of text into a new string, or
 * returns NULL when there is none. Exits on out of memory. */
static char *first_word(const char *text)
{
	const char *start = text + strspn(text, " \t\r\n\f\v");
	size_t len = strcspn(start, " \t\r\n\f\v");
	char *word;

	if (len == 0)
		return NULL;
	word = malloc(len + 1);
	if (word == NULL) {
		fprintf(stderr, PROGRAM ": out of memory\n");
		exit(EXIT_FAILURE);
	}
	memcpy(word, start, len);
	word[len] = '\0';
	return word;
}

/* Largest secret file read: a secret is at most a few hundred bytes. */
#define SECRET_FILE_MAX 4096

/* The secret in FILE: its first white-space-separated word (so a trailing
 * newline does not count). Returns it (the caller wipes and frees it), or
 * NULL with a message printed. */
static char *secret_from_file(const char *path)
{
	char buf[SECRET_FILE_MAX + 1];
	const char *why = NULL;
	char *word = NULL;
	size_t n;
	FILE *f = fopen(path, "r");

	if (f == NULL) {
		fprintf(stderr, PROGRAM ": --secret-file %s: %s\n", path,
			strerror(errno));
		return NULL;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	if (ferror(f)) {
		why = "read error";
	} else if (n == SECRET_FILE_MAX) {
		why = "too large for a secret file";
	} else if (strlen(buf) != n) {
		why = "holds a NUL byte";
	} else {
		word = first_word(buf);
		if (word == NULL)
			why = "holds no secret";
	}
	if (why != NULL)
		fprintf(stderr, PROGRAM ": --secret-file %s: %s\n", path, why);
	fclose(f);
	OPENSSL_cleanse(buf, sizeof(buf));
	return word;
}

/* The secret from the environment: the first word of
 * PAYHOOK_<PROVIDER>_SECRET (PAYHOOK_WEBHOOK_SECRET for standard), or NULL.
 * The caller frees it. */
static char *secret_from_env(enum config_provider provider)
{
	char name[64];
	const char *value;

	if (provider == CONFIG_PROVIDER_STANDARD)
		snprintf(name, sizeof(name), "PAYHOOK_WEBHOOK_SECRET");
	else
		snprintf(name, sizeof(name), "PAYHOOK_%s_SECRET",
			 config_provider_name(provider));
	for (char *c = name; *c != '\0'; c++)
		*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
	value = getenv(name);
	return value != NULL ? first_word(value) : NULL;
}

static enum config_provider provider_named(const char *name)
{
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++)
		if (strcmp(name, config_provider_name(i)) == 0)
			return (enum config_provider)i;
	die_usage("unknown provider", name);
}

/* A random id in the form the provider gives its events, for what --id
 * sets (webhook-id, X-Razorpay-Event-Id, X-Shopify-Event-Id). */
static int random_id(enum config_provider provider, char *out, size_t cap)
{
	unsigned char rnd[SAMPLE_ID_RANDOM];

	if (random_bytes(rnd, sizeof(rnd)) < 0)
		return -1;
	return sample_id(provider, SAMPLE_ID_EVENT, rnd, sizeof(rnd),
				out, cap);
}

/* --sample: writes the event on standard output. in holds the ids, the
 * currency and the event (NULL for the defaults); amount and when are the
 * texts of --amount and --time (NULL: none). */
static int print_sample(struct sample_input in, const char *amount,
			const char *when)
{
	enum config_provider provider = in.provider;
	char generated[64], event_generated[64];
	uint64_t n;
	struct error err;
	char *json;

	in.amount = 1999;
	if (when != NULL) {
		if (number_parse(when, 253402300799, &n) != NUMBER_OK || n < 1)
			die_usage("--time must be Unix seconds, 1 to "
				  "253402300799 (9999-12-31)", when);
		in.occurred_at = (int64_t)n;
	}
	if (amount != NULL) {
		if (number_parse(amount, INT64_MAX, &n) != NUMBER_OK || n < 1)
			die_usage("--amount must be 1 to 9223372036854775807 "
				  "minor units", amount);
		in.amount = (int64_t)n;
	}
	if (in.transaction_id == NULL || in.event_id == NULL) {
		unsigned char rnd[SAMPLE_ID_RANDOM];

		/* Ids in the provider's own form (pi_..., txn_..., pay_...). */
		if (random_bytes(rnd, sizeof(rnd)) < 0 ||
		    sample_id(provider, SAMPLE_ID_TRANSACTION, rnd,
				     sizeof(rnd), generated,
				     sizeof(generated)) != 0 ||
		    random_id(provider, event_generated,
			      sizeof(event_generated)) != 0) {
			fprintf(stderr, PROGRAM ": no random bytes from the OS\n");
			return EXIT_FAILURE;
		}
		if (in.transaction_id == NULL)
			in.transaction_id = generated;
		if (in.event_id == NULL)
			in.event_id = event_generated;
	}
	json = sample_event(&in, &err);
	if (json == NULL) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return EXIT_USAGE;
	}
	puts(json);
	free(json);
	return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Prints the curl command. A body from a file is passed as @FILE; one from
 * standard input, or re-written (Adyen), is inlined, which cannot carry NUL
 * bytes. Returns 0 or -1. */
static int print_curl(enum config_provider provider, const char *url,
		      const char *file, const struct body *body,
		      const struct provider_headers *h)
{
	if (file == NULL && body->len > 0 &&
	    memchr(body->data, '\0', body->len) != NULL) {
		fprintf(stderr, PROGRAM ": the body has NUL bytes and cannot "
			"be inlined in a command: pass it as FILE\n");
		return -1;
	}
	fputs("curl -sS -X POST ", stdout);
	put_quoted(url, strlen(url));
	put_header("Content-Type",
		   provider_media(provider) == REQUEST_MEDIA_FORM ?
			   "application/x-www-form-urlencoded" :
			   "application/json");
	for (size_t i = 0; i < h->count; i++)
		put_header(h->items[i].name, h->items[i].value);
	if (file != NULL) {
		/* "@FILE" makes curl read the file, byte for byte. */
		fputs(" --data-binary '@", stdout);
		put_escaped(file, strlen(file));
		putchar('\'');
	} else {
		/* --data-binary would read a file for a body starting with
		 * '@'; --data-raw sends such a body as it is. */
		if (body->len > 0 && body->data[0] == '@')
			fputs(" --data-raw ", stdout);
		else
			fputs(" --data-binary ", stdout);
		put_quoted((const char *)body->data, body->len);
	}
	putchar('\n');
	return 0;
}

/* The command line, as read. */
struct cmdline {
	enum config_provider provider;
	const char *secret, *secret_file, *id, *timestamp, *square_url;
	const char *topic, *curl_url, *config_path;
	const char *key_file, *cert_url, *webhook_id; /* paypal's */
	const char *sample, *amount, *when; /* --sample, --amount, --time */
	struct sample_input wanted;         /* --sample's ids and currency */
};

/* One option (options_parse's take). */
static int take_option(void *ctx, int val, const char *arg)
{
	struct cmdline *c = ctx;

	switch (val) {
	case OPT_PROVIDER:
		c->provider = provider_named(arg);
		break;
	case OPT_SECRET:
		c->secret = arg;
		break;
	case OPT_SECRET_FILE:
		c->secret_file = arg;
		break;
	case OPT_ID:
		c->id = arg;
		break;
	case OPT_TIMESTAMP:
		c->timestamp = arg;
		break;
	case OPT_URL:
		c->square_url = arg;
		break;
	case OPT_TOPIC:
		c->topic = arg;
		break;
	case OPT_CURL:
		c->curl_url = arg;
		break;
	case 'c':
		c->config_path = arg;
		break;
	case OPT_SAMPLE:
		c->sample = arg;
		break;
	case OPT_TRANSACTION_ID:
		c->wanted.transaction_id = arg;
		break;
	case OPT_AMOUNT:
		c->amount = arg;
		break;
	case OPT_CURRENCY:
		c->wanted.currency = arg;
		break;
	case OPT_EVENT_ID:
		c->wanted.event_id = arg;
		break;
	case OPT_OBJECT_ID:
		c->wanted.object_id = arg;
		break;
	case OPT_KEY:
		c->key_file = arg;
		break;
	case OPT_CERT_URL:
		c->cert_url = arg;
		break;
	case OPT_WEBHOOK_ID:
		c->webhook_id = arg;
		break;
	default: /* OPT_TIME */
		c->when = arg;
		break;
	}
	return OPTIONS_GO_ON;
}

/* The secret: --secret, --secret-file's, the generic profile's from the
 * configuration, or the environment's; for paypal, which signs with a key
 * and not a shared secret, --key's file name. Sets *secret (pointing into c, cfg
 * or *copy, which the caller wipes and frees). Returns 0, or EXIT_USAGE
 * with the reason said. */
static int find_secret(const struct cmdline *c, const struct config *cfg,
		       const char **secret, char **copy)
{
	*secret = c->secret;
	*copy = NULL;
	/* Mollie's notifications are signed by nothing. */
	if (*secret == NULL && c->secret_file == NULL &&
	    provider_unsigned(c->provider)) {
		*secret = "";
		return 0;
	}
	if (provider_keyless(c->provider)) {
		if (c->key_file == NULL) {
			fprintf(stderr, PROGRAM ": --provider paypal signs "
				"with --key FILE\n");
			options_usage(&program, stderr);
			return EXIT_USAGE;
		}
		*secret = c->key_file;
		return 0;
	}
	if (c->key_file != NULL || c->cert_url != NULL) {
		fprintf(stderr, PROGRAM ": --key and --cert-url are paypal's\n");
		options_usage(&program, stderr);
		return EXIT_USAGE;
	}
	if (*secret == NULL && cfg != NULL &&
	    cfg->secrets[CONFIG_PROVIDER_GENERIC].count > 0)
		*secret = cfg->secrets[CONFIG_PROVIDER_GENERIC].items[0];
	if (c->secret_file != NULL) {
		*copy = secret_from_file(c->secret_file);
		if (*copy == NULL)
			return EXIT_USAGE;
	} else if (*secret == NULL) {
		*copy = secret_from_env(c->provider);
		if (*copy == NULL) {
			fprintf(stderr, PROGRAM ": no secret: pass --secret-file "
				"FILE or set the provider's PAYHOOK_..._SECRET\n");
			options_usage(&program, stderr);
			return EXIT_USAGE;
		}
	}
	if (*copy != NULL)
		*secret = *copy;
	return 0;
}

/* The id (--id, checked by the verifier's own rules, or random) into id
 * and the timestamp (--timestamp, or now) into ts. Returns 0, or the exit
 * status with the reason said. */
static int find_id_timestamp(const struct cmdline *c,
			     char id[SIGNATURE_ID_MAX + 1], char ts[32])
{
	uint64_t unused;

	if (c->id != NULL && !signature_id_valid(c->id)) {
		/* Never sign what payhook refuses. */
		fprintf(stderr, PROGRAM ": --id must be 1 to %d visible ASCII "
			"characters\n", SIGNATURE_ID_MAX);
		return EXIT_USAGE;
	}
	if (c->id != NULL) {
		snprintf(id, SIGNATURE_ID_MAX + 1, "%s", c->id);
	} else if (random_id(c->provider, id, SIGNATURE_ID_MAX + 1) != 0) {
		fprintf(stderr, PROGRAM ": no random bytes from the OS\n");
		return EXIT_FAILURE;
	}
	if (c->timestamp == NULL) {
		snprintf(ts, 32, "%lld", (long long)time(NULL));
	} else if (signature_timestamp_parse(c->timestamp, strlen(c->timestamp),
					     &unused) != 0) {
		fprintf(stderr, PROGRAM ": --timestamp must be Unix seconds (1 "
			"to %d digits)\n", SIGNATURE_TIMESTAMP_DIGITS_MAX);
		return EXIT_USAGE;
	} else {
		snprintf(ts, 32, "%s", c->timestamp);
	}
	return 0;
}

/* The body: FILE's (NULL: standard input). Returns 0, or -1 said. */
static int read_input(const char *file, struct body *body)
{
	FILE *f;
	int rc;

	if (file == NULL)
		return read_body(stdin, "standard input", body);
	f = fopen(file, "rb");
	if (f == NULL) {
		fprintf(stderr, PROGRAM ": %s: %s\n", file, strerror(errno));
		return -1;
	}
	rc = read_body(f, file, body);
	fclose(f);
	return rc;
}

/* What was signed: a curl command, Adyen's body, or the headers. Returns
 * 0, or -1 said. */
static int print_signed(const struct cmdline *c, const char *file,
			const struct body *body,
			const struct provider_headers *headers)
{
	if (c->curl_url != NULL) {
		if (print_curl(c->provider, c->curl_url, file, body, headers) < 0)
			return -1;
	} else if (c->provider == CONFIG_PROVIDER_ADYEN) {
		fwrite(body->data, 1, body->len, stdout);
		putchar('\n');
	} else {
		for (size_t i = 0; i < headers->count; i++)
			printf("%s: %s\n", headers->items[i].name,
			       headers->items[i].value);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PROGRAM ": write error\n");
		return -1;
	}
	return 0;
}

/* Signs the body of file (NULL: standard input) as c says and prints it.
 * Returns the exit status. */
static int sign(const struct cmdline *c, const char *file)
{
	char id[SIGNATURE_ID_MAX + 1], ts[32];
	char *secret_copy = NULL, *signed_body = NULL;
	const char *secret = NULL;
	struct provider_headers headers;
	struct provider_sign_input in;
	struct body body = { NULL, 0 };
	struct config cfg;
	bool have_cfg = false;
	struct error err;
	int status = EXIT_FAILURE, rc;

	if (c->provider == CONFIG_PROVIDER_GENERIC) {
		if (pipeline_load_config(&cfg, c->config_path != NULL ?
					 c->config_path : config_default_path(),
					 &err) != 0) {
			fprintf(stderr, PROGRAM ": %s\n", err.message);
			return EXIT_USAGE;
		}
		have_cfg = true;
	}
	rc = find_secret(c, have_cfg ? &cfg : NULL, &secret, &secret_copy);
	if (rc == 0)
		rc = find_id_timestamp(c, id, ts);
	if (rc != 0) {
		status = rc;
		goto out;
	}
	if (read_input(file, &body) < 0)
		goto out;
	in = (struct provider_sign_input){
		.provider = c->provider, .secret = secret, .id = id,
		.timestamp = ts, .topic = c->topic,
		.url = c->square_url != NULL ? c->square_url :
		       getenv("PAYHOOK_SQUARE_NOTIFICATION_URL"),
		.cert_url = c->cert_url,
		.webhook_id = c->webhook_id != NULL ? c->webhook_id :
			      getenv("PAYHOOK_PAYPAL_WEBHOOK_ID"),
		.cfg = have_cfg ? &cfg : NULL,
	};
	if (provider_sign(&in, (const char *)body.data, body.len, &headers,
			  &signed_body, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		status = EXIT_USAGE;
		goto out;
	}
	if (signed_body != NULL) {
		/* Adyen: the signatures are in the new body. */
		free(body.data);
		body.data = (unsigned char *)signed_body;
		body.len = strlen(signed_body);
		signed_body = NULL;
		file = NULL;
	}
	if (print_signed(c, file, &body, &headers) == 0)
		status = EXIT_SUCCESS;
out:
	free(body.data);
	free(signed_body);
	if (secret_copy != NULL) {
		OPENSSL_cleanse(secret_copy, strlen(secret_copy));
		free(secret_copy);
	}
	if (have_cfg)
		config_cleanup(&cfg);
	return status;
}

int main(int argc, char **argv)
{
	struct cmdline c = { .provider = CONFIG_PROVIDER_STANDARD };
	int rc = options_parse(&program, argc, argv, take_option, &c);

	if (rc != OPTIONS_GO_ON)
		return rc;
	if (c.secret != NULL && c.secret_file != NULL)
		die_usage("--secret and --secret-file: choose one", NULL);
	if (c.sample != NULL) {
		if (argc != optind)
			die_usage("--sample takes no FILE", NULL);
		c.wanted.provider = c.provider;
		c.wanted.event = c.sample;
		return print_sample(c.wanted, c.amount, c.when);
	}
	if (argc - optind > 1)
		die_usage("at most one FILE", NULL);
	return sign(&c, argc - optind == 1 && strcmp(argv[optind], "-") != 0
				? argv[optind] : NULL);
}
