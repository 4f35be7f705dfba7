/* reconcile.h - one reconciliation pass over every profile with an API key
 * (prefix reconcile_): for each, its provider's events since its cursor,
 * listed through its backend (backend.h) with the polite client
 * (api_client.h), each recorded through the receiver's own path
 * (pipeline_record_trusted) with source = reconcile, the cursor moved past
 * each window once it is committed (cursor_store.h), and one logfmt line
 * per provider on the pass's output.
 */
#ifndef PAYHOOK_RECONCILE_H
#define PAYHOOK_RECONCILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "configuration.h"
#include "error.h"

/* Exit statuses of a pass (and of payhook-reconcile --once). */
#define RECONCILE_COMPLETE 0      /* every pass complete, no discrepancy */
#define RECONCILE_FAILED 1        /* a provider's pass failed */
#define RECONCILE_DISCREPANCY 3   /* complete, with discrepancies */

struct reconcile; /* the pipeline, the cursor store; opaque */

struct reconcile_options {
	int only;               /* a profile (enum config_provider), or -1 */
	bool has_since;         /* --since: this pass starts at since_s */
	int64_t since_s;
	bool dry_run;           /* list and judge, record nothing, keep the
				 * cursor */
	bool (*stopping)(void); /* true after SIGTERM: the pass ends after
				 * the page in hand; may be NULL */
};

/* Checks the reconcile keys of cfg beyond each value's own rules: every
 * <profile>_api_key's profile is enabled; every <profile>_api_base is
 * https://, or http:// to a loopback address. Returns 0, or -1 with err
 * naming the key (never its value). */
int reconcile_check_config(const struct config *cfg, struct error *err);

/* Returns a reconciler for cfg (which must outlive it), or NULL with err
 * set. Backends are connected lazily. */
struct reconcile *reconcile_new(const struct config *cfg, struct error *err);

/* Frees it; NULL is fine. */
void reconcile_free(struct reconcile *reconcile);

/* One pass over every profile with a key (or options->only), each
 * provider's line written to out. Returns RECONCILE_COMPLETE,
 * RECONCILE_FAILED or RECONCILE_DISCREPANCY. */
int reconcile_pass(struct reconcile *reconcile,
		   const struct reconcile_options *options, FILE *out);

#endif
