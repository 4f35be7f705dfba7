/* stub_backends.c - in-process stand-ins for every public function of
 * lib/receiver/lock.h, lib/receiver/store.h, lib/receiver/lifecycle_store.h, lib/receiver/early.h and
 * lib/shared/inbox_store.h (what the receiver calls of it), linked into the
 * fuzz_request target instead of lib/lock.o, lib/store.o and
 * lib/lifecycle_store.o (link-time substitution; production code is
 * unchanged). A lifecycle event's write plays the script's insert answer,
 * its look-up the find answer.
 *
 * This is the ONLY stub in payhook's tests, and it exists for one reason:
 * the request fuzzer explores input handling (CGI variables, body, signature,
 * payload) at hundreds of thousands of requests a second, which real Redis
 * and MySQL servers cannot serve, and it needs every backend answer on
 * demand. Backend behaviour itself is tested against real servers by
 * tests/integration and tests/e2e, never here. Each answer is chosen by the
 * input (see stub_backends.h), so every run is repeatable.
 */
#include "config.h"

#include <string.h>
#include <time.h>

#include "configuration.h"
#include "early.h"
#include "fuzz.h"
#include "inbox_store.h"
#include "lifecycle_store.h"
#include "lock.h"
#include "store.h"
#include "stub_backends.h"
#include "timing.h"

struct lock_client {
	const struct config *cfg;
};

struct store {
	const struct config *cfg;
};

struct lifecycle_store {
	struct store store;
};

static struct stub_script script;
static struct stub_trace trace;
/* The lease handed out last, to recognise it when it is released. */
static char issued_token[LOCK_TOKEN_HEX + 1];

void stub_reset(const struct stub_script *s)
{
	script = *s;
	memset(&trace, 0, offsetof(struct stub_trace, payload));
	trace.lock_id[0] = '\0';
	trace.lock_id_len = 0;
	trace.lock_scope[0] = '\0';
	trace.lock_scope_null = 0;
	issued_token[0] = '\0';
}

const struct stub_trace *stub_trace(void)
{
	return &trace;
}

/* Whether name is one of the provider profiles' names. */
static int profile_name(const char *name)
{
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++)
		if (strcmp(name, config_provider_name((enum config_provider)i)) == 0)
			return 1;
	return 0;
}

/* A payment handed to a backend obeys the field rules. */
static void check_payment(const struct payment *p)
{
	FUZZ_CHECK(p != NULL, "NULL payment");
	FUZZ_CHECK(p->provider != NULL && profile_name(p->provider),
		   "provider \"%s\" reached a backend",
		   p->provider != NULL ? p->provider : "(null)");
	FUZZ_CHECK(p->event_id_len <= PAYMENT_EVENT_ID_MAX &&
		   strlen(p->event_id) == p->event_id_len,
		   "event_id_len %zu", p->event_id_len);
	for (size_t i = 0; i < p->event_id_len; i++)
		FUZZ_CHECK((unsigned char)p->event_id[i] >= 0x21 &&
			   (unsigned char)p->event_id[i] <= 0x7E,
			   "event_id byte 0x%02x reached a backend",
			   (unsigned char)p->event_id[i]);
	FUZZ_CHECK(p->transaction_id_len >= 1 &&
		   p->transaction_id_len <= PAYMENT_TRANSACTION_ID_MAX &&
		   strlen(p->transaction_id) == p->transaction_id_len,
		   "transaction_id_len %zu", p->transaction_id_len);
	for (size_t i = 0; i < p->transaction_id_len; i++)
		FUZZ_CHECK((unsigned char)p->transaction_id[i] >= 0x21 &&
			   (unsigned char)p->transaction_id[i] <= 0x7E,
			   "transaction_id byte 0x%02x reached a backend",
			   (unsigned char)p->transaction_id[i]);
	FUZZ_CHECK(p->amount >= 1, "amount %lld reached a backend",
		   (long long)p->amount);
	FUZZ_CHECK(strlen(p->currency) == 3 && p->currency[0] >= 'A' &&
		   p->currency[0] <= 'Z' && p->currency[1] >= 'A' &&
		   p->currency[1] <= 'Z' && p->currency[2] >= 'A' &&
		   p->currency[2] <= 'Z',
		   "currency \"%.4s\" reached a backend", p->currency);
}

/* ---- lock.h ---- */

struct lock_client *lock_client_new(const struct config *cfg,
				    struct error *err)
{
	struct lock_client *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		error_set(err, "stub lock: out of memory");
		return NULL;
	}
	c->cfg = cfg;
	return c;
}

