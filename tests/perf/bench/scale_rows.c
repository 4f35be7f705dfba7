/* scale_rows.c - benchmark helper: writes rows of a delivered payments table
 * for tests/perf/bench/scale.sh to load with LOAD DATA LOCAL INFILE, so that the
 * table-size benchmark fills millions of rows without going through HTTP.
 *
 *   scale_rows --first I --count N --total T [--years Y] [--seed S]
 *
 * Prints rows I .. I+N-1 of a table of T rows, one a line, tab-separated, in
 * the column order of scale.sh's LOAD DATA: provider, transaction_id,
 * event_id, amount, currency, payload, received_at, dispatch_state,
 * dispatch_due_at, dispatch_attempts, dispatch_token, dispatch_owner,
 * dispatch_last_error, delivered_at (\N for NULL). Each row is what payhook
 * and payhook-dispatch leave: a provider drawn from the nine profiles in a
 * realistic mix, a random id and event id of that provider's shape, an
 * amount and currency, a JSON payload of about 1.5 KB in that provider's
 * shape with random names, addresses and line items (every payload differs,
 * so InnoDB's pages hold what real ones would), received_at rising with the
 * row number over Y years (3) up to now, and the dispatch_ columns of a
 * delivered payment. Row r is the same for the same seed whatever I and N
 * are, so chunks can be generated apart. Exit 0, or 2 on a usage error.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* xorshift64*: fast, and good enough to make ids and payloads differ. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static unsigned rng_below(unsigned n)
{
	return (unsigned)((rng_next() >> 33) % n);
}

/* The payload of one row is built here, then written out whole. */
static char buf[8192];
static size_t len;

static void put(const char *s)
{
	size_t n = strlen(s);

	if (len + n < sizeof(buf)) {
		memcpy(buf + len, s, n);
		len += n;
	}
}

static void putf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void putf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + len, sizeof(buf) - len, fmt, ap);
	va_end(ap);
	if (n > 0 && len + (size_t)n < sizeof(buf))
		len += (size_t)n;
}

static const char ALNUM[] =
	"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
