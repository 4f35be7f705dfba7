/* schema.h - what payhook's programs need of the database's tables, checked
 * against information_schema for --check-config and the stores (prefix
 * schema_), and the names of the migrations that add what is missing. The
 * tables themselves are db/schema.sql's; each check runs on a connection of
 * the caller's (sqlconn), already connected.
 *
 * Every check returns 0 when the tables are as payhook needs them, or -1
 * with err naming what is missing and the file to run (or what failed: then
 * the connection is dropped, the next call reconnects).
 */
#ifndef PAYHOOK_SCHEMA_H
#define PAYHOOK_SCHEMA_H

#include <stdbool.h>

#include "error.h"
#include "sqlconn.h"

/* The files an operator runs, as the messages name them. */
#define SCHEMA_LOAD "db/schema.sql"
#define SCHEMA_MIGRATE_PROVIDERS "db/migrate-2-providers.sql"
#define SCHEMA_MIGRATE_DISPATCH "db/migrate-3-dispatch.sql"
#define SCHEMA_MIGRATE_LIFECYCLE "db/migrate-4-lifecycle.sql"
#define SCHEMA_MIGRATE_CONTROL "db/migrate-5-dispatch-control.sql"
#define SCHEMA_MIGRATE_CHANGES "db/migrate-6-lifecycle-changes.sql"
#define SCHEMA_MIGRATE_ITEMS "db/migrate-8-lifecycle-items.sql"
#define SCHEMA_MIGRATE_TARGET "db/migrate-9-dispatch-target.sql"
#define SCHEMA_MIGRATE_RECONCILE "db/migrate-10-reconcile.sql"
#define SCHEMA_MIGRATE_INBOX "db/migrate-11-inbox.sql"
#define SCHEMA_MIGRATE_INBOX_SIGNATURE "db/migrate-13-inbox-signature.sql"
#define SCHEMA_MIGRATE_NOTIFICATIONS "db/migrate-16-notifications.sql"

/* The unique keys exactly-once rests on. */
#define SCHEMA_PAYMENTS_KEY "uq_payments_provider_transaction_id"
#define SCHEMA_EVENTS_KEY "uq_payment_events_object"

/* payments as the receiver writes it: its columns (transaction_id
 * VARBINARY), the unique key on exactly (provider, transaction_id), the
 * source column. */
int schema_check_payments(struct sqlconn *c, struct error *err);

/* The lifecycle tables: payment_events and its unique key, the payments'
 * totals columns, payment_event_changes, payment_event_items. */
int schema_check_lifecycle(struct sqlconn *c, struct error *err);

/* payments as the dispatcher claims it: the dispatch columns and state
 * ENUM, the due index, the source column, and a server that takes FOR
 * UPDATE SKIP LOCKED. */
int schema_check_dispatch(struct sqlconn *c, struct error *err);

/* *migrated: dispatch_control and ix_payments_dispatch_state are there
 * (SCHEMA_MIGRATE_CONTROL ran). Returns 0, or -1 with err set. */
int schema_dispatch_control(struct sqlconn *c, bool *migrated,
			    struct error *err);

/* *table: payment_event_changes exists; *indexed: with both its indexes.
 * Returns 0, or -1 with err set. */
int schema_changes(struct sqlconn *c, bool *table, bool *indexed,
		   struct error *err);

#endif
