/* dispatch_admin.c - payhook-dispatch's operators' commands (see
 * dispatch_admin.h): each opens its own connection, does one thing, and
 * returns the process's exit status. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alert.h"
#include "configuration.h"
#include "dispatch_admin.h"
#include "handoff_admin.h"
#include "handoff_store.h"
#include "lifecycle.h"
#include "log.h"
#include "number.h"
#include "target_store.h"
#include "timing.h"
#include "transport_pick.h"
#include "utc.h"

#define PROGRAM "payhook-dispatch"
#define EXIT_USAGE DISPATCH_ADMIN_EXIT_USAGE

/* Prints text with anything but visible ASCII and space as '?': ids and
 * errors go to a terminal. */
static void print_clean(const char *text)
{
	for (const char *c = text; *c != '\0'; c++)
		putchar((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f ? *c
									 : '?');
}

/* What --list-dead counts and whether it lists changes. */
struct dead_list {
	unsigned long long count;
	bool changes;
};

static int print_dead(void *ctx, const struct handoff_admin_dead *row)
{
	struct dead_list *list = ctx;

	printf("%llu\t", row->id);
	print_clean(row->provider);
	putchar('\t');
	print_clean(row->transaction_id);
	if (list->changes) {
		putchar('\t');
		print_clean(row->kind);
		putchar('\t');
		print_clean(row->object_id);
		putchar('\t');
		print_clean(row->state);
		printf("\t%lu", row->n);
	}
	printf("\t%lu\t", row->attempts);
	print_clean(row->last_error);
	putchar('\n');
	list->count++;
	return 0;
}

/* --list-dead: the dead payments, or with changes the dead lifecycle
 * changes. */
int dispatch_admin_list_dead(const struct config *cfg, bool changes)
{
	struct error err = { "" };
	struct handoff_store *db = handoff_store_new(cfg, &err);
	struct dead_list list = { 0, changes };
	int rc = 0;

	if (db == NULL) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return 1;
	}
	printf("id\tprovider\ttransaction_id\t%sattempts\tlast_error\n",
	       changes ? "kind\tobject_id\tstate\tn\t" : "");
	if (handoff_admin_list_dead(db, changes, print_dead, &list, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = 1;
	} else {
		fprintf(stderr, PROGRAM ": %llu dead %s%s\n", list.count,
			changes ? "change" : "payment",
			list.count == 1 ? "" : "s");
	}
	if (fflush(stdout) != 0)
		rc = 1;
	handoff_store_free(db);
	return rc;
}


/* Prints at most 40 characters of text, anything but visible ASCII as
 * '?', to stderr. */
static void print_arg(const char *text)
{
	for (const char *c = text; *c != '\0' && c - text < 40; c++)
		fputc((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f ? *c
									     : '?',
		      stderr);
}

/* The longest age --since/--until take: 100 years. */
#define AGE_MAX_S (100ULL * 366 * 86400)

/* Parses a --since/--until TIME strictly, now_s being the wall clock's
 * seconds: RFC 3339 (2026-11-30T14:00:00Z, a fraction, an offset), the
 * same with a space for the T and no zone, or a date alone (both UTC), or
 * an age: 1 to 9 digits then s, m, h or d (that long before now). Writes
 * the instant as MySQL reads it in UTC ("2026-11-30 14:00:00.000000") into
 * buf (DISPATCH_ADMIN_TIME_MAX bytes). Returns 0, or -1 for anything else (MySQL would
 * read "yesterday" as a zero date, which selects every row). */
static int parse_time_arg(const char *text, time_t now_s, char *buf)
{
	struct lifecycle_time t;
	size_t len = strlen(text);
	char rfc[40];
	uint64_t n;
	struct tm tm;
	time_t secs;

	if (len >= 2 && len <= 10 && strchr("smhd", text[len - 1]) != NULL &&
	    number_parse_n(text, len - 1, AGE_MAX_S, &n) == NUMBER_OK) {
		static const char units[] = "smhd";
		static const uint64_t scale[] = { 1, 60, 3600, 86400 };
		uint64_t age = n * scale[strchr(units, text[len - 1]) - units];

		if (age > AGE_MAX_S || (uint64_t)now_s < age)
			return -1;
		t.seconds = (int64_t)now_s - (int64_t)age;
		t.micros = 0;
	} else if (len == 10) {
		/* A date alone: its midnight, UTC. */
		snprintf(rfc, sizeof(rfc), "%sT00:00:00Z", text);
		if (lifecycle_time_parse(rfc, strlen(rfc), &t) != 0)
			return -1;
	} else if (len >= 19 && len < sizeof(rfc) - 1 && text[10] == ' ') {
		/* 'YYYY-MM-DD HH:MM:SS[.f]', UTC, as MySQL writes it. */
		memcpy(rfc, text, len + 1);
		rfc[10] = 'T';
		if (strpbrk(rfc + 19, "Zz+-") == NULL)
			strcat(rfc, "Z");
		if (lifecycle_time_parse(rfc, strlen(rfc), &t) != 0)
			return -1;
	} else if (lifecycle_time_parse(text, len, &t) != 0) {
		return -1;
	}
	secs = (time_t)t.seconds;
	if (gmtime_r(&secs, &tm) == NULL ||
	    strftime(buf, DISPATCH_ADMIN_TIME_MAX, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		return -1;
	snprintf(buf + 19, DISPATCH_ADMIN_TIME_MAX - 19, ".%06u",
		 (unsigned)t.micros % 1000000u);
	return 0;
}

/* --since/--until's value into buf (parse_time_arg), or a message and
 * false. */
bool dispatch_admin_time_arg(const char *option, const char *text, char *buf)
{
	if (parse_time_arg(text, time(NULL), buf) == 0)
		return true;
	fprintf(stderr, PROGRAM ": --%s: not a time: '", option);
	print_arg(text);
	fprintf(stderr, "'; give RFC 3339 (2026-11-30T14:00:00Z, or with an "
			"offset), '2026-11-30 14:00:00' or 2026-11-30 (UTC), "
			"or an age: 30m, 2h, 7d (s, m, h, d)\n");
	return false;
}

/* --requeue and --redeliver: the rows named by ids (args) and the filters
 * in sel back to pending, or with dry_run only counted. */
int dispatch_admin_change_rows(const struct config *cfg,
		       enum handoff_admin_change change, char **args,
		       size_t count, struct handoff_admin_selection *sel,
		       bool dry_run)
{
	const char *verb = change == HANDOFF_ADMIN_REDELIVER ? "redeliver"
							       : "requeue";
	const char *done = change == HANDOFF_ADMIN_REDELIVER ? "redelivered"
							       : "requeued";
	const char *noun = sel->changes ? "change" : "payment";
	struct error err = { "" };
	struct handoff_store *db;
	unsigned long long *ids = NULL, changed = 0;
	int rc = 0;

	if (count == 0 && (change == HANDOFF_ADMIN_REDELIVER ||
			   (sel->provider == NULL && sel->since == NULL &&
			    sel->until == NULL && sel->error == NULL))) {
		fprintf(stderr, PROGRAM ": --%s needs the ids of the %ss%s\n",
			verb, noun, change == HANDOFF_ADMIN_REDELIVER ? ""
			: " (--list-dead shows them), or --provider, --since, "
			  "--until or --error");
		return EXIT_USAGE;
	}
	if (count > 0) {
		ids = calloc(count, sizeof(*ids));
		if (ids == NULL) {
			fprintf(stderr, PROGRAM ": out of memory\n");
			return 1;
		}
	}
	for (size_t i = 0; i < count; i++) {
		uint64_t id;

		if (number_parse(args[i], UINT64_MAX, &id) != NUMBER_OK ||
		    id == 0) {
			fprintf(stderr, PROGRAM ": not a %s id: ", noun);
			print_arg(args[i]);
			fputc('\n', stderr);
			free(ids);
			return EXIT_USAGE;
		}
		ids[i] = id;
	}
	sel->ids = ids;
	sel->id_count = count;
	db = handoff_store_new(cfg, &err);
	if (db == NULL ||
	    handoff_admin_requeue(db, change, sel, dry_run, &changed, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = 1;
	} else if (dry_run) {
		printf("would %s %llu %s%s (dry run: nothing changed)\n",
		       verb, changed, noun, changed == 1 ? "" : "s");
	} else if (count > 0) {
		printf("%s %llu of %zu %s%s%s\n", done, changed, count, noun,
		       count == 1 ? "" : "s",
		       changed < count
			       ? change == HANDOFF_ADMIN_REDELIVER
					 ? " (the others are not delivered, "
					   "or do not exist)"
					 : sel->include_skipped
						   ? " (the others are not dead or "
						     "skipped, or do not exist)"
						   : " (the others are not dead, "
						     "or do not exist; "
						     "--include-skipped takes "
						     "skipped ones)"
			       : "");
	} else {
		printf("%s %llu %s%s\n", done, changed, noun,
		       changed == 1 ? "" : "s");
	}
	handoff_store_free(db);
	free(ids);
	return rc;
}

/* Unix microseconds as RFC 3339 UTC to the second into buf. */
static const char *utc_text(int64_t us, char *buf, size_t cap)
{
	if (us <= 0 || utc_format(us / 1000000, UTC_RFC3339, buf, cap) != 0)
		snprintf(buf, cap, "-");
	return buf;
}

/* What holds a pending row back, from the target's state s (now: the
 * database's clock), into buf; "" when the target takes attempts. */
static void target_hold(const struct target_state *s, int64_t now, char *buf,
			size_t cap)
{
	char when[40];

	buf[0] = '\0';
	if (s->pause_until_us > now)
		snprintf(buf, cap, "it asked to wait (Retry-After) until %s",
			 utc_text(s->pause_until_us, when, sizeof(when)));
	else if (s->open && s->probe_until_us > now)
		snprintf(buf, cap, "its circuit is open; a probe is under way "
			 "(another payment)");
	else if (s->open)
		snprintf(buf, cap, "its circuit is open; the next probe (one "
			 "payment) from %s",
			 utc_text(s->next_probe_us, when, sizeof(when)));
}

/* --show ID: where a payment (a change, with changes) stands and what it
 * waits for; then the target's shared state. 0 when found. */
int dispatch_admin_show(const struct config *cfg, bool changes, char **args,
		    size_t count)
{
	struct error err = { "" };
	struct handoff_store *db;
	struct target_store *ts = NULL;
	struct handoff_admin_show row;
	struct target_state s;
	enum target_store_status tst = TARGET_STORE_FAILED;
	uint64_t id;
	int64_t now = 0;
	char hold[256], when[40], owner_note[200];
	int rc = 0;

	if (count != 1 || number_parse(args[0], UINT64_MAX, &id) != NUMBER_OK ||
	    id == 0) {
		fprintf(stderr, PROGRAM ": --show takes one %s id\n",
			changes ? "change" : "payment");
		return EXIT_USAGE;
	}
	db = handoff_store_new(cfg, &err);
	if (db == NULL || handoff_admin_show(db, changes, id, &row, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		handoff_store_free(db);
		return 1;
	}
	if (!row.found) {
		fprintf(stderr, PROGRAM ": no %s %llu\n",
			changes ? "change" : "payment", (unsigned long long)id);
		handoff_store_free(db);
		return 1;
	}
	ts = target_store_new(cfg, db, &err);
	if (ts != NULL)
		tst = target_store_read(ts, &s, &now, &err);
	printf("%s %llu %s %s%s%s: %s, attempts %lu of %d\n",
	       changes ? "change" : "payment", (unsigned long long)id,
	       row.provider, row.transaction_id, changes ? " " : "", row.change,
	       row.state, row.attempts, cfg->dispatch_max_attempts);
	printf("  last error: %s\n", row.last_error[0] != '\0' ? row.last_error
							      : "-");
	owner_note[0] = '\0';
	if (row.claimed)
		snprintf(owner_note, sizeof(owner_note),
			 " (claimed by %s, attempt under way)", row.owner);
	if (strcmp(row.state, "pending") != 0)
		printf("  next attempt: none (%s)\n", row.state);
	else if (row.due_in_ms > 0)
		printf("  next attempt: %s (in %lld s)%s\n", row.due_at,
		       (row.due_in_ms + 999) / 1000, owner_note);
	else
		printf("  next attempt: due now (since %s)\n", row.due_at);
	hold[0] = '\0';
	if (tst == TARGET_STORE_OK)
		target_hold(&s, now, hold, sizeof(hold));
	if (strcmp(row.state, "pending") != 0)
		;
	else if (changes && row.payment_state[0] == '\0')
		printf("  held back by its payment: payhook never recorded it "
		       "(the change goes once the payment is delivered)\n");
	else if (changes && strcmp(row.payment_state, "delivered") != 0 &&
		 strcmp(row.payment_state, "skipped") != 0)
		printf("  held back by its payment: %s (the change goes once "
		       "the payment is delivered)\n", row.payment_state);
	else if (changes && row.earlier_id != 0)
		printf("  held back by change %llu of the same object: %s\n",
		       row.earlier_id, row.earlier_state);
	else if (hold[0] != '\0')
		printf("  held back by the target: %s\n", hold);
	else
		printf("  held back by nothing: it goes when due\n");
	if (tst == TARGET_STORE_OK) {
		printf("target %s: circuit %s since %s, %u failures in a row, "
		       "last status %ld, last error: %s",
		       target_store_label(ts), s.open ? "open" : "closed",
		       utc_text(s.since_us, when, sizeof(when)), s.failures,
		       s.last_status, s.last_error[0] != '\0' ? s.last_error
							   : "-");
		printf(", last 2xx %s\n",
		       utc_text(s.last_success_us, when, sizeof(when)));
	} else if (tst == TARGET_STORE_MISSING) {
		printf("target: not shared (no table dispatch_target: run "
		       "db/migrate-9-dispatch-target.sql)\n");
	} else {
		printf("target: not known: %s\n", err.message);
	}
	if (fflush(stdout) != 0)
		rc = 1;
	target_store_free(ts);
	handoff_store_free(db);
	return rc;
}

/* --pause and --resume: the flag every dispatcher of the database reads. */
int dispatch_admin_set_paused(const struct config *cfg, bool paused)
{
	struct error err = { "" };
	struct handoff_store *db = handoff_store_new(cfg, &err);
	int rc = 0;

	if (db == NULL || handoff_admin_set_paused(db, paused, &err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		rc = 1;
	} else if (paused) {
		printf("paused: every payhook-dispatch of this database stops "
		       "claiming within dispatch_poll_ms (attempts in hand "
		       "finish); --resume starts them again\n");
	} else {
		printf("resumed: every payhook-dispatch of this database claims "
		       "again within dispatch_poll_ms\n");
	}
	handoff_store_free(db);
	return rc;
}

/* True for an alert's event name: 1 to 64 of a-z, 0-9 and '_'. */
static bool event_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > 64)
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == len;
}

/* --send-alert EVENT SUMMARY ACTION [DETAIL]: one alert through alert_url or
 * alert_command, as this program's own are sent; from names the program
 * it comes from (payhook's pool sends its crash loops this way, so that it
 * needs no HTTP client). 0 when delivered or when no alert key is set. */
int dispatch_admin_send_alert(const struct config *cfg, const char *from,
		      char **args, size_t count)
{
	struct alert_message message = { 0 };
	struct error err = { "" };
	struct alert *alert;
	int rc = 0;

	if (count < 3 || count > 4 || !event_name_valid(args[0]) ||
	    args[1][0] == '\0' || args[2][0] == '\0') {
		fprintf(stderr, PROGRAM ": --send-alert takes EVENT (a-z, 0-9, "
				"_), SUMMARY and ACTION, and maybe DETAIL\n");
		return EXIT_USAGE;
	}
	message.event = args[0];
	message.summary = args[1];
	message.action = args[2];
	message.detail = count == 4 && args[3][0] != '\0' ? args[3] : NULL;
	if (alert_check_config(cfg, &err) != 0 ||
	    transport_pick_global_init(&err) != 0) {
		fprintf(stderr, PROGRAM ": %s\n", err.message);
		return 1;
	}
	alert = alert_new(cfg, from, &err);
	if (alert == NULL) {
		log_error("alert %s: %s", message.event, err.message);
		rc = 1;
	} else if (!alert_enabled(alert)) {
		log_warn("alert %s not sent: neither alert_url nor "
			 "alert_command is set", message.event);
	} else if (alert_send(alert, &message, &err) != 0) {
		log_error("alert %s: %s", message.event, err.message);
		rc = 1;
	} else {
		log_info("alert %s sent", message.event);
	}
	alert_free(alert);
	transport_pick_global_cleanup();
	return rc;
}

