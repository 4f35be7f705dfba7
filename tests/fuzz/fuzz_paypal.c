/* fuzz_paypal.c - libFuzzer target for PayPal's scheme: its five headers and
 * the body through provider_read, the rule of the certificate URLs, and the
 * judgement of what a certificate URL serves (paypal_cert_judge).
 *
 * Input: one byte, then the rest.
 *   b0 % 3 == 0: five NUL-terminated fields (PAYPAL-TRANSMISSION-ID,
 *      -TRANSMISSION-TIME, -TRANSMISSION-SIG, -CERT-URL, -AUTH-ALGO), then
 *      the body, read by the paypal profile. paypal_cert_hosts is
 *      127.0.0.1:1 (nothing listens: a URL that passes the rule costs one
 *      refused connection) and there is no paypal_certs table
 *      (stub_cert_store.c).
 *   b0 % 3 == 1: the rest is a URL for paypal_cert_url_allowed.
 *   b0 % 3 == 2: the rest is what a certificate URL served (PEM), judged
 *      against the system's CAs at the time now.
 *
 * Asserted: no delivery is ever accepted (no certificate can be had, so
 * none verifies), its status is one of provider_status with a reason; a URL
 * allowed is https://, names the one allowed host and port, has no user,
 * query or fragment and lies under /v1/notifications/certs/; a certificate
 * trusted carries a key and is within its dates.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#include "configuration.h"
#include "fuzz.h"
#include "log.h"
#include "paypal_cert.h"
#include "payload.h"
#include "pipeline.h"
#include "provider.h"
#include "request.h"

#define FIELDS 5
#define PARAMS_MAX 8

static const char *const header_names[FIELDS] = {
	"PAYPAL-TRANSMISSION-ID", "PAYPAL-TRANSMISSION-TIME",
	"PAYPAL-TRANSMISSION-SIG", "PAYPAL-CERT-URL", "PAYPAL-AUTH-ALGO",
};

static struct config cfg;
static struct provider_set *set;
static struct payload_parser *parser;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct error err;

	(void)argc;
	(void)argv;
	log_init("payhook-fuzz", LOG_LEVEL_ERROR);
	if (setenv("PAYHOOK_PROVIDERS", "paypal", 1) != 0 ||
	    setenv("PAYHOOK_PAYPAL_WEBHOOK_ID", "1JE4291016473214C", 1) != 0 ||
	    setenv("PAYHOOK_PAYPAL_CERT_HOSTS", "127.0.0.1:1", 1) != 0 ||
	    setenv("PAYHOOK_PAYPAL_CERT_TIMEOUT_MS", "200", 1) != 0 ||
	    /* A year: the seeds' transmission time stays within it, so the
	     * fuzzer reaches the certificate's fetch. */
	    setenv("PAYHOOK_PAYPAL_TOLERANCE_S", "31536000", 1) != 0 ||
	    setenv("PAYHOOK_LOG_LEVEL", "error", 1) != 0)
		FUZZ_FATAL("setenv failed");
	if (pipeline_load_config(&cfg, NULL, &err) != 0)
		FUZZ_FATAL("configuration: %s", err.message);
	set = provider_set_new(&cfg, &err);
	parser = payload_parser_new();
	if (set == NULL || parser == NULL)
		FUZZ_FATAL("providers: %s", set == NULL ? err.message : "parser");
	return 0;
}

