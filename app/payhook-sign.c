/* payhook-sign.c - signs a webhook body the way a provider would and prints
 * its signature headers (or, for Adyen, the signed body), or a ready curl
 * command; --sample writes a sample event of the provider. For trying an
 * endpoint the way `stripe trigger` does.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " [--provider NAME] [--secret-file FILE] [--id ID]\n"
		"                    [--timestamp UNIX] [--url URL] [--topic TOPIC]\n"
		"                    [-c FILE] [--curl URL] [BODY]\n"
		"       " PROGRAM " [--provider NAME] --sample EVENT [--transaction-id ID]\n"
		"                    [--amount N] [--currency CUR] [--event-id ID]\n"
		"                    [--object-id ID] [--time UNIX]\n"
		"Signs the webhook body in BODY (standard input without one, or with -)\n"
		"as the provider does and prints its signature headers, one per line as\n"
		"'name: value' (for adyen: the body with every item's hmacSignature set).\n"
		"\n"
		"  --provider NAME   standard (default), stripe, paddle, razorpay, komoju,\n"
		"                    payjp, square, shopify, adyen, paypal, checkout,\n"
		"                    lemonsqueezy, mollie (no secret: its notifications\n"
		"                    are unsigned), mercadopago, gocardless or generic\n"
		"  --secret-file FILE  read the provider's secret (its own form, the\n"
		"                    first word of FILE) from FILE; default: the first\n"
		"                    of $PAYHOOK_WEBHOOK_SECRET (standard) or\n"
		"                    $PAYHOOK_<PROVIDER>_SECRET\n"
		"  --secret SECRET   the secret itself: for tests only, since every user\n"
		"                    sees it in ps and it stays in the shell's history\n"
		"  --id ID           webhook-id (standard), X-Razorpay-Event-Id,\n"
		"                    X-Shopify-Event-Id, x-request-id (mercadopago,\n"
		"                    whose URL takes ?data.id=ID&type=payment)\n"
		"                    (default: random)\n"
		"  --timestamp UNIX  the signed timestamp (default: now)\n"
		"  --url URL         the notification URL Square signs (default:\n"
		"                    $PAYHOOK_SQUARE_NOTIFICATION_URL)\n"
		"  --topic TOPIC     X-Shopify-Topic (default: orders/paid)\n"
		"  -c FILE           configuration with the generic_ keys (generic)\n"
		"  --curl URL        print a curl command that POSTs the signed body to URL\n"
		"  --sample EVENT    write a sample EVENT of the provider instead (e.g.\n"
		"                    payment_intent.succeeded); --transaction-id, --amount\n"
		"                    (minor units), --currency and --event-id fill it in;\n"
		"                    a refund, dispute or cancellation (e.g.\n"
		"                    refund.updated) is of --object-id (default: from\n"
		"                    the transaction id) at --time (Unix seconds;\n"
		"                    default 2024-06-17T04:03:25Z)\n"
		"  --version, -h/--help\n"
		"\n"
		"Samples (--sample EVENT), by provider; the first is the payment:\n");
	print_samples(out);
}

/* Prints msg (and the offending argument, when there is one) and the usage,
 * then exits with EXIT_USAGE. */
