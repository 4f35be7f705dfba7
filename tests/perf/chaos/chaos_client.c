/* chaos_client.c - the workload of "make chaos" (tests/perf/chaos/chaos.sh):
 * several clients deliver a fixed set of signed transactions through the web
 * server again and again, as providers do, and record every request and its
 * answer with its time. Right after each 200, the client reads the row back
 * over its own MariaDB connection (READ COMMITTED, straight to the server,
 * not through the fault proxy): a 200 whose row is not yet committed is a lie
 * that no final table can show.
 *
 * A third of the transactions also have lifecycle events (refunds, one
 * partial or full, sometimes a second; disputes opened, then lost, some
 * then won; cancellations), in the standard profile's body: some sent
 * before their payment, some newest first, redelivered and in storms of
 * copies as any delivery, some in a storm with their payment. A 200 for an
 * event is checked the same way: right after it, the object's row must hold
 * that event's state or one that supersedes it.
 *
 * With several --url (the app hosts of make chaos-ha) each request goes to
 * one of them drawn from the seed, and the copies of a burst alternate
 * between them: the same transaction delivered to every host at once. With
 * --mysql-node (a Galera cluster) the read after a 200 waits for the
 * cluster's commits (wsrep_sync_wait) and moves to the next node when its
 * node fails, and at the end every node's rows of the run are compared.
 *
 * After the workload the client waits for SIGUSR1 (chaos.sh sends it once
 * every fault is healed), delivers every transaction once more until it gets
 * a 2xx (the final round, bounded in time), and hands the history and the
 * final table to the checker (chaos_check.c). Exit 0: no violation; 1: a
 * violation; 2: the run itself failed.
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "chaos.h"
#include "error.h"
#include "lifecycle.h"
#include "sample.h"
#include "secret.h"
#include "signature.h"

#define PROGRAM "chaos_client"
#define MAX_BURST 8
/* Longer than a worker SIGSTOPped past its lease holds a request. */
#define HTTP_TIMEOUT_MS 30000
#define MAX_CLIENTS 64
/* App hosts (--url) and Galera nodes (--mysql-node) at most. */
#define MAX_URLS 4
#define MAX_NODES 8
/* One transaction in this many has lifecycle events. */
#define LIFECYCLE_SHARE 3
/* The most events one transaction gets (see add_lifecycle). */
#define EVENTS_PER_TX 10
/* The event time of transaction i's events: from 2026-01-01T00:00:00Z,
 * i * 100 s on. */
#define EVENT_BASE_TIME INT64_C(1767225600)

/* One transfer of a burst (a single request is a burst of one). */
struct call {
	CURL *easy;
	struct curl_slist *headers;
	char body[512];
	char answer[512];
	size_t answer_len;
	int retry_after;
	struct chaos_rec rec;
};

/* What a client sends next: n copies, each of a unit: unit u < ntx is
 * transaction u's payment, any other lifecycle event u - ntx. */
struct plan {
	size_t n;
	size_t unit[MAX_BURST];
	uint8_t kind[MAX_BURST], body[MAX_BURST];
	int hangup_ms; /* > 0: hang up after that long */
};

struct client {
	int index;
	uint64_t rng;
	struct signature_keyring *ring; /* its HMAC contexts are per thread */
	CURLM *multi;
	struct call calls[MAX_BURST];
	MYSQL *db; /* the check's connection; NULL until (re)connected */
	size_t node; /* the --mysql-node it uses, or tries next */
	pthread_t thread;
};

static struct {
	struct chaos_run run;
	const char *url[MAX_URLS], *secret, *history, *faults;
	size_t nurls;
	const char *db_host, *db_user, *db_password, *db_name;
	unsigned db_port;
	/* --mysql-node HOST:PORT, in order; none: db_host and db_port. */
	char node_host[MAX_NODES][64];
	unsigned node_port[MAX_NODES];
	size_t nnodes;
	int clients, think_ms, final_seconds, wait_seconds;
	/* run.txs' and run.events' workload state, run.recs, next_release,
	 * next_event */
	pthread_mutex_t lock;
	size_t recs_cap, next_release, next_event, final_left;
	bool final_round;
	int64_t phase_end_us;
	struct client client[MAX_CLIENTS];
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* splitmix64: each client's choices follow from the seed alone. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double unit(uint64_t *s)
{
	return (double)(rnd(s) >> 11) / 9007199254740992.0;
}

static long range(uint64_t *s, long lo, long hi)
{
	return lo + (long)(rnd(s) % (uint64_t)(hi - lo + 1));
}

void chaos_tx_id(const struct chaos_run *run, size_t i, char *out, size_t size)
{
	snprintf(out, size, "%s-%zu", run->tag, i);
}

static void add_event(uint32_t tx, uint32_t object, enum lifecycle_kind kind,
		      enum lifecycle_state state, int64_t amount, int64_t at)
{
	struct chaos_event *e = &g.run.events[g.run.nevents++];