static const char LOWER[] = "0123456789abcdefghijklmnopqrstuvwxyz";
static const char UPPER[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
static const char HEX[] = "0123456789abcdef";

/* rand_str: N random characters of SET into out (N + 1 bytes). */
static void rand_str(char *out, const char *set, size_t set_len, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = set[rng_below((unsigned)set_len)];
	out[n] = '\0';
}

static void uuid(char *out)
{
	char h[33];

	rand_str(h, HEX, 16, 32);
	snprintf(out, 37, "%.8s-%.4s-4%.3s-a%.3s-%.12s", h, h + 8, h + 12,
		 h + 16, h + 20);
}

static const char *const FIRST[] = {
	"Olivia", "Liam", "Emma", "Noah", "Ava", "Lucas", "Mia", "Hugo",
	"Sofia", "Mateo", "Yuki", "Haruto", "Aarav", "Priya", "Chloe", "Leon",
	"Ines", "Omar", "Fatima", "Jonas", "Elena", "Marco", "Anika", "Ravi",
};
static const char *const LAST[] = {
	"Smith", "Garcia", "Muller", "Rossi", "Dubois", "Tanaka", "Sato",
	"Patel", "Sharma", "Nguyen", "Kowalski", "Jansen", "Silva", "Novak",
	"Andersen", "Murphy", "Khan", "Moreau", "Fischer", "Lopez",
};
static const char *const STREET[] = {
	"Main Street", "High Street", "Rue de la Paix", "Hauptstrasse",
	"Via Roma", "Calle Mayor", "Baker Street", "Sakura-dori",
	"MG Road", "Kings Road", "Market Square", "Station Road",
};
static const char *const CITY[] = {
	"London", "Paris", "Berlin", "Madrid", "Rome", "Tokyo", "Osaka",
	"Mumbai", "Bangalore", "Toronto", "Austin", "Dublin", "Lyon", "Porto",
};
static const char *const COUNTRY[] = {
	"GB", "FR", "DE", "ES", "IT", "JP", "IN", "CA", "US", "IE", "PT", "NL",
};
static const char *const WORD[] = {
	"classic", "organic", "cotton", "wireless", "leather", "ceramic",
	"premium", "compact", "vintage", "bamboo", "steel", "wool", "linen",
	"travel", "kitchen", "garden", "studio", "mini", "pro", "eco",
	"mug", "shirt", "lamp", "backpack", "speaker", "candle", "notebook",
	"bottle", "scarf", "charger", "blanket", "poster", "sneakers", "watch",
};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define PICK(a) ((a)[rng_below((unsigned)N_OF(a))])

/* An id's shape: PREFIX then LEN characters of SET; SET "uuid" makes a
 * UUID, "int" a 13-digit integer, and PREFIX NULL no id at all. */
struct shape {
	const char *prefix;
	const char *set;
	size_t len;
};

struct provider {
	const char *name;
	unsigned weight;        /* share of rows, in percent */
	const char *currencies; /* 3-letter codes, back to back */
	struct shape tid, event;
};

/* A mix as a payment service provider's merchants would see it. */
static const struct provider PROVIDERS[] = {
	{ "stripe", 35, "USDEURGBPCADAUD", { "pi_", ALNUM, 24 }, { "evt_", ALNUM, 24 } },
	{ "adyen", 15, "EURGBPUSDSEKNOK", { "", UPPER, 16 }, { NULL, NULL, 0 } },
	{ "shopify", 12, "USDCADGBPAUDEUR", { "", "int", 0 }, { "", "uuid", 0 } },
	{ "paddle", 8, "USDEURGBP", { "txn_", LOWER, 26 }, { "evt_", LOWER, 26 } },
	{ "square", 8, "USDCADGBPJPYAUD", { "", ALNUM, 29 }, { "", "uuid", 0 } },
	{ "razorpay", 8, "INR", { "pay_", ALNUM, 14 }, { "evt_", ALNUM, 14 } },
	{ "standard", 6, "EURUSDCHF", { "", "uuid", 0 }, { "msg_", ALNUM, 27 } },
	{ "komoju", 4, "JPY", { "", LOWER, 25 }, { "", LOWER, 25 } },
	{ "payjp", 4, "JPY", { "ch_", HEX, 27 }, { "evnt_", HEX, 27 } },
};

static const struct provider *pick_provider(void)
{
	unsigned r = rng_below(100), acc = 0;

	for (size_t i = 0; i < N_OF(PROVIDERS); i++) {
		acc += PROVIDERS[i].weight;
		if (r < acc)
			return &PROVIDERS[i];
	}
	return &PROVIDERS[0];
}

/* A random id of shape S into out (64 bytes); "" for no id. */
static void make_id(const struct shape *s, char *out)
{
	char r[40];

	if (s->prefix == NULL) {
		out[0] = '\0';
	} else if (strcmp(s->set, "uuid") == 0) {
		uuid(out);
	} else if (strcmp(s->set, "int") == 0) {
		snprintf(out, 64, "%" PRIu64,
			 (uint64_t)(4000000000000ULL + rng_next() % 3000000000000ULL));
	} else {
		rand_str(r, s->set, strlen(s->set), s->len);
		snprintf(out, 64, "%s%s", s->prefix, r);
	}
}

/* The customer and address block every shape carries in some form. */
static void customer(void)
{
	const char *first = PICK(FIRST), *last = PICK(LAST);
	char h[17];

	rand_str(h, LOWER, 36, 14);
	putf("\"customer\":{\"id\":\"cus_%s\",\"name\":\"%s %s\","
	     "\"email\":\"%s.%s%u@example.com\",\"phone\":\"+%u%09u\","
	     "\"address\":{\"line1\":\"%u %s\",\"city\":\"%s\","
	     "\"postal_code\":\"%05u\",\"country\":\"%s\"}}",
	     h, first, last, first, last, rng_below(1000), 1 + rng_below(98),
	     rng_below(1000000000), 1 + rng_below(300), PICK(STREET),
	     PICK(CITY), rng_below(100000), PICK(COUNTRY));
}

/* Line items until the payload is about TARGET bytes. */
static void items(size_t target, const char *cur)
{
	int n = 0;

	put("\"line_items\":[");
	while (len < target && n < 40) {
		char sku[13];

		rand_str(sku, UPPER, 36, 12);
		putf("%s{\"sku\":\"%s\",\"title\":\"%s %s %s\",\"quantity\":%u,"
		     "\"price\":\"%u.%02u\",\"currency\":\"%.3s\"}",
		     n ? "," : "", sku, PICK(WORD), PICK(WORD), PICK(WORD),
		     1 + rng_below(4), 1 + rng_below(300), rng_below(100), cur);
		n++;
	}
	put("]");
}

/* One payload of about 1.5 KB (1.2 to 1.8) in provider P's shape. */
static void payload(const char *p, const char *tid, const char *event,
		    uint64_t amount, const char *cur, time_t at)
{
	size_t target = 1200 + rng_below(600);
	char h[25];

	len = 0;
	rand_str(h, ALNUM, 62, 24);
	if (strcmp(p, "stripe") == 0)
		putf("{\"id\":\"%s\",\"object\":\"event\",\"type\":"
		     "\"payment_intent.succeeded\",\"created\":%lld,\"data\":{"
		     "\"object\":{\"id\":\"%s\",\"object\":\"payment_intent\","
		     "\"amount\":%" PRIu64 ",\"amount_received\":%" PRIu64 ","
		     "\"currency\":\"%.3s\",\"latest_charge\":\"ch_%s\",",
		     event, (long long)at, tid, amount, amount, cur, h);
	else if (strcmp(p, "adyen") == 0)
		putf("{\"live\":\"true\",\"notificationItems\":[{"
		     "\"NotificationRequestItem\":{\"eventCode\":\"AUTHORISATION\","
		     "\"success\":\"true\",\"pspReference\":\"%s\","
		     "\"merchantReference\":\"order-%s\",\"amount\":{\"value\":%"
		     PRIu64 ",\"currency\":\"%.3s\"},\"additionalData\":{"
		     "\"hmacSignature\":\"%s=\"},",
		     tid, h, amount, cur, h);
	else if (strcmp(p, "shopify") == 0)
		putf("{\"id\":%s,\"admin_graphql_api_id\":\"gid://shopify/Order/%s\","
		     "\"financial_status\":\"paid\",\"total_price\":\"%" PRIu64
		     ".%02u\",\"currency\":\"%.3s\",\"token\":\"%s\",",
		     tid, tid, amount / 100, (unsigned)(amount % 100), cur, h);
	else
		putf("{\"event_id\":\"%s\",\"event_type\":\"payment\","
		     "\"data\":{\"id\":\"%s\",\"amount\":%" PRIu64 ","
		     "\"currency\":\"%.3s\",\"reference\":\"%s\",",
		     event, tid, amount, cur, h);
	customer();
	put(",");
	items(target, cur);
	if (strcmp(p, "stripe") == 0)
		put("}}}");
	else if (strcmp(p, "adyen") == 0)
		put("}}]}");
	else if (strcmp(p, "shopify") == 0)
		put("}");
	else
		put("}}");
}

static void datetime(char *out, size_t n, time_t t, unsigned micros)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, n, "%04d-%02d-%02d %02d:%02d:%02d.%06u",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, micros);
}

