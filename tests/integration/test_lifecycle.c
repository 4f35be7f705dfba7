/* test_lifecycle.c - refunds, disputes and cancellations recorded exactly
 * once against a real redis-server and a real mariadbd, started by
 * lifecycle.test through tests/lib/harness.sh: the outcomes, the payment_events
 * row, its payment_event_changes and the payment's totals, in order and out
 * of order, under storms from several processes, and after a worker is
 * killed in the middle of its transaction. Nothing is mocked.
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "configuration.h"
#include "itest.h"
#include "log.h"
#include "metrics.h"
#include "status.h"
#include "pipeline.h"
#include "provider.h"
#include "response.h"
#include "testreq.h"

#define ctl itest_ctl

static struct config cfg;
static struct pipeline *pipeline;

static void setup(void)
{
	struct error err;

	ck_assert_msg(pipeline_load_config(&cfg, NULL, &err) == 0, "config: %s",
		      err.message);
	log_init("test_lifecycle", LOG_LEVEL_WARN);
	pipeline = pipeline_new(&cfg, &err);
	ck_assert_msg(pipeline != NULL, "pipeline: %s", err.message);
}

static void teardown(void)
{
	pipeline_free(pipeline);
	pipeline = NULL;
	config_cleanup(&cfg);
}

/* ---- bodies and requests ---- */

/* A standard lifecycle body: type (refund, dispute, cancellation) of object
 * for payment tid, at second `at` of 2024-06-17T04:00 (a static buffer). */
static const char *event_body(const char *type, const char *object,
			      const char *tid, long amount,
			      const char *currency, const char *state, int at)
{
	static char body[512];

	snprintf(body, sizeof(body),
		 "{\"type\":\"%s\",\"object_id\":\"%s\",\"transaction_id\":"
		 "\"%s\",\"amount\":%ld,\"currency\":\"%s\",\"state\":\"%s\","
		 "\"occurred_at\":\"2024-06-17T04:%02d:%02d.000001Z\"}",
		 type, object, tid, amount, currency, state, at / 60, at % 60);
	return body;
}

/* The same with the amount as text (past what a long holds). */
static const char *event_body_text(const char *type, const char *object,
				   const char *tid, const char *amount,
				   const char *state, int at)
{
	static char body[1024];

	snprintf(body, sizeof(body),
		 "{\"type\":\"%s\",\"object_id\":\"%s\",\"transaction_id\":"
		 "\"%s\",\"amount\":%s,\"currency\":\"EUR\",\"state\":\"%s\","
		 "\"occurred_at\":\"2024-06-17T04:%02d:%02d.000001Z\"}",
		 type, object, tid, amount, state, at / 60, at % 60);
	return body;
}

static enum outcome post_body(struct pipeline *p, const char *body)
{
	struct result r;

	itest_post(p, body, &r);
	return r.outcome;
}

static enum outcome refund(const char *object, const char *tid, long amount,
			   const char *state, int at)
{
	return post_body(pipeline, event_body("refund", object, tid, amount,
					      "EUR", state, at));
}

static enum outcome dispute(const char *object, const char *tid,
			    const char *state, int at)
{
	return post_body(pipeline, event_body("dispute", object, tid, 1000,
					      "EUR", state, at));
}

static enum outcome payment(const char *tid, long amount, const char *currency)
{
	char body[256];

	snprintf(body, sizeof(body),
		 "{\"transaction_id\":\"%s\",\"amount\":%ld,\"currency\":\"%s\"}",
		 tid, amount, currency);
	return post_body(pipeline, body);
}

/* A payment of tid (1000 EUR) through p. */
static enum outcome payment_on(struct pipeline *p, const char *tid)
{
	char body[256];

	snprintf(body, sizeof(body), "{\"transaction_id\":\"%s\","
		 "\"amount\":1000,\"currency\":\"EUR\"}", tid);
	return post_body(p, body);
}

/* ---- what the database holds ---- */

/* "refunded_amount dispute_state cancelled" of payment tid ("" when it has
 * no row); a static buffer. */
static const char *totals(const char *tid)
{
	return ctl("sql \"SELECT CONCAT_WS(' ', refunded_amount, "
		   "IFNULL(dispute_state, '-'), cancelled) FROM payments "
		   "WHERE transaction_id = '%s'\"", tid);
}

/* "state amount" of object's row ("" when none); a static buffer. */
static const char *row_of(const char *object)
{
	return ctl("sql \"SELECT CONCAT_WS(' ', state, amount) FROM "
		   "payment_events WHERE object_id = '%s'\"", object);
}

/* The object's changes, "state:n" in order, comma-separated. */
static const char *changes_of(const char *object)
{
	return ctl("sql \"SELECT IFNULL(GROUP_CONCAT(CONCAT(c.state, ':', c.n) "
		   "ORDER BY c.id), '') FROM payment_event_changes c JOIN "
		   "payment_events e ON e.id = c.event_row_id WHERE "
		   "e.object_id = '%s'\"", object);
}

static long count_of(const char *table, const char *object)
{
	if (strcmp(table, "payment_events") == 0)
		return strtol(ctl("sql \"SELECT COUNT(*) FROM payment_events "
				  "WHERE object_id = '%s'\"", object),
			      NULL, 10);
	return strtol(ctl("sql \"SELECT COUNT(*) FROM payment_event_changes c "
			  "JOIN payment_events e ON e.id = c.event_row_id "
			  "WHERE e.object_id = '%s'\"", object),
		      NULL, 10);
}

/* Waits until `count` sessions of the server are in a SLEEP() (the
 * process list's "User sleep"), polling for 10 s at most. */
static void wait_sleepers(const char *count)
{
	for (int i = 0; i < 200; i++) {
		if (strcmp(ctl("sql \"SELECT COUNT(*) FROM "
			       "information_schema.processlist WHERE state "
			       "= 'User sleep'\""), count) == 0)
			return;
		usleep(50000);
	}
}

/* The Redis key of tid's early mark (a static buffer). */
static const char *mark_of(const char *tid)
{
	static char key[256];

	snprintf(key, sizeof(key), "payhook:early:%s%s", cfg.lock_key_prefix,
		 tid);
	return key;
}

/* ---- Adyen: items signed by the Adyen profile's own signer ---- */

/* lifecycle.test's PAYHOOK_ADYEN_SECRET. */
#define ADYEN_KEY "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"

/* A batch of one NotificationRequestItem (eventDate at second `at` of
 * 2024-06-17T04:00Z; action: additionalData's modification.action, NULL
 * for none), signed as Adyen signs it (provider_sign): a new body the
 * caller frees. */
static char *adyen_signed(const char *code, const char *psp,
			  const char *original, long value, const char *success,
			  const char *action, int at)
{
	char body[1024], extra[128] = "";
	struct provider_sign_input in = { .provider = CONFIG_PROVIDER_ADYEN,
					  .secret = ADYEN_KEY };
	struct provider_headers headers;
	struct error err;
	char *signed_body = NULL;

	if (action != NULL)
		snprintf(extra, sizeof(extra), ",\"modification.action\":\"%s\"",
			 action);
	snprintf(body, sizeof(body),
		 "{\"live\":\"false\",\"notificationItems\":[{"
		 "\"NotificationRequestItem\":{\"additionalData\":{"
		 "\"hmacSignature\":\"x\"%s},\"amount\":{\"currency\":"
		 "\"EUR\",\"value\":%ld},\"eventCode\":\"%s\","
		 "\"eventDate\":\"2024-06-17T04:%02d:%02dZ\","
		 "\"merchantAccountCode\":\"TestMerchant\","
		 "\"merchantReference\":\"ref-%s\",\"originalReference\":"
		 "\"%s\",\"paymentMethod\":\"visa\",\"pspReference\":"
		 "\"%s\",\"reason\":\"\",\"success\":\"%s\"}}]}",
		 extra, value, code, at / 60, at % 60, psp, original, psp,
		 success);
	ck_assert_msg(provider_sign(&in, body, strlen(body), &headers,
				    &signed_body, &err) == 0, "sign: %s",
		      err.message);
	return signed_body;
}