	e->tx = tx;
	e->object = object;
	e->kind = (uint8_t)kind;
	e->state = (uint8_t)state;
	e->amount = amount;
	e->occurred_at = at;
}

/* Transaction i's lifecycle events, at most EVENTS_PER_TX: a refund
 * (partial or full; pending first, or at the same time; some fail after
 * they succeeded) and a second partial one; a dispute opened (announced
 * open twice, some), lost, some then won (a few won at the very time it
 * was lost: lost wins); a cancellation. Then when each is first sent:
 * some before the payment, some newest first. */
static void add_lifecycle(uint64_t *s, uint32_t i)
{
	const struct chaos_tx *t = &g.run.txs[i];
	int64_t at = EVENT_BASE_TIME + (int64_t)i * 100, amount = t->amount[0];
	size_t first = g.run.nevents, n;
	long base, step;
	bool reversed;

	if (rnd(s) % 10 < 6) {
		uint32_t object = (uint32_t)g.run.nobjects++;
		bool full = rnd(s) % 10 < 3, tie = rnd(s) % 5 == 0;
		int64_t a1 = full ? amount : range(s, 1, amount - 1);

		if (rnd(s) % 10 < 7)
			add_event(i, object, LIFECYCLE_REFUND, LIFECYCLE_PENDING,
				  a1, tie ? at + 2 : at + 1);
		add_event(i, object, LIFECYCLE_REFUND, LIFECYCLE_SUCCEEDED, a1,
			  at + 2);
		if (rnd(s) % 5 == 0)
			add_event(i, object, LIFECYCLE_REFUND, LIFECYCLE_FAILED,
				  a1, at + 5);
		if (!full && rnd(s) % 10 < 4) {
			int64_t a2 = range(s, 1, amount - a1);

			object = (uint32_t)g.run.nobjects++;
			if (rnd(s) % 2)
				add_event(i, object, LIFECYCLE_REFUND,
					  LIFECYCLE_PENDING, a2, at + 3);
			add_event(i, object, LIFECYCLE_REFUND,
				  LIFECYCLE_SUCCEEDED, a2, at + 4);
		}
	}
	if (rnd(s) % 10 < 4) {
		uint32_t object = (uint32_t)g.run.nobjects++;

		add_event(i, object, LIFECYCLE_DISPUTE, LIFECYCLE_OPEN, amount,
			  at + 10);
		if (rnd(s) % 10 < 3)
			add_event(i, object, LIFECYCLE_DISPUTE, LIFECYCLE_OPEN,
				  amount, at + 12);
		add_event(i, object, LIFECYCLE_DISPUTE, LIFECYCLE_LOST, amount,
			  at + 20);
		if (rnd(s) % 10 < 4)
			add_event(i, object, LIFECYCLE_DISPUTE, LIFECYCLE_WON,
				  amount, rnd(s) % 4 == 0 ? at + 20 : at + 30);
	}
	if (rnd(s) % 5 == 0 || g.run.nevents == first)
		add_event(i, (uint32_t)g.run.nobjects++, LIFECYCLE_CANCELLATION,
			  LIFECYCLE_SUCCEEDED, amount, at + 40);

	/* A quarter come before the payment (up to 3 s at 20 a second),
	 * the others up to 5 s after it; three in ten newest first. */
	base = rnd(s) % 4 == 0 ? (long)i - range(s, 1, 60) : (long)i + range(s, 1, 100);
	reversed = rnd(s) % 10 < 3;
	step = range(s, 1, 4);
	n = g.run.nevents - first;
	for (size_t k = 0; k < n; k++) {
		long after = base + step * (long)(reversed ? n - 1 - k : k);

		g.run.events[first + k].release_after =
			after < (long)g.run.ntx ? after : (long)g.run.ntx - 1;
	}
}

static int by_release(const void *a, const void *b)
{
	const struct chaos_event *x = a, *y = b;

	if (x->release_after != y->release_after)
		return x->release_after < y->release_after ? -1 : 1;
	return chaos_event_order(x, y);
}

/* The fixed set: amounts and currencies drawn from the seed. The variant
 * differs from the canonical body in the amount or in the currency (only
 * in the amount for a transaction with lifecycle events, which are in its
 * currency). */
static int setup_transactions(void)
{
	static const char *const currencies[] = { "EUR", "USD", "JPY", "GBP" };
	uint64_t s = g.run.seed * 7919 + 1;

	g.run.txs = calloc(g.run.ntx, sizeof(*g.run.txs));
	g.run.events = calloc(g.run.ntx, EVENTS_PER_TX * sizeof(*g.run.events));
	if (g.run.txs == NULL || g.run.events == NULL)
		return -1;
	for (size_t i = 0; i < g.run.ntx; i++) {
		struct chaos_tx *t = &g.run.txs[i];
		int c = (int)(rnd(&s) % 4);
		bool lifecycle = rnd(&s) % LIFECYCLE_SHARE == 0;

		t->amount[0] = range(&s, 100, 999999);
		snprintf(t->currency[0], 4, "%s", currencies[c]);
		if (lifecycle || rnd(&s) % 2) {
			t->amount[1] = t->amount[0] + 1;
			snprintf(t->currency[1], 4, "%s", currencies[c]);
		} else {
			t->amount[1] = t->amount[0];
			snprintf(t->currency[1], 4, "%s", currencies[(c + 1) % 4]);
		}
		t->first200_body = -1;
		if (lifecycle)
			add_lifecycle(&s, (uint32_t)i);
	}
	qsort(g.run.events, g.run.nevents, sizeof(*g.run.events), by_release);
	return 0;
}

static struct chaos_sched *sched_of(size_t unit)
{
	return unit < g.run.ntx ? &g.run.txs[unit].sched
				: &g.run.events[unit - g.run.ntx].sched;
}

/* ---- the check right after a 200 ----------------------------------------- */

/* Closes the check's connection; on a cluster the next one goes to the
 * next node (this one may be down or outside the primary component). */
static void db_close(struct client *c)
{
	mysql_close(c->db);
	c->db = NULL;
	if (g.nnodes > 0)
		c->node = (c->node + 1) % g.nnodes;
}

/* Opens a connection for reading what is committed to node (the
 * --mysql-node of that index; none: db_host and db_port), its reads
 * waiting for the cluster's commits on a Galera node. Returns it, or NULL. */
static MYSQL *db_open(size_t node, unsigned rw_s)
{
	unsigned int connect_s = 1;
	MYSQL *db = mysql_init(NULL);

	if (db == NULL)
		return NULL;
	mysql_options(db, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
	/* A table lock held by the schedule blocks the read for seconds. */
	mysql_options(db, MYSQL_OPT_READ_TIMEOUT, &rw_s);
	mysql_options(db, MYSQL_OPT_WRITE_TIMEOUT, &rw_s);
	if (mysql_real_connect(db, g.nnodes > 0 ? g.node_host[node] : g.db_host,
			       g.db_user, g.db_password, g.db_name,
			       g.nnodes > 0 ? g.node_port[node] : g.db_port,
			       NULL, 0) == NULL ||
	    mysql_query(db, "SET SESSION TRANSACTION ISOLATION LEVEL "
			    "READ COMMITTED") != 0 ||
	    mysql_autocommit(db, 1) != 0 ||
	    (g.nnodes > 0 &&
	     mysql_query(db, "SET SESSION wsrep_sync_wait = 1") != 0)) {
		mysql_close(db);
		return NULL;
	}
	return db;
}

/* Connects the client's check connection. Returns 0, or -1 (c->db NULL). */
static int db_connect(struct client *c)
{
	c->db = db_open(c->node, 10);
	if (c->db == NULL) {
		if (g.nnodes > 0)
			c->node = (c->node + 1) % g.nnodes;
		return -1;
	}
	return 0;
}

/* Runs the check's query q. Returns its result (the caller frees it), or
 * NULL when MariaDB did not answer (the connection closed). */
static MYSQL_RES *check_query(struct client *c, const char *q)
{
	MYSQL_RES *res;

	if (c->db == NULL && db_connect(c) != 0)
		return NULL;
	if (mysql_query(c->db, q) != 0 ||
	    (res = mysql_store_result(c->db)) == NULL) {
		db_close(c);
		return NULL;
	}
	return res;
}

/* Reads transaction tx's row as committed now, and compares it with body. */
static enum chaos_seen check_row(struct client *c, uint32_t tx, int body)
{
	const struct chaos_tx *t = &g.run.txs[tx];
	char id[96], q[256];
	enum chaos_seen seen;
	MYSQL_RES *res;
	MYSQL_ROW row;

	chaos_tx_id(&g.run, tx, id, sizeof(id));
	snprintf(q, sizeof(q), "SELECT amount, currency FROM payments WHERE "
			       "provider = 'standard' AND transaction_id = '%s'", id);
	res = check_query(c, q);
	if (res == NULL)
		return SEEN_UNREACHABLE;
	row = mysql_fetch_row(res);
	if (row == NULL)
		seen = SEEN_NO_ROW;
	else if (body != BODY_BAD && strtoll(row[0], NULL, 10) == t->amount[body] &&
		 strcmp(row[1], t->currency[body]) == 0)
		seen = SEEN_ROW;
	else
		seen = SEEN_OTHER_ROW;
	mysql_free_result(res);
	return seen;
}

/* Reads event ev's object row as committed now: it must hold the event's
 * state, or one that supersedes it (SEEN_OTHER_ROW when it does not). */
static enum chaos_seen check_event_row(struct client *c, uint32_t ev)
{
	const struct chaos_event *e = &g.run.events[ev];
	struct lifecycle_event mine, held;
	long long micros;
	char id[128], q[384];
	enum chaos_seen seen = SEEN_OTHER_ROW;
	MYSQL_RES *res;
	MYSQL_ROW row;

	chaos_object_id(&g.run, e, id, sizeof(id));
	snprintf(q, sizeof(q), "SELECT state, TIMESTAMPDIFF(MICROSECOND, "
			       "'1970-01-01', occurred_at), amount FROM "
			       "payment_events WHERE provider = 'standard' AND "
			       "kind = '%s' AND object_id = '%s'",
		 lifecycle_kind_name(e->kind), id);
	res = check_query(c, q);
	if (res == NULL)
		return SEEN_UNREACHABLE;
	row = mysql_fetch_row(res);
	chaos_event_model(e, &mine);
	held = mine;
	if (row == NULL) {
		seen = SEEN_NO_ROW;
	} else if (row[0] != NULL && row[1] != NULL && row[2] != NULL &&
		   lifecycle_state_parse(mine.kind, row[0], strlen(row[0]),
					 &held.state) == 0) {
		micros = strtoll(row[1], NULL, 10);
		held.occurred_at.seconds = micros / 1000000;
		held.occurred_at.micros = (int32_t)(micros % 1000000);
		held.link.amount = strtoll(row[2], NULL, 10);
		if (!lifecycle_supersedes(&held, &mine))
			seen = SEEN_ROW;
	}
	mysql_free_result(res);
	return seen;
}

/* ---- requests ------------------------------------------------------------ */

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct call *call = arg;
	size_t len = size * n, room = sizeof(call->answer) - 1 - call->answer_len;

	memcpy(call->answer + call->answer_len, data, len < room ? len : room);
	call->answer_len += len < room ? len : room;
	call->answer[call->answer_len] = '\0';
	return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct call *call = arg;
	size_t len = size * n;

	if (len > 12 && strncasecmp(data, "Retry-After:", 12) == 0)
		call->retry_after = atoi(data + 12);
	return len;
}

static enum chaos_outcome parse_outcome(const char *answer)
{
	const char *p = strstr(answer, "\"result\":\"");

