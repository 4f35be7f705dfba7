/* chaos_check.c - the checker of "make chaos": judges the history recorded by
 * chaos_client.c against the final table and prints the report. Each rule
 * below is a promise of payhook's README (what a 200, a 409/503 and a 422
 * mean); a broken one is printed with the seed, the history of the
 * transaction concerned and the faults around it, so that the schedule can be
 * replayed (CHAOS_SEED=N make chaos).
 *
 * Lifecycle events are held to the same answers, and then to the rows:
 * each object ends with one row holding the newest state sent (the rule of
 * lifecycle_supersedes), and each payment's totals equal both what its
 * event rows say (recomputed here in C, not by the SQL aggregate payhook
 * uses) and what the events sent imply.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chaos.h"

/* Transactions whose violations are printed in full; the rest are counted. */
#define SHOW_MAX 10
/* Violations of one transaction printed; the rest are counted. */
#define NOTES_MAX 6
/* Requests shown before and after each violating one. */
#define CONTEXT_BEFORE 8
#define CONTEXT_AFTER 3
/* Faults shown from this long before a violating request. */
#define FAULT_LOOKBACK_US 20000000

const char *const chaos_kind_names[KIND_COUNT] = {
	"first", "retry", "redelivery", "burst", "conflict", "bad_body",
	"bad_signature", "hangup", "final",
};

const char *const chaos_outcome_names[OUT_COUNT] = {
	"-", "processed", "duplicate", "ignored", "in_progress", "conflict",
	"invalid", "unauthorized", "unavailable", "error", "web_server",
};

static const char *const seen_names[] = {
	"", "row", "NO ROW", "OTHER ROW", "unreachable",
};

enum rule {
	R_ROWS,
	R_200_NO_ROW,
	R_200_EARLY,
	R_200_DIFFERS,
	R_TWICE,
	R_CONFLICT,
	R_NO_RETRY_AFTER,
	R_500,
	R_WEB_5XX,
	R_REFUSED,
	R_BAD_ACCEPTED,
	R_NOT_CONVERGED,
	R_EV_ANSWER,
	R_EV_CONFLICT,
	R_EV_200_STALE,
	R_EV_ROWS,
	R_EV_STATE,
	R_EV_STRAY,
	R_TOTALS_ROWS,
	R_TOTALS_SENT,
	R_COUNT
};

static const char *const rule_names[R_COUNT] = {
	"a transaction ends without exactly one row",
	"a 200 for a transaction with no row at the end",
	"a 200 answered before its row was committed",
	"a 200 for an amount or currency that differs from the row",
	"processed twice",
	"a conflict for a body equal to the row (or with no row)",
	"a 409/503 without Retry-After",
	"a 500 from payhook",
	"a 5xx from the web server with no worker killed then",
	"a valid delivery refused (4xx other than 409/422)",
	"a bad body or signature not refused",
	"no 2xx in the final round",
	"a lifecycle event answered 200 but neither processed nor duplicate",
	"a conflict for a lifecycle event in its payment's currency",
	"a 200 for a lifecycle event that the row read right after it does not hold",
	"a lifecycle object ends without exactly one row",
	"a lifecycle row does not hold the newest state sent",
	"a lifecycle row of an object never sent",
	"a payment's totals differ from its lifecycle rows",
	"a payment's totals differ from what the events sent imply",
};

/* The final table, per transaction. */
struct row {
	long count;
	int64_t amount;
	char currency[4];
	struct totals {
		int64_t refunded;
		char dispute[8]; /* "" for NULL */
		int cancelled;
	} totals;
};

/* The final payment_events row, per object. */
struct object_row {
	long count;
	bool tx_ok;         /* its transaction_id is the object's payment's */
	bool kind_ok;       /* its kind is the object's */
	uint8_t state;      /* enum lifecycle_state */
	bool state_ok;      /* state parsed */
	int64_t amount, occurred_us;
	char currency[4];   /* "" for NULL */
};

struct check {
	struct chaos_run *run;
	struct row *rows;
	size_t *order;  /* record indices by transaction, then time sent */
	bool *flagged;  /* per record: it broke a rule */
	/* Lifecycle: the final rows by object; the events by transaction
	 * (ev_order[ev_first[tx] .. ev_first[tx + 1])); per event, its
	 * processed answers and whether the final round answered it 2xx;
	 * per object, its transaction and kind. */
	struct object_row *objects;
	size_t *ev_order, *ev_first;
	long *ev_processed;
	bool *ev_final;
	uint32_t *object_tx;
	uint8_t *object_kind;
	long stray_unknown; /* rows of this run's transactions, no object */
	long per_rule[R_COUNT];
	long violations, shown_tx;
	bool whole;     /* a violation of the transaction as a whole */
	/* The current transaction's violations, NOTES_MAX of them in text. */
	char notes[NOTES_MAX][256];
	long nnotes;
};

static double rel_s(const struct chaos_run *run, int64_t us)
{
	return (double)(us - run->start_us) / 1e6;
}

static const char *const object_prefix[LIFECYCLE_KINDS] = { "re", "dp", "cn" };

void chaos_object_id(const struct chaos_run *run, const struct chaos_event *e,
		     char *out, size_t size)
{
	snprintf(out, size, "%s-%u-%s%u", run->tag, e->tx,
		 object_prefix[e->kind], e->object);
}

void chaos_event_model(const struct chaos_event *e, struct lifecycle_event *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = (enum lifecycle_kind)e->kind;
	out->state = (enum lifecycle_state)e->state;
	out->link.amount = e->amount;
	out->occurred_at.seconds = e->occurred_at;
}