/* body with its first `from` replaced by `to` (same length): an unsigned
 * field changed, the signature kept. In place. */
static char *resent_with(char *body, const char *from, const char *to)
{
	char *at = strstr(body, from);

	ck_assert_msg(at != NULL && strlen(from) == strlen(to), "%s", from);
	memcpy(at, to, strlen(to));
	return body;
}

static enum outcome post_adyen(const char *body)
{
	struct result r;

	itest_post_to(pipeline, "/webhook/adyen", body, &r);
	return r.outcome;
}

/* Signs and posts one item, the signed body kept in *kept when not NULL. */
static enum outcome adyen(const char *code, const char *psp,
			  const char *original, long value, const char *success,
			  const char *action, int at, char **kept)
{
	char *body = adyen_signed(code, psp, original, value, success, action,
				  at);
	enum outcome o = post_adyen(body);

	if (kept != NULL)
		*kept = body;
	else
		free(body);
	return o;
}

/* ---- tests ---- */

/* A full refund in two parts (partial, then the rest), each answered
 * processed once and duplicate on redelivery; the totals are the sum of
 * the succeeded refunds. Each outcome is counted by its kind. */
START_TEST(test_refunds_partial_and_full)
{
	char tid[96], a[128], b[128];
	struct error err;
	struct metrics *m = metrics_new_shared(&err);

	ck_assert_ptr_nonnull(m);
	pipeline_set_metrics(pipeline, m);
	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("refund"));
	snprintf(a, sizeof(a), "re_a_%s", tid);
	snprintf(b, sizeof(b), "re_b_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "0 - 0");
	assert_outcome(refund(a, tid, 300, "succeeded", 1), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "300 - 0");
	assert_outcome(refund(a, tid, 300, "succeeded", 1), OUTCOME_DUPLICATE);
	/* The same state announced again later changes nothing either. */
	assert_outcome(refund(a, tid, 300, "succeeded", 9), OUTCOME_DUPLICATE);
	assert_outcome(refund(b, tid, 700, "pending", 2), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "300 - 0");
	assert_outcome(refund(b, tid, 700, "succeeded", 3), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "1000 - 0");
	ck_assert_str_eq(row_of(b), "succeeded 700");
	ck_assert_str_eq(changes_of(a), "succeeded:1");
	ck_assert_str_eq(changes_of(b), "pending:1,succeeded:1");
	ck_assert_str_eq(ctl("redis EXISTS 'lock:webhook:tx:%s'", tid), "0");
	ck_assert_int_eq(status_value(m, &cfg,
				       "payhook_lifecycle_events_total{provider="
				       "\"standard\",kind=\"refund\",outcome="
				       "\"processed\"}"), 3);
	ck_assert_int_eq(status_value(m, &cfg,
				       "payhook_lifecycle_events_total{provider="
				       "\"standard\",kind=\"refund\",outcome="
				       "\"duplicate\"}"), 2);
	pipeline_set_metrics(pipeline, NULL);
	metrics_free(m);
}
END_TEST

/* A refund that failed after it succeeded no longer counts; an older event
 * of it (the succeeded one, redelivered) is a duplicate. */
START_TEST(test_refund_failed_after_succeeded)
{
	char tid[96], a[128];

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("failed"));
	snprintf(a, sizeof(a), "re_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	assert_outcome(refund(a, tid, 400, "succeeded", 1), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "400 - 0");
	assert_outcome(refund(a, tid, 400, "failed", 2), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "0 - 0");
	assert_outcome(refund(a, tid, 400, "succeeded", 1), OUTCOME_DUPLICATE);
	ck_assert_str_eq(totals(tid), "0 - 0");
	ck_assert_str_eq(changes_of(a), "succeeded:1,failed:1");
}
END_TEST

/* A dispute opened, lost, won, then lost again: each change processed, a
 * state held again numbered 2 in the history; the payment's dispute_state
 * follows; each redelivery is a duplicate. */
START_TEST(test_dispute_open_lost_won)
{
	char tid[96], d[128];

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("dispute"));
	snprintf(d, sizeof(d), "dp_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	assert_outcome(dispute(d, tid, "open", 1), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "0 open 0");
	assert_outcome(dispute(d, tid, "open", 1), OUTCOME_DUPLICATE);
	assert_outcome(dispute(d, tid, "lost", 2), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "0 lost 0");
	assert_outcome(dispute(d, tid, "lost", 2), OUTCOME_DUPLICATE);
	assert_outcome(dispute(d, tid, "open", 1), OUTCOME_DUPLICATE);
	assert_outcome(dispute(d, tid, "won", 3), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "0 won 0");
	assert_outcome(dispute(d, tid, "won", 3), OUTCOME_DUPLICATE);
	assert_outcome(dispute(d, tid, "lost", 4), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "0 lost 0");
	ck_assert_str_eq(changes_of(d), "open:1,lost:1,won:1,lost:2");
	/* A cancellation sets cancelled. */
	{
		char c[128];

		snprintf(c, sizeof(c), "cn_%s", tid);
		assert_outcome(post_body(pipeline,
					 event_body("cancellation", c, tid,
						    1000, "EUR", "succeeded",
						    5)),
			       OUTCOME_PROCESSED);
		ck_assert_str_eq(totals(tid), "0 lost 1");
	}
}
END_TEST

/* Adyen signs an item's pspReference, originalReference, merchant fields,
 * amount, eventCode and success, not its eventDate: a CHARGEBACK item seen
 * once and resent with a later eventDate is the same signed item, a
 * duplicate, and the dispute stays won; likewise one that came late (older
 * than the row's state) and is then resent dated after it. */
START_TEST(test_adyen_replay_later_date)
{
	char psp[96], d[128], *lost = NULL;

	snprintf(psp, sizeof(psp), "%s", itest_fresh_id("adyen-replay"));
	snprintf(d, sizeof(d), "D%s", psp);
	assert_outcome(adyen("AUTHORISATION", psp, "", 1000, "true", NULL, 0,
			     NULL), OUTCOME_PROCESSED);
	assert_outcome(adyen("NOTIFICATION_OF_CHARGEBACK", d, psp, 1000, "true",
			     NULL, 1, NULL), OUTCOME_PROCESSED);
	assert_outcome(adyen("CHARGEBACK", d, psp, 1000, "true", NULL, 2,
			     &lost), OUTCOME_PROCESSED);
	assert_outcome(adyen("CHARGEBACK_REVERSED", d, psp, 1000, "true", NULL,
			     3, NULL), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(psp), "0 won 0");
	/* The CHARGEBACK item as it was signed, dated after the reversal. */
	assert_outcome(post_adyen(resent_with(lost, "04:00:02Z", "04:00:09Z")),
		       OUTCOME_DUPLICATE);
	ck_assert_str_eq(totals(psp), "0 won 0");
	ck_assert_str_eq(row_of(d), "won 1000");
	ck_assert_str_eq(changes_of(d), "open:1,lost:1,won:1");
	free(lost);

	/* won at 3 first; the CHARGEBACK dated 2 comes late (a duplicate:
	 * older), then is resent dated 9. */
	snprintf(psp, sizeof(psp), "%s", itest_fresh_id("adyen-late"));
	snprintf(d, sizeof(d), "D%s", psp);
	assert_outcome(adyen("AUTHORISATION", psp, "", 1000, "true", NULL, 0,
			     NULL), OUTCOME_PROCESSED);
	assert_outcome(adyen("CHARGEBACK_REVERSED", d, psp, 1000, "true", NULL,
			     3, NULL), OUTCOME_PROCESSED);
	assert_outcome(adyen("CHARGEBACK", d, psp, 1000, "true", NULL, 2,
			     &lost), OUTCOME_DUPLICATE);
	assert_outcome(post_adyen(resent_with(lost, "04:00:02Z", "04:00:09Z")),
		       OUTCOME_DUPLICATE);
	ck_assert_str_eq(totals(psp), "0 won 0");
	ck_assert_str_eq(changes_of(d), "won:1");
	free(lost);
	/* A new signed item still moves the state (SECOND_CHARGEBACK). */
	assert_outcome(adyen("SECOND_CHARGEBACK", d, psp, 1000, "true", NULL,
			     10, NULL), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(psp), "0 lost 0");
}
END_TEST

