/* replay.c - payhook-reconcile --replay (see replay.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "inbox_store.h"
#include "log.h"
#include "metrics.h"
#include "pipeline.h"
#include "replay.h"

/* pipeline_replay takes at most this many headers. */
#define HEADERS_MAX 8

/* The tallies of a run. */
struct tally {
	unsigned long listed, recorded, duplicate, kept, failed;
};

/* The headers' JSON object as "NAME=value" CGI variables into vars (a
 * NULL-terminated list of at most HEADERS_MAX; the caller frees each).
 * Returns how many; a member that is not a string is left out. */
static size_t header_vars(const char *json, char **vars)
{
	struct json_object *h = json_tokener_parse(json);
	size_t n = 0;

	if (json_object_is_type(h, json_type_object)) {
		json_object_object_foreach(h, name, value) {
			size_t len;

			if (n >= HEADERS_MAX ||
			    !json_object_is_type(value, json_type_string))
				continue;
			len = strlen(name) + 1 +
			      (size_t)json_object_get_string_len(value) + 1;
			vars[n] = malloc(len);
			if (vars[n] == NULL)
				break;
			snprintf(vars[n], len, "%s=%s", name,
				 json_object_get_string(value));
			n++;
		}
	}
	json_object_put(h);
	vars[n] = NULL;
	return n;
}

/* The profile named name, or -1. */
static int profile_of(const char *name)
{
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++)
		if (strcmp(name, config_provider_name(i)) == 0)
			return (int)i;
	return -1;
}

/* Copies text into out (cap bytes) with '"' as '\'' (logfmt quoting). */
static void unquote(const char *text, char *out, size_t cap)
{
	snprintf(out, cap, "%s", text);
	for (char *c = out; *c != '\0'; c++)
		if (*c == '"')
			*c = '\'';
}

/* Replays one kept delivery and does what its outcome says to its row.
 * Writes its line to out. Returns 0, or -1 when it could not be judged or
 * its row not changed. */
static int replay_one(struct pipeline *p, struct inbox_store *store,
		      struct metrics *metrics, const struct inbox_entry *e,
		      const struct replay_options *o, struct tally *t,
		      FILE *out)
{
	char *vars[HEADERS_MAX + 1];
	char reason[RESPONSE_REASON_MAX + PROVIDER_EVENT_TYPE_MAX + 32];
	char quoted[sizeof(reason)];
	const char *action = "kept";
	struct result r;
	struct error err = { "" };
	int profile = profile_of(e->provider);
	int rc = 0;
	size_t n = header_vars(e->headers, vars);

	memset(&r, 0, sizeof(r));
	if (profile < 0) {
		r.outcome = OUTCOME_NOT_FOUND;
		snprintf(r.reason, sizeof(r.reason), "no such profile");
	} else {
		pipeline_replay(p, (enum config_provider)profile, vars, e->body,
				e->len, (time_t)e->received_s, o->dry_run, &r);
	}
	for (size_t i = 0; i < n; i++)
		free(vars[i]);
	if (r.reason[0] != '\0')
		snprintf(reason, sizeof(reason), "%s", r.reason);
	else if (r.outcome == OUTCOME_IGNORED)
		snprintf(reason, sizeof(reason), "%s is not recorded",
			 pipeline_last_batch(p)->event_type[0] != '\0' ?
				 pipeline_last_batch(p)->event_type : "the event");
	else
		reason[0] = '\0';
	/* A notification queued (a provider that only notifies) did what
	 * its delivery would have: it leaves the inbox as a recorded one. */
	if (r.outcome == OUTCOME_QUEUED)
		r.outcome = OUTCOME_PROCESSED;
	switch (r.outcome) {
	case OUTCOME_PROCESSED:
	case OUTCOME_DUPLICATE:
		if (r.outcome == OUTCOME_PROCESSED)
			t->recorded++;
		else
			t->duplicate++;
		if (o->dry_run) {
			action = r.outcome == OUTCOME_PROCESSED ?
					 "would_record" : "would_remove";
			break;
		}
		action = r.outcome == OUTCOME_PROCESSED ? "recorded" : "removed";
		if (r.outcome == OUTCOME_PROCESSED && profile >= 0)
			metrics_inbox_replayed(metrics, (unsigned)profile);
		rc = inbox_store_remove(store, e->id, &err);
		break;
	case OUTCOME_UNAVAILABLE:
	case OUTCOME_ERROR:
	case OUTCOME_IN_PROGRESS:
		/* Not judged: it stays as it was, for the next run. */
		t->failed++;
		action = "failed";
		rc = -1;
		break;
	default:
		t->kept++;
		if (o->dry_run)
			break;
		rc = inbox_store_note(store, e->id,
				      r.outcome == OUTCOME_IGNORED ? "ignored" :
				      r.outcome == OUTCOME_UNAUTHORIZED ?
							       "unauthorized" : NULL,
				      reason, &err);
		break;
	}
	unquote(reason, quoted, sizeof(quoted));
	fprintf(out, "inbox_id=%llu provider=%s received_at=%lld outcome=%s "
		"transaction_id=%s action=%s", e->id, e->provider,
		(long long)e->received_s, response_outcome_name(r.outcome),
		r.transaction_id[0] != '\0' ? r.transaction_id : "-", action);
	if (quoted[0] != '\0')
		fprintf(out, " reason=\"%s\"", quoted);
	if (rc != 0 && err.message[0] != '\0') {
		unquote(err.message, quoted, sizeof(quoted));
		fprintf(out, " error=\"%s\"", quoted);
		log_error("replay: inbox %llu: %s", e->id, err.message);
	}
	fputc('\n', out);
	return rc;
}

