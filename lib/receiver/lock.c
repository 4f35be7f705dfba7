/* lock.c - the per-transaction Redis lock (see lock.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYS_RANDOM_H
#include <sys/random.h>
#endif

#include <hiredis/hiredis.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "encoding.h"
#include "endpoint.h"
#include "lock.h"
#include "log.h"
#include "sentinel.h"
#include "timing.h"

/* 1: deleted our key; 0: no key (lease ran out); -1: someone else's key. */
static const char release_script[] =
	"local v = redis.call('GET', KEYS[1])\n"
	"if v == ARGV[1] then return redis.call('DEL', KEYS[1]) end\n"
	"if v then return -1 end\n"
	"return 0\n";

struct lock_client {
	const struct config *cfg;
	redisContext *redis;
	/* redis_sentinels: asked in turn, starting with the one that answered
	 * last; the master found, for logs and --check-config. */
	struct endpoint sentinels[ENDPOINT_LIST_MAX];
	size_t sentinel_count;
	size_t sentinel;
	struct endpoint master;
	enum lock_fault fault;   /* of the last call */
	char script_sha[41]; /* SHA1 of release_script, for EVALSHA */
	/* The connected server's INFO run_id ("" when it would not say): the
	 * early marks are complete only on the process that holds them. */
	char run_id[48];
	/* Its maxmemory-policy ("" when it would not say), read on connect
	 * and again every POLICY_CHECK_US; evicts: a policy that may evict
	 * keys without a TTL (allkeys-*), or an unknown one. The marks are
	 * such keys: under it they are never taken as complete. */
	char policy[32];
	bool evicts;
	int64_t policy_checked_us;
};

/* How often a kept connection asks its server's maxmemory-policy again
 * (an operator's CONFIG SET changes it without a reconnect). */
#define POLICY_CHECK_US 10000000LL

/* The keys of the early marks (lock.h, enum lock_early): outside
 * lock_key_prefix, so that no lock key is ever one of them. */
#define EARLY_MARK "payhook:early:"            /* + the lease's key */
#define EARLY_COMPLETE "payhook:early-complete:" /* + lock_key_prefix */
#define EARLY_REBUILD "payhook:early-rebuild:"   /* + lock_key_prefix */
#define EARLY_KEY_MAX (LOCK_KEY_MAX + 32)

enum lock_fault lock_last_fault(const struct lock_client *client)
{
	return client->fault;
}

long lock_lease_remaining_ms(const struct lock_lease *lease)
{
	int64_t elapsed_us = timing_now_us() - lease->started_us;

	return lease->ttl_ms - (long)(elapsed_us / 1000);
}

/* The script's SHA1 is what Redis names it by; computing it here spares a
 * SCRIPT LOAD round trip. */
static int script_sha1(char out[41], struct error *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	if (EVP_Digest(release_script, sizeof(release_script) - 1, md, &md_len,
		       EVP_sha1(), NULL) != 1 || md_len != 20)
		return error_set(err, "lock: SHA1 of the release script failed");
	encoding_hex_encode(md, md_len, out);
	return 0;
}

struct lock_client *lock_client_new(const struct config *cfg, struct error *err)
{
	struct lock_client *client = calloc(1, sizeof(*client));

	if (client == NULL) {
		error_set(err, "lock: out of memory");
		return NULL;
	}
	client->cfg = cfg;
	if (script_sha1(client->script_sha, err) != 0 ||
	    (cfg->redis_sentinels != NULL &&
	     endpoint_list_parse(cfg->redis_sentinels, 26379, client->sentinels,
				 &client->sentinel_count, err) != 0)) {
		free(client);
		return NULL;
	}
	return client;
}

static void lock_disconnect(struct lock_client *client)
{
	if (client->redis != NULL) {
		redisFree(client->redis);
		client->redis = NULL;
	}
}

void lock_client_free(struct lock_client *client)
{
	if (client == NULL)
		return;
	lock_disconnect(client);
	free(client);
}

static struct timeval ms_to_timeval(int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	return tv;
}

/* Runs a command that must answer +OK; on failure drops the connection. */
static int command_expect_ok(struct lock_client *client, const char *what,
			     int argc, const char **argv, struct error *err)
{
	redisReply *reply = redisCommandArgv(client->redis, argc, argv, NULL);
	int rc = 0;

	if (reply == NULL) {
		rc = error_set(err, "redis %s: %s", what, client->redis->errstr);
	} else if (reply->type == REDIS_REPLY_ERROR) {
		rc = error_set(err, "redis %s: %s", what, reply->str);
	}
	freeReplyObject(reply);
	if (rc != 0)
		lock_disconnect(client);
	return rc;
}

