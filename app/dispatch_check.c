/* dispatch_check.c - payhook-dispatch --check-config (see
 * dispatch_check.h).
 */
#include "config.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>

#include "alert.h"
#include "dispatch_check.h"
#include "handoff.h"
#include "handoff_admin.h"
#include "handoff_store.h"
#include "sharedfile.h"
#include "sqlconn.h"
#include "target_store.h"

int dispatch_check_config(const struct config *cfg, const char *path)
{
	struct error err = { "" };
	struct handoff_store *db;
	struct target_store *ts = NULL;
	enum target_store_status tst;
	int rc = 0;

	printf("config: ok (%s)\n",
	       path != NULL ? path : "defaults and environment");
	/* The files the daemon opens, as it opens them. */
	if (cfg->log_file != NULL &&
	    sharedfile_check(cfg->log_file, O_WRONLY | O_APPEND, &err) != 0) {
		printf("config: FAILED: log_file %s\n", err.message);
		rc = 1;
	}
	if (cfg->metrics_file != NULL &&
	    sharedfile_check(cfg->metrics_file, O_RDWR, &err) != 0) {
		printf("config: FAILED: metrics_file %s\n", err.message);
		rc = 1;
	}
	if (handoff_check_config(cfg, &err) != 0) {
		printf("target: FAILED: %s\n", err.message);
		rc = 1;
	} else if (cfg->dispatch_url != NULL && cfg->dispatch_url[0] != '\0') {
		printf("target: ok (HTTP POST%s)\n", cfg->dispatch_secret.count > 0
							     ? ", signed with dispatch_secret"
							     : ", unsigned");
	} else {
		printf("target: ok (command run by /bin/sh -c)\n");
	}
	if (alert_check_config(cfg, &err) != 0) {
		printf("alert: FAILED: %s\n", err.message);
		rc = 1;
	} else if (cfg->alert_url != NULL && cfg->alert_url[0] != '\0') {
		printf("alert: ok (HTTP POST to alert_url)\n");
	} else if (cfg->alert_command != NULL && cfg->alert_command[0] != '\0') {
		printf("alert: ok (alert_command run by /bin/sh -c)\n");
	}
	if (handoff_store_check_config(cfg, &err) != 0) {
		printf("lease: FAILED: %s\n", err.message);
		rc = 1;
	} else {
		printf("lease: ok (dispatch_lease_ms = %ld)\n",
		       cfg->dispatch_lease_ms);
	}
	/* A node that is down is a warning (the dispatcher moves on to the
	 * next); the schema check below fails when none takes writes. */
	sqlconn_report_nodes(cfg, stdout);
	db = handoff_store_new(cfg, &err);
	if (db == NULL || handoff_store_check_schema(db, &err) != 0) {
		printf("mysql: FAILED: %s\n", err.message);
		rc = 1;
	} else {
		bool migrated = false, paused = false, indexed = false;

		printf("mysql: ok (%s, table payments with the dispatch columns "
		       "and ix_payments_dispatch_due)\n", sqlconn_where(cfg));
		/* Both are notes: delivery works without them. */
		if (handoff_admin_check_control(db, &migrated, &paused, &err) != 0)
			printf("mysql: WARNING: %s\n", err.message);
		else if (!migrated)
			printf("mysql: WARNING: no table dispatch_control or index "
			       "ix_payments_dispatch_state: --pause and a cheap "
			       "dead count need db/migrate-5-dispatch-control.sql\n");
		if (paused)
			printf("mysql: WARNING: delivery is paused "
			       "(payhook-dispatch --resume starts it)\n");
		if (handoff_admin_check_changes(db, &migrated, &indexed,
						&err) != 0)
			printf("mysql: WARNING: %s\n", err.message);
		else if (!migrated)
			printf("mysql: WARNING: no table payment_event_changes: "
			       "refunds, disputes and cancellations are not "
			       "handed on; run db/migrate-4-lifecycle.sql and "
			       "db/migrate-6-lifecycle-changes.sql\n");
		else if (!indexed)
			printf("mysql: WARNING: payment_event_changes lacks "
			       "ix_payment_event_changes_object_state or "
			       "ix_payment_event_changes_state: handing changes "
			       "on reads more rows; run "
			       "db/migrate-7-lifecycle-handoff.sql\n");
		ts = target_store_new(cfg, db, &err);
		tst = ts != NULL ? target_store_check(ts, &err)
				 : TARGET_STORE_FAILED;
		if (tst == TARGET_STORE_MISSING)
			printf("mysql: WARNING: no table dispatch_target or "
			       "dispatch_alerts (or no rights on them: %s): "
			       "each payhook-dispatch (and "
			       "each --once run) keeps its own view of the "
			       "target, so an outage can make payments dead "
			       "and alert once per process; run "
			       "db/migrate-9-dispatch-target.sql\n",
			       err.message);
		else if (tst != TARGET_STORE_OK)
			printf("mysql: WARNING: %s\n", err.message);
	}
	target_store_free(ts);
	handoff_store_free(db);
	return rc;
}
