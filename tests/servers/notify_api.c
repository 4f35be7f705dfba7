/* notify_api.c - test helper: a fake of the APIs of the providers that
 * only notify (Mollie, Mercado Pago, GoCardless) on a kernel-chosen
 * loopback port, for payhook-reconcile's fetches and lists. One mode per
 * provider; the objects it serves are JSON in the shape each provider
 * documents (the tests build them from tests/fixtures/providers/).
 *
 *   notify_api --mode mollie|mercadopago|gocardless --key KEY
 *              --objects FILE --faults FILE --log FILE
 *
 * prints its port on standard output, then serves one connection at a
 * time until killed. The objects file holds one JSON object per line and
 * is read again at every request, so a test can change what the API says
 * between fetches (a payment paid later, a refund added).
 *
 * Every request needs "Authorization: Bearer KEY" (else 401 with the
 * provider's error object); GoCardless's also "GoCardless-Version:
 * 2015-07-06" (else 400, as its API answers without it).
 *
 * mollie: the lines are Mollie's resources, told apart by "resource":
 * payment, refund, chargeback (the last two with "paymentId").
 *   GET /v2/payments/{id}               the payment, or 404
 *   GET /v2/payments/{id}/refunds       its refunds, {"count", "_embedded":
 *   GET /v2/payments/{id}/chargebacks   {...}, "_links": {"next": ...}},
 *                                       limit (1-250, default 50) and from
 *                                       (an id of the list: included)
 *   GET /v2/payments                    every payment, newest first (later
 *                                       lines first), limit and from
 * mercadopago: the lines are payments (numeric "id").
 *   GET /v1/payments/{id}               the payment, or 404 (its error
 *                                       object, cause code 2000)
 *   GET /v1/payments/search             {"paging": {total, limit, offset},
 *                                       "results"}: range date_created,
 *                                       begin_date/end_date (ISO 8601,
 *                                       inclusive), sort date_created,
 *                                       criteria asc, offset, limit (1-100)
 * gocardless: the lines are {"payments": {...}}, {"refunds": {...}} or
 * {"events": {...}}, one resource each.
 *   GET /payments/{id}, /refunds/{id}   {"payments": ...}, or 404
 *   GET /events                         {"events": [...], "meta":
 *                                       {"cursors": {"before", "after"},
 *                                       "limit"}}, newest first: payment
 *                                       (links.payment), resource_type,
 *                                       created_at[gte] and [lte], after
 *                                       (an event id: the page after it),
 *                                       limit (1-500, default 50)
 *
 * Faults: before each answer the faults file is read (absent: none); each
 * line "WHAT MATCH COUNT [ARG]" applies to requests whose target contains
 * MATCH ("*": every request), COUNT times (0: always; the count starts
 * again whenever the line changes):
 *
 *   401, 404, 500, ... answer with that status and the provider's error
 *   429 M C [S]        429, with "Retry-After: S" when S is given
 *   slow M C MS        answer after MS milliseconds
 *   down M C           close the connection without an answer
 *
 * Each request appends one line to the log file, "unix_ms status method
 * target" (unix_ms: when it arrived, before a slow answer; status 0: none
 * sent).
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
#define LINE_MAX_LEN 512

static const char *mode, *key, *objects_path, *faults_path;
static unsigned listen_port;
static FILE *log_file;
static int64_t request_ms;

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
	fprintf(stderr, "notify_api: %s: %s\n", what, strerror(errno));
	exit(1);
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

static void log_request(int status, const char *method, const char *target)
{
	fprintf(log_file, "%lld %d %s %s\n", (long long)request_ms, status,
		method, target);
	fflush(log_file);
}

static void respond(int fd, int status, long retry_after, const char *body)
{
	char head[512], wait[64] = "";
	size_t len = strlen(body);
	int n;

	if (retry_after >= 0)
		snprintf(wait, sizeof(wait), "Retry-After: %ld\r\n",
			 retry_after);
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d X\r\nContent-Type: %s\r\n"
		     "Content-Length: %zu\r\n%sConnection: close\r\n\r\n",
		     status, strcmp(mode, "mollie") == 0 ?
				     "application/hal+json" : "application/json",
		     len, wait);
	send_all(fd, head, (size_t)n);
	send_all(fd, body, len);
}

/* The provider's error object for status. */
static void error_answer(int fd, int status, long retry_after,
			 const char *method, const char *target)
{
	char body[768];

	if (strcmp(mode, "mollie") == 0)
		snprintf(body, sizeof(body),
			 "{\"status\":%d,\"title\":\"%s\",\"detail\":\"%s\","
			 "\"_links\":{\"documentation\":{\"href\":"
			 "\"https://docs.mollie.com/overview/handling-errors\","
			 "\"type\":\"text/html\"}}}", status,
			 status == 404 ? "Not Found" :
			 status == 401 ? "Unauthorized Request" : "Error",
			 status == 404 ? "No payment exists with this token." :
			 status == 401 ? "Missing authentication, or failed "
					 "to authenticate" : "Something failed");
	else if (strcmp(mode, "mercadopago") == 0)
		snprintf(body, sizeof(body),
			 "{\"message\":\"%s\",\"error\":\"%s\",\"status\":%d,"
			 "\"cause\":[{\"code\":%d,\"description\":\"%s\","
			 "\"data\":null}]}",
			 status == 404 ? "Payment not found" : "error",
			 status == 404 ? "not_found" :
			 status == 401 ? "unauthorized" : "internal_error",
			 status, status == 404 ? 2000 : status,
			 status == 404 ? "Payment not found" : "error");
	else
		snprintf(body, sizeof(body),
			 "{\"error\":{\"message\":\"%s\",\"errors\":[{\"reason\":"
			 "\"%s\",\"message\":\"%s\"}],\"documentation_url\":"
			 "\"https://developer.gocardless.com/api-reference#%s\","
			 "\"type\":\"%s\",\"request_id\":\"fake\",\"code\":%d}}",
			 status == 404 ? "Resource not found" : "error",
			 status == 404 ? "resource_not_found" : "error",
			 status == 404 ? "Resource not found" : "error",
			 status == 404 ? "resource_not_found" : "error",
			 status == 404 || status == 400 ? "invalid_api_usage" :
							  "gocardless",
			 status);
	log_request(status, method, target);
	respond(fd, status, retry_after, body);
}