/* Opens the connection to one server (the socket when host is NULL) with
 * AUTH and SELECT as configured. Returns 0, or -1 with err set and nothing
 * left open. */
static int open_server(struct lock_client *client, const char *host, int port,
		       struct error *err)
{
	const struct config *cfg = client->cfg;
	struct timeval tv = ms_to_timeval(cfg->redis_timeout_ms);
	char db[16];

	if (host == NULL)
		client->redis = redisConnectUnixWithTimeout(cfg->redis_socket, tv);
	else
		client->redis = redisConnectWithTimeout(host, port, tv);
	if (client->redis == NULL)
		return error_set(err, "redis connect: out of memory");
	if (client->redis->err != 0) {
		if (host == NULL)
			error_set(err, "redis connect to %s: %s",
				  cfg->redis_socket, client->redis->errstr);
		else
			error_set(err, "redis connect to %s:%d: %s", host, port,
				  client->redis->errstr);
		lock_disconnect(client);
		return -1;
	}
	if (redisSetTimeout(client->redis, tv) != REDIS_OK) {
		lock_disconnect(client);
		return error_set(err, "redis: cannot set the command timeout");
	}
	if (cfg->redis_password != NULL) {
		const char *argv[] = { "AUTH", cfg->redis_password };

		if (command_expect_ok(client, "AUTH", 2, argv, err) != 0)
			return -1;
	}
	if (cfg->redis_db != 0) {
		const char *argv[] = { "SELECT", db };

		snprintf(db, sizeof(db), "%d", cfg->redis_db);
		if (command_expect_ok(client, "SELECT", 2, argv, err) != 0)
			return -1;
	}
	return 0;
}

/* A sentinel's answer may be stale (it has not yet seen a failover): only a
 * server that says it is the master is used. Drops the connection when it
 * is not. */
static int check_master_role(struct lock_client *client, struct error *err)
{
	const char *argv[] = { "ROLE" };
	redisReply *reply = redisCommandArgv(client->redis, 1, argv, NULL);
	int rc = 0;

	if (reply == NULL)
		rc = error_set(err, "redis ROLE at %s:%d: %s", client->master.host,
			       client->master.port, client->redis->errstr);
	else if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
		 reply->element[0]->type != REDIS_REPLY_STRING ||
		 strcmp(reply->element[0]->str, "master") != 0)
		rc = error_set(err, "redis %s:%d is not the master (ROLE: %s)",
			       client->master.host, client->master.port,
			       reply->type == REDIS_REPLY_ERROR ? reply->str :
			       reply->type == REDIS_REPLY_ARRAY &&
			       reply->elements >= 1 &&
			       reply->element[0]->type == REDIS_REPLY_STRING ?
			       reply->element[0]->str : "?");
	freeReplyObject(reply);
	if (rc != 0)
		lock_disconnect(client);
	return rc;
}

/* Whether the master named now is another server than before (a port of 0:
 * no master known before). */
static bool master_moved(const struct endpoint *before,
			 const struct endpoint *now)
{
	return before->port != 0 && (before->port != now->port ||
				     strcmp(before->host, now->host) != 0);
}

/* Asks the sentinels in turn for the master and connects to it. Every
 * connection fault drops the connection, so the master is found again after
 * any error, timeout or READONLY. */
static int connect_via_sentinels(struct lock_client *client, struct error *err)
{
	const struct config *cfg = client->cfg;
	struct endpoint before = client->master;

	for (size_t tried = 0; tried < client->sentinel_count; tried++) {
		const struct endpoint *sentinel =
			&client->sentinels[client->sentinel];

		if (sentinel_ask_master(sentinel, cfg->redis_master_name,
					cfg->redis_timeout_ms, &client->master,
					err) == 0 &&
		    open_server(client, client->master.host,
				client->master.port, err) == 0 &&
		    check_master_role(client, err) == 0) {
			if (master_moved(&before, &client->master))
				log_warn("redis: the master is now %s:%d "
					 "(was %s:%d)", client->master.host,
					 client->master.port, before.host,
					 before.port);
			return 0;
		}
		client->sentinel = (client->sentinel + 1) % client->sentinel_count;
	}
	return -1;
}

/* Asks INFO section and copies the value of its field name ("run_id")
 * into out (cap bytes); "" when the server would not say or it does not
 * fit. Returns 0, or -1 when the connection failed (no reply). */