int chaos_read_faults(struct chaos_run *run, const char *path)
{
	FILE *in = fopen(path, "r");
	char line[256];

	if (in == NULL) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof(line), in) != NULL) {
		long long ms;
		int id, used = 0;
		char what[8];
		struct chaos_fault *f;

		if (sscanf(line, "%lld %7s %d %n", &ms, what, &id, &used) < 3)
			continue;
		if (strcmp(what, "begin") == 0) {
			f = realloc(run->faults, (run->nfaults + 1) * sizeof(*f));
			if (f == NULL) {
				fclose(in);
				return -1;
			}
			run->faults = f;
			f = &run->faults[run->nfaults++];
			f->id = id;
			f->begin_us = ms * 1000;
			f->end_us = INT64_MAX;
			f->kind[0] = f->detail[0] = '\0';
			sscanf(line + used, "%23s %95[^\n]", f->kind, f->detail);
		} else {
			for (size_t i = 0; i < run->nfaults; i++)
				if (run->faults[i].id == id)
					run->faults[i].end_us = ms * 1000;
		}
	}
	fclose(in);
	return 0;
}

static int by_sent(const void *a, const void *b)
{
	const struct chaos_rec *x = a, *y = b;

	return (x->sent_us > y->sent_us) - (x->sent_us < y->sent_us);
}

static void body_text(const struct chaos_run *run, const struct chaos_rec *r,
		      char *out, size_t size)
{
	const struct chaos_tx *t = &run->txs[r->tx];
	const struct chaos_event *e = r->ev >= 0 ? &run->events[r->ev] : NULL;

	if (e != NULL)
		snprintf(out, size, "%s%u %s at %lld: %" PRId64 " %s",
			 object_prefix[e->kind], e->object,
			 lifecycle_state_name(e->state),
			 (long long)e->occurred_at, e->amount, t->currency[0]);
	else if (r->body == BODY_BAD)
		snprintf(out, size, "1.5 %s", t->currency[0]);
	else
		snprintf(out, size, "%" PRId64 " %s", t->amount[r->body],
			 t->currency[r->body]);
}

static void print_rec(FILE *to, const struct chaos_run *run,
		      const struct chaos_rec *r, const char *sep)
{
	char id[96], body[96];

	chaos_tx_id(run, r->tx, id, sizeof(id));
	body_text(run, r, body, sizeof(body));
	fprintf(to, "%.3f%s%.3f%s%u@%u%s%s%s%s%s%s%s%d%s%s%s%d%s%d%s%s%s%.1f\n",
		rel_s(run, r->sent_us), sep, rel_s(run, r->answered_us), sep,
		r->client, r->host, sep, id, sep, chaos_kind_names[r->kind], sep, body,
		sep, r->status, sep, chaos_outcome_names[r->outcome], sep,
		r->retry_after, sep, r->curl_code, sep,
		r->seen ? seen_names[r->seen] : "-", sep, r->check_us / 1000.0);
}

/* Sorts the records by the time they were sent, as written. */
int chaos_write_history(const struct chaos_run *run, const char *path)
{
	FILE *out = fopen(path, "w");

	if (out == NULL) {
		perror(path);
		return -1;
	}
	qsort(run->recs, run->nrecs, sizeof(*run->recs), by_sent);
	fprintf(out, "sent_s\tanswered_s\tclient@host\ttransaction\tkind\tbody\tstatus"
		     "\tresult\tretry_after\tcurl\tcheck\tcheck_ms\n");
	for (size_t i = 0; i < run->nrecs; i++)
		print_rec(out, run, &run->recs[i], "\t");
	return fclose(out) == 0 ? 0 : -1;
}

/* Reads the final table: rows[i] for transaction i. */
static int read_rows(struct check *ck, MYSQL *db)
{
	const struct chaos_run *run = ck->run;
	size_t prefix = strlen(run->tag) + 1;
	char q[256];
	MYSQL_RES *res;
	MYSQL_ROW row;

	snprintf(q, sizeof(q),
		 "SELECT transaction_id, COUNT(*), MIN(amount), MIN(currency), "
		 "MIN(refunded_amount), MIN(dispute_state), MIN(cancelled) "
		 "FROM payments WHERE provider = 'standard' AND transaction_id "
		 "LIKE '%s-%%' GROUP BY transaction_id", run->tag);
	if (mysql_query(db, q) != 0 || (res = mysql_store_result(db)) == NULL) {
		fprintf(stderr, "chaos: reading payments: %s\n", mysql_error(db));
		return -1;
	}
	while ((row = mysql_fetch_row(res)) != NULL) {
		char *end;
		unsigned long i = strtoul(row[0] + prefix, &end, 10);

		if (*end != '\0' || i >= run->ntx)
			continue;
		ck->rows[i].count = strtol(row[1], NULL, 10);
		ck->rows[i].amount = strtoll(row[2], NULL, 10);
		snprintf(ck->rows[i].currency, 4, "%s", row[3]);
		ck->rows[i].totals.refunded = strtoll(row[4], NULL, 10);
		snprintf(ck->rows[i].totals.dispute,
			 sizeof(ck->rows[i].totals.dispute), "%s",
			 row[5] != NULL ? row[5] : "");
		ck->rows[i].totals.cancelled = atoi(row[6]);
	}
	mysql_free_result(res);
	return 0;
}

/* The object number of object id text ("TAG-i-reN" of transaction tx and
 * kind), or -1 when it is no object of this run. */
static long parse_object_id(const struct check *ck, const char *text)
{
	const struct chaos_run *run = ck->run;
	size_t prefix = strlen(run->tag) + 1;
	unsigned long tx, object;
	char *end;
	int kind;

	tx = strtoul(text + prefix, &end, 10);
	if (*end != '-')
		return -1;
	for (kind = 0; kind < LIFECYCLE_KINDS; kind++)
		if (strncmp(end + 1, object_prefix[kind], 2) == 0)
			break;
	if (kind == LIFECYCLE_KINDS)
		return -1;
	object = strtoul(end + 3, &end, 10);
	if (*end != '\0' || object >= run->nobjects ||
	    ck->object_tx[object] != tx || ck->object_kind[object] != kind)
		return -1;
	return (long)object;
}