/* The fault for this target, if any: fills what and arg. */
static bool fault_for(const char *target, char *what, size_t cap, long *arg)
{
	FILE *f = faults_path != NULL ? fopen(faults_path, "r") : NULL;
	char line[LINE_MAX_LEN];
	bool found = false;
	size_t i = 0;

	if (f == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL && i < FAULTS_MAX) {
		char w[32], match[256];
		long count = 0, a = -1;
		int got;

		line[strcspn(line, "\r\n")] = '\0';
		got = sscanf(line, "%31s %255s %ld %ld", w, match, &count, &a);
		if (got < 3)
			continue;
		if (strcmp(seen[i].line, line) != 0) {
			snprintf(seen[i].line, sizeof(seen[i].line), "%s", line);
			seen[i].used = 0;
		}
		if (!found &&
		    (strcmp(match, "*") == 0 || strstr(target, match) != NULL) &&
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

/* Every line of the objects file, as a new json-c array. */
static struct json_object *read_objects(void)
{
	struct json_object *all = json_object_new_array();
	FILE *f = fopen(objects_path, "r");
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

static const char *string_at(struct json_object *o, const char *a,
			     const char *b)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, a, &v))
		return NULL;
	if (b != NULL && !json_object_object_get_ex(v, b, &v))
		return NULL;
	return json_object_is_type(v, json_type_null) ? NULL :
	       json_object_get_string(v);
}

/* Decodes text[0..len) (%XX, '+') into out (cap bytes). */
static void decode(const char *text, size_t len, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < cap; i++) {
		if (text[i] == '%' && i + 2 < len) {
			char hex[3] = { text[i + 1], text[i + 2], 0 };

			out[o++] = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			out[o++] = text[i] == '+' ? ' ' : text[i];
		}
	}
	out[o] = '\0';
}