static int info_field(struct lock_client *client, const char *section,
		      const char *name, char *out, size_t cap)
{
	const char *argv[] = { "INFO", section };
	redisReply *reply = redisCommandArgv(client->redis, 2, argv, NULL);
	size_t name_len = strlen(name);
	const char *at;
	size_t len;

	out[0] = '\0';
	if (reply != NULL && reply->type == REDIS_REPLY_STRING &&
	    (at = strstr(reply->str, name)) != NULL && at[name_len] == ':') {
		at += name_len + 1;
		len = strcspn(at, "\r\n");
		if (len > 0 && len < cap) {
			memcpy(out, at, len);
			out[len] = '\0';
		}
	}
	freeReplyObject(reply);
	return reply != NULL ? 0 : -1;
}

static int early_command(struct lock_client *client, const char *what,
			 int argc, const char **argv, const size_t *argl,
			 redisReply **reply, struct error *err);
static size_t early_key(char *out, const char *prefix, const char *suffix,
			size_t suffix_len);

/* Whether a server's maxmemory-policy may evict a key without a TTL:
 * allkeys-lru, allkeys-lfu, allkeys-random, and any policy it would not
 * name. noeviction and the volatile-* policies evict none (they evict
 * keys with a TTL only: a lock, never a mark). */
static bool policy_evicts(const char *policy)
{
	return policy[0] == '\0' || strncmp(policy, "allkeys-", 8) == 0;
}

/* Reads the server's maxmemory-policy (INFO memory). When it may evict
 * the early marks, they are never complete: the completeness key is
 * deleted (so that once the policy keeps keys again, the marks that were
 * evicted meanwhile are rebuilt) and a warning logged when it becomes
 * so. Called on a fresh connection and every POLICY_CHECK_US; a failure
 * leaves the connection to the command that follows. */
static void read_policy(struct lock_client *client)
{
	const char *prefix = client->cfg->lock_key_prefix;
	char complete[EARLY_KEY_MAX];
	const char *del[2] = { "DEL", complete };
	bool evicted_before = client->evicts;
	struct error err;

	client->policy_checked_us = timing_now_us();
	if (info_field(client, "memory", "maxmemory_policy", client->policy,
		       sizeof(client->policy)) != 0)
		return;
	client->evicts = policy_evicts(client->policy);
	if (!client->evicts)
		return;
	early_key(complete, EARLY_COMPLETE, prefix, strlen(prefix));
	if (early_command(client, "DEL early complete", 2, del, NULL, NULL,
			  &err) != 0)
		log_warn("%s", err.message);
	if (!evicted_before)
		log_warn("redis: maxmemory-policy %s may evict the early marks "
			 "(keys without a TTL): every payment's INSERT asks "
			 "MySQL for events recorded before it (slower, never "
			 "wrong); set maxmemory-policy noeviction (or a "
			 "volatile-* policy) on this server",
			 client->policy[0] != '\0' ? client->policy : "(unknown)");
}

/* After this worker followed the master to another server: the early
 * marks it (or any worker still on the old master) set there since the
 * sentinels promoted the new one are lost (replication is asynchronous, and
 * an old master cut off from the sentinels keeps taking writes until it is
 * demoted), while the new master may already hold marks declared complete
 * by a rebuild of its own. A payment would then read "complete, none" and
 * skip its events' totals. Deleting the completeness key makes the marks
 * incomplete: payments probe MySQL, and the next rebuild recomputes the
 * totals of every payment that has events. */
static void forget_complete(struct lock_client *client)
{
	const char *prefix = client->cfg->lock_key_prefix;
	char complete[EARLY_KEY_MAX];
	const char *del[2] = { "DEL", complete };
	struct error err;

	early_key(complete, EARLY_COMPLETE, prefix, strlen(prefix));
	if (early_command(client, "DEL early complete", 2, del, NULL, NULL,
			  &err) != 0)
		log_warn("%s", err.message);
}

int lock_connect(struct lock_client *client, struct error *err)
{
	const struct config *cfg = client->cfg;
	struct endpoint before = client->master;

	if (client->redis != NULL && client->redis->err == 0)
		return 0;
	lock_disconnect(client);
	/* Whatever fails from here on is the connection's set-up. */
	client->fault = LOCK_FAULT_CONNECT;
	if (client->sentinel_count > 0) {
		if (connect_via_sentinels(client, err) != 0)
			return -1;
	} else if (open_server(client,
			       cfg->redis_socket != NULL ? NULL : cfg->redis_host,
			       cfg->redis_port, err) != 0) {
		return -1;
	}
	/* No run_id (a renamed INFO, say): the early marks are never taken
	 * as complete, and every payment's INSERT asks MySQL. */
	info_field(client, "server", "run_id", client->run_id,
		   sizeof(client->run_id));
	read_policy(client);
	if (client->sentinel_count > 0 && master_moved(&before, &client->master))
		forget_complete(client);
	if (client->redis == NULL || client->redis->err != 0) {
		error_set(err, "redis INFO memory: %s", client->redis != NULL ?
			  client->redis->errstr : "the connection failed");
		lock_disconnect(client);
		return -1;
	}
	client->fault = LOCK_FAULT_NONE;
	return 0;
}

