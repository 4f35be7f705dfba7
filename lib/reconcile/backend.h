/* backend.h - one provider's list API behind one interface (prefix
 * backend_), as curl's lib/vtls backends are: each provider's module says
 * where its list lives, how a page of one closed time window is asked
 * for, how the key is sent and how a page reads; the pass (reconcile.h)
 * does the rest the same way for all of them. Adding a provider is one
 * module and one line in backends.c's table.
 *
 * A provider's events are listed in closed windows [from, to) of their
 * creation time, oldest window first: a window whose every page was
 * recorded moves the cursor to its end, whatever order the provider
 * returns the pages of one window in (Stripe: newest first).
 */
#ifndef PAYHOOK_BACKEND_H
#define PAYHOOK_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "configuration.h"
#include "error.h"

struct api_client;
struct json_object;

/* The longest page cursor (Stripe: the last event's id; Shopify: a
 * page_info token, which carries the list's filters). */
#define BACKEND_CURSOR_MAX 1023
#define BACKEND_URL_MAX 2048
#define BACKEND_HEADER_MAX 1024
#define BACKEND_JSON_MAX 4096

/* One closed window of creation times, Unix seconds: [from, to). */
struct backend_window {
	int64_t from, to;
};

/* One listed event: its JSON text, as the provider would deliver it. */
struct backend_event {
	char *body;  /* NUL-terminated; owned by the page */
	size_t len;
	/* A header the webhook would carry beside the body, as a CGI
	 * parameter ("HTTP_X_SHOPIFY_TOPIC=orders/paid"), or NULL. Owned by
	 * the page. */
	char *header;
};

/* What a snapshot backend reads a page from (parse_answer below). */
struct backend_answer {
	const char *body;   /* body[0..len) */
	size_t len;
	const char *cursor; /* the cursor the page was asked with, or NULL */
	const char *link;   /* the answer's Link header, or NULL */
	/* The window the page was asked for (never NULL): a list without a
	 * time filter (Lemon Squeezy's orders) is cut to it here. */
	const struct backend_window *window;
};

/* What a fetch of one notified object came to (struct backend's fetch). */
enum backend_fetch {
	BACKEND_FETCHED = 0,  /* page holds what to record */
	BACKEND_UNKNOWN,      /* 404: the API does not know the object */
	BACKEND_FETCH_FAILED, /* no answer, 5xx, 429, 401/403, or not the
			       * documented JSON: err says which */
};

/* One page as read. */
struct backend_page {
	struct backend_event *events; /* events[0..count) */
	size_t count;
	bool has_more;                /* another page of this window follows */
	char next[BACKEND_CURSOR_MAX + 1]; /* where it starts (has_more;
					    * BACKEND_PAGING_CURSOR) */
	/* How many events the provider says the whole list holds (PAY.JP
	 * count, KOMOJU total); -1 when the page does not say. */
	long long total;
};

/* How a window's next page is named. */
enum backend_paging {
	/* page_url's cursor is the page's next (Stripe, Paddle, Square). */
	BACKEND_PAGING_CURSOR,
	/* The cursor is the decimal count of the window's events listed
	 * before the page (PAY.JP's offset). */
	BACKEND_PAGING_OFFSET,
	/* The cursor is the decimal number of the page, 1 the first
	 * (KOMOJU's page). */
	BACKEND_PAGING_NUMBER,
};

