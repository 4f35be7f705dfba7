/* provider_adyen.c - Adyen's scheme (see provider_adyen.h). */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "provider_adyen.h"
#include "provider_row.h"

/* Each Adyen item is one lifecycle event at most: room for every item. */
_Static_assert(PROVIDER_LIFECYCLE_MAX >= PROVIDER_PAYMENTS_MAX,
	       "an Adyen batch of lifecycle items must fit the batch");

/* A JSON string's text, or "" for anything else (Adyen's signing string
 * renders a missing field as empty). */
static struct signature_part text_part(struct json_object *node,
				       const char *path)
{
	struct json_object *value = payload_lookup(node, path);

	if (!json_object_is_type(value, json_type_string))
		return (struct signature_part){ "", 0 };
	return (struct signature_part){
		json_object_get_string(value),
		(size_t)json_object_get_string_len(value)
	};
}

/* Adyen's signing string of one item as parts (amount holds 24 bytes for
 * its value's text, parts ADYEN_PARTS): pspReference:originalReference:
 * merchantAccountCode:merchantReference:amount.value:amount.currency:
 * eventCode:success. Returns the number of parts. */
#define ADYEN_FIELDS 8
#define ADYEN_PARTS (2 * ADYEN_FIELDS - 1)
static size_t adyen_parts(struct json_object *item, char amount[24],
			  struct signature_part parts[ADYEN_PARTS])
{
	struct json_object *value = payload_lookup(item, "amount.value");
	static const char *const fields[ADYEN_FIELDS] = {
		"pspReference", "originalReference", "merchantAccountCode",
		"merchantReference", NULL, "amount.currency", "eventCode",
		"success",
	};
	size_t count = 0;

	amount[0] = '\0';
	if (json_object_is_type(value, json_type_int))
		snprintf(amount, 24, "%lld",
			 (long long)json_object_get_int64(value));
	for (size_t i = 0; i < ADYEN_FIELDS; i++) {
		if (i > 0)
			parts[count++] = (struct signature_part){ ":", 1 };
		parts[count++] = fields[i] != NULL ?
			text_part(item, fields[i]) :
			(struct signature_part){ amount, strlen(amount) };
	}
	return count;
}

/* Checks one item's additionalData.hmacSignature over its signing string. */
static enum signature_status adyen_item_verify(const struct provider *p,
					       struct json_object *item,
					       const char **reason)
{
	struct json_object *sig =
		payload_lookup(item, "additionalData.hmacSignature");
	char amount[24];
	struct signature_part parts[ADYEN_PARTS];
	size_t count = adyen_parts(item, amount, parts);

	return signature_verify_digest(
		p->ring,
		json_object_is_type(sig, json_type_string) ?
			json_object_get_string(sig) : NULL,
		NULL, SIGNATURE_BASE64, parts, count,
		"additionalData.hmacSignature missing", reason);
}

/* Gives the count lifecycle events read from item the digest of its
 * signed fields (its signing string): Adyen signs only those, so an item
 * resent with other unsigned fields (a later eventDate, another
 * modification.action) is known as the same item. Returns 0, or -1 with
 * why set when libcrypto fails. */
static int adyen_sign_lifecycle(struct json_object *item,
				struct lifecycle_event *events, size_t count,
				struct error *why)
{
	char amount[24];
	struct signature_part parts[ADYEN_PARTS];
	size_t n = adyen_parts(item, amount, parts);
	unsigned char digest[SIGNATURE_MAC_LEN];

	_Static_assert(SIGNATURE_MAC_LEN == LIFECYCLE_DIGEST_LEN,
		       "a lifecycle digest is a SHA-256");
	if (count == 0)
		return 0;
	if (signature_parts_sha256(parts, n, digest) != 0)
		return error_set(why, "SHA-256 of an Adyen item failed");
	for (size_t i = 0; i < count; i++) {
		events[i].has_signed_digest = true;
		memcpy(events[i].signed_digest, digest, sizeof(digest));
	}
	return 0;
}

/* The scheme's read: every item's signature first (unless trusted), then
 * each item as a lifecycle event or a payment. */
static enum provider_status adyen_read(const struct provider *p,
				       const struct request *req,
				       struct json_object *root,
				       enum provider_read_mode mode,
				       struct provider_batch *out,
				       struct error *why)
{
	struct json_object *items = payload_lookup(root, "notificationItems");
	size_t n;
	enum provider_status status;