int lock_describe(struct lock_client *client, char *out, size_t out_size)
{
	const struct config *cfg = client->cfg;
	struct error err;

	if (lock_ping(client, &err) != 0) {
		snprintf(out, out_size, "%s", err.message);
		return -1;
	}
	if (client->sentinel_count > 0)
		snprintf(out, out_size, "master %s:%d, named %s by sentinel "
			 "%s:%d, ROLE master", client->master.host,
			 client->master.port, cfg->redis_master_name,
			 client->sentinels[client->sentinel].host,
			 client->sentinels[client->sentinel].port);
	else if (cfg->redis_socket != NULL)
		snprintf(out, out_size, "%s", cfg->redis_socket);
	else
		snprintf(out, out_size, "%s:%d", cfg->redis_host,
			 cfg->redis_port);
	return 0;
}

int lock_eviction_warning(struct lock_client *client, char *out,
			  size_t out_size)
{
	struct error err;

	if (lock_connect(client, &err) != 0)
		return 0;
	if (!client->evicts)
		return 0;
	snprintf(out, out_size, "maxmemory-policy %s may evict the early "
		 "marks (keys without a TTL): payments are recorded right, "
		 "but every payment's INSERT asks MySQL for events recorded "
		 "before it (slower); set maxmemory-policy noeviction or a "
		 "volatile-* policy", client->policy[0] != '\0' ?
		 client->policy : "(unknown)");
	return 1;
}

size_t lock_sentinel_count(const struct lock_client *client)
{
	return client->sentinel_count;
}

int lock_probe_sentinel(const struct lock_client *client, size_t index,
			char *out, size_t out_size)
{
	const struct endpoint *sentinel = &client->sentinels[index];
	struct endpoint master;
	struct error err;

	if (sentinel_ask_master(sentinel, client->cfg->redis_master_name,
				client->cfg->redis_timeout_ms, &master,
				&err) != 0) {
		snprintf(out, out_size, "%s", err.message);
		return -1;
	}
	snprintf(out, out_size, "sentinel %s:%d: master %s is %s:%d",
		 sentinel->host, sentinel->port, client->cfg->redis_master_name,
		 master.host, master.port);
	return 0;
}

int lock_ping(struct lock_client *client, struct error *err)
{
	const char *argv[] = { "PING" };
	redisReply *reply;
	int rc = 0;

	/* A kept connection the server closed (a restart) says nothing of
	 * the server now: one fresh connection decides. */
	for (int attempt = 0; attempt < 2; attempt++) {
		bool kept = client->redis != NULL;

		if (lock_connect(client, err) != 0)
			return -1;
		reply = redisCommandArgv(client->redis, 1, argv, NULL);
		if (reply == NULL)
			rc = error_set(err, "redis PING: %s", client->redis->errstr);
		else if (reply->type == REDIS_REPLY_ERROR)
			rc = error_set(err, "redis PING: %s", reply->str);
		else
			rc = 0;
		freeReplyObject(reply);
		if (rc == 0)
			return 0;
		lock_disconnect(client);
		if (!kept)
			break;
	}
	return rc;
}

/* The OS's random bytes for the tokens, asked RANDOM_POOL bytes at a
 * time: one getrandom per 16 tokens instead of one each. A forked child
 * never uses its parent's (forget_random); without the fork handler
 * every token asks the OS itself. */
#define RANDOM_POOL 256
static unsigned char random_pool[RANDOM_POOL];
static size_t random_left;
static bool random_pooled; /* forget_random registered */

static void forget_random(void)
{
	OPENSSL_cleanse(random_pool, sizeof(random_pool));
	random_left = 0;
}

static void pool_random(void)
{
	random_pooled = pthread_atfork(NULL, NULL, forget_random) == 0;
}

/* Fills out with len bytes from getrandom. Returns 0, or -1 with err set. */
static int os_random(unsigned char *out, size_t len, struct error *err)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(out + got, len - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return error_set(err, "lock: getrandom: %s",
					 strerror(errno));
		}
		got += (size_t)n;
	}
	return 0;
}