struct backend {
	enum config_provider profile;
	const char *default_base;   /* the provider's public API */
	int64_t retention_s;        /* how long the provider keeps its events */
	int64_t window_s;           /* the longest window one walk lists */
	/* Writes the URL of the page of window w that starts after cursor
	 * (NULL for the first) into url (BACKEND_URL_MAX bytes), base
	 * without its trailing '/'. Returns 0, or -1 with err set. */
	int (*page_url)(const char *base, const struct backend_window *w,
			const char *cursor, char *url, struct error *err);
	/* Writes the header that carries key ("Authorization: Bearer ...")
	 * into out (BACKEND_HEADER_MAX bytes). Returns 0, or -1 with err
	 * set (never quoting the key). */
	int (*auth_header)(const char *key, char *out, struct error *err);
	/* Reads a page body[0..len) into page (backend_page_cleanup frees
	 * it). Returns 0, or -1 with err saying how the body is not the
	 * documented JSON (page then holds nothing). NULL when parse_answer
	 * is set. */
	int (*parse_page)(const char *body, size_t len,
			  struct backend_page *page, struct error *err);
	/* Optional (NULL: the page is a GET of page_url). Writes the JSON
	 * body of a POST to page_url that asks for the page of window w
	 * after cursor (NULL for the first) into json (BACKEND_JSON_MAX
	 * bytes, NUL-terminated). Returns 0, or -1 with err set. */
	int (*page_json)(const struct backend_window *w, const char *cursor,
			 char *json, struct error *err);
	/* Optional. Called when a page failed with the provider's answer
	 * (status 0: none came; body[0..len)): rewrites err with what the
	 * operator must do when it recognises the answer (Square: events
	 * not enabled), else leaves it. */
	void (*explain_failure)(long status, const char *body, size_t len,
				struct error *err);
	/* Offset or page-number paging walks a list that moves while it is
	 * read: a page whose total differs from the window's first page's
	 * makes the walk list the window again from its start. */
	enum backend_paging paging;
	/* Optional, for snapshot backends (Razorpay, Shopify) that list
	 * objects rather than events: reads a page knowing the cursor it was
	 * asked with and the answer's Link header, and maps each object to
	 * the body (and header) its webhook would give. When set, the pass
	 * calls it instead of parse_page. Same contract as parse_page. */
	int (*parse_answer)(const struct backend_answer *answer,
			    struct backend_page *page, struct error *err);
	/* Optional: the member of a listed event that says whether it is
	 * live (Stripe's and PAY.JP's "livemode"), checked against the key
	 * (backend_key_live): a test key's data is not the merchant's books,
	 * nor a live key's when the key is a test one. */
	const char *livemode_member;
	/* Optional: a member whose presence marks another account's event
	 * (Stripe Connect's "account"): the key's account lists its own. */
	const char *account_member;
	/* Optional: the start-up checks of the provider's own keys
	 * (Shopify's shop; Paddle's key against its base). Returns 0, or -1
	 * with err saying what to set. */
	int (*check_config)(const struct config *cfg, struct error *err);
	/* Optional: writes the base to use when <profile>_api_base is unset
	 * and default_base is NULL (Shopify: the shop's own host) into out
	 * (BACKEND_URL_MAX bytes). Returns 0, or -1 with err set. */
	int (*base_for)(const struct config *cfg, char *out, struct error *err);
	/* Optional: the key is OAuth2 client credentials (PayPal's
	 * client_id:secret), exchanged at base + token_path for an access
	 * token (oauth.h) that every page then carries as a Bearer token;
	 * auth_header writes the token request's header (HTTP Basic). */
	const char *token_path;
	/* Optional: more headers every page request carries, NULL-terminated
	 * (Lemon Squeezy's JSON:API Accept). */
	const char *const *headers;
	/* Optional, for a provider that only notifies (notify_fetch.h):
	 * fetches the object a notification names (object_id, its shape
	 * checked when it was queued) from base with client, into page: the
	 * bodies to record, each the object as the API gives it (with what
	 * belongs to it that the API lists apart, as the provider's own
	 * embedding would put it). Returns an enum backend_fetch, err set
	 * unless BACKEND_FETCHED. */
	enum backend_fetch (*fetch)(struct api_client *client,
				    const char *base, const char *object_id,
				    struct backend_page *page,
				    struct error *err);
};

/* Whether cfg holds <profile>_api_key (not empty): the profile is
 * reconciled. Can't fail. */
bool backend_has_key(const struct config *cfg, enum config_provider profile);

/* Whether key is a live key (1: "sk_live_", "rk_live_"), a test key (0:
 * "sk_test_", "rk_test_"), or neither (-1), as Stripe and PAY.JP name
 * theirs. Can't fail. */
int backend_key_live(const char *key);

/* Whether event (a listed body) is the account's whose key lists it, by
 * b's livemode_member and account_member. Returns 0, or -1 with err
 * saying why not (never quoting the key). */
int backend_check_owner(const struct backend *b, const char *key,
			const struct backend_event *event, struct error *err);

/* ---- what every backend's page reading shares (as curl's vtls.c) ---- */

/* Starts reading a page: page emptied (total -1), *root the body as one
 * JSON object (the caller puts it; backend_page_end does). Returns 0, or
 * -1 with err "<name>: the page is not one JSON object (cut short?)". */
int backend_page_begin(const char *name, const char *body, size_t len,
		       struct backend_page *page, struct json_object **root,
		       struct error *err);

/* What each listed event must carry to be one. */
struct backend_event_shape {
	const char *list;          /* the array's name, for the message */
	const char *kind_member;   /* "object" = kind_value ("event"), or */
	const char *kind_value;    /* NULL: no such member */
	const char *id_member;     /* "id", "event_id" */
	/* Optional: the form the id must have (it is the next page's
	 * cursor: backend_plain_id). */
	bool (*id_form)(const char *id);
	const char *type_member;   /* "type", "event_type" */
	const char *object_member; /* a member that must be an object, or NULL */
	const char *needs;         /* "an id and a type": for the message */
	/* Optional: mends an event before it is kept (Square's zone-less
	 * times). */
	void (*mend)(struct json_object *event);
};