void lock_client_free(struct lock_client *client)
{
	free(client);
}

int lock_connect(struct lock_client *client, struct error *err)
{
	(void)client;
	(void)err;
	return 0;
}

enum lock_status lock_acquire(struct lock_client *client, const char *scope,
			      const char *id, size_t id_len, long ttl_ms,
			      struct lock_lease *lease, struct error *err)
{
	int n;

	FUZZ_CHECK(client != NULL && id != NULL && lease != NULL,
		   "lock_acquire: NULL argument");
	FUZZ_CHECK(id_len >= 1 && id_len <= PAYMENT_TRANSACTION_ID_MAX &&
		   strlen(id) == id_len, "lock_acquire: id_len %zu", id_len);
	FUZZ_CHECK(scope == NULL || profile_name(scope),
		   "lock_acquire: scope \"%s\" is no profile", scope);
	FUZZ_CHECK(ttl_ms == client->cfg->lock_ttl_ms,
		   "lock_acquire: ttl %ld, configured %ld", ttl_ms,
		   client->cfg->lock_ttl_ms);
	trace.acquires++;
	memcpy(trace.lock_id, id, id_len + 1);
	trace.lock_id_len = id_len;
	trace.lock_scope_null = scope == NULL;
	snprintf(trace.lock_scope, sizeof(trace.lock_scope), "%s",
		 scope != NULL ? scope : "");
	switch (script.acquire) {
	case LOCK_ACQUIRED:
		memset(lease, 0, sizeof(*lease));
		n = snprintf(lease->key, sizeof(lease->key), "%s%s%s%s",
			     client->cfg->lock_key_prefix,
			     scope != NULL ? scope : "",
			     scope != NULL ? ":" : "", id);
		lease->key_len = n > 0 && (size_t)n < sizeof(lease->key) ?
					 (size_t)n : 0;
		snprintf(lease->token, sizeof(lease->token), "%032x",
			 (unsigned)trace.acquires);
		memcpy(issued_token, lease->token, sizeof(issued_token));
		lease->started_us = timing_now_us();
		lease->ttl_ms = ttl_ms;
		trace.held++;
		return LOCK_ACQUIRED;
	case LOCK_BUSY:
		return LOCK_BUSY;
	case LOCK_UNAVAILABLE:
	default:
		error_set(err, "stub lock: unavailable");
		return LOCK_UNAVAILABLE;
	}
}

enum lock_release_status lock_release(struct lock_client *client,
				      const struct lock_lease *lease,
				      struct error *err)
{
	FUZZ_CHECK(client != NULL && lease != NULL,
		   "lock_release: NULL argument");
	trace.releases++;
	if (trace.held <= 0 || strcmp(lease->token, issued_token) != 0)
		trace.bad_release++;
	else
		trace.held--;
	if (script.release == LOCK_RELEASE_FAILED)
		error_set(err, "stub lock: release failed");
	return script.release;
}

int lock_ping(struct lock_client *client, struct error *err)
{
	FUZZ_CHECK(client != NULL, "lock_ping: NULL client");
	if (script.acquire == LOCK_UNAVAILABLE)
		return error_set(err, "stub lock: unavailable");
	return 0;
}

enum lock_fault lock_last_fault(const struct lock_client *client)
{
	FUZZ_CHECK(client != NULL, "lock_last_fault: NULL client");
	return script.acquire == LOCK_UNAVAILABLE ? LOCK_FAULT_IO : LOCK_FAULT_NONE;
}

long lock_lease_remaining_ms(const struct lock_lease *lease)
{
	FUZZ_CHECK(lease != NULL, "lock_lease_remaining_ms: NULL lease");
	FUZZ_CHECK(strcmp(lease->token, issued_token) == 0,
		   "lease asked about is not the one handed out");
	return script.lease_remaining_ms;
}

const char *lock_scope_of(const char *provider)
{
	return strcmp(provider, "standard") == 0 ? NULL : provider;
}

/* The stub's leases carry no early mark (LOCK_EARLY_UNKNOWN), so the
 * pipeline marks only when an event's payment is not recorded. */
int lock_mark_early(struct lock_client *client, struct lock_lease *lease,
		    struct error *err)
{
	FUZZ_CHECK(client != NULL && lease != NULL,
		   "lock_mark_early: NULL argument");
	(void)err;
	lease->early = LOCK_EARLY_MARKED;
	return 0;
}