	if (!json_object_is_type(items, json_type_array) ||
	    json_object_array_length(items) == 0) {
		error_set(why, "notificationItems: must be a non-empty array");
		return PROVIDER_INVALID;
	}
	n = json_object_array_length(items);
	if (n > PROVIDER_PAYMENTS_MAX) {
		error_set(why, "notificationItems: more than %d items",
			  PROVIDER_PAYMENTS_MAX);
		return PROVIDER_INVALID;
	}
	/* Every item is signed before any is recorded: one forged item
	 * makes the whole request suspect. */
	for (size_t i = 0; mode != PROVIDER_READ_TRUSTED && i < n; i++) {
		struct json_object *item = payload_lookup(
			json_object_array_get_idx(items, i),
			"NotificationRequestItem");
		const char *reason = NULL;
		enum signature_status checked;

		if (!json_object_is_type(item, json_type_object)) {
			error_set(why, "notificationItems: each must hold a "
				       "NotificationRequestItem object");
			return PROVIDER_INVALID;
		}
		checked = adyen_item_verify(p, item, &reason);
		status = provider_row_signature_outcome(checked, reason, why);
		if (status != PROVIDER_PAYMENTS)
			return status;
	}
	out->success_body = "[accepted]";
	for (size_t i = 0; i < n; i++) {
		struct json_object *item = payload_lookup(
			json_object_array_get_idx(items, i),
			"NotificationRequestItem");

		size_t before = out->lifecycle_count;

		status = provider_row_take_lifecycle(p, req, root, item, out, why);
		if (status == PROVIDER_IGNORED &&
		    adyen_sign_lifecycle(item, &out->lifecycle[before],
					 out->lifecycle_count - before,
					 why) != 0)
			return PROVIDER_ERROR;
		if (status == PROVIDER_PAYMENTS)
			status = provider_row_classify(p, req, item, out, why);
		if (status == PROVIDER_IGNORED)
			continue;
		if (status != PROVIDER_PAYMENTS)
			return status;
		status = provider_row_take_payment(p, req, root, item,
				      &out->payments[out->count], why);
		if (status != PROVIDER_PAYMENTS) {
			/* Name the item's id, if it was valid, in the answer. */
			if (out->count > 0)
				out->payments[0] = out->payments[out->count];
			return status;
		}
		out->count++;
	}
	return out->count > 0 ? PROVIDER_PAYMENTS : PROVIDER_IGNORED;
}

/* Adyen: sets additionalData.hmacSignature of every item of the body, over
 * the signing string adyen_item_verify checks. *signed_body is the new body
 * (the caller frees it). */
static int adyen_sign(const struct provider *p,
		      const struct provider_sign_input *in, const char *body,
		      size_t len, struct provider_headers *h,
		      char **signed_body, struct error *err)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root = NULL, *items;
	const char *text;
	int rc = -1;

	(void)in;
	(void)h;
	if (tok == NULL)
		return error_set(err, "out of memory");
	if (len <= INT_MAX)
		root = json_tokener_parse_ex(tok, body, (int)len);
	json_tokener_free(tok);
	items = payload_lookup(root, "notificationItems");
	if (!json_object_is_type(items, json_type_array)) {
		error_set(err, "an Adyen body needs notificationItems");
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *item = payload_lookup(
			json_object_array_get_idx(items, i),
			"NotificationRequestItem");
		struct json_object *extra;
		struct signature_part parts[ADYEN_PARTS];
		char amount[24], sig[SIGNATURE_TEXT_MAX];
		size_t count;

		if (!json_object_is_type(item, json_type_object)) {
			error_set(err, "item %zu has no NotificationRequestItem",
				  i + 1);
			goto out;
		}
		count = adyen_parts(item, amount, parts);
		if (signature_sign_digest(p->ring, NULL, SIGNATURE_BASE64, parts,
					  count, sig, sizeof(sig), err) != 0)
			goto out;
		extra = payload_lookup(item, "additionalData");
		if (!json_object_is_type(extra, json_type_object)) {
			extra = json_object_new_object();
			if (extra == NULL ||
			    json_object_object_add(item, "additionalData",
						   extra) != 0) {
				json_object_put(extra);
				error_set(err, "out of memory");
				goto out;
			}
		}
		if (json_object_object_add(extra, "hmacSignature",
					   json_object_new_string(sig)) != 0) {
			error_set(err, "out of memory");
			goto out;
		}
	}
	text = json_object_to_json_string_ext(
		root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	*signed_body = text != NULL ? strdup(text) : NULL;
	rc = *signed_body != NULL ? 0 : error_set(err, "out of memory");
out:
	json_object_put(root);
	return rc;
}

const struct provider_scheme provider_scheme_adyen = {
	.read = adyen_read,
	.sign = adyen_sign,
};