static int random_token(char out[LOCK_TOKEN_HEX + 1], struct error *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	unsigned char raw[LOCK_TOKEN_HEX / 2];
	unsigned char *bytes = raw;

	(void)pthread_once(&once, pool_random);
	if (!random_pooled) {
		if (os_random(raw, sizeof(raw), err) != 0)
			return -1;
	} else {
		if (random_left < sizeof(raw)) {
			if (os_random(random_pool, sizeof(random_pool), err) != 0)
				return -1;
			random_left = sizeof(random_pool);
		}
		random_left -= sizeof(raw);
		bytes = random_pool + random_left;
	}
	encoding_hex_encode(bytes, sizeof(raw), out);
	/* Used once: no later token, nor a dump, holds it. */
	OPENSSL_cleanse(bytes, sizeof(raw));
	return 0;
}

/* Writes prefix + suffix into out (EARLY_KEY_MAX bytes); returns its
 * length. */
static size_t early_key(char *out, const char *prefix, const char *suffix,
			size_t suffix_len)
{
	size_t prefix_len = strlen(prefix);

	memcpy(out, prefix, prefix_len);
	memcpy(out + prefix_len, suffix, suffix_len);
	out[prefix_len + suffix_len] = '\0';
	return prefix_len + suffix_len;
}

/* What the MGET of the completeness key and lease's mark says. */
static enum lock_early read_early(const struct lock_client *client,
				  const redisReply *reply)
{
	const redisReply *complete, *mark;

	if (reply == NULL || reply->type != REDIS_REPLY_ARRAY ||
	    reply->elements != 2 || client->run_id[0] == '\0')
		return LOCK_EARLY_UNKNOWN;
	complete = reply->element[0];
	mark = reply->element[1];
	if (mark->type == REDIS_REPLY_STRING)
		return LOCK_EARLY_MARKED;
	/* A policy that may evict marks: their absence says nothing, and a
	 * rebuild would not make them last. */
	if (client->evicts)
		return LOCK_EARLY_UNKNOWN;
	if (complete->type == REDIS_REPLY_STRING &&
	    strcmp(complete->str, client->run_id) == 0)
		return LOCK_EARLY_NONE;
	return LOCK_EARLY_INCOMPLETE;
}

/* Sends the SET NX PX of lease (ttl as text) and, in the same round trip,
 * the MGET of the early marks' completeness key and lease's mark, and
 * reads both answers. On LOCK_UNAVAILABLE err and client->fault say why
 * and the connection is dropped: an error reply means a wrong or unready
 * server (READONLY after a failover, LOADING, NOAUTH, OOM...), so the next
 * connection, which may reach the new master, is better than asking this
 * one again. */
static enum lock_status send_set(struct lock_client *client,
				 struct lock_lease *lease, const char *ttl,
				 struct error *err)
{
	const char *argv[6] = { "SET", lease->key, lease->token, "NX", "PX",
				ttl };
	size_t argl[6] = { 3, lease->key_len, LOCK_TOKEN_HEX, 2, 2,
			   strlen(ttl) };
	char complete[EARLY_KEY_MAX], mark[EARLY_KEY_MAX];
	const char *mget[3] = { "MGET", complete, mark };
	size_t mget_len[3] = { 4, 0, 0 };
	redisReply *reply = NULL, *early = NULL;
	enum lock_status status;

	mget_len[1] = early_key(complete, EARLY_COMPLETE,
				client->cfg->lock_key_prefix,
				strlen(client->cfg->lock_key_prefix));
	mget_len[2] = early_key(mark, EARLY_MARK, lease->key, lease->key_len);
	client->fault = LOCK_FAULT_NONE;
	lease->early = LOCK_EARLY_UNKNOWN;
	/* Before the send: a pause after it must not make the lease look fresh. */
	lease->started_us = timing_now_us();
	if (redisAppendCommandArgv(client->redis, 6, argv, argl) != REDIS_OK ||
	    redisAppendCommandArgv(client->redis, 3, mget, mget_len) != REDIS_OK ||
	    redisGetReply(client->redis, (void **)&reply) != REDIS_OK ||
	    redisGetReply(client->redis, (void **)&early) != REDIS_OK) {
		error_set(err, "redis SET NX: %s", client->redis->errstr);
		freeReplyObject(reply);
		client->fault = LOCK_FAULT_IO;
		lock_disconnect(client);
		return LOCK_UNAVAILABLE;
	}
	if (reply->type == REDIS_REPLY_STATUS && strcmp(reply->str, "OK") == 0) {
		status = LOCK_ACQUIRED;
		lease->early = read_early(client, early);
	} else if (reply->type == REDIS_REPLY_NIL) {
		status = LOCK_BUSY;
	} else {
		error_set(err, "redis SET NX: unexpected reply%s%s",
			  reply->type == REDIS_REPLY_ERROR ? ": " : "",
			  reply->type == REDIS_REPLY_ERROR ? reply->str : "");
		status = LOCK_UNAVAILABLE;
		client->fault = LOCK_FAULT_REPLY;
	}
	freeReplyObject(reply);
	freeReplyObject(early);
	if (status == LOCK_UNAVAILABLE)
		lock_disconnect(client);
	return status;
}