void lock_clear_early(struct lock_client *client, const struct lock_lease *lease)
{
	FUZZ_CHECK(client != NULL && lease != NULL,
		   "lock_clear_early: NULL argument");
}

/* ---- early.h: nothing is ever due (the leases are never incomplete) ---- */

int early_rebuild(struct lock_client *lock, struct lifecycle_store *events,
		  unsigned long *marked, unsigned long *repaired,
		  long *wait_ms, struct error *err)
{
	FUZZ_CHECK(0, "early_rebuild: called without an incomplete lease");
	(void)lock;
	(void)events;
	(void)err;
	*marked = 0;
	*repaired = 0;
	*wait_ms = 0;
	return 0;
}

/* ---- store.h ---- */

struct store *store_new(const struct config *cfg, struct error *err)
{
	struct store *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		error_set(err, "stub store: out of memory");
		return NULL;
	}
	s->cfg = cfg;
	return s;
}

void store_free(struct store *store)
{
	free(store);
}

int store_connect(struct store *store, struct error *err)
{
	FUZZ_CHECK(store != NULL, "store_connect: NULL store");
	trace.connects++;
	if (script.connect_fails)
		return error_set(err, "stub store: cannot connect");
	return 0;
}

int store_check_schema(struct store *store, struct error *err)
{
	return store_connect(store, err);
}

int store_summary(struct store *store, struct store_summary *summary,
		  struct error *err)
{
	FUZZ_CHECK(store != NULL, "store_summary: NULL store");
	memset(summary, 0, sizeof(*summary));
	return store_connect(store, err);
}

int store_ping(struct store *store, struct error *err)
{
	FUZZ_CHECK(store != NULL, "store_ping: NULL store");
	trace.pings++;
	if (script.connect_fails)
		return error_set(err, "stub store: cannot connect");
	return 0;
}

unsigned store_last_error(const struct store *store)
{
	FUZZ_CHECK(store != NULL, "store_last_error: NULL store");
	/* A stand-in error number for any failure the script plays. */
	return script.connect_fails ? 2003 : 0;
}

static enum store_status play_write(const struct store_guard *guard,
				    struct error *err);

enum store_status store_insert_payment(struct store *store,
				       const struct payment *payment,
				       const void *payload, size_t payload_len,
				       enum store_events events,
				       const struct store_guard *guard,
				       struct error *err)
{
	FUZZ_CHECK(store != NULL, "store_insert_payment: NULL store");
	/* The stub's leases say nothing of early marks. */
	FUZZ_CHECK(events == STORE_EVENTS_UNKNOWN,
		   "store_insert_payment: events %d without a mark", events);
	check_payment(payment);
	FUZZ_CHECK(payload != NULL || payload_len == 0,
		   "store_insert_payment: NULL payload");
	trace.inserts++;
	trace.inserted = *payment;
	trace.payload_len = payload_len;
	trace.payload_truncated = payload_len > sizeof(trace.payload);
	memcpy(trace.payload, payload,
	       trace.payload_truncated ? sizeof(trace.payload) : payload_len);
	return play_write(guard, err);
}

/* A status's name, for the stub's messages. */
static const char *status_name(enum store_status status)
{
	switch (status) {
	case STORE_INSERTED:
		return "inserted";
	case STORE_DUPLICATE:
		return "duplicate";
	case STORE_CONFLICT:
		return "conflict";
	case STORE_NOT_FOUND:
		return "not_found";
	case STORE_RETRYABLE:
		return "retryable";
	case STORE_UNKNOWN_OUTCOME:
		return "unknown_outcome";
	case STORE_LEASE_EXPIRED:
		return "lease_expired";
	case STORE_UNAVAILABLE:
		return "unavailable";
	case STORE_INVALID:
		return "invalid";
	}
	return "?";
}

/* The scripted answer to a write under guard (NULL: none). */
static enum store_status play_write(const struct store_guard *guard,
				    struct error *err)
{
	enum store_status st;

	trace.insert_guarded = guard != NULL;
	/* Like the real store: ask before the INSERT and before the COMMIT. */
	if (guard != NULL &&
	    (guard->enough_lease(guard->ctx, script.needed_ms) != 0 ||
	     guard->enough_lease(guard->ctx, script.needed_ms) != 0)) {
		trace.guard_refused = 1;
		error_set(err, "stub store: lease too short");
		return STORE_LEASE_EXPIRED;
	}
	st = script.insert;
	if (st == STORE_INSERTED || st == STORE_DUPLICATE)
		trace.committed = 1;
	else if (st != STORE_CONFLICT)
		error_set(err, "stub store: %s", status_name(st));
	return st;
}