/* The value of name in the query q (names and values decoded), or NULL. */
static const char *query_value(const char *q, const char *name, char *out,
			       size_t cap)
{
	for (const char *at = q; at != NULL && *at != '\0';) {
		const char *end = strchr(at, '&');
		size_t len = end != NULL ? (size_t)(end - at) : strlen(at);
		const char *eq = memchr(at, '=', len);
		char name_here[128];

		if (eq != NULL) {
			decode(at, (size_t)(eq - at), name_here, sizeof(name_here));
			if (strcmp(name_here, name) == 0) {
				decode(eq + 1, len - (size_t)(eq - at) - 1, out,
				       cap);
				return out;
			}
		}
		at = end != NULL ? end + 1 : NULL;
	}
	return NULL;
}

static void answer_json(int fd, const char *method, const char *target,
			struct json_object *body)
{
	log_request(200, method, target);
	respond(fd, 200, -1,
		json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
}

/* A Mollie list of items (json-c array), paged by limit and from. */
static void mollie_list(int fd, const char *method, const char *target,
			const char *path, const char *name,
			struct json_object *items)
{
	const char *q = strchr(target, '?');
	char value[256], href[512];
	long limit = 50;
	size_t start = 0, n = json_object_array_length(items);
	struct json_object *page = json_object_new_array();
	struct json_object *body = json_object_new_object();
	struct json_object *embedded = json_object_new_object();
	struct json_object *links = json_object_new_object();

	if (q != NULL && query_value(q + 1, "limit", value, sizeof(value)))
		limit = strtol(value, NULL, 10);
	if (limit < 1 || limit > 250) {
		json_object_put(page);
		json_object_put(body);
		json_object_put(embedded);
		json_object_put(links);
		error_answer(fd, 400, -1, method, target);
		return;
	}
	if (q != NULL && query_value(q + 1, "from", value, sizeof(value)))
		for (start = 0; start < n; start++)
			if (strcmp(string_at(json_object_array_get_idx(items,
								       start),
					     "id", NULL), value) == 0)
				break;
	for (size_t i = start; i < n && (long)(i - start) < limit; i++)
		json_object_array_add(page, json_object_get(
			json_object_array_get_idx(items, i)));
	json_object_object_add(body, "count",
			       json_object_new_int((int)json_object_array_length(page)));
	json_object_object_add(embedded, name, page);
	json_object_object_add(body, "_embedded", embedded);
	if (start + (size_t)limit < n) {
		struct json_object *next = json_object_new_object();

		snprintf(href, sizeof(href),
			 "http://127.0.0.1:%u%s?from=%s&limit=%ld", listen_port,
			 path,
			 string_at(json_object_array_get_idx(items,
							     start + (size_t)limit),
				   "id", NULL),
			 limit);
		json_object_object_add(next, "href", json_object_new_string(href));
		json_object_object_add(next, "type",
				       json_object_new_string("application/hal+json"));
		json_object_object_add(links, "next", next);
	} else {
		json_object_object_add(links, "next", NULL);
	}
	json_object_object_add(links, "previous", NULL);
	json_object_object_add(body, "_links", links);
	answer_json(fd, method, target, body);
	json_object_put(body);
}

static void mollie(int fd, const char *method, const char *target,
		   struct json_object *all)
{
	char path[512], id[256], *sub;
	const char *q = strchr(target, '?');
	size_t plen = q != NULL ? (size_t)(q - target) : strlen(target);
	struct json_object *items = json_object_new_array();
	size_t n = json_object_array_length(all);

	snprintf(path, sizeof(path), "%.*s", (int)plen, target);
	if (strcmp(path, "/v2/payments") == 0) {
		/* Newest first: later lines first. */
		for (size_t i = n; i-- > 0;) {
			struct json_object *o = json_object_array_get_idx(all, i);
			const char *r = string_at(o, "resource", NULL);

			if (r != NULL && strcmp(r, "payment") == 0)
				json_object_array_add(items, json_object_get(o));
		}
		mollie_list(fd, method, target, path, "payments", items);
		json_object_put(items);
		return;
	}
	if (strncmp(path, "/v2/payments/", 13) != 0 ||
	    strlen(path + 13) >= sizeof(id)) {
		json_object_put(items);
		error_answer(fd, 404, -1, method, target);
		return;
	}
	snprintf(id, sizeof(id), "%s", path + 13);
	sub = strchr(id, '/');
	if (sub != NULL)
		*sub++ = '\0';
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(all, i);
		const char *r = string_at(o, "resource", NULL);
		const char *oid = string_at(o, "id", NULL);
		const char *pid = string_at(o, "paymentId", NULL);