const char *lock_scope_of(const char *provider)
{
	return strcmp(provider, "standard") == 0 ? NULL : provider;
}

/* The lock key of transaction id[0..id_len) of provider scope (NULL:
 * none) into key (LOCK_KEY_MAX bytes). Returns 0, or -1 with err set when
 * it does not fit. */
static int lock_key(const struct lock_client *client, const char *scope,
		    const char *id, size_t id_len, char *key, size_t *key_len,
		    struct error *err)
{
	const char *prefix = client->cfg->lock_key_prefix;
	size_t prefix_len = strlen(prefix);
	size_t scope_len = scope != NULL ? strlen(scope) + 1 : 0;

	if (prefix_len + scope_len + id_len >= LOCK_KEY_MAX)
		return error_set(err, "lock: key longer than %d bytes",
				 LOCK_KEY_MAX);
	memcpy(key, prefix, prefix_len);
	if (scope != NULL) {
		memcpy(key + prefix_len, scope, scope_len - 1);
		key[prefix_len + scope_len - 1] = ':';
	}
	memcpy(key + prefix_len + scope_len, id, id_len);
	*key_len = prefix_len + scope_len + id_len;
	key[*key_len] = '\0';
	return 0;
}

enum lock_status lock_acquire(struct lock_client *client, const char *scope,
			      const char *id, size_t id_len, long ttl_ms,
			      struct lock_lease *lease, struct error *err)
{
	bool kept = client->redis != NULL && client->redis->err == 0;
	long fast_ms = client->cfg->redis_timeout_ms / 2;
	char ttl[24];
	enum lock_status status;

	if (lock_key(client, scope, id, id_len, lease->key, &lease->key_len,
		     err) != 0)
		return LOCK_UNAVAILABLE;
	lease->ttl_ms = ttl_ms;
	snprintf(ttl, sizeof(ttl), "%ld", ttl_ms);
	if (random_token(lease->token, err) != 0)
		return LOCK_UNAVAILABLE;
	if (lock_connect(client, err) != 0)
		return LOCK_UNAVAILABLE;
	if (timing_now_us() - client->policy_checked_us > POLICY_CHECK_US) {
		read_policy(client);
		if (lock_connect(client, err) != 0)
			return LOCK_UNAVAILABLE;
	}

	status = send_set(client, lease, ttl, err);
	/* A connection kept from an earlier request that failed at once (the
	 * server was killed or closed it) or answered an error (READONLY: a
	 * failover demoted it) says nothing of where the master is now: one
	 * fresh connection, through the sentinels when configured, decides.
	 * Safe: had the first SET been applied after all, the second finds
	 * our own key and answers busy, and the request is in_progress. A
	 * slow failure (a timeout) is not retried: the time is spent. */
	if (status == LOCK_UNAVAILABLE && kept &&
	    (client->fault == LOCK_FAULT_REPLY ||
	     (timing_now_us() - lease->started_us) / 1000 < fast_ms)) {
		if (lock_connect(client, err) != 0)
			return LOCK_UNAVAILABLE;
		status = send_set(client, lease, ttl, err);
	}
	return status;
}

/* Runs argv on the connection (connecting first) and checks that the
 * reply is not an error. Returns 0, or -1 with err naming what (the
 * connection dropped). *reply, when not NULL, gets the reply (caller
 * frees). */
static int early_command(struct lock_client *client, const char *what,
			 int argc, const char **argv, const size_t *argl,
			 redisReply **reply, struct error *err)
{
	redisReply *r;

	if (lock_connect(client, err) != 0)
		return -1;
	r = redisCommandArgv(client->redis, argc, argv, argl);
	if (r == NULL || r->type == REDIS_REPLY_ERROR) {
		error_set(err, "redis %s: %s", what,
			  r == NULL ? client->redis->errstr : r->str);
		freeReplyObject(r);
		lock_disconnect(client);
		return -1;
	}
	if (reply != NULL)
		*reply = r;
	else
		freeReplyObject(r);
	return 0;
}

/* SET of the mark of lock key key[0..key_len). */
static int set_mark(struct lock_client *client, const char *key,
		    size_t key_len, struct error *err)
{
	char mark[EARLY_KEY_MAX];
	const char *argv[3] = { "SET", mark, "1" };
	size_t argl[3] = { 3, 0, 1 };

	argl[1] = early_key(mark, EARLY_MARK, key, key_len);
	return early_command(client, "SET early mark", 3, argv, argl, NULL,
			     err);
}

