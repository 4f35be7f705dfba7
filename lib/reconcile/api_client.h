/* api_client.h - the polite GET of a provider's list API (prefix
 * api_client_): libcurl with TLS verified, the key in one header, at most
 * reconcile_rate_per_s requests a second, a 429 or 503's Retry-After
 * waited for, other 429s, 5xx answers and no answer retried with back-off
 * up to reconcile_max_retries tries, no wait past the caller's deadline,
 * and the caller told while it waits long. A page that still fails is an
 * error that says why, never quoting the key.
 */
#ifndef PAYHOOK_API_CLIENT_H
#define PAYHOOK_API_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* The longest Link header kept (Shopify's: two URLs with page_info). */
#define API_CLIENT_LINK_MAX 4096

struct api_client; /* one provider's connection and pacing; opaque */

struct api_client_options {
	const char *auth_header;  /* "Authorization: Bearer ..." (copied) */
	long rate_per_s;          /* requests a second at most */
	int max_retries;          /* tries of a page that fails */
	long timeout_ms;          /* one request, connecting included */
	bool https_only;          /* refuse any other scheme (the base is
				   * https://) */
	/* Set (by a signal handler) to end waits early: the page then
	 * fails with "stopped". May be NULL. */
	volatile sig_atomic_t *stop;
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
	/* Optional: a header every request carries beside the key's
	 * ("GoCardless-Version: 2015-07-06"; copied). */
	const char *extra_header;
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