int replay_run(const struct config *cfg, const struct replay_options *o,
	       FILE *out)
{
	struct inbox_filter filter = {
		o->only >= 0 ? config_provider_name((unsigned)o->only) : NULL,
		o->since_s, o->outcome,
	};
	struct error err = { "" };
	struct inbox_store *store = NULL;
	struct pipeline *p = NULL;
	struct metrics *metrics = NULL;
	struct inbox_entry e;
	struct tally t = { 0, 0, 0, 0, 0 };
	unsigned long long after = 0;
	const char *status = "failed";
	int rc = 1, got = 0;

	store = inbox_store_new(cfg, &err);
	if (store == NULL)
		goto out;
	p = pipeline_new(cfg, &err);
	if (p == NULL)
		goto out;
	/* What it recorded is counted with the workers' figures, when they
	 * share a file; the replays are not webhook requests, so the
	 * pipeline counts none of them. */
	if (cfg->metrics_file != NULL && !o->dry_run) {
		struct error merr;

		metrics = metrics_open_file(cfg->metrics_file, &merr);
		if (metrics == NULL)
			log_warn("replay: not counted: %s", merr.message);
	}
	rc = 0;
	while ((o->stopping == NULL || !o->stopping()) &&
	       (got = inbox_store_next(store, &filter, &after, &e, &err)) > 0) {
		t.listed++;
		if (replay_one(p, store, metrics, &e, o, &t, out) != 0)
			rc = 1;
	}
	if (got < 0)
		rc = 1;
	else
		status = o->stopping != NULL && o->stopping() ? "stopped"
								: "complete";
out:
	fprintf(out, "replay status=%s listed=%lu recorded=%lu duplicate=%lu "
		"kept=%lu failed=%lu%s", status, t.listed, t.recorded,
		t.duplicate, t.kept, t.failed, o->dry_run ? " dry_run=yes" : "");
	if (err.message[0] != '\0' && (got < 0 || store == NULL || p == NULL)) {
		char quoted[ERROR_MESSAGE_MAX];

		unquote(err.message, quoted, sizeof(quoted));
		fprintf(out, " error=\"%s\"", quoted);
		log_error("replay: %s", err.message);
	}
	fputc('\n', out);
	fflush(out);
	pipeline_free(p);
	metrics_free(metrics);
	inbox_store_free(store);
	return rc;
}
