/* provider_notify.c - what the notify schemes share (see
 * provider_notify.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "provider_notify.h"
#include "provider_row.h"

int provider_notify_check_config(enum config_provider id,
				 const struct config *cfg, struct error *err)
{
	const char *name = config_provider_name(id);

	if (cfg->api_key[id] == NULL || cfg->api_key[id][0] == '\0')
		return error_set(err, "providers has %s: set %s_api_key (%s "
				 "only notifies; payhook-reconcile fetches "
				 "what its notifications name with the key)",
				 name, name, name);
	return 0;
}

enum provider_status provider_notify_add(struct provider_batch *out,
					 const char *id, size_t len,
					 const char *event, size_t event_len,
					 struct error *why)
{
	struct provider_notice *n = NULL;

	if (len == 0 || len > PROVIDER_NOTICE_ID_MAX) {
		error_set(why, "an object id longer than %d bytes",
			  PROVIDER_NOTICE_ID_MAX);
		return PROVIDER_INVALID;
	}
	for (size_t i = 0; i < out->notice_count && n == NULL; i++)
		if (strlen(out->notices[i].object_id) == len &&
		    memcmp(out->notices[i].object_id, id, len) == 0)
			n = &out->notices[i];
	if (n == NULL) {
		if (out->notice_count >= PROVIDER_NOTICES_MAX) {
			error_set(why, "more than %d objects in one "
				  "notification", PROVIDER_NOTICES_MAX);
			return PROVIDER_INVALID;
		}
		n = &out->notices[out->notice_count++];
		memcpy(n->object_id, id, len);
		n->object_id[len] = '\0';
		n->event_id[0] = '\0';
	}
	if (event != NULL) {
		if (event_len > PROVIDER_NOTICE_ID_MAX)
			event_len = PROVIDER_NOTICE_ID_MAX;
		memcpy(n->event_id, event, event_len);
		n->event_id[event_len] = '\0';
	}
	return PROVIDER_NOTIFIED;
}

/* Whether c is one of chars' classes. */
static bool in_class(char c, const char *chars)
{
	for (const char *k = chars; *k != '\0'; k++)
		if ((*k == 'a' && c >= 'a' && c <= 'z') ||
		    (*k == 'A' && c >= 'A' && c <= 'Z') ||
		    (*k == '0' && c >= '0' && c <= '9'))
			return true;
	return false;
}

bool provider_notify_id(const char *text, size_t len, const char *prefix,
			const char *chars)
{
	size_t plen = strlen(prefix);

	if (len <= plen || len > PROVIDER_NOTICE_ID_MAX ||
	    memcmp(text, prefix, plen) != 0)
		return false;
	for (size_t i = plen; i < len; i++)
		if (!in_class(text[i], chars))
			return false;
	return true;
}

enum provider_status provider_notify_read_object(const struct provider *p,
						 const struct request *req,
						 struct json_object *root,
						 enum provider_read_mode mode,
						 struct provider_batch *out,
						 struct error *why)
{
	const struct profile *row = &p->profile;
	enum provider_status status;

	(void)mode;
	status = provider_row_take_lifecycle(p, req, root, root, out, why);
	if (status != PROVIDER_PAYMENTS && status != PROVIDER_IGNORED)
		return status;
	/* No payment status at all: an object of another kind. */
	if (payload_lookup(root, row->event_path) == NULL)
		return PROVIDER_IGNORED;
	status = provider_row_classify(p, req, root, out, why);
	if (status != PROVIDER_PAYMENTS)
		return status;
	status = provider_row_take_payment(p, req, root, root,
					   &out->payments[0], why);
	if (status == PROVIDER_PAYMENTS)
		out->count = 1;
	return status;
}
