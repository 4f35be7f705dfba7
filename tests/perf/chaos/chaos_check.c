/* chaos_check.c - the checker of "make chaos": judges the history recorded by
 * chaos_client.c against the final table and prints the report. Each rule
 * below is a promise of payhook's README (what a 200, a 409/503 and a 422
 * mean); a broken one is printed with the seed, the history of the
 * transaction concerned and the faults around it, so that the schedule can be
 * replayed (CHAOS_SEED=N make chaos).
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
};

/* The final table, per transaction. */
struct row {
	long count;
	int64_t amount;
	char currency[4];
};

struct check {
	struct chaos_run *run;
	struct row *rows;
	size_t *order;  /* record indices by transaction, then time sent */
	bool *flagged;  /* per record: it broke a rule */
	long per_rule[R_COUNT];
	long violations, shown_tx;
	/* The current transaction's violations, NOTES_MAX of them in text. */
	char notes[NOTES_MAX][256];
	long nnotes;
};

static double rel_s(const struct chaos_run *run, int64_t us)
{
	return (double)(us - run->start_us) / 1e6;
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

	if (r->body == BODY_BAD)
		snprintf(out, size, "1.5 %s", t->currency[0]);
	else
		snprintf(out, size, "%" PRId64 " %s", t->amount[r->body],
			 t->currency[r->body]);
}

static void print_rec(FILE *to, const struct chaos_run *run,
		      const struct chaos_rec *r, const char *sep)
{
	char id[96], body[32];

	chaos_tx_id(run, r->tx, id, sizeof(id));
	body_text(run, r, body, sizeof(body));
	fprintf(to, "%.3f%s%.3f%s%u%s%s%s%s%s%s%s%d%s%s%s%d%s%d%s%s%s%.1f\n",
		rel_s(run, r->sent_us), sep, rel_s(run, r->answered_us), sep,
		r->client, sep, id, sep, chaos_kind_names[r->kind], sep, body,
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
	fprintf(out, "sent_s\tanswered_s\tclient\ttransaction\tkind\tbody\tstatus"
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
		 "SELECT transaction_id, COUNT(*), MIN(amount), MIN(currency) "
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
 * (or the web server itself was restarted). */
static bool worker_killed_during(const struct chaos_run *run,
				 const struct chaos_rec *r)
{
	for (size_t i = 0; i < run->nfaults; i++) {
		const struct chaos_fault *f = &run->faults[i];

		if ((strcmp(f->kind, "worker_kill") == 0 ||
		     strcmp(f->kind, "web_restart") == 0) &&
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
		bool bad = r->kind == KIND_BAD || r->kind == KIND_BADSIG;
		bool web = r->outcome == OUT_OTHER || r->outcome == OUT_NONE;

		if (bad) {
			int want = r->kind == KIND_BAD ? 400 : 401;

			if (r->status != 0 && r->status != want &&
			    !(web && r->status >= 500))
				note(ck, R_BAD_ACCEPTED, r, ": answered %d", r->status);
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
		} else if (r->status == 409 || r->status == 503) {
			if (!web && r->retry_after < 0)
				note(ck, R_NO_RETRY_AFTER, r, NULL);
			if (web && r->status == 503 && !worker_killed_during(run, r))
				note(ck, R_WEB_5XX, r, ": %d", r->status);
		} else if (r->status >= 500) {
			if (!web)
				note(ck, R_500, r, ": %d %s", r->status,
				     chaos_outcome_names[r->outcome]);
			else if (!worker_killed_during(run, r))
				note(ck, R_WEB_5XX, r, ": %d", r->status);
		} else if (r->status >= 400) {
			note(ck, R_REFUSED, r, ": %d %s", r->status,
			     chaos_outcome_names[r->outcome]);
		}
	}
	if (!final_ok)
		note(ck, R_NOT_CONVERGED, NULL, NULL);
	/* A violation of the transaction as a whole shows its last requests. */
	if (ck->nnotes > 0 && n > 0 && (row->count != 1 || !final_ok))
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
	if (row->count > 0)
		printf("row %" PRId64 " %s\n", row->amount, row->currency);
	else
		printf("no row\n");
	for (long i = 0; i < ck->nnotes && i < NOTES_MAX; i++)
		printf("%s\n", ck->notes[i]);
	if (ck->nnotes > NOTES_MAX)
		printf("  (and %ld more)\n", ck->nnotes - NOTES_MAX);
	printf("  requests around them (seconds from the start: sent, answered; "
	       "client, id, kind, amount currency, status, result, Retry-After, "
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

/* The longest a transaction stayed unanswerable: from the sending of a
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

		if (r != NULL && (r->kind == KIND_BAD || r->kind == KIND_BADSIG ||
				  r->kind == KIND_CONFLICT))
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

long chaos_check(struct chaos_run *run, MYSQL *db)
{
	struct check ck = { .run = run };
	long by_kind[KIND_COUNT] = { 0 }, seen[5] = { 0 };
	long status_count[600][OUT_COUNT];
	int64_t longest = 0, longest_from = 0, final_last = 0, check_max = 0;
	size_t longest_tx = 0, first = 0;
	long longest_failed = 0;
	char id[96];

	memset(status_count, 0, sizeof(status_count));
	ck.rows = calloc(run->ntx, sizeof(*ck.rows));
	ck.order = malloc((run->nrecs + 1) * sizeof(*ck.order));
	ck.flagged = calloc(run->nrecs + 1, sizeof(*ck.flagged));
	if (ck.rows == NULL || ck.order == NULL || ck.flagged == NULL ||
	    read_rows(&ck, db) != 0) {
		free(ck.rows);
		free(ck.order);
		free(ck.flagged);
		return -1;
	}
	for (size_t i = 0; i < run->nrecs; i++)
		ck.order[i] = i;
	qsort_r(ck.order, run->nrecs, sizeof(*ck.order), by_tx_then_sent, run->recs);

	printf("\n## Chaos run: seed %lu, %d s of faults, %zu transactions\n\n",
	       run->seed, run->seconds, run->ntx);
	for (size_t tx = 0; tx < run->ntx; tx++) {
		size_t n = 0;
		int64_t from = 0, len;
		long failed = 0;

		while (first + n < run->nrecs && run->recs[ck.order[first + n]].tx == tx)
			n++;
		ck.nnotes = 0;
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
		if (r->status >= 0 && r->status < 600)
			status_count[r->status][r->outcome]++;
		seen[r->seen]++;
		if (r->seen != SEEN_NOT_CHECKED && r->seen != SEEN_UNREACHABLE &&
		    r->check_us > check_max)
			check_max = r->check_us;
	}

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
	chaos_tx_id(run, longest_tx, id, sizeof(id));
	printf("| longest without a 2xx | %.1f s (%s from %.1f s: %ld "
	       "deliveries without a 2xx, then one) |\n", longest / 1e6, id,
	       rel_s(run, longest_from), longest_failed);
	if (ck.per_rule[R_NOT_CONVERGED] > 0)
		printf("| final round | %ld transaction(s) got no 2xx within %.0f s |\n",
		       ck.per_rule[R_NOT_CONVERGED],
		       (run->final_end_us - run->final_start_us) / 1e6);
	else
		printf("| final round | every transaction answered 2xx within "
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
	free(ck.rows);
	free(ck.order);
	free(ck.flagged);
	return ck.violations;
}
