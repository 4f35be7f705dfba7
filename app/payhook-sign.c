/* payhook-sign.c - signs a webhook body the way a provider would and prints
 * the three Standard Webhooks headers, or a ready curl command, for testing.
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

#include "signature.h"

#define PROGRAM "payhook-sign"
/* Largest body we read; far above any sane max_body_bytes. */
#define BODY_MAX ((size_t)64 * 1024 * 1024)
#define ID_RANDOM_BYTES 12

#define EXIT_USAGE 2

struct body {
	unsigned char *data;
	size_t len;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " [--secret whsec_...] [--id ID] "
		"[--timestamp UNIX] [--curl URL] [FILE]\n"
		"Signs the webhook body in FILE (standard input without one, "
		"or with -)\n"
		"and prints the webhook-id, webhook-timestamp and "
		"webhook-signature headers.\n"
		"\n"
		"  --secret SECRET   signing secret (whsec_<base64>); default: "
		"the first\n"
		"                    secret in $PAYHOOK_WEBHOOK_SECRET\n"
		"  --id ID           webhook-id (default: msg_ + 24 random hex "
		"digits)\n"
		"  --timestamp UNIX  webhook-timestamp in Unix seconds "
		"(default: now)\n"
		"  --curl URL        print a curl command that POSTs the signed "
		"body to URL\n"
		"  -h, --help        show this help\n");
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

/* Prints the curl command. A body from a file is passed as @FILE; one from
 * standard input is inlined, which cannot carry NUL bytes. Returns 0 or -1. */
static int print_curl(const char *url, const char *file,
		      const struct body *body, const char *id, const char *ts,
		      const char *sig)
{
	if (file == NULL && body->len > 0 &&
	    memchr(body->data, '\0', body->len) != NULL) {
		fprintf(stderr, PROGRAM ": the body has NUL bytes and cannot "
			"be inlined in a command: pass it as FILE\n");
		return -1;
	}
	fputs("curl -sS -X POST ", stdout);
	put_quoted(url, strlen(url));
	put_header("Content-Type", "application/json");
	put_header("webhook-id", id);
	put_header("webhook-timestamp", ts);
	put_header("webhook-signature", sig);
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

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "secret", required_argument, NULL, 's' },
		{ "id", required_argument, NULL, 'i' },
		{ "timestamp", required_argument, NULL, 't' },
		{ "curl", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *secret_arg = NULL, *id_arg = NULL, *ts_arg = NULL;
	const char *url = NULL, *file = NULL;
	char *secret_env = NULL;
	unsigned char key[SIGNATURE_KEY_MAX];
	size_t key_len = 0;
	char id[SIGNATURE_ID_MAX + 1], ts[32], sig[SIGNATURE_TEXT_MAX];
	struct body body = { NULL, 0 };
	struct error err;
	int opt, status = EXIT_FAILURE;

	/* Error messages are ours, prefixed with the program name. */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			secret_arg = optarg;
			break;
		case 'i':
			id_arg = optarg;
			break;
		case 't':
			ts_arg = optarg;
			break;
		case 'c':
			url = optarg;
			break;
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
	if (argc - optind > 1)
		die_usage("at most one FILE", NULL);
	if (argc - optind == 1 && strcmp(argv[optind], "-") != 0)
		file = argv[optind];

	if (secret_arg == NULL) {
		const char *env = getenv("PAYHOOK_WEBHOOK_SECRET");

		if (env != NULL)
			secret_env = first_word(env);
		if (secret_env == NULL)
			die_usage("no secret: pass --secret or set "
				  "PAYHOOK_WEBHOOK_SECRET", NULL);
		secret_arg = secret_env;
	}
	if (signature_secret_decode(secret_arg, key, sizeof(key), &key_len,
				    &err) < 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		status = EXIT_USAGE;
		goto out;
	}

	if (id_arg != NULL) {
		/* The verifier's own rules: never sign what payhook refuses. */
		if (!signature_id_valid(id_arg)) {
			fprintf(stderr, PROGRAM ": --id must be 1 to %d "
				"visible ASCII characters\n", SIGNATURE_ID_MAX);
			status = EXIT_USAGE;
			goto out;
		}
		snprintf(id, sizeof(id), "%s", id_arg);
	} else {
		unsigned char rnd[ID_RANDOM_BYTES];

		if (random_bytes(rnd, sizeof(rnd)) < 0) {
			fprintf(stderr, PROGRAM ": no random bytes from the "
				"OS\n");
			goto out;
		}
		memcpy(id, "msg_", 4);
		for (size_t i = 0; i < sizeof(rnd); i++)
			snprintf(id + 4 + 2 * i, 3, "%02x", rnd[i]);
	}
	if (ts_arg != NULL) {
		uint64_t unused;

		if (signature_timestamp_parse(ts_arg, &unused) != 0) {
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
		FILE *in = fopen(file, "rb");
		int rc;

		if (in == NULL) {
			fprintf(stderr, PROGRAM ": %s: %s\n", file,
				strerror(errno));
			goto out;
		}
		rc = read_body(in, file, &body);
		fclose(in);
		if (rc < 0)
			goto out;
	} else if (read_body(stdin, "standard input", &body) < 0) {
		goto out;
	}

	if (signature_sign(key, key_len, id, ts, body.data, body.len, sig,
			   sizeof(sig), &err) < 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		goto out;
	}
	if (url != NULL) {
		if (print_curl(url, file, &body, id, ts, sig) < 0)
			goto out;
	} else {
		printf("webhook-id: %s\nwebhook-timestamp: %s\n"
		       "webhook-signature: %s\n", id, ts, sig);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PROGRAM ": write error\n");
		goto out;
	}
	status = EXIT_SUCCESS;
out:
	OPENSSL_cleanse(key, sizeof(key));
	free(body.data);
	if (secret_env != NULL) {
		OPENSSL_cleanse(secret_env, strlen(secret_env));
		free(secret_env);
	}
	return status;
}