		if (r == NULL)
			continue;
		if (sub == NULL && strcmp(r, "payment") == 0 && oid != NULL &&
		    strcmp(oid, id) == 0) {
			answer_json(fd, method, target, o);
			json_object_put(items);
			return;
		}
		if (sub != NULL && pid != NULL && strcmp(pid, id) == 0 &&
		    ((strcmp(sub, "refunds") == 0 && strcmp(r, "refund") == 0) ||
		     (strcmp(sub, "chargebacks") == 0 &&
		      strcmp(r, "chargeback") == 0)))
			json_object_array_add(items, json_object_get(o));
	}
	if (sub != NULL && (strcmp(sub, "refunds") == 0 ||
			    strcmp(sub, "chargebacks") == 0))
		mollie_list(fd, method, target, path, sub, items);
	else
		error_answer(fd, 404, -1, method, target);
	json_object_put(items);
}

/* Unix seconds of an ISO 8601 time with a zone ("2024-01-10T10:53:10.000-04:00",
 * "...Z"), or INT64_MIN. */
static int64_t iso_seconds(const char *text)
{
	struct tm tm;
	int y, mo, d, h, mi, s, n = 0, oh = 0, om = 0;
	const char *z;
	int64_t t;

	if (text == NULL ||
	    sscanf(text, "%d-%d-%dT%d:%d:%d%n", &y, &mo, &d, &h, &mi, &s, &n) < 6)
		return INT64_MIN;
	z = text + n;
	if (*z == '.')
		while (*++z >= '0' && *z <= '9')
			;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	t = (int64_t)timegm(&tm);
	if ((*z == '+' || *z == '-') && sscanf(z + 1, "%d:%d", &oh, &om) == 2)
		t -= (*z == '+' ? 1 : -1) * (oh * 3600 + om * 60);
	return t;
}

static int by_created(const void *a, const void *b)
{
	int64_t x = iso_seconds(string_at(*(struct json_object *const *)a,
					  "date_created", NULL));
	int64_t y = iso_seconds(string_at(*(struct json_object *const *)b,
					  "date_created", NULL));

	return x < y ? -1 : x > y;
}

static void mercadopago(int fd, const char *method, const char *target,
			struct json_object *all)
{
	const char *q = strchr(target, '?');
	size_t n = json_object_array_length(all);
	char value[256];

	if (strncmp(target, "/v1/payments/search", 19) == 0 &&
	    (target[19] == '\0' || target[19] == '?')) {
		int64_t begin = INT64_MIN, end = INT64_MAX;
		long offset = 0, limit = 30;
		struct json_object **found = calloc(n + 1, sizeof(*found));
		struct json_object *body = json_object_new_object();
		struct json_object *paging = json_object_new_object();
		struct json_object *results = json_object_new_array();
		size_t count = 0;

		if (q != NULL && query_value(q + 1, "begin_date", value, sizeof(value)))
			begin = iso_seconds(value);
		if (q != NULL && query_value(q + 1, "end_date", value, sizeof(value)))
			end = iso_seconds(value);
		if (q != NULL && query_value(q + 1, "offset", value, sizeof(value)))
			offset = strtol(value, NULL, 10);
		if (q != NULL && query_value(q + 1, "limit", value, sizeof(value)))
			limit = strtol(value, NULL, 10);
		for (size_t i = 0; i < n; i++) {
			struct json_object *o = json_object_array_get_idx(all, i);
			int64_t t = iso_seconds(string_at(o, "date_created",
							  NULL));

			if (t >= begin && t <= end)
				found[count++] = o;
		}
		qsort(found, count, sizeof(*found), by_created);
		for (size_t i = (size_t)offset; i < count &&
						(long)(i - (size_t)offset) < limit;
		     i++)
			json_object_array_add(results, json_object_get(found[i]));
		free(found);
		json_object_object_add(paging, "total",
				       json_object_new_int64((int64_t)count));
		json_object_object_add(paging, "limit", json_object_new_int64(limit));
		json_object_object_add(paging, "offset",
				       json_object_new_int64(offset));
		json_object_object_add(body, "paging", paging);
		json_object_object_add(body, "results", results);
		answer_json(fd, method, target, body);
		json_object_put(body);
		return;
	}
	if (strncmp(target, "/v1/payments/", 13) == 0) {
		char id[64];

		snprintf(id, sizeof(id), "%.*s",
			 (int)(q != NULL ? (size_t)(q - target) - 13
					 : strlen(target + 13)),
			 target + 13);
		for (size_t i = 0; i < n; i++) {
			struct json_object *o = json_object_array_get_idx(all, i);
			const char *oid = string_at(o, "id", NULL);

			if (oid != NULL && strcmp(oid, id) == 0) {
				answer_json(fd, method, target, o);
				return;
			}
		}
	}
	error_answer(fd, 404, -1, method, target);
}