/* The scripted answer to a look-up. */
static enum store_status play_find(struct error *err)
{
	trace.finds++;
	if (script.find == STORE_DUPLICATE)
		trace.committed = 1;
	else if (script.find != STORE_CONFLICT && script.find != STORE_NOT_FOUND)
		error_set(err, "stub store: %s", status_name(script.find));
	return script.find;
}

enum store_status store_find_payment(struct store *store,
				     const struct payment *payment,
				     struct error *err)
{
	FUZZ_CHECK(store != NULL, "store_find_payment: NULL store");
	check_payment(payment);
	return play_find(err);
}

/* ---- lifecycle_store.h ---- */

/* A lifecycle event handed to a backend obeys the field rules (its link
 * may carry no amount and no currency). */
static void check_event(const struct lifecycle_event *e)
{
	struct payment link;

	FUZZ_CHECK(e != NULL, "NULL lifecycle event");
	FUZZ_CHECK(lifecycle_state_valid(e->kind, e->state),
		   "state %d of kind %d reached a backend", (int)e->state,
		   (int)e->kind);
	FUZZ_CHECK(e->object_id_len >= 1 &&
		   e->object_id_len <= LIFECYCLE_OBJECT_ID_MAX &&
		   strlen(e->object_id) == e->object_id_len,
		   "object_id_len %zu", e->object_id_len);
	link = e->link;
	link.amount = 1;
	if (link.currency[0] == '\0')
		memcpy(link.currency, "XXX", 4);
	check_payment(&link);
}

struct lifecycle_store *lifecycle_store_new(const struct config *cfg,
					    struct error *err)
{
	struct lifecycle_store *ls = calloc(1, sizeof(*ls));

	if (ls == NULL) {
		error_set(err, "stub lifecycle store: out of memory");
		return NULL;
	}
	ls->store.cfg = cfg;
	return ls;
}

void lifecycle_store_free(struct lifecycle_store *ls)
{
	free(ls);
}

int lifecycle_store_connect(struct lifecycle_store *ls, struct error *err)
{
	return store_connect(&ls->store, err);
}

int lifecycle_store_check_schema(struct lifecycle_store *ls,
				 struct error *err)
{
	return store_connect(&ls->store, err);
}

unsigned lifecycle_store_last_error(const struct lifecycle_store *ls)
{
	return store_last_error(&ls->store);
}

bool lifecycle_store_suspicious(const struct lifecycle_store *ls,
				struct error *why)
{
	(void)ls;
	(void)why;
	return false;
}

enum store_status lifecycle_store_record(struct lifecycle_store *ls,
					 const struct lifecycle_event *event,
					 const void *payload, size_t payload_len,
					 const struct store_guard *guard,
					 struct error *err)
{
	FUZZ_CHECK(ls != NULL, "lifecycle_store_record: NULL store");
	FUZZ_CHECK(payload != NULL || payload_len == 0,
		   "lifecycle_store_record: NULL payload");
	check_event(event);
	trace.inserts++;
	return play_write(guard, err);
}

enum store_status lifecycle_store_find(struct lifecycle_store *ls,
				       const struct lifecycle_event *event,
				       struct error *err)
{
	FUZZ_CHECK(ls != NULL, "lifecycle_store_find: NULL store");
	check_event(event);
	return play_find(err);
}

/* ---- inbox_store.h (the receiver's part): each kept delivery is checked
 * against the contract (its outcome, its body within max_body_bytes, its
 * headers a JSON object of the profile's signature headers only) ---- */

#include <json-c/json.h>

struct inbox_store {
	const struct config *cfg;
};

struct inbox_store *inbox_store_new(const struct config *cfg,
				    struct error *err)
{
	struct inbox_store *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		error_set(err, "stub inbox: out of memory");
		return NULL;
	}
	s->cfg = cfg;
	return s;
}

void inbox_store_free(struct inbox_store *store)
{
	free(store);
}

int inbox_store_check(struct inbox_store *store, struct error *err)
{
	(void)store;
	(void)err;
	return 0;
}

/* What the inbox would keep of one delivery, checked: never a body past
 * the cap, never a header but the signature's, never a credential. */
