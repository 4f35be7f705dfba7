/* fuzz_list.c - libFuzzer target for the providers' list pages that
 * payhook-reconcile reads (lib/reconcile/backend_*.c): the input is one
 * page body, read by every backend of backends_for, twice.
 *
 * Asserted: a page read is all or nothing (a refused page holds no event);
 * every event of a read page is a non-empty JSON object, NUL-terminated at
 * its length; has_more comes with a cursor to continue after (with an
 * event, for offset and page-number paging); the two
 * readings of one input agree.
 */
#include "config.h"

#include <json-c/json.h>
#include <string.h>

#include "backends.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (unsigned p = 0; p < CONFIG_PROVIDER_COUNT; p++) {
		const struct backend *b = backends_for(p);
		struct backend_page page, again;
		struct error err, err2;
		int rc, rc2;

		if (b == NULL)
			continue;
		rc = b->parse_page((const char *)data, size, &page, &err);
		rc2 = b->parse_page((const char *)data, size, &again, &err2);
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
	return 0;
}
