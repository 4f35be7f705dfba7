/* stub_backends.h - the script that drives the in-process stand-ins for
 * lib/receiver/lock.c and lib/receiver/store.c in the fuzz_request target, and the trace of
 * what the pipeline asked them. Used by fuzz_request.c only.
 */
#ifndef PAYHOOK_STUB_BACKENDS_H
#define PAYHOOK_STUB_BACKENDS_H

#include <stddef.h>

#include "lock.h"
#include "payload.h"
#include "store.h"

/* What the backends answer during one request. */
struct stub_script {
	int connect_fails;                 /* store_connect (and store_ping)
					    * return -1 */
	enum lock_status acquire;          /* lock_acquire */
	enum lock_release_status release;  /* lock_release */
	enum store_status insert;          /* store_insert_payment, once the
					    * guard (if any) lets it write */
	enum store_status find;            /* store_find_payment */
	long lease_remaining_ms;           /* lock_lease_remaining_ms */
	long needed_ms;                    /* what the store asks its guard */
};

/* What the pipeline did with them. */
struct stub_trace {
	int connects, acquires, releases, inserts, finds, pings;
	int inbox_kept;        /* deliveries written to the inbox */
	int held;              /* acquired and not yet released */
	int bad_release;       /* a release of a lease we did not hand out */
	int committed;         /* an answer said the row is committed:
				* INSERTED or DUPLICATE */
	int insert_guarded;    /* the last insert had a guard */
	int guard_refused;     /* the guard stopped the last insert */
	struct payment inserted;       /* the last insert's payment */
	size_t payload_len;            /* and its payload */
	int payload_truncated;         /* longer than payload[] */
	unsigned char payload[65536];
	char lock_id[PAYMENT_TRANSACTION_ID_MAX + 1];
	size_t lock_id_len;
	/* The scope of the last lock_acquire: a provider name, or "" with
	 * lock_scope_null set when the pipeline passed NULL. */
	char lock_scope[PAYMENT_TRANSACTION_ID_MAX + 1];
	int lock_scope_null;
};

/* Starts a request: the script to follow and an empty trace. */
void stub_reset(const struct stub_script *script);

/* The trace since the last stub_reset. */
const struct stub_trace *stub_trace(void);

#endif
