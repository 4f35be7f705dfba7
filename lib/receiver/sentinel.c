/* sentinel.c - the master's address from a Redis Sentinel (see sentinel.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "number.h"
#include "sentinel.h"

int sentinel_ask_master(const struct endpoint *sentinel, const char *name,
			int timeout_ms, struct endpoint *master,
			struct error *err)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (timeout_ms % 1000) * 1000 };
	const char *argv[] = { "SENTINEL", "get-master-addr-by-name", name };
	redisContext *redis;
	redisReply *reply;
	uint64_t port = 0;
	int rc = -1;

	redis = redisConnectWithTimeout(sentinel->host, sentinel->port, tv);
	if (redis == NULL)
		return error_set(err, "redis sentinel: out of memory");
	if (redis->err != 0) {
		error_set(err, "redis sentinel %s:%d: %s", sentinel->host,
			  sentinel->port, redis->errstr);
		redisFree(redis);
		return -1;
	}
	reply = redisSetTimeout(redis, tv) == REDIS_OK ?
			redisCommandArgv(redis, 3, argv, NULL) : NULL;
	if (reply == NULL) {
		error_set(err, "redis sentinel %s:%d: %s", sentinel->host,
			  sentinel->port, redis->errstr);
	} else if (reply->type == REDIS_REPLY_ERROR) {
		error_set(err, "redis sentinel %s:%d: %s", sentinel->host,
			  sentinel->port, reply->str);
	} else if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
		   reply->element[0]->type != REDIS_REPLY_STRING ||
		   reply->element[1]->type != REDIS_REPLY_STRING) {
		/* A nil reply: the sentinel monitors no master of that name. */
		error_set(err, "redis sentinel %s:%d knows no master named %s",
			  sentinel->host, sentinel->port, name);
	} else if (reply->element[0]->len == 0 ||
		   reply->element[0]->len > ENDPOINT_HOST_MAX ||
		   number_parse_n(reply->element[1]->str,
				  reply->element[1]->len, 65535,
				  &port) != NUMBER_OK || port == 0) {
		error_set(err, "redis sentinel %s:%d: a malformed address for "
			  "%s", sentinel->host, sentinel->port, name);
	} else {
		memcpy(master->host, reply->element[0]->str,
		       reply->element[0]->len);
		master->host[reply->element[0]->len] = '\0';
		master->port = (int)port;
		rc = 0;
	}
	freeReplyObject(reply);
	redisFree(redis);
	return rc;
}