static int usage(void)
{
	fprintf(stderr, "usage: scale_rows --first I --count N --total T "
			"[--years Y] [--seed S]\n");
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t first = 0, count = 0, total = 0, seed = 1;
	unsigned years = 3;
	time_t now = time(NULL), span;

	for (int i = 1; i + 1 < argc; i += 2) {
		uint64_t v = strtoull(argv[i + 1], NULL, 10);

		if (strcmp(argv[i], "--first") == 0)
			first = v;
		else if (strcmp(argv[i], "--count") == 0)
			count = v;
		else if (strcmp(argv[i], "--total") == 0)
			total = v;
		else if (strcmp(argv[i], "--years") == 0)
			years = (unsigned)v;
		else if (strcmp(argv[i], "--seed") == 0)
			seed = v;
		else
			return usage();
	}
	if (argc % 2 == 0 || total == 0 || first + count > total || years == 0)
		return usage();
	span = (time_t)years * 365 * 86400;
	for (uint64_t r = first; r < first + count; r++) {
		const struct provider *p;
		char tid[64], event[64], at[80], done[80];
		uint64_t amount;
		char cur[4];
		unsigned attempts;
		time_t t;

		/* Row r's own sequence, whatever chunk it is in. */
		rng_state = (seed * 0x9E3779B97F4A7C15ULL) ^ (r + 1) * 0xBF58476D1CE4E5B9ULL;
		for (int k = 0; k < 4; k++)
			rng_next();
		p = pick_provider();
		make_id(&p->tid, tid);
		make_id(&p->event, event);
		memcpy(cur, p->currencies + 3 * rng_below((unsigned)strlen(p->currencies) / 3), 3);
		cur[3] = '\0';
		amount = strcmp(cur, "JPY") == 0 ? 100 + rng_below(50000)
						 : 199 + rng_below(40000);
		t = now - span + (time_t)((double)span * (double)r / (double)total);
		payload(p->name, tid, event, amount, cur, t);
		datetime(at, sizeof(at), t, rng_below(1000000));
		attempts = rng_below(20) == 0 ? 2 + rng_below(3) : 1;
		datetime(done, sizeof(done), t + 1 + rng_below(attempts * 30),
			 rng_below(1000000));
		printf("%s\t%s\t%s\t%" PRIu64 "\t%s\t%.*s\t%s\tdelivered\t\\N\t%u\t%u"
		       "\t\\N\t\\N\t%s\n",
		       p->name, tid, event[0] ? event : "\\N", amount, cur,
		       (int)len, buf, at, attempts, attempts, done);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