/* A CANCEL_OR_REFUND is one object per pspReference, its kind from
 * modification.action (unsigned) when first seen: resent with another
 * action it is a duplicate (one row, a refund only); another signed item
 * of the object keeps the kind the object was recorded with. */
START_TEST(test_adyen_cancel_or_refund_one_object)
{
	char psp[96], c[128], *body = NULL;

	snprintf(psp, sizeof(psp), "%s", itest_fresh_id("adyen-cor"));
	snprintf(c, sizeof(c), "C%s", psp);
	assert_outcome(adyen("AUTHORISATION", psp, "", 1000, "true", NULL, 0,
			     NULL), OUTCOME_PROCESSED);
	assert_outcome(adyen("CANCEL_OR_REFUND", c, psp, 1000, "true",
			     "refund", 1, &body), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(psp), "1000 - 0");
	assert_outcome(post_adyen(resent_with(body, "\"refund\"",
					      "\"cancel\"")),
		       OUTCOME_DUPLICATE);
	ck_assert_int_eq(count_of("payment_events", c), 1);
	ck_assert_str_eq(ctl("sql \"SELECT CONCAT_WS(' ', kind, state) FROM "
			     "payment_events WHERE object_id = '%s'\"", c),
			 "refund succeeded");
	ck_assert_str_eq(totals(psp), "1000 - 0");
	free(body);

	/* First seen as a cancellation; a later signed item of the object
	 * (success false, action refund) cannot turn it into a refund. */
	snprintf(psp, sizeof(psp), "%s", itest_fresh_id("adyen-cor2"));
	snprintf(c, sizeof(c), "C%s", psp);
	assert_outcome(adyen("AUTHORISATION", psp, "", 1000, "true", NULL, 0,
			     NULL), OUTCOME_PROCESSED);
	assert_outcome(adyen("CANCEL_OR_REFUND", c, psp, 1000, "true",
			     "cancel", 1, NULL), OUTCOME_PROCESSED);
	assert_outcome(adyen("CANCEL_OR_REFUND", c, psp, 1000, "false",
			     "refund", 2, NULL), OUTCOME_DUPLICATE);
	ck_assert_int_eq(count_of("payment_events", c), 1);
	ck_assert_str_eq(totals(psp), "0 - 1");
}
END_TEST

/* 2^62: two succeeded refunds of it pass 9223372036854775807. */
#define BIG "4611686018427387904"
#define MAX "9223372036854775807"

/* A refund whose amount would carry its payment's refunded_amount past
 * 9223372036854775807 is 400 invalid, nothing written (never a 503 the
 * provider retries for days); the payment's totals stay right. */
START_TEST(test_refund_total_past_max)
{
	char tid[96], a[128], b[128];

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("big"));
	snprintf(a, sizeof(a), "re_a_%s", tid);
	snprintf(b, sizeof(b), "re_b_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	assert_outcome(post_body(pipeline, event_body_text("refund", a, tid,
							   BIG, "succeeded", 1)),
		       OUTCOME_PROCESSED);
	assert_outcome(post_body(pipeline, event_body_text("refund", b, tid,
							   BIG, "succeeded", 2)),
		       OUTCOME_INVALID);
	ck_assert_int_eq(count_of("payment_events", b), 0);
	ck_assert_str_eq(totals(tid), BIG " - 0");
	/* A pending refund counts nothing: it is recorded; once it
	 * succeeds, it would pass: invalid. */
	assert_outcome(post_body(pipeline, event_body_text("refund", b, tid,
							   BIG, "pending", 3)),
		       OUTCOME_PROCESSED);
	assert_outcome(post_body(pipeline, event_body_text("refund", b, tid,
							   BIG, "succeeded", 4)),
		       OUTCOME_INVALID);
	ck_assert_str_eq(row_of(b), "pending " BIG);
	ck_assert_str_eq(totals(tid), BIG " - 0");
}
END_TEST

/* Refunds before their payment whose sum passes what payments'
 * refunded_amount holds: the ones that would pass it are 400 invalid, so
 * the payment's INSERT (which sums them) is never refused with 1264 (a 503
 * for ever): it is 200 processed with the totals of those recorded. */
START_TEST(test_refunds_past_max_before_payment)
{
	char tid[96], obj[3][128];

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("bigfirst"));
	for (int i = 0; i < 3; i++) {
		snprintf(obj[i], sizeof(obj[i]), "re_%d_%s", i, tid);
		assert_outcome(post_body(pipeline,
					 event_body_text("refund", obj[i], tid,
							 MAX, "succeeded",
							 i + 1)),
			       i == 0 ? OUTCOME_PROCESSED : OUTCOME_INVALID);
	}
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), MAX " - 0");
	/* Rows written before this rule (by SQL here) never keep a payment
	 * from being recorded either: its totals stop at the maximum. */
	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("bigold"));
	for (int i = 0; i < 3; i++)
		ctl("sql \"INSERT INTO payment_events (provider, kind, "
		    "object_id, transaction_id, state, amount, currency, "
		    "occurred_at, payload) VALUES ('standard', 'refund', "
		    "'re_old_%d_%s', '%s', 'succeeded', " MAX ", 'EUR', "
		    "UTC_TIMESTAMP(6), '{}')\"", i, tid, tid);
	ctl("redis SET '%s' 1", mark_of(tid));
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), MAX " - 0");
}
END_TEST

/* A refund larger than its payment is recorded (it is what the provider
 * says), but counted (payhook_suspicious_refunds_total) and logged. */
START_TEST(test_refund_past_payment_suspicious)
{
	char tid[96], a[128], b[128];
	struct error err;
	struct metrics *m = metrics_new_shared(&err);
	struct itest_capture cap;
	const char *logged;

	ck_assert_ptr_nonnull(m);
	pipeline_set_metrics(pipeline, m);
	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("over"));
	snprintf(a, sizeof(a), "re_a_%s", tid);
	snprintf(b, sizeof(b), "re_b_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	assert_outcome(refund(a, tid, 600, "succeeded", 1), OUTCOME_PROCESSED);
	ck_assert_int_eq(status_value(m, &cfg,
				       "payhook_suspicious_refunds_total"), 0);
	itest_capture_start(&cap);
	assert_outcome(refund(b, tid, 5000, "succeeded", 2), OUTCOME_PROCESSED);
	logged = itest_capture_end(&cap);
	ck_assert_str_eq(totals(tid), "5600 - 0");
	ck_assert_int_eq(status_value(m, &cfg,
				       "payhook_suspicious_refunds_total"), 1);
	ck_assert_msg(strstr(logged, "outcome=processed") != NULL &&
		      strstr(logged, "suspicious refund: the payment's "
			     "refunded amount passes its amount 1000") != NULL,
		      "%s", logged);
	pipeline_set_metrics(pipeline, NULL);
	metrics_free(m);
}
END_TEST