int lock_mark_early(struct lock_client *client, struct lock_lease *lease,
		    struct error *err)
{
	if (set_mark(client, lease->key, lease->key_len, err) != 0)
		return -1;
	lease->early = LOCK_EARLY_MARKED;
	return 0;
}

void lock_clear_early(struct lock_client *client, const struct lock_lease *lease)
{
	char mark[EARLY_KEY_MAX];
	const char *argv[2] = { "DEL", mark };
	size_t argl[2] = { 3, 0 };
	struct error err;

	argl[1] = early_key(mark, EARLY_MARK, lease->key, lease->key_len);
	if (early_command(client, "DEL early mark", 2, argv, argl, NULL,
			  &err) != 0)
		log_warn("%s (left for its payment's later deliveries)",
			 err.message);
}

int lock_mark_early_id(struct lock_client *client, const char *scope,
		       const char *id, size_t id_len, struct error *err)
{
	char key[LOCK_KEY_MAX];
	size_t key_len;

	if (lock_key(client, scope, id, id_len, key, &key_len, err) != 0)
		return -1;
	return set_mark(client, key, key_len, err);
}

/* Wall-clock milliseconds: the rebuild's wait is shared by processes. */
static long long wall_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int lock_early_rebuild_due(struct lock_client *client, long *wait_ms,
			   struct error *err)
{
	const char *prefix = client->cfg->lock_key_prefix;
	long wait_ms_total = client->cfg->lock_ttl_ms + 1000;
	char key[EARLY_KEY_MAX], value[96], px[24];
	const char *set[6] = { "SET", key, value, "NX", "PX", px };
	const char *get[2] = { "GET", key };
	redisReply *reply = NULL;
	long long since_ms = 0;
	char *end;
	int due;

	*wait_ms = wait_ms_total;
	if (lock_connect(client, err) != 0)
		return -1;
	if (client->run_id[0] == '\0')
		return 0;
	early_key(key, EARLY_REBUILD, prefix, strlen(prefix));
	/* Kept a while after it is due, so that a rebuild that failed is
	 * tried again without a new wait; then a new wait begins. */
	snprintf(px, sizeof(px), "%ld", 2 * wait_ms_total + 60000);
	snprintf(value, sizeof(value), "%lld:%s", wall_ms(), client->run_id);
	if (early_command(client, "SET early rebuild", 6, set, NULL, NULL,
			  err) != 0 ||
	    early_command(client, "GET early rebuild", 2, get, NULL, &reply,
			  err) != 0)
		return -1;
	due = 0;
	if (reply->type == REDIS_REPLY_STRING) {
		since_ms = strtoll(reply->str, &end, 10);
		/* Left by the process before a restart that kept the data: a
		 * wait begins now. */
		if (*end != ':' || strcmp(end + 1, client->run_id) != 0) {
			set[3] = "PX";
			set[4] = px;
			freeReplyObject(reply);
			return early_command(client, "SET early rebuild", 5,
					     set, NULL, NULL, err);
		}
		due = wall_ms() >= since_ms + wait_ms_total;
		if (!due)
			*wait_ms = (long)(since_ms + wait_ms_total - wall_ms());
	}
	freeReplyObject(reply);
	return due;
}

int lock_early_complete(struct lock_client *client, struct error *err)
{
	const char *prefix = client->cfg->lock_key_prefix;
	char complete[EARLY_KEY_MAX], rebuild[EARLY_KEY_MAX];
	const char *set[3] = { "SET", complete, client->run_id };
	const char *del[2] = { "DEL", rebuild };

	early_key(complete, EARLY_COMPLETE, prefix, strlen(prefix));
	early_key(rebuild, EARLY_REBUILD, prefix, strlen(prefix));
	if (client->run_id[0] == '\0')
		return error_set(err, "redis: no run_id to name the early "
				 "marks' server");
	/* The policy may have changed during the rebuild. */
	read_policy(client);
	if (client->redis == NULL || client->redis->err != 0) {
		lock_disconnect(client);
		return error_set(err, "redis INFO memory: the connection "
				 "failed");
	}
	if (client->evicts)
		return error_set(err, "redis: maxmemory-policy %s may evict "
				 "the early marks: they are not declared "
				 "complete", client->policy[0] != '\0' ?
				 client->policy : "(unknown)");
	if (early_command(client, "SET early complete", 3, set, NULL, NULL,
			  err) != 0)
		return -1;
	return early_command(client, "DEL early rebuild", 2, del, NULL, NULL,
			     err);
}