static int events_newest_first(const void *a, const void *b)
{
	int64_t x = iso_seconds(string_at(*(struct json_object *const *)a,
					  "created_at", NULL));
	int64_t y = iso_seconds(string_at(*(struct json_object *const *)b,
					  "created_at", NULL));

	return x > y ? -1 : x < y;
}

static void gocardless(int fd, const char *method, const char *target,
		       struct json_object *all)
{
	const char *q = strchr(target, '?');
	size_t n = json_object_array_length(all);
	char value[256];
	const char *kinds[] = { "payments", "refunds" };

	for (size_t k = 0; k < 2; k++) {
		size_t plen = strlen(kinds[k]) + 2;
		char prefix[32], id[64];

		snprintf(prefix, sizeof(prefix), "/%s/", kinds[k]);
		if (strncmp(target, prefix, plen) != 0)
			continue;
		snprintf(id, sizeof(id), "%.*s",
			 (int)(q != NULL ? (size_t)(q - target) - plen
					 : strlen(target + plen)),
			 target + plen);
		for (size_t i = 0; i < n; i++) {
			struct json_object *o = json_object_array_get_idx(all, i);
			const char *oid = string_at(o, kinds[k], "id");

			if (oid != NULL && strcmp(oid, id) == 0) {
				answer_json(fd, method, target, o);
				return;
			}
		}
		error_answer(fd, 404, -1, method, target);
		return;
	}
	if (strncmp(target, "/events", 7) == 0 &&
	    (target[7] == '\0' || target[7] == '?')) {
		struct json_object **found = calloc(n + 1, sizeof(*found));
		struct json_object *body = json_object_new_object();
		struct json_object *meta = json_object_new_object();
		struct json_object *cursors = json_object_new_object();
		struct json_object *events = json_object_new_array();
		char payment[256] = "", type[256] = "", after[256] = "";
		int64_t gte = INT64_MIN, lt = INT64_MAX;
		long limit = 50;
		size_t count = 0, start = 0, i;

		if (q != NULL) {
			if (query_value(q + 1, "payment", value, sizeof(value)))
				snprintf(payment, sizeof(payment), "%s", value);
			if (query_value(q + 1, "resource_type", value,
					sizeof(value)))
				snprintf(type, sizeof(type), "%s", value);
			if (query_value(q + 1, "after", value, sizeof(value)))
				snprintf(after, sizeof(after), "%s", value);
			if (query_value(q + 1, "created_at[gte]", value,
					sizeof(value)))
				gte = iso_seconds(value);
			if (query_value(q + 1, "created_at[lte]", value,
					sizeof(value)))
				lt = iso_seconds(value);
			if (query_value(q + 1, "limit", value, sizeof(value)))
				limit = strtol(value, NULL, 10);
		}
		for (i = 0; i < n; i++) {
			struct json_object *o = json_object_array_get_idx(all, i);
			struct json_object *e;
			const char *p, *t;
			int64_t at;

			if (!json_object_object_get_ex(o, "events", &e))
				continue;
			p = string_at(json_object_object_get(e, "links"),
				      "payment", NULL);
			t = string_at(e, "resource_type", NULL);
			at = iso_seconds(string_at(e, "created_at", NULL));
			if ((payment[0] != '\0' &&
			     (p == NULL || strcmp(p, payment) != 0)) ||
			    (type[0] != '\0' && (t == NULL || strcmp(t, type) != 0)) ||
			    at < gte || at > lt)
				continue;
			found[count++] = e;
		}
		qsort(found, count, sizeof(*found), events_newest_first);
		if (after[0] != '\0') {
			for (start = 0; start < count; start++)
				if (strcmp(string_at(found[start], "id", NULL),
					   after) == 0)
					break;
			start = start < count ? start + 1 : count;
		}
		for (i = start; i < count && (long)(i - start) < limit; i++)
			json_object_array_add(events, json_object_get(found[i]));
		json_object_object_add(cursors, "before", NULL);
		json_object_object_add(
			cursors, "after",
			i < count ? json_object_new_string(string_at(
					    found[i - 1], "id", NULL))
				  : NULL);
		free(found);
		json_object_object_add(meta, "cursors", cursors);
		json_object_object_add(meta, "limit", json_object_new_int64(limit));
		json_object_object_add(body, "events", events);
		json_object_object_add(body, "meta", meta);
		answer_json(fd, method, target, body);
		json_object_put(body);
		return;
	}
	error_answer(fd, 404, -1, method, target);
}

