/* paypal_cert.c - PayPal's message-verification certificates (see
 * paypal_cert.h): the URL rule, the judgement of a PEM with libcrypto, and
 * the cache (memory, table paypal_certs, one fetch with libcurl).
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "cert_store.h"
#include "curlopts.h"
#include "endpoint.h"
#include "log.h"
#include "paypal_cert.h"
#include "timing.h"
#include "url.h"

#define CERT_PATH "/v1/notifications/certs/"
#define CERT_NAME_CHARS                                                        \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
/* Certificates this worker keeps in memory. */
#define CACHE_SLOTS 8
#define URL_MAX 500
/* A URL refused is not fetched again for this long (a flood of forged
 * URLs on PayPal's own host costs one fetch each a minute). */
#define REFUSED_FOR_S 60

/* ---- where a certificate may come from ---- */

int paypal_cert_url_allowed(const struct config *cfg, const char *url,
			    struct error *why)
{
	struct endpoint hosts[ENDPOINT_LIST_MAX];
	struct url_parts u;
	struct error inner;
	size_t n = 0, hlen;
	const char *host, *name;

	if (strlen(url) > URL_MAX)
		return error_set(why, "PAYPAL-CERT-URL is too long");
	/* Only the plain form PayPal sends: libcurl forgives more (three
	 * slashes, backslashes, escapes, an empty user, query or fragment
	 * it then drops), and what it forgives is not judged here. */
	if (strncasecmp(url, "https://", 8) != 0 || url[8] == '/' ||
	    strpbrk(url, "\\%@?#") != NULL)
		return error_set(why, "PAYPAL-CERT-URL is not a plain https:// "
				 "URL");
	if (url_parse(url, &u, &inner) != 0)
		return error_set(why, "PAYPAL-CERT-URL: %s", inner.message);
	if (strcmp(u.scheme, "https") != 0)
		return error_set(why, "PAYPAL-CERT-URL is not https://");
	if (u.userinfo || u.query || u.fragment)
		return error_set(why, "PAYPAL-CERT-URL has a user, a query or a "
				 "fragment");
	/* One plain name under the folder (PayPal's are CERT-<hex and
	 * dashes>): no escape a server would decode into another path. */
	name = u.path + strlen(CERT_PATH);
	if (strncmp(u.path, CERT_PATH, strlen(CERT_PATH)) != 0 ||
	    name[0] == '\0' || strstr(name, "..") != NULL ||
	    strspn(name, CERT_NAME_CHARS) != strlen(name))
		return error_set(why, "PAYPAL-CERT-URL is not a certificate "
				 "under " CERT_PATH);
	if (endpoint_list_parse(cfg->paypal_cert_hosts, 443, hosts, &n,
				&inner) != 0)
		return error_set(why, "paypal_cert_hosts: %s", inner.message);
	/* url_parse keeps an IPv6 address's brackets; endpoint does not. */
	host = u.host;
	hlen = strlen(host);
	if (hlen > 2 && host[0] == '[' && host[hlen - 1] == ']') {
		host++;
		hlen -= 2;
	}
	for (size_t i = 0; i < n; i++)
		if (strlen(hosts[i].host) == hlen &&
		    strncasecmp(hosts[i].host, host, hlen) == 0 &&
		    hosts[i].port == u.port)
			return 0;
	return error_set(why, "PAYPAL-CERT-URL's host %s:%ld is not one of "
			 "paypal_cert_hosts", u.host, u.port);
}

/* ---- what makes a certificate trusted ---- */

/* Whether leaf's subject has exactly one CN, and it is one of PayPal's. */
static bool paypal_cn(X509 *leaf)
{
	X509_NAME *name = X509_get_subject_name(leaf);
	int at = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
	const ASN1_STRING *cn;
	const char *text;
	int len;

	if (at < 0 || X509_NAME_get_index_by_NID(name, NID_commonName, at) >= 0)
		return false;
	cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, at));
	text = (const char *)ASN1_STRING_get0_data(cn);
	len = ASN1_STRING_length(cn);
	return (len == (int)strlen(PAYPAL_CERT_CN_LIVE) &&
		memcmp(text, PAYPAL_CERT_CN_LIVE, (size_t)len) == 0) ||
	       (len == (int)strlen(PAYPAL_CERT_CN_SANDBOX) &&
		memcmp(text, PAYPAL_CERT_CN_SANDBOX, (size_t)len) == 0);
}

/* An ASN1_TIME as Unix seconds; 0 when it cannot be read. */
static time_t unix_time(const ASN1_TIME *t)
{
	struct tm tm;

	if (ASN1_TIME_to_tm(t, &tm) != 1)
		return 0;
	return timegm(&tm);
}