/* A state said again later moves the row's time: lost at 2, lost at 4,
 * then won at 3 ends lost (as in time order), each later one a duplicate;
 * the restated event's id is the row's. Without the move, won at 3 was
 * newer than the row's 2 and the dispute ended won. */
START_TEST(test_restated_state_moves_time)
{
	char tid[96], d[128];

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("restate"));
	snprintf(d, sizeof(d), "dp_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	assert_outcome(dispute(d, tid, "lost", 2), OUTCOME_PROCESSED);
	assert_outcome(dispute(d, tid, "lost", 4), OUTCOME_DUPLICATE);
	assert_outcome(dispute(d, tid, "won", 3), OUTCOME_DUPLICATE);
	ck_assert_str_eq(row_of(d), "lost 1000");
	ck_assert_str_eq(totals(tid), "0 lost 0");
	ck_assert_str_eq(changes_of(d), "lost:1");
	ck_assert_str_eq(ctl("sql \"SELECT DATE_FORMAT(occurred_at, '%%i:%%s') "
			     "FROM payment_events WHERE object_id = '%s'\"", d),
			 "00:04");
	/* Before its payment too: no mark needed for a row that exists. */
	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("restate-early"));
	snprintf(d, sizeof(d), "dp_%s", tid);
	assert_outcome(dispute(d, tid, "lost", 2), OUTCOME_PROCESSED);
	assert_outcome(dispute(d, tid, "lost", 4), OUTCOME_DUPLICATE);
	assert_outcome(dispute(d, tid, "won", 3), OUTCOME_DUPLICATE);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "0 lost 0");
}
END_TEST

/* A state said again later while another delivery holds the lock (set
 * here by redis-cli with another token) is not "nothing to record": it
 * would move the row's time, so it is in_progress, and the provider's
 * retry once the lock is free records it. Then lost at 2, lost at 4
 * (busy, retried), won at 3 ends lost, as in time order. The event that
 * would change nothing (lost at 2 again, or an older one) stays a
 * duplicate under the held lock. */
START_TEST(test_restated_state_under_held_lock)
{
	char tid[96], d[128];

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("restate-busy"));
	snprintf(d, sizeof(d), "dp_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	assert_outcome(dispute(d, tid, "lost", 2), OUTCOME_PROCESSED);
	ctl("redis SET 'lock:webhook:tx:%s' other-worker-token PX 60000", tid);
	assert_outcome(dispute(d, tid, "lost", 4), OUTCOME_IN_PROGRESS);
	assert_outcome(dispute(d, tid, "lost", 2), OUTCOME_DUPLICATE);
	assert_outcome(dispute(d, tid, "open", 1), OUTCOME_DUPLICATE);
	ck_assert_str_eq(ctl("sql \"SELECT DATE_FORMAT(occurred_at, '%%i:%%s') "
			     "FROM payment_events WHERE object_id = '%s'\"", d),
			 "00:02");
	ctl("redis DEL 'lock:webhook:tx:%s'", tid);
	/* The provider's retry. */
	assert_outcome(dispute(d, tid, "lost", 4), OUTCOME_DUPLICATE);
	ck_assert_str_eq(ctl("sql \"SELECT DATE_FORMAT(occurred_at, '%%i:%%s') "
			     "FROM payment_events WHERE object_id = '%s'\"", d),
			 "00:04");
	assert_outcome(dispute(d, tid, "won", 3), OUTCOME_DUPLICATE);
	ck_assert_str_eq(row_of(d), "lost 1000");
	ck_assert_str_eq(totals(tid), "0 lost 0");
}
END_TEST

/* The last line of the log file at path that holds needle, into line
 * (cap bytes); "" when none. */
static void last_log_line(const char *path, const char *needle, char *line,
			  size_t cap)
{
	char buf[2048];
	FILE *f = fopen(path, "r");

	line[0] = '\0';
	ck_assert_ptr_nonnull(f);
	while (fgets(buf, sizeof(buf), f) != NULL)
		if (strstr(buf, needle) != NULL)
			snprintf(line, cap, "%s", buf);
	fclose(f);
}

/* Each request's log line names its own webhook id: a refused request
 * after a signed event with one (a 405, a 415) carries none, not the
 * event's. */
START_TEST(test_log_event_id_per_request)
{
	char tid[96], object[128], path[256], line[2048];
	const char *tmp = getenv("TMPDIR");
	struct testreq t;
	struct result r;
	struct error err;
	const char *body;
	int fd;

	snprintf(path, sizeof(path), "%s/payhook-log-XXXXXX",
		 tmp != NULL ? tmp : "/tmp");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	log_init("test_lifecycle", LOG_LEVEL_INFO);
	ck_assert_msg(log_open_file(path, &err) == 0, "%s", err.message);
	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("logid"));
	snprintf(object, sizeof(object), "re_%s", tid);
	body = event_body("refund", object, tid, 100, "EUR", "succeeded", 1);
	testreq_init(&t, "POST", body, strlen(body));
	testreq_header(&t, "webhook-id", "msg_logid_refund");
	pipeline_test_handle(pipeline, &t.req, &r);
	assert_outcome(r.outcome, OUTCOME_PROCESSED);
	last_log_line(path, "outcome=processed", line, sizeof(line));
	ck_assert_msg(strstr(line, "event_id=msg_logid_refund") != NULL,
		      "the event's line: %s", line);

	testreq_init(&t, "GET", "", 0);
	pipeline_test_handle(pipeline, &t.req, &r);
	assert_outcome(r.outcome, OUTCOME_METHOD_NOT_ALLOWED);
	last_log_line(path, "outcome=method_not_allowed", line, sizeof(line));
	ck_assert_msg(strstr(line, "event_id=-") != NULL,
		      "the 405's line names another request's event: %s",
		      line);
	testreq_init(&t, "POST", body, strlen(body));
	testreq_set(&t, "CONTENT_TYPE", "text/plain");
	pipeline_test_handle(pipeline, &t.req, &r);
	assert_outcome(r.outcome, OUTCOME_UNSUPPORTED_MEDIA_TYPE);
	last_log_line(path, "outcome=unsupported_media_type", line,
		      sizeof(line));
	ck_assert_msg(strstr(line, "event_id=-") != NULL,
		      "the 415's line names another request's event: %s",
		      line);
	unlink(path);
}
END_TEST

/* The same events in reverse order end with the same row and the same
 * totals as in order; the older ones are duplicates. */