/* Adds every item of the array items to page as a listed event (its JSON
 * text, as its webhook would deliver it), each checked against shape;
 * *last (may be NULL) is the last one's id. Returns 0, or -1 with err
 * "<name>: item N of <list> is not an event with <needs>" (or out of
 * memory). */
int backend_page_events(const char *name, struct json_object *items,
			const struct backend_event_shape *shape,
			struct backend_page *page, const char **last,
			struct error *err);

/* Sets whether a page of the window follows. A page that says more but
 * holds nothing would be asked for again (offsets and page numbers do not
 * move by it): refused. Returns 0, or -1 with err set. */
int backend_page_more(const char *name, struct backend_page *page, bool more,
		      struct error *err);

/* Ends reading a page: with rc != 0 the page is emptied; root is put.
 * Returns rc. */
int backend_page_end(struct backend_page *page, struct json_object *root,
		     int rc);

/* Whether id is letters, digits and '_' only, and not empty: safe in a
 * URL as it is (an event id that is the next page's cursor). Can't fail. */
bool backend_plain_id(const char *id);

/* Whether text is a count of 1 to 18 decimal digits: an offset or a page
 * number that is the next page's cursor. Can't fail. */
bool backend_decimal(const char *text);

/* Writes the list URL as fmt says into url (BACKEND_URL_MAX bytes).
 * Returns 0, or -1 with err "<name>: the list URL is too long". */
int backend_url(const char *name, char *url, struct error *err,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The longest backend_window_query text, with its '\0'. */
#define BACKEND_QUERY_TIME_MAX 32

/* Writes window w's first and last second (w->to - 1: the bounds of the
 * APIs that take RFC 3339 in the query are inclusive) as RFC 3339 UTC with
 * ':' written %3A, a query value, into from and to
 * (BACKEND_QUERY_TIME_MAX bytes each). Returns 0, or -1 with err
 * "<name>: the window has no calendar date". */
int backend_window_query(const char *name, const struct backend_window *w,
			 char *from, char *to, struct error *err);

/* Frees what a page holds and empties it; an empty page is fine. */
void backend_page_cleanup(struct backend_page *page);

/* Appends a copy of body[0..len) to page. Returns 0, or -1 when out of
 * memory (page unchanged). For the backends' parse_page. */
int backend_page_add(struct backend_page *page, const char *body, size_t len);

/* As backend_page_add, with a copy of header (a CGI parameter, see
 * struct backend_event; NULL for none). */
int backend_page_add_with(struct backend_page *page, const char *body,
			  size_t len, const char *header);

/* As backend_page_add_with, of obj's plain JSON text. Returns 0, or -1
 * when out of memory. */
int backend_page_add_json(struct backend_page *page, struct json_object *obj,
			  const char *header);

/* The page body[0..len) as one JSON value (strict, nothing after it), a
 * new json-c object the caller puts; NULL when it is not (cut short?). */
struct json_object *backend_parse_json(const char *body, size_t len);

/* Reads a page with b's parse_answer when it has one (answer as given),
 * else with its parse_page (answer's body). Same contract. */
int backend_read_page(const struct backend *b,
		      const struct backend_answer *answer,
		      struct backend_page *page, struct error *err);

/* Writes prefix and key ("Authorization: Bearer " and the key) into out
 * (BACKEND_HEADER_MAX bytes). Returns 0, or -1 with err saying that the
 * key named key_name is too long (never quoting it). */
int backend_key_header(const char *prefix, const char *key,
		       const char *key_name, char *out, struct error *err);

/* The string member name of obj, or NULL when obj has none. */
const char *backend_string(struct json_object *obj, const char *name);

/* GETs url with client for a fetch: BACKEND_FETCHED with the answer in
 * *body[0..*len) (the client's until its next call), BACKEND_UNKNOWN for a
 * 404, else BACKEND_FETCH_FAILED; err set unless BACKEND_FETCHED. */
enum backend_fetch backend_fetch_get(struct api_client *client,
				     const char *url, const char **body,
				     size_t *len, struct error *err);

/* Writes "Authorization: Basic <base64 of key:>" (the key as the user,
 * an empty password: PAY.JP, KOMOJU) into out (BACKEND_HEADER_MAX bytes).
 * Returns 0, or -1 with err saying that the key named key_name is too long
 * (never quoting it). */
int backend_basic_auth(const char *key, const char *key_name, char *out,
		       struct error *err);

/* Writes "Authorization: Basic <base64 of pair>" (a key that is a user and
 * a password already: Razorpay's key_id:key_secret, PayPal's
 * client_id:secret) into out (BACKEND_HEADER_MAX bytes). Returns 0, or -1
 * with err "<key_name> must be <form>" when pair is not two non-empty
 * parts around a ':', or that it is too long (never quoting it). */
int backend_basic_pair(const char *pair, const char *key_name,
		       const char *form, char *out, struct error *err);

#endif