_Noreturn static void die_usage(const char *msg, const char *arg)
{
	if (arg != NULL)
		fprintf(stderr, PROGRAM ": %s: %s\n", msg, arg);
	else
		fprintf(stderr, PROGRAM ": %s\n", msg);
	usage(stderr);
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

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "provider", required_argument, NULL, 'p' },
		{ "secret", required_argument, NULL, 's' },
		{ "secret-file", required_argument, NULL, 'F' },
		{ "id", required_argument, NULL, 'i' },
		{ "timestamp", required_argument, NULL, 't' },
		{ "url", required_argument, NULL, 'u' },
		{ "topic", required_argument, NULL, 'T' },
		{ "curl", required_argument, NULL, 'C' },
		{ "config", required_argument, NULL, 'c' },
		{ "sample", required_argument, NULL, 'S' },
		{ "transaction-id", required_argument, NULL, 'x' },
		{ "amount", required_argument, NULL, 'a' },
		{ "currency", required_argument, NULL, 'y' },
		{ "event-id", required_argument, NULL, 'e' },
		{ "object-id", required_argument, NULL, 'o' },
		{ "time", required_argument, NULL, 'w' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum config_provider provider = CONFIG_PROVIDER_STANDARD;
	const char *secret_arg = NULL, *id_arg = NULL, *ts_arg = NULL;
	const char *secret_file = NULL;
	const char *url = NULL, *file = NULL, *square_url = NULL, *topic = NULL;
	const char *config_path = NULL, *sample = NULL, *tx = NULL;
	const char *amount = NULL, *currency = NULL, *event_id = NULL;
	const char *object_id = NULL, *when = NULL;
	char *secret_copy = NULL, *signed_body = NULL;
	char id[SIGNATURE_ID_MAX + 1], ts[32];
	struct provider_headers headers;
	struct provider_sign_input in;
	struct config cfg;
	bool have_cfg = false;
	struct body body = { NULL, 0 };
	struct error err;
	int opt, status = EXIT_FAILURE;

	/* Error messages are ours, prefixed with the program name. */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hc:", options, NULL)) != -1) {
		switch (opt) {
		case 'p':
			provider = provider_named(optarg);
			break;
		case 's':
			secret_arg = optarg;
			break;
		case 'F':
			secret_file = optarg;
			break;
		case 'i':
			id_arg = optarg;
			break;
		case 't':
			ts_arg = optarg;
			break;
		case 'u':
			square_url = optarg;
			break;
		case 'T':
			topic = optarg;
			break;
		case 'C':
			url = optarg;
			break;
		case 'c':
			config_path = optarg;
			break;
		case 'S':
			sample = optarg;
			break;
		case 'x':
			tx = optarg;
			break;
		case 'a':
			amount = optarg;
			break;
		case 'y':
			currency = optarg;
			break;
		case 'e':
			event_id = optarg;
			break;
		case 'o':
			object_id = optarg;
			break;
		case 'w':
			when = optarg;
			break;
		case 'V':
			printf(PROGRAM " %s\n", PACKAGE_VERSION);
			return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
		case 'h':
			usage(stdout);
			return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
		case ':':
			die_usage("option needs an argument",
				  argv[optind - 1]);
			break;
		default:
			/* optopt names a bad short option; for a long one
			 * it is 0 and the word was the last one taken. */
			if (optopt != 0) {
				char shortopt[3] = { '-', (char)optopt, '\0' };

				die_usage("unknown option", shortopt);
			}
			die_usage("unknown option", argv[optind - 1]);
			break;
		}
	}
	if (secret_arg != NULL && secret_file != NULL)
		die_usage("--secret and --secret-file: choose one", NULL);
	if (sample != NULL) {
		if (argc != optind)
			die_usage("--sample takes no FILE", NULL);
		struct sample_input wanted = {
			.provider = provider, .event = sample,
			.transaction_id = tx, .currency = currency,
			.event_id = event_id, .object_id = object_id,
		};

		return print_sample(wanted, amount, when);
	}
	if (argc - optind > 1)
		die_usage("at most one FILE", NULL);
	if (argc - optind == 1 && strcmp(argv[optind], "-") != 0)
		file = argv[optind];

	if (provider == CONFIG_PROVIDER_GENERIC) {
		if (config_path == NULL)
			config_path = config_default_path();
		if (pipeline_load_config(&cfg, config_path, &err) != 0) {
			fprintf(stderr, PROGRAM ": %s\n", err.message);
			return EXIT_USAGE;
		}
		have_cfg = true;
		if (secret_arg == NULL &&
		    cfg.secrets[CONFIG_PROVIDER_GENERIC].count > 0)
			secret_arg = cfg.secrets[CONFIG_PROVIDER_GENERIC].items[0];
	}
	if (secret_file != NULL) {
		secret_copy = secret_from_file(secret_file);
		if (secret_copy == NULL) {
			status = EXIT_USAGE;
			goto out;
		}
		secret_arg = secret_copy;
	}
	/* Mollie's notifications are signed by nothing. */
	if (secret_arg == NULL && provider_unsigned(provider))
		secret_arg = "";
	if (secret_arg == NULL) {
		secret_copy = secret_from_env(provider);
		if (secret_copy == NULL) {
			fprintf(stderr, PROGRAM ": no secret: pass --secret-file "
				"FILE or set the provider's PAYHOOK_..._SECRET\n");
			usage(stderr);
			status = EXIT_USAGE;
			goto out;
		}
		secret_arg = secret_copy;
	}
	if (square_url == NULL)
		square_url = getenv("PAYHOOK_SQUARE_NOTIFICATION_URL");

	if (id_arg != NULL) {
		/* The verifier's own rules: never sign what payhook refuses. */
		if (!signature_id_valid(id_arg)) {
			fprintf(stderr, PROGRAM ": --id must be 1 to %d "
				"visible ASCII characters\n", SIGNATURE_ID_MAX);
			status = EXIT_USAGE;
			goto out;
		}
		snprintf(id, sizeof(id), "%s", id_arg);
	} else if (random_id(provider, id, sizeof(id)) != 0) {
		fprintf(stderr, PROGRAM ": no random bytes from the OS\n");
		goto out;
	}
	if (ts_arg != NULL) {
		uint64_t unused;

		if (signature_timestamp_parse(ts_arg, strlen(ts_arg),
					      &unused) != 0) {
			fprintf(stderr, PROGRAM ": --timestamp must be Unix "
				"seconds (1 to %d digits)\n",
				SIGNATURE_TIMESTAMP_DIGITS_MAX);
			status = EXIT_USAGE;
			goto out;
		}
		snprintf(ts, sizeof(ts), "%s", ts_arg);
	} else {
		snprintf(ts, sizeof(ts), "%lld", (long long)time(NULL));
	}

	if (file != NULL) {
		FILE *f = fopen(file, "rb");
		int rc;

		if (f == NULL) {
			fprintf(stderr, PROGRAM ": %s: %s\n", file,
				strerror(errno));
			goto out;
		}
		rc = read_body(f, file, &body);
		fclose(f);
		if (rc < 0)
			goto out;
	} else if (read_body(stdin, "standard input", &body) < 0) {
		goto out;
	}

	in = (struct provider_sign_input){
		.provider = provider, .secret = secret_arg, .id = id,
		.timestamp = ts, .url = square_url, .topic = topic,
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
	if (url != NULL) {
		if (print_curl(provider, url, file, &body, &headers) < 0)
			goto out;
	} else if (provider == CONFIG_PROVIDER_ADYEN) {
		fwrite(body.data, 1, body.len, stdout);
		putchar('\n');
	} else {
		for (size_t i = 0; i < headers.count; i++)
			printf("%s: %s\n", headers.items[i].name,
			       headers.items[i].value);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PROGRAM ": write error\n");
		goto out;
	}
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
