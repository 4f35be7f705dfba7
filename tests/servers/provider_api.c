/* provider_api.c - test helper: a fake of a payment provider's list API on
 * a kernel-chosen loopback port, for the payhook-reconcile tests. One mode
 * per provider (stripe, paddle, square, payjp, komoju, paypal with its
 * OAuth2 token endpoint; the snapshots razorpay, shopify and lemonsqueezy,
 * described with their block below); the events it serves are bodies in
 * the shape the provider documents (the test builds them from
 * tests/fixtures/providers/, which are documented shapes, not captures).
 *
 *   provider_api --mode stripe|...|lemonsqueezy --key KEY --events FILE
 *                --faults FILE --log FILE [--ttl SECONDS]
 *
 * (--ttl: how long paypal's tokens are valid.)
 *
 * prints its port on standard output, then serves one connection at a
 * time until killed. The events file holds one event (a JSON object) per
 * line and is read again at every request, so a test can add events
 * between pages.
 *
 * stripe: GET /v1/events as docs.stripe.com/api/events/list documents it:
 * "Authorization: Bearer KEY" (else 401 with Stripe's error object),
 * types[] (repeatable, at most 20; more: 400), created[gte], created[gt],
 * created[lte], created[lt], limit (1-100, default 10; anything else 400
 * as Stripe answers), starting_after (an event id of the list; unknown: 400
 * resource_missing); newest first (by created, then by the file's order,
 * later lines newer); {"object": "list", "url": "/v1/events", "has_more":
 * ..., "data": [...]}.
 *
 * Faults: before each answer the faults file is read (absent: none); each
 * line "WHAT PAGE COUNT [ARG]" applies to requests for page PAGE of a walk
 * (1 the first page, 0 every page), COUNT times (0: always; the count
 * starts again whenever the line changes):
 *
 *   401, 500, ...   answer with that status (Stripe's error object)
 *   429 P C [S]     429 (or 503), with "Retry-After: S" when S is given
 *   truncate P C    a 200 whose body stops half-way
 *   slow P C MS     answer after MS milliseconds
 *   stuck P C       (Stripe) the first page's events again, has_more true:
 *                   a list that never advances
 *
 * Each request appends one line to the log file:
 *
 *   unix_ms status page method target
 *
 * (unix_ms: when the request arrived, before any slow answer; target: the
 * path and query as sent; page: 0 when not a list).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (64 * 1024)
#define FAULTS_MAX 16
#define LINE_MAX_LEN 256
#define TYPES_MAX 32

static const char *key, *events_path, *faults_path, *mode;
/* The port served: the base of the pages' "next" links. */
static unsigned listen_port;
static FILE *log_file;
/* When the request in hand arrived (its head read): the log's time. */
static int64_t request_ms;

/* The fault lines seen last, with how often each was used. */
static struct {
	char line[LINE_MAX_LEN];
	long used;
} seen[FAULTS_MAX];

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fail(const char *what)
{
	fprintf(stderr, "provider_api: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The query of one list request. */
struct query {
	const char *types[TYPES_MAX];
	size_t type_count, type_asked; /* kept; asked for */
	char type_buf[TYPES_MAX][256];
	bool has_gte, has_gt, has_lte, has_lt;
	int64_t gte, gt, lte, lt;
	long limit;
	bool bad_limit;
	char after[256];
};

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* URL-decodes text[0..len) into out (cap bytes). */
static void decode(const char *text, size_t len, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < cap; i++) {
		if (text[i] == '%' && i + 2 < len && hex(text[i + 1]) >= 0 &&
		    hex(text[i + 2]) >= 0) {
			out[n++] = (char)(hex(text[i + 1]) * 16 + hex(text[i + 2]));
			i += 2;
		} else {
			out[n++] = text[i] == '+' ? ' ' : text[i];
		}
	}
	out[n] = '\0';
}

static bool number(const char *text, int64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoll(text, &end, 10);
	return errno == 0 && end != text && *end == '\0';
}

static void parse_query(const char *q, struct query *out)
{
	memset(out, 0, sizeof(*out));
	out->limit = 10;
	while (q != NULL && *q != '\0') {
		const char *amp = strchr(q, '&');
		size_t len = amp != NULL ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', len);
		char name[128], value[256];
		int64_t v;

		if (eq != NULL) {
			decode(q, (size_t)(eq - q), name, sizeof(name));
			decode(eq + 1, len - (size_t)(eq - q) - 1, value,
			       sizeof(value));
			if (strcmp(name, "types[]") == 0 &&
			    ++out->type_asked <= TYPES_MAX) {
				snprintf(out->type_buf[out->type_count], 256, "%s",
					 value);
				out->types[out->type_count] =
					out->type_buf[out->type_count];
				out->type_count++;
			} else if (strcmp(name, "created[gte]") == 0 &&
				   number(value, &v)) {
				out->has_gte = true;
				out->gte = v;
			} else if (strcmp(name, "created[gt]") == 0 &&
				   number(value, &v)) {
				out->has_gt = true;
				out->gt = v;
			} else if (strcmp(name, "created[lte]") == 0 &&
				   number(value, &v)) {
				out->has_lte = true;
				out->lte = v;
			} else if (strcmp(name, "created[lt]") == 0 &&
				   number(value, &v)) {
				out->has_lt = true;
				out->lt = v;
			} else if (strcmp(name, "limit") == 0) {
				if (!number(value, &v) || v < 1 || v > 100)
					out->bad_limit = true;
				else
					out->limit = (long)v;
			} else if (strcmp(name, "starting_after") == 0) {
				snprintf(out->after, sizeof(out->after), "%s",
					 value);
			}
		}
		q = amp != NULL ? amp + 1 : NULL;
	}
}

static void send_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n <= 0)
			return;
		data += n;
		len -= (size_t)n;
	}
}

static void respond(int fd, int status, long retry_after, const char *body,
		    size_t body_len)
{
	char head[512], wait[64] = "";
	int n;

	if (retry_after >= 0)
		snprintf(wait, sizeof(wait), "Retry-After: %ld\r\n",
			 retry_after);
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
		     "Content-Length: %zu\r\nRequest-Id: req_fake\r\n"
		     "%sConnection: close\r\n\r\n", status, body_len, wait);
	send_all(fd, head, (size_t)n);
	send_all(fd, body, body_len);
}

static void stripe_error(int fd, int status, long retry_after,
			 const char *type, const char *message)
{
	char body[512];
	int n = snprintf(body, sizeof(body),
			 "{\"error\": {\"type\": \"%s\", \"message\": \"%s\"}}",
			 type, message);

	respond(fd, status, retry_after, body, (size_t)n);
}

/* The events of the file that match q, newest first. Returns a new array
 * (json-c), or NULL. */
static struct json_object *stripe_matching(const struct query *q)
{
	FILE *f = fopen(events_path, "r");
	struct json_object *all = json_object_new_array();
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (f == NULL)
		return all;
	while ((len = getline(&line, &cap, f)) > 0) {
		struct json_object *event = json_tokener_parse(line), *v;
		const char *type = NULL;
		int64_t created = 0;
		bool match = true;

		if (event == NULL)
			continue;
		if (json_object_object_get_ex(event, "type", &v))
			type = json_object_get_string(v);
		if (json_object_object_get_ex(event, "created", &v))
			created = json_object_get_int64(v);
		if (q->type_count > 0) {
			match = false;
			for (size_t i = 0; i < q->type_count; i++)
				if (type != NULL && strcmp(type, q->types[i]) == 0)
					match = true;
		}
		if ((q->has_gte && created < q->gte) ||
		    (q->has_gt && created <= q->gt) ||
		    (q->has_lte && created > q->lte) ||
		    (q->has_lt && created >= q->lt))
			match = false;
		if (match)
			json_object_array_add(all, event);
		else
			json_object_put(event);
	}
	free(line);
	fclose(f);
	/* Newest first: by created, later lines first at equal times. */
	{
		size_t n = json_object_array_length(all);
		struct json_object *sorted = json_object_new_array();

		for (size_t done = 0; done < n; done++) {
			size_t best = SIZE_MAX;
			int64_t best_created = INT64_MIN;

			for (size_t i = 0; i < n; i++) {
				struct json_object *e =
					json_object_array_get_idx(all, i), *v;
				int64_t c;

				if (e == NULL)
					continue;
				json_object_object_get_ex(e, "created", &v);
				c = json_object_get_int64(v);
				if (best == SIZE_MAX || c >= best_created) {
					best = i;
					best_created = c;
				}
			}
			json_object_array_add(
				sorted, json_object_get(
						json_object_array_get_idx(all, best)));
			json_object_array_put_idx(all, best, NULL);
		}
		json_object_put(all);
		return sorted;
	}
}

/* The fault for this request's page, if any: fills what/arg. */
static bool fault_for(long page, char *what, size_t cap, long *arg)
{
	FILE *f = faults_path != NULL ? fopen(faults_path, "r") : NULL;
	char line[LINE_MAX_LEN];
	bool found = false;
	size_t i = 0;

	if (f == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL && i < FAULTS_MAX) {
		char w[32];
		long p = 0, count = 0, a = -1;
		int got;

		line[strcspn(line, "\r\n")] = '\0';
		got = sscanf(line, "%31s %ld %ld %ld", w, &p, &count, &a);
		if (got < 3)
			continue;
		if (strcmp(seen[i].line, line) != 0) {
			snprintf(seen[i].line, sizeof(seen[i].line), "%s", line);
			seen[i].used = 0;
		}
		if (!found && (p == 0 || p == page) &&
		    (count == 0 || seen[i].used < count)) {
			seen[i].used++;
			snprintf(what, cap, "%s", w);
			*arg = got >= 4 ? a : -1;
			found = true;
		}
		i++;
	}
	fclose(f);
	return found;
}

/* Sleeps ms milliseconds (a slow fault). */
static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void log_request(int status, long page, const char *method,
			const char *target)
{
	fprintf(log_file, "%lld %d %ld %s %s\n", (long long)request_ms, status,
		page, method, target);
	fflush(log_file);
}