	if (p == NULL)
		return answer[0] == '\0' ? OUT_NONE : OUT_OTHER;
	p += 10;
	for (int o = OUT_PROCESSED; o < OUT_OTHER; o++) {
		size_t len = strlen(chaos_outcome_names[o]);

		if (strncmp(p, chaos_outcome_names[o], len) == 0 && p[len] == '"')
			return (enum chaos_outcome)o;
	}
	return OUT_OTHER;
}

/* The standard profile's sample event for e (sample.h), its body as
 * providers send it, into out (size bytes). Returns its length, or -1 with
 * a message on stderr. */
static int event_body(const struct chaos_event *e, char *out, size_t size)
{
	const char *kind = lifecycle_kind_name(e->kind);
	bool plain = e->state == LIFECYCLE_SUCCEEDED || e->state == LIFECYCLE_OPEN;
	char name[32], id[96], object[128];
	struct sample_input in = {
		.provider = CONFIG_PROVIDER_STANDARD,
		.event = name,
		.transaction_id = id,
		.amount = e->amount,
		.currency = g.run.txs[e->tx].currency[0],
		.object_id = object,
		.occurred_at = e->occurred_at,
	};
	struct error err = { "" };
	char *text;
	int len;

	/* "refund" is the succeeded refund's sample, "refund.pending" ... */
	snprintf(name, sizeof(name), "%s%s%s", kind, plain ? "" : ".",
		 plain ? "" : lifecycle_state_name(e->state));
	chaos_tx_id(&g.run, e->tx, id, sizeof(id));
	chaos_object_id(&g.run, e, object, sizeof(object));
	text = sample_event(&in, &err);
	if (text == NULL) {
		fprintf(stderr, PROGRAM ": sample %s: %s\n", name, err.message);
		return -1;
	}
	len = snprintf(out, size, "%s", text);
	free(text);
	return len >= 0 && (size_t)len < size ? len : -1;
}

/* Sets up call to send kind/body of unit (a payment or a lifecycle event),
 * signed now, to app host host (an index of g.url). */
static int prepare(struct client *c, struct call *call, size_t unit,
		   int kind, int body, int hangup_ms, size_t host)
{
	const struct chaos_event *e =
		unit < g.run.ntx ? NULL : &g.run.events[unit - g.run.ntx];
	uint32_t tx = e != NULL ? e->tx : (uint32_t)unit;
	const struct chaos_tx *t = &g.run.txs[tx];
	char id[96], msg_id[160], stamp[24], sig[SIGNATURE_TEXT_MAX], h[200];
	struct error err = { "" };
	int len;

	chaos_tx_id(&g.run, tx, id, sizeof(id));
	if (e != NULL)
		len = event_body(e, call->body, sizeof(call->body));
	else if (body == BODY_BAD)
		len = snprintf(call->body, sizeof(call->body),
			       "{\"transaction_id\":\"%s\",\"amount\":1.5,"
			       "\"currency\":\"%s\"}", id, t->currency[0]);
	else
		len = snprintf(call->body, sizeof(call->body),
			       "{\"transaction_id\":\"%s\",\"amount\":%" PRId64
			       ",\"currency\":\"%s\"}", id, t->amount[body],
			       t->currency[body]);
	if (len < 0 || (size_t)len >= sizeof(call->body))
		return -1;
	/* One webhook-id per message, the same on every delivery of it. */
	if (e != NULL)
		snprintf(msg_id, sizeof(msg_id), "msg_%s_%u_%s_%lld", id,
			 e->object, lifecycle_state_name(e->state),
			 (long long)e->occurred_at);
	else
		snprintf(msg_id, sizeof(msg_id), "msg_%s_%d", id, body);
	snprintf(stamp, sizeof(stamp), "%lld", (long long)time(NULL));
	if (signature_sign_standard(c->ring, msg_id, stamp, call->body,
				    (size_t)len, sig, &err) != 0) {
		fprintf(stderr, PROGRAM ": signing failed: %s\n", err.message);
		return -1;
	}
	if (kind == KIND_BADSIG)
		snprintf(sig, sizeof(sig), "v1,%s",
			 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
	curl_slist_free_all(call->headers);
	call->headers = curl_slist_append(NULL, "Content-Type: application/json");
	snprintf(h, sizeof(h), "webhook-id: %s", msg_id);
	call->headers = curl_slist_append(call->headers, h);
	snprintf(h, sizeof(h), "webhook-timestamp: %s", stamp);
	call->headers = curl_slist_append(call->headers, h);
	snprintf(h, sizeof(h), "webhook-signature: %s", sig);
	call->headers = curl_slist_append(call->headers, h);
	if (call->headers == NULL)
		return -1;
	call->answer_len = 0;
	call->answer[0] = '\0';
	call->retry_after = -1;
	memset(&call->rec, 0, sizeof(call->rec));
	call->rec.tx = tx;
	call->rec.ev = e != NULL ? (int32_t)(unit - g.run.ntx) : -1;
	call->rec.kind = (uint8_t)kind;
	call->rec.body = (uint8_t)body;
	call->rec.client = (uint8_t)c->index;
	call->rec.host = (uint8_t)host;
	curl_easy_setopt(call->easy, CURLOPT_URL, g.url[host]);
	curl_easy_setopt(call->easy, CURLOPT_POSTFIELDS, call->body);
	curl_easy_setopt(call->easy, CURLOPT_POSTFIELDSIZE, (long)len);
	curl_easy_setopt(call->easy, CURLOPT_HTTPHEADER, call->headers);
	curl_easy_setopt(call->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(call->easy, CURLOPT_WRITEDATA, call);
	curl_easy_setopt(call->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(call->easy, CURLOPT_HEADERDATA, call);
	curl_easy_setopt(call->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(call->easy, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(call->easy, CURLOPT_TIMEOUT_MS,
			 hangup_ms > 0 ? (long)hangup_ms : (long)HTTP_TIMEOUT_MS);
	return 0;
}

/* When a provider would deliver again after this answer. */
static int64_t retry_at(const struct chaos_rec *r, uint64_t *rng)
{
	if (r->retry_after >= 0)
		return r->answered_us +
		       (int64_t)(r->retry_after * 1e6 * (0.5 + unit(rng)));
	return r->answered_us + (int64_t)(500000 + 1500000 * unit(rng));
}

static bool is_delivery(int kind)
{
	return kind == KIND_FIRST || kind == KIND_RETRY || kind == KIND_REDELIVERY ||
	       kind == KIND_BURST || kind == KIND_HANGUP || kind == KIND_FINAL;
}

/* Appends the record and moves its payment's or event's workload state
 * on. */
static void record(struct client *c, const struct chaos_rec *r)
{
	struct chaos_tx *t = &g.run.txs[r->tx];
	struct chaos_sched *s = r->ev < 0 ? &t->sched : &g.run.events[r->ev].sched;
	bool ok = r->status / 100 == 2, conflict = r->status == 422;

	pthread_mutex_lock(&g.lock);
	if (g.run.nrecs == g.recs_cap) {
		size_t cap = g.recs_cap ? 2 * g.recs_cap : 65536;
		struct chaos_rec *recs = realloc(g.run.recs, cap * sizeof(*recs));

		if (recs == NULL) {
			fprintf(stderr, PROGRAM ": out of memory\n");
			exit(2);
		}
		g.run.recs = recs;
		g.recs_cap = cap;
	}
	g.run.recs[g.run.nrecs++] = *r;
	if (r->ev < 0 && ok && t->first200_body < 0 && r->body != BODY_BAD)
		t->first200_body = r->body;
	if (r->kind == KIND_FINAL) {
		if (ok) {
			s->final_done = true;
			g.final_left--;
		} else if (conflict && r->ev < 0) {
			/* The row holds the other body: deliver that one. */
			t->final_body ^= 1;
			s->due_us = r->answered_us;
		} else {
			s->due_us = retry_at(r, &c->rng);
		}
	} else if (is_delivery(r->kind)) {
		/* A 2xx (or a conflict: the other body won) ends the
		 * deliveries; anything else asks for a retry. */
		if (ok || conflict) {
			s->due_us = 0;
		} else if (s->due_us == 0 || s->due_us == INT64_MAX) {
			/* Not yet pending, or taken by this retry. */
			s->due_us = retry_at(r, &c->rng);
		}
	}
	pthread_mutex_unlock(&g.lock);
}

/* Sends the plan's copies at the same instant and records each answer, a
 * 200 checked against the table as soon as it arrives. */
static int send_plan(struct client *c, const struct plan *p)
{
	int running = 0, left;
	int64_t sent;
	CURLMsg *msg;
	/* One host drawn per plan; the copies of a burst go round the
	 * hosts from there. */
	size_t host = g.nurls > 1 ? rnd(&c->rng) % g.nurls : 0;

	for (size_t i = 0; i < p->n; i++) {
		if (prepare(c, &c->calls[i], p->unit[i], p->kind[i], p->body[i],
			    p->kind[i] == KIND_HANGUP ? p->hangup_ms : 0,
			    (host + i) % g.nurls) != 0)
			return -1;
	}
	/* One time for the copies of a burst: the checker takes them as
	 * sent at once. */
	sent = now_us();
	for (size_t i = 0; i < p->n; i++) {
		c->calls[i].rec.sent_us = sent;
		curl_multi_add_handle(c->multi, c->calls[i].easy);
	}
	do {
		curl_multi_perform(c->multi, &running);
		while ((msg = curl_multi_info_read(c->multi, &left)) != NULL) {
			struct call *call = NULL;
			long status = 0;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
					  (char **)&call);
			call->rec.answered_us = now_us();
			call->rec.curl_code = (int16_t)msg->data.result;
			curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &status);
			call->rec.status = (int16_t)status;
			call->rec.retry_after = (int16_t)call->retry_after;
			call->rec.outcome = (uint8_t)(status == 0 ? OUT_NONE :
						      parse_outcome(call->answer));
			curl_multi_remove_handle(c->multi, call->easy);
			if (status == 200) {
				call->rec.seen = (uint8_t)(call->rec.ev < 0 ?
					check_row(c, call->rec.tx, call->rec.body) :
					check_event_row(c, (uint32_t)call->rec.ev));
				call->rec.check_us = (int32_t)(now_us() -
							       call->rec.answered_us);
			}
			record(c, &call->rec);
		}
		if (running > 0)
			curl_multi_poll(c->multi, NULL, 0, 100, NULL);
	} while (running > 0);
	return 0;
}

/* ---- what to send next ---------------------------------------------------- */

/* The released unit of index k among the payments released (first np)
 * and then the events released. */
static size_t released_unit(size_t k, size_t np)
{
	return k < np ? k : g.run.ntx + (k - np);
}

/* The earliest unit whose retry is due (final: every one not done), taken
 * so that no other client sends it meanwhile; -1 when none. */
static long take_due(int64_t now)
{
	long best = -1;
	size_t np = g.final_round ? g.run.ntx : g.next_release;
	size_t ne = g.final_round ? g.run.nevents : g.next_event;

	for (size_t k = 0; k < np + ne; k++) {
		size_t u = released_unit(k, np);
		const struct chaos_sched *s = sched_of(u);
		bool want = g.final_round ? !s->final_done && s->due_us <= now :
					    s->due_us != 0 && s->due_us <= now;

		if (want && (best < 0 || s->due_us < sched_of((size_t)best)->due_us))
			best = (long)u;
	}
	if (best >= 0)
		sched_of((size_t)best)->due_us = INT64_MAX;
	return best;
}

/* Copies [from, n) of p: kind and body of unit. */
static void plan_copies(struct plan *p, size_t from, size_t n, size_t unit,
			int kind, int body)
{
	for (size_t i = from; i < n; i++) {
		p->unit[i] = unit;
		p->kind[i] = (uint8_t)kind;
		p->body[i] = (uint8_t)body;
	}
	p->n = n;
}

/* Fills p for the workload: first deliveries of payments released at an
 * even pace over the run, lifecycle events as their payment's turn comes
 * (before it, for some), then due retries, else a redelivery of anything
 * released; some of each go out as bursts, conflicting bodies, bad bodies
 * or hang-ups, and some events in a burst with their payment. Returns 0, 1
 * when there is nothing to send now, -1 when the workload is over. */
static int pick_workload(struct client *c, struct plan *p, int64_t now)
{
	double span = (double)(g.phase_end_us - g.run.start_us);
	size_t target = (size_t)((double)g.run.ntx * (double)(now - g.run.start_us) /
				 span) + 1;
	size_t u, n;
	int kind;
	long due;
	bool event;
	double r;

	if (now >= g.phase_end_us)
		return -1;
	pthread_mutex_lock(&g.lock);
	if (g.next_release < g.run.ntx && g.next_release < target) {
		u = g.next_release++;
		kind = KIND_FIRST;
	} else if (g.next_event < g.run.nevents &&
		   g.run.events[g.next_event].release_after < (long)g.next_release) {
		u = g.run.ntx + g.next_event++;
		kind = KIND_FIRST;
	} else if ((due = take_due(now)) >= 0) {
		u = (size_t)due;
		kind = KIND_RETRY;
	} else if (g.next_release + g.next_event > 0) {
		u = released_unit(rnd(&c->rng) % (g.next_release + g.next_event),
				     g.next_release);
		kind = KIND_REDELIVERY;
	} else {
		pthread_mutex_unlock(&g.lock);
		return 1;
	}
	pthread_mutex_unlock(&g.lock);

	event = u >= g.run.ntx;
	r = unit(&c->rng);
	p->hangup_ms = (int)range(&c->rng, 1, 40);
	n = (size_t)range(&c->rng, 2, MAX_BURST);
	if (r < 0.05) {
		plan_copies(p, 0, n, u, KIND_BURST, BODY_CANONICAL);
	} else if (!event && kind == KIND_FIRST && r < 0.07) {
		/* Both bodies at once: whichever commits first is the row. */
		plan_copies(p, 0, n, u, KIND_BURST, BODY_CANONICAL);
		p->kind[0] = KIND_CONFLICT;
		p->body[0] = BODY_VARIANT;
	} else if (event && r < 0.08) {
		/* The event and its payment at once (the payment's totals
		 * must include the event, whichever commits first). */
		plan_copies(p, 0, n / 2, u, KIND_BURST, BODY_CANONICAL);
		plan_copies(p, n / 2, n, g.run.events[u - g.run.ntx].tx,
			    KIND_BURST, BODY_CANONICAL);
	} else if (!event && kind == KIND_REDELIVERY && r < 0.10) {
		plan_copies(p, 0, 1, u, KIND_CONFLICT, BODY_VARIANT);
	} else if (!event && kind == KIND_REDELIVERY && r < 0.13) {
		plan_copies(p, 0, 1, u, KIND_BAD, BODY_BAD);
	} else if (kind == KIND_REDELIVERY && r < 0.15) {
		plan_copies(p, 0, 1, u, KIND_BADSIG, BODY_CANONICAL);
	} else if (r < 0.20) {
		plan_copies(p, 0, 1, u, KIND_HANGUP, BODY_CANONICAL);
	} else {
		plan_copies(p, 0, 1, u, kind, BODY_CANONICAL);
	}
	return 0;
}

/* The final round: a payment with the body of its first 200 (or, after a
 * conflict, the other one), an event with its own, until a 2xx. */
static int pick_final(struct plan *p, int64_t now)
{
	long due;
	int body;

	if (now >= g.phase_end_us)
		return -1;
	pthread_mutex_lock(&g.lock);
	if (g.final_left == 0) {
		pthread_mutex_unlock(&g.lock);
		return -1;
	}
	due = take_due(now);
	body = due >= 0 && (size_t)due < g.run.ntx ? g.run.txs[due].final_body
						   : BODY_CANONICAL;
	pthread_mutex_unlock(&g.lock);
	if (due < 0)
		return 1;
	p->hangup_ms = 0;
	plan_copies(p, 0, 1, (size_t)due, KIND_FINAL, body);
	return 0;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct plan p;
	int rc;

	mysql_thread_init();
	for (;;) {
		int64_t now = now_us();

		rc = g.final_round ? pick_final(&p, now) : pick_workload(c, &p, now);
		if (rc < 0)
			break;
		if (rc > 0) {
			sleep_ms(10);
			continue;
		}
		if (send_plan(c, &p) != 0)
			exit(2);
		if (!g.final_round && g.think_ms > 0)
			sleep_ms(range(&c->rng, 0, 2 * g.think_ms));
	}
	if (c->db != NULL)
		db_close(c);
	mysql_thread_end();
	return NULL;
}

/* Runs every client until the phase ends (or, in the final round, every
 * transaction got its 2xx), printing a progress line every 30 s. */
static void run_phase(const char *what)
{
	int64_t started = now_us(), next = started + 30000000;

	for (int i = 0; i < g.clients; i++)
		pthread_create(&g.client[i].thread, NULL, client_main, &g.client[i]);
	while (now_us() < g.phase_end_us) {
		size_t n, left;

		sleep_ms(200);
		pthread_mutex_lock(&g.lock);
		n = g.run.nrecs;
		left = g.final_left;
		pthread_mutex_unlock(&g.lock);
		if (g.final_round && left == 0)
			break;
		if (now_us() >= next) {
			printf("# chaos: %s %llds: %zu requests%s\n", what,
			       (long long)((now_us() - started) / 1000000), n,
			       g.final_round ? "" : " so far");
			fflush(stdout);
			next += 30000000;
		}
	}
	for (int i = 0; i < g.clients; i++)
		pthread_join(g.client[i].thread, NULL);
}

static int setup_clients(void)
{
	char *secret = (char *)g.secret;
	struct error err = { "" };

	for (int i = 0; i < g.clients; i++) {
		struct client *c = &g.client[i];

		c->index = i;
		c->rng = g.run.seed * 1000003 + (uint64_t)i;
		c->ring = signature_keyring_new(&secret, 1, SECRET_WHSEC_BASE64, &err);
		c->multi = curl_multi_init();
		if (c->ring == NULL || c->multi == NULL) {
			fprintf(stderr, PROGRAM ": %s\n",
				c->ring ? "curl_multi_init failed" : err.message);
			return -1;
		}
		for (int k = 0; k < MAX_BURST; k++) {
			c->calls[k].easy = curl_easy_init();
			if (c->calls[k].easy == NULL)
				return -1;
			curl_easy_setopt(c->calls[k].easy, CURLOPT_PRIVATE,
					 &c->calls[k]);
		}
	}
	return 0;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: " PROGRAM " --url URL [--url URL...] --secret WHSEC --tag TAG --seed N\n"
		"         --seconds S --transactions N --history FILE --faults FILE\n"
		"         --mysql-host H --mysql-port P --mysql-user U "
		"--mysql-password PW --mysql-database DB\n"
		"         [--clients N] [--think-ms MS] [--final-seconds S] "
		"[--wait-seconds S]\n"
		"         [--mysql-node HOST:PORT...]\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "secret", required_argument, NULL, 's' },
		{ "tag", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 'S' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "transactions", required_argument, NULL, 'n' },
		{ "clients", required_argument, NULL, 'c' },
		{ "think-ms", required_argument, NULL, 'k' },
		{ "final-seconds", required_argument, NULL, 'f' },
		{ "wait-seconds", required_argument, NULL, 'w' },
		{ "history", required_argument, NULL, 'H' },
		{ "faults", required_argument, NULL, 'F' },
		{ "mysql-host", required_argument, NULL, 'h' },
		{ "mysql-port", required_argument, NULL, 'p' },
		{ "mysql-user", required_argument, NULL, 'U' },
		{ "mysql-password", required_argument, NULL, 'P' },
		{ "mysql-database", required_argument, NULL, 'D' },
		{ "mysql-node", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	struct timespec wait;
	sigset_t usr1;
	MYSQL *db;
	long violations;
	int opt;

	g.clients = 8;
	g.think_ms = 10;
	g.final_seconds = 120;
	g.wait_seconds = 600;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'u':
			if (g.nurls == MAX_URLS) {
				usage(stderr);
				return 2;
			}
			g.url[g.nurls++] = optarg;
			break;
		case 'N':
			if (g.nnodes == MAX_NODES ||
			    sscanf(optarg, "%63[^:]:%u", g.node_host[g.nnodes],
				   &g.node_port[g.nnodes]) != 2) {
				usage(stderr);
				return 2;
			}
			g.nnodes++;
			break;
		case 's': g.secret = optarg; break;
		case 't': g.run.tag = optarg; break;
		case 'S': g.run.seed = strtoul(optarg, NULL, 10); break;
		case 'd': g.run.seconds = atoi(optarg); break;
		case 'n': g.run.ntx = strtoul(optarg, NULL, 10); break;
		case 'c': g.clients = atoi(optarg); break;
		case 'k': g.think_ms = atoi(optarg); break;
		case 'f': g.final_seconds = atoi(optarg); break;
		case 'w': g.wait_seconds = atoi(optarg); break;
		case 'H': g.history = optarg; break;
		case 'F': g.faults = optarg; break;
		case 'h': g.db_host = optarg; break;
		case 'p': g.db_port = (unsigned)atoi(optarg); break;
		case 'U': g.db_user = optarg; break;
		case 'P': g.db_password = optarg; break;
		case 'D': g.db_name = optarg; break;
		default: usage(stderr); return 2;
		}
	}
	if (g.nurls == 0 || !g.secret || !g.run.tag || !g.history || !g.faults ||
	    !g.db_host || !g.db_user || !g.db_password || !g.db_name ||
	    g.run.seconds <= 0 || g.run.ntx == 0 || g.clients < 1 ||
	    g.clients > MAX_CLIENTS) {
		usage(stderr);
		return 2;
	}
	/* SIGUSR1 is taken with sigtimedwait, never delivered to a thread. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 ||
	    mysql_library_init(0, NULL, NULL) != 0 || setup_transactions() != 0 ||
	    setup_clients() != 0) {
		fprintf(stderr, PROGRAM ": setup failed\n");
		return 2;
	}

	g.run.start_us = now_us();
	/* The history's times count from here (make chaos-ha's figures). */
	printf("# chaos: workload starts at %lld ms\n",
	       (long long)(g.run.start_us / 1000));
	fflush(stdout);
	g.phase_end_us = g.run.start_us + (int64_t)g.run.seconds * 1000000;
	run_phase("workload");
	/* No request is sent after this, though some may still be answered. */
	g.run.workload_end_us = g.phase_end_us;
	printf("# chaos: workload done (%zu requests); waiting for the faults to "
	       "heal (SIGUSR1)\n", g.run.nrecs);
	fflush(stdout);
	wait.tv_sec = g.wait_seconds;
	wait.tv_nsec = 0;
	if (sigtimedwait(&usr1, NULL, &wait) < 0)
		printf("# chaos: no SIGUSR1 within %d s: final round anyway\n",
		       g.wait_seconds);

	/* The final round: every payment and event, released or not. */
	for (size_t i = 0; i < g.run.ntx; i++) {
		struct chaos_tx *t = &g.run.txs[i];

		t->final_body = t->first200_body == BODY_VARIANT ? BODY_VARIANT :
								  BODY_CANONICAL;
	}
	for (size_t u = 0; u < g.run.ntx + g.run.nevents; u++)
		sched_of(u)->due_us = 0;
	g.final_left = g.run.ntx + g.run.nevents;
	g.final_round = true;
	g.run.final_start_us = now_us();
	g.phase_end_us = g.run.final_start_us + (int64_t)g.final_seconds * 1000000;
	run_phase("final round");
	g.run.final_end_us = now_us();

	if (chaos_write_history(&g.run, g.history) != 0 ||
	    chaos_read_faults(&g.run, g.faults) != 0)
		return 2;
	db = db_open(0, 60);
	if (db == NULL) {
		fprintf(stderr, PROGRAM ": cannot read the final table\n");
		return 2;
	}
	violations = chaos_check(&g.run, db);
	mysql_close(db);
	if (violations >= 0 && g.nnodes > 1) {
		/* Every node must hold what the first one holds. */
		MYSQL *nodes[MAX_NODES] = { NULL };
		char names[MAX_NODES][80];
		const char *name[MAX_NODES];
		long differ;

		for (size_t i = 0; i < g.nnodes; i++) {
			snprintf(names[i], sizeof(names[i]), "%s:%u",
				 g.node_host[i], g.node_port[i]);
			name[i] = names[i];
			nodes[i] = db_open(i, 60);
		}
		differ = chaos_check_nodes(&g.run, nodes, name, g.nnodes);
		for (size_t i = 0; i < g.nnodes; i++)
			if (nodes[i] != NULL)
				mysql_close(nodes[i]);
		violations = differ < 0 ? -1 : violations + differ;
	}
	return violations < 0 ? 2 : violations > 0 ? 1 : 0;
}