static void check_kept(struct inbox_store *store, const char *provider,
		       int64_t received_us, const char *outcome,
		       const char *reason, const char *headers,
		       const char *body, size_t len)
{
	struct json_object *h = json_tokener_parse(headers);

	FUZZ_CHECK(store != NULL && provider != NULL && reason != NULL &&
			   body != NULL,
		   "inbox: a NULL field kept");
	FUZZ_CHECK(strcmp(outcome, "ignored") == 0 ||
			   strcmp(outcome, "unauthorized") == 0,
		   "inbox: kept a delivery answered %s", outcome);
	FUZZ_CHECK(len <= store->cfg->max_body_bytes,
		   "inbox: a %zu-byte body past max_body_bytes", len);
	FUZZ_CHECK(received_us > 0, "inbox: no receipt time");
	FUZZ_CHECK(json_object_is_type(h, json_type_object),
		   "inbox: headers are not a JSON object: %s", headers);
	json_object_object_foreach(h, name, value) {
		FUZZ_CHECK(strncmp(name, "HTTP_", 5) == 0 &&
				   strcmp(name, "HTTP_COOKIE") != 0 &&
				   strcmp(name, "HTTP_AUTHORIZATION") != 0,
			   "inbox: kept header %s", name);
		FUZZ_CHECK(json_object_is_type(value, json_type_string),
			   "inbox: header %s is not a string", name);
		/* PAY.JP's header is the secret: only its digest is kept. */
		FUZZ_CHECK(strcmp(name, "HTTP_X_PAYJP_WEBHOOK_TOKEN") != 0 ||
				   strncmp(json_object_get_string(value),
					   "sha256:", 7) == 0,
			   "inbox: kept PAY.JP's token itself");
	}
	json_object_put(h);
	trace.inbox_kept++;
}

/* The fuzzers load their configuration with pipeline_load_config; Redis's
 * and the lease's keys are lock.c's to check, and no Redis is asked here. */
int lock_check_config(const struct config *cfg, struct error *err)
{
	(void)cfg;
	(void)err;
	return 0;
}

/* The batch: each row checked (check_kept). */
int inbox_store_keep_batch(struct inbox_store *store,
			   const struct inbox_row *rows, size_t n,
			   size_t *kept, struct error *err)
{
	FUZZ_CHECK(n > 0, "inbox: an empty batch written");
	for (size_t i = 0; i < n; i++)
		check_kept(store, rows[i].provider, rows[i].received_us,
			   rows[i].outcome, rows[i].reason, rows[i].headers,
			   rows[i].body, rows[i].len);
	(void)err;
	*kept = n;
	return 0;
}


/* ---- notify_store.h (the receiver's part): each queued notification is
 * checked against the contract (a provider that only notifies, an object
 * id of 1 to 64 visible bytes, a known source) ---- */

#include "notify_store.h"

struct notify_store {
	int unused;
};

struct notify_store *notify_store_new(const struct config *cfg,
				      struct error *err)
{
	struct notify_store *s = calloc(1, sizeof(*s));

	(void)cfg;
	if (s == NULL)
		error_set(err, "stub notifications: out of memory");
	return s;
}

void notify_store_free(struct notify_store *store)
{
	free(store);
}

int notify_store_check(struct notify_store *store, struct error *err)
{
	(void)store;
	(void)err;
	return 0;
}

int notify_store_notice(struct notify_store *store, const char *provider,
			const struct notify_notice *notices, size_t n,
			struct error *err)
{
	(void)store;
	(void)provider;
	(void)notices;
	(void)n;
	(void)err;
	return 0;
}

long long notify_store_pending(struct notify_store *store, struct error *err)
{
	(void)store;
	(void)err;
	return 0;
}

int notify_store_queue(struct notify_store *store, const char *provider,
		       const char *source, const struct notify_notice *notices,
		       size_t n, struct error *err)
{
	(void)store;
	(void)err;
	FUZZ_CHECK(n > 0, "notifications: an empty queue written");
	FUZZ_CHECK(strcmp(provider, "mollie") == 0 ||
			   strcmp(provider, "mercadopago") == 0 ||
			   strcmp(provider, "gocardless") == 0,
		   "notifications: queued for %s", provider);
	FUZZ_CHECK(strcmp(source, "webhook") == 0 ||
			   strcmp(source, "reconcile") == 0 ||
			   strcmp(source, "replay") == 0,
		   "notifications: source %s", source);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(notices[i].object_id);

		FUZZ_CHECK(len > 0 && len <= 64,
			   "notifications: an object id of %zu bytes", len);
		for (size_t c = 0; c < len; c++)
			FUZZ_CHECK(notices[i].object_id[c] > 0x20 &&
					   notices[i].object_id[c] < 0x7f,
				   "notifications: an id byte 0x%02x",
				   (unsigned char)notices[i].object_id[c]);
	}
	return 0;
}