static void stripe_list(int fd, const char *target, const char *auth)
{
	const char *q = strchr(target, '?');
	struct query query;
	struct json_object *all, *data, *page_obj;
	size_t n, start = 0;
	long page = 1, fault_arg = -1;
	char what[32] = "", expected[512];

	parse_query(q != NULL ? q + 1 : NULL, &query);
	all = stripe_matching(&query);
	n = json_object_array_length(all);
	if (query.after[0] != '\0') {
		start = SIZE_MAX;
		for (size_t i = 0; i < n; i++) {
			struct json_object *v;

			json_object_object_get_ex(json_object_array_get_idx(all, i),
						  "id", &v);
			if (strcmp(json_object_get_string(v), query.after) == 0)
				start = i + 1;
		}
	}
	if (start != SIZE_MAX && query.limit > 0)
		page = (long)(start / (size_t)query.limit) + 1;
	snprintf(expected, sizeof(expected), "Bearer %s", key);
	if (auth == NULL || strcmp(auth, expected) != 0) {
		log_request(401, page, "GET", target);
		stripe_error(fd, 401, -1, "invalid_request_error",
			     "Invalid API Key provided");
		goto out;
	}
	if (query.bad_limit) {
		log_request(400, page, "GET", target);
		stripe_error(fd, 400, -1, "invalid_request_error",
			     "Invalid integer: limit must be between 1 and 100");
		goto out;
	}
	/* types: "An array of up to 20 strings" (stripe/stripe-node
	 * src/resources/Events.ts, EventListParams). */
	if (query.type_asked > 20) {
		log_request(400, page, "GET", target);
		stripe_error(fd, 400, -1, "invalid_request_error",
			     "Invalid array: types must have at most 20 items");
		goto out;
	}
	if (start == SIZE_MAX) {
		log_request(400, page, "GET", target);
		stripe_error(fd, 400, -1, "invalid_request_error",
			     "No such event (resource_missing)");
		goto out;
	}
	if (fault_for(page, what, sizeof(what), &fault_arg)) {
		if (strcmp(what, "slow") == 0) {
			struct timespec ts = { fault_arg / 1000,
					       (fault_arg % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		} else if (strcmp(what, "truncate") != 0 &&
			   strcmp(what, "stuck") != 0) {
			int status = atoi(what);

			log_request(status, page, "GET", target);
			stripe_error(fd, status,
				     status == 429 || status == 503 ? fault_arg
								    : -1,
				     status == 429 ? "rate_limit_error" :
						     "api_error",
				     status == 429 ? "Too many requests" :
						     "Fault injected");
			goto out;
		}
	}
	data = json_object_new_array();
	if (strcmp(what, "stuck") == 0)
		start = 0;
	for (size_t i = start; i < n && i < start + (size_t)query.limit; i++)
		json_object_array_add(data, json_object_get(
					      json_object_array_get_idx(all, i)));
	page_obj = json_object_new_object();
	json_object_object_add(page_obj, "object", json_object_new_string("list"));
	json_object_object_add(page_obj, "url", json_object_new_string("/v1/events"));
	json_object_object_add(page_obj, "has_more",
			       json_object_new_boolean(strcmp(what, "stuck") == 0 ||
						       start + (size_t)query.limit < n));
	json_object_object_add(page_obj, "data", data);
	{
		size_t len = 0;
		const char *text = json_object_to_json_string_length(
			page_obj, JSON_C_TO_STRING_PRETTY, &len);

		/* Cut short: a whole HTTP answer whose JSON stops half-way. */
		if (strcmp(what, "truncate") == 0)
			len /= 2;
		log_request(200, page, "GET", target);
		respond(fd, 200, -1, text, len);
	}
	json_object_put(page_obj);
out:
	json_object_put(all);
}

/* ---- paddle: GET /events ------------------------------------------------------
 *
 * As developer.paddle.com/api-reference/events/list-events and the
 * paddle-node-sdk (ListEventsQueryParameters, ResponsePaginated) document
 * it: "Authorization: Bearer KEY" (none: 401 authentication_missing;
 * another: 403 invalid_token, Paddle's error object), event_type (a
 * comma-separated list), order_by (id[ASC], the default, or id[DESC]),
 * per_page (default 50, at most 200: "If you request more than the
 * maximum, Paddle returns the maximum. Check meta.pagination.per_page",
 * developer.paddle.com/api-reference/about/pagination; below 1 or not a
 * number 400 invalid_field, an assumption), after (a Paddle ID: the events
 * whose event_id sorts after it). The events file holds webhook bodies; the
 * list serves each as the event entity Paddle lists: event_id, event_type,
 * occurred_at, notification_id (string or null) and data, as
 * PaddleHQ/paddle-node-sdk src/types/events/events-response.ts
 * (IEventsResponse) and its mock src/__tests__/mocks/resources/
 * events.mock.ts (a listed event with notification_id "ntf_1234") have it.
 * {"data": [...], "meta": {"request_id", "pagination": {"per_page",
 * "next", "has_more", "estimated_total"}}}, next the same list after the
 * page's last event.
 */

struct paddle_query {
	char types[512];
	bool desc, bad_per_page, bad_order;
	long per_page;
	char after[512];
};

static void paddle_parse_query(const char *q, struct paddle_query *out)
{
	memset(out, 0, sizeof(*out));
	out->per_page = 50;
	while (q != NULL && *q != '\0') {
		const char *amp = strchr(q, '&');
		size_t len = amp != NULL ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', len);
		char name[128], value[512];
		int64_t v;

		if (eq != NULL) {
			decode(q, (size_t)(eq - q), name, sizeof(name));
			decode(eq + 1, len - (size_t)(eq - q) - 1, value,
			       sizeof(value));
			if (strcmp(name, "event_type") == 0) {
				snprintf(out->types, sizeof(out->types), "%s",
					 value);
			} else if (strcmp(name, "order_by") == 0) {
				out->desc = strcmp(value, "id[DESC]") == 0;
				out->bad_order = !out->desc &&
						 strcmp(value, "id[ASC]") != 0;
			} else if (strcmp(name, "per_page") == 0) {
				/* Above the maximum Paddle answers the
				 * maximum (see the block's comment). */
				if (!number(value, &v) || v < 1)
					out->bad_per_page = true;
				else
					out->per_page = v > 200 ? 200 : (long)v;
			} else if (strcmp(name, "after") == 0) {
				snprintf(out->after, sizeof(out->after), "%s",
					 value);
			}
		}
		q = amp != NULL ? amp + 1 : NULL;
	}
}

static void paddle_error(int fd, int status, long retry_after,
			 const char *code, const char *detail)
{
	char body[768];
	int n = snprintf(body, sizeof(body),
			 "{\"error\":{\"type\":\"request_error\",\"code\":\"%s\","
			 "\"detail\":\"%s\",\"documentation_url\":"
			 "\"https://developer.paddle.com/v1/errors/shared/%s\"},"
			 "\"meta\":{\"request_id\":\"fake\"}}",
			 code, detail, code);

	respond(fd, status, retry_after, body, (size_t)n);
}

/* Whether type is one of the comma-separated list (empty: any). */
static bool paddle_type_listed(const char *list, const char *type)
{
	size_t len = type != NULL ? strlen(type) : 0;

	if (list[0] == '\0')
		return true;
	for (const char *p = list; type != NULL && *p != '\0';) {
		size_t n = strcspn(p, ",");

		if (n == len && strncmp(p, type, n) == 0)
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

static int paddle_by_id(const void *a, const void *b)
{
	struct json_object *x = *(struct json_object *const *)a;
	struct json_object *y = *(struct json_object *const *)b;
	struct json_object *vx, *vy;

	json_object_object_get_ex(x, "event_id", &vx);
	json_object_object_get_ex(y, "event_id", &vy);
	return strcmp(json_object_get_string(vx), json_object_get_string(vy));
}

/* The events of the file whose type is listed, as entities, by event_id
 * (ascending). Returns how many are in *out (malloc'd array of json-c
 * objects, each the caller's). */
static size_t paddle_matching(const struct paddle_query *q,
			      struct json_object ***out)
{
	FILE *f = fopen(events_path, "r");
	struct json_object **all = NULL;
	size_t n = 0;
	char *line = NULL;
	size_t cap = 0;

	*out = NULL;
	if (f == NULL)
		return 0;
	while (getline(&line, &cap, f) > 0) {
		struct json_object *event = json_tokener_parse(line), *v;
		struct json_object **grown;

		if (event == NULL)
			continue;
		if (!json_object_object_get_ex(event, "event_id", &v) ||
		    !json_object_object_get_ex(event, "event_type", &v) ||
		    !paddle_type_listed(q->types, json_object_get_string(v)) ||
		    (grown = realloc(all, (n + 1) * sizeof(*all))) == NULL) {
			json_object_put(event);
			continue;
		}
		all = grown;
		all[n++] = event;
	}
	free(line);
	fclose(f);
	if (n > 0)
		qsort(all, n, sizeof(*all), paddle_by_id);
	*out = all;
	return n;
}

static void paddle_list(int fd, const char *target, const char *auth)
{
	const char *q = strchr(target, '?');
	struct paddle_query query;
	struct json_object **all, *data, *page_obj, *meta, *pagination;
	size_t n, start, end, count = 0;
	long page, fault_arg = -1;
	char what[32] = "", expected[512], next[1024];
	bool more;

	paddle_parse_query(q != NULL ? q + 1 : NULL, &query);
	n = paddle_matching(&query, &all);
	/* The events after query.after, in the order asked for: start is
	 * the first of them in all, counted from the order's own end. */
	for (start = 0; start < n; start++) {
		struct json_object *v;
		size_t i = query.desc ? n - 1 - start : start;
		int c;

		json_object_object_get_ex(all[i], "event_id", &v);
		c = strcmp(json_object_get_string(v), query.after);
		if (query.after[0] == '\0' || (query.desc ? c < 0 : c > 0))
			break;
	}
	page = (long)(start / (size_t)query.per_page) + 1;
	snprintf(expected, sizeof(expected), "Bearer %s", key);
	if (auth == NULL) {
		log_request(401, page, "GET", target);
		paddle_error(fd, 401, -1, "authentication_missing",
			     "Authentication header not included");
		goto out;
	}
	if (strcmp(auth, expected) != 0) {
		log_request(403, page, "GET", target);
		paddle_error(fd, 403, -1, "invalid_token",
			     "Authentication token is invalid");
		goto out;
	}
	if (query.bad_per_page || query.bad_order) {
		log_request(400, page, "GET", target);
		paddle_error(fd, 400, -1, "invalid_field",
			     query.bad_per_page ?
				     "per_page must be between 1 and 200" :
				     "order_by must be id[ASC] or id[DESC]");
		goto out;
	}
	if (fault_for(page, what, sizeof(what), &fault_arg)) {
		if (strcmp(what, "slow") == 0) {
			struct timespec ts = { fault_arg / 1000,
					       (fault_arg % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		} else if (strcmp(what, "truncate") != 0) {
			int status = atoi(what);

			log_request(status, page, "GET", target);
			paddle_error(fd, status,
				     status == 429 || status == 503 ? fault_arg
								    : -1,
				     status == 429 ? "too_many_requests" :
						     "internal_error",
				     status == 429 ? "Too many requests" :
						     "Fault injected");
			goto out;
		}
	}
	data = json_object_new_array();
	end = start + (size_t)query.per_page < n ? start + (size_t)query.per_page
						 : n;
	for (size_t k = start; k < end; k++, count++)
		json_object_array_add(data, json_object_get(
					      all[query.desc ? n - 1 - k : k]));
	more = end < n;
	next[0] = '\0';
	if (count > 0) {
		struct json_object *v;

		json_object_object_get_ex(
			all[query.desc ? n - 1 - (end - 1) : end - 1],
			"event_id", &v);
		snprintf(next, sizeof(next),
			 "http://127.0.0.1:%u/events?after=%s&per_page=%ld%s%s",
			 listen_port, json_object_get_string(v), query.per_page,
			 query.desc ? "&order_by=id%5BDESC%5D" : "",
			 query.types[0] != '\0' ? "&event_type=" : "");
		if (query.types[0] != '\0')
			strncat(next, query.types,
				sizeof(next) - strlen(next) - 1);
	}
	pagination = json_object_new_object();
	json_object_object_add(pagination, "per_page",
			       json_object_new_int64(query.per_page));
	json_object_object_add(pagination, "next", json_object_new_string(next));
	json_object_object_add(pagination, "has_more",
			       json_object_new_boolean(more));
	json_object_object_add(pagination, "estimated_total",
			       json_object_new_int64((int64_t)n));
	meta = json_object_new_object();
	json_object_object_add(meta, "request_id",
			       json_object_new_string("fake"));
	json_object_object_add(meta, "pagination", pagination);
	page_obj = json_object_new_object();
	json_object_object_add(page_obj, "data", data);
	json_object_object_add(page_obj, "meta", meta);
	{
		size_t len = 0;
		const char *text = json_object_to_json_string_length(
			page_obj, JSON_C_TO_STRING_PLAIN, &len);

		if (strcmp(what, "truncate") == 0)
			len /= 2;
		log_request(200, page, "GET", target);
		respond(fd, 200, -1, text, len);
	}
	json_object_put(page_obj);
out:
	for (size_t i = 0; i < n; i++)
		json_object_put(all[i]);
	free(all);
}

/* ---- offset and page lists: events inserted between pages -------------------
 *
 * The fault line "insert PAGE COUNT" appends the lines of the file
 * EVENTS.insert (the events file's name and ".insert") to the events file
 * before page PAGE is answered, then empties it: events that show up in
 * the list while it is read, shifting the offsets of those after them.
 */
static void insert_pending(void)
{
	char path[4096], *line = NULL;
	size_t cap = 0;
	FILE *in, *out;

	snprintf(path, sizeof(path), "%s.insert", events_path);
	in = fopen(path, "r");
	if (in == NULL)
		return;
	out = fopen(events_path, "a");
	while (out != NULL && getline(&line, &cap, in) > 0)
		fputs(line, out);
	free(line);
	if (out != NULL)
		fclose(out);
	fclose(in);
	in = fopen(path, "w");
	if (in != NULL)
		fclose(in);
}

/* Basic authentication with KEY as the user and no password. */
static bool basic_auth_ok(const char *auth)
{
	static const char digits[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char user[1024], expected[1500] = "Basic ";
	size_t len, n = strlen(expected);

	snprintf(user, sizeof(user), "%s:", key);
	len = strlen(user);
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned char)user[i] << 16;

		if (i + 1 < len)
			v |= (unsigned char)user[i + 1] << 8;
		if (i + 2 < len)
			v |= (unsigned char)user[i + 2];
		expected[n++] = digits[(v >> 18) & 63];
		expected[n++] = digits[(v >> 12) & 63];
		expected[n++] = i + 1 < len ? digits[(v >> 6) & 63] : '=';
		expected[n++] = i + 2 < len ? digits[v & 63] : '=';
	}
	expected[n] = '\0';
	return auth != NULL && strcmp(auth, expected) == 0;
}

/* ---- payjp: GET /v1/events -----------------------------------------------------
 *
 * As pay.jp/docs/api (event list) and payjp/payjp-go v1/event.go document
 * it: HTTP Basic with KEY as the user and no password (else 401 with
 * PAY.JP's {"error": {"code", "message", "status", "type"}}), since
 * (created at or after), until (at or before), limit (1-100, default 10;
 * anything else 400 invalid_param, as PAY.JP answers), offset; newest
 * first; {"count": <all that match>, "data": [...], "has_more": ...,
 * "object": "list", "url": "/v1/events"}.
 */

static void payjp_error(int fd, int status, long retry_after, const char *code,
			const char *type, const char *message)
{
	char body[512];
	int n = snprintf(body, sizeof(body),
			 "{\"error\": {\"code\": \"%s\", \"message\": \"%s\", "
			 "\"status\": %d, \"type\": \"%s\"}}",
			 code, message, status, type);

	respond(fd, status, retry_after, body, (size_t)n);
}

static void payjp_list(int fd, const char *target, const char *auth)
{
	const char *q = strchr(target, '?');
	struct query query;
	struct json_object *all, *data, *page_obj;
	int64_t offset = 0, limit = 10, v;
	bool bad = false;
	long page, fault_arg = -1;
	char what[32] = "";
	size_t n;

	memset(&query, 0, sizeof(query));
	while (q != NULL && *++q != '\0') {
		const char *amp = strchr(q, '&');
		size_t len = amp != NULL ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', len);
		char name[64], value[128];

		if (eq != NULL) {
			decode(q, (size_t)(eq - q), name, sizeof(name));
			decode(eq + 1, len - (size_t)(eq - q) - 1, value,
			       sizeof(value));
			if (strcmp(name, "since") == 0 && number(value, &v)) {
				query.has_gte = true;
				query.gte = v;
			} else if (strcmp(name, "until") == 0 && number(value, &v)) {
				query.has_lte = true;
				query.lte = v;
			} else if (strcmp(name, "limit") == 0) {
				bad = !number(value, &limit) || limit < 1 ||
				      limit > 100;
			} else if (strcmp(name, "offset") == 0) {
				bad = bad || !number(value, &offset) || offset < 0;
			}
		}
		q = amp;
	}
	page = limit > 0 ? (long)(offset / limit) + 1 : 1;
	if (!basic_auth_ok(auth)) {
		log_request(401, page, "GET", target);
		payjp_error(fd, 401, -1, "invalid_api_key", "auth_error",
			    "Invalid API Key.");
		return;
	}
	if (bad) {
		log_request(400, page, "GET", target);
		payjp_error(fd, 400, -1, "invalid_param", "client_error",
			    "limit must be between 1 and 100.");
		return;
	}
	if (fault_for(page, what, sizeof(what), &fault_arg)) {
		if (strcmp(what, "insert") == 0) {
			insert_pending();
		} else if (strcmp(what, "slow") == 0) {
			struct timespec ts = { fault_arg / 1000,
					       (fault_arg % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		} else if (strcmp(what, "truncate") != 0) {
			int status = atoi(what);

			log_request(status, page, "GET", target);
			payjp_error(fd, status,
				    status == 429 || status == 503 ? fault_arg
								   : -1,
				    status == 429 ? "over_capacity" :
						    "server_error",
				    status == 429 ? "client_error" :
						    "server_error",
				    "Fault injected.");
			return;
		}
	}
	all = stripe_matching(&query);
	n = json_object_array_length(all);
	data = json_object_new_array();
	for (size_t i = (size_t)offset; i < n && i < (size_t)(offset + limit); i++)
		json_object_array_add(data, json_object_get(
					      json_object_array_get_idx(all, i)));
	page_obj = json_object_new_object();
	json_object_object_add(page_obj, "count", json_object_new_int64((int64_t)n));
	json_object_object_add(page_obj, "data", data);
	json_object_object_add(page_obj, "has_more",
			       json_object_new_boolean((size_t)(offset + limit) < n));
	json_object_object_add(page_obj, "object", json_object_new_string("list"));
	json_object_object_add(page_obj, "url", json_object_new_string("/v1/events"));
	{
		size_t len = 0;
		const char *text = json_object_to_json_string_length(
			page_obj, JSON_C_TO_STRING_PRETTY, &len);

		if (strcmp(what, "truncate") == 0)
			len /= 2;
		log_request(200, page, "GET", target);
		respond(fd, 200, -1, text, len);
	}
	json_object_put(page_obj);
	json_object_put(all);
}

static const char *header(const char *head, const char *name, char *out,
			  size_t cap);

/* ---- square: POST /v2/events (SearchEvents) ---------------------------------
 *
 * As developer.squareup.com/reference/square/events-api/search-events
 * documents it: "Authorization: Bearer KEY" (else 401 with Square's
 * {"errors": [{"category", "code", "detail"}]}); a JSON body with limit
 * (1-100, default 100; below 400 VALUE_TOO_LOW, above 400 VALUE_TOO_HIGH),
 * cursor (one this fake gave; else 400 INVALID_CURSOR) and
 * query.filter.event_types, query.filter.created_at.start_at (inclusive)
 * and .end_at (exclusive), RFC 3339; query.sort.order ASC (the default)
 * or DESC, by created_at, at equal times in the file's order. Answers
 * {"events": [...], "metadata": [{"event_id", "api_version"}], "cursor":
 * ...}, the cursor absent on the last page. The events file holds webhook
 * bodies, the shape a SearchEvents event has, but for created_at, which
 * the list writes without a zone (square_list_time). Checked against
 * square/connect-api-specification api.json (SearchEvents,
 * SearchEventsRequest/Response, Event, ErrorCode). Whether created_at's
 * bounds are inclusive is not published (TimeRange: "refer to the
 * endpoint"): the overlap of the pass covers either.
 *
 * The fault line "disabled 0 0" answers as for an application whose
 * events were never enabled (PUT /v2/events/enable): 400 with an error
 * whose detail says so. Square documents that events must be enabled
 * ("All events are disabled by default. You must enable events to make
 * them searchable", api.json DisableEvents) but not what SearchEvents
 * answers then, nor any error code for it (ErrorCode has none): the
 * fake's code and wording are an assumption. Square may as well answer
 * an empty list.
 */

/* Unix seconds of an RFC 3339 time ("...Z", fraction ignored), or -1. */
static int64_t square_time(const char *text)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	if (text == NULL ||
	    (end = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
		return -1;
	return (int64_t)timegm(&tm);
}

static void square_error(int fd, int status, long retry_after,
			 const char *category, const char *code,
			 const char *detail)
{
	char body[768];
	int n = snprintf(body, sizeof(body),
			 "{\"errors\":[{\"category\":\"%s\",\"code\":\"%s\","
			 "\"detail\":\"%s\"}]}", category, code, detail);

	respond(fd, status, retry_after, body, (size_t)n);
}

/* The request's body after head[0..len) (the head and what followed it),
 * reading the rest of Content-Length. Returns a malloc'd NUL-terminated
 * string, or NULL. */
static char *square_body(int fd, const char *head, size_t len)
{
	const char *start = strstr(head, "\r\n\r\n");
	char value[32];
	size_t want, have;
	char *body;

	if (start == NULL ||
	    header(head, "Content-Length", value, sizeof(value)) == NULL)
		return NULL;
	start += 4;
	want = (size_t)strtoul(value, NULL, 10);
	have = len - (size_t)(start - head);
	if (want > HEAD_MAX || have > want)
		return NULL;
	body = malloc(want + 1);
	if (body == NULL)
		return NULL;
	memcpy(body, start, have);
	while (have < want) {
		ssize_t n = read(fd, body + have, want - have);

		if (n <= 0) {
			free(body);
			return NULL;
		}
		have += (size_t)n;
	}
	body[want] = '\0';
	return body;
}

static const char *square_string(struct json_object *obj, const char *a,
				 const char *b, const char *c)
{
	struct json_object *v = obj;

	if (a != NULL && !json_object_object_get_ex(v, a, &v))
		return NULL;
	if (b != NULL && !json_object_object_get_ex(v, b, &v))
		return NULL;
	if (c != NULL && !json_object_object_get_ex(v, c, &v))
		return NULL;
	return json_object_is_type(v, json_type_string) ?
		       json_object_get_string(v) : NULL;
}

/* Rewrites event's created_at ("2026-12-01T10:08:40.454Z", the webhook's)
 * as SearchEvents lists it: square/connect-api-specification api.json,
 * SearchEventsResponse's example, writes an event's created_at with
 * microseconds and no zone ("2022-04-26T10:08:40.454726"), where the
 * webhook body of the same event has "...Z". */
static void square_list_time(struct json_object *event)
{
	const char *at = square_string(event, "created_at", NULL, NULL);
	char text[40];
	int64_t t = square_time(at);
	long micros = 0;
	struct tm tm;
	time_t tt = (time_t)t;

	if (t < 0)
		return;
	if (at[19] == '.') {
		long scale = 100000;

		for (const char *d = at + 20; *d >= '0' && *d <= '9' && scale > 0;
		     d++, scale /= 10)
			micros += (*d - '0') * scale;
	}
	gmtime_r(&tt, &tm);
	strftime(text, 20 + 1, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(text + 19, sizeof(text) - 19, ".%06ld", micros);
	json_object_object_add(event, "created_at", json_object_new_string(text));
}

static void square_search(int fd, const char *head, size_t head_len,
			  const char *target, const char *auth)
{
	char *text = square_body(fd, head, head_len);
	struct json_object *req = text != NULL ? json_tokener_parse(text) : NULL;
	struct json_object *types = NULL, *v, *all, *events, *metadata, *answer;
	const char *cursor = NULL;
	int64_t from = -1, to = -1, limit = 100, offset = 0;
	bool desc = false;
	long page, fault_arg = -1;
	char what[32] = "", expected[512];
	FILE *f;
	char *line = NULL;
	size_t cap = 0, n;

	free(text);
	snprintf(expected, sizeof(expected), "Bearer %s", key);
	if (auth == NULL || strcmp(auth, expected) != 0) {
		log_request(401, 0, "POST", target);
		square_error(fd, 401, -1, "AUTHENTICATION_ERROR", "UNAUTHORIZED",
			     "This request could not be authorized.");
		json_object_put(req);
		return;
	}
	if (req == NULL || !json_object_is_type(req, json_type_object)) {
		log_request(400, 0, "POST", target);
		square_error(fd, 400, -1, "INVALID_REQUEST_ERROR", "BAD_REQUEST",
			     "The body is not a JSON object.");
		json_object_put(req);
		return;
	}
	if (json_object_object_get_ex(req, "limit", &v))
		limit = json_object_get_int64(v);
	cursor = square_string(req, "cursor", NULL, NULL);
	if (cursor != NULL &&
	    (sscanf(cursor, "fakecursor%" SCNd64, &offset) != 1 || offset < 0)) {
		log_request(400, 0, "POST", target);
		square_error(fd, 400, -1, "INVALID_REQUEST_ERROR",
			     "INVALID_CURSOR", "The cursor is not valid.");
		json_object_put(req);
		return;
	}
	page = limit > 0 ? (long)(offset / limit) + 1 : 1;
	/* api.json gives SearchEventsRequest.limit minimum 1, maximum 100,
	 * and Square's list endpoints that say what they answer outside
	 * their range answer 400 VALUE_TOO_LOW or VALUE_TOO_HIGH (ListCustomers,
	 * SearchCustomers): the same codes here. */
	if (limit < 1 || limit > 100) {
		log_request(400, page, "POST", target);
		square_error(fd, 400, -1, "INVALID_REQUEST_ERROR",
			     limit < 1 ? "VALUE_TOO_LOW" : "VALUE_TOO_HIGH",
			     "limit must be between 1 and 100.");
		json_object_put(req);
		return;
	}
	if (json_object_object_get_ex(req, "query", &v) &&
	    json_object_object_get_ex(v, "filter", &v)) {
		json_object_object_get_ex(v, "event_types", &types);
		from = square_time(square_string(v, "created_at", "start_at",
						 NULL));
		to = square_time(square_string(v, "created_at", "end_at", NULL));
	}
	desc = square_string(req, "query", "sort", "order") != NULL &&
	       strcmp(square_string(req, "query", "sort", "order"), "DESC") == 0;
	if (fault_for(page, what, sizeof(what), &fault_arg)) {
		if (strcmp(what, "disabled") == 0) {
			log_request(400, page, "POST", target);
			square_error(fd, 400, -1, "INVALID_REQUEST_ERROR",
				     "BAD_REQUEST",
				     "Events are not enabled for this "
				     "application. Enable them with "
				     "PUT /v2/events/enable.");
			json_object_put(req);
			return;
		}
		if (strcmp(what, "slow") == 0) {
			struct timespec ts = { fault_arg / 1000,
					       (fault_arg % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		} else if (strcmp(what, "truncate") != 0) {
			int status = atoi(what);

			log_request(status, page, "POST", target);
			square_error(fd, status,
				     status == 429 || status == 503 ? fault_arg
								    : -1,
				     status == 429 ? "RATE_LIMIT_ERROR" :
						     "API_ERROR",
				     status == 429 ? "RATE_LIMITED" :
						     "INTERNAL_SERVER_ERROR",
				     "Fault injected.");
			json_object_put(req);
			return;
		}
	}
	/* The matching events, oldest first (stable), then the page. */
	all = json_object_new_array();
	f = fopen(events_path, "r");
	while (f != NULL && getline(&line, &cap, f) > 0) {
		struct json_object *event = json_tokener_parse(line);
		const char *type = event != NULL ?
			square_string(event, "type", NULL, NULL) : NULL;
		int64_t at = event != NULL ?
			square_time(square_string(event, "created_at", NULL,
						  NULL)) : -1;
		bool match = type != NULL;

		if (match && types != NULL &&
		    json_object_is_type(types, json_type_array)) {
			match = false;
			for (size_t i = 0; i < json_object_array_length(types); i++)
				if (strcmp(json_object_get_string(
						   json_object_array_get_idx(types, i)),
					   type) == 0)
					match = true;
		}
		if ((from >= 0 && at < from) || (to >= 0 && at >= to))
			match = false;
		if (match)
			json_object_array_add(all, event);
		else
			json_object_put(event);
	}
	free(line);
	if (f != NULL)
		fclose(f);
	n = json_object_array_length(all);
	/* Insertion sort by created_at, stable. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0; j--) {
			struct json_object *a = json_object_array_get_idx(all, j - 1);
			struct json_object *b = json_object_array_get_idx(all, j);

			if (square_time(square_string(a, "created_at", NULL, NULL)) <=
			    square_time(square_string(b, "created_at", NULL, NULL)))
				break;
			json_object_get(a);
			json_object_get(b);
			json_object_array_put_idx(all, j - 1, b);
			json_object_array_put_idx(all, j, a);
		}
	events = json_object_new_array();
	metadata = json_object_new_array();
	for (int64_t k = offset; k < offset + limit && (size_t)k < n; k++) {
		struct json_object *e = json_object_array_get_idx(
			all, desc ? n - 1 - (size_t)k : (size_t)k);
		struct json_object *m = json_object_new_object();

		square_list_time(e);
		json_object_array_add(events, json_object_get(e));
		json_object_object_add(m, "event_id", json_object_new_string(
			square_string(e, "event_id", NULL, NULL) != NULL ?
				square_string(e, "event_id", NULL, NULL) : ""));
		json_object_object_add(m, "api_version",
				       json_object_new_string("2025-10-16"));
		json_object_array_add(metadata, m);
	}
	answer = json_object_new_object();
	json_object_object_add(answer, "events", events);
	json_object_object_add(answer, "metadata", metadata);
	if ((size_t)(offset + limit) < n) {
		char next[64];

		snprintf(next, sizeof(next), "fakecursor%" PRId64, offset + limit);
		json_object_object_add(answer, "cursor",
				       json_object_new_string(next));
	}
	{
		size_t len = 0;
		const char *body = json_object_to_json_string_length(
			answer, JSON_C_TO_STRING_PLAIN, &len);

		if (strcmp(what, "truncate") == 0)
			len /= 2;
		log_request(200, page, "POST", target);
		respond(fd, 200, -1, body, len);
	}
	json_object_put(answer);
	json_object_put(all);
	json_object_put(req);
}

/* ---- komoju: GET /api/v1/events ------------------------------------------------
 *
 * KOMOJU's event list as komoju/komoju-ruby-sdk documents it
 * (docs/EventsApi.md "Event: List", docs/EventList.md, docs/Event.md,
 * docs/APIErrorError.md; the older degica/komoju-ruby lib/komoju/client.rb
 * schema agrees): HTTP Basic with KEY as the user and no password (else
 * 401 with KOMOJU's {"error": {"code", "message", "param", "details"}}),
 * start_time and end_time (date-time; whether inclusive is not published:
 * both inclusive here, the pass's overlap covers either), per_page
 * (default 10 here; KOMOJU publishes neither a default nor a largest page:
 * above 100 400 bad_request, an assumption), page (1 the first); "from
 * most-recent to least-recent"; {"resource": "list", "start_time",
 * "end_time", "total", "page", "per_page", "last_page", "data": [...]},
 * each item an event {id, type, resource "event", created_at, reason,
 * data}. The events file holds webhook bodies (created_at RFC 3339).
 */

static void komoju_error(int fd, int status, long retry_after, const char *code,
			 const char *message)
{
	char body[512];
	int n = snprintf(body, sizeof(body),
			 "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}",
			 code, message);

	respond(fd, status, retry_after, body, (size_t)n);
}

static void komoju_list(int fd, const char *target, const char *auth)
{
	const char *q = strchr(target, '?');
	int64_t from = -1, to = -1, per_page = 10, page_no = 1;
	bool bad = false;
	long fault_arg = -1;
	char what[32] = "", start_text[128] = "", end_text[128] = "";
	struct json_object *all = json_object_new_array(), *data, *answer;
	FILE *f;
	char *line = NULL;
	size_t cap = 0, n;

	while (q != NULL && *++q != '\0') {
		const char *amp = strchr(q, '&');
		size_t len = amp != NULL ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', len);
		char name[64], value[128];

		if (eq != NULL) {
			decode(q, (size_t)(eq - q), name, sizeof(name));
			decode(eq + 1, len - (size_t)(eq - q) - 1, value,
			       sizeof(value));
			if (strcmp(name, "start_time") == 0) {
				from = square_time(value);
				snprintf(start_text, sizeof(start_text), "%s",
					 value);
			} else if (strcmp(name, "end_time") == 0) {
				to = square_time(value);
				snprintf(end_text, sizeof(end_text), "%s", value);
			}
			else if (strcmp(name, "per_page") == 0)
				bad = !number(value, &per_page) || per_page < 1 ||
				      per_page > 100;
			else if (strcmp(name, "page") == 0)
				bad = bad || !number(value, &page_no) ||
				      page_no < 1;
		}
		q = amp;
	}
	if (!basic_auth_ok(auth)) {
		log_request(401, page_no, "GET", target);
		komoju_error(fd, 401, -1, "unauthorized",
			     "The secret key is not valid.");
		goto out;
	}
	if (bad) {
		log_request(400, page_no, "GET", target);
		komoju_error(fd, 400, -1, "bad_request",
			     "per_page must be between 1 and 100.");
		goto out;
	}
	if (fault_for(page_no, what, sizeof(what), &fault_arg)) {
		if (strcmp(what, "insert") == 0) {
			insert_pending();
		} else if (strcmp(what, "slow") == 0) {
			struct timespec ts = { fault_arg / 1000,
					       (fault_arg % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		} else if (strcmp(what, "truncate") != 0) {
			int status = atoi(what);

			log_request(status, page_no, "GET", target);
			komoju_error(fd, status,
				     status == 429 || status == 503 ? fault_arg
								    : -1,
				     status == 429 ? "too_many_requests" :
						     "internal_server_error",
				     "Fault injected.");
			goto out;
		}
	}
	/* The matching events, newest first (later lines first at ties). */
	f = fopen(events_path, "r");
	while (f != NULL && getline(&line, &cap, f) > 0) {
		struct json_object *event = json_tokener_parse(line);
		int64_t at = event != NULL ?
			square_time(square_string(event, "created_at", NULL,
						  NULL)) : -1;

		if (event != NULL && at >= 0 && (from < 0 || at >= from) &&
		    (to < 0 || at <= to))
			json_object_array_add(all, event);
		else
			json_object_put(event);
	}
	free(line);
	if (f != NULL)
		fclose(f);
	n = json_object_array_length(all);
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0; j--) {
			struct json_object *a = json_object_array_get_idx(all, j - 1);
			struct json_object *b = json_object_array_get_idx(all, j);

			if (square_time(square_string(a, "created_at", NULL, NULL)) >
			    square_time(square_string(b, "created_at", NULL, NULL)))
				break;
			json_object_get(a);
			json_object_get(b);
			json_object_array_put_idx(all, j - 1, b);
			json_object_array_put_idx(all, j, a);
		}
	data = json_object_new_array();
	for (size_t i = (size_t)((page_no - 1) * per_page);
	     i < n && i < (size_t)(page_no * per_page); i++)
		json_object_array_add(data, json_object_get(
					      json_object_array_get_idx(all, i)));
	answer = json_object_new_object();
	json_object_object_add(answer, "resource", json_object_new_string("list"));
	json_object_object_add(answer, "start_time", start_text[0] != '\0' ?
			       json_object_new_string(start_text) : NULL);
	json_object_object_add(answer, "end_time", end_text[0] != '\0' ?
			       json_object_new_string(end_text) : NULL);
	json_object_object_add(answer, "total", json_object_new_int64((int64_t)n));
	json_object_object_add(answer, "page", json_object_new_int64(page_no));
	json_object_object_add(answer, "per_page", json_object_new_int64(per_page));
	json_object_object_add(answer, "last_page", json_object_new_int64(
		n == 0 ? 1 : (int64_t)((n + (size_t)per_page - 1) / (size_t)per_page)));
	json_object_object_add(answer, "data", data);
	{
		size_t len = 0;
		const char *body = json_object_to_json_string_length(
			answer, JSON_C_TO_STRING_PLAIN, &len);

		if (strcmp(what, "truncate") == 0)
			len /= 2;
		log_request(200, page_no, "GET", target);
		respond(fd, 200, -1, body, len);
	}
	json_object_put(answer);
out:
	json_object_put(all);
}

/* The value of header name in head (NUL-terminated), copied into out. */
static const char *header(const char *head, const char *name, char *out,
			  size_t cap)
{
	size_t len = strlen(name);

	for (const char *line = strstr(head, "\r\n"); line != NULL;
	     line = strstr(line + 2, "\r\n")) {
		const char *v = line + 2;
		size_t n;

		if (strncasecmp(v, name, len) != 0 || v[len] != ':')
			continue;
		v += len + 1;
		while (*v == ' ')
			v++;
		n = strcspn(v, "\r\n");
		if (n >= cap)
			n = cap - 1;
		memcpy(out, v, n);
		out[n] = '\0';
		return out;
	}
	return NULL;
}

/* ---- the snapshot modes: razorpay, shopify -------------------------------
 *
 * Their events file holds one object per line as the provider's API lists
 * it (a Razorpay payment or refund entity; a Shopify order with its
 * refunds), read again at every request.
 */

static const char *mode;

/* Writes in[0..len) as padded base64 into out (4 * ((len + 2) / 3) + 1). */
static void base64(const unsigned char *in, size_t len, char *out)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = 0;

	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)in[i] << 16;

		if (i + 1 < len)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		out[n++] = abc[(v >> 18) & 63];
		out[n++] = abc[(v >> 12) & 63];
		out[n++] = i + 1 < len ? abc[(v >> 6) & 63] : '=';
		out[n++] = i + 2 < len ? abc[v & 63] : '=';
	}
	out[n] = '\0';
}

/* The value of query parameter name in q (after '?'), decoded; the
 * parameters' names are compared decoded too ("page%5Bnumber%5D" is
 * page[number]). */
static bool query_value(const char *q, const char *name, char *out, size_t cap)
{
	while (q != NULL && *q != '\0') {
		const char *amp = strchr(q, '&');
		size_t len = amp != NULL ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', len);
		char decoded[128];

		if (eq != NULL) {
			decode(q, (size_t)(eq - q), decoded, sizeof(decoded));
			if (strcmp(decoded, name) == 0) {
				decode(eq + 1, len - (size_t)(eq - q) - 1, out, cap);
				return true;
			}
		}
		q = amp != NULL ? amp + 1 : NULL;
	}
	return false;
}

/* The objects of the events file, in its order (a new array). */
static struct json_object *read_objects(void)
{
	FILE *f = fopen(events_path, "r");
	struct json_object *all = json_object_new_array();
	char *line = NULL;
	size_t cap = 0;

	if (f == NULL)
		return all;
	while (getline(&line, &cap, f) > 0) {
		struct json_object *o = json_tokener_parse(line);

		if (o != NULL)
			json_object_array_add(all, o);
	}
	free(line);
	fclose(f);
	return all;
}

/* Answers a fault of page as stripe_list does; true when one was sent
 * (*truncate set for a truncate fault, which the caller applies). */
static bool snapshot_fault(int fd, long page, const char *target,
			   bool *truncate)
{
	char what[32] = "";
	long arg = -1;

	*truncate = false;
	if (!fault_for(page, what, sizeof(what), &arg))
		return false;
	if (strcmp(what, "slow") == 0) {
		struct timespec ts = { arg / 1000, (arg % 1000) * 1000000L };

		nanosleep(&ts, NULL);
		return false;
	}
	if (strcmp(what, "truncate") == 0) {
		*truncate = true;
		return false;
	}
	log_request(atoi(what), page, "GET", target);
	respond(fd, atoi(what), atoi(what) == 429 || atoi(what) == 503 ? arg : -1,
		"{\"error\": \"Fault injected\"}", 26);
	return true;
}

/* A 200 with page_obj (cut half-way when truncate), and a Link header
 * when link is not NULL or empty, logged as page of target. */
static void answer_page(int fd, struct json_object *page_obj, bool truncate,
			long page, const char *target, const char *link)
{
	char head[8192], linkh[6144] = "";
	size_t len = 0;
	const char *text = json_object_to_json_string_length(
		page_obj, JSON_C_TO_STRING_PLAIN, &len);
	int n;

	if (truncate)
		len /= 2;
	if (link != NULL && link[0] != '\0')
		snprintf(linkh, sizeof(linkh), "link: %s\r\n", link);
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 200 OK\r\nContent-Type: application/json; "
		     "charset=utf-8\r\nContent-Length: %zu\r\n%s"
		     "Connection: close\r\n\r\n", len, linkh);
	log_request(200, page, "GET", target);
	send_all(fd, head, (size_t)n);
	send_all(fd, text, len);
}

/* razorpay: GET /v1/payments and GET /v1/refunds as razorpay.com/docs/api
 * documents them: HTTP Basic key_id:key_secret (else 401 with Razorpay's
 * error object), from and to (Unix seconds of created_at, inclusive),
 * count (1-100, default 10; above 100: 400 BAD_REQUEST_ERROR as Razorpay
 * answers), skip; newest first (by created_at, later lines newer);
 * {"entity": "collection", "count": n, "items": [...]}. Pages of payments
 * are pages 1, 2, ...; pages of refunds 101, 102, ... for the faults. */
static void razorpay_error(int fd, int status, const char *description)
{
	char body[512];
	int n = snprintf(body, sizeof(body),
			 "{\"error\":{\"code\":\"BAD_REQUEST_ERROR\","
			 "\"description\":\"%s\",\"source\":\"NA\","
			 "\"step\":\"NA\",\"reason\":\"NA\",\"metadata\":{}}}",
			 description);

	respond(fd, status, -1, body, (size_t)n);
}

static void razorpay_list(int fd, const char *target, const char *auth,
			  const char *kind)
{
	const char *q = strchr(target, '?');
	char value[256], expected[1024], basic[700];
	int64_t from = INT64_MIN, to = INT64_MAX, count = 10, skip = 0, v;
	struct json_object *all = read_objects(), *items, *page_obj;
	struct json_object *match = json_object_new_array();
	long page;
	bool truncate;

	if (q != NULL)
		q++;
	if (query_value(q, "from", value, sizeof(value)) && number(value, &v))
		from = v;
	if (query_value(q, "to", value, sizeof(value)) && number(value, &v))
		to = v;
	if (query_value(q, "skip", value, sizeof(value)) && number(value, &v))
		skip = v;
	if (query_value(q, "count", value, sizeof(value)) &&
	    (!number(value, &count) || count < 1 || count > 100)) {
		log_request(400, 0, "GET", target);
		razorpay_error(fd, 400, "The count may not be greater than 100.");
		goto out;
	}
	page = (long)(skip / count) + 1 + (strcmp(kind, "refund") == 0 ? 100 : 0);
	base64((const unsigned char *)key, strlen(key), basic);
	snprintf(expected, sizeof(expected), "Basic %s", basic);
	if (auth == NULL || strcmp(auth, expected) != 0) {
		log_request(401, page, "GET", target);
		razorpay_error(fd, 401, "The api key provided is invalid");
		goto out;
	}
	if (snapshot_fault(fd, page, target, &truncate))
		goto out;
	/* Newest first: by created_at, later lines first at equal times
	 * (walking the file from its end, a stable insertion). */
	for (size_t i = json_object_array_length(all); i-- > 0;) {
		struct json_object *o = json_object_array_get_idx(all, i), *e, *c;
		int64_t created;
		size_t n;

		if (!json_object_object_get_ex(o, "entity", &e) ||
		    strcmp(json_object_get_string(e), kind) != 0 ||
		    !json_object_object_get_ex(o, "created_at", &c))
			continue;
		created = json_object_get_int64(c);
		if (created < from || created > to)
			continue;
		json_object_array_add(match, json_object_get(o));
		/* Move it down past the newer ones already there. */
		for (n = json_object_array_length(match) - 1; n > 0; n--) {
			struct json_object *prev =
				json_object_array_get_idx(match, n - 1), *pc;

			json_object_object_get_ex(prev, "created_at", &pc);
			if (json_object_get_int64(pc) >= created)
				break;
			json_object_get(prev);
			json_object_array_put_idx(match, n, prev);
			json_object_array_put_idx(match, n - 1, json_object_get(o));
		}
	}
	items = json_object_new_array();
	for (int64_t i = skip; i < skip + count &&
			       i < (int64_t)json_object_array_length(match); i++)
		json_object_array_add(items, json_object_get(
				json_object_array_get_idx(match, (size_t)i)));
	page_obj = json_object_new_object();
	json_object_object_add(page_obj, "entity",
			       json_object_new_string("collection"));
	json_object_object_add(page_obj, "count", json_object_new_int64(
				       (int64_t)json_object_array_length(items)));
	json_object_object_add(page_obj, "items", items);
	answer_page(fd, page_obj, truncate, page, target, NULL);
	json_object_put(page_obj);
out:
	json_object_put(match);
	json_object_put(all);
}

/* shopify: GET /admin/api/2026-10/orders.json as shopify.dev documents it
 * (the Order resource; pagination-rest): "X-Shopify-Access-Token: KEY"
 * (else 401 with Shopify's errors object), another API version 404,
 * status (default open: no closed_at nor cancelled_at; any: all),
 * updated_at_min and updated_at_max (ISO 8601, inclusive), limit (1-250,
 * default 50: shopify.dev/docs/api/usage/pagination-rest; above 250: 400,
 * an assumption: Shopify does not publish what it answers then, and
 * third-party accounts say it returns 250), page_info (from the Link
 * header; with any parameter but limit: 400, as Shopify refuses it:
 * "A request that includes the page_info parameter can't include any
 * other parameters except for limit"); the file's order; {"orders":
 * [...]}, and a link header with rel="previous" and rel="next" as there
 * are, its name in lower case as Shopify has sent it since 2023
 * (community.shopify.com/t/pagination-link-header-is-now-lower-case/
 * 283881). A page's number for the faults: its offset / limit + 1. */
#define SHOPIFY_VERSION_PATH "/admin/api/2026-10/orders.json"

static void shopify_error(int fd, int status, const char *errors)
{
	char body[512];
	int n = snprintf(body, sizeof(body), "{\"errors\":%s}", errors);

	respond(fd, status, -1, body, (size_t)n);
}

/* ISO 8601 (2026-12-01T10:00:00Z or ...-05:00) as Unix seconds. */
static bool iso_time(const char *text, int64_t *out)
{
	struct tm tm;
	int y, mo, d, h, mi, sec, n = 0, zh = 0, zm = 0;
	const char *zone;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(text, "%d-%d-%dT%d:%d:%d%n", &y, &mo, &d, &h, &mi, &sec,
		   &n) != 6)
		return false;
	zone = text + n;
	if (*zone == '.')
		zone += strspn(zone + 1, "0123456789") + 1;
	if (strcmp(zone, "Z") != 0 &&
	    !((zone[0] == '+' || zone[0] == '-') &&
	      sscanf(zone + 1, "%d:%d", &zh, &zm) == 2))
		return false;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*out = (int64_t)timegm(&tm) -
	       (zone[0] == '-' ? -1 : zone[0] == '+' ? 1 : 0) *
		       (int64_t)(zh * 3600 + zm * 60);
	return true;
}

static void shopify_list(int fd, const char *head, const char *target)
{
	const char *q = strchr(target, '?');
	char value[512], token[512], auth[1024], host[256] = "127.0.0.1";
	char link[6144] = "", status[32] = "open";
	int64_t min = INT64_MIN, max = INT64_MAX, limit = 50, offset = 0;
	struct json_object *all = read_objects(), *orders, *page_obj;
	struct json_object *match = json_object_new_array();
	long page;
	bool truncate, has_info;

	if (q != NULL)
		q++;
	header(head, "Host", host, sizeof(host));
	has_info = query_value(q, "page_info", token, sizeof(token));
	if (query_value(q, "limit", value, sizeof(value)) &&
	    (!number(value, &limit) || limit < 1 || limit > 250)) {
		log_request(400, 0, "GET", target);
		shopify_error(fd, 400, "{\"limit\":[\"must be less than or "
			      "equal to 250\"]}");
		goto out;
	}
	if (has_info) {
		/* The token carries the filters: o<offset>_<min>_<max>_<status>. */
		long long o, a, b;
		char st[32];

		for (const char *c = q; c != NULL && *c != '\0';) {
			if (strncmp(c, "limit=", 6) != 0 &&
			    strncmp(c, "page_info=", 10) != 0 &&
			    strncmp(c, "fields=", 7) != 0) {
				log_request(400, 0, "GET", target);
				shopify_error(fd, 400, "{\"page_info\":[\"page_info "
					      "takes no other parameter than "
					      "limit and fields\"]}");
				goto out;
			}
			c = strchr(c, '&');
			c = c != NULL ? c + 1 : NULL;
		}
		if (sscanf(token, "o%lld_%lld_%lld_%31[a-z]", &o, &a, &b, st) != 4) {
			log_request(400, 0, "GET", target);
			shopify_error(fd, 400, "{\"page_info\":[\"Invalid "
				      "value.\"]}");
			goto out;
		}
		offset = o;
		min = a;
		max = b;
		snprintf(status, sizeof(status), "%s", st);
	} else {
		if (query_value(q, "updated_at_min", value, sizeof(value)) &&
		    !iso_time(value, &min)) {
			log_request(400, 0, "GET", target);
			shopify_error(fd, 400, "{\"updated_at_min\":[\"is not a "
				      "date\"]}");
			goto out;
		}
		if (query_value(q, "updated_at_max", value, sizeof(value)) &&
		    !iso_time(value, &max)) {
			log_request(400, 0, "GET", target);
			shopify_error(fd, 400, "{\"updated_at_max\":[\"is not a "
				      "date\"]}");
			goto out;
		}
		if (query_value(q, "status", value, sizeof(value)))
			snprintf(status, sizeof(status), "%.31s", value);
	}
	page = (long)(offset / limit) + 1;
	if (header(head, "X-Shopify-Access-Token", auth, sizeof(auth)) == NULL ||
	    strcmp(auth, key) != 0) {
		log_request(401, page, "GET", target);
		shopify_error(fd, 401, "\"[API] Invalid API key or access token "
			      "(unrecognized login or wrong password)\"");
		goto out;
	}
	if (snapshot_fault(fd, page, target, &truncate))
		goto out;
	for (size_t i = 0; i < json_object_array_length(all); i++) {
		struct json_object *o = json_object_array_get_idx(all, i), *v;
		int64_t updated;

		if (!json_object_object_get_ex(o, "updated_at", &v) ||
		    !iso_time(json_object_get_string(v), &updated) ||
		    updated < min || updated > max)
			continue;
		if (strcmp(status, "any") != 0 &&
		    ((json_object_object_get_ex(o, "closed_at", &v) && v != NULL) ||
		     (json_object_object_get_ex(o, "cancelled_at", &v) && v != NULL)))
			continue;
		json_object_array_add(match, json_object_get(o));
	}
	orders = json_object_new_array();
	for (int64_t i = offset; i < offset + limit &&
			       i < (int64_t)json_object_array_length(match); i++)
		json_object_array_add(orders, json_object_get(
				json_object_array_get_idx(match, (size_t)i)));
	{
		char prev[2048] = "", next[2048] = "";

		if (offset > 0)
			snprintf(prev, sizeof(prev), "<http://%s%s?limit=%lld&"
				 "page_info=o%lld_%lld_%lld_%s>; rel=\"previous\"",
				 host, SHOPIFY_VERSION_PATH, (long long)limit,
				 (long long)(offset > limit ? offset - limit : 0),
				 (long long)min, (long long)max, status);
		if (offset + limit < (int64_t)json_object_array_length(match))
			snprintf(next, sizeof(next), "<http://%s%s?limit=%lld&"
				 "page_info=o%lld_%lld_%lld_%s>; rel=\"next\"",
				 host, SHOPIFY_VERSION_PATH, (long long)limit,
				 (long long)(offset + limit), (long long)min,
				 (long long)max, status);
		snprintf(link, sizeof(link), "%s%s%s", prev,
			 prev[0] != '\0' && next[0] != '\0' ? ", " : "", next);
	}
	page_obj = json_object_new_object();
	json_object_object_add(page_obj, "orders", orders);
	answer_page(fd, page_obj, truncate, page, target, link);
	json_object_put(page_obj);
out:
	json_object_put(match);
	json_object_put(all);
}

/* ---- paypal: POST /v1/oauth2/token, GET /v1/notifications/webhooks-events ---
 *
 * The token endpoint as developer.paypal.com/api/rest/authentication and
 * paypal/paypal-rest-api-specifications (securitySchemes: clientCredentials,
 * tokenUrl /v1/oauth2/token) document it: a POST with "Authorization: Basic
 * <base64 of KEY>" (KEY is client_id:secret; another: 401
 * {"error": "invalid_client", "error_description": "Client Authentication
 * failed"}, as PayPal answers), Content-Type
 * application/x-www-form-urlencoded and the body
 * grant_type=client_credentials (else 400 unsupported_grant_type: the
 * wording is an assumption); it answers {"scope", "access_token",
 * "token_type": "Bearer", "app_id", "expires_in", "nonce"} (the fields of
 * PayPal's docs example), each token new, valid --ttl seconds (default
 * 32398, the docs example's).
 *
 * The list as the spec's webhooks-events.list documents it: a token the
 * fake issued and that has not expired as "Authorization: Bearer" (else
 * 401 {"name": "AUTHENTICATION_FAILURE", ...}, PayPal's documented 401
 * body), page_size (default 10; PayPal publishes no largest: outside
 * 1-300 400 VALIDATION_ERROR here, an assumption), start_time and end_time
 * (RFC 3339, both inclusive; a time that does not read: 400
 * VALIDATION_ERROR as the PayPal-node-SDK's mock answers), newest first
 * (by create_time, later lines first at ties); {"events": [...], "count":
 * n, "links": [self, and next while more follow]}, next written as the
 * PayPal-PHP-SDK's testEventSearch.json has it: the times as asked,
 * page_size, move_to=next, index_time (the list's newest create_time) and
 * index_id (the offset here). The events file holds webhook bodies, the
 * shape a listed event has. A page's number for the faults: its offset /
 * page_size + 1; the token requests take no fault. The fault line "revoke
 * PAGE COUNT" forgets every token issued before page PAGE is answered (a
 * token PayPal no longer honours before its expires_in).
 */
#define PAYPAL_TOKENS_MAX 256
#define PAYPAL_EVENTS "/v1/notifications/webhooks-events"

static long paypal_ttl_s = 32398;
static struct {
	char token[64];
	int64_t expires_ms;
} paypal_tokens[PAYPAL_TOKENS_MAX];
static unsigned paypal_issued;

/* A PayPal error object with name and message (and one detail's field). */
static void paypal_error(int fd, int status, long retry_after, const char *name,
			 const char *message, const char *field)
{
	char body[1024];
	int n;

	if (field != NULL)
		n = snprintf(body, sizeof(body),
			     "{\"name\":\"%s\",\"message\":\"%s\",\"debug_id\":"
			     "\"fake\",\"details\":[{\"field\":\"%s\",\"issue\":"
			     "\"Invalid data provided\"}]}", name, message, field);
	else
		n = snprintf(body, sizeof(body),
			     "{\"name\":\"%s\",\"message\":\"%s\",\"debug_id\":"
			     "\"fake\",\"links\":[{\"href\":\"https://developer."
			     "paypal.com/api/rest/responses/#link-%s\",\"rel\":"
			     "\"information_link\"}]}", name, message, name);
	respond(fd, status, retry_after, body, (size_t)n);
}

static void paypal_token(int fd, const char *head, size_t len,
			 const char *target)
{
	char auth[1024], type[256], basic[1500], expected[1600], answer[1024];
	char *body = square_body(fd, head, len);
	unsigned slot;
	int n;

	base64((const unsigned char *)key, strlen(key), basic);
	snprintf(expected, sizeof(expected), "Basic %s", basic);
	if (header(head, "Authorization", auth, sizeof(auth)) == NULL ||
	    strcmp(auth, expected) != 0) {
		static const char refused[] =
			"{\"error\":\"invalid_client\",\"error_description\":"
			"\"Client Authentication failed\"}";

		log_request(401, 0, "POST", target);
		respond(fd, 401, -1, refused, sizeof(refused) - 1);
		goto out;
	}
	if (header(head, "Content-Type", type, sizeof(type)) == NULL ||
	    strncmp(type, "application/x-www-form-urlencoded", 33) != 0 ||
	    body == NULL || strcmp(body, "grant_type=client_credentials") != 0) {
		static const char bad[] =
			"{\"error\":\"unsupported_grant_type\","
			"\"error_description\":\"Grant Type is NULL\"}";

		log_request(400, 0, "POST", target);
		respond(fd, 400, -1, bad, sizeof(bad) - 1);
		goto out;
	}
	slot = paypal_issued++ % PAYPAL_TOKENS_MAX;
	snprintf(paypal_tokens[slot].token, sizeof(paypal_tokens[slot].token),
		 "A21AAFakeToken%06u_%lld", paypal_issued,
		 (long long)request_ms);
	paypal_tokens[slot].expires_ms = request_ms + paypal_ttl_s * 1000;
	n = snprintf(answer, sizeof(answer),
		     "{\"scope\":\"https://uri.paypal.com/services/applications/"
		     "webhooks openid\",\"access_token\":\"%s\",\"token_type\":"
		     "\"Bearer\",\"app_id\":\"APP-80W284485P519543T\","
		     "\"expires_in\":%ld,\"nonce\":\"fake-%u\"}",
		     paypal_tokens[slot].token, paypal_ttl_s, paypal_issued);
	log_request(200, 0, "POST", target);
	respond(fd, 200, -1, answer, (size_t)n);
out:
	free(body);
}

/* Whether auth is "Bearer <a token issued and not expired>". */
static bool paypal_token_ok(const char *auth)
{
	if (auth == NULL || strncmp(auth, "Bearer ", 7) != 0)
		return false;
	for (unsigned i = 0; i < PAYPAL_TOKENS_MAX; i++)
		if (paypal_tokens[i].token[0] != '\0' &&
		    strcmp(paypal_tokens[i].token, auth + 7) == 0)
			return paypal_tokens[i].expires_ms > request_ms;
	return false;
}

/* The create_time (or created_at under attributes) of o as Unix seconds;
 * INT64_MIN when it has none that reads. */
static int64_t listed_time(struct json_object *o)
{
	struct json_object *v;
	int64_t t;

	if (json_object_object_get_ex(o, "attributes", &v))
		o = v;
	if ((json_object_object_get_ex(o, "create_time", &v) ||
	     json_object_object_get_ex(o, "created_at", &v)) &&
	    json_object_is_type(v, json_type_string) &&
	    iso_time(json_object_get_string(v), &t))
		return t;
	return INT64_MIN;
}

/* The objects of the events file whose listed_time is in [from, to],
 * newest first, later lines first at equal times (a new array). */
static struct json_object *newest_first(int64_t from, int64_t to)
{
	struct json_object *all = read_objects(), *match = json_object_new_array();

	for (size_t i = json_object_array_length(all); i-- > 0;) {
		struct json_object *o = json_object_array_get_idx(all, i);
		int64_t t = listed_time(o);
		size_t n;

		if (t == INT64_MIN || t < from || t > to)
			continue;
		json_object_array_add(match, json_object_get(o));
		/* Move it down past the newer ones already there. */
		for (n = json_object_array_length(match) - 1; n > 0; n--) {
			struct json_object *prev =
				json_object_array_get_idx(match, n - 1);

			if (listed_time(prev) >= t)
				break;
			json_object_get(prev);
			json_object_array_put_idx(match, n, prev);
			json_object_array_put_idx(match, n - 1, json_object_get(o));
		}
	}
	json_object_put(all);
	return match;
}

static void paypal_list(int fd, const char *head, const char *target)
{
	const char *q = strchr(target, '?');
	char value[256], start[128] = "", end[128] = "", auth[1024], what[32] = "";
	int64_t from = INT64_MIN, to = INT64_MAX, size = 10, offset = 0;
	struct json_object *match = NULL, *events, *links, *page_obj;
	long page, fault_arg = -1;
	bool fault, stuck = false, truncate = false;
	size_t n;

	if (q != NULL)
		q++;
	if (query_value(q, "index_id", value, sizeof(value)) &&
	    (!number(value, &offset) || offset < 0))
		offset = 0;
	if (query_value(q, "page_size", value, sizeof(value)) &&
	    !number(value, &size))
		size = -1;
	page = size > 0 ? (long)(offset / size) + 1 : 1;
	fault = fault_for(page, what, sizeof(what), &fault_arg);
	if (fault && strcmp(what, "revoke") == 0)
		for (unsigned i = 0; i < PAYPAL_TOKENS_MAX; i++)
			paypal_tokens[i].expires_ms = 0;
	if (!paypal_token_ok(header(head, "Authorization", auth, sizeof(auth)))) {
		log_request(401, page, "GET", target);
		paypal_error(fd, 401, -1, "AUTHENTICATION_FAILURE",
			     "Authentication failed due to invalid "
			     "authentication credentials or a missing "
			     "Authorization header.", NULL);
		return;
	}
	if (size < 1 || size > 300) {
		log_request(400, page, "GET", target);
		paypal_error(fd, 400, -1, "VALIDATION_ERROR",
			     "Invalid request - see details", "page_size");
		return;
	}
	if ((query_value(q, "start_time", start, sizeof(start)) &&
	     !iso_time(start, &from)) ||
	    (query_value(q, "end_time", end, sizeof(end)) &&
	     !iso_time(end, &to))) {
		log_request(400, page, "GET", target);
		paypal_error(fd, 400, -1, "VALIDATION_ERROR",
			     "Invalid request - see details",
			     from == INT64_MIN && start[0] != '\0' ?
				     "start_time" : "end_time");
		return;
	}
	if (fault) {
		if (strcmp(what, "slow") == 0) {
			sleep_ms(fault_arg);
		} else if (strcmp(what, "stuck") == 0) {
			stuck = true;
		} else if (strcmp(what, "truncate") == 0) {
			truncate = true;
		} else if (strcmp(what, "revoke") != 0) {
			int status = atoi(what);

			log_request(status, page, "GET", target);
			paypal_error(fd, status,
				     status == 429 || status == 503 ? fault_arg
								    : -1,
				     status == 429 ? "RATE_LIMIT_REACHED" :
						     "INTERNAL_SERVICE_ERROR",
				     "Fault injected.", NULL);
			return;
		}
	}
	match = newest_first(from, to);
	n = json_object_array_length(match);
	events = json_object_new_array();
	for (size_t i = (size_t)offset; i < n && i < (size_t)(offset + size); i++)
		json_object_array_add(events, json_object_get(
					      json_object_array_get_idx(match, i)));
	links = json_object_new_array();
	{
		char href[4200];
		struct json_object *self = json_object_new_object();

		snprintf(href, sizeof(href), "http://127.0.0.1:%u%s", listen_port,
			 target);
		json_object_object_add(self, "href", json_object_new_string(href));
		json_object_object_add(self, "rel", json_object_new_string("self"));
		json_object_object_add(self, "method", json_object_new_string("GET"));
		json_object_array_add(links, self);
		if (stuck || (size_t)(offset + size) < n) {
			struct json_object *next = json_object_new_object(), *v;
			const char *newest = "";

			if (n > 0 && json_object_object_get_ex(
					     json_object_array_get_idx(match, 0),
					     "create_time", &v))
				newest = json_object_get_string(v);
			snprintf(href, sizeof(href),
				 "http://127.0.0.1:%u" PAYPAL_EVENTS
				 "?start_time=%s&end_time=%s&page_size=%lld"
				 "&move_to=next&index_time=%s&index_id=%lld",
				 listen_port, start, end, (long long)size, newest,
				 (long long)(stuck ? offset : offset + size));
			json_object_object_add(next, "href",
					       json_object_new_string(href));
			json_object_object_add(next, "rel",
					       json_object_new_string("next"));
			json_object_object_add(next, "method",
					       json_object_new_string("GET"));
			json_object_array_add(links, next);
		}
	}
	page_obj = json_object_new_object();
	json_object_object_add(page_obj, "events", events);
	json_object_object_add(page_obj, "count", json_object_new_int64(
				       (int64_t)json_object_array_length(events)));
	json_object_object_add(page_obj, "links", links);
	answer_page(fd, page_obj, truncate, page, target, NULL);
	json_object_put(page_obj);
	json_object_put(match);
}

/* ---- lemonsqueezy: GET /v1/orders (JSON:API) -------------------------------
 *
 * As docs.lemonsqueezy.com/api/orders/list-all-orders and
 * /api/getting-started/requests document it (and lmsqueezy/lemonsqueezy.js
 * sends it): "Authorization: Bearer KEY" (else 401 with a JSON:API errors
 * array), "Accept: application/vnd.api+json" (the docs require it; what
 * Lemon Squeezy answers without it is not published: 406 here, JSON:API's
 * status for a media type it cannot serve, an assumption), page[number]
 * (1 the first), page[size] (default 10; no largest published: outside
 * 1-100 400 here, an assumption), sort (ignored: the list is newest
 * first, by attributes.created_at, later lines first at ties, as the docs
 * say it is ordered); {"meta": {"page": {"currentPage", "from",
 * "lastPage", "perPage", "to", "total"}}, "jsonapi": {"version": "1.0"},
 * "links": {"first", "last", "next" and "prev" as there are}, "data":
 * [...]}, the shape of the docs' example. The events file holds order
 * resources as the list holds them. A page's number for the faults is
 * its page[number]; "insert PAGE COUNT" as for the offset lists.
 */
static void ls_error(int fd, int status, const char *title, const char *detail)
{
	char body[512];
	int n = snprintf(body, sizeof(body),
			 "{\"jsonapi\":{\"version\":\"1.0\"},\"errors\":[{"
			 "\"detail\":\"%s\",\"status\":\"%d\",\"title\":\"%s\"}]}",
			 detail, status, title);

	respond(fd, status, -1, body, (size_t)n);
}

static void ls_list(int fd, const char *head, const char *target)
{
	const char *q = strchr(target, '?');
	char value[256], auth[1024], accept[256], expected[1024], what[32] = "";
	int64_t number_asked = 1, size = 10, last;
	struct json_object *match, *data, *meta, *pages, *links, *page_obj;
	long fault_arg = -1;
	bool truncate = false;
	size_t n;

	if (q != NULL)
		q++;
	if (query_value(q, "page[number]", value, sizeof(value)) &&
	    (!number(value, &number_asked) || number_asked < 1))
		number_asked = -1;
	if (query_value(q, "page[size]", value, sizeof(value)) &&
	    !number(value, &size))
		size = -1;
	snprintf(expected, sizeof(expected), "Bearer %s", key);
	if (header(head, "Authorization", auth, sizeof(auth)) == NULL ||
	    strcmp(auth, expected) != 0) {
		log_request(401, number_asked, "GET", target);
		ls_error(fd, 401, "Unauthorized", "Unauthenticated.");
		return;
	}
	if (header(head, "Accept", accept, sizeof(accept)) == NULL ||
	    strstr(accept, "application/vnd.api+json") == NULL) {
		log_request(406, number_asked, "GET", target);
		ls_error(fd, 406, "Not Acceptable",
			 "Accept must be application/vnd.api+json.");
		return;
	}
	if (size < 1 || size > 100 || number_asked < 1) {
		log_request(400, number_asked, "GET", target);
		ls_error(fd, 400, "Bad Request",
			 "page[size] must be 1 to 100, page[number] 1 or more.");
		return;
	}
	if (fault_for(number_asked, what, sizeof(what), &fault_arg)) {
		if (strcmp(what, "insert") == 0) {
			insert_pending();
		} else if (strcmp(what, "slow") == 0) {
			sleep_ms(fault_arg);
		} else if (strcmp(what, "truncate") == 0) {
			truncate = true;
		} else {
			static const char failed[] =
				"{\"errors\":[{\"detail\":\"Fault injected.\"}]}";
			int status = atoi(what);

			log_request(status, number_asked, "GET", target);
			respond(fd, status,
				status == 429 || status == 503 ? fault_arg : -1,
				failed, sizeof(failed) - 1);
			return;
		}
	}
	match = newest_first(INT64_MIN, INT64_MAX);
	n = json_object_array_length(match);
	last = n == 0 ? 1 : (int64_t)((n + (size_t)size - 1) / (size_t)size);
	data = json_object_new_array();
	for (size_t i = (size_t)((number_asked - 1) * size);
	     i < n && i < (size_t)(number_asked * size); i++)
		json_object_array_add(data, json_object_get(
					      json_object_array_get_idx(match, i)));
	pages = json_object_new_object();
	json_object_object_add(pages, "currentPage", json_object_new_int64(number_asked));
	json_object_object_add(pages, "from", json_object_new_int64(
		(number_asked - 1) * size + 1));
	json_object_object_add(pages, "lastPage", json_object_new_int64(last));
	json_object_object_add(pages, "perPage", json_object_new_int64(size));
	json_object_object_add(pages, "to", json_object_new_int64(
		(number_asked - 1) * size +
		(int64_t)json_object_array_length(data)));
	json_object_object_add(pages, "total", json_object_new_int64((int64_t)n));
	meta = json_object_new_object();
	json_object_object_add(meta, "page", pages);
	links = json_object_new_object();
	{
		static const char *const names[] = { "first", "last", "next", "prev" };
		int64_t to_page[] = { 1, last, number_asked + 1, number_asked - 1 };

		for (size_t i = 0; i < 4; i++) {
			char href[512];

			if ((i == 2 && number_asked >= last) ||
			    (i == 3 && number_asked <= 1))
				continue;
			snprintf(href, sizeof(href),
				 "http://127.0.0.1:%u/v1/orders?page%%5Bnumber%%5D="
				 "%lld&page%%5Bsize%%5D=%lld&sort=-createdAt",
				 listen_port, (long long)to_page[i],
				 (long long)size);
			json_object_object_add(links, names[i],
					       json_object_new_string(href));
		}
	}
	page_obj = json_object_new_object();
	json_object_object_add(page_obj, "meta", meta);
	{
		struct json_object *api = json_object_new_object();

		json_object_object_add(api, "version", json_object_new_string("1.0"));
		json_object_object_add(page_obj, "jsonapi", api);
	}
	json_object_object_add(page_obj, "links", links);
	json_object_object_add(page_obj, "data", data);
	answer_page(fd, page_obj, truncate, number_asked, target, NULL);
	json_object_put(page_obj);
	json_object_put(match);
}

/* Serves a request of a snapshot mode; false when it is not one of its
 * paths. */
static bool snapshot_serve(int fd, const char *head, const char *method,
			   const char *target)
{
	char auth[1024];

	if (strcmp(mode, "razorpay") == 0 && strcmp(method, "GET") == 0) {
		const char *auth_value = header(head, "Authorization", auth,
						sizeof(auth));

		if (strncmp(target, "/v1/payments?", 13) == 0 ||
		    strcmp(target, "/v1/payments") == 0) {
			razorpay_list(fd, target, auth_value, "payment");
			return true;
		}
		if (strncmp(target, "/v1/refunds?", 12) == 0 ||
		    strcmp(target, "/v1/refunds") == 0) {
			razorpay_list(fd, target, auth_value, "refund");
			return true;
		}
	}
	if (strcmp(mode, "lemonsqueezy") == 0 && strcmp(method, "GET") == 0 &&
	    (strncmp(target, "/v1/orders?", 11) == 0 ||
	     strcmp(target, "/v1/orders") == 0)) {
		ls_list(fd, head, target);
		return true;
	}
	if (strcmp(mode, "shopify") == 0 && strcmp(method, "GET") == 0 &&
	    (strncmp(target, SHOPIFY_VERSION_PATH "?",
		     sizeof(SHOPIFY_VERSION_PATH)) == 0 ||
	     strcmp(target, SHOPIFY_VERSION_PATH) == 0)) {
		shopify_list(fd, head, target);
		return true;
	}
	return false;
}

/* ---- end of the snapshot modes ---- */

static void serve(int fd)
{
	static char head[HEAD_MAX + 1];
	char method[16], target[4096], auth[1024];
	size_t len = 0;

	for (;;) {
		ssize_t n = read(fd, head + len, HEAD_MAX - len);

		if (n <= 0)
			return;
		len += (size_t)n;
		head[len] = '\0';
		if (strstr(head, "\r\n\r\n") != NULL)
			break;
		if (len == HEAD_MAX)
			return;
	}
	request_ms = now_ms();
	if (sscanf(head, "%15s %4095s", method, target) != 2)
		return;
	if (strcmp(mode, "paddle") == 0 && strcmp(method, "GET") == 0 &&
	    (strncmp(target, "/events?", 8) == 0 ||
	     strcmp(target, "/events") == 0)) {
		paddle_list(fd, target, header(head, "Authorization", auth,
					       sizeof(auth)));
		return;
	}
	if (strcmp(mode, "square") == 0 && strcmp(method, "POST") == 0 &&
	    strcmp(target, "/v2/events") == 0) {
		square_search(fd, head, len, target,
			      header(head, "Authorization", auth, sizeof(auth)));
		return;
	}
	if (strcmp(mode, "payjp") == 0 && strcmp(method, "GET") == 0 &&
	    (strncmp(target, "/v1/events?", 11) == 0 ||
	     strcmp(target, "/v1/events") == 0)) {
		payjp_list(fd, target, header(head, "Authorization", auth,
					      sizeof(auth)));
		return;
	}
	if (strcmp(mode, "paypal") == 0 && strcmp(method, "POST") == 0 &&
	    strcmp(target, "/v1/oauth2/token") == 0) {
		paypal_token(fd, head, len, target);
		return;
	}
	if (strcmp(mode, "paypal") == 0 && strcmp(method, "GET") == 0 &&
	    (strncmp(target, PAYPAL_EVENTS "?", sizeof(PAYPAL_EVENTS)) == 0 ||
	     strncmp(target, PAYPAL_EVENTS "/?", sizeof(PAYPAL_EVENTS) + 1) == 0 ||
	     strcmp(target, PAYPAL_EVENTS) == 0)) {
		paypal_list(fd, head, target);
		return;
	}
	if (strcmp(mode, "komoju") == 0 && strcmp(method, "GET") == 0 &&
	    (strncmp(target, "/api/v1/events?", 15) == 0 ||
	     strcmp(target, "/api/v1/events") == 0)) {
		komoju_list(fd, target, header(head, "Authorization", auth,
					       sizeof(auth)));
		return;
	}
	if (strcmp(mode, "stripe") != 0) {
		if (!snapshot_serve(fd, head, method, target)) {
			log_request(404, 0, method, target);
			respond(fd, 404, -1, "{\"error\": \"Not Found\"}", 22);
		}
		return;
	}
	if (strcmp(method, "GET") == 0 &&
	    (strncmp(target, "/v1/events?", 11) == 0 ||
	     strcmp(target, "/v1/events") == 0)) {
		stripe_list(fd, target, header(head, "Authorization", auth,
					       sizeof(auth)));
		return;
	}
	log_request(404, 0, method, target);
	stripe_error(fd, 404, -1, "invalid_request_error",
		     "Unrecognized request URL");
}

static void usage(FILE *out)
{
	fputs("usage: provider_api --mode "
	      "stripe|paddle|square|payjp|komoju|razorpay|shopify|paypal|"
	      "lemonsqueezy --key KEY --events FILE --faults FILE --log FILE "
	      "[--ttl SECONDS]\n", out);
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr;
	socklen_t alen = sizeof(addr);
	const char *log_path = NULL;
	int fd, one = 1;

	for (int i = 1; i < argc; i++) {
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--mode") == 0 && next != NULL)
			mode = argv[++i];
		else if (strcmp(argv[i], "--key") == 0 && next != NULL)
			key = argv[++i];
		else if (strcmp(argv[i], "--events") == 0 && next != NULL)
			events_path = argv[++i];
		else if (strcmp(argv[i], "--faults") == 0 && next != NULL)
			faults_path = argv[++i];
		else if (strcmp(argv[i], "--log") == 0 && next != NULL)
			log_path = argv[++i];
		else if (strcmp(argv[i], "--ttl") == 0 && next != NULL)
			paypal_ttl_s = strtol(argv[++i], NULL, 10);
		else {
			usage(stderr);
			return 2;
		}
	}
	if (mode == NULL ||
	    (strcmp(mode, "stripe") != 0 && strcmp(mode, "paddle") != 0 &&
	     strcmp(mode, "square") != 0 && strcmp(mode, "payjp") != 0 &&
	     strcmp(mode, "komoju") != 0 && strcmp(mode, "razorpay") != 0 &&
	     strcmp(mode, "shopify") != 0 && strcmp(mode, "paypal") != 0 &&
	     strcmp(mode, "lemonsqueezy") != 0) ||
	    key == NULL ||
	    events_path == NULL || log_path == NULL) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	log_file = fopen(log_path, "a");
	if (log_file == NULL)
		fail(log_path);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fail("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(fd, SOMAXCONN) != 0 ||
	    getsockname(fd, (struct sockaddr *)&addr, &alen) != 0)
		fail("bind/listen on 127.0.0.1");
	listen_port = (unsigned)ntohs(addr.sin_port);
	if (printf("%u\n", listen_port) < 0 ||
	    fflush(stdout) != 0)
		fail("stdout");
	for (;;) {
		int c = accept(fd, NULL, NULL);

		if (c < 0) {
			if (errno == EINTR)
				continue;
			fail("accept");
		}
		serve(c);
		close(c);
	}
}