enum paypal_cert_status paypal_cert_judge(const struct config *cfg,
					  const char *pem, size_t len,
					  time_t at, struct paypal_cert *out,
					  struct error *why)
{
	enum paypal_cert_status st = PAYPAL_CERT_ERROR;
	BIO *bio = len <= (size_t)CERT_STORE_PEM_MAX ?
			   BIO_new_mem_buf(pem, (int)len) : NULL;
	STACK_OF(X509) *untrusted = sk_X509_new_null();
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509 *leaf = NULL, *x;
	STACK_OF(X509) *chain;
	time_t from = 0, until = 0;

	if (len > (size_t)CERT_STORE_PEM_MAX) {
		st = PAYPAL_CERT_REFUSED;
		error_set(why, "the certificate is larger than %d bytes",
			  CERT_STORE_PEM_MAX);
		goto out;
	}
	if (bio == NULL || untrusted == NULL || store == NULL || ctx == NULL) {
		error_set(why, "out of memory judging a certificate");
		goto out;
	}
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		if (leaf == NULL)
			leaf = x;
		else if (sk_X509_push(untrusted, x) == 0) {
			X509_free(x);
			error_set(why, "out of memory judging a certificate");
			goto out;
		}
	}
	ERR_clear_error();
	st = PAYPAL_CERT_REFUSED;
	if (leaf == NULL) {
		error_set(why, "the certificate URL served no certificate");
		goto out;
	}
	if (!paypal_cn(leaf)) {
		error_set(why, "the certificate is not PayPal's message "
			  "verification certificate (its CN)");
		goto out;
	}
	if ((cfg->paypal_ca_file != NULL ?
		     X509_STORE_load_file(store, cfg->paypal_ca_file) :
		     X509_STORE_set_default_paths(store)) != 1 ||
	    X509_STORE_CTX_init(ctx, store, leaf, untrusted) != 1) {
		st = PAYPAL_CERT_ERROR;
		ERR_clear_error();
		error_set(why, "the CAs to verify PayPal's certificate with "
			  "cannot be loaded (paypal_ca_file)");
		goto out;
	}
	/* Its chain and its dates, at the time judged. */
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), at);
	if (X509_verify_cert(ctx) != 1) {
		error_set(why, "PayPal's certificate does not verify: %s",
			  X509_verify_cert_error_string(
				  X509_STORE_CTX_get_error(ctx)));
		ERR_clear_error();
		goto out;
	}
	chain = X509_STORE_CTX_get0_chain(ctx);
	for (int i = 0; i < sk_X509_num(chain); i++) {
		time_t nb = unix_time(X509_get0_notBefore(sk_X509_value(chain, i)));
		time_t na = unix_time(X509_get0_notAfter(sk_X509_value(chain, i)));

		if (nb > from)
			from = nb;
		if (i == 0 || na < until)
			until = na;
	}
	out->key = X509_get_pubkey(leaf);
	out->verifier = EVP_MD_CTX_new();
	if (out->key == NULL || out->verifier == NULL ||
	    EVP_DigestVerifyInit(out->verifier, NULL, EVP_sha256(), NULL,
				 out->key) != 1) {
		st = PAYPAL_CERT_ERROR;
		ERR_clear_error();
		paypal_cert_clear(out);
		error_set(why, "PayPal's certificate's key cannot be read");
		goto out;
	}
	out->valid_from = from;
	out->valid_until = until;
	st = PAYPAL_CERT_OK;
out:
	X509_free(leaf);
	sk_X509_pop_free(untrusted, X509_free);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	BIO_free(bio);
	return st;
}

void paypal_cert_clear(struct paypal_cert *cert)
{
	EVP_MD_CTX_free(cert->verifier);
	EVP_PKEY_free(cert->key);
	cert->verifier = NULL;
	cert->key = NULL;
}

/* ---- the cache ---- */

struct slot {
	char url[URL_MAX + 1];       /* "": free */
	struct paypal_cert cert;     /* key NULL: refused until then */
	time_t refused_until;
	unsigned long long used;     /* the last use, for eviction */
};

struct paypal_certs {
	const struct config *cfg;
	struct cert_store *store;    /* NULL until first needed */
	struct slot slots[CACHE_SLOTS];
	unsigned long long uses;
	/* A database fault was logged (once a minute at most). */
	time_t store_said_s;
};

struct paypal_certs *paypal_certs_new(const struct config *cfg,
				      struct error *err)
{
	struct paypal_certs *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		error_set(err, "paypal certificates: out of memory");
		return NULL;
	}
	c->cfg = cfg;
	return c;
}

void paypal_certs_free(struct paypal_certs *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		paypal_cert_clear(&c->slots[i].cert);
	cert_store_free(c->store);
	free(c);
}

static struct slot *find_slot(struct paypal_certs *c, const char *url)
{
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		if (strcmp(c->slots[i].url, url) == 0)
			return &c->slots[i];
	return NULL;
}