/* Sends EVALSHA, or EVAL when use_eval. Returns the reply (caller frees) or
 * NULL on a connection fault. */
static redisReply *release_call(struct lock_client *client,
				const struct lock_lease *lease, int use_eval)
{
	const char *argv[5];
	size_t argl[5];

	argv[0] = use_eval ? "EVAL" : "EVALSHA";
	argl[0] = strlen(argv[0]);
	argv[1] = use_eval ? release_script : client->script_sha;
	argl[1] = use_eval ? sizeof(release_script) - 1 : 40;
	argv[2] = "1";  argl[2] = 1;
	argv[3] = lease->key;  argl[3] = lease->key_len;
	argv[4] = lease->token;  argl[4] = LOCK_TOKEN_HEX;
	return redisCommandArgv(client->redis, 5, argv, argl);
}

enum lock_release_status lock_release(struct lock_client *client,
				      const struct lock_lease *lease,
				      struct error *err)
{
	redisReply *reply;
	enum lock_release_status status;

	if (lock_connect(client, err) != 0)
		return LOCK_RELEASE_FAILED;
	client->fault = LOCK_FAULT_NONE;
	reply = release_call(client, lease, 0);
	if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
	    strncmp(reply->str, "NOSCRIPT", 8) == 0) {
		/* Redis restarted or flushed its script cache: EVAL reloads it. */
		freeReplyObject(reply);
		reply = release_call(client, lease, 1);
	}
	if (reply == NULL) {
		error_set(err, "redis release: %s", client->redis->errstr);
		client->fault = LOCK_FAULT_IO;
		lock_disconnect(client);
		return LOCK_RELEASE_FAILED;
	}
	if (reply->type != REDIS_REPLY_INTEGER) {
		error_set(err, "redis release: unexpected reply%s%s",
			  reply->type == REDIS_REPLY_ERROR ? ": " : "",
			  reply->type == REDIS_REPLY_ERROR ? reply->str : "");
		status = LOCK_RELEASE_FAILED;
		/* As for SET: reconnect rather than trust this server. */
		client->fault = LOCK_FAULT_REPLY;
		freeReplyObject(reply);
		lock_disconnect(client);
		return status;
	} else if (reply->integer == 1) {
		status = LOCK_RELEASED;
	} else if (reply->integer == 0) {
		status = LOCK_RELEASE_EXPIRED;
	} else {
		status = LOCK_RELEASE_STOLEN;
	}
	freeReplyObject(reply);
	return status;
}

int lock_check_config(const struct config *cfg, struct error *err)
{
	long bound = config_write_bound_ms(cfg);
	struct endpoint list[ENDPOINT_LIST_MAX];
	struct error inner;
	size_t n;

	if (cfg->redis_sentinels != NULL &&
	    endpoint_list_parse(cfg->redis_sentinels, 26379, list, &n,
				&inner) != 0)
		return error_set(err, "redis_sentinels: %s", inner.message);
	if (cfg->redis_sentinels != NULL && cfg->redis_socket != NULL)
		return error_set(err, "redis_sentinels and redis_socket are both "
				 "set: choose one");
	if (cfg->lock_backend == CONFIG_LOCK_NONE &&
	    cfg->redis_unavailable == CONFIG_REDIS_UNAVAILABLE_FAIL)
		return error_set(err, "lock_backend = none and redis_unavailable "
				 "= fail contradict each other: without Redis "
				 "every request would get 503");
	if (cfg->lock_ttl_ms <= bound + CONFIG_LEASE_MARGIN_MS)
		return error_set(err,
				 "lock_ttl_ms = %ld is too short: with "
				 "mysql_read_timeout_s = %d and "
				 "mysql_write_timeout_s = %d the write may take "
				 "up to %ld ms; set lock_ttl_ms above %ld or "
				 "lower the timeouts",
				 cfg->lock_ttl_ms, cfg->mysql_read_timeout_s,
				 cfg->mysql_write_timeout_s, bound,
				 bound + CONFIG_LEASE_MARGIN_MS);
	/* A worker ended while it holds the lock is safe only because no row
	 * is committed without a lease that covers the write: it is never a
	 * reason to end one the lease still covers. */
	if (cfg->request_terminate_timeout_ms != 0 &&
	    cfg->request_terminate_timeout_ms < cfg->lock_ttl_ms)
		return error_set(err, "request_terminate_timeout_ms = %ld is "
				 "shorter than lock_ttl_ms = %ld: a request "
				 "may rightly run as long as its lease; set it "
				 "to at least %ld, or 0 (off)",
				 cfg->request_terminate_timeout_ms,
				 cfg->lock_ttl_ms, cfg->lock_ttl_ms);
	return 0;
}
