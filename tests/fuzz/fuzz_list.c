/* fuzz_list.c - libFuzzer target for the providers' list pages that
 * payhook-reconcile reads (lib/reconcile/backend_*.c): the input is one
 * page body, read by every backend of backends_for, twice.
 *
 * Built with -DFUZZ_LIST_PROVIDER='"stripe"' (run-fuzz.sh's list_<profile>
 * targets), only that profile's backend reads the input: one target per
 * provider, each with the whole run's time to itself.
 *
 * Asserted: a page read is all or nothing (a refused page holds no event);
 * every event of a read page is a non-empty JSON object, NUL-terminated at
 * its length; has_more comes with a cursor to continue after (with an
 * event, for offset and page-number paging); the two
 * readings of one input agree.
 */
#include "config.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "configuration.h"
#include "fuzz.h"

/* Whether provider P is fuzzed by this build. */
static bool fuzzed(unsigned p)
{
#ifdef FUZZ_LIST_PROVIDER
	return strcmp(config_provider_name((enum config_provider)p),
		      FUZZ_LIST_PROVIDER) == 0;
#else
	(void)p;
	return true;
#endif
}

/* The snapshot backends' parse_answer, the input as the answer's Link
 * header (Shopify's page_info) beside an empty page: all or nothing, and
 * a next page always has a token. */
static void fuzz_answers(const uint8_t *data, size_t size)
{
	static const char empty[] = "{\"orders\":[]}";
	char *link = malloc(size + 1);

	if (link == NULL)
		return;
	memcpy(link, data, size);
	link[size] = '\0';
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		const struct backend *b = backends_for(p);
		struct backend_answer a = { empty, sizeof(empty) - 1, NULL, link,
					    NULL };
		struct backend_page page;
		struct error err;

		if (b == NULL || b->parse_answer == NULL || !fuzzed(p))
			continue;
		if (b->parse_answer(&a, &page, &err) != 0) {
			FUZZ_CHECK(page.count == 0 && page.events == NULL,
				   "a refused answer holds %zu events",
				   page.count);
			continue;
		}
		FUZZ_CHECK(!page.has_more || page.next[0] != '\0',
			   "has_more without a cursor");
		FUZZ_CHECK(strlen(page.next) <= BACKEND_CURSOR_MAX,
			   "a cursor longer than BACKEND_CURSOR_MAX");
		backend_page_cleanup(&page);
	}
	free(link);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
#ifdef FUZZ_LIST_PROVIDER
	unsigned n = 0;

	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++)
		n += fuzzed(p) && backends_for(p) != NULL;
	/* A misspelt name would fuzz nothing and find nothing. */
	FUZZ_CHECK(n == 1, "FUZZ_LIST_PROVIDER %s has no backend",
		   FUZZ_LIST_PROVIDER);
#endif
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		const struct backend *b = backends_for(p);
		struct backend_answer whole = { (const char *)data, size, NULL,
						NULL, NULL };
		struct backend_page page, again;
		struct error err, err2;
		int rc, rc2;

		if (b == NULL || !fuzzed(p))
			continue;
		rc = backend_read_page(b, &whole, &page, &err);
		rc2 = backend_read_page(b, &whole, &again, &err2);
		FUZZ_CHECK(rc == rc2, "two readings: %d, then %d", rc, rc2);
		if (rc != 0) {
			FUZZ_CHECK(page.count == 0 && page.events == NULL,
				   "a refused page holds %zu events", page.count);
			FUZZ_CHECK(err.message[0] != '\0', "no reason");
			continue;
		}
		FUZZ_CHECK(page.count == again.count && page.has_more == again.has_more,
			   "the readings differ");
		/* Offset and page-number paging: the pass names the next
		 * page from what it listed, which must then be something. */
		FUZZ_CHECK(!page.has_more ||
				   (b->paging == BACKEND_PAGING_CURSOR ?
					    page.next[0] != '\0' :
					    page.count > 0),
			   "has_more without a cursor or an event");
		for (size_t i = 0; i < page.count; i++) {
			const struct backend_event *e = &page.events[i];
			struct json_object *obj;

			FUZZ_CHECK(e->len > 0 && strlen(e->body) == e->len,
				   "event %zu: length %zu", i, e->len);
			FUZZ_CHECK(again.events[i].len == e->len &&
					   memcmp(again.events[i].body, e->body,
						  e->len) == 0,
				   "event %zu read differently", i);
			obj = json_tokener_parse(e->body);
			FUZZ_CHECK(obj != NULL &&
					   json_object_is_type(obj, json_type_object),
				   "event %zu is not a JSON object", i);
			json_object_put(obj);
		}
		backend_page_cleanup(&page);
		backend_page_cleanup(&again);
	}
	fuzz_answers(data, size);
	return 0;
}