START_TEST(test_reverse_order_same_end)
{
	char fwd[96], rev[96], obj[2][4][128];
	static const char *const states[] = { "pending", "succeeded" };
	static const char *const dstates[] = { "open", "lost", "won" };

	snprintf(fwd, sizeof(fwd), "%s", itest_fresh_id("fwd"));
	snprintf(rev, sizeof(rev), "%s", itest_fresh_id("rev"));
	for (int t = 0; t < 2; t++) {
		const char *tid = t == 0 ? fwd : rev;

		snprintf(obj[t][0], sizeof(obj[t][0]), "re1_%s", tid);
		snprintf(obj[t][1], sizeof(obj[t][1]), "re2_%s", tid);
		snprintf(obj[t][2], sizeof(obj[t][2]), "dp_%s", tid);
		assert_outcome(payment(tid, 5000, "EUR"), OUTCOME_PROCESSED);
	}
	for (int i = 0; i < 2; i++) {
		assert_outcome(refund(obj[0][0], fwd, 1200, states[i], 1 + i),
			       OUTCOME_PROCESSED);
		assert_outcome(refund(obj[0][1], fwd, 800, states[i], 3 + i),
			       OUTCOME_PROCESSED);
	}
	for (int i = 0; i < 3; i++)
		assert_outcome(dispute(obj[0][2], fwd, dstates[i], 10 + i),
			       OUTCOME_PROCESSED);
	for (int i = 2; i >= 0; i--)
		assert_outcome(dispute(obj[1][2], rev, dstates[i], 10 + i),
			       i == 2 ? OUTCOME_PROCESSED : OUTCOME_DUPLICATE);
	for (int i = 1; i >= 0; i--) {
		assert_outcome(refund(obj[1][1], rev, 800, states[i], 3 + i),
			       i == 1 ? OUTCOME_PROCESSED : OUTCOME_DUPLICATE);
		assert_outcome(refund(obj[1][0], rev, 1200, states[i], 1 + i),
			       i == 1 ? OUTCOME_PROCESSED : OUTCOME_DUPLICATE);
	}
	ck_assert_str_eq(totals(fwd), "2000 won 0");
	ck_assert_str_eq(totals(rev), totals(fwd));
	for (int o = 0; o < 3; o++) {
		char want[64];

		snprintf(want, sizeof(want), "%s", row_of(obj[0][o]));
		ck_assert_str_eq(row_of(obj[1][o]), want);
	}
}
END_TEST

/* A refund before its payment is recorded all the same; the payment's
 * totals include it once the payment arrives (one in another currency
 * than the payment's never). */
START_TEST(test_refund_before_payment)
{
	char tid[96], a[128], d[128];

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("early"));
	snprintf(a, sizeof(a), "re_%s", tid);
	snprintf(d, sizeof(d), "dp_%s", tid);
	assert_outcome(refund(a, tid, 250, "succeeded", 1), OUTCOME_PROCESSED);
	assert_outcome(dispute(d, tid, "open", 2), OUTCOME_PROCESSED);
	/* One in another currency than the payment will have: recorded (it
	 * cannot be known yet), never counted in its totals. */
	{
		char other[128];

		snprintf(other, sizeof(other), "re_usd_%s", tid);
		assert_outcome(post_body(pipeline,
					 event_body("refund", other, tid, 90,
						    "USD", "succeeded", 3)),
			       OUTCOME_PROCESSED);
	}
	ck_assert_str_eq(totals(tid), "");
	ck_assert_int_eq(count_of("payment_events", a), 1);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "250 open 0");
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_DUPLICATE);
	ck_assert_str_eq(totals(tid), "250 open 0");
}
END_TEST

/* A refund in another currency than its payment's is a conflict: nothing
 * written. */
START_TEST(test_currency_conflict)
{
	char tid[96], a[128];
	struct result r;

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("conflict"));
	snprintf(a, sizeof(a), "re_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	itest_post(pipeline, event_body("refund", a, tid, 100, "USD",
					"succeeded", 1), &r);
	assert_outcome(r.outcome, OUTCOME_CONFLICT);
	ck_assert_int_eq(response_outcome_status(r.outcome, &cfg), 422);
	ck_assert_str_eq(r.reason, "the payment is recorded in another currency");
	ck_assert_int_eq(count_of("payment_events", a), 0);
	ck_assert_int_eq(count_of("payment_event_changes", a), 0);
	ck_assert_str_eq(totals(tid), "0 - 0");
	/* A lifecycle event that breaks a field rule is still invalid. */
	itest_post(pipeline, "{\"type\":\"refund\",\"object_id\":\"x\","
		   "\"transaction_id\":\"y\",\"amount\":5,\"currency\":\"EUR\","
		   "\"state\":\"succeeded\"}", &r);
	assert_outcome(r.outcome, OUTCOME_INVALID);
	ck_assert_str_eq(r.reason, "occurred_at: required");
}
END_TEST

/* The bodies of a storm, taken in turn. */
struct storm_bodies {
	const char *const *bodies;
	int count;
};

static void storm_body(void *ctx, int c, int i, char *body, size_t cap)
{
	const struct storm_bodies *b = ctx;

	snprintf(body, cap, "%s", b->bodies[(c + i) % b->count]);
}

/* Posts bodies[0..nbodies) in turn, per_child times from each of children
 * processes at once; counts the outcomes. */
static void storm(int children, int per_child, const char *const *bodies,
		  int nbodies, int counts[OUTCOME_COUNT])
{
	struct storm_bodies b = { bodies, nbodies };

	itest_storm(&cfg, children, per_child, storm_body, &b, counts);
}

/* 50 concurrent deliveries of one refund from 10 processes: exactly one
 * processed, the others duplicate or in progress (never 5xx); one row, one
 * change, the total counted once. */
START_TEST(test_storm_same_refund)
{
	char tid[96], a[128], body[512];
	const char *bodies[1] = { body };
	int counts[OUTCOME_COUNT];

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("storm1"));
	snprintf(a, sizeof(a), "re_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	snprintf(body, sizeof(body), "%s",
		 event_body("refund", a, tid, 600, "EUR", "succeeded", 1));
	storm(10, 5, bodies, 1, counts);
	ck_assert_msg(counts[OUTCOME_PROCESSED] == 1 &&
			      counts[OUTCOME_PROCESSED] +
					      counts[OUTCOME_DUPLICATE] +
					      counts[OUTCOME_IN_PROGRESS] == 50,
		      "processed %d duplicate %d in_progress %d unavailable "
		      "%d error %d", counts[OUTCOME_PROCESSED],
		      counts[OUTCOME_DUPLICATE], counts[OUTCOME_IN_PROGRESS],
		      counts[OUTCOME_UNAVAILABLE], counts[OUTCOME_ERROR]);
	ck_assert_int_eq(count_of("payment_events", a), 1);
	ck_assert_int_eq(count_of("payment_event_changes", a), 1);
	ck_assert_str_eq(totals(tid), "600 - 0");
	/* Without the lock (lock_backend = none) the rows alone decide: a
	 * new state of that refund from 50 deliveries is processed once (a
	 * deadlock between two of them is a 503, retried). */
	cfg.lock_backend = CONFIG_LOCK_NONE;
	snprintf(body, sizeof(body), "%s",
		 event_body("refund", a, tid, 600, "EUR", "failed", 2));
	storm(10, 5, bodies, 1, counts);
	cfg.lock_backend = CONFIG_LOCK_REDIS;
	ck_assert_msg(counts[OUTCOME_PROCESSED] == 1 &&
			      counts[OUTCOME_PROCESSED] +
					      counts[OUTCOME_DUPLICATE] +
					      counts[OUTCOME_UNAVAILABLE] == 50,
		      "no lock: processed %d duplicate %d unavailable %d "
		      "error %d", counts[OUTCOME_PROCESSED],
		      counts[OUTCOME_DUPLICATE], counts[OUTCOME_UNAVAILABLE],
		      counts[OUTCOME_ERROR]);
	ck_assert_str_eq(changes_of(a), "succeeded:1,failed:1");
	ck_assert_str_eq(totals(tid), "0 - 0");
}
END_TEST

/* Two different refunds of one payment, 30 deliveries of each from 10
 * processes at once: each processed once, the total their sum. Redelivered
 * until none is in progress (as the provider retries a 409). */
