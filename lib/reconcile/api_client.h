/* api_client.h - the polite GET of a provider's list API (prefix
 * api_client_): libcurl with TLS verified, the key in one header (or a
 * credential that expires, kept current by the caller's authorize), at most
 * reconcile_rate_per_s requests a second, a 429 or 503's Retry-After
 * waited for, other 429s, 5xx answers and no answer retried with back-off
 * up to reconcile_max_retries tries, no wait past the caller's deadline,
 * and the caller told while it waits long. A page that still fails is an
 * error that says why, never quoting the key.
 */
#ifndef PAYHOOK_API_CLIENT_H
#define PAYHOOK_API_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* The longest Link header kept (Shopify's: two URLs with page_info). */
#define API_CLIENT_LINK_MAX 4096

struct api_client; /* one provider's connection and pacing; opaque */

struct api_client_options {
	/* "Authorization: Bearer ..." (copied); NULL when authorize sets
	 * it. */
	const char *auth_header;
	/* Optional: more headers every request carries, NULL-terminated
	 * (Lemon Squeezy's "Accept: application/vnd.api+json"); copied, not
	 * secrets. */
	const char *const *headers;
	/* Optional: a credential that expires (an OAuth2 access token).
	 * Called before each GET and POST with renew false, and once more
	 * with renew true when the answer was 401 (the request is then sent
	 * again): it makes the client's header current with
	 * api_client_set_auth, asking for a new credential (with
	 * api_client_post_form, which never calls it) when it must. Returns
	 * 0, or -1 with err set, which fails the request. */
	int (*authorize)(void *authorize_ctx, struct api_client *client,
			 bool renew, struct error *err);
	void *authorize_ctx;
	long rate_per_s;          /* requests a second at most */
	int max_retries;          /* tries of a page that fails */
	long timeout_ms;          /* one request, connecting included */
	bool https_only;          /* refuse any other scheme (the base is
				   * https://) */
	/* Asked during waits: true ends them early (a stop signal came),
	 * and the page fails with "stopped". May be NULL. */
	bool (*stopping)(void);
	/* When the caller's time is up (timing_now_us; 0: never): a wait
	 * (Retry-After, a back-off) that would end later fails the page. */
	int64_t deadline_us;
	/* Optional: called before a wait of a second or more and every
	 * API_CLIENT_WAIT_CALL_S seconds during it, with wait_ctx (the
	 * pass renews its lease there, so a wait never outlasts it).
	 * Returns 0 to go on waiting, or -1 with err set to end the page
	 * with that error. */
	int (*on_wait)(void *wait_ctx, struct error *err);
	void *wait_ctx;
	/* One try, and a 429 or 503's Retry-After not waited for: the
	 * caller's queue waits (api_client_retry_after says how long). */
	bool no_wait;
};

/* How often on_wait is called during one long wait. */
#define API_CLIENT_WAIT_CALL_S 5

/* Calls curl_global_init once per process: before any thread exists.
 * Returns 0, or -1 with err set. */
int api_client_global_init(struct error *err);
void api_client_global_cleanup(void);

/* Returns a client, or NULL with err set (out of memory, libcurl). */
struct api_client *api_client_new(const struct api_client_options *options,
				  struct error *err);

/* Frees the client, wiping its copy of the key; NULL is fine. */
void api_client_free(struct api_client *client);

/* GETs url, paced and retried as above. Returns 0 with the 200 answer's
 * body in *body[0..*len) (NUL-terminated, the client's until the next
 * call), or -1 with err saying why the page failed (no answer, the status
 * after the last try, 401/403, a wait too long). */
int api_client_get(struct api_client *client, const char *url,
		   const char **body, size_t *len, struct error *err);

/* api_client_get's POST: json (NUL-terminated) as the body, with
 * "Content-Type: application/json" (Square's SearchEvents). The same
 * pacing, retries and answers. */
int api_client_post(struct api_client *client, const char *url,
		    const char *json, const char **body, size_t *len,
		    struct error *err);

/* A POST of form (NUL-terminated, already URL-encoded) as
 * "application/x-www-form-urlencoded", with auth_header (e.g. "Authorization:
 * Basic ...": an OAuth2 token request) in place of the client's own, and
 * never through authorize. The same pacing, retries and answers as
 * api_client_get. */
int api_client_post_form(struct api_client *client, const char *url,
			 const char *form, const char *auth_header,
			 const char **body, size_t *len, struct error *err);

/* Makes auth_header (copied) the header of the client's next GETs and
 * POSTs, wiping the one before; the same header again changes nothing.
 * Returns 0, or -1 with err set (out of memory: the client then sends
 * none). */
int api_client_set_auth(struct api_client *client, const char *auth_header,
			struct error *err);

/* The status of the last answer (0: none came) with its body in
 * *body[0..*len) (the client's until the next call): after a page failed,
 * what the provider said. */
long api_client_last_answer(const struct api_client *client,
			    const char **body, size_t *len);
/* The Link header of the last answer (Shopify's page_info paging), or
 * NULL when it had none (or one longer than API_CLIENT_LINK_MAX). */
const char *api_client_link(const struct api_client *client);

/* The Retry-After of the last answer in seconds, or -1 when it had none. */
long api_client_retry_after(const struct api_client *client);

/* Requests sent so far (retries included). */
unsigned long api_client_requests(const struct api_client *client);

#endif
