/* chaos.h - what the chaos client (chaos_client.c) records of every request
 * it makes, and what the checker (chaos_check.c) judges from it. See
 * tests/perf/chaos/chaos.sh for the run as a whole.
 */
#ifndef PAYHOOK_CHAOS_H
#define PAYHOOK_CHAOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mysql.h>

#include "lifecycle.h"

/* Why a request was sent. */
enum chaos_kind {
	KIND_FIRST,      /* a transaction's first delivery */
	KIND_RETRY,      /* after a non-2xx, once its Retry-After has passed */
	KIND_REDELIVERY, /* at least once: a delivery already answered 2xx */
	KIND_BURST,      /* one of several copies sent at the same instant */
	KIND_CONFLICT,   /* the same id with another amount or currency */
	KIND_BAD,        /* a body no rule accepts (amount 1.5) */
	KIND_BADSIG,     /* a body signed with another secret */
	KIND_HANGUP,     /* the client hangs up before the answer */
	KIND_FINAL,      /* the final round, after the faults stopped */
	KIND_COUNT
};

/* Which body of its transaction a request carried. */
enum chaos_body { BODY_CANONICAL, BODY_VARIANT, BODY_BAD };

/* The "result" of payhook's JSON answer; OUT_OTHER is an answer that is not
 * payhook's (the web server's own error page), OUT_NONE no answer at all. */
enum chaos_outcome {
	OUT_NONE,
	OUT_PROCESSED,
	OUT_DUPLICATE,
	OUT_IGNORED,
	OUT_IN_PROGRESS,
	OUT_CONFLICT,
	OUT_INVALID,
	OUT_UNAUTHORIZED,
	OUT_UNAVAILABLE,
	OUT_ERROR,
	OUT_OTHER,
	OUT_COUNT
};

/* What the checker's own connection read right after a 200. */
enum chaos_seen {
	SEEN_NOT_CHECKED, /* not a 200 */
	SEEN_ROW,         /* the row, with this request's amount and currency */
	SEEN_NO_ROW,      /* nothing committed: the 200 came first */
	SEEN_OTHER_ROW,   /* a row with another amount or currency */
	SEEN_UNREACHABLE, /* MariaDB did not answer the check (a fault) */
};

/* One request and its answer. Times are CLOCK_REALTIME microseconds, the
 * clock chaos.sh writes the fault log with. */
struct chaos_rec {
	int64_t sent_us, answered_us;
	int32_t check_us;    /* from the answer to the check's reply */
	uint32_t tx;         /* index of the transaction */
	int32_t ev;          /* index of the lifecycle event, -1: the payment */
	int16_t status;      /* HTTP status, 0 = no answer */
	int16_t curl_code;   /* CURLcode of the transfer */
	int16_t retry_after; /* seconds, -1 when absent */
	uint8_t kind, body, outcome, seen, client;
	uint8_t host;        /* index of the URL (app host) it went to */
};

/* Workload state of one thing the client delivers (a payment or a
 * lifecycle event), under the client's lock. */
struct chaos_sched {
	bool final_done;    /* the final round got its 2xx */
	int64_t due_us;     /* a retry is due then; 0 = none pending */
};

/* One transaction of the fixed set; amount and currency of each body. */
struct chaos_tx {
	int64_t amount[2];
	char currency[2][4];
	struct chaos_sched sched;
	int first200_body;  /* body of the first 200, -1 before it */
	int final_body;     /* body the final round sends now */
};

/* One lifecycle event of the workload: one state of one object (a refund,
 * a dispute or a cancellation) of transaction tx, at its event time, in
 * the transaction's canonical currency (the transactions that have events
 * keep one currency in both bodies). Every delivery carries the same body,
 * the standard profile's. */
struct chaos_event {
	uint32_t tx;
	uint32_t object;     /* the object's number, unique in the run */
	uint8_t kind;        /* enum lifecycle_kind */
	uint8_t state;       /* enum lifecycle_state */
	int64_t amount;      /* minor units */
	int64_t occurred_at; /* Unix seconds */
	/* First sent once the payment of this transaction index is (one
	 * below tx: before its own payment). */
	long release_after;
	struct chaos_sched sched;
};

/* A fault from chaos.sh's log: "MS begin ID KIND DETAIL" and "MS end ID". */
struct chaos_fault {
	int id;
	int64_t begin_us, end_us; /* end_us = INT64_MAX when never ended */
	char kind[24];
	char detail[96];
};

struct chaos_run {
	const char *tag;     /* transaction ids are TAG-INDEX */
	unsigned long seed;
	int seconds;         /* workload duration */
	size_t ntx;
	struct chaos_tx *txs;
	struct chaos_event *events; /* by release_after */
	size_t nevents, nobjects;
	struct chaos_rec *recs;
	size_t nrecs;
	int64_t start_us, workload_end_us, final_start_us, final_end_us;
	struct chaos_fault *faults;
	size_t nfaults;
};

/* The id of transaction i: "TAG-i" into out (size bytes). */
void chaos_tx_id(const struct chaos_run *run, size_t i, char *out, size_t size);

/* The object id of event e: "TAG-i-reN" (refund), "-dpN" (dispute) or
 * "-cnN" (cancellation), N its object number, into out (size bytes). */
void chaos_object_id(const struct chaos_run *run, const struct chaos_event *e,
		     char *out, size_t size);

/* -1, 0 or 1 as event x comes before, with or after y by transaction,
 * object, event time, then state. Can't fail. */
int chaos_event_order(const struct chaos_event *x, const struct chaos_event *y);

/* Event e as lifecycle_supersedes compares it (object id and link left
 * empty). Can't fail. */
void chaos_event_model(const struct chaos_event *e, struct lifecycle_event *out);

extern const char *const chaos_kind_names[KIND_COUNT];
extern const char *const chaos_outcome_names[OUT_COUNT];

/* Reads chaos.sh's fault log into run->faults. Returns 0, or -1 (message on
 * stderr) when the file cannot be read. */
int chaos_read_faults(struct chaos_run *run, const char *path);

/* Writes the whole history, one tab-separated line per request in the order
 * they were sent, to path. Returns 0 or -1. */
int chaos_write_history(const struct chaos_run *run, const char *path);

/* Judges the history and the final table read over db; prints the report
 * and every violation (with the seed and the history of the transaction
 * concerned) on stdout. Returns the number of violations, or -1 when the
 * final table cannot be read. */
long chaos_check(struct chaos_run *run, MYSQL *db);

/* Reads the run's rows (payments and payment_events of its transactions)
 * from every node (db[i] connected to the node named name[i], NULL when it
 * could not be reached) and prints, per node, a digest of them; a node
 * unreachable or whose digest differs from the first node's is a
 * violation, printed. Returns the number of violations, or -1 when the
 * first node cannot be read. */
long chaos_check_nodes(const struct chaos_run *run, MYSQL **db,
		       const char *const *name, size_t n);

#endif