/* The slot for url: a free one, else the least used lately (emptied). */
static struct slot *take_slot(struct paypal_certs *c, const char *url)
{
	struct slot *s = find_slot(c, url), *oldest = &c->slots[0];

	if (s == NULL) {
		for (size_t i = 0; i < CACHE_SLOTS; i++)
			if (c->slots[i].used < oldest->used)
				oldest = &c->slots[i];
		s = oldest;
	}
	paypal_cert_clear(&s->cert);
	memset(s, 0, sizeof(*s));
	snprintf(s->url, sizeof(s->url), "%s", url);
	return s;
}

/* A database fault: said in the log at most once a minute; the cache
 * goes on without the table (each worker then fetches for itself). */
static void store_failed(struct paypal_certs *c, const struct error *err)
{
	time_t now = time(NULL);

	if (now - c->store_said_s >= 60) {
		c->store_said_s = now;
		log_warn("paypal certificates: %s (fetching without the "
			 "shared table)", err->message);
	}
}

/* The table, opened at first need; NULL when it cannot be. */
static struct cert_store *store_of(struct paypal_certs *c)
{
	struct error err;

	if (c->store == NULL) {
		c->store = cert_store_new(c->cfg, &err);
		if (c->store == NULL)
			store_failed(c, &err);
	}
	return c->store;
}

int paypal_certs_check(struct paypal_certs *c, struct error *err)
{
	char *pem;
	int rc;

	if (c->store == NULL) {
		c->store = cert_store_new(c->cfg, err);
		if (c->store == NULL)
			return -1;
	}
	pem = malloc(CERT_STORE_PEM_MAX + 1);
	if (pem == NULL)
		return error_set(err, "paypal certificates: out of memory");
	/* No URL is "": the look-up of none reads the table all the same. */
	rc = cert_store_get(c->store, "", pem, err) < 0 ? -1 : 0;
	free(pem);
	return rc;
}

struct body {
	char *data;
	size_t len;
	bool too_large;
};

static size_t keep(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct body *b = ctx;
	size_t n = size * nmemb;

	if (b->len + n > (size_t)CERT_STORE_PEM_MAX) {
		b->too_large = true;
		return 0;
	}
	memcpy(b->data + b->len, data, n);
	b->len += n;
	return n;
}

/* Fetches url into pem (CERT_STORE_PEM_MAX + 1 bytes) within timeout_ms.
 * Returns PAYPAL_CERT_OK, PAYPAL_CERT_REFUSED (a redirect, a 4xx, too
 * large: not what PayPal serves) or PAYPAL_CERT_UNAVAILABLE (no answer, a
 * 5xx, TLS that does not verify, the time), with why set. */
static enum paypal_cert_status fetch(struct paypal_certs *c, const char *url,
				     long timeout_ms, char *pem,
				     struct error *why)
{
	CURL *h = curl_easy_init();
	struct body b = { pem, 0, false };
	char curl_error[CURL_ERROR_SIZE] = "";
	long status = 0;
	CURLcode rc;
	struct error err;
	enum paypal_cert_status st = PAYPAL_CERT_UNAVAILABLE;

	if (h == NULL) {
		error_set(why, "libcurl: out of memory");
		return PAYPAL_CERT_ERROR;
	}
	if (curlopts_safe(h, timeout_ms, true, "payhook/" PACKAGE_VERSION,
			  &err) != 0 ||
	    curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_error) != CURLE_OK ||
	    (c->cfg->paypal_ca_file != NULL &&
	     curl_easy_setopt(h, CURLOPT_CAINFO, c->cfg->paypal_ca_file) !=
		     CURLE_OK)) {
		curl_easy_cleanup(h);
		error_set(why, "libcurl refused an option");
		return PAYPAL_CERT_ERROR;
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	if (b.too_large) {
		error_set(why, "the certificate URL served more than %d bytes",
			  CERT_STORE_PEM_MAX);
		return PAYPAL_CERT_REFUSED;
	}
	if (rc != CURLE_OK) {
		error_set(why, "PayPal's certificate could not be fetched: %s",
			  curl_error[0] != '\0' ? curl_error
						: curl_easy_strerror(rc));
		return PAYPAL_CERT_UNAVAILABLE;
	}
	if (status == 200) {
		pem[b.len] = '\0';
		return PAYPAL_CERT_OK;
	}
	/* A redirect is never followed; a 4xx names no certificate of
	 * PayPal's. */
	if (status >= 300 && status < 500) {
		st = PAYPAL_CERT_REFUSED;
		error_set(why, "the certificate URL answered HTTP %ld", status);
	} else {
		error_set(why, "PayPal's certificate server answered HTTP %ld",
			  status);
	}
	return st;
}