/* The value of header name in the request head, or NULL. */
static const char *header(const char *head, const char *name, char *out,
			  size_t cap)
{
	size_t n = strlen(name);

	for (const char *line = strstr(head, "\r\n"); line != NULL;
	     line = strstr(line + 2, "\r\n")) {
		const char *v = line + 2, *end;

		if (strncasecmp(v, name, n) != 0 || v[n] != ':')
			continue;
		v += n + 1;
		while (*v == ' ')
			v++;
		end = strstr(v, "\r\n");
		if (end == NULL || (size_t)(end - v) >= cap)
			return NULL;
		memcpy(out, v, (size_t)(end - v));
		out[end - v] = '\0';
		return out;
	}
	return NULL;
}

static void serve(int fd)
{
	static char head[HEAD_MAX + 1];
	char method[16], target[4096], auth[1024], version[64], what[32];
	char bearer[1024];
	struct json_object *all;
	size_t len = 0;
	long arg;

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
	if (fault_for(target, what, sizeof(what), &arg)) {
		if (strcmp(what, "down") == 0) {
			log_request(0, method, target);
			return;
		}
		if (strcmp(what, "slow") == 0) {
			struct timespec ts = { arg / 1000, (arg % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		} else {
			int status = atoi(what);

			if (status >= 400) {
				error_answer(fd, status,
					     status == 429 || status == 503 ? arg
									    : -1,
					     method, target);
				return;
			}
		}
	}
	snprintf(bearer, sizeof(bearer), "Bearer %s", key);
	if (header(head, "Authorization", auth, sizeof(auth)) == NULL ||
	    strcmp(auth, bearer) != 0) {
		error_answer(fd, 401, -1, method, target);
		return;
	}
	if (strcmp(mode, "gocardless") == 0 &&
	    (header(head, "GoCardless-Version", version, sizeof(version)) ==
		     NULL ||
	     strcmp(version, "2015-07-06") != 0)) {
		error_answer(fd, 400, -1, method, target);
		return;
	}
	if (strcmp(method, "GET") != 0) {
		error_answer(fd, 405, -1, method, target);
		return;
	}
	all = read_objects();
	if (strcmp(mode, "mollie") == 0)
		mollie(fd, method, target, all);
	else if (strcmp(mode, "mercadopago") == 0)
		mercadopago(fd, method, target, all);
	else
		gocardless(fd, method, target, all);
	json_object_put(all);
}

static void usage(FILE *out)
{
	fputs("usage: notify_api --mode mollie|mercadopago|gocardless --key KEY "
	      "--objects FILE --faults FILE --log FILE\n", out);
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
		else if (strcmp(argv[i], "--objects") == 0 && next != NULL)
			objects_path = argv[++i];
		else if (strcmp(argv[i], "--faults") == 0 && next != NULL)
			faults_path = argv[++i];
		else if (strcmp(argv[i], "--log") == 0 && next != NULL)
			log_path = argv[++i];
		else {
			usage(stderr);
			return 2;
		}
	}
	if (mode == NULL ||
	    (strcmp(mode, "mollie") != 0 && strcmp(mode, "mercadopago") != 0 &&
	     strcmp(mode, "gocardless") != 0) ||
	    key == NULL || objects_path == NULL || log_path == NULL) {
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
	if (printf("%u\n", listen_port) < 0 || fflush(stdout) != 0)
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