/* Reads the final payment_events rows of the run's transactions:
 * objects[n] for object n. */
static int read_objects(struct check *ck, MYSQL *db)
{
	const struct chaos_run *run = ck->run;
	char q[512];
	MYSQL_RES *res;
	MYSQL_ROW row;

	snprintf(q, sizeof(q),
		 "SELECT object_id, kind, transaction_id, state, amount, "
		 "currency, TIMESTAMPDIFF(MICROSECOND, '1970-01-01', "
		 "occurred_at) FROM payment_events WHERE provider = 'standard' "
		 "AND transaction_id LIKE '%s-%%'", run->tag);
	if (mysql_query(db, q) != 0 || (res = mysql_store_result(db)) == NULL) {
		fprintf(stderr, "chaos: reading payment_events: %s\n",
			mysql_error(db));
		return -1;
	}
	while ((row = mysql_fetch_row(res)) != NULL) {
		long n = parse_object_id(ck, row[0]);
		struct object_row *o;
		enum lifecycle_state state = LIFECYCLE_PENDING;
		char tx[96];

		if (n < 0) {
			ck->stray_unknown++;
			continue;
		}
		o = &ck->objects[n];
		o->count++;
		chaos_tx_id(run, ck->object_tx[n], tx, sizeof(tx));
		o->tx_ok = strcmp(row[2], tx) == 0;
		o->kind_ok = strcmp(row[1], lifecycle_kind_name(
					(enum lifecycle_kind)ck->object_kind[n])) == 0;
		o->state_ok = lifecycle_state_parse(
			(enum lifecycle_kind)ck->object_kind[n], row[3],
			strlen(row[3]), &state) == 0;
		o->state = (uint8_t)state;
		o->amount = strtoll(row[4], NULL, 10);
		snprintf(o->currency, sizeof(o->currency), "%s",
			 row[5] != NULL ? row[5] : "");
		o->occurred_us = strtoll(row[6], NULL, 10);
	}
	mysql_free_result(res);
	return 0;
}