START_TEST(test_storm_two_refunds)
{
	char tid[96], a[128], b[128], body_a[512], body_b[512];
	const char *bodies[2] = { body_a, body_b };
	int counts[OUTCOME_COUNT], processed;

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("storm2"));
	snprintf(a, sizeof(a), "rea_%s", tid);
	snprintf(b, sizeof(b), "reb_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	snprintf(body_a, sizeof(body_a), "%s",
		 event_body("refund", a, tid, 300, "EUR", "succeeded", 1));
	snprintf(body_b, sizeof(body_b), "%s",
		 event_body("refund", b, tid, 450, "EUR", "succeeded", 2));
	storm(10, 6, bodies, 2, counts);
	ck_assert_msg(counts[OUTCOME_UNAVAILABLE] == 0 &&
			      counts[OUTCOME_ERROR] == 0 &&
			      counts[OUTCOME_PROCESSED] <= 2,
		      "processed %d duplicate %d in_progress %d unavailable "
		      "%d error %d", counts[OUTCOME_PROCESSED],
		      counts[OUTCOME_DUPLICATE], counts[OUTCOME_IN_PROGRESS],
		      counts[OUTCOME_UNAVAILABLE], counts[OUTCOME_ERROR]);
	processed = counts[OUTCOME_PROCESSED];
	/* The retries of the provider: one each, after the storm. */
	processed += refund(a, tid, 300, "succeeded", 1) == OUTCOME_PROCESSED;
	processed += refund(b, tid, 450, "succeeded", 2) == OUTCOME_PROCESSED;
	ck_assert_int_eq(processed, 2);
	ck_assert_int_eq(count_of("payment_events", a), 1);
	ck_assert_int_eq(count_of("payment_events", b), 1);
	ck_assert_str_eq(totals(tid), "750 - 0");
}
END_TEST

/* Posts body through p until it is answered 200 (a 503 or 409 is
 * retried, as the provider does), 20 times at most. Returns the last
 * outcome. */
static enum outcome post_until_done(struct pipeline *p, const char *body)
{
	enum outcome o = OUTCOME_UNAVAILABLE;

	for (int i = 0; i < 20; i++) {
		o = post_body(p, body);
		if (o == OUTCOME_PROCESSED || o == OUTCOME_DUPLICATE)
			break;
		usleep(100000);
	}
	return o;
}

/* Forks a process that posts body through a pipeline of its own whose
 * reads wait 8 s and whose lease lasts 60 s (it waits for a test's
 * trigger rather than time out), until answered 200 when retry is set.
 * The process exits 0 when the last answer is want. Returns its PID. */
static pid_t post_in_child(const char *body, bool retry, enum outcome want)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct error err;
		struct pipeline *p;
		enum outcome o = OUTCOME_ERROR;

		cfg.mysql_read_timeout_s = 8;
		cfg.lock_ttl_ms = 60000;
		p = pipeline_new(&cfg, &err);
		if (p != NULL)
			o = retry ? post_until_done(p, body) : post_body(p, body);
		_exit(o == want ? 0 : 1);
	}
	return pid;
}

/* A worker SIGKILLed in the middle of its transaction (the change's INSERT
 * held up by a trigger) leaves nothing: no row, no change, the totals as
 * they were. Once its lock expires, the provider's retry is processed. */
START_TEST(test_killed_mid_transaction)
{
	char tid[96], a[128];
	pid_t pid;
	int status;

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("killed"));
	snprintf(a, sizeof(a), "re_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	ctl("sql \"CREATE TRIGGER slow_change BEFORE INSERT ON "
	    "payment_event_changes FOR EACH ROW SET @slept = "
	    "IF(NEW.amount = 777, SLEEP(4), 0)\"");
	/* The kill, not the client, ends it. */
	pid = post_in_child(event_body("refund", a, tid, 777, "EUR",
				       "succeeded", 1),
			    false, OUTCOME_PROCESSED);
	/* Until the transaction waits in the trigger. */
	wait_sleepers("1");
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status));
	/* The server rolls the dead connection's transaction back once it
	 * notices (when the sleep ends); DROP TRIGGER waits for that. */
	ctl("sql \"DROP TRIGGER slow_change\"");
	ck_assert_int_eq(count_of("payment_events", a), 0);
	ck_assert_int_eq(count_of("payment_event_changes", a), 0);
	ck_assert_str_eq(totals(tid), "0 - 0");
	/* The killed worker's lock is still there: in progress until it
	 * expires (here removed by hand), then processed. */
	assert_outcome(refund(a, tid, 777, "succeeded", 1),
		       OUTCOME_IN_PROGRESS);
	ctl("redis DEL 'lock:webhook:tx:%s'", tid);
	assert_outcome(refund(a, tid, 777, "succeeded", 1), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "777 - 0");
}
END_TEST

/* Without the lock (Redis down under db_only; here lock_backend = none),
 * a payment recorded while the transaction of a refund that found no
 * payment is still open (held by a trigger before the refund's row is
 * written): the two transactions must not both commit blind to each other
 * (the payment's INSERT reading no refund, the refund's transaction no
 * payment). One waits for the other, or one is a deadlock (503, retried);
 * either way the payment's totals include the refund in the end. What
 * makes it so is REPEATABLE READ on both sides: the refund's FOR UPDATE
 * that finds no payment takes a gap lock, the payment's INSERT ... SELECT
 * reads payment_events with shared locks; either session in READ
 * COMMITTED ends with totals of 0. */
START_TEST(test_payment_during_event_without_lock)
{
	char tid[96], a[128], body[512];
	struct pipeline *p;
	struct error err;
	pid_t pid;
	int status;

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("race"));
	snprintf(a, sizeof(a), "re_%s", tid);
	snprintf(body, sizeof(body), "%s",
		 event_body("refund", a, tid, 778, "EUR", "succeeded", 1));
	ctl("sql \"CREATE TRIGGER slow_event BEFORE INSERT ON payment_events "
	    "FOR EACH ROW SET @slept = IF(NEW.amount = 778 AND @slept IS "
	    "NULL, SLEEP(2), 0)\"");
	/* Long enough statements that the payment waits for the refund
	 * rather than give up. */
	cfg.lock_backend = CONFIG_LOCK_NONE;
	cfg.mysql_read_timeout_s = 8;
	cfg.lock_ttl_ms = 60000;
	pid = post_in_child(body, true, OUTCOME_PROCESSED);
	wait_sleepers("1");
	p = pipeline_new(&cfg, &err);
	ck_assert_msg(p != NULL, "pipeline: %s", err.message);
	{
		char pay[256];
		enum outcome o;

		snprintf(pay, sizeof(pay), "{\"transaction_id\":\"%s\","
			 "\"amount\":1000,\"currency\":\"EUR\"}", tid);
		o = post_until_done(p, pay);
		ck_assert_msg(o == OUTCOME_PROCESSED || o == OUTCOME_DUPLICATE,
			      "payment: %s", response_outcome_name(o));
	}
	pipeline_free(p);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ctl("sql \"DROP TRIGGER slow_event\"");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the refund was not recorded");
	ck_assert_int_eq(count_of("payment_events", a), 1);
	ck_assert_str_eq(totals(tid), "778 - 0");
}
END_TEST

/* A lock wait on the payment's row (the merchant's own transaction holds
 * it) is 1205: 503, nothing written, the retry processed. */