/* The headers and the body, read twice: the same status both times. */
static void delivery(char *text, size_t size)
{
	static struct provider_batch batch;
	char *items[PARAMS_MAX + 1], storage[4096], *at = text;
	char *end = text + size;
	size_t count = 0, used = 0;
	const struct provider *p = provider_enabled(set, CONFIG_PROVIDER_PAYPAL);
	enum provider_status first = PROVIDER_ERROR;
	struct request req;
	struct error why;

	FUZZ_CHECK(p != NULL, "paypal not enabled");
	items[count++] = strcpy(storage, "REQUEST_URI=/webhook/paypal");
	used = strlen(storage) + 1;
	for (size_t i = 0; i < FIELDS; i++) {
		char *nul = memchr(at, '\0', (size_t)(end - at));
		char cgi[64];
		int n;

		if (request_header_param(header_names[i], cgi, sizeof(cgi)) == 0) {
			n = snprintf(storage + used, sizeof(storage) - used,
				     "%s=%s", cgi, at);
			if (n > 0 && (size_t)n < sizeof(storage) - used) {
				items[count++] = storage + used;
				used += (size_t)n + 1;
			}
		}
		at = nul != NULL ? nul + 1 : end;
	}
	items[count] = NULL;
	req = (struct request){ .params = items };
	for (int round = 0; round < 2; round++) {
		enum provider_status st;

		error_clear(&why);
		st = provider_read(p, &req, parser, at, (size_t)(end - at),
				   time(NULL), &batch, &why);
		FUZZ_CHECK(st == PROVIDER_UNAUTHORIZED || st == PROVIDER_INVALID ||
				   st == PROVIDER_UNAVAILABLE ||
				   st == PROVIDER_ERROR,
			   "a delivery no certificate can verify: status %d",
			   (int)st);
		FUZZ_CHECK(why.message[0] != '\0', "status %d without a reason",
			   (int)st);
		if (round == 1)
			FUZZ_CHECK(st == first || st == PROVIDER_UNAUTHORIZED,
				   "a second reading: %d then %d", (int)first,
				   (int)st);
		first = st;
	}
}

/* Independent of libcurl's parser: glibc's inet_aton reads the numeric
 * forms of an IPv4 address (127.1, 0x7f.0.0.1) as libcurl does. */
static void url(const char *text)
{
	struct error why;
	char authority[256], host[256];
	const char *rest, *colon;
	struct in_addr addr;
	size_t len;

	if (paypal_cert_url_allowed(&cfg, text, &why) != 0) {
		FUZZ_CHECK(why.message[0] != '\0', "a URL refused without why");
		return;
	}
	FUZZ_CHECK(strncasecmp(text, "https://", 8) == 0, "allowed: %s", text);
	FUZZ_CHECK(strpbrk(text, "@?#%\\") == NULL,
		   "allowed with @, ?, #, %% or \\: %s", text);
	rest = strchr(text + 8, '/');
	FUZZ_CHECK(rest != NULL && strncmp(rest, "/v1/notifications/certs/", 24) == 0 &&
			   strstr(rest, "..") == NULL,
		   "allowed outside the certificates' folder: %s", text);
	len = (size_t)(rest - (text + 8));
	FUZZ_CHECK(len < sizeof(authority), "an authority that long: %s", text);
	memcpy(authority, text + 8, len);
	authority[len] = '\0';
	colon = strrchr(authority, ':');
	FUZZ_CHECK(colon != NULL && strtol(colon + 1, NULL, 10) == 1,
		   "allowed on another port: %s", text);
	memcpy(host, authority, (size_t)(colon - authority));
	host[colon - authority] = '\0';
	FUZZ_CHECK(inet_aton(host, &addr) != 0 &&
			   ntohl(addr.s_addr) == 0x7f000001,
		   "allowed on another host: %s", text);
}

static void certificate(const char *pem, size_t len)
{
	struct paypal_cert cert = { NULL, NULL, 0, 0 };
	struct error why;
	time_t now = time(NULL);
	enum paypal_cert_status st =
		paypal_cert_judge(&cfg, pem, len, now, &cert, &why);

	FUZZ_CHECK(st == PAYPAL_CERT_OK || st == PAYPAL_CERT_REFUSED ||
			   st == PAYPAL_CERT_ERROR,
		   "status %d", (int)st);
	if (st != PAYPAL_CERT_OK) {
		FUZZ_CHECK(why.message[0] != '\0', "refused without why");
		FUZZ_CHECK(cert.key == NULL && cert.verifier == NULL,
			   "a key with a refusal");
		return;
	}
	FUZZ_CHECK(cert.key != NULL && cert.verifier != NULL &&
			   cert.valid_from <= now &&
			   now <= cert.valid_until,
		   "trusted out of its dates");
	paypal_cert_clear(&cert);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1)
		return 0;
	/* NUL-terminated: the fields, the URL and the PEM are C strings. */
	text = malloc(size);
	if (text == NULL)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 3) {
	case 0:
		delivery(text, size - 1);
		break;
	case 1:
		url(text);
		break;
	default:
		certificate(text, size - 1);
		break;
	}
	free(text);
	return 0;
}