static void note(struct check *ck, enum rule rule, const struct chaos_rec *r,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Counts a violation of rule by request r (NULL: by the transaction as a
 * whole, shown with its last requests) and notes it for the report. */
static void note(struct check *ck, enum rule rule, const struct chaos_rec *r,
		 const char *fmt, ...)
{
	char *text;
	size_t size = sizeof(ck->notes[0]);
	int n;
	va_list ap;

	ck->per_rule[rule]++;
	ck->violations++;
	if (r != NULL)
		ck->flagged[r - ck->run->recs] = true;
	else
		ck->whole = true;
	if (ck->nnotes++ >= NOTES_MAX)
		return;
	text = ck->notes[ck->nnotes - 1];
	n = snprintf(text, size, "  VIOLATION: %s", rule_names[rule]);
	if (r != NULL && n > 0 && (size_t)n < size)
		n += snprintf(text + n, size - (size_t)n, " (request sent at %.3f s)",
			      rel_s(ck->run, r->sent_us));
	if (fmt != NULL && n > 0 && (size_t)n < size) {
		va_start(ap, fmt);
		vsnprintf(text + n, size - (size_t)n, fmt, ap);
		va_end(ap);
	}
}

/* The web server's own 5xx is expected when a worker died in the request
 * (or the web server itself was restarted, or make chaos-ha killed an app
 * host's pool). */
static bool worker_killed_during(const struct chaos_run *run,
				 const struct chaos_rec *r)
{
	for (size_t i = 0; i < run->nfaults; i++) {
		const struct chaos_fault *f = &run->faults[i];

		if ((strcmp(f->kind, "worker_kill") == 0 ||
		     strcmp(f->kind, "web_restart") == 0 ||
		     strcmp(f->kind, "app_kill") == 0) &&
		    f->begin_us <= r->answered_us + 1000000 &&
		    f->end_us >= r->sent_us - 1000000)
			return true;
	}
	return false;
}

static bool same_as_row(const struct chaos_run *run, const struct chaos_rec *r,
			const struct row *row)
{
	const struct chaos_tx *t = &run->txs[r->tx];

	return row->count > 0 && r->body != BODY_BAD &&
	       t->amount[r->body] == row->amount &&
	       strcmp(t->currency[r->body], row->currency) == 0;
}

/* The answers that are not 2xx: the rules a payment and a lifecycle event
 * share (a conflict is judged by the caller). */
static void check_failure(struct check *ck, const struct chaos_rec *r)
{
	bool web = r->outcome == OUT_OTHER || r->outcome == OUT_NONE;

	if (r->status == 409 || r->status == 503) {
		if (!web && r->retry_after < 0)
			note(ck, R_NO_RETRY_AFTER, r, NULL);
		if (web && r->status == 503 && !worker_killed_during(ck->run, r))
			note(ck, R_WEB_5XX, r, ": %d", r->status);
	} else if (r->status >= 500) {
		if (!web)
			note(ck, R_500, r, ": %d %s", r->status,
			     chaos_outcome_names[r->outcome]);
		else if (!worker_killed_during(ck->run, r))
			note(ck, R_WEB_5XX, r, ": %d", r->status);
	} else if (r->status >= 400) {
		note(ck, R_REFUSED, r, ": %d %s", r->status,
		     chaos_outcome_names[r->outcome]);
	}
}

/* Whether a bad body or signature was refused as it must be (or not
 * answered, or answered by the web server with a 5xx); notes it if not. */
static void check_bad(struct check *ck, const struct chaos_rec *r)
{
	bool web = r->outcome == OUT_OTHER || r->outcome == OUT_NONE;
	int want = r->kind == KIND_BAD ? 400 : 401;

	if (r->status != 0 && r->status != want && !(web && r->status >= 500))
		note(ck, R_BAD_ACCEPTED, r, ": answered %d", r->status);
}

/* A lifecycle event's request r: the answers' rules. */
static void check_event_rec(struct check *ck, const struct chaos_rec *r)
{
	const struct chaos_event *e = &ck->run->events[r->ev];

	if (r->kind == KIND_BADSIG) {
		check_bad(ck, r);
		return;
	}
	if (r->status / 100 == 2) {
		if (r->outcome != OUT_PROCESSED && r->outcome != OUT_DUPLICATE)
			note(ck, R_EV_ANSWER, r, ": %d %s", r->status,
			     chaos_outcome_names[r->outcome]);
		if (r->outcome == OUT_PROCESSED && ++ck->ev_processed[r->ev] == 2)
			note(ck, R_TWICE, r, NULL);
		if (ck->objects[e->object].count == 0)
			note(ck, R_200_NO_ROW, r, NULL);
		if (r->seen == SEEN_NO_ROW)
			note(ck, R_200_EARLY, r, ": the checker's read right "
			     "after it (%.1f ms) found no row",
			     r->check_us / 1000.0);
		else if (r->seen == SEEN_OTHER_ROW)
			note(ck, R_EV_200_STALE, r, ": the read right after it "
			     "(%.1f ms) found an older state",
			     r->check_us / 1000.0);
		if (r->kind == KIND_FINAL)
			ck->ev_final[r->ev] = true;
	} else if (r->status == 422) {
		note(ck, R_EV_CONFLICT, r, NULL);
	} else {
		check_failure(ck, r);
	}
}

/* The newest of events[a] and events[b] by lifecycle_supersedes (b when it
 * supersedes a). */
static size_t newer_event(const struct chaos_run *run, size_t a, size_t b)
{
	struct lifecycle_event x, y;

	chaos_event_model(&run->events[a], &x);
	chaos_event_model(&run->events[b], &y);
	return lifecycle_supersedes(&x, &y) ? b : a;
}

/* Whether (state a at time ta) comes after (state b at tb) as payhook
 * orders disputes of one payment: by time, then by the order of states. */
static bool dispute_after(int64_t ta, int a, int64_t tb, int b)
{
	return ta != tb ? ta > tb : a > b;
}

static void totals_text(const struct totals *t, char *out, size_t size)
{
	snprintf(out, size, "refunded_amount %" PRId64 ", dispute_state %s, "
		 "cancelled %d", t->refunded, t->dispute[0] ? t->dispute : "NULL",
		 t->cancelled);
}

static bool totals_equal(const struct totals *a, const struct totals *b)
{
	return a->refunded == b->refunded && a->cancelled == b->cancelled &&
	       strcmp(a->dispute, b->dispute) == 0;
}

/* Transaction tx's lifecycle objects: one row each, holding the newest
 * state sent; the payment's totals against its rows and against what was
 * sent. */
static void check_objects(struct check *ck, size_t tx)
{
	const struct chaos_run *run = ck->run;
	const struct row *row = &ck->rows[tx];
	const size_t *ev = ck->ev_order + ck->ev_first[tx];
	size_t n = ck->ev_first[tx + 1] - ck->ev_first[tx];
	struct totals from_rows = { 0, "", 0 }, from_sent = { 0, "", 0 };
	int64_t rows_dispute_us = -1, sent_dispute_s = -1;
	int rows_dispute = -1, sent_dispute = -1;
	bool converged = true;
	char want[128], got[128];

	for (size_t k = 0; k < n; k++) {
		if (!ck->ev_final[ev[k]]) {
			char id[128];

			converged = false;
			chaos_object_id(run, &run->events[ev[k]], id, sizeof(id));
			note(ck, R_NOT_CONVERGED, NULL, ": event %s %s", id,
			     lifecycle_state_name(run->events[ev[k]].state));
		}
	}
	/* ev is by object, then time: each object's events in a run. */
	for (size_t k = 0; k < n;) {
		const struct chaos_event *e = &run->events[ev[k]];
		const struct object_row *o = &ck->objects[e->object];
		size_t newest = ev[k], end = k;
		char id[128];

		while (end < n && run->events[ev[end]].object == e->object) {
			newest = newer_event(run, newest, ev[end]);
			end++;
		}
		k = end;
		chaos_object_id(run, e, id, sizeof(id));
		if (o->count != 1) {
			note(ck, R_EV_ROWS, NULL, ": %s: %ld rows", id, o->count);
			continue;
		}
		if (!o->tx_ok || !o->kind_ok || !o->state_ok)
			note(ck, R_EV_STATE, NULL, ": %s: the row names another "
			     "payment or kind, or an unknown state", id);
		else if (converged &&
			 (o->state != run->events[newest].state ||
			  o->occurred_us != run->events[newest].occurred_at * 1000000 ||
			  o->amount != run->events[newest].amount ||
			  strcmp(o->currency, run->txs[tx].currency[0]) != 0))
			note(ck, R_EV_STATE, NULL, ": %s: expected %s at %lld "
			     "(%" PRId64 " %s), the row holds %s at %.6f (%"
			     PRId64 " %s)", id,
			     lifecycle_state_name(run->events[newest].state),
			     (long long)run->events[newest].occurred_at,
			     run->events[newest].amount, run->txs[tx].currency[0],
			     lifecycle_state_name(o->state), o->occurred_us / 1e6,
			     o->amount, o->currency);
		/* What the rows say, as payhook's totals must (an event in
		 * another currency than the payment's counts for nothing). */
		if (o->state_ok && (o->currency[0] == '\0' ||
				    strcmp(o->currency, row->currency) == 0)) {
			if (e->kind == LIFECYCLE_REFUND &&
			    o->state == LIFECYCLE_SUCCEEDED)
				from_rows.refunded += o->amount;
			else if (e->kind == LIFECYCLE_CANCELLATION &&
				 o->state == LIFECYCLE_SUCCEEDED)
				from_rows.cancelled = 1;
			else if (e->kind == LIFECYCLE_DISPUTE &&
				 (rows_dispute < 0 ||
				  dispute_after(o->occurred_us, o->state,
						rows_dispute_us, rows_dispute))) {
				rows_dispute = o->state;
				rows_dispute_us = o->occurred_us;
			}
		}
		/* What the events sent say. */
		e = &run->events[newest];
		if (e->kind == LIFECYCLE_REFUND && e->state == LIFECYCLE_SUCCEEDED)
			from_sent.refunded += e->amount;
		else if (e->kind == LIFECYCLE_CANCELLATION)
			from_sent.cancelled = 1;
		else if (e->kind == LIFECYCLE_DISPUTE &&
			 (sent_dispute < 0 ||
			  dispute_after(e->occurred_at, e->state, sent_dispute_s,
					sent_dispute))) {
			sent_dispute = e->state;
			sent_dispute_s = e->occurred_at;
		}
	}
	if (row->count != 1)
		return;
	if (rows_dispute >= 0)
		snprintf(from_rows.dispute, sizeof(from_rows.dispute), "%s",
			 lifecycle_state_name((enum lifecycle_state)rows_dispute));
	if (sent_dispute >= 0)
		snprintf(from_sent.dispute, sizeof(from_sent.dispute), "%s",
			 lifecycle_state_name((enum lifecycle_state)sent_dispute));
	totals_text(&row->totals, got, sizeof(got));
	if (!totals_equal(&row->totals, &from_rows)) {
		totals_text(&from_rows, want, sizeof(want));
		note(ck, R_TOTALS_ROWS, NULL, ": expected %s, the payment has %s",
		     want, got);
	}
	if (converged && !totals_equal(&row->totals, &from_sent)) {
		totals_text(&from_sent, want, sizeof(want));
		note(ck, R_TOTALS_SENT, NULL, ": expected %s, the payment has %s",
		     want, got);
	}
}

/* Applies every rule to transaction tx's records, run->recs[idx[0..n)]. */
static void check_tx(struct check *ck, size_t tx, size_t *idx, size_t n)
{
	const struct chaos_run *run = ck->run;
	const struct row *row = &ck->rows[tx];
	long processed = 0;
	bool final_ok = false;

	if (row->count != 1)
		note(ck, R_ROWS, NULL, ": %ld rows", row->count);
	for (size_t k = 0; k < n; k++) {
		const struct chaos_rec *r = &run->recs[idx[k]];

		if (r->ev >= 0) {
			check_event_rec(ck, r);
			continue;
		}
		if (r->kind == KIND_BAD || r->kind == KIND_BADSIG) {
			check_bad(ck, r);
			continue;
		}
		if (r->status / 100 == 2) {
			if (r->outcome == OUT_PROCESSED && ++processed == 2)
				note(ck, R_TWICE, r, NULL);
			if (row->count == 0)
				note(ck, R_200_NO_ROW, r, NULL);
			else if (!same_as_row(run, r, row))
				note(ck, R_200_DIFFERS, r, NULL);
			/* (A read that found another row is a 200 that
			 * differs from the row, noted above.) */
			if (r->seen == SEEN_NO_ROW)
				note(ck, R_200_EARLY, r, ": the checker's read "
				     "right after it (%.1f ms) found no row",
				     r->check_us / 1000.0);
			if (r->kind == KIND_FINAL)
				final_ok = true;
		} else if (r->status == 422) {
			if (same_as_row(run, r, row) || row->count == 0)
				note(ck, R_CONFLICT, r, NULL);
		} else {
			check_failure(ck, r);
		}
	}
	if (!final_ok)
		note(ck, R_NOT_CONVERGED, NULL, NULL);
	check_objects(ck, tx);
	/* A violation of the transaction as a whole shows its last requests. */
	if (ck->whole && n > 0)
		ck->flagged[idx[n - 1]] = true;
}

/* Prints the violations noted for tx, the requests around each violating
 * one, and the faults from a while before the first of them to the last. */
static void show_tx(struct check *ck, size_t tx, size_t *idx, size_t n)
{
	const struct chaos_run *run = ck->run;
	const struct row *row = &ck->rows[tx];
	int64_t from = INT64_MAX, to = 0;
	long last_shown = -1;
	char id[96];

	chaos_tx_id(run, tx, id, sizeof(id));
	printf("\n### %s (seed %lu): ", id, run->seed);
	if (row->count > 0) {
		char totals[128];

		totals_text(&row->totals, totals, sizeof(totals));
		printf("row %" PRId64 " %s, %s\n", row->amount, row->currency,
		       totals);
	} else {
		printf("no row\n");
	}
	for (size_t k = ck->ev_first[tx]; k < ck->ev_first[tx + 1]; k++) {
		const struct chaos_event *e = &run->events[ck->ev_order[k]];
		const struct object_row *o = &ck->objects[e->object];

		if (k > ck->ev_first[tx] &&
		    run->events[ck->ev_order[k - 1]].object == e->object)
			continue;
		chaos_object_id(run, e, id, sizeof(id));
		if (o->count == 0)
			printf("  object %s: no row\n", id);
		else
			printf("  object %s: %ld row(s), %s at %.6f, %" PRId64
			       " %s\n", id, o->count,
			       o->state_ok ? lifecycle_state_name(o->state) : "?",
			       o->occurred_us / 1e6, o->amount,
			       o->currency[0] ? o->currency : "NULL");
	}
	chaos_tx_id(run, tx, id, sizeof(id));
	for (long i = 0; i < ck->nnotes && i < NOTES_MAX; i++)
		printf("%s\n", ck->notes[i]);
	if (ck->nnotes > NOTES_MAX)
		printf("  (and %ld more)\n", ck->nnotes - NOTES_MAX);
	printf("  requests around them (seconds from the start: sent, answered; "
	       "client@host, id, kind, amount currency, status, result, Retry-After, "
	       "curl code, read after a 200, its delay in ms):\n");
	for (size_t k = 0; k < n; k++) {
		const struct chaos_rec *r = &run->recs[idx[k]];
		bool near = false;

		for (size_t j = k >= CONTEXT_AFTER ? k - CONTEXT_AFTER : 0;
		     j < n && j <= k + CONTEXT_BEFORE && !near; j++)
			near = ck->flagged[idx[j]];
		if (!near)
			continue;
		if ((long)k > last_shown + 1)
			printf("    ...\n");
		last_shown = (long)k;
		printf("  %s ", ck->flagged[idx[k]] ? "=>" : "  ");
		print_rec(stdout, run, r, "  ");
		if (ck->flagged[idx[k]]) {
			if (r->sent_us < from)
				from = r->sent_us;
			if (r->answered_us > to)
				to = r->answered_us;
		}
	}
	if (last_shown + 1 < (long)n)
		printf("    ...\n");
	printf("  faults from %d s before the first of them to the last:\n",
	       FAULT_LOOKBACK_US / 1000000);
	for (size_t i = 0; i < run->nfaults; i++) {
		const struct chaos_fault *f = &run->faults[i];

		if (f->begin_us > to || f->end_us < from - FAULT_LOOKBACK_US)
			continue;
		printf("    #%d %s %.3f .. ", f->id, f->kind, rel_s(run, f->begin_us));
		if (f->end_us == INT64_MAX)
			printf("(never ended)");
		else
			printf("%.3f", rel_s(run, f->end_us));
		printf(" %s\n", f->detail);
	}
}

static int by_tx_then_sent(const void *a, const void *b, void *arg)
{
	const struct chaos_rec *recs = arg;
	const struct chaos_rec *x = &recs[*(const size_t *)a];
	const struct chaos_rec *y = &recs[*(const size_t *)b];

	if (x->tx != y->tx)
		return x->tx < y->tx ? -1 : 1;
	return (x->sent_us > y->sent_us) - (x->sent_us < y->sent_us);
}

static bool answered_2xx(const struct chaos_rec *r)
{
	/* A conflict is the other answer that ends deliveries: the row holds
	 * the other body. */
	return r->status / 100 == 2 || r->status == 422;
}

/* By time sent; of copies sent at once, those answered 2xx first. */
static int by_sent_2xx_first(const void *a, const void *b, void *arg)
{
	const struct chaos_rec *recs = arg;
	const struct chaos_rec *x = &recs[*(const size_t *)a];
	const struct chaos_rec *y = &recs[*(const size_t *)b];

	if (x->sent_us != y->sent_us)
		return x->sent_us < y->sent_us ? -1 : 1;
	return (int)answered_2xx(y) - (int)answered_2xx(x);
}

/* The longest a payment stayed unanswerable: from the sending of a
 * delivery that failed to the answer of the next one sent that got a 2xx,
 * not counting the pause between the workload and the final round. Sets
 * *from and *failed (the deliveries that failed meanwhile); idx is
 * reordered. */
static int64_t longest_unanswered(const struct chaos_run *run, size_t *idx,
				  size_t n, int64_t *from, long *failed)
{
	int64_t start = 0, longest = 0, last_ok = -1,
		pause = run->final_start_us - run->workload_end_us;
	long attempts = 0;
	bool open = false;

	qsort_r(idx, n, sizeof(*idx), by_sent_2xx_first, run->recs);
	for (size_t k = 0; k <= n; k++) {
		const struct chaos_rec *r = k < n ? &run->recs[idx[k]] : NULL;
		bool done = r == NULL || answered_2xx(r);
		int64_t end = r != NULL ? r->answered_us : run->final_end_us, len;

		if (r != NULL && (r->ev >= 0 || r->kind == KIND_BAD ||
				  r->kind == KIND_BADSIG || r->kind == KIND_CONFLICT))
			continue;
		if (done && open) {
			len = end - start;
			if (start < run->workload_end_us && end > run->final_start_us)
				len -= pause;
			if (len > longest) {
				longest = len;
				*from = start;
				*failed = attempts;
			}
			open = false;
		} else if (!done && !open && r->kind != KIND_HANGUP &&
			   r->sent_us != last_ok) {
			/* (A copy sent with one that got a 2xx does not
			 * count: the transaction was answerable then.) */
			open = true;
			start = r->sent_us;
			attempts = 0;
		}
		if (open)
			attempts++;
		if (r != NULL && done)
			last_ok = r->sent_us;
	}
	return longest;
}

int chaos_event_order(const struct chaos_event *x, const struct chaos_event *y)
{
	if (x->tx != y->tx)
		return x->tx < y->tx ? -1 : 1;
	if (x->object != y->object)
		return x->object < y->object ? -1 : 1;
	if (x->occurred_at != y->occurred_at)
		return x->occurred_at < y->occurred_at ? -1 : 1;
	return (x->state > y->state) - (x->state < y->state);
}

/* Event indices by chaos_event_order: each transaction's events together,
 * each object's in a run. */
static int by_event_order(const void *a, const void *b, void *arg)
{
	const struct chaos_event *events = arg;

	return chaos_event_order(&events[*(const size_t *)a],
				 &events[*(const size_t *)b]);
}

static void check_cleanup(struct check *ck)
{
	free(ck->rows);
	free(ck->order);
	free(ck->flagged);
	free(ck->objects);
	free(ck->ev_order);
	free(ck->ev_first);
	free(ck->ev_processed);
	free(ck->ev_final);
	free(ck->object_tx);
	free(ck->object_kind);
}

/* Allocates ck's tables, orders the records and events, and reads the
 * final tables. Returns 0, or -1 (message on stderr; ck_cleanup frees what
 * was allocated). */
static int check_init(struct check *ck, MYSQL *db)
{
	const struct chaos_run *run = ck->run;
	size_t objects = run->nobjects + 1, events = run->nevents + 1;

	ck->rows = calloc(run->ntx, sizeof(*ck->rows));
	ck->order = malloc((run->nrecs + 1) * sizeof(*ck->order));
	ck->flagged = calloc(run->nrecs + 1, sizeof(*ck->flagged));
	ck->objects = calloc(objects, sizeof(*ck->objects));
	ck->ev_order = malloc(events * sizeof(*ck->ev_order));
	ck->ev_first = calloc(run->ntx + 1, sizeof(*ck->ev_first));
	ck->ev_processed = calloc(events, sizeof(*ck->ev_processed));
	ck->ev_final = calloc(events, sizeof(*ck->ev_final));
	ck->object_tx = calloc(objects, sizeof(*ck->object_tx));
	ck->object_kind = calloc(objects, sizeof(*ck->object_kind));
	if (ck->rows == NULL || ck->order == NULL || ck->flagged == NULL ||
	    ck->objects == NULL || ck->ev_order == NULL || ck->ev_first == NULL ||
	    ck->ev_processed == NULL || ck->ev_final == NULL ||
	    ck->object_tx == NULL || ck->object_kind == NULL) {
		fprintf(stderr, "chaos: checker: out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < run->nrecs; i++)
		ck->order[i] = i;
	qsort_r(ck->order, run->nrecs, sizeof(*ck->order), by_tx_then_sent,
		run->recs);
	for (size_t i = 0; i < run->nevents; i++) {
		const struct chaos_event *e = &run->events[i];

		ck->ev_order[i] = i;
		ck->object_tx[e->object] = e->tx;
		ck->object_kind[e->object] = e->kind;
		ck->ev_first[e->tx + 1]++;
	}
	for (size_t tx = 0; tx < run->ntx; tx++)
		ck->ev_first[tx + 1] += ck->ev_first[tx];
	qsort_r(ck->ev_order, run->nevents, sizeof(*ck->ev_order),
		by_event_order, run->events);
	return read_rows(ck, db) == 0 && read_objects(ck, db) == 0 ? 0 : -1;
}

long chaos_check(struct chaos_run *run, MYSQL *db)
{
	struct check ck = { .run = run };
	long by_kind[KIND_COUNT] = { 0 }, seen[5] = { 0 };
	long status_count[600][OUT_COUNT];
	int64_t longest = 0, longest_from = 0, final_last = 0, check_max = 0;
	size_t longest_tx = 0, first = 0;
	long longest_failed = 0, ev_recs = 0, ev_answers[OUT_COUNT] = { 0 };
	long ev_txs = 0, ev_objects = 0, with_totals = 0;
	char id[96];

	memset(status_count, 0, sizeof(status_count));
	if (check_init(&ck, db) != 0) {
		check_cleanup(&ck);
		return -1;
	}

	printf("\n## Chaos run: seed %lu, %d s of faults, %zu transactions\n\n",
	       run->seed, run->seconds, run->ntx);
	for (size_t tx = 0; tx < run->ntx; tx++) {
		size_t n = 0;
		int64_t from = 0, len;
		long failed = 0;

		while (first + n < run->nrecs && run->recs[ck.order[first + n]].tx == tx)
			n++;
		ck.nnotes = 0;
		ck.whole = false;
		check_tx(&ck, tx, ck.order + first, n);
		if (ck.nnotes > 0 && ck.shown_tx++ < SHOW_MAX)
			show_tx(&ck, tx, ck.order + first, n);
		len = longest_unanswered(run, ck.order + first, n, &from, &failed);
		if (len > longest) {
			longest = len;
			longest_from = from;
			longest_tx = tx;
			longest_failed = failed;
		}
		for (size_t k = 0; k < n; k++) {
			const struct chaos_rec *r = &run->recs[ck.order[first + k]];

			if (r->kind == KIND_FINAL && r->status / 100 == 2 &&
			    r->answered_us - run->final_start_us > final_last)
				final_last = r->answered_us - run->final_start_us;
		}
		first += n;
	}
	for (size_t i = 0; i < run->nrecs; i++) {
		const struct chaos_rec *r = &run->recs[i];

		by_kind[r->kind]++;
		if (r->ev >= 0) {
			ev_recs++;
			if (r->status / 100 == 2)
				ev_answers[r->outcome]++;
		}
		if (r->status >= 0 && r->status < 600)
			status_count[r->status][r->outcome]++;
		seen[r->seen]++;
		if (r->seen != SEEN_NOT_CHECKED && r->seen != SEEN_UNREACHABLE &&
		    r->check_us > check_max)
			check_max = r->check_us;
	}

	if (ck.stray_unknown > 0) {
		ck.per_rule[R_EV_STRAY] += ck.stray_unknown;
		ck.violations += ck.stray_unknown;
		printf("\nchaos: VIOLATION: %s: %ld row(s) of this run's "
		       "transactions in payment_events name no object the "
		       "client sent (seed %lu)\n", rule_names[R_EV_STRAY],
		       ck.stray_unknown, run->seed);
	}
	for (size_t tx = 0; tx < run->ntx; tx++) {
		if (ck.ev_first[tx + 1] == ck.ev_first[tx])
			continue;
		ev_txs++;
		if (ck.rows[tx].totals.refunded != 0 ||
		    ck.rows[tx].totals.dispute[0] != '\0' ||
		    ck.rows[tx].totals.cancelled != 0)
			with_totals++;
	}
	for (size_t o = 0; o < run->nobjects; o++)
		ev_objects += ck.objects[o].count;

	printf("\n| figure | value |\n| --- | --- |\n");
	printf("| requests | %zu in %d s of workload and %.1f s of final round |\n",
	       run->nrecs, run->seconds,
	       (run->final_end_us - run->final_start_us) / 1e6);
	printf("| requests by kind |");
	for (int k = 0; k < KIND_COUNT; k++)
		printf(" %s %ld%s", chaos_kind_names[k], by_kind[k],
		       k + 1 < KIND_COUNT ? "," : " |\n");
	printf("| answers by status |");
	for (int s = 0; s < 600; s++) {
		for (int o = 0; o < OUT_COUNT; o++)
			if (status_count[s][o] > 0)
				printf(" %d %s: %ld;", s, chaos_outcome_names[o],
				       status_count[s][o]);
	}
	printf(" |\n");
	printf("| reads right after a 200 | %ld found the row, %ld found none, "
	       "%ld another row, %ld could not reach MariaDB; slowest %.1f ms |\n",
	       seen[SEEN_ROW], seen[SEEN_NO_ROW], seen[SEEN_OTHER_ROW],
	       seen[SEEN_UNREACHABLE], check_max / 1000.0);
	printf("| lifecycle | %zu events of %zu objects (refunds, disputes, "
	       "cancellations) for %ld transactions; %ld requests, 200 "
	       "processed %ld, duplicate %ld; %ld object rows at the end; %ld "
	       "payments with non-zero totals, every payment's totals checked "
	       "against its rows and against the events sent |\n",
	       run->nevents, run->nobjects, ev_txs, ev_recs,
	       ev_answers[OUT_PROCESSED], ev_answers[OUT_DUPLICATE], ev_objects,
	       with_totals);
	chaos_tx_id(run, longest_tx, id, sizeof(id));
	printf("| longest without a 2xx | %.1f s (%s from %.1f s: %ld "
	       "deliveries without a 2xx, then one) |\n", longest / 1e6, id,
	       rel_s(run, longest_from), longest_failed);
	if (ck.per_rule[R_NOT_CONVERGED] > 0)
		printf("| final round | %ld payment(s) or event(s) got no 2xx "
		       "within %.0f s |\n",
		       ck.per_rule[R_NOT_CONVERGED],
		       (run->final_end_us - run->final_start_us) / 1e6);
	else
		printf("| final round | every payment and event answered 2xx within "
		       "%.1f s |\n", final_last / 1e6);
	printf("| violations | %ld |\n", ck.violations);
	for (int r = 0; r < R_COUNT; r++)
		if (ck.per_rule[r] > 0)
			printf("| - %s | %ld |\n", rule_names[r], ck.per_rule[r]);
	if (ck.violations > 0)
		printf("\nchaos: %ld violation(s) in %ld transaction(s) (%ld shown "
		       "above); replay with CHAOS_SEED=%lu\n", ck.violations,
		       ck.shown_tx, ck.shown_tx < SHOW_MAX ? ck.shown_tx : SHOW_MAX,
		       run->seed);
	check_cleanup(&ck);
	return ck.violations;
}

/* A digest of the run's rows as node db holds them: "N rows, digest D" of
 * payments and of payment_events, into out. Returns 0, or -1 when the node
 * did not answer. */
static int node_digest(const struct chaos_run *run, MYSQL *db, char *out,
		       size_t size)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < 2; i++) {
		char q[512];
		MYSQL_RES *res;
		MYSQL_ROW row;
		int n;

		if (i == 0)
			snprintf(q, sizeof(q), "SELECT COUNT(*), COALESCE(SUM("
				 "CRC32(CONCAT_WS('|', provider, transaction_id, "
				 "amount, currency, refunded_amount, "
				 "IFNULL(dispute_state, '-'), cancelled))), 0) "
				 "FROM payments WHERE transaction_id LIKE '%s-%%'",
				 run->tag);
		else
			snprintf(q, sizeof(q), "SELECT COUNT(*), COALESCE(SUM("
				 "CRC32(CONCAT_WS('|', provider, kind, object_id, "
				 "transaction_id, state, amount, IFNULL(currency, "
				 "'-'), occurred_at))), 0) FROM payment_events "
				 "WHERE transaction_id LIKE '%s-%%'", run->tag);
		if (db == NULL || mysql_query(db, q) != 0 ||
		    (res = mysql_store_result(db)) == NULL)
			return -1;
		row = mysql_fetch_row(res);
		n = snprintf(out + used, size - used, "%s%s %s rows, digest %s",
			     i ? "; " : "", i ? "payment_events" : "payments",
			     row ? row[0] : "?", row ? row[1] : "?");
		mysql_free_result(res);
		if (n < 0 || (size_t)n >= size - used)
			return -1;
		used += (size_t)n;
	}
	return 0;
}

long chaos_check_nodes(const struct chaos_run *run, MYSQL **db,
		       const char *const *name, size_t n)
{
	char first[256], digest[256];
	long violations = 0;

	if (n == 0 || node_digest(run, db[0], first, sizeof(first)) != 0) {
		fprintf(stderr, "chaos: reading the rows of node %s failed\n",
			n ? name[0] : "-");
		return -1;
	}
	printf("| node %s | %s |\n", name[0], first);
	for (size_t i = 1; i < n; i++) {
		if (node_digest(run, db[i], digest, sizeof(digest)) != 0) {
			printf("| node %s | did not answer |\n", name[i]);
			printf("chaos: VIOLATION: node %s did not answer after the "
			       "faults healed (seed %lu)\n", name[i], run->seed);
			violations++;
		} else if (strcmp(digest, first) != 0) {
			printf("| node %s | %s |\n", name[i], digest);
			printf("chaos: VIOLATION: node %s holds other rows than "
			       "node %s (seed %lu)\n", name[i], name[0], run->seed);
			violations++;
		} else {
			printf("| node %s | the same |\n", name[i]);
		}
	}
	printf("| nodes agree | %s |\n", violations ? "NO" : "yes");
	return violations;
}
