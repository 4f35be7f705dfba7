/* lock.h - the per-transaction Redis lock (hiredis): SET key token NX PX ttl
 * with a 128-bit random token, released by a script that deletes the key only
 * while it still holds our token.
 *
 * The lease is measured from the moment before the SET is sent, so a pause
 * between sending and the reply can only make the lease look shorter, never
 * fresher than it is.
 */
#ifndef PAYHOOK_LOCK_H
#define PAYHOOK_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "configuration.h"
#include "error.h"
#include "payment.h"

#define LOCK_TOKEN_HEX 32 /* 128 bits as hex */
#define LOCK_KEY_MAX 512

/* One connection to Redis, opened lazily and reopened after a fault. Opaque. */
struct lock_client;

/* What Redis knows of "early" events for a lease's transaction: lifecycle
 * events (refunds, disputes, cancellations) recorded before their payment,
 * whose totals the payment's INSERT must then take (see store.h). A mark
 * per transaction, set before the event's COMMIT, says one exists; the
 * marks count as complete only while a key names the Redis process (its
 * run_id) that holds all of them, so a restart, a flush or a failover
 * makes them unknown until lock_early_rebuild_due and the rebuild; and
 * never while the server's maxmemory-policy may evict them (allkeys-*:
 * LOCK_EARLY_UNKNOWN, a warning logged, the completeness key deleted). */
enum lock_early {
	LOCK_EARLY_UNKNOWN = 0, /* no answer: only MySQL can tell */
	LOCK_EARLY_INCOMPLETE,  /* marks not known complete: MySQL can tell,
				 * and a rebuild is due */
	LOCK_EARLY_NONE,        /* complete, and none for this transaction */
	LOCK_EARLY_MARKED,      /* one was recorded before the payment */
};

/* A lock we took: the key, our token, and when the lease started. */
struct lock_lease {
	char key[LOCK_KEY_MAX];
	size_t key_len;
	char token[LOCK_TOKEN_HEX + 1];
	int64_t started_us; /* timing_now_us(), read before the SET was sent */
	long ttl_ms;
	enum lock_early early; /* read with the SET (lock_acquire) */
};

enum lock_status {
	LOCK_ACQUIRED = 0,
	LOCK_BUSY,        /* another holder has the key */
	LOCK_UNAVAILABLE, /* Redis down, slow, or answering errors */
};

enum lock_release_status {
	LOCK_RELEASED = 0,
	LOCK_RELEASE_EXPIRED, /* the key was gone: our lease ran out */
	LOCK_RELEASE_STOLEN,  /* another holder's token was there: left alone */
	LOCK_RELEASE_FAILED,  /* Redis did not answer; the key expires by itself */
};

/* Returns a client for cfg (not yet connected; cfg must outlive it), or NULL
 * with err set when out of memory. */
struct lock_client *lock_client_new(const struct config *cfg, struct error *err);

/* The cross-key checks of the keys of Redis and the lease, after
 * config_load: redis_sentinels parses and goes without redis_socket,
 * lock_backend = none goes without redis_unavailable = fail, and lock_ttl_ms
 * covers the write's bound (config_write_bound_ms) plus
 * CONFIG_LEASE_MARGIN_MS, and request_terminate_timeout_ms (when set) is no
 * shorter than lock_ttl_ms. Returns 0, or -1 with err saying what to set. */
int lock_check_config(const struct config *cfg, struct error *err);

/* Closes the connection and frees the client; NULL is fine. */
void lock_client_free(struct lock_client *client);

/* Connects (when not connected) with AUTH and SELECT as configured. With
 * redis_sentinels, the master is asked of the sentinels in turn on every
 * new connection, and used only when its ROLE says master. Returns 0, or -1
 * with err naming what failed; the next call tries again. */
int lock_connect(struct lock_client *client, struct error *err);

/* The scope of provider's lock keys for lock_acquire: NULL for the
 * standard profile (its keys are what they were before providers),
 * provider otherwise. */
const char *lock_scope_of(const char *provider);

