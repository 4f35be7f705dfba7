/* raw_limit.c - benchmark: the ceiling of payhook's design on this machine.
 * Does the least backend work this design needs per webhook, with the same
 * client libraries as payhook (hiredis, libmariadb), directly, with no HTTP
 * and no payhook code: the lock, one INSERT round trip that commits, the
 * release.
 *
 *   SET <lock key> <128-bit hex token> NX PX 30000
 *   INSERT INTO payments (...) VALUES (?,?,?,?)   (prepared; the session is
 *                                                  in autocommit, so the
 *                                                  INSERT commits itself)
 *   EVALSHA <ownership-checking release script>   (EVAL on NOSCRIPT)
 *
 * --procs P processes serve --clients C closed-loop logical clients; a
 * request's latency runs from the moment its client's previous request
 * completed, so the queueing matches a pool of P workers serving C
 * connections. With --queue split (the default) each process serves its own
 * C/P clients round-robin; with --queue shared every process takes the client
 * that has waited longest from one FIFO, as spawn-fcgi workers take the
 * oldest connection from their shared listening socket (a process that is
 * descheduled then delays one request, not its C/P clients). Latencies go into a 1-microsecond histogram
 * and are corrected and summarised the way wrk 4 does it (stats_correct with
 * the interval run time / (requests / connections), rank = round(p * count +
 * 0.5)), so the figures compare with wrk's; --window-ms gives the run time
 * wrk would divide by when the wrk run has a tail without requests (see
 * tests/perf/bench/common.lua). The uncorrected percentiles are printed too
 * (p50u_ms, ...). Prints one line of key=value pairs.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYS_RANDOM_H
#include <sys/random.h>
#endif

#include <errmsg.h>
#include <hiredis/hiredis.h>
#include <mysql.h>
#include <openssl/evp.h>

#define PROGRAM "raw_limit"
#define MAX_PROCS 256
#define TOKEN_BYTES 16
#define LOCK_TTL_MS "30000"
#define ERR_MAX 256
/* The body wrk sends (tests/perf/bench/common.lua, sign_pool.c): keep in step. */
#define BODY_FORMAT                                                            \
	"{\"type\":\"payment.succeeded\",\"transaction_id\":\"%s\","           \
	"\"amount\":1999,\"currency\":\"EUR\","                                \
	"\"created_at\":\"2024-01-01T00:00:00Z\",\"data\":{\"method\":"        \
	"\"card\",\"card\":{\"brand\":\"visa\",\"last4\":\"4242\"},"           \
	"\"customer\":\"cus_0001\",\"description\":\"benchmark order\"}}"

/* Same script as lib/lock.c: 1 deleted ours, 0 gone, -1 someone else's. */
static const char release_script[] =
	"local v = redis.call('GET', KEYS[1])\n"
	"if v == ARGV[1] then return redis.call('DEL', KEYS[1]) end\n"
	"if v then return -1 end\n"
	"return 0\n";

static const char insert_sql[] =
	"INSERT INTO payments (transaction_id, amount, currency, payload) "
	"VALUES (?, ?, ?, ?)";

struct options {
	int procs;
	int clients;
	double seconds;      /* 0: run --requests */
	uint64_t requests;
	const char *prefix;
	uint64_t timeout_us; /* histogram range, like wrk --timeout */
	int64_t window_us;   /* run time for the correction; 0: measured */
	bool shared_queue;   /* --queue shared */
};

/* Shared between the parent and its children (MAP_SHARED). */
struct shared {
	atomic_uint_fast64_t issued;       /* --requests with a shared queue */
	atomic_uint_fast64_t ok;
	atomic_uint_fast64_t errors;
	atomic_uint_fast64_t too_slow;     /* latency beyond the histogram */
	atomic_int_fast64_t started_us[MAX_PROCS];
	atomic_int_fast64_t ended_us[MAX_PROCS];
	atomic_uint_fast64_t hist[];       /* one bin per microsecond */
};

/* The clients waiting for a process with --queue shared: a FIFO of the times
 * they became ready, under a spin lock (held for a few instructions). */
struct queue {
	atomic_flag lock;
	uint64_t head, count, cap;
	int64_t ready_us[];
};

struct backend {
	redisContext *redis;
	MYSQL *mysql;
	MYSQL_STMT *insert;
	char sha[41];
	char err[ERR_MAX];
};

