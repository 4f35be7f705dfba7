/* schema.c - the tables' checks against information_schema and the
 * migrations they name (see schema.h). */
#include "config.h"

#include <stdbool.h>

#include "schema.h"

/* sqlconn_query_number, dropping the connection when it fails. */
static int query_number(struct sqlconn *c, const char *sql,
			unsigned long long *out, struct error *err)
{
	if (sqlconn_query_number(c, sql, out, err) == 0)
		return 0;
	sqlconn_disconnect(c);
	return -1;
}

/* Ends the read's snapshot (the dispatcher's sessions do not commit by
 * themselves). Returns 0, or -1 with err set (the connection dropped). */
static int end_read(struct sqlconn *c, struct error *err)
{
	unsigned code = sqlconn_exec(c, "ROLLBACK", NULL);

	if (code == 0)
		return 0;
	error_set(err, "mysql rollback: %u %s", code,
		  sqlconn_message(c, SQLCONN_SESSION));
	sqlconn_fail(c, code, false);
	return -1;
}

int schema_check_payments(struct sqlconn *c, struct error *err)
{
	static const char key_sql[] =
		"SELECT COALESCE(SUM(non_unique = 0 AND ("
		"(seq_in_index = 1 AND column_name = 'provider') OR "
		"(seq_in_index = 2 AND column_name = 'transaction_id'))), 0) "
		"* 10 + COUNT(*) FROM information_schema.statistics "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND index_name = '" SCHEMA_PAYMENTS_KEY "'";
	static const char columns_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' AND ("
		"(column_name = 'transaction_id' AND data_type = 'varbinary') OR "
		"(column_name = 'provider' AND data_type = 'varchar') OR "
		"(column_name = 'event_id' AND data_type = 'varbinary') OR "
		"column_name IN ('amount', 'currency', 'payload', 'received_at'))";
	static const char old_key_sql[] =
		"SELECT COUNT(*) FROM information_schema.statistics "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND index_name = 'uq_payments_transaction_id'";
	/* 1 when payments and payment_events (where it exists) have it. */
	static const char source_sql[] =
		"SELECT COUNT(*) = 1 + (SELECT COUNT(*) FROM "
		"information_schema.tables WHERE table_schema = DATABASE() AND "
		"table_name = 'payment_events') FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name IN ('payments', "
		"'payment_events') AND column_name = 'source'";
	unsigned long long key = 0, columns = 0, old_key = 0, source = 0;
	int rc = 0;

	if (sqlconn_query_number(c, columns_sql, &columns, err) != 0 ||
	    sqlconn_query_number(c, key_sql, &key, err) != 0 ||
	    sqlconn_query_number(c, old_key_sql, &old_key, err) != 0 ||
	    sqlconn_query_number(c, source_sql, &source, err) != 0) {
		sqlconn_disconnect(c);
		return -1;
	}
	if (old_key > 0 && key == 0)
		rc = error_set(err, "table payments is of an older payhook: run "
			       SCHEMA_MIGRATE_PROVIDERS);
	else if (columns != 7)
		rc = error_set(err, "table payments lacks a column payhook writes, "
			       "or transaction_id is not VARBINARY (compared "
			       "byte for byte): load " SCHEMA_LOAD);
	/* Two rows, both unique and in this order: 2 * 10 + 2. */
	else if (key != 22)
		rc = error_set(err, "unique key " SCHEMA_PAYMENTS_KEY " must cover exactly "
			       "(provider, transaction_id): a key over more "
			       "columns lets one transaction be recorded twice; "
			       "load " SCHEMA_LOAD);
	else if (source != 1)
		rc = error_set(err, "table payments or payment_events has no "
			       "source column: run " SCHEMA_MIGRATE_RECONCILE);
	return rc;
}