/* Tries to take the lock for transaction id[0..id_len) for ttl_ms; the key
 * is lock_key_prefix + id, or lock_key_prefix + scope + ":" + id when scope
 * (a provider name) is not NULL. Fills *lease on LOCK_ACQUIRED. On
 * LOCK_UNAVAILABLE err says why and the connection is dropped (also after an
 * error reply such as READONLY), to be reopened by the next call. A kept
 * connection that fails at once or answers an error is replaced, and the SET
 * sent once more, within the call. */
enum lock_status lock_acquire(struct lock_client *client, const char *scope,
			      const char *id, size_t id_len, long ttl_ms,
			      struct lock_lease *lease, struct error *err);

/* Marks lease's transaction as having an early event (before that event's
 * COMMIT, under the lease). Returns 0 (lease->early is LOCK_EARLY_MARKED),
 * or -1 with err set: the event must not be committed. */
int lock_mark_early(struct lock_client *client, struct lock_lease *lease,
		    struct error *err);

/* Removes lease's mark once its payment is recorded with the totals. A
 * failure is only logged: a mark left over costs that payment's later
 * deliveries the totals form, nothing else. */
void lock_clear_early(struct lock_client *client, const struct lock_lease *lease);

/* After a lease came back LOCK_EARLY_INCOMPLETE: returns 1 when the marks
 * may be rebuilt now (lock_ttl_ms and a second have passed since a worker
 * first saw them incomplete on this Redis process, so every transaction
 * that marked an event on the one before has committed or given up), 0
 * when not yet (*wait_ms: how long still), -1 with err set when Redis
 * failed. */
int lock_early_rebuild_due(struct lock_client *client, long *wait_ms,
			   struct error *err);

/* Marks transaction id[0..id_len) of provider scope (NULL for standard) as
 * having an early event, for the rebuild. Returns 0 or -1 with err set. */
int lock_mark_early_id(struct lock_client *client, const char *scope,
		       const char *id, size_t id_len, struct error *err);

/* Ends a rebuild: the marks are complete for this Redis process. Returns
 * 0 or -1 with err set. */
int lock_early_complete(struct lock_client *client, struct error *err);

/* Releases a lease with the ownership-checking script (EVALSHA, EVAL on
 * NOSCRIPT). Never deletes a key that holds another token. A connection fault
 * or an error reply drops the connection (LOCK_RELEASE_FAILED). */
enum lock_release_status lock_release(struct lock_client *client,
				      const struct lock_lease *lease,
				      struct error *err);

/* Connects when needed and sends PING (for the health check). Returns 0, or
 * -1 with err set (the connection is dropped). */
int lock_ping(struct lock_client *client, struct error *err);

/* For --check-config: connects (through the sentinels when configured) and
 * writes one line to out: the server in use and, with sentinels, which one
 * named it; or what failed. Returns 0, or -1 when Redis is not usable. */
int lock_describe(struct lock_client *client, char *out, size_t out_size);

/* For --check-config: connects when needed and, when the server's
 * maxmemory-policy may evict keys without a TTL (allkeys-*: the early
 * marks), writes a warning line to out and returns 1; else 0 (also when
 * Redis does not answer: lock_describe says so). */
int lock_eviction_warning(struct lock_client *client, char *out,
			  size_t out_size);

/* The number of sentinels of redis_sentinels (0 without). */
size_t lock_sentinel_count(const struct lock_client *client);

/* For --check-config: asks sentinel index for the master and writes one
 * line on its answer to out. Returns 0, or -1 when it has none. */
int lock_probe_sentinel(const struct lock_client *client, size_t index,
			char *out, size_t out_size);

/* What went wrong last, for the metrics. */
enum lock_fault {
	LOCK_FAULT_NONE = 0,
	LOCK_FAULT_CONNECT, /* connect, AUTH or SELECT failed */
	LOCK_FAULT_IO,      /* timeout or connection lost */
	LOCK_FAULT_REPLY,   /* an error reply (READONLY, LOADING, ...) */
};

/* The fault of the last failed call of acquire or release; LOCK_FAULT_NONE
 * after a success. Can't fail. */
enum lock_fault lock_last_fault(const struct lock_client *client);

/* Milliseconds left on the lease now (negative once it ran out). */
long lock_lease_remaining_ms(const struct lock_lease *lease);

#endif