/* Judges pem at time at into a slot for url. */
static enum paypal_cert_status keep_judged(struct paypal_certs *c,
					   const char *url, const char *pem,
					   time_t at, struct slot **out,
					   struct error *why)
{
	struct paypal_cert cert;
	enum paypal_cert_status st = paypal_cert_judge(c->cfg, pem, strlen(pem),
						       at, &cert, why);
	struct slot *s;

	if (st == PAYPAL_CERT_ERROR)
		return st;
	s = take_slot(c, url);
	s->used = ++c->uses;
	if (st != PAYPAL_CERT_OK) {
		s->refused_until = time(NULL) + REFUSED_FOR_S;
		return st;
	}
	s->cert = cert;
	*out = s;
	return PAYPAL_CERT_OK;
}

/* The milliseconds left before deadline_us (timing_now_us), at least 1. */
static long left_ms(int64_t deadline_us)
{
	int64_t left = (deadline_us - timing_now_us()) / 1000;

	return left > 1 ? (long)left : 1;
}

/* Loads url's certificate into a slot: the table, else one fetch (under
 * the named lock, so that one worker fetches). */
static enum paypal_cert_status load(struct paypal_certs *c, const char *url,
				    time_t at, struct slot **out,
				    struct error *why)
{
	int64_t deadline_us = timing_now_us() +
			      c->cfg->paypal_cert_timeout_ms * 1000LL;
	struct cert_store *store = store_of(c);
	char *pem = malloc(CERT_STORE_PEM_MAX + 1);
	enum paypal_cert_status st;
	struct error err;
	int got = 0, locked = 0;

	if (pem == NULL) {
		error_set(why, "paypal certificates: out of memory");
		return PAYPAL_CERT_ERROR;
	}
	if (store != NULL) {
		got = cert_store_get(store, url, pem, &err);
		if (got < 0)
			store_failed(c, &err);
		if (got == 1) {
			st = keep_judged(c, url, pem, at, out, why);
			goto out;
		}
		if (got == 0) {
			locked = cert_store_lock(store, url,
						 left_ms(deadline_us), &err);
			if (locked < 0)
				store_failed(c, &err);
			/* Another worker fetched it meanwhile? */
			if (locked >= 0 &&
			    cert_store_get(store, url, pem, &err) == 1) {
				if (locked == 1)
					cert_store_unlock(store, url);
				st = keep_judged(c, url, pem, at, out, why);
				goto out;
			}
			if (locked == 0) {
				error_set(why, "PayPal's certificate is being "
					  "fetched by another worker: try "
					  "again");
				st = PAYPAL_CERT_UNAVAILABLE;
				goto out;
			}
		}
	}
	st = fetch(c, url, left_ms(deadline_us), pem, why);
	if (st == PAYPAL_CERT_OK) {
		st = keep_judged(c, url, pem, at, out, why);
		/* Shared only once judged: a table row is always one that
		 * was trusted (and is judged again when read). */
		if (st == PAYPAL_CERT_OK && store != NULL &&
		    cert_store_put(store, url, pem,
				   (int64_t)(*out)->cert.valid_until,
				   &err) != 0)
			store_failed(c, &err);
	} else if (st == PAYPAL_CERT_REFUSED) {
		struct slot *s = take_slot(c, url);

		s->used = ++c->uses;
		s->refused_until = time(NULL) + REFUSED_FOR_S;
	}
	if (locked == 1)
		cert_store_unlock(store, url);
out:
	free(pem);
	return st;
}

enum paypal_cert_status paypal_certs_verifier(struct paypal_certs *c,
					      const char *url, time_t at,
					      const EVP_MD_CTX **verifier,
					      struct error *why)
{
	struct slot *s = find_slot(c, url);
	enum paypal_cert_status st;

	/* Only a URL that passed the rule has a slot: the rule is asked
	 * once per certificate, not per delivery. */
	if (s == NULL && paypal_cert_url_allowed(c->cfg, url, why) != 0)
		return PAYPAL_CERT_REFUSED;
	if (s != NULL && s->cert.key == NULL) {
		if (time(NULL) < s->refused_until) {
			error_set(why, "PayPal's certificate at this URL was "
				  "refused a moment ago");
			return PAYPAL_CERT_REFUSED;
		}
		s = NULL;
	}
	if (s == NULL) {
		st = load(c, url, at, &s, why);
		if (st != PAYPAL_CERT_OK)
			return st;
	}
	s->used = ++c->uses;
	if (at < s->cert.valid_from || at > s->cert.valid_until) {
		error_set(why, "PayPal's certificate is not valid at the "
			  "delivery's time (expired?)");
		return PAYPAL_CERT_REFUSED;
	}
	*verifier = s->cert.verifier;
	return PAYPAL_CERT_OK;
}