static pid_t children[MAX_PROCS];
static int child_count;

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Formats into b->err and returns -1. */
__attribute__((format(printf, 2, 3)))
static int fail(struct backend *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
	return -1;
}

static const char *env_or(const char *name, const char *fallback)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? v : fallback;
}

static void backend_close(struct backend *b)
{
	if (b->insert != NULL)
		mysql_stmt_close(b->insert);
	if (b->mysql != NULL)
		mysql_close(b->mysql);
	if (b->redis != NULL)
		redisFree(b->redis);
	b->insert = NULL;
	b->mysql = NULL;
	b->redis = NULL;
}

/* Connects to Redis and MySQL with the PAYHOOK_* settings and the session
 * settings of lib/store.c (timeouts, utf8mb4, innodb_lock_wait_timeout = 1,
 * no auto-reconnect), except that autocommit stays on: one round trip per
 * INSERT, which commits it. Returns 0, or -1 with b->err set. */
static int backend_open(struct backend *b)
{
	const char *rsock = env_or("PAYHOOK_REDIS_SOCKET", NULL);
	const char *msock = env_or("PAYHOOK_MYSQL_SOCKET", NULL);
	const char *mhost = env_or("PAYHOOK_MYSQL_HOST", "127.0.0.1");
	struct timeval tv = { .tv_sec = 0, .tv_usec = 500000 };
	unsigned int connect_s = 2, read_s = 2, write_s = 2;
	my_bool reconnect = 0;

	backend_close(b);
	if (rsock != NULL)
		b->redis = redisConnectUnixWithTimeout(rsock, tv);
	else
		b->redis = redisConnectWithTimeout(
			env_or("PAYHOOK_REDIS_HOST", "127.0.0.1"),
			atoi(env_or("PAYHOOK_REDIS_PORT", "6379")), tv);
	if (b->redis == NULL)
		return fail(b, "redis connect: out of memory");
	if (b->redis->err != 0)
		return fail(b, "redis connect: %s", b->redis->errstr);
	if (redisSetTimeout(b->redis, tv) != REDIS_OK)
		return fail(b, "redis: cannot set the timeout");

	b->mysql = mysql_init(NULL);
	if (b->mysql == NULL)
		return fail(b, "mysql: out of memory");
	mysql_options(b->mysql, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
	mysql_options(b->mysql, MYSQL_OPT_READ_TIMEOUT, &read_s);
	mysql_options(b->mysql, MYSQL_OPT_WRITE_TIMEOUT, &write_s);
	mysql_options(b->mysql, MYSQL_OPT_RECONNECT, &reconnect);
	mysql_options(b->mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(b->mysql, MYSQL_INIT_COMMAND,
		      "SET SESSION innodb_lock_wait_timeout = 1");
	if (mysql_real_connect(b->mysql, msock != NULL ? "localhost" : mhost,
			       env_or("PAYHOOK_MYSQL_USER", "payhook"),
			       env_or("PAYHOOK_MYSQL_PASSWORD", NULL),
			       env_or("PAYHOOK_MYSQL_DATABASE", "payhook"),
			       (unsigned int)atoi(env_or("PAYHOOK_MYSQL_PORT",
							 "3306")),
			       msock, 0) == NULL)
		return fail(b, "mysql connect: %u %s", mysql_errno(b->mysql),
			    mysql_error(b->mysql));
	if (mysql_autocommit(b->mysql, 1) != 0)
		return fail(b, "mysql autocommit on: %s", mysql_error(b->mysql));
	b->insert = mysql_stmt_init(b->mysql);
	if (b->insert == NULL)
		return fail(b, "mysql: out of memory for a statement");
	if (mysql_stmt_prepare(b->insert, insert_sql, strlen(insert_sql)) != 0)
		return fail(b, "mysql prepare: %s", mysql_stmt_error(b->insert));
	return 0;
}

static int script_sha1(char out[41])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	if (EVP_Digest(release_script, sizeof(release_script) - 1, md, &md_len,
		       EVP_sha1(), NULL) != 1 || md_len != 20)
		return -1;
	for (unsigned int i = 0; i < md_len; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

static int random_token(char out[2 * TOKEN_BYTES + 1])
{
	unsigned char raw[TOKEN_BYTES];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

static redisReply *release_call(struct backend *b, const char *key,
				size_t key_len, const char *token, bool eval)
{
	const char *argv[5] = { eval ? "EVAL" : "EVALSHA",
				eval ? release_script : b->sha, "1", key, token };
	size_t argl[5] = { strlen(argv[0]),
			   eval ? sizeof(release_script) - 1 : 40, 1, key_len,
			   2 * TOKEN_BYTES };

	return redisCommandArgv(b->redis, 5, argv, argl);
}

/* One webhook's backend work for transaction id. Returns 0, or -1 with
 * b->err set; after a connection fault the backend is closed. */
static int one_request(struct backend *b, const char *id, const char *body,
		       size_t body_len)
{
	char key[192], token[2 * TOKEN_BYTES + 1];
	int key_len = snprintf(key, sizeof(key), "lock:webhook:tx:%s", id);
	const char *argv[6] = { "SET", key, token, "NX", "PX", LOCK_TTL_MS };
	size_t argl[6];
	MYSQL_BIND param[4];
	unsigned long id_len = strlen(id), cur_len = 3, pay_len = body_len;
	unsigned long long amount = 1999;
	redisReply *reply;
	int rc = 0;

	if (key_len < 0 || (size_t)key_len >= sizeof(key))
		return fail(b, "id too long");
	if (random_token(token) != 0)
		return fail(b, "getrandom: %s", strerror(errno));
	argl[0] = 3;
	argl[1] = (size_t)key_len;
	argl[2] = 2 * TOKEN_BYTES;
	argl[3] = 2;
	argl[4] = 2;
	argl[5] = strlen(LOCK_TTL_MS);
	reply = redisCommandArgv(b->redis, 6, argv, argl);
	if (reply == NULL) {
		fail(b, "redis SET: %s", b->redis->errstr);
		backend_close(b);
		return -1;
	}
	if (reply->type != REDIS_REPLY_STATUS || strcmp(reply->str, "OK") != 0)
		rc = fail(b, "redis SET NX: lock not acquired");
	freeReplyObject(reply);
	if (rc != 0)
		return rc;

	memset(param, 0, sizeof(param));
	param[0].buffer_type = MYSQL_TYPE_STRING;
	param[0].buffer = (void *)id;
	param[0].buffer_length = id_len;
	param[0].length = &id_len;
	param[1].buffer_type = MYSQL_TYPE_LONGLONG;
	param[1].buffer = &amount;
	param[1].is_unsigned = 1;
	param[2].buffer_type = MYSQL_TYPE_STRING;
	param[2].buffer = (void *)"EUR";
	param[2].buffer_length = 3;
	param[2].length = &cur_len;
	param[3].buffer_type = MYSQL_TYPE_BLOB;
	param[3].buffer = (void *)body;
	param[3].buffer_length = pay_len;
	param[3].length = &pay_len;
	/* Autocommit: the INSERT's answer says it committed. A client error
	 * (CR_*, 2000 and up: the connection, a timeout) leaves the outcome
	 * unknown and the connection unusable. */
	if (mysql_stmt_bind_param(b->insert, param) != 0 ||
	    mysql_stmt_execute(b->insert) != 0) {
		rc = fail(b, "insert: %u %s", mysql_stmt_errno(b->insert),
			  mysql_stmt_error(b->insert));
		if (mysql_stmt_errno(b->insert) >= CR_MIN_ERROR &&
		    mysql_stmt_errno(b->insert) <= CR_MAX_ERROR)
			backend_close(b);
	}
	if (b->redis == NULL)
		return -1;

	reply = release_call(b, key, (size_t)key_len, token, false);
	if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
	    strncmp(reply->str, "NOSCRIPT", 8) == 0) {
		freeReplyObject(reply);
		reply = release_call(b, key, (size_t)key_len, token, true);
	}
	if (reply == NULL) {
		fail(b, "redis release: %s", b->redis->errstr);
		backend_close(b);
		return -1;
	}
	if (rc == 0 && (reply->type != REDIS_REPLY_INTEGER || reply->integer != 1))
		rc = fail(b, "release: lock not ours any more");
	freeReplyObject(reply);
	return rc;
}

static int clients_of(const struct options *o, int index)
{
	return o->clients / o->procs + (index < o->clients % o->procs);
}

/* Child index's part of --requests: in proportion to its clients, the
 * rounding left-over to child 0. */
static uint64_t quota_of(const struct options *o, int index)
{
	uint64_t rest = o->requests;

	if (index > 0)
		return o->requests * (uint64_t)clients_of(o, index) /
		       (uint64_t)o->clients;
	for (int i = 1; i < o->procs; i++)
		rest -= quota_of(o, i);
	return rest;
}

static void queue_lock(struct queue *q)
{
	for (int spins = 0; atomic_flag_test_and_set(&q->lock); spins++)
		if (spins > 100)
			sched_yield(); /* the holder may be descheduled */
}

/* Takes the longest-waiting client: returns 0 with its ready time, or -1
 * when every client is being served (fewer clients than processes). */
static int queue_take(struct queue *q, int64_t *ready_us)
{
	int rc = -1;

	queue_lock(q);
	if (q->count > 0) {
		*ready_us = q->ready_us[q->head];
		q->head = (q->head + 1) % q->cap;
		q->count--;
		rc = 0;
	}
	atomic_flag_clear(&q->lock);
	return rc;
}

static void queue_put(struct queue *q, int64_t ready_us)
{
	queue_lock(q);
	q->ready_us[(q->head + q->count) % q->cap] = ready_us;
	q->count++;
	atomic_flag_clear(&q->lock);
}

/* The work of child number index until the deadline or its quota: its own
 * clients round-robin, or the shared queue's. Tells the parent on ready_fd
 * once connected, starts when barrier_fd closes. Exits the process. */
_Noreturn static void child_main(const struct options *o, struct shared *sh,
				 struct queue *q, int index, int ready_fd,
				 int barrier_fd, uint64_t bins)
{
	int my_clients = o->shared_queue ? 1 : clients_of(o, index);
	uint64_t quota = o->seconds > 0 ? 0 : quota_of(o, index);
	uint64_t served = 0, seq = 0;
	int64_t *ready = NULL, deadline = 0, t0;
	struct backend b;
	char id[160], body[1024];
	bool reported = false;
	char dummy = 'r';
	int k = 0;

	memset(&b, 0, sizeof(b));
	if (my_clients > 0) {
		ready = calloc((size_t)my_clients, sizeof(*ready));
		if (ready == NULL || script_sha1(b.sha) != 0 ||
		    backend_open(&b) != 0) {
			fprintf(stderr, PROGRAM "[%d]: %s\n", index,
				ready == NULL ? "out of memory" : b.err);
			_exit(1);
		}
	}
	if (write(ready_fd, &dummy, 1) != 1)
		_exit(1);
	close(ready_fd);
	/* Wait for the go: the parent closing its end of the pipe. */
	while (read(barrier_fd, &dummy, 1) < 0 && errno == EINTR)
		;
	close(barrier_fd);
	if (my_clients == 0)
		_exit(0);

	t0 = now_us();
	atomic_store(&sh->started_us[index], t0);
	if (o->seconds > 0)
		deadline = t0 + (int64_t)(o->seconds * 1e6);
	for (int i = 0; i < my_clients; i++)
		ready[i] = t0;
	for (;;) {
		int64_t done, lat, since;
		int len;

		if (o->seconds > 0 && now_us() >= deadline)
			break;
		if (o->seconds <= 0 &&
		    (o->shared_queue ? atomic_fetch_add(&sh->issued, 1) >= o->requests
				     : served >= quota))
			break;
		if (o->shared_queue) {
			/* Only with fewer clients than processes. */
			while (queue_take(q, &since) != 0)
				usleep(20);
		} else {
			since = ready[k];
		}
		snprintf(id, sizeof(id), "%s-%d-%" PRIu64, o->prefix, index, seq++);
		len = snprintf(body, sizeof(body), BODY_FORMAT, id);
		if (b.redis == NULL && backend_open(&b) != 0) {
			atomic_fetch_add(&sh->errors, 1);
		} else if (one_request(&b, id, body, (size_t)len) != 0) {
			atomic_fetch_add(&sh->errors, 1);
			if (!reported)
				fprintf(stderr, PROGRAM "[%d]: first error: %s\n",
					index, b.err);
			reported = true;
		} else {
			atomic_fetch_add(&sh->ok, 1);
		}
		done = now_us();
		lat = done - since;
		if ((uint64_t)lat < bins)
			atomic_fetch_add(&sh->hist[lat], 1);
		else
			atomic_fetch_add(&sh->too_slow, 1);
		if (o->shared_queue) {
			queue_put(q, done);
		} else {
			ready[k] = done;
			k = (k + 1) % my_clients;
		}
		served++;
	}
	atomic_store(&sh->ended_us[index], now_us());
	backend_close(&b);
	free(ready);
	_exit(0);
}

static void kill_children(void)
{
	for (int i = 0; i < child_count; i++)
		if (children[i] > 0)
			kill(children[i], SIGTERM);
}

/* Stopped from outside: stop the children too, then die of the signal. */
static void forward_signal(int signo)
{
	kill_children();
	signal(signo, SIG_DFL);
	raise(signo);
}

/* wrk's percentile over a 1-us histogram: the smallest value whose
 * cumulative count reaches round(p / 100 * count + 0.5) (for x >= 0,
 * round(x + 0.5) is floor(x + 1)). */
static uint64_t percentile(const uint64_t *h, uint64_t lo, uint64_t hi,
			   uint64_t count, double p)
{
	uint64_t rank = (uint64_t)(p / 100.0 * (double)count + 1.0);
	uint64_t total = 0;

	for (uint64_t i = lo; i <= hi; i++) {
		total += h[i];
		if (total >= rank)
			return i;
	}
	return hi;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: " PROGRAM " [--procs P] [--clients C] (--seconds S | "
		"--requests N)\n"
		"                 [--queue split|shared] [--id-prefix PREFIX]\n"
		"                 [--timeout-ms MS] [--window-ms MS]\n"
		"Does the least backend work per webhook of payhook's design "
		"(Redis lock, one\nautocommitted INSERT, release) with P "
		"processes serving C closed-loop clients;\nconnection settings "
		"from PAYHOOK_REDIS_* and PAYHOOK_MYSQL_*. Prints one\n"
		"key=value line.\n");
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "procs", required_argument, NULL, 'p' },
		{ "clients", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' },
		{ "requests", required_argument, NULL, 'n' },
		{ "id-prefix", required_argument, NULL, 'i' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "window-ms", required_argument, NULL, 'w' },
		{ "queue", required_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	o->procs = 8;
	o->clients = 8;
	o->seconds = 0;
	o->requests = 0;
	o->prefix = "raw";
	o->timeout_us = 10000000;
	o->window_us = 0;
	o->shared_queue = false;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			o->procs = atoi(optarg);
			break;
		case 'c':
			o->clients = atoi(optarg);
			break;
		case 's':
			o->seconds = strtod(optarg, NULL);
			break;
		case 'n':
			o->requests = strtoull(optarg, NULL, 10);
			break;
		case 'i':
			o->prefix = optarg;
			break;
		case 't':
			o->timeout_us = strtoull(optarg, NULL, 10) * 1000;
			break;
		case 'w':
			o->window_us = strtoll(optarg, NULL, 10) * 1000;
			break;
		case 'q':
			if (strcmp(optarg, "shared") != 0 &&
			    strcmp(optarg, "split") != 0) {
				usage(stderr);
				return -1;
			}
			o->shared_queue = strcmp(optarg, "shared") == 0;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc || o->procs < 1 || o->procs > MAX_PROCS ||
	    o->clients < 1 || (o->seconds <= 0) == (o->requests == 0) ||
	    o->timeout_us < 1000 || strlen(o->prefix) > 100) {
		fprintf(stderr, PROGRAM ": need 1 <= procs <= %d, clients >= 1, "
				"exactly one of --seconds and --requests, a "
				"prefix of at most 100 bytes\n", MAX_PROCS);
		usage(stderr);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	struct shared *sh;
	struct queue *q;
	size_t qsize;
	uint64_t bins, lo = UINT64_MAX, hi = 0, count = 0, complete, *h;
	int64_t first = INT64_MAX, last = 0, elapsed_us, window_us, interval;
	double u50, u99, u999;
	size_t size;
	int barrier[2], ready[2], status, failed = 0, got = 0;
	uint64_t errors;
	char byte;
	ssize_t nread;

	if (parse_options(argc, argv, &o) != 0)
		return 2;
	bins = o.timeout_us + 1;
	size = sizeof(*sh) + bins * sizeof(sh->hist[0]);
	/* Untouched pages of the histogram cost nothing. */
	sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	qsize = sizeof(*q) + (size_t)o.clients * sizeof(q->ready_us[0]);
	q = mmap(NULL, qsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		 -1, 0);
	if (sh == MAP_FAILED || q == MAP_FAILED || pipe(barrier) != 0 ||
	    pipe(ready) != 0) {
		perror(PROGRAM ": mmap/pipe");
		return 1;
	}
	signal(SIGTERM, forward_signal);
	signal(SIGINT, forward_signal);
	for (int i = 0; i < o.procs; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror(PROGRAM ": fork");
			kill_children();
			return 1;
		}
		if (pid == 0) {
			close(barrier[1]);
			close(ready[0]);
			child_main(&o, sh, q, i, ready[1], barrier[0], bins);
		}
		children[child_count++] = pid;
	}
	close(barrier[0]);
	close(ready[1]);
	/* One byte from each child once connected; end of file early means
	 * one of them failed. */
	while (got < o.procs) {
		nread = read(ready[0], &byte, 1);
		if (nread == 1)
			got++;
		else if (nread == 0 || errno != EINTR)
			break;
	}
	close(ready[0]);
	if (got < o.procs)
		kill_children();
	/* Every client is ready from the go. */
	atomic_flag_clear(&q->lock);
	q->cap = (uint64_t)o.clients;
	q->head = 0;
	q->count = (uint64_t)o.clients;
	{
		int64_t go = now_us();

		for (int c = 0; c < o.clients; c++)
			q->ready_us[c] = go;
	}
	close(barrier[1]);
	for (int c = 0; c < child_count; c++) {
		if (waitpid(children[c], &status, 0) == children[c] &&
		    (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
			failed = 1;
	}
	child_count = 0;
	if (failed) {
		fprintf(stderr, PROGRAM ": a worker process failed\n");
		return 1;
	}

	for (int i = 0; i < o.procs; i++) {
		int64_t s = atomic_load(&sh->started_us[i]);
		int64_t e = atomic_load(&sh->ended_us[i]);

		if (s != 0 && s < first)
			first = s;
		if (e > last)
			last = e;
	}
	/* Plain reads from here on: the children are gone. */
	h = (uint64_t *)(void *)sh->hist;
	for (uint64_t i = 0; i < bins; i++) {
		if (h[i] == 0)
			continue;
		if (i < lo)
			lo = i;
		hi = i;
		count += h[i];
	}
	complete = count;
	elapsed_us = last > first ? last - first : 1;
	window_us = o.window_us > 0 ? o.window_us : elapsed_us;
	if (count == 0)
		lo = hi = 0;
	u50 = percentile(h, lo, hi, count, 50.0) / 1000.0;
	u99 = percentile(h, lo, hi, count, 99.0) / 1000.0;
	u999 = percentile(h, lo, hi, count, 99.9) / 1000.0;
	/* wrk's coordinated-omission correction, with the same interval. */
	if (count > 0 && complete / (uint64_t)o.clients > 0) {
		interval = window_us / (int64_t)(complete / (uint64_t)o.clients);
		for (uint64_t n = (uint64_t)interval * 2; interval > 0 && n <= hi;
		     n++) {
			uint64_t c = h[n];
			int64_t m = (int64_t)n - interval;

			while (c > 0 && m > interval) {
				h[m] += c;
				count += c;
				m -= interval;
			}
		}
	}
	printf("raw_limit queue=%s procs=%d clients=%d requests=%" PRIu64 " ok=%" PRIu64
	       " errors=%" PRIu64 " too_slow=%" PRIu64 " seconds=%.3f rps=%.1f"
	       " p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f"
	       " p50u_ms=%.3f p99u_ms=%.3f p999u_ms=%.3f\n",
	       o.shared_queue ? "shared" : "split", o.procs, o.clients,
	       complete + atomic_load(&sh->too_slow),
	       (uint64_t)atomic_load(&sh->ok), (uint64_t)atomic_load(&sh->errors),
	       (uint64_t)atomic_load(&sh->too_slow), (double)elapsed_us / 1e6,
	       (double)complete * 1e6 / (double)elapsed_us,
	       percentile(h, lo, hi, count, 50.0) / 1000.0,
	       percentile(h, lo, hi, count, 99.0) / 1000.0,
	       percentile(h, lo, hi, count, 99.9) / 1000.0, hi / 1000.0, u50,
	       u99, u999);
	errors = (uint64_t)atomic_load(&sh->errors);
	munmap(sh, size);
	munmap(q, qsize);
	return errors > 0 ? 1 : 0;
}