int schema_check_lifecycle(struct sqlconn *c, struct error *err)
{
	static const char totals_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND column_name IN ('refunded_amount', 'dispute_state', "
		"'cancelled')";
	static const char events_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND "
		"table_name = 'payment_events' AND ("
		"(column_name IN ('object_id', 'transaction_id', 'event_id') "
		"AND data_type = 'varbinary') OR column_name IN ('provider', "
		"'kind', 'state', 'amount', 'currency', 'occurred_at', "
		"'payload', 'updated_at'))";
	static const char key_sql[] =
		"SELECT COALESCE(SUM(non_unique = 0 AND ("
		"(seq_in_index = 1 AND column_name = 'provider') OR "
		"(seq_in_index = 2 AND column_name = 'kind') OR "
		"(seq_in_index = 3 AND column_name = 'object_id'))), 0) "
		"* 10 + COUNT(*) FROM information_schema.statistics "
		"WHERE table_schema = DATABASE() AND "
		"table_name = 'payment_events' AND index_name = '" SCHEMA_EVENTS_KEY "'";
	static const char changes_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND "
		"table_name = 'payment_event_changes' AND column_name IN "
		"('event_row_id', 'state', 'n', 'amount', 'currency', "
		"'event_id', 'occurred_at', 'dispatch_state')";
	static const char items_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND "
		"table_name = 'payment_event_items' AND column_name IN "
		"('provider', 'item_digest', 'event_row_id')";
	unsigned long long totals = 0, events = 0, key = 0, changes = 0,
			   items = 0;
	int rc = 0;

	if (sqlconn_query_number(c, totals_sql, &totals, err) != 0 ||
	    sqlconn_query_number(c, events_sql, &events, err) != 0 ||
	    sqlconn_query_number(c, key_sql, &key, err) != 0 ||
	    sqlconn_query_number(c, changes_sql, &changes, err) != 0 ||
	    sqlconn_query_number(c, items_sql, &items, err) != 0) {
		sqlconn_disconnect(c);
		return -1;
	}
	if (totals != 3 || events == 0)
		rc = error_set(err, "table payment_events or the payments "
			       "columns refunded_amount, dispute_state, "
			       "cancelled are missing: run "
			       SCHEMA_MIGRATE_LIFECYCLE);
	else if (events != 11)
		rc = error_set(err, "table payment_events lacks a column "
			       "payhook writes, or object_id, transaction_id "
			       "or event_id is not VARBINARY (compared byte "
			       "for byte): load " SCHEMA_LOAD);
	/* Three rows, all unique and in this order: 3 * 10 + 3. */
	else if (key != 33)
		rc = error_set(err, "unique key " SCHEMA_EVENTS_KEY " must cover "
			       "exactly (provider, kind, object_id): another "
			       "key lets one refund be recorded twice; load "
			       SCHEMA_LOAD);
	else if (changes != 8)
		rc = error_set(err, "table payment_event_changes is missing: "
			       "run " SCHEMA_MIGRATE_CHANGES);
	else if (items != 3)
		rc = error_set(err, "table payment_event_items is missing: "
			       "run " SCHEMA_MIGRATE_ITEMS);
	return rc;
}

int schema_check_dispatch(struct sqlconn *c, struct error *err)
{
	static const char table_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND column_name IN ('id', 'provider', 'transaction_id', "
		"'event_id', 'amount', 'currency', 'payload', 'received_at')";
	static const char columns_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND column_name IN ('dispatch_state', 'dispatch_due_at', "
		"'dispatch_attempts', 'dispatch_token', 'dispatch_owner', "
		"'dispatch_last_error', 'delivered_at')";
	static const char state_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND column_name = 'dispatch_state' AND column_type = "
		"'enum(''pending'',''delivered'',''dead'',''skipped'')'";
	static const char index_sql[] =
		"SELECT COUNT(*) FROM information_schema.statistics "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND index_name = 'ix_payments_dispatch_due' "
		"AND seq_in_index = 1 AND column_name = 'dispatch_due_at'";
	static const char source_sql[] =
		"SELECT COUNT(*) FROM information_schema.columns "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND column_name = 'source'";
	static const char skip_locked_sql[] =
		"SELECT id FROM payments WHERE 1 = 0 FOR UPDATE SKIP LOCKED";
	unsigned long long table = 0, columns = 0, state = 0, index = 0;
	unsigned long long source = 0;
	unsigned code;
	int rc = 0;

	if (query_number(c, table_sql, &table, err) != 0 ||
	    query_number(c, columns_sql, &columns, err) != 0 ||
	    query_number(c, state_sql, &state, err) != 0 ||
	    query_number(c, index_sql, &index, err) != 0 ||
	    query_number(c, source_sql, &source, err) != 0)
		return -1;
	if (table == 0)
		rc = error_set(err, "no table payments in this database: load "
			       SCHEMA_LOAD);
	else if (table != 8)
		rc = error_set(err, "table payments lacks provider or event_id: "
			       "run " SCHEMA_MIGRATE_PROVIDERS ", then "
			       SCHEMA_MIGRATE_DISPATCH);
	else if (columns == 0)
		rc = error_set(err, "table payments has no dispatch columns: run "
			       SCHEMA_MIGRATE_DISPATCH);
	else if (columns != 7 || state != 1)
		rc = error_set(err, "table payments has %llu of the 7 dispatch "
			       "columns, or dispatch_state is not "
			       "ENUM('pending','delivered','dead','skipped'): "
			       "compare with " SCHEMA_LOAD, columns);
	else if (index == 0)
		rc = error_set(err, "index ix_payments_dispatch_due on "
			       "(dispatch_due_at) is missing: finding due "
			       "payments would read the whole table; add it as "
			       SCHEMA_MIGRATE_DISPATCH " does");
	else if (source == 0)
		rc = error_set(err, "table payments has no source column: run "
			       SCHEMA_MIGRATE_RECONCILE);
	if (rc != 0) {
		sqlconn_exec(c, "ROLLBACK", NULL);
		return rc;
	}
	code = sqlconn_exec(c, skip_locked_sql, NULL);
	if (code != 0) {
		error_set(err, "the server refuses FOR UPDATE SKIP LOCKED "
			  "(MariaDB 10.6+ or MySQL 8.0.1+ is needed): %u %s",
			  code, sqlconn_message(c, SQLCONN_SESSION));
		sqlconn_fail(c, code, false);
		return -1;
	}
	return end_read(c, err);
}

int schema_dispatch_control(struct sqlconn *c, bool *migrated,
			    struct error *err)
{
	static const char sql[] =
		"SELECT (SELECT COUNT(*) FROM information_schema.tables "
		"WHERE table_schema = DATABASE() AND "
		"table_name = 'dispatch_control') + "
		"(SELECT COUNT(*) FROM information_schema.statistics "
		"WHERE table_schema = DATABASE() AND table_name = 'payments' "
		"AND index_name = 'ix_payments_dispatch_state' "
		"AND seq_in_index = 1)";
	unsigned long long found = 0;

	*migrated = false;
	if (query_number(c, sql, &found, err) != 0 || end_read(c, err) != 0)
		return -1;
	*migrated = found == 2;
	return 0;
}

int schema_changes(struct sqlconn *c, bool *table, bool *indexed,
		   struct error *err)
{
	static const char table_sql[] =
		"SELECT COUNT(*) FROM information_schema.tables "
		"WHERE table_schema = DATABASE() AND table_name = 'payment_event_changes'";
	static const char index_sql[] =
		"SELECT COUNT(DISTINCT index_name) FROM "
		"information_schema.statistics WHERE table_schema = DATABASE() "
		"AND table_name = 'payment_event_changes' AND seq_in_index = 1 AND "
		"index_name IN ('ix_payment_event_changes_object_state', "
		"'ix_payment_event_changes_state')";
	unsigned long long tables = 0, indexes = 0;

	*table = false;
	*indexed = false;
	if (query_number(c, table_sql, &tables, err) != 0 ||
	    query_number(c, index_sql, &indexes, err) != 0 ||
	    end_read(c, err) != 0)
		return -1;
	*table = tables == 1;
	*indexed = indexes == 2;
	return 0;
}