START_TEST(test_lock_wait_is_unavailable)
{
	char tid[96], a[128], cmd[1024];
	struct result r;

	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("wait"));
	snprintf(a, sizeof(a), "re_%s", tid);
	assert_outcome(payment(tid, 1000, "EUR"), OUTCOME_PROCESSED);
	/* Another session holds the payment's row for 3 seconds. */
	snprintf(cmd, sizeof(cmd),
		 "bash '%s/tests/lib/harness-ctl.sh' sql \"START TRANSACTION; "
		 "SELECT id FROM payments WHERE transaction_id = '%s' FOR "
		 "UPDATE; DO SLEEP(3); COMMIT\" >/dev/null 2>&1 &",
		 getenv("top_srcdir"), tid);
	ck_assert_int_eq(system(cmd), 0);
	wait_sleepers("1");
	itest_post(pipeline, event_body("refund", a, tid, 100, "EUR",
					"succeeded", 1), &r);
	assert_outcome(r.outcome, OUTCOME_UNAVAILABLE);
	ck_assert_int_eq(response_outcome_status(r.outcome, &cfg), 503);
	ck_assert_int_eq(count_of("payment_events", a), 0);
	/* Once the other transaction ends. */
	wait_sleepers("0");
	itest_post(pipeline, event_body("refund", a, tid, 100, "EUR",
					"succeeded", 1), &r);
	assert_outcome(r.outcome, OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(tid), "100 - 0");
}
END_TEST

/* ---- the early marks (lock.h): which INSERT a payment gets ---- */

/* Sends payments on p until the marks are complete again (a key naming
 * the server's run_id): lock_ttl_ms (9.5 s here) and a second after they
 * were first seen incomplete; for 15 s at most. */
static void wait_rebuilt(struct pipeline *p)
{
	char key[256];

	snprintf(key, sizeof(key), "payhook:early-complete:%s",
		 cfg.lock_key_prefix);
	for (int i = 0; i < 150; i++) {
		enum outcome o = payment_on(p, "tick");

		ck_assert_msg(o == OUTCOME_PROCESSED || o == OUTCOME_DUPLICATE,
			      "tick: outcome %d", (int)o);
		if (ctl("redis GET %s", key)[0] != '\0')
			return;
		usleep(100000);
	}
	ck_abort_msg("the early marks were not rebuilt within 15 s");
}

/* An event before its payment sets the payment's mark; Redis then loses
 * everything (FLUSHALL: a restart without persistence, a failover). A
 * payment whose mark is gone still gets its totals (its INSERT probes
 * MySQL while the marks are incomplete), the rebuild marks every payment
 * whose events came first, and a payment found marked gets its totals
 * and its mark removed. */
START_TEST(test_early_marks_survive_redis_loss)
{
	struct pipeline *p = pipeline;
	char t3[96], t4[96], r3[128], r4[128];

	snprintf(t3, sizeof(t3), "%s", itest_fresh_id("mark3"));
	snprintf(t4, sizeof(t4), "%s", itest_fresh_id("mark4"));
	snprintf(r3, sizeof(r3), "re_%s", t3);
	snprintf(r4, sizeof(r4), "re_%s", t4);
	wait_rebuilt(p);
	assert_outcome(post_body(p, event_body("refund", r3, t3, 300, "EUR",
					       "succeeded", 1)),
		       OUTCOME_PROCESSED);
	assert_outcome(post_body(p, event_body("refund", r4, t4, 400, "EUR",
					       "succeeded", 1)),
		       OUTCOME_PROCESSED);
	ck_assert_str_eq(ctl("redis EXISTS %s", mark_of(t3)), "1");
	ck_assert_str_eq(ctl("redis EXISTS %s", mark_of(t4)), "1");

	ctl("redis FLUSHALL");
	assert_outcome(payment_on(p, itest_fresh_id("flushed")),
		       OUTCOME_PROCESSED);
	assert_outcome(payment_on(p, t3), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(t3), "300 - 0");

	wait_rebuilt(p);
	/* t4's event came before the loss: marked again by the rebuild. */
	ck_assert_str_eq(ctl("redis EXISTS %s", mark_of(t4)), "1");
	assert_outcome(payment_on(p, t4), OUTCOME_PROCESSED);
	ck_assert_str_eq(totals(t4), "400 - 0");
	ck_assert_str_eq(ctl("redis EXISTS %s", mark_of(t4)), "0");
}
END_TEST

/* A shared Redis that evicts any key (maxmemory-policy allkeys-lru, a
 * small maxmemory): a refund recorded before its payment sets the
 * payment's mark, the mark is evicted (really, by filling the server),
 * the run_id does not change and the completeness key may survive (it is
 * set again here, as when it does). The payment must still get the
 * refund in its totals: under such a policy the marks are never taken as
 * complete (its INSERT asks MySQL), and the completeness key is removed,
 * so that once the policy keeps keys again the marks are rebuilt. */
START_TEST(test_early_marks_under_eviction)
{
	struct pipeline *p;
	struct error err;
	char tid[96], a[128], complete[256], run_id[64];
	bool evicted = false, declared_complete;

	wait_rebuilt(pipeline);
	snprintf(complete, sizeof(complete), "payhook:early-complete:%s",
		 cfg.lock_key_prefix);
	snprintf(run_id, sizeof(run_id), "%s", ctl("redis GET %s", complete));
	ck_assert_str_ne(run_id, "");
	ctl("redis CONFIG SET maxmemory-policy allkeys-lru");
	/* A connection of its own: the policy is read when it connects. */
	p = pipeline_new(&cfg, &err);
	ck_assert_msg(p != NULL, "pipeline: %s", err.message);
	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("evicted"));
	snprintf(a, sizeof(a), "re_%s", tid);
	assert_outcome(post_body(p, event_body("refund", a, tid, 300, "EUR",
					       "succeeded", 1)),
		       OUTCOME_PROCESSED);
	ck_assert_str_eq(ctl("redis EXISTS %s", mark_of(tid)), "1");
	declared_complete = ctl("redis GET %s", complete)[0] != '\0';

	/* Fill the server past a small maxmemory until the mark is gone. */
	ctl("redis CONFIG SET maxmemory %ld",
	    strtol(strstr(ctl("redis INFO memory"), "used_memory:") + 12,
		   NULL, 10) + 2 * 1024 * 1024);
	for (int i = 0; i < 400 && !evicted; i++) {
		ctl("redis EVAL \"for i = 1, 50 do redis.call('SET', "
		    "KEYS[1] .. i, string.rep('x', 4096), 'PX', 120000) end\" "
		    "1 payhook-test-fill:%d:", i);
		evicted = strcmp(ctl("redis EXISTS %s", mark_of(tid)), "0") == 0;
	}
	ctl("redis CONFIG SET maxmemory 0");
	ck_assert_msg(evicted, "the mark was never evicted");
	/* The completeness key as it is when it survives the eviction. */
	ctl("redis SET %s %s", complete, run_id);

	assert_outcome(payment_on(p, tid), OUTCOME_PROCESSED);
	/* Back to the harness's server as it was: other marks were evicted
	 * too, so they are rebuilt. */
	ctl("redis CONFIG SET maxmemory-policy noeviction");
	ctl("redis DEL %s", complete);
	ck_assert_str_eq(totals(tid), "300 - 0");
	ck_assert_msg(!declared_complete, "the marks were still declared "
		      "complete under allkeys-lru");
	pipeline_free(p);
}
END_TEST

/* Redis restarted (its locks lost) while a payment, whose lock found no
 * mark, is inside its plain INSERT (held by a trigger): another worker
 * takes the lock on the new server and records a refund before the
 * payment, and the payment then commits without it. Neither saw the
 * other; the rebuild of the marks, once no lease of the old server can
 * still write, recomputes the payment's totals. */
