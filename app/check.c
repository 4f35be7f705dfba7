/* check.c - payhook --check-config (see check.h).
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "lock.h"
#include "master.h"
#include "pipeline.h"
#include "sharedfile.h"
#include "sqlconn.h"
#include "timing.h"

/* Redis for --check-config: each sentinel's answer, then the server in use
 * (with its ROLE when found through the sentinels). Down is a warning when
 * the configuration records without it (db_only), an error under fail. */
static int check_redis(const struct config *cfg)
{
	struct error err = { "" };
	struct lock_client *lock;
	char line[ERROR_MESSAGE_MAX + 128];
	int rc = 0;

	if (cfg->lock_backend == CONFIG_LOCK_NONE) {
		printf("redis: not used (lock_backend = none: the unique key "
		       "alone keeps each payment once)\n");
		return 0;
	}
	lock = lock_client_new(cfg, &err);
	if (lock == NULL) {
		printf("redis: FAILED: %s\n", err.message);
		return 1;
	}
	for (size_t i = 0; i < lock_sentinel_count(lock); i++) {
		int ok = lock_probe_sentinel(lock, i, line, sizeof(line)) == 0;

		printf("redis: %s%s\n", ok ? "" : "WARNING: ", line);
	}
	if (lock_describe(lock, line, sizeof(line)) == 0) {
		printf("redis: ok (%s)\n", line);
		if (lock_eviction_warning(lock, line, sizeof(line)) != 0)
			printf("redis: WARNING: %s\n", line);
	} else if (cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_DB_ONLY) {
		printf("redis: WARNING: %s (redis_unavailable = db_only: "
		       "payments are recorded without the lock)\n", line);
	} else {
		printf("redis: FAILED: %s\n", line);
		rc = 1;
	}
	lock_client_free(lock);
	return rc;
}

/* Opens path as a worker will (sharedfile_check): nothing is created (run
 * as root, the file would be root's and the workers could not open it).
 * Returns 0, or 1 with a FAILED line printed. */
static int check_file(const char *key, const char *path, int flags)
{
	struct error err;

	if (sharedfile_check(path, flags, &err) == 0)
		return 0;
	printf("config: FAILED: %s %s\n", key, err.message);
	return 1;
}

/* A check that succeeded but took longer than a worker waits: the worker
 * would have answered 503 (a loaded machine, a slow server). */
static void report_slow(const char *what, int64_t elapsed_ms, long bound_ms,
			const char *keys)
{
	if (elapsed_ms > bound_ms)
		printf("%s: WARNING: the check took %lld ms, more than a worker "
		       "waits (%ld ms, %s)\n", what, (long long)elapsed_ms,
		       bound_ms, keys);
}

/* With an alert key set: payhook-dispatch beside this program, which
 * payhook --workers runs to send its alerts. A note, not a failure: only a
 * pool sends alerts, and it serves without them. */
static void check_alert_sender(const struct config *cfg)
{
	char self[PATH_MAX], sender[PATH_MAX];
	ssize_t n;

	if (!config_alerts_set(cfg))
		return;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	if (master_alert_sender(self, sender, sizeof(sender)) == 0)
		printf("alert: ok (payhook --workers sends its alerts with "
		       "%s)\n", sender);
	else
		printf("alert: WARNING: payhook --workers sends its alerts with "
		       "payhook-dispatch, which is not at %s: install it there, "
		       "or the pool's alerts fail\n", sender);
}

/* The backends are asked with timeouts of at least CHECK_TIMEOUT_S: a
 * server slowed down for a moment (a loaded machine) is not a
 * configuration error; a check slower than the workers' own timeouts gets
 * a WARNING line instead. */
#define CHECK_TIMEOUT_S 10
int check_config(const struct config *cfg, const char *path)
{
	struct config patient = *cfg; /* shares cfg's strings: never cleaned */
	struct error err = { "" };
	struct pipeline *pipeline;
	char line[ERROR_MESSAGE_MAX];
	struct stat st;
	int64_t t0;
	int rc = 0;

	if (cfg->log_file != NULL)
		rc |= check_file("log_file", cfg->log_file, O_WRONLY | O_APPEND);
	if (cfg->metrics_file != NULL)
		rc |= check_file("metrics_file", cfg->metrics_file, O_RDWR);
	if (rc == 0 && path != NULL)
		printf("config: ok (%s)\n", path);
	else if (rc == 0)
		printf("config: ok (no configuration file is read: defaults and "
		       "environment only; -c FILE or PAYHOOK_CONFIG names "
		       "one)\n");
	if (path != NULL && stat(path, &st) == 0 && (st.st_mode & S_IROTH) != 0)
		printf("config: WARNING: %s is readable by every user; it "
		       "holds secrets: chmod o-r\n", path);
	for (size_t i = 0; config_warning(cfg, i, line, sizeof(line)) == 0; i++)
		printf("config: WARNING: %s\n", line);
	check_alert_sender(cfg);
	if (patient.mysql_connect_timeout_s < CHECK_TIMEOUT_S)
		patient.mysql_connect_timeout_s = CHECK_TIMEOUT_S;
	if (patient.mysql_read_timeout_s < CHECK_TIMEOUT_S)
		patient.mysql_read_timeout_s = CHECK_TIMEOUT_S;
	if (patient.mysql_write_timeout_s < CHECK_TIMEOUT_S)
		patient.mysql_write_timeout_s = CHECK_TIMEOUT_S;
	if (patient.redis_timeout_ms < CHECK_TIMEOUT_S * 1000)
		patient.redis_timeout_ms = CHECK_TIMEOUT_S * 1000;
	pipeline = pipeline_new(&patient, &err);
	if (pipeline == NULL) {
		printf("config: FAILED: %s\n", err.message);
		return 1;
	}
	t0 = timing_now_us();
	rc |= check_redis(&patient);
	report_slow("redis", (timing_now_us() - t0) / 1000,
		    cfg->redis_timeout_ms, "redis_timeout_ms");
	/* A node that is down is a warning (the workers move on to the
	 * next); the schema check below fails when none takes writes. */
	sqlconn_report_nodes(&patient, stdout);
	t0 = timing_now_us();
	if (pipeline_check_mysql(pipeline, &err) != 0) {
		printf("mysql: FAILED: %s\n", err.message);
		rc = 1;
	} else {
		printf("mysql: ok (%s, table payments with "
		       "uq_payments_provider_transaction_id)\n",
		       sqlconn_where(cfg));
		report_slow("mysql", (timing_now_us() - t0) / 1000,
			    1000L * cfg->mysql_connect_timeout_s,
			    "mysql_connect_timeout_s");
	}
	pipeline_free(pipeline);
	return rc;
}