START_TEST(test_totals_repaired_after_lock_loss)
{
	char tid[96], a[128], pay[256];
	pid_t pid;
	int status;

	wait_rebuilt(pipeline);
	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("lost"));
	snprintf(a, sizeof(a), "re_%s", tid);
	snprintf(pay, sizeof(pay), "{\"transaction_id\":\"%s\",\"amount\":"
		 "779,\"currency\":\"EUR\"}", tid);
	ctl("sql \"CREATE TRIGGER slow_payment BEFORE INSERT ON payments FOR "
	    "EACH ROW SET @slept = IF(NEW.amount = 779, SLEEP(2), 0)\"");
	pid = post_in_child(pay, false, OUTCOME_PROCESSED);
	wait_sleepers("1");
	ctl("stop-redis");
	ctl("start-redis");
	assert_outcome(refund(a, tid, 300, "succeeded", 1), OUTCOME_PROCESSED);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ctl("sql \"DROP TRIGGER slow_payment\"");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the payment was not processed");
	/* The refund's lease found the marks incomplete: the rebuild. */
	wait_rebuilt(pipeline);
	ck_assert_str_eq(totals(tid), "300 - 0");
}
END_TEST

/* With Redis down under redis_unavailable = db_only a payment is recorded
 * (the unique key alone), but an event before its payment cannot set its
 * mark: 503 and nothing written, recorded once Redis is back. */
START_TEST(test_early_event_waits_for_redis)
{
	struct config copy = cfg;
	struct pipeline *p;
	struct error err;
	struct result r;
	char tid[96], a[128], paid[96];

	copy.redis_unavailable = CONFIG_REDIS_UNAVAILABLE_DB_ONLY;
	p = pipeline_new(&copy, &err);
	ck_assert_msg(p != NULL, "pipeline: %s", err.message);
	snprintf(tid, sizeof(tid), "%s", itest_fresh_id("nored"));
	snprintf(paid, sizeof(paid), "%s", itest_fresh_id("noredpaid"));
	snprintf(a, sizeof(a), "re_%s", tid);
	assert_outcome(payment_on(p, paid), OUTCOME_PROCESSED);
	ctl("stop-redis");
	itest_post(p, event_body("refund", a, tid, 100, "EUR", "succeeded", 1),
		   &r);
	ctl("start-redis");
	assert_outcome(r.outcome, OUTCOME_UNAVAILABLE);
	ck_assert_int_eq(response_outcome_status(r.outcome, &copy), 503);
	ck_assert_str_eq(r.reason, "lock service unavailable: retry");
	ck_assert_int_eq(count_of("payment_events", a), 0);
	/* The event of a recorded payment needs no mark. */
	ctl("stop-redis");
	itest_post(p, event_body("refund", "re_paid", paid, 100, "EUR",
				 "succeeded", 1), &r);
	ctl("start-redis");
	assert_outcome(r.outcome, OUTCOME_PROCESSED);
	itest_post(p, event_body("refund", a, tid, 100, "EUR", "succeeded", 1),
		   &r);
	assert_outcome(r.outcome, OUTCOME_PROCESSED);
	ck_assert_str_eq(ctl("redis EXISTS %s", mark_of(tid)), "1");
	pipeline_free(p);
}
END_TEST

/* --check-config: payment_events' unique key exactly (provider, kind,
 * object_id), a missing table named by its migration file. */
START_TEST(test_check_schema)
{
	struct error err;

	ck_assert_msg(pipeline_check_mysql(pipeline, &err) == 0, "%s",
		      err.message);
	ctl("sql \"ALTER TABLE payment_events DROP INDEX "
	    "uq_payment_events_object, ADD UNIQUE KEY uq_payment_events_object "
	    "(provider, kind, object_id, state)\"");
	ck_assert_int_eq(pipeline_check_mysql(pipeline, &err), -1);
	ck_assert_msg(strstr(err.message, "must cover exactly (provider, kind, "
			     "object_id)") != NULL, "%s", err.message);
	ctl("sql \"ALTER TABLE payment_events DROP INDEX "
	    "uq_payment_events_object, ADD UNIQUE KEY uq_payment_events_object "
	    "(provider, kind, object_id)\"");
	ctl("sql \"ALTER TABLE payment_events MODIFY object_id VARCHAR(255) "
	    "CHARACTER SET ascii COLLATE ascii_bin NOT NULL\"");
	ck_assert_int_eq(pipeline_check_mysql(pipeline, &err), -1);
	ck_assert_msg(strstr(err.message, "VARBINARY") != NULL, "%s",
		      err.message);
	ctl("sql \"ALTER TABLE payment_events MODIFY object_id VARBINARY(255) "
	    "NOT NULL\"");
	ctl("sql \"RENAME TABLE payment_event_changes TO pec_aside\"");
	ck_assert_int_eq(pipeline_check_mysql(pipeline, &err), -1);
	ck_assert_msg(strstr(err.message, "db/migrate-6-lifecycle-changes.sql")
		      != NULL, "%s", err.message);
	ctl("sql \"RENAME TABLE pec_aside TO payment_event_changes\"");
	ctl("sql \"RENAME TABLE payment_event_items TO pei_aside\"");
	ck_assert_int_eq(pipeline_check_mysql(pipeline, &err), -1);
	ck_assert_msg(strstr(err.message, "db/migrate-8-lifecycle-items.sql")
		      != NULL, "%s", err.message);
	ctl("sql \"RENAME TABLE pei_aside TO payment_event_items\"");
	ctl("sql \"ALTER TABLE payments DROP COLUMN cancelled\"");
	ck_assert_int_eq(pipeline_check_mysql(pipeline, &err), -1);
	ck_assert_msg(strstr(err.message, "db/migrate-4-lifecycle.sql") != NULL,
		      "%s", err.message);
	ctl("sql \"ALTER TABLE payments ADD COLUMN cancelled TINYINT NOT NULL "
	    "DEFAULT 0\"");
	ck_assert_msg(pipeline_check_mysql(pipeline, &err) == 0, "%s",
		      err.message);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lifecycle");
	TCase *core = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(core, setup, teardown);
	tcase_set_timeout(core, 120);
	tcase_add_test(core, test_refunds_partial_and_full);
	tcase_add_test(core, test_refund_failed_after_succeeded);
	tcase_add_test(core, test_dispute_open_lost_won);
	tcase_add_test(core, test_restated_state_moves_time);
	tcase_add_test(core, test_adyen_replay_later_date);
	tcase_add_test(core, test_adyen_cancel_or_refund_one_object);
	tcase_add_test(core, test_refund_total_past_max);
	tcase_add_test(core, test_refunds_past_max_before_payment);
	tcase_add_test(core, test_refund_past_payment_suspicious);
	tcase_add_test(core, test_restated_state_under_held_lock);
	tcase_add_test(core, test_log_event_id_per_request);
	tcase_add_test(core, test_reverse_order_same_end);
	tcase_add_test(core, test_refund_before_payment);
	tcase_add_test(core, test_currency_conflict);
	tcase_add_test(core, test_storm_same_refund);
	tcase_add_test(core, test_storm_two_refunds);
	tcase_add_test(core, test_killed_mid_transaction);
	tcase_add_test(core, test_payment_during_event_without_lock);
	tcase_add_test(core, test_lock_wait_is_unavailable);
	tcase_add_test(core, test_check_schema);
	tcase_add_test(core, test_early_event_waits_for_redis);
	tcase_add_test(core, test_early_marks_survive_redis_loss);
	tcase_add_test(core, test_totals_repaired_after_lock_loss);
	tcase_add_test(core, test_early_marks_under_eviction);
	suite_add_tcase(s, core);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
